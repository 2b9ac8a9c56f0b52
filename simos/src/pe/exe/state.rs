//! The system DLLs' state in one process (the routines on it are `kernel32`'s and `msvcrt`'s):
//! kernel32's sections, locks, exception filter and TLS slots; the C runtime's heap, `atexit`
//! table, signal handlers and locks.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::{Condvar, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use crate::base::lock::lock;

/// Recursive locks by key, owned by host threads (the program's threads).
#[derive(Default)]
pub(crate) struct Locks {
    held: Mutex<HashMap<u64, (ThreadId, u32)>>,
    free: Condvar,
}

impl Locks {
    /// Takes `key` (again, if this thread holds it); false when it stayed taken for `timeout`.
    pub(crate) fn enter(&self, key: u64, timeout: Duration) -> bool {
        let me = std::thread::current().id();
        let deadline = std::time::Instant::now() + timeout;
        let mut g = lock(&self.held);
        loop {
            match g.get_mut(&key) {
                None => {
                    g.insert(key, (me, 1));
                    return true;
                }
                Some((owner, n)) if *owner == me => {
                    *n += 1;
                    return true;
                }
                Some(_) => {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    g = crate::base::lock::waiting(g, |g| {
                        self.free
                            .wait_timeout(g, left)
                            .unwrap_or_else(|p| p.into_inner())
                    })
                    .0;
                }
            }
        }
    }

    /// Releases `key` once; false when this thread does not hold it.
    pub(crate) fn leave(&self, key: u64) -> bool {
        let me = std::thread::current().id();
        let mut g = lock(&self.held);
        match g.get_mut(&key) {
            Some((owner, n)) if *owner == me => {
                *n -= 1;
                if *n == 0 {
                    g.remove(&key);
                    self.free.notify_all();
                }
                true
            }
            _ => false,
        }
    }

    /// This thread's recursion count on `key`.
    pub(super) fn depth(&self, key: u64) -> u32 {
        let me = std::thread::current().id();
        match lock(&self.held).get(&key) {
            Some((owner, n)) if *owner == me => *n,
            _ => 0,
        }
    }

    pub(super) fn forget(&self, key: u64) {
        lock(&self.held).remove(&key);
        self.free.notify_all();
    }
}

/// kernel32's state in one process.
#[derive(Default)]
pub(crate) struct Kernel32 {
    pub(super) sections: Mutex<HashSet<u64>>,
    pub(super) locks: Locks,
    pub(super) filter: AtomicU64,
    pub(super) tls: Mutex<HashMap<u64, u64>>,
}

/// The C runtime's state in one process.
#[derive(Default)]
pub(crate) struct Crt {
    pub(super) heap: Mutex<HashMap<u64, std::alloc::Layout>>,
    pub(super) onexit: Mutex<Vec<u64>>,
    pub(super) signals: Mutex<HashMap<u32, u64>>,
    pub(super) locks: Locks,
    pub(super) app_type: AtomicU32,
    pub(super) matherr: AtomicU64,
}
