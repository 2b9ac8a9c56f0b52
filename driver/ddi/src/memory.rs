//! Memory-model types of `DxgkDdiQueryAdapterInfo` (d3dkmddi.h): segment descriptors
//! (`DXGKQAITYPE_QUERYSEGMENT4`), GPU MMU caps (`DXGKQAITYPE_GPUMMUCAPS`) and page-table level
//! descriptors (`DXGKQAITYPE_PAGETABLELEVELDESC`).
//!
//! Only the bindings: the KMD's answers and the simulated VidMm's checks build on
//! these.

use crate::basic::*;
use crate::macros::{bitfield, c_enum, c_type, flag_word, layout, unbound_fn, union_debug};

flag_word! {
    /// `DXGK_SEGMENTFLAGS`: properties of one memory segment.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_segmentflags>
    pub struct DXGK_SEGMENTFLAGS {
        /// Aperture segment (not used under GpuMmu).
        Aperture,
        /// AGP segment (obsolete).
        Agp,
        /// The CPU can map the segment.
        CpuVisible,
        /// Banked segment.
        UseBanking,
        /// Cache-coherent with the CPU.
        CacheCoherent,
        /// Pitch alignment needed.
        PitchAlignment,
        /// Local segment backed by system memory (integrated parts).
        PopulatedFromSystemMemory,
        /// Content survives standby.
        PreservedDuringStandby,
        /// Content survives hibernation.
        PreservedDuringHibernate,
        /// Partly preserved during hibernation.
        PartiallyPreservedDuringHibernate,
        /// Direct flip possible from this segment (WIN8+).
        DirectFlip,
        /// The segment uses 64 KiB pages (WDDM 2.0+).
        Use64KBPages,
        /// Reserved for the system.
        ReservedSysMem,
        /// A CPU host aperture exists.
        SupportsCpuHostAperture,
        /// The CPU host aperture can be mapped cached.
        SupportsCachedCpuHostAperture,
        /// Deprecated (budget groups replace it).
        ApplicationTarget,
        /// Video protected regions supported.
        VprSupported,
        /// VPR content survives standby.
        VprPreservedDuringStandby,
        /// Hardware-protected allocations are encrypted while paged.
        EncryptedPagingSupported,
        /// Counts against the local budget group.
        LocalBudgetGroup,
        /// Counts against the non-local budget group.
        NonLocalBudgetGroup,
        /// Populated from firmware-reserved DDR (WDDM 2.9+).
        PopulatedByReservedDDRByFirmware,
    }
}

c_type! {
    /// `DXGK_CPUHOSTAPERTURE`: CPU physical window onto a segment.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_cpuhostaperture>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_CPUHOSTAPERTURE {
        /// CPU physical address of the aperture.
        #[offset(0)]
        pub PhysicalAddress: UINT64,
        /// Size in CPU host pages.
        #[offset(8)]
        pub SizeInPages: UINT32,
    }
}

c_type! {
    /// Anonymous union of `DXGK_SEGMENTDESCRIPTOR4` (CPU translated address or host aperture).
    // wdk-layout-check: skip: anonymous union inside DXGK_SEGMENTDESCRIPTOR4 (checked through the parent's offsets)
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGK_SEGMENTDESCRIPTOR4_0 {
        /// CPU physical base of a CPU-visible segment without a host aperture.
        pub CpuTranslatedAddress: PHYSICAL_ADDRESS,
        /// The host aperture when `Flags.SupportsCpuHostAperture` is set.
        pub CpuHostAperture: DXGK_CPUHOSTAPERTURE,
    }
}
// Both arms start with 8 bytes of plain integer data, always initialised (the default fills
// the larger arm), and every bit pattern is a valid LARGE_INTEGER.
union_debug!(DXGK_SEGMENTDESCRIPTOR4_0 => CpuTranslatedAddress);
impl Default for DXGK_SEGMENTDESCRIPTOR4_0 {
    fn default() -> Self {
        Self {
            CpuHostAperture: DXGK_CPUHOSTAPERTURE::default(),
        }
    }
}

