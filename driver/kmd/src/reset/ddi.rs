//! The timeout detection and recovery DDIs (TDR-01 … TDR-09; docs/tdr.md#the-kmd, "engineer B").
//!
//! The Windows 8 per-engine path ([tdr8]) and the adapter-wide fallback:
//!
//! | DDI | IRQL, synchronisation | What it does here |
//! |---|---|---|
//! | `DxgkDdiQueryDependentEngineGroup` | PASSIVE, first level; "must return STATUS_SUCCESS" [qdeg] | `1 << NodeOrdinal`: engines are independent (hardware.md 4.1, TDR-02) |
//! | `DxgkDdiQueryEngineStatus` | PASSIVE, first level; "should always succeed" [qes] | `Responsive = STATUS.state ≠ Hung` (all-ones: not responsive) |
//! | `DxgkDdiResetEngine` | PASSIVE, first level, pageable [reset] | [`reset_engine`]: reset, `LastAbortedFenceId` ([`last_aborted`]), node ring drained, runlist recommitted (ends the hold, hardware.md 10.1), guilty HW queue's device in error + `DxgkCbInvalidateHwContext` + its doorbells aborted |
//! | `DxgkDdiResetFromTimeout` | PASSIVE; no other DDI runs except the F-state power DDIs; ISR and DPC keep running [sync] | [`reset_from_timeout`]: adapter reset, every node `C := S` (TDR-04), every device in error (UM-10) |
//! | `DxgkDdiRestartFromTimeout` | PASSIVE [restart] | [`restart_from_timeout`]: bring-up steps 6–10 again, the errored devices' doorbells aborted |
//!
//! **Locking.** The scheduler spin lock (DISPATCH) is held across the engine reset, the
//! computation and the recommits of [`reset_engine`], so no queue create/destroy, suspend or
//! doorbell DDI (level 0 or other classes, which can run beside a first-level DDI) edits the
//! runlist between the reset and the commit that ends the hold. The node rings are read and
//! drained inside `DxgkCbSynchronizeExecution` ([`Live::synchronized`]): lock order **sched
//! lock → interrupt lock**, never the reverse (docs/tdr.md#the-kmd). `DxgkCbInvalidateHwContext`
//! and `DxgkCbDisconnectDoorbell` are PASSIVE_LEVEL [ihc] and are called after the lock is
//! released. `DxgkDdiCollectDbgInfo` ([`crate::dbginfo`]) takes none of these locks, so it
//! can run beside a reset (TDR-01).
//!
//! **Which DDIs Windows calls.** `SupportPerEngineTDR` is advertised only when the device has
//! `CAPS.PER_ENGINE_RESET` and the table carries the four per-engine DDIs ([`per_engine_tdr`]),
//! the `Live::native_gpu_fence` pattern: the bit cannot get ahead of the code.
//!
//! [tdr8]: https://learn.microsoft.com/en-us/windows-hardware/drivers/display/tdr-changes-in-windows-8
//! [qdeg]: https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_querydependentenginegroup
//! [qes]: https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_queryenginestatus
//! [reset]: https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_resetengine
//! [sync]: https://learn.microsoft.com/en-us/windows-hardware/drivers/display/thread-synchronization-and-tdr
//! [restart]: https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_restartfromtimeout
//! [ihc]: https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_invalidatehwcontext

use core::sync::atomic::{fence, Ordering};

use rvgpu_ddi::tdr::{
    DXGKARG_QUERYDEPENDENTENGINEGROUP, DXGKARG_QUERYENGINESTATUS, DXGKARG_RESETENGINE,
    DXGK_ENGINESTATUS,
};
use rvgpu_hw::engine::{ResetResult, ENGINE_CTRL_RESET};
use rvgpu_hw::queue::{RingControl, NO_QUEUE};
use rvgpu_hw::regs::{self, Caps, DeviceStatus};

