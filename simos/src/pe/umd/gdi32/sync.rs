//! The sync-object thunks: `D3DKMTDestroySynchronizationObject`,
//! `D3DKMTSignalSynchronizationObjectFromCpu`, `D3DKMTWaitForSynchronizationObjectFromCpu`
//! and `D3DKMTCreateNativeFence`.

use zerocopy::IntoBytes;

use super::common::*;
use crate::base::lock::lock;
use crate::pe::umd::guest;
use crate::pe::umd::process::UserProcess;
use crate::pe::umd::wait_group::{wait_group, WaitGroup};
use rvgpu_ddi::d3dkmt::D3DKMT_DESTROYSYNCHRONIZATIONOBJECT;

/// `D3DKMTDestroySynchronizationObject` of a native or monitored fence this process created or opened.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroysynchronizationobject>
/// The structure as the DLL wrote it to the thunk's kernel entry ([`crate::kmt::destroy_sync`]).
pub(super) fn destroy_synchronization_object(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::destroy_sync::dxgk_destroy_synchronization_object_impl;
    let a: D3DKMT_DESTROYSYNCHRONIZATIONOBJECT = args(at)?;
    dxgk_destroy_synchronization_object_impl(&p.machine, a.hSyncObject, p).map_err(nt)?;
    p.forget(a.hSyncObject);
    Ok(())
}

/// The DLL's process as the sync thunks' kernel entries see it: its devices and the sync
/// objects of each, with the flags each was made or opened with (a monitored fence's on the
/// OS's object, a native fence instance's as its create or open gave them).
impl crate::kmt::sync_from_cpu::CallerProcess for UserProcess {
    fn device(&self, h: u32) -> Option<crate::ums::UmsProcess> {
        UserProcess::device(self, h).ok().map(|d| d.sim)
    }
    fn object(&self, h: u32) -> Option<crate::kmt::sync_from_cpu::CallerObject> {
        let d = self.owner(h).ok()?;
        let object = crate::kmt::sync_from_cpu::sync_object_of(&self.machine, &d.sim, h)?;
        let flags = object
            .monitored_flags()
            .unwrap_or_else(|| lock(&self.handles).sync_flags.get(&h).copied().unwrap_or(0));
        Some(crate::kmt::sync_from_cpu::CallerObject {
            device: d.sim.device,
            object,
            flags,
        })
    }
}

/// `D3DKMTSignalSynchronizationObjectFromCpu`: the structure as the DLL wrote it to the
/// thunk's kernel entry ([`crate::kmt::sync_from_cpu`], 24H2's checks; native fences through the
/// KMD's `DxgkDdiUpdateCurrentValuesFromCpu`, NF-17).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtsignalsynchronizationobjectfromcpu>
pub(super) fn signal_from_cpu(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::sync_from_cpu::{
        dxgk_signal_synchronization_object_from_cpu, D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU,
    };
    let a: D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU = args(at)?;
    dxgk_signal_synchronization_object_from_cpu(&p.machine, &a, p, &GuestMemory).map_err(nt)
}

