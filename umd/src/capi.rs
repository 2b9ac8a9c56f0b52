//! The UMD's C API, exported by rvgpu_umd.dll and declared in `umd/include/rvgpu_umd.h`
//! (tests/umd_header.rs checks that the two agree and that the header compiles as C99;
//! tests/pe_images.rs that the DLL exports every function here).
//!
//! The API is explicit: an application opens an adapter and creates queues (user-mode or
//! kernel-mode, with a priority), timeline fences (signalled and waited on the CPU and on the
//! GPU, shared between processes by NT handle) and buffers on it; it submits batches with
//! lists of fence waits and signals, reads queue and device status and the queue's record of
//! its fence operations. Every call returns an [`RvgpuStatus`].
//!
//! Handles are tokens into the table of live objects (`handles`): a null handle is
//! `InvalidArgument`, a destroyed, forged or wrong-kind one `InvalidHandle`; neither is ever
//! dereferenced. Every pointer argument is checked for null before use; a non-null pointer
//! must be valid for what the call documents (C cannot say more).
//!
//! Status:
//! - **On Windows** the calls are implemented (`windows`) over the D3DKMT thunks and
//!   the portable queue core (`queue`: [`UserQueue`](crate::submit::UserQueue) with its
//!   kernel-mode fallback, or [`KernelQueue`](crate::submit::KernelQueue)). This is compiled
//!   by the Windows cross-build only; it runs in the x86-64 emulator over the simulated OS's
//!   thunks (docs/pe-image.md, `simos/tests/pe_umd.rs`, `rvgpu-whlk --backend kmt-sim --umd
//!   pe`), never yet on Windows.
//! - **Elsewhere** (the host build, used by tests) there is no D3DKMT: `rvgpu_open_adapter`
//!   returns [`RvgpuStatus::NotImplemented`] after argument validation, so no handle exists
//!   and every other call validates its arguments and refuses its handles.
//!
//! Command streams are rvgpu packets (docs/hardware.md, "Command set"): 64-bit words, each
//! passed as two 32-bit dwords, low half first; each packet is validated before its words go
//! into the ring, and nothing is published unless all are valid ([`crate::packets`]).
//!
//! Buffers (AL-01 … AL-03; `buffer`): `rvgpu_buffer_lock` maps a buffer with
//! `RVGPU_LOCK_*` flags (the values of [`LockFlags`]) and names the queues whose work may use
//! it, since the UMD tracks use per queue; a busy buffer locked with `RVGPU_LOCK_DO_NOT_WAIT`
//! returns [`RvgpuStatus::WasStillDrawing`]. GPU work is tracked when it goes through
//! `rvgpu_buffer_fill` / `rvgpu_buffer_copy`; packets of `rvgpu_submit` and
//! `rvgpu_queue_submit` are not.
//!
//! GPU VAs (`va`): an application may reserve a range of the adapter's GPU VA space at an
//! address it chooses, map buffer pages there and free it (`rvgpu_va_*`,
//! `rvgpu_buffer_map_va`).
//!
//! Threading: every call may be made from any thread. Calls on one queue or one buffer are
//! serialized by the object's lock; waits (`rvgpu_queue_wait`, `rvgpu_fence_wait`) are made
//! without it, so one thread may wait while another submits.

#![allow(clippy::missing_safety_doc)] // each function documents its contract as "Safety" below

mod args;
mod buf_imp;
#[cfg(any(windows, test))]
pub(crate) mod buffer;
#[cfg(test)]
mod buffer_tests;
#[cfg(any(windows, test))]
pub(crate) mod handles;
#[cfg(not(windows))]
mod host;
#[cfg(test)]
mod mock;
#[cfg(windows)]
mod queue;
#[cfg(test)]
mod tests;
mod types;
mod va;
#[cfg(windows)]
mod windows;

pub(crate) use args::handle;
pub use types::*;

use crate::usage::LockFlags;

/// Lock for reading: waits for the GPU's queued writes.
pub const RVGPU_LOCK_READ: u32 = 0x1;
/// Lock for writing: waits for every queued GPU use.
pub const RVGPU_LOCK_WRITE: u32 = 0x2;
/// Write, old contents not needed: a busy buffer gets new memory instead of a wait.
pub const RVGPU_LOCK_DISCARD: u32 = 0x4;
/// Write where no queued work reads or writes: maps at once.
pub const RVGPU_LOCK_NO_OVERWRITE: u32 = 0x8;
/// Never block: a lock that would wait returns `RVGPU_STATUS_WAS_STILL_DRAWING`.
pub const RVGPU_LOCK_DO_NOT_WAIT: u32 = 0x10;

