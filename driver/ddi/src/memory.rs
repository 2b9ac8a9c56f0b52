//! Memory-model types of `DxgkDdiQueryAdapterInfo` (d3dkmddi.h): segment descriptors
//! (`DXGKQAITYPE_QUERYSEGMENT4`), GPU MMU caps (`DXGKQAITYPE_GPUMMUCAPS`) and page-table level
//! descriptors (`DXGKQAITYPE_PAGETABLELEVELDESC`).
//!
//! Only the bindings: the KMD's answers and the simulated VidMm's checks build on
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

/// `DXGK_QUERYGPUMMUCAPSIN`: input of `DXGKQAITYPE_GPUMMUCAPS`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_querygpummucapsin>
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct DXGK_QUERYGPUMMUCAPSIN {
    /// Physical adapter queried.
    pub PhysicalAdapterIndex: UINT,
}
layout!(DXGK_QUERYGPUMMUCAPSIN, size = 4, PhysicalAdapterIndex = 0);

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

// ---------------------------------------------------------------------------------------------
// GPU physical addresses and page-table entries (d3dukmdt.h)
// ---------------------------------------------------------------------------------------------

/// `D3DGPU_PHYSICAL_ADDRESS`: a location inside a memory segment (segment + byte offset), the
/// GpuMmu model's notion of a "physical" address. Segment 0 is system memory.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dgpu_physical_address>
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
pub struct D3DGPU_PHYSICAL_ADDRESS {
    /// Segment identifier (0: system memory).
    pub SegmentId: UINT,
    /// Explicit padding in the header; zero.
    pub Padding: UINT,
    /// Byte offset from the start of the segment.
    pub SegmentOffset: UINT64,
}
layout!(
    D3DGPU_PHYSICAL_ADDRESS,
    size = 16,
    SegmentId = 0,
    Padding = 4,
    SegmentOffset = 8
);

/// `DXGK_PTE_PAGE_SIZE`: page size of the level below, in [`DXGK_PTE_0::PageTablePageSize`].
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ne-d3dukmdt-_dxgk_pte_page_size>
pub type DXGK_PTE_PAGE_SIZE = i32;
/// The lower level maps 4 KiB pages.
pub const DXGK_PTE_PAGE_TABLE_PAGE_4KB: DXGK_PTE_PAGE_SIZE = 0;
/// The lower level maps 64 KiB pages.
pub const DXGK_PTE_PAGE_TABLE_PAGE_64KB: DXGK_PTE_PAGE_SIZE = 1;

bitfield! {
    /// First word of [`DXGK_PTE`] (C: an anonymous union of a 64-bit bit-field struct and the
    /// whole word, named `Flags` in C; `Value` here, as for every bit-field word).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_dxgk_pte>
    pub struct DXGK_PTE_0: u64 {
        /// The entry maps something; an access through an invalid entry faults unless `Zero`.
        Valid: 0, 1;
        /// With `Valid`: reads return zero and writes are dropped (tiled resources).
        Zero: 1, 1;
        /// The page is coherent with CPU caches.
        CacheCoherent: 2, 1;
        /// Writes fault.
        ReadOnly: 3, 1;
        /// The page may not be fetched as commands.
        NoExecute: 4, 1;
        /// Segment holding the page (0: system memory; 1.. the driver's segments).
        Segment: 5, 5;
        /// Non-leaf entry that maps a whole lower-level range as one large page.
        LargePage: 10, 1;
        /// Physical adapter (linked adapters) owning the memory.
        PhysicalAdapterIndex: 11, 6;
        /// Level-1 entries: page size of the leaf table below ([`DXGK_PTE_PAGE_SIZE`]).
        PageTablePageSize: 17, 2;
        /// Reserved for the OS.
        SystemReserved0: 19, 1;
        /// Reserved, zero.
        Reserved: 20, 44;
    }
}
layout!(DXGK_PTE_0, size = 8);

