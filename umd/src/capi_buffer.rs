//! The objects behind the C API's handles and its buffer calls (AL-01 … AL-03),
//! generic over the kernel thunks `K` and the queue type `Q`: on Windows `K` is
//! `Arc<WinKmt>` and `Q` the portable `UserQueue` over it (`capi_windows`); the unit tests run
//! the same code over a mock (`capi_buffer_tests`). `capi` validates the C arguments first,
//! so every pointer reaching this module is non-null.
//!
//! A buffer is a [`usage::Buffer`] plus the thunks it was created with (a clone: the buffer
//! keeps the device alive, as queues and fences do). GPU work that should be tracked goes
//! through [`fill`] and [`copy`], which encode one [`Batch`] each and submit it with
//! [`usage::submit`], so the lock that follows knows which queue values read or write the
//! buffer. Packets passed to `rvgpu_submit` are not parsed for buffer addresses: work submitted
//! that way is not tracked.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ffi::c_void;

use crate::capi::{
    status_from_nt, status_from_submit, RvgpuAdapter, RvgpuBuffer, RvgpuQueue, RvgpuStatus,
};
use crate::kmt::{AllocationCpu, Kmt};
use crate::usage::{self, Batch, Buffer, LockError, LockFlags, Timeline, TrackedQueue};

/// What an `RvgpuAdapter` points to.
#[derive(Debug)]
pub(crate) struct AdapterObj<K> {
    pub(crate) kmt: K,
}

/// What an `RvgpuQueue` points to.
#[derive(Debug)]
pub(crate) struct QueueObj<Q> {
    pub(crate) queue: Q,
}

/// What an `RvgpuBuffer` points to.
#[derive(Debug)]
pub(crate) struct BufferObj<K: Kmt> {
    kmt: K,
    buf: Buffer<K::Mem>,
}

/// [`LockError`] → API status. Misuse that the C caller can fix (bad flags, lock state, ranges,
/// a queue missing from the list) is `InvalidArgument`.
pub(crate) fn status_from_lock(e: LockError) -> RvgpuStatus {
    match e {
        LockError::WasStillDrawing => RvgpuStatus::WasStillDrawing,
        LockError::Kmt(s) => status_from_nt(s),
        LockError::Submit(s) => status_from_submit(s),
        LockError::UnknownTimeline
        | LockError::BadFlags
        | LockError::LockState
        | LockError::OutOfRange => RvgpuStatus::InvalidArgument,
    }
}

/// The queues of a C array as timelines.
///
/// # Safety
/// Every entry is null (refused) or a live queue handle whose object is a `QueueObj<Q>`, not
/// used mutably by another thread during `'a`.
unsafe fn timelines<'a, Q: Timeline + 'a>(
    queues: &[*mut RvgpuQueue],
) -> Result<Vec<&'a dyn Timeline>, RvgpuStatus> {
    let mut out = Vec::with_capacity(queues.len());
    for &q in queues {
        if q.is_null() {
            return Err(RvgpuStatus::InvalidArgument);
        }
        // SAFETY: a live `QueueObj<Q>` (caller contract); only shared access.
        let obj = unsafe { &*q.cast::<QueueObj<Q>>() };
        out.push(&obj.queue as &dyn Timeline);
    }
    Ok(out)
}

/// # Safety
/// `a` is a live adapter handle whose object is an `AdapterObj<K>`.
pub(crate) unsafe fn create<K: Kmt + Clone>(
    a: *mut RvgpuAdapter,
    size: u64,
) -> Result<*mut RvgpuBuffer, RvgpuStatus> {
    // SAFETY: a live adapter (caller contract); only shared access.
    let adapter = unsafe { &*a.cast::<AdapterObj<K>>() };
    let buf = Buffer::new(&adapter.kmt, size, 0).map_err(status_from_lock)?;
    let obj = BufferObj {
        kmt: adapter.kmt.clone(),
        buf,
    };
    Ok(Box::into_raw(Box::new(obj)).cast())
}

/// # Safety
/// `b` is a live handle from [`create`] (consumed); `queues` as for [`timelines`].
pub(crate) unsafe fn destroy<K: Kmt, Q: Timeline>(
    b: *mut RvgpuBuffer,
    queues: &[*mut RvgpuQueue],
) -> RvgpuStatus {
    // Checked before the buffer is consumed, so that a bad list leaves the handle valid.
    // SAFETY: forwarded caller contract.
    let tl = match unsafe { timelines::<Q>(queues) } {
        Ok(t) => t,
        Err(e) => return e,
    };
    // SAFETY: made by `Box::into_raw` in `create`, released once (caller contract).
    let obj = unsafe { Box::from_raw(b.cast::<BufferObj<K>>()) };
    let BufferObj { kmt, buf } = *obj;
    buf.destroy(&kmt, &tl)
        .map_or_else(status_from_lock, |()| RvgpuStatus::Ok)
}

