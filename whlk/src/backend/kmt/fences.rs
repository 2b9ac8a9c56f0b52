//! The [`Fences`] and [`MonitoredFences`] capabilities over D3DKMT: native fences
//! (`D3DKMTCreateNativeFence`), legacy monitored fences
//! (`D3DKMTCreateSynchronizationObject2`), CPU waits
//! (`D3DKMTWaitForSynchronizationObjectFromCpu`) and signals
//! (`D3DKMTSignalSynchronizationObjectFromCpu`), and GPU signals and waits encoded by the UMD
//! into user-mode hardware queues (`UserQueue::submit_ops`). What user mode cannot see
//! (MonitoredValue, the system process's GPU addresses) is the simulation-only
//! [`crate::backend::FenceInternals`], which this backend does not have.
//!
//! CPU waits in event form run on a thread each, as a Windows program would wait on the event
//! it handed to the thunk: the thread waits in short slices so that the session can stop it
//! when it ends. On Windows each slice registers one more asynchronous wait with the OS (it
//! stays registered until the fence reaches the value or goes away); a case waits at most a
//! few seconds, so that is some tens of waits.
//!
//! Monitored fences are not destroyed one by one (the trait has no such call); they go with
//! their device when the process ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rvgpu_umd::fence::{MonitoredFence, NativeFence};
use rvgpu_umd::fencelog::Op;
use rvgpu_umd::kmt::{FenceCpu, KmtHandle, NtStatus};

use super::remote::RemoteProcess;
use super::{FenceWait, KmtSession, KmtSync, MonitoredSync};
use crate::backend::{
    nth, nth_mut, EventRef, Failure, FenceRef, Fences, MonitoredFences, MonitoredRef, NewFence,
    NewQueue, ProcessRef, QueueRef, UmQueueRef, UserModeSubmission, WaitResult,
};

/// How long one slice of an event-form wait blocks in the thunk before the thread checks
/// whether the session ended.
const EVENT_SLICE: Duration = Duration::from_millis(100);

/// A native fence one of the session's devices created or opened.
pub(super) struct KFence {
    process: usize,
    /// This program's fence; `None` for one another process opened, reached through
    /// [`super::remote`]'s requests.
    umd: Option<NativeFence>,
    /// Whether the session destroyed it.
    destroyed: bool,
}

/// A monitored fence one of the session's devices created.
pub(super) struct KMonitored<K: KmtSync> {
    process: usize,
    handle: KmtHandle,
    value_gpu: u64,
    value: K::Value,
}

/// What a case appended to a GPU queue and has not submitted yet.
#[derive(Clone, Copy)]
pub(super) enum Pending {
    Signal(usize, u64),
    Wait(usize, u64),
    Monitored(usize, u64),
}

/// The processes and GPU queues of a session's fence work.
pub(super) struct FenceQueueState<P> {
    /// (adapter, the case's process number, the session's process).
    pub(super) procs: Vec<(usize, u32, usize)>,
    pub(super) queues: Vec<GpuQueue<P>>,
}

impl<P> Default for FenceQueueState<P> {
    fn default() -> Self {
        Self {
            procs: Vec::new(),
            queues: Vec::new(),
        }
    }
}

/// A GPU queue for fence work: a user-mode queue of the process and what is appended to it.
pub(super) struct GpuQueue<P> {
    process: usize,
    pub(super) queue: UmQueueRef,
    pub(super) pending: Vec<P>,
    /// The progress value of the last submission.
    pub(super) last: u64,
}

