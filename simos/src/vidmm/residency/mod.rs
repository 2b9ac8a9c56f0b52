//! VidMm residency (docs/memory.md "Residency"): where each user allocation lives,
//! who needs it resident, and the paging that moves it.
//!
//! - **VA.** Under 24H2 (`answers::AllocationVa::MappedByCaller`) an allocation has no VA
//!   of its own: the process maps it (`vidmm::va`), and residency only makes those mappings
//!   live or not. Under the pages' reading VidMm reserves one at create and maps it while
//!   resident. Eviction, page-in and destroy touch that VA only when there is one.
//! - **Placement.** An allocation the CPU never maps goes to local memory (VRAM) when the
//!   driver's segment set allows it, in the driver's `PreferredSegment` order; what the CPU
//!   maps stays in its backing store in system memory, mapped by GPU page tables page by page
//!   with `Segment` 0 and never into the aperture (this VidMm cannot rotate a process's
//!   CPU view between the BAR and system memory, which Windows does when it evicts a mapped
//!   allocation). Placement happens at the first MakeResident: a new allocation is on no
//!   residency list and nothing maps it. Its first page-in copies its zeroed
//!   backing store, so VRAM another process used never reaches it as it was.
//! - **Residency requirement.** Each allocation carries its device's residency count: 0 at
//!   creation ("Residency overview": only MakeResident puts it on the device's residency
//!   requirement list), `D3DKMTMakeResident` adds one,
//!   `D3DKMTEvict` takes one ("Residency overview": the counts must balance). At zero the
//!   allocation may be evicted once the work queued before the Evict has finished (the UMD
//!   promises no new use, not that old work is done).
//! - **Backing store.** What may go to VRAM has one of its own: scattered system pages that
//!   transfers name by MDL (`SegmentId` 0, [`crate::vidmm::mdl`]; docs/memory.md "System
//!   memory and MDLs"). What the CPU maps is its own backing store and never moves.
//! - **Eviction** of a local allocation, in the order of `VIDMM_MEMORY_SEGMENT::EvictResource`:
//!   TRANSFER from VRAM to the backing store (skipped for `NotWrittenTo`), UPDATEPAGETABLE
//!   that invalidates its pages, FLUSHTLB. Its VAs stay reserved: a GPU access meanwhile page
//!   faults and puts the device in error ("Access to nonresident allocation"). VidMm poisons
//!   the VRAM it takes back ([`VRAM_POISON`]), so a transfer that did not happen shows.
//! - **Page-in** (MakeResident of an evicted allocation): VRAM found (evicting idle
//!   allocations if needed, least recently released first), TRANSFER in, UPDATEPAGETABLE.
//!   Everything completes before the thunk returns; `PagingFenceValue` is reached unless the
//!   paging queue had work queued ahead (`vidmm::va::paging_queue`).
//! - **Budget** (`OsConfig::vram_budget`, "Process residency budgets"): MakeResident past the
//!   process's budget fails with `STATUS_NO_MEMORY` and the bytes to trim, changing no count;
//!   Evict reports the bytes still over budget.
//! - **D3** (UM-14): after every context is suspended and every doorbell disconnected, VidMm
//!   evicts the local allocations no device requires before the GPU powers down. Rings are
//!   CPU-written, so they live in the aperture and have nothing to leave VRAM for. The device
//!   keeps VRAM across D3 (hardware.md §13.3), so required allocations stay.

pub mod purge;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;

use crate::state::vidmm::Redo;

use rvgpu_ddi::basic::*;
use rvgpu_ddi::memory::DXGK_SEGMENTFLAGS;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::tdr::*;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::state::vidmm::gpuva::MapAttrs;
use crate::vidmm::host::Host;
use crate::vidmm::mmu::{paging_power, LeafTag, TABLE_SHARE};
use crate::vidmm::paging::paging_node;

use crate::state::vidmm::residency::QueuedWork;

