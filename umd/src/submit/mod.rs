//! The portable submission core: a user-mode hardware queue with its ring and
//! doorbell ([`UserQueue`]), and a kernel-mode hardware queue ([`KernelQueue`], UM-01), both
//! generic over the kernel thunks ([`Kmt`]), so the same code runs on Windows (D3DKMT,
//! `kmt_windows`) and in the simulation (`rvgpu_simos`).
//!
//! docs/usermode-submission.md is the contract. In short:
//!
//! - [`UserQueue::new`] creates a context on a node, a hardware queue with
//!   `UserModeSubmission` ([`HwQueuePdd`] in/out), the ring and ring-control allocations, a
//!   doorbell ([`DoorbellPdd`]: the ring size in, `ring_value` and `queue_id` out; the KMD takes
//!   the ring's addresses from the two allocations), and
//!   connects the doorbell.
//! - **Progress fence.** Microsoft's pages give every queue a monitored progress fence; 24H2
//!   gives a user-mode queue none. Then the queue creates a native fence of its own and closes
//!   each batch with that fence's conditional `FENCE_SIGNAL(N+1)` instead of `PROGRESS(N+1)`
//!   (an interrupt only when a CPU waits, NF-03); waits and completion read that fence.
//! - [`UserQueue::submit`] follows UM-16 exactly: pick `N+1`; append the commands and
//!   `PROGRESS(N+1)` to the ring (waiting on the progress fence while the ring is full, never
//!   overwriting unconsumed packets); store `N+1` at the last-queued address; publish
//!   `write_ptr` (Release); ring the doorbell with the write pointer or the queue id. Then the
//!   UM-19 status loop: `CONNECTED` → done; `CONNECTED_NOTIFY` → `NotifyWorkSubmission`;
//!   `DISCONNECTED_RETRY` → `ConnectDoorbell` and ring again; a failed connect (or notify) or
//!   `DISCONNECTED_ABORT` → fall back to the kernel-mode path.
//! - **Fallback without loss or duplication.** The doorbell is destroyed first, which takes the
//!   queue off the runlist atomically (docs/usermode-submission.md, "Runlists"), so the ring is
//!   quiescent: everything before the CMP's read pointer ran, nothing after it will. The
//!   unconsumed packets between the read and write pointers are decoded and resubmitted, batch
//!   by batch (a batch ends with its closing packet), through a second hardware queue created
//!   without `UserModeSubmission` ([`KernelQueue`]'s machinery). Progress values stay one
//!   sequence for the caller: a value the user-mode queue had completed is complete; a later
//!   one maps to the kernel-mode queue's own progress value for that batch.
//!   An INDIRECT the CMP had started is resubmitted whole (the read pointer stays on it until
//!   its buffer completes), which is what the hardware itself does when a queue re-enters a
//!   runlist; the packets the UMD writes for a caller's commands are otherwise not repeated.
//! - Device loss (UM-10): if the kernel-mode path fails too, or the progress fence reads a
//!   value the queue never wrote (the OS's device-removed value), the queue reports
//!   [`SubmitError::Lost`] from then on; the caller drops it and creates a new one.
//! - Teardown order: doorbell, hardware queues, allocations, context ([`UserQueue::close`]
//!   waits for the last submitted value first; dropping does not wait).
//! - **Native fence logs** (docs/logs.md#umd, `fencelog`): [`UserQueue::submit_ops`]
//!   expands native-fence signals and waits into their packet and a LOG_WRITE with the next
//!   index of the queue's wait or signal log, published in the same write-pointer update, and
//!   reports each operation's "queued" event to the caller's [`FenceTrace`]. Kernel-mode queues
//!   have no logs: [`KernelQueue::submit_ops`] emits no LOG_WRITE, and the fallback drops the
//!   LOG_WRITEs of what it resubmits and of everything submitted after it.
//!
//! [`Kmt`]: crate::kmt::Kmt
//! [`HwQueuePdd`]: rvgpu_hw::pdd::HwQueuePdd
//! [`DoorbellPdd`]: rvgpu_hw::pdd::DoorbellPdd
//! [`FenceTrace`]: crate::fencelog::FenceTrace

mod batch;
mod config;
mod forward;
mod inflight;
mod kernel;
mod progress;
pub(crate) use progress::kernel_hw_queue;
mod user;

pub use config::{QueueConfig, SubmissionPath, SubmitError, TimelineId};
pub use kernel::KernelQueue;
pub use user::{UserQueue, MAX_RETRIES};

#[cfg(test)]
mod tests;
