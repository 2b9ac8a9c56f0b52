//! The Rust UMD as the seam's primitive ([`AppUmd`]): the tracked buffers of
//! `rvgpu_umd::usage` (`D3DKMTCreateAllocation2`, `D3DKMTLock2`/`D3DKMTUnlock2`,
//! `D3DKMTDestroyAllocation2`, waits on the queues' progress fences) with the session's queues
//! of the buffer's process as the timelines, the UMD's queues, and the GPU VA thunks
//! (`crate::backend::gpuva`: `D3DKMTReserveGpuVirtualAddress`, `D3DKMTMapGpuVirtualAddress` on
//! a paging queue of the process, `D3DKMTFreeGpuVirtualAddress`). A batch is one submission of
//! the UMD's queue (`submit_ops`) of the operations in order; a fence is a native fence of the
//! process (`kmt/fences`: its thunks), or one another process opened, reached through
//! [`super::remote`]'s requests.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use rvgpu_umd::fencelog::Op;
use rvgpu_umd::kmt::{AllocationCpu, Kmt};
use rvgpu_umd::usage::{Batch, Buffer, Timeline};

use super::monitored::{slice, spawn_wait, EVENT_SLICE};
use super::state::{KmtFence, KmtObjects};
use super::{KmtSession, KmtSync};
use crate::backend::app::{AppUmd, QueueOp, Waiter};
use crate::backend::gpuva::reserve;
use crate::backend::tracked::{lock_failure, umd_info, umd_lock};
use crate::backend::umd_queue::timelines_of;
use crate::backend::{
    BufferRef, Failure, FenceRef, LockOutcome, Pages, ProcessRef, TrackedInfo, TrackedWork,
    UmQueueRef, WaitResult,
};

impl<K: KmtSync + Send + Sync + 'static> KmtSession<K> {
    /// The other process that holds a fence of process `p` (alive).
    fn remote_of_fence(&self, p: usize) -> Result<Arc<super::remote::RemoteProcess>, Failure> {
        self.remote_arc(p)?
            .ok_or_else(|| Failure::Backend(format!("process {p}'s fence: the process has ended")))
    }

    /// Process `p`'s thunks (its mappings end with its device).
    fn thunks(&self, p: usize) -> Result<Arc<K>, Failure> {
        Ok(self.process(ProcessRef(p))?.1)
    }

    /// Every live queue of process `p`: what may have used its buffers.
    fn timelines(&self, p: usize) -> Vec<&dyn Timeline> {
        timelines_of(self.queues.iter().map(|q| (q.process, q.q.as_ref())), p)
    }
}

