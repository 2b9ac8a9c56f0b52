//! The Windows forms of the cases: what a program on 24H2 has of a native fence beyond its
//! own calls is its value (a CPU wait that returns at once where the value is reached) and the
//! KMD's journal, read through its test hooks ([`KmdJournal`](crate::backend::KmdJournal)):
//! each fence report the KMD handed the OS (`NativeFenceSignaled`, the interrupts NF-03 and
//! NF-04 count) and each MonitoredValue the OS armed through `DxgkDdiUpdateMonitoredValues`
//! (`MonitoredValue`, NF-02; the OS maps the value for the GPU only). The machine runs on its
//! own: a case orders its steps by what it can wait for (a fence value, a queue's progress),
//! and bounds a wait only for what must happen.
//!
//! The journal is the adapter's, not the process's: the forms expect no other program to use
//! native fences on the test machine while they run (docs/test-machine.md).

use std::time::Duration;

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_hw::testhooks::{JournalKind, JournalRecord};

use crate::backend::{
    Backend, Capability, ExecMode, Failure, FenceRef, NewFence, QueueRef, Session, WaitResult,
};
use crate::case::{CaseError, CaseResult};
use crate::ensure;

use super::super::common::{no_fault, two_forms, Form};
use super::setup::{drained, fence_and_queue, session, SETTLE};

/// What the journal forms need.
pub(super) const JOURNALED: &[Capability] = &[
    Capability::Fences,
    Capability::NativeFences,
    Capability::KmdJournal,
];
/// What the cross-adapter forms need.
pub(super) const CROSS: &[Capability] = &[
    Capability::Fences,
    Capability::NativeFences,
    Capability::CrossAdapterFences,
];

/// The form of a case on `b`: the OS's objects where the backend has every capability in
/// `os`, else the KMD's journal and the fences' values where it has every one in `kmd`.
pub(super) fn form(
    b: &dyn Backend,
    os: &[Capability],
    kmd: &[Capability],
) -> Result<Form, CaseError> {
    two_forms(
        b,
        (os, "the OS's fence objects, the machine stepped"),
        (kmd, "the KMD's journal, threaded"),
    )
}

/// A threaded session on one adapter whose KMD answers its test hooks ([`hooks_on`]).
fn hooked(b: &dyn Backend) -> Result<Box<dyn Session>, CaseError> {
    let mut s = session(b, ExecMode::Threaded, 1)?;
    hooks_on(&mut *s, 0)?;
    Ok(s)
}

/// Whether adapter `i`'s KMD answers its test hooks: off (it answers as to an unknown
/// escape) is a skip naming the setting.
fn hooks_on(s: &mut dyn Session, i: usize) -> CaseResult {
    if let Err(Failure::DdiFailed(STATUS_INVALID_PARAMETER)) = s.kmd_journal()?.kmd_journal(i, 1) {
        return Err(CaseError::Skip(
            "the KMD's test hooks are off: the case needs TestHooks = 1 (REG_DWORD) in the \
             adapter's software key (docs/test-machine.md)"
                .into(),
        ));
    }
    Ok(())
}

/// The sequence number after adapter `i`'s last journal record.
fn mark(s: &mut dyn Session, i: usize) -> Result<u64, Failure> {
    let recs = s.kmd_journal()?.kmd_journal(i, 1)?;
    Ok(recs.last().map_or(1, |r| u64::from(r.seq) + 1))
}

/// Adapter `i`'s journal records of `kind` from sequence number `from`.
fn records(
    s: &mut dyn Session,
    i: usize,
    from: u64,
    kind: JournalKind,
) -> Result<Vec<JournalRecord>, Failure> {
    let recs = s.kmd_journal()?.kmd_journal(i, from)?;
    Ok(recs.into_iter().filter(|r| r.kind == kind as u16).collect())
}

/// Adapter `i`'s journal from `from`, for messages.
fn journal_since(s: &mut dyn Session, i: usize, from: u64) -> Result<String, Failure> {
    let recs = s.kmd_journal()?.kmd_journal(i, from)?;
    Ok(recs
        .iter()
        .map(crate::journal::line)
        .collect::<Vec<_>>()
        .join("; "))
}

/// Fence reports the KMD handed the OS on adapter `i` since `from`: one per interrupt it
/// raised for native fences.
fn fence_reports(s: &mut dyn Session, i: usize, from: u64) -> Result<usize, Failure> {
    Ok(records(s, i, from, JournalKind::NativeFenceSignaled)?.len())
}

