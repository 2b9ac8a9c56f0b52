//! The fence primitives of the seam over D3DKMT (`backend::app`'s `fences` writes
//! [`crate::backend::Fences`] once over them): native fences (`D3DKMTCreateNativeFence`),
//! CPU waits (`D3DKMTWaitForSynchronizationObjectFromCpu`) and signals
//! (`D3DKMTSignalSynchronizationObjectFromCpu`); and [`MonitoredFences`], legacy monitored
//! fences (`D3DKMTCreateSynchronizationObject2`) whose GPU signals are packets of the seam's
//! GPU queues. What user mode cannot see (MonitoredValue, the system process's GPU addresses)
//! is the simulation-only [`crate::backend::FenceInternals`], which this backend does not have.
//!
//! CPU waits in event form run on a thread each, as a Windows program would wait on the event
//! it handed to the thunk: the thread waits in short slices so that the session can stop it
//! when it ends. On Windows each slice registers one more asynchronous wait with the OS (it
//! stays registered until the fence reaches the value or goes away); a case waits at most a
//! few seconds, so that is some tens of waits.
//!
//! Monitored fences are not destroyed one by one (the trait has no such call); they go with
//! their device when the process ends.

// A file beside this one, not a folder: the program's own mappings of its fences.
#[path = "fences_mapping.rs"]
mod mapping;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use rvgpu_umd::fence::MonitoredFence;
use rvgpu_umd::kmt::{FenceCpu, KmtHandle, NtStatus};

use super::{FenceWait, KmtSession, KmtSync, MonitoredSync};
use crate::backend::app::{
    append_to_gpu_queue, fence_process, open_native_fence_in, Pending, Waiter,
};
use crate::backend::{
    nth, CrossAdapterFences, EventRef, Failure, FenceRef, MonitoredFences, MonitoredRef,
    ProcessRef, QueueRef, WaitResult,
};

/// How long one slice of an event-form wait blocks in the thunk before the thread checks
/// whether the session ended.
const EVENT_SLICE: Duration = Duration::from_millis(100);

/// A monitored fence one of the session's devices created.
pub(super) struct KMonitored<K: KmtSync> {
    process: usize,
    handle: KmtHandle,
    value_gpu: u64,
    value: K::Value,
}

/// A thread that waits for `fence` to reach `value` on `kmt`, slice by slice; a fence that is
/// gone (its handle no longer valid) abandons the wait.
pub(super) fn spawn_wait<K: KmtSync + Send + Sync + 'static>(
    kmt: Arc<K>,
    fence: KmtHandle,
    value: u64,
    stop: &Arc<AtomicBool>,
) -> Waiter {
    Waiter::spawn(stop, move || {
        match kmt.wait_timeout(fence, value, EVENT_SLICE) {
            Ok(FenceWait::TimedOut) => None,
            Ok(FenceWait::Reached) => Some(WaitResult::Satisfied),
            Ok(FenceWait::Abandoned) | Err(_) => Some(WaitResult::Abandoned),
        }
    })
}

/// [`spawn_wait`] for a fence another process opened: each slice one wait request to it.
pub(super) fn spawn_remote_wait(
    r: Arc<super::remote::RemoteProcess>,
    id: usize,
    value: u64,
    stop: &Arc<AtomicBool>,
) -> Waiter {
    Waiter::spawn(stop, move || match r.wait_fence(id, value, EVENT_SLICE) {
        Ok(FenceWait::TimedOut) => None,
        Ok(FenceWait::Reached) => Some(WaitResult::Satisfied),
        Ok(FenceWait::Abandoned) | Err(_) => Some(WaitResult::Abandoned),
    })
}

