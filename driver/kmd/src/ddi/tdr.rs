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
use rvgpu_ddi::{HANDLE, NTSTATUS};

use super::thunk::{generic_ddis, Call};
use crate::platform::Platform;
use crate::reset;
use crate::status::{self, to_ntstatus};

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
}

/// DxgkDdiCollectDbgInfo (level 0; PASSIVE for the TDR reasons, any IRQL otherwise).
pub(super) unsafe extern "system" fn collect_dbg_info<P: Platform>(
    h_adapter: HANDLE,
    args: *const DXGKARG_COLLECTDBGINFO,
) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    let Some((a, args)) = call.adapter_and::<P, _>(h_adapter, args) else {
        return status::INVALID_PARAMETER.code();
    };
    // Dxgkrnl provides `BufferSize` writable bytes at `pBuffer` for the call
    // (DXGKARG_COLLECTDBGINFO: "the maximum size, in bytes, to copy to the buffer").
    let buf = call.buffer(args.pBuffer, args.BufferSize);
    to_ntstatus(crate::dbginfo::collect(a, args, buf))
}

/// DxgkDdiCollectDbgInfo2 (level 0, as DxgkDdiCollectDbgInfo; WDDM 3.2, preferred by 24H2).
pub(super) unsafe extern "system" fn collect_dbg_info2<P: Platform>(
    h_adapter: HANDLE,
    args: *mut DXGKARG_COLLECTDBGINFO2,
) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    // The block is only read.
    let Some((a, args)) = call.adapter_and::<P, _>(h_adapter, args.cast_const()) else {
        return status::INVALID_PARAMETER.code();
    };
    // As for collect_dbg_info: `BufferSize` writable bytes at `pBuffer`.
    let buf = call.buffer(args.pBuffer, args.BufferSize);
    // The OS's payload of `TdrPayloadSize` bytes, valid for the call when non-null: used when
    // it holds the structure and is 8-aligned.
    let payload = (args.TdrPayload as usize)
        .is_multiple_of(8)
        .then(|| {
            call.object::<DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT>(args.TdrPayload, args.TdrPayloadSize)
        })
        .flatten();
    to_ntstatus(crate::dbginfo::collect2(a, args, buf, payload))
}
