//! Capabilities: what a backend's session can do beyond the core life cycle
//! ([`super::Session`]), one module per feature area holding its trait and the types of its
//! calls. A backend implements the traits of what it can do and says so in
//! [`super::Backend::capabilities`]; each case names the capabilities it needs
//! ([`crate::case::Case::needs`]) and the runner skips it on a backend that lacks one. The
//! traits say "Simulation only" where a Windows backend (D3DKMT on a real machine) cannot
//! implement them.
//!
//! `capability_table!` is the one list of capabilities: [`Capability`], its names, which a
//! Windows backend could have, `Session`'s accessors and helpers, and [`super::restricted`]'s
//! forwarding are all generated from it, so a new capability is one row there (and its module).

use std::fmt;

pub mod allocation_usage;
pub mod bug_checks;
pub mod cross_adapter;
pub mod direct_ddi;
pub mod dma_contexts;
pub mod engine_idle;
pub mod fault_injection;
pub mod fence_internals;
pub mod fence_logs;
pub mod fences;
pub mod gpu_va;
pub mod held_recovery;
pub mod kmd_caps;
pub mod kmd_faults;
pub mod kmd_journal;
pub mod monitored;
pub mod os_control;
pub mod os_trace;
pub mod paging;
pub mod step_mode;
pub mod tdr;
pub mod tdr_trace;
pub mod umd_bypass;
pub mod umd_fences;
pub mod user_mode;

pub use allocation_usage::{
    AllocationUsage, LockOutcome, TrackedBatch, TrackedInfo, TrackedRef, TrackedWork,
};
pub use bug_checks::BugChecks;
pub use cross_adapter::CrossAdapterFences;
pub use direct_ddi::{DbgInfoRace, DirectDdi};
pub use dma_contexts::{ContextRef, DmaContexts};
pub use engine_idle::EngineIdle;
pub use fault_injection::FaultInjection;
pub use fence_internals::{FenceInternals, FenceValues};
pub use fence_logs::{FenceLogs, LogCounters, LogKind, QueueLogs};
pub use fences::{EventRef, FenceRef, Fences, NewFence, OwnFenceMapping, QueueRef, WaitResult};
pub use gpu_va::GpuVaPlacement;
pub use held_recovery::HeldRecovery;
pub use kmd_caps::{DriverCaps, KmdCaps, SubmissionCaps};
pub use kmd_faults::KmdFaults;
pub use kmd_journal::KmdJournal;
pub use monitored::{MonitoredFences, MonitoredRef};
pub use os_control::{DeviceLoss, OsControl};
pub use os_trace::{EngineStateChange, OsEvent, OsTrace, PowerStatus};
pub use paging::{Pages, Paging, PagingFill};
pub use step_mode::StepMode;
pub use tdr::{StreamLane, StreamReport, Tdr, TdrTimeouts};
pub use tdr_trace::{EngineProbe, TdrCause, TdrStep, TdrTrace};
pub use umd_bypass::UmdBypass;
pub use umd_fences::{FenceWork, UmFenceRef, UmdFences};
pub(crate) use user_mode::{address_in, encode_work};
pub use user_mode::{
    BufferRef, ChurnLane, ChurnReport, DoorbellStatus, NewQueue, ProcessEnd, ProcessRef,
    SubmitPath, UmQueueInfo, UmQueueRef, UserModeSubmission, Work,
};

