//! The cases, one module per area.

pub mod adapter;
pub mod allocation;
mod common;
pub mod device_loss;
pub mod gpuva;
pub mod interrupt;
pub mod logs;
pub mod native_fence;
pub mod neutral;
pub mod simulation;
pub mod tdr;
pub mod usermode_submission;

use crate::case::Case;

/// the list for the driver stack in a Linux guest on the rvgpu PCI function
/// (`rvgpu-whlk --board pci --subset pci`): adapter start/stop, a kernel-mode submission (beside
/// a user-mode one), a user-mode queue rung through its doorbell, native-fence CPU waits
/// released by GPU signals through the interrupt, and a TDR of a hung engine.
pub const PCI_SUBSET: &[&str] = &[
    "Adapter.StartStopThreaded",
    "UserModeSubmission.BothPathsTogether",
    "UserModeSubmission.SubmitOrderAndProgressFence",
    "NativeFence.CpuWaitsThreaded",
    "Tdr.ComputeHangCopyRuns",
];

/// Every case, in run order.
pub fn all() -> Vec<Case> {
    let mut v = Vec::new();
    v.extend_from_slice(adapter::CASES);
    v.extend_from_slice(interrupt::CASES);
    v.extend_from_slice(native_fence::CASES);
    v.extend_from_slice(simulation::CASES);
    v.extend_from_slice(usermode_submission::CASES);
    v.extend_from_slice(allocation::CASES);
    v.extend_from_slice(gpuva::CASES);
    v.extend_from_slice(logs::CASES);
    v.extend_from_slice(tdr::CASES);
    v.extend_from_slice(device_loss::CASES);
    v.extend_from_slice(neutral::CASES);
    v
}
