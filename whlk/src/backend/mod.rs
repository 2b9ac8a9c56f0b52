//! Backends: what the cases run against.
//!
//! A case never talks to the simulated OS directly: it opens a [`Session`] (one machine with
//! its adapters, fresh for each case) on a [`Backend`] and uses the abstract adapter API below.
//! The default backend is [`sim::SimBackend`], the emulated GPU under the simulated OS.
//!
//! A session always has the driver and adapter life cycle; everything else is a capability
//! trait ([`caps`]): fences, cross-adapter fences, user-mode submission (processes,
//! buffers, queues made by the UMD's submission core), UMD native fences and the OS's fence
//! logs, TDR as a client sees it and the OS's record of it, and the
//! simulation-only controls and observations (OS traces, OS controls, fault injection, direct
//! DDI calls, step mode, bug checks). A Windows backend (the installed driver through D3DKMT)
//! implements the traits it can and lists them in [`Backend::capabilities`]; the runner skips
//! a case that needs one it lacks, with the reason. Within a trait, a method it cannot honour
//! still reports [`Failure::Unsupported`], and cases leave out the checks of observations that
//! are optional for them (`Case::optional`).
//!
//! The two backends that drive the driver as an application does (the D3DKMT backend through
//! the Rust UMD, and the shipped DLL's C API) implement the capabilities they share once, in
//! `app`, over the one primitive each supplies: the UMD's calls.

pub(crate) mod app;
pub mod caps;
mod device;
pub(crate) mod gpuva;
pub mod kmt;
pub(crate) mod lanes;
pub mod restricted;
mod session;
pub mod sim;
pub mod testing;
pub(crate) mod tracked;
mod umd_queue;

use std::fmt;
use std::time::Duration;

pub use device::DeviceSettings;
pub(crate) use session::{reset_used, used};
pub use session::{Backend, Session, Until};

pub use caps::{
    AllocationUsage, BugChecks, Capabilities, Capability, CrossAdapterFences, DirectDdi,
    DmaContexts, EngineIdle, FaultInjection, FenceInternals, FenceLogs, Fences, GpuVaPlacement,
    HeldRecovery, KmdCaps, KmdFaults, KmdJournal, MonitoredFences, OsControl, OsTrace, Paging,
    StepMode, Tdr, TdrTrace, UmdBypass, UmdFences, UserModeSubmission,
};

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
    /// Whether the OS enables `DXGK_FEATURE_HWSCH`. Off, the OS schedules in
    /// software: kernel-mode DMA buffers only, reset through `DxgkDdiResetEngine` with
    /// `LastAbortedFenceId` (the TDR-03..09 cases); no hardware or user-mode queues.
    /// Unlike the other settings it is one the runbook's tester makes on a Windows test
    /// machine (`HwSchMode`), so any backend opens a session asking for it: one that builds
    /// its machine builds it so, and on another the case reads whether the node is
    /// hardware-scheduled ([`DmaContexts::node_hw_scheduled`]) and is skipped, naming the
    /// setting, where it is.
    pub hwsch_feature: bool,
    /// GPU ticks of idleness after which an engine requests F1 (0 = never).
    pub idle_f1_ticks: u64,
    /// Replace part of the driver with a misbehaving one.
    pub misbehaviour: Option<Misbehaviour>,
    /// With two adapters: the first (the iGPU) has no native fences (NF-18 scenarios 2a/2b).
    pub legacy_igpu: bool,
    /// Physical doorbells of each adapter's device (`None`: the device's default). Fewer
    /// doorbells than user-mode queues forces victimisation (UM-20).
    pub doorbells: Option<u32>,
    /// At least this many physical doorbells on each adapter's device, so that this many
    /// user-mode queues never have to share (`None`: no minimum). Unlike `doorbells` it does
    /// not ask for a particular machine: a backend whose device has fewer refuses the session
    /// as unsupported. The simulation builds exactly this many (unless `doorbells` is set).
    pub min_doorbells: Option<u32>,
    /// At most this many physical doorbells on each adapter's device, so that more user-mode
    /// queues than this must share (`None`: no maximum). Like `min_doorbells` a bound a device
    /// meets or not; the simulation builds exactly this many (unless `doorbells` is set).
    pub max_doorbells: Option<u32>,
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
    /// Windows' `ValidateWDDMCaps` policy (off by default, as on Windows): the WDDM 1.2
    /// mandatory-feature check of adapter start (docs/windows-bringup.md BR-52).
    pub validate_wddm_caps: bool,
    /// The OS disconnects every doorbell before F1 and D3 and on device loss, as Microsoft's
    /// pages describe (UM-13, UM-14); Windows 11 24H2 disconnects none
    /// (docs/windows-bringup.md §13). Only a backend that builds its machine can ask for it.
    pub os_disconnects_doorbells: bool,
    /// The OS tears a device down in the pages' order (UM-17, UM-18: per queue, then the
    /// allocations); Windows 11 24H2 frees the allocations first
    /// (docs/windows-bringup.md §13). Only a backend that builds its machine can ask for it.
    pub pages_teardown: bool,
}

