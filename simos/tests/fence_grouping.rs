//! NF-15 under LOG-08 whatever the device's fence records group into: no CPU waiter whose value
//! was reached stays blocked, when a late interrupt makes one ISR pass drain several records
//! (logged and unlogged signals, a queue's own progress fence, shared and other processes'
//! fences, log overflow, more fences than a report holds), under both readings (24H2 reads only
//! the named queue's log and scans only when it says nothing; the pages read logs and never
//! scan on their own, docs/logs.md) and on both driver builds.
//!
//! Every wait here is judged by its release: the event must be signalled, never the fence's
//! value read afterwards. The exhaustive model at the end enumerates the groupings on the
//! step-mode machine, where the device's interrupt is held back a chosen number of steps.

mod common;

use common::fences::{fence, wait};
use common::own_progress::NoUserProgress;
use common::*;
use std::time::Duration;

use rvgpu_device::IrqDelay;
use rvgpu_hw::cmd::{Command, LogKind, SIGNAL_CONDITIONAL_IRQ};
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::{Machine, Mode, NativeFence, SimEvent, UmsProcess, WaitOutcome};
use rvgpu_umd::fence::NativeFence as UmdFence;
use rvgpu_umd::fencelog::Op;
use rvgpu_umd::kmt::Kmt;
use rvgpu_umd::submit::UserQueue;

/// A started machine in `mode` whose adapter reports native fences per queue (LOG-08).
fn machine(mode: Mode) -> Machine {
    let m = with_doorbells(mode, 4);
    assert!(
        m.optimized_fence_irq(0),
        "the default adapter names the queue"
    );
    m
}

/// A user-mode queue whose batches close on its own native fence.
type OwnQueue<'m> = UserQueue<NoUserProgress<'m>>;

/// A user-mode queue of `k`'s process that closes its batches with its own native fence (24H2's
/// user-mode queue, under every reading), and the OS's instance of that fence.
fn own_queue<'m>(m: &'m Machine, k: SimKmt<'m>) -> (OwnQueue<'m>, NativeFence) {
    let q = okk(m, UserQueue::new(NoUserProgress(k), &config(0)));
    let own = m
        .native_fence_by_kmt(0, q.progress_fence())
        .expect("the queue's own fence");
    (q, own)
}

/// [`own_queue`], then one native fence of the same process (the UMD's and the OS's instance).
fn own_queue_and_fence<'m>(
    m: &'m Machine,
    k: SimKmt<'m>,
) -> (OwnQueue<'m>, NativeFence, (UmdFence, NativeFence)) {
    let (q, own) = own_queue(m, k);
    (q, own, fence(m, &k))
}

/// The conditional FENCE_SIGNAL of `f` with no LOG_WRITE after it (a raw packet any ring may
/// hold).
fn unlogged_signal(f: &UmdFence, value: u64) -> Op<'static> {
    let mut s = f.signal(value);
    if let Command::FenceSignal { flags, .. } = &mut s {
        *flags = SIGNAL_CONDITIONAL_IRQ;
    }
    Op::Cmd(s)
}

/// Runs `m` in steps until `events` are all signalled (or 2,000 steps passed) with the device's
/// interrupt held back `delay` steps, then lets it deliver; returns how many ISR passes claimed.
fn run_grouped(m: &Machine, delay: u64, events: &[&SimEvent]) -> u64 {
    let dev = m.device(0).expect("device").clone();
    let before = m.interrupt_counts(0).0;
    dev.set_interrupt_delay(Some(IrqDelay::Steps(delay)));
    for _ in 0..2_000 {
        if events.iter().all(|e| e.is_signaled()) {
            break;
        }
        ok(m, m.run_steps(1));
    }
    dev.set_interrupt_delay(None);
    ok(m, m.run_steps(4));
    m.interrupt_counts(0).0 - before
}

fn released(e: &SimEvent) -> bool {
    e.wait(Duration::ZERO) == Some(WaitOutcome::Satisfied)
}

