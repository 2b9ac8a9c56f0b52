//! Allocations of user-mode processes: described by the driver
//! (`DxgkDdiCreateAllocation` with the UMD's private data), backed by system memory, placed
//! and mapped into the process's GPU VA space when made resident (`vidmm::residency`, through
//! the driver's paging buffers), CPU-mapped for the UMD, and kept alive by the doorbells that
//! reference them (UM-07).
//!
//! Destruction is two steps. Dropping the last reference (a thunk, a doorbell going away, a
//! process exiting) moves the allocation to the adapter's reap list under the OS lock; the
//! reaper then, with no lock held, unmaps it (UPDATEPAGETABLE + FLUSHTLB on the paging
//! node), calls `DxgkDdiDestroyAllocation`, and only then frees the memory, so the GPU can
//! never reach memory that has been given back (hardware.md §12.5; VidMm's order).

use std::sync::Arc;

use rvgpu_ddi::allocation::*;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::HANDLE;
use rvgpu_device::SysAlloc;
use rvgpu_hw::addr::BusAddr;

use crate::adapter::ddi::{self};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::Attached;
use crate::ob::KmtHandle;
use crate::state::vidmm::cpucache::CpuCache;
use crate::state::vidmm::{AllocObj, CreatorOpen, Described, Mapped};
use crate::vidmm::host::Host;

use super::locks::{dev_guard, device_lock};
use crate::state::ums::events::UmsEvent;
use crate::state::ums::{new_handle, UmsOs};

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

impl AllocObj {
    /// Whether the work VidMm deferred the destruction for has completed (AL-03).
    fn deferred_done(&self, os: &UmsOs) -> bool {
        self.deferred_dma.is_none()
            && self
                .deferred
                .iter()
                .all(|w| w.done(|q| os.queues.contains_key(&q)))
    }
}

/// Drops one doorbell reference; queues the allocation for reaping if the UMD already closed
/// its handle.
pub(crate) fn release_alloc(os: &mut UmsOs, h: KmtHandle) {
    if let Some(al) = os.allocations.get_mut(&h) {
        al.refs = al.refs.saturating_sub(1);
    }
    let free = os
        .allocations
        .get(&h)
        .is_some_and(|al| al.refs == 0 && al.closed && al.deferred_done(os));
    if free {
        free_alloc(os, h);
    }
}

/// Takes the allocation out of the process's view; [`reap_allocations`] finishes.
pub(crate) fn free_alloc(os: &mut UmsOs, h: KmtHandle) {
    if let Some(al) = os.allocations.remove(&h) {
        os.reaped.push(al);
        os.events.push(UmsEvent::FreeAllocation { allocation: h });
    }
}

