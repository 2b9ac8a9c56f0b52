//! What other components ask of the user-mode objects: queued work, queues, fences, counts.

use crate::adapter::AdapterShared;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::state::vidmm::residency::QueuedWork;
use crate::sync::fence::MonitoredFence;

use crate::state::ums::UmsOs;

/// AL-03: the work queued on `device`'s hardware queues now, as (progress fence, value it
/// must reach) for each queue with outstanding work. A user-mode queue's value is the UMD's
/// `HwQueueProgressFenceLastQueuedValue` (UM-16): untrusted, but it only decides when this
/// process's own memory is freed, and freed memory is unmapped from its GPU space first.
pub(crate) fn queued_work(os: &UmsOs, device: KmtHandle) -> Vec<QueuedWork> {
    os.queues
        .values()
        .filter(|q| q.device == device)
        .filter_map(|q| {
            let v = q.last_queued().load(std::sync::atomic::Ordering::Acquire);
            let fence = q.progress()?;
            (fence.value() < v).then(|| QueuedWork {
                queue: q.handle,
                fence: fence.clone(),
                value: v,
            })
        })
        .collect()
}

/// The hardware queues of `pid`'s devices (a fence page the process closed stays
/// mapped while one of them lives, `vidmm::fencemap`).
pub(crate) fn process_queues(os: &UmsOs, pid: ProcessId) -> Vec<KmtHandle> {
    os.queues
        .values()
        .filter(|q| os.devices.get(&q.device).is_some_and(|d| d.process == pid))
        .map(|q| q.handle)
        .collect()
}

/// Whether hardware queue `h` still exists.
pub(crate) fn queue_alive(os: &UmsOs, h: KmtHandle) -> bool {
    os.queues.contains_key(&h)
}

/// The fence behind D3DKMT handle `h` of the process that owns `device`: `None` for a handle
/// of another process, as Windows' per-process handle table answers (STATUS_INVALID_HANDLE).
pub(crate) fn fence_of(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Option<MonitoredFence> {
    let os = lock(&a.ums);
    let pid = os.devices.get(&device)?.process;
    (os.fence_owner.get(&h) == Some(&pid))
        .then(|| os.fences.get(&h).cloned())
        .flatten()
}

/// Live user-mode objects on the adapter (devices, contexts, queues, doorbells, allocations).
pub(crate) fn live_counts(a: &AdapterShared) -> (usize, usize, usize, usize, usize) {
    let os = lock(&a.ums);
    (
        os.devices.len(),
        os.contexts.len(),
        os.queues.len(),
        os.doorbells.len(),
        os.allocations.len(),
    )
}