/// `RvgpuQueueDesc::kind`: the queue's own ring and doorbell (user-mode submission), with a
/// kernel-mode fallback the driver may switch it to.
pub const RVGPU_QUEUE_USER_MODE: u32 = 0;
/// `RvgpuQueueDesc::kind`: every batch through the kernel (`D3DKMTSubmitCommandToHwQueue`).
pub const RVGPU_QUEUE_KERNEL_MODE: u32 = 1;

/// `rvgpu_fence_create2` flag: the fence can be shared with `rvgpu_fence_share`.
pub const RVGPU_FENCE_SHAREABLE: u32 = 0x1;

/// `RvgpuDeviceLossInfo::execution_state`: the `D3DKMT_DEVICEEXECUTION_STATE` values
/// (d3dkmthk.h; <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ne-d3dkmthk-_d3dkmt_deviceexecution_state>).
/// The device runs.
pub const RVGPU_DEVICE_EXECUTION_ACTIVE: u32 = 1;
/// The device was reset with its adapter.
pub const RVGPU_DEVICE_EXECUTION_RESET: u32 = 2;
/// The device's work hung an engine.
pub const RVGPU_DEVICE_EXECUTION_HUNG: u32 = 3;
/// The device was stopped (its adapter stopped or removed, or the OS stopped it for good).
pub const RVGPU_DEVICE_EXECUTION_STOPPED: u32 = 4;
/// Video memory could not hold what the device's work needs.
pub const RVGPU_DEVICE_EXECUTION_ERROR_OUTOFMEMORY: u32 = 5;
/// The driver reported a fault in the device's work.
pub const RVGPU_DEVICE_EXECUTION_ERROR_DMAFAULT: u32 = 6;
/// The driver reported a page fault in the device's work.
pub const RVGPU_DEVICE_EXECUTION_ERROR_DMAPAGEFAULT: u32 = 7;

// The values D3DKMTGetDeviceState answers, passed through unchanged.
const _: () = assert!(
    RVGPU_DEVICE_EXECUTION_ACTIVE == crate::kmt::DeviceExecutionState::ACTIVE.0
        && RVGPU_DEVICE_EXECUTION_RESET == crate::kmt::DeviceExecutionState::RESET.0
        && RVGPU_DEVICE_EXECUTION_HUNG == crate::kmt::DeviceExecutionState::HUNG.0
        && RVGPU_DEVICE_EXECUTION_STOPPED == crate::kmt::DeviceExecutionState::STOPPED.0
        && RVGPU_DEVICE_EXECUTION_ERROR_OUTOFMEMORY
            == crate::kmt::DeviceExecutionState::ERROR_OUTOFMEMORY.0
        && RVGPU_DEVICE_EXECUTION_ERROR_DMAFAULT
            == crate::kmt::DeviceExecutionState::ERROR_DMAFAULT.0
        && RVGPU_DEVICE_EXECUTION_ERROR_DMAPAGEFAULT
            == crate::kmt::DeviceExecutionState::ERROR_DMAPAGEFAULT.0
);

/// `RvgpuFenceLogEntry::kind`: a GPU wait.
pub const RVGPU_FENCE_LOG_WAIT: u32 = 0;
/// `RvgpuFenceLogEntry::kind`: a GPU signal.
pub const RVGPU_FENCE_LOG_SIGNAL: u32 = 1;

// The C values are the Rust flags' bits, passed through unchanged.
const _: () = assert!(
    RVGPU_LOCK_READ == LockFlags::READ.0
        && RVGPU_LOCK_WRITE == LockFlags::WRITE.0
        && RVGPU_LOCK_DISCARD == LockFlags::DISCARD.0
        && RVGPU_LOCK_NO_OVERWRITE == LockFlags::NO_OVERWRITE.0
        && RVGPU_LOCK_DO_NOT_WAIT == LockFlags::DO_NOT_WAIT.0
        && (RVGPU_LOCK_READ
            | RVGPU_LOCK_WRITE
            | RVGPU_LOCK_DISCARD
            | RVGPU_LOCK_NO_OVERWRITE
            | RVGPU_LOCK_DO_NOT_WAIT)
            == LockFlags::ALL.0
);

