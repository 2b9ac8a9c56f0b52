//! Runlists: one buffer of queue descriptors per engine (docs/hardware.md 5.2).
//!
//! The buffers are allocated at start (contiguous memory, inside system window 1) and written
//! only under the scheduler lock. A queue's descriptor sits in the slot of its queue id (ids
//! are unique on the adapter and below the runlist's length), so a queue never moves while
//! others come and go, and slots of queues elsewhere (other engines, not runnable) hold an
//! empty descriptor. Two ways to commit:
//!
//! - [`commit`] rebuilds the whole runlist from the scheduler state (`RUNLIST_BASE`,
//!   `RUNLIST_COUNT`, `RUNLIST_COMMIT` = 1): when many queues change at once (a context
//!   suspended or resumed, a root set, a reset) and after anything the device changed on its
//!   own (an engine or adapter reset);
//! - [`commit_slot`] rewrites one queue's slot and has the device re-read only that slot
//!   (`RUNLIST_UPDATE`, `CAPS.RUNLIST_UPDATE`): a queue created or destroyed, a doorbell
//!   created or destroyed. Its cost does not depend on how many queues the engine has
//!   (setting up N queues would be O(N²) if every creation committed the whole runlist).
//!
//! Both are atomic and synchronous: when the write returns, queues that left execute nothing
//! more, so their rings may be freed, and the buffer may be rewritten for the next commit.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

use rvgpu_hw::queue::{QueueDescriptor, NO_DOORBELL, RUNLIST_MAX};
use rvgpu_hw::regs;

use crate::dma::DmaBuffer;
use crate::dxgk::Dxgk;
use crate::handle::Handle;
use crate::hwqueue::HwQueue;
use crate::mmio::Regs;
use crate::platform::Platform;
use crate::sched::Sched;
use crate::status::{self, Status};

/// Hardware queues per runlist buffer: the most queues one engine may have (creation beyond
/// it is refused). The device's limit less the node ring: 4,096 × 128 bytes = 512 KiB of
/// contiguous memory per engine, allocated at adapter start. The scaling tests
/// measure connects with up to this many queues on one engine.
pub const RUNLIST_CAPACITY: u32 = RUNLIST_MAX - 1;
const _: () = assert!(RUNLIST_CAPACITY <= RUNLIST_MAX);
/// Descriptors per runlist buffer: the node ring (docs/tdr.md#the-kmd, always first) and
/// [`RUNLIST_CAPACITY`] hardware queues.
pub const RUNLIST_ENTRIES: u32 = RUNLIST_CAPACITY + 1;
const _: () = assert!(RUNLIST_ENTRIES <= RUNLIST_MAX);

/// Bytes of a descriptor.
const DESC_BYTES: u64 = size_of::<QueueDescriptor>() as u64;
/// Words of a descriptor.
const DESC_WORDS: u64 = DESC_BYTES / 8;

/// Allocates one zeroed runlist buffer per engine (PASSIVE). On failure nothing is kept.
pub fn alloc<P: Platform>(dxgk: &Dxgk, engines: u32) -> Result<Vec<DmaBuffer>, Status> {
    let bytes = u64::from(RUNLIST_ENTRIES).saturating_mul(DESC_BYTES);
    let n = usize::try_from(engines).map_err(|_| status::INSUFFICIENT_RESOURCES)?;
    // The vector first, so that no contiguous buffer is ever held without a place to keep it.
    let mut out = crate::kmem::try_with_capacity::<P, DmaBuffer>(n)
        .map_err(|_| status::INSUFFICIENT_RESOURCES)?;
    for _ in 0..engines {
        let buf = match DmaBuffer::alloc::<P>(dxgk, bytes) {
            Ok(buf) => buf,
            Err(e) => {
                free(dxgk, out);
                return Err(e);
            }
        };
        // Room for every engine was reserved above.
        if let Err(b) = crate::kmem::push_reserved(&mut out, buf) {
            let _ = dxgk.free_contiguous(b.handle());
            free(dxgk, out);
            return Err(status::INSUFFICIENT_RESOURCES);
        }
    }
    Ok(out)
}

/// Frees runlist buffers (PASSIVE; the device must no longer be told to read them).
pub fn free(dxgk: &Dxgk, bufs: Vec<DmaBuffer>) {
    for b in bufs {
        let _ = dxgk.free_contiguous(b.handle());
    }
}

