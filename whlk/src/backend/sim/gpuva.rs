//! [`GpuVaPlacement`] on the simulation: the GPU VA thunks of the simulated OS through the
//! UMD's `Kmt` trait (`crate::backend::gpuva`), one paging queue per process made on first
//! use.

use rvgpu_umd::kmt::{Kmt, NtStatus};

use super::{umd_failure, SimSession};
use crate::backend::gpuva::{fill_at, reserve};
use crate::backend::nth;
use crate::backend::{BufferRef, Failure, GpuVaPlacement, Pages, ProcessRef, UmQueueRef};

fn ddi(NtStatus(s): NtStatus) -> Failure {
    Failure::DdiFailed(s)
}

impl GpuVaPlacement for SimSession {
    fn reserve_va(&mut self, p: ProcessRef, base: u64, bytes: u64) -> Result<u64, Failure> {
        reserve(&self.kmt(p)?, base, bytes).map_err(ddi)
    }

    fn map_va(&mut self, b: BufferRef, pages: Pages, va: u64) -> Result<(), Failure> {
        let handle = self.buffer(b)?.handle;
        let process = *nth(&self.buffer_process, b.0, "buffer")?;
        let up = self.process(ProcessRef(process))?;
        let k = self.machine.kmt(&up);
        (self.paging_queues)
            .map(&k, process, handle, va, pages.first, pages.count)
            .map_err(ddi)
    }

    fn free_va(&mut self, p: ProcessRef, base: u64) -> Result<(), Failure> {
        self.kmt(p)?.free_gpu_va(base, 0).map_err(ddi)
    }

    fn fill_va(&mut self, q: UmQueueRef, va: u64, pattern: u64) -> Result<u64, Failure> {
        let m = self.machine.clone();
        let v = self
            .live_queue(q)?
            .submit(&[fill_at(va, pattern)])
            .map_err(|e| umd_failure(&m, e))?;
        self.check_fault()?;
        Ok(v)
    }
}
