//! The UMD's C API, exported by rvgpu_umd.dll and declared in `umd/include/rvgpu_umd.h`
//! (tests/umd_header.rs checks that the two agree; tests/pe_images.rs that the DLL exports
//! every function here).
//!
//! Status:
//! - **On Windows** the calls are implemented (`capi_windows`): an adapter is a
//!   [`WinKmt`](crate::kmt_windows::WinKmt) (adapter, D3D device, paging queue); a queue is the
//!   portable [`UserQueue`](crate::submit::UserQueue) over it (user-mode submission with the
//!   kernel-mode fallback); `rvgpu_submit` parses the packets and submits them;
//!   `rvgpu_queue_wait` waits on a progress value; fences are native fences
//!   (`D3DKMTCreateNativeFence`), signalled and waited from the CPU. This is compiled by the
//!   Windows cross-build only; it has run in the x86-64 emulator over the simulated OS's
//!   thunks (docs/pe-image.md, `simos/tests/pe_umd.rs`), never on Windows; queue creation cannot succeed yet on a real
//!   system because the v1 KMD gives allocations no GPU virtual address (kmt_windows.rs), so
//!   `rvgpu_create_queue` returns the failing thunk's status mapped to an [`RvgpuStatus`]
//!   (`NotImplemented` for `STATUS_NOT_SUPPORTED`).
//! - **Elsewhere** (the host build, used by tests) there is no D3DKMT: `rvgpu_open_adapter`
//!   returns [`RvgpuStatus::NotImplemented`] after argument validation, so no adapter, queue or
//!   fence handle can exist, and the other calls validate their arguments and return
//!   `NotImplemented` too. The portable core is tested directly (`submit`) and through the
//!   simulated OS.
//!
//! Command streams are rvgpu packets (docs/hardware.md, "Command set"): 64-bit words, each
//! passed as two 32-bit dwords, low half first; they are decoded and validated before anything
//! is written ([`parse_commands`]).
//!
//! Buffers (AL-01 … AL-03; `capi_buffer`): `rvgpu_buffer_create` makes a CPU-visible
//! buffer on an adapter; `rvgpu_buffer_lock` maps it with `RVGPU_LOCK_*` flags (the values of
//! [`LockFlags`]) and names the queues whose work may use it, since the UMD tracks use per
//! queue; a busy buffer locked with `RVGPU_LOCK_DO_NOT_WAIT` returns
//! [`RvgpuStatus::WasStillDrawing`]. GPU work is tracked when it goes through
//! `rvgpu_buffer_fill` / `rvgpu_buffer_copy` (one submission each); the packets of
//! `rvgpu_submit` are not, so work that touches a buffer through its `rvgpu_buffer_gpu_va`
//! there must be waited for by the caller before a lock. Off Windows these calls validate their
//! arguments and return `NotImplemented`, like the others.
//!
//! Threading: adapters and fences may be used from any thread; one queue, and one buffer, must
//! not be used by two threads at the same time.
#![allow(clippy::missing_safety_doc)] // each function documents its contract as "Safety" below

use alloc::vec::Vec;
use core::ffi::{c_char, c_void};
use core::ptr;

use rvgpu_hw::cmd::{decode, decode_header, Command};

use crate::kmt::NtStatus;
use crate::submit::SubmitError;
use crate::usage::LockFlags;

#[cfg(windows)]
use crate::capi_windows as imp;

/// Result of every API call.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RvgpuStatus {
    /// Success.
    Ok = 0,
    /// A pointer was null or a value out of range.
    InvalidArgument = 1,
    /// Not implemented yet (see the module documentation).
    NotImplemented = 2,
    /// The adapter was removed or reset.
    DeviceLost = 3,
    /// A wait timed out.
    Timeout = 4,
    /// Out of memory.
    OutOfMemory = 5,
    /// A kernel thunk failed for another reason.
    KernelError = 6,
    /// A lock with `RVGPU_LOCK_DO_NOT_WAIT` found the buffer in use by queued work
    /// (D3D's `WasStillDrawing`); nothing was locked.
    WasStillDrawing = 7,
}

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

