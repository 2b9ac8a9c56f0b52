//! Timeout detection and recovery (TDR-01 … TDR-09; docs/tdr.md#the-kmd, "engineer B").
//!
//! The Windows 8 per-engine path ([tdr8]) and the adapter-wide fallback:
//!
//! | DDI | IRQL, synchronisation | What it does here |
//! |---|---|---|
//! | `DxgkDdiQueryDependentEngineGroup` | PASSIVE, first level; "must return STATUS_SUCCESS" [qdeg] | `1 << NodeOrdinal`: engines are independent (hardware.md 4.1, TDR-02) |
//! | `DxgkDdiQueryEngineStatus` | PASSIVE, first level; "should always succeed" [qes] | `Responsive = STATUS.state ≠ Hung` (all-ones: not responsive) |
//! | `DxgkDdiResetEngine` | PASSIVE, first level, pageable [reset] | [`reset_engine`]: reset, `LastAbortedFenceId` ([`last_aborted`]), node ring drained, runlist recommitted (ends the hold, hardware.md 10.1), guilty HW queue's device in error + `DxgkCbInvalidateHwContext` |
//! | `DxgkDdiResetFromTimeout` | PASSIVE; no other DDI runs except the F-state power DDIs; ISR and DPC keep running [sync] | [`reset_from_timeout`]: adapter reset, every node `C := S` (TDR-04) |
//! | `DxgkDdiRestartFromTimeout` | PASSIVE [restart] | [`restart_from_timeout`]: bring-up steps 6–10 again |
//!
//! **Locking.** The scheduler spin lock (DISPATCH) is held across the engine reset, the
//! computation and the recommits of [`reset_engine`], so no queue create/destroy, suspend or
//! doorbell DDI (level 0 or other classes, which can run beside a first-level DDI) edits the
//! runlist between the reset and the commit that ends the hold. The node rings are read and
//! drained inside `DxgkCbSynchronizeExecution` ([`Live::synchronized`]): lock order **sched
//! lock → interrupt lock**, never the reverse (docs/tdr.md#the-kmd). `DxgkCbInvalidateHwContext`
//! is PASSIVE_LEVEL [ihc] and is called after the lock is released. `DxgkDdiCollectDbgInfo`
//! ([`crate::dbginfo`]) takes none of these locks, so it can run beside a reset (TDR-01).
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

use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use rvgpu_ddi::tdr::{
    DXGKARG_QUERYDEPENDENTENGINEGROUP, DXGKARG_QUERYENGINESTATUS, DXGKARG_RESETENGINE,
    DXGK_ENGINESTATUS,
};
use rvgpu_hw::engine::{EngineState, EngineStatus, ResetResult, ENGINE_CTRL_RESET};
use rvgpu_hw::queue::{RingControl, NO_QUEUE};
use rvgpu_hw::regs::{self, Caps, DeviceStatus, ENGINE_MAX};

use crate::adapter::{Adapter, Live};
use crate::device;
use crate::handle::Handle;
use crate::klog;
use crate::kmem::SortedMap;
use crate::platform::Platform;
use crate::runlist;
use crate::sched::Sched;
use crate::status::{self, Status};

// ---------------------------------------------------------------------------------------------
// LastAbortedFenceId (TDR-06, TDR-07)
// ---------------------------------------------------------------------------------------------

/// A node ring's fence bookkeeping at the moment of the reset (docs/tdr.md#the-kmd step 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeFences {
    /// `S`: last submitted fence ID.
    pub submitted: u32,
    /// `C`: last completed fence ID as the KMD reported it (the OS's C is never above it).
    pub completed: u32,
    /// `F`: the fence word in memory (what the last PROGRESS that ran wrote).
    pub fence: u32,
}

/// What the device's `RESET_QUEUE` / `RESET_RPTR` say was executing (hardware.md 10.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aborted {
    /// The node ring; `at` is the fence ID of the pending submission whose ring bytes contain
    /// `RESET_RPTR`, `None` if the read pointer lies in none (between packets, wrapped).
    NodeRing { at: Option<u32> },
    /// A hardware queue (kernel- or user-mode): the node ring's packets, if any, did not start
    /// (it has the highest priority, so it would have been running).
    HwQueue,
    /// `RESET_QUEUE = NO_QUEUE`: nothing in flight (D2). Includes the TDR-07 race: the packet
    /// completed between the OS's snapshot and the reset.
    Nothing,
}

