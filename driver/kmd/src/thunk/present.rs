//! The display DDIs a render-only adapter refuses (crate::present).

use super::contract::own_thunks;
use crate::status::{self, to_ntstatus};
use rvgpu_ddi::{BOOLEAN, HANDLE, NTSTATUS};

own_thunks! {
    /// DxgkDdiPresent (PASSIVE): refused, rvgpu has nothing to present with (`crate::present`).
    fn present(
        call,
        h_context: HANDLE,
        args: *mut rvgpu_ddi::present::DXGKARG_PRESENT,
    ) -> NTSTATUS {
        let args = call.args_mut(args);
        match args {
            // The context is not looked at: no present is carried out on any of them.
            Some(args) if !h_context.is_null() => to_ntstatus(crate::present::present(args)),
            // INVALID_HANDLE is in the wrapper's allow-list; INVALID_PARAMETER is not.
            _ => status::INVALID_HANDLE.code(),
        }
    }
}

own_thunks! {
    /// DxgkDdiControlInterrupt (PASSIVE): no interrupt type is under its control on rvgpu.
    fn control_interrupt(
        _,
        h_adapter: HANDLE,
        ty: rvgpu_ddi::interrupt::DXGK_INTERRUPT_TYPE,
        enable: BOOLEAN,
    ) -> NTSTATUS {
        // A null context is the only one that resolves to no adapter (super::contract::adapter).
        if h_adapter.is_null() {
            // UNSUCCESSFUL is in the wrapper's allow-list (SUCCESS, UNSUCCESSFUL, NOT_IMPLEMENTED).
            return status::UNSUCCESSFUL.code();
        }
        to_ntstatus(crate::present::control_interrupt(ty, enable != 0))
    }
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill(t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA) {
    t.DxgkDdiPresent = Some(present);
    t.DxgkDdiControlInterrupt = Some(control_interrupt);
}
