//! VidMm's aperture segment (docs/memory.md "The aperture").
//!
//! Windows' VidMm allocates ranges of an aperture segment itself and has the driver back them
//! with an MDL's pages: `DXGK_OPERATION_MAP_APERTURE_SEGMENT` before use,
//! `DXGK_OPERATION_UNMAP_APERTURE_SEGMENT` (the range then points at VidMm's dummy page) when
//! the range is released ([D] dxgmms2 `VIDMM_APERTURE_SEGMENT::MapApertureRange` →
//! `VIDMM_GLOBAL::MapVideoApertureSegmentInternal`, `UnmapApertureRange` →
//! `UnmapVideoApertureSegmentInternal`; callers `CommitResource`, `MapPagingBuffer`,
//! `MapTemporaryResource`). The fields this VidMm fills are the ones those functions fill:
//! `hDevice`, `hAllocation`, `SegmentId`, `OffsetInPages`, `NumberOfPages`, `pMdl`,
//! `Flags.CacheCoherent`, and `MdlOffset` 0 (`MapVideoApertureSegmentInternal` leaves it 0).
//!
//! An aperture offset is not a bus address. This VidMm hands out offsets from
//! [`FIRST_OFFSET`] up to [`SYSMEM_START`](rvgpu_device::memory::SYSMEM_START), where no system
//! memory is, so a driver that reads an aperture address as a bus address reaches nothing.
//!
//! Allocations in system memory are *not* put here: without `AccessedPhysically` they are
//! mapped only by GPU page tables with `Segment` 0 ("GPU segments"; `vidmm::residency`). What
//! uses the aperture today is VidMm's own access to system pages through paging operations
//! that have no MDL arm: a FILL of an allocation in system memory maps the pages temporarily
//! (as `MapTemporaryResource` does for `BeginTemporaryResourceAccess`), fills them through
//! the aperture and unmaps them ([`crate::vidmm::paging`]).

use std::collections::BTreeMap;

use rvgpu_ddi::basic::*;
use rvgpu_ddi::memory::DXGK_SEGMENTFLAGS;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::tdr::*;

use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::dxgkrnl::adapter::AdapterShared;
use crate::machine::Machine;
use crate::ob::KmtHandle;
use crate::vidmm::mdl::Mdl;

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// The first aperture offset VidMm hands out: neither 0 nor any bus address.
pub const FIRST_OFFSET: u64 = 0x0123_5000;

/// VidMm's book of the aperture: free ranges (offset → bytes), the dummy page, and which
/// bus page VidMm had the driver map at each mapped aperture page (the oracle its strict
/// page-table walk checks a `Segment` = aperture entry against).
#[derive(Debug, Default)]
pub struct Ranges {
    free: Option<BTreeMap<u64, u64>>,
    dummy: Option<u64>,
    segment: Option<u32>,
    mapped: BTreeMap<u64, u64>,
}

impl Ranges {
    /// The bus address VidMm mapped at `offset` of aperture segment `segment`, if it did.
    pub(crate) fn bus_of(&self, segment: u32, offset: u64) -> Option<u64> {
        if self.segment != Some(segment) {
            return None;
        }
        let page = offset - offset % PAGE;
        self.mapped.get(&page).map(|b| b + offset % PAGE)
    }

    /// Whether `segment` is the aperture VidMm mapped pages in.
    pub(crate) fn is_aperture(&self, segment: u32) -> bool {
        self.segment == Some(segment)
    }

    fn free_map(&mut self, size: u64) -> &mut BTreeMap<u64, u64> {
        self.free.get_or_insert_with(|| {
            let end = size.min(rvgpu_device::memory::SYSMEM_START);
            let mut m = BTreeMap::new();
            if end > FIRST_OFFSET {
                m.insert(FIRST_OFFSET, end - FIRST_OFFSET);
            }
            m
        })
    }

    /// First fit of `bytes` (whole pages).
    fn alloc(&mut self, size: u64, bytes: u64) -> Option<u64> {
        let free = self.free_map(size);
        let (&start, &len) = free.iter().find(|(_, &len)| len >= bytes)?;
        free.remove(&start);
        if len > bytes {
            free.insert(start + bytes, len - bytes);
        }
        Some(start)
    }

