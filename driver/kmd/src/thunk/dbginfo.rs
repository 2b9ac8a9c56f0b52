//! The TDR debug report (crate::dbginfo): CollectDbgInfo and CollectDbgInfo2.

use super::contract::{generic_ddis, Call};
use crate::adapter::Adapter;
use crate::platform::Platform;
use crate::status::Status;
use rvgpu_ddi::tdr::{
    DXGKARG_COLLECTDBGINFO, DXGKARG_COLLECTDBGINFO2, DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT,
};

generic_ddis! {
    /// DxgkDdiCollectDbgInfo (level 0; PASSIVE for the TDR reasons, any IRQL otherwise).
    CollectDbgInfo: OnAdapter<DXGKARG_COLLECTDBGINFO> => |call, a, args| {
        // Dxgkrnl provides `BufferSize` writable bytes at `pBuffer` for the call
        // (DXGKARG_COLLECTDBGINFO: "the maximum size, in bytes, to copy to the buffer").
        let buf = call.buffer(args.pBuffer, args.BufferSize);
        crate::dbginfo::collect(a, args, buf)
    };
    /// DxgkDdiCollectDbgInfo2 (level 0, as DxgkDdiCollectDbgInfo; WDDM 3.2, preferred by 24H2).
    /// The block is only read.
    CollectDbgInfo2: OnAdapter<DXGKARG_COLLECTDBGINFO2> =>
        |call, a, args| collect_dbg_info2(call, a, args);
}

/// DxgkDdiCollectDbgInfo2's logic.
fn collect_dbg_info2<P: Platform>(
    call: Call<'_>,
    a: &Adapter<P>,
    args: &DXGKARG_COLLECTDBGINFO2,
) -> Result<(), Status> {
    // As for CollectDbgInfo: `BufferSize` writable bytes at `pBuffer`.
    let buf = call.buffer(args.pBuffer, args.BufferSize);
    // The OS's payload of `TdrPayloadSize` bytes, valid for the call when non-null: used when
    // it holds the structure and is 8-aligned.
    let payload = (args.TdrPayload as usize)
        .is_multiple_of(8)
        .then(|| {
            call.object::<DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT>(args.TdrPayload, args.TdrPayloadSize)
        })
        .flatten();
    crate::dbginfo::collect2(a, args, buf, payload)
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiCollectDbgInfo = Some(super::contract::on_adapter::<P, CollectDbgInfo, _>);
    t.DxgkDdiCollectDbgInfo2 = Some(super::contract::on_adapter::<P, CollectDbgInfo2, _>);
}
