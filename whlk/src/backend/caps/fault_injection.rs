//! The [`FaultInjection`] capability: device faults made to order (simulation only).

use crate::backend::common::Failure;

/// Faults injected into the device or the driver: a shared-line interrupt, hangs, failing
/// resets, forced TDRs, the TDR-07 pause, and the misbehaving drivers of
/// [`SessionConfig::misbehaviour`](crate::backend::config::SessionConfig::misbehaviour) (a backend without this capability refuses such a
/// configuration). Simulation only.
pub trait FaultInjection {
    /// Raises one interrupt on adapter `i`'s line as a shared line would (simulation only).
    fn raise_interrupt(&mut self, i: usize) -> Result<(), Failure>;

    /// The device's engine `node` hangs now, wherever it is (mid DMA buffer). Simulation only.
    fn inject_hang(&mut self, i: usize, node: u32) -> Result<(), Failure>;

    /// The device's next reset of engine `node` fails (TDR-09). Simulation only.
    fn fail_next_reset(&mut self, i: usize, node: u32) -> Result<(), Failure>;

    /// Runs the TDR sequence on `node` now, as if its timeout had expired. Simulation only.
    fn force_tdr(&mut self, i: usize, node: u32) -> Result<(), Failure>;

    /// Arms the TDR-07 race on adapter `i`: between the OS's snapshot and
    /// `DxgkDdiResetEngine` engine `node` runs until it has no work. Simulation only.
    fn complete_before_reset(&mut self, i: usize, node: u32) -> Result<(), Failure>;
}
