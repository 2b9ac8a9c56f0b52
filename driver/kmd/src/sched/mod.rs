//! The scheduler state of a started adapter: D3D devices, contexts, hardware queues, doorbells,
//! physical doorbells and the per-engine runlists, all under one spin lock (docs/
//! usermode-submission.md, "IRQL and locking"). Objects are keyed by their KMD handle
//! ([`crate::handle`]); [`ddi::with_adapter`] resolves a handle to its started adapter.
//!
//! **Lock.** [`Sched`] lives in a [`crate::sync::SpinLock`] (DISPATCH). The ISR never takes
//! it. Work done under it is bounded: table updates, runlist rewrites (at most
//! [`crate::runlist::RUNLIST_CAPACITY`] descriptors) and MMIO writes. Calls into Dxgkrnl that
//! need PASSIVE (contiguous memory, `DxgkCbDisconnectDoorbell`) are made with it released.

use crate::kmem::SortedMap;
use alloc::vec::Vec;

use crate::context::{Context, Device};
use crate::dma::DmaBuffer;
use crate::doorbell::{Doorbell, Physical};
use crate::handle::Handle;
use crate::hwqueue::{HwQueue, QueueIds};
use crate::process::Process;
use crate::status::{self, Status};

pub mod ddi;

impl Sched {
    /// The process id of the queues of context `ctx` (0: a device of no GPU process, the
    /// identity space).
    pub fn process_id_of_context(&self, ctx: Handle) -> u32 {
        self.contexts
            .get(&ctx)
            .and_then(|c| self.devices.get(&c.device))
            .and_then(|d| d.process)
            .and_then(|p| self.processes.get(&p))
            .map_or(0, |p| p.id)
    }

    /// The GPU process that owns device `d` (`None`: the system device, or no process named).
    pub fn process_of_device(&self, d: Handle) -> Option<Handle> {
        self.devices.get(&d).and_then(|d| d.process)
    }

    /// Contexts of process `p` (a scan: asked only near the end of the pool, crate::quota).
    pub fn contexts_of_process(&self, p: Handle) -> usize {
        self.contexts
            .values()
            .filter(|c| self.process_of_device(c.device) == Some(p))
            .count()
    }

    /// Hardware queues of process `p` (likewise).
    pub fn queues_of_process(&self, p: Handle) -> usize {
        self.queues
            .values()
            .filter(|q| {
                self.contexts
                    .get(&q.context)
                    .and_then(|c| self.process_of_device(c.device))
                    == Some(p)
            })
            .count()
    }
}

/// The scheduler state of one started adapter.
#[derive(Debug)]
pub struct Sched {
    pub devices: SortedMap<Handle, Device>,
    pub contexts: SortedMap<Handle, Context>,
    pub queues: SortedMap<Handle, HwQueue>,
    pub doorbells: SortedMap<Handle, Doorbell>,
    /// GPU processes (`DxgkDdiCreateProcess`, [`crate::process`]).
    pub processes: SortedMap<Handle, Process>,
    /// The process id last handed out ([`crate::process::Process::id`]).
    pub last_process_id: u32,
    /// Allocations (`DxgkDdiCreateAllocation`, [`crate::allocation`]).
    pub allocations: SortedMap<Handle, crate::allocation::Allocation>,
    /// Where the allocations are mapped, by process and VA ([`crate::allocation::index`]).
    pub mapped_at: crate::allocation::index::MapIndex,
    pub ids: QueueIds,
    pub physical: Physical,
    /// One runlist buffer per engine (allocated at start, written only under the lock).
    pub runlists: Vec<DmaBuffer>,
    /// Node-ring descriptors, first in each engine's runlist (docs/tdr.md#the-kmd).
    pub nodes: crate::node::NodeSlots,
    /// Priority bands as the OS set them (hardware scheduling, [`crate::hws`]).
    pub bands: crate::hws::Bands,
    /// Engines reset by `DxgkDdiResetHwEngine` and not yet resumed (bit per engine): held by
    /// the device, so no commit may touch them before `DxgkDdiResumeHwEngine`.
    pub hws_held: u64,
    /// Engines whose scheduling log the OS set (bit per engine): an adapter reset turns
    /// logging off and `DxgkDdiRestartFromTimeout` adopts them again (hardware.md M39).
    pub sched_logs: u64,
    /// The paging process's root (`SYSTEM_PAGE_TABLE_BASE`), as VidMm set it on a system
    /// context (0: none yet, the system space is identity). Restored after an adapter reset.
    pub system_root: u64,
    /// Slots each engine's runlist holds on the device (the `RUNLIST_COUNT` last loaded),
    /// so that an update names only what grew (docs/hardware.md 5.2). Atomics because
    /// commits run with shared access to the state; every write is under the scheduler lock.
    pub runlist_len: [core::sync::atomic::AtomicU32; rvgpu_hw::regs::ENGINE_MAX as usize],
    /// The device takes runlist updates (`CAPS.RUNLIST_UPDATE`): adding or removing one
    /// queue commits its slot, not the whole runlist ([`crate::runlist::commit_slot`]).
    pub runlist_update: bool,
}

