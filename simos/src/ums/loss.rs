//! Device loss (UM-10) and what TDR recovery needs from this layer: the queues, contexts and
//! devices it resets or puts in error.

use std::sync::atomic::Ordering;

use rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::os::answers::OsDisconnects;
use crate::sync::fence::MonitoredFence;

use super::disconnect::os_disconnect;
use super::host::UmsHost;
use super::locks::exclusive;
use crate::state::ums::events::UmsEvent;
use crate::state::ums::{
    kernel_handle, DeviceError, DoorbellState, DxgDeviceState, Suspended, UmsOs,
};

/// UM-10, device removed: every D3D device on the adapter is in error (its thunks return
/// `STATUS_DEVICE_REMOVED`, only destruction works) and every progress fence reads
/// `u64::MAX`, releasing its waiters (what D3D12 fences read after a removal; UNVERIFIED that
/// Dxgkrnl itself writes the maximum rather than the runtime). No doorbell is written: 24H2
/// writes a status only at a doorbell's create, connect, destroy and the driver's
/// `DxgkCbDisconnectDoorbell` ([`tdr_device_error`]).
pub(crate) fn device_removed(m: &dyn UmsHost, a: &AdapterShared) -> Result<(), SimError> {
    let fences: Vec<MonitoredFence> = {
        let _x = exclusive(a);
        let mut os = lock(&a.ums);
        os.removed = true;
        let devices: Vec<KmtHandle> = os.devices.keys().copied().collect();
        for d in devices {
            if let Some(dv) = os.devices.get_mut(&d) {
                dv.state = DxgDeviceState::Stopped;
                if !dv.in_error() {
                    dv.mark_error(DeviceError::Removed);
                    os.events.push(UmsEvent::DeviceError { device: d });
                }
            }
        }
        os.fences.values().cloned().collect()
    };
    for f in fences {
        m.signal_monitored_fence_from_cpu(&f, u64::MAX)?;
    }
    // CPU waits on the adapter's native fences end as removed: nothing can signal them
    // now (24H2 gives the driver no CPU address to store a value at, and the GPU is gone).
    // A user-mode queue's own progress fence is one (where the OS gave the queue none).
    crate::sync::fence::abandon_cpu_waits(&a.fence_os);
    Ok(())
}

/// A hardware queue as the TDR watchdog sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TdrQueue {
    pub handle: KmtHandle,
    pub device: KmtHandle,
    pub node: u32,
    pub queue_id: Option<u32>,
    pub last_queued: u64,
    /// The progress fence's value; `None` without one (the OS cannot tell the queue's work).
    pub completed: Option<u64>,
    pub suspended: bool,
    /// Its device is in error (its work will never complete; not watched).
    pub device_in_error: bool,
}

impl TdrQueue {
    /// UM-16: work the OS can see outstanding (never without a progress fence).
    pub fn known_work(&self) -> bool {
        self.completed.is_some_and(|c| self.last_queued > c)
    }

    /// Watched for a stall: known work, not suspended, its device not in error.
    pub fn watched_busy(&self) -> bool {
        !self.suspended && !self.device_in_error && self.known_work()
    }
}

/// Every hardware queue of the adapter with its progress (UM-16 view).
pub(crate) fn tdr_queues(a: &AdapterShared) -> Vec<TdrQueue> {
    let os = lock(&a.ums);
    os.queues
        .values()
        .map(|q| TdrQueue {
            handle: q.handle,
            device: q.device,
            node: q.node,
            queue_id: q.queue_id,
            last_queued: q.last_queued().load(Ordering::Acquire),
            completed: q.completed(),
            suspended: os
                .contexts
                .get(&q.context)
                .is_some_and(|c| c.suspended != Suspended::No),
            device_in_error: os.devices.get(&q.device).is_none_or(|d| d.in_error()),
        })
        .collect()
}

/// `(KMD context handle, node, device, device in error)` of context `ctx`.
pub(crate) fn tdr_context(
    a: &AdapterShared,
    ctx: KmtHandle,
) -> Option<(usize, u32, KmtHandle, bool)> {
    let os = lock(&a.ums);
    let c = os.contexts.get(&ctx)?;
    let in_error = os.devices.get(&c.device).is_none_or(|d| d.in_error());
    Some((c.kmd, c.node, c.device, in_error))
}

/// The device of the context a `DxgkCbInvalidateHwContext` names: the OS kernel handle of
/// the context or the KMD's handle (docs/tdr.md Q2: either is accepted).
pub(crate) fn tdr_device_of_context(a: &AdapterShared, handle: usize) -> Option<KmtHandle> {
    if handle == 0 {
        return None;
    }
    let os = lock(&a.ums);
    os.contexts
        .values()
        .find(|c| c.kmd == handle || kernel_handle(c.handle) == handle)
        .map(|c| c.device)
}

