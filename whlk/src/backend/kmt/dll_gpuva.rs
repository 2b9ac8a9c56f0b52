//! [`GpuVaPlacement`] through rvgpu_umd.dll's C API: `rvgpu_va_reserve` at the address the
//! case chooses, `rvgpu_buffer_map_va` (which waits for the paging fence), `rvgpu_va_free`,
//! and a write to a raw VA as one FILL packet of `rvgpu_queue_submit`.

use rvgpu_hw::cmd::Command;

use super::dll::DllSession;
use crate::backend::{BufferRef, Failure, GpuVaPlacement, Pages, ProcessRef, UmQueueRef};

impl GpuVaPlacement for DllSession {
    fn reserve_va(&mut self, p: ProcessRef, base: u64, bytes: u64) -> Result<u64, Failure> {
        let va = self.create_on_adapter(p.0, "rvgpu_va_reserve", &[base, bytes])?;
        self.va_ranges.push((p.0, va, bytes));
        Ok(va)
    }

    fn map_va(&mut self, b: BufferRef, pages: Pages, va: u64) -> Result<(), Failure> {
        let (p, h) = self.buffer_handle(b)?;
        self.ok(p, "rvgpu_buffer_map_va", &[h, va, pages.first, pages.count])
    }

    /// The range's size is what its reservation asked for (the C API frees by base and
    /// size).
    fn free_va(&mut self, p: ProcessRef, base: u64) -> Result<(), Failure> {
        let i = self
            .va_ranges
            .iter()
            .position(|&(rp, va, _)| rp == p.0 && va == base)
            .ok_or_else(|| {
                Failure::Backend(format!("process {} reserved no range at {base:#x}", p.0))
            })?;
        let (_, _, bytes) = self.va_ranges.remove(i);
        let (_, adapter) = self.process(p.0)?;
        self.ok(p.0, "rvgpu_va_free", &[adapter, base, bytes])
    }

    fn fill_va(&mut self, q: UmQueueRef, va: u64, pattern: u64) -> Result<u64, Failure> {
        let (p, h) = self.queue(q)?;
        let fill = Command::Fill {
            dst: va,
            bytes: 8,
            pattern,
        };
        self.submit_batch(p, h, &[fill], &[], &[])
    }
}
