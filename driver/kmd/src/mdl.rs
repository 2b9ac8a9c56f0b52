//! The MDLs VidMm passes in paging operations (docs/memory.md "System memory and
//! MDLs"): a TRANSFER side with `SegmentId` 0 names system memory by an MDL instead of a
//! segment address (DXGKARG_BUILDPAGINGBUFFER page, `Transfer.Source.pMdl`).
//!
//! The MDL is the OS's memory: its layout is trusted, its values are not. A header whose page
//! count does not fit the page array its own `Size` covers, or a range past its `ByteCount`,
//! is `STATUS_INVALID_PARAMETER`; nothing here reads past the array `Size` covers.
//!
//! PFNs become bus addresses (`pfn × 4096`): paging buffers run on the bus (hardware.md §12.2)
//! and the simulated platform has no DMA remapping. A platform that remaps DMA would
//! need the pages mapped for the device first (`DxgkCbMapMdlToIoMmu`); not built.

use rvgpu_ddi::mdl::PFN_NUMBER;

use crate::status::{self, Status};

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// The pages an MDL describes, as far as its own header vouches for them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MdlPages<'a> {
    /// The entries `ByteOffset` + `ByteCount` span (never more than `Size` covers).
    pfns: &'a [PFN_NUMBER],
    byte_offset: u64,
    byte_count: u64,
}

impl<'a> MdlPages<'a> {
    /// Checks a header against the page array it comes with: `ByteOffset` inside the first
    /// page, and the pages `ByteOffset` + `ByteCount` span (wdm.h
    /// `ADDRESS_AND_SIZE_TO_SPAN_PAGES`) present in `pfns`. Keeps only those entries.
    pub(crate) fn new(
        pfns: &'a [PFN_NUMBER],
        byte_offset: u32,
        byte_count: u32,
    ) -> Result<Self, Status> {
        let byte_offset = u64::from(byte_offset);
        let byte_count = u64::from(byte_count);
        if byte_offset >= PAGE {
            return Err(status::INVALID_PARAMETER);
        }
        let span = byte_offset
            .checked_add(byte_count)
            .map(|end| end.div_ceil(PAGE))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or(status::INVALID_PARAMETER)?;
        let pfns = pfns.get(..span).ok_or(status::INVALID_PARAMETER)?;
        Ok(Self {
            pfns,
            byte_offset,
            byte_count,
        })
    }

    /// The paging location `bytes` long that starts `page_offset` pages into the MDL's
    /// buffer (`MdlOffset`: "MmGetMdlPfnArray(pMdl)[MdlOffset]" is its first page). It must
    /// end inside `ByteCount`.
    pub(crate) fn range(&self, page_offset: u32, bytes: u64) -> Result<Pages<'a>, Status> {
        let bad = status::INVALID_PARAMETER;
        let skip = u64::from(page_offset).checked_mul(PAGE).ok_or(bad)?;
        let start = self.byte_offset.checked_add(skip).ok_or(bad)?;
        let end = start.checked_add(bytes).ok_or(bad)?;
        if end > self.byte_offset.saturating_add(self.byte_count) {
            return Err(bad);
        }
        Ok(Pages {
            pfns: self.pfns,
            start,
        })
    }
}

impl<'a> MdlPages<'a> {
    /// The page numbers of `count` whole pages from page `first` of the MDL (what
    /// MAP_APERTURE_SEGMENT maps: `MmGetMdlPfnArray(pMdl)[MdlOffset]` onwards). They must be
    /// pages `ByteOffset` + `ByteCount` span.
    pub(crate) fn frames(&self, first: u32, count: u64) -> Result<&'a [PFN_NUMBER], Status> {
        let bad = status::INVALID_PARAMETER;
        let start = usize::try_from(first).map_err(|_| bad)?;
        let n = usize::try_from(count).map_err(|_| bad)?;
        let end = start.checked_add(n).ok_or(bad)?;
        self.pfns.get(start..end).ok_or(bad)
    }
}

/// A byte range of system memory given page by page: byte `p` of the range is byte
/// `(start + p) % 4096` of page `pfns[(start + p) / 4096]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pages<'a> {
    pub pfns: &'a [PFN_NUMBER],
    pub start: u64,
}

