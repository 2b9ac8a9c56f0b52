//! The C ABI's vocabulary: the status every call returns, the flag values, the descriptors
//! and records passed by pointer, the opaque handle types, and the checks that turn a caller's
//! command stream into packets.

use alloc::vec::Vec;

use rvgpu_hw::cmd::Command;

use crate::kmt::NtStatus;
use crate::packets::{Dwords, Packets};
use crate::submit::SubmitError;

/// Result of every API call.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RvgpuStatus {
    /// Success.
    Ok = 0,
    /// A pointer was null or a value out of range.
    InvalidArgument = 1,
    /// Not implemented on this build (see the module documentation).
    NotImplemented = 2,
    /// The adapter was removed or reset: destroy the queue and create a new one.
    DeviceLost = 3,
    /// A wait timed out.
    Timeout = 4,
    /// Out of memory.
    OutOfMemory = 5,
    /// A kernel thunk failed for another reason.
    KernelError = 6,
    /// A lock with `RVGPU_LOCK_DO_NOT_WAIT` found the buffer in use by queued work
    /// (D3D's `WasStillDrawing`); nothing was locked. Also a submission to a queue that holds
    /// all the work it may behind a GPU wait ([`SubmitError::Full`]).
    WasStillDrawing = 7,
    /// A handle names no live object of its kind (destroyed, forged, or another kind's).
    InvalidHandle = 8,
}

/// How `rvgpu_queue_create` makes a queue.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RvgpuQueueDesc {
    /// Engine (node ordinal).
    pub node: u32,
    /// `RVGPU_QUEUE_USER_MODE` or `RVGPU_QUEUE_KERNEL_MODE`.
    pub kind: u32,
    /// Scheduling priority (the driver clamps it).
    pub priority: u32,
    /// Bytes of the user-mode ring, and of the kernel-mode command buffer: a power of two
    /// from 256 bytes to 16 MiB; 0 for the default, 64 KiB.
    pub ring_size: u32,
}

/// A fence and a value: one entry of a wait or signal list.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RvgpuFenceValue {
    /// The fence.
    pub fence: *mut RvgpuFence,
    /// The value waited for or signalled.
    pub value: u64,
}

/// One batch for `rvgpu_queue_submit`: the GPU waits for every `waits` entry, runs the
/// commands, then signals every `signals` entry. Each list may be empty (its pointer NULL).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RvgpuSubmitDesc {
    /// Command dwords (rvgpu packets, 64-bit words low dword first).
    pub commands: *const u32,
    /// Number of dwords (even).
    pub dword_count: usize,
    /// Fences the GPU waits for before the commands.
    pub waits: *const RvgpuFenceValue,
    /// Entries of `waits`.
    pub wait_count: usize,
    /// Fences the GPU signals after the commands.
    pub signals: *const RvgpuFenceValue,
    /// Entries of `signals`.
    pub signal_count: usize,
}

/// What `rvgpu_queue_status` reports.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RvgpuQueueStatus {
    /// The last progress value submitted (0: none).
    pub submitted: u64,
    /// The progress value the GPU completed.
    pub completed: u64,
    /// Fence log entries dropped because they were not read in time.
    pub dropped_log_entries: u64,
    /// The path batches take now: `RVGPU_QUEUE_USER_MODE` or `RVGPU_QUEUE_KERNEL_MODE` (a
    /// user-mode queue the driver moved to its fallback reports kernel mode).
    pub kind: u32,
    /// Non-zero once the device was lost for this queue: destroy it and create a new one.
    pub lost: u32,
    /// The device's id of the queue (what the fence log entries carry).
    pub queue_id: u32,
    /// What a user-mode queue's doorbell status page says (`D3DDDI_DOORBELLSTATUS`: 0
    /// connected, 1 connected with notification, 2 disconnected, retry, 3 disconnected,
    /// abort); -1 for a queue without a doorbell.
    pub doorbell_status: i32,
}

/// What `rvgpu_buffer_status` reports.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RvgpuBufferStatus {
    /// GPU virtual address of the current memory (a `RVGPU_LOCK_DISCARD` rename changes it).
    pub gpu_va: u64,
    /// Renames so far (`RVGPU_LOCK_DISCARD` locks of a busy buffer).
    pub renames: u64,
    /// Locks that blocked on GPU work.
    pub lock_waits: u64,
    /// Pieces of memory that exist: the current one and renamed ones the GPU still uses.
    pub backings: u64,
}

/// What `rvgpu_device_status` reports.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RvgpuDeviceStatus {
    /// Non-zero once a queue of the adapter found the device lost or reset, or the OS reports
    /// the device not active (`D3DKMTGetDeviceState`).
    pub lost: u32,
    /// Queues of the adapter whose work a device reset or loss aborted (each counted once).
    pub reset_count: u32,
}

