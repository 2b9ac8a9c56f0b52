//! The [`Fences`] capability through rvgpu_umd.dll's C API: native fences
//! (`rvgpu_fence_create2`), CPU waits and signals (`rvgpu_fence_wait`, `rvgpu_fence_signal`),
//! GPU waits and signals as the wait and signal lists of `rvgpu_queue_submit` on a user-mode
//! queue.
//!
//! What no application can observe (MonitoredValue and the system process's addresses, which
//! the OS maps for the GPU only) is not offered, nor are legacy monitored fences: an
//! application of this GPU uses native fences, the C API's one fence type.
//!
//! CPU waits in event form run on a thread each, calling `rvgpu_fence_wait` in short slices
//! so that the session can stop it when it ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::dll::{DllSession, FenceList};
use super::fences::set;
use crate::backend::{
    EventRef, Failure, FenceRef, Fences, ProcessRef, QueueRef, SubmitPath, UmQueueRef,
    UserModeSubmission, WaitResult,
};

/// `RvgpuStatus` values (rvgpu_umd.h).
const OK: u64 = 0;
const DEVICE_LOST: u64 = 3;
const TIMEOUT: u64 = 4;
const INVALID_HANDLE: u64 = 8;
/// `RVGPU_FENCE_SHAREABLE`.
const SHAREABLE: u64 = 1;

/// How long one slice of an event-form wait blocks in the DLL.
const EVENT_SLICE: Duration = Duration::from_millis(100);

struct DFence {
    process: usize,
    /// `RvgpuFence*`.
    handle: u64,
    destroyed: bool,
}

#[derive(Clone, Copy)]
enum Pending {
    Signal(usize, u64),
    Wait(usize, u64),
}

struct DGpuQueue {
    process: usize,
    queue: UmQueueRef,
    pending: Vec<Pending>,
    last: u64,
}

struct DEvent {
    outcome: Arc<(Mutex<Option<WaitResult>>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

/// The fence state of a session.
#[derive(Default)]
pub(super) struct FenceState {
    /// (adapter, the case's process number, the session's process).
    procs: Vec<(usize, u32, usize)>,
    fences: Vec<DFence>,
    queues: Vec<DGpuQueue>,
    events: Vec<DEvent>,
    stop: Arc<AtomicBool>,
}

impl FenceState {
    /// Stops and joins the event threads (the session ends).
    pub(super) fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for e in &mut self.events {
            if let Some(t) = e.thread.take() {
                let _ = t.join();
            }
        }
    }

    /// The live fence handles of process `p`, now to be destroyed with it.
    pub(super) fn take_live_of(&mut self, p: usize) -> Vec<u64> {
        self.fences
            .iter_mut()
            .filter(|f| f.process == p && !f.destroyed)
            .map(|f| {
                f.destroyed = true;
                f.handle
            })
            .collect()
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX - 1)
}

impl DllSession {
    fn fence_process(&mut self, i: usize, process: u32) -> Result<usize, Failure> {
        if let Some(&(_, _, p)) = self
            .fence
            .procs
            .iter()
            .find(|(a, n, _)| *a == i && *n == process)
        {
            return Ok(p);
        }
        let p = self.open_process(i)?.0;
        self.fence.procs.push((i, process, p));
        Ok(p)
    }

    fn native(&self, f: FenceRef) -> Result<(usize, u64), Failure> {
        self.fence
            .fences
            .get(f.0)
            .map(|k| (k.process, k.handle))
            .ok_or_else(|| Failure::Backend(format!("no fence {}", f.0)))
    }

    fn add_fence(&mut self, process: usize, handle: u64) -> FenceRef {
        self.fence.fences.push(DFence {
            process,
            handle,
            destroyed: false,
        });
        FenceRef(self.fence.fences.len() - 1)
    }

    fn append(&mut self, q: QueueRef, f: FenceRef, op: Pending) -> Result<(), Failure> {
        let (owner, _) = self.native(f)?;
        let gq = self
            .fence
            .queues
            .get_mut(q.0)
            .ok_or_else(|| Failure::Backend(format!("no GPU queue {}", q.0)))?;
        if gq.process != owner {
            return Err(Failure::Backend(
                "the fence is not open in the queue's process".into(),
            ));
        }
        gq.pending.push(op);
        Ok(())
    }