/// `D3DKMTCreateAllocation2`: an allocation for `device` as the UMD described it in
/// `private` (what the thunk carries to the driver). On a GpuMmu adapter it is not
/// resident: it is on no residency list until `D3DKMTMakeResident` ("Residency overview").
/// Returns the handle, the memory (the backing store) and the GPU VA.
///
/// The VA follows the reading (`answers::AllocationVa`): under 24H2 there is none (0 returned,
/// the caller's `GpuVirtualAddress` left as it was: `K:DXGDEVICE::CreateAllocation`
/// @0x140356E10 writes back only the handle and the private data, and
/// `M:VIDMM_GLOBAL::CreateOneAllocation` @0x1400DCBA4 reserves none), and the process maps the
/// allocation with `D3DKMTMapGpuVirtualAddress`; under the pages' reading (the
/// `D3DDDI_ALLOCATIONINFO2` reference calls it an output) VidMm reserves one here, unmapped
/// until the allocation is made resident. An adapter without GpuMmu has no process VA space:
/// the allocation's bus address stands for it.
pub(crate) fn create_allocation2(
    a: &AdapterShared,
    device: KmtHandle,
    size: u64,
    private: &[u8],
) -> Result<(KmtHandle, SysAlloc, u64), SimError> {
    let (pid, device_kmd) = {
        let os = lock(&a.ums);
        match os.devices.get(&device) {
            None => return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE)),
            // A device VidSch put in error gets its allocation (the kernel entry refused a
            // stopped one: `K:COREDEVICEACCESS::AcquireShared` @0x14000F550).
            Some(d) => (d.process, d.kmd),
        }
    };
    let gpummu = lock(&a.mm.vidmm).process(pid).is_some();
    let mut info = Described {
        cpu_visible: true,
        ..Described::default()
    };
    let h = new_handle(pid)?;
    let mut opened = None;
    let (alloc, mapped) = if gpummu {
        let (d, open) = describe(a, pid, h, device_kmd, private)?;
        info = d;
        opened = open;
        let kmd = d.kmd;
        let bytes = d.size.max(size);
        // The backing store: where the contents live when not in VRAM. A large one is
        // aligned so that, with the driver's `SysMemLargePageSupported`, VidMm can map it
        // with large pages.
        let align = {
            let model = lock(&a.mm.memory_model);
            match (model.large_pages(), model.geometry()) {
                (Some(l), Some(g)) if l.system && bytes >= g.large_page() => g.large_page(),
                _ => PAGE,
            }
        };
        let alloc = a
            .device
            .memory()
            .alloc_system(bytes, align)
            .ok_or(SimError::DdiFailed(STATUS_NO_MEMORY))?;
        let pages = alloc.len / PAGE;
        let (apertures, _) = lock(&a.mm.memory_model).aperture_sets();
        let aperture = d.write_segments & apertures != 0;
        let order =
            crate::vidmm::residency::local_order(a, d.write_segments, d.preferred, d.cpu_visible);
        // Somewhere VidMm may place it at all, or the creation fails.
        if order.is_empty() && !aperture {
            a.device.memory().free_system(BusAddr::new(alloc.bus_addr));
            let _ = undo_kmd_allocation(a, kmd, opened);
            return Err(SimError::DdiFailed(STATUS_NO_MEMORY));
        }
        // What may go to VRAM gets a backing store of its own, scattered pages the
        // driver is given by MDL; what the CPU maps is its own backing store.
        let backing = if order.is_empty() {
            crate::vidmm::residency::Backing::Own
        } else {
            match crate::vidmm::residency::backing_pages(a, pages) {
                Some(b) => b,
                None => {
                    a.device.memory().free_system(BusAddr::new(alloc.bus_addr));
                    let _ = undo_kmd_allocation(a, kmd, opened);
                    return Err(SimError::DdiFailed(STATUS_NO_MEMORY));
                }
            }
        };
        let at_create =
            a.os.windows.reading().allocation_va == crate::os::answers::AllocationVa::AtCreate;
        let reserved = if at_create {
            crate::vidmm::mmu::vidmm_reserve(a, pid, alloc.len).map(Some)
        } else {
            Ok(None)
        };
        let va = match reserved {
            Ok(va) => va,
            Err(e) => {
                a.device.memory().free_system(BusAddr::new(alloc.bus_addr));
                if let crate::vidmm::residency::Backing::Pages(p) = backing {
                    for page in p {
                        a.device.memory().free_system(BusAddr::new(page.bus_addr));
                    }
                }
                let _ = undo_kmd_allocation(a, kmd, opened);
                return Err(e);
            }
        };
        crate::vidmm::residency::residency_track(
            &mut lock(&a.mm.residency),
            h,
            pid,
            device,
            kmd,
            va,
            pages,
            alloc.bus_addr,
            backing,
            order,
            aperture,
            crate::vidmm::residency::Place::Evicted,
        );
        (alloc, Some(Mapped { kmd, va }))
    } else {
        let alloc = a
            .device
            .memory()
            .alloc_system(size, PAGE)
            .ok_or(SimError::DdiFailed(STATUS_NO_MEMORY))?;
        (alloc, None)
    };
    let gpu_va = mapped.map_or(alloc.bus_addr, |m| m.va.unwrap_or(0));
    let cache = (info.cached && !lock(&a.mm.memory_model).io_coherent())
        .then(|| Arc::new(CpuCache::new(alloc.clone())));
    lock(&a.ums).allocations.insert(
        h,
        AllocObj {
            handle: h,
            device,
            alloc: alloc.clone(),
            mapped,
            refs: 0,
            closed: false,
            deferred: Vec::new(),
            deferred_dma: None,
            info,
            opened,
            cache,
        },
    );
    Ok((h, alloc, gpu_va))
}

