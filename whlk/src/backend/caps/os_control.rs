//! The [`OsControl`] capability: the OS's own actions on processes and adapters (simulation
//! only).

use crate::backend::common::Failure;

use super::user_mode::ProcessRef;

/// A device loss (UM-10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceLoss {
    /// Every device of the adapter lost while the adapter keeps running (a forced
    /// adapter-wide recovery): the KMD aborts their doorbells (`DISCONNECTED_ABORT`); only
    /// devices created afterwards work.
    DoorbellsAborted,
    /// The device is removed: every D3D device in error, progress fences released (no
    /// doorbell status written); processes must recreate everything.
    Removed,
}

/// Making the OS do what Windows decides on its own: suspend and resume a process's contexts,
/// power the adapter down and up, a device loss. Simulation only.
pub trait OsControl {
    /// The OS suspends (`DxgkDdiSuspendContext`) every context of `p` (UM-11). Simulation
    /// only: no D3DKMT call does this.
    fn suspend_process(&mut self, p: ProcessRef) -> Result<(), Failure>;

    /// The OS resumes what [`OsControl::suspend_process`] suspended (UM-12). Simulation only.
    fn resume_process(&mut self, p: ProcessRef) -> Result<(), Failure>;

    /// Runtime power-down of adapter `i` to D3 if idle (UM-14); whether it powered down.
    /// Simulation only (Windows decides by itself).
    fn power_down(&mut self, i: usize) -> Result<bool, Failure>;

    /// D3 → D0 without a submission. Simulation only.
    fn power_up(&mut self, i: usize) -> Result<(), Failure>;

    /// Device loss on adapter `i` (UM-10). Simulation only (a Windows backend could force a
    /// TDR with `dxcap -forcetdr` for something close to `Removed`).
    fn device_loss(&mut self, i: usize, how: DeviceLoss) -> Result<(), Failure>;
}
