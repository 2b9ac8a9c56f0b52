//! The session every backend opens (the driver and adapter life cycle, and the way to its
//! capabilities) and the backend that opens it.

use std::cell::Cell;
use std::time::Duration;

use super::{
    AllocationUsage, BugChecks, Capabilities, Capability, CrossAdapterFences, DirectDdi,
    DriverCaps, Failure, FaultInjection, FenceLogs, Fences, GpuVaPlacement, OsControl, OsTrace,
    SessionConfig, StartedAdapter, StepMode, Tdr, TdrTrace, UmdFences, UserModeSubmission,
};

/// Inside `impl Session for T`: the accessors of the capability traits `T` implements, each
/// answering `Some(self)`. A row `as_x / as_x_ref: Trait` gives both; `as_x: Trait` only the
/// mutable one (the traits without a shared accessor).
macro_rules! capabilities {
    ($($get:ident $(/ $get_ref:ident)? : $tr:path),* $(,)?) => {
        $(
            fn $get(&mut self) -> Option<&mut dyn $tr> {
                Some(self)
            }
            $(
                fn $get_ref(&self) -> Option<&dyn $tr> {
                    Some(self)
                }
            )?
        )*
    };
}
pub(crate) use capabilities;

/// One machine with its adapters, for one case: the driver and adapter life cycle every
/// backend has, and the capability traits ([`super::caps`]) the backend implements. `as_x` returns
/// `None` for a capability the backend lacks; cases reach them through [`dyn Session`]'s
/// helpers (`s.fences()?`, `s.fences_ref()?`), which report a missing one as
/// [`Failure::Unsupported`] and let the runner check that the case declared what it used.
pub trait Session {
    /// Number of adapters.
    fn adapter_count(&self) -> usize;

    /// Loads the driver (DriverEntry → DxgkInitialize).
    fn load_driver(&mut self) -> Result<(), Failure>;

    /// Adds and starts adapter `i` (AddDevice, StartDevice, the start-time adapter queries).
    fn start_adapter(&mut self, i: usize) -> Result<StartedAdapter, Failure>;

    /// Queries `DXGKQAITYPE_DRIVERCAPS` on a started adapter.
    fn driver_caps(&mut self, i: usize) -> Result<DriverCaps, Failure>;

    /// Stops adapter `i`.
    fn stop_adapter(&mut self, i: usize) -> Result<(), Failure>;

    /// Removes adapter `i`.
    fn remove_adapter(&mut self, i: usize) -> Result<(), Failure>;

    /// Unloads the driver.
    fn unload(&mut self) -> Result<(), Failure>;

    /// Lets the device, the ISR and DPCs run until `done` holds or `budget` passes.
    fn run_until(
        &mut self,
        budget: Duration,
        done: &mut dyn FnMut(&dyn Session) -> bool,
    ) -> Result<bool, Failure>;

    /// The [`Fences`] capability, if the backend has it.
    fn as_fences(&mut self) -> Option<&mut dyn Fences> {
        None
    }
    /// [`Session::as_fences`] for shared access.
    fn as_fences_ref(&self) -> Option<&dyn Fences> {
        None
    }

    /// The [`CrossAdapterFences`] capability, if the backend has it.
    fn as_cross_adapter(&mut self) -> Option<&mut dyn CrossAdapterFences> {
        None
    }
    /// [`Session::as_cross_adapter`] for shared access.
    fn as_cross_adapter_ref(&self) -> Option<&dyn CrossAdapterFences> {
        None
    }

    /// The [`UserModeSubmission`] capability, if the backend has it.
    fn as_ums(&mut self) -> Option<&mut dyn UserModeSubmission> {
        None
    }
    /// [`Session::as_ums`] for shared access.
    fn as_ums_ref(&self) -> Option<&dyn UserModeSubmission> {
        None
    }

    /// The [`AllocationUsage`] capability, if the backend has it.
    fn as_alloc_usage(&mut self) -> Option<&mut dyn AllocationUsage> {
        None
    }
    /// The [`GpuVaPlacement`] capability, if the backend has it.
    fn as_gpu_va(&mut self) -> Option<&mut dyn GpuVaPlacement> {
        None
    }
    /// [`Session::as_alloc_usage`] for shared access.
    fn as_alloc_usage_ref(&self) -> Option<&dyn AllocationUsage> {
        None
    }