/// NTSTATUS → API status.
pub fn status_from_nt(s: NtStatus) -> RvgpuStatus {
    // The bit patterns of the NTSTATUS values (negative as i32).
    const STATUS_NO_MEMORY: u32 = 0xC000_0017;
    const STATUS_INSUFFICIENT_RESOURCES: u32 = 0xC000_009A;
    const STATUS_NOT_SUPPORTED: u32 = 0xC000_00BB;
    const STATUS_DEVICE_REMOVED: u32 = 0xC000_02B6;
    const STATUS_TIMEOUT: u32 = 0x0000_0102;
    match s.0 as u32 {
        STATUS_NO_MEMORY | STATUS_INSUFFICIENT_RESOURCES => RvgpuStatus::OutOfMemory,
        STATUS_NOT_SUPPORTED => RvgpuStatus::NotImplemented,
        STATUS_DEVICE_REMOVED => RvgpuStatus::DeviceLost,
        STATUS_TIMEOUT => RvgpuStatus::Timeout,
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
    }
}

/// Opaque adapter handle.
#[repr(C)]
#[derive(Debug)]
pub struct RvgpuAdapter {
    _private: [u8; 0],
}
/// Opaque hardware-queue handle.
#[repr(C)]
#[derive(Debug)]
pub struct RvgpuQueue {
    _private: [u8; 0],
}
/// Opaque native-fence handle.
#[repr(C)]
#[derive(Debug)]
pub struct RvgpuFence {
    _private: [u8; 0],
}
/// Opaque buffer handle.
#[repr(C)]
#[derive(Debug)]
pub struct RvgpuBuffer {
    _private: [u8; 0],
}

/// Decodes a command stream of `dwords` (pairs forming little-endian 64-bit words) into
/// packets; `InvalidArgument` if the count is odd or a packet is malformed or cut short.
pub fn parse_commands(dwords: &[u32]) -> Result<Vec<Command>, RvgpuStatus> {
    if !dwords.len().is_multiple_of(2) {
        return Err(RvgpuStatus::InvalidArgument);
    }
    let words: Vec<u64> = dwords
        .chunks_exact(2)
        .map(|p| match p {
            [lo, hi] => u64::from(*lo) | (u64::from(*hi) << 32),
            _ => 0,
        })
        .collect();
    let mut out = Vec::new();
    let mut i = 0usize;
    while let Some(&first) = words.get(i) {
        let h = decode_header(first).map_err(|_| RvgpuStatus::InvalidArgument)?;
        let end = i
            .checked_add(usize::from(h.len))
            .ok_or(RvgpuStatus::InvalidArgument)?;
        let packet = words.get(i..end).ok_or(RvgpuStatus::InvalidArgument)?;
        out.push(decode(packet).map_err(|_| RvgpuStatus::InvalidArgument)?);
        i = end;
    }
    Ok(out)
}

/// No D3DKMT off Windows: nothing can be opened, so no handle ever reaches the other calls.
#[cfg(not(windows))]
mod imp {
    use super::{Command, RvgpuAdapter, RvgpuFence, RvgpuQueue, RvgpuStatus};

    const NO: RvgpuStatus = RvgpuStatus::NotImplemented;

