//! VidSch's DPC-time fence work: what a DPC's notifications named, the resample after the
//! driver's DPC returns (NF-04, NF-14), and the native fence log drain it triggers.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rvgpu_ddi::fence::D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::notify::Notification;
use crate::os::answers::LogReport;
use crate::state::sync::fencelog::{DrainRequest, QueueLog};
use crate::state::sync::trace::ReleaseVia;
use crate::sync::fencelog::drain as fencelog;

use super::settle::{release_from_log, scan_set};
use crate::state::sync::fence::{FenceObj, LegacyObj, NativeFence};

/// Records the fence work a DPC's notifications ask for (called from `DxgkCbNotifyDpc`).
pub(crate) fn note_notifications<'a>(
    a: &AdapterShared,
    ns: impl Iterator<Item = &'a Notification>,
) {
    let mut os = lock(&a.fence_os);
    for n in ns {
        match n {
            Notification::NativeFenceSignaled {
                node,
                optimized: true,
                hw_queue,
                evaluate_legacy,
                ..
            } => {
                // LOG-08: with the optimized cap the OS reads hHWQueue, not the array.
                let scan_on_null =
                    a.os.windows.reading().log_report == LogReport::ScanWhenLogSaysNothing;
                match hw_queue {
                    Some(h) => {
                        os.log_req.named.insert(*h);
                    }
                    None if scan_on_null => {
                        // 24H2 ([`LogReport::ScanWhenLogSaysNothing`]): every native fence of
                        // the node; EvaluateLegacyMonitoredFences adds the legacy ones (NF-14).
                        os.work_all = true;
                        os.legacy_work |= *evaluate_legacy;
                        os.log_req.engines.insert(*node);
                    }
                    None if *evaluate_legacy => {
                        // NULL + EvaluateLegacyMonitoredFences: every waiter (nflags); the
                        // engine's logs are read too, for the timeline.
                        os.work_all = true;
                        os.legacy_work = true;
                        os.log_req.engines.insert(*node);
                    }
                    None => {
                        os.log_req.engines.insert(*node);
                    }
                }
            }
            Notification::NativeFenceSignaled {
                node,
                fences,
                evaluate_legacy,
                ..
            } => match fences {
                None => {
                    os.work_all = true;
                    // NF-14: NULL with EvaluateLegacyMonitoredFences = 1 asks for every wait,
                    // legacy monitored-fence waits included.
                    os.legacy_work |= *evaluate_legacy;
                    // Without the optimized cap: the engine's logs are read for the
                    // timeline (releases from the scan or the logs, whichever comes first).
                    os.log_req.engines.insert(*node);
                }
                Some(v) => {
                    os.work.extend(v.iter().copied());
                    os.log_req.engines.insert(*node);
                }
            },
            Notification::Other { interrupt_type }
                if *interrupt_type
                    == rvgpu_ddi::interrupt::DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED =>
            {
                os.legacy_work = true;
            }
            _ => {}
        }
    }
}

/// VidSch's DPC-time fence processing, after the driver's DPC returned (DISPATCH_LEVEL):
/// resample the reported fences (for a NULL report, the adapter's scan set: every fence with
/// waits, an armed MonitoredValue or cross-adapter peers), release
/// satisfied waits, re-arm MonitoredValue (NF-04), propagate cross-adapter values (NF-16).
/// Never inlined: `scripts/callgrind-fences.sh` counts it by name (the NULL-report row).
#[inline(never)]
pub(crate) fn process_dpc_work(a: &AdapterShared) {
    let legacy: Vec<Arc<LegacyObj>> = {
        let mut os = lock(&a.fence_os);
        if std::mem::take(&mut os.legacy_work) {
            os.legacy_scans += 1;
            os.legacy.values().cloned().collect()
        } else {
            Vec::new()
        }
    };
    for l in legacy {
        l.release();
    }
    // The log drain (docs/logs.md#simulated-os), releases from signal entries first.
    let req = std::mem::take(&mut lock(&a.fence_os).log_req);
    let mut from_logs: Vec<Arc<FenceObj>> = Vec::new();
    let mut log_scan = false;
    if !req.is_empty() {
        match log_drain(a, &req, &[]) {
            Ok((objs, scan)) => {
                from_logs = objs;
                log_scan = scan;
            }
            Err(_) => return,
        }
    }
    let objs: (Vec<Arc<FenceObj>>, bool) = {
        let mut os = lock(&a.fence_os);
        let all = std::mem::take(&mut os.work_all) || log_scan;
        let set = std::mem::take(&mut os.work);
        // A NULL report resamples the fences that can need it, not every fence.
        let v: Vec<Arc<FenceObj>> = if all {
            scan_set(&os)
        } else {
            set.iter().filter_map(|h| os.objs.get(h).cloned()).collect()
        };
        os.dpc_resamples += v.len() as u64;
        (v, all)
    };
    let (objs, all) = objs;
    if let Err(e) = super::settle::settle_merged(a, objs, from_logs, all) {
        // A DPC that runs while StopDevice disconnects the interrupt cannot update
        // MonitoredValue any more; that is the stop, not a driver fault.
        if !a.state.is_halted() && a.irq.connected.load(Ordering::Acquire) {
            a.state.raise_sim_error(format!(
                "DPC-time processing of native fences on adapter {}: {e}",
                a.index
            ));
        }
    }
}

