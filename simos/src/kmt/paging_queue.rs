//! The paging-queue thunks' kernel entries, as 24H2 answers them: `D3DKMTCreatePagingQueue`
//! (`K:DxgkCreatePagingQueueInternal` @0x1403967CC), `D3DKMTDestroyPagingQueue`
//! (`K:DxgkDestroyPagingQueueInternal` @0x1403B201C) and `D3DKMTMakeResident`
//! (`K:DxgkMakeResidentInternal` @0x1402A7570): the caller's structure as written, the checks
//! in 24H2's order with their statuses, then the simulated VidMm ([`crate::vidmm::va`],
//! [`crate::vidmm::residency`]), and back exactly the fields 24H2 writes.

pub use rvgpu_ddi::d3dkmt::{D3DDDI_MAKERESIDENT, D3DKMT_CREATEPAGINGQUEUE};
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NO_MEMORY};
use rvgpu_umd::kmt::{
    KmtHandle, MakeResidentError, MakeResidentFlags, NtStatus, PagingFence, PagingQueue,
};

use super::SimFence;
use crate::machine::Machine;
use crate::sync::fence::MonitoredFence;
use crate::ums::UmsProcess;
use crate::vidmm::residency::MakeResidentFail;

/// `D3DDDI_MAKERESIDENT_FLAGS::CantTrimFurther`.
pub const MAKERESIDENT_CANT_TRIM_FURTHER: u32 = 1 << 0;
/// `D3DDDI_MAKERESIDENT_FLAGS::MustSucceed`.
pub const MAKERESIDENT_MUST_SUCCEED: u32 = 1 << 1;
/// `D3DDDI_MAKERESIDENT_FLAGS` has two bits (`CantTrimFurther`, `MustSucceed`): a `Value`
/// from this one up is refused.
const MAKERESIDENT_FLAGS_END: u32 = 1 << 2;
/// The physical adapters of every adapter of the simulation.
const PHYSICAL_ADAPTERS: u32 = 1;

fn bad() -> NtStatus {
    NtStatus(STATUS_INVALID_PARAMETER)
}

/// `DxgkDestroyPagingQueueInternal` for `hPagingQueue` `h` (the structure's one member):
/// 1. `h` not a paging queue in the caller's handle table, or one already destroyed
///    (`queue`: its device): STATUS_INVALID_PARAMETER; no check of the device's state;
/// 2. the handle marked destroyed and the caller's reference dropped: here the queue goes at
///    once, its queued work done first and its fence with it (the simulated VidMm).
///
/// Nothing is written back.
pub fn dxgk_destroy_paging_queue_internal(
    m: &Machine,
    h: u32,
    queue: impl FnOnce(u32) -> Option<UmsProcess>,
) -> Result<(), NtStatus> {
    let p = queue(h).ok_or_else(bad)?;
    let sh = m.kmt(&p).thunk()?;
    crate::vidmm::va::paging_queue::paging_queue_destroy(m, &sh, p.device, h).map_err(super::status)
}

/// `DxgkCreatePagingQueueInternal` for the caller's structure `a`, in 24H2's order:
/// 1. `hDevice` not in the caller's handle table (`device`): STATUS_INVALID_PARAMETER;
/// 2. the device not active (`COREDEVICEACCESS`, `kmt::lock::device_active`: stopped by
///    an adapter-wide reset, not merely in error): STATUS_DEVICE_REMOVED;
/// 3. `PhysicalAdapterIndex` at or past the adapter's physical adapters:
///    STATUS_INVALID_PARAMETER;
/// 4. the queue and its fence (`DXGDEVICE::CreatePagingQueue`, the simulated VidMm).
///
/// On success `a`'s `hPagingQueue`, `hSyncObject` and `FenceValueCPUVirtualAddress` are the
/// new queue's (24H2 copies the whole structure back) and the queue's fence is returned for
/// the caller's CPU view; on failure `a` is unchanged.
pub fn dxgk_create_paging_queue_internal(
    m: &Machine,
    a: &mut D3DKMT_CREATEPAGINGQUEUE,
    device: impl FnOnce(u32) -> Option<UmsProcess>,
) -> Result<MonitoredFence, NtStatus> {
    let p = device(a.hDevice).ok_or_else(bad)?;
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    super::lock::device_active(&sh, p.device)?;
    if a.PhysicalAdapterIndex >= PHYSICAL_ADAPTERS {
        return Err(bad());
    }
    let (queue, fence, f) = m
        .paging_queue_create(&sh, p.device, a.Priority, a.PhysicalAdapterIndex)
        .map_err(super::status)?;
    a.hPagingQueue = queue;
    a.hSyncObject = fence;
    // User and kernel share memory here: the OS's own view of the value.
    a.FenceValueCPUVirtualAddress = f.kernel_va() as u64;
    Ok(f)
}

