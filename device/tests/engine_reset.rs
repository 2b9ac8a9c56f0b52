//! Per-engine reset (hardware.md 10.1; docs/tdr.md D1/D2). What a reset aborts, what it
//! keeps, and the hold that follows it:
//!
//! - D2: "executing" is the queue with a packet *in flight* (a COPY/FILL between chunks, a
//!   HANG, or such a packet inside a started INDIRECT). With nothing in flight the reset names
//!   no queue (`RESET_QUEUE` = `NO_QUEUE`, `RESET_RPTR` = 0) and nothing leaves.
//! - D1: only that queue leaves the loaded runlist. Every other queue keeps its read pointer,
//!   INDIRECT cursor, blocked/woken wait and fault state. The engine is then held (`STATUS`
//!   Idle + bit 9) and runs nothing until the next `RUNLIST_COMMIT`; doorbells and kicks still
//!   load write pointers meanwhile.
//!
//! Requirement IDs: TDR-06 (the aborted packet is named exactly), TDR-07 (nothing executing
//! at reset time), UM-10 ("other processes' queues keep running" through a reset of the
//! guilty one). Step mode unless the test name says threaded.
mod common;

use rvgpu_hw::addr::PhysAddr;
use std::time::{Duration, Instant};

use common::*;
use rvgpu_device::{DeviceConfig, STEP_TICKS};
use rvgpu_hw::cmd::{Command, LogKind, SIGNAL_ALWAYS_IRQ};
use rvgpu_hw::engine::{EngineState, ResetResult, STATUS_HAS_WORK, STATUS_HELD};
use rvgpu_hw::event::{EventKind, EventRecord};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::queue::NO_QUEUE;
use rvgpu_hw::regs;

/// A FENCE_SIGNAL that always posts an event: counting the events counts executions.
fn counted(f: Fence, value: u64) -> Command {
    signal(f, value, SIGNAL_ALWAYS_IRQ, value)
}

/// Values of the counted signals of fence `f` in `evs`, in posting order.
fn signals_of(evs: &[EventRecord], f: Fence) -> Vec<u64> {
    of_kind(evs, EventKind::FenceSignaled)
        .iter()
        .filter(|e| e.arg2 == f.mv)
        .map(|e| e.arg1)
        .collect()
}

fn current_queue(rig: &Rig, e: u32) -> u32 {
    rig.engine_read32(e, regs::engine::CURRENT_QUEUE)
}

/// The UM-10 scene: a step-mode rig with two fences, innocent queue A (id 1) and guilty
/// queue B (id 2) committed together on engine 0, queue C (id 3) alone on engine 1.
fn um_10_scene() -> (Rig, [Fence; 2], [Q; 3]) {
    let mut rig = Rig::step();
    let fences = [rig.fence(0), rig.fence(0)];
    let [a, b] = rig.queues_committed(0, [1, 2]);
    let c = rig.queue_committed(1, 3);
    (rig, fences, [a, b, c])
}

const HELD_IDLE_WITH_WORK: u32 = EngineState::Idle as u32 | STATUS_HAS_WORK | STATUS_HELD;

