//! Devices, contexts, hardware queues and doorbells. Handles other than hAdapter are numbers
//! the driver decodes and looks up (crate::sched), so a bad one is an NTSTATUS.

use rvgpu_ddi::submission::{
    DXGKARG_CONNECTDOORBELL, DXGKARG_CREATECONTEXT, DXGKARG_CREATEDEVICE, DXGKARG_CREATEDOORBELL,
    DXGKARG_CREATEHWQUEUE, DXGKARG_DESTROYDOORBELL, DXGKARG_DISCONNECTDOORBELL,
    DXGKARG_NOTIFYWORKSUBMISSION, DXGKARG_RESUMECONTEXT, DXGKARG_SUBMITCOMMANDTOHWQUEUE,
    DXGKARG_SUSPENDCONTEXT,
};
use rvgpu_ddi::{HANDLE, NTSTATUS};

use super::thunk::{Call, OnAdapter, OnAdapterMut, OnArgs, OnHandleMut};
use crate::adapter::Adapter;
use crate::context;
use crate::doorbell;
use crate::hwqueue;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus, Status};
use crate::submit;

/// DxgkDdiCreateDevice (PASSIVE).
pub(super) enum CreateDevice {}
impl<P: Platform> OnAdapterMut<P> for CreateDevice {
    type Args = DXGKARG_CREATEDEVICE;
    fn call(a: &Adapter<P>, args: &mut Self::Args) -> Result<(), Status> {
        context::ddi::create_device(a, args)
    }
}

/// DxgkDdiDestroyDevice (PASSIVE).
pub(super) unsafe extern "system" fn destroy_device<P: Platform>(h_device: HANDLE) -> NTSTATUS {
    to_ntstatus(context::ddi::destroy_device::<P>(h_device))
}

/// DxgkDdiCreateContext (PASSIVE).
pub(super) enum CreateContext {}
impl<P: Platform> OnHandleMut<P> for CreateContext {
    type Args = DXGKARG_CREATECONTEXT;
    fn call(h_device: HANDLE, args: &mut Self::Args) -> Result<(), Status> {
        context::ddi::create_context::<P>(h_device, args)
    }
}

/// DxgkDdiDestroyContext (PASSIVE).
pub(super) unsafe extern "system" fn destroy_context<P: Platform>(h_context: HANDLE) -> NTSTATUS {
    to_ntstatus(context::ddi::destroy_context::<P>(h_context))
}

/// DxgkDdiSuspendContext (PASSIVE).
pub(super) enum SuspendContext {}
impl<P: Platform> OnAdapter<P> for SuspendContext {
    type Args = DXGKARG_SUSPENDCONTEXT;
    fn call(a: &Adapter<P>, args: &Self::Args) -> Result<(), Status> {
        context::ddi::suspend_context(a, args)
    }
}

/// DxgkDdiResumeContext (PASSIVE).
pub(super) enum ResumeContext {}
impl<P: Platform> OnAdapter<P> for ResumeContext {
    type Args = DXGKARG_RESUMECONTEXT;
    fn call(a: &Adapter<P>, args: &Self::Args) -> Result<(), Status> {
        context::ddi::resume_context(a, args)
    }
}

/// DxgkDdiCreateHwQueue (PASSIVE): `h_context` is our context handle.
pub(super) unsafe extern "system" fn create_hw_queue<P: Platform>(
    h_context: HANDLE,
    args: *mut DXGKARG_CREATEHWQUEUE,
) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    match call.args_mut(args) {
        Some(args) => {
            // Dxgkrnl passes `PrivateDriverDataSize` in/out bytes at
            // `pPrivateDriverData` (a kernel copy of the UMD's buffer) for the call.
            let data = call.buffer(args.pPrivateDriverData, args.PrivateDriverDataSize);
            to_ntstatus(hwqueue::ddi::create::<P>(h_context, args, data))
        }
        None => status::INVALID_PARAMETER.code(),
    }
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

/// DxgkDdiCreateDoorbell (PASSIVE).
pub(super) unsafe extern "system" fn create_doorbell<P: Platform>(
    args: *mut DXGKARG_CREATEDOORBELL,
) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    match call.args_mut(args) {
        Some(args) => {
            // Dxgkrnl passes `PrivateDriverDataSize` in/out bytes at
            // `PrivateDriverData` for the call.
            let data = call.buffer(args.PrivateDriverData, args.PrivateDriverDataSize);
            to_ntstatus(doorbell::ddi::create::<P>(args, data))
        }
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

/// DxgkDdiDisconnectDoorbell (PASSIVE).
pub(super) enum DisconnectDoorbell {}
impl<P: Platform> OnArgs<P> for DisconnectDoorbell {
    type Args = DXGKARG_DISCONNECTDOORBELL;
    fn call(args: &Self::Args) -> Result<(), Status> {
        doorbell::ddi::disconnect::<P>(args)
    }
}

/// DxgkDdiDestroyDoorbell (PASSIVE).
pub(super) enum DestroyDoorbell {}
impl<P: Platform> OnArgs<P> for DestroyDoorbell {
    type Args = DXGKARG_DESTROYDOORBELL;
    fn call(args: &Self::Args) -> Result<(), Status> {
        doorbell::ddi::destroy::<P>(args)
    }
}

/// DxgkDdiNotifyWorkSubmission (PASSIVE).
pub(super) enum NotifyWorkSubmission {}
impl<P: Platform> OnArgs<P> for NotifyWorkSubmission {
    type Args = DXGKARG_NOTIFYWORKSUBMISSION;
    fn call(args: &Self::Args) -> Result<(), Status> {
        doorbell::ddi::notify_work_submission::<P>(args)
    }
}
