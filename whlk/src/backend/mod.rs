//! Backends: what the cases run against.
//!
//! A case never talks to the simulated OS directly: it opens a [`Session`] (one machine with
//! its adapters, fresh for each case) on a [`Backend`] and uses the abstract adapter API below.
//! The default backend is [`sim::SimBackend`], the emulated GPU under the simulated OS. A
//! Windows backend (the installed driver through D3DKMT) implements the same traits; what it
//! cannot do (fault injection into the kernel, stepping the device, reading a bug check that
//! rebooted the machine) it reports as [`Failure::Unsupported`], and the runner turns that into
//! a skip with the reason.
//!
//! User-mode submission (issue 6) is in the same trait: processes, buffers, queues made by the
//! UMD's submission core (`rvgpu_umd::submit`: `UserQueue`, `KernelQueue`), batches of
//! [`Work`], doorbell status, and the OS-side events a case provokes (suspend, F1, D3, exits,
//! device loss). The simulated backend runs the real UMD through `rvgpu_simos::kmt::SimKmt`; a
//! Windows backend would run the same UMD over `kmt_windows`. What only a simulation can do
//! (suspend a process, force D3 or a device loss, read the doorbell mapping, the runlist, ring
//! residency or the OS's event trace) says so on the method; cases leave out the checks whose
//! observation is unsupported where the rest still proves something.
//!
//! Timeout detection and recovery (issue 7) is in the same trait: kernel-mode contexts and DMA
//! buffers (`DxgkDdiSubmitCommand`), the HANG packet ([`Work::Hang`]), and observations of the
//! OS's recovery. Submitting work, hanging an engine with a HANG packet and seeing the guilty
//! device refused while other work completes could run on Windows through D3DKMT; injecting
//! faults (hangs mid-buffer, failing resets, paging, a forced TDR, the TDR-07 pause), calling
//! TDR DDIs directly and reading VidSch's fence IDs or recovery steps are simulation only.

pub mod sim;
mod sim_kmt;

use std::fmt;
use std::time::Duration;

/// How the simulated device and OS run. A real backend ignores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecMode {
    /// Device CMP thread, interrupt thread, DPC thread: real concurrency.
    Threaded,
    /// Everything on the calling thread, deterministic.
    Step,
}

/// A misbehaving driver the simulation can run in place of parts of the real one, to prove
/// that the OS side catches what Windows catches. Only simulation backends support these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misbehaviour {
    /// The ISR reports `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` naming a native fence handle the
    /// OS never handed out.
    IsrReportsUnknownFenceHandle,
    /// The ISR calls a PASSIVE_LEVEL callback (`DxgkCbAllocateContiguousMemory`) at DIRQL.
    IsrCallsPassiveCallback,
    /// `DxgkDdiResetEngine` adds this to the `LastAbortedFenceId` the real routine reports
    /// (TDR-06: `+1` after a hang of the last packet is S + 1, `-1` after a hardware-queue
    /// hang is C − 1). Process-wide in the simulation: sessions using it run one at a time.
    ResetEngineMisreportsAbortedFence(i32),
    /// The driver's table lacks `DxgkDdiResetEngine` while its caps say
    /// `SupportPerEngineTDR` (TDR-01: the OS must refuse the start).
    NoResetEngineDdi,
}

/// What a case needs from a session.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// Threaded or step.
    pub mode: ExecMode,
    /// Number of adapters.
    pub adapters: usize,
    /// Whether the OS enables `DXGK_FEATURE_NATIVE_FENCE` (NF-10).
    pub native_fence_feature: bool,
    /// GPU ticks of idleness after which an engine requests F1 (0 = never).
    pub idle_f1_ticks: u64,
    /// Replace part of the driver with a misbehaving one.
    pub misbehaviour: Option<Misbehaviour>,
    /// With two adapters: the first (the iGPU) has no native fences (NF-18 scenarios 2a/2b).
    pub legacy_igpu: bool,
    /// Physical doorbells of each adapter's device (`None`: the device's default). Fewer
    /// doorbells than user-mode queues forces victimisation (UM-20).
    pub doorbells: Option<u32>,
    /// The device's global doorbell mode: every queue rings one shared doorbell with its
    /// queue id (UM-21).
    pub global_doorbell: bool,
    /// Entries of every native fence log the OS creates (`None`: the OS's default, 84; a
    /// small number forces overflows, LOG-05).
    pub log_entries: Option<u64>,
    /// Engines (= nodes) of each adapter's device (`None`: the device's default, 2; TDR-02).
    pub engines: Option<u32>,
    /// Whether the device has `CAPS.PER_ENGINE_RESET` (`None`: the default, yes; TDR-01,
    /// TDR-09 without per-engine reset).
    pub per_engine_reset: Option<bool>,
}

impl SessionConfig {
    /// One adapter, step mode, native fences enabled, no idle power requests.
    pub fn new(mode: ExecMode) -> Self {
        Self {
            mode,
            adapters: 1,
            native_fence_feature: true,
            idle_f1_ticks: 0,
            misbehaviour: None,
            legacy_igpu: false,
            doorbells: None,
            global_doorbell: false,
            log_entries: None,
            engines: None,
            per_engine_reset: None,
        }
    }
}

/// A bug check as the backend saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BugCheckInfo {
    /// Stop code.
    pub code: u32,
    /// Parameters 1..4.
    pub params: [u64; 4],
}

impl fmt::Display for BugCheckInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.params;
        write!(
            f,
            "bug check {:#x} ({a:#x}, {b:#x}, {c:#x}, {d:#x})",
            self.code
        )
    }
}

/// Why a session operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The machine bug-checked.
    BugCheck(BugCheckInfo),
    /// A DDI returned an error NTSTATUS.
    DdiFailed(i32),
    /// The backend itself failed (simulation error, I/O...).
    Backend(String),
    /// The backend cannot do this (the case is skipped).
    Unsupported(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BugCheck(b) => write!(f, "{b}"),
            Self::DdiFailed(s) => write!(f, "DDI failed with NTSTATUS {:#010x}", *s as u32),
            Self::Backend(m) => write!(f, "backend error: {m}"),
            Self::Unsupported(m) => write!(f, "unsupported by this backend: {m}"),
        }
    }
}