/// NF-15: a batch's logged signal of one fence and the unlogged closing signal of the queue's
/// own progress fence reach one ISR pass. The report that names the queue would send the OS to
/// a log that holds only the first; both waiters are released.
#[test]
fn nf_15_logged_signal_and_unlogged_progress_signal_in_one_pass_release_both_waiters() {
    let m = machine(Mode::Step);
    let (p, k) = user_process(&m);
    let (mut q, own, (f, fo)) = own_queue_and_fence(&m, k);
    let (wf, wp) = (wait(&m, &fo, 1), wait(&m, &own, 1));
    let v = okk(&m, q.submit_ops(&[Op::Signal(&f, 1)]));
    assert_eq!(v, 1);
    let passes = run_grouped(&m, 2, &[&wf, &wp]);
    assert_eq!(passes, 1, "both records reached one ISR pass");
    assert_eq!(own.current_value(), 1);
    assert!(released(&wf), "the logged signal's waiter");
    assert!(released(&wp), "the progress fence's waiter");
    drop(q);
    exits_clean(&m, &p);
}

/// NF-15 threaded: 40 batches, each a logged signal and the own fence's closing signal, with
/// every interrupt held back 1 ms so records group as they happen to; a waiter for progress
/// value 37 is released.
#[test]
fn nf_15_late_interrupts_release_a_progress_waiter_under_threaded_grouping() {
    let m = machine(Mode::Threaded);
    let (p, k) = user_process(&m);
    let (mut q, own, (f, fo)) = own_queue_and_fence(&m, k);
    let wf = wait(&m, &fo, 40);
    let wp = wait(&m, &own, 37);
    let dev = m.device(0).expect("device").clone();
    dev.set_interrupt_delay(Some(IrqDelay::Duration(Duration::from_millis(1))));
    for v in 1..=40u64 {
        okk(&m, q.submit_ops(&[Op::Signal(&f, v)]));
    }
    // The OS's own limit bounds the wait; the release decides, not the value read afterwards.
    assert_eq!(
        wp.wait(Duration::from_secs(10)),
        Some(WaitOutcome::Satisfied),
        "progress 37 (the fence reads {})",
        own.current_value()
    );
    assert_eq!(
        wf.wait(Duration::from_secs(10)),
        Some(WaitOutcome::Satisfied)
    );
    dev.set_interrupt_delay(None);
    okk(&m, q.wait(40));
    drop(q);
    exits_clean(&m, &p);
}

/// Two processes that share a fence `S` (A created it, B opened it from a duplicated NT
/// handle) and the waiter of B's on it.
struct Shared<'m> {
    a: UmsProcess,
    ka: SimKmt<'m>,
    b: UmsProcess,
    s_a: UmdFence,
    /// The OS's instance of the shared fence in B.
    os_b: NativeFence,
    b_waits: SimEvent,
}

fn shared<'m>(m: &'m Machine) -> Shared<'m> {
    let (a, ka) = user_process(m);
    let b = ok(m, m.create_process(0));
    let kb = m.kmt(&b);
    let s_a = okk(m, ka.create_shareable_native_fence(0));
    let h = okk(m, ka.share_native_fence(s_a.kmt));
    let hb = ok(m, m.duplicate_handle(a.pid, h, b.pid));
    let s_b = okk(m, kb.open_native_fence(hb));
    let os_b = m.native_fence_by_kmt(0, s_b.kmt).expect("B's instance");
    let b_waits = wait(m, &os_b, 1);
    Shared {
        a,
        ka,
        b,
        s_a,
        os_b,
        b_waits,
    }
}

