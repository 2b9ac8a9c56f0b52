//! The kernel-mode path: command buffers submitted through `D3DKMTSubmitCommandToHwQueue`
//! ([`KernelQueue`], UM-01; also the user-mode queue's fallback).

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;

use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::cmd::{Command, MAX_INDIRECT};

use super::batch::{batch_bytes, encodes_whole, expand_ops, report, trace_timestamp};
use super::config::{QueueConfig, SubmitError, TimelineId};
use super::progress::kernel_hw_queue;
use crate::fencelog::{FenceTrace, LogCursor, Op};
use crate::kmt::{
    Allocation, AllocationCpu, FenceCpu, Kmt, KmtHandle, NtStatus, QueueProgress,
    STATUS_INSUFFICIENT_RESOURCES,
};
use crate::packets::{store_command, Packets, Refused, WordBudget, WordSink};

// ---------------------------------------------------------------------------------------------
// Kernel-mode path
// ---------------------------------------------------------------------------------------------

/// Command buffers a kernel-mode path rotates through before it considers waiting. A full
/// buffer is replaced by the next one in the ring if the GPU is done with it, else by a new
/// one while there are fewer than this; past it the path waits for the oldest buffer only when
/// that buffer's work cannot be held behind a wait (see [`MAX_HELD_BYTES`]).
pub(super) const MAX_COMMAND_BUFFERS: usize = 8;

/// Most command-buffer bytes a kernel-mode path holds while its oldest busy buffer may be
/// behind a GPU wait it cannot see the end of: the same 4 MiB the KMD holds for a process
/// behind a wait (`kmem::BACKLOG_PROCESS_BYTES`, docs/usermode-submission.md), so the UMD does
/// not stop first. Past it a submission is refused at once ([`SubmitError::Full`]): waiting
/// could wait for work the caller has yet to release.
pub(super) const MAX_HELD_BYTES: u64 = 4 << 20;

/// Most command buffers held that way, whatever their size (small test buffers).
pub(super) const MAX_HELD_BUFFERS: usize = 1024;

/// One command buffer of a [`KernelPath`] and the last progress value whose commands are in it.
pub(super) struct CommandBuffer<M> {
    pub(super) alloc: Allocation<M>,
    pub(super) last_use: u64,
}

/// Stores words into a command buffer from byte offset `off`, within a budget of `room` words
/// (the size its caller measured).
struct BufferSink<'a, M: AllocationCpu> {
    mem: &'a M,
    off: u64,
    budget: WordBudget,
}

impl<M: AllocationCpu> BufferSink<'_, M> {
    #[inline(always)]
    fn store(&mut self, word: u64) {
        self.mem.store(self.off, word);
        self.off = self.off.wrapping_add(8);
    }
}

impl<M: AllocationCpu> WordSink for BufferSink<'_, M> {
    #[inline(always)]
    fn packet(&mut self, words: &[u64]) -> bool {
        if !self.budget.take(words.len() as u64) {
            return false;
        }
        for &w in words {
            self.store(w);
        }
        true
    }

    #[inline(always)]
    fn pairs(&mut self, dwords: &[u32]) -> bool {
        if !self.budget.take((dwords.len() / 2) as u64) {
            return false;
        }
        for p in dwords.chunks_exact(2) {
            self.store(crate::packets::pair(p, 0).unwrap_or(0));
        }
        true
    }

    #[inline(always)]
    fn nop(&mut self, len: u16) -> bool {
        if !self.budget.take(u64::from(len)) {
            return false;
        }
        self.store(rvgpu_hw::cmd::header(rvgpu_hw::cmd::Opcode::Nop, 0, len));
        for _ in 1..len {
            self.store(0);
        }
        true
    }
}

