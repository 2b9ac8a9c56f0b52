//! The mappings inside a process's GPU VA ranges: a Map's pages entered (or kept out while
//! its paging is queued), cleared and released through the driver (`vidmm::mmu`), and kept in
//! step with residency (an allocation evicted, placed again or destroyed).

use rvgpu_umd::kmt::MapGpuVa;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::state::vidmm::gpuva::{MapAttrs, Phys};
use crate::state::vidmm::residency::State as Residency;
use crate::state::vidmm::va::UserMap;
use crate::vidmm::host::Host;
use crate::vidmm::leaf::LeafTag;

use super::base::{bad, pages_at, tag, PAGE, PROTECTION_EXECUTE, PROTECTION_WRITE};

/// The mapping step of [`gpu_va_map`]: `[va, va + pages)` of range `start` maps
/// `target` (allocation size, driver handle, place) or nothing (`NoAccess`); `queued`: the
/// Map waits on its paging queue, so its pages are not entered yet.
#[allow(clippy::too_many_arguments)]
pub(super) fn va_map_into(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    start: u64,
    va: u64,
    pages: u64,
    r: MapGpuVa,
    target: Option<(u64, usize, Option<Vec<Phys>>)>,
    queued: bool,
) -> Result<(), SimError> {
    let prot = r.protection.0;
    // Remap: what the range mapped goes first (unmapped, TLB flushed).
    va_clear(host, a, pid, start, va, pages)?;
    if let Some((bytes, kmd, place)) = target {
        let mut m = UserMap {
            pages,
            allocation: r.allocation,
            kmd,
            offset: r.offset_in_pages,
            attrs: MapAttrs {
                read_only: prot & PROTECTION_WRITE == 0,
                no_execute: prot & PROTECTION_EXECUTE == 0,
            },
            driver_protection: r.driver_protection,
            live: false,
            queued,
            range_va: va,
        };
        // What the allocation has from the offset: a longer range repeats it
        // (M:VIDMM_PAGE_TABLE::ModifyPageTable @0x1400CD470 fills entry i with page
        // offset + i mod window), kept as one mapping per repetition.
        let window = (bytes / PAGE).saturating_sub(m.offset).max(1);
        if let (Some(all), false) = (place, queued) {
            let once = pages_at(&all, m.offset, pages.min(window)).ok_or_else(bad)?;
            let phys: Vec<Phys> = once.iter().copied().cycle().take(pages as usize).collect();
            let t = repeat_tag(&UserMap { pages: window, ..m }, va, pages);
            crate::vidmm::mmu::vidmm_map_at(host, a, pid, va, &phys, m.attrs, t)?;
            m.live = true;
        }
        let mut st = lock(&a.mm.gpuva);
        if let Some(vad) = st.vads.get_mut(&pid).and_then(|v| v.get_mut(&start)) {
            let mut at = 0;
            while at < pages {
                let n = window.min(pages - at);
                vad.maps.insert(va + at * PAGE, UserMap { pages: n, ..m });
                at += n;
            }
        }
    }
    Ok(())
}

/// The tag of a `total`-page range from `va` that repeats `m` (one repetition): with
/// `repeat_page` when what repeats is one page (24H2's Repeat on the leaves, `vidmm::mmu`).
pub(super) fn repeat_tag(m: &UserMap, va: u64, total: u64) -> LeafTag {
    let mut t = tag(m, va);
    if m.pages == 1 && total > 1 {
        t.repeat_page = Some(m.offset * PAGE);
    }
    t
}

/// The queued mapping at `va` of range `start` and the queued repetitions of the same
/// allocation pages that follow it (one Map's range, `va_map_into`; up to the next of the
/// queued Maps' `starts`), each marked no longer queued; empty if `va` holds no queued
/// mapping (freed meanwhile).
pub(super) fn queued_run(
    a: &AdapterShared,
    pid: ProcessId,
    start: u64,
    va: u64,
    starts: &[(ProcessId, u64, u64)],
) -> Vec<(u64, UserMap)> {
    let mut st = lock(&a.mm.gpuva);
    let mut out: Vec<(u64, UserMap)> = Vec::new();
    let mut at = va;
    while let Some(m) = st.map_mut(pid, start, at) {
        if at != va && starts.contains(&(pid, start, at)) {
            break;
        }
        let same = out.first().is_none_or(|(_, f)| {
            (f.allocation, f.offset, f.pages) == (m.allocation, m.offset, m.pages)
                || (f.allocation, f.offset) == (m.allocation, m.offset) && m.pages < f.pages
        });
        if !m.queued || !same {
            break;
        }
        m.queued = false;
        out.push((at, *m));
        if out.first().is_some_and(|(_, f)| m.pages < f.pages) {
            // A shorter repetition is the range's last.
            break;
        }
        at += m.pages * PAGE;
    }
    out
}

