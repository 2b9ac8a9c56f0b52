//! Recovery of one node: the TDR-05 sequence with a per-engine reset (`DxgkDdiResetEngine`)
//! and the fence bookkeeping of TDR-04; a hardware-scheduled node goes to [`super::hwsched`],
//! a driver without per-engine reset to [`super::adapter_wide`].

use std::collections::BTreeSet;

use rvgpu_ddi::ntstatus::NT_SUCCESS;
use rvgpu_ddi::tdr::DXGKARG_RESETENGINE;

use crate::adapter::ddi::{self, sim_err, table};
use crate::adapter::AdapterShared;
use crate::base::bugcheck::{vidsch, BugCheck};
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::ums;

use super::adapter_wide::adapter_reset;
use super::dbginfo::{collect_dbg_info, DbgReport};
use super::hwsched::recover_hw_node;
use super::irq::Interrupts;
use super::state::{Packet, TdrEvent, TdrReason, TdrShared};
use super::steps::{error_devices, error_stalled_queue, prepare_reset, Prepared};

/// The driver's `DxgkDdiResetEngine`.
type ResetEngine = ddi::Of<rvgpu_ddi::tdr::PDXGKDDI_RESETENGINE>;

/// What the resets of the dependent group leave to do.
#[derive(Default)]
struct Outcome {
    /// Devices to put in error (UM-10).
    errored: BTreeSet<KmtHandle>,
    /// The adapter-wide path is next (TDR-08, TDR-09), with these devices in error besides.
    promote: Option<Vec<KmtHandle>>,
    /// Per reset node, the packets to resubmit.
    resubmit: Vec<(u32, Vec<Packet>)>,
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
    let per_engine = lock(&a.caps).is_some_and(|c| c.SupportPerEngineTDR != 0);
    if per_engine && crate::vidsch::hws::is_hw_node(a, node) {
        // A hardware-scheduled node resets through ResetHwEngine/ResumeHwEngine.
        return recover_hw_node(a, sh, node, stalled, irq);
    }
    lock(&sh.os).events.push(TdrEvent::Timeout { node });
    // Step 3.
    collect_dbg_info(a, sh, DbgReport::Engine { node, hw: false })?;
    // Gate kernel-mode submissions for the whole recovery.
    let gate = sh.gate.write().unwrap_or_else(|p| p.into_inner());
    // Steps 4–7.
    let Some(prep) = prepare_reset(a, sh, node, stalled, irq)? else {
        return Ok(());
    };
    // Step 8: ResetEngine for each node of the mask, in ordinal order (only with
    // SupportPerEngineTDR; otherwise the adapter-wide path).
    let (Some(reset), true) = (ddi::in_table!(table(a)?, DxgkDdiResetEngine), per_engine) else {
        drop(gate);
        return adapter_reset(a, sh, TdrReason::AdapterTimeout, &[]);
    };
    let mut out = Outcome::default();
    for rn in 0..prep.nodes.min(64) {
        if prep.mask & (1u64 << rn) == 0 {
            continue;
        }
        if !reset_dependent(a, sh, reset, node, rn, &prep, &mut out)? {
            break;
        }
    }
    error_stalled_queue(a, &mut out.errored, stalled);
    if let Some(owners) = out.promote {
        // Put back what was not resubmitted so the adapter path drops it with its devices.
        {
            let mut os = lock(&sh.os);
            for (rn, rest) in out.resubmit {
                for p in rest {
                    os.node(rn).pending.insert(p.id, p);
                }
            }
        }
        let mut extra: Vec<KmtHandle> = owners;
        extra.extend(out.errored.iter().copied());
        drop(gate);
        return adapter_reset(
            a,
            sh,
            TdrReason::EngineTimeoutPromotedToAdapterReset,
            &extra,
        );
    }
    resubmit(a, sh, out.resubmit, &out.errored)?;
    {
        let mut os = lock(&sh.os);
        let now = os.now();
        for n in os.nodes.iter_mut() {
            n.last_change = now;
            n.watch.clear();
        }
        os.reason = Some(TdrReason::EngineTimeout);
    }
    drop(gate);
    // Step 11: UM-10 for the errored devices.
    error_devices(a, sh, &out.errored)?;
    lock(&sh.os).resets += 1;
    Ok(())
}