/// The attacker's test: `ring` fills A's ring from the shared fence and one of A's own fences
/// (whose waiter is armed), then calls the check it is given while its queue lives: every
/// record reaches one ISR pass and, whatever A wrote, B's waiter on the shared fence is
/// released.
fn a_cannot_hide_the_shared_signal(
    ring: impl FnOnce(&Machine, &Shared<'_>, &UmdFence, &NativeFence, &dyn Fn()),
) {
    let m = machine(Mode::Step);
    let sh = shared(&m);
    let (x, xo) = fence(&m, &sh.ka);
    let wx = wait(&m, &xo, 1);
    let check = || {
        let passes = run_grouped(&m, 2, &[&wx, &sh.b_waits]);
        assert_eq!(passes, 1, "every record reached one ISR pass");
        assert!(released(&wx), "A's own waiter");
        assert!(released(&sh.b_waits), "B's waiter on the shared fence");
    };
    ring(&m, &sh, &x, &xo, &check);
    ok(&m, m.exit_process(&sh.b));
    exits_clean(&m, &sh.a);
}

/// NF-15 across processes: A signals the shared fence with a raw conditional FENCE_SIGNAL and
/// no LOG_WRITE, in the same ISR pass as a logged signal of one of its own fences.
#[test]
fn nf_15_an_unlogged_signal_of_a_shared_fence_cannot_hide_behind_a_logged_one() {
    a_cannot_hide_the_shared_signal(|m, sh, x, _, check| {
        let (mut q, _own) = own_queue(m, sh.ka);
        okk(
            m,
            q.submit_ops(&[unlogged_signal(&sh.s_a, 1), Op::Signal(x, 1)]),
        );
        check();
    });
}

/// NF-15 across processes: A's raw ring follows the shared fence's signal with a signal-log
/// LOG_WRITE naming its own fence with another value, then logs its own fence's signal: the
/// device does not call the shared fence's signal logged.
#[test]
fn nf_15_a_log_entry_of_another_value_does_not_count_as_the_signals_entry() {
    a_cannot_hide_the_shared_signal(|m, sh, x, xo, check| {
        let s_a = m.native_fence_by_kmt(0, sh.s_a.kmt).expect("A's instance");
        let mut q = ok(m, GpuQueue::new_in(m, sh.a, 0));
        let entry = |index, value| Command::LogWrite {
            log: LogKind::Signal,
            index,
            fence_handle: x.kmt,
            fence_value: value,
        };
        ok(m, q.signal(&s_a, 1));
        ok(m, q.push(entry(0, 7)));
        ok(m, q.signal(xo, 1));
        ok(m, q.push(entry(1, 1)));
        ok(m, q.kick());
        check();
    });
}

// ---------------------------------------------------------------------------------------------
// The grouping model.

/// One operation of a generated batch.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// A logged signal of the process's own fence `i` (`Op::Signal`).
    Logged(usize),
    /// An unlogged conditional signal of own fence `i`.
    Unlogged(usize),
    /// An unlogged conditional signal of the fence shared with the other process.
    Shared,
}

/// NF-15, exhaustively: every batch of up to three steps over two own fences and the shared
/// fence, on two queues of two processes, with the interrupt held back 0 to 3 steps (so the
/// records fall into one ISR pass or several in every way the device can post them), each
/// fence with a CPU waiter for the value its last signal stores. Every waiter whose value was
/// reached is released. More than 8 waited fences in one pass, and a log that overflowed,
/// follow below.
#[test]
fn nf_15_every_grouping_of_logged_unlogged_own_and_shared_signals_releases_every_waiter() {
    let alphabet = [
        Step::Logged(0),
        Step::Logged(1),
        Step::Unlogged(0),
        Step::Unlogged(1),
        Step::Shared,
    ];
    let mut batches: Vec<Vec<Step>> = Vec::new();
    for len in 1..=3usize {
        let n = alphabet.len().pow(len as u32);
        for mut code in 0..n {
            let mut b = Vec::with_capacity(len);
            for _ in 0..len {
                b.push(alphabet[code % alphabet.len()]);
                code /= alphabet.len();
            }
            batches.push(b);
        }
    }
    let m = machine(Mode::Step);
    let sh = shared(&m);
    let (c, kc) = user_process(&m);
    let (mut qa, own_a) = own_queue(&m, sh.ka);
    let (mut qc, own_c) = own_queue(&m, kc);
    let fa = [fence(&m, &sh.ka), fence(&m, &sh.ka)];
    let fc = [fence(&m, &kc), fence(&m, &kc)];
    let mut value = 0u64;
    let mut shared_value = 0u64;
    let mut b_waits = sh.b_waits;
    let mut cases = 0u32;
    for (n, batch) in batches.iter().enumerate() {
        for delay in 0..=3u64 {
            value += 1;
            // Process A runs the batch; process C runs its mirror (own fences only) on its
            // queue at the same time, so records of two queues and two processes interleave.
            let mut ops_a: Vec<Op<'_>> = Vec::new();
            let mut ops_c: Vec<Op<'_>> = Vec::new();
            let mut waits: Vec<(String, SimEvent)> = Vec::new();
            for s in batch {
                match *s {
                    Step::Logged(i) => {
                        ops_a.push(Op::Signal(&fa[i].0, value));
                        ops_c.push(Op::Signal(&fc[i].0, value));
                    }
                    Step::Unlogged(i) => {
                        ops_a.push(unlogged_signal(&fa[i].0, value));
                        ops_c.push(unlogged_signal(&fc[i].0, value));
                    }
                    Step::Shared => {
                        shared_value = value;
                        ops_a.push(unlogged_signal(&sh.s_a, value));
                    }
                }
            }
            for (i, (_, os)) in fa.iter().enumerate() {
                if batch
                    .iter()
                    .any(|s| matches!(*s, Step::Logged(j) | Step::Unlogged(j) if j == i))
                {
                    waits.push((format!("A's fence {i}"), wait(&m, os, value)));
                }
            }
            for (i, (_, os)) in fc.iter().enumerate() {
                if batch
                    .iter()
                    .any(|s| matches!(*s, Step::Logged(j) | Step::Unlogged(j) if j == i))
                {
                    waits.push((format!("C's fence {i}"), wait(&m, os, value)));
                }
            }
            let pa = okk(&m, qa.submit_ops(&ops_a));
            waits.push(("A's progress".into(), wait(&m, &own_a, pa)));
            let pc = okk(&m, qc.submit_ops(&ops_c));
            waits.push(("C's progress".into(), wait(&m, &own_c, pc)));
            let mut all: Vec<&SimEvent> = waits.iter().map(|w| &w.1).collect();
            if shared_value == value {
                all.push(&b_waits);
            }
            run_grouped(&m, delay, &all);
            for (what, e) in &waits {
                assert!(
                    released(e),
                    "{what} not released: batch {n} {batch:?}, interrupt held {delay} steps"
                );
            }
            if shared_value == value {
                assert!(
                    released(&b_waits),
                    "B's shared-fence waiter not released: batch {batch:?}, held {delay}"
                );
                b_waits = wait(&m, &sh.os_b, value + 1);
            }
            cases += 1;
        }
    }
    assert_eq!(cases, 155 * 4, "every batch under every delay");
    drop((qa, qc));
    ok(&m, m.exit_process(&sh.b));
    ok(&m, m.exit_process(&c));
    exits_clean(&m, &sh.a);
}