/// # Safety
/// `b` is a live buffer handle whose object is a `BufferObj<K>`.
pub(crate) unsafe fn gpu_va<K: Kmt>(b: *mut RvgpuBuffer) -> u64 {
    // SAFETY: a live buffer (caller contract); only shared access.
    let obj = unsafe { &*b.cast::<BufferObj<K>>() };
    obj.buf.gpu_va()
}

/// # Safety
/// `b` is a live buffer handle (a `BufferObj<K>`) used by one thread at a time; `queues` as
/// for [`timelines`].
pub(crate) unsafe fn lock<K: Kmt, Q: Timeline>(
    b: *mut RvgpuBuffer,
    flags: u32,
    queues: &[*mut RvgpuQueue],
) -> Result<*mut c_void, RvgpuStatus> {
    // SAFETY: a live buffer (caller contract); only shared access.
    let obj = unsafe { &*b.cast::<BufferObj<K>>() };
    // SAFETY: forwarded caller contract.
    let tl = unsafe { timelines::<Q>(queues) }?;
    let mem = obj
        .buf
        .lock(&obj.kmt, LockFlags(flags), &tl)
        .map_err(status_from_lock)?;
    let p = mem.cpu_ptr();
    if p.is_null() {
        // Thunks without an address for the mapping cannot serve a C caller.
        let _ = obj.buf.unlock(&obj.kmt);
        return Err(RvgpuStatus::NotImplemented);
    }
    Ok(p.cast())
}

/// # Safety
/// `b` is a live buffer handle (a `BufferObj<K>`) used by one thread at a time.
pub(crate) unsafe fn unlock<K: Kmt>(b: *mut RvgpuBuffer) -> RvgpuStatus {
    // SAFETY: a live buffer (caller contract); only shared access.
    let obj = unsafe { &*b.cast::<BufferObj<K>>() };
    obj.buf
        .unlock(&obj.kmt)
        .map_or_else(status_from_lock, |()| RvgpuStatus::Ok)
}

/// # Safety
/// `q` is a live queue handle (a `QueueObj<Q>`) and `b` a live buffer handle (a
/// `BufferObj<K>`), each used by one thread at a time.
pub(crate) unsafe fn fill<K: Kmt, Q: TrackedQueue>(
    q: *mut RvgpuQueue,
    b: *mut RvgpuBuffer,
    offset: u64,
    bytes: u64,
    pattern: u64,
) -> Result<u64, RvgpuStatus> {
    // SAFETY: a live buffer (caller contract); only shared access.
    let obj = unsafe { &*b.cast::<BufferObj<K>>() };
    let mut batch = Batch::new();
    batch
        .fill(&obj.buf, offset, bytes, pattern)
        .map_err(status_from_lock)?;
    // SAFETY: a live queue used by one thread at a time (the API's threading rule).
    let queue = unsafe { &mut *q.cast::<QueueObj<Q>>() };
    usage::submit(&mut queue.queue, batch).map_err(status_from_submit)
}

/// # Safety
/// As for [`fill`], for both buffers.
pub(crate) unsafe fn copy<K: Kmt, Q: TrackedQueue>(
    q: *mut RvgpuQueue,
    src: *mut RvgpuBuffer,
    src_offset: u64,
    dst: *mut RvgpuBuffer,
    dst_offset: u64,
    bytes: u64,
) -> Result<u64, RvgpuStatus> {
    // SAFETY: live buffers (caller contract); only shared access.
    let s = unsafe { &*src.cast::<BufferObj<K>>() };
    // SAFETY: as above.
    let d = unsafe { &*dst.cast::<BufferObj<K>>() };
    let mut batch = Batch::new();
    batch
        .copy(&s.buf, src_offset, &d.buf, dst_offset, bytes)
        .map_err(status_from_lock)?;
    // SAFETY: a live queue used by one thread at a time (the API's threading rule).
    let queue = unsafe { &mut *q.cast::<QueueObj<Q>>() };
    usage::submit(&mut queue.queue, batch).map_err(status_from_submit)
}