c_type! {
    /// `DXGK_SEGMENTDESCRIPTOR4`: one segment in the `DXGKQAITYPE_QUERYSEGMENT4` answer.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_segmentdescriptor4>
    #[size(96)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_SEGMENTDESCRIPTOR4 {
        /// Segment flags.
        #[offset(0)]
        pub Flags: DXGK_SEGMENTFLAGS,
        /// GPU logical base address of the segment.
        #[offset(8)]
        pub BaseAddress: PHYSICAL_ADDRESS,
        /// Size in bytes.
        #[offset(16)]
        pub Size: SIZE_T,
        /// Commit limit (aperture segments only).
        #[offset(24)]
        pub CommitLimit: SIZE_T,
        /// Allocations ending past this address are purged at hibernation.
        #[offset(32)]
        pub SystemMemoryEndAddress: SIZE_T,
        /// CPU address of the segment.
        #[offset(40)]
        pub u: DXGK_SEGMENTDESCRIPTOR4_0,
        /// Number of invalid memory ranges.
        #[offset(56)]
        pub NumInvalidMemoryRanges: UINT,
        /// VPR start offset.
        #[offset(64)]
        pub VprRangeStartOffset: SIZE_T,
        /// VPR size.
        #[offset(72)]
        pub VprRangeSize: SIZE_T,
        /// VPR alignment.
        #[offset(80)]
        pub VprAlignment: UINT,
        /// Number of VPRs (0: unlimited).
        #[offset(84)]
        pub NumVprSupported: UINT,
        /// Bytes of the VPR reserved for the driver.
        #[offset(88)]
        pub VprReserveSize: UINT,
        /// Number of UEFI frame-buffer ranges (WDDM 2.2+).
        #[offset(92)]
        pub NumUEFIFrameBufferRanges: UINT,
    }
}

c_type! {
    /// `DXGK_QUERYSEGMENTIN4`: input of `DXGKQAITYPE_QUERYSEGMENT4`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_querysegmentin4>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_QUERYSEGMENTIN4 {
        /// Physical adapter (engine ordinal) queried.
        #[offset(0)]
        pub PhysicalAdapterIndex: UINT,
    }
}

c_type! {
    /// `DXGK_QUERYSEGMENTOUT4`: output of `DXGKQAITYPE_QUERYSEGMENT4`. The OS calls twice: first
    /// with `pSegmentDescriptor` null to learn `NbSegment`, then with an array of that many
    /// descriptors, each `SegmentDescriptorStride` bytes apart.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_querysegmentout4>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_QUERYSEGMENTOUT4 {
        /// Number of segments.
        #[offset(0)]
        pub NbSegment: UINT,
        /// Descriptor array (OS-owned), or null on the counting call.
        #[offset(8)]
        pub pSegmentDescriptor: *mut BYTE,
        /// Segment the paging buffers are allocated from (0: system memory).
        #[offset(16)]
        pub PagingBufferSegmentId: UINT,
        /// Paging buffer size in bytes.
        #[offset(20)]
        pub PagingBufferSize: UINT,
        /// Private data size per paging buffer.
        #[offset(24)]
        pub PagingBufferPrivateDataSize: UINT,
        /// Stride of the descriptor array.
        #[offset(32)]
        pub SegmentDescriptorStride: SIZE_T,
    }
}
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

c_enum! {
    /// `DXGK_PAGETABLEUPDATEMODE`: how VidMm addresses page tables in UpdatePageTable operations.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_pagetableupdatemode>
    pub type DXGK_PAGETABLEUPDATEMODE = i32 {
        /// The CPU writes page tables through a CPU virtual address.
        DXGK_PAGETABLEUPDATE_CPU_VIRTUAL,
        /// The GPU writes page tables through GPU virtual addresses.
        DXGK_PAGETABLEUPDATE_GPU_VIRTUAL,
        /// The GPU writes page tables through physical addresses.
        DXGK_PAGETABLEUPDATE_GPU_PHYSICAL,
    }
}

