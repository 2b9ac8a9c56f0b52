//! Interrupts and DPCs: `DxgkCbNotifyInterrupt` (with the report checks), `DxgkCbQueueDpc`,
//! `DxgkCbNotifyDpc`, `DxgkCbSynchronizeExecution`, `DxgkCbLogEtwEvent`.

use std::sync::atomic::Ordering;

use rvgpu_ddi::adapter::*;
use rvgpu_ddi::basic::*;
use rvgpu_ddi::interrupt::*;
use rvgpu_ddi::ntstatus::*;
use rvgpu_kmd::platform::Irql;

use super::view::{Place, ReportView, SyncView};
use crate::adapter::callback::{enter, enter_status};
use crate::adapter::context::{self};
use crate::adapter::irql::{self, Routine};
use crate::adapter::AdapterShared;
use crate::base::bugcheck::{self, vidsch, BugCheck};
use crate::base::lock::lock;
use crate::base::notify::{self, Notification};
use crate::base::processor;
use crate::base::processor::{current_irql, IrqlScope};
use crate::dxgkrnl::interrupt::{
    check_unattributed_fault, validate_page_fault_flags, REFUSED_FAULT_REPORT,
};
use crate::os::answers::DpcFenceWork;

/// Most fence handles 24H2 keeps from one native-fence report.
const MAX_REPORTED_FENCES: u32 = 8;

/// `DxgkCbQueueDpc` (any IRQL): at most one DPC queued per adapter. Unlike
/// `DxgkCbNotifyInterrupt` it does not require the interrupt lock: Microsoft documents it as
/// callable at any level (it is KeInsertQueueDpc underneath), so a driver may queue its DPC
/// from a PASSIVE thread or from the DPC itself.
pub(super) fn queue_dpc(handle: HANDLE, entry: usize) -> BOOLEAN {
    let Some(a) = enter(Routine::DxgkCbQueueDpc, handle, entry) else {
        return 0;
    };
    // Held before it is queued: a DPC thread that sees it queued also sees it held
    // (`Interrupts::dpc_held`); it runs once the interrupt lock is released.
    let held = a.holds_interrupt_lock();
    if held {
        a.irq.dpc_held.store(true, Ordering::Release);
    }
    if a.irq.dpc_queued.swap(true, Ordering::AcqRel) {
        return 0;
    }
    if !held {
        a.irq.dpc_wake.notify();
    }
    1
}

/// `DxgkCbSynchronizeExecution` (<= DISPATCH), its arguments checked ([`super::sync`]): runs
/// the routine under the interrupt lock at device IRQL and returns its BOOLEAN.
pub(super) fn synchronize_execution(
    handle: HANDLE,
    routine: impl SyncView,
    return_value: impl Place<BOOLEAN>,
    entry: usize,
) -> NTSTATUS {
    let a = enter_status!(DxgkCbSynchronizeExecution, handle, entry);
    if !a.irq.connected.load(Ordering::Acquire) {
        return STATUS_UNSUCCESSFUL;
    }
    let result = {
        let _guard = a.lock_interrupt();
        // Re-check under the lock: the interrupt may have been disconnected (or the machine
        // halted) while this caller waited for it.
        if a.state.is_halted() || !a.irq.connected.load(Ordering::Acquire) {
            return STATUS_UNSUCCESSFUL;
        }
        let _irql = IrqlScope::enter(Irql::Device);
        let r = routine.run();
        if let Err(b) = processor::check_return_irql(
            Irql::Device,
            bugcheck::irql_unexpected::SIM_SYNCHRONIZE_ROUTINE,
            routine.address(),
            routine.context(),
            0,
        ) {
            a.state.raise_bugcheck(b);
            return STATUS_UNSUCCESSFUL;
        }
        r
    };
    return_value.write(result);
    STATUS_SUCCESS
}