/// Second word of [`DXGK_PTE`]: `PageAddress` (leaf entries) or `PageTableAddress` (entries
/// pointing at a lower-level table); both are the same 64-bit word.
#[repr(C)]
#[derive(Clone, Copy)]
pub union DXGK_PTE_1 {
    /// Page frame: bits 12..63 of the page's address within its segment, shifted down by 12.
    pub PageAddress: ULONGLONG,
    /// The same, for the lower-level page table an upper-level entry points at.
    pub PageTableAddress: ULONGLONG,
}
layout!(DXGK_PTE_1, size = 8);
impl Default for DXGK_PTE_1 {
    fn default() -> Self {
        Self { PageAddress: 0 }
    }
}
impl core::fmt::Debug for DXGK_PTE_1 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // SAFETY: both arms are the same u64; every bit pattern is valid.
        let v = unsafe { self.PageAddress };
        write!(f, "DXGK_PTE_1({v:#x})")
    }
}
impl PartialEq for DXGK_PTE_1 {
    fn eq(&self, other: &Self) -> bool {
        // SAFETY: both arms are the same u64; every bit pattern is valid.
        unsafe { self.PageAddress == other.PageAddress }
    }
}
impl Eq for DXGK_PTE_1 {}

/// `DXGK_PTE`: the OS's hardware-neutral page-table entry (16 bytes). VidMm hands arrays of
/// these to `DxgkDdiBuildPagingBuffer` (`UpdatePageTable`); the driver translates each into the
/// GPU's own PTE format.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_dxgk_pte>
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct DXGK_PTE {
    /// Flag bits (C: anonymous union, whole word `Flags`).
    pub Anonymous: DXGK_PTE_0,
    /// `PageAddress` / `PageTableAddress` (C: anonymous union).
    pub Anonymous2: DXGK_PTE_1,
}
layout!(DXGK_PTE, size = 16, Anonymous = 0, Anonymous2 = 8);

impl DXGK_PTE {
    /// Builds an entry from its two raw words.
    pub const fn from_raw(flags: u64, page_address: u64) -> Self {
        Self {
            Anonymous: DXGK_PTE_0::from_value(flags),
            Anonymous2: DXGK_PTE_1 {
                PageAddress: page_address,
            },
        }
    }

    /// A valid leaf entry for page frame `page_address` in `segment` (0: system memory),
    /// read-write, executable; `segment` is truncated to its 5 bits.
    pub const fn leaf(segment: u64, page_address: u64) -> Self {
        let flags = DXGK_PTE_0::from_value(0)
            .with(DXGK_PTE_0::Valid, 1)
            .with(DXGK_PTE_0::Segment, segment);
        Self::from_raw(flags.Value, page_address)
    }

    /// This entry with `ReadOnly` set or cleared.
    #[must_use]
    pub const fn with_read_only(mut self, on: bool) -> Self {
        self.Anonymous.set(DXGK_PTE_0::ReadOnly, on as u64);
        self
    }

    /// This entry with `NoExecute` set or cleared.
    #[must_use]
    pub const fn with_no_execute(mut self, on: bool) -> Self {
        self.Anonymous.set(DXGK_PTE_0::NoExecute, on as u64);
        self
    }

