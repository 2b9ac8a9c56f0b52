//! The [`BugChecks`] capability: the OS's bug check, if one happened (simulation only).

use crate::backend::common::BugCheckInfo;

/// Observing a bug check: the machine halts and the session reports it instead of rebooting.
/// Simulation only.
pub trait BugChecks {
    /// The bug check that halted the machine, if any.
    fn bugcheck(&self) -> Option<BugCheckInfo>;
}
