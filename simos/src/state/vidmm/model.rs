//! What VidMm knows of the adapter's memory once it has started: the [`MemoryModel`] the
//! rest of VidMm builds address spaces from, filled by VidMm's initialisation
//! ([`crate::vidmm::init`]).

use rvgpu_ddi::memory::*;

use crate::state::vidmm::gpuva::Geometry;

/// What VidMm knows of the adapter's memory after start.
#[derive(Clone, Debug, Default)]
pub struct MemoryModel {
    /// The segment descriptors, id `i + 1` at index `i`.
    pub segments: Vec<DXGK_SEGMENTDESCRIPTOR4>,
    pub paging_buffer_segment: u32,
    pub paging_buffer_size: u32,
    /// GpuMmu caps and level descriptors (level 0 = leaf first), when the adapter claims the
    /// GpuMmu model.
    pub gpummu: Option<(DXGK_GPUMMUCAPS, Vec<DXGK_PAGE_TABLE_LEVEL_DESC>)>,
}

/// Where VidMm may map large pages, from the driver's GpuMmu caps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LargePages {
    /// Local, non-aperture segments as `(id, BaseAddress)` (an aperture segment's pages are
    /// scattered system pages).
    pub local: Vec<(u32, u64)>,
    /// System memory too (`SysMemLargePageSupported`).
    pub system: bool,
    /// The page's address need not be aligned to the large page
    /// (`AllowNonAlignedLargePageAddress`).
    pub unaligned: bool,
}

impl LargePages {
    /// Whether a large page of `size` bytes may start at `p`.
    pub fn may_start(&self, (segment, address): (u32, u64), size: u64) -> bool {
        let at = if segment == 0 {
            if !self.system {
                return false;
            }
            Some(address)
        } else {
            self.local
                .iter()
                .find(|(id, _)| *id == segment)
                .map(|(_, base)| rvgpu_hw::addr::VRAM_BASE + base + address)
        };
        at.is_some_and(|pa| self.unaligned || pa.is_multiple_of(size))
    }
}

impl MemoryModel {
    /// The page-table geometry VidMm builds trees with, if the adapter is GpuMmu and its
    /// levels are the uniform kind this VidMm supports.
    pub fn geometry(&self) -> Option<Geometry> {
        let (caps, levels) = self.gpummu.as_ref()?;
        let first = levels.first()?;
        let uniform = levels.iter().all(|l| {
            l.PageTableIndexBitCount == first.PageTableIndexBitCount
                && l.PageTableSegmentId == first.PageTableSegmentId
                && l.PageTableSizeInBytes == first.PageTableSizeInBytes
        });
        let need = 8u64 << first.PageTableIndexBitCount;
        if !uniform || u64::from(first.PageTableSizeInBytes) < need {
            return None;
        }
        Some(Geometry {
            levels: u8::try_from(caps.PageTableLevelCount).ok()?,
            index_bits: first.PageTableIndexBitCount,
            table_bytes: u64::from(first.PageTableSizeInBytes),
            segment: first.PageTableSegmentId,
            page: 4096,
        })
    }

    /// Where VidMm may map a large page (`DXGK_PTE::LargePage`, which may be set only when
    /// the driver reports `DXGK_GPUMMUCAPS::LargePageSupported`); `None`: nowhere.
    pub fn large_pages(&self) -> Option<LargePages> {
        let (caps, _) = self.gpummu.as_ref()?;
        let f = caps.Flags;
        if f.get(DXGK_GPUMMUCAPS_FLAGS::LargePageSupported) == 0 {
            return None;
        }
        let local = (1..=self.segments.len() as u32)
            .filter_map(|id| {
                let s = self.segment(id)?;
                if s.Flags.is_set(DXGK_SEGMENTFLAGS::Aperture) {
                    return None;
                }
                Some((id, self.segment_base(id)?))
            })
            .collect();
        Some(LargePages {
            local,
            system: f.get(DXGK_GPUMMUCAPS_FLAGS::SysMemLargePageSupported) != 0,
            unaligned: f.get(DXGK_GPUMMUCAPS_FLAGS::AllowNonAlignedLargePageAddress) != 0,
        })
    }

    /// Segment `id`'s descriptor.
    pub fn segment(&self, id: u32) -> Option<&DXGK_SEGMENTDESCRIPTOR4> {
        self.segments.get(usize::try_from(id).ok()?.checked_sub(1)?)
    }

    /// Segment sets (bit n = segment n + 1, as in `DXGK_ALLOCATIONINFO`) of the aperture
    /// segments and of the cache-coherent ones among them.
    pub fn aperture_sets(&self) -> (u32, u32) {
        let (mut all, mut coherent) = (0u32, 0u32);
        for (i, s) in self.segments.iter().enumerate() {
            let bit = 1u32.checked_shl(i as u32).unwrap_or(0);
            if s.Flags.is_set(DXGK_SEGMENTFLAGS::Aperture) {
                all |= bit;
                if s.Flags.is_set(DXGK_SEGMENTFLAGS::CacheCoherent) {
                    coherent |= bit;
                }
            }
        }
        (all, coherent)
    }

    /// Whether the GPU snoops the CPU's caches, as the driver reported it: its aperture segment
    /// says `CacheCoherent` (AL-06). No aperture (no memory model): coherent, the x86 rule.
    pub fn io_coherent(&self) -> bool {
        self.segments
            .iter()
            .find(|s| s.Flags.is_set(DXGK_SEGMENTFLAGS::Aperture))
            .is_none_or(|s| s.Flags.is_set(DXGK_SEGMENTFLAGS::CacheCoherent))
    }

    /// Segment `id`'s `BaseAddress` (where a local segment starts in VRAM).
    pub fn segment_base(&self, id: u32) -> Option<u64> {
        Some(self.segment(id)?.BaseAddress.get() as u64)
    }
}