/// `q`'s descriptor as its runlist slot holds it, or `None` if it is not runnable (the slot
/// is then empty).
pub fn descriptor(s: &Sched, q: &HwQueue) -> Option<QueueDescriptor> {
    if !s.runnable(q) {
        return None;
    }
    let doorbell = q
        .doorbell
        .and_then(|d| s.doorbells.get(&d))
        .and_then(|d| d.physical)
        .unwrap_or(NO_DOORBELL);
    let (root, priority) = s
        .contexts
        .get(&q.context)
        .map_or((0, crate::hws::ContextPriority::DEFAULT), |c| {
            (s.root_of(c), c.priority)
        });
    let mut d = q.descriptor(doorbell, root, priority, q.context.raw())?;
    // The global doorbell page of this process rings it (hardware.md 5.5).
    d.process_id = s.process_id_of_context(q.context);
    Some(d)
}

/// The descriptors `engine`'s runlist holds now: the engine's node ring (unless parked by a
/// reset, docs/tdr.md#the-kmd), then the runnable hardware queues, in handle order, at
/// most [`RUNLIST_CAPACITY`]. Each goes to the slot of its queue id ([`slot`]); the node
/// rings took the adapter's first ids at start, so the node ring is first.
pub fn build(s: &Sched, engine: u32) -> impl Iterator<Item = QueueDescriptor> + '_ {
    let queues = s
        .runlist_entries(engine)
        .filter_map(|q| descriptor(s, q))
        .take(usize::try_from(RUNLIST_CAPACITY).unwrap_or(0));
    s.nodes.entry(engine).into_iter().chain(queues)
}

/// The runlist slot of queue id `id`, if it fits the buffer.
pub fn slot(id: u32) -> Option<u64> {
    (id < RUNLIST_ENTRIES).then_some(u64::from(id))
}

/// Writes descriptor `d` (or an empty one) into `buf`'s slot `slot`.
fn store_slot(buf: &DmaBuffer, slot: u64, d: Option<&QueueDescriptor>) -> Result<(), Status> {
    let words = d.map_or(
        [0u64; size_of::<QueueDescriptor>() / 8],
        QueueDescriptor::to_words,
    );
    let base = slot.saturating_mul(DESC_WORDS);
    for (i, w) in words.iter().enumerate() {
        if !buf.store(base.saturating_add(i as u64), *w, Ordering::Relaxed) {
            return Err(status::INSUFFICIENT_RESOURCES);
        }
    }
    Ok(())
}

/// Whether `engine` may be committed now: an engine held by DxgkDdiResetHwEngine waits for
/// DxgkDdiResumeHwEngine (a commit would end the device's hold early, hardware.md 10.1;
/// resume commits what changed meanwhile). `Err`: the device is gone: callers
/// learn it instead of believing the queues are scheduled.
fn may_commit<P: Platform>(regs: &Regs<P>, s: &Sched, engine: u32) -> Result<bool, Status> {
    if engine < 64 && s.hws_held & (1u64 << engine) != 0 {
        return Ok(false);
    }
    if regs.is_gone() {
        return Err(status::DEVICE_REMOVED);
    }
    // Out of D0 the device cannot be told: the change waits for the full commit every engine
    // gets when the adapter is back in D0 (`Adapter::set_power`).
    Ok(regs.is_powered())
}

/// `engine`'s runlist buffer and the slot count the device last loaded from it.
fn engine_runlist(s: &Sched, engine: u32) -> Result<(&DmaBuffer, &AtomicU32), Status> {
    let e = usize::try_from(engine).map_err(|_| status::INVALID_PARAMETER)?;
    match (s.runlists.get(e), s.runlist_len.get(e)) {
        (Some(buf), Some(len)) => Ok((buf, len)),
        _ => Err(status::INVALID_PARAMETER),
    }
}

