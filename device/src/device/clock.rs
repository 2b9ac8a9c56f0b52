//! The GPU clock (GPU_CLOCK, CLOCK_FREQ): monotonic, never goes backwards, also across
//! engine and adapter resets (LOG-06).
//!
//! Threaded mode derives ticks from a monotonic `Instant`; step mode advances a counter by
//! [`STEP_TICKS`] per step so timestamps are reproducible. Either way every reader goes
//! through `fetch_max` on the last value handed out, so two readers on different threads can
//! never observe time running backwards relative to each other.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::Mode;

/// GPU ticks per step in step mode (10 µs at the default 100 MHz).
pub const STEP_TICKS: u64 = 1000;

pub(crate) struct Clock {
    mode: Mode,
    hz: u64,
    origin: Instant,
    /// Step mode: the raw counter.
    stepped: AtomicU64,
    /// Largest value handed out so far.
    last: AtomicU64,
}

impl Clock {
    pub(crate) fn new(mode: Mode, hz: u32) -> Self {
        Self {
            mode,
            hz: u64::from(hz.max(1)),
            origin: Instant::now(),
            stepped: AtomicU64::new(0),
            last: AtomicU64::new(0),
        }
    }

    fn raw(&self) -> u64 {
        match self.mode {
            Mode::Step => self.stepped.load(Ordering::Relaxed),
            Mode::Threaded => {
                let ns = self.origin.elapsed().as_nanos();
                let ticks = ns.saturating_mul(u128::from(self.hz)) / 1_000_000_000;
                u64::try_from(ticks).unwrap_or(u64::MAX)
            }
        }
    }

    /// The current time in ticks; never less than any value returned before.
    pub(crate) fn now(&self) -> u64 {
        let raw = self.raw();
        // Relaxed is enough: monotonicity is a property of this one atomic's modification
        // order, not of any other memory.
        let prev = self.last.fetch_max(raw, Ordering::Relaxed);
        prev.max(raw)
    }

    /// Step mode: advance the raw counter.
    pub(crate) fn advance(&self, ticks: u64) {
        self.stepped.fetch_add(ticks, Ordering::Relaxed);
    }

    /// How long `ticks` GPU ticks take in real time (threaded-mode timers).
    pub(crate) fn ticks_to_duration(&self, ticks: u64) -> Duration {
        let ns = u128::from(ticks).saturating_mul(1_000_000_000) / u128::from(self.hz);
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}
