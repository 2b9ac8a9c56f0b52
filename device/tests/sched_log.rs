//! Per-engine scheduling logs (hardware scheduling, docs/hardware.md 5.7, `rvgpu_hw::schedlog`):
//! what the CMP writes when the context (`QueueDescriptor::context_tag`) owning the engine's
//! packets changes, in the OS's `DXGK_SCHEDULING_LOG_BUFFER` layout; the interrupt entry;
//! adopting and stopping a log (`SCHED_LOG_CTRL`); logs the CMP cannot use; engine and
//! adapter reset; the capability switched off. Step mode unless the test name says threaded.
mod common;

use rvgpu_hw::addr::PhysAddr;
use std::sync::atomic::Ordering;

use common::*;
use rvgpu_device::{DeviceConfig, Mode};
use rvgpu_hw::cmd::Command;
use rvgpu_hw::engine::ENGINE_CTRL_RESET;
use rvgpu_hw::event::{EventKind, EventRecord, FaultCode};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::mmu::{self, PageAttrs, Pte};
use rvgpu_hw::queue::NO_QUEUE;
use rvgpu_hw::regs::{self, Caps, IntCause};
use rvgpu_hw::schedlog::{
    buffer_size, entry_offset, header_parts, header_word, ContextState, ENTRIES_MAX,
    HEADER_NUMBER_OF_ENTRIES, OP_CONTEXT_STATE_CHANGE,
};

use ContextState::{Idle, Ready, Running};

const A: u64 = 0xA0A0_0000_0001;
const B: u64 = 0xB0B0_0000_0002;

/// One decoded log entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    ts: u64,
    tag: u64,
    state: ContextState,
}

/// A scheduling log as the OS allocates it: zeroed header (position 0, lap 0) with its
/// NumberOfEntries, followed by `entries` zeroed entries, and a sentinel word right after the
/// buffer that the CMP must never touch.
#[derive(Clone, Copy, Debug)]
struct Log {
    base: u64,
    entries: u32,
}

const SENTINEL: u64 = 0x5E47_1AE1_5E47_1AE1;

impl Log {
    fn new(rig: &mut Rig, entries: u32) -> Self {
        let base = rig.alloc(buffer_size(entries) + 8);
        Self::at(rig, base, entries)
    }

    fn at(rig: &Rig, base: u64, entries: u32) -> Self {
        rig.mem
            .write_u64(
                PhysAddr::new(base + HEADER_NUMBER_OF_ENTRIES),
                u64::from(entries),
            )
            .unwrap();
        rig.mem
            .write_u64(PhysAddr::new(base + buffer_size(entries)), SENTINEL)
            .unwrap();
        Self { base, entries }
    }

    /// `(FirstFreeEntryIndex, WraparoundCount)`, read as the OS does (Acquire).
    fn header(&self, rig: &Rig) -> (u32, u32) {
        header_parts(
            rig.mem
                .load(PhysAddr::new(self.base), Ordering::Acquire)
                .unwrap(),
        )
    }

    /// The entry in slot `i`, checking the words the CMP must leave 0; `None` if the slot
    /// was never written.
    fn slot(&self, rig: &Rig, i: u32) -> Option<Entry> {
        let w = rig
            .mem
            .read_words(PhysAddr::new(self.base + entry_offset(i).unwrap()), 4)
            .unwrap();
        if w == [0; 4] {
            return None;
        }
        assert_eq!(w[1], u64::from(OP_CONTEXT_STATE_CHANGE), "operation {w:x?}");
        assert_eq!(w[3] >> 32, 0, "rest of the entry {w:x?}");
        let state = ContextState::from_u32(w[3] as u32).expect("a known state");
        Some(Entry {
            ts: w[0],
            tag: w[2],
            state,
        })
    }

    /// Slots `0..n`, all written.
    fn first(&self, rig: &Rig, n: u32) -> Vec<Entry> {
        (0..n)
            .map(|i| {
                self.slot(rig, i)
                    .unwrap_or_else(|| panic!("slot {i} empty"))
            })
            .collect()
    }

    /// `(tag, state)` of slots `0..n`.
    fn changes(&self, rig: &Rig, n: u32) -> Vec<(u64, ContextState)> {
        self.first(rig, n)
            .iter()
            .map(|e| (e.tag, e.state))
            .collect()
    }

    /// The CMP wrote nothing outside the buffer, and left NumberOfEntries alone.
    fn check_bounds(&self, rig: &Rig) {
        assert_eq!(
            rig.value(self.base + buffer_size(self.entries)),
            SENTINEL,
            "word after the buffer"
        );
        assert_eq!(
            rig.value(self.base + HEADER_NUMBER_OF_ENTRIES),
            u64::from(self.entries)
        );
    }

