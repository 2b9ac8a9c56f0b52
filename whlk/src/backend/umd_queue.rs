//! A harness queue as the UMD's submission core makes it over a session's thunks: a user-mode
//! queue ([`UserQueue`]) or a kernel-mode one ([`KernelQueue`]). The simulated and the D3DKMT
//! session keep one per queue a case creates.

use std::sync::Arc;

use rvgpu_hw::cmd::Command;
use rvgpu_umd::fencelog::{FenceTrace, Op};
use rvgpu_umd::kmt::{AllocationCpu, DoorbellStatus, Kmt};
use rvgpu_umd::submit::{KernelQueue, SubmissionPath, SubmitError, UserQueue};
use rvgpu_umd::usage::{self, Batch, Timeline};

use super::lanes::queue_config;
use super::{SubmitPath, UmQueueInfo};

/// One queue of the UMD.
pub(crate) enum UmdQueue<K: Kmt> {
    /// Context, hardware queue, ring and doorbell of its own.
    User(Box<UserQueue<K>>),
    /// Submissions through the kernel.
    Kernel(KernelQueue<K>),
}

impl<K: Kmt> UmdQueue<K> {
    /// A queue of `kind` on `node` over `kmt`.
    pub(crate) fn new(kmt: K, node: u32, kind: SubmitPath) -> Result<Self, SubmitError> {
        let cfg = queue_config(node);
        match kind {
            SubmitPath::UserMode => UserQueue::new(kmt, &cfg).map(|q| Self::User(Box::new(q))),
            SubmitPath::KernelMode => KernelQueue::new(kmt, &cfg).map(Self::Kernel),
        }
    }

    /// Submits one batch of commands.
    pub(crate) fn submit(&mut self, cmds: &[Command]) -> Result<u64, SubmitError> {
        match self {
            Self::User(q) => q.submit(cmds),
            Self::Kernel(q) => q.submit(cmds),
        }
    }

    /// Submits one batch of commands and native-fence operations.
    pub(crate) fn submit_ops(&mut self, ops: &[Op<'_>]) -> Result<u64, SubmitError> {
        match self {
            Self::User(q) => q.submit_ops(ops),
            Self::Kernel(q) => q.submit_ops(ops),
        }
    }

    /// Submits a batch the UMD's usage tracking encoded.
    pub(crate) fn submit_batch<M: AllocationCpu + Clone>(
        &mut self,
        batch: Batch<'_, M>,
    ) -> Result<u64, SubmitError> {
        match self {
            Self::User(q) => usage::submit(&mut **q, batch),
            Self::Kernel(q) => usage::submit(q, batch),
        }
    }

    /// Waits until the queue's progress reaches `value`.
    pub(crate) fn wait(&self, value: u64) -> Result<(), SubmitError> {
        match self {
            Self::User(q) => q.wait(value),
            Self::Kernel(q) => q.wait(value),
        }
    }

    /// (last submitted, completed) progress values.
    pub(crate) fn progress(&self) -> (u64, u64) {
        match self {
            Self::User(q) => (q.last_submitted(), q.completed()),
            Self::Kernel(q) => (q.last_submitted(), q.completed()),
        }
    }

    /// Where its "queued" fence events go.
    pub(crate) fn set_fence_trace(&mut self, t: Option<Arc<dyn FenceTrace>>) {
        match self {
            Self::User(q) => q.set_fence_trace(t),
            Self::Kernel(q) => q.set_fence_trace(t),
        }
    }

    /// The queue as a usage-tracking timeline.
    pub(crate) fn timeline_ref(&self) -> &dyn Timeline {
        match self {
            Self::User(q) => &**q,
            Self::Kernel(q) => q,
        }
    }

    /// What the UMD's CPU mapping of the doorbell status page reads (`None`: a kernel-mode
    /// queue, or one whose doorbell is gone).
    pub(crate) fn doorbell_status(&self) -> Option<DoorbellStatus> {
        match self {
            Self::User(q) => q.doorbell_status(),
            Self::Kernel(_) => None,
        }
    }

    /// The UMD's view of the queue (no runlist: the UMD does not see it).
    pub(crate) fn info(&self) -> UmQueueInfo {
        let (path, lost, id, seen) = match self {
            Self::User(q) => (
                match q.path() {
                    SubmissionPath::UserMode => SubmitPath::UserMode,
                    SubmissionPath::KernelMode => SubmitPath::KernelMode,
                },
                q.is_lost(),
                q.queue_id(),
                q.os_sees_work(),
            ),
            Self::Kernel(q) => (SubmitPath::KernelMode, false, q.queue_id(), true),
        };
        let (last_submitted, completed) = self.progress();
        UmQueueInfo {
            path,
            lost,
            last_submitted,
            completed,
            queue_id: id,
            scheduled: None,
            os_sees_work: Some(seen),
        }
    }

    /// The UMD's normal close.
    pub(crate) fn close(self) -> Result<(), SubmitError> {
        match self {
            Self::User(q) => q.close(),
            Self::Kernel(q) => q.close(),
        }
    }
}

/// The timelines of the live queues among `queues` (process, queue) that belong to process
/// `p`: what may have used its buffers.
pub(crate) fn timelines_of<'a, K: Kmt + 'a>(
    queues: impl Iterator<Item = (usize, Option<&'a UmdQueue<K>>)>,
    p: usize,
) -> Vec<&'a dyn Timeline> {
    queues
        .filter(|(owner, _)| *owner == p)
        .filter_map(|(_, q)| q.map(UmdQueue::timeline_ref))
        .collect()
}

/// A queue that has no doorbell to read.
pub(crate) fn no_doorbell(q: super::UmQueueRef) -> super::Failure {
    super::Failure::Backend(format!(
        "queue {} has no doorbell (kernel-mode queue, fallen back, or closed)",
        q.0
    ))
}

/// Takes the queue out of a session's slot (`q`, with the last `info` kept for after) and
/// closes it; the UMD's result.
pub(crate) fn close_slot<K: Kmt>(
    q: &mut Option<UmdQueue<K>>,
    info: &mut UmQueueInfo,
    r: super::UmQueueRef,
) -> Result<Result<(), SubmitError>, super::Failure> {
    let u = q
        .take()
        .ok_or_else(|| super::Failure::Backend(format!("queue {} is closed", r.0)))?;
    *info = u.info();
    Ok(u.close())
}
