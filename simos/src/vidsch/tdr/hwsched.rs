//! Recovery of a hardware-scheduled node: `DxgkDdiResetHwEngine`, then — only if it
//! returned `STATUS_SUCCESS` — `DxgkDdiResumeHwEngine` (\[D\] 22631
//! `dxgmms2/VidSchiResetHwEngine`: `DxgCoreInterface[39]`, then `[40]` only when the first
//! returned 0; the result is "resume returned 0"). Either failing escalates to the
//! adapter-wide path with reason 9. No
//! `DxgkDdiResetEngine` and no `LastAbortedFenceId` on such nodes: the OS's (S, C) of the
//! node's kernel-mode ring are left as they are (the KMD keeps innocent work, and fails the
//! reset when one of the OS's own node-ring packets was aborted, driver/kmd/src/reset/ddi.rs).
//! `DxgkCbInvalidateHwContext` is accepted during `DxgkDdiResetHwEngine`; the invalidated
//! contexts' devices go in error (UM-10), or the stalled queue's device when the KMD named none.
//!
//! The order before the reset is the reading's ([`HwsTdr`]): 24H2's asks for the dependent
//! group first and makes the debug report just before the reset; the pages' is the TDR-05
//! sequence of every node.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

use rvgpu_ddi::basic::NTSTATUS;
use rvgpu_ddi::hws::{DXGKARG_RESETHWENGINE, DXGKARG_RESUMEHWENGINE};
use rvgpu_ddi::ntstatus::{NT_SUCCESS, STATUS_SUCCESS};

use crate::adapter::ddi::{self, table};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::os::answers::{HwsTdr, LostFence};
use crate::vidsch::hws::HwsCall;

use super::adapter_wide::adapter_reset;
use super::dbginfo::{collect_dbg_info, DbgReport};
use super::irq::Interrupts;
use super::report::dpc_process;
use super::state::{Report, TdrEvent, TdrReason, TdrShared};
use super::steps::{
    error_devices, error_stalled_queue, flush_dpcs, pause_before_reset, prepare_reset,
    query_current_fence, query_dependent_group, snapshot_node,
};

/// The two engine DDIs of the recovery.
#[derive(Clone, Copy)]
enum EngineDdi {
    Reset,
    Resume,
}

/// Records what an engine DDI returned for `node`, in TDR's events and the HWS call log.
fn record(a: &AdapterShared, sh: &TdrShared, ddi: EngineDdi, node: u32, status: NTSTATUS) {
    let (event, call) = match ddi {
        EngineDdi::Reset => (
            TdrEvent::ResetHwEngine { node, status },
            HwsCall::ResetHwEngine { node, status },
        ),
        EngineDdi::Resume => (
            TdrEvent::ResumeHwEngine { node, status },
            HwsCall::ResumeHwEngine { node, status },
        ),
    };
    lock(&sh.os).events.push(event);
    lock(&a.sch.hws).calls.push(call);
}

/// The TDR of a hardware-scheduled `node` from the preemption timeout on, in the reading's
/// order ([`HwsTdr`]). `stalled`: as for [`super::recovery::recover_node`].
pub(crate) fn recover_hw_node(
    a: &AdapterShared,
    sh: &TdrShared,
    node: u32,
    stalled: Option<KmtHandle>,
    irq: &dyn Interrupts,
) -> Result<(), SimError> {
    let order = a.os.windows.reading().hws_tdr;
    lock(&sh.os).events.push(TdrEvent::Timeout { node });
    if order == HwsTdr::DbgInfoBeforeReset {
        // 24H2 asks for the dependent group before anything else (`VidSchiPrepareToResetEngine`):
        // an empty mask is bug check 0x119 / 8; a failure or a mask without the node makes it
        // adapter-wide with reason 9, as `VidSchiCheckHwProgress` does. Only the hung node is
        // reset (24H2 preempts only the dependents that are not hardware-scheduled; rvgpu's
        // nodes all are).
        let (st, mask) = query_dependent_group(a, node)?;
        if NT_SUCCESS(st) && mask == 0 {
            let b = crate::BugCheck::video_scheduler(8, node.into(), 0, 0);
            a.state.raise_bugcheck(b);
            return Err(SimError::Bugcheck(b));
        }
        if !NT_SUCCESS(st) || mask & (1u64 << node.min(63)) == 0 {
            return adapter_reset(a, sh, TdrReason::EngineTimeoutPromotedToAdapterReset, &[]);
        }
        lock(&sh.os)
            .events
            .push(TdrEvent::DependentGroup { node, mask });
    } else {
        // Step 3 of the pages: the debug report first.
        collect_dbg_info(a, sh, DbgReport::Engine { node, hw: true })?;
    }
    // Gate kernel-mode submissions for the whole recovery.
    let gate = sh.gate.write().unwrap_or_else(|p| p.into_inner());
    if order == HwsTdr::DbgInfoBeforeReset {
        // 24H2: the snapshot (`VidSchiSetHwNodeResettingStateAtISR`), then the debug report
        // just before the reset (`M:TdrCollectDbgInfoStage1`).
        snapshot_node(a, sh, node);
        let step = lock(&sh.os).step;
        pause_before_reset(a, sh, node, step, irq);
        collect_dbg_info(a, sh, DbgReport::Engine { node, hw: true })?;
    } else if prepare_reset(a, sh, node, stalled, irq)?.is_none() {
        return Ok(());
    }
    reset_and_resume(a, sh, node, stalled, gate, irq)
}

