//! Allocations (docs/memory.md "Allocations"): `DxgkDdiCreateAllocation`,
//! `DxgkDdiDestroyAllocation`, `DxgkDdiDescribeAllocation`,
//! `DxgkDdiGetStandardAllocationDriverData`, `DxgkDdiOpenAllocation`,
//! `DxgkDdiCloseAllocation`.
//!
//! The UMD describes each allocation in its private data ([`AllocationPdd`]), which is
//! untrusted: the KMD parses it with a layout check, refuses anything it does not define,
//! and decides size, alignment, segments and page attributes itself. VidMm then places the
//! allocation and maps it; the KMD sees the mapping again only as `UPDATEPAGETABLE` entries,
//! where the allocation record decides the page attributes VidMm's `DXGK_PTE` cannot express
//! (whether user-mode queues may reach the page, hardware.md §12.3 `USER`).
//!
//! rvgpu is render-only: it has no primary, shadow or staging surfaces, so
//! DescribeAllocation and GetStandardAllocationDriverData refuse every request. They exist
//! because Dxgkrnl refuses a render core without them (docs/windows-bringup.md BR-47).

use rvgpu_ddi::allocation::{
    DXGKARG_CREATEALLOCATION, DXGK_ALLOCATIONINFO, DXGK_ALLOCATIONINFOFLAGS_WDDM2_0,
    DXGK_ALLOCATIONINFO_1, DXGK_CREATEALLOCATIONFLAGS, DXGK_OPENALLOCATIONINFO,
    DXGK_SEGMENTPREFERENCE,
};
use rvgpu_ddi::HANDLE;
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::pdd::{
    AllocationKind, AllocationPdd, ALLOCATION_CPU_CACHED, ALLOCATION_CPU_VISIBLE, ALLOCATION_FLAGS,
    ALLOCATION_GPU_READ_ONLY, ALLOCATION_PDD_VERSION, PDD_MAGIC,
};
use zerocopy::FromBytes;

use crate::adapter::{Adapter, Live};
use crate::gpummu;
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::sched::ddi as sched;
use crate::status::{self, Status};

/// An allocation as the KMD keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub kind: AllocationKind,
    /// Bytes (whole pages).
    pub size: u64,
    pub gpu_read_only: bool,
    /// The CPU maps it (it stays in CPU-visible segments).
    pub cpu_visible: bool,
    /// The CPU maps it write-back cached: system memory only (AL-04).
    pub cached: bool,
    /// A device-specific handle from `DxgkDdiOpenAllocation`: the device that opened it.
    pub opened_by: Option<Handle>,
    /// Where VidMm has it mapped now, learnt from the UPDATEPAGETABLE operations it asks
    /// for ([`note_mapping`]).
    pub mapped: Mappings,
}

/// Most mapped runs the KMD remembers per allocation. VidMm maps every allocation once at a
/// VA of its own; a process may map it again (`D3DKMTMapGpuVirtualAddress`,
/// `D3DKMTUpdateGpuVirtualAddress`). Past this bound a further run is not recorded: nothing
/// fails (the page tables are VidMm's and are written anyway), but a doorbell whose ring is
/// mapped only there is refused with `STATUS_INVALID_PARAMETER`, as for an unmapped ring. The
/// runs live inline in the record, so recording one never allocates and cannot fail.
pub const MAX_MAPPINGS: usize = 4;

/// Part of an allocation mapped at one place of one process: the allocation's pages
/// `[lo, hi)` at `base + page * PAGE_SIZE`, `base` being where its byte 0 would be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    process: Handle,
    base: u64,
    lo: u64,
    hi: u64,
}

impl Run {
    /// The run's VA range (`None` if it would wrap, which [`Mappings::add`] never stores).
    fn va(&self) -> Option<(u64, u64)> {
        let lo = self
            .base
            .checked_add(self.lo.checked_mul(rvgpu_hw::PAGE_SIZE)?)?;
        let hi = self
            .base
            .checked_add(self.hi.checked_mul(rvgpu_hw::PAGE_SIZE)?)?;
        Some((lo, hi))
    }
}

/// The places an allocation is mapped at (at most [`MAX_MAPPINGS`] runs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mappings {
    runs: [Option<Run>; MAX_MAPPINGS],
}

