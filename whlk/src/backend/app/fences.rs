//! [`Fences`] and [`CrossAdapterFences`] on the seam: native fences made, shared, waited on
//! and signalled through the UMD, and GPU queues (user-mode queues of the fence's process)
//! whose batches signal and wait on them. Written once for every [`AppUmd`]; the backends supply the fence calls.

use std::time::Duration;

use super::fence_state::{AppFence, GpuQueue, Pending};
use super::{AppMappings, AppObjects, AppUmd, FenceId, QueueOp};
use crate::backend::{
    nth, nth_mut, CrossAdapterFences, EventRef, Failure, FenceRef, Fences, MonitoredRef, NewFence,
    NewQueue, ProcessRef, QueueRef, UserModeSubmission, WaitResult,
};

impl<B, V, F, E> AppObjects<B, V, F, E> {
    /// Takes out the fences of process `p` the case has not destroyed (they are destroyed
    /// with it).
    pub(crate) fn take_live_fences_of(&mut self, p: usize) -> Vec<&F> {
        self.fences
            .iter_mut()
            .filter(|f| f.process == p && !f.destroyed)
            .map(|f| {
                f.destroyed = true;
                let f: &AppFence<F> = f;
                &f.fence
            })
            .collect()
    }

    fn native(&self, f: FenceRef) -> Result<&AppFence<F>, Failure> {
        nth(&self.fences, f.0, "fence")
    }

    /// The number the next fence recorded gets ([`record_fence`]): the one place that decides
    /// it, also handed to a backend that names the fence before it is recorded.
    fn next_fence(&self) -> FenceRef {
        FenceRef(self.fences.len())
    }
}

/// The session's process for the case's `process` number on adapter `i`, opened on first use.
pub(crate) fn fence_process<S: AppUmd + UserModeSubmission>(
    s: &mut S,
    i: usize,
    process: u32,
) -> Result<usize, Failure> {
    let known = (s.objects().fence_procs.iter()).find(|(a, n, _)| *a == i && *n == process);
    if let Some(&(_, _, p)) = known {
        return Ok(p);
    }
    let p = s.open_process(i)?.0;
    s.objects_mut().fence_procs.push((i, process, p));
    Ok(p)
}

/// Records `fence` of `process` under [`AppObjects::next_fence`]: the number a backend was
/// handed for it, the seam holding the session from the one to the other.
fn record_fence<S: AppUmd>(s: &mut S, process: usize, fence: S::Fence) -> FenceRef {
    let id = s.objects().next_fence();
    s.objects_mut().fences.push(AppFence {
        process,
        fence,
        destroyed: false,
    });
    id
}

/// Appends `op` to GPU queue `q` after checking that the fence is open in the queue's process
/// (its GPU addresses are that process's): `owner` is the fence's process.
pub(crate) fn append_to_gpu_queue<B, V, F, E>(
    objects: &mut AppObjects<B, V, F, E>,
    q: QueueRef,
    owner: usize,
    op: Pending,
) -> Result<(), Failure> {
    let gq = nth_mut(&mut objects.gpu_queues, q.0, "GPU queue")?;
    if gq.process != owner {
        return Err(Failure::Backend(
            "the fence is not open in the queue's process".into(),
        ));
    }
    gq.pending.push(op);
    Ok(())
}

/// Opens native fence `f` in the case's `process` on adapter `i` (the fence's own adapter, or
/// another for a cross-adapter fence, NF-16): shared by NT handle and opened there.
fn open_native_fence_in<S: AppUmd + UserModeSubmission>(
    s: &mut S,
    f: FenceRef,
    i: usize,
    process: u32,
) -> Result<FenceRef, Failure> {
    let holder = s.objects().native(f)?.process;
    let p = fence_process(s, i, process)?;
    let id = s.objects().next_fence();
    let mine = s.fence_open(holder, &s.objects().native(f)?.fence, p, id)?;
    Ok(record_fence(s, p, mine))
}

impl<S: AppMappings + UserModeSubmission> Fences for S {
    fn own_mapping(&self, f: FenceRef) -> Result<crate::backend::caps::OwnFenceMapping, Failure> {
        let k = self.objects().native(f)?;
        self.fence_own_mapping(k.process, &k.fence)
    }

    fn create_native_fence(&mut self, new: NewFence) -> Result<FenceRef, Failure> {
        let p = fence_process(self, new.adapter, new.process)?;
        let fence = self.fence_create(p, new.initial, new.shareable)?;
        Ok(record_fence(self, p, fence))
    }

