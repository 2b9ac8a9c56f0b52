//! The audit of VidMm's paging operations: UPDATEPAGETABLE (maps and invalidations apart),
//! FLUSHTLB, FILL, TRANSFER, and MAP_ and UNMAP_APERTURE_SEGMENT.
//!
//! `DXGK_OPERATION_COPY_PAGE_TABLE_ENTRIES` has no set: 24H2's VidMm never builds it. Its one
//! way to the DDI, M:ADAPTER_RENDER::DdiBuildPagingBuffer @0x140036BD8, is called by thirteen
//! VIDMM_GLOBAL builders, one per operation it issues (transfers, fills, discards, aperture
//! maps and unmaps, page-table updates, TLB flushes, context-allocation initialisation and
//! updates, residency notices, live-migration transport copies), and none of them copies page
//! table entries; the simulated OS does not issue it either.

use super::Ddi;
use crate::memory::{DXGK_BUILDPAGINGBUFFER_FLUSHTLB, DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE};
use crate::tdr::{
    DXGKARG_BUILDPAGINGBUFFER_Fill, DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment,
    DXGKARG_BUILDPAGINGBUFFER_Transfer, DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment,
};

const UPDATE_BY: &str = "M:VIDMM_GLOBAL::UpdatePageTable @0x1400ABE20";

/// `DxgkDdiBuildPagingBuffer` with `DXGK_OPERATION_UPDATE_PAGE_TABLE`: `UPDATE_BY` zeroes the
/// whole `DXGKARG_BUILDPAGINGBUFFER` and fills the operation from its caller: for maps
/// M `VIDMM_PAGE_TABLE::UpdatePageTable` @0x1400AAE70, for invalidations (unmaps, and a fresh
/// table cleared before its first use) M `VIDMM_PAGE_TABLE::UpdatePageTableInvalidate`
/// @0x1400AB920.
pub const UPDATE_PAGE_TABLE: Ddi<DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE> = Ddi {
    name: "DxgkDdiBuildPagingBuffer(UPDATE_PAGE_TABLE)",
    block: "DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE",
    rows: &[
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.PageTableLevel,
            true,
            UPDATE_BY,
            "the level of the table"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.hAllocation,
            true,
            "M:VIDMM_PAGE_TABLE::UpdatePageTable @0x1400AAE70",
            "the driver's allocation for a map of owner type 1 or 3; none for other maps and \
             for invalidations (UpdatePageTableInvalidate passes none)"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.PageTableAddress,
            true,
            "M:VIDMM_PAGE_TABLE_BASE::GetDriverUpdateAddress @0x1400ABA84",
            "the table's CPU address while VidMm builds the paging process's space \
             (M:VIDMM_GLOBAL::InitPagingProcessVaSpace @0x1400F71BC), else its segment and \
             offset"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.pPageTableEntries,
            true,
            UPDATE_BY,
            "the caller's entries (for a map, the table's shadow from StartIndex, \
             M:VIDMM_PAGE_TABLE::UpdatePageTable @0x1400AAE70); for an invalidation one \
             zeroed DXGK_PTE on VidMm's stack"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.StartIndex,
            true,
            UPDATE_BY,
            "the caller's first entry"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.NumPageTableEntries,
            true,
            UPDATE_BY,
            "the caller's count; for an invalidation the whole range, with one entry passed"
        ),
        zero_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.Reserved0,
            false,
            UPDATE_BY,
            "zeroed with the block; nothing writes it"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.Flags,
            true,
            UPDATE_BY,
            "the caller's flags (InitialUpdate on every update of a table not yet committed: \
             the first map into a fresh leaf table and the invalidations of the entries \
             outside its run, M:VIDMM_PAGE_TABLE::CommitVirtualAddressRange @0x1400F2030); \
             Repeat added when the caller passes no entries (every invalidation), and on a \
             leaf map whose commit repeats one 4 KiB page (a Map range longer than what the \
             allocation has past its offset, M:CVirtualAddressAllocator::MapVadVaRange \
             @0x14009AD34)"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.DriverProtection,
            false,
            "M:VIDMM_PAGE_TABLE::UpdatePageTable @0x1400AAE70",
            "for a map, its commit state's driver protection: the DriverProtection of the \
             D3DDDI_MAPGPUVIRTUALADDRESS the range was mapped with, unchecked \
             (M:CVirtualAddressAllocator::MapVirtualAddressRange @0x14009AF84 keeps it in the \
             mapped range, M:CVirtualAddressAllocator::CommitVirtualAddressRange @0x1400ADD10 \
             copies it to the commit state; M:VIDMM_GLOBAL::VidMmUpdateGpuVirtualAddress \
             @0x1400E34AC likewise for a MAP_PROTECT's, which neither it nor \
             K:DxgkUpdateGpuVirtualAddress @0x1402F7A50 refuses); zero for invalidations \
             (UpdatePageTableInvalidate passes none)"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.AllocationOffsetInBytes,
            true,
            UPDATE_BY,
            "the offset in the allocation when the caller names one, else zero"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.hProcess,
            true,
            UPDATE_BY,
            "the driver's handle of the table's process on this adapter"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.UpdateMode,
            true,
            UPDATE_BY,
            "CPU_VIRTUAL while VidMm builds the paging process's space, else the table's mode \
             (the driver's DXGK_GPUMMUCAPS::PageTableUpdateMode)"
        ),
        zero_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.pPageTableEntries64KB,
            false,
            UPDATE_BY,
            "set only on an adapter with 64 KB pages; rvgpu's has none"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.FirstPteVirtualAddress,
            true,
            UPDATE_BY,
            "the VA the first entry covers, its caller's page number shifted: for a leaf \
             table the VA the entry maps; for a directory \
             (M:VIDMM_PAGE_DIRECTORY::CommitVirtualAddressRange @0x1400F28C0) the first VA of \
             the span below entry StartIndex"
        ),
    ],
};

