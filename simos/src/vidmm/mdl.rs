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
        let header = MDL {
            Next: std::ptr::null_mut(),
            Size: size,
            MdlFlags: MDL_PAGES_LOCKED,
            Process: std::ptr::null_mut(),
            MappedSystemVa: std::ptr::null_mut(),
            StartVa: std::ptr::null_mut(),
            ByteCount: byte_count,
            ByteOffset: byte_offset,
        };
        // SAFETY: `words` has at least HEADER_WORDS (48 bytes = size_of::<MDL>()) 8-aligned,
        // writable words; MDL is plain data.
        unsafe { std::ptr::write(words.as_mut_ptr().cast::<MDL>(), header) };
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
        // SAFETY: `m` holds a whole header.
        let h = unsafe { std::ptr::read(m.as_ptr()) };
        assert_eq!(h.Size, 48 + 16);
        assert_eq!((h.ByteCount, h.ByteOffset), (2 * 4096, 0));
        assert_eq!(&m.words[HEADER_WORDS..], &[0x1_0000, 0x1_0002]);
        assert!(Mdl::of_pages(&vec![0x1000; MAX_MDL_PAGES + 1]).is_none());
    }
}
