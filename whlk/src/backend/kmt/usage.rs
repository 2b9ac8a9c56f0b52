//! [`AllocationUsage`] over D3DKMT: the UMD's tracked buffers (`rvgpu_umd::usage::Buffer`:
//! `D3DKMTCreateAllocation2`, `D3DKMTLock2`/`D3DKMTUnlock2`, `D3DKMTDestroyAllocation2`, waits
//! on the queues' progress fences), with the session's queues of the buffer's process as the
//! timelines, exactly what an application sees through the UMD. A gate is a GPU wait on the
//! gate word's native fence ([`KmtSession::gate`]), submitted just before the batch on the
//! same queue, which runs in order.

use rvgpu_umd::fencelog::Op;
use rvgpu_umd::kmt::{AllocationCpu, Kmt};
use rvgpu_umd::usage::{self, Batch, Buffer, LockError, LockFlags, Timeline};

use super::{KQueue, KmtSession, KmtSync};
use crate::backend::{
    AllocationUsage, BufferRef, Failure, LockOutcome, ProcessRef, TrackedInfo, TrackedRef,
    TrackedWork, UmQueueRef,
};

/// One tracked buffer of a session.
pub(super) struct KTracked<K: Kmt> {
    process: usize,
    /// `None` once destroyed.
    buf: Option<Buffer<K::Mem>>,
    /// The view the last lock returned, while locked.
    view: Option<K::Mem>,
}

fn lock_failure(e: LockError) -> Failure {
    Failure::Backend(format!("UMD: {e:?}"))
}

impl<K: KmtSync + Send + Sync + 'static> KmtSession<K> {
    fn tracked(&self, b: TrackedRef) -> Result<(&KTracked<K>, &Buffer<K::Mem>), Failure> {
        let t = self
            .tracked
            .get(b.0)
            .ok_or_else(|| Failure::Backend(format!("no tracked buffer {}", b.0)))?;
        let buf = t
            .buf
            .as_ref()
            .ok_or_else(|| Failure::Backend(format!("tracked buffer {} destroyed", b.0)))?;
        // Its mappings end with its device.
        self.process(ProcessRef(t.process))?;
        Ok((t, buf))
    }

    /// Every live queue of process `p`: what may have used its buffers.
    fn timelines(&self, p: usize) -> Vec<&dyn Timeline> {
        self.queues
            .iter()
            .filter(|q| q.process == p)
            .filter_map(|q| q.q.as_ref())
            .map(|q| match q {
                KQueue::User(u) => &**u as &dyn Timeline,
                KQueue::Kernel(k) => k as &dyn Timeline,
            })
            .collect()
    }

    fn tracked_view(&self, b: TrackedRef, offset: u64) -> Result<&K::Mem, Failure> {
        let (t, buf) = self.tracked(b)?;
        if !offset.is_multiple_of(8) || offset >= buf.size() {
            return Err(Failure::Backend(format!("offset {offset:#x} out of range")));
        }
        t.view
            .as_ref()
            .ok_or_else(|| Failure::Backend(format!("tracked buffer {} not locked", b.0)))
    }

    /// Forgets the tracked buffers of process `p` (it ended: the OS destroyed them).
    pub(super) fn drop_tracked_of(&mut self, p: usize) {
        for t in self.tracked.iter_mut().filter(|t| t.process == p) {
            t.view = None;
            t.buf = None;
        }
    }
}

