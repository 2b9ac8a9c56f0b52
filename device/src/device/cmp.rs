//! The command processor's state: per-engine runlists, per-queue state, scheduling.
//!
//! Scheduling (per engine, one quantum per pass): an engine with a packet in flight (a
//! chunked COPY/FILL, or a HANG) keeps executing it: commands are not preempted. Otherwise it
//! picks among *runnable* queues (not faulted, unconsumed bytes, not blocked on an
//! unsatisfied FENCE_WAIT) the highest priority, round-robin among equals, and executes one
//! packet. A blocked queue becomes runnable again only when a fence it waits on changes: a
//! FENCE_SIGNAL to that address from any queue or engine, or WAIT_RESCAN.
//!
//! INDIRECT: a queue executing an indirect buffer keeps a cursor into it ([`Indirect`]); its
//! ring read pointer stays on the INDIRECT packet until the buffer's last packet completes.
//! Each packet of the buffer is one quantum, like a ring packet, so the engine may switch
//! queues between them; the cursor survives that, a blocked FENCE_WAIT in the buffer and a
//! commit that keeps the queue. A queue that enters a runlist has no cursor: it starts at the
//! ring read pointer, so an interrupted INDIRECT runs its buffer again from the start.
//!
//! Engine reset (`engine.rs`): only the queue with a packet in flight leaves; the others keep
//! all of the above (cursor, wait, fault) and the engine is *held*, running nothing, until
//! the next RUNLIST_COMMIT, which then applies the ordinary stay/leave/enter rules.
//!
//! The CMP sees a queue's write pointer only when told: it loads RingControl.write_ptr
//! (Acquire) on a doorbell, a QUEUE_KICK and when the queue enters a runlist. A producer that
//! stores `write_ptr` without ringing executes nothing (that is what UM-09's disconnected
//! doorbell relies on).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;

use rvgpu_hw::cmd::Command;
use rvgpu_hw::engine::EngineState;
use rvgpu_hw::event::FaultCode;
use rvgpu_hw::fence::wait_satisfied;
use rvgpu_hw::mmu::Access;
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, RingControl, NO_QUEUE, RUNLIST_MAX};

use rvgpu_hw::addr::{GpuVa, PhysAddr};

use super::bus::{ctl, words, Fault, Space};
use super::schedlog::SchedState;
use super::{lock, Core, EngineSnapshot, QueueSnapshot};

/// A FENCE_WAIT the queue is blocked on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wait {
    /// Read pointer of the FENCE_WAIT packet (of the INDIRECT, for a wait in a buffer).
    pub(crate) rptr: u64,
    /// Offset of the FENCE_WAIT in the indirect buffer, or `None` for a wait in the ring.
    pub(crate) inner: Option<u64>,
    /// The address as the packet gave it (a VA in the queue's space).
    pub(crate) addr: GpuVa,
    /// The physical word it translated to: signals and WAIT_RESCAN match on this, because a
    /// shared fence can sit at different VAs in different spaces and one VA in two spaces
    /// is two different words.
    pub(crate) pa: PhysAddr,
    pub(crate) value: u64,
    /// GPU time the engine first saw the wait unresolved (LOG-03).
    pub(crate) observed: u64,
    /// The fence changed and the re-evaluation found it satisfied: run the packet again.
    pub(crate) wake: bool,
}

/// The indirect buffer a queue is executing (its ring read pointer is on the INDIRECT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Indirect {
    /// GPU address of the buffer (checked reachable when the INDIRECT started).
    pub(crate) addr: GpuVa,
    /// Size of the buffer in bytes.
    pub(crate) bytes: u64,
    /// Offset of the next packet to execute; always < `bytes`.
    pub(crate) off: u64,
    /// Length in bytes of the ring's INDIRECT packet: read_ptr moves past it at the end.
    pub(crate) len: u64,
    /// INDIRECT_VM: the space the buffer runs in (its root, user privilege); `None` for a
    /// plain INDIRECT, which runs in the queue's space.
    pub(crate) space: Option<Space>,
}

impl Queue {
    /// Where the packet at the queue's position runs: its INDIRECT_VM buffer's space, or
    /// the queue's own.
    pub(crate) fn data_space(&self) -> Space {
        self.indirect
            .and_then(|i| i.space)
            .unwrap_or_else(|| Space::of_queue(&self.desc))
    }

    /// The root the queue's blocked FENCE_WAIT translated under (0: identity).
    pub(crate) fn wait_root(&self) -> u64 {
        self.data_space().root
    }
}