impl Mappings {
    /// Records pages `[lo, hi)` of the allocation mapped with byte 0 at `base` in `process`,
    /// merged with a run of the same place it touches. `false`: no room (not recorded).
    fn add(&mut self, process: Handle, base: u64, lo: u64, hi: u64) -> bool {
        let mut new = Run {
            process,
            base,
            lo,
            hi,
        };
        if lo >= hi || new.va().is_none() {
            return false;
        }
        // Merging can make the new run touch another one: absorb until none is left.
        loop {
            let hit = self.runs.iter_mut().find(|r| {
                r.is_some_and(|r| {
                    r.process == process && r.base == base && r.lo <= new.hi && new.lo <= r.hi
                })
            });
            let Some(slot) = hit else { break };
            if let Some(r) = slot.take() {
                new.lo = new.lo.min(r.lo);
                new.hi = new.hi.max(r.hi);
            }
        }
        match self.runs.iter_mut().find(|r| r.is_none()) {
            Some(free) => {
                *free = Some(new);
                true
            }
            None => false,
        }
    }

    /// Forgets whatever is recorded in `[va_lo, va_hi)` of `process` (those entries now map
    /// something else, or nothing). A run split in two with no room for its upper part keeps
    /// only the lower one: forgetting a mapping only ever makes the doorbell refuse more.
    fn cut(&mut self, process: Handle, va_lo: u64, va_hi: u64) {
        let mut upper: Option<Run> = None;
        for slot in self.runs.iter_mut() {
            let Some(r) = *slot else { continue };
            let Some((lo, hi)) = r.va() else {
                *slot = None;
                continue;
            };
            if r.process != process || va_hi <= lo || hi <= va_lo {
                continue;
            }
            let page = |va: u64| va.saturating_sub(r.base) / rvgpu_hw::PAGE_SIZE;
            let below = (va_lo > lo).then(|| Run {
                hi: page(va_lo),
                ..r
            });
            let above = (va_hi < hi).then(|| Run {
                lo: page(va_hi),
                ..r
            });
            *slot = below.or(above);
            if below.is_some() && above.is_some() {
                upper = above;
            }
        }
        if let (Some(u), Some(free)) = (upper, self.runs.iter_mut().find(|r| r.is_none())) {
            *free = Some(u);
        }
    }

    /// Where byte 0 is in `process` for a run that maps the allocation's first `len` bytes,
    /// the earliest recorded first.
    pub fn base_covering(&self, process: Handle, len: u64) -> Option<u64> {
        let pages = len.div_ceil(rvgpu_hw::PAGE_SIZE);
        self.runs
            .iter()
            .flatten()
            .find(|r| r.process == process && r.lo == 0 && r.hi >= pages)
            .map(|r| r.base)
    }

