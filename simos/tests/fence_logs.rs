//! Native fence logs (LOG-01 … LOG-09) end to end: the real UMD (`submit_ops`, or raw
//! packets where a test needs exact control), the simulated D3DKMT thunks and Dxgkrnl (log
//! buffers, DPC-time drain, `DxgkDdiUpdateNativeFenceLogs`, releases from signal entries,
//! overflow fallback), the real KMD and the emulated GPU. Pure drain cases (overwrite during a
//! read, timestamps) are unit tests in `rvgpu_simos::sync::fencelog`.

mod common;

use common::fences::{fence, wait};
use common::*;
use std::collections::BTreeSet;
use std::sync::Arc;

use rvgpu_hw::cmd::{Command, LogKind};
use rvgpu_hw::log::{LogEntry, OP_SIGNAL_EXECUTED, OP_WAIT_UNBLOCKED};
use rvgpu_simos::adapter::irql::Routine;
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::machine::answers::LogHandOver;
use rvgpu_simos::state::sync::trace::{Recorder, TraceEvent};
use rvgpu_simos::sync::fencelog::{LogCounters, Producer};
use rvgpu_simos::{
    AdapterConfig, Machine, MachineConfig, Mode, NativeFence, ReleaseVia, SimEvent, UmsEvent,
    UmsProcess,
};
use rvgpu_umd::fence::NativeFence as UmdFence;
use rvgpu_umd::fencelog::Op;
use rvgpu_umd::submit::{KernelQueue, UserQueue};

// ---------------------------------------------------------------------------------------------
// Fixtures.

fn machine_with(mode: Mode, f: impl FnOnce(&mut MachineConfig)) -> Machine {
    let mut cfg = MachineConfig::single(mode);
    f(&mut cfg);
    started(cfg)
}

fn machine(mode: Mode) -> Machine {
    machine_with(mode, |_| {})
}

fn process(m: &Machine) -> UmsProcess {
    okk(m, m.create_process(0))
}

/// The D3DKMT handle of the user-mode hardware queue with device queue id `id`.
fn queue_handle(m: &Machine, id: u32) -> u32 {
    m.ums_events(0)
        .iter()
        .find_map(|e| match *e {
            UmsEvent::CreateHwQueue {
                queue,
                user_mode: true,
                queue_id: Some(q),
            } if q == id => Some(queue),
            _ => None,
        })
        .expect("queue created")
}

fn idle(m: &Machine) {
    okk(m, m.run_until_idle());
}

fn counters(m: &Machine) -> LogCounters {
    m.log_counters(0)
}

fn entries_of(rec: &Recorder, queue_id: u32, kind: LogKind) -> Vec<(u64, u32, u64)> {
    rec.events()
        .iter()
        .filter_map(|e| match *e {
            TraceEvent::LogEntry {
                queue_id: q,
                kind: k,
                index,
                entry,
                ..
            } if q == queue_id && k == kind => {
                Some((index, entry.h_native_fence, entry.fence_value))
            }
            _ => None,
        })
        .collect()
}

/// `FENCE_SIGNAL` with the given flags plus its signal-log `LOG_WRITE` (raw packets, for tests
/// that need a plain signal: `Op::Signal` always asks for the conditional interrupt).
fn signal_raw(f: &UmdFence, value: u64, flags: u8, index: u32) -> [Command; 2] {
    let mut s = f.signal(value);
    if let Command::FenceSignal { flags: fl, .. } = &mut s {
        *fl = flags;
    }
    [
        s,
        Command::LogWrite {
            log: LogKind::Signal,
            index,
            fence_handle: f.kmt,
            fence_value: value,
        },
    ]
}

fn optimized_cap(m: &Machine) -> bool {
    m.optimized_fence_irq(0)
}

/// A wait's release through entry `index` of queue `queue_id`'s signal log.
fn from_signal_log(queue_id: u32, index: u64) -> Option<ReleaseVia> {
    Some(ReleaseVia::Log {
        queue_id,
        kind: LogKind::Signal,
        index,
    })
}

/// A trace recorder installed as the machine's sink.
fn recorded(m: &Machine) -> Arc<Recorder> {
    let rec = Recorder::new();
    m.set_trace_sink(rec.clone());
    rec
}

/// What a `NativeFenceSignaled` notification reported.
struct FenceSignaled {
    node: u32,
    optimized: bool,
    hw_queue: Option<usize>,
    fences: Option<Vec<usize>>,
    evaluate_legacy: bool,
}

/// The `NativeFenceSignaled` notifications adapter 0 processed after its first `before`.
fn fence_signaled_since(m: &Machine, before: usize) -> Vec<FenceSignaled> {
    m.notifications(0)[before..]
        .iter()
        .filter_map(|p| match &p.notification {
            rvgpu_simos::Notification::NativeFenceSignaled {
                node,
                optimized,
                hw_queue,
                fences,
                evaluate_legacy,
                ..
            } => Some(FenceSignaled {
                node: *node,
                optimized: *optimized,
                hw_queue: *hw_queue,
                fences: fences.clone(),
                evaluate_legacy: *evaluate_legacy,
            }),
            _ => None,
        })
        .collect()
}

/// A user process with one user-mode queue on engine 0 (`h` its D3DKMT handle) and one native
/// fence (`f` as the UMD holds it, `fo` as the OS does). Fields drop in order: the fence, the
/// queue, the process last.
struct OneQueue<'m> {
    fo: NativeFence,
    f: UmdFence,
    q: UserQueue<SimKmt<'m>>,
    h: u32,
    k: SimKmt<'m>,
    p: UmsProcess,
}

fn one_queue(m: &Machine) -> OneQueue<'_> {
    let (p, k) = user_process(m);
    let q = okk(m, UserQueue::new(k, &config(0)));
    let (f, fo) = fence(m, &k);
    let h = queue_handle(m, q.queue_id());
    OneQueue { q, f, fo, h, k, p }
}

