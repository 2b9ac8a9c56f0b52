//! `DxgkDdiBuildPagingBuffer`: its operations and argument block (d3dkmddi.h), on the node ring
//! the TDR path resets. Reached through [`crate::tdr`]; the layout sources are in its docs.

use crate::basic::*;
use crate::macros::{c_enum, c_type, flag_word, union_debug, zeroed_default};
use crate::memory::{
    DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES, DXGK_BUILDPAGINGBUFFER_FILLVIRTUAL,
    DXGK_BUILDPAGINGBUFFER_FLUSHTLB, DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY,
    DXGK_BUILDPAGINGBUFFER_SIGNALMONITOREDFENCE, DXGK_BUILDPAGINGBUFFER_TRANSFERVIRTUAL,
    DXGK_BUILDPAGINGBUFFER_UPDATECONTEXTALLOCATION, DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
};

// ---------------------------------------------------------------------------------------------
// Paging buffers
// ---------------------------------------------------------------------------------------------

c_enum! {
    /// `DXGK_BUILDPAGINGBUFFER_OPERATION`: [`DXGKARG_BUILDPAGINGBUFFER::Operation`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_buildpagingbuffer_operation>
    pub type DXGK_BUILDPAGINGBUFFER_OPERATION = i32 {
        /// Move allocation content ([`DXGKARG_BUILDPAGINGBUFFER_0::Transfer`]).
        DXGK_OPERATION_TRANSFER,
        /// Fill with a 32-bit pattern ([`DXGKARG_BUILDPAGINGBUFFER_0::Fill`]).
        DXGK_OPERATION_FILL,
        /// Allocation discarded from a segment.
        DXGK_OPERATION_DISCARD_CONTENT,
        /// Read a physical address.
        DXGK_OPERATION_READ_PHYSICAL,
        /// Write a physical address.
        DXGK_OPERATION_WRITE_PHYSICAL,
        /// Map an MDL into an aperture segment.
        DXGK_OPERATION_MAP_APERTURE_SEGMENT,
        /// Unmap an aperture segment range.
        DXGK_OPERATION_UNMAP_APERTURE_SEGMENT,
        /// Transfer through the alternate (lock) VA.
        DXGK_OPERATION_SPECIAL_LOCK_TRANSFER,
        /// Transfer by GPU VA.
        DXGK_OPERATION_VIRTUAL_TRANSFER,
        /// Fill by GPU VA.
        DXGK_OPERATION_VIRTUAL_FILL,
        /// Initialise a context allocation (Windows 8+).
        DXGK_OPERATION_INIT_CONTEXT_RESOURCE,
        /// Update a page table (WDDM 2.0+).
        DXGK_OPERATION_UPDATE_PAGE_TABLE,
        /// Flush TLBs of a root page table (WDDM 2.0+).
        DXGK_OPERATION_FLUSH_TLB,
        /// Update a context or device allocation (WDDM 2.0+).
        DXGK_OPERATION_UPDATE_CONTEXT_ALLOCATION,
        /// Copy page table entries (WDDM 2.0+).
        DXGK_OPERATION_COPY_PAGE_TABLE_ENTRIES,
        /// Allocation residency changed (WDDM 2.0+).
        DXGK_OPERATION_NOTIFY_RESIDENCY,
        /// Signal a monitored fence (WDDM 2.2+).
        DXGK_OPERATION_SIGNAL_MONITORED_FENCE,
        /// Map an ADL into an aperture segment (WDDM 3.0+).
        DXGK_OPERATION_MAP_APERTURE_SEGMENT2,
        /// Fence residency changed (WDDM 2.9+).
        DXGK_OPERATION_NOTIFY_FENCE_RESIDENCY,
        /// WDDM 3.2.
        DXGK_OPERATION_MAP_MMU,
        /// WDDM 3.2.
        DXGK_OPERATION_UNMAP_MMU,
        /// WDDM 3.2.
        DXGK_OPERATION_NOTIFY_RESIDENCY2,
        /// Allocation notification (WDDM 3.2).
        DXGK_OPERATION_NOTIFY_ALLOC,
    }
}

