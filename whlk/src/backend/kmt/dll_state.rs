//! What a DLL session keeps besides its processes, queues and buffers: the fences and CPU
//! waits of the seam as the DLL names them (`dll_umd`), and its DMA contexts (`dll_dma`).

use crate::backend::app::Waiter;

/// A native fence: its `RvgpuFence*`, and the D3DKMT handle the DLL got for it (how the OS
/// names this process's instance), if one appeared.
pub(super) struct DllFence {
    pub(super) handle: u64,
    pub(super) kmt: Option<u32>,
}

/// A CPU wait in event form.
pub(super) enum DEvent {
    /// A thread blocked in `rvgpu_fence_wait`, slice by slice.
    Thread(Waiter),
    /// Step mode: the wait `rvgpu_fence_wait_async` registered: (process, its Win32 event,
    /// `RvgpuFence*`, value).
    Registered(usize, u64, u64, u64),
}

/// A context the harness made: its process, `RvgpuContext*` (`None` once destroyed) and node.
#[derive(Debug)]
pub(super) struct DContext {
    pub(super) process: usize,
    pub(super) handle: Option<u64>,
    pub(super) node: u32,
}
