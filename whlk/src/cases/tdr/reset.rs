//! An engine's reset: paging resubmitted in order, the last completed fence, the sequence
//! (TDR-03 … TDR-05).

use crate::backend::{Backend, Capability, Failure, TdrStep, TdrTimeouts, Work};
use crate::case::CaseResult;
use crate::ensure;

use super::super::common::{fill, no_fault, pos};
use super::fixtures::{
    adapter_resets, all_done, expect_fences, paging_fill, process_with_context, resets,
    software_scheduled, tdr_session, until, BUF, REASON_ENGINE_TIMEOUT, STATUS_DEVICE_REMOVED,
    STEP, VIDEO_ENGINE_TIMEOUT_DETECTED,
};

// ---------------------------------------------------------------------------------------------
// TDR-03 … TDR-05.

pub(super) fn paging_resubmit_order(b: &dyn Backend) -> CaseResult {
    if super::kmd::form(
        b,
        &[
            Capability::TdrTrace,
            Capability::ConfiguredMachine,
            Capability::Paging,
        ],
        &[Capability::KmdJournal],
    )? == super::kmd::Form::Kmd
    {
        return super::kmd::paging_resubmit_order(b);
    }
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
    // C's buffer made resident by a first fill, so that no paging for it falls between the
    // submissions whose IDs are compared (24H2 maps it at the UMD's Map, not at create).
    s.dma_contexts()?.submit_dma(cc, &[fill(tc, 0, 0x01)])?;
    until(&mut *s, STEP, "the warming fill", |s| all_done(s, 0))?;
    let hang = s.dma_contexts()?.submit_dma(ca, &[Work::Hang])?;
    let p1 = s.paging()?.page_in(tb, paging_fill(0, 4096, 0x11))?;
    let p2 = s.paging()?.page_in(tb, paging_fill(4096, 4096, 0x22))?;
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

pub(super) fn last_completed_fence(b: &dyn Backend) -> CaseResult {
    if super::kmd::form(
        b,
        &[
            Capability::TdrTrace,
            Capability::FaultInjection,
            Capability::DirectDdi,
            Capability::ConfiguredMachine,
        ],
        &[Capability::KmdJournal, Capability::KmdFaults],
    )? == super::kmd::Form::Kmd
    {
        return super::kmd::last_completed_fence(b);
    }
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

pub(super) fn reset_sequence(b: &dyn Backend) -> CaseResult {
    if super::kmd::form(
        b,
        &[
            Capability::TdrTrace,
            Capability::FaultInjection,
            Capability::ConfiguredMachine,
        ],
        &[Capability::KmdJournal],
    )? == super::kmd::Form::Kmd
    {
        return super::kmd::reset_sequence(b);
    }
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
