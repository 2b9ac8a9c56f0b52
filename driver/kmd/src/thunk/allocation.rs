//! Allocations (crate::allocation): create, destroy, open, close, and the describe and
//! standard-data DDIs a render-only adapter refuses.

use super::contract::{generic_ddis, own_thunks, Call};
use crate::adapter::Adapter;
use crate::allocation;
use crate::platform::Platform;
use crate::status::{self, Status};
use rvgpu_ddi::allocation::{
    DXGKARG_CLOSEALLOCATION, DXGKARG_CREATEALLOCATION, DXGKARG_DESCRIBEALLOCATION,
    DXGKARG_DESTROYALLOCATION, DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA, DXGKARG_OPENALLOCATION,
    DXGK_ALLOCATIONINFO, DXGK_OPENALLOCATIONFLAGS, DXGK_OPENALLOCATIONINFO,
};
use rvgpu_ddi::{HANDLE, NTSTATUS};

generic_ddis! {
    /// DxgkDdiCreateAllocation (PASSIVE).
    CreateAllocation: OnAdapterMut<DXGKARG_CREATEALLOCATION> =>
        |call, a, args| create_allocation(call, a, args);
    /// DxgkDdiDestroyAllocation (PASSIVE).
    DestroyAllocation: OnAdapter<DXGKARG_DESTROYALLOCATION> => |call, a, args| {
        // Dxgkrnl's list of NumAllocations handles, valid for the call; read only.
        let list = call.array(args.pAllocationList.cast_mut(), args.NumAllocations);
        allocation::ddi::destroy(a, list.ok_or(status::INVALID_PARAMETER)?)
    };
    /// DxgkDdiOpenAllocation (PASSIVE): the argument block is const in the header, but the
    /// driver writes `hDeviceSpecificAllocation` into each info of the OS's array.
    OpenAllocation: OnHandle<DXGKARG_OPENALLOCATION> =>
        |call, h_device, args| open_allocation::<P>(call, h_device, args);
    /// DxgkDdiCloseAllocation (PASSIVE).
    CloseAllocation: OnHandle<DXGKARG_CLOSEALLOCATION> => |call, h_device, args| {
        // Dxgkrnl's list of NumAllocations handles, valid for the call; read only.
        let list = call.array(args.pOpenHandleList.cast_mut(), args.NumAllocations);
        allocation::ddi::close::<P>(h_device, list.ok_or(status::INVALID_PARAMETER)?)
    };
}

own_thunks! {
    /// DxgkDdiDescribeAllocation (PASSIVE): rvgpu has no primaries or display surfaces.
    fn describe_allocation(
        _,
        _h_adapter: HANDLE,
        _args: *mut DXGKARG_DESCRIBEALLOCATION,
    ) -> NTSTATUS {
        status::NOT_SUPPORTED.code()
    }
}

own_thunks! {
    /// DxgkDdiGetStandardAllocationDriverData (PASSIVE): no shared primary, shadow, staging or
    /// GDI surfaces on a render-only adapter.
    fn get_standard_allocation_driver_data(
        _,
        _h_adapter: HANDLE,
        _args: *mut DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA,
    ) -> NTSTATUS {
        status::NOT_SUPPORTED.code()
    }
}

/// DxgkDdiCreateAllocation's logic.
fn create_allocation<P: Platform>(
    call: Call<'_>,
    a: &Adapter<P>,
    args: &mut DXGKARG_CREATEALLOCATION,
) -> Result<(), Status> {
    // Dxgkrnl's array of NumAllocations infos, valid and ours for the call.
    let infos = call.array(args.pAllocationInfo, args.NumAllocations);
    let private = |i: &DXGK_ALLOCATIONINFO| {
        // Each info's private data is `PrivateDriverDataSize` bytes the OS copied
        // from user mode and keeps for the call; read only.
        call.read_only(i.pPrivateDriverData, i.PrivateDriverDataSize)
    };
    allocation::ddi::create(a, args, infos.ok_or(status::INVALID_PARAMETER)?, private)
}

/// DxgkDdiOpenAllocation's logic.
fn open_allocation<P: Platform>(
    call: Call<'_>,
    h_device: HANDLE,
    args: &DXGKARG_OPENALLOCATION,
) -> Result<(), Status> {
    // Dxgkrnl's array of NumAllocations open infos, writable for the call.
    let infos = call.array(args.pOpenAllocation, args.NumAllocations);
    let private = |i: &DXGK_OPENALLOCATIONINFO| {
        // The allocation's private data, `PrivateDriverDataSize` bytes the OS keeps
        // for the call; read only.
        call.read_only(i.pPrivateDriverData, i.PrivateDriverDataSize)
    };
    let create = args.Flags.get(DXGK_OPENALLOCATIONFLAGS::Create) != 0;
    allocation::ddi::open::<P>(
        h_device,
        create,
        infos.ok_or(status::INVALID_PARAMETER)?,
        private,
    )
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiCreateAllocation = Some(super::contract::on_adapter_mut::<P, CreateAllocation>);
    t.DxgkDdiDestroyAllocation = Some(super::contract::on_adapter::<P, DestroyAllocation, _>);
    t.DxgkDdiDescribeAllocation = Some(describe_allocation);
    t.DxgkDdiGetStandardAllocationDriverData = Some(get_standard_allocation_driver_data);
    t.DxgkDdiOpenAllocation = Some(super::contract::on_handle::<P, OpenAllocation, _>);
    t.DxgkDdiCloseAllocation = Some(super::contract::on_handle::<P, CloseAllocation, _>);
}