    pub fn open_adapter(_low: u32, _high: i32) -> Result<*mut RvgpuAdapter, RvgpuStatus> {
        Err(NO)
    }
    pub unsafe fn close_adapter(_a: *mut RvgpuAdapter) -> RvgpuStatus {
        NO
    }
    pub unsafe fn create_queue(
        _a: *mut RvgpuAdapter,
        _node: u32,
        _priority: u32,
    ) -> Result<*mut RvgpuQueue, RvgpuStatus> {
        Err(NO)
    }
    pub unsafe fn destroy_queue(_q: *mut RvgpuQueue) -> RvgpuStatus {
        NO
    }
    pub unsafe fn submit(_q: *mut RvgpuQueue, _cmds: &[Command]) -> Result<u64, RvgpuStatus> {
        Err(NO)
    }
    pub unsafe fn queue_wait(_q: *mut RvgpuQueue, _value: u64, _timeout_ns: u64) -> RvgpuStatus {
        NO
    }
    pub unsafe fn fence_create(
        _a: *mut RvgpuAdapter,
        _initial: u64,
    ) -> Result<*mut RvgpuFence, RvgpuStatus> {
        Err(NO)
    }
    pub unsafe fn fence_signal(_f: *mut RvgpuFence, _value: u64) -> RvgpuStatus {
        NO
    }
    pub unsafe fn fence_wait(_f: *mut RvgpuFence, _value: u64, _timeout_ns: u64) -> RvgpuStatus {
        NO
    }
    pub unsafe fn fence_destroy(_f: *mut RvgpuFence) -> RvgpuStatus {
        NO
    }
}

/// The buffer calls over the types behind the handles: `WinKmt` and its `UserQueue` on
/// Windows, the mock of the unit tests on the host.
#[cfg(any(windows, test))]
mod buf_imp {
    use super::{RvgpuAdapter, RvgpuBuffer, RvgpuQueue, RvgpuStatus};
    use crate::capi_buffer as core_;
    use core::ffi::c_void;

    #[cfg(windows)]
    type K = alloc::sync::Arc<crate::kmt_windows::WinKmt>;
    #[cfg(windows)]
    type Q = crate::submit::UserQueue<K>;
    #[cfg(all(test, not(windows)))]
    use super::buffer_tests::{MockKmt as K, MockQueue as Q};

    pub unsafe fn create(a: *mut RvgpuAdapter, size: u64) -> Result<*mut RvgpuBuffer, RvgpuStatus> {
        // SAFETY: forwarded caller contract.
        unsafe { core_::create::<K>(a, size) }
    }
    pub unsafe fn destroy(b: *mut RvgpuBuffer, queues: &[*mut RvgpuQueue]) -> RvgpuStatus {
        // SAFETY: forwarded caller contract.
        unsafe { core_::destroy::<K, Q>(b, queues) }
    }
    pub unsafe fn gpu_va(b: *mut RvgpuBuffer) -> Result<u64, RvgpuStatus> {
        // SAFETY: forwarded caller contract.
        Ok(unsafe { core_::gpu_va::<K>(b) })
    }
    pub unsafe fn lock(
        b: *mut RvgpuBuffer,
        flags: u32,
        queues: &[*mut RvgpuQueue],
    ) -> Result<*mut c_void, RvgpuStatus> {
        // SAFETY: forwarded caller contract.
        unsafe { core_::lock::<K, Q>(b, flags, queues) }
    }
    pub unsafe fn unlock(b: *mut RvgpuBuffer) -> RvgpuStatus {
        // SAFETY: forwarded caller contract.
        unsafe { core_::unlock::<K>(b) }
    }
    pub unsafe fn fill(
        q: *mut RvgpuQueue,
        b: *mut RvgpuBuffer,
        offset: u64,
        bytes: u64,
        pattern: u64,
    ) -> Result<u64, RvgpuStatus> {
        // SAFETY: forwarded caller contract.
        unsafe { core_::fill::<K, Q>(q, b, offset, bytes, pattern) }
    }
    pub unsafe fn copy(
        q: *mut RvgpuQueue,
        src: *mut RvgpuBuffer,
        src_offset: u64,
        dst: *mut RvgpuBuffer,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<u64, RvgpuStatus> {
        // SAFETY: forwarded caller contract.
        unsafe { core_::copy::<K, Q>(q, src, src_offset, dst, dst_offset, bytes) }
    }
}

/// No D3DKMT off Windows: no adapter, so no buffer either.
#[cfg(not(any(windows, test)))]
mod buf_imp {
    use super::{RvgpuAdapter, RvgpuBuffer, RvgpuQueue, RvgpuStatus};
    use core::ffi::c_void;