/// A kernel-mode hardware queue and its command buffers, without the thunks (its owner passes
/// them): shared by [`KernelQueue`] and the fallback of [`UserQueue`].
pub(super) struct KernelPath<K: Kmt> {
    /// The kernel-mode hardware queue.
    pub(super) queue: KmtHandle,
    /// Its progress fence (the OS gives every kernel-mode queue one).
    pub(super) progress: QueueProgress<K::Fence>,
    pub(super) queue_id: u32,
    /// A ring of equally sized buffers (never empty), filled in turn.
    pub(super) cbs: Vec<CommandBuffer<K::Mem>>,
    /// The buffer being filled.
    pub(super) cur: usize,
    /// Next free byte of the current buffer. Everything in `[0, head)` may still be read by
    /// the GPU; a buffer is reused from 0 only after its last submission completed.
    pub(super) head: u64,
    /// The last progress value submitted on this queue.
    pub(super) last: u64,
    /// Progress values of submissions that may wait on the GPU for something outside this
    /// queue (an OS-scheduled wait ahead of them, a `FENCE_WAIT`, an INDIRECT whose contents
    /// the UMD does not read), in submission order. One at or below a value not yet completed
    /// means that value's completion may depend on the caller: the path does not wait for it.
    pub(super) gates: VecDeque<u64>,
    /// An OS-scheduled GPU wait was queued: the next submission is held behind it.
    pub(super) wait_queued: bool,
}

impl<K: Kmt> core::fmt::Debug for KernelPath<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KernelPath")
            .field("queue", &self.queue)
            .field("queue_id", &self.queue_id)
            .field("command_buffers", &self.cbs.len())
            .field("cur", &self.cur)
            .field("head", &self.head)
            .field("last", &self.last)
            .finish()
    }
}

impl<K: Kmt> KernelPath<K> {
    pub(super) fn create(
        kmt: &K,
        context: KmtHandle,
        cfg: &QueueConfig,
    ) -> Result<Self, SubmitError> {
        if cfg.command_buffer_size < 8 || !cfg.command_buffer_size.is_multiple_of(8) {
            return Err(SubmitError::BadConfig);
        }
        let (handle, progress, queue_id) = kernel_hw_queue(kmt, context, cfg.priority)?;
        match kmt.create_allocation_as(
            cfg.command_buffer_size,
            crate::kmt::AllocationKind::Commands,
        ) {
            Ok(alloc) => Ok(Self {
                queue: handle,
                progress,
                queue_id,
                cbs: alloc::vec![CommandBuffer { alloc, last_use: 0 }],
                cur: 0,
                head: 0,
                last: 0,
                gates: VecDeque::new(),
                wait_queued: false,
            }),
            Err(e) => {
                let _ = kmt.destroy_hw_queue(handle);
                Err(e.into())
            }
        }
    }

    /// Largest command buffer of one submission.
    pub(super) fn max_bytes(&self) -> u64 {
        self.cb_size().min(MAX_INDIRECT)
    }

    /// Size of every command buffer (the first one's; the others are made alike).
    pub(super) fn cb_size(&self) -> u64 {
        self.cbs.first().map_or(0, |c| c.alloc.size)
    }

    /// Moves to a buffer the GPU is done with: the next in the ring, or a new one (up to
    /// [`MAX_COMMAND_BUFFERS`]). With every buffer busy it waits for the oldest buffer's last
    /// submission only when nothing ahead of it can wait on the GPU for the caller
    /// ([`Self::held`]); otherwise it keeps adding buffers up to [`MAX_HELD_BYTES`] and then
    /// refuses with [`SubmitError::Full`], having changed nothing.
    pub(super) fn next_buffer(&mut self, kmt: &K) -> Result<(), SubmitError> {
        let done = self.completed();
        let next = self.cur.saturating_add(1) % self.cbs.len().max(1);
        let busy = self.cbs.get(next).map_or(0, |c| c.last_use);
        if busy <= done {
            self.cur = next;
            self.head = 0;
            return Ok(());
        }
        let held = self.held(busy);
        if self.cbs.len() < MAX_COMMAND_BUFFERS || (held && self.may_hold_another()) {
            if let Ok(alloc) =
                kmt.create_allocation_as(self.cb_size(), crate::kmt::AllocationKind::Commands)
            {
                // Inserted after the current one, so the ring stays in submission order.
                let at = self.cur.saturating_add(1);
                self.cbs.insert(at, CommandBuffer { alloc, last_use: 0 });
                self.cur = at;
                self.head = 0;
                return Ok(());
            }
            // No memory for another: as with every buffer busy.
        }
        if held {
            return Err(SubmitError::Full);
        }
        kmt.wait_for_fence(self.progress.fence, busy)?;
        self.cur = next;
        self.head = 0;
        Ok(())
    }

