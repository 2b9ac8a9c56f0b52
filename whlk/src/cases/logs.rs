//! `Logs.*`: native fence logs and the GPU timeline (LOG-01 … LOG-09,
//! docs/logs.md#the-gpu-timeline), one case per requirement group, named after it.
//!
//! Work goes through the UMD (`submit_ops`: every GPU wait and signal followed by its
//! LOG_WRITE), the OS drains the logs at DPC time, and the session's recorder joins the UMD's
//! "queued" events with the log entries (docs/logs.md#the-gpu-timeline). `Logs.Timeline` hands its
//! timeline to the runner ([`runner::attach_timeline`]), which writes the run's timeline file;
//! the step-mode cases do not (their GPU clock advances per machine step, so their GPU times
//! do not map to CPU times).
//!
//! **The Windows form.** A program on Windows sees neither the OS's drain nor its counters;
//! what it has is the log as the device wrote it, which the KMD copies to a program of the
//! queue's own device through its test hooks ([`crate::backend::KmdJournal::kmd_queue_log`]). Where the
//! backend lacks the OS's side (`FenceLogs`), each case runs that form ([`Form::Kmd`]),
//! threaded, and checks the log: the header the OS initialised, the entries in index order
//! with their fences, values, operations and GPU times. What only the OS's side shows (its
//! flushes before a read, LOG-07; its reads of the named queue, LOG-08; its overflow
//! detection and fallback scans, LOG-05; a log moved mid-run, which 24H2 never does) stays
//! with the OS form.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::time::Duration;

use rvgpu_hw::log::{header_count, OP_SIGNAL_EXECUTED, OP_WAIT_UNBLOCKED};

use crate::backend::{
    Backend, Capability, ExecMode, Failure, FenceWork, LogKind, NewQueue, ProcessRef, Session,
    SessionConfig, UmFenceRef, UmQueueRef, WaitResult, Work,
};
use crate::case::{Case, CaseError, CaseResult};
use crate::ensure;

use super::common::session;
use crate::runner;
use crate::timeline::{FenceOp, Timeline};

/// The OS's default log size: entries that fit one 4 KiB buffer (`rvgpu_hw::log`).
const DEFAULT_LOG_ENTRIES: u64 = 84;
/// CPU wait timeout.
const WAIT: Duration = Duration::from_secs(10);

/// What the KMD form needs: the UMD's native fences on user-mode queues and the KMD's copy of
/// a queue's log through its test hooks.
const KMD_FORM: &[Capability] = &[
    Capability::UserModeSubmission,
    Capability::UmdFences,
    Capability::NativeFences,
    Capability::KmdJournal,
];

/// The cases of this area. Each runs in the OS's form where the backend has the OS's side of
/// the logs (its `needs`' first set, checked by [`form`]), else in the KMD's ([`KMD_FORM`]).
pub const CASES: &[Case] = &[
    Case {
        name: "Logs.EveryUserQueueHasBothLogs",
        requirements: &["LOG-01", "LOG-09"],
        summary: "the OS sets a wait and a signal log (84 entries, or the configured size) on \
                  every user-mode queue at creation, none on a kernel-mode queue; on Windows, \
                  as the KMD copies them: both logs, one size, initialised by the OS, empty",
        needs: &[Capability::UserModeSubmission],
        optional: &[
            Capability::FenceLogs,
            Capability::ConfiguredMachine,
            Capability::KmdCaps,
            Capability::UmdFences,
            Capability::NativeFences,
            Capability::KmdJournal,
        ],
        run: every_user_queue_has_both_logs,
    },
    Case {
        name: "Logs.CpuWaitReleasedFromSignalLog",
        requirements: &["LOG-03", "LOG-07", "LOG-08"],
        summary: "a CPU wait is released from the signal log: the OS flushed the named queue \
                  (UpdateNativeFenceLogs), read the entry (fence, value, SIGNAL_EXECUTED) and \
                  needed no fallback scan; on Windows, the entry as the KMD copies it",
        // Step mode (the OS form): the wait must be registered before the GPU signals, or no
        // log read is needed (threaded, the signal may land first, which is correct
        // behaviour, not a fail).
        needs: &[
            Capability::UserModeSubmission,
            Capability::UmdFences,
            Capability::NativeFences,
        ],
        optional: &[
            Capability::FenceLogs,
            Capability::StepMode,
            Capability::KmdJournal,
        ],
        run: cpu_wait_released_from_signal_log,
    },
    Case {
        name: "Logs.SharedFenceHandlesPerProcess",
        requirements: &["LOG-03"],
        summary: "a fence shared by two processes: each queue's log entry names the fence by \
                  its own process's D3DKMT handle; the consumer's GPU wait is released by the \
                  producer's signal",
        needs: &[
            Capability::UserModeSubmission,
            Capability::UmdFences,
            Capability::NativeFences,
        ],
        optional: &[Capability::FenceLogs, Capability::KmdJournal],
        run: shared_fence_handles_per_process,
    },
    Case {
        name: "Logs.OverflowFallsBackToScan",
        requirements: &["LOG-05"],
        summary: "4-entry logs, 10 signals before anyone reads: the OS detects the overflow, \
                  reports the lost entries, scans the fences, and the CPU wait is released; on \
                  Windows, the OS's own log lapped by 7 entries before the read and the wait \
                  released",
        needs: &[
            Capability::UserModeSubmission,
            Capability::UmdFences,
            Capability::NativeFences,
        ],
        optional: &[
            Capability::FenceLogs,
            Capability::StepMode,
            Capability::ConfiguredMachine,
            Capability::KmdJournal,
        ],
        run: overflow_falls_back_to_scan,
    },
    Case {
        name: "Logs.RecreateLogMidRun",
        requirements: &["LOG-01", "LOG-02"],
        summary: "the OS moves a running queue's signal log to a 16-entry buffer: every \
                  operation before and after is logged exactly once, indices continue; on \
                  Windows (24H2 never moves a log), indices continue across CPU waits",
        needs: &[
            Capability::UserModeSubmission,
            Capability::UmdFences,
            Capability::NativeFences,
        ],
        optional: &[
            Capability::FenceLogs,
            Capability::StepMode,
            Capability::KmdJournal,
        ],
        run: recreate_log_mid_run,
    },
    Case {
        name: "Logs.Timeline",
        requirements: &["LOG-02", "LOG-03", "LOG-06"],
        summary: "threaded, 2 processes x 2 queues on 2 engines, ~200 waits and signals in a \
                  producer/consumer chain with CPU waits: every operation queued and logged \
                  once, consecutive indices, monotonic GPU times, causal mapping; the run's \
                  timeline file (on Windows, the logs as the KMD copies them, no file)",
        needs: &[
            Capability::UserModeSubmission,
            Capability::UmdFences,
            Capability::NativeFences,
        ],
        optional: &[
            Capability::FenceLogs,
            Capability::KmdCaps,
            Capability::KmdJournal,
        ],
        run: timeline,
    },
];