    const NO: RvgpuStatus = RvgpuStatus::NotImplemented;

    pub unsafe fn create(
        _a: *mut RvgpuAdapter,
        _size: u64,
    ) -> Result<*mut RvgpuBuffer, RvgpuStatus> {
        Err(NO)
    }
    pub unsafe fn destroy(_b: *mut RvgpuBuffer, _queues: &[*mut RvgpuQueue]) -> RvgpuStatus {
        NO
    }
    pub unsafe fn gpu_va(_b: *mut RvgpuBuffer) -> Result<u64, RvgpuStatus> {
        Err(NO)
    }
    pub unsafe fn lock(
        _b: *mut RvgpuBuffer,
        _flags: u32,
        _queues: &[*mut RvgpuQueue],
    ) -> Result<*mut c_void, RvgpuStatus> {
        Err(NO)
    }
    pub unsafe fn unlock(_b: *mut RvgpuBuffer) -> RvgpuStatus {
        NO
    }
    pub unsafe fn fill(
        _q: *mut RvgpuQueue,
        _b: *mut RvgpuBuffer,
        _offset: u64,
        _bytes: u64,
        _pattern: u64,
    ) -> Result<u64, RvgpuStatus> {
        Err(NO)
    }
    pub unsafe fn copy(
        _q: *mut RvgpuQueue,
        _src: *mut RvgpuBuffer,
        _src_offset: u64,
        _dst: *mut RvgpuBuffer,
        _dst_offset: u64,
        _bytes: u64,
    ) -> Result<u64, RvgpuStatus> {
        Err(NO)
    }
}

/// A C array of queue handles as a slice (`count` 0 allows a null array).
///
/// # Safety
/// `queues` is null or valid for reading `count` pointers for the slice's lifetime.
unsafe fn queue_list<'a>(
    queues: *const *mut RvgpuQueue,
    count: usize,
) -> Option<&'a [*mut RvgpuQueue]> {
    if count == 0 {
        return Some(&[]);
    }
    if queues.is_null() {
        return None;
    }
    // SAFETY: non-null and readable for `count` entries per the caller's contract.
    Some(unsafe { core::slice::from_raw_parts(queues, count) })
}

/// Clears an out-pointer if it is non-null; reports whether it was.
///
/// # Safety
/// `out` is null or valid for a pointer-sized write.
unsafe fn clear_out<T>(out: *mut *mut T) -> bool {
    if out.is_null() {
        return false;
    }
    // SAFETY: non-null and writable per the caller's contract.
    unsafe { out.write(ptr::null_mut()) };
    true
}

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
    if !unsafe { clear_out(out_adapter) } {
        return RvgpuStatus::InvalidArgument;
    }
    match imp::open_adapter(luid_low, luid_high) {
        Ok(a) => {
            // SAFETY: checked non-null above; writable per the caller's contract.
            unsafe { out_adapter.write(a) };
            RvgpuStatus::Ok
        }
        Err(e) => e,
    }
}

/// Closes an adapter opened by `rvgpu_open_adapter`. Queues and fences created on it stay
/// usable until destroyed (they hold the device).
///
/// # Safety
/// `adapter` must be null or a handle from `rvgpu_open_adapter` not yet closed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_close_adapter(adapter: *mut RvgpuAdapter) -> RvgpuStatus {
    if adapter.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: a live adapter handle per the caller's contract.
    unsafe { imp::close_adapter(adapter) }
}

/// Creates a hardware queue on engine `node` with the given priority.
///
/// # Safety
/// `adapter` must be a live adapter handle; `out_queue` null or valid for one pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_create_queue(
    adapter: *mut RvgpuAdapter,
    node: u32,
    priority: u32,
    out_queue: *mut *mut RvgpuQueue,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear_out(out_queue) } || adapter.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: a live adapter handle per the caller's contract.
    match unsafe { imp::create_queue(adapter, node, priority) } {
        Ok(q) => {
            // SAFETY: checked non-null above; writable per the caller's contract.
            unsafe { out_queue.write(q) };
            RvgpuStatus::Ok
        }
        Err(e) => e,
    }
}

