//! gdi32.dll's D3DKMT thunks for the UMD image: each decodes the structure the DLL passes
//! (the released x64 layout, read as the one zerocopy definition the thunk's kernel entry
//! takes: `rvgpu_ddi::d3dkmt`, or the kernel entry's own in [`crate::kmt`]), calls the
//! simulated thunk layer ([`crate::kmt::SimKmt`] and what it calls) for the device the handle
//! belongs to, writes the outputs back and returns the NTSTATUS.
//!
//! Every byte is untrusted. The argument pointer and every array or buffer it points to are
//! copied with [`guest`] (a bad pointer is `STATUS_ACCESS_VIOLATION`, a null one
//! `STATUS_INVALID_PARAMETER` — what Dxgkrnl's probe-and-capture of a thunk's arguments
//! returns); outputs are checked writable before anything is done; counts and sizes are
//! bounded before anything is allocated; a handle this process did not get is
//! `STATUS_INVALID_PARAMETER` ("Parameters were validated and determined to be incorrect", the
//! documented failure of each thunk, e.g.
//! <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtopenadapterfromluid>).
//! Nothing here panics on what the DLL passes.
//!
//! Handles: the DLL's process is one simulated process per adapter, made by its first
//! `D3DKMTCreateDevice` there; every later device there is a device of it
//! ([`crate::UmsProcess`] names one device of it), sharing its GPU VA space and handle table.
//! Every object a thunk creates is recorded with the device that owns it, so that thunks whose
//! structure names no device (`hHwQueue`, `hDoorbell`, `hContext`, `hSyncObject`,
//! `hPagingQueue`) reach the right one.

use std::mem::offset_of;

use zerocopy::IntoBytes;

use super::guest;
use super::process::{Handler, UserProcess};
use crate::base::lock::lock;
use crate::pe::cpu::StubResult;
use rvgpu_ddi::d3dkmt::{D3DDDI_DESTROYPAGINGQUEUE, D3DKMT_DESTROYCONTEXT, D3DKMT_DESTROYHWQUEUE};

mod adapter;
mod common;
mod doorbell;
pub(super) mod doorbell_page;
mod sync;
mod va;
use adapter::{
    close_adapter, create_device, destroy_device, enum_adapters2, escape, get_device_state,
    is_feature_enabled, open_adapter_from_luid,
};
pub use common::STATUS_UNSUCCESSFUL;
use common::*;
use doorbell::{connect_doorbell, create_doorbell, destroy_doorbell, notify_work_submission};
use sync::{
    create_native_fence, create_synchronization_object2, destroy_synchronization_object,
    open_native_fence_from_nt_handle, share_objects, signal_from_cpu, submit_signal_to_hw_queue,
    submit_wait_to_hw_queue, wait_from_cpu,
};
use va::{
    free_gpu_virtual_address, map_gpu_virtual_address, reserve_gpu_virtual_address,
    update_gpu_virtual_address,
};
/// A thunk as a stub handler: its argument pointer is RCX.
macro_rules! thunk {
    ($f:path) => {
        |p: &UserProcess, w: &[u64; 12]| -> StubResult { status_of($f(p, w[0])) }
    };
}