/// UM-10 ("other processes' queues keep running"), TDR-06: queue A (innocent) is in the
/// middle of an INDIRECT when queue B's HANG, on the same engine, is reset. Only B is aborted
/// (RESET_QUEUE/RESET_RPTR name its HANG) and leaves the runlist; A keeps its cursor, the
/// held engine runs nothing, and after the recommit A continues where it was: every packet of
/// its buffer and its PROGRESS run exactly once (events and COMPLETED_COMMANDS exact).
#[test]
fn um_10_innocent_queue_mid_indirect_keeps_its_cursor_and_nothing_runs_twice() {
    let (mut rig, [f, h], [mut a, mut b, _]) = um_10_scene();
    let buf = rig.buffer(&[counted(f, 1), counted(f, 2), counted(f, 3), counted(f, 4)]);
    rig.submit(&mut a, &[indirect(buf), progress_irq(7)]);
    rig.submit(
        &mut b,
        &[Command::Nop { len: 1 }, Command::Hang, counted(h, 1)],
    );
    // Round-robin, one packet each: A starts the INDIRECT, B its NOP, A the buffer's first
    // signal, B the HANG, which then holds the engine.
    steps(&rig, 4);
    assert_eq!(rig.value(f.cv), 1);
    assert_eq!(snap(&rig, 1).unwrap().indirect, Some((buf.0, 40)));
    assert_eq!(current_queue(&rig, 0), 2, "B's HANG is in flight");
    steps(&rig, 5);
    assert_eq!(rig.value(f.cv), 1, "a HANG runs nothing else");

    assert_eq!(reset(&rig, 0), (ResetResult::Ok as u32, 2, 8));
    assert_eq!(rig.read_ptr(&b), 8, "ring control on the aborted HANG");
    assert!(snap(&rig, 2).is_none(), "the aborted queue left");
    let sa = snap(&rig, 1).unwrap();
    assert_eq!(
        (sa.read_ptr, sa.indirect, sa.known_write_ptr),
        (0, Some((buf.0, 40)), a.wptr),
        "the innocent queue kept its cursor"
    );
    assert_eq!(rig.read_ptr(&a), 0);
    assert_eq!(
        rig.engine_read32(0, regs::engine::STATUS),
        HELD_IDLE_WITH_WORK
    );
    assert_eq!(current_queue(&rig, 0), NO_QUEUE);
    assert_eq!(
        rig.dev.engine_snapshot(1).unwrap().queues.len(),
        1,
        "engine 1 untouched"
    );
    steps(&rig, 20);
    assert_eq!(rig.value(f.cv), 1, "held: nothing runs");
    assert_eq!(
        rig.dev.completed_commands(0),
        2,
        "B's NOP and A's first signal"
    );

    // The KMD skips the HANG and recommits both; B enters afresh from ring control.
    rig.set_read_ptr(&b, 16);
    rig.commit(0, &[&a, &b]);
    assert!(!status(&rig, 0).held, "the commit ends the hold");
    rig.run();
    assert_eq!(rig.value(f.cv), 4);
    assert_eq!(rig.value(h.cv), 1);
    assert_eq!(rig.value(a.desc.progress_fence.get()), 7);
    assert_eq!(rig.read_ptr(&a), a.wptr);
    let (_, evs) = rig.isr();
    assert_eq!(
        signals_of(&evs, f),
        [1, 2, 3, 4],
        "each signal exactly once"
    );
    assert_eq!(signals_of(&evs, h), [1]);
    let p: Vec<_> = of_kind(&evs, EventKind::Progress)
        .iter()
        .map(|e| e.arg0)
        .collect();
    assert_eq!(p, [7], "A's PROGRESS exactly once");
    let rd = of_kind(&evs, EventKind::ResetDone);
    assert_eq!(rd.len(), 1);
    assert_eq!(
        (rd[0].arg0, rd[0].arg1, rd[0].arg2),
        (ResetResult::Ok as u64, 2, 8)
    );
    // A: 4 signals + INDIRECT + PROGRESS; B: NOP + signal (the HANG is not counted).
    assert_eq!(rig.dev.completed_commands(0), 8);
}

