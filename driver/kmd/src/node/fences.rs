//! A node's fence bookkeeping (TDR-03, TDR-04): its pending submissions in order and the
//! last-submitted, last-completed, preemption and fault fence IDs, independent of ring memory
//! (unit-tested alone; [`super`] describes `S`, `C` and `F`).

use alloc::vec::Vec;

use crate::handle::Handle;
use crate::kmem::{self, NoMemory};
use crate::platform::Platform;
use crate::status::{self, Status};

/// One submission on a node ring, in submission order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pending {
    /// `SubmissionFenceId`.
    pub fence: u32,
    /// Ring position (free-running bytes) of its first word.
    pub start: u64,
    /// Ring position one past its PROGRESS.
    pub end: u64,
    /// `DXGK_SUBMITCOMMANDFLAGS::Paging` (TDR-03, TDR-08).
    pub paging: bool,
    /// The KMD context it was submitted on (`None`: system / null context).
    pub context: Option<Handle>,
}

/// Fixed-capacity FIFO of [`Pending`] (no allocation after construction).
#[derive(Debug)]
pub(super) struct PendingQueue {
    slots: Vec<Pending>,
    head: usize,
    len: usize,
}

impl PendingQueue {
    pub(super) fn try_with_capacity<P: Platform>(n: usize) -> Result<Self, NoMemory> {
        Ok(Self {
            slots: kmem::try_from_fn::<P, _>(n, |_| Pending::default())?,
            head: 0,
            len: 0,
        })
    }

    pub(super) fn capacity(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn is_full(&self) -> bool {
        self.len >= self.capacity()
    }

    pub(super) fn index(&self, i: usize) -> Option<usize> {
        let cap = self.capacity();
        if i >= self.len || cap == 0 {
            return None;
        }
        self.head.checked_add(i)?.checked_rem(cap)
    }

    pub(super) fn get(&self, i: usize) -> Option<&Pending> {
        self.slots.get(self.index(i)?)
    }

    pub(super) fn front(&self) -> Option<&Pending> {
        self.get(0)
    }

    pub(super) fn push(&mut self, p: Pending) -> bool {
        let cap = self.capacity();
        if self.len >= cap {
            return false;
        }
        let Some(i) = self
            .head
            .checked_add(self.len)
            .and_then(|x| x.checked_rem(cap))
        else {
            return false;
        };
        match self.slots.get_mut(i) {
            Some(s) => *s = p,
            None => return false,
        }
        self.len = self.len.saturating_add(1);
        true
    }

    pub(super) fn pop(&mut self) -> Option<Pending> {
        let p = *self.front()?;
        let cap = self.capacity();
        self.head = self
            .head
            .checked_add(1)
            .and_then(|x| x.checked_rem(cap))
            .unwrap_or(0);
        self.len = self.len.saturating_sub(1);
        Some(p)
    }

    pub(super) fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Pending> + '_ {
        (0..self.len).filter_map(move |i| self.get(i))
    }
}

/// The per-node fence bookkeeping of TDR-03/04, independent of ring memory (unit-tested alone).
#[derive(Debug)]
pub struct NodeFences {
    pub(super) pending: PendingQueue,
    /// `S`: last submitted fence ID.
    pub(super) last_submitted: u32,
    /// `C`: last completed fence ID as reported to the OS.
    pub(super) last_completed: u32,
    /// `PreemptionFenceId` awaiting the drain.
    pub(super) preempt: Option<u32>,
    /// The fence ID of the packet the ring faulted on (reported `DmaPageFaulted`), until the
    /// reset: a faulted ring is not executing, so `RESET_QUEUE` does not name it, yet that
    /// packet is the one the reset aborts (TDR-06).
    pub(super) faulted: Option<u32>,
}

/// What one completion did (returned by [`NodeFences::complete`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// `DmaCompleted` to report with this fence ID (`C` advanced to it).
    pub completed: Option<u32>,
    /// `DmaPreempted(PreemptionFenceId, C)` to report (the ring drained).
    pub preempted: Option<(u32, u32)>,
}

impl NodeFences {
    /// Empty bookkeeping with room for `capacity` pending submissions (allocated now, so
    /// that recording a submission never allocates).
    pub fn try_new<P: Platform>(capacity: usize) -> Result<Self, NoMemory> {
        Ok(Self {
            pending: PendingQueue::try_with_capacity::<P>(capacity)?,
            last_submitted: 0,
            last_completed: 0,
            preempt: None,
            faulted: None,
        })
    }

