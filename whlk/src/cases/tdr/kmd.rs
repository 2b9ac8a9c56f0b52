//! The Windows forms of the cases: what a program on Windows has of a recovery beyond the
//! device state (`D3DKMTGetDeviceState`) is the KMD's own record, through its test hooks
//! ([`KmdJournal`](crate::backend::KmdJournal), [`KmdFaults`](crate::backend::KmdFaults)):
//! the DDIs the OS called in the KMD, with their fence IDs, in order. VidSch's steps around them
//! (detection, the snapshot, the DPC flush, the recovery, the reason) are not in it, and the
//! checks on them are left to the backend that has the OS's record (`TdrTrace`).

use rvgpu_hw::testhooks::{
    JournalKind, JournalRecord, TestHookOp, JOURNAL_PAGING, JOURNAL_RESUBMISSION,
};
use rvgpu_umd::kmt::DeviceExecutionState;

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;

use crate::backend::{
    Backend, Capability, ContextRef, ExecMode, Failure, ProcessRef, Session, TdrTimeouts, Work,
};
use crate::case::{CaseError, CaseResult};
use crate::ensure;

use super::super::common::{fill, no_fault, observe, session, two_forms};
use super::fixtures::{software_scheduled, BUF, RECOVERY, STATUS_DEVICE_REMOVED};

pub(super) use super::super::common::Form;

/// The form of a case on `b`: the OS's record where the backend has every capability in
/// `os`, else the KMD's where it has every one in `kmd` ([`two_forms`]).
pub(super) fn form(
    b: &dyn Backend,
    os: &[Capability],
    kmd: &[Capability],
) -> Result<Form, CaseError> {
    two_forms(b, (os, "the OS's record"), (kmd, "the KMD's test hooks"))
}

/// A session for the KMD form: TDR on (the machine's own on Windows), the case's guilty
/// process and a DMA context of it on node 0. Node 0 must be scheduled by the OS (the case exercises
/// `DxgkDdiResetEngine`, which a hardware-scheduled node never gets): the session asks for it,
/// and where the machine is what it is (Windows), a hardware-scheduled node is a skip naming
/// the setting.
pub(super) fn kmd_session(
    b: &dyn Backend,
) -> Result<(Box<dyn Session>, ProcessRef, ContextRef), CaseError> {
    let mut s = session(b, ExecMode::Threaded, software_scheduled)?;
    s.tdr()?.enable_tdr(0, TdrTimeouts::fast())?;
    // The guilty device is another process's (a child on Windows): 24H2 refuses a process new
    // devices after repeated engine timeouts of its own within `TdrLimitTime`, and the
    // harness's process must go on opening devices for the cases after this one.
    s.ums()?.open_process(0)?;
    let p = s.ums()?.open_process(0)?;
    if s.dma_contexts()?.node_hw_scheduled(p, 0)? {
        return Err(CaseError::Skip(
            "node 0 is hardware-scheduled: the case needs hardware-accelerated GPU scheduling \
             off (GraphicsDrivers\\HwSchMode = 1, docs/test-machine.md)"
                .into(),
        ));
    }
    // The KMD answers a test-hook request as an unknown escape unless the tester turned the
    // hooks on.
    if let Err(Failure::DdiFailed(STATUS_INVALID_PARAMETER)) = s.kmd_journal()?.kmd_journal(0, 1) {
        return Err(CaseError::Skip(
            "the KMD's test hooks are off: the case needs TestHooks = 1 (REG_DWORD) in the \
             adapter's software key (docs/test-machine.md)"
                .into(),
        ));
    }
    let c = s.dma_contexts()?.create_context(p, 0)?;
    Ok((s, p, c))
}

/// The sequence number after the journal's last record.
pub(super) fn mark(s: &mut dyn Session) -> Result<u64, Failure> {
    let recs = s.kmd_journal()?.kmd_journal(0, 1)?;
    Ok(recs.last().map_or(1, |r| u64::from(r.seq) + 1))
}

