//! Paging queues and the GPU VA thunks: `D3DKMTCreatePagingQueue` /
//! `DestroyPagingQueue`, `D3DKMTReserveGpuVirtualAddress`, `D3DKMTMapGpuVirtualAddress`,
//! `D3DKMTUpdateGpuVirtualAddress` and `D3DKMTFreeGpuVirtualAddress` over the process's
//! [`AddressSpace`], and `D3DKMTMakeResident`'s paging queue (docs/memory.md, "GPU VA thunks").
//!
//! The model is VidMm's (22631 dxgmms2 `CVirtualAddressAllocator`): a process's VA space holds
//! *ranges* (VADs). Reserve makes one; Map either maps inside one, or, on free space, makes one
//! that belongs to the mapping. Inside a range each page is unmapped (no access: the GPU
//! faults) or maps a page of one allocation. Free releases a whole range. Every page-table
//! change goes through the driver (`vidmm::mmu`: UPDATEPAGETABLE, FLUSHTLB after every unmap,
//! and the strict walk that compares the tables with what VidMm asked for), so a VA is never
//! reused while the GPU may still hold a translation of it.
//!
//! Residency follows the rest of this VidMm (`vidmm::residency`, "Access to nonresident
//! allocation"): a mapping of an allocation that is not resident is recorded and its entries
//! stay invalid (the GPU faults) until MakeResident pages the allocation in; eviction
//! invalidates them again; destroying the allocation unmaps every VA it is mapped at and frees
//! the ranges Map made for it (`D3DKMTMapGpuVirtualAddress` remarks: "The GPU VA range, which is
//! allocated by the API, is freed when the allocation ... is destroyed").
//!
//! Paging here completes before a thunk returns, so the paging fence value a thunk hands back
//! has been reached already: VidMm signals the queue's fence to it before returning (the
//! "ready to be accessed immediately" case of the D3DKMT pages).
//!
//! [`AddressSpace`]: crate::state::vidmm::gpuva::AddressSpace

use std::collections::BTreeMap;

use rvgpu_ddi::memory::DXGK_GPUMMUCAPS_FLAGS;
use rvgpu_ddi::ntstatus::*;
use rvgpu_device::device::mmu::{Fault, Mmu, Privilege};
use rvgpu_hw::mmu::Access;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::state::vidmm::gpuva::{MapAttrs, Phys};
use crate::sync::fence::MonitoredFence;
use crate::vidmm::host::Host;
use crate::vidmm::leaf::LeafTag;
// The requests as the UMD's `Kmt` trait states them (`D3DDDI_RESERVEGPUVIRTUALADDRESS`,
// `D3DDDI_MAPGPUVIRTUALADDRESS`), one definition for both sides of the thunk.
use rvgpu_umd::kmt::{
    GpuVaProtection, MapGpuVa, ReserveGpuVa, UpdateGpuVaOp, RESERVE_NO_ACCESS, RESERVE_ZERO,
    UPDATE_GPU_VA_COPY, UPDATE_GPU_VA_MAP, UPDATE_GPU_VA_MAP_PROTECT, UPDATE_GPU_VA_UNMAP,
};

pub(crate) mod paging_queue;
pub(crate) mod update;

pub use crate::state::vidmm::va::State;
use crate::state::vidmm::va::{PagingQueue, UserMap, Vad};

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// `D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE` bits, as the UMD's trait names them.
const PROTECTION_WRITE: u64 = GpuVaProtection::WRITE.0;
const PROTECTION_EXECUTE: u64 = GpuVaProtection::EXECUTE.0;
const PROTECTION_ZERO: u64 = GpuVaProtection::ZERO.0;
const PROTECTION_NO_ACCESS: u64 = GpuVaProtection::NO_ACCESS.0;
const PROTECTION_SYSTEM_USE_ONLY: u64 = GpuVaProtection::SYSTEM_USE_ONLY.0;

/// Reservations start on 64 KiB (VIDMM_GLOBAL::VidMmReserveGpuVirtualAddress passes 0x10000 as
/// the alignment; AllocateVirtualAddressRange refuses a `BaseAddress` off it).
pub const RESERVE_ALIGN: u64 = 0x1_0000;

/// Lowest VA a process may reserve or map at: below it this VidMm maps the OS's own pages a
/// process uses (fence storage) at their device address (`vidmm::mmu`'s `VA_BASE`), so that
/// part of the space is never free for the process.
pub const USER_VA_FLOOR: u64 = 0x4000_0000_0000;

