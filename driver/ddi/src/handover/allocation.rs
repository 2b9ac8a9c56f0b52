//! The audit of allocation creation and opening.

use super::Ddi;
use crate::allocation::{
    DXGKARG_CLOSEALLOCATION, DXGKARG_CREATEALLOCATION, DXGKARG_DESTROYALLOCATION,
    DXGKARG_OPENALLOCATION, DXGK_ALLOCATIONINFO, DXGK_OPENALLOCATIONINFO,
};

const ALLOCATION_BY: &str = "K:DXGDEVICE::CreateDriverAllocations @0x1403231E0";

/// `DxgkDdiCreateAllocation` of device allocations (no resource: rvgpu's UMD creates none):
/// `ALLOCATION_BY` builds the block on its stack (the padding after `Flags` zeroed) and calls
/// the driver through `K:ADAPTER_RENDER::DdiCreateAllocation` @0x1402A5CE4, unless the caller
/// asked for no KMD access.
pub const CREATE_ALLOCATION: Ddi<DXGKARG_CREATEALLOCATION> = Ddi {
    name: "DxgkDdiCreateAllocation",
    block: "DXGKARG_CREATEALLOCATION",
    rows: &[
        filled_row!(
            DXGKARG_CREATEALLOCATION.pPrivateDriverData,
            true,
            ALLOCATION_BY,
            "a pool copy of the caller's resource-wide private data when it gives any, else \
             null"
        ),
        filled_row!(
            DXGKARG_CREATEALLOCATION.PrivateDriverDataSize,
            true,
            ALLOCATION_BY,
            "that copy's size, else zero"
        ),
        filled_row!(
            DXGKARG_CREATEALLOCATION.NumAllocations,
            true,
            ALLOCATION_BY,
            "the caller's count"
        ),
        filled_row!(
            DXGKARG_CREATEALLOCATION.pAllocationInfo,
            true,
            ALLOCATION_BY,
            "Dxgkrnl's DXGK_ALLOCATIONINFO array (ALLOCATION_INFO)"
        ),
        zero_row!(
            DXGKARG_CREATEALLOCATION.hResource,
            false,
            ALLOCATION_BY,
            "the resource's driver handle, written only for a resource's allocations"
        ),
        zero_row!(
            DXGKARG_CREATEALLOCATION.Flags,
            true,
            ALLOCATION_BY,
            "Resource is set only for a resource's allocations; no other bit is written"
        ),
    ],
};

const ALLOCATION_INFO_ZEROED_BY: &str = "K:DXGDEVICE::CreateAllocation @0x140356E10";

