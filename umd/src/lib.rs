//! rvgpu user-mode driver (UMD). The doorbell and submission path come with the user-mode
//! submission issue; for now the crate holds the C API surface (`capi`), native-fence command
//! encoding (`fence`), the ring writer (`ring`) and, on Windows, the D3DKMT bindings
//! (`kmt_windows`).
//!
//! `no_std` (+ `alloc` later) so that the DLL links for `x86_64-pc-windows-msvc` without the
//! Windows SDK's CRT (see docs/windows.md); host tests use std.
#![cfg_attr(not(test), no_std)]

pub mod capi;
#[cfg(all(windows, feature = "dll", not(test)))]
mod dll_windows;
pub mod fence;
pub mod kmt;
#[cfg(windows)]
pub mod kmt_windows;
pub mod ring;