/// The thunks the DLL imports from gdi32.dll.
pub(super) fn import(name: &str) -> Option<Handler> {
    Some(match name {
        "D3DKMTOpenAdapterFromLuid" => thunk!(open_adapter_from_luid),
        "D3DKMTCloseAdapter" => thunk!(close_adapter),
        "D3DKMTCreateDevice" => thunk!(create_device),
        "D3DKMTDestroyDevice" => thunk!(destroy_device),
        "D3DKMTGetDeviceState" => thunk!(get_device_state),
        "D3DKMTCreatePagingQueue" => thunk!(create_paging_queue),
        "D3DKMTDestroyPagingQueue" => thunk!(destroy_paging_queue),
        "D3DKMTQueryAdapterInfo" => thunk!(query_adapter_info),
        "D3DKMTEscape" => thunk!(escape),
        "D3DKMTCreateContextVirtual" => thunk!(create_context_virtual),
        "D3DKMTDestroyContext" => thunk!(destroy_context),
        "D3DKMTCreateHwQueue" => thunk!(create_hw_queue),
        "D3DKMTDestroyHwQueue" => thunk!(destroy_hw_queue),
        "D3DKMTSubmitCommandToHwQueue" => thunk!(submit_command_to_hw_queue),
        "D3DKMTSubmitCommand" => thunk!(submit_command),
        "D3DKMTCreateAllocation2" => thunk!(create_allocation2),
        "D3DKMTDestroyAllocation2" => thunk!(destroy_allocation2),
        "D3DKMTLock2" => thunk!(lock2),
        "D3DKMTUnlock2" => thunk!(unlock2),
        "D3DKMTMakeResident" => thunk!(make_resident),
        "D3DKMTInvalidateCache" => thunk!(invalidate_cache),
        "D3DKMTReserveGpuVirtualAddress" => thunk!(reserve_gpu_virtual_address),
        "D3DKMTMapGpuVirtualAddress" => thunk!(map_gpu_virtual_address),
        "D3DKMTFreeGpuVirtualAddress" => thunk!(free_gpu_virtual_address),
        "D3DKMTUpdateGpuVirtualAddress" => thunk!(update_gpu_virtual_address),
        "D3DKMTDestroySynchronizationObject" => thunk!(destroy_synchronization_object),
        "D3DKMTSignalSynchronizationObjectFromCpu" => thunk!(signal_from_cpu),
        "D3DKMTWaitForSynchronizationObjectFromCpu" => thunk!(wait_from_cpu),
        // Five arguments, not one structure.
        "D3DKMTShareObjects" => {
            |p: &UserProcess, w: &[u64; 12]| -> StubResult { status_of(share_objects(p, w)) }
        }
        _ => return None,
    })
}

/// The thunks the DLL looks up at run time (`GetProcAddress(gdi32, …)`: the WDDM 3.2 ones,
/// umd/src/kmt_windows/gdi32.rs `Wddm32Thunk`), and gdi32's exports the DLL links no call to.
pub(super) const RUNTIME: &[(&str, Handler)] = &[
    ("D3DKMTCreateDoorbell", thunk!(create_doorbell)),
    ("D3DKMTConnectDoorbell", thunk!(connect_doorbell)),
    ("D3DKMTDestroyDoorbell", thunk!(destroy_doorbell)),
    ("D3DKMTNotifyWorkSubmission", thunk!(notify_work_submission)),
    ("D3DKMTCreateNativeFence", thunk!(create_native_fence)),
    (
        "D3DKMTOpenNativeFenceFromNtHandle",
        thunk!(open_native_fence_from_nt_handle),
    ),
    (
        "D3DKMTSubmitSignalSyncObjectsToHwQueue",
        thunk!(submit_signal_to_hw_queue),
    ),
    (
        "D3DKMTSubmitWaitForSyncObjectsToHwQueue",
        thunk!(submit_wait_to_hw_queue),
    ),
    // gdi32 exports it; today's DLL links no call to it, so a caller finds it this way.
    (
        "D3DKMTUpdateGpuVirtualAddress",
        thunk!(update_gpu_virtual_address),
    ),
    // gdi32 exports these too; the DLL looks none of them up, the harness and the conformance
    // suites do.
    (
        "D3DKMTCreateSynchronizationObject2",
        thunk!(create_synchronization_object2),
    ),
    ("D3DKMTEnumAdapters2", thunk!(enum_adapters2)),
    ("D3DKMTEvict", thunk!(evict)),
    ("D3DKMTEscape", thunk!(escape)),
    ("D3DKMTIsFeatureEnabled", thunk!(is_feature_enabled)),
];

// ---------------------------------------------------------------------------------------------
// Adapters and devices.

