//! VidMm's GpuMmu work: a process's GPU VA space from `DxgkDdiCreateProcess` to
//! `DxgkDdiDestroyProcess`, its root given to every context through
//! `DxgkDdiSetRootPageTable`, and every page-table change carried out **only** by the driver:
//! `DxgkDdiBuildPagingBuffer(UPDATEPAGETABLE)` and `(FLUSHTLB)` submitted on the paging node
//! (docs/memory.md "Who writes page tables"; Microsoft's "GpuMmu model" pages).
//!
//! Strictness: after the driver's paging buffers complete, VidMm walks the tables
//! with the device's own walker and compares every page with what it asked for. A page the
//! driver did not map, mapped elsewhere or with other permissions, or left mapped after an
//! unmap, is a simulation fault naming the page: the driver did not carry out a paging
//! operation. A FLUSHTLB the driver did not turn into an invalidation is caught the same way
//! (the device's TLB must hold nothing of the root afterwards).

use std::sync::atomic::Ordering;

use rvgpu_ddi::allocation::*;
use rvgpu_ddi::basic::*;
use rvgpu_ddi::memory::*;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::tdr::*;
use rvgpu_device::device::mmu::Mmu;

use crate::adapter::ddi::{self};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::os::answers::{Invalidations, Pasids};
use crate::state::vidmm::gpuva::{
    AddressSpace, Geometry, MapAttrs, OsPte, Phys, TableHeap, Update, VaError,
};
use crate::state::vidmm::Redo;
use crate::vidmm::host::Host;
use crate::vidmm::inflight::Waited;
use crate::vidmm::paging::paging_node;

mod check;
pub(crate) mod system_space;

pub(crate) use crate::state::vidmm::mmu::PAGING_PID;
pub use crate::state::vidmm::mmu::{VidMm, VmProcess};

pub use crate::vidmm::leaf::LeafTag;

use check::vidmm_check;
pub(crate) use system_space::{close_paging_process, open_paging_process, paging_process_kmd};

/// First VA of user allocations; each process starts at its own multiple of [`VA_STRIDE`]
/// above it (see `gpuva`'s module docs). Below it VidMm maps the OS's own pages a process
/// uses (fence storage) at their device address, which is below `VRAM_BASE + VRAM` (< 2 TiB).
const VA_BASE: u64 = 0x4000_0000_0000;
const VA_STRIDE: u64 = 0x0010_0000_0000;
/// Where the paging process's own reservations would start; the OS pages it maps for the
/// CMP sit at their device addresses, below `VA_BASE`.
const PAGING_VA_BASE: u64 = 0x7000_0000_0000;

/// Share of the page-table segment VidMm uses for page tables, from its start. VRAM above it
/// holds allocations (`vidmm::residency`) up to the half of VRAM local native-fence storage
/// takes from the top.
pub(crate) const TABLE_SHARE: u64 = 4;

/// VidMm's power reference for paging (UMS's `paging_power` rule): the adapter is in D0 and
/// the paging counts as pending until the guard is dropped.
pub(crate) fn paging_power<'a>(
    host: &dyn Host,
    a: &'a AdapterShared,
) -> Result<PagingPower<'a>, SimError> {
    host.paging_power(a)?;
    Ok(PagingPower { a })
}

/// See [`paging_power`].
pub(crate) struct PagingPower<'a> {
    a: &'a AdapterShared,
}

impl Drop for PagingPower<'_> {
    fn drop(&mut self) {
        lock(&self.a.mm.vidmm).paging_end();
    }
}

fn geometry(a: &AdapterShared) -> Option<Geometry> {
    lock(&a.mm.memory_model).geometry()
}

fn sim(msg: String) -> SimError {
    SimError::Simulation(msg)
}

/// Slot `$slot` of adapter `$a`'s table, which the driver of a GpuMmu adapter fills: an empty
/// one (or no table) is a simulation error.
macro_rules! gpummu_ddi {
    ($a:expr, $slot:ident) => {
        $a.table
            .get()
            .and_then(|t| $crate::adapter::ddi::in_table!(t, $slot))
            .ok_or_else(|| $crate::SimError::NoDdi(stringify!($slot)))
    };
}

fn va_error(e: VaError) -> SimError {
    match e {
        VaError::NoTables => SimError::DdiFailed(STATUS_NO_MEMORY),
        VaError::BadRange => SimError::DdiFailed(STATUS_INVALID_PARAMETER),
    }
}

/// The device physical address of `offset` in local segment `segment`.
pub(crate) fn segment_pa(a: &AdapterShared, segment: u32, offset: u64) -> Option<u64> {
    let base = lock(&a.mm.memory_model).segment_base(segment)?;
    rvgpu_hw::addr::VRAM_BASE
        .checked_add(base)?
        .checked_add(offset)
}