pub(crate) use crate::state::vidmm::residency::Backing;
use crate::state::vidmm::residency::{pages_of, Entry, Heap};
pub use crate::state::vidmm::residency::{Place, State};

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// What VidMm writes over VRAM it takes back (eviction, destruction).
pub const VRAM_POISON: u64 = 0xE71C_7ED0_E71C_7ED0;

impl Entry {
    /// The backing store as one side of a transfer: system memory by MDL, never by an
    /// aperture address (the aperture holds only what VidMm maps there, `vidmm::aperture`).
    fn backing_side(&self) -> Side {
        Side::Pages(self.system_pages().into_iter().map(|p| p.1).collect())
    }

    /// What moving the allocation between VRAM and its backing store needs of it, copied
    /// out so that the state can change while it moves.
    fn moving(&self) -> Moving {
        Moving {
            pid: self.pid,
            va: self.va,
            pages: self.pages,
            bytes: self.bytes(),
            kmd: self.kmd,
            device: self.device,
            backing: self.backing_side(),
            tag: tag(self),
        }
    }
}

/// An allocation being evicted or paged in ([`Entry::moving`]).
struct Moving {
    pid: ProcessId,
    va: Option<u64>,
    pages: u64,
    bytes: u64,
    kmd: usize,
    device: KmtHandle,
    backing: Side,
    tag: LeafTag,
}

/// One side of a paging transfer as VidMm names it.
#[derive(Clone, Debug)]
enum Side {
    /// A segment and the segment address (`BaseAddress` + offset).
    Segment(u32, u64),
    /// System memory pages (bus addresses), described by MDLs.
    Pages(Vec<u64>),
}

/// A scattered backing store of `pages` pages (see [`Backing::Pages`]); `None` when system
/// memory runs out (nothing is kept).
pub(crate) fn backing_pages(a: &AdapterShared, pages: u64) -> Option<Backing> {
    let mem = a.device.memory();
    let mut v = Vec::with_capacity(pages as usize);
    for _ in 0..pages {
        match mem.alloc_system(PAGE, PAGE) {
            Some(p) => v.push(p),
            None => {
                for p in v {
                    mem.free_system(rvgpu_hw::addr::BusAddr::new(p.bus_addr));
                }
                return None;
            }
        }
    }
    Some(Backing::Pages(v))
}

/// Why `D3DKMTMakeResident` failed.
#[derive(Debug)]
pub(crate) enum MakeResidentFail {
    /// `STATUS_NO_MEMORY` with `NumBytesToTrim`.
    OverBudget(u64),
    Failed(SimError),
}

impl From<SimError> for MakeResidentFail {
    fn from(e: SimError) -> Self {
        Self::Failed(e)
    }
}

/// The VRAM VidMm gives allocations, per local segment: above the page tables (the first
/// 1/[`TABLE_SHARE`] of the page-table segment) and below local native-fence storage (the top
/// 1/`LOCAL_FENCE_VRAM_DIVISOR` of VRAM).
fn init_heaps(a: &AdapterShared) -> Vec<Heap> {
    let model = lock(&a.mm.memory_model);
    let vram = a.device.memory().vram_size();
    let fence_floor = vram - vram / crate::sync::fence::LOCAL_FENCE_VRAM_DIVISOR;
    let table_segment = model.geometry().map(|g| g.segment);
    let mut heaps = Vec::new();
    for id in 1..=model.segments.len() as u32 {
        let Some(s) = model.segment(id) else { continue };
        if s.Flags.is_set(DXGK_SEGMENTFLAGS::Aperture) {
            continue;
        }
        let base = model.segment_base(id).unwrap_or(0);
        let size = s.Size as u64;
        let lo = if table_segment == Some(id) {
            base + size / TABLE_SHARE
        } else {
            base
        }
        .next_multiple_of(PAGE);
        let hi = (base + size).min(fence_floor);
        let hi = hi - hi % PAGE;
        let mut free = BTreeMap::new();
        if hi > lo {
            free.insert(lo - base, hi - lo);
        }
        heaps.push(Heap {
            segment: id,
            base,
            free,
        });
    }
    heaps
}

