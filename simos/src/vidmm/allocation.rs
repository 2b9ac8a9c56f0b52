//! Allocations of user-mode processes (issue 12): described by the driver
//! (`DxgkDdiCreateAllocation` with the UMD's private data), placed by VidMm in system memory
//! behind the aperture segment, mapped into the process's GPU VA space through the driver's
//! paging buffers (`vidmm::mmu`), CPU-mapped for the UMD, and kept alive by the doorbells that
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
use rvgpu_kmd::platform::Irql;

use crate::dxgkrnl::adapter::AdapterShared;
use crate::dxgkrnl::ddi::{self, At};
use crate::dxgkrnl::irql::Routine;
use crate::dxgkrnl::state::lock;
use crate::error::SimError;
use crate::machine::cpucache::CpuCache;
use crate::machine::Machine;
use crate::sync::fence::ProcessId;
use crate::ums::{dev_guard, device_lock, new_handle, KmtHandle, UmsEvent, UmsOs};
use crate::vidmm::gpuva::MapAttrs;
use crate::vidmm::mmu::LeafTag;

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// Where VidMm mapped an allocation (GpuMmu adapters).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mapped {
    /// The driver's handle (`DXGK_ALLOCATIONINFO::hAllocation`).
    pub(crate) kmd: usize,
    pub(crate) pid: ProcessId,
    pub(crate) va: u64,
    pub(crate) pages: u64,
}

#[derive(Debug)]
pub(crate) struct AllocObj {
    pub(crate) device: KmtHandle,
    pub(crate) alloc: SysAlloc,
    pub(crate) mapped: Option<Mapped>,
    /// Doorbells holding a reference (UM-07).
    pub(crate) refs: u32,
    /// The UMD destroyed its handle; the memory waits for the references.
    pub(crate) closed: bool,
    /// The CPU cache over the memory when the adapter is not I/O coherent (AL-06); cached CPU
    /// views go through it and `D3DKMTInvalidateCache` finds it here.
    pub(crate) cache: Option<Arc<CpuCache>>,
}

/// Drops one doorbell reference; queues the allocation for reaping if the UMD already closed
/// its handle.
pub(crate) fn release_alloc(os: &mut UmsOs, h: KmtHandle) {
    let free = match os.allocations.get_mut(&h) {
        Some(al) => {
            al.refs = al.refs.saturating_sub(1);
            al.refs == 0 && al.closed
        }
        None => false,
    };
    if free {
        free_alloc(os, h);
    }
}

/// Takes the allocation out of the process's view; [`Machine::reap_allocations`] finishes.
pub(crate) fn free_alloc(os: &mut UmsOs, h: KmtHandle) {
    if let Some(al) = os.allocations.remove(&h) {
        os.reaped.push(al);
        os.events.push(UmsEvent::FreeAllocation { allocation: h });
    }
}

impl Machine {
    /// Creates an allocation for `device` as the UMD described it in `private` (what
    /// `D3DKMTCreateAllocation2` carries to the driver), and maps it into the device's process.
    /// Returns the handle, the memory and the GPU VA.
    pub(crate) fn create_allocation(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        size: u64,
        private: &[u8],
    ) -> Result<(KmtHandle, SysAlloc, u64), SimError> {
        let pid = {
            let os = lock(&a.ums);
            match os.devices.get(&device) {
                None => return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE)),
                Some(d) if d.in_error => return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED)),
                Some(d) => d.process,
            }
        };
        let gpummu = lock(&a.vidmm).process(pid).is_some();
        let (alloc, mapped) = if gpummu {
            let (kmd, bytes) = describe(a, private)?;
            let bytes = bytes.max(size);
            let alloc = a
                .device
                .memory()
                .alloc_system(bytes, PAGE)
                .ok_or(SimError::DdiFailed(STATUS_NO_MEMORY))?;
            let pages = alloc.len / PAGE;
            let phys: Vec<_> = (0..pages)
                .map(|i| (0u32, alloc.bus_addr + i * PAGE))
                .collect();
            let tag = LeafTag {
                handle: kmd,
                base_va: 0,
                native_fence: false,
            };
            match self.vidmm_map(a, pid, &phys, MapAttrs::default(), tag) {
                Ok(va) => (
                    alloc,
                    Some(Mapped {
                        kmd,
                        pid,
                        va,
                        pages,
                    }),
                ),
                Err(e) => {
                    a.device.memory().free_system(alloc.bus_addr);
                    let _ = destroy_kmd_allocation(a, kmd);
                    return Err(e);
                }
            }
        } else {
            let alloc = a
                .device
                .memory()
                .alloc_system(size, PAGE)
                .ok_or(SimError::DdiFailed(STATUS_NO_MEMORY))?;
            (alloc, None)
        };
        let gpu_va = mapped.map_or(alloc.bus_addr, |m| m.va);
        let cache =
            (!lock(&a.memory_model).io_coherent()).then(|| Arc::new(CpuCache::new(alloc.clone())));
        let h = new_handle();
        lock(&a.ums).allocations.insert(
            h,
            AllocObj {
                device,
                alloc: alloc.clone(),
                mapped,
                refs: 0,
                closed: false,
                cache,
            },
        );
        Ok((h, alloc, gpu_va))
    }

    /// Finishes every allocation dropped since the last call: unmap, DestroyAllocation, free.
    /// Called with no OS lock held.
    pub(crate) fn reap_allocations(&self, a: &AdapterShared) -> Result<(), SimError> {
        loop {
            let Some(al) = lock(&a.ums).reaped.pop() else {
                return Ok(());
            };
            if let Some(m) = al.mapped {
                // A lost device runs no paging buffers; its tables go with the process.
                if !a.device.is_lost() {
                    let tag = LeafTag {
                        handle: m.kmd,
                        base_va: m.va,
                        native_fence: false,
                    };
                    self.vidmm_unmap(a, m.pid, m.va, m.pages, tag)?;
                } else {
                    self.vidmm_forget(a, m.pid, m.va, m.pages);
                }
                destroy_kmd_allocation(a, m.kmd)?;
            }
            a.device.memory().free_system(al.alloc.bus_addr);
        }
    }
}