// ---------------------------------------------------------------------------------------------
// Fixtures.

fn kind_name(k: LogKind) -> &'static str {
    match k {
        LogKind::Wait => "wait",
        LogKind::Signal => "signal",
    }
}

/// The operations of `tl` per (queue, log), in index order.
fn per_log(tl: &Timeline) -> BTreeMap<(u32, LogKind), Vec<FenceOp>> {
    let mut m: BTreeMap<(u32, LogKind), Vec<FenceOp>> = BTreeMap::new();
    for op in &tl.ops {
        m.entry((op.queue_id, op.kind)).or_default().push(*op);
    }
    for v in m.values_mut() {
        v.sort_by_key(|o| o.index);
    }
    m
}

/// LOG-02, LOG-03, LOG-06 and docs/logs.md#the-gpu-timeline on a joined timeline: every operation was queued and
/// logged, without mismatch; each log's indices run `0..n` without gaps; non-zero GPU end
/// times never go backwards within a log; a wait's observed time is not after its end; with
/// `causal`, the mapped GPU end is not before the CPU queued time. Causality only means
/// something in threaded mode: in step mode the GPU clock advances per machine step, not with
/// real time, so interpolating between calibration samples does not give CPU times.
fn check_joined(tl: &Timeline, causal: bool) -> CaseResult {
    for op in &tl.ops {
        let what = format!(
            "queue {} {} #{} (fence {:#x} value {})",
            op.queue_id,
            kind_name(op.kind),
            op.index,
            op.fence,
            op.value
        );
        ensure!(op.queued_qpc.is_some(), "{what}: logged but never queued");
        ensure!(
            op.end_gpu.is_some(),
            "{what}: queued but its log entry was never read"
        );
        ensure!(
            !op.mismatch,
            "LOG-03: {what}: the log entry's fence or value differs from the queued one"
        );
        if let (Some(o), Some(e)) = (op.observed_gpu, op.end_gpu) {
            ensure!(
                o == 0 || e == 0 || o <= e,
                "LOG-06: {what}: observed GPU time {o} after its end {e}"
            );
        }
    }
    for ((q, k), ops) in per_log(tl) {
        let mut last_end = 0;
        for (i, op) in ops.iter().enumerate() {
            ensure!(
                u64::from(op.index) == i as u64,
                "LOG-02: queue {q} {} log: entry {i} has index {} (indices must run 0, 1, 2…)",
                kind_name(k),
                op.index
            );
            let end = op.end_gpu.unwrap_or(0);
            ensure!(
                end == 0 || end >= last_end,
                "LOG-06: queue {q} {} log: entry {} ends at GPU time {end}, before {last_end}",
                kind_name(k),
                op.index
            );
            last_end = last_end.max(end);
        }
    }
    if causal {
        let v = tl.causality_violations();
        ensure!(v.is_empty(), "causality: {}", v.join("; "));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Cases.

fn every_user_queue_has_both_logs(b: &dyn Backend) -> CaseResult {
    match form(
        b,
        &[
            Capability::FenceLogs,
            Capability::ConfiguredMachine,
            Capability::KmdCaps,
        ],
    )? {
        Form::Os => os_every_user_queue_has_both_logs(b),
        Form::Kmd => kmd_every_user_queue_has_both_logs(b),
    }
}

fn os_every_user_queue_has_both_logs(b: &dyn Backend) -> CaseResult {
    for entries in [None, Some(16)] {
        let mut s = session(b, ExecMode::Step, |c| c.log_entries = entries)?;
        let p = s.ums()?.open_process(0)?;
        let want = Some(entries.unwrap_or(DEFAULT_LOG_ENTRIES));
        let nodes = s.kmd_caps()?.submission_caps(0)?.user_mode_nodes;
        for (node, um) in nodes.iter().enumerate() {
            if !um {
                continue;
            }
            let q = s.ums()?.create_queue(p, NewQueue::user_mode(node as u32))?;
            let logs = s.fence_logs_ref()?.queue_logs(q)?;
            ensure!(
                logs.wait_entries == want && logs.signal_entries == want,
                "LOG-01/LOG-09: user-mode queue on node {node}: wait log {:?}, signal log {:?} \
                 entries (expected {want:?} each)",
                logs.wait_entries,
                logs.signal_entries
            );
        }
        let k = s.ums()?.create_queue(p, NewQueue::kernel_mode(0))?;
        let logs = s.fence_logs_ref()?.queue_logs(k)?;
        ensure!(
            logs.wait_entries.is_none() && logs.signal_entries.is_none(),
            "kernel-mode queue has logs: {logs:?} (the OS gives kernel-mode queues none)"
        );
    }
    Ok(())
}

/// A step-mode session (configured by `tweak`) recording fence operations, with one process's
/// user-mode queue on node 0 and a UMD fence of that process.
fn traced_queue(
    b: &dyn Backend,
    tweak: impl FnOnce(&mut SessionConfig),
) -> Result<(Box<dyn Session>, ProcessRef, UmQueueRef, UmFenceRef), CaseError> {
    let mut s = session(b, ExecMode::Step, tweak)?;
    s.fence_logs()?.trace_fences()?;
    let p = s.ums()?.open_process(0)?;
    let q = s.ums()?.create_queue(p, NewQueue::user_mode(0))?;
    let f = s.umd_fences()?.create_um_fence(p, 0)?;
    Ok((s, p, q, f))
}

/// Signals `f` from `q` to each of `values` in turn (one submission each), then waits on the
/// CPU for the last; fails naming `what` unless that wait is satisfied.
fn signal_and_wait(
    s: &mut dyn Session,
    q: UmQueueRef,
    f: UmFenceRef,
    values: RangeInclusive<u64>,
    what: &str,
) -> CaseResult {
    let last = *values.end();
    for v in values {
        s.umd_fences()?
            .submit_fence_ops(q, &[FenceWork::Signal(f, v)])?;
    }
    let r = s.umd_fences()?.wait_um_fence(f, last, WAIT)?;
    ensure!(r == WaitResult::Satisfied, "{what}: CPU wait ended {r:?}");
    Ok(())
}

fn cpu_wait_released_from_signal_log(b: &dyn Backend) -> CaseResult {
    match form(b, &[Capability::FenceLogs, Capability::StepMode])? {
        Form::Os => os_cpu_wait_released_from_signal_log(b),
        Form::Kmd => kmd_cpu_wait_released_from_signal_log(b),
    }
}

fn os_cpu_wait_released_from_signal_log(b: &dyn Backend) -> CaseResult {
    let (mut s, _, q, f) = traced_queue(b, |_| {})?;
    let before = s.fence_logs_ref()?.log_counters(0)?;
    // Step mode: nothing runs until the wait lets the machine run, so the wait is registered
    // before the GPU signals and the signal needs its interrupt.
    signal_and_wait(&mut *s, q, f, 7..=7, "the signal")?;
    let c = s.fence_logs_ref()?.log_counters(0)?;
    ensure!(
        c.update_calls > before.update_calls,
        "LOG-07: the OS never called UpdateNativeFenceLogs before reading ({c:?})"
    );
    ensure!(
        c.entries_read > before.entries_read,
        "LOG-08: no log entry was read for the named queue ({c:?})"
    );
    ensure!(
        c.fallback_scans == before.fallback_scans && c.overflows == 0 && c.bad_entries == 0,
        "the release needed a fallback, or entries were bad or lost: {c:?}"
    );
    s.ums()?.close_queue(q)?;
    let tl = s
        .fence_logs_ref()?
        .fence_timeline("Logs.CpuWaitReleasedFromSignalLog")?;
    let ops: Vec<&FenceOp> = tl.ops.iter().filter(|o| o.fence != 0).collect();
    ensure!(
        ops.len() == 1 && ops[0].kind == LogKind::Signal && ops[0].value == 7,
        "LOG-03: expected one signal entry of value 7, got {ops:?}"
    );
    check_joined(&tl, false)?;
    Ok(())
}

fn shared_fence_handles_per_process(b: &dyn Backend) -> CaseResult {
    match form(b, &[Capability::FenceLogs])? {
        Form::Os => os_shared_fence_handles_per_process(b),
        Form::Kmd => kmd_shared_fence_handles_per_process(b),
    }
}

fn os_shared_fence_handles_per_process(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, |_| {})?;
    s.fence_logs()?.trace_fences()?;
    let pa = s.ums()?.open_process(0)?;
    let pb = s.ums()?.open_process(0)?;
    let qa = s.ums()?.create_queue(pa, NewQueue::user_mode(0))?;
    let qb = s.ums()?.create_queue(pb, NewQueue::user_mode(0))?;
    let fa = s.umd_fences()?.create_um_fence(pa, 0)?;
    let fb = s.umd_fences()?.open_um_fence(fa, pb)?;
    let done = s.umd_fences()?.create_um_fence(pb, 0)?;
    // B waits on the GPU for A's signal, then signals `done` for the CPU.
    s.umd_fences()?
        .submit_fence_ops(qb, &[FenceWork::Wait(fb, 3), FenceWork::Signal(done, 1)])?;
    s.umd_fences()?
        .submit_fence_ops(qa, &[FenceWork::Signal(fa, 3)])?;
    let r = s.umd_fences()?.wait_um_fence(done, 1, WAIT)?;
    ensure!(
        r == WaitResult::Satisfied,
        "B's chain did not finish: {r:?}"
    );
    ensure!(
        s.umd_fences_ref()?.um_fence_value(fb)? == 3,
        "B's instance reads {}",
        s.umd_fences_ref()?.um_fence_value(fb)?
    );
    s.ums()?.close_queue(qa)?;
    s.ums()?.close_queue(qb)?;
    let tl = s
        .fence_logs_ref()?
        .fence_timeline("Logs.SharedFenceHandlesPerProcess")?;
    check_joined(&tl, false)?;
    let signal_a: Vec<u32> = tl
        .ops
        .iter()
        .filter(|o| o.kind == LogKind::Signal && o.value == 3)
        .map(|o| o.fence)
        .collect();
    let wait_b: Vec<u32> = tl
        .ops
        .iter()
        .filter(|o| o.kind == LogKind::Wait)
        .map(|o| o.fence)
        .collect();
    ensure!(
        signal_a.len() == 1 && wait_b.len() == 1,
        "expected one signal of value 3 and one wait, got {signal_a:?} and {wait_b:?}"
    );
    ensure!(
        signal_a != wait_b,
        "LOG-03: both entries name handle {:#x}: each process's entry must carry that \
         process's own handle of the shared fence",
        signal_a[0]
    );
    Ok(())
}

fn overflow_falls_back_to_scan(b: &dyn Backend) -> CaseResult {
    match form(
        b,
        &[
            Capability::FenceLogs,
            Capability::StepMode,
            Capability::ConfiguredMachine,
        ],
    )? {
        Form::Os => os_overflow_falls_back_to_scan(b),
        Form::Kmd => kmd_overflow_falls_back_to_scan(b),
    }
}

fn os_overflow_falls_back_to_scan(b: &dyn Backend) -> CaseResult {
    let (mut s, p, q, f) = traced_queue(b, |c| c.log_entries = Some(4))?;
    let g = s.umd_fences()?.create_um_fence(p, 0)?;
    // Ten signals nobody waits for: no interrupt, nobody reads, the 4-entry log laps.
    let ops: Vec<FenceWork> = (1..=10).map(|v| FenceWork::Signal(f, v)).collect();
    s.umd_fences()?.submit_fence_ops(q, &ops)?;
    s.step()?.run_until_idle()?;
    ensure!(
        s.umd_fences_ref()?.um_fence_value(f)? == 10,
        "the ten signals did not run (value {})",
        s.umd_fences_ref()?.um_fence_value(f)?
    );
    // One signal with a waiter: the interrupt names the queue, the OS finds 11 entries
    // written since its cursor in a 4-entry log.
    signal_and_wait(&mut *s, q, g, 1..=1, "the signal with a waiter")?;
    let c = s.fence_logs_ref()?.log_counters(0)?;
    ensure!(
        c.overflows >= 1 && c.entries_lost >= 7,
        "LOG-05: 11 entries in a 4-entry log, but overflows {} and entries lost {} (expected \
         ≥ 1 and ≥ 7): {c:?}",
        c.overflows,
        c.entries_lost
    );
    ensure!(
        c.fallback_scans >= 1,
        "LOG-05: an overflow must make the OS scan the device's fences: {c:?}"
    );
    s.ums()?.close_queue(q)?;
    let tl = s
        .fence_logs_ref()?
        .fence_timeline("Logs.OverflowFallsBackToScan")?;
    let lost = tl
        .ops
        .iter()
        .filter(|o| o.kind == LogKind::Signal && o.end_gpu.is_none())
        .count();
    ensure!(
        lost >= 7,
        "the timeline shows {lost} signal operations without a GPU record (expected ≥ 7)"
    );
    ensure!(
        tl.markers.iter().any(|m| m.text.contains("overflow")),
        "the timeline has no overflow marker"
    );
    // Step mode: GPU times do not map to CPU times (see `check_joined`), so this case's
    // timeline does not go into the run's file.
    Ok(())
}

fn recreate_log_mid_run(b: &dyn Backend) -> CaseResult {
    match form(b, &[Capability::FenceLogs, Capability::StepMode])? {
        Form::Os => os_recreate_log_mid_run(b),
        Form::Kmd => kmd_recreate_log_mid_run(b),
    }
}

fn os_recreate_log_mid_run(b: &dyn Backend) -> CaseResult {
    let (mut s, _, q, f) = traced_queue(b, |_| {})?;
    signal_and_wait(&mut *s, q, f, 1..=3, "first half")?;
    s.fence_logs()?.recreate_queue_log(q, LogKind::Signal, 16)?;
    let logs = s.fence_logs_ref()?.queue_logs(q)?;
    ensure!(
        logs.signal_entries == Some(16),
        "LOG-01: after the move the signal log has {:?} entries (expected 16)",
        logs.signal_entries
    );
    signal_and_wait(&mut *s, q, f, 4..=6, "second half")?;
    s.ums()?.close_queue(q)?;
    let tl = s
        .fence_logs_ref()?
        .fence_timeline("Logs.RecreateLogMidRun")?;
    let signals: Vec<(u32, u64)> = tl
        .ops
        .iter()
        .filter(|o| o.kind == LogKind::Signal && o.fence != 0)
        .map(|o| (o.index, o.value))
        .collect();
    ensure!(
        signals == (0..6).map(|i| (i, u64::from(i) + 1)).collect::<Vec<_>>(),
        "LOG-01/LOG-02: signal log across the move: {signals:?} (expected indices 0..5 with \
         values 1..6)"
    );
    check_joined(&tl, false)?;
    Ok(())
}

/// One process of the chain: queue `a` (node 0) produces, queue `b` (node 1, or 0 on a
/// single-engine adapter) consumes.
struct Lane {
    a: UmQueueRef,
    b: UmQueueRef,
    /// a → b.
    fa: UmFenceRef,
    /// b → CPU.
    fb: UmFenceRef,
    buf: crate::backend::BufferRef,
    last: [u64; 2],
}

fn timeline(b: &dyn Backend) -> CaseResult {
    match form(b, &[Capability::FenceLogs, Capability::KmdCaps])? {
        Form::Os => os_timeline(b),
        Form::Kmd => kmd_timeline(b),
    }
}

fn os_timeline(b: &dyn Backend) -> CaseResult {
    const ROUNDS: u64 = 34; // 2 processes x 34 rounds x 3 operations = 204
    let mut s = session(b, ExecMode::Threaded, |_| {})?;
    s.fence_logs()?.trace_fences()?;
    let nodes = s.kmd_caps()?.submission_caps(0)?.user_mode_nodes;
    let second = nodes
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, um)| **um)
        .map_or(0, |(n, _)| n as u32);
    let mut lanes = Vec::new();
    let mut procs: Vec<ProcessRef> = Vec::new();
    for _ in 0..2 {
        let p = s.ums()?.open_process(0)?;
        procs.push(p);
        let a = s.ums()?.create_queue(p, NewQueue::user_mode(0))?;
        let bq = s.ums()?.create_queue(p, NewQueue::user_mode(second))?;
        let fa = s.umd_fences()?.create_um_fence(p, 0)?;
        let fb = s.umd_fences()?.create_um_fence(p, 0)?;
        let buf = s.ums()?.create_buffer(p, 4096)?;
        lanes.push(Lane {
            a,
            b: bq,
            fa,
            fb,
            buf,
            last: [0; 2],
        });
    }
    for k in 1..=ROUNDS {
        for l in &mut lanes {
            let buf = l.buf;
            let fill = |off: u64| {
                FenceWork::Work(Work::Fill {
                    dst: buf,
                    offset: off,
                    bytes: 1024,
                    pattern: k,
                })
            };
            // Consumer first, so its wait is usually in the GPU before the producer signals.
            l.last[1] = s.umd_fences()?.submit_fence_ops(
                l.b,
                &[
                    FenceWork::Wait(l.fa, k),
                    fill(2048),
                    FenceWork::Signal(l.fb, k),
                ],
            )?;
            l.last[0] = s
                .umd_fences()?
                .submit_fence_ops(l.a, &[fill(0), FenceWork::Signal(l.fa, k)])?;
        }
        if k % 5 == 0 || k == ROUNDS {
            for l in &lanes {
                let r = s.umd_fences()?.wait_um_fence(l.fb, k, WAIT)?;
                ensure!(
                    r == WaitResult::Satisfied,
                    "CPU wait for round {k} ended {r:?}"
                );
            }
        }
    }
    for l in &lanes {
        for (q, v) in [(l.a, l.last[0]), (l.b, l.last[1])] {
            let r = s.ums()?.wait_progress(q, v)?;
            ensure!(r == WaitResult::Satisfied, "queue did not finish: {r:?}");
        }
        ensure!(
            s.umd_fences_ref()?.um_fence_value(l.fa)? == ROUNDS
                && s.umd_fences_ref()?.um_fence_value(l.fb)? == ROUNDS,
            "fences did not reach {ROUNDS}"
        );
    }
    // Destroying the queues makes the OS drain their logs one last time.
    for l in &lanes {
        s.ums()?.close_queue(l.a)?;
        s.ums()?.close_queue(l.b)?;
    }
    let tl = s.fence_logs_ref()?.fence_timeline("Logs.Timeline")?;
    let want = 2 * ROUNDS as usize * 3;
    ensure!(
        tl.ops.len() == want,
        "{} operations in the timeline, {want} submitted",
        tl.ops.len()
    );
    ensure!(
        tl.queues.len() >= 4,
        "{} queues in the timeline, expected 4",
        tl.queues.len()
    );
    ensure!(
        !tl.calibrations.is_empty(),
        "no GPU clock calibration sample: GPU times cannot be mapped"
    );
    check_joined(&tl, true)?;
    // The chain's values per log: signals of fa on a, waits on fa and signals of fb on b, each
    // 1..=ROUNDS in index order.
    for ((q, k), ops) in per_log(&tl) {
        let values: Vec<u64> = ops.iter().map(|o| o.value).collect();
        ensure!(
            values == (1..=ROUNDS).collect::<Vec<_>>(),
            "LOG-03: queue {q} {} log values {values:?}",
            kind_name(k)
        );
    }
    runner::attach_timeline(tl);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The Windows form: the logs as the KMD copies them.