/// Fence reports on adapter 0 from `from` up to the OS's first disarm (`u64::MAX`) after
/// its first arm: those of the one registration. A waiting thread registers its wait anew
/// each slice ([`crate::backend::kmt`]'s event waits); what a later registration raises is
/// its own.
fn reports_while_armed(s: &mut dyn Session, from: u64) -> Result<usize, Failure> {
    let recs = s.kmd_journal()?.kmd_journal(0, from)?;
    let is = |r: &JournalRecord, k: JournalKind| r.kind == k as u16;
    let armed_at = recs
        .iter()
        .position(|r| is(r, JournalKind::MonitoredValue) && r.a != u64::MAX);
    let Some(start) = armed_at else {
        return Ok(0);
    };
    Ok(recs
        .iter()
        .skip(start)
        .take_while(|r| !(is(r, JournalKind::MonitoredValue) && r.a == u64::MAX))
        .filter(|r| is(r, JournalKind::NativeFenceSignaled))
        .count())
}

/// The MonitoredValues the OS armed on adapter 0 since `from`, in order.
fn armed(s: &mut dyn Session, from: u64) -> Result<Vec<u64>, Failure> {
    Ok(records(s, 0, from, JournalKind::MonitoredValue)?
        .iter()
        .map(|r| r.a)
        .collect())
}

