//! CPU waits on native fences that survive a late wake (docs/performance.md, "Interrupt storms
//! and late wakes").
//!
//! On 24H2 a new wait on a native fence sets its MonitoredValue to its own value when the
//! fence's CurrentValue already passed MonitoredValue (`M:VidSchSubmitWaitFromCpu`
//! @0x14000DF30, docs/windows-bringup.md §13), even above lower waits still pending: those get
//! no interrupt when the fence reaches them and are released only when something else makes
//! VidSch look at the fence. So every CPU wait the UMD makes is bounded: it waits in slices of
//! [`SLICE_NS`], and after each slice the OS did not end it re-reads the fence's CurrentValue
//! (user-readable). A value reached there ends the wait as a **late wake**: counted
//! ([`late_wakes`]) and reported to the caller, never silent. A wait whose value is not reached
//! by its own deadline still fails; a wait the OS released is no late wake.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::kmt::NtStatus;

/// One slice of a bounded wait: 4 ms.
pub const SLICE_NS: u64 = 4_000_000;

/// `STATUS_TIMEOUT`: the wait's own deadline passed with the value not reached.
pub const STATUS_TIMEOUT: i32 = 0x0000_0102;

/// How one slice of an OS wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slice {
    /// The OS released the wait: the value was reached.
    Released,
    /// The slice passed with the wait still pending.
    Pending,
    /// Nothing but the caller could still change the fence (the simulation's step mode found
    /// the machine idle): re-check once, then fail.
    Idle,
}

/// How a bounded wait that succeeded ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woken {
    /// The OS released it.
    Released,
    /// The OS had not released it, but the fence read at least the value after a slice: a
    /// late wake, with the value read.
    Late { current: u64 },
}

static LATE_WAKES: AtomicU64 = AtomicU64::new(0);

/// Late wakes this process's bounded waits met so far.
pub fn late_wakes() -> u64 {
    LATE_WAKES.load(Ordering::Relaxed)
}

/// Waits for a fence to reach `value`: `slice` waits one slice in the OS, `current` reads the
/// fence's CurrentValue, `slices` is the wait's own deadline in slices (`None`: no deadline).
/// A late wake is counted before it is returned.
pub fn bounded(
    value: u64,
    slices: Option<u64>,
    mut slice: impl FnMut() -> Result<Slice, NtStatus>,
    mut current: impl FnMut() -> u64,
) -> Result<Woken, NtStatus> {
    let mut waited = 0u64;
    loop {
        let s = slice()?;
        if s == Slice::Released {
            return Ok(Woken::Released);
        }
        let now = current();
        if now >= value {
            LATE_WAKES.fetch_add(1, Ordering::Relaxed);
            return Ok(Woken::Late { current: now });
        }
        waited = waited.saturating_add(1);
        if s == Slice::Idle || slices.is_some_and(|n| waited >= n) {
            return Err(NtStatus(STATUS_TIMEOUT));
        }
    }
}

/// Slices in a deadline of `timeout_ns` (at least one; `u64::MAX`: none).
pub fn slices_in(timeout_ns: u64) -> Option<u64> {
    (timeout_ns != u64::MAX).then(|| timeout_ns.div_ceil(SLICE_NS).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MF-04: a wait the OS releases ends without a late wake.
    #[test]
    fn mf_04_a_released_wait_is_no_late_wake() {
        let before = late_wakes();
        let r = bounded(5, Some(3), || Ok(Slice::Released), || 0);
        assert_eq!(r, Ok(Woken::Released));
        assert_eq!(late_wakes(), before);
    }

    /// MF-04 under 24H2's raised MonitoredValue: the OS never releases the wait, the fence
    /// reads the value after two slices: the wait ends as a counted late wake.
    #[test]
    fn mf_04_a_reached_value_the_os_did_not_release_is_a_counted_late_wake() {
        let before = late_wakes();
        let mut reads = [1u64, 4, 6].into_iter();
        let r = bounded(5, None, || Ok(Slice::Pending), || reads.next().unwrap_or(6));
        assert_eq!(r, Ok(Woken::Late { current: 6 }));
        assert!(late_wakes() > before);
    }

    /// MF-04: a value not reached by the wait's own deadline is a timeout, whatever the fence
    /// reads later; an idle machine ends the wait at once.
    #[test]
    fn mf_04_a_value_not_reached_by_the_deadline_is_a_failure() {
        let mut n = 0;
        let r = bounded(
            5,
            Some(3),
            || {
                n += 1;
                Ok(Slice::Pending)
            },
            || 4,
        );
        assert_eq!(r, Err(NtStatus(STATUS_TIMEOUT)));
        assert_eq!(n, 3);
        let r = bounded(5, None, || Ok(Slice::Idle), || 4);
        assert_eq!(r, Err(NtStatus(STATUS_TIMEOUT)));
        assert_eq!(
            bounded(5, None, || Err(NtStatus(-1)), || 9),
            Err(NtStatus(-1))
        );
        assert_eq!(slices_in(u64::MAX), None);
        assert_eq!(slices_in(1), Some(1));
        assert_eq!(slices_in(10 * SLICE_NS), Some(10));
    }
}
