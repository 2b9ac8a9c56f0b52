//! Command execution: fetch, decode and run one packet of a queue.
//!
//! Every guest-controlled input (ring words, pointers, addresses, log headers) is checked;
//! a bad one faults the queue (Fault event, queue stops, rptr stays at the packet), never
//! panics and never touches another queue. Checks happen before a command's first side
//! effect wherever possible, so a faulting command leaves memory as it was (a COPY/FILL whose
//! memory disappears mid-way is the exception: its finished prefix stays).
//!
//! Orderings: the ring is read with Relaxed loads because the Acquire load of write_ptr (on
//! the doorbell) already made the producer's packet stores visible. Every completed packet
//! is published by a Release store of RingControl.read_ptr; results that other agents
//! consume as "done" markers (fence values, progress fence, timestamps, log headers) are
//! Release stores too, so the data written before them is visible to whoever sees them.
//!
//! Address spaces (docs/hardware.md 12.4): INDIRECT buffers and every address a packet
//! carries are accesses in the queue's space ([`Space::of_queue`]): its root and, for a
//! user-mode queue, user privilege. The ring and ring control are where their owner put them
//! (`Core::ring_space`): a user-mode queue's in its process, a kernel-mode queue's (the KMD's
//! memory) in the system space; the descriptor's progress fence (the OS's) is written in the
//! system space. Command fetches are `Execute` accesses. The
//! MonitoredValue read of a conditional signal is the CMP's interrupt decision, not data the
//! queue sees, so it uses the queue's root with kernel privilege (NF-01: MonitoredValue is
//! never mapped USER). Log buffers are in the CMP's own space (`SYSTEM_PAGE_TABLE_BASE`).
//! Under root 0 every one of these is the version-1 window-checked bus access.
//!
//! INDIRECT_VM (kernel-mode queues only) is an INDIRECT whose buffer, and every address its
//! packets carry, are in the space of the root it names, with user privilege: a process's
//! DMA buffer on a kernel-mode ring runs with exactly the reach that process's own user-mode
//! queues have.
//!
//! INDIRECT: packets come either from the ring (at the read pointer, wrapping) or from the
//! queue's current indirect buffer (at its cursor, never wrapping: a packet past the end is
//! `BadLength`). An indirect buffer is read with Relaxed loads for the same reason as the
//! ring: its producer finished it before the submission whose write_ptr we acquired.
//! Completing a packet of the buffer advances the cursor and counts it; completing the last
//! one also completes the INDIRECT itself (read_ptr moves past it, counted once more).

use std::sync::atomic::{fence, Ordering};

use rvgpu_hw::cmd::{
    decode, decode_header, Command, LogKind, Opcode, MAX_TRANSFER, SIGNAL_ALWAYS_IRQ,
    SIGNAL_CONDITIONAL_IRQ,
};
use rvgpu_hw::event::{EventKind, EventRecord, FaultCode, FLAG_LEGACY_SIGNAL, FLAG_LOGGED, NO_TAG};
use rvgpu_hw::fence::{needs_interrupt, wait_satisfied};
use rvgpu_hw::log::{
    entry_offset, header_after, LogEntry, ENTRIES_PER_BUFFER, HEADER_ATOMIC, LOG_BUFFER_SIZE,
    OP_SIGNAL_EXECUTED, OP_WAIT_UNBLOCKED,
};
use rvgpu_hw::mmu::Access;
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, RingControl, NO_QUEUE};
use rvgpu_hw::regs::IntCause;

use rvgpu_hw::addr::GpuVa;

use super::bus::{ctl, words, Fault, Space};
use super::cmp::{Cmp, Engine, InFlight, Indirect, Queue, Wait};
use super::mmu::Privilege;
use super::{lock, Core};

/// Bytes of COPY/FILL work per quantum: a big transfer takes many passes (measurable time)
/// and an engine reset can interrupt it between chunks.
pub(crate) const CHUNK_BYTES: u64 = 4096;

const _: () = assert!(MAX_TRANSFER.is_multiple_of(8));

/// Where the packets of a queue come from.
#[derive(Clone, Copy, Debug)]
enum Src {
    /// The ring: positions are free-running read pointers (wrapping at the ring size).
    Ring,
    /// An indirect buffer at this GPU address of this space: positions are byte offsets
    /// into it.
    Buffer(GpuVa, Space),
}

