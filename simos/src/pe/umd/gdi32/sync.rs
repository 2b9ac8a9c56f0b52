//! The sync-object thunks: `D3DKMTDestroySynchronizationObject`,
//! `D3DKMTSignalSynchronizationObjectFromCpu`, `D3DKMTWaitForSynchronizationObjectFromCpu`
//! (and the wait groups behind its event form) and `D3DKMTCreateNativeFence`.

use super::*;

/// A sync object of this process: a native fence (by its D3DKMT handle) or a monitored fence
/// (progress and paging fences are monitored fences).
pub(super) enum Sync {
    Native(crate::NativeFence),
    Monitored(crate::sync::fence::MonitoredFence),
}

impl UserProcess {
    /// Object `h`, which must belong to device `device` of this process.
    fn sync_object(&self, device: u32, h: u32) -> Result<(Device, Sync), u32> {
        let d = self.owner(h)?;
        if d.sim.device != device {
            return Err(STATUS_INVALID_PARAMETER);
        }
        if let Some(f) = self
            .machine
            .native_fence_by_kmt(d.sim.adapter, h)
            .filter(|f| f.process() == d.sim.pid)
        {
            return Ok((d, Sync::Native(f)));
        }
        let a = self
            .machine
            .adapter_shared(d.sim.adapter)
            .map_err(|e| sim_status(&e))?;
        crate::ums::fence_of(a, d.sim.device, h)
            .map(|f| (d, Sync::Monitored(f)))
            .ok_or(STATUS_INVALID_PARAMETER)
    }
}

/// `D3DKMTDestroySynchronizationObject` of a native or monitored fence this process created.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroysynchronizationobject>
pub(super) fn destroy_synchronization_object(p: &UserProcess, at: u64) -> Status {
    let a: OneHandle = args(at)?;
    let d = p.owner(a.handle)?;
    let (_, s) = p.sync_object(d.sim.device, a.handle)?;
    let k = p.kmt(d);
    match s {
        Sync::Native(_) => k.destroy_native_fence(a.handle).map_err(nt)?,
        Sync::Monitored(_) => k.destroy_monitored_fence(a.handle).map_err(nt)?,
    }
    p.forget(a.handle);
    Ok(())
}

/// `D3DKMTSignalSynchronizationObjectFromCpu`: each object to its value (native fences through
/// the KMD's `DxgkDdiUpdateCurrentValuesFromCpu`, NF-17). Every handle is checked before any
/// is signalled.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtsignalsynchronizationobjectfromcpu>
pub(super) fn signal_from_cpu(p: &UserProcess, at: u64) -> Status {
    let a: SignalFromCpu = args(at)?;
    let d = p.device(a.h_device)?;
    if a.object_count == 0 {
        return Err(STATUS_INVALID_PARAMETER);
    }
    let handles: Vec<u32> = array(a.object_handle_array, a.object_count, MAX_SYNC_OBJECTS)?;
    let values: Vec<u64> = array(a.fence_value_array, a.object_count, MAX_SYNC_OBJECTS)?;
    let objects = handles
        .iter()
        .map(|&h| p.sync_object(a.h_device, h).map(|(_, s)| (h, s)))
        .collect::<Result<Vec<_>, u32>>()?;
    for ((h, s), v) in objects.into_iter().zip(values) {
        match s {
            Sync::Native(f) => p
                .machine
                .signal_native_fence_from_cpu(&f, v)
                .map_err(|e| sim_status(&e))?,
            Sync::Monitored(_) => p.kmt(d).signal_fence_from_cpu(h, v).map_err(nt)?,
        }
    }
    Ok(())
}

/// `D3DDDI_WAITFORSYNCHRONIZATIONOBJECTFROMCPU_FLAGS::WaitAny`.
const WAIT_ANY: u32 = 1 << 0;

/// One CPU wait the OS registered: released when all (or, `any`, one) of its fence waits are.
pub(crate) struct WaitGroup {
    events: Vec<SimEvent>,
    any: bool,
}

impl WaitGroup {
    /// Whether the OS released the wait already (its condition holds, or a fence went away):
    /// it has signalled its event.
    pub(crate) fn released(&self) -> bool {
        let done: Vec<Option<WaitOutcome>> = self.events.iter().map(SimEvent::outcome).collect();
        let satisfied = |o: &Option<WaitOutcome>| *o == Some(WaitOutcome::Satisfied);
        done.contains(&Some(WaitOutcome::Abandoned))
            || if self.any {
                done.iter().any(satisfied)
            } else {
                done.iter().all(satisfied)
            }
    }
}

