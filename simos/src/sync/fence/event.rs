//! The event form of a CPU wait ([`SimEvent`]) and how its release is attributed.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::base::lock::lock;
use crate::sync::trace::ReleaseVia;

/// How a CPU wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitOutcome {
    /// CurrentValue reached the awaited value.
    Satisfied,
    /// The timeout passed (threaded) or the machine went idle (step mode).
    TimedOut,
    /// The fence was destroyed with the wait pending.
    Abandoned,
}

#[derive(Debug, Default)]
pub(super) struct EventInner {
    pub(super) state: Mutex<Option<WaitOutcome>>,
    pub(super) cv: Condvar,
    /// How a satisfied wait was released (docs/logs.md#simulated-os).
    pub(super) via: Mutex<Option<ReleaseVia>>,
}

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

/// The event form of a CPU wait (MF-04): becomes signalled once with the wait's outcome.
#[derive(Clone, Debug, Default)]
pub struct SimEvent(pub(super) Arc<EventInner>);

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