flag_word! {
    /// `DXGK_TRANSFERFLAGS`: kind of transfer in [`DXGKARG_BUILDPAGINGBUFFER_Transfer::Flags`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_transferflags>
    pub struct DXGK_TRANSFERFLAGS {
        /// Swizzle source to destination.
        Swizzle,
        /// Unswizzle source to destination.
        Unswizzle,
        /// No GPU work references the allocation until the call returns.
        AllocationIsIdle,
        /// First part of a split transfer.
        TransferStart,
        /// Last part of a split transfer.
        TransferEnd,
    }
}

c_type! {
    /// Anonymous union of [`DXGKARG_BUILDPAGINGBUFFER_Transfer_Source`]: segment address or MDL.
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGKARG_BUILDPAGINGBUFFER_Transfer_Source_0 {
        /// Segment address (segment offset + segment base) when `SegmentId != 0`.
        pub SegmentAddress: LARGE_INTEGER,
        /// System-memory pages when `SegmentId == 0`.
        pub pMdl: PMDL,
    }
}

// Both arms are 8 bytes of plain data; the integer arm reads every byte.
union_debug!(DXGKARG_BUILDPAGINGBUFFER_Transfer_Source_0 => SegmentAddress);

c_type! {
    /// `Transfer.Source` (and, with the same anonymous layout, `Transfer.Destination`) of
    /// [`DXGKARG_BUILDPAGINGBUFFER`].
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_Transfer_Source {
        /// Segment, or 0 when the location is an MDL.
        #[offset(0)]
        pub SegmentId: UINT,
        /// `SegmentAddress` / `pMdl`.
        #[offset(8)]
        pub Anonymous: DXGKARG_BUILDPAGINGBUFFER_Transfer_Source_0,
    }
}

/// `Transfer.Destination`: declared in C as a separate anonymous struct identical to
/// [`DXGKARG_BUILDPAGINGBUFFER_Transfer_Source`].
pub type DXGKARG_BUILDPAGINGBUFFER_Transfer_Destination = DXGKARG_BUILDPAGINGBUFFER_Transfer_Source;

c_type! {
    /// `Transfer` arm of [`DXGKARG_BUILDPAGINGBUFFER_0`] ([`DXGK_OPERATION_TRANSFER`]).
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_Transfer {
        /// Driver allocation handle (from `DxgkDdiCreateAllocation`).
        #[offset(0)]
        pub hAllocation: HANDLE,
        /// Offset of the first transferred page within the allocation (segment locations only;
        /// the same on every pass of a split transfer).
        #[offset(8)]
        pub TransferOffset: UINT,
        /// Bytes to transfer.
        #[offset(16)]
        pub TransferSize: SIZE_T,
        /// Source location.
        #[offset(24)]
        pub Source: DXGKARG_BUILDPAGINGBUFFER_Transfer_Source,
        /// Destination location.
        #[offset(40)]
        pub Destination: DXGKARG_BUILDPAGINGBUFFER_Transfer_Destination,
        /// Transfer kind.
        #[offset(56)]
        pub Flags: DXGK_TRANSFERFLAGS,
        /// First system page of the current pass within the MDL
        /// (`MmGetMdlPfnArray(pMdl)[MdlOffset]`).
        #[offset(60)]
        pub MdlOffset: UINT,
    }
}

c_type! {
    /// `Fill.Destination` of [`DXGKARG_BUILDPAGINGBUFFER`].
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_Fill_Destination {
        /// Segment to fill in.
        #[offset(0)]
        pub SegmentId: UINT,
        /// Segment address (segment offset + segment base).
        #[offset(8)]
        pub SegmentAddress: LARGE_INTEGER,
    }
}

c_type! {
    /// `Fill` arm of [`DXGKARG_BUILDPAGINGBUFFER_0`] ([`DXGK_OPERATION_FILL`]).
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_Fill {
        /// Driver allocation handle.
        #[offset(0)]
        pub hAllocation: HANDLE,
        /// Bytes to fill.
        #[offset(8)]
        pub FillSize: SIZE_T,
        /// 32-bit pattern.
        #[offset(16)]
        pub FillPattern: UINT,
        /// Where to fill.
        #[offset(24)]
        pub Destination: DXGKARG_BUILDPAGINGBUFFER_Fill_Destination,
    }
}

flag_word! {
    /// `DXGK_MAPAPERTUREFLAGS`: [`DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment::Flags`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_mapapertureflags>
    pub struct DXGK_MAPAPERTUREFLAGS {
        /// Map the pages cache-coherently.
        CacheCoherent,
    }
}