/// UM-10 ("other processes' queues keep running"): an innocent queue blocked on a FENCE_WAIT
/// stays blocked through the reset and the recommit (its wait is not re-executed: the wait
/// log's observed timestamp is still the first evaluation, from before the reset), and is
/// released later by a signal from another engine.
#[test]
fn um_10_blocked_wait_of_an_innocent_queue_survives_the_reset() {
    let (mut rig, [f, g], [mut a, mut b, mut c]) = um_10_scene();
    rig.submit(
        &mut a,
        &[
            fence_wait(g, 1),
            log_write(LogKind::Wait, 0, 0x77, 1),
            signal(f, 1, 0, 0),
        ],
    );
    rig.dev.step();
    let t0 = rig.dev.gpu_clock();
    assert_eq!(snap(&rig, 1).unwrap().blocked_on, Some((g.cv, 1)));
    rig.submit(&mut b, &[Command::Hang]);
    steps(&rig, 10);
    assert_eq!(reset(&rig, 0), (ResetResult::Ok as u32, 2, 0));
    assert_eq!(snap(&rig, 1).unwrap().blocked_on, Some((g.cv, 1)));
    // The KMD drops the guilty queue for good and recommits the innocent one.
    rig.commit(0, &[&a]);
    steps(&rig, 50);
    let sa = snap(&rig, 1).unwrap();
    assert_eq!(
        (sa.read_ptr, sa.blocked_on),
        (0, Some((g.cv, 1))),
        "still blocked"
    );
    assert_eq!(rig.value(f.cv), 0);
    let s = status(&rig, 0);
    assert_eq!(
        (s.state, s.has_work, s.held),
        (EngineState::Idle, true, false)
    );

    rig.submit(&mut c, &[signal(g, 1, 0, 0)]);
    rig.run();
    assert_eq!(rig.value(f.cv), 1, "released by the signal");
    assert_eq!(rig.read_ptr(&a), a.wptr);
    let e = log_entry(&rig, a.desc.wait_log.get(), 0);
    assert_eq!(
        e.fence_observed_gpu_timestamp, t0,
        "wait kept, not re-executed"
    );
    assert!(e.fence_end_gpu_timestamp > t0 + 50 * STEP_TICKS);
    assert_eq!(rig.dev.completed_commands(0), 3);
}

/// UM-10: a signal that satisfies an innocent queue's wait while its engine is held is not
/// lost: the queue stays parked until the commit, then runs.
#[test]
fn um_10_wait_satisfied_while_held_runs_after_the_commit() {
    let (mut rig, [f, g], [mut a, mut b, mut c]) = um_10_scene();
    let wait = fence_wait(g, 1);
    rig.submit(&mut a, &[wait, signal(f, 1, 0, 0)]);
    rig.submit(&mut b, &[Command::Hang]);
    steps(&rig, 5);
    assert_eq!(reset(&rig, 0), (ResetResult::Ok as u32, 2, 0));
    rig.submit(&mut c, &[signal(g, 1, 0, 0)]);
    steps(&rig, 20);
    assert_eq!(rig.value(g.cv), 1, "engine 1 runs");
    assert_eq!(snap(&rig, 1).unwrap().blocked_on, None, "woken");
    assert_eq!(rig.value(f.cv), 0, "but held");
    rig.commit(0, &[&a]);
    rig.run();
    assert_eq!(rig.value(f.cv), 1);
    assert_eq!(rig.read_ptr(&a), a.wptr);
}

/// UM-10: an innocent queue's fault state is kept too: a queue that faulted before the reset
/// is still faulted after the reset and the recommit (it does not run its bad packet again and
/// post a second Fault); only replacing its entry clears the fault (5.2).
#[test]
fn um_10_faulted_innocent_queue_stays_faulted() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let [mut a, mut b] = rig.queues_committed(0, [1, 2]);
    rig.push_words(&mut a, &[0xEE]); // bad opcode
    rig.ring(&a);
    rig.submit(&mut b, &[Command::Hang]);
    steps(&rig, 3);
    let (_, evs) = rig.isr();
    assert_eq!(of_kind(&evs, EventKind::Fault).len(), 1);
    assert_eq!(reset(&rig, 0), (ResetResult::Ok as u32, 2, 0));
    rig.commit(0, &[&a]);
    rig.submit(&mut a, &[signal(f, 1, 0, 0)]);
    steps(&rig, 10);
    let sa = snap(&rig, 1).unwrap();
    assert_eq!(
        (sa.read_ptr, sa.fault.is_some()),
        (0, true),
        "still faulted"
    );
    assert_eq!(rig.value(f.cv), 0);
    let (_, evs) = rig.isr();
    assert!(
        of_kind(&evs, EventKind::Fault).is_empty(),
        "no second fault"
    );
    // Replacing the entry (leave, then enter) clears it; the driver first skips the bad word.
    rig.commit(0, &[]);
    rig.set_read_ptr(&a, 8);
    rig.commit(0, &[&a]);
    rig.run();
    assert_eq!(rig.value(f.cv), 1);
}

