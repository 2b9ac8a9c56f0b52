//! Per-engine scheduling logs (hardware scheduling, docs/hardware.md 5.7,
//! `rvgpu_hw::schedlog`).
//!
//! Each engine remembers the context tag (`QueueDescriptor::context_tag`) that owns the packet
//! it last ran (`SchedState::current`, 0 = none). The CMP logs only when that changes:
//! - it picks a packet of a queue with tag `T != current`: `current` (if non-zero) goes
//!   `Ready` (some queue of the engine with that tag is still runnable) or `Idle`, then `T`
//!   (if non-zero) goes `Running`;
//! - a pass finds nothing runnable: `current` (if non-zero) goes `Idle`;
//! - a successful engine reset: `current` (if non-zero) goes `Idle`.
//!
//! Packets of the context that is already current cost one comparison: nothing is read,
//! written or allocated. Writing an entry translates its four words and the header word in
//! the system space first (so a log that does not translate writes nothing), then stores the
//! entry (Relaxed) and the header word (Release: it publishes the entry to the OS, which
//! reads the header with Acquire). No allocation: every access is one translated word.
//!
//! The CMP keeps the position itself (`Log::index`/`wrap`, loaded from the header when the
//! log is adopted) and the entry count comes only from `SCHED_LOG_ENTRIES`, so nothing in
//! memory can steer a write outside `[base, base + buffer_size(entries))`, which adoption
//! checked is reachable. Everything runs under the CMP lock: `SCHED_LOG_CTRL` takes it too,
//! which is what makes it synchronous (when the write returns, the CMP writes nothing more
//! to the previous log).

use std::sync::atomic::Ordering;

use rvgpu_hw::addr::{GpuVa, ACCESS_ALIGN};
use rvgpu_hw::event::{EventKind, EventRecord, FaultCode};
use rvgpu_hw::mmu::Access;
use rvgpu_hw::queue::NO_QUEUE;
use rvgpu_hw::regs::IntCause;
use rvgpu_hw::schedlog::{
    advance, buffer_size, entry_offset, header_parts, header_word, ContextState, ENTRIES_MAX,
    ENTRY_CONTEXT, ENTRY_OPERATION, ENTRY_SIZE, ENTRY_STATE, ENTRY_TIMESTAMP, HEADER_INDEX,
    OP_CONTEXT_STATE_CHANGE,
};

use super::bus::{words, Fault};
use super::cmp::Engine;
use super::regs::EngineRegs;
use super::{lock, Core};

/// `SCHED_LOG_CTRL` values.
const CTRL_STOP: u32 = 0;
const CTRL_ADOPT: u32 = 1;

/// An adopted log: where it is, what raises the interrupt, and the CMP's own copy of the
/// position (never read back from memory after adoption).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Log {
    /// System-space address of the header; the whole buffer was reachable at adoption.
    base: GpuVa,
    /// Entries, 1..=`ENTRIES_MAX` (from the register).
    entries: u32,
    /// Writing this entry posts a `SchedLog` event (never, if >= `entries`).
    irq_entry: u32,
    /// Next entry to write, < `entries`.
    index: u32,
    /// Laps completed (`WraparoundCount`).
    wrap: u32,
}

/// Where the next entry goes and what the header says after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    index: u32,
    /// `AtomicWraparoundAndEntryIndex` after this entry.
    header: u64,
    /// This is the interrupt entry.
    irq: bool,
}

impl Log {
    /// A log of `entries` entries at `base`, continuing at the header word `header`; `None`
    /// if the entry count or the header's index is out of range.
    fn new(base: GpuVa, entries: u32, irq_entry: u32, header: u64) -> Option<Self> {
        if entries == 0 || entries > ENTRIES_MAX {
            return None;
        }
        let (index, wrap) = header_parts(header);
        (index < entries).then_some(Self {
            base,
            entries,
            irq_entry,
            index,
            wrap,
        })
    }

    /// The slot for the next entry; the position moves past it.
    fn take_slot(&mut self) -> Slot {
        let index = self.index;
        let (next, wrap) = advance(index, self.wrap, self.entries);
        self.index = next;
        self.wrap = wrap;
        Slot {
            index,
            header: header_word(next, wrap),
            irq: index == self.irq_entry,
        }
    }
}

/// One state change to log: `(context tag, new state)`.
type Change = (u64, ContextState);

/// One engine's scheduling-log state (part of the CMP state, under the CMP lock).
#[derive(Debug, Default)]
pub(crate) struct SchedState {
    /// Context tag owning the packet the engine last ran; 0 = none.
    current: u64,
    /// The log being written, if logging is on.
    log: Option<Log>,
}

impl SchedState {
    /// The engine picks a packet of context `tag` while `current` is another context;
    /// `old_runnable`: some queue of the engine with tag `current` is still runnable. Returns
    /// the changes to log, in order.
    fn switch(&mut self, tag: u64, old_runnable: bool) -> [Option<Change>; 2] {
        if tag == self.current {
            return [None, None];
        }
        let old = self.current;
        self.current = tag;
        let state = if old_runnable {
            ContextState::Ready
        } else {
            ContextState::Idle
        };
        [
            (old != 0).then_some((old, state)),
            (tag != 0).then_some((tag, ContextState::Running)),
        ]
    }