/// Step 8 onwards for a hardware-scheduled `node`: `DxgkDdiResetHwEngine`, the DPC flush
/// 24H2 makes right after it, the node ring's resync, `DxgkDdiResumeHwEngine`.
fn reset_and_resume(
    a: &AdapterShared,
    sh: &TdrShared,
    node: u32,
    stalled: Option<KmtHandle>,
    gate: std::sync::RwLockWriteGuard<'_, ()>,
    irq: &dyn Interrupts,
) -> Result<(), SimError> {
    let t = table(a)?;
    let ctx = a.context();
    let (Some(reset), Some(resume)) = (
        ddi::in_table!(t, DxgkDdiResetHwEngine),
        ddi::in_table!(t, DxgkDdiResumeHwEngine),
    ) else {
        return promote(a, sh, gate, BTreeSet::new());
    };
    // The node's resource, exclusively from the reset to the resume: no suspend or resume of
    // one of its contexts runs meanwhile (`NodeResources`). Let go before a promotion, whose
    // adapter-wide path waits for threads that may be waiting for it.
    let node_resource = a.sch.node_resources.exclusive(node);
    {
        let mut os = lock(&sh.os);
        os.in_reset = Some(node);
        os.invalidated.clear();
    }
    let mut r = DXGKARG_RESETHWENGINE {
        NodeOrdinal: node,
        EngineOrdinal: 0,
    };
    a.observer()
        .handed(&rvgpu_ddi::handover::RESET_HW_ENGINE, &r);
    let st = reset.passive_unaudited(a, (ctx, &mut r));
    let invalidated = lock(&sh.os).end_reset();
    let st = st?;
    record(a, sh, EngineDdi::Reset, node, st);
    // 24H2 `VidSchInvalidateHwContext`: each context named during the reset is charged.
    for d in &invalidated {
        super::process::charge(a, sh, *d);
    }
    let mut errored: BTreeSet<KmtHandle> = invalidated.iter().copied().collect();
    if a.os.windows.reading().hws_tdr == HwsTdr::DbgInfoBeforeReset {
        // 24H2 `VidSchiResetHwEngine`: KeFlushQueuedDpcs right after the reset.
        let step = lock(&sh.os).step;
        flush_dpcs(a, step, irq)?;
        lock(&sh.os).events.push(TdrEvent::DpcFlushed { node });
    }
    if st != STATUS_SUCCESS {
        drop(node_resource);
        return promote(a, sh, gate, errored);
    }
    check_hw_contexts_after_reset(a, node)?;
    sync_node_ring(a, sh, node);
    let mut rs = DXGKARG_RESUMEHWENGINE {
        NodeOrdinal: node,
        EngineOrdinal: 0,
    };
    let st = resume.passive(a, (ctx, &mut rs))?;
    record(a, sh, EngineDdi::Resume, node, st);
    drop(node_resource);
    if st != STATUS_SUCCESS {
        return promote(a, sh, gate, errored);
    }
    error_stalled_queue(a, &mut errored, stalled);
    {
        let mut os = lock(&sh.os);
        let now = os.now();
        let n = os.node(node);
        n.hung = false;
        n.faulted = None;
        n.preempt = None;
        for n in os.nodes.iter_mut() {
            n.last_change = now;
            n.watch.clear();
        }
        os.reason = Some(TdrReason::EngineTimeout);
        os.events.push(TdrEvent::Recovered { node });
    }
    drop(gate);
    error_devices(a, sh, &errored)?;
    lock(&sh.os).resets += 1;
    Ok(())
}

