//! Interrupt handling: reading the device's causes and its event ring (ISR side).
//!
//! The ISR follows the protocol of docs/hardware.md "Interrupts": read INT_STATUS, ack the
//! bits read *before* draining (a record published during the drain raises its cause again,
//! so none is lost), read WPTR, consume records, write RPTR. Everything here runs at device
//! IRQL, allocates nothing, and trusts nothing the device wrote: a record of an unknown kind
//! is counted and skipped; a write pointer more than a ring ahead is treated as an overflow.

use core::sync::atomic::{fence, Ordering};
use rvgpu_hw::addr::GpuVa;

use rvgpu_hw::engine::{EngineState, ResetResult};
use rvgpu_hw::event::{EventKind, EventRecord, FaultCode};
use rvgpu_hw::regs::{self, IntCause};

use crate::dma::DmaBuffer;
use crate::mmio::Regs;
use crate::platform::Platform;

/// One decoded event record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceEvent {
    /// A fence signal needed an interrupt (NF-03).
    FenceSignaled {
        engine: u32,
        queue: u32,
        tag: u64,
        value: u64,
        /// The MonitoredValue VA the command named, in the signalling queue's address space
        /// (each process has its own VA for a fence): not a key to the fence, which the ISR
        /// finds by `tag` (fence::registry).
        monitored_addr: GpuVa,
        /// An always-interrupt (legacy monitored-fence) signal.
        legacy: bool,
        /// The device wrote the signal's log entry before deciding the interrupt
        /// (`FLAG_LOGGED`): the running queue's signal log holds it.
        logged: bool,
    },
    /// PROGRESS with interrupt: DMA completed up to `value` on `queue`.
    Progress { engine: u32, queue: u32, value: u64 },
    /// An engine changed state.
    EngineState {
        engine: u32,
        old: Option<EngineState>,
        new: Option<EngineState>,
    },
    /// A queue faulted.
    Fault {
        engine: u32,
        queue: u32,
        code: Option<FaultCode>,
        addr: GpuVa,
        rptr: u64,
    },
    /// An engine reset finished.
    ResetDone {
        engine: u32,
        result: Option<ResetResult>,
        queue: u32,
        rptr: u64,
    },
    /// An engine's scheduling log reached its interrupt entry (`header`: the log's
    /// `AtomicWraparoundAndEntryIndex` after it).
    SchedLog { engine: u32, header: u64 },
}

impl DeviceEvent {
    /// Decodes a record; `None` for an unknown kind.
    pub fn decode(r: &EventRecord) -> Option<Self> {
        let engine = u32::from(r.engine);
        let queue = r.queue_id;
        let small = |v: u64| u32::try_from(v).ok();
        Some(match EventKind::from_u8(r.kind)? {
            EventKind::FenceSignaled => Self::FenceSignaled {
                engine,
                queue,
                tag: r.arg0,
                value: r.arg1,
                monitored_addr: GpuVa::new(r.arg2),
                legacy: r.flags & rvgpu_hw::event::FLAG_LEGACY_SIGNAL != 0,
                logged: r.flags & rvgpu_hw::event::FLAG_LOGGED != 0,
            },
            EventKind::Progress => Self::Progress {
                engine,
                queue,
                value: r.arg0,
            },
            EventKind::EngineState => Self::EngineState {
                engine,
                old: small(r.arg0).and_then(EngineState::from_u32),
                new: small(r.arg1).and_then(EngineState::from_u32),
            },
            EventKind::Fault => Self::Fault {
                engine,
                queue,
                code: small(r.arg0).and_then(FaultCode::from_u32),
                addr: GpuVa::new(r.arg1),
                rptr: r.arg2,
            },
            EventKind::ResetDone => Self::ResetDone {
                engine,
                result: small(r.arg0).and_then(ResetResult::from_u32),
                queue: small(r.arg1).unwrap_or(rvgpu_hw::queue::NO_QUEUE),
                rptr: r.arg2,
            },
            EventKind::SchedLog => Self::SchedLog {
                engine,
                header: r.arg0,
            },
        })
    }
}

/// What one ISR pass saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IsrSummary {
    /// Causes read from INT_STATUS (and acknowledged).
    pub causes: u32,
    /// Records consumed.
    pub records: u32,
    /// Records of unknown kind (skipped).
    pub unknown: u32,
    /// Records may have been lost: the device reported an overflow, or its write pointer was
    /// implausible. Fence reports must then say "scan everything" (NF-14).
    pub overflow: bool,
}