    /// The engine runs nothing any more (a pass found nothing runnable, or a reset): the
    /// change to log, if a context was current.
    fn stop(&mut self) -> Option<Change> {
        let old = std::mem::take(&mut self.current);
        (old != 0).then_some((old, ContextState::Idle))
    }

    /// Whether a log is being written (test introspection and the doc's "logging on").
    #[cfg(test)]
    fn logging(&self) -> bool {
        self.log.is_some()
    }
}

impl Core {
    /// The engine is about to run a packet of queue `qi`: logs a context switch if its tag is
    /// not the current one. Called with the CMP lock held, before the packet executes.
    pub(crate) fn sched_log_pick(&self, eng: &mut Engine, e: usize, qi: usize) {
        let Some(tag) = eng.queues.get(qi).map(|q| q.desc.context_tag) else {
            return;
        };
        let cur = eng.sched.current;
        // The hot path: another packet of the running context.
        if tag == cur {
            return;
        }
        let old_runnable = cur != 0
            && eng
                .queues
                .iter()
                .any(|q| q.desc.context_tag == cur && q.runnable());
        for c in eng.sched.switch(tag, old_runnable).into_iter().flatten() {
            self.sched_log_write(&mut eng.sched, e, c);
        }
    }

    /// The engine has nothing to run (a pass found nothing runnable) or was reset: logs the
    /// current context `Idle`. Returns whether a context was current. Called with the CMP
    /// lock held.
    pub(crate) fn sched_log_stop(&self, eng: &mut Engine, e: usize) -> bool {
        let Some(c) = eng.sched.stop() else {
            return false;
        };
        self.sched_log_write(&mut eng.sched, e, c);
        true
    }

    /// Writes one entry if logging is on; a log that no longer translates turns logging off
    /// with a `BadAddress` fault (`NO_QUEUE`, `arg1` = the word that failed).
    fn sched_log_write(&self, st: &mut SchedState, e: usize, (tag, state): Change) {
        let Some(log) = st.log.as_mut() else {
            return;
        };
        match self.sched_log_entry(log, tag, state) {
            Ok(slot) if slot.irq => self.post_event(
                EventRecord {
                    kind: EventKind::SchedLog as u8,
                    engine: e as u8,
                    flags: 0,
                    queue_id: NO_QUEUE,
                    arg0: slot.header,
                    arg1: 0,
                    arg2: 0,
                },
                IntCause::SCHED_LOG,
            ),
            Ok(_) => {}
            Err(f) => {
                st.log = None;
                self.post_commit_fault(e, NO_QUEUE, Fault::bad_address(f.addr));
            }
        }
    }

    /// Translates, then writes, the next entry and the header word after it.
    fn sched_log_entry(&self, log: &mut Log, tag: u64, state: ContextState) -> Result<Slot, Fault> {
        let sys = self.system_space();
        let bad = Fault::bad_address(log.base);
        // Adoption checked the whole buffer, and index < entries <= ENTRIES_MAX: these sums
        // do not overflow; if they did, the write would fault, not wrap.
        let entry = entry_offset(log.index)
            .and_then(|o| log.base.checked_add(o))
            .ok_or(bad)?;
        // Every word translated before the first store: a log that does not translate (any
        // more) gets nothing written. The entry is one run (one translation per page, not per
        // word), the header word another.
        let spans = self.sp_spans(sys, entry, ENTRY_SIZE, Access::Write)?;
        let header = self.word(
            sys,
            log.base.checked_add(HEADER_INDEX).ok_or(bad)?,
            Access::Write,
        )?;
        const _: () = assert!(
            ENTRY_TIMESTAMP == 0
                && ENTRY_OPERATION == 8
                && ENTRY_CONTEXT == 16
                && ENTRY_STATE == 24
                && ENTRY_SIZE == 32
        );
        let values = [
            self.clock.now(),
            // OperationType, then its reserved u32 (0).
            u64::from(OP_CONTEXT_STATE_CHANGE),
            tag,
            // newContextState, then the rest of the entry (0).
            state as u64,
        ];
        for (w, v) in words(&spans).zip(values) {
            // Relaxed: the Release store of the header below publishes the entry.
            w.store(v, Ordering::Relaxed);
        }
        let slot = log.take_slot();
        // Release: the OS reads the header with Acquire and then the entries behind it.
        self.store_word(header, slot.header, Ordering::Release)?;
        Ok(slot)
    }