impl SessionConfig {
    /// One adapter, step mode, native fences enabled, no idle power requests.
    pub fn new(mode: ExecMode) -> Self {
        Self {
            mode,
            adapters: 1,
            native_fence_feature: true,
            hwsch_feature: true,
            idle_f1_ticks: 0,
            misbehaviour: None,
            legacy_igpu: false,
            doorbells: None,
            min_doorbells: None,
            max_doorbells: None,
            global_doorbell: false,
            log_entries: None,
            engines: None,
            per_engine_reset: None,
            validate_wddm_caps: false,
            os_disconnects_doorbells: false,
            pages_teardown: false,
        }
    }

    /// Whether the configuration asks for a setting only a backend that builds its machine
    /// can honour: anything but the mode, the number of adapters, a misbehaviour, hardware
    /// scheduling (a tester's setting) and the device's doorbells and engines (what the test
    /// machine's `rvgpu-vfu` is started with, [`SessionConfig::device_mismatch`]) differs
    /// from [`SessionConfig::new`].
    pub fn configures_machine(&self) -> bool {
        !self.native_fence_feature
            || self.idle_f1_ticks != 0
            || self.legacy_igpu
            || self.log_entries.is_some()
            || self.per_engine_reset.is_some()
            || self.validate_wddm_caps
            || self.os_disconnects_doorbells
            || self.pages_teardown
    }

    /// Whether the configuration asks anything of the device's doorbells or engines.
    pub fn asks_device(&self) -> bool {
        self.doorbells.is_some()
            || self.min_doorbells.is_some()
            || self.max_doorbells.is_some()
            || self.global_doorbell
            || self.engines.is_some()
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

/// A hardware queue to create ([`UserModeSubmission::create_queue`]): on engine `node`,
/// submitting by `path`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewQueue {
    pub node: u32,
    pub path: SubmitPath,
}

impl NewQueue {
    /// A user-mode queue (its own ring and doorbell) on `node`.
    pub const fn user_mode(node: u32) -> Self {
        Self {
            node,
            path: SubmitPath::UserMode,
        }
    }

    /// A kernel-mode queue (`D3DKMTSubmitCommandToHwQueue`) on `node`.
    pub const fn kernel_mode(node: u32) -> Self {
        Self {
            node,
            path: SubmitPath::KernelMode,
        }
    }
}

/// `count` 4 KiB pages of a buffer from page `first`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pages {
    pub first: u64,
    pub count: u64,
}

/// A FILL VidMm pages in with ([`Paging::page_in`]): `bytes` at `offset` of the buffer set to
/// the 32-bit `pattern`, as paging buffers on `node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagingFill {
    pub node: u32,
    pub offset: u64,
    pub bytes: u64,
    pub pattern: u32,
}

/// A native fence to create ([`Fences::create_native_fence`]): on adapter `adapter` for
/// `process`, starting at `initial`, and whether other processes may open it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NewFence {
    pub adapter: usize,
    pub process: u32,
    pub initial: u64,
    pub shareable: bool,
}

impl NewFence {
    /// `process`'s fence on adapter `adapter`, starting at 0, private to the process.
    pub const fn new(adapter: usize, process: u32) -> Self {
        Self {
            adapter,
            process,
            initial: 0,
            shareable: false,
        }
    }

