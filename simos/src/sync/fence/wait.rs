//! CPU waits on native fences (MF-04): registered, abandoned and withdrawn here (the machine
//! drives a blocking one), and CPU signals (NF-17).

use std::sync::{Arc, Mutex};

use crate::adapter::state::MachineState;
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::state::sync::trace::ReleaseVia;

use super::dpc::no_cpu_access;
use super::event::ViaScope;
use super::settle::{propagate, propagate_always_signaled, queue_wait, settle};
use super::values::{update_current, CpuUpdate};
use crate::state::sync::fence::{FenceObj, NativeFence, Resume, SimEvent, WaitOutcome, Waiter};
use crate::state::sync::storage::FenceOs;

/// The event form of a CPU wait (MF-04): registers a wait for CurrentValue >= `value`,
/// lowers MonitoredValue if needed (NF-02, NF-07) and returns the event (already signalled
/// when the value has been reached). `state` is the machine's: a halted machine refuses it.
pub(crate) fn wait_event(
    state: &MachineState,
    fence: &NativeFence,
    value: u64,
) -> Result<SimEvent, SimError> {
    add_waiter(state, fence, value, None)
}

/// A hardware queue's GPU wait on a native fence (`D3DKMTSubmitWaitForSyncObjectsToHwQueue`):
/// a waiter for CurrentValue >= `value` that VidSch resumes (`resume` runs once it is
/// released, or abandoned); MonitoredValue is lowered for it as for a CPU wait (24H2 arms it
/// for the packet the same way, `M:VidSchiAcquireSyncObjectForHwQueue` @0x14000396C).
pub(crate) fn wait_from_gpu(
    state: &MachineState,
    fence: &NativeFence,
    value: u64,
    resume: impl FnOnce() + Send + 'static,
) -> Result<SimEvent, SimError> {
    add_waiter(state, fence, value, Some(Resume(Box::new(resume))))
}

/// Drops a pending [`wait_from_gpu`] (its queue went away): its resume never runs, its event
/// ends [`WaitOutcome::Abandoned`] and MonitoredValue rises again.
pub(crate) fn cancel_gpu_wait(fence: &NativeFence, ev: &SimEvent) -> Result<(), SimError> {
    let removed = {
        let mut st = lock(&fence.obj.st);
        let before = st.waiters.len();
        st.waiters.retain(|w| !w.event.same(ev));
        st.waiters.len() != before
    };
    if !removed {
        return Ok(());
    }
    ev.set(WaitOutcome::Abandoned);
    settle(&fence.obj)
}

fn add_waiter(
    state: &MachineState,
    fence: &NativeFence,
    value: u64,
    resume: Option<Resume>,
) -> Result<SimEvent, SimError> {
    if let Some(f) = state.fault() {
        return Err(f.into());
    }
    no_cpu_access(fence, "wait")?;
    let ev = SimEvent::default();
    {
        let st = lock(&fence.obj.st);
        if st.destroyed || !st.instances.contains_key(&fence.local) {
            return Err(SimError::Gone("the fence instance"));
        }
    }
    let waiter = Waiter {
        value,
        event: ev.clone(),
        resume,
        raised_over: false,
    };
    {
        let _via = ViaScope::enter(ReleaseVia::Immediate);
        queue_wait(&fence.obj, waiter)?;
    }
    Ok(ev)
}

/// One native fence's CPU waits as the OS holds them at one moment (an observation: the OS
/// state a test waits for instead of guessing it from time).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FenceWaits {
    /// `hGlobalNativeFence`.
    pub global: usize,
    /// CurrentValue.
    pub current: u64,
    /// The MonitoredValue the OS last gave the driver: a GPU signal to at least this value
    /// interrupts.
    pub monitored: u64,
    /// The values of the CPU waits on the fence's waiter list, ascending: linked there when
    /// registered (`M:VidSchSubmitWaitFromCpu` @0x14000DF30), unlinked when released
    /// (`M:VidSchiUnwaitNativeFenceWaiters` @0x1400458E8).
    pub cpu_waits: Vec<u64>,
}

/// The native fences `process` has open on adapter `a` (one entry per fence), each read
/// under its settle lock: between two of the OS's operations on it, never halfway through
/// a registration or a release.
pub(crate) fn waits_of(a: &AdapterShared, process: ProcessId) -> Vec<FenceWaits> {
    let objs: Vec<Arc<FenceObj>> = lock(&a.fence_os).objs.values().cloned().collect();
    objs.iter()
        .filter_map(|obj| {
            let _s = lock(&obj.settle_lock);
            let st = lock(&obj.st);
            if st.destroyed || !st.instances.values().any(|p| *p == process) {
                return None;
            }
            let mut cpu_waits: Vec<u64> = st
                .waiters
                .iter()
                .filter(|w| w.resume.is_none())
                .map(|w| w.value)
                .collect();
            cpu_waits.sort_unstable();
            Some(FenceWaits {
                global: obj.global,
                current: obj.cv.load(),
                monitored: st.mv_os,
                cpu_waits,
            })
        })
        .collect()
}

