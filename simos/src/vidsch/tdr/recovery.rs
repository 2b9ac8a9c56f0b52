//! Recovery: per-engine reset (`DxgkDdiResetEngine`) with the fence bookkeeping of TDR-04, and
//! the adapter-wide reset (`ResetFromTimeout`, `RestartFromTimeout`).

use std::collections::BTreeSet;

use rvgpu_ddi::basic::{HANDLE, NTSTATUS};
use rvgpu_ddi::ntstatus::{NT_SUCCESS, STATUS_NOT_SUPPORTED};
use rvgpu_ddi::tdr::{
    DXGKARG_QUERYDEPENDENTENGINEGROUP, DXGKARG_QUERYENGINESTATUS, DXGKARG_RESETENGINE,
    DXGK_ENGINESTATUS, VIDEO_ENGINE_TIMEOUT_DETECTED, VIDEO_TDR_TIMEOUT_DETECTED,
};
use rvgpu_kmd::platform::Irql;

use crate::adapter::ddi::{self, sim_err, table};
use crate::adapter::AdapterShared;
use crate::base::bugcheck::{self, vidsch, BugCheck};
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::processor::IrqlScope;
use crate::ob::KmtHandle;
use crate::ums;

use super::hwsched::{recover_hw_node, recover_hw_node_24h2};
use super::irq::Interrupts;
use super::limit;
use super::state::{Packet, TdrEvent, TdrReason, TdrShared};
use super::watchdog::{collect_dbg_info, flush_dpcs};

/// The node's (submitted, completed) snapshot at device IRQL under the interrupt lock; from
/// here on the node's reports are ignored (24H2 drops its native-fence reports likewise,
/// `VidSchiSetHwNodeResettingStateAtISR`).
pub(super) fn snapshot_node(a: &AdapterShared, sh: &TdrShared, node: u32) -> (u32, u32) {
    let _il = lock(&a.irq.interrupt_lock);
    let _irql = IrqlScope::enter(Irql::Device);
    let mut os = lock(&sh.os);
    let n = os.node(node);
    n.ignore_irq = true;
    let (s, c) = (n.s, n.c);
    os.events.push(TdrEvent::Snapshot {
        node,
        submitted: s,
        completed: c,
    });
    (s, c)
}

/// The test's pause just before the reset (TDR-07): the hook works on the in-process device (a
/// PCI board has none to pause).
pub(super) fn pause_before_reset(
    a: &AdapterShared,
    sh: &TdrShared,
    node: u32,
    step: bool,
    irq: &dyn Interrupts,
) {
    let hook = a
        .emulated
        .as_ref()
        .and_then(|d| Some((lock(&sh.pause).take()?, d)));
    if let Some((mut h, dev)) = hook {
        h(dev);
        lock(&sh.os).events.push(TdrEvent::Paused { node });
        *lock(&sh.pause) = Some(h);
        if step {
            // Interrupts keep arriving while VidSch prepares the reset (threaded mode: the
            // interrupt thread): the node's reports are recorded as ignored.
            for _ in 0..1000 {
                if !irq.service_interrupt(a) {
                    break;
                }
            }
            while irq.service_dpc(a) {}
        }
    }
}

/// `DxgkDdiQueryDependentEngineGroup(node)` at PASSIVE: (status, mask).
pub(super) fn query_dependent_group(
    a: &AdapterShared,
    node: u32,
) -> Result<(NTSTATUS, u64), SimError> {
    let qdeg = ddi::table_slot!(a, DxgkDdiQueryDependentEngineGroup)?
        .ok_or_else(|| sim_err(a, "TDR without DxgkDdiQueryDependentEngineGroup".into()))?;
    dependent_group(a, qdeg, node)
}

/// The driver's `DxgkDdiQueryDependentEngineGroup` (`f`) for `node` at PASSIVE_LEVEL:
/// (status, mask).
pub(crate) fn dependent_group(
    a: &AdapterShared,
    f: ddi::Ddi<
        unsafe extern "system" fn(HANDLE, *mut DXGKARG_QUERYDEPENDENTENGINEGROUP) -> NTSTATUS,
    >,
    node: u32,
) -> Result<(NTSTATUS, u64), SimError> {
    let mut g = DXGKARG_QUERYDEPENDENTENGINEGROUP {
        NodeOrdinal: node,
        EngineOrdinal: 0,
        DependentNodeOrdinalMask: 0,
    };
    let ctx = a.context();
    // SAFETY: the driver's DDI with its context and a valid argument block.
    let st = unsafe { ddi::passive_with(a, f, ctx, &mut g) }?;
    Ok((st, g.DependentNodeOrdinalMask))
}

