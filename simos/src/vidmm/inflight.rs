//! VidMm's paging batches in flight, and VidMm held still for an adapter-wide recovery
//! (docs/tdr.md "Adapter-wide").
//!
//! 24H2 suspends VidMm's worker before it resets the adapter (`K:DXGADAPTER::Reset`
//! @0x140195458), purges every segment between `DxgkDdiResetFromTimeout` and
//! `DxgkDdiRestartFromTimeout`, and after the restart recommits the VAs of the allocations
//! still resident (`M:VIDMM_GLOBAL::RecommitGpuVirtualAddresses` @0x1400D2258) before any
//! device is reset (`K:ADAPTER_RENDER::Reset` @0x1403F2C34).
//!
//! Here a VidMm operation waits for its paging holding the residency lock (or none, a VA
//! thunk's page-table change). Every batch it waits for is registered here first, with what
//! it would take to do it again. The recovery:
//!
//! 1. marks VidMm suspended and wakes every paging waiter (`suspend`); a waiter that sees
//!    the mark stops waiting and returns: its batch now belongs to the recovery;
//! 2. takes the residency lock, then the page-table turn: every residency operation and
//!    page-table change has finished or handed its batch over, and none starts;
//! 3. only then closes VidSch's gate, resets, purges, drops in-flight packets and restarts;
//! 4. resubmits, in their submission order, the page-table updates and TLB flushes of every
//!    registered batch the reset dropped (`Suspended::restore`), then lets VidMm go.
//!
//! So the lock order is: VidMm's worker turn, the residency lock, the page-table turn,
//! VidSch's gate. The recovery takes the two middle ones before the gate, and no VidMm
//! operation waits for paging the recovery has to drop while holding one of them. A content
//! move the reset dropped is not redone: the content is lost, as every allocation's is.
//!
//! Not modelled: 24H2 also evicts every page table in its purge
//! (`M:VIDMM_GLOBAL::PurgePageTables` @0x1400FFCC0) and recommits every resident VA; here the
//! tables stay in VRAM through the reset, so only the updates it dropped are written again.

use std::sync::TryLockError;
use std::time::{Duration, Instant};

use crate::adapter::AdapterShared;
use crate::base::clock::MachineTime;
use crate::base::error::SimError;
use crate::base::lock::{lock, Locked};
use crate::state::vidmm::residency::State;
use crate::state::vidmm::{Batch, PageTableTurn, Redo};
use crate::vidmm::host::Host;

/// How a paging wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Waited {
    /// The batch completed.
    Done,
    /// An adapter-wide recovery took the batch: it submits it again after the restart if the
    /// reset dropped it.
    Handed,
}

/// Registers a batch of paging buffers `ids` on `node` that its caller will wait for
/// ([`wait`]); `None` when nothing was submitted. Called in the same turn as the
/// submission, so the numbers follow the order the paging engine got the batches.
pub(crate) fn register(
    a: &AdapterShared,
    node: u32,
    ids: Vec<u32>,
    drops: u64,
    redo: Redo,
) -> Option<u64> {
    if ids.is_empty() {
        return None;
    }
    let mut f = lock(&a.mm.in_flight);
    let seq = f.next;
    f.next = f.next.wrapping_add(1);
    f.batches.insert(
        seq,
        Batch {
            node,
            ids,
            drops,
            redo,
        },
    );
    Some(seq)
}

/// Waits for batch `seq` ([`register`]) until it completes or an adapter-wide recovery takes
/// it. A step-mode machine steps itself until the batch is retired: a recovery in one of
/// those rounds takes it only when this thread holds no VidMm lock (`suspend`).
pub(crate) fn wait(host: &dyn Host, a: &AdapterShared, seq: u64) -> Result<Waited, SimError> {
    let Some((node, last)) = lock(&a.mm.in_flight)
        .batches
        .get(&seq)
        .and_then(|b| Some((b.node, *b.ids.last()?)))
    else {
        return Ok(Waited::Handed);
    };
    let limit = Duration::from_secs(10);
    if step_mode(a) {
        let done = host.wait_paging(a, node, last, 100_000, limit)?;
        // A recovery run in one of the rounds (no VidMm lock held here) took the batch.
        if lock(&a.mm.in_flight).batches.remove(&seq).is_none() {
            return Ok(Waited::Handed);
        }
        return match done {
            true => Ok(Waited::Done),
            false => Err(not_completed(node, last)),
        };
    }
    // The limit is the machine's time ([`wait_for`]): a starved GPU thread is not a
    // batch that will never complete.
    let waited = wait_for(a, limit, || {
        let done = host.paging_completed(a, node, last);
        let mut f = lock(&a.mm.in_flight);
        if f.suspended || !f.batches.contains_key(&seq) {
            return Some(Waited::Handed);
        }
        if done {
            f.batches.remove(&seq);
            return Some(Waited::Done);
        }
        None
    })?;
    waited.ok_or_else(|| {
        lock(&a.mm.in_flight).batches.remove(&seq);
        not_completed(node, last)
    })
}