use alloc::vec::Vec;
use core::ffi::{c_char, c_void};
use core::ptr;

use crate::packets::{Dwords, Packets};

use args::{clear, h, list, out, put, queue_tokens, touch};

#[cfg(not(windows))]
use host as imp;
#[cfg(windows)]
use windows as imp;

/// Opens the rvgpu adapter with the given LUID.
///
/// # Safety
/// `out_adapter` must be null or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_open_adapter(
    luid_low: u32,
    luid_high: i32,
    out_adapter: *mut *mut RvgpuAdapter,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_adapter, ptr::null_mut()) } {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: accepted by `clear`.
    out(imp::open_adapter(luid_low, luid_high), |a| unsafe {
        put(out_adapter, handle(a))
    })
}

/// Closes an adapter. Queues, fences and buffers created on it stay usable until destroyed
/// (they hold the device).
///
/// # Safety
/// None beyond C's: the handle is only looked up.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_close_adapter(adapter: *mut RvgpuAdapter) -> RvgpuStatus {
    if adapter.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    imp::close_adapter(h(adapter))
}

/// The adapter's status as its queues saw it: lost, and how many queues a reset aborted.
///
/// # Safety
/// `out_status` must be null or valid for one `RvgpuDeviceStatus` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_device_status(
    adapter: *mut RvgpuAdapter,
    out_status: *mut RvgpuDeviceStatus,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_status, RvgpuDeviceStatus::default()) } || adapter.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: accepted by `clear`.
    out(imp::device_status(h(adapter)), |s| unsafe {
        put(out_status, s)
    })
}

/// How the adapter's device was lost (UM-10): the OS's execution state of it, the status a
/// queue read from its disconnected doorbell, whether the OS refuses the device now, and
/// whether the adapter was reset. A device that is not lost reports `lost` 0.
///
/// # Safety
/// `out_info` must be null or valid for one `RvgpuDeviceLossInfo` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_device_loss_info(
    adapter: *mut RvgpuAdapter,
    out_info: *mut RvgpuDeviceLossInfo,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_info, RvgpuDeviceLossInfo::default()) } || adapter.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: accepted by `clear`.
    out(imp::device_loss_info(h(adapter)), |s| unsafe {
        put(out_info, s)
    })
}

/// Creates a user-mode hardware queue on engine `node` with the given priority
/// (`rvgpu_queue_create` with `RVGPU_QUEUE_USER_MODE`).
///
/// # Safety
/// `out_queue` must be null or valid for one pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_create_queue(
    adapter: *mut RvgpuAdapter,
    node: u32,
    priority: u32,
    out_queue: *mut *mut RvgpuQueue,
) -> RvgpuStatus {
    let desc = RvgpuQueueDesc {
        node,
        kind: RVGPU_QUEUE_USER_MODE,
        priority,
        ring_size: 0,
    };
    // SAFETY: `desc` is a valid descriptor; the rest is forwarded.
    unsafe { rvgpu_queue_create(adapter, &desc, out_queue) }
}

/// Creates a queue as `desc` describes (engine, user- or kernel-mode, priority).
///
/// # Safety
/// `desc` must be null or valid for reading one `RvgpuQueueDesc`; `out_queue` null or valid
/// for one pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_queue_create(
    adapter: *mut RvgpuAdapter,
    desc: *const RvgpuQueueDesc,
    out_queue: *mut *mut RvgpuQueue,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_queue, ptr::null_mut()) } || adapter.is_null() || desc.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: non-null and readable per the caller's contract.
    let d = unsafe { desc.read_unaligned() };
    if d.kind > RVGPU_QUEUE_KERNEL_MODE {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: accepted by `clear`.
    out(imp::create_queue(h(adapter), &d), |q| unsafe {
        put(out_queue, handle(q))
    })
}

/// Waits for the queue's submitted work to complete, then destroys it (doorbell, queues,
/// allocations, context). The handle is invalid afterwards, whatever the status.
///
/// # Safety
/// None beyond C's: the handle is only looked up.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_destroy_queue(queue: *mut RvgpuQueue) -> RvgpuStatus {
    if queue.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    imp::destroy_queue(h(queue))
}

