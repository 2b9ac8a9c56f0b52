//! `MDL`, the memory descriptor list (wdm.h): the header the memory manager writes, followed by
//! the array of physical page numbers `MmGetMdlPfnArray` returns.
//!
//! VidMm hands the driver MDLs in paging operations whose location is system memory
//! (`DXGKARG_BUILDPAGINGBUFFER::Transfer.Source/Destination.pMdl` when `SegmentId` is 0).
//! The driver reads the header and the page array; it never builds or frees one.
//!
//! Facts used (wdm.h of the WDK, and the reference page):
//! - x64 layout: `Next`, `Size` (CSHORT: bytes of the header plus the page array),
//!   `MdlFlags` (CSHORT), `Process`, `MappedSystemVa`, `StartVa`, `ByteCount` (ULONG),
//!   `ByteOffset` (ULONG); 48 bytes.
//! - `MmGetMdlPfnArray(Mdl)` is the address just past the header (`Mdl + 1`); each entry is a
//!   `PFN_NUMBER` (a 64-bit page number on x64).
//! - The buffer starts `ByteOffset` bytes into the first page and is `ByteCount` bytes long,
//!   so it spans `ADDRESS_AND_SIZE_TO_SPAN_PAGES(ByteOffset, ByteCount)` pages: that many
//!   array entries are meaningful.
//!
//! <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/ns-wdm-_mdl>,
//! <https://learn.microsoft.com/en-us/windows-hardware/drivers/kernel/mm-bad-pointer#mmgetmdlpfnarray>

use crate::basic::*;
use crate::macros::c_type;

/// `CSHORT`.
pub type CSHORT = i16;

/// `PFN_NUMBER`: a physical page number (x64: 64 bits).
pub type PFN_NUMBER = u64;

c_type! {
    /// `MDL`: the header of a memory descriptor list. The page array follows it in memory
    /// ([`MDL_PFN_ARRAY_OFFSET`]).
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct MDL {
        /// Next MDL of a chain (the driver follows none here).
        #[offset(0)]
        pub Next: *mut MDL,
        /// Bytes of this header plus its page array.
        #[offset(8)]
        pub Size: CSHORT,
        /// `MDL_*` flags.
        #[offset(10)]
        pub MdlFlags: CSHORT,
        /// Owning process (opaque `EPROCESS`).
        #[offset(16)]
        pub Process: PVOID,
        /// System VA of the pages when mapped.
        #[offset(24)]
        pub MappedSystemVa: PVOID,
        /// Page-aligned virtual address of the buffer's first page.
        #[offset(32)]
        pub StartVa: PVOID,
        /// Bytes the MDL describes.
        #[offset(40)]
        pub ByteCount: ULONG,
        /// Offset of the first byte in the first page.
        #[offset(44)]
        pub ByteOffset: ULONG,
    }
}

/// `PMDL`.
pub type PMDL = *mut MDL;

/// Where `MmGetMdlPfnArray` points: just past the header.
pub const MDL_PFN_ARRAY_OFFSET: usize = core::mem::size_of::<MDL>();

/// `MDL_PAGES_LOCKED`: the pages are locked (what VidMm hands the driver for paging).
pub const MDL_PAGES_LOCKED: CSHORT = 0x0002;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tdr::{
        DXGKARG_BUILDPAGINGBUFFER_Transfer_Source, DXGKARG_BUILDPAGINGBUFFER_Transfer_Source_0,
    };

    /// The MDL header as wdm.h lays it out on x64 (the page's member order and types).
    #[test]
    fn mdl_header_layout_matches_wdm_h() {
        assert_eq!(core::mem::size_of::<MDL>(), 48);
        assert_eq!(core::mem::align_of::<MDL>(), 8);
        assert_eq!(core::mem::offset_of!(MDL, ByteCount), 40);
        assert_eq!(core::mem::offset_of!(MDL, ByteOffset), 44);
        assert_eq!(MDL_PFN_ARRAY_OFFSET, 48);
        assert_eq!(core::mem::size_of::<PFN_NUMBER>(), 8);
    }

    /// A transfer side with `SegmentId` 0 carries the MDL pointer in the 8 bytes the segment
    /// address uses otherwise (d3dkmddi.h: one anonymous union).
    #[test]
    fn transfer_side_mdl_arm_aliases_segment_address() {
        let mdl = 0x1234_5670usize as PMDL;
        let side = DXGKARG_BUILDPAGINGBUFFER_Transfer_Source {
            SegmentId: 0,
            Anonymous: DXGKARG_BUILDPAGINGBUFFER_Transfer_Source_0 { pMdl: mdl },
        };
        // SAFETY: both arms are 8 bytes of plain data.
        let raw = unsafe { side.Anonymous.SegmentAddress };
        assert_eq!(raw.get(), 0x1234_5670);
        // SAFETY: as above.
        assert_eq!(unsafe { side.Anonymous.pMdl }, mdl);
    }
}