fn bad() -> SimError {
    SimError::DdiFailed(STATUS_INVALID_PARAMETER)
}

/// Not free / not found where the allocator looked (AllocateVirtualAddressRange and
/// MapVirtualAddressRange fail with STATUS_UNSUCCESSFUL).
fn unsuccessful() -> SimError {
    SimError::DdiFailed(STATUS_UNSUCCESSFUL)
}

fn tag(m: &UserMap, va: u64) -> LeafTag {
    LeafTag {
        handle: m.kmd,
        // The allocation's first page would be here: the driver is told each leaf's offset in
        // the allocation (`AllocationOffsetInBytes`), not its offset in this mapping.
        base_va: va - m.offset * PAGE,
        // A process's own mapping may be unmapped in part (`vidmm::va`).
        large_pages: false,
        repeat_page: None,
        driver_protection: m.driver_protection,
    }
}

/// Pages `[offset, offset + pages)` of an allocation whose pages are `all` (`None` past
/// its end, which the callers' range checks exclude).
fn pages_at(all: &[Phys], offset: u64, pages: u64) -> Option<Vec<Phys>> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(pages).ok()?)?;
    all.get(start..end).map(<[Phys]>::to_vec)
}

/// The device's process and error state.
fn device_pid(a: &AdapterShared, device: KmtHandle) -> Result<ProcessId, SimError> {
    let os = lock(&a.ums);
    match os.devices.get(&device) {
        None => Err(bad()),
        Some(d) if d.in_error() => Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED)),
        Some(d) => Ok(d.process),
    }
}

/// The top of the VA space (exclusive).
fn va_limit(a: &AdapterShared, pid: ProcessId) -> Option<u64> {
    let v = lock(&a.mm.vidmm);
    let p = v.processes.get(&pid)?;
    Some(1u64 << p.space.geometry.va_bits())
}

/// Whether the driver writes zero PTEs (`DXGK_GPUMMUCAPS::ZeroInPteSupported`).
fn zero_in_pte(a: &AdapterShared) -> bool {
    lock(&a.mm.memory_model)
        .gpummu
        .as_ref()
        .is_some_and(|(caps, _)| caps.Flags.get(DXGK_GPUMMUCAPS_FLAGS::ZeroInPteSupported) != 0)
}

/// Live paging queues, process VA ranges and mapped parts of the adapter.
pub fn gpuva_live_counts(a: &AdapterShared) -> (usize, usize, usize) {
    let st = lock(&a.mm.gpuva);
    let vads = st.vads.values().map(BTreeMap::len).sum();
    let maps = st
        .vads
        .values()
        .flat_map(|v| v.values())
        .map(|v| v.maps.len())
        .sum();
    (st.queues.len(), vads, maps)
}

/// What the GPU would do with `va` of process `pid` for a user-mode queue: the device's own
/// walker over the process's page tables.
pub fn gpu_va_translate(
    a: &AdapterShared,
    pid: ProcessId,
    va: rvgpu_hw::addr::GpuVa,
    access: Access,
) -> Option<Result<(u64, u64), Fault>> {
    let (_, segment, root) = lock(&a.mm.vidmm).process(pid)?;
    let root = crate::vidmm::mmu::segment_pa(a, segment, root)?;
    Some(
        Mmu::new()
            .translate_page(a.device.memory(), root, va, access, Privilege::User)
            .map(|(pa, left)| (pa.get(), left)),
    )
}