    /// SCHED_LOG_CTRL: 1 adopts the programmed log, 0 stops logging, other values are
    /// ignored. Synchronous: it takes the CMP lock, which the CMP holds while it writes an
    /// entry. A log that cannot be used leaves logging off and posts a fault.
    pub(crate) fn sched_log_ctrl(&self, e: usize, v: u32) {
        if !self.cfg.sched_log || !matches!(v, CTRL_STOP | CTRL_ADOPT) {
            return;
        }
        let Some(r) = self.regs.engines.get(e) else {
            return;
        };
        // The CMP lock first: the CMP is between quanta, and a TLB invalidation cannot
        // overlap the adoption's translations.
        let mut cmp = lock(&self.cmp);
        let Some(eng) = cmp.engines.get_mut(e) else {
            return;
        };
        let mut fault = None;
        eng.sched.log = if v == CTRL_ADOPT {
            match self.sched_log_adopt(r) {
                Ok(log) => Some(log),
                Err(f) => {
                    fault = Some(f);
                    None
                }
            }
        } else {
            None
        };
        drop(cmp);
        if let Some(f) = fault {
            self.post_commit_fault(e, NO_QUEUE, f);
        }
    }

    /// Checks the log programmed in the registers and reads its starting position.
    fn sched_log_adopt(&self, r: &EngineRegs) -> Result<Log, Fault> {
        // Relaxed: plain configuration written before this CTRL write (mmio.rs).
        let base = GpuVa::new(r.sched_log_base.load(Ordering::Relaxed));
        let entries = r.sched_log_entries.load(Ordering::Relaxed);
        let irq_entry = r.sched_log_irq_entry.load(Ordering::Relaxed);
        if entries == 0 || entries > ENTRIES_MAX {
            return Err(Fault::new(FaultCode::BadArgument, base));
        }
        if !base.is_aligned(ACCESS_ALIGN) {
            return Err(Fault::bad_address(base));
        }
        // The log lives in the CMP's own (system) space; every byte must be writable there.
        // A translation failure is reported as BadAddress too: the log is a CMP structure,
        // not a queue's access (docs/hardware.md 5.7).
        let sys = self.system_space();
        self.sp_check(sys, base, buffer_size(entries), Access::Write)
            .map_err(|_| Fault::bad_address(base))?;
        // Acquire: the OS initialised the header before the driver adopted the log.
        let header = self
            .sp_load(sys, base, Access::Read, Ordering::Acquire)
            .map_err(|_| Fault::bad_address(base))?;
        // A header whose index is not an entry of this log: unusable (BadArgument).
        Log::new(base, entries, irq_entry, header).ok_or(Fault::new(FaultCode::BadArgument, base))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: u64 = 0xA;
    const B: u64 = 0xB;

    #[test]
    fn switches_log_old_then_new() {
        let mut s = SchedState::default();
        assert_eq!(s.switch(A, false), [None, Some((A, ContextState::Running))]);
        assert_eq!(s.switch(A, true), [None, None], "same context: nothing");
        assert_eq!(
            s.switch(B, true),
            [
                Some((A, ContextState::Ready)),
                Some((B, ContextState::Running))
            ]
        );
        assert_eq!(
            s.switch(A, false),
            [
                Some((B, ContextState::Idle)),
                Some((A, ContextState::Running))
            ]
        );
        assert_eq!(s.switch(0, true), [Some((A, ContextState::Ready)), None]);
        assert_eq!(s.switch(0, true), [None, None], "untagged to untagged");
        assert_eq!(s.stop(), None, "nothing current");
        assert_eq!(s.switch(B, false), [None, Some((B, ContextState::Running))]);
        assert_eq!(s.stop(), Some((B, ContextState::Idle)));
        assert_eq!(s.stop(), None);
        assert!(!s.logging());
    }

    #[test]
    fn slots_wrap_count_laps_and_flag_the_interrupt_entry() {
        let base = GpuVa::new(0x1000);
        let mut log = Log::new(base, 3, 1, header_word(2, 7)).unwrap();
        let s = log.take_slot();
        assert_eq!((s.index, header_parts(s.header), s.irq), (2, (0, 8), false));
        let s = log.take_slot();
        assert_eq!((s.index, header_parts(s.header), s.irq), (0, (1, 8), false));
        let s = log.take_slot();
        assert_eq!((s.index, header_parts(s.header), s.irq), (1, (2, 8), true));
        // One entry: every write is a lap.
        let mut one = Log::new(base, 1, 0, 0).unwrap();
        assert_eq!(header_parts(one.take_slot().header), (0, 1));
        assert_eq!(header_parts(one.take_slot().header), (0, 2));
    }

    #[test]
    fn unusable_sizes_and_positions_are_refused() {
        let base = GpuVa::new(0x1000);
        assert_eq!(Log::new(base, 0, 0, 0), None);
        assert_eq!(Log::new(base, ENTRIES_MAX + 1, 0, 0), None);
        assert_eq!(Log::new(base, 4, 0, header_word(4, 0)), None);
        assert!(Log::new(base, ENTRIES_MAX, 0, header_word(ENTRIES_MAX - 1, u32::MAX)).is_some());
        // The wraparound count itself wraps rather than overflowing.
        let mut log = Log::new(base, 1, 5, header_word(0, u32::MAX)).unwrap();
        let s = log.take_slot();
        assert_eq!((header_parts(s.header), s.irq), ((0, 0), false));
    }
}
