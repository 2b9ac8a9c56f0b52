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
//! A Map on a paging queue is queued there (`paging_queue`) and done by VidMm's worker
//! (`crate::vidmm::worker`); its paging fence value is reached once the worker has entered its
//! pages. The modules: `base` (what every operation shares), `mapping` (the mappings inside a
//! range, and residency's hooks), `paging_queue`, `update` (`D3DKMTUpdateGpuVirtualAddress`);
//! this file holds the thunks' entries.
//!
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

use rvgpu_ddi::ntstatus::*;
use rvgpu_device::device::mmu::{Fault, Mmu, Privilege};
use rvgpu_hw::mmu::Access;
// The requests as the UMD's `Kmt` trait states them (`D3DDDI_RESERVEGPUVIRTUALADDRESS`,
// `D3DDDI_MAPGPUVIRTUALADDRESS`), one definition for both sides of the thunk.
use rvgpu_umd::kmt::{MapGpuVa, ReserveGpuVa, RESERVE_NO_ACCESS, RESERVE_ZERO};

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::state::vidmm::va::Vad;
use crate::vidmm::host::Host;

pub(crate) mod base;
pub(crate) mod mapping;
pub(crate) mod paging_queue;
pub(crate) mod update;

pub use crate::state::vidmm::va::State;
use base::{
    bad, device_pid, unsuccessful, va_limit, zero_in_pte, PAGE, PROTECTION_EXECUTE,
    PROTECTION_NO_ACCESS, PROTECTION_SYSTEM_USE_ONLY, PROTECTION_WRITE, PROTECTION_ZERO,
};
pub use base::{RESERVE_ALIGN, USER_VA_FLOOR};
use mapping::{va_map_into, va_release_range, va_target};

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
    // VidMm's map looks at no device state (M:VIDMM_GLOBAL::VidMmMapGpuVirtualAddressInternal
    // @0x1400F5180): a device VidSch put in error maps; only Dxgkrnl's device access refuses,
    // a stopped device (`kmt::lock::device_active`, in the thunk).
    let pid = lock(&a.ums)
        .devices
        .get(&device)
        .map(|d| d.process)
        .ok_or_else(bad)?;
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