/// One runlisted hardware queue.
#[derive(Clone, Debug)]
pub(crate) struct Queue {
    pub(crate) desc: QueueDescriptor,
    /// Device read pointer (free-running bytes), published to RingControl.read_ptr after each
    /// completed packet.
    pub(crate) rptr: u64,
    /// Write pointer as last loaded.
    pub(crate) known_wptr: u64,
    pub(crate) fault: Option<FaultCode>,
    pub(crate) wait: Option<Wait>,
    /// Observed timestamp of the last wait this queue completed, for the wait-log entry
    /// that follows it.
    pub(crate) last_wait_observed: Option<u64>,
    /// The indirect buffer being executed, if the packet at `rptr` is an INDIRECT that has
    /// started.
    pub(crate) indirect: Option<Indirect>,
}

impl Queue {
    pub(crate) fn runnable(&self) -> bool {
        self.has_work() && self.wait.as_ref().is_none_or(|w| w.wake)
    }

    /// Unconsumed commands and no fault (it may still be blocked on a wait).
    pub(crate) fn has_work(&self) -> bool {
        self.fault.is_none() && self.rptr != self.known_wptr
    }

    /// Whether the queue belongs in [`Engine::pending`]: it has work, or a blocked wait
    /// that signals must still find (a producer may have moved its write pointer back).
    fn keeps_pending(&self) -> bool {
        self.has_work() || self.wait.is_some()
    }

    fn same_ring(&self, d: &QueueDescriptor) -> bool {
        self.desc.ring_base == d.ring_base
            && self.desc.ring_size == d.ring_size
            && self.desc.ring_control == d.ring_control
    }
}

/// An engine's loaded runlist, one entry per runlist slot (docs/hardware.md 5.2): `None`
/// where the slot holds no queue (no `VALID`, a rejected descriptor, or vacated by an engine
/// reset). Indices are slot numbers, so a queue keeps its index while other slots change,
/// which is what lets `RUNLIST_UPDATE` touch one slot without renumbering the engine's
/// pending set, index and cursor.
#[derive(Clone, Debug, Default)]
pub(crate) struct Slots(Vec<Option<Queue>>);

impl Slots {
    /// Slots in the loaded runlist (occupied or not).
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn get(&self, i: usize) -> Option<&Queue> {
        self.0.get(i).and_then(Option::as_ref)
    }

    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut Queue> {
        self.0.get_mut(i).and_then(Option::as_mut)
    }

    /// The queues present, in slot order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Queue> {
        self.0.iter().flatten()
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Queue> {
        self.0.iter_mut().flatten()
    }

    /// The queues present with their slots.
    fn enumerate(&self) -> impl Iterator<Item = (usize, &Queue)> {
        self.0
            .iter()
            .enumerate()
            .filter_map(|(i, q)| q.as_ref().map(|q| (i, q)))
    }
}

/// A packet that takes more than one quantum.
#[derive(Clone, Copy, Debug)]
pub(crate) enum InFlight {
    /// COPY or FILL with `done` bytes finished; `len` is the packet length in bytes.
    Transfer {
        queue: usize,
        cmd: Command,
        done: u64,
        len: u64,
    },
    /// HANG since GPU time `since`.
    Hang { queue: usize, since: u64 },
}

impl InFlight {
    pub(crate) fn queue(&self) -> usize {
        match *self {
            Self::Transfer { queue, .. } | Self::Hang { queue, .. } => queue,
        }
    }
}

/// One engine's CMP state.
#[derive(Debug)]
pub(crate) struct Engine {
    pub(crate) queues: Slots,
    /// Queue id → slot in `queues`: a doorbell or QUEUE_KICK finds its queue without
    /// scanning the runlist (a B-tree: a few compares where SipHash would cost more than a
    /// short scan). Rebuilt at a full commit, kept up to date slot by slot by an update and
    /// an engine reset.
    pub(crate) index: BTreeMap<u32, usize>,
    /// Indices of the queues that may have work: every queue with unconsumed commands and no
    /// fault, or with a blocked FENCE_WAIT, is in it (it may hold stale entries, which
    /// [`Engine::pick`] drops). Picking, HAS_WORK and wait re-evaluation look only here, so
    /// idle queues on the runlist cost nothing per packet or per signal.
    pub(crate) pending: BTreeSet<usize>,
    /// Round-robin cursor: the next index to consider first.
    pub(crate) rr_next: usize,
    /// Queue the engine is executing (last picked), if any.
    pub(crate) current: Option<usize>,
    pub(crate) inflight: Option<InFlight>,
    pub(crate) state: EngineState,
    /// GPU time an injected hang began.
    pub(crate) injected_hang: Option<u64>,
    /// Hung already reported for the current hang.
    pub(crate) hang_reported: bool,
    /// GPU time the engine became idle.
    pub(crate) idle_since: Option<u64>,
    /// Held after a successful engine reset: runs nothing until the next RUNLIST_COMMIT
    /// (STATUS bit 9). Write pointers and wait wake-ups are still recorded meanwhile.
    pub(crate) held: bool,
    /// Power-gated (`POWER` = F1, docs/hardware.md 4.3): picks and runs nothing; everything
    /// else (queues, a packet in flight, waits) is retained until F0.
    pub(crate) gated: bool,
    /// The context that last ran and the scheduling log (`schedlog`).
    pub(crate) sched: SchedState,
}

