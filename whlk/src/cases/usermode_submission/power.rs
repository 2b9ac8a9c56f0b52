//! Power: suspend and resume, an engine's F1, D3 and back (UM-11 … UM-14).

use std::time::Duration;

use crate::backend::{Backend, DoorbellStatus, ExecMode, OsEvent, SubmitPath, Work};
use crate::case::{CaseError, CaseResult};
use crate::ensure;

use super::super::common::{fill, pos, session, wait};
use super::fixtures::{
    count, doorbells, end_normally, events_since, expect_path, expect_status, mark,
    process_with_buffer, settle, submit_tickets, user_and_kernel_queues, user_queue, BUF,
    TRANSITION_TO_F1,
};

// ---------------------------------------------------------------------------------------------
// UM-11 … UM-14.

pub(super) fn suspend_resume(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, doorbells(4))?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let (uq, tu, kq, tk) = user_and_kernel_queues(&mut *s, p, buf, 3, (512, 3), 1)?;
    let v = s.ums()?.submit(uq, &tu.batch(0))?;
    let w = s.ums()?.submit(kq, &tk.batch(0))?;
    wait(&mut *s, uq, v, "before suspend")?;
    wait(&mut *s, kq, w, "before suspend")?;
    let m = mark(&*s)?;
    s.os_control()?.suspend_process(p)?;
    expect_status(&*s, uq, DoorbellStatus::Connected, "UM-11: suspended")?;
    for q in [uq, kq] {
        let sch = s.ums_ref()?.queue_info(q)?.scheduled;
        ensure!(
            sch != Some(true),
            "UM-11: suspended queue {q:?} is still in the runlist"
        );
    }
    let v = submit_tickets(&mut *s, uq, &tu, 1..3)?;
    let w = submit_tickets(&mut *s, kq, &tk, 1..3)?;
    settle(&mut *s)?;
    tu.check(&*s, 1, "UM-11: user-mode work while suspended")?;
    tk.check(&*s, 1, "UM-11: kernel-mode work while suspended")?;
    expect_path(&*s, uq, SubmitPath::UserMode, "while suspended")?;
    s.os_control()?.resume_process(p)?;
    wait(&mut *s, uq, v, "UM-12: after resume")?;
    wait(&mut *s, kq, w, "UM-12: after resume")?;
    tu.check(&*s, 3, "UM-12: user-mode work after resume")?;
    tk.check(&*s, 3, "UM-12: kernel-mode work after resume")?;
    let sch = s.ums_ref()?.queue_info(uq)?.scheduled;
    ensure!(
        sch != Some(false),
        "UM-12: resumed queue not back in the runlist"
    );
    let ev = events_since(&*s, m)?;
    let sus = pos(&ev, |e| *e == OsEvent::SuspendContext { queue: Some(uq) });
    let res = pos(&ev, |e| *e == OsEvent::ResumeContext { queue: Some(uq) });
    ensure!(
        matches!((sus, res), (Some(a), Some(b)) if a < b),
        "expected SuspendContext < ResumeContext of the queue's context: {ev:?}"
    );
    ensure!(
        !ev.iter().any(|e| matches!(e, OsEvent::OsDisconnect { .. })),
        "UM-11: suspend disconnected a doorbell: {ev:?}"
    );
    end_normally(&mut *s, p)
}

pub(super) fn engine_f1(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, |c| {
        c.doorbells = Some(4);
        c.idle_f1_ticks = 20_000;
        c.os_disconnects_doorbells = true;
    })?;
    let (p, t) = process_with_buffer(&mut *s)?;
    let q0 = user_queue(&mut *s, p, 0)?;
    let q1 = user_queue(&mut *s, p, 1)?;
    let v = s.ums()?.submit(q1, &[fill(t, 8, 1)])?;
    wait(&mut *s, q1, v, "engine 1")?;
    let v = s.ums()?.submit(q0, &[fill(t, 0, 1)])?;
    wait(&mut *s, q0, v, "engine 0")?;
    let f1 = s
        .engine_idle()?
        .await_engine_f1(0, 0, Duration::from_millis(50))?;
    ensure!(
        f1,
        "engine 0 never went to F1: {:?}",
        s.os_trace_ref()?.power_status(0)?
    );
    let ev = s.os_trace_ref()?.os_events(0)?;
    let fs = ev
        .iter()
        .rposition(|e| *e == OsEvent::SetFState { node: 0, fstate: 1 })
        .ok_or_else(|| CaseError::Fail(format!("no F1 of node 0: {ev:?}")))?;
    let req = ev[..fs]
        .iter()
        .rposition(|e| {
            *e == OsEvent::EngineState {
                node: 0,
                state: TRANSITION_TO_F1,
            }
        })
        .ok_or_else(|| CaseError::Fail(format!("F1 without the engine's request: {ev:?}")))?;
    let between = &ev[req..fs];
    ensure!(
        between.contains(&OsEvent::OsDisconnect {
            queue: Some(q0),
            reason: DoorbellStatus::DisconnectedRetry
        }),
        "request, disconnect of engine 0's doorbell (RETRY), then F1 expected: {between:?}"
    );
    ensure!(
        !between
            .iter()
            .any(|e| matches!(e, OsEvent::OsDisconnect { queue, .. } if *queue == Some(q1))),
        "engine 1's doorbell was disconnected for engine 0's F1: {between:?}"
    );
    expect_status(&*s, q0, DoorbellStatus::DisconnectedRetry, "after F1")?;
    let v = s.ums()?.submit(q0, &[fill(t, 0, 2)])?;
    let fstate = s
        .os_trace_ref()?
        .power_status(0)?
        .node_fstates
        .first()
        .copied();
    ensure!(
        fstate == Some(0),
        "the reconnect left node 0 in F{fstate:?}"
    );
    wait(&mut *s, q0, v, "after F1")?;
    ensure!(
        s.ums_ref()?.read_buffer(t, 0)? == 2,
        "work after F1 did not run"
    );
    expect_path(&*s, q0, SubmitPath::UserMode, "after F1")?;
    end_normally(&mut *s, p)
}

