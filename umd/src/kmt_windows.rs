//! D3DKMT thunks the UMD uses on Windows.
//!
//! The thunks up to WDDM 3.1 (D3DKMTOpenAdapterFromLuid, D3DKMTCreateDevice,
//! D3DKMTCreateHwQueue, D3DKMTSubmitCommandToHwQueue, ...) come from `windows-sys`
//! (`Wdk::Graphics::Direct3D`, imported from gdi32.dll). The WDDM 3.2 user-mode submission
//! thunks (D3DKMTCreateDoorbell, D3DKMTConnectDoorbell, D3DKMTDestroyDoorbell,
//! D3DKMTNotifyWorkSubmission) are not in windows-sys 0.61; they are looked up at run time in
//! gdi32.dll with GetProcAddress rather than imported, so that the DLL still loads on a
//! Windows without them (pre-24H2) and reports "not supported" instead of failing to load.
//! Their parameter structures (D3DKMT_CREATE_DOORBELL, ...) are defined with the user-mode
//! submission issue; here they are opaque.

use core::ffi::c_void;

pub use windows_sys::Wdk::Graphics::Direct3D::{
    D3DKMTCloseAdapter, D3DKMTCreateDevice, D3DKMTCreateHwQueue, D3DKMTDestroyDevice,
    D3DKMTDestroyHwQueue, D3DKMTOpenAdapterFromLuid, D3DKMTSubmitCommandToHwQueue,
    D3DKMT_CLOSEADAPTER, D3DKMT_OPENADAPTERFROMLUID,
};
use windows_sys::Win32::Foundation::{LUID, NTSTATUS};
use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress, LoadLibraryW};

/// `NTSTATUS` values this module returns itself.
const STATUS_NOT_SUPPORTED: NTSTATUS = 0xC000_00BB_u32 as NTSTATUS;

/// A WDDM 3.2 thunk: `NTSTATUS (APIENTRY *)(ARGS *)`.
pub type Thunk = unsafe extern "system" fn(args: *mut c_void) -> NTSTATUS;

/// The WDDM 3.2 thunks looked up by name.
#[derive(Debug, Clone, Copy)]
pub enum Wddm32Thunk {
    CreateDoorbell,
    ConnectDoorbell,
    DestroyDoorbell,
    NotifyWorkSubmission,
}

impl Wddm32Thunk {
    const fn name(self) -> &'static core::ffi::CStr {
        match self {
            Self::CreateDoorbell => c"D3DKMTCreateDoorbell",
            Self::ConnectDoorbell => c"D3DKMTConnectDoorbell",
            Self::DestroyDoorbell => c"D3DKMTDestroyDoorbell",
            Self::NotifyWorkSubmission => c"D3DKMTNotifyWorkSubmission",
        }
    }
}

/// "gdi32.dll" as UTF-16, NUL-terminated.
const GDI32: [u16; 10] = {
    let s = *b"gdi32.dll\0";
    let mut out = [0u16; 10];
    let mut i = 0;
    while i < 10 {
        #[allow(clippy::indexing_slicing)] // const-evaluated, in bounds by the loop condition
        {
            out[i] = s[i] as u16;
        }
        i += 1;
    }
    out
};

/// Looks up a WDDM 3.2 thunk in gdi32.dll; `None` on a Windows that does not have it.
pub fn lookup(thunk: Wddm32Thunk) -> Option<Thunk> {
    // SAFETY: NUL-terminated UTF-16 module name; GetModuleHandleW takes no reference.
    let mut module = unsafe { GetModuleHandleW(GDI32.as_ptr()) };
    if module.is_null() {
        // SAFETY: as above; loads gdi32.dll if this process has not yet.
        module = unsafe { LoadLibraryW(GDI32.as_ptr()) };
    }
    if module.is_null() {
        return None;
    }
    // SAFETY: valid module handle and NUL-terminated ASCII name.
    let proc = unsafe { GetProcAddress(module, thunk.name().as_ptr().cast()) }?;
    // SAFETY: every D3DKMT thunk has the signature `NTSTATUS APIENTRY f(ARGS *)`.
    Some(unsafe { core::mem::transmute::<unsafe extern "system" fn() -> isize, Thunk>(proc) })
}

/// Calls a WDDM 3.2 thunk, or returns STATUS_NOT_SUPPORTED if this Windows lacks it.
///
/// # Safety
/// `args` must point to the thunk's argument structure, valid as the thunk documents.
pub unsafe fn call(thunk: Wddm32Thunk, args: *mut c_void) -> NTSTATUS {
    match lookup(thunk) {
        // SAFETY: caller contract on `args`.
        Some(f) => unsafe { f(args) },
        None => STATUS_NOT_SUPPORTED,
    }
}

/// Opens an adapter by LUID; returns its D3DKMT handle.
pub fn open_adapter(luid: LUID) -> Result<u32, NTSTATUS> {
    let mut args = D3DKMT_OPENADAPTERFROMLUID {
        AdapterLuid: luid,
        hAdapter: 0,
    };
    // SAFETY: a valid, initialised argument structure on the stack.
    let status = unsafe { D3DKMTOpenAdapterFromLuid(&mut args) };
    if status < 0 {
        Err(status)
    } else {
        Ok(args.hAdapter)
    }
}

/// Closes an adapter handle from [`open_adapter`].
pub fn close_adapter(adapter: u32) -> NTSTATUS {
    let args = D3DKMT_CLOSEADAPTER { hAdapter: adapter };
    // SAFETY: a valid argument structure; D3DKMT validates the handle.
    unsafe { D3DKMTCloseAdapter(&args) }
}
