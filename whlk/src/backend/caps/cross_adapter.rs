//! The [`CrossAdapterFences`] capability: one native fence opened on another adapter.

use crate::backend::common::Failure;

use super::fences::FenceRef;
use super::monitored::MonitoredRef;

/// Fences shared between two adapters of one machine (NF-16, NF-18): needs a machine with two
/// adapters, one of them without native fences for the monitored-fence form.
pub trait CrossAdapterFences {
    /// Opens `f` on another adapter (cross-adapter fence, NF-16).
    fn open_native_fence_on(
        &mut self,
        f: FenceRef,
        adapter: usize,
        process: u32,
    ) -> Result<FenceRef, Failure>;

    /// Opens a native fence on an adapter without native fences: a monitored fence there
    /// (NF-18).
    fn open_native_fence_as_monitored(
        &mut self,
        f: FenceRef,
        adapter: usize,
        process: u32,
    ) -> Result<MonitoredRef, Failure>;
}
