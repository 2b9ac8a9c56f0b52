//! Hardware queues: create, destroy, the progress fence, kernel-mode submission and the queue's
//! native fence logs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rvgpu_ddi::basic::{HANDLE, NTSTATUS, PVOID};
use rvgpu_ddi::init::PDXGKDDI_SUBMITCOMMANDTOHWQUEUE;
use rvgpu_ddi::ntstatus::{
    NT_SUCCESS, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER, STATUS_NOT_IMPLEMENTED,
    STATUS_NOT_SUPPORTED,
};
use rvgpu_ddi::submission::{
    D3DDDI_CREATEHWQUEUEFLAGS, DXGKARG_CREATEHWQUEUE, DXGKARG_CREATEHWQUEUE_0,
    DXGKARG_DESTROYDOORBELL, DXGKARG_SUBMITCOMMANDTOHWQUEUE, DXGK_NODEMETADATA_FLAGS,
    DXGK_SUBMITCOMMANDFLAGS,
};
use rvgpu_hw::pdd::{HwQueuePdd, PDD_MAGIC};
use rvgpu_kmd::platform::Irql;
use zerocopy::FromBytes;

use crate::adapter::ddi::{self, not_supported, sim_err, table, At};
use crate::adapter::irql::Routine;
use crate::adapter::slot::Of;
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::os::answers::{SubmitFailure, UmsProgress};
use crate::state::sync::logbuffer::LogBuffer;
use crate::sync::fence::MonitoredFence;

use super::context::{destroy_context, node_flags};
use super::held::{drop_held_work, kick_all};
use super::host::UmsHost;
use super::kmd::{check_kmd_handle, destroy_kmd, needed_ddi};
use super::locks::{dev_guard, device_lock};
use super::lookup::invalid_handle;
use super::power::{node_active_in_d0, take_if_f0, NodeActive};
use crate::state::ums::events::UmsEvent;
use crate::state::ums::{new_handle, DxgHwQueue, HwqSched, Pending, QueueObj};

pub(super) fn destroy_hw_queue(
    m: &dyn UmsHost,
    a: &AdapterShared,
    h: KmtHandle,
) -> Result<(), SimError> {
    let (kmd, queue_id, node, fence, fence_h, lock_q) = {
        let os = lock(&a.ums);
        let q = os.queue(h)?;
        if q.doorbell.is_some() {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        (
            q.kmd(),
            q.queue_id,
            q.node,
            q.progress().cloned(),
            q.fence,
            q.sched.clone(),
        )
    };
    let native = lock(&a.ums)
        .queues
        .get(&h)
        .and_then(|q| q.native_progress.clone());
    // MF-03: held work never reaches the KMD; the queue's GPU waits are dropped.
    drop_held_work(a, h);
    {
        // No submission reaches the KMD from here (`HwqSched::submit`), nor runs beside the
        // destroy.
        let mut destroyed = lock(&lock_q.submit);
        // The queue is off the runlist; read what its logs still hold.
        crate::sync::fencelog::queue_destroying(a, kmd)?;
        *destroyed = true;
        destroy_kmd!(a, table(a)?, DxgkDdiDestroyHwQueue, "queue", kmd)?;
        crate::sync::fencelog::queue_destroyed(a, kmd)?;
    }
    {
        let mut os = lock(&a.ums);
        if let Some(q) = os.queues.remove(&h) {
            // LOG-08: an optimized report may no longer name it.
            lock(&a.fence_os).logs.forget_name(q.dxg.addr());
            os.retired_dxg_queues.insert(q.dxg.addr(), q.dxg);
        }
        if let Some(f) = fence_h {
            os.fences.remove(&f);
            os.fence_owner.remove(&f);
        }
        os.events.push(UmsEvent::DestroyHwQueue { queue: h });
    }
    if let Some(id) = queue_id {
        // A lost device reads no memory again (hardware.md 10.4; an adapter reset, the only
        // way back, empties every runlist): its stale runlist is no hazard, nor is a held
        // engine's (`doorbell::engine_held`).
        // Not observable on a PCI board (`Board::queue` is `None`): checked in-process only.
        if !a.device.is_lost()
            && !super::doorbell::engine_held(a, node)
            && a.device.queue(id).is_some_and(|q| q.is_some())
        {
            return Err(sim_err(
                a,
                format!(
                    "driver bug: queue id {id} is still in a committed runlist after \
                     DxgkDdiDestroyHwQueue returned (the queue leaked into the hardware)"
                ),
            ));
        }
    }
    // A native progress fence goes with its queue, once the thunk's locks are released (its
    // pages leave the process by paging, which must not run under them).
    if let Some(n) = native {
        lock(&a.ums).retired_progress.push(n);
    }
    let r = fence.map_or(Ok(()), |f| m.destroy_monitored_fence(&f));
    // MF-03: another queue's GPU wait on this progress fence no longer holds it.
    kick_all(a);
    r
}

/// The KMD's handle of `queue` (`hHWQueue` in the optimized interrupt).
pub(crate) fn hw_queue_kmd_handle(a: &AdapterShared, queue: KmtHandle) -> Option<usize> {
    lock(&a.ums).queues.get(&queue).map(|q| q.kmd())
}

/// Dxgkrnl's object of `queue` (the driver's input `hHwQueue`).
pub(crate) fn hw_queue_os_object(a: &AdapterShared, queue: KmtHandle) -> Option<usize> {
    lock(&a.ums).queues.get(&queue).map(|q| q.dxg.addr())
}

/// The KMD's handle of `queue` if it is a queue of `device` (`STATUS_INVALID_HANDLE` else).
pub(crate) fn device_queue_kmd_handle(
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
) -> Result<usize, SimError> {
    let os = lock(&a.ums);
    os.queues
        .get(&queue)
        .filter(|q| q.device == device)
        .map(|q| q.kmd())
        .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))
}

