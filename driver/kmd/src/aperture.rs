//! The aperture segment's page table (docs/memory.md "The aperture").
//!
//! VidMm owns the aperture's address range: it picks ranges of segment 1 itself and asks the
//! driver to back them with an MDL's pages (`DXGK_OPERATION_MAP_APERTURE_SEGMENT`) or to point
//! them at its dummy page (`DXGK_OPERATION_UNMAP_APERTURE_SEGMENT`); \[D\] dxgmms2
//! `VIDMM_APERTURE_SEGMENT::MapApertureRange` → `VIDMM_GLOBAL::MapVideoApertureSegmentInternal`
//! and `UnmapApertureRange` → `UnmapVideoApertureSegmentInternal`. An aperture offset is
//! therefore no bus address: every segment-1 address the OS hands the KMD (a TRANSFER or FILL
//! side, an UPDATEPAGETABLE entry with `Segment` = the aperture, a DMA buffer) is translated
//! here, page by page.
//!
//! The device has no GART: the paging node's queue and the GPU MMU reach system memory by
//! bus address, and every aperture address the device ever sees has been translated by the
//! KMD when it built the packet or entry. So MAP and UNMAP change only this table and put no
//! packets in the paging buffer; they take effect at once, which is safe because VidMm
//! issues them only for ranges no queued operation still uses (it waits for the allocation
//! to be idle before an unmap, \[D\] `UnmapApertureRange` → `VerifyAllocationIsIdle`).
//!
//! One entry per aperture page, an `AtomicU32` (page numbers fit: system memory ends at
//! `SYSMEM_LIMIT` = 2^40, 28 bits of page number): 0 = never mapped, `MAPPED | pfn`, or
//! `DUMMY | pfn` after an unmap. A dummy entry is recorded (the range points where VidMm
//! said) but never translated: mapping VidMm's shared dummy page into a process or copying
//! to it would leak between processes, so a use of an unmapped page is refused.

use alloc::boxed::Box;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::kmem::{self, NoMemory};
use crate::platform::Platform;
use crate::status::{self, Status};

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;
const MAPPED: u32 = 1 << 31;
const DUMMY: u32 = 1 << 30;
const PFN_MASK: u32 = DUMMY - 1;

/// The aperture's pages and what each one maps.
pub struct Aperture {
    pages: Box<[AtomicU32]>,
}

impl core::fmt::Debug for Aperture {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Aperture({} pages)", self.pages.len())
    }
}

/// A page number the table can hold (system memory only, below `SYSMEM_LIMIT`).
fn frame(pfn: u64) -> Result<u32, Status> {
    let max = rvgpu_hw::addr::SYSMEM_LIMIT / PAGE;
    if pfn == 0 || pfn >= max {
        // Page 0 is the null address: no DMA buffer or copy may use it (paging.rs).
        return Err(status::INVALID_PARAMETER);
    }
    u32::try_from(pfn)
        .ok()
        .filter(|&p| p & !PFN_MASK == 0)
        .ok_or(status::INVALID_PARAMETER)
}

impl Aperture {
    /// A table of `bytes / 4096` unmapped pages, allocated fallibly (adapter start).
    pub fn try_new<P: Platform>(bytes: u64) -> Result<Self, NoMemory> {
        let n = usize::try_from(bytes / PAGE).map_err(|_| NoMemory)?;
        let pages = kmem::try_boxed_slice::<P, _>(n, |_| AtomicU32::new(0))?;
        Ok(Self { pages })
    }

    /// Bytes of aperture the table covers.
    pub fn size(&self) -> u64 {
        u64::try_from(self.pages.len())
            .unwrap_or(0)
            .saturating_mul(PAGE)
    }

    /// The entries `[first, first + count)`, or `INVALID_PARAMETER` when any lies past the
    /// aperture (or the range is empty or wraps).
    fn range(&self, first: u64, count: u64) -> Result<&[AtomicU32], Status> {
        let bad = status::INVALID_PARAMETER;
        if count == 0 {
            return Err(bad);
        }
        let end = first.checked_add(count).ok_or(bad)?;
        let start = usize::try_from(first).map_err(|_| bad)?;
        let end = usize::try_from(end).map_err(|_| bad)?;
        self.pages.get(start..end).ok_or(bad)
    }

    /// MAP_APERTURE_SEGMENT: aperture pages `[first, first + pfns.len())` map `pfns` in
    /// order. Everything is checked before any entry changes.
    pub fn map(&self, first: u64, pfns: &[u64]) -> Result<(), Status> {
        let count = u64::try_from(pfns.len()).map_err(|_| status::INVALID_PARAMETER)?;
        let slots = self.range(first, count)?;
        for &p in pfns {
            frame(p)?;
        }
        for (slot, &p) in slots.iter().zip(pfns) {
            // Checked above; `frame` is pure.
            let f = frame(p)?;
            slot.store(MAPPED | f, Ordering::Release);
        }
        Ok(())
    }

