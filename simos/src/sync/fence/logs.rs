//! The fence side of native fence logs: settling after a drain, D3DKMT handles of
//! native fences, the trace sink.

use std::sync::Arc;

use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::dxgkrnl::adapter::{AdapterShared, Life};
use crate::machine::Machine;
use crate::sync::trace::ReleaseVia;

use super::dpc::{log_drain, maybe_calibrate};
use super::event::ViaScope;
use super::settle::{propagate, scan_set, settle_batch};
use super::state::{FenceObj, NativeFence};

/// Settles `objs` after a log drain (re-arm MonitoredValue, resample), attributing the releases
/// of the resample to `Scan` when `scan` (every fence of the adapter's scan set is then
/// settled).
pub(crate) fn settle_after_drain(
    a: &AdapterShared,
    objs: Vec<Arc<FenceObj>>,
    scan: bool,
) -> Result<(), SimError> {
    let all = if scan {
        scan_set(&lock(&a.fence_os))
    } else {
        Vec::new()
    };
    settle_merged(a, objs, all, scan)
}

/// Settles `objs` and those of `more` not among them, then propagates them; the releases count
/// as a `Scan`'s when `scan`, else as a `Resample`'s.
pub(super) fn settle_merged(
    a: &AdapterShared,
    mut objs: Vec<Arc<FenceObj>>,
    more: Vec<Arc<FenceObj>>,
    scan: bool,
) -> Result<(), SimError> {
    for o in more {
        if !objs.iter().any(|x| Arc::ptr_eq(x, &o)) {
            objs.push(o);
        }
    }
    let _via = ViaScope::enter(if scan {
        ReleaseVia::Scan
    } else {
        ReleaseVia::Resample
    });
    settle_batch(a, &mut objs)?;
    objs.iter().try_for_each(|o| propagate(o))
}

impl Machine {
    /// Installs the OS's trace sink on every adapter (docs/logs.md#simulated-os). With a sink the OS
    /// also calibrates the GPU clock at log drains (docs/logs.md#simulated-os).
    pub fn set_trace_sink(&self, s: Arc<dyn crate::sync::trace::TraceSink>) {
        for i in 0.. {
            let Ok(a) = self.adapter_shared(i) else {
                break;
            };
            lock(&a.fence_os).trace = crate::sync::trace::SinkSlot(Some(s.clone()));
            // A first calibration sample per node (docs/logs.md#simulated-os), when the adapter runs.
            if *lock(&a.life) == Life::Started {
                let a = a.clone();
                maybe_calibrate(&a);
            }
        }
    }

    /// The KMD queue handles the last `DxgkDdiUpdateNativeFenceLogs` on adapter `i` named.
    pub fn last_log_update(&self, i: usize) -> Vec<usize> {
        self.adapter_shared(i).map_or_else(
            |_| Vec::new(),
            |a| lock(&a.fence_os).last_log_update.clone(),
        )
    }

    /// The KMD handle of the hardware queue with device queue id `queue_id` on adapter `i`.
    pub fn hw_queue_kmd_by_id(&self, i: usize, queue_id: u32) -> Option<usize> {
        let a = self.adapter_shared(i).ok()?;
        let t = lock(&a.fence_os).logs.clone();
        let q = t.all().into_iter().find(|q| q.queue_id == queue_id)?;
        Some(q.kmd)
    }

    /// Whether adapter `i`'s driver advertised `OptimizedNativeFenceSignaledInterrupt`
    /// (LOG-08: the OS then reads `hHWQueue`, not the fence array).
    pub fn optimized_fence_irq(&self, i: usize) -> bool {
        self.adapter_shared(i).is_ok_and(|a| {
            lock(&a.caps).is_some_and(|c| {
                c.SchedulingCaps.is_set(
                    rvgpu_ddi::adapter::DXGK_VIDSCHCAPS::OptimizedNativeFenceSignaledInterrupt,
                )
            })
        })
    }

