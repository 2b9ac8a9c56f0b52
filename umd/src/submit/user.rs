//! The user-mode queue: its ring and doorbell, the submission hot path (UM-16), the doorbell's
//! status loop (UM-19) and the fallback to the kernel-mode path.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;

use rvgpu_hw::cmd::{decode, decode_header, Command};
use rvgpu_hw::pdd::{DoorbellPdd, DoorbellValue};
use rvgpu_hw::queue::{RingControl, RING_MAX, RING_MIN};
use zerocopy::IntoBytes;

use super::batch::{expand_ops, report, trace_timestamp};
use super::config::{QueueConfig, SubmissionPath, SubmitError, TimelineId};
use super::inflight::InFlight;
use super::kernel::KernelPath;
use super::progress::{create_hw_queue, ClosingPacket, Progress};
use crate::fencelog::{has_log_writes, without_log_writes, FenceTrace, LogCursor, Op};
use crate::kmt::{
    Allocation, AllocationCpu, Doorbell, DoorbellCpu, DoorbellStatus, HwQueue, Kmt, KmtHandle,
    NtStatus, RingView,
};
use crate::packets::{Packets, Refused};
use crate::retain::RetainList;
use crate::ring::{RingError, RingWriter};

// ---------------------------------------------------------------------------------------------
// User-mode queue
// ---------------------------------------------------------------------------------------------

/// How many times one submission rings again after `DISCONNECTED_RETRY` and a successful
/// reconnect before it gives up on the doorbell and falls back (UM-19 says "repeat"; the bound
/// only stops a livelock of two queues victimising each other forever).
pub const MAX_RETRIES: u32 = 1024;

/// How many times the back-pressure wait polls the read pointer after the progress fence
/// showed the space free (the CMP stores `read_ptr` right after the packet's effects).
pub(super) const READ_PTR_POLLS: u32 = 1 << 20;

/// The kernel-mode side after a fallback.
pub(super) struct Fallback<K: Kmt> {
    pub(super) path: KernelPath<K>,
    /// The user-mode progress fence's value when the ring became quiescent: every value up to
    /// it completed on the user-mode queue.
    pub(super) user_completed: u64,
    /// `(caller's value, kernel-mode queue's value)` of batches not yet seen complete, in
    /// submission order.
    pub(super) pending: VecDeque<(u64, u64)>,
}

impl<K: Kmt> Fallback<K> {
    /// Drops the pending batches that completed.
    pub(super) fn prune(&mut self) {
        let done = self.path.completed();
        while self.pending.front().is_some_and(|&(_, phys)| phys <= done) {
            self.pending.pop_front();
        }
    }
}

/// A user-mode hardware queue: its own ring, ring control and doorbell (UM-16, UM-19), with
/// the kernel-mode fallback. See the module documentation for the protocol.
pub struct UserQueue<K: Kmt> {
    pub(super) kmt: K,
    /// Its progress sequence (one across a fallback), for usage tracking ([`crate::usage`]).
    pub(super) timeline: TimelineId,
    /// Set when the queue is destroyed ([`crate::usage::Timeline::retired_flag`]).
    pub(super) retired: alloc::sync::Arc<core::sync::atomic::AtomicBool>,
    /// Allocations destroyed while this queue's work (which the OS cannot see) still used
    /// them ([`UserQueue::retain_until`]).
    pub(super) retained: RetainList,
    pub(super) config: QueueConfig,
    pub(super) context: KmtHandle,
    /// The user-mode hardware queue.
    pub(super) queue: KmtHandle,
    /// What its batches complete on.
    pub(super) progress: Progress<K::Fence>,
    /// The packet that closes each batch.
    pub(super) closing: ClosingPacket,
    pub(super) queue_id: u32,
    pub(super) ring: Allocation<K::Mem>,
    pub(super) control: Allocation<K::Mem>,
    /// `None` once destroyed by a fallback.
    pub(super) doorbell: Option<Doorbell<K::Doorbell>>,
    /// The doorbell status that made the queue give its doorbell up (the reason the KMD or
    /// the OS disconnected it).
    pub(super) doorbell_end: Option<DoorbellStatus>,
    pub(super) ring_value: DoorbellValue,
    pub(super) writer: RingWriter<RingView<K::Mem>>,
    /// The last progress value picked (N).
    pub(super) last: u64,
    /// Where the batches the ring may still hold end.
    pub(super) in_flight: InFlight,
    /// The doorbell could not be connected at creation: fall back at the first submission.
    pub(super) connect_failed: bool,
    pub(super) fallback: Option<Fallback<K>>,
    /// The next index of the user-mode queue's wait and signal logs (LOG-02).
    pub(super) cursor: LogCursor,
    /// Receiver of the "queued" events.
    pub(super) trace: Option<Arc<dyn FenceTrace>>,
    pub(super) lost: bool,
    pub(super) closed: bool,
}

