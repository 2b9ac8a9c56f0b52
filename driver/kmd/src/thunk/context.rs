//! Devices and contexts (crate::context). Handles other than hAdapter are numbers the driver
//! decodes and looks up (crate::sched), so a bad one is an NTSTATUS.

use super::contract::{generic_ddis, own_thunks};
use crate::context;
use crate::platform::Platform;
use crate::status::to_ntstatus;
use rvgpu_ddi::submission::{
    DXGKARG_CREATECONTEXT, DXGKARG_CREATEDEVICE, DXGKARG_RESUMECONTEXT, DXGKARG_SUSPENDCONTEXT,
};
use rvgpu_ddi::{HANDLE, NTSTATUS};

generic_ddis! {
    /// DxgkDdiCreateDevice (PASSIVE).
    CreateDevice: OnAdapterMut<DXGKARG_CREATEDEVICE> => context::ddi::create_device;
    /// DxgkDdiCreateContext (PASSIVE).
    CreateContext: OnHandleMut<DXGKARG_CREATECONTEXT> => context::ddi::create_context::<P>;
    /// DxgkDdiSuspendContext (PASSIVE).
    SuspendContext: OnAdapter<DXGKARG_SUSPENDCONTEXT> => context::ddi::suspend_context;
    /// DxgkDdiResumeContext (PASSIVE).
    ResumeContext: OnAdapter<DXGKARG_RESUMECONTEXT> => context::ddi::resume_context;
}

own_thunks! {
    /// DxgkDdiDestroyDevice (PASSIVE).
    fn destroy_device<P: Platform>(
        _,
        h_device: HANDLE,
    ) -> NTSTATUS {
        to_ntstatus(context::ddi::destroy_device::<P>(h_device))
    }
}

own_thunks! {
    /// DxgkDdiDestroyContext (PASSIVE).
    fn destroy_context<P: Platform>(
        _,
        h_context: HANDLE,
    ) -> NTSTATUS {
        to_ntstatus(context::ddi::destroy_context::<P>(h_context))
    }
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiCreateDevice = Some(super::contract::on_adapter_mut::<P, CreateDevice>);
    t.DxgkDdiDestroyDevice = Some(destroy_device::<P>);
    t.DxgkDdiCreateContext = Some(super::contract::on_handle_mut::<P, CreateContext>);
    t.DxgkDdiDestroyContext = Some(destroy_context::<P>);
    t.DxgkDdiSuspendContext = Some(super::contract::on_adapter::<P, SuspendContext, _>);
    t.DxgkDdiResumeContext = Some(super::contract::on_adapter::<P, ResumeContext, _>);
}
