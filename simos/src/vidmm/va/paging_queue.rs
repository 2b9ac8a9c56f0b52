//! Paging queues: `D3DKMTCreatePagingQueue` / `D3DKMTDestroyPagingQueue`, the paging fence
//! each queue signals, and `D3DKMTMakeResident` on a queue. Paging completes before a thunk
//! returns, so the fence value handed back has been reached already.

use super::*;

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
    let (fence, fence_obj) = host.create_sync_fence(a, device, 0)?;
    let h = crate::ob::new_kmt_handle(pid)?;
    lock(&a.mm.gpuva).queues.insert(
        h,
        PagingQueue {
            device,
            priority,
            fence,
            fence_obj: fence_obj.clone(),
            value: 0,
        },
    );
    Ok((h, fence, fence_obj))
}

/// `D3DKMTDestroyPagingQueue`: the queue and its fence ("Destroying the paging queue
/// (either implicitly or explicitly) will automatically destroy this sync object",
/// D3DKMT_CREATEPAGINGQUEUE). A handle that is not a queue of `device` is
/// INVALID_PARAMETER. Paging here finishes inside each thunk, so nothing is pending.
pub(crate) fn paging_queue_destroy(
    host: &dyn Host,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
) -> Result<(), SimError> {
    let q = {
        let mut st = lock(&a.mm.gpuva);
        match st.queues.get(&queue) {
            Some(q) if q.device == device => {}
            _ => return Err(bad()),
        }
        st.runtime.retain(|_, q| *q != queue);
        st.queues.remove(&queue).ok_or_else(bad)?
    };
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
        st.queues.get(q).map(|pq| (*q, pq.fence))
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
pub(crate) fn paging_queue_make_resident(
    host: &dyn Host,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    page: impl FnOnce() -> Result<(), crate::vidmm::residency::MakeResidentFail>,
) -> Result<u64, crate::vidmm::residency::MakeResidentFail> {
    match lock(&a.mm.gpuva).queues.get(&queue) {
        Some(q) if q.device == device => {}
        _ => return Err(bad().into()),
    }
    page()?;
    Ok(paging_fence_advance(host, a, queue)?)
}
