//! VidMm, the video memory manager: what the simulation has of it today is system memory for
//! the driver (contiguous allocations behind the Dxgkrnl callbacks) and for user-mode processes
//! (allocations that doorbells reference), paging buffers (FILL, TRANSFER) on the
//! kernel-mode path, the GpuMmu address spaces (`mmu`, `gpuva`) and the per-process arenas
//! kernel-mode DMA buffers run from (`dmabuf`), and residency: allocations in VRAM, made
//! resident and evicted through the driver's paging buffers (`residency`), with backing
//! stores named to the driver by MDL (`mdl`), and the aperture segment's ranges VidMm maps
//! through the driver (`aperture`). What VidMm needs of the machine above it (submitting and
//! waiting for paging, the paging queues' fences) it asks through `host`. Its queued paging is
//! done by its worker (`worker`), on its own.

pub mod aperture;
pub mod contiguous;
pub mod dmabuf;
pub mod dmapool;
pub mod fencemap;
pub mod fill;
pub mod host;
pub mod inflight;
pub mod init;
pub mod leaf;
pub mod mdl;
pub mod mmu;
pub mod paging;
pub mod process;
pub mod residency;
pub mod va;
pub mod worker;
