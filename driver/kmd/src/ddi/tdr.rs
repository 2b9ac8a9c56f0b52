//! TDR (docs/tdr.md#the-kmd; crate::reset, crate::dbginfo) and hardware scheduling (crate::hws).
//! IRQL and synchronisation levels are on each function's Microsoft page, cited in
//! crate::reset and crate::hws.

use rvgpu_ddi::hws::{
    DXGKARG_RESETHWENGINE, DXGKARG_RESUMEHWENGINE, DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES,
    DXGKARG_SETSCHEDULINGLOGBUFFER, DXGKARG_SETUPPRIORITYBANDS,
};
use rvgpu_ddi::tdr::{
    DXGKARG_COLLECTDBGINFO, DXGKARG_COLLECTDBGINFO2, DXGKARG_QUERYDEPENDENTENGINEGROUP,
    DXGKARG_QUERYENGINESTATUS, DXGKARG_RESETENGINE, DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT,
};

use super::thunk::{generic_ddis, Call};
use crate::adapter::Adapter;
use crate::platform::Platform;
use crate::reset;
use crate::status::Status;

generic_ddis! {
    /// DxgkDdiQueryDependentEngineGroup (PASSIVE, first level).
    QueryDependentEngineGroup: OnAdapterMut<DXGKARG_QUERYDEPENDENTENGINEGROUP> =>
        reset::ddi::query_dependent_engine_group;
    /// DxgkDdiQueryEngineStatus (PASSIVE, first level).
    QueryEngineStatus: OnAdapterMut<DXGKARG_QUERYENGINESTATUS> => reset::ddi::query_engine_status;
    /// DxgkDdiResetEngine (PASSIVE, first level).
    ResetEngine: OnAdapterMut<DXGKARG_RESETENGINE> => reset::ddi::reset_engine;
    /// DxgkDdiSetupPriorityBands (PASSIVE).
    SetupPriorityBands: OnAdapter<DXGKARG_SETUPPRIORITYBANDS> =>
        crate::hws::ddi::setup_priority_bands;
    /// DxgkDdiSetSchedulingLogBuffer (PASSIVE).
    SetSchedulingLogBuffer: OnAdapter<DXGKARG_SETSCHEDULINGLOGBUFFER> =>
        crate::hws::ddi::set_scheduling_log_buffer;
    /// DxgkDdiSetContextSchedulingProperties (PASSIVE).
    SetContextSchedulingProperties: OnAdapter<DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES> =>
        crate::hws::ddi::set_context_scheduling_properties;
    /// DxgkDdiResetHwEngine (PASSIVE).
    ResetHwEngine: OnAdapter<DXGKARG_RESETHWENGINE> => reset::ddi::reset_hw_engine;
    /// DxgkDdiResumeHwEngine (PASSIVE).
    ResumeHwEngine: OnAdapter<DXGKARG_RESUMEHWENGINE> => reset::ddi::resume_hw_engine;
    /// DxgkDdiResetFromTimeout (PASSIVE; no other DDI except the F-state power DDIs runs).
    ResetFromTimeout: OnContext => reset::ddi::reset_from_timeout;
    /// DxgkDdiRestartFromTimeout (PASSIVE).
    RestartFromTimeout: OnContext => reset::ddi::restart_from_timeout;
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