/// One CPU wait in event form.
pub(super) struct KEvent {
    outcome: Arc<(Mutex<Option<WaitResult>>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

/// The fence state of a session.
pub(super) struct FenceState<K: KmtSync> {
    queues: FenceQueueState<Pending>,
    fences: Vec<KFence>,
    monitored: Vec<KMonitored<K>>,
    events: Vec<KEvent>,
    /// Set when the session ends: event threads stop waiting.
    stop: Arc<AtomicBool>,
}

impl<K: KmtSync> Default for FenceState<K> {
    fn default() -> Self {
        Self {
            queues: FenceQueueState::default(),
            fences: Vec::new(),
            monitored: Vec::new(),
            events: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl<K: KmtSync + Send + Sync + 'static> FenceQueues<Pending> for KmtSession<K> {
    fn fence_queues(&self) -> &FenceQueueState<Pending> {
        &self.fence.queues
    }
    fn fence_queues_mut(&mut self) -> &mut FenceQueueState<Pending> {
        &mut self.fence.queues
    }
}

impl<K: KmtSync> FenceState<K> {
    /// Stops and joins the event threads (the session ends).
    pub(super) fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for e in &mut self.events {
            if let Some(t) = e.thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// Where a background wait leaves its result (an event-form wait of either KMT backend).
pub(super) type Outcome = (Mutex<Option<WaitResult>>, Condvar);

/// The fence work the D3DKMT session and the DLL session do alike: the session processes
/// that stand for a case's process numbers, and the GPU queues cases append to.
/// `Op` is what a GPU queue holds until its submission.
pub(super) trait FenceQueues<Op>: UserModeSubmission {
    fn fence_queues(&self) -> &FenceQueueState<Op>;
    fn fence_queues_mut(&mut self) -> &mut FenceQueueState<Op>;

    /// The session's process for the case's `process` number on adapter `i`, opened on first
    /// use (on the D3DKMT backend, a D3DKMT device of this program).
    fn fence_process(&mut self, i: usize, process: u32) -> Result<usize, Failure> {
        let known = self
            .fence_queues()
            .procs
            .iter()
            .find(|(a, n, _)| *a == i && *n == process);
        if let Some(&(_, _, p)) = known {
            return Ok(p);
        }
        let p = self.open_process(i)?.0;
        self.fence_queues_mut().procs.push((i, process, p));
        Ok(p)
    }

    /// A new GPU queue: a user-mode queue on `engine` of the case's `process` on adapter `i`.
    fn open_gpu_queue(&mut self, i: usize, engine: u32, process: u32) -> Result<QueueRef, Failure> {
        let p = self.fence_process(i, process)?;
        let queue = self.create_queue(ProcessRef(p), NewQueue::user_mode(engine))?;
        let queues = &mut self.fence_queues_mut().queues;
        queues.push(GpuQueue {
            process: p,
            queue,
            pending: Vec::new(),
            last: 0,
        });
        Ok(QueueRef(queues.len() - 1))
    }

    fn gpu_queue_mut(&mut self, q: QueueRef) -> Result<&mut GpuQueue<Op>, Failure> {
        nth_mut(&mut self.fence_queues_mut().queues, q.0, "GPU queue")
    }

    /// Appends `op` to `q` after checking that the fence is the queue's process's (its GPU
    /// addresses are that process's): `owner` is the fence's process.
    fn append(&mut self, q: QueueRef, owner: usize, op: Op) -> Result<(), Failure> {
        let gq = self.gpu_queue_mut(q)?;
        if gq.process != owner {
            return Err(Failure::Backend(
                "the fence is not open in the queue's process".into(),
            ));
        }
        gq.pending.push(op);
        Ok(())
    }

    /// Whether the GPU completed everything submitted to `q`.
    fn queue_drained(&self, q: QueueRef) -> bool {
        self.fence_queues().queues.get(q.0).is_some_and(|gq| {
            self.queue_info(gq.queue)
                .is_ok_and(|i| i.completed >= gq.last)
        })
    }
}

/// Records the result of a background wait and wakes whoever awaits it.
pub(super) fn set(outcome: &Outcome, r: WaitResult) {
    let (m, cv) = outcome;
    *m.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(r);
    cv.notify_all();
}

/// The result of a background wait, awaited for at most `timeout` (`None`: not yet).
pub(super) fn awaited(outcome: &Outcome, timeout: Duration) -> Option<WaitResult> {
    let (m, cv) = outcome;
    let deadline = Instant::now() + timeout;
    let mut g = m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    loop {
        if let Some(r) = *g {
            return Some(r);
        }
        let left = deadline.checked_duration_since(Instant::now())?;
        if left.is_zero() {
            return None;
        }
        g = cv
            .wait_timeout(g, left)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
}

impl<K: KmtSync + Send + Sync + 'static> KmtSession<K> {
    fn kmt_of(&self, process: usize) -> Result<Arc<K>, Failure> {
        self.process(ProcessRef(process)).map(|(_, k)| k)
    }

    /// [`fence_process`](FenceQueues::fence_process) with that process's thunks.
    fn fence_process_kmt(&mut self, i: usize, process: u32) -> Result<(usize, Arc<K>), Failure> {
        let p = self.fence_process(i, process)?;
        Ok((p, self.kmt_of(p)?))
    }

    fn native(&self, f: FenceRef) -> Result<&KFence, Failure> {
        nth(&self.fence.fences, f.0, "fence")
    }

    /// The process that holds native fence `f` and the fence's D3DKMT handle there.
    fn native_owner(&self, f: FenceRef) -> Result<(usize, KmtHandle), Failure> {
        let k = self.native(f)?;
        let umd = k.umd.as_ref().ok_or_else(|| {
            Failure::Unsupported(format!(
                "fence {} is another process's: only CPU signals and waits are forwarded",
                f.0
            ))
        })?;
        Ok((k.process, umd.kmt))
    }

    /// The process that opened native fence `f`, if it is another process (alive).
    fn remote_fence(&self, f: FenceRef) -> Result<Option<Arc<RemoteProcess>>, Failure> {
        let k = self.native(f)?;
        if k.umd.is_some() {
            return Ok(None);
        }
        self.remote_arc(k.process)?
            .map(Some)
            .ok_or_else(|| Failure::Backend(format!("fence {}'s process has ended", f.0)))
    }

    fn mon(&self, f: MonitoredRef) -> Result<&KMonitored<K>, Failure> {
        nth(&self.fence.monitored, f.0, "monitored fence")
    }

    fn wait_result(&self, r: Result<FenceWait, NtStatus>) -> Result<WaitResult, Failure> {
        match r {
            Ok(FenceWait::Reached) => Ok(WaitResult::Satisfied),
            Ok(FenceWait::TimedOut) => Ok(WaitResult::TimedOut),
            Ok(FenceWait::Abandoned) => Ok(WaitResult::Abandoned),
            Err(s) => Err(self.status(s)),
        }
    }

    /// A thread that waits for `fence` to reach `value` on `kmt`, slice by slice.
    fn spawn_wait(&mut self, kmt: Arc<K>, fence: KmtHandle, value: u64) -> EventRef {
        self.spawn_wait_with(move || {
            kmt.wait_timeout(fence, value, EVENT_SLICE)
                .map_err(|NtStatus(s)| Failure::DdiFailed(s))
        })
    }

    /// A thread that waits slice by slice, each slice one call of `slice`.
    fn spawn_wait_with(
        &mut self,
        slice: impl Fn() -> Result<FenceWait, Failure> + Send + 'static,
    ) -> EventRef {
        let outcome = Arc::new((Mutex::new(None), Condvar::new()));
        let (o, stop) = (outcome.clone(), self.fence.stop.clone());
        let thread = std::thread::spawn(move || loop {
            if stop.load(Ordering::Acquire) {
                return;
            }
            match slice() {
                Ok(FenceWait::TimedOut) => {}
                Ok(FenceWait::Reached) => return set(&o, WaitResult::Satisfied),
                // A fence that is gone (destroyed: its handle no longer valid) abandons the
                // wait, as the OS abandons a destroyed object's waiters.
                Ok(FenceWait::Abandoned) | Err(_) => return set(&o, WaitResult::Abandoned),
            }
        });
        self.fence.events.push(KEvent {
            outcome,
            thread: Some(thread),
        });
        EventRef(self.fence.events.len() - 1)
    }
}

impl<K: KmtSync + Send + Sync + 'static> Fences for KmtSession<K> {
    fn create_native_fence(&mut self, new: NewFence) -> Result<FenceRef, Failure> {
        let (p, kmt) = self.fence_process_kmt(new.adapter, new.process)?;
        let umd = if new.shareable {
            kmt.create_shareable_native_fence(new.initial)
        } else {
            kmt.create_native_fence(new.initial)
        }
        .map_err(|s| self.status(s))?;
        self.fence.fences.push(KFence {
            process: p,
            umd: Some(umd),
            destroyed: false,
        });
        Ok(FenceRef(self.fence.fences.len() - 1))
    }

    /// As a second process gets a fence on Windows: the holder shares it
    /// (`D3DKMTShareObjects`, an NT handle in its table), the handle is duplicated into
    /// `process`'s table, that process opens it (`D3DKMTOpenNativeFenceFromNtHandle`), and each
    /// side closes its NT handle. Another process opens it on the request ([`super::remote`]).
    fn open_native_fence(&mut self, f: FenceRef, process: u32) -> Result<FenceRef, Failure> {
        let (holder, h) = self.native_owner(f)?;
        let (i, hk) = self.process(ProcessRef(holder))?;
        let p = self.fence_process(i, process)?;
        let mine = hk.share_native_fence(h).map_err(|s| self.status(s))?;
        let theirs = self.machine.duplicate_nt_handle(holder, mine, p);
        let _ = hk.close_nt_handle(mine);
        let theirs = theirs?;
        let id = self.fence.fences.len();
        let umd = match self.remote_arc(p)? {
            Some(r) => {
                r.open_fence(id, theirs)?;
                None
            }
            None => {
                let kmt = self.kmt_of(p)?;
                let umd = kmt.open_native_fence(theirs);
                let _ = kmt.close_nt_handle(theirs);
                Some(umd.map_err(|s| self.status(s))?)
            }
        };
        self.fence.fences.push(KFence {
            process: p,
            umd,
            destroyed: false,
        });
        Ok(FenceRef(id))
    }

    fn destroy_native_fence(&mut self, f: FenceRef) -> Result<(), Failure> {
        let remote = self.remote_fence(f)?;
        if let Some(k) = self.fence.fences.get_mut(f.0) {
            if std::mem::replace(&mut k.destroyed, true) {
                return Err(Failure::Backend(format!("fence {} destroyed twice", f.0)));
            }
        }
        if let Some(r) = remote {
            return r.destroy_fence(f.0);
        }
        let (p, h) = self.native_owner(f)?;
        let kmt = self.kmt_of(p)?;
        kmt.destroy_native_fence(h).map_err(|s| self.status(s))
    }

    fn cpu_wait_event(&mut self, f: FenceRef, value: u64) -> Result<EventRef, Failure> {
        if let Some(r) = self.remote_fence(f)? {
            let id = f.0;
            return Ok(self.spawn_wait_with(move || r.wait_fence(id, value, EVENT_SLICE)));
        }
        let (p, h) = self.native_owner(f)?;
        let kmt = self.kmt_of(p)?;
        Ok(self.spawn_wait(kmt, h, value))
    }

    fn event_result(&self, e: EventRef, timeout: Duration) -> Option<WaitResult> {
        let ev = self.fence.events.get(e.0)?;
        awaited(&ev.outcome, timeout)
    }

    fn cpu_wait(
        &mut self,
        f: FenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        if let Some(r) = self.remote_fence(f)? {
            return Ok(match r.wait_fence(f.0, value, timeout)? {
                FenceWait::Reached => WaitResult::Satisfied,
                FenceWait::TimedOut => WaitResult::TimedOut,
                FenceWait::Abandoned => WaitResult::Abandoned,
            });
        }
        let (p, h) = self.native_owner(f)?;
        let r = self.kmt_of(p)?.wait_timeout(h, value, timeout);
        self.wait_result(r)
    }

    fn cpu_signal(&mut self, f: FenceRef, value: u64) -> Result<(), Failure> {
        if let Some(r) = self.remote_fence(f)? {
            return r.signal_fence(f.0, value);
        }
        let (p, h) = self.native_owner(f)?;
        self.kmt_of(p)?
            .signal_from_cpu(h, value)
            .map_err(|s| self.status(s))
    }

    fn gpu_queue(&mut self, i: usize, engine: u32, process: u32) -> Result<QueueRef, Failure> {
        self.open_gpu_queue(i, engine, process)
    }

    fn gpu_signal(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure> {
        let owner = self.native(f)?.process;
        self.append(q, owner, Pending::Signal(f.0, value))
    }

    fn gpu_wait(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure> {
        let owner = self.native(f)?.process;
        self.append(q, owner, Pending::Wait(f.0, value))
    }

    fn gpu_submit(&mut self, q: QueueRef) -> Result<(), Failure> {
        let (queue, pending) = {
            let gq = self.gpu_queue_mut(q)?;
            (gq.queue, std::mem::take(&mut gq.pending))
        };
        // The monitored signals' commands first: the ops borrow them and the fences.
        let mut cmds = Vec::new();
        for op in &pending {
            if let Pending::Monitored(m, v) = *op {
                cmds.push(
                    MonitoredFence {
                        value_gpu: self.mon(MonitoredRef(m))?.value_gpu,
                    }
                    .signal(v),
                );
            }
        }
        let mut cmd = cmds.iter();
        let fences = &self.fence.fences;
        let native = |f: usize| {
            fences
                .get(f)
                .and_then(|k| k.umd.as_ref())
                .ok_or_else(|| Failure::Backend(format!("no fence {f} in this program")))
        };
        let mut ops: Vec<Op<'_>> = Vec::with_capacity(pending.len());
        for op in &pending {
            ops.push(match *op {
                Pending::Signal(f, v) => Op::Signal(native(f)?, v),
                Pending::Wait(f, v) => Op::Wait(native(f)?, v),
                Pending::Monitored(..) => Op::Cmd(
                    *cmd.next()
                        .ok_or_else(|| Failure::Backend("monitored signal encoding".into()))?,
                ),
            });
        }
        let r = super::live_queue(&mut self.queues, queue)?.submit_ops(&ops);
        drop(ops);
        let last = r.map_err(|e| self.umd(e))?;
        self.gpu_queue_mut(q)?.last = last;
        Ok(())
    }

    fn gpu_queue_drained(&self, q: QueueRef) -> bool {
        self.queue_drained(q)
    }
}

impl<K: KmtSync + Send + Sync + 'static> MonitoredFences for KmtSession<K> {
    fn create_monitored_fence(
        &mut self,
        i: usize,
        process: u32,
        initial: u64,
    ) -> Result<MonitoredRef, Failure> {
        let (p, kmt) = self.fence_process_kmt(i, process)?;
        let MonitoredSync {
            handle,
            value_gpu,
            value,
        } = kmt
            .create_monitored_fence(initial)
            .map_err(|s| self.status(s))?;
        self.fence.monitored.push(KMonitored {
            process: p,
            handle,
            value_gpu,
            value,
        });
        Ok(MonitoredRef(self.fence.monitored.len() - 1))
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
        let kmt = self.kmt_of(p)?;
        Ok(self.spawn_wait(kmt, h, value))
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

    fn gpu_signal_monitored(
        &mut self,
        q: QueueRef,
        f: MonitoredRef,
        value: u64,
    ) -> Result<(), Failure> {
        let owner = self.mon(f)?.process;
        self.append(q, owner, Pending::Monitored(f.0, value))
    }
}