    /// How many runs are recorded.
    pub fn len(&self) -> usize {
        self.runs.iter().flatten().count()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Allocation {
    /// Whether the GPU may fetch commands from the allocation's pages.
    pub fn executable(&self) -> bool {
        self.kind == AllocationKind::Commands
    }
}

/// Largest allocation the KMD describes (bounds what one request can ask VidMm for).
pub const MAX_ALLOCATION_BYTES: u64 = 1 << 30;
/// Most allocations one adapter keeps.
pub const MAX_ALLOCATIONS: usize = 1 << 16;
/// Most allocations in one CreateAllocation call.
pub const MAX_PER_CALL: u32 = 64;

/// Checks one allocation's private data and returns what the KMD will create.
pub fn parse(bytes: &[u8]) -> Result<Allocation, Status> {
    let pdd = AllocationPdd::read_from_bytes(bytes).map_err(|_| status::INVALID_PARAMETER)?;
    if pdd.magic != PDD_MAGIC || pdd.version != ALLOCATION_PDD_VERSION || pdd.reserved != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    if pdd.flags & !ALLOCATION_FLAGS != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    let kind = AllocationKind::from_u32(pdd.kind).ok_or(status::INVALID_PARAMETER)?;
    if pdd.size == 0 || pdd.size > MAX_ALLOCATION_BYTES {
        return Err(status::INVALID_PARAMETER);
    }
    let size = pdd
        .size
        .checked_next_multiple_of(rvgpu_hw::PAGE_SIZE)
        .ok_or(status::INVALID_PARAMETER)?;
    let gpu_read_only = pdd.flags & ALLOCATION_GPU_READ_ONLY != 0;
    // A ring-control block is written by the GPU (read pointer): read-only makes no sense.
    if gpu_read_only && kind == AllocationKind::RingControl {
        return Err(status::INVALID_PARAMETER);
    }
    let cpu_visible = pdd.flags & ALLOCATION_CPU_VISIBLE != 0;
    let cached = pdd.flags & ALLOCATION_CPU_CACHED != 0;
    // A cached CPU mapping of memory the CPU cannot map means nothing.
    if cached && !cpu_visible {
        return Err(status::INVALID_PARAMETER);
    }
    Ok(Allocation {
        kind,
        size,
        gpu_read_only,
        cpu_visible,
        cached,
        opened_by: None,
        mapped: Mappings::default(),
    })
}

/// The `DXGK_ALLOCATIONINFO` answer for `al`: page alignment; CPU-visible allocations in the
/// aperture or the CPU-visible part of VRAM, cached ones in the aperture only (the CPU's
/// caches are coherent with system memory, never with VRAM), others anywhere
/// (docs/memory.md). Every CPU-visible allocation lists the aperture: VidMm refuses one that
/// does not (AL-04).
fn describe<P: Platform>(live: &Live<P>, al: &Allocation, info: &mut DXGK_ALLOCATIONINFO) {
    let cpu_visible = al.cpu_visible;
    let bit = |id: u32| 1u32.checked_shl(id.saturating_sub(1)).unwrap_or(0);
    let mut set = bit(gpummu::SEGMENT_APERTURE);
    if !al.cached {
        set |= bit(gpummu::SEGMENT_LOCAL);
    }
    if !cpu_visible && gpummu::local_segment(live.mmu(), gpummu::SEGMENT_LOCAL_HIDDEN).is_some() {
        set |= bit(gpummu::SEGMENT_LOCAL_HIDDEN);
    }
    info.Size = usize::try_from(al.size).unwrap_or(0);
    info.Alignment = u32::try_from(rvgpu_hw::PAGE_SIZE).unwrap_or(4096);
    info.SupportedReadSegmentSet = set;
    info.SupportedWriteSegmentSet = set;
    info.EvictionSegmentSet = bit(gpummu::SEGMENT_APERTURE);
    info.PreferredSegment = preference(live, al);
    let mut flags = DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::default();
    flags.set(
        DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::CpuVisible,
        u32::from(cpu_visible),
    );
    flags.set(
        DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::Cached,
        u32::from(al.cached),
    );
    info.Anonymous2 = DXGK_ALLOCATIONINFO_1 { FlagsWddm2: flags };
}

/// Where the allocation should go, best first (`DXGK_SEGMENTPREFERENCE`): memory the GPU
/// reaches fastest for what only the GPU touches (VRAM the CPU cannot see first, so the
/// CPU-visible part stays for allocations that need it), the aperture for what the CPU maps.
fn preference<P: Platform>(live: &Live<P>, al: &Allocation) -> DXGK_SEGMENTPREFERENCE {
    let mut order = [0u32; 3];
    if al.cpu_visible {
        order[0] = gpummu::SEGMENT_APERTURE;
    } else {
        let hidden = gpummu::local_segment(live.mmu(), gpummu::SEGMENT_LOCAL_HIDDEN).is_some();
        order = if hidden {
            [
                gpummu::SEGMENT_LOCAL_HIDDEN,
                gpummu::SEGMENT_LOCAL,
                gpummu::SEGMENT_APERTURE,
            ]
        } else {
            [gpummu::SEGMENT_LOCAL, gpummu::SEGMENT_APERTURE, 0]
        };
    }
    DXGK_SEGMENTPREFERENCE::default()
        .with(DXGK_SEGMENTPREFERENCE::SegmentId0, order[0])
        .with(DXGK_SEGMENTPREFERENCE::SegmentId1, order[1])
        .with(DXGK_SEGMENTPREFERENCE::SegmentId2, order[2])
}

/// DxgkDdiCreateAllocation (PASSIVE): every allocation of the call or none (a failure frees
/// what the call created).
pub fn create<'p, P: Platform>(
    a: &Adapter<P>,
    args: &mut DXGKARG_CREATEALLOCATION,
    infos: &mut [DXGK_ALLOCATIONINFO],
    private: impl Fn(&DXGK_ALLOCATIONINFO) -> Option<&'p [u8]>,
) -> Result<(), Status> {
    let live = a.started()?;
    if !gpummu::supported(live.mmu()) {
        return Err(status::NOT_SUPPORTED);
    }
    // No resources (no D3D runtime objects above allocations) and no resource private data.
    if args.Flags.Value & !DXGK_CREATEALLOCATIONFLAGS::default().Value != 0
        || args.PrivateDriverDataSize != 0
        || infos.is_empty()
        || args.NumAllocations > MAX_PER_CALL
    {
        return Err(status::INVALID_PARAMETER);
    }
    // Everything is checked before anything is created (no half-made call to undo for bad
    // input); no per-call arrays either: the kernel stack is small.
    for info in infos.iter() {
        parse(private(info).ok_or(status::INVALID_PARAMETER)?)?;
    }
    let mut made = 0usize;
    let mut result = Ok(());
    for info in infos.iter_mut() {
        let r = (|| {
            let al = parse(private(info).ok_or(status::INVALID_PARAMETER)?)?;
            let h = a.new_handle(Kind::Allocation)?;
            let mut s = live.sched.lock();
            if s.allocations.len() >= MAX_ALLOCATIONS {
                return Err(status::INSUFFICIENT_RESOURCES);
            }
            s.allocations.try_insert::<P>(h, al)?;
            drop(s);
            describe(live, &al, info);
            info.hAllocation = h.as_handle();
            Ok(())
        })();
        if let Err(e) = r {
            result = Err(e);
            break;
        }
        made = made.saturating_add(1);
    }
    if result.is_err() {
        let mut s = live.sched.lock();
        for info in infos.iter_mut().take(made) {
            if let Ok(h) = Handle::decode_on(info.hAllocation, Kind::Allocation, a.table_slot()) {
                s.allocations.remove(&h);
            }
            info.hAllocation = core::ptr::null_mut();
        }
    }
    result
}

/// DxgkDdiDestroyAllocation (PASSIVE): every handle must name an allocation the KMD created
/// (not a device-specific open); otherwise nothing is destroyed.
pub fn destroy<P: Platform>(a: &Adapter<P>, handles: &[HANDLE]) -> Result<(), Status> {
    let live = a.started()?;
    let slot = a.table_slot();
    let mut s = live.sched.lock();
    for raw in handles {
        let h = Handle::decode_on(*raw, Kind::Allocation, slot)?;
        match s.allocations.get(&h) {
            Some(al) if al.opened_by.is_none() => {}
            _ => return Err(status::INVALID_HANDLE),
        }
    }
    for raw in handles {
        if let Ok(h) = Handle::decode_on(*raw, Kind::Allocation, slot) {
            s.allocations.remove(&h);
        }
    }
    Ok(())
}

/// DxgkDdiOpenAllocation (PASSIVE): a device opens allocations it did not create (shared, or
/// the runtime's own); each info carries the allocation's private data, which is checked as
/// at creation, and gets a device-specific handle that `DxgkDdiCloseAllocation` gives back.
/// `private`: the info's private data, if any.
pub fn open<'p, P: Platform>(
    h_device: HANDLE,
    infos: &mut [DXGK_OPENALLOCATIONINFO],
    private: impl Fn(&DXGK_OPENALLOCATIONINFO) -> Option<&'p [u8]>,
) -> Result<(), Status> {
    sched::with_adapter::<P, _>(h_device, Kind::Device, |a, live, dev| {
        if infos.len() > MAX_PER_CALL as usize {
            return Err(status::INVALID_PARAMETER);
        }
        for info in infos.iter() {
            parse(private(info).ok_or(status::INVALID_PARAMETER)?)?;
        }
        let mut made = 0usize;
        let mut result = Ok(());
        for info in infos.iter_mut() {
            let r = (|| {
                let al = parse(private(info).ok_or(status::INVALID_PARAMETER)?)?;
                let h = a.new_handle(Kind::Allocation)?;
                let mut s = live.sched.lock();
                if !s.devices.contains_key(&dev) {
                    return Err(status::INVALID_HANDLE);
                }
                if s.allocations.len() >= MAX_ALLOCATIONS {
                    return Err(status::INSUFFICIENT_RESOURCES);
                }
                s.allocations.try_insert::<P>(
                    h,
                    Allocation {
                        opened_by: Some(dev),
                        ..al
                    },
                )?;
                info.hDeviceSpecificAllocation = h.as_handle();
                Ok(())
            })();
            if let Err(e) = r {
                result = Err(e);
                break;
            }
            made = made.saturating_add(1);
        }
        if result.is_err() {
            let mut s = live.sched.lock();
            for info in infos.iter_mut().take(made) {
                let raw = info.hDeviceSpecificAllocation;
                if let Ok(h) = Handle::decode_on(raw, Kind::Allocation, a.table_slot()) {
                    s.allocations.remove(&h);
                }
                info.hDeviceSpecificAllocation = core::ptr::null_mut();
            }
        }
        result
    })
}