/// `STATUS_INVALID_PARAMETER`: the KMD's answer to a test-hook request with the hooks off.
const STATUS_INVALID_PARAMETER: i32 = 0xC000_000D_u32 as i32;
/// The most nodes a case looks for a user-mode queue on (WDDM's node limit).
const MAX_NODES: u32 = 16;

/// Which side of the logs a case reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// The OS's (`FenceLogs`: its drain, counters and timeline; the simulation).
    Os,
    /// The KMD's copy of each log as the device wrote it ([`KMD_FORM`]).
    Kmd,
}

/// The form of a case on `b`: the OS's where the backend has every capability of `os`, else
/// the KMD's where it has [`KMD_FORM`]; a skip naming both otherwise.
fn form(b: &dyn Backend, os: &[Capability]) -> Result<Form, CaseError> {
    let caps = b.capabilities();
    let lacks = |need: &[Capability]| -> Vec<&str> {
        need.iter()
            .filter(|c| !caps.contains(**c))
            .map(|c| c.name())
            .collect()
    };
    let (o, k) = (lacks(os), lacks(KMD_FORM));
    if o.is_empty() {
        Ok(Form::Os)
    } else if k.is_empty() {
        Ok(Form::Kmd)
    } else {
        Err(CaseError::Skip(format!(
            "needs capability {} (the OS's side of the logs) or {} (the KMD's copy of them), \
             which backend {} lacks",
            o.join(" "),
            k.join(" "),
            b.name()
        )))
    }
}

