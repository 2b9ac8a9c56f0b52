//! A QueryAdapterInfo that answers `DXGKQAITYPE_NATIVE_FENCE_CAPS` with a stride of 12 (not a
//! multiple of 8) and without `MapToGpuSystemProcess`, and forwards everything else to the
//! real driver: the OS must refuse the start (NF-11). Install with
//! [`install_bad_native_fence_caps`].

use std::sync::OnceLock;

use rvgpu_ddi::adapter::{DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_NATIVE_FENCE_CAPS};
use rvgpu_ddi::basic::HANDLE;
use rvgpu_ddi::fence::DXGK_NATIVE_FENCE_CAPS;
use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, PDXGKDDI_QUERYADAPTERINFO};
use rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED;
use rvgpu_ddi::NTSTATUS;

static REAL: OnceLock<PDXGKDDI_QUERYADAPTERINFO> = OnceLock::new();

/// Table hook.
pub fn install_bad_native_fence_caps(t: &mut DRIVER_INITIALIZATION_DATA) {
    let _ = REAL.set(t.DxgkDdiQueryAdapterInfo);
    t.DxgkDdiQueryAdapterInfo = Some(query);
}

unsafe extern "system" fn query(h: HANDLE, args: *const DXGKARG_QUERYADAPTERINFO) -> NTSTATUS {
    // SAFETY: the OS's handle and arguments, passed through.
    let Some(status) = (unsafe { super::call_real(&REAL, h, args) }) else {
        return STATUS_NOT_IMPLEMENTED;
    };
    // SAFETY: the OS's argument block (or null).
    if let Some(a) = unsafe { args.as_ref() } {
        if a.Type == DXGKQAITYPE_NATIVE_FENCE_CAPS && !a.pOutputData.is_null() {
            let caps = a.pOutputData.cast::<DXGK_NATIVE_FENCE_CAPS>();
            // SAFETY: the OS's output buffer of at least this size for this query.
            unsafe {
                (*caps).MonitoredValueStride = 12;
                (*caps).MapToGpuSystemProcess = 0;
            }
        }
    }
    status
}