    /// As [`NodeFences::try_new`], for host unit tests.
    #[cfg(test)]
    pub fn new(capacity: usize) -> Self {
        Self::try_new::<kmem::Host>(capacity).unwrap()
    }

    /// The fence ID of the packet the ring faulted on, if it has not been reset since.
    pub fn faulted(&self) -> Option<u32> {
        self.faulted
    }

    /// `S`.
    pub fn last_submitted(&self) -> u32 {
        self.last_submitted
    }

    /// `C`.
    pub fn last_completed(&self) -> u32 {
        self.last_completed
    }

    /// Submissions appended and not completed.
    pub fn pending_count(&self) -> usize {
        self.pending.len
    }

    /// A preemption request waiting for the drain.
    pub fn preempt_pending(&self) -> Option<u32> {
        self.preempt
    }

    /// Checks that `p` may be recorded: fence ID above `S` (the OS assigns increasing IDs;
    /// a resubmission after a reset starts above `LastAbortedFenceId`, which `drain` made `S`)
    /// and room left.
    pub fn check_submit(&self, fence: u32) -> Result<(), Status> {
        if fence <= self.last_submitted {
            return Err(status::INVALID_PARAMETER);
        }
        if self.pending.is_full() {
            return Err(status::INSUFFICIENT_RESOURCES);
        }
        Ok(())
    }

    /// Records an appended submission (`S := p.fence`).
    pub fn submitted(&mut self, p: Pending) -> Result<(), Status> {
        self.check_submit(p.fence)?;
        if !self.pending.push(p) {
            return Err(status::INSUFFICIENT_RESOURCES);
        }
        self.last_submitted = p.fence;
        Ok(())
    }

    /// A PROGRESS of this node wrote `value` (TDR-04): retires the pending submissions up to
    /// it; `C` advances only to an ID that was submitted and is above `C` (a record older than
    /// a reset, or a value never submitted, is stale and ignored).
    pub fn complete(&mut self, value: u64) -> Completion {
        let mut out = Completion::default();
        let Ok(value) = u32::try_from(value) else {
            return out;
        };
        if value <= self.last_completed || value > self.last_submitted {
            return out;
        }
        while self.pending.front().is_some_and(|p| p.fence <= value) {
            let _ = self.pending.pop();
        }
        self.last_completed = value;
        out.completed = Some(value);
        if self.pending.len == 0 {
            if let Some(id) = self.preempt.take() {
                out.preempted = Some((id, self.last_completed));
            }
        }
        out
    }

    /// PreemptCommand: `Some((id, C))` to report at once when nothing is pending; else the
    /// request is stored for the drain (a newer request replaces an older one).
    pub fn preempt(&mut self, id: u32) -> Option<(u32, u32)> {
        if self.pending.len == 0 {
            self.preempt = None;
            Some((id, self.last_completed))
        } else {
            self.preempt = Some(id);
            None
        }
    }

    /// The pending submission whose ring bytes contain `rptr` (free-running position).
    pub fn pending_at(&self, rptr: u64) -> Option<Pending> {
        self.pending
            .iter()
            .find(|p| p.start <= rptr && rptr < p.end)
            .copied()
    }