/// UM-10, TDR-05 recovery: the held engine runs nothing until RUNLIST_COMMIT, but doorbell
/// rings and QUEUE_KICKs that arrive before the commit load the write pointer, so the work
/// they announce runs after a commit that keeps the queues (a staying queue does not reload
/// write_ptr at the commit). STATUS reads Idle + has_work + held; no F1 request while held.
#[test]
fn um_10_held_engine_runs_nothing_until_commit_and_keeps_doorbell_rings() {
    let mut rig = Rig::step_with(|c| c.idle_f1_ticks = 5 * STEP_TICKS);
    let (f, k) = (rig.fence(0), rig.fence(0));
    let mut a = rig.queue(0, 1);
    let mut b = rig.queue(0, 2);
    let mut km = rig.queue(0, 3).without_doorbell();
    rig.commit(0, &[&a, &b, &km]);
    rig.submit(&mut b, &[Command::Hang]);
    steps(&rig, 3);
    assert_eq!(reset(&rig, 0), (ResetResult::Ok as u32, 2, 0));
    rig.isr();
    rig.submit(&mut a, &[signal(f, 1, 0, 0)]);
    rig.submit(&mut km, &[signal(k, 1, 0, 0)]); // QUEUE_KICK: no doorbell
    assert_eq!(
        snap(&rig, 1).unwrap().known_write_ptr,
        a.wptr,
        "ring loaded"
    );
    assert_eq!(
        snap(&rig, 3).unwrap().known_write_ptr,
        km.wptr,
        "kick loaded"
    );
    steps(&rig, 50);
    assert_eq!(
        (
            rig.mem.read_u64(PhysAddr::new(f.cv)),
            rig.mem.read_u64(PhysAddr::new(k.cv))
        ),
        (Some(0), Some(0))
    );
    assert_eq!(
        rig.engine_read32(0, regs::engine::STATUS),
        HELD_IDLE_WITH_WORK
    );
    assert!(rig.dev.engine_snapshot(0).unwrap().held);
    assert_eq!(current_queue(&rig, 0), NO_QUEUE);
    let (_, evs) = rig.isr();
    assert!(
        of_kind(&evs, EventKind::EngineState)
            .iter()
            .all(|e| e.engine != 0),
        "no F1 request from a held engine: {evs:?}"
    );

    rig.commit(0, &[&a, &km]);
    rig.run();
    assert_eq!(
        (
            rig.mem.read_u64(PhysAddr::new(f.cv)),
            rig.mem.read_u64(PhysAddr::new(k.cv))
        ),
        (Some(1), Some(1))
    );
    let s = status(&rig, 0);
    assert_eq!((s.has_work, s.held), (false, false));
    // After the hold the idle timer runs again.
    steps(&rig, 10);
    let (_, evs) = rig.isr();
    let f1: Vec<_> = of_kind(&evs, EventKind::EngineState)
        .into_iter()
        .filter(|e| e.engine == 0)
        .collect();
    assert_eq!(f1.len(), 1);
    assert_eq!(f1[0].arg1, EngineState::TransitionToF1 as u64);
}

