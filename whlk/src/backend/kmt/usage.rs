//! [`AllocationUsage`] over D3DKMT: the UMD's tracked buffers (`rvgpu_umd::usage::Buffer`:
//! `D3DKMTCreateAllocation2`, `D3DKMTLock2`/`D3DKMTUnlock2`, `D3DKMTDestroyAllocation2`, waits
//! on the queues' progress fences), with the session's queues of the buffer's process as the
//! timelines, exactly what an application sees through the UMD. A gate is a GPU wait on the
//! gate word's native fence ([`KmtSession::gate`]), submitted just before the batch on the
//! same queue, which runs in order.

use std::sync::Arc;

use rvgpu_umd::fencelog::Op;
use rvgpu_umd::usage::{Batch, Timeline};

use super::{KmtSession, KmtSync};
use crate::backend::tracked::lock_failure;
use crate::backend::umd_queue::timelines_of;
use crate::backend::{
    AllocationUsage, Failure, LockOutcome, ProcessRef, TrackedBatch, TrackedInfo, TrackedRef,
    UmQueueRef,
};

impl<K: KmtSync + Send + Sync + 'static> KmtSession<K> {
    /// Tracked buffer `b`'s process and its thunks (its mappings end with its device).
    fn tracked_process(&self, b: TrackedRef) -> Result<(usize, Arc<K>), Failure> {
        let p = self.tracked.get(b)?.0;
        Ok((p, self.process(ProcessRef(p))?.1))
    }

    /// Every live queue of process `p`: what may have used its buffers.
    fn timelines(&self, p: usize) -> Vec<&dyn Timeline> {
        timelines_of(self.queues.iter().map(|q| (q.process, q.q.as_ref())), p)
    }
}

impl<K: KmtSync + Send + Sync + 'static> AllocationUsage for KmtSession<K> {
    fn create_tracked(&mut self, p: ProcessRef, bytes: u64) -> Result<TrackedRef, Failure> {
        let (_, kmt) = self.process(p)?;
        self.tracked.create(&*kmt, p.0, bytes)
    }

    fn submit_tracked(&mut self, q: UmQueueRef, batch: TrackedBatch<'_>) -> Result<u64, Failure> {
        let TrackedBatch { gate, work } = batch;
        let process = self.queue(q)?.process;
        let gate = match gate {
            Some((buffer, offset, value)) => Some((self.gate(process, buffer, offset)?, value)),
            None => None,
        };
        let mut batch = Batch::new();
        self.tracked.encode(Some(process), &mut batch, work)?;
        let gate_fence = match gate {
            Some((g, value)) => Some((
                self.gates
                    .get(g)
                    .map(|(_, f)| f)
                    .ok_or_else(|| Failure::Backend("gate lost".into()))?,
                value,
            )),
            None => None,
        };
        let k = super::live_queue(&mut self.queues, q)?;
        let r = gate_fence
            .map_or(Ok(0), |(f, v)| k.submit_ops(&[Op::Wait(f, v)]))
            .and_then(|_| k.submit_batch(batch));
        r.map_err(|e| self.umd(e))
    }

    fn lock_tracked(&mut self, b: TrackedRef, flags: u32) -> Result<LockOutcome, Failure> {
        let (p, kmt) = self.tracked_process(b)?;
        let tl = self.timelines(p);
        let out = self.tracked.lock(b, &*kmt, flags, &tl);
        drop(tl);
        self.check_fault()?;
        out
    }

    fn read_tracked(&self, b: TrackedRef, offset: u64) -> Result<u64, Failure> {
        self.tracked_process(b)?;
        self.tracked.read(b, offset)
    }

    fn write_tracked(&mut self, b: TrackedRef, offset: u64, value: u64) -> Result<(), Failure> {
        self.tracked_process(b)?;
        self.tracked.write(b, offset, value)
    }

    fn unlock_tracked(&mut self, b: TrackedRef) -> Result<(), Failure> {
        let (_, kmt) = self.tracked_process(b)?;
        self.tracked.unlock(b, &*kmt)
    }

    fn tracked_info(&self, b: TrackedRef) -> Result<TrackedInfo, Failure> {
        self.tracked_process(b)?;
        self.tracked.info(b)
    }

    fn destroy_tracked(&mut self, b: TrackedRef) -> Result<(), Failure> {
        let (p, kmt) = self.tracked_process(b)?;
        let buf = self.tracked.take(b)?;
        let tl = self.timelines(p);
        let r = buf.destroy(&*kmt, &tl).map_err(lock_failure);
        drop(tl);
        r?;
        self.check_fault()
    }
}
