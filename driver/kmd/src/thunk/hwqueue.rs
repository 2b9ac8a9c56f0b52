//! Hardware queues (crate::hwqueue).

use super::contract::{generic_ddis, own_thunks};
use crate::hwqueue;
use crate::platform::Platform;
use crate::status::to_ntstatus;
use rvgpu_ddi::submission::DXGKARG_CREATEHWQUEUE;
use rvgpu_ddi::{HANDLE, NTSTATUS};

generic_ddis! {
    /// DxgkDdiCreateHwQueue (PASSIVE): the handle is our context handle.
    CreateHwQueue: OnHandleMut<DXGKARG_CREATEHWQUEUE> => |call, h_context, args| {
        // Dxgkrnl passes `PrivateDriverDataSize` in/out bytes at `pPrivateDriverData` (a
        // kernel copy of the UMD's buffer) for the call.
        let data = call.buffer(args.pPrivateDriverData, args.PrivateDriverDataSize);
        // The progress fence value's kernel mapping, kept while the queue lives.
        let word = call.queue_word(args.HwQueueProgressFenceCPUVirtualAddress);
        hwqueue::ddi::create::<P>(h_context, args, data, word)
    };
}

own_thunks! {
    /// DxgkDdiDestroyHwQueue (PASSIVE).
    fn destroy_hw_queue<P: Platform>(
        _,
        h_queue: HANDLE,
    ) -> NTSTATUS {
        to_ntstatus(hwqueue::ddi::destroy::<P>(h_queue))
    }
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiCreateHwQueue = Some(super::contract::on_handle_mut::<P, CreateHwQueue>);
    t.DxgkDdiDestroyHwQueue = Some(destroy_hw_queue::<P>);
}