/// `D3DKMTReserveGpuVirtualAddress` in `device`'s process. The rules, from 22631 dxgkrnl
/// DxgkReserveGpuVirtualAddress and dxgmms2 VIDMM_GLOBAL::VidMmReserveGpuVirtualAddress /
/// CVirtualAddressAllocator::AllocateVirtualAddressRange, INVALID_PARAMETER unless said:
/// - `ReservationType` past `ZERO` (so `NO_COMMIT` too, from user mode);
/// - `ZERO` when the driver has no zero PTEs (`ZeroInPteSupported` = 0; the status is
///   UNVERIFIED: Windows would build zero entries some other way, this VidMm cannot);
/// - `BaseAddress` or `Size` not 4 KiB aligned, `Size` 0 or wrapping, `BaseAddress` not
///   64 KiB aligned;
/// - `MaximumAddress` 0 means the top of the space; `Minimum >= Maximum` or a window
///   smaller than `Size`;
/// - no free range where asked (`BaseAddress` taken, or nothing free in the window):
///   STATUS_UNSUCCESSFUL.
///
/// With `BaseAddress` 0 VidMm picks the highest free 64 KiB-aligned range in the window.
pub(crate) fn gpu_va_reserve(
    a: &AdapterShared,
    device: KmtHandle,
    r: ReserveGpuVa,
) -> Result<u64, SimError> {
    let pid = device_pid(a, device)?;
    if !(RESERVE_NO_ACCESS..=RESERVE_ZERO).contains(&r.reservation_type) {
        return Err(bad());
    }
    if r.reservation_type == RESERVE_ZERO && !zero_in_pte(a) {
        return Err(bad());
    }
    if r.reservation_type == RESERVE_ZERO {
        // A driver with zero PTEs: this VidMm does not build them.
        return Err(SimError::DdiFailed(STATUS_NOT_SUPPORTED));
    }
    if !r.base.is_multiple_of(PAGE) || !r.size.is_multiple_of(PAGE) {
        return Err(bad());
    }
    if r.size == 0 || r.base.checked_add(r.size).is_none() || !r.base.is_multiple_of(RESERVE_ALIGN)
    {
        return Err(bad());
    }
    let limit = va_limit(a, pid).ok_or_else(bad)?;
    let max = if r.maximum == 0 { limit } else { r.maximum };
    if r.minimum >= max || max - r.minimum < r.size {
        return Err(bad());
    }
    let _res = lock(&a.mm.residency);
    let va = va_claim(a, pid, r.base, r.size, r.minimum, max, RESERVE_ALIGN)?;
    lock(&a.mm.gpuva).vads.entry(pid).or_default().insert(
        va,
        Vad {
            len: r.size,
            by_map: false,
            maps: BTreeMap::new(),
        },
    );
    Ok(va)
}

/// Reserves `[base, base + len)` (`base` != 0) or the highest free `align`-aligned range
/// in `[min, max)` in `pid`'s space.
#[allow(clippy::too_many_arguments)]
fn va_claim(
    a: &AdapterShared,
    pid: ProcessId,
    base: u64,
    len: u64,
    min: u64,
    max: u64,
    align: u64,
) -> Result<u64, SimError> {
    let mut v = lock(&a.mm.vidmm);
    let p = v.processes.get_mut(&pid).ok_or_else(bad)?;
    let va = if base != 0 {
        if base < USER_VA_FLOOR {
            return Err(unsuccessful());
        }
        base
    } else {
        p.space
            .free_range_top_down(len, align, min.max(USER_VA_FLOOR), max)
            .ok_or_else(unsuccessful)?
    };
    p.space
        .reserve_at(rvgpu_hw::addr::GpuVa::new(va), len)
        .map_err(|_| unsuccessful())?;
    Ok(va)
}