/// What adapter start reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartedAdapter {
    /// Video present sources (0 for a render-only adapter).
    pub sources: u32,
    /// Children (0 for a render-only adapter).
    pub children: u32,
}

/// The parts of `DXGK_DRIVERCAPS` cases check, backend-neutral.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverCaps {
    /// `SchedulingCaps.MultiEngineAware`.
    pub multi_engine_aware: bool,
    /// `SchedulingCaps.NativeGpuFence`.
    pub native_gpu_fence: bool,
    /// `SchedulingCaps.No64BitAtomics`.
    pub no_64bit_atomics: bool,
    /// `GpuEngineTopology.NbAsymetricProcessingNodes`.
    pub nodes: u32,
    /// `SupportPerEngineTDR`.
    pub per_engine_tdr: bool,
    /// `InterruptMessageNumber`.
    pub interrupt_message_number: u32,
    /// `MemoryManagementCaps.PagingNode`.
    pub paging_node: u32,
}

/// An engine state change the OS processed (`DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE`, UM-13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineStateChange {
    /// Node ordinal.
    pub node: u32,
    /// Engine ordinal.
    pub engine: u32,
    /// `DXGK_ENGINE_STATE` value.
    pub new_state: i32,
}

/// A native-fence instance a session handed out (one process's handle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FenceRef(pub usize);

/// A GPU queue a session set up for fence work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueueRef(pub usize);

/// A legacy monitored fence a session handed out (MF-01).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MonitoredRef(pub usize);

/// A pending CPU wait in event form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventRef(pub usize);

/// How a CPU wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitResult {
    /// The value was reached.
    Satisfied,
    /// Timed out (step mode: the machine went idle without reaching it).
    TimedOut,
    /// The fence was destroyed while waiting.
    Abandoned,
}

/// A native fence's values as the CPU reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FenceValues {
    /// CurrentValue.
    pub current: u64,
    /// MonitoredValue.
    pub monitored: u64,
}

// ---------------------------------------------------------------------------------------------
// User-mode submission (issue 6, UM-01 … UM-22).

/// A process a session opened: one D3D device on one adapter (`D3DKMTCreateDevice`; the
/// simulation gives each its own process id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcessRef(pub usize);

/// A GPU-visible buffer of a process, readable and writable by the CPU (an allocation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferRef(pub usize);

/// A hardware queue created through the UMD's submission core (`rvgpu_umd::submit`): a
/// `UserQueue` (context, user-mode queue, ring, doorbell, kernel-mode fallback) or a
/// `KernelQueue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UmQueueRef(pub usize);

/// How a queue submits: its own ring and doorbell, or `D3DKMTSubmitCommandToHwQueue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitPath {
    /// User-mode queue: ring + doorbell (UM-16).
    UserMode,
    /// Kernel-mode queue, or a user-mode queue after its UM-19 fallback.
    KernelMode,
}

/// One GPU operation of a batch, in terms of the process's buffers (the device's FILL, COPY
/// and FENCE_WAIT packets; a real backend encodes the same packets through the same UMD).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// Fill `bytes` (multiple of 8) at `offset` of `dst` with `pattern`.
    Fill {
        /// Buffer.
        dst: BufferRef,
        /// Byte offset.
        offset: u64,
        /// Length.
        bytes: u64,
        /// 64-bit pattern.
        pattern: u64,
    },
    /// Copy `bytes` (multiple of 8, ranges disjoint) between buffers.
    Copy {
        /// Source buffer.
        src: BufferRef,
        /// Source offset.
        src_offset: u64,
        /// Destination buffer.
        dst: BufferRef,
        /// Destination offset.
        dst_offset: u64,
        /// Length.
        bytes: u64,
    },
    /// The queue waits until the u64 at `offset` of `buffer` is at least `value`.
    WaitAtLeast {
        /// Buffer.
        buffer: BufferRef,
        /// Byte offset.
        offset: u64,
        /// Value.
        value: u64,
    },
    /// The device's HANG packet: the engine stops at it and reports itself hung; only a reset
    /// gets past it (TDR cases). A real backend encodes the same packet through the same UMD.
    Hang,
}

/// A doorbell's status page (`D3DDDI_DOORBELLSTATUS`) as the UMD reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoorbellStatus {
    /// `CONNECTED`.
    Connected,
    /// `CONNECTED_NOTIFY_KMD`.
    ConnectedNotify,
    /// `DISCONNECTED_RETRY`.
    DisconnectedRetry,
    /// `DISCONNECTED_ABORT`.
    DisconnectedAbort,
    /// Anything else.
    Other(i32),
}

impl DoorbellStatus {
    /// Connected (with or without notify).
    pub fn is_connected(self) -> bool {
        matches!(self, Self::Connected | Self::ConnectedNotify)
    }
}

/// What the UMD knows of a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UmQueueInfo {
    /// The path submissions take now.
    pub path: SubmitPath,
    /// The queue is unusable (device removed, UM-10): recreate it.
    pub lost: bool,
    /// Last progress value submitted.
    pub last_submitted: u64,
    /// Highest progress value known complete.
    pub completed: u64,
    /// The device's queue id (from the KMD's private data).
    pub queue_id: u32,
    /// Whether the queue is in its engine's runlist now (`None`: the backend cannot see
    /// runlists; a Windows backend cannot).
    pub scheduled: Option<bool>,
}

/// What the adapter reported for user-mode submission at start (UM-03, UM-04).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubmissionCaps {
    /// Per node: `DXGK_NODEMETADATA::Flags.UserModeSubmission`.
    pub user_mode_nodes: Vec<bool>,
    /// `DXGK_USERMODESUBMISSION_CAPS::DoorbellSizeInBytes`, if answered.
    pub doorbell_size: Option<u32>,
}

/// Adapter power as the OS drove it (UM-13, UM-14).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerStatus {
    /// The adapter is in D3.
    pub d3: bool,
    /// Per node: its power component's F-state (0 = F0).
    pub node_fstates: Vec<u32>,
}