/// DxgkDdiCloseAllocation (PASSIVE): the device-specific handles of `h_device`'s opens.
pub fn close<P: Platform>(h_device: HANDLE, handles: &[HANDLE]) -> Result<(), Status> {
    sched::with_adapter::<P, _>(h_device, Kind::Device, |a, live, dev| {
        let slot = a.table_slot();
        let mut s = live.sched.lock();
        for raw in handles {
            let h = Handle::decode_on(*raw, Kind::Allocation, slot)?;
            match s.allocations.get(&h) {
                Some(al) if al.opened_by == Some(dev) => {}
                _ => return Err(status::INVALID_HANDLE),
            }
        }
        for raw in handles {
            if let Ok(h) = Handle::decode_on(*raw, Kind::Allocation, slot) {
                s.allocations.remove(&h);
            }
        }
        Ok(())
    })
}

/// Whether `h_process` is a user process (not the system / paging process).
pub fn user_process<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    h_process: HANDLE,
) -> Result<bool, Status> {
    let process = Handle::decode_on(h_process, Kind::Process, a.table_slot())?;
    let s = live.sched.lock();
    let p = s.processes.get(&process).ok_or(status::INVALID_HANDLE)?;
    Ok(!p.system)
}

/// The allocation's page attributes the KMD imposes on top of VidMm's entry (read-only,
/// no-execute), or `None` for a mapping of no allocation.
pub fn page_policy<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    h_allocation: HANDLE,
) -> Option<Allocation> {
    let h = Handle::decode_on(h_allocation, Kind::Allocation, a.table_slot()).ok()?;
    live.sched
        .lock()
        .allocations
        .get(&h)
        .copied()
        .filter(|al| al.opened_by.is_none())
}

