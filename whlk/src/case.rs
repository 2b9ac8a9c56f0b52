//! A test case: a name in WHLK style, the requirements it proves, and a body.

use std::fmt;

use crate::backend::{Backend, Capability, Failure};

/// How a case ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every check held.
    Pass,
    /// A check failed; the message says which and why.
    Fail(String),
    /// The case could not run on this backend; the message says why.
    Skip(String),
}

impl Outcome {
    /// Short label for tables.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail(_) => "FAIL",
            Self::Skip(_) => "skip",
        }
    }

    /// The reason (empty for a pass).
    pub fn reason(&self) -> &str {
        match self {
            Self::Pass => "",
            Self::Fail(r) | Self::Skip(r) => r,
        }
    }
}

/// Result type of case bodies: `?` on a backend [`Failure`] fails the case (or skips it when the
/// backend does not support the operation).
pub type CaseResult = Result<(), CaseError>;

/// Why a case body stopped early.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaseError {
    /// A check failed.
    Fail(String),
    /// The case cannot run here.
    Skip(String),
}

impl From<Failure> for CaseError {
    fn from(f: Failure) -> Self {
        match f {
            Failure::Unsupported(m) => Self::Skip(m),
            other => Self::Fail(other.to_string()),
        }
    }
}

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fail(m) => write!(f, "fail: {m}"),
            Self::Skip(m) => write!(f, "skip: {m}"),
        }
    }
}

/// Fails the case with a formatted message unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err($crate::case::CaseError::Fail(format!($($arg)*)));
        }
    };
}

/// One named case.
#[derive(Clone, Copy)]
pub struct Case {
    /// `Area.Name`, e.g. `Adapter.StartStop`.
    pub name: &'static str,
    /// Requirement IDs (docs/requirements.md) the case proves.
    pub requirements: &'static [&'static str],
    /// One line on what it checks.
    pub summary: &'static str,
    /// Capabilities the case cannot run without: on a backend lacking one the runner skips
    /// it (with the reason) without opening a session.
    pub needs: &'static [Capability],
    /// Capabilities the case uses when the backend has them, leaving out those checks
    /// otherwise (simulation-only observations). Every capability a case reaches must be in
    /// `needs` or here; the runner fails a case that reached an undeclared one.
    pub optional: &'static [Capability],
    /// The body.
    pub run: fn(&dyn Backend) -> CaseResult,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("requirements", &self.requirements)
            .field("needs", &self.needs)
            .field("optional", &self.optional)
            .finish_non_exhaustive()
    }
}