fn heap<'s>(st: &'s mut State, a: &AdapterShared, segment: u32) -> Option<&'s mut Heap> {
    st.heaps
        .get_or_insert_with(|| init_heaps(a))
        .iter_mut()
        .find(|h| h.segment == segment)
}

/// The address VidMm gives the driver for `offset` in local segment `segment`: the
/// segment's `BaseAddress` plus the offset (DXGK_SEGMENTDESCRIPTOR4).
pub(crate) fn segment_address(a: &AdapterShared, segment: u32, offset: u64) -> u64 {
    lock(&a.mm.memory_model).segment_base(segment).unwrap_or(0) + offset
}

/// Bytes of local memory `pid` requires resident (its residency requirement in VRAM).
fn required_local(st: &State, pid: ProcessId) -> u64 {
    st.entries
        .values()
        .filter(|e| e.pid == pid && e.count > 0 && matches!(e.place, Place::Local { .. }))
        .map(Entry::bytes)
        .sum()
}

fn tag(e: &Entry) -> LeafTag {
    LeafTag {
        handle: e.kmd,
        base_va: e.va.unwrap_or(0),
        large_pages: true,
        repeat_page: None,
        // A VA VidMm gave at create: no Map passed any.
        driver_protection: 0,
    }
}

/// Local segments an allocation may live in, best first: the driver's `PreferredSegment`
/// choices that are local and in its set, then the set's other local segments by id. Empty
/// for what the CPU maps (see the module docs).
pub(crate) fn local_order(
    a: &AdapterShared,
    set: u32,
    preferred: u32,
    cpu_visible: bool,
) -> Vec<u32> {
    if cpu_visible {
        return Vec::new();
    }
    let (apertures, _) = lock(&a.mm.memory_model).aperture_sets();
    let local = |id: u32| {
        id != 0 && id <= 32 && set & (1 << (id - 1)) != 0 && apertures & (1 << (id - 1)) == 0
    };
    let mut order: Vec<u32> = (0..5)
        .map(|i| (preferred >> (6 * i)) & 0x1F)
        .filter(|&id| local(id))
        .collect();
    for id in 1..=32 {
        if local(id) && !order.contains(&id) {
            order.push(id);
        }
    }
    order
}

/// Where allocation `h` is and its residency count (`None` for an allocation VidMm does
/// not track, e.g. on an adapter without GPU VA).
pub fn allocation_residency(a: &AdapterShared, h: KmtHandle) -> Option<(Place, u32)> {
    let st = lock(&a.mm.residency);
    st.entries.get(&h).map(|e| (e.place, e.count))
}

/// The bus addresses of allocation `h`'s backing-store pages when VidMm gave it a
/// scattered backing store of its own (`None` otherwise).
pub fn allocation_backing_pages(a: &AdapterShared, h: KmtHandle) -> Option<Vec<u64>> {
    let st = lock(&a.mm.residency);
    match &st.entries.get(&h)?.backing {
        Backing::Pages(p) => Some(p.iter().map(|p| p.bus_addr).collect()),
        Backing::Own => None,
    }
}

/// Records a new allocation: not resident, on no residency list, its VA (if create gave
/// it one) reserved.
#[allow(clippy::too_many_arguments)]
pub(crate) fn residency_track(
    st: &mut State,
    h: KmtHandle,
    pid: ProcessId,
    device: KmtHandle,
    kmd: usize,
    va: Option<u64>,
    pages: u64,
    sysmem: u64,
    backing: Backing,
    order: Vec<u32>,
    aperture: bool,
    place: Place,
) {
    st.entries.insert(
        h,
        Entry {
            pid,
            device,
            kmd,
            va,
            pages,
            sysmem,
            backing,
            order,
            aperture,
            place,
            count: 0,
            idle_after: Vec::new(),
            eager: false,
            dirty: false,
            idle_since: 0,
        },
    );
}