/// `LastAbortedFenceId` for the outcome table of docs/tdr.md#the-kmd (TDR-06):
///
/// | device answer | value |
/// |---|---|
/// | node ring, `RESET_RPTR` inside pending submission k | `k.fence` |
/// | node ring, read pointer in no pending submission | `F` |
/// | a hardware queue | `F` |
/// | `NO_QUEUE` (TDR-07: `F` = last completed, = S in the race) | `F` |
///
/// where `F` here is `max(C, F)` (completions whose interrupt the OS ignored are completions).
/// In range because the OS's `C` is never above the KMD's, `F` only holds IDs the OS
/// submitted (so `≤ S`), and k is pending (`F < k ≤ S`). The result is additionally clamped to
/// `[min(C, S), S]` so that broken bookkeeping can never produce a bug check 0x119/0xA.
pub fn last_aborted(n: NodeFences, aborted: Aborted) -> u32 {
    let s = n.submitted;
    // Last completed as the device proved it: never above S, never below what was reported.
    let done = n.completed.max(n.fence).min(s);
    match aborted {
        Aborted::NodeRing { at: Some(k) } if k > done && k <= s => k,
        Aborted::NodeRing { .. } | Aborted::HwQueue | Aborted::Nothing => done,
    }
}

// ---------------------------------------------------------------------------------------------
// Per-adapter TDR record (lock-free: read by CollectDbgInfo at any IRQL)
// ---------------------------------------------------------------------------------------------

/// What the ISR and the reset DDIs record for diagnostics. Atomics only: written by the ISR
/// (`ResetDone` events) and the reset DDIs, read by `DxgkDdiCollectDbgInfo` without any lock.
#[derive(Debug)]
pub struct TdrLog {
    /// Per engine: the last `ResetDone` event, packed as `result << 32 | queue`.
    last_done: [AtomicU64; ENGINE_MAX as usize],
    /// Per engine: the last `ResetDone` event's aborted read pointer.
    last_rptr: [AtomicU64; ENGINE_MAX as usize],
    /// Per engine: the last `LastAbortedFenceId` returned.
    last_aborted: [AtomicU32; ENGINE_MAX as usize],
    /// Per engine: successful resets.
    resets: [AtomicU32; ENGINE_MAX as usize],
    /// Successful engine resets.
    pub engine_resets: AtomicU64,
    /// Engine resets that failed (TDR-09).
    pub failed_resets: AtomicU64,
    /// Adapter resets (ResetFromTimeout).
    pub adapter_resets: AtomicU64,
    /// Contexts named through `DxgkCbInvalidateHwContext`.
    pub invalidated: AtomicU64,
}

impl Default for TdrLog {
    fn default() -> Self {
        Self {
            last_done: [const { AtomicU64::new(u64::MAX) }; ENGINE_MAX as usize],
            last_rptr: [const { AtomicU64::new(0) }; ENGINE_MAX as usize],
            last_aborted: [const { AtomicU32::new(0) }; ENGINE_MAX as usize],
            resets: [const { AtomicU32::new(0) }; ENGINE_MAX as usize],
            engine_resets: AtomicU64::new(0),
            failed_resets: AtomicU64::new(0),
            adapter_resets: AtomicU64::new(0),
            invalidated: AtomicU64::new(0),
        }
    }
}

/// One engine's last `ResetDone` as recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResetDoneRecord {
    /// `ResetResult` value (`u32::MAX` if none was seen).
    pub result: u32,
    pub queue: u32,
    pub rptr: u64,
}

impl TdrLog {
    fn slot(engine: u32) -> Option<usize> {
        usize::try_from(engine)
            .ok()
            .filter(|e| *e < ENGINE_MAX as usize)
    }

