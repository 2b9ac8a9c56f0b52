//! GPU virtual addresses a process places itself, over any thunks ([`Kmt`]): what the
//! simulated and the D3DKMT session both do for [`GpuVaPlacement`](super::GpuVaPlacement).
//! Each names the thunks of the process and words a failed call in its own way.

use rvgpu_hw::cmd::Command;
use rvgpu_umd::kmt::{Kmt, KmtHandle, MapGpuVa, NtStatus, ReserveGpuVa};

/// `D3DKMTReserveGpuVirtualAddress` of `bytes` at `base` (0: the OS chooses).
pub(crate) fn reserve<K: Kmt>(kmt: &K, base: u64, bytes: u64) -> Result<u64, NtStatus> {
    kmt.reserve_gpu_va(&ReserveGpuVa {
        base,
        size: bytes,
        ..ReserveGpuVa::default()
    })
}

/// The 8-byte FILL of `pattern` at GPU VA `va`.
pub(crate) fn fill_at(va: u64, pattern: u64) -> Command {
    Command::Fill {
        dst: va,
        bytes: 8,
        pattern,
    }
}

/// The paging queue (`hPagingQueue`, its fence) of each process that mapped a GPU VA itself,
/// made on its first mapping.
#[derive(Default)]
pub(crate) struct PagingQueues(Vec<(usize, KmtHandle, KmtHandle)>);

impl PagingQueues {
    /// `D3DKMTMapGpuVirtualAddress` of `pages` pages of `allocation` from `first_page`,
    /// read-write at `va`, on `process`'s paging queue; returns once the paging fence has
    /// reached the value the map returned (the OS may answer before the paging is done).
    pub(crate) fn map<K: Kmt>(
        &mut self,
        kmt: &K,
        process: usize,
        allocation: KmtHandle,
        va: u64,
        first_page: u64,
        pages: u64,
    ) -> Result<(), NtStatus> {
        let (queue, fence) = match self.0.iter().find(|(p, ..)| *p == process) {
            Some(&(_, q, f)) => (q, f),
            None => {
                let q = kmt.create_paging_queue(0)?;
                self.0.push((process, q.handle, q.fence));
                (q.handle, q.fence)
            }
        };
        let mapped = kmt.map_gpu_va(&MapGpuVa::read_write(
            queue, va, allocation, first_page, pages,
        ))?;
        kmt.wait_for_fence(fence, mapped.paging_fence_value)
    }
}
