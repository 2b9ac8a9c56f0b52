//! The ring allocations the queue references (UM-07, UM-08), and queues churned on threads.

use crate::backend::{
    Backend, ChurnLane, DoorbellStatus, ExecMode, Failure, OsEvent, ProcessEnd, SubmitPath,
};
use crate::case::CaseResult;
use crate::ensure;

use super::super::common::{no_fault, observe, session, wait};
use super::fixtures::{
    count, doorbells, end_normally, expect_path, expect_status, mark, process_with_buffer,
    submit_tickets, trace, user_queue, Tickets,
};

// ---------------------------------------------------------------------------------------------
// UM-07, UM-08.

pub(super) fn ring_allocations_referenced(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, doorbells(1))?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let t = Tickets::new(&mut *s, buf, 0, 80)?;
    let q = user_queue(&mut *s, p, 0)?;
    let v = s.ums()?.submit(q, &t.batch(0))?;
    wait(&mut *s, q, v, "before releasing the ring")?;
    s.umd_bypass()?.release_ring_handles(q)?;
    match s.umd_bypass()?.release_ring_handles(q) {
        Err(Failure::DdiFailed(_)) => {}
        other => ensure!(
            false,
            "destroying the closed ring handles again returned {other:?}"
        ),
    }
    ensure!(
        s.umd_bypass_ref()?.ring_resident(q)?,
        "UM-07: the ring was freed while its doorbell lives"
    );
    // UM-08: the ring keeps working, also through wraps and while victimised.
    let v = submit_tickets(&mut *s, q, &t, 1..60)?;
    wait(&mut *s, q, v, "released ring")?;
    let other = user_queue(&mut *s, p, 0)?;
    expect_status(&*s, q, DoorbellStatus::DisconnectedRetry, "victimised")?;
    let v = submit_tickets(&mut *s, q, &t, 60..80)?;
    wait(&mut *s, q, v, "released ring after victimisation")?;
    t.check(&*s, 80, "released ring")?;
    expect_path(&*s, q, SubmitPath::UserMode, "released ring")?;
    ensure!(
        s.umd_bypass_ref()?.ring_resident(q)?,
        "UM-07: ring freed before the queue was destroyed"
    );
    s.ums()?.close_queue(q)?;
    ensure!(
        !s.umd_bypass_ref()?.ring_resident(q)?,
        "UM-07: the ring outlived its doorbell"
    );
    s.ums()?.close_queue(other)?;
    end_normally(&mut *s, p)
}

// ---------------------------------------------------------------------------------------------
// Threaded.

pub(super) fn threaded_churn(b: &dyn Backend) -> CaseResult {
    const ROUNDS: u32 = 6;
    const PER: u32 = 4;
    let n = u64::from(ROUNDS * PER);
    // Two doorbells or fewer: nine queues must share them.
    let mut s = session(b, ExecMode::Threaded, |c| c.max_doorbells = Some(2))?;
    let mut lanes = Vec::new();
    let mut tickets = Vec::new();
    let mut residents = Vec::new();
    for _ in 0..3 {
        let (p, buf) = process_with_buffer(&mut *s)?;
        // A queue that lives through the churn: with three of them on two doorbells, both
        // physical doorbells are bound when the churn starts, so its first connect must
        // victimise one.
        let t = Tickets::new(&mut *s, buf, 2048, 2)?;
        residents.push((user_queue(&mut *s, p, 0)?, t));
        for node in 0..2u32 {
            let t = Tickets::new(&mut *s, buf, 1024 * u64::from(node), n)?;
            lanes.push(ChurnLane {
                process: p,
                node,
                rounds: ROUNDS,
                batches_per_round: PER,
                work: (0..n).map(|k| t.batch(k)).collect(),
            });
            tickets.push((p, node, t));
        }
    }
    let m = observe(mark(&*s))?;
    let reports = s.ums()?.churn(&lanes)?;
    for ((p, node, t), r) in tickets.iter().zip(&reports) {
        ensure!(
            r.error.is_none() && r.rounds_done == ROUNDS,
            "{p:?} node {node}: {} of {ROUNDS} rounds, error {:?}",
            r.rounds_done,
            r.error
        );
        t.check(&*s, n, &format!("{p:?} node {node}"))?;
    }
    // The long-lived queues were victimised meanwhile: they reconnect and their work runs.
    for (i, (q, t)) in residents.iter().enumerate() {
        let v = submit_tickets(&mut *s, *q, t, 0..2)?;
        wait(&mut *s, *q, v, "long-lived queue")?;
        t.check(&*s, 2, &format!("long-lived queue {i}"))?;
        expect_path(&*s, *q, SubmitPath::UserMode, "long-lived queue")?;
    }
    if let Some(ev) = trace(&*s, m)? {
        let victims = count(&ev, |e| matches!(e, OsEvent::VictimCallback { .. }));
        ensure!(
            victims > 0,
            "9 queues on at most 2 doorbells, yet no victimisation during the churn"
        );
    }
    for (p, _, _) in tickets.iter().step_by(2) {
        s.ums()?.end_process(*p, ProcessEnd::Normal)?;
    }
    no_fault(&*s)
}