    /// In the adapter of the fence's process.
    fn open_native_fence(&mut self, f: FenceRef, process: u32) -> Result<FenceRef, Failure> {
        let holder = self.objects().native(f)?.process;
        let i = (self.objects().fence_procs.iter())
            .find(|&&(_, _, p)| p == holder)
            .map(|&(a, _, _)| a)
            .ok_or_else(|| Failure::Backend(format!("fence {} has no adapter", f.0)))?;
        open_native_fence_in(self, f, i, process)
    }

    fn destroy_native_fence(&mut self, f: FenceRef) -> Result<(), Failure> {
        let k = nth_mut(&mut self.objects_mut().fences, f.0, "fence")?;
        if std::mem::replace(&mut k.destroyed, true) {
            return Err(Failure::Backend(format!("fence {} destroyed twice", f.0)));
        }
        let k = self.objects().native(f)?;
        self.fence_destroy(k.process, &k.fence)
    }

    /// A fence that is gone abandons the wait, as the OS abandons a destroyed object's
    /// waiters.
    fn cpu_wait_event(&mut self, f: FenceRef, value: u64) -> Result<EventRef, Failure> {
        let k = self.objects().native(f)?;
        let e = self.fence_wait_event(k.process, &k.fence, value, &self.objects().stop)?;
        let events = &mut self.objects_mut().events;
        events.push(e);
        Ok(EventRef(events.len() - 1))
    }

    fn event_result(&self, e: EventRef, timeout: Duration) -> Option<WaitResult> {
        self.event_poll(self.objects().events.get(e.0)?, timeout)
    }

    fn cpu_wait(
        &mut self,
        f: FenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        let k = self.objects().native(f)?;
        self.fence_cpu_wait(k.process, &k.fence, value, timeout)
    }

    fn cpu_signal(&mut self, f: FenceRef, value: u64) -> Result<(), Failure> {
        let k = self.objects().native(f)?;
        self.fence_signal(k.process, &k.fence, value)
    }

    fn gpu_queue(&mut self, i: usize, engine: u32, process: u32) -> Result<QueueRef, Failure> {
        self.gpu_queue_allowed()?;
        let p = fence_process(self, i, process)?;
        let queue = self.create_queue(ProcessRef(p), NewQueue::user_mode(engine))?;
        let queues = &mut self.objects_mut().gpu_queues;
        queues.push(GpuQueue {
            process: p,
            queue,
            pending: Vec::new(),
            last: 0,
        });
        Ok(QueueRef(queues.len() - 1))
    }

    fn gpu_signal(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure> {
        let owner = self.objects().native(f)?.process;
        append_to_gpu_queue(self.objects_mut(), q, owner, Pending::Signal(f.0, value))
    }

    fn gpu_wait(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure> {
        let owner = self.objects().native(f)?.process;
        append_to_gpu_queue(self.objects_mut(), q, owner, Pending::Wait(f.0, value))
    }

    /// What was appended, in order, as one batch of the UMD (nothing appended: nothing
    /// submitted).
    fn gpu_submit(&mut self, q: QueueRef) -> Result<(), Failure> {
        let gq = nth_mut(&mut self.objects_mut().gpu_queues, q.0, "GPU queue")?;
        let (queue, pending) = (gq.queue, std::mem::take(&mut gq.pending));
        if pending.is_empty() {
            return Ok(());
        }
        let ops: Vec<QueueOp> = (pending.iter())
            .map(|op| match *op {
                Pending::Signal(f, v) => QueueOp::Signal(FenceId::Native(f), v),
                Pending::Wait(f, v) => QueueOp::Wait(FenceId::Native(f), v),
                Pending::Cmd(c) => QueueOp::Cmd(c),
            })
            .collect();
        let last = self.batch(queue, &ops)?;
        nth_mut(&mut self.objects_mut().gpu_queues, q.0, "GPU queue")?.last = last;
        Ok(())
    }

    fn gpu_queue_drained(&self, q: QueueRef) -> bool {
        (self.objects().gpu_queues.get(q.0)).is_some_and(|gq| {
            self.queue_info(gq.queue)
                .is_ok_and(|i| i.completed >= gq.last)
        })
    }
}

/// A fence shared with a device of another adapter, as a program on Windows shares it: shared
/// by NT handle from the fence's process and opened by the process on the other adapter
/// (NF-16).
impl<S: AppMappings + UserModeSubmission> CrossAdapterFences for S {
    fn open_native_fence_on(
        &mut self,
        f: FenceRef,
        adapter: usize,
        process: u32,
    ) -> Result<FenceRef, Failure> {
        open_native_fence_in(self, f, adapter, process)
    }

    /// Needs an adapter without native fences beside one with them, a machine configuration
    /// (the seed's legacy iGPU) that neither the simulated platform nor a test machine's
    /// `rvgpu-vfu` builds.
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
