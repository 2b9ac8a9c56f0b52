//! The C API on Windows: the objects behind the handles (`handles`) over [`WinKmt`]
//! and the portable queue core ([`CapiQueue`]; the buffer objects are `buffer`'s).
//! Compiled by the Windows cross-build only; run in the x86-64 emulator over the simulated
//! OS's thunks, never yet on Windows (see `capi`).

use alloc::sync::Arc;
use alloc::vec::Vec;

use rvgpu_hw::cmd::Command;

use windows_sys::Win32::Foundation::LUID;

// The flag values are defined beside the exports, where the header test reads them.
use crate::capi::buffer::{AdapterObj, AdapterState};
use crate::capi::handles::{self as handles, Kind};
use crate::capi::queue::CapiQueue;
use crate::capi::types::{
    status_from_nt as from_nt, status_from_submit as from_submit, Batch, RvgpuDeviceLossInfo,
    RvgpuDeviceStatus, RvgpuFenceLogEntry, RvgpuQueueDesc, RvgpuQueueStatus, RvgpuStatus,
};
use crate::capi::{
    RVGPU_FENCE_LOG_SIGNAL, RVGPU_FENCE_LOG_WAIT, RVGPU_FENCE_SHAREABLE, RVGPU_QUEUE_KERNEL_MODE,
    RVGPU_QUEUE_USER_MODE,
};
use crate::etw_windows::EtwFenceTrace;
use crate::fence::NativeFence;
use crate::fencelog::{FenceTrace, LogKind, Op};
use crate::kmt::{DeviceExecutionState, Kmt, KmtHandle, NtStatus};
use crate::kmt_windows::{WaitOutcome, WinKmt};
use crate::packets::Dwords;
use crate::submit::QueueConfig;

type K = Arc<WinKmt>;
type Adapter = AdapterObj<K>;
type Queue = CapiQueue<K>;

/// What an `RvgpuFence` names: the process's handle to a native fence and its mapping.
/// Read-only, so it needs no lock: a call reads it while its lookup pins it
/// ([`handles::with_object`]), and `fence_destroy` destroys the fence only after taking it out
/// of the table, which waits for those calls.
struct Fence {
    kmt: K,
    fence: NativeFence,
    /// Created `RVGPU_FENCE_SHAREABLE` (only such a fence has an NT handle to give).
    shareable: bool,
}

// STATUS_INVALID_PARAMETER: a thunk's answer to a mapping it cannot use;
// STATUS_INVALID_HANDLE: a handle value the process does not hold;
// STATUS_OBJECT_TYPE_MISMATCH: a handle to another kind of object.
use rvgpu_ddi::ntstatus::{
    STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER, STATUS_OBJECT_TYPE_MISMATCH,
};

fn status<T>(r: Result<T, RvgpuStatus>) -> RvgpuStatus {
    r.map_or_else(|e| e, |_| RvgpuStatus::Ok)
}

/// Waits on `fence` for `value` with the API's timeout rule (0: poll, `u64::MAX`: forever).
fn wait(kmt: &WinKmt, fence: KmtHandle, value: u64, timeout_ns: u64) -> RvgpuStatus {
    if timeout_ns == 0 {
        return RvgpuStatus::Timeout;
    }
    match kmt.wait_timeout(fence, value, timeout_ns) {
        Ok(WaitOutcome::Reached) => RvgpuStatus::Ok,
        Ok(WaitOutcome::TimedOut) => RvgpuStatus::Timeout,
        Err(e) => from_nt(e),
    }
}

fn adapter(a: usize) -> Result<(K, Arc<AdapterState>), RvgpuStatus> {
    let obj = handles::get::<Adapter>(Kind::Adapter, a)?;
    let g = obj.lock();
    Ok((g.kmt.clone(), g.state.clone()))
}

/// The fence's thunks and handle, copied out.
fn fence(f: usize) -> Result<(K, NativeFence), RvgpuStatus> {
    handles::with_object::<Fence, _>(Kind::Fence, f, |o| (o.kmt.clone(), o.fence))
}

/// The fence's current value, read while its lookup pins it: `fence_destroy` unmaps the value
/// only after taking the fence out of the table, so a destroyed fence is `InvalidHandle`,
/// never a read of freed memory.
fn fence_now(f: usize) -> Result<u64, RvgpuStatus> {
    handles::with_object::<Fence, _>(Kind::Fence, f, |o| current_value(&o.fence))?
}