fn dxgk_pte(e: &OsPte) -> DXGK_PTE {
    let f = DXGK_PTE_0::from_value(0)
        .with(DXGK_PTE_0::Valid, u64::from(e.valid))
        .with(DXGK_PTE_0::ReadOnly, u64::from(e.read_only))
        .with(DXGK_PTE_0::NoExecute, u64::from(e.no_execute))
        .with(DXGK_PTE_0::CacheCoherent, u64::from(e.cache_coherent))
        .with(DXGK_PTE_0::Segment, u64::from(e.segment))
        .with(DXGK_PTE_0::LargePage, u64::from(e.large));
    DXGK_PTE::from_raw(f.Value, e.page)
}

/// What the GPU's tables for process `pid` map at `va`, walked as the
/// device walks them: the device address and the size of the page (4 KiB, or 2 MiB for a
/// large page). `None`: no such space, or the walk faults (tests).
pub fn gpu_translate(
    a: &AdapterShared,
    pid: ProcessId,
    va: rvgpu_hw::addr::GpuVa,
) -> Option<(u64, u64)> {
    let root = {
        let v = lock(&a.mm.vidmm);
        let p = v.processes.get(&pid)?;
        segment_pa(a, p.space.geometry.segment, p.space.root)?
    };
    Mmu::walk_now(a.device.memory(), root, va)
        .ok()
        .map(|(pa, size)| (pa.get(), size))
}

/// `DxgkDdiCreateProcess` and a new VA space for `pid` on adapter `a` (a GpuMmu adapter
/// only; `Ok(None)` otherwise). Returns the KMD's process handle.
pub(crate) fn vidmm_create_process(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
) -> Result<Option<usize>, SimError> {
    let base = VA_BASE + u64::from(pid.0 % 64) * VA_STRIDE;
    vidmm_create_space(host, a, pid, DXGK_CREATEPROCESSFLAGS::default(), base)
}

/// `DxgkDdiCreateProcess` with `flags`, and a VA space whose reservations start at
/// `base`.
fn vidmm_create_space(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    flags: DXGK_CREATEPROCESSFLAGS,
    base: u64,
) -> Result<Option<usize>, SimError> {
    if geometry(a).is_none() {
        return Ok(None);
    }
    let kmd = ddi_create_process(a, pid, flags)?;
    vidmm_new_space(host, a, pid, kmd, base)?;
    Ok(Some(kmd))
}

/// A VA space for `pid` (whose KMD process is `kmd`) with its root initialised through
/// the driver's paging buffers.
fn vidmm_new_space(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    kmd: usize,
    base: u64,
) -> Result<(), SimError> {
    let g = geometry(a).ok_or_else(|| sim("VA space on a non-GpuMmu adapter".into()))?;
    let (space, init) = {
        let mut v = lock(&a.mm.vidmm);
        let size = lock(&a.mm.memory_model)
            .segment(g.segment)
            .map_or(0, |s| s.Size as u64);
        let heap = v
            .heap
            .get_or_insert_with(|| TableHeap::new(0, size / TABLE_SHARE, g.table_bytes));
        AddressSpace::new(g, heap, rvgpu_hw::addr::GpuVa::new(base)).map_err(va_error)?
    };
    // The space enters the books in its turn: no change to it can reach the paging engine
    // ahead of its root's initialisation.
    vidmm_commit(host, a, LeafTag::default(), |v| {
        v.processes.insert(
            pid,
            VmProcess {
                kmd,
                space,
                arena: None,
            },
        );
        // After the change, under the same lock (`crate::ums::root`).
        a.mm.root_generation.fetch_add(1, Ordering::SeqCst);
        Ok(Some((kmd, vec![init], ())))
    })
    .map(|_| ())
}

/// Reserves a VA in `pid`'s space and maps `phys` there through the driver. Returns the VA.
pub(crate) fn vidmm_map(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    phys: &[Phys],
    attrs: MapAttrs,
    tag: LeafTag,
) -> Result<u64, SimError> {
    let va = vidmm_reserve(a, pid, phys.len() as u64 * 4096)?;
    match vidmm_map_at(host, a, pid, va, phys, attrs, tag) {
        Ok(()) => Ok(va),
        Err(e) => {
            let _ = vidmm_release_va(a, pid, va);
            Err(e)
        }
    }
}

/// Reserves `bytes` (whole pages) of VA in `pid`'s space, mapping nothing.
pub(crate) fn vidmm_reserve(
    a: &AdapterShared,
    pid: ProcessId,
    bytes: u64,
) -> Result<u64, SimError> {
    let mut v = lock(&a.mm.vidmm);
    let p = v.space_of(pid)?;
    p.space.reserve(bytes).map_err(va_error)
}

/// Maps `phys` at `va`, which VidMm reserved in `pid`'s space before (a fresh
/// reservation, or an evicted allocation's VA when it comes back); with large
/// pages where `tag` allows them.
pub(crate) fn vidmm_map_at(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    va: u64,
    phys: &[Phys],
    attrs: MapAttrs,
    tag: LeafTag,
) -> Result<(), SimError> {
    let starts = if tag.large_pages {
        lock(&a.mm.memory_model).large_pages()
    } else {
        None
    };
    let done = vidmm_commit(host, a, tag.based_at(va), |v| {
        let heap = v
            .heap
            .as_mut()
            .ok_or_else(|| sim("no page-table heap".into()))?;
        let p = v
            .processes
            .get_mut(&pid)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
        let size = p.space.geometry.large_page();
        let may_start = |at: Phys| starts.as_ref().is_some_and(|l| l.may_start(at, size));
        let u = p
            .space
            .map_large(rvgpu_hw::addr::GpuVa::new(va), phys, attrs, heap, may_start)
            .map_err(va_error)?;
        Ok(Some((p.kmd, u, ())))
    })?;
    match done {
        // The tables hold it once the recovery has submitted the batch again.
        Some(((), Waited::Handed)) => Ok(()),
        _ => vidmm_check(a, pid, va, phys.len() as u64),
    }
}