    /// Whether the completion of progress value `value` may wait on the GPU for something
    /// outside this queue: a submission at or below it that may wait
    /// ([`gates`](Self::gates)) has not completed. Completed gates are forgotten.
    pub(super) fn held(&mut self, value: u64) -> bool {
        let done = self.completed();
        while self.gates.front().is_some_and(|&g| g <= done) {
            self.gates.pop_front();
        }
        self.gates.front().is_some_and(|&g| g <= value)
    }

    /// Room for one more command buffer under [`MAX_HELD_BYTES`] and [`MAX_HELD_BUFFERS`].
    fn may_hold_another(&self) -> bool {
        let count = self.cbs.len().saturating_add(1);
        let bytes = u64::try_from(count)
            .unwrap_or(u64::MAX)
            .saturating_mul(self.cb_size());
        count <= MAX_HELD_BUFFERS && bytes <= MAX_HELD_BYTES
    }

    pub(super) fn completed(&self) -> u64 {
        self.progress.cpu.value()
    }

    /// One `SubmitCommandToHwQueue` with the next progress value; `may_wait` says whether the
    /// submission may wait on the GPU for something outside the queue (it becomes a gate). A
    /// refusal goes to [`Self::refused`]. Inlined: on the usual batch's path it is the thunk
    /// call and two stores.
    #[inline(always)]
    pub(super) fn submit_one(
        &mut self,
        kmt: &K,
        gpu: GpuVa,
        bytes: u64,
        may_wait: bool,
    ) -> Result<u64, SubmitError> {
        let len = u32::try_from(bytes).map_err(|_| SubmitError::TooLarge)?;
        // The D3DKMT layer takes the raw address.
        let gpu = gpu.get();
        let value = self.last.checked_add(1).ok_or(SubmitError::Lost)?;
        if let Err(e) = kmt.submit_command_to_hw_queue(self.queue, value, gpu, len) {
            self.refused(kmt, value, gpu, len, e)?;
        }
        if may_wait || self.wait_queued {
            self.gates.push_back(value);
            self.wait_queued = false;
        }
        self.last = value;
        Ok(value)
    }

    /// The KMD refused submission `value` with `e`. While it refuses for room
    /// (`STATUS_INSUFFICIENT_RESOURCES`: it holds as much as it will) and earlier work is
    /// outstanding, waits for the *oldest* outstanding submission and submits again, unless
    /// that one may be held behind a wait: then [`SubmitError::Full`] at once. Each round
    /// retires at least one submission, so the rounds are bounded by the work in flight.
    /// `Ok` once the KMD took it.
    #[cold]
    #[inline(never)]
    fn refused(
        &mut self,
        kmt: &K,
        value: u64,
        gpu: u64,
        len: u32,
        mut e: NtStatus,
    ) -> Result<(), SubmitError> {
        // The work in flight when the KMD first refused (a submission it takes at once reads
        // no fence).
        let mut rounds: Option<u64> = None;
        while e == STATUS_INSUFFICIENT_RESOURCES {
            let done = self.completed();
            let left = *rounds.get_or_insert(self.last.saturating_sub(done));
            if left == 0 || done >= self.last {
                break;
            }
            let oldest = done.saturating_add(1);
            if self.held(oldest) {
                return Err(SubmitError::Full);
            }
            rounds = Some(left.saturating_sub(1));
            kmt.wait_for_fence(self.progress.fence, oldest)?;
            match kmt.submit_command_to_hw_queue(self.queue, value, gpu, len) {
                Ok(()) => return Ok(()),
                Err(again) => e = again,
            }
        }
        Err(e.into())
    }