pub(super) fn d3_and_back(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, |c| {
        c.doorbells = Some(4);
        c.os_disconnects_doorbells = true;
    })?;
    let (p, t) = process_with_buffer(&mut *s)?;
    let gate = s.ums()?.create_buffer(p, BUF)?;
    let q0 = user_queue(&mut *s, p, 0)?;
    let q1 = user_queue(&mut *s, p, 1)?;
    // UM-16: work the OS has not seen complete keeps the GPU up.
    let g = s.ums()?.submit(
        q0,
        &[
            Work::WaitAtLeast {
                buffer: gate,
                offset: 0,
                value: 1,
            },
            fill(t, 0, 1),
        ],
    )?;
    let down = s.os_control()?.power_down(0)?;
    ensure!(
        !down && !s.os_trace_ref()?.power_status(0)?.d3,
        "powered down with work pending"
    );
    s.ums()?.write_buffer(gate, 0, 1)?;
    wait(&mut *s, q0, g, "gated work")?;
    let v = s.ums()?.submit(q1, &[fill(t, 8, 1)])?;
    wait(&mut *s, q1, v, "engine 1")?;
    // Idle: suspend every context, disconnect every doorbell, then D3.
    let m = mark(&*s)?;
    ensure!(
        s.os_control()?.power_down(0)?,
        "idle adapter did not power down"
    );
    ensure!(
        s.os_trace_ref()?.power_status(0)?.d3,
        "power_down returned true but the adapter is not in D3"
    );
    let ev = events_since(&*s, m)?;
    let idx = |p: &dyn Fn(&OsEvent) -> bool| -> Vec<usize> {
        ev.iter()
            .enumerate()
            .filter(|(_, e)| p(e))
            .map(|(i, _)| i)
            .collect()
    };
    let sus = idx(&|e| matches!(e, OsEvent::SuspendContext { queue: Some(_) }));
    let dis = idx(&|e| {
        matches!(
            e,
            OsEvent::OsDisconnect {
                queue: Some(_),
                reason: DoorbellStatus::DisconnectedRetry
            }
        )
    });
    let d3 = pos(&ev, |e| *e == OsEvent::SetPowerState { d3: true });
    ensure!(
        sus.len() == 2 && dis.len() == 2,
        "expected 2 suspends and 2 RETRY disconnects: {ev:?}"
    );
    ensure!(
        d3.is_some_and(|d3| sus.iter().max() < dis.iter().min() && dis.iter().all(|i| *i < d3)),
        "expected suspends < disconnects < D3: {ev:?}"
    );
    for q in [q0, q1] {
        expect_status(&*s, q, DoorbellStatus::DisconnectedRetry, "in D3")?;
    }
    // A submission in D3: D0, connect, resume, then the work runs.
    let m = mark(&*s)?;
    let v = s.ums()?.submit(q1, &[fill(t, 8, 2)])?;
    ensure!(
        !s.os_trace_ref()?.power_status(0)?.d3,
        "the submission did not power the adapter up"
    );
    let ev = events_since(&*s, m)?;
    let d0 = pos(&ev, |e| *e == OsEvent::SetPowerState { d3: false });
    let conn = pos(
        &ev,
        |e| matches!(e, OsEvent::Connect { queue, .. } if *queue == Some(q1)),
    );
    let res = pos(&ev, |e| matches!(e, OsEvent::ResumeContext { .. }));
    ensure!(
        matches!((d0, conn, res), (Some(a), Some(b), Some(c)) if a < b && b < c),
        "expected D0 < connect < resume: {ev:?}"
    );
    let resumed = count(&ev, |e| matches!(e, OsEvent::ResumeContext { .. }));
    ensure!(
        resumed == 2,
        "{resumed} contexts resumed, the power-down suspended 2"
    );
    wait(&mut *s, q1, v, "after D3")?;
    let v = s.ums()?.submit(q0, &[fill(t, 0, 2)])?;
    wait(&mut *s, q0, v, "after D3")?;
    ensure!(
        s.ums_ref()?.read_buffer(t, 0)? == 2 && s.ums_ref()?.read_buffer(t, 8)? == 2,
        "work after D3 did not run"
    );
    end_normally(&mut *s, p)
}