/// A fetched packet: the decoded command, its length in bytes and its words (header first;
/// empty for a NOP, whose padding is never read).
struct Fetched {
    cmd: Command,
    len: u64,
    words: Vec<u64>,
}

/// Where a LOG_WRITE goes (GPU addresses in `space`), resolved and checked before anything
/// is written.
struct LogTarget {
    space: Space,
    entry_addr: GpuVa,
    header_addr: GpuVa,
    header_value: u64,
}

impl Core {
    pub(crate) fn post_fault_event(&self, e: usize, queue_id: u32, f: Fault, rptr: u64) {
        self.post_event(
            EventRecord {
                kind: EventKind::Fault as u8,
                engine: e as u8,
                flags: 0,
                queue_id,
                arg0: f.code as u64,
                arg1: f.addr.get(),
                arg2: f.arg2(rptr),
            },
            IntCause::FAULT,
        );
    }

    /// Stops queue `qi` of engine `e` with fault `f` and posts the Fault event.
    pub(crate) fn fault_queue(&self, eng: &mut Engine, e: usize, qi: usize, f: Fault) {
        if eng.inflight.is_some_and(|x| x.queue() == qi) {
            eng.inflight = None;
        }
        let Some(q) = eng.queues.get_mut(qi) else {
            return;
        };
        q.fault = Some(f.code);
        q.wait = None;
        let (id, rptr) = (q.desc.queue_id, q.rptr);
        self.post_fault_event(e, id, f, rptr);
    }

    fn count_completed(&self, e: usize) {
        if let Some(r) = self.regs.engines.get(e) {
            // Release: a reader of the counter sees the command's effects.
            r.completed.fetch_add(1, Ordering::Release);
        }
    }

    /// Completes the packet of `bytes` at the queue's position and counts it. In the ring:
    /// advance and publish read_ptr. In an indirect buffer: advance the cursor; after the
    /// buffer's last packet, the INDIRECT completes too (read_ptr past it, counted).
    fn complete(&self, e: usize, q: &mut Queue, bytes: u64) -> Result<(), Fault> {
        let bytes = match q.indirect.as_mut() {
            Some(ind) => {
                ind.off = ind.off.wrapping_add(bytes);
                self.count_completed(e);
                if ind.off < ind.bytes {
                    return Ok(());
                }
                let len = ind.len;
                q.indirect = None;
                len
            }
            None => bytes,
        };
        q.rptr = q.rptr.wrapping_add(bytes);
        // Release: the packet's effects happen-before a producer that sees the slot free.
        self.sp_store(
            self.ring_space(&q.desc),
            ctl(q.desc.ring_control, RingControl::READ_PTR),
            q.rptr,
            Ordering::Release,
        )?;
        self.count_completed(e);
        Ok(())
    }

    fn ring_word(&self, d: &QueueDescriptor, ptr: u64) -> Result<u64, Fault> {
        let off = ptr % u64::from(d.ring_size.max(1));
        let addr = d
            .ring_base
            .checked_add(off)
            .ok_or(Fault::bad_address(d.ring_base))?;
        // Relaxed: the Acquire load of write_ptr made the producer's stores visible.
        self.sp_load(self.ring_space(d), addr, Access::Execute, Ordering::Relaxed)
    }

    /// The word at position `ptr` of `src`.
    fn src_word(&self, d: &QueueDescriptor, src: Src, ptr: u64) -> Result<u64, Fault> {
        match src {
            Src::Ring => self.ring_word(d, ptr),
            Src::Buffer(base, sp) => {
                let addr = base.checked_add(ptr).ok_or(Fault::bad_address(base))?;
                // Relaxed: as for the ring (see the module docs).
                self.sp_load(sp, addr, Access::Execute, Ordering::Relaxed)
            }
        }
    }

