//! VidMm, the video memory manager: what the simulation has of it today is system memory for
//! the driver (contiguous allocations behind the Dxgkrnl callbacks) and for user-mode processes
//! (allocations that doorbells reference).

pub mod allocation;
pub mod contiguous;
