//! The [`MonitoredFences`] capability: legacy monitored fences (MF-*).

use crate::backend::common::Failure;

use super::fences::{EventRef, QueueRef};

/// A legacy monitored fence a session handed out (MF-01).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MonitoredRef(pub usize);

/// Legacy monitored fences (MF-*) beside the native ones: created, waited on and signalled by
/// the CPU, and signalled by [`Fences`](super::fences::Fences)' GPU queues. A Windows backend has them through
/// `D3DKMTCreateSynchronizationObject2`.
pub trait MonitoredFences {
    /// Creates a legacy monitored fence on adapter `i` (MF-01).
    fn create_monitored_fence(
        &mut self,
        i: usize,
        process: u32,
        initial: u64,
    ) -> Result<MonitoredRef, Failure>;

    /// The monitored fence's value.
    fn monitored_value(&self, f: MonitoredRef) -> Result<u64, Failure>;

    /// A CPU wait on a monitored fence, event form.
    fn monitored_wait_event(&mut self, f: MonitoredRef, value: u64) -> Result<EventRef, Failure>;

    /// SignalSynchronizationObjectFromCpu on a monitored fence.
    fn monitored_signal_cpu(&mut self, f: MonitoredRef, value: u64) -> Result<(), Failure>;

    /// Appends a legacy monitored-fence signal (always interrupts) to the queue.
    fn gpu_signal_monitored(
        &mut self,
        q: QueueRef,
        f: MonitoredRef,
        value: u64,
    ) -> Result<(), Failure>;
}