/// `D3DKMTWaitForSynchronizationObjectFromCpu`: the structure as the DLL wrote it to the
/// thunk's kernel entry ([`crate::kmt::sync_from_cpu`], 24H2's checks), then a CPU wait on every
/// object (MF-04: the OS lowers MonitoredValue, the KMD's interrupt releases it). With
/// `hAsyncEvent` the call returns at once and the event is signalled when the condition holds;
/// without, the call blocks until it holds (STATUS_IO_TIMEOUT when the simulated OS's wait limit
/// passes first, as its own thunk).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_waitforsynchronizationobjectfromcpu>
pub(super) fn wait_from_cpu(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::sync_from_cpu::{
        dxgk_wait_for_synchronization_object_from_cpu_internal as checks, SyncObject,
        D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU,
    };
    let a: D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU = args(at)?;
    // `ObReferenceObjectByHandle` of an event: a handle this process does not hold.
    let referenced = |h: u64| {
        p.win32.event(h).map(|_| ()).ok_or(rvgpu_umd::kmt::NtStatus(
            rvgpu_ddi::ntstatus::STATUS_INVALID_HANDLE,
        ))
    };
    let w = checks(&p.machine, &a, p, &GuestMemory, &referenced).map_err(nt)?;
    let event = match a.hAsyncEvent {
        0 => None,
        h => Some(p.win32.event(h).ok_or(STATUS_INVALID_PARAMETER)?),
    };
    let mut events = Vec::with_capacity(w.objects.len());
    for (s, v) in &w.objects {
        let ev = match s {
            SyncObject::Native(f) => p.machine.wait_native_fence_event(f, *v),
            SyncObject::Monitored(f) => p.machine.wait_monitored_fence_event(f, *v),
        }
        .map_err(|e| sim_status(&e))?;
        events.push(ev);
    }
    let group = WaitGroup { events, any: w.any };
    match event {
        Some(ev) => {
            ev.add_fence_waits(group);
            Ok(())
        }
        None => {
            // 24H2 waits as long as it takes (`K:WaitForSynchronizationObjectFromCpu`
            // @0x1402AD200); the simulation's limit stands for "hung", so in threaded mode it
            // runs again while any of the fences moved (as `Machine::wait_monitored_fence`).
            let values = || {
                w.objects.iter().fold(0u64, |sum, (s, _)| {
                    sum.wrapping_add(match s {
                        SyncObject::Native(f) => f.current_value(),
                        SyncObject::Monitored(f) => f.value(),
                    })
                })
            };
            let threaded = p.machine.config().mode == crate::Mode::Threaded;
            let mut seen = values();
            loop {
                match wait_group(&p.machine, &group, p.machine.os_config().wait_timeout) {
                    Some(true) => return Ok(()),
                    Some(false) => return Err(rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED as u32),
                    None => {
                        let moved = values();
                        if !threaded || moved == seen {
                            return Err(STATUS_IO_TIMEOUT);
                        }
                        seen = moved;
                    }
                }
            }
        }
    }
}

/// `D3DKMTCreateNativeFence`: the structure as the DLL wrote it to the thunk's kernel entry
/// ([`crate::kmt::native_fence`], 24H2's checks and write-back), then back exactly the bytes
/// 24H2 writes.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_createnativefence>
pub(super) fn create_native_fence(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::native_fence::{
        nt_dxgk_create_native_fence_internal, D3DKMT_CREATENATIVEFENCE, WRITTEN_BACK,
    };
    let mut a: D3DKMT_CREATENATIVEFENCE = args(at)?;
    probe_out::<D3DKMT_CREATENATIVEFENCE>(at)?;
    nt_dxgk_create_native_fence_internal(&p.machine, &mut a, |h| p.device(h).ok().map(|d| d.sim))
        .map_err(nt)?;
    p.record(a.hSyncObject, a.hDevice);
    p.record_sync_flags(a.hSyncObject, a.Info.Flags);
    let out = a.as_bytes().get(WRITTEN_BACK).unwrap_or_default();
    guest::write_bytes(at.wrapping_add(WRITTEN_BACK.start as u64), out).map_err(bad)
}

/// `D3DKMTCreateSynchronizationObject2`: the structure as the caller wrote it to the thunk's
/// kernel entry ([`crate::kmt::sync_object`], 24H2's checks and write-back), then back exactly
/// the bytes 24H2 writes.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreatesynchronizationobject2>
pub(super) fn create_synchronization_object2(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::sync_object::{
        dxgk_create_synchronization_object_impl, D3DKMT_CREATESYNCHRONIZATIONOBJECT2, WRITTEN_BACK,
    };
    let mut a: D3DKMT_CREATESYNCHRONIZATIONOBJECT2 = args(at)?;
    dxgk_create_synchronization_object_impl(&p.machine, &mut a, |h| {
        p.device(h).ok().map(|d| d.sim)
    })
    .map_err(nt)?;
    p.record(a.hSyncObject, a.hDevice);
    for r in WRITTEN_BACK {
        let out = a.as_bytes().get(r.clone()).unwrap_or_default();
        guest::write_bytes(at.wrapping_add(r.start as u64), out).map_err(bad)?;
    }
    Ok(())
}

