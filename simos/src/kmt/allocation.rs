//! The argument checks 24H2's Dxgkrnl makes on `D3DKMTCreateAllocation2` and
//! `D3DKMTDestroyAllocation2` before it reaches the device's allocations, in 24H2's order
//! (`K:DxgkCreateAllocationInternal` @0x140304ED8, `K:DxgkDestroyAllocation2` @0x14032F7A0,
//! `K:DxgkDestroyAllocationHelper` @0x14032FBB8). The handle lookups between them are the
//! caller's (each is one closure here), so the gdi32 bridge and a test share one order.
//! `D3DKMTDestroyAllocation2` has its kernel entry here ([`dxgk_destroy_allocation2`]).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use crate::machine::Machine;
use crate::ums::UmsProcess;

/// `D3DKMT_DESTROYALLOCATION2` in the released x64 layout (24 bytes).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct D3dkmtDestroyAllocation2 {
    /// `hDevice` (in).
    pub h_device: u32,
    /// `hResource` (in).
    pub h_resource: u32,
    /// `phAllocationList` (in), an address in the caller's process.
    pub ph_allocation_list: u64,
    /// `AllocationCount` (in).
    pub allocation_count: u32,
    /// `Flags` (`D3DDDICB_DESTROYALLOCATION2FLAGS`, in).
    pub flags: u32,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(offset_of!(D3dkmtDestroyAllocation2, h_resource) == 4);
    assert!(offset_of!(D3dkmtDestroyAllocation2, ph_allocation_list) == 8);
    assert!(offset_of!(D3dkmtDestroyAllocation2, allocation_count) == 16);
    assert!(offset_of!(D3dkmtDestroyAllocation2, flags) == 20);
    assert!(size_of::<D3dkmtDestroyAllocation2>() == 24);
};

/// `D3DDDICB_DESTROYALLOCATION2FLAGS::AssumeNotInUse`.
pub const DESTROY_ASSUME_NOT_IN_USE: u32 = 1 << 0;

/// `D3DKMT_CREATEALLOCATIONFLAGS::CreateResource`.
pub const CREATE_RESOURCE: u32 = 1 << 0;
/// `D3DKMT_CREATEALLOCATIONFLAGS::CreateShared`.
pub const CREATE_SHARED: u32 = 1 << 1;
/// `D3DKMT_CREATEALLOCATIONFLAGS::CreateProtected`.
pub const CREATE_PROTECTED: u32 = 1 << 3;
/// `D3DKMT_CREATEALLOCATIONFLAGS::ExistingSysMem`.
pub const EXISTING_SYS_MEM: u32 = 1 << 5;
/// `D3DKMT_CREATEALLOCATIONFLAGS::CreateWriteCombined`.
pub const CREATE_WRITE_COMBINED: u32 = 1 << 8;
/// `D3DKMT_CREATEALLOCATIONFLAGS::CreateCached`.
pub const CREATE_CACHED: u32 = 1 << 9;
/// `D3DKMT_CREATEALLOCATIONFLAGS::OpenCrossAdapter`.
pub const OPEN_CROSS_ADAPTER: u32 = 1 << 12;
/// `D3DKMT_CREATEALLOCATIONFLAGS::StandardAllocation`.
pub const STANDARD_ALLOCATION: u32 = 1 << 16;
/// `D3DKMT_CREATEALLOCATIONFLAGS::ExistingSection`.
pub const EXISTING_SECTION: u32 = 1 << 17;
/// `D3DKMT_CREATEALLOCATIONFLAGS::NoKmdAccess`.
pub const NO_KMD_ACCESS: u32 = 1 << 20;
/// Most allocations one `D3DKMTCreateAllocation2` takes.
pub const MAX_CREATE_ALLOCATIONS: u32 = 0x682AA;
/// `D3DDDICB_DESTROYALLOCATION2FLAGS` bits 2 to 30 (`Reserved`): refused from user mode.
pub const DESTROY_RESERVED: u32 = 0x7FFF_FFFC;

fn bad() -> NtStatus {
    NtStatus(STATUS_INVALID_PARAMETER)
}

