//! VidMm residency (docs/memory.md "Residency"): where each user allocation lives,
//! who needs it resident, and the paging that moves it.
//!
//! - **Placement.** An allocation the CPU never maps goes to local memory (VRAM) when the
//!   driver's segment set allows it, in the driver's `PreferredSegment` order; what the CPU
//!   maps stays in its backing store in system memory, mapped by GPU page tables page by page
//!   with `Segment` 0 and never into the aperture (this VidMm cannot rotate a process's
//!   CPU view between the BAR and system memory, which Windows does when it evicts a mapped
//!   allocation). Placement happens at the first MakeResident: a new allocation is on no
//!   residency list and its VA is reserved but unmapped. Its first page-in copies its zeroed
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
//!   that invalidates its pages, FLUSHTLB. The VA stays reserved: a GPU access meanwhile page
//!   faults and puts the device in error ("Access to nonresident allocation"). VidMm poisons
//!   the VRAM it takes back ([`VRAM_POISON`]), so a transfer that did not happen shows.
//! - **Page-in** (MakeResident of an evicted allocation): VRAM found (evicting idle
//!   allocations if needed, least recently released first), TRANSFER in, UPDATEPAGETABLE.
//!   Everything completes before the thunk returns, so `PagingFenceValue` is already reached.
//! - **Budget** (`OsConfig::vram_budget`, "Process residency budgets"): MakeResident past the
//!   process's budget fails with `STATUS_NO_MEMORY` and the bytes to trim, changing no count;
//!   Evict reports the bytes still over budget.
//! - **D3** (UM-14): after every context is suspended and every doorbell disconnected, VidMm
//!   evicts the local allocations no device requires before the GPU powers down. Rings are
//!   CPU-written, so they live in the aperture and have nothing to leave VRAM for. The device
//!   keeps VRAM across D3 (hardware.md §13.3), so required allocations stay.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;

use rvgpu_ddi::basic::*;
use rvgpu_ddi::memory::DXGK_SEGMENTFLAGS;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::tdr::*;

use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::dxgkrnl::adapter::AdapterShared;
use crate::machine::Machine;
use crate::ob::KmtHandle;
use crate::ums::QueuedWork;
use crate::vidmm::gpuva::{MapAttrs, Phys};
use crate::vidmm::mmu::{paging_node, LeafTag, TABLE_SHARE};

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// What VidMm writes over VRAM it takes back (eviction, destruction).
pub const VRAM_POISON: u64 = 0xE71C_7ED0_E71C_7ED0;

/// Where an allocation's contents are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// System memory (the implicit system-memory segment, `Segment` 0 in its PTEs): its own
    /// pages, which is where everything the CPU maps lives. Named after the aperture segment
    /// because that is the id that puts system memory in a segment set ("GPU segments").
    Aperture,
    /// Local memory: `segment` and the offset in it.
    Local { segment: u32, offset: u64 },
    /// Not resident: the contents are in the backing store, the VA reserved and unmapped.
    Evicted,
}

/// VidMm's residency record of one allocation.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) pid: ProcessId,
    device: KmtHandle,
    /// The driver's handle (`hAllocation` of the paging operations).
    kmd: usize,
    pub(crate) va: u64,
    pub(crate) pages: u64,
    /// Bus address of the allocation's own system memory (the pages the CPU maps, and
    /// where it lives when placed in system memory).
    sysmem: u64,
    /// Where its contents are while it is not in VRAM.
    backing: Backing,
    /// Local segments it may live in, best first.
    order: Vec<u32>,
    /// The aperture is in its segment set.
    aperture: bool,
    pub(crate) place: Place,
    /// The device's residency count.
    count: u32,
    /// Work queued when the count reached zero; eviction waits for it.
    idle_after: Vec<QueuedWork>,
    /// Released without `EvictOnlyIfNecessary`: leaves VRAM as soon as it is idle.
    eager: bool,
    /// The VRAM copy may hold GPU writes the backing store lacks: set by an Evict without
    /// `NotWrittenTo` (the GPU may have written since it was made resident), cleared when the
    /// two copies are made equal (page-in, transfer out). Never reset by MakeResident: writes
    /// of an earlier residency that never left VRAM still need their transfer.
    dirty: bool,
    /// When the count reached zero (least recently released goes first).
    idle_since: u64,
}