/// Finishes every allocation dropped since the last call: unmap, DestroyAllocation, free.
/// Called with no OS lock held.
pub(crate) fn reap_allocations(host: &dyn Host, a: &AdapterShared) -> Result<(), SimError> {
    // Evictions released without EvictOnlyIfNecessary whose work has finished.
    crate::vidmm::residency::residency_tick(host, a)?;
    {
        // AL-03: destructions deferred behind queued work whose work has now completed.
        // (Windows' VidMm does this from its worker when the fences signal; here it runs
        // at VidMm's next entry, which changes when memory returns, never whether it
        // returns before the work ends.) The DMA packets are VidSch's: looked at with no
        // VidMm lock held.
        let waiting: Vec<(KmtHandle, KmtHandle, u64)> = lock(&a.ums)
            .allocations
            .iter()
            .filter(|(_, al)| al.closed)
            .filter_map(|(h, al)| Some((*h, al.device, al.deferred_dma?)))
            .collect();
        let ran: Vec<KmtHandle> = waiting
            .into_iter()
            .filter(|&(_, d, last)| host.device_dma_done(a, d, last))
            .map(|(h, _, _)| h)
            .collect();
        let mut os = lock(&a.ums);
        for h in ran {
            if let Some(al) = os.allocations.get_mut(&h) {
                al.deferred_dma = None;
            }
        }
        let done: Vec<KmtHandle> = os
            .allocations
            .iter()
            .filter(|(_, al)| al.closed && al.refs == 0 && al.deferred_done(&os))
            .map(|(h, _)| *h)
            .collect();
        for h in done {
            free_alloc(&mut os, h);
        }
    }
    // One releaser at a time (`UmsOs::reap_serial`): else a process exit could find the
    // queue empty while another thread still unmaps one of its allocations, then unmap the
    // same pages (STATUS_INVALID_PARAMETER) or drop the space under the other thread's
    // unmap (STATUS_INVALID_HANDLE).
    let serial = lock(&a.ums).reap_serial.clone();
    let _one = lock(&serial);
    loop {
        let Some(al) = lock(&a.ums).reaped.pop() else {
            return Ok(());
        };
        // Every allocation with a GPU VA is in VidMm's residency records, which unmap it;
        // the driver's allocation goes after that.
        crate::vidmm::residency::residency_release(host, a, al.handle)?;
        // `K:DXGDEVICE::DestroyCoreAllocations` @0x1403252DC: the device's open is closed
        // (`DdiCloseAllocation` with its device-specific handles) before the allocation is
        // destroyed (`DdiDestroyAllocation`).
        if let Some(o) = al.opened {
            close_creator_open(a, o)?;
        }
        if let Some(m) = al.mapped {
            destroy_kmd_allocation(a, m.kmd)?;
        }
        a.device
            .memory()
            .free_system(BusAddr::new(al.alloc.bus_addr));
    }
}