/// `DxgkMakeResidentInternal` for the caller's structure `a`, in 24H2's order:
/// 1. `NumAllocations` 0, `AllocationList` NULL, `Flags.Value` 4 or more: each
///    STATUS_INVALID_PARAMETER;
/// 2. `hPagingQueue` not in the caller's handle table (`queue`: the device it is of):
///    STATUS_INVALID_PARAMETER;
/// 3. the device not active: STATUS_DEVICE_REMOVED; the list read from the caller (`list`:
///    its fault status); each handle not an allocation
///    in the caller's table, or of another device than the queue's (`allocation`: its
///    device): STATUS_INVALID_PARAMETER;
/// 4. VidMm's MakeResident on the queue (`M:VIDMM_GLOBAL::MakeResident` @0x1400B93C8): over
///    budget STATUS_NO_MEMORY with `NumBytesToTrim`, and with `MustSucceed` the device put in
///    error (`VidSchMarkDeviceAsError`, code 12; Microsoft's page of
///    `D3DDDI_MAKERESIDENT_FLAGS` says so too); else `PagingFenceValue`, which the queue's
///    fence may not have reached yet (the thunk answers STATUS_PENDING then).
///
/// `a.NumBytesToTrim` is VidMm's answer once VidMm ran (the caller's own otherwise) and
/// `a.PagingFenceValue` is set on success only.
pub fn dxgk_make_resident_internal(
    m: &Machine,
    a: &mut D3DDDI_MAKERESIDENT,
    queue: impl FnOnce(u32) -> Option<UmsProcess>,
    list: impl FnOnce(u64, u32) -> Result<Vec<KmtHandle>, NtStatus>,
    allocation: impl Fn(KmtHandle) -> Option<KmtHandle>,
) -> Result<(), NtStatus> {
    if a.NumAllocations == 0 || a.AllocationList == 0 || a.Flags >= MAKERESIDENT_FLAGS_END {
        return Err(bad());
    }
    let p = queue(a.hPagingQueue).ok_or_else(bad)?;
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    super::lock::device_active(&sh, p.device)?;
    let handles = list(a.AllocationList, a.NumAllocations)?;
    if handles.iter().any(|&h| allocation(h) != Some(p.device)) {
        return Err(bad());
    }
    let cant_trim = a.Flags & MAKERESIDENT_CANT_TRIM_FURTHER != 0;
    let paged = m.paging_queue_make_resident(&sh, p.device, a.hPagingQueue, |m| {
        m.residency_make_resident(&sh, p.device, &handles, cant_trim)
    });
    match paged {
        Ok(value) => {
            a.PagingFenceValue = value;
            Ok(())
        }
        Err(MakeResidentFail::OverBudget(bytes)) => {
            a.NumBytesToTrim = bytes;
            if a.Flags & MAKERESIDENT_MUST_SUCCEED != 0 {
                crate::ums::mark_device_as_error(&sh, p.device, 12).map_err(super::status)?;
            }
            Err(NtStatus(STATUS_NO_MEMORY))
        }
        Err(MakeResidentFail::Failed(e)) => Err(super::status(e)),
    }
}

/// The Rust UMD's `D3DKMTCreatePagingQueue` (`PhysicalAdapterIndex` 0).
pub(super) fn umd_create(
    m: &Machine,
    p: UmsProcess,
    priority: i32,
) -> Result<PagingQueue<SimFence>, NtStatus> {
    let mut a = D3DKMT_CREATEPAGINGQUEUE {
        hDevice: p.device,
        Priority: priority,
        ..Default::default()
    };
    let f = dxgk_create_paging_queue_internal(m, &mut a, |h| (h == p.device).then_some(p))?;
    Ok(PagingQueue {
        handle: a.hPagingQueue,
        fence: a.hSyncObject,
        fence_cpu: SimFence::Monitored(f),
    })
}

/// The Rust UMD's `D3DKMTMakeResident` on `queue`: the queue and the allocations are looked
/// up in the device's own tables, as the caller's handle table would name them.
pub(super) fn umd_make_resident(
    m: &Machine,
    p: UmsProcess,
    queue: &PagingQueue<SimFence>,
    allocations: &[KmtHandle],
    flags: MakeResidentFlags,
) -> Result<PagingFence, MakeResidentError> {
    let mut a = D3DDDI_MAKERESIDENT {
        hPagingQueue: queue.handle,
        NumAllocations: u32::try_from(allocations.len()).unwrap_or(u32::MAX),
        AllocationList: allocations.as_ptr() as u64,
        ..Default::default()
    };
    if flags.cant_trim_further {
        a.Flags = MAKERESIDENT_CANT_TRIM_FURTHER;
    }
    let q = super::gpu_va::paging_queue_device(m, &p, queue.handle);
    let r = dxgk_make_resident_internal(
        m,
        &mut a,
        |_| (q == Some(p.device)).then_some(p),
        |_, _| Ok(allocations.to_vec()),
        |h| super::gpu_va::allocation_device(m, &p, h),
    );
    match r {
        Ok(()) => Ok(PagingFence {
            fence: queue.fence,
            value: a.PagingFenceValue,
        }),
        Err(s) if s.0 == STATUS_NO_MEMORY => Err(MakeResidentError::OverBudget {
            bytes_to_trim: a.NumBytesToTrim,
        }),
        Err(s) => Err(MakeResidentError::Status(s)),
    }
}
