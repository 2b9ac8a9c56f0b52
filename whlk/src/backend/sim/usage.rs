//! [`AllocationUsage`] on the simulation: the UMD's tracked buffers (`rvgpu_umd::usage`) over
//! the simulated thunks, with the session's own queues as the timelines.

use rvgpu_umd::usage::{Batch, Timeline};

use super::{umd_failure, SimSession};
use crate::backend::tracked::lock_failure;
use crate::backend::umd_queue::timelines_of;
use crate::backend::{
    AllocationUsage, Failure, LockOutcome, ProcessRef, TrackedBatch, TrackedInfo, TrackedRef,
    UmQueueRef, Work,
};
use rvgpu_simos::UmsProcess;

impl SimSession {
    /// Every live queue of process `p`: what may have used its buffers.
    fn timelines(&self, p: usize) -> Vec<&dyn Timeline> {
        timelines_of(self.um_queues.iter().map(|q| (q.process, q.q.as_ref())), p)
    }

    /// Tracked buffer `b`'s process.
    fn tracked_process(&self, b: TrackedRef) -> Result<(usize, UmsProcess), Failure> {
        let p = self.tracked.get(b)?.0;
        Ok((p, self.process(ProcessRef(p))?))
    }
}

impl AllocationUsage for SimSession {
    fn create_tracked(&mut self, p: ProcessRef, bytes: u64) -> Result<TrackedRef, Failure> {
        let up = self.process(p)?;
        self.tracked.create(&self.machine.kmt(&up), p.0, bytes)
    }

    fn submit_tracked(&mut self, q: UmQueueRef, batch: TrackedBatch<'_>) -> Result<u64, Failure> {
        let TrackedBatch { gate, work } = batch;
        let gate = match gate {
            Some((buffer, offset, value)) => self.encode(&[Work::WaitAtLeast {
                buffer,
                offset,
                value,
            }])?,
            None => Vec::new(),
        };
        let mut batch = Batch::new();
        for c in gate {
            batch.command(c);
        }
        self.tracked.encode(None, &mut batch, work)?;
        let sq = self
            .um_queues
            .get_mut(q.0)
            .and_then(|s| s.q.as_mut())
            .ok_or_else(|| Failure::Backend(format!("no live queue {}", q.0)))?;
        let r = sq.submit_batch(batch);
        r.map_err(|e| umd_failure(&self.machine, e))
    }

    fn lock_tracked(&mut self, b: TrackedRef, flags: u32) -> Result<LockOutcome, Failure> {
        let (p, up) = self.tracked_process(b)?;
        let tl = self.timelines(p);
        let out = self.tracked.lock(b, &self.machine.kmt(&up), flags, &tl);
        drop(tl);
        self.check_fault()?;
        out
    }

    fn read_tracked(&self, b: TrackedRef, offset: u64) -> Result<u64, Failure> {
        self.tracked.read(b, offset)
    }

    fn write_tracked(&mut self, b: TrackedRef, offset: u64, value: u64) -> Result<(), Failure> {
        self.tracked.write(b, offset, value)
    }

    fn unlock_tracked(&mut self, b: TrackedRef) -> Result<(), Failure> {
        let (_, up) = self.tracked_process(b)?;
        self.tracked.unlock(b, &self.machine.kmt(&up))
    }

    fn tracked_info(&self, b: TrackedRef) -> Result<TrackedInfo, Failure> {
        self.tracked.info(b)
    }

    fn destroy_tracked(&mut self, b: TrackedRef) -> Result<(), Failure> {
        let (p, up) = self.tracked_process(b)?;
        let buf = self.tracked.take(b)?;
        let tl = self.timelines(p);
        buf.destroy(&self.machine.kmt(&up), &tl)
            .map_err(lock_failure)?;
        drop(tl);
        self.check_fault()
    }
}