/// Whether `handle` is the OS kernel handle of a context of the adapter (not the KMD's: what
/// 24H2 accepts where it follows the handle as its own object).
pub(crate) fn tdr_is_os_context(a: &AdapterShared, handle: usize) -> bool {
    handle != 0
        && lock(&a.ums)
            .contexts
            .values()
            .any(|c| kernel_handle(c.handle) == handle)
}

/// Whether device `device` is in error (or gone).
pub(crate) fn tdr_device_in_error(a: &AdapterShared, device: KmtHandle) -> bool {
    lock(&a.ums)
        .devices
        .get(&device)
        .is_none_or(|d| d.in_error())
}

/// Whether the DXGDEVICE of `device` is active (its state, DXGDEVICE +608, 1): only an
/// adapter-wide reset (`K:DXGDEVICE::Reset` @0x1401BB7FC, [`reset_devices`]) and the adapter's
/// stop (`K:DXGDEVICE::Stop` @0x1401BBA38, from `K:ADAPTER_RENDER::Stop` @0x14019FC38) change
/// it; VidSch's error reason does not. `false` for a device that is gone or whose adapter is
/// removed.
pub(crate) fn device_active(a: &AdapterShared, device: KmtHandle) -> bool {
    let os = lock(&a.ums);
    !os.removed
        && os
            .devices
            .get(&device)
            .is_some_and(|d| d.state == DxgDeviceState::Active)
}

/// Whether the DXGDEVICE of `device` is not active for its thunks' core access
/// (`K:COREDEVICEACCESS::AcquireShared` @0x14000F550: any state but 1): reset or stopped with
/// its adapter ([`crate::state::ums::DeviceObj::state`]), or gone.
pub(crate) fn device_stopped(a: &AdapterShared, device: KmtHandle) -> bool {
    lock(&a.ums)
        .devices
        .get(&device)
        .is_none_or(|d| d.state != DxgDeviceState::Active)
}

/// The DXGDEVICE state of `device` (`None`: no such device).
pub(crate) fn device_state(a: &AdapterShared, device: KmtHandle) -> Option<DxgDeviceState> {
    lock(&a.ums).devices.get(&device).map(|d| d.state)
}

/// The last step of an adapter-wide reset (`K:ADAPTER_RENDER::Reset` @0x1403F2C34, after the
/// driver's `DxgkDdiRestartFromTimeout` and VidMm's restore): `K:DXGDEVICE::Reset`
/// @0x1401BB7FC on every device of the adapter. A device VidSch reports hung (here: the
/// devices the recovery put in error as hung, reason 7) goes to state 3; every other one to
/// state 2 and VidSch marks it in error with 22 (`M:VidSchMarkDeviceAsError` @0x14001F860: the
/// first reason stays, and its registered sync objects are signalled whatever the reason,
/// `M:VidSchiMarkDeviceAsError` @0x14001FF30). Its doorbells are not touched (no DDI carries
/// the reason to the driver). Returns the devices reset.
pub(crate) fn reset_devices(a: &AdapterShared) -> Result<Vec<KmtHandle>, SimError> {
    let (all, signal) = {
        let mut os = lock(&a.ums);
        let mut all = Vec::new();
        let mut signal = Vec::new();
        let mut newly = Vec::new();
        for (h, d) in os.devices.iter_mut() {
            all.push(*h);
            if d.error == Some(DeviceError::Hung) {
                d.state = DxgDeviceState::Hung;
                continue;
            }
            d.state = DxgDeviceState::Reset;
            if !d.in_error() {
                newly.push(*h);
            }
            d.mark_error(DeviceError::Reset);
            signal.push(*h);
        }
        for device in newly {
            os.events.push(UmsEvent::DeviceError { device });
        }
        (all, signal)
    };
    for device in signal {
        signal_registered_sync_objects(a, device)?;
    }
    Ok(all)
}

/// Device `device`'s error reason (`Some(None)`: live), `None` when there is no such device.
pub(crate) fn device_error(a: &AdapterShared, device: KmtHandle) -> Option<Option<DeviceError>> {
    lock(&a.ums).devices.get(&device).map(|d| d.error)
}

/// The devices of the adapter.
pub(crate) fn tdr_devices(a: &AdapterShared) -> Vec<KmtHandle> {
    lock(&a.ums).devices.keys().copied().collect()
}