impl<K: KmtSync + Send + Sync + 'static> AllocationUsage for KmtSession<K> {
    fn create_tracked(&mut self, p: ProcessRef, bytes: u64) -> Result<TrackedRef, Failure> {
        let (_, kmt) = self.process(p)?;
        let buf = Buffer::new(&*kmt, bytes, 0).map_err(lock_failure)?;
        self.tracked.push(KTracked {
            process: p.0,
            buf: Some(buf),
            view: None,
        });
        Ok(TrackedRef(self.tracked.len() - 1))
    }

    fn submit_tracked(
        &mut self,
        q: UmQueueRef,
        gate: Option<(BufferRef, u64, u64)>,
        work: &[TrackedWork],
    ) -> Result<u64, Failure> {
        let process = self.queue(q)?.process;
        let gate = match gate {
            Some((buffer, offset, value)) => Some((self.gate(process, buffer, offset)?, value)),
            None => None,
        };
        let mut batch = Batch::new();
        let tracked = &self.tracked;
        let buf = |r: TrackedRef| -> Result<&Buffer<K::Mem>, Failure> {
            tracked
                .get(r.0)
                .filter(|t| t.process == process)
                .and_then(|t| t.buf.as_ref())
                .ok_or_else(|| Failure::Backend(format!("no tracked buffer {} here", r.0)))
        };
        for w in work {
            match *w {
                TrackedWork::Fill {
                    dst,
                    offset,
                    bytes,
                    pattern,
                } => batch.fill(buf(dst)?, offset, bytes, pattern),
                TrackedWork::Copy { src, dst, bytes } => {
                    batch.copy(buf(src)?, 0, buf(dst)?, 0, bytes)
                }
            }
            .map_err(lock_failure)?;
        }
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
        let k = self
            .queues
            .get_mut(q.0)
            .and_then(|k| k.q.as_mut())
            .ok_or_else(|| Failure::Backend(format!("queue {} is closed", q.0)))?;
        let r = match k {
            KQueue::User(u) => gate_fence
                .map_or(Ok(0), |(f, v)| u.submit_ops(&[Op::Wait(f, v)]))
                .and_then(|_| usage::submit(&mut **u, batch)),
            KQueue::Kernel(k) => gate_fence
                .map_or(Ok(0), |(f, v)| k.submit_ops(&[Op::Wait(f, v)]))
                .and_then(|_| usage::submit(k, batch)),
        };
        r.map_err(|e| self.umd(e))
    }

    fn lock_tracked(&mut self, b: TrackedRef, flags: u32) -> Result<LockOutcome, Failure> {
        let (t, buf) = self.tracked(b)?;
        let (_, kmt) = self.process(ProcessRef(t.process))?;
        let tl = self.timelines(t.process);
        let r = buf.lock(&*kmt, LockFlags(flags), &tl);
        drop(tl);
        let out = match r {
            Ok(view) => {
                if let Some(t) = self.tracked.get_mut(b.0) {
                    t.view = Some(view);
                }
                LockOutcome::Mapped
            }
            Err(LockError::WasStillDrawing) => LockOutcome::WasStillDrawing,
            Err(e) => LockOutcome::Refused(format!("{e:?}")),
        };
        match self.machine.fault() {
            Some(f) => Err(f),
            None => Ok(out),
        }
    }

    fn read_tracked(&self, b: TrackedRef, offset: u64) -> Result<u64, Failure> {
        Ok(self.tracked_view(b, offset)?.load(offset))
    }

    fn write_tracked(&mut self, b: TrackedRef, offset: u64, value: u64) -> Result<(), Failure> {
        self.tracked_view(b, offset)?.store(offset, value);
        Ok(())
    }

    fn unlock_tracked(&mut self, b: TrackedRef) -> Result<(), Failure> {
        let (t, buf) = self.tracked(b)?;
        let (_, kmt) = self.process(ProcessRef(t.process))?;
        buf.unlock(&*kmt).map_err(lock_failure)?;
        if let Some(t) = self.tracked.get_mut(b.0) {
            t.view = None;
        }
        Ok(())
    }

    fn tracked_info(&self, b: TrackedRef) -> Result<TrackedInfo, Failure> {
        let (_, buf) = self.tracked(b)?;
        let s = buf.stats();
        Ok(TrackedInfo {
            gpu_va: buf.gpu_va(),
            renames: s.renames,
            waits: s.waits,
            backings: s.backings,
        })
    }

    fn destroy_tracked(&mut self, b: TrackedRef) -> Result<(), Failure> {
        let p = self.tracked(b)?.0.process;
        let (_, kmt) = self.process(ProcessRef(p))?;
        let t = self
            .tracked
            .get_mut(b.0)
            .ok_or_else(|| Failure::Backend(format!("no tracked buffer {}", b.0)))?;
        t.view = None;
        let buf = t
            .buf
            .take()
            .ok_or_else(|| Failure::Backend(format!("tracked buffer {} destroyed", b.0)))?;
        let tl = self.timelines(p);
        let r = buf.destroy(&*kmt, &tl).map_err(lock_failure);
        drop(tl);
        r?;
        match self.machine.fault() {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }
}