impl Entry {
    fn bytes(&self) -> u64 {
        self.pages * PAGE
    }

    /// The backing store as one side of a transfer: system memory by MDL, never by an
    /// aperture address (the aperture holds only what VidMm maps there, `vidmm::aperture`).
    fn backing_side(&self) -> Side {
        Side::Pages(self.system_pages().into_iter().map(|p| p.1).collect())
    }

    /// The system pages that hold the allocation when it is not in VRAM, page by page: the
    /// backing store, which is also what GPU page tables map (`Segment` 0) while it lives in
    /// system memory ("GPU segments": not mapped into the aperture).
    fn system_pages(&self) -> Vec<Phys> {
        match &self.backing {
            Backing::Own => pages_of((0, self.sysmem), self.pages),
            Backing::Pages(p) => p.iter().map(|p| (0, p.bus_addr)).collect(),
        }
    }
}

/// An allocation's backing store (docs/memory.md "System memory and MDLs").
#[derive(Debug)]
pub(crate) enum Backing {
    /// Its own system memory: what the CPU maps, which never leaves for VRAM, so no
    /// transfer ever names it.
    Own,
    /// System memory pages, each its own region of the bus (so no two are physically
    /// adjacent), that VidMm names to the driver by MDLs (`SegmentId` 0). On Windows a
    /// backing store is pageable memory whose physical pages are wherever the memory manager
    /// put them; these are deliberately scattered so a driver that assumes otherwise fails.
    Pages(Vec<rvgpu_device::SysAlloc>),
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
                    mem.free_system(p.bus_addr);
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

/// Per-adapter residency state (behind `VidMmState::residency`).
#[derive(Debug, Default)]
pub struct State {
    heaps: Option<Vec<Heap>>,
    pub(crate) entries: HashMap<KmtHandle, Entry>,
    tick: u64,
}

impl State {
    /// Where allocation `h`'s pages are now, page by page (`None`: evicted or not tracked).
    pub(crate) fn pages(&self, h: KmtHandle) -> Option<Vec<Phys>> {
        let e = self.entries.get(&h)?;
        match e.place {
            Place::Evicted => None,
            Place::Local { segment, offset } => Some(pages_of((segment, offset), e.pages)),
            Place::Aperture => Some(e.system_pages()),
        }
    }
}

/// Free VRAM of one local segment: offset → length, page-aligned, coalesced.
#[derive(Debug)]
struct Heap {
    segment: u32,
    /// The segment's `BaseAddress` (VRAM offset): alignment is of the address, not the offset.
    base: u64,
    free: BTreeMap<u64, u64>,
}

impl Heap {
    /// First fit. A request of a large page or more (`large`, 0 when the driver has no large
    /// pages) first looks for room at an address aligned to a large page, so that VidMm can
    /// map it with large pages (`LeafTag::large_pages`); then anywhere.
    fn alloc(&mut self, bytes: u64, large: u64) -> Option<u64> {
        if large != 0 && bytes >= large {
            if let Some(at) = self.alloc_aligned(bytes, large) {
                return Some(at);
            }
        }
        let (&start, &len) = self.free.iter().find(|(_, &len)| len >= bytes)?;
        self.free.remove(&start);
        if len > bytes {
            self.free.insert(start + bytes, len - bytes);
        }
        Some(start)
    }

