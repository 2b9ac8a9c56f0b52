//! Stand-ins around the driver's user-mode submission discovery (UM-03, UM-04): a
//! `DxgkDdiGetNodeMetadata` that clears `UserModeSubmission` on node 1, and a
//! `DxgkDdiQueryAdapterInfo` that fails `DXGKQAITYPE_USERMODESUBMISSION_CAPS`. Everything else
//! goes to the real driver. Install with [`crate::Machine::load_driver_with`].

use std::sync::OnceLock;

use rvgpu_ddi::adapter::{DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_USERMODESUBMISSION_CAPS};
use rvgpu_ddi::basic::{HANDLE, UINT};
use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, PDXGKDDI_QUERYADAPTERINFO};
use rvgpu_ddi::ntstatus::{STATUS_NOT_IMPLEMENTED, STATUS_NOT_SUPPORTED};
use rvgpu_ddi::submission::{
    DXGKARG_GETNODEMETADATA, DXGK_NODEMETADATA_FLAGS, PDXGKDDI_GETNODEMETADATA,
};
use rvgpu_ddi::NTSTATUS;

static REAL_MD: OnceLock<PDXGKDDI_GETNODEMETADATA> = OnceLock::new();
static REAL_QAI: OnceLock<PDXGKDDI_QUERYADAPTERINFO> = OnceLock::new();

/// Table hook: node 1 reports no user-mode submission.
pub fn install_node1_without_ums(t: &mut DRIVER_INITIALIZATION_DATA) {
    let _ = REAL_MD.set(t.DxgkDdiGetNodeMetadata);
    t.DxgkDdiGetNodeMetadata = Some(metadata);
}

/// Table hook: `DXGKQAITYPE_USERMODESUBMISSION_CAPS` fails.
pub fn install_failing_ums_caps(t: &mut DRIVER_INITIALIZATION_DATA) {
    let _ = REAL_QAI.set(t.DxgkDdiQueryAdapterInfo);
    t.DxgkDdiQueryAdapterInfo = Some(query);
}

unsafe extern "system" fn metadata(
    h: HANDLE,
    node: UINT,
    out: *mut DXGKARG_GETNODEMETADATA,
) -> NTSTATUS {
    let Some(real) = REAL_MD.get().copied().flatten() else {
        return STATUS_NOT_IMPLEMENTED;
    };
    // SAFETY: the driver's own DDI with the OS's arguments.
    let s = unsafe { real(h, node, out) };
    if node == 1 {
        // SAFETY: the OS's output buffer (or null).
        if let Some(md) = unsafe { out.as_mut() } {
            md.Flags = md
                .Flags
                .with(DXGK_NODEMETADATA_FLAGS::UserModeSubmission, 0);
        }
    }
    s
}

unsafe extern "system" fn query(h: HANDLE, args: *const DXGKARG_QUERYADAPTERINFO) -> NTSTATUS {
    // SAFETY: the OS's argument block (or null).
    if unsafe { args.as_ref() }.is_some_and(|a| a.Type == DXGKQAITYPE_USERMODESUBMISSION_CAPS) {
        return STATUS_NOT_SUPPORTED;
    }
    // SAFETY: the OS's handle and arguments, passed through.
    unsafe { super::call_real(&REAL_QAI, h, args) }.unwrap_or(STATUS_NOT_IMPLEMENTED)
}
