//! What an `RvgpuQueue` is: a user-mode queue ([`UserQueue`], with its kernel-mode fallback)
//! or a kernel-mode queue ([`KernelQueue`]) of one adapter, the record of its fence
//! operations that `rvgpu_queue_read_fence_log` drains, and the adapter's loss bookkeeping it
//! reports to. Portable over the thunks `K`; the Windows build uses it over `WinKmt`.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rvgpu_hw::cmd::Command;

use crate::capi::buffer::AdapterState;
use crate::capi::handles::Shared;
use crate::fencelog::{FenceTrace, Op, QueuedOp};
use crate::kmt::{DoorbellStatus, Kmt, KmtHandle};
use crate::packets::Packets;
use crate::submit::{KernelQueue, QueueConfig, SubmissionPath, SubmitError, UserQueue};
use crate::usage::{Timeline, TimelineId, TrackedQueue};

/// Fence operations a queue kept for `rvgpu_queue_read_fence_log` (the newest
/// [`FenceLog::CAPACITY`]; older ones are counted as dropped), each also forwarded to the
/// ETW trace when one is registered.
pub(crate) struct FenceLog {
    entries: Shared<VecDeque<QueuedOp>>,
    dropped: AtomicU64,
    forward: Option<Arc<dyn FenceTrace>>,
}

impl core::fmt::Debug for FenceLog {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FenceLog")
            .field("dropped", &self.dropped)
            .finish_non_exhaustive()
    }
}

impl FenceLog {
    /// Operations kept before the oldest is dropped.
    pub(crate) const CAPACITY: usize = 256;

    pub(crate) fn new(forward: Option<Arc<dyn FenceTrace>>) -> Self {
        Self {
            entries: Shared::new(VecDeque::new()),
            dropped: AtomicU64::new(0),
            forward,
        }
    }

    /// Moves up to `max` of the oldest operations into `out`.
    pub(crate) fn drain(&self, max: usize, mut out: impl FnMut(&QueuedOp)) -> usize {
        let mut e = self.entries.lock();
        let n = max.min(e.len());
        for op in e.drain(..n) {
            out(&op);
        }
        n
    }

    /// Operations dropped because nobody read them in time.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl FenceTrace for FenceLog {
    fn queued(&self, op: &QueuedOp) {
        {
            let mut e = self.entries.lock();
            if e.len() >= Self::CAPACITY {
                e.pop_front();
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            e.push_back(*op);
        }
        if let Some(f) = &self.forward {
            f.queued(op);
        }
    }
}

/// The two kinds of queue (one per handle, so the size difference does not matter).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum AnyQueue<K: Kmt> {
    User(UserQueue<K>),
    Kernel(KernelQueue<K>),
}

/// An `RvgpuQueue`'s object.
#[derive(Debug)]
pub(crate) struct CapiQueue<K: Kmt> {
    /// `None` once closed (a call that looked the handle up before finds it gone).
    queue: Option<AnyQueue<K>>,
    timeline: TimelineId,
    retired: Arc<AtomicBool>,
    kmt: K,
    pub(crate) log: Arc<FenceLog>,
    adapter: Arc<AdapterState>,
    lost: bool,
    /// The highest progress value seen complete before the loss: after it the progress fence
    /// reads the maximum whatever ran, so only what was seen before counts as done.
    seen: u64,
}

/// What `rvgpu_queue_status` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueueState {
    pub(crate) submitted: u64,
    pub(crate) completed: u64,
    pub(crate) kernel_mode: bool,
    pub(crate) lost: bool,
    pub(crate) queue_id: u32,
    pub(crate) dropped_log_entries: u64,
    /// The raw `D3DDDI_DOORBELLSTATUS` of a user-mode queue's doorbell; -1 without one.
    pub(crate) doorbell: i32,
}

impl<K: Kmt + Clone> CapiQueue<K> {
    /// A user-mode (`kernel_mode` false) or kernel-mode queue on `config.node`.
    pub(crate) fn new(
        kmt: K,
        config: &QueueConfig,
        kernel_mode: bool,
        adapter: Arc<AdapterState>,
        forward: Option<Arc<dyn FenceTrace>>,
    ) -> Result<Self, SubmitError> {
        let log = Arc::new(FenceLog::new(forward));
        let trace: Arc<dyn FenceTrace> = log.clone();
        let (queue, timeline, retired) = if kernel_mode {
            let mut q = KernelQueue::new(kmt.clone(), config)?;
            q.set_fence_trace(Some(trace));
            let (t, r) = (q.timeline(), q.retired_flag());
            (AnyQueue::Kernel(q), t, r)
        } else {
            let mut q = UserQueue::new(kmt.clone(), config)?;
            q.set_fence_trace(Some(trace));
            let (t, r) = (q.timeline(), q.retired_flag());
            (AnyQueue::User(q), t, r)
        };
        Ok(Self {
            queue: Some(queue),
            timeline,
            retired,
            kmt,
            log,
            adapter,
            lost: false,
            seen: 0,
        })
    }
}