/// What [`UserQueue::new`] created so far, destroyed in reverse if a later step fails.
pub(super) struct Partial<'a, K: Kmt> {
    pub(super) kmt: &'a K,
    pub(super) context: Option<KmtHandle>,
    pub(super) queue: Option<KmtHandle>,
    /// The queue's own progress fence (when the OS gave it none).
    pub(super) fence: Option<KmtHandle>,
    pub(super) allocations: [Option<KmtHandle>; 2],
    pub(super) doorbell: Option<KmtHandle>,
}

impl<K: Kmt> Partial<'_, K> {
    pub(super) fn disarm(&mut self) {
        self.context = None;
        self.queue = None;
        self.fence = None;
        self.allocations = [None, None];
        self.doorbell = None;
    }
}

impl<K: Kmt> Drop for Partial<'_, K> {
    fn drop(&mut self) {
        if let Some(d) = self.doorbell {
            let _ = self.kmt.destroy_doorbell(d);
        }
        if let Some(q) = self.queue {
            let _ = self.kmt.destroy_hw_queue(q);
        }
        if let Some(f) = self.fence {
            let _ = self.kmt.destroy_native_fence(f);
        }
        for a in self.allocations.iter().flatten() {
            let _ = self.kmt.destroy_allocation(*a);
        }
        if let Some(c) = self.context {
            let _ = self.kmt.destroy_context(c);
        }
    }
}

impl<K: Kmt> core::fmt::Debug for UserQueue<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("UserQueue")
            .field("context", &self.context)
            .field("queue", &self.queue)
            .field("progress_fence", &self.progress.fence())
            .field("queue_id", &self.queue_id)
            .field("doorbell", &self.doorbell.as_ref().map(|d| d.handle))
            .field("ring_value", &self.ring_value)
            .field("write_ptr", &self.writer.write_ptr())
            .field("last", &self.last)
            .field("path", &self.path())
            .field("kernel_path", &self.fallback.as_ref().map(|f| &f.path))
            .field("lost", &self.lost)
            .finish_non_exhaustive()
    }
}

impl<K: Kmt> UserQueue<K> {
    /// Creates context, user-mode hardware queue (and, if the OS gave it no progress fence, a
    /// native fence of its own for that), ring and ring control, and doorbell, and connects
    /// the doorbell. A failed connect (or a doorbell that reads
    /// `DISCONNECTED_ABORT`) is not an error: the queue then submits through the kernel-mode
    /// path from its first submission on (UM-19).
    pub fn new(kmt: K, config: &QueueConfig) -> Result<Self, SubmitError> {
        let size = config.ring_size;
        if !size.is_power_of_two() || !(RING_MIN..=RING_MAX).contains(&size) {
            return Err(SubmitError::BadConfig);
        }
        let mut partial = Partial {
            kmt: &kmt,
            context: None,
            queue: None,
            fence: None,
            allocations: [None, None],
            doorbell: None,
        };
        let context = kmt.create_context(config.node)?;
        partial.context = Some(context);
        let (
            HwQueue {
                handle: queue,
                progress,
            },
            queue_id,
        ) = create_hw_queue(&kmt, context, true, config.priority)?;
        partial.queue = Some(queue);
        let progress = match progress {
            Some(p) => Progress::Os(p),
            None => {
                let fence = kmt.create_native_fence(0)?;
                partial.fence = Some(fence.kmt);
                Progress::Own {
                    cpu: kmt.native_fence_cpu(&fence)?,
                    fence,
                }
            }
        };
        let closing = progress.closing_packet()?;
        let ring =
            kmt.create_allocation_as(u64::from(size), crate::kmt::AllocationKind::Commands)?;
        partial.allocations[0] = Some(ring.handle);
        let control =
            kmt.create_allocation_as(RingControl::SIZE, crate::kmt::AllocationKind::RingControl)?;
        partial.allocations[1] = Some(control.handle);
        // Fresh ring control: both pointers at 0 (the allocation need not be zeroed).
        control.mem.store(RingControl::WRITE_PTR, 0);
        control.mem.store(RingControl::READ_PTR, 0);

        // The KMD takes the ring and its control block from the allocations; the private data
        // says how much of the ring allocation is ring (16 bytes at most, BR-96).
        let mut pdd = DoorbellPdd::for_ring(size);
        let doorbell =
            kmt.create_doorbell(queue, ring.handle, control.handle, pdd.as_mut_bytes())?;
        partial.doorbell = Some(doorbell.handle);
        let ring_value =
            DoorbellValue::from_u32(pdd.ring_value).ok_or(SubmitError::BadPrivateData)?;
        // The global doorbell is rung with the id the doorbell's private data names.
        let queue_id = match ring_value {
            DoorbellValue::QueueId => pdd.queue_id,
            DoorbellValue::WritePtr => queue_id,
        };
        let view = RingView {
            ring: ring.mem.clone(),
            control: control.mem.clone(),
        };
        let writer = RingWriter::new(view, size, 0)?;

        let connect_failed = kmt.connect_doorbell(doorbell.handle).is_err()
            || matches!(
                doorbell.cpu.status(),
                DoorbellStatus::DisconnectedAbort | DoorbellStatus::Unknown(_)
            );
        partial.disarm();
        drop(partial);
        Ok(Self {
            kmt,
            timeline: TimelineId::fresh(),
            retired: alloc::sync::Arc::new(core::sync::atomic::AtomicBool::new(false)),
            config: *config,
            context,
            queue,
            progress,
            closing,
            queue_id,
            ring,
            control,
            doorbell: Some(doorbell),
            doorbell_end: None,
            ring_value,
            writer,
            last: 0,
            in_flight: InFlight::new(u64::from(size / 8), closing.bytes() / 8),
            connect_failed,
            fallback: None,
            cursor: LogCursor::new(),
            trace: None,
            lost: false,
            closed: false,
            retained: RetainList::default(),
        })
    }