/// `D3DKMTMapGpuVirtualAddress` in `device`'s process. The rules, from 22631 dxgkrnl
/// DxgkMapGpuVirtualAddress and dxgmms2 VIDMM_GLOBAL::VidMmMapGpuVirtualAddressInternal,
/// INVALID_PARAMETER unless said:
/// - `hPagingQueue` not a paging queue of the caller's device;
/// - `Protection.SystemUseOnly` or a reserved bit; `NoAccess` with `Write`, `Execute` or
///   `Zero` (24H2: M `VIDMM_GLOBAL::VidMmMapGpuVirtualAddress` @0x1400F4F90, before the
///   allocation is looked at); `Zero` without zero PTEs (status UNVERIFIED, as for Reserve);
/// - unless `Zero` / `NoAccess` (where `hAllocation` is ignored): `hAllocation` not a live
///   allocation of the paging queue's device;
/// - `SizeInPages` 0 means the allocation's size (in bytes, as VidMm compares it, so
///   only with `OffsetInPages` 0); `OffsetInPages` at or past the allocation's end; a
///   `NoAccess` range of 0 pages (a range past the allocation's end repeats its pages from
///   `OffsetInPages` on, see [`va_map_into`]);
/// - `BaseAddress` not 4 KiB aligned (the thunk's entry, `kmt::gpu_va`, rounds it down
///   first, as 24H2's VidMm does); a range that is neither free nor inside one range of the
///   process: STATUS_UNSUCCESSFUL.
///
/// With `BaseAddress` 0 VidMm picks the highest free range in
/// `[MinimumAddress, MaximumAddress)` (0: no limit), a new range owned by the mapping.
/// Pages of the range mapped before are unmapped first (remap). Returns the VA and the
/// paging fence value: reached, or, with work queued ahead on the paging queue, not yet
/// (STATUS_PENDING; the Map is queued, `paging_queue`).
pub(crate) fn gpu_va_map(
    host: &dyn Host,
    a: &AdapterShared,
    device: KmtHandle,
    r: MapGpuVa,
) -> Result<(u64, u64), SimError> {
    let pid = device_pid(a, device)?;
    match lock(&a.mm.gpuva).queues.get(&r.paging_queue) {
        Some(q) if q.device == device => {}
        _ => return Err(bad()),
    }
    let prot = r.protection.0;
    if prot & PROTECTION_SYSTEM_USE_ONLY != 0 || prot >= 1 << 5 {
        return Err(bad());
    }
    let other = PROTECTION_WRITE | PROTECTION_EXECUTE | PROTECTION_ZERO;
    if prot & PROTECTION_NO_ACCESS != 0 && prot & other != 0 {
        return Err(bad());
    }
    if prot & PROTECTION_ZERO != 0 {
        return Err(if zero_in_pte(a) {
            SimError::DdiFailed(STATUS_NOT_SUPPORTED)
        } else {
            bad()
        });
    }
    let no_access = prot & PROTECTION_NO_ACCESS != 0;
    // Held for the whole operation: where the allocation is cannot change meanwhile.
    let res = lock(&a.mm.residency);
    let target = if no_access {
        None
    } else {
        Some(va_target(a, &res, device, r.allocation)?)
    };
    let pages = match target {
        Some((bytes, _, _)) => {
            let alloc_pages = bytes / PAGE;
            let size_bytes = if r.size_in_pages == 0 {
                bytes
            } else {
                r.size_in_pages.checked_mul(PAGE).ok_or_else(bad)?
            };
            // A range longer than what the allocation has past the offset is accepted and
            // repeats that part (24H2: M:VIDMM_GLOBAL::VidMmMapGpuVirtualAddressInternal
            // @0x1400F5180 refuses it only without the adapter flag M:VIDMM_GLOBAL::Init
            // @0x140093FBC sets for every driver of DDI version 0x6000 or later, as rvgpu's;
            // M:CVirtualAddressAllocator::MapVadVaRange @0x14009AD34 makes it the repeat).
            if r.offset_in_pages >= alloc_pages {
                return Err(bad());
            }
            size_bytes / PAGE
        }
        None => r.size_in_pages,
    };
    let len = pages.checked_mul(PAGE).filter(|l| *l > 0).ok_or_else(bad)?;
    if !r.base.is_multiple_of(PAGE) || r.base.checked_add(len).is_none() {
        return Err(bad());
    }
    // Where: inside one of the process's ranges, or a new range on free space.
    let inside = if r.base != 0 {
        lock(&a.mm.gpuva).vad_holding(pid, r.base, len)
    } else {
        None
    };
    let (va, start) = match inside {
        Some(start) => (r.base, start),
        None => {
            let limit = va_limit(a, pid).ok_or_else(bad)?;
            let max = if r.maximum == 0 { limit } else { r.maximum };
            if r.base == 0 && (r.minimum >= max || max - r.minimum < len) {
                return Err(unsuccessful());
            }
            let va = va_claim(a, pid, r.base, len, r.minimum, max, PAGE)?;
            lock(&a.mm.gpuva).vads.entry(pid).or_default().insert(
                va,
                Vad {
                    len,
                    by_map: true,
                    maps: BTreeMap::new(),
                },
            );
            (va, va)
        }
    };
    let fresh = inside.is_none();
    // Work queued ahead on the paging queue: this Map is queued behind it
    // (`paging_queue`: STATUS_PENDING, nothing in the page tables until the queue gets here).
    let behind = crate::vidmm::va::paging_queue::paging_behind(a, r.paging_queue);
    let maps_pages = target.is_some();
    let done = va_map_into(host, a, pid, start, va, pages, r, target, behind);
    if done.is_err() && fresh {
        // Nothing of a failed Map stays: the range it made goes again.
        let _ = va_release_range(host, a, pid, start);
    }
    done?;
    drop(res);
    if behind {
        let queued = maps_pages.then_some((pid, start, va));
        let value = crate::vidmm::va::paging_queue::paging_fence_queue(a, r.paging_queue, queued)?;
        return Ok((va, value));
    }
    let value = crate::vidmm::va::paging_queue::paging_fence_advance(host, a, r.paging_queue)?;
    Ok((va, value))
}