    /// The whole flag word (C `Flags`).
    pub const fn flags(&self) -> u64 {
        self.Anonymous.Value
    }
    /// `Valid`.
    pub const fn valid(&self) -> bool {
        self.Anonymous.is_set(DXGK_PTE_0::Valid)
    }
    /// `Zero`.
    pub const fn zero(&self) -> bool {
        self.Anonymous.is_set(DXGK_PTE_0::Zero)
    }
    /// `CacheCoherent`.
    pub const fn cache_coherent(&self) -> bool {
        self.Anonymous.is_set(DXGK_PTE_0::CacheCoherent)
    }
    /// `ReadOnly`.
    pub const fn read_only(&self) -> bool {
        self.Anonymous.is_set(DXGK_PTE_0::ReadOnly)
    }
    /// `NoExecute`.
    pub const fn no_execute(&self) -> bool {
        self.Anonymous.is_set(DXGK_PTE_0::NoExecute)
    }
    /// `Segment` (0: system memory).
    #[allow(clippy::cast_possible_truncation, reason = "a 5-bit field always fits")]
    pub const fn segment(&self) -> u32 {
        self.Anonymous.get(DXGK_PTE_0::Segment) as u32
    }
    /// `LargePage`.
    pub const fn large_page(&self) -> bool {
        self.Anonymous.is_set(DXGK_PTE_0::LargePage)
    }
    /// `PhysicalAdapterIndex`.
    #[allow(clippy::cast_possible_truncation, reason = "a 6-bit field always fits")]
    pub const fn physical_adapter_index(&self) -> u32 {
        self.Anonymous.get(DXGK_PTE_0::PhysicalAdapterIndex) as u32
    }
    /// `PageTablePageSize` ([`DXGK_PTE_PAGE_SIZE`]).
    #[allow(clippy::cast_possible_truncation, reason = "a 2-bit field always fits")]
    pub const fn page_table_page_size(&self) -> DXGK_PTE_PAGE_SIZE {
        self.Anonymous.get(DXGK_PTE_0::PageTablePageSize) as DXGK_PTE_PAGE_SIZE
    }
    /// `PageAddress` (same word as `PageTableAddress`).
    pub const fn page_address(&self) -> u64 {
        // SAFETY: both union arms are the same u64; every bit pattern is valid.
        unsafe { self.Anonymous2.PageAddress }
    }
    /// `PageTableAddress` (same word as `PageAddress`).
    pub const fn page_table_address(&self) -> u64 {
        self.page_address()
    }
}

// ---------------------------------------------------------------------------------------------
// Page-table maintenance operations of DxgkDdiBuildPagingBuffer (WDDM 2.0+). The union arms
// that hold them are in `crate::tdr::DXGKARG_BUILDPAGINGBUFFER_0`.
// ---------------------------------------------------------------------------------------------

/// `DXGK_PAGETABLEUPDATEADDRESS`: where the page table to update is, in the form selected by
/// [`DXGK_GPUMMUCAPS::PageTableUpdateMode`] (and repeated in
/// [`DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE::UpdateMode`]).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_pagetableupdateaddress>
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DXGK_PAGETABLEUPDATEADDRESS {
    /// The address (C: anonymous union).
    pub Anonymous: DXGK_PAGETABLEUPDATEADDRESS_0,
}
layout!(DXGK_PAGETABLEUPDATEADDRESS, size = 16, Anonymous = 0);
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::align_of::<DXGK_PAGETABLEUPDATEADDRESS>() == 8);
impl core::fmt::Debug for DXGK_PAGETABLEUPDATEADDRESS {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("DXGK_PAGETABLEUPDATEADDRESS { .. }")
    }
}

/// Anonymous union of [`DXGK_PAGETABLEUPDATEADDRESS`].
#[repr(C)]
#[derive(Clone, Copy)]
pub union DXGK_PAGETABLEUPDATEADDRESS_0 {
    /// [`DXGK_PAGETABLEUPDATE_CPU_VIRTUAL`]: kernel VA of the table.
    pub CpuVirtual: PVOID,
    /// [`DXGK_PAGETABLEUPDATE_GPU_PHYSICAL`]: segment + offset of the table.
    pub GpuPhysical: D3DGPU_PHYSICAL_ADDRESS,
    /// [`DXGK_PAGETABLEUPDATE_GPU_VIRTUAL`]: GPU VA of the table (paging process).
    pub GpuVirtual: D3DGPU_VIRTUAL_ADDRESS,
}
layout!(DXGK_PAGETABLEUPDATEADDRESS_0, size = 16);
impl core::fmt::Debug for DXGK_PAGETABLEUPDATEADDRESS_0 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("DXGK_PAGETABLEUPDATEADDRESS_0 { .. }")
    }
}

