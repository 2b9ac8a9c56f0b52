//! Doorbells (crate::doorbell).

use super::contract::{generic_ddis, own_thunks};
use crate::doorbell;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus};
use rvgpu_ddi::submission::{
    DXGKARG_CONNECTDOORBELL, DXGKARG_CREATEDOORBELL, DXGKARG_DESTROYDOORBELL,
    DXGKARG_DISCONNECTDOORBELL, DXGKARG_NOTIFYWORKSUBMISSION,
};
use rvgpu_ddi::NTSTATUS;

generic_ddis! {
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

own_thunks! {
    /// DxgkDdiConnectDoorbell (PASSIVE). A thunk of its own: scripts/callgrind-submission.sh
    /// measures it by name.
    fn connect_doorbell<P: Platform>(
        call,
        args: *mut DXGKARG_CONNECTDOORBELL,
    ) -> NTSTATUS {
        match call.args_mut(args) {
            Some(args) => to_ntstatus(doorbell::ddi::connect::<P>(args)),
            None => status::INVALID_PARAMETER.code(),
        }
    }
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiCreateDoorbell = Some(super::contract::on_args_mut::<P, CreateDoorbell>);
    t.DxgkDdiConnectDoorbell = Some(connect_doorbell::<P>);
    t.DxgkDdiDisconnectDoorbell = Some(super::contract::on_args::<P, DisconnectDoorbell, _>);
    t.DxgkDdiDestroyDoorbell = Some(super::contract::on_args::<P, DestroyDoorbell, _>);
    t.DxgkDdiNotifyWorkSubmission = Some(super::contract::on_args::<P, NotifyWorkSubmission, _>);
}
