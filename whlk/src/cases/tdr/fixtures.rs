//! What the cases share: bug-check codes and reasons, the TDR session, and waits and reads
//! on the OS's recovery record.

use std::time::Duration;

use crate::backend::{
    Backend, BufferRef, ContextRef, EngineProbe, ExecMode, Failure, PagingFill, ProcessRef,
    Session, SessionConfig, TdrStep, TdrTimeouts, UmQueueRef,
};
use crate::case::{CaseError, CaseResult};
use crate::ensure;

use super::super::common::{fill, observe, session};
pub(super) use rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED;

/// 0x119 `VIDEO_SCHEDULER_INTERNAL_ERROR`.
pub(super) const VIDEO_SCHEDULER_INTERNAL_ERROR: u32 = 0x119;
/// Its subtype "the driver reported an invalid aborted fence".
pub(super) const REPORTED_INVALID_ABORTED_FENCE: u64 = 0xA;
/// `VIDEO_TDR_TIMEOUT_DETECTED`.
pub(super) const VIDEO_TDR_TIMEOUT_DETECTED: u32 = 0x117;
/// `VIDEO_ENGINE_TIMEOUT_DETECTED`.
pub(super) const VIDEO_ENGINE_TIMEOUT_DETECTED: u32 = 0x141;
/// Reasons (docs/tdr.md; only 9 is Windows' documented value).
pub(super) const REASON_ENGINE_TIMEOUT: u32 = 1;
pub(super) const REASON_PROMOTED: u32 = 9;
/// Step-mode budget of one wait (20 000 rounds).
pub(super) const STEP: Duration = Duration::from_millis(200);
/// The budget of a wait for a recovery: on a machine that runs on its own, detection can take
/// Windows' `TdrDelay` (2 s by default); a step-mode wait ends as soon as its condition holds.
pub(super) const RECOVERY: Duration = Duration::from_secs(10);
pub(super) const BUF: u64 = 4096;

// ---------------------------------------------------------------------------------------------
// Fixtures.

/// A paging FILL on node 0, where the TDR cases page.
pub(super) fn paging_fill(offset: u64, bytes: u64, pattern: u32) -> PagingFill {
    PagingFill {
        node: 0,
        offset,
        bytes,
        pattern,
    }
}

/// HWS off: these cases exercise the software scheduler's reset (`DxgkDdiResetEngine`,
/// `LastAbortedFenceId`), which Windows uses only on nodes it schedules itself; with HWS on, a
/// node resets through `DxgkDdiResetHwEngine` (docs/hws.md §3).
pub(super) fn software_scheduled(c: &mut SessionConfig) {
    c.hwsch_feature = false;
}

/// A step-mode session with TDR on (`t`).
pub(super) fn tdr_session(
    b: &dyn Backend,
    t: TdrTimeouts,
    tweak: impl FnOnce(&mut SessionConfig),
) -> Result<Box<dyn Session>, CaseError> {
    let mut s = session(b, ExecMode::Step, tweak)?;
    s.tdr()?.enable_tdr(0, t)?;
    Ok(s)
}

/// Runs until `done` holds (within `budget`), or fails naming `what` with the TDR steps.
pub(super) fn until(
    s: &mut dyn Session,
    budget: Duration,
    what: &str,
    done: impl Fn(&dyn Session) -> bool,
) -> CaseResult {
    let held = s.run_until(budget, &mut |s| done(s))?;
    ensure!(
        held,
        "{what}: not reached; TDR steps {:?}",
        steps_or_none(s)
    );
    Ok(())
}

/// The engine's probe once it has no work, or `None` where the backend has no probe.
/// A wait ends when the last packet's fence write lands, and COMPLETED_COMMANDS counts that
/// packet just after its effects: reading the counter right after a wait can miss it.
pub(super) fn settled_probe(
    s: &mut dyn Session,
    node: u32,
) -> Result<Option<EngineProbe>, CaseError> {
    if observe(s.tdr_trace_ref().and_then(|x| x.engine_probe(0, node)))?.is_none() {
        return Ok(None);
    }
    until(s, STEP, "engine idle", |s| {
        s.tdr_trace_ref()
            .and_then(|t| t.engine_probe(0, node))
            .is_ok_and(|e| !e.has_work)
    })?;
    Ok(observe(
        s.tdr_trace_ref().and_then(|x| x.engine_probe(0, node)),
    )?)
}

