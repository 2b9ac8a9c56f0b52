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
//! backend lacks the OS's side (`FenceLogs`), each case runs that form (`Form::Kmd`),
//! threaded, and checks the log: the header the OS initialised, the entries in index order
//! with their fences, values, operations and GPU times. What only the OS's side shows (its
//! flushes before a read, LOG-07; its reads of the named queue, LOG-08; its overflow
//! detection and fallback scans, LOG-05; a log moved mid-run, which 24H2 never does) stays
//! with the OS form.

mod fixtures;
mod kmd;

use std::collections::BTreeMap;

use crate::backend::{
    Backend, Capability, ExecMode, FenceWork, LogKind, NewQueue, ProcessRef, Session,
    SessionConfig, UmFenceRef, UmQueueRef, WaitResult,
};
use crate::case::{Case, CaseError, CaseResult};
use crate::ensure;

use super::common::session;
use crate::runner;
use crate::timeline::{FenceOp, Timeline};
use fixtures::{
    kind_name, shared_fence_chain, signal_and_wait, timeline_rounds, Lane, DEFAULT_LOG_ENTRIES,
};
use kmd::{
    form, kmd_cpu_wait_released_from_signal_log, kmd_every_user_queue_has_both_logs,
    kmd_overflow_falls_back_to_scan, kmd_recreate_log_mid_run,
    kmd_shared_fence_handles_per_process, kmd_timeline, Form,
};

/// The cases of this area. Each runs in the OS's form where the backend has the OS's side of
/// the logs (its `needs`' first set, checked by `form`), else in the KMD's (`KMD_FORM`).
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
    let (qa, qb) = shared_fence_chain(&mut *s)?;
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
        lanes.push(Lane::new(&mut *s, p, a, bq)?);
    }
    timeline_rounds(&mut *s, &mut lanes, ROUNDS)?;
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