/// Threaded machine: asks `look` until it answers, sleeping on VidSch's completion event
/// between looks (`crate::state::vidsch::CompletionEvent`), every look counted
/// (`crate::vidsch::legacy::paging_wait_looks`). `None` once `limit` of the machine's time passed without an
/// answer: the GPU ran that long and the work still did not finish (with TDR on, recovery
/// retires hung work long before). A GPU thread the host starves does not use it up. A halted
/// machine's fault is the answer as soon as it halts.
pub(crate) fn wait_for<T>(
    a: &AdapterShared,
    limit: Duration,
    mut look: impl FnMut() -> Option<T>,
) -> Result<Option<T>, SimError> {
    let clock = MachineTime::new(a.emulated.as_ref().map(|d| d.run_clock()));
    let end = clock.now().saturating_add(limit);
    let completion = &a.sch.completion;
    loop {
        let seen = completion.generation();
        completion
            .looks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(f) = a.state.fault() {
            return Err(f.into());
        }
        if let Some(v) = look() {
            return Ok(Some(v));
        }
        let left = end.saturating_sub(clock.now());
        if left.is_zero() {
            return Ok(None);
        }
        // The machine's time never runs ahead of the host's: `left` of host time is the
        // soonest the limit can be reached (a wake-up before it only looks again).
        completion.wait_past(seen, Instant::now() + left);
    }
}

fn not_completed(node: u32, id: u32) -> SimError {
    SimError::Stuck(format!(
        "paging buffer {id} on node {node} did not complete"
    ))
}

fn step_mode(a: &AdapterShared) -> bool {
    a.device.config().mode == rvgpu_device::Mode::Step
}

/// VidMm held still for an adapter-wide recovery (`suspend`); let go when dropped.
pub(crate) struct Suspended<'a> {
    a: &'a AdapterShared,
    residency: Option<Locked<'a, State>>,
    turn: Option<Locked<'a, PageTableTurn>>,
    /// A step-mode machine's thread is inside a VidMm operation, which holds what the purge
    /// needs: the simulation's limit, reported when the purge comes to it.
    held_by_caller: bool,
}

/// What a step-mode recovery inside a VidMm operation reports at its purge.
const HELD_BY_CALLER: &str = "an adapter-wide recovery inside a VidMm operation of a step-mode \
                              machine (the operation steps the machine holding VidMm; run it \
                              threaded)";

/// Step 1 and 2 of the module's order: VidMm marked suspended, its paging waiters woken, then
/// the residency lock and the page-table turn taken. Called before VidSch's gate is closed.
/// On a step-mode machine whose thread is inside a VidMm operation (it steps the machine
/// while it holds the lock) nothing can be handed over until the recovery returns: that is
/// the simulation's limit, reported at the purge (`residency`), not waited on. The driver's
/// reset still comes first, so a reset that fails bug checks as it would anyway.
pub(crate) fn suspend(a: &AdapterShared) -> Suspended<'_> {
    lock(&a.mm.in_flight).suspended = true;
    let mut s = Suspended {
        a,
        residency: None,
        turn: None,
        held_by_caller: false,
    };
    a.sch.completion.set();
    if step_mode(a) {
        let residency_held = matches!(a.mm.residency.try_lock(), Err(TryLockError::WouldBlock));
        if residency_held || crate::vidmm::paging::page_table_turn_taken(a) {
            s.held_by_caller = true;
            return s;
        }
    }
    s.residency = Some(lock(&a.mm.residency));
    s.turn = Some(crate::vidmm::paging::page_table_turn(a));
    s
}

impl Suspended<'_> {
    /// VidMm's residency books, for the purge; `suspend`'s step-mode limit is reported here.
    pub(crate) fn residency(&mut self) -> Result<&mut State, SimError> {
        if self.held_by_caller {
            self.a.state.raise_sim_error(HELD_BY_CALLER.to_string());
            return Err(SimError::Stuck(HELD_BY_CALLER.into()));
        }
        self.residency
            .as_deref_mut()
            .ok_or(SimError::Internal("the purge without VidMm held"))
    }

    /// Step 4, after `DxgkDdiRestartFromTimeout`: every registered batch the reset dropped is
    /// submitted again by `resubmit` (`vidmm::mmu::resubmit`: page-table updates and TLB
    /// flushes; content moves stay lost), in submission order, and waited for on a threaded
    /// machine. Returns how many were.
    pub(crate) fn restore(
        &mut self,
        host: &dyn Host,
        resubmit: &dyn Fn(u32, Redo) -> Result<Option<Vec<u32>>, SimError>,
    ) -> Result<usize, SimError> {
        let a = self.a;
        let batches = std::mem::take(&mut lock(&a.mm.in_flight).batches);
        let mut redone = 0usize;
        let mut last = None;
        for (_, b) in batches {
            if !host.dropped_by_reset(a, b.node, b.drops, &b.ids) {
                continue;
            }
            let Some(ids) = resubmit(b.node, b.redo)? else {
                continue;
            };
            redone += 1;
            last = ids.last().map(|id| (b.node, *id)).or(last);
        }
        if let (Some((node, id)), false) = (last, step_mode(a)) {
            if !host.wait_paging(a, node, id, 0, Duration::from_secs(10))? {
                return Err(not_completed(node, id));
            }
        }
        Ok(redone)
    }
}

impl Drop for Suspended<'_> {
    fn drop(&mut self) {
        // Cleared while VidMm is still held, so no batch registered after it is taken for
        // one of this recovery's.
        lock(&self.a.mm.in_flight).suspended = false;
        self.turn = None;
        self.residency = None;
    }
}
