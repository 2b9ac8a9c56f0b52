//! The [`UserModeSubmission`] capability (UM-01 … UM-22): processes, buffers and queues made by
//! the UMD's submission core, and the work they run.

use crate::backend::common::Failure;

use super::fences::WaitResult;

/// A hardware queue to create ([`UserModeSubmission::create_queue`]): on engine `node`,
/// submitting by `path`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewQueue {
    pub node: u32,
    pub path: SubmitPath,
}

impl NewQueue {
    /// A user-mode queue (its own ring and doorbell) on `node`.
    pub const fn user_mode(node: u32) -> Self {
        Self {
            node,
            path: SubmitPath::UserMode,
        }
    }

    /// A kernel-mode queue (`D3DKMTSubmitCommandToHwQueue`) on `node`.
    pub const fn kernel_mode(node: u32) -> Self {
        Self {
            node,
            path: SubmitPath::KernelMode,
        }
    }
}

/// A process a session opened: one D3D device on one adapter (`D3DKMTCreateDevice`; the
/// simulation gives each its own process id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcessRef(pub usize);

/// A GPU-visible buffer of a process, readable and writable by the CPU (an allocation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferRef(pub usize);

/// A hardware queue created through the UMD's submission core (`rvgpu_umd::submit`): a
/// `UserQueue` (context, user-mode queue, ring, doorbell, kernel-mode fallback) or a
/// `KernelQueue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UmQueueRef(pub usize);

/// How a queue submits: its own ring and doorbell, or `D3DKMTSubmitCommandToHwQueue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitPath {
    /// User-mode queue: ring + doorbell (UM-16).
    UserMode,
    /// Kernel-mode queue, or a user-mode queue after its UM-19 fallback.
    KernelMode,
}

/// One GPU operation of a batch, in terms of the process's buffers (the device's FILL, COPY
/// and FENCE_WAIT packets; a real backend encodes the same packets through the same UMD).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// Fill `bytes` (multiple of 8) at `offset` of `dst` with `pattern`.
    Fill {
        /// Buffer.
        dst: BufferRef,
        /// Byte offset.
        offset: u64,
        /// Length.
        bytes: u64,
        /// 64-bit pattern.
        pattern: u64,
    },
    /// Copy `bytes` (multiple of 8, ranges disjoint) between buffers.
    Copy {
        /// Source buffer.
        src: BufferRef,
        /// Source offset.
        src_offset: u64,
        /// Destination buffer.
        dst: BufferRef,
        /// Destination offset.
        dst_offset: u64,
        /// Length.
        bytes: u64,
    },
    /// The queue waits until the u64 at `offset` of `buffer` is at least `value`.
    WaitAtLeast {
        /// Buffer.
        buffer: BufferRef,
        /// Byte offset.
        offset: u64,
        /// Value.
        value: u64,
    },
    /// The device's HANG packet: the engine stops at it and reports itself hung; only a reset
    /// gets past it (TDR cases). A real backend encodes the same packet through the same UMD.
    Hang,
}

/// A doorbell's status page (`D3DDDI_DOORBELLSTATUS`) as the UMD reads it (every backend
/// decodes the raw value with [`DoorbellStatus::from_raw`]).
pub use rvgpu_umd::kmt::DoorbellStatus;

/// What the UMD knows of a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UmQueueInfo {
    /// The path submissions take now.
    pub path: SubmitPath,
    /// The queue is unusable (device removed, UM-10): recreate it.
    pub lost: bool,
    /// Last progress value submitted.
    pub last_submitted: u64,
    /// Highest progress value known complete.
    pub completed: u64,
    /// The device's queue id (from the KMD's private data).
    pub queue_id: u32,
    /// Whether the queue is in its engine's runlist now (`None`: the backend cannot see
    /// runlists; a Windows backend cannot).
    pub scheduled: Option<bool>,
    /// Whether the OS sees the queue's work: it gave the queue its progress fence (a
    /// kernel-mode queue; a user-mode one under Microsoft's pages). 24H2 gives a user-mode
    /// queue none, so nothing of the OS waits for or watches its work. `None`: the backend
    /// cannot tell.
    pub os_sees_work: Option<bool>,
}

/// How a process ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessEnd {
    /// Normal exit (UM-17): per queue disconnect, wait for the last queued value, destroy.
    Normal,
    /// Abnormal exit (UM-18): device in error, contexts suspended, no waiting.
    Abnormal,
}

/// One thread of [`UserModeSubmission::churn`]: `rounds` times, create a user-mode queue on `node` for
/// `process`, submit `batches_per_round` batches of `work` (in order, round after round),
/// wait for the last, close the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChurnLane {
    /// The process.
    pub process: ProcessRef,
    /// Node of every queue.
    pub node: u32,
    /// Queues created one after another.
    pub rounds: u32,
    /// Batches per queue.
    pub batches_per_round: u32,
    /// `rounds * batches_per_round` batches.
    pub work: Vec<Vec<Work>>,
}

/// What a [`ChurnLane`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChurnReport {
    /// Rounds that submitted, waited and closed without error.
    pub rounds_done: u32,
    /// Rounds whose queue ended on the kernel-mode path (UM-19 fallback).
    pub kernel_mode_rounds: u32,
    /// The first error, if any.
    pub error: Option<String>,
}

