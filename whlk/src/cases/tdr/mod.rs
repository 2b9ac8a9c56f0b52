//! `Tdr.*`: timeout detection and recovery (TDR-01 … TDR-09, UM-10; docs/tdr.md),
//! one case per requirement, named after it, through the real KMD, the simulated VidSch/VidMm
//! and the emulated GPU.
//!
//! What a Windows backend could run through D3DKMT (its own TDR is always on): submit work,
//! hang an engine with a HANG packet, observe that the guilty device's queues are refused
//! and that other work completes (`Tdr.ComputeHangCopyRuns`, `Tdr.GuiltyDeviceAborted`,
//! `Tdr.UserModeTrafficSurvives` leave out the simulation-only observations there). Every
//! other case injects faults into the device or the OS, calls a TDR DDI directly or reads the
//! OS's fence IDs and recovery steps: simulation only, skipped elsewhere.

use std::time::Duration;

use crate::backend::{
    Backend, BufferRef, Capability, ContextRef, DoorbellStatus, EngineProbe, ExecMode, Failure,
    Misbehaviour, OsEvent, ProcessRef, Session, SessionConfig, StreamLane, SubmitPath, TdrCause,
    TdrStep, TdrTimeouts, UmQueueRef, Work,
};
use crate::case::{Case, CaseError, CaseResult};
use crate::ensure;

use super::common::{fill, no_fault, observe, pos, session, wait};

/// 0x119 `VIDEO_SCHEDULER_INTERNAL_ERROR`.
const VIDEO_SCHEDULER_INTERNAL_ERROR: u32 = 0x119;
/// Its subtype "the driver reported an invalid aborted fence".
const REPORTED_INVALID_ABORTED_FENCE: u64 = 0xA;
/// `VIDEO_TDR_TIMEOUT_DETECTED`.
const VIDEO_TDR_TIMEOUT_DETECTED: u32 = 0x117;
/// `VIDEO_ENGINE_TIMEOUT_DETECTED`.
const VIDEO_ENGINE_TIMEOUT_DETECTED: u32 = 0x141;
/// `STATUS_DEVICE_REMOVED`.
const STATUS_DEVICE_REMOVED: i32 = 0xC000_02B6_u32 as i32;
/// Reasons (docs/tdr.md; only 9 is Windows' documented value).
const REASON_ENGINE_TIMEOUT: u32 = 1;
const REASON_PROMOTED: u32 = 9;
/// Step-mode budget of one wait (20 000 rounds).
const STEP: Duration = Duration::from_millis(200);
const BUF: u64 = 4096;

/// The cases of this area.
pub const CASES: &[Case] = &[
    Case {
        name: "Tdr.PerEngineCaps",
        requirements: &["TDR-01"],
        summary: "SupportPerEngineTDR set with PER_ENGINE_RESET, clear without; a table without \
                  DxgkDdiResetEngine that claims it is refused at start",
        needs: &[
            Capability::FaultInjection,
            Capability::ConfiguredMachine,
            Capability::KmdCaps,
        ],
        optional: &[],
        run: per_engine_caps,
    },
    Case {
        name: "Tdr.CollectDbgInfoLevelZero",
        requirements: &["TDR-01"],
        summary: "threaded: CollectDbgInfo(0x141) in a loop beside QueryAdapterInfo while a \
                  HANG is detected and reset; no deadlock, bounded non-empty text",
        needs: &[
            Capability::Tdr,
            Capability::TdrTrace,
            Capability::DirectDdi,
            Capability::ConfiguredMachine,
        ],
        optional: &[Capability::BugChecks],
        run: collect_dbg_info_level_zero,
    },
    Case {
        name: "Tdr.NodesAndAffinity",
        requirements: &["TDR-02"],
        summary: "1, 2 and 16 engines: one node each, dependent group 1 << n, a context and a \
                  DMA buffer run on every node",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::TdrTrace,
            Capability::DirectDdi,
            Capability::ConfiguredMachine,
            Capability::KmdCaps,
            Capability::DmaContexts,
        ],
        optional: &[Capability::BugChecks],
        run: nodes_and_affinity,
    },
    Case {
        name: "Tdr.PagingResubmitOrder",
        requirements: &["TDR-03"],
        summary: "a render hang with two paging buffers and a render buffer behind it: paging \
                  resubmitted first with their IDs, in order; the render buffer gets an ID > S",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::TdrTrace,
            Capability::ConfiguredMachine,
            Capability::DmaContexts,
            Capability::Paging,
        ],
        optional: &[Capability::BugChecks],
        run: paging_resubmit_order,
    },
    Case {
        name: "Tdr.LastCompletedFence",
        requirements: &["TDR-04"],
        summary: "C advances only on completion; DmaPreempted carries C; C = LastAborted after \
                  an engine reset, C = S after an adapter reset, in the OS and the KMD",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::TdrTrace,
            Capability::FaultInjection,
            Capability::DirectDdi,
            Capability::ConfiguredMachine,
            Capability::DmaContexts,
        ],
        optional: &[Capability::BugChecks],
        run: last_completed_fence,
    },
    Case {
        name: "Tdr.ResetSequence",
        requirements: &["TDR-05"],
        summary: "nothing in flight: no ResetEngine; a HANG: detect, preempt, timeout, \
                  CollectDbgInfo, snapshot, DPC flush, group, status, ResetEngine, recover, \
                  device error, in that order; the node runs new work",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::TdrTrace,
            Capability::FaultInjection,
            Capability::ConfiguredMachine,
            Capability::DmaContexts,
        ],
        optional: &[Capability::BugChecks],
        run: reset_sequence,
    },
    Case {
        name: "Tdr.AbortedFenceInRange",
        requirements: &["TDR-06"],
        summary: "every ResetEngine's LastAbortedFenceId lies in the snapshot's [C, S]: the \
                  hung DMA buffer's ID, then C for a hardware-queue hang (context invalidated)",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::TdrTrace,
            Capability::ConfiguredMachine,
            Capability::DmaContexts,
        ],
        optional: &[Capability::BugChecks],
        run: aborted_fence_in_range,
    },
    Case {
        name: "Simulation.BugcheckOnBadAbortedFence",
        requirements: &["TDR-06"],
        summary: "a ResetEngine reporting S + 1, then C - 1, halts with 0x119 (0xA, \
                  LastAborted, C, node)",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::TdrTrace,
            Capability::FaultInjection,
            Capability::BugChecks,
            Capability::ConfiguredMachine,
            Capability::KmdCaps,
            Capability::DmaContexts,
        ],
        optional: &[],
        run: bugcheck_on_bad_aborted_fence,
    },
    Case {
        name: "Tdr.CompletedBeforeReset",
        requirements: &["TDR-07"],
        summary: "the long FILL completes between snapshot and ResetEngine: LastAborted = S, \
                  its interrupt ignored, its device still in error",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::TdrTrace,
            Capability::FaultInjection,
            Capability::ConfiguredMachine,
            Capability::DmaContexts,
        ],
        optional: &[Capability::BugChecks],
        run: completed_before_reset,
    },
    Case {
        name: "Tdr.PagingPromotesAdapterReset",
        requirements: &["TDR-08", "TDR-09"],
        summary: "a hang mid paging FILL: adapter reset with reason 9, the paged allocation's \
                  owner in error, an idle process pages in and runs new work",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::TdrTrace,
            Capability::FaultInjection,
            Capability::ConfiguredMachine,
            Capability::DmaContexts,
            Capability::Paging,
        ],
        optional: &[Capability::BugChecks],
        run: paging_promotes_adapter_reset,
    },
    Case {
        name: "Tdr.ResetFailsPromoted",
        requirements: &["TDR-09"],
        summary: "ResetEngine fails: ResetFromTimeout, RestartFromTimeout, reason 9, C = S, \
                  both engines run; without PER_ENGINE_RESET only the adapter path (reason 2)",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::TdrTrace,
            Capability::FaultInjection,
            Capability::DirectDdi,
            Capability::ConfiguredMachine,
            Capability::DmaContexts,
        ],
        optional: &[Capability::BugChecks],
        run: reset_fails_promoted,
    },
    Case {
        name: "Tdr.ComputeHangCopyRuns",
        requirements: &["TDR-05", "UM-10"],
        summary: "a user-mode HANG on node 0: the copy queue on node 1 submits and completes \
                  through detection and reset; none lost, none twice; the guilty queue refused",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::NativeFences,
        ],
        optional: &[Capability::TdrTrace, Capability::BugChecks],
        run: compute_hang_copy_runs,
    },
    Case {
        name: "Tdr.GuiltyDeviceAborted",
        requirements: &["UM-10"],
        summary: "a user-mode HANG: the guilty device's doorbells DISCONNECTED_ABORT, its \
                  submissions refused; the other device never disconnected; a new process works",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::NativeFences,
        ],
        optional: &[
            Capability::TdrTrace,
            Capability::OsTrace,
            Capability::BugChecks,
        ],
        run: guilty_device_aborted,
    },
    Case {
        name: "Tdr.UserModeTrafficSurvives",
        requirements: &["UM-10", "TDR-05"],
        summary: "threaded: 4 processes x 2 engines submit continuously while a fifth hangs \
                  node 0; every innocent batch runs exactly once, traffic continues past the reset",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::NativeFences,
        ],
        optional: &[Capability::TdrTrace, Capability::BugChecks],
        run: user_mode_traffic_survives,
    },
];