    /// UNMAP_APERTURE_SEGMENT: aperture pages `[first, first + count)` point at the dummy
    /// page at bus address `dummy` (recorded, never translated).
    pub fn unmap(&self, first: u64, count: u64, dummy: u64) -> Result<(), Status> {
        let slots = self.range(first, count)?;
        if !dummy.is_multiple_of(PAGE) {
            return Err(status::INVALID_PARAMETER);
        }
        let f = frame(dummy / PAGE)?;
        for slot in slots {
            slot.store(DUMMY | f, Ordering::Release);
        }
        Ok(())
    }

    /// The bus address of aperture offset `offset` and how many bytes from there are mapped
    /// to physically contiguous pages, at most `want`. `None` when the page is not mapped
    /// (never mapped, or unmapped to the dummy page) or lies past the aperture.
    pub fn at(&self, offset: u64, want: u64) -> Option<(u64, u64)> {
        let mut i = usize::try_from(offset / PAGE).ok()?;
        let within = offset % PAGE;
        let first = self.mapped(i)?;
        let addr = u64::from(first).checked_mul(PAGE)?.checked_add(within)?;
        let mut run = PAGE.saturating_sub(within);
        let mut expect = first.checked_add(1);
        // Consecutive page numbers are one run: one packet instead of one per page.
        while run < want {
            i = i.checked_add(1)?;
            match self.mapped(i) {
                Some(p) if Some(p) == expect => {
                    run = run.saturating_add(PAGE);
                    expect = p.checked_add(1);
                }
                _ => break,
            }
        }
        Some((addr, run.min(want)))
    }

    /// The bus address of `[offset, offset + bytes)` when all of it is mapped to one
    /// physically contiguous run (a DMA buffer, a page-table entry's page).
    pub fn contiguous(&self, offset: u64, bytes: u64) -> Option<u64> {
        let (addr, run) = self.at(offset, bytes)?;
        (run == bytes).then_some(addr)
    }

    fn mapped(&self, i: usize) -> Option<u32> {
        let e = self.pages.get(i)?.load(Ordering::Acquire);
        (e & MAPPED != 0).then_some(e & PFN_MASK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmem::Host;

    fn table(pages: u64) -> Aperture {
        Aperture::try_new::<Host>(pages.saturating_mul(PAGE)).unwrap()
    }

    /// A mapped aperture page translates to the MDL's page, not to the aperture
    /// offset; runs split where the pages are not contiguous.
    #[test]
    fn aperture_offsets_translate_through_the_table() {
        let ap = table(16);
        ap.map(4, &[0x300, 0x301, 0x100]).unwrap();
        assert_eq!(
            ap.at(4 * PAGE + 8, u64::MAX),
            Some((0x30_0008, 2 * PAGE - 8))
        );
        assert_eq!(ap.at(6 * PAGE, u64::MAX), Some((0x10_0000, PAGE)));
        assert_eq!(ap.at(6 * PAGE, 16), Some((0x10_0000, 16)));
        assert_eq!(ap.contiguous(4 * PAGE, 2 * PAGE), Some(0x30_0000));
        assert_eq!(ap.contiguous(4 * PAGE, 3 * PAGE), None);
        assert_eq!(ap.at(3 * PAGE, 8), None, "never mapped");
        assert_eq!(ap.at(4 * PAGE, 8).map(|r| r.0 == 4 * PAGE), Some(false));
    }

    /// UNMAP points the range at the dummy page, and nothing translates there.
    #[test]
    fn aperture_unmap_refuses_later_use() {
        let ap = table(8);
        ap.map(0, &[0x10, 0x11]).unwrap();
        ap.unmap(1, 1, 0x5000).unwrap();
        assert_eq!(ap.at(0, u64::MAX), Some((0x10_000, PAGE)));
        assert_eq!(ap.at(PAGE, 8), None);
        assert!(
            ap.unmap(1, 1, 0x5008).is_err(),
            "dummy page not page-aligned"
        );
    }

    /// Ranges past the aperture, empty ranges and page numbers outside system
    /// memory are refused with nothing changed.
    #[test]
    fn aperture_malformed_map_is_refused() {
        let ap = table(8);
        assert!(ap.map(7, &[0x10, 0x11]).is_err(), "past the end");
        assert_eq!(ap.at(7 * PAGE, 8), None, "nothing written");
        assert!(ap.map(u64::MAX, &[0x10]).is_err());
        assert!(ap.map(0, &[]).is_err());
        assert!(ap.map(0, &[0x10, 0]).is_err(), "page 0");
        assert!(ap.map(0, &[0x10, 1 << 28]).is_err(), "past system memory");
        assert_eq!(ap.at(0, 8), None, "a refused map writes nothing");
        assert!(ap.unmap(0, 9, 0x1000).is_err());
        assert!(ap.unmap(0, 0, 0x1000).is_err());
    }
}
