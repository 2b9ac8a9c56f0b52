//! TDR recovery figures (docs/tdr.md#the-simulated-os "Figures"): time from a hang to the engine
//! running again, and work lost on the other engine. Plain `main` (no criterion: the figures
//! are single events, not a hot loop), run with `cargo bench -p rvgpu-simos --bench
//! tdr_recovery`. Nothing is asserted on time; lost/duplicated work is checked.
//!
//! - Step mode (deterministic), the OS's software scheduler (HWS off): a kernel-mode HANG DMA
//!   buffer on node 0 with a FILL of another process queued behind it; rounds and GPU ticks
//!   from the HANG's submission to detection, to the end of the reset (DxgkDdiResetEngine), and
//!   to the queued FILL's completion (the engine running again).
//! - Threaded mode, hardware scheduling (the default): the hang and the FILL are user-mode
//!   queues on node 0, reset through DxgkDdiResetHwEngine; microseconds, median and max of 20
//!   runs, with a user-mode copy queue on node 1 submitting continuously; its submissions
//!   lost/duplicated during recovery and its completion rate during recovery vs. steady state.

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use std::time::{Duration, Instant};

use rvgpu_hw::cmd::Command;
use rvgpu_simos::{Machine, MachineConfig, Mode, TdrConfig, TdrEvent};
use rvgpu_umd::kmt::{AllocationCpu, Kmt};
use rvgpu_umd::submit::{QueueConfig, UserQueue};

fn machine(mode: Mode, tdr: TdrConfig) -> Machine {
    let m = started(MachineConfig::single(mode));
    m.enable_tdr(0, tdr).expect("tdr");
    m
}

/// The software scheduler (HWS off): kernel-mode DMA buffers, reset through
/// DxgkDdiResetEngine (docs/hws.md §1).
fn sw_machine(mode: Mode, tdr: TdrConfig) -> Machine {
    let mut cfg = MachineConfig::single(mode);
    cfg.os.hwsch_feature = false;
    let m = started(cfg);
    m.enable_tdr(0, tdr).expect("tdr");
    m
}

fn has(ev: &[TdrEvent], p: impl Fn(&TdrEvent) -> bool) -> bool {
    ev.iter().any(p)
}

/// Step mode: (rounds, GPU ticks) to detection, reset done, queued work complete.
fn step_run(tdr: TdrConfig) -> [(u64, u64); 3] {
    let m = sw_machine(Mode::Step, tdr);
    let d = m.device(0).unwrap().clone();
    let hp = m.create_process(0).unwrap();
    let op = m.create_process(0).unwrap();
    let (kh, ko) = (m.kmt(&hp), m.kmt(&op));
    let ch = kh.create_context(0).unwrap();
    let co = ko.create_context(0).unwrap();
    let t = ko.create_allocation(4096).unwrap();
    let (r0, g0) = (0u64, d.gpu_clock());
    m.submit_legacy(&hp, ch, &[Command::Hang]).unwrap();
    m.submit_legacy(&op, co, &[fill(&t, 0, 0xF1)]).unwrap();
    let mut marks = [None; 3];
    let mut r = r0;
    while marks[2].is_none() && r < 100_000 {
        m.run_steps(1).unwrap();
        r += 1;
        let ev = m.tdr_events(0);
        let now = (r - r0, d.gpu_clock() - g0);
        if marks[0].is_none() && has(&ev, |e| matches!(e, TdrEvent::Detected { .. })) {
            marks[0] = Some(now);
        }
        if marks[1].is_none() && has(&ev, |e| matches!(e, TdrEvent::Recovered { .. })) {
            marks[1] = Some(now);
        }
        if marks[1].is_some() && t.mem.load(0) == 0xF1 {
            marks[2] = Some(now);
        }
    }
    assert!(m.fault().is_none(), "{:?}", m.fault());
    marks.map(|x| x.expect("recovery did not finish"))
}

struct Threaded {
    detect: Duration,
    reset: Duration,
    running: Duration,
    copy_lost: u64,
    copy_dup: u64,
    steady_rate: f64,
    recovery_rate: f64,
}

