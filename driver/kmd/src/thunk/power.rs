//! Runtime power management (UM-13; crate::power). Both at IRQL <= DISPATCH_LEVEL, zero-level
//! synchronisation (their Microsoft pages, cited in crate::power).

use rvgpu_ddi::{HANDLE, NTSTATUS, PVOID, UINT};

use super::contract::own_thunks;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus};

own_thunks! {
    /// DxgkDdiSetPowerComponentFState (<= DISPATCH_LEVEL).
    fn set_power_component_fstate<P: Platform>(
        call,
        ctx: HANDLE,
        component: UINT,
        fstate: UINT,
    ) -> NTSTATUS {
        match call.adapter::<P>(ctx) {
            Some(a) => to_ntstatus(crate::power::ddi::set_fstate(a, component, fstate)),
            None => status::INVALID_PARAMETER.code(),
        }
    }
}

own_thunks! {
    /// DxgkDdiPowerRuntimeControlRequest (<= DISPATCH_LEVEL). No control code of rvgpu's returns
    /// data, so `BytesReturned` (when given) is set to 0 and the buffers are not touched.
    fn power_runtime_control_request<P: Platform>(
        call,
        ctx: HANDLE,
        code: *const rvgpu_ddi::GUID,
        _in_buffer: PVOID,
        _in_size: rvgpu_ddi::SIZE_T,
        _out_buffer: PVOID,
        _out_size: rvgpu_ddi::SIZE_T,
        bytes_returned: *mut rvgpu_ddi::SIZE_T,
    ) -> NTSTATUS {
        let a = call.adapter::<P>(ctx);
        // The control-code GUID and the optional `BytesReturned`, neither promised aligned.
        let code = call.read(code);
        call.put(bytes_returned, 0);
        match (a, code) {
            (Some(a), Some(code)) => to_ntstatus(crate::power::ddi::control_request(a, &code)),
            _ => status::INVALID_PARAMETER.code(),
        }
    }
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiSetPowerComponentFState = Some(set_power_component_fstate::<P>);
    t.DxgkDdiPowerRuntimeControlRequest = Some(power_runtime_control_request::<P>);
}
