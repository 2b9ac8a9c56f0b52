//! The Rust UMD as the seam's primitive ([`AppUmd`]): the tracked buffers of
//! `rvgpu_umd::usage` (`D3DKMTCreateAllocation2`, `D3DKMTLock2`/`D3DKMTUnlock2`,
//! `D3DKMTDestroyAllocation2`, waits on the queues' progress fences) with the session's queues
//! of the buffer's process as the timelines, the UMD's queues, and the GPU VA thunks
//! (`crate::backend::gpuva`: `D3DKMTReserveGpuVirtualAddress`, `D3DKMTMapGpuVirtualAddress` on
//! a paging queue of the process, `D3DKMTFreeGpuVirtualAddress`). A batch is one submission of
//! the UMD's queue with its gates' native-fence waits first; a gate is a native fence of the
//! process, signalled from the CPU by `D3DKMTSignalSynchronizationObjectFromCpu`.

use std::sync::Arc;

use rvgpu_hw::cmd::Command;
use rvgpu_umd::fence::NativeFence;
use rvgpu_umd::fencelog::Op;
use rvgpu_umd::kmt::{AllocationCpu, Kmt};
use rvgpu_umd::usage::{Batch, Buffer, Timeline};

use super::{KmtSession, KmtSync};
use crate::backend::app::{AppObjects, AppUmd, GateWait};
use crate::backend::gpuva::reserve;
use crate::backend::tracked::{lock_failure, umd_info, umd_lock};
use crate::backend::umd_queue::timelines_of;
use crate::backend::{
    BufferRef, Failure, LockOutcome, Pages, ProcessRef, TrackedInfo, TrackedWork, UmQueueRef,
};

/// The session's objects of the seam, over thunks `K`.
pub(super) type KmtObjects<K> = AppObjects<Buffer<<K as Kmt>::Mem>, <K as Kmt>::Mem, NativeFence>;

impl<K: KmtSync + Send + Sync + 'static> KmtSession<K> {
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
    type Fence = NativeFence;

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

    fn word_load(&self, b: BufferRef, offset: u64) -> Result<u64, Failure> {
        self.address(b, offset, 8)?;
        Ok(self.buffer(b)?.local()?.mem.load(offset))
    }

    fn word_store(&mut self, b: BufferRef, offset: u64, value: u64) -> Result<(), Failure> {
        self.address(b, offset, 8)?;
        self.buffer(b)?.local()?.mem.store(offset, value);
        Ok(())
    }

    fn fence_create(&self, p: usize, initial: u64) -> Result<NativeFence, Failure> {
        let kmt = self.thunks(p)?;
        kmt.create_native_fence(initial).map_err(|s| self.status(s))
    }

    fn fence_signal(&self, p: usize, f: &NativeFence, value: u64) -> Result<(), Failure> {
        let kmt = self.thunks(p)?;
        kmt.signal_from_cpu(f.kmt, value)
            .map_err(|s| self.status(s))
    }

    fn queue_process(&self, q: UmQueueRef) -> Result<usize, Failure> {
        Ok(self.queue(q)?.process)
    }

    /// One `submit_ops` of the gates' native-fence waits and the packets.
    fn batch(
        &mut self,
        q: UmQueueRef,
        waits: &[GateWait],
        cmds: &[Command],
    ) -> Result<u64, Failure> {
        let gates = &self.app.gates;
        let mut ops: Vec<Op<'_>> = Vec::with_capacity(waits.len() + cmds.len());
        for &(g, value) in waits {
            let f = gates
                .get(g)
                .map(|g| &g.fence)
                .ok_or_else(|| Failure::Backend("gate lost".into()))?;
            ops.push(Op::Wait(f, value));
        }
        ops.extend(cmds.iter().copied().map(Op::Cmd));
        let r = super::live_queue(&mut self.queues, q)?.submit_ops(&ops);
        drop(ops);
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