/// How a process ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessEnd {
    /// Normal exit (UM-17): per queue disconnect, wait for the last queued value, destroy.
    Normal,
    /// Abnormal exit (UM-18): device in error, contexts suspended, no waiting.
    Abnormal,
}

/// A device loss (UM-10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceLoss {
    /// Every doorbell is aborted (`DISCONNECTED_ABORT`); the adapter keeps running, so the
    /// kernel-mode path still works.
    DoorbellsAborted,
    /// The device is removed: doorbells aborted, every D3D device in error, progress fences
    /// released; processes must recreate everything.
    Removed,
}

/// One OS step of user-mode submission, in order (the simulated Dxgkrnl's record; queues
/// named by the session's refs where the object belongs to one, `None` otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OsEvent {
    /// `DxgkDdiCreateDoorbell`.
    CreateDoorbell { queue: Option<UmQueueRef> },
    /// `DxgkDdiConnectDoorbell` succeeded: the doorbell VA maps physical doorbell `page`.
    Connect {
        queue: Option<UmQueueRef>,
        page: u32,
    },
    /// `DxgkDdiConnectDoorbell` failed.
    ConnectFailed {
        queue: Option<UmQueueRef>,
        status: i32,
    },
    /// The KMD called `DxgkCbDisconnectDoorbell` (victimisation).
    VictimCallback {
        queue: Option<UmQueueRef>,
        reason: DoorbellStatus,
    },
    /// The OS called `DxgkDdiDisconnectDoorbell` (F1, D3, exit, device loss).
    OsDisconnect {
        queue: Option<UmQueueRef>,
        reason: DoorbellStatus,
    },
    /// `DxgkDdiNotifyWorkSubmission`.
    Notify { queue: Option<UmQueueRef> },
    /// `DxgkDdiSubmitCommandToHwQueue`.
    KernelSubmit {
        queue: Option<UmQueueRef>,
        value: u64,
    },
    /// Normal exit waited for the queue's last queued progress value.
    WaitedIdle {
        queue: Option<UmQueueRef>,
        value: u64,
    },
    /// `DxgkDdiDestroyDoorbell`.
    DestroyDoorbell { queue: Option<UmQueueRef> },
    /// `DxgkDdiDestroyHwQueue`.
    DestroyHwQueue { queue: Option<UmQueueRef> },
    /// An allocation's memory was freed.
    FreeAllocation,
    /// `DxgkDdiSuspendContext` (of the context behind `queue`).
    SuspendContext { queue: Option<UmQueueRef> },
    /// `DxgkDdiResumeContext`.
    ResumeContext { queue: Option<UmQueueRef> },
    /// `DxgkDdiDestroyContext`.
    DestroyContext { queue: Option<UmQueueRef> },
    /// `DxgkDdiSetPowerState` to D3 (`true`) or D0.
    SetPowerState { d3: bool },
    /// A node's power component changed F-state.
    SetFState { node: u32, fstate: u32 },
    /// An engine-state change the OS processed.
    EngineState { node: u32, state: i32 },
    /// The process's device was marked in error.
    DeviceError { process: Option<ProcessRef> },
    /// `DxgkDdiDestroyDevice`.
    DestroyDevice { process: Option<ProcessRef> },
    /// Any other step (creation of devices, contexts, queues; aborts of idle doorbells).
    Other,
}

// ---------------------------------------------------------------------------------------------
// Native fence logs and the GPU timeline (issue 5, LOG-01 … LOG-09, docs/logs.md §6.4).

/// A native fence a process made through the UMD (`Kmt::create_native_fence`): its D3DKMT
/// handle is what the queue's LOG_WRITEs record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UmFenceRef(pub usize);

/// One item of a batch for [`Session::submit_fence_ops`] (the UMD's `fencelog::Op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FenceWork {
    /// A packet.
    Work(Work),
    /// GPU signal of the fence to the value (conditional interrupt), logged in the signal log.
    Signal(UmFenceRef, u64),
    /// GPU wait until the fence reaches the value, logged in the wait log.
    Wait(UmFenceRef, u64),
}

/// Which log of a hardware queue.
pub use crate::timeline::OpKind as LogKind;

/// A hardware queue's logs as the OS set them (LOG-01, LOG-09): entries of each, `None` when
/// the log is not set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueLogs {
    /// The wait log's `NumberOfEntries`.
    pub wait_entries: Option<u64>,
    /// The signal log's `NumberOfEntries`.
    pub signal_entries: Option<u64>,
}

/// What the OS counted of its log drains on one adapter (docs/logs.md §4.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogCounters {
    /// DPC-time drains that read at least one header.
    pub drains: u64,
    /// Entries read and validated.
    pub entries_read: u64,
    /// `DxgkDdiUpdateNativeFenceLogs` calls (LOG-07).
    pub update_calls: u64,
    /// Overflows detected (LOG-05).
    pub overflows: u64,
    /// Entries lost to overflows.
    pub entries_lost: u64,
    /// Entries that failed validation.
    pub bad_entries: u64,
    /// Fallback scans of every fence of a device.
    pub fallback_scans: u64,
}

/// One thread of [`Session::churn`]: `rounds` times, create a user-mode queue on `node` for
/// `process`, submit `batches_per_round` batches of `work` (in order, round after round),
/// wait for the last, close the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChurnLane {
    /// The process.
    pub process: ProcessRef,
    /// Node of every queue.
    pub node: u32,
    /// Queues created one after another.
    pub rounds: u32,
    /// Batches per queue.
    pub batches_per_round: u32,
    /// `rounds * batches_per_round` batches.
    pub work: Vec<Vec<Work>>,
}

/// What a [`ChurnLane`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChurnReport {
    /// Rounds that submitted, waited and closed without error.
    pub rounds_done: u32,
    /// Rounds whose queue ended on the kernel-mode path (UM-19 fallback).
    pub kernel_mode_rounds: u32,
    /// The first error, if any.
    pub error: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Timeout detection and recovery (issue 7, TDR-01 … TDR-09, UM-10; docs/tdr.md).