/// Follows one UPDATEPAGETABLE leaf operation of user process `h_process`: its `entries`
/// leaves from `first_va` now hold what VidMm asked for, so whatever any allocation had
/// recorded there is forgotten, and a valid update for allocation `h_allocation` (null for a
/// leaf of no allocation) records those pages: `offset` is their offset in the allocation
/// (`AllocationOffsetInBytes`), so byte 0 would be at `first_va - offset`. `valid`: the
/// operation's first entry is valid (VidMm maps or unmaps a whole run in one operation; a
/// mixed one is recorded by its first entry, which at worst records pages that fault, in the
/// process's own space).
#[allow(clippy::too_many_arguments)]
pub fn note_mapping<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    h_process: HANDLE,
    h_allocation: HANDLE,
    offset: u64,
    first_va: u64,
    entries: u64,
    valid: bool,
) {
    let slot = a.table_slot();
    let Ok(process) = Handle::decode_on(h_process, Kind::Process, slot) else {
        return;
    };
    let Some(va_hi) = entries
        .checked_mul(rvgpu_hw::PAGE_SIZE)
        .and_then(|len| first_va.checked_add(len))
    else {
        return;
    };
    let mut s = live.sched.lock();
    // A VA maps one thing at a time: a remap without an unmap first must not leave the
    // old allocation claiming it.
    for al in s.allocations.values_mut() {
        al.mapped.cut(process, first_va, va_hi);
    }
    if !valid || !offset.is_multiple_of(rvgpu_hw::PAGE_SIZE) {
        return;
    }
    let (Ok(h), Some(base)) = (
        Handle::decode_on(h_allocation, Kind::Allocation, slot),
        first_va.checked_sub(offset),
    ) else {
        return;
    };
    let lo = offset / rvgpu_hw::PAGE_SIZE;
    if let Some(al) = s.allocations.get_mut(&h) {
        // Past the allocation's end is not the allocation (VidMm never asks for that).
        let pages = al.size / rvgpu_hw::PAGE_SIZE;
        let hi = lo.saturating_add(entries).min(pages);
        al.mapped.add(process, base, lo, hi);
    }
}

