//! The native-fence DDIs (crate::fence) and the native fence logs (docs/logs.md#kmd,
//! crate::log).

use core::ffi::c_void;
use rvgpu_ddi::fence::{
    DXGKARG_CLOSENATIVEFENCE, DXGKARG_CREATENATIVEFENCE, DXGKARG_DESTROYNATIVEFENCE,
    DXGKARG_OPENNATIVEFENCE, DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_UPDATECURRENTVALUESFROMCPU,
    DXGKARG_UPDATEMONITOREDVALUES, DXGKARG_UPDATENATIVEFENCELOGS,
};

use rvgpu_ddi::{HANDLE, NTSTATUS};

use super::thunk::generic_ddis;
use crate::fence;
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
    /// DxgkDdiSetNativeFenceLogBuffer (DISPATCH_LEVEL, LOG-01).
    SetNativeFenceLogBuffer: OnArgs<DXGKARG_SETNATIVEFENCELOGBUFFER> =>
        crate::log::ddi::set_log_buffer::<P>;
    /// DxgkDdiUpdateNativeFenceLogs (DISPATCH_LEVEL, LOG-07).
    UpdateNativeFenceLogs: OnArgs<DXGKARG_UPDATENATIVEFENCELOGS> =>
        crate::log::ddi::update_logs::<P>;
}

/// The two update DDIs' shared shape: an argument block naming three arrays of `NumFences`
/// entries (handles, new values, kernel CPU addresses of the values), then the logic.
pub(super) trait Update<P: Platform> {
    /// The handle, value and kernel-CPU-address arrays and their length.
    fn arrays(&self) -> (*const HANDLE, *const u64, *const *mut c_void, u32);
    /// The logic.
    fn apply(&self, arrays: &fence::FenceArrays<'_>) -> Result<(), Status>;
}

/// Implements [`Update`] for an update DDI's argument block: the field holding its kernel CPU
/// addresses, and its logic in crate::fence.
macro_rules! update_ddi {
    ($(#[$d:meta])* $args:ty, $cpu_va:ident, $logic:ident) => {
        $(#[$d])*
        impl<P: Platform> Update<P> for $args {
            fn arrays(&self) -> (*const HANDLE, *const u64, *const *mut c_void, u32) {
                let va = self.$cpu_va;
                (self.NativeFenceArray, self.UpdatedValueArray, va, self.NumFences)
            }
            fn apply(&self, arrays: &fence::FenceArrays<'_>) -> Result<(), Status> {
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

/// DxgkDdiUpdateMonitoredValues. A thunk of its own: scripts/callgrind-fences.sh measures it
/// by name.
pub(super) unsafe extern "system" fn update_monitored_values<P: Platform>(
    args: *const DXGKARG_UPDATEMONITOREDVALUES,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's pointer contract (super::thunk), passed on.
    unsafe { update::<P, _>(args) }
}

/// The thunk of both update DDIs.
pub(super) unsafe extern "system" fn update<P: Platform, A: Update<P>>(args: *const A) -> NTSTATUS {
    // SAFETY: Dxgkrnl's pointer contract (super::thunk).
    let Some(args) = (unsafe { args.as_ref() }) else {
        return status::INVALID_PARAMETER.code();
    };
    let (handles, values, cpu, n) = args.arrays();
    // SAFETY: the OS passes three arrays of NumFences entries, valid for the call.
    let arrays = unsafe { fence::FenceArrays::new(handles, values, cpu, n) };
    to_ntstatus(args.apply(&arrays))
}
