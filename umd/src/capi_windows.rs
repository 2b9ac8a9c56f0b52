//! The C API on Windows: handles are boxed objects over [`WinKmt`] and the portable
//! [`UserQueue`] (the object types are `capi_buffer`'s, which also serves the buffer calls).
//! Compiled by the Windows cross-build only; run in the x86-64 emulator over the simulated
//! OS's thunks, never on Windows (see `capi`).

use alloc::boxed::Box;
use alloc::sync::Arc;

use rvgpu_hw::cmd::Command;
use windows_sys::Win32::Foundation::LUID;

use crate::capi::{
    status_from_nt as from_nt, status_from_submit as from_submit, RvgpuAdapter, RvgpuFence,
    RvgpuQueue, RvgpuStatus,
};
use crate::capi_buffer::{AdapterObj, QueueObj};
use crate::etw_windows::EtwFenceTrace;
use crate::kmt_windows::{WaitOutcome, WinKmt, WinNativeFence};
use crate::submit::{QueueConfig, UserQueue};

type Adapter = AdapterObj<Arc<WinKmt>>;

type Queue = QueueObj<UserQueue<Arc<WinKmt>>>;

struct Fence {
    kmt: Arc<WinKmt>,
    fence: WinNativeFence,
}

fn status<T>(r: Result<T, RvgpuStatus>) -> RvgpuStatus {
    r.map_or_else(|e| e, |_| RvgpuStatus::Ok)
}

/// Waits on `fence` for `value` with the API's timeout rule (0: poll, `u64::MAX`: forever).
fn wait(kmt: &WinKmt, fence: u32, value: u64, timeout_ns: u64) -> RvgpuStatus {
    if timeout_ns == 0 {
        return RvgpuStatus::Timeout;
    }
    match kmt.wait_timeout(fence, value, timeout_ns) {
        Ok(WaitOutcome::Reached) => RvgpuStatus::Ok,
        Ok(WaitOutcome::TimedOut) => RvgpuStatus::Timeout,
        Err(e) => from_nt(e),
    }
}

pub fn open_adapter(low: u32, high: i32) -> Result<*mut RvgpuAdapter, RvgpuStatus> {
    let kmt = WinKmt::open(LUID {
        LowPart: low,
        HighPart: high,
    })
    .map_err(from_nt)?;
    let adapter = Box::new(Adapter { kmt: Arc::new(kmt) });
    Ok(Box::into_raw(adapter).cast())
}

/// # Safety
/// `a` is a live handle from [`open_adapter`]; it is consumed.
pub unsafe fn close_adapter(a: *mut RvgpuAdapter) -> RvgpuStatus {
    // SAFETY: made by `Box::into_raw` in `open_adapter`, released once (caller contract).
    drop(unsafe { Box::from_raw(a.cast::<Adapter>()) });
    RvgpuStatus::Ok
}

/// # Safety
/// `a` is a live adapter handle.
pub unsafe fn create_queue(
    a: *mut RvgpuAdapter,
    node: u32,
    priority: u32,
) -> Result<*mut RvgpuQueue, RvgpuStatus> {
    // SAFETY: a live adapter (caller contract); only shared access.
    let adapter = unsafe { &*a.cast::<Adapter>() };
    let config = QueueConfig {
        node,
        priority,
        ..QueueConfig::default()
    };
    let mut queue = UserQueue::new(adapter.kmt.clone(), &config).map_err(from_submit)?;
    // The "native fence queued" ETW events (docs/logs.md §5) of `submit_ops`; `rvgpu_submit`
    // passes packets, so the C API itself does not produce any yet.
    if let Some(t) = EtwFenceTrace::register() {
        queue.set_fence_trace(Some(Arc::new(t)));
    }
    Ok(Box::into_raw(Box::new(Queue { queue })).cast())
}

/// # Safety
/// `q` is a live handle from [`create_queue`]; it is consumed.
pub unsafe fn destroy_queue(q: *mut RvgpuQueue) -> RvgpuStatus {
    // SAFETY: made by `Box::into_raw` in `create_queue`, released once (caller contract).
    let queue = unsafe { Box::from_raw(q.cast::<Queue>()) };
    status(queue.queue.close().map_err(from_submit))
}

/// # Safety
/// `q` is a live queue handle not used concurrently.
pub unsafe fn submit(q: *mut RvgpuQueue, cmds: &[Command]) -> Result<u64, RvgpuStatus> {
    // SAFETY: a live queue used by one thread at a time (the API's threading rule).
    let queue = unsafe { &mut *q.cast::<Queue>() };
    queue.queue.submit(cmds).map_err(from_submit)
}

/// # Safety
/// `q` is a live queue handle not used concurrently.
pub unsafe fn queue_wait(q: *mut RvgpuQueue, value: u64, timeout_ns: u64) -> RvgpuStatus {
    // SAFETY: a live queue (caller contract); only shared access.
    let queue = unsafe { &*q.cast::<Queue>() };
    match queue.queue.wait_target(value) {
        Ok(None) => RvgpuStatus::Ok,
        Ok(Some((fence, v))) => wait(queue.queue.kmt(), fence, v, timeout_ns),
        Err(e) => from_submit(e),
    }
}

/// # Safety
/// `a` is a live adapter handle.
pub unsafe fn fence_create(
    a: *mut RvgpuAdapter,
    initial: u64,
) -> Result<*mut RvgpuFence, RvgpuStatus> {
    // SAFETY: a live adapter (caller contract); only shared access.
    let adapter = unsafe { &*a.cast::<Adapter>() };
    let fence = adapter
        .kmt
        .create_native_fence_mapped(initial)
        .map_err(from_nt)?;
    let kmt = adapter.kmt.clone();
    Ok(Box::into_raw(Box::new(Fence { kmt, fence })).cast())
}

/// # Safety
/// `f` is a live fence handle.
pub unsafe fn fence_signal(f: *mut RvgpuFence, value: u64) -> RvgpuStatus {
    // SAFETY: a live fence (caller contract); only shared access.
    let fence = unsafe { &*f.cast::<Fence>() };
    status(
        fence
            .kmt
            .signal_from_cpu(fence.fence.handle, value)
            .map_err(from_nt),
    )
}

/// # Safety
/// `f` is a live fence handle.
pub unsafe fn fence_wait(f: *mut RvgpuFence, value: u64, timeout_ns: u64) -> RvgpuStatus {
    // SAFETY: a live fence (caller contract); only shared access.
    let fence = unsafe { &*f.cast::<Fence>() };
    if fence.fence.value() >= value {
        return RvgpuStatus::Ok;
    }
    wait(&fence.kmt, fence.fence.handle, value, timeout_ns)
}

/// # Safety
/// `f` is a live handle from [`fence_create`]; it is consumed.
pub unsafe fn fence_destroy(f: *mut RvgpuFence) -> RvgpuStatus {
    // SAFETY: made by `Box::into_raw` in `fence_create`, released once (caller contract).
    let fence = unsafe { Box::from_raw(f.cast::<Fence>()) };
    status(
        fence
            .kmt
            .destroy_sync_object(fence.fence.handle)
            .map_err(from_nt),
    )
}