/// `D3DKMTShareObjects(cObjects, hObjects, pObjectAttributes, dwDesiredAccess,
/// phSharedNtHandle)`: the five arguments as the DLL passed them to the thunk's kernel entry
/// ([`crate::kmt::share`], 24H2's checks; it reads the handles and the attributes from and
/// writes the new NT handle to the DLL's memory).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtshareobjects>
pub(super) fn share_objects(p: &UserProcess, w: &[u64; 12]) -> Status {
    use crate::kmt::share::{dxgk_share_objects_internal, ShareObjects};
    let a = ShareObjects {
        c_objects: w[0] as u32,
        h_objects: w[1],
        p_object_attributes: w[2],
        desired_access: w[3] as u32,
        ph_shared_nt_handle: w[4],
    };
    dxgk_share_objects_internal(&p.machine, &a, p, &GuestMemory)
        .map(|_| ())
        .map_err(nt)
}

/// `D3DKMTOpenNativeFenceFromNtHandle`: the structure as the DLL wrote it to the thunk's
/// kernel entry ([`crate::kmt::native_fence`], 24H2's checks), then back the 176 bytes 24H2
/// copies back.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtopennativefencefromnthandle>
pub(super) fn open_native_fence_from_nt_handle(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::native_fence::{
        nt_dxgk_open_native_fence_from_nt_handle_internal, D3DKMT_OPENNATIVEFENCEFROMNTHANDLE,
    };
    let mut a: D3DKMT_OPENNATIVEFENCEFROMNTHANDLE = args(at)?;
    probe_out::<D3DKMT_OPENNATIVEFENCEFROMNTHANDLE>(at)?;
    nt_dxgk_open_native_fence_from_nt_handle_internal(&p.machine, &mut a, |h| {
        p.device(h).ok().map(|d| d.sim)
    })
    .map_err(nt)?;
    p.record(a.hSyncObject, a.hDevice);
    p.record_sync_flags(a.hSyncObject, a.Flags);
    guest::write_bytes(at, a.as_bytes()).map_err(bad)
}

impl UserProcess {
    /// Native fence instance `h`'s `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS` as created or opened.
    fn record_sync_flags(&self, h: u32, flags: u32) {
        lock(&self.handles).sync_flags.insert(h, flags);
    }
}

/// `D3DKMTSubmitSignalSyncObjectsToHwQueue`: the structure as the caller wrote it to the
/// thunk's kernel entry ([`crate::kmt::hw_queue_sync`]).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtsubmitsignalsyncobjectstohwqueue>
pub(super) fn submit_signal_to_hw_queue(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::hw_queue_sync::{
        dxgk_submit_signal_sync_objects_to_hw_queue_internal as entry,
        D3DKMT_SUBMITSIGNALSYNCOBJECTSTOHWQUEUE,
    };
    let a: D3DKMT_SUBMITSIGNALSYNCOBJECTSTOHWQUEUE = args(at)?;
    let owner = |h| p.owner(h).ok().map(|d| d.sim);
    entry(&p.machine, &a, &owner, p, &GuestMemory).map_err(nt)
}

/// `D3DKMTSubmitWaitForSyncObjectsToHwQueue` ([`crate::kmt::hw_queue_sync`]).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtsubmitwaitforsyncobjectstohwqueue>
pub(super) fn submit_wait_to_hw_queue(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::hw_queue_sync::{
        dxgk_submit_wait_for_sync_objects_to_hw_queue_internal as entry,
        D3DKMT_SUBMITWAITFORSYNCOBJECTSTOHWQUEUE,
    };
    let a: D3DKMT_SUBMITWAITFORSYNCOBJECTSTOHWQUEUE = args(at)?;
    let owner = |h| p.owner(h).ok().map(|d| d.sim);
    entry(&p.machine, &a, &owner, p, &GuestMemory).map_err(nt)
}