/// Runs the log drain and applies its releases: returns the fences whose waits changed (to be
/// re-armed) and whether a fallback scan of every fence is due.
pub(crate) fn log_drain(
    a: &AdapterShared,
    req: &DrainRequest,
    forced: &[Arc<QueueLog>],
) -> Result<(Vec<Arc<FenceObj>>, bool), SimError> {
    let table = lock(&a.fence_os).logs.clone();
    let _serial = lock(&table.drain_lock);
    log_drain_locked(a, req, forced)
}

/// [`log_drain`] with the adapter's drain lock held by the caller.
pub(crate) fn log_drain_locked(
    a: &AdapterShared,
    req: &DrainRequest,
    forced: &[Arc<QueueLog>],
) -> Result<(Vec<Arc<FenceObj>>, bool), SimError> {
    maybe_calibrate(a);
    let d = fencelog::drain(a, req, forced)?;
    let mut scan = d.scan_all;
    let mut touched: Vec<Arc<FenceObj>> = Vec::new();
    for s in &d.signals {
        let obj = {
            let os = lock(&a.fence_os);
            os.kmt
                .get(&s.handle)
                .filter(|f| f.process == s.process)
                .map(|f| f.obj.clone())
        };
        match obj {
            Some(o) => {
                // LOG-04: the device writes the value before its entry, so an honest entry is
                // never ahead of the fence (values only grow). One that is comes from a
                // hostile LOG_WRITE or a faulty device: it releases nothing by itself; the
                // fence is resampled, as 24H2 unwaits an entry's fence by its CurrentValue
                // (`M:VidSchiProcessNativeFenceSignaledDpc` @0x140044BE0), and nothing more.
                let cv = o.cv.load();
                if cv < s.value {
                    let mut os = lock(&a.fence_os);
                    os.log_counters.log_untrusted += 1;
                    drop(os);
                    a.state.push_log(
                        rvgpu_kmd::platform::Level::Warning,
                        format!(
                            "LOG-04 broken: queue id {} signal entry {} says fence {:#x} = {} \
                             but its CurrentValue is {cv}; scanning",
                            s.queue_id, s.index, s.handle, s.value
                        ),
                    );
                    if !touched.iter().any(|x| Arc::ptr_eq(x, &o)) {
                        touched.push(o);
                    }
                    continue;
                }
                release_from_log(
                    &o,
                    s.value,
                    ReleaseVia::Log {
                        queue_id: s.queue_id,
                        kind: crate::state::sync::trace::LogKind::Signal,
                        index: s.index,
                    },
                );
                if !touched.iter().any(|x| Arc::ptr_eq(x, &o)) {
                    touched.push(o);
                }
            }
            // A handle that does not resolve (a fence created without a D3DKMT handle, or a
            // UMD payload error): 24H2 stops reading and scans the node; the pages say
            // nothing, so nothing is released ([`LogReport`]).
            None => scan |= a.os.windows.reading().log_report == LogReport::ScanWhenLogSaysNothing,
        }
    }
    if scan && !d.scan_all {
        lock(&a.fence_os).log_counters.log_fallback_scans += 1;
    }
    Ok((touched, scan))
}

/// Calibrates the GPU clock of every node when due (docs/logs.md#simulated-os): every drain in step mode (the GPU
/// clock advances per step there), at most every 30 ms of real time in threaded mode.
pub(super) fn maybe_calibrate(a: &AdapterShared) {
    let due = {
        let os = lock(&a.fence_os);
        if os.trace.0.is_none() {
            false
        } else {
            match (a.device.config().mode, os.last_calibration) {
                (_, None) => true,
                (rvgpu_device::Mode::Step, _) => true,
                (_, Some(t)) => t.elapsed() >= Duration::from_millis(30),
            }
        }
    };
    if !due
        || a.table
            .get()
            .and_then(|t| t.DxgkDdiCalibrateGpuClock)
            .is_none()
    {
        return;
    }
    let nodes = lock(&a.caps).map_or(1, |c| c.GpuEngineTopology.NbAsymetricProcessingNodes);
    for node in 0..nodes {
        if fencelog::calibrate(a, node).is_err() {
            return;
        }
    }
}

/// `D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU` fences have no CPU wait or signal: the OS refuses both
/// (Microsoft's D3DDDI_NATIVEFENCE_TYPE and D3DKMTCreateNativeFence references: no UM/KM CPU
/// access to their values, which live in local memory, NF-06).
pub(crate) fn no_cpu_access(fence: &NativeFence, what: &str) -> Result<(), SimError> {
    if fence.obj.fence_type == D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU {
        return Err(SimError::NotAllowed {
            rule: "NF-06",
            why: format!("CPU {what} on a D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU fence (no CPU access)"),
        });
    }
    Ok(())
}