/// UM-10 for one device after a TDR (or a fault, `why`): the device is in error (VidSch refuses
/// its submissions; its DXGDEVICE stays active, [`device_active`]) and its registered sync
/// objects are signalled (`M:VidSchiMarkDeviceAsError` @0x14001FF30). Other devices are not
/// touched. Returns the doorbells the OS aborted itself.
///
/// 24H2 writes no doorbell here: a doorbell's status is written only by
/// `K:DXGDOORBELL::Initialize` @0x1401D9E74 (2), `K:DXGDOORBELL::Connect` @0x1401D7B90 (0 or
/// 1), `K:DXGDOORBELL::Disconnect` @0x1401D82E8 (the reason; reached only from the driver's
/// `K:DxgkDisconnectDoorbellCB` @0x1401DB180) and `K:DXGDOORBELL::DestroyCoreState`
/// @0x1401D804C (3); `VidSchiMarkDeviceAsError` signals and runs contexts down but touches no
/// doorbell. A guilty device's doorbells read CONNECTED until its driver aborts them. The
/// pages' reading disconnects them through the KMD with `DISCONNECTED_ABORT` (status first,
/// then the dummy page, then `DxgkDdiDisconnectDoorbell`).
pub(crate) fn tdr_device_error(
    a: &AdapterShared,
    device: KmtHandle,
    why: DeviceError,
) -> Result<Vec<KmtHandle>, SimError> {
    let dbs = {
        let mut os = lock(&a.ums);
        match os.devices.get_mut(&device) {
            Some(d) => d.mark_error(why),
            None => return Ok(Vec::new()),
        }
        if a.os.windows.reading().os_disconnects == OsDisconnects::OnPowerAndReset {
            os.doorbells_of_device(device)
        } else {
            Vec::new()
        }
    };
    for d in &dbs {
        os_disconnect(a, *d, D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT)?;
        lock(&a.ums).abort_doorbell(*d);
    }
    signal_registered_sync_objects(a, device)?;
    Ok(dbs)
}

/// `M:VidSchMarkDeviceAsError` @0x14001F860 with a code that suspends nothing (neither 14 nor
/// negative: VidMm's over-budget `MustSucceed` MakeResident gives 12, Dxgkrnl's Evict of a
/// foreign handle 0xB): `VidSchiMarkDeviceAsError` puts `device` in error as after a TDR
/// ([`tdr_device_error`]); a device already in error stays as it is.
pub(crate) fn mark_device_as_error(
    a: &AdapterShared,
    device: KmtHandle,
    code: u32,
) -> Result<(), SimError> {
    let _x = exclusive(a);
    if tdr_device_in_error(a, device) {
        return Ok(());
    }
    tdr_device_error(a, device, DeviceError::Other(code)).map(drop)
}

/// `M:VidSchiSignalRegisteredSyncObjects` @0x14003B848, the second half of marking `device`
/// in error: every sync object registered with the device when it was created or opened
/// through it goes to `u64::MAX`, native fences through the driver. The walk is over the
/// erroring VidSch device's own list (the device argument's list at +152), so a fence the
/// process holds only through another of its devices is left alone.
pub(crate) fn signal_registered_sync_objects(
    a: &AdapterShared,
    device: KmtHandle,
) -> Result<(), SimError> {
    // The device's native fences go to u64::MAX (`M:VidSchiMarkDeviceAsError`).
    crate::sync::fence::signal_device_fences_to_max(a, device)?;
    // So do its monitored fences, its queues' progress fences among them: 24H2
    // `M:_VIDSCH_SYNC_OBJECT::SetToAlwaysSignaled`@0x14003B954 writes -1 into a 64-bit
    // monitored fence's value and releases its waiters (`VidSchiUnwaitMonitoredFences`). A CPU
    // wait on a hung batch of the device then ends at once instead of at the OS's wait limit.
    let monitored: Vec<MonitoredFence> = {
        let os = lock(&a.ums);
        let queues = os
            .queues
            .values()
            .filter(|q| q.device == device)
            .filter_map(|q| q.progress().cloned());
        let own = os
            .fences
            .iter()
            .filter(|(h, _)| os.fence_device.get(h) == Some(&device))
            .map(|(_, f)| f.clone());
        queues.chain(own).collect()
    };
    for f in monitored {
        // A fence destroyed meanwhile has no waiter left to release.
        let _ = f.os_signal(u64::MAX);
    }
    Ok(())
}

/// The adapter-wide lock (power, F1, device loss, and an adapter-wide TDR) held exclusively.
pub(crate) fn tdr_exclusive(a: &AdapterShared) -> std::sync::RwLockWriteGuard<'_, ()> {
    exclusive(a)
}

impl UmsOs {
    /// Doorbell `d` aborted (the device is lost or in error): its status page reads
    /// `DISCONNECTED_ABORT` and its CPU VA the dummy page, once.
    fn abort_doorbell(&mut self, d: KmtHandle) {
        let Some(db) = self.doorbells.get_mut(&d) else {
            return;
        };
        if db.state != DoorbellState::Aborted {
            db.state = DoorbellState::Aborted;
            db.cpu
                .status
                .store(D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT, Ordering::Release);
            db.cpu.to_dummy();
            self.events.push(UmsEvent::Aborted { doorbell: d });
        }
    }
}
