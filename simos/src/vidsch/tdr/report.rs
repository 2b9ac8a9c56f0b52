//! TDR at ISR and DPC time: node reports recorded under the interrupt lock, processed when the
//! driver's DPC returns; and `DxgkCbInvalidateHwContext` during a reset.

use std::sync::atomic::Ordering;

use rvgpu_ddi::basic::NTSTATUS;
use rvgpu_ddi::dxgkrnl::DXGKARGCB_INVALIDATEHWCONTEXT;
use rvgpu_ddi::interrupt::{
    DXGKARGCB_NOTIFY_INTERRUPT_DATA, DXGK_ENGINE_STATE_HUNG, DXGK_INTERRUPT_DMA_COMPLETED,
    DXGK_INTERRUPT_DMA_PAGE_FAULTED, DXGK_INTERRUPT_DMA_PREEMPTED,
    DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE, DXGK_INTERRUPT_GPU_ENGINE_TIMEOUT,
    DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED, DXGK_INTERRUPT_TYPE,
    DXGK_PAGE_FAULT_ADAPTER_RESET_REQUIRED, DXGK_PAGE_FAULT_ENGINE_RESET_REQUIRED,
    DXGK_PAGE_FAULT_FENCE_INVALID,
};

use crate::os::answers::EngineStateReports;

/// The page-fault flags that ask for a reset.
const RESETS: u32 =
    (DXGK_PAGE_FAULT_ADAPTER_RESET_REQUIRED | DXGK_PAGE_FAULT_ENGINE_RESET_REQUIRED) as u32;
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_SUCCESS, STATUS_UNSUCCESSFUL};

use crate::adapter::irql::{self, Routine};
use crate::adapter::AdapterShared;
use crate::base::bugcheck::{self, vidsch, BugCheck};
use crate::base::lock::lock;
use crate::base::processor::current_irql;
use crate::ums;

use super::registry::{existing, shared};
use super::state::{Report, TdrEvent, TdrOs};

/// Called by `DxgkCbNotifyInterrupt` (device IRQL, interrupt lock held) with a validated
/// report: node reports are captured for [`dpc_process`], or recorded as ignored while the
/// node's snapshot is taken.
pub(crate) fn isr_report(a: &AdapterShared, data: &DXGKARGCB_NOTIFY_INTERRUPT_DATA) {
    // `InterruptType` selects the arm the driver filled (validated by `decode`).
    let (node, report) = match data.InterruptType {
        DXGK_INTERRUPT_DMA_COMPLETED => {
            let d = data.Anonymous.dma_completed();
            (d.NodeOrdinal, Report::Completed(d.SubmissionFenceId))
        }
        DXGK_INTERRUPT_DMA_PREEMPTED => {
            let d = data.Anonymous.dma_preempted();
            let last = d.LastCompletedFenceId;
            (d.NodeOrdinal, Report::Preempted(d.PreemptionFenceId, last))
        }
        // `DXGK_INTERRUPT_DMA_FAULTED` never gets here: 24H2 bug-checks it (`decode`).
        // A page fault naming its packet (`M:VidSchDdiNotifyInterruptWorker` @0x140006B60,
        // flag 0x2 clear): the packets before it retire and the faulting one is completed with
        // its device in error (`M:VidSchiProcessIsrFaultedPacket` @0x14004F9A4,
        // `M:VidSchiProcessDpcCompletedPacket` @0x140008BD0), the reset it asks for follows.
        // The simulation recovers it as a faulted packet (dropped, device in error, engine
        // reset) whatever reset it asks for: 24H2 without either reset flag would retire it
        // and reset nothing.
        DXGK_INTERRUPT_DMA_PAGE_FAULTED => {
            let d = data.Anonymous.dma_page_faulted();
            let flags = d.PageFaultFlags as u32;
            if flags & DXGK_PAGE_FAULT_FENCE_INVALID as u32 == 0 {
                (d.NodeOrdinal, Report::Faulted(d.FaultedFenceId))
            } else if flags & RESETS != 0 {
                // No packet named: only the reset it asks for
                // (`M:VidSchiProcessHwQueuePageFaultedDpc` @0x1400493D0).
                (d.NodeOrdinal, Report::Hung)
            } else {
                return;
            }
        }
        // A hardware queue's fault asking for a reset: the engine's, as above.
        DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED => {
            let d = data.Anonymous.hw_queue_page_faulted();
            if d.PageFaultFlags as u32 & RESETS == 0 {
                return;
            }
            (d.NodeOrdinal, Report::Hung)
        }
        // An engine timeout the hardware found: its DPC asks for the engine's reset
        // (`M:VidSchiProcessGpuEngineTimeoutDpc` @0x14004AE6C).
        DXGK_INTERRUPT_GPU_ENGINE_TIMEOUT => {
            let d = data.Anonymous.gpu_engine_timeout();
            (d.NodeOrdinal, Report::Hung)
        }
        // 24H2 drops it (`EngineStateReports::Dropped`); the pages' Hung starts a TDR.
        DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE => {
            let d = data.Anonymous.engine_state_change();
            if d.NewState != DXGK_ENGINE_STATE_HUNG
                || a.os.windows.reading().engine_state != EngineStateReports::Acted
            {
                return;
            }
            (d.NodeOrdinal, Report::Hung)
        }
        _ => return,
    };
    // A node report of an adapter that never used kernel-mode submission or TDR still needs
    // its state (a Hung report arms detection once TDR is enabled).
    let sh = match existing(a) {
        Some(s) => s,
        None => shared(a),
    };
    let mut os = lock(&sh.os);
    if os.node(node).ignore_irq {
        os.events.push(TdrEvent::IgnoredInterrupt {
            node,
            interrupt_type: data.InterruptType,
            fence: report.fence(),
        });
        return;
    }
    os.isr.push((node, report));
    drop(os);
    // Release: the DPC that sees the flag sees the report (it is also under `os`).
    a.irq.tdr_reports.store(true, Ordering::Release);
}