use super::{
    blame, dependent_mask, last_aborted, per_engine_tdr_rule, responsive, Aborted, Guilty,
    NodeFences,
};
use crate::adapter::{Adapter, Live};
use crate::device;
use crate::klog;
use crate::platform::Platform;
use crate::runlist;
use crate::sched::Sched;
use crate::status::{self, Status};
use crate::sync::SpinGuard;
use crate::testhooks::{self, Fault};
use rvgpu_hw::testhooks::JournalKind;

// ---------------------------------------------------------------------------------------------
// Caps (TDR-01)
// ---------------------------------------------------------------------------------------------

/// TDR-01: `SupportPerEngineTDR` only when the device resets engines one at a time and the
/// driver's own table fills the four DDIs the capability obliges ([tdr8]: "QueryDependent-
/// EngineGroup, QueryEngineStatus, ResetEngine" and level-0 CollectDbgInfo).
///
/// [tdr8]: https://learn.microsoft.com/en-us/windows-hardware/drivers/display/tdr-changes-in-windows-8
pub fn per_engine_tdr<P: Platform>(live: &Live<P>) -> bool {
    per_engine_tdr_rule(live.identity.caps, live.ddis.per_engine_tdr)
}

// ---------------------------------------------------------------------------------------------
// The DDIs
// ---------------------------------------------------------------------------------------------

/// DxgkDdiQueryDependentEngineGroup (PASSIVE, first level). The page says it "must return
/// STATUS_SUCCESS"; only arguments the OS never sends (an unknown node, EngineOrdinal ≠ 0)
/// are refused.
pub fn query_dependent_engine_group<P: Platform>(
    a: &Adapter<P>,
    args: &mut DXGKARG_QUERYDEPENDENTENGINEGROUP,
) -> Result<(), Status> {
    let live = a.started()?;
    let node = live.node(args.NodeOrdinal, args.EngineOrdinal)?;
    crate::etw::events::emit::<P, 2>(&crate::etw::events::TDR_TIMEOUT, || {
        [a.table_slot().into(), node.into()]
    });
    let mask = dependent_mask(node).ok_or(status::INVALID_PARAMETER)?;
    args.DependentNodeOrdinalMask = mask;
    testhooks::note(&live.hooks, || {
        testhooks::rec(JournalKind::DependentEngineGroup, node, mask, 0)
    });
    Ok(())
}

/// DxgkDdiQueryEngineStatus (PASSIVE, first level; "should always succeed").
pub fn query_engine_status<P: Platform>(
    a: &Adapter<P>,
    args: &mut DXGKARG_QUERYENGINESTATUS,
) -> Result<(), Status> {
    let live = a.started()?;
    let node = live.node(args.NodeOrdinal, args.EngineOrdinal)?;
    let raw = live.regs.read_at::<regs::EngineStatusReg>(node).raw();
    let responsive = responsive(raw);
    args.EngineStatus =
        DXGK_ENGINESTATUS::default().with(DXGK_ENGINESTATUS::Responsive, u32::from(responsive));
    testhooks::note(&live.hooks, || {
        testhooks::rec(JournalKind::EngineStatus, node, responsive.into(), 0)
    });
    Ok(())
}

/// Where the reset left the engine, read from the device after `RESET_RESULT = Ok`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DeviceAnswer {
    queue: u32,
    rptr: u64,
}

