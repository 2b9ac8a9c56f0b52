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

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    // Hardware scheduling (crate::hws). CreateHwContext, DestroyHwContext,
    // SwitchToHwContextList and UpdateHwContextState stay NULL: Windows' VidSch never
    // calls them (its hardware contexts are the CreateContext ones, docs/hws.md §2).
    t.DxgkDdiSetupPriorityBands = Some(super::contract::on_adapter::<P, SetupPriorityBands, _>);
    t.DxgkDdiSetSchedulingLogBuffer =
        Some(super::contract::on_adapter::<P, SetSchedulingLogBuffer, _>);
    t.DxgkDdiSetContextSchedulingProperties =
        Some(super::contract::on_adapter::<P, SetContextSchedulingProperties, _>);
}