c_type! {
    /// `MapApertureSegment` arm of [`DXGKARG_BUILDPAGINGBUFFER_0`]
    /// ([`DXGK_OPERATION_MAP_APERTURE_SEGMENT`]): map an MDL's pages into an aperture range.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_buildpagingbuffer>
    #[size(56)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment {
        /// Device the allocation belongs to (NULL for VidMm's own).
        #[offset(0)]
        pub hDevice: HANDLE,
        /// Driver allocation handle (NULL for VidMm's own).
        #[offset(8)]
        pub hAllocation: HANDLE,
        /// The aperture segment.
        #[offset(16)]
        pub SegmentId: UINT,
        /// First aperture page mapped.
        #[offset(24)]
        pub OffsetInPages: SIZE_T,
        /// Pages mapped.
        #[offset(32)]
        pub NumberOfPages: SIZE_T,
        /// The system pages.
        #[offset(40)]
        pub pMdl: PMDL,
        /// Mapping flags.
        #[offset(48)]
        pub Flags: DXGK_MAPAPERTUREFLAGS,
        /// First page of the MDL mapped (`MmGetMdlPfnArray(pMdl)[MdlOffset]`).
        #[offset(52)]
        pub MdlOffset: ULONG,
    }
}

c_type! {
    /// `UnmapApertureSegment` arm of [`DXGKARG_BUILDPAGINGBUFFER_0`]
    /// ([`DXGK_OPERATION_UNMAP_APERTURE_SEGMENT`]): point an aperture range at a dummy page.
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment {
        /// Device the allocation belongs to (NULL for VidMm's own).
        #[offset(0)]
        pub hDevice: HANDLE,
        /// Driver allocation handle (NULL for VidMm's own).
        #[offset(8)]
        pub hAllocation: HANDLE,
        /// The aperture segment.
        #[offset(16)]
        pub SegmentId: UINT,
        /// First aperture page unmapped.
        #[offset(24)]
        pub OffsetInPages: SIZE_T,
        /// Pages unmapped.
        #[offset(32)]
        pub NumberOfPages: SIZE_T,
        /// Physical address of the page the range points at afterwards.
        #[offset(40)]
        pub DummyPage: PHYSICAL_ADDRESS,
    }
}

c_type! {
    /// The `Reserved` arm of [`DXGKARG_BUILDPAGINGBUFFER_0`] (`struct { UINT Reserved[64]; }`):
    /// sizes the union, and is the raw view of every arm not bound here.
    #[size(256)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_Reserved {
        /// The union's 256 bytes.
        pub Reserved: [UINT; 64],
    }
}

