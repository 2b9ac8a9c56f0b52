//! Promotion to an adapter reset and a failed reset (TDR-08, TDR-09).

use crate::backend::{Backend, Capability, TdrStep, TdrTimeouts, Work};
use crate::case::CaseResult;
use crate::ensure;

use rvgpu_umd::kmt::DeviceExecutionState;

use super::super::common::{fill, no_fault, observe, pos};
use super::fixtures::{
    adapter_resets, all_done, errored, expect_fences, paging_fill, process_with_context,
    software_scheduled, tdr_session, until, BUF, REASON_PROMOTED, STEP,
};

// ---------------------------------------------------------------------------------------------
// TDR-08, TDR-09.

pub(super) fn paging_promotes_adapter_reset(b: &dyn Backend) -> CaseResult {
    if super::kmd::form(
        b,
        &[
            Capability::TdrTrace,
            Capability::FaultInjection,
            Capability::ConfiguredMachine,
            Capability::Paging,
        ],
        &[Capability::KmdJournal, Capability::KmdFaults],
    )? == super::kmd::Form::Kmd
    {
        return super::kmd::paging_promotes_adapter_reset(b);
    }
    let mut s = tdr_session(b, TdrTimeouts::fast(), software_scheduled)?;
    let owner = s.ums()?.open_process(0)?;
    let idle = s.ums()?.open_process(0)?;
    let big = s.ums()?.create_buffer(owner, 4 << 20)?;
    let ids = s.paging()?.page_in(big, paging_fill(0, 4 << 20, 0x5A))?;
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
    // Windows resets every device with the adapter (UM-10): the idle process's device reads
    // RESET, and its application recreates it.
    if let Some(st) = observe(s.tdr().and_then(|t| t.device_state(idle)))? {
        ensure!(
            st == DeviceExecutionState::RESET,
            "the idle process's device after the adapter reset: {st:?}"
        );
    }
    // The system context (paging) and a process opened after the reset run new work.
    let fresh = s.ums()?.open_process(0)?;
    let ti = s.ums()?.create_buffer(fresh, 8192)?;
    let ci = s.dma_contexts()?.create_context(fresh, 0)?;
    s.paging()?.page_in(ti, paging_fill(0, 4096, 0x66))?;
    s.dma_contexts()?.submit_dma(ci, &[fill(ti, 4096, 0x67)])?;
    until(&mut *s, STEP, "new work", |s| all_done(s, 0))?;
    ensure!(
        s.ums_ref()?.read_buffer(ti, 0)? == 0x66_0000_0066
            && s.ums_ref()?.read_buffer(ti, 4096)? == 0x67,
        "new paging and render work after the adapter reset did not run"
    );
    no_fault(&*s)
}

pub(super) fn reset_fails_promoted(b: &dyn Backend) -> CaseResult {
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
        return super::kmd::reset_fails_promoted(b);
    }
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
