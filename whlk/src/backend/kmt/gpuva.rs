//! [`GpuVaPlacement`] over the D3DKMT thunks: `D3DKMTReserveGpuVirtualAddress`,
//! `D3DKMTMapGpuVirtualAddress` on a paging queue of the process (made on first use, waited
//! on through its fence), `D3DKMTFreeGpuVirtualAddress`, and a FILL at a raw VA through the
//! UMD's queue.

use rvgpu_hw::cmd::Command;
use rvgpu_umd::kmt::{GpuVaProtection, KmtHandle, MapGpuVa, ReserveGpuVa};

use super::{KmtSession, KmtSync};
use crate::backend::{BufferRef, Failure, GpuVaPlacement, ProcessRef, UmQueueRef};

impl<K: KmtSync + Send + Sync + 'static> KmtSession<K> {
    /// Process `process`'s paging queue and its fence, made on first use.
    fn paging_queue(&mut self, process: usize) -> Result<(KmtHandle, KmtHandle), Failure> {
        if let Some(&(_, q, f)) = self.paging_queues.iter().find(|(p, ..)| *p == process) {
            return Ok((q, f));
        }
        let (_, kmt) = self.process(ProcessRef(process))?;
        let q = K::create_paging_queue(&kmt, 0).map_err(|s| self.status(s))?;
        self.paging_queues.push((process, q.handle, q.fence));
        Ok((q.handle, q.fence))
    }
}

impl<K: KmtSync + Send + Sync + 'static> GpuVaPlacement for KmtSession<K> {
    fn reserve_va(&mut self, p: ProcessRef, base: u64, bytes: u64) -> Result<u64, Failure> {
        let (_, kmt) = self.process(p)?;
        let r = ReserveGpuVa {
            base,
            size: bytes,
            ..ReserveGpuVa::default()
        };
        K::reserve_gpu_va(&kmt, &r).map_err(|s| self.status(s))
    }

    fn map_va(
        &mut self,
        b: BufferRef,
        va: u64,
        first_page: u64,
        pages: u64,
    ) -> Result<(), Failure> {
        let (process, handle) = {
            let buf = self.buffer(b)?;
            (buf.process, buf.alloc.handle)
        };
        let (queue, fence) = self.paging_queue(process)?;
        let (_, kmt) = self.process(ProcessRef(process))?;
        let r = MapGpuVa {
            paging_queue: queue,
            base: va,
            allocation: handle,
            offset_in_pages: first_page,
            size_in_pages: pages,
            protection: GpuVaProtection::WRITE,
            ..MapGpuVa::default()
        };
        let mapped = K::map_gpu_va(&kmt, &r).map_err(|s| self.status(s))?;
        // Windows may answer before the paging is done: the mapping is usable once the
        // paging queue's fence reaches the value.
        K::wait_for_fence(&kmt, fence, mapped.paging_fence_value).map_err(|s| self.status(s))
    }

    fn free_va(&mut self, p: ProcessRef, base: u64) -> Result<(), Failure> {
        let (_, kmt) = self.process(p)?;
        K::free_gpu_va(&kmt, base, 0).map_err(|s| self.status(s))
    }

    fn fill_va(&mut self, q: UmQueueRef, va: u64, pattern: u64) -> Result<u64, Failure> {
        let cmd = Command::Fill {
            dst: va,
            bytes: 8,
            pattern,
        };
        let r = self.live_queue(q)?.submit(&[cmd]);
        r.map_err(|e| self.umd(e))
    }
}