const INVALIDATE_BY: &str = "M:VIDMM_PAGE_TABLE::UpdatePageTableInvalidate @0x1400AB920";

/// `DxgkDdiBuildPagingBuffer` with `DXGK_OPERATION_UPDATE_PAGE_TABLE` for an invalidation
/// (every entry zero: an unmap, M `VIDMM_PAGE_TABLE::UncommitVirtualAddressRange`
/// @0x1400CD6C0, or the entries a fresh table does not map yet, M
/// `VIDMM_PAGE_TABLE::CommitVirtualAddressRange` @0x1400F2030): the fields
/// [`UPDATE_PAGE_TABLE`] fills only for a map. `INVALIDATE_BY` calls `UPDATE_BY` with no
/// allocation, no global allocation, offset zero and protection zero; `UPDATE_BY` writes
/// `hAllocation` and `AllocationOffsetInBytes` only with a global allocation. The other
/// fields are as for [`UPDATE_PAGE_TABLE`] (`FirstPteVirtualAddress`: the VA of the first
/// entry invalidated, which the caller passes).
pub const UPDATE_PAGE_TABLE_INVALIDATE: Ddi<DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE> = Ddi {
    name: "DxgkDdiBuildPagingBuffer(UPDATE_PAGE_TABLE invalidation)",
    block: "DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE",
    rows: &[
        zero_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.hAllocation,
            true,
            INVALIDATE_BY,
            "no allocation is passed; the block is zeroed by M:VIDMM_GLOBAL::UpdatePageTable \
             @0x1400ABE20"
        ),
        zero_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.AllocationOffsetInBytes,
            true,
            INVALIDATE_BY,
            "written only with a global allocation, which an invalidation has none of"
        ),
        zero_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.DriverProtection,
            false,
            INVALIDATE_BY,
            "passed as zero"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.FirstPteVirtualAddress,
            true,
            INVALIDATE_BY,
            "the VA of the first entry invalidated (the unmapped range's start; for a fresh \
             table, the VA its first invalidated entry covers)"
        ),
        zero_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.pPageTableEntries64KB,
            false,
            INVALIDATE_BY,
            "set only on an adapter with 64 KB pages; rvgpu's has none"
        ),
    ],
};

const FLUSH_BY: &str = "M:VIDMM_GLOBAL::FlushGpuVaTlb @0x1400E8D80";

