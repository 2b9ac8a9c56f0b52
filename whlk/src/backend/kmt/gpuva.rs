//! [`GpuVaPlacement`] over the D3DKMT thunks (`crate::backend::gpuva`):
//! `D3DKMTReserveGpuVirtualAddress`, `D3DKMTMapGpuVirtualAddress` on a paging queue of the
//! process (made on first use, waited on through its fence), `D3DKMTFreeGpuVirtualAddress`,
//! and a FILL at a raw VA through the UMD's queue.

use rvgpu_umd::kmt::Kmt;

use super::{KmtSession, KmtSync};
use crate::backend::gpuva::{fill_at, reserve};
use crate::backend::{BufferRef, Failure, GpuVaPlacement, Pages, ProcessRef, UmQueueRef};

impl<K: KmtSync + Send + Sync + 'static> GpuVaPlacement for KmtSession<K> {
    fn reserve_va(&mut self, p: ProcessRef, base: u64, bytes: u64) -> Result<u64, Failure> {
        let (_, kmt) = self.process(p)?;
        reserve(&*kmt, base, bytes).map_err(|s| self.status(s))
    }

    fn map_va(&mut self, b: BufferRef, pages: Pages, va: u64) -> Result<(), Failure> {
        let (process, handle) = {
            let buf = self.buffer(b)?;
            (buf.process, buf.local()?.handle)
        };
        let (_, kmt) = self.process(ProcessRef(process))?;
        let r = (self.paging_queues).map(&*kmt, process, handle, va, pages.first, pages.count);
        r.map_err(|s| self.status(s))
    }

    fn free_va(&mut self, p: ProcessRef, base: u64) -> Result<(), Failure> {
        let (_, kmt) = self.process(p)?;
        kmt.free_gpu_va(base, 0).map_err(|s| self.status(s))
    }

    fn fill_va(&mut self, q: UmQueueRef, va: u64, pattern: u64) -> Result<u64, Failure> {
        let r = self.live_queue(q)?.submit(&[fill_at(va, pattern)]);
        r.map_err(|e| self.umd(e))
    }
}