    /// The same fence, shareable with other processes.
    pub const fn shareable(self) -> Self {
        Self {
            shareable: true,
            ..self
        }
    }
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
// Allocation usage tracking (AL-01 … AL-03).

/// A buffer with the UMD's usage tracking ([`AllocationUsage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TrackedRef(pub usize);

/// One GPU operation on tracked buffers (the UMD's `Batch::fill` and `Batch::copy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrackedWork {
    /// Fill `bytes` at `offset` of `dst` with `pattern`.
    Fill {
        /// Buffer.
        dst: TrackedRef,
        /// Byte offset (multiple of 8).
        offset: u64,
        /// Length (multiple of 8).
        bytes: u64,
        /// 64-bit pattern.
        pattern: u64,
    },
    /// Copy `bytes` from the start of `src` to the start of `dst` (different buffers).
    Copy {
        /// Source.
        src: TrackedRef,
        /// Destination.
        dst: TrackedRef,
        /// Length (multiple of 8).
        bytes: u64,
    },
}

/// Work on tracked buffers to submit ([`AllocationUsage::submit_tracked`]), optionally after
/// the queue waits for the u64 at `gate.1` of plain buffer `gate.0` to reach `gate.2` (the work
/// held queued until the case writes it).
#[derive(Clone, Copy, Debug)]
pub struct TrackedBatch<'a> {
    pub gate: Option<(BufferRef, u64, u64)>,
    pub work: &'a [TrackedWork],
}

impl<'a> TrackedBatch<'a> {
    /// `work`, not gated.
    pub const fn new(work: &'a [TrackedWork]) -> Self {
        Self { gate: None, work }
    }

    /// The same work, held until the u64 at `offset` of `buffer` reaches `value`.
    pub const fn gated(self, buffer: BufferRef, offset: u64, value: u64) -> Self {
        Self {
            gate: Some((buffer, offset, value)),
            ..self
        }
    }
}

/// How a lock of a tracked buffer ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockOutcome {
    /// Mapped: the buffer is locked.
    Mapped,
    /// `LockError::WasStillDrawing` (AL-02).
    WasStillDrawing,
    /// Any other `LockError`, as text.
    Refused(String),
}

/// A tracked buffer as the UMD sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrackedInfo {
    /// GPU VA of the current backing (a rename changes it).
    pub gpu_va: u64,
    /// Renames so far.
    pub renames: u64,
    /// Locks that blocked on a fence.
    pub waits: u64,
    /// Backings that exist (current and retired).
    pub backings: usize,
}

// ---------------------------------------------------------------------------------------------
// User-mode submission (UM-01 … UM-22).

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

/// A doorbell's status page (`D3DDDI_DOORBELLSTATUS`) as the UMD reads it (every backend
/// decodes the raw value with [`DoorbellStatus::from_raw`]).
pub use rvgpu_umd::kmt::DoorbellStatus;

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
    /// Whether the OS sees the queue's work: it gave the queue its progress fence (a
    /// kernel-mode queue; a user-mode one under Microsoft's pages). 24H2 gives a user-mode
    /// queue none, so nothing of the OS waits for or watches its work. `None`: the backend
    /// cannot tell.
    pub os_sees_work: Option<bool>,
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
    /// Every device of the adapter lost while the adapter keeps running (a forced
    /// adapter-wide recovery): the KMD aborts their doorbells (`DISCONNECTED_ABORT`); only
    /// devices created afterwards work.
    DoorbellsAborted,
    /// The device is removed: every D3D device in error, progress fences released (no
    /// doorbell status written); processes must recreate everything.
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
// Native fence logs and the GPU timeline (LOG-01 … LOG-09, docs/logs.md).

/// A native fence a process made through the UMD (`Kmt::create_native_fence`): its D3DKMT
/// handle is what the queue's LOG_WRITEs record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UmFenceRef(pub usize);

/// One item of a batch for [`UmdFences::submit_fence_ops`] (the UMD's `fencelog::Op`).
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

/// What the OS counted of its log drains on one adapter (docs/logs.md).
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