/// Where `[va, va + bytes)` of `pid` lives, as `(segment id, address in it, bytes)` runs
/// of physically contiguous pages: a local segment and its offset, or segment 0 (system
/// memory) and the bus address, as the process's page tables map it. Never an aperture
/// address: the aperture holds only ranges VidMm maps there (`vidmm::aperture`). A process
/// without an address space here uses bus addresses directly.
pub(crate) fn vidmm_runs(
    a: &AdapterShared,
    pid: ProcessId,
    va: u64,
    bytes: u64,
) -> Result<Vec<(u32, u64, u64)>, SimError> {
    let v = lock(&a.mm.vidmm);
    let Some(p) = v.processes.get(&pid) else {
        return Ok(vec![(0, va, bytes)]);
    };
    let mut runs: Vec<(u32, u64, u64)> = Vec::new();
    let mut at = va;
    let end = va
        .checked_add(bytes)
        .ok_or(SimError::DdiFailed(STATUS_INVALID_PARAMETER))?;
    while at < end {
        let page = at - at % 4096;
        let leaf = p
            .space
            .leaf(rvgpu_hw::addr::GpuVa::new(page))
            .ok_or(SimError::DdiFailed(STATUS_INVALID_PARAMETER))?;
        let (seg, base) = leaf.phys;
        let addr = base + (at - page);
        let len = (page + 4096).min(end) - at;
        match runs.last_mut() {
            Some(r) if r.0 == seg && r.1 + r.2 == addr => r.2 += len,
            _ => runs.push((seg, addr, len)),
        }
        at += len;
    }
    Ok(runs)
}

/// Maps the OS's page at device address `pa` into `pid` at the same VA (fence storage the
/// process's queues signal and wait on); nothing if it is mapped already.
pub(crate) fn vidmm_map_os_page(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    pa: u64,
    tag: LeafTag,
) -> Result<(), SimError> {
    let va = pa - pa % 4096;
    let phys = phys_of(a, va).ok_or(SimError::DdiFailed(STATUS_INVALID_PARAMETER))?;
    let mut booked = false;
    let done = vidmm_commit(host, a, tag.based_at(va), |v| {
        // A process with no VA space on this adapter (it never opened it) maps nothing.
        let (Some(p), Some(heap)) = (v.processes.get_mut(&pid), v.heap.as_mut()) else {
            return Ok(None);
        };
        if p.space.leaf(rvgpu_hw::addr::GpuVa::new(va)).is_some() {
            return Ok(None);
        }
        p.space
            .reserve_at(rvgpu_hw::addr::GpuVa::new(va), 4096)
            .map_err(va_error)?;
        match p.space.map(
            rvgpu_hw::addr::GpuVa::new(va),
            &[phys],
            MapAttrs::default(),
            heap,
        ) {
            Ok(u) => {
                booked = true;
                Ok(Some((p.kmd, u, ())))
            }
            Err(e) => {
                let _ = p.space.free(rvgpu_hw::addr::GpuVa::new(va));
                Err(va_error(e))
            }
        }
    });
    match done {
        Ok(Some(((), Waited::Done))) => vidmm_check(a, pid, va, 1),
        Ok(Some(((), Waited::Handed))) => Ok(()),
        Ok(None) => Ok(()),
        Err(e) => {
            if booked {
                // The driver did not map it (e.g. out of memory): VidMm's books must not say
                // it did, or a retry would skip the page.
                let mut v = lock(&a.mm.vidmm);
                if let Some(p) = v.processes.get_mut(&pid) {
                    let _ = p.space.unmap(rvgpu_hw::addr::GpuVa::new(va), 1);
                    let _ = p.space.free(rvgpu_hw::addr::GpuVa::new(va));
                }
            }
            Err(e)
        }
    }
}

/// Unmaps `pages` pages at `va` of `pid` through the driver, flushes the TLB and frees
/// the VA.
pub(crate) fn vidmm_unmap(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    va: u64,
    pages: u64,
    tag: LeafTag,
) -> Result<(), SimError> {
    vidmm_unmap_keep(host, a, pid, va, pages, tag)?;
    vidmm_release_va(a, pid, va)
}