/// VidSch's DPC-time processing of the captured node reports (from `DxgkCbNotifyDpc`).
pub(crate) fn dpc_process(a: &AdapterShared) {
    // A report captured after this swap sets the flag again: the next DPC takes it.
    if !a.irq.tdr_reports.swap(false, Ordering::AcqRel) {
        return;
    }
    let Some(sh) = existing(a) else { return };
    let mut os = lock(&sh.os);
    let reports = std::mem::take(&mut os.isr);
    for (node, r) in reports {
        let now = os.now();
        match r {
            Report::Completed(id) => {
                let n = os.node(node);
                if id > n.s || id < n.c {
                    let (c, s) = (n.c, n.s);
                    drop(os);
                    let why = format!("DmaCompleted({id}) on node {node} outside [C={c}, S={s}]");
                    invalid_fence(a, why, id, DXGK_INTERRUPT_DMA_COMPLETED, node);
                    return;
                }
                complete_to(a, &mut os, node, id, now);
            }
            Report::Preempted(id, last) => {
                // 24H2 takes a LastCompletedFenceId anywhere in the node's [C, S] window and
                // completes the packets up to it before the preempted one
                // (`M:VidSchDdiNotifyInterruptWorker` @0x140006B60, type 2:
                // VidSchiProcessIsrCompletedPacket, then VidSchiProcessIsrPreemptedPacket); a
                // completion whose interrupt never came is made good so. Outside: 0x119 / 0x1.
                let n = os.node(node);
                if last > n.s || last < n.c {
                    let (c, s) = (n.c, n.s);
                    drop(os);
                    let why = format!(
                        "DmaPreempted({id}) on node {node}: LastCompletedFenceId {last} outside \
                         [C={c}, S={s}]"
                    );
                    invalid_fence(a, why, last, DXGK_INTERRUPT_DMA_PREEMPTED, node);
                    return;
                }
                complete_to(a, &mut os, node, last, now);
                os.node(node).preempted = Some((id, last));
            }
            Report::Faulted(id) => {
                // The fence is verified as a completion's is
                // (`VidSchiVerifyDriverReportedFenceId`, called by the worker first).
                let n = os.node(node);
                if id > n.s || id < n.c {
                    let (c, s) = (n.c, n.s);
                    drop(os);
                    let why = format!("DmaPageFaulted({id}) on node {node} outside [C={c}, S={s}]");
                    invalid_fence(a, why, id, DXGK_INTERRUPT_DMA_PAGE_FAULTED, node);
                    return;
                }
                n.faulted = Some(id);
            }
            Report::Hung => os.node(node).hung = true,
        }
    }
    drop(os);
    // After the lock: a waiter that looked before the change sleeps on the old generation.
    a.sch.completion.set();
}

