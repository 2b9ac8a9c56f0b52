//! Processes and their D3D device: create, orderly exit (UM-17), kill (UM-18), and the
//! teardown the OS does before an adapter stops.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use rvgpu_ddi::basic::HANDLE;
use rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY;
use rvgpu_ddi::ntstatus::{STATUS_ACCESS_DENIED, STATUS_INVALID_HANDLE};
use rvgpu_ddi::submission::{DXGKARG_CREATEDEVICE, DXGKARG_CREATEDEVICE_0, DXGK_CREATEDEVICEFLAGS};

use super::allocation::free_alloc;
use crate::adapter::bringup;
use crate::adapter::ddi::{self, check_status, not_supported, table};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::os::answers::Teardown;
use crate::sync::fence::WaitOutcome;

use super::context::destroy_context;
use super::disconnect::os_disconnect;
use super::doorbell::destroy_doorbell;
use super::host::UmsHost;
use super::hwqueue::{destroy_hw_queue, destroy_hw_queue_with_doorbell};
use super::kmd::{check_kmd_handle, destroy_kmd};
use super::locks::{dev_guard, device_lock, exclusive};
use super::power::{power_up_if_needed, resume_power_suspended, suspend_context};
use crate::state::ums::events::UmsEvent;
use crate::state::ums::{
    kernel_handle, new_handle, DeviceObj, Power, Suspended, UmsProcess, NEXT_PROCESS,
};

/// Destroys everything of `device` in order, then the device; `wait`: normal exit (UM-17),
/// else abnormal (UM-18: in error, contexts suspended first, no waits).
pub(crate) fn teardown(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    wait: bool,
) -> Result<(), SimError> {
    if a.os.windows.reading().teardown == Teardown::AllocationsFirst {
        return teardown_allocations_first(m, a, device, true);
    }
    let dl = device_lock(a, device)?;
    let mut wait = wait;
    if !wait {
        charge(a, &dl, device)?;
    }
    let queues = lock(&a.ums).queues_of_device(device);
    for q in queues {
        let doorbell = lock(&a.ums).queues.get(&q).and_then(|q| q.doorbell);
        if let Some(d) = doorbell {
            let _g = dev_guard(a, &dl);
            os_disconnect(a, d, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY)?;
        }
        if wait && !wait_queue_idle(m, a, q)? {
            // The process's own values (its last-queued value, the progress its commands
            // wrote) never met: they are untrusted, so the exit goes on as a kill does, the
            // process charged (UM-10, UM-18) and no other process waiting on it.
            charge(a, &dl, device)?;
            wait = false;
        }
        let _g = dev_guard(a, &dl);
        if let Some(d) = doorbell {
            destroy_doorbell(a, d)?;
        }
        destroy_hw_queue(m, a, q)?;
    }
    drain_allocations(m, a, &dl, device)?;
    destroy_device_rest(m, a, &dl, device)
}

/// 24H2's order ([`Teardown::AllocationsFirst`]), for an exit and a kill alike: the device
/// flushed into error (its contexts suspended through the driver, which takes their user-mode
/// queues off the runlist, then its registered sync objects signalled), then its allocations
/// destroyed, then each queue with its doorbell, then the rest.
/// `death`: the process dies (`DXGPROCESS::Destroy`); without it the adapter stops under its
/// devices, which are destroyed without the flush.
fn teardown_allocations_first(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    death: bool,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    let queues = lock(&a.ums).queues_of_device(device);
    // `K:DXGPROCESS::Destroy` @0x14034D4E0 flushes each live device with reason 4 before
    // destroying it; `K:DXGDEVICE::FlushScheduler` @0x140376424 hands VidSch flush 13, which
    // `M:VidSchFlushDevice` @0x1400B5320 turns into `VidSchMarkDeviceAsError(14)`
    // @0x14001F860: a device not yet in error has its hardware contexts suspended
    // (`DxgkDdiSuspendContext`), then `M:VidSchiSignalRegisteredSyncObjects` @0x14003B848
    // sets what it registered to always-signalled. A device already in error (a TDR) was
    // signalled then and is not suspended again. The flush's wait then finds nothing
    // pending: every fence the device's tracked work would signal is signalled.
    let in_error = lock(&a.ums).devices.get(&device).map(|d| d.in_error());
    if let (true, Some(false)) = (death, in_error) {
        charge(a, &dl, device)?;
        super::loss::signal_registered_sync_objects(a, device)?;
    }
    // `DrainResources`, `DrainAllocations`: unmapped, destroyed in the driver, given back.
    drain_allocations(m, a, &dl, device)?;
    // `DXGDEVICE::DestroyDevice`@0x1402CE23C, each queue through
    // `DXGHWQUEUE::DestroyCoreState`.
    destroy_queues_aborted(m, a, &dl, queues)?;
    destroy_device_rest(m, a, &dl, device)
}