/// A wait `ev` on `fence` that cannot end any more (its adapter is gone) is dropped:
/// [`WaitOutcome::Abandoned`] ([`abandon_cpu_waits`]).
pub(crate) fn abandon_wait(fence: &NativeFence, ev: &SimEvent) -> WaitOutcome {
    lock(&fence.obj.st).waiters.retain(|w| !w.event.same(ev));
    WaitOutcome::Abandoned
}

/// A wait `ev` on `fence` that timed out is withdrawn (MonitoredValue rises again); its
/// outcome, [`WaitOutcome::TimedOut`] unless it was released meanwhile.
pub(crate) fn withdraw_wait(fence: &NativeFence, ev: &SimEvent) -> Result<WaitOutcome, SimError> {
    lock(&fence.obj.st).waiters.retain(|w| !w.event.same(ev));
    ev.set(WaitOutcome::TimedOut);
    settle(&fence.obj)?;
    Ok(ev.outcome().unwrap_or(WaitOutcome::TimedOut))
}

/// CPU signal (NF-17) of `fence` on its adapter `a`: `DxgkDdiUpdateCurrentValuesFromCpu(fence,
/// value)` at DISPATCH_LEVEL (the driver writes the value and unblocks GPU waiters), then
/// satisfied CPU waits are released; the other adapters of a cross-adapter fence are notified
/// (`NotificationOnly`, NF-16). The caller checked [`no_cpu_access`] first.
pub(crate) fn signal_from_cpu(
    a: &AdapterShared,
    fence: &NativeFence,
    value: u64,
) -> Result<(), SimError> {
    {
        let _s = lock(&fence.obj.settle_lock);
        let mut st = lock(&fence.obj.st);
        if st.destroyed || !st.instances.contains_key(&fence.local) {
            return Err(SimError::Gone("the fence instance"));
        }
        // What 24H2's new-wait rule compares against (`M:VidSchSubmitWaitFromCpu`).
        st.last_cpu_signal = value;
        drop(st);
        update_current(
            a,
            &[(fence.obj.global, value, fence.obj.cv.kva())],
            CpuUpdate::Store,
        )?;
    }
    {
        let _via = ViaScope::enter(ReleaseVia::CpuSignal);
        settle(&fence.obj)?;
    }
    propagate(&fence.obj)
}

/// The adapter is gone (surprise removal): every pending CPU wait on its native fences ends
/// [`WaitOutcome::Abandoned`] (the thunk's `STATUS_DEVICE_REMOVED`), as a destroy would end it.
/// UNVERIFIED for `D3DKMTWaitForSynchronizationObjectFromCpu`, whose page lists no such
/// status; the page of `D3DKMTWaitForSynchronizationObject` gives `STATUS_DEVICE_REMOVED` for
/// a stopped adapter.
pub(crate) fn abandon_cpu_waits(fence_os: &Mutex<FenceOs>) {
    let objs: Vec<Arc<FenceObj>> = lock(fence_os).objs.values().cloned().collect();
    for obj in objs {
        let waiters = std::mem::take(&mut lock(&obj.st).waiters);
        abandon(waiters);
    }
}

/// Device error (24H2 `M:VidSchiMarkDeviceAsError` @0x14001FF30 →
/// `VidSchiSignalRegisteredSyncObjects` @0x14003B848 → `SetToAlwaysSignaled`): every native
/// fence `device` registered when it was created or opened through it is signalled to
/// `u64::MAX` through `DxgkDdiUpdateCurrentValuesFromCpu` (flags 0; the OS stores nothing
/// itself), so its waiters, CPU and GPU, are released: shared fences it only opened included,
/// an open that did not register ([`super::OpenAccess`]) not; once per fence however often it
/// was opened. `VidSchiSignalRegisteredSyncObjects` drains the erroring VidSch device's own
/// list of registrations (`K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC adds an instance to
/// the list of the device it was opened through): an instance another device of the same
/// process holds is not on it. Errors are returned after trying them all.
pub(crate) fn signal_device_fences_to_max(
    a: &AdapterShared,
    device: KmtHandle,
) -> Result<(), SimError> {
    // A fence's state is locked before the adapter's fence table, never under it (a settle
    // holds the state and reads the table's trace sink): the table is copied first.
    let objs: Vec<Arc<FenceObj>> = lock(&a.fence_os).objs.values().cloned().collect();
    let objs = objs.into_iter().filter(|o| {
        let st = lock(&o.st);
        st.devices
            .iter()
            .any(|(l, d)| *d == device && !st.unregistered.contains(l))
    });
    let mut result = Ok(());
    for obj in objs {
        let r = (|| {
            {
                let _s = lock(&obj.settle_lock);
                if lock(&obj.st).destroyed {
                    return Ok(());
                }
                update_current(a, &[(obj.global, u64::MAX, obj.cv.kva())], CpuUpdate::Store)?;
            }
            {
                let _via = ViaScope::enter(ReleaseVia::CpuSignal);
                settle(&obj)?;
            }
            propagate_always_signaled(&obj)
        })();
        if r.is_err() {
            result = r;
        }
    }
    result
}

/// Waits that can never end: each ends [`WaitOutcome::Abandoned`], and a GPU wait's resume
/// runs so that its queue looks at its list again.
pub(super) fn abandon(waiters: Vec<Waiter>) {
    for w in waiters {
        w.event.set(WaitOutcome::Abandoned);
        if let Some(r) = w.resume {
            (r.0)();
        }
    }
}