impl<K: KmtSync + Send + Sync + 'static> KmtSession<K> {
    pub(super) fn kmt_of(&self, process: usize) -> Result<Arc<K>, Failure> {
        self.process(ProcessRef(process)).map(|(_, k)| k)
    }

    fn mon(&self, f: MonitoredRef) -> Result<&KMonitored<K>, Failure> {
        nth(&self.monitored, f.0, "monitored fence")
    }

    pub(super) fn wait_result(
        &self,
        r: Result<FenceWait, NtStatus>,
    ) -> Result<WaitResult, Failure> {
        match r {
            Ok(FenceWait::Reached) => Ok(WaitResult::Satisfied),
            Ok(FenceWait::TimedOut) => Ok(WaitResult::TimedOut),
            Ok(FenceWait::Abandoned) => Ok(WaitResult::Abandoned),
            Err(s) => Err(self.status(s)),
        }
    }
}

impl<K: KmtSync + Send + Sync + 'static> MonitoredFences for KmtSession<K> {
    fn create_monitored_fence(
        &mut self,
        i: usize,
        process: u32,
        initial: u64,
    ) -> Result<MonitoredRef, Failure> {
        let p = fence_process(self, i, process)?;
        let kmt = self.kmt_of(p)?;
        let MonitoredSync {
            handle,
            value_gpu,
            value,
        } = kmt
            .create_monitored_fence(initial)
            .map_err(|s| self.status(s))?;
        self.monitored.push(KMonitored {
            process: p,
            handle,
            value_gpu,
            value,
        });
        Ok(MonitoredRef(self.monitored.len() - 1))
    }

    fn monitored_value(&self, f: MonitoredRef) -> Result<u64, Failure> {
        let m = self.mon(f)?;
        // The mapping lives as long as the device: refuse once the process has ended.
        self.kmt_of(m.process)?;
        Ok(m.value.value())
    }

    fn monitored_wait_event(&mut self, f: MonitoredRef, value: u64) -> Result<EventRef, Failure> {
        let (p, h) = {
            let m = self.mon(f)?;
            (m.process, m.handle)
        };
        let w = spawn_wait(self.kmt_of(p)?, h, value, &self.app.stop);
        self.app.events.push(w);
        Ok(EventRef(self.app.events.len() - 1))
    }

    fn monitored_signal_cpu(&mut self, f: MonitoredRef, value: u64) -> Result<(), Failure> {
        let (p, h) = {
            let m = self.mon(f)?;
            (m.process, m.handle)
        };
        self.kmt_of(p)?
            .signal_from_cpu(h, value)
            .map_err(|s| self.status(s))
    }

    /// A packet of the GPU queue's batch (the legacy signal always interrupts).
    fn gpu_signal_monitored(
        &mut self,
        q: QueueRef,
        f: MonitoredRef,
        value: u64,
    ) -> Result<(), Failure> {
        let m = self.mon(f)?;
        let cmd = MonitoredFence {
            value_gpu: m.value_gpu,
        }
        .signal(value);
        let owner = m.process;
        append_to_gpu_queue(&mut self.app, q, owner, Pending::Cmd(cmd))
    }
}

/// A fence shared with a device of another adapter, as a program on Windows shares it:
/// `D3DKMTShareObjects` on the fence's device, `D3DKMTOpenNativeFenceFromNtHandle` on a device
/// of the other adapter (NF-16).
impl<K: KmtSync + Send + Sync + 'static> CrossAdapterFences for KmtSession<K> {
    fn open_native_fence_on(
        &mut self,
        f: FenceRef,
        adapter: usize,
        process: u32,
    ) -> Result<FenceRef, Failure> {
        open_native_fence_in(self, f, adapter, process)
    }

    /// Needs an adapter without native fences beside one with them, a machine configuration
    /// (the seed's legacy iGPU), which this backend does not build.
    fn open_native_fence_as_monitored(
        &mut self,
        _f: FenceRef,
        _adapter: usize,
        _process: u32,
    ) -> Result<MonitoredRef, Failure> {
        Err(Failure::Unsupported(
            "an adapter without native fences beside one with them (a legacy iGPU)".into(),
        ))
    }
}