    /// A [`round`] on `q` that writes nothing into the log (`why` says why not).
    fn round_unlogged(&self, rig: &mut Rig, q: &mut Q, why: &str) {
        let before = self.snapshot(rig);
        round(rig, q);
        assert_eq!(self.snapshot(rig), before, "{why}");
    }

    /// Every word of the buffer (to show that nothing was written).
    fn snapshot(&self, rig: &Rig) -> Vec<u64> {
        rig.mem
            .read_words(
                PhysAddr::new(self.base),
                (buffer_size(self.entries) / 8) as usize,
            )
            .unwrap()
    }
}

fn reg(e: u32, r: usize) -> usize {
    regs::engine_reg(e, r).unwrap()
}

/// Programs the three registers.
fn program(rig: &Rig, e: u32, base: u64, entries: u32, irq_entry: u32) {
    rig.dev.write64(reg(e, regs::engine::SCHED_LOG_BASE), base);
    rig.dev
        .write32(reg(e, regs::engine::SCHED_LOG_ENTRIES), entries);
    rig.dev
        .write32(reg(e, regs::engine::SCHED_LOG_IRQ_ENTRY), irq_entry);
}

fn ctrl(rig: &Rig, e: u32, v: u32) {
    rig.dev.write32(reg(e, regs::engine::SCHED_LOG_CTRL), v);
}

/// The interrupt entry that is never reached: no interrupt.
const NO_IRQ_ENTRY: u32 = u32::MAX;

/// Programs `log` on engine `e` (no interrupt entry) and adopts it.
fn adopt(rig: &Rig, e: u32, log: &Log) {
    adopt_irq(rig, e, log, NO_IRQ_ENTRY);
}

fn adopt_irq(rig: &Rig, e: u32, log: &Log, irq_entry: u32) {
    program(rig, e, log.base, log.entries, irq_entry);
    ctrl(rig, e, 1);
}

/// A queue of context `tag` on `engine`.
fn tagged(rig: &mut Rig, engine: u32, id: u32, tag: u64) -> Q {
    let mut q = rig.queue(engine, id);
    q.desc.context_tag = tag;
    q
}

/// Queues of the context tags `tags` (ids 1, 2, …) committed together on engine `e`.
fn tagged_committed<const N: usize>(rig: &mut Rig, e: u32, tags: [u64; N]) -> [Q; N] {
    let mut id = 0;
    let qs = tags.map(|tag| {
        id += 1;
        tagged(rig, e, id, tag)
    });
    rig.commit(e, &qs.each_ref());
    qs
}

/// A step-mode rig whose engine `e` logs into a fresh log of `entries` entries (interrupt
/// entry `irq_entry`), with [`tagged_committed`] queues of `tags` there.
fn logging<const N: usize>(
    e: u32,
    entries: u32,
    irq_entry: u32,
    tags: [u64; N],
) -> (Rig, Log, [Q; N]) {
    let mut rig = Rig::step();
    let log = Log::new(&mut rig, entries);
    adopt_irq(&rig, e, &log, irq_entry);
    let qs = tagged_committed(&mut rig, e, tags);
    (rig, log, qs)
}

fn nops(n: usize) -> Vec<Command> {
    vec![Command::Nop { len: 1 }; n]
}

/// `n` NOPs on each of `qs`, then the device runs to idle.
fn run_nops<const N: usize>(rig: &Rig, qs: [&mut Q; N], n: usize) {
    for q in qs {
        rig.submit(q, &nops(n));
    }
    rig.run();
}

/// One packet on `q`, run to idle: the context runs, then goes idle (two entries).
fn round(rig: &mut Rig, q: &mut Q) {
    rig.submit(q, &nops(1));
    rig.run();
}

fn sched_events(rig: &Rig) -> (IntCause, Vec<EventRecord>) {
    let (causes, evs) = rig.isr();
    (causes, of_kind(&evs, EventKind::SchedLog))
}

/// The one Fault record among `evs`.
fn one_fault(evs: &[EventRecord]) -> EventRecord {
    let f = of_kind(evs, EventKind::Fault);
    assert_eq!(f.len(), 1, "exactly one fault: {evs:?}");
    f[0]
}