    /// The `n` words at position `ptr` of `src`. The packet is resolved once, one translation
    /// per page instead of one per word: in an indirect buffer (VidMm's paging buffers, DMA
    /// buffers: the long packets), and in the ring unless it wraps there (a ring
    /// packet's words were translated one by one on the way to every fence signal). If that
    /// fails (a page missing, or the packet crossing two memory regions), the words are read
    /// one at a time, so a fault names the first word that cannot be read exactly as a
    /// word-by-word fetch does.
    fn src_words(
        &self,
        d: &QueueDescriptor,
        src: Src,
        ptr: u64,
        n: u16,
    ) -> Result<Vec<u64>, Fault> {
        let n = u64::from(n);
        let bytes = n * 8;
        let spans = match src {
            Src::Buffer(base, sp) => base
                .checked_add(ptr)
                .and_then(|at| self.sp_spans(sp, at, bytes, Access::Execute).ok()),
            Src::Ring => {
                let size = u64::from(d.ring_size.max(1));
                let off = ptr % size;
                off.checked_add(bytes)
                    .filter(|&end| end <= size)
                    .and_then(|_| d.ring_base.checked_add(off))
                    .and_then(|at| {
                        self.sp_spans(self.ring_space(d), at, bytes, Access::Execute)
                            .ok()
                    })
            }
        };
        if let Some(spans) = spans {
            // Relaxed: as in `src_word`.
            return Ok(words(&spans).map(|w| w.load(Ordering::Relaxed)).collect());
        }
        (0..n)
            .map(|i| self.src_word(d, src, ptr.wrapping_add(i * 8)))
            .collect()
    }

    /// Reads and decodes the packet at position `rptr` of `src`, with `avail` bytes left
    /// (unconsumed ring bytes, or the rest of the indirect buffer).
    fn fetch(
        &self,
        d: &QueueDescriptor,
        src: Src,
        rptr: u64,
        avail: u64,
    ) -> Result<Fetched, Fault> {
        let h =
            decode_header(self.src_word(d, src, rptr)?).map_err(|c| Fault::new(c, GpuVa::NULL))?;
        let len = u64::from(h.len) * 8;
        if len > avail {
            return Err(Fault::new(FaultCode::BadLength, GpuVa::NULL));
        }
        if h.opcode == Opcode::Nop {
            // NOP has no flags (cmd.rs: flags must be zero on flagless opcodes).
            if h.flags != 0 {
                return Err(Fault::new(FaultCode::BadArgument, GpuVa::NULL));
            }
            // Padding words are never read.
            return Ok(Fetched {
                cmd: Command::Nop { len: h.len },
                len,
                words: Vec::new(),
            });
        }
        let words = self.src_words(d, src, rptr, h.len)?;
        let cmd = decode(&words).map_err(|c| Fault::new(c, GpuVa::NULL))?;
        Ok(Fetched { cmd, len, words })
    }

    /// Resolves a LOG_WRITE target; `NoLog` if the queue has no such log, `BadArgument` if
    /// the OS-written header has an impossible entry count.
    fn log_target(
        &self,
        d: &QueueDescriptor,
        kind: LogKind,
        index: u32,
    ) -> Result<LogTarget, Fault> {
        let base = match kind {
            LogKind::Wait => d.wait_log,
            LogKind::Signal => d.signal_log,
        };
        if base.is_null() {
            return Err(Fault::new(FaultCode::NoLog, GpuVa::NULL));
        }
        // A log is in the system space, except a wait log the OS mapped only into the
        // queue's process (hardware.md 12.4): the queue's root, with the CMP's privilege.
        let in_queue = kind == LogKind::Wait
            && QueueFlags::from_bits_retain(d.flags).contains(QueueFlags::WAIT_LOG_IN_QUEUE);
        let sys = if in_queue {
            Space::of_queue(d).kernel()
        } else {
            self.system_space()
        };
        self.sp_check(sys, base, LOG_BUFFER_SIZE, Access::Write)?;
        // NumberOfEntries is written by the OS when it creates the buffer.
        // sp_check above: the whole buffer is addressable, so these offsets cannot overflow.
        let at = |off: u64| base.checked_add(off).unwrap_or(base);
        let n_addr = at(16);
        let n = self.sp_load(sys, n_addr, Access::Read, Ordering::Acquire)?;
        if n == 0 || n > ENTRIES_PER_BUFFER {
            return Err(Fault::new(FaultCode::BadArgument, n_addr));
        }
        let bad = Fault::new(FaultCode::BadArgument, n_addr);
        let entry_addr = at(entry_offset(index, n).ok_or(bad)?);
        let header_value = header_after(index, n).ok_or(bad)?;
        Ok(LogTarget {
            space: sys,
            entry_addr,
            header_addr: at(HEADER_ATOMIC),
            header_value,
        })
    }

