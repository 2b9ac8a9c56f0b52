//! The WDDM 3.2 thunks looked up in gdi32.dll at run time, and the adapter's open and close.

use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

use rvgpu_ddi::d3dkmt::D3DKMT_OPENADAPTERFROMLUID;
use windows_sys::Wdk::Graphics::Direct3D::{
    D3DKMTCloseAdapter, D3DKMTOpenAdapterFromLuid, D3DKMT_CLOSEADAPTER,
};
use windows_sys::Win32::Foundation::{LUID, NTSTATUS};

use rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED;

/// A WDDM 3.2 thunk: `NTSTATUS (APIENTRY *)(ARGS *)`.
pub type Thunk = unsafe extern "system" fn(args: *mut c_void) -> NTSTATUS;

/// The thunks looked up by name (the WDDM 3.2 ones windows-sys 0.61 lacks).
#[derive(Debug, Clone, Copy)]
pub enum Wddm32Thunk {
    CreateDoorbell,
    ConnectDoorbell,
    DestroyDoorbell,
    NotifyWorkSubmission,
    /// `D3DKMTCreateNativeFence` (24H2): not a function in windows-sys 0.61 either, and its
    /// `D3DKMT_CREATENATIVEFENCE` there is a prerelease layout.
    CreateNativeFence,
    /// `D3DKMTOpenNativeFenceFromNtHandle` (24H2): not in windows-sys 0.61.
    OpenNativeFenceFromNtHandle,
    /// `D3DKMTIsFeatureEnabled` (24H2), absent from windows-sys 0.61:
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtisfeatureenabled>.
    IsFeatureEnabled,
}

impl Wddm32Thunk {
    /// How many there are: the last one's index plus one (sizes the lookup cache; a new thunk
    /// goes last, or here).
    pub(super) const COUNT: usize = Self::IsFeatureEnabled as usize + 1;

    pub(super) const fn name(self) -> &'static core::ffi::CStr {
        match self {
            Self::CreateDoorbell => c"D3DKMTCreateDoorbell",
            Self::ConnectDoorbell => c"D3DKMTConnectDoorbell",
            Self::DestroyDoorbell => c"D3DKMTDestroyDoorbell",
            Self::NotifyWorkSubmission => c"D3DKMTNotifyWorkSubmission",
            Self::CreateNativeFence => c"D3DKMTCreateNativeFence",
            Self::OpenNativeFenceFromNtHandle => c"D3DKMTOpenNativeFenceFromNtHandle",
            Self::IsFeatureEnabled => c"D3DKMTIsFeatureEnabled",
        }
    }

    pub(super) const fn index(self) -> usize {
        self as usize
    }
}

/// "gdi32.dll" as UTF-16, NUL-terminated.
pub(super) const GDI32: [u16; 10] = {
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

/// Looked-up thunks: null = not looked up yet, [`MISSING`] = this Windows lacks it.
pub(super) static THUNKS: [AtomicPtr<c_void>; Wddm32Thunk::COUNT] =
    [const { AtomicPtr::new(ptr::null_mut()) }; Wddm32Thunk::COUNT];
pub(super) const MISSING: *mut c_void = ptr::dangling_mut::<c_void>();

pub(super) fn lookup_uncached(thunk: Wddm32Thunk) -> Option<Thunk> {
    use windows_sys::Win32::System::LibraryLoader::{
        GetModuleHandleW, GetProcAddress, LoadLibraryW,
    };
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

/// Looks up a WDDM 3.2 thunk in gdi32.dll (once per process); `None` on a Windows that does
/// not have it.
pub fn lookup(thunk: Wddm32Thunk) -> Option<Thunk> {
    let slot = THUNKS.get(thunk.index())?;
    let cached = slot.load(Ordering::Acquire);
    if cached == MISSING {
        return None;
    }
    if !cached.is_null() {
        // SAFETY: only ever stored from a `Thunk` below (function pointers and data pointers
        // have the same size and representation on Windows targets).
        return Some(unsafe { core::mem::transmute::<*mut c_void, Thunk>(cached) });
    }
    let found = lookup_uncached(thunk);
    slot.store(
        found.map_or(MISSING, |f| f as *mut c_void),
        Ordering::Release,
    );
    found
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

/// [`call`] with the thunk's argument structure.
///
/// # Safety
/// `args` must be the argument structure the thunk documents, valid as it documents.
pub(super) unsafe fn call_with<T>(thunk: Wddm32Thunk, args: &mut T) -> NTSTATUS {
    // SAFETY: caller contract on `args`.
    unsafe { call(thunk, ptr::from_mut(args).cast()) }
}

/// Opens an adapter by LUID; returns its D3DKMT handle.
pub fn open_adapter(luid: LUID) -> Result<u32, NTSTATUS> {
    let mut args = D3DKMT_OPENADAPTERFROMLUID {
        AdapterLuid: rvgpu_ddi::LUID {
            LowPart: luid.LowPart,
            HighPart: luid.HighPart,
        },
        hAdapter: 0,
    };
    // SAFETY: the D3DKMT_OPENADAPTERFROMLUID layout (asserted with its definition), initialised,
    // on the stack.
    let status = unsafe { D3DKMTOpenAdapterFromLuid(ptr::from_mut(&mut args).cast()) };
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
