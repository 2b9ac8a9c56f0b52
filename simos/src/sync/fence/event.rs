//! The operations of a CPU wait's event ([`SimEvent`]: signal once, wait, read the outcome)
//! and how a release is attributed.

use std::sync::Arc;
use std::time::Duration;

use crate::base::lock::lock;
use crate::state::sync::trace::ReleaseVia;

use crate::state::sync::fence::{SimEvent, WaitOutcome};

thread_local! {
    /// How waits released on this thread right now are attributed ([`ViaScope`]).
    pub(super) static VIA: std::cell::Cell<ReleaseVia> = const { std::cell::Cell::new(ReleaseVia::Resample) };
}

/// Attributes the waits released on this thread while it lives to `via`.
pub(super) struct ViaScope(pub(super) ReleaseVia);

impl ViaScope {
    pub(super) fn enter(via: ReleaseVia) -> Self {
        Self(VIA.with(|c| c.replace(via)))
    }
}

impl Drop for ViaScope {
    fn drop(&mut self) {
        VIA.with(|c| c.set(self.0));
    }
}

impl SimEvent {
    pub(super) fn set(&self, o: WaitOutcome) {
        let mut s = lock(&self.0.state);
        if s.is_none() {
            *s = Some(o);
        }
        // Notify after unlocking: a waiter woken while the lock is held blocks
        // again on the mutex, and the wake system call is then paid with the lock held.
        drop(s);
        self.0.cv.notify_all();
    }

    /// The outcome, if signalled.
    pub fn outcome(&self) -> Option<WaitOutcome> {
        *lock(&self.0.state)
    }

    /// How a satisfied wait was released (`None` until it is).
    pub fn released_via(&self) -> Option<ReleaseVia> {
        *lock(&self.0.via)
    }

    /// Whether the wait was satisfied.
    pub fn is_signaled(&self) -> bool {
        self.outcome() == Some(WaitOutcome::Satisfied)
    }

    /// Waits up to `timeout` for the event; `None` if it is still unsignalled.
    pub fn wait(&self, timeout: Duration) -> Option<WaitOutcome> {
        let g = lock(&self.0.state);
        let (g, _) = crate::base::lock::waiting(g, |g| {
            self.0
                .cv
                .wait_timeout_while(g, timeout, |s| s.is_none())
                .unwrap_or_else(|p| p.into_inner())
        });
        *g
    }

    pub(super) fn same(&self, other: &SimEvent) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