/// `D3DKMTDestroyDevice` of `device` (`K:DxgkDestroyDeviceImpl` @0x14039D208), under 24H2's
/// order ([`Teardown::AllocationsFirst`]): `DXGDEVICE::DestroyAllContexts` @0x14039DC5C (each
/// context with the hardware queues made on it, a connected doorbell disconnected and
/// destroyed with status ABORT), `DXGDEVICE::DestroyAllPagingQueues` @0x14039D880,
/// `DXGDEVICE::DestroyAllDeviceSyncObjects` @0x14039E038, then the device itself
/// (`ADAPTER_RENDER::DestroyDeviceNoLocks` @0x1402ABDE8: its allocations, `DxgkDdiDestroyDevice`,
/// the process's adapter state with its last device). No flush: a device destroyed by its
/// process is not put in error, nor its registered sync objects signalled (what
/// `DXGPROCESS::Destroy` does at exit). The pages' reading destroys it as a normal exit does.
pub(crate) fn destroy_device(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
) -> Result<(), SimError> {
    if a.os.windows.reading().teardown != Teardown::AllocationsFirst {
        return teardown(m, a, device, true);
    }
    let dl = device_lock(a, device)?;
    let queues = lock(&a.ums).queues_of_device(device);
    destroy_queues_aborted(m, a, &dl, queues)?;
    destroy_contexts(m, a, &dl, device)?;
    m.gpu_va_teardown(a, device, None)?;
    close_fences_if_last(m, a, device)?;
    drain_allocations(m, a, &dl, device)?;
    destroy_device_rest(m, a, &dl, device)
}

/// The device's allocations taken out of the process and reaped (unmapped, destroyed in the
/// driver, their memory given back).
fn drain_allocations(
    m: &dyn UmsHost,
    a: &AdapterShared,
    dl: &Mutex<()>,
    device: KmtHandle,
) -> Result<(), SimError> {
    let _g = dev_guard(a, dl);
    {
        let mut os = lock(&a.ums);
        for h in os.allocations_of_device(device) {
            free_alloc(&mut os, h);
        }
    }
    drop(_g);
    // Unmapped and given back before the contexts and the device go (VidMm's order); the
    // queues' log buffers leave the paging process too.
    m.reap_allocations(a)?;
    super::hwqueue::reap_progress_fences(m, a)?;
    m.reap_system_pages(a)
}

/// What follows the queues and allocations in either order: the device's VA ranges, contexts,
/// fences, `DxgkDdiDestroyDevice`, its process's GPU VA space.
fn destroy_device_rest(
    m: &dyn UmsHost,
    a: &AdapterShared,
    dl: &Mutex<()>,
    device: KmtHandle,
) -> Result<(), SimError> {
    // Its paging queues (with their fences), and the process's VA ranges when its VA space
    // goes with this device: the allocations are gone, so they map nothing now.
    let space = {
        let os = lock(&a.ums);
        os.devices
            .get(&device)
            .map(|d| d.process)
            .filter(|pid| last_device(&os, device, *pid) && !os.held.contains(pid))
    };
    m.gpu_va_teardown(a, device, space)?;
    // Under the device guard, dropped before the fences: a native fence's pages leave the
    // process by paging, which takes the shared power lock itself (a second shared
    // acquisition behind a waiting writer would deadlock, as for the VA space below).
    destroy_contexts(m, a, dl, device)?;
    // The process's own objects go with its last device.
    close_fences_if_last(m, a, device)?;
    let _g = dev_guard(a, dl);
    let kmd = lock(&a.ums).device(device)?.kmd;
    destroy_kmd!(a, table(a)?, DxgkDdiDestroyDevice, "device", kmd)?;
    let pid = {
        let mut os = lock(&a.ums);
        let pid = os.devices.remove(&device).map(|d| d.process);
        os.events.push(UmsEvent::DestroyDevice { device });
        pid.filter(|pid| !os.devices.values().any(|d| d.process == *pid) && !os.held.contains(pid))
    };
    // The process's last device is gone and nothing holds the process open: so is its GPU VA
    // space, and VidSch's process with its TDR history. Not under the device guard: unmapping
    // what is left is paging work, which takes the shared power lock itself (a second shared
    // acquisition behind a waiting writer, the worker's exclusive one, would deadlock).
    drop(_g);
    process_gone(m, a, pid)
}