/// Waits for the queue's submitted work to complete, then destroys it (doorbell, queues,
/// allocations, context). The handle is invalid afterwards, whatever the status.
///
/// # Safety
/// `queue` must be null or a live queue handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_destroy_queue(queue: *mut RvgpuQueue) -> RvgpuStatus {
    if queue.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: a live queue handle per the caller's contract.
    unsafe { imp::destroy_queue(queue) }
}

/// Submits `dword_count` command dwords (rvgpu packets, 64-bit words low dword first): they are
/// validated, written to the queue's ring and the doorbell is rung (or, after a fallback, they
/// go through the kernel-mode queue). On success `*out_progress` is the progress value that
/// marks their completion (`rvgpu_queue_wait`). `RVGPU_STATUS_DEVICE_LOST`: destroy the queue
/// and create a new one.
///
/// # Safety
/// `queue` must be a live queue handle, `commands` valid for reading `dword_count` dwords,
/// `out_progress` null or valid for one `u64` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_submit(
    queue: *mut RvgpuQueue,
    commands: *const u32,
    dword_count: usize,
    out_progress: *mut u64,
) -> RvgpuStatus {
    if queue.is_null() || commands.is_null() || dword_count == 0 || out_progress.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: non-null and writable per the caller's contract.
    unsafe { out_progress.write(0) };
    // SAFETY: non-null and readable for `dword_count` dwords per the caller's contract.
    let dwords = unsafe { core::slice::from_raw_parts(commands, dword_count) };
    let cmds = match parse_commands(dwords) {
        Ok(c) => c,
        Err(e) => return e,
    };
    // SAFETY: a live queue handle per the caller's contract.
    match unsafe { imp::submit(queue, &cmds) } {
        Ok(v) => {
            // SAFETY: as above.
            unsafe { out_progress.write(v) };
            RvgpuStatus::Ok
        }
        Err(e) => e,
    }
}

/// Waits on the CPU until the work of progress value `value` (from `rvgpu_submit`) completed,
/// or `timeout_ns` elapses (`0`: poll; `UINT64_MAX`: forever).
///
/// # Safety
/// `queue` must be null or a live queue handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_queue_wait(
    queue: *mut RvgpuQueue,
    value: u64,
    timeout_ns: u64,
) -> RvgpuStatus {
    if queue.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: a live queue handle per the caller's contract.
    unsafe { imp::queue_wait(queue, value, timeout_ns) }
}

/// Creates a native fence with an initial value.
///
/// # Safety
/// `adapter` must be a live adapter handle; `out_fence` null or valid for one pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_create(
    adapter: *mut RvgpuAdapter,
    initial_value: u64,
    out_fence: *mut *mut RvgpuFence,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear_out(out_fence) } || adapter.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: a live adapter handle per the caller's contract.
    match unsafe { imp::fence_create(adapter, initial_value) } {
        Ok(f) => {
            // SAFETY: checked non-null above; writable per the caller's contract.
            unsafe { out_fence.write(f) };
            RvgpuStatus::Ok
        }
        Err(e) => e,
    }
}

/// Signals `fence` to `value` from the CPU.
///
/// # Safety
/// `fence` must be null or a live fence handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_signal(fence: *mut RvgpuFence, value: u64) -> RvgpuStatus {
    if fence.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: a live fence handle per the caller's contract.
    unsafe { imp::fence_signal(fence, value) }
}

/// Waits on the CPU until `fence` reaches `value` or `timeout_ns` elapses
/// (`0`: poll; `UINT64_MAX`: forever).
///
/// # Safety
/// `fence` must be null or a live fence handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_wait(
    fence: *mut RvgpuFence,
    value: u64,
    timeout_ns: u64,
) -> RvgpuStatus {
    if fence.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: a live fence handle per the caller's contract.
    unsafe { imp::fence_wait(fence, value, timeout_ns) }
}