/// A kernel-mode ("legacy") context of a process on one node (`D3DKMTCreateContext` without
/// hardware queues): its DMA buffers go through `DxgkDdiSubmitCommand` with VidSch's fence IDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ContextRef(pub usize);

/// TDR timing of a session ([`Session::enable_tdr`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TdrTimeouts {
    /// Step mode: rounds without progress before a timeout.
    pub timeout_steps: u64,
    /// Threaded mode: time without progress before a timeout.
    pub timeout: Duration,
    /// Step mode: rounds to wait for `DmaPreempted`.
    pub preempt_steps: u64,
    /// Threaded mode: time to wait for `DmaPreempted`.
    pub preempt_timeout: Duration,
}

impl TdrTimeouts {
    /// Short timeouts for cases: 40 rounds / 50 ms, preemption 5 rounds / 5 ms.
    pub fn fast() -> Self {
        Self {
            timeout_steps: 40,
            timeout: Duration::from_millis(50),
            preempt_steps: 5,
            preempt_timeout: Duration::from_millis(5),
        }
    }
}

/// What started a TDR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TdrCause {
    /// Kernel-mode DMA buffers in flight and no completion for the timeout.
    DmaTimeout,
    /// A hardware queue's progress fence did not move for the timeout (UM-16).
    QueueStalled,
    /// The engine reported itself hung (`EngineStateChange(HUNG)`).
    EngineHung,
    /// `DmaFaulted` with this fence ID.
    Faulted(u32),
}

/// One step of the OS's detection and recovery, in order (docs/tdr.md §5; devices named by
/// the session's processes where they are one of them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TdrStep {
    /// A timeout (or hang report) on `node`.
    Detected { node: u32, cause: TdrCause },
    /// `DxgkDdiPreemptCommand(fence)`.
    PreemptRequested { node: u32, fence: u32 },
    /// `DmaPreempted` arrived in time: no TDR.
    Preempted {
        node: u32,
        fence: u32,
        last_completed: u32,
    },
    /// The preemption timed out (or was not attempted).
    Timeout { node: u32 },
    /// `DxgkDdiCollectDbgInfo(reason)`; `bytes` of text.
    CollectDbgInfo { reason: u32, bytes: usize },
    /// The atomic snapshot of (S, C) at device IRQL.
    Snapshot {
        node: u32,
        submitted: u32,
        completed: u32,
    },
    /// The work completed before the snapshot: no reset.
    NothingToReset { node: u32 },
    /// DPCs flushed.
    DpcFlushed { node: u32 },
    /// `DxgkDdiQueryDependentEngineGroup`.
    DependentGroup { node: u32, mask: u64 },
    /// `DxgkDdiQueryEngineStatus`.
    EngineStatus { node: u32, responsive: bool },
    /// The session's pause hook ran ([`Session::complete_before_reset`]).
    Paused { node: u32 },
    /// A report of `node` arrived while its interrupts were ignored.
    IgnoredInterrupt { node: u32, fence: u32 },
    /// `DxgkDdiResetEngine` returned.
    ResetEngine {
        node: u32,
        status: i32,
        last_aborted: u32,
    },
    /// `DxgkCbInvalidateHwContext` named a context of this process's device.
    Invalidated { process: Option<ProcessRef> },
    /// Fence IDs the reset retired as completed.
    Retired { node: u32, fences: Vec<u32> },
    /// The aborted DMA buffer.
    Aborted { node: u32, fence: u32, paging: bool },
    /// A DMA buffer resubmitted (`old == new` for paging buffers, TDR-03).
    Resubmitted {
        node: u32,
        old: u32,
        new: u32,
        paging: bool,
    },
    /// A process's device put in error (UM-10).
    DeviceError {
        process: Option<ProcessRef>,
        doorbells_aborted: usize,
    },
    /// `DxgkDdiResetFromTimeout` succeeded; the reason (`TdrEngineTimeoutPromotedToAdapterReset`
    /// = 9).
    AdapterReset { reason: u32 },
    /// `DxgkDdiRestartFromTimeout` succeeded.
    Restarted,
    /// The node runs again.
    Recovered { node: u32 },
    /// Any other step (text for messages).
    Other(String),
}

/// An engine as the device shows it (simulation only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineProbe {
    /// The engine has work.
    pub has_work: bool,
    /// Some queue of the engine is inside an INDIRECT buffer (a DMA buffer part-way).
    pub mid_buffer: bool,
    /// `COMPLETED_COMMANDS` of the engine.
    pub completed_commands: u64,
}

/// What [`Session::collect_dbg_info_under_reset`] saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DbgInfoRace {
    /// `DxgkDdiCollectDbgInfo` calls that returned while the reset was pending.
    pub calls: usize,
    /// Shortest and longest text.
    pub min_len: usize,
    /// Longest text.
    pub max_len: usize,
    /// `QueryAdapterInfo` calls that returned meanwhile.
    pub caps_queries: usize,
}

/// One thread of [`Session::stream`]: submits `batches` to an existing queue, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamLane {
    /// The queue (taken by the thread for the call).
    pub queue: UmQueueRef,
    /// Batches, in order.
    pub batches: Vec<Vec<Work>>,
    /// Wait this long before the first submission.
    pub start_after: Duration,
    /// At most this many submitted batches not yet complete (0: no limit).
    pub max_in_flight: u64,
    /// Stop early: once at least `min_batches` are submitted and the adapter has recovered
    /// from a TDR, submit this many more and stop (`None`: submit every batch). A backend that
    /// cannot observe recoveries submits every batch.
    pub stop_after_recovery: Option<(usize, usize)>,
    /// Wait for the last submitted batch before returning.
    pub wait: bool,
}

/// What a [`StreamLane`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamReport {
    /// Batches submitted.
    pub submitted: usize,
    /// The progress value of the last one (0: none).
    pub last_value: u64,
    /// Batches submitted when the lane first saw the adapter recovered from a TDR (lanes with
    /// `stop_after_recovery` only; `None`: it never did).
    pub recovered_at: Option<usize>,
    /// The first error, if any.
    pub error: Option<String>,
}

fn unsupported<T>(what: &str) -> Result<T, Failure> {
    Err(Failure::Unsupported(format!(
        "{what} is not implemented by this backend"
    )))
}