/// Unmaps whatever range `start` of `pid` maps in `[va, va + pages)`, keeping the parts
/// of each mapping outside it.
pub(super) fn va_clear(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    start: u64,
    va: u64,
    pages: u64,
) -> Result<(), SimError> {
    let end = va + pages * PAGE;
    let hit: Vec<(u64, UserMap)> = {
        let st = lock(&a.mm.gpuva);
        let Some(vad) = st.vads.get(&pid).and_then(|v| v.get(&start)) else {
            return Ok(());
        };
        vad.maps
            .range(..end)
            .filter(|(m_va, m)| *m_va + m.pages * PAGE > va)
            .map(|(m_va, m)| (*m_va, *m))
            .collect()
    };
    for (m_va, m) in hit {
        let m_end = m_va + m.pages * PAGE;
        let (cut_lo, cut_hi) = (va.max(m_va), end.min(m_end));
        let cut_pages = (cut_hi - cut_lo) / PAGE;
        if m.live {
            va_unmap_pages(host, a, pid, cut_lo, cut_pages, tag(&m, m_va))?;
        }
        let mut st = lock(&a.mm.gpuva);
        let Some(vad) = st.vads.get_mut(&pid).and_then(|v| v.get_mut(&start)) else {
            continue;
        };
        vad.maps.remove(&m_va);
        if cut_lo > m_va {
            vad.maps.insert(
                m_va,
                UserMap {
                    pages: (cut_lo - m_va) / PAGE,
                    ..m
                },
            );
        }
        if cut_hi < m_end {
            vad.maps.insert(
                cut_hi,
                UserMap {
                    pages: (m_end - cut_hi) / PAGE,
                    offset: m.offset + (cut_hi - m_va) / PAGE,
                    ..m
                },
            );
        }
    }
    Ok(())
}

/// Unmaps pages through the driver (UPDATEPAGETABLE, FLUSHTLB, strict check), keeping the
/// VA reserved; a lost device runs no paging, so only VidMm's books change.
pub(super) fn va_unmap_pages(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    va: u64,
    pages: u64,
    t: LeafTag,
) -> Result<(), SimError> {
    if a.device.is_lost() {
        if let Some(p) = lock(&a.mm.vidmm).processes.get_mut(&pid) {
            let _ = p.space.unmap(rvgpu_hw::addr::GpuVa::new(va), pages);
        }
        return Ok(());
    }
    crate::vidmm::mmu::vidmm_unmap_keep(host, a, pid, va, pages, t)
}

/// What [`va_map_into`] needs of a live allocation of `device`: its size, the
/// driver's handle and where it is.
pub(super) fn va_target(
    a: &AdapterShared,
    res: &Residency,
    device: KmtHandle,
    allocation: KmtHandle,
) -> Result<(u64, usize, Option<Vec<Phys>>), SimError> {
    let os = lock(&a.ums);
    let al = os.open_allocation(device, allocation).ok_or_else(bad)?;
    let kmd = al.mapped.map(|m| m.kmd).ok_or_else(bad)?;
    Ok((al.alloc.len, kmd, res.pages(allocation)))
}

/// Unmaps everything range `start` of `pid` maps and releases it.
pub(super) fn va_release_range(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    start: u64,
) -> Result<(), SimError> {
    let len = lock(&a.mm.gpuva)
        .vads
        .get(&pid)
        .and_then(|v| v.get(&start))
        .map(|v| v.len);
    let Some(len) = len else {
        return Ok(());
    };
    va_clear(host, a, pid, start, start, len / PAGE)?;
    if let Some(v) = lock(&a.mm.gpuva).vads.get_mut(&pid) {
        v.remove(&start);
    }
    // The TLB was flushed with each unmap above: the VA may be reused now.
    let mut v = lock(&a.mm.vidmm);
    if let Some(p) = v.processes.get_mut(&pid) {
        let _ = p.space.free(rvgpu_hw::addr::GpuVa::new(start));
    }
    Ok(())
}

