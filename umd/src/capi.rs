//! The UMD's C API, exported by rvgpu_umd.dll and declared in `umd/include/rvgpu_umd.h`
//! (tests/umd_header.rs checks that the two agree).
//!
//! Status: the entry points exist, validate their arguments and are exported; the work behind
//! them (open the adapter through D3DKMT, create hardware queues and doorbells, write the ring,
//! native fences) is the user-mode submission issue's. Until then every call that would need
//! it returns [`RvgpuStatus::NotImplemented`] after argument validation; it never pretends to
//! succeed. `rvgpu_status_string` is complete.
#![allow(clippy::missing_safety_doc)] // each function documents its contract as "Safety" below

use core::ffi::c_char;
use core::ptr;

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
    let _ = (luid_low, luid_high);
    // SAFETY: forwarded caller contract.
    if !unsafe { clear_out(out_adapter) } {
        return RvgpuStatus::InvalidArgument;
    }
    RvgpuStatus::NotImplemented
}

/// Closes an adapter opened by `rvgpu_open_adapter`.
///
/// # Safety
/// `adapter` must be null or a handle from `rvgpu_open_adapter` not yet closed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_close_adapter(adapter: *mut RvgpuAdapter) -> RvgpuStatus {
    if adapter.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    RvgpuStatus::NotImplemented
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
    let _ = (node, priority);
    // SAFETY: forwarded caller contract.
    if !unsafe { clear_out(out_queue) } || adapter.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    RvgpuStatus::NotImplemented
}

/// Destroys a hardware queue.
///
/// # Safety
/// `queue` must be null or a live queue handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_destroy_queue(queue: *mut RvgpuQueue) -> RvgpuStatus {
    if queue.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    RvgpuStatus::NotImplemented
}

/// Writes `dword_count` command dwords into the queue's ring and rings its doorbell; on
/// success `*out_progress` is the progress-fence value that marks their completion.
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
    RvgpuStatus::NotImplemented
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
    let _ = initial_value;
    // SAFETY: forwarded caller contract.
    if !unsafe { clear_out(out_fence) } || adapter.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    RvgpuStatus::NotImplemented
}

/// Signals `fence` to `value` from the CPU.
///
/// # Safety
/// `fence` must be null or a live fence handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_signal(fence: *mut RvgpuFence, value: u64) -> RvgpuStatus {
    let _ = value;
    if fence.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    RvgpuStatus::NotImplemented
}

/// Waits on the CPU until `fence` reaches `value` or `timeout_ns` elapses
/// (`UINT64_MAX` = forever).
///
/// # Safety
/// `fence` must be null or a live fence handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_fence_wait(
    fence: *mut RvgpuFence,
    value: u64,
    timeout_ns: u64,
) -> RvgpuStatus {
    let _ = (value, timeout_ns);
    if fence.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    RvgpuStatus::NotImplemented
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
    RvgpuStatus::NotImplemented
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
    };
    s.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_arguments_are_rejected_before_anything_else() {
        // SAFETY: null pointers are part of each function's contract.
        unsafe {
            assert_eq!(
                rvgpu_open_adapter(0, 0, ptr::null_mut()),
                RvgpuStatus::InvalidArgument
            );
            assert_eq!(
                rvgpu_close_adapter(ptr::null_mut()),
                RvgpuStatus::InvalidArgument
            );
            assert_eq!(
                rvgpu_submit(ptr::null_mut(), ptr::null(), 0, ptr::null_mut()),
                RvgpuStatus::InvalidArgument
            );
            assert_eq!(
                rvgpu_fence_wait(ptr::null_mut(), 1, 0),
                RvgpuStatus::InvalidArgument
            );
        }
    }

    #[test]
    fn unimplemented_calls_say_so_and_clear_outputs() {
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