/// One entry of a log as the device wrote it (`DXGK_NATIVE_FENCE_LOG_ENTRY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    /// Its free-running index.
    index: u64,
    fence: u32,
    value: u64,
    op: u32,
    observed_gpu: u64,
    end_gpu: u64,
}

/// A log as the KMD copied it: the header the OS initialised and the device advanced, and
/// the entries still in the buffer, oldest first.
#[derive(Clone, Debug)]
struct KmdLog {
    log_type: u32,
    /// The header's `NumberOfEntries`.
    entries: u64,
    /// Entries written since the log was set (the header's wraparound count and index).
    written: u64,
    /// The last `min(written, entries)` entries, by index.
    kept: Vec<Entry>,
}

fn le(b: &[u8], at: usize, n: usize) -> u64 {
    b.get(at..at + n).map_or(0, |w| {
        w.iter()
            .rev()
            .fold(0u64, |v, byte| (v << 8) | u64::from(*byte))
    })
}

impl KmdLog {
    /// Parses the KMD's copy (`rvgpu_hw::log`'s layouts); `what` names the log in failures.
    fn parse(b: &[u8], what: &str) -> Result<Self, CaseError> {
        const HEADER: usize = 40;
        const ENTRY: usize = 48;
        ensure!(b.len() >= HEADER, "{what}: {} bytes, no header", b.len());
        let entries = le(b, 16, 8);
        ensure!(
            (1..=DEFAULT_LOG_ENTRIES).contains(&entries)
                && b.len() >= HEADER + ENTRY * entries as usize,
            "LOG-01: {what}: NumberOfEntries {entries} in a copy of {} bytes",
            b.len()
        );
        let written = header_count(le(b, 0, 8), entries);
        let kept = (written.saturating_sub(entries)..written)
            .map(|index| {
                let at = HEADER + ENTRY * (index % entries) as usize;
                Entry {
                    index,
                    value: le(b, at, 8),
                    fence: le(b, at + 8, 4) as u32,
                    op: le(b, at + 12, 4) as u32,
                    observed_gpu: le(b, at + 24, 8),
                    end_gpu: le(b, at + 40, 8),
                }
            })
            .collect();
        Ok(Self {
            log_type: le(b, 8, 4) as u32,
            entries,
            written,
            kept,
        })
    }
}