bitfield! {
    /// `DXGK_UPDATEPAGETABLEFLAGS` (C: a bare bit-field struct with no whole-word member).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_updatepagetableflags>
    pub struct DXGK_UPDATEPAGETABLEFLAGS: u32 {
        /// Write `pPageTableEntries[0]` into all `NumPageTableEntries` slots.
        Repeat: 0, 1;
        /// First update of a freshly allocated page table.
        InitialUpdate: 1, 1;
        /// The update is part of an eviction.
        NotifyEviction: 2, 1;
        /// The leaf table maps 64 KiB pages.
        Use64KBPages: 3, 1;
        /// `hAllocation` is a native fence (WDDM 3.1+).
        NativeFence: 4, 1;
        /// Reserved, zero.
        Reserved: 5, 27;
    }
}
layout!(DXGK_UPDATEPAGETABLEFLAGS, size = 4);

/// `DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE`: [`crate::tdr::DXGK_OPERATION_UPDATE_PAGE_TABLE`]
/// (`UpdatePageTable` arm): write `NumPageTableEntries` entries starting at `StartIndex` of one
/// page table.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_updatepagetable>
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE {
    /// Level of the table being written (0: leaf).
    pub PageTableLevel: UINT,
    /// Driver handle of the mapped allocation, or null (page tables themselves, ...).
    pub hAllocation: HANDLE,
    /// Address of the table, in the form given by `UpdateMode`.
    pub PageTableAddress: DXGK_PAGETABLEUPDATEADDRESS,
    /// OS-format entries to translate; index 0 goes to `StartIndex`.
    pub pPageTableEntries: *mut DXGK_PTE,
    /// First entry written.
    pub StartIndex: UINT,
    /// Number of entries written.
    pub NumPageTableEntries: UINT,
    /// Reserved, zero.
    pub Reserved0: UINT,
    /// Operation flags.
    pub Flags: DXGK_UPDATEPAGETABLEFLAGS,
    /// Driver protection bits the UMD passed when mapping the range.
    pub DriverProtection: UINT64,
    /// With `hAllocation`: byte offset in the allocation of the first mapped page.
    pub AllocationOffsetInBytes: UINT64,
    /// Driver process handle the table belongs to (from `DxgkDdiCreateProcess`).
    pub hProcess: HANDLE,
    /// Which member of `PageTableAddress` is valid.
    pub UpdateMode: DXGK_PAGETABLEUPDATEMODE,
    /// Dual-PTE hardware: the 64 KiB entries of the same range.
    pub pPageTableEntries64KB: *mut DXGK_PTE,
    /// GPU VA the first written entry maps.
    pub FirstPteVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
}
layout!(
    DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
    size = 104,
    PageTableLevel = 0,
    hAllocation = 8,
    PageTableAddress = 16,
    pPageTableEntries = 32,
    StartIndex = 40,
    NumPageTableEntries = 44,
    Reserved0 = 48,
    Flags = 52,
    DriverProtection = 56,
    AllocationOffsetInBytes = 64,
    hProcess = 72,
    UpdateMode = 80,
    pPageTableEntries64KB = 88,
    FirstPteVirtualAddress = 96
);

/// `DXGK_BUILDPAGINGBUFFER_FLUSHTLB`: [`crate::tdr::DXGK_OPERATION_FLUSH_TLB`] (`FlushTlb`
/// arm): invalidate the TLBs of one address space.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_flushtlb>
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DXGK_BUILDPAGINGBUFFER_FLUSHTLB {
    /// Root page table of the address space.
    pub RootPageTableAddress: D3DGPU_PHYSICAL_ADDRESS,
    /// Driver process handle.
    pub hProcess: HANDLE,
    /// Start of the VA range to invalidate.
    pub StartVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
    /// End of the VA range.
    pub EndVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
}
layout!(
    DXGK_BUILDPAGINGBUFFER_FLUSHTLB,
    size = 40,
    RootPageTableAddress = 0,
    hProcess = 16,
    StartVirtualAddress = 24,
    EndVirtualAddress = 32
);

