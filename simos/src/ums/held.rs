//! Held work (MF-03): OS-scheduled GPU waits and signal packets on hardware queues
//! (`D3DKMTSubmitWaitForSyncObjectsToHwQueue`, `D3DKMTSubmitSignalSyncObjectsToHwQueue`).
//!
//! Each queue has an OS-side ordered list ([`HwqSched`]); a user-mode queue's holds only waits
//! and signals, its ring's work never passing through it. A GPU wait entry holds every
//! later entry (the OS does not call `DxgkDdiSubmitCommandToHwQueue` for held submissions) until
//! its fence reaches the value; the wait is a VidSch-side waiter on the legacy monitored fence
//! ([`Machine::wait_monitored_fence_from_gpu`]) or the native fence (which arms its
//! MonitoredValue as a CPU wait does), released by the same DPC-time scan that releases
//! CPU waits, or by a CPU signal, or by another queue's signal packet; its resume only kicks the
//! queue, and VidSch's PASSIVE worker (the adapter's worker thread, or the step loop) submits the
//! held work in order. A signal entry, once at the head (every earlier wait satisfied, every
//! earlier submission handed to the KMD), signals its fences from the OS (what
//! `SignalSynchronizationObjectFromCpu` does) as soon as the queue's progress fence reaches the
//! last value accepted before it (every earlier submission completed); it does not hold later
//! work; a signal broadcast to several queues signals once each queue's packet would. The
//! driver sees the submissions and a native fence's new CurrentValue, nothing else.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rvgpu_ddi::ntstatus::{NT_SUCCESS, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER};

use crate::adapter::{AdapterShared, Life};
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::sync::fence::{MonitoredFence, WaitOutcome};

use super::host::UmsHost;
use super::hwqueue::{queue_node, submit_raw_at};
use super::kmd::worker_step_failed;
use super::loss::tdr_device_in_error;
use super::power::node_active_in_d0;
use crate::state::ums::events::UmsEvent;
use crate::state::ums::{new_handle, HwqSched, Pending, QueueFence, Signal};

/// Returns a resume for a VidSch-side waiter: kicks `sched` and wakes the worker.
pub(super) fn kicker(a: &AdapterShared, sched: &Arc<HwqSched>) -> impl FnOnce() + Send + 'static {
    let w = Arc::downgrade(sched);
    let wake = a.sch.wake.clone();
    move || {
        if let Some(s) = w.upgrade() {
            s.kick();
            wake.notify();
        }
    }
}

/// What the OS knows of a kernel-mode queue's held work (tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeldWork {
    /// Submissions the OS holds (not yet given to the KMD).
    pub submissions: usize,
    /// GPU waits not yet satisfied at or behind the head.
    pub waits: usize,
    /// Signal packets not yet signalled (held, or waiting for earlier work to complete).
    pub signals: usize,
}

/// The queue's objects a MF-03 thunk uses: its list and its progress fence, if it has one.
/// 24H2 refuses neither a user-mode queue nor one without a progress fence here: VidSch keeps
/// the wait or signal packet in the queue's list like any other (`M:VidSchSubmitWaitToHwQueue`
/// @0x1400034F0, `M:VidSchSubmitSignalToHwQueue` @0x140031EF0); a queue without kernel
/// submissions has nothing ahead of it but other such packets. Neither looks at the device's
/// VidSch error: a device in error gets its packets (the kernel entry refused a stopped one).
pub(super) fn mf03_queue(
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
) -> Result<(Arc<HwqSched>, Option<MonitoredFence>), SimError> {
    let os = lock(&a.ums);
    let q = os.queue_of(device, queue)?;
    Ok((q.sched.clone(), q.progress().cloned()))
}

/// The monitored fences behind D3DKMT handles (a queue's progress fence among them: 24H2
/// refuses no fence for being one), as packet objects.
fn mf03_objects(
    a: &AdapterShared,
    device: KmtHandle,
    objects: &[(KmtHandle, u64)],
) -> Result<Vec<(QueueFence, KmtHandle, u64)>, SimError> {
    Ok(mf03_fences(a, device, objects)?
        .into_iter()
        .map(|(f, h, v)| (QueueFence::Monitored(f), h, v))
        .collect())
}

