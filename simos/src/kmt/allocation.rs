//! The argument checks 24H2's Dxgkrnl makes on `D3DKMTCreateAllocation2` and
//! `D3DKMTDestroyAllocation2` before it reaches the device's allocations, in 24H2's order
//! (`K:DxgkCreateAllocationInternal` @0x140304ED8, `K:DxgkDestroyAllocation2` @0x14032F7A0,
//! `K:DxgkDestroyAllocationHelper` @0x14032FBB8). The handle lookups between them are the
//! caller's (each is one closure here), so the gdi32 bridge and a test share one order.

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_umd::kmt::NtStatus;

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
