//! [`AllocationUsage`] through the DLL: buffers locked, filled and copied with the UMD's usage
//! tracking (`rvgpu_buffer_*`), their words read and written through the lock's view.

use super::dll::{status_name, DBuffer, DllSession, OK, WAS_STILL_DRAWING};
use crate::backend::{
    AllocationUsage, Failure, LockOutcome, ProcessRef, TrackedBatch, TrackedInfo, TrackedRef,
    TrackedWork, UmQueueRef,
};

impl AllocationUsage for DllSession {
    fn create_tracked(&mut self, p: ProcessRef, bytes: u64) -> Result<TrackedRef, Failure> {
        let d = self.new_buffer(p, bytes)?;
        self.tracked.push(Some(d));
        Ok(TrackedRef(self.tracked.len() - 1))
    }

    fn submit_tracked(&mut self, q: UmQueueRef, batch: TrackedBatch<'_>) -> Result<u64, Failure> {
        let TrackedBatch { gate, work } = batch;
        let (p, h) = self.queue(q)?;
        if let Some((buffer, offset, value)) = gate {
            let fence = self.gate(p, buffer, offset)?;
            self.submit_batch(p, h, &[], &[(fence, value)], &[])?;
        }
        let mut last = None;
        for w in work {
            let mut progress = 0u64;
            match *w {
                TrackedWork::Fill {
                    dst,
                    offset,
                    bytes,
                    pattern,
                } => {
                    let b = self.tracked_buffer(dst)?.handle;
                    self.ok(
                        p,
                        "rvgpu_buffer_fill",
                        &[h, b, offset, bytes, pattern, &raw mut progress as u64],
                    )?;
                }
                TrackedWork::Copy { src, dst, bytes } => {
                    let (s, d) = (
                        self.tracked_buffer(src)?.handle,
                        self.tracked_buffer(dst)?.handle,
                    );
                    self.ok(
                        p,
                        "rvgpu_buffer_copy",
                        &[h, s, 0, d, 0, bytes, &raw mut progress as u64],
                    )?;
                }
            }
            last = Some(progress);
        }
        last.ok_or_else(|| Failure::Backend("no tracked work to submit".into()))
    }

    fn lock_tracked(&mut self, b: TrackedRef, flags: u32) -> Result<LockOutcome, Failure> {
        let d = self.tracked_buffer(b)?;
        let (p, h) = (d.process, d.handle);
        let queues = self.queues_of(p);
        let mut data = 0u64;
        let s = self.call(
            p,
            "rvgpu_buffer_lock",
            &[
                h,
                u64::from(flags),
                queues.as_ptr() as u64,
                queues.len() as u64,
                &raw mut data as u64,
            ],
        )?;
        match s {
            OK => {
                if let Some(Some(t)) = self.tracked.get_mut(b.0) {
                    t.view = data;
                }
                Ok(LockOutcome::Mapped)
            }
            WAS_STILL_DRAWING => Ok(LockOutcome::WasStillDrawing),
            s => Ok(LockOutcome::Refused(status_name(s).into())),
        }
    }

    fn read_tracked(&self, b: TrackedRef, offset: u64) -> Result<u64, Failure> {
        let p = tracked_word(self.tracked_buffer(b)?, offset)?;
        // SAFETY: the view of the buffer's live lock (the DLL's Lock2 mapping, host memory),
        // `offset` checked inside it and 8-aligned.
        Ok(unsafe { p.read_volatile() })
    }

    fn write_tracked(&mut self, b: TrackedRef, offset: u64, value: u64) -> Result<(), Failure> {
        let p = tracked_word(self.tracked_buffer(b)?, offset)?;
        // SAFETY: as in read_tracked.
        unsafe { p.write_volatile(value) };
        Ok(())
    }

    fn unlock_tracked(&mut self, b: TrackedRef) -> Result<(), Failure> {
        let d = self.tracked_buffer(b)?;
        let (p, h) = (d.process, d.handle);
        self.ok(p, "rvgpu_buffer_unlock", &[h])?;
        if let Some(Some(t)) = self.tracked.get_mut(b.0) {
            t.view = 0;
        }
        Ok(())
    }

    fn tracked_info(&self, b: TrackedRef) -> Result<TrackedInfo, Failure> {
        let d = self.tracked_buffer(b)?;
        // RvgpuBufferStatus: four u64.
        let mut st = [0u64; 4];
        self.ok(
            d.process,
            "rvgpu_buffer_status",
            &[d.handle, st.as_mut_ptr() as u64],
        )?;
        let [gpu_va, renames, waits, backings] = st;
        Ok(TrackedInfo {
            gpu_va,
            renames,
            waits,
            backings: usize::try_from(backings).unwrap_or(usize::MAX),
        })
    }

    fn destroy_tracked(&mut self, b: TrackedRef) -> Result<(), Failure> {
        let d = self.tracked_buffer(b)?;
        let (p, h) = (d.process, d.handle);
        let queues = self.queues_of(p);
        self.ok(
            p,
            "rvgpu_buffer_destroy",
            &[h, queues.as_ptr() as u64, queues.len() as u64],
        )?;
        if let Some(t) = self.tracked.get_mut(b.0) {
            *t = None;
        }
        Ok(())
    }
}

/// The word at `offset` of a locked tracked buffer's view.
pub(super) fn tracked_word(d: &DBuffer, offset: u64) -> Result<*mut u64, Failure> {
    if d.view == 0 {
        return Err(Failure::Backend("the tracked buffer is not locked".into()));
    }
    if !offset.is_multiple_of(8) || offset.checked_add(8).is_none_or(|e| e > d.size) {
        return Err(Failure::Backend(format!(
            "offset {offset:#x} is outside the tracked buffer ({} bytes)",
            d.size
        )));
    }
    Ok((d.view + offset) as *mut u64)
}