/// The monitored fences behind D3DKMT handles (a queue's progress fence among them: 24H2
/// refuses no fence for being one).
pub(super) fn mf03_fences(
    a: &AdapterShared,
    device: KmtHandle,
    objects: &[(KmtHandle, u64)],
) -> Result<Vec<(MonitoredFence, KmtHandle, u64)>, SimError> {
    if objects.is_empty() {
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    let os = lock(&a.ums);
    let pid = os.device(device)?.process;
    objects
        .iter()
        .map(|&(h, v)| {
            // Another process's handle names nothing here (per-process handle tables).
            os.fences
                .get(&h)
                .filter(|_| os.fence_owner.get(&h) == Some(&pid))
                .map(|f| (f.clone(), h, v))
                .ok_or(SimError::DdiFailed(STATUS_INVALID_PARAMETER))
        })
        .collect()
}

/// `D3DKMTSubmitWaitForSyncObjectsToHwQueue`: one GPU wait entry per object, in order.
pub(crate) fn submit_wait_to_hw_queue(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    objects: &[(KmtHandle, u64)],
) -> Result<(), SimError> {
    mf03_queue(a, device, queue)?;
    let objects = mf03_objects(a, device, objects)?;
    submit_wait_objects_to_hw_queue(m, a, device, queue, objects)
}

/// [`submit_wait_to_hw_queue`] with the objects already looked up (monitored or native
/// fences of `device`, each with its handle and value; the kernel entry's lookup).
pub(crate) fn submit_wait_objects_to_hw_queue(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    objects: Vec<(QueueFence, KmtHandle, u64)>,
) -> Result<(), SimError> {
    let (sched, _) = mf03_queue(a, device, queue)?;
    if objects.is_empty() {
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    for (fence, handle, value) in objects {
        let resume = kicker(a, &sched);
        let event = match &fence {
            QueueFence::Monitored(f) => {
                m.wait_monitored_fence_from_gpu(f, value, Box::new(resume))?
            }
            QueueFence::Native(f) => {
                crate::sync::fence::wait::wait_from_gpu(&a.state, f, value, resume)?
            }
        };
        lock(&sched.st).list.push_back(Pending::Wait {
            fence,
            handle,
            value,
            event,
        });
        lock(&a.ums).events.push(UmsEvent::GpuWaitQueued {
            queue,
            fence: handle,
            value,
        });
    }
    pump(a, queue)
}

/// `D3DKMTSubmitSignalSyncObjectsToHwQueue`: one signal packet on each of `queues` for all
/// the objects (monitored or native fences of `device`, looked up by the kernel entry); the
/// fences are signalled once every packet's earlier work completed.
pub(crate) fn submit_signal_objects_to_hw_queues(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    queues: &[KmtHandle],
    fences: Vec<(QueueFence, KmtHandle, u64)>,
) -> Result<(), SimError> {
    let scheds = queues
        .iter()
        .map(|&q| mf03_queue(a, device, q))
        .collect::<Result<Vec<_>, _>>()?;
    if fences.is_empty() {
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    let rest = (queues.len() > 1).then(|| Arc::new(AtomicUsize::new(queues.len())));
    for (&queue, (sched, progress)) in queues.iter().zip(scheds) {
        // A held value read here has its entry in the list before this signal's can be: the
        // submission raised it under the state lock the push below takes.
        let after = sched.accepted.load(Ordering::Acquire);
        let event = match &progress {
            Some(p) if p.value() < after => {
                Some(m.wait_monitored_fence_from_gpu(p, after, Box::new(kicker(a, &sched)))?)
            }
            _ => None,
        };
        lock(&sched.st).list.push_back(Pending::Signal(Signal {
            fences: fences.clone(),
            after,
            event,
            rest: rest.clone(),
        }));
        pump(a, queue)?;
    }
    Ok(())
}

/// The OS signals a signal packet's fences (its earlier submissions completed).
pub(super) fn fire(a: &AdapterShared, queue: KmtHandle, s: Signal) {
    if s.rest
        .is_some_and(|r| r.fetch_sub(1, Ordering::AcqRel) != 1)
    {
        // Another queue of the broadcast has its packet still ahead.
        return;
    }
    for (f, h, v) in s.fences {
        // A fence destroyed meanwhile has nobody left to release.
        let signalled = match &f {
            QueueFence::Monitored(f) => f.os_signal(v),
            // VidSch's completion of the packet: a value above CurrentValue goes to the
            // driver (`M:VidSchiCompleteSignalSyncObject` @0x14000F8C0 →
            // `VidSchiUpdateNativeFenceCurrentValue` @0x140045B14), then the fence's
            // waiters are released, as for a CPU signal.
            QueueFence::Native(f) => native_signal(a, f, v),
        };
        if signalled.is_ok() {
            lock(&a.ums).events.push(UmsEvent::GpuSignal {
                queue,
                fence: h,
                value: v,
            });
        }
    }
}

/// A signal packet's native fence reaches `value` (none below CurrentValue is given to the
/// driver: `M:VidSchiCompleteSignalSyncObject` @0x14000F8C0 compares first).
fn native_signal(
    a: &AdapterShared,
    f: &crate::sync::fence::NativeFence,
    value: u64,
) -> Result<(), SimError> {
    if value <= f.current_value() {
        return Ok(());
    }
    crate::sync::fence::wait::signal_from_cpu(a, f, value)
}

impl QueueFence {
    /// The value a GPU wait compares (a native fence's CurrentValue).
    fn value(&self) -> u64 {
        match self {
            Self::Monitored(f) => f.value(),
            Self::Native(f) => f.current_value(),
        }
    }

    /// Drops the packet's VidSch-side waiter `ev` (its queue is going).
    fn cancel_gpu_wait(&self, ev: &crate::sync::fence::SimEvent) {
        match self {
            Self::Monitored(f) => f.cancel_gpu_wait(ev),
            // A fence already gone has no waiter left to drop.
            Self::Native(f) => {
                let _ = crate::sync::fence::wait::cancel_gpu_wait(f, ev);
            }
        }
    }
}

pub(super) enum PumpStep {
    Blocked,
    Released(KmtHandle, u64),
    Fire(Signal),
    Submit { value: u64, gpu: u64, bytes: u32 },
}

/// Moves a kernel-mode queue's OS-side list forward as far as it can: satisfied waits are
/// dropped, signal packets at the head are armed (or signalled), submissions at the head go to
/// the KMD in order. Runs on the thunk's thread or VidSch's worker, never at DPC time.
pub(super) fn pump(a: &AdapterShared, queue: KmtHandle) -> Result<(), SimError> {
    let Some((sched, progress, last, device)) = ({
        let os = lock(&a.ums);
        os.queues.get(&queue).map(|q| {
            (
                q.sched.clone(),
                q.progress().cloned(),
                q.sched.last_queued.clone(),
                q.device,
            )
        })
    }) else {
        return Ok(());
    };
    // A queue without a progress fence (a user-mode one) has no kernel submission ahead of
    // any packet.
    let done = || progress.as_ref().map_or(u64::MAX, MonitoredFence::value);
    let _p = lock(&sched.pump);
    loop {
        let ready: Vec<Signal> = {
            let mut st = lock(&sched.st);
            if st.dead {
                return Ok(());
            }
            let done = done();
            let (ready, keep) = std::mem::take(&mut st.armed)
                .into_iter()
                .partition(|s| s.after <= done);
            st.armed = keep;
            ready
        };
        for s in ready {
            fire(a, queue, s);
        }
        let step = {
            let mut st = lock(&sched.st);
            match st.list.front() {
                None => PumpStep::Blocked,
                Some(Pending::Wait {
                    fence,
                    handle,
                    value,
                    event,
                }) => {
                    if rvgpu_hw::fence::wait_satisfied(fence.value(), *value)
                        || event.outcome() == Some(WaitOutcome::Abandoned)
                    {
                        // A wait on a fence destroyed meanwhile no longer holds the queue
                        // (UNVERIFIED against Windows).
                        let r = PumpStep::Released(*handle, *value);
                        st.list.pop_front();
                        r
                    } else {
                        PumpStep::Blocked
                    }
                }
                Some(Pending::Signal(_)) => match st.list.pop_front() {
                    Some(Pending::Signal(s)) if s.after <= done() => PumpStep::Fire(s),
                    Some(Pending::Signal(s)) => {
                        st.armed.push(s);
                        continue;
                    }
                    _ => PumpStep::Blocked,
                },
                Some(&Pending::Submit { value, gpu, bytes }) => {
                    if st.retry_at.is_some_and(|v| done() < v) {
                        PumpStep::Blocked
                    } else {
                        st.retry_at = None;
                        PumpStep::Submit { value, gpu, bytes }
                    }
                }
            }
        };
        match step {
            PumpStep::Blocked => return Ok(()),
            PumpStep::Released(fence, value) => {
                lock(&a.ums).events.push(UmsEvent::GpuWaitReleased {
                    queue,
                    fence,
                    value,
                });
            }
            PumpStep::Fire(s) => fire(a, queue, s),
            PumpStep::Submit { value, gpu, bytes } => {
                if tdr_device_in_error(a, device) {
                    // Device removed: held work is discarded.
                    lock(&sched.st).list.pop_front();
                    continue;
                }
                // UM-13: D0 and F0 first, held until the submission is recorded.
                let _active = node_active_in_d0(a, queue_node(a, queue)?)?;
                let status = submit_raw_at(a, device, queue, value, gpu, bytes, a.os.submit_irql)?;
                if NT_SUCCESS(status) {
                    lock(&sched.st).list.pop_front();
                    last.fetch_max(value, Ordering::AcqRel);
                    lock(&a.ums).events.push(UmsEvent::Submit { queue, value });
                } else if done() < last.load(Ordering::Acquire) {
                    // The KMD's ring is full: resubmit once earlier work completed.
                    lock(&sched.st).retry_at = Some(last.load(Ordering::Acquire));
                    sched.due_hint.store(true, Ordering::Release);
                    return Ok(());
                } else {
                    // The driver refused work user mode handed in (its address, size or
                    // value) after D3DKMTSubmitCommandToHwQueue had already returned success:
                    // the submission can never run. User-mode input must not halt the OS
                    // (found by the `ddi` fuzz target), so the submitting device
                    // goes to error as after a fault (UM-10); its later held submissions are
                    // then discarded above. UNVERIFIED what Windows does with a deferred
                    // submission the driver refuses.
                    lock(&sched.st).list.pop_front();
                    lock(&a.ums).events.push(UmsEvent::HeldSubmitRefused {
                        queue,
                        value,
                        status,
                    });
                    super::loss::tdr_device_error(
                        a,
                        device,
                        crate::state::ums::DeviceError::SubmitRefused,
                    )?;
                    return Ok(());
                }
            }
        }
    }
}

/// VidSch's worker: pumps the kicked queues (and the ones whose ring-full retry is due).
pub(super) fn run_hwq_work(a: &AdapterShared) -> bool {
    if a.state.is_halted() || *lock(&a.life) != Life::Started {
        return false;
    }
    let due: Vec<KmtHandle> = {
        let os = lock(&a.ums);
        // Cleared before the scan: a kick after it sets it again for the next run.
        if !os.hwq_due.swap(false, Ordering::AcqRel) {
            return false;
        }
        let mut retry = false;
        let due = os
            .queues
            .values()
            .filter(|q| {
                let due = q.sched.due(q.progress(), true);
                retry |= q.sched.retry_pending();
                due
            })
            .map(|q| q.handle)
            .collect();
        if retry {
            // A ring-full retry is polled until the queue's progress reaches it.
            os.hwq_due.store(true, Ordering::Release);
        }
        due
    };
    for q in &due {
        if let Err(e) = pump(a, *q) {
            worker_step_failed(a, format!("queue {q:#x}: held work failed: {e}"));
            break;
        }
    }
    !due.is_empty()
}

/// The queue is being destroyed: its held submissions never reach the KMD, its GPU waits and
/// pending signal packets are dropped (their VidSch-side waiters cancelled).
pub(super) fn drop_held_work(a: &AdapterShared, h: KmtHandle) {
    let Some((sched, progress)) = lock(&a.ums)
        .queues
        .get(&h)
        .map(|q| (q.sched.clone(), q.progress().cloned()))
    else {
        return;
    };
    let (list, armed) = {
        let mut st = lock(&sched.st);
        st.dead = true;
        st.retry_at = None;
        (std::mem::take(&mut st.list), std::mem::take(&mut st.armed))
    };
    let (mut submissions, mut waits, mut signals) = (0, 0, 0);
    let mut drop_signal = |s: Signal| {
        signals += 1;
        if let (Some(ev), Some(p)) = (s.event, &progress) {
            p.cancel_gpu_wait(&ev);
        }
        if let Some(r) = s.rest {
            // The broadcast's other packets no longer wait for this one.
            r.fetch_sub(1, Ordering::AcqRel);
        }
    };
    for e in list {
        match e {
            Pending::Submit { .. } => submissions += 1,
            Pending::Wait { fence, event, .. } => {
                waits += 1;
                fence.cancel_gpu_wait(&event);
            }
            Pending::Signal(s) => drop_signal(s),
        }
    }
    for s in armed {
        drop_signal(s);
    }
    if submissions + waits + signals > 0 {
        lock(&a.ums).events.push(UmsEvent::HeldWorkDropped {
            queue: h,
            submissions,
            waits,
            signals,
        });
    }
}

/// A legacy monitored fence of `device`'s process with a D3DKMT handle (the handle the MF-03
/// thunks and `D3DKMTWaitForSynchronizationObjectFromCpu` take), made with `flags`
/// (`D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS`, kept on the fence).
pub(crate) fn create_sync_fence(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    initial: u64,
    flags: u32,
) -> Result<(KmtHandle, MonitoredFence), SimError> {
    let pid = lock(&a.ums).device(device)?.process;
    let h = new_handle(pid)?;
    let f = m.create_monitored_fence(a.index, pid, initial, flags)?;
    let mut os = lock(&a.ums);
    os.fences.insert(h, f.clone());
    os.fence_owner.insert(h, pid);
    os.fence_device.insert(h, device);
    drop(os);
    Ok((h, f))
}

/// A D3DKMT handle in `device`'s process for a monitored fence of the same adapter that the
/// process opened rather than created (`D3DKMTOpenSyncObjectFromNtHandle2` of a shared fence,
/// e.g. a native fence of another adapter opened as a monitored fence here, NF-18): the MF-03
/// thunks and CPU waits then take it like a handle from [`create_sync_fence`].
pub(crate) fn open_sync_fence(
    a: &AdapterShared,
    device: KmtHandle,
    f: &MonitoredFence,
) -> Result<KmtHandle, SimError> {
    if f.adapter() != a.index {
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    let mut os = lock(&a.ums);
    let pid = os.device(device)?.process;
    let h = new_handle(pid)?;
    os.fences.insert(h, f.clone());
    os.fence_owner.insert(h, pid);
    os.fence_device.insert(h, device);
    Ok(h)
}

/// Destroys a fence from [`create_sync_fence`] (not a progress fence).
pub(crate) fn destroy_sync_fence(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let f = {
        let mut os = lock(&a.ums);
        if os.queues.values().any(|q| q.fence == Some(h)) {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        let pid = os.devices.get(&device).map(|d| d.process);
        if pid.is_none() || os.fence_owner.get(&h) != pid.as_ref() {
            return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
        }
        os.fence_owner.remove(&h);
        os.fence_device.remove(&h);
        os.fences
            .remove(&h)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?
    };
    let r = m.destroy_monitored_fence(&f);
    kick_all(a);
    r
}

/// A fence went away: every queue's list is looked at again (a GPU wait on a destroyed fence
/// no longer holds its queue; UNVERIFIED what Windows does with such a wait).
pub(super) fn kick_all(a: &AdapterShared) {
    for q in lock(&a.ums).queues.values() {
        q.sched.kick();
    }
    a.sch.wake.notify();
}

/// MF-03: the OS-side held work of kernel-mode queue `queue`.
pub(crate) fn hw_queue_held(a: &AdapterShared, queue: KmtHandle) -> Option<HeldWork> {
    let sched = lock(&a.ums).queues.get(&queue)?.sched.clone();
    let st = lock(&sched.st);
    let mut h = HeldWork {
        signals: st.armed.len(),
        ..HeldWork::default()
    };
    for e in &st.list {
        match e {
            Pending::Submit { .. } => h.submissions += 1,
            Pending::Wait { .. } => h.waits += 1,
            Pending::Signal(_) => h.signals += 1,
        }
    }
    Some(h)
}
