//! TDR (docs/tdr.md#the-kmd; crate::reset). IRQL and synchronisation levels are on each
//! function's Microsoft page, cited in crate::reset.

use super::contract::generic_ddis;
use crate::reset;
use rvgpu_ddi::hws::{DXGKARG_RESETHWENGINE, DXGKARG_RESUMEHWENGINE};
use rvgpu_ddi::tdr::{
    DXGKARG_QUERYDEPENDENTENGINEGROUP, DXGKARG_QUERYENGINESTATUS, DXGKARG_RESETENGINE,
};

generic_ddis! {
    /// DxgkDdiQueryDependentEngineGroup (PASSIVE, first level).
    QueryDependentEngineGroup: OnAdapterMut<DXGKARG_QUERYDEPENDENTENGINEGROUP> =>
        reset::ddi::query_dependent_engine_group;
    /// DxgkDdiQueryEngineStatus (PASSIVE, first level).
    QueryEngineStatus: OnAdapterMut<DXGKARG_QUERYENGINESTATUS> => reset::ddi::query_engine_status;
    /// DxgkDdiResetEngine (PASSIVE, first level).
    ResetEngine: OnAdapterMut<DXGKARG_RESETENGINE> => reset::ddi::reset_engine;
    /// DxgkDdiResetHwEngine (PASSIVE).
    ResetHwEngine: OnAdapter<DXGKARG_RESETHWENGINE> => reset::ddi::reset_hw_engine;
    /// DxgkDdiResumeHwEngine (PASSIVE).
    ResumeHwEngine: OnAdapter<DXGKARG_RESUMEHWENGINE> => reset::ddi::resume_hw_engine;
    /// DxgkDdiResetFromTimeout (PASSIVE; no other DDI except the F-state power DDIs runs).
    ResetFromTimeout: OnContext => reset::ddi::reset_from_timeout;
    /// DxgkDdiRestartFromTimeout (PASSIVE).
    RestartFromTimeout: OnContext => reset::ddi::restart_from_timeout;
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiQueryDependentEngineGroup =
        Some(super::contract::on_adapter_mut::<P, QueryDependentEngineGroup>);
    t.DxgkDdiQueryEngineStatus = Some(super::contract::on_adapter_mut::<P, QueryEngineStatus>);
    t.DxgkDdiResetEngine = Some(super::contract::on_adapter_mut::<P, ResetEngine>);
    t.DxgkDdiResetHwEngine = Some(super::contract::on_adapter::<P, ResetHwEngine, _>);
    t.DxgkDdiResumeHwEngine = Some(super::contract::on_adapter::<P, ResumeHwEngine, _>);
    t.DxgkDdiResetFromTimeout = Some(super::contract::on_context::<P, ResetFromTimeout>);
    t.DxgkDdiRestartFromTimeout = Some(super::contract::on_context::<P, RestartFromTimeout>);
}