/// `D3DKMTQueryAdapterInfo`: the structure as the caller wrote it to the thunk's kernel entry
/// ([`crate::kmt::query_adapter_info`]), which reads the type's input from and writes its
/// output to the caller's memory.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtqueryadapterinfo>
fn query_adapter_info(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::query_adapter_info::{dxgk_query_adapter_info_impl, D3DKMT_QUERYADAPTERINFO};
    let a: D3DKMT_QUERYADAPTERINFO = args(at)?;
    dxgk_query_adapter_info_impl(
        &p.machine,
        &a,
        |h| lock(&p.handles).adapters.get(&h).copied(),
        &GuestMemory,
    )
    .map_err(nt)
}

// ---------------------------------------------------------------------------------------------
// Paging queues, contexts, hardware queues.

/// `D3DKMTCreatePagingQueue`: the structure as the DLL wrote it to the thunk's kernel entry
/// ([`crate::kmt::paging_queue`], 24H2's checks), then its outputs back; the fence's CPU
/// address is the OS's fence value itself (one address space).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreatepagingqueue>
fn create_paging_queue(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::paging_queue::{dxgk_create_paging_queue_internal, D3DKMT_CREATEPAGINGQUEUE};
    let mut a: D3DKMT_CREATEPAGINGQUEUE = args(at)?;
    probe_out::<D3DKMT_CREATEPAGINGQUEUE>(at)?;
    let device = |h: u32| p.device(h).ok().map(|d| d.sim);
    let f = dxgk_create_paging_queue_internal(&p.machine, &mut a, device).map_err(nt)?;
    let (h, fence) = (a.hPagingQueue, a.hSyncObject);
    {
        let mut hs = lock(&p.handles);
        hs.owner.insert(h, a.hDevice);
        hs.owner.insert(fence, a.hDevice);
        let q = rvgpu_umd::kmt::PagingQueue {
            handle: h,
            fence,
            fence_cpu: crate::kmt::SimFence::Monitored(f),
        };
        hs.paging.insert(h, q);
    }
    guest::write(at, &a).map_err(bad)
}

/// `D3DKMTDestroyPagingQueue`: the handle to the thunk's kernel entry
/// ([`crate::kmt::paging_queue::dxgk_destroy_paging_queue_internal`]); its fence goes with it.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroypagingqueue>
fn destroy_paging_queue(p: &UserProcess, at: u64) -> Status {
    let a: D3DDDI_DESTROYPAGINGQUEUE = args(at)?;
    let queue = |h: u32| {
        let hs = lock(&p.handles);
        hs.paging.get(&h)?;
        hs.owner
            .get(&h)
            .and_then(|d| hs.devices.get(d))
            .map(|d| d.sim)
    };
    crate::kmt::paging_queue::dxgk_destroy_paging_queue_internal(&p.machine, a.hPagingQueue, queue)
        .map_err(nt)?;
    let q = lock(&p.handles).paging.remove(&a.hPagingQueue);
    p.forget(a.hPagingQueue);
    if let Some(q) = q {
        p.forget(q.fence);
    }
    Ok(())
}

/// `D3DKMTCreateContextVirtual`: the structure as the DLL wrote it to the thunk's kernel entry
/// ([`crate::kmt::context_virtual`], 24H2's checks and write-back), then `hContext` back.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreatecontextvirtual>
fn create_context_virtual(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::context_virtual::{
        dxgk_create_context_virtual_impl, D3DKMT_CREATECONTEXTVIRTUAL,
    };
    let mut a: D3DKMT_CREATECONTEXTVIRTUAL = args(at)?;
    probe_out::<D3DKMT_CREATECONTEXTVIRTUAL>(at)?;
    dxgk_create_context_virtual_impl(
        &p.machine,
        &mut a,
        |h| p.device(h).ok().map(|d| d.sim),
        &GuestMemory,
    )
    .map_err(nt)?;
    p.record(a.hContext, a.hDevice);
    put(
        at,
        offset_of!(D3DKMT_CREATECONTEXTVIRTUAL, hContext),
        &a.hContext,
    )
}