    fn release(&mut self, size: u64, start: u64, bytes: u64) {
        let free = self.free_map(size);
        let (mut start, mut len) = (start, bytes);
        if let Some(next) = free.remove(&(start + len)) {
            len += next;
        }
        if let Some((&prev, &plen)) = free.range(..start).next_back() {
            if prev + plen == start {
                free.remove(&prev);
                start = prev;
                len += plen;
            }
        }
        free.insert(start, len);
    }
}

/// The aperture segment's id, size and whether it is cache-coherent.
fn aperture(a: &AdapterShared) -> Result<(u32, u64, bool), SimError> {
    let model = lock(&a.mm.memory_model);
    (1..=model.segments.len() as u32)
        .find_map(|id| {
            let s = model.segment(id)?;
            s.Flags.is_set(DXGK_SEGMENTFLAGS::Aperture).then(|| {
                (
                    id,
                    s.Size as u64,
                    s.Flags.is_set(DXGK_SEGMENTFLAGS::CacheCoherent),
                )
            })
        })
        .ok_or_else(|| SimError::Simulation("no aperture segment".into()))
}

/// A range of the aperture VidMm mapped: its segment, offset and pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApertureRange {
    pub segment: u32,
    pub offset: u64,
    pub pages: u64,
}

impl Machine {
    /// VidMm maps the system pages `pages` (bus addresses, page-aligned) into a range of the
    /// aperture it allocates: `DXGK_OPERATION_MAP_APERTURE_SEGMENT` through the driver's
    /// paging buffers on the paging node, for allocation `kmd` of device `device` (0, 0: one
    /// of VidMm's own). On failure the range goes back and nothing stays mapped.
    pub(crate) fn aperture_map(
        &self,
        a: &AdapterShared,
        pages: &[u64],
        device: usize,
        kmd: usize,
        owners: Vec<KmtHandle>,
    ) -> Result<ApertureRange, SimError> {
        let (segment, size, coherent) = aperture(a)?;
        let n = pages.len() as u64;
        let mdl = Mdl::of_pages(pages).ok_or(SimError::DdiFailed(STATUS_INVALID_PARAMETER))?;
        let offset = lock(&a.mm.vidmm)
            .aperture
            .alloc(size, n * PAGE)
            .ok_or(SimError::DdiFailed(STATUS_NO_MEMORY))?;
        let mut op = DXGKARG_BUILDPAGINGBUFFER_0 {
            MapApertureSegment: DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment {
                hDevice: device as HANDLE,
                hAllocation: kmd as HANDLE,
                SegmentId: segment,
                OffsetInPages: (offset / PAGE) as SIZE_T,
                NumberOfPages: n as SIZE_T,
                pMdl: mdl.as_ptr(),
                Flags: DXGK_MAPAPERTUREFLAGS::default()
                    .with(DXGK_MAPAPERTUREFLAGS::CacheCoherent, u32::from(coherent)),
                MdlOffset: 0,
            },
        };
        let node = crate::vidmm::mmu::paging_node(a);
        let r = self.paging_op(
            a,
            node,
            DXGK_OPERATION_MAP_APERTURE_SEGMENT,
            &mut op,
            owners,
        );
        drop(mdl);
        let mut v = lock(&a.mm.vidmm);
        if let Err(e) = r {
            v.aperture.release(size, offset, n * PAGE);
            return Err(e);
        }
        v.aperture.segment = Some(segment);
        for (i, &bus) in pages.iter().enumerate() {
            v.aperture.mapped.insert(offset + i as u64 * PAGE, bus);
        }
        Ok(ApertureRange {
            segment,
            offset,
            pages: n,
        })
    }