/// Two contexts on one engine take turns (equal priority, round-robin): every switch logs
/// the old context Ready (it still has work) and the new one Running; the last to run goes
/// Idle; timestamps never go backwards and each switch is later than the previous one.
#[test]
fn two_contexts_take_turns_running_and_ready() {
    let (rig, log, [mut qa, mut qb]) = logging(0, 64, NO_IRQ_ENTRY, [A, B]);
    run_nops(&rig, [&mut qa, &mut qb], 3);
    // A B A B A B, then nothing: A has no work left when B takes its last turn.
    let want = vec![
        (A, Running),
        (A, Ready),
        (B, Running),
        (B, Ready),
        (A, Running),
        (A, Ready),
        (B, Running),
        (B, Ready),
        (A, Running),
        (A, Idle),
        (B, Running),
        (B, Idle),
    ];
    assert_eq!(log.header(&rig), (want.len() as u32, 0));
    assert_eq!(log.changes(&rig, want.len() as u32), want);
    assert_eq!(
        log.slot(&rig, want.len() as u32),
        None,
        "nothing past the header"
    );
    let entries = log.first(&rig, want.len() as u32);
    assert!(
        entries.windows(2).all(|w| w[0].ts <= w[1].ts),
        "{entries:x?}"
    );
    let running: Vec<u64> = entries
        .iter()
        .filter(|e| e.state == Running)
        .map(|e| e.ts)
        .collect();
    assert!(running.windows(2).all(|w| w[0] < w[1]), "{running:?}");
    assert!(running[0] > 0);
    log.check_bounds(&rig);
    // No interrupt entry was programmed: no SchedLog record, no cause.
    let (causes, evs) = sched_events(&rig);
    assert!(!causes.contains(IntCause::SCHED_LOG));
    assert!(evs.is_empty());
}

/// Many packets of one context: two entries in all (performance: switches only).
#[test]
fn packets_of_the_running_context_log_nothing() {
    // Two queues of the same context: switching between them is no context switch.
    let (rig, log, [mut q1, mut q2]) = logging(1, 16, NO_IRQ_ENTRY, [A, A]);
    run_nops(&rig, [&mut q1, &mut q2], 50);
    assert_eq!(rig.dev.completed_commands(1), 100);
    assert_eq!(log.header(&rig), (2, 0));
    assert_eq!(log.changes(&rig, 2), vec![(A, Running), (A, Idle)]);
}

/// A context blocked on a FENCE_WAIT is not runnable: it goes Idle, not Ready, when another
/// context takes the engine, and Running again when its wait is satisfied.
#[test]
fn a_context_that_runs_out_of_work_goes_idle() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let log = Log::new(&mut rig, 16);
    adopt(&rig, 0, &log);
    let [mut qa, mut qb] = tagged_committed(&mut rig, 0, [A, B]);
    rig.submit(&mut qa, &[fence_wait(f, 1), Command::Nop { len: 1 }]);
    rig.submit(&mut qb, &[signal(f, 1, 0, 0)]);
    rig.run();
    assert_eq!(
        log.changes(&rig, 6),
        vec![
            (A, Running),
            (A, Idle),
            (B, Running),
            (B, Idle),
            (A, Running),
            (A, Idle),
        ]
    );
    assert_eq!(log.header(&rig), (6, 0));
}

/// Queues with tag 0 are not logged: the context they interrupt goes Ready, and no Running
/// entry is written for them; an engine running only untagged work writes nothing.
#[test]
fn untagged_queues_are_not_logged() {
    let (rig, log, [mut qu, mut qa]) = logging(0, 16, NO_IRQ_ENTRY, [0, A]);
    rig.submit(&mut qu, &nops(2));
    rig.run();
    assert_eq!(log.header(&rig), (0, 0));
    assert_eq!(log.slot(&rig, 0), None);
    // U A U A, then nothing.
    run_nops(&rig, [&mut qu, &mut qa], 2);
    assert_eq!(
        log.changes(&rig, 4),
        vec![(A, Running), (A, Ready), (A, Running), (A, Idle)]
    );
    assert_eq!(log.header(&rig), (4, 0));
}

