//! An adapter's kernel timers as the adapter holds them: each set timer ([`Armed`]) and the
//! adapter's timer clock ([`Timers`]). Arming, cancelling and running them is
//! [`crate::adapter::ktimer`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::base::clock::MsClock;
use crate::base::lock::lock;

/// The routine a timer runs: the driver's, with the context it armed the timer with, bound by
/// the driver->OS FFI (`dxgkrnl::callbacks::ffi`); address and context are bug-check
/// parameters.
#[derive(Clone)]
pub struct TimerRun {
    /// The routine's address.
    pub address: u64,
    /// The context's address.
    pub context: u64,
    /// Runs the routine with its context.
    pub run: Arc<dyn Fn() + Send + Sync>,
}

/// One set timer.
pub struct Armed {
    pub(super) routine: TimerRun,
    pub(super) period: u64,
    pub(super) due: AtomicU64,
    pub(super) cancelled: AtomicBool,
    /// Held while the routine runs: `KeFlushQueuedDpcs` waits on it.
    pub(super) running: Mutex<()>,
    /// The storage's address (0xC7's parameter 2).
    pub(super) storage: usize,
}

impl std::fmt::Debug for Armed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Armed")
            .field("period", &self.period)
            .field("due", &self.due.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// One adapter's set timers and their clock.
#[derive(Debug)]
pub struct Timers {
    pub(super) step: bool,
    pub(super) clock: MsClock,
    pub(super) set: Mutex<Vec<Arc<Armed>>>,
    /// Fault injection: timer DPCs are held back (as behind another driver's long DPC on the
    /// same processor); due ones run once released.
    pub(super) held: AtomicBool,
    /// Wakes the threaded machine's timer thread (a timer was set, the machine stops).
    pub wake: crate::base::line::Wake,
}

impl Timers {
    /// Timers on a step-mode (rounds) or threaded (wall clock) machine.
    pub fn new(step: bool) -> Self {
        Self {
            step,
            clock: MsClock::default(),
            set: Mutex::new(Vec::new()),
            held: AtomicBool::new(false),
            wake: crate::base::line::Wake::default(),
        }
    }

    /// Fault injection: holds back (or releases) every timer DPC of this adapter.
    pub fn hold(&self, on: bool) {
        self.held.store(on, Ordering::Release);
        self.wake.notify();
    }

    /// Milliseconds on this adapter's timer clock.
    pub(super) fn now(&self) -> u64 {
        self.clock.now(self.step)
    }

    /// Step mode: one more round (millisecond) has passed.
    pub fn advance_round(&self) {
        self.clock.advance(1);
    }

    /// Timers still set (storage addresses), for the RemoveDevice check.
    pub fn still_set(&self) -> Vec<usize> {
        lock(&self.set).iter().map(|t| t.storage).collect()
    }

    /// Step mode: milliseconds until the next timer that will run is due; `None` when no
    /// timer is set, timers are held back, or the clock is the wall clock.
    pub fn next_due_step(&self) -> Option<u64> {
        if !self.step || self.held.load(Ordering::Acquire) {
            return None;
        }
        self.next_due_in()
    }

    /// Step mode: `ms` milliseconds pass with nothing to do (a blocking wait skipping idle
    /// time to the next timer).
    pub fn skip(&self, ms: u64) {
        if self.step {
            self.clock.advance(ms);
        }
    }

    /// Milliseconds until the next timer is due (threaded mode's wait), if any is set.
    pub fn next_due_in(&self) -> Option<u64> {
        let now = self.now();
        lock(&self.set)
            .iter()
            .map(|t| t.due.load(Ordering::Acquire).saturating_sub(now))
            .min()
    }
}
