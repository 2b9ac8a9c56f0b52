//! Timeout detection and recovery: the VidSch side of issue 7 (docs/tdr.md §5, TDR-01 … TDR-09,
//! UM-10).
//!
//! **Scheduling state** (per adapter, [`TdrOs`]): per node the OS's own `(S, C)` — last
//! submitted and last completed fence ID of the kernel-mode ("legacy") path of
//! [`crate::vidsch::legacy`] — with every DMA buffer in flight ([`Packet`]: fence ID, paging flag,
//! owning device, devices owning the allocations it references, its DMA buffer). Interrupt
//! reports of the node (`DMA_COMPLETED`, `DMA_PREEMPTED`, `DMA_FAULTED`, `ENGINE_STATE_CHANGE`
//! to `HUNG`) are captured at ISR time ([`isr_report`], under the adapter's interrupt lock) and
//! processed at DPC time ([`dpc_process`]): a completion ID above S or below C is bug check
//! 0x119 / 0x1; `DmaPreempted.LastCompletedFenceId` must equal the OS's C (else 0x119 / 0x1).
//!
//! **Detection** (VidSch's PASSIVE worker: the adapter's worker thread, or the step loop;
//! [`run_passive`]): a node with `S > C` and no completion for the timeout; a hardware queue
//! (kernel- or user-mode) of the node that is not suspended, has `last_queued > completed` and
//! whose progress fence has not moved for the timeout (UM-16; a queue blocked on a GPU wait
//! counts too, docs/tdr.md Q7); an `EngineStateChange(HUNG)` (immediate); a `DmaFaulted`.
//! TDR is **opt-in per adapter** ([`Machine::enable_tdr`]): the fence and user-mode submission
//! tests park queues on purpose and must keep their meaning. Windows' TDR is always on.
//!
//! **The TDR-05 sequence** ([`recover_node`]): preemption attempt (`DxgkDdiPreemptCommand`,
//! DISPATCH; only when the node has kernel-mode DMA buffers in flight: hardware queues are not
//! preempted through it) → preemption timeout → `DxgkDdiCollectDbgInfo(0x141)` (PASSIVE,
//! output bounded by `BufferSize`, checked with a guard) → **snapshot** under the adapter's
//! interrupt lock of `(S, C)` and `ignore_irq` set for the node: from here its reports are
//! recorded as ignored, not processed (other nodes unaffected) → nothing to reset if `S == C`
//! and no queue of the node is stalled → **DPC flush** → `DxgkDdiQueryDependentEngineGroup`
//! (mask must contain the node and no bit ≥ node count) and `DxgkDdiQueryEngineStatus` → the
//! test's pause hook ([`Machine::set_tdr_pause`], TDR-07) → `DxgkDdiResetEngine` per node of the
//! mask → **check**: `LastAbortedFenceId ∉ [C, S]` is bug check 0x119 (0xA, LastAborted, C,
//! node) (TDR-06); the engine must not be left held or resetting → **recover**: IDs up to
//! LastAborted are retired, the aborted packet's device (if `LastAborted > C` at the snapshot,
//! which includes the TDR-07 race) is put in error; an aborted **paging** packet promotes to
//! the adapter-wide path (TDR-08) with the owners of its allocations in error; devices named by
//! `DxgkCbInvalidateHwContext` (only accepted during `DxgkDdiResetEngine`), and the device of a
//! stalled hardware queue when the KMD named none, are put in error; the rest is resubmitted:
//! paging packets first with their original IDs and `Flags.Resubmission` (TDR-03), then render
//! packets of non-errored devices with new IDs `> S`; errored devices' packets are dropped.
//! UM-10: every doorbell of an errored device goes `DISCONNECTED_ABORT`; nothing happens to
//! other devices.
//!
//! **Adapter-wide path** ([`adapter_reset`], docs/tdr.md §5.3): `CollectDbgInfo(0x117)`, every
//! user-mode submission thunk and kernel-mode submission gated, `DxgkDdiResetFromTimeout`
//! (failure: bug check 0x116), every node `C := S` with its in-flight packets dropped and their
//! devices (and every device with a hardware queue behind its last-queued value) in error,
//! `DxgkDdiRestartFromTimeout` (failure: 0x116), UM-10 for the errored devices. Entered from a
//! failed `DxgkDdiResetEngine` (TDR-09) or an aborted paging packet (TDR-08): reason
//! `EngineTimeoutPromotedToAdapterReset` (9) is recorded.
//!
//! Every step is a [`TdrEvent`] ([`Machine::tdr_events`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use rvgpu_ddi::basic::*;
use rvgpu_ddi::dxgkrnl::DXGKARGCB_INVALIDATEHWCONTEXT;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::interrupt::*;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::tdr::*;
use rvgpu_device::{Device, SysAlloc};
use rvgpu_kmd::platform::Irql;

use crate::dxgkrnl::adapter::AdapterShared;
use crate::dxgkrnl::bugcheck::{self, vidsch, BugCheck};
use crate::dxgkrnl::ddi::{self, check_status, sim_err, table, At};
use crate::dxgkrnl::irql::{self, Routine};
use crate::dxgkrnl::kernel::{current_irql, IrqlScope};
use crate::dxgkrnl::state::lock;
use crate::error::SimError;
use crate::machine::{Machine, Mode};
use crate::ums::{self, KmtHandle};

