//! Devices, contexts, hardware queues and doorbells. Handles other than hAdapter are numbers
//! the driver decodes and looks up (crate::sched), so a bad one is an NTSTATUS.

use rvgpu_ddi::submission::{
    DXGKARG_CONNECTDOORBELL, DXGKARG_CREATECONTEXT, DXGKARG_CREATEDEVICE, DXGKARG_CREATEDOORBELL,
    DXGKARG_CREATEHWQUEUE, DXGKARG_DESTROYDOORBELL, DXGKARG_DISCONNECTDOORBELL,
    DXGKARG_NOTIFYWORKSUBMISSION, DXGKARG_RESUMECONTEXT, DXGKARG_SUBMITCOMMANDTOHWQUEUE,
    DXGKARG_SUSPENDCONTEXT,
};
use rvgpu_ddi::{HANDLE, NTSTATUS};

use super::thunk::{generic_ddis, Call};
use crate::context;
use crate::doorbell;
use crate::hwqueue;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus};
use crate::submit;

generic_ddis! {
    /// DxgkDdiCreateDevice (PASSIVE).
    CreateDevice: OnAdapterMut<DXGKARG_CREATEDEVICE> => context::ddi::create_device;
    /// DxgkDdiCreateContext (PASSIVE).
    CreateContext: OnHandleMut<DXGKARG_CREATECONTEXT> => context::ddi::create_context::<P>;
    /// DxgkDdiSuspendContext (PASSIVE).
    SuspendContext: OnAdapter<DXGKARG_SUSPENDCONTEXT> => context::ddi::suspend_context;
    /// DxgkDdiResumeContext (PASSIVE).
    ResumeContext: OnAdapter<DXGKARG_RESUMECONTEXT> => context::ddi::resume_context;
    /// DxgkDdiCreateHwQueue (PASSIVE): the handle is our context handle.
    CreateHwQueue: OnHandleMut<DXGKARG_CREATEHWQUEUE> => |call, h_context, args| {
        // Dxgkrnl passes `PrivateDriverDataSize` in/out bytes at `pPrivateDriverData` (a
        // kernel copy of the UMD's buffer) for the call.
        let data = call.buffer(args.pPrivateDriverData, args.PrivateDriverDataSize);
        hwqueue::ddi::create::<P>(h_context, args, data)
    };
    /// DxgkDdiCreateDoorbell (PASSIVE).
    CreateDoorbell: OnArgsMut<DXGKARG_CREATEDOORBELL> => |call, args| {
        // Dxgkrnl passes `PrivateDriverDataSize` in/out bytes at `PrivateDriverData` for the
        // call.
        let data = call.buffer(args.PrivateDriverData, args.PrivateDriverDataSize);
        doorbell::ddi::create::<P>(args, data)
    };
    /// DxgkDdiDisconnectDoorbell (PASSIVE).
    DisconnectDoorbell: OnArgs<DXGKARG_DISCONNECTDOORBELL> => doorbell::ddi::disconnect::<P>;
    /// DxgkDdiDestroyDoorbell (PASSIVE).
    DestroyDoorbell: OnArgs<DXGKARG_DESTROYDOORBELL> => doorbell::ddi::destroy::<P>;
    /// DxgkDdiNotifyWorkSubmission (PASSIVE).
    NotifyWorkSubmission: OnArgs<DXGKARG_NOTIFYWORKSUBMISSION> =>
        doorbell::ddi::notify_work_submission::<P>;
}

/// DxgkDdiDestroyDevice (PASSIVE).
pub(super) unsafe extern "system" fn destroy_device<P: Platform>(h_device: HANDLE) -> NTSTATUS {
    to_ntstatus(context::ddi::destroy_device::<P>(h_device))
}

/// DxgkDdiDestroyContext (PASSIVE).
pub(super) unsafe extern "system" fn destroy_context<P: Platform>(h_context: HANDLE) -> NTSTATUS {
    to_ntstatus(context::ddi::destroy_context::<P>(h_context))
}

/// DxgkDdiDestroyHwQueue (PASSIVE).
pub(super) unsafe extern "system" fn destroy_hw_queue<P: Platform>(h_queue: HANDLE) -> NTSTATUS {
    to_ntstatus(hwqueue::ddi::destroy::<P>(h_queue))
}

/// DxgkDdiSubmitCommandToHwQueue (PASSIVE). A thunk of its own: scripts/callgrind-submission.sh
/// measures it by name.
pub(super) unsafe extern "system" fn submit_command_to_hw_queue<P: Platform>(
    h_adapter: HANDLE,
    args: *const DXGKARG_SUBMITCOMMANDTOHWQUEUE,
) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    match call.adapter_and::<P, _>(h_adapter, args) {
        Some((a, args)) => to_ntstatus(submit::ddi::submit(a, args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiConnectDoorbell (PASSIVE). A thunk of its own: scripts/callgrind-submission.sh
/// measures it by name.
pub(super) unsafe extern "system" fn connect_doorbell<P: Platform>(
    args: *mut DXGKARG_CONNECTDOORBELL,
) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    match call.args_mut(args) {
        Some(args) => to_ntstatus(doorbell::ddi::connect::<P>(args)),
        None => status::INVALID_PARAMETER.code(),
    }
}