impl Default for Sched {
    /// No objects, no doorbells, no runlists (what a stopped adapter leaves).
    fn default() -> Self {
        Self::with_physical(Physical::none(), Vec::new())
    }
}

impl Sched {
    /// Empty state over the given physical doorbells and runlist buffers (one per engine).
    /// Allocates nothing: the maps grow fallibly as objects are created.
    pub fn with_physical(physical: Physical, runlists: Vec<DmaBuffer>) -> Self {
        Self {
            devices: SortedMap::new(),
            contexts: SortedMap::new(),
            queues: SortedMap::new(),
            doorbells: SortedMap::new(),
            processes: SortedMap::new(),
            last_process_id: 0,
            allocations: SortedMap::new(),
            mapped_at: crate::allocation::index::MapIndex::default(),
            ids: QueueIds::default(),
            physical,
            runlists,
            nodes: crate::node::NodeSlots::default(),
            bands: crate::hws::Bands::default(),
            hws_held: 0,
            sched_logs: 0,
            system_root: 0,
            runlist_len: [const { core::sync::atomic::AtomicU32::new(0) };
                rvgpu_hw::regs::ENGINE_MAX as usize],
            runlist_update: false,
        }
    }

    /// Empty state for a device with `doorbells` physical doorbells (`global`: one shared
    /// page), for host unit tests.
    #[cfg(test)]
    pub fn new(doorbells: u32, global: bool, runlists: Vec<DmaBuffer>) -> Self {
        Self::with_physical(Physical::new(doorbells, global), runlists)
    }

    /// Sets one field of context `h` (`field` picks it) to `v`: the context's engine when that
    /// changed the field, `None` when it held `v` already (STATUS_INVALID_HANDLE for an unknown
    /// context).
    pub fn set_context<T: PartialEq>(
        &mut self,
        h: Handle,
        field: impl FnOnce(&mut Context) -> &mut T,
        v: T,
    ) -> Result<Option<u32>, Status> {
        let ctx = self.contexts.get_mut(&h).ok_or(status::INVALID_HANDLE)?;
        let engine = ctx.engine;
        let slot = field(ctx);
        if *slot == v {
            return Ok(None);
        }
        *slot = v;
        Ok(Some(engine))
    }

    /// Whether queue `q` belongs in its engine's runlist: it has a ring (kernel-mode queues
    /// from creation, user-mode queues while they have a doorbell), its context is not
    /// suspended, its device is not in error (a queue of it hung an engine, UM-10), and, in a
    /// GPU process other than the system one, the context has a root ([`Sched::root_of`]):
    /// before that the descriptor's root would be 0, the identity space, where the queue's
    /// ring and DMA buffers could reach any memory.
    pub fn runnable(&self, q: &HwQueue) -> bool {
        q.ring.is_some()
            && self.contexts.get(&q.context).is_some_and(|c| {
                let device = self.devices.get(&c.device);
                let needs_root = device.is_some_and(|d| d.user_process)
                    || device
                        .and_then(|d| d.process)
                        .and_then(|p| self.processes.get(&p))
                        .is_some_and(|p| !p.system);
                !c.suspended
                    && !device.is_some_and(|d| d.in_error)
                    && (self.root_of(c) != 0 || !needs_root)
            })
    }