/// VRAM for `bytes` of `pid` in the first segment of `order` that has room within the
/// budget (or past it, `over_budget`: a MakeResident with `CantTrimFurther`), evicting idle allocations of that segment (least recently released first) when
/// it is full.
fn place_local(
    host: &dyn Host,
    a: &AdapterShared,
    st: &mut State,
    pid: ProcessId,
    order: &[u32],
    bytes: u64,
    over_budget: bool,
) -> Result<Option<(u32, u64)>, SimError> {
    if let (Some(budget), false) = (a.os.vram_budget, over_budget) {
        if required_local(st, pid) + bytes > budget {
            return Ok(None);
        }
    }
    let large = {
        let model = lock(&a.mm.memory_model);
        match (model.large_pages(), model.geometry()) {
            (Some(_), Some(g)) => g.large_page(),
            _ => 0,
        }
    };
    for &segment in order {
        loop {
            if let Some(off) = heap(st, a, segment).and_then(|h| h.alloc(bytes, large)) {
                return Ok(Some((segment, off)));
            }
            let victim = {
                st.entries
                    .iter()
                    .filter(|(_, e)| {
                        matches!(e.place, Place::Local { segment: s, .. } if s == segment)
                            && e.count == 0
                            && e.idle_after
                                .iter()
                                .all(|w| w.done(|q| host.queue_alive(a, q)))
                    })
                    .min_by_key(|(_, e)| e.idle_since)
                    .map(|(h, _)| *h)
            };
            match victim {
                Some(v) => evict_one(host, a, st, v)?,
                None => break,
            }
        }
    }
    Ok(None)
}

/// Moves local allocation `h` out of VRAM (module docs: TRANSFER, UPDATEPAGETABLE,
/// FLUSHTLB), leaving its VA reserved and unmapped.
fn evict_one(
    host: &dyn Host,
    a: &AdapterShared,
    st: &mut State,
    h: KmtHandle,
) -> Result<(), SimError> {
    let Some(e) = st.entries.get(&h) else {
        return Ok(());
    };
    let Place::Local { segment, offset } = e.place else {
        return Ok(());
    };
    let (m, dirty) = (e.moving(), e.dirty);
    if dirty {
        paging_transfer(
            host,
            a,
            m.kmd,
            m.device,
            Side::Segment(segment, segment_address(a, segment, offset)),
            m.backing,
            m.bytes,
        )?;
    }
    // Its own VA, where create gave it one.
    if let Some(va) = m.va {
        crate::vidmm::mmu::vidmm_unmap_keep(host, a, m.pid, va, m.pages, m.tag)?;
    }
    // The VAs the process mapped it at (`vidmm::va`) fault too until it returns.
    crate::vidmm::va::mapping::gpu_va_allocation_evicted(host, a, h)?;
    release_local(a, st, segment, offset, m.bytes);
    if let Some(e) = st.entries.get_mut(&h) {
        e.place = Place::Evicted;
        e.dirty = false;
    }
    Ok(())
}