impl<K: Kmt> CapiQueue<K> {
    /// Records a loss the first time an operation reports one, or the progress fence reads a
    /// value the queue never submitted (UM-10: the OS signalled it to the maximum).
    fn note<T>(&mut self, r: Result<T, SubmitError>) -> Result<T, SubmitError> {
        let lost_now = matches!(r, Err(SubmitError::Lost)) || self.is_lost();
        if !lost_now {
            self.seen = self.seen.max(self.completed_now());
        } else if !self.lost {
            self.lost = true;
            self.adapter.lost.store(true, Ordering::Release);
            self.adapter.resets.fetch_add(1, Ordering::AcqRel);
            if let Some(st) = self.disconnect_status() {
                let _ = self.adapter.doorbell.compare_exchange(
                    -1,
                    st,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
        }
        r
    }

    /// Whether the queue is lost: it found so before, its queue object says so, or its
    /// progress fence reads a value it never submitted.
    fn is_lost(&self) -> bool {
        self.lost
            || match &self.queue {
                Some(AnyQueue::User(q)) => q.is_lost() || q.progress_overrun(),
                Some(AnyQueue::Kernel(q)) => q.completed() > q.last_submitted(),
                None => false,
            }
    }

    /// The queue's completed value as its queue object reads it.
    fn completed_now(&self) -> u64 {
        match &self.queue {
            Some(AnyQueue::User(q)) => q.completed(),
            Some(AnyQueue::Kernel(q)) => q.completed().min(q.last_submitted()),
            None => self.seen,
        }
    }

    /// What a user-mode queue's doorbell said when it stopped being usable: the status read
    /// before a fallback destroyed it, or the live one if it is disconnected now.
    fn disconnect_status(&self) -> Option<i32> {
        let Some(AnyQueue::User(q)) = &self.queue else {
            return None;
        };
        match q.doorbell_end().or_else(|| q.doorbell_status()) {
            Some(DoorbellStatus::Connected | DoorbellStatus::ConnectedNotify) | None => None,
            Some(s) => Some(raw_status(s)),
        }
    }

    /// One batch: `ops` in order.
    pub(crate) fn submit_ops(&mut self, ops: &[Op<'_>]) -> Result<u64, SubmitError> {
        let r = match &mut self.queue {
            Some(AnyQueue::User(q)) => q.submit_ops(ops),
            Some(AnyQueue::Kernel(q)) => q.submit_ops(ops),
            None => Err(SubmitError::Lost),
        };
        // A queue reports its loss with an error: a submission that went in changes nothing.
        if r.is_ok() && !self.lost {
            return r;
        }
        self.note(r)
    }

    /// One batch of packets checked on their way into the ring (`rvgpu_submit`); a
    /// kernel-mode queue decodes them into its command buffer.
    pub(crate) fn submit_packets<P: Packets + ?Sized>(
        &mut self,
        batch: &P,
    ) -> Result<u64, SubmitError> {
        let r = match &mut self.queue {
            Some(AnyQueue::User(q)) => q.submit_packets(batch),
            Some(AnyQueue::Kernel(q)) => match batch.commands() {
                Ok(cmds) => q.submit(&cmds),
                Err(_) => Err(SubmitError::BadCommand),
            },
            None => Err(SubmitError::Lost),
        };
        // A queue reports its loss with an error: a submission that went in changes nothing.
        if r.is_ok() && !self.lost {
            return r;
        }
        self.note(r)
    }

    /// What to wait on for `value`. Once the queue is lost only values seen complete before
    /// the loss are done; any other is `Lost`, never reported as complete.
    pub(crate) fn target(&mut self, value: u64) -> Result<Option<(KmtHandle, u64)>, SubmitError> {
        let r = self.wait_target(value);
        self.note(r)
    }

    /// After a wait for `value` returned: whether it completed, or the wait ended because the
    /// OS signalled the lost device's fence to the maximum (`Lost`).
    pub(crate) fn confirm(&mut self, value: u64) -> Result<(), SubmitError> {
        self.target(value).map(|_| ())
    }

    /// The queue's counters now.
    pub(crate) fn state(&mut self) -> QueueState {
        let _ = self.note(Ok(()));
        let doorbell = match &self.queue {
            Some(AnyQueue::User(q)) => match q.doorbell_status() {
                Some(s) => raw_status(s),
                // A lost queue's doorbell, destroyed after the loss: what it said then.
                None if self.lost => q.doorbell_end().map_or(-1, raw_status),
                None => -1,
            },
            _ => -1,
        };
        let (submitted, mut completed, kernel_mode, queue_id) = match &self.queue {
            Some(AnyQueue::User(q)) => (
                q.last_submitted(),
                q.completed(),
                q.path() == SubmissionPath::KernelMode,
                q.queue_id(),
            ),
            Some(AnyQueue::Kernel(q)) => (q.last_submitted(), q.completed(), true, q.queue_id()),
            None => (0, 0, false, 0),
        };
        if self.lost {
            // The fence reads the maximum after the loss: only what was seen before is done.
            completed = self.seen;
        }
        QueueState {
            submitted,
            completed,
            kernel_mode,
            lost: self.lost,
            queue_id,
            dropped_log_entries: self.log.dropped(),
            doorbell,
        }
    }

    /// The thunks.
    pub(crate) fn kmt(&self) -> &K {
        &self.kmt
    }

    /// Normal close: waits for the last value (unless lost), then destroys everything. A
    /// second close finds nothing (`Lost`).
    pub(crate) fn close(&mut self) -> Result<(), SubmitError> {
        match self.queue.take() {
            Some(AnyQueue::User(q)) => q.close(),
            Some(AnyQueue::Kernel(q)) => q.close(),
            None => Err(SubmitError::Lost),
        }
    }
}

/// A closed queue's work is over (closing waited for it or it never runs). A lost queue's is
/// done only as far as it was seen complete before the loss (a lock waiting for the rest is
/// `Lost`): its fence reads the maximum whatever ran.
impl<K: Kmt> Timeline for CapiQueue<K> {
    fn timeline_id(&self) -> TimelineId {
        self.timeline
    }
    fn completed(&self) -> u64 {
        match &self.queue {
            Some(_) if self.is_lost() => self.seen,
            Some(AnyQueue::User(q)) => q.completed(),
            Some(AnyQueue::Kernel(q)) => q.completed(),
            None => u64::MAX,
        }
    }
    fn wait_target(&self, value: u64) -> Result<Option<(KmtHandle, u64)>, SubmitError> {
        if self.queue.is_some() && self.is_lost() {
            return if value <= self.seen {
                Ok(None)
            } else {
                Err(SubmitError::Lost)
            };
        }
        match &self.queue {
            Some(AnyQueue::User(q)) => q.wait_target(value),
            Some(AnyQueue::Kernel(q)) => q.wait_target(value),
            None => Ok(None),
        }
    }
    fn retired_flag(&self) -> Option<Arc<AtomicBool>> {
        Some(self.retired.clone())
    }
    fn os_sees_work(&self) -> bool {
        match &self.queue {
            Some(AnyQueue::User(q)) => q.os_sees_work(),
            _ => true,
        }
    }
    fn retain_until(&self, r: &Arc<crate::retain::Retained>, value: u64) -> bool {
        match &self.queue {
            Some(AnyQueue::User(q)) => {
                q.retain_until(r.clone(), value);
                true
            }
            _ => false,
        }
    }
}

impl<K: Kmt> TrackedQueue for CapiQueue<K> {
    fn submit_commands(&mut self, cmds: &[Command]) -> Result<u64, SubmitError> {
        let r = match &mut self.queue {
            Some(AnyQueue::User(q)) => q.submit(cmds),
            Some(AnyQueue::Kernel(q)) => q.submit(cmds),
            None => Err(SubmitError::Lost),
        };
        if r.is_ok() && !self.lost {
            return r;
        }
        self.note(r)
    }
}

/// The raw `D3DDDI_DOORBELLSTATUS` value.
fn raw_status(s: DoorbellStatus) -> i32 {
    match s {
        DoorbellStatus::Connected => 0,
        DoorbellStatus::ConnectedNotify => 1,
        DoorbellStatus::DisconnectedRetry => 2,
        DoorbellStatus::DisconnectedAbort => 3,
        DoorbellStatus::Unknown(x) => x,
    }
}