    /// The root context `c`'s queues and buffers run under: the one `DxgkDdiSetRootPageTable`
    /// named for it, else the one learnt for its process ([`crate::process::ddi::learn_root`]),
    /// else 0 (none).
    pub fn root_of(&self, c: &Context) -> u64 {
        root_of(c, &self.devices, &self.processes)
    }

    /// The space a DMA buffer submitted on context `ctx` runs in (docs/robustness.md, "Whose
    /// buffer runs where"): `Some(root)` for a context of a GPU process other than the system
    /// one, whose buffers run under its root with user privilege (INDIRECT_VM); `None` for the
    /// OS's own contexts (the system process, or a device without a GPU process), whose
    /// buffers the OS addresses. A process context without a root (VidMm has not set one, or
    /// the driver refused it) is STATUS_INVALID_DEVICE_STATE: its buffer would run in the
    /// identity space, on the bus, with kernel privilege.
    pub fn buffer_root(&self, ctx: &Handle) -> Result<Option<u64>, Status> {
        buffer_root(&self.contexts, &self.devices, &self.processes, ctx).1
    }

    /// Queues on `engine` that belong in its runlist, in handle (creation) order.
    pub fn runlist_entries(&self, engine: u32) -> impl Iterator<Item = &HwQueue> + '_ {
        self.queues
            .values()
            .filter(move |q| q.engine == engine && self.runnable(q))
    }
}

/// [`Sched::buffer_root`] over the tables it reads (for a caller holding another table
/// mutably), with the device's error state read on the way (UM-10): `(in error, root)`.
pub fn buffer_root(
    contexts: &SortedMap<Handle, Context>,
    devices: &SortedMap<Handle, Device>,
    processes: &SortedMap<Handle, Process>,
    ctx: &Handle,
) -> (bool, Result<Option<u64>, Status>) {
    let Some(c) = contexts.get(ctx) else {
        return (false, Err(status::INVALID_HANDLE));
    };
    let d = devices.get(&c.device);
    let root = match (
        d.is_some_and(|d| d.user_process),
        root_of(c, devices, processes),
    ) {
        (false, _) => Ok(None),
        (true, 0) => Err(status::INVALID_DEVICE_STATE),
        (true, root) => Ok(Some(root)),
    };
    (d.is_some_and(|d| d.in_error), root)
}

