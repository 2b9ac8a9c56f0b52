//! The native fence logs (docs/logs.md#kmd; crate::log::ddi): the header and the handle
//! array the OS passes by pointer are resolved here.

use rvgpu_ddi::fence::{DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_UPDATENATIVEFENCELOGS};

use super::contract::generic_ddis;

generic_ddis! {
    /// DxgkDdiSetNativeFenceLogBuffer (PASSIVE or DISPATCH_LEVEL, LOG-01): a log handed over,
    /// or, with only `hHwQueue` filled, both taken away.
    SetNativeFenceLogBuffer: OnArgs<DXGKARG_SETNATIVEFENCELOGBUFFER> => |call, args| {
        if crate::log::is_release(args) {
            crate::log::ddi::release_logs::<P>(args)
        } else {
            // `LogBufferCpuVa` is the OS's kernel mapping of the buffer, valid for the call.
            let header = call.log_header(args.LogBufferCpuVa);
            let view = call.log_view(args.LogBufferCpuVa, args.NumberOfEntries);
            crate::log::ddi::set_log_buffer::<P>(args, header, view)
        }
    };
    /// DxgkDdiUpdateNativeFenceLogs (DISPATCH_LEVEL, LOG-07).
    UpdateNativeFenceLogs: OnArgs<DXGKARG_UPDATENATIVEFENCELOGS> => |call, args| {
        // The OS passes `NumberOfQueues` handles at `hHWQueue` for the call.
        let handles = call.slice(args.hHWQueue.cast_const(), args.NumberOfQueues, u32::MAX);
        crate::log::ddi::update_logs::<P>(args, handles)
    };
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiSetNativeFenceLogBuffer =
        Some(super::contract::on_args::<P, SetNativeFenceLogBuffer, _>);
    t.DxgkDdiUpdateNativeFenceLogs = Some(super::contract::on_args::<P, UpdateNativeFenceLogs, _>);
}