impl Engine {
    pub(crate) fn new() -> Self {
        Self {
            queues: Slots::default(),
            index: BTreeMap::new(),
            pending: BTreeSet::new(),
            rr_next: 0,
            current: None,
            inflight: None,
            state: EngineState::Idle,
            injected_hang: None,
            hang_reported: false,
            idle_since: None,
            held: false,
            gated: false,
            sched: SchedState::default(),
        }
    }

    /// The queue that is *executing* in the engine-reset sense: the one with a packet in
    /// flight (a COPY/FILL between chunks or a HANG, in the ring or inside a started
    /// INDIRECT). A queue that is only between packets, blocked, or the last one picked is
    /// not executing.
    pub(crate) fn executing(&self) -> Option<usize> {
        self.inflight
            .map(|f| f.queue())
            .filter(|&i| i < self.queues.len())
    }

    /// A successful engine reset: aborts the packet in flight, takes its queue (`aborted`)
    /// out of the loaded runlist, clears an injected hang and holds the engine. Every other
    /// queue keeps its read pointer, indirect cursor, wait and fault state.
    pub(crate) fn reset(&mut self, aborted: Option<usize>) {
        self.inflight = None;
        if let Some(i) = aborted {
            // Its slot empties; every other queue keeps its slot, so the round-robin turn
            // stays where it was.
            self.vacate(i);
        }
        self.current = None;
        self.injected_hang = None;
        self.hang_reported = false;
        self.state = EngineState::Idle;
        self.idle_since = None;
        self.held = true;
    }

    /// Rebuilds [`Engine::index`] and [`Engine::pending`] from `queues`.
    pub(crate) fn reindex(&mut self) {
        self.index.clear();
        self.pending.clear();
        for (i, q) in self.queues.enumerate() {
            self.index.entry(q.desc.queue_id).or_insert(i);
            if q.keeps_pending() {
                self.pending.insert(i);
            }
        }
    }

    /// Empties slot `i` (its queue leaves): index and pending set forget it. Returns the
    /// queue that left.
    pub(crate) fn vacate(&mut self, i: usize) -> Option<Queue> {
        let q = self.queues.0.get_mut(i).and_then(Option::take)?;
        if self.index.get(&q.desc.queue_id) == Some(&i) {
            self.index.remove(&q.desc.queue_id);
        }
        self.pending.remove(&i);
        if self.current == Some(i) {
            self.current = None;
        }
        if self.inflight.is_some_and(|f| f.queue() == i) {
            self.inflight = None;
        }
        Some(q)
    }

    /// Puts `q` into slot `i` (empty, below the length): index and pending set learn it.
    fn occupy(&mut self, i: usize, q: Queue) {
        let Some(slot) = self.queues.0.get_mut(i) else {
            return;
        };
        self.index.entry(q.desc.queue_id).or_insert(i);
        if q.keeps_pending() {
            self.pending.insert(i);
        }
        *slot = Some(q);
    }

    /// Highest-priority runnable queue, round-robin among equals. Looks only at
    /// [`Engine::pending`], dropping the entries that have no work left.
    pub(crate) fn pick(&mut self) -> Option<usize> {
        let queues = &self.queues;
        self.pending
            .retain(|&i| queues.get(i).is_some_and(Queue::keeps_pending));
        let best = self
            .pending
            .iter()
            .filter_map(|&i| queues.get(i))
            .filter(|q| q.runnable())
            .map(|q| q.desc.priority)
            .max()?;
        let start = if self.rr_next >= queues.len() {
            0
        } else {
            self.rr_next
        };
        // Round-robin: the first candidate at or after the cursor, else from the start.
        let found = self
            .pending
            .range(start..)
            .chain(self.pending.range(..start))
            .copied()
            .find(|&i| {
                queues
                    .get(i)
                    .is_some_and(|q| q.runnable() && q.desc.priority == best)
            })?;
        self.rr_next = found + 1;
        Some(found)
    }

    /// Whether [`Self::pick`] would find a queue (without moving the round-robin cursor).
    pub(crate) fn any_runnable(&self) -> bool {
        self.pending
            .iter()
            .any(|&i| self.queues.get(i).is_some_and(Queue::runnable))
    }