// ---------------------------------------------------------------------------------------------
// Fixtures.

/// HWS off: these cases exercise the software scheduler's reset (`DxgkDdiResetEngine`,
/// `LastAbortedFenceId`), which Windows uses only on nodes it schedules itself; with HWS on, a
/// node resets through `DxgkDdiResetHwEngine` (docs/hws.md §3).
fn software_scheduled(c: &mut SessionConfig) {
    c.hwsch_feature = false;
}

/// A step-mode session with TDR on (`t`).
fn tdr_session(
    b: &dyn Backend,
    t: TdrTimeouts,
    tweak: impl FnOnce(&mut SessionConfig),
) -> Result<Box<dyn Session>, CaseError> {
    let mut s = session(b, ExecMode::Step, tweak)?;
    s.tdr()?.enable_tdr(0, t)?;
    Ok(s)
}

/// Runs until `done` holds (within `budget`), or fails naming `what` with the TDR steps.
fn until(
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
fn settled_probe(s: &mut dyn Session, node: u32) -> Result<Option<EngineProbe>, CaseError> {
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

fn steps_or_none(s: &dyn Session) -> Vec<TdrStep> {
    s.tdr_trace_ref()
        .and_then(|t| t.tdr_steps(0))
        .unwrap_or_default()
}

fn resets(s: &dyn Session) -> u64 {
    s.tdr_trace_ref()
        .and_then(|t| t.tdr_recoveries(0))
        .map_or(0, |r| r.0)
}

fn adapter_resets(s: &dyn Session) -> u64 {
    s.tdr_trace_ref()
        .and_then(|t| t.tdr_recoveries(0))
        .map_or(0, |r| r.1)
}

fn all_done(s: &dyn Session, node: u32) -> bool {
    s.tdr_trace_ref()
        .and_then(|t| t.dma_fences(0, node))
        .is_ok_and(|(sub, c)| sub == c)
}

fn errored(ev: &[TdrStep], p: ProcessRef) -> bool {
    ev.iter()
        .any(|e| matches!(e, TdrStep::DeviceError { process, .. } if *process == Some(p)))
}

/// The guilty queue is unusable after the reset: its submission is refused or it is lost.
fn guilty_refused(s: &mut dyn Session, q: UmQueueRef, b: BufferRef, what: &str) -> CaseResult {
    let r = s.ums()?.submit(q, &[fill(b, 0, 0xBAD)]);
    let lost = s.ums_ref()?.queue_info(q)?.lost;
    ensure!(
        r.is_err() || lost,
        "{what}: the guilty queue still submits after the reset ({r:?})"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// TDR-01, TDR-02.

fn per_engine_caps(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, |_| {})?;
    ensure!(
        s.kmd_caps()?.driver_caps(0)?.per_engine_tdr,
        "a PER_ENGINE_RESET device with the four DDIs: SupportPerEngineTDR is 0"
    );
    // Without PER_ENGINE_RESET the driver cannot claim per-engine TDR, and a Windows that
    // validates WDDM caps does not start a WDDM 1.2+ hardware adapter without it
    // (docs/windows-bringup.md BR-52).
    let mut cfg = SessionConfig::new(ExecMode::Step);
    cfg.per_engine_reset = Some(false);
    cfg.validate_wddm_caps = true;
    let mut s = b.open(&cfg)?;
    s.load_driver()?;
    match s.start_adapter(0) {
        Err(Failure::Backend(m)) if m.contains("BR-52") && m.contains("SupportPerEngineTDR") => {}
        other => ensure!(
            false,
            "a device without PER_ENGINE_RESET: expected the start refused (BR-52), got {other:?}"
        ),
    }
    drop(s);
    let mut cfg = SessionConfig::new(ExecMode::Step);
    cfg.misbehaviour = Some(Misbehaviour::NoResetEngineDdi);
    let mut s = b.open(&cfg)?;
    s.load_driver()?;
    match s.start_adapter(0) {
        Err(Failure::Backend(m)) if m.contains("DxgkDdiResetEngine") => {}
        Err(Failure::Unsupported(m)) => return Err(CaseError::Skip(m)),
        other => ensure!(
            false,
            "start with SupportPerEngineTDR and no DxgkDdiResetEngine: {other:?}"
        ),
    }
    Ok(())
}

fn collect_dbg_info_level_zero(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Threaded, software_scheduled)?;
    s.tdr()?.enable_tdr(0, TdrTimeouts::fast())?;
    for reason in [VIDEO_TDR_TIMEOUT_DETECTED, VIDEO_ENGINE_TIMEOUT_DETECTED] {
        let t = s.direct_ddi()?.collect_dbg_info(0, reason)?;
        ensure!(
            !t.is_empty() && t.len() < 4096,
            "CollectDbgInfo({reason:#x}) outside a TDR returned {} bytes",
            t.len()
        );
    }
    let r = s.direct_ddi()?.collect_dbg_info_under_reset(0, 0)?;
    ensure!(
        r.calls > 0,
        "no CollectDbgInfo call returned while the reset was pending"
    );
    ensure!(
        r.min_len > 0 && r.max_len < 4096,
        "CollectDbgInfo text of {}..{} bytes (buffer 4096)",
        r.min_len,
        r.max_len
    );
    ensure!(
        r.caps_queries == 200,
        "{} of 200 QueryAdapterInfo calls returned",
        r.caps_queries
    );
    let ev = s.tdr_trace_ref()?.tdr_steps(0)?;
    ensure!(
        ev.iter().any(|e| matches!(
            e,
            TdrStep::CollectDbgInfo { reason: VIDEO_ENGINE_TIMEOUT_DETECTED, bytes } if *bytes > 0
        )),
        "the OS's own CollectDbgInfo(0x141) of the reset is missing or empty: {ev:?}"
    );
    ensure!(
        resets(&*s) == 1,
        "resets {:?}",
        s.tdr_trace_ref()?.tdr_recoveries(0)
    );
    no_fault(&*s)
}

fn nodes_and_affinity(b: &dyn Backend) -> CaseResult {
    for engines in [1u32, 2, 16] {
        let mut s = session(b, ExecMode::Step, |c| c.engines = Some(engines))?;
        let caps = s.kmd_caps()?.driver_caps(0)?;
        ensure!(
            caps.nodes == engines,
            "{engines} engines: DRIVERCAPS reports {} nodes",
            caps.nodes
        );
        let p = s.ums()?.open_process(0)?;
        let t = s.ums()?.create_buffer(p, BUF)?;
        for n in 0..engines {
            let mask = s.direct_ddi()?.dependent_engine_group(0, n)?;
            ensure!(
                mask == 1u64 << n,
                "{engines} engines: node {n}'s dependent group {mask:#x}, expected {:#x}",
                1u64 << n
            );
            let c = s.dma_contexts()?.create_context(p, n)?;
            s.dma_contexts()?
                .submit_dma(c, &[fill(t, 8 * u64::from(n), 0x100 + u64::from(n))])?;
        }
        let nodes = engines;
        until(&mut *s, STEP, "DMA buffers on every node", |s| {
            (0..nodes).all(|n| all_done(s, n))
        })?;
        for n in 0..engines {
            let got = s.ums_ref()?.read_buffer(t, 8 * u64::from(n))?;
            ensure!(
                got == 0x100 + u64::from(n),
                "{engines} engines: node {n}'s DMA buffer did not run ({got:#x})"
            );
        }
        no_fault(&*s)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// TDR-03 … TDR-05.

fn paging_resubmit_order(b: &dyn Backend) -> CaseResult {
    let mut s = tdr_session(b, TdrTimeouts::fast(), software_scheduled)?;
    let (a, pb, c) = (
        s.ums()?.open_process(0)?,
        s.ums()?.open_process(0)?,
        s.ums()?.open_process(0)?,
    );
    let ca = s.dma_contexts()?.create_context(a, 0)?;
    let cc = s.dma_contexts()?.create_context(c, 0)?;
    let tb = s.ums()?.create_buffer(pb, 8192)?;
    let tc = s.ums()?.create_buffer(c, BUF)?;
    let hang = s.dma_contexts()?.submit_dma(ca, &[Work::Hang])?;
    let p1 = s.paging()?.page_in(tb, 0, 0, 4096, 0x11)?;
    let p2 = s.paging()?.page_in(tb, 0, 4096, 4096, 0x22)?;
    let r = s.dma_contexts()?.submit_dma(cc, &[fill(tc, 0, 0x33)])?;
    ensure!(
        p1.len() == 1 && p2.len() == 1,
        "one paging buffer per page-in expected: {p1:?} {p2:?}"
    );
    let (p1, p2) = (p1[0], p2[0]);
    ensure!(
        (p1, p2, r) == (hang + 1, hang + 2, hang + 3),
        "fence IDs {hang}, {p1}, {p2}, {r}: not consecutive"
    );
    until(&mut *s, STEP, "reset and resubmission", |s| {
        resets(s) == 1 && all_done(s, 0)
    })?;
    let ev = s.tdr_trace_ref()?.tdr_steps(0)?;
    let resub: Vec<(u32, u32, bool)> = ev
        .iter()
        .filter_map(|e| match e {
            TdrStep::Resubmitted {
                old, new, paging, ..
            } => Some((*old, *new, *paging)),
            _ => None,
        })
        .collect();
    ensure!(resub.len() == 3, "3 resubmissions expected: {ev:?}");
    ensure!(
        resub[0] == (p1, p1, true) && resub[1] == (p2, p2, true),
        "paging buffers first, original IDs, in order: {resub:?}"
    );
    ensure!(
        resub[2].0 == r && !resub[2].2 && resub[2].1 > r,
        "the render buffer last with a new ID > S ({r}): {resub:?}"
    );
    let done: Vec<u32> = s
        .tdr_trace_ref()?
        .retired_fences(0)?
        .into_iter()
        .filter(|(n, id)| *n == 0 && *id > hang)
        .map(|(_, id)| id)
        .collect();
    ensure!(
        done == [p1, p2, resub[2].1],
        "retired after the hang: {done:?}, expected [{p1}, {p2}, {}] (each once, in order)",
        resub[2].1
    );
    for (off, want) in [(0, 0x11_0000_0011u64), (4096, 0x22_0000_0022)] {
        let got = s.ums_ref()?.read_buffer(tb, off)?;
        ensure!(got == want, "paged-in memory at {off}: {got:#x}");
    }
    ensure!(
        s.ums_ref()?.read_buffer(tc, 0)? == 0x33,
        "the resubmitted render buffer did not run"
    );
    no_fault(&*s)
}

fn last_completed_fence(b: &dyn Backend) -> CaseResult {
    // A slow, not hung, DMA buffer is preempted, not reset: DmaPreempted carries C.
    let mut s = tdr_session(
        b,
        TdrTimeouts {
            timeout_steps: 2,
            preempt_steps: 100_000,
            ..TdrTimeouts::fast()
        },
        software_scheduled,
    )?;
    let (p, ctx) = process_with_context(&mut *s)?;
    let t = s.ums()?.create_buffer(p, BUF)?;
    let big = s.ums()?.create_buffer(p, 1 << 20)?;
    let f1 = s.dma_contexts()?.submit_dma(ctx, &[fill(t, 0, 1)])?;
    let before = s.tdr_trace_ref()?.dma_fences(0, 0)?;
    ensure!(
        before == (f1, 0),
        "before it ran: (S, C) = {before:?}, expected ({f1}, 0)"
    );
    until(&mut *s, STEP, "first DMA buffer", |s| all_done(s, 0))?;
    ensure!(
        s.tdr_trace_ref()?.dma_fences(0, 0)? == (f1, f1),
        "C did not reach {f1}"
    );
    ensure!(
        s.direct_ddi()?.current_fence(0, 0)? == f1,
        "the KMD's current fence is not {f1}"
    );
    let f2 = s.dma_contexts()?.submit_dma(
        ctx,
        &[Work::Fill {
            dst: big,
            offset: 0,
            bytes: 1 << 20,
            pattern: 5,
        }],
    )?;
    until(&mut *s, STEP, "slow DMA buffer", |s| all_done(s, 0))?;
    let ev = s.tdr_trace_ref()?.tdr_steps(0)?;
    let pre = ev.iter().rev().find_map(|e| match e {
        TdrStep::Preempted { last_completed, .. } => Some(*last_completed),
        _ => None,
    });
    ensure!(
        pre == Some(f2),
        "DmaPreempted after the drain carries {pre:?}, expected C = {f2}: {ev:?}"
    );
    ensure!(resets(&*s) == 0, "a slow buffer was reset");
    drop(s);
    // Engine reset: C = LastAborted; adapter reset: C = S.
    let mut s = tdr_session(b, TdrTimeouts::fast(), software_scheduled)?;
    let (_, ctx) = process_with_context(&mut *s)?;
    let hang = s.dma_contexts()?.submit_dma(ctx, &[Work::Hang])?;
    until(&mut *s, STEP, "engine reset", |s| resets(s) == 1)?;
    let la = s
        .tdr_trace_ref()?
        .tdr_steps(0)?
        .iter()
        .find_map(|e| match e {
            TdrStep::ResetEngine { last_aborted, .. } => Some(*last_aborted),
            _ => None,
        });
    ensure!(la == Some(hang), "LastAborted {la:?}, expected {hang}");
    expect_fences(&mut *s, hang, "after the engine reset (C = LastAborted)")?;
    let (q, cq) = process_with_context(&mut *s)?;
    let t = s.ums()?.create_buffer(q, BUF)?;
    s.faults()?.fail_next_reset(0, 0)?;
    let f = s.dma_contexts()?.submit_dma(cq, &[fill(t, 0, 1)])?;
    let h2 = s.dma_contexts()?.submit_dma(cq, &[Work::Hang])?;
    until(&mut *s, STEP, "adapter reset", |s| adapter_resets(s) == 1)?;
    ensure!(
        s.tdr_trace_ref()?.retired_fences(0)?.contains(&(0, f)),
        "{f} completed before the hang but was not retired"
    );
    expect_fences(&mut *s, h2, "after the adapter reset (C = S)")?;
    no_fault(&*s)
}

fn reset_sequence(b: &dyn Backend) -> CaseResult {
    let mut s = tdr_session(b, TdrTimeouts::fast(), software_scheduled)?;
    let (p, ctx) = process_with_context(&mut *s)?;
    let t = s.ums()?.create_buffer(p, BUF)?;
    let f1 = s.dma_contexts()?.submit_dma(ctx, &[fill(t, 0, 7)])?;
    until(&mut *s, STEP, "first fill", |s| all_done(s, 0))?;
    // Nothing in flight: the sequence stops after the snapshot.
    s.faults()?.force_tdr(0, 0)?;
    let ev = s.tdr_trace_ref()?.tdr_steps(0)?;
    ensure!(
        ev.contains(&TdrStep::NothingToReset { node: 0 })
            && !ev.iter().any(|e| matches!(e, TdrStep::ResetEngine { .. }))
            && resets(&*s) == 0,
        "forced TDR with nothing in flight reset the engine: {ev:?}"
    );
    let mark = ev.len();
    let hang = s.dma_contexts()?.submit_dma(ctx, &[Work::Hang])?;
    ensure!(hang == f1 + 1, "hang fence {hang}, expected {}", f1 + 1);
    until(&mut *s, STEP, "engine reset", |s| resets(s) == 1)?;
    let ev: Vec<TdrStep> = s
        .tdr_trace_ref()?
        .tdr_steps(0)?
        .into_iter()
        .skip(mark)
        .collect();
    let order = [
        pos(&ev, |e| matches!(e, TdrStep::Detected { node: 0, .. })),
        pos(&ev, |e| {
            matches!(e, TdrStep::PreemptRequested { node: 0, .. })
        }),
        pos(&ev, |e| matches!(e, TdrStep::Timeout { node: 0 })),
        pos(&ev, |e| {
            matches!(
                e,
                TdrStep::CollectDbgInfo {
                    reason: VIDEO_ENGINE_TIMEOUT_DETECTED,
                    ..
                }
            )
        }),
        pos(&ev, |e| {
            *e == TdrStep::Snapshot {
                node: 0,
                submitted: hang,
                completed: f1,
            }
        }),
        pos(&ev, |e| matches!(e, TdrStep::DpcFlushed { node: 0 })),
        pos(&ev, |e| *e == TdrStep::DependentGroup { node: 0, mask: 1 }),
        pos(&ev, |e| matches!(e, TdrStep::EngineStatus { node: 0, .. })),
        pos(&ev, |e| {
            *e == TdrStep::ResetEngine {
                node: 0,
                status: 0,
                last_aborted: hang,
            }
        }),
        pos(&ev, |e| {
            *e == TdrStep::Aborted {
                node: 0,
                fence: hang,
                paging: false,
            }
        }),
        pos(&ev, |e| matches!(e, TdrStep::Recovered { node: 0 })),
        pos(
            &ev,
            |e| matches!(e, TdrStep::DeviceError { process, .. } if *process == Some(p)),
        ),
    ];
    ensure!(
        order.iter().all(Option::is_some) && order.windows(2).all(|w| w[0] < w[1]),
        "detect < preempt < timeout < CollectDbgInfo < snapshot < DPC flush < group < status < \
         ResetEngine < aborted < recovered < device error expected, got {order:?}: {ev:?}"
    );
    ensure!(
        !ev.iter().any(|e| matches!(e, TdrStep::Preempted { .. })),
        "a HANG was preempted: {ev:?}"
    );
    let reason = s.tdr_trace_ref()?.tdr_reason(0)?;
    ensure!(
        reason == Some(REASON_ENGINE_TIMEOUT),
        "reason {reason:?}, expected engine timeout"
    );
    // The errored device submits nothing more; another process runs on the node.
    match s.dma_contexts()?.submit_dma(ctx, &[fill(t, 0, 8)]) {
        Err(Failure::DdiFailed(STATUS_DEVICE_REMOVED)) => {}
        other => ensure!(
            false,
            "the guilty device's submission returned {other:?}, expected DEVICE_REMOVED"
        ),
    }
    let (q, cq) = process_with_context(&mut *s)?;
    let tq = s.ums()?.create_buffer(q, BUF)?;
    let id = s.dma_contexts()?.submit_dma(cq, &[fill(tq, 0, 9)])?;
    ensure!(id > hang, "new fence ID {id} not above {hang}");
    until(&mut *s, STEP, "new work", |s| all_done(s, 0))?;
    ensure!(
        s.ums_ref()?.read_buffer(tq, 0)? == 9,
        "new work after the reset did not run"
    );
    ensure!(
        s.ums_ref()?.read_buffer(t, 0)? == 7,
        "the refused submission of the guilty device ran"
    );
    no_fault(&*s)
}

// ---------------------------------------------------------------------------------------------
// TDR-06, TDR-07.

fn aborted_fence_in_range(b: &dyn Backend) -> CaseResult {
    let mut s = tdr_session(b, TdrTimeouts::fast(), software_scheduled)?;
    let (p, ctx) = process_with_context(&mut *s)?;
    let t = s.ums()?.create_buffer(p, BUF)?;
    let f1 = s.dma_contexts()?.submit_dma(ctx, &[fill(t, 0, 1)])?;
    until(&mut *s, STEP, "fill", |s| all_done(s, 0))?;
    // Row 1: the node ring's DMA buffer hangs: LastAborted = its ID.
    let hang = s.dma_contexts()?.submit_dma(ctx, &[Work::Hang])?;
    until(&mut *s, STEP, "first reset", |s| resets(s) == 1)?;
    // (Row 2, a hardware queue hanging with nothing of the node ring in flight, left with
    // hardware queues for the HWS path, which has no LastAbortedFenceId: docs/hws.md §3.)
    let ev = s.tdr_trace_ref()?.tdr_steps(0)?;
    let mut snap = None;
    let mut seen = Vec::new();
    for e in &ev {
        match e {
            TdrStep::Snapshot {
                submitted,
                completed,
                ..
            } => snap = Some((*completed, *submitted)),
            TdrStep::ResetEngine { last_aborted, .. } => {
                let (c, sub) = snap.ok_or_else(|| {
                    CaseError::Fail(format!("ResetEngine without a snapshot: {ev:?}"))
                })?;
                ensure!(
                    (c..=sub).contains(last_aborted),
                    "LastAbortedFenceId {last_aborted} outside [C, S] = [{c}, {sub}]"
                );
                seen.push(*last_aborted);
            }
            _ => {}
        }
    }
    ensure!(
        seen == [hang],
        "LastAbortedFenceId {seen:?}: expected the hung buffer's ID {hang} (f1 = {f1})"
    );
    ensure!(
        errored(&ev, p),
        "the guilty device in error expected: {ev:?}"
    );
    ensure!(
        s.tdr_trace_ref()?.dma_fences(0, 0)? == (hang, hang),
        "(S, C) {:?}",
        s.tdr_trace_ref()?.dma_fences(0, 0)?
    );
    no_fault(&*s)
}

/// A process on adapter 0 with a kernel-mode context on node 0.
fn process_with_context(s: &mut dyn Session) -> Result<(ProcessRef, ContextRef), Failure> {
    let p = s.ums()?.open_process(0)?;
    Ok((p, s.dma_contexts()?.create_context(p, 0)?))
}

/// Fails naming `what` unless node 0's fence IDs are both `want`: the OS's submitted and
/// completed (S, C) and the KMD's current fence.
fn expect_fences(s: &mut dyn Session, want: u32, what: &str) -> CaseResult {
    let os = s.tdr_trace_ref()?.dma_fences(0, 0)?;
    let kmd = s.direct_ddi()?.current_fence(0, 0)?;
    ensure!(
        os == (want, want) && kmd == want,
        "{what}: OS (S, C) {os:?}, KMD C {kmd}; expected both {want}"
    );
    Ok(())
}

fn expect_0x119_a(s: &mut dyn Session, c: u64, la: u64, what: &str) -> CaseResult {
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

fn bugcheck_on_bad_aborted_fence(b: &dyn Backend) -> CaseResult {
    // S + 1 after a hang of the last DMA buffer (LastAborted would be S).
    let mut s = session(b, ExecMode::Step, |c| {
        software_scheduled(c);
        c.misbehaviour = Some(Misbehaviour::ResetEngineMisreportsAbortedFence(1));
    })?;
    s.tdr()?.enable_tdr(0, TdrTimeouts::fast())?;
    let (_, ctx) = process_with_context(&mut *s)?;
    let hang = s.dma_contexts()?.submit_dma(ctx, &[Work::Hang])?;
    expect_0x119_a(&mut *s, 0, u64::from(hang) + 1, "S + 1")?;
    // (The C - 1 form needed a hardware-queue hang on the software-scheduled path; hardware
    // queues reset through DxgkDdiResetHwEngine now, which carries no fence ID.)
    Ok(())
}

fn completed_before_reset(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, software_scheduled)?;
    // Set up before the two-step timeout is armed: the OS's paging (mapping the buffer, and
    // the process's DMA buffers at its first submission) takes longer than that.
    let (p, ctx) = process_with_context(&mut *s)?;
    let big = s.ums()?.create_buffer(p, 4 << 20)?;
    let warm = s.dma_contexts()?.submit_dma(
        ctx,
        &[Work::Fill {
            dst: big,
            offset: 0,
            bytes: 8,
            pattern: 0,
        }],
    )?;
    until(&mut *s, STEP, "warm-up", |s| all_done(s, 0))?;
    s.tdr()?.enable_tdr(
        0,
        TdrTimeouts {
            timeout_steps: 2,
            preempt_steps: 1,
            ..TdrTimeouts::fast()
        },
    )?;
    s.faults()?.complete_before_reset(0, 0)?;
    let id = s.dma_contexts()?.submit_dma(
        ctx,
        &[Work::Fill {
            dst: big,
            offset: 0,
            bytes: 4 << 20,
            pattern: 0x77,
        }],
    )?;
    until(&mut *s, STEP, "reset", |s| resets(s) == 1)?;
    let ev = s.tdr_trace_ref()?.tdr_steps(0)?;
    ensure!(
        ev.contains(&TdrStep::Paused { node: 0 }),
        "the pause hook did not run: {ev:?}"
    );
    ensure!(
        ev.contains(&TdrStep::Snapshot {
            node: 0,
            submitted: id,
            completed: warm
        }),
        "snapshot (S, C) = ({id}, {warm}) expected: {ev:?}"
    );
    ensure!(
        ev.contains(&TdrStep::ResetEngine {
            node: 0,
            status: 0,
            last_aborted: id
        }),
        "ResetEngine with nothing executing must report LastAborted = S = {id}: {ev:?}"
    );
    ensure!(
        ev.contains(&TdrStep::IgnoredInterrupt { node: 0, fence: id }),
        "the completion between snapshot and reset was not ignored: {ev:?}"
    );
    ensure!(
        errored(&ev, p),
        "the device of the completed-but-aborted buffer is not in error: {ev:?}"
    );
    ensure!(
        s.ums_ref()?.read_buffer(big, (4 << 20) - 8)? == 0x77,
        "the FILL did not complete"
    );
    ensure!(
        s.tdr_trace_ref()?.dma_fences(0, 0)? == (id, id),
        "(S, C) {:?}",
        s.tdr_trace_ref()?.dma_fences(0, 0)?
    );
    s.run_until(Duration::from_micros(500), &mut |_| false)?;
    // The two-step budget only served to land the completion between snapshot and reset. The
    // process's teardown then pages its 4 MiB buffer out, which no two-step budget can hold:
    // every timeout would reset the paging node and resubmit the same packet. A tester
    // restores TdrDelay after such a run; the case restores its usual budget.
    s.tdr()?.enable_tdr(0, TdrTimeouts::fast())?;
    no_fault(&*s)
}

// ---------------------------------------------------------------------------------------------
// TDR-08, TDR-09.

fn paging_promotes_adapter_reset(b: &dyn Backend) -> CaseResult {
    let mut s = tdr_session(b, TdrTimeouts::fast(), software_scheduled)?;
    let owner = s.ums()?.open_process(0)?;
    let idle = s.ums()?.open_process(0)?;
    let big = s.ums()?.create_buffer(owner, 4 << 20)?;
    let ids = s.paging()?.page_in(big, 0, 0, 4 << 20, 0x5A)?;
    ensure!(!ids.is_empty(), "the page-in submitted nothing");
    until(&mut *s, STEP, "paging FILL part-way", |s| {
        s.tdr_trace_ref()
            .and_then(|t| t.engine_probe(0, 0))
            .is_ok_and(|e| e.mid_buffer)
    })?;
    s.faults()?.inject_hang(0, 0)?;
    until(&mut *s, STEP, "adapter reset", |s| adapter_resets(s) == 1)?;
    let ev = s.tdr_trace_ref()?.tdr_steps(0)?;
    ensure!(
        ev.iter().any(|e| matches!(
            e,
            TdrStep::Aborted {
                node: 0,
                paging: true,
                ..
            }
        )),
        "no aborted paging buffer: {ev:?}"
    );
    ensure!(
        ev.contains(&TdrStep::AdapterReset {
            reason: REASON_PROMOTED
        }) && ev.contains(&TdrStep::Restarted),
        "no ResetFromTimeout (reason 9) and RestartFromTimeout: {ev:?}"
    );
    let reason = s.tdr_trace_ref()?.tdr_reason(0)?;
    ensure!(
        reason == Some(REASON_PROMOTED),
        "reason {reason:?}, expected 9"
    );
    ensure!(
        errored(&ev, owner),
        "the paged allocation's owner is not in error: {ev:?}"
    );
    ensure!(!errored(&ev, idle), "the idle process was put in error");
    ensure!(all_done(&*s, 0), "TDR-04: C != S after the adapter reset");
    // The system context (paging) and the idle process run new work.
    let ti = s.ums()?.create_buffer(idle, 8192)?;
    let ci = s.dma_contexts()?.create_context(idle, 0)?;
    s.paging()?.page_in(ti, 0, 0, 4096, 0x66)?;
    s.dma_contexts()?.submit_dma(ci, &[fill(ti, 4096, 0x67)])?;
    until(&mut *s, STEP, "new work", |s| all_done(s, 0))?;
    ensure!(
        s.ums_ref()?.read_buffer(ti, 0)? == 0x66_0000_0066
            && s.ums_ref()?.read_buffer(ti, 4096)? == 0x67,
        "new paging and render work after the adapter reset did not run"
    );
    no_fault(&*s)
}

fn reset_fails_promoted(b: &dyn Backend) -> CaseResult {
    let mut s = tdr_session(b, TdrTimeouts::fast(), software_scheduled)?;
    let (p, ctx) = process_with_context(&mut *s)?;
    s.faults()?.fail_next_reset(0, 0)?;
    let hang = s.dma_contexts()?.submit_dma(ctx, &[Work::Hang])?;
    until(&mut *s, STEP, "adapter reset", |s| adapter_resets(s) == 1)?;
    let ev = s.tdr_trace_ref()?.tdr_steps(0)?;
    let failed = pos(
        &ev,
        |e| matches!(e, TdrStep::ResetEngine { node: 0, status, .. } if *status < 0),
    );
    let reset = pos(&ev, |e| matches!(e, TdrStep::AdapterReset { .. }));
    let restart = pos(&ev, |e| *e == TdrStep::Restarted);
    ensure!(
        matches!((failed, reset, restart), (Some(a), Some(b), Some(c)) if a < b && b < c),
        "failed ResetEngine < ResetFromTimeout < RestartFromTimeout expected: {ev:?}"
    );
    let reason = s.tdr_trace_ref()?.tdr_reason(0)?;
    ensure!(
        reason == Some(REASON_PROMOTED),
        "reason {reason:?}, expected 9"
    );
    expect_fences(&mut *s, hang, "after the promoted reset (C = S)")?;
    ensure!(errored(&ev, p), "the guilty device is not in error");
    let q = s.ums()?.open_process(0)?;
    let t = s.ums()?.create_buffer(q, BUF)?;
    for node in 0..2u32 {
        let c = s.dma_contexts()?.create_context(q, node)?;
        s.dma_contexts()?
            .submit_dma(c, &[fill(t, 8 * u64::from(node), 0x90 + u64::from(node))])?;
    }
    until(&mut *s, STEP, "both engines", |s| {
        all_done(s, 0) && all_done(s, 1)
    })?;
    ensure!(
        (
            s.ums_ref()?.read_buffer(t, 0)?,
            s.ums_ref()?.read_buffer(t, 8)?
        ) == (0x90, 0x91),
        "new work on both engines after the adapter reset did not run"
    );
    // (A device without per-engine reset at all is refused at start: Tdr.PerEngineCaps.)
    no_fault(&*s)
}

// ---------------------------------------------------------------------------------------------
// Other engines and other processes keep running (UM-10).

fn compute_hang_copy_runs(b: &dyn Backend) -> CaseResult {
    const MAX: u64 = 4000;
    let mut s = tdr_session(b, TdrTimeouts::fast(), |_| {})?;
    let h = s.ums()?.open_process(0)?;
    let c = s.ums()?.open_process(0)?;
    let t = s.ums()?.create_buffer(c, 8 * MAX)?;
    let th = s.ums()?.create_buffer(h, BUF)?;
    let copy = s.ums()?.create_queue(c, 1, SubmitPath::UserMode)?;
    // Made before the count starts: mapping its ring is paging work on the copy node.
    let hq = s.ums()?.create_queue(h, 0, SubmitPath::UserMode)?;
    // Commands per one-FILL submission on the copy node (calibration).
    let before = observe(s.tdr_trace_ref().and_then(|x| x.engine_probe(0, 1)))?;
    let v = s.ums()?.submit(copy, &[fill(t, 0, 0)])?;
    wait(&mut *s, copy, v, "calibration")?;
    let after = settled_probe(&mut *s, 1)?;
    let per = before
        .zip(after)
        .map(|(a, z)| z.completed_commands - a.completed_commands);
    let base = observe(s.tdr_trace_ref().and_then(|x| x.engine_probe(0, 1)))?;
    s.ums()?.submit(hq, &[Work::Hang])?;
    let (mut n, mut during) = (0u64, 0u64);
    loop {
        let v = s.ums()?.submit(copy, &[fill(t, 8 * n, n + 1)])?;
        ensure!(v == n + 2, "copy submission {n} got progress value {v}");
        n += 1;
        // A submission counts as made during detection and reset if the recovery was not
        // complete after it returned (checked after the submission, so that a host that
        // deschedules this thread for longer than detection takes cannot make the first
        // submissions look late; threaded backends run the device in real time).
        let rec = observe(s.tdr_trace_ref().and_then(|x| x.tdr_recoveries(0)))?;
        let recovered = rec.is_some_and(|r| r.0 > 0);
        if !recovered {
            during = n;
        }
        // Twenty more after the recovery (without a recovery counter: a fixed 400).
        let enough = match rec {
            Some(_) => recovered && n >= during + 20,
            None => n >= 400,
        };
        if enough || n >= MAX {
            break;
        }
        s.run_until(Duration::from_micros(10), &mut |_| false)?;
    }
    ensure!(n < MAX, "no recovery within {MAX} copy submissions");
    wait(&mut *s, copy, n + 1, "copy queue drained")?;
    for i in 0..n {
        let got = s.ums_ref()?.read_buffer(t, 8 * i)?;
        ensure!(
            got == i + 1,
            "copy marker {i} reads {got:#x}: a submission was lost or ran late"
        );
    }
    if let (Some(per), Some(base), Some(now)) = (per, base, settled_probe(&mut *s, 1)?) {
        let done = now.completed_commands - base.completed_commands;
        ensure!(
            done == per * n,
            "copy engine completed {done} commands for {n} submissions of {per}: lost or repeated"
        );
    }
    if let Some(ev) = observe(s.tdr_trace_ref().and_then(|x| x.tdr_steps(0)))? {
        ensure!(
            ev.iter().any(|e| matches!(
                e,
                TdrStep::Detected {
                    node: 0,
                    cause: TdrCause::EngineHung | TdrCause::QueueStalled
                }
            )),
            "the hang was not detected on node 0: {ev:?}"
        );
        ensure!(!errored(&ev, c), "the copy process was put in error");
        ensure!(during > 0, "no copy submission during detection and reset");
    }
    guilty_refused(&mut *s, hq, th, "compute hang")?;
    no_fault(&*s)
}

fn guilty_device_aborted(b: &dyn Backend) -> CaseResult {
    let mut s = tdr_session(b, TdrTimeouts::fast(), |c| c.min_doorbells = Some(8))?;
    let h = s.ums()?.open_process(0)?;
    let o = s.ums()?.open_process(0)?;
    let to = s.ums()?.create_buffer(o, BUF)?;
    let th = s.ums()?.create_buffer(h, BUF)?;
    let oq0 = s.ums()?.create_queue(o, 0, SubmitPath::UserMode)?;
    let oq1 = s.ums()?.create_queue(o, 1, SubmitPath::UserMode)?;
    let hq = s.ums()?.create_queue(h, 0, SubmitPath::UserMode)?;
    let hq1 = s.ums()?.create_queue(h, 1, SubmitPath::UserMode)?;
    let v = s.ums()?.submit(hq1, &[fill(th, 8, 1)])?;
    wait(&mut *s, hq1, v, "guilty process warm-up")?;
    let v = s.ums()?.submit(oq0, &[fill(to, 0, 1)])?;
    wait(&mut *s, oq0, v, "other process warm-up")?;
    let mark = observe(s.os_trace_ref().and_then(|x| x.os_events(0)))?.map(|e| e.len());
    s.ums()?.submit(hq, &[Work::Hang])?;
    let v = s.ums()?.submit(oq1, &[fill(to, 8, 2)])?;
    wait(&mut *s, oq1, v, "the other process during the hang")?;
    // Recovered once the guilty device's doorbells are aborted.
    until(&mut *s, STEP, "guilty doorbells aborted", |s| {
        s.ums_ref().and_then(|u| u.doorbell_status(hq)) == Ok(DoorbellStatus::DisconnectedAbort)
    })?;
    for q in [hq, hq1] {
        let st = s.ums_ref()?.doorbell_status(q)?;
        ensure!(
            st == DoorbellStatus::DisconnectedAbort,
            "guilty queue {q:?}'s doorbell is {st:?}"
        );
    }
    if let Some(m) = mark {
        let ev: Vec<OsEvent> = s
            .os_trace_ref()?
            .os_events(0)?
            .into_iter()
            .skip(m)
            .collect();
        // The pages disconnect the guilty doorbells through the KMD; 24H2 only writes the
        // status, checked above (docs/windows-bringup.md §13). A disconnect, if any, is ABORT.
        for q in [hq, hq1] {
            ensure!(
                !ev.iter().any(|e| matches!(
                    e,
                    OsEvent::OsDisconnect { queue, reason } if *queue == Some(q)
                        && *reason != DoorbellStatus::DisconnectedAbort
                )),
                "guilty queue {q:?} disconnected with another reason than ABORT: {ev:?}"
            );
        }
        ensure!(
            !ev.iter().any(|e| matches!(
                e,
                OsEvent::OsDisconnect { queue, .. } | OsEvent::VictimCallback { queue, .. }
                    if *queue == Some(oq0) || *queue == Some(oq1)
            )),
            "the other process's doorbells were disconnected: {ev:?}"
        );
    }
    if let Some(ev) = observe(s.tdr_trace_ref().and_then(|x| x.tdr_steps(0)))? {
        ensure!(
            errored(&ev, h) && !errored(&ev, o),
            "device errors: guilty only expected: {ev:?}"
        );
    }
    // Every queue of the guilty device refuses work, the hung one included: the application
    // learns of the abort from each, and destroys them without waiting for the hung batch
    // (whose progress never comes).
    for q in [hq, hq1] {
        guilty_refused(&mut *s, q, th, "UM-10")?;
    }
    for q in [oq0, oq1] {
        let st = s.ums_ref()?.doorbell_status(q)?;
        ensure!(
            st.is_connected(),
            "the other process's doorbell {q:?} is {st:?}"
        );
    }
    let a = s.ums()?.submit(oq0, &[fill(to, 16, 3)])?;
    let c = s.ums()?.submit(oq1, &[fill(to, 24, 4)])?;
    wait(&mut *s, oq0, a, "other process after the reset")?;
    wait(&mut *s, oq1, c, "other process after the reset")?;
    ensure!(
        (
            s.ums_ref()?.read_buffer(to, 16)?,
            s.ums_ref()?.read_buffer(to, 24)?
        ) == (3, 4),
        "the other process's work after the reset did not run"
    );
    // The guilty process recreates its device (a new process here) and works.
    let h2 = s.ums()?.open_process(0)?;
    let t2 = s.ums()?.create_buffer(h2, BUF)?;
    let q2 = s.ums()?.create_queue(h2, 0, SubmitPath::UserMode)?;
    let v = s.ums()?.submit(q2, &[fill(t2, 0, 5)])?;
    wait(&mut *s, q2, v, "recreated device")?;
    ensure!(
        s.ums_ref()?.read_buffer(t2, 0)? == 5,
        "the recreated device's work did not run"
    );
    no_fault(&*s)
}

fn user_mode_traffic_survives(b: &dyn Backend) -> CaseResult {
    const PROCS: u64 = 4;
    const MAX: u64 = 20_000;
    const MIN: usize = 20;
    const AFTER: usize = 50;
    let mut s = session(b, ExecMode::Threaded, |c| c.min_doorbells = Some(16))?;
    // Windows' default TdrDelay (2 s) in threaded mode: the hang is found by the device's own
    // report, and a short timeout let a starved emulator thread look like a stalled innocent
    // queue on a loaded host.
    s.tdr()?.enable_tdr(
        0,
        TdrTimeouts {
            timeout: Duration::from_secs(2),
            ..TdrTimeouts::fast()
        },
    )?;
    // Commands per three-FILL submission, per node (calibration).
    let cal = s.ums()?.open_process(0)?;
    let tc = s.ums()?.create_buffer(cal, BUF)?;
    let mut per = Vec::new();
    for node in 0..2u32 {
        let q = s.ums()?.create_queue(cal, node, SubmitPath::UserMode)?;
        let before = observe(s.tdr_trace_ref().and_then(|x| x.engine_probe(0, node)))?;
        let v = s
            .ums()?
            .submit(q, &[fill(tc, 0, 1), fill(tc, 8, 2), fill(tc, 16, 3)])?;
        wait(&mut *s, q, v, "calibration")?;
        let after = settled_probe(&mut *s, node)?;
        per.push(
            before
                .zip(after)
                .map(|(a, z)| z.completed_commands - a.completed_commands),
        );
        s.ums()?.close_queue(q)?;
    }
    let mut lanes = Vec::new();
    let mut owners = Vec::new();
    for i in 0..PROCS {
        let p = s.ums()?.open_process(0)?;
        let t = s.ums()?.create_buffer(p, 2 * 3 * 8 * MAX)?;
        for node in 0..2u64 {
            let q = s
                .ums()?
                .create_queue(p, node as u32, SubmitPath::UserMode)?;
            let batches = (0..MAX)
                .map(|n| {
                    let slot = (node * MAX + n) * 3;
                    let pat = |j: u64| (i << 40) | (node << 32) | (n << 4) | j;
                    (0..3).map(|j| fill(t, 8 * (slot + j), pat(j))).collect()
                })
                .collect();
            lanes.push(StreamLane {
                queue: q,
                batches,
                start_after: Duration::ZERO,
                max_in_flight: 16,
                stop_after_recovery: Some((MIN, AFTER)),
                wait: true,
            });
            owners.push((i, node, p, t));
        }
    }
    let guilty = s.ums()?.open_process(0)?;
    let gq = s.ums()?.create_queue(guilty, 0, SubmitPath::UserMode)?;
    // Counted from here: every queue exists (creating one maps its ring, paging work on the
    // copy node) and none is closed before the count ends.
    let base: Vec<_> = (0..2)
        .map(|n| observe(s.tdr_trace_ref().and_then(|x| x.engine_probe(0, n))))
        .collect::<Result<_, _>>()?;
    lanes.push(StreamLane {
        queue: gq,
        batches: vec![vec![Work::Hang]],
        start_after: Duration::from_millis(10),
        max_in_flight: 0,
        stop_after_recovery: None,
        wait: false,
    });
    let reports = s.tdr()?.stream(&lanes)?;
    let recoveries = observe(s.tdr_trace_ref().and_then(|x| x.tdr_recoveries(0)))?;
    if let Some(r) = recoveries {
        ensure!(
            r == (1, 0),
            "(engine, adapter) resets {r:?}, expected one engine reset"
        );
    }
    let mut total = [0u64; 2];
    for ((i, node, _, t), r) in owners.iter().zip(&reports) {
        ensure!(
            r.error.is_none(),
            "process {i} node {node}: {:?} after {} batches",
            r.error,
            r.submitted
        );
        if recoveries.is_some() {
            ensure!(
                r.recovered_at.is_some_and(|k| r.submitted == k + AFTER),
                "process {i} node {node}: {} batches, recovery seen after {:?}; it must have \
                 been submitting when the reset finished and gone on {AFTER} past it",
                r.submitted,
                r.recovered_at
            );
        }
        for n in 0..r.submitted as u64 {
            for j in 0..3 {
                let slot = (node * MAX + n) * 3 + j;
                let got = s.ums_ref()?.read_buffer(*t, 8 * slot)?;
                let want = (i << 40) | (node << 32) | (n << 4) | j;
                ensure!(
                    got == want,
                    "process {i} node {node} batch {n}.{j} reads {got:#x}: lost or out of order"
                );
            }
        }
        total[*node as usize] += r.submitted as u64;
    }
    for node in 0..2usize {
        let now = settled_probe(&mut *s, node as u32)?;
        if let (Some(per), Some(base), Some(now)) = (per[node], base[node], now) {
            let done = now.completed_commands - base.completed_commands;
            ensure!(
                done == per * total[node],
                "node {node}: {done} commands for {} batches of {per}: lost or run twice",
                total[node]
            );
        }
    }
    if let Some(ev) = observe(s.tdr_trace_ref().and_then(|x| x.tdr_steps(0)))? {
        ensure!(errored(&ev, guilty), "the hanging process is not in error");
        for (i, _, p, _) in owners.iter().step_by(2) {
            ensure!(!errored(&ev, *p), "innocent process {i} was put in error");
        }
    }
    no_fault(&*s)
}
