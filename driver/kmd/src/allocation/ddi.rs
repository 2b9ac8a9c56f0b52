//! The allocation DDIs (`DxgkDdiCreateAllocation` … `DxgkDdiCloseAllocation`) and the
//! allocation records' part in page-table updates and doorbell rings, over the state of
//! [`super`].

use rvgpu_ddi::allocation::{
    DXGKARG_CREATEALLOCATION, DXGK_ALLOCATIONINFO, DXGK_ALLOCATIONINFOFLAGS_WDDM2_0,
    DXGK_ALLOCATIONINFO_1, DXGK_CREATEALLOCATIONFLAGS, DXGK_OPENALLOCATIONINFO,
    DXGK_SEGMENTPREFERENCE,
};
use rvgpu_ddi::HANDLE;
use rvgpu_hw::addr::GpuVa;

use crate::adapter::{Adapter, Live};
use crate::gpummu;
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::sched::ddi::with_adapter;
use crate::status::{self, Status};

use super::{parse, Allocation, MAX_ALLOCATIONS, MAX_PER_CALL};

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
    // Room for fence-page records (`fence::pages`): a device's first allocation comes with
    // its paging queue, whose fence VidMm maps.
    live.fences
        .lock()
        .pages
        .try_reserve_spare::<P>()
        .map_err(|_| status::NO_MEMORY)?;
    make_all(
        a,
        live,
        infos,
        private,
        |info| &mut info.hAllocation,
        |info, h, al| {
            let mut s = live.sched.lock();
            if s.allocations.len() >= MAX_ALLOCATIONS {
                return Err(status::INSUFFICIENT_RESOURCES);
            }
            // Room for its mapped runs now: the paging path records them without allocating.
            let n = s.allocations.len().saturating_add(1);
            s.mapped_at.try_reserve_for::<P>(n)?;
            s.allocations.try_insert::<P>(h, al)?;
            drop(s);
            describe(live, &al, info);
            Ok(())
        },
    )
}

