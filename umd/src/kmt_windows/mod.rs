//! The kernel thunks on Windows: [`WinKmt`] implements [`Kmt`] over the D3DKMT functions of
//! gdi32.dll, so the portable submission core (`submit`) runs over the real OS.
//!
//! **Status, honestly.** This module is only *compiled* in this repository (by the
//! `x86_64-pc-windows-msvc` cross-build of rvgpu_umd.dll, scripts/package.sh); it has never run
//! on Windows. The DLL runs in the x86-64 emulator over the simulated OS's thunks
//! (docs/pe-image.md, `simos/tests/pe_umd.rs`), which exercises the calls its C API makes.
//! It runs only on Windows 11 24H2 or later (WDDM 3.2) with the rvgpu KMD installed.
//! `D3DKMTCreateAllocation2` gives no GPU virtual address on 24H2
//! (docs/windows-bringup.md §13), so every ring, buffer and command allocation is mapped with
//! `D3DKMTMapGpuVirtualAddress` on the device's paging queue and used only once that queue's
//! fence reached the value Map returned ([`map_new_allocation`](crate::kmt::map_new_allocation));
//! the OS frees that VA when the allocation is destroyed. The simulated OS (`rvgpu_simos`)
//! implements the same
//! trait and is where the submission logic is exercised.
//!
//! **Where the thunks come from.**
//! - Up to WDDM 3.1 (`D3DKMTOpenAdapterFromLuid`, `D3DKMTCreateDevice`,
//!   `D3DKMTCreateContextVirtual`, `D3DKMTSubmitCommand`, `D3DKMTCreateHwQueue`,
//!   `D3DKMTSubmitCommandToHwQueue`,
//!   `D3DKMTCreateAllocation2`, `D3DKMTLock2`, `D3DKMTUnlock2`, `D3DKMTDestroyAllocation2`,
//!   `D3DKMTInvalidateCache`, `D3DKMTMakeResident`, `D3DKMTEvict`, `D3DKMTCreatePagingQueue`,
//!   `D3DKMTReserveGpuVirtualAddress`, `D3DKMTMapGpuVirtualAddress`,
//!   `D3DKMTFreeGpuVirtualAddress`, `D3DKMTUpdateGpuVirtualAddress`,
//!   `D3DKMTWaitForSynchronizationObjectFromCpu`, ...): `windows-sys`
//!   (`Wdk::Graphics::Direct3D`, imported from gdi32.dll through windows-link's raw-dylib).
//! - The WDDM 3.2 user-mode submission thunks (`D3DKMTCreateDoorbell`, `D3DKMTConnectDoorbell`,
//!   `D3DKMTDestroyDoorbell`, `D3DKMTNotifyWorkSubmission`) are **not functions in windows-sys
//!   0.61**, and the structures it has under those names are an older prerelease layout:
//!   its `D3DKMT_CREATE_DOORBELL` lacks `HwQueueProgressFenceLastQueuedValueCPUVirtualAddress`
//!   and `hDoorbell`, and its connect/destroy/notify structures name `hHwQueue` where the
//!   released header has `hDoorbell`. The structures are therefore declared here from
//!   learn.microsoft.com (URLs on each, sizes asserted), and the functions are looked up at run
//!   time with `GetProcAddress` in gdi32.dll rather than imported, so that the DLL still loads
//!   on a Windows without them (pre-24H2) and reports `STATUS_NOT_SUPPORTED` instead of failing
//!   to load.
//!
//! **CPU views** are raw pointers the OS returned (ring and ring control through `Lock2`,
//! doorbell page, doorbell status page, last-queued value, progress fence). Every access is
//! atomic or volatile, 8-byte aligned, and bounds-checked where a size is known.
//!
//! [`Kmt`]: crate::kmt::Kmt
//! [`WinKmt::create_allocation`]: crate::kmt::Kmt::create_allocation

mod device;
mod gdi32;
mod layout;
mod status;
mod thunks;
mod views;
mod waits;

pub use windows_sys::Wdk::Graphics::Direct3D::{
    D3DKMTCloseAdapter, D3DKMTCreateDevice, D3DKMTCreateHwQueue, D3DKMTDestroyDevice,
    D3DKMTDestroyHwQueue, D3DKMTOpenAdapterFromLuid, D3DKMTSubmitCommandToHwQueue,
    D3DKMT_CLOSEADAPTER,
};

pub use device::*;
pub use gdi32::*;
pub use layout::*;
pub use views::*;