/// TDR-07: the reset arrives after the last packet completed (the race between the OS's
/// snapshot and ResetEngine). The driver's snapshot, taken while the FILL ran, named the queue,
/// but nothing is in flight any more, so the reset names no queue (NO_QUEUE, RESET_RPTR 0, ResetDone likewise) and no
/// queue leaves: neither the one last picked nor one parked between the packets of an
/// INDIRECT (blocked in its buffer). After the commit both go on; nothing runs twice.
#[test]
fn tdr_07_reset_with_nothing_in_flight_names_no_queue_and_drops_nothing() {
    let mut rig = Rig::step();
    let (g, h) = (rig.fence(0), rig.fence(0));
    let dst = rig.alloc(16 << 10);
    let [mut a, mut b] = rig.queues_committed(0, [1, 2]);
    let buf = rig.buffer(&[counted(h, 1), fence_wait(g, 1), counted(h, 2)]);
    rig.submit(&mut b, &[indirect(buf), progress_irq(5)]);
    rig.run();
    assert_eq!(snap(&rig, 2).unwrap().indirect, Some((buf.0, 40)));
    rig.submit(
        &mut a,
        &[
            Command::Fill {
                dst,
                bytes: 16 << 10,
                pattern: 0xAB,
            },
            progress_irq(1),
        ],
    );
    // Two of four chunks: the snapshot a driver would take names A.
    steps(&rig, 2);
    assert_eq!(current_queue(&rig, 0), 1, "A's FILL in flight");
    // Two more chunks, then the PROGRESS: A completes everything it has, and the engine
    // switches out with it (M30).
    steps(&rig, 3);
    assert_eq!(rig.value(a.desc.progress_fence.get()), 1);
    assert_eq!(
        current_queue(&rig, 0),
        NO_QUEUE,
        "nothing runnable, nothing in flight"
    );

    assert_eq!(reset(&rig, 0), (ResetResult::Ok as u32, NO_QUEUE, 0));
    let (sa, sb) = (snap(&rig, 1).unwrap(), snap(&rig, 2).unwrap());
    assert_eq!(sa.read_ptr, a.wptr, "A stays");
    assert_eq!(
        (sb.read_ptr, sb.indirect, sb.blocked_on),
        (0, Some((buf.0, 40)), Some((g.cv, 1))),
        "B stays, cursor and wait kept"
    );
    assert!(status(&rig, 0).held);
    let (_, evs) = rig.isr();
    let rd = of_kind(&evs, EventKind::ResetDone);
    assert_eq!(
        (rd[0].queue_id, rd[0].arg0, rd[0].arg1, rd[0].arg2),
        (NO_QUEUE, ResetResult::Ok as u64, u64::from(NO_QUEUE), 0)
    );

    rig.commit(0, &[&a, &b]);
    rig.mem.write_u64(PhysAddr::new(g.cv), 1).unwrap();
    rig.dev.write64(regs::WAIT_RESCAN, g.cv);
    rig.run();
    assert_eq!(rig.value(b.desc.progress_fence.get()), 5);
    let (_, evs) = rig.isr();
    assert_eq!(signals_of(&evs, h), [2], "the buffer continued, no restart");
    // B: 2 signals + wait + INDIRECT + PROGRESS; A: FILL + PROGRESS.
    assert_eq!(rig.dev.completed_commands(0), 7);
}

/// TDR-06, UM-10: a HANG inside the guilty queue's INDIRECT. The whole INDIRECT is aborted:
/// RESET_RPTR is the INDIRECT's read pointer, its PROGRESS never runs, and only that queue
/// leaves; an innocent queue, also mid-INDIRECT, keeps its cursor and finishes exactly once.
/// The KMD drops the aborted submission (ring control past it) and the guilty queue then
/// runs new work.
#[test]
fn tdr_06_hang_inside_an_indirect_aborts_only_that_queue() {
    let mut rig = Rig::step();
    let (f, h) = (rig.fence(0), rig.fence(0));
    let [mut g, mut i] = rig.queues_committed(0, [1, 2]);
    let gbuf = rig.buffer(&[counted(f, 1), Command::Hang, counted(f, 2)]);
    let ibuf = rig.buffer(&[counted(h, 1), counted(h, 2), counted(h, 3), counted(h, 4)]);
    rig.submit(
        &mut g,
        &[Command::Nop { len: 1 }, indirect(gbuf), progress_irq(9)],
    );
    rig.submit(&mut i, &[indirect(ibuf), progress_irq(5)]);
    // G NOP, I INDIRECT, G INDIRECT, I h1, G f1, I h2, G HANG.
    steps(&rig, 7);
    assert_eq!(snap(&rig, 1).unwrap().indirect, Some((gbuf.0, 40)));
    assert_eq!(snap(&rig, 2).unwrap().indirect, Some((ibuf.0, 80)));
    assert_eq!(current_queue(&rig, 0), 1);

    assert_eq!(reset(&rig, 0), (ResetResult::Ok as u32, 1, 8));
    assert_eq!(rig.read_ptr(&g), 8, "on the INDIRECT");
    assert!(snap(&rig, 1).is_none());
    assert_eq!(snap(&rig, 2).unwrap().indirect, Some((ibuf.0, 80)));

    rig.set_read_ptr(&g, g.wptr);
    rig.commit(0, &[&g, &i]);
    rig.run();
    assert_eq!(rig.value(g.desc.progress_fence.get()), 0, "aborted");
    assert_eq!(rig.value(i.desc.progress_fence.get()), 5);
    let (_, evs) = rig.isr();
    assert_eq!(signals_of(&evs, f), [1]);
    assert_eq!(signals_of(&evs, h), [1, 2, 3, 4]);
    // G: NOP + f1; I: 4 signals + INDIRECT + PROGRESS.
    assert_eq!(rig.dev.completed_commands(0), 8);
    rig.submit(&mut g, &[counted(f, 3)]);
    rig.run();
    assert_eq!(rig.value(f.cv), 3, "the guilty queue runs new work");
}