/// Submits `dword_count` command dwords (rvgpu packets, 64-bit words low dword first): they are
/// validated, written to the queue's ring and the doorbell is rung (or, on a kernel-mode queue
/// or after a fallback, they go through the kernel). On success `*out_progress` is the
/// progress value that marks their completion (`rvgpu_queue_wait`). `RVGPU_STATUS_DEVICE_LOST`:
/// destroy the queue and create a new one.
///
/// # Safety
/// `commands` must be null or valid for reading `dword_count` dwords, `out_progress` null or
/// valid for one `u64` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_submit(
    queue: *mut RvgpuQueue,
    commands: *const u32,
    dword_count: usize,
    out_progress: *mut u64,
) -> RvgpuStatus {
    if commands.is_null() || dword_count == 0 {
        return RvgpuStatus::InvalidArgument;
    }
    // `rvgpu_queue_submit` without fence lists: the same checks, without building the lists.
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_progress, 0) } || queue.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: the stream is valid for `dword_count` dwords per the caller's contract.
    let Some(dwords) = (unsafe { list(commands, dword_count) }) else {
        return RvgpuStatus::InvalidArgument;
    };
    // Every page of the stream touched before the queue is pinned and locked: a stream
    // pointer into nowhere faults here, with nothing held (a fault cannot unpin).
    touch(dwords);
    // Validated packet by packet on its way into the ring (`packets`): nothing is published
    // or rung unless the whole stream is valid.
    let stream = Dwords(dwords);
    match imp::submit_dwords(h(queue), stream) {
        Ok(v) => {
            // SAFETY: accepted by `clear`.
            unsafe { put(out_progress, v) };
            RvgpuStatus::Ok
        }
        // A malformed stream is INVALID_ARGUMENT whatever else is wrong (a stale handle, a
        // lost queue), as when streams were decoded before the queue was looked up.
        Err(_) if stream.words().is_err() => RvgpuStatus::InvalidArgument,
        Err(e) => e,
    }
}

/// Submits one batch: the GPU waits until every fence of `desc->waits` reached its value,
/// runs the commands, then signals every fence of `desc->signals` to its value. Everything is
/// validated (packets, fence handles) before anything is written. On success `*out_progress`
/// is the progress value that marks the batch's completion.
///
/// # Safety
/// `desc` must be null or valid for reading one `RvgpuSubmitDesc` whose arrays are valid for
/// their counts; `out_progress` null or valid for one `u64` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_queue_submit(
    queue: *mut RvgpuQueue,
    desc: *const RvgpuSubmitDesc,
    out_progress: *mut u64,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_progress, 0) } || queue.is_null() || desc.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: non-null and readable per the caller's contract.
    let d = unsafe { desc.read_unaligned() };
    // SAFETY: the descriptor's arrays are valid for their counts per the caller's contract.
    let dwords = unsafe { list(d.commands, d.dword_count) };
    // SAFETY: as above.
    let waits = unsafe { list(d.waits, d.wait_count) };
    // SAFETY: as above.
    let signals = unsafe { list(d.signals, d.signal_count) };
    let (Some(dwords), Some(waits), Some(signals)) = (dwords, waits, signals) else {
        return RvgpuStatus::InvalidArgument;
    };
    if dwords.is_empty() && waits.is_empty() && signals.is_empty() {
        return RvgpuStatus::InvalidArgument;
    }
    let parsed = if dwords.is_empty() {
        Ok(Vec::new())
    } else {
        parse_commands(dwords)
    };
    let cmds = match parsed {
        Ok(c) => c,
        Err(e) => return e,
    };
    let pairs = |l: &[RvgpuFenceValue]| l.iter().map(|f| (h(f.fence), f.value)).collect();
    let batch = Batch {
        cmds,
        waits: pairs(waits),
        signals: pairs(signals),
    };
    if batch.waits.iter().chain(&batch.signals).any(|f| f.0 == 0) {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: accepted by `clear`.
    out(imp::submit(h(queue), &batch), |v| unsafe {
        put(out_progress, v)
    })
}

