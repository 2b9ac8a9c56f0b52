//! Tracked buffers ([`AllocationUsage`](super::AllocationUsage)) as a session keeps them: each
//! buffer with its process, its size and the CPU view its lock returned ([`TrackedTable`],
//! whatever the UMD's buffer is), and the Rust UMD's lock, unlock and destroy on
//! [`TrackedBuffers`], the table of `rvgpu_umd::usage::Buffer`s over any thunks ([`Kmt`]).
//! The simulated and the D3DKMT session keep the Rust UMD's; the DLL backend keeps its
//! `RvgpuBuffer*` handles in the same table.

use std::sync::{Mutex, PoisonError};

use rvgpu_umd::kmt::{AllocationCpu, Kmt};
use rvgpu_umd::usage::{Batch, Buffer, LockError, LockFlags, Timeline};

use super::{nth, nth_mut, Failure, LockOutcome, TrackedInfo, TrackedRef, TrackedWork};

/// One tracked buffer.
struct Tracked<B, V> {
    process: usize,
    size: u64,
    /// `None` once destroyed (or its process ended).
    buf: Option<B>,
    /// The view the last lock returned, while locked.
    view: Mutex<Option<V>>,
}

/// A session's tracked buffers `B` (with lock views `V`), indexed by [`TrackedRef`].
pub(crate) struct TrackedTable<B, V>(Vec<Tracked<B, V>>);

/// The Rust UMD's tracked buffers over thunks whose memory is `M`.
pub(crate) type TrackedBuffers<M> = TrackedTable<Buffer<M>, M>;

impl<B, V> Default for TrackedTable<B, V> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

/// A UMD usage error as a failure.
pub(crate) fn lock_failure(e: LockError) -> Failure {
    Failure::Backend(format!("UMD: {e:?}"))
}

impl<B, V> TrackedTable<B, V> {
    /// Adds `buf`, `size` bytes, of `process`.
    pub(crate) fn push(&mut self, process: usize, size: u64, buf: B) -> TrackedRef {
        self.0.push(Tracked {
            process,
            size,
            buf: Some(buf),
            view: Mutex::new(None),
        });
        TrackedRef(self.0.len() - 1)
    }

    /// The live buffer `b` and its process.
    pub(crate) fn get(&self, b: TrackedRef) -> Result<(usize, &B), Failure> {
        let t = nth(&self.0, b.0, "tracked buffer")?;
        let buf = t
            .buf
            .as_ref()
            .ok_or_else(|| Failure::Backend(format!("tracked buffer {} destroyed", b.0)))?;
        Ok((t.process, buf))
    }

    /// The live buffer `b` if it belongs to `process` (what a batch of that process may name).
    pub(crate) fn of(&self, process: usize, b: TrackedRef) -> Result<&B, Failure> {
        match self.get(b) {
            Ok((p, buf)) if p == process => Ok(buf),
            _ => Err(Failure::Backend(format!("no tracked buffer {} here", b.0))),
        }
    }

    /// Keeps `view` as `b`'s lock (`None`: unlocked).
    pub(crate) fn set_view(&self, b: TrackedRef, view: Option<V>) {
        if let Some(t) = self.0.get(b.0) {
            *t.view.lock().unwrap_or_else(PoisonError::into_inner) = view;
        }
    }

    /// The locked view of `b`, with `offset` checked to be an aligned word inside it, given to
    /// `f`.
    pub(crate) fn with_view<T>(
        &self,
        b: TrackedRef,
        offset: u64,
        f: impl FnOnce(&V) -> T,
    ) -> Result<T, Failure> {
        self.get(b)?;
        let t = nth(&self.0, b.0, "tracked buffer")?;
        if !offset.is_multiple_of(8) || offset.checked_add(8).is_none_or(|e| e > t.size) {
            return Err(Failure::Backend(format!("offset {offset:#x} out of range")));
        }
        let view = t.view.lock().unwrap_or_else(PoisonError::into_inner);
        view.as_ref()
            .map(f)
            .ok_or_else(|| Failure::Backend(format!("tracked buffer {} not locked", b.0)))
    }

    /// Takes `b` out to be destroyed, with its process.
    pub(crate) fn take_with_process(&mut self, b: TrackedRef) -> Result<(usize, B), Failure> {
        let t = nth_mut(&mut self.0, b.0, "tracked buffer")?;
        *t.view.get_mut().unwrap_or_else(PoisonError::into_inner) = None;
        let buf = t
            .buf
            .take()
            .ok_or_else(|| Failure::Backend(format!("tracked buffer {} destroyed", b.0)))?;
        Ok((t.process, buf))
    }

    /// Takes `b` out to be destroyed.
    pub(crate) fn take(&mut self, b: TrackedRef) -> Result<B, Failure> {
        self.take_with_process(b).map(|(_, buf)| buf)
    }

    /// Takes out the buffers of process `p`, each with whether it was locked (the process
    /// destroys them as it ends).
    pub(crate) fn take_process(&mut self, p: usize) -> Vec<(B, bool)> {
        let mut out = Vec::new();
        for t in self.0.iter_mut().filter(|t| t.process == p) {
            let locked = t
                .view
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .is_some();
            if let Some(buf) = t.buf.take() {
                out.push((buf, locked));
            }
        }
        out
    }

    /// Forgets the buffers of process `p` (it ended: the OS destroyed them).
    pub(crate) fn drop_process(&mut self, p: usize) {
        drop(self.take_process(p));
    }
}

/// The Rust UMD's `Buffer::lock` of `buf` with the thunks and timelines of its process: the
/// view, or why there is none.
pub(crate) fn umd_lock<M: AllocationCpu + Clone, K: Kmt<Mem = M>>(
    buf: &Buffer<M>,
    kmt: &K,
    flags: u32,
    timelines: &[&dyn Timeline],
) -> Result<M, LockOutcome> {
    buf.lock(kmt, LockFlags(flags), timelines)
        .map_err(|e| match e {
            LockError::WasStillDrawing => LockOutcome::WasStillDrawing,
            e => LockOutcome::Refused(format!("{e:?}")),
        })
}

/// The Rust UMD's backing and counters of `buf`.
pub(crate) fn umd_info<M: AllocationCpu + Clone>(buf: &Buffer<M>) -> TrackedInfo {
    let s = buf.stats();
    TrackedInfo {
        gpu_va: buf.gpu_va(),
        renames: s.renames,
        waits: s.waits,
        backings: s.backings,
    }
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
        Ok(self.push(process, buf.size(), buf))
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
        Ok(match umd_lock(buf, kmt, flags, timelines) {
            Ok(view) => {
                self.set_view(b, Some(view));
                LockOutcome::Mapped
            }
            Err(o) => o,
        })
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
        self.get(b).map(|(_, buf)| umd_info(buf))
    }
}