/// NF-15 with more waited fences in one ISR pass than an array report may name (24H2 keeps 8)
/// and more entries than the 84-entry signal log holds, all run before the interrupt is
/// delivered: 12 logged signals of 12 fences with waiters, then 100 logged signals of one fence
/// in four batches, each batch with its unlogged closing signal; every waiter is released. This
/// adapter reports per queue, so the array limit itself is checked by the KMD's report tests;
/// log overflow by fence_logs.rs.
#[test]
fn nf_15_more_fences_than_a_report_names_and_more_entries_than_a_log_holds_release_every_waiter() {
    let m = machine(Mode::Step);
    let (p, k) = user_process(&m);
    let (mut q, own) = own_queue(&m, k);
    let fences: Vec<(UmdFence, NativeFence)> = (0..12).map(|_| fence(&m, &k)).collect();
    let waits: Vec<SimEvent> = fences.iter().map(|f| wait(&m, &f.1, 1)).collect();
    let ops: Vec<Op<'_>> = fences.iter().map(|f| Op::Signal(&f.0, 1)).collect();
    okk(&m, q.submit_ops(&ops));
    let (g, go) = fence(&m, &k);
    let wg = wait(&m, &go, 100);
    let mut v = 0;
    for batch in 0..4u64 {
        let ops: Vec<Op<'_>> = (1..=25u64)
            .map(|i| Op::Signal(&g, batch * 25 + i))
            .collect();
        v = okk(&m, q.submit_ops(&ops));
    }
    let wp = wait(&m, &own, v);
    // Every record of the run in one ISR pass: the line held until the device is done (the
    // driver's watchdog, a timer DPC, held back too, as behind a long DPC on the processor).
    let dev = m.device(0).expect("device").clone();
    let before = m.interrupt_counts(0).0;
    ok(&m, m.hold_timer_dpcs(0, true));
    dev.set_interrupt_delay(Some(IrqDelay::Steps(u64::MAX)));
    for _ in 0..2_000 {
        if own.current_value() == v {
            break;
        }
        ok(&m, m.run_steps(1));
    }
    assert_eq!(m.interrupt_counts(0).0, before, "nothing delivered yet");
    dev.set_interrupt_delay(None);
    ok(&m, m.hold_timer_dpcs(0, false));
    ok(&m, m.run_until_idle());
    for (i, w) in waits.iter().enumerate() {
        assert!(released(w), "fence {i}");
    }
    assert!(released(&wg), "the fence with 100 entries");
    assert!(released(&wp), "the progress fence");
    drop((q, g));
    exits_clean(&m, &p);
}

against_the_pe_image!();

under_the_pages!(image);