/// Rewrites `engine`'s runlist buffer from `s` and commits it. Returns the number of
/// descriptors committed. The caller holds the scheduler lock (it owns `s`).
pub fn commit<P: Platform>(regs: &Regs<P>, s: &Sched, engine: u32) -> Result<u32, Status> {
    if !may_commit(regs, s, engine)? {
        return Ok(0);
    }
    let (buf, len_of) = engine_runlist(s, engine)?;
    // The slots the device holds now are emptied, then every entry goes to its slot; slots
    // at or past the loaded length are empty already (kept so by every commit), so the new
    // length is the highest slot written plus one and nothing past it is stale.
    let old_len = u64::from(len_of.load(Ordering::Relaxed));
    for i in 0..old_len {
        store_slot(buf, i, None)?;
    }
    let (mut count, mut len) = (0u32, 0u64);
    for d in build(s, engine) {
        let Some(i) = slot(d.queue_id) else {
            continue;
        };
        store_slot(buf, i, Some(&d))?;
        count = count.saturating_add(1);
        len = len.max(i.saturating_add(1));
    }
    let len32 = u32::try_from(len).map_err(|_| status::INSUFFICIENT_RESOURCES)?;
    // The device reads the descriptors during the COMMIT write; the MMIO write is ordered
    // after the stores above (Release, then the platform's MMIO barrier).
    core::sync::atomic::fence(Ordering::Release);
    regs.write_at(engine, regs::RunlistBase::new(buf.gpu().get()));
    regs.write_at(engine, regs::RunlistCount::new(len32));
    regs.write_at(engine, regs::RunlistCommit::new(1));
    len_of.store(len32, Ordering::Relaxed);
    // The read-back orders the commit before what follows and tells a dead device (the
    // commit then did nothing).
    if regs.check_lost() {
        return Err(status::DEVICE_REMOVED);
    }
    Ok(count)
}

/// Commits queue id `id`'s slot on `engine` with what `s` says of queue `queue` now: its
/// descriptor if it is a runnable queue of that engine with that id, else an empty slot (a
/// queue destroyed, `None`, or not runnable). The device re-reads that slot alone (and the
/// slots the runlist grew by), so the cost does not depend on the queues the engine has;
/// without `CAPS.RUNLIST_UPDATE` this is [`commit`]. The caller holds the scheduler lock and
/// changed nothing else of the engine's runlist since its last commit.
pub fn commit_slot<P: Platform>(
    regs: &Regs<P>,
    s: &Sched,
    engine: u32,
    id: u32,
    queue: Option<Handle>,
) -> Result<(), Status> {
    let Some(i) = slot(id).filter(|_| s.runlist_update) else {
        return commit(regs, s, engine).map(|_| ());
    };
    if !may_commit(regs, s, engine)? {
        return Ok(());
    }
    let (buf, len_of) = engine_runlist(s, engine)?;
    let d = queue
        .and_then(|h| s.queues.get(&h))
        .filter(|q| q.id == id && q.engine == engine)
        .and_then(|q| descriptor(s, q));
    let old_len = u64::from(len_of.load(Ordering::Relaxed));
    // Slots between the loaded length and `i` are empty (see `commit`): the device reads
    // them as the runlist grows and finds no queue there.
    let len = old_len.max(i.saturating_add(1));
    store_slot(buf, i, d.as_ref())?;
    let len32 = u32::try_from(len).map_err(|_| status::INSUFFICIENT_RESOURCES)?;
    let id32 = u32::try_from(i).map_err(|_| status::INSUFFICIENT_RESOURCES)?;
    core::sync::atomic::fence(Ordering::Release);
    if len != old_len {
        regs.write_at(engine, regs::RunlistCount::new(len32));
    }
    regs.write_at(engine, regs::RunlistUpdate::new(id32));
    len_of.store(len32, Ordering::Relaxed);
    if regs.check_lost() {
        return Err(status::DEVICE_REMOVED);
    }
    Ok(())
}

/// Commits the slots of context `ctx`'s queues on `engine` (suspended, resumed, a new root
/// or priority): one [`commit_slot`] per queue of the context, so the device reads as many
/// slots as the context has queues, whatever else the engine runs. Finding them is a pass
/// over the adapter's queue table in the KMD (comparisons only). Without
/// `CAPS.RUNLIST_UPDATE` this is [`commit`]. When it returns none of the context's queues
/// that left executes any more (each update is synchronous).
pub fn commit_context<P: Platform>(
    regs: &Regs<P>,
    s: &Sched,
    engine: u32,
    ctx: Handle,
) -> Result<(), Status> {
    if !s.runlist_update {
        return commit(regs, s, engine).map(|_| ());
    }
    let mut result = Ok(());
    for (h, q) in s.queues.iter().filter(|(_, q)| q.context == ctx) {
        // Every queue's slot is committed even after a failure (a device that is gone
        // fails them all; nothing is left half-listed on a live one).
        if let Err(e) = commit_slot(regs, s, engine, q.id, Some(*h)) {
            result = Err(e);
        }
    }
    result
}