/// Brings evicted allocation `h` back: VRAM if it can have it, else its backing store
/// through the aperture. `false`: no room anywhere it may live.
fn residency_page_in(
    host: &dyn Host,
    a: &AdapterShared,
    st: &mut State,
    h: KmtHandle,
    over_budget: bool,
) -> Result<bool, SimError> {
    let Some(e) = st.entries.get(&h) else {
        return Ok(false);
    };
    if e.place != Place::Evicted {
        return Ok(true);
    }
    let (m, system, order, aperture) = (e.moving(), e.system_pages(), e.order.clone(), e.aperture);
    let place = match place_local(host, a, st, m.pid, &order, m.bytes, over_budget)? {
        Some((segment, offset)) => {
            let moved = paging_transfer(
                host,
                a,
                m.kmd,
                m.device,
                m.backing,
                Side::Segment(segment, segment_address(a, segment, offset)),
                m.bytes,
            )
            // The process's own mappings first, its VidMm VA last (the driver
            // records where an allocation is from the last mapping at offset 0).
            .and_then(|()| {
                crate::vidmm::va::mapping::gpu_va_allocation_placed(
                    host,
                    a,
                    h,
                    &pages_of((segment, offset), m.pages),
                )
            })
            .and_then(|()| match m.va {
                Some(va) => crate::vidmm::mmu::vidmm_map_at(
                    host,
                    a,
                    m.pid,
                    va,
                    &pages_of((segment, offset), m.pages),
                    MapAttrs::default(),
                    m.tag,
                ),
                None => Ok(()),
            });
            if let Err(e) = moved {
                release_local(a, st, segment, offset, m.bytes);
                return Err(e);
            }
            Place::Local { segment, offset }
        }
        // Without VRAM, the backing store through the aperture when the segment set
        // allows it (UNVERIFIED: Windows' placement order beyond the preferred segments).
        None if aperture => {
            // The backing store's pages are mapped where they are, page by page with
            // `Segment` 0, as Windows maps an allocation in system memory ("GPU
            // segments": without `AccessedPhysically` it is not mapped into the
            // aperture); no copy.
            crate::vidmm::va::mapping::gpu_va_allocation_placed(host, a, h, &system)?;
            if let Some(va) = m.va {
                let attrs = MapAttrs::default();
                crate::vidmm::mmu::vidmm_map_at(host, a, m.pid, va, &system, attrs, m.tag)?;
            }
            Place::Aperture
        }
        None => return Ok(false),
    };
    if let Some(e) = st.entries.get_mut(&h) {
        e.place = place;
        e.dirty = false;
    }
    Ok(true)
}

/// `D3DKMTMakeResident` for `device`: all or nothing. Handles that are not the device's
/// live allocations (or an empty list, UNVERIFIED) are `STATUS_INVALID_PARAMETER`; a handle
/// listed twice counts twice (the page's reference count); past the budget
/// (unless `cant_trim_further`) or with no room, `STATUS_NO_MEMORY` with the bytes to
/// trim and no count changed.
pub(crate) fn residency_make_resident(
    host: &dyn Host,
    a: &AdapterShared,
    device: KmtHandle,
    handles: &[KmtHandle],
    cant_trim_further: bool,
) -> Result<(), MakeResidentFail> {
    let mut st = lock(&a.mm.residency);
    let pid = check_handles(a, device, handles)?;
    let mut unique = handles.to_vec();
    unique.sort_unstable();
    unique.dedup();
    // What the requirement grows by in VRAM: allocations not counted now that will be.
    let need: u64 = unique
        .iter()
        .filter_map(|h| st.entries.get(h))
        .filter(|e| {
            (e.place == Place::Evicted && !e.order.is_empty())
                || (e.count == 0 && matches!(e.place, Place::Local { .. }))
        })
        .map(Entry::bytes)
        .sum();
    if let Some(budget) = a.os.vram_budget {
        let total = required_local(&st, pid) + need;
        if need > 0 && total > budget && !cant_trim_further {
            return Err(MakeResidentFail::OverBudget(total - budget));
        }
    }
    // Each raised count, with what a 0 -> 1 step cleared, so a failure puts it all back.
    let mut raised: Vec<(KmtHandle, Option<Idle>)> = Vec::new();
    for &h in handles {
        if let Some(e) = st.entries.get_mut(&h) {
            let was_idle = (e.count == 0).then(|| Idle {
                after: core::mem::take(&mut e.idle_after),
                eager: core::mem::replace(&mut e.eager, false),
                since: e.idle_since,
            });
            e.count += 1;
            raised.push((h, was_idle));
        }
    }
    for &h in &unique {
        let placed = match residency_page_in(host, a, &mut st, h, cant_trim_further) {
            Ok(p) => p,
            Err(e) => {
                undo(&mut st, raised);
                return Err(e.into());
            }
        };
        if !placed {
            let bytes = st.entries.get(&h).map_or(0, Entry::bytes);
            undo(&mut st, raised);
            // UNVERIFIED on Windows: no room at all reported as over budget by the size
            // of the allocation that did not fit.
            return Err(MakeResidentFail::OverBudget(bytes));
        }
    }
    Ok(())
}