/// Queue `q`'s log of `kind` as the KMD copies it (`None`: the queue has none). The hooks
/// off (the KMD answers as to an unknown escape) is a skip naming the setting.
fn kmd_log(s: &mut dyn Session, q: UmQueueRef, kind: LogKind) -> Result<Option<KmdLog>, CaseError> {
    let what = format!("queue {} {} log", q.0, kind_name(kind));
    match s.kmd_journal()?.kmd_queue_log(q, kind) {
        Ok(None) => Ok(None),
        Ok(Some(b)) => KmdLog::parse(&b, &what).map(Some),
        Err(Failure::DdiFailed(STATUS_INVALID_PARAMETER)) => Err(CaseError::Skip(
            "the KMD's test hooks are off: the case needs TestHooks = 1 (REG_DWORD) in the \
             adapter's software key (docs/test-machine.md)"
                .into(),
        )),
        Err(e) => Err(e.into()),
    }
}

/// [`kmd_log`] of a log the queue must have.
fn kmd_log_of(s: &mut dyn Session, q: UmQueueRef, kind: LogKind) -> Result<KmdLog, CaseError> {
    kmd_log(s, q, kind)?.ok_or_else(|| {
        CaseError::Fail(format!(
            "LOG-01: user-mode queue {} has no {} log",
            q.0,
            kind_name(kind)
        ))
    })
}