/// One machine with its adapters, for one case.
///
/// The native-fence methods have defaults that report [`Failure::Unsupported`]: a backend
/// without them skips the fence cases. The GPU-queue methods stand in for a submission path
/// (they predate issue 6 and write the device's queues directly). The user-mode submission
/// methods go through the UMD's submission core and the OS's D3DKMT thunks.
pub trait Session {
    /// Number of adapters.
    fn adapter_count(&self) -> usize;
    /// Loads the driver (DriverEntry → DxgkInitialize).
    fn load_driver(&mut self) -> Result<(), Failure>;
    /// Adds and starts adapter `i` (AddDevice, StartDevice, the start-time adapter queries).
    fn start_adapter(&mut self, i: usize) -> Result<StartedAdapter, Failure>;
    /// Queries `DXGKQAITYPE_DRIVERCAPS` on a started adapter.
    fn driver_caps(&mut self, i: usize) -> Result<DriverCaps, Failure>;
    /// Queries `DXGKQAITYPE_DRIVERCAPS` from a thread at DISPATCH_LEVEL, which Windows never
    /// does (simulation only: proves the OS side enforces IRQL rules).
    fn driver_caps_at_dispatch(&mut self, i: usize) -> Result<DriverCaps, Failure>;
    /// Stops adapter `i`.
    fn stop_adapter(&mut self, i: usize) -> Result<(), Failure>;
    /// Removes adapter `i`.
    fn remove_adapter(&mut self, i: usize) -> Result<(), Failure>;
    /// Unloads the driver.
    fn unload(&mut self) -> Result<(), Failure>;
    /// Raises one interrupt on adapter `i`'s line as a shared line would (simulation only).
    fn raise_interrupt(&mut self, i: usize) -> Result<(), Failure>;
    /// Lets the device, the ISR and DPCs run until `done` holds or `budget` passes.
    fn run_until(
        &mut self,
        budget: Duration,
        done: &mut dyn FnMut(&dyn Session) -> bool,
    ) -> Result<bool, Failure>;
    /// Engine state changes the OS processed on adapter `i`, in order.
    fn engine_state_changes(&self, i: usize) -> Vec<EngineStateChange>;
    /// The bug check that halted the machine, if any.
    fn bugcheck(&self) -> Option<BugCheckInfo>;

    /// ISR calls on adapter `i` so far.
    fn interrupt_count(&self, _i: usize) -> u64 {
        0
    }
    /// Step mode: runs the machine until nothing happens any more.
    fn run_until_idle(&mut self) -> Result<(), Failure> {
        unsupported("run_until_idle")
    }
    /// Creates a native fence on adapter `i` for `process`.
    fn create_native_fence(
        &mut self,
        _i: usize,
        _process: u32,
        _initial: u64,
        _shareable: bool,
    ) -> Result<FenceRef, Failure> {
        unsupported("native fences")
    }
    /// Opens `f` for another process on the same adapter.
    fn open_native_fence(&mut self, _f: FenceRef, _process: u32) -> Result<FenceRef, Failure> {
        unsupported("native fences")
    }
    /// Opens `f` on another adapter (cross-adapter fence, NF-16).
    fn open_native_fence_on(
        &mut self,
        _f: FenceRef,
        _adapter: usize,
        _process: u32,
    ) -> Result<FenceRef, Failure> {
        unsupported("cross-adapter native fences")
    }
    /// The process destroys its instance.
    fn destroy_native_fence(&mut self, _f: FenceRef) -> Result<(), Failure> {
        unsupported("native fences")
    }
    /// Whether the OS object behind `f` is gone.
    fn native_fence_destroyed(&self, _f: FenceRef) -> bool {
        false
    }
    /// Calls DxgkDdiDestroyNativeFence directly for `f`'s global handle, bypassing the OS
    /// (simulation only); the driver's NTSTATUS.
    fn raw_destroy_native_fence(&mut self, _f: FenceRef) -> Result<i32, Failure> {
        unsupported("raw DDI calls")
    }
    /// System-process GPU VAs of (CurrentValue, MonitoredValue) and the native-fence caps'
    /// MonitoredValueStride.
    fn fence_addresses(&self, _f: FenceRef) -> Result<(u64, u64, u32), Failure> {
        unsupported("native fences")
    }
    /// CurrentValue and MonitoredValue.
    fn fence_values(&self, _f: FenceRef) -> Result<FenceValues, Failure> {
        unsupported("native fences")
    }
    /// Registers a CPU wait in event form.
    fn cpu_wait_event(&mut self, _f: FenceRef, _value: u64) -> Result<EventRef, Failure> {
        unsupported("native fences")
    }
    /// The event's outcome, if signalled, waiting up to `timeout`.
    fn event_result(&self, _e: EventRef, _timeout: Duration) -> Option<WaitResult> {
        None
    }
    /// A blocking CPU wait.
    fn cpu_wait(
        &mut self,
        _f: FenceRef,
        _value: u64,
        _timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        unsupported("native fences")
    }
    /// A CPU signal.
    fn cpu_signal(&mut self, _f: FenceRef, _value: u64) -> Result<(), Failure> {
        unsupported("native fences")
    }
    /// A GPU queue on engine `engine` of adapter `i`.
    fn gpu_queue(&mut self, _i: usize, _engine: u32) -> Result<QueueRef, Failure> {
        unsupported("GPU queues")
    }
    /// Appends a native FENCE_SIGNAL (conditional interrupt) to the queue.
    fn gpu_signal(&mut self, _q: QueueRef, _f: FenceRef, _value: u64) -> Result<(), Failure> {
        unsupported("GPU queues")
    }
    /// Appends a FENCE_WAIT to the queue.
    fn gpu_wait(&mut self, _q: QueueRef, _f: FenceRef, _value: u64) -> Result<(), Failure> {
        unsupported("GPU queues")
    }
    /// Submits what was appended.
    fn gpu_submit(&mut self, _q: QueueRef) -> Result<(), Failure> {
        unsupported("GPU queues")
    }
    /// Whether the GPU consumed everything submitted to the queue.
    fn gpu_queue_drained(&self, _q: QueueRef) -> bool {
        false
    }
    /// Creates a legacy monitored fence on adapter `i` (MF-01).
    fn create_monitored_fence(
        &mut self,
        _i: usize,
        _process: u32,
        _initial: u64,
    ) -> Result<MonitoredRef, Failure> {
        unsupported("monitored fences")
    }
    /// Opens a native fence on an adapter without native fences: a monitored fence there
    /// (NF-18).
    fn open_native_fence_as_monitored(
        &mut self,
        _f: FenceRef,
        _adapter: usize,
    ) -> Result<MonitoredRef, Failure> {
        unsupported("monitored fences")
    }
    /// The monitored fence's value.
    fn monitored_value(&self, _f: MonitoredRef) -> Result<u64, Failure> {
        unsupported("monitored fences")
    }
    /// A CPU wait on a monitored fence, event form.
    fn monitored_wait_event(&mut self, _f: MonitoredRef, _value: u64) -> Result<EventRef, Failure> {
        unsupported("monitored fences")
    }
    /// SignalSynchronizationObjectFromCpu on a monitored fence.
    fn monitored_signal_cpu(&mut self, _f: MonitoredRef, _value: u64) -> Result<(), Failure> {
        unsupported("monitored fences")
    }
    /// Appends a legacy monitored-fence signal (always interrupts) to the queue.
    fn gpu_signal_monitored(
        &mut self,
        _q: QueueRef,
        _f: MonitoredRef,
        _value: u64,
    ) -> Result<(), Failure> {
        unsupported("GPU queues")
    }

