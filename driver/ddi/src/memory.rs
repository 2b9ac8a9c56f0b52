//! Memory-model types of `DxgkDdiQueryAdapterInfo` (d3dkmddi.h): segment descriptors
//! (`DXGKQAITYPE_QUERYSEGMENT4`), GPU MMU caps (`DXGKQAITYPE_GPUMMUCAPS`) and page-table level
//! descriptors (`DXGKQAITYPE_PAGETABLELEVELDESC`).
//!
//! Only the bindings: the KMD's answers and the simulated VidMm's checks (issue 12) build on
//! these.

use crate::basic::*;
use crate::macros::{bitfield, layout};

bitfield! {
    /// `DXGK_SEGMENTFLAGS`: properties of one memory segment.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_segmentflags>
    pub struct DXGK_SEGMENTFLAGS: u32 {
        /// Aperture segment (not used under GpuMmu).
        Aperture: 0, 1;
        /// AGP segment (obsolete).
        Agp: 1, 1;
        /// The CPU can map the segment.
        CpuVisible: 2, 1;
        /// Banked segment.
        UseBanking: 3, 1;
        /// Cache-coherent with the CPU.
        CacheCoherent: 4, 1;
        /// Pitch alignment needed.
        PitchAlignment: 5, 1;
        /// Local segment backed by system memory (integrated parts).
        PopulatedFromSystemMemory: 6, 1;
        /// Content survives standby.
        PreservedDuringStandby: 7, 1;
        /// Content survives hibernation.
        PreservedDuringHibernate: 8, 1;
        /// Partly preserved during hibernation.
        PartiallyPreservedDuringHibernate: 9, 1;
        /// Direct flip possible from this segment (WIN8+).
        DirectFlip: 10, 1;
        /// The segment uses 64 KiB pages (WDDM 2.0+).
        Use64KBPages: 11, 1;
        /// Reserved for the system.
        ReservedSysMem: 12, 1;
        /// A CPU host aperture exists.
        SupportsCpuHostAperture: 13, 1;
        /// The CPU host aperture can be mapped cached.
        SupportsCachedCpuHostAperture: 14, 1;
        /// Deprecated (budget groups replace it).
        ApplicationTarget: 15, 1;
        /// Video protected regions supported.
        VprSupported: 16, 1;
        /// VPR content survives standby.
        VprPreservedDuringStandby: 17, 1;
        /// Hardware-protected allocations are encrypted while paged.
        EncryptedPagingSupported: 18, 1;
        /// Counts against the local budget group.
        LocalBudgetGroup: 19, 1;
        /// Counts against the non-local budget group.
        NonLocalBudgetGroup: 20, 1;
        /// Populated from firmware-reserved DDR (WDDM 2.9+).
        PopulatedByReservedDDRByFirmware: 21, 1;
        /// Reserved.
        Reserved: 22, 10;
    }
}
layout!(DXGK_SEGMENTFLAGS, size = 4);

/// `DXGK_CPUHOSTAPERTURE`: CPU physical window onto a segment.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_cpuhostaperture>
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct DXGK_CPUHOSTAPERTURE {
    /// CPU physical address of the aperture.
    pub PhysicalAddress: UINT64,
    /// Size in CPU host pages.
    pub SizeInPages: UINT32,
}
layout!(
    DXGK_CPUHOSTAPERTURE,
    size = 16,
    PhysicalAddress = 0,
    SizeInPages = 8
);

/// Anonymous union of `DXGK_SEGMENTDESCRIPTOR4` (CPU translated address or host aperture).
// wdk-layout-check: skip: anonymous union inside DXGK_SEGMENTDESCRIPTOR4 (checked through the parent's offsets)
#[repr(C)]
#[derive(Clone, Copy)]
pub union DXGK_SEGMENTDESCRIPTOR4_0 {
    /// CPU physical base of a CPU-visible segment without a host aperture.
    pub CpuTranslatedAddress: PHYSICAL_ADDRESS,
    /// The host aperture when `Flags.SupportsCpuHostAperture` is set.
    pub CpuHostAperture: DXGK_CPUHOSTAPERTURE,
}
layout!(DXGK_SEGMENTDESCRIPTOR4_0, size = 16);
impl core::fmt::Debug for DXGK_SEGMENTDESCRIPTOR4_0 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // SAFETY: both arms start with 8 bytes of plain integer data, always initialised (the
        // default fills the larger arm), and every bit pattern is a valid LARGE_INTEGER.
        let first = unsafe { self.CpuTranslatedAddress };
        f.debug_struct("DXGK_SEGMENTDESCRIPTOR4_0")
            .field("CpuTranslatedAddress", &first)
            .finish_non_exhaustive()
    }
}
impl Default for DXGK_SEGMENTDESCRIPTOR4_0 {
    fn default() -> Self {
        Self {
            CpuHostAperture: DXGK_CPUHOSTAPERTURE::default(),
        }
    }
}

