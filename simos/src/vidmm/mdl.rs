//! MDLs the simulated VidMm builds to name system memory in paging operations
//! (docs/memory.md "System memory and MDLs"): real MDL bytes (the wdm.h x64 header, then one
//! 64-bit page number per page) in memory the driver reads during `DxgkDdiBuildPagingBuffer`.
//!
//! Page numbers are bus addresses / 4096: the simulated platform has no DMA remapping, so the
//! physical page the memory manager would list is the page the device reaches.

use rvgpu_ddi::mdl::{MDL, MDL_PAGES_LOCKED, MDL_PFN_ARRAY_OFFSET, PMDL};

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// Header words before the page array.
const HEADER_WORDS: usize = MDL_PFN_ARRAY_OFFSET / 8;

/// The most pages one MDL can list: its `Size` (header + array, in bytes) is a CSHORT.
pub const MAX_MDL_PAGES: usize = (i16::MAX as usize - MDL_PFN_ARRAY_OFFSET) / 8;

/// The header offsets the words above are written at: `Size` and `MdlFlags` in word 1,
/// `ByteCount` and `ByteOffset` in word 5, the pointers in words 0, 2, 3 and 4.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<MDL>() == HEADER_WORDS * 8);
    assert!(offset_of!(MDL, Next) == 0 && offset_of!(MDL, Size) == 8);
    assert!(offset_of!(MDL, MdlFlags) == 10 && offset_of!(MDL, Process) == 16);
    assert!(offset_of!(MDL, MappedSystemVa) == 24 && offset_of!(MDL, StartVa) == 32);
    assert!(offset_of!(MDL, ByteCount) == 40 && offset_of!(MDL, ByteOffset) == 44);
};

/// One MDL, owned by VidMm for the duration of a paging operation.
#[derive(Debug)]
pub struct Mdl {
    words: Box<[u64]>,
}

impl Mdl {
    /// An MDL of whole pages at the bus addresses `pages` (each page aligned), `ByteOffset`
    /// 0, `ByteCount` all of them, locked. `None` for more than [`MAX_MDL_PAGES`] pages.
    pub fn of_pages(pages: &[u64]) -> Option<Self> {
        if pages.len() > MAX_MDL_PAGES {
            return None;
        }
        let bytes = u32::try_from(pages.len() as u64 * PAGE).ok()?;
        let size = MDL_PFN_ARRAY_OFFSET + std::mem::size_of_val(pages);
        let pfns: Vec<u64> = pages.iter().map(|p| p / PAGE).collect();
        Some(Self::raw(&pfns, i16::try_from(size).ok()?, bytes, 0))
    }

    /// An MDL with exactly these header values over `pfns` (tests build malformed ones: a
    /// `Size` that does not cover `ByteCount`, a `ByteOffset` past the first page …). The
    /// array holds `pfns` whatever `size` says.
    pub fn raw(pfns: &[u64], size: i16, byte_count: u32, byte_offset: u32) -> Self {
        let mut words = vec![0u64; HEADER_WORDS + pfns.len()].into_boxed_slice();
        if let Some(array) = words.get_mut(HEADER_WORDS..) {
            array.copy_from_slice(pfns);
        }
        // The header as little-endian words (checked below the imports): `Next`, `Process`,
        // `MappedSystemVa` and `StartVa` NULL.
        if let Some(h) = words.get_mut(..HEADER_WORDS) {
            h[1] = u64::from(size as u16) | u64::from(MDL_PAGES_LOCKED as u16) << 16;
            h[5] = u64::from(byte_count) | u64::from(byte_offset) << 32;
        }
        Self { words }
    }

    /// The pointer VidMm puts in `pMdl`. Valid while `self` lives.
    pub fn as_ptr(&self) -> PMDL {
        self.words.as_ptr().cast_mut().cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn of_pages_writes_the_wdm_header_and_page_numbers() {
        let m = Mdl::of_pages(&[0x1000_0000, 0x1000_2000]).unwrap();
        let w = &m.words;
        assert_eq!(w[1] as u16 as i16, 48 + 16, "Size");
        assert_eq!((w[1] >> 16) as u16 as i16, MDL_PAGES_LOCKED, "MdlFlags");
        assert_eq!((w[5] as u32, (w[5] >> 32) as u32), (2 * 4096, 0));
        assert_eq!([w[0], w[2], w[3], w[4]], [0; 4], "NULL pointers");
        assert_eq!(&m.words[HEADER_WORDS..], &[0x1_0000, 0x1_0002]);
        assert!(Mdl::of_pages(&vec![0x1000; MAX_MDL_PAGES + 1]).is_none());
    }
}
