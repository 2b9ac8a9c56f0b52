//! Hardware scheduling (crate::hws). IRQL and synchronisation levels are on each function's
//! Microsoft page, cited in crate::hws.

use super::contract::generic_ddis;
use rvgpu_ddi::hws::{
    DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES, DXGKARG_SETSCHEDULINGLOGBUFFER,
    DXGKARG_SETUPPRIORITYBANDS,
};

generic_ddis! {
    /// DxgkDdiSetupPriorityBands (PASSIVE).
    SetupPriorityBands: OnAdapter<DXGKARG_SETUPPRIORITYBANDS> =>
        crate::hws::ddi::setup_priority_bands;
    /// DxgkDdiSetSchedulingLogBuffer (PASSIVE).
    SetSchedulingLogBuffer: OnAdapter<DXGKARG_SETSCHEDULINGLOGBUFFER> =>
        crate::hws::ddi::set_scheduling_log_buffer;
    /// DxgkDdiSetContextSchedulingProperties (PASSIVE).
    SetContextSchedulingProperties: OnAdapter<DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES> =>
        crate::hws::ddi::set_context_scheduling_properties;
}