/// Whether `queue` of `device` was created for user-mode submission (`None`: no queue of
/// `device`'s), and the most DMA private data its context takes (the KMD's
/// `DXGK_CONTEXTINFO::DmaBufferPrivateDataSize`).
pub(crate) fn device_queue_kind(
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
) -> Option<(bool, u32)> {
    queue_kind_in(&lock(&a.ums), device, queue)
}

/// What the kernel-mode submission thunk checks of its queue before VidSch takes the
/// submission (`K:DxgkSubmitCommandToHwQueueInternal` @0x1402C5A10).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SubmitKind {
    /// Created for user-mode submission.
    pub(crate) user_mode: bool,
    /// The most DMA private data its context takes.
    pub(crate) dma_private_data: u32,
    /// The adapter was removed (Dxgkrnl's `COREDEVICEACCESS`).
    pub(crate) removed: bool,
}

/// [`device_queue_kind`] and [`adapter_removed`] in one look, for the kernel-mode submission
/// thunk, which asks both before anything else.
pub(crate) fn submit_queue_kind(
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
) -> Option<SubmitKind> {
    kind_in(&lock(&a.ums), device, queue)
}

/// [`submit_queue_kind`] on the UMS state already locked.
fn kind_in(
    os: &crate::state::ums::UmsOs,
    device: KmtHandle,
    queue: KmtHandle,
) -> Option<SubmitKind> {
    queue_kind_in(os, device, queue).map(|(user_mode, dma_private_data)| SubmitKind {
        user_mode,
        dma_private_data,
        removed: os.removed,
    })
}

/// [`device_queue_kind`] on the UMS state already locked.
fn queue_kind_in(
    os: &crate::state::ums::UmsOs,
    device: KmtHandle,
    queue: KmtHandle,
) -> Option<(bool, u32)> {
    let q = os.queues.get(&queue).filter(|q| q.device == device)?;
    let pdd = os
        .contexts
        .get(&q.context)
        .map_or(0, |c| c.dma_private_data);
    Some((q.user_mode, pdd))
}

/// Whether the adapter was removed (UM-10): Dxgkrnl's `COREDEVICEACCESS` finds it not active.
pub(crate) fn adapter_removed(a: &AdapterShared) -> bool {
    lock(&a.ums).removed
}

/// Whether `context` of `device` was created with `HwQueueSupported` (`None`: no context of
/// `device`'s).
pub(crate) fn device_context_hw_queue(
    a: &AdapterShared,
    device: KmtHandle,
    context: KmtHandle,
) -> Option<bool> {
    let os = lock(&a.ums);
    os.contexts
        .get(&context)
        .filter(|c| c.device == device)
        .map(|c| c.hw_queue)
}

/// The queue id the KMD reported for a hardware queue (from `HwQueuePdd`).
pub(crate) fn hw_queue_id(a: &AdapterShared, queue: KmtHandle) -> Option<u32> {
    lock(&a.ums).queues.get(&queue).and_then(|q| q.queue_id)
}

/// UM-16: (last queued progress value, completed progress value) of a queue; the queue
/// has work while the first is ahead. `None` for a queue without a progress fence
/// ([`crate::os::answers::UmsProgress::None`]).
pub(crate) fn hw_queue_progress(a: &AdapterShared, queue: KmtHandle) -> Option<(u64, u64)> {
    let os = lock(&a.ums);
    let q = os.queues.get(&queue)?;
    Some((q.last_queued().load(Ordering::Acquire), q.completed()?))
}

/// The handle of `queue`'s progress fence (`D3DKMTCreateHwQueue`'s
/// `hHwQueueProgressFence`), if the OS gave it one.
pub(crate) fn hw_queue_progress_fence(a: &AdapterShared, queue: KmtHandle) -> Option<KmtHandle> {
    lock(&a.ums).queues.get(&queue)?.fence
}

