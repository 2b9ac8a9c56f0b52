//! The UMD's tracked buffers of a session whose thunks are a [`Kmt`]
//! ([`AllocationUsage`](super::AllocationUsage)): each buffer with its process and the CPU
//! view its lock returned, and the UMD's lock, unlock and destroy on them. The simulated and
//! the D3DKMT session keep theirs here; each supplies its thunks and the timelines (queues) of
//! the buffer's process.

use std::sync::{Mutex, PoisonError};

use rvgpu_umd::kmt::{AllocationCpu, Kmt};
use rvgpu_umd::usage::{Batch, Buffer, LockError, LockFlags, Timeline};

use super::{nth, nth_mut, Failure, LockOutcome, TrackedInfo, TrackedRef, TrackedWork};

/// One tracked buffer.
struct Tracked<M> {
    process: usize,
    /// `None` once destroyed (or its process ended).
    buf: Option<Buffer<M>>,
    /// The view the last lock returned, while locked.
    view: Mutex<Option<M>>,
}

/// A session's tracked buffers, indexed by [`TrackedRef`].
pub(crate) struct TrackedBuffers<M>(Vec<Tracked<M>>);

impl<M> Default for TrackedBuffers<M> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

/// A UMD usage error as a failure.
pub(crate) fn lock_failure(e: LockError) -> Failure {
    Failure::Backend(format!("UMD: {e:?}"))
}

impl<M: AllocationCpu + Clone> TrackedBuffers<M> {
    /// A new buffer of `bytes` bytes for `process`, made with its thunks.
    pub(crate) fn create<K: Kmt<Mem = M>>(
        &mut self,
        kmt: &K,
        process: usize,
        bytes: u64,
    ) -> Result<TrackedRef, Failure> {
        let buf = Buffer::new(kmt, bytes, 0).map_err(lock_failure)?;
        self.0.push(Tracked {
            process,
            buf: Some(buf),
            view: Mutex::new(None),
        });
        Ok(TrackedRef(self.0.len() - 1))
    }

    /// The live buffer `b` and its process.
    pub(crate) fn get(&self, b: TrackedRef) -> Result<(usize, &Buffer<M>), Failure> {
        let t = nth(&self.0, b.0, "tracked buffer")?;
        let buf = t
            .buf
            .as_ref()
            .ok_or_else(|| Failure::Backend(format!("tracked buffer {} destroyed", b.0)))?;
        Ok((t.process, buf))
    }

    /// The live buffer `b` if it belongs to `process` (what a batch of that process may name).
    pub(crate) fn of(&self, process: usize, b: TrackedRef) -> Result<&Buffer<M>, Failure> {
        match self.get(b) {
            Ok((p, buf)) if p == process => Ok(buf),
            _ => Err(Failure::Backend(format!("no tracked buffer {} here", b.0))),
        }
    }

    fn set_view(&self, b: TrackedRef, view: Option<M>) {
        if let Some(t) = self.0.get(b.0) {
            *t.view.lock().unwrap_or_else(PoisonError::into_inner) = view;
        }
    }

    /// Appends `work` to `batch` through the UMD, so that it knows which backing each use
    /// has; `process`: only that process's buffers may be named.
    pub(crate) fn encode<'a>(
        &'a self,
        process: Option<usize>,
        batch: &mut Batch<'a, M>,
        work: &[TrackedWork],
    ) -> Result<(), Failure> {
        let buf = |r: TrackedRef| match process {
            Some(p) => self.of(p, r),
            None => self.get(r).map(|(_, b)| b),
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
        Ok(())
    }

    /// `Buffer::lock` with the thunks and timelines of `b`'s process; the view is kept for
    /// [`read`](Self::read) and [`write`](Self::write).
    pub(crate) fn lock<K: Kmt<Mem = M>>(
        &self,
        b: TrackedRef,
        kmt: &K,
        flags: u32,
        timelines: &[&dyn Timeline],
    ) -> Result<LockOutcome, Failure> {
        let (_, buf) = self.get(b)?;
        Ok(match buf.lock(kmt, LockFlags(flags), timelines) {
            Ok(view) => {
                self.set_view(b, Some(view));
                LockOutcome::Mapped
            }
            Err(LockError::WasStillDrawing) => LockOutcome::WasStillDrawing,
            Err(e) => LockOutcome::Refused(format!("{e:?}")),
        })
    }

    /// The locked view of `b` at `offset`, given to `f`.
    fn with_view<T>(
        &self,
        b: TrackedRef,
        offset: u64,
        f: impl FnOnce(&M) -> T,
    ) -> Result<T, Failure> {
        let (_, buf) = self.get(b)?;
        if !offset.is_multiple_of(8) || offset >= buf.size() {
            return Err(Failure::Backend(format!("offset {offset:#x} out of range")));
        }
        let view = self
            .0
            .get(b.0)
            .map(|t| t.view.lock().unwrap_or_else(PoisonError::into_inner));
        view.as_ref()
            .and_then(|v| v.as_ref())
            .map(f)
            .ok_or_else(|| Failure::Backend(format!("tracked buffer {} not locked", b.0)))
    }

    /// The u64 at `offset` through the locked view.
    pub(crate) fn read(&self, b: TrackedRef, offset: u64) -> Result<u64, Failure> {
        self.with_view(b, offset, |v| v.load(offset))
    }

    /// Stores `value` at `offset` through the locked view.
    pub(crate) fn write(&self, b: TrackedRef, offset: u64, value: u64) -> Result<(), Failure> {
        self.with_view(b, offset, |v| v.store(offset, value))
    }

    /// `Buffer::unlock`; the view goes.
    pub(crate) fn unlock<K: Kmt<Mem = M>>(&self, b: TrackedRef, kmt: &K) -> Result<(), Failure> {
        self.get(b)?.1.unlock(kmt).map_err(lock_failure)?;
        self.set_view(b, None);
        Ok(())
    }

    /// The buffer's backing and counters.
    pub(crate) fn info(&self, b: TrackedRef) -> Result<TrackedInfo, Failure> {
        let (_, buf) = self.get(b)?;
        let s = buf.stats();
        Ok(TrackedInfo {
            gpu_va: buf.gpu_va(),
            renames: s.renames,
            waits: s.waits,
            backings: s.backings,
        })
    }

    /// Takes `b` out to be destroyed (`Buffer::destroy`, with the timelines of its process).
    pub(crate) fn take(&mut self, b: TrackedRef) -> Result<Buffer<M>, Failure> {
        let t = nth_mut(&mut self.0, b.0, "tracked buffer")?;
        *t.view.get_mut().unwrap_or_else(PoisonError::into_inner) = None;
        t.buf
            .take()
            .ok_or_else(|| Failure::Backend(format!("tracked buffer {} destroyed", b.0)))
    }

    /// Forgets the buffers of process `p` (it ended: the OS destroyed them).
    pub(crate) fn drop_process(&mut self, p: usize) {
        for t in self.0.iter_mut().filter(|t| t.process == p) {
            *t.view.get_mut().unwrap_or_else(PoisonError::into_inner) = None;
            t.buf = None;
        }
    }
}