/// One thread of [`UserModeSubmission::churn`]: `rounds` times, create a user-mode queue on `node` for
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
// Timeout detection and recovery (TDR-01 … TDR-09, UM-10; docs/tdr.md).

/// A kernel-mode ("legacy") context of a process on one node (`D3DKMTCreateContext` without
/// hardware queues): its DMA buffers go through `DxgkDdiSubmitCommand` with VidSch's fence IDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ContextRef(pub usize);

/// TDR timing of a session ([`Tdr::enable_tdr`]).
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

/// One step of the OS's detection and recovery, in order (docs/tdr.md; devices named by
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
    /// The OS's debug report (`DxgkDdiCollectDbgInfo` or `DxgkDdiCollectDbgInfo2`) for `reason`;
    /// `bytes` kept.
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
    /// The session's pause hook ran ([`FaultInjection::complete_before_reset`]).
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

/// What [`DirectDdi::collect_dbg_info_under_reset`] saw.
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

/// One thread of [`Tdr::stream`]: submits `batches` to an existing queue, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamLane {
    /// The queue (taken by the thread for the call).
    pub queue: UmQueueRef,
    /// Batches, in order.
    pub batches: Vec<Vec<Work>>,
    /// Submit nothing until every lane that stops after a recovery has submitted this many
    /// batches or ended (0: start at once): the others' progress, not a time, so a lane whose
    /// thread starts late on a loaded host still starts among the others' work. Where lanes
    /// run one after another (step mode) they run in order, and this is already so of the
    /// lanes before it.
    pub start_after: usize,
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

/// Entry `i` of one of a session's lists, or a failure saying there is no `what` `i`.
pub(crate) fn nth<'a, T>(list: &'a [T], i: usize, what: &str) -> Result<&'a T, Failure> {
    list.get(i)
        .ok_or_else(|| Failure::Backend(format!("no {what} {i}")))
}

/// [`nth`], to change the entry.
pub(crate) fn nth_mut<'a, T>(
    list: &'a mut [T],
    i: usize,
    what: &str,
) -> Result<&'a mut T, Failure> {
    list.get_mut(i)
        .ok_or_else(|| Failure::Backend(format!("no {what} {i}")))
}

/// The GPU address of `bytes` at `offset` of buffer `b` (at `gpu_va`, `size` bytes long), or
/// why the span does not fit.
pub(crate) fn address_in(
    b: BufferRef,
    gpu_va: u64,
    size: u64,
    offset: u64,
    bytes: u64,
) -> Result<u64, Failure> {
    match offset.checked_add(bytes) {
        Some(end) if end <= size => Ok(gpu_va + offset),
        _ => Err(Failure::Backend(format!(
            "{bytes} bytes at {offset:#x} are outside buffer {} ({size} bytes)",
            b.0
        ))),
    }
}

/// Encodes harness work as device commands, with `address` resolving (buffer, offset, bytes)
/// to a GPU address (each backend knows its buffers). Shared by the backends so that a
/// [`Work`] means the same packets everywhere.
pub(crate) fn encode_work(
    work: &[Work],
    address: impl Fn(BufferRef, u64, u64) -> Result<u64, Failure>,
) -> Result<Vec<rvgpu_hw::cmd::Command>, Failure> {
    use rvgpu_hw::cmd::Command;
    work.iter()
        .map(|w| {
            Ok(match *w {
                Work::Fill {
                    dst,
                    offset,
                    bytes,
                    pattern,
                } => Command::Fill {
                    dst: address(dst, offset, bytes)?,
                    bytes,
                    pattern,
                },
                Work::Copy {
                    src,
                    src_offset,
                    dst,
                    dst_offset,
                    bytes,
                } => Command::Copy {
                    src: address(src, src_offset, bytes)?,
                    dst: address(dst, dst_offset, bytes)?,
                    bytes,
                },
                Work::WaitAtLeast {
                    buffer,
                    offset,
                    value,
                } => Command::FenceWait {
                    addr: address(buffer, offset, 8)?,
                    value,
                },
                Work::Hang => Command::Hang,
            })
        })
        .collect()
}