/// `queue`'s progress fence if the OS made it a native fence (`NativeProgressFence`,
/// [`crate::os::answers::ProgressFence`]).
pub(crate) fn hw_queue_native_progress(
    a: &AdapterShared,
    queue: KmtHandle,
) -> Option<crate::sync::fence::NativeFence> {
    lock(&a.ums).queues.get(&queue)?.native_progress.clone()
}

/// What `D3DKMTCreateHwQueue` returns: the progress fence's handle and the fence, unless the
/// queue has none ([`UmsProgress::None`]).
pub(crate) struct CreatedQueue {
    pub handle: KmtHandle,
    pub fence: Option<KmtHandle>,
    pub progress: Option<MonitoredFence>,
}

/// `D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission`.
pub(crate) const HWQUEUE_USER_MODE_SUBMISSION: u32 = 1 << 4;
/// `D3DDDI_CREATEHWQUEUEFLAGS::NoKmdAccess`.
const HWQUEUE_NO_KMD_ACCESS: u32 = 1 << 3;
/// `D3DDDI_CREATEHWQUEUEFLAGS::DisableGpuTimeout`.
const DISABLE_GPU_TIMEOUT: u32 = 1 << 0;

/// The fences and log buffers a queue gets before its DDI, undone together when it fails.
struct QueueFences {
    logs: Option<(LogBuffer, LogBuffer)>,
    progress: Option<(KmtHandle, MonitoredFence)>,
    native: Option<crate::sync::fence::NativeFence>,
}

impl QueueFences {
    /// The logs, the progress fence (none for a user-mode queue under
    /// [`UmsProgress::None`]) and, where the OS makes it native, its native view.
    fn make(
        m: &dyn UmsHost,
        a: &AdapterShared,
        pid: crate::base::process_id::ProcessId,
        user_mode: bool,
    ) -> Result<Self, SimError> {
        // Paging (the logs' and the progress fence's mappings) before the thunk's locks.
        let mut f = Self {
            logs: m.alloc_queue_logs(a, pid, user_mode)?,
            progress: None,
            native: None,
        };
        if !(user_mode && a.os.windows.reading().ums_progress == UmsProgress::None) {
            let made = m.create_monitored_fence(a.index, pid, 0, 0).and_then(|p| {
                new_handle(pid).map(|h| (h, p.clone())).inspect_err(|_| {
                    let _ = m.destroy_monitored_fence(&p);
                })
            });
            match made {
                Ok(p) => f.progress = Some(p),
                Err(e) => {
                    let _ = f.undo(m, a);
                    return Err(e);
                }
            }
        }
        // Which kind the progress fence is (`answers::ProgressFence`): native only on a GPU
        // with native fences (26H1 `K:DXGHWQUEUE::Initialize` @0x14034F800; the
        // `DXGKARG_CREATEHWQUEUE` remarks). The OS's own waits stay on the monitored view of
        // the same value, so the native fence's MonitoredValue is held at 0 (every signal
        // reaches the OS: an answer an OS may always give, NF-18's mechanism); the driver sees
        // a native fence it created.
        let native = a.os.windows.reading().progress_fence.native(user_mode)
            && lock(&a.fence_os).caps.is_some();
        if let Some((_, p)) = f.progress.as_ref().filter(|_| native) {
            match m.open_monitored_fence_as_native(p, a.index, pid) {
                Ok(n) => f.native = Some(n),
                Err(e) => {
                    let _ = f.undo(m, a);
                    return Err(e);
                }
            }
        }
        Ok(f)
    }

    fn undo(&mut self, m: &dyn UmsHost, a: &AdapterShared) -> Result<(), SimError> {
        crate::sync::fencelog::free_queue_logs(a, self.logs.take());
        let r = self
            .native
            .take()
            .map_or(Ok(()), |n| m.destroy_native_fence(&n));
        self.progress
            .take()
            .map_or(Ok(()), |(_, p)| m.destroy_monitored_fence(&p))
            .and(r)
    }

