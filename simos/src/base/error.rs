//! Errors of the test-facing API and why a machine halted (a leaf: it knows only the bug
//! check it carries).

use core::fmt;

use rvgpu_ddi::NTSTATUS;

use crate::base::bugcheck::BugCheck;

/// Why a machine halted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Windows would have bug-checked.
    BugCheck(BugCheck),
    /// The simulation met something it cannot model or a rule of its own was broken (for
    /// example a callback it does not simulate); the test fails with this message.
    Simulation(String),
}

/// Why a simulation call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// The machine bug-checked (now or earlier): Windows would have stopped.
    Bugcheck(BugCheck),
    /// A DDI returned this failure status; the machine is still running.
    DdiFailed(NTSTATUS),
    /// The OS refused what the driver answered (for example native fences advertised while
    /// the OS feature is disabled, NF-10); the adapter did not start.
    Rejected(String),
    /// Dxgkrnl failed the adapter's start for a broken start-up rule (docs/windows-bringup.md),
    /// with the status Windows returns.
    StartRefused {
        /// The rule (`BR-nn`).
        rule: &'static str,
        /// The status the start fails with.
        status: NTSTATUS,
        /// What was wrong.
        why: String,
    },
    /// The simulation cannot continue (not simulated, misuse of the API, timeout...).
    Simulation(String),
}

impl From<Fault> for SimError {
    fn from(f: Fault) -> Self {
        match f {
            Fault::BugCheck(b) => Self::Bugcheck(b),
            Fault::Simulation(m) => Self::Simulation(m),
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bugcheck(b) => write!(f, "bug check: {b}"),
            Self::DdiFailed(s) => write!(f, "DDI failed: NTSTATUS {:#010x}", *s as u32),
            Self::Rejected(m) => write!(f, "rejected by the OS: {m}"),
            Self::StartRefused { rule, status, why } => write!(
                f,
                "start refused ({rule}, NTSTATUS {:#010x}): {why}",
                *status as u32
            ),
            Self::Simulation(m) => write!(f, "simulation error: {m}"),
        }
    }
}

impl std::error::Error for SimError {}

/// `STATUS_IO_TIMEOUT`: a blocking wait that timed out (threaded mode) or could never be
/// satisfied (step mode: the machine went idle).
pub const STATUS_IO_TIMEOUT: i32 = 0xC000_00B5_u32 as i32;
