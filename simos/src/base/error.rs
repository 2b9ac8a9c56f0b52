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
    /// A rule the simulated OS relies on was broken (by the driver, or by a call the
    /// simulation cannot model, for example a callback it does not simulate); the test fails
    /// with this message.
    Violation(String),
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
    /// The machine halted on a broken rule ([`Fault::Violation`]), now or earlier.
    Violation(String),
    /// No driver is loaded.
    NoDriver,
    /// The driver's table has no entry for the DDI this path calls.
    NoDdi(&'static str),
    /// The machine has no adapter with this index.
    NoAdapter(usize),
    /// The adapter with this index is not started.
    NotStarted(usize),
    /// The object the call names is gone (destroyed, or its adapter removed).
    Gone(&'static str),
    /// The simulated OS's own memory for this ran out.
    OutOfMemory(&'static str),
    /// Work that should finish did not within the simulation's bound (the message says
    /// which); a step machine that went idle, or a threaded one past its deadline.
    Stuck(String),
    /// Installing, loading or attaching something outside the driver failed (the package,
    /// the PE image, a PCI board).
    Setup(String),
    /// The OS does not allow the call: it breaks the requirement `rule` (docs/requirements.md).
    NotAllowed {
        /// The requirement, `NF-nn`.
        rule: &'static str,
        /// What was asked.
        why: String,
    },
    /// The simulation broke an invariant of its own (a defect of the simulated OS, not of the
    /// driver or the caller).
    Internal(&'static str),
    /// The call misuses the test-facing API, or asks for what is not simulated.
    Simulation(String),
}

impl From<Fault> for SimError {
    fn from(f: Fault) -> Self {
        match f {
            Fault::BugCheck(b) => Self::Bugcheck(b),
            Fault::Violation(m) => Self::Violation(m),
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
            Self::Violation(m) => write!(f, "rule broken: {m}"),
            Self::NoDriver => f.write_str("no driver loaded"),
            Self::NoDdi(name) => write!(f, "the driver's table has no {name}"),
            Self::NoAdapter(i) => write!(f, "no adapter {i}"),
            Self::NotStarted(i) => write!(f, "adapter {i} is not started"),
            Self::Gone(what) => write!(f, "{what} is gone"),
            Self::OutOfMemory(what) => write!(f, "out of system memory for {what}"),
            Self::Stuck(m) => write!(f, "stuck: {m}"),
            Self::Setup(m) => write!(f, "setup failed: {m}"),
            Self::NotAllowed { rule, why } => write!(f, "{rule}: {why}"),
            Self::Internal(m) => write!(f, "simulation defect: {m}"),
            Self::Simulation(m) => write!(f, "simulation error: {m}"),
        }
    }
}

impl std::error::Error for SimError {}

/// `STATUS_IO_TIMEOUT`: a blocking wait that timed out (threaded mode) or could never be
/// satisfied (step mode: the machine went idle).
pub const STATUS_IO_TIMEOUT: i32 = 0xC000_00B5_u32 as i32;