/// `D3DKMTDestroyContext`.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroycontext>
fn destroy_context(p: &UserProcess, at: u64) -> Status {
    let a: D3DKMT_DESTROYCONTEXT = args(at)?;
    let owner = |h| p.owner(h).ok().map(|d| d.sim);
    crate::kmt::context_virtual::dxgk_destroy_context_impl(&p.machine, a.hContext, owner)
        .map_err(nt)?;
    p.forget(a.hContext);
    Ok(())
}

/// `D3DKMTCreateHwQueue`: the structure as the DLL wrote it to the thunk's kernel entry
/// ([`crate::kmt::hw_queue`], 24H2's checks and write-back), then the structure back.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreatehwqueue>
fn create_hw_queue(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::hw_queue::{dxgk_create_hw_queue_internal, D3DKMT_CREATEHWQUEUE};
    let mut a: D3DKMT_CREATEHWQUEUE = args(at)?;
    probe_out::<D3DKMT_CREATEHWQUEUE>(at)?;
    let owner = |h| p.owner(h).ok().map(|d| d.sim);
    let q = dxgk_create_hw_queue_internal(&p.machine, &mut a, owner, &GuestMemory).map_err(nt)?;
    let device = p.owner(a.hHwContext)?.sim.device;
    p.record(q.handle, device);
    if let Some((f, _)) = &q.progress {
        p.record(*f, device);
    }
    guest::write(at, &a).map_err(bad)
}

/// `D3DKMTDestroyHwQueue` ([`crate::kmt::hw_queue::dxgk_destroy_hw_queue_internal`]).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroyhwqueue>
fn destroy_hw_queue(p: &UserProcess, at: u64) -> Status {
    let a: D3DKMT_DESTROYHWQUEUE = args(at)?;
    let owner = |h| p.owner(h).ok().map(|d| d.sim);
    crate::kmt::hw_queue::dxgk_destroy_hw_queue_internal(&p.machine, a.hHwQueue, owner)
        .map_err(nt)?;
    p.forget(a.hHwQueue);
    Ok(())
}

/// `D3DKMTSubmitCommandToHwQueue` (the kernel-mode path): the structure to the thunk's kernel
/// entry ([`crate::kmt::hw_queue`]).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtsubmitcommandtohwqueue>
fn submit_command_to_hw_queue(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::hw_queue::{
        dxgk_submit_command_to_hw_queue_internal, D3DKMT_SUBMITCOMMANDTOHWQUEUE,
    };
    let a: D3DKMT_SUBMITCOMMANDTOHWQUEUE = args(at)?;
    let owner = |h| p.owner(h).ok().map(|d| d.sim);
    dxgk_submit_command_to_hw_queue_internal(&p.machine, &a, owner, &GuestMemory).map_err(nt)
}

/// `D3DKMTSubmitCommand`: the structure as the DLL wrote it to the thunk's kernel entry
/// ([`crate::kmt::submit_command`]).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtsubmitcommand>
fn submit_command(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::submit_command::{dxgk_submit_command_internal, D3DKMT_SUBMITCOMMAND};
    let a: D3DKMT_SUBMITCOMMAND = args(at)?;
    let owner = |h| p.owner(h).ok().map(|d| d.sim);
    dxgk_submit_command_internal(&p.machine, &a, owner).map_err(nt)
}

// ---------------------------------------------------------------------------------------------
// Allocations.

/// `D3DKMTCreateAllocation2`: the structure as the DLL wrote it to the thunk's kernel entry
/// ([`crate::kmt::allocation::dxgk_create_allocation_internal`], 24H2's checks; it reads the
/// list and the private data from and writes each `hAllocation` to the DLL's memory), then
/// back the fields 24H2 writes once `DXGDEVICE::CreateAllocation` ran.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreateallocation2>
fn create_allocation2(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::allocation::{
        dxgk_create_allocation_internal, CREATE_WRITTEN_BACK, D3DKMT_CREATEALLOCATION,
    };
    let mut a: D3DKMT_CREATEALLOCATION = args(at)?;
    let h_device = a.hDevice;
    let write_back = |a: &D3DKMT_CREATEALLOCATION| {
        for r in CREATE_WRITTEN_BACK {
            let out = a.as_bytes().get(r.clone()).unwrap_or_default();
            guest::write_bytes(at.wrapping_add(r.start as u64), out)
                .map_err(|b| rvgpu_umd::kmt::NtStatus(bad(b) as i32))?;
        }
        Ok(())
    };
    let device = |h| p.device(h).ok().map(|d| d.sim);
    let made =
        dxgk_create_allocation_internal(&p.machine, &mut a, device, &GuestMemory, write_back)
            .map_err(nt)?;
    for m in made {
        p.record(m.handle, h_device);
    }
    Ok(())
}

