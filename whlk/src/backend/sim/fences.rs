//! [`Fences`], [`MonitoredFences`], [`FenceInternals`] and [`CrossAdapterFences`] of the
//! simulated backend: the OS's native and monitored fence objects, CPU waits and signals, and
//! GPU queues written directly.

use std::time::Duration;

use rvgpu_simos::testing::gpu::{GpuQueue, KernelGpuQueue};
use rvgpu_simos::{Machine, NativeFence, NativeFenceDesc, ProcessId, SimError, SimEvent};

use super::gpu_queue::SimGpuQueue;
use super::{failure, wait_result, SimSession};
use crate::backend::{
    CrossAdapterFences, EventRef, Failure, FenceInternals, FenceRef, FenceValues, Fences,
    MonitoredFences, MonitoredRef, NewFence, QueueRef, WaitResult,
};

impl Fences for SimSession {
    fn create_native_fence(&mut self, new: NewFence) -> Result<FenceRef, Failure> {
        let desc = NativeFenceDesc {
            initial: new.initial,
            shareable: new.shareable,
            ..Default::default()
        };
        let i = new.adapter;
        let f = self.as_process(i, new.process, |m, pid| m.create_native_fence(i, pid, desc))?;
        Ok(self.add_fence(f))
    }

    fn open_native_fence(&mut self, f: FenceRef, process: u32) -> Result<FenceRef, Failure> {
        let i = self.fence(f)?.adapter();
        self.open_native_fence_on(f, i, process)
    }

    fn destroy_native_fence(&mut self, f: FenceRef) -> Result<(), Failure> {
        self.machine
            .destroy_native_fence(self.fence(f)?)
            .map_err(failure)
    }

    fn cpu_wait_event(&mut self, f: FenceRef, value: u64) -> Result<EventRef, Failure> {
        let e = self.machine.wait_native_fence_event(self.fence(f)?, value);
        self.add_event(e)
    }

    fn event_result(&self, e: EventRef, timeout: Duration) -> Option<WaitResult> {
        self.events
            .get(e.0)
            .and_then(|e| e.wait(timeout))
            .map(wait_result)
    }

    fn cpu_wait(
        &mut self,
        f: FenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        super::wait::bounded_wait(&self.machine, self.fence(f)?, value, timeout)
            .map(wait_result)
            .map_err(failure)
    }

    fn cpu_signal(&mut self, f: FenceRef, value: u64) -> Result<(), Failure> {
        self.machine
            .signal_native_fence_from_cpu(self.fence(f)?, value)
            .map_err(failure)
    }

    fn gpu_queue(&mut self, i: usize, engine: u32, process: u32) -> Result<QueueRef, Failure> {
        // A user-mode queue of the process (the KMD picks the queue id); on an adapter
        // without user-mode submission (24H2: none without native fences, BR-73) a kernel-mode
        // hardware queue, fed through D3DKMTSubmitCommandToHwQueue.
        let p = self.fence_process(i, process)?;
        let ums = self.machine.usermode_submission_caps(i).is_some();
        let q = if ums {
            SimGpuQueue::User(GpuQueue::new_in(&self.machine, p, engine).map_err(failure)?)
        } else {
            SimGpuQueue::Kernel(KernelGpuQueue::new_in(&self.machine, p, engine).map_err(failure)?)
        };
        self.queues.push(q);
        Ok(QueueRef(self.queues.len() - 1))
    }