/// `DXGK_SEGMENTDESCRIPTOR4`: one segment in the `DXGKQAITYPE_QUERYSEGMENT4` answer.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_segmentdescriptor4>
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct DXGK_SEGMENTDESCRIPTOR4 {
    /// Segment flags.
    pub Flags: DXGK_SEGMENTFLAGS,
    /// GPU logical base address of the segment.
    pub BaseAddress: PHYSICAL_ADDRESS,
    /// Size in bytes.
    pub Size: SIZE_T,
    /// Commit limit (aperture segments only).
    pub CommitLimit: SIZE_T,
    /// Allocations ending past this address are purged at hibernation.
    pub SystemMemoryEndAddress: SIZE_T,
    /// CPU address of the segment.
    pub u: DXGK_SEGMENTDESCRIPTOR4_0,
    /// Number of invalid memory ranges.
    pub NumInvalidMemoryRanges: UINT,
    /// VPR start offset.
    pub VprRangeStartOffset: SIZE_T,
    /// VPR size.
    pub VprRangeSize: SIZE_T,
    /// VPR alignment.
    pub VprAlignment: UINT,
    /// Number of VPRs (0: unlimited).
    pub NumVprSupported: UINT,
    /// Bytes of the VPR reserved for the driver.
    pub VprReserveSize: UINT,
    /// Number of UEFI frame-buffer ranges (WDDM 2.2+).
    pub NumUEFIFrameBufferRanges: UINT,
}
layout!(
    DXGK_SEGMENTDESCRIPTOR4,
    size = 96,
    Flags = 0,
    BaseAddress = 8,
    Size = 16,
    CommitLimit = 24,
    SystemMemoryEndAddress = 32,
    u = 40,
    NumInvalidMemoryRanges = 56,
    VprRangeStartOffset = 64,
    VprRangeSize = 72,
    VprAlignment = 80,
    NumVprSupported = 84,
    VprReserveSize = 88,
    NumUEFIFrameBufferRanges = 92
);

/// `DXGK_QUERYSEGMENTIN4`: input of `DXGKQAITYPE_QUERYSEGMENT4`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_querysegmentin4>
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct DXGK_QUERYSEGMENTIN4 {
    /// Physical adapter (engine ordinal) queried.
    pub PhysicalAdapterIndex: UINT,
}
layout!(DXGK_QUERYSEGMENTIN4, size = 4, PhysicalAdapterIndex = 0);

/// `DXGK_QUERYSEGMENTOUT4`: output of `DXGKQAITYPE_QUERYSEGMENT4`. The OS calls twice: first
/// with `pSegmentDescriptor` null to learn `NbSegment`, then with an array of that many
/// descriptors, each `SegmentDescriptorStride` bytes apart.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_querysegmentout4>
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DXGK_QUERYSEGMENTOUT4 {
    /// Number of segments.
    pub NbSegment: UINT,
    /// Descriptor array (OS-owned), or null on the counting call.
    pub pSegmentDescriptor: *mut BYTE,
    /// Segment the paging buffers are allocated from (0: system memory).
    pub PagingBufferSegmentId: UINT,
    /// Paging buffer size in bytes.
    pub PagingBufferSize: UINT,
    /// Private data size per paging buffer.
    pub PagingBufferPrivateDataSize: UINT,
    /// Stride of the descriptor array.
    pub SegmentDescriptorStride: SIZE_T,
}
layout!(
    DXGK_QUERYSEGMENTOUT4,
    size = 40,
    NbSegment = 0,
    pSegmentDescriptor = 8,
    PagingBufferSegmentId = 16,
    PagingBufferSize = 20,
    PagingBufferPrivateDataSize = 24,
    SegmentDescriptorStride = 32
);
impl Default for DXGK_QUERYSEGMENTOUT4 {
    fn default() -> Self {
        Self {
            NbSegment: 0,
            pSegmentDescriptor: core::ptr::null_mut(),
            PagingBufferSegmentId: 0,
            PagingBufferSize: 0,
            PagingBufferPrivateDataSize: 0,
            SegmentDescriptorStride: 0,
        }
    }
}

/// `DXGK_PAGETABLEUPDATEMODE`: how VidMm addresses page tables in UpdatePageTable operations.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_pagetableupdatemode>
pub type DXGK_PAGETABLEUPDATEMODE = i32;
/// The CPU writes page tables through a CPU virtual address.
pub const DXGK_PAGETABLEUPDATE_CPU_VIRTUAL: DXGK_PAGETABLEUPDATEMODE = 0;
/// The GPU writes page tables through GPU virtual addresses.
pub const DXGK_PAGETABLEUPDATE_GPU_VIRTUAL: DXGK_PAGETABLEUPDATEMODE = 1;
/// The GPU writes page tables through physical addresses.
pub const DXGK_PAGETABLEUPDATE_GPU_PHYSICAL: DXGK_PAGETABLEUPDATEMODE = 2;

