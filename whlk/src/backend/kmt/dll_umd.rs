//! rvgpu_umd.dll's C API as the seam's primitive ([`AppUmd`]): tracked buffers are
//! `rvgpu_buffer_*` (locked naming the process's queues, filled and copied with
//! `rvgpu_buffer_fill` / `rvgpu_buffer_copy`, their words read and written through the lock's
//! view), a plain buffer's words through a lock, fences `rvgpu_fence_create` /
//! `rvgpu_fence_signal`, batches `rvgpu_queue_submit` (the gates in its wait list), GPU VAs
//! `rvgpu_va_reserve`, `rvgpu_buffer_map_va` (which waits for the paging fence) and
//! `rvgpu_va_free`.

use rvgpu_hw::cmd::Command;

use super::dll::{status_name, DllSession, LOCK_READ, LOCK_WRITE, OK, WAS_STILL_DRAWING};
use crate::backend::app::{AppObjects, AppUmd, GateWait};
use crate::backend::{
    BufferRef, Failure, LockOutcome, Pages, ProcessRef, TrackedInfo, TrackedWork, UmQueueRef,
};

/// The session's objects of the seam: `RvgpuBuffer*` handles, views as host addresses.
pub(super) type DllObjects = AppObjects<u64, u64, u64>;

impl AppUmd for DllSession {
    type Buffer = u64;
    type View = u64;
    type Fence = u64;

    fn objects(&self) -> &DllObjects {
        &self.app
    }

    fn objects_mut(&mut self) -> &mut DllObjects {
        &mut self.app
    }

    fn check_halt(&self) -> Result<(), Failure> {
        self.fault().map_or(Ok(()), Err)
    }

    fn buffer_create(&self, p: usize, bytes: u64) -> Result<(u64, u64), Failure> {
        let h = self.create_on_adapter(p, "rvgpu_buffer_create", &[bytes])?;
        Ok((h, bytes))
    }

    fn buffer_lock(
        &self,
        p: usize,
        b: &u64,
        flags: u32,
    ) -> Result<Result<u64, LockOutcome>, Failure> {
        let queues = self.queues_of(p);
        let mut data = 0u64;
        let s = self.call(
            p,
            "rvgpu_buffer_lock",
            &[
                *b,
                u64::from(flags),
                queues.as_ptr() as u64,
                queues.len() as u64,
                &raw mut data as u64,
            ],
        )?;
        Ok(match s {
            OK => Ok(data),
            WAS_STILL_DRAWING => Err(LockOutcome::WasStillDrawing),
            s => Err(LockOutcome::Refused(status_name(s).into())),
        })
    }

    fn view_load(view: &u64, offset: u64) -> u64 {
        // SAFETY: the view of a live lock (the DLL's Lock2 mapping, host memory); the table
        // checked `offset` to be an aligned word inside the buffer.
        unsafe { ((*view + offset) as *const u64).read_volatile() }
    }

    fn view_store(view: &u64, offset: u64, value: u64) {
        // SAFETY: as in view_load.
        unsafe { ((*view + offset) as *mut u64).write_volatile(value) }
    }

    fn buffer_unlock(&self, p: usize, b: &u64) -> Result<(), Failure> {
        self.ok(p, "rvgpu_buffer_unlock", &[*b])
    }

    fn buffer_status(&self, p: usize, b: &u64) -> Result<TrackedInfo, Failure> {
        // RvgpuBufferStatus: four u64.
        let mut st = [0u64; 4];
        self.ok(p, "rvgpu_buffer_status", &[*b, st.as_mut_ptr() as u64])?;
        let [gpu_va, renames, waits, backings] = st;
        Ok(TrackedInfo {
            gpu_va,
            renames,
            waits,
            backings: usize::try_from(backings).unwrap_or(usize::MAX),
        })
    }

    fn buffer_destroy(&self, p: usize, b: u64) -> Result<(), Failure> {
        let queues = self.queues_of(p);
        self.ok(
            p,
            "rvgpu_buffer_destroy",
            &[b, queues.as_ptr() as u64, queues.len() as u64],
        )
    }

