//! The `Logs.*` cases' Windows form ([`Form::Kmd`]): a program on Windows sees neither the
//! OS's drain nor its counters, only each log as the device wrote it, which the KMD copies to a
//! program of the queue's own device through its test hooks
//! ([`crate::backend::KmdJournal::kmd_queue_log`]). Each case runs threaded and checks the log:
//! the header the OS initialised, the entries in index order with their fences, values,
//! operations and GPU times.

use rvgpu_hw::log::{header_count, OP_SIGNAL_EXECUTED, OP_WAIT_UNBLOCKED};

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;

use crate::backend::{
    Backend, Capability, ExecMode, Failure, FenceWork, LogKind, NewQueue, ProcessRef, Session,
    UmFenceRef, UmQueueRef, WaitResult,
};
use crate::case::{CaseError, CaseResult};
use crate::ensure;

use super::super::common::{session, two_forms};
use super::fixtures::{
    kind_name, shared_fence_chain, signal_and_wait, timeline_rounds, Lane, DEFAULT_LOG_ENTRIES,
    KMD_FORM,
};

/// The most nodes a case looks for a user-mode queue on (WDDM's node limit).
const MAX_NODES: u32 = 16;

pub(super) use super::super::common::Form;

/// The form of a case on `b`: the OS's side of the logs where the backend has every
/// capability of `os`, else the KMD's copy of them where it has [`KMD_FORM`] ([`two_forms`]).
pub(super) fn form(b: &dyn Backend, os: &[Capability]) -> Result<Form, CaseError> {
    two_forms(
        b,
        (os, "the OS's side of the logs"),
        (KMD_FORM, "the KMD's copy of them"),
    )
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
pub(super) fn kmd_every_user_queue_has_both_logs(b: &dyn Backend) -> CaseResult {
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
pub(super) fn kmd_cpu_wait_released_from_signal_log(b: &dyn Backend) -> CaseResult {
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
pub(super) fn kmd_shared_fence_handles_per_process(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Threaded, |_| {})?;
    let (qa, qb) = shared_fence_chain(&mut *s)?;
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
pub(super) fn kmd_overflow_falls_back_to_scan(b: &dyn Backend) -> CaseResult {
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
pub(super) fn kmd_recreate_log_mid_run(b: &dyn Backend) -> CaseResult {
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
pub(super) fn kmd_timeline(b: &dyn Backend) -> CaseResult {
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
        lanes.push(Lane::new(&mut *s, p, a, bq)?);
    }
    timeline_rounds(&mut *s, &mut lanes, ROUNDS)?;
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
