//! VidSch's PASSIVE worker for user-mode submission: what the DPC noted (F1 requests, hardware
//! queues' page faults) done at PASSIVE_LEVEL: an idle engine taken to F1 (UM-13), a faulted
//! queue's device put in error (UM-10), held work run.

use std::sync::atomic::Ordering;

use rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY;
use rvgpu_ddi::interrupt::DXGK_ENGINE_STATE_TRANSITION_TO_F1;
use rvgpu_kmd::platform::Irql;

use crate::adapter::{AdapterShared, Life};
use crate::base::bugcheck::{self, kirql, BugCheck};
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::os::answers::OsDisconnects;
use crate::state::ums::events::UmsEvent;
use crate::state::ums::{DeviceError, DoorbellState, QueueObj};

use super::disconnect::os_disconnect;
use super::held::run_hwq_work;
use super::kmd::worker_step_failed;
use super::locks::exclusive;
use super::loss::tdr_device_error;
use super::power::set_fstate_locked;

/// Records what the DPC reported (called from `DxgkCbNotifyDpc`, DISPATCH_LEVEL): F1 requests
/// become PASSIVE work for VidSch's worker, where the reading acts on engine-state reports.
pub(crate) fn note_engine_state(a: &AdapterShared, node: u32, state: i32) {
    // 24H2 drops the report (`crate::os::answers::EngineStateReports`): what it received stays
    // in the processed notifications only.
    if a.os.windows.reading().engine_state != crate::os::answers::EngineStateReports::Acted {
        return;
    }
    let mut os = lock(&a.ums);
    os.events.push(UmsEvent::EngineState { node, state });
    if state == DXGK_ENGINE_STATE_TRANSITION_TO_F1 {
        os.work.push_back(node);
        drop(os);
        a.sch.wake.notify();
    }
}

/// `M:VidSchiProcessHwQueuePageFaultedDpc` @0x1400493D0's address: where the DPC reads through
/// the reported queue (the "address that referenced memory" of a fault there).
const HWQUEUE_PAGE_FAULTED_DPC: u64 = 0x1_4004_93D0;

/// DPC (`DxgkCbNotifyDpc`, DISPATCH_LEVEL): a `DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED` report
/// naming `named` as `FaultedHwQueue`, as `M:VidSchiProcessHwQueuePageFaultedDpc` @0x1400493D0
/// takes it. With `DXGK_PAGE_FAULT_FENCE_INVALID` clear, 24H2 reads `named + 40` as its
/// `DXGHWQUEUE`'s VidSch queue and goes on to that queue's device, which it puts in error
/// (UM-10: its doorbells `DISCONNECTED_ABORT`; done at PASSIVE here, [`run_passive_work`]).
/// A value that is not one of Dxgkrnl's queue objects (the driver's own handle, say) is a wild
/// read at DISPATCH_LEVEL: bug check 0xD1 `DRIVER_IRQL_NOT_LESS_OR_EQUAL` (the memory
/// referenced, IRQL 2, 0 read, the DPC's address). The other forms (flag 0x2 set: a context or
/// process handle, or neither) are checked by the caller and start no device error here.
pub(crate) fn note_page_fault(a: &AdapterShared, named: usize, va: u64) {
    enum Found {
        Live(KmtHandle),
        /// Destroyed since the fault was posted: nothing left to put in error.
        Retired,
        Wild,
    }
    let found = {
        let os = lock(&a.ums);
        let live = os
            .queues
            .values()
            .find(|q| q.dxg.addr() == named)
            .map(|q| q.dxg.follow().1);
        match live {
            Some(q) => Found::Live(q),
            None if os.retired_dxg_queues.contains_key(&named) => Found::Retired,
            None => Found::Wild,
        }
    };
    match found {
        Found::Live(queue) => {
            lock(&a.ums).faulted.push_back((queue, va));
            a.sch.wake.notify();
        }
        Found::Retired => {}
        Found::Wild => a.state.raise_bugcheck(BugCheck::new(
            bugcheck::DRIVER_IRQL_NOT_LESS_OR_EQUAL,
            [
                (named as u64).wrapping_add(40),
                kirql(Irql::Dispatch),
                0,
                HWQUEUE_PAGE_FAULTED_DPC,
            ],
        )),
    }
}

/// Whether PASSIVE work is pending.
pub(crate) fn has_work(a: &AdapterShared) -> bool {
    let os = lock(&a.ums);
    !os.work.is_empty()
        || !os.faulted.is_empty()
        || !os.f1_deferred.is_empty()
        || (os.hwq_due.load(Ordering::Acquire)
            && os.queues.values().any(|q| q.sched.due(q.progress(), false)))
}

/// PASSIVE: puts the device of each page-faulted queue in error (UM-10).
fn run_page_faults(a: &AdapterShared) -> bool {
    let mut did = false;
    loop {
        let Some((queue, va)) = lock(&a.ums).faulted.pop_front() else {
            return did;
        };
        did = true;
        // Destroyed since the DPC: nothing to put in error.
        let Some(device) = lock(&a.ums).queues.get(&queue).map(|q| q.device) else {
            continue;
        };
        lock(&a.ums).events.push(UmsEvent::PageFault { queue, va });
        let _x = exclusive(a);
        if let Err(e) = tdr_device_error(a, device, DeviceError::PageFault) {
            worker_step_failed(a, format!("putting device {device} in error failed: {e}"));
            return did;
        }
        lock(&a.ums).events.push(UmsEvent::DeviceError { device });
    }
}

