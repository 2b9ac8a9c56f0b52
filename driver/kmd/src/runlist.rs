//! Runlists: one buffer of queue descriptors per engine (docs/hardware.md 5.2).
//!
//! The buffers are allocated at start (contiguous memory, inside system window 1) and written
//! only under the scheduler lock. Whenever the set of runnable queues of an engine changes
//! (a kernel-mode queue created or destroyed, a doorbell created or destroyed, a context
//! suspended or resumed) the whole runlist is rebuilt from the scheduler state and committed:
//! `RUNLIST_BASE`, `RUNLIST_COUNT`, `RUNLIST_COMMIT` = 1. The commit is atomic and synchronous:
//! when the write returns, queues that left execute nothing more, so their rings may be freed,
//! and the buffer may be rewritten for the next commit.

use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use rvgpu_hw::queue::{QueueDescriptor, NO_DOORBELL, RUNLIST_MAX};
use rvgpu_hw::regs;

use crate::dma::DmaBuffer;
use crate::dxgk::Dxgk;
use crate::mmio::Regs;
use crate::platform::Platform;
use crate::sched::Sched;
use crate::status::{self, Status};

/// Hardware queues per runlist buffer: the most queues one engine may have (creation beyond
/// it is refused). The device's limit less the node ring: 4,096 × 128 bytes = 512 KiB of
/// contiguous memory per engine, allocated at adapter start. Issue 19 measures connects with
/// up to this many queues on one engine.
pub const RUNLIST_CAPACITY: u32 = RUNLIST_MAX - 1;
const _: () = assert!(RUNLIST_CAPACITY <= RUNLIST_MAX);
/// Descriptors per runlist buffer: the node ring (docs/tdr.md §3.2, always first) and
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
        let buf = match dxgk.allocate_contiguous(bytes) {
            Ok((va, handle)) => match P::bus_address(va) {
                // SAFETY: fresh contiguous memory of `bytes` bytes, page aligned, owned by us
                // until freed through `handle`.
                Some(bus) => unsafe { DmaBuffer::from_raw(va, bus, bytes, handle) },
                None => {
                    let _ = dxgk.free_contiguous(handle);
                    free(dxgk, out);
                    return Err(status::INSUFFICIENT_RESOURCES);
                }
            },
            Err(e) => {
                free(dxgk, out);
                return Err(e);
            }
        };
        buf.zero();
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

/// The descriptors `engine`'s runlist holds now, in order: the engine's node ring first
/// (unless parked by a reset, docs/tdr.md §3.2/§3.4), then at most [`RUNLIST_CAPACITY`]
/// hardware queues.
pub fn build(s: &Sched, engine: u32) -> impl Iterator<Item = QueueDescriptor> + '_ {
    let queues = s
        .runlist_entries(engine)
        .filter_map(|q| {
            let doorbell = q
                .doorbell
                .and_then(|d| s.doorbells.get(&d))
                .and_then(|d| d.physical)
                .unwrap_or(NO_DOORBELL);
            let (root, priority) = s
                .contexts
                .get(&q.context)
                .map_or((0, crate::hws::ContextPriority::DEFAULT), |c| {
                    (c.root, c.priority)
                });
            let mut d = q.descriptor(doorbell, root, priority, q.context.raw())?;
            // The global doorbell page of this process rings it (hardware.md 5.5).
            d.process_id = crate::process::id_of_context(s, q.context);
            Some(d)
        })
        .take(usize::try_from(RUNLIST_CAPACITY).unwrap_or(0));
    s.nodes.entry(engine).into_iter().chain(queues)
}

/// Rewrites `engine`'s runlist buffer from `s` and commits it. Returns the number of
/// descriptors committed. The caller holds the scheduler lock (it owns `s`).
pub fn commit<P: Platform>(regs: &Regs<P>, s: &Sched, engine: u32) -> Result<u32, Status> {
    // An engine held by DxgkDdiResetHwEngine waits for DxgkDdiResumeHwEngine: a commit would
    // end the device's hold early (hardware.md 10.1). Resume commits what changed meanwhile.
    if engine < 64 && s.hws_held & (1u64 << engine) != 0 {
        return Ok(0);
    }
    // A device that is gone reads no runlist (issue 18): callers learn it instead of
    // believing the queues are scheduled.
    if regs.is_gone() {
        return Err(status::DEVICE_REMOVED);
    }
    let buf = s
        .runlists
        .get(usize::try_from(engine).map_err(|_| status::INVALID_PARAMETER)?)
        .ok_or(status::INVALID_PARAMETER)?;
    let mut count: u32 = 0;
    for d in build(s, engine) {
        let base = u64::from(count).saturating_mul(DESC_WORDS);
        for (i, w) in d.to_words().iter().enumerate() {
            let idx = base.saturating_add(i as u64);
            if !buf.store(idx, *w, Ordering::Relaxed) {
                return Err(status::INSUFFICIENT_RESOURCES);
            }
        }
        count = count.saturating_add(1);
    }
    // The device reads the descriptors during the COMMIT write; the MMIO write is ordered
    // after the stores above (Release, then the platform's MMIO barrier).
    core::sync::atomic::fence(Ordering::Release);
    regs.write_at(engine, regs::RunlistBase::new(buf.gpu().get()));
    regs.write_at(engine, regs::RunlistCount::new(count));
    regs.write_at(engine, regs::RunlistCommit::new(1));
    // The read-back orders the commit before what follows and tells a dead device (the
    // commit then did nothing).
    if crate::removal::check_lost(regs) {
        return Err(status::DEVICE_REMOVED);
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{Context, Device};
    use crate::doorbell::Doorbell;
    use crate::hwqueue::{HwQueue, Ring};
    use crate::sched::{Handle, Kind};

    fn h(kind: Kind, n: u64) -> Handle {
        Handle::new(0, kind, n).unwrap()
    }

    fn ring(n: u64) -> Ring {
        Ring {
            base: rvgpu_hw::addr::GpuVa::new(n.wrapping_mul(0x10_0000)),
            size: 4096,
            control: rvgpu_hw::addr::GpuVa::new(n.wrapping_mul(0x10_0000).wrapping_add(0x8_0000)),
        }
    }

    fn queue(ctx: u64, engine: u32, id: u32, ring: Option<Ring>, user: bool) -> HwQueue {
        HwQueue {
            os_handle: 0,
            context: h(Kind::Context, ctx),
            engine,
            id,
            priority: 0,
            user_mode: user,
            progress_gpu: rvgpu_hw::addr::GpuVa::new(0x9000),
            native_progress: false,
            ring,
            kernel: None,
            doorbell: None,
            logs: crate::log::QueueLogs::default(),
        }
    }

    /// Two contexts on engine 0 (one suspended later), one on engine 1.
    fn state() -> Sched {
        let mut s = Sched::new(4, false, Vec::new());
        let dev = h(Kind::Device, 1);
        s.devices.insert(
            dev,
            Device {
                os_handle: 1,
                system: false,
                in_error: false,
                process: None,
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

    /// Issue 12: a queue of a GPU process runs only once VidMm has set its context's root;
    /// with root 0 its descriptor would name the identity space. The system process's
    /// contexts need none.
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

    /// docs/tdr.md §3.2: each engine's node ring is the first entry of its runlist, at a
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