    pub(crate) fn has_work(&self) -> bool {
        self.inflight.is_some()
            || self
                .pending
                .iter()
                .any(|&i| self.queues.get(i).is_some_and(Queue::has_work))
    }
}

/// What tests see of runlisted queue `q` of `engine`.
fn snapshot(engine: u32, q: &Queue) -> QueueSnapshot {
    QueueSnapshot {
        engine,
        queue_id: q.desc.queue_id,
        read_ptr: q.rptr,
        known_write_ptr: q.known_wptr,
        priority: q.desc.priority,
        process_id: q.desc.process_id,
        user_mode: QueueFlags::from_bits_truncate(q.desc.flags).contains(QueueFlags::USER_MODE),
        fault: q.fault,
        blocked_on: q.wait.filter(|w| !w.wake).map(|w| (w.addr.get(), w.value)),
        indirect: q.indirect.map(|i| (i.addr.get(), i.off)),
    }
}

/// All engines.
#[derive(Debug)]
pub(crate) struct Cmp {
    pub(crate) engines: Vec<Engine>,
}

impl Cmp {
    pub(crate) fn new(engines: u32) -> Self {
        Self {
            engines: (0..engines).map(|_| Engine::new()).collect(),
        }
    }
}

impl Core {
    /// A Fault record that no packet caused (runlist commit, scheduling log): `arg2` = 0.
    pub(crate) fn post_commit_fault(&self, e: usize, queue_id: u32, f: Fault) {
        self.post_fault_event(e, queue_id, f, 0);
    }

    /// Reads `n` descriptors from slot `first` of the runlist at `base` (the KMD's own
    /// memory, programmed by bus address), counting them in [`Core::runlist_slots_read`].
    /// `None`: the range cannot be read.
    fn read_slots(&self, base: GpuVa, first: u32, n: u32) -> Option<Vec<QueueDescriptor>> {
        if n == 0 {
            return Some(Vec::new());
        }
        let start = base.checked_add(u64::from(first) * 128)?;
        let spans = self
            .sp_spans(Space::BUS, start, u64::from(n) * 128, Access::Read)
            .ok()?;
        self.runlist_slots_read
            .fetch_add(u64::from(n), Ordering::Relaxed);
        // Acquire: the descriptors were written by the driver before the commit.
        let all: Vec<u64> = words(&spans).map(|s| s.load(Ordering::Acquire)).collect();
        Some(
            all.chunks_exact(16)
                .map(|chunk| {
                    let mut w = [0u64; 16];
                    w.copy_from_slice(chunk);
                    QueueDescriptor::from_words(&w)
                })
                .collect(),
        )
    }

    /// Checks the descriptor read from `slot`: `Some` if it is a queue, `None` if the slot is
    /// skipped (silently without VALID; with a BadDescriptor fault when invalid, when its id
    /// is `NO_QUEUE` or when `taken` says another slot already holds its id).
    fn check_slot(
        &self,
        e: usize,
        base: GpuVa,
        slot: usize,
        desc: QueueDescriptor,
        taken: impl FnOnce(u32) -> bool,
    ) -> Option<QueueDescriptor> {
        // Inside the span read, so no overflow.
        let addr = base.checked_add((slot as u64) * 128).unwrap_or(base);
        match desc.validate() {
            Ok(()) => {}
            Err("flags") => return None,
            Err(_) => {
                self.post_commit_fault(
                    e,
                    desc.queue_id,
                    Fault::new(FaultCode::BadDescriptor, addr),
                );
                return None;
            }
        }
        if desc.queue_id == NO_QUEUE || taken(desc.queue_id) {
            self.post_commit_fault(e, desc.queue_id, Fault::new(FaultCode::BadDescriptor, addr));
            return None;
        }
        Some(desc)
    }

    /// Reads the runlist programmed in RUNLIST_BASE/COUNT, one entry per slot. An unreadable
    /// runlist is one Fault event and an empty list; an invalid descriptor is a Fault event
    /// and an empty slot; an entry without VALID is an empty slot silently; a duplicate
    /// queue id is a Fault event and an empty slot.
    fn read_runlist(&self, e: usize) -> Vec<Option<QueueDescriptor>> {
        let Some(r) = self.regs.engines.get(e) else {
            return Vec::new();
        };
        // Relaxed: the driver programmed these registers on this thread or before a
        // synchronising MMIO write (the commit itself runs in the committing thread).
        let base = GpuVa::new(r.runlist_base.load(Ordering::Relaxed));
        let count = r.runlist_count.load(Ordering::Relaxed);
        if count == 0 {
            return Vec::new();
        }
        if count > RUNLIST_MAX {
            self.post_commit_fault(e, NO_QUEUE, Fault::new(FaultCode::BadDescriptor, base));
            return Vec::new();
        }
        let Some(all) = self.read_slots(base, 0, count) else {
            // An unreadable runlist is a bad descriptor table (event.rs, BadDescriptor),
            // also when it is a translation that failed.
            self.post_commit_fault(e, NO_QUEUE, Fault::new(FaultCode::BadDescriptor, base));
            return Vec::new();
        };
        // Ids seen so far: a duplicate check by scanning the slots read so far was quadratic
        // in the runlist.
        let mut ids = BTreeSet::new();
        all.into_iter()
            .enumerate()
            .map(|(i, d)| self.check_slot(e, base, i, d, |id| !ids.insert(id)))
            .collect()
    }

