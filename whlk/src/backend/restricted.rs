//! A backend with fewer capabilities than the one it wraps: the same sessions, with the hidden
//! capabilities' `as_x` returning `None`. It shows how a case list runs on a backend that can
//! do less (a Windows backend, say) and proves the runner's skipping in tests.

use std::time::Duration;

use super::{
    AllocationUsage, Backend, BugChecks, Capabilities, Capability, CrossAdapterFences, DirectDdi,
    DriverCaps, Failure, FaultInjection, FenceLogs, Fences, GpuVaPlacement, OsControl, OsTrace,
    Session, SessionConfig, StartedAdapter, StepMode, Tdr, TdrTrace, UmdFences, UserModeSubmission,
};

/// `inner` with only the capabilities in `keep`.
#[derive(Clone, Copy, Debug)]
pub struct Restricted<B> {
    inner: B,
    keep: Capabilities,
}

impl<B: Backend> Restricted<B> {
    /// `inner` without `hide`.
    pub fn without(inner: B, hide: &[Capability]) -> Self {
        Self {
            inner,
            keep: Capabilities::all().difference(Capabilities::of(hide)),
        }
    }
}

impl<B: Backend> Backend for Restricted<B> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities().intersection(self.keep)
    }

    fn open_session(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure> {
        Ok(Box::new(RestrictedSession {
            inner: self.inner.open_session(config)?,
            keep: self.keep,
        }))
    }
}

struct RestrictedSession {
    inner: Box<dyn Session>,
    keep: Capabilities,
}

/// What a `run_until` condition sees: the session, read-only, with the same capabilities.
struct View<'a> {
    inner: &'a dyn Session,
    keep: Capabilities,
}

fn read_only<T>() -> Result<T, Failure> {
    Err(Failure::Backend(
        "a run_until condition cannot change the session".into(),
    ))
}