/// A small log wraps: entries overwrite the oldest, the header counts laps, the CMP never
/// writes outside the buffer, and scribbling on the header does not steer it (it keeps its
/// own position).
#[test]
fn small_log_wraps_and_counts_laps() {
    let (mut rig, log, [mut q]) = logging(0, 3, NO_IRQ_ENTRY, [A]);
    for _ in 0..4 {
        round(&mut rig, &mut q);
    }
    // Entries 0..8: even Running, odd Idle; entry n in slot n % 3.
    assert_eq!(log.header(&rig), (8 % 3, 8 / 3));
    let slots = log.first(&rig, 3);
    assert_eq!(
        slots.iter().map(|e| e.state).collect::<Vec<_>>(),
        vec![Running, Idle, Idle],
        "slots hold entries 6, 7 and 5"
    );
    assert!(slots[2].ts <= slots[0].ts && slots[0].ts <= slots[1].ts);
    log.check_bounds(&rig);
    // Hostile header: an index far past the end and a bogus lap count. The CMP does not read
    // it back: the next entries go to slots 2 and 0, and the header is rewritten.
    rig.mem
        .write_u64(PhysAddr::new(log.base), header_word(0xFFFF_FFF0, 77))
        .unwrap();
    rig.mem
        .write_u64(PhysAddr::new(log.base + HEADER_NUMBER_OF_ENTRIES), 1 << 40)
        .unwrap();
    round(&mut rig, &mut q);
    assert_eq!(log.header(&rig), (1, 3));
    rig.mem
        .write_u64(PhysAddr::new(log.base + HEADER_NUMBER_OF_ENTRIES), 3)
        .unwrap();
    log.check_bounds(&rig);
    assert_eq!(log.slot(&rig, 2).unwrap().state, Running);
    assert_eq!(log.slot(&rig, 0).unwrap().state, Idle);
}

/// The interrupt entry: writing it posts a SchedLog record (engine, NO_QUEUE, arg0 = the
/// header just after it) and raises IntCause::SCHED_LOG, and again each lap.
#[test]
fn interrupt_at_the_irq_entry_and_again_after_a_wrap() {
    let (mut rig, log, [mut q]) = logging(1, 4, 1, [A]);
    rig.isr();
    // Entries 0 and 1: the second is the interrupt entry.
    round(&mut rig, &mut q);
    let (causes, evs) = sched_events(&rig);
    assert!(causes.contains(IntCause::SCHED_LOG));
    assert_eq!(evs.len(), 1, "{evs:?}");
    let r = evs[0];
    assert_eq!((r.engine, r.queue_id, r.flags), (1, NO_QUEUE, 0));
    assert_eq!(r.arg0, header_word(2, 0));
    // The entry is in memory when the record is seen.
    assert_eq!(log.slot(&rig, 1).unwrap().state, Idle);
    // Entries 2 and 3: none.
    round(&mut rig, &mut q);
    let (causes, evs) = sched_events(&rig);
    assert!(!causes.contains(IntCause::SCHED_LOG));
    assert!(evs.is_empty());
    assert_eq!(log.header(&rig), (0, 1));
    // Entries 4 and 5 (slots 0 and 1 of lap 1): slot 1 again.
    round(&mut rig, &mut q);
    let (causes, evs) = sched_events(&rig);
    assert!(causes.contains(IntCause::SCHED_LOG));
    assert_eq!(evs.len(), 1, "{evs:?}");
    assert_eq!(evs[0].arg0, header_word(2, 1));
    // An interrupt entry at or past ENTRIES never fires.
    adopt_irq(&rig, 1, &log, 4);
    for _ in 0..4 {
        round(&mut rig, &mut q);
    }
    let (causes, evs) = sched_events(&rig);
    assert!(!causes.contains(IntCause::SCHED_LOG));
    assert!(evs.is_empty());
    assert_eq!(log.header(&rig), (2, 3));
}

/// CTRL = 0 stops logging before the write returns; CTRL = 1 adopts the programmed log again,
/// starting at whatever position its header holds.
#[test]
fn ctrl_zero_stops_and_readoption_continues_from_the_header() {
    let (mut rig, log, [mut q]) = logging(0, 8, NO_IRQ_ENTRY, [A]);
    round(&mut rig, &mut q);
    assert_eq!(log.header(&rig), (2, 0));
    ctrl(&rig, 0, 0);
    log.round_unlogged(&mut rig, &mut q, "nothing written while stopped");
    // Values other than 0 and 1 are ignored (logging stays off).
    ctrl(&rig, 0, 2);
    log.round_unlogged(&mut rig, &mut q, "CTRL = 2 is ignored");
    // Re-adopted: continues at the header's position.
    ctrl(&rig, 0, 1);
    round(&mut rig, &mut q);
    assert_eq!(log.header(&rig), (4, 0));
    assert_eq!(
        log.changes(&rig, 4),
        vec![(A, Running), (A, Idle), (A, Running), (A, Idle)]
    );
    // The OS moved the position while logging was off: adoption takes it from the header.
    ctrl(&rig, 0, 0);
    rig.mem
        .write_u64(PhysAddr::new(log.base), header_word(6, 3))
        .unwrap();
    ctrl(&rig, 0, 1);
    round(&mut rig, &mut q);
    assert_eq!(log.header(&rig), (0, 4));
    assert_eq!(log.slot(&rig, 6).unwrap().state, Running);
    assert_eq!(log.slot(&rig, 7).unwrap().state, Idle);
    // No faults anywhere.
    let (_, evs) = rig.isr();
    assert!(of_kind(&evs, EventKind::Fault).is_empty(), "{evs:?}");
}