/// Why the OS reset (docs/tdr.md §5.1). Only 9's value is from the seed; the others are the
/// simulation's (UNVERIFIED).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum TdrReason {
    /// A per-engine reset recovered the timeout.
    EngineTimeout = 1,
    /// The adapter has no per-engine reset (`SupportPerEngineTDR = 0`): adapter-wide reset.
    AdapterTimeout = 2,
    /// `TdrEngineTimeoutPromotedToAdapterReset`: the engine reset failed (TDR-09) or aborted a
    /// paging packet (TDR-08).
    EngineTimeoutPromotedToAdapterReset = 9,
}

/// What triggered a TDR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Kernel-mode DMA buffers in flight and no completion for the timeout.
    DmaTimeout,
    /// A hardware queue's progress fence did not move for the timeout (UM-16).
    HwQueueStalled {
        /// The queue's D3DKMT handle.
        queue: KmtHandle,
    },
    /// `EngineStateChange(NewState = HUNG)`.
    EngineHung,
    /// `DmaFaulted` on the node.
    Faulted {
        /// The faulted fence ID.
        fence: u32,
    },
}

/// One step of detection and recovery, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TdrEvent {
    /// A timeout (or hang report) was detected on `node`.
    Detected { node: u32, cause: Cause },
    /// `DxgkDdiPreemptCommand(fence)`.
    PreemptRequested { node: u32, fence: u32 },
    /// `DmaPreempted` arrived in time: no TDR.
    Preempted {
        node: u32,
        fence: u32,
        last_completed: u32,
    },
    /// The preemption timed out (or was not attempted): this is a TDR.
    Timeout { node: u32 },
    /// `DxgkDdiCollectDbgInfo(reason)`; `bytes` up to the first NUL.
    CollectDbgInfo { reason: u32, bytes: usize },
    /// The atomic snapshot at device IRQL.
    Snapshot {
        node: u32,
        submitted: u32,
        completed: u32,
    },
    /// Nothing to reset (the work completed before the snapshot).
    NothingToReset { node: u32 },
    /// DPCs flushed.
    DpcFlushed { node: u32 },
    /// `DxgkDdiQueryDependentEngineGroup`.
    DependentGroup { node: u32, mask: u64 },
    /// `DxgkDdiQueryEngineStatus`.
    EngineStatus { node: u32, responsive: bool },
    /// The test's pause hook ran.
    Paused { node: u32 },
    /// A report of `node` arrived while its interrupts were ignored.
    IgnoredInterrupt {
        node: u32,
        interrupt_type: DXGK_INTERRUPT_TYPE,
        fence: u32,
    },
    /// `DxgkDdiResetEngine` returned.
    ResetEngine {
        node: u32,
        status: NTSTATUS,
        last_aborted: u32,
    },
    /// `DxgkCbInvalidateHwContext` named a context of `device`.
    Invalidated { device: KmtHandle },
    /// Packets retired by the reset (completed, their interrupts ignored or pending).
    Retired { node: u32, fences: Vec<u32> },
    /// The aborted packet.
    Aborted { node: u32, fence: u32, paging: bool },
    /// A packet resubmitted (`old` = `new` for paging packets, TDR-03).
    Resubmitted {
        node: u32,
        old: u32,
        new: u32,
        paging: bool,
    },
    /// A packet of an errored device dropped.
    Dropped { node: u32, fence: u32 },
    /// A device put in error (UM-10).
    DeviceError {
        device: KmtHandle,
        doorbells_aborted: usize,
    },
    /// `DxgkDdiResetFromTimeout` returned successfully.
    AdapterReset { reason: TdrReason },
    /// `DxgkDdiRestartFromTimeout` returned successfully.
    Restarted,
    /// The node runs again.
    Recovered { node: u32 },
}

/// TDR settings of one adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TdrConfig {
    /// Step mode: rounds without progress before a timeout (> the device's 200-step hang
    /// detection, docs/tdr.md §5.1).
    pub timeout_steps: u64,
    /// Threaded mode: time without progress before a timeout.
    pub timeout: Duration,
    /// Step mode: rounds to wait for `DmaPreempted`.
    pub preempt_steps: u64,
    /// Threaded mode: time to wait for `DmaPreempted`.
    pub preempt_timeout: Duration,
    /// Watch hardware queues' progress fences (UM-16) as well as DMA fences.
    pub watch_hw_queues: bool,
}

impl Default for TdrConfig {
    fn default() -> Self {
        Self {
            timeout_steps: 300,
            timeout: Duration::from_millis(200),
            preempt_steps: 20,
            preempt_timeout: Duration::from_millis(20),
            watch_hw_queues: true,
        }
    }
}

/// A kernel-mode DMA buffer in flight.
#[derive(Clone, Debug)]
pub struct Packet {
    /// Fence ID.
    pub id: u32,
    /// `Flags.Paging`.
    pub paging: bool,
    /// The submitting device (`None`: the system context).
    pub device: Option<KmtHandle>,
    /// The KMD's context handle (0: system context).
    pub context_kmd: usize,
    /// Devices owning the allocations it references (paging: TDR-08).
    pub owners: Vec<KmtHandle>,
    /// The DMA buffer (contiguous system memory).
    pub dma: SysAlloc,
    /// Bytes of commands in it.
    pub bytes: u32,
}