    /// Adapter `i`'s queue table of the log machinery (tests of the ISR-time check).
    pub fn log_table(&self, i: usize) -> Option<Arc<crate::sync::fencelog::LogTable>> {
        let a = self.adapter_shared(i).ok()?;
        let t = lock(&a.fence_os).logs.clone();
        Some(t)
    }

    /// The log drain's counters on adapter `i`.
    pub fn log_counters(&self, i: usize) -> crate::sync::fencelog::LogCounters {
        self.adapter_shared(i)
            .map_or_else(|_| Default::default(), |a| lock(&a.fence_os).log_counters)
    }

    /// Gives `fence` (this process's instance) a D3DKMT handle, the `hNativeFence` a LOG_WRITE
    /// records (what `D3DKMTCreateNativeFence` returns to the process). Returns the handle.
    pub fn native_fence_kmt_handle(&self, fence: &NativeFence) -> Result<u32, SimError> {
        let a = self.fence_adapter(fence.adapter())?;
        let h = crate::ob::new_kmt_handle(fence.process)?;
        lock(&fence.obj.st).kmt_handles.push((h, fence.process));
        lock(&a.fence_os).kmt.insert(h, fence.clone());
        Ok(h)
    }

    /// The instance with D3DKMT handle `h` on adapter `i`.
    pub fn native_fence_by_kmt(&self, i: usize, h: u32) -> Option<NativeFence> {
        let a = self.adapter_shared(i).ok()?;
        let f = lock(&a.fence_os).kmt.get(&h).cloned();
        f
    }

    /// The D3DKMT native-fence handles `process` holds on adapter `i` (process exit).
    pub(crate) fn native_fence_kmt_handles_of(&self, i: usize, process: ProcessId) -> Vec<u32> {
        let Ok(a) = self.adapter_shared(i) else {
            return Vec::new();
        };
        let os = lock(&a.fence_os);
        os.kmt
            .iter()
            .filter(|(_, f)| f.process() == process)
            .map(|(h, _)| *h)
            .collect()
    }

    /// Forgets D3DKMT handle `h` (before the instance is destroyed); returns its instance.
    pub(crate) fn take_native_fence_kmt(&self, i: usize, h: u32) -> Option<NativeFence> {
        let a = self.adapter_shared(i).ok()?;
        let f = lock(&a.fence_os).kmt.remove(&h)?;
        lock(&f.obj.st).kmt_handles.retain(|(k, _)| *k != h);
        Some(f)
    }

    /// Runs the DPC-time log drain of adapter `i` outside a DPC (benchmarks, tests): reads the
    /// logs of the queues with KMD handles `named` and of every queue on `engines`, calls
    /// `DxgkDdiUpdateNativeFenceLogs` for those with new entries, releases waits, falls back
    /// to a scan when needed, re-arms MonitoredValue.
    pub fn drain_native_fence_logs(
        &self,
        i: usize,
        named: &[usize],
        engines: &[u32],
    ) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?.clone();
        let req = crate::sync::fencelog::DrainRequest {
            named: named.iter().copied().collect(),
            engines: engines.iter().copied().collect(),
        };
        let (objs, scan) = log_drain(&a, &req, &[])?;
        settle_after_drain(&a, objs, scan)
    }

    /// The non-optimized baseline: what a NULL report costs the OS, a resample of every native
    /// fence of adapter `i` that can need one (the scan set), releasing and re-arming
    /// as the DPC does.
    pub fn scan_native_fences(&self, i: usize) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?.clone();
        let n = lock(&a.fence_os).scan.len() as u64;
        lock(&a.fence_os).dpc_resamples += n;
        settle_after_drain(&a, Vec::new(), true)
    }

    /// `DxgkDdiCalibrateGpuClock(node, 0)` on adapter `i` with the OS's checks (docs/logs.md#simulated-os):
    /// `(gpu_hz, gpu, cpu, bracket)`.
    pub fn calibrate_gpu_clock(
        &self,
        i: usize,
        node: u32,
    ) -> Result<(u64, u64, u64, u64), SimError> {
        let a = self.adapter_shared(i)?.clone();
        crate::sync::fencelog::calibrate(&a, node)
    }
}