/// The GPU address of `bytes` at `offset` of buffer `b` (at `gpu_va`, `size` bytes long), or
/// why the span does not fit.
pub(crate) fn address_in(
    b: BufferRef,
    gpu_va: u64,
    size: u64,
    offset: u64,
    bytes: u64,
) -> Result<u64, Failure> {
    match offset.checked_add(bytes) {
        Some(end) if end <= size => Ok(gpu_va + offset),
        _ => Err(Failure::Backend(format!(
            "{bytes} bytes at {offset:#x} are outside buffer {} ({size} bytes)",
            b.0
        ))),
    }
}

/// Encodes harness work as device commands, with `address` resolving (buffer, offset, bytes)
/// to a GPU address (each backend knows its buffers). Shared by the backends so that a
/// [`Work`] means the same packets everywhere.
pub(crate) fn encode_work(
    work: &[Work],
    address: impl Fn(BufferRef, u64, u64) -> Result<u64, Failure>,
) -> Result<Vec<rvgpu_hw::cmd::Command>, Failure> {
    use rvgpu_hw::cmd::Command;
    work.iter()
        .map(|w| {
            Ok(match *w {
                Work::Fill {
                    dst,
                    offset,
                    bytes,
                    pattern,
                } => Command::Fill {
                    dst: address(dst, offset, bytes)?,
                    bytes,
                    pattern,
                },
                Work::Copy {
                    src,
                    src_offset,
                    dst,
                    dst_offset,
                    bytes,
                } => Command::Copy {
                    src: address(src, src_offset, bytes)?,
                    dst: address(dst, dst_offset, bytes)?,
                    bytes,
                },
                Work::WaitAtLeast {
                    buffer,
                    offset,
                    value,
                } => Command::FenceWait {
                    addr: address(buffer, offset, 8)?,
                    value,
                },
                Work::Hang => Command::Hang,
            })
        })
        .collect()
}

/// User-mode submission as an application sees it: processes, buffers, hardware queues made
/// by the UMD's submission core, their doorbell status, process exits, and threads that churn
/// queues. Every backend with user-mode queues implements it; a Windows backend with D3DKMT and
/// the same UMD core (`rvgpu_umd::submit` over `kmt_windows`).
pub trait UserModeSubmission {
    /// Opens a process (its D3D device) on adapter `i`.
    fn open_process(&mut self, i: usize) -> Result<ProcessRef, Failure>;

    /// Ends the process: normal (UM-17) or abnormal (UM-18) exit, with its queues still open
    /// (the OS tears them down). Windows: a child process that returns or is terminated,
    /// waited for on its process handle. Returns once the process has ended, and with it its
    /// devices: 24H2 destroys them in its exit notification (`K:DxgkProcessNotify`
    /// @0x140014430 calls `K:DXGPROCESS::DestroyDxgProcess` @0x14034D1D8, which runs
    /// `K:DXGPROCESS::Destroy` @0x14034D4E0), on the process's last exiting thread
    /// (learn.microsoft.com, PsSetCreateProcessNotifyRoutineEx), so before its handle is
    /// signalled.
    fn end_process(&mut self, p: ProcessRef, how: ProcessEnd) -> Result<(), Failure>;

    /// A GPU-visible buffer of `bytes` bytes for `p`, zeroed.
    fn create_buffer(&mut self, p: ProcessRef, bytes: u64) -> Result<BufferRef, Failure>;

    /// The u64 at `offset` of `b`, read by the CPU.
    fn read_buffer(&self, b: BufferRef, offset: u64) -> Result<u64, Failure>;

    /// Stores `value` at `offset` of `b` from the CPU; a GPU wait on it re-evaluates (as after
    /// a CPU fence signal).
    fn write_buffer(&mut self, b: BufferRef, offset: u64, value: u64) -> Result<(), Failure>;

    /// A hardware queue of `p` as `new` describes: a user-mode queue (`UserQueue`: context,
    /// queue, ring, doorbell, connected) or a kernel-mode queue (`KernelQueue`).
    fn create_queue(&mut self, p: ProcessRef, new: NewQueue) -> Result<UmQueueRef, Failure>;

    /// Submits one batch; returns the progress value that marks its completion (UM-16).
    fn submit(&mut self, q: UmQueueRef, work: &[Work]) -> Result<u64, Failure>;

    /// Waits until the queue's progress reaches `value` (the OS's wait timeout; step mode:
    /// until the machine goes idle). `Abandoned`: the device was removed.
    fn wait_progress(&mut self, q: UmQueueRef, value: u64) -> Result<WaitResult, Failure>;

    /// The UMD's view of the queue.
    fn queue_info(&self, q: UmQueueRef) -> Result<UmQueueInfo, Failure>;

    /// The UMD closes the queue normally (waits for its last value, destroys doorbell,
    /// queues, allocations, context).
    fn close_queue(&mut self, q: UmQueueRef) -> Result<(), Failure>;

    /// The user-mode queue's doorbell status page (the UMD's CPU mapping of it).
    fn doorbell_status(&self, q: UmQueueRef) -> Result<DoorbellStatus, Failure>;

    /// Runs `lanes` at the same time, one thread each (see [`ChurnLane`]); step-mode
    /// sessions run them one after another.
    fn churn(&mut self, lanes: &[ChurnLane]) -> Result<Vec<ChurnReport>, Failure>;

    /// A second D3D device in `p`'s process (`D3DKMTCreateDevice` again), named as a process
    /// of its own: what one device's loss leaves of its sibling (UM-10). Ending it ends the
    /// whole process. Default: unsupported.
    fn open_sibling_device(&mut self, p: ProcessRef) -> Result<ProcessRef, Failure> {
        let _ = p;
        Err(Failure::Unsupported(
            "a second device in one process (D3DKMTCreateDevice twice)".into(),
        ))
    }
}