/// The TDR-05 sequence for `node` from the preemption timeout on. `stalled`: the hardware
/// queue that timed out (`Some(0)`: a hang report without a known queue; `None`: a DMA
/// timeout).
pub(crate) fn recover_node(
    a: &AdapterShared,
    sh: &TdrShared,
    node: u32,
    stalled: Option<KmtHandle>,
    irq: &dyn Interrupts,
) -> Result<(), SimError> {
    let step = lock(&sh.os).step;
    let per_engine = lock(&a.caps).is_some_and(|c| c.SupportPerEngineTDR != 0);
    if a.os.reading.hws_tdr == crate::os::answers::HwsTdr::DbgInfoBeforeReset
        && per_engine
        && crate::vidsch::hws::is_hw_node(a, node)
    {
        return recover_hw_node_24h2(a, sh, node, stalled, irq);
    }
    lock(&sh.os).events.push(TdrEvent::Timeout { node });
    // Step 3.
    collect_dbg_info(a, sh, VIDEO_ENGINE_TIMEOUT_DETECTED)?;
    // Gate kernel-mode submissions for the whole recovery.
    let _gate = sh.gate.write().unwrap_or_else(|p| p.into_inner());
    // Step 4: the snapshot at device IRQL.
    let (s_snap, c_snap) = snapshot_node(a, sh, node);
    // Step 5.
    let queue_work = ums::tdr_queues(a)
        .iter()
        .any(|q| q.node == node && q.watched_busy());
    if s_snap == c_snap && !queue_work {
        let mut os = lock(&sh.os);
        os.node(node).ignore_irq = false;
        os.events.push(TdrEvent::NothingToReset { node });
        return Ok(());
    }
    // The context running on the node when it timed out (24H2 `VidSchiResetEngine`).
    let running = super::process::running_device(a, sh, node, stalled);
    // Step 6.
    flush_dpcs(a, step, irq)?;
    lock(&sh.os).events.push(TdrEvent::DpcFlushed { node });
    // Step 7.
    let t = table(a)?;
    let ctx = a.context();
    let nodes = lock(&a.caps).map_or(1, |c| c.GpuEngineTopology.NbAsymetricProcessingNodes);
    let (st, mask) = query_dependent_group(a, node)?;
    let valid = if nodes >= 64 {
        u64::MAX
    } else {
        (1u64 << nodes) - 1
    };
    if !NT_SUCCESS(st) || mask & (1u64 << node) == 0 || mask & !valid != 0 {
        return Err(sim_err(
            a,
            format!(
                "driver bug: DxgkDdiQueryDependentEngineGroup(node {node}) = {:#x}, mask \
                 {mask:#x} (must succeed, contain the node, no bit >= {nodes}; TDR-02)",
                st as u32
            ),
        ));
    }
    lock(&sh.os)
        .events
        .push(TdrEvent::DependentGroup { node, mask });
    if let Some(qes) = ddi::in_table!(t, DxgkDdiQueryEngineStatus) {
        let mut q = DXGKARG_QUERYENGINESTATUS {
            NodeOrdinal: node,
            EngineOrdinal: 0,
            EngineStatus: DXGK_ENGINESTATUS::default(),
        };
        // SAFETY: the driver's DDI with its context and a valid argument block.
        let st = unsafe { ddi::passive_with(a, qes, ctx, &mut q) }?;
        if !NT_SUCCESS(st) {
            return Err(sim_err(
                a,
                format!(
                    "driver bug: DxgkDdiQueryEngineStatus must succeed, returned {:#x}",
                    st as u32
                ),
            ));
        }
        let responsive = q.EngineStatus.is_set(DXGK_ENGINESTATUS::Responsive);
        lock(&sh.os)
            .events
            .push(TdrEvent::EngineStatus { node, responsive });
    }
    pause_before_reset(a, sh, node, step, irq);
    // Step 8: ResetEngine for each node of the mask, in ordinal order (only with
    // SupportPerEngineTDR; otherwise the adapter-wide path).
    if per_engine && crate::vidsch::hws::is_hw_node(a, node) {
        // A hardware-scheduled node resets through ResetHwEngine/ResumeHwEngine.
        return recover_hw_node(a, sh, node, stalled, _gate, false, irq);
    }
    let (Some(reset), true) = (ddi::in_table!(t, DxgkDdiResetEngine), per_engine) else {
        drop(_gate);
        return adapter_reset(a, sh, TdrReason::AdapterTimeout, &[]);
    };
    let mut errored: BTreeSet<KmtHandle> = BTreeSet::new();
    let mut promote: Option<Vec<KmtHandle>> = None;
    let mut resubmit: Vec<(u32, Vec<Packet>)> = Vec::new();
    for rn in 0..nodes.min(64) {
        if mask & (1u64 << rn) == 0 {
            continue;
        }
        let (s, c_now) = {
            let mut os = lock(&sh.os);
            os.in_reset = Some(rn);
            os.invalidated.clear();
            let n = os.node(rn);
            n.ignore_irq = true;
            (n.s, n.c)
        };
        let mut r = DXGKARG_RESETENGINE {
            NodeOrdinal: rn,
            EngineOrdinal: 0,
            LastAbortedFenceId: 0,
        };
        let st = ddi::passive(a, reset, |reset| {
            // SAFETY: the driver's DDI with its context and a valid argument block.
            unsafe { reset(ctx, &mut r) }
        });
        let invalidated = lock(&sh.os).end_reset();
        let st = st?;
        if let Some(d) = running.filter(|_| rn == node) {
            super::process::charge(a, sh, d);
        }
        let la = r.LastAbortedFenceId;
        lock(&sh.os).events.push(TdrEvent::ResetEngine {
            node: rn,
            status: st,
            last_aborted: la,
        });
        if !NT_SUCCESS(st) {
            // TDR-09: the engine reset failed; the adapter-wide path.
            promote = Some(Vec::new());
            break;
        }
        // Step 9 (TDR-06).
        if la < c_now || la > s {
            let b = BugCheck::video_scheduler(
                vidsch::REPORTED_INVALID_ABORTED_FENCE,
                u64::from(la),
                u64::from(c_now),
                u64::from(rn),
            );
            a.state.push_log(
                rvgpu_kmd::platform::Level::Error,
                format!(
                    "DxgkDdiResetEngine(node {rn}) LastAbortedFenceId {la} outside [C={c_now}, \
                     S={s}]"
                ),
            );
            a.state.raise_bugcheck(b);
            return Err(SimError::Bugcheck(b));
        }
        if let Some(e) = a.device.engine_snapshot(rn) {
            use rvgpu_hw::engine::EngineState;
            // ResetEngine step 6 (docs/tdr.md#the-kmd): the node ring (the descriptor above every hardware-queue priority)
            // is empty once ResetEngine returns: nothing of the aborted work is left to run.
            let node_ring_busy = e.queues.iter().any(|q| {
                q.priority > rvgpu_hw::pdd::HW_QUEUE_PRIORITY_MAX
                    && (q.read_ptr != q.known_write_ptr || q.indirect.is_some())
            });
            if node_ring_busy {
                return Err(sim_err(
                    a,
                    format!(
                        "driver bug: after DxgkDdiResetEngine(node {rn}) the node ring still \
                         holds work (docs/tdr.md#the-simulated-os step 6)"
                    ),
                ));
            }
            if e.held || e.state == EngineState::Resetting {
                return Err(sim_err(
                    a,
                    format!(
                        "driver bug: after DxgkDdiResetEngine(node {rn}) the engine is {:?}, \
                         held {} (docs/tdr.md#the-simulated-os step 6)",
                        e.state, e.held
                    ),
                ));
            }
        }
        // UM-10 postcondition: no queue of a device the KMD invalidated is left in a runlist.
        for q in ums::tdr_queues(a) {
            let Some(id) = q.queue_id else { continue };
            if !invalidated.contains(&q.device) {
                continue;
            }
            let listed = (0..nodes).any(|e| {
                a.device
                    .engine_snapshot(e)
                    .is_some_and(|s| s.queues.iter().any(|x| x.queue_id == id))
            });
            if listed {
                return Err(sim_err(
                    a,
                    format!(
                        "driver bug: queue {id} of device {:#x}, invalidated by \
                         DxgkDdiResetEngine(node {rn}), is still in a runlist (UM-10)",
                        q.device
                    ),
                ));
            }
        }
        errored.extend(invalidated.iter().copied());
        // Step 10: retire, find the aborted packet, resubmit the rest.
        let mut os = lock(&sh.os);
        let c_snap_rn = if rn == node { c_snap } else { c_now };
        let n = os.node(rn);
        let retired: Vec<u32> = n.pending.range(..la).map(|(k, _)| *k).collect();
        let mut freed = Vec::new();
        for k in &retired {
            if let Some(p) = n.pending.remove(k) {
                freed.push(p.dma);
            }
        }
        let faulted = n.faulted_fence.take();
        let aborted = if la > c_snap_rn {
            n.pending.remove(&la)
        } else {
            None
        }
        .or_else(|| faulted.and_then(|f| n.pending.remove(&f)));
        n.c = la;
        n.last_change = 0;
        n.hung = false;
        n.faulted = None;
        n.preempt = None;
        let rest: Vec<Packet> = std::mem::take(&mut n.pending).into_values().collect();
        let mut retired_all = retired.clone();
        if let Some(p) = &aborted {
            retired_all.push(p.id);
        }
        os.completed.extend(retired_all.iter().map(|k| (rn, *k)));
        if !retired.is_empty() {
            os.events.push(TdrEvent::Retired {
                node: rn,
                fences: retired,
            });
        }
        if let Some(p) = aborted {
            os.events.push(TdrEvent::Aborted {
                node: rn,
                fence: p.id,
                paging: p.paging,
            });
            if let Some(d) = p.device {
                errored.insert(d);
            }
            if p.paging {
                promote = Some(p.owners.clone());
            }
            freed.push(p.dma);
        }
        drop(os);
        for b in freed {
            crate::vidsch::legacy::free_dma(a, b);
        }
        resubmit.push((rn, rest));
    }
    if invalidated_none_and_stalled(&errored, stalled) {
        if let Some(q) = stalled.filter(|q| *q != 0) {
            if let Some(tq) = ums::tdr_queues(a).iter().find(|x| x.handle == q) {
                errored.insert(tq.device);
            }
        }
    }
    if let Some(owners) = promote {
        // Put back what was not resubmitted so the adapter path drops it with its devices.
        {
            let mut os = lock(&sh.os);
            for (rn, rest) in resubmit {
                for p in rest {
                    os.node(rn).pending.insert(p.id, p);
                }
            }
        }
        let mut extra: Vec<KmtHandle> = owners;
        extra.extend(errored.iter().copied());
        drop(_gate);
        return adapter_reset(
            a,
            sh,
            TdrReason::EngineTimeoutPromotedToAdapterReset,
            &extra,
        );
    }
    // Clear ignore_irq, resubmit: paging first (original IDs), then render with new IDs.
    for (rn, rest) in resubmit {
        {
            let mut os = lock(&sh.os);
            os.node(rn).ignore_irq = false;
        }
        let (paging, render): (Vec<Packet>, Vec<Packet>) = rest.into_iter().partition(|p| p.paging);
        for p in paging {
            let old = p.id;
            crate::vidsch::legacy::resubmit(a, sh, rn, p, None)?;
            lock(&sh.os).events.push(TdrEvent::Resubmitted {
                node: rn,
                old,
                new: old,
                paging: true,
            });
        }
        for p in render {
            let old = p.id;
            if p.device
                .is_some_and(|d| errored.contains(&d) || ums::tdr_device_in_error(a, d))
            {
                lock(&sh.os).events.push(TdrEvent::Dropped {
                    node: rn,
                    fence: old,
                });
                crate::vidsch::legacy::free_dma(a, p.dma);
                continue;
            }
            let new = {
                let mut os = lock(&sh.os);
                let n = os.node(rn);
                let id = n.next_id;
                n.next_id = n.next_id.wrapping_add(1).max(1);
                id
            };
            crate::vidsch::legacy::resubmit(a, sh, rn, p, Some(new))?;
            lock(&sh.os).events.push(TdrEvent::Resubmitted {
                node: rn,
                old,
                new,
                paging: false,
            });
        }
        lock(&sh.os).events.push(TdrEvent::Recovered { node: rn });
    }
    {
        let mut os = lock(&sh.os);
        let now = os.now();
        for n in os.nodes.iter_mut() {
            n.last_change = now;
            n.watch.clear();
        }
        os.resets += 1;
        os.reason = Some(TdrReason::EngineTimeout);
    }
    drop(_gate);
    // Step 11: UM-10 for the errored devices.
    error_devices(a, sh, &errored)
}

