//! The lock the processors take turns on (see the parent's documentation): one processor
//! executes guest instructions at a time, and host code runs with the lock released.

use std::cell::Cell;
use std::sync::{Condvar, Mutex};

use crate::base::lock::lock;

struct GuestLock {
    held: Mutex<bool>,
    free: Condvar,
}

static GUEST: GuestLock = GuestLock {
    held: Mutex::new(false),
    free: Condvar::new(),
};

thread_local! {
    /// Whether this thread holds the guest lock.
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread holds the guest lock.
pub(super) fn holding() -> bool {
    HOLDING.with(Cell::get)
}

pub(super) fn acquire() {
    let mut g = lock(&GUEST.held);
    while *g {
        g = crate::base::lock::waiting(g, |g| {
            (GUEST.free.wait(g).unwrap_or_else(|p| p.into_inner()), ())
        })
        .0;
    }
    *g = true;
    HOLDING.with(|h| h.set(true));
}

pub(super) fn release() {
    HOLDING.with(|h| h.set(false));
    *lock(&GUEST.held) = false;
    GUEST.free.notify_one();
}

/// Runs `f` (host code) with the guest lock released, if this thread holds it.
pub fn outside<R>(f: impl FnOnce() -> R) -> R {
    if holding() {
        release();
        let r = f();
        acquire();
        r
    } else {
        f()
    }
}