    /// The [`UmdFences`] capability, if the backend has it.
    fn as_umd_fences(&mut self) -> Option<&mut dyn UmdFences> {
        None
    }
    /// [`Session::as_umd_fences`] for shared access.
    fn as_umd_fences_ref(&self) -> Option<&dyn UmdFences> {
        None
    }

    /// The [`FenceLogs`] capability, if the backend has it.
    fn as_fence_logs(&mut self) -> Option<&mut dyn FenceLogs> {
        None
    }
    /// [`Session::as_fence_logs`] for shared access.
    fn as_fence_logs_ref(&self) -> Option<&dyn FenceLogs> {
        None
    }

    /// The [`super::testing::KernelModeTesting`] capability, if the backend has it.
    fn as_kmtest(&mut self) -> Option<&mut dyn super::testing::KernelModeTesting> {
        None
    }

    /// The [`Tdr`] capability, if the backend has it.
    fn as_tdr(&mut self) -> Option<&mut dyn Tdr> {
        None
    }
    /// [`Session::as_tdr`] for shared access.
    fn as_tdr_ref(&self) -> Option<&dyn Tdr> {
        None
    }

    /// The [`TdrTrace`] capability, if the backend has it.
    fn as_tdr_trace(&mut self) -> Option<&mut dyn TdrTrace> {
        None
    }
    /// [`Session::as_tdr_trace`] for shared access.
    fn as_tdr_trace_ref(&self) -> Option<&dyn TdrTrace> {
        None
    }

    /// The [`OsTrace`] capability, if the backend has it.
    fn as_os_trace(&mut self) -> Option<&mut dyn OsTrace> {
        None
    }
    /// [`Session::as_os_trace`] for shared access.
    fn as_os_trace_ref(&self) -> Option<&dyn OsTrace> {
        None
    }

    /// The [`OsControl`] capability, if the backend has it.
    fn as_os_control(&mut self) -> Option<&mut dyn OsControl> {
        None
    }
    /// [`Session::as_os_control`] for shared access.
    fn as_os_control_ref(&self) -> Option<&dyn OsControl> {
        None
    }

    /// The [`FaultInjection`] capability, if the backend has it.
    fn as_faults(&mut self) -> Option<&mut dyn FaultInjection> {
        None
    }
    /// [`Session::as_faults`] for shared access.
    fn as_faults_ref(&self) -> Option<&dyn FaultInjection> {
        None
    }

    /// The [`DirectDdi`] capability, if the backend has it.
    fn as_direct_ddi(&mut self) -> Option<&mut dyn DirectDdi> {
        None
    }
    /// [`Session::as_direct_ddi`] for shared access.
    fn as_direct_ddi_ref(&self) -> Option<&dyn DirectDdi> {
        None
    }

    /// The [`StepMode`] capability, if the backend has it.
    fn as_step(&mut self) -> Option<&mut dyn StepMode> {
        None
    }
    /// [`Session::as_step`] for shared access.
    fn as_step_ref(&self) -> Option<&dyn StepMode> {
        None
    }

    /// The [`BugChecks`] capability, if the backend has it.
    fn as_bug_checks(&mut self) -> Option<&mut dyn BugChecks> {
        None
    }
    /// [`Session::as_bug_checks`] for shared access.
    fn as_bug_checks_ref(&self) -> Option<&dyn BugChecks> {
        None
    }
}

thread_local! {
    /// Capabilities the case running on this thread reached through the helpers below.
    static USED: Cell<Capabilities> = const { Cell::new(Capabilities::NONE) };
}

/// Forgets the capabilities recorded on this thread (the runner, before a case).
pub(crate) fn reset_used() {
    USED.with(|u| u.set(Capabilities::NONE));
}

/// The capabilities used on this thread since [`reset_used`].
pub(crate) fn used() -> Capabilities {
    USED.with(Cell::get)
}

