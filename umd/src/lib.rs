//! rvgpu user-mode driver (UMD): the C API (`capi`), native-fence command encoding (`fence`)
//! and fence logging with its "queued" events (`fencelog`),
//! the ring writer (`ring`) and the one-pass packet check that feeds it (`packets`), the kernel-thunk trait (`kmt`), the portable user-mode and
//! kernel-mode submission core over it (`submit`), kernel-mode DMA contexts (`dma`) and, on
//! Windows, the D3DKMT
//! implementation of the trait (`kmt_windows`).
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
pub mod nt;
pub mod packets;
pub mod retain;
pub mod ring;
pub mod submit;
pub mod usage;
pub mod wait;
