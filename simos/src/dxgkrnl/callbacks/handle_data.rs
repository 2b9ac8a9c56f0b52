//! `DxgkCbGetHandleData`: what the driver answered for a D3DKMT handle of the calling process.

use std::ffi::c_void;

use rvgpu_ddi::dxgkrnl::{
    DXGKARGCB_GETHANDLEDATA, DXGKCB_GETHANDLEDATAFLAGS, DXGK_HANDLE_ALLOCATION,
};

use crate::adapter::irql::Routine;
use crate::base::lock::lock;
use crate::base::processor::current_irql;

/// `DxgkCbGetHandleData` as 24H2's `K:DxgGetHandleDataCB` @0x1404111E0 answers it: the handle
/// is looked up in the calling process's handle table only (`DXGPROCESS::GetCurrent`), so a
/// handle of another process, a destroyed one or one of another kind is NULL. For an
/// allocation (`Type` 1) the answer is the driver's `hAllocation` from
/// `DxgkDdiCreateAllocation`, or with `Flags.DeviceSpecific` the `hDeviceSpecificAllocation`
/// of the open the allocation object keeps (the creating device's, NULL until that open
/// returned). A resource (`Type` 2) answers its driver handle: this OS creates no resources,
/// so NULL. (24H2 also answers NULL, with an assertion, to a WDDM 2 driver while a global
/// switch this OS leaves off is set.)
pub(super) unsafe extern "system" fn get_handle_data(
    args: *const DXGKARGCB_GETHANDLEDATA,
) -> *mut c_void {
    let addr = get_handle_data as *const () as usize;
    if let Err(b) = crate::adapter::irql::check(Routine::DxgkCbGetHandleData, current_irql(), addr)
    {
        crate::adapter::context::raise(b);
        return std::ptr::null_mut();
    }
    if args.is_null() {
        crate::adapter::context::raise(crate::BugCheck::new(
            crate::base::bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
            [0, 0, addr as u64, 0],
        ));
        return std::ptr::null_mut();
    }
    // SAFETY: non-null pointer to the driver's argument block.
    let args = unsafe { args.read() };
    std::ptr::without_provenance_mut(answer(&args).unwrap_or(0))
}

fn answer(args: &DXGKARGCB_GETHANDLEDATA) -> Option<usize> {
    if args.Type != DXGK_HANDLE_ALLOCATION {
        return None;
    }
    let process = crate::ob::current_process()?;
    let inside = crate::adapter::ddi::inside();
    let a = crate::adapter::all_adapters()
        .into_iter()
        .find(|a| std::sync::Arc::as_ptr(a) as usize == inside)?;
    let os = lock(&a.ums);
    let device_specific = args.Flags.get(DXGKCB_GETHANDLEDATAFLAGS::DeviceSpecific) != 0;
    if let Some(&(p, kmd)) = os.creating.get(&args.hObject) {
        // Its open is the call in progress: nothing device-specific yet.
        return (p == process && !device_specific).then_some(kmd);
    }
    let al = os.allocations.get(&args.hObject).filter(|al| !al.closed)?;
    if os.devices.get(&al.device).map(|d| d.process) != Some(process) {
        return None;
    }
    if device_specific {
        al.opened.map(|o| o.handle)
    } else {
        al.mapped.map(|m| m.kmd)
    }
}