/// Unmaps `pages` pages at `va` of `pid` through the driver and flushes the TLB; the VA
/// stays reserved (an evicted allocation keeps its address).
pub(crate) fn vidmm_unmap_keep(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    va: u64,
    pages: u64,
    tag: LeafTag,
) -> Result<(), SimError> {
    let unmapped = vidmm_commit(host, a, tag.based_at(va), |v| {
        let p = v.space_of(pid)?;
        let u = p
            .space
            .unmap(rvgpu_hw::addr::GpuVa::new(va), pages)
            .map_err(va_error)?;
        Ok(Some((
            p.kmd,
            u,
            (p.kmd, (p.space.geometry.segment, p.space.root)),
        )))
    })?;
    let Some(((kmd, root), waited)) = unmapped else {
        return Ok(());
    };
    let flushed = vidmm_flush(host, a, kmd, root, va, va + pages * 4096)?;
    // The driver has unlinked the leaf tables the unmap emptied and the TLB holds no
    // translation through them: they may be handed out again.
    {
        let mut v = lock(&a.mm.vidmm);
        let v = &mut *v;
        if let (Some(p), Some(heap)) = (v.processes.get_mut(&pid), v.heap.as_mut()) {
            for t in p.space.take_unlinked() {
                heap.free(t);
            }
        }
    }
    match (waited, flushed) {
        (Waited::Done, Waited::Done) => vidmm_check(a, pid, va, pages),
        // The recovery submits both again if its reset dropped them.
        _ => Ok(()),
    }
}

/// Frees the reservation at `va` of `pid` (nothing may be mapped in it).
pub(crate) fn vidmm_release_va(a: &AdapterShared, pid: ProcessId, va: u64) -> Result<(), SimError> {
    let mut v = lock(&a.mm.vidmm);
    if let Some(p) = v.processes.get_mut(&pid) {
        p.space
            .free(rvgpu_hw::addr::GpuVa::new(va))
            .map_err(va_error)?;
    }
    Ok(())
}

/// Drops `pages` pages at `va` of `pid` from VidMm's books without paging (the device is
/// lost and runs nothing; its tables go with the process).
pub(crate) fn vidmm_forget(a: &AdapterShared, pid: ProcessId, va: u64, pages: u64) {
    let mut v = lock(&a.mm.vidmm);
    if let Some(p) = v.processes.get_mut(&pid) {
        let _ = p.space.unmap(rvgpu_hw::addr::GpuVa::new(va), pages);
        let _ = p.space.free(rvgpu_hw::addr::GpuVa::new(va));
    }
}

/// A page-table change of VidMm's: `change` works it out in VidMm's books (under the `vidmm`
/// lock) as `(KMD process, updates, what the caller keeps)`, or `None` when there is nothing to
/// page; the updates then go through `DxgkDdiBuildPagingBuffer(UPDATEPAGETABLE)` on the paging
/// node and are waited for.
///
/// The change is worked out and submitted in one turn (`paging::page_table_turn`): the paging
/// engine runs page-table changes in the order VidMm's books took them, as 24H2's VidMm, whose
/// one worker thread per adapter takes packets from its paging queues in the order
/// `M:VidMmAppendReadyPacket` @0x1400E8870 appended them. Without it an unmap that unlinks an
/// emptied table could reach the GPU after a map on another thread linked a new one in its
/// place. The power reference is taken before the turn, so no turn is held across a power-up
/// (which may page itself); the wait for completion is made after it.
fn vidmm_commit<T>(
    host: &dyn Host,
    a: &AdapterShared,
    tag: LeafTag,
    change: impl FnOnce(&mut VidMm) -> Result<Option<(usize, Vec<Update>, T)>, SimError>,
) -> Result<Option<(T, Waited)>, SimError> {
    let _power = paging_power(host, a)?;
    let node = paging_node(a);
    let (kept, seq) = {
        let _turn = crate::vidmm::paging::page_table_turn(a);
        let Some((kmd, updates, kept)) = change(&mut lock(&a.mm.vidmm))? else {
            return Ok(None);
        };
        let drops = host.adapter_drops(a);
        let ids = vidmm_submit(host, a, node, kmd, &updates, tag)?;
        let redo = Redo::PageTables { kmd, updates, tag };
        (
            kept,
            crate::vidmm::inflight::register(a, node, ids, drops, redo),
        )
    };
    // Not waited for under the turn; a batch an adapter-wide recovery takes is submitted
    // again by it, in order, if the reset dropped it (`vidmm::inflight`).
    let waited = match seq {
        Some(seq) => crate::vidmm::inflight::wait(host, a, seq)?,
        None => Waited::Done,
    };
    Ok(Some((kept, waited)))
}