    /// VidMm releases `range`: `DXGK_OPERATION_UNMAP_APERTURE_SEGMENT` points it at VidMm's
    /// dummy page, then the range is free for reuse.
    pub(crate) fn aperture_unmap(
        &self,
        a: &AdapterShared,
        range: ApertureRange,
        device: usize,
        kmd: usize,
        owners: Vec<KmtHandle>,
    ) -> Result<(), SimError> {
        let (_, size, _) = aperture(a)?;
        let dummy = {
            let mut v = lock(&a.mm.vidmm);
            match v.aperture.dummy {
                Some(d) => d,
                None => {
                    let p = a
                        .device
                        .memory()
                        .alloc_system(PAGE, PAGE)
                        .ok_or(SimError::DdiFailed(STATUS_NO_MEMORY))?;
                    // Kept for the adapter's life, as VidMm keeps its dummy page.
                    let d = p.bus_addr;
                    std::mem::forget(p);
                    v.aperture.dummy = Some(d);
                    d
                }
            }
        };
        let mut op = DXGKARG_BUILDPAGINGBUFFER_0 {
            UnmapApertureSegment: DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment {
                hDevice: device as HANDLE,
                hAllocation: kmd as HANDLE,
                SegmentId: range.segment,
                OffsetInPages: (range.offset / PAGE) as SIZE_T,
                NumberOfPages: range.pages as SIZE_T,
                DummyPage: LARGE_INTEGER {
                    QuadPart: dummy as i64,
                },
            },
        };
        let node = crate::vidmm::mmu::paging_node(a);
        self.paging_op(
            a,
            node,
            DXGK_OPERATION_UNMAP_APERTURE_SEGMENT,
            &mut op,
            owners,
        )?;
        let mut v = lock(&a.mm.vidmm);
        for i in 0..range.pages {
            v.aperture.mapped.remove(&(range.offset + i * PAGE));
        }
        v.aperture.release(size, range.offset, range.pages * PAGE);
        Ok(())
    }

    /// Tests: VidMm maps the system pages `pages` into an aperture range of adapter `i`,
    /// as for a range it uses itself (no device, no allocation).
    pub fn aperture_map_pages(&self, i: usize, pages: &[u64]) -> Result<ApertureRange, SimError> {
        let a = self.adapter_shared(i)?.clone();
        self.aperture_map(&a, pages, 0, 0, Vec::new())
    }

    /// Tests: VidMm unmaps `range` of adapter `i` ([`Machine::aperture_map_pages`]).
    pub fn aperture_unmap_range(&self, i: usize, range: ApertureRange) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?.clone();
        self.aperture_unmap(&a, range, 0, 0, Vec::new())
    }

    /// Tests: VidMm maps aperture `range` at a new VA of process `p`, with entries whose
    /// `Segment` is the aperture and whose page addresses are aperture offsets, as Windows
    /// maps an allocation resident in an aperture segment (one with `AccessedPhysically`,
    /// which rvgpu's KMD never asks for). Returns the VA. The driver must translate each
    /// entry through its aperture table; VidMm's strict walk checks the result against the
    /// pages it had mapped there.
    pub fn map_aperture_range_into(
        &self,
        p: &crate::ums::UmsProcess,
        range: ApertureRange,
    ) -> Result<u64, SimError> {
        let a = self.adapter_shared(p.adapter)?.clone();
        let va = self.vidmm_reserve(&a, p.pid, range.pages * PAGE)?;
        let phys: Vec<crate::vidmm::gpuva::Phys> = (0..range.pages)
            .map(|i| (range.segment, range.offset + i * PAGE))
            .collect();
        let tag = crate::vidmm::mmu::LeafTag {
            handle: 0,
            base_va: va,
            native_fence: false,
            large_pages: false,
        };
        self.vidmm_map_at(
            &a,
            p.pid,
            va,
            &phys,
            crate::vidmm::gpuva::MapAttrs::default(),
            tag,
        )?;
        Ok(va)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_start_away_from_zero_and_below_system_memory() {
        let mut r = Ranges::default();
        let size = 1 << 30;
        let a = r.alloc(size, 2 * PAGE).unwrap();
        assert_eq!(a, FIRST_OFFSET);
        let b = r.alloc(size, PAGE).unwrap();
        assert_eq!(b, FIRST_OFFSET + 2 * PAGE);
        r.release(size, a, 2 * PAGE);
        assert_eq!(r.alloc(size, PAGE), Some(FIRST_OFFSET));
        let all = rvgpu_device::memory::SYSMEM_START - FIRST_OFFSET;
        assert_eq!(r.alloc(size, all), None, "never reaches system memory");
    }
}