/// Waits on the CPU until the work of progress value `value` completed, or `timeout_ns`
/// elapses (`0`: poll; `UINT64_MAX`: forever).
///
/// # Safety
/// None beyond C's: the handle is only looked up.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_queue_wait(
    queue: *mut RvgpuQueue,
    value: u64,
    timeout_ns: u64,
) -> RvgpuStatus {
    if queue.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    imp::queue_wait(h(queue), value, timeout_ns)
}

/// The queue's progress (submitted and completed values), path, loss and id.
///
/// # Safety
/// `out_status` must be null or valid for one `RvgpuQueueStatus` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_queue_status(
    queue: *mut RvgpuQueue,
    out_status: *mut RvgpuQueueStatus,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_status, RvgpuQueueStatus::default()) } || queue.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: accepted by `clear`.
    out(imp::queue_status(h(queue)), |s| unsafe {
        put(out_status, s)
    })
}

/// Moves up to `capacity` of the queue's oldest recorded fence operations, in submission
/// order, into `entries`, and their number into `*out_count`. The queue keeps the newest 256;
/// older ones are counted in `RvgpuQueueStatus::dropped_log_entries`.
///
/// # Safety
/// `entries` must be null or valid for writing `capacity` entries; `out_count` null or valid
/// for one `size_t` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_queue_read_fence_log(
    queue: *mut RvgpuQueue,
    entries: *mut RvgpuFenceLogEntry,
    capacity: usize,
    out_count: *mut usize,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_count, 0) } || queue.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    if capacity > 0 && entries.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    let mut buf = alloc::vec![RvgpuFenceLogEntry::default(); capacity.min(256)];
    let n = match imp::read_fence_log(h(queue), &mut buf) {
        Ok(n) => n,
        Err(e) => return e,
    };
    for (i, e) in buf.iter().take(n).enumerate() {
        // SAFETY: `i < n <= capacity`: inside the caller's array.
        let at = unsafe { entries.add(i) };
        // SAFETY: as above; writable per the caller's contract.
        unsafe { at.write_unaligned(*e) };
    }
    // SAFETY: accepted by `clear`.
    unsafe { put(out_count, n) };
    RvgpuStatus::Ok
}

/// Creates a native fence with an initial value (`rvgpu_fence_create2` without flags).
///
/// # Safety
/// `out_fence` must be null or valid for one pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_create(
    adapter: *mut RvgpuAdapter,
    initial_value: u64,
    out_fence: *mut *mut RvgpuFence,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    unsafe { rvgpu_fence_create2(adapter, initial_value, 0, out_fence) }
}

/// Creates a native (timeline) fence with an initial value; `RVGPU_FENCE_SHAREABLE` lets it
/// be shared with other processes (`rvgpu_fence_share`).
///
/// # Safety
/// `out_fence` must be null or valid for one pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_create2(
    adapter: *mut RvgpuAdapter,
    initial_value: u64,
    flags: u32,
    out_fence: *mut *mut RvgpuFence,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_fence, ptr::null_mut()) }
        || adapter.is_null()
        || flags & !RVGPU_FENCE_SHAREABLE != 0
    {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: accepted by `clear`.
    out(
        imp::fence_create(h(adapter), initial_value, flags),
        |f| unsafe { put(out_fence, handle(f)) },
    )
}

/// Makes an NT handle for a fence created `RVGPU_FENCE_SHAREABLE` (`D3DKMTShareObjects`); the
/// caller passes it to another process (`DuplicateHandle`) and closes it (`CloseHandle`).
///
/// # Safety
/// `out_nt_handle` must be null or valid for one pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_share(
    fence: *mut RvgpuFence,
    out_nt_handle: *mut *mut c_void,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_nt_handle, ptr::null_mut()) } || fence.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: accepted by `clear`.
    out(imp::fence_share(h(fence)), |n| unsafe {
        put(out_nt_handle, handle(n))
    })
}

/// Opens a shared fence from an NT handle of this process
/// (`D3DKMTOpenNativeFenceFromNtHandle`); the NT handle stays the caller's to close.
///
/// # Safety
/// `out_fence` must be null or valid for one pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_open(
    adapter: *mut RvgpuAdapter,
    nt_handle: *mut c_void,
    out_fence: *mut *mut RvgpuFence,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_fence, ptr::null_mut()) } || adapter.is_null() || nt_handle.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: accepted by `clear`.
    out(imp::fence_open(h(adapter), h(nt_handle)), |f| unsafe {
        put(out_fence, handle(f))
    })
}