/// Every capability, handed to `$m` in declaration order (the order of [`Capability::ALL`] and
/// of every report). Per row: its doc, the [`Capability`], `windows` or `sim` (whether a
/// Windows backend, D3DKMT on a real machine, could have it at all), and for a capability with
/// a trait the trait, `Session`'s accessor (and its shared form, where the trait has one) and
/// the helper on `dyn Session` (and its shared form).
macro_rules! capability_table {
    ($m:ident) => {
        $m! {
            /// [`Fences`].
            Fences, windows: $crate::backend::caps::Fences =
                as_fences / as_fences_ref, fences / fences_ref;
            /// [`MonitoredFences`].
            MonitoredFences, windows: $crate::backend::caps::MonitoredFences =
                as_monitored / as_monitored_ref, monitored / monitored_ref;
            /// [`FenceInternals`] (simulation only).
            FenceInternals, sim: $crate::backend::caps::FenceInternals =
                as_fence_internals / as_fence_internals_ref, fence_internals / fence_internals_ref;
            /// [`CrossAdapterFences`].
            CrossAdapterFences, windows: $crate::backend::caps::CrossAdapterFences =
                as_cross_adapter / as_cross_adapter_ref, cross_adapter / cross_adapter_ref;
            /// [`UserModeSubmission`].
            UserModeSubmission, windows: $crate::backend::caps::UserModeSubmission =
                as_ums / as_ums_ref, ums / ums_ref;
            /// [`KmdCaps`].
            KmdCaps, windows: $crate::backend::caps::KmdCaps =
                as_kmd_caps / as_kmd_caps_ref, kmd_caps / kmd_caps_ref;
            /// [`UmdBypass`].
            UmdBypass, windows: $crate::backend::caps::UmdBypass =
                as_umd_bypass / as_umd_bypass_ref, umd_bypass / umd_bypass_ref;
            /// [`EngineIdle`] (simulation only).
            EngineIdle, sim: $crate::backend::caps::EngineIdle = as_engine_idle, engine_idle;
            /// [`UmdFences`].
            UmdFences, windows: $crate::backend::caps::UmdFences =
                as_umd_fences / as_umd_fences_ref, umd_fences / umd_fences_ref;
            /// [`FenceLogs`] (simulation only).
            FenceLogs, sim: $crate::backend::caps::FenceLogs =
                as_fence_logs / as_fence_logs_ref, fence_logs / fence_logs_ref;
            /// [`Tdr`].
            Tdr, windows: $crate::backend::caps::Tdr = as_tdr / as_tdr_ref, tdr / tdr_ref;
            /// [`DmaContexts`].
            DmaContexts, windows: $crate::backend::caps::DmaContexts =
                as_dma_contexts, dma_contexts;
            /// [`TdrTrace`] (simulation only).
            TdrTrace, sim: $crate::backend::caps::TdrTrace =
                as_tdr_trace / as_tdr_trace_ref, tdr_trace / tdr_trace_ref;
            /// [`OsTrace`] (simulation only).
            OsTrace, sim: $crate::backend::caps::OsTrace =
                as_os_trace / as_os_trace_ref, os_trace / os_trace_ref;
            /// [`OsControl`] (simulation only).
            OsControl, sim: $crate::backend::caps::OsControl =
                as_os_control / as_os_control_ref, os_control / os_control_ref;
            /// [`Paging`] (simulation only).
            Paging, sim: $crate::backend::caps::Paging = as_paging, paging;
            /// [`FaultInjection`] (simulation only).
            FaultInjection, sim: $crate::backend::caps::FaultInjection =
                as_faults / as_faults_ref, faults / faults_ref;
            /// [`HeldRecovery`]: the OS's recovery can be held open (simulation only).
            HeldRecovery, sim: $crate::backend::caps::HeldRecovery =
                as_held_recovery, held_recovery;
            /// An ended process's buffers stay readable ([`UserModeSubmission::read_buffer`]):
            /// the OS's view of memory no program has any more. No trait. Simulation only (on
            /// Windows an application's buffers end with it).
            EndedProcessMemory, sim;
            /// [`DirectDdi`] (simulation only).
            DirectDdi, sim: $crate::backend::caps::DirectDdi =
                as_direct_ddi / as_direct_ddi_ref, direct_ddi / direct_ddi_ref;
            /// [`StepMode`] (simulation only).
            StepMode, sim: $crate::backend::caps::StepMode = as_step / as_step_ref, step / step_ref;
            /// [`BugChecks`] (simulation only).
            BugChecks, sim: $crate::backend::caps::BugChecks =
                as_bug_checks / as_bug_checks_ref, bug_checks / bug_checks_ref;
            /// The session's machine is built as [`super::SessionConfig`] describes it: device
            /// settings (engines, doorbells, per-engine reset, log sizes, idle F1, a legacy
            /// iGPU) and the OS's native-fence feature. No trait: [`dyn super::Backend`]'s
            /// `open` checks it. Simulation only (a real machine is what it is).
            ConfiguredMachine, sim;
            /// [`AllocationUsage`].
            AllocationUsage, windows: $crate::backend::caps::AllocationUsage =
                as_alloc_usage / as_alloc_usage_ref, alloc_usage / alloc_usage_ref;
            /// [`GpuVaPlacement`].
            GpuVaPlacement, windows: $crate::backend::caps::GpuVaPlacement = as_gpu_va, gpu_va;
            /// The OS enabled `DXGK_FEATURE_NATIVE_FENCE` for the driver: native fences, their
            /// logs and user-mode submission exist. No trait: off on a stock Windows
            /// (`crate::os`).
            NativeFences, windows;
            /// [`super::testing::KernelModeTesting`].
            KernelModeTesting, windows: $crate::backend::testing::KernelModeTesting =
                as_kmtest, kmtest;
            /// [`KmdJournal`]: what the KMD saw of detection and recovery, through its test
            /// hooks.
            KmdJournal, windows: $crate::backend::caps::KmdJournal = as_kmd_journal, kmd_journal;
            /// [`KmdFaults`]: faults armed in the KMD's recovery path, through its test hooks.
            KmdFaults, windows: $crate::backend::caps::KmdFaults = as_kmd_faults, kmd_faults;
        }
    };
}
pub(crate) use capability_table;

/// `true` for a row marked `windows`, `false` for one marked `sim`.
macro_rules! on_windows {
    (windows) => {
        true
    };
    (sim) => {
        false
    };
}

/// [`Capability`] and its table-given facts.
macro_rules! capability_enum {
    ($(
        $(#[$doc:meta])*
        $cap:ident, $on:ident
        $(: $tr:path = $get:ident $(/ $get_ref:ident)?, $h:ident $(/ $h_ref:ident)?)?;
    )*) => {
        /// A feature area a backend may or may not have (one trait each, or a fact of the
        /// machine).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Capability {
            $($(#[$doc])* $cap,)*
        }

        impl Capability {
            /// Every capability, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$cap),*];

            /// The name shown in skip reasons and `--list`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$cap => stringify!($cap),)*
                }
            }

            /// Whether a Windows backend (D3DKMT on a real machine) could have it at all.
            pub fn windows_possible(self) -> bool {
                match self {
                    $(Self::$cap => on_windows!($on),)*
                }
            }

            fn bit(self) -> u32 {
                1 << self as u32
            }
        }
    };
}

capability_table!(capability_enum);

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

// A set is one bit per capability.
const _: () = assert!(Capability::ALL.len() <= u32::BITS as usize);