#[derive(Debug, Default)]
pub(crate) struct NodeSched {
    pub next_id: u32,
    pub pending: BTreeMap<u32, Packet>,
    pub s: u32,
    pub c: u32,
    pub ignore_irq: bool,
    pub last_change: u64,
    pub hung: bool,
    pub faulted: Option<u32>,
    /// The fence of the `DmaFaulted` being recovered: that packet is dropped with its device
    /// in error, never resubmitted (it would fault again).
    pub faulted_fence: Option<u32>,
    pub preempt: Option<(u32, u64)>,
    pub preempted: Option<(u32, u32)>,
    /// Per hardware queue: (completed value last seen, when it last moved).
    pub watch: HashMap<KmtHandle, (u64, u64)>,
}

#[derive(Clone, Copy, Debug)]
enum Report {
    Completed(u32),
    Preempted(u32, u32),
    Faulted(u32),
    Hung,
}

/// The OS's TDR and kernel-mode scheduling state of one adapter.
#[derive(Debug)]
pub(crate) struct TdrOs {
    pub enabled: bool,
    pub step: bool,
    pub config: TdrConfig,
    pub start: Instant,
    pub rounds: u64,
    pub nodes: Vec<NodeSched>,
    isr: Vec<(u32, Report)>,
    pub events: Vec<TdrEvent>,
    pub reason: Option<TdrReason>,
    /// Every retired fence per node, in order (completions and reset retirements).
    pub completed: Vec<(u32, u32)>,
    /// `DxgkCbInvalidateHwContext` accepted now (inside `DxgkDdiResetEngine`).
    in_reset: Option<u32>,
    invalidated: Vec<KmtHandle>,
    pub resets: u64,
    pub adapter_resets: u64,
}

impl TdrOs {
    fn new() -> Self {
        Self {
            enabled: false,
            step: true,
            config: TdrConfig::default(),
            start: Instant::now(),
            rounds: 0,
            nodes: Vec::new(),
            isr: Vec::new(),
            events: Vec::new(),
            reason: None,
            completed: Vec::new(),
            in_reset: None,
            invalidated: Vec::new(),
            resets: 0,
            adapter_resets: 0,
        }
    }

    pub fn now(&self) -> u64 {
        if self.step {
            self.rounds
        } else {
            self.start.elapsed().as_millis() as u64
        }
    }

    fn timeout(&self) -> u64 {
        if self.step {
            self.config.timeout_steps
        } else {
            self.config.timeout.as_millis() as u64
        }
    }

    fn preempt_timeout(&self) -> u64 {
        if self.step {
            self.config.preempt_steps
        } else {
            self.config.preempt_timeout.as_millis() as u64
        }
    }

    pub fn node(&mut self, n: u32) -> &mut NodeSched {
        let i = n as usize;
        if self.nodes.len() <= i {
            self.nodes.resize_with(i + 1, || NodeSched {
                next_id: 1,
                ..NodeSched::default()
            });
        }
        &mut self.nodes[i]
    }
}

/// What a test's pause hook gets: the adapter's device (step it to reproduce TDR-07).
pub type PauseHook = Box<dyn FnMut(&Arc<Device>) + Send>;

/// Per-adapter TDR state with its locks.
pub(crate) struct TdrShared {
    pub os: Mutex<TdrOs>,
    pause: Mutex<Option<PauseHook>>,
    /// Kernel-mode submissions hold it shared; a recovery holds it exclusively.
    pub gate: RwLock<()>,
    /// VidSch's submission path: a fence ID is assigned and `DxgkDdiSubmitCommand` called
    /// under it, so IDs reach the driver in increasing order (taken after `gate`).
    pub submit: Mutex<()>,
    /// One recovery at a time.
    recovering: Mutex<()>,
}

type Key = (u64, usize);
/// Per (machine id, adapter index); an entry goes when its machine's state is gone (pruned
/// at the next registration), so the DMA buffers it holds do not outlive the machine.
type Registry = HashMap<Key, (Weak<crate::dxgkrnl::state::MachineState>, Arc<TdrShared>)>;
static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);
/// Registered adapters (a DPC of a machine that never used TDR or kernel-mode submission
/// does not even take the registry lock).
static REGISTERED: AtomicUsize = AtomicUsize::new(0);
static ENABLED: AtomicUsize = AtomicUsize::new(0);

fn key(a: &AdapterShared) -> Key {
    (a.state.id(), a.index)
}

/// The TDR state of `a`, created on first use.
pub(crate) fn shared(a: &AdapterShared) -> Arc<TdrShared> {
    let k = key(a);
    let mut g = lock(&REGISTRY);
    let r = g.get_or_insert_with(HashMap::new);
    if let Some((_, s)) = r.get(&k) {
        return s.clone();
    }
    r.retain(|_, (w, _)| w.strong_count() > 0);
    let s = Arc::new(TdrShared {
        os: Mutex::new(TdrOs::new()),
        pause: Mutex::new(None),
        gate: RwLock::new(()),
        submit: Mutex::new(()),
        recovering: Mutex::new(()),
    });
    r.insert(k, (Arc::downgrade(&a.state), s.clone()));
    REGISTERED.store(r.len(), Ordering::Release);
    s
}

fn existing(a: &AdapterShared) -> Option<Arc<TdrShared>> {
    if REGISTERED.load(Ordering::Acquire) == 0 {
        return None;
    }
    lock(&REGISTRY)
        .as_ref()
        .and_then(|r| r.get(&key(a)))
        .map(|(_, s)| s.clone())
}

// ---------------------------------------------------------------------------------------------
// ISR and DPC time.

