//! The interrupt path: the ISR ([`Adapter::interrupt`]) drains the device's event ring at
//! device IRQL, checks every record ([`check_event`]) and turns it into Dxgkrnl's interrupt
//! reports; the DPC finishes what may not run at device IRQL; the watchdog services a delivery
//! lost with nothing after it.

use core::ptr;
use core::sync::atomic::Ordering;

use rvgpu_ddi::interrupt::{
    DXGKARGCB_NOTIFY_INTERRUPT_DATA_EngineStateChange, DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine,
    DXGKARGCB_NOTIFY_INTERRUPT_DATA, DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS, DXGK_ENGINE_STATE_ACTIVE,
    DXGK_ENGINE_STATE_HUNG, DXGK_ENGINE_STATE_TRANSITION_TO_F1,
    DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE, DXGK_INTERRUPT_GPU_ENGINE_TIMEOUT,
    DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED,
};
use rvgpu_hw::engine::EngineState;

use crate::device;
use crate::fence::report::{Batch, Report};
use crate::interrupt::{DeviceEvent, EventGuard, Rejection};
use crate::klog;
use crate::platform::Platform;

use super::{Adapter, Live};

impl<P: Platform> Adapter<P> {
    /// The watchdog's look, under the interrupt lock: services a delivery lost with nothing
    /// after it by running the ISR. Returns whether it did.
    pub(super) fn watchdog_look(&self) -> bool {
        let Some(live) = self.live() else {
            return false;
        };
        if live.regs.is_gone() || !live.regs.is_powered() {
            return false;
        }
        let raw = live.regs.read::<rvgpu_hw::regs::IntStatus>().raw();
        if raw == u32::MAX {
            // Nothing on the bus (or a glitch): the ISR and the removal path decide.
            return false;
        }
        // Only causes that raise the line now: a disabled cause pending is not a lost delivery.
        let enabled = live.regs.read::<rvgpu_hw::regs::IntEnable>().raw();
        let pending = raw & enabled & device::ENABLED_CAUSES.bits();
        let runs = self
            .stats
            .isr_claimed
            .load(Ordering::Relaxed)
            .wrapping_add(self.stats.isr_unclaimed.load(Ordering::Relaxed));
        if !self.watchdog.look(pending, runs) {
            return false;
        }
        klog!(
            P,
            Warning,
            "rvgpu: interrupt delivery lost (INT_STATUS {:#x} pending for a watchdog period); servicing it",
            pending
        );
        self.interrupt()
    }