    /// A queue entering the runlist: fresh state, `read_ptr` and `write_ptr` loaded from its
    /// ring control; an unreachable ring control faults it (returned for the event).
    fn enter(&self, d: QueueDescriptor) -> (Queue, Option<Fault>) {
        let mut q = Queue {
            desc: d,
            rptr: 0,
            known_wptr: 0,
            fault: None,
            wait: None,
            last_wait_observed: None,
            indirect: None,
        };
        // Acquire on both: the driver initialised ring contents and pointers before
        // committing. Ring control is where the ring is (`ring_space`).
        let sp = self.ring_space(&d);
        match (
            self.sp_load(
                sp,
                ctl(d.ring_control, RingControl::READ_PTR),
                Access::Read,
                Ordering::Acquire,
            ),
            self.sp_load(
                sp,
                ctl(d.ring_control, RingControl::WRITE_PTR),
                Access::Read,
                Ordering::Acquire,
            ),
        ) {
            (Ok(r), Ok(w)) => {
                q.rptr = r;
                q.known_wptr = w;
                (q, None)
            }
            (Err(f), _) | (_, Err(f)) => {
                q.fault = Some(f.code);
                (q, Some(f))
            }
        }
    }

    /// Finishes a transfer in flight on `eng`, so that every queue is at a command boundary.
    fn finish_transfer(&self, eng: &mut Engine, e: usize) {
        while matches!(eng.inflight, Some(InFlight::Transfer { .. })) {
            self.run_inflight(eng, e);
        }
    }

    /// After a commit or update: a HANG abandoned by a leaving queue is no longer a hang,
    /// and the engine's hold (engine reset) ends.
    fn after_load(eng: &mut Engine) {
        if eng.inflight.is_none() && eng.injected_hang.is_none() {
            eng.hang_reported = false;
        }
        // Any commit (even of an empty or unreadable runlist) ends an engine reset's hold.
        eng.held = false;
    }

    /// RUNLIST_COMMIT: loads engine `e`'s runlist before returning. Queues that stay (same
    /// id and ring) keep their state; queues that leave stop at a command boundary (a
    /// transfer in flight finishes first; a HANG is abandoned with its rptr unchanged).
    pub(crate) fn commit_runlist(&self, e: usize) {
        // The CMP lock first: a TLB invalidation (which takes it) then cannot overlap the
        // runlist read's translations.
        let mut cmp = lock(&self.cmp);
        let descs = self.read_runlist(e);
        let Some(eng) = cmp.engines.get_mut(e) else {
            return;
        };
        self.finish_transfer(eng, e);
        let current_id = eng
            .current
            .and_then(|i| eng.queues.get(i))
            .map(|q| q.desc.queue_id);
        let inflight_id = eng
            .inflight
            .and_then(|f| eng.queues.get(f.queue()))
            .map(|q| q.desc.queue_id);
        // Old queues by id (ids are unique in a runlist the device accepts; a duplicate keeps
        // the first), so matching a long runlist is not quadratic. A B-tree, not a hash map:
        // a hash map's random seed made instruction counts differ between runs.
        let mut old: BTreeMap<u32, Queue> = BTreeMap::new();
        for q in std::mem::take(&mut eng.queues).0.into_iter().flatten() {
            old.entry(q.desc.queue_id).or_insert(q);
        }
        eng.index.clear();
        let mut faults = Vec::new();
        let mut new = Vec::with_capacity(descs.len());
        for d in descs {
            let Some(d) = d else {
                new.push(None);
                continue;
            };
            let kept = match old.remove(&d.queue_id) {
                Some(q) if q.same_ring(&d) => Some(q),
                Some(q) => {
                    // Same id, another ring: a new queue; the old one stays available for a
                    // later descriptor with its ring (none in a valid runlist).
                    old.insert(d.queue_id, q);
                    None
                }
                None => None,
            };
            let q = match kept {
                Some(mut q) => {
                    q.desc = d;
                    q
                }
                None => {
                    let (q, f) = self.enter(d);
                    if let Some(f) = f {
                        faults.push((d.queue_id, f));
                    }
                    q
                }
            };
            new.push(Some(q));
        }
        eng.queues = Slots(new);
        eng.reindex();
        let find = |id: Option<u32>, index: &BTreeMap<u32, usize>| {
            id.and_then(|id| index.get(&id).copied())
        };
        eng.current = find(current_id, &eng.index);
        eng.inflight = match (eng.inflight, find(inflight_id, &eng.index)) {
            (Some(InFlight::Hang { since, .. }), Some(queue)) => {
                Some(InFlight::Hang { queue, since })
            }
            _ => None,
        };
        Self::after_load(eng);
        eng.rr_next = 0;
        self.publish_engine_status(&cmp);
        drop(cmp);
        for (id, f) in faults {
            self.post_commit_fault(e, id, f);
        }
        self.kick();
    }

