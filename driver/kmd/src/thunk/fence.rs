//! The native-fence DDIs (crate::fence::ddi).

use core::ffi::c_void;
use rvgpu_ddi::fence::{
    DXGKARG_CLOSENATIVEFENCE, DXGKARG_CREATENATIVEFENCE, DXGKARG_DESTROYNATIVEFENCE,
    DXGKARG_OPENNATIVEFENCE, DXGKARG_UPDATECURRENTVALUESFROMCPU, DXGKARG_UPDATEMONITOREDVALUES,
};

use rvgpu_ddi::kmtest::DXGKARG_ESCAPE;
use rvgpu_ddi::{HANDLE, NTSTATUS};

use super::contract::{generic_ddis, own_thunks, Call};
use crate::fence::ddi::{self as fence, FenceArrays};
use crate::fence::MAX_FENCES_PER_UPDATE;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus, Status};

generic_ddis! {
    /// DxgkDdiCreateNativeFence (PASSIVE).
    CreateNativeFence: OnAdapterMut<DXGKARG_CREATENATIVEFENCE> => fence::create;
    /// DxgkDdiOpenNativeFence (PASSIVE).
    OpenNativeFence: OnAdapter<DXGKARG_OPENNATIVEFENCE> => fence::open;
    /// DxgkDdiCloseNativeFence (PASSIVE).
    CloseNativeFence: OnAdapter<DXGKARG_CLOSENATIVEFENCE> => fence::close;
    /// DxgkDdiDestroyNativeFence (PASSIVE).
    DestroyNativeFence: OnArgs<DXGKARG_DESTROYNATIVEFENCE> => fence::destroy::<P>;
    /// DxgkDdiEscape (PASSIVE): a native fence's report tag for its opener (crate::escape).
    Escape: OnAdapter<DXGKARG_ESCAPE> => |call, a, args| {
        // Dxgkrnl passes `PrivateDriverDataSize` in/out bytes at `pPrivateDriverData`, its
        // kernel copy of the caller's data, for the call.
        let data = call.buffer(args.pPrivateDriverData, args.PrivateDriverDataSize);
        crate::escape::escape::<P>(a, args, data)
    };
}

/// The two update DDIs' shared shape: an argument block naming three arrays of `NumFences`
/// entries (handles, new values, kernel CPU addresses of the values), then the logic.
pub(super) trait Update<P: Platform> {
    /// The handle, value and kernel-CPU-address arrays and their length.
    fn arrays(&self) -> (*const HANDLE, *const u64, *const *mut c_void, u32);
    /// The logic.
    fn apply(&self, arrays: &FenceArrays<'_>) -> Result<(), Status>;
}

/// Implements [`Update`] for an update DDI's argument block: the field holding its kernel CPU
/// addresses, and its logic in crate::fence::ddi.
macro_rules! update_ddi {
    ($(#[$d:meta])* $args:ty, $cpu_va:ident, $logic:ident) => {
        $(#[$d])*
        impl<P: Platform> Update<P> for $args {
            fn arrays(&self) -> (*const HANDLE, *const u64, *const *mut c_void, u32) {
                let va = self.$cpu_va;
                (self.NativeFenceArray, self.UpdatedValueArray, va, self.NumFences)
            }
            fn apply(&self, arrays: &FenceArrays<'_>) -> Result<(), Status> {
                fence::$logic::<P>(self, arrays)
            }
        }
    };
}

update_ddi!(
    /// DxgkDdiUpdateMonitoredValues (device IRQL).
    DXGKARG_UPDATEMONITOREDVALUES,
    MonitoredValueKernelCpuVa,
    update_monitored
);
update_ddi!(
    /// DxgkDdiUpdateCurrentValuesFromCpu (DISPATCH).
    DXGKARG_UPDATECURRENTVALUESFROMCPU,
    CurrentValueKernelCpuVa,
    update_current
);

own_thunks! {
    /// DxgkDdiUpdateMonitoredValues. A thunk of its own: scripts/callgrind-fences.sh measures it
    /// by name.
    fn update_monitored_values<P: Platform>(
        call,
        args: *const DXGKARG_UPDATEMONITOREDVALUES,
    ) -> NTSTATUS {
        update_with::<P, _>(call, args)
    }

    /// The thunk of both update DDIs.
    fn update<P: Platform, A: Update<P>>(call, args: *const A) -> NTSTATUS {
        update_with::<P, _>(call, args)
    }
}

/// An update DDI: its three arrays of NumFences entries resolved (valid for the call), then
/// its logic.
#[inline]
fn update_with<P: Platform, A: Update<P>>(call: Call<'_>, args: *const A) -> NTSTATUS {
    let Some(args) = call.args(args) else {
        return status::INVALID_PARAMETER.code();
    };
    let (handles, values, cpu, n) = args.arrays();
    let max = MAX_FENCES_PER_UPDATE;
    let arrays = FenceArrays::new(
        call.slice(handles, n, max),
        call.slice(values, n, max),
        call.os_words(cpu, n, max),
    );
    to_ntstatus(args.apply(&arrays))
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiCreateNativeFence = Some(super::contract::on_adapter_mut::<P, CreateNativeFence>);
    t.DxgkDdiDestroyNativeFence = Some(super::contract::on_args::<P, DestroyNativeFence, _>);
    t.DxgkDdiOpenNativeFence = Some(super::contract::on_adapter::<P, OpenNativeFence, _>);
    t.DxgkDdiCloseNativeFence = Some(super::contract::on_adapter::<P, CloseNativeFence, _>);
    t.DxgkDdiEscape = Some(super::contract::on_adapter::<P, Escape, _>);
    t.DxgkDdiUpdateMonitoredValues = Some(update_monitored_values::<P>);
    t.DxgkDdiUpdateCurrentValuesFromCpu = Some(update::<P, _>);
}