fn threaded_run(tdr: TdrConfig) -> Threaded {
    let m = machine(Mode::Threaded, tdr);
    let hp = m.create_process(0).unwrap();
    let op = m.create_process(0).unwrap();
    let cp = m.create_process(0).unwrap();
    let (kh, ko, kc) = (m.kmt(&hp), m.kmt(&op), m.kmt(&cp));
    // Hardware-scheduled (the default): the hang and the innocent work are hardware queues on
    // engine 0, reset through DxgkDdiResetHwEngine.
    let q0 = config(0);
    let mut hq = UserQueue::new(kh, &q0).unwrap();
    let mut oq = UserQueue::new(ko, &q0).unwrap();
    let t = ko.create_allocation(4096).unwrap();
    let ct = kc.create_allocation(8 * 65536).unwrap();
    let cfg = QueueConfig {
        ring_size: 16384,
        ..config(1)
    };
    let mut copy = UserQueue::new(kc, &cfg).unwrap();
    // Commands the UMD adds per one-FILL submission (calibration, outside the windows).
    let d = m.device(0).unwrap().clone();
    let b = d.completed_commands(1);
    let v = copy.submit(&[fill(&ct, 8 * 65535, 0)]).unwrap();
    while copy.completed() < v {
        std::thread::sleep(Duration::from_micros(100));
    }
    let per = d.completed_commands(1) - b;
    let base = d.completed_commands(1);
    let mut n = 0u64;
    let submit = |copy: &mut UserQueue<_>, n: &mut u64| {
        if *n < 65535 && copy.last_submitted() - copy.completed() < 64 {
            copy.submit(&[fill(&ct, 8 * *n, *n + 1)]).unwrap();
            *n += 1;
        }
    };
    // Steady state.
    let s0 = Instant::now();
    let c0 = copy.completed();
    while s0.elapsed() < Duration::from_millis(100) {
        submit(&mut copy, &mut n);
    }
    let steady_rate = (copy.completed() - c0) as f64 / s0.elapsed().as_secs_f64();
    // Hang.
    let t0 = Instant::now();
    let c1 = copy.completed();
    hq.submit(&[Command::Hang]).unwrap();
    oq.submit(&[fill(&t, 0, 0xF1)]).unwrap();
    let (mut detect, mut reset, mut running) = (None, None, None);
    while running.is_none() && t0.elapsed() < Duration::from_secs(10) {
        submit(&mut copy, &mut n);
        let ev = m.tdr_events(0);
        if detect.is_none() && has(&ev, |e| matches!(e, TdrEvent::Detected { .. })) {
            detect = Some(t0.elapsed());
        }
        if reset.is_none() && has(&ev, |e| matches!(e, TdrEvent::Recovered { .. })) {
            reset = Some(t0.elapsed());
        }
        if reset.is_some() && t.mem.load(0) == 0xF1 {
            running = Some(t0.elapsed());
        }
    }
    let recovery = t0.elapsed();
    let recovery_rate = (copy.completed() - c1) as f64 / recovery.as_secs_f64();
    let last = copy.last_submitted();
    let w = Instant::now();
    while copy.completed() < last && w.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_micros(100));
    }
    let mut lost = 0;
    for i in 0..n {
        if ct.mem.load(8 * i) != i + 1 {
            lost += 1;
        }
    }
    // A duplicate re-runs a FILL already done: COMPLETED_COMMANDS above the submitted count.
    let dup = (d.completed_commands(1) - base).saturating_sub(per * n) / per.max(1);
    assert!(m.fault().is_none(), "{:?}", m.fault());
    Threaded {
        detect: detect.expect("no detection"),
        reset: reset.expect("no reset"),
        running: running.expect("not running again"),
        copy_lost: lost,
        copy_dup: dup,
        steady_rate,
        recovery_rate,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("tdr_recovery: bench");
        return;
    }
    let step_cfg = TdrConfig::default();
    let [det, rst, run] = step_run(step_cfg);
    println!(
        "step mode (timeout {} rounds, preemption wait {} rounds): detection {} rounds / {} \
         GPU ticks; reset done {} rounds / {} ticks; queued work complete (engine running \
         again) {} rounds / {} ticks",
        step_cfg.timeout_steps, step_cfg.preempt_steps, det.0, det.1, rst.0, rst.1, run.0, run.1
    );
    let cfg = TdrConfig {
        timeout: Duration::from_millis(50),
        preempt_timeout: Duration::from_millis(5),
        ..TdrConfig::default()
    };
    let runs: Vec<Threaded> = (0..20).map(|_| threaded_run(cfg)).collect();
    let stat = |f: &dyn Fn(&Threaded) -> Duration| {
        let mut v: Vec<Duration> = runs.iter().map(f).collect();
        v.sort();
        (v[v.len() / 2], v[v.len() - 1])
    };
    let (dm, dx) = stat(&|r| r.detect);
    let (rm, rx) = stat(&|r| r.reset - r.detect);
    let (um, ux) = stat(&|r| r.running - r.reset);
    let (tm, tx) = stat(&|r| r.running);
    println!(
        "threaded (timeout {:?}, preemption wait {:?}), 20 runs, median / max: detection \
         {dm:?} / {dx:?}; reset sequence {rm:?} / {rx:?}; resubmission to completion {um:?} / \
         {ux:?}; hang to engine running again {tm:?} / {tx:?}",
        cfg.timeout, cfg.preempt_timeout
    );
    let lost: u64 = runs.iter().map(|r| r.copy_lost).sum();
    let dup: u64 = runs.iter().map(|r| r.copy_dup).sum();
    let steady: f64 = runs.iter().map(|r| r.steady_rate).sum::<f64>() / runs.len() as f64;
    let rec: f64 = runs.iter().map(|r| r.recovery_rate).sum::<f64>() / runs.len() as f64;
    println!(
        "copy engine (node 1) during recovery: submissions lost {lost}, duplicated {dup} (20 \
         runs); completions/s steady {steady:.0}, during recovery {rec:.0}"
    );
}
