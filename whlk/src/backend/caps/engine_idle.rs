//! The [`EngineIdle`] capability: an idle engine's power request (simulation only).

use std::time::Duration;

use crate::backend::common::Failure;

/// An engine's idle F-state at a moment the case chooses. Simulation only (Windows idles the
/// engine on its own schedule, and no D3DKMT call shows the F-state).
pub trait EngineIdle {
    /// Lets node `node` of adapter `i` idle until it has requested F1 and the OS has moved
    /// it to F1 (UM-13), up to `budget`; whether it did. Needs
    /// [`SessionConfig::idle_f1_ticks`](crate::backend::config::SessionConfig::idle_f1_ticks).
    fn await_engine_f1(&mut self, i: usize, node: u32, budget: Duration) -> Result<bool, Failure>;
}