    /// The ISR. Returns whether the interrupt was ours.
    pub fn interrupt(&self) -> bool {
        let Some(live) = self.live().filter(|l| l.regs.is_powered()) else {
            // Not started, or out of D0 (a shared line): not ours, and nothing to read.
            self.stats.isr_unclaimed.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        let isr = live.isr_state_in_isr();
        let (ring, registry, nodes) = (&mut isr.ring, &isr.fences, &mut isr.nodes);
        // Node-ring reports (DmaCompleted / DmaPreempted / DmaPageFaulted, docs/tdr.md#the-kmd).
        let mut node_emit = |d: &DXGKARGCB_NOTIFY_INTERRUPT_DATA| {
            live.journal_report(d);
            live.dxgk.notify_interrupt(d);
        };
        let mut batch = if live.optimized_fence_irq {
            Batch::optimized()
        } else {
            Batch::default()
        };
        let mut others = false;
        let mut emit = |r: Report<'_>| notify_fences(live, r);
        let mut fence_reports = false;
        let summary = ring.service(&live.regs, |ev| {
            self.stats.events.fetch_add(1, Ordering::Relaxed);
            // The GPU wrote this record: act on it only if it fits what the driver knows.
            if let Err(why) = check_event(live, &self.event_guard, nodes, &ev) {
                self.event_guard.reject(why);
                return;
            }
            crate::etw::events::emit_some::<P, 5>(&crate::etw::events::NATIVE_FENCE_SIGNAL, || {
                match ev {
                    DeviceEvent::FenceSignaled {
                        legacy: false,
                        engine,
                        queue,
                        tag,
                        value,
                        ..
                    } => Some([
                        self.table_slot().into(),
                        engine.into(),
                        queue.into(),
                        tag,
                        value,
                    ]),
                    _ => None,
                }
            });
            // A Progress or Fault record of a node ring is the legacy path's (TDR-04): it is
            // reported as DMA completion / fault, not as a hardware queue's progress.
            // (A fence record skips the call and the record's copy.)
            if crate::node::NodeRings::may_own(&ev) && nodes.on_event(ev, &mut node_emit) {
                others = true;
                return;
            }
            match ev {
                DeviceEvent::FenceSignaled {
                    legacy: true,
                    engine,
                    ..
                } => {
                    fence_reports = true;
                    batch.legacy(engine, &mut emit);
                }
                DeviceEvent::FenceSignaled {
                    engine,
                    queue,
                    logged,
                    ..
                } if live.optimized_fence_irq => {
                    // LOG-08: name the queue that ran the signal only when the device wrote
                    // its entry before deciding (LOG-04, `FLAG_LOGGED`): the OS reads that
                    // queue's log and nothing else, so any other record (whatever it groups
                    // with in this pass) is NULL plus a full scan (hardware.md 7.3).
                    fence_reports = true;
                    let slot = self.table_slot();
                    let (hw_queue, evaluate) = match live.queue_irq.lookup(slot, queue) {
                        // Dxgkrnl's queue object, which 24H2 follows (`hwqueue::os_handles`);
                        // a queue going away has none any more: full scan.
                        crate::log::QueueLookup::Named(_) if logged => {
                            match live.os_queues.get(queue) {
                                Some(os) => (Some(os), false),
                                None => (None, true),
                            }
                        }
                        crate::log::QueueLookup::Named(_) | crate::log::QueueLookup::Logless => {
                            (None, true)
                        }
                        // An anonymous event: a logged signal is in some log of the engine, read
                        // for a NULL report; a full scan otherwise, or if some queue of the
                        // engine has no logs. An id outside the table (a node ring, or a queue
                        // destroyed since) may have run any signal: full scan.
                        crate::log::QueueLookup::Unknown if queue == rvgpu_hw::queue::NO_QUEUE => {
                            (None, !logged || live.queue_irq.engine_has_logless(engine))
                        }
                        crate::log::QueueLookup::Unknown => (None, true),
                    };
                    batch.native_queue(engine, hw_queue, evaluate, &mut emit);
                }
                DeviceEvent::FenceSignaled { engine, tag, .. } => {
                    fence_reports = true;
                    // By tag alone: the record's MonitoredValue VA is the signalling
                    // process's own (fence::registry).
                    let handle = registry.resolve(tag).map(|f| f.os_handle);
                    batch.native(engine, handle, &mut emit);
                }
                // DMA completed (a PROGRESS with interrupt): the OS reads the queue's progress
                // fence on this node (monitored-fence report). Only a queue created with
                // NativeProgressFence (or one no longer in the table) also needs a "scan
                // everything" native report: the progress write is in no log.
                DeviceEvent::Progress { engine, queue, .. } => {
                    fence_reports = true;
                    let native = live.features.native_fence.is_some()
                        && live.queue_irq.progress_is_native(queue);
                    batch.progress(engine, native, &mut emit);
                }
                other => others |= self.dispatch_event(live, other),
            }
        });
        match &summary {
            Some(s) if s.overflow => {
                fence_reports = true;
                // Lost records may include node-ring completions: report F where it is ahead.
                nodes.lost_events(&mut node_emit);
                let native = live.features.native_fence.is_some();
                batch.lost_events(live.identity.config.engines, native, &mut emit);
            }
            _ => batch.flush(&mut emit),
        }
        let notified = others || fence_reports;
        match summary {
            None => {
                self.stats.isr_unclaimed.fetch_add(1, Ordering::Relaxed);
                false
            }
            Some(s) => {
                self.stats.isr_claimed.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .unknown_events
                    .fetch_add(u64::from(s.unknown), Ordering::Relaxed);
                if s.overflow {
                    self.stats.overflows.fetch_add(1, Ordering::Relaxed);
                }
                if notified {
                    live.dxgk.queue_dpc();
                }
                true
            }
        }
    }

    /// Turns one device event into what Dxgkrnl must hear. Returns whether it was notified.
    fn dispatch_event(&self, live: &Live<P>, ev: DeviceEvent) -> bool {
        match ev {
            DeviceEvent::EngineState {
                engine,
                new: Some(new),
                ..
            } => {
                let state = match new {
                    EngineState::Active => DXGK_ENGINE_STATE_ACTIVE,
                    EngineState::TransitionToF1 => DXGK_ENGINE_STATE_TRANSITION_TO_F1,
                    EngineState::Hung => DXGK_ENGINE_STATE_HUNG,
                    // Idle and Resetting are device-internal; the OS has no state for them.
                    EngineState::Idle | EngineState::Resetting => return false,
                };
                let mut data = DXGKARGCB_NOTIFY_INTERRUPT_DATA {
                    InterruptType: DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE,
                    ..Default::default()
                };
                data.Anonymous.EngineStateChange =
                    DXGKARGCB_NOTIFY_INTERRUPT_DATA_EngineStateChange {
                        NodeOrdinal: engine,
                        EngineOrdinal: 0,
                        NewState: state,
                    };
                live.dxgk.notify_interrupt(&data);
                // 24H2 drops the state report (`M:VidSchDdiNotifyInterruptWorker` @0x140006B60
                // has no case for it). What it acts on for an engine the hardware found hung is
                // the engine-timeout report: its DPC asks for the engine's reset
                // (`M:VidSchiProcessGpuEngineTimeoutDpc` @0x14004AE6C). Without it a hung
                // user-mode queue, whose progress the OS cannot see, would never be reset.
                if new == EngineState::Hung {
                    let mut t = DXGKARGCB_NOTIFY_INTERRUPT_DATA {
                        InterruptType: DXGK_INTERRUPT_GPU_ENGINE_TIMEOUT,
                        ..Default::default()
                    };
                    t.Anonymous.GpuEngineTimeout = DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine {
                        NodeOrdinal: engine,
                        EngineOrdinal: 0,
                    };
                    live.dxgk.notify_interrupt(&t);
                }
                true
            }
            // The end of an engine reset (hardware.md 7.1: internal to the KMD; ResetEngine
            // reads RESET_* itself): recorded for CollectDbgInfo, nothing to tell the OS.
            DeviceEvent::ResetDone {
                engine,
                result,
                queue,
                rptr,
            } => {
                self.tdr.reset_done(engine, result, queue, rptr);
                false
            }
            // A hardware queue's GPU page fault (hardware.md 12.6): the queue stopped at the
            // faulting packet; Dxgkrnl puts the queue's device in error (UM-10). Node-ring
            // faults never get here (`NodeRings::on_event` reports them as DMA page faults).
            DeviceEvent::Fault {
                engine,
                queue,
                code: Some(rvgpu_hw::event::FaultCode::PageFault),
                addr,
                rptr: info,
            } => {
                let Some(h) = live.os_queues.get(queue) else {
                    self.stats.unhandled_events.fetch_add(1, Ordering::Relaxed);
                    return false;
                };
                live.dxgk
                    .notify_interrupt(&hw_queue_page_faulted(h, engine, addr, info));
                true
            }
            // The CMP wrote the scheduling log's interrupt entry (hardware.md 5.7): the OS
            // reads the log it owns (DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT, WDDM 2.4).
            DeviceEvent::SchedLog { engine, .. } => {
                let mut data = DXGKARGCB_NOTIFY_INTERRUPT_DATA {
                    InterruptType: rvgpu_ddi::interrupt::DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT,
                    ..Default::default()
                };
                data.Anonymous.SchedulingLogInterrupt =
                    rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine {
                        NodeOrdinal: engine,
                        EngineOrdinal: 0,
                    };
                live.dxgk.notify_interrupt(&data);
                true
            }
            // Other faults stop their queue and are caught by the progress-fence timeout
            // (docs/tdr.md); the rest is counted, never silently lost.
            _ => {
                self.stats.unhandled_events.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// The DPC: lets Dxgkrnl process what the ISR notified, then appends kernel-mode
    /// submissions a full ring held back (the PROGRESS interrupts that brought it here freed
    /// the room). No driver lock is held across `DxgkCbNotifyDpc`: 24H2 calls
    /// `DxgkDdiUpdateMonitoredValues` and submissions from inside it.
    pub fn dpc(&self) {
        self.stats.dpcs.fetch_add(1, Ordering::Relaxed);
        if let Some(live) = self.live() {
            live.dxgk.notify_dpc();
            crate::submit::ddi::drain_backlog(live);
        }
    }
}

/// A `Fault` naming a queue the driver knows on that engine: with `CAPS.QUEUE_STATE` the
/// device must agree (hardware.md 7.2). A queue it holds but did not stop was not faulted, so
/// the record is false (a faulty device or corrupted event memory), and acting on it would put
/// an innocent process's device in error. A queue it does not hold passes: a descriptor the
/// commit refused, or a queue that left the runlist after faulting (stale, harmless).
fn fault_matches_device<P: Platform>(
    live: &Live<P>,
    engine: u32,
    queue: u32,
) -> Result<(), Rejection> {
    use rvgpu_hw::regs::{Caps, QueueSelect, QueueStateReg};
    if !live.identity.caps.contains(Caps::QUEUE_STATE) {
        return Ok(());
    }
    // The ISR is the pair's only user, under the interrupt lock.
    live.regs.write_at(engine, QueueSelect::new(queue));
    let s = live.regs.read_at::<QueueStateReg>(engine);
    // All-ones: the device is gone; its records are moot, let the removal path decide.
    if s.raw() == u32::MAX || s.present() == 0 || s.faulted() != 0 {
        Ok(())
    } else {
        Err(Rejection::Queue)
    }
}

/// Whether a decoded record is plausible (ISR, device IRQL; reads `STATUS` for engine-state
/// records). Records that could be real but stale (a fence or queue destroyed since the GPU
/// posted them) pass: they lead at most to a "scan everything" report, which signals only
/// what the fences' values already say.
///
/// Always inlined into the ISR, its one caller: out of line, the record goes through memory
/// and the checks cost twice their instructions (about 20 more per record in the Linux
/// build's ISR, whose inlining otherwise varies with unrelated code).
#[inline(always)]
fn check_event<P: Platform>(
    live: &Live<P>,
    guard: &EventGuard,
    nodes: &crate::node::NodeRings,
    ev: &DeviceEvent,
) -> Result<(), Rejection> {
    use rvgpu_hw::queue::NO_QUEUE;
    let engine = ev.engine();
    if engine >= live.identity.config.engines {
        return Err(Rejection::Engine);
    }
    // A queue id named by the record: a node ring of this engine, a live hardware queue of
    // this engine, or (`stale_ok`) an id in range that no live queue has any more.
    let queue_ok = |queue: u32, stale_ok: bool| -> Result<(), Rejection> {
        if let Some(node) = nodes.node_of_queue(queue) {
            return if node == engine {
                Ok(())
            } else {
                Err(Rejection::Queue)
            };
        }
        match live.queue_irq.engine_of(queue) {
            Some(e) if e == engine => Ok(()),
            Some(_) => Err(Rejection::Queue),
            None if stale_ok && live.queue_irq.id_in_range(queue) => Ok(()),
            None => Err(Rejection::Queue),
        }
    };
    match *ev {
        DeviceEvent::FenceSignaled { queue, .. } if queue == NO_QUEUE => Ok(()),
        DeviceEvent::FenceSignaled { queue, .. } => queue_ok(queue, true),
        DeviceEvent::Progress { queue, .. } => queue_ok(queue, true),
        // Runlist-level faults name no queue (hardware.md 7.2).
        DeviceEvent::Fault { queue, .. } if queue == NO_QUEUE => Ok(()),
        DeviceEvent::Fault { queue, .. } => {
            queue_ok(queue, false)?;
            fault_matches_device(live, engine, queue)
        }
        DeviceEvent::EngineState {
            old: Some(_),
            new: Some(new @ (EngineState::Hung | EngineState::TransitionToF1)),
            ..
        } => {
            // The device reports only entries to Hung and TransitionToF1, and the engine stays
            // there until the OS acts (reset, F1/F0): STATUS must show it now.
            let raw = live
                .regs
                .read_at::<rvgpu_hw::regs::EngineStatusReg>(engine)
                .raw();
            match rvgpu_hw::engine::EngineStatus::from_reg(raw) {
                Some(s) if s.state == new && raw != u32::MAX => Ok(()),
                _ => Err(Rejection::State),
            }
        }
        DeviceEvent::EngineState { .. } => Err(Rejection::State),
        DeviceEvent::ResetDone { .. } => {
            if guard.take_reset(engine) {
                Ok(())
            } else {
                Err(Rejection::Reset)
            }
        }
        DeviceEvent::SchedLog { header, .. } => {
            if guard.sched_log_fits(engine, header) {
                Ok(())
            } else {
                Err(Rejection::SchedLog)
            }
        }
    }
}

/// `DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED` for the queue whose Dxgkrnl object is `os_queue`,
/// from the device's fault record (`info`: `mmu::FaultInfo`). With `FENCE_INVALID` clear,
/// 24H2 follows `FaultedHwQueue` as its own `DXGHWQUEUE` (+40, VidSch's queue) to the device
/// it puts in error (`M:VidSchiProcessHwQueuePageFaultedDpc` @0x1400493D0), so it is the
/// `hHwQueue` Dxgkrnl passed in at creation, never the driver's handle.
fn hw_queue_page_faulted(
    os_queue: usize,
    engine: u32,
    va: rvgpu_hw::addr::GpuVa,
    info: u64,
) -> DXGKARGCB_NOTIFY_INTERRUPT_DATA {
    use rvgpu_ddi::interrupt::{
        DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted, DXGK_BIND_TABLE_ENTRY_UNKNOWN,
        DXGK_FAULT_ERROR_CODE, DXGK_GENERAL_ERROR_PAGE_FAULT, DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED,
        DXGK_PAGE_FAULT_WRITE, DXGK_PRIMITIVE_API_SEQUENCE_NUMBER_UNKNOWN,
        DXGK_RENDER_PIPELINE_STAGE_UNKNOWN,
    };
    let info = rvgpu_hw::mmu::FaultInfo::decode(info);
    let write = info.is_some_and(|i| i.access == rvgpu_hw::mmu::Access::Write);
    let mut data = DXGKARGCB_NOTIFY_INTERRUPT_DATA {
        InterruptType: DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED,
        ..Default::default()
    };
    data.Anonymous.HwQueuePageFaulted = DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted {
        FaultedFenceId: 0,
        FaultedVirtualAddress: va.get(),
        FaultedPrimitiveAPISequenceNumber: DXGK_PRIMITIVE_API_SEQUENCE_NUMBER_UNKNOWN,
        FaultedHwQueue: ptr::without_provenance_mut(os_queue),
        NodeOrdinal: engine,
        EngineOrdinal: 0,
        FaultedPipelineStage: DXGK_RENDER_PIPELINE_STAGE_UNKNOWN,
        FaultedBindTableEntry: DXGK_BIND_TABLE_ENTRY_UNKNOWN,
        PageFaultFlags: if write { DXGK_PAGE_FAULT_WRITE } else { 0 },
        PageTableLevel: info.map_or(0, |i| u32::from(i.level)),
        FaultErrorCode: DXGK_FAULT_ERROR_CODE::general(DXGK_GENERAL_ERROR_PAGE_FAULT),
    };
    data
}

/// Hands one fence report to Dxgkrnl (device IRQL).
fn notify_fences<P: Platform>(live: &Live<P>, r: Report<'_>) {
    let data = match r {
        Report::Native { engine, handles } => {
            let (count, array) = match handles {
                // The OS reads the array during the call; it lives on the ISR's stack.
                Some(h) => (
                    u32::try_from(h.len()).unwrap_or(0),
                    h.as_ptr().cast_mut().cast::<rvgpu_ddi::HANDLE>(),
                ),
                None => (0, ptr::null_mut()),
            };
            DXGKARGCB_NOTIFY_INTERRUPT_DATA::native_fence_signaled(engine, 0, count, array)
        }
        Report::NativeQueue {
            engine,
            hw_queue,
            evaluate_all,
        } => {
            let h = hw_queue.map_or(ptr::null_mut(), ptr::without_provenance_mut);
            let mut d = DXGKARGCB_NOTIFY_INTERRUPT_DATA::native_fence_signaled_queue(engine, 0, h);
            if evaluate_all {
                d.Flags.set(
                    DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::EvaluateLegacyMonitoredFences,
                    1,
                );
            }
            d
        }
        Report::Legacy { engine } => {
            let mut d = DXGKARGCB_NOTIFY_INTERRUPT_DATA {
                InterruptType: DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED,
                ..Default::default()
            };
            d.Anonymous.MonitoredFenceSignaled = DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine {
                NodeOrdinal: engine,
                EngineOrdinal: 0,
            };
            d
        }
    };
    live.journal_report(&data);
    live.dxgk.notify_interrupt(&data);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvgpu_ddi::interrupt::{DXGK_PAGE_FAULT_WRITE, DXGK_PRIMITIVE_API_SEQUENCE_NUMBER_UNKNOWN};
    use rvgpu_hw::addr::GpuVa;
    use rvgpu_hw::mmu::{Access, FaultInfo, FaultReason};

    fn fault(access: Access, level: u8) -> u64 {
        FaultInfo {
            reason: FaultReason::ReadOnly,
            access,
            level,
            user: true,
            rptr: 0x40,
        }
        .encode()
    }

    /// UM-10: the report names Dxgkrnl's queue object (24H2 dereferences it), with the
    /// engine, address, access and level of the fault.
    #[test]
    fn um_10_a_queue_page_fault_names_dxgkrnl_s_queue_engine_address_access_and_level() {
        let os = 0xFFFF_A000_0000_4000_usize;
        let d = hw_queue_page_faulted(os, 2, GpuVa::new(0x7000_1000), fault(Access::Write, 1));
        let f = crate::args::notify::hw_queue_page_faulted(&d);
        assert_eq!(f.FaultedHwQueue.addr(), os);
        assert_eq!(
            f.PageFaultFlags & rvgpu_ddi::interrupt::DXGK_PAGE_FAULT_FENCE_INVALID,
            0,
            "FENCE_INVALID clear: 24H2 follows FaultedHwQueue"
        );
        assert_eq!(f.NodeOrdinal, 2);
        assert_eq!(f.FaultedVirtualAddress, 0x7000_1000);
        assert_eq!(f.PageFaultFlags, DXGK_PAGE_FAULT_WRITE);
        assert_eq!(f.PageTableLevel, 1);
        assert_eq!(f.FaultedFenceId, 0);
        assert_eq!(
            f.FaultedPrimitiveAPISequenceNumber,
            DXGK_PRIMITIVE_API_SEQUENCE_NUMBER_UNKNOWN
        );
    }

    #[test]
    fn a_read_fault_or_an_undecodable_record_is_not_a_write_fault() {
        let h = 0xFFFF_A000_0000_8000_usize;
        for info in [fault(Access::Read, 3), fault(Access::Execute, 2), u64::MAX] {
            let d = hw_queue_page_faulted(h, 0, GpuVa::new(0x1000), info);
            let f = crate::args::notify::hw_queue_page_faulted(&d);
            assert_eq!(f.PageFaultFlags, 0, "{info:#x}");
        }
        // An undecodable record gives no level rather than a guessed one.
        let d = hw_queue_page_faulted(h, 0, GpuVa::new(0x1000), u64::MAX);
        assert_eq!(
            crate::args::notify::hw_queue_page_faulted(&d).PageTableLevel,
            0
        );
    }
}