/// `D3DKMTEvict` for `device`: all or nothing (a handle that is not the device's live,
/// resident-required allocation is `STATUS_INVALID_PARAMETER`). Returns `NumBytesToTrim`.
pub(crate) fn residency_evict(
    host: &dyn Host,
    a: &AdapterShared,
    device: KmtHandle,
    handles: &[KmtHandle],
    evict_only_if_necessary: bool,
    not_written_to: bool,
) -> Result<u64, SimError> {
    let pid = {
        let mut st = lock(&a.mm.residency);
        let pid = check_handles(a, device, handles)?;
        let mut take: HashMap<KmtHandle, u32> = HashMap::new();
        for &h in handles {
            *take.entry(h).or_default() += 1;
        }
        if take
            .iter()
            .any(|(h, n)| st.entries.get(h).is_some_and(|e| e.count < *n))
        {
            // UNVERIFIED on Windows: an Evict past the count is refused here rather than
            // ignored.
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        let queued = host.queued_work(a, device);
        st.tick += 1;
        let tick = st.tick;
        for &h in handles {
            if let Some(e) = st.entries.get_mut(&h) {
                e.count -= 1;
                // Conservative when Evicts disagree: one without the flag means the GPU
                // may have written.
                e.dirty |= !not_written_to;
                if e.count == 0 {
                    e.idle_after = queued.clone();
                    e.eager = !evict_only_if_necessary;
                    e.idle_since = tick;
                }
            }
        }
        pid
    };
    residency_tick(host, a)?;
    let st = lock(&a.mm.residency);
    Ok(a.os
        .vram_budget
        .map_or(0, |b| required_local(&st, pid).saturating_sub(b)))
}

/// Every handle is a live allocation of `device` that VidMm tracks; returns its process.
fn check_handles(
    a: &AdapterShared,
    device: KmtHandle,
    handles: &[KmtHandle],
) -> Result<ProcessId, SimError> {
    let os = lock(&a.ums);
    let pid = match os.devices.get(&device) {
        None => return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER)),
        Some(d) if d.in_error() => return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED)),
        Some(d) => d.process,
    };
    let ok = !handles.is_empty()
        && handles
            .iter()
            .all(|h| os.open_allocation(device, *h).is_some());
    // Allocations VidMm does not track (an adapter without GPU VA, where they are system
    // memory used by bus address) have nothing to page and are always resident.
    if !ok {
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    Ok(pid)
}

/// VidMm's entry work: evicts what was released without `EvictOnlyIfNecessary` and whose
/// work has finished.
pub(crate) fn residency_tick(host: &dyn Host, a: &AdapterShared) -> Result<(), SimError> {
    let mut st = lock(&a.mm.residency);
    let due: Vec<KmtHandle> = {
        st.entries
            .iter()
            .filter(|(_, e)| {
                e.eager
                    && e.count == 0
                    && matches!(e.place, Place::Local { .. })
                    && e.idle_after
                        .iter()
                        .all(|w| w.done(|q| host.queue_alive(a, q)))
            })
            .map(|(h, _)| *h)
            .collect()
    };
    for h in due {
        evict_one(host, a, &mut st, h)?;
    }
    Ok(())
}

