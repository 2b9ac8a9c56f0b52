//! The [`AllocationUsage`] capability (AL-01 … AL-03): allocations whose use the driver tracks.

use crate::backend::common::Failure;

use super::user_mode::{BufferRef, ProcessRef, UmQueueRef};

/// A buffer with the UMD's usage tracking ([`AllocationUsage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TrackedRef(pub usize);

/// One GPU operation on tracked buffers (the UMD's `Batch::fill` and `Batch::copy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrackedWork {
    /// Fill `bytes` at `offset` of `dst` with `pattern`.
    Fill {
        /// Buffer.
        dst: TrackedRef,
        /// Byte offset (multiple of 8).
        offset: u64,
        /// Length (multiple of 8).
        bytes: u64,
        /// 64-bit pattern.
        pattern: u64,
    },
    /// Copy `bytes` from the start of `src` to the start of `dst` (different buffers).
    Copy {
        /// Source.
        src: TrackedRef,
        /// Destination.
        dst: TrackedRef,
        /// Length (multiple of 8).
        bytes: u64,
    },
}

/// Work on tracked buffers to submit ([`AllocationUsage::submit_tracked`]), optionally after
/// the queue waits for the u64 at `gate.1` of plain buffer `gate.0` to reach `gate.2` (the work
/// held queued until the case writes it).
#[derive(Clone, Copy, Debug)]
pub struct TrackedBatch<'a> {
    pub gate: Option<(BufferRef, u64, u64)>,
    pub work: &'a [TrackedWork],
}

impl<'a> TrackedBatch<'a> {
    /// `work`, not gated.
    pub const fn new(work: &'a [TrackedWork]) -> Self {
        Self { gate: None, work }
    }

    /// The same work, held until the u64 at `offset` of `buffer` reaches `value`.
    pub const fn gated(self, buffer: BufferRef, offset: u64, value: u64) -> Self {
        Self {
            gate: Some((buffer, offset, value)),
            ..self
        }
    }
}

/// How a lock of a tracked buffer ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockOutcome {
    /// Mapped: the buffer is locked.
    Mapped,
    /// `LockError::WasStillDrawing` (AL-02).
    WasStillDrawing,
    /// Any other `LockError`, as text.
    Refused(String),
}

/// A tracked buffer as the UMD sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrackedInfo {
    /// GPU VA of the current backing (a rename changes it).
    pub gpu_va: u64,
    /// Renames so far.
    pub renames: u64,
    /// Locks that blocked on a fence.
    pub waits: u64,
    /// Backings that exist (current and retired).
    pub backings: usize,
}

/// Buffers with the UMD's own usage tracking (`rvgpu_umd::usage::Buffer`, AL-01 …
/// AL-03): CPU locks with the `RVGPU_LOCK_*` flags, and GPU work encoded through the UMD so it
/// knows which backing each batch uses. Everything here is what an application sees through
/// the UMD; a Windows backend can offer it with the same UMD over the real thunks.
pub trait AllocationUsage {
    /// A CPU-visible tracked buffer of `bytes` bytes for process `p`.
    fn create_tracked(&mut self, p: ProcessRef, bytes: u64) -> Result<TrackedRef, Failure>;

    /// Submits `batch` to `q`; returns the progress value that marks its completion.
    fn submit_tracked(&mut self, q: UmQueueRef, batch: TrackedBatch<'_>) -> Result<u64, Failure>;

    /// `Buffer::lock` with `flags` (`rvgpu_umd::usage::LockFlags` bits), naming every queue of
    /// the buffer's process.
    fn lock_tracked(&mut self, b: TrackedRef, flags: u32) -> Result<LockOutcome, Failure>;

    /// The u64 at `offset` of the locked buffer, through the view the lock returned.
    fn read_tracked(&self, b: TrackedRef, offset: u64) -> Result<u64, Failure>;

    /// Stores `value` at `offset` through the view the lock returned.
    fn write_tracked(&mut self, b: TrackedRef, offset: u64, value: u64) -> Result<(), Failure>;

    /// `Buffer::unlock`.
    fn unlock_tracked(&mut self, b: TrackedRef) -> Result<(), Failure>;

    /// The buffer's current backing and counters.
    fn tracked_info(&self, b: TrackedRef) -> Result<TrackedInfo, Failure>;

    /// `Buffer::destroy` (never blocks: a backing still in use is left to VidMm, AL-03).
    fn destroy_tracked(&mut self, b: TrackedRef) -> Result<(), Failure>;
}