/// Builds and submits `updates` (one batch of [`vidmm_commit`]); returns the fence IDs of its
/// paging buffers, not waited for.
fn vidmm_submit(
    host: &dyn Host,
    a: &AdapterShared,
    node: u32,
    kmd: usize,
    updates: &[Update],
    tag: LeafTag,
) -> Result<Vec<u32>, SimError> {
    let mut all = Vec::new();
    let cpu = lock(&a.mm.vidmm).cpu_updates;
    for u in updates {
        // An invalidation (every entry zero: an unmap, a fresh directory cleared, or a fresh
        // leaf table's entries outside its first map's run) is one zeroed entry repeated on
        // 24H2 (`Invalidations`).
        let invalidation = u.entries.iter().all(|e| *e == OsPte::default());
        let repeat =
            invalidation && a.os.windows.reading().invalidations == Invalidations::Repeated;
        let mut entries: Vec<DXGK_PTE> = if repeat {
            vec![dxgk_pte(&OsPte::default())]
        } else {
            u.entries.iter().map(dxgk_pte).collect()
        };
        // A leaf map whose range repeats one page of its allocation: 24H2 sets Repeat too
        // (M:VIDMM_GLOBAL::UpdatePageTable @0x1400ABE20: at level 0, when the commit state's
        // repeat window is one 4 KiB page; M:CVirtualAddressAllocator::MapVadVaRange
        // @0x14009AD34 makes that window what the allocation has past the Map's offset when the
        // range is longer) and passes the table's shadow entries from StartIndex, every one
        // the same page (M:VIDMM_PAGE_TABLE::ModifyPageTable @0x1400CD470).
        let repeat_map = u.maps && u.level == 0 && !invalidation && tag.repeat_page.is_some();
        let mut flags = DXGK_UPDATEPAGETABLEFLAGS::default();
        if repeat || repeat_map {
            flags = flags.with(DXGK_UPDATEPAGETABLEFLAGS::Repeat, 1);
        }
        if u.initial {
            flags = flags.with(DXGK_UPDATEPAGETABLEFLAGS::InitialUpdate, 1);
        }
        // The leaves (and large pages) belong to the tagged object; tables and cleared
        // tables to nobody. `NativeFence` is never set: 24H2's VidMm builds an update's flags
        // from InitialUpdate and Use64KBPages only (M:VIDMM_PAGE_TABLE::CommitVirtualAddressRange
        // @0x1400F2030).
        // An invalidation names no allocation and no offset: M:VIDMM_PAGE_TABLE::
        // UpdatePageTableInvalidate @0x1400AB920 passes none to M:VIDMM_GLOBAL::UpdatePageTable
        // @0x1400ABE20, which writes both only with one (`handover::UPDATE_PAGE_TABLE_INVALIDATE`).
        let leaf = u.maps && !invalidation;
        let h_allocation = if leaf { tag.handle } else { 0 };
        let mut op = DXGKARG_BUILDPAGINGBUFFER_0 {
            UpdatePageTable: DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE {
                PageTableLevel: u32::from(u.level),
                hAllocation: h_allocation as HANDLE,
                PageTableAddress: table_address(a, u, cpu)?,
                pPageTableEntries: entries.as_mut_ptr(),
                StartIndex: u.start,
                NumPageTableEntries: u.entries.len() as u32,
                Reserved0: 0,
                Flags: flags,
                // A leaf map carries its range's DriverProtection, as the process passed it
                // (M:VIDMM_PAGE_TABLE::UpdatePageTable @0x1400AAE70 from the commit state,
                // M:CVirtualAddressAllocator::CommitVirtualAddressRange @0x1400ADD10), and so
                // does a directory's update of the same commit (M:VIDMM_PAGE_DIRECTORY::
                // CommitVirtualAddressRange @0x1400F28C0 passes the same commit-state field);
                // an invalidation none (`UpdatePageTableInvalidate`).
                DriverProtection: if leaf || (u.level >= 1 && !invalidation) {
                    tag.driver_protection
                } else {
                    0
                },
                AllocationOffsetInBytes: match (leaf, tag.repeat_page) {
                    (false, _) => 0,
                    (true, Some(at)) => at,
                    (true, None) => u.va.saturating_sub(tag.base_va),
                },
                hProcess: kmd as HANDLE,
                UpdateMode: if cpu {
                    DXGK_PAGETABLEUPDATE_CPU_VIRTUAL
                } else {
                    DXGK_PAGETABLEUPDATE_GPU_PHYSICAL
                },
                pPageTableEntries64KB: std::ptr::null_mut(),
                // The VA the first entry covers, at every level (`UPDATE_BY` writes its
                // caller's page number shifted; for a leaf table's invalidations
                // `UpdatePageTableInvalidate`'s callers pass the range's or the fresh table's
                // VA; a directory, M:VIDMM_PAGE_DIRECTORY::CommitVirtualAddressRange
                // @0x1400F28C0, passes its span's first page plus StartIndex entries' spans).
                FirstPteVirtualAddress: u.va,
            },
        };
        // The arm just written.
        let arm = op.update_page_table();
        a.observer()
            .handed(&rvgpu_ddi::handover::UPDATE_PAGE_TABLE, &arm);
        if invalidation {
            a.observer()
                .handed(&rvgpu_ddi::handover::UPDATE_PAGE_TABLE_INVALIDATE, &arm);
        }
        let ids = crate::vidmm::paging::paging_op(
            host,
            a,
            node,
            DXGK_OPERATION_UPDATE_PAGE_TABLE,
            &mut op,
            Vec::new(),
        )?;
        if cpu {
            lock(&a.mm.vidmm).cpu_updates_sent += 1;
        }
        all.extend(ids);
    }
    Ok(all)
}