/// What `rvgpu_device_loss_info` reports: how the adapter's device was lost, from what an
/// application on Windows can observe (a doorbell's status page, `D3DKMTGetDeviceState`, a
/// thunk's `STATUS_DEVICE_REMOVED`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RvgpuDeviceLossInfo {
    /// Non-zero when the device is lost: any of the fields below says so, or a queue of the
    /// adapter found it lost. Destroy every object of the adapter, close it and open it again.
    pub lost: u32,
    /// `D3DKMTGetDeviceState` (`D3DKMT_DEVICESTATE_EXECUTION`) of the adapter's device:
    /// `RVGPU_DEVICE_EXECUTION_*`, the `D3DKMT_DEVICEEXECUTION_STATE` values; 0 when the OS
    /// gave none.
    pub execution_state: u32,
    /// The `D3DDDI_DOORBELLSTATUS` the first queue that found the loss read from its
    /// disconnected doorbell, as the driver or the OS wrote it (3: aborted); -1 when no
    /// queue of the adapter read one.
    pub doorbell_status: i32,
    /// Non-zero when the OS answers `STATUS_DEVICE_REMOVED` for the device now: it reset or
    /// stopped the device, so every call that uses it fails and only destruction works.
    pub device_removed: u32,
    /// Non-zero when the adapter was reset, which loses every device on it, not only this
    /// one: the execution state is RESET, or HUNG with the device removed (both only an
    /// adapter-wide recovery writes).
    pub adapter_reset: u32,
    /// Always 0.
    pub reserved: u32,
}

/// One fence operation a queue submitted (`rvgpu_queue_read_fence_log`): the application's
/// side of the device's native fence logs, joined with the OS's entries on
/// `(queue_id, kind, index)`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RvgpuFenceLogEntry {
    /// The fence value waited for or signalled.
    pub value: u64,
    /// CPU timestamp (QueryPerformanceCounter ticks) taken before the batch was written.
    pub cpu_timestamp: u64,
    /// The device's queue id.
    pub queue_id: u32,
    /// `RVGPU_FENCE_LOG_WAIT` or `RVGPU_FENCE_LOG_SIGNAL`.
    pub kind: u32,
    /// The free-running index of its log entry; meaningful when `logged` is non-zero.
    pub index: u32,
    /// Non-zero when the device writes a log entry for it (user-mode path only).
    pub logged: u32,
    /// The fence's D3DKMT handle in this process (the log entry's `hNativeFence`).
    pub os_fence: u32,
    /// Always 0.
    pub reserved: u32,
}

/// NTSTATUS → API status.
pub fn status_from_nt(s: NtStatus) -> RvgpuStatus {
    use rvgpu_ddi::ntstatus::{
        STATUS_DEVICE_REMOVED, STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE,
        STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_HANDLE, STATUS_NOT_SUPPORTED,
        STATUS_NO_MEMORY, STATUS_TIMEOUT,
    };
    // STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE: the scheduler's answer to a kernel-mode
    // submission of a device in error.
    match s.0 {
        STATUS_NO_MEMORY | STATUS_INSUFFICIENT_RESOURCES => RvgpuStatus::OutOfMemory,
        STATUS_NOT_SUPPORTED => RvgpuStatus::NotImplemented,
        STATUS_DEVICE_REMOVED | STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE => RvgpuStatus::DeviceLost,
        STATUS_TIMEOUT => RvgpuStatus::Timeout,
        STATUS_INVALID_HANDLE => RvgpuStatus::InvalidHandle,
        _ => RvgpuStatus::KernelError,
    }
}

/// Submission error → API status.
pub fn status_from_submit(e: SubmitError) -> RvgpuStatus {
    match e {
        SubmitError::Kmt(s) => status_from_nt(s),
        SubmitError::Lost => RvgpuStatus::DeviceLost,
        SubmitError::TooLarge
        | SubmitError::BadCommand
        | SubmitError::BadConfig
        | SubmitError::NotSubmitted => RvgpuStatus::InvalidArgument,
        SubmitError::Ring(_) | SubmitError::BadPrivateData => RvgpuStatus::KernelError,
        SubmitError::Full => RvgpuStatus::WasStillDrawing,
    }
}

/// Declares handle types the application holds only pointers to (incomplete types in
/// rvgpu_umd.h): zero-sized and `#[repr(C)]`, with no value outside this crate.
macro_rules! opaque_handles {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[repr(C)]
        #[derive(Debug)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}
pub(crate) use opaque_handles;

opaque_handles! {
    /// Opaque adapter handle.
    RvgpuAdapter;
    /// Opaque hardware-queue handle.
    RvgpuQueue;
    /// Opaque native-fence handle.
    RvgpuFence;
    /// Opaque buffer handle.
    RvgpuBuffer;
}

/// Decodes a command stream of `dwords` (pairs forming little-endian 64-bit words) into
/// packets; `InvalidArgument` if the count is odd or a packet is malformed or cut short, or is
/// a WRITE_DATA: a [`Command`] carries no data words, so the UMD could only pass one on with
/// its data lost (page-table writes belong to the kernel's paging buffers anyway).
pub fn parse_commands(dwords: &[u32]) -> Result<Vec<Command>, RvgpuStatus> {
    Dwords(dwords)
        .commands()
        .map(alloc::borrow::Cow::into_owned)
        .map_err(|_| RvgpuStatus::InvalidArgument)
}

/// A validated batch: the packets and the (fence handle, value) lists.
#[derive(Debug, Default)]
#[cfg_attr(not(windows), allow(dead_code))] // read by the Windows implementation only
pub(crate) struct Batch {
    pub(crate) cmds: Vec<Command>,
    pub(crate) waits: Vec<(usize, u64)>,
    pub(crate) signals: Vec<(usize, u64)>,
}