/// Each of `queues` with its doorbell, as `K:DXGHWQUEUE::DestroyCoreState` destroys it
/// ([`destroy_hw_queue_with_doorbell`]), each under the device guard.
fn destroy_queues_aborted(
    m: &dyn UmsHost,
    a: &AdapterShared,
    dl: &Mutex<()>,
    queues: Vec<KmtHandle>,
) -> Result<(), SimError> {
    for q in queues {
        let _g = dev_guard(a, dl);
        destroy_hw_queue_with_doorbell(m, a, q)?;
    }
    Ok(())
}

/// Every context of `device` destroyed, under the device guard.
fn destroy_contexts(
    m: &dyn UmsHost,
    a: &AdapterShared,
    dl: &Mutex<()>,
    device: KmtHandle,
) -> Result<(), SimError> {
    let _g = dev_guard(a, dl);
    let ctxs = lock(&a.ums).contexts_of_device(device);
    for c in ctxs {
        destroy_context(m, a, c)?;
    }
    Ok(())
}

/// The process's fences closed ([`close_process_fences`]) when `device` is its last.
fn close_fences_if_last(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
) -> Result<(), SimError> {
    let last = {
        let os = lock(&a.ums);
        os.devices
            .get(&device)
            .is_some_and(|d| last_device(&os, device, d.process))
    };
    if last {
        close_process_fences(m, a, device)?;
    }
    Ok(())
}

/// Whether `device` is `pid`'s only device on the adapter.
fn last_device(os: &crate::state::ums::UmsOs, device: KmtHandle, pid: ProcessId) -> bool {
    !os.devices
        .iter()
        .any(|(h, d)| *h != device && d.process == pid)
}

/// `pid`'s state on the adapter goes (when `Some`): its GPU VA space (`DxgkDdiDestroyProcess`),
/// its fence bookkeeping, VidSch's process with its TDR history, its handle table; then the
/// fence pages only its address space still reached.
fn process_gone(
    m: &dyn UmsHost,
    a: &AdapterShared,
    pid: Option<ProcessId>,
) -> Result<(), SimError> {
    if let Some(pid) = pid {
        lock(&a.ums).umd_nodes.remove(&pid);
        let gone = m.vidmm_destroy_process(a, pid);
        m.forget_fence_process(a, pid);
        a.state.tdr_history.forget_process(pid);
        m.release_process(pid);
        gone?;
    }
    m.retire_empty_fence_pages(a);
    m.reap_system_pages(a)
}

/// `p`'s process is held open on its adapter by the user-mode process that created it: its
/// adapter state outlives its last device until [`end_process`] (24H2 keeps a process's
/// `DXGPROCESS_RENDER_ADAPTER_INFO`, made once by `K:DXGPROCESS_RENDER_ADAPTER_INFO::Initialize`
/// @0x1403ACC00 at its first device, while the process has the adapter open:
/// `K:DXGPROCESS::OpenAdapter` @0x14036620C counts the opens, `K:DxgkDestroyDeviceImpl`
/// @0x14039D208 destroys only the device's own objects).
pub(crate) fn hold_process(a: &AdapterShared, p: &UmsProcess) {
    lock(&a.ums).held.insert(p.pid);
}

/// The user-mode process behind `pid` ends: each device it still has goes as at process exit
/// (UM-17, the reading's order), the last one taking the process's adapter state with it; with
/// no device left, that state goes now (`K:DXGPROCESS::Destroy` @0x14034D4E0).
pub(crate) fn end_process(
    m: &dyn UmsHost,
    a: &AdapterShared,
    pid: ProcessId,
) -> Result<(), SimError> {
    let devices: Vec<KmtHandle> = {
        let mut os = lock(&a.ums);
        os.held.remove(&pid);
        os.devices
            .iter()
            .filter(|(_, d)| d.process == pid)
            .map(|(h, _)| *h)
            .collect()
    };
    if devices.is_empty() {
        m.gpu_va_teardown(a, 0, Some(pid))?;
        return process_gone(m, a, Some(pid));
    }
    for d in devices {
        teardown(m, a, d, true)?;
    }
    Ok(())
}