/// `DxgkDdiCreateAllocation` for one allocation: the driver's handle and size.
fn describe(a: &AdapterShared, private: &[u8]) -> Result<(usize, u64), SimError> {
    let f = a
        .table
        .get()
        .and_then(|t| t.DxgkDdiCreateAllocation)
        .ok_or(SimError::DdiFailed(STATUS_NOT_SUPPORTED))?;
    // The OS passes its own copy of the UMD's bytes (user memory is never handed to the KMD).
    let mut copy = private.to_vec();
    let mut info = DXGK_ALLOCATIONINFO {
        pPrivateDriverData: copy.as_mut_ptr().cast(),
        PrivateDriverDataSize: copy.len() as u32,
        ..Default::default()
    };
    let mut args = DXGKARG_CREATEALLOCATION {
        NumAllocations: 1,
        pAllocationInfo: &mut info,
        ..Default::default()
    };
    let ctx = a.context();
    let st = ddi::call(
        a,
        Routine::DxgkDdiCreateAllocation,
        f as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with its context and a valid argument block whose
            // one info and private data outlive the call.
            unsafe { f(ctx, &mut args) }
        },
    )?;
    ddi::check_status(st)?;
    let kmd = info.hAllocation as usize;
    if kmd == 0 || info.Size == 0 {
        let msg = "driver bug: DxgkDdiCreateAllocation succeeded without a handle or size";
        a.state.raise_sim_error(msg.to_string());
        return Err(SimError::Simulation(msg.into()));
    }
    // VidMm places the allocation in a segment the driver allows: this VidMm backs
    // allocations with system memory, i.e. the aperture segment must be in the set.
    let aperture = lock(&a.memory_model).segments.iter().position(|s| {
        s.Flags
            .is_set(rvgpu_ddi::memory::DXGK_SEGMENTFLAGS::Aperture)
    });
    let allowed = aperture.is_some_and(|i| info.SupportedWriteSegmentSet & (1 << i) != 0);
    if !allowed {
        let _ = destroy_kmd_allocation(a, kmd);
        return Err(SimError::DdiFailed(STATUS_NO_MEMORY));
    }
    Ok((kmd, info.Size as u64))
}

/// `DxgkDdiDestroyAllocation` of one driver allocation.
fn destroy_kmd_allocation(a: &AdapterShared, kmd: usize) -> Result<(), SimError> {
    let Some(f) = a.table.get().and_then(|t| t.DxgkDdiDestroyAllocation) else {
        return Ok(());
    };
    let list = [kmd as HANDLE];
    let args = DXGKARG_DESTROYALLOCATION {
        NumAllocations: 1,
        pAllocationList: list.as_ptr(),
        ..Default::default()
    };
    let ctx = a.context();
    let st = ddi::call(
        a,
        Routine::DxgkDdiDestroyAllocation,
        f as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with its context and a valid block naming its handle.
            unsafe { f(ctx, &args) }
        },
    )?;
    if st < 0 {
        let msg = format!(
            "driver bug: DxgkDdiDestroyAllocation of its own allocation failed ({:#010x})",
            st as u32
        );
        a.state.raise_sim_error(msg.clone());
        return Err(SimError::Simulation(msg));
    }
    Ok(())
}

pub(crate) fn destroy_allocation(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    let mut os = lock(&a.ums);
    let Some(al) = os
        .allocations
        .get_mut(&h)
        .filter(|al| al.device == device && !al.closed)
    else {
        return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
    };
    if al.refs > 0 {
        // UM-07: a live doorbell holds it; the memory goes with the last reference.
        al.closed = true;
        return Ok(());
    }
    free_alloc(&mut os, h);
    Ok(())
}