pub(super) fn invalidated_none_and_stalled(
    errored: &BTreeSet<KmtHandle>,
    stalled: Option<KmtHandle>,
) -> bool {
    errored.is_empty() && stalled.is_some()
}

pub(super) fn error_devices(
    a: &AdapterShared,
    sh: &TdrShared,
    devices: &BTreeSet<KmtHandle>,
) -> Result<(), SimError> {
    if devices.is_empty() {
        return Ok(());
    }
    let _x = ums::tdr_exclusive(a);
    for d in devices {
        if ums::tdr_device_in_error(a, *d) && !ums::tdr_devices(a).contains(d) {
            continue;
        }
        let dbs = ums::tdr_device_error(a, *d)?;
        lock(&sh.os).events.push(TdrEvent::DeviceError {
            device: *d,
            doorbells_aborted: dbs.len(),
        });
    }
    Ok(())
}

/// The adapter-wide path (docs/tdr.md#the-simulated-os). `extra`: devices to put in error besides those
/// with outstanding work (TDR-08's owners).
pub(crate) fn adapter_reset(
    a: &AdapterShared,
    sh: &TdrShared,
    reason: TdrReason,
    extra: &[KmtHandle],
) -> Result<(), SimError> {
    collect_dbg_info(a, sh, VIDEO_TDR_TIMEOUT_DETECTED)?;
    // TdrLimitCount / TdrLimitTime: checked before the adapter is reset, as 24H2 does.
    let exhausted = limit::check(&lock(&sh.os), &a.state.tdr_history);
    if let Some((b, why)) = exhausted {
        a.state.push_log(rvgpu_kmd::platform::Level::Error, why);
        a.state.raise_bugcheck(b);
        return Err(SimError::Bugcheck(b));
    }
    let t = table(a)?;
    let ctx = a.context();
    let mut errored: BTreeSet<KmtHandle> = extra.iter().copied().collect();
    {
        // Every DDI is gated: kernel-mode submissions and every user-mode submission thunk.
        let _gate = sh.gate.write().unwrap_or_else(|p| p.into_inner());
        let _x = ums::tdr_exclusive(a);
        let fail = |what: usize, st: NTSTATUS| {
            let b = BugCheck::new(
                bugcheck::VIDEO_TDR_FAILURE,
                [0, what as u64, st as u32 as u64, 0],
            );
            a.state.raise_bugcheck(b);
            SimError::Bugcheck(b)
        };
        // ResetFromTimeout and RestartFromTimeout: missing or failing, either is 0x116.
        let adapter_ddi = |f: Option<ddi::Ddi<unsafe extern "system" fn(HANDLE) -> NTSTATUS>>| {
            let f = f.ok_or_else(|| fail(0, STATUS_NOT_SUPPORTED))?;
            // SAFETY: the driver's DDI with its context.
            let st = ddi::passive(a, f, |f| unsafe { f(ctx) })?;
            if NT_SUCCESS(st) {
                Ok(())
            } else {
                Err(fail(f.address(), st))
            }
        };
        adapter_ddi(ddi::in_table!(t, DxgkDdiResetFromTimeout))?;
        // Every node C := S; in-flight packets dropped, their devices in error.
        let mut freed = Vec::new();
        {
            let mut os = lock(&sh.os);
            os.events.push(TdrEvent::AdapterReset { reason });
            for (i, n) in os.nodes.iter_mut().enumerate() {
                for (_, p) in std::mem::take(&mut n.pending) {
                    if let Some(d) = p.device {
                        errored.insert(d);
                    }
                    freed.push((i as u32, p.id, p.dma));
                }
                n.c = n.s;
                n.ignore_irq = false;
                n.hung = false;
                n.faulted = None;
                n.preempt = None;
                n.preempted = None;
                n.watch.clear();
            }
            for (node, id, _) in &freed {
                os.events.push(TdrEvent::Dropped {
                    node: *node,
                    fence: *id,
                });
            }
        }
        for (_, _, b) in freed {
            crate::vidsch::legacy::free_dma(a, b);
        }
        for q in ums::tdr_queues(a) {
            if !q.device_in_error && q.known_work() {
                errored.insert(q.device);
            }
        }
        adapter_ddi(ddi::in_table!(t, DxgkDdiRestartFromTimeout))?;
        let mut os = lock(&sh.os);
        os.events.push(TdrEvent::Restarted);
        os.adapter_resets += 1;
        limit::record(&os, &a.state.tdr_history);
        os.reason = Some(reason);
        let now = os.now();
        for n in os.nodes.iter_mut() {
            n.last_change = now;
        }
    }
    error_devices(a, sh, &errored)
}