/// CTRL = 0 while the engine is running a context: synchronous; the next switch is not
/// logged. Stopping does not forget the current context: re-adopting mid-run logs its end.
#[test]
fn stopping_mid_run_and_readopting_logs_the_next_change() {
    let (rig, log, [mut qa]) = logging(0, 8, NO_IRQ_ENTRY, [A]);
    rig.submit(&mut qa, &nops(4));
    rig.dev.step();
    assert_eq!(log.header(&rig), (1, 0));
    ctrl(&rig, 0, 0);
    rig.dev.step();
    ctrl(&rig, 0, 1);
    rig.run();
    assert_eq!(log.changes(&rig, 2), vec![(A, Running), (A, Idle)]);
    assert_eq!(log.header(&rig), (2, 0));
}

/// Logs the CMP cannot use: a Fault record (BadArgument / BadAddress, NO_QUEUE, arg1 = the
/// base) before the CTRL write returns, logging stays off, nothing is written to the log or
/// past it. A bad log also stops the good one that was adopted before.
#[test]
fn unusable_logs_fault_and_nothing_is_written() {
    let mut rig = Rig::step();
    let good = Log::new(&mut rig, 4);
    let [mut q] = tagged_committed(&mut rig, 0, [A]);
    // The last page of the rig's window: a buffer that runs past it is unreachable.
    let arena_end = rig.arena.bus_addr + rig.arena.len;
    let tail = Log::at(&rig, arena_end - 4096, 4);
    let bad_header = Log::new(&mut rig, 4);
    rig.mem
        .write_u64(PhysAddr::new(bad_header.base), header_word(4, 0))
        .unwrap();
    let cases: [(&str, u64, u32, FaultCode); 7] = [
        ("no entries", good.base, 0, FaultCode::BadArgument),
        (
            "too many",
            good.base,
            ENTRIES_MAX + 1,
            FaultCode::BadArgument,
        ),
        ("misaligned", good.base + 4, 4, FaultCode::BadAddress),
        ("null", 0, 4, FaultCode::BadAddress),
        (
            "outside every window",
            arena_end + (1 << 20),
            4,
            FaultCode::BadAddress,
        ),
        (
            "runs past the window",
            tail.base,
            128,
            FaultCode::BadAddress,
        ),
        (
            "header index past the end",
            bad_header.base,
            4,
            FaultCode::BadArgument,
        ),
    ];
    for (what, base, entries, code) in cases {
        // Start from a working log each time: the bad one must stop it.
        adopt(&rig, 0, &good);
        round(&mut rig, &mut q);
        let good_before = good.snapshot(&rig);
        let tail_before = tail.snapshot(&rig);
        let bad_before = bad_header.snapshot(&rig);
        rig.isr();
        program(&rig, 0, base, entries, 0);
        ctrl(&rig, 0, 1);
        let (causes, evs) = rig.isr();
        assert!(causes.contains(IntCause::FAULT), "{what}");
        let f = one_fault(&evs);
        assert_eq!(
            (f.engine, f.queue_id, f.arg0, f.arg1, f.arg2),
            (0, NO_QUEUE, code as u64, base, 0),
            "{what}"
        );
        round(&mut rig, &mut q);
        assert_eq!(good.snapshot(&rig), good_before, "{what}: old log stopped");
        assert_eq!(tail.snapshot(&rig), tail_before, "{what}");
        assert_eq!(bad_header.snapshot(&rig), bad_before, "{what}");
        good.check_bounds(&rig);
        let (_, evs) = rig.isr();
        assert!(
            of_kind(&evs, EventKind::Fault).is_empty(),
            "{what}: one fault only"
        );
        assert!(
            rig.dev.queues()[0].fault.is_none(),
            "{what}: no queue faulted"
        );
    }
}

