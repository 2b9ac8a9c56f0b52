//! What VidMm's worker asks of the machine when its thread of a threaded machine runs it
//! (`crate::vidmm::worker`; a step-mode round hands the machine itself in). The thread has its
//! adapter, not the machine: each service is the adapter's operation the machine's own `Host`
//! calls, and a paging wait is the threaded machine's (the device, interrupt and DPC threads
//! complete the buffer; this thread sleeps on VidSch's completion event until then or the
//! OS's wait limit).

use std::time::Duration;

use crate::adapter::waiter::Waiter;
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::state::vidmm::residency::QueuedWork;
use crate::sync::fence::MonitoredFence;
use crate::vidmm::host::{AdapterServices, Host};

/// VidMm's worker thread of `a` as VidMm's host.
pub(crate) struct PassiveHost<'a> {
    pub(crate) a: &'a AdapterShared,
}

/// Runs a turn of VidMm's worker on its thread of a threaded machine; whether it did anything.
pub(crate) fn run_vidmm_worker(a: &AdapterShared) -> bool {
    crate::vidmm::worker::turn(&PassiveHost { a }, a, false)
}

/// VidMm's adapter-only services, the same for every host: written once here.
impl<H: Host + ?Sized> AdapterServices for H {
    fn paging_context(&self, a: &AdapterShared, node: u32) -> usize {
        crate::vidsch::system::context(a, node)
    }

    fn adapter_drops(&self, a: &AdapterShared) -> u64 {
        crate::vidsch::legacy::adapter_drops(a)
    }

    fn paging_completed(&self, a: &AdapterShared, node: u32, id: u32) -> bool {
        crate::vidsch::tdr::registry::node_completed(a, node, id)
    }

    fn dropped_by_reset(&self, a: &AdapterShared, node: u32, before: u64, ids: &[u32]) -> bool {
        crate::vidsch::legacy::dropped_by_reset(a, node, before, ids)
    }

    fn device_dma_work(&self, a: &AdapterShared, device: KmtHandle) -> Option<u64> {
        crate::vidsch::legacy::device_dma_work(a, device)
    }

    fn device_dma_done(&self, a: &AdapterShared, device: KmtHandle, last: u64) -> bool {
        crate::vidsch::legacy::device_dma_done(a, device, last)
    }

    fn paging_power(&self, a: &AdapterShared) -> Result<(), SimError> {
        crate::ums::paging_power(a)
    }

    fn queued_work(&self, a: &AdapterShared, device: KmtHandle) -> Vec<QueuedWork> {
        crate::ums::queued_work(&crate::base::lock::lock(&a.ums), device)
    }

    fn queue_alive(&self, a: &AdapterShared, queue: KmtHandle) -> bool {
        crate::ums::queue_alive(&crate::base::lock::lock(&a.ums), queue)
    }

    fn process_queues(&self, a: &AdapterShared, pid: ProcessId) -> Vec<KmtHandle> {
        crate::ums::process_queues(&crate::base::lock::lock(&a.ums), pid)
    }
}

impl Host for PassiveHost<'_> {
    fn submit_paging(
        &self,
        a: &AdapterShared,
        node: u32,
        words: &[u64],
        context_kmd: usize,
        owners: Vec<KmtHandle>,
    ) -> Result<u32, SimError> {
        let p = crate::vidsch::legacy::new_packet(a, words, true, None, context_kmd, owners)?;
        let w = Waiter {
            step: None,
            timeout: a.os.wait_timeout,
        };
        crate::vidsch::legacy::submit_new(w, a, node, p)
    }

    fn wait_paging(
        &self,
        a: &AdapterShared,
        node: u32,
        id: u32,
        _max_rounds: usize,
        timeout: Duration,
    ) -> Result<bool, SimError> {
        crate::vidsch::legacy::wait_completed(a, node, id, timeout)
    }

    /// VidMm's worker creates no fences (only paging queues do, on their thunk's thread):
    /// a call here is the simulation's defect.
    fn create_sync_fence(
        &self,
        _a: &AdapterShared,
        _device: KmtHandle,
        _initial: u64,
        _flags: u32,
    ) -> Result<(KmtHandle, MonitoredFence), SimError> {
        Err(SimError::Internal(
            "VidMm's worker creates no monitored fence",
        ))
    }

    /// VidMm's worker destroys no fences (only paging queues do, on their thunk's thread):
    /// a call here is the simulation's defect.
    fn destroy_sync_fence(
        &self,
        _a: &AdapterShared,
        _device: KmtHandle,
        _fence: KmtHandle,
    ) -> Result<(), SimError> {
        Err(SimError::Internal(
            "VidMm's worker destroys no monitored fence",
        ))
    }

    fn signal_fence_from_cpu(&self, f: &MonitoredFence, value: u64) -> Result<(), SimError> {
        crate::sync::fence::monitored::signal_from_cpu(&self.a.state, f, value)
    }
}