/// VidSch's PASSIVE worker: runs the queued F1 transitions (UM-13). `dma_pending` answers
/// whether VidSch has a DMA buffer of a node in flight (such a node is not idle). Returns
/// whether it did anything.
pub(crate) fn run_passive_work(a: &AdapterShared, dma_pending: &dyn Fn(u32) -> bool) -> bool {
    // The D3 trim pages from inside the power sequence, which holds it exclusively: the
    // worker's PASSIVE items (F1 transitions take the same sequence) wait until it is over
    // rather than deadlock this thread in step mode.
    if lock(&a.mm.vidmm).power_thread == Some(std::thread::current().id()) {
        return false;
    }
    let mut did = run_hwq_work(a);
    if !a.state.is_halted() && *lock(&a.life) == Life::Started {
        did |= run_page_faults(a);
    }
    loop {
        // Work queued while the adapter is still starting waits for the start to finish.
        if a.state.is_halted() || *lock(&a.life) != Life::Started {
            return did;
        }
        let Some(node) = lock(&a.ums).work.pop_front() else {
            return did | run_deferred_f1(a, dma_pending);
        };
        did = true;
        let _x = exclusive(a);
        if let Err(e) = engine_to_f1(a, node, dma_pending) {
            worker_step_failed(a, format!("engine {node} F1 transition failed: {e}"));
            return did;
        }
    }
}

pub(super) fn engine_to_f1(
    a: &AdapterShared,
    node: u32,
    dma_pending: &dyn Fn(u32) -> bool,
) -> Result<(), SimError> {
    let targets: Vec<KmtHandle> = {
        // A node already in F1 has no connected doorbell (a connect sets F0 first); a
        // repeated request finds nothing to disconnect and leaves the F-state as it is.
        let os = lock(&a.ums);
        os.doorbells
            .values()
            .filter(|d| matches!(d.state, DoorbellState::Connected { .. }))
            .filter(|d| os.queues.get(&d.queue).is_some_and(|q| q.node == node))
            .map(|d| d.handle)
            .collect()
    };
    // UM-14 (the pages) has the OS disconnect them first; 24H2 does not
    // (crate::os::answers::OsDisconnects).
    if a.os.windows.reading().os_disconnects == OsDisconnects::OnPowerAndReset {
        for d in targets {
            os_disconnect(a, d, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY)?;
        }
    }
    // F1 only when idle (UM-13: "an idle engine asks for F1"; PoFx idles a component only
    // when no active reference holds it, and VidSch holds one while it has work for the
    // node): checked under the F-state lock, which every active reference takes unless it
    // finds the node in F0 with no change under way; such a reference counted after the idle
    // check makes the F1 itself decline (`set_fstate_locked`): busy as well.
    let _f = lock(&a.ums_fstate);
    if !node_busy(a, node, dma_pending) {
        lock(&a.ums).f1_deferred.retain(|&n| n != node);
        if set_fstate_locked(a, node, 1)? {
            return Ok(());
        }
    }
    let mut os = lock(&a.ums);
    os.events.push(UmsEvent::F1Declined { node });
    if !os.f1_deferred.contains(&node) {
        os.f1_deferred.push(node);
    }
    Ok(())
}

/// The deferred F1 requests of nodes that are idle now. Returns whether one ran.
fn run_deferred_f1(a: &AdapterShared, dma_pending: &dyn Fn(u32) -> bool) -> bool {
    let deferred: Vec<u32> = lock(&a.ums).f1_deferred.clone();
    let mut did = false;
    for node in deferred {
        if a.state.is_halted() || node_busy(a, node, dma_pending) {
            continue;
        }
        let _x = exclusive(a);
        // Still wanted (no work arrived since the check)?
        if !lock(&a.ums).f1_deferred.contains(&node) {
            continue;
        }
        did = true;
        if let Err(e) = engine_to_f1(a, node, dma_pending) {
            worker_step_failed(a, format!("engine {node} F1 transition failed: {e}"));
            return did;
        }
    }
    did
}

/// Whether node `node` has work the OS knows of: an active reference, a kernel-mode or held
/// submission, a queue whose last-queued progress value is ahead of its fence (UM-16), a
/// VidSch DMA buffer in flight, or VidMm paging in flight.
fn node_busy(a: &AdapterShared, node: u32, dma_pending: &dyn Fn(u32) -> bool) -> bool {
    let (active, scheds) = {
        let os = lock(&a.ums);
        let active = os.node_active.get(node as usize).is_some_and(|&n| n > 0)
            || os
                .queues
                .values()
                .filter(|q| q.node == node)
                .any(QueueObj::known_work);
        let scheds: Vec<_> = os
            .queues
            .values()
            .filter(|q| q.node == node)
            .map(|q| q.sched.clone())
            .collect();
        (active, scheds)
    };
    // Held submissions (MF-03), read without the OS lock (the pump takes them in the other
    // order).
    active
        || lock(&a.ums)
            .driver_active
            .get(node as usize)
            .is_some_and(|&n| n > 0)
        || scheds.iter().any(|s| !lock(&s.st).list.is_empty())
        || dma_pending(node)
        || lock(&a.mm.vidmm).paging_busy()
}