    /// Copies `cmds` (no INDIRECT among them, `bytes` long: [`batch_bytes`]) into the command
    /// buffer and submits them; `may_wait`: whether a FENCE_WAIT is among them.
    pub(super) fn submit_copied(
        &mut self,
        kmt: &K,
        cmds: &[Command],
        bytes: u64,
        may_wait: bool,
    ) -> Result<u64, SubmitError> {
        if bytes == 0 || bytes > self.max_bytes() {
            return Err(SubmitError::TooLarge);
        }
        if self.head.saturating_add(bytes) > self.cb_size() {
            self.next_buffer(kmt)?;
        }
        let cur = self.cur;
        let cb = &self.cbs.get(cur).ok_or(SubmitError::Lost)?.alloc;
        let start = self.head;
        // Stored straight from the commands (no staging buffer), within the `bytes` the caller
        // measured; a command that does not encode, or more words than measured, is refused.
        let mut sink = BufferSink {
            mem: &cb.mem,
            off: start,
            budget: WordBudget::new(bytes / 8),
        };
        if cmds.store(&mut sink).is_err() || sink.budget.room() != 0 {
            return Err(SubmitError::TooLarge);
        }
        let (at, off) = (cb.gpu_va, sink.off);
        self.submit_stored(kmt, at, start..off, may_wait)
    }

    /// Submits what was stored in the current buffer from `stored.start` to `stored.end`
    /// (`cb_va`: the buffer's address) and moves `head` past it.
    #[inline(always)]
    fn submit_stored(
        &mut self,
        kmt: &K,
        cb_va: u64,
        stored: core::ops::Range<u64>,
        may_wait: bool,
    ) -> Result<u64, SubmitError> {
        let bytes = stored.end.saturating_sub(stored.start);
        // The command buffer's own address plus an offset inside it.
        let at = GpuVa::new(cb_va)
            .checked_add(stored.start)
            .ok_or(SubmitError::TooLarge)?;
        let value = self.submit_one(kmt, at, bytes, may_wait)?;
        self.head = stored.end;
        if let Some(c) = self.cbs.get_mut(self.cur) {
            c.last_use = value;
        }
        Ok(value)
    }

    /// Submits a batch: runs of plain packets are copied into the command buffer; an INDIRECT
    /// becomes its own submission of the buffer it names (the KMD wraps every submission in an
    /// INDIRECT, and INDIRECTs do not nest). Returns the progress value of the last
    /// submission; an empty batch is one NOP.
    ///
    /// The usual batch (no INDIRECT, room for it in the current buffer) is checked as it is
    /// stored, straight into that room, and submitted once whole: nothing is submitted before
    /// every command went in, and what a refused batch stored lies past `head`, in space the
    /// GPU is not given. Any other batch goes to [`Self::submit_checked`], which checks it
    /// whole first.
    pub(super) fn submit(&mut self, kmt: &K, cmds: &[Command]) -> Result<u64, SubmitError> {
        let cur = self.cur;
        let start = self.head;
        let cb = &self.cbs.get(cur).ok_or(SubmitError::Lost)?.alloc;
        // Every buffer is `cb_size()` long; one submission is at most `MAX_INDIRECT`.
        let room = cb.size.saturating_sub(start).min(MAX_INDIRECT) / 8;
        let mut sink = BufferSink {
            mem: &cb.mem,
            off: start,
            budget: WordBudget::new(room),
        };
        let mut waits = false;
        let mut stored = !cmds.is_empty();
        for c in cmds {
            if matches!(c, Command::Indirect { .. }) {
                stored = false;
                break;
            }
            waits |= matches!(c, Command::FenceWait { .. });
            match store_command(c, &mut sink) {
                Ok(()) => {}
                // Refused before any size, as in the whole-batch check.
                Err(Refused::Bad) => return Err(SubmitError::BadCommand),
                Err(Refused::Room) => {
                    stored = false;
                    break;
                }
            }
        }
        if !stored {
            return self.submit_checked(kmt, cmds);
        }
        let (at, off) = (cb.gpu_va, sink.off);
        self.submit_stored(kmt, at, start..off, waits)
    }