/// Where update `u`'s table is, as VidMm names it: by CPU address while it builds the paging
/// process's space (`cpu`; `M:VIDMM_PAGE_TABLE_BASE::GetDriverUpdateAddress` @0x1400ABA84
/// gives `GetCpuVisibleAddress`, VidMm's kernel mapping of the table: here the host's
/// mapping of VRAM, which the driver in the emulator reaches at the same address), else by
/// segment and offset.
fn table_address(
    a: &AdapterShared,
    u: &Update,
    cpu: bool,
) -> Result<DXGK_PAGETABLEUPDATEADDRESS, SimError> {
    if !cpu {
        return Ok(DXGK_PAGETABLEUPDATEADDRESS {
            Anonymous: DXGK_PAGETABLEUPDATEADDRESS_0 {
                GpuPhysical: D3DGPU_PHYSICAL_ADDRESS {
                    SegmentId: u.segment,
                    Padding: 0,
                    SegmentOffset: u.table,
                },
            },
        });
    }
    let mem = a.device.memory();
    let at = segment_pa(a, u.segment, u.table)
        .and_then(|pa| pa.checked_sub(rvgpu_hw::addr::VRAM_BASE))
        .filter(|off| off.saturating_add(rvgpu_hw::mmu::TABLE_SIZE) <= mem.vram_size())
        .ok_or_else(|| sim(format!("page table {:#x} outside VRAM", u.table)))?;
    let base = mem
        .vram_cpu_ptr()
        .ok_or_else(|| sim("no CPU mapping of VRAM for a CPU_VIRTUAL update".into()))?;
    let va = base.as_ptr().cast::<u8>().wrapping_add(at as usize);
    Ok(DXGK_PAGETABLEUPDATEADDRESS {
        Anonymous: DXGK_PAGETABLEUPDATEADDRESS_0 {
            CpuVirtual: va.cast(),
        },
    })
}

/// Page-table updates sent with `UpdateMode = CPU_VIRTUAL` on adapter `a` so far.
pub(crate) fn cpu_updates_sent(a: &AdapterShared) -> u64 {
    lock(&a.mm.vidmm).cpu_updates_sent
}

/// `DxgkDdiBuildPagingBuffer(FLUSH_TLB)` of `[start, end)` for the process whose driver
/// handle is `kmd` and root `root`, waited for: every field as M:VIDMM_GLOBAL::FlushGpuVaTlb
/// @0x1400E8D80 fills it from M:CVirtualAddressAllocator::FlushGpuVaTlb @0x140035D1C
/// (`handover::FLUSH_TLB`).
fn vidmm_flush(
    host: &dyn Host,
    a: &AdapterShared,
    kmd: usize,
    root: (u32, u64),
    start: u64,
    end: u64,
) -> Result<Waited, SimError> {
    let _power = paging_power(host, a)?;
    let node = paging_node(a);
    // In the page-table turn, as the changes it follows, so a recovery's resubmission keeps
    // the order of both.
    let seq = {
        let _turn = crate::vidmm::paging::page_table_turn(a);
        let drops = host.adapter_drops(a);
        let ids = flush_submit(host, a, node, kmd, root, start, end)?;
        let redo = Redo::FlushTlb {
            kmd,
            root,
            start,
            end,
        };
        crate::vidmm::inflight::register(a, node, ids, drops, redo)
    };
    let waited = match seq {
        Some(seq) => crate::vidmm::inflight::wait(host, a, seq)?,
        None => Waited::Done,
    };
    if waited == Waited::Handed {
        // The recovery flushes again after its restart if the reset dropped this one.
        return Ok(waited);
    }
    // The flush ran: the device must hold no translation of the unmapped range (pages
    // still mapped may be cached again meanwhile by queues that keep running).
    let pa = segment_pa(a, root.0, root.1).ok_or_else(|| sim("root outside its segment".into()))?;
    // The TLB is not observable on a PCI board (`None`): checked in-process only.
    if a.device.tlb_holds(pa, start, end) == Some(true) {
        let msg = format!(
            "driver bug: FLUSHTLB for root {pa:#x} completed but the GPU still caches \
             translations of [{start:#x}, {end:#x}) (the paging buffer did not invalidate \
             the TLB)"
        );
        a.state.raise_sim_error(msg.clone());
        return Err(sim(msg));
    }
    Ok(Waited::Done)
}

/// A dropped batch submitted again by an adapter-wide recovery (`vidmm::inflight`): its
/// fence IDs, `None` for what is not redone (content moves: the content is lost).
pub(crate) fn resubmit(
    host: &dyn Host,
    a: &AdapterShared,
    node: u32,
    redo: Redo,
) -> Result<Option<Vec<u32>>, SimError> {
    Ok(Some(match redo {
        Redo::PageTables { kmd, updates, tag } => vidmm_submit(host, a, node, kmd, &updates, tag)?,
        Redo::FlushTlb {
            kmd,
            root,
            start,
            end,
        } => flush_submit(host, a, node, kmd, root, start, end)?,
        Redo::Nothing => return Ok(None),
    }))
}

