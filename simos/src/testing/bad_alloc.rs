//! A DxgkDdiCreateAllocation that answers like the real driver and then drops the aperture
//! segment from every allocation's segment sets: VidMm must refuse a CPU-visible allocation
//! it could not always give a CPU address (AL-04). Install with
//! [`install_no_aperture_for_cpu_visible`].

use std::sync::OnceLock;

use rvgpu_ddi::allocation::DXGKARG_CREATEALLOCATION;
use rvgpu_ddi::basic::HANDLE;
use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, PDXGKDDI_CREATEALLOCATION};
use rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED;
use rvgpu_ddi::NTSTATUS;

static REAL: OnceLock<PDXGKDDI_CREATEALLOCATION> = OnceLock::new();

/// Table hook.
pub fn install_no_aperture_for_cpu_visible(t: &mut DRIVER_INITIALIZATION_DATA) {
    let _ = REAL.set(t.DxgkDdiCreateAllocation);
    t.DxgkDdiCreateAllocation = Some(create);
}

unsafe extern "system" fn create(h: HANDLE, args: *mut DXGKARG_CREATEALLOCATION) -> NTSTATUS {
    // SAFETY: the OS's handle and arguments, passed through.
    let Some(status) = (unsafe { super::call_real(&REAL, h, args) }) else {
        return STATUS_NOT_IMPLEMENTED;
    };
    // SAFETY: the OS's argument block (or null).
    if let Some(a) = unsafe { args.as_ref() } {
        for i in 0..a.NumAllocations as usize {
            // SAFETY: the OS's array of `NumAllocations` infos.
            let info = unsafe { &mut *a.pAllocationInfo.add(i) };
            // Segment 1 is the aperture (docs/memory.md).
            info.SupportedReadSegmentSet &= !1;
            info.SupportedWriteSegmentSet &= !1;
        }
    }
    status
}
