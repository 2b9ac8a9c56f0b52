//! The memory-model DDI entry points: processes, root page tables, allocations.
//! Same rules as the other thunks (`super::thunk`): turn raw pointers into references, check
//! sizes and nulls, call the module that holds the logic, return an NTSTATUS.

use rvgpu_ddi::allocation::{
    DXGKARG_CLOSEALLOCATION, DXGKARG_CREATEALLOCATION, DXGKARG_CREATEPROCESS,
    DXGKARG_DESCRIBEALLOCATION, DXGKARG_DESTROYALLOCATION, DXGKARG_GETROOTPAGETABLESIZE,
    DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA, DXGKARG_OPENALLOCATION, DXGKARG_SETROOTPAGETABLE,
    DXGK_ALLOCATIONINFO, DXGK_OPENALLOCATIONINFO,
};
use rvgpu_ddi::{HANDLE, NTSTATUS, SIZE_T};

use super::thunk::{generic_ddis, Call};
use crate::adapter::Adapter;
use crate::allocation;
use crate::platform::Platform;
use crate::process;
use crate::status::{self, Status};

generic_ddis! {
    /// DxgkDdiCreateProcess (PASSIVE).
    CreateProcess: OnAdapterMut<DXGKARG_CREATEPROCESS> => process::ddi::create;
    /// DxgkDdiDestroyProcess (PASSIVE).
    DestroyProcess: OnContextWith<HANDLE> => process::ddi::destroy;
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

/// DxgkDdiGetRootPageTableSize (PASSIVE): bytes of the root table (0 for a broken call).
pub(super) unsafe extern "system" fn get_root_page_table_size<P: Platform>(
    h_adapter: HANDLE,
    args: *mut DXGKARG_GETROOTPAGETABLESIZE,
) -> SIZE_T {
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    call.adapter_and_mut::<P, _>(h_adapter, args)
        .map_or(0, |(_, args)| process::ddi::root_size(args))
}

/// DxgkDdiSetRootPageTable (PASSIVE, no status: a refused request is logged).
pub(super) unsafe extern "system" fn set_root_page_table<P: Platform>(
    _h_adapter: HANDLE,
    args: *const DXGKARG_SETROOTPAGETABLE,
) {
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
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

/// DxgkDdiDescribeAllocation (PASSIVE): rvgpu has no primaries or display surfaces.
pub(super) unsafe extern "system" fn describe_allocation(
    _h_adapter: HANDLE,
    _args: *mut DXGKARG_DESCRIBEALLOCATION,
) -> NTSTATUS {
    status::NOT_SUPPORTED.code()
}

/// DxgkDdiGetStandardAllocationDriverData (PASSIVE): no shared primary, shadow, staging or
/// GDI surfaces on a render-only adapter.
pub(super) unsafe extern "system" fn get_standard_allocation_driver_data(
    _h_adapter: HANDLE,
    _args: *mut DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA,
) -> NTSTATUS {
    status::NOT_SUPPORTED.code()
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
    allocation::ddi::open::<P>(h_device, infos.ok_or(status::INVALID_PARAMETER)?, private)
}