/// Destroys a native fence.
///
/// # Safety
/// `fence` must be null or a live fence handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_destroy(fence: *mut RvgpuFence) -> RvgpuStatus {
    if fence.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: a live fence handle per the caller's contract.
    unsafe { imp::fence_destroy(fence) }
}

/// Creates a CPU-visible buffer of `size` bytes (VidMm may round it up to whole pages) on
/// `adapter`. It keeps the adapter's device alive until destroyed.
///
/// # Safety
/// `adapter` must be null or a live adapter handle; `out_buffer` null or valid for one pointer
/// write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_create(
    adapter: *mut RvgpuAdapter,
    size: u64,
    out_buffer: *mut *mut RvgpuBuffer,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear_out(out_buffer) } || adapter.is_null() || size == 0 {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: a live adapter handle per the caller's contract.
    match unsafe { buf_imp::create(adapter, size) } {
        Ok(b) => {
            // SAFETY: checked non-null above; writable per the caller's contract.
            unsafe { out_buffer.write(b) };
            RvgpuStatus::Ok
        }
        Err(e) => e,
    }
}

/// Destroys a buffer without waiting. `queues` (`queue_count` handles; NULL if 0) are the live
/// queues that may have used it: memory no listed queue still uses is freed at once, the rest
/// once the GPU is done with it (the OS defers it). On `RVGPU_STATUS_INVALID_ARGUMENT` (a null
/// entry) the buffer is left as it was; on any other status it is gone.
///
/// # Safety
/// `buffer` must be null or a live buffer handle; `queues` null or valid for reading
/// `queue_count` pointers, each null or a live queue handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_destroy(
    buffer: *mut RvgpuBuffer,
    queues: *const *mut RvgpuQueue,
    queue_count: usize,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    let Some(list) = (unsafe { queue_list(queues, queue_count) }) else {
        return RvgpuStatus::InvalidArgument;
    };
    if buffer.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: a live buffer and queues per the caller's contract.
    unsafe { buf_imp::destroy(buffer, list) }
}

/// The GPU virtual address of the buffer's memory now, for packets passed to `rvgpu_submit`.
/// A `RVGPU_LOCK_DISCARD` lock of a busy buffer moves it to new memory and so changes it; work
/// submitted this way is not tracked for locks (see the header).
///
/// # Safety
/// `buffer` must be null or a live buffer handle; `out_gpu_va` null or valid for one `u64`
/// write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_gpu_va(
    buffer: *mut RvgpuBuffer,
    out_gpu_va: *mut u64,
) -> RvgpuStatus {
    if buffer.is_null() || out_gpu_va.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: non-null and writable per the caller's contract.
    unsafe { out_gpu_va.write(0) };
    // SAFETY: a live buffer handle per the caller's contract.
    match unsafe { buf_imp::gpu_va(buffer) } {
        Ok(va) => {
            // SAFETY: as above.
            unsafe { out_gpu_va.write(va) };
            RvgpuStatus::Ok
        }
        Err(e) => e,
    }
}