    /// [`Self::submit`] of a batch that is empty, has INDIRECTs or does not fit in the current
    /// buffer's room.
    #[inline(never)]
    fn submit_checked(&mut self, kmt: &K, cmds: &[Command]) -> Result<u64, SubmitError> {
        if cmds.is_empty() {
            let nop = [Command::Nop { len: 1 }];
            return self.submit_copied(kmt, &nop, batch_bytes(&nop), false);
        }
        // One pass checks every command and every size before anything is submitted, so a
        // refused batch submits nothing; a command that does not encode is the answer before
        // any size.
        let max = self.max_bytes();
        let mut run: u64 = 0;
        let mut indirect = false;
        let mut too_large = false;
        // Whether the batch waits: decided in this pass, so the usual batch's copy below
        // needs no pass of its own for it.
        let mut waits = false;
        for c in cmds {
            match c {
                Command::Indirect { bytes, .. } => {
                    too_large |= *bytes == 0 || !bytes.is_multiple_of(8) || *bytes > MAX_INDIRECT;
                    run = 0;
                    indirect = true;
                }
                other => {
                    if !encodes_whole(other) {
                        return Err(SubmitError::BadCommand);
                    }
                    waits |= matches!(other, Command::FenceWait { .. });
                    let words = u64::try_from(other.len()).unwrap_or(u64::MAX);
                    run = run.saturating_add(words.saturating_mul(8));
                    too_large |= run > max;
                }
            }
        }
        if too_large {
            return Err(SubmitError::TooLarge);
        }
        if !indirect {
            // One copy of the whole of it (into the next buffer).
            return self.submit_copied(kmt, cmds, run, waits);
        }
        self.submit_split(kmt, cmds, run)
    }

    /// [`Self::submit`] of a checked batch with INDIRECTs: each INDIRECT is its own submission,
    /// each run of plain packets between them one copy; `tail` is the size of the run after the
    /// last INDIRECT.
    #[inline(never)]
    fn submit_split(&mut self, kmt: &K, cmds: &[Command], tail: u64) -> Result<u64, SubmitError> {
        let mut last = self.last;
        let mut start = 0usize;
        for (i, c) in cmds.iter().enumerate() {
            if let Command::Indirect { addr, bytes } = c {
                if let Some(run) = cmds.get(start..i).filter(|r| !r.is_empty()) {
                    self.submit_copied(kmt, run, batch_bytes(run), waits_in(run))?;
                }
                // What the buffer holds is the caller's: it may wait.
                last = self.submit_one(kmt, GpuVa::new(*addr), *bytes, true)?;
                start = i.saturating_add(1);
            }
        }
        if let Some(run) = cmds.get(start..).filter(|r| !r.is_empty()) {
            // `tail` is the size of exactly this run: the check pass restarts it at each
            // INDIRECT.
            last = self.submit_copied(kmt, run, tail, waits_in(run))?;
        }
        Ok(last)
    }

    pub(super) fn wait_target(&self, value: u64) -> Result<Option<(KmtHandle, u64)>, SubmitError> {
        if value > self.last {
            return Err(SubmitError::NotSubmitted);
        }
        if self.completed() >= value {
            return Ok(None);
        }
        Ok(Some((self.progress.fence, value)))
    }

    pub(super) fn wait(&self, kmt: &K, value: u64) -> Result<(), SubmitError> {
        if let Some((fence, v)) = self.wait_target(value)? {
            kmt.wait_for_fence(fence, v)?;
        }
        Ok(())
    }

    /// Queue first, then its command buffers.
    pub(super) fn destroy(&self, kmt: &K) -> Result<(), SubmitError> {
        let q = kmt.destroy_hw_queue(self.queue);
        let a = self.destroy_buffers(kmt);
        q?;
        a?;
        Ok(())
    }

