//! Runtime power management (UM-13; crate::power). Both at IRQL <= DISPATCH_LEVEL, zero-level
//! synchronisation (their Microsoft pages, cited in crate::power).

use rvgpu_ddi::{HANDLE, NTSTATUS, PVOID, UINT};

use super::thunk::adapter;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus};

/// DxgkDdiSetPowerComponentFState (<= DISPATCH_LEVEL).
pub(super) unsafe extern "system" fn set_power_component_fstate<P: Platform>(
    ctx: HANDLE,
    component: UINT,
    fstate: UINT,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's pointer contract (super::thunk).
    match unsafe { adapter::<P>(ctx) } {
        Some(a) => to_ntstatus(crate::power::ddi::set_fstate(a, component, fstate)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiPowerRuntimeControlRequest (<= DISPATCH_LEVEL). No control code of rvgpu's returns
/// data, so `BytesReturned` (when given) is set to 0 and the buffers are not touched.
pub(super) unsafe extern "system" fn power_runtime_control_request<P: Platform>(
    ctx: HANDLE,
    code: *const rvgpu_ddi::GUID,
    _in_buffer: PVOID,
    _in_size: rvgpu_ddi::SIZE_T,
    _out_buffer: PVOID,
    _out_size: rvgpu_ddi::SIZE_T,
    bytes_returned: *mut rvgpu_ddi::SIZE_T,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's pointer contract (super::thunk).
    let a = unsafe { adapter::<P>(ctx) };
    // SAFETY: the OS's control-code GUID, valid for the call when non-null; read unaligned as
    // its alignment is not promised.
    let code = (!code.is_null()).then(|| unsafe { code.read_unaligned() });
    if !bytes_returned.is_null() {
        // SAFETY: an optional out pointer the OS provides for the call (checked non-null);
        // unaligned write as its alignment is not promised.
        unsafe { bytes_returned.write_unaligned(0) };
    }
    match (a, code) {
        (Some(a), Some(code)) => to_ntstatus(crate::power::ddi::control_request(a, &code)),
        _ => status::INVALID_PARAMETER.code(),
    }
}
