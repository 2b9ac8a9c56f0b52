//! Capability traits: what a backend's session can do beyond the core life cycle
//! ([`super::Session`]), one trait per feature area. A backend implements the traits of what it
//! can do and says so in [`super::Backend::capabilities`]; each case names the capabilities it
//! needs ([`crate::case::Case::needs`]) and the runner skips it on a backend that lacks one.
//! The traits say "Simulation only" where a Windows backend (D3DKMT on a real machine) cannot
//! implement them.

use std::fmt;
use std::time::Duration;

use rvgpu_umd::kmt::DeviceExecutionState;

use super::{
    BufferRef, BugCheckInfo, ChurnLane, ChurnReport, ContextRef, DbgInfoRace, DeviceLoss,
    DoorbellStatus, DriverCaps, EngineProbe, EngineStateChange, EventRef, Failure, FenceRef,
    FenceValues, FenceWork, LockOutcome, LogCounters, LogKind, MonitoredRef, NewFence, NewQueue,
    OsEvent, Pages, PagingFill, PowerStatus, ProcessEnd, ProcessRef, QueueLogs, QueueRef,
    StreamLane, StreamReport, SubmissionCaps, TdrStep, TdrTimeouts, TrackedBatch, TrackedInfo,
    TrackedRef, UmFenceRef, UmQueueInfo, UmQueueRef, WaitResult, Work,
};

/// A feature area a backend may or may not have (one trait each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// [`Fences`].
    Fences,
    /// [`MonitoredFences`].
    MonitoredFences,
    /// [`FenceInternals`] (simulation only).
    FenceInternals,
    /// [`CrossAdapterFences`].
    CrossAdapterFences,
    /// [`UserModeSubmission`].
    UserModeSubmission,
    /// [`KmdCaps`].
    KmdCaps,
    /// [`UmdBypass`].
    UmdBypass,
    /// [`EngineIdle`] (simulation only).
    EngineIdle,
    /// [`UmdFences`].
    UmdFences,
    /// [`FenceLogs`] (simulation only).
    FenceLogs,
    /// [`Tdr`].
    Tdr,
    /// [`DmaContexts`].
    DmaContexts,
    /// [`TdrTrace`] (simulation only).
    TdrTrace,
    /// [`OsTrace`] (simulation only).
    OsTrace,
    /// [`OsControl`] (simulation only).
    OsControl,
    /// [`Paging`] (simulation only).
    Paging,
    /// [`FaultInjection`] (simulation only).
    FaultInjection,
    /// [`HeldRecovery`]: the OS's recovery can be held open (simulation only).
    HeldRecovery,
    /// An ended process's buffers stay readable ([`UserModeSubmission::read_buffer`]): the
    /// OS's view of memory no program has any more. No trait. Simulation only (on Windows an
    /// application's buffers end with it).
    EndedProcessMemory,
    /// [`DirectDdi`] (simulation only).
    DirectDdi,
    /// [`StepMode`] (simulation only).
    StepMode,
    /// [`BugChecks`] (simulation only).
    BugChecks,
    /// The session's machine is built as [`super::SessionConfig`] describes it: device
    /// settings (engines, doorbells, per-engine reset, log sizes, idle F1, a legacy iGPU) and
    /// the OS's native-fence feature. No trait: [`dyn super::Backend`]'s `open` checks it.
    /// Simulation only (a real machine is what it is).
    ConfiguredMachine,
    /// [`AllocationUsage`].
    AllocationUsage,
    /// [`GpuVaPlacement`].
    GpuVaPlacement,
    /// The OS enabled `DXGK_FEATURE_NATIVE_FENCE` for the driver: native fences, their logs and
    /// user-mode submission exist. No trait: off on a stock Windows (`crate::os`).
    NativeFences,
    /// [`super::testing::KernelModeTesting`].
    KernelModeTesting,
    /// [`KmdJournal`]: what the KMD saw of detection and recovery, through its test hooks.
    KmdJournal,
    /// [`KmdFaults`]: faults armed in the KMD's recovery path, through its test hooks.
    KmdFaults,
}