    /// Fence `h` of process `holder` opened in process `p` as an application does it:
    /// `rvgpu_fence_share`, `DuplicateHandle` (the harness, as the OS), `rvgpu_fence_open`,
    /// each NT handle closed. Its `RvgpuFence*` in `p`.
    pub(super) fn share_into(&mut self, holder: usize, h: u64, p: usize) -> Result<u64, Failure> {
        let mut nt = 0u64;
        self.ok(holder, "rvgpu_fence_share", &[h, &raw mut nt as u64])?;
        let (from, to) = (self.nt_process(holder)?, self.nt_process(p)?);
        let dup = self.machine().duplicate_handle(from, nt, to);
        let _ = self.machine().close_nt_handle(from, nt);
        let theirs = dup.map_err(crate::backend::sim::failure)?;
        let (_, adapter) = self.process(p)?;
        let mut mine = 0u64;
        let r = self.ok(
            p,
            "rvgpu_fence_open",
            &[adapter, theirs, &raw mut mine as u64],
        );
        let _ = self.machine().close_nt_handle(to, theirs);
        r.map(|()| mine)
    }

    fn wait_status(&self, s: u64, what: &str) -> Result<WaitResult, Failure> {
        match s {
            OK => Ok(WaitResult::Satisfied),
            TIMEOUT if self.fault().is_none() => Ok(WaitResult::TimedOut),
            DEVICE_LOST | INVALID_HANDLE if self.fault().is_none() => Ok(WaitResult::Abandoned),
            s => Err(self
                .fault()
                .unwrap_or_else(|| Failure::Backend(format!("{what} returned RvgpuStatus {s}")))),
        }
    }
}

impl Fences for DllSession {
    fn create_native_fence(
        &mut self,
        i: usize,
        process: u32,
        initial: u64,
        shareable: bool,
    ) -> Result<FenceRef, Failure> {
        let p = self.fence_process(i, process)?;
        let (_, adapter) = self.process(p)?;
        let flags = if shareable { SHAREABLE } else { 0 };
        let mut h = 0u64;
        self.ok(
            p,
            "rvgpu_fence_create2",
            &[adapter, initial, flags, &raw mut h as u64],
        )?;
        Ok(self.add_fence(p, h))
    }

    /// As a second process gets a fence on Windows: the holder's DLL shares it
    /// (`rvgpu_fence_share`, an NT handle in the holder's table), the handle is duplicated into
    /// `process`'s table (`DuplicateHandle`, which the harness does as the OS), that process's
    /// DLL opens it (`rvgpu_fence_open`), and each side closes its NT handle.
    fn open_native_fence(&mut self, f: FenceRef, process: u32) -> Result<FenceRef, Failure> {
        let (holder, h) = self.native(f)?;
        let i = self
            .fence
            .procs
            .iter()
            .find(|&&(_, _, p)| p == holder)
            .map(|&(a, _, _)| a)
            .ok_or_else(|| Failure::Backend(format!("fence {} has no adapter", f.0)))?;
        let p = self.fence_process(i, process)?;
        let mine = self.share_into(holder, h, p)?;
        Ok(self.add_fence(p, mine))
    }

    fn destroy_native_fence(&mut self, f: FenceRef) -> Result<(), Failure> {
        let (p, h) = self.native(f)?;
        if let Some(k) = self.fence.fences.get_mut(f.0) {
            if std::mem::replace(&mut k.destroyed, true) {
                return Err(Failure::Backend(format!("fence {} destroyed twice", f.0)));
            }
        }
        self.ok(p, "rvgpu_fence_destroy", &[h])
    }

