//! GPU processes and their root page tables (crate::process).

use super::contract::{generic_ddis, own_thunks};
use crate::platform::Platform;
use crate::process;
use rvgpu_ddi::allocation::{
    DXGKARG_CREATEPROCESS, DXGKARG_GETROOTPAGETABLESIZE, DXGKARG_SETROOTPAGETABLE,
};
use rvgpu_ddi::{HANDLE, SIZE_T};

generic_ddis! {
    /// DxgkDdiCreateProcess (PASSIVE).
    CreateProcess: OnAdapterMut<DXGKARG_CREATEPROCESS> => process::ddi::create;
    /// DxgkDdiDestroyProcess (PASSIVE).
    DestroyProcess: OnContextWith<HANDLE> => process::ddi::destroy;
}

own_thunks! {
    /// DxgkDdiGetRootPageTableSize (PASSIVE): bytes of the root table (0 for a broken call).
    fn get_root_page_table_size<P: Platform>(
        call,
        h_adapter: HANDLE,
        args: *mut DXGKARG_GETROOTPAGETABLESIZE,
    ) -> SIZE_T {
        call.adapter_and_mut::<P, _>(h_adapter, args)
            .map_or(0, |(_, args)| process::ddi::root_size(args))
    }
}

own_thunks! {
    /// DxgkDdiSetRootPageTable (PASSIVE, no status: a refused request is logged).
    fn set_root_page_table<P: Platform>(
        call,
        _h_adapter: HANDLE,
        args: *const DXGKARG_SETROOTPAGETABLE,
    ) {
        let Some(args) = call.args(args) else {
            return;
        };
        if let Err(e) = process::ddi::set_root::<P>(args) {
            crate::klog!(
                P,
                Error,
                "rvgpu: SetRootPageTable refused: {:#010x}",
                e.code()
            );
        }
    }
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiCreateProcess = Some(super::contract::on_adapter_mut::<P, CreateProcess>);
    t.DxgkDdiDestroyProcess = Some(super::contract::on_context_with::<P, DestroyProcess>);
    t.DxgkDdiGetRootPageTableSize = Some(get_root_page_table_size::<P>);
    t.DxgkDdiSetRootPageTable = Some(set_root_page_table::<P>);
}
