//! The seam of the two backends that drive the driver as an application does: what a case
//! observes through the UMD, written once over [`AppUmd`] and [`AppQueues`], the primitives
//! each supplies.
//!
//! The D3DKMT backend ([`super::kmt::KmtBackend`]) runs the Rust UMD (`rvgpu_umd`) on the
//! `Kmt` thunks; `--umd pe` (`dll::DllBackend`) runs the shipped rvgpu_umd.dll's C API,
//! the same UMD's, in the emulator. A capability method of theirs (which UMD calls, in which
//! order, what the session records, how a status reads to the case) is therefore the same for
//! both; only the call differs. [`AppUmd`] is the calls, one per UMD object operation: tracked
//! buffers (create, lock, unlock, status, destroy, fills and copies on a queue), a plain
//! buffer's words, native fences (create, share and open, destroy, CPU waits and signals), a
//! batch of GPU waits, packets and signals on a queue, GPU VA ranges; [`AppQueues`] the
//! processes and queues (on the D3DKMT backend also forwarded to other processes). The Rust
//! UMD implements them in `kmt/umd.rs`, `kmt/fences.rs` and `kmt/mod.rs`, the DLL's exports in
//! `dll/umd.rs` and `dll/usermode.rs`. The capabilities on the seam are implemented
//! here once for every backend that has the primitives: [`AllocationUsage`],
//! [`GpuVaPlacement`], [`UserModeSubmission`] (a `WaitAtLeast` is a GPU wait on a gate,
//! `submit_work`, and a CPU write releases it, `write_word`), [`Fences`](super::Fences) and
//! [`CrossAdapterFences`](super::CrossAdapterFences) (`fences`), over the tables the session keeps for them ([`AppObjects`]).
//!
//! A new observation of a capability on the seam is its method in `caps` and its body here; a
//! primitive is added to both implementations only when the observation needs a UMD call the
//! seam lacks.

mod fence_state;
pub(crate) mod fences;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use rvgpu_hw::cmd::Command;

use super::tracked::TrackedTable;
use super::{
    AllocationUsage, BufferRef, ChurnLane, ChurnReport, DoorbellStatus, Failure, FenceRef,
    GpuVaPlacement, LockOutcome, NewQueue, Pages, ProcessEnd, ProcessRef, TrackedBatch,
    TrackedInfo, TrackedRef, TrackedWork, UmQueueInfo, UmQueueRef, UserModeSubmission, WaitResult,
    Work,
};

pub(crate) use fence_state::{AppFence, GpuQueue, Pending, Waiter};

/// A gate: GPU waits on word `offset` of buffer `buffer` are waits on `fence`, a native fence
/// of the buffer's process that a CPU write of the word signals to the value written (the
/// device re-evaluates a wait on plain memory only when the OS says the word changed, which no
/// application call does).
pub(crate) struct Gate<F> {
    pub(crate) process: usize,
    pub(crate) buffer: usize,
    pub(crate) offset: u64,
    pub(crate) fence: F,
}

/// A fence a batch names: a gate (an index of [`AppObjects::gates`]) or a native fence of
/// [`Fences`](super::Fences) (an index of [`AppObjects::fences`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum FenceId {
    Gate(usize),
    Native(usize),
}

/// One operation of a batch, in the order the queue runs them.
#[derive(Clone, Copy, Debug)]
pub(crate) enum QueueOp {
    /// A GPU wait for the fence to reach the value.
    Wait(FenceId, u64),
    /// A packet.
    Cmd(Command),
    /// A GPU signal of the fence to the value.
    Signal(FenceId, u64),
}

/// What a session keeps of the objects an application made through the seam.
pub(crate) struct AppObjects<B, V, F, E> {
    /// Tracked buffers ([`AllocationUsage`]).
    pub(crate) tracked: TrackedTable<B, V>,
    /// GPU VA ranges reserved ([`GpuVaPlacement`]): (process, base, bytes).
    pub(crate) va_ranges: Vec<(usize, u64, u64)>,
    /// Gates, made on first use.
    pub(crate) gates: Vec<Gate<F>>,
    /// Native fences of [`Fences`](super::Fences), by [`FenceRef`](super::FenceRef).
    pub(crate) fences: Vec<AppFence<F>>,
    /// The session's process of each of the fence cases' process numbers: (adapter, the
    /// case's number, the session's process).
    pub(crate) fence_procs: Vec<(usize, u32, usize)>,
    /// The fence cases' GPU queues, by [`QueueRef`](super::QueueRef).
    pub(crate) gpu_queues: Vec<GpuQueue>,
    /// CPU waits in event form, by [`EventRef`](super::EventRef).
    pub(crate) events: Vec<E>,
    /// Set when the session ends: the event waits stop.
    pub(crate) stop: Arc<AtomicBool>,
}

