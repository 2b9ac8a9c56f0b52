//! The paging-queue thunks' kernel entries, as 24H2 answers them: `D3DKMTCreatePagingQueue`
//! (`K:DxgkCreatePagingQueueInternal` @0x1403967CC), `D3DKMTDestroyPagingQueue`
//! (`K:DxgkDestroyPagingQueueInternal` @0x1403B201C) and `D3DKMTMakeResident`
//! (`K:DxgkMakeResidentInternal` @0x1402A7570): the caller's structure as written, the checks
//! in 24H2's order with their statuses, then the simulated VidMm ([`crate::vidmm::va`],
//! [`crate::vidmm::residency`]), and back exactly the fields 24H2 writes.

pub use rvgpu_ddi::d3dkmt::{D3DDDI_MAKERESIDENT, D3DKMT_CREATEPAGINGQUEUE};
use rvgpu_ddi::ntstatus::STATUS_NO_MEMORY;
use rvgpu_umd::kmt::{
    KmtHandle, MakeResidentError, MakeResidentFlags, NtStatus, PagingFence, PagingQueue,
};

use super::process::SimFence;
use super::refusal::row::*;
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

refusals! {
    /// `D3DKMTDestroyPagingQueue`'s refusals, in 24H2's order.
    DestroyPagingQueueCheck => DESTROY_PAGING_QUEUE_CHECKS {
        Queue: "hPagingQueue not a paging queue in the caller's handle table" => INVALID_PARAMETER;
    }
}

/// `D3DKMTDestroyPagingQueue`'s row of the thunk catalog ([`super::catalog`]).
pub const DESTROY_PAGING_QUEUE: Thunk = Thunk {
    name: "D3DKMTDestroyPagingQueue",
    source: Some(&[src("DxgkDestroyPagingQueueInternal", 0x1403B201C)]),
    checks: DESTROY_PAGING_QUEUE_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("paging_queue::dxgk_destroy_paging_queue_internal"),
    gaps: "24H2 marks the handle destroyed and drops a reference (the queue goes with the \
           last one, its queued paging running on); the simulation does the queue's queued \
           work inside the call, then tears the queue and its fence down",
};

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
    let p = queue(h).ok_or(DestroyPagingQueueCheck::Queue.refuse())?;
    let sh = m.kmt(&p).thunk()?;
    crate::vidmm::va::paging_queue::paging_queue_destroy(m, &sh, p.device, h)
        .map_err(super::process::status)
}

refusals! {
    /// `D3DKMTCreatePagingQueue`'s refusals, in 24H2's order.
    CreatePagingQueueCheck => CREATE_PAGING_QUEUE_CHECKS {
        Device: "hDevice not in the caller's handle table" => INVALID_PARAMETER;
        DeviceActive: "the device not active" => DEVICE_REMOVED;
        PhysicalAdapter: "PhysicalAdapterIndex at or past the adapter's physical adapters" => INVALID_PARAMETER;
    }
}

/// `D3DKMTCreatePagingQueue`'s row of the thunk catalog ([`super::catalog`]).
pub const CREATE_PAGING_QUEUE: Thunk = Thunk {
    name: "D3DKMTCreatePagingQueue",
    source: Some(&[
        src("DxgkCreatePagingQueueInternal", 0x1403967CC),
        src("DXGDEVICE::CreatePagingQueue", 0x140396C98),
    ]),
    checks: CREATE_PAGING_QUEUE_CHECKS,
    written_back: &[
        "hPagingQueue",
        "hSyncObject",
        "FenceValueCPUVirtualAddress (the 32-byte structure copied back whole)",
    ],
    pending: Pending::No,
    entry: Some("paging_queue::dxgk_create_paging_queue_internal"),
    gaps: "24H2 makes the queue's fence a monitored fence with NoSignal and NoGPUAccess \
           (DXGPAGINGQUEUE::Initialize @0x140396FF0; here a CPU signal of it is refused \
           as NoSignal) starting at a value the adapter keeps (not identified): here at 0; \
           Priority is taken as given, as VIDMM_DEVICE::CreatePagingQueue @0x1400F8448 \
           uses it nowhere",
};

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
    let p = device(a.hDevice).ok_or(CreatePagingQueueCheck::Device.refuse())?;
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    super::lock::device_active(&sh, p.device, CreatePagingQueueCheck::DeviceActive.refuse())?;
    if a.PhysicalAdapterIndex >= PHYSICAL_ADAPTERS {
        return Err(CreatePagingQueueCheck::PhysicalAdapter.refuse());
    }
    let (queue, fence, f) = m
        .paging_queue_create(&sh, p.device, a.Priority, a.PhysicalAdapterIndex)
        .map_err(super::process::status)?;
    a.hPagingQueue = queue;
    a.hSyncObject = fence;
    // User and kernel share memory here: the OS's own view of the value.
    a.FenceValueCPUVirtualAddress = f.kernel_va() as u64;
    Ok(f)
}