    // -----------------------------------------------------------------------------------------
    // User-mode submission (issue 6). A Windows backend implements these with D3DKMT and the
    // same UMD core (`rvgpu_umd::submit` over `kmt_windows`) unless the method says
    // "simulation only".

    /// What adapter `i` reported at start: node metadata and `USERMODESUBMISSION_CAPS`
    /// (Windows: `D3DKMTQueryAdapterInfo` with `KMTQAITYPE_NODEMETADATA`; the doorbell size
    /// is what the UMD's doorbell mapping has).
    fn submission_caps(&mut self, _i: usize) -> Result<SubmissionCaps, Failure> {
        unsupported("user-mode submission")
    }
    /// Opens a process (its D3D device) on adapter `i`.
    fn open_process(&mut self, _i: usize) -> Result<ProcessRef, Failure> {
        unsupported("user-mode submission")
    }
    /// Ends the process: normal (UM-17) or abnormal (UM-18) exit, with its queues still open
    /// (the OS tears them down). Windows: a child process that returns or is terminated.
    fn end_process(&mut self, _p: ProcessRef, _how: ProcessEnd) -> Result<(), Failure> {
        unsupported("user-mode submission")
    }
    /// A GPU-visible buffer of `bytes` bytes for `p`, zeroed.
    fn create_buffer(&mut self, _p: ProcessRef, _bytes: u64) -> Result<BufferRef, Failure> {
        unsupported("user-mode submission")
    }
    /// The u64 at `offset` of `b`, read by the CPU.
    fn read_buffer(&self, _b: BufferRef, _offset: u64) -> Result<u64, Failure> {
        unsupported("user-mode submission")
    }
    /// Stores `value` at `offset` of `b` from the CPU; a GPU wait on it re-evaluates (as after
    /// a CPU fence signal).
    fn write_buffer(&mut self, _b: BufferRef, _offset: u64, _value: u64) -> Result<(), Failure> {
        unsupported("user-mode submission")
    }
    /// A hardware queue of `p` on `node`: a user-mode queue (`UserQueue`: context, queue,
    /// ring, doorbell, connected) or a kernel-mode queue (`KernelQueue`).
    fn create_queue(
        &mut self,
        _p: ProcessRef,
        _node: u32,
        _kind: SubmitPath,
    ) -> Result<UmQueueRef, Failure> {
        unsupported("user-mode submission")
    }
    /// Submits one batch; returns the progress value that marks its completion (UM-16).
    fn submit(&mut self, _q: UmQueueRef, _work: &[Work]) -> Result<u64, Failure> {
        unsupported("user-mode submission")
    }
    /// Waits until the queue's progress reaches `value` (the OS's wait timeout; step mode:
    /// until the machine goes idle). `Abandoned`: the device was removed.
    fn wait_progress(&mut self, _q: UmQueueRef, _value: u64) -> Result<WaitResult, Failure> {
        unsupported("user-mode submission")
    }
    /// The UMD's view of the queue.
    fn queue_info(&self, _q: UmQueueRef) -> Result<UmQueueInfo, Failure> {
        unsupported("user-mode submission")
    }
    /// The UMD closes the queue normally (waits for its last value, destroys doorbell,
    /// queues, allocations, context).
    fn close_queue(&mut self, _q: UmQueueRef) -> Result<(), Failure> {
        unsupported("user-mode submission")
    }
    /// The user-mode queue's doorbell status page.
    fn doorbell_status(&self, _q: UmQueueRef) -> Result<DoorbellStatus, Failure> {
        unsupported("user-mode submission")
    }
    /// Where the doorbell's CPU VA points: `Some(page)` the physical doorbell, `None` the
    /// OS's dummy page (UM-09). Simulation only.
    fn doorbell_mapping(&self, _q: UmQueueRef) -> Result<Option<u32>, Failure> {
        unsupported("doorbell mappings")
    }
    /// Submits `work` to the user-mode queue's own hardware queue with
    /// `D3DKMTSubmitCommandToHwQueue` (which UM-05 forbids), or with `direct_ddi` straight to
    /// `DxgkDdiSubmitCommandToHwQueue`, bypassing the OS's check (simulation only). Returns the
    /// NTSTATUS.
    fn kernel_submit_on_user_queue(
        &mut self,
        _q: UmQueueRef,
        _work: &[Work],
        _direct_ddi: bool,
    ) -> Result<i32, Failure> {
        unsupported("user-mode submission")
    }
    /// The UMD destroys its handles to the user-mode queue's ring and ring-control
    /// allocations while the doorbell lives (UM-07; `D3DKMTDestroyAllocation2`). The queue
    /// keeps working; a second call fails with the NTSTATUS of the closed handle.
    fn release_ring_handles(&mut self, _q: UmQueueRef) -> Result<(), Failure> {
        unsupported("user-mode submission")
    }
    /// Whether the queue's ring and ring-control memory is still allocated (UM-07).
    /// Simulation only.
    fn ring_resident(&self, _q: UmQueueRef) -> Result<bool, Failure> {
        unsupported("ring residency")
    }
    /// The OS suspends (`DxgkDdiSuspendContext`) every context of `p` (UM-11). Simulation
    /// only: no D3DKMT call does this.
    fn suspend_process(&mut self, _p: ProcessRef) -> Result<(), Failure> {
        unsupported("suspending contexts")
    }
    /// The OS resumes what [`Session::suspend_process`] suspended (UM-12). Simulation only.
    fn resume_process(&mut self, _p: ProcessRef) -> Result<(), Failure> {
        unsupported("resuming contexts")
    }
    /// Lets node `node` of adapter `i` idle until it has requested F1 and the OS has moved
    /// it to F1 (UM-13), up to `budget`; whether it did. The simulation needs
    /// [`SessionConfig::idle_f1_ticks`]; Windows idles the engine on its own schedule.
    fn await_engine_f1(
        &mut self,
        _i: usize,
        _node: u32,
        _budget: Duration,
    ) -> Result<bool, Failure> {
        unsupported("engine F1")
    }
    /// Runtime power-down of adapter `i` to D3 if idle (UM-14); whether it powered down.
    /// Simulation only (Windows decides by itself).
    fn power_down(&mut self, _i: usize) -> Result<bool, Failure> {
        unsupported("power transitions")
    }
    /// D3 → D0 without a submission. Simulation only.
    fn power_up(&mut self, _i: usize) -> Result<(), Failure> {
        unsupported("power transitions")
    }
    /// Adapter power and node F-states. Simulation only.
    fn power_status(&self, _i: usize) -> Result<PowerStatus, Failure> {
        unsupported("power status")
    }
    /// Device loss on adapter `i` (UM-10). Simulation only (a Windows backend could force a
    /// TDR with `dxcap -forcetdr` for something close to `Removed`).
    fn device_loss(&mut self, _i: usize, _how: DeviceLoss) -> Result<(), Failure> {
        unsupported("device loss")
    }
    /// The OS steps of user-mode submission on adapter `i` so far, in order. Simulation only
    /// (Windows: some of it is in Dxgkrnl's ETW events).
    fn os_events(&self, _i: usize) -> Result<Vec<OsEvent>, Failure> {
        unsupported("OS event traces")
    }
    /// Runs `lanes` at the same time, one thread each (see [`ChurnLane`]); step-mode
    /// sessions run them one after another.
    fn churn(&mut self, _lanes: &[ChurnLane]) -> Result<Vec<ChurnReport>, Failure> {
        unsupported("user-mode submission")
    }