/// The fence's current value through its CPU mapping.
fn current_value(f: &NativeFence) -> Result<u64, RvgpuStatus> {
    let p = f.current_value_cpu as *const u64;
    if p.is_null() || !p.is_aligned() {
        return Err(RvgpuStatus::KernelError);
    }
    // SAFETY: `CurrentValueCpuVa` from D3DKMTCreateNativeFence or
    // D3DKMTOpenNativeFenceFromNtHandle: a read-only 8-aligned mapping (checked above) that
    // lives until the sync object is destroyed, which `fence_destroy` does only after taking
    // the fence out of its object. Atomic load of a lock-free size on read-only memory.
    Ok(
        unsafe { core::sync::atomic::AtomicU64::from_ptr(p.cast_mut()) }
            .load(core::sync::atomic::Ordering::Acquire),
    )
}

pub fn open_adapter(low: u32, high: i32) -> Result<usize, RvgpuStatus> {
    let kmt = WinKmt::open(LUID {
        LowPart: low,
        HighPart: high,
    })
    .map_err(from_nt)?;
    handles::insert(
        Kind::Adapter,
        Adapter {
            kmt: Arc::new(kmt),
            state: Arc::new(AdapterState::default()),
        },
    )
}

pub fn close_adapter(a: usize) -> RvgpuStatus {
    status(handles::take::<Adapter>(Kind::Adapter, a))
}

pub fn device_status(a: usize) -> Result<RvgpuDeviceStatus, RvgpuStatus> {
    let (kmt, state) = adapter(a)?;
    // The OS's own word on the device (`D3DKMTGetDeviceState`, what a runtime asks after a
    // refused call): lost once it is not active, even before a queue of it saw the loss.
    let os_lost = kmt.device_execution_state().map_err(from_nt)? != DeviceExecutionState::ACTIVE;
    Ok(RvgpuDeviceStatus {
        lost: u32::from(state.lost.load(core::sync::atomic::Ordering::Acquire) || os_lost),
        reset_count: state.resets.load(core::sync::atomic::Ordering::Acquire),
    })
}

// STATUS_DEVICE_REMOVED: the OS refuses a device it reset or stopped.
use rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED;

pub fn device_loss_info(a: usize) -> Result<RvgpuDeviceLossInfo, RvgpuStatus> {
    let (kmt, state) = adapter(a)?;
    let execution = kmt.device_execution_state().ok();
    // Whether the DXGDEVICE is still active, asked of a thunk with no effect:
    // `K:DxgkInvalidateCache` @0x1401B35A0 looks the device up, then takes its core access
    // (`K:COREDEVICEACCESS::AcquireShared` @0x14000F550: STATUS_DEVICE_REMOVED for a device
    // reset or stopped with its adapter) before it looks the allocation up, so an allocation
    // handle of 0 is refused either way and touches nothing.
    let removed = matches!(
        kmt.invalidate_cache(0, 0, 0),
        Err(NtStatus(STATUS_DEVICE_REMOVED))
    );
    // RESET: only the adapter's reset writes it (`K:DXGDEVICE::Reset` @0x1401BB7FC, state 2).
    // HUNG: the same reset of a device VidSch reported hung (state 3), or an engine timeout
    // that blamed the device while it stays active: the refusal tells them apart.
    let adapter_reset = match execution {
        Some(DeviceExecutionState::RESET) => true,
        Some(DeviceExecutionState::HUNG) => removed,
        _ => false,
    };
    let doorbell_status = state.doorbell.load(core::sync::atomic::Ordering::Acquire);
    let os_lost = execution.is_some_and(|e| e != DeviceExecutionState::ACTIVE);
    let lost = state.lost.load(core::sync::atomic::Ordering::Acquire) || os_lost || removed;
    Ok(RvgpuDeviceLossInfo {
        lost: u32::from(lost),
        execution_state: execution.map_or(0, |e| e.0),
        doorbell_status,
        device_removed: u32::from(removed),
        adapter_reset: u32::from(adapter_reset),
        reserved: 0,
    })
}

pub fn create_queue(a: usize, d: &RvgpuQueueDesc) -> Result<usize, RvgpuStatus> {
    let (kmt, state) = adapter(a)?;
    let mut config = QueueConfig {
        node: d.node,
        priority: d.priority,
        ..QueueConfig::default()
    };
    if d.ring_size != 0 {
        // The queue refuses a size it cannot use (BadConfig: INVALID_ARGUMENT).
        config.ring_size = d.ring_size;
        config.command_buffer_size = u64::from(d.ring_size);
    }
    // The "native fence queued" ETW events (docs/logs.md#umd) of the queue's fence operations.
    let etw = EtwFenceTrace::register().map(|t| Arc::new(t) as Arc<dyn FenceTrace>);
    let q = CapiQueue::new(kmt, &config, d.kind == RVGPU_QUEUE_KERNEL_MODE, state, etw)
        .map_err(from_submit)?;
    handles::insert(Kind::Queue, q)
}

pub fn destroy_queue(q: usize) -> RvgpuStatus {
    match handles::take::<Queue>(Kind::Queue, q) {
        Ok(obj) => status(obj.lock().close().map_err(from_submit)),
        Err(e) => e,
    }
}