/// Called by `DxgkCbNotifyInterrupt` (device IRQL, interrupt lock held) with a validated
/// report: node reports are captured for [`dpc_process`], or recorded as ignored while the
/// node's snapshot is taken.
pub(crate) fn isr_report(a: &AdapterShared, data: &DXGKARGCB_NOTIFY_INTERRUPT_DATA) {
    // SAFETY (all arms): `InterruptType` selects the union member the driver filled (already
    // validated by `decode`); every member is plain data.
    let (node, report, fence) = match data.InterruptType {
        DXGK_INTERRUPT_DMA_COMPLETED => {
            let d = unsafe { data.Anonymous.DmaCompleted };
            (
                d.NodeOrdinal,
                Report::Completed(d.SubmissionFenceId),
                d.SubmissionFenceId,
            )
        }
        DXGK_INTERRUPT_DMA_PREEMPTED => {
            let d = unsafe { data.Anonymous.DmaPreempted };
            (
                d.NodeOrdinal,
                Report::Preempted(d.PreemptionFenceId, d.LastCompletedFenceId),
                d.PreemptionFenceId,
            )
        }
        DXGK_INTERRUPT_DMA_FAULTED => {
            let d = unsafe { data.Anonymous.DmaFaulted };
            (
                d.NodeOrdinal,
                Report::Faulted(d.FaultedFenceId),
                d.FaultedFenceId,
            )
        }
        DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE => {
            let d = unsafe { data.Anonymous.EngineStateChange };
            if d.NewState != DXGK_ENGINE_STATE_HUNG {
                return;
            }
            (d.NodeOrdinal, Report::Hung, 0)
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
            fence,
        });
        return;
    }
    os.isr.push((node, report));
}

/// VidSch's DPC-time processing of the captured node reports (from `DxgkCbNotifyDpc`).
pub(crate) fn dpc_process(a: &AdapterShared) {
    let Some(sh) = existing(a) else { return };
    let mut os = lock(&sh.os);
    let reports = std::mem::take(&mut os.isr);
    let mut freed = Vec::new();
    for (node, r) in reports {
        let now = os.now();
        match r {
            Report::Completed(id) => {
                let n = os.node(node);
                if id > n.s || id < n.c {
                    let (c, s) = (n.c, n.s);
                    drop(os);
                    a.state.push_log(
                        rvgpu_kmd::platform::Level::Error,
                        format!("DmaCompleted({id}) on node {node} outside [C={c}, S={s}]"),
                    );
                    a.state.raise_bugcheck(BugCheck::video_scheduler(
                        vidsch::DRIVER_REPORTED_INVALID_FENCE_ID,
                        u64::from(id),
                        DXGK_INTERRUPT_DMA_COMPLETED as u32 as u64,
                        u64::from(node),
                    ));
                    return;
                }
                n.c = id;
                n.last_change = now;
                let done: Vec<u32> = n.pending.range(..=id).map(|(k, _)| *k).collect();
                for k in &done {
                    if let Some(p) = n.pending.remove(k) {
                        freed.push(p.dma.bus_addr);
                    }
                }
                os.completed.extend(done.iter().map(|k| (node, *k)));
            }
            Report::Preempted(id, last) => {
                let n = os.node(node);
                if last != n.c {
                    let c = n.c;
                    drop(os);
                    a.state.push_log(
                        rvgpu_kmd::platform::Level::Error,
                        format!(
                            "DmaPreempted({id}) on node {node}: LastCompletedFenceId {last} \
                             but the OS's last completed is {c}"
                        ),
                    );
                    a.state.raise_bugcheck(BugCheck::video_scheduler(
                        vidsch::DRIVER_REPORTED_INVALID_FENCE_ID,
                        u64::from(last),
                        DXGK_INTERRUPT_DMA_PREEMPTED as u32 as u64,
                        u64::from(node),
                    ));
                    return;
                }
                n.preempted = Some((id, last));
            }
            Report::Faulted(id) => os.node(node).faulted = Some(id),
            Report::Hung => os.node(node).hung = true,
        }
    }
    drop(os);
    let mem = a.device.memory();
    for b in freed {
        mem.free_system(b);
    }
}

// ---------------------------------------------------------------------------------------------
// DxgkCbInvalidateHwContext.