/// LOG-02, LOG-03, LOG-06 on one log: every entry kept names one fence by a handle, carries
/// the operation of its log, and ends no earlier than the entry before it (and, for a wait,
/// was observed no later than it ended); its values are `values`, in index order.
fn check_log(log: &KmdLog, what: &str, values: &[u64]) -> CaseResult {
    let op = if log.log_type == rvgpu_hw::log::LOG_TYPE_WAITS {
        OP_WAIT_UNBLOCKED
    } else {
        OP_SIGNAL_EXECUTED
    };
    let got: Vec<u64> = log.kept.iter().map(|e| e.value).collect();
    ensure!(
        got == values,
        "LOG-02/LOG-03: {what}: values {got:?} in index order (expected {values:?})"
    );
    let mut last_end = 0;
    for e in &log.kept {
        ensure!(
            e.fence != 0 && e.op == op,
            "LOG-03: {what}: entry {} names fence {:#x} with operation {} (expected a handle \
             and {op})",
            e.index,
            e.fence,
            e.op
        );
        ensure!(
            e.end_gpu != 0 && e.end_gpu >= last_end,
            "LOG-06: {what}: entry {} ends at GPU time {}, after {last_end}",
            e.index,
            e.end_gpu
        );
        ensure!(
            e.observed_gpu == 0 || e.observed_gpu <= e.end_gpu,
            "LOG-06: {what}: entry {} observed at {} after its end {}",
            e.index,
            e.observed_gpu,
            e.end_gpu
        );
        last_end = e.end_gpu;
    }
    Ok(())
}

/// A threaded session with one process's user-mode queue on node 0 and a UMD fence of it.
fn kmd_queue(
    b: &dyn Backend,
) -> Result<(Box<dyn Session>, ProcessRef, UmQueueRef, UmFenceRef), CaseError> {
    let mut s = session(b, ExecMode::Threaded, |_| {})?;
    let p = s.ums()?.open_process(0)?;
    let q = s.ums()?.create_queue(p, NewQueue::user_mode(0))?;
    let f = s.umd_fences()?.create_um_fence(p, 0)?;
    Ok((s, p, q, f))
}

