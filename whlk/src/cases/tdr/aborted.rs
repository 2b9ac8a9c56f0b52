//! Aborted fences: in range, or a bug check; what completed before the reset (TDR-06,
//! TDR-07).

use std::time::Duration;

use crate::backend::{Backend, Capability, ExecMode, Misbehaviour, TdrStep, TdrTimeouts, Work};
use crate::case::{CaseError, CaseResult};
use crate::ensure;

use super::super::common::{fill, no_fault, session};
use super::fixtures::{
    all_done, errored, expect_0x119_a, process_with_context, resets, software_scheduled,
    tdr_session, until, BUF, STEP,
};

// ---------------------------------------------------------------------------------------------
// TDR-06, TDR-07.

pub(super) fn aborted_fence_in_range(b: &dyn Backend) -> CaseResult {
    if super::kmd::form(
        b,
        &[Capability::TdrTrace, Capability::ConfiguredMachine],
        &[Capability::KmdJournal],
    )? == super::kmd::Form::Kmd
    {
        return super::kmd::aborted_fence_in_range(b);
    }
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

pub(super) fn bugcheck_on_bad_aborted_fence(b: &dyn Backend) -> CaseResult {
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

pub(super) fn completed_before_reset(b: &dyn Backend) -> CaseResult {
    if super::kmd::form(
        b,
        &[
            Capability::TdrTrace,
            Capability::FaultInjection,
            Capability::ConfiguredMachine,
        ],
        &[Capability::KmdJournal, Capability::KmdFaults],
    )? == super::kmd::Form::Kmd
    {
        return super::kmd::completed_before_reset(b);
    }
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
