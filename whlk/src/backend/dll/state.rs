//! What a DLL session holds of the application's objects, apart from the operations on them
//! (`umd`, `dma`, `monitored`), so that the session (`dll`'s `mod.rs`) and those operations
//! import it rather than each other.

use std::sync::Arc;

use crate::backend::app::{AppObjects, Waiter};
use crate::backend::sim::thunks::SessKmt;

/// The session's objects of the seam: `RvgpuBuffer*` handles, views as host addresses.
pub(crate) type DllObjects = AppObjects<u64, u64, DllFence, DEvent>;

/// A native fence: its `RvgpuFence*`, and the D3DKMT handle the DLL got for it (how the OS
/// names this process's instance), if one appeared.
pub(crate) struct DllFence {
    pub(crate) handle: u64,
    pub(crate) kmt: Option<u32>,
}

/// A CPU wait in event form.
pub(crate) enum DEvent {
    /// A thread blocked in `rvgpu_fence_wait`, slice by slice.
    Thread(Waiter),
    /// Step mode: the wait `rvgpu_fence_wait_async` registered: (process, its Win32 event,
    /// `RvgpuFence*`, value).
    Registered(usize, u64, u64, u64),
}

/// A context the harness made: its process, `RvgpuContext*` (`None` once destroyed) and node.
#[derive(Debug)]
pub(crate) struct DContext {
    pub(crate) process: usize,
    pub(crate) handle: Option<u64>,
    pub(crate) node: u32,
}

/// The application's own D3D device in one of its processes (the thunks it calls itself).
pub(crate) struct DDevice {
    /// The case's process (an index of the session's processes).
    pub(crate) process: usize,
    pub(crate) kmt: Arc<SessKmt>,
}
