//! The interrupt watchdog: finds an interrupt whose delivery was lost when nothing follows it
//! (docs/robustness.md section 2).
//!
//! The device's line is level-triggered and any later event re-raises it, so a lost delivery
//! normally costs only the time until the next event. The last event before a quiet spell has
//! no next event: its cause stays pending in `INT_STATUS`, the ISR never runs, and a CPU
//! waiter on that native fence is never released: a missed interrupt for a monitored update,
//! which NF-09 does not allow. We know of nothing in Windows that recovers it (the
//! `DxgkDdiQueryCurrentFence` retry covers only legacy DMA fences; the progress-fence timeout
//! detects hangs, it does not report signals), so the driver keeps its own watchdog:
//!
//! - A periodic kernel timer ([`Platform::timer_arm`], [`PERIOD_MS`]) runs while the adapter is
//!   started and in D0. It is disarmed, and its DPC flushed, before StopDevice tears anything
//!   down and before the device leaves D0, so the routine never sees a half-stopped adapter or
//!   touches a powered-down device.
//! - Each tick looks at `INT_STATUS` inside `DxgkCbSynchronizeExecution`, i.e. under the
//!   interrupt lock, where no ISR is running. A delivery counts as lost only if an enabled cause
//!   was pending at two consecutive ticks with no ISR run between them: a delivery merely in
//!   flight is serviced by its ISR within microseconds, far inside one period, so the watchdog
//!   never races it.
//! - A lost delivery is serviced there and then by the ISR's own code. Reporting from a
//!   synchronised routine (`DxgkCbNotifyInterrupt`, then `DxgkCbQueueDpc`) is what Microsoft's
//!   render-only sample driver does (`RosKmAdapter::SynchronizeNotifyInterrupt`,
//!   microsoft/graphics-driver-samples, render-only-sample/roskmd/RosKmdAdapter.cpp): the
//!   routine runs at device IRQL holding the interrupt spin lock, the context the
//!   NotifyInterrupt page asks for.
//!
//! A device that is gone (all-ones, or registers cut off after surprise removal) is left to
//! the removal path: the watchdog neither touches it nor reports anything.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crate::platform::Platform;

/// How often the watchdog looks, in milliseconds. A lost delivery is serviced within two
/// periods; each look is one DPC and one register read.
pub const PERIOD_MS: u32 = 100;

/// One adapter's watchdog: its timer and what the previous look saw.
pub struct Watchdog<P: Platform> {
    timer: P::Timer,
    /// Armed and not yet cancelled (PASSIVE-side bookkeeping; StartDevice, StopDevice and
    /// SetPowerState are serialised by Dxgkrnl).
    armed: AtomicBool,
    /// Enabled causes pending at the previous look (0: none). Interrupt lock only.
    last_pending: AtomicU32,
    /// ISR runs counted at the previous look. Interrupt lock only.
    last_isr_runs: AtomicU64,
    /// Looks taken and lost deliveries serviced (CollectDbgInfo, tests).
    pub looks: AtomicU64,
    pub recoveries: AtomicU64,
}

impl<P: Platform> Default for Watchdog<P> {
    fn default() -> Self {
        Self {
            timer: P::Timer::default(),
            armed: AtomicBool::new(false),
            last_pending: AtomicU32::new(0),
            last_isr_runs: AtomicU64::new(0),
            looks: AtomicU64::new(0),
            recoveries: AtomicU64::new(0),
        }
    }
}

impl<P: Platform> core::fmt::Debug for Watchdog<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Watchdog")
            .field("armed", &self.armed.load(Ordering::Relaxed))
            .field("looks", &self.looks.load(Ordering::Relaxed))
            .field("recoveries", &self.recoveries.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<P: Platform> Watchdog<P> {
    /// Starts arming the timer: false if it is armed already (nothing to do). The timer
    /// itself is armed by the adapter ([`crate::adapter`]), whose address is its context.
    pub fn begin_arm(&self) -> bool {
        if self.armed.swap(true, Ordering::AcqRel) {
            return false;
        }
        // Nothing seen yet: the first look only records.
        self.last_pending.store(0, Ordering::Relaxed);
        true
    }

    /// The timer, for the adapter to arm after [`Watchdog::begin_arm`].
    pub fn timer(&self) -> &P::Timer {
        &self.timer
    }

    /// Ends arming: `running` is whether the platform's timer runs (a platform without
    /// kernel timers leaves the watchdog disarmed). Returns `running`.
    pub fn end_arm(&self, running: bool) -> bool {
        if !running {
            self.armed.store(false, Ordering::Release);
        }
        running
    }

    /// Whether the timer is armed.
    pub fn is_armed(&self) -> bool {
        self.armed.load(Ordering::Relaxed)
    }

    /// Disarms the timer and waits out a tick in progress (PASSIVE_LEVEL).
    pub fn disarm(&self) {
        if self.armed.swap(false, Ordering::AcqRel) {
            P::timer_cancel(&self.timer);
        }
    }

    /// One look under the interrupt lock: `pending` is `INT_STATUS` masked to the enabled
    /// causes, `isr_runs` the ISR's run count. Returns whether a delivery was lost: a cause
    /// pending now and at the previous look with no ISR run between them.
    pub fn look(&self, pending: u32, isr_runs: u64) -> bool {
        self.looks.fetch_add(1, Ordering::Relaxed);
        let before = self.last_pending.swap(pending, Ordering::Relaxed);
        let runs_before = self.last_isr_runs.swap(isr_runs, Ordering::Relaxed);
        let lost = pending != 0 && before != 0 && runs_before == isr_runs;
        if lost {
            self.recoveries.fetch_add(1, Ordering::Relaxed);
            // The caller services it now; the next look starts afresh.
            self.last_pending.store(0, Ordering::Relaxed);
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmem::Host;

    #[test]
    fn a_cause_pending_at_two_looks_without_an_isr_is_a_lost_delivery() {
        let w = Watchdog::<Host>::default();
        assert!(!w.look(0, 0), "quiet");
        assert!(!w.look(0b10, 0), "first sight: may be in flight");
        assert!(w.look(0b10, 0), "still pending and no ISR ran: lost");
        assert_eq!(w.recoveries.load(Ordering::Relaxed), 1);
        // Serviced: the next look starts afresh even if a new cause is pending.
        assert!(!w.look(0b1, 1));
    }

    #[test]
    fn an_isr_between_looks_or_a_quiet_look_is_not_a_loss() {
        let w = Watchdog::<Host>::default();
        assert!(!w.look(0b1, 5));
        assert!(
            !w.look(0b1, 6),
            "an ISR ran in between (a new assertion since)"
        );
        assert!(!w.look(0, 6));
        assert!(!w.look(0b1, 6), "pending again, first sight");
        assert_eq!(w.recoveries.load(Ordering::Relaxed), 0);
        assert_eq!(w.looks.load(Ordering::Relaxed), 4);
    }
}