/// UM-18's first step, also the end of a normal exit that cannot wait: the device
/// is marked in error and every context of it suspended for good.
fn charge(a: &AdapterShared, dl: &Mutex<()>, device: KmtHandle) -> Result<(), SimError> {
    let _g = dev_guard(a, dl);
    let ctxs: Vec<KmtHandle> = {
        let mut os = lock(&a.ums);
        let Some(d) = os.devices.get_mut(&device) else {
            return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
        };
        d.mark_error(crate::state::ums::DeviceError::Flushed);
        os.events.push(UmsEvent::DeviceError { device });
        os.contexts_of_device(device)
    };
    for c in ctxs {
        let state = lock(&a.ums).contexts.get(&c).map(|c| c.suspended);
        if state == Some(Suspended::Power) {
            // Already off the runlist; it must never be resumed now.
            if let Some(cx) = lock(&a.ums).contexts.get_mut(&c) {
                cx.suspended = Suspended::Exit;
            }
        } else {
            suspend_context(a, c, Suspended::Exit)?;
        }
    }
    Ok(())
}

/// Process exit closes every handle the process still holds (the fuzz targets'
/// leak check found them kept after exit): its monitored fences (created or opened), its NT
/// handles, then its native-fence instances, each as the matching close or destroy would.
fn close_process_fences(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
) -> Result<(), SimError> {
    let Some(pid) = lock(&a.ums).devices.get(&device).map(|d| d.process) else {
        return Ok(());
    };
    let sync = lock(&a.ums).fences_of_process(pid);
    for h in sync {
        super::held::destroy_sync_fence(m, a, device, h)?;
    }
    // Its NT handles (shared fences it holds by handle) close with its handle table.
    m.close_nt_handles_of(pid)?;
    for h in m.native_fence_kmt_handles_of(a.index, pid) {
        if let Some(f) = m.take_native_fence_kmt(a.index, h) {
            m.destroy_native_fence(&f)?;
        }
    }
    // Instances without a D3DKMT handle (opened through the machine's own API) too.
    for f in m.native_fence_instances_of(a.index, pid) {
        m.destroy_native_fence(&f)?;
    }
    Ok(())
}