/// The ring of a user-mode queue's doorbell, from the allocations `DXGKARG_CREATEDOORBELL`
/// names: the ring starts where VidMm has the ring allocation (`Commands`, not GPU
/// read-only) mapped in the queue's `process`, the control block where it has the
/// ring-control allocation mapped; both must be the process's own creations (not opened).
/// An allocation mapped at several places serves from any of them that maps its first bytes
/// (the ring's `size`, the control block) contiguously, the earliest recorded first; one
/// mapped nowhere in the process is refused. Everything else about the ring is
/// [`crate::doorbell::check_ring`].
pub fn ring_from_allocations<P: Platform>(
    a: &Adapter<P>,
    s: &crate::sched::Sched,
    process: Option<Handle>,
    h_ring: HANDLE,
    h_control: HANDLE,
    size: u32,
) -> Result<crate::hwqueue::Ring, Status> {
    let slot = a.table_slot();
    let process = process.ok_or(status::INVALID_PARAMETER)?;
    let get = |h: HANDLE, kind: AllocationKind| {
        let h = Handle::decode_on(h, Kind::Allocation, slot)?;
        s.allocations
            .get(&h)
            .filter(|al| al.opened_by.is_none() && al.kind == kind)
            .ok_or(status::INVALID_PARAMETER)
    };
    let r = get(h_ring, AllocationKind::Commands)?;
    let c = get(h_control, AllocationKind::RingControl)?;
    if r.gpu_read_only || u64::from(size) > r.size {
        return Err(status::INVALID_PARAMETER);
    }
    let base = r
        .mapped
        .base_covering(process, u64::from(size))
        .ok_or(status::INVALID_PARAMETER)?;
    let control = c
        .mapped
        .base_covering(process, rvgpu_hw::queue::RingControl::SIZE)
        .ok_or(status::INVALID_PARAMETER)?;
    let ring = crate::hwqueue::Ring {
        base: GpuVa::new(base),
        size,
        control: GpuVa::new(control),
    };
    crate::doorbell::check_ring(&ring)?;
    Ok(ring)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = rvgpu_hw::PAGE_SIZE;

    fn process(n: u64) -> Handle {
        Handle::new(0, Kind::Process, n).unwrap()
    }

    /// Runs of one place merge, an unmap in the middle splits, and past
    /// MAX_MAPPINGS nothing more is recorded (the doorbell then refuses that place).
    #[test]
    fn mappings_merge_split_and_stay_bounded() {
        let p = process(1);
        let mut m = Mappings::default();
        // Two leaf-table halves of one mapping at 0x10_0000.
        assert!(m.add(p, 0x10_0000, 0, 2));
        assert!(m.add(p, 0x10_0000, 2, 4));
        assert_eq!(m.len(), 1);
        assert_eq!(m.base_covering(p, 4 * P), Some(0x10_0000));
        assert_eq!(m.base_covering(p, 5 * P), None, "only 4 pages mapped");
        assert_eq!(m.base_covering(process(2), P), None, "another process");
        // Unmapping page 1 splits: the first page still covers a one-page ring.
        m.cut(p, 0x10_0000 + P, 0x10_0000 + 2 * P);
        assert_eq!(m.len(), 2);
        assert_eq!(m.base_covering(p, P), Some(0x10_0000));
        assert_eq!(m.base_covering(p, 2 * P), None);
        // Fill the bound; one more place is not recorded.
        for i in 0..(MAX_MAPPINGS as u64 - 2) {
            assert!(m.add(p, 0x20_0000 + i * 0x10_0000, 0, 1));
        }
        assert!(!m.add(p, 0x90_0000, 0, 1));
        assert_eq!(m.len(), MAX_MAPPINGS);
        // Unmapping a whole run frees its slot.
        m.cut(p, 0x10_0000, 0x10_0000 + P);
        assert_eq!(m.len(), MAX_MAPPINGS - 1);
        assert_eq!(m.base_covering(p, P), Some(0x20_0000));
        // A split with no room left keeps the lower part only.
        assert!(m.add(p, 0xA0_0000, 0, 3));
        m.cut(p, 0xA0_0000 + P, 0xA0_0000 + 2 * P);
        assert_eq!(m.len(), MAX_MAPPINGS);
        assert!(m
            .runs
            .iter()
            .flatten()
            .any(|r| r.base == 0xA0_0000 && r.hi == 1));
        assert!(!m
            .runs
            .iter()
            .flatten()
            .any(|r| r.base == 0xA0_0000 && r.lo == 2));
        // Nonsense is never stored.
        let mut e = Mappings::default();
        assert!(!e.add(p, u64::MAX - P, 0, 2), "wraps");
        assert!(!e.add(p, 0, 3, 3), "empty");
        assert!(e.is_empty());
    }
}
