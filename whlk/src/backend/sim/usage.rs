//! [`AllocationUsage`] on the simulation: the UMD's tracked buffers (`rvgpu_umd::usage`) over
//! the simulated thunks, with the session's own queues as the timelines.

use rvgpu_simos::kmt::SimMem;
use rvgpu_umd::usage::{self, Batch, Buffer, LockError, LockFlags, Timeline};

use super::{umd_failure, SimSession, UmdQueue};
use crate::backend::{
    AllocationUsage, BufferRef, Failure, LockOutcome, ProcessRef, TrackedInfo, TrackedRef,
    TrackedWork, UmQueueRef, Work,
};

/// One tracked buffer of a session.
pub(super) struct SimTracked {
    process: usize,
    /// `None` once destroyed.
    buf: Option<Buffer<SimMem>>,
    /// The view the last lock returned, while locked.
    view: Option<SimMem>,
}

fn lock_failure(e: LockError) -> Failure {
    Failure::Backend(format!("UMD: {e:?}"))
}

impl SimSession {
    fn tracked(&self, b: TrackedRef) -> Result<(&SimTracked, &Buffer<SimMem>), Failure> {
        let t = self
            .tracked
            .get(b.0)
            .ok_or_else(|| Failure::Backend(format!("no tracked buffer {}", b.0)))?;
        let buf = t
            .buf
            .as_ref()
            .ok_or_else(|| Failure::Backend(format!("tracked buffer {} destroyed", b.0)))?;
        Ok((t, buf))
    }

    /// Every live queue of process `p`: what may have used its buffers.
    fn timelines(&self, p: usize) -> Vec<&dyn Timeline> {
        self.um_queues
            .iter()
            .filter(|q| q.process == p)
            .filter_map(|q| q.q.as_ref())
            .map(|q| match q {
                UmdQueue::User(u) => &**u as &dyn Timeline,
                UmdQueue::Kernel(k) => k as &dyn Timeline,
            })
            .collect()
    }

    fn view(&self, b: TrackedRef, offset: u64) -> Result<&SimMem, Failure> {
        let (t, buf) = self.tracked(b)?;
        if !offset.is_multiple_of(8) || offset >= buf.size() {
            return Err(Failure::Backend(format!("offset {offset:#x} out of range")));
        }
        t.view
            .as_ref()
            .ok_or_else(|| Failure::Backend(format!("tracked buffer {} not locked", b.0)))
    }
}

impl AllocationUsage for SimSession {
    fn create_tracked(&mut self, p: ProcessRef, bytes: u64) -> Result<TrackedRef, Failure> {
        let up = self.process(p)?;
        let buf = Buffer::new(&self.machine.kmt(&up), bytes, 0).map_err(lock_failure)?;
        self.tracked.push(SimTracked {
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
        let buf = |r: TrackedRef| -> Result<&Buffer<SimMem>, Failure> {
            self.tracked
                .get(r.0)
                .and_then(|t| t.buf.as_ref())
                .ok_or_else(|| Failure::Backend(format!("no tracked buffer {}", r.0)))
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
        let sq = self
            .um_queues
            .get_mut(q.0)
            .and_then(|s| s.q.as_mut())
            .ok_or_else(|| Failure::Backend(format!("no live queue {}", q.0)))?;
        let r = match sq {
            UmdQueue::User(u) => usage::submit(&mut **u, batch),
            UmdQueue::Kernel(k) => usage::submit(k, batch),
        };
        r.map_err(|e| umd_failure(&self.machine, e))
    }

    fn lock_tracked(&mut self, b: TrackedRef, flags: u32) -> Result<LockOutcome, Failure> {
        let (t, buf) = self.tracked(b)?;
        let up = *self
            .processes
            .get(t.process)
            .ok_or_else(|| Failure::Backend(format!("no process {}", t.process)))?;
        let tl = self.timelines(t.process);
        let r = buf.lock(&self.machine.kmt(&up), LockFlags(flags), &tl);
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
        self.check_fault()?;
        Ok(out)
    }

    fn read_tracked(&self, b: TrackedRef, offset: u64) -> Result<u64, Failure> {
        use rvgpu_umd::kmt::AllocationCpu;
        Ok(self.view(b, offset)?.load(offset))
    }

    fn write_tracked(&mut self, b: TrackedRef, offset: u64, value: u64) -> Result<(), Failure> {
        use rvgpu_umd::kmt::AllocationCpu;
        self.view(b, offset)?.store(offset, value);
        Ok(())
    }

    fn unlock_tracked(&mut self, b: TrackedRef) -> Result<(), Failure> {
        let (t, buf) = self.tracked(b)?;
        let up = *self
            .processes
            .get(t.process)
            .ok_or_else(|| Failure::Backend(format!("no process {}", t.process)))?;
        buf.unlock(&self.machine.kmt(&up)).map_err(lock_failure)?;
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
        let t = self
            .tracked
            .get_mut(b.0)
            .ok_or_else(|| Failure::Backend(format!("no tracked buffer {}", b.0)))?;
        let (p, buf) = (t.process, t.buf.take());
        t.view = None;
        let buf =
            buf.ok_or_else(|| Failure::Backend(format!("tracked buffer {} destroyed", b.0)))?;
        let up = *self
            .processes
            .get(p)
            .ok_or_else(|| Failure::Backend(format!("no process {p}")))?;
        let tl = self.timelines(p);
        buf.destroy(&self.machine.kmt(&up), &tl)
            .map_err(lock_failure)?;
        drop(tl);
        self.check_fault()
    }
}