    /// RUNLIST_UPDATE = `slot` (CAPS.RUNLIST_UPDATE, hardware.md 5.2): loads an update of
    /// engine `e`'s runlist before returning. Slots at or past the new RUNLIST_COUNT leave;
    /// `slot` and the slots the count grew by are re-read with the commit's rules; every
    /// other slot keeps its queue and state untouched, so the work is the slots named, not
    /// the runlist.
    pub(crate) fn update_runlist(&self, e: usize, slot: u32) {
        let Some(r) = self.regs.engines.get(e) else {
            return;
        };
        // Relaxed: as in read_runlist.
        let base = GpuVa::new(r.runlist_base.load(Ordering::Relaxed));
        let count = r.runlist_count.load(Ordering::Relaxed);
        if count > RUNLIST_MAX {
            // As a commit: BadDescriptor and an empty runlist.
            self.commit_runlist(e);
            return;
        }
        let mut cmp = lock(&self.cmp);
        let Some(eng) = cmp.engines.get_mut(e) else {
            return;
        };
        self.finish_transfer(eng, e);
        let old_len = eng.queues.len();
        let new_len = count as usize;
        for i in new_len..old_len {
            eng.vacate(i);
        }
        eng.queues.0.resize_with(new_len, || None);
        // The slots to read: `slot` if it was loaded before (a grown slot is read below),
        // then the growth.
        let mut reads: [(u32, u32); 2] = [(0, 0); 2];
        if (slot as usize) < old_len.min(new_len) {
            reads[0] = (slot, 1);
        }
        if new_len > old_len {
            reads[1] = (old_len as u32, count - old_len as u32);
        }
        let mut faults = Vec::new();
        let mut unreadable = false;
        for (first, n) in reads {
            let Some(descs) = self.read_slots(base, first, n) else {
                unreadable = true;
                break;
            };
            for (k, d) in descs.into_iter().enumerate() {
                let i = first as usize + k;
                let index = &eng.index;
                let d =
                    self.check_slot(e, base, i, d, |id| index.get(&id).is_some_and(|&j| j != i));
                let stays = match (eng.queues.get_mut(i), d) {
                    (Some(q), Some(d)) if q.desc.queue_id == d.queue_id && q.same_ring(&d) => {
                        // Changed fields apply at its next packet (M14).
                        q.desc = d;
                        true
                    }
                    _ => false,
                };
                if stays {
                    continue;
                }
                eng.vacate(i);
                if let Some(d) = d {
                    let (q, f) = self.enter(d);
                    if let Some(f) = f {
                        faults.push((d.queue_id, f));
                    }
                    eng.occupy(i, q);
                }
            }
        }
        if unreadable {
            // As a commit of an unreadable runlist: every queue leaves.
            for i in 0..eng.queues.len() {
                eng.vacate(i);
            }
            eng.queues.0.clear();
            faults.clear();
        }
        Self::after_load(eng);
        self.publish_engine_status(&cmp);
        drop(cmp);
        if unreadable {
            self.post_commit_fault(e, NO_QUEUE, Fault::new(FaultCode::BadDescriptor, base));
        }
        for (id, f) in faults {
            self.post_commit_fault(e, id, f);
        }
        self.kick();
    }

