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
