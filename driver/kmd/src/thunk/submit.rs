//! User-mode submission to a hardware queue (crate::submit).

use super::contract::own_thunks;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus};
use crate::submit;
use rvgpu_ddi::submission::DXGKARG_SUBMITCOMMANDTOHWQUEUE;
use rvgpu_ddi::{HANDLE, NTSTATUS};

own_thunks! {
    /// DxgkDdiSubmitCommandToHwQueue (PASSIVE). A thunk of its own: scripts/callgrind-submission.sh
    /// measures it by name.
    fn submit_command_to_hw_queue<P: Platform>(
        call,
        h_adapter: HANDLE,
        args: *const DXGKARG_SUBMITCOMMANDTOHWQUEUE,
    ) -> NTSTATUS {
        match call.adapter_and::<P, _>(h_adapter, args) {
            Some((a, args)) => to_ntstatus(submit::ddi::submit(a, args)),
            None => status::INVALID_PARAMETER.code(),
        }
    }
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiSubmitCommandToHwQueue = Some(submit_command_to_hw_queue::<P>);
}
