//! rvgpu kernel-mode driver core: the logic behind the DxgkDdi entry points.
//!
//! `no_std` + `alloc`, generic over [`platform::Platform`] so that the same code runs in the
//! Windows image and under the simulated OS. One module per concept.
#![cfg_attr(not(test), no_std)]
extern crate alloc;

pub mod adapter;
pub mod caps;
pub mod clock;
pub mod context;
pub mod dbginfo;
pub mod ddi;
pub mod device;
pub mod dma;
pub mod doorbell;
pub mod dxgk;
pub mod features;
pub mod fence;
pub mod globals;
pub mod hwqueue;
pub mod interrupt;
pub mod log;
pub mod mmio;
pub mod node;
pub mod paging;
pub mod platform;
pub mod reset;
pub mod resources;
pub mod runlist;
pub mod sched;
pub mod status;
pub mod submit;
pub mod sync;

pub use ddi::initialization_data;
