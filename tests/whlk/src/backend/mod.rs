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

/// One machine with its adapters, for one case.
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
}

/// Something that opens sessions.
pub trait Backend: Send + Sync {
    /// Name shown in reports (`sim`, later `windows`).
    fn name(&self) -> &'static str;
    /// Opens a fresh session.
    fn open(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure>;
}
