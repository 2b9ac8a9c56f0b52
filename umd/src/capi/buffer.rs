//! The objects behind the C API's handles and its buffer calls (AL-01 … AL-03),
//! generic over the kernel thunks `K` and the queue type `Q`: on Windows `K` is
//! `Arc<WinKmt>` and `Q` the portable `UserQueue` over it (`windows`); the unit tests run
//! the same code over a mock (`buffer_tests`). `capi` validates the C arguments first,
//! so every handle reaching this module is non-zero; each is looked up in the handle table
//! (`handles`), which refuses a stale or wrong-kind one.
//!
//! A buffer is a [`usage::Buffer`] plus the thunks it was created with (a clone: the buffer
//! keeps the device alive, as queues and fences do). GPU work that should be tracked goes
//! through [`fill`] and [`copy`], which encode one [`Batch`] each and submit it with
//! [`usage::submit`], so the lock that follows knows which queue values read or write the
//! buffer. Packets passed to `rvgpu_submit` are not parsed for buffer addresses: work submitted
//! that way is not tracked.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ffi::c_void;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32};

use crate::capi::handles::{self as handles, Guard, Kind, Shared};
use crate::capi::types::{status_from_nt, status_from_submit, RvgpuStatus};
use crate::kmt::{AllocationCpu, Kmt};
use crate::usage::{self, Batch, Buffer, LockError, LockFlags, Timeline, TrackedQueue};

/// An adapter's loss as its queues saw it (`rvgpu_device_status`, `rvgpu_device_loss_info`).
#[derive(Debug)]
#[cfg_attr(not(windows), allow(dead_code))] // read by the Windows implementation only
pub(crate) struct AdapterState {
    /// A queue of the adapter found the device lost.
    pub(crate) lost: AtomicBool,
    /// Queues of the adapter whose work a device reset or loss aborted (each counted once).
    pub(crate) resets: AtomicU32,
    /// The raw `D3DDDI_DOORBELLSTATUS` the first queue that found the loss read from its
    /// disconnected doorbell; -1 until one did.
    pub(crate) doorbell: AtomicI32,
}

impl Default for AdapterState {
    fn default() -> Self {
        Self {
            lost: AtomicBool::new(false),
            resets: AtomicU32::new(0),
            doorbell: AtomicI32::new(-1),
        }
    }
}

/// What an `RvgpuAdapter` names.
#[derive(Debug)]
pub(crate) struct AdapterObj<K> {
    pub(crate) kmt: K,
    /// What its queues report (read by `rvgpu_device_status`, Windows only).
    #[cfg_attr(not(windows), allow(dead_code))]
    pub(crate) state: Arc<AdapterState>,
}

/// What an `RvgpuBuffer` names.
#[derive(Debug)]
pub(crate) struct BufferObj<K: Kmt> {
    kmt: K,
    /// `None` once destroyed (a call that looked the handle up before that finds it gone).
    buf: Option<Buffer<K::Mem>>,
}

impl<K: Kmt> BufferObj<K> {
    fn buf(&self) -> Result<&Buffer<K::Mem>, RvgpuStatus> {
        self.buf.as_ref().ok_or(RvgpuStatus::InvalidHandle)
    }
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

/// The live queues of a C array, without repeats, in lock order.
fn queue_objects<Q: 'static>(queues: &[usize]) -> Result<Vec<Arc<Shared<Q>>>, RvgpuStatus> {
    if queues.contains(&0) {
        return Err(RvgpuStatus::InvalidArgument);
    }
    handles::lock_order(queues)
        .into_iter()
        .map(|h| handles::get::<Q>(Kind::Queue, h))
        .collect()
}

/// Locks every queue of `objs` (in their order) and runs `f` over them as timelines.
fn with_timelines<Q: Timeline + 'static, R>(
    objs: &[Arc<Shared<Q>>],
    f: impl FnOnce(&[&dyn Timeline]) -> R,
) -> R {
    let guards: Vec<Guard<'_, Q>> = objs.iter().map(|o| o.lock()).collect();
    let tl: Vec<&dyn Timeline> = guards.iter().map(|g| &**g as &dyn Timeline).collect();
    f(&tl)
}

fn buffer<K: Kmt + 'static>(b: usize) -> Result<Arc<Shared<BufferObj<K>>>, RvgpuStatus> {
    handles::get::<BufferObj<K>>(Kind::Buffer, b)
}

pub(crate) fn create<K: Kmt + Clone + 'static>(a: usize, size: u64) -> Result<usize, RvgpuStatus> {
    let adapter = handles::get::<AdapterObj<K>>(Kind::Adapter, a)?;
    let kmt = adapter.lock().kmt.clone();
    let buf = Buffer::new(&kmt, size, 0).map_err(status_from_lock)?;
    handles::insert(
        Kind::Buffer,
        BufferObj {
            kmt,
            buf: Some(buf),
        },
    )
}