    /// ISR: a `ResetDone` event (device IRQL; atomics only).
    pub fn reset_done(&self, engine: u32, result: Option<ResetResult>, queue: u32, rptr: u64) {
        let Some(e) = Self::slot(engine) else {
            return;
        };
        let r = result.map_or(u32::MAX, |r| r as u32);
        if let (Some(d), Some(p)) = (self.last_done.get(e), self.last_rptr.get(e)) {
            p.store(rptr, Ordering::Relaxed);
            d.store((u64::from(r) << 32) | u64::from(queue), Ordering::Release);
        }
    }

    /// The last `ResetDone` of `engine`, if any was seen.
    pub fn last_reset_done(&self, engine: u32) -> Option<ResetDoneRecord> {
        let e = Self::slot(engine)?;
        let d = self.last_done.get(e)?.load(Ordering::Acquire);
        if d == u64::MAX {
            return None;
        }
        Some(ResetDoneRecord {
            result: u32::try_from(d >> 32).unwrap_or(u32::MAX),
            queue: u32::try_from(d & u64::from(u32::MAX)).unwrap_or(NO_QUEUE),
            rptr: self.last_rptr.get(e)?.load(Ordering::Relaxed),
        })
    }

    /// The last `LastAbortedFenceId` returned for `engine`.
    pub fn last_aborted(&self, engine: u32) -> u32 {
        Self::slot(engine)
            .and_then(|e| self.last_aborted.get(e))
            .map_or(0, |a| a.load(Ordering::Relaxed))
    }