/// Resets engine `node` and reads what it aborted. `Err` (the OS escalates to an adapter
/// reset, TDR-09) when the device has no per-engine reset, the reset failed, or the device is
/// lost (`RESET_RESULT` all-ones); no driver state is changed then.
fn reset_hw<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    node: u32,
) -> Result<DeviceAnswer, Status> {
    if !live.identity.caps.contains(Caps::PER_ENGINE_RESET) {
        return Err(status::NOT_SUPPORTED);
    }
    // The ISR accepts a ResetDone only for a reset the driver asked for.
    a.event_guard.reset_started(node);
    live.regs
        .write_at(node, regs::EngineCtrl::new(ENGINE_CTRL_RESET));
    // The reset is synchronous (hardware.md 10.1, M19); a portable driver would wait for
    // STATUS.state ≠ Resetting, which the model never shows after the write returns.
    let result = live.regs.read_at::<regs::ResetResultReg>(node).raw();
    fence(Ordering::Acquire);
    if ResetResult::from_u32(result) != Some(ResetResult::Ok) {
        // All-ones: the device may be gone; later accesses then stop.
        let _ = live.regs.check_lost();
        return Err(status::DEVICE_HARDWARE_ERROR);
    }
    Ok(DeviceAnswer {
        queue: live.regs.read_at::<regs::ResetQueue>(node).raw(),
        rptr: live.regs.read_at::<regs::ResetRptr>(node).raw(),
    })
}

/// A failed engine reset (either DDI): counted and logged; the status goes back to the OS,
/// which escalates to the adapter-wide reset (TDR-09).
fn reset_failed<P: Platform>(a: &Adapter<P>, node: u32, e: Status) -> Status {
    a.tdr.failed_resets.fetch_add(1, Ordering::Relaxed);
    klog!(
        P,
        Error,
        "rvgpu: engine {} reset failed ({:#x})",
        node,
        e.code()
    );
    e
}

/// The start of either engine-reset DDI on a checked `node`: its `TDR_ENGINE_RESET` event,
/// then the scheduler lock and the engine reset ([`reset_hw`]). A failed reset releases the
/// lock before it is counted and logged ([`reset_failed`]).
fn lock_and_reset<'l, P: Platform>(
    a: &Adapter<P>,
    live: &'l Live<P>,
    node: u32,
) -> Result<(SpinGuard<'l, P, Sched>, DeviceAnswer), Status> {
    crate::etw::events::emit::<P, 2>(&crate::etw::events::TDR_ENGINE_RESET, || {
        [a.table_slot().into(), node.into()]
    });
    // The test hooks' faults (TDR-09, TDR-07): a failed reset changes nothing.
    if testhooks::fire(&live.hooks, node, Fault::FailReset) {
        return Err(reset_failed(a, node, status::DEVICE_HARDWARE_ERROR));
    }
    if testhooks::fire(&live.hooks, node, Fault::CompleteBeforeReset) {
        let _ = let_node_ring_finish(live, node);
    }
    let s = live.sched.lock();
    match reset_hw(a, live, node) {
        Ok(answer) => Ok((s, answer)),
        Err(e) => {
            drop(s);
            Err(reset_failed(a, node, e))
        }
    }
}

/// How long [`let_node_ring_finish`] waits at most.
const COMPLETE_BEFORE_RESET_MS: u64 = 2000;

/// How often [`let_node_ring_finish`] has the device re-evaluate its blocked waits.
const RESCAN_EVERY_MS: u64 = 10;

/// The test hooks' `CompleteBeforeReset` (TDR-07): waits, bounded by the KMD's clock
/// ([`COMPLETE_BEFORE_RESET_MS`]), until the ISR has reported everything submitted to node
/// `node`'s ring completed (C reached S), so that the work completes, and is reported,
/// between the OS's snapshot and the reset. Meanwhile every blocked wait is re-evaluated (`WAIT_RESCAN` of 0, at once
/// and every [`RESCAN_EVERY_MS`]): a buffer stuck on a word a program wrote with the CPU,
/// which the device does not see until told (hardware.md 5.4), finishes here, as a program
/// on Windows can arrange. Whether it did; without a clock it does not wait.
fn let_node_ring_finish<P: Platform>(live: &Live<P>, node: u32) -> bool {
    let (start, hz) = P::query_performance_counter();
    let deadline = start.saturating_add(hz.saturating_mul(COMPLETE_BEFORE_RESET_MS) / 1000);
    let every = hz.saturating_mul(RESCAN_EVERY_MS) / 1000;
    let mut rescan = start;
    loop {
        let now = P::query_performance_counter().0;
        if now >= rescan {
            live.regs.write(regs::WaitRescan::new(0));
            rescan = now.saturating_add(every.max(1));
        }
        let done = live
            .synchronized(|isr| {
                isr.nodes
                    .snapshot(node)
                    .is_some_and(|(submitted, completed, _)| completed == submitted)
            })
            .unwrap_or(false);
        if done {
            return true;
        }
        if now >= deadline {
            return false;
        }
        core::hint::spin_loop();
    }
}

