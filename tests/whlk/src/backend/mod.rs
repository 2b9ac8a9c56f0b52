//! Backends: what the cases run against.
//!
//! A case never talks to the simulated OS directly: it opens a [`Session`] (one machine with
//! its adapters, fresh for each case) on a [`Backend`] and uses the abstract adapter API below.
//! The default backend is [`sim::SimBackend`], the emulated GPU under the simulated OS. A
//! Windows backend (the installed driver through D3DKMT) implements the same traits; what it
//! cannot do (fault injection into the kernel, stepping the device, reading a bug check that
//! rebooted the machine) it reports as [`Failure::Unsupported`], and the runner turns that into
//! a skip with the reason.

pub mod sim;

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

fn unsupported<T>(what: &str) -> Result<T, Failure> {
    Err(Failure::Unsupported(format!(
        "{what} is not implemented by this backend"
    )))
}

/// One machine with its adapters, for one case.
///
/// The native-fence methods have defaults that report [`Failure::Unsupported`]: a backend
/// without them skips the fence cases. The GPU-queue methods stand in for a submission path
/// (the driver has none yet, issue 6).
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
}

/// Something that opens sessions.
pub trait Backend: Send + Sync {
    /// Name shown in reports (`sim`, later `windows`).
    fn name(&self) -> &'static str;
    /// Opens a fresh session.
    fn open(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure>;
}