/// A log whose memory stops being reachable after adoption (its window removed): the next
/// write faults (BadAddress, NO_QUEUE, arg1 = the word that failed), writes nothing, and
/// turns logging off for that engine only; the queue keeps running.
#[test]
fn a_log_that_stops_translating_turns_logging_off() {
    let mut rig = Rig::step();
    let own = rig.mem.alloc_system(4096, 4096).unwrap();
    let (wb, ws) = regs::syswin_regs(1).unwrap();
    rig.dev.write64(wb, own.bus_addr);
    rig.dev.write64(ws, own.len);
    let log = Log::at(&rig, own.bus_addr, 8);
    let other = Log::new(&mut rig, 8);
    adopt(&rig, 0, &log);
    adopt(&rig, 1, &other);
    let mut q0 = tagged(&mut rig, 0, 1, A);
    let mut q1 = tagged(&mut rig, 1, 2, B);
    rig.commit(0, &[&q0]);
    rig.commit(1, &[&q1]);
    round(&mut rig, &mut q0);
    assert_eq!(log.header(&rig), (2, 0));
    rig.isr();
    rig.dev.write64(ws, 0);
    log.round_unlogged(&mut rig, &mut q0, "the log is off the bus");
    let (_, evs) = rig.isr();
    let f = one_fault(&evs);
    assert_eq!(
        (f.engine, f.queue_id, f.arg0, f.arg1),
        (
            0,
            NO_QUEUE,
            FaultCode::BadAddress as u64,
            log.base + entry_offset(2).unwrap()
        )
    );
    assert_eq!(rig.dev.completed_commands(0), 2, "the queue ran on");
    // The window back: logging stays off until re-adopted.
    rig.dev.write64(ws, own.len);
    log.round_unlogged(&mut rig, &mut q0, "off until re-adopted");
    let (_, evs) = rig.isr();
    assert!(of_kind(&evs, EventKind::Fault).is_empty());
    ctrl(&rig, 0, 1);
    round(&mut rig, &mut q0);
    assert_eq!(log.header(&rig), (4, 0));
    // The other engine's log was never affected.
    round(&mut rig, &mut q1);
    assert_eq!(other.changes(&rig, 2), vec![(B, Running), (B, Idle)]);
}

/// An engine reset logs the context it was running Idle (before the ResetDone record); a
/// failed reset logs nothing; a reset with no current context logs nothing.
#[test]
fn engine_reset_logs_the_running_context_idle() {
    let (mut rig, log, [mut qa]) = logging(0, 16, 1, [A]);
    rig.submit(&mut qa, &[Command::Hang]);
    steps(&rig, 5);
    assert_eq!(log.changes(&rig, 1), vec![(A, Running)]);
    rig.isr();
    rig.dev.fail_next_reset(0);
    rig.dev
        .write32(reg(0, regs::engine::CTRL), ENGINE_CTRL_RESET);
    assert_eq!(log.header(&rig), (1, 0), "failed reset: nothing logged");
    rig.dev
        .write32(reg(0, regs::engine::CTRL), ENGINE_CTRL_RESET);
    assert_eq!(log.header(&rig), (2, 0));
    let e = log.first(&rig, 2);
    assert_eq!((e[1].tag, e[1].state), (A, Idle));
    assert!(e[0].ts <= e[1].ts);
    // Slot 1 was the interrupt entry: its record comes before ResetDone.
    let (_, evs) = rig.isr();
    let kinds: Vec<u8> = evs
        .iter()
        .map(|r| r.kind)
        .filter(|&k| k == EventKind::SchedLog as u8 || k == EventKind::ResetDone as u8)
        .collect();
    assert_eq!(
        kinds,
        vec![
            EventKind::ResetDone as u8,
            EventKind::SchedLog as u8,
            EventKind::ResetDone as u8
        ]
    );
    // Held and then reset again: nothing current, nothing logged.
    rig.dev
        .write32(reg(0, regs::engine::CTRL), ENGINE_CTRL_RESET);
    assert_eq!(log.header(&rig), (2, 0));
    // After the recommit a new context runs from scratch: Running again.
    let mut qb = tagged(&mut rig, 0, 2, B);
    rig.commit(0, &[&qb]);
    round(&mut rig, &mut qb);
    assert_eq!(log.changes(&rig, 4)[2..], [(B, Running), (B, Idle)]);
}