    /// First fit at an address aligned to `align`; what is left before and after stays free.
    fn alloc_aligned(&mut self, bytes: u64, align: u64) -> Option<u64> {
        let base = self.base;
        let (start, len, at) = self.free.iter().find_map(|(&start, &len)| {
            let at = (base + start).checked_next_multiple_of(align)? - base;
            (at + bytes <= start + len).then_some((start, len, at))
        })?;
        self.free.remove(&start);
        if at > start {
            self.free.insert(start, at - start);
        }
        let end = at + bytes;
        if start + len > end {
            self.free.insert(end, start + len - end);
        }
        Some(at)
    }

    fn release(&mut self, start: u64, bytes: u64) {
        let (mut start, mut len) = (start, bytes);
        if let Some(next) = self.free.remove(&(start + len)) {
            len += next;
        }
        if let Some((&prev, &plen)) = self.free.range(..start).next_back() {
            if prev + plen == start {
                self.free.remove(&prev);
                start = prev;
                len += plen;
            }
        }
        self.free.insert(start, len);
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
fn segment_address(a: &AdapterShared, segment: u32, offset: u64) -> u64 {
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
        base_va: e.va,
        native_fence: false,
        large_pages: true,
    }
}

fn pages_of(first: Phys, pages: u64) -> Vec<Phys> {
    (0..pages).map(|i| (first.0, first.1 + i * PAGE)).collect()
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

impl Machine {
    /// Where allocation `h` of adapter `i` is and its residency count (tests; `None` for
    /// an allocation VidMm does not track, e.g. on an adapter without GPU VA).
    pub fn allocation_residency(&self, i: usize, h: KmtHandle) -> Option<(Place, u32)> {
        let a = self.adapter_shared(i).ok()?;
        let st = lock(&a.mm.residency);
        st.entries.get(&h).map(|e| (e.place, e.count))
    }

    /// The bus addresses of allocation `h`'s backing-store pages when VidMm gave it a
    /// scattered backing store of its own (tests; `None` otherwise).
    pub fn allocation_backing_pages(&self, i: usize, h: KmtHandle) -> Option<Vec<u64>> {
        let a = self.adapter_shared(i).ok()?;
        let st = lock(&a.mm.residency);
        match &st.entries.get(&h)?.backing {
            Backing::Pages(p) => Some(p.iter().map(|p| p.bus_addr).collect()),
            Backing::Own => None,
        }
    }

    /// The segment address VidMm gives the driver for `offset` in segment `segment` of
    /// adapter `i` (tests).
    pub fn segment_address(&self, i: usize, segment: u32, offset: u64) -> Option<u64> {
        let a = self.adapter_shared(i).ok()?;
        Some(segment_address(a, segment, offset))
    }

    /// Records a new allocation: not resident, on no residency list, its VA reserved.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn residency_track(
        st: &mut State,
        h: KmtHandle,
        pid: ProcessId,
        device: KmtHandle,
        kmd: usize,
        va: u64,
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
        &self,
        a: &AdapterShared,
        st: &mut State,
        pid: ProcessId,
        order: &[u32],
        bytes: u64,
        over_budget: bool,
    ) -> Result<Option<(u32, u64)>, SimError> {
        if let (Some(budget), false) = (self.config().os.vram_budget, over_budget) {
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
                    let os = lock(&a.ums);
                    st.entries
                        .iter()
                        .filter(|(_, e)| {
                            matches!(e.place, Place::Local { segment: s, .. } if s == segment)
                                && e.count == 0
                                && e.idle_after.iter().all(|w| w.done(&os))
                        })
                        .min_by_key(|(_, e)| e.idle_since)
                        .map(|(h, _)| *h)
                };
                match victim {
                    Some(v) => self.evict_one(a, st, v)?,
                    None => break,
                }
            }
        }
        Ok(None)
    }