refusals! {
    /// `D3DKMTMakeResident`'s refusals, in 24H2's order.
    MakeResidentCheck => MAKE_RESIDENT_CHECKS {
        NumAllocations: "NumAllocations 0" => INVALID_PARAMETER;
        NullList: "AllocationList NULL" => INVALID_PARAMETER;
        Flags: "Flags.Value 4 or more" => INVALID_PARAMETER;
        Queue: "hPagingQueue not in the caller's handle table" => INVALID_PARAMETER;
        NoPool: "no pool for more than 40 allocations" => NO_MEMORY,
            elsewhere "not modelled: the simulated pool does not run out";
        DeviceActive: "the device not active" => DEVICE_REMOVED;
        ListedHandle: "a listed handle not an allocation in the caller's handle table" => INVALID_PARAMETER;
        OtherDevice: "an allocation of another device than the paging queue's" => INVALID_PARAMETER;
        NoUserModeResidency: "a device created without user-mode residency" => NOT_SUPPORTED,
            elsewhere "not modelled: every simulated device has user-mode residency";
        OverBudget: "over the budget (with MustSucceed the device is put in error, VidSch code 12)" => NO_MEMORY;
    }
}

/// `D3DKMTMakeResident`'s row of the thunk catalog ([`super::catalog`]).
pub const MAKE_RESIDENT: Thunk = Thunk {
    name: "D3DKMTMakeResident",
    source: Some(&[
        src("DxgkMakeResidentInternal", 0x1402A7570),
        src("VIDMM_GLOBAL::MakeResident", 0x1400B93C8),
    ]),
    checks: MAKE_RESIDENT_CHECKS,
    written_back: &[
        "PagingFenceValue, on success and on STATUS_PENDING",
        "NumBytesToTrim, after any VidMm answer (the caller's own where VidMm set none)",
    ],
    pending: Pending::When("paging queued ahead on the queue: PagingFenceValue not reached"),
    entry: Some("paging_queue::dxgk_make_resident_internal"),
    gaps: "over budget (`M:VIDMM_GLOBAL::MakeResident` @0x1400B93C8: STATUS_NO_MEMORY, and \
           with MustSucceed the device in error) the bytes to trim are the simulated VidMm's, \
           not compared with `VIDMM_PROCESS_ADAPTER_INFO::GetNumBytesToTrim` @0x1400E8018, \
           which with CantTrimFurther measures against the segment group's state instead of \
           the budget: here CantTrimFurther never fails over budget; the user-mode \
           residency condition (DXGDEVICE +0x77F, or a device of kind 2 on WDDM 2.0 and \
           up) is not modelled; the gdi32 bridge copies at most 256 handles (more is \
           STATUS_INVALID_PARAMETER there)",
};

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
    if a.NumAllocations == 0 {
        return Err(MakeResidentCheck::NumAllocations.refuse());
    }
    if a.AllocationList == 0 {
        return Err(MakeResidentCheck::NullList.refuse());
    }
    if a.Flags >= MAKERESIDENT_FLAGS_END {
        return Err(MakeResidentCheck::Flags.refuse());
    }
    let p = queue(a.hPagingQueue).ok_or(MakeResidentCheck::Queue.refuse())?;
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    super::lock::device_active(&sh, p.device, MakeResidentCheck::DeviceActive.refuse())?;
    let handles = list(a.AllocationList, a.NumAllocations)?;
    for &h in &handles {
        match allocation(h) {
            None => return Err(MakeResidentCheck::ListedHandle.refuse()),
            Some(d) if d != p.device => return Err(MakeResidentCheck::OtherDevice.refuse()),
            Some(_) => {}
        }
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
                crate::ums::mark_device_as_error(&sh, p.device, 12)
                    .map_err(super::process::status)?;
            }
            Err(MakeResidentCheck::OverBudget.refuse())
        }
        Err(MakeResidentFail::Failed(e)) => Err(super::process::status(e)),
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
