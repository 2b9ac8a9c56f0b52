//! VidMm's aperture segment (docs/memory.md "The aperture").
//!
//! Windows' VidMm allocates ranges of an aperture segment itself and has the driver back them
//! with an MDL's pages: `DXGK_OPERATION_MAP_APERTURE_SEGMENT` before use,
//! `DXGK_OPERATION_UNMAP_APERTURE_SEGMENT` (the range then points at VidMm's dummy page) when
//! the range is released (\[D\] dxgmms2 `VIDMM_APERTURE_SEGMENT::MapApertureRange` →
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

use rvgpu_ddi::basic::*;
use rvgpu_ddi::memory::DXGK_SEGMENTFLAGS;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::tdr::*;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
pub use crate::state::vidmm::mmu::{Ranges, FIRST_OFFSET};
use crate::vidmm::host::Host;
use crate::vidmm::mdl::Mdl;

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

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
        .ok_or(SimError::Internal("no aperture segment"))
}

/// A range of the aperture VidMm mapped: its segment, offset and pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApertureRange {
    pub segment: u32,
    pub offset: u64,
    pub pages: u64,
}

/// VidMm maps the system pages `pages` (bus addresses, page-aligned) into a range of the
/// aperture it allocates: `DXGK_OPERATION_MAP_APERTURE_SEGMENT` through the driver's
/// paging buffers on the paging node, for allocation `kmd` of device `device` (0, 0: one
/// of VidMm's own). On failure the range goes back and nothing stays mapped.
pub(crate) fn aperture_map(
    host: &dyn Host,
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
    let node = crate::vidmm::paging::paging_node(a);
    let r = crate::vidmm::paging::paging_op(
        host,
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
    host: &dyn Host,
    a: &AdapterShared,
    range: ApertureRange,
    device: usize,
    kmd: usize,
    owners: Vec<KmtHandle>,
) -> Result<(), SimError> {
    let (_, size, _) = aperture(a)?;
    let dummy = dummy_page(a)?;
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
    let node = crate::vidmm::paging::paging_node(a);
    crate::vidmm::paging::paging_op(
        host,
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

/// VidMm's dummy page, the one every unmapped aperture page points at: made at the first
/// unmap and kept for the adapter's life, as VidMm keeps its own.
pub(crate) fn dummy_page(a: &AdapterShared) -> Result<u64, SimError> {
    let mut v = lock(&a.mm.vidmm);
    if let Some(d) = v.aperture.dummy {
        return Ok(d);
    }
    let p = a
        .device
        .memory()
        .alloc_system(PAGE, PAGE)
        .ok_or(SimError::DdiFailed(STATUS_NO_MEMORY))?;
    let d = p.bus_addr;
    std::mem::forget(p);
    v.aperture.dummy = Some(d);
    Ok(d)
}

/// VidMm maps aperture `range` at a new VA of process `pid` with aperture-relative entries
/// (the rules: `Machine::map_aperture_range_into`). Returns the VA.
pub(crate) fn map_aperture_range_into(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    range: ApertureRange,
) -> Result<u64, SimError> {
    let va = crate::vidmm::mmu::vidmm_reserve(a, pid, range.pages * PAGE)?;
    let phys: Vec<crate::state::vidmm::gpuva::Phys> = (0..range.pages)
        .map(|i| (range.segment, range.offset + i * PAGE))
        .collect();
    let tag = crate::vidmm::mmu::LeafTag {
        handle: 0,
        base_va: va,
        large_pages: false,
        repeat_page: None,
        driver_protection: 0,
    };
    crate::vidmm::mmu::vidmm_map_at(
        host,
        a,
        pid,
        va,
        &phys,
        crate::state::vidmm::gpuva::MapAttrs::default(),
        tag,
    )?;
    Ok(va)
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
