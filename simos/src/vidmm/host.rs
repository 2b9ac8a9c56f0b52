//! What VidMm's operations ask of the machine they run in. VidMm sits below the machine: the
//! machine hands itself in as a [`Host`] (its façade implements it) instead of VidMm naming
//! it, so the layers stay one way.

use std::time::Duration;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::ob::KmtHandle;
use crate::sync::fence::{MonitoredFence, WaitOutcome};

/// The machine's services VidMm's paging, paging queues and GPU VA updates use.
pub(crate) trait Host {
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
    /// fence), starting at `initial`.
    fn create_sync_fence(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        initial: u64,
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

    /// Waits on the CPU until `f` reaches `value` or `timeout` passes.
    fn wait_fence(
        &self,
        f: &MonitoredFence,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitOutcome, SimError>;
}