    // -----------------------------------------------------------------------------------------
    // Native fence logs and the timeline (issue 5). A Windows backend could create the fences
    // and submit (D3DKMTCreateNativeFence, the same UMD core); the OS's log drain, its counters
    // and the joined trace are simulation only (on Windows GPUView shows Dxgkrnl's own events).

    /// Starts recording the run's fence timeline: the OS's log entries and calibrations, and
    /// the UMD's "queued" events of every queue (also those created later).
    fn trace_fences(&mut self) -> Result<(), Failure> {
        unsupported("fence timelines")
    }
    /// A native fence of process `p` made through the UMD, starting at `initial`.
    fn create_um_fence(&mut self, _p: ProcessRef, _initial: u64) -> Result<UmFenceRef, Failure> {
        unsupported("UMD native fences")
    }
    /// Opens `f` (shared) in process `p`: that process's handle to the same fence.
    fn open_um_fence(&mut self, _f: UmFenceRef, _p: ProcessRef) -> Result<UmFenceRef, Failure> {
        unsupported("UMD native fences")
    }
    /// Submits one batch of packets and native-fence operations to the queue (the UMD's
    /// `submit_ops`); returns the progress value that marks its completion.
    fn submit_fence_ops(&mut self, _q: UmQueueRef, _ops: &[FenceWork]) -> Result<u64, Failure> {
        unsupported("UMD native fences")
    }
    /// A blocking CPU wait for `f` to reach `value`.
    fn wait_um_fence(
        &mut self,
        _f: UmFenceRef,
        _value: u64,
        _timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        unsupported("UMD native fences")
    }
    /// The fence's CurrentValue.
    fn um_fence_value(&self, _f: UmFenceRef) -> Result<u64, Failure> {
        unsupported("UMD native fences")
    }
    /// The recorded fence operations joined (docs/logs.md §6.1) with the calibration samples,
    /// labelled `label`. Simulation only.
    fn fence_timeline(&self, _label: &str) -> Result<crate::timeline::Timeline, Failure> {
        unsupported("fence timelines")
    }
    /// The queue's logs as the OS set them. Simulation only.
    fn queue_logs(&self, _q: UmQueueRef) -> Result<QueueLogs, Failure> {
        unsupported("native fence logs")
    }
    /// The OS's log counters of adapter `i`. Simulation only.
    fn log_counters(&self, _i: usize) -> Result<LogCounters, Failure> {
        unsupported("native fence logs")
    }
    /// The OS moves the queue's `kind` log to a new buffer of `entries` entries while the
    /// queue runs (the simulated Dxgkrnl's recreate, LOG-01). Simulation only.
    fn recreate_queue_log(
        &mut self,
        _q: UmQueueRef,
        _kind: LogKind,
        _entries: u64,
    ) -> Result<(), Failure> {
        unsupported("native fence logs")
    }

    // -----------------------------------------------------------------------------------------
    // Timeout detection and recovery (issue 7). On Windows TDR is always on: "submit work,
    // hang an engine with a HANG packet, observe recovery (the guilty device's submissions
    // refused, its doorbells aborted) and that other work completes" can run through D3DKMT
    // with the same UMD and `dxgkrnl`'s own TDR. Everything that injects a fault into the
    // device or the OS, calls a TDR DDI directly, or reads the OS's fence IDs or its recovery
    // steps is simulation only and says so.