/// Waits up to `timeout` for `g`: `Some(true)` when the condition holds, `Some(false)` when a
/// fence went away (the wait is abandoned), `None` when the time passed.
pub(crate) fn wait_group(m: &crate::Machine, g: &WaitGroup, timeout: Duration) -> Option<bool> {
    let deadline = Instant::now() + timeout;
    loop {
        let done: Vec<Option<WaitOutcome>> = g.events.iter().map(SimEvent::outcome).collect();
        if done.contains(&Some(WaitOutcome::Abandoned)) {
            return Some(false);
        }
        let satisfied = |o: &Option<WaitOutcome>| *o == Some(WaitOutcome::Satisfied);
        let ok = if g.any {
            done.iter().any(satisfied)
        } else {
            done.iter().all(satisfied)
        };
        if ok {
            return Some(true);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        // Drive (step mode) or sleep (threaded) on the first one still pending, a slice at a
        // time so that a WaitAny sees another one released.
        let pending = g.events.iter().find(|e| e.outcome().is_none())?;
        match m.drive_wait(pending, left.min(Duration::from_millis(20))) {
            Ok(_) => {}
            Err(_) => return Some(false),
        }
    }
}

/// `D3DKMTWaitForSynchronizationObjectFromCpu`: registers a CPU wait on every object (MF-04:
/// the OS lowers MonitoredValue, the KMD's interrupt releases it). With `hAsyncEvent` the call
/// returns at once and the event is signalled when the condition holds (the event must be one
/// of this process's, else STATUS_INVALID_PARAMETER); without, the call blocks until it holds
/// (STATUS_IO_TIMEOUT when the simulated OS's wait limit passes first, as its own thunk).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_waitforsynchronizationobjectfromcpu>
pub(super) fn wait_from_cpu(p: &UserProcess, at: u64) -> Status {
    let a: WaitFromCpu = args(at)?;
    p.device(a.h_device)?;
    if a.object_count == 0 {
        return Err(STATUS_INVALID_PARAMETER);
    }
    let handles: Vec<u32> = array(a.object_handle_array, a.object_count, MAX_SYNC_OBJECTS)?;
    let values: Vec<u64> = array(a.fence_value_array, a.object_count, MAX_SYNC_OBJECTS)?;
    let event = match a.h_async_event {
        0 => None,
        h => Some(p.win32.event(h).ok_or(STATUS_INVALID_PARAMETER)?),
    };
    let objects = handles
        .iter()
        .map(|&h| p.sync_object(a.h_device, h).map(|(_, s)| s))
        .collect::<Result<Vec<_>, u32>>()?;
    let mut events = Vec::with_capacity(objects.len());
    for (s, v) in objects.iter().zip(values) {
        let ev = match s {
            Sync::Native(f) => p.machine.wait_native_fence_event(f, v),
            Sync::Monitored(f) => p.machine.wait_monitored_fence_event(f, v),
        }
        .map_err(|e| sim_status(&e))?;
        events.push(ev);
    }
    let group = WaitGroup {
        events,
        any: a.flags & WAIT_ANY != 0,
    };
    match event {
        Some(ev) => {
            ev.add_fence_waits(group);
            Ok(())
        }
        None => match wait_group(&p.machine, &group, p.machine.os_config().wait_timeout) {
            Some(true) => Ok(()),
            Some(false) => Err(rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED as u32),
            None => Err(STATUS_IO_TIMEOUT),
        },
    }
}

/// The five offsets [`put_fence`] writes, in argument structure `$t`: a create and an open
/// of a native fence name their output fields alike.
macro_rules! fence_offsets {
    ($t:ty) => {
        [
            offset_of!($t, h_sync_object),
            offset_of!($t, private_driver_data),
            offset_of!($t, current_value_cpu_va),
            offset_of!($t, current_value_gpu_va),
            offset_of!($t, monitored_value_gpu_va),
        ]
    };
}

/// `D3DKMTCreateNativeFence`: the structure as the DLL wrote it to the thunk's kernel entry
/// ([`crate::kmt::native_fence`], 24H2's checks and write-back), then back exactly the bytes
/// 24H2 writes.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_createnativefence>
pub(super) fn create_native_fence(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::native_fence::{
        nt_dxgk_create_native_fence_internal, D3dkmtCreateNativeFence, WRITTEN_BACK,
    };
    let mut a: D3dkmtCreateNativeFence = args(at)?;
    probe_out::<D3dkmtCreateNativeFence>(at)?;
    nt_dxgk_create_native_fence_internal(&p.machine, &mut a, |h| p.device(h).ok().map(|d| d.sim))
        .map_err(nt)?;
    p.record(a.h_sync_object, a.h_device);
    let out = a.as_bytes().get(WRITTEN_BACK).unwrap_or_default();
    guest::write_bytes(at.wrapping_add(WRITTEN_BACK.start as u64), out).map_err(bad)
}

/// Writes what a create or an open of native fence `h` (`f`) returns to the caller's
/// structure at `at`: the handle, the KMD's private data (64 bytes), the current value's CPU
/// and GPU addresses and the monitored value's GPU address, at those five offsets.
fn put_fence(
    at: u64,
    offsets: [usize; 5],
    h: rvgpu_umd::kmt::KmtHandle,
    f: &crate::NativeFence,
) -> Status {
    let [handle, private, cpu, gpu, monitored] = offsets;
    let pdd = f.pdd();
    let mut pdd_bytes = [0u8; 64];
    let src = pdd.as_bytes();
    let n = src.len().min(64);
    pdd_bytes[..n].copy_from_slice(&src[..n]);
    put(at, handle, &h)?;
    put(at, private, &pdd_bytes)?;
    put(at, cpu, &(f.current_value_kernel_va() as u64))?;
    put(at, gpu, &f.current_value_va())?;
    put(at, monitored, &f.monitored_value_va())
}

/// Most objects one `D3DKMTShareObjects` shares here: the DLL shares one native fence at a
/// time (the thunk documents no limit; the bound keeps the copy small).
const MAX_SHARED_OBJECTS: u32 = 1;

/// `D3DKMTShareObjects(cObjects, hObjects, pObjectAttributes, dwDesiredAccess,
/// phSharedNtHandle)` of one shareable native fence of this process: a new NT handle in the
/// owning process's table, written to `phSharedNtHandle`. Object attributes (a name, a
/// security descriptor) are not modelled: a non-null pointer is refused.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtshareobjects>
pub(super) fn share_objects(p: &UserProcess, w: &[u64; 12]) -> Status {
    let count = w[0] as u32;
    if count == 0 || w[2] != 0 {
        return Err(STATUS_INVALID_PARAMETER);
    }
    let handles: Vec<u32> = array(w[1], count, MAX_SHARED_OBJECTS)?;
    if !guest::writable(w[4], 8) {
        return Err(if w[4] == 0 {
            STATUS_INVALID_PARAMETER
        } else {
            STATUS_ACCESS_VIOLATION
        });
    }
    let h = *handles.first().ok_or(STATUS_INVALID_PARAMETER)?;
    let d = p.owner(h)?;
    let (_, s) = p.sync_object(d.sim.device, h)?;
    // Only native fences are shared through this bridge (the DLL's one shareable object).
    if !matches!(s, Sync::Native(_)) {
        return Err(STATUS_INVALID_PARAMETER);
    }
    let nt_handle = p.kmt(d).share_native_fence(h).map_err(nt)?;
    put(w[4], 0, &nt_handle)
}

/// `D3DKMTOpenNativeFenceFromNtHandle` on one of this process's devices: `hNtHandle` must be
/// in the table of the process behind that device; the fence's new D3DKMT handle, this
/// process's mapping of it and the KMD's private data are written back.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtopennativefencefromnthandle>
pub(super) fn open_native_fence_from_nt_handle(p: &UserProcess, at: u64) -> Status {
    let a: OpenNativeFenceFromNtHandle = args(at)?;
    probe_out::<OpenNativeFenceFromNtHandle>(at)?;
    let d = p.device(a.h_device)?;
    let (h, f) = p.kmt(d).open_native_fence_raw(a.h_nt_handle).map_err(nt)?;
    p.record(h, d.sim.device);
    put_fence(at, fence_offsets!(OpenNativeFenceFromNtHandle), h, &f)
}