    /// Reloads a queue's write pointer (doorbell, QUEUE_KICK). `engine` limits the search;
    /// `owner` (a global-doorbell page's process) limits it to that process's user-mode
    /// queues. Returns whether a runlisted queue with that id was found and rescanned.
    pub(crate) fn rescan_queue(
        &self,
        engine: Option<usize>,
        queue_id: u32,
        owner: Option<u32>,
    ) -> bool {
        let mut cmp = lock(&self.cmp);
        let mut found = false;
        let mut fault = None;
        // The engine whose queue now has unconsumed commands: its HAS_WORK is set without
        // scanning its other queues (that scan made every ring cost grow with the runlist).
        let mut gained = None;
        let mut unchanged = false;
        for (e, eng) in cmp.engines.iter_mut().enumerate() {
            if engine.is_some_and(|x| x != e) {
                continue;
            }
            let Some(&qi) = eng.index.get(&queue_id) else {
                continue;
            };
            let Some(q) = eng.queues.get_mut(qi) else {
                continue;
            };
            // A global-doorbell page rings only the user-mode queues of the process it is
            // bound to (hardware.md 5.5): a write naming anyone else's queue is ignored.
            if let Some(owner) = owner {
                let user =
                    QueueFlags::from_bits_truncate(q.desc.flags).contains(QueueFlags::USER_MODE);
                if !user || q.desc.process_id != owner {
                    break;
                }
            }
            found = true;
            if q.fault.is_some() {
                break;
            }
            // Acquire: pairs with the producer's Release store of write_ptr, so the packets
            // it wrote before are visible when we read the ring.
            match self.sp_load(
                self.ring_space(&q.desc),
                ctl(q.desc.ring_control, RingControl::WRITE_PTR),
                Access::Read,
                Ordering::Acquire,
            ) {
                Ok(w) => {
                    let before = std::mem::replace(&mut q.known_wptr, w);
                    if w == before {
                        // Nothing new (a spurious ring, a connect's kick): no status changed.
                        unchanged = true;
                    } else if q.rptr != w {
                        gained = Some(e);
                        eng.pending.insert(qi);
                    }
                }
                Err(f) => {
                    q.fault = Some(f.code);
                    fault = Some((e, f, q.rptr));
                }
            }
            break;
        }
        match gained {
            // Only HAS_WORK can have changed, and only from clear to set.
            Some(e) => self.publish_has_work(e),
            None if unchanged => {}
            // A fault, or a write pointer moved back onto the read pointer (a hostile
            // producer): recompute.
            None if found => self.publish_engine_status(&cmp),
            None => {}
        }
        drop(cmp);
        if let Some((e, f, rptr)) = fault {
            self.post_fault_event(e, queue_id, f, rptr);
        }
        if found {
            self.kick();
        }
        found
    }

    /// Re-evaluates blocked FENCE_WAITs on the physical word `pa` (`None`: all). A satisfied
    /// one is woken (runs again at its queue's next turn). Called with the CMP lock held.
    pub(crate) fn rescan_waits(&self, cmp: &mut Cmp, pa: Option<PhysAddr>) -> bool {
        let mut woke = false;
        // A blocked queue is always in its engine's pending set.
        for eng in cmp.engines.iter_mut() {
            let Engine {
                pending, queues, ..
            } = eng;
            for &i in pending.iter() {
                if let Some(q) = queues.get_mut(i) {
                    woke |= self.rescan_wait(q, pa);
                }
            }
        }
        woke
    }

    /// [`Core::rescan_waits`] for one queue: whether its wait was woken.
    fn rescan_wait(&self, q: &mut Queue, pa: Option<PhysAddr>) -> bool {
        let Some(w) = q.wait.as_mut() else {
            return false;
        };
        if w.wake || pa.is_some_and(|p| w.pa != p) {
            return false;
        }
        // Acquire: the fence value publishes the signaller's earlier writes to the waiter's
        // later commands.
        match self.mem.load(w.pa, Ordering::Acquire) {
            Some(v) if !wait_satisfied(v, w.value) => false,
            // Satisfied, or unreachable now (woken so that the re-executed packet faults).
            _ => {
                w.wake = true;
                true
            }
        }
    }

    /// WAIT_RESCAN: re-evaluates before returning. `addr` is a GPU address in the CMP's own
    /// (system) space; 0 re-evaluates every blocked wait. An address that does not translate
    /// names no word any wait can be on, so nothing is re-evaluated. Under the identity root
    /// the address is matched as given (no window check, as in version 1).
    /// FENCE_STORE: stores `value` at the physical fence word `pa` (SeqCst: ordered before
    /// every later access of the device and of the CPU that wrote the register), then wakes
    /// the waits blocked on it, as a FENCE_SIGNAL of that word would (without its interrupt
    /// decision: the CPU that stored the value knows it). A misaligned `pa`, or one naming no
    /// memory, stores nothing.
    pub(crate) fn fence_store(&self, pa: PhysAddr, value: u64) {
        if !pa.is_aligned(rvgpu_hw::addr::ACCESS_ALIGN)
            || self.mem.store(pa, value, Ordering::SeqCst).is_none()
        {
            return;
        }
        let mut cmp = lock(&self.cmp);
        let woke = self.rescan_waits(&mut cmp, Some(pa));
        if woke {
            self.publish_engine_status(&cmp);
        }
        drop(cmp);
        if woke {
            self.kick();
        }
    }