/// `DXGK_BUILDPAGINGBUFFER_COPY_RANGE`: one range of a
/// [`DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES`] operation.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_copy_range>
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct DXGK_BUILDPAGINGBUFFER_COPY_RANGE {
    /// Entries to copy.
    pub NumPageTableEntries: UINT,
    /// GPU VA of the source table.
    pub SrcPageTableAddress: D3DGPU_VIRTUAL_ADDRESS,
    /// GPU VA of the destination table.
    pub DstPageTableAddress: D3DGPU_VIRTUAL_ADDRESS,
    /// First source entry.
    pub SrcStartPteIndex: UINT,
    /// First destination entry.
    pub DstStartPteIndex: UINT,
}
layout!(
    DXGK_BUILDPAGINGBUFFER_COPY_RANGE,
    size = 32,
    NumPageTableEntries = 0,
    SrcPageTableAddress = 8,
    DstPageTableAddress = 16,
    SrcStartPteIndex = 24,
    DstStartPteIndex = 28
);

/// `DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES`:
/// [`crate::tdr::DXGK_OPERATION_COPY_PAGE_TABLE_ENTRIES`] (`CopyPageTableEntries` arm).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_copypagetableentries>
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES {
    /// Elements of `pRanges`.
    pub NumRanges: UINT,
    /// The ranges (OS-owned).
    pub pRanges: *mut DXGK_BUILDPAGINGBUFFER_COPY_RANGE,
}
layout!(
    DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES,
    size = 16,
    NumRanges = 0,
    pRanges = 8
);

/// `DXGK_BUILDPAGINGBUFFER_FILLVIRTUAL`: [`crate::tdr::DXGK_OPERATION_VIRTUAL_FILL`]
/// (`FillVirtual` arm): fill a GPU VA range with a 32-bit pattern.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_fillvirtual>
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DXGK_BUILDPAGINGBUFFER_FILLVIRTUAL {
    /// Driver allocation handle.
    pub hAllocation: HANDLE,
    /// Offset in the allocation of the first filled byte.
    pub AllocationOffsetInBytes: UINT64,
    /// Bytes to fill.
    pub FillSizeInBytes: UINT64,
    /// 32-bit pattern.
    pub FillPattern: UINT,
    /// GPU VA (paging process) of the destination.
    pub DestinationVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
}
layout!(
    DXGK_BUILDPAGINGBUFFER_FILLVIRTUAL,
    size = 40,
    hAllocation = 0,
    AllocationOffsetInBytes = 8,
    FillSizeInBytes = 16,
    FillPattern = 24,
    DestinationVirtualAddress = 32
);

/// `DXGK_MEMORY_TRANSFER_DIRECTION`: [`DXGK_BUILDPAGINGBUFFER_TRANSFERVIRTUAL::TransferDirection`].
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_memory_transfer_direction>
pub type DXGK_MEMORY_TRANSFER_DIRECTION = i32;
/// Local (video) memory to system memory.
pub const DXGK_MEMORY_TRANSFER_LOCAL_TO_SYSTEM: DXGK_MEMORY_TRANSFER_DIRECTION = 0;
/// System memory to local memory.
pub const DXGK_MEMORY_TRANSFER_SYSTEM_TO_LOCAL: DXGK_MEMORY_TRANSFER_DIRECTION = 1;
/// Local memory to local memory.
pub const DXGK_MEMORY_TRANSFER_LOCAL_TO_LOCAL: DXGK_MEMORY_TRANSFER_DIRECTION = 2;

bitfield! {
    /// `DXGK_TRANSFERVIRTUALFLAGS` (the C whole-word member is named `Flags`; `Value` here).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_transfervirtualflags>
    pub struct DXGK_TRANSFERVIRTUALFLAGS: u32 {
        /// The source is mapped with 64 KiB pages.
        Src64KBPages: 0, 1;
        /// The destination is mapped with 64 KiB pages.
        Dst64KBPages: 1, 1;
        /// Reserved, zero.
        Reserved: 2, 30;
    }
}
layout!(DXGK_TRANSFERVIRTUALFLAGS, size = 4);