/// [`Sched::root_of`] over the tables it reads.
pub fn root_of(
    c: &Context,
    devices: &SortedMap<Handle, Device>,
    processes: &SortedMap<Handle, Process>,
) -> u64 {
    if c.root != 0 {
        return c.root;
    }
    devices
        .get(&c.device)
        .and_then(|d| d.process)
        .and_then(|p| processes.get(&p))
        .filter(|p| !p.system)
        .map_or(0, |p| p.root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::fixtures::h;
    use crate::handle::Kind;
    use crate::hwqueue::Ring;
    use rvgpu_hw::addr::GpuVa;

    fn queue(ctx: u64, engine: u32, ring: bool) -> HwQueue {
        HwQueue {
            os_handle: 0,
            context: h(Kind::Context, ctx),
            engine,
            id: 0,
            priority: 0,
            user_mode: !ring,
            progress_gpu: GpuVa::new(0x9000),
            progress_cpu: crate::dma::OsWord::NONE,
            last_submitted: 0,
            native_progress: false,
            ring: ring.then_some(Ring {
                base: GpuVa::new(0x10_0000),
                size: 4096,
                control: GpuVa::new(0x18_0000),
            }),
            kernel: None,
            doorbell: None,
            logs: crate::log::QueueLogs::default(),
        }
    }

    /// Process 7 owns device 1 (contexts 1, 2); device 2 has no process (context 3).
    /// Queues: 10 on context 1 (engine 0), 11 on context 2 (engine 1), 12 on context 3
    /// (engine 0), 13 on context 1 without a ring (engine 0).
    fn state() -> Sched {
        let mut s = Sched::new(4, false, Vec::new());
        s.processes.insert(
            h(Kind::Process, 7),
            crate::process::Process {
                os_handle: 0x70,
                system: false,
                id: 3,
                root: 0,
            },
        );
        for (n, process) in [(1, Some(h(Kind::Process, 7))), (2, None)] {
            s.devices.insert(
                h(Kind::Device, n),
                crate::context::fixtures::device(process),
            );
        }
        for (n, dev, engine) in [(1, 1, 0), (2, 1, 1), (3, 2, 0)] {
            s.contexts.insert(
                h(Kind::Context, n),
                Context {
                    device: h(Kind::Device, dev),
                    engine,
                    suspended: false,
                    os_handle: 0,
                    root: 0x4000,
                    priority: crate::hws::ContextPriority::DEFAULT,
                },
            );
        }
        for (n, ctx, engine, ring) in [(10, 1, 0, true), (11, 2, 1, true), (12, 3, 0, true)] {
            s.queues.insert(h(Kind::Queue, n), queue(ctx, engine, ring));
        }
        s.queues.insert(h(Kind::Queue, 13), queue(1, 0, false));
        s
    }

    /// A context's queues carry its device's process id (0 without a process), and the
    /// per-process counts (the pool shares, crate::quota) see only that process's objects.
    #[test]
    fn objects_are_attributed_to_their_devices_process() {
        let s = state();
        let p = h(Kind::Process, 7);
        assert_eq!(s.process_id_of_context(h(Kind::Context, 1)), 3);
        assert_eq!(
            s.process_id_of_context(h(Kind::Context, 3)),
            0,
            "no process"
        );
        assert_eq!(
            s.process_id_of_context(h(Kind::Context, 9)),
            0,
            "no context"
        );
        assert_eq!(s.process_of_device(h(Kind::Device, 1)), Some(p));
        assert_eq!(s.process_of_device(h(Kind::Device, 2)), None);
        assert_eq!(s.contexts_of_process(p), 2);
        assert_eq!(s.queues_of_process(p), 3);
        assert_eq!(s.contexts_of_process(h(Kind::Process, 8)), 0);
        assert_eq!(s.queues_of_process(h(Kind::Process, 8)), 0);
    }

    /// A process's DMA buffer runs under its context's root (user privilege); the OS's contexts
    /// keep their own space; a process context without a root is refused, never run on the bus.
    #[test]
    fn a_process_buffer_runs_under_its_root_and_a_rootless_process_context_is_refused() {
        let mut s = state();
        assert_eq!(s.buffer_root(&h(Kind::Context, 1)), Ok(Some(0x4000)));
        assert_eq!(s.buffer_root(&h(Kind::Context, 3)), Ok(None), "no process");
        assert_eq!(
            s.buffer_root(&h(Kind::Context, 9)),
            Err(status::INVALID_HANDLE)
        );
        s.contexts.get_mut(&h(Kind::Context, 1)).unwrap().root = 0;
        assert_eq!(
            s.buffer_root(&h(Kind::Context, 1)),
            Err(status::INVALID_DEVICE_STATE)
        );
        s.devices.get_mut(&h(Kind::Device, 1)).unwrap().user_process = false;
        assert_eq!(s.buffer_root(&h(Kind::Context, 1)), Ok(None), "the OS's");
    }

    /// UM-11: an engine's runlist holds its runnable queues in handle order: none without a
    /// ring, none of another engine, none of a suspended context.
    #[test]
    fn um_11_runlist_entries_are_the_engines_runnable_queues_in_order() {
        let mut s = state();
        let entries =
            |s: &Sched, e| -> Vec<Handle> { s.runlist_entries(e).map(|q| q.context).collect() };
        assert_eq!(
            entries(&s, 0),
            vec![h(Kind::Context, 1), h(Kind::Context, 3)]
        );
        assert_eq!(entries(&s, 1), vec![h(Kind::Context, 2)]);
        assert!(entries(&s, 2).is_empty());
        s.contexts.get_mut(&h(Kind::Context, 1)).unwrap().suspended = true;
        assert_eq!(entries(&s, 0), vec![h(Kind::Context, 3)]);
        assert!(Sched::default().runlist_entries(0).next().is_none());
    }
}