    /// One `rvgpu_buffer_fill` or `rvgpu_buffer_copy` per use.
    fn buffer_work(&mut self, q: UmQueueRef, work: &[TrackedWork]) -> Result<u64, Failure> {
        let (p, h) = self.queue(q)?;
        let tracked = &self.app.tracked;
        let mut progress = 0u64;
        for w in work {
            match *w {
                TrackedWork::Fill {
                    dst,
                    offset,
                    bytes,
                    pattern,
                } => {
                    let b = *tracked.of(p, dst)?;
                    self.ok(
                        p,
                        "rvgpu_buffer_fill",
                        &[h, b, offset, bytes, pattern, &raw mut progress as u64],
                    )?;
                }
                TrackedWork::Copy { src, dst, bytes } => {
                    let (s, d) = (*tracked.of(p, src)?, *tracked.of(p, dst)?);
                    self.ok(
                        p,
                        "rvgpu_buffer_copy",
                        &[h, s, 0, d, 0, bytes, &raw mut progress as u64],
                    )?;
                }
            }
        }
        Ok(progress)
    }

    fn buffer_process(&self, b: BufferRef) -> Result<usize, Failure> {
        Ok(self.buffer(b)?.process)
    }

    fn gpu_address(&self, b: BufferRef, offset: u64, bytes: u64) -> Result<u64, Failure> {
        self.address(b, offset, bytes)
    }

    /// Through a read lock.
    fn word_load(&self, b: BufferRef, offset: u64) -> Result<u64, Failure> {
        let i = self.word(b, offset)?;
        // SAFETY: the lock's view; word `i` checked inside the buffer.
        self.with_view(b, LOCK_READ, |base, _| unsafe {
            base.add(i).read_volatile()
        })
    }

    /// Through a write lock.
    fn word_store(&mut self, b: BufferRef, offset: u64, value: u64) -> Result<(), Failure> {
        let i = self.word(b, offset)?;
        // SAFETY: the lock's view; word `i` checked inside the buffer.
        self.with_view(b, LOCK_WRITE, |base, _| unsafe {
            base.add(i).write_volatile(value)
        })
    }

    fn fence_create(&self, p: usize, initial: u64) -> Result<u64, Failure> {
        self.create_on_adapter(p, "rvgpu_fence_create", &[initial])
    }

    fn fence_signal(&self, p: usize, f: &u64, value: u64) -> Result<(), Failure> {
        self.ok(p, "rvgpu_fence_signal", &[*f, value])
    }

    fn queue_process(&self, q: UmQueueRef) -> Result<usize, Failure> {
        self.queue(q).map(|(p, _)| p)
    }

    /// One `rvgpu_queue_submit` whose wait list holds the gates' fences.
    fn batch(
        &mut self,
        q: UmQueueRef,
        waits: &[GateWait],
        cmds: &[Command],
    ) -> Result<u64, Failure> {
        let (p, h) = self.queue(q)?;
        let mut fences = Vec::with_capacity(waits.len());
        for &(g, value) in waits {
            let f = (self.app.gates.get(g))
                .ok_or_else(|| Failure::Backend("gate lost".into()))?
                .fence;
            fences.push((f, value));
        }
        self.submit_batch(p, h, cmds, &fences, &[])
    }

    fn va_reserve(&self, p: ProcessRef, base: u64, bytes: u64) -> Result<u64, Failure> {
        self.create_on_adapter(p.0, "rvgpu_va_reserve", &[base, bytes])
    }

    fn va_map(&mut self, b: BufferRef, pages: Pages, va: u64) -> Result<(), Failure> {
        let (p, h) = self.buffer_handle(b)?;
        self.ok(p, "rvgpu_buffer_map_va", &[h, va, pages.first, pages.count])
    }

    fn va_free(&self, p: ProcessRef, base: u64, bytes: u64) -> Result<(), Failure> {
        let (_, adapter) = self.process(p.0)?;
        self.ok(p.0, "rvgpu_va_free", &[adapter, base, bytes])
    }
}