    /// Moves local allocation `h` out of VRAM (module docs: TRANSFER, UPDATEPAGETABLE,
    /// FLUSHTLB), leaving its VA reserved and unmapped.
    fn evict_one(&self, a: &AdapterShared, st: &mut State, h: KmtHandle) -> Result<(), SimError> {
        let Some(e) = st.entries.get(&h) else {
            return Ok(());
        };
        let Place::Local { segment, offset } = e.place else {
            return Ok(());
        };
        let (pid, va, pages, bytes, kmd, device, backing, dirty, t) = (
            e.pid,
            e.va,
            e.pages,
            e.bytes(),
            e.kmd,
            e.device,
            e.backing_side(),
            e.dirty,
            tag(e),
        );
        if dirty {
            self.paging_transfer(
                a,
                kmd,
                device,
                Side::Segment(segment, segment_address(a, segment, offset)),
                backing,
                bytes,
            )?;
        }
        self.vidmm_unmap_keep(a, pid, va, pages, t)?;
        // The VAs the process mapped it at (`vidmm::va`) fault too until it returns.
        self.gpu_va_allocation_evicted(a, h)?;
        release_local(a, st, segment, offset, bytes);
        if let Some(e) = st.entries.get_mut(&h) {
            e.place = Place::Evicted;
            e.dirty = false;
        }
        Ok(())
    }