/// The driver's side of the event ring. Touched only by the ISR (and by start/stop before
/// interrupts are enabled / after they are disabled).
#[derive(Debug)]
pub struct EventRing {
    buf: DmaBuffer,
    /// Records in the ring (power of two).
    size: u32,
    /// Free-running count of records consumed.
    rptr: u32,
    /// The device keeps the event write-back word, in the buffer right after the records
    /// (CAPS.EVENT_WB, docs/hardware.md 7.5).
    writeback: bool,
    /// The interrupt is message-signalled (never shared).
    message: bool,
}

/// Records per event ring: 4 KiB of 32-byte records.
pub const EVENT_RING_RECORDS: u32 = 128;

impl EventRing {
    /// Wraps a zeroed buffer of at least `size * 32` bytes; `size` must be a power of two.
    pub fn new(buf: DmaBuffer, size: u32) -> Option<Self> {
        let need = u64::from(size).checked_mul(32)?;
        (size.is_power_of_two() && buf.bytes() >= need).then_some(Self {
            buf,
            size,
            rptr: 0,
            writeback: false,
            message: false,
        })
    }

    /// Uses the event write-back word (if the buffer has room for it after the records) and
    /// says whether the interrupt is message-signalled. Before [`EventRing::program`].
    pub fn set_mode(&mut self, writeback: bool, message: bool) {
        let room = self
            .wb_index()
            .and_then(|i| i.checked_mul(8))
            .is_some_and(|b| b < self.buf.bytes());
        self.writeback = writeback && room;
        self.message = message;
    }

    /// Word index of the write-back word: right after the records.
    fn wb_index(&self) -> Option<u64> {
        u64::from(self.size).checked_mul(4)
    }

    /// The write-back word, as the device last wrote it: `(causes, write pointer)`. Acquire:
    /// the device stores it after the records it counts.
    fn write_back(&self) -> Option<(u32, u32)> {
        let w = self.buf.load(self.wb_index()?, Ordering::Acquire)?;
        let causes = u32::try_from(w >> 32).unwrap_or(u32::MAX);
        let wptr = u32::try_from(w & u64::from(u32::MAX)).unwrap_or(0);
        Some((causes, wptr))
    }

    /// The buffer (for programming the device and for freeing).
    pub fn buffer(&self) -> &DmaBuffer {
        &self.buf
    }

    /// Takes the buffer back (at stop).
    pub fn into_buffer(self) -> DmaBuffer {
        self.buf
    }

    /// Programs the device's event-ring registers and enables posting (resets pointers).
    pub fn program<P: Platform>(&mut self, regs: &Regs<P>) {
        self.rptr = 0;
        regs.write(regs::EventRingBase::new(self.buf.gpu().get()));
        regs.write(regs::EventRingSize::new(self.size));
        let wb = self
            .wb_index()
            .and_then(|i| i.checked_mul(8))
            .and_then(|b| self.buf.gpu().get().checked_add(b))
            .filter(|_| self.writeback)
            .unwrap_or(0);
        if self.writeback {
            // Zero first: the word of a previous life must not look like pending records.
            let _ = self
                .wb_index()
                .map(|i| self.buf.store(i, 0, Ordering::Relaxed));
        }
        regs.write(regs::EventWbAddr::new(wb));
        regs.write(regs::EventRingCtrl::new(1));
    }