    /// Turns TDR on for adapter `i` with these timeouts (the simulation's TDR is opt-in per
    /// adapter). A Windows backend returns `Ok` and ignores the values (TDR is always on;
    /// `TdrDelay` is a registry setting).
    fn enable_tdr(&mut self, _i: usize, _t: TdrTimeouts) -> Result<(), Failure> {
        unsupported("TDR")
    }
    /// A kernel-mode context of `p` on `node` (`D3DKMTCreateContext`, TDR-02: the node must be
    /// one of the adapter's).
    fn create_context(&mut self, _p: ProcessRef, _node: u32) -> Result<ContextRef, Failure> {
        unsupported("kernel-mode contexts")
    }
    /// Submits `work` as one DMA buffer of the context (`DxgkDdiSubmitCommand`); returns
    /// VidSch's fence ID. A Windows backend (`D3DKMTRender`) has no fence ID to return and
    /// returns 0. A device in error: `DdiFailed(STATUS_DEVICE_REMOVED)`.
    fn submit_dma(&mut self, _c: ContextRef, _work: &[Work]) -> Result<u32, Failure> {
        unsupported("kernel-mode DMA buffers")
    }
    /// VidMm pages in `bytes` at `offset` of `b` with a FILL of the 32-bit `pattern` built by
    /// `DxgkDdiBuildPagingBuffer` and submitted as paging buffers on `node`; returns their
    /// fence IDs. Simulation only.
    fn page_in(
        &mut self,
        _b: BufferRef,
        _node: u32,
        _offset: u64,
        _bytes: u64,
        _pattern: u32,
    ) -> Result<Vec<u32>, Failure> {
        unsupported("paging buffers")
    }
    /// The OS's recovery steps on adapter `i` so far. Simulation only.
    fn tdr_steps(&self, _i: usize) -> Result<Vec<TdrStep>, Failure> {
        unsupported("TDR step traces")
    }
    /// The reason of the last recovery (1 engine timeout, 2 adapter timeout, 9
    /// `TdrEngineTimeoutPromotedToAdapterReset`). Simulation only.
    fn tdr_reason(&self, _i: usize) -> Result<Option<u32>, Failure> {
        unsupported("TDR reasons")
    }
    /// (engine resets, adapter resets) recovered on adapter `i`. Simulation only.
    fn tdr_recoveries(&self, _i: usize) -> Result<(u64, u64), Failure> {
        unsupported("TDR counters")
    }
    /// The OS's (last submitted, last completed) fence IDs of `node` (TDR-04). Simulation only.
    fn dma_fences(&self, _i: usize, _node: u32) -> Result<(u32, u32), Failure> {
        unsupported("VidSch fence IDs")
    }
    /// Every fence ID retired on adapter `i` as (node, id), in order. Simulation only.
    fn retired_fences(&self, _i: usize) -> Result<Vec<(u32, u32)>, Failure> {
        unsupported("VidSch fence IDs")
    }
    /// `DxgkDdiQueryCurrentFence(node)`: the KMD's last completed fence ID. Simulation only.
    fn current_fence(&mut self, _i: usize, _node: u32) -> Result<u32, Failure> {
        unsupported("direct DDI calls")
    }
    /// `DxgkDdiQueryDependentEngineGroup(node)`. Simulation only.
    fn dependent_engine_group(&mut self, _i: usize, _node: u32) -> Result<u64, Failure> {
        unsupported("direct DDI calls")
    }
    /// `DxgkDdiCollectDbgInfo(reason)` at PASSIVE_LEVEL; the text. Simulation only.
    fn collect_dbg_info(&mut self, _i: usize, _reason: u32) -> Result<String, Failure> {
        unsupported("direct DDI calls")
    }
    /// TDR-01 level 0, threaded sessions with TDR enabled: one thread calls
    /// `DxgkDdiCollectDbgInfo(0x141)` in a loop and another `QueryAdapterInfo(DRIVERCAPS)` while
    /// a HANG submitted on `node` (kernel-mode path) is detected and reset. Simulation only.
    fn collect_dbg_info_under_reset(
        &mut self,
        _i: usize,
        _node: u32,
    ) -> Result<DbgInfoRace, Failure> {
        unsupported("direct DDI calls")
    }
    /// The device's engine `node` hangs now, wherever it is (mid DMA buffer). Simulation only.
    fn inject_hang(&mut self, _i: usize, _node: u32) -> Result<(), Failure> {
        unsupported("hang injection")
    }
    /// The device's next reset of engine `node` fails (TDR-09). Simulation only.
    fn fail_next_reset(&mut self, _i: usize, _node: u32) -> Result<(), Failure> {
        unsupported("reset failure injection")
    }
    /// Runs the TDR sequence on `node` now, as if its timeout had expired. Simulation only.
    fn force_tdr(&mut self, _i: usize, _node: u32) -> Result<(), Failure> {
        unsupported("forced TDRs")
    }
    /// Arms the TDR-07 race on adapter `i`: between the OS's snapshot and
    /// `DxgkDdiResetEngine` engine `node` runs until it has no work. Simulation only.
    fn complete_before_reset(&mut self, _i: usize, _node: u32) -> Result<(), Failure> {
        unsupported("TDR pause hooks")
    }
    /// Engine `node` as the device shows it. Simulation only.
    fn engine_probe(&self, _i: usize, _node: u32) -> Result<EngineProbe, Failure> {
        unsupported("engine probes")
    }
    /// Runs `lanes` at the same time on existing queues, one thread each ([`StreamLane`]);
    /// step-mode sessions run them one after another.
    fn stream(&mut self, _lanes: &[StreamLane]) -> Result<Vec<StreamReport>, Failure> {
        unsupported("streams")
    }
}

/// Something that opens sessions.
pub trait Backend: Send + Sync {
    /// Name shown in reports (`sim`, later `windows`).
    fn name(&self) -> &'static str;
    /// Opens a fresh session.
    fn open(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure>;
}