    /// Whether the OS sees this queue's work: it gave the queue its progress fence (the
    /// pages), so VidMm defers destroying memory the work uses (AL-03). 24H2 gives a
    /// user-mode queue none; after a fallback the later work is the kernel-mode queue's, but
    /// earlier batches stay unseen.
    pub fn os_sees_work(&self) -> bool {
        matches!(self.progress, Progress::Os(_))
    }

    /// AL-03 done by the UMD for work the OS cannot see ([`crate::retain`]): holds `r` until
    /// this queue completes `value` (or is destroyed). Never blocks but in the rare case that
    /// there is no room to hold it (then it waits for `value` and lets go at once).
    pub fn retain_until(&self, r: alloc::sync::Arc<crate::retain::Retained>, value: u64) {
        if let Err(r) = self.retained.push(r, value) {
            let _ = self.wait(value);
            let _ = r.release(&self.kmt);
        }
        self.reap_retained();
    }

    /// Lets go of the retained allocations whose work completed.
    pub fn reap_retained(&self) {
        self.retained.reap(&self.kmt, self.completed(), self.closed);
    }

    /// Submits `cmds` (UM-16, UM-19); returns the progress value that marks their completion.
    ///
    /// The commands are written as they are; the caller then owns any LOG_WRITE among them
    /// (use [`submit_ops`](Self::submit_ops) to have the queue log native-fence operations).
    /// After a fallback to the kernel-mode path, LOG_WRITEs are dropped (that queue has no
    /// logs).
    pub fn submit(&mut self, cmds: &[Command]) -> Result<u64, SubmitError> {
        self.submit_batch(cmds).map(|(value, _)| value)
    }