/// Hardware queues for host unit tests (here and in crate::reset).
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::handle::fixtures::h;
    use crate::handle::Kind;
    use crate::hwqueue::{HwQueue, Ring};

    /// The `n`-th test ring: at `n` MiB, its control block 512 KiB above.
    pub fn ring(n: u64) -> Ring {
        Ring {
            base: rvgpu_hw::addr::GpuVa::new(n.wrapping_mul(0x10_0000)),
            size: 4096,
            control: rvgpu_hw::addr::GpuVa::new(n.wrapping_mul(0x10_0000).wrapping_add(0x8_0000)),
        }
    }

    /// A queue of context `ctx` (a test handle) on `engine`, with hardware id `id`.
    pub fn queue(ctx: u64, engine: u32, id: u32, ring: Option<Ring>, user: bool) -> HwQueue {
        HwQueue {
            os_handle: 0,
            context: h(Kind::Context, ctx),
            engine,
            id,
            priority: 0,
            user_mode: user,
            progress_gpu: rvgpu_hw::addr::GpuVa::new(0x9000),
            progress_cpu: crate::dma::OsWord::NONE,
            last_submitted: 0,
            native_progress: false,
            ring,
            kernel: None,
            doorbell: None,
            logs: crate::log::QueueLogs::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{queue, ring};
    use super::*;
    use crate::context::{Context, Device};
    use crate::doorbell::Doorbell;
    use crate::handle::fixtures::h;
    use crate::handle::Kind;

    /// Two contexts on engine 0 (one suspended later), one on engine 1.
    fn state() -> Sched {
        let mut s = Sched::new(4, false, Vec::new());
        let dev = h(Kind::Device, 1);
        s.devices.insert(
            dev,
            Device {
                os_handle: 1,
                ..crate::context::fixtures::device(None)
            },
        );
        for (n, engine) in [(1, 0), (2, 0), (3, 1)] {
            s.contexts.insert(
                h(Kind::Context, n),
                Context {
                    device: dev,
                    engine,
                    suspended: false,
                    os_handle: 0,
                    root: 0,
                    priority: crate::hws::ContextPriority::DEFAULT,
                },
            );
        }
        s.queues
            .insert(h(Kind::Queue, 10), queue(1, 0, 5, Some(ring(1)), false));
        s.queues
            .insert(h(Kind::Queue, 11), queue(2, 0, 6, Some(ring(2)), false));
        // A user-mode queue without a doorbell has no ring: not runnable.
        s.queues
            .insert(h(Kind::Queue, 12), queue(2, 0, 7, None, true));
        s.queues
            .insert(h(Kind::Queue, 13), queue(3, 1, 8, Some(ring(3)), false));
        s
    }

    fn ids(s: &Sched, engine: u32) -> Vec<u32> {
        build(s, engine).map(|d| d.queue_id).collect()
    }

    /// A queue of a GPU process runs only once its context has a root (set for it, or learnt
    /// for its process); with root 0 its descriptor would name the identity space. The system
    /// process's contexts need none.
    #[test]
    fn queues_of_a_process_wait_for_their_root() {
        let mut s = state();
        let p = h(Kind::Process, 20);
        s.processes.insert(
            p,
            crate::process::Process {
                os_handle: 2,
                system: false,
                id: 1,
                root: 0,
            },
        );
        if let Some(d) = s.devices.get_mut(&h(Kind::Device, 1)) {
            d.process = Some(p);
        }
        assert_eq!(ids(&s, 0), Vec::<u32>::new(), "no root yet");
        if let Some(c) = s.contexts.get_mut(&h(Kind::Context, 1)) {
            c.root = 0x4000;
        }
        assert_eq!(ids(&s, 0), vec![5], "context 1 has its root");
        let d = build(&s, 0).next().unwrap();
        assert_eq!(d.page_table_base.get(), 0x4000);
        assert_eq!(d.process_id, 1);
        if let Some(pr) = s.processes.get_mut(&p) {
            pr.system = true;
        }
        assert_eq!(
            ids(&s, 0),
            vec![5, 6],
            "the system process runs without a root"
        );
    }

    #[test]
    fn runnable_queues_of_the_engine_only() {
        let s = state();
        assert_eq!(ids(&s, 0), vec![5, 6]);
        assert_eq!(ids(&s, 1), vec![8]);
        assert_eq!(ids(&s, 2), Vec::<u32>::new());
        for d in build(&s, 0) {
            assert_eq!(d.validate(), Ok(()));
            assert_eq!(
                d.doorbell, NO_DOORBELL,
                "kernel-mode queues have no doorbell"
            );
        }
    }

    #[test]
    fn suspended_contexts_leave_and_resumed_ones_return() {
        let mut s = state();
        s.contexts.get_mut(&h(Kind::Context, 2)).unwrap().suspended = true;
        assert_eq!(ids(&s, 0), vec![5]);
        assert_eq!(ids(&s, 1), vec![8], "other engines are untouched");
        s.contexts.get_mut(&h(Kind::Context, 2)).unwrap().suspended = false;
        assert_eq!(ids(&s, 0), vec![5, 6]);
    }

    #[test]
    fn a_doorbell_gives_a_user_queue_its_ring_and_names_its_page() {
        let mut s = state();
        let db = h(Kind::Doorbell, 20);
        let q = s.queues.get_mut(&h(Kind::Queue, 12)).unwrap();
        q.ring = Some(ring(4));
        q.doorbell = Some(db);
        s.doorbells.insert(
            db,
            Doorbell {
                os_handle: 2,
                queue: h(Kind::Queue, 12),
                physical: Some(3),
                callbacks: 0,
                held: None,
                allocations: [h(Kind::Allocation, 1), h(Kind::Allocation, 2)],
            },
        );
        assert_eq!(ids(&s, 0), vec![5, 6, 7]);
        let d = build(&s, 0).find(|d| d.queue_id == 7).unwrap();
        assert_eq!(d.doorbell, 3);
        assert_eq!(
            d.flags,
            (rvgpu_hw::queue::QueueFlags::VALID | rvgpu_hw::queue::QueueFlags::USER_MODE).bits()
        );
    }

    #[test]
    fn the_runlist_never_exceeds_its_capacity() {
        let mut s = state();
        for n in 100..u64::from(RUNLIST_CAPACITY).wrapping_add(105) {
            let id = u32::try_from(n).unwrap();
            s.queues.insert(
                h(Kind::Queue, n.wrapping_mul(10)),
                queue(3, 1, id, Some(ring(n)), false),
            );
        }
        assert_eq!(build(&s, 1).count(), RUNLIST_CAPACITY as usize);
    }

    /// docs/tdr.md#the-kmd: each engine's node ring is the first entry of its runlist, at a
    /// priority above every HW queue; a parked node ring (ResetEngine's leave commit) is left
    /// out and the HW queues keep their order.
    #[test]
    fn tdr_node_ring_is_first_in_each_runlist_unless_parked() {
        let mut s = state();
        let node = |id: u32| QueueDescriptor {
            queue_id: id,
            flags: rvgpu_hw::queue::QueueFlags::VALID.bits(),
            ring_base: rvgpu_hw::addr::GpuVa::new(0x100_0000),
            ring_size: 4096,
            doorbell: NO_DOORBELL,
            ring_control: rvgpu_hw::addr::GpuVa::new(0x100_1000),
            progress_fence: rvgpu_hw::addr::GpuVa::new(0x100_1080),
            priority: crate::node::NODE_RING_PRIORITY,
            ..Default::default()
        };
        s.nodes = crate::node::NodeSlots::new(vec![node(900), node(901)]);
        assert_eq!(ids(&s, 0), vec![900, 5, 6]);
        assert_eq!(ids(&s, 1), vec![901, 8]);
        s.nodes.set_parked(0, true);
        assert_eq!(ids(&s, 0), vec![5, 6]);
        assert_eq!(
            ids(&s, 1),
            vec![901, 8],
            "other engines keep their node ring"
        );
        s.nodes.set_parked(0, false);
        assert_eq!(ids(&s, 0), vec![900, 5, 6]);
        // A full runlist still has the node ring first and RUNLIST_CAPACITY HW queues.
        for n in 100..u64::from(RUNLIST_CAPACITY).wrapping_add(105) {
            let id = u32::try_from(n).unwrap();
            s.queues.insert(
                h(Kind::Queue, n.wrapping_mul(10)),
                queue(3, 1, id, Some(ring(n)), false),
            );
        }
        let all = ids(&s, 1);
        assert_eq!(all.first(), Some(&901));
        assert_eq!(all.len(), RUNLIST_ENTRIES as usize);
    }
}