/// The bit of engine `e` in an engine mask (none for an engine past the mask).
fn bit(e: u32) -> u64 {
    1u64.checked_shl(e).unwrap_or(0)
}

/// Commits the runlist of each engine in `engines` but those in `skip` (both masks): the
/// engines a guilty device's queues have just left ([`blame`]).
fn recommit<P: Platform>(live: &Live<P>, s: &Sched, engines: u64, skip: u64) {
    for e in 0..live.identity.config.engines {
        if engines & bit(e) != 0 && skip & bit(e) == 0 {
            let _ = runlist::commit(&live.regs, s, e);
        }
    }
}

/// The end of a successful engine reset (either DDI), the scheduler lock released: counted,
/// the guilty context, if any, invalidated and its device's doorbells aborted (UM-10: Windows
/// tells the UMD nothing through its doorbell when it puts the device in error;
/// [`crate::doorbell::ddi::abort_device`]).
fn reset_done<P: Platform>(a: &Adapter<P>, live: &Live<P>, node: u32, guilty: Option<Guilty>) {
    a.tdr.engine_reset(node);
    if let Some(g) = guilty {
        invalidate(a, live, g);
        crate::doorbell::ddi::abort_device(live, g.device);
    }
}

/// `DxgkCbInvalidateHwContext` for the guilty context (PASSIVE_LEVEL, no lock held). Its
/// failure changes nothing the OS relies on: the device's queues are out of every runlist
/// already.
fn invalidate<P: Platform>(a: &Adapter<P>, live: &Live<P>, g: Guilty) {
    // Only Dxgkrnl's own handle may be named: the callback reads through it.
    if g.handle == 0 {
        return;
    }
    let r = live.dxgk.invalidate_hw_context(g.handle);
    testhooks::note_result(&live.hooks, &r, || {
        testhooks::rec(JournalKind::InvalidateHwContext, 0, g.handle as u64, 0)
    });
    match r {
        Ok(()) => {
            a.tdr.invalidated.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => klog!(
            P,
            Warning,
            "rvgpu: DxgkCbInvalidateHwContext failed ({:#x})",
            e.code()
        ),
    }
}

/// DxgkDdiResetEngine (PASSIVE, first level; docs/tdr.md#the-kmd).
///
/// 1. Validate; under the scheduler lock reset the engine (`CTRL`); `RESET_RESULT ≠ Ok` →
///    error, nothing changed.
/// 2. A hardware queue named by `RESET_QUEUE` → its device in error (UM-10), before any
///    commit lists its queues again.
/// 3. Park the node ring and commit (the node ring leaves; this commit also ends the engine's
///    hold, and innocent queues — kept by the device with their read pointers and indirect
///    cursors — continue).
/// 4. Inside `synchronized`: `(S, C, F)`, [`last_aborted`], drain the node ring
///    (`F := C := S := LastAborted`, ring control `read_ptr := write_ptr`).
/// 5. Unpark and commit: the node ring enters empty; the errored device's queues are left out
///    on every engine they were on.
/// 6. Lock released: `DxgkCbInvalidateHwContext(guilty context)` (PASSIVE), then
///    `DxgkCbDisconnectDoorbell(DISCONNECTED_ABORT)` for each connected doorbell of its device.
pub fn reset_engine<P: Platform>(
    a: &Adapter<P>,
    args: &mut DXGKARG_RESETENGINE,
) -> Result<(), Status> {
    let r = reset_engine_on(a, args);
    journal_result(a, &r, JournalKind::ResetEngine, args.NodeOrdinal, || {
        args.LastAbortedFenceId.into()
    });
    r
}

/// Journals a TDR DDI's result on `node` ([`testhooks::note_result`]), `a` from `value`.
fn journal_result<P: Platform>(
    a: &Adapter<P>,
    r: &Result<(), Status>,
    kind: JournalKind,
    node: u32,
    value: impl FnOnce() -> u64,
) {
    if let Some(live) = a.live() {
        testhooks::note_result(&live.hooks, r, || testhooks::rec(kind, node, value(), 0));
    }
}

/// [`reset_engine`]'s steps.
fn reset_engine_on<P: Platform>(
    a: &Adapter<P>,
    args: &mut DXGKARG_RESETENGINE,
) -> Result<(), Status> {
    let live = a.started()?;
    let node = live.node(args.NodeOrdinal, args.EngineOrdinal)?;
    let (last, guilty) = {
        let (mut s, answer) = lock_and_reset(a, live, node)?;
        // Step 2: a hardware queue named by RESET_QUEUE puts its device in error first, so
        // that none of its queues is listed by the commits below (the aborted queue itself
        // was dropped by the device; listed again it would re-enter at its HANG).
        let node_queue = s.nodes.queue_id(node);
        let blamed = if answer.queue != NO_QUEUE && Some(answer.queue) != node_queue {
            blame(&mut s, node, answer.queue)
        } else {
            None
        };
        // Step 3: the node ring leaves (it is reloaded from ring control when it re-enters).
        // This commit ends the hold: innocent queues continue where they were.
        s.nodes.set_parked(node, true);
        let parked = runlist::commit(&live.regs, &s, node);
        // Step 4: F is stable here (the engine was held until the commit above, and the node
        // ring is out of the runlist since).
        let last = live.synchronized(|isr| {
            let n = isr.nodes.snapshot(node).map_or(
                NodeFences {
                    submitted: 0,
                    completed: 0,
                    fence: 0,
                },
                |(submitted, completed, fence)| NodeFences {
                    submitted,
                    completed,
                    fence,
                },
            );
            let aborted = if answer.queue == NO_QUEUE {
                // A faulted node ring was executing nothing, but its faulted packet is what
                // this reset aborts.
                match isr.nodes.faulted_fence(node) {
                    Some(f) => Aborted::NodeRing { at: Some(f) },
                    None => Aborted::Nothing,
                }
            } else if Some(answer.queue) == node_queue {
                Aborted::NodeRing {
                    at: isr.nodes.pending_fence_at(node, answer.rptr),
                }
            } else {
                Aborted::HwQueue
            };
            let last = last_aborted(n, aborted);
            isr.nodes.drain(node, last);
            last
        });
        // Step 5: always, even if something above failed: the engine must not stay held
        // and the node ring must not stay parked.
        s.nodes.set_parked(node, false);
        let commit = runlist::commit(&live.regs, &s, node);
        if let Some((_, engines)) = blamed {
            recommit(live, &s, engines, bit(node));
        }
        drop(s);
        parked?;
        commit?;
        (last?, blamed.map(|(g, _)| g))
    };
    args.LastAbortedFenceId = last;
    a.tdr.set_last_aborted(node, last);
    reset_done(a, live, node, guilty);
    klog!(
        P,
        Info,
        "rvgpu: engine {} reset, LastAbortedFenceId {}",
        node,
        last
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Hardware-scheduled nodes: DxgkDdiResetHwEngine / DxgkDdiResumeHwEngine
// ---------------------------------------------------------------------------------------------

/// DxgkDdiResetHwEngine (PASSIVE; hardware-scheduled nodes). Resets the engine (the device
/// aborts the packet in flight and drops only its queue, hardware.md 10.1), puts the device
/// owning the aborted hardware queue in error (UM-10) and names its context through
/// `DxgkCbInvalidateHwContext`; the guilty device's queues leave the runlists of the engines
/// that are not held. The reset engine itself stays **held** — the device executes nothing on
/// it — until `DxgkDdiResumeHwEngine` ("the engine stays stopped until resume", the DDI's
/// page), and the 22631 VidSch calls resume only after this returned `STATUS_SUCCESS`
/// (`VidSchiResetHwEngine`).
///
/// An aborted **node-ring** packet (the OS's own kernel-mode DMA buffers: paging on a
/// hardware-scheduled node) cannot be recovered here: this DDI has no `LastAbortedFenceId` by
/// which the OS could learn which of its buffers died, so the driver fails the reset and the
/// OS falls back to the adapter-wide reset (the TDR-08 rule of the software-scheduled path).
pub fn reset_hw_engine<P: Platform>(
    a: &Adapter<P>,
    args: &rvgpu_ddi::hws::DXGKARG_RESETHWENGINE,
) -> Result<(), Status> {
    let r = reset_hw_engine_on(a, args);
    journal_result(a, &r, JournalKind::ResetHwEngine, args.NodeOrdinal, || 0);
    r
}

/// [`reset_hw_engine`]'s steps.
fn reset_hw_engine_on<P: Platform>(
    a: &Adapter<P>,
    args: &rvgpu_ddi::hws::DXGKARG_RESETHWENGINE,
) -> Result<(), Status> {
    let live = crate::hws::ddi::started_hws(a)?;
    let node = live.node(args.NodeOrdinal, args.EngineOrdinal)?;
    let guilty = {
        let (mut s, answer) = lock_and_reset(a, live, node)?;
        s.hws_held |= bit(node);
        let node_queue = s.nodes.queue_id(node);
        let node_ring_lost = Some(answer.queue) == node_queue
            || (answer.queue == NO_QUEUE
                && live
                    .synchronized(|isr| isr.nodes.faulted_fence(node).is_some())
                    .unwrap_or(true));
        if node_ring_lost {
            drop(s);
            a.tdr.failed_resets.fetch_add(1, Ordering::Relaxed);
            klog!(
                P,
                Error,
                "rvgpu: HW engine {} reset aborted a node-ring packet: adapter reset needed",
                node
            );
            return Err(status::UNSUCCESSFUL);
        }
        let blamed = if answer.queue != NO_QUEUE {
            blame(&mut s, node, answer.queue)
        } else {
            None
        };
        if let Some((_, engines)) = blamed {
            recommit(live, &s, engines, s.hws_held);
        }
        blamed.map(|(g, _)| g)
    };
    reset_done(a, live, node, guilty);
    klog!(
        P,
        Info,
        "rvgpu: HW engine {} reset, held until resume",
        node
    );
    Ok(())
}

/// DxgkDdiResumeHwEngine (PASSIVE): the runlist without the invalidated contexts' queues.
/// The commit ends the device's hold (hardware.md 10.1); every innocent queue continues from
/// exactly where it was, inside an indirect buffer too. Each held engine gets its commit from
/// its own resume. A failure makes the OS reset the adapter.
pub fn resume_hw_engine<P: Platform>(
    a: &Adapter<P>,
    args: &rvgpu_ddi::hws::DXGKARG_RESUMEHWENGINE,
) -> Result<(), Status> {
    let live = crate::hws::ddi::started_hws(a)?;
    let node = live.node(args.NodeOrdinal, args.EngineOrdinal)?;
    let bit = bit(node);
    let mut s = live.sched.lock();
    if s.hws_held & bit == 0 {
        // Resume without a reset: nothing is held; the OS only calls it after a successful
        // reset (VidSchiResetHwEngine).
        return Err(status::INVALID_DEVICE_STATE);
    }
    s.hws_held &= !bit;
    runlist::commit(&live.regs, &s, node).map(|_| ())
}

/// Polls for `DEVICE_STATUS.RESETTING` to clear (the model clears it before the write returns).
const ADAPTER_RESET_POLLS: u32 = 1_000_000;

/// DxgkDdiResetFromTimeout (PASSIVE; every other DDI except the F-state power DDIs is held
/// off; ISR and DPC keep running). Adapter reset (hardware.md 10.3): when it returns the GPU
/// reads and writes no memory. Every node: pending cleared, `F := C := S` (TDR-04). KMD-owned
/// rings of kernel-mode hardware queues are emptied too (`read_ptr := write_ptr`) so that a
/// hung submission does not run again at restart; user-mode rings are the UMD's and keep their
/// contents (the OS errors the devices with outstanding work, docs/tdr.md#the-kmd). Doorbell
/// bindings and runlists are restored by [`restart_from_timeout`].
///
/// Failure means the OS bug checks (0x116), so the only error is a device that does not come
/// out of reset.
pub fn reset_from_timeout<P: Platform>(a: &Adapter<P>) -> Result<(), Status> {
    let r = reset_adapter(a);
    journal_result(a, &r, JournalKind::ResetFromTimeout, 0, || 0);
    r
}

/// [`reset_from_timeout`]'s steps.
fn reset_adapter<P: Platform>(a: &Adapter<P>) -> Result<(), Status> {
    let live = a.started()?;
    crate::etw::events::emit::<P, 1>(&crate::etw::events::TDR_ADAPTER_RESET, || {
        [a.table_slot().into()]
    });
    // No watchdog look at a device being reset: its ring and causes mean nothing until
    // RestartFromTimeout has programmed them again (which re-arms it).
    a.watchdog.disarm();
    let regs = &live.regs;
    regs.write(regs::IntEnable::new(0));
    regs.write(regs::AdapterReset::new(regs::ADAPTER_RESET_KEY));
    let mut polls = 0u32;
    loop {
        let st = DeviceStatus::from_bits_retain(regs.read::<regs::DeviceStatusReg>().raw());
        if !st.contains(DeviceStatus::RESETTING) {
            if st.contains(DeviceStatus::LOST) {
                return Err(status::DEVICE_HARDWARE_ERROR);
            }
            break;
        }
        polls = polls.saturating_add(1);
        if polls >= ADAPTER_RESET_POLLS {
            return Err(status::DEVICE_HARDWARE_ERROR);
        }
        core::hint::spin_loop();
    }
    {
        let mut s = live.sched.lock();
        live.synchronized(|isr| isr.nodes.drain_all_completed())?;
        for q in s.queues.values_mut() {
            if let Some(k) = q.kernel.as_mut() {
                let _ = k.buf.store(
                    k.control_word(RingControl::READ_PTR),
                    k.write_ptr,
                    Ordering::Release,
                );
            }
        }
        for e in 0..live.identity.config.engines {
            s.nodes.set_parked(e, false);
        }
        // The adapter reset ended every engine's post-reset hold (hardware.md M6): a held
        // engine left unresumed must get its runlist back at restart.
        s.hws_held = 0;
        // Windows resets every D3D device of the adapter with it (24H2 `K:ADAPTER_RENDER::Reset`
        // @0x1403F2C34 calls `K:DXGDEVICE::Reset` on each): their thunks answer
        // STATUS_DEVICE_REMOVED from then on and only new devices work. None of their queues
        // runs again (the restart lists none), and their doorbells are aborted once the
        // adapter runs ([`restart_from_timeout`]). The system device pages for the OS and
        // stays.
        for d in s.devices.values_mut().filter(|d| !d.system) {
            d.in_error = true;
        }
    }
    a.tdr.adapter_resets.fetch_add(1, Ordering::Relaxed);
    // The adapter reset emptied the event ring: ResetDone records still awaited never come.
    a.event_guard.clear_resets();
    klog!(P, Warning, "rvgpu: adapter reset (ResetFromTimeout)");
    Ok(())
}

/// DxgkDdiRestartFromTimeout (PASSIVE): bring-up steps 6–10 after the adapter reset
/// (hardware.md 13.1): system-memory windows, event ring, interrupts, doorbell bindings of
/// connected doorbells whose device is not in error, every engine's runlist (node ring first),
/// then `QUEUE_KICK` of every queue in a runlist.
pub fn restart_from_timeout<P: Platform>(a: &Adapter<P>) -> Result<(), Status> {
    let r = restart_adapter(a);
    journal_result(a, &r, JournalKind::RestartFromTimeout, 0, || 0);
    r
}

/// [`restart_from_timeout`]'s steps.
fn restart_adapter<P: Platform>(a: &Adapter<P>) -> Result<(), Status> {
    let live = a.started()?;
    crate::etw::events::emit::<P, 1>(&crate::etw::events::TDR_RESTART, || [a.table_slot().into()]);
    let regs = &live.regs;
    let sysmem = rvgpu_hw::addr::BusAddr::new(rvgpu_hw::PAGE_SIZE);
    device::set_window(
        regs,
        1,
        sysmem,
        rvgpu_hw::addr::SYSMEM_LIMIT.saturating_sub(sysmem.get()),
    );
    device::unbind_doorbells(regs, live.identity.config.doorbells);
    live.synchronized(|isr| {
        let (bus, bytes) = (isr.ring.buffer().bus(), isr.ring.buffer().bytes());
        device::set_window(regs, 0, bus, bytes);
        isr.ring.program(regs);
    })?;
    regs.write(regs::IntAck::new(u32::MAX));
    device::enable_interrupts(regs);
    // The OS's F-states again (the reset powered every engine up), before any commit.
    crate::power::ddi::restore(live);
    let s = live.sched.lock();
    // The reset zeroed SYSTEM_PAGE_TABLE_BASE (hardware.md 12.5); the paging process's
    // tables are in VRAM, which the reset keeps.
    if s.system_root != 0 {
        regs.write(regs::SystemPageTableBase::new(s.system_root));
    }
    if s.physical.is_global() {
        // Each process's page again (the reset unbound every page).
        for (i, pid) in s.physical.process_pages() {
            regs.write_at(i, regs::DoorbellBind::new(pid));
        }
    } else {
        for d in s.doorbells.values() {
            let (Some(i), Some(q)) = (d.physical, s.queues.get(&d.queue)) else {
                continue;
            };
            if !s.runnable(q) {
                continue;
            }
            regs.write_at(i, regs::DoorbellBind::new(q.id));
        }
    }
    // The adapter reset turned scheduling logs off and kept their registers (M39): continue
    // each log the OS set from its header.
    for e in 0..live.identity.config.engines {
        if s.sched_logs & 1u64.checked_shl(e).unwrap_or(0) != 0 {
            regs.write_at(e, regs::SchedLogCtrl::new(1));
        }
    }
    let mut result = Ok(());
    for e in 0..live.identity.config.engines {
        if let Err(err) = runlist::commit(regs, &s, e) {
            result = Err(err);
        }
    }
    for q in s.queues.values().filter(|q| s.runnable(q)) {
        regs.write_at(q.engine, regs::QueueKick::new(q.id));
    }
    drop(s);
    a.arm_watchdog();
    // UM-10 for every device the reset ended: no lock held (the callback is PASSIVE_LEVEL;
    // 24H2's `K:DxgkDisconnectDoorbellCB` @0x1401DB180 takes the device's lock without the
    // adapter's core resource when its thread holds that exclusively, as the recovery does).
    crate::doorbell::ddi::abort_devices_in_error(live);
    result.map(|_| ())
}
