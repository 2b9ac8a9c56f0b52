//! The memory-model DDI entry points: processes, root page tables, allocations.
//! Same rules as the other thunks (`super`): turn raw pointers into references, check sizes
//! and nulls, call the module that holds the logic, return an NTSTATUS.

use rvgpu_ddi::allocation::{
    DXGKARG_CLOSEALLOCATION, DXGKARG_CREATEALLOCATION, DXGKARG_CREATEPROCESS,
    DXGKARG_DESCRIBEALLOCATION, DXGKARG_DESTROYALLOCATION, DXGKARG_GETROOTPAGETABLESIZE,
    DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA, DXGKARG_OPENALLOCATION, DXGKARG_SETROOTPAGETABLE,
    DXGK_ALLOCATIONINFO, DXGK_OPENALLOCATIONINFO,
};
use rvgpu_ddi::{HANDLE, NTSTATUS, SIZE_T};

use super::{adapter, os_buffer};
use crate::allocation::{self, MAX_PER_CALL};
use crate::platform::Platform;
use crate::process;
use crate::status::{self, to_ntstatus};

/// An OS array of `n` `T`s as a slice (`None` for a null array, more than
/// [`MAX_PER_CALL`] elements, or none).
///
/// # Safety
/// A non-null `p` must point at `n` valid, writable `T`s for `'a` that nothing else accesses
/// meanwhile (Dxgkrnl's contract for its argument arrays).
unsafe fn os_array<'a, T>(p: *mut T, n: u32) -> Option<&'a mut [T]> {
    if p.is_null() || n == 0 || n > MAX_PER_CALL {
        return None;
    }
    let n = usize::try_from(n).ok()?;
    // SAFETY: the function contract.
    Some(unsafe { core::slice::from_raw_parts_mut(p, n) })
}

/// A private-data buffer of the call as read-only bytes (`None`: null or empty).
///
/// # Safety
/// A non-null `p` must be valid for reads of `len` bytes for `'a`.
unsafe fn read_only<'a>(p: *mut core::ffi::c_void, len: u32) -> Option<&'a [u8]> {
    let len = usize::try_from(len).ok()?;
    if len == 0 {
        return None;
    }
    // SAFETY: the function contract.
    unsafe { os_buffer(p, len) }.map(|b| &*b)
}

/// DxgkDdiCreateProcess (PASSIVE).
pub(super) unsafe extern "system" fn create_process<P: Platform>(
    h_adapter: HANDLE,
    args: *mut DXGKARG_CREATEPROCESS,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_mut() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(process::create(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiDestroyProcess (PASSIVE).
pub(super) unsafe extern "system" fn destroy_process<P: Platform>(
    h_adapter: HANDLE,
    h_process: HANDLE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    match unsafe { adapter::<P>(h_adapter) } {
        Some(a) => to_ntstatus(process::destroy(a, h_process)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiGetRootPageTableSize (PASSIVE): bytes of the root table (0 for a broken call).
pub(super) unsafe extern "system" fn get_root_page_table_size<P: Platform>(
    h_adapter: HANDLE,
    args: *mut DXGKARG_GETROOTPAGETABLESIZE,
) -> SIZE_T {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    match (a, unsafe { args.as_mut() }) {
        (Some(_), Some(args)) => process::root_size(args),
        _ => 0,
    }
}

/// DxgkDdiSetRootPageTable (PASSIVE, no status: a refused request is logged).
pub(super) unsafe extern "system" fn set_root_page_table<P: Platform>(
    _h_adapter: HANDLE,
    args: *const DXGKARG_SETROOTPAGETABLE,
) {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let Some(args) = (unsafe { args.as_ref() }) else {
        return;
    };
    if let Err(e) = process::set_root::<P>(args) {
        crate::klog!(
            P,
            Error,
            "rvgpu: SetRootPageTable refused: {:#010x}",
            e.code()
        );
    }
}

/// DxgkDdiCreateAllocation (PASSIVE).
pub(super) unsafe extern "system" fn create_allocation<P: Platform>(
    h_adapter: HANDLE,
    args: *mut DXGKARG_CREATEALLOCATION,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let Some((a, args)) = a.zip(unsafe { args.as_mut() }) else {
        return status::INVALID_PARAMETER.code();
    };
    // SAFETY: Dxgkrnl's array of NumAllocations infos, valid and ours for the call.
    let Some(infos) = (unsafe { os_array(args.pAllocationInfo, args.NumAllocations) }) else {
        return status::INVALID_PARAMETER.code();
    };
    let private = |i: &DXGK_ALLOCATIONINFO| {
        // SAFETY: each info's private data is `PrivateDriverDataSize` bytes the OS copied
        // from user mode and keeps for the call; read only.
        unsafe { read_only(i.pPrivateDriverData, i.PrivateDriverDataSize) }
    };
    to_ntstatus(allocation::create(a, args, infos, private))
}

/// DxgkDdiDestroyAllocation (PASSIVE).
pub(super) unsafe extern "system" fn destroy_allocation<P: Platform>(
    h_adapter: HANDLE,
    args: *const DXGKARG_DESTROYALLOCATION,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let Some((a, args)) = a.zip(unsafe { args.as_ref() }) else {
        return status::INVALID_PARAMETER.code();
    };
    // SAFETY: Dxgkrnl's list of NumAllocations handles, valid for the call; read only.
    let list = unsafe { os_array(args.pAllocationList.cast_mut(), args.NumAllocations) };
    match list {
        Some(list) => to_ntstatus(allocation::destroy(a, list)),
        None => status::INVALID_PARAMETER.code(),
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

/// DxgkDdiOpenAllocation (PASSIVE): the argument block is const in the header, but the
/// driver writes `hDeviceSpecificAllocation` into each info of the OS's array.
pub(super) unsafe extern "system" fn open_allocation<P: Platform>(
    h_device: HANDLE,
    args: *const DXGKARG_OPENALLOCATION,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let Some(args) = (unsafe { args.as_ref() }) else {
        return status::INVALID_PARAMETER.code();
    };
    // SAFETY: Dxgkrnl's array of NumAllocations open infos, writable for the call.
    let Some(infos) = (unsafe { os_array(args.pOpenAllocation, args.NumAllocations) }) else {
        return status::INVALID_PARAMETER.code();
    };
    let private = |i: &DXGK_OPENALLOCATIONINFO| {
        // SAFETY: the allocation's private data, `PrivateDriverDataSize` bytes the OS keeps
        // for the call; read only.
        unsafe { read_only(i.pPrivateDriverData, i.PrivateDriverDataSize) }
    };
    to_ntstatus(allocation::open::<P>(h_device, infos, private))
}

/// DxgkDdiCloseAllocation (PASSIVE).
pub(super) unsafe extern "system" fn close_allocation<P: Platform>(
    h_device: HANDLE,
    args: *const DXGKARG_CLOSEALLOCATION,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let Some(args) = (unsafe { args.as_ref() }) else {
        return status::INVALID_PARAMETER.code();
    };
    // SAFETY: Dxgkrnl's list of NumAllocations handles, valid for the call; read only.
    let list = unsafe { os_array(args.pOpenHandleList.cast_mut(), args.NumAllocations) };
    match list {
        Some(list) => to_ntstatus(allocation::close::<P>(h_device, list)),
        None => status::INVALID_PARAMETER.code(),
    }
}