/// Maps the buffer for the CPU with `flags` (`RVGPU_LOCK_*`: READ and/or WRITE, or DISCARD or
/// NO_OVERWRITE, each optionally with DO_NOT_WAIT) and stores the mapping in `*out_data`.
/// `queues` (`queue_count` handles; NULL if 0) must include every live queue that was given
/// work on this buffer through `rvgpu_buffer_fill` / `rvgpu_buffer_copy`; a missing one is
/// `RVGPU_STATUS_INVALID_ARGUMENT`. A queue since destroyed need not be named: destroying a
/// queue takes it off the hardware (its work completed or never runs), so its uses are over.
/// Without DO_NOT_WAIT the call blocks until the GPU work the lock must wait for completed;
/// with it, such a lock returns `RVGPU_STATUS_WAS_STILL_DRAWING` at once. The mapping is valid until `rvgpu_buffer_unlock`;
/// locking a locked buffer is `RVGPU_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `buffer` must be null or a live buffer handle; `queues` null or valid for reading
/// `queue_count` pointers, each null or a live queue handle; `out_data` null or valid for one
/// pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_lock(
    buffer: *mut RvgpuBuffer,
    flags: u32,
    queues: *const *mut RvgpuQueue,
    queue_count: usize,
    out_data: *mut *mut c_void,
) -> RvgpuStatus {
    // SAFETY: forwarded caller contract.
    if !unsafe { clear_out(out_data) } || buffer.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: forwarded caller contract.
    let Some(list) = (unsafe { queue_list(queues, queue_count) }) else {
        return RvgpuStatus::InvalidArgument;
    };
    // SAFETY: a live buffer and queues per the caller's contract.
    match unsafe { buf_imp::lock(buffer, flags, list) } {
        Ok(p) => {
            // SAFETY: checked non-null above; writable per the caller's contract.
            unsafe { out_data.write(p) };
            RvgpuStatus::Ok
        }
        Err(e) => e,
    }
}

/// Ends a lock; the pointer it returned must not be used afterwards.
///
/// # Safety
/// `buffer` must be null or a live buffer handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_unlock(buffer: *mut RvgpuBuffer) -> RvgpuStatus {
    if buffer.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: a live buffer handle per the caller's contract.
    unsafe { buf_imp::unlock(buffer) }
}

/// Submits on `queue` a fill of `bytes` bytes of `buffer` at `offset` with the 64-bit
/// `pattern` (offset and size multiples of 8, inside the buffer) and records that the queue's
/// `*out_progress` writes the buffer, for later locks.
///
/// # Safety
/// `queue` and `buffer` must be null or live handles; `out_progress` null or valid for one
/// `u64` write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_buffer_fill(
    queue: *mut RvgpuQueue,
    buffer: *mut RvgpuBuffer,
    offset: u64,
    bytes: u64,
    pattern: u64,
    out_progress: *mut u64,
) -> RvgpuStatus {
    if queue.is_null() || buffer.is_null() || out_progress.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: non-null and writable per the caller's contract.
    unsafe { out_progress.write(0) };
    // SAFETY: live handles per the caller's contract.
    match unsafe { buf_imp::fill(queue, buffer, offset, bytes, pattern) } {
        Ok(v) => {
            // SAFETY: as above.
            unsafe { out_progress.write(v) };
            RvgpuStatus::Ok
        }
        Err(e) => e,
    }
}

/// Submits on `queue` a copy of `bytes` bytes from `src` at `src_offset` to `dst` at
/// `dst_offset` (two different buffers; offsets and size multiples of 8, in range) and records
/// that `*out_progress` reads `src` and writes `dst`.
///
/// # Safety
/// `queue`, `src` and `dst` must be null or live handles; `out_progress` null or valid for one
/// `u64` write.
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
    if queue.is_null() || src.is_null() || dst.is_null() || out_progress.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: non-null and writable per the caller's contract.
    unsafe { out_progress.write(0) };
    // SAFETY: live handles per the caller's contract.
    match unsafe { buf_imp::copy(queue, src, src_offset, dst, dst_offset, bytes) } {
        Ok(v) => {
            // SAFETY: as above.
            unsafe { out_progress.write(v) };
            RvgpuStatus::Ok
        }
        Err(e) => e,
    }
}