/// UM-14's optional step before D3: every local allocation no device requires leaves
/// VRAM. Runs with the adapter's power sequence held exclusively, contexts suspended and
/// no work pending, so nothing on the GPU can touch what moves.
pub(crate) fn residency_trim_for_d3(host: &dyn Host, a: &AdapterShared) -> Result<(), SimError> {
    // A residency operation waiting for the power sequence holds the residency lock: the
    // trim is optional, so it gives way rather than deadlock.
    let Ok(mut st) = a.mm.residency.try_lock() else {
        return Ok(());
    };
    lock(&a.mm.vidmm).power_thread = Some(std::thread::current().id());
    let r = (|| {
        let idle: Vec<KmtHandle> = st
            .entries
            .iter()
            .filter(|(_, e)| e.count == 0 && matches!(e.place, Place::Local { .. }))
            .map(|(h, _)| *h)
            .collect();
        for h in idle {
            evict_one(host, a, &mut st, h)?;
        }
        Ok(())
    })();
    lock(&a.mm.vidmm).power_thread = None;
    r
}

/// Forgets allocation `h` as it is destroyed: unmaps what is mapped (unless the device
/// is lost: no paging runs, its tables go with the process), frees the VA and returns its
/// VRAM. `false`: VidMm did not track it.
pub(crate) fn residency_release(
    host: &dyn Host,
    a: &AdapterShared,
    h: KmtHandle,
) -> Result<bool, SimError> {
    let mut st = lock(&a.mm.residency);
    let Some((place, pid, va, pages, bytes, t)) = st
        .entries
        .get(&h)
        .map(|e| (e.place, e.pid, e.va, e.pages, e.bytes(), tag(e)))
    else {
        return Ok(false);
    };
    // The record goes only once nothing maps the memory: a failed unmap keeps it (and its
    // VRAM) accounted for. The VAs the process mapped it at go first (`vidmm::va`).
    crate::vidmm::va::mapping::gpu_va_allocation_destroyed(host, a, h)?;
    // Its own VA, where create gave it one.
    match (va, place, a.device.is_lost()) {
        (None, _, _) => {}
        (Some(va), _, true) => crate::vidmm::mmu::vidmm_forget(a, pid, va, pages),
        (Some(va), Place::Evicted, false) => crate::vidmm::mmu::vidmm_release_va(a, pid, va)?,
        (Some(va), _, false) => crate::vidmm::mmu::vidmm_unmap(host, a, pid, va, pages, t)?,
    }
    if let Some(Entry {
        backing: Backing::Pages(p),
        ..
    }) = st.entries.remove(&h)
    {
        // Nothing maps these pages and no paging operation is left that names them
        // (VidMm waits for each transfer).
        for page in p {
            a.device
                .memory()
                .free_system(rvgpu_hw::addr::BusAddr::new(page.bus_addr));
        }
    }
    if let Place::Local { segment, offset } = place {
        release_local(a, &mut st, segment, offset, bytes);
    }
    Ok(true)
}