bitfield! {
    /// First word of `DXGK_GPUMMUCAPS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_gpummucaps>
    // wdk-layout-check: skip: anonymous bit-field word inside DXGK_GPUMMUCAPS
    pub struct DXGK_GPUMMUCAPS_FLAGS: u32 {
        /// Read-only pages.
        ReadOnlyMemorySupported: 0, 1;
        /// No-execute pages.
        NoExecuteMemorySupported: 1, 1;
        /// Zero-in-PTE reads return zero.
        ZeroInPteSupported: 2, 1;
        /// The driver invalidates TLBs explicitly.
        ExplicitPageTableInvalidation: 3, 1;
        /// Cache-coherent memory supported.
        CacheCoherentMemorySupported: 4, 1;
        /// Page-table updates need an idle address space.
        PageTableUpdateRequireAddressSpaceIdle: 5, 1;
        /// 2 MiB (large) pages in local memory.
        LargePageSupported: 6, 1;
        /// Dual PTEs (4 KiB and 64 KiB) supported.
        DualPteSupported: 7, 1;
        /// Large pages need not be aligned (WDDM 2.1+).
        AllowNonAlignedLargePageAddress: 8, 1;
        /// 64 KiB pages in system memory.
        SysMem64KBPageSupported: 9, 1;
        /// Invalid entries never enter the TLB (WDDM 2.6+).
        InvalidTlbEntriesNotCached: 10, 1;
        /// Large pages in system memory (WDDM 2.9+).
        SysMemLargePageSupported: 11, 1;
        /// Page tables may be cached (WDDM 3.1+).
        CachedPageTables: 12, 1;
        /// Reserved.
        Reserved: 13, 19;
    }
}
layout!(DXGK_GPUMMUCAPS_FLAGS, size = 4);

bitfield! {
    /// `LegacyBehaviors` word of `DXGK_GPUMMUCAPS`.
    // wdk-layout-check: skip: anonymous bit-field word inside DXGK_GPUMMUCAPS
    pub struct DXGK_GPUMMUCAPS_LEGACY: u32 {
        /// Source page-table VA is given in transfer operations.
        SourcePageTableVaInTransfer: 0, 1;
        /// Reserved.
        Reserved: 1, 31;
    }
}
layout!(DXGK_GPUMMUCAPS_LEGACY, size = 4);

/// `DXGK_GPUMMUCAPS`: answer to `DXGKQAITYPE_GPUMMUCAPS`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_gpummucaps>
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct DXGK_GPUMMUCAPS {
    /// Capability bits.
    pub Flags: DXGK_GPUMMUCAPS_FLAGS,
    /// How page tables are updated.
    pub PageTableUpdateMode: DXGK_PAGETABLEUPDATEMODE,
    /// Number of GPU VA bits.
    pub VirtualAddressBitCount: UINT,
    /// Leaf table size when 64 KiB pages are used.
    pub LeafPageTableSizeFor64KPagesInBytes: UINT,
    /// Number of page-table levels (2..=4 on WDDM 2.x+).
    pub PageTableLevelCount: UINT,
    /// Legacy behaviours.
    pub LegacyBehaviors: DXGK_GPUMMUCAPS_LEGACY,
}
layout!(
    DXGK_GPUMMUCAPS,
    size = 24,
    Flags = 0,
    PageTableUpdateMode = 4,
    VirtualAddressBitCount = 8,
    LeafPageTableSizeFor64KPagesInBytes = 12,
    PageTableLevelCount = 16,
    LegacyBehaviors = 20
);

/// `DXGK_QUERYPAGETABLELEVELDESCIN`: input of `DXGKQAITYPE_PAGETABLELEVELDESC`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_querypagetableleveldescin>
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct DXGK_QUERYPAGETABLELEVELDESCIN {
    /// Level queried (0: leaf).
    pub LevelIndex: USHORT,
    /// Physical adapter queried.
    pub PhysicalAdapterIndex: USHORT,
}
layout!(
    DXGK_QUERYPAGETABLELEVELDESCIN,
    size = 4,
    LevelIndex = 0,
    PhysicalAdapterIndex = 2
);

/// `DXGK_PAGE_TABLE_LEVEL_DESC`: answer to `DXGKQAITYPE_PAGETABLELEVELDESC` (one level).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_page_table_level_desc>
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct DXGK_PAGE_TABLE_LEVEL_DESC {
    /// VA bits this level translates.
    pub PageTableIndexBitCount: UINT,
    /// Segment the level's tables live in.
    pub PageTableSegmentId: UINT,
    /// Segment for the paging process's tables.
    pub PagingProcessPageTableSegmentId: UINT,
    /// Size of one table in bytes.
    pub PageTableSizeInBytes: UINT,
    /// Alignment of a table (0: the segment's page size).
    pub PageTableAlignmentInBytes: UINT,
}
layout!(
    DXGK_PAGE_TABLE_LEVEL_DESC,
    size = 20,
    PageTableIndexBitCount = 0,
    PageTableSegmentId = 4,
    PagingProcessPageTableSegmentId = 8,
    PageTableSizeInBytes = 12,
    PageTableAlignmentInBytes = 16
);
