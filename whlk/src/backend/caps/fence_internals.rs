//! The [`FenceInternals`] capability: the OS's view of a native fence (simulation only).

use crate::backend::common::Failure;

use super::fences::FenceRef;

/// A native fence's values as the CPU reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FenceValues {
    /// CurrentValue.
    pub current: u64,
    /// MonitoredValue.
    pub monitored: u64,
}

/// The OS's side of a native fence: whether its object is gone, the system process's GPU VAs
/// and MonitoredValue. Simulation only (the OS maps MonitoredValue for the GPU only, and no
/// D3DKMT call shows the rest).
pub trait FenceInternals {
    /// Whether the OS object behind `f` is gone.
    fn native_fence_destroyed(&self, f: FenceRef) -> bool;

    /// System-process GPU VAs of (CurrentValue, MonitoredValue) and the native-fence caps'
    /// MonitoredValueStride.
    fn fence_addresses(&self, f: FenceRef) -> Result<(u64, u64, u32), Failure>;

    /// CurrentValue and MonitoredValue.
    fn fence_values(&self, f: FenceRef) -> Result<FenceValues, Failure>;
}