pub(crate) fn destroy<K: Kmt + 'static, Q: Timeline + 'static>(
    b: usize,
    queues: &[usize],
) -> RvgpuStatus {
    // Checked before the buffer is taken, so that a bad list leaves the handle valid.
    let objs = match buffer::<K>(b).and_then(|_| queue_objects::<Q>(queues)) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let obj = match handles::take::<BufferObj<K>>(Kind::Buffer, b) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let mut g = obj.lock();
    let Some(buf) = g.buf.take() else {
        return RvgpuStatus::InvalidHandle;
    };
    with_timelines(&objs, |tl| buf.destroy(&g.kmt, tl))
        .map_or_else(status_from_lock, |()| RvgpuStatus::Ok)
}

/// The thunks of buffer `b`, its current memory's allocation handle and its size in bytes
/// (`rvgpu_buffer_map_va`).
pub(crate) fn backing<K: Kmt + Clone + 'static>(
    b: usize,
) -> Result<(K, crate::kmt::KmtHandle, u64), RvgpuStatus> {
    let obj = buffer::<K>(b)?;
    let g = obj.lock();
    let buf = g.buf()?;
    Ok((g.kmt.clone(), buf.handle(), buf.size()))
}

pub(crate) fn gpu_va<K: Kmt + 'static>(b: usize) -> Result<u64, RvgpuStatus> {
    Ok(buffer::<K>(b)?.lock().buf()?.gpu_va())
}

pub(crate) fn status<K: Kmt + 'static>(
    b: usize,
) -> Result<crate::capi::types::RvgpuBufferStatus, RvgpuStatus> {
    let obj = buffer::<K>(b)?;
    let g = obj.lock();
    let buf = g.buf()?;
    let st = buf.stats();
    Ok(crate::capi::types::RvgpuBufferStatus {
        gpu_va: buf.gpu_va(),
        renames: st.renames,
        lock_waits: st.waits,
        backings: st.backings as u64,
    })
}

pub(crate) fn lock<K: Kmt + 'static, Q: Timeline + 'static>(
    b: usize,
    flags: u32,
    queues: &[usize],
) -> Result<*mut c_void, RvgpuStatus> {
    let obj = buffer::<K>(b)?;
    let objs = queue_objects::<Q>(queues)?;
    let g = obj.lock();
    let buf = g.buf()?;
    let mem = with_timelines(&objs, |tl| buf.lock(&g.kmt, LockFlags(flags), tl))
        .map_err(status_from_lock)?;
    let p = mem.cpu_ptr();
    if p.is_null() {
        // Thunks without an address for the mapping cannot serve a C caller.
        let _ = buf.unlock(&g.kmt);
        return Err(RvgpuStatus::NotImplemented);
    }
    Ok(p.cast())
}

pub(crate) fn unlock<K: Kmt + 'static>(b: usize) -> RvgpuStatus {
    match buffer::<K>(b) {
        Ok(obj) => {
            let g = obj.lock();
            g.buf()
                .and_then(|b| b.unlock(&g.kmt).map_err(status_from_lock))
                .map_or_else(|e| e, |()| RvgpuStatus::Ok)
        }
        Err(e) => e,
    }
}

pub(crate) fn fill<K: Kmt + 'static, Q: TrackedQueue + 'static>(
    q: usize,
    b: usize,
    offset: u64,
    bytes: u64,
    pattern: u64,
) -> Result<u64, RvgpuStatus> {
    let obj = buffer::<K>(b)?;
    let queue = handles::get::<Q>(Kind::Queue, q)?;
    let g = obj.lock();
    let mut batch = Batch::new();
    batch
        .fill(g.buf()?, offset, bytes, pattern)
        .map_err(status_from_lock)?;
    let mut qg = queue.lock();
    usage::submit(&mut *qg, batch).map_err(status_from_submit)
}

pub(crate) fn copy<K: Kmt + 'static, Q: TrackedQueue + 'static>(
    q: usize,
    src: usize,
    src_offset: u64,
    dst: usize,
    dst_offset: u64,
    bytes: u64,
) -> Result<u64, RvgpuStatus> {
    if src == dst {
        return Err(RvgpuStatus::InvalidArgument);
    }
    let s = buffer::<K>(src)?;
    let d = buffer::<K>(dst)?;
    let queue = handles::get::<Q>(Kind::Queue, q)?;
    // Buffers in handle order, then the queue (the table's lock order).
    let (sg, dg) = if src < dst {
        let sg = s.lock();
        (sg, d.lock())
    } else {
        let dg = d.lock();
        (s.lock(), dg)
    };
    let mut batch = Batch::new();
    batch
        .copy(sg.buf()?, src_offset, dg.buf()?, dst_offset, bytes)
        .map_err(status_from_lock)?;
    let mut qg = queue.lock();
    usage::submit(&mut *qg, batch).map_err(status_from_submit)
}