    /// Destroys every command buffer; the first failure is returned, the rest still destroyed.
    pub(super) fn destroy_buffers(&self, kmt: &K) -> Result<(), NtStatus> {
        let mut first = Ok(());
        for c in &self.cbs {
            let r = kmt.destroy_allocation(c.alloc.handle);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

/// Whether a run of a batch with INDIRECTs waits (has a FENCE_WAIT).
fn waits_in(cmds: &[Command]) -> bool {
    cmds.iter().any(|c| matches!(c, Command::FenceWait { .. }))
}

/// A kernel-mode hardware queue (UM-01): commands are copied into a command buffer and
/// submitted with `SubmitCommandToHwQueue`; the KMD appends `PROGRESS(value)` itself. Progress
/// values are `1, 2, ...`; a batch with INDIRECT packets takes one value per submission it
/// needs, and [`submit`](Self::submit) returns the last.
pub struct KernelQueue<K: Kmt> {
    pub(super) kmt: K,
    /// Its progress sequence, for usage tracking ([`crate::usage`]).
    pub(super) timeline: TimelineId,
    /// Set when the queue is destroyed ([`crate::usage::Timeline::retired_flag`]).
    pub(super) retired: alloc::sync::Arc<core::sync::atomic::AtomicBool>,
    pub(super) context: KmtHandle,
    pub(super) path: KernelPath<K>,
    pub(super) trace: Option<Arc<dyn FenceTrace>>,
    pub(super) closed: bool,
}

impl<K: Kmt> core::fmt::Debug for KernelQueue<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KernelQueue")
            .field("context", &self.context)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl<K: Kmt> KernelQueue<K> {
    /// Creates a context on `config.node`, a hardware queue without `UserModeSubmission` and
    /// a command buffer of `config.command_buffer_size` bytes.
    pub fn new(kmt: K, config: &QueueConfig) -> Result<Self, SubmitError> {
        let context = kmt.create_context(config.node)?;
        match KernelPath::create(&kmt, context, config) {
            Ok(path) => Ok(Self {
                kmt,
                timeline: TimelineId::fresh(),
                retired: alloc::sync::Arc::new(core::sync::atomic::AtomicBool::new(false)),
                context,
                path,
                trace: None,
                closed: false,
            }),
            Err(e) => {
                let _ = kmt.destroy_context(context);
                Err(e)
            }
        }
    }

    /// Submits `cmds`; returns the progress value that marks their completion. The commands
    /// go to the GPU as they are: a LOG_WRITE among them faults the queue (`NoLog`: kernel-mode
    /// queues have no logs).
    pub fn submit(&mut self, cmds: &[Command]) -> Result<u64, SubmitError> {
        self.path.submit(&self.kmt, cmds)
    }

    /// Submits native-fence operations and packets (docs/logs.md#umd). A kernel-mode queue has
    /// no logs, so no LOG_WRITE is emitted; each signal and wait is still reported to the
    /// [`FenceTrace`] (with `logged: false`) once the batch is submitted.
    pub fn submit_ops(&mut self, ops: &[Op<'_>]) -> Result<u64, SubmitError> {
        let qpc = trace_timestamp(&self.kmt, self.trace.as_ref());
        let e = expand_ops(ops, LogCursor::new(), false, self.path.queue_id, qpc)?;
        let value = self.path.submit(&self.kmt, &e.cmds)?;
        report(self.trace.as_ref(), &e.ops);
        Ok(value)
    }

    /// Installs (or with `None` removes) the receiver of the "queued" events.
    pub fn set_fence_trace(&mut self, trace: Option<Arc<dyn FenceTrace>>) {
        self.trace = trace;
    }

    /// Blocks until the progress fence reaches `value`.
    pub fn wait(&self, value: u64) -> Result<(), SubmitError> {
        self.path.wait(&self.kmt, value)
    }

    /// What to wait on for `value`: `None` if it completed, else the progress fence and the
    /// value it must reach (for callers that wait with a timeout themselves).
    pub fn wait_target(&self, value: u64) -> Result<Option<(KmtHandle, u64)>, SubmitError> {
        self.path.wait_target(value)
    }

    /// The progress fence's current value.
    pub fn completed(&self) -> u64 {
        self.path.completed()
    }

    /// Its progress sequence's id ([`crate::usage::Timeline`]).
    pub fn timeline(&self) -> TimelineId {
        self.timeline
    }

    /// Set once the queue is destroyed (its work is over then).
    pub fn retired_flag(&self) -> alloc::sync::Arc<core::sync::atomic::AtomicBool> {
        alloc::sync::Arc::clone(&self.retired)
    }

    /// The last progress value submitted.
    pub fn last_submitted(&self) -> u64 {
        self.path.last
    }

    /// MF-03 GPU wait, OS-scheduled: every batch submitted after this call waits until
    /// `fence` (a monitored fence's D3DKMT handle) reaches `value`
    /// (`D3DKMTSubmitWaitForSyncObjectsToHwQueue`, the hardware-queue form of
    /// `WaitForSynchronizationObjectFromGpu`). Returns at once.
    ///
    /// MF-03 asks the UMD to flush its pending work first. This queue has none: every
    /// [`submit`](Self::submit) hands its batch to the OS before it returns (a command buffer is
    /// never kept back), so the batches before the wait are already ahead of it in the OS's
    /// list and the flush is the thunk alone. The wait holds only later work of this queue; the
    /// GPU is not blocked, and a CPU [`wait`](Self::wait) on a value submitted behind an
    /// unsatisfied GPU wait blocks until it is satisfied. [`submit`](Self::submit) never waits
    /// behind it: the queue holds up to `MAX_HELD_BYTES` of command buffers of later batches,
    /// then refuses with [`SubmitError::Full`].
    pub fn gpu_wait_monitored(&mut self, fence: KmtHandle, value: u64) -> Result<(), SubmitError> {
        self.kmt
            .submit_wait_to_hw_queue(self.path.queue, &[(fence, value)])?;
        self.path.wait_queued = true;
        Ok(())
    }

    /// MF-03 GPU signal for an engine that cannot write the fence through its VA: a software
    /// signal packet (`D3DKMTSubmitSignalSyncObjectsToHwQueue`, the hardware-queue form of
    /// `SignalSynchronizationObjectFromGpu`): the OS sets `fence` to `value` once every batch
    /// submitted before this call completed. Returns at once. An engine that can write the
    /// fence signals it in the stream instead: `Command::FenceSignal` to the fence's GPU VA in a
    /// [`submit`](Self::submit) batch (the fence-write command).
    pub fn gpu_signal_monitored_os(
        &mut self,
        fence: KmtHandle,
        value: u64,
    ) -> Result<(), SubmitError> {
        self.kmt
            .submit_signal_to_hw_queue(self.path.queue, &[(fence, value)])?;
        Ok(())
    }

    /// The kernel-mode hardware queue's D3DKMT handle.
    pub fn queue_handle(&self) -> KmtHandle {
        self.path.queue
    }

    /// The queue's progress fence (a monitored fence's D3DKMT handle: another queue may wait
    /// on it with [`gpu_wait_monitored`](Self::gpu_wait_monitored)).
    pub fn progress_fence(&self) -> KmtHandle {
        self.path.progress.fence
    }

    /// The device's queue id (from [`HwQueuePdd`](rvgpu_hw::pdd::HwQueuePdd)).
    pub fn queue_id(&self) -> u32 {
        self.path.queue_id
    }

    /// The thunks.
    pub fn kmt(&self) -> &K {
        &self.kmt
    }

    /// Waits for the last submission, then destroys queue, command buffer and context.
    pub fn close(mut self) -> Result<(), SubmitError> {
        let waited = self.wait(self.path.last);
        let destroyed = self.teardown();
        waited?;
        destroyed
    }

    pub(super) fn teardown(&mut self) -> Result<(), SubmitError> {
        if core::mem::replace(&mut self.closed, true) {
            return Ok(());
        }
        let p = self.path.destroy(&self.kmt);
        if p.is_ok() {
            // As for a user-mode queue: a destroyed queue no longer runs.
            self.retired
                .store(true, core::sync::atomic::Ordering::Release);
        }
        let c = self.kmt.destroy_context(self.context);
        p?;
        c?;
        Ok(())
    }
}

impl<K: Kmt> Drop for KernelQueue<K> {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}