/// Signals `fence` to `value` from the CPU.
///
/// # Safety
/// None beyond C's: the handle is only looked up.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_signal(fence: *mut RvgpuFence, value: u64) -> RvgpuStatus {
    if fence.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    imp::fence_signal(h(fence), value)
}

/// The fence's current value.
///
/// # Safety
/// `out_value` must be null or valid for one `u64` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_value(
    fence: *mut RvgpuFence,
    out_value: *mut u64,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_value, 0) } || fence.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: accepted by `clear`.
    out(imp::fence_value(h(fence)), |v| unsafe { put(out_value, v) })
}

/// Waits on the CPU until `fence` reaches `value` or `timeout_ns` elapses
/// (`0`: poll; `UINT64_MAX`: forever). `RVGPU_STATUS_DEVICE_LOST` if the fence went away
/// while waiting.
///
/// # Safety
/// None beyond C's: the handle is only looked up.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_wait(
    fence: *mut RvgpuFence,
    value: u64,
    timeout_ns: u64,
) -> RvgpuStatus {
    if fence.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    imp::fence_wait(h(fence), value, timeout_ns)
}

/// Registers a CPU wait for the fence to reach `value` that signals `event` (a Win32 event
/// of this process) when it is released, and returns at once: the application waits on the
/// event (`WaitForSingleObject`). A fence destroyed meanwhile also signals it; read the value
/// to tell. A handle the OS does not accept as an event is `RVGPU_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// No pointer is dereferenced (the fence and the event are handles).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_wait_async(
    fence: *mut RvgpuFence,
    value: u64,
    event: *mut c_void,
) -> RvgpuStatus {
    if fence.is_null() || event.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    imp::fence_wait_async(h(fence), value, h(event))
}

/// Destroys a native fence; a CPU wait on it in another thread returns
/// `RVGPU_STATUS_DEVICE_LOST`.
///
/// # Safety
/// None beyond C's: the handle is only looked up.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_destroy(fence: *mut RvgpuFence) -> RvgpuStatus {
    if fence.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    imp::fence_destroy(h(fence))
}

/// Creates a CPU-visible buffer of `size` bytes (VidMm may round it up to whole pages) on
/// `adapter`. It keeps the adapter's device alive until destroyed.
///
/// # Safety
/// `out_buffer` must be null or valid for one pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_create(
    adapter: *mut RvgpuAdapter,
    size: u64,
    out_buffer: *mut *mut RvgpuBuffer,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_buffer, ptr::null_mut()) } || adapter.is_null() || size == 0 {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: accepted by `clear`.
    out(buf_imp::create_(h(adapter), size), |b| unsafe {
        put(out_buffer, handle(b))
    })
}

/// Destroys a buffer without waiting. `queues` (`queue_count` handles; NULL if 0) are the live
/// queues that may have used it: memory no listed queue still uses is freed at once, the rest
/// once the GPU is done with it (the OS defers it). On `RVGPU_STATUS_INVALID_ARGUMENT` or
/// `RVGPU_STATUS_INVALID_HANDLE` (a bad entry) the buffer is left as it was; on any other
/// status it is gone.
///
/// # Safety
/// `queues` must be null or valid for reading `queue_count` handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_destroy(
    buffer: *mut RvgpuBuffer,
    queues: *const *mut RvgpuQueue,
    queue_count: usize,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    let Some(list) = (unsafe { queue_tokens(queues, queue_count) }) else {
        return RvgpuStatus::InvalidArgument;
    };
    if buffer.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    buf_imp::destroy_(h(buffer), &list)
}

/// The GPU virtual address of the buffer's memory now, for packets passed to `rvgpu_submit`.
/// A `RVGPU_LOCK_DISCARD` lock of a busy buffer moves it to new memory and so changes it; work
/// submitted this way is not tracked for locks (see the header).
///
/// # Safety
/// `out_gpu_va` must be null or valid for one `u64` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_gpu_va(
    buffer: *mut RvgpuBuffer,
    out_gpu_va: *mut u64,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_gpu_va, 0) } || buffer.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: accepted by `clear`.
    out(buf_imp::gpu_va(h(buffer)), |v| unsafe {
        put(out_gpu_va, v)
    })
}