/// `DxgkCbInvalidateHwContext` (PASSIVE_LEVEL): accepted only while this adapter is inside
/// `DxgkDdiResetEngine`, for a context the OS knows (its kernel handle or the KMD's, Q2);
/// anything else is a simulation error naming the driver bug. The context's device goes to
/// error when the reset returns.
pub(crate) unsafe extern "system" fn cb_invalidate_hw_context(
    args: *const DXGKARGCB_INVALIDATEHWCONTEXT,
) -> NTSTATUS {
    let addr = cb_invalidate_hw_context as *const () as usize;
    if args.is_null() {
        // Dxgkrnl reads the argument block: a NULL pointer faults in the kernel.
        crate::dxgkrnl::kernel::raise(BugCheck::new(
            bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
            [0, 0, addr as u64, 0],
        ));
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: non-null pointer to the driver's argument block.
    let args = unsafe { args.read() };
    let Some(a) = AdapterShared::from_handle(args.hAdapter) else {
        let msg = format!(
            "driver bug: DxgkCbInvalidateHwContext with hAdapter = {:#x}, not the handle the \
             OS passed to DxgkDdiStartDevice",
            args.hAdapter as usize
        );
        match crate::dxgkrnl::kernel::current_machine() {
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
            "driver bug: DxgkCbInvalidateHwContext outside DxgkDdiResetEngine (docs/tdr.md §5.4)",
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
    let mut os = lock(&sh.os);
    os.invalidated.push(device);
    os.events.push(TdrEvent::Invalidated { device });
    STATUS_SUCCESS
}

// ---------------------------------------------------------------------------------------------
// The PASSIVE worker.

/// VidSch's TDR work for one adapter: detection, the preemption timer, recovery. Returns
/// whether it did anything. Step mode: called once per round (the round counter is the clock).
pub(crate) fn run_passive(a: &AdapterShared) -> bool {
    if ENABLED.load(Ordering::Acquire) == 0 || a.state.is_halted() {
        return false;
    }
    let Some(sh) = existing(a) else { return false };
    let Ok(_one) = sh.recovering.try_lock() else {
        return false;
    };
    let mut os = lock(&sh.os);
    if !os.enabled {
        return false;
    }
    if os.step {
        os.rounds += 1;
    }
    let now = os.now();
    let timeout = os.timeout();
    let preempt_timeout = os.preempt_timeout();
    let watch = os.config.watch_hw_queues;
    drop(os);
    let queues = if watch {
        ums::tdr_queues(a)
    } else {
        Vec::new()
    };
    let mut os = lock(&sh.os);
    let nodes = lock(&a.caps).map_or(0, |c| c.GpuEngineTopology.NbAsymetricProcessingNodes);
    for node in 0..nodes {
        let n = os.node(node);
        // A pending preemption: acknowledged, or timed out.
        if let Some((id, since)) = n.preempt {
            if let Some((pid, last)) = n.preempted.take() {
                if pid == id {
                    n.preempt = None;
                    n.last_change = now;
                    os.events.push(TdrEvent::Preempted {
                        node,
                        fence: id,
                        last_completed: last,
                    });
                    return true;
                }
            }
            if now.saturating_sub(since) >= preempt_timeout {
                n.preempt = None;
                drop(os);
                let _ = recover_node(a, &sh, node, None);
                return true;
            }
            continue;
        }
        // Triggers.
        let mut cause = None;
        if let Some(f) = n.faulted.take() {
            n.faulted_fence = Some(f);
            cause = Some(Cause::Faulted { fence: f });
        } else if std::mem::take(&mut n.hung) {
            cause = Some(Cause::EngineHung);
        } else if n.s > n.c && now.saturating_sub(n.last_change) >= timeout {
            cause = Some(Cause::DmaTimeout);
        } else {
            for q in queues.iter().filter(|q| q.node == node) {
                let busy = !q.suspended && !q.device_in_error && q.last_queued > q.completed;
                let e = n.watch.entry(q.handle).or_insert((q.completed, now));
                if !busy || e.0 != q.completed {
                    *e = (q.completed, now);
                    continue;
                }
                if now.saturating_sub(e.1) >= timeout {
                    *e = (q.completed, now);
                    cause = Some(Cause::HwQueueStalled { queue: q.handle });
                    break;
                }
            }
        }
        let Some(cause) = cause else { continue };
        os.events.push(TdrEvent::Detected { node, cause });
        let n = os.node(node);
        if n.s > n.c {
            // Preemption attempt (step 2) with a new fence ID, in submission order (under
            // the submission lock, taken before the state lock).
            drop(os);
            let _order = lock(&sh.submit);
            let mut os = lock(&sh.os);
            let n = os.node(node);
            let id = n.next_id;
            n.next_id = n.next_id.wrapping_add(1).max(1);
            n.preempt = Some((id, now));
            n.preempted = None;
            os.events
                .push(TdrEvent::PreemptRequested { node, fence: id });
            drop(os);
            let _ = preempt(a, node, id);
            return true;
        }
        drop(os);
        let stalled = match cause {
            Cause::HwQueueStalled { queue } => Some(queue),
            _ => None,
        };
        let _ = recover_node(a, &sh, node, stalled.or(Some(0)));
        return true;
    }
    false
}

fn preempt(a: &AdapterShared, node: u32, id: u32) -> Result<(), SimError> {
    let f = table(a)?
        .DxgkDdiPreemptCommand
        .ok_or_else(|| sim_err(a, "no DxgkDdiPreemptCommand".into()))?;
    let args = DXGKARG_PREEMPTCOMMAND {
        PreemptionFenceId: id,
        NodeOrdinal: node,
        EngineOrdinal: 0,
        Flags: DXGK_PREEMPTCOMMANDFLAGS::default(),
    };
    let ctx = a.context();
    let status = ddi::call(
        a,
        Routine::DxgkDdiPreemptCommand,
        f as usize,
        At::Level(Irql::Dispatch),
        || {
            // SAFETY: the driver's DDI with its context and a valid argument block.
            unsafe { f(ctx, &args) }
        },
    )?;
    if !NT_SUCCESS(status) {
        let b = BugCheck::video_scheduler(
            vidsch::DRIVER_SUBMIT_FAILED,
            status as u32 as u64,
            u64::from(node),
            u64::from(id),
        );
        a.state.raise_bugcheck(b);
        return Err(SimError::Bugcheck(b));
    }
    Ok(())
}

/// `DxgkDdiCollectDbgInfo(reason)` at PASSIVE with a 4 KiB buffer and a guard after it.
fn collect_dbg_info(a: &AdapterShared, sh: &TdrShared, reason: u32) -> Result<(), SimError> {
    // A WDDM KMD must implement it; skipping it would hide a missing DDI from every TDR test.
    let f = table(a)?.DxgkDdiCollectDbgInfo.ok_or_else(|| {
        sim_err(
            a,
            format!("driver bug: TDR ({reason:#x}) but the driver has no DxgkDdiCollectDbgInfo"),
        )
    })?;
    const SIZE: usize = 4096;
    const GUARD: u8 = 0xA5;
    let mut buf = vec![GUARD; SIZE + 64];
    let mut ext = DXGKARG_COLLECTDBGINFO_EXT::default();
    let args = DXGKARG_COLLECTDBGINFO {
        Reason: reason,
        pBuffer: buf.as_mut_ptr().cast(),
        BufferSize: SIZE,
        pExtension: &mut ext,
    };
    let ctx = a.context();
    let status = ddi::call(
        a,
        Routine::DxgkDdiCollectDbgInfo,
        f as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with its context and a buffer of BufferSize bytes.
            unsafe { f(ctx, &args) }
        },
    )?;
    if buf[SIZE..].iter().any(|b| *b != GUARD) {
        return Err(sim_err(
            a,
            format!("driver bug: DxgkDdiCollectDbgInfo({reason:#x}) wrote past BufferSize"),
        ));
    }
    let bytes = if NT_SUCCESS(status) {
        buf[..SIZE].iter().position(|b| *b == 0).unwrap_or(SIZE)
    } else {
        0
    };
    lock(&sh.os)
        .events
        .push(TdrEvent::CollectDbgInfo { reason, bytes });
    Ok(())
}

/// Waits until no DPC of the adapter is queued or running (`KeFlushQueuedDpcs`), without
/// closing its gate. Step mode: runs queued DPCs inline.
fn flush_dpcs(a: &AdapterShared, step: bool) -> Result<(), SimError> {
    if step {
        for _ in 0..10_000 {
            if !crate::dxgkrnl::interrupt::service_dpc(a) {
                break;
            }
        }
        if !a.state.is_halted() && a.dpc_queued.load(Ordering::Acquire) {
            return Err(sim_err(
                a,
                format!("adapter {}: TDR: the DPC keeps queueing itself", a.index),
            ));
        }
        return Ok(());
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if !a.dpc_queued.load(Ordering::Acquire) {
            if let Ok(g) = a.dpc_gate.try_lock() {
                if !a.dpc_queued.load(Ordering::Acquire) {
                    drop(g);
                    return Ok(());
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(sim_err(
                a,
                "TDR: the DPC flush did not finish in 5 s".into(),
            ));
        }
        a.wake.notify();
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// The TDR-05 sequence for `node` from the preemption timeout on. `stalled`: the hardware
/// queue that timed out (`Some(0)`: a hang report without a known queue; `None`: a DMA
/// timeout).
pub(crate) fn recover_node(
    a: &AdapterShared,
    sh: &TdrShared,
    node: u32,
    stalled: Option<KmtHandle>,
) -> Result<(), SimError> {
    let step = lock(&sh.os).step;
    lock(&sh.os).events.push(TdrEvent::Timeout { node });
    // Step 3.
    collect_dbg_info(a, sh, VIDEO_ENGINE_TIMEOUT_DETECTED)?;
    // Gate kernel-mode submissions for the whole recovery.
    let _gate = sh.gate.write().unwrap_or_else(|p| p.into_inner());
    // Step 4: the snapshot at device IRQL.
    let (s_snap, c_snap) = {
        let _il = lock(&a.interrupt_lock);
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
    };
    // Step 5.
    let queue_work = ums::tdr_queues(a).iter().any(|q| {
        q.node == node && !q.suspended && !q.device_in_error && q.last_queued > q.completed
    });
    if s_snap == c_snap && !queue_work {
        let mut os = lock(&sh.os);
        os.node(node).ignore_irq = false;
        os.events.push(TdrEvent::NothingToReset { node });
        return Ok(());
    }
    // Step 6.
    flush_dpcs(a, step)?;
    lock(&sh.os).events.push(TdrEvent::DpcFlushed { node });
    // Step 7.
    let t = table(a)?;
    let ctx = a.context();
    let nodes = lock(&a.caps).map_or(1, |c| c.GpuEngineTopology.NbAsymetricProcessingNodes);
    let qdeg = t
        .DxgkDdiQueryDependentEngineGroup
        .ok_or_else(|| sim_err(a, "TDR without DxgkDdiQueryDependentEngineGroup".into()))?;
    let mut g = DXGKARG_QUERYDEPENDENTENGINEGROUP {
        NodeOrdinal: node,
        EngineOrdinal: 0,
        DependentNodeOrdinalMask: 0,
    };
    let st = ddi::call(
        a,
        Routine::DxgkDdiQueryDependentEngineGroup,
        qdeg as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with its context and a valid argument block.
            unsafe { qdeg(ctx, &mut g) }
        },
    )?;
    let mask = g.DependentNodeOrdinalMask;
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
    if let Some(qes) = t.DxgkDdiQueryEngineStatus {
        let mut q = DXGKARG_QUERYENGINESTATUS {
            NodeOrdinal: node,
            EngineOrdinal: 0,
            EngineStatus: DXGK_ENGINESTATUS::default(),
        };
        let st = ddi::call(
            a,
            Routine::DxgkDdiQueryEngineStatus,
            qes as usize,
            At::Level(Irql::Passive),
            || {
                // SAFETY: the driver's DDI with its context and a valid argument block.
                unsafe { qes(ctx, &mut q) }
            },
        )?;
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
    // The test's pause (TDR-07).
    let hook = lock(&sh.pause).take();
    if let Some(mut h) = hook {
        h(&a.device);
        lock(&sh.os).events.push(TdrEvent::Paused { node });
        *lock(&sh.pause) = Some(h);
        if step {
            // Interrupts keep arriving while VidSch prepares the reset (threaded mode: the
            // interrupt thread): the node's reports are recorded as ignored.
            for _ in 0..1000 {
                if !matches!(
                    crate::dxgkrnl::interrupt::service_interrupt(a, false),
                    crate::dxgkrnl::interrupt::Serviced::Ran(_)
                ) {
                    break;
                }
            }
            while crate::dxgkrnl::interrupt::service_dpc(a) {}
        }
    }
    // Step 8: ResetEngine for each node of the mask, in ordinal order (only with
    // SupportPerEngineTDR; otherwise the adapter-wide path).
    let per_engine = lock(&a.caps).is_some_and(|c| c.SupportPerEngineTDR != 0);
    let (Some(reset), true) = (t.DxgkDdiResetEngine, per_engine) else {
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
        let st = ddi::call(
            a,
            Routine::DxgkDdiResetEngine,
            reset as usize,
            At::Level(Irql::Passive),
            || {
                // SAFETY: the driver's DDI with its context and a valid argument block.
                unsafe { reset(ctx, &mut r) }
            },
        );
        let invalidated = {
            let mut os = lock(&sh.os);
            os.in_reset = None;
            std::mem::take(&mut os.invalidated)
        };
        let st = st?;
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
            // §3.4 step 6: the node ring (the descriptor above every hardware-queue priority)
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
                         holds work (docs/tdr.md §3.4 step 6)"
                    ),
                ));
            }
            if e.held || e.state == EngineState::Resetting {
                return Err(sim_err(
                    a,
                    format!(
                        "driver bug: after DxgkDdiResetEngine(node {rn}) the engine is {:?}, \
                         held {} (docs/tdr.md §3.4 step 6)",
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
                freed.push(p.dma.bus_addr);
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
            freed.push(p.dma.bus_addr);
        }
        drop(os);
        for b in freed {
            a.device.memory().free_system(b);
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
                a.device.memory().free_system(p.dma.bus_addr);
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

fn invalidated_none_and_stalled(errored: &BTreeSet<KmtHandle>, stalled: Option<KmtHandle>) -> bool {
    errored.is_empty() && stalled.is_some()
}

fn error_devices(
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

/// The adapter-wide path (docs/tdr.md §5.3). `extra`: devices to put in error besides those
/// with outstanding work (TDR-08's owners).
pub(crate) fn adapter_reset(
    a: &AdapterShared,
    sh: &TdrShared,
    reason: TdrReason,
    extra: &[KmtHandle],
) -> Result<(), SimError> {
    collect_dbg_info(a, sh, VIDEO_TDR_TIMEOUT_DETECTED)?;
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
        let rft = t
            .DxgkDdiResetFromTimeout
            .ok_or_else(|| fail(0, STATUS_NOT_SUPPORTED))?;
        let st = ddi::call(
            a,
            Routine::DxgkDdiResetFromTimeout,
            rft as usize,
            At::Level(Irql::Passive),
            || {
                // SAFETY: the driver's DDI with its context.
                unsafe { rft(ctx) }
            },
        )?;
        if !NT_SUCCESS(st) {
            return Err(fail(rft as usize, st));
        }
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
                    freed.push((i as u32, p.id, p.dma.bus_addr));
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
            a.device.memory().free_system(b);
        }
        for q in ums::tdr_queues(a) {
            if !q.device_in_error && q.last_queued > q.completed {
                errored.insert(q.device);
            }
        }
        let rst = t
            .DxgkDdiRestartFromTimeout
            .ok_or_else(|| fail(0, STATUS_NOT_SUPPORTED))?;
        let st = ddi::call(
            a,
            Routine::DxgkDdiRestartFromTimeout,
            rst as usize,
            At::Level(Irql::Passive),
            || {
                // SAFETY: the driver's DDI with its context.
                unsafe { rst(ctx) }
            },
        )?;
        if !NT_SUCCESS(st) {
            return Err(fail(rst as usize, st));
        }
        let mut os = lock(&sh.os);
        os.events.push(TdrEvent::Restarted);
        os.adapter_resets += 1;
        os.reason = Some(reason);
        let now = os.now();
        for n in os.nodes.iter_mut() {
            n.last_change = now;
        }
    }
    error_devices(a, sh, &errored)
}

/// TDR-01: `SupportPerEngineTDR` set with any of the four per-engine DDIs null fails the
/// adapter start (the OS would call a null pointer).
pub(crate) fn validate_caps(
    caps: &rvgpu_ddi::adapter::DXGK_DRIVERCAPS,
    t: &DRIVER_INITIALIZATION_DATA,
) -> Result<(), String> {
    if caps.SupportPerEngineTDR == 0 {
        return Ok(());
    }
    let missing: Vec<&str> = [
        (
            "DxgkDdiQueryDependentEngineGroup",
            t.DxgkDdiQueryDependentEngineGroup.is_some(),
        ),
        (
            "DxgkDdiQueryEngineStatus",
            t.DxgkDdiQueryEngineStatus.is_some(),
        ),
        ("DxgkDdiResetEngine", t.DxgkDdiResetEngine.is_some()),
        ("DxgkDdiCollectDbgInfo", t.DxgkDdiCollectDbgInfo.is_some()),
    ]
    .into_iter()
    .filter(|(_, ok)| !ok)
    .map(|(n, _)| n)
    .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "SupportPerEngineTDR = 1 without {} (TDR-01)",
            missing.join(", ")
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Test-facing API.

impl Machine {
    /// Turns TDR on for adapter `i` with `config` (off by default, see the module doc).
    pub fn enable_tdr(&self, i: usize, config: TdrConfig) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?;
        let sh = shared(a);
        let mut os = lock(&sh.os);
        if !os.enabled {
            ENABLED.fetch_add(1, Ordering::AcqRel);
        }
        os.enabled = true;
        os.step = self.config().mode == Mode::Step;
        os.config = config;
        let now = os.now();
        for n in os.nodes.iter_mut() {
            n.last_change = now;
        }
        Ok(())
    }

    /// Every TDR step on adapter `i`, in order.
    pub fn tdr_events(&self, i: usize) -> Vec<TdrEvent> {
        self.adapter_shared(i)
            .map(|a| lock(&shared(a).os).events.clone())
            .unwrap_or_default()
    }

    /// The reason of the last recovery on adapter `i` (TDR-09: 9 after a promotion).
    pub fn tdr_reason(&self, i: usize) -> Option<TdrReason> {
        self.adapter_shared(i)
            .ok()
            .and_then(|a| lock(&shared(a).os).reason)
    }

    /// (engine resets, adapter resets) recovered on adapter `i`.
    pub fn tdr_counts(&self, i: usize) -> (u64, u64) {
        self.adapter_shared(i).map_or((0, 0), |a| {
            let sh = shared(a);
            let os = lock(&sh.os);
            (os.resets, os.adapter_resets)
        })
    }

    /// A hook the TDR sequence runs between the snapshot and `DxgkDdiResetEngine` (after the
    /// DPC flush and the dependent-group query): TDR-07 steps the device in it.
    pub fn set_tdr_pause(
        &self,
        i: usize,
        hook: Option<impl FnMut(&Arc<Device>) + Send + 'static>,
    ) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?;
        *lock(&shared(a).pause) = hook.map(|h| Box::new(h) as PauseHook);
        Ok(())
    }

    /// `DxgkDdiQueryDependentEngineGroup(node)` at PASSIVE_LEVEL (TDR-02).
    pub fn query_dependent_engine_group(&self, i: usize, node: u32) -> Result<u64, SimError> {
        let a = self.adapter_shared(i)?.clone();
        let f = table(&a)?
            .DxgkDdiQueryDependentEngineGroup
            .ok_or(SimError::DdiFailed(STATUS_NOT_SUPPORTED))?;
        let mut g = DXGKARG_QUERYDEPENDENTENGINEGROUP {
            NodeOrdinal: node,
            EngineOrdinal: 0,
            DependentNodeOrdinalMask: 0,
        };
        let ctx = a.context();
        let st = ddi::call(
            &a,
            Routine::DxgkDdiQueryDependentEngineGroup,
            f as usize,
            At::Level(Irql::Passive),
            || {
                // SAFETY: the driver's DDI with its context and a valid argument block.
                unsafe { f(ctx, &mut g) }
            },
        )?;
        check_status(st)?;
        Ok(g.DependentNodeOrdinalMask)
    }

    /// `DxgkDdiCollectDbgInfo(reason)` at PASSIVE_LEVEL from the calling thread (TDR-01's
    /// level-0 test runs it beside other DDIs); returns the text up to the first NUL.
    pub fn collect_dbg_info(&self, i: usize, reason: u32) -> Result<String, SimError> {
        let a = self.adapter_shared(i)?.clone();
        let f = table(&a)?
            .DxgkDdiCollectDbgInfo
            .ok_or(SimError::DdiFailed(STATUS_NOT_SUPPORTED))?;
        let mut buf = vec![0u8; 4096];
        let mut ext = DXGKARG_COLLECTDBGINFO_EXT::default();
        let args = DXGKARG_COLLECTDBGINFO {
            Reason: reason,
            pBuffer: buf.as_mut_ptr().cast(),
            BufferSize: buf.len(),
            pExtension: &mut ext,
        };
        let ctx = a.context();
        let st = ddi::call(
            &a,
            Routine::DxgkDdiCollectDbgInfo,
            f as usize,
            At::Level(Irql::Passive),
            || {
                // SAFETY: the driver's DDI with its context and a buffer of BufferSize bytes.
                unsafe { f(ctx, &args) }
            },
        )?;
        check_status(st)?;
        let n = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    /// Runs the TDR sequence on `node` now, as if its timeout had expired (no preemption
    /// attempt). For tests of the sequence itself.
    pub fn force_tdr(&self, i: usize, node: u32) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?.clone();
        let sh = shared(&a);
        let _one = lock(&sh.recovering);
        lock(&sh.os).events.push(TdrEvent::Detected {
            node,
            cause: Cause::DmaTimeout,
        });
        let r = recover_node(&a, &sh, node, None);
        match self.fault() {
            Some(f) => Err(f),
            None => r,
        }
    }
}