/// TDR-06 (D2): a FILL in flight inside a buffer is "executing": the reset between its chunks
/// aborts the INDIRECT (RESET_RPTR on it, not counted, a prefix of the FILL written).
#[test]
fn tdr_06_fill_in_flight_inside_an_indirect_is_aborted() {
    let mut rig = Rig::step();
    let dst = rig.alloc(16 << 10);
    let mut q = rig.queue_committed(0, 1);
    let buf = rig.buffer(&[Command::Fill {
        dst,
        bytes: 16 << 10,
        pattern: 0xAB,
    }]);
    rig.submit(
        &mut q,
        &[Command::Nop { len: 1 }, indirect(buf), progress_irq(1)],
    );
    steps(&rig, 4); // NOP, INDIRECT, two chunks
    assert_eq!(rig.value(dst), 0xAB);
    assert_eq!(reset(&rig, 0), (ResetResult::Ok as u32, 1, 8));
    assert_eq!(rig.value(dst + (16 << 10) - 8), 0, "rest not written");
    assert_eq!(rig.dev.completed_commands(0), 1, "only the NOP");
    assert!(rig.dev.engine_snapshot(0).unwrap().queues.is_empty());
}

/// TDR-09: a failed reset (fault injection, or no PER_ENGINE_RESET) changes nothing:
/// RESET_QUEUE/RESET_RPTR keep their previous values, the engine is not held and keeps
/// hanging, every queue keeps its state; ResetDone(Failed) names the queue and read pointer
/// that would have been aborted. A later successful reset works; a failure on a held engine
/// leaves it held, with the previous (stale) RESET_QUEUE/RESET_RPTR.
#[test]
fn tdr_09_failed_reset_leaves_everything_as_it_was() {
    let mut rig = Rig::step_with(|c| c.hang_detect_ticks = 5 * STEP_TICKS);
    let (g, h) = (rig.fence(0), rig.fence(0));
    let mut gq = rig.queue(0, 1);
    let mut iq = rig.queue(0, 2);
    rig.commit(0, &[&iq, &gq]);
    let buf = rig.buffer(&[counted(h, 1), fence_wait(g, 1)]);
    rig.submit(&mut iq, &[indirect(buf)]);
    rig.submit(&mut gq, &[Command::Nop { len: 1 }, Command::Hang]);
    steps(&rig, 15);
    assert_eq!(status(&rig, 0).state, EngineState::Hung);
    let before = rig.dev.engine_snapshot(0).unwrap();
    rig.isr();

    rig.dev.fail_next_reset(0);
    assert_eq!(reset(&rig, 0), (ResetResult::Failed as u32, NO_QUEUE, 0));
    let s = status(&rig, 0);
    assert_eq!((s.state, s.held), (EngineState::Hung, false));
    assert_eq!(
        rig.dev.engine_snapshot(0).unwrap(),
        before,
        "nothing changed"
    );
    assert_eq!(current_queue(&rig, 0), 1, "the HANG is still in flight");
    let (_, evs) = rig.isr();
    let rd = of_kind(&evs, EventKind::ResetDone);
    assert_eq!(
        (rd[0].arg0, rd[0].arg1, rd[0].arg2),
        (ResetResult::Failed as u64, 1, 8)
    );
    steps(&rig, 10);
    assert_eq!(status(&rig, 0).state, EngineState::Hung, "still hanging");

    assert_eq!(reset(&rig, 0), (ResetResult::Ok as u32, 1, 8));
    assert_eq!(snap(&rig, 2).unwrap().indirect, Some((buf.0, 40)));
    rig.dev.fail_next_reset(0);
    assert_eq!(reset(&rig, 0), (ResetResult::Failed as u32, 1, 8), "stale");
    assert!(status(&rig, 0).held, "a failed reset does not end the hold");
    rig.commit(0, &[&iq]);
    rig.mem.write_u64(PhysAddr::new(g.cv), 1).unwrap();
    rig.dev.write64(regs::WAIT_RESCAN, g.cv);
    rig.run();
    assert_eq!(rig.read_ptr(&iq), iq.wptr);
}