    /// Writes a log entry, then the header's atomic word (LOG-03, LOG-07). Caller holds the
    /// signal lock.
    fn write_log(&self, t: &LogTarget, entry: &LogEntry) -> Result<(), Fault> {
        let sys = t.space;
        let spans = self.sp_spans(sys, t.entry_addr, 48, Access::Write)?;
        for (d, s) in words(&spans).zip(entry.to_words()) {
            // Relaxed: the Release on the header below publishes the entry.
            d.store(s, Ordering::Relaxed);
        }
        // One atomic store that never lowers the header (log.rs): fetch_max orders by
        // (WraparoundCount, FirstFreeEntryIndex), which is how the value is packed.
        self.sp_fetch_max(sys, t.header_addr, t.header_value, Ordering::AcqRel)?;
        Ok(())
    }

    /// Executes the packet at queue `qi`'s read pointer.
    pub(crate) fn exec_packet(&self, cmp: &mut Cmp, e: usize, qi: usize) {
        if let Err(f) = self.exec_inner(cmp, e, qi) {
            if let Some(eng) = cmp.engines.get_mut(e) {
                self.fault_queue(eng, e, qi, f);
            }
        }
    }

    fn exec_inner(&self, cmp: &mut Cmp, e: usize, qi: usize) -> Result<(), Fault> {
        let now = self.clock.now();
        let Some(eng) = cmp.engines.get_mut(e) else {
            return Ok(());
        };
        let Some(q) = eng.queues.get_mut(qi) else {
            return Ok(());
        };
        let d = q.desc;
        let rptr = q.rptr;
        let bad_rc = Fault::new(FaultCode::BadRingControl, d.ring_control);
        let avail = q.known_wptr.checked_sub(rptr).ok_or(bad_rc)?;
        if avail > u64::from(d.ring_size) || !avail.is_multiple_of(8) || !rptr.is_multiple_of(8) {
            return Err(bad_rc);
        }
        // Inside an INDIRECT, the packet comes from the buffer at its cursor instead.
        let ind = q.indirect;
        // Inside an INDIRECT_VM buffer, its space; otherwise the queue's.
        let qs = q.data_space();
        let (src, pos, avail) = match ind {
            Some(i) => (
                Src::Buffer(i.addr, qs),
                i.off,
                i.bytes.saturating_sub(i.off),
            ),
            None => (Src::Ring, rptr, avail),
        };
        let inner = ind.map(|i| i.off);
        let Fetched {
            cmd,
            len,
            words: packet,
        } = self.fetch(&d, src, pos, avail)?;
        match cmd {
            Command::Nop { .. } => self.complete(e, q, len),
            Command::FenceSignal {
                flags,
                value_addr,
                value,
                monitored_addr,
                report_tag,
            } => {
                let (value_addr, monitored_addr) =
                    (GpuVa::new(value_addr), GpuVa::new(monitored_addr));
                let value_word = self.word(qs, value_addr, Access::Write)?;
                let cond = flags & SIGNAL_CONDITIONAL_IRQ != 0;
                let always = flags & SIGNAL_ALWAYS_IRQ != 0;
                // The MonitoredValue read is the CMP's decision: the queue's root with kernel
                // privilege (NF-01 never maps MonitoredValue USER).
                let monitored = if cond && !always {
                    Some(self.word(qs.kernel(), monitored_addr, Access::Read)?)
                } else {
                    None
                };
                // LOG-04: a signal-log LOG_WRITE right behind the signal is executed inside
                // it, before the interrupt decision. Only if it is complete and valid;
                // otherwise it runs (and faults) on its own.
                // In a buffer, only a LOG_WRITE in the same buffer is looked at.
                let fused = self.peek_signal_log(&d, src, pos.wrapping_add(len), avail - len);
                // The record says "logged" only for an entry of this signal's value: one that
                // logs another value (a producer's mistake, or a ring hiding the signal
                // behind an entry) leaves the signal to a report the OS cannot read past.
                let logged = fused
                    .as_ref()
                    .is_some_and(|(_, entry, _)| entry.fence_value == value);
                {
                    let _sig = lock(&self.signal_lock);
                    // Release: publishes this queue's earlier work to whoever reads the value.
                    self.store_word(value_word, value, Ordering::Release)?;
                    if let Some((t, entry, _)) = &fused {
                        let mut entry = *entry;
                        entry.fence_end_gpu_timestamp = self.clock.now();
                        self.write_log(t, &entry)?;
                    }
                    // NF-08 / LOG-07: the CurrentValue store (and log writes) are ordered
                    // before the MonitoredValue load. Pairs with the CPU's "store MV;
                    // SeqCst fence; load CV": at least one side sees the other's store.
                    fence(Ordering::SeqCst);
                    let irq = always
                        || monitored.is_some_and(|w| {
                            // Relaxed: ordered by the fence above. An unreadable
                            // MonitoredValue interrupts: spurious is fine, missed is not.
                            self.mem
                                .load(w.pa, Ordering::Relaxed)
                                .is_none_or(|mv| needs_interrupt(value, mv))
                        });
                    if irq {
                        self.post_event(
                            EventRecord {
                                kind: EventKind::FenceSignaled as u8,
                                engine: e as u8,
                                flags: if always {
                                    FLAG_LEGACY_SIGNAL
                                } else if logged {
                                    FLAG_LOGGED
                                } else {
                                    0
                                },
                                queue_id: if self.cfg.optimized_fence_irq
                                    && !self.faults.anonymous_fence_events()
                                {
                                    d.queue_id
                                } else {
                                    NO_QUEUE
                                },
                                arg0: if self.cfg.exact_fence_report {
                                    report_tag
                                } else {
                                    NO_TAG
                                },
                                arg1: value,
                                arg2: monitored_addr.get(),
                            },
                            IntCause::FENCE_SIGNALED,
                        );
                    }
                }
                self.complete(e, q, len)?;
                if let Some((_, _, log_len)) = fused {
                    self.complete(e, q, log_len)?;
                }
                // Waits match on the physical word, whatever VA each waiter used.
                self.rescan_waits(cmp, Some(value_word.pa));
                Ok(())
            }
            Command::FenceWait { addr, value } => {
                let addr = GpuVa::new(addr);
                let w = self.word(qs, addr, Access::Read)?;
                // Acquire: the signaller's Release store published its earlier work.
                let v = self.load_word(w, Ordering::Acquire)?;
                let observed = q
                    .wait
                    .filter(|w| w.rptr == rptr && w.inner == inner)
                    .map_or(now, |w| w.observed);
                if wait_satisfied(v, value) {
                    q.wait = None;
                    q.last_wait_observed = Some(observed);
                    self.complete(e, q, len)
                } else {
                    q.wait = Some(Wait {
                        rptr,
                        inner,
                        addr,
                        pa: w.pa,
                        value,
                        observed,
                        wake: false,
                    });
                    Ok(())
                }
            }
            Command::LogWrite {
                log,
                index,
                fence_handle,
                fence_value,
            } => {
                let t = self.log_target(&d, log, index)?;
                let (op, observed) = match log {
                    LogKind::Wait => (OP_WAIT_UNBLOCKED, q.last_wait_observed.unwrap_or(now)),
                    LogKind::Signal => (OP_SIGNAL_EXECUTED, 0),
                };
                {
                    // LOG_FLUSH drains log writes by taking this lock.
                    let _sig = lock(&self.signal_lock);
                    let entry = LogEntry {
                        fence_value,
                        h_native_fence: fence_handle,
                        operation_type: op,
                        fence_observed_gpu_timestamp: observed,
                        fence_end_gpu_timestamp: self.clock.now(),
                        ..Default::default()
                    };
                    self.write_log(&t, &entry)?;
                }
                self.complete(e, q, len)
            }
            Command::Timestamp { addr } => {
                let addr = GpuVa::new(addr);
                self.sp_store(qs, addr, self.clock.now(), Ordering::Release)?;
                self.complete(e, q, len)
            }
            Command::Progress { irq, value } => {
                // A queue whose descriptor names no progress fence has none (a user-mode queue
                // the OS gave none): nothing to write, the packet is malformed there.
                if d.progress_fence.is_null() {
                    return Err(Fault::new(FaultCode::BadArgument, GpuVa::NULL));
                }
                // Release: the progress fence says "everything before is done". The
                // descriptor's progress fence is the OS's monitored fence at its VA in the
                // queue's process (DXGKARG_CREATEHWQUEUE.HwQueueProgressFenceGPUVirtualAddress),
                // written with kernel privilege: the address is the KMD's, not the ring's.
                self.sp_store(
                    Space::of_queue(&d).kernel(),
                    d.progress_fence,
                    value,
                    Ordering::Release,
                )?;
                self.complete(e, q, len)?;
                if irq {
                    let after = q.rptr;
                    self.post_event(
                        EventRecord {
                            kind: EventKind::Progress as u8,
                            engine: e as u8,
                            flags: 0,
                            queue_id: d.queue_id,
                            arg0: value,
                            arg1: after,
                            arg2: 0,
                        },
                        IntCause::PROGRESS,
                    );
                }
                Ok(())
            }
            Command::Copy { src, dst, bytes } => {
                // Every page of both ranges, before the first byte moves.
                self.sp_check(qs, GpuVa::new(src), bytes, Access::Read)?;
                self.sp_check(qs, GpuVa::new(dst), bytes, Access::Write)?;
                self.start_transfer(eng, e, qi, cmd, len);
                Ok(())
            }
            Command::Fill { dst, bytes, .. } => {
                self.sp_check(qs, GpuVa::new(dst), bytes, Access::Write)?;
                self.start_transfer(eng, e, qi, cmd, len);
                Ok(())
            }
            Command::Hang => {
                eng.inflight = Some(InFlight::Hang {
                    queue: qi,
                    since: now,
                });
                Ok(())
            }
            Command::Indirect { addr, bytes } | Command::IndirectVm { addr, bytes, .. } => {
                let addr = GpuVa::new(addr);
                // One level only: the ring calls a buffer, a buffer calls nothing.
                if ind.is_some() {
                    return Err(Fault::new(FaultCode::NestedIndirect, GpuVa::NULL));
                }
                // INDIRECT_VM runs in the space it names, as that process's user mode; choosing
                // another space is the kernel's business.
                let space = match cmd {
                    Command::IndirectVm { root, .. } => {
                        if qs.who == Privilege::User {
                            return Err(Fault::new(FaultCode::BadArgument, GpuVa::NULL));
                        }
                        Some(Space {
                            root,
                            who: Privilege::User,
                        })
                    }
                    _ => None,
                };
                // The whole buffer must be reachable (and aligned, and executable) in the space
                // it runs in before it starts.
                self.sp_check(space.unwrap_or(qs), addr, bytes, Access::Execute)?;
                // Starting the buffer is this quantum; its packets run in the next ones.
                q.indirect = Some(Indirect {
                    addr,
                    bytes,
                    off: 0,
                    len,
                    space,
                });
                Ok(())
            }
            Command::TlbInvalidate { root } => {
                // Privileged: a user-mode queue must not be able to drop (or time) other
                // spaces' translations.
                if qs.who == Privilege::User {
                    return Err(Fault::new(FaultCode::BadArgument, GpuVa::NULL));
                }
                // Everything before this packet on the queue has completed (one packet per
                // quantum, under the CMP lock), so the invalidation is ordered after it.
                self.complete(e, q, len)?;
                if self.tlb_invalidate_locked(cmp, root) {
                    self.publish_engine_status(cmp);
                }
                Ok(())
            }
            Command::WriteData { dst, count } => {
                let data = packet.get(2..).unwrap_or(&[]);
                let bytes = u64::from(count).saturating_mul(8);
                if data.len() != usize::from(count) {
                    // decode() guarantees this; a mismatch is a malformed packet.
                    return Err(Fault::new(FaultCode::BadLength, GpuVa::NULL));
                }
                // Every page is translated and checked before any word is written.
                let spans = self.sp_spans(qs, GpuVa::new(dst), bytes, Access::Write)?;
                for (w, v) in words(&spans).zip(data) {
                    // Release: page-table entries written here are read by walks with
                    // Acquire loads (hardware.md 12.3).
                    w.store(*v, Ordering::Release);
                }
                self.complete(e, q, len)
            }
        }
    }