flag_word! {
    /// First word of `DXGK_GPUMMUCAPS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_gpummucaps>
    // wdk-layout-check: skip: anonymous bit-field word inside DXGK_GPUMMUCAPS
    pub struct DXGK_GPUMMUCAPS_FLAGS {
        /// Read-only pages.
        ReadOnlyMemorySupported,
        /// No-execute pages.
        NoExecuteMemorySupported,
        /// Zero-in-PTE reads return zero.
        ZeroInPteSupported,
        /// The driver invalidates TLBs explicitly.
        ExplicitPageTableInvalidation,
        /// Cache-coherent memory supported.
        CacheCoherentMemorySupported,
        /// Page-table updates need an idle address space.
        PageTableUpdateRequireAddressSpaceIdle,
        /// 2 MiB (large) pages in local memory.
        LargePageSupported,
        /// Dual PTEs (4 KiB and 64 KiB) supported.
        DualPteSupported,
        /// Large pages need not be aligned (WDDM 2.1+).
        AllowNonAlignedLargePageAddress,
        /// 64 KiB pages in system memory.
        SysMem64KBPageSupported,
        /// Invalid entries never enter the TLB (WDDM 2.6+).
        InvalidTlbEntriesNotCached,
        /// Large pages in system memory (WDDM 2.9+).
        SysMemLargePageSupported,
        /// Page tables may be cached (WDDM 3.1+).
        CachedPageTables,
    }
}

flag_word! {
    /// `LegacyBehaviors` word of `DXGK_GPUMMUCAPS`.
    // wdk-layout-check: skip: anonymous bit-field word inside DXGK_GPUMMUCAPS
    pub struct DXGK_GPUMMUCAPS_LEGACY {
        /// Source page-table VA is given in transfer operations.
        SourcePageTableVaInTransfer,
    }
}

c_type! {
    /// `DXGK_GPUMMUCAPS`: answer to `DXGKQAITYPE_GPUMMUCAPS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_gpummucaps>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_GPUMMUCAPS {
        /// Capability bits.
        #[offset(0)]
        pub Flags: DXGK_GPUMMUCAPS_FLAGS,
        /// How page tables are updated.
        #[offset(4)]
        pub PageTableUpdateMode: DXGK_PAGETABLEUPDATEMODE,
        /// Number of GPU VA bits.
        #[offset(8)]
        pub VirtualAddressBitCount: UINT,
        /// Leaf table size when 64 KiB pages are used.
        #[offset(12)]
        pub LeafPageTableSizeFor64KPagesInBytes: UINT,
        /// Number of page-table levels (2..=4 on WDDM 2.x+).
        #[offset(16)]
        pub PageTableLevelCount: UINT,
        /// Legacy behaviours.
        #[offset(20)]
        pub LegacyBehaviors: DXGK_GPUMMUCAPS_LEGACY,
    }
}

c_type! {
    /// `DXGK_QUERYGPUMMUCAPSIN`: input of `DXGKQAITYPE_GPUMMUCAPS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_querygpummucapsin>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_QUERYGPUMMUCAPSIN {
        /// Physical adapter queried.
        #[offset(0)]
        pub PhysicalAdapterIndex: UINT,
    }
}

c_type! {
    /// `DXGK_QUERYPAGETABLELEVELDESCIN`: input of `DXGKQAITYPE_PAGETABLELEVELDESC`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_querypagetableleveldescin>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_QUERYPAGETABLELEVELDESCIN {
        /// Level queried (0: leaf).
        #[offset(0)]
        pub LevelIndex: USHORT,
        /// Physical adapter queried.
        #[offset(2)]
        pub PhysicalAdapterIndex: USHORT,
    }
}

c_type! {
    /// `DXGK_PAGE_TABLE_LEVEL_DESC`: answer to `DXGKQAITYPE_PAGETABLELEVELDESC` (one level).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_page_table_level_desc>
    #[size(20)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_PAGE_TABLE_LEVEL_DESC {
        /// VA bits this level translates.
        #[offset(0)]
        pub PageTableIndexBitCount: UINT,
        /// Segment the level's tables live in.
        #[offset(4)]
        pub PageTableSegmentId: UINT,
        /// Segment for the paging process's tables.
        #[offset(8)]
        pub PagingProcessPageTableSegmentId: UINT,
        /// Size of one table in bytes.
        #[offset(12)]
        pub PageTableSizeInBytes: UINT,
        /// Alignment of a table (0: the segment's page size).
        #[offset(16)]
        pub PageTableAlignmentInBytes: UINT,
    }
}

