//! Node rings: OS-scheduled submission, preemption, paging (docs/tdr.md#the-kmd; crate::node,
//! crate::paging), and the display DDIs a render-only adapter refuses (crate::present). IRQLs
//! from each DDI's Microsoft page, cited there.

use rvgpu_ddi::tdr::{
    DXGKARG_BUILDPAGINGBUFFER, DXGKARG_PREEMPTCOMMAND, DXGKARG_QUERYCURRENTFENCE,
    DXGKARG_SUBMITCOMMAND, DXGKARG_SUBMITCOMMANDVIRTUAL,
};
use rvgpu_ddi::{BOOLEAN, HANDLE, NTSTATUS};

use super::thunk::{generic_ddis, Call};
use crate::node;
use crate::status::{self, to_ntstatus};

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
    /// DxgkDdiBuildPagingBuffer (PASSIVE per the public headers). Its logic answers success or
    /// a failure status (crate::paging), which the round trip through `Result` keeps.
    BuildPagingBuffer: OnAdapterMut<DXGKARG_BUILDPAGINGBUFFER> =>
        |_, a, args| status::check(crate::paging::build_paging_buffer(a, args));
}

/// DxgkDdiPresent (PASSIVE): refused, rvgpu has nothing to present with (`crate::present`).
pub(super) unsafe extern "system" fn present(
    h_context: HANDLE,
    args: *mut rvgpu_ddi::present::DXGKARG_PRESENT,
) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    let args = call.args_mut(args);
    match args {
        // The context is not looked at: no present is carried out on any of them.
        Some(args) if !h_context.is_null() => to_ntstatus(crate::present::present(args)),
        // INVALID_HANDLE is in the wrapper's allow-list; INVALID_PARAMETER is not.
        _ => status::INVALID_HANDLE.code(),
    }
}

/// DxgkDdiControlInterrupt (PASSIVE): no interrupt type is under its control on rvgpu.
pub(super) unsafe extern "system" fn control_interrupt(
    h_adapter: HANDLE,
    ty: rvgpu_ddi::interrupt::DXGK_INTERRUPT_TYPE,
    enable: BOOLEAN,
) -> NTSTATUS {
    // A null context is the only one that resolves to no adapter (super::thunk::adapter).
    if h_adapter.is_null() {
        // UNSUCCESSFUL is in the wrapper's allow-list (SUCCESS, UNSUCCESSFUL, NOT_IMPLEMENTED).
        return status::UNSUCCESSFUL.code();
    }
    to_ntstatus(crate::present::control_interrupt(ty, enable != 0))
}