    /// If a complete, valid signal-log LOG_WRITE starts at `ptr`, returns its target, entry
    /// (end timestamp filled in at write time) and length.
    fn peek_signal_log(
        &self,
        d: &QueueDescriptor,
        src: Src,
        ptr: u64,
        avail: u64,
    ) -> Option<(LogTarget, LogEntry, u64)> {
        // Nothing published behind the signal: no word there is the producer's to read.
        if avail == 0 {
            return None;
        }
        let Fetched { cmd, len, .. } = self.fetch(d, src, ptr, avail).ok()?;
        let Command::LogWrite {
            log: LogKind::Signal,
            index,
            fence_handle,
            fence_value,
        } = cmd
        else {
            return None;
        };
        let t = self.log_target(d, LogKind::Signal, index).ok()?;
        let entry = LogEntry {
            fence_value,
            h_native_fence: fence_handle,
            operation_type: OP_SIGNAL_EXECUTED,
            ..Default::default()
        };
        Some((t, entry, len))
    }

    fn start_transfer(&self, eng: &mut Engine, e: usize, qi: usize, cmd: Command, len: u64) {
        eng.inflight = Some(InFlight::Transfer {
            queue: qi,
            cmd,
            done: 0,
            len,
        });
        // The first chunk runs in this quantum: a small transfer completes at once.
        self.run_inflight(eng, e);
    }