/// TDR-09: without CAPS.PER_ENGINE_RESET every reset fails and changes nothing, exactly like
/// an injected failure: the HANG keeps the engine, no hold, RESET_QUEUE stays NO_QUEUE.
#[test]
fn tdr_09_no_per_engine_reset_cap_fails_and_changes_nothing() {
    let mut rig = Rig::step_with(|c| c.per_engine_reset = false);
    let mut q = rig.queue_committed(0, 1);
    rig.submit(&mut q, &[Command::Hang]);
    steps(&rig, 3);
    let before = rig.dev.engine_snapshot(0).unwrap();
    assert_eq!(reset(&rig, 0), (ResetResult::Failed as u32, NO_QUEUE, 0));
    assert_eq!(rig.dev.engine_snapshot(0).unwrap(), before);
    assert!(!status(&rig, 0).held);
    assert_eq!(current_queue(&rig, 0), 1);
}

/// 10.3 (unchanged by D1): an adapter reset returns a held engine to power-on: not held,
/// empty runlist, RESET_* at their reset values.
#[test]
fn adapter_reset_ends_the_hold() {
    let mut rig = Rig::step();
    let [mut a, mut b] = rig.queues_committed(0, [1, 2]);
    rig.submit(&mut b, &[Command::Hang]);
    rig.submit(&mut a, &[Command::Nop { len: 1 }, Command::Nop { len: 1 }]);
    steps(&rig, 2);
    reset(&rig, 0);
    assert!(status(&rig, 0).held);
    rig.dev
        .write32(regs::ADAPTER_RESET, regs::ADAPTER_RESET_KEY);
    assert_eq!(
        rig.engine_read32(0, regs::engine::STATUS),
        EngineState::Idle as u32
    );
    let s = rig.dev.engine_snapshot(0).unwrap();
    assert!(!s.held && s.queues.is_empty());
    assert_eq!(rig.engine_read32(0, regs::engine::RESET_QUEUE), NO_QUEUE);
    assert_eq!(
        rig.engine_read32(0, regs::engine::RESET_RESULT),
        ResetResult::None as u32
    );
}

