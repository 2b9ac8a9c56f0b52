//! The fence side of native fence logs: D3DKMT handles of native fences, the trace sink,
//! and draining the logs outside a DPC.

use std::sync::Arc;

use crate::adapter::{AdapterShared, Life};
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::state::sync::fencelog::DrainRequest;
use crate::state::sync::trace::{SinkSlot, TraceSink};

use super::dpc::{log_drain, maybe_calibrate};
use super::settle::settle_after_drain;
use crate::state::sync::fence::NativeFence;

/// Installs the OS's trace sink `s` on adapter `a` (docs/logs.md#simulated-os). With a sink
/// the OS also calibrates the GPU clock at log drains (docs/logs.md#simulated-os).
pub(crate) fn install_trace_sink(a: &Arc<AdapterShared>, s: &Arc<dyn TraceSink>) {
    lock(&a.fence_os).trace = SinkSlot(Some(s.clone()));
    // A first calibration sample per node (docs/logs.md#simulated-os), when the adapter runs.
    if *lock(&a.life) == Life::Started {
        let a = a.clone();
        maybe_calibrate(&a);
    }
}

/// The KMD handle of the hardware queue with device queue id `queue_id` on `a`.
pub(crate) fn hw_queue_kmd_by_id(a: &AdapterShared, queue_id: u32) -> Option<usize> {
    let t = lock(&a.fence_os).logs.clone();
    let q = t.all().into_iter().find(|q| q.queue_id == queue_id)?;
    Some(q.kmd)
}

/// Whether `a`'s driver advertised `OptimizedNativeFenceSignaledInterrupt` (LOG-08: the OS
/// then reads `hHWQueue`, not the fence array).
pub(crate) fn optimized_fence_irq(a: &AdapterShared) -> bool {
    lock(&a.caps).is_some_and(|c| {
        c.SchedulingCaps
            .is_set(rvgpu_ddi::adapter::DXGK_VIDSCHCAPS::OptimizedNativeFenceSignaledInterrupt)
    })
}

/// Gives `fence` (this process's instance, on its adapter `a`) a D3DKMT handle, the
/// `hNativeFence` a LOG_WRITE records (what `D3DKMTCreateNativeFence` returns to the
/// process). Returns the handle.
pub(crate) fn kmt_handle(a: &AdapterShared, fence: &NativeFence) -> Result<u32, SimError> {
    let h = crate::ob::new_kmt_handle(fence.process)?;
    lock(&fence.obj.st).kmt_handles.push((h, fence.process));
    lock(&a.fence_os).kmt.insert(h, fence.clone());
    Ok(h)
}

/// The instance with D3DKMT handle `h` on `a`.
pub(crate) fn by_kmt(a: &AdapterShared, h: u32) -> Option<NativeFence> {
    let f = lock(&a.fence_os).kmt.get(&h).cloned();
    f
}

/// The D3DKMT native-fence handles `process` holds on `a` (process exit).
pub(crate) fn kmt_handles_of(a: &AdapterShared, process: ProcessId) -> Vec<u32> {
    let os = lock(&a.fence_os);
    os.kmt
        .iter()
        .filter(|(_, f)| f.process() == process)
        .map(|(h, _)| *h)
        .collect()
}

/// Forgets D3DKMT handle `h` on `a` (before the instance is destroyed); returns its instance.
pub(crate) fn take_kmt(a: &AdapterShared, h: u32) -> Option<NativeFence> {
    let f = lock(&a.fence_os).kmt.remove(&h)?;
    lock(&f.obj.st).kmt_handles.retain(|(k, _)| *k != h);
    Some(f)
}

/// Runs the DPC-time log drain of `a` outside a DPC: reads the logs of the queues with KMD
/// handles `named` and of every queue on `engines`, calls `DxgkDdiUpdateNativeFenceLogs` for
/// those with new entries, releases waits, falls back to a scan when needed, re-arms
/// MonitoredValue.
pub(crate) fn drain(a: &AdapterShared, named: &[usize], engines: &[u32]) -> Result<(), SimError> {
    let req = DrainRequest {
        named: named.iter().copied().collect(),
        engines: engines.iter().copied().collect(),
    };
    let (objs, scan) = log_drain(a, &req, &[])?;
    settle_after_drain(a, objs, scan)
}

/// What a NULL report costs the OS: a resample of every native fence of `a` that can need
/// one (the scan set), releasing and re-arming as the DPC does.
pub(crate) fn scan(a: &AdapterShared) -> Result<(), SimError> {
    let n = lock(&a.fence_os).scan.len() as u64;
    lock(&a.fence_os).dpc_resamples += n;
    settle_after_drain(a, Vec::new(), true)
}