// ---------------------------------------------------------------------------------------------
// GPU physical addresses and page-table entries (d3dukmdt.h)
// ---------------------------------------------------------------------------------------------

c_type! {
    /// `D3DGPU_PHYSICAL_ADDRESS`: a location inside a memory segment (segment + byte offset), the
    /// GpuMmu model's notion of a "physical" address. Segment 0 is system memory.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dgpu_physical_address>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
    pub struct D3DGPU_PHYSICAL_ADDRESS {
        /// Segment identifier (0: system memory).
        #[offset(0)]
        pub SegmentId: UINT,
        /// Explicit padding in the header; zero.
        #[offset(4)]
        pub Padding: UINT,
        /// Byte offset from the start of the segment.
        #[offset(8)]
        pub SegmentOffset: UINT64,
    }
}

c_enum! {
    /// `DXGK_PTE_PAGE_SIZE`: page size of the level below, in [`DXGK_PTE_0::PageTablePageSize`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ne-d3dukmdt-_dxgk_pte_page_size>
    pub type DXGK_PTE_PAGE_SIZE = i32 {
        /// The lower level maps 4 KiB pages.
        DXGK_PTE_PAGE_TABLE_PAGE_4KB,
        /// The lower level maps 64 KiB pages.
        DXGK_PTE_PAGE_TABLE_PAGE_64KB,
    }
}

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

c_type! {
    /// Second word of [`DXGK_PTE`]: `PageAddress` (leaf entries) or `PageTableAddress` (entries
    /// pointing at a lower-level table); both are the same 64-bit word.
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGK_PTE_1 {
        /// Page frame: bits 12..63 of the page's address within its segment, shifted down by 12.
        pub PageAddress: ULONGLONG,
        /// The same, for the lower-level page table an upper-level entry points at.
        pub PageTableAddress: ULONGLONG,
    }
}
impl Default for DXGK_PTE_1 {
    fn default() -> Self {
        Self { PageAddress: 0 }
    }
}
// Both arms are the same u64; every bit pattern is valid.
union_debug!(DXGK_PTE_1 => PageAddress);
impl PartialEq for DXGK_PTE_1 {
    fn eq(&self, other: &Self) -> bool {
        // SAFETY: both arms are the same u64; every bit pattern is valid.
        unsafe { self.PageAddress == other.PageAddress }
    }
}
impl Eq for DXGK_PTE_1 {}

c_type! {
    /// `DXGK_PTE`: the OS's hardware-neutral page-table entry (16 bytes). VidMm hands arrays of
    /// these to `DxgkDdiBuildPagingBuffer` (`UpdatePageTable`); the driver translates each into the
    /// GPU's own PTE format.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_dxgk_pte>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_PTE {
        /// Flag bits (C: anonymous union, whole word `Flags`).
        #[offset(0)]
        pub Anonymous: DXGK_PTE_0,
        /// `PageAddress` / `PageTableAddress` (C: anonymous union).
        #[offset(8)]
        pub Anonymous2: DXGK_PTE_1,
    }
}

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

c_type! {
    /// `DXGK_PAGETABLEUPDATEADDRESS`: where the page table to update is, in the form selected by
    /// [`DXGK_GPUMMUCAPS::PageTableUpdateMode`] (and repeated in
    /// [`DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE::UpdateMode`]).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_pagetableupdateaddress>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct DXGK_PAGETABLEUPDATEADDRESS {
        /// The address (C: anonymous union).
        #[offset(0)]
        pub Anonymous: DXGK_PAGETABLEUPDATEADDRESS_0,
    }
}
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::align_of::<DXGK_PAGETABLEUPDATEADDRESS>() == 8);
union_debug!(DXGK_PAGETABLEUPDATEADDRESS);

