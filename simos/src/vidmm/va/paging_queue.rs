//! Paging queues: `D3DKMTCreatePagingQueue` / `D3DKMTDestroyPagingQueue`, the paging fence
//! each queue signals, and `D3DKMTMakeResident` on a queue.
//!
//! A queue does its operations in order, on VidMm's worker ([`crate::vidmm::worker`];
//! [`PagingWork::Queued`](crate::os::answers::PagingWork::Queued), every reading): each
//! operation is queued and the thunk answers STATUS_PENDING with a fence value not yet
//! reached, as 24H2 passes VidMm's answer through (`K:DxgkMapGpuVirtualAddress` @0x140321DB0
//! returns VidMm's status and writes `VirtualAddress` and `PagingFenceValue` back for any
//! status that is not an error; `K:DxgkMakeResidentInternal` @0x1402A7570). A queued Map
//! enters nothing in the page tables until the worker reaches it ([`paging_queue_catch_up`]),
//! so GPU work that uses the VA before the fence value faults. The worker runs on its own,
//! woken when an operation is queued; a queue being destroyed has what it still holds done
//! first. Tests that need synchronous paging choose
//! [`PagingWork::InThunk`](crate::os::answers::PagingWork::InThunk): an operation with
//! nothing queued ahead then completes before the thunk returns (STATUS_SUCCESS).

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::state::vidmm::va::PagingQueue;
use crate::sync::fence::MonitoredFence;
use crate::vidmm::host::Host;

use super::base::{bad, device_pid, pages_at};
use super::mapping::{queued_run, repeat_tag};