pub(super) fn decode(a: &AdapterShared, data: &impl ReportView) -> Result<Notification, BugCheck> {
    let t = data.InterruptType;
    if !notify::is_known_type(t) {
        return Err(BugCheck::video_scheduler(
            vidsch::SIM_UNKNOWN_INTERRUPT_TYPE,
            t as u32 as u64,
            0,
            0,
        ));
    }
    if !notify::allowed_on_render_only(t) {
        // 0x119 subtype 7: REPORT_VSYNC_ON_RENDER_ONLY_ADAPTER.
        return Err(BugCheck::video_scheduler(0x7, t as u32 as u64, 0, 0));
    }
    // The node and engine the report names (every type the simulation decodes carries them).
    // Between StartDevice's return (the interrupt is connected) and the OS's DRIVERCAPS
    // query the OS does not know the node count yet: an idle engine may already ask for F1
    // then. Until the caps are read the report is checked against the architectural maximum
    // (what `validate_caps` allows); the exact count applies from then on.
    let nodes = lock(&a.caps).map_or(rvgpu_hw::regs::ENGINE_MAX, |c| {
        c.GpuEngineTopology.NbAsymetricProcessingNodes
    });
    let check_node = |node: u32, engine: u32| -> Result<(), BugCheck> {
        if node >= nodes {
            return Err(BugCheck::video_scheduler(
                vidsch::SIM_INVALID_NODE_ORDINAL,
                u64::from(node),
                u64::from(nodes),
                t as u32 as u64,
            ));
        }
        if engine != 0 {
            return Err(BugCheck::video_scheduler(
                vidsch::SIM_INVALID_ENGINE_ORDINAL,
                u64::from(engine),
                u64::from(node),
                t as u32 as u64,
            ));
        }
        Ok(())
    };
    // `InterruptType` selects the union member the driver filled.
    let arms = &data.Anonymous;
    Ok(match t {
        // `M:VidSchDdiNotifyInterruptWorker` @0x140006B60 has no handling for type 4: every
        // report of it is bug check 0x119 subtype 0xD (node, engine, fence), before any check
        // of what it names.
        DXGK_INTERRUPT_DMA_FAULTED => {
            let d = arms.dma_faulted();
            return Err(BugCheck::video_scheduler(
                REFUSED_FAULT_REPORT,
                u64::from(d.NodeOrdinal),
                u64::from(d.EngineOrdinal),
                u64::from(d.FaultedFenceId),
            ));
        }
        // The worker validates the flags first (`VidSchiValidatePageFaultFlags`); a report
        // naming no packet is checked as its DPC checks it. What it then does is VidSch's
        // (crate::vidsch::tdr::isr_report).
        DXGK_INTERRUPT_DMA_PAGE_FAULTED => {
            let d = arms.dma_page_faulted();
            let flags = d.PageFaultFlags as u32;
            validate_page_fault_flags(flags)?;
            check_node(d.NodeOrdinal, d.EngineOrdinal)?;
            check_unattributed_fault(
                flags,
                d.FaultedProcessHandle as usize,
                d.FaultedVirtualAddress,
            )?;
            Notification::Other { interrupt_type: t }
        }
        DXGK_INTERRUPT_DMA_COMPLETED => {
            let d = arms.dma_completed();
            check_node(d.NodeOrdinal, d.EngineOrdinal)?;
            Notification::DmaCompleted {
                fence_id: d.SubmissionFenceId,
                node: d.NodeOrdinal,
                engine: d.EngineOrdinal,
            }
        }
        DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE => {
            let d = arms.engine_state_change();
            check_node(d.NodeOrdinal, d.EngineOrdinal)?;
            if !(DXGK_ENGINE_STATE_ACTIVE..=DXGK_ENGINE_STATE_HUNG).contains(&d.NewState) {
                return Err(BugCheck::video_scheduler(
                    vidsch::SIM_INVALID_ENGINE_STATE,
                    d.NewState as u32 as u64,
                    u64::from(d.NodeOrdinal),
                    t as u32 as u64,
                ));
            }
            Notification::EngineStateChange {
                node: d.NodeOrdinal,
                engine: d.EngineOrdinal,
                new_state: d.NewState,
            }
        }
        DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED => {
            let d = arms.native_fence_signaled();
            check_node(d.NodeOrdinal, d.EngineOrdinal)?;
            native_fence_signaled(a, data, &d)?
        }
        rvgpu_ddi::interrupt::DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED => {
            let d = arms.hw_queue_page_faulted();
            check_node(d.NodeOrdinal, d.EngineOrdinal)?;
            Notification::HwQueuePageFaulted {
                queue: d.FaultedHwQueue as usize,
                va: d.FaultedVirtualAddress,
                node: d.NodeOrdinal,
                flags: d.PageFaultFlags as u32,
            }
        }
        DXGK_INTERRUPT_GPU_ENGINE_TIMEOUT => {
            let d = arms.gpu_engine_timeout();
            check_node(d.NodeOrdinal, d.EngineOrdinal)?;
            Notification::Other { interrupt_type: t }
        }
        rvgpu_ddi::interrupt::DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT => {
            let d = arms.scheduling_log_interrupt();
            check_node(d.NodeOrdinal, d.EngineOrdinal)?;
            Notification::SchedulingLogInterrupt {
                node: d.NodeOrdinal,
                engine: d.EngineOrdinal,
            }
        }
        other => Notification::Other {
            interrupt_type: other,
        },
    })
}

