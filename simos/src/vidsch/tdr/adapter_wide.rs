//! The adapter-wide reset (docs/tdr.md#the-simulated-os): the debug report (reason 0x117), the
//! TDR limit, `DxgkDdiResetEngine` on every node with packets in flight with the driver's
//! interrupt reports dropped (24H2 `M:VidSchiReportHwHang` @0x140044F38), `DxgkDdiResetFromTimeout`,
//! VidMm's purge of every segment, every node's in-flight work dropped,
//! `DxgkDdiRestartFromTimeout`, VidMm's restore, then every device of the adapter reset
//! (`K:ADAPTER_RENDER::Reset` @0x1403F2C34; `vidmm::residency::purge`). VidMm is held still
//! from before the gate closes to the end of its restore (`vidmm::inflight`). The per-engine
//! and hardware-scheduled paths escalate to it.

use std::collections::BTreeSet;

use rvgpu_ddi::basic::NTSTATUS;
use rvgpu_ddi::ntstatus::{NT_SUCCESS, STATUS_NOT_SUPPORTED};
use rvgpu_ddi::tdr::DXGKARG_RESETENGINE;

use crate::adapter::ddi::{self, table};
use crate::adapter::AdapterShared;
use crate::base::bugcheck::{self, BugCheck};
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::ums;

use super::dbginfo::{collect_dbg_info, DbgReport};
use super::limit;
use super::state::{TdrEvent, TdrReason, TdrShared};
use super::steps::error_devices;

/// The adapter-wide path (docs/tdr.md#the-simulated-os). `extra`: devices to put in error besides those
/// with outstanding work (TDR-08's owners).
pub(crate) fn adapter_reset(
    a: &AdapterShared,
    sh: &TdrShared,
    reason: TdrReason,
    extra: &[KmtHandle],
) -> Result<(), SimError> {
    collect_dbg_info(a, sh, DbgReport::Adapter(reason))?;
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
    reset_busy_engines(a, sh, &mut errored)?;
    // VidMm is held still before VidSch's gate closes (`K:DXGADAPTER::Reset` @0x140195458
    // suspends VidMm's worker before the reset): its waiters hand their paging over instead
    // of waiting for packets this reset drops (`vidmm::inflight`, the lock order).
    let host = crate::vidsch::passive::PassiveHost { a };
    let mut vidmm = crate::vidmm::inflight::suspend(a);
    let purge = {
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
        let adapter_ddi = |f: Option<ddi::HandleFn>| {
            let f = f.ok_or_else(|| fail(0, STATUS_NOT_SUPPORTED))?;
            let st = f.passive_unaudited(a, ctx)?;
            if NT_SUCCESS(st) {
                Ok(())
            } else {
                Err(fail(f.address(), st))
            }
        };
        adapter_ddi(ddi::in_table!(t, DxgkDdiResetFromTimeout))?;
        // `K:ADAPTER_RENDER::Reset` @0x1403F2C34 purges every segment after the driver's reset
        // (`K:DXGADAPTER::PrepareToReset` @0x140193794) and before VidSch's.
        lock(&sh.os).events.push(TdrEvent::AdapterReset { reason });
        let purge = crate::vidmm::residency::purge::purge_segments(&host, a, &mut vidmm)?;
        lock(&sh.os).events.push(TdrEvent::SegmentsPurged {
            notified: purge.notified.clone(),
            unmapped: purge
                .unmapped
                .iter()
                .map(|r| (r.offset, r.pages.clone()))
                .collect(),
        });
        // Every node C := S; in-flight packets dropped, their devices in error.
        let mut freed = Vec::new();
        {
            let mut os = lock(&sh.os);
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
            // Freed before the lock goes: whoever sees C past a buffer sees it freed.
            for (node, id, b) in freed {
                os.events.push(TdrEvent::Dropped { node, fence: id });
                crate::vidsch::legacy::free_dma(a, b);
            }
            // A paging waiter woken now must know its buffers were dropped, before the
            // reset finishes and counts itself (`dropped_by_reset`).
            os.adapter_drops += 1;
        }
        a.sch.completion.set();
        for q in ums::tdr_queues(a) {
            if !q.device_in_error && q.known_work() {
                errored.insert(q.device);
            }
        }
        adapter_ddi(ddi::in_table!(t, DxgkDdiRestartFromTimeout))?;
        let mut os = lock(&sh.os);
        os.events.push(TdrEvent::Restarted);
        limit::record(&os, &a.state.tdr_history);
        os.reason = Some(reason);
        let now = os.now();
        for n in os.nodes.iter_mut() {
            n.last_change = now;
        }
        purge
    };
    // VidSch runs again; then the restore, before any device is reset
    // (`K:ADAPTER_RENDER::RestoreFromPurgeSegments` @0x1403B6B24).
    crate::vidmm::residency::purge::restore_from_purge(&host, a, &purge)?;
    // Then the paging the reset dropped, in its order (`M:VIDMM_GLOBAL::
    // RecommitGpuVirtualAddresses` @0x1400D2258 recommits resident VAs), and VidMm goes on.
    let recommitted = vidmm.restore(&host, &|node, redo| {
        crate::vidmm::mmu::resubmit(&host, a, node, redo)
    })?;
    drop(vidmm);
    lock(&sh.os)
        .events
        .push(TdrEvent::SegmentsRestored { recommitted });
    error_devices(a, sh, &errored)?;
    // `K:ADAPTER_RENDER::Reset`'s last step, after the driver's restart: every device of the
    // adapter is reset (`K:DXGDEVICE::Reset` @0x1401BB7FC), idle ones too.
    for device in ums::reset_devices(a)? {
        lock(&sh.os).events.push(TdrEvent::DeviceReset { device });
    }
    lock(&sh.os).adapter_resets += 1;
    Ok(())
}

