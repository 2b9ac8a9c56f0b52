//! What VidMm's operations ask of the machine they run in. VidMm sits below the machine: the
//! machine hands itself in as a `Host` (its façade implements it) instead of VidMm naming
//! it, so the layers stay one way.

use std::time::Duration;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::state::vidmm::residency::QueuedWork;
use crate::sync::fence::MonitoredFence;

/// What VidMm asks of VidSch and the UMS state of its adapter alone: the same whoever runs
/// VidMm (the machine's façade or VidMm's worker thread), so implemented once, for every
/// [`Host`] (`crate::vidsch::passive`).
pub(crate) trait AdapterServices {
    /// The driver's handle of node `node`'s system context, the paging context VidMm builds
    /// paging buffers for (\[D\] `VidSchGetDriverPagingContext`); 0 before start or after stop.
    fn paging_context(&self, a: &AdapterShared, node: u32) -> usize;

    /// VidSch's count of adapter-wide resets of `a` that have dropped their in-flight packets
    /// ([`Host::dropped_by_reset`]).
    fn adapter_drops(&self, a: &AdapterShared) -> u64;

    /// Whether VidSch has retired fence `id` on `node` (completed, or dropped by a reset).
    fn paging_completed(&self, a: &AdapterShared, node: u32, id: u32) -> bool;

    /// Whether an adapter-wide reset after VidSch's count `before` dropped one of the paging
    /// buffers `ids` on `node` before it ran.
    fn dropped_by_reset(&self, a: &AdapterShared, node: u32, before: u64, ids: &[u32]) -> bool;

    /// The last of `device`'s kernel-mode DMA packets VidSch has in flight now, if any.
    fn device_dma_work(&self, a: &AdapterShared, device: KmtHandle) -> Option<u64>;

    /// Whether every DMA packet of `device` up to serial `last` has left VidSch.
    fn device_dma_done(&self, a: &AdapterShared, device: KmtHandle, last: u64) -> bool;

    /// Brings the adapter to D0 for paging and counts the paging as pending
    /// (`VidMm::paging_begin`), so a runtime power-down backs out until VidMm ends it.
    fn paging_power(&self, a: &AdapterShared) -> Result<(), SimError>;

    /// The work queued on `device`'s hardware queues now (AL-03).
    fn queued_work(&self, a: &AdapterShared, device: KmtHandle) -> Vec<QueuedWork>;

    /// Whether hardware queue `queue` still exists.
    fn queue_alive(&self, a: &AdapterShared, queue: KmtHandle) -> bool;

    /// The hardware queues of `pid`'s devices.
    fn process_queues(&self, a: &AdapterShared, pid: ProcessId) -> Vec<KmtHandle>;
}

/// The machine's services VidMm's paging, paging queues and GPU VA updates use.
pub(crate) trait Host: AdapterServices {
    /// Submits the paging buffer `words` on `node` through the system context `context_kmd`
    /// (VidSch's kernel-mode path, `Flags.Paging`), on behalf of `owners`; returns its
    /// fence ID.
    fn submit_paging(
        &self,
        a: &AdapterShared,
        node: u32,
        words: &[u64],
        context_kmd: usize,
        owners: Vec<KmtHandle>,
    ) -> Result<u32, SimError>;

    /// Runs the machine until paging buffer `id` on `node` has completed: a step-mode
    /// machine steps up to `max_rounds`, a threaded one polls until `timeout`. Whether it
    /// did.
    fn wait_paging(
        &self,
        a: &AdapterShared,
        node: u32,
        id: u32,
        max_rounds: usize,
        timeout: Duration,
    ) -> Result<bool, SimError>;

    /// A monitored fence of `device`'s process and its D3DKMT handle (a paging queue's
    /// fence), starting at `initial`, made with `flags`.
    fn create_sync_fence(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        initial: u64,
        flags: u32,
    ) -> Result<(KmtHandle, MonitoredFence), SimError>;

    /// Destroys the monitored fence `fence` of `device` created by
    /// [`Host::create_sync_fence`].
    fn destroy_sync_fence(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        fence: KmtHandle,
    ) -> Result<(), SimError>;

    /// Signals `f` to `value` from the CPU.
    fn signal_fence_from_cpu(&self, f: &MonitoredFence, value: u64) -> Result<(), SimError>;
}
