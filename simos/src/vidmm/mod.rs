//! VidMm, the video memory manager: what the simulation has of it today is system memory for
//! the driver (contiguous allocations behind the Dxgkrnl callbacks) and for user-mode processes
//! (allocations that doorbells reference), and paging buffers (FILL, TRANSFER) on the
//! kernel-mode path.

pub mod allocation;
pub mod contiguous;
pub mod gpuva;
pub mod mmu;
pub mod model;
pub mod paging;