/// A paging TRANSFER of `bytes` from `src` to `dst` for `owner`'s allocation `kmd`;
/// waits for it.
///
/// A system-memory side is `SegmentId` 0 with an MDL of its pages (DXGKARG_BUILDPAGINGBUFFER
/// page; GPU segments: the implicit system-memory segment is always id 0). As dxgmms2's
/// `VIDMM_GLOBAL::MemoryTransferInternal` does, `MdlOffset` is 0 and the MDL describes the
/// range being moved; a range longer than one MDL can list goes in several transfers, each
/// with its own MDL and `TransferOffset` = its offset in the allocation, the segment side
/// keeping the allocation's address (`VIDMM_MEMORY_SEGMENT::TransferMemorySlow`).
/// `TransferStart` / `TransferEnd` mark the first and last part, as `MemoryTransferInternal`
/// sets them.
fn paging_transfer(
    host: &dyn Host,
    a: &AdapterShared,
    kmd: usize,
    owner: KmtHandle,
    src: Side,
    dst: Side,
    bytes: u64,
) -> Result<(), SimError> {
    use crate::vidmm::mdl::{Mdl, MAX_MDL_PAGES};
    let _power = paging_power(host, a)?;
    let node = paging_node(a);
    let pages = match (&src, &dst) {
        (Side::Pages(p), _) | (_, Side::Pages(p)) => Some(p.clone()),
        _ => None,
    };
    let part = pages
        .as_ref()
        .map_or(bytes, |_| MAX_MDL_PAGES as u64 * PAGE);
    let mut last = None;
    let drops = host.adapter_drops(a);
    let mut off = 0u64;
    while off < bytes {
        let len = part.min(bytes - off);
        // The MDL of this part's pages, alive until the driver has built the operation.
        let mdl = match &pages {
            Some(p) => {
                let first = (off / PAGE) as usize;
                let n = len.div_ceil(PAGE) as usize;
                let range = p.get(first..first + n).ok_or(SimError::Internal(
                    "backing store shorter than the transfer",
                ))?;
                Some(Mdl::of_pages(range).ok_or(SimError::Internal("MDL over its page limit"))?)
            }
            None => None,
        };
        let side = |s: &Side| match s {
            Side::Segment(id, addr) => super::paging::segment_side(*id, *addr),
            Side::Pages(_) => {
                super::paging::mdl_side(mdl.as_ref().map_or(std::ptr::null_mut(), Mdl::as_ptr))
            }
        };
        let flags = DXGK_TRANSFERFLAGS::default()
            .with(DXGK_TRANSFERFLAGS::TransferStart, u32::from(off == 0))
            .with(
                DXGK_TRANSFERFLAGS::TransferEnd,
                u32::from(off + len == bytes),
            );
        let mut op = DXGKARG_BUILDPAGINGBUFFER_0 {
            Transfer: DXGKARG_BUILDPAGINGBUFFER_Transfer {
                hAllocation: kmd as HANDLE,
                TransferOffset: u32::try_from(off)
                    .map_err(|_| SimError::Internal("transfer offset past 4 GiB"))?,
                TransferSize: len as SIZE_T,
                Source: side(&src),
                Destination: side(&dst),
                Flags: flags,
                MdlOffset: 0,
            },
        };
        let ids = crate::vidmm::paging::paging_op(
            host,
            a,
            node,
            DXGK_OPERATION_TRANSFER,
            &mut op,
            vec![owner],
        )?;
        drop(mdl);
        last = ids.last().copied().or(last);
        off += len;
    }
    // A move an adapter-wide recovery takes is not done again: the reset lost the content
    // (`vidmm::inflight`).
    let seq = last
        .and_then(|id| crate::vidmm::inflight::register(a, node, vec![id], drops, Redo::Nothing));
    if let Some(seq) = seq {
        crate::vidmm::inflight::wait(host, a, seq)?;
    }
    Ok(())
}

/// What a count reaching zero recorded, kept while a MakeResident may still fail.
struct Idle {
    after: Vec<QueuedWork>,
    eager: bool,
    since: u64,
}

/// Takes back the counts a failed MakeResident raised, last first, restoring what each
/// 0 -> 1 step cleared (so an allocation queued work may still use stays unevictable).
fn undo(st: &mut State, raised: Vec<(KmtHandle, Option<Idle>)>) {
    for (h, idle) in raised.into_iter().rev() {
        if let Some(e) = st.entries.get_mut(&h) {
            e.count = e.count.saturating_sub(1);
            if let Some(i) = idle {
                e.idle_after = i.after;
                e.eager = i.eager;
                e.idle_since = i.since;
            }
        }
    }
}

/// Returns VRAM to its segment's heap, poisoned first.
fn release_local(a: &AdapterShared, st: &mut State, segment: u32, offset: u64, bytes: u64) {
    let base = lock(&a.mm.memory_model).segment_base(segment).unwrap_or(0);
    let first = ((base + offset) / 8) as usize;
    let n = (bytes / 8) as usize;
    if let Some(words) = a.device.memory().vram_words().get(first..first + n) {
        for w in words {
            w.store(VRAM_POISON, Ordering::Release);
        }
    }
    if let Some(h) = heap(st, a, segment) {
        h.release(offset, bytes);
    }
}