/// The mapping step of [`gpu_va_map`]: `[va, va + pages)` of range `start` maps
/// `target` (allocation size, driver handle, place) or nothing (`NoAccess`); `queued`: the
/// Map waits on its paging queue, so its pages are not entered yet.
#[allow(clippy::too_many_arguments)]
fn va_map_into(
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
fn repeat_tag(m: &UserMap, va: u64, total: u64) -> LeafTag {
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
fn queued_run(
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
fn va_clear(
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
fn va_unmap_pages(
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
fn va_target(
    a: &AdapterShared,
    res: &crate::vidmm::residency::State,
    device: KmtHandle,
    allocation: KmtHandle,
) -> Result<(u64, usize, Option<Vec<Phys>>), SimError> {
    let os = lock(&a.ums);
    let al = os.open_allocation(device, allocation).ok_or_else(bad)?;
    let kmd = al.mapped.map(|m| m.kmd).ok_or_else(bad)?;
    Ok((al.alloc.len, kmd, res.pages(allocation)))
}

/// `D3DKMTFreeGpuVirtualAddress` of `device`'s process (22631 dxgmms2
/// VIDMM_GLOBAL::VidMmFreeGpuVirtualAddress, FreeGpuVirtualAddressSystemCommand):
/// `BaseAddress` 0, or not the start of one of the process's ranges, is INVALID_PARAMETER;
/// otherwise the whole range goes (VidMm finds it by its start and does not look at
/// `Size`): every mapped part unmapped through the driver with the TLB flushed, then the
/// VA released. The ranges VidMm made itself for `D3DKMTCreateAllocation2` are not the
/// process's to free (INVALID_PARAMETER here; Windows' flagged ranges succeed doing
/// nothing, UNVERIFIED which applies).
pub(crate) fn gpu_va_free(
    host: &dyn Host,
    a: &AdapterShared,
    device: KmtHandle,
    base: u64,
    size: u64,
) -> Result<(), SimError> {
    let _ = size;
    let pid = device_pid(a, device)?;
    if base == 0 {
        return Err(bad());
    }
    let _res = lock(&a.mm.residency);
    if !lock(&a.mm.gpuva)
        .vads
        .get(&pid)
        .is_some_and(|v| v.contains_key(&base))
    {
        return Err(bad());
    }
    va_release_range(host, a, pid, base)
}

/// Unmaps everything range `start` of `pid` maps and releases it.
fn va_release_range(
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
fn set_maps_live(
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

/// Device teardown: its paging queues and the fences they own; when its process's GPU VA
/// space goes with it (`space`: the process had no other device and is not held open), every
/// range the process still has. The device's allocations are gone already, so nothing of it
/// is mapped any more; another device of the process keeps the process's ranges, which are
/// the process's, not the device's (24H2's `K:DxgkDestroyDeviceImpl` @0x14039D208 destroys
/// the device's contexts, paging queues and sync objects, no VA range).
pub(crate) fn gpu_va_teardown(
    host: &dyn Host,
    a: &AdapterShared,
    device: KmtHandle,
    space: Option<ProcessId>,
) -> Result<(), SimError> {
    // Updates the device queued and VidMm has not run go with it.
    update::gpu_va_updates_drop(a, device);
    let queues: Vec<KmtHandle> = lock(&a.mm.gpuva)
        .queues
        .iter()
        .filter(|(_, q)| q.device == device)
        .map(|(h, _)| *h)
        .collect();
    for q in queues {
        crate::vidmm::va::paging_queue::paging_queue_destroy(host, a, device, q)?;
    }
    let Some(pid) = space else {
        return Ok(());
    };
    let _res = lock(&a.mm.residency);
    let starts: Vec<u64> = lock(&a.mm.gpuva)
        .vads
        .get(&pid)
        .map(|v| v.keys().copied().collect())
        .unwrap_or_default();
    for s in starts {
        va_release_range(host, a, pid, s)?;
    }
    lock(&a.mm.gpuva).vads.remove(&pid);
    Ok(())
}
