//! The [`UmdBypass`] capability: what a program can do to its queues without the UMD.

use crate::backend::common::Failure;

use super::user_mode::{UmQueueRef, Work};

/// The objects behind one of the UMD's user-mode queues, reached past the UMD: thunk calls on
/// its hardware queue and ring allocations, and whether the OS still holds the ring. A
/// program on Windows makes the first with its own queue's handle; whether the ring's memory
/// outlives its handles only the simulation shows.
pub trait UmdBypass {
    /// Submits `work` to the user-mode queue's own hardware queue with
    /// `D3DKMTSubmitCommandToHwQueue`, which UM-05 forbids; returns the NTSTATUS.
    fn kernel_submit_on_user_queue(&mut self, q: UmQueueRef, work: &[Work])
        -> Result<i32, Failure>;

    /// The UMD destroys its handles to the user-mode queue's ring and ring-control
    /// allocations while the doorbell lives (UM-07; `D3DKMTDestroyAllocation2`). The queue
    /// keeps working; a second call fails with the NTSTATUS of the closed handle.
    fn release_ring_handles(&mut self, q: UmQueueRef) -> Result<(), Failure>;

    /// Whether the queue's ring and ring-control memory is still allocated (UM-07).
    fn ring_resident(&self, q: UmQueueRef) -> Result<bool, Failure>;
}