/// Node `node`'s last completed fence ID moves to `id` (checked to be in its [C, S] window):
/// the packets up to it are retired and their DMA buffers freed.
fn complete_to(a: &AdapterShared, os: &mut TdrOs, node: u32, id: u32, now: u64) {
    let n = os.node(node);
    n.c = id;
    n.last_change = now;
    let done: Vec<u32> = n.pending.range(..=id).map(|(k, _)| *k).collect();
    // Freed before the lock goes: whoever sees C past a buffer sees it freed.
    for k in &done {
        if let Some(p) = n.pending.remove(k) {
            crate::vidsch::legacy::free_dma(a, p.dma);
        }
    }
    os.completed.extend(done.iter().map(|k| (node, *k)));
}

/// A report naming `fence` where the OS's (C, S) bookkeeping rules it out: `why` logged, then
/// bug check 0x119 `DRIVER_REPORTED_INVALID_FENCE_ID` (the fence, the interrupt type, the node).
fn invalid_fence(a: &AdapterShared, why: String, fence: u32, ty: DXGK_INTERRUPT_TYPE, node: u32) {
    a.state.push_log(rvgpu_kmd::platform::Level::Error, why);
    a.state.raise_bugcheck(BugCheck::video_scheduler(
        vidsch::DRIVER_REPORTED_INVALID_FENCE_ID,
        u64::from(fence),
        ty as u32 as u64,
        u64::from(node),
    ));
}

/// `DxgkCbInvalidateHwContext` (PASSIVE_LEVEL): accepted only while this adapter is inside
/// `DxgkDdiResetEngine`, for a context the OS knows (its kernel handle or the KMD's, Q2);
/// anything else is a simulation error naming the driver bug. The context's device goes to
/// error when the reset returns. `addr` is the callback's address (bug-check parameters);
/// `args` is `None` for a NULL block.
pub(crate) fn cb_invalidate_hw_context(
    args: Option<&DXGKARGCB_INVALIDATEHWCONTEXT>,
    addr: usize,
) -> NTSTATUS {
    let Some(args) = args else {
        // Dxgkrnl reads the argument block: a NULL pointer faults in the kernel.
        crate::adapter::context::raise(BugCheck::new(
            bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
            [0, 0, addr as u64, 0],
        ));
        return STATUS_INVALID_PARAMETER;
    };
    let Some(a) = AdapterShared::from_handle(args.hAdapter) else {
        let msg = format!(
            "driver bug: DxgkCbInvalidateHwContext with hAdapter = {:#x}, not the handle the \
             OS passed to DxgkDdiStartDevice",
            args.hAdapter as usize
        );
        match crate::adapter::context::current_machine() {
            Some(m) => m.raise_sim_error(msg),
            None => eprintln!("rvgpu-simos: {msg} (outside a machine)"),
        }
        return STATUS_INVALID_PARAMETER;
    };
    if let Err(b) = irql::check(Routine::DxgkCbInvalidateHwContext, current_irql(), addr) {
        a.state.raise_bugcheck(b);
        return STATUS_UNSUCCESSFUL;
    }
    let sh = shared(&a);
    if lock(&sh.os).in_reset.is_none() {
        a.state.raise_sim_error(
            "driver bug: DxgkCbInvalidateHwContext outside DxgkDdiResetEngine / \
             DxgkDdiResetHwEngine (docs/tdr.md#the-simulated-os)",
        );
        return STATUS_INVALID_PARAMETER;
    }
    let Some(device) = ums::tdr_device_of_context(&a, args.hHwContext as usize) else {
        a.state.raise_sim_error(format!(
            "driver bug: DxgkCbInvalidateHwContext with unknown context {:#x}",
            args.hHwContext as usize
        ));
        return STATUS_INVALID_PARAMETER;
    };
    // `M:VidSchInvalidateHwContext` @0x1400521E0 puts the device in error as hung (reason 7)
    // inside the callback, before the KMD goes on to abort the device's doorbells: a program
    // that reads DISCONNECTED_ABORT finds its device hung already. The rest of UM-10 for it
    // (signalled sync objects, events) follows after the resume (`steps::error_devices`).
    if let Some(d) = lock(&a.ums).devices.get_mut(&device) {
        d.mark_error(ums::DeviceError::Hung);
    }
    let mut os = lock(&sh.os);
    os.invalidated.push(device);
    os.events.push(TdrEvent::Invalidated { device });
    STATUS_SUCCESS
}