    /// Runs the ISR protocol: returns `None` if the interrupt is not ours (no cause pending,
    /// or the device is gone and reads all-ones), otherwise calls `on_event` for each record
    /// and returns what it saw.
    // The ISR's one call site: kept inline so the per-event closure and the ring's registers
    // stay in one body (outlined, it cost ~80 instructions per interrupt in the simulated
    // OS's instantiation).
    #[inline(always)]
    pub fn service<P: Platform>(
        &mut self,
        regs: &Regs<P>,
        mut on_event: impl FnMut(DeviceEvent),
    ) -> Option<IsrSummary> {
        // A message interrupt is never shared: with the write-back word the pending causes
        // are in memory, and the ISR reads no register at all (hardware.md 7.5). A line may
        // be shared, so the device is asked whether it is ours: one read.
        let wb = if self.writeback {
            self.write_back()
        } else {
            None
        };
        let status = match wb {
            // Nothing in memory says why the message came (a spurious message, or a word
            // the device has not rewritten yet): the register read below tells.
            Some((causes, wptr)) if self.message && (causes != 0 || wptr != self.rptr) => causes,
            _ => {
                let status = regs.read::<regs::IntStatus>().raw();
                if status == u32::MAX {
                    // Not ours (hardware.md 7.3); tell a lost device apart from a glitch.
                    let _ = regs.check_lost();
                    return None;
                }
                if status == 0 {
                    return None;
                }
                status
            }
        };
        // Ack first: anything posted from here on raises its cause again (and a record
        // posted before the ack lands but after the write pointer is read raises
        // EVENT_PENDING at the RPTR write below).
        if status != 0 {
            regs.write(regs::IntAck::new(status));
        }
        let mut summary = IsrSummary {
            causes: status,
            overflow: IntCause::from_bits_retain(status).contains(IntCause::EVENT_OVERFLOW),
            ..Default::default()
        };
        // The write pointer: from the write-back word (memory, after the ack) or the register.
        let wptr = match self.write_back().filter(|_| self.writeback) {
            Some((_, w)) => w,
            None => regs.read::<regs::EventRingWptr>().raw(),
        };
        // The device published the records before the write pointer; order the record reads
        // after it.
        fence(Ordering::Acquire);
        let pending = wptr.wrapping_sub(self.rptr);
        if pending > self.size {
            // The device claims more than a ring: records were overwritten or it is broken.
            summary.overflow = true;
            self.rptr = wptr;
        }
        while self.rptr != wptr {
            let slot = u64::from(self.rptr & self.size.wrapping_sub(1));
            let base = slot.wrapping_mul(4);
            // One bounds check per record (`new` made room for every slot's four words).
            let w = self
                .buf
                .load_words::<4>(base, Ordering::Relaxed)
                .unwrap_or([0; 4]);
            match DeviceEvent::decode(&EventRecord::from_words(w)) {
                Some(e) => on_event(e),
                None => summary.unknown = summary.unknown.saturating_add(1),
            }
            summary.records = summary.records.saturating_add(1);
            self.rptr = self.rptr.wrapping_add(1);
        }
        regs.write(regs::EventRingRptr::new(self.rptr));
        Some(summary)
    }
}

impl DeviceEvent {
    /// The engine the record says it comes from.
    pub fn engine(&self) -> u32 {
        match *self {
            Self::FenceSignaled { engine, .. }
            | Self::Progress { engine, .. }
            | Self::EngineState { engine, .. }
            | Self::Fault { engine, .. }
            | Self::ResetDone { engine, .. }
            | Self::SchedLog { engine, .. } => engine,
        }
    }
}

/// Why the ISR dropped an event record instead of acting on it (the GPU and the
/// memory it writes are untrusted, so a record must fit what the driver knows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Rejection {
    /// The record names an engine the device does not have.
    Engine = 0,
    /// The record names a queue that cannot be on that engine (out of range, another
    /// engine's, or a fault for a queue the driver does not know, or that the device holds
    /// and did not stop: `QUEUE_STATE`).
    Queue = 1,
    /// An engine-state record that does not match the engine's `STATUS` now (e.g. "hung"
    /// for a running engine), or a state the device never reports.
    State = 2,
    /// A `ResetDone` with no engine reset outstanding.
    Reset = 3,
    /// A `SchedLog` record for an engine without a scheduling log.
    SchedLog = 4,
}

/// Number of [`Rejection`] kinds.
pub const REJECTION_KINDS: usize = 5;

/// What the ISR needs beyond the event ring to judge a record, plus the counters of what it
/// dropped. Atomics only: the ISR reads it at device IRQL, PASSIVE code updates it.
#[derive(Debug)]
pub struct EventGuard {
    /// Engine resets the driver started whose `ResetDone` has not been seen.
    resets: [core::sync::atomic::AtomicU32; regs::ENGINE_MAX as usize],
    /// Per engine: 0 = no scheduling log; else bit 32 set and bits 31:0 the
    /// `FirstFreeEntryIndex` the log's header has right after its interrupt entry (what a
    /// genuine `SchedLog` record carries in `arg0`, hardware.md 5.7).
    sched_logs: [core::sync::atomic::AtomicU64; regs::ENGINE_MAX as usize],
    /// Records dropped, per [`Rejection`].
    rejected: [core::sync::atomic::AtomicU64; REJECTION_KINDS],
}

impl Default for EventGuard {
    fn default() -> Self {
        Self {
            resets: [const { core::sync::atomic::AtomicU32::new(0) }; regs::ENGINE_MAX as usize],
            sched_logs: [const { core::sync::atomic::AtomicU64::new(0) };
                regs::ENGINE_MAX as usize],
            rejected: [const { core::sync::atomic::AtomicU64::new(0) }; REJECTION_KINDS],
        }
    }
}

impl EventGuard {
    fn reset_slot(&self, engine: u32) -> Option<&core::sync::atomic::AtomicU32> {
        self.resets.get(usize::try_from(engine).ok()?)
    }