impl Session for RestrictedSession {
    fn adapter_count(&self) -> usize {
        self.inner.adapter_count()
    }
    fn load_driver(&mut self) -> Result<(), Failure> {
        self.inner.load_driver()
    }
    fn start_adapter(&mut self, i: usize) -> Result<StartedAdapter, Failure> {
        self.inner.start_adapter(i)
    }
    fn driver_caps(&mut self, i: usize) -> Result<DriverCaps, Failure> {
        self.inner.driver_caps(i)
    }
    fn stop_adapter(&mut self, i: usize) -> Result<(), Failure> {
        self.inner.stop_adapter(i)
    }
    fn remove_adapter(&mut self, i: usize) -> Result<(), Failure> {
        self.inner.remove_adapter(i)
    }
    fn unload(&mut self) -> Result<(), Failure> {
        self.inner.unload()
    }
    fn run_until(
        &mut self,
        budget: Duration,
        done: &mut dyn FnMut(&dyn Session) -> bool,
    ) -> Result<bool, Failure> {
        let keep = self.keep;
        self.inner
            .run_until(budget, &mut |s| done(&View { inner: s, keep }))
    }
    fn as_fences(&mut self) -> Option<&mut dyn Fences> {
        if self.keep.contains(Capability::Fences) {
            self.inner.as_fences()
        } else {
            None
        }
    }
    fn as_fences_ref(&self) -> Option<&dyn Fences> {
        if self.keep.contains(Capability::Fences) {
            self.inner.as_fences_ref()
        } else {
            None
        }
    }
    fn as_cross_adapter(&mut self) -> Option<&mut dyn CrossAdapterFences> {
        if self.keep.contains(Capability::CrossAdapterFences) {
            self.inner.as_cross_adapter()
        } else {
            None
        }
    }
    fn as_cross_adapter_ref(&self) -> Option<&dyn CrossAdapterFences> {
        if self.keep.contains(Capability::CrossAdapterFences) {
            self.inner.as_cross_adapter_ref()
        } else {
            None
        }
    }
    fn as_ums(&mut self) -> Option<&mut dyn UserModeSubmission> {
        if self.keep.contains(Capability::UserModeSubmission) {
            self.inner.as_ums()
        } else {
            None
        }
    }
    fn as_ums_ref(&self) -> Option<&dyn UserModeSubmission> {
        if self.keep.contains(Capability::UserModeSubmission) {
            self.inner.as_ums_ref()
        } else {
            None
        }
    }
    fn as_alloc_usage(&mut self) -> Option<&mut dyn AllocationUsage> {
        if self.keep.contains(Capability::AllocationUsage) {
            self.inner.as_alloc_usage()
        } else {
            None
        }
    }
    fn as_gpu_va(&mut self) -> Option<&mut dyn GpuVaPlacement> {
        if self.keep.contains(Capability::GpuVaPlacement) {
            self.inner.as_gpu_va()
        } else {
            None
        }
    }
    fn as_kmtest(&mut self) -> Option<&mut dyn super::testing::KernelModeTesting> {
        if self.keep.contains(Capability::KernelModeTesting) {
            self.inner.as_kmtest()
        } else {
            None
        }
    }
    fn as_alloc_usage_ref(&self) -> Option<&dyn AllocationUsage> {
        if self.keep.contains(Capability::AllocationUsage) {
            self.inner.as_alloc_usage_ref()
        } else {
            None
        }
    }
    fn as_umd_fences(&mut self) -> Option<&mut dyn UmdFences> {
        if self.keep.contains(Capability::UmdFences) {
            self.inner.as_umd_fences()
        } else {
            None
        }
    }
    fn as_umd_fences_ref(&self) -> Option<&dyn UmdFences> {
        if self.keep.contains(Capability::UmdFences) {
            self.inner.as_umd_fences_ref()
        } else {
            None
        }
    }
    fn as_fence_logs(&mut self) -> Option<&mut dyn FenceLogs> {
        if self.keep.contains(Capability::FenceLogs) {
            self.inner.as_fence_logs()
        } else {
            None
        }
    }
    fn as_fence_logs_ref(&self) -> Option<&dyn FenceLogs> {
        if self.keep.contains(Capability::FenceLogs) {
            self.inner.as_fence_logs_ref()
        } else {
            None
        }
    }
    fn as_tdr(&mut self) -> Option<&mut dyn Tdr> {
        if self.keep.contains(Capability::Tdr) {
            self.inner.as_tdr()
        } else {
            None
        }
    }
    fn as_tdr_ref(&self) -> Option<&dyn Tdr> {
        if self.keep.contains(Capability::Tdr) {
            self.inner.as_tdr_ref()
        } else {
            None
        }
    }
    fn as_tdr_trace(&mut self) -> Option<&mut dyn TdrTrace> {
        if self.keep.contains(Capability::TdrTrace) {
            self.inner.as_tdr_trace()
        } else {
            None
        }
    }
    fn as_tdr_trace_ref(&self) -> Option<&dyn TdrTrace> {
        if self.keep.contains(Capability::TdrTrace) {
            self.inner.as_tdr_trace_ref()
        } else {
            None
        }
    }
    fn as_os_trace(&mut self) -> Option<&mut dyn OsTrace> {
        if self.keep.contains(Capability::OsTrace) {
            self.inner.as_os_trace()
        } else {
            None
        }
    }
    fn as_os_trace_ref(&self) -> Option<&dyn OsTrace> {
        if self.keep.contains(Capability::OsTrace) {
            self.inner.as_os_trace_ref()
        } else {
            None
        }
    }
    fn as_os_control(&mut self) -> Option<&mut dyn OsControl> {
        if self.keep.contains(Capability::OsControl) {
            self.inner.as_os_control()
        } else {
            None
        }
    }
    fn as_os_control_ref(&self) -> Option<&dyn OsControl> {
        if self.keep.contains(Capability::OsControl) {
            self.inner.as_os_control_ref()
        } else {
            None
        }
    }
    fn as_faults(&mut self) -> Option<&mut dyn FaultInjection> {
        if self.keep.contains(Capability::FaultInjection) {
            self.inner.as_faults()
        } else {
            None
        }
    }
    fn as_faults_ref(&self) -> Option<&dyn FaultInjection> {
        if self.keep.contains(Capability::FaultInjection) {
            self.inner.as_faults_ref()
        } else {
            None
        }
    }
    fn as_direct_ddi(&mut self) -> Option<&mut dyn DirectDdi> {
        if self.keep.contains(Capability::DirectDdi) {
            self.inner.as_direct_ddi()
        } else {
            None
        }
    }
    fn as_direct_ddi_ref(&self) -> Option<&dyn DirectDdi> {
        if self.keep.contains(Capability::DirectDdi) {
            self.inner.as_direct_ddi_ref()
        } else {
            None
        }
    }
    fn as_step(&mut self) -> Option<&mut dyn StepMode> {
        if self.keep.contains(Capability::StepMode) {
            self.inner.as_step()
        } else {
            None
        }
    }
    fn as_step_ref(&self) -> Option<&dyn StepMode> {
        if self.keep.contains(Capability::StepMode) {
            self.inner.as_step_ref()
        } else {
            None
        }
    }
    fn as_bug_checks(&mut self) -> Option<&mut dyn BugChecks> {
        if self.keep.contains(Capability::BugChecks) {
            self.inner.as_bug_checks()
        } else {
            None
        }
    }
    fn as_bug_checks_ref(&self) -> Option<&dyn BugChecks> {
        if self.keep.contains(Capability::BugChecks) {
            self.inner.as_bug_checks_ref()
        } else {
            None
        }
    }
}

