//! The [`GpuVaPlacement`] capability: a process's GPU virtual addresses placed by the program.

use crate::backend::common::Failure;

use super::paging::Pages;
use super::user_mode::{BufferRef, ProcessRef, UmQueueRef};

/// GPU virtual addresses a process places itself (docs/memory.md "GPU VA thunks"):
/// `D3DKMTReserveGpuVirtualAddress`, `D3DKMTMapGpuVirtualAddress` on a paging queue of the
/// process, `D3DKMTFreeGpuVirtualAddress`, and a user-mode queue's write to a raw VA.
pub trait GpuVaPlacement {
    /// Reserves `bytes` (a multiple of 4 KiB) of process `p`'s GPU VA space at `base`
    /// (64 KiB aligned; 0: the OS chooses); returns the range's VA.
    fn reserve_va(&mut self, p: ProcessRef, base: u64, bytes: u64) -> Result<u64, Failure>;

    /// Maps `pages` of buffer `b` read-write at `va` (inside a range its process reserved)
    /// and waits for the paging fence.
    fn map_va(&mut self, b: BufferRef, pages: Pages, va: u64) -> Result<(), Failure>;

    /// Frees the range of process `p` that starts at `base` (every page of it unmapped).
    fn free_va(&mut self, p: ProcessRef, base: u64) -> Result<(), Failure>;

    /// Submits one 8-byte FILL of `pattern` at GPU VA `va` to user-mode queue `q`; returns
    /// the progress value that marks its completion.
    fn fill_va(&mut self, q: UmQueueRef, va: u64, pattern: u64) -> Result<u64, Failure>;
}