impl<K: KmtSync + Send + Sync + 'static> AppUmd for KmtSession<K> {
    type Buffer = Buffer<K::Mem>;
    type View = K::Mem;
    type Fence = KmtFence;
    type Event = Waiter;

    fn objects(&self) -> &KmtObjects<K> {
        &self.app
    }

    fn objects_mut(&mut self) -> &mut KmtObjects<K> {
        &mut self.app
    }

    fn check_halt(&self) -> Result<(), Failure> {
        self.check_fault()
    }

    fn buffer_create(&self, p: usize, bytes: u64) -> Result<(Self::Buffer, u64), Failure> {
        let buf = Buffer::new(&*self.thunks(p)?, bytes, 0).map_err(lock_failure)?;
        let size = buf.size();
        Ok((buf, size))
    }

    fn buffer_lock(
        &self,
        p: usize,
        b: &Self::Buffer,
        flags: u32,
    ) -> Result<Result<K::Mem, LockOutcome>, Failure> {
        let kmt = self.thunks(p)?;
        Ok(umd_lock(b, &*kmt, flags, &self.timelines(p)))
    }

    fn view_load(view: &K::Mem, offset: u64) -> u64 {
        view.load(offset)
    }

    fn view_store(view: &K::Mem, offset: u64, value: u64) {
        view.store(offset, value);
    }

    fn buffer_unlock(&self, p: usize, b: &Self::Buffer) -> Result<(), Failure> {
        b.unlock(&*self.thunks(p)?).map_err(lock_failure)
    }

    fn buffer_status(&self, p: usize, b: &Self::Buffer) -> Result<TrackedInfo, Failure> {
        self.thunks(p)?;
        Ok(umd_info(b))
    }

    fn buffer_destroy(&self, p: usize, b: Self::Buffer) -> Result<(), Failure> {
        let kmt = self.thunks(p)?;
        b.destroy(&*kmt, &self.timelines(p)).map_err(lock_failure)
    }

    /// One batch through the UMD, so that it knows which backing each use has.
    fn buffer_work(&mut self, q: UmQueueRef, work: &[TrackedWork]) -> Result<u64, Failure> {
        let process = self.queue(q)?.process;
        let mut batch = Batch::new();
        self.app.tracked.encode(Some(process), &mut batch, work)?;
        let r = super::live_queue(&mut self.queues, q)?.submit_batch(batch);
        r.map_err(|e| self.umd(e))
    }

    fn buffer_process(&self, b: BufferRef) -> Result<usize, Failure> {
        Ok(self.buffer(b)?.process)
    }

    fn gpu_address(&self, b: BufferRef, offset: u64, bytes: u64) -> Result<u64, Failure> {
        self.address(b, offset, bytes)
    }

    /// Another process's buffer: forwarded to it.
    fn word_load(&self, b: BufferRef, offset: u64) -> Result<u64, Failure> {
        self.address(b, offset, 8)?;
        let buf = self.buffer(b)?;
        match &buf.alloc {
            Some(a) => Ok(a.mem.load(offset)),
            None => self.remote_of_buffer(buf)?.read(b.0, offset),
        }
    }

    /// Another process's buffer: forwarded to it.
    fn word_store(&mut self, b: BufferRef, offset: u64, value: u64) -> Result<(), Failure> {
        self.address(b, offset, 8)?;
        let buf = self.buffer(b)?;
        match &buf.alloc {
            Some(a) => {
                a.mem.store(offset, value);
                Ok(())
            }
            None => self.remote_of_buffer(buf)?.write(b.0, offset, value),
        }
    }

    fn fence_create(&self, p: usize, initial: u64, shareable: bool) -> Result<KmtFence, Failure> {
        let kmt = self.thunks(p)?;
        if shareable {
            kmt.create_shareable_native_fence(initial)
        } else {
            kmt.create_native_fence(initial)
        }
        .map(KmtFence::Here)
        .map_err(|s| self.status(s))
    }

    /// `D3DKMTShareObjects` in the holder's process (this program or another), the machine's
    /// `DuplicateHandle` from the holder's table into `p`'s, `D3DKMTOpenNativeFenceFromNtHandle`
    /// there, each NT handle closed by the process that holds it.
    fn fence_open(
        &self,
        holder: usize,
        f: &KmtFence,
        p: usize,
        id: FenceRef,
    ) -> Result<KmtFence, Failure> {
        let theirs = match f {
            KmtFence::Here(n) => {
                let hk = self.thunks(holder)?;
                let mine = hk.share_native_fence(n.kmt).map_err(|s| self.status(s))?;
                let theirs = self.machine.duplicate_nt_handle(holder, mine, p);
                let _ = hk.close_nt_handle(mine);
                theirs?
            }
            KmtFence::There(fid) => {
                let r = self.remote_of_fence(holder)?;
                let its = r.share_fence(*fid)?;
                let theirs = self.machine.duplicate_nt_handle(holder, its, p);
                let _ = r.close_nt_handle(its);
                theirs?
            }
        };
        if let Some(r) = self.remote_arc(p)? {
            // The other process knows the fence by the seam's number for it.
            return r.open_fence(id.0, theirs).map(|()| KmtFence::There(id.0));
        }
        let kmt = self.thunks(p)?;
        let umd = kmt.open_native_fence(theirs);
        let _ = kmt.close_nt_handle(theirs);
        umd.map(KmtFence::Here).map_err(|s| self.status(s))
    }

    fn fence_destroy(&self, p: usize, f: &KmtFence) -> Result<(), Failure> {
        match f {
            KmtFence::There(id) => self.remote_of_fence(p)?.destroy_fence(*id),
            KmtFence::Here(f) => {
                let kmt = self.thunks(p)?;
                kmt.destroy_native_fence(f.kmt).map_err(|s| self.status(s))
            }
        }
    }

    fn fence_cpu_wait(
        &self,
        p: usize,
        f: &KmtFence,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        let r = match f {
            KmtFence::There(id) => Ok(self.remote_of_fence(p)?.wait_fence(*id, value, timeout)?),
            KmtFence::Here(f) => self.thunks(p)?.wait_timeout(f.kmt, value, timeout),
        };
        self.wait_result(r)
    }

    fn fence_signal(&self, p: usize, f: &KmtFence, value: u64) -> Result<(), Failure> {
        match f {
            KmtFence::There(id) => self.remote_of_fence(p)?.signal_fence(*id, value),
            KmtFence::Here(f) => {
                let kmt = self.thunks(p)?;
                kmt.signal_from_cpu(f.kmt, value)
                    .map_err(|s| self.status(s))
            }
        }
    }

    fn fence_wait_event(
        &self,
        p: usize,
        f: &KmtFence,
        value: u64,
        stop: &Arc<AtomicBool>,
    ) -> Result<Waiter, Failure> {
        match f {
            KmtFence::There(id) => {
                let (r, id) = (self.remote_of_fence(p)?, *id);
                Ok(spawn_remote_wait(r, id, value, stop))
            }
            KmtFence::Here(f) => Ok(spawn_wait(self.thunks(p)?, f.kmt, value, stop)),
        }
    }

    fn event_poll(&self, e: &Waiter, timeout: Duration) -> Option<WaitResult> {
        e.result(timeout)
    }

    fn queue_process(&self, q: UmQueueRef) -> Result<usize, Failure> {
        Ok(self.queue(q)?.process)
    }

    /// One `submit_ops` of the operations; on another process's queue, its packets.
    fn batch(&mut self, q: UmQueueRef, ops: &[QueueOp]) -> Result<u64, Failure> {
        if let Some(r) = self.remote_queue(q)? {
            let mut cmds = Vec::with_capacity(ops.len());
            for op in ops {
                match *op {
                    QueueOp::Cmd(c) => cmds.push(c),
                    QueueOp::Wait(..) | QueueOp::Signal(..) => {
                        return Err(Failure::Unsupported(
                            "a GPU fence operation, in another process (its fence is one \
                             this program would have to share)"
                                .into(),
                        ))
                    }
                }
            }
            return r.submit(q.0, &cmds);
        }
        let app = &self.app;
        let mut umd: Vec<Op<'_>> = Vec::with_capacity(ops.len());
        for op in ops {
            umd.push(match *op {
                QueueOp::Wait(f, v) => Op::Wait(app.fence(f)?.here()?, v),
                QueueOp::Cmd(c) => Op::Cmd(c),
                QueueOp::Signal(f, v) => Op::Signal(app.fence(f)?.here()?, v),
            });
        }
        let r = super::live_queue(&mut self.queues, q)?.submit_ops(&umd);
        drop(umd);
        r.map_err(|e| self.umd(e))
    }

    fn va_reserve(&self, p: ProcessRef, base: u64, bytes: u64) -> Result<u64, Failure> {
        reserve(&*self.thunks(p.0)?, base, bytes).map_err(|s| self.status(s))
    }

    fn va_map(&mut self, b: BufferRef, pages: Pages, va: u64) -> Result<(), Failure> {
        let (process, handle) = {
            let buf = self.buffer(b)?;
            (buf.process, buf.local()?.handle)
        };
        let kmt = self.thunks(process)?;
        let r = (self.paging_queues).map(&*kmt, process, handle, va, pages.first, pages.count);
        r.map_err(|s| self.status(s))
    }

    fn va_free(&self, p: ProcessRef, base: u64, bytes: u64) -> Result<(), Failure> {
        let kmt = self.thunks(p.0)?;
        kmt.free_gpu_va(base, bytes).map_err(|s| self.status(s))
    }
}

/// [`spawn_wait`](super::monitored::spawn_wait) for a fence another process opened: each slice one wait request to it.
pub(super) fn spawn_remote_wait(
    r: Arc<super::remote::RemoteProcess>,
    id: usize,
    value: u64,
    stop: &Arc<AtomicBool>,
) -> Waiter {
    Waiter::spawn(stop, move || slice(r.wait_fence(id, value, EVENT_SLICE)))
}