/// The journal's records from `from` once one matches `done` (within [`RECOVERY`]), or a
/// failure naming `what` with what the journal holds.
pub(super) fn await_record(
    s: &mut dyn Session,
    from: u64,
    what: &str,
    done: impl Fn(&JournalRecord) -> bool,
) -> Result<Vec<JournalRecord>, CaseError> {
    // The machine runs on its own (Windows; the simulated machine is threaded here): the
    // journal is read until the record is there.
    let start = std::time::Instant::now();
    loop {
        let recs = s.kmd_journal()?.kmd_journal(0, from)?;
        if recs.iter().any(&done) {
            return Ok(recs);
        }
        if start.elapsed() > RECOVERY {
            return Err(CaseError::Fail(format!(
                "{what}: not in the KMD's journal after {RECOVERY:?}: {}",
                show(&recs)
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// The records as `Kind(node, a, b, status, flags)`, for messages.
pub(super) fn show(recs: &[JournalRecord]) -> String {
    recs.iter()
        .map(|r| {
            let kind = JournalKind::from_u16(r.kind)
                .map_or_else(|| format!("{}", r.kind), |k| format!("{k:?}"));
            format!(
                "#{} {kind}(n{}, {:#x}, {:#x}, {:#x}, {:#x})",
                r.seq, r.node, r.a, r.b, r.status as u32, r.flags
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `r` is a `kind` record of node 0.
pub(super) fn is(r: &JournalRecord, kind: JournalKind) -> bool {
    r.kind == kind as u16 && r.node == 0
}

/// The index of the first record that matches `p`.
pub(super) fn at(recs: &[JournalRecord], p: impl Fn(&JournalRecord) -> bool) -> Option<usize> {
    recs.iter().position(p)
}

/// Waits until the KMD reported `DmaCompleted` for `id` on node 0 (from `from`).
pub(super) fn completed(s: &mut dyn Session, from: u64, id: u32, what: &str) -> CaseResult {
    await_record(s, from, what, |r| {
        is(r, JournalKind::DmaCompleted) && r.a == u64::from(id)
    })
    .map(drop)
}

/// The KMD's `DxgkDdiResetEngine` record of node 0 from `from`, once it is there.
pub(super) fn reset_engine(
    s: &mut dyn Session,
    from: u64,
) -> Result<(Vec<JournalRecord>, JournalRecord), CaseError> {
    let recs = await_record(s, from, "DxgkDdiResetEngine", |r| {
        is(r, JournalKind::ResetEngine)
    })?;
    let r = recs
        .iter()
        .copied()
        .find(|r| is(r, JournalKind::ResetEngine))
        .ok_or_else(|| CaseError::Fail("no ResetEngine".into()))?;
    Ok((recs, r))
}

/// The device of `p` is in error after its work hung an engine: `D3DKMTGetDeviceState` answers
/// HUNG (where the backend reads it). The journal's record of a recovery DDI comes as the KMD
/// is called; the OS marks the devices after the driver's restart (24H2's
/// `K:ADAPTER_RENDER::Reset` @0x1403F2C34), so on a machine that runs on its own the state
/// may still read ACTIVE for a while: the program watches it until it changes, within
/// [`RECOVERY`].
pub(super) fn expect_hung(s: &mut dyn Session, p: ProcessRef, what: &str) -> CaseResult {
    let t0 = std::time::Instant::now();
    let st = loop {
        let Some(st) = observe(s.tdr()?.device_state(p))? else {
            return Ok(());
        };
        if st != DeviceExecutionState::ACTIVE || t0.elapsed() > RECOVERY {
            break st;
        }
        s.run_until(std::time::Duration::from_millis(1), &mut |_| false)?;
    };
    ensure!(
        st == DeviceExecutionState::HUNG,
        "{what}: D3DKMTGetDeviceState answered {st:?}, expected HUNG"
    );
    Ok(())
}

/// A new process's DMA buffer on `node` runs: its ID above `above`, its FILL lands.
pub(super) fn new_work_runs(s: &mut dyn Session, nodes: &[u32], above: u32) -> CaseResult {
    let q = s.ums()?.open_process(0)?;
    let t = s.ums()?.create_buffer(q, BUF)?;
    let from = mark(s)?;
    let mut ids = Vec::new();
    for &n in nodes {
        let c = s.dma_contexts()?.create_context(q, n)?;
        let id = s
            .dma_contexts()?
            .submit_dma(c, &[fill(t, 8 * u64::from(n), 0x90 + u64::from(n))])?;
        ids.push((n, id));
    }
    for &(n, id) in &ids {
        if n == 0 {
            ensure!(id > above, "new work's fence ID {id} not above {above}");
        }
        await_record(s, from, "the new work's completion", |r| {
            r.kind == JournalKind::DmaCompleted as u16 && r.node == n as u16 && r.a == u64::from(id)
        })?;
        let got = s.ums_ref()?.read_buffer(t, 8 * u64::from(n))?;
        ensure!(
            got == 0x90 + u64::from(n),
            "new work on node {n} after the recovery did not run ({got:#x})"
        );
    }
    Ok(())
}

/// Where the successful `DxgkDdiResetFromTimeout` and `DxgkDdiRestartFromTimeout` records
/// are in `recs`.
fn adapter_reset(recs: &[JournalRecord]) -> (Option<usize>, Option<usize>) {
    let ok = |kind: JournalKind| at(recs, |r| r.kind == kind as u16 && r.status >= 0);
    (
        ok(JournalKind::ResetFromTimeout),
        ok(JournalKind::RestartFromTimeout),
    )
}

/// The Submit records of node 0 before index `end`, not resubmissions: their IDs (S is the
/// largest).
fn submitted(recs: &[JournalRecord], end: usize) -> impl Iterator<Item = u64> + '_ {
    recs[..end]
        .iter()
        .filter(|r| is(r, JournalKind::Submit) && r.flags & JOURNAL_RESUBMISSION == 0)
        .map(|r| r.a)
}

// ---------------------------------------------------------------------------------------------
// The cases' KMD forms.

/// TDR-05 as the KMD saw it: a HANG's recovery calls PreemptCommand, CollectDbgInfo(0x141),
/// QueryDependentEngineGroup, QueryEngineStatus and ResetEngine in that order (docs/tdr.md),
/// the hung buffer is never reported preempted or completed, its device is HUNG and refused,
/// and another process's new work runs on the node. (With nothing in flight, the OS's decision
/// not to reset needs `force_tdr`, which Windows does not have: the simulation checks it.)
pub(super) fn reset_sequence(b: &dyn Backend) -> CaseResult {
    let (mut s, p, ctx) = kmd_session(b)?;
    let t = s.ums()?.create_buffer(p, BUF)?;
    let from = mark(&mut *s)?;
    let f1 = s.dma_contexts()?.submit_dma(ctx, &[fill(t, 0, 7)])?;
    completed(&mut *s, from, f1, "the first fill")?;
    let from = mark(&mut *s)?;
    let hang = s.dma_contexts()?.submit_dma(ctx, &[Work::Hang])?;
    ensure!(hang > f1, "hang fence {hang}, not above {f1}");
    let (recs, _) = reset_engine(&mut *s, from)?;
    let order = [
        at(&recs, |r| is(r, JournalKind::PreemptCommand)),
        at(&recs, |r| {
            r.kind == JournalKind::CollectDbgInfo as u16
                && r.a == u64::from(super::fixtures::VIDEO_ENGINE_TIMEOUT_DETECTED)
        }),
        at(&recs, |r| {
            is(r, JournalKind::DependentEngineGroup) && r.a == 1
        }),
        at(&recs, |r| is(r, JournalKind::EngineStatus)),
        at(&recs, |r| {
            is(r, JournalKind::ResetEngine) && r.status == 0 && r.a == u64::from(hang)
        }),
    ];
    ensure!(
        order.iter().all(Option::is_some) && order.windows(2).all(|w| w[0] < w[1]),
        "PreemptCommand < CollectDbgInfo(0x141) < QueryDependentEngineGroup (1) < \
         QueryEngineStatus < ResetEngine (0, LastAborted {hang}) expected in the KMD's journal, \
         got {order:?}: {}",
        show(&recs)
    );
    ensure!(
        !recs.iter().any(|r| is(r, JournalKind::DmaPreempted)
            || (is(r, JournalKind::DmaCompleted) && r.a == u64::from(hang))),
        "the HANG was reported preempted or completed: {}",
        show(&recs)
    );
    expect_hung(&mut *s, p, "the guilty device")?;
    match s.dma_contexts()?.submit_dma(ctx, &[fill(t, 0, 8)]) {
        Err(Failure::DdiFailed(STATUS_DEVICE_REMOVED)) => {}
        other => ensure!(
            false,
            "the guilty device's submission returned {other:?}, expected DEVICE_REMOVED"
        ),
    }
    new_work_runs(&mut *s, &[0], hang)?;
    ensure!(
        s.ums_ref()?.read_buffer(t, 0)? == 7,
        "the refused submission of the guilty device ran"
    );
    no_fault(&*s)
}

/// TDR-06 as the KMD saw it: ResetEngine's LastAbortedFenceId lies in [C, S], C the last
/// `DmaCompleted` and S the last submitted ID the KMD saw on the node before the reset, and is
/// the hung buffer's. (The OS's own snapshot of (S, C) is VidSch's: the simulation checks it.)
pub(super) fn aborted_fence_in_range(b: &dyn Backend) -> CaseResult {
    let (mut s, p, ctx) = kmd_session(b)?;
    let t = s.ums()?.create_buffer(p, BUF)?;
    let from = mark(&mut *s)?;
    let f1 = s.dma_contexts()?.submit_dma(ctx, &[fill(t, 0, 1)])?;
    completed(&mut *s, from, f1, "fill")?;
    let hang = s.dma_contexts()?.submit_dma(ctx, &[Work::Hang])?;
    let (recs, r) = reset_engine(&mut *s, from)?;
    let end = at(&recs, |x| x.seq == r.seq).unwrap_or(recs.len());
    let sub = submitted(&recs, end).max().unwrap_or(0);
    let c = recs[..end]
        .iter()
        .filter(|x| is(x, JournalKind::DmaCompleted))
        .map(|x| x.a)
        .max()
        .unwrap_or(0);
    ensure!(
        (c..=sub).contains(&r.a),
        "LastAbortedFenceId {} outside [C, S] = [{c}, {sub}]: {}",
        r.a,
        show(&recs)
    );
    ensure!(
        r.a == u64::from(hang) && c >= u64::from(f1),
        "LastAbortedFenceId {}: expected the hung buffer's ID {hang} (C {c}, f1 {f1})",
        r.a
    );
    expect_hung(&mut *s, p, "the guilty device")?;
    no_fault(&*s)
}

/// TDR-04 as the KMD saw it: an ID is reported completed once its work is done; after an
/// engine reset LastAborted is the hung buffer's; before a failed reset is promoted, the work
/// that completed was reported completed. (A slow buffer preempted within the timeout needs a
/// timeout the case chooses, and C = S is VidSch's: the simulation checks both.)
pub(super) fn last_completed_fence(b: &dyn Backend) -> CaseResult {
    let (mut s, p, ctx) = kmd_session(b)?;
    let t = s.ums()?.create_buffer(p, BUF)?;
    let from = mark(&mut *s)?;
    let f1 = s.dma_contexts()?.submit_dma(ctx, &[fill(t, 0, 1)])?;
    completed(&mut *s, from, f1, "first DMA buffer")?;
    ensure!(
        s.ums_ref()?.read_buffer(t, 0)? == 1,
        "{f1} reported completed before its FILL landed"
    );
    let from = mark(&mut *s)?;
    let hang = s.dma_contexts()?.submit_dma(ctx, &[Work::Hang])?;
    let (recs, r) = reset_engine(&mut *s, from)?;
    ensure!(
        r.a == u64::from(hang) && r.status == 0,
        "ResetEngine: status {:#x}, LastAborted {}, expected 0 and {hang}: {}",
        r.status as u32,
        r.a,
        show(&recs)
    );
    // A second device's work completes, then its hang's reset fails: promoted.
    let q = s.ums()?.open_process(0)?;
    let cq = s.dma_contexts()?.create_context(q, 0)?;
    let tq = s.ums()?.create_buffer(q, BUF)?;
    s.kmd_faults()?
        .arm_kmd_fault(0, TestHookOp::FailNextReset, 0)?;
    let from = mark(&mut *s)?;
    let f = s.dma_contexts()?.submit_dma(cq, &[fill(tq, 0, 1)])?;
    completed(&mut *s, from, f, "the work before the second hang")?;
    let h2 = s.dma_contexts()?.submit_dma(cq, &[Work::Hang])?;
    let recs = await_record(&mut *s, from, "the promoted reset", |r| {
        r.kind == JournalKind::RestartFromTimeout as u16
    })?;
    ensure!(
        recs.iter()
            .any(|r| is(r, JournalKind::ResetEngine) && r.status < 0),
        "the armed reset of {h2} did not fail: {}",
        show(&recs)
    );
    new_work_runs(&mut *s, &[0], h2)?;
    no_fault(&*s)
}

/// TDR-01 as the KMD saw it: the OS's own `DxgkDdiCollectDbgInfo(0x141)` of a HANG's recovery
/// returned a bounded, non-empty text, the text the KMD's last call wrote. (Calling the DDI
/// directly, in a loop beside QueryAdapterInfo, needs `DirectDdi`: the simulation does.)
pub(super) fn collect_dbg_info_level_zero(b: &dyn Backend) -> CaseResult {
    let (mut s, _, ctx) = kmd_session(b)?;
    let from = mark(&mut *s)?;
    s.dma_contexts()?.submit_dma(ctx, &[Work::Hang])?;
    let (recs, _) = reset_engine(&mut *s, from)?;
    let dbg = recs
        .iter()
        .rev()
        .find(|r| r.kind == JournalKind::CollectDbgInfo as u16)
        .copied()
        .ok_or_else(|| {
            CaseError::Fail(format!(
                "no CollectDbgInfo in the recovery: {}",
                show(&recs)
            ))
        })?;
    ensure!(
        dbg.a == u64::from(super::fixtures::VIDEO_ENGINE_TIMEOUT_DETECTED)
            && dbg.b > 0
            && dbg.b < 4096,
        "the OS's CollectDbgInfo: reason {:#x}, {} bytes; expected 0x141, 1..4095",
        dbg.a,
        dbg.b
    );
    let (seq, text) = s.kmd_journal()?.last_dbg_info(0)?;
    ensure!(
        seq == u64::from(dbg.seq) && text.len() as u64 == dbg.b,
        "the last CollectDbgInfo text: record {seq}, {} bytes; expected record {}, {} bytes",
        text.len(),
        dbg.seq,
        dbg.b
    );
    no_fault(&*s)
}

/// TDR-09 as the KMD saw it: the armed ResetEngine fails, then ResetFromTimeout and
/// RestartFromTimeout succeed, in that order; the guilty device is HUNG; both engines run a new
/// process's work. (The reason, 9, is VidSch's: the simulation checks it.)
pub(super) fn reset_fails_promoted(b: &dyn Backend) -> CaseResult {
    let (mut s, p, ctx) = kmd_session(b)?;
    s.kmd_faults()?
        .arm_kmd_fault(0, TestHookOp::FailNextReset, 0)?;
    let from = mark(&mut *s)?;
    let hang = s.dma_contexts()?.submit_dma(ctx, &[Work::Hang])?;
    let recs = await_record(&mut *s, from, "RestartFromTimeout", |r| {
        r.kind == JournalKind::RestartFromTimeout as u16
    })?;
    let fired = at(&recs, |r| {
        r.kind == JournalKind::FaultFired as u16 && r.a == TestHookOp::FailNextReset as u64
    });
    let failed = at(&recs, |r| is(r, JournalKind::ResetEngine) && r.status < 0);
    let (reset, restart) = adapter_reset(&recs);
    ensure!(
        matches!((fired, failed, reset, restart), (Some(_), Some(a), Some(b), Some(c)) if a < b && b < c),
        "the armed fault fired, failed ResetEngine < ResetFromTimeout < RestartFromTimeout \
         expected: {}",
        show(&recs)
    );
    expect_hung(&mut *s, p, "the guilty device")?;
    new_work_runs(&mut *s, &[0, 1], hang)?;
    no_fault(&*s)
}

/// The buffer whose paging hangs: enough page-table updates (72 paging buffers here) that
/// some wait behind the hung one and the adapter reset drops them.
const PAGED: u64 = 32 << 20;

/// TDR-08 and TDR-09 as the KMD saw them: with HangNextPaging armed on the node VidMm pages
/// on (the node of the journal's first paging submission for a new buffer), another new
/// buffer's page-table updates hang there; a paging buffer is not aborted alone, so the OS
/// resets the adapter: ResetFromTimeout and RestartFromTimeout follow the hung paging
/// submission, and the buffer's creation still completes (VidMm issues the dropped paging
/// again), so its last page takes a FILL where its device was kept. A new process's buffer
/// is then paged in and its work runs on both nodes. (The reason, 9, the aborted packet and
/// which devices the OS puts in error are VidSch's: the simulation checks them.)
pub(super) fn paging_promotes_adapter_reset(b: &dyn Backend) -> CaseResult {
    let (mut s, p, ctx) = kmd_session(b)?;
    let node = paging_node(&mut *s, p)?;
    s.kmd_faults()?
        .arm_kmd_fault(0, TestHookOp::HangNextPaging, node)?;
    let from = mark(&mut *s)?;
    // The buffer's device is reset with every other by the adapter-wide recovery (24H2's
    // `K:ADAPTER_RENDER::Reset` @0x1403F2C34): its creation may answer the loss.
    let big = match s.ums()?.create_buffer(p, PAGED) {
        Ok(big) => Some(big),
        Err(Failure::DdiFailed(STATUS_DEVICE_REMOVED)) => None,
        Err(e) => return Err(e.into()),
    };
    let recs = await_record(&mut *s, from, "RestartFromTimeout", |r| {
        r.kind == JournalKind::RestartFromTimeout as u16
    })?;
    let on =
        |r: &JournalRecord, kind: JournalKind| r.kind == kind as u16 && u32::from(r.node) == node;
    let fired = at(&recs, |r| {
        on(r, JournalKind::FaultFired) && r.a == TestHookOp::HangNextPaging as u64
    });
    let hung = fired
        .and_then(|f| at(&recs[f..], |r| on(r, JournalKind::Submit) && paging(r)).map(|i| f + i));
    let (reset, restart) = adapter_reset(&recs);
    ensure!(
        matches!((fired, hung, reset, restart), (Some(_), Some(a), Some(b), Some(c)) if a < b && b < c),
        "HangNextPaging fired on node {node}, its paging submission < ResetFromTimeout < \
         RestartFromTimeout expected: {}",
        show(&recs)
    );
    // VidMm issued what the reset dropped again: the buffer is mapped, where its device was
    // kept (the OS may put it in error; the simulation checks which).
    let end = PAGED - 8;
    let from = mark(&mut *s)?;
    if let Some(big) = big {
        match s.dma_contexts()?.submit_dma(ctx, &[fill(big, end, 0x5A)]) {
            Ok(id) => {
                completed(&mut *s, from, id, "a FILL of the paged buffer's last page")?;
                let got = s.ums_ref()?.read_buffer(big, end)?;
                ensure!(
                    got == 0x5A,
                    "the paged buffer's last page read {got:#x}, not 0x5a"
                );
            }
            Err(Failure::DdiFailed(STATUS_DEVICE_REMOVED)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    new_work_runs(&mut *s, &[0, 1], 0)?;
    no_fault(&*s)
}

/// The node VidMm pages on: the node of the journal's first paging submission for a new
/// buffer of `p`.
fn paging_node(s: &mut dyn Session, p: ProcessRef) -> Result<u32, CaseError> {
    let from = mark(s)?;
    s.ums()?.create_buffer(p, BUF)?;
    let recs = await_record(s, from, "a new buffer's paging", paging)?;
    Ok(recs
        .iter()
        .find(|r| paging(r))
        .map_or(0, |r| u32::from(r.node)))
}

/// Whether `r` is a paging buffer's submission.
fn paging(r: &JournalRecord) -> bool {
    r.kind == JournalKind::Submit as u16 && r.flags & JOURNAL_PAGING != 0
}

/// TDR-03 as the KMD saw it: on the node VidMm pages on, a HANG, then an innocent process's
/// render buffer and a new process's buffer, whose paging queues behind the HANG. After the
/// engine reset (LastAborted the HANG's), the OS resubmits the paging buffers that were in
/// flight first, with their own IDs and in their order, then any render buffer that was in
/// flight with a new ID above every ID submitted before the reset; both processes' buffers
/// work afterwards. (The OS's own record of the resubmission and retirement is VidSch's: the
/// simulation checks it.)
pub(super) fn paging_resubmit_order(b: &dyn Backend) -> CaseResult {
    let (mut s, guilty, _) = kmd_session(b)?;
    let node = paging_node(&mut *s, guilty)?;
    if s.dma_contexts()?.node_hw_scheduled(guilty, node)? {
        return Err(CaseError::Skip(format!(
            "node {node}, where VidMm pages, is hardware-scheduled: the case needs \
             hardware-accelerated GPU scheduling off (GraphicsDrivers\\HwSchMode = 1, \
             docs/test-machine.md)"
        )));
    }
    let ca = s.dma_contexts()?.create_context(guilty, node)?;
    let c = s.ums()?.open_process(0)?;
    let cc = s.dma_contexts()?.create_context(c, node)?;
    let tc = s.ums()?.create_buffer(c, BUF)?;
    let from = mark(&mut *s)?;
    let warm = s.dma_contexts()?.submit_dma(cc, &[fill(tc, 0, 0x01)])?;
    await_record(&mut *s, from, "the warming fill", |r| {
        r.kind == JournalKind::DmaCompleted as u16
            && u32::from(r.node) == node
            && r.a == u64::from(warm)
    })?;
    let pb = s.ums()?.open_process(0)?;
    let from = mark(&mut *s)?;
    let hang = s.dma_contexts()?.submit_dma(ca, &[Work::Hang])?;
    s.dma_contexts()?.submit_dma(cc, &[fill(tc, 0, 0x33)])?;
    // Returns once its paging ran: after the recovery.
    let tb = s.ums()?.create_buffer(pb, BUF)?;
    let (recs, reset) = reset_on(&mut *s, from, node)?;
    let on = |x: &JournalRecord| x.kind == JournalKind::Submit as u16 && u32::from(x.node) == node;
    // In flight at the reset: what was submitted after the HANG, not yet resubmitted.
    let before: Vec<&JournalRecord> = recs[..reset]
        .iter()
        .filter(|x| on(x) && x.flags & JOURNAL_RESUBMISSION == 0)
        .collect();
    let s_max = before.iter().map(|x| x.a).max().unwrap_or(0);
    let behind = |want: bool| -> Vec<u64> {
        before
            .iter()
            .filter(|x| x.a > u64::from(hang) && paging(x) == want)
            .map(|x| x.a)
            .collect()
    };
    let (pages, renders) = (behind(true), behind(false));
    let after: Vec<(u64, bool)> = recs[reset..]
        .iter()
        .filter(|x| on(x) && x.flags & JOURNAL_RESUBMISSION != 0)
        .map(|x| (x.a, paging(x)))
        .collect();
    ensure!(
        recs[reset].status == 0 && recs[reset].a == u64::from(hang),
        "ResetEngine on node {node}: expected status 0, LastAborted {hang}: {}",
        show(&recs)
    );
    ensure!(
        !pages.is_empty(),
        "no paging buffer behind the HANG at the reset: {}",
        show(&recs)
    );
    // Paging first, with their own IDs, in order; then each render buffer with a new ID
    // above every ID submitted before the reset (on 24H2 a render submission may itself wait
    // for its paging, and so reach the KMD only after the reset).
    let paged: Vec<(u64, bool)> = pages.iter().map(|p| (*p, true)).collect();
    let rest = after.get(pages.len()..).unwrap_or_default();
    ensure!(
        after.get(..pages.len()) == Some(&paged[..])
            && rest.len() == renders.len()
            && rest.iter().all(|(id, paging)| !paging && *id > s_max),
        "resubmitted: the paging buffers {pages:?} first with their IDs, in order, then the \
         render buffers {renders:?} with IDs above {s_max}; got {after:?}: {}",
        show(&recs)
    );
    let from = mark(&mut *s)?;
    let cb = s.dma_contexts()?.create_context(pb, node)?;
    let id = s.dma_contexts()?.submit_dma(cb, &[fill(tb, 8, 0x44)])?;
    await_record(&mut *s, from, "the new buffer's fill", |x| {
        x.kind == JournalKind::DmaCompleted as u16
            && u32::from(x.node) == node
            && x.a == u64::from(id)
    })?;
    ensure!(
        (
            s.ums_ref()?.read_buffer(tc, 0)?,
            s.ums_ref()?.read_buffer(tb, 8)?
        ) == (0x33, 0x44),
        "the resubmitted render buffer or the paged buffer's fill did not land"
    );
    expect_hung(&mut *s, guilty, "the guilty device")?;
    no_fault(&*s)
}

/// The KMD's `DxgkDdiResetEngine` record of `node` from `from`, once it is there; the
/// records from it on are the second value's.
fn reset_on(
    s: &mut dyn Session,
    from: u64,
    node: u32,
) -> Result<(Vec<JournalRecord>, usize), CaseError> {
    let recs = await_record(s, from, "DxgkDdiResetEngine", |r| {
        r.kind == JournalKind::ResetEngine as u16 && u32::from(r.node) == node
    })?;
    let i = at(&recs, |r| {
        r.kind == JournalKind::ResetEngine as u16 && u32::from(r.node) == node
    })
    .unwrap_or(0);
    Ok((recs, i))
}

/// Where [`completed_before_reset`]'s buffer waits.
const GATE: u64 = 512;

/// TDR-07 as the KMD saw it: a DMA buffer waits on a word of its process's buffer, then
/// fills. Once the OS asks to preempt it (it has been stuck past the timeout), the program
/// writes the word with the CPU alone, which the device does not see until told
/// (hardware.md 5.4); with CompleteBeforeReset armed, the KMD's reset first re-evaluates the
/// blocked waits and lets the node finish. So the buffer completes between the OS's snapshot
/// and the reset: `DmaCompleted` of its ID before `DxgkDdiResetEngine`, which returns
/// LastAborted = S, its ID; its FILL landed; the OS still puts its device in error; new work
/// runs. (That the OS ignored the completion, and its (S, C), are VidSch's: the simulation
/// checks them.)
pub(super) fn completed_before_reset(b: &dyn Backend) -> CaseResult {
    let (mut s, p, ctx) = kmd_session(b)?;
    let t = s.ums()?.create_buffer(p, BUF)?;
    let from = mark(&mut *s)?;
    let warm = s.dma_contexts()?.submit_dma(ctx, &[fill(t, 0, 1)])?;
    completed(&mut *s, from, warm, "the warming fill")?;
    s.kmd_faults()?
        .arm_kmd_fault(0, TestHookOp::CompleteBeforeReset, 0)?;
    let from = mark(&mut *s)?;
    let id = s.dma_contexts()?.submit_dma(
        ctx,
        &[
            Work::WaitAtLeast {
                buffer: t,
                offset: GATE,
                value: 1,
            },
            fill(t, 0, 0x77),
        ],
    )?;
    // The OS's preemption request comes only once the buffer has run past the timeout: it is
    // blocked on the word by then, and the CPU's write does not release it.
    await_record(&mut *s, from, "the OS's PreemptCommand", |r| {
        is(r, JournalKind::PreemptCommand)
    })?;
    s.ums()?.write_buffer(t, GATE, 1)?;
    let (recs, r) = reset_engine(&mut *s, from)?;
    let fired = at(&recs, |x| {
        x.kind == JournalKind::FaultFired as u16 && x.a == TestHookOp::CompleteBeforeReset as u64
    });
    let done = at(&recs, |x| {
        is(x, JournalKind::DmaCompleted) && x.a == u64::from(id)
    });
    let reset = at(&recs, |x| x.seq == r.seq);
    ensure!(
        matches!((fired, done, reset), (Some(a), Some(b), Some(c)) if a < b && b < c),
        "CompleteBeforeReset fired < DmaCompleted({id}) < ResetEngine expected: {}",
        show(&recs)
    );
    ensure!(
        r.status == 0 && r.a == u64::from(id),
        "ResetEngine with nothing in flight: status {:#x}, LastAborted {}, expected 0 and S = \
         {id}",
        r.status as u32,
        r.a
    );
    ensure!(
        s.ums_ref()?.read_buffer(t, 0)? == 0x77,
        "the buffer's FILL did not land"
    );
    expect_hung(&mut *s, p, "the device of the completed buffer")?;
    new_work_runs(&mut *s, &[0], id)?;
    no_fault(&*s)
}