    /// `DXGKARG_CREATEHWQUEUE` for queue `h` with the caller's `flags` and private data `pdd`
    /// (`HANDOVER`: `K:DXGHWQUEUE::Initialize` @0x1402BBA30 passes the caller's flags word).
    fn args(&self, dxg: &DxgHwQueue, flags: u32, pdd: &mut [u8]) -> DXGKARG_CREATEHWQUEUE {
        let flags = D3DDDI_CREATEHWQUEUEFLAGS::from_value(flags).with(
            D3DDDI_CREATEHWQUEUEFLAGS::NativeProgressFence,
            u32::from(self.native.is_some()),
        );
        let mut args = DXGKARG_CREATEHWQUEUE {
            // Dxgkrnl's queue object itself, as 24H2 passes `this` (`K:DXGHWQUEUE::Initialize`
            // @0x1402BBA30, `K:DXGHWQUEUE::InitializeForUserModeSubmission` @0x1401DA74C).
            hHwQueue: dxg.addr() as HANDLE,
            Flags: flags,
            PrivateDriverDataSize: pdd.len() as u32,
            pPrivateDriverData: if pdd.is_empty() {
                std::ptr::null_mut()
            } else {
                pdd.as_mut_ptr().cast()
            },
            // No progress fence: all three zero (`UmsProgress::None`).
            Anonymous: DXGKARG_CREATEHWQUEUE_0 {
                hHwQueueNativeProgressFence: std::ptr::null_mut(),
            },
            HwQueueProgressFenceCPUVirtualAddress: std::ptr::null_mut(),
            HwQueueProgressFenceGPUVirtualAddress: 0,
        };
        if let Some((fence_h, p)) = &self.progress {
            args.HwQueueProgressFenceCPUVirtualAddress = p.kernel_va() as PVOID;
            args.HwQueueProgressFenceGPUVirtualAddress = p.gpu_va();
            match &self.native {
                // With the flag set the driver reads the native fence's driver handle.
                Some(n) => args.Anonymous.hHwQueueNativeProgressFence = n.global_handle() as HANDLE,
                None => args.Anonymous.hHwQueueProgressFence = *fence_h,
            }
        }
        args
    }
}

/// `D3DKMTCreateHwQueue` on `context` of `device` with the caller's `D3DDDI_CREATEHWQUEUEFLAGS`
/// `flags` and private data `pdd` (in/out), past the thunk's own checks
/// ([`crate::kmt::hw_queue`]): a context that is not `device`'s is STATUS_INVALID_PARAMETER
/// (`K:DxgkCreateHwQueueInternal` @0x1402BAF98), then BR-94/BR-95, then the DDI.
pub(crate) fn create_hw_queue(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    context: KmtHandle,
    flags: u32,
    pdd: &mut [u8],
) -> Result<CreatedQueue, SimError> {
    let user_mode = flags & HWQUEUE_USER_MODE_SUBMISSION != 0;
    let (kmd_ctx, node, pid, hw_queue, doorbells, no_timeout, no_kmd) = {
        let os = lock(&a.ums);
        let c = os
            .context_of(device, context)
            .map_err(|_| SimError::DdiFailed(STATUS_INVALID_PARAMETER))?;
        let d = os.live_device(device)?;
        let doorbells = os.doorbell_size().is_some();
        (
            c.kmd,
            c.node,
            d.process,
            c.hw_queue,
            doorbells,
            c.disable_gpu_timeout,
            c.no_kmd_access,
        )
    };
    // BR-94 ([D] DxgkCreateHwQueueInternal), BR-95 ([D]
    // DXGHWQUEUE::InitializeForUserModeSubmission), before any DDI.
    check_queue(a, node, hw_queue, user_mode)?;
    if user_mode && !doorbells {
        // UM-04: user-mode queues only on an adapter that reported its doorbell size.
        return Err(SimError::DdiFailed(STATUS_NOT_SUPPORTED));
    }
    if flags & HWQUEUE_NO_KMD_ACCESS != 0 {
        return no_kmd_access_queue(a, no_kmd, pdd);
    }
    // A queue without `NoKmdAccess` goes to the KMD, on a `NoKmdAccess` context too: 24H2
    // `K:DXGHWQUEUE::Initialize` @0x1402BBA30 (and `InitializeForUserModeSubmission`
    // @0x1401DA74C) pass the context's driver handle, NULL for such a context.
    let f = ddi::table_slot!(a, DxgkDdiCreateHwQueue)?.map_or_else(not_supported, Ok)?;
    let submit_ddi = ddi::table_slot!(a, DxgkDdiSubmitCommandToHwQueue)?;
    let h = new_handle(pid)?;
    let mut fences = QueueFences::make(m, a, pid, user_mode)?;
    // `K:DXGHWQUEUE::Initialize` @0x1402BBA30 (kernel submission) and
    // `K:DXGHWQUEUE::InitializeForUserModeSubmission` @0x1401DA74C alike: a queue of a context
    // created `DisableGpuTimeout` has the flag set in the DDI's flags (bit 0) whatever the
    // caller asked. (Both also set it for a device whose own flag disables GPU timeouts; the
    // simulated devices have no such flag.)
    let flags = if no_timeout {
        flags | DISABLE_GPU_TIMEOUT
    } else {
        flags
    };
    let dxg = DxgHwQueue::new(h);
    let mut args = fences.args(&dxg, flags, pdd);
    a.observer().handed(
        if user_mode {
            &rvgpu_ddi::handover::CREATE_HWQUEUE_USER_MODE
        } else {
            &rvgpu_ddi::handover::CREATE_HWQUEUE
        },
        &args,
    );
    let dl = device_lock(a, device)?;
    let seq = dev_guard(a, &dl);
    let status = f.passive_unaudited(a, (kmd_ctx as HANDLE, &mut args));
    match status {
        Ok(s) if NT_SUCCESS(s) => {}
        Ok(s) => {
            drop(seq);
            fences.undo(m, a)?;
            return Err(SimError::DdiFailed(s));
        }
        Err(e) => {
            drop(seq);
            let _ = fences.undo(m, a);
            return Err(e);
        }
    }
    let kmd = args.hHwQueue as usize;
    dxg.set_driver(kmd);
    let queue_id = HwQueuePdd::read_from_bytes(pdd)
        .ok()
        .filter(|p| p.magic == PDD_MAGIC)
        .map(|p| p.queue_id);
    let created = Created {
        h,
        kmd,
        dxg,
        device,
        context,
        node,
        user_mode,
        queue_id,
        submit_ddi,
    };
    let dxg_addr = created.dxg.addr();
    record_queue(a, created, &mut fences)?;
    let logs = fences.logs.take();
    // LOG-01, LOG-09: both logs of a user-mode queue, before the UMD can use it; a
    // failure fails the creation.
    if let Err(e) = crate::sync::fencelog::queue_created(a, kmd, queue_id, node, pid, logs) {
        let _ = destroy_hw_queue(m, a, h);
        return Err(e);
    }
    // LOG-08: an optimized report names the queue by Dxgkrnl's object.
    lock(&a.fence_os).logs.name_queue(dxg_addr, kmd);
    Ok(CreatedQueue {
        handle: h,
        fence: fences.progress.as_ref().map(|(f, _)| *f),
        progress: fences.progress.map(|(_, p)| p),
    })
}