    /// A successful reset of `engine`.
    fn engine_reset(&self, engine: u32) {
        self.engine_resets.fetch_add(1, Ordering::Relaxed);
        if let Some(r) = Self::slot(engine).and_then(|e| self.resets.get(e)) {
            r.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Successful resets of `engine`.
    pub fn resets(&self, engine: u32) -> u32 {
        Self::slot(engine)
            .and_then(|e| self.resets.get(e))
            .map_or(0, |r| r.load(Ordering::Relaxed))
    }

    fn set_last_aborted(&self, engine: u32, v: u32) {
        if let Some(a) = Self::slot(engine).and_then(|e| self.last_aborted.get(e)) {
            a.store(v, Ordering::Relaxed);
        }
    }
}

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

/// The rule itself: device capability and every obliged slot (`Filled::per_engine_tdr`).
pub fn per_engine_tdr_rule(caps: Caps, ddis: bool) -> bool {
    caps.contains(Caps::PER_ENGINE_RESET) && ddis
}

// ---------------------------------------------------------------------------------------------
// The DDIs
// ---------------------------------------------------------------------------------------------

/// Checks `(NodeOrdinal, EngineOrdinal)`: a node of this adapter, and physical adapter 0 (one
/// physical adapter, TDR-02).
fn check_node<P: Platform>(live: &Live<P>, node: u32, engine: u32) -> Result<u32, Status> {
    if engine != 0 || node >= live.identity.config.engines {
        return Err(status::INVALID_PARAMETER);
    }
    Ok(node)
}

/// The dependent-engine mask of `node` (TDR-02): the engines are independent, so each node is
/// in a group of its own. `None` for a node past bit 63.
pub fn dependent_mask(node: u32) -> Option<u64> {
    1u64.checked_shl(node)
}

/// DxgkDdiQueryDependentEngineGroup (PASSIVE, first level). The page says it "must return
/// STATUS_SUCCESS"; only arguments the OS never sends (an unknown node, EngineOrdinal ≠ 0)
/// are refused.
pub fn query_dependent_engine_group<P: Platform>(
    a: &Adapter<P>,
    args: &mut DXGKARG_QUERYDEPENDENTENGINEGROUP,
) -> Result<(), Status> {
    let live = a.started()?;
    let node = check_node(live, args.NodeOrdinal, args.EngineOrdinal)?;
    crate::etw::events::emit::<P, 2>(&crate::etw::events::TDR_TIMEOUT, || {
        [a.table_slot().into(), node.into()]
    });
    args.DependentNodeOrdinalMask = dependent_mask(node).ok_or(status::INVALID_PARAMETER)?;
    Ok(())
}

/// Whether an engine whose `STATUS` reads `raw` is responsive: not `Hung`; an unreadable or
/// all-ones register (device lost) is not responsive.
pub fn responsive(raw: u32) -> bool {
    if raw == u32::MAX {
        return false;
    }
    EngineStatus::from_reg(raw).is_some_and(|s| s.state != EngineState::Hung)
}

/// DxgkDdiQueryEngineStatus (PASSIVE, first level; "should always succeed").
pub fn query_engine_status<P: Platform>(
    a: &Adapter<P>,
    args: &mut DXGKARG_QUERYENGINESTATUS,
) -> Result<(), Status> {
    let live = a.started()?;
    let node = check_node(live, args.NodeOrdinal, args.EngineOrdinal)?;
    let raw = live.regs.read_at::<regs::EngineStatusReg>(node).raw();
    args.EngineStatus = DXGK_ENGINESTATUS::default()
        .with(DXGK_ENGINESTATUS::Responsive, u32::from(responsive(raw)));
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

/// The guilty context of an aborted hardware queue: what `DxgkCbInvalidateHwContext` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Guilty {
    /// The handle passed as `hHwContext` ([`context_handle`]).
    handle: usize,
}

/// The handle `DxgkCbInvalidateHwContext` names context `ctx` by (the input
/// value of `DXGKARG_CREATECONTEXT::hContext` when the OS passed one, else the KMD's handle).
pub fn context_handle(s: &Sched, ctx: Handle) -> Option<usize> {
    let c = s.contexts.get(&ctx)?;
    Some(if c.os_handle != 0 {
        c.os_handle
    } else {
        usize::try_from(ctx.raw()).unwrap_or(0)
    })
}

/// Puts the device owning the hardware queue with id `queue` on `node` in error (UM-10): from
/// the next commit none of its queues is in any runlist. Returns the guilty context and the
/// engines that device has runnable queues on (to recommit). `None` if no queue of this adapter
/// has that id on that engine (destroyed meanwhile, or a node ring).
fn blame(s: &mut Sched, node: u32, queue: u32) -> Option<(Guilty, u64)> {
    let q = s
        .queues
        .values()
        .find(|q| q.id == queue && q.engine == node)?;
    let device: Handle = s.contexts.get(&q.context)?.device;
    let guilty = Guilty {
        handle: context_handle(s, q.context)?,
    };
    // Engines where the device has queues in a runlist now: they must be recommitted so those
    // queues leave (the reset itself only dropped the aborted one).
    let mut engines = 0u64;
    for q in s.queues.values() {
        let mine = s
            .contexts
            .get(&q.context)
            .is_some_and(|c| c.device == device);
        if mine && s.runnable(q) {
            engines |= 1u64.checked_shl(q.engine).unwrap_or(0);
        }
    }
    if let Some(d) = s.devices.get_mut(&device) {
        d.in_error = true;
    }
    Some((guilty, engines))
}

/// Whether queue `q`'s D3D device was put in error by an engine reset (UM-10): its doorbell
/// connects and kernel-mode submissions are refused with `STATUS_DEVICE_REMOVED`.
pub fn device_in_error(s: &Sched, q: &crate::hwqueue::HwQueue) -> bool {
    queue_device_in_error(&s.contexts, &s.devices, q)
}

/// [`device_in_error`] from the two tables it reads, for a caller that holds the queue
/// mutably (a borrow of the scheduler's other tables beside it).
pub fn queue_device_in_error(
    contexts: &SortedMap<Handle, crate::context::Context>,
    devices: &SortedMap<Handle, crate::context::Device>,
    q: &crate::hwqueue::HwQueue,
) -> bool {
    contexts
        .get(&q.context)
        .and_then(|c| devices.get(&c.device))
        .is_some_and(|d| d.in_error)
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

/// `DxgkCbInvalidateHwContext` for the guilty context (PASSIVE_LEVEL, no lock held). Its
/// failure changes nothing the OS relies on: the device's queues are out of every runlist
/// already.
fn invalidate<P: Platform>(a: &Adapter<P>, live: &Live<P>, g: Guilty) {
    match live.dxgk.invalidate_hw_context(g.handle) {
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
/// 6. Lock released: `DxgkCbInvalidateHwContext(guilty context)` (PASSIVE).
pub fn reset_engine<P: Platform>(
    a: &Adapter<P>,
    args: &mut DXGKARG_RESETENGINE,
) -> Result<(), Status> {
    let live = a.started()?;
    let node = check_node(live, args.NodeOrdinal, args.EngineOrdinal)?;
    crate::etw::events::emit::<P, 2>(&crate::etw::events::TDR_ENGINE_RESET, || {
        [a.table_slot().into(), node.into()]
    });
    let (last, guilty) = {
        let mut s = live.sched.lock();
        let answer = match reset_hw(a, live, node) {
            Ok(v) => v,
            Err(e) => {
                drop(s);
                return Err(reset_failed(a, node, e));
            }
        };
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
            for e in 0..live.identity.config.engines {
                if e != node && engines & 1u64.checked_shl(e).unwrap_or(0) != 0 {
                    let _ = runlist::commit(&live.regs, &s, e);
                }
            }
        }
        drop(s);
        parked?;
        commit?;
        (last?, blamed.map(|(g, _)| g))
    };
    args.LastAbortedFenceId = last;
    a.tdr.engine_reset(node);
    a.tdr.set_last_aborted(node, last);
    if let Some(g) = guilty {
        invalidate(a, live, g);
    }
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
    let live = a.started()?;
    if !crate::hws::ddi::active(live) {
        return Err(status::NOT_SUPPORTED);
    }
    let node = check_node(live, args.NodeOrdinal, args.EngineOrdinal)?;
    crate::etw::events::emit::<P, 2>(&crate::etw::events::TDR_ENGINE_RESET, || {
        [a.table_slot().into(), node.into()]
    });
    let bit = 1u64.checked_shl(node).unwrap_or(0);
    let guilty = {
        let mut s = live.sched.lock();
        let answer = match reset_hw(a, live, node) {
            Ok(v) => v,
            Err(e) => {
                drop(s);
                return Err(reset_failed(a, node, e));
            }
        };
        s.hws_held |= bit;
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
            let held = s.hws_held;
            for e in 0..live.identity.config.engines {
                let b = 1u64.checked_shl(e).unwrap_or(0);
                if engines & b != 0 && held & b == 0 {
                    let _ = runlist::commit(&live.regs, &s, e);
                }
            }
        }
        blamed.map(|(g, _)| g)
    };
    a.tdr.engine_reset(node);
    if let Some(g) = guilty {
        invalidate(a, live, g);
    }
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
    let live = a.started()?;
    if !crate::hws::ddi::active(live) {
        return Err(status::NOT_SUPPORTED);
    }
    let node = check_node(live, args.NodeOrdinal, args.EngineOrdinal)?;
    let bit = 1u64.checked_shl(node).unwrap_or(0);
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
    crate::power::restore(live);
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
    result.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(submitted: u32, completed: u32, fence: u32) -> NodeFences {
        NodeFences {
            submitted,
            completed,
            fence,
        }
    }

    /// TDR-06: every row of docs/tdr.md#the-kmd's outcome table, each asserted equal to the
    /// expected ID and inside `[C, S]`.
    #[test]
    fn tdr_06_every_row_of_the_outcome_table() {
        // S = 10, C = 6 (reported), F = 7 (one completion whose interrupt the OS ignored).
        let f = n(10, 6, 7);
        let rows = [
            (
                "node ring, rptr in pending k = 8",
                Aborted::NodeRing { at: Some(8) },
                8,
            ),
            (
                "node ring, rptr in pending k = S",
                Aborted::NodeRing { at: Some(10) },
                10,
            ),
            (
                "node ring, rptr in no pending",
                Aborted::NodeRing { at: None },
                7,
            ),
            ("a hardware queue", Aborted::HwQueue, 7),
            ("NO_QUEUE", Aborted::Nothing, 7),
        ];
        for (name, aborted, want) in rows {
            let got = last_aborted(f, aborted);
            assert_eq!(got, want, "{name}");
            assert!(
                (f.completed..=f.submitted).contains(&got),
                "{name}: {got} not in [C, S]"
            );
        }
    }

    /// TDR-07: the packet completed between the OS's snapshot (S = C + 1) and the reset: the
    /// device names nothing (D2), F = S, and LastAbortedFenceId = S (in range; the OS errors
    /// the device of the "aborted" packet although it completed).
    #[test]
    fn tdr_07_completed_between_snapshot_and_reset() {
        let raced = n(5, 4, 5);
        assert_eq!(last_aborted(raced, Aborted::Nothing), 5);
        // Its Pending entry may even still be listed (the ISR had not popped it): a rptr that
        // names an already completed ID never goes back below F.
        assert_eq!(last_aborted(raced, Aborted::NodeRing { at: Some(5) }), 5);
        assert_eq!(last_aborted(raced, Aborted::NodeRing { at: Some(4) }), 5);
        // Nothing in flight and nothing completed since the snapshot: LastAborted = C = F.
        assert_eq!(last_aborted(n(5, 4, 4), Aborted::Nothing), 4);
    }

    /// TDR-06: broken inputs never leave `[C, S]` (a value out of range is a bug check).
    #[test]
    fn tdr_06_always_in_range_even_for_inconsistent_inputs() {
        for &(s, c, f) in &[
            (0, 0, 0),
            (u32::MAX, u32::MAX, u32::MAX),
            (u32::MAX, 0, 0),
            (10, 3, 12), // F above S: clamped to S
            (10, 3, 0),  // F below C: C
        ] {
            for aborted in [
                Aborted::NodeRing { at: Some(0) },
                Aborted::NodeRing { at: Some(u32::MAX) },
                Aborted::NodeRing { at: Some(s) },
                Aborted::NodeRing { at: None },
                Aborted::HwQueue,
                Aborted::Nothing,
            ] {
                let got = last_aborted(n(s, c, f), aborted);
                assert!(got <= s, "({s},{c},{f}) {aborted:?}: {got} > S");
                assert!(got >= c.min(s), "({s},{c},{f}) {aborted:?}: {got} < C");
            }
        }
        // A pending ID above S (impossible) is not trusted.
        assert_eq!(
            last_aborted(n(10, 3, 5), Aborted::NodeRing { at: Some(11) }),
            5
        );
    }

    /// TDR-02: each node is a dependent group of its own, bit n for node n.
    #[test]
    fn tdr_02_dependent_engine_group_is_the_node_itself() {
        assert_eq!(dependent_mask(0), Some(1));
        assert_eq!(dependent_mask(1), Some(2));
        assert_eq!(dependent_mask(ENGINE_MAX - 1), Some(1 << (ENGINE_MAX - 1)));
        for node in 0..ENGINE_MAX {
            let m = dependent_mask(node).unwrap();
            assert_eq!(m.count_ones(), 1);
            assert_ne!(m & (1 << node), 0, "the mask contains the node itself");
        }
        assert_eq!(dependent_mask(64), None);
    }

    /// TDR-01: the capability needs the device bit and the four DDIs
    /// (`ddi::table` checks that one missing slot clears the group).
    #[test]
    fn tdr_01_per_engine_tdr_needs_the_device_bit_and_all_four_ddis() {
        let dev = Caps::ATOMIC64 | Caps::PER_ENGINE_RESET;
        assert!(per_engine_tdr_rule(dev, true));
        assert!(!per_engine_tdr_rule(Caps::ATOMIC64, true));
        assert!(!per_engine_tdr_rule(dev, false));
    }

    /// UM-10: the device owning the aborted hardware queue goes in error; its queues on every
    /// engine stop being runnable (they leave at the recommit) and the engines to recommit are
    /// returned; the other process's queues stay runnable; the guilty context is named by its
    /// OS handle (or the KMD handle when the OS passed none).
    #[test]
    fn um_10_blame_errors_only_the_guilty_device() {
        use crate::context::{Context, Device};
        use crate::handle::Kind;
        use crate::hwqueue::{HwQueue, Ring};
        let h = |k, n| Handle::new(0, k, n).unwrap();
        let mut s = Sched::new(4, false, alloc::vec::Vec::new());
        let (guilty_dev, innocent_dev) = (h(Kind::Device, 1), h(Kind::Device, 2));
        for d in [guilty_dev, innocent_dev] {
            s.devices.insert(
                d,
                Device {
                    os_handle: 0,
                    system: false,
                    in_error: false,
                    process: None,
                },
            );
        }
        // Contexts: 10 (guilty, engine 0, OS handle 0x77), 11 (guilty, engine 1, no OS
        // handle), 12 (innocent, engine 0).
        for (n, device, engine, os) in [
            (10, guilty_dev, 0, 0x77),
            (11, guilty_dev, 1, 0),
            (12, innocent_dev, 0, 0x99),
        ] {
            s.contexts.insert(
                h(Kind::Context, n),
                Context {
                    device,
                    engine,
                    suspended: false,
                    os_handle: os,
                    root: 0,
                    priority: crate::hws::ContextPriority::DEFAULT,
                },
            );
        }
        let ring = Ring {
            base: rvgpu_hw::addr::GpuVa::new(0x10_0000),
            size: 4096,
            control: rvgpu_hw::addr::GpuVa::new(0x20_0000),
        };
        for (n, ctx, engine, id) in [(20, 10, 0, 5), (21, 11, 1, 6), (22, 12, 0, 7)] {
            s.queues.insert(
                h(Kind::Queue, n),
                HwQueue {
                    os_handle: 0,
                    context: h(Kind::Context, ctx),
                    engine,
                    id,
                    priority: 0,
                    user_mode: true,
                    progress_gpu: rvgpu_hw::addr::GpuVa::new(0x9000),
                    progress_cpu: 0,
                    last_submitted: 0,
                    native_progress: false,
                    ring: Some(ring),
                    kernel: None,
                    doorbell: None,
                    logs: crate::log::QueueLogs::default(),
                },
            );
        }
        assert_eq!(blame(&mut s, 1, 5), None, "queue 5 is on engine 0, not 1");
        assert_eq!(blame(&mut s, 0, 1234), None, "unknown queue id");
        assert!(!s.devices.values().any(|d| d.in_error));
        let (g, engines) = blame(&mut s, 0, 5).unwrap();
        assert_eq!(g.handle, 0x77);
        assert_eq!(
            engines, 0b11,
            "the guilty device has queues on engines 0 and 1"
        );
        assert!(s.devices[&guilty_dev].in_error);
        assert!(!s.devices[&innocent_dev].in_error);
        let runnable: alloc::vec::Vec<u32> = s
            .queues
            .values()
            .filter(|q| s.runnable(q))
            .map(|q| q.id)
            .collect();
        assert_eq!(runnable, [7], "only the innocent process's queue stays");
        let errored: alloc::vec::Vec<u32> = s
            .queues
            .values()
            .filter(|q| device_in_error(&s, q))
            .map(|q| q.id)
            .collect();
        assert_eq!(errored, [5, 6], "connect and submit refused for these");
        // A context created without an OS handle is named by the KMD's handle.
        s.devices.get_mut(&guilty_dev).unwrap().in_error = false;
        let (g, _) = blame(&mut s, 1, 6).unwrap();
        assert_eq!(g.handle as u64, h(Kind::Context, 11).raw());
    }

    #[test]
    fn responsive_unless_hung_or_unreadable() {
        let st = |state, held| {
            EngineStatus {
                state,
                has_work: true,
                held,
            }
            .to_reg()
        };
        assert!(responsive(st(EngineState::Active, false)));
        assert!(
            responsive(st(EngineState::Idle, true)),
            "held after a reset is not a hang"
        );
        assert!(responsive(st(EngineState::TransitionToF1, false)));
        assert!(!responsive(st(EngineState::Hung, false)));
        assert!(!responsive(u32::MAX), "device lost");
        assert!(!responsive(0xF), "unknown state");
    }

    #[test]
    fn reset_done_records_round_trip() {
        let log = TdrLog::default();
        assert_eq!(log.last_reset_done(1), None);
        log.reset_done(1, Some(ResetResult::Ok), 7, 0x40);
        assert_eq!(
            log.last_reset_done(1),
            Some(ResetDoneRecord {
                result: 1,
                queue: 7,
                rptr: 0x40
            })
        );
        log.reset_done(ENGINE_MAX, Some(ResetResult::Ok), 7, 0x40);
        assert_eq!(log.last_reset_done(ENGINE_MAX), None);
        log.set_last_aborted(0, 9);
        assert_eq!(log.last_aborted(0), 9);
    }
}
