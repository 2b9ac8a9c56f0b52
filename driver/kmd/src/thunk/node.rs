//! Node rings: OS-scheduled submission and preemption (docs/tdr.md#the-kmd; crate::node). IRQLs
//! from each DDI's Microsoft page, cited there.

use super::contract::generic_ddis;
use crate::node;
use rvgpu_ddi::tdr::{
    DXGKARG_PREEMPTCOMMAND, DXGKARG_QUERYCURRENTFENCE, DXGKARG_SUBMITCOMMAND,
    DXGKARG_SUBMITCOMMANDVIRTUAL,
};

generic_ddis! {
    /// DxgkDdiSubmitCommand (DISPATCH_LEVEL; an error status is bug check 0x119 / 0x2).
    SubmitCommand: OnAdapter<DXGKARG_SUBMITCOMMAND> => node::ddi::submit_command;
    /// DxgkDdiSubmitCommandVirtual (IRQL not on the page; DISPATCH-safe).
    SubmitCommandVirtual: OnAdapter<DXGKARG_SUBMITCOMMANDVIRTUAL> =>
        node::ddi::submit_command_virtual;
    /// DxgkDdiPreemptCommand (DISPATCH_LEVEL; an error status is bug check 0x119 / 0x2).
    PreemptCommand: OnAdapter<DXGKARG_PREEMPTCOMMAND> => node::ddi::preempt_command;
    /// DxgkDdiQueryCurrentFence (IRQL not on the page; DISPATCH-safe).
    QueryCurrentFence: OnAdapterMut<DXGKARG_QUERYCURRENTFENCE> => node::ddi::query_current_fence;
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiSubmitCommand = Some(super::contract::on_adapter::<P, SubmitCommand, _>);
    t.DxgkDdiSubmitCommandVirtual = Some(super::contract::on_adapter::<P, SubmitCommandVirtual, _>);
    t.DxgkDdiPreemptCommand = Some(super::contract::on_adapter::<P, PreemptCommand, _>);
    t.DxgkDdiQueryCurrentFence = Some(super::contract::on_adapter_mut::<P, QueryCurrentFence>);
}