    /// Brings evicted allocation `h` back: VRAM if it can have it, else its backing store
    /// through the aperture. `false`: no room anywhere it may live.
    fn residency_page_in(
        &self,
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
        let (pid, va, pages, bytes, kmd, device, system, backing, order, aperture, t) = (
            e.pid,
            e.va,
            e.pages,
            e.bytes(),
            e.kmd,
            e.device,
            e.system_pages(),
            e.backing_side(),
            e.order.clone(),
            e.aperture,
            tag(e),
        );
        let place = match self.place_local(a, st, pid, &order, bytes, over_budget)? {
            Some((segment, offset)) => {
                let moved = self
                    .paging_transfer(
                        a,
                        kmd,
                        device,
                        backing,
                        Side::Segment(segment, segment_address(a, segment, offset)),
                        bytes,
                    )
                    // The process's own mappings first, its VidMm VA last (the driver
                    // records where an allocation is from the last mapping at offset 0).
                    .and_then(|()| {
                        self.gpu_va_allocation_placed(a, h, &pages_of((segment, offset), pages))
                    })
                    .and_then(|()| {
                        self.vidmm_map_at(
                            a,
                            pid,
                            va,
                            &pages_of((segment, offset), pages),
                            MapAttrs::default(),
                            t,
                        )
                    });
                if let Err(e) = moved {
                    release_local(a, st, segment, offset, bytes);
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
                self.gpu_va_allocation_placed(a, h, &system)?;
                self.vidmm_map_at(a, pid, va, &system, MapAttrs::default(), t)?;
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
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        handles: &[KmtHandle],
        cant_trim_further: bool,
    ) -> Result<(), MakeResidentFail> {
        let mut st = lock(&a.mm.residency);
        let pid = self.check_handles(a, device, handles)?;
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
        if let Some(budget) = self.config().os.vram_budget {
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
            let placed = match self.residency_page_in(a, &mut st, h, cant_trim_further) {
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
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        handles: &[KmtHandle],
        evict_only_if_necessary: bool,
        not_written_to: bool,
    ) -> Result<u64, SimError> {
        let pid = {
            let mut st = lock(&a.mm.residency);
            let pid = self.check_handles(a, device, handles)?;
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
            let queued = crate::ums::queued_work(&lock(&a.ums), device);
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
        self.residency_tick(a)?;
        let st = lock(&a.mm.residency);
        Ok(self
            .config()
            .os
            .vram_budget
            .map_or(0, |b| required_local(&st, pid).saturating_sub(b)))
    }

    /// Every handle is a live allocation of `device` that VidMm tracks; returns its process.
    fn check_handles(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        handles: &[KmtHandle],
    ) -> Result<ProcessId, SimError> {
        let os = lock(&a.ums);
        let pid = match os.devices.get(&device) {
            None => return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER)),
            Some(d) if d.in_error => return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED)),
            Some(d) => d.process,
        };
        let ok = !handles.is_empty()
            && handles.iter().all(|h| {
                os.allocations
                    .get(h)
                    .is_some_and(|al| al.device == device && !al.closed)
            });
        // Allocations VidMm does not track (an adapter without GPU VA, where they are system
        // memory used by bus address) have nothing to page and are always resident.
        if !ok {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        Ok(pid)
    }

    /// VidMm's entry work: evicts what was released without `EvictOnlyIfNecessary` and whose
    /// work has finished.
    pub(crate) fn residency_tick(&self, a: &AdapterShared) -> Result<(), SimError> {
        let mut st = lock(&a.mm.residency);
        let due: Vec<KmtHandle> = {
            let os = lock(&a.ums);
            st.entries
                .iter()
                .filter(|(_, e)| {
                    e.eager
                        && e.count == 0
                        && matches!(e.place, Place::Local { .. })
                        && e.idle_after.iter().all(|w| w.done(&os))
                })
                .map(|(h, _)| *h)
                .collect()
        };
        for h in due {
            self.evict_one(a, &mut st, h)?;
        }
        Ok(())
    }

    /// UM-14's optional step before D3: every local allocation no device requires leaves
    /// VRAM. Runs with the adapter's power sequence held exclusively, contexts suspended and
    /// no work pending, so nothing on the GPU can touch what moves.
    pub(crate) fn residency_trim_for_d3(&self, a: &AdapterShared) -> Result<(), SimError> {
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
                self.evict_one(a, &mut st, h)?;
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
        &self,
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
        self.gpu_va_allocation_destroyed(a, h)?;
        match (place, a.device.is_lost()) {
            (_, true) => self.vidmm_forget(a, pid, va, pages),
            (Place::Evicted, false) => self.vidmm_release_va(a, pid, va)?,
            (_, false) => self.vidmm_unmap(a, pid, va, pages, t)?,
        }
        if let Some(Entry {
            backing: Backing::Pages(p),
            ..
        }) = st.entries.remove(&h)
        {
            // Nothing maps these pages and no paging operation is left that names them
            // (VidMm waits for each transfer).
            for page in p {
                a.device.memory().free_system(page.bus_addr);
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
        &self,
        a: &AdapterShared,
        kmd: usize,
        owner: KmtHandle,
        src: Side,
        dst: Side,
        bytes: u64,
    ) -> Result<(), SimError> {
        use crate::vidmm::mdl::{Mdl, MAX_MDL_PAGES};
        let _power = crate::ums::paging_power(a)?;
        let node = paging_node(a);
        let pages = match (&src, &dst) {
            (Side::Pages(p), _) | (_, Side::Pages(p)) => Some(p.clone()),
            _ => None,
        };
        let part = pages
            .as_ref()
            .map_or(bytes, |_| MAX_MDL_PAGES as u64 * PAGE);
        let mut last = None;
        let mut off = 0u64;
        while off < bytes {
            let len = part.min(bytes - off);
            // The MDL of this part's pages, alive until the driver has built the operation.
            let mdl =
                match &pages {
                    Some(p) => {
                        let first = (off / PAGE) as usize;
                        let n = len.div_ceil(PAGE) as usize;
                        let range = p.get(first..first + n).ok_or_else(|| {
                            SimError::Simulation("backing store shorter than the transfer".into())
                        })?;
                        Some(Mdl::of_pages(range).ok_or_else(|| {
                            SimError::Simulation("MDL over its page limit".into())
                        })?)
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
                        .map_err(|_| SimError::Simulation("transfer offset past 4 GiB".into()))?,
                    TransferSize: len as SIZE_T,
                    Source: side(&src),
                    Destination: side(&dst),
                    Flags: flags,
                    MdlOffset: 0,
                },
            };
            let ids = self.paging_op(a, node, DXGK_OPERATION_TRANSFER, &mut op, vec![owner])?;
            drop(mdl);
            last = ids.last().copied().or(last);
            off += len;
        }
        if let Some(id) = last {
            self.vidmm_wait(a, node, id)?;
        }
        Ok(())
    }
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