/// The MonitoredValues armed since `from` once the last of them satisfies `done` (within
/// [`SETTLE`]: the OS arms as it registers a wait, which the case has asked for), or a
/// failure naming `what` with what was armed.
fn await_armed(
    s: &mut Box<dyn Session>,
    from: u64,
    what: &str,
    done: impl Fn(u64) -> bool,
) -> Result<Vec<u64>, CaseError> {
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + SETTLE;
    while std::time::Instant::now() < deadline {
        seen = armed(&mut **s, from)?;
        if seen.last().is_some_and(|&v| done(v)) {
            return Ok(seen);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Err(CaseError::Fail(format!(
        "{what}: MonitoredValues armed {:x?}",
        seen
    )))
}

/// Whether fence `f` has reached `value`, asked without waiting (a CPU wait that returns at
/// once; a value reached arms nothing).
fn reached(s: &mut dyn Session, f: FenceRef, value: u64) -> Result<bool, Failure> {
    Ok(s.fences()?.cpu_wait(f, value, Duration::ZERO)? == WaitResult::Satisfied)
}

/// NF-02: the OS arms MonitoredValue for the lowest pending wait (W - 1 by the pages, W on
/// 24H2) and puts it back to `u64::MAX` after the last, each through the update DDI.
pub(super) fn monitored_value_tracks_waiters(b: &dyn Backend) -> CaseResult {
    let mut s = hooked(b)?;
    let f = s.fences()?.create_native_fence(NewFence::new(0, 1))?;
    let base = mark(&mut *s, 0)?;
    let e10 = s.fences()?.cpu_wait_event(f, 10)?;
    let e5 = s.fences()?.cpu_wait_event(f, 5)?;
    let low = |v: u64| v == 4 || v == 5;
    let seen = await_armed(&mut s, base, "waits at 5 and 10 pending", low)?;
    let first = seen.last().copied().unwrap_or_default();
    let after_first = mark(&mut *s, 0)?;
    s.fences()?.cpu_signal(f, 5)?;
    ensure!(
        s.fences_ref()?.event_result(e5, SETTLE) == Some(WaitResult::Satisfied),
        "wait for 5 not released"
    );
    // The pages re-arm for the wait left (10 - 1); 24H2 leaves the value until the next wait
    // registers, which the waiting thread's next slice does (10), the slice's end having
    // disarmed it for the moment no wait was registered.
    let next = if first == 4 { 9 } else { 10 };
    await_armed(&mut s, after_first, "the wait for 10 left", |v| v == next)?;
    s.fences()?.cpu_signal(f, 10)?;
    ensure!(
        s.fences_ref()?.event_result(e10, SETTLE) == Some(WaitResult::Satisfied),
        "wait for 10 not released"
    );
    await_armed(&mut s, after_first, "after the last wait", |v| {
        v == u64::MAX
    })?;
    no_fault(&*s)
}

/// NF-03, NF-04, NF-07: no fence report for the signals below the armed value, then at least
/// one for the signal crossing it (the device reports at `value >= MonitoredValue`); the DPC
/// releases the wait and the OS disarms.
pub(super) fn cpu_wait_gpu_signal(b: &dyn Backend) -> CaseResult {
    let mut s = hooked(b)?;
    let (f, q) = fence_and_queue(&mut *s)?;
    let base = mark(&mut *s, 0)?;
    let e = s.fences()?.cpu_wait_event(f, 3)?;
    let seen = await_armed(&mut s, base, "a wait for 3", |v| v != u64::MAX)?;
    let armed_at = seen.last().copied().unwrap_or_default();
    if !(armed_at == 2 || armed_at == 3) {
        return Err(CaseError::Fail(format!(
            "MonitoredValue {armed_at:#x} for a wait for 3"
        )));
    }
    // The signals below MonitoredValue, run to the end first: no report.
    for v in 1..armed_at {
        s.fences()?.gpu_signal(q, f, v)?;
    }
    s.fences()?.gpu_submit(q)?;
    ensure!(drained(&mut s, q)?, "queue not drained");
    let n = fence_reports(&mut *s, 0, base)?;
    ensure!(n == 0, "{n} fence reports below MonitoredValue {armed_at}");
    for v in armed_at..=5 {
        s.fences()?.gpu_signal(q, f, v)?;
    }
    s.fences()?.gpu_submit(q)?;
    ensure!(
        s.fences_ref()?.event_result(e, SETTLE) == Some(WaitResult::Satisfied),
        "CPU wait for 3 not released"
    );
    ensure!(drained(&mut s, q)?, "queue not drained");
    ensure!(
        reached(&mut *s, f, 5)?,
        "CurrentValue below 5 after the queue ran"
    );
    await_armed(&mut s, base, "after the wait's release", |v| v == u64::MAX)?;
    // At least the crossing's report; on a threaded machine the signals after it may each
    // report too before the OS's disarm reaches the KMD (the OS form, stepped, counts one).
    let n = reports_while_armed(&mut *s, base)?;
    let most = usize::try_from(6 - armed_at).unwrap_or(usize::MAX);
    ensure!(
        (1..=most).contains(&n),
        "{n} fence reports with MonitoredValue armed at {armed_at}, expected 1 to {most}: {}",
        journal_since(&mut *s, 0, base)?
    );
    no_fault(&*s)
}

/// NF-03: 100 GPU signals of a fence nobody waits on: no fence report.
pub(super) fn no_waiter_no_interrupt(b: &dyn Backend) -> CaseResult {
    let mut s = hooked(b)?;
    let (f, q) = fence_and_queue(&mut *s)?;
    let base = mark(&mut *s, 0)?;
    for v in 1..=100 {
        s.fences()?.gpu_signal(q, f, v)?;
        if v % 50 == 0 {
            s.fences()?.gpu_submit(q)?;
            ensure!(drained(&mut s, q)?, "queue not drained");
        }
    }
    ensure!(reached(&mut *s, f, 100)?, "CurrentValue below 100");
    let n = fence_reports(&mut *s, 0, base)?;
    ensure!(n == 0, "{n} fence reports with no waiter");
    no_fault(&*s)
}

/// NF-17: a CPU signal releases a GPU wait with no fence report; the queue's later signal
/// lands. A marker signalled before the wait says the queue reached it.
pub(super) fn cpu_signal_releases_gpu_wait(b: &dyn Backend) -> CaseResult {
    let mut s = hooked(b)?;
    let f = s.fences()?.create_native_fence(NewFence::new(0, 1))?;
    let g = s.fences()?.create_native_fence(NewFence::new(0, 1))?;
    let marker = s.fences()?.create_native_fence(NewFence::new(0, 1))?;
    let q = s.fences()?.gpu_queue(0, 0, 1)?;
    s.fences()?.gpu_signal(q, marker, 1)?;
    s.fences()?.gpu_wait(q, f, 5)?;
    s.fences()?.gpu_signal(q, g, 1)?;
    s.fences()?.gpu_submit(q)?;
    let r = s.fences()?.cpu_wait(marker, 1, SETTLE)?;
    ensure!(r == WaitResult::Satisfied, "the queue did not start: {r:?}");
    // The marker's own wait raised its report: count from here.
    let base = mark(&mut *s, 0)?;
    ensure!(
        !s.fences_ref()?.gpu_queue_drained(q),
        "the queue did not block on FENCE_WAIT"
    );
    s.fences()?.cpu_signal(f, 5)?;
    ensure!(
        drained(&mut s, q)?,
        "the CPU signal did not release the GPU wait"
    );
    ensure!(reached(&mut *s, g, 1)?, "the later signal did not land");
    let n = fence_reports(&mut *s, 0, base)?;
    ensure!(
        n == 0,
        "{n} fence reports: the release took a CPU round trip"
    );
    no_fault(&*s)
}

/// Submits on `q` a GPU wait for `gate` to reach `value`, then a signal of `after` (if any)
/// behind it.
fn hold(
    s: &mut dyn Session,
    q: QueueRef,
    gate: FenceRef,
    value: u64,
    after: Option<FenceRef>,
) -> CaseResult {
    s.fences()?.gpu_wait(q, gate, value)?;
    if let Some(a) = after {
        s.fences()?.gpu_signal(q, a, 1)?;
    }
    s.fences()?.gpu_submit(q)?;
    ensure!(
        !s.fences_ref()?.gpu_queue_drained(q),
        "the queue ran past its wait before the signal"
    );
    Ok(())
}

/// NF-16: a CPU signal on adapter 0 of a fence shared with adapter 1 releases a GPU wait
/// there (the OS's NotificationOnly update). This program holds the fence and the waiting
/// queue on adapter 1; another process signals it on adapter 0.
pub(super) fn cross_adapter(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Threaded, 2)?;
    let f1 = s
        .fences()?
        .create_native_fence(NewFence::new(1, 1).shareable())?;
    let f0 = s.cross_adapter()?.open_native_fence_on(f1, 0, 2)?;
    let after = s.fences()?.create_native_fence(NewFence::new(1, 1))?;
    let q = s.fences()?.gpu_queue(1, 0, 1)?;
    hold(&mut *s, q, f1, 2, Some(after))?;
    s.fences()?.cpu_signal(f0, 2)?;
    ensure!(
        drained(&mut s, q)?,
        "NotificationOnly did not release adapter 1's GPU wait"
    );
    ensure!(reached(&mut *s, after, 1)?, "the later signal did not land");
    no_fault(&*s)
}

/// What the Windows form of `MonitoredFence.CpuWaitGpuSignal` needs.
pub(super) const MONITORED_JOURNALED: &[Capability] = &[
    Capability::Fences,
    Capability::MonitoredFences,
    Capability::KmdJournal,
];

/// MF-01, MF-03, MF-04 as a program sees them: a GPU signal of a legacy monitored fence is
/// reported to the OS (a `MonitoredFenceSignaled` record in the KMD's journal, the
/// interrupt), whose scan releases the CPU waits at the value reached and no other; a CPU
/// signal releases a wait; the CPU mapping shows each value. The adapter may have native
/// fences too (the runbook's first pass): the legacy report is the same.
pub(super) fn monitored_cpu_wait_gpu_signal(b: &dyn Backend) -> CaseResult {
    let mut s = hooked(b)?;
    let f = s.monitored()?.create_monitored_fence(0, 1, 0)?;
    let q = s.fences()?.gpu_queue(0, 0, 1)?;
    let e1 = s.monitored()?.monitored_wait_event(f, 1)?;
    let e2 = s.monitored()?.monitored_wait_event(f, 2)?;
    let base = mark(&mut *s, 0)?;
    s.monitored()?.gpu_signal_monitored(q, f, 1)?;
    s.fences()?.gpu_submit(q)?;
    ensure!(
        s.fences_ref()?.event_result(e1, SETTLE) == Some(WaitResult::Satisfied),
        "the wait for 1 was not released by the GPU signal of 1"
    );
    ensure!(
        drained(&mut s, q)?,
        "the first signal's queue did not drain"
    );
    // The value and the queue's progress are in memory before the interrupt is handled (a
    // waiter's own check of the value may release it first): the report follows, within
    // [`SETTLE`].
    let deadline = std::time::Instant::now() + SETTLE;
    while records(&mut *s, 0, base, JournalKind::MonitoredFenceSignaled)?.is_empty() {
        ensure!(
            std::time::Instant::now() < deadline,
            "no monitored-fence report for a legacy GPU signal: {}",
            journal_since(&mut *s, 0, base)?
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let v = s.monitored_ref()?.monitored_value(f)?;
    ensure!(v == 1, "value {v} after the GPU signal of 1");
    // With the value at 1 and its report made, a release of the wait for 2 would have come
    // with the wait for 1's (it can only pass falsely, on a slow machine).
    ensure!(
        s.fences_ref()?.event_result(e2, Duration::ZERO).is_none(),
        "the wait for 2 was released at 1"
    );
    s.monitored()?.gpu_signal_monitored(q, f, 2)?;
    s.fences()?.gpu_submit(q)?;
    ensure!(
        s.fences_ref()?.event_result(e2, SETTLE) == Some(WaitResult::Satisfied),
        "the wait for 2 was not released by the GPU signal of 2"
    );
    ensure!(
        drained(&mut s, q)?,
        "the second signal's queue did not drain"
    );
    let e5 = s.monitored()?.monitored_wait_event(f, 5)?;
    s.monitored()?.monitored_signal_cpu(f, 5)?;
    ensure!(
        s.fences_ref()?.event_result(e5, SETTLE) == Some(WaitResult::Satisfied),
        "the CPU signal did not release the wait for 5"
    );
    let v = s.monitored_ref()?.monitored_value(f)?;
    ensure!(v == 5, "value {v} after the CPU signal of 5");
    no_fault(&*s)
}

/// NF-05 as a program sees it, on its own mappings (`D3DDDI_NATIVEFENCEMAPPING`): its private
/// fences' CurrentValues at one stride on shared GPU pages, their MonitoredValues at the same
/// distances, the CPU VAs too within a page; a shareable fence's values on pages none of them
/// uses; each fence's value read at its own address, untouched by the others' signals.
pub(super) fn packed_storage(b: &dyn Backend) -> CaseResult {
    const PRIVATE: u64 = 4;
    let mut s = session(b, ExecMode::Threaded, 1)?;
    let mut fences = Vec::new();
    for _ in 0..PRIVATE {
        fences.push(s.fences()?.create_native_fence(NewFence::new(0, 1))?);
    }
    let shared = s
        .fences()?
        .create_native_fence(NewFence::new(0, 1).shareable())?;
    let mut maps = Vec::new();
    for &f in &fences {
        maps.push(s.fences_ref()?.own_mapping(f)?);
    }
    let sh = s.fences_ref()?.own_mapping(shared)?;
    let page = |a: u64| a & !0xFFF;
    let dist = |a: u64, b: u64| a.abs_diff(b);
    let stride = (maps.iter().enumerate())
        .flat_map(|(i, m)| {
            maps.iter()
                .skip(i + 1)
                .map(|n| dist(m.current_gpu, n.current_gpu))
        })
        .min()
        .unwrap_or_default();
    ensure!(
        stride != 0 && stride % 8 == 0,
        "private CurrentValues at stride {stride:#x}: {maps:#x?}"
    );
    let first = maps
        .first()
        .copied()
        .ok_or(CaseError::Fail("no fence".into()))?;
    for m in &maps {
        let d = dist(m.current_gpu, first.current_gpu);
        ensure!(
            d % stride == 0,
            "CurrentValue off the stride {stride:#x}: {maps:#x?}"
        );
        ensure!(
            dist(m.monitored_gpu, first.monitored_gpu) == d,
            "MonitoredValues not at the CurrentValues' distances: {maps:#x?}"
        );
        ensure!(
            m.current_cpu % 8 == 0
                && (page(m.current_gpu) != page(first.current_gpu)
                    || dist(m.current_cpu, first.current_cpu) == d),
            "CPU VAs not at the GPU VAs' distances within a page: {maps:#x?}"
        );
    }
    let private: Vec<u64> = (maps.iter())
        .flat_map(|m| [page(m.current_gpu), page(m.monitored_gpu)])
        .collect();
    let shares_page = (maps.iter())
        .skip(1)
        .any(|m| page(m.current_gpu) == page(first.current_gpu));
    ensure!(
        shares_page,
        "no two private fences share a page: {maps:#x?}"
    );
    ensure!(
        !private.contains(&page(sh.current_gpu)) && !private.contains(&page(sh.monitored_gpu)),
        "a shareable fence on a private fence's page: {sh:#x?} vs {maps:#x?}"
    );
    let all: Vec<(FenceRef, u64)> = (fences.iter().copied()).chain([shared]).zip(10..).collect();
    for &(f, v) in &all {
        s.fences()?.cpu_signal(f, v)?;
        let r = s.fences()?.cpu_wait(f, v, SETTLE)?;
        ensure!(
            r == WaitResult::Satisfied,
            "CPU signal of {v} not reached: {r:?}"
        );
    }
    for &(f, v) in &all {
        let m = s.fences_ref()?.own_mapping(f)?;
        ensure!(
            m.value == v,
            "the mapping at {:#x} reads {:#x}, signalled {v:#x}",
            m.current_cpu,
            m.value
        );
    }
    no_fault(&*s)
}
