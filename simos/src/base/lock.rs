//! The one way the simulation takes a mutex (a leaf: every module locks, none of them needs
//! more than this to do it).

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, recovering the data if a thread panicked while holding it: a panic is already
/// a test failure, and the simulation must still be able to report what it recorded.
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