/// After a successful `DxgkDdiResetHwEngine` (and the DPC flush), 24H2 `M:VidSchiResetHwEngine`
/// @0x140052878 walks the node's hardware contexts: one whose last requested suspend fence is
/// not its last completed one (`M:VidSchiProcessSuspendContextCompletedDpc` @0x14001DD28
/// moves the second) is bug check 0x119 / 0xA000 (the adapter, completed, requested): the
/// reset must leave no suspend of the node outstanding. The simulation refuses
/// `STATUS_PENDING` from `DxgkDdiSuspendContext`, so a suspend completes when the DDI returns;
/// with the node's resource held (`NodeResources`) none is half-done here, and the pair
/// differs only if that bookkeeping is broken.
fn check_hw_contexts_after_reset(a: &AdapterShared, node: u32) -> Result<(), SimError> {
    let pending = lock(&a.ums)
        .contexts
        .values()
        .filter(|c| c.hw_queue && c.node == node)
        .find(|c| c.suspend_done != c.suspend_fence)
        .map(|c| (c.suspend_done, c.suspend_fence));
    let Some((done, requested)) = pending else {
        return Ok(());
    };
    let b =
        crate::BugCheck::video_scheduler(0xA000, a as *const AdapterShared as u64, done, requested);
    a.state.raise_bugcheck(b);
    Err(SimError::Bugcheck(b))
}

/// Between a successful `DxgkDdiResetHwEngine` and the resume the node's reports count again.
///
/// 24H2 (`M:VidSchiResetHwEngine` @0x140052878) asks the driver nothing there: after the reset
/// it flushes the DPCs, checks the node's suspend fences (0x119 / 0xA000), clears three of the
/// node's counters and its bit in the adapter's resetting-node mask, and resumes the engine;
/// `M:VidSchiSetHwNodeResettingStateAtISR` @0x140051F60, the interrupt-synchronized step
/// before the reset, only copies two node values and a timestamp into the reset's history
/// record. A node-ring completion the OS dropped meanwhile is made good by the next one the
/// driver reports after the resume (`DmaCompleted` names the last completed fence, so it
/// retires every earlier one); until then the OS's last completed fence stays behind, as for
/// any lost interrupt under 24H2 (`LostFence::NotAsked`).
///
/// The pages' reading ([`LostFence::Asked`]) follows the DxgkDdiResetHwEngine page's Remarks
/// ("the OS needs to re-enable interrupts from this engine and synchronize its state with the
/// reset GPU engine") with `DxgkDdiQueryCurrentFence`: the completions since the snapshot are
/// retired as that `DmaCompleted` would retire them.
fn sync_node_ring(a: &AdapterShared, sh: &TdrShared, node: u32) {
    lock(&sh.os).node(node).ignore_irq = false;
    if a.os.windows.reading().lost_fence == LostFence::NotAsked {
        return;
    }
    let Some(f) = query_current_fence(a, node) else {
        return;
    };
    {
        let mut os = lock(&sh.os);
        let n = os.node(node);
        let ahead = f.wrapping_sub(n.c);
        if ahead == 0 || ahead > n.s.wrapping_sub(n.c) {
            return;
        }
        os.isr.push((node, Report::Completed(f)));
    }
    a.irq.tdr_reports.store(true, Ordering::Release);
    dpc_process(a);
}

/// The node's recovery failed: the gate opens and the adapter-wide path runs with reason 9,
/// `errored` (the devices already known to be in error) added to its own.
fn promote(
    a: &AdapterShared,
    sh: &TdrShared,
    gate: std::sync::RwLockWriteGuard<'_, ()>,
    errored: BTreeSet<KmtHandle>,
) -> Result<(), SimError> {
    drop(gate);
    let extra: Vec<KmtHandle> = errored.into_iter().collect();
    adapter_reset(
        a,
        sh,
        TdrReason::EngineTimeoutPromotedToAdapterReset,
        &extra,
    )
}