/// `DxgkDdiBuildPagingBuffer` with `DXGK_OPERATION_FLUSH_TLB`: `FLUSH_BY` zeroes the whole
/// `DXGKARG_BUILDPAGINGBUFFER` and writes the four fields of the operation from its caller,
/// M `CVirtualAddressAllocator::FlushGpuVaTlb` @0x140035D1C, which flushes only a process whose
/// root is committed and not while VidMm updates tables by CPU address.
pub const FLUSH_TLB: Ddi<DXGK_BUILDPAGINGBUFFER_FLUSHTLB> = Ddi {
    name: "DxgkDdiBuildPagingBuffer(FLUSH_TLB)",
    block: "DXGK_BUILDPAGINGBUFFER_FLUSHTLB",
    rows: &[
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_FLUSHTLB.RootPageTableAddress,
            true,
            "M:CVirtualAddressAllocator::FlushGpuVaTlb @0x140035D1C",
            "the process's root page table: its segment and offset, Padding zero"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_FLUSHTLB.hProcess,
            true,
            "M:CVirtualAddressAllocator::FlushGpuVaTlb @0x140035D1C",
            "the driver's handle of the process on this adapter"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_FLUSHTLB.StartVirtualAddress,
            true,
            FLUSH_BY,
            "the caller's start: the first VA of what changed (an unmapped range, a \
             directory's updated span)"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_FLUSHTLB.EndVirtualAddress,
            true,
            FLUSH_BY,
            "the caller's end, past the last VA of what changed (not below the start)"
        ),
    ],
};

const FILL_BY: &str = "M:VIDMM_GLOBAL::FillAllocationInternal @0x1400AE828";

/// `DxgkDdiBuildPagingBuffer` with `DXGK_OPERATION_FILL`, VidMm clearing an allocation in a
/// segment (M:VIDMM_GLOBAL::FillAllocation @0x1400AE7E4); a segment VidMm reaches by GPU VA
/// gets a virtual fill instead (M:VIDMM_GLOBAL::FillAllocationUsingGpuVa @0x1400AEA70).
/// `FILL_BY` zeroes the whole DXGKARG_BUILDPAGINGBUFFER once, then per attempt (again while
/// the driver asks for a new buffer) sets the operation and the fill.
pub const FILL: Ddi<DXGKARG_BUILDPAGINGBUFFER_Fill> = Ddi {
    name: "DxgkDdiBuildPagingBuffer(FILL)",
    block: "DXGKARG_BUILDPAGINGBUFFER_Fill",
    rows: &[
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_Fill.hAllocation,
            false,
            FILL_BY,
            "the driver's handle of the allocation, null for a fill without one"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_Fill.FillSize,
            true,
            FILL_BY,
            "the caller's byte count"
        ),
        zero_row!(
            DXGKARG_BUILDPAGINGBUFFER_Fill.FillPattern,
            true,
            FILL_BY,
            "written zero on every attempt: VidMm only clears"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_Fill.Destination,
            true,
            FILL_BY,
            "the segment's driver id, and the segment's base plus the caller's offset"
        ),
    ],
};

const TRANSFER_BY: &str = "M:VIDMM_GLOBAL::MemoryTransferInternal @0x1400E5F04";

/// `DxgkDdiBuildPagingBuffer` with `DXGK_OPERATION_TRANSFER`, VidMm moving an allocation
/// between a segment and system memory (M:VIDMM_GLOBAL::MemoryTransfer @0x1400E5E04); a
/// segment VidMm reaches by GPU VA gets a virtual transfer instead. `TRANSFER_BY` zeroes the
/// whole DXGKARG_BUILDPAGINGBUFFER once, then per attempt (again while the driver asks for a
/// new buffer) fills the transfer; a driver answering that the allocation is busy gets the
/// same transfer again, with AllocationIsIdle, once VidMm has waited for it.
pub const TRANSFER: Ddi<DXGKARG_BUILDPAGINGBUFFER_Transfer> = Ddi {
    name: "DxgkDdiBuildPagingBuffer(TRANSFER)",
    block: "DXGKARG_BUILDPAGINGBUFFER_Transfer",
    rows: &[
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_Transfer.hAllocation,
            false,
            TRANSFER_BY,
            "the driver's handle of the allocation, null for a transfer without one"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_Transfer.TransferOffset,
            true,
            TRANSFER_BY,
            "the caller's offset into the allocation"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_Transfer.TransferSize,
            true,
            TRANSFER_BY,
            "the caller's byte count"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_Transfer.Source,
            true,
            TRANSFER_BY,
            "a segment's driver id and its base plus the caller's offset; for system memory \
             segment 0 and the caller's MDL"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_Transfer.Destination,
            true,
            TRANSFER_BY,
            "as Source"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_Transfer.Flags,
            true,
            TRANSFER_BY,
            "the caller's flags, with TransferStart at offset 0 and TransferEnd when the \
             transfer reaches the allocation's end; AllocationIsIdle when the allocation is \
             not in use (or there is none)"
        ),
        zero_row!(
            DXGKARG_BUILDPAGINGBUFFER_Transfer.MdlOffset,
            true,
            TRANSFER_BY,
            "written zero on every attempt: the MDL is always read from its start"
        ),
    ],
};