/// A queue created with `NoKmdAccess` (test signing only, checked by the thunk): 24H2
/// `K:DXGHWQUEUE::Initialize` @0x1402BBA30 and `K:DXGHWQUEUE::InitializeForUserModeSubmission`
/// @0x1401DA74C refuse it on a context without `NoKmdAccess` (STATUS_INVALID_PARAMETER, "The HW
/// queue must specify NoKmdAccess flag"), then check its private data
/// (`K:CheckNoKmdAccessPrivateData` @0x14018A51C, tag `0xFF000005`), then make a VidSch queue
/// with no `DxgkDdiCreateHwQueue`. That queue (its progress fence, logs, doorbell and
/// submissions, none of which the KMD may hear of) is not simulated.
fn no_kmd_access_queue(
    a: &AdapterShared,
    context_no_kmd: bool,
    pdd: &[u8],
) -> Result<CreatedQueue, SimError> {
    if !context_no_kmd {
        a.observer()
            .triage("CreateHwQueue: The HW queue must specify NoKmdAccess flag".into());
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    super::context::check_no_kmd_access_data(pdd, super::context::NO_KMD_ACCESS_QUEUE_TAG)?;
    Err(sim_err(
        a,
        "not simulated: a NoKmdAccess hardware queue on a NoKmdAccess context (24H2 makes it \
         with no DDI)"
            .into(),
    ))
}

/// A queue the KMD created, as the OS records it.
struct Created {
    h: KmtHandle,
    kmd: usize,
    dxg: DxgHwQueue,
    device: KmtHandle,
    context: KmtHandle,
    node: u32,
    user_mode: bool,
    queue_id: Option<u32>,
    submit_ddi: Option<Of<PDXGKDDI_SUBMITCOMMANDTOHWQUEUE>>,
}

/// Records queue `c` with its fences (the native view moves into the queue).
fn record_queue(a: &AdapterShared, c: Created, fences: &mut QueueFences) -> Result<(), SimError> {
    let mut os = lock(&a.ums);
    check_kmd_handle(
        a,
        "DxgkDdiCreateHwQueue",
        "hHwQueue",
        c.kmd,
        os.queues.values().map(|q| q.kmd()),
    )?;
    let due_hint = os.hwq_due.clone();
    let progress = fences.progress.as_ref();
    let last_queued = Arc::new(AtomicU64::new(0));
    let created = os.queues_created;
    os.queues_created = created.wrapping_add(1);
    os.queues.insert(
        c.h,
        QueueObj {
            handle: c.h,
            dxg: c.dxg,
            device: c.device,
            context: c.context,
            node: c.node,
            user_mode: c.user_mode,
            fence: progress.map(|(f, _)| *f),
            native_progress: fences.native.take(),
            doorbell: None,
            queue_id: c.queue_id,
            sched: Arc::new(HwqSched {
                due_hint: due_hint.clone(),
                kmd: c.kmd,
                progress: progress.map(|(_, p)| p.clone()),
                last_queued,
                submit_ddi: c.submit_ddi,
                ..HwqSched::default()
            }),
            created,
        },
    );
    if let Some((fence_h, p)) = progress {
        os.fences.insert(*fence_h, p.clone());
        if let Some(pid) = os.devices.get(&c.device).map(|d| d.process) {
            os.fence_owner.insert(*fence_h, pid);
        }
    }
    os.events.push(UmsEvent::CreateHwQueue {
        queue: c.h,
        user_mode: c.user_mode,
        queue_id: c.queue_id,
    });
    Ok(())
}

/// Destroys the native progress fences of the queues destroyed so far
/// ([`destroy_hw_queue`]); called without the thunk's locks.
pub(super) fn reap_progress_fences(m: &dyn UmsHost, a: &AdapterShared) -> Result<(), SimError> {
    let retired = std::mem::take(&mut lock(&a.ums).retired_progress);
    retired
        .iter()
        .map(|n| m.destroy_native_fence(n))
        .fold(Ok(()), Result::and)
}

pub(crate) fn destroy_hw_queue_thunk(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    {
        let _g = dev_guard(a, &dl);
        lock(&a.ums).queue_of(device, h)?;
        destroy_hw_queue_with_doorbell(m, a, h)?;
    }
    // Its log buffers leave the paging process now that the thunk's locks are released, and
    // its native progress fence goes.
    reap_progress_fences(m, a)?;
    m.reap_system_pages(a)
}

/// Queue `h` destroyed as `K:DXGHWQUEUE::DestroyCoreState` @0x1402CDD74 destroys it, under
/// the device's lock: its doorbell first (`K:DXGDOORBELL::DestroyCoreState` @0x1401D804C:
/// `DxgkDdiDisconnectDoorbell` if connected, `DxgkDdiDestroyDoorbell`, then status ABORT),
/// then the queue (`DxgkDdiDestroyHwQueue`), then its progress fence.
pub(super) fn destroy_hw_queue_with_doorbell(
    m: &dyn UmsHost,
    a: &AdapterShared,
    h: KmtHandle,
) -> Result<(), SimError> {
    let doorbell = lock(&a.ums).queue(h)?.doorbell;
    if let Some(d) = doorbell {
        super::disconnect::os_disconnect(
            a,
            d,
            rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT,
        )?;
        super::doorbell::destroy_doorbell(a, d)?;
    }
    destroy_hw_queue(m, a, h)
}

/// Raw `DxgkDdiDestroyHwQueue` on `queue` of `device`, the OS's own objects left as they are
/// (tests proving the KMD never refuses a teardown Windows does not retry). Returns the
/// driver's status.
pub(crate) fn ddi_destroy_hw_queue(
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
) -> Result<NTSTATUS, SimError> {
    let kmd = lock(&a.ums).live_queue_of(device, queue)?.kmd();
    let f = needed_ddi!(a, DxgkDdiDestroyHwQueue, "created a queue")?;
    f.passive_unaudited(a, kmd as HANDLE)
}

/// Raw `DxgkDdiDestroyDoorbell` on `doorbell` of `device`, the OS's own objects left as they
/// are (see [`ddi_destroy_hw_queue`]). Returns the driver's status.
pub(crate) fn ddi_destroy_doorbell(
    a: &AdapterShared,
    device: KmtHandle,
    doorbell: KmtHandle,
) -> Result<NTSTATUS, SimError> {
    let kmd = lock(&a.ums).doorbell_of(device, doorbell)?.kmd;
    let f = needed_ddi!(a, DxgkDdiDestroyDoorbell, "created a doorbell")?;
    let mut args = DXGKARG_DESTROYDOORBELL {
        hDoorbell: kmd as HANDLE,
    };
    a.observer()
        .handed(&rvgpu_ddi::handover::DESTROY_DOORBELL, &args);
    f.passive_unaudited(a, &mut args)
}

pub(crate) fn submit_raw(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    value: u64,
    gpu: u64,
    bytes: u32,
) -> Result<NTSTATUS, SimError> {
    submit_raw_at(
        a,
        device,
        queue,
        value,
        gpu,
        bytes,
        m.os_config().submit_irql,
    )
}

/// [`submit_raw`] at `irql` (VidSch's worker has no `Machine`: it uses the adapter's copy of
/// the OS configuration).
pub(super) fn submit_raw_at(
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    value: u64,
    gpu: u64,
    bytes: u32,
    irql: Irql,
) -> Result<NTSTATUS, SimError> {
    let target = RawTarget::of(lock(&a.ums).queue_of(device, queue)?);
    submit_to_driver(a, &target, &Packet { value, gpu, bytes }, irql).map(|(_, status)| status)
}

/// What `DxgkDdiSubmitCommandToHwQueue` needs of a queue ([`HwqSched::kmd`] and the
/// fields beside it), read with the caller's other lookups under one UMS lock.
struct RawTarget {
    sched: Arc<HwqSched>,
}

impl RawTarget {
    fn of(q: &QueueObj) -> Self {
        Self {
            sched: q.sched.clone(),
        }
    }
}

/// One kernel-mode submission: its progress value and command buffer.
#[derive(Clone, Copy, Debug)]
struct Packet {
    value: u64,
    gpu: u64,
    bytes: u32,
}

/// `DxgkDdiSubmitCommandToHwQueue` for `t` at `irql`, under the queue's submit lock: the
/// DDI's routine (to name it in a failure) and its status.
fn submit_to_driver(
    a: &AdapterShared,
    t: &RawTarget,
    p: &Packet,
    irql: Irql,
) -> Result<(Routine, NTSTATUS), SimError> {
    // A queue without a progress fence is a user-mode one: the driver refuses it (UM-05) and
    // is told so by zero fence addresses.
    let t = &*t.sched;
    let (progress_gpu, progress_cpu) = t.progress.as_ref().map_or((0, std::ptr::null_mut()), |p| {
        (p.gpu_va(), p.kernel_va() as PVOID)
    });
    #[cfg(test)]
    tests::before_submit_lock(a);
    let destroyed = lock(&t.submit);
    if *destroyed {
        // The queue was destroyed after this submission found it: the handle is gone, as a
        // lookup after the destroy finds it (`K:DxgkSubmitCommandToHwQueueInternal`
        // @0x1402C5A10 refuses an unknown hHwQueue with 0xC000000D).
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    let f = t.submit_ddi.map_or_else(not_supported, Ok)?;
    let args = DXGKARG_SUBMITCOMMANDTOHWQUEUE {
        hHwQueue: t.kmd as HANDLE,
        HwQueueProgressFenceId: p.value,
        DmaBufferVirtualAddress: p.gpu,
        DmaBufferSize: p.bytes,
        DmaBufferPrivateDataSize: 0,
        pDmaBufferPrivateData: std::ptr::null_mut(),
        Flags: DXGK_SUBMITCOMMANDFLAGS::default(),
        HwQueueProgressFenceGpuVa: progress_gpu,
        HwQueueProgressFenceCpuVa: progress_cpu,
    };
    if t.progress.is_some() {
        // What `M:SubmitRenderToHwQueue` @0x14000E8B0 hands over; a raw call on a user-mode
        // queue is a test's, which 24H2 never makes.
        a.observer()
            .handed_alone(&rvgpu_ddi::handover::SUBMIT_COMMAND_TO_HWQUEUE, &args);
    }
    let ctx = a.context();
    let status = f.call_unaudited(a, At::Level(irql), (ctx, &args))?;
    Ok((f.routine(), status))
}

/// `M:VidSchSubmitCommandToHwQueue` @0x140048F00 and the DDI for one kernel-mode submission
/// of `queue` (a test's or VidSch's own, with no thunk ahead of it).
pub(crate) fn submit_command(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    value: u64,
    gpu: u64,
    bytes: u32,
) -> Result<(), SimError> {
    let admit = |k: Option<SubmitKind>| k.map(|_| ()).ok_or_else(invalid_handle);
    submit_command_admitted(m, a, device, queue, value, gpu, bytes, admit)
}

/// `K:DxgkSubmitCommandToHwQueueInternal` @0x1402C5A10's submission once its own checks pass:
/// [`submit_command`], with `admit` (the thunk's checks, in its order) applied to the queue in
/// the same look VidSch takes of it, so the thunk and VidSch read the queue once. `admit`
/// gets `None` for a queue that is not `device`'s.
#[allow(clippy::too_many_arguments)]
pub(crate) fn submit_command_admitted(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    value: u64,
    gpu: u64,
    bytes: u32,
    admit: impl FnOnce(Option<SubmitKind>) -> Result<(), SimError>,
) -> Result<(), SimError> {
    submit_admitted(m, a, device, queue, Packet { value, gpu, bytes }, admit)
}

fn submit_admitted(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    p: Packet,
    admit: impl FnOnce(Option<SubmitKind>) -> Result<(), SimError>,
) -> Result<(), SimError> {
    // Everything the submission reads of the queue, its device and context, in one look,
    // which also takes the node's active reference when no F-state change needs the F-state
    // lock (`power::take_if_f0`).
    let (context, root_current, node, target, early) = {
        let mut guard = lock(&a.ums);
        let os = &*guard;
        let q = os.queues.get(&queue).filter(|q| q.device == device);
        let c = q.and_then(|q| os.contexts.get(&q.context));
        admit(q.map(|q| SubmitKind {
            user_mode: q.user_mode,
            dma_private_data: c.map_or(0, |c| c.dma_private_data),
            removed: os.removed,
        }))?;
        let q = q.ok_or_else(invalid_handle)?;
        if q.user_mode {
            // UM-05: user-mode queues have no kernel-mode path.
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        os.vidsch_device_live(device)?;
        let current = c.is_some_and(|c| super::root::root_current(a, c));
        let (context, node, target) = (q.context, q.node, RawTarget::of(q));
        let early = take_if_f0(&mut guard, node).then(|| NodeActive::counted(a, node));
        (context, current, node, target, early)
    };
    // The context's root, when VidSch has not sent it yet (24H2 `M:VidSchSubmitCommandToHwQueue`
    // @0x140048F00, for every packet but a present, held or not); a compare while no
    // process's root changed.
    if !root_current {
        super::root::ensure_root(a, context)?;
    }
    let sched = &target.sched;
    // The pump lock keeps a direct submission behind one VidSch's worker is making, and the
    // list below as the worker left it.
    let _p = lock(&sched.pump);
    {
        // `M:VidSchSubmitCommandToHwQueue` @0x140048F00 does not compare the value with the
        // queue's earlier ones: what the KMD makes of one not above them is its own.
        // MF-03: behind a pending GPU wait (or other held work) the OS holds the submission.
        let mut st = lock(&sched.st);
        if !st.list.is_empty() {
            sched.accepted.fetch_max(p.value, Ordering::AcqRel);
            st.list.push_back(Pending::Submit {
                value: p.value,
                gpu: p.gpu,
                bytes: p.bytes,
            });
            drop(st);
            let mut os = lock(&a.ums);
            os.events.push(UmsEvent::SubmitHeld {
                queue,
                value: p.value,
            });
            // Held work takes its reference when the pump sends it.
            if let Some(e) = early {
                e.release_in(&mut os);
            }
            return Ok(());
        }
    }
    // UM-13: the node's component is activated (F0), the adapter brought to D0 first, before
    // the kernel-mode submission and held until the last-queued value is recorded below.
    let active = match early {
        Some(e) => {
            e.engine_running()?;
            e
        }
        None => node_active_in_d0(a, node)?,
    };
    let (submit, status) = submit_to_driver(a, &target, &p, m.os_config().submit_irql)?;
    if status < 0
        && status != STATUS_NOT_IMPLEMENTED
        && a.os.windows.reading().submit_failure == SubmitFailure::DeviceError
    {
        // 24H2 (`M:SubmitRenderToHwQueue` @0x14000E8B0): the API returned before VidSch made
        // the call; the failure marks the device in error.
        super::loss::tdr_device_error(a, device, crate::state::ums::DeviceError::SubmitRefused)?;
        lock(&a.ums).events.push(UmsEvent::DeviceError { device });
        return Ok(());
    }
    ddi::check_routine(submit, status)?;
    sched.last_queued.fetch_max(p.value, Ordering::AcqRel);
    // Without the queue's state lock: no entry goes with it (`HwqSched::accepted`).
    sched.accepted.fetch_max(p.value, Ordering::AcqRel);
    let mut os = lock(&a.ums);
    os.events.push(UmsEvent::Submit {
        queue,
        value: p.value,
    });
    active.release_in(&mut os);
    Ok(())
}

/// The node of hardware queue `queue`.
pub(super) fn queue_node(a: &AdapterShared, queue: KmtHandle) -> Result<u32, SimError> {
    lock(&a.ums).queue(queue).map(|q| q.node)
}

/// BR-94: a hardware queue needs a context created with `HwQueueSupported`; BR-95: a
/// user-mode queue needs a node with `UserModeSubmission` (both `STATUS_INVALID_PARAMETER`).
pub(crate) fn check_queue(
    a: &AdapterShared,
    node: u32,
    context_hw_queue: bool,
    user_mode: bool,
) -> Result<(), SimError> {
    if !context_hw_queue {
        a.observer().triage(format!(
            "BR-94: Cannot create HW queue on context (node {node}) that doesn't support \
             hardware queues."
        ));
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    if user_mode && !node_flags(a, node).is_set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission) {
        a.observer().triage(format!(
            "BR-95: Cannot create UserModeSubmission capable HWQueue, because Node Ordinal \
             {node} does not support UserModeSubmission"
        ));
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    Ok(())
}

/// `D3DKMTDestroyContext`'s work: the context's hardware queues first, each with its doorbell,
/// then the context (24H2 destroys them along, `K:DXGCONTEXT::DestroyAllHwQueues`).
pub(crate) fn destroy_context_thunk(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    {
        let _g = dev_guard(a, &dl);
        lock(&a.ums).context_of(device, h)?;
        // `K:DXGCONTEXT::DestroyAllHwQueues` @0x1403A0E60: each of the context's queues with
        // its doorbell, walking the context's list from its head, then the context.
        // `K:DXGCONTEXT::CreateHwQueue` @0x1402BB7A8 links each new queue at the head: the
        // newest goes first.
        let mut queues: Vec<(u64, KmtHandle)> = {
            let os = lock(&a.ums);
            os.queues
                .values()
                .filter(|q| q.context == h)
                .map(|q| (q.created, q.handle))
                .collect()
        };
        queues.sort_unstable_by(|x, y| y.cmp(x));
        for (_, q) in queues {
            destroy_hw_queue_with_doorbell(m, a, q)?;
        }
        destroy_context(m, a, h)?;
    }
    // The queues' log buffers leave the paging process once the locks are released, and
    // their native progress fences go.
    reap_progress_fences(m, a)?;
    m.reap_system_pages(a)
}

#[cfg(test)]
#[path = "hwqueue_tests.rs"]
mod tests;