/// A C caller's packets (`rvgpu_submit`), checked on their way into the ring; the queue is
/// looked up without a lock and locked for the submission.
pub fn submit_dwords(q: usize, stream: Dwords<'_>) -> Result<u64, RvgpuStatus> {
    handles::with::<Queue, _>(Kind::Queue, q, |obj| {
        obj.lock().submit_packets(&stream).map_err(from_submit)
    })?
}

/// A batch of packets without fence operations.
pub fn submit_commands(q: usize, cmds: &[Command]) -> Result<u64, RvgpuStatus> {
    let obj = handles::get::<Queue>(Kind::Queue, q)?;
    let mut g = obj.lock();
    crate::usage::TrackedQueue::submit_commands(&mut *g, cmds).map_err(from_submit)
}

pub fn submit(q: usize, b: &Batch) -> Result<u64, RvgpuStatus> {
    if b.waits.is_empty() && b.signals.is_empty() {
        // Packets alone: no fence operations to log, so no operation list to build.
        return submit_commands(q, &b.cmds);
    }
    // Every fence resolved before the queue is touched: a bad handle changes nothing.
    let resolve = |l: &[(usize, u64)]| -> Result<Vec<(NativeFence, u64)>, RvgpuStatus> {
        l.iter()
            .map(|&(f, v)| handles::with_object::<Fence, _>(Kind::Fence, f, |o| (o.fence, v)))
            .collect()
    };
    let waits = resolve(&b.waits)?;
    let signals = resolve(&b.signals)?;
    let mut ops: Vec<Op<'_>> = Vec::with_capacity(waits.len() + b.cmds.len() + signals.len());
    ops.extend(waits.iter().map(|(f, v)| Op::Wait(f, *v)));
    ops.extend(b.cmds.iter().map(|c| Op::Cmd(*c)));
    ops.extend(signals.iter().map(|(f, v)| Op::Signal(f, *v)));
    let obj = handles::get::<Queue>(Kind::Queue, q)?;
    let mut g = obj.lock();
    g.submit_ops(&ops).map_err(from_submit)
}

pub fn queue_wait(q: usize, value: u64, timeout_ns: u64) -> RvgpuStatus {
    let obj = match handles::get::<Queue>(Kind::Queue, q) {
        Ok(obj) => obj,
        Err(e) => return e,
    };
    let target = {
        let mut g = obj.lock();
        g.target(value)
            .map(|t| t.map(|t| (g.kmt().clone(), t)))
            .map_err(from_submit)
    };
    // The wait is made without the queue's lock, so other threads can submit meanwhile.
    match target {
        Ok(None) => RvgpuStatus::Ok,
        Ok(Some((kmt, (fence, v)))) => match wait(&kmt, fence, v, timeout_ns) {
            // UM-10: the OS also releases the wait when it signals a lost device's fences to
            // the maximum; work that never ran must not read as done.
            RvgpuStatus::Ok => status(obj.lock().confirm(value).map_err(from_submit)),
            s => s,
        },
        Err(e) => e,
    }
}

pub fn queue_status(q: usize) -> Result<RvgpuQueueStatus, RvgpuStatus> {
    let obj = handles::get::<Queue>(Kind::Queue, q)?;
    let s = obj.lock().state();
    Ok(RvgpuQueueStatus {
        submitted: s.submitted,
        completed: s.completed,
        dropped_log_entries: s.dropped_log_entries,
        kind: if s.kernel_mode {
            RVGPU_QUEUE_KERNEL_MODE
        } else {
            RVGPU_QUEUE_USER_MODE
        },
        lost: u32::from(s.lost),
        queue_id: s.queue_id,
        doorbell_status: s.doorbell,
    })
}

pub fn read_fence_log(q: usize, out: &mut [RvgpuFenceLogEntry]) -> Result<usize, RvgpuStatus> {
    let obj = handles::get::<Queue>(Kind::Queue, q)?;
    let log = obj.lock().log.clone();
    let max = out.len();
    let mut slots = out.iter_mut();
    Ok(log.drain(max, |op| {
        if let Some(e) = slots.next() {
            *e = RvgpuFenceLogEntry {
                value: op.value,
                cpu_timestamp: op.qpc,
                queue_id: op.queue_id,
                kind: match op.kind {
                    LogKind::Wait => RVGPU_FENCE_LOG_WAIT,
                    LogKind::Signal => RVGPU_FENCE_LOG_SIGNAL,
                },
                index: op.index,
                logged: u32::from(op.logged),
                os_fence: op.fence,
                reserved: 0,
            };
        }
    }))
}