const MAP_APERTURE_BY: &str = "M:VIDMM_GLOBAL::MapVideoApertureSegmentInternal @0x1400AF41C";

/// `DxgkDdiBuildPagingBuffer` with `DXGK_OPERATION_MAP_APERTURE_SEGMENT`, VidMm backing a range
/// of an aperture segment with an MDL's pages (M:VIDMM_APERTURE_SEGMENT::MapApertureRange
/// @0x1401156D0). `MAP_APERTURE_BY` zeroes the whole DXGKARG_BUILDPAGINGBUFFER once and fills
/// the operation per attempt, again while the driver asks for a new buffer. (With VidMm's
/// virtual-copy mode it builds another operation instead, not this one.)
pub const MAP_APERTURE_SEGMENT: Ddi<DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment> = Ddi {
    name: "DxgkDdiBuildPagingBuffer(MAP_APERTURE_SEGMENT)",
    block: "DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment",
    rows: &[
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment.hDevice,
            false,
            MAP_APERTURE_BY,
            "the driver's handle of the allocation's device, on the first attempt only and \
             only for a device allocation; null otherwise"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment.hAllocation,
            false,
            MAP_APERTURE_BY,
            "the driver's handle of the allocation; null for VidMm's own range"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment.SegmentId,
            true,
            MAP_APERTURE_BY,
            "the aperture segment's driver id"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment.OffsetInPages,
            true,
            MAP_APERTURE_BY,
            "the range's first page in the segment"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment.NumberOfPages,
            true,
            MAP_APERTURE_BY,
            "the range's page count"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment.pMdl,
            true,
            MAP_APERTURE_BY,
            "the caller's MDL"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment.Flags,
            true,
            MAP_APERTURE_BY,
            "CacheCoherent from the caller; no other bit"
        ),
        zero_row!(
            DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment.MdlOffset,
            true,
            MAP_APERTURE_BY,
            "written zero with the flags: the range maps the MDL from its start"
        ),
    ],
};

const UNMAP_APERTURE_BY: &str = "M:VIDMM_GLOBAL::UnmapVideoApertureSegmentInternal @0x1400B07E8";

/// `DxgkDdiBuildPagingBuffer` with `DXGK_OPERATION_UNMAP_APERTURE_SEGMENT`, VidMm pointing a
/// released aperture range at its dummy page (M:VIDMM_APERTURE_SEGMENT::UnmapApertureRange
/// @0x1401157F0). `UNMAP_APERTURE_BY` zeroes the whole DXGKARG_BUILDPAGINGBUFFER once and fills
/// the operation on every attempt, again while the driver asks for a new buffer.
pub const UNMAP_APERTURE_SEGMENT: Ddi<DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment> = Ddi {
    name: "DxgkDdiBuildPagingBuffer(UNMAP_APERTURE_SEGMENT)",
    block: "DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment",
    rows: &[
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment.hDevice,
            false,
            UNMAP_APERTURE_BY,
            "the driver's handle of the allocation's device for a device allocation, on every \
             attempt; null otherwise"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment.hAllocation,
            false,
            UNMAP_APERTURE_BY,
            "the driver's handle of the allocation; null for VidMm's own range"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment.SegmentId,
            true,
            UNMAP_APERTURE_BY,
            "the aperture segment's driver id"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment.OffsetInPages,
            true,
            UNMAP_APERTURE_BY,
            "the range's first page in the segment"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment.NumberOfPages,
            true,
            UNMAP_APERTURE_BY,
            "the range's page count"
        ),
        filled_row!(
            DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment.DummyPage,
            true,
            UNMAP_APERTURE_BY,
            "the caller's dummy page"
        ),
    ],
};