/// LOG-01, LOG-09: every user-mode queue (one per node that takes one) has both logs, of one
/// size the OS chose, with the headers it initialised and nothing written yet; a kernel-mode
/// queue has none.
fn kmd_every_user_queue_has_both_logs(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Threaded, |_| {})?;
    let p = s.ums()?.open_process(0)?;
    let mut sizes = Vec::new();
    for node in 0..MAX_NODES {
        let q = match s.ums()?.create_queue(p, NewQueue::user_mode(node)) {
            Ok(q) => q,
            // The node past the adapter's last (node 0 must take one).
            Err(_) if node > 0 => break,
            Err(e) => return Err(e.into()),
        };
        for (kind, t) in [
            (LogKind::Wait, rvgpu_hw::log::LOG_TYPE_WAITS),
            (LogKind::Signal, rvgpu_hw::log::LOG_TYPE_SIGNALS),
        ] {
            let log = kmd_log_of(&mut *s, q, kind)?;
            ensure!(
                log.log_type == t && log.written == 0,
                "LOG-01: node {node}'s {} log: header type {} and {} entries written before \
                 any work (expected {t} and 0)",
                kind_name(kind),
                log.log_type,
                log.written
            );
            sizes.push(log.entries);
        }
        s.ums()?.close_queue(q)?;
    }
    ensure!(
        sizes.windows(2).all(|w| w[0] == w[1]),
        "LOG-09: the logs' sizes differ: {sizes:?} (the OS gives every log one size)"
    );
    let k = s.ums()?.create_queue(p, NewQueue::kernel_mode(0))?;
    for kind in [LogKind::Wait, LogKind::Signal] {
        ensure!(
            kmd_log(&mut *s, k, kind)?.is_none(),
            "kernel-mode queue has a {} log (the OS gives kernel-mode queues none)",
            kind_name(kind)
        );
    }
    Ok(())
}

/// LOG-03: the signal that released the CPU wait is in the queue's signal log: one entry,
/// index 0, naming a fence with value 7 and SIGNAL_EXECUTED at a GPU time. Whether the OS
/// flushed the queue before reading it (LOG-07) and found it by the queue the interrupt named
/// (LOG-08) is the OS form's.
fn kmd_cpu_wait_released_from_signal_log(b: &dyn Backend) -> CaseResult {
    let (mut s, _, q, f) = kmd_queue(b)?;
    signal_and_wait(&mut *s, q, f, 7..=7, "the signal")?;
    let log = kmd_log_of(&mut *s, q, LogKind::Signal)?;
    ensure!(
        log.written == 1,
        "LOG-03: {} entries written for one signal",
        log.written
    );
    check_log(&log, "the signal log", &[7])?;
    s.ums()?.close_queue(q)?;
    Ok(())
}

/// LOG-03: A's signal and B's wait of one fence shared between them: each entry names the
/// fence by a handle, and not by the other process's.
fn kmd_shared_fence_handles_per_process(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Threaded, |_| {})?;
    let pa = s.ums()?.open_process(0)?;
    let pb = s.ums()?.open_process(0)?;
    let qa = s.ums()?.create_queue(pa, NewQueue::user_mode(0))?;
    let qb = s.ums()?.create_queue(pb, NewQueue::user_mode(0))?;
    let fa = s.umd_fences()?.create_um_fence(pa, 0)?;
    let fb = s.umd_fences()?.open_um_fence(fa, pb)?;
    let done = s.umd_fences()?.create_um_fence(pb, 0)?;
    s.umd_fences()?
        .submit_fence_ops(qb, &[FenceWork::Wait(fb, 3), FenceWork::Signal(done, 1)])?;
    s.umd_fences()?
        .submit_fence_ops(qa, &[FenceWork::Signal(fa, 3)])?;
    let r = s.umd_fences()?.wait_um_fence(done, 1, WAIT)?;
    ensure!(
        r == WaitResult::Satisfied,
        "B's chain did not finish: {r:?}"
    );
    let v = s.umd_fences_ref()?.um_fence_value(fb)?;
    ensure!(v == 3, "B's instance reads {v}");
    let signal_a = kmd_log_of(&mut *s, qa, LogKind::Signal)?;
    let wait_b = kmd_log_of(&mut *s, qb, LogKind::Wait)?;
    check_log(&signal_a, "A's signal log", &[3])?;
    check_log(&wait_b, "B's wait log", &[3])?;
    let (ha, hb) = (signal_a.kept[0].fence, wait_b.kept[0].fence);
    ensure!(
        ha != hb,
        "LOG-03: both entries name handle {ha:#x}: each process's entry must carry that \
         process's own handle of the shared fence"
    );
    s.ums()?.close_queue(qa)?;
    s.ums()?.close_queue(qb)?;
    Ok(())
}

/// LOG-05 as a program sees it: more signals than the log holds before anyone waits (so
/// nothing interrupts and nothing reads), then a signal with a waiter: the wait is released
/// although the log lapped 7 entries past any reader's cursor, and the device kept writing
/// in order (the newest entries, the lapped ones gone). The OS's detection and scan are the
/// OS form's.
fn kmd_overflow_falls_back_to_scan(b: &dyn Backend) -> CaseResult {
    let (mut s, p, q, f) = kmd_queue(b)?;
    let g = s.umd_fences()?.create_um_fence(p, 0)?;
    let n = kmd_log_of(&mut *s, q, LogKind::Signal)?.entries;
    let first = n + 6;
    let values: Vec<u64> = (1..=first).collect();
    for chunk in values.chunks(8) {
        let ops: Vec<FenceWork> = chunk.iter().map(|v| FenceWork::Signal(f, *v)).collect();
        s.umd_fences()?.submit_fence_ops(q, &ops)?;
    }
    signal_and_wait(&mut *s, q, g, 1..=1, "the signal with a waiter")?;
    let v = s.umd_fences_ref()?.um_fence_value(f)?;
    ensure!(v == first, "the {first} signals did not run (value {v})");
    let log = kmd_log_of(&mut *s, q, LogKind::Signal)?;
    ensure!(
        log.written == first + 1,
        "LOG-05: {} entries written for {} signals",
        log.written,
        first + 1
    );
    let mut want: Vec<u64> = (first + 2 - n..=first).collect();
    want.push(1);
    check_log(&log, "the lapped signal log", &want)?;
    s.ums()?.close_queue(q)?;
    Ok(())
}

