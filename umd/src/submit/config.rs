//! What a queue is made with and what its operations report: the configuration, the error,
//! the path batches take, and the id of the queue's progress sequence.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::kmt::NtStatus;
use crate::ring::RingError;

/// Why a queue operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitError {
    /// A kernel thunk failed with this NTSTATUS.
    Kmt(NtStatus),
    /// Ring control is inconsistent, or the ring size is not usable.
    Ring(RingError),
    /// The batch cannot fit in an empty ring (user mode) or command buffer (kernel mode).
    TooLarge,
    /// The kernel driver's private data is not usable (wrong `ring_value`).
    BadPrivateData,
    /// The configuration is invalid (ring or command-buffer size).
    BadConfig,
    /// A command does not encode whole (a NOP of length 0, a WRITE_DATA).
    BadCommand,
    /// `wait` on a value that was never submitted (it would never complete).
    NotSubmitted,
    /// The queue is unusable (device lost and the kernel-mode path failed too, the OS refused
    /// a kernel-mode submission for the device being in error, or the ring stalled): drop it
    /// and create a new one (UM-10).
    Lost,
    /// The queue holds as much work as it can behind a GPU wait it cannot see the end of (a
    /// fence another party signals): making room would mean waiting for work the caller may
    /// not have released yet. Nothing of the batch was submitted, unless its INDIRECT packets
    /// made it several submissions and a later one was refused (the queue's last submitted
    /// value says how far it got); release the wait or wait for an earlier value, then submit
    /// again.
    Full,
}

impl From<NtStatus> for SubmitError {
    /// The status as the thunk gave it, but for the scheduler's word that the device is in
    /// error, which is the device lost (UM-10).
    fn from(s: NtStatus) -> Self {
        if s == crate::nt::STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE {
            return Self::Lost;
        }
        Self::Kmt(s)
    }
}

impl From<RingError> for SubmitError {
    fn from(e: RingError) -> Self {
        Self::Ring(e)
    }
}

/// How a [`UserQueue`](crate::submit::UserQueue) currently submits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmissionPath {
    /// Its own ring and doorbell (UM-16).
    UserMode,
    /// `D3DKMTSubmitCommandToHwQueue` on a second, kernel-mode queue (UM-19 fallback).
    KernelMode,
}

/// What a queue is created with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueConfig {
    /// Engine (node ordinal) of the context.
    pub node: u32,
    /// [`HwQueuePdd::priority`](rvgpu_hw::pdd::HwQueuePdd::priority) (the KMD clamps it).
    pub priority: u32,
    /// User-mode ring size in bytes: a power of two in `RING_MIN..=RING_MAX`.
    pub ring_size: u32,
    /// Kernel-mode command buffer size in bytes (multiple of 8); one kernel-mode submission
    /// is at most `min(command_buffer_size, MAX_INDIRECT)` bytes.
    pub command_buffer_size: u64,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            node: 0,
            priority: 0,
            ring_size: 64 << 10,
            command_buffer_size: 64 << 10,
        }
    }
}

/// Identifies one queue's progress sequence for as long as the process runs (never reused,
/// unlike kernel handles).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimelineId(u64);

impl TimelineId {
    /// A new, never-used id.
    pub fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}