/// An adapter reset turns logging off; the registers keep their values, so CTRL = 1 adopts
/// the same log again, continuing from its header.
#[test]
fn adapter_reset_turns_logging_off_and_keeps_the_registers() {
    let (mut rig, log, [mut q]) = logging(0, 8, 5, [A]);
    round(&mut rig, &mut q);
    assert_eq!(log.header(&rig), (2, 0));
    rig.dev
        .write32(regs::ADAPTER_RESET, regs::ADAPTER_RESET_KEY);
    assert_eq!(
        rig.dev.read64(reg(0, regs::engine::SCHED_LOG_BASE)),
        log.base
    );
    assert_eq!(rig.dev.read32(reg(0, regs::engine::SCHED_LOG_ENTRIES)), 8);
    assert_eq!(rig.dev.read32(reg(0, regs::engine::SCHED_LOG_IRQ_ENTRY)), 5);
    // Bring-up again (windows and event ring are reset).
    let (b, s) = regs::syswin_regs(0).unwrap();
    rig.dev.write64(b, rig.arena.bus_addr);
    rig.dev.write64(s, rig.arena.len);
    rig.dev.write64(regs::EVENT_RING_BASE, rig.event_ring);
    rig.dev.write32(regs::EVENT_RING_SIZE, EVENT_RING_SIZE);
    rig.dev.write32(regs::EVENT_RING_CTRL, 1);
    rig.dev.write32(regs::INT_ENABLE, IntCause::all().bits());
    let page = q.doorbell.unwrap();
    rig.dev
        .write32(regs::doorbell_bind_reg(page).unwrap(), q.id());
    q.wptr = 0;
    rig.mem
        .write_words(PhysAddr::new(q.desc.ring_control.get()), &[0; 16])
        .unwrap();
    rig.commit(0, &[&q]);
    log.round_unlogged(&mut rig, &mut q, "logging is off after the reset");
    assert_eq!(rig.dev.completed_commands(0), 1);
    ctrl(&rig, 0, 1);
    round(&mut rig, &mut q);
    assert_eq!(log.header(&rig), (4, 0));
    assert_eq!(log.changes(&rig, 4)[2..], [(A, Running), (A, Idle)]);
}

/// The registers read back what was written (64-bit base in two halves too).
#[test]
fn registers_read_back() {
    let rig = Rig::step();
    let caps = Caps::from_bits_retain(rig.dev.read32(regs::CAPS));
    assert!(caps.contains(Caps::SCHED_LOG));
    program(&rig, 1, 0x1_2345_6788, 77, 9);
    let base = reg(1, regs::engine::SCHED_LOG_BASE);
    assert_eq!(rig.dev.read64(base), 0x1_2345_6788);
    rig.dev.write32(base + 4, 2);
    assert_eq!(rig.dev.read64(base), 0x2_2345_6788);
    assert_eq!(rig.dev.read32(reg(1, regs::engine::SCHED_LOG_ENTRIES)), 77);
    assert_eq!(rig.dev.read32(reg(1, regs::engine::SCHED_LOG_IRQ_ENTRY)), 9);
    assert_eq!(
        rig.dev.read32(reg(1, regs::engine::SCHED_LOG_CTRL)),
        0,
        "WO"
    );
    assert_eq!(rig.dev.read64(reg(0, regs::engine::SCHED_LOG_BASE)), 0);
}

/// Without CAPS.SCHED_LOG the four registers read 0 and ignore writes: nothing is logged and
/// no fault is posted, whatever is written.
#[test]
fn without_the_capability_the_registers_are_inert() {
    let mut rig = Rig::step_with(|c| c.sched_log = false);
    let caps = Caps::from_bits_retain(rig.dev.read32(regs::CAPS));
    assert!(!caps.contains(Caps::SCHED_LOG));
    assert!(caps.contains(Caps::PAGE_TABLES | Caps::PER_ENGINE_RESET));
    let log = Log::new(&mut rig, 8);
    adopt_irq(&rig, 0, &log, 0);
    for r in [
        regs::engine::SCHED_LOG_BASE,
        regs::engine::SCHED_LOG_ENTRIES,
        regs::engine::SCHED_LOG_IRQ_ENTRY,
        regs::engine::SCHED_LOG_CTRL,
    ] {
        assert_eq!(rig.dev.read64(reg(0, r)), 0);
    }
    let [mut q] = tagged_committed(&mut rig, 0, [A]);
    log.round_unlogged(&mut rig, &mut q, "no capability, no log");
    assert_eq!(rig.dev.completed_commands(0), 1);
    // Even an unusable log programs nothing and faults nothing.
    program(&rig, 0, 3, 0, 0);
    ctrl(&rig, 0, 1);
    let (causes, evs) = rig.isr();
    assert!(!causes.intersects(IntCause::SCHED_LOG | IntCause::FAULT));
    assert!(of_kind(&evs, EventKind::Fault).is_empty());
}

// ---- the log in a translated system space ----

const RW_KERNEL: PageAttrs = PageAttrs {
    writable: true,
    user: false,
    vram: false,
    coherent: true,
    no_execute: false,
};

/// A system address space: root table in the rig's window.
struct Pt {
    root: u64,
}

impl Pt {
    fn entry(&self, rig: &mut Rig, va: u64) -> u64 {
        rig.table_entry(self.root, va, 0)
    }

    fn map(&self, rig: &mut Rig, va: u64, pa: u64) {
        let e = self.entry(rig, va);
        rig.mem
            .store(
                PhysAddr::new(e),
                Pte::page(pa, RW_KERNEL, false).unwrap().0,
                Ordering::Release,
            )
            .unwrap();
    }