/// One `DXGK_ALLOCATIONINFO` of [`CREATE_ALLOCATION`]: `ALLOCATION_INFO_ZEROED_BY` zeroes the
/// whole array (`NumAllocations` entries) right before it calls `ALLOCATION_BY`, which fills
/// the two private data fields of each entry whose `D3DDDI_ALLOCATIONINFO2` carries private
/// data (a pool copy for a caller in user mode); every other field is the driver's answer and
/// arrives zero.
pub const ALLOCATION_INFO: Ddi<DXGK_ALLOCATIONINFO> = Ddi {
    name: "DxgkDdiCreateAllocation(DXGK_ALLOCATIONINFO)",
    block: "DXGK_ALLOCATIONINFO",
    rows: &[
        filled_row!(
            DXGK_ALLOCATIONINFO.pPrivateDriverData,
            true,
            ALLOCATION_BY,
            "the allocation's private data, copied; null (with size zero) when the caller \
             passes none"
        ),
        filled_row!(
            DXGK_ALLOCATIONINFO.PrivateDriverDataSize,
            true,
            ALLOCATION_BY,
            "its size"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.Alignment,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.Size,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.PitchAlignedSize,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.HintedBank,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.PreferredSegment,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.SupportedReadSegmentSet,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.SupportedWriteSegmentSet,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.EvictionSegmentSet,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.Anonymous,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "PhysicalAdapterIndex: an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.hAllocation,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.Anonymous2,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "Flags: an answer; the array is zeroed, and ALLOCATION_BY sets a bit before the \
             call only for a standard allocation's create, which rvgpu's UMD makes none of"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.pAllocationUsageHint,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.AllocationPriority,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.Flags2,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
    ],
};

const OPEN_BY: &str = "K:DXGDEVICE::OpenAllocations @0x140324850";

/// `DxgkDdiOpenAllocation` of the creating device's open of device allocations, which
/// `K:DXGDEVICE::CreateAllocation` @0x140356E10 makes for every allocation it creates:
/// `OPEN_BY` builds the block on its stack, zeroing the padding and both outputs.
pub const OPEN_ALLOCATION: Ddi<DXGKARG_OPENALLOCATION> = Ddi {
    name: "DxgkDdiOpenAllocation",
    block: "DXGKARG_OPENALLOCATION",
    rows: &[
        filled_row!(
            DXGKARG_OPENALLOCATION.NumAllocations,
            true,
            OPEN_BY,
            "the caller's count"
        ),
        filled_row!(
            DXGKARG_OPENALLOCATION.pOpenAllocation,
            true,
            OPEN_BY,
            "Dxgkrnl's DXGK_OPENALLOCATIONINFO array (OPEN_ALLOCATION_INFO)"
        ),
        zero_row!(
            DXGKARG_OPENALLOCATION.pPrivateDriverData,
            false,
            OPEN_BY,
            "a pool copy of the create's resource-wide private data, which a device \
             allocation's create has none of"
        ),
        zero_row!(
            DXGKARG_OPENALLOCATION.PrivateDriverSize,
            false,
            OPEN_BY,
            "the create's resource-wide private-data size: none for a device allocation"
        ),
        filled_row!(
            DXGKARG_OPENALLOCATION.Flags,
            true,
            OPEN_BY,
            "Create for the creating device's open; bit 1 from the caller's create flags"
        ),
        filled_row!(
            DXGKARG_OPENALLOCATION.SubresourceIndex,
            false,
            OPEN_BY,
            "the caller's subresource index"
        ),
        zero_row!(
            DXGKARG_OPENALLOCATION.SubresourceOffset,
            false,
            OPEN_BY,
            "an output, zeroed"
        ),
        zero_row!(
            DXGKARG_OPENALLOCATION.Pitch,
            false,
            OPEN_BY,
            "an output, zeroed"
        ),
    ],
};

/// One `DXGK_OPENALLOCATIONINFO` of [`OPEN_ALLOCATION`], written by `OPEN_BY` per allocation.
pub const OPEN_ALLOCATION_INFO: Ddi<DXGK_OPENALLOCATIONINFO> = Ddi {
    name: "DxgkDdiOpenAllocation(DXGK_OPENALLOCATIONINFO)",
    block: "DXGK_OPENALLOCATIONINFO",
    rows: &[
        filled_row!(
            DXGK_OPENALLOCATIONINFO.hAllocation,
            true,
            OPEN_BY,
            "the allocation's kernel handle"
        ),
        filled_row!(
            DXGK_OPENALLOCATIONINFO.pPrivateDriverData,
            true,
            OPEN_BY,
            "Dxgkrnl's copy of the allocation's private data"
        ),
        filled_row!(
            DXGK_OPENALLOCATIONINFO.PrivateDriverDataSize,
            true,
            OPEN_BY,
            "its size"
        ),
        zero_row!(
            DXGK_OPENALLOCATIONINFO.hDeviceSpecificAllocation,
            false,
            OPEN_BY,
            "zeroed; the driver's answer"
        ),
    ],
};

const DESTROY_BY: &str = "K:DXGDEVICE::DestroyCoreAllocations @0x1403252DC";

/// `DxgkDdiCloseAllocation` of the creating device's opens, when device allocations are
/// destroyed: `DESTROY_BY` lists the driver's open handle of each allocation that has one and
/// calls the driver with the device's handle, only when the list is not empty.
pub const CLOSE_ALLOCATION: Ddi<DXGKARG_CLOSEALLOCATION> = Ddi {
    name: "DxgkDdiCloseAllocation",
    block: "DXGKARG_CLOSEALLOCATION",
    rows: &[
        filled_row!(
            DXGKARG_CLOSEALLOCATION.NumAllocations,
            true,
            DESTROY_BY,
            "the number of opens listed, never zero"
        ),
        filled_row!(
            DXGKARG_CLOSEALLOCATION.pOpenHandleList,
            true,
            DESTROY_BY,
            "the driver's open handles (hDeviceSpecificAllocation from DxgkDdiOpenAllocation)"
        ),
    ],
};

/// `DxgkDdiDestroyAllocation` of device allocations (no resource), after their close:
/// `DESTROY_BY` zeroes the block and lists the driver's handle of each allocation that has
/// one; with neither allocations nor a resource it makes no call.
pub const DESTROY_ALLOCATION: Ddi<DXGKARG_DESTROYALLOCATION> = Ddi {
    name: "DxgkDdiDestroyAllocation",
    block: "DXGKARG_DESTROYALLOCATION",
    rows: &[
        filled_row!(
            DXGKARG_DESTROYALLOCATION.NumAllocations,
            true,
            DESTROY_BY,
            "the number of driver allocation handles listed"
        ),
        filled_row!(
            DXGKARG_DESTROYALLOCATION.pAllocationList,
            true,
            DESTROY_BY,
            "the driver's handles (hAllocation from DxgkDdiCreateAllocation); null when none"
        ),
        zero_row!(
            DXGKARG_DESTROYALLOCATION.hResource,
            false,
            DESTROY_BY,
            "the resource's driver handle, written only for a resource's allocations, which \
             rvgpu's UMD makes none of"
        ),
        zero_row!(
            DXGKARG_DESTROYALLOCATION.Flags,
            true,
            DESTROY_BY,
            "DestroyResource (bit 0) only with a resource; no other bit is written"
        ),
    ],
};