    /// Submits native-fence operations and packets as one batch (docs/logs.md#umd, LOG-02,
    /// LOG-04); returns the progress value that marks their completion.
    ///
    /// On the user-mode path each [`Op::Signal`] becomes `FENCE_SIGNAL` (conditional
    /// interrupt) immediately followed by the signal-log `LOG_WRITE` with the log's next index,
    /// each [`Op::Wait`] `FENCE_WAIT` followed by the wait-log `LOG_WRITE`; the batch is
    /// published with one write-pointer update. The indices are committed only if the batch
    /// went into the ring: a refused batch (`TooLarge`, `BadCommand`, a lost queue) uses none.
    /// After the fallback to the kernel-mode path no LOG_WRITE is emitted and the events say
    /// `logged: false`. Each signal and wait is reported to the [`FenceTrace`], in order, after
    /// the submission returned.
    pub fn submit_ops(&mut self, ops: &[Op<'_>]) -> Result<u64, SubmitError> {
        if self.lost {
            return Err(SubmitError::Lost);
        }
        if self.connect_failed && self.fallback.is_none() {
            self.fall_back()?;
        }
        let qpc = trace_timestamp(&self.kmt, self.trace.as_ref());
        let user_mode = self.fallback.is_none();
        let queue_id = self.carrier_queue_id();
        let mut e = expand_ops(ops, self.cursor, user_mode, queue_id, qpc)?;
        let (value, path) = self.submit_batch(&e.cmds[..])?;
        if path == SubmissionPath::UserMode {
            self.cursor = e.cursor;
        } else if user_mode {
            // Fell back before the batch reached the ring: it went to the kernel-mode queue
            // without its LOG_WRITEs.
            let id = self.carrier_queue_id();
            for op in &mut e.ops {
                *op = crate::fencelog::QueuedOp {
                    queue_id: id,
                    index: 0,
                    logged: false,
                    ..*op
                };
            }
        }
        report(self.trace.as_ref(), &e.ops);
        Ok(value)
    }

    /// Installs (or with `None` removes) the receiver of the "queued" events.
    pub fn set_fence_trace(&mut self, trace: Option<Arc<dyn FenceTrace>>) {
        self.trace = trace;
    }

    /// The next indices of the user-mode queue's logs.
    pub fn log_cursor(&self) -> LogCursor {
        self.cursor
    }

    /// Test hook: start the logs elsewhere (index wrap tests).
    #[cfg(test)]
    pub(crate) fn set_log_cursor(&mut self, cursor: LogCursor) {
        self.cursor = cursor;
    }

    /// The device queue id of the queue that currently carries submissions.
    pub(super) fn carrier_queue_id(&self) -> u32 {
        self.fallback
            .as_ref()
            .map_or(self.queue_id, |fb| fb.path.queue_id)
    }

    /// Submits the packets of `batch` as they are checked on their way into the ring (the
    /// C API's dwords, [`crate::packets::Dwords`]); returns the progress value that marks
    /// their completion. As [`submit`](Self::submit) otherwise.
    pub fn submit_packets<P: Packets + ?Sized>(&mut self, batch: &P) -> Result<u64, SubmitError> {
        self.submit_batch(batch).map(|(value, _)| value)
    }

    /// [`submit`](Self::submit), also saying which path carried the batch. The hot path (a
    /// connected queue, room for the batch by the read pointer last loaded, nothing
    /// retained): one pass checks the packets and stores them with the closing packet, then
    /// the batch is published; anything else takes
    /// [`submit_batch_slow`](Self::submit_batch_slow). Nothing is stored before the room is
    /// known to be there.
    #[inline]
    pub(super) fn submit_batch<P: Packets + ?Sized>(
        &mut self,
        batch: &P,
    ) -> Result<(u64, SubmissionPath), SubmitError> {
        let usual = !self.lost
            && !self.connect_failed
            && self.fallback.is_none()
            && self.progress.value() <= self.last;
        if usual && !self.retained.holds_any() {
            let fits = batch.size().and_then(|words| {
                let bytes = words.saturating_mul(8).saturating_add(self.closing.bytes());
                (bytes <= self.writer.known_free()).then_some(bytes)
            });
            if let (Some(bytes), Some(value)) = (fits, self.last.checked_add(1)) {
                self.closing.set_value(value);
                match self.writer.push_packets(batch, self.closing.words(), bytes) {
                    Ok(()) => return self.publish(value),
                    Err(Refused::Bad) => return Err(SubmitError::BadCommand),
                    // Not the length it said: refused below.
                    Err(Refused::Room) => {}
                }
            }
        }
        self.submit_batch_slow(batch)
    }

    /// The batch of `value`, in the ring up to the write pointer: UM-16 steps 3 to 5.
    #[inline(always)]
    pub(super) fn publish(&mut self, value: u64) -> Result<(u64, SubmissionPath), SubmitError> {
        // UM-16 1: N+1 (picked by the caller). 2: the commands and the packet that writes
        // N+1 to the progress fence went into the ring.
        self.last = value;
        self.in_flight.record(value, self.writer.write_ptr());
        let doorbell = self.doorbell.as_ref().ok_or(SubmitError::Lost)?;
        // 3: the last-queued value where the OS reads it.
        doorbell.cpu.set_last_queued(value);
        // 4: write_ptr (Release). 5 and the status loop: ring_and_check.
        self.writer.publish();
        self.ring_and_check()?;
        Ok((value, SubmissionPath::UserMode))
    }

    /// Every other case of [`submit_batch`](Self::submit_batch): a lost queue, retained
    /// allocations to reap, a fallback, a ring too full by the read pointer last loaded.
    #[cold]
    pub(super) fn submit_batch_slow<P: Packets + ?Sized>(
        &mut self,
        batch: &P,
    ) -> Result<(u64, SubmissionPath), SubmitError> {
        if self.lost {
            return Err(SubmitError::Lost);
        }
        if self.progress.value() > self.last {
            // UM-10: a progress value this queue never wrote. Windows signals a device's sync
            // objects to the maximum when it puts the device in error (a page fault, a reset)
            // and writes nothing to its doorbells, so this is how the loss shows when the KMD
            // could not abort them: what ran is unknown, the caller recreates the device.
            self.lost = true;
            return Err(SubmitError::Kmt(crate::kmt::STATUS_DEVICE_REMOVED));
        }
        if self.retained.holds_any() {
            self.reap_retained();
        }
        // Refuse what does not encode, and its length.
        let cmd_bytes = batch
            .words()
            .map_err(|_| SubmitError::BadCommand)?
            .saturating_mul(8);
        if self.connect_failed && self.fallback.is_none() {
            self.fall_back()?;
        }
        if self.fallback.is_some() {
            return self.submit_kernel_packets(batch);
        }
        let value = self.last.checked_add(1).ok_or(SubmitError::Lost)?;
        let bytes = cmd_bytes.saturating_add(self.closing.bytes());
        if bytes > u64::from(self.config.ring_size) {
            return Err(SubmitError::TooLarge);
        }
        // Back-pressure: never overwrite unconsumed packets. `reserve` checks the room
        // against the read pointer the writer last loaded (the CMP only moves it forward, so
        // that room is always there) and loads ring control only when that says "full".
        self.closing.set_value(value);
        while !self.writer.reserve(bytes)? {
            self.wait_for_space(bytes)?;
            if self.fallback.is_some() {
                return self.submit_kernel_packets(batch);
            }
        }
        if self
            .writer
            .push_packets(batch, self.closing.words(), bytes)
            .is_err()
        {
            // Longer than the room it reserved, or refused after it was measured: cannot
            // be, the length came from the same packets.
            self.lost = true;
            return Err(RingError::Full.into());
        }
        self.publish(value)
    }

    /// The kernel-mode path of a batch (after a fallback).
    pub(super) fn submit_kernel_packets<P: Packets + ?Sized>(
        &mut self,
        batch: &P,
    ) -> Result<(u64, SubmissionPath), SubmitError> {
        let cmds = batch.commands().map_err(|_| SubmitError::BadCommand)?;
        self.submit_kernel_path(&cmds)
    }

    pub(super) fn submit_kernel_path(
        &mut self,
        cmds: &[Command],
    ) -> Result<(u64, SubmissionPath), SubmitError> {
        self.submit_kernel(cmds)
            .map(|value| (value, SubmissionPath::KernelMode))
    }

    /// The doorbell value of this queue's ring.
    pub(super) fn ring_word(&self) -> u64 {
        match self.ring_value {
            DoorbellValue::WritePtr => self.writer.write_ptr(),
            DoorbellValue::QueueId => u64::from(self.queue_id),
        }
    }

    /// UM-16 step 5 and the UM-19 status loop; falls back when the doorbell cannot be used.
    #[inline(always)]
    pub(super) fn ring_and_check(&mut self) -> Result<(), SubmitError> {
        let word = self.ring_word();
        let Some(db) = self.doorbell.as_ref() else {
            return Err(SubmitError::Lost);
        };
        db.cpu.ring(word);
        match db.cpu.status() {
            DoorbellStatus::Connected => Ok(()),
            status => self.handle_status(word, status),
        }
    }

    /// The UM-19 status loop after a ring read anything but `CONNECTED`.
    #[cold]
    pub(super) fn handle_status(
        &mut self,
        word: u64,
        first: DoorbellStatus,
    ) -> Result<(), SubmitError> {
        let mut status = first;
        let mut retries = 0u32;
        let usable = loop {
            let Some(db) = self.doorbell.as_ref() else {
                return Err(SubmitError::Lost);
            };
            match status {
                DoorbellStatus::Connected => break true,
                DoorbellStatus::ConnectedNotify => {
                    if self.kmt.notify_work_submission(db.handle).is_ok() {
                        break true;
                    }
                    // 24H2 refuses the notify when the status no longer reads
                    // CONNECTED_NOTIFY_KMD (K:DxgkNotifyWorkSubmissionInternal @0x1401D98CC):
                    // the KMD disconnected the doorbell after our read. The status it left
                    // says what to do; only a notify refused on an unchanged status is lost.
                    let now = db.cpu.status();
                    if now == DoorbellStatus::ConnectedNotify || retries >= MAX_RETRIES {
                        break false;
                    }
                    retries = retries.saturating_add(1);
                    status = now;
                }
                DoorbellStatus::DisconnectedRetry => {
                    if retries >= MAX_RETRIES || self.kmt.connect_doorbell(db.handle).is_err() {
                        break false;
                    }
                    retries = retries.saturating_add(1);
                    db.cpu.ring(word);
                    status = db.cpu.status();
                }
                DoorbellStatus::DisconnectedAbort | DoorbellStatus::Unknown(_) => break false,
            }
        };
        if usable {
            Ok(())
        } else {
            self.doorbell_end = Some(status);
            self.fall_back()
        }
    }

    /// The ring lacks `bytes`: make sure the CMP knows about the work in it (ring again through
    /// the status loop), wait on the progress fence for the oldest batch whose consumption
    /// frees enough, and let the read pointer catch up.
    pub(super) fn wait_for_space(&mut self, bytes: u64) -> Result<(), SubmitError> {
        // The CMP may have consumed the ring since the load that found it full; then no batch
        // is left to wait on, and that is room, not an inconsistent ring.
        let free = self.writer.free()?;
        if free >= bytes {
            return Ok(());
        }
        let need_read = self
            .writer
            .write_ptr()
            .saturating_add(bytes)
            .saturating_sub(u64::from(self.config.ring_size));
        let Some(target) = self.in_flight.first_ending_at(need_read, self.last) else {
            return Err(SubmitError::Ring(RingError::Corrupt));
        };
        self.ring_and_check()?;
        if self.fallback.is_some() {
            return Ok(());
        }
        if self.progress.value() < target {
            self.kmt.wait_for_fence(self.progress.fence(), target)?;
        }
        for _ in 0..READ_PTR_POLLS {
            if self.writer.free()? >= bytes {
                return Ok(());
            }
            core::hint::spin_loop();
        }
        // The fence says the space is free but the read pointer never got there.
        self.lost = true;
        Err(SubmitError::Lost)
    }

    pub(super) fn writer_read_ptr(&self) -> u64 {
        self.control.mem.load(RingControl::READ_PTR)
    }

    /// UM-19 fallback: destroy the doorbell (the queue leaves the runlist: the ring is
    /// quiescent), then resubmit every unconsumed batch through a kernel-mode queue.
    pub(super) fn fall_back(&mut self) -> Result<(), SubmitError> {
        if self.fallback.is_some() {
            return Ok(());
        }
        if let Some(db) = self.doorbell.take() {
            if self.kmt.destroy_doorbell(db.handle).is_err() {
                // The queue may still be in the runlist: resubmitting could run work twice.
                self.lost = true;
                return Err(SubmitError::Lost);
            }
        }
        let user_completed = self.progress.value();
        if user_completed > self.last {
            // Not a value this queue wrote: the OS reports the device removed this way (as
            // D3D12 fences read UINT64_MAX then). What ran is unknown: recreate (UM-10).
            self.lost = true;
            return Err(SubmitError::Kmt(crate::kmt::STATUS_DEVICE_REMOVED));
        }
        let batches = match self.unconsumed_batches() {
            Ok(b) => b,
            Err(e) => {
                self.lost = true;
                return Err(e);
            }
        };
        let path = match KernelPath::create(&self.kmt, self.context, &self.config) {
            Ok(p) => p,
            Err(e) => {
                self.lost = true;
                return Err(e);
            }
        };
        let mut fb = Fallback {
            path,
            user_completed,
            pending: VecDeque::new(),
        };
        let mut result = Ok(());
        for (value, cmds) in &batches {
            // The kernel-mode queue has no logs: the LOG_WRITEs stay behind (their entries
            // are simply never written; the OS's cursor does not need them).
            let cmds = without_log_writes(cmds);
            match fb.path.submit(&self.kmt, &cmds) {
                Ok(phys) => fb.pending.push_back((*value, phys)),
                Err(e) => {
                    self.lost = true;
                    result = Err(e);
                    break;
                }
            }
        }
        self.fallback = Some(fb);
        result
    }

    /// Decodes the packets between the read and write pointers of the (quiescent) ring into
    /// batches, each with the progress value of its closing packet (PROGRESS, or the own
    /// fence's FENCE_SIGNAL).
    #[allow(clippy::type_complexity)]
    pub(super) fn unconsumed_batches(&self) -> Result<Vec<(u64, Vec<Command>)>, SubmitError> {
        let corrupt = SubmitError::Ring(RingError::Corrupt);
        let size = u64::from(self.config.ring_size);
        let words = size / 8;
        let mut ptr = self.writer_read_ptr();
        let end = self.writer.write_ptr();
        if ptr > end || end - ptr > size || !ptr.is_multiple_of(8) {
            return Err(corrupt);
        }
        let ring = &self.ring.mem;
        let word_at = |p: u64| ring.load(((p / 8) % words) * 8);
        let mut batches = Vec::new();
        let mut current = Vec::new();
        while ptr < end {
            let h = decode_header(word_at(ptr)).map_err(|_| corrupt)?;
            let len = u64::from(h.len);
            let mut packet = Vec::with_capacity(usize::from(h.len));
            for i in 0..len {
                packet.push(word_at(ptr.saturating_add(i.saturating_mul(8))));
            }
            let cmd = decode(&packet).map_err(|_| corrupt)?;
            ptr = ptr.saturating_add(len.saturating_mul(8));
            match self.progress.closes(&cmd) {
                Some(value) => batches.push((value, core::mem::take(&mut current))),
                None => current.push(cmd),
            }
        }
        if ptr != end || !current.is_empty() {
            return Err(corrupt);
        }
        Ok(batches)
    }

    pub(super) fn submit_kernel(&mut self, cmds: &[Command]) -> Result<u64, SubmitError> {
        let value = self.last.checked_add(1).ok_or(SubmitError::Lost)?;
        let Some(fb) = self.fallback.as_mut() else {
            return Err(SubmitError::Lost);
        };
        fb.prune();
        let stripped;
        let cmds = if has_log_writes(cmds) {
            stripped = without_log_writes(cmds);
            &stripped[..]
        } else {
            cmds
        };
        let before = fb.path.last;
        let phys = match fb.path.submit(&self.kmt, cmds) {
            Ok(p) => p,
            // Refused before anything was submitted: the queue is still whole.
            Err(e @ (SubmitError::TooLarge | SubmitError::Full)) if fb.path.last == before => {
                return Err(e)
            }
            Err(e) => {
                // UM-10: the kernel-mode path failed as well; the caller recreates the queue.
                self.lost = true;
                return Err(e);
            }
        };
        fb.pending.push_back((value, phys));
        self.last = value;
        Ok(value)
    }

    /// Blocks until the work of progress value `value` (from [`submit`](Self::submit)) has
    /// completed.
    pub fn wait(&self, value: u64) -> Result<(), SubmitError> {
        if let Some((fence, v)) = self.wait_target(value)? {
            self.kmt.wait_for_fence(fence, v)?;
        }
        if !self.retained.is_empty() {
            self.reap_retained();
        }
        Ok(())
    }

    /// What to wait on for progress value `value`: `None` if it completed, else the fence
    /// (the user-mode queue's, or after a fallback the kernel-mode queue's) and the value it
    /// must reach. For callers that wait with a timeout themselves (the C API).
    pub fn wait_target(&self, value: u64) -> Result<Option<(KmtHandle, u64)>, SubmitError> {
        if value > self.last {
            return Err(SubmitError::NotSubmitted);
        }
        match &self.fallback {
            None => Ok((self.progress.value() < value).then_some((self.progress.fence(), value))),
            Some(fb) => {
                if value <= fb.user_completed {
                    return Ok(None);
                }
                // The first pending batch at or after `value` completes after it; none left:
                // pruned, so complete.
                match fb.pending.iter().find(|(logical, _)| *logical >= value) {
                    Some(&(_, phys)) => fb.path.wait_target(phys),
                    None => Ok(None),
                }
            }
        }
    }

    /// The highest progress value known complete (non-blocking).
    pub fn completed(&self) -> u64 {
        match &self.fallback {
            None => self.progress.value().min(self.last),
            Some(fb) => {
                let done = fb.path.completed();
                let mut known = fb.user_completed.min(self.last);
                for &(logical, phys) in &fb.pending {
                    if phys > done {
                        return known;
                    }
                    known = logical;
                }
                self.last
            }
        }
    }

    /// The last progress value submitted.
    pub fn last_submitted(&self) -> u64 {
        self.last
    }

    /// Its progress sequence's id ([`crate::usage::Timeline`]).
    pub fn timeline(&self) -> TimelineId {
        self.timeline
    }

    /// Set once the queue is destroyed (its work is over then).
    pub fn retired_flag(&self) -> alloc::sync::Arc<core::sync::atomic::AtomicBool> {
        alloc::sync::Arc::clone(&self.retired)
    }

    /// Which path submissions currently take.
    pub fn path(&self) -> SubmissionPath {
        if self.fallback.is_some() || self.connect_failed {
            SubmissionPath::KernelMode
        } else {
            SubmissionPath::UserMode
        }
    }

    /// What the doorbell's status page says now (`None`: the queue has no doorbell any more).
    pub fn doorbell_status(&self) -> Option<DoorbellStatus> {
        self.doorbell.as_ref().map(|d| d.cpu.status())
    }

    /// True once the queue is unusable (UM-10): drop it and create a new one.
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// The doorbell status that made the queue give its doorbell up and fall back (`None`
    /// while it has its doorbell, or when it fell back for another reason).
    pub fn doorbell_end(&self) -> Option<DoorbellStatus> {
        self.doorbell_end
    }

    /// Whether the progress fence reads a value this queue never submitted: 24H2 signals a
    /// device's sync objects to the maximum when it puts the device in error
    /// (`M:VidSchiSignalRegisteredSyncObjects`), so the fence no longer tells what ran.
    pub fn progress_overrun(&self) -> bool {
        match &self.fallback {
            None => self.progress.value() > self.last,
            Some(fb) => fb.path.completed() > fb.path.last,
        }
    }

    /// The device's queue id of the user-mode queue.
    pub fn queue_id(&self) -> u32 {
        self.queue_id
    }

    /// The user-mode hardware queue's handle, the process's own: a test program hands it to
    /// `D3DKMTSubmitCommandToHwQueue` to see the kernel path refused (UM-05).
    pub fn hw_queue(&self) -> KmtHandle {
        self.queue
    }

    /// What a ring of this queue's doorbell writes.
    pub fn ring_value(&self) -> DoorbellValue {
        self.ring_value
    }

    /// The handle of the fence the user-mode queue's batches complete on: the OS's progress
    /// fence, or the queue's own native fence when the OS gave it none.
    pub fn progress_fence(&self) -> KmtHandle {
        self.progress.fence()
    }

    /// The configuration it was created with.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// The thunks.
    pub fn kmt(&self) -> &K {
        &self.kmt
    }

    /// Normal close (UM-17 from the UMD's side): waits for the last submitted value (unless
    /// the queue is lost), then destroys doorbell, queues, allocations and context.
    pub fn close(mut self) -> Result<(), SubmitError> {
        let waited = if self.lost || self.last == 0 {
            Ok(())
        } else {
            self.wait(self.last)
        };
        let destroyed = self.teardown();
        waited?;
        destroyed
    }

    /// Doorbell, hardware queues, the queue's own progress fence, allocations, context; every
    /// step is attempted, the first failure is reported.
    pub(super) fn teardown(&mut self) -> Result<(), SubmitError> {
        if core::mem::replace(&mut self.closed, true) {
            return Ok(());
        }
        let mut first: Result<(), SubmitError> = Ok(());
        let mut note = |r: Result<(), NtStatus>| {
            if let (Err(e), Ok(())) = (r, &first) {
                first = Err(SubmitError::Kmt(e));
            }
        };
        if let Some(db) = self.doorbell.take() {
            note(self.kmt.destroy_doorbell(db.handle));
        }
        let q = self.kmt.destroy_hw_queue(self.queue);
        let fq = self
            .fallback
            .as_ref()
            .map_or(Ok(()), |fb| self.kmt.destroy_hw_queue(fb.path.queue));
        // Once destroyed, the queue is off the hardware (its work completed or never runs):
        // uses recorded on it are over.
        if q.is_ok() && fq.is_ok() {
            self.retired
                .store(true, core::sync::atomic::Ordering::Release);
        }
        note(q);
        note(fq);
        // The queue is off the hardware: what it retained is free (`closed` is set).
        self.reap_retained();
        // After the queue: no batch of it can signal the fence any more.
        if let Progress::Own { fence, .. } = &self.progress {
            note(self.kmt.destroy_native_fence(fence.kmt));
        }
        note(self.kmt.destroy_allocation(self.ring.handle));
        note(self.kmt.destroy_allocation(self.control.handle));
        if let Some(fb) = &self.fallback {
            note(fb.path.destroy_buffers(&self.kmt));
        }
        note(self.kmt.destroy_context(self.context));
        first
    }
}

impl<K: Kmt> Drop for UserQueue<K> {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}