c_type! {
    /// Anonymous union of [`DXGK_PAGETABLEUPDATEADDRESS`].
    #[size(16)]
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
}
union_debug!(DXGK_PAGETABLEUPDATEADDRESS_0);

flag_word! {
    /// `DXGK_UPDATEPAGETABLEFLAGS` (C: a bare bit-field struct with no whole-word member).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_updatepagetableflags>
    pub struct DXGK_UPDATEPAGETABLEFLAGS {
        /// Write `pPageTableEntries[0]` into all `NumPageTableEntries` slots.
        Repeat,
        /// First update of a freshly allocated page table.
        InitialUpdate,
        /// The update is part of an eviction.
        NotifyEviction,
        /// The leaf table maps 64 KiB pages.
        Use64KBPages,
        /// `hAllocation` is a native fence (WDDM 3.1+).
        NativeFence,
    }
}

c_type! {
    /// `DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE`: [`crate::tdr::DXGK_OPERATION_UPDATE_PAGE_TABLE`]
    /// (`UpdatePageTable` arm): write `NumPageTableEntries` entries starting at `StartIndex` of one
    /// page table.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_updatepagetable>
    #[size(104)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE {
        /// Level of the table being written (0: leaf).
        #[offset(0)]
        pub PageTableLevel: UINT,
        /// Driver handle of the mapped allocation, or null (page tables themselves, ...).
        #[offset(8)]
        pub hAllocation: HANDLE,
        /// Address of the table, in the form given by `UpdateMode`.
        #[offset(16)]
        pub PageTableAddress: DXGK_PAGETABLEUPDATEADDRESS,
        /// OS-format entries to translate; index 0 goes to `StartIndex`.
        #[offset(32)]
        pub pPageTableEntries: *mut DXGK_PTE,
        /// First entry written.
        #[offset(40)]
        pub StartIndex: UINT,
        /// Number of entries written.
        #[offset(44)]
        pub NumPageTableEntries: UINT,
        /// Reserved, zero.
        #[offset(48)]
        pub Reserved0: UINT,
        /// Operation flags.
        #[offset(52)]
        pub Flags: DXGK_UPDATEPAGETABLEFLAGS,
        /// Driver protection bits the UMD passed when mapping the range.
        #[offset(56)]
        pub DriverProtection: UINT64,
        /// With `hAllocation`: byte offset in the allocation of the first mapped page.
        #[offset(64)]
        pub AllocationOffsetInBytes: UINT64,
        /// Driver process handle the table belongs to (from `DxgkDdiCreateProcess`).
        #[offset(72)]
        pub hProcess: HANDLE,
        /// Which member of `PageTableAddress` is valid.
        #[offset(80)]
        pub UpdateMode: DXGK_PAGETABLEUPDATEMODE,
        /// Dual-PTE hardware: the 64 KiB entries of the same range.
        #[offset(88)]
        pub pPageTableEntries64KB: *mut DXGK_PTE,
        /// GPU VA the first written entry maps.
        #[offset(96)]
        pub FirstPteVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
    }
}

c_type! {
    /// `DXGK_BUILDPAGINGBUFFER_FLUSHTLB`: [`crate::tdr::DXGK_OPERATION_FLUSH_TLB`] (`FlushTlb`
    /// arm): invalidate the TLBs of one address space.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_flushtlb>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_BUILDPAGINGBUFFER_FLUSHTLB {
        /// Root page table of the address space.
        #[offset(0)]
        pub RootPageTableAddress: D3DGPU_PHYSICAL_ADDRESS,
        /// Driver process handle.
        #[offset(16)]
        pub hProcess: HANDLE,
        /// Start of the VA range to invalidate.
        #[offset(24)]
        pub StartVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// End of the VA range.
        #[offset(32)]
        pub EndVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
    }
}