/// `M:VidSchiProcessNativeFenceSignaledDpc` @0x140044BE0's address.
const NATIVE_FENCE_SIGNALED_DPC: u64 = 0x1_4004_4BE0;

/// A `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` report `d` of `data`, its node already checked:
/// the hardware queue it names (LOG-08), the handles it lists, and the adapter's right to raise
/// it (NF-10).
fn native_fence_signaled(
    a: &AdapterShared,
    data: &impl ReportView,
    d: &DXGKARGCB_NOTIFY_INTERRUPT_DATA_NativeFenceSignaled,
) -> Result<Notification, BugCheck> {
    let t = data.InterruptType;
    // LOG-08: with the optimized cap the OS reads hHWQueue only.
    let optimized = lock(&a.caps).is_some_and(|c| {
        c.SchedulingCaps
            .is_set(DXGK_VIDSCHCAPS::OptimizedNativeFenceSignaledInterrupt)
    });
    let hw_queue = if optimized && !d.hHWQueue.is_null() {
        let h = d.hHWQueue as usize;
        let table = lock(&a.fence_os).logs.clone();
        match table.check_isr_queue(h, d.NodeOrdinal) {
            // The KMD's handle, which 24H2 reads at the object's +32 and hands to
            // `DxgkDdiUpdateNativeFenceLogs` (`M:VidSchiProcessNativeFenceSignaledDpc`
            // @0x140044BE0).
            crate::sync::fencelog::IsrQueue::Ok(kmd) => Some(kmd),
            // Not one of Dxgkrnl's queue objects (the driver's own handle, say): that DPC reads
            // it at +32 and +40 at DISPATCH_LEVEL, a wild read there (bug check 0xD1: the
            // memory referenced, IRQL 2, 0 read, the DPC's address). Raised at the report, as
            // nothing between it and the DPC can make it valid.
            crate::sync::fencelog::IsrQueue::Unknown => {
                return Err(BugCheck::new(
                    bugcheck::DRIVER_IRQL_NOT_LESS_OR_EQUAL,
                    [
                        (h as u64).wrapping_add(32),
                        bugcheck::kirql(rvgpu_kmd::platform::Irql::Dispatch),
                        0,
                        NATIVE_FENCE_SIGNALED_DPC,
                    ],
                ))
            }
            crate::sync::fencelog::IsrQueue::WrongNode(n) => {
                return Err(BugCheck::video_scheduler(
                    vidsch::SIM_INVALID_HW_QUEUE,
                    h as u64,
                    u64::from(d.NodeOrdinal),
                    u64::from(n),
                ))
            }
        }
    } else {
        None
    };
    // 24H2 copies at most 8 handles at ISR time and makes a longer array a scan
    // (`M:VidSchiProcessIsrNativeFenceSignaled` @0x140052784); the pages set no limit.
    let fences = if optimized
        || d.pSignaledNativeFenceArray.is_null()
        || d.SignaledNativeFenceCount > MAX_REPORTED_FENCES
    {
        None
    } else {
        let handles = data
            .signaled_fences(d.SignaledNativeFenceCount as usize)?
            .unwrap_or_default();
        let live = lock(&a.native_fences);
        for (i, h) in handles.iter().enumerate() {
            if !live.contains(&(*h as usize)) {
                return Err(BugCheck::video_scheduler(
                    vidsch::DRIVER_REPORTED_INVALID_FENCE_ID,
                    *h as usize as u64,
                    t as u32 as u64,
                    i as u64,
                ));
            }
        }
        Some(handles.iter().map(|h| *h as usize).collect())
    };
    let advertised =
        lock(&a.caps).is_some_and(|c| c.SchedulingCaps.is_set(DXGK_VIDSCHCAPS::NativeGpuFence));
    if !a.native_fence_enabled() || !advertised {
        // The OS never enabled native fences on this adapter (NF-10): the report is
        // of a type this adapter may not raise.
        return Err(BugCheck::video_scheduler(
            vidsch::SIM_UNKNOWN_INTERRUPT_TYPE,
            t as u32 as u64,
            1,
            0,
        ));
    }
    Ok(Notification::NativeFenceSignaled {
        node: d.NodeOrdinal,
        engine: d.EngineOrdinal,
        fences,
        evaluate_legacy: data
            .Flags
            .is_set(DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::EvaluateLegacyMonitoredFences),
        optimized,
        hw_queue,
    })
}