fn reach<T>(cap: Capability, found: Option<T>) -> Result<T, Failure> {
    USED.with(|u| u.set(u.get().with(cap)));
    found.ok_or_else(|| Failure::Unsupported(format!("the backend lacks the {cap} capability")))
}

/// How cases reach a session's capabilities: `Err(Unsupported)` when the backend lacks it (the
/// case is skipped, or leaves out an optional observation), and the use is recorded for the
/// runner's check of the case's declaration.
impl dyn Session + '_ {
    /// The [`Fences`] capability.
    pub fn fences(&mut self) -> Result<&mut dyn Fences, Failure> {
        reach(Capability::Fences, self.as_fences())
    }
    /// The [`Fences`] capability, shared.
    pub fn fences_ref(&self) -> Result<&dyn Fences, Failure> {
        reach(Capability::Fences, self.as_fences_ref())
    }
    /// The [`CrossAdapterFences`] capability.
    pub fn cross_adapter(&mut self) -> Result<&mut dyn CrossAdapterFences, Failure> {
        reach(Capability::CrossAdapterFences, self.as_cross_adapter())
    }
    /// The [`CrossAdapterFences`] capability, shared.
    pub fn cross_adapter_ref(&self) -> Result<&dyn CrossAdapterFences, Failure> {
        reach(Capability::CrossAdapterFences, self.as_cross_adapter_ref())
    }
    /// The [`UserModeSubmission`] capability.
    pub fn ums(&mut self) -> Result<&mut dyn UserModeSubmission, Failure> {
        reach(Capability::UserModeSubmission, self.as_ums())
    }
    /// The [`UserModeSubmission`] capability, shared.
    pub fn ums_ref(&self) -> Result<&dyn UserModeSubmission, Failure> {
        reach(Capability::UserModeSubmission, self.as_ums_ref())
    }
    /// The [`UmdFences`] capability.
    pub fn umd_fences(&mut self) -> Result<&mut dyn UmdFences, Failure> {
        reach(Capability::UmdFences, self.as_umd_fences())
    }
    /// The [`UmdFences`] capability, shared.
    pub fn umd_fences_ref(&self) -> Result<&dyn UmdFences, Failure> {
        reach(Capability::UmdFences, self.as_umd_fences_ref())
    }
    /// The [`FenceLogs`] capability.
    pub fn fence_logs(&mut self) -> Result<&mut dyn FenceLogs, Failure> {
        reach(Capability::FenceLogs, self.as_fence_logs())
    }
    /// The [`FenceLogs`] capability, shared.
    pub fn fence_logs_ref(&self) -> Result<&dyn FenceLogs, Failure> {
        reach(Capability::FenceLogs, self.as_fence_logs_ref())
    }
    /// The [`Tdr`] capability.
    pub fn tdr(&mut self) -> Result<&mut dyn Tdr, Failure> {
        reach(Capability::Tdr, self.as_tdr())
    }
    /// The [`Tdr`] capability, shared.
    pub fn tdr_ref(&self) -> Result<&dyn Tdr, Failure> {
        reach(Capability::Tdr, self.as_tdr_ref())
    }
    /// The [`TdrTrace`] capability.
    pub fn tdr_trace(&mut self) -> Result<&mut dyn TdrTrace, Failure> {
        reach(Capability::TdrTrace, self.as_tdr_trace())
    }
    /// The [`TdrTrace`] capability, shared.
    pub fn tdr_trace_ref(&self) -> Result<&dyn TdrTrace, Failure> {
        reach(Capability::TdrTrace, self.as_tdr_trace_ref())
    }
    /// The [`OsTrace`] capability.
    pub fn os_trace(&mut self) -> Result<&mut dyn OsTrace, Failure> {
        reach(Capability::OsTrace, self.as_os_trace())
    }
    /// The [`OsTrace`] capability, shared.
    pub fn os_trace_ref(&self) -> Result<&dyn OsTrace, Failure> {
        reach(Capability::OsTrace, self.as_os_trace_ref())
    }
    /// The [`OsControl`] capability.
    pub fn os_control(&mut self) -> Result<&mut dyn OsControl, Failure> {
        reach(Capability::OsControl, self.as_os_control())
    }
    /// The [`OsControl`] capability, shared.
    pub fn os_control_ref(&self) -> Result<&dyn OsControl, Failure> {
        reach(Capability::OsControl, self.as_os_control_ref())
    }
    /// The [`FaultInjection`] capability.
    pub fn faults(&mut self) -> Result<&mut dyn FaultInjection, Failure> {
        reach(Capability::FaultInjection, self.as_faults())
    }
    /// The [`FaultInjection`] capability, shared.
    pub fn faults_ref(&self) -> Result<&dyn FaultInjection, Failure> {
        reach(Capability::FaultInjection, self.as_faults_ref())
    }
    /// The [`DirectDdi`] capability.
    pub fn direct_ddi(&mut self) -> Result<&mut dyn DirectDdi, Failure> {
        reach(Capability::DirectDdi, self.as_direct_ddi())
    }
    /// The [`DirectDdi`] capability, shared.
    pub fn direct_ddi_ref(&self) -> Result<&dyn DirectDdi, Failure> {
        reach(Capability::DirectDdi, self.as_direct_ddi_ref())
    }
    /// The [`StepMode`] capability.
    pub fn step(&mut self) -> Result<&mut dyn StepMode, Failure> {
        reach(Capability::StepMode, self.as_step())
    }
    /// The [`StepMode`] capability, shared.
    pub fn step_ref(&self) -> Result<&dyn StepMode, Failure> {
        reach(Capability::StepMode, self.as_step_ref())
    }
    /// The [`BugChecks`] capability.
    pub fn bug_checks(&mut self) -> Result<&mut dyn BugChecks, Failure> {
        reach(Capability::BugChecks, self.as_bug_checks())
    }
    /// The [`BugChecks`] capability, shared.
    pub fn bug_checks_ref(&self) -> Result<&dyn BugChecks, Failure> {
        reach(Capability::BugChecks, self.as_bug_checks_ref())
    }
    /// The [`AllocationUsage`] capability.
    pub fn alloc_usage(&mut self) -> Result<&mut dyn AllocationUsage, Failure> {
        reach(Capability::AllocationUsage, self.as_alloc_usage())
    }
    /// The [`AllocationUsage`] capability, shared.
    pub fn alloc_usage_ref(&self) -> Result<&dyn AllocationUsage, Failure> {
        reach(Capability::AllocationUsage, self.as_alloc_usage_ref())
    }
    /// The [`super::testing::KernelModeTesting`] capability.
    pub fn kmtest(&mut self) -> Result<&mut dyn super::testing::KernelModeTesting, Failure> {
        reach(Capability::KernelModeTesting, self.as_kmtest())
    }
    /// The [`GpuVaPlacement`] capability.
    pub fn gpu_va(&mut self) -> Result<&mut dyn GpuVaPlacement, Failure> {
        reach(Capability::GpuVaPlacement, self.as_gpu_va())
    }
}

/// Something that opens sessions.
pub trait Backend: Send + Sync {
    /// Name shown in reports (`sim`, later `windows`).
    fn name(&self) -> &'static str;
    /// What its sessions can do beyond the life cycle: every capability listed here has its
    /// `Session::as_x` return `Some`.
    fn capabilities(&self) -> Capabilities;
    /// Opens a fresh session for `config` (cases call [`dyn Backend`]'s `open`, which first
    /// checks the capabilities the configuration needs).
    fn open_session(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure>;
}

impl dyn Backend + '_ {
    /// Opens a fresh session. A configuration that builds a particular machine
    /// ([`SessionConfig::configures_machine`]) needs [`Capability::ConfiguredMachine`], one
    /// with a misbehaving driver [`Capability::FaultInjection`]: `Unsupported` on a backend
    /// without them, and recorded for the runner's check of the case's declaration.
    pub fn open(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure> {
        let has = self.capabilities();
        if config.configures_machine() {
            let c = Capability::ConfiguredMachine;
            reach(c, has.contains(c).then_some(()))?;
        }
        if config.misbehaviour.is_some() {
            let c = Capability::FaultInjection;
            reach(c, has.contains(c).then_some(()))?;
        }
        self.open_session(config)
    }
}