/// `DxgkDdiCreateAllocation` for one allocation `h` of process `pid`, then
/// `DxgkDdiOpenAllocation` of it for the creating device `device_kmd`, as 24H2's
/// `K:DXGDEVICE::CreateAllocation` @0x140356E10 does (`CreateDriverAllocations`, then
/// `OpenAllocations` for every allocation it created, then VidMm's checks in
/// `CreateVidMmAllocations`): what the driver answered, and its open (where VidMm may place
/// the allocation is decided at MakeResident, `vidmm::residency`).
fn describe(
    a: &AdapterShared,
    pid: ProcessId,
    h: KmtHandle,
    device_kmd: usize,
    private: &[u8],
) -> Result<(Described, Option<CreatorOpen>), SimError> {
    let f = a
        .table
        .get()
        .and_then(|t| ddi::in_table!(t, DxgkDdiCreateAllocation))
        .ok_or(SimError::DdiFailed(STATUS_NOT_SUPPORTED))?;
    // The OS passes its own copy of the UMD's bytes (user memory is never handed to the KMD),
    // in an info zeroed otherwise (`K:DXGDEVICE::CreateAllocation` @0x140356E10 zeroes the
    // array; `K:DXGDEVICE::CreateDriverAllocations` @0x1403231E0 writes the two fields only
    // for private data there is).
    let mut copy = private.to_vec();
    let mut info = DXGK_ALLOCATIONINFO {
        pPrivateDriverData: if copy.is_empty() {
            std::ptr::null_mut()
        } else {
            copy.as_mut_ptr().cast()
        },
        PrivateDriverDataSize: copy.len() as u32,
        ..Default::default()
    };
    let mut args = DXGKARG_CREATEALLOCATION {
        NumAllocations: 1,
        pAllocationInfo: &mut info,
        ..Default::default()
    };
    a.observer()
        .handed(&rvgpu_ddi::handover::CREATE_ALLOCATION, &args);
    a.observer()
        .handed(&rvgpu_ddi::handover::ALLOCATION_INFO, &info);
    let ctx = a.context();
    let st = f.passive(a, (ctx, &mut args))?;
    ddi::check_status(f, st)?;
    let kmd = info.hAllocation as usize;
    if kmd == 0 || info.Size == 0 {
        let msg = "driver bug: DxgkDdiCreateAllocation succeeded without a handle or size";
        a.state.raise_sim_error(msg.to_string());
        return Err(SimError::Violation(msg.into()));
    }
    // A GpuMmu driver answers the WDDM 2.0 flags.
    let flags = info.Anonymous2.flags_wddm2();
    let d = Described {
        kmd,
        size: info.Size as u64,
        cpu_visible: flags.get(DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::CpuVisible) != 0,
        cached: flags.get(DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::Cached) != 0,
        segments: info.SupportedReadSegmentSet | info.SupportedWriteSegmentSet,
        write_segments: info.SupportedWriteSegmentSet,
        preferred: info.PreferredSegment.Value,
    };
    let opened = match open_for_creator(a, pid, h, kmd, device_kmd, private) {
        Ok(o) => o,
        Err(e) => {
            let _ = destroy_kmd_allocation(a, kmd);
            return Err(e);
        }
    };
    let (apertures, coherent_apertures) = lock(&a.mm.memory_model).aperture_sets();
    // AL-04, VidMm's checks of the driver's answer (22631 dxgmms2
    // VIDMM_GLOBAL::VerifySupportedSegmentSetAndAdjustFlags, INVALID_PARAMETER each):
    // - a CpuVisible allocation lists an aperture segment, whatever the CPU visibility of
    //   its memory segments (seed 002: VidMm must always be able to place it in system memory
    //   and give it a CPU address);
    // - a Cached one, on an adapter with a cache-coherent aperture, only coherent apertures
    //   besides memory segments (which VidMm treats as coherent); without one, apertures only.
    let refuse = (d.cpu_visible && d.segments & apertures == 0)
        || (d.cached
            && if coherent_apertures != 0 {
                d.segments & apertures & !coherent_apertures != 0
            } else {
                d.segments & !apertures != 0
            });
    if refuse {
        let _ = undo_kmd_allocation(a, kmd, opened);
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    Ok((d, opened))
}

/// `K:DXGDEVICE::OpenAllocations` @0x140324850 for a new allocation: `DxgkDdiOpenAllocation`
/// on the creating device with `Flags.Create` (ReadOnly only for a `ReadOnly` creation, which
/// the thunks here never ask for), no resource private data (the creation has no standard
/// allocation), subresource 0, and per allocation its D3DKMT handle, a NULL
/// `hDeviceSpecificAllocation` and a fresh copy of the UMD's private data (24H2 copies the
/// UMD's bytes over what `DxgkDdiCreateAllocation` left in the buffer). The handle is in the
/// process's table meanwhile, so `DxgkCbGetHandleData` finds the allocation from inside the
/// call ([`crate::state::ums::UmsOs::creating`]). A driver without the DDI gets no open
/// (Dxgkrnl refuses a render core without it, BR-47).
fn open_for_creator(
    a: &AdapterShared,
    pid: ProcessId,
    h: KmtHandle,
    kmd: usize,
    device_kmd: usize,
    private: &[u8],
) -> Result<Option<CreatorOpen>, SimError> {
    let Some(f) = a
        .table
        .get()
        .and_then(|t| ddi::in_table!(t, DxgkDdiOpenAllocation))
    else {
        return Ok(None);
    };
    let mut copy = private.to_vec();
    let mut info = DXGK_OPENALLOCATIONINFO {
        hAllocation: h,
        pPrivateDriverData: copy.as_mut_ptr().cast(),
        PrivateDriverDataSize: copy.len() as u32,
        hDeviceSpecificAllocation: std::ptr::null_mut(),
    };
    let args = DXGKARG_OPENALLOCATION {
        NumAllocations: 1,
        pOpenAllocation: &mut info,
        pPrivateDriverData: std::ptr::null_mut(),
        PrivateDriverSize: 0,
        Flags: DXGK_OPENALLOCATIONFLAGS::default().with(DXGK_OPENALLOCATIONFLAGS::Create, 1),
        SubresourceIndex: 0,
        SubresourceOffset: 0,
        Pitch: 0,
    };
    a.observer()
        .handed(&rvgpu_ddi::handover::OPEN_ALLOCATION, &args);
    a.observer()
        .handed(&rvgpu_ddi::handover::OPEN_ALLOCATION_INFO, &info);
    lock(&a.ums).creating.insert(h, (pid, kmd));
    let st = {
        let _attached = Attached::enter(pid);
        f.passive(a, (device_kmd as HANDLE, &args))
    };
    lock(&a.ums).creating.remove(&h);
    ddi::check_status(f, st?)?;
    let handle = info.hDeviceSpecificAllocation as usize;
    if handle == 0 {
        let msg = "driver bug: DxgkDdiOpenAllocation succeeded without a device-specific handle";
        a.state.raise_sim_error(msg.to_string());
        return Err(SimError::Violation(msg.into()));
    }
    Ok(Some(CreatorOpen { device_kmd, handle }))
}

/// `DxgkDdiCloseAllocation` of the creating device's open.
fn close_creator_open(a: &AdapterShared, o: CreatorOpen) -> Result<(), SimError> {
    let Some(f) = a
        .table
        .get()
        .and_then(|t| ddi::in_table!(t, DxgkDdiCloseAllocation))
    else {
        return Ok(());
    };
    let list = [o.handle as HANDLE];
    let args = DXGKARG_CLOSEALLOCATION {
        NumAllocations: 1,
        pOpenHandleList: list.as_ptr(),
    };
    let st = f.passive(a, (o.device_kmd as HANDLE, &args))?;
    if st < 0 {
        let msg = format!(
            "driver bug: DxgkDdiCloseAllocation of the creator's open failed ({:#010x})",
            st as u32
        );
        a.state.raise_sim_error(msg.clone());
        return Err(SimError::Violation(msg));
    }
    Ok(())
}

/// Undoes a creation that failed after `DxgkDdiCreateAllocation`: the open closed, the
/// allocation destroyed (24H2's cleanup of a failed `CreateAllocation`, in
/// `DestroyCoreAllocations`' order).
fn undo_kmd_allocation(
    a: &AdapterShared,
    kmd: usize,
    opened: Option<CreatorOpen>,
) -> Result<(), SimError> {
    if let Some(o) = opened {
        close_creator_open(a, o)?;
    }
    destroy_kmd_allocation(a, kmd)
}

/// `DxgkDdiDestroyAllocation` of one driver allocation.
fn destroy_kmd_allocation(a: &AdapterShared, kmd: usize) -> Result<(), SimError> {
    let Some(f) = a
        .table
        .get()
        .and_then(|t| ddi::in_table!(t, DxgkDdiDestroyAllocation))
    else {
        return Ok(());
    };
    let list = [kmd as HANDLE];
    let args = DXGKARG_DESTROYALLOCATION {
        NumAllocations: 1,
        pAllocationList: list.as_ptr(),
        ..Default::default()
    };
    let ctx = a.context();
    let st = f.passive(a, (ctx, &args))?;
    if st < 0 {
        let msg = format!(
            "driver bug: DxgkDdiDestroyAllocation of its own allocation failed ({:#010x})",
            st as u32
        );
        a.state.raise_sim_error(msg.clone());
        return Err(SimError::Violation(msg));
    }
    Ok(())
}

/// `D3DKMTLock2` (AL-04): the CPU mapping of an allocation of `device`.
///
/// VidMm's rules (22631 dxgkrnl DxgkLock2Internal, dxgmms2 VIDMM_GLOBAL::Lock): a handle of
/// another device is INVALID_PARAMETER; an allocation the driver did not make `CpuVisible`
/// has no CPU address (INVALID_PARAMETER). `D3DKMT_LOCK2::Flags` are not looked at. Where the
/// CPU cannot reach the allocation where it lies (a memory segment the CPU cannot see, or a
/// `Cached` allocation in a memory segment: the CPU's caches are not coherent with it) VidMm
/// moves it into an aperture segment first (`LockInAperture`). This VidMm keeps every
/// CPU-visible allocation in its backing store behind the aperture (`vidmm::residency`), so
/// that move never has anything to do.
pub(crate) fn lock_allocation(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(SysAlloc, Option<Arc<CpuCache>>), SimError> {
    let os = lock(&a.ums);
    let Some(al) = os.open_allocation(device, h) else {
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    };
    if !al.info.cpu_visible {
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    // A Cached mapping goes through the CPU's caches (which, without I/O coherency, the GPU
    // does not see, AL-06); an uncached (write-combined) one reaches memory directly.
    Ok((al.alloc.clone(), al.cache.clone()))
}

/// `D3DKMTUnlock2`: a handle that is not the device's allocation is INVALID_PARAMETER
/// (22631 DxgkUnlock2Internal, DXGDEVICE::Unlock2). Unlocking an allocation that holds no
/// lock only logs a triage event and succeeds (VIDMM_GLOBAL::UnlockInternal), and this VidMm
/// keeps no mapping per lock, so there is nothing else to undo.
pub(crate) fn unlock_allocation(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    match lock(&a.ums).open_allocation(device, h) {
        Some(_) => Ok(()),
        None => Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER)),
    }
}

/// `D3DKMTDestroyAllocation2` (AL-03). Without `AssumeNotInUse` VidMm assumes the work the
/// device queued before the call may still use the allocation and frees it only once that
/// work completed; with it, at once. The call never blocks.
pub(crate) fn destroy_allocation2(
    host: &dyn Host,
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
    assume_not_in_use: bool,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    let deferred_dma = if assume_not_in_use {
        None
    } else {
        host.device_dma_work(a, device)
    };
    let mut os = lock(&a.ums);
    let deferred = if assume_not_in_use {
        Vec::new()
    } else {
        super::query::queued_work(&os, device)
    };
    let Some(al) = os
        .allocations
        .get_mut(&h)
        .filter(|al| al.is_open_to(device))
    else {
        return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
    };
    // `queued_work` lists only queues with work outstanding: an empty list is "not in use".
    if al.refs > 0 || !deferred.is_empty() || deferred_dma.is_some() {
        // UM-07: a live doorbell holds it; AL-03: queued work may use it. The memory goes
        // when both are over.
        al.deferred = deferred;
        al.deferred_dma = deferred_dma;
        al.closed = true;
        return Ok(());
    }
    free_alloc(&mut os, h);
    Ok(())
}