impl Session for View<'_> {
    fn adapter_count(&self) -> usize {
        self.inner.adapter_count()
    }
    fn load_driver(&mut self) -> Result<(), Failure> {
        read_only()
    }
    fn start_adapter(&mut self, _i: usize) -> Result<StartedAdapter, Failure> {
        read_only()
    }
    fn driver_caps(&mut self, _i: usize) -> Result<DriverCaps, Failure> {
        read_only()
    }
    fn stop_adapter(&mut self, _i: usize) -> Result<(), Failure> {
        read_only()
    }
    fn remove_adapter(&mut self, _i: usize) -> Result<(), Failure> {
        read_only()
    }
    fn unload(&mut self) -> Result<(), Failure> {
        read_only()
    }
    fn run_until(
        &mut self,
        _budget: Duration,
        _done: &mut dyn FnMut(&dyn Session) -> bool,
    ) -> Result<bool, Failure> {
        read_only()
    }
    fn as_fences_ref(&self) -> Option<&dyn Fences> {
        if self.keep.contains(Capability::Fences) {
            self.inner.as_fences_ref()
        } else {
            None
        }
    }
    fn as_cross_adapter_ref(&self) -> Option<&dyn CrossAdapterFences> {
        if self.keep.contains(Capability::CrossAdapterFences) {
            self.inner.as_cross_adapter_ref()
        } else {
            None
        }
    }
    fn as_ums_ref(&self) -> Option<&dyn UserModeSubmission> {
        if self.keep.contains(Capability::UserModeSubmission) {
            self.inner.as_ums_ref()
        } else {
            None
        }
    }
    fn as_alloc_usage_ref(&self) -> Option<&dyn AllocationUsage> {
        if self.keep.contains(Capability::AllocationUsage) {
            self.inner.as_alloc_usage_ref()
        } else {
            None
        }
    }
    fn as_umd_fences_ref(&self) -> Option<&dyn UmdFences> {
        if self.keep.contains(Capability::UmdFences) {
            self.inner.as_umd_fences_ref()
        } else {
            None
        }
    }
    fn as_fence_logs_ref(&self) -> Option<&dyn FenceLogs> {
        if self.keep.contains(Capability::FenceLogs) {
            self.inner.as_fence_logs_ref()
        } else {
            None
        }
    }
    fn as_tdr_ref(&self) -> Option<&dyn Tdr> {
        if self.keep.contains(Capability::Tdr) {
            self.inner.as_tdr_ref()
        } else {
            None
        }
    }
    fn as_tdr_trace_ref(&self) -> Option<&dyn TdrTrace> {
        if self.keep.contains(Capability::TdrTrace) {
            self.inner.as_tdr_trace_ref()
        } else {
            None
        }
    }
    fn as_os_trace_ref(&self) -> Option<&dyn OsTrace> {
        if self.keep.contains(Capability::OsTrace) {
            self.inner.as_os_trace_ref()
        } else {
            None
        }
    }
    fn as_os_control_ref(&self) -> Option<&dyn OsControl> {
        if self.keep.contains(Capability::OsControl) {
            self.inner.as_os_control_ref()
        } else {
            None
        }
    }
    fn as_faults_ref(&self) -> Option<&dyn FaultInjection> {
        if self.keep.contains(Capability::FaultInjection) {
            self.inner.as_faults_ref()
        } else {
            None
        }
    }
    fn as_direct_ddi_ref(&self) -> Option<&dyn DirectDdi> {
        if self.keep.contains(Capability::DirectDdi) {
            self.inner.as_direct_ddi_ref()
        } else {
            None
        }
    }
    fn as_step_ref(&self) -> Option<&dyn StepMode> {
        if self.keep.contains(Capability::StepMode) {
            self.inner.as_step_ref()
        } else {
            None
        }
    }
    fn as_bug_checks_ref(&self) -> Option<&dyn BugChecks> {
        if self.keep.contains(Capability::BugChecks) {
            self.inner.as_bug_checks_ref()
        } else {
            None
        }
    }
}