/// Steps 8–10 for node `rn` of the dependent group of the hung `node`: its reset, the check
/// of what the driver reports, its retirement. `false`: the reset failed and the adapter-wide
/// path is next (TDR-09).
fn reset_dependent(
    a: &AdapterShared,
    sh: &TdrShared,
    reset: ResetEngine,
    node: u32,
    rn: u32,
    prep: &Prepared,
    out: &mut Outcome,
) -> Result<bool, SimError> {
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
    let ctx = a.context();
    a.observer().handed(&rvgpu_ddi::handover::RESET_ENGINE, &r);
    let st = reset.passive_unaudited(a, (ctx, &mut r));
    let invalidated = lock(&sh.os).end_reset();
    let st = st?;
    if let Some(d) = prep.running.filter(|_| rn == node) {
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
        out.promote = Some(Vec::new());
        return Ok(false);
    }
    // Step 9 (TDR-06).
    check_reset(a, rn, la, (s, c_now), &invalidated, prep.nodes)?;
    out.errored.extend(invalidated.iter().copied());
    // Step 10: retire, find the aborted packet, resubmit the rest.
    let c_snap_rn = if rn == node { prep.c_snap } else { c_now };
    let rest = retire(a, sh, rn, la, c_snap_rn, out);
    out.resubmit.push((rn, rest));
    Ok(true)
}

/// Step 9: what `DxgkDdiResetEngine(rn)` reported and left. `LastAbortedFenceId` (`la`)
/// outside `[C, S]` is bug check 0x119 / 0xA (TDR-06); the node ring must be empty and the
/// engine neither held nor resetting; no queue of an `invalidated` device left in a runlist
/// (UM-10).
fn check_reset(
    a: &AdapterShared,
    rn: u32,
    la: u32,
    (s, c_now): (u32, u32),
    invalidated: &[KmtHandle],
    nodes: u32,
) -> Result<(), SimError> {
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
    Ok(())
}

/// Step 10 for node `rn`: IDs below `la` retire; the aborted packet (`la` if it is above
/// `c_snap`, the C at the snapshot, else the faulted one) puts its device in error, and a
/// paging one promotes to the adapter-wide path (TDR-08). Returns the rest, to resubmit.
fn retire(
    a: &AdapterShared,
    sh: &TdrShared,
    rn: u32,
    la: u32,
    c_snap: u32,
    out: &mut Outcome,
) -> Vec<Packet> {
    let mut os = lock(&sh.os);
    let n = os.node(rn);
    let retired: Vec<u32> = n.pending.range(..la).map(|(k, _)| *k).collect();
    let mut freed = Vec::new();
    for k in &retired {
        if let Some(p) = n.pending.remove(k) {
            freed.push(p.dma);
        }
    }
    let faulted = n.faulted_fence.take();
    let aborted = if la > c_snap {
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
            out.errored.insert(d);
        }
        if p.paging {
            out.promote = Some(p.owners.clone());
        }
        freed.push(p.dma);
    }
    // Freed before the lock goes: whoever sees C past a buffer sees it freed.
    for b in freed {
        crate::vidsch::legacy::free_dma(a, b);
    }
    drop(os);
    a.sch.completion.set();
    rest
}

/// Step 10's resubmission, per reset node: its reports count again, then paging packets with
/// their original IDs (TDR-03), then render packets of devices not in error with new IDs;
/// errored devices' packets are dropped.
fn resubmit(
    a: &AdapterShared,
    sh: &TdrShared,
    resubmit: Vec<(u32, Vec<Packet>)>,
    errored: &BTreeSet<KmtHandle>,
) -> Result<(), SimError> {
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
    Ok(())
}