/// `D3DKMTDestroyAllocation2`: the structure to the thunk's kernel entry
/// ([`crate::kmt::allocation::dxgk_destroy_allocation2`]), its list read from the DLL's
/// memory; a live `Lock2` view ends with the allocation.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroyallocation2>
fn destroy_allocation2(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::allocation::{dxgk_destroy_allocation2, D3DKMT_DESTROYALLOCATION2};
    let a: D3DKMT_DESTROYALLOCATION2 = args(at)?;
    let device = |h| p.device(h).ok().map(|d| d.sim);
    let list = |at: u64, n: u32| {
        array::<u32>(at, n, MAX_ALLOCATIONS).map_err(|s| rvgpu_umd::kmt::NtStatus(s as i32))
    };
    let gone = dxgk_destroy_allocation2(&p.machine, &a, device, list, |h| allocation_device(p, h))
        .map_err(nt)?;
    for h in gone {
        lock(&p.handles).locks.remove(&h);
        p.forget(h);
    }
    Ok(())
}

/// The device of allocation `h` of this process (`None`: not an allocation of it).
fn allocation_device(p: &UserProcess, h: u32) -> Option<u32> {
    let d = p.owner(h).ok()?;
    crate::kmt::gpu_va::allocation_device(&p.machine, &d.sim, h)
}

/// `D3DKMTLock2`: the structure to the thunk's kernel entry ([`crate::kmt::lock`]), then
/// `pData` back. A view through a CPU cache the GPU does not snoop (AL-06) has no address in
/// the emulated process: STATUS_NOT_SUPPORTED, the lock undone (the UMD's rings and command
/// buffers are never cached).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtlock2>
fn lock2(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::lock::{dxgk_lock2, dxgk_unlock2};
    use rvgpu_ddi::d3dkmt::{D3DKMT_LOCK2, D3DKMT_UNLOCK2};
    let mut a: D3DKMT_LOCK2 = args(at)?;
    probe_out::<D3DKMT_LOCK2>(at)?;
    let device = |h| p.device(h).ok().map(|d| d.sim);
    let mem = dxgk_lock2(&p.machine, &mut a, device, |h| allocation_device(p, h)).map_err(nt)?;
    if mem.cache().is_some() {
        let u = D3DKMT_UNLOCK2 {
            hDevice: a.hDevice,
            hAllocation: a.hAllocation,
        };
        let _ = dxgk_unlock2(&p.machine, &u, device, |h| allocation_device(p, h));
        return Err(STATUS_NOT_SUPPORTED);
    }
    {
        let mut hs = lock(&p.handles);
        let e = hs.locks.entry(a.hAllocation).or_insert((mem, 0));
        e.1 = e.1.saturating_add(1);
    }
    put(at, offset_of!(D3DKMT_LOCK2, pData), &a.pData)
}

/// `D3DKMTUnlock2`: the structure to the thunk's kernel entry ([`crate::kmt::lock`]).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtunlock2>
fn unlock2(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::lock::dxgk_unlock2;
    use rvgpu_ddi::d3dkmt::D3DKMT_UNLOCK2;
    let a: D3DKMT_UNLOCK2 = args(at)?;
    let device = |h| p.device(h).ok().map(|d| d.sim);
    dxgk_unlock2(&p.machine, &a, device, |h| allocation_device(p, h)).map_err(nt)?;
    let mut hs = lock(&p.handles);
    if let Some(e) = hs.locks.get_mut(&a.hAllocation) {
        e.1 = e.1.saturating_sub(1);
        if e.1 == 0 {
            hs.locks.remove(&a.hAllocation);
        }
    }
    Ok(())
}