/// The buffer's current GPU address and its lock counters.
///
/// # Safety
/// `out_status` must be null or valid for one `RvgpuBufferStatus` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_status(
    buffer: *mut RvgpuBuffer,
    out_status: *mut RvgpuBufferStatus,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_status, RvgpuBufferStatus::default()) } || buffer.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: accepted by `clear`.
    out(buf_imp::status(h(buffer)), |v| unsafe {
        put(out_status, v)
    })
}

/// Maps the buffer for the CPU with `flags` (`RVGPU_LOCK_*`: READ and/or WRITE, or DISCARD or
/// NO_OVERWRITE, each optionally with DO_NOT_WAIT) and stores the mapping in `*out_data`.
/// `queues` (`queue_count` handles; NULL if 0) must include every live queue that was given
/// work on this buffer through `rvgpu_buffer_fill` / `rvgpu_buffer_copy`; a missing one is
/// `RVGPU_STATUS_INVALID_ARGUMENT`. A queue since destroyed need not be named: destroying a
/// queue takes it off the hardware (its work completed or never runs), so its uses are over.
/// Without DO_NOT_WAIT the call blocks until the GPU work the lock must wait for completed;
/// with it, such a lock returns `RVGPU_STATUS_WAS_STILL_DRAWING` at once. The mapping is valid
/// until `rvgpu_buffer_unlock`; locking a locked buffer is `RVGPU_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `queues` must be null or valid for reading `queue_count` handles; `out_data` null or valid
/// for one pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_lock(
    buffer: *mut RvgpuBuffer,
    flags: u32,
    queues: *const *mut RvgpuQueue,
    queue_count: usize,
    out_data: *mut *mut c_void,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_data, ptr::null_mut()) } || buffer.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: forwarded caller contract.
    let Some(list) = (unsafe { queue_tokens(queues, queue_count) }) else {
        return RvgpuStatus::InvalidArgument;
    };
    // SAFETY: accepted by `clear`.
    out(buf_imp::lock_(h(buffer), flags, &list), |p| unsafe {
        put(out_data, p)
    })
}

/// Ends a lock; the pointer it returned must not be used afterwards.
///
/// # Safety
/// None beyond C's: the handle is only looked up.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_unlock(buffer: *mut RvgpuBuffer) -> RvgpuStatus {
    if buffer.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    buf_imp::unlock_(h(buffer))
}

/// Submits on `queue` a fill of `bytes` bytes of `buffer` at `offset` with the 64-bit
/// `pattern` (offset and size multiples of 8, inside the buffer) and records that the queue's
/// `*out_progress` writes the buffer, for later locks.
///
/// # Safety
/// `out_progress` must be null or valid for one `u64` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_fill(
    queue: *mut RvgpuQueue,
    buffer: *mut RvgpuBuffer,
    offset: u64,
    bytes: u64,
    pattern: u64,
    out_progress: *mut u64,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_progress, 0) } || queue.is_null() || buffer.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    let r = buf_imp::fill(h(queue), h(buffer), offset, bytes, pattern);
    // SAFETY: accepted by `clear`.
    out(r, |v| unsafe { put(out_progress, v) })
}

/// Submits on `queue` a copy of `bytes` bytes from `src` at `src_offset` to `dst` at
/// `dst_offset` (two different buffers; offsets and size multiples of 8, in range) and records
/// that `*out_progress` reads `src` and writes `dst`.
///
/// # Safety
/// `out_progress` must be null or valid for one `u64` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_copy(
    queue: *mut RvgpuQueue,
    src: *mut RvgpuBuffer,
    src_offset: u64,
    dst: *mut RvgpuBuffer,
    dst_offset: u64,
    bytes: u64,
    out_progress: *mut u64,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_progress, 0) } || queue.is_null() || src.is_null() || dst.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    let r = buf_imp::copy(h(queue), h(src), src_offset, h(dst), dst_offset, bytes);
    // SAFETY: accepted by `clear`.
    out(r, |v| unsafe { put(out_progress, v) })
}

/// The GPU VA calls over the types behind the handles (`va`): `WinKmt` on Windows, the
/// unit tests' mock on the host.
#[cfg(any(windows, test))]
mod va_imp {
    #[cfg(windows)]
    type K = alloc::sync::Arc<crate::kmt_windows::WinKmt>;
    #[cfg(all(test, not(windows)))]
    use super::mock::MockKmt as K;