/// A static, NUL-terminated English name for a status.
#[unsafe(no_mangle)]
pub extern "C" fn rvgpu_status_string(status: RvgpuStatus) -> *const c_char {
    let s: &'static core::ffi::CStr = match status {
        RvgpuStatus::Ok => c"ok",
        RvgpuStatus::InvalidArgument => c"invalid argument",
        RvgpuStatus::NotImplemented => c"not implemented",
        RvgpuStatus::DeviceLost => c"device lost",
        RvgpuStatus::Timeout => c"timeout",
        RvgpuStatus::OutOfMemory => c"out of memory",
        RvgpuStatus::KernelError => c"kernel call failed",
        RvgpuStatus::WasStillDrawing => c"was still drawing",
    };
    s.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_arguments_are_rejected_before_anything_else() {
        // SAFETY: null pointers are part of each function's contract.
        let open = unsafe { rvgpu_open_adapter(0, 0, ptr::null_mut()) };
        assert_eq!(open, RvgpuStatus::InvalidArgument);
        // SAFETY: as above.
        let close = unsafe { rvgpu_close_adapter(ptr::null_mut()) };
        assert_eq!(close, RvgpuStatus::InvalidArgument);
        // SAFETY: as above.
        let submit = unsafe { rvgpu_submit(ptr::null_mut(), ptr::null(), 0, ptr::null_mut()) };
        assert_eq!(submit, RvgpuStatus::InvalidArgument);
        // SAFETY: as above.
        let wait = unsafe { rvgpu_fence_wait(ptr::null_mut(), 1, 0) };
        assert_eq!(wait, RvgpuStatus::InvalidArgument);
    }

    #[test]
    fn command_streams_are_decoded_and_validated() {
        use rvgpu_hw::cmd::Command;
        let fill = Command::Fill {
            dst: 0x1000,
            bytes: 8,
            pattern: 0x1122_3344_5566_7788,
        };
        let mut words = [0u64; 6];
        fill.encode(&mut words[..4]).unwrap();
        Command::Timestamp { addr: 0x2000 }
            .encode(&mut words[4..])
            .unwrap();
        let dwords: Vec<u32> = words
            .iter()
            .flat_map(|w| [*w as u32, (*w >> 32) as u32])
            .collect();
        assert_eq!(
            parse_commands(&dwords).unwrap(),
            vec![fill, Command::Timestamp { addr: 0x2000 }]
        );
        assert_eq!(
            parse_commands(&dwords[..11]),
            Err(RvgpuStatus::InvalidArgument),
            "odd dword count"
        );
        assert_eq!(
            parse_commands(&dwords[..10]),
            Err(RvgpuStatus::InvalidArgument),
            "packet cut short"
        );
        assert_eq!(
            parse_commands(&[0xFF, 0]),
            Err(RvgpuStatus::InvalidArgument),
            "bad opcode"
        );
        // A NULL queue is refused before the stream is looked at.
        let mut progress = 7u64;
        // SAFETY: valid stream and out-pointer; the null queue is part of the contract.
        let st = unsafe {
            rvgpu_submit(
                ptr::null_mut(),
                dwords.as_ptr(),
                dwords.len(),
                &mut progress,
            )
        };
        assert_eq!(st, RvgpuStatus::InvalidArgument);
        // SAFETY: null is part of the contract.
        let st = unsafe { rvgpu_queue_wait(ptr::null_mut(), 1, 0) };
        assert_eq!(st, RvgpuStatus::InvalidArgument);
    }

    #[test]
    #[cfg(not(windows))]
    fn unimplemented_calls_say_so_and_clear_outputs() {
        // Off Windows there is no D3DKMT to open an adapter with.
        let mut adapter: *mut RvgpuAdapter = 8 as *mut RvgpuAdapter;
        // SAFETY: `adapter` is a valid out-pointer.
        let st = unsafe { rvgpu_open_adapter(1, 0, &mut adapter) };
        assert_eq!(st, RvgpuStatus::NotImplemented);
        assert!(adapter.is_null());
        // SAFETY: returns a static C string.
        let name = unsafe { core::ffi::CStr::from_ptr(rvgpu_status_string(st)) };
        assert_eq!(name.to_str().unwrap(), "not implemented");
    }
}

#[cfg(test)]
#[path = "capi_buffer_tests.rs"]
mod buffer_tests;