/// `DxgkCbNotifyInterrupt` (device IRQL, from this adapter's ISR or one of its synchronized
/// routines): validates the report and queues it for the DPC.
pub(super) fn notify_interrupt(handle: HANDLE, data: Option<impl ReportView>, entry: usize) {
    let Some(a) = enter(Routine::DxgkCbNotifyInterrupt, handle, entry) else {
        return;
    };
    let Some(data) = data else {
        a.state.raise_bugcheck(BugCheck::new(
            bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
            [0, 0, entry as u64, 0],
        ));
        return;
    };
    if !a.holds_interrupt_lock() {
        // At device IRQL but not inside this adapter's ISR or synchronized routine (another
        // adapter's, say): the OS's interrupt-time state is unprotected.
        a.state.raise_bugcheck(BugCheck::video_scheduler(
            vidsch::SIM_NOTIFY_OUTSIDE_INTERRUPT_LOCK,
            handle as usize as u64,
            data.InterruptType as u32 as u64,
            0,
        ));
        return;
    }
    match decode(&a, &data) {
        Ok(n) => {
            // Node reports for VidSch's kernel-mode scheduling and TDR (crate::vidsch::tdr).
            crate::vidsch::tdr::isr_report(&a, &data);
            a.push_pending(n)
        }
        Err(b) => a.state.raise_bugcheck(b),
    }
}

/// `DxgkCbNotifyDpc` (DISPATCH): the OS processes what the ISR reported. On 24H2 VidSch's
/// native-fence work (resample, `DxgkDdiUpdateMonitoredValues`) runs here, inside the
/// driver's call (`M:VidSchDdiNotifyDpc` @0x1400079E0): a driver lock held across this
/// callback that those DDIs take deadlocks (crate::os::answers::DpcFenceWork).
pub(super) fn notify_dpc(handle: HANDLE, entry: usize) {
    let Some(a) = enter(Routine::DxgkCbNotifyDpc, handle, entry) else {
        return;
    };
    crate::dxgkrnl::interrupt::process_pending(&a);
    if a.os.windows.reading().dpc_fence_work == DpcFenceWork::InsideNotifyDpc
        && !a.state.is_halted()
    {
        crate::sync::fence::process_dpc_work(&a);
    }
}

/// `DxgkCbLogEtwEvent` (any IRQL): with no ETW session listening, Windows drops the event;
/// the simulation does the same, after the IRQL check.
pub(super) fn log_etw_event(entry: usize) {
    if let Err(b) = irql::check(Routine::DxgkCbLogEtwEvent, current_irql(), entry) {
        context::raise(b);
    }
}
