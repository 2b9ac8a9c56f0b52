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

use super::thunk::{Call, OnAdapter, OnAdapterMut, OnContext};
use crate::adapter::Adapter;
use crate::platform::Platform;
use crate::reset;
use crate::status::{self, to_ntstatus, Status};

/// DxgkDdiQueryDependentEngineGroup (PASSIVE, first level).
pub(super) enum QueryDependentEngineGroup {}
impl<P: Platform> OnAdapterMut<P> for QueryDependentEngineGroup {
    type Args = DXGKARG_QUERYDEPENDENTENGINEGROUP;
    fn call(a: &Adapter<P>, args: &mut Self::Args) -> Result<(), Status> {
        reset::ddi::query_dependent_engine_group(a, args)
    }
}

/// DxgkDdiQueryEngineStatus (PASSIVE, first level).
pub(super) enum QueryEngineStatus {}
impl<P: Platform> OnAdapterMut<P> for QueryEngineStatus {
    type Args = DXGKARG_QUERYENGINESTATUS;
    fn call(a: &Adapter<P>, args: &mut Self::Args) -> Result<(), Status> {
        reset::ddi::query_engine_status(a, args)
    }
}

/// DxgkDdiResetEngine (PASSIVE, first level).
pub(super) enum ResetEngine {}
impl<P: Platform> OnAdapterMut<P> for ResetEngine {
    type Args = DXGKARG_RESETENGINE;
    fn call(a: &Adapter<P>, args: &mut Self::Args) -> Result<(), Status> {
        reset::ddi::reset_engine(a, args)
    }
}

/// DxgkDdiSetupPriorityBands (PASSIVE).
pub(super) enum SetupPriorityBands {}
impl<P: Platform> OnAdapter<P> for SetupPriorityBands {
    type Args = DXGKARG_SETUPPRIORITYBANDS;
    fn call(a: &Adapter<P>, args: &Self::Args) -> Result<(), Status> {
        crate::hws::ddi::setup_priority_bands(a, args)
    }
}

/// DxgkDdiSetSchedulingLogBuffer (PASSIVE).
pub(super) enum SetSchedulingLogBuffer {}
impl<P: Platform> OnAdapter<P> for SetSchedulingLogBuffer {
    type Args = DXGKARG_SETSCHEDULINGLOGBUFFER;
    fn call(a: &Adapter<P>, args: &Self::Args) -> Result<(), Status> {
        crate::hws::ddi::set_scheduling_log_buffer(a, args)
    }
}

/// DxgkDdiSetContextSchedulingProperties (PASSIVE).
pub(super) enum SetContextSchedulingProperties {}
impl<P: Platform> OnAdapter<P> for SetContextSchedulingProperties {
    type Args = DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES;
    fn call(a: &Adapter<P>, args: &Self::Args) -> Result<(), Status> {
        crate::hws::ddi::set_context_scheduling_properties(a, args)
    }
}

/// DxgkDdiResetHwEngine (PASSIVE).
pub(super) enum ResetHwEngine {}
impl<P: Platform> OnAdapter<P> for ResetHwEngine {
    type Args = DXGKARG_RESETHWENGINE;
    fn call(a: &Adapter<P>, args: &Self::Args) -> Result<(), Status> {
        reset::ddi::reset_hw_engine(a, args)
    }
}

/// DxgkDdiResumeHwEngine (PASSIVE).
pub(super) enum ResumeHwEngine {}
impl<P: Platform> OnAdapter<P> for ResumeHwEngine {
    type Args = DXGKARG_RESUMEHWENGINE;
    fn call(a: &Adapter<P>, args: &Self::Args) -> Result<(), Status> {
        reset::ddi::resume_hw_engine(a, args)
    }
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

/// DxgkDdiResetFromTimeout (PASSIVE; no other DDI except the F-state power DDIs runs).
pub(super) enum ResetFromTimeout {}
impl<P: Platform> OnContext<P> for ResetFromTimeout {
    type Out = NTSTATUS;
    const NO_ADAPTER: NTSTATUS = status::INVALID_PARAMETER.code();
    fn call(a: &Adapter<P>) -> NTSTATUS {
        to_ntstatus(reset::ddi::reset_from_timeout(a))
    }
}

/// DxgkDdiRestartFromTimeout (PASSIVE).
pub(super) enum RestartFromTimeout {}
impl<P: Platform> OnContext<P> for RestartFromTimeout {
    type Out = NTSTATUS;
    const NO_ADAPTER: NTSTATUS = status::INVALID_PARAMETER.code();
    fn call(a: &Adapter<P>) -> NTSTATUS {
        to_ntstatus(reset::ddi::restart_from_timeout(a))
    }
}