/// `DXGK_BUILDPAGINGBUFFER_TRANSFERVIRTUAL`: [`crate::tdr::DXGK_OPERATION_VIRTUAL_TRANSFER`]
/// (`TransferVirtual` arm): copy between two GPU VAs of the paging process.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_transfervirtual>
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DXGK_BUILDPAGINGBUFFER_TRANSFERVIRTUAL {
    /// Driver allocation handle.
    pub hAllocation: HANDLE,
    /// Offset in the allocation of the first transferred byte.
    pub AllocationOffsetInBytes: UINT64,
    /// Bytes to transfer.
    pub TransferSizeInBytes: UINT64,
    /// Source GPU VA.
    pub SourceVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
    /// Destination GPU VA.
    pub DestinationVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
    /// GPU VA of the source's leaf page table (see `DXGK_GPUMMUCAPS_LEGACY`).
    pub SourcePageTable: D3DGPU_VIRTUAL_ADDRESS,
    /// Direction of the copy.
    pub TransferDirection: DXGK_MEMORY_TRANSFER_DIRECTION,
    /// Page sizes of source and destination.
    pub Flags: DXGK_TRANSFERVIRTUALFLAGS,
    /// GPU VA of the destination's leaf page table.
    pub DestinationPageTable: D3DGPU_VIRTUAL_ADDRESS,
}
layout!(
    DXGK_BUILDPAGINGBUFFER_TRANSFERVIRTUAL,
    size = 64,
    hAllocation = 0,
    AllocationOffsetInBytes = 8,
    TransferSizeInBytes = 16,
    SourceVirtualAddress = 24,
    DestinationVirtualAddress = 32,
    SourcePageTable = 40,
    TransferDirection = 48,
    Flags = 52,
    DestinationPageTable = 56
);

bitfield! {
    /// The anonymous union of [`DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY`]. In C it is a *union*
    /// of two bit-fields (`Resident : 1`, `Reserved : 31`), so both start at bit 0 and
    /// overlap; only bit 0 (`Resident`) carries meaning.
    // wdk-layout-check: skip: anonymous bit-field union inside DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY
    pub struct DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY_0: u32 {
        /// 1: the allocation became resident at `PhysicalAddress`; 0: it was evicted.
        Resident: 0, 1;
    }
}
layout!(DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY_0, size = 4);

/// `DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY`: [`crate::tdr::DXGK_OPERATION_NOTIFY_RESIDENCY`]
/// (`NotifyResidency` arm), sent for allocations created with
/// `ExplicitResidencyNotification`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_notifyresidency>
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY {
    /// Driver allocation handle.
    pub hAllocation: HANDLE,
    /// Where the allocation now lives (when resident).
    pub PhysicalAddress: D3DGPU_PHYSICAL_ADDRESS,
    /// `Resident` bit (C: anonymous bit-field union).
    pub Anonymous: DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY_0,
}
layout!(
    DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY,
    size = 32,
    hAllocation = 0,
    PhysicalAddress = 8,
    Anonymous = 24
);

/// `DXGK_BUILDPAGINGBUFFER_UPDATECONTEXTALLOCATION`:
/// [`crate::tdr::DXGK_OPERATION_UPDATE_CONTEXT_ALLOCATION`] (`UpdateContextAllocation` arm).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_updatecontextallocation>
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DXGK_BUILDPAGINGBUFFER_UPDATECONTEXTALLOCATION {
    /// GPU VA of the context allocation.
    pub ContextAllocation: D3DGPU_VIRTUAL_ADDRESS,
    /// Its size in bytes.
    pub ContextAllocationSize: UINT64,
    /// Driver data from `DxgkCbUpdateContextAllocation`.
    pub pDriverPrivateData: PVOID,
    /// Size of that data.
    pub DriverPrivateDataSize: UINT,
}
layout!(
    DXGK_BUILDPAGINGBUFFER_UPDATECONTEXTALLOCATION,
    size = 32,
    ContextAllocation = 0,
    ContextAllocationSize = 8,
    pDriverPrivateData = 16,
    DriverPrivateDataSize = 24
);