/// UM-17 step 2: waits until the queue's progress fence reaches its last queued value; false
/// when it does not within the OS's wait (both values are the process's to write). A queue
/// without a progress fence is not waited for ([`crate::os::answers::UmsProgress::None`]).
pub(super) fn wait_queue_idle(
    m: &dyn UmsHost,
    a: &AdapterShared,
    q: KmtHandle,
) -> Result<bool, SimError> {
    let (fence, last) = {
        let os = lock(&a.ums);
        let Some(q) = os.queues.get(&q) else {
            return Ok(true);
        };
        let Some(fence) = q.progress().cloned() else {
            return Ok(true);
        };
        (fence, q.last_queued().load(Ordering::Acquire))
    };
    if fence.value() >= last {
        lock(&a.ums).events.push(UmsEvent::WaitedIdle {
            queue: q,
            value: last,
        });
        return Ok(true);
    }
    {
        let _x = exclusive(a);
        if lock(&a.ums).power == Power::D3 {
            power_up_if_needed(a)?;
            resume_power_suspended(a)?;
        }
    }
    match m.wait_monitored_fence(&fence, last, m.os_config().wait_timeout)? {
        WaitOutcome::Satisfied => {
            lock(&a.ums).events.push(UmsEvent::WaitedIdle {
                queue: q,
                value: last,
            });
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// A new process with a D3D device on adapter `i` (`DxgkDdiCreateDevice`).
pub(crate) fn create_process(
    m: &dyn UmsHost,
    a: &AdapterShared,
    i: usize,
) -> Result<UmsProcess, SimError> {
    ddi::table_slot!(a, DxgkDdiCreateDevice)?.map_or_else(not_supported, Ok)?;
    let pid = ProcessId(NEXT_PROCESS.fetch_add(1, Ordering::Relaxed));
    // The process's D3DKMT handle table lives as long as this machine.
    m.own_process(pid);
    // WDDM 2.x: the process's GPU VA space exists before its first device, which names
    // it (DXGKARG_CREATEDEVICE::hKmdProcess).
    let kmd_process = m.vidmm_create_process(a, pid)?;
    match new_device(a, i, pid, kmd_process) {
        Err(e) if e.status().is_some() => {
            // The GPU process goes with the failed device (`DxgkDdiDestroyProcess`); a
            // failure there is the OS's own error and outranks the driver's refusal.
            m.vidmm_destroy_process(a, pid)?;
            Err(e)
        }
        r => r,
    }
}

/// Another D3D device in `p`'s process on its adapter (`D3DKMTCreateDevice` again: an
/// application recreating its device after a loss). Refused with STATUS_ACCESS_DENIED once
/// the process is blocked on the adapter (`crate::vidsch::tdr`'s per-process block).
pub(crate) fn create_device(a: &AdapterShared, p: &UmsProcess) -> Result<UmsProcess, SimError> {
    let alive = {
        let os = lock(&a.ums);
        os.held.contains(&p.pid) || os.devices.values().any(|d| d.process == p.pid)
    };
    if !alive {
        return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
    }
    let kmd_process = lock(&a.mm.vidmm).process(p.pid).map(|(kmd, _, _)| kmd);
    new_device(a, p.adapter, p.pid, kmd_process)
}

/// `DxgkDdiCreateDevice` for `pid` (whose KMD process is `kmd_process`), then VidSch's
/// device: `K:DXGDEVICE::Initialize` @0x1403973B4 creates the driver's device before VidSch's,
/// and `M:VidSchiCreateDeviceInternal` @0x1400D3D40 fails with STATUS_ACCESS_DENIED when the
/// process's bit for the adapter is set (the driver's device is destroyed again).
fn new_device(
    a: &AdapterShared,
    i: usize,
    pid: ProcessId,
    kmd_process: Option<usize>,
) -> Result<UmsProcess, SimError> {
    let f = ddi::table_slot!(a, DxgkDdiCreateDevice)?.map_or_else(not_supported, Ok)?;
    let h = new_handle(pid)?;
    let mut args = DXGKARG_CREATEDEVICE {
        hDevice: kernel_handle(h) as HANDLE,
        Anonymous: DXGKARG_CREATEDEVICE_0 {
            Flags: DXGK_CREATEDEVICEFLAGS::default(),
        },
        Pasid: 0,
        hKmdProcess: kmd_process.map_or(std::ptr::null_mut(), |k| k as HANDLE),
    };
    let ctx = a.context();
    let status = f.passive(a, (ctx, &mut args))?;
    // BR-91 (the statuses column of the rule table): another status is "an invalid
    // NTSTATUS code" in the triage log; the status still goes to the caller.
    if !bringup::status_allowed("DxgkDdiCreateDevice", status) {
        a.observer().triage(format!(
            "BR-91: DxgkDdiCreateDevice: Driver returned an invalid NTSTATUS code: {:#x}",
            status as u32
        ));
    }
    check_status(f, status)?;
    let kmd = args.hDevice as usize;
    if a.state.tdr_history.is_blocked(pid, i) {
        destroy_kmd!(a, table(a)?, DxgkDdiDestroyDevice, "device", kmd)?;
        return Err(SimError::DdiFailed(STATUS_ACCESS_DENIED));
    }
    let mut os = lock(&a.ums);
    check_kmd_handle(
        a,
        "DxgkDdiCreateDevice",
        "hDevice",
        kmd,
        os.devices.values().map(|d| d.kmd),
    )?;
    os.devices.insert(
        h,
        DeviceObj {
            kmd,
            lock: Arc::new(Mutex::new(())),
            process: pid,
            error: None,
            state: crate::state::ums::DxgDeviceState::Active,
        },
    );
    os.events.push(UmsEvent::CreateDevice { device: h });
    Ok(UmsProcess {
        adapter: i,
        pid,
        device: h,
    })
}

/// Dxgkrnl's teardown of the adapter's processes before a PnP stop (abnormal exits).
pub(crate) fn destroy_all_devices(m: &dyn UmsHost, a: &AdapterShared) -> Result<(), SimError> {
    let devices: Vec<KmtHandle> = lock(&a.ums).devices.keys().copied().collect();
    for d in devices {
        if a.os.windows.reading().teardown == Teardown::AllocationsFirst {
            teardown_allocations_first(m, a, d, false)?;
        } else {
            teardown(m, a, d, false)?;
        }
    }
    Ok(())
}
