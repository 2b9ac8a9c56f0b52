//! [`GpuVaPlacement`] on the simulation: the GPU VA thunks of the simulated OS
//! through the UMD's `Kmt` trait, one paging queue per process made on first use.

use rvgpu_hw::cmd::Command;
use rvgpu_umd::kmt::{GpuVaProtection, Kmt, MapGpuVa, NtStatus, ReserveGpuVa};

use super::{umd_failure, SimSession};
use crate::backend::{BufferRef, Failure, GpuVaPlacement, ProcessRef, UmQueueRef};

fn ddi(NtStatus(s): NtStatus) -> Failure {
    Failure::DdiFailed(s)
}

impl GpuVaPlacement for SimSession {
    fn reserve_va(&mut self, p: ProcessRef, base: u64, bytes: u64) -> Result<u64, Failure> {
        let up = self.process(p)?;
        let r = ReserveGpuVa {
            base,
            size: bytes,
            ..ReserveGpuVa::default()
        };
        self.machine.kmt(&up).reserve_gpu_va(&r).map_err(ddi)
    }

    fn map_va(
        &mut self,
        b: BufferRef,
        va: u64,
        first_page: u64,
        pages: u64,
    ) -> Result<(), Failure> {
        let handle = self.buffer(b)?.handle;
        let process = *self
            .buffer_process
            .get(b.0)
            .ok_or_else(|| Failure::Backend(format!("no buffer {}", b.0)))?;
        let up = self.process(ProcessRef(process))?;
        let k = self.machine.kmt(&up);
        if !self.paging_queues.iter().any(|(p, _)| *p == process) {
            let q = k.create_paging_queue(0).map_err(ddi)?;
            self.paging_queues.push((process, q));
        }
        let (queue, fence) = self
            .paging_queues
            .iter()
            .find(|(p, _)| *p == process)
            .map(|(_, q)| (q.handle, q.fence))
            .ok_or_else(|| Failure::Backend("no paging queue".into()))?;
        let r = MapGpuVa {
            paging_queue: queue,
            base: va,
            allocation: handle,
            offset_in_pages: first_page,
            size_in_pages: pages,
            protection: GpuVaProtection::WRITE,
            ..MapGpuVa::default()
        };
        let mapped = k.map_gpu_va(&r).map_err(ddi)?;
        // The mapping may be used once the paging fence reaches the value (a UMD's rule).
        k.wait_for_fence(fence, mapped.paging_fence_value)
            .map_err(ddi)
    }

    fn free_va(&mut self, p: ProcessRef, base: u64) -> Result<(), Failure> {
        let up = self.process(p)?;
        self.machine.kmt(&up).free_gpu_va(base, 0).map_err(ddi)
    }

    fn fill_va(&mut self, q: UmQueueRef, va: u64, pattern: u64) -> Result<u64, Failure> {
        let m = self.machine.clone();
        let cmd = Command::Fill {
            dst: va,
            bytes: 8,
            pattern,
        };
        let v = self
            .live_queue(q)?
            .submit(&[cmd])
            .map_err(|e| umd_failure(&m, e))?;
        self.check_fault()?;
        Ok(v)
    }
}
