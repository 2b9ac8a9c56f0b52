//! A blocking CPU wait on a native fence as the UMD makes one, over the simulated OS.

use std::time::Duration;

use rvgpu_simos::{Machine, Mode, NativeFence, SimError, WaitOutcome};
use rvgpu_umd::kmt::NtStatus;

/// A blocking CPU wait on a native fence as the UMD makes one ([`rvgpu_umd::wait`]): slices of
/// `SLICE_NS` within `timeout`, CurrentValue re-read after each slice the OS did not end. A
/// reached value the OS did not release (24H2 raised MonitoredValue over the wait) ends it as a
/// late wake, counted by `rvgpu_umd::wait::late_wakes` and printed with the run; a value not
/// reached by `timeout` is a timeout.
pub(crate) fn bounded_wait(
    m: &Machine,
    f: &NativeFence,
    value: u64,
    timeout: Duration,
) -> Result<WaitOutcome, SimError> {
    use rvgpu_umd::wait::{bounded, slices_in, Slice, Woken, SLICE_NS, STATUS_TIMEOUT};
    let step = m.config().mode == Mode::Step;
    // Step mode drives the machine until nothing can change (timers due within the timeout
    // included): one slice of the whole timeout, then the re-check.
    let slice = if step {
        timeout
    } else {
        Duration::from_nanos(SLICE_NS).min(timeout)
    };
    let slices = u64::try_from(timeout.as_nanos()).ok().and_then(slices_in);
    let mut ended: Option<Result<WaitOutcome, SimError>> = None;
    let r = bounded(
        value,
        slices,
        || match m.wait_native_fence(f, value, slice) {
            Ok(WaitOutcome::Satisfied) => Ok(Slice::Released),
            Ok(WaitOutcome::TimedOut) if step => Ok(Slice::Idle),
            Ok(WaitOutcome::TimedOut) => Ok(Slice::Pending),
            other => {
                ended = Some(other);
                Err(NtStatus(0))
            }
        },
        || f.current_value(),
    );
    match r {
        Ok(Woken::Released | Woken::Late { .. }) => Ok(WaitOutcome::Satisfied),
        Err(NtStatus(STATUS_TIMEOUT)) => Ok(WaitOutcome::TimedOut),
        Err(_) => ended.unwrap_or(Ok(WaitOutcome::TimedOut)),
    }
}