impl<B, V, F, E> Default for AppObjects<B, V, F, E> {
    fn default() -> Self {
        Self {
            tracked: TrackedTable::default(),
            va_ranges: Vec::new(),
            gates: Vec::new(),
            fences: Vec::new(),
            fence_procs: Vec::new(),
            gpu_queues: Vec::new(),
            events: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl<B, V, F, E> AppObjects<B, V, F, E> {
    /// Forgets what process `p` made (it ended: the OS destroyed it).
    pub(crate) fn drop_process(&mut self, p: usize) {
        self.tracked.drop_process(p);
        self.va_ranges.retain(|&(rp, ..)| rp != p);
        drop(self.take_gates_of(p));
        drop(self.take_live_fences_of(p));
    }

    /// The session ends: the event waits stop and are joined.
    pub(crate) fn stop_events(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        self.events.clear();
    }

    /// The fence a batch names.
    pub(crate) fn fence(&self, id: FenceId) -> Result<&F, Failure> {
        match id {
            FenceId::Gate(i) => self.gates.get(i).map(|g| &g.fence),
            FenceId::Native(i) => self.fences.get(i).map(|f| &f.fence),
        }
        .ok_or_else(|| Failure::Backend(format!("no fence {id:?}")))
    }

    /// Takes out the gate fences of process `p` (it destroys them as it ends).
    pub(crate) fn take_gates_of(&mut self, p: usize) -> Vec<F> {
        let (mine, others): (Vec<Gate<F>>, Vec<Gate<F>>) = std::mem::take(&mut self.gates)
            .into_iter()
            .partition(|g| g.process == p);
        self.gates = others;
        mine.into_iter().map(|g| g.fence).collect()
    }

    /// The gate of word `offset` of buffer `b`, if it has one.
    fn gate_of(&self, b: BufferRef, offset: u64) -> Option<(usize, &Gate<F>)> {
        (self.gates.iter().enumerate()).find(|(_, g)| g.buffer == b.0 && g.offset == offset)
    }
}

/// A native fence's mapping in the program's own process
/// ([`Fences::own_mapping`](super::Fences::own_mapping)).
pub(crate) trait AppMappings: AppUmd {
    /// Process `p`'s mapping of `f`.
    fn fence_own_mapping(
        &self,
        p: usize,
        f: &Self::Fence,
    ) -> Result<super::caps::OwnFenceMapping, Failure>;
}

/// One application's UMD, as the backend calls it. Processes, buffers and queues are the
/// session's ([`ProcessRef`], [`BufferRef`], [`UmQueueRef`]); a failed call is already the
/// [`Failure`] the case sees (the machine's fault first, as every session reports it).
pub(crate) trait AppUmd {
    /// A tracked buffer as the UMD holds it.
    type Buffer;
    /// The CPU view of a tracked buffer's lock.
    type View;
    /// A native fence (a gate's, or one of [`Fences`](super::Fences)).
    type Fence;
    /// A CPU wait in event form.
    type Event;

    /// The session's objects of the seam.
    fn objects(&self) -> &AppObjects<Self::Buffer, Self::View, Self::Fence, Self::Event>;
    /// The same, to change.
    fn objects_mut(
        &mut self,
    ) -> &mut AppObjects<Self::Buffer, Self::View, Self::Fence, Self::Event>;
    /// The machine's fault, if it has one.
    fn check_halt(&self) -> Result<(), Failure>;

    /// A tracked buffer of `bytes` for process `p`, and its size.
    fn buffer_create(&self, p: usize, bytes: u64) -> Result<(Self::Buffer, u64), Failure>;
    /// Locks `b` of process `p` with `flags`, naming every live queue of `p`: the view, or
    /// why there is none (`Err`: the lock's outcome when it did not map).
    fn buffer_lock(
        &self,
        p: usize,
        b: &Self::Buffer,
        flags: u32,
    ) -> Result<Result<Self::View, LockOutcome>, Failure>;
    /// The word at `offset` (checked inside the buffer) of a live lock's view.
    fn view_load(view: &Self::View, offset: u64) -> u64;
    /// Stores `value` at `offset` (checked inside the buffer) of a live lock's view.
    fn view_store(view: &Self::View, offset: u64, value: u64);
    /// Unlocks `b` of process `p`.
    fn buffer_unlock(&self, p: usize, b: &Self::Buffer) -> Result<(), Failure>;
    /// The UMD's backing and counters of `b`.
    fn buffer_status(&self, p: usize, b: &Self::Buffer) -> Result<TrackedInfo, Failure>;
    /// Destroys `b` of process `p`, naming every live queue of `p` (never blocks).
    fn buffer_destroy(&self, p: usize, b: Self::Buffer) -> Result<(), Failure>;
    /// `work` (tracked uses of buffers of the queue's process) submitted on queue `q`: the
    /// progress value of its last submission.
    fn buffer_work(&mut self, q: UmQueueRef, work: &[TrackedWork]) -> Result<u64, Failure>;

    /// The process of plain buffer `b`.
    fn buffer_process(&self, b: BufferRef) -> Result<usize, Failure>;
    /// The GPU address of `bytes` at `offset` of plain buffer `b`, checked inside it.
    fn gpu_address(&self, b: BufferRef, offset: u64, bytes: u64) -> Result<u64, Failure>;
    /// The word at `offset` of plain buffer `b`, read by the CPU.
    fn word_load(&self, b: BufferRef, offset: u64) -> Result<u64, Failure>;
    /// Stores `value` at `offset` of plain buffer `b` from the CPU.
    fn word_store(&mut self, b: BufferRef, offset: u64, value: u64) -> Result<(), Failure>;
    /// A native fence of process `p` at `initial`, which another process can open if
    /// `shareable`.
    fn fence_create(&self, p: usize, initial: u64, shareable: bool)
        -> Result<Self::Fence, Failure>;
    /// Fence `f` of process `holder` opened in process `p` as an application gets it: the
    /// holder shares it (an NT handle in its table), the handle is duplicated into `p`'s table
    /// (`DuplicateHandle`, the broker's), `p` opens it, and each side closes its NT handle.
    /// `id` is the number the seam records the opened fence under (the seam alone decides
    /// it): a backend that names the fence elsewhere (another process's server) uses it.
    fn fence_open(
        &self,
        holder: usize,
        f: &Self::Fence,
        p: usize,
        id: FenceRef,
    ) -> Result<Self::Fence, Failure>;
    /// Destroys fence `f` of process `p`.
    fn fence_destroy(&self, p: usize, f: &Self::Fence) -> Result<(), Failure>;
    /// A blocking CPU wait of process `p` for `f` to reach `value`.
    fn fence_cpu_wait(
        &self,
        p: usize,
        f: &Self::Fence,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure>;
    /// Signals fence `f` of process `p` to `value` from the CPU.
    fn fence_signal(&self, p: usize, f: &Self::Fence, value: u64) -> Result<(), Failure>;
    /// A CPU wait of process `p` for `f` to reach `value` in event form, which stops when
    /// `stop` is set.
    fn fence_wait_event(
        &self,
        p: usize,
        f: &Self::Fence,
        value: u64,
        stop: &Arc<AtomicBool>,
    ) -> Result<Self::Event, Failure>;
    /// The outcome of event wait `e`, if it is signalled, waiting up to `timeout`.
    fn event_poll(&self, e: &Self::Event, timeout: Duration) -> Option<WaitResult>;
    /// Whether a GPU queue of [`Fences`](super::Fences) can be made (`Err`: why not).
    fn gpu_queue_allowed(&self) -> Result<(), Failure> {
        Ok(())
    }
    /// The process of queue `q`.
    fn queue_process(&self, q: UmQueueRef) -> Result<usize, Failure>;
    /// Submits `ops` (not empty) on queue `q`, in order; the progress value of the last
    /// submission.
    fn batch(&mut self, q: UmQueueRef, ops: &[QueueOp]) -> Result<u64, Failure>;

    /// Reserves `bytes` of process `p`'s GPU VA space at `base` (0: the OS chooses).
    fn va_reserve(&self, p: ProcessRef, base: u64, bytes: u64) -> Result<u64, Failure>;
    /// Maps `pages` of buffer `b` read-write at `va`, returning once the paging is done.
    fn va_map(&mut self, b: BufferRef, pages: Pages, va: u64) -> Result<(), Failure>;
    /// Frees the range of `bytes` at `base` that process `p` reserved.
    fn va_free(&self, p: ProcessRef, base: u64, bytes: u64) -> Result<(), Failure>;
}

/// The gate of word `offset` of buffer `b` for a queue of `process`: a native fence of the
/// buffer's process at the word's value, made on first use.
fn gate_for<S: AppUmd>(
    s: &mut S,
    process: usize,
    b: BufferRef,
    offset: u64,
) -> Result<usize, Failure> {
    s.gpu_address(b, offset, 8)?;
    if let Some((i, _)) = s.objects().gate_of(b, offset) {
        return Ok(i);
    }
    if s.buffer_process(b)? != process {
        return Err(Failure::Unsupported(
            "a GPU wait on another process's memory (a gate is a native fence of the buffer's \
             process)"
                .into(),
        ));
    }
    let initial = s.word_load(b, offset)?;
    let fence = s.fence_create(process, initial, false)?;
    let gates = &mut s.objects_mut().gates;
    gates.push(Gate {
        process,
        buffer: b.0,
        offset,
        fence,
    });
    Ok(gates.len() - 1)
}

/// [`UserModeSubmission::submit`] through the UMD: `work`
/// in batches, a `WaitAtLeast` a GPU wait on its word's gate; since a batch's waits come
/// before its packets, a wait after packets opens a new batch. The last batch's progress
/// value.
pub(crate) fn submit_work<S: AppUmd>(
    s: &mut S,
    q: UmQueueRef,
    work: &[Work],
) -> Result<u64, Failure> {
    let process = s.queue_process(q)?;
    let mut batches: Vec<(Vec<QueueOp>, Vec<Work>)> = vec![(Vec::new(), Vec::new())];
    for w in work {
        if let Work::WaitAtLeast {
            buffer,
            offset,
            value,
        } = *w
        {
            let g = gate_for(s, process, buffer, offset)?;
            if batches.last().is_some_and(|b| !b.1.is_empty()) {
                batches.push((Vec::new(), Vec::new()));
            }
            if let Some(b) = batches.last_mut() {
                b.0.push(QueueOp::Wait(FenceId::Gate(g), value));
            }
        } else if let Some(b) = batches.last_mut() {
            b.1.push(*w);
        }
    }
    let mut last = None;
    for (waits, items) in batches {
        let cmds = super::encode_work(&items, |b, off, bytes| s.gpu_address(b, off, bytes))?;
        let mut ops = waits;
        ops.extend(cmds.into_iter().map(QueueOp::Cmd));
        if !ops.is_empty() {
            last = Some(s.batch(q, &ops)?);
        }
    }
    last.ok_or_else(|| Failure::Backend("nothing to submit".into()))
}

/// [`UserModeSubmission::write_buffer`] through the
/// UMD: the store happens, and a GPU wait queued on the word (its gate) is released by
/// signalling the gate's fence to the value from the CPU, the documented way to wake a GPU
/// wait from user mode.
pub(crate) fn write_word<S: AppUmd>(
    s: &mut S,
    b: BufferRef,
    offset: u64,
    value: u64,
) -> Result<(), Failure> {
    s.word_store(b, offset, value)?;
    match s.objects().gate_of(b, offset) {
        Some((_, g)) => s.fence_signal(g.process, &g.fence, value),
        None => Ok(()),
    }
}

impl<S: AppUmd> AllocationUsage for S {
    fn create_tracked(&mut self, p: ProcessRef, bytes: u64) -> Result<TrackedRef, Failure> {
        let (buf, size) = self.buffer_create(p.0, bytes)?;
        Ok(self.objects_mut().tracked.push(p.0, size, buf))
    }

    /// The gate's wait goes just before the batch on the same queue, which runs in order.
    fn submit_tracked(&mut self, q: UmQueueRef, batch: TrackedBatch<'_>) -> Result<u64, Failure> {
        let TrackedBatch { gate, work } = batch;
        if work.is_empty() {
            return Err(Failure::Backend("no tracked work to submit".into()));
        }
        if let Some((buffer, offset, value)) = gate {
            let g = gate_for(self, self.queue_process(q)?, buffer, offset)?;
            self.batch(q, &[QueueOp::Wait(FenceId::Gate(g), value)])?;
        }
        self.buffer_work(q, work)
    }

    fn lock_tracked(&mut self, b: TrackedRef, flags: u32) -> Result<LockOutcome, Failure> {
        let (p, buf) = self.objects().tracked.get(b)?;
        let out = match self.buffer_lock(p, buf, flags)? {
            Ok(view) => {
                self.objects().tracked.set_view(b, Some(view));
                LockOutcome::Mapped
            }
            Err(o) => o,
        };
        self.check_halt()?;
        Ok(out)
    }

    fn read_tracked(&self, b: TrackedRef, offset: u64) -> Result<u64, Failure> {
        (self.objects().tracked).with_view(b, offset, |v| S::view_load(v, offset))
    }

    fn write_tracked(&mut self, b: TrackedRef, offset: u64, value: u64) -> Result<(), Failure> {
        (self.objects().tracked).with_view(b, offset, |v| S::view_store(v, offset, value))
    }

    fn unlock_tracked(&mut self, b: TrackedRef) -> Result<(), Failure> {
        let (p, buf) = self.objects().tracked.get(b)?;
        self.buffer_unlock(p, buf)?;
        self.objects().tracked.set_view(b, None);
        Ok(())
    }

    fn tracked_info(&self, b: TrackedRef) -> Result<TrackedInfo, Failure> {
        let (p, buf) = self.objects().tracked.get(b)?;
        self.buffer_status(p, buf)
    }

    fn destroy_tracked(&mut self, b: TrackedRef) -> Result<(), Failure> {
        let (p, buf) = self.objects_mut().tracked.take_with_process(b)?;
        self.buffer_destroy(p, buf)?;
        self.check_halt()
    }
}

impl<S: AppUmd> GpuVaPlacement for S {
    fn reserve_va(&mut self, p: ProcessRef, base: u64, bytes: u64) -> Result<u64, Failure> {
        let va = self.va_reserve(p, base, bytes)?;
        self.objects_mut().va_ranges.push((p.0, va, bytes));
        Ok(va)
    }

    fn map_va(&mut self, b: BufferRef, pages: Pages, va: u64) -> Result<(), Failure> {
        self.va_map(b, pages, va)
    }

    /// The range's size is what its reservation asked for.
    fn free_va(&mut self, p: ProcessRef, base: u64) -> Result<(), Failure> {
        let ranges = &mut self.objects_mut().va_ranges;
        let i = ranges
            .iter()
            .position(|&(rp, va, _)| rp == p.0 && va == base)
            .ok_or_else(|| {
                Failure::Backend(format!("process {} reserved no range at {base:#x}", p.0))
            })?;
        let (_, _, bytes) = ranges.remove(i);
        self.va_free(p, base, bytes)
    }

    fn fill_va(&mut self, q: UmQueueRef, va: u64, pattern: u64) -> Result<u64, Failure> {
        self.batch(q, &[QueueOp::Cmd(super::gpuva::fill_at(va, pattern))])
    }
}

/// How a wait on a queue's progress ended, as the UMD reports it.
pub(crate) enum QueueWait {
    /// The progress value was reached.
    Reached,
    /// The wait timed out (the OS's wait timeout).
    TimedOut,
    /// The device was removed (`STATUS_DEVICE_REMOVED`, the C API's `DEVICE_LOST`).
    Removed,
    /// Any other failure.
    Failed(Failure),
}

/// The processes and queues of one application's UMD, as the backend calls them. A failed
/// call is already the [`Failure`] the case sees.
pub(crate) trait AppQueues {
    /// Opens a process (its D3D device) on started adapter `i`.
    fn process_open(&mut self, i: usize) -> Result<ProcessRef, Failure>;
    /// A second device in `p`'s process, named as a process of its own (see
    /// [`UserModeSubmission::open_sibling_device`]). Default: unsupported.
    fn process_sibling(&mut self, p: ProcessRef) -> Result<ProcessRef, Failure> {
        let _ = p;
        Err(Failure::Unsupported(
            "a second device in one process (D3DKMTCreateDevice twice)".into(),
        ))
    }
    /// Process `p` ends as `how` says, its queues still open.
    fn process_end(&mut self, p: ProcessRef, how: ProcessEnd) -> Result<(), Failure>;
    /// A plain buffer of `bytes` for `p`, zeroed.
    fn plain_create(&mut self, p: ProcessRef, bytes: u64) -> Result<BufferRef, Failure>;
    /// A queue of `p` as `new` describes.
    fn queue_create(&mut self, p: ProcessRef, new: NewQueue) -> Result<UmQueueRef, Failure>;
    /// Waits until queue `q`'s progress reaches `value`.
    fn queue_wait(&mut self, q: UmQueueRef, value: u64) -> Result<QueueWait, Failure>;
    /// The UMD's view of queue `q` (its last one once closed).
    fn queue_status(&self, q: UmQueueRef) -> Result<UmQueueInfo, Failure>;
    /// The UMD closes queue `q`, which keeps its last status.
    fn queue_close(&mut self, q: UmQueueRef) -> Result<(), Failure>;
    /// What the UMD's CPU mapping of queue `q`'s doorbell status page reads (`None`: it has
    /// no doorbell).
    fn queue_doorbell(&self, q: UmQueueRef) -> Result<Option<DoorbellStatus>, Failure>;
    /// Runs `lanes` at the same time, one thread each (step mode: one after another).
    fn churn_lanes(&mut self, lanes: &[ChurnLane]) -> Result<Vec<ChurnReport>, Failure>;
}

impl<S: AppUmd + AppQueues> UserModeSubmission for S {
    fn open_process(&mut self, i: usize) -> Result<ProcessRef, Failure> {
        self.process_open(i)
    }

    fn open_sibling_device(&mut self, p: ProcessRef) -> Result<ProcessRef, Failure> {
        self.process_sibling(p)
    }

    fn end_process(&mut self, p: ProcessRef, how: ProcessEnd) -> Result<(), Failure> {
        self.process_end(p, how)
    }

    fn create_buffer(&mut self, p: ProcessRef, bytes: u64) -> Result<BufferRef, Failure> {
        self.plain_create(p, bytes)
    }

    fn read_buffer(&self, b: BufferRef, offset: u64) -> Result<u64, Failure> {
        self.word_load(b, offset)
    }

    /// The store happens and releases the word's gate (`write_word`).
    fn write_buffer(&mut self, b: BufferRef, offset: u64, value: u64) -> Result<(), Failure> {
        write_word(self, b, offset, value)
    }

    fn create_queue(&mut self, p: ProcessRef, new: NewQueue) -> Result<UmQueueRef, Failure> {
        self.queue_create(p, new)
    }

    /// A `WaitAtLeast` becomes a GPU wait on its word's gate (`submit_work`).
    fn submit(&mut self, q: UmQueueRef, work: &[Work]) -> Result<u64, Failure> {
        submit_work(self, q, work)
    }

    /// A timeout or a removed device that the machine's fault explains is the fault.
    fn wait_progress(&mut self, q: UmQueueRef, value: u64) -> Result<WaitResult, Failure> {
        let w = self.queue_wait(q, value)?;
        if matches!(w, QueueWait::Reached) {
            return Ok(WaitResult::Satisfied);
        }
        self.check_halt()?;
        match w {
            QueueWait::Reached => Ok(WaitResult::Satisfied),
            QueueWait::TimedOut => Ok(WaitResult::TimedOut),
            QueueWait::Removed => Ok(WaitResult::Abandoned),
            QueueWait::Failed(e) => Err(e),
        }
    }

    fn queue_info(&self, q: UmQueueRef) -> Result<UmQueueInfo, Failure> {
        self.queue_status(q)
    }

    fn close_queue(&mut self, q: UmQueueRef) -> Result<(), Failure> {
        self.queue_close(q)
    }

    fn doorbell_status(&self, q: UmQueueRef) -> Result<DoorbellStatus, Failure> {
        self.queue_doorbell(q)?
            .ok_or_else(|| crate::backend::umd_queue::no_doorbell(q))
    }

    fn churn(&mut self, lanes: &[ChurnLane]) -> Result<Vec<ChurnReport>, Failure> {
        self.churn_lanes(lanes)
    }
}