fn add_fence(kmt: K, nf: NativeFence, shareable: bool) -> Result<usize, RvgpuStatus> {
    if current_value(&nf).is_err() {
        let _ = kmt.destroy_native_fence(nf.kmt);
        return Err(from_nt(NtStatus(STATUS_INVALID_PARAMETER)));
    }
    handles::insert_object(
        Kind::Fence,
        Fence {
            kmt,
            fence: nf,
            shareable,
        },
    )
}

pub fn fence_create(a: usize, initial: u64, flags: u32) -> Result<usize, RvgpuStatus> {
    let (kmt, _) = adapter(a)?;
    let shareable = flags & RVGPU_FENCE_SHAREABLE != 0;
    let nf = if shareable {
        kmt.create_shareable_native_fence(initial)
    } else {
        kmt.create_native_fence(initial)
    }
    .map_err(from_nt)?;
    add_fence(kmt, nf, shareable)
}

/// A fence opened from an NT handle is shared already, so this process may share it on.
pub fn fence_open(a: usize, nt: usize) -> Result<usize, RvgpuStatus> {
    let (kmt, _) = adapter(a)?;
    let nf = kmt
        .open_native_fence(nt as u64)
        .map_err(|e| match from_nt(e) {
            // The OS's answer to a value that names no NT handle of this process.
            RvgpuStatus::KernelError => RvgpuStatus::InvalidHandle,
            s => s,
        })?;
    kmt.share_waits(nf.kmt, nf.gpu.current.get());
    add_fence(kmt, nf, true)
}

pub fn fence_share(f: usize) -> Result<usize, RvgpuStatus> {
    let (kmt, nf, shareable) = handles::with_object::<Fence, _>(Kind::Fence, f, |o| {
        (o.kmt.clone(), o.fence, o.shareable)
    })?;
    if !shareable {
        return Err(RvgpuStatus::InvalidArgument);
    }
    let nt = kmt.share_native_fence(nf.kmt).map_err(from_nt)?;
    kmt.share_waits(nf.kmt, nf.gpu.current.get());
    usize::try_from(nt).map_err(|_| RvgpuStatus::KernelError)
}

/// The thunk is called while the lookup pins the fence (no lock, no reference count): a
/// concurrent destroy waits for it.
pub fn fence_signal(f: usize, value: u64) -> RvgpuStatus {
    handles::with_object::<Fence, _>(Kind::Fence, f, |o| {
        status(o.kmt.signal_from_cpu(o.fence.kmt, value).map_err(from_nt))
    })
    .unwrap_or_else(|e| e)
}

pub fn fence_value(f: usize) -> Result<u64, RvgpuStatus> {
    fence_now(f)
}

pub fn fence_wait(f: usize, value: u64, timeout_ns: u64) -> RvgpuStatus {
    // The fast path: a fence already at `value` is one lookup and one load, no kernel call.
    let looked =
        handles::with_object::<Fence, _>(Kind::Fence, f, |o| match current_value(&o.fence) {
            Ok(v) if v >= value => None,
            _ => Some((o.kmt.clone(), o.fence)),
        });
    let (kmt, nf) = match looked {
        Ok(None) => return RvgpuStatus::Ok,
        Ok(Some(x)) => x,
        Err(e) => return e,
    };
    match wait(&kmt, nf.kmt, value, timeout_ns) {
        // The OS also ends the wait when the fence is destroyed meanwhile (by another thread):
        // that wait is abandoned, not satisfied.
        RvgpuStatus::Ok => match fence_now(f) {
            Ok(v) if v >= value => RvgpuStatus::Ok,
            _ => RvgpuStatus::DeviceLost,
        },
        s => s,
    }
}

pub fn fence_wait_async(f: usize, value: u64, event: usize) -> RvgpuStatus {
    let (kmt, nf) = match fence(f) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let event = core::ptr::without_provenance_mut(event);
    match kmt.wait_async(nf.kmt, value, event) {
        Ok(()) => RvgpuStatus::Ok,
        // The fence is a live one of this process: what the OS refuses is the event. 24H2
        // references it as an event handle of the process (`K:WaitForSynchronizationObjectFromCpu`
        // @0x1402AD200): a value it does not hold is STATUS_INVALID_HANDLE, a handle to another
        // kind of object STATUS_OBJECT_TYPE_MISMATCH.
        Err(NtStatus(
            STATUS_INVALID_PARAMETER | STATUS_INVALID_HANDLE | STATUS_OBJECT_TYPE_MISMATCH,
        )) => RvgpuStatus::InvalidArgument,
        Err(e) => from_nt(e),
    }
}

/// Once taken out of the table (no call is reading it then) the fence is destroyed; a call
/// that copied its handle out earlier gets the OS's refusal.
pub fn fence_destroy(f: usize) -> RvgpuStatus {
    match handles::take_object::<Fence>(Kind::Fence, f) {
        Ok(o) => status(o.kmt.destroy_sync_object(o.fence.kmt).map_err(from_nt)),
        Err(e) => e,
    }
}
