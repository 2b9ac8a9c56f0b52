//! `DxgkCbGetHandleData`: what the driver answered for a D3DKMT handle of the calling process.

use rvgpu_ddi::dxgkrnl::{
    DXGKARGCB_GETHANDLEDATA, DXGKCB_GETHANDLEDATAFLAGS, DXGK_HANDLE_ALLOCATION,
};

use std::sync::Arc;

use rvgpu_kmd::platform::Irql;

use crate::adapter::AdapterShared;
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
///
/// 24H2 checks no IRQL at the entry: a call at DISPATCH_LEVEL or above that finds the object is
/// bug check 0x113 (0x14, the adapter) for a driver of interface 0x2003 or later; one that
/// finds nothing answers NULL.
///
/// The answer is the driver's value (0 for NULL).
pub(super) fn get_handle_data(args: Option<DXGKARGCB_GETHANDLEDATA>, addr: usize) -> usize {
    let Some(args) = args else {
        crate::adapter::context::raise(crate::BugCheck::new(
            crate::base::bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
            [0, 0, addr as u64, 0],
        ));
        return 0;
    };
    let Some((a, found)) = lookup(&args) else {
        return 0;
    };
    if current_irql() >= Irql::Dispatch
        && a.table.get().map_or(0, |t| t.Version) >= FATAL_FROM_INTERFACE
    {
        a.state.raise_bugcheck(crate::BugCheck::new(
            crate::base::bugcheck::VIDEO_DXGKRNL_FATAL_ERROR,
            [HANDLE_DATA_AT_RAISED_IRQL, a.handle() as u64, 0, 0],
        ));
        return 0;
    }
    found.unwrap_or(0)
}

/// The first `DXGKDDI_INTERFACE_VERSION` whose raised-IRQL call 24H2 bug-checks.
const FATAL_FROM_INTERFACE: u32 = 0x2003;

/// `VIDEO_DXGKRNL_FATAL_ERROR` parameter 1 of a `DxgkCbGetHandleData` at DISPATCH_LEVEL.
const HANDLE_DATA_AT_RAISED_IRQL: u64 = 0x14;

/// The adapter of the object `args` names in the calling process, with the answer for it;
/// `None` when there is no such object.
fn lookup(args: &DXGKARGCB_GETHANDLEDATA) -> Option<(Arc<AdapterShared>, Option<usize>)> {
    if args.Type != DXGK_HANDLE_ALLOCATION {
        return None;
    }
    let process = crate::ob::current_process()?;
    let inside = crate::adapter::ddi::inside();
    let a = crate::adapter::all_adapters()
        .into_iter()
        .find(|a| Arc::as_ptr(a) as usize == inside)?;
    let answer = {
        let os = lock(&a.ums);
        let device_specific = args.Flags.get(DXGKCB_GETHANDLEDATAFLAGS::DeviceSpecific) != 0;
        if let Some(&(p, kmd)) = os.creating.get(&args.hObject) {
            // Its open is the call in progress: nothing device-specific yet.
            if p != process {
                return None;
            }
            (!device_specific).then_some(kmd)
        } else {
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
    };
    Some((a, answer))
}