/// UM-10 ("other processes' queues keep running"), TDR-06, threaded mode. Engine 0: kernel-
/// mode queue A runs 50 submissions (INDIRECT + PROGRESS(IRQ, i)); submission 25's buffer
/// blocks on a fence part-way. Queue B then hangs engine 0 and is reset. While the engine is
/// held, the CPU satisfies A's wait and kicks; nothing runs until the recommit. Engine 1
/// keeps filling throughout. At the end every PROGRESS value appears once, in order, and
/// both engines' COMPLETED_COMMANDS are exact (nothing ran twice, nothing was lost).
#[test]
fn um_10_threaded_reset_keeps_innocent_queue_and_other_engine_running() {
    let mut rig = Rig::new(DeviceConfig {
        hang_detect_ticks: 100_000, // 1 ms
        ..DeviceConfig::default()
    });
    let (g, m) = (rig.fence(0), rig.fence(0));
    let stamps = rig.alloc(50 * 8);
    let dst = rig.alloc(64 << 10);
    let mut a = rig.queue_with(0, 1, 0, 16 << 10, 84).without_doorbell();
    let mut b = rig.queue(0, 2);
    let mut c = rig.queue_with(1, 3, 0, 16 << 10, 84);
    rig.commit(0, &[&a, &b]);
    rig.commit(1, &[&c]);

    let mut progress = Vec::new();
    let collect = |rig: &Rig, progress: &mut Vec<u64>| {
        progress.extend(
            of_kind(&rig.isr().1, EventKind::Progress)
                .iter()
                .filter(|e| e.queue_id == 1)
                .map(|e| e.arg0),
        );
    };
    // Engine 1: a stream of FILLs, 4 chunks each.
    let fills = 40u64;
    let mut submitted_fills = 0;
    let fill = |rig: &Rig, c: &mut Q, n: u64| {
        for _ in 0..n {
            rig.submit(
                c,
                &[Command::Fill {
                    dst,
                    bytes: 16 << 10,
                    pattern: 0x11,
                }],
            );
        }
    };
    fill(&rig, &mut c, fills / 2);
    submitted_fills += fills / 2;

    let sub = |rig: &mut Rig, a: &mut Q, i: u64| {
        let mut cmds = vec![
            Command::Timestamp {
                addr: stamps + (i - 1) * 8,
            },
            signal(m, i, 0, 0),
        ];
        if i == 25 {
            cmds.insert(1, fence_wait(g, 1));
        }
        let buf = rig.buffer(&cmds);
        rig.submit(a, &[indirect(buf), progress_irq(i)]);
        buf
    };
    let mut buf25 = (0, 0);
    for i in 1..=30 {
        let buf = sub(&mut rig, &mut a, i);
        if i == 25 {
            buf25 = buf;
        }
    }
    rig.wait_until("A blocked in buffer 25", || {
        snap(&rig, 1).is_some_and(|s| s.blocked_on == Some((g.cv, 1)))
    });
    assert_eq!(snap(&rig, 1).unwrap().indirect, Some((buf25.0, 16)));
    collect(&rig, &mut progress);
    rig.submit(&mut b, &[Command::Hang]);
    rig.wait_until("engine 0 hung", || {
        status(&rig, 0).state == EngineState::Hung
    });

    assert_eq!(reset(&rig, 0), (ResetResult::Ok as u32, 2, 0));
    assert!(snap(&rig, 2).is_none());
    assert_eq!(snap(&rig, 1).unwrap().indirect, Some((buf25.0, 16)));
    // Held: release A's wait and submit more; nothing may run on engine 0.
    let done0 = rig.dev.completed_commands(0);
    rig.mem.write_u64(PhysAddr::new(g.cv), 1).unwrap();
    rig.dev.write64(regs::WAIT_RESCAN, g.cv);
    for i in 31..=50 {
        sub(&mut rig, &mut a, i);
    }
    fill(&rig, &mut c, fills / 2);
    submitted_fills += fills / 2;
    let until = Instant::now() + Duration::from_millis(30);
    while Instant::now() < until {
        assert_eq!(
            rig.dev.completed_commands(0),
            done0,
            "held engine ran something"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(status(&rig, 0).held);
    assert_eq!(rig.value(a.desc.progress_fence.get()), 24);

    rig.commit(0, &[&a]);
    rig.wait_until("A done", || {
        rig.mem.read_u64(PhysAddr::new(a.desc.progress_fence.get())) == Some(50)
            && rig.read_ptr(&a) == a.wptr
    });
    rig.wait_until("progress events", || {
        collect(&rig, &mut progress);
        progress.len() >= 50
    });
    assert_eq!(
        progress,
        (1..=50).collect::<Vec<_>>(),
        "each once, in order"
    );
    // Per submission: INDIRECT + PROGRESS + TIMESTAMP + signal (+ the wait in 25).
    assert_eq!(rig.dev.completed_commands(0), 50 * 4 + 1);
    rig.wait_until("engine 1 done", || rig.read_ptr(&c) == c.wptr);
    assert_eq!(rig.dev.completed_commands(1), submitted_fills);
    let ts = rig.mem.read_words(PhysAddr::new(stamps), 50).unwrap();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
}