c_type! {
    /// `DXGK_BUILDPAGINGBUFFER_COPY_RANGE`: one range of a
    /// [`DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES`] operation.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_copy_range>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_BUILDPAGINGBUFFER_COPY_RANGE {
        /// Entries to copy.
        #[offset(0)]
        pub NumPageTableEntries: UINT,
        /// GPU VA of the source table.
        #[offset(8)]
        pub SrcPageTableAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// GPU VA of the destination table.
        #[offset(16)]
        pub DstPageTableAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// First source entry.
        #[offset(24)]
        pub SrcStartPteIndex: UINT,
        /// First destination entry.
        #[offset(28)]
        pub DstStartPteIndex: UINT,
    }
}

c_type! {
    /// `DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES`:
    /// [`crate::tdr::DXGK_OPERATION_COPY_PAGE_TABLE_ENTRIES`] (`CopyPageTableEntries` arm).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_copypagetableentries>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES {
        /// Elements of `pRanges`.
        #[offset(0)]
        pub NumRanges: UINT,
        /// The ranges (OS-owned).
        #[offset(8)]
        pub pRanges: *mut DXGK_BUILDPAGINGBUFFER_COPY_RANGE,
    }
}

c_type! {
    /// `DXGK_BUILDPAGINGBUFFER_FILLVIRTUAL`: [`crate::tdr::DXGK_OPERATION_VIRTUAL_FILL`]
    /// (`FillVirtual` arm): fill a GPU VA range with a 32-bit pattern.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_fillvirtual>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_BUILDPAGINGBUFFER_FILLVIRTUAL {
        /// Driver allocation handle.
        #[offset(0)]
        pub hAllocation: HANDLE,
        /// Offset in the allocation of the first filled byte.
        #[offset(8)]
        pub AllocationOffsetInBytes: UINT64,
        /// Bytes to fill.
        #[offset(16)]
        pub FillSizeInBytes: UINT64,
        /// 32-bit pattern.
        #[offset(24)]
        pub FillPattern: UINT,
        /// GPU VA (paging process) of the destination.
        #[offset(32)]
        pub DestinationVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
    }
}

c_enum! {
    /// `DXGK_MEMORY_TRANSFER_DIRECTION`: [`DXGK_BUILDPAGINGBUFFER_TRANSFERVIRTUAL::TransferDirection`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_memory_transfer_direction>
    pub type DXGK_MEMORY_TRANSFER_DIRECTION = i32 {
        /// Local (video) memory to system memory.
        DXGK_MEMORY_TRANSFER_LOCAL_TO_SYSTEM,
        /// System memory to local memory.
        DXGK_MEMORY_TRANSFER_SYSTEM_TO_LOCAL,
        /// Local memory to local memory.
        DXGK_MEMORY_TRANSFER_LOCAL_TO_LOCAL,
    }
}

flag_word! {
    /// `DXGK_TRANSFERVIRTUALFLAGS` (the C whole-word member is named `Flags`; `Value` here).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_transfervirtualflags>
    pub struct DXGK_TRANSFERVIRTUALFLAGS {
        /// The source is mapped with 64 KiB pages.
        Src64KBPages,
        /// The destination is mapped with 64 KiB pages.
        Dst64KBPages,
    }
}

c_type! {
    /// `DXGK_BUILDPAGINGBUFFER_TRANSFERVIRTUAL`: [`crate::tdr::DXGK_OPERATION_VIRTUAL_TRANSFER`]
    /// (`TransferVirtual` arm): copy between two GPU VAs of the paging process.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_transfervirtual>
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_BUILDPAGINGBUFFER_TRANSFERVIRTUAL {
        /// Driver allocation handle.
        #[offset(0)]
        pub hAllocation: HANDLE,
        /// Offset in the allocation of the first transferred byte.
        #[offset(8)]
        pub AllocationOffsetInBytes: UINT64,
        /// Bytes to transfer.
        #[offset(16)]
        pub TransferSizeInBytes: UINT64,
        /// Source GPU VA.
        #[offset(24)]
        pub SourceVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// Destination GPU VA.
        #[offset(32)]
        pub DestinationVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// GPU VA of the source's leaf page table (see `DXGK_GPUMMUCAPS_LEGACY`).
        #[offset(40)]
        pub SourcePageTable: D3DGPU_VIRTUAL_ADDRESS,
        /// Direction of the copy.
        #[offset(48)]
        pub TransferDirection: DXGK_MEMORY_TRANSFER_DIRECTION,
        /// Page sizes of source and destination.
        #[offset(52)]
        pub Flags: DXGK_TRANSFERVIRTUALFLAGS,
        /// GPU VA of the destination's leaf page table.
        #[offset(56)]
        pub DestinationPageTable: D3DGPU_VIRTUAL_ADDRESS,
    }
}

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