/// `D3DKMTMakeResident` on a paging queue of this process: the structure as the DLL wrote it
/// to the thunk's kernel entry ([`crate::kmt::paging_queue`], 24H2's checks in 24H2's
/// order), its list read from the DLL's memory. `PagingFenceValue` comes back on success and
/// `NumBytesToTrim` whatever VidMm answered; while the paging fence is below the value the
/// answer is STATUS_PENDING, as 24H2 passes VidMm's answer through
/// (`K:DxgkMakeResidentInternal` @0x1402A7570).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtmakeresident>
fn make_resident(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::paging_queue::{dxgk_make_resident_internal, D3DDDI_MAKERESIDENT};
    let mut a: D3DDDI_MAKERESIDENT = args(at)?;
    probe_out::<D3DDDI_MAKERESIDENT>(at)?;
    let queue = |h: u32| {
        let hs = lock(&p.handles);
        hs.paging.get(&h)?;
        hs.owner
            .get(&h)
            .and_then(|d| hs.devices.get(d))
            .map(|d| d.sim)
    };
    let list = |at: u64, n: u32| {
        array::<u32>(at, n, MAX_ALLOCATIONS).map_err(|s| rvgpu_umd::kmt::NtStatus(s as i32))
    };
    let allocation = |h: u32| allocation_device(p, h);
    let r = dxgk_make_resident_internal(&p.machine, &mut a, queue, list, allocation);
    let trim = offset_of!(D3DDDI_MAKERESIDENT, NumBytesToTrim);
    put(at, trim, &a.NumBytesToTrim)?;
    r.map_err(nt)?;
    let fence = offset_of!(D3DDDI_MAKERESIDENT, PagingFenceValue);
    put(at, fence, &a.PagingFenceValue)?;
    let d = p.owner(a.hPagingQueue)?;
    if p.kmt(d)
        .paging_fence_reached(a.hPagingQueue, a.PagingFenceValue)
    {
        Ok(())
    } else {
        Err(rvgpu_ddi::ntstatus::STATUS_PENDING as u32)
    }
}

/// `D3DKMTInvalidateCache`: the structure to the thunk's kernel entry
/// ([`crate::kmt::invalidate_cache`]).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtinvalidatecache>
fn invalidate_cache(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::invalidate_cache::dxgk_invalidate_cache;
    use rvgpu_ddi::d3dkmt::D3DKMT_INVALIDATECACHE;
    let a: D3DKMT_INVALIDATECACHE = args(at)?;
    let device = |h| p.device(h).ok().map(|d| d.sim);
    dxgk_invalidate_cache(&p.machine, &a, device, |h| allocation_device(p, h)).map_err(nt)
}

/// `D3DKMTEvict`: the structure to the thunk's kernel entry ([`crate::kmt::evict`]), its
/// list read from the DLL's memory a group at a time, then `NumBytesToTrim` back.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtevict>
fn evict(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::evict::{dxgk_evict_internal, EVICT_GROUP};
    use rvgpu_ddi::d3dkmt::D3DKMT_EVICT;
    let mut a: D3DKMT_EVICT = args(at)?;
    probe_out::<D3DKMT_EVICT>(at)?;
    let device = |h| p.device(h).ok().map(|d| d.sim);
    let list = |at: u64, n: u32| {
        array::<u32>(at, n, EVICT_GROUP).map_err(|s| rvgpu_umd::kmt::NtStatus(s as i32))
    };
    dxgk_evict_internal(&p.machine, &mut a, device, list, |h| {
        allocation_device(p, h)
    })
    .map_err(nt)?;
    put(
        at,
        offset_of!(D3DKMT_EVICT, NumBytesToTrim),
        &a.NumBytesToTrim,
    )
}