c_type! {
    /// Anonymous per-operation union of [`DXGKARG_BUILDPAGINGBUFFER`] (256 bytes, 8-aligned).
    ///
    /// Typed arms: `Transfer`, `Fill`, `MapApertureSegment`, `UnmapApertureSegment` and the
    /// WDDM 2.0+ GpuMmu operations (`TransferVirtual`,
    /// `FillVirtual`, `UpdatePageTable`, `FlushTlb`, `CopyPageTableEntries`,
    /// `UpdateContextAllocation`, `NotifyResidency`, `SignalMonitoredFence`; their types are in
    /// [`crate::memory`]). `DiscardContent`, `ReadPhysical`, `WritePhysical`,
    /// `SpecialLockTransfer`, `InitContextResource`,
    /// `MapApertureSegment2` and the WDDM 3.2 arms are reachable only as raw words through
    /// `Reserved`.
    #[size(256)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGKARG_BUILDPAGINGBUFFER_0 {
        /// [`DXGK_OPERATION_TRANSFER`].
        pub Transfer: DXGKARG_BUILDPAGINGBUFFER_Transfer,
        /// [`DXGK_OPERATION_FILL`].
        pub Fill: DXGKARG_BUILDPAGINGBUFFER_Fill,
        /// [`DXGK_OPERATION_MAP_APERTURE_SEGMENT`].
        pub MapApertureSegment: DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment,
        /// [`DXGK_OPERATION_UNMAP_APERTURE_SEGMENT`].
        pub UnmapApertureSegment: DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment,
        /// [`DXGK_OPERATION_VIRTUAL_TRANSFER`] (WDDM 2.0+).
        pub TransferVirtual: DXGK_BUILDPAGINGBUFFER_TRANSFERVIRTUAL,
        /// [`DXGK_OPERATION_VIRTUAL_FILL`] (WDDM 2.0+).
        pub FillVirtual: DXGK_BUILDPAGINGBUFFER_FILLVIRTUAL,
        /// [`DXGK_OPERATION_UPDATE_PAGE_TABLE`] (WDDM 2.0+).
        pub UpdatePageTable: DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
        /// [`DXGK_OPERATION_FLUSH_TLB`] (WDDM 2.0+).
        pub FlushTlb: DXGK_BUILDPAGINGBUFFER_FLUSHTLB,
        /// [`DXGK_OPERATION_COPY_PAGE_TABLE_ENTRIES`] (WDDM 2.0+).
        pub CopyPageTableEntries: DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES,
        /// [`DXGK_OPERATION_UPDATE_CONTEXT_ALLOCATION`] (WDDM 2.0+).
        pub UpdateContextAllocation: DXGK_BUILDPAGINGBUFFER_UPDATECONTEXTALLOCATION,
        /// [`DXGK_OPERATION_NOTIFY_RESIDENCY`] (WDDM 2.0+).
        pub NotifyResidency: DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY,
        /// [`DXGK_OPERATION_SIGNAL_MONITORED_FENCE`] (WDDM 2.2+).
        pub SignalMonitoredFence: DXGK_BUILDPAGINGBUFFER_SIGNALMONITOREDFENCE,
        /// Raw view; sizes the union.
        pub Reserved: DXGKARG_BUILDPAGINGBUFFER_Reserved,
    }
}
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::align_of::<DXGKARG_BUILDPAGINGBUFFER_0>() == 8);

union_debug!(DXGKARG_BUILDPAGINGBUFFER_0);

/// Safe reads of the arms the simulated OS checks. Every arm is integers, handles, raw
/// pointers and unions of those, so any bit pattern is a value of it: reading another arm than
/// `Operation` selects gives a meaningless but valid value.
macro_rules! paging_arm_readers {
    ($($name:ident => $field:ident: $ty:ty;)*) => {
        impl DXGKARG_BUILDPAGINGBUFFER_0 {
            $(
                #[doc = concat!("The `", stringify!($field), "` arm.")]
                pub fn $name(&self) -> $ty {
                    // SAFETY: a `Copy` arm of plain data, valid for any bits.
                    unsafe { self.$field }
                }
            )*
        }
    };
}
paging_arm_readers! {
    transfer => Transfer: DXGKARG_BUILDPAGINGBUFFER_Transfer;
    fill => Fill: DXGKARG_BUILDPAGINGBUFFER_Fill;
    map_aperture_segment => MapApertureSegment: DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment;
    unmap_aperture_segment => UnmapApertureSegment: DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment;
    update_page_table => UpdatePageTable: DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE;
    flush_tlb => FlushTlb: DXGK_BUILDPAGINGBUFFER_FLUSHTLB;
}

c_type! {
    /// `DXGKARG_BUILDPAGINGBUFFER`: argument of `DxgkDdiBuildPagingBuffer` (320 bytes on x64).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_buildpagingbuffer>
    #[size(320)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER {
        /// In/out: first free byte of the paging buffer; the driver advances it past what it wrote.
        #[offset(0)]
        pub pDmaBuffer: PVOID,
        /// In/out: bytes available at `pDmaBuffer`.
        #[offset(8)]
        pub DmaSize: UINT,
        /// In/out: driver private data of the paging buffer.
        #[offset(16)]
        pub pDmaBufferPrivateData: PVOID,
        /// In/out: bytes left in the private data.
        #[offset(24)]
        pub DmaBufferPrivateDataSize: UINT,
        /// In: which arm of `Anonymous` is valid.
        #[offset(28)]
        pub Operation: DXGK_BUILDPAGINGBUFFER_OPERATION,
        /// In/out: driver progress across passes of a split operation (0 on the first pass).
        #[offset(32)]
        pub MultipassOffset: UINT,
        /// In: per-operation data.
        #[offset(40)]
        pub Anonymous: DXGKARG_BUILDPAGINGBUFFER_0,
        /// In: the system context of the paging operation.
        #[offset(296)]
        pub hSystemContext: HANDLE,
        /// In: GPU VA of the paging buffer (WDDM 2.0+).
        #[offset(304)]
        pub DmaBufferGpuVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// In: offset of `pDmaBuffer` from the start of the paging buffer (WDDM 2.0+).
        #[offset(312)]
        pub DmaBufferWriteOffset: UINT,
    }
}

