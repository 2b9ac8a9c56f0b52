//! VidMm's worker: the one place queued paging is done, on its own, whoever waits or not.
//!
//! 24H2 runs it on a system thread of its own per adapter (`M:VidMmWorkerThreadProc2`
//! @0x14009FBE0, priority 15). A paging operation that is queued
//! (`M:VidMmAppendReadyPacket` @0x1400E8870) is appended at its paging queue's tail under the
//! worker's lock, takes the queue's next fence value, marks an idle queue ready and hands the
//! queue to the worker (`M:VidMmNotifyTaskWork` @0x14008FEC0, which enqueues the queue only
//! when it had no work counted); `M:VidMmEnqueueTask` @0x14008F99C sets the worker's event.
//! So a paging fence moves with nobody waiting on it: a program that polls the fence's CPU
//! value sees it reach the value, as one that waits does.
//!
//! Here the worker is a thread of a threaded machine (`dxgkrnl::interrupt`'s VidMm thread)
//! and a turn of each step-mode round. A turn does every paging queue's operations in their
//! order (`vidmm::va::paging_queue`: Map, MakeResident), then the GPU VA updates
//! whose waits were released (`vidmm::va::update`). One turn runs at a time
//! (`VidMmState::worker`), so a queue's operations are done, and its fence signalled, in
//! their order.
//!
//! No wake-up is lost: an operation is queued (under the paging state's lock) before
//! `paging_due` is set and the worker woken; a turn clears `paging_due` before it looks at the
//! queues, so an operation it does not see set `paging_due` after that and starts another
//! turn (the thread compares the wake generation it read before its turn).

use std::sync::atomic::Ordering;
use std::sync::{MutexGuard, TryLockError};

use crate::adapter::AdapterShared;
use crate::base::lock::{lock, Locked};
use crate::ob::KmtHandle;
use crate::state::vidmm::WorkerTurn;
use crate::vidmm::host::Host;

/// Whether VidMm's worker has anything to look at: queued paging, or GPU VA updates whose
/// waits were released.
pub(crate) fn has_work(a: &AdapterShared) -> bool {
    a.mm.paging_due.load(Ordering::SeqCst) || crate::vidmm::va::update::gpu_va_updates_due(a)
}

/// Holds VidMm's worker for one turn of `a`'s paging. `step`: the caller is a step-mode round,
/// which may run inside a VidMm operation that steps the machine while it holds the worker or
/// the residency lock (its paging waits) or the page-table turn (its submission waiting for
/// room): the round cannot wait for that operation, so the work stays due for a later round
/// (`None`).
pub(crate) fn hold(a: &AdapterShared, step: bool) -> Option<Held<'_>> {
    if !step {
        return Some(Held::Waited(lock(&a.mm.worker)));
    }
    let guard = match a.mm.worker.try_lock() {
        Ok(g) => g,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => return None,
    };
    if matches!(a.mm.residency.try_lock(), Err(TryLockError::WouldBlock))
        || crate::vidmm::paging::page_table_turn_taken(a)
    {
        return None;
    }
    Some(Held::Tried(guard))
}

/// VidMm's worker held for a turn ([`hold`]).
#[allow(dead_code)]
pub(crate) enum Held<'a> {
    /// Waited for (a worker thread, a queue's destroy).
    Waited(Locked<'a, WorkerTurn>),
    /// Taken without waiting (a step-mode round).
    Tried(MutexGuard<'a, WorkerTurn>),
}

/// One turn of VidMm's worker on adapter `a`; whether it did anything. A failure is the
/// machine's (a halted or faulted machine ends the turn quietly).
pub(crate) fn turn(host: &dyn Host, a: &AdapterShared, step: bool) -> bool {
    if !has_work(a) {
        return false;
    }
    let Some(guard) = hold(a, step) else {
        return false;
    };
    let mut did = false;
    if a.mm.paging_due.swap(false, Ordering::SeqCst) {
        match paging_run(host, a) {
            Ok(d) => did = d,
            Err(e) => {
                report(a, &e);
                return false;
            }
        }
    }
    did |= crate::vidmm::va::update::gpu_va_worker(host, a, step);
    drop(guard);
    did
}

/// Every paging queue with operations queued does them all, in order, its fence signalled to
/// the last one done; whether any did.
fn paging_run(host: &dyn Host, a: &AdapterShared) -> Result<bool, crate::base::error::SimError> {
    let mut queues: Vec<KmtHandle> = lock(&a.mm.gpuva)
        .queues
        .iter()
        .filter(|(_, q)| !q.backlog.is_empty())
        .map(|(h, _)| *h)
        .collect();
    queues.sort();
    for q in &queues {
        crate::vidmm::va::paging_queue::paging_queue_catch_up(host, a, *q, u64::MAX)?;
    }
    Ok(!queues.is_empty())
}

fn report(a: &AdapterShared, e: &crate::base::error::SimError) {
    if a.state.fault().is_none() && !a.state.is_halted() {
        a.state
            .raise_sim_error(format!("VidMm's paging worker on adapter {}: {e}", a.index));
    }
}