/// Residency hook: allocation `h` left its memory (eviction); its mappings fault until it
/// comes back, each Map's range unmapped whole. Called with the residency lock held.
pub(crate) fn gpu_va_allocation_evicted(
    host: &dyn Host,
    a: &AdapterShared,
    h: KmtHandle,
) -> Result<(), SimError> {
    set_maps_live(a, h, false, |pid, va, m, total| {
        va_unmap_pages(host, a, pid, va, total, tag(m, va))
    })
}

/// Residency hook: allocation `h`'s pages are now `all` (page by page); its mappings
/// follow, each Map's range committed again whole with the commit state it was mapped with:
/// 24H2 recommits a mapped range from the range itself
/// (M:VIDMM_SEGMENT::UpdateVirtualAddressForNewResourceLocation @0x14009F494 calls
/// M:CVirtualAddressAllocator::CommitVirtualAddressRange @0x1400ADD10, which takes the repeat
/// window M:CVirtualAddressAllocator::MapVadVaRange @0x14009AD34 left in the range), so a
/// range that repeats one page is one update with Repeat again, as at its first map. Called
/// with the residency lock held.
pub(crate) fn gpu_va_allocation_placed(
    host: &dyn Host,
    a: &AdapterShared,
    h: KmtHandle,
    all: &[Phys],
) -> Result<(), SimError> {
    set_maps_live(a, h, true, |pid, va, m, total| {
        let once = pages_at(all, m.offset, m.pages).ok_or_else(bad)?;
        let phys: Vec<Phys> = once.iter().copied().cycle().take(total as usize).collect();
        let t = repeat_tag(m, va, total);
        crate::vidmm::mmu::vidmm_map_at(host, a, pid, va, &phys, m.attrs, t)
    })
}

/// Runs `change` (with the process, the first VA, the first mapping and the pages of the
/// run) on each run of mappings of allocation `h` whose `live` differs from `live`, then sets
/// it. A run is one Map's range: its repetitions, which follow one another with the same
/// pages of the allocation.
pub(super) fn set_maps_live(
    a: &AdapterShared,
    h: KmtHandle,
    live: bool,
    mut change: impl FnMut(ProcessId, u64, &UserMap, u64) -> Result<(), SimError>,
) -> Result<(), SimError> {
    let mut maps = lock(&a.mm.gpuva).maps_of(h);
    maps.sort_by_key(|x| (x.0, x.1, x.2));
    // A mapping whose Map is still queued follows residency once the queue reaches it.
    maps.retain(|x| x.3.live != live && !x.3.queued);
    // (pid, range start, first mapping's VA and mapping, every VA of the run, pages).
    let mut runs: Vec<(ProcessId, u64, u64, UserMap, Vec<u64>, u64)> = Vec::new();
    for (pid, start, va, m) in maps {
        if let Some((r_pid, r_start, r_va, first, vas, total)) = runs.last_mut() {
            // The next repetition of the same pages, right after a whole one.
            let same = (*r_pid, *r_start, first.range_va, first.offset, first.attrs)
                == (pid, start, m.range_va, m.offset, m.attrs);
            let whole = *total == vas.len() as u64 * first.pages;
            if same && whole && m.pages <= first.pages && va == *r_va + *total * PAGE {
                vas.push(va);
                *total += m.pages;
                continue;
            }
        }
        runs.push((pid, start, va, m, vec![va], m.pages));
    }
    for (pid, start, va, m, vas, total) in runs {
        change(pid, va, &m, total)?;
        let mut st = lock(&a.mm.gpuva);
        for v in &vas {
            if let Some(x) = st.map_mut(pid, start, *v) {
                x.live = live;
            }
        }
    }
    Ok(())
}

/// Residency hook: allocation `h` is being destroyed. Every VA it is mapped at is unmapped
/// (reserved ranges stay, with no access); ranges Map made for it go with it. Called with
/// the residency lock held.
pub(crate) fn gpu_va_allocation_destroyed(
    host: &dyn Host,
    a: &AdapterShared,
    h: KmtHandle,
) -> Result<(), SimError> {
    let maps = lock(&a.mm.gpuva).maps_of(h);
    for (pid, start, va, m) in maps {
        va_clear(host, a, pid, start, va, m.pages)?;
        let empty_by_map = lock(&a.mm.gpuva)
            .vads
            .get(&pid)
            .and_then(|v| v.get(&start))
            .is_some_and(|v| v.by_map && v.maps.is_empty());
        if empty_by_map {
            va_release_range(host, a, pid, start)?;
        }
    }
    Ok(())
}