/// `DxgkCreateAllocationInternal`'s checks on `D3DKMT_CREATEALLOCATION` from an ordinary
/// process (DXGPROCESS +0x198 bit 8 clear: every process of the simulation), each
/// STATUS_INVALID_PARAMETER, in 24H2's order after `hDevice` was found in the caller's table:
/// `NoKmdAccess` with `StandardAllocation`, or without test signing; `NumAllocations` above
/// [`MAX_CREATE_ALLOCATIONS`]; `CreateProtected`, `CreateWriteCombined`, `CreateCached` or
/// `OpenCrossAdapter`; `ExistingSysMem` or `ExistingSection` without `StandardAllocation`;
/// (`StandardAllocation`'s own parameters next, not read); `CreateShared` without
/// `CreateResource`; neither `hResource` nor an allocation.
pub fn create_allocation_checks(
    test_signing: bool,
    flags: u32,
    num_allocations: u32,
    h_resource: u32,
) -> Result<(), NtStatus> {
    let standard = flags & STANDARD_ALLOCATION != 0;
    if flags & NO_KMD_ACCESS != 0 && (standard || !test_signing) {
        return Err(bad());
    }
    if num_allocations > MAX_CREATE_ALLOCATIONS {
        return Err(bad());
    }
    let privileged = CREATE_PROTECTED | CREATE_WRITE_COMBINED | CREATE_CACHED | OPEN_CROSS_ADAPTER;
    if flags & privileged != 0 {
        return Err(bad());
    }
    if flags & (EXISTING_SYS_MEM | EXISTING_SECTION) != 0 && !standard {
        return Err(bad());
    }
    if flags & CREATE_SHARED != 0 && flags & CREATE_RESOURCE == 0 {
        return Err(bad());
    }
    if h_resource == 0 && num_allocations == 0 {
        return Err(bad());
    }
    Ok(())
}

/// `DxgkDestroyAllocation2`'s and `DxgkDestroyAllocationHelper`'s checks on
/// `D3DKMT_DESTROYALLOCATION2` before `hDevice` is looked up, each
/// STATUS_INVALID_PARAMETER: a `Flags` bit of [`DESTROY_RESERVED`]; `hResource` with
/// `AllocationCount`.
pub fn destroy_allocation2_checks(
    flags: u32,
    h_resource: u32,
    allocation_count: u32,
) -> Result<(), NtStatus> {
    if flags & DESTROY_RESERVED != 0 || (h_resource != 0 && allocation_count != 0) {
        return Err(bad());
    }
    Ok(())
}

/// `DxgkDestroyAllocation2` for the caller's structure `a`, in 24H2's order:
/// 1. [`destroy_allocation2_checks`];
/// 2. `hDevice` not in the caller's handle table (`device`): STATUS_INVALID_PARAMETER;
/// 3. a resource: STATUS_NOT_SUPPORTED (the simulation makes none);
/// 4. the list read from the caller (`list`: its fault status); a handle not an allocation
///    of `hDevice` in the caller's table (`allocation`: its device): STATUS_INVALID_PARAMETER,
///    before any allocation is destroyed;
/// 5. each allocation to VidMm's deferred destruction (AL-03; `AssumeNotInUse`: at once), then
///    what VidMm can free now is freed.
///
/// Returns the destroyed handles (the caller's table forgets them); nothing is written back.
pub fn dxgk_destroy_allocation2(
    m: &Machine,
    a: &D3dkmtDestroyAllocation2,
    device: impl FnOnce(u32) -> Option<UmsProcess>,
    list: impl FnOnce(u64, u32) -> Result<Vec<KmtHandle>, NtStatus>,
    allocation: impl Fn(KmtHandle) -> Option<KmtHandle>,
) -> Result<Vec<KmtHandle>, NtStatus> {
    destroy_allocation2_checks(a.flags, a.h_resource, a.allocation_count)?;
    let p = device(a.h_device).ok_or_else(bad)?;
    if a.h_resource != 0 {
        return Err(NtStatus(STATUS_NOT_SUPPORTED));
    }
    let handles = list(a.ph_allocation_list, a.allocation_count)?;
    if handles.iter().any(|&h| allocation(h) != Some(p.device)) {
        return Err(bad());
    }
    let sh = m.kmt(&p).thunk()?;
    let assume_not_in_use = a.flags & DESTROY_ASSUME_NOT_IN_USE != 0;
    for &h in &handles {
        crate::ums::allocation::destroy_allocation2(m, &sh, p.device, h, assume_not_in_use)
            .map_err(|e| super::not_in_table(super::status(e)))?;
    }
    m.reap_allocations(&sh).map_err(super::status)?;
    Ok(handles)
}