    pub(crate) fn wait_rescan(&self, addr: GpuVa) {
        let mut cmp = lock(&self.cmp);
        let pa = if addr.is_null() {
            None
        } else {
            let sp = self.system_space();
            if sp.is_identity() {
                Some(addr.identity_pa())
            } else {
                match self.word(sp, addr, Access::Read) {
                    Ok(w) => Some(w.pa),
                    Err(_) => return,
                }
            }
        };
        let woke = self.rescan_waits(&mut cmp, pa);
        if woke {
            self.publish_engine_status(&cmp);
        }
        drop(cmp);
        if woke {
            self.kick();
        }
    }

    /// Drops cached translations of `root` (0: all) with the CMP lock held: used by the
    /// TLB_INVALIDATE packet (inside a quantum) and the register. Blocked FENCE_WAITs of
    /// translated queues under that root are woken, so they translate their address again
    /// instead of waiting on a physical word the new tables may no longer map.
    pub(crate) fn tlb_invalidate_locked(&self, cmp: &mut Cmp, root: u64) -> bool {
        self.mmu.invalidate(root);
        let mut woke = false;
        // Only blocked queues are touched, and they are in their engines' pending sets, but
        // an invalidation is rare: the plain walk stays.
        for q in cmp.engines.iter_mut().flat_map(|e| e.queues.iter_mut()) {
            let qroot = q.wait_root();
            if qroot == 0 || (root != 0 && qroot != root) {
                continue;
            }
            if let Some(w) = q.wait.as_mut() {
                woke |= !w.wake;
                w.wake = true;
            }
        }
        woke
    }

    /// TLB_INVALIDATE register: returns when no cached translation of `root` remains and
    /// the quantum the CMP was executing (every access of which translated before this
    /// write) has finished: it takes the CMP lock, which the CMP holds for a whole quantum.
    /// An event post in progress (the event ring is in the system space) is drained by
    /// taking the event ring's lock after the invalidation.
    pub(crate) fn tlb_invalidate(&self, root: u64) {
        let mut cmp = lock(&self.cmp);
        let woke = self.tlb_invalidate_locked(&mut cmp, root);
        drop(lock(&self.events.ring));
        if woke {
            self.publish_engine_status(&cmp);
        }
        drop(cmp);
        if woke {
            self.kick();
        }
    }

    /// Whether `engine` is power-gated (POWER = F1), read from its POWER register without the
    /// CMP lock: the register changes with the engine's `gated` under that lock
    /// (`set_engine_power`, the adapter reset), and the OS asks on every submission.
    pub(crate) fn engine_gated(&self, engine: u32) -> Option<bool> {
        let r = self.regs.engine(engine)?;
        Some(r.power.load(Ordering::Acquire) == rvgpu_hw::engine::ENGINE_POWER_F1)
    }

    pub(crate) fn engine_snapshot(&self, engine: u32) -> Option<EngineSnapshot> {
        let cmp = lock(&self.cmp);
        let e = usize::try_from(engine).ok()?;
        let eng = cmp.engines.get(e)?;
        let r = self.regs.engine(engine)?;
        Some(EngineSnapshot {
            state: eng.state,
            has_work: eng.has_work(),
            held: eng.held,
            gated: eng.gated,
            completed_commands: r.completed.load(Ordering::Acquire),
            current_queue: r.current_queue.load(Ordering::Acquire),
            queues: eng.queues.iter().map(|q| snapshot(engine, q)).collect(),
        })
    }

    /// `QUEUE_STATE` of engine `e` for `queue_id` (hardware.md 7.2): loaded, and stopped by
    /// a fault.
    pub(crate) fn queue_state(&self, e: usize, queue_id: u32) -> u32 {
        let cmp = lock(&self.cmp);
        let Some(eng) = cmp.engines.get(e) else {
            return 0;
        };
        let q = eng.index.get(&queue_id).and_then(|&i| eng.queues.get(i));
        rvgpu_hw::regs::QueueStateReg::default()
            .with_present(u32::from(q.is_some()))
            .with_faulted(u32::from(q.is_some_and(|q| q.fault.is_some())))
            .raw()
    }

    /// The runlisted queue with id `queue_id`, found through the engines' indexes (no copy
    /// of every queue, which made each queue's teardown check cost O(N)).
    pub(crate) fn queue_snapshot(&self, queue_id: u32) -> Option<QueueSnapshot> {
        let cmp = lock(&self.cmp);
        cmp.engines.iter().enumerate().find_map(|(e, eng)| {
            let q = eng.index.get(&queue_id).and_then(|&i| eng.queues.get(i))?;
            Some(snapshot(u32::try_from(e).ok()?, q))
        })
    }
}