    fn cpu_wait_event(&mut self, f: FenceRef, value: u64) -> Result<EventRef, Failure> {
        let (p, h) = self.native(f)?;
        let (up, _) = self.process(p)?;
        let outcome = Arc::new((Mutex::new(None), Condvar::new()));
        let (o, stop) = (outcome.clone(), self.fence.stop.clone());
        let thread = std::thread::spawn(move || loop {
            if stop.load(Ordering::Acquire) {
                return;
            }
            match up.call("rvgpu_fence_wait", &[h, value, nanos(EVENT_SLICE)]) {
                Ok(s) if s & 0xFFFF_FFFF == TIMEOUT => {}
                Ok(s) if s & 0xFFFF_FFFF == OK => return set(&o, WaitResult::Satisfied),
                // A fence that is gone abandons the wait, as the OS abandons a destroyed
                // object's waiters.
                _ => return set(&o, WaitResult::Abandoned),
            }
        });
        self.fence.events.push(DEvent {
            outcome,
            thread: Some(thread),
        });
        Ok(EventRef(self.fence.events.len() - 1))
    }

    fn event_result(&self, e: EventRef, timeout: Duration) -> Option<WaitResult> {
        let ev = self.fence.events.get(e.0)?;
        super::fences::awaited(&ev.outcome, timeout)
    }

    fn cpu_wait(
        &mut self,
        f: FenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        let (p, h) = self.native(f)?;
        let s = self.call(p, "rvgpu_fence_wait", &[h, value, nanos(timeout)])?;
        self.wait_status(s, "rvgpu_fence_wait")
    }

    fn cpu_signal(&mut self, f: FenceRef, value: u64) -> Result<(), Failure> {
        let (p, h) = self.native(f)?;
        self.ok(p, "rvgpu_fence_signal", &[h, value])
    }

    fn gpu_queue(&mut self, i: usize, engine: u32, process: u32) -> Result<QueueRef, Failure> {
        let p = self.fence_process(i, process)?;
        let queue = self.create_queue(ProcessRef(p), engine, SubmitPath::UserMode)?;
        self.fence.queues.push(DGpuQueue {
            process: p,
            queue,
            pending: Vec::new(),
            last: 0,
        });
        Ok(QueueRef(self.fence.queues.len() - 1))
    }

    fn gpu_signal(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure> {
        self.append(q, f, Pending::Signal(f.0, value))
    }

    fn gpu_wait(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure> {
        self.append(q, f, Pending::Wait(f.0, value))
    }

    /// The appended operations in order, as batches of `rvgpu_queue_submit`: a wait after a
    /// signal starts a new batch (a batch's waits come before its signals).
    fn gpu_submit(&mut self, q: QueueRef) -> Result<(), Failure> {
        let (queue, pending) = {
            let gq = self
                .fence
                .queues
                .get_mut(q.0)
                .ok_or_else(|| Failure::Backend(format!("no GPU queue {}", q.0)))?;
            (gq.queue, std::mem::take(&mut gq.pending))
        };
        let (p, h) = self.queue(queue)?;
        let mut batches: Vec<(FenceList, FenceList)> = vec![(Vec::new(), Vec::new())];
        for op in pending {
            match op {
                Pending::Wait(f, v) => {
                    let fence = self.native(FenceRef(f))?.1;
                    if batches.last().is_some_and(|b| !b.1.is_empty()) {
                        batches.push((Vec::new(), Vec::new()));
                    }
                    if let Some(b) = batches.last_mut() {
                        b.0.push((fence, v));
                    }
                }
                Pending::Signal(f, v) => {
                    let fence = self.native(FenceRef(f))?.1;
                    if let Some(b) = batches.last_mut() {
                        b.1.push((fence, v));
                    }
                }
            }
        }
        let mut last = None;
        for (waits, signals) in &batches {
            if waits.is_empty() && signals.is_empty() {
                continue;
            }
            last = Some(self.submit_batch(p, h, &[], waits, signals)?);
        }
        if let (Some(v), Some(gq)) = (last, self.fence.queues.get_mut(q.0)) {
            gq.last = v;
        }
        Ok(())
    }

    fn gpu_queue_drained(&self, q: QueueRef) -> bool {
        self.fence.queues.get(q.0).is_some_and(|gq| {
            self.queue_info(gq.queue)
                .is_ok_and(|i| i.completed >= gq.last)
        })
    }
}