/// Builds and submits one `DxgkDdiBuildPagingBuffer(FLUSH_TLB)` (every field as [`vidmm_flush`]
/// says); returns its fence IDs, not waited for.
fn flush_submit(
    host: &dyn Host,
    a: &AdapterShared,
    node: u32,
    kmd: usize,
    root: (u32, u64),
    start: u64,
    end: u64,
) -> Result<Vec<u32>, SimError> {
    let mut op = DXGKARG_BUILDPAGINGBUFFER_0 {
        FlushTlb: DXGK_BUILDPAGINGBUFFER_FLUSHTLB {
            RootPageTableAddress: D3DGPU_PHYSICAL_ADDRESS {
                SegmentId: root.0,
                Padding: 0,
                SegmentOffset: root.1,
            },
            hProcess: kmd as HANDLE,
            StartVirtualAddress: start,
            EndVirtualAddress: end,
        },
    };
    // The arm just written.
    a.observer()
        .handed(&rvgpu_ddi::handover::FLUSH_TLB, &op.flush_tlb());
    crate::vidmm::paging::paging_op(host, a, node, DXGK_OPERATION_FLUSH_TLB, &mut op, Vec::new())
}

/// Forgets `pid`'s VA space, `DxgkDdiDestroyProcess`, and returns its tables to the heap: all
/// three whatever happens, as 24H2's `K:DXGPROCESS::DestroyAdapterInfo` @0x14036CF30 closes
/// VidMm's adapter state and calls the DDI with no way to fail. Pages still mapped are VidMm's
/// own error (the caller unmaps first), reported once the process is gone.
pub(crate) fn drop_space(a: &AdapterShared, pid: ProcessId) -> Result<(), SimError> {
    let removed = {
        let mut v = lock(&a.mm.vidmm);
        let p = v.processes.remove(&pid);
        a.mm.root_generation.fetch_add(1, Ordering::SeqCst);
        p
    };
    let Some(p) = removed else {
        return Ok(());
    };
    let called = ddi_destroy_process(a, p.kmd);
    {
        let mut v = lock(&a.mm.vidmm);
        if pid == PAGING_PID {
            v.paging_kmd = None;
        }
        if let Some(heap) = &mut v.heap {
            for t in p.space.tables() {
                heap.free(t);
            }
        }
    }
    called?;
    if p.space.mapped_pages() != 0 {
        return Err(sim(format!(
            "process {} destroyed with {} GPU pages still mapped",
            pid.0,
            p.space.mapped_pages()
        )));
    }
    Ok(())
}

/// `DxgkDdiDestroyProcess` of the driver's process `kmd`. 24H2 ignores its status:
/// `K:ADAPTER_RENDER::DdiDestroyProcess` @0x1403C0508 logs any status but success as "Driver
/// returned an invalid NTSTATUS code" and `DestroyAdapterInfo` goes on, so the OS's process is
/// gone whatever the driver answered (a driver that refuses keeps its record for good).
fn ddi_destroy_process(a: &AdapterShared, kmd: usize) -> Result<(), SimError> {
    let Some(f) = a
        .table
        .get()
        .and_then(|t| ddi::in_table!(t, DxgkDdiDestroyProcess))
    else {
        return Ok(());
    };
    let ctx = a.context();
    let st = f.passive(a, (ctx, kmd as HANDLE))?;
    if st != 0 {
        a.observer().triage(format!(
            "DxgkDdiDestroyProcess: Driver returned an invalid NTSTATUS code: {:#x}",
            st as u32
        ));
    }
    Ok(())
}

/// Physical adapters behind one simulated adapter (no linked adapters).
const PHYSICAL_ADAPTERS: u32 = 1;

/// `DxgkDdiCreateProcess` for `pid` with `flags`; the driver's process handle.
fn ddi_create_process(
    a: &AdapterShared,
    pid: ProcessId,
    flags: DXGK_CREATEPROCESSFLAGS,
) -> Result<usize, SimError> {
    let f = gpummu_ddi!(a, DxgkDdiCreateProcess)?;
    // One PASID per physical GPU (the adapter has one): 24H2 passes the count without an
    // array on an adapter without a GPU-VA IOMMU, the page with one (`Pasids`). The identifier
    // is the process's id, as 24H2 fills the array where it makes one.
    let mut pasid = [pid.0];
    let pasids = match a.os.windows.reading().pasids {
        Pasids::CountWithoutArray => std::ptr::null_mut(),
        Pasids::CountWithArray => pasid.as_mut_ptr(),
    };
    let mut args = DXGKARG_CREATEPROCESS {
        hDxgkProcess: (0x5000_0000 + pid.0 as usize) as HANDLE,
        Flags: flags,
        NumPasid: PHYSICAL_ADAPTERS,
        pPasid: pasids,
        ..Default::default()
    };
    a.observer()
        .handed(&rvgpu_ddi::handover::CREATE_PROCESS, &args);
    let ctx = a.context();
    let st = f.passive(a, (ctx, &mut args))?;
    ddi::check_status(f, st)?;
    let kmd = args.hKmdProcess as usize;
    if kmd == 0 {
        return Err(sim(
            "DxgkDdiCreateProcess succeeded with a NULL hKmdProcess".into(),
        ));
    }
    Ok(kmd)
}