/// Makes one allocation per info, all or none: every info's private data is checked before
/// anything is created (no half-made call to undo for bad input; no per-call arrays either:
/// the kernel stack is small). `make` inserts the parsed allocation under its new handle,
/// which then goes to the info's `handle` field; after a failure the allocations this call
/// made are removed again and their handles nulled.
fn make_all<'p, P: Platform, I>(
    a: &Adapter<P>,
    live: &Live<P>,
    infos: &mut [I],
    private: impl Fn(&I) -> Option<&'p [u8]>,
    handle: impl Fn(&mut I) -> &mut HANDLE,
    make: impl Fn(&mut I, Handle, Allocation) -> Result<(), Status>,
) -> Result<(), Status> {
    for info in infos.iter() {
        parse(private(info).ok_or(status::INVALID_PARAMETER)?)?;
    }
    let mut made = 0usize;
    let mut result = Ok(());
    for info in infos.iter_mut() {
        let r = (|| {
            let al = parse(private(info).ok_or(status::INVALID_PARAMETER)?)?;
            let h = a.new_handle(Kind::Allocation)?;
            make(info, h, al)?;
            *handle(info) = h.as_handle();
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
            let raw = handle(info);
            if let Ok(h) = Handle::decode_on(*raw, Kind::Allocation, a.table_slot()) {
                let s = &mut *s;
                s.mapped_at.forget(&s.allocations, h);
                s.allocations.remove(&h);
            }
            *raw = core::ptr::null_mut();
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
    let mut held = [0u32; rvgpu_hw::regs::ENGINE_MAX as usize];
    for raw in handles {
        if let Ok(h) = Handle::decode_on(*raw, Kind::Allocation, slot) {
            crate::doorbell::ddi::stop_queues_on(live, &mut s, h, &mut held);
            let s = &mut *s;
            s.mapped_at.forget(&s.allocations, h);
            s.allocations.remove(&h);
        }
    }
    drop(s);
    crate::doorbell::ddi::release_detached(live, held);
    Ok(())
}

/// DxgkDdiOpenAllocation (PASSIVE): a device opens allocations, each info carrying the
/// allocation's private data, which is checked as at creation, and gets a device-specific
/// handle that `DxgkDdiCloseAllocation` gives back. Dxgkrnl opens every allocation it creates
/// for the creating device too (`Flags.Create`, 24H2's `K:DXGDEVICE::OpenAllocations`
/// @0x140324850 after `CreateDriverAllocations`) and names the allocation by that handle later
/// (`DxgkDdiCreateDoorbell`): such an open is linked to the allocation its D3DKMT handle names
/// (`DxgkCbGetHandleData`), which must be one of ours not opened for a creator yet. Other
/// opens (shared allocations) are records of their own, which name no allocation of ours.
/// `private`: the info's private data, if any.
pub fn open<'p, P: Platform>(
    h_device: HANDLE,
    create: bool,
    infos: &mut [DXGK_OPENALLOCATIONINFO],
    private: impl Fn(&DXGK_OPENALLOCATIONINFO) -> Option<&'p [u8]>,
) -> Result<(), Status> {
    with_adapter::<P, _>(h_device, Kind::Device, |a, live, dev| {
        if infos.len() > MAX_PER_CALL as usize {
            return Err(status::INVALID_PARAMETER);
        }
        let slot = a.table_slot();
        make_all(
            a,
            live,
            infos,
            private,
            |info| &mut info.hDeviceSpecificAllocation,
            |info, h, al| {
                // Asked with no lock held: the callback takes Dxgkrnl's handle-table lock.
                let of = if create {
                    let raw = live
                        .dxgk
                        .allocation_of(info.hAllocation)
                        // "fail its currently running DDI function with STATUS_INVALID_HANDLE"
                        // (DXGKCB_GETHANDLEDATA).
                        .ok_or(status::INVALID_HANDLE)?;
                    Some(Handle::decode_on(
                        core::ptr::without_provenance_mut(raw),
                        Kind::Allocation,
                        slot,
                    )?)
                } else {
                    None
                };
                let mut s = live.sched.lock();
                if !s.devices.contains_key(&dev) {
                    return Err(status::INVALID_HANDLE);
                }
                if s.allocations.len() >= MAX_ALLOCATIONS {
                    return Err(status::INSUFFICIENT_RESOURCES);
                }
                let record = match of {
                    Some(c) => {
                        let created = s.allocations.get(&c).ok_or(status::INVALID_PARAMETER)?;
                        // Its private data is the creation's: the same allocation.
                        if created.opened_by.is_some()
                            || created.creator.is_some()
                            || (created.kind, created.size, created.cpu_visible)
                                != (al.kind, al.size, al.cpu_visible)
                        {
                            return Err(status::INVALID_PARAMETER);
                        }
                        Allocation {
                            opened_by: Some(dev),
                            of: Some(c),
                            mapped: super::Mappings::default(),
                            ..*created
                        }
                    }
                    None => Allocation {
                        opened_by: Some(dev),
                        ..al
                    },
                };
                let n = s.allocations.len().saturating_add(1);
                s.mapped_at.try_reserve_for::<P>(n)?;
                s.allocations.try_insert::<P>(h, record)?;
                if let Some(created) = of.and_then(|c| s.allocations.get_mut(&c)) {
                    created.creator = Some(dev);
                }
                Ok(())
            },
        )
    })
}

/// DxgkDdiCloseAllocation (PASSIVE): the device-specific handles of `h_device`'s opens.
pub fn close<P: Platform>(h_device: HANDLE, handles: &[HANDLE]) -> Result<(), Status> {
    with_adapter::<P, _>(h_device, Kind::Device, |a, live, dev| {
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
                let s = &mut *s;
                s.mapped_at.forget(&s.allocations, h);
                let of = s.allocations.remove(&h).and_then(|al| al.of);
                if let Some(created) = of.and_then(|c| s.allocations.get_mut(&c)) {
                    created.creator = None;
                }
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
) -> Option<super::PagePolicy> {
    let h = Handle::decode_on(h_allocation, Kind::Allocation, a.table_slot()).ok()?;
    live.sched
        .lock()
        .allocations
        .get(&h)
        .filter(|al| al.opened_by.is_none())
        .map(|al| super::PagePolicy {
            gpu_read_only: al.gpu_read_only,
            executable: al.executable(),
        })
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
    first_va: GpuVa,
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
    let target = if valid && offset.is_multiple_of(rvgpu_hw::PAGE_SIZE) {
        Handle::decode_on(h_allocation, Kind::Allocation, slot)
            .ok()
            .map(|h| (h, offset))
    } else {
        None
    };
    let mut s = live.sched.lock();
    let s = &mut *s;
    // A VA maps one thing at a time: a remap without an unmap first must not leave the
    // old allocation claiming it.
    super::index::record(
        &mut s.allocations,
        &mut s.mapped_at,
        process,
        first_va,
        va_hi,
        target,
    );
}