    /// Pending submissions, oldest first.
    pub fn pending(&self) -> impl Iterator<Item = &Pending> + '_ {
        self.pending.iter()
    }

    /// After a successful ResetEngine (docs/tdr.md#the-kmd step 4): nothing pending, `C := S :=
    /// last_aborted`, no preemption outstanding.
    pub fn reset_to(&mut self, last_aborted: u32) {
        self.pending.clear();
        self.last_completed = last_aborted;
        self.last_submitted = last_aborted;
        self.preempt = None;
        self.faulted = None;
    }

    /// After an adapter reset: everything submitted counts as completed, `C := S` (TDR-04).
    pub fn all_completed(&mut self) {
        self.pending.clear();
        self.faulted = None;
        self.last_completed = self.last_submitted;
        self.preempt = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(fence: u32, start: u64, end: u64) -> Pending {
        Pending {
            fence,
            start,
            end,
            paging: false,
            context: None,
        }
    }

    /// TDR-04: C advances only on a PROGRESS of a submitted ID above C; S follows the appends.
    #[test]
    fn tdr_04_last_completed_advances_only_on_completion() {
        let mut f = NodeFences::new(8);
        for id in [5, 6, 9] {
            f.submitted(pending(id, 0, 0)).unwrap();
        }
        assert_eq!((f.last_submitted(), f.last_completed()), (9, 0));
        assert_eq!(f.complete(6).completed, Some(6));
        assert_eq!(f.pending_count(), 1, "5 and 6 retired together");
        assert_eq!(
            f.complete(6),
            Completion::default(),
            "a repeated value is stale"
        );
        assert_eq!(
            f.complete(4),
            Completion::default(),
            "an older value is stale"
        );
        assert_eq!(f.complete(10), Completion::default(), "never submitted");
        assert_eq!(f.complete(u64::from(u32::MAX) + 1), Completion::default());
        assert_eq!(f.last_completed(), 6);
        assert_eq!(f.complete(9).completed, Some(9));
        assert_eq!((f.last_submitted(), f.last_completed()), (9, 9));
    }

    /// TDR-04: fence IDs must increase; a full table refuses without recording.
    #[test]
    fn tdr_04_submission_ids_increase_and_capacity_is_fixed() {
        let mut f = NodeFences::new(2);
        f.submitted(pending(3, 0, 40)).unwrap();
        assert_eq!(
            f.submitted(pending(3, 40, 80)),
            Err(status::INVALID_PARAMETER)
        );
        assert_eq!(
            f.submitted(pending(2, 40, 80)),
            Err(status::INVALID_PARAMETER)
        );
        f.submitted(pending(4, 40, 80)).unwrap();
        assert_eq!(
            f.submitted(pending(5, 80, 120)),
            Err(status::INSUFFICIENT_RESOURCES)
        );
        assert_eq!(f.last_submitted(), 4);
        // Retiring frees a slot; the FIFO wraps inside its fixed storage.
        assert_eq!(f.complete(3).completed, Some(3));
        f.submitted(pending(5, 80, 120)).unwrap();
        let ids: Vec<u32> = f.pending().map(|p| p.fence).collect();
        assert_eq!(ids, vec![4, 5]);
    }

    /// TDR-04/TDR-06: after ResetEngine C = S = LastAborted (the OS resubmits above it, paging
    /// packets with their original IDs); after an adapter reset C = S.
    #[test]
    fn tdr_04_reset_engine_and_adapter_reset_set_last_completed() {
        let mut f = NodeFences::new(8);
        for id in 1..=4 {
            f.submitted(pending(id, 0, 0)).unwrap();
        }
        f.complete(1);
        f.reset_to(2);
        assert_eq!(
            (f.last_submitted(), f.last_completed(), f.pending_count()),
            (2, 2, 0)
        );
        f.submitted(pending(3, 0, 0)).unwrap();
        f.submitted(pending(4, 0, 0)).unwrap();
        assert_eq!(f.complete(3).completed, Some(3));
        f.all_completed();
        assert_eq!(
            (f.last_submitted(), f.last_completed(), f.pending_count()),
            (4, 4, 0)
        );
    }

    /// TDR-05 preemption is a drain: reported at once when idle, else when the ring drains,
    /// with the last completed ID.
    #[test]
    fn tdr_05_preemption_reports_after_drain() {
        let mut f = NodeFences::new(8);
        assert_eq!(f.preempt(50), Some((50, 0)), "idle: at once");
        f.submitted(pending(1, 0, 0)).unwrap();
        f.submitted(pending(2, 0, 0)).unwrap();
        assert_eq!(f.preempt(51), None);
        assert_eq!(f.preempt_pending(), Some(51));
        let c = f.complete(1);
        assert_eq!((c.completed, c.preempted), (Some(1), None));
        let c = f.complete(2);
        assert_eq!((c.completed, c.preempted), (Some(2), Some((51, 2))));
        assert_eq!(f.preempt_pending(), None);
        f.submitted(pending(3, 0, 0)).unwrap();
        f.preempt(52);
        f.reset_to(3);
        assert_eq!(f.preempt_pending(), None, "a reset drops the request");
    }
}