    pub fn reserve(a: usize, base: u64, size: u64) -> Result<u64, super::RvgpuStatus> {
        super::va::reserve::<K>(a, base, size)
    }
    pub fn map(
        b: usize,
        va: rvgpu_hw::addr::GpuVa,
        first: u64,
        pages: u64,
    ) -> Result<(), super::RvgpuStatus> {
        super::va::map::<K>(b, va.get(), first, pages)
    }
    pub fn free(a: usize, base: u64, size: u64) -> Result<(), super::RvgpuStatus> {
        super::va::free::<K>(a, base, size)
    }
}

/// No D3DKMT off Windows: no adapter, so no VA space either.
#[cfg(not(any(windows, test)))]
mod va_imp {
    use super::RvgpuStatus;

    pub fn reserve(_a: usize, _base: u64, _size: u64) -> Result<u64, RvgpuStatus> {
        Err(RvgpuStatus::InvalidHandle)
    }
    pub fn map(
        _b: usize,
        _va: rvgpu_hw::addr::GpuVa,
        _first: u64,
        _pages: u64,
    ) -> Result<(), RvgpuStatus> {
        Err(RvgpuStatus::InvalidHandle)
    }
    pub fn free(_a: usize, _base: u64, _size: u64) -> Result<(), RvgpuStatus> {
        Err(RvgpuStatus::InvalidHandle)
    }
}

/// Reserves `size` bytes (a non-zero multiple of 4 KiB) of the adapter's GPU VA space at
/// `base` (64 KiB aligned; 0: the OS chooses) and returns the range's address. The range maps
/// nothing until `rvgpu_buffer_map_va` maps buffer pages into it.
///
/// # Safety
/// `out_va` must be null or valid for one `u64` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_va_reserve(
    adapter: *mut RvgpuAdapter,
    base: u64,
    size: u64,
    out_va: *mut u64,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear(out_va, 0) } || adapter.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    if let Err(e) = va::check_reserve(base, size) {
        return e;
    }
    // SAFETY: accepted by `clear`.
    out(va_imp::reserve(h(adapter), base, size), |v| unsafe {
        put(out_va, v)
    })
}

/// Maps `page_count` 4 KiB pages of the buffer's current memory, from page `first_page`,
/// read-write at `va` (page-aligned, inside a range `rvgpu_va_reserve` reserved on the
/// buffer's adapter), and returns once the GPU may use the mapping. Pages past the buffer's
/// end are `InvalidArgument`.
///
/// # Safety
/// No pointer is dereferenced (the buffer is a handle).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_map_va(
    buffer: *mut RvgpuBuffer,
    va: u64,
    first_page: u64,
    page_count: u64,
) -> RvgpuStatus {
    if buffer.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    if let Err(e) = va::check_map(va, first_page, page_count) {
        return e;
    }
    let va = rvgpu_hw::addr::GpuVa::new(va);
    out(va_imp::map(h(buffer), va, first_page, page_count), |()| {})
}

/// Frees the range of `size` bytes at `base` that `rvgpu_va_reserve` reserved on the adapter:
/// every page of it is unmapped; GPU work that uses it afterwards faults and loses the
/// device.
///
/// # Safety
/// No pointer is dereferenced (the adapter is a handle).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_va_free(
    adapter: *mut RvgpuAdapter,
    base: u64,
    size: u64,
) -> RvgpuStatus {
    if adapter.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    if let Err(e) = va::check_free(base, size) {
        return e;
    }
    out(va_imp::free(h(adapter), base, size), |()| {})
}

/// A static, NUL-terminated English name for a status value ("unknown status" for a value
/// that is none).
#[unsafe(no_mangle)]
pub extern "C" fn rvgpu_status_string(status: u32) -> *const c_char {
    // A `u32`, not the enum: a C caller may pass any integer, and a Rust enum with a value
    // outside its variants would be undefined behaviour.
    let s: &'static core::ffi::CStr = match status {
        0 => c"ok",
        1 => c"invalid argument",
        2 => c"not implemented",
        3 => c"device lost",
        4 => c"timeout",
        5 => c"out of memory",
        6 => c"kernel call failed",
        7 => c"was still drawing",
        8 => c"invalid handle",
        _ => c"unknown status",
    };
    s.as_ptr()
}