/// Raw `DxgkDdiCreateProcess` on adapter `a` with the PASID fields given, bypassing what the
/// OS would send (tests of the driver's refusals). A process the driver accepts is destroyed
/// again at once. Returns the driver's status.
pub(crate) fn ddi_create_process_raw(
    a: &AdapterShared,
    num_pasid: u32,
    p_pasid: usize,
) -> Result<NTSTATUS, SimError> {
    let f = gpummu_ddi!(a, DxgkDdiCreateProcess)?;
    let mut args = DXGKARG_CREATEPROCESS {
        hDxgkProcess: 0x5fff_0000usize as HANDLE,
        NumPasid: num_pasid,
        pPasid: p_pasid as *mut u32,
        ..Default::default()
    };
    let ctx = a.context();
    let st = f.passive(a, (ctx, &mut args))?;
    if NT_SUCCESS(st) && !args.hKmdProcess.is_null() {
        ddi_destroy_process(a, args.hKmdProcess as usize)?;
    }
    Ok(st)
}

/// `DxgkDdiSetRootPageTable` for context `context_kmd` of process `pid`: the root sent
/// (segment, offset), `None` when the process has no VA space. Every field as
/// M:VidSchiEnsureRootPageTableUpdated @0x1400EAF40 fills it (`handover::SET_ROOT_PAGE_TABLE`).
pub(crate) fn set_root(
    a: &AdapterShared,
    pid: ProcessId,
    context_kmd: usize,
) -> Result<Option<(u32, u64)>, SimError> {
    let Some((_, segment, root)) = lock(&a.mm.vidmm).process(pid) else {
        return Ok(None);
    };
    let Some(g) = geometry(a) else {
        return Ok(None);
    };
    let f = gpummu_ddi!(a, DxgkDdiSetRootPageTable)?;
    let args = DXGKARG_SETROOTPAGETABLE {
        hContext: context_kmd as HANDLE,
        Address: D3DGPU_PHYSICAL_ADDRESS {
            SegmentId: segment,
            Padding: 0,
            SegmentOffset: root,
        },
        NumEntries: g.entries() as u32,
    };
    a.observer()
        .handed(&rvgpu_ddi::handover::SET_ROOT_PAGE_TABLE, &args);
    let ctx = a.context();
    f.passive(a, (ctx, &args))?;
    Ok(Some((segment, root)))
}

/// VidMm moves process `pid`'s root page table to another table of the page-table segment,
/// as the pages say it may ("used to notify a context when its associated root page table is
/// resized or moved in memory", nc-d3dkmddi-dxgkddi_setrootpagetable): the entries are copied,
/// the old table is cleared and given back, and the root generation changes, so VidSch's next
/// root step for each of the process's contexts (`crate::ums::root`) sends the new root before
/// the context runs again. The copy is the CPU's (24H2 moves tables with the paging engine;
/// the driver sees only the new address either way). The caller keeps the process's contexts
/// idle, as the pages require of a root update. `Ok(false)`: no such space, or no free table.
pub(crate) fn move_root(a: &AdapterShared, pid: ProcessId) -> Result<bool, SimError> {
    let Some(g) = geometry(a) else {
        return Ok(false);
    };
    let mut guard = lock(&a.mm.vidmm);
    let v = &mut *guard;
    let (Some(heap), Some(p)) = (v.heap.as_mut(), v.processes.get_mut(&pid)) else {
        return Ok(false);
    };
    let Some(new) = heap.alloc() else {
        return Ok(false);
    };
    let old = p.space.root;
    let (Some(from), Some(to)) = (segment_pa(a, g.segment, old), segment_pa(a, g.segment, new))
    else {
        heap.free(new);
        return Err(sim(format!("root of {pid:?} outside its segment")));
    };
    let mut bytes = vec![0u8; g.table_bytes as usize];
    let memory = a.device.memory();
    let copied = memory
        .read_bytes(rvgpu_hw::addr::PhysAddr::new(from), &mut bytes)
        .and_then(|()| memory.write_bytes(rvgpu_hw::addr::PhysAddr::new(to), &bytes))
        .and_then(|()| {
            memory.write_bytes(rvgpu_hw::addr::PhysAddr::new(from), &vec![0u8; bytes.len()])
        });
    if copied.is_none() {
        heap.free(new);
        return Err(sim(format!("root of {pid:?} not in device memory")));
    }
    p.space.root = new;
    heap.free(old);
    // After the change, under the same lock (`crate::ums::root`).
    a.mm.root_generation.fetch_add(1, Ordering::SeqCst);
    Ok(true)
}

/// Where the page at device address `va` lives, as VidMm names it: system memory by bus
/// address, or a local segment by offset.
pub(crate) fn phys_of(a: &AdapterShared, va: u64) -> Option<Phys> {
    let vram = rvgpu_hw::addr::VRAM_BASE;
    if va < vram {
        return Some((0, va));
    }
    let off = va - vram;
    let model = lock(&a.mm.memory_model);
    (1..=model.segments.len() as u32).find_map(|id| {
        let s = model.segment(id)?;
        let base = model.segment_base(id)?;
        let local = !s.Flags.is_set(DXGK_SEGMENTFLAGS::Aperture);
        (local && off >= base && off < base + s.Size as u64).then(|| (id, off - base))
    })
}