    fn gpu_signal(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure> {
        let (queue, fence) = self.queue_and_fence(q, f)?;
        queue.signal(&fence, value).map_err(failure)
    }

    fn gpu_wait(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure> {
        let (queue, fence) = self.queue_and_fence(q, f)?;
        queue.wait(&fence, value).map_err(failure)
    }

    fn gpu_submit(&mut self, q: QueueRef) -> Result<(), Failure> {
        match self.queues.get_mut(q.0) {
            Some(SimGpuQueue::User(queue)) => queue.kick().map_err(failure),
            Some(SimGpuQueue::Kernel(queue)) => queue.kick(&self.machine).map_err(failure),
            None => Err(Failure::Backend(format!("no queue {}", q.0))),
        }
    }

    fn gpu_queue_drained(&self, q: QueueRef) -> bool {
        match self.queues.get(q.0) {
            Some(SimGpuQueue::User(queue)) => queue.drained(),
            Some(SimGpuQueue::Kernel(queue)) => queue.drained(),
            None => false,
        }
    }
}

impl FenceInternals for SimSession {
    fn native_fence_destroyed(&self, f: FenceRef) -> bool {
        self.fence(f).is_ok_and(NativeFence::is_destroyed)
    }

    fn fence_addresses(&self, f: FenceRef) -> Result<(u64, u64, u32), Failure> {
        let f = self.fence(f)?;
        let stride = self
            .machine
            .native_fence_caps(f.adapter())
            .map_or(0, |c| c.MonitoredValueStride);
        Ok((f.current_value_gpu(), f.monitored_value_gpu(), stride))
    }

    fn fence_values(&self, f: FenceRef) -> Result<FenceValues, Failure> {
        let f = self.fence(f)?;
        Ok(FenceValues {
            current: f.current_value(),
            monitored: f.monitored_value(),
        })
    }
}

impl MonitoredFences for SimSession {
    fn create_monitored_fence(
        &mut self,
        i: usize,
        process: u32,
        initial: u64,
    ) -> Result<MonitoredRef, Failure> {
        let f = self.as_process(i, process, |m, pid| {
            m.create_monitored_fence(i, pid, initial)
        })?;
        Ok(self.add_monitored(f))
    }

    fn monitored_value(&self, f: MonitoredRef) -> Result<u64, Failure> {
        Ok(self.monitored_fence(f)?.value())
    }

    fn monitored_wait_event(&mut self, f: MonitoredRef, value: u64) -> Result<EventRef, Failure> {
        let e = self
            .machine
            .wait_monitored_fence_event(self.monitored_fence(f)?, value);
        self.add_event(e)
    }

    fn monitored_signal_cpu(&mut self, f: MonitoredRef, value: u64) -> Result<(), Failure> {
        self.machine
            .signal_monitored_fence_from_cpu(self.monitored_fence(f)?, value)
            .map_err(failure)
    }

    fn gpu_signal_monitored(
        &mut self,
        q: QueueRef,
        f: MonitoredRef,
        value: u64,
    ) -> Result<(), Failure> {
        let fence = self.monitored_fence(f)?.clone();
        match self.queues.get_mut(q.0) {
            Some(SimGpuQueue::User(queue)) => queue.signal_monitored(&fence, value),
            Some(SimGpuQueue::Kernel(queue)) => queue.signal_monitored(&fence, value),
            None => return Err(Failure::Backend(format!("no queue {}", q.0))),
        }
        .map_err(failure)
    }
}

impl CrossAdapterFences for SimSession {
    fn open_native_fence_on(
        &mut self,
        f: FenceRef,
        adapter: usize,
        process: u32,
    ) -> Result<FenceRef, Failure> {
        let g = self.via_nt_handle(
            f,
            adapter,
            process,
            // Opened as an application opens it: without NoSignalMaxValueOnTdr.
            |m, i, pid, h| m.open_native_fence_from_nt_handle(i, pid, h, false),
        )?;
        Ok(self.add_fence(g))
    }

    fn open_native_fence_as_monitored(
        &mut self,
        f: FenceRef,
        adapter: usize,
        process: u32,
    ) -> Result<MonitoredRef, Failure> {
        let m = self.via_nt_handle(
            f,
            adapter,
            process,
            Machine::open_native_fence_as_monitored_from_nt_handle,
        )?;
        Ok(self.add_monitored(m))
    }
}

impl SimSession {
    /// Keeps a CPU wait in event form.
    fn add_event(&mut self, e: Result<SimEvent, SimError>) -> Result<EventRef, Failure> {
        self.events.push(e.map_err(failure)?);
        Ok(EventRef(self.events.len() - 1))
    }

    /// Calls the OS as the case's `process` on adapter `i` (`call` gets its process id).
    fn as_process<T>(
        &mut self,
        i: usize,
        process: u32,
        call: impl FnOnce(&Machine, ProcessId) -> Result<T, SimError>,
    ) -> Result<T, Failure> {
        let pid = self.fence_process(i, process)?.pid;
        call(&self.machine, pid).map_err(failure)
    }

    /// How a second process gets a fence, as on Windows (`rvgpu_simos::ob`): the holder shares
    /// it (an NT handle in its own table), duplicates the handle into the table of the case's
    /// `process` on `adapter`, and that process opens the fence from there (`open` with the
    /// adapter, its id and the handle); both handles are closed once it is open.
    fn via_nt_handle<T>(
        &mut self,
        f: FenceRef,
        adapter: usize,
        process: u32,
        open: impl FnOnce(&Machine, usize, ProcessId, u64) -> Result<T, SimError>,
    ) -> Result<T, Failure> {
        let pid = self.fence_process(adapter, process)?.pid;
        let fence = self.fence(f)?;
        let m = &self.machine;
        let holder = fence.process();
        let mine = m.share_native_fence(fence).map_err(failure)?;
        let theirs = if holder == pid {
            None
        } else {
            match m.duplicate_handle(holder, mine, pid) {
                Ok(h) => Some(h),
                Err(e) => {
                    let _ = m.close_nt_handle(holder, mine);
                    return Err(failure(e));
                }
            }
        };
        let r = open(m, adapter, pid, theirs.unwrap_or(mine));
        let _ = m.close_nt_handle(holder, mine);
        if let Some(h) = theirs {
            let _ = m.close_nt_handle(pid, h);
        }
        r.map_err(failure)
    }
}