    /// One chunk of the transfer in flight (a HANG does nothing).
    pub(crate) fn run_inflight(&self, eng: &mut Engine, e: usize) {
        let Some(InFlight::Transfer {
            queue,
            cmd,
            done,
            len,
        }) = eng.inflight
        else {
            return;
        };
        // Each chunk is translated afresh in the queue's space: a TLB invalidation between
        // chunks takes effect at the next one.
        let Some(sp) = eng.queues.get(queue).map(Queue::data_space) else {
            eng.inflight = None;
            return;
        };
        let res = self.transfer_chunk(sp, &cmd, done);
        match res {
            Err(f) => self.fault_queue(eng, e, queue, f),
            Ok(None) => {
                eng.inflight = None;
                let r = match eng.queues.get_mut(queue) {
                    Some(q) => self.complete(e, q, len),
                    None => Ok(()),
                };
                if let Err(f) = r {
                    self.fault_queue(eng, e, queue, f);
                }
            }
            Ok(Some(done)) => {
                eng.inflight = Some(InFlight::Transfer {
                    queue,
                    cmd,
                    done,
                    len,
                });
            }
        }
    }

    /// Does up to CHUNK_BYTES of `cmd` from `done`; returns the new progress or `None` when
    /// finished.
    fn transfer_chunk(&self, sp: Space, cmd: &Command, done: u64) -> Result<Option<u64>, Fault> {
        let total = match *cmd {
            Command::Copy { bytes, .. } | Command::Fill { bytes, .. } => bytes,
            _ => return Ok(None),
        };
        let n = CHUNK_BYTES.min(total.saturating_sub(done));
        if n == 0 {
            return Ok(None);
        }
        // The ranges were checked when the packet started, so these sums do not overflow; if
        // they did, the all-ones address faults like any unreachable one.
        let at = |base: u64| GpuVa::new(base.saturating_add(done));
        match *cmd {
            Command::Copy { src, dst, .. } => {
                let s = self.sp_spans(sp, at(src), n, Access::Read)?;
                let d = self.sp_spans(sp, at(dst), n, Access::Write)?;
                for (dw, sw) in words(&d).zip(words(&s)) {
                    // Relaxed: the packet's completion (Release on read_ptr, and any later
                    // fence signal) publishes the data.
                    dw.store(sw.load(Ordering::Relaxed), Ordering::Relaxed);
                }
            }
            Command::Fill { dst, pattern, .. } => {
                let d = self.sp_spans(sp, at(dst), n, Access::Write)?;
                for w in words(&d) {
                    w.store(pattern, Ordering::Relaxed);
                }
            }
            _ => {}
        }
        let done = done + n;
        Ok(if done >= total { None } else { Some(done) })
    }
}