    fn unmap(&self, rig: &mut Rig, va: u64) {
        let e = self.entry(rig, va);
        rig.mem
            .store(PhysAddr::new(e), 0, Ordering::Release)
            .unwrap();
    }
}

/// `SCHED_LOG_BASE` is a CMP address: with `SYSTEM_PAGE_TABLE_BASE` set it is translated
/// there, like the native-fence logs. A log that does not translate at adoption, or stops
/// translating later, is reported as BadAddress (not a queue's PageFault).
#[test]
fn the_log_is_written_through_the_system_space() {
    const LOG_VA: u64 = 0x6000_0000_0000;
    let mut rig = Rig::step();
    let sys = Pt {
        root: rig.alloc(mmu::TABLE_SIZE),
    };
    let (start, len) = (rig.arena.bus_addr, rig.arena.len);
    for va in (start..start + len).step_by(4096) {
        sys.map(&mut rig, va, va);
    }
    // The log's page is outside every window: only the page tables reach it.
    let page = rig.mem.alloc_system(4096, 4096).unwrap().bus_addr;
    sys.map(&mut rig, LOG_VA, page);
    rig.dev.write64(regs::SYSTEM_PAGE_TABLE_BASE, sys.root);
    let phys = Log::at(&rig, page, 8);
    // Not mapped at adoption: BadAddress at the base.
    program(&rig, 0, LOG_VA + 0x1000, 8, u32::MAX);
    ctrl(&rig, 0, 1);
    let (_, evs) = rig.isr();
    let f = one_fault(&evs);
    assert_eq!(
        (f.arg0, f.arg1),
        (FaultCode::BadAddress as u64, LOG_VA + 0x1000)
    );
    program(&rig, 0, LOG_VA, 8, u32::MAX);
    ctrl(&rig, 0, 1);
    let [mut q] = tagged_committed(&mut rig, 0, [A]);
    round(&mut rig, &mut q);
    assert_eq!(phys.header(&rig), (2, 0));
    assert_eq!(phys.changes(&rig, 2), vec![(A, Running), (A, Idle)]);
    // Unmapped (and invalidated) under the CMP: the next entry faults, nothing is written.
    sys.unmap(&mut rig, LOG_VA);
    rig.dev.write64(regs::TLB_INVALIDATE, sys.root);
    rig.isr();
    phys.round_unlogged(&mut rig, &mut q, "the unmapped entry faults");
    let (_, evs) = rig.isr();
    let f = one_fault(&evs);
    assert_eq!(
        (f.queue_id, f.arg0, f.arg1),
        (
            NO_QUEUE,
            FaultCode::BadAddress as u64,
            LOG_VA + entry_offset(2).unwrap()
        )
    );
    assert!(rig.dev.queues()[0].fault.is_none());
}

/// Threaded: two contexts on an engine with the CMP on its own thread. The log the OS reads
/// (header with Acquire, then the entries behind it) is well formed: every Running entry of
/// a context is followed by a Ready or Idle of the same context before another one runs,
/// timestamps never go backwards, and the last entry leaves the engine idle.
#[test]
fn threaded_two_contexts_produce_a_well_formed_log() {
    let mut rig = Rig::new(DeviceConfig {
        mode: Mode::Threaded,
        ..DeviceConfig::default()
    });
    let log = Log::new(&mut rig, 1024);
    adopt(&rig, 0, &log);
    let [mut qa, mut qb] = tagged_committed(&mut rig, 0, [A, B]);
    for _ in 0..10 {
        rig.submit(&mut qa, &nops(5));
        rig.submit(&mut qb, &nops(5));
    }
    rig.wait_until("both queues done", || rig.dev.completed_commands(0) == 100);
    // Every Running entry was written before its context's packets ran; what may still be
    // on its way is the final Idle.
    rig.wait_until("the engine idle in the log", || {
        let (n, _) = log.header(&rig);
        n > 0 && log.slot(&rig, n - 1).is_some_and(|e| e.state == Idle)
    });
    let (n, wrap) = log.header(&rig);
    assert_eq!(wrap, 0);
    let entries = log.first(&rig, n);
    assert!(entries.windows(2).all(|w| w[0].ts <= w[1].ts));
    let mut running: Option<u64> = None;
    for e in &entries {
        match e.state {
            Running => {
                assert_eq!(running, None, "{entries:x?}");
                running = Some(e.tag);
            }
            Ready | Idle => {
                assert_eq!(running, Some(e.tag), "{entries:x?}");
                running = None;
            }
        }
    }
    assert_eq!(running, None);
    log.check_bounds(&rig);
}
