//! The [`StepMode`] capability: a deterministic session run on one thread (simulation only).

use crate::backend::common::Failure;

/// Deterministic stepping ([`ExecMode::Step`](crate::backend::config::ExecMode::Step)): run the machine until nothing happens any more.
/// Simulation only (a real backend ignores the mode).
pub trait StepMode {
    /// Step mode: runs the machine until nothing happens any more.
    fn run_until_idle(&mut self) -> Result<(), Failure>;
}