/// A TDR a test program forces (`D3DKMT_ESCAPE_TDRDBGCTRL` with no data or
/// `D3DKMT_TDRDBGCTRLTYPE_FORCETDR`: `DXGK_TDR_TYPE_FORCED` on the `DXGK_TDR_TYPE` page): the
/// adapter-wide path of [`adapter_reset`] with nothing timed out, one recovery at a time.
pub(crate) fn forced_adapter_reset(a: &AdapterShared) -> Result<(), SimError> {
    let sh = super::registry::shared(a);
    let _one = lock(&sh.recovering);
    adapter_reset(a, &sh, TdrReason::Forced, &[])
}

/// `M:VidSchiReportHwHang` @0x140044F38 before the adapter is reset: the driver's interrupt
/// callbacks are blocked (`M:VidSchiBlockDriverCallback` @0x14008F928: its reports are
/// dropped, here every node's reports are recorded as ignored) and, for a WDDM 1.2 or later
/// driver, `DxgkDdiResetEngine` is called for each node with packets in flight, in node order,
/// stopping at the first failure. Its `LastAbortedFenceId` is not read (the adapter reset
/// drops every packet). Devices the driver names through `DxgkCbInvalidateHwContext` meanwhile
/// are put in error with the others. 24H2 skips the calls when a byte of its scheduler state
/// (+55) is set, whose meaning was not settled; the simulation calls the driver's slot
/// whenever it is filled.
fn reset_busy_engines(
    a: &AdapterShared,
    sh: &TdrShared,
    errored: &mut BTreeSet<KmtHandle>,
) -> Result<(), SimError> {
    let busy: Vec<u32> = {
        let _il = lock(&a.irq.interrupt_lock);
        let mut os = lock(&sh.os);
        for n in os.nodes.iter_mut() {
            n.ignore_irq = true;
        }
        os.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.pending.is_empty())
            .map(|(i, _)| i as u32)
            .collect()
    };
    let Some(reset) = ddi::in_table!(table(a)?, DxgkDdiResetEngine) else {
        return Ok(());
    };
    let ctx = a.context();
    for node in busy {
        lock(&sh.os).in_reset = Some(node);
        let mut r = DXGKARG_RESETENGINE {
            NodeOrdinal: node,
            EngineOrdinal: 0,
            LastAbortedFenceId: 0,
        };
        let st = reset.passive_unaudited(a, (ctx, &mut r));
        let invalidated = lock(&sh.os).end_reset();
        let st = st?;
        errored.extend(invalidated);
        lock(&sh.os).events.push(TdrEvent::ResetEngine {
            node,
            status: st,
            last_aborted: r.LastAbortedFenceId,
        });
        if !NT_SUCCESS(st) {
            break;
        }
    }
    Ok(())
}