/// Drains every log of engine 0 (a NULL-hHWQueue report) and checks that nothing halted.
fn drain_engine0(m: &Machine) {
    okk(m, m.drain_native_fence_logs(0, &[], &[0]));
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

// ---------------------------------------------------------------------------------------------
// LOG-01

#[test]
fn log_01_os_sets_both_logs_at_queue_creation() {
    let m = machine(Mode::Step);
    let p = process(&m);
    let uq = okk(&m, UserQueue::new(m.kmt(&p), &config(0)));
    let h = queue_handle(&m, uq.queue_id());
    for kind in [LogKind::Wait, LogKind::Signal] {
        let (gpu, entries, cursor, last, gen) = m.hw_queue_log(0, h, kind).expect("log set");
        assert!(gpu != 0 && gpu % 4096 == 0);
        assert_eq!((entries, cursor, last, gen), (84, 0, 0, 0));
    }
    let w = m.hw_queue_log(0, h, LogKind::Wait).unwrap().0;
    let s = m.hw_queue_log(0, h, LogKind::Signal).unwrap().0;
    assert_ne!(w, s);
    // A kernel-mode queue gets no logs (seed: the OS gives them none).
    let kq = okk(&m, KernelQueue::new(m.kmt(&p), &config(0)));
    let kh = last_hw_queue(&m, false).unwrap();
    assert!(m.hw_queue_log(0, kh, LogKind::Signal).is_none());
    drop(kq);
}

#[test]
fn log_01_set_runs_at_dispatch() {
    // The simulation calls Update/Calibrate at DISPATCH_LEVEL, Set at PASSIVE_LEVEL (24H2's
    // hand-over) or DISPATCH_LEVEL (24H2's release, the pages), and checks the rule on each
    // call (a queue is created below without a bug check); the rules themselves:
    let set = Routine::DxgkDdiSetNativeFenceLogBuffer.rule();
    assert_eq!(
        (set.min, set.max),
        (rvgpu_simos::Irql::Passive, rvgpu_simos::Irql::Dispatch)
    );
    for r in [
        Routine::DxgkDdiUpdateNativeFenceLogs,
        Routine::DxgkDdiCalibrateGpuClock,
    ] {
        let rule = r.rule();
        assert_eq!(
            (rule.min, rule.max),
            (rvgpu_simos::Irql::Dispatch, rvgpu_simos::Irql::Dispatch)
        );
    }
    let m = machine(Mode::Step);
    let p = process(&m);
    let _uq = okk(&m, UserQueue::new(m.kmt(&p), &config(0)));
    assert!(m.fault().is_none());
}

#[test]
fn log_01_recreate_mid_run_moves_writes_to_new_buffer() {
    let m = machine(Mode::Step);
    let mut t = one_queue(&m);
    let (uq, f, fo, h, k, p) = (&mut t.q, &t.f, &t.fo, t.h, &t.k, &t.p);
    let rec = recorded(&m);
    let w1 = wait(&m, fo, 3);
    okk(
        &m,
        uq.submit_ops(&[Op::Signal(f, 1), Op::Signal(f, 2), Op::Signal(f, 3)]),
    );
    idle(&m);
    assert!(w1.is_signaled());
    let old = m.hw_queue_log(0, h, LogKind::Signal).unwrap();
    assert_eq!(old.2, 3, "three entries consumed");
    // Move the signal log (a smaller one) while the queue has work queued behind a GPU wait.
    let (g, go) = fence(&m, k);
    okk(
        &m,
        uq.submit_ops(&[Op::Wait(&g, 1), Op::Signal(f, 4), Op::Signal(f, 5)]),
    );
    let _ = m.run_steps(4);
    okk(&m, m.recreate_hw_queue_log(p, h, LogKind::Signal, 8));
    let new = m.hw_queue_log(0, h, LogKind::Signal).unwrap();
    assert_ne!(new.0, old.0, "new buffer");
    assert_eq!((new.1, new.4), (8, 1));
    assert_eq!(new.2, 3, "cursor carried over");
    let w5 = wait(&m, fo, 5);
    okk(&m, m.signal_native_fence_from_cpu(&go, 1));
    idle(&m);
    assert!(w5.is_signaled());
    assert_eq!(w5.released_via(), from_signal_log(uq.queue_id(), 4));
    // Every index read exactly once, in order, across the move; nothing lost.
    let got: Vec<u64> = entries_of(&rec, uq.queue_id(), LogKind::Signal)
        .iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(got, vec![0, 1, 2, 3, 4]);
    assert_eq!(counters(&m).log_entries_lost, 0);
    assert!(rec.events().iter().any(|e| matches!(
        e,
        TraceEvent::LogRecreated {
            at: 3,
            entries: 8,
            ..
        }
    )));
    okk(&m, m.check_retired_logs(0));
    assert!(m.fault().is_none());
}

/// A machine whose OS hands log buffers over as `over` says (the rest of the reading from the
/// environment).
fn machine_handing_over(over: LogHandOver) -> Machine {
    machine_with(Mode::Step, |c| {
        c.os.windows = c.os.windows.answering(|r| r.log_hand_over = over)
    })
}

/// A queue of `t` blocked on a GPU wait for `g` = 1, with a wait-log and a signal-log
/// `LOG_WRITE` queued behind it (the signal sets `t.f` to 1).
fn blocked_on_gpu_wait(m: &Machine, t: &mut OneQueue<'_>, g: &UmdFence) {
    okk(m, t.q.submit_ops(&[Op::Wait(g, 1), Op::Signal(&t.f, 1)]));
    let _ = m.run_steps(8);
    assert!(t.fo.current_value() < 1, "the queue waits on the GPU");
}

/// 24H2's block (`M:VidSchiCreateNativeFenceLog`): `LogBufferSystemProcessGpuVa` zero, the wait
/// log mapped only into the queue's process and the signal log only into the system process.
/// The queue creates, and the device writes both logs where the OS mapped them (the wait
/// log's entry is read, so it went through the queue's own space).
#[test]
fn log_01_queue_with_logs_creates_under_the_24h2_block() {
    let m = machine_handing_over(LogHandOver::HandleOnlyRelease);
    let rec = recorded(&m);
    let mut t = one_queue(&m);
    let w = m
        .hw_queue_log_buffer(0, t.h, LogKind::Wait)
        .expect("wait log set");
    let s = m
        .hw_queue_log_buffer(0, t.h, LogKind::Signal)
        .expect("signal log set");
    let (_, wait_va) = w
        .process_va()
        .expect("the wait log is in the queue's process");
    assert_ne!(wait_va, w.gpu(), "a process VA, not the system one");
    assert!(
        s.process_va().is_none(),
        "the signal log is the system process's only"
    );
    let (g, go) = fence(&m, &t.k);
    let ev = wait(&m, &t.fo, 1);
    blocked_on_gpu_wait(&m, &mut t, &g);
    okk(&m, m.signal_native_fence_from_cpu(&go, 1));
    idle(&m);
    assert!(ev.is_signaled());
    let id = t.q.queue_id();
    assert_eq!(entries_of(&rec, id, LogKind::Wait), vec![(0, g.kmt, 1)]);
    assert_eq!(entries_of(&rec, id, LogKind::Signal), vec![(0, t.f.kmt, 1)]);
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// 24H2's release block (`M:VidSchiDecrementHwQueueReference`: only `hHwQueue`, at
/// DISPATCH_LEVEL, then the logs freed) while the queue still has logged work queued: before
/// it returns the KMD takes both logs away and the queue off the device, so the work still
/// queued writes nothing into the freed (sealed) pages, and the queue's destruction finds them
/// intact.
#[test]
fn log_01_release_block_stops_log_writes_before_the_pages_are_freed() {
    let m = machine_handing_over(LogHandOver::HandleOnlyRelease);
    let mut t = one_queue(&m);
    let (g, go) = fence(&m, &t.k);
    blocked_on_gpu_wait(&m, &mut t, &g);
    okk(&m, m.release_hw_queue_logs(&t.p, t.h));
    assert!(m.hw_queue_log(0, t.h, LogKind::Wait).is_none());
    assert!(m.hw_queue_log(0, t.h, LogKind::Signal).is_none());
    okk(&m, m.signal_native_fence_from_cpu(&go, 1));
    let _ = m.run_steps(64);
    okk(&m, m.check_retired_logs(0));
    assert!(m.fault().is_none(), "{:?}", m.fault());
    // The destruction (no second release: the logs are gone) checks the pages once more.
    drop(t);
    okk(&m, m.check_retired_logs(0));
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// A refused set leaves no log of the queue in use: 24H2 frees both logs when either call
/// fails, and the pages' "destroy and recreate" destroys the old buffer before the call. So
/// after the KMD refuses a new signal log (85 entries do not fit), the queue's next signal
/// writes nothing into the old one.
#[test]
fn log_01_refused_set_leaves_no_log_in_use() {
    let m = machine_handing_over(LogHandOver::BothVas);
    let t = one_queue(&m);
    let old = m
        .hw_queue_log_buffer(0, t.h, LogKind::Signal)
        .expect("signal log set");
    let r = m.recreate_hw_queue_log(&t.p, t.h, LogKind::Signal, 85);
    assert!(r.is_err(), "85 entries do not fit a 4 KiB buffer");
    let header = old.header();
    let mut t = t;
    okk(&m, t.q.submit_ops(&[Op::Signal(&t.f, 1)]));
    let _ = m.run_steps(64);
    assert_eq!(old.header(), header, "the old signal log was written");
    drop(t);
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// The pages' block (both VAs: `LogBufferGpuVa` in the queue's process, the system one in
/// `LogBufferSystemProcessGpuVa`, for either log) and no release: the device writes both logs
/// at their system VAs, and a queue destroyed with logged work queued leaves nothing behind.
#[test]
fn log_01_queue_with_logs_works_under_the_pages_block() {
    let m = machine_handing_over(LogHandOver::BothVas);
    let rec = recorded(&m);
    let mut t = one_queue(&m);
    for kind in [LogKind::Wait, LogKind::Signal] {
        let b = m.hw_queue_log_buffer(0, t.h, kind).expect("log set");
        let (_, va) = b.process_va().expect("mapped into the queue's process too");
        assert_ne!(va, b.gpu());
    }
    let (g, go) = fence(&m, &t.k);
    let ev = wait(&m, &t.fo, 1);
    blocked_on_gpu_wait(&m, &mut t, &g);
    okk(&m, m.signal_native_fence_from_cpu(&go, 1));
    idle(&m);
    assert!(ev.is_signaled());
    let id = t.q.queue_id();
    assert_eq!(entries_of(&rec, id, LogKind::Wait), vec![(0, g.kmt, 1)]);
    assert_eq!(entries_of(&rec, id, LogKind::Signal), vec![(0, t.f.kmt, 1)]);
    let (h, hg) = fence(&m, &t.k);
    okk(&m, t.q.submit_ops(&[Op::Wait(&h, 1), Op::Signal(&t.f, 2)]));
    let OneQueue { q, fo, f, k, p, .. } = t;
    drop(q);
    okk(&m, m.signal_native_fence_from_cpu(&hg, 1));
    idle(&m);
    drop((fo, f, k, p));
    okk(&m, m.check_retired_logs(0));
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

// ---------------------------------------------------------------------------------------------
// LOG-02, LOG-03

#[test]
fn log_02_os_reads_entries_in_index_order() {
    let m = machine(Mode::Step);
    let mut t = one_queue(&m);
    let (uq, f, fo) = (&mut t.q, &t.f, &t.fo);
    let rec = recorded(&m);
    let mut v = 0;
    for batch in 0..5 {
        let mut ops = Vec::new();
        for _ in 0..=batch {
            v += 1;
            ops.push(Op::Signal(f, v));
            ops.push(Op::Wait(f, v));
        }
        let ev = wait(&m, fo, v);
        okk(&m, uq.submit_ops(&ops));
        idle(&m);
        assert!(ev.is_signaled());
    }
    // The last wait entry is written after the last interrupt (a batch completion reports no
    // native fence: the progress fence is monitored), so the next drain reads it.
    okk(&m, m.drain_native_fence_logs(0, &[], &[0]));
    for kind in [LogKind::Signal, LogKind::Wait] {
        let idx: Vec<u64> = entries_of(&rec, uq.queue_id(), kind)
            .iter()
            .map(|e| e.0)
            .collect();
        assert_eq!(idx, (0..v).collect::<Vec<_>>(), "{kind:?}");
    }
}

#[test]
fn log_03_entries_match_queued_ops() {
    let m = machine(Mode::Step);
    let (_p, k) = user_process(&m);
    let mut uq = okk(&m, UserQueue::new(k, &config(0)));
    let rec = recorded(&m);
    uq.set_fence_trace(Some(Arc::new(rec.for_adapter(0))));
    let (f, fo) = fence(&m, &k);
    let (g, _go) = fence(&m, &k);
    let ev = wait(&m, &fo, 3);
    okk(
        &m,
        uq.submit_ops(&[
            Op::Signal(&f, 1),
            Op::Signal(&g, 7),
            Op::Wait(&g, 7),
            Op::Signal(&f, 3),
        ]),
    );
    idle(&m);
    assert!(ev.is_signaled());
    let ops = rec.operations();
    assert_eq!(ops.len(), 4, "{ops:#?}");
    for o in &ops {
        assert!(!o.mismatch && !o.lost, "{o:?}");
        let q = o.queued_qpc.expect("queued");
        assert!(q > 0);
        assert!(o.end_gpu.is_some());
    }
    let sig = entries_of(&rec, uq.queue_id(), LogKind::Signal);
    assert_eq!(sig, vec![(0, f.kmt, 1), (1, g.kmt, 7), (2, f.kmt, 3)]);
    assert_eq!(
        entries_of(&rec, uq.queue_id(), LogKind::Wait),
        vec![(0, g.kmt, 7)]
    );
    assert_eq!(counters(&m).log_bad_entries, 0);
    assert_eq!(
        counters(&m).log_untrusted,
        0,
        "honest traffic is never untrusted"
    );
    // Calibration samples were taken (a sink is installed). (Causality of the GPU -> CPU
    // mapping is checked in threaded mode: in step mode the GPU clock counts steps.)
    assert!(!rec.clock_map(0).samples.is_empty());
}

// ---------------------------------------------------------------------------------------------
// LOG-04

#[test]
fn log_04_signal_entry_is_read_by_the_drain_that_releases_its_wait() {
    // Threaded: each conditional signal's entry is in the log before the interrupt decision
    // (device look-ahead), so the drain of that DPC finds it: every wait is released through
    // the log (or, if a resample got there first in a race, by Resample), never left pending.
    let m = machine(Mode::Threaded);
    let mut t = one_queue(&m);
    let (uq, f, fo) = (&mut t.q, &t.f, &t.fo);
    let mut via_log = 0;
    for v in 1..=300u64 {
        let ev = wait(&m, fo, v);
        okk(&m, uq.submit_ops(&[Op::Signal(f, v)]));
        assert_eq!(
            ev.wait(std::time::Duration::from_secs(10)),
            Some(rvgpu_simos::WaitOutcome::Satisfied),
            "wait {v}"
        );
        if matches!(ev.released_via(), Some(ReleaseVia::Log { .. })) {
            via_log += 1;
        }
    }
    assert!(via_log > 0, "no release through the log");
    assert_eq!(counters(&m).log_entries_lost, 0);
    assert!(m.fault().is_none());
}

// ---------------------------------------------------------------------------------------------
// LOG-05

#[test]
fn log_05_forced_overflow_falls_back_to_scan() {
    let m = machine_with(Mode::Step, |c| c.os.log_entries = 4);
    let mut t = one_queue(&m);
    let (uq, f, fo) = (&mut t.q, &t.f, &t.fo);
    let rec = recorded(&m);
    // Ten signals nobody waits for (MonitoredValue is MAX: no interrupt), then one awaited.
    let ops: Vec<Op<'_>> = (1..=10).map(|v| Op::Signal(f, v)).collect();
    okk(&m, uq.submit_ops(&ops));
    idle(&m);
    // The batch's own progress interrupt reports only its (monitored) progress fence, so no
    // drain reads the log until the awaited signal: 11 entries in 4 slots, read once. Indices
    // 0..=6 were overwritten and 7 is dropped by the re-check (its slot may be rewritten while
    // read, one write may be in flight); 8..=10 are read.
    let ev = wait(&m, fo, 11);
    okk(&m, uq.submit_ops(&[Op::Signal(f, 11)]));
    idle(&m);
    assert!(ev.is_signaled());
    let c = counters(&m);
    assert_eq!(c.log_overflows, 1, "{c:?}");
    assert_eq!(c.log_entries_lost, 8, "{c:?}");
    assert!(c.log_fallback_scans >= 1, "{c:?}");
    let lost: Vec<(u64, u64)> = rec
        .events()
        .iter()
        .filter_map(|e| match *e {
            TraceEvent::LogLost { from, to, .. } => Some((from, to)),
            _ => None,
        })
        .collect();
    // 11 written, 4 slots, one read: 0..7 overwritten, 7 shares its slot with the next write
    // (index 11, possibly in flight): dropped too.
    assert_eq!(lost, vec![(0, 8)]);
    let kept: Vec<u64> = entries_of(&rec, uq.queue_id(), LogKind::Signal)
        .iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(kept, vec![8, 9, 10]);
    assert!(rec
        .events()
        .iter()
        .any(|e| matches!(e, TraceEvent::WaitReleased { value: 11, .. })));
}

// ---------------------------------------------------------------------------------------------
// LOG-06

#[test]
fn log_06_gpu_timestamps_never_go_backwards_per_log() {
    // Threaded GPU clock, two queues on two engines interleaving: the OS enforces
    // non-decreasing end timestamps per log on every read (a violation would halt the machine).
    let m = machine(Mode::Threaded);
    let (_p, k) = user_process(&m);
    let mut a = okk(&m, UserQueue::new(k, &config(0)));
    let mut b = okk(&m, UserQueue::new(k, &config(1)));
    let rec = recorded(&m);
    let (f, fo) = fence(&m, &k);
    let (g, go) = fence(&m, &k);
    for v in 1..=100u64 {
        let e1 = wait(&m, &fo, v);
        let e2 = wait(&m, &go, v);
        okk(&m, a.submit_ops(&[Op::Signal(&f, v), Op::Wait(&g, v)]));
        okk(&m, b.submit_ops(&[Op::Signal(&g, v), Op::Wait(&f, v)]));
        e1.wait(std::time::Duration::from_secs(10));
        e2.wait(std::time::Duration::from_secs(10));
    }
    assert!(m.fault().is_none(), "{:?}", m.fault());
    for q in [a.queue_id(), b.queue_id()] {
        for kind in [LogKind::Signal, LogKind::Wait] {
            let ends: Vec<u64> = rec
                .events()
                .iter()
                .filter_map(|e| match *e {
                    TraceEvent::LogEntry {
                        queue_id,
                        kind: kk,
                        entry,
                        ..
                    } if queue_id == q && kk == kind => Some(entry.fence_end_gpu_timestamp),
                    _ => None,
                })
                .filter(|t| *t != 0)
                .collect();
            assert!(ends.windows(2).all(|w| w[0] <= w[1]), "{q} {kind:?}");
        }
    }
}

/// Writes `entries` straight into `queue`'s `kind` log (as a device would), then drains it.
fn inject(m: &Machine, h: u32, kind: LogKind, first: u32, entries: &[LogEntry]) {
    let buf = m.hw_queue_log_buffer(0, h, kind).expect("log");
    let p = Producer::new(&buf);
    for (i, e) in entries.iter().enumerate() {
        p.write(first + i as u32, e);
    }
}

fn entry(op: u32, h: u32, v: u64, observed: u64, end: u64) -> LogEntry {
    LogEntry {
        fence_value: v,
        h_native_fence: h,
        operation_type: op,
        fence_observed_gpu_timestamp: observed,
        fence_end_gpu_timestamp: end,
        ..Default::default()
    }
}

#[test]
fn log_06_zero_and_repeated_timestamps_accepted() {
    let m = machine(Mode::Step);
    let t = one_queue(&m);
    let e = |end| entry(OP_WAIT_UNBLOCKED, t.f.kmt, 0, 0, end);
    inject(&m, t.h, LogKind::Wait, 0, &[e(5), e(5), e(0), e(6)]);
    drain_engine0(&m);
    assert_eq!(m.hw_queue_log(0, t.h, LogKind::Wait).unwrap().2, 4);
    assert_eq!(m.hw_queue_log(0, t.h, LogKind::Wait).unwrap().3, 6);
    let _ka = m.hw_queue_kmd_by_id(0, t.q.queue_id()).unwrap();
}

/// Asserts that the last drain met exactly one untrusted read (the OS scanned instead of
/// halting; `scanned`: and counted that scan).
fn one_untrusted_read(m: &Machine, scanned: bool) {
    let c = counters(m);
    assert_eq!(c.log_untrusted, 1, "{c:?}");
    if scanned {
        assert!(c.log_fallback_scans >= 1, "{c:?}");
    }
}

#[test]
fn log_06_backwards_timestamp_is_untrusted_and_scanned() {
    // Log contents are untrusted (a hostile LOG_WRITE or a faulty device). Windows
    // must not trust them, nor may the OS halt on them: it scans instead.
    let m = machine(Mode::Step);
    let t = one_queue(&m);
    let e = |end| entry(OP_WAIT_UNBLOCKED, t.f.kmt, 0, 0, end);
    inject(&m, t.h, LogKind::Wait, 0, &[e(9), e(8)]);
    drain_engine0(&m);
    one_untrusted_read(&m, true);
    // One bad write costs one scan: honest entries after it are read again.
    inject(&m, t.h, LogKind::Wait, 2, &[e(10)]);
    okk(&m, m.drain_native_fence_logs(0, &[], &[0]));
    assert_eq!(counters(&m).log_untrusted, 1);
}

#[test]
fn log_06_wait_observed_after_end_is_untrusted_and_scanned() {
    let m = machine(Mode::Step);
    let t = one_queue(&m);
    let e = entry(OP_WAIT_UNBLOCKED, t.f.kmt, 0, 10, 9);
    inject(&m, t.h, LogKind::Wait, 0, &[e]);
    drain_engine0(&m);
    one_untrusted_read(&m, false);
}

#[test]
fn log_05_header_going_backwards_is_untrusted_and_scanned() {
    let m = machine(Mode::Step);
    let t = one_queue(&m);
    let e = entry(OP_WAIT_UNBLOCKED, t.f.kmt, 0, 0, 1);
    inject(&m, t.h, LogKind::Wait, 0, &[e, e, e]);
    okk(&m, m.drain_native_fence_logs(0, &[], &[0]));
    // A header lowered behind the OS's back (an honest device never does that).
    let buf = m.hw_queue_log_buffer(0, t.h, LogKind::Wait).unwrap();
    buf.alloc()
        .word(0)
        .unwrap()
        .store(1, std::sync::atomic::Ordering::SeqCst);
    drain_engine0(&m);
    one_untrusted_read(&m, true);
}

/// Hostile log contents through the real path: a user-mode queue writes signal-log entries
/// with indices 1 then 0 (and a value its fence never reached). The OS counts the contents as
/// untrusted and scans; nothing halts, nobody is released early, and the queue keeps working.
#[test]
fn log_hostile_log_write_from_user_queue_never_halts() {
    let m = machine(Mode::Step);
    let mut t = one_queue(&m);
    let ev = wait(&m, &t.fo, 5);
    let forged = |index| Command::LogWrite {
        log: LogKind::Signal,
        index,
        fence_handle: t.f.kmt,
        fence_value: 5,
    };
    let cmds = [forged(1), forged(0)];
    let v = okk(&m, t.q.submit(&cmds));
    okk(&m, m.run_until_idle());
    drain_engine0(&m);
    assert!(
        t.q.completed() >= v,
        "the hostile queue itself still completes"
    );
    assert!(counters(&m).log_untrusted >= 1, "{:?}", counters(&m));
    assert_eq!(t.fo.current_value(), 0);
    assert!(ev.released_via().is_none(), "released by a forged entry");
}

/// Moves the fence's current value to `v` behind the OS's back (a CPU-side write it does not
/// know of, standing in for a signal whose log entry is missing or wrong).
fn store_current_value(fo: &NativeFence, v: u64) {
    let cv = fo.current_value_kernel_va() as *const std::sync::atomic::AtomicU64;
    // SAFETY: the OS's fence storage, live for the machine's life; an atomic store.
    unsafe { (*cv).store(v, std::sync::atomic::Ordering::SeqCst) };
}

#[test]
fn log_03_wrong_operation_type_falls_back_to_scan() {
    let m = machine(Mode::Step);
    let t = one_queue(&m);
    let ev = wait(&m, &t.fo, 1);
    // The fence reached 1; its entry claims WAIT_UNBLOCKED in the signal log.
    okk(&m, m.signal_native_fence_from_cpu(&t.fo, 0));
    store_current_value(&t.fo, 1);
    let e = entry(OP_WAIT_UNBLOCKED, t.f.kmt, 1, 0, 1);
    inject(&m, t.h, LogKind::Signal, 0, &[e]);
    okk(&m, m.drain_native_fence_logs(0, &[], &[0]));
    let c = counters(&m);
    assert_eq!((c.log_bad_entries, c.log_fallback_scans), (1, 1), "{c:?}");
    assert_eq!(ev.released_via(), Some(ReleaseVia::Scan));
}

#[test]
fn log_04_entry_ahead_of_its_value_is_untrusted_and_releases_nobody() {
    // The device writes the value before the entry (LOG-04); an entry naming a value the
    // fence has not reached is untrusted: counted, scanned, and it releases nobody.
    let m = machine(Mode::Step);
    let t = one_queue(&m);
    let ev = wait(&m, &t.fo, 7);
    let e = entry(OP_SIGNAL_EXECUTED, t.f.kmt, 7, 0, 1);
    inject(&m, t.h, LogKind::Signal, 0, &[e]);
    drain_engine0(&m);
    one_untrusted_read(&m, false);
    assert!(
        ev.released_via().is_none(),
        "released by an entry ahead of its value"
    );
}

// ---------------------------------------------------------------------------------------------
// LOG-07

#[test]
fn log_07_update_lists_only_queues_with_new_entries() {
    let m = machine(Mode::Step);
    let (_p, k) = user_process(&m);
    let mut a = okk(&m, UserQueue::new(k, &config(0)));
    let b = okk(&m, UserQueue::new(k, &config(0)));
    let (f, fo) = fence(&m, &k);
    let ev = wait(&m, &fo, 1);
    okk(&m, a.submit_ops(&[Op::Signal(&f, 1)]));
    idle(&m);
    assert!(ev.is_signaled());
    let c = counters(&m);
    assert_eq!(c.log_update_calls, 1, "{c:?}");
    let ka = m.hw_queue_kmd_by_id(0, a.queue_id()).unwrap();
    assert_eq!(m.last_log_update(0), vec![ka]);
    // Only the named queue's two headers were read: the batch completion adds no NULL report
    // (the progress fence is monitored), so B's logs on the same engine are not read.
    assert_eq!(c.log_headers_read, 2, "{c:?}");
    let hb = queue_handle(&m, b.queue_id());
    assert_eq!(m.hw_queue_log(0, hb, LogKind::Signal).unwrap().2, 0);
    // A drain with nothing new calls no DDI.
    okk(&m, m.drain_native_fence_logs(0, &[], &[0]));
    assert_eq!(counters(&m).log_update_calls, 1);
}

#[test]
fn log_07_drain_order_header_flush_entries() {
    // The entries read are exactly those the pre-flush header counted; an entry written after
    // that header read is left for the next drain (never read twice, never skipped).
    let m = machine(Mode::Step);
    let (_p, k) = user_process(&m);
    let mut a = okk(&m, UserQueue::new(k, &config(0)));
    let rec = recorded(&m);
    let (f, _fo) = fence(&m, &k);
    okk(&m, a.submit_ops(&[Op::Signal(&f, 1), Op::Signal(&f, 2)]));
    idle(&m);
    let ka = m.hw_queue_kmd_by_id(0, a.queue_id()).unwrap();
    okk(&m, m.drain_native_fence_logs(0, &[ka], &[]));
    assert_eq!(counters(&m).log_update_calls, 1);
    okk(&m, a.submit_ops(&[Op::Signal(&f, 3)]));
    idle(&m);
    okk(&m, m.drain_native_fence_logs(0, &[ka], &[]));
    let idx: Vec<u64> = entries_of(&rec, a.queue_id(), LogKind::Signal)
        .iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(idx, vec![0, 1, 2]);
    assert_eq!(counters(&m).log_update_calls, 2);
}

// ---------------------------------------------------------------------------------------------
// LOG-08

/// The seed's E1–E4 example (docs/logs.md#simulated-os). Queues A and B on engine 0; B signals G with
/// a plain write; A publishes E1..E3 (plain) and E4 (conditional) in one batch. Both batches
/// then stall on a GPU wait, so no batch-completion (PROGRESS) interrupt joins the picture:
/// the only report is E4's.
#[test]
fn log_08_seed_example_e1_e4() {
    let m = machine(Mode::Step);
    let (_p, k) = user_process(&m);
    let mut a = okk(&m, UserQueue::new(k, &config(0)));
    let mut b = okk(&m, UserQueue::new(k, &config(0)));
    let rec = recorded(&m);
    let (f1, f1o) = fence(&m, &k);
    let (f2, f2o) = fence(&m, &k);
    let (g, go) = fence(&m, &k);
    let (hold, holdo) = fence(&m, &k);
    let (hold_b, hold_bo) = fence(&m, &k);
    let (hold_c, hold_co) = fence(&m, &k);
    let (v1, v2, v3) = (10, 20, 30);
    let w1 = wait(&m, &f1o, v1);
    let w2 = wait(&m, &f1o, v2);
    let w3 = wait(&m, &f2o, v3);
    let w4 = wait(&m, &f2o, v3 + 1);
    let wg = wait(&m, &go, 1);
    let wg2 = wait(&m, &go, 2);
    // B: G = 1 (plain), stall; later G = 2 (conditional), stall.
    let mut bb = signal_raw(&g, 1, 0, 0).to_vec();
    bb.push(hold_b.wait(1));
    bb.extend(signal_raw(&g, 2, rvgpu_hw::cmd::SIGNAL_CONDITIONAL_IRQ, 1));
    bb.push(hold_c.wait(1));
    okk(&m, b.submit(&bb));
    idle(&m);
    assert_eq!(go.current_value(), 1);
    assert_eq!(
        counters(&m).log_drains,
        0,
        "a plain signal interrupts nobody"
    );
    let cond = rvgpu_hw::cmd::SIGNAL_CONDITIONAL_IRQ;
    let mut batch = Vec::new();
    batch.extend(signal_raw(&f1, v1, 0, 0));
    batch.extend(signal_raw(&f1, v2, 0, 1));
    batch.extend(signal_raw(&f2, v3, 0, 2));
    batch.extend(signal_raw(&f2, v3, cond, 3));
    batch.push(hold.wait(1));
    let before = m.notifications(0).len();
    okk(&m, a.submit(&batch));
    idle(&m);
    let notes: Vec<_> = fence_signaled_since(&m, before)
        .into_iter()
        .map(|n| (n.node, n.optimized, n.hw_queue, n.fences))
        .collect();
    let ka = m.hw_queue_kmd_by_id(0, a.queue_id()).unwrap();
    // Exactly the four entries of A, in order, all SIGNAL_EXECUTED (kept entries are
    // validated), read with one UpdateNativeFenceLogs.
    let sig_a = entries_of(&rec, a.queue_id(), LogKind::Signal);
    assert_eq!(
        sig_a,
        vec![
            (0, f1.kmt, v1),
            (1, f1.kmt, v2),
            (2, f2.kmt, v3),
            (3, f2.kmt, v3)
        ]
    );
    assert_eq!(counters(&m).log_update_calls, 1, "{notes:?}");
    let via = |i| from_signal_log(a.queue_id(), i);
    assert_eq!(w1.released_via(), via(0));
    assert_eq!(w2.released_via(), via(1));
    assert_eq!(w3.released_via(), via(2));
    assert!(!w4.is_signaled());
    assert_eq!(counters(&m).log_fallback_scans, 0);
    assert_eq!(notes.len(), 1, "exactly one NativeFenceSignaled: {notes:?}");
    if optimized_cap(&m) {
        // The seed's picture: one report naming A; B's log is not read, WG stays pending.
        assert_eq!(notes[0], (0, true, Some(ka), None));
        assert_eq!(m.last_log_update(0), vec![ka]);
        assert!(!wg.is_signaled());
        let hb = queue_handle(&m, b.queue_id());
        assert_eq!(m.hw_queue_log(0, hb, LogKind::Signal).unwrap().2, 0);
    } else {
        // Without OptimizedNativeFenceSignaledInterrupt the report is the fence array [F2];
        // the OS then reads every log-bearing queue of the engine, B's too, so WG is released
        // from B's entry in the same drain.
        assert_eq!(notes[0], (0, false, None, Some(vec![f2o.global_handle()])));
        assert_eq!(wg.released_via(), from_signal_log(b.queue_id(), 0));
        assert_eq!(
            entries_of(&rec, b.queue_id(), LogKind::Signal),
            vec![(0, g.kmt, 1)]
        );
    }
    eprintln!("E1-E4 notifications (node, optimized, hHWQueue, array): {notes:?}");
    // Second half (docs/logs.md#simulated-os): fence events without a queue id (device injection), B's conditional
    // signal of G: with the cap the ISR reports NULL hHWQueue (no Evaluate flag: every queue
    // of the engine has logs) and the OS reads A's and B's logs; WG2 is released from B's
    // entry 1.
    m.device(0).unwrap().set_anonymous_fence_events(true);
    let before = m.notifications(0).len();
    okk(&m, m.signal_native_fence_from_cpu(&hold_bo, 1));
    idle(&m);
    let notes2: Vec<_> = fence_signaled_since(&m, before)
        .into_iter()
        .map(|n| (n.node, n.optimized, n.hw_queue, n.evaluate_legacy))
        .collect();
    eprintln!("E1-E4 second half: {notes2:?}");
    assert_eq!(notes2.len(), 1, "{notes2:?}");
    if optimized_cap(&m) {
        assert_eq!(notes2[0], (0, true, None, false));
        assert_eq!(
            m.last_log_update(0),
            vec![m.hw_queue_kmd_by_id(0, b.queue_id()).unwrap()]
        );
        assert_eq!(wg.released_via(), from_signal_log(b.queue_id(), 0));
    }
    assert_eq!(wg2.released_via(), from_signal_log(b.queue_id(), 1));
    assert!(!w4.is_signaled());
    m.device(0).unwrap().set_anonymous_fence_events(false);
    okk(&m, m.signal_native_fence_from_cpu(&holdo, 1));
    okk(&m, m.signal_native_fence_from_cpu(&hold_co, 1));
    idle(&m);
    assert!(wg.is_signaled());
    assert!(m.fault().is_none());
}

#[test]
fn log_08_null_hwqueue_reads_every_queue_on_engine() {
    // The drain a NULL hHWQueue asks for: every log-bearing queue on the engine, not another
    // engine's.
    let m = machine(Mode::Step);
    let (_p, k) = user_process(&m);
    let mut a = okk(&m, UserQueue::new(k, &config(0)));
    let mut b = okk(&m, UserQueue::new(k, &config(0)));
    let mut c = okk(&m, UserQueue::new(k, &config(1)));
    let (f, fo) = fence(&m, &k);
    let (f2, _) = fence(&m, &k);
    let (f3, _) = fence(&m, &k);
    let (hold, holdo) = fence(&m, &k);
    // Each batch stalls on a GPU wait after its signal: no progress interrupt drains early.
    // (One fence per queue: a fence's values must only grow, and the engines run in parallel.)
    for (q, f, v) in [(&mut a, &f, 1), (&mut b, &f2, 2), (&mut c, &f3, 3)] {
        let mut cmds = signal_raw(f, v, 0, 0).to_vec();
        cmds.push(hold.wait(1));
        okk(&m, q.submit(&cmds));
    }
    idle(&m);
    assert_eq!(counters(&m).log_drains, 0);
    let ev = wait(&m, &fo, 4); // not reached: only logs are read
    okk(&m, m.drain_native_fence_logs(0, &[], &[0]));
    let mut listed = m.last_log_update(0);
    listed.sort_unstable();
    let mut want = vec![
        m.hw_queue_kmd_by_id(0, a.queue_id()).unwrap(),
        m.hw_queue_kmd_by_id(0, b.queue_id()).unwrap(),
    ];
    want.sort_unstable();
    assert_eq!(listed, want);
    let hc = queue_handle(&m, c.queue_id());
    assert_eq!(m.hw_queue_log(0, hc, LogKind::Signal).unwrap().2, 0);
    // Entries 1 and 2 were read (values below the awaited 4): nothing released.
    assert!(!ev.is_signaled());
    okk(&m, m.signal_native_fence_from_cpu(&holdo, 1));
    idle(&m);
}

/// A report naming a queue whose log has no new signal entry: 24H2 scans the node
/// (`VidSchiProcessNativeFenceSignaledDpc`); under the pages nothing is released, so a driver
/// that relied on the scan loses the wake-up there.
#[test]
fn log_08_named_queue_without_entry_scans_only_under_24h2() {
    let m = machine(Mode::Step);
    let t = one_queue(&m);
    let ev = wait(&m, &t.fo, 5);
    // The fence reached 5 without a log entry (a CPU-side write the OS does not know of,
    // standing in for a signal whose entry is missing).
    t.fo.current_value();
    store_current_value(&t.fo, 5);
    let ka = m.hw_queue_kmd_by_id(0, t.q.queue_id()).unwrap();
    okk(&m, m.drain_native_fence_logs(0, &[ka], &[]));
    use rvgpu_simos::machine::answers::LogReport;
    if rvgpu_simos::Windows::from_env().reading().log_report == LogReport::ScanWhenLogSaysNothing {
        assert_eq!(counters(&m).log_fallback_scans, 1);
        assert_eq!(ev.released_via(), Some(ReleaseVia::Scan));
    } else {
        assert_eq!(counters(&m).log_fallback_scans, 0);
        assert!(
            !ev.is_signaled(),
            "the pages' OS reads the log and nothing else"
        );
    }
}

#[test]
fn log_08_unknown_hwqueue_is_rejected_by_the_isr_check() {
    let m = machine(Mode::Step);
    let p = process(&m);
    let a = okk(&m, UserQueue::new(m.kmt(&p), &config(0)));
    let ka = m.hw_queue_kmd_by_id(0, a.queue_id()).unwrap();
    let t = m.log_table(0).unwrap();

    use rvgpu_simos::sync::fencelog::IsrQueue;
    // The report names Dxgkrnl's queue object; the driver's own handle is none.
    let dxg = t.name_of(ka).unwrap();
    assert_eq!(t.check_isr_queue(dxg, 0), IsrQueue::Ok(ka));
    assert_eq!(t.check_isr_queue(dxg, 1), IsrQueue::WrongNode(0));
    assert_eq!(t.check_isr_queue(dxg ^ 0x1000, 0), IsrQueue::Unknown);
    assert_eq!(t.check_isr_queue(ka, 0), IsrQueue::Unknown);
}

// ---------------------------------------------------------------------------------------------
// LOG-09

#[test]
fn log_09_every_user_queue_has_both_logs() {
    let m = machine(Mode::Step);
    let (_p, k) = user_process(&m);
    let qs: Vec<_> = (0..6)
        .map(|i| okk(&m, UserQueue::new(k, &config(i % 2))))
        .collect();
    for q in &qs {
        let h = queue_handle(&m, q.queue_id());
        assert!(m.hw_queue_log(0, h, LogKind::Wait).is_some());
        assert!(m.hw_queue_log(0, h, LogKind::Signal).is_some());
    }
}

#[test]
fn log_09_queue_creation_fails_if_log_set_fails() {
    // 85 entries do not fit a 4 KiB buffer: the KMD must refuse the log, and the OS then fails
    // the queue creation (and destroys the half-made queue).
    let m = machine_with(Mode::Step, |c| c.os.log_entries = 85);
    let p = process(&m);
    let r = UserQueue::new(m.kmt(&p), &config(0));
    assert!(r.is_err(), "queue created with a refused log");
    let created = m
        .ums_events(0)
        .iter()
        .filter(|e| matches!(e, UmsEvent::CreateHwQueue { .. }))
        .count();
    let destroyed = m
        .ums_events(0)
        .iter()
        .filter(|e| matches!(e, UmsEvent::DestroyHwQueue { .. }))
        .count();
    assert_eq!(created, destroyed);
    assert!(m.fault().is_none());
}

// ---------------------------------------------------------------------------------------------
// Stress: releases from logs = releases by scanning.

/// (released set, set a scan releases, counters, waits released through a log).
type StressResult = (
    BTreeSet<(usize, u64)>,
    BTreeSet<(usize, u64)>,
    LogCounters,
    usize,
);

/// One seeded step-mode run: 8 queues on 2 engines, 16 fences, monotonic values, random CPU
/// waits; one log recreated mid-run. Returns the released `(fence, target)` set (late wakes
/// included), the set a
/// scan of the final values releases, and the counters.
fn stress_run(seed: u64, log_entries: u64) -> StressResult {
    let m = machine_with(Mode::Step, |c| {
        c.os.log_entries = log_entries;
        c.adapters[0] = AdapterConfig::dgpu();
    });
    let (p, k) = user_process(&m);
    let mut qs: Vec<_> = (0..8)
        .map(|i| okk(&m, UserQueue::new(k, &config(i % 2))))
        .collect();
    let fs: Vec<(UmdFence, NativeFence)> = (0..16).map(|_| fence(&m, &k)).collect();
    let mut next = [0u64; 16];
    let mut waits: Vec<(usize, u64, SimEvent)> = Vec::new();
    let mut rng = Lcg(seed);
    for round in 0..60 {
        for _ in 0..3 {
            let fi = (rng.next() % 16) as usize;
            let t = next[fi] + 1 + rng.next() % 4;
            waits.push((fi, t, wait(&m, &fs[fi].1, t)));
        }
        let qi = (rng.next() % 8) as usize;
        let n = 1 + rng.next() % 12;
        let mut ops = Vec::new();
        // Fences are partitioned by queue so each fence's values are monotonic.
        for _ in 0..n {
            let fi = qi * 2 + (rng.next() % 2) as usize;
            next[fi] += 1 + rng.next() % 2;
            ops.push((fi, next[fi]));
        }
        let ops: Vec<Op<'_>> = ops
            .iter()
            .map(|&(fi, v)| Op::Signal(&fs[fi].0, v))
            .collect();
        okk(&m, qs[qi].submit_ops(&ops));
        let _ = m.run_steps((rng.next() % 5) as usize);
        if round == 30 {
            let h = queue_handle(&m, qs[qi].queue_id());
            okk(
                &m,
                m.recreate_hw_queue_log(&p, h, LogKind::Signal, log_entries.min(84)),
            );
        }
        // No wait is ever released before its fence reached the target.
        for (fi, t, ev) in &waits {
            if ev.is_signaled() {
                assert!(fs[*fi].1.current_value() >= *t, "early release");
            }
        }
    }
    idle(&m);
    assert!(m.fault().is_none(), "{:?}", m.fault());
    okk(&m, m.check_retired_logs(0));
    // The test's waiter re-reads CurrentValue as the UMD's bounded wait does: a pending wait
    // whose value was reached ends as a late wake, allowed only where 24H2's rule raised
    // MonitoredValue above CurrentValue (no interrupt due yet) and counted by the OS; reached
    // with CurrentValue at or above MonitoredValue, it is a lost wake-up (left out here, so
    // the sets differ).
    let late: Vec<(usize, u64)> = waits
        .iter()
        .filter(|w| !w.2.is_signaled())
        .filter(|w| {
            let f = &fs[w.0].1;
            f.current_value() >= w.1 && f.monitored_value() > f.current_value()
        })
        .map(|w| (w.0, w.1))
        .collect();
    let raised_over = m.late_wakes(0).raised_over;
    assert!(
        late.len() as u64 <= raised_over,
        "{} late wakes, {raised_over} waits raised over",
        late.len()
    );
    if !m
        .os_config()
        .windows
        .reading()
        .monitored_value
        .raises_over_waits()
    {
        assert!(late.is_empty(), "late wakes under the pages: {late:?}");
    }
    let released: BTreeSet<(usize, u64)> = waits
        .iter()
        .filter(|w| w.2.is_signaled())
        .map(|w| (w.0, w.1))
        .chain(late)
        .collect();
    let scan: BTreeSet<(usize, u64)> = waits
        .iter()
        .filter(|w| fs[w.0].1.current_value() >= w.1)
        .map(|w| (w.0, w.1))
        .collect();
    let via_log = waits
        .iter()
        .filter(|w| matches!(w.2.released_via(), Some(ReleaseVia::Log { .. })))
        .count();
    drop(qs.drain(..));
    (released, scan, m.log_counters(0), via_log)
}

#[test]
fn log_stress_released_sets_equal_scan() {
    for seed in [1u64, 7, 42] {
        let (rel, scan, c, via_log) = stress_run(seed, 84);
        assert_eq!(rel, scan, "seed {seed}: released from logs vs scan");
        assert!(via_log > 0, "seed {seed}: {c:?}");
        // (c) the same with 4-entry logs: overflow fallbacks mid-run, sets still equal.
        let (rel4, scan4, c4, _) = stress_run(seed, 4);
        assert_eq!(rel4, scan4, "seed {seed}, 4 entries");
        assert_eq!(rel4, rel, "seed {seed}: same final set with small logs");
        assert!(c4.log_overflows > 0, "seed {seed}: {c4:?}");
    }
}

#[test]
fn log_stress_step_mode_is_deterministic() {
    let a = stress_run(5, 84);
    let b = stress_run(5, 84);
    assert_eq!(a.0, b.0);
}

/// Threaded: 8 queues on 2 engines, producer/consumer across queues with CPU waits, one log
/// recreated while the queues run. Every wait whose target was reached is released, none
/// early (the OS checks each log release against the fence, LOG-04), no entry lost with full
/// logs, and most releases come from the logs.
#[test]
fn log_stress_threaded_with_recreate() {
    let m = machine(Mode::Threaded);
    let (p, k) = user_process(&m);
    let mut qs: Vec<_> = (0..8)
        .map(|i| okk(&m, UserQueue::new(k, &config(i % 2))))
        .collect();
    let fs: Vec<(UmdFence, NativeFence)> = (0..8).map(|_| fence(&m, &k)).collect();
    let rec = recorded(&m);
    for q in qs.iter_mut() {
        q.set_fence_trace(Some(Arc::new(rec.for_adapter(0))));
    }
    let mut waits = Vec::new();
    let rounds = 150u64;
    for v in 1..=rounds {
        for (i, q) in qs.iter_mut().enumerate() {
            waits.push((i, v, wait(&m, &fs[i].1, v)));
            // Queue i signals its fence and waits on its neighbour's previous value.
            let n = (i + 1) % 8;
            okk(
                &m,
                q.submit_ops(&[Op::Wait(&fs[n].0, v - 1), Op::Signal(&fs[i].0, v)]),
            );
        }
        if v == rounds / 2 {
            let h = queue_handle(&m, qs[3].queue_id());
            okk(&m, m.recreate_hw_queue_log(&p, h, LogKind::Signal, 84));
            let h = queue_handle(&m, qs[4].queue_id());
            okk(&m, m.recreate_hw_queue_log(&p, h, LogKind::Wait, 84));
        }
    }
    for (i, v, ev) in &waits {
        assert_eq!(
            ev.wait(std::time::Duration::from_secs(20)),
            Some(rvgpu_simos::WaitOutcome::Satisfied),
            "fence {i} value {v}: {:?}",
            m.fault()
        );
    }
    assert!(m.fault().is_none(), "{:?}", m.fault());
    let via_log = waits
        .iter()
        .filter(|w| matches!(w.2.released_via(), Some(ReleaseVia::Log { .. })))
        .count();
    let c = counters(&m);
    assert_eq!(c.log_entries_lost, 0, "{c:?}");
    assert!(via_log > 0, "{c:?}");
    eprintln!(
        "threaded: {via_log} of {} waits released from logs; {c:?}",
        waits.len()
    );
    // The joined timeline: every logged op has its entry, no mismatch, and (GPU -> CPU through
    // the calibration samples) no operation ends before it was queued, within the mapping's
    // uncertainty + 1 µs.
    // A wait can be released by a scan (a PROGRESS report's NULL) before the DPC that reads
    // the last entries: drain until every logged op has its entry (the GPU has written them
    // once the values are reached, or within moments: value first, entry second).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while rec.operations().iter().any(|o| o.end_gpu.is_none()) {
        assert!(std::time::Instant::now() < deadline, "entries never read");
        okk(&m, m.drain_native_fence_logs(0, &[], &[0, 1]));
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let map = rec.clock_map(0);
    assert!(map.samples.len() >= 2, "{:?}", map.samples);
    let ops = rec.operations();
    assert_eq!(ops.len(), 8 * rounds as usize * 2);
    let tol = map.uncertainty() + 10;
    let mut worst = 0i64;
    for o in &ops {
        assert!(!o.mismatch && !o.lost, "{o:?}");
        let end = map.to_qpc(o.end_gpu.unwrap()).unwrap();
        let q = o.queued_qpc.unwrap();
        worst = worst.max(q as i64 - end as i64);
        assert!(q <= end + tol, "{o:?}: end maps to {end}, tolerance {tol}");
    }
    eprintln!(
        "timeline: {} ops, worst queued-after-end {worst} QPC ticks, tol {tol}",
        ops.len()
    );
    okk(&m, m.check_retired_logs(0));
}

against_the_pe_image!();

under_the_pages!();