/// `DXGK_BUILDPAGINGBUFFER_SIGNALMONITOREDFENCE`:
/// [`crate::tdr::DXGK_OPERATION_SIGNAL_MONITORED_FENCE`] (`SignalMonitoredFence` arm, WDDM
/// 2.2+): write a 64-bit value to a monitored fence from the paging queue.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_signalmonitoredfence>
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct DXGK_BUILDPAGINGBUFFER_SIGNALMONITOREDFENCE {
    /// GPU VA of the fence value.
    pub MonitoredFenceGpuVa: D3DGPU_VIRTUAL_ADDRESS,
    /// Value to write.
    pub MonitoredFenceValue: UINT64,
}
layout!(
    DXGK_BUILDPAGINGBUFFER_SIGNALMONITOREDFENCE,
    size = 16,
    MonitoredFenceGpuVa = 0,
    MonitoredFenceValue = 8
);

crate::macros::zeroed_default!(
    DXGK_PAGETABLEUPDATEADDRESS,
    DXGK_PAGETABLEUPDATEADDRESS_0,
    DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
    DXGK_BUILDPAGINGBUFFER_FLUSHTLB,
    DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES,
    DXGK_BUILDPAGINGBUFFER_FILLVIRTUAL,
    DXGK_BUILDPAGINGBUFFER_TRANSFERVIRTUAL,
    DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY,
    DXGK_BUILDPAGINGBUFFER_UPDATECONTEXTALLOCATION,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::macros::assert_fields_fill_word;

    #[test]
    fn flag_words_are_contiguous() {
        assert_fields_fill_word!(
            DXGK_PTE_0,
            DXGK_UPDATEPAGETABLEFLAGS,
            DXGK_TRANSFERVIRTUALFLAGS
        );
    }

    /// Bit positions of the PTE flag word (declaration order, first field in bit 0).
    #[test]
    fn pte_bits() {
        let p = DXGK_PTE::leaf(3, 0xABCDE)
            .with_read_only(true)
            .with_no_execute(true);
        assert_eq!(p.flags(), 1 | (1 << 3) | (1 << 4) | (3 << 5));
        assert!(p.valid() && p.read_only() && p.no_execute());
        assert!(!p.zero() && !p.cache_coherent() && !p.large_page());
        assert_eq!(p.segment(), 3);
        assert_eq!(p.page_address(), 0xABCDE);
        assert_eq!(p.page_table_address(), 0xABCDE);
        let sys = DXGK_PTE::leaf(0, 1);
        assert_eq!(sys.segment(), 0);
        // Segment is 5 bits: larger ids are truncated, never spill into LargePage.
        assert_eq!(DXGK_PTE::leaf(0x3F, 0).segment(), 0x1F);
        assert!(!DXGK_PTE::leaf(0x3F, 0).large_page());
        let q = DXGK_PTE::from_raw((1 << 10) | (5 << 11) | (1 << 17), 0);
        assert!(q.large_page());
        assert_eq!(q.physical_adapter_index(), 5);
        assert_eq!(q.page_table_page_size(), DXGK_PTE_PAGE_TABLE_PAGE_64KB);
        assert_eq!(
            DXGK_PTE_0::mask(DXGK_PTE_0::Reserved),
            0xFFFF_FFFF_FFF0_0000
        );
        assert_eq!(DXGK_PTE::default(), DXGK_PTE::from_raw(0, 0));
    }

    #[test]
    fn paging_flag_bits() {
        let f = DXGK_UPDATEPAGETABLEFLAGS::default()
            .with(DXGK_UPDATEPAGETABLEFLAGS::Repeat, 1)
            .with(DXGK_UPDATEPAGETABLEFLAGS::Use64KBPages, 1);
        assert_eq!(f.Value, 0b1001);
        let t =
            DXGK_TRANSFERVIRTUALFLAGS::default().with(DXGK_TRANSFERVIRTUALFLAGS::Dst64KBPages, 1);
        assert_eq!(t.Value, 2);
        let r = DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY {
            Anonymous: DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY_0::from_value(1),
            ..Default::default()
        };
        assert!(r
            .Anonymous
            .is_set(DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY_0::Resident));
        assert_eq!(DXGK_MEMORY_TRANSFER_LOCAL_TO_LOCAL, 2);
    }
}