/// The flags `K:DXGPAGINGQUEUE::Initialize` @0x140396FF0 makes a paging queue's fence with:
/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS` `NoSignal` (bit 4) and `NoGPUAccess` (bit 7).
const PAGING_FENCE_FLAGS: u32 = (1 << 4) | (1 << 7);

/// `D3DKMTCreatePagingQueue` for `device` (22631 DxgkCreatePagingQueueInternal: an
/// unknown device or a `PhysicalAdapterIndex` past the adapter's count is
/// INVALID_PARAMETER; the priority is stored as given). Returns the queue, its paging
/// fence's handle and the fence (read-only CPU view, `FenceValueCPUVirtualAddress`).
pub(crate) fn paging_queue_create(
    host: &dyn Host,
    a: &AdapterShared,
    device: KmtHandle,
    priority: i32,
    physical_adapter_index: u32,
) -> Result<(KmtHandle, KmtHandle, MonitoredFence), SimError> {
    let pid = device_pid(a, device)?;
    // One physical adapter per adapter here (no linked display adapters).
    if physical_adapter_index != 0 {
        return Err(bad());
    }
    let (fence, fence_obj) = host.create_sync_fence(a, device, 0, PAGING_FENCE_FLAGS)?;
    let h = crate::ob::new_kmt_handle(pid)?;
    lock(&a.mm.gpuva).queues.insert(
        h,
        PagingQueue {
            device,
            priority,
            fence,
            fence_obj: fence_obj.clone(),
            value: 0,
            backlog: Vec::new(),
        },
    );
    Ok((h, fence, fence_obj))
}

/// `D3DKMTDestroyPagingQueue`: the queue and its fence ("Destroying the paging queue
/// (either implicitly or explicitly) will automatically destroy this sync object",
/// D3DKMT_CREATEPAGINGQUEUE). A handle that is not a queue of `device` is
/// INVALID_PARAMETER. What the queue still has queued is done first.
pub(crate) fn paging_queue_destroy(
    host: &dyn Host,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
) -> Result<(), SimError> {
    {
        let mut st = lock(&a.mm.gpuva);
        match st.queues.get(&queue) {
            Some(q) if q.device == device => {}
            _ => return Err(bad()),
        }
        st.runtime.retain(|_, q| *q != queue);
    }
    // What the queue still had queued is done before it goes, by this thread as VidMm's
    // worker would: in order, one turn at a time.
    {
        let _worker = lock(&a.mm.worker);
        paging_queue_catch_up(host, a, queue, u64::MAX)?;
    }
    let q = lock(&a.mm.gpuva).queues.remove(&queue).ok_or_else(bad)?;
    // The UMD may have destroyed the fence through its handle already: nothing left.
    let _ = host.destroy_sync_fence(a, device, q.fence);
    Ok(())
}

/// The paging queue `device`'s simulated runtime orders its own paging on, and its fence:
/// one per device, created with normal priority on first use, as a UMD creates one with its
/// device (`D3DKMTCreatePagingQueue`, what the DLL's `WinKmt::open` does).
pub(crate) fn runtime_paging_queue(
    host: &dyn Host,
    a: &AdapterShared,
    device: KmtHandle,
) -> Result<(KmtHandle, KmtHandle), SimError> {
    let kept = |st: &crate::state::vidmm::va::State| {
        let q = st.runtime.get(&device)?;
        st.queues
            .get(q)
            .filter(|pq| pq.device == device)
            .map(|pq| (*q, pq.fence))
    };
    if let Some(q) = kept(&lock(&a.mm.gpuva)) {
        return Ok(q);
    }
    // D3DDDI_PAGINGQUEUE_PRIORITY_NORMAL.
    let (h, fence, _) = paging_queue_create(host, a, device, 0, 0)?;
    let raced = {
        let mut st = lock(&a.mm.gpuva);
        match kept(&st) {
            Some(q) => Some(q),
            None => {
                st.runtime.insert(device, h);
                None
            }
        }
    };
    match raced {
        // Another thread of the process made one first: that one is the device's.
        Some(q) => {
            paging_queue_destroy(host, a, device, h)?;
            Ok(q)
        }
        None => Ok((h, fence)),
    }
}

/// Whether an operation on `queue` now is queued behind work not yet done: VidMm's paging
/// worker does it (the reading's [`PagingWork`](crate::os::answers::PagingWork)), or the
/// queue has a backlog.
pub(super) fn paging_behind(a: &AdapterShared, queue: KmtHandle) -> bool {
    a.os.windows.reading().paging_work == crate::os::answers::PagingWork::Queued
        || lock(&a.mm.gpuva)
            .queues
            .get(&queue)
            .is_some_and(|q| !q.backlog.is_empty())
}

/// Hands out `queue`'s next fence value for an operation that is queued, not done (`map`: the
/// mapping a Map makes): the fence is not signalled.
pub(super) fn paging_fence_queue(
    a: &AdapterShared,
    queue: KmtHandle,
    map: Option<(ProcessId, u64, u64)>,
) -> Result<u64, SimError> {
    let mut st = lock(&a.mm.gpuva);
    let q = st.queues.get_mut(&queue).ok_or_else(bad)?;
    q.value += 1;
    let value = q.value;
    q.backlog
        .push(crate::state::vidmm::va::Queued { value, map });
    drop(st);
    // Queued first, then the worker woken (`crate::vidmm::worker`: no wake-up lost).
    a.mm.paging_queued();
    Ok(value)
}

/// `queue` catches up to `value`: each queued operation up to it done in order (a
/// queued Map's pages entered in the page tables where its allocation is placed), then the
/// fence signalled to the last one done. A queue with nothing queued, or a handle that is not
/// a paging queue, has nothing to do.
pub(crate) fn paging_queue_catch_up(
    host: &dyn Host,
    a: &AdapterShared,
    queue: KmtHandle,
    value: u64,
) -> Result<(), SimError> {
    // Residency first, as for a Map: where the allocations are cannot change meanwhile.
    let res = lock(&a.mm.residency);
    let (due, starts) = {
        let mut st = lock(&a.mm.gpuva);
        let Some(q) = st.queues.get_mut(&queue) else {
            return Ok(());
        };
        // Where each queued Map starts: another Map's pieces are never entered with one's.
        let starts: Vec<(ProcessId, u64, u64)> = q.backlog.iter().filter_map(|o| o.map).collect();
        let n = q.backlog.iter().take_while(|o| o.value <= value).count();
        let due: Vec<crate::state::vidmm::va::Queued> = q.backlog.drain(..n).collect();
        (due, starts)
    };
    let Some(last) = due.last().map(|o| o.value) else {
        return Ok(());
    };
    for (pid, start, va) in due.iter().filter_map(|o| o.map) {
        // A range freed or an allocation destroyed meanwhile left nothing to map. A Map
        // that repeats its allocation's pages is one mapping per repetition, all queued
        // together (`va_map_into`): entered at once, as the range they make.
        let pieces = queued_run(a, pid, start, va, &starts);
        let Some(m) = pieces.first().map(|p| p.1) else {
            continue;
        };
        if let Some(all) = res.pages(m.allocation) {
            let total: u64 = pieces.iter().map(|p| p.1.pages).sum();
            let once = pages_at(&all, m.offset, m.pages).ok_or_else(bad)?;
            let phys: Vec<_> = once.iter().copied().cycle().take(total as usize).collect();
            let t = repeat_tag(&m, va, total);
            crate::vidmm::mmu::vidmm_map_at(host, a, pid, va, &phys, m.attrs, t)?;
            let mut st = lock(&a.mm.gpuva);
            for (at, _) in &pieces {
                if let Some(m) = st.map_mut(pid, start, *at) {
                    m.live = true;
                }
            }
        }
    }
    drop(res);
    let f = lock(&a.mm.gpuva)
        .queues
        .get(&queue)
        .map(|q| q.fence_obj.clone());
    if let Some(f) = f {
        if let Err(e) = host.signal_fence_from_cpu(&f, last) {
            if a.state.fault().is_some() {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Whether the operation that handed out `value` on `queue` was done before its thunk
/// returned (the thunk's STATUS_SUCCESS; else STATUS_PENDING). The answer is VidMm's when it
/// takes the operation, not a later look at the fence: under
/// [`PagingWork::Queued`](crate::os::answers::PagingWork::Queued) every operation is queued,
/// so PENDING even when the worker has done it by the time the thunk returns; under
/// `InThunk` an operation queued behind a backlog is PENDING until the fence reaches it. A
/// queue that is gone has nothing pending. (The PE bridge's, Linux only.)
#[cfg(target_os = "linux")]
pub(crate) fn paging_done_in_thunk(a: &AdapterShared, queue: KmtHandle, value: u64) -> bool {
    if a.os.windows.reading().paging_work == crate::os::answers::PagingWork::Queued {
        return false;
    }
    lock(&a.mm.gpuva)
        .queues
        .get(&queue)
        .is_none_or(|q| q.fence_obj.value() >= value)
}

/// The next paging fence value of `queue`, signalled (the paging this thunk did has
/// completed).
pub(super) fn paging_fence_advance(
    host: &dyn Host,
    a: &AdapterShared,
    queue: KmtHandle,
) -> Result<u64, SimError> {
    let (f, value) = {
        let mut st = lock(&a.mm.gpuva);
        let q = st.queues.get_mut(&queue).ok_or_else(bad)?;
        q.value += 1;
        (q.fence_obj.clone(), q.value)
    };
    // A fence the process destroyed through its handle has no one to tell; a halted
    // machine is reported.
    if let Err(e) = host.signal_fence_from_cpu(&f, value) {
        if a.state.fault().is_some() {
            return Err(e);
        }
    }
    Ok(value)
}

/// `D3DKMTMakeResident` on paging queue `queue` of `device`: `queue` checked (not a queue
/// of the device: INVALID_PARAMETER), `page` does the residency work, then the queue's
/// fence advances to the value returned (the paging is complete).
pub(crate) fn paging_queue_make_resident<E: From<SimError>>(
    host: &dyn Host,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    page: impl FnOnce() -> Result<(), E>,
) -> Result<u64, E> {
    match lock(&a.mm.gpuva).queues.get(&queue) {
        Some(q) if q.device == device => {}
        _ => return Err(bad().into()),
    }
    let behind = paging_behind(a, queue);
    page()?;
    // Queued behind work not yet done: its fence value comes after that work's (PENDING).
    // The page-in itself is done now; a queued Map of the allocation stays out of the page
    // tables until the queue reaches it.
    if behind {
        return Ok(paging_fence_queue(a, queue, None)?);
    }
    Ok(paging_fence_advance(host, a, queue)?)
}
