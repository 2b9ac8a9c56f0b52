//! Errors of the test-facing API and why a machine halted (a leaf: it knows only the bug
//! check it carries).

use core::fmt;
use std::sync::Arc;

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
    /// A failure status the caller gets from the OS (an OS refusal carried as a status, or a
    /// DDI's answer where the path does not know which DDI); the machine is still running.
    /// [`SimError::status`] reads it.
    DdiFailed(NTSTATUS),
    /// The DDI `ddi` (its routine's name) answered the OS's call with failure `status`; the
    /// machine is still running. [`SimError::status`] reads the status.
    Ddi {
        /// The DDI, as the routine of its table slot names it.
        ddi: &'static str,
        /// What it returned.
        status: NTSTATUS,
    },
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
    /// the PE image, a PCI board): `step` says what, `source` is why when another layer
    /// reported it.
    Setup {
        /// The step that failed.
        step: String,
        /// The error the step failed with.
        source: Option<Cause>,
    },
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

/// An error of another layer that a [`SimError`] carries as its source; shared so the error
/// stays `Clone`.
#[derive(Clone, Debug)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// The wrapped error.
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for Cause {
    fn from(e: E) -> Self {
        Self(Arc::new(e))
    }
}

/// Two causes are equal when they say the same (errors of other layers have no equality).
impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for Cause {}

impl SimError {
    /// A failed setup step with no further cause.
    pub fn setup(step: impl Into<String>) -> Self {
        Self::Setup {
            step: step.into(),
            source: None,
        }
    }

    /// A setup step that failed with `source`.
    pub fn setup_from(step: impl Into<String>, source: impl Into<Cause>) -> Self {
        Self::Setup {
            step: step.into(),
            source: Some(source.into()),
        }
    }

    /// A setup step whose layer reports its failure as text only.
    pub fn setup_said(step: impl Into<String>, why: String) -> Self {
        let e: Box<dyn std::error::Error + Send + Sync> = why.into();
        Self::Setup {
            step: step.into(),
            source: Some(Cause(Arc::from(e))),
        }
    }

    /// The failure status the call was answered with, whether a named DDI's
    /// ([`SimError::Ddi`]) or one the OS carries ([`SimError::DdiFailed`]); `None` for an
    /// error of another kind.
    pub fn status(&self) -> Option<NTSTATUS> {
        match self {
            Self::DdiFailed(s) | Self::Ddi { status: s, .. } => Some(*s),
            _ => None,
        }
    }
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
            Self::Ddi { ddi, status } => {
                write!(f, "{ddi} failed: NTSTATUS {:#010x}", *status as u32)
            }
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
            // The cause's text is part of the message: most callers print only this error.
            Self::Setup {
                step,
                source: Some(c),
            } => write!(f, "setup failed: {step}: {}", c.0),
            Self::Setup { step, source: None } => write!(f, "setup failed: {step}"),
            Self::NotAllowed { rule, why } => write!(f, "{rule}: {why}"),
            Self::Internal(m) => write!(f, "simulation defect: {m}"),
            Self::Simulation(m) => write!(f, "simulation error: {m}"),
        }
    }
}

impl std::error::Error for SimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Setup {
                source: Some(c), ..
            } => Some(c.get()),
            _ => None,
        }
    }
}

/// `STATUS_IO_TIMEOUT`: a blocking wait that timed out (threaded mode) or could never be
/// satisfied (step mode: the machine went idle).
pub const STATUS_IO_TIMEOUT: i32 = rvgpu_ddi::ntstatus::STATUS_IO_TIMEOUT;