/// LOG-01, LOG-02 as far as 24H2 goes: it sets a queue's logs once, at creation
/// (`M:VidSchiCreateNativeFenceLog` @0x140024634, called from `M:VidSchCreateHwQueue`
/// @0x1400224D0 only), so no program can have a log moved; the signal log keeps its size and
/// its indices run on across CPU waits, every operation logged once.
fn kmd_recreate_log_mid_run(b: &dyn Backend) -> CaseResult {
    let (mut s, _, q, f) = kmd_queue(b)?;
    signal_and_wait(&mut *s, q, f, 1..=3, "first half")?;
    let before = kmd_log_of(&mut *s, q, LogKind::Signal)?.entries;
    signal_and_wait(&mut *s, q, f, 4..=6, "second half")?;
    let log = kmd_log_of(&mut *s, q, LogKind::Signal)?;
    ensure!(
        log.entries == before && log.written == 6,
        "LOG-01/LOG-02: the signal log has {} entries ({before} before) and {} written \
         (expected 6)",
        log.entries,
        log.written
    );
    check_log(&log, "the signal log", &[1, 2, 3, 4, 5, 6])?;
    s.ums()?.close_queue(q)?;
    Ok(())
}

/// The chain of [`os_timeline`], read from the logs before the queues go: per log the
/// values 1..=ROUNDS in index order (the retained ones), one fence per log, GPU times in
/// order. Mapping GPU times to CPU times needs the OS's calibration samples, which this
/// backend does not read: causality is the OS form's, and no timeline file is written.
fn kmd_timeline(b: &dyn Backend) -> CaseResult {
    const ROUNDS: u64 = 34;
    let mut s = session(b, ExecMode::Threaded, |_| {})?;
    let mut lanes = Vec::new();
    for _ in 0..2 {
        let p = s.ums()?.open_process(0)?;
        let a = s.ums()?.create_queue(p, NewQueue::user_mode(0))?;
        // The second engine where the adapter has one.
        let bq = match s.ums()?.create_queue(p, NewQueue::user_mode(1)) {
            Ok(q) => q,
            Err(_) => s.ums()?.create_queue(p, NewQueue::user_mode(0))?,
        };
        let fa = s.umd_fences()?.create_um_fence(p, 0)?;
        let fb = s.umd_fences()?.create_um_fence(p, 0)?;
        let buf = s.ums()?.create_buffer(p, 4096)?;
        lanes.push(Lane {
            a,
            b: bq,
            fa,
            fb,
            buf,
            last: [0; 2],
        });
    }
    for k in 1..=ROUNDS {
        for l in &mut lanes {
            let buf = l.buf;
            let fill = |off: u64| {
                FenceWork::Work(Work::Fill {
                    dst: buf,
                    offset: off,
                    bytes: 1024,
                    pattern: k,
                })
            };
            l.last[1] = s.umd_fences()?.submit_fence_ops(
                l.b,
                &[
                    FenceWork::Wait(l.fa, k),
                    fill(2048),
                    FenceWork::Signal(l.fb, k),
                ],
            )?;
            l.last[0] = s
                .umd_fences()?
                .submit_fence_ops(l.a, &[fill(0), FenceWork::Signal(l.fa, k)])?;
        }
        if k % 5 == 0 || k == ROUNDS {
            for l in &lanes {
                let r = s.umd_fences()?.wait_um_fence(l.fb, k, WAIT)?;
                ensure!(
                    r == WaitResult::Satisfied,
                    "CPU wait for round {k} ended {r:?}"
                );
            }
        }
    }
    let mut logged = 0;
    for (i, l) in lanes.iter().enumerate() {
        for (q, v) in [(l.a, l.last[0]), (l.b, l.last[1])] {
            let r = s.ums()?.wait_progress(q, v)?;
            ensure!(r == WaitResult::Satisfied, "queue did not finish: {r:?}");
        }
        for (q, kind, what) in [
            (l.a, LogKind::Signal, "producer's signal log"),
            (l.b, LogKind::Wait, "consumer's wait log"),
            (l.b, LogKind::Signal, "consumer's signal log"),
        ] {
            let log = kmd_log_of(&mut *s, q, kind)?;
            let what = format!("process {i}'s {what}");
            ensure!(
                log.written == ROUNDS,
                "LOG-02: {what}: {} entries written for {ROUNDS} operations",
                log.written
            );
            let values: Vec<u64> = (ROUNDS + 1 - log.kept.len() as u64..=ROUNDS).collect();
            check_log(&log, &what, &values)?;
            ensure!(
                log.kept.windows(2).all(|w| w[0].fence == w[1].fence),
                "LOG-03: {what} names more than one fence"
            );
            logged += log.written;
        }
    }
    ensure!(
        logged == 2 * ROUNDS * 3,
        "{logged} operations logged, {} submitted",
        2 * ROUNDS * 3
    );
    for l in &lanes {
        s.ums()?.close_queue(l.a)?;
        s.ums()?.close_queue(l.b)?;
    }
    Ok(())
}