pub(super) fn steps_or_none(s: &dyn Session) -> Vec<TdrStep> {
    s.tdr_trace_ref()
        .and_then(|t| t.tdr_steps(0))
        .unwrap_or_default()
}

pub(super) fn resets(s: &dyn Session) -> u64 {
    s.tdr_trace_ref()
        .and_then(|t| t.tdr_recoveries(0))
        .map_or(0, |r| r.0)
}

pub(super) fn adapter_resets(s: &dyn Session) -> u64 {
    s.tdr_trace_ref()
        .and_then(|t| t.tdr_recoveries(0))
        .map_or(0, |r| r.1)
}

pub(super) fn all_done(s: &dyn Session, node: u32) -> bool {
    s.tdr_trace_ref()
        .and_then(|t| t.dma_fences(0, node))
        .is_ok_and(|(sub, c)| sub == c)
}

pub(super) fn errored(ev: &[TdrStep], p: ProcessRef) -> bool {
    ev.iter()
        .any(|e| matches!(e, TdrStep::DeviceError { process, .. } if *process == Some(p)))
}

/// The guilty queue is unusable after the reset: its submission is refused or it is lost.
pub(super) fn guilty_refused(
    s: &mut dyn Session,
    q: UmQueueRef,
    b: BufferRef,
    what: &str,
) -> CaseResult {
    let r = s.ums()?.submit(q, &[fill(b, 0, 0xBAD)]);
    let lost = s.ums_ref()?.queue_info(q)?.lost;
    ensure!(
        r.is_err() || lost,
        "{what}: the guilty queue still submits after the reset ({r:?})"
    );
    Ok(())
}

/// A process on adapter 0 with a kernel-mode context on node 0.
pub(super) fn process_with_context(
    s: &mut dyn Session,
) -> Result<(ProcessRef, ContextRef), Failure> {
    let p = s.ums()?.open_process(0)?;
    Ok((p, s.dma_contexts()?.create_context(p, 0)?))
}

/// Fails naming `what` unless node 0's fence IDs are both `want`: the OS's submitted and
/// completed (S, C) and the KMD's current fence.
pub(super) fn expect_fences(s: &mut dyn Session, want: u32, what: &str) -> CaseResult {
    let os = s.tdr_trace_ref()?.dma_fences(0, 0)?;
    let kmd = s.direct_ddi()?.current_fence(0, 0)?;
    ensure!(
        os == (want, want) && kmd == want,
        "{what}: OS (S, C) {os:?}, KMD C {kmd}; expected both {want}"
    );
    Ok(())
}

pub(super) fn expect_0x119_a(s: &mut dyn Session, c: u64, la: u64, what: &str) -> CaseResult {
    let r = s.run_until(STEP, &mut |_| false);
    let bc = s.bug_checks_ref()?.bugcheck().ok_or_else(|| {
        CaseError::Fail(format!(
            "{what}: no bug check (run ended {r:?}); steps {:?}",
            steps_or_none(s)
        ))
    })?;
    ensure!(
        bc.code == VIDEO_SCHEDULER_INTERNAL_ERROR
            && bc.params == [REPORTED_INVALID_ABORTED_FENCE, la, c, 0],
        "{what}: {bc}, expected 0x119 (0xa, {la:#x}, {c:#x}, 0)"
    );
    // The halted machine refuses everything with the same bug check.
    match s.kmd_caps()?.driver_caps(0) {
        Err(Failure::BugCheck(b)) if b.code == VIDEO_SCHEDULER_INTERNAL_ERROR => Ok(()),
        other => Err(CaseError::Fail(format!(
            "{what}: a query after the bug check returned {other:?}"
        ))),
    }
}
