//! rvgpu user-mode driver (UMD), bottom-up: NT's handle and statuses (`nt`); native-fence
//! command encoding (`fence`); the one-pass packet check (`packets`) and the ring writer it
//! feeds (`ring`); the kernel-thunk trait (`kmt`); fence logging with its "queued" events
//! (`fencelog`); the portable user-mode and kernel-mode submission core over the thunks
//! (`submit`); usage tracking of buffers over the queues (`usage`); kernel-mode DMA contexts
//! (`dma`); the C API on top (`capi`, `capi_context`); on Windows, the D3DKMT implementation of
//! the thunk trait (`kmt_windows`).
//!
//! `no_std` + `alloc` so that the DLL links for `x86_64-pc-windows-msvc` without the Windows
//! SDK's CRT (the DLL's global allocator is the process heap, `dll_windows`; see
//! docs/windows.md); host tests use std.
#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod capi;
pub mod capi_context;
pub mod d3d_runtime;
#[cfg(all(windows, feature = "dll", not(test)))]
mod dll_windows;
pub mod dma;
#[cfg(windows)]
pub mod etw_windows;
pub mod fence;
pub mod fencelog;
pub mod kmt;
#[cfg(windows)]
pub mod kmt_windows;
#[cfg(test)]
mod mock_parts;
pub mod nodes;
pub mod nt;
pub mod packets;
pub mod retain;
pub mod ring;
pub mod submit;
pub mod usage;
pub mod wait;
pub mod waitboard;