impl Capability {
    /// Every capability, in declaration order.
    pub const ALL: &'static [Self] = &[
        Self::Fences,
        Self::MonitoredFences,
        Self::FenceInternals,
        Self::CrossAdapterFences,
        Self::UserModeSubmission,
        Self::KmdCaps,
        Self::UmdBypass,
        Self::EngineIdle,
        Self::UmdFences,
        Self::FenceLogs,
        Self::Tdr,
        Self::DmaContexts,
        Self::TdrTrace,
        Self::OsTrace,
        Self::OsControl,
        Self::Paging,
        Self::FaultInjection,
        Self::HeldRecovery,
        Self::EndedProcessMemory,
        Self::DirectDdi,
        Self::StepMode,
        Self::BugChecks,
        Self::ConfiguredMachine,
        Self::AllocationUsage,
        Self::GpuVaPlacement,
        Self::NativeFences,
        Self::KernelModeTesting,
        Self::KmdJournal,
        Self::KmdFaults,
    ];

    /// The name shown in skip reasons and `--list`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fences => "Fences",
            Self::MonitoredFences => "MonitoredFences",
            Self::FenceInternals => "FenceInternals",
            Self::CrossAdapterFences => "CrossAdapterFences",
            Self::UserModeSubmission => "UserModeSubmission",
            Self::KmdCaps => "KmdCaps",
            Self::UmdBypass => "UmdBypass",
            Self::EngineIdle => "EngineIdle",
            Self::UmdFences => "UmdFences",
            Self::FenceLogs => "FenceLogs",
            Self::Tdr => "Tdr",
            Self::DmaContexts => "DmaContexts",
            Self::TdrTrace => "TdrTrace",
            Self::OsTrace => "OsTrace",
            Self::OsControl => "OsControl",
            Self::Paging => "Paging",
            Self::FaultInjection => "FaultInjection",
            Self::HeldRecovery => "HeldRecovery",
            Self::EndedProcessMemory => "EndedProcessMemory",
            Self::DirectDdi => "DirectDdi",
            Self::StepMode => "StepMode",
            Self::BugChecks => "BugChecks",
            Self::ConfiguredMachine => "ConfiguredMachine",
            Self::AllocationUsage => "AllocationUsage",
            Self::GpuVaPlacement => "GpuVaPlacement",
            Self::NativeFences => "NativeFences",
            Self::KernelModeTesting => "KernelModeTesting",
            Self::KmdJournal => "KmdJournal",
            Self::KmdFaults => "KmdFaults",
        }
    }

    /// Whether a Windows backend (D3DKMT on a real machine) could have it at all.
    pub fn windows_possible(self) -> bool {
        matches!(
            self,
            Self::Fences
                | Self::MonitoredFences
                | Self::CrossAdapterFences
                | Self::UserModeSubmission
                | Self::KmdCaps
                | Self::UmdBypass
                | Self::UmdFences
                | Self::Tdr
                | Self::DmaContexts
                | Self::AllocationUsage
                | Self::GpuVaPlacement
                | Self::NativeFences
                | Self::KernelModeTesting
                | Self::KmdJournal
                | Self::KmdFaults
        )
    }

    fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// Space-separated names (`-` for none).
impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("-");
        }
        for (i, c) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            f.write_str(c.name())?;
        }
        Ok(())
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of capabilities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Capabilities(u32);

impl Capabilities {
    /// No capability: the core life cycle only.
    pub const NONE: Self = Self(0);

    /// Every capability.
    pub fn all() -> Self {
        Self::of(Capability::ALL)
    }

    /// The set of `caps`.
    pub fn of(caps: &[Capability]) -> Self {
        Self(caps.iter().fold(0, |b, c| b | c.bit()))
    }

    /// Whether `c` is in the set.
    pub fn contains(self, c: Capability) -> bool {
        self.0 & c.bit() != 0
    }

    /// The set with `c`.
    #[must_use]
    pub fn with(self, c: Capability) -> Self {
        Self(self.0 | c.bit())
    }

    /// The set without `c`.
    #[must_use]
    pub fn without(self, c: Capability) -> Self {
        Self(self.0 & !c.bit())
    }

    /// The capabilities in either set.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The capabilities in both sets.
    #[must_use]
    pub fn intersection(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }

