//! The GPU clock (crate::clock): calibration and the stable power state.

use super::contract::own_thunks;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus};
use rvgpu_ddi::adapter::{DXGKARG_CALIBRATEGPUCLOCK, DXGKARG_SETSTABLEPOWERSTATE};
use rvgpu_ddi::{HANDLE, NTSTATUS, UINT};

own_thunks! {
    /// DxgkDdiCalibrateGpuClock (DISPATCH_LEVEL).
    fn calibrate_gpu_clock<P: Platform>(
        call,
        h_adapter: HANDLE,
        node: UINT,
        engine: UINT,
        out: *mut DXGKARG_CALIBRATEGPUCLOCK,
    ) -> NTSTATUS {
        match call.adapter_and_mut::<P, _>(h_adapter, out) {
            Some((a, out)) => to_ntstatus(crate::clock::calibrate(a, node, engine, out)),
            None => status::INVALID_PARAMETER.code(),
        }
    }
}

own_thunks! {
    /// DxgkDdiSetStablePowerState (PASSIVE). Dxgkrnl requires it beside CalibrateGpuClock from
    /// interface 0x5008 on (docs/windows-bringup.md BR-54). The emulated GPU has one clock and no
    /// power states to vary, so its power state is always stable: the request is recorded for
    /// debugging and nothing changes.
    fn set_stable_power_state<P: Platform>(
        call,
        h_adapter: HANDLE,
        args: *const DXGKARG_SETSTABLEPOWERSTATE,
    ) {
        if let Some((_, args)) = call.adapter_and::<P, _>(h_adapter, args) {
            crate::klog!(
                P,
                Info,
                "rvgpu: SetStablePowerState({}): the device has one fixed clock",
                args.Enabled != 0
            );
        }
    }
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiCalibrateGpuClock = Some(calibrate_gpu_clock::<P>);
    t.DxgkDdiSetStablePowerState = Some(set_stable_power_state::<P>);
}