impl Pages<'_> {
    /// The bus address of byte `pos` and how many bytes from there are physically
    /// contiguous, at most `want`. `None` past the array or on overflow.
    pub fn at(&self, pos: u64, want: u64) -> Option<(u64, u64)> {
        let abs = self.start.checked_add(pos)?;
        let mut i = usize::try_from(abs / PAGE).ok()?;
        let off = abs % PAGE;
        let pfn = *self.pfns.get(i)?;
        let addr = pfn.checked_mul(PAGE)?.checked_add(off)?;
        let mut run = PAGE.saturating_sub(off);
        let mut expect = pfn.checked_add(1);
        // Consecutive page numbers are one run: one packet instead of one per page.
        while run < want {
            i = i.checked_add(1)?;
            match self.pfns.get(i) {
                Some(&p) if Some(p) == expect => {
                    run = run.saturating_add(PAGE);
                    expect = p.checked_add(1);
                }
                _ => break,
            }
        }
        Some((addr, run.min(want)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An MDL whose ByteCount spans more pages than its Size covers is refused.
    #[test]
    fn mdl_bytecount_past_pfn_array_is_refused() {
        let pfns = [0x100u64, 0x200];
        assert!(MdlPages::new(&pfns, 0, 2 * 4096).is_ok());
        assert_eq!(
            MdlPages::new(&pfns, 0, 2 * 4096 + 8).err(),
            Some(status::INVALID_PARAMETER)
        );
        assert_eq!(
            MdlPages::new(&pfns, 8, 2 * 4096).err(),
            Some(status::INVALID_PARAMETER),
            "ByteOffset pushes the span onto a third page"
        );
        assert_eq!(
            MdlPages::new(&pfns, 4096, 8).err(),
            Some(status::INVALID_PARAMETER),
            "ByteOffset is inside the first page"
        );
        assert_eq!(
            MdlPages::new(&pfns, 0, u32::MAX).err(),
            Some(status::INVALID_PARAMETER)
        );
    }

    /// A range past ByteCount (through MdlOffset or the size) is refused.
    #[test]
    fn mdl_range_stays_inside_bytecount() {
        let pfns = [0x100u64, 0x200, 0x300];
        let m = MdlPages::new(&pfns, 0, 3 * 4096).unwrap();
        assert_eq!(m.range(1, 2 * 4096).unwrap().start, 4096);
        assert!(m.range(1, 2 * 4096 + 8).is_err());
        assert!(m.range(3, 8).is_err());
        assert!(m.range(u32::MAX, 8).is_err());
    }

    /// A header read from memory, with the array bounded by `Size`.
    #[test]
    fn mdl_read_bounds_the_array_by_size() {
        // Header (6 words) + 2 PFNs; ByteCount claims 3 pages.
        let mut words = [0u64; 8];
        words[1] = u64::from(48u16 + 16); // Size; MdlFlags 0
        words[5] = 3 * 4096; // ByteCount; ByteOffset 0
        words[6] = 0x10;
        words[7] = 0x20;
        // `w` holds a header and the 16 bytes of array its Size declares (or less: Size is
        // what bounds the read).
        let call = crate::args::Call::for_test();
        let read = |w: &mut [u64; 8]| {
            call.mdl_pages(w.as_mut_ptr().cast::<rvgpu_ddi::mdl::MDL>())
                .map(|m| m.pfns.to_vec())
        };
        assert!(read(&mut words).is_err());
        words[5] = 2 * 4096;
        assert_eq!(read(&mut words).unwrap(), vec![0x10, 0x20]);
        words[1] = 40; // Size smaller than the header
        assert!(read(&mut words).is_err());
        // Null is refused before any read.
        assert!(call.mdl_pages(core::ptr::null_mut()).is_err());
    }

    #[test]
    fn pages_merge_consecutive_frames_and_split_the_rest() {
        let pfns = [0x10u64, 0x11, 0x40, 0x12];
        let p = Pages {
            pfns: &pfns,
            start: 8,
        };
        assert_eq!(p.at(0, u64::MAX), Some((0x10_008, 2 * 4096 - 8)));
        assert_eq!(p.at(2 * 4096 - 8, u64::MAX), Some((0x40_000, 4096)));
        assert_eq!(p.at(3 * 4096 - 8, 16), Some((0x12_000, 16)));
        assert_eq!(p.at(4 * 4096 - 8, 8), None);
    }
}
