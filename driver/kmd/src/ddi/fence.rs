//! The native-fence DDIs (crate::fence) and the native fence logs (docs/logs.md#kmd,
//! crate::log).

use core::ffi::c_void;
use rvgpu_ddi::fence::{
    DXGKARG_CLOSENATIVEFENCE, DXGKARG_CREATENATIVEFENCE, DXGKARG_DESTROYNATIVEFENCE,
    DXGKARG_OPENNATIVEFENCE, DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_UPDATECURRENTVALUESFROMCPU,
    DXGKARG_UPDATEMONITOREDVALUES, DXGKARG_UPDATENATIVEFENCELOGS,
};

use rvgpu_ddi::{HANDLE, NTSTATUS};

use super::thunk::{OnAdapter, OnAdapterMut, OnArgs};
use crate::adapter::Adapter;
use crate::fence;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus, Status};

/// DxgkDdiCreateNativeFence (PASSIVE).
pub(super) enum CreateNativeFence {}
impl<P: Platform> OnAdapterMut<P> for CreateNativeFence {
    type Args = DXGKARG_CREATENATIVEFENCE;
    fn call(a: &Adapter<P>, args: &mut Self::Args) -> Result<(), Status> {
        fence::create(a, args)
    }
}

/// DxgkDdiOpenNativeFence (PASSIVE).
pub(super) enum OpenNativeFence {}
impl<P: Platform> OnAdapter<P> for OpenNativeFence {
    type Args = DXGKARG_OPENNATIVEFENCE;
    fn call(a: &Adapter<P>, args: &Self::Args) -> Result<(), Status> {
        fence::open(a, args)
    }
}

/// DxgkDdiCloseNativeFence (PASSIVE).
pub(super) enum CloseNativeFence {}
impl<P: Platform> OnAdapter<P> for CloseNativeFence {
    type Args = DXGKARG_CLOSENATIVEFENCE;
    fn call(a: &Adapter<P>, args: &Self::Args) -> Result<(), Status> {
        fence::close(a, args)
    }
}

/// DxgkDdiDestroyNativeFence (PASSIVE).
pub(super) enum DestroyNativeFence {}
impl<P: Platform> OnArgs<P> for DestroyNativeFence {
    type Args = DXGKARG_DESTROYNATIVEFENCE;
    fn call(args: &Self::Args) -> Result<(), Status> {
        fence::destroy::<P>(args)
    }
}

/// The two update DDIs' shared shape: an argument block naming three arrays of `NumFences`
/// entries (handles, new values, kernel CPU addresses of the values), then the logic.
pub(super) trait Update<P: Platform> {
    /// The handle, value and kernel-CPU-address arrays and their length.
    fn arrays(&self) -> (*const HANDLE, *const u64, *const *mut c_void, u32);
    /// The logic.
    fn apply(&self, arrays: &fence::FenceArrays<'_>) -> Result<(), Status>;
}

/// DxgkDdiUpdateMonitoredValues (device IRQL).
impl<P: Platform> Update<P> for DXGKARG_UPDATEMONITOREDVALUES {
    fn arrays(&self) -> (*const HANDLE, *const u64, *const *mut c_void, u32) {
        let va = self.MonitoredValueKernelCpuVa;
        (
            self.NativeFenceArray,
            self.UpdatedValueArray,
            va,
            self.NumFences,
        )
    }
    fn apply(&self, arrays: &fence::FenceArrays<'_>) -> Result<(), Status> {
        fence::update_monitored::<P>(self, arrays)
    }
}

/// DxgkDdiUpdateCurrentValuesFromCpu (DISPATCH).
impl<P: Platform> Update<P> for DXGKARG_UPDATECURRENTVALUESFROMCPU {
    fn arrays(&self) -> (*const HANDLE, *const u64, *const *mut c_void, u32) {
        let va = self.CurrentValueKernelCpuVa;
        (
            self.NativeFenceArray,
            self.UpdatedValueArray,
            va,
            self.NumFences,
        )
    }
    fn apply(&self, arrays: &fence::FenceArrays<'_>) -> Result<(), Status> {
        fence::update_current::<P>(self, arrays)
    }
}

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

/// DxgkDdiSetNativeFenceLogBuffer (DISPATCH_LEVEL, LOG-01).
pub(super) enum SetNativeFenceLogBuffer {}
impl<P: Platform> OnArgs<P> for SetNativeFenceLogBuffer {
    type Args = DXGKARG_SETNATIVEFENCELOGBUFFER;
    fn call(args: &Self::Args) -> Result<(), Status> {
        crate::log::ddi::set_log_buffer::<P>(args)
    }
}

/// DxgkDdiUpdateNativeFenceLogs (DISPATCH_LEVEL, LOG-07).
pub(super) enum UpdateNativeFenceLogs {}
impl<P: Platform> OnArgs<P> for UpdateNativeFenceLogs {
    type Args = DXGKARG_UPDATENATIVEFENCELOGS;
    fn call(args: &Self::Args) -> Result<(), Status> {
        crate::log::ddi::update_logs::<P>(args)
    }
}
