//! [`UserModeSubmission`] on the seam: what a case observes of an application's processes,
//! buffers and queues, written once over [`AppQueues`], the calls each backend makes of its
//! UMD (which on the D3DKMT backend also forward to other processes).

use super::{submit_work, write_word, AppUmd};
use crate::backend::{
    BufferRef, ChurnLane, ChurnReport, DoorbellStatus, Failure, NewQueue, ProcessEnd, ProcessRef,
    UmQueueInfo, UmQueueRef, UserModeSubmission, WaitResult, Work,
};

/// How a wait on a queue's progress ended, as the UMD reports it.
pub(crate) enum QueueWait {
    /// The progress value was reached.
    Reached,
    /// The wait timed out (the OS's wait timeout).
    TimedOut,
    /// The device was removed (`STATUS_DEVICE_REMOVED`, the C API's `DEVICE_LOST`).
    Removed,
    /// Any other failure.
    Failed(Failure),
}

/// The processes and queues of one application's UMD, as the backend calls them. A failed
/// call is already the [`Failure`] the case sees.
pub(crate) trait AppQueues {
    /// Opens a process (its D3D device) on started adapter `i`.
    fn process_open(&mut self, i: usize) -> Result<ProcessRef, Failure>;
    /// Process `p` ends as `how` says, its queues still open.
    fn process_end(&mut self, p: ProcessRef, how: ProcessEnd) -> Result<(), Failure>;
    /// A plain buffer of `bytes` for `p`, zeroed.
    fn plain_create(&mut self, p: ProcessRef, bytes: u64) -> Result<BufferRef, Failure>;
    /// A queue of `p` as `new` describes.
    fn queue_create(&mut self, p: ProcessRef, new: NewQueue) -> Result<UmQueueRef, Failure>;
    /// Waits until queue `q`'s progress reaches `value`.
    fn queue_wait(&mut self, q: UmQueueRef, value: u64) -> Result<QueueWait, Failure>;
    /// The UMD's view of queue `q` (its last one once closed).
    fn queue_status(&self, q: UmQueueRef) -> Result<UmQueueInfo, Failure>;
    /// The UMD closes queue `q`, which keeps its last status.
    fn queue_close(&mut self, q: UmQueueRef) -> Result<(), Failure>;
    /// What the UMD's CPU mapping of queue `q`'s doorbell status page reads (`None`: it has
    /// no doorbell).
    fn queue_doorbell(&self, q: UmQueueRef) -> Result<Option<DoorbellStatus>, Failure>;
    /// Runs `lanes` at the same time, one thread each (step mode: one after another).
    fn churn_lanes(&mut self, lanes: &[ChurnLane]) -> Result<Vec<ChurnReport>, Failure>;
}

impl<S: AppUmd + AppQueues> UserModeSubmission for S {
    fn open_process(&mut self, i: usize) -> Result<ProcessRef, Failure> {
        self.process_open(i)
    }

    fn end_process(&mut self, p: ProcessRef, how: ProcessEnd) -> Result<(), Failure> {
        self.process_end(p, how)
    }

    fn create_buffer(&mut self, p: ProcessRef, bytes: u64) -> Result<BufferRef, Failure> {
        self.plain_create(p, bytes)
    }

    fn read_buffer(&self, b: BufferRef, offset: u64) -> Result<u64, Failure> {
        self.word_load(b, offset)
    }

    /// The store happens and releases the word's gate ([`write_word`]).
    fn write_buffer(&mut self, b: BufferRef, offset: u64, value: u64) -> Result<(), Failure> {
        write_word(self, b, offset, value)
    }

    fn create_queue(&mut self, p: ProcessRef, new: NewQueue) -> Result<UmQueueRef, Failure> {
        self.queue_create(p, new)
    }

    /// A `WaitAtLeast` becomes a GPU wait on its word's gate ([`submit_work`]).
    fn submit(&mut self, q: UmQueueRef, work: &[Work]) -> Result<u64, Failure> {
        submit_work(self, q, work)
    }

    /// A timeout or a removed device that the machine's fault explains is the fault.
    fn wait_progress(&mut self, q: UmQueueRef, value: u64) -> Result<WaitResult, Failure> {
        let w = self.queue_wait(q, value)?;
        if matches!(w, QueueWait::Reached) {
            return Ok(WaitResult::Satisfied);
        }
        self.check_halt()?;
        match w {
            QueueWait::Reached => Ok(WaitResult::Satisfied),
            QueueWait::TimedOut => Ok(WaitResult::TimedOut),
            QueueWait::Removed => Ok(WaitResult::Abandoned),
            QueueWait::Failed(e) => Err(e),
        }
    }

    fn queue_info(&self, q: UmQueueRef) -> Result<UmQueueInfo, Failure> {
        self.queue_status(q)
    }

    fn close_queue(&mut self, q: UmQueueRef) -> Result<(), Failure> {
        self.queue_close(q)
    }

    fn doorbell_status(&self, q: UmQueueRef) -> Result<DoorbellStatus, Failure> {
        self.queue_doorbell(q)?
            .ok_or_else(|| crate::backend::umd_queue::no_doorbell(q))
    }

    fn churn(&mut self, lanes: &[ChurnLane]) -> Result<Vec<ChurnReport>, Failure> {
        self.churn_lanes(lanes)
    }
}
