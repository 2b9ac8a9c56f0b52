//! [`MonitoredFences`] written once for the two sessions that drive the driver as an
//! application does (the Rust UMD's and the DLL's): a legacy monitored fence is
//! `D3DKMTCreateSynchronizationObject2` of a `D3DDDI_MONITORED_FENCE` on a D3D device of the
//! fence's process, CPU signals and waits are the sync-object thunks ([`KmtSync`]), and GPU
//! signals are fence-write packets of the seam's GPU queues (the fence's
//! `FenceValueGPUVirtualAddress` is in the process's GPU address space, which every device of
//! the process on that adapter shares). A session lends the device of each process and the
//! list of the fences ([`OwnDevices`]).
//!
//! CPU waits in event form run on a thread each ([`spawn_wait`]), as a Windows program would
//! wait on the event it handed to the thunk: the thread waits in short slices so that the
//! session can stop it when it ends. On Windows each slice registers one more asynchronous
//! wait with the OS (it stays registered until the fence reaches the value or goes away); a
//! case waits at most a few seconds, so that is some tens of waits.
//!
//! Monitored fences are not destroyed one by one (the trait has no such call); they go with
//! their device when the process ends.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use rvgpu_umd::fence::MonitoredFence;
use rvgpu_umd::kmt::{FenceCpu, KmtHandle, NtStatus};

use super::sync::{FenceWait, KmtSync, MonitoredSync};
use crate::backend::app::fences::{append_to_gpu_queue, fence_process};
use crate::backend::app::{AppUmd, Pending, Waiter};
use crate::backend::{
    nth, EventRef, Failure, MonitoredFences, MonitoredRef, QueueRef, UserModeSubmission, WaitResult,
};

/// How long one slice of an event-form wait blocks (in the thunk, or in the DLL) before the
/// thread checks whether the session ended.
pub(crate) const EVENT_SLICE: Duration = Duration::from_millis(100);

/// A monitored fence a process made on its device.
pub(crate) struct OwnMonitored<K: KmtSync> {
    process: usize,
    handle: KmtHandle,
    value_gpu: u64,
    value: K::Value,
}

/// What a session lends [`MonitoredFences`]: the device each of its processes makes monitored
/// fences on, and the list of those fences. A failed thunk reads as the seam's failures do:
/// the machine's fault first ([`AppUmd::check_halt`]).
pub(crate) trait OwnDevices: AppUmd<Event: From<Waiter>> + UserModeSubmission {
    /// The thunks of the devices.
    type Own: KmtSync + Send + Sync + 'static;

    /// The device process `p` makes a monitored fence on (the session may make it now).
    fn own_device(&mut self, p: usize) -> Result<Arc<Self::Own>, Failure>;
    /// The device process `p` made its monitored fences on, while the process lives (a fence
    /// lives as long as its device).
    fn device_of(&self, p: usize) -> Result<Arc<Self::Own>, Failure>;
    /// The monitored fences, by [`MonitoredRef`].
    fn own_monitored(&self) -> &[OwnMonitored<Self::Own>];
    /// The same, to add one.
    fn own_monitored_mut(&mut self) -> &mut Vec<OwnMonitored<Self::Own>>;
}

/// A thread that waits for `fence` to reach `value` on `kmt`, slice by slice; a fence that is
/// gone (its handle no longer valid) abandons the wait.
pub(crate) fn spawn_wait<K: KmtSync + Send + Sync + 'static>(
    kmt: Arc<K>,
    fence: KmtHandle,
    value: u64,
    stop: &Arc<AtomicBool>,
) -> Waiter {
    Waiter::spawn(stop, move || {
        slice(kmt.wait_timeout(fence, value, EVENT_SLICE))
    })
}

/// The outcome of one slice of an event-form wait (`None`: wait on).
pub(crate) fn slice<E>(r: Result<FenceWait, E>) -> Option<WaitResult> {
    match r {
        Ok(FenceWait::TimedOut) => None,
        Ok(FenceWait::Reached) => Some(WaitResult::Satisfied),
        Ok(FenceWait::Abandoned) | Err(_) => Some(WaitResult::Abandoned),
    }
}

/// A thunk's status as the case sees it.
fn thunk_failure<S: AppUmd>(s: &S, NtStatus(st): NtStatus) -> Failure {
    s.check_halt().err().unwrap_or(Failure::DdiFailed(st))
}

/// A monitored fence and its device.
type Entry<'a, K> = (&'a OwnMonitored<K>, Arc<K>);

/// Fence `f` and its device, while its process lives.
fn entry<S: OwnDevices>(s: &S, f: MonitoredRef) -> Result<Entry<'_, S::Own>, Failure> {
    let m = nth(s.own_monitored(), f.0, "monitored fence")?;
    Ok((m, s.device_of(m.process)?))
}

impl<S: OwnDevices> MonitoredFences for S {
    fn create_monitored_fence(
        &mut self,
        i: usize,
        process: u32,
        initial: u64,
    ) -> Result<MonitoredRef, Failure> {
        let p = fence_process(self, i, process)?;
        let kmt = self.own_device(p)?;
        let MonitoredSync {
            handle,
            value_gpu,
            value,
        } = kmt
            .create_monitored_fence(initial)
            .map_err(|s| thunk_failure(self, s))?;
        let list = self.own_monitored_mut();
        list.push(OwnMonitored {
            process: p,
            handle,
            value_gpu,
            value,
        });
        Ok(MonitoredRef(list.len() - 1))
    }

    fn monitored_value(&self, f: MonitoredRef) -> Result<u64, Failure> {
        Ok(entry(self, f)?.0.value.value())
    }

    fn monitored_wait_event(&mut self, f: MonitoredRef, value: u64) -> Result<EventRef, Failure> {
        let (handle, kmt) = entry(self, f).map(|(m, kmt)| (m.handle, kmt))?;
        let w = spawn_wait(kmt, handle, value, &self.objects().stop);
        let events = &mut self.objects_mut().events;
        events.push(w.into());
        Ok(EventRef(events.len() - 1))
    }

    fn monitored_signal_cpu(&mut self, f: MonitoredRef, value: u64) -> Result<(), Failure> {
        let (handle, kmt) = entry(self, f).map(|(m, kmt)| (m.handle, kmt))?;
        kmt.signal_from_cpu(handle, value)
            .map_err(|s| thunk_failure(self, s))
    }

    /// A fence-write packet of the GPU queue's next batch (the legacy signal always
    /// interrupts).
    fn gpu_signal_monitored(
        &mut self,
        q: QueueRef,
        f: MonitoredRef,
        value: u64,
    ) -> Result<(), Failure> {
        let (cmd, owner) = {
            let (m, _) = entry(self, f)?;
            let cmd = MonitoredFence {
                value_gpu: m.value_gpu,
            }
            .signal(value);
            (cmd, m.process)
        };
        append_to_gpu_queue(self.objects_mut(), q, owner, Pending::Cmd(cmd))
    }
}