/// `DXGKDDI_BUILDPAGINGBUFFER` (PASSIVE_LEVEL per the `_IRQL_requires_` of two public header
/// copies; the reference page states no IRQL; first-level synchronisation): `(IN_CONST_HANDLE hAdapter, IN_PDXGKARG_BUILDPAGINGBUFFER
/// pBuildPagingBuffer)`. Returns `STATUS_SUCCESS`, `STATUS_GRAPHICS_ALLOCATION_BUSY` or
/// `STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER` (call again with a new buffer; `MultipassOffset`
/// carries the progress).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_buildpagingbuffer>
pub type PDXGKDDI_BUILDPAGINGBUFFER = DDI_FN<*mut DXGKARG_BUILDPAGINGBUFFER>;

zeroed_default!(
    DXGKARG_BUILDPAGINGBUFFER_Transfer_Source_0,
    DXGKARG_BUILDPAGINGBUFFER_Transfer_Source,
    DXGKARG_BUILDPAGINGBUFFER_Transfer,
    DXGKARG_BUILDPAGINGBUFFER_Fill_Destination,
    DXGKARG_BUILDPAGINGBUFFER_Fill,
    DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment,
    DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment,
    DXGKARG_BUILDPAGINGBUFFER_Reserved,
    DXGKARG_BUILDPAGINGBUFFER_0,
    DXGKARG_BUILDPAGINGBUFFER,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_arms_share_the_union() {
        let mut a = DXGKARG_BUILDPAGINGBUFFER {
            Operation: DXGK_OPERATION_FILL,
            ..Default::default()
        };
        a.Anonymous.Fill = DXGKARG_BUILDPAGINGBUFFER_Fill {
            hAllocation: core::ptr::null_mut(),
            FillSize: 0x1000,
            FillPattern: 0xDEAD_BEEF,
            Destination: DXGKARG_BUILDPAGINGBUFFER_Fill_Destination {
                SegmentId: 1,
                SegmentAddress: LARGE_INTEGER::from_i64(0x20_0000),
            },
        };
        // SAFETY: the union was zeroed and then the Fill arm written; Reserved is plain words.
        let raw = unsafe { a.Anonymous.Reserved.Reserved };
        // FillSize at union offset 8, FillPattern at 16, Destination.SegmentId at 24,
        // Destination.SegmentAddress at 32 (words 2, 4, 6, 8).
        assert_eq!(raw[2], 0x1000);
        assert_eq!(raw[4], 0xDEAD_BEEF);
        assert_eq!(raw[6], 1);
        assert_eq!(raw[8], 0x20_0000);
        assert!(raw[10..].iter().all(|w| *w == 0));
    }

    #[test]
    fn gpummu_arms_share_the_union() {
        let mut a = DXGKARG_BUILDPAGINGBUFFER {
            Operation: DXGK_OPERATION_UPDATE_PAGE_TABLE,
            ..Default::default()
        };
        a.Anonymous.UpdatePageTable = DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE {
            PageTableLevel: 1,
            StartIndex: 7,
            NumPageTableEntries: 3,
            UpdateMode: crate::memory::DXGK_PAGETABLEUPDATE_GPU_PHYSICAL,
            FirstPteVirtualAddress: 0x1234_5000,
            ..Default::default()
        };
        // SAFETY: the union was zeroed and then the UpdatePageTable arm written.
        let raw = unsafe { a.Anonymous.Reserved.Reserved };
        // PageTableLevel 0, StartIndex 40, NumPageTableEntries 44, UpdateMode 80,
        // FirstPteVirtualAddress 96 (words 0, 10, 11, 20, 24).
        assert_eq!((raw[0], raw[10], raw[11], raw[20]), (1, 7, 3, 2));
        assert_eq!(raw[24], 0x1234_5000);
        assert!(raw[26..].iter().all(|w| *w == 0));
    }
}