c_type! {
    /// `DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY`: [`crate::tdr::DXGK_OPERATION_NOTIFY_RESIDENCY`]
    /// (`NotifyResidency` arm), sent for allocations created with
    /// `ExplicitResidencyNotification`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_notifyresidency>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY {
        /// Driver allocation handle.
        #[offset(0)]
        pub hAllocation: HANDLE,
        /// Where the allocation now lives (when resident).
        #[offset(8)]
        pub PhysicalAddress: D3DGPU_PHYSICAL_ADDRESS,
        /// `Resident` bit (C: anonymous bit-field union).
        #[offset(24)]
        pub Anonymous: DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY_0,
    }
}

c_type! {
    /// `DXGK_BUILDPAGINGBUFFER_UPDATECONTEXTALLOCATION`:
    /// [`crate::tdr::DXGK_OPERATION_UPDATE_CONTEXT_ALLOCATION`] (`UpdateContextAllocation` arm).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_updatecontextallocation>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_BUILDPAGINGBUFFER_UPDATECONTEXTALLOCATION {
        /// GPU VA of the context allocation.
        #[offset(0)]
        pub ContextAllocation: D3DGPU_VIRTUAL_ADDRESS,
        /// Its size in bytes.
        #[offset(8)]
        pub ContextAllocationSize: UINT64,
        /// Driver data from `DxgkCbUpdateContextAllocation`.
        #[offset(16)]
        pub pDriverPrivateData: PVOID,
        /// Size of that data.
        #[offset(24)]
        pub DriverPrivateDataSize: UINT,
    }
}

c_type! {
    /// `DXGK_BUILDPAGINGBUFFER_SIGNALMONITOREDFENCE`:
    /// [`crate::tdr::DXGK_OPERATION_SIGNAL_MONITORED_FENCE`] (`SignalMonitoredFence` arm, WDDM
    /// 2.2+): write a 64-bit value to a monitored fence from the paging queue.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_buildpagingbuffer_signalmonitoredfence>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_BUILDPAGINGBUFFER_SIGNALMONITOREDFENCE {
        /// GPU VA of the fence value.
        #[offset(0)]
        pub MonitoredFenceGpuVa: D3DGPU_VIRTUAL_ADDRESS,
        /// Value to write.
        #[offset(8)]
        pub MonitoredFenceValue: UINT64,
    }
}

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

// Slots of `DRIVER_INITIALIZATION_DATA` whose signatures are not bound yet (`init` re-exports
// them): binding one replaces its line with its argument block and prototype.
unbound_fn!(PDXGKDDI_MAPCPUHOSTAPERTURE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_mapcpuhostaperture");
unbound_fn!(PDXGKDDI_UNMAPCPUHOSTAPERTURE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_unmapcpuhostaperture");
unbound_fn!(PDXGKDDI_SETVIDEOPROTECTEDREGION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setvideoprotectedregion");
unbound_fn!(PDXGKDDI_CREATEMEMORYBASIS, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_creatememorybasis");
unbound_fn!(PDXGKDDI_DESTROYMEMORYBASIS, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_destroymemorybasis");
unbound_fn!(PDXGKDDI_STARTDIRTYTRACKING, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_startdirtytracking");
unbound_fn!(PDXGKDDI_STOPDIRTYTRACKING, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_stopdirtytracking");
unbound_fn!(PDXGKDDI_QUERYDIRTYBITDATA, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_querydirtybitdata");

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