    /// An engine reset of `engine` is about to be requested (before the `CTRL` write, so the
    /// `ResetDone` it posts always finds it).
    pub fn reset_started(&self, engine: u32) {
        if let Some(r) = self.reset_slot(engine) {
            let _ = r.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |v| v.checked_add(1));
        }
    }

    /// ISR: consumes one outstanding reset of `engine`; false if none was outstanding.
    pub fn take_reset(&self, engine: u32) -> bool {
        self.reset_slot(engine).is_some_and(|r| {
            r.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| v.checked_sub(1))
                .is_ok()
        })
    }

    /// Forgets every outstanding reset (an adapter reset or a restart empties the event
    /// ring, so their records will never come).
    pub fn clear_resets(&self) {
        for r in &self.resets {
            r.store(0, Ordering::Release);
        }
    }

    fn sched_log_slot(&self, engine: u32) -> Option<&core::sync::atomic::AtomicU64> {
        self.sched_logs.get(usize::try_from(engine).ok()?)
    }

    /// `engine` has a scheduling log of `entries` entries with its interrupt at entry
    /// `irq_entry` from now on.
    pub fn sched_log_on(&self, engine: u32, entries: u32, irq_entry: u32) {
        // The header right after entry `irq_entry` was written; an entry outside the log
        // never interrupts (u32::MAX matches no index below `entries`).
        let next = if irq_entry < entries {
            irq_entry
                .checked_add(1)
                .and_then(|n| n.checked_rem(entries))
                .unwrap_or(0)
        } else {
            u32::MAX
        };
        if let Some(s) = self.sched_log_slot(engine) {
            s.store((1 << 32) | u64::from(next), Ordering::Release);
        }
    }

    /// Whether `header` (a `SchedLog` record's `arg0`) fits `engine`'s scheduling log.
    pub fn sched_log_fits(&self, engine: u32, header: u64) -> bool {
        self.sched_log_slot(engine).is_some_and(|s| {
            let v = s.load(Ordering::Acquire);
            v >> 32 == 1 && (header & u64::from(u32::MAX)) == (v & u64::from(u32::MAX))
        })
    }

    /// Counts one dropped record.
    pub fn reject(&self, why: Rejection) {
        if let Some(c) = self.rejected.get(why as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records dropped for `why`.
    pub fn rejected(&self, why: Rejection) -> u64 {
        self.rejected
            .get(why as usize)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Records dropped, all reasons.
    pub fn rejected_total(&self) -> u64 {
        self.rejected
            .iter()
            .fold(0u64, |t, c| t.saturating_add(c.load(Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `ResetDone` is plausible only for a reset the driver started, once each.
    #[test]
    fn reset_done_accepted_only_for_an_outstanding_reset() {
        let g = EventGuard::default();
        assert!(!g.take_reset(0), "nothing outstanding");
        g.reset_started(0);
        assert!(!g.take_reset(1), "another engine's");
        assert!(g.take_reset(0));
        assert!(!g.take_reset(0), "consumed");
        g.reset_started(2);
        g.clear_resets();
        assert!(!g.take_reset(2), "an adapter reset forgets them");
        assert!(!g.take_reset(regs::ENGINE_MAX), "out of range");
    }

    /// A `SchedLog` record must carry the index right after the log's interrupt
    /// entry (wrapping at the log's size); an engine without a log accepts none.
    #[test]
    fn sched_log_header_must_follow_the_interrupt_entry() {
        let g = EventGuard::default();
        assert!(!g.sched_log_fits(0, 0), "no log");
        g.sched_log_on(0, 8, 3);
        assert!(g.sched_log_fits(0, 4));
        // The wraparound count (bits 63:32) is not checked, only the index.
        assert!(g.sched_log_fits(0, (5 << 32) | 4));
        assert!(!g.sched_log_fits(0, 3));
        assert!(!g.sched_log_fits(1, 4), "engine 1 has no log");
        g.sched_log_on(1, 8, 7);
        assert!(g.sched_log_fits(1, 0), "wraps");
        g.sched_log_on(2, 8, 8);
        assert!(
            !(0..=8).any(|i| g.sched_log_fits(2, i)),
            "an entry outside the log"
        );
    }

    /// Rejections are counted per reason and in total.
    #[test]
    fn rejections_are_counted_per_reason() {
        let g = EventGuard::default();
        g.reject(Rejection::State);
        g.reject(Rejection::State);
        g.reject(Rejection::Engine);
        assert_eq!(g.rejected(Rejection::State), 2);
        assert_eq!(g.rejected(Rejection::Engine), 1);
        assert_eq!(g.rejected(Rejection::Queue), 0);
        assert_eq!(g.rejected_total(), 3);
    }
}