    /// The capabilities of `self` not in `other`.
    #[must_use]
    pub fn difference(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The members, in [`Capability::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Capability> {
        Capability::ALL
            .iter()
            .copied()
            .filter(move |c| self.contains(*c))
    }
}

/// Native fences (NF-*) on one adapter, with CPU waits and signals, and GPU queues that signal
/// and wait on them. A Windows backend has these through D3DKMT and the UMD (its GPU queues
/// would be the UMD's queues).
pub trait Fences {
    /// Creates the native fence `new` describes.
    fn create_native_fence(&mut self, new: NewFence) -> Result<FenceRef, Failure>;

    /// Opens `f` for another process on the same adapter.
    fn open_native_fence(&mut self, f: FenceRef, process: u32) -> Result<FenceRef, Failure>;

    /// The process destroys its instance.
    fn destroy_native_fence(&mut self, f: FenceRef) -> Result<(), Failure>;

    /// Registers a CPU wait in event form.
    fn cpu_wait_event(&mut self, f: FenceRef, value: u64) -> Result<EventRef, Failure>;

    /// The event's outcome, if signalled, waiting up to `timeout`.
    fn event_result(&self, e: EventRef, timeout: Duration) -> Option<WaitResult>;

    /// A blocking CPU wait.
    fn cpu_wait(
        &mut self,
        f: FenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure>;

    /// A CPU signal.
    fn cpu_signal(&mut self, f: FenceRef, value: u64) -> Result<(), Failure>;

    /// A GPU queue on engine `engine` of adapter `i` in `process` (the fences it names must
    /// be open in that process).
    fn gpu_queue(&mut self, i: usize, engine: u32, process: u32) -> Result<QueueRef, Failure>;

    /// Appends a native FENCE_SIGNAL (conditional interrupt) to the queue.
    fn gpu_signal(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure>;

    /// Appends a FENCE_WAIT to the queue.
    fn gpu_wait(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure>;

    /// Submits what was appended.
    fn gpu_submit(&mut self, q: QueueRef) -> Result<(), Failure>;

    /// Whether the GPU consumed everything submitted to the queue.
    fn gpu_queue_drained(&self, q: QueueRef) -> bool;

    /// The program's own mapping of its fence `f`, where the backend is that program.
    fn own_mapping(&self, f: FenceRef) -> Result<OwnFenceMapping, Failure> {
        let _ = f;
        Err(Failure::Unsupported(
            "the fence's mapping in this program (a D3DKMT program's own)".into(),
        ))
    }
}

/// A native fence as its program maps it (`D3DDDI_NATIVEFENCEMAPPING` in its own process):
/// [`Fences::own_mapping`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnFenceMapping {
    /// CurrentValue's read-only CPU VA.
    pub current_cpu: u64,
    /// CurrentValue's GPU VA.
    pub current_gpu: u64,
    /// MonitoredValue's GPU VA.
    pub monitored_gpu: u64,
    /// CurrentValue as read through the CPU VA.
    pub value: u64,
}

/// Legacy monitored fences (MF-*) beside the native ones: created, waited on and signalled by
/// the CPU, and signalled by [`Fences`]' GPU queues. A Windows backend has them through
/// `D3DKMTCreateSynchronizationObject2`.
pub trait MonitoredFences {
    /// Creates a legacy monitored fence on adapter `i` (MF-01).
    fn create_monitored_fence(
        &mut self,
        i: usize,
        process: u32,
        initial: u64,
    ) -> Result<MonitoredRef, Failure>;

    /// The monitored fence's value.
    fn monitored_value(&self, f: MonitoredRef) -> Result<u64, Failure>;

    /// A CPU wait on a monitored fence, event form.
    fn monitored_wait_event(&mut self, f: MonitoredRef, value: u64) -> Result<EventRef, Failure>;

    /// SignalSynchronizationObjectFromCpu on a monitored fence.
    fn monitored_signal_cpu(&mut self, f: MonitoredRef, value: u64) -> Result<(), Failure>;

    /// Appends a legacy monitored-fence signal (always interrupts) to the queue.
    fn gpu_signal_monitored(
        &mut self,
        q: QueueRef,
        f: MonitoredRef,
        value: u64,
    ) -> Result<(), Failure>;
}

/// The OS's side of a native fence: whether its object is gone, the system process's GPU VAs
/// and MonitoredValue. Simulation only (the OS maps MonitoredValue for the GPU only, and no
/// D3DKMT call shows the rest).
pub trait FenceInternals {
    /// Whether the OS object behind `f` is gone.
    fn native_fence_destroyed(&self, f: FenceRef) -> bool;

    /// System-process GPU VAs of (CurrentValue, MonitoredValue) and the native-fence caps'
    /// MonitoredValueStride.
    fn fence_addresses(&self, f: FenceRef) -> Result<(u64, u64, u32), Failure>;

    /// CurrentValue and MonitoredValue.
    fn fence_values(&self, f: FenceRef) -> Result<FenceValues, Failure>;
}

/// Fences shared between two adapters of one machine (NF-16, NF-18): needs a machine with two
/// adapters, one of them without native fences for the monitored-fence form.
pub trait CrossAdapterFences {
    /// Opens `f` on another adapter (cross-adapter fence, NF-16).
    fn open_native_fence_on(
        &mut self,
        f: FenceRef,
        adapter: usize,
        process: u32,
    ) -> Result<FenceRef, Failure>;

    /// Opens a native fence on an adapter without native fences: a monitored fence there
    /// (NF-18).
    fn open_native_fence_as_monitored(
        &mut self,
        f: FenceRef,
        adapter: usize,
        process: u32,
    ) -> Result<MonitoredRef, Failure>;
}

/// User-mode submission as an application sees it: processes, buffers, hardware queues made
/// by the UMD's submission core, their doorbell status, process exits, and threads that churn
/// queues. Every backend with user-mode queues implements it; a Windows backend with D3DKMT and
/// the same UMD core (`rvgpu_umd::submit` over `kmt_windows`).
pub trait UserModeSubmission {
    /// Opens a process (its D3D device) on adapter `i`.
    fn open_process(&mut self, i: usize) -> Result<ProcessRef, Failure>;

    /// Ends the process: normal (UM-17) or abnormal (UM-18) exit, with its queues still open
    /// (the OS tears them down). Windows: a child process that returns or is terminated,
    /// waited for on its process handle. Returns once the process has ended, and with it its
    /// devices: 24H2 destroys them in its exit notification (`K:DxgkProcessNotify`
    /// @0x140014430 calls `K:DXGPROCESS::DestroyDxgProcess` @0x14034D1D8, which runs
    /// `K:DXGPROCESS::Destroy` @0x14034D4E0), on the process's last exiting thread
    /// (learn.microsoft.com, PsSetCreateProcessNotifyRoutineEx), so before its handle is
    /// signalled.
    fn end_process(&mut self, p: ProcessRef, how: ProcessEnd) -> Result<(), Failure>;

    /// A GPU-visible buffer of `bytes` bytes for `p`, zeroed.
    fn create_buffer(&mut self, p: ProcessRef, bytes: u64) -> Result<BufferRef, Failure>;

    /// The u64 at `offset` of `b`, read by the CPU.
    fn read_buffer(&self, b: BufferRef, offset: u64) -> Result<u64, Failure>;

    /// Stores `value` at `offset` of `b` from the CPU; a GPU wait on it re-evaluates (as after
    /// a CPU fence signal).
    fn write_buffer(&mut self, b: BufferRef, offset: u64, value: u64) -> Result<(), Failure>;

    /// A hardware queue of `p` as `new` describes: a user-mode queue (`UserQueue`: context,
    /// queue, ring, doorbell, connected) or a kernel-mode queue (`KernelQueue`).
    fn create_queue(&mut self, p: ProcessRef, new: NewQueue) -> Result<UmQueueRef, Failure>;

    /// Submits one batch; returns the progress value that marks its completion (UM-16).
    fn submit(&mut self, q: UmQueueRef, work: &[Work]) -> Result<u64, Failure>;

    /// Waits until the queue's progress reaches `value` (the OS's wait timeout; step mode:
    /// until the machine goes idle). `Abandoned`: the device was removed.
    fn wait_progress(&mut self, q: UmQueueRef, value: u64) -> Result<WaitResult, Failure>;

    /// The UMD's view of the queue.
    fn queue_info(&self, q: UmQueueRef) -> Result<UmQueueInfo, Failure>;

    /// The UMD closes the queue normally (waits for its last value, destroys doorbell,
    /// queues, allocations, context).
    fn close_queue(&mut self, q: UmQueueRef) -> Result<(), Failure>;

    /// The user-mode queue's doorbell status page (the UMD's CPU mapping of it).
    fn doorbell_status(&self, q: UmQueueRef) -> Result<DoorbellStatus, Failure>;

    /// Runs `lanes` at the same time, one thread each (see [`ChurnLane`]); step-mode
    /// sessions run them one after another.
    fn churn(&mut self, lanes: &[ChurnLane]) -> Result<Vec<ChurnReport>, Failure>;

    /// A second D3D device in `p`'s process (`D3DKMTCreateDevice` again), named as a process
    /// of its own: what one device's loss leaves of its sibling (UM-10). Ending it ends the
    /// whole process. Default: unsupported.
    fn open_sibling_device(&mut self, p: ProcessRef) -> Result<ProcessRef, Failure> {
        let _ = p;
        Err(Failure::Unsupported(
            "a second device in one process (D3DKMTCreateDevice twice)".into(),
        ))
    }
}

/// What the KMD reported to the OS at start: `DXGK_DRIVERCAPS`, node metadata and
/// `DXGK_USERMODESUBMISSION_CAPS`. No thunk passes DRIVERCAPS on to user mode: a Windows
/// backend asks the KMD through its test hooks (`TestHookOp::DriverCaps`).
pub trait KmdCaps {
    /// Queries `DXGKQAITYPE_DRIVERCAPS` on a started adapter.
    fn driver_caps(&mut self, i: usize) -> Result<DriverCaps, Failure>;

    /// What adapter `i` reported at start: node metadata and `USERMODESUBMISSION_CAPS`.
    fn submission_caps(&mut self, i: usize) -> Result<SubmissionCaps, Failure>;
}

/// The objects behind one of the UMD's user-mode queues, reached past the UMD: thunk calls on
/// its hardware queue and ring allocations, and whether the OS still holds the ring. A
/// program on Windows makes the first with its own queue's handle; whether the ring's memory
/// outlives its handles only the simulation shows.
pub trait UmdBypass {
    /// Submits `work` to the user-mode queue's own hardware queue with
    /// `D3DKMTSubmitCommandToHwQueue`, which UM-05 forbids; returns the NTSTATUS.
    fn kernel_submit_on_user_queue(&mut self, q: UmQueueRef, work: &[Work])
        -> Result<i32, Failure>;

    /// The UMD destroys its handles to the user-mode queue's ring and ring-control
    /// allocations while the doorbell lives (UM-07; `D3DKMTDestroyAllocation2`). The queue
    /// keeps working; a second call fails with the NTSTATUS of the closed handle.
    fn release_ring_handles(&mut self, q: UmQueueRef) -> Result<(), Failure>;

    /// Whether the queue's ring and ring-control memory is still allocated (UM-07).
    fn ring_resident(&self, q: UmQueueRef) -> Result<bool, Failure>;
}

/// An engine's idle F-state at a moment the case chooses. Simulation only (Windows idles the
/// engine on its own schedule, and no D3DKMT call shows the F-state).
pub trait EngineIdle {
    /// Lets node `node` of adapter `i` idle until it has requested F1 and the OS has moved
    /// it to F1 (UM-13), up to `budget`; whether it did. Needs
    /// [`SessionConfig::idle_f1_ticks`](super::SessionConfig::idle_f1_ticks).
    fn await_engine_f1(&mut self, i: usize, node: u32, budget: Duration) -> Result<bool, Failure>;
}

/// Native fences made through the UMD (`Kmt::create_native_fence`) and batches that signal and
/// wait on them from a hardware queue. Windows: `D3DKMTCreateNativeFence` and the
/// same UMD core.
pub trait UmdFences {
    /// A native fence of process `p` made through the UMD, starting at `initial`.
    fn create_um_fence(&mut self, p: ProcessRef, initial: u64) -> Result<UmFenceRef, Failure>;

    /// Opens `f` (shared) in process `p`: that process's handle to the same fence.
    fn open_um_fence(&mut self, f: UmFenceRef, p: ProcessRef) -> Result<UmFenceRef, Failure>;

    /// Submits one batch of packets and native-fence operations to the queue (the UMD's
    /// `submit_ops`); returns the progress value that marks its completion.
    fn submit_fence_ops(&mut self, q: UmQueueRef, ops: &[FenceWork]) -> Result<u64, Failure>;

    /// A blocking CPU wait for `f` to reach `value`.
    fn wait_um_fence(
        &mut self,
        f: UmFenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure>;

    /// The fence's CurrentValue.
    fn um_fence_value(&self, f: UmFenceRef) -> Result<u64, Failure>;
}

/// The OS's side of native fence logs (LOG-*): recording the fence timeline, the logs the OS
/// set, its drain counters, moving a log. Simulation only (on Windows GPUView shows Dxgkrnl's
/// own events).
pub trait FenceLogs {
    /// Starts recording the run's fence timeline: the OS's log entries and calibrations, and
    /// the UMD's "queued" events of every queue (also those created later).
    fn trace_fences(&mut self) -> Result<(), Failure>;

    /// The recorded fence operations joined (docs/logs.md) with the calibration samples,
    /// labelled `label`. Simulation only.
    fn fence_timeline(&self, label: &str) -> Result<crate::timeline::Timeline, Failure>;

    /// The queue's logs as the OS set them. Simulation only.
    fn queue_logs(&self, q: UmQueueRef) -> Result<QueueLogs, Failure>;

    /// The OS's log counters of adapter `i`. Simulation only.
    fn log_counters(&self, i: usize) -> Result<LogCounters, Failure>;

    /// The OS moves the queue's `kind` log to a new buffer of `entries` entries while the
    /// queue runs (the simulated Dxgkrnl's recreate, LOG-01). Simulation only.
    fn recreate_queue_log(
        &mut self,
        q: UmQueueRef,
        kind: LogKind,
        entries: u64,
    ) -> Result<(), Failure>;
}

/// Timeout detection and recovery as a client sees it: TDR on, and threads that keep queues
/// busy through a recovery. On Windows TDR is always on.
pub trait Tdr {
    /// Turns TDR on for adapter `i` with these timeouts (the simulation's TDR is opt-in per
    /// adapter). A Windows backend returns `Ok` and ignores the values (TDR is always on;
    /// `TdrDelay` is a registry setting).
    fn enable_tdr(&mut self, i: usize, t: TdrTimeouts) -> Result<(), Failure>;

    /// Runs `lanes` at the same time on existing queues, one thread each ([`StreamLane`]);
    /// step-mode sessions run them one after another.
    fn stream(&mut self, lanes: &[StreamLane]) -> Result<Vec<StreamReport>, Failure>;

    /// The OS's execution state of process `p`'s device (`D3DKMTGetDeviceState`,
    /// `D3DKMT_DEVICESTATE_EXECUTION`): what an application reads to learn that its device was
    /// lost, and why (HUNG for the device whose work hung an engine). Default: unsupported.
    fn device_state(&mut self, p: ProcessRef) -> Result<DeviceExecutionState, Failure> {
        let _ = p;
        Err(Failure::Unsupported("D3DKMTGetDeviceState".into()))
    }

    /// Whether the adapter resets engines one by one, as process `p` learns it:
    /// `SupportPerEngineTDR` of `D3DKMTQueryAdapterInfo(KMTQAITYPE_WDDM_1_2_CAPS)`, which the OS
    /// copies from the caps the driver reported at start. Default: unsupported.
    fn per_engine_tdr(&mut self, p: ProcessRef) -> Result<bool, Failure> {
        let _ = p;
        Err(Failure::Unsupported("KMTQAITYPE_WDDM_1_2_CAPS".into()))
    }
}

/// Kernel-mode ("legacy") contexts and their DMA buffers, which the TDR cases hang and
/// recover. A Windows backend has them through `D3DKMTCreateContextVirtual` (no hardware
/// queue) and `D3DKMTSubmitCommand`.
pub trait DmaContexts {
    /// A kernel-mode context of `p` on `node` (`D3DKMTCreateContext`, TDR-02: the node must be
    /// one of the adapter's).
    fn create_context(&mut self, p: ProcessRef, node: u32) -> Result<ContextRef, Failure>;

    /// Submits `work` as one DMA buffer of the context (`DxgkDdiSubmitCommand`); returns
    /// VidSch's fence ID. No thunk returns it: the D3DKMT backend returns the fence ID of the
    /// KMD's journal record of that DMA buffer ([`KmdJournal`], its `Submit` record whose GPU VA
    /// is the buffer's), 0 where it has no journal. A device in error:
    /// `DdiFailed(STATUS_DEVICE_REMOVED)`.
    fn submit_dma(&mut self, c: ContextRef, work: &[Work]) -> Result<u32, Failure>;

    /// Whether `node` of process `p`'s adapter is hardware-scheduled, as the process reads it
    /// (`KMTQAITYPE_NODEMETADATA`'s `ContextSchedulingSupported`): a DMA context there has no
    /// `D3DKMTSubmitCommand` and no `DxgkDdiResetEngine`. Default: unsupported.
    fn node_hw_scheduled(&mut self, p: ProcessRef, node: u32) -> Result<bool, Failure> {
        let _ = (p, node);
        Err(Failure::Unsupported("KMTQAITYPE_NODEMETADATA".into()))
    }
}

/// The KMD's record of what it saw of detection and recovery (`driver/hw/src/testhooks.rs`):
/// the DDIs the OS called and what the KMD reported, read through the KMD's test-hook escape
/// (`D3DKMTEscape`, driver-private), which the KMD answers only when the device's software key
/// holds `TestHooks` = 1. It shows the KMD's side only: VidSch's own steps (detection, the
/// snapshot, the DPC flush, the recovery) are not in it.
pub trait KmdJournal {
    /// The journal records of adapter `i` with a sequence number at least `from`, oldest
    /// first (as many as the KMD still keeps).
    fn kmd_journal(
        &mut self,
        i: usize,
        from: u64,
    ) -> Result<Vec<rvgpu_hw::testhooks::JournalRecord>, Failure>;

    /// The text of the KMD's last `DxgkDdiCollectDbgInfo` on adapter `i` and the journal
    /// sequence number of that call.
    fn last_dbg_info(&mut self, i: usize) -> Result<(u64, String), Failure>;

    /// User-mode queue `q`'s native fence log of `kind` as the device wrote it (header, then
    /// entries; `rvgpu_hw::log`), which the KMD copies to a program of the queue's own device
    /// (`TestHookOp::QueueLog`); `None` where the queue has no such log. Default: unsupported.
    fn kmd_queue_log(&mut self, q: UmQueueRef, kind: LogKind) -> Result<Option<Vec<u8>>, Failure> {
        let _ = (q, kind);
        Err(Failure::Unsupported(
            "the KMD's copy of a queue's log (TestHookOp::QueueLog)".into(),
        ))
    }
}

/// Faults armed in the KMD's own recovery path through its test hooks
/// ([`rvgpu_hw::testhooks::TestHookOp`]): a failing engine reset, a hang in the next paging
/// buffer, an engine that finishes its work between the OS's snapshot and the reset.
pub trait KmdFaults {
    /// Arms `op` (one of the arming ops) for `node` of adapter `i`.
    fn arm_kmd_fault(
        &mut self,
        i: usize,
        op: rvgpu_hw::testhooks::TestHookOp,
        node: u32,
    ) -> Result<(), Failure>;
}

/// The OS's record of detection and recovery: steps, reasons, counters, VidSch's fence IDs, the
/// device's engines. Simulation only.
pub trait TdrTrace {
    /// The OS's recovery steps on adapter `i` so far. Simulation only.
    fn tdr_steps(&self, i: usize) -> Result<Vec<TdrStep>, Failure>;

    /// The reason of the last recovery (1 engine timeout, 2 adapter timeout, 9
    /// `TdrEngineTimeoutPromotedToAdapterReset`). Simulation only.
    fn tdr_reason(&self, i: usize) -> Result<Option<u32>, Failure>;

    /// (engine resets, adapter resets) recovered on adapter `i`. Simulation only.
    fn tdr_recoveries(&self, i: usize) -> Result<(u64, u64), Failure>;

    /// The OS's (last submitted, last completed) fence IDs of `node` (TDR-04). Simulation only.
    fn dma_fences(&self, i: usize, node: u32) -> Result<(u32, u32), Failure>;

    /// Every fence ID retired on adapter `i` as (node, id), in order. Simulation only.
    fn retired_fences(&self, i: usize) -> Result<Vec<(u32, u32)>, Failure>;

    /// Engine `node` as the device shows it. Simulation only.
    fn engine_probe(&self, i: usize, node: u32) -> Result<EngineProbe, Failure>;
}

/// What the simulated Dxgkrnl and the device record: processed engine-state changes, ISR calls,
/// the user-mode submission event trace, power state, doorbell mappings and ring residency.
/// Simulation only.
pub trait OsTrace {
    /// Engine state changes the OS processed on adapter `i`, in order.
    fn engine_state_changes(&self, i: usize) -> Vec<EngineStateChange>;

    /// ISR calls on adapter `i` so far.
    fn interrupt_count(&self, i: usize) -> u64;

    /// The OS steps of user-mode submission on adapter `i` so far, in order. Simulation only
    /// (Windows: some of it is in Dxgkrnl's ETW events).
    fn os_events(&self, i: usize) -> Result<Vec<OsEvent>, Failure>;

    /// Adapter power and node F-states. Simulation only.
    fn power_status(&self, i: usize) -> Result<PowerStatus, Failure>;

    /// Where the doorbell's CPU VA points: `Some(page)` the physical doorbell, `None` the
    /// OS's dummy page (UM-09). Simulation only.
    fn doorbell_mapping(&self, q: UmQueueRef) -> Result<Option<u32>, Failure>;
}

/// Making the OS do what Windows decides on its own: suspend and resume a process's contexts,
/// power the adapter down and up, a device loss. Simulation only.
pub trait OsControl {
    /// The OS suspends (`DxgkDdiSuspendContext`) every context of `p` (UM-11). Simulation
    /// only: no D3DKMT call does this.
    fn suspend_process(&mut self, p: ProcessRef) -> Result<(), Failure>;

    /// The OS resumes what [`OsControl::suspend_process`] suspended (UM-12). Simulation only.
    fn resume_process(&mut self, p: ProcessRef) -> Result<(), Failure>;

    /// Runtime power-down of adapter `i` to D3 if idle (UM-14); whether it powered down.
    /// Simulation only (Windows decides by itself).
    fn power_down(&mut self, i: usize) -> Result<bool, Failure>;

    /// D3 → D0 without a submission. Simulation only.
    fn power_up(&mut self, i: usize) -> Result<(), Failure>;

    /// Device loss on adapter `i` (UM-10). Simulation only (a Windows backend could force a
    /// TDR with `dxcap -forcetdr` for something close to `Removed`).
    fn device_loss(&mut self, i: usize, how: DeviceLoss) -> Result<(), Failure>;
}

/// VidMm's paging transfers into a buffer, built by the driver. Simulation only (Windows pages
/// when it decides to).
pub trait Paging {
    /// VidMm pages in part of `b` with the FILL `fill` describes, built by
    /// `DxgkDdiBuildPagingBuffer` and submitted as paging buffers on its node; returns their
    /// fence IDs. Simulation only.
    fn page_in(&mut self, b: BufferRef, fill: PagingFill) -> Result<Vec<u32>, Failure>;
}

/// Faults injected into the device or the driver: a shared-line interrupt, hangs, failing
/// resets, forced TDRs, the TDR-07 pause, and the misbehaving drivers of
/// [`SessionConfig::misbehaviour`](super::SessionConfig::misbehaviour) (a backend without this capability refuses such a
/// configuration). Simulation only.
pub trait FaultInjection {
    /// Raises one interrupt on adapter `i`'s line as a shared line would (simulation only).
    fn raise_interrupt(&mut self, i: usize) -> Result<(), Failure>;

    /// The device's engine `node` hangs now, wherever it is (mid DMA buffer). Simulation only.
    fn inject_hang(&mut self, i: usize, node: u32) -> Result<(), Failure>;

    /// The device's next reset of engine `node` fails (TDR-09). Simulation only.
    fn fail_next_reset(&mut self, i: usize, node: u32) -> Result<(), Failure>;

    /// Runs the TDR sequence on `node` now, as if its timeout had expired. Simulation only.
    fn force_tdr(&mut self, i: usize, node: u32) -> Result<(), Failure>;

    /// Arms the TDR-07 race on adapter `i`: between the OS's snapshot and
    /// `DxgkDdiResetEngine` engine `node` runs until it has no work. Simulation only.
    fn complete_before_reset(&mut self, i: usize, node: u32) -> Result<(), Failure>;
}

/// The OS's recovery of a hang held open at a point of the harness's choosing, so that
/// something else happens meanwhile. Simulation only: a pause hook of the simulated OS; no
/// D3DKMT call pauses Windows' recovery, and the KMD's test hooks fail a reset or hang a paging
/// buffer but hold none open.
pub trait HeldRecovery {
    /// Submits a HANG on user-mode queue `hang` of process `p` and kills `p` while adapter
    /// `i`'s recovery of it is under way: the OS pauses after its snapshot, before the
    /// driver's engine reset, and another thread kills `p` (in place of
    /// [`super::UserModeSubmission::end_process`]). Returns once the kill has ended: whether it
    /// ended while the recovery was still paused.
    fn kill_during_recovery(
        &mut self,
        i: usize,
        p: ProcessRef,
        hang: UmQueueRef,
    ) -> Result<bool, Failure>;
}

/// Calling the driver's DDIs directly, bypassing the OS (or the way Windows never would).
/// Simulation only.
pub trait DirectDdi {
    /// Queries `DXGKQAITYPE_DRIVERCAPS` from a thread at DISPATCH_LEVEL, which Windows never
    /// does (simulation only: proves the OS side enforces IRQL rules).
    fn driver_caps_at_dispatch(&mut self, i: usize) -> Result<DriverCaps, Failure>;

    /// Calls DxgkDdiDestroyNativeFence directly for `f`'s global handle, bypassing the OS
    /// (simulation only); the driver's NTSTATUS.
    fn raw_destroy_native_fence(&mut self, f: FenceRef) -> Result<i32, Failure>;

    /// Submits `work` to the user-mode queue's own hardware queue straight through
    /// `DxgkDdiSubmitCommandToHwQueue`, bypassing the OS's UM-05 check; the KMD's NTSTATUS.
    fn ddi_submit_on_user_queue(&mut self, q: UmQueueRef, work: &[Work]) -> Result<i32, Failure>;

    /// `DxgkDdiQueryCurrentFence(node)`: the KMD's last completed fence ID. Simulation only.
    fn current_fence(&mut self, i: usize, node: u32) -> Result<u32, Failure>;

    /// `DxgkDdiQueryDependentEngineGroup(node)`. Simulation only.
    fn dependent_engine_group(&mut self, i: usize, node: u32) -> Result<u64, Failure>;

    /// `DxgkDdiCollectDbgInfo(reason)` at PASSIVE_LEVEL; the text. Simulation only.
    fn collect_dbg_info(&mut self, i: usize, reason: u32) -> Result<String, Failure>;

    /// TDR-01 level 0, threaded sessions with TDR enabled: one thread calls
    /// `DxgkDdiCollectDbgInfo(0x141)` in a loop and another `QueryAdapterInfo(DRIVERCAPS)` while
    /// a HANG submitted on `node` (kernel-mode path) is detected and reset. Simulation only.
    fn collect_dbg_info_under_reset(&mut self, i: usize, node: u32)
        -> Result<DbgInfoRace, Failure>;
}

/// Deterministic stepping ([`ExecMode::Step`](super::ExecMode::Step)): run the machine until nothing happens any more.
/// Simulation only (a real backend ignores the mode).
pub trait StepMode {
    /// Step mode: runs the machine until nothing happens any more.
    fn run_until_idle(&mut self) -> Result<(), Failure>;
}

/// Observing a bug check: the machine halts and the session reports it instead of rebooting.
/// Simulation only.
pub trait BugChecks {
    /// The bug check that halted the machine, if any.
    fn bugcheck(&self) -> Option<BugCheckInfo>;
}

/// Buffers with the UMD's own usage tracking (`rvgpu_umd::usage::Buffer`, AL-01 …
/// AL-03): CPU locks with the `RVGPU_LOCK_*` flags, and GPU work encoded through the UMD so it
/// knows which backing each batch uses. Everything here is what an application sees through
/// the UMD; a Windows backend can offer it with the same UMD over the real thunks.
pub trait AllocationUsage {
    /// A CPU-visible tracked buffer of `bytes` bytes for process `p`.
    fn create_tracked(&mut self, p: ProcessRef, bytes: u64) -> Result<TrackedRef, Failure>;

    /// Submits `batch` to `q`; returns the progress value that marks its completion.
    fn submit_tracked(&mut self, q: UmQueueRef, batch: TrackedBatch<'_>) -> Result<u64, Failure>;

    /// `Buffer::lock` with `flags` (`rvgpu_umd::usage::LockFlags` bits), naming every queue of
    /// the buffer's process.
    fn lock_tracked(&mut self, b: TrackedRef, flags: u32) -> Result<LockOutcome, Failure>;

    /// The u64 at `offset` of the locked buffer, through the view the lock returned.
    fn read_tracked(&self, b: TrackedRef, offset: u64) -> Result<u64, Failure>;

    /// Stores `value` at `offset` through the view the lock returned.
    fn write_tracked(&mut self, b: TrackedRef, offset: u64, value: u64) -> Result<(), Failure>;

    /// `Buffer::unlock`.
    fn unlock_tracked(&mut self, b: TrackedRef) -> Result<(), Failure>;

    /// The buffer's current backing and counters.
    fn tracked_info(&self, b: TrackedRef) -> Result<TrackedInfo, Failure>;

    /// `Buffer::destroy` (never blocks: a backing still in use is left to VidMm, AL-03).
    fn destroy_tracked(&mut self, b: TrackedRef) -> Result<(), Failure>;
}

/// GPU virtual addresses a process places itself (docs/memory.md "GPU VA thunks"):
/// `D3DKMTReserveGpuVirtualAddress`, `D3DKMTMapGpuVirtualAddress` on a paging queue of the
/// process, `D3DKMTFreeGpuVirtualAddress`, and a user-mode queue's write to a raw VA.
pub trait GpuVaPlacement {
    /// Reserves `bytes` (a multiple of 4 KiB) of process `p`'s GPU VA space at `base`
    /// (64 KiB aligned; 0: the OS chooses); returns the range's VA.
    fn reserve_va(&mut self, p: ProcessRef, base: u64, bytes: u64) -> Result<u64, Failure>;

    /// Maps `pages` of buffer `b` read-write at `va` (inside a range its process reserved)
    /// and waits for the paging fence.
    fn map_va(&mut self, b: BufferRef, pages: Pages, va: u64) -> Result<(), Failure>;

    /// Frees the range of process `p` that starts at `base` (every page of it unmapped).
    fn free_va(&mut self, p: ProcessRef, base: u64) -> Result<(), Failure>;

    /// Submits one 8-byte FILL of `pattern` at GPU VA `va` to user-mode queue `q`; returns
    /// the progress value that marks its completion.
    fn fill_va(&mut self, q: UmQueueRef, va: u64, pattern: u64) -> Result<u64, Failure>;
}
