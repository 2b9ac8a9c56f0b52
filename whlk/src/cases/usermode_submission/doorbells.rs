//! Doorbells: victimisation, reconnect and retry, the global doorbell (UM-19, UM-20, UM-21,
//! UM-09).

use crate::backend::{
    Backend, BufferRef, DoorbellStatus, ExecMode, Failure, OsEvent, ProcessRef, Session,
    SubmitPath, UmQueueRef,
};
use crate::case::CaseResult;
use crate::ensure;

use super::super::common::{observe, pos, session, wait};
use super::fixtures::{
    count, doorbells, end_normally, events_since, expect_path, expect_status, mark,
    process_with_buffer, submit_tickets, trace, user_queue, Tickets,
};

// ---------------------------------------------------------------------------------------------
// UM-19, UM-20, UM-21, UM-09.

/// The seed's walk-through. Where the backend has the OS's record (the simulation), each step's
/// OS events and doorbell mappings are checked too; a program on Windows sees what the UMD's
/// mapping of each doorbell's status reads, D3DKMTConnectDoorbell's answers as the UMD's
/// submissions take them (work on the user-mode path), and the work.
pub(super) fn victimisation_walkthrough(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, doorbells(1))?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let t1 = Tickets::new(&mut *s, buf, 0, 4)?;
    let t2 = Tickets::new(&mut *s, buf, 512, 4)?;
    // 1. Queue 1's doorbell connects to the only physical doorbell.
    let m0 = observe(mark(&*s))?;
    let q1 = user_queue(&mut *s, p, 0)?;
    expect_status(&*s, q1, DoorbellStatus::Connected, "step 1, doorbell 1")?;
    if let Some(m0) = m0 {
        let map1 = s.os_trace_ref()?.doorbell_mapping(q1)?;
        ensure!(
            map1 == Some(0),
            "step 1: doorbell 1 maps {map1:?}, expected physical page 0"
        );
        let ev = events_since(&*s, m0)?;
        ensure!(
            ev.contains(&OsEvent::Connect {
                queue: Some(q1),
                page: 0
            }),
            "step 1: no connect of doorbell 1 to page 0: {ev:?}"
        );
    }
    // 2 + 3. Queue 2's doorbell is created without a physical doorbell, then its connect
    // victimises doorbell 1 through the callback before doorbell 2 gets page 0.
    let m1 = observe(mark(&*s))?;
    let q2 = user_queue(&mut *s, p, 0)?;
    if let Some(m1) = m1 {
        steps_2_3(&*s, m1, q1, q2)?;
    }
    expect_status(
        &*s,
        q1,
        DoorbellStatus::DisconnectedRetry,
        "step 3, doorbell 1",
    )?;
    expect_status(&*s, q2, DoorbellStatus::Connected, "step 3, doorbell 2")?;
    // 4. Queue 1 submits: it reads RETRY, reconnects (victimising 2) and rings again.
    let m2 = observe(mark(&*s))?;
    let v1 = submit_tickets(&mut *s, q1, &t1, 0..2)?;
    if let Some(m2) = m2 {
        let ev = events_since(&*s, m2)?;
        let victim = pos(
            &ev,
            |e| matches!(e, OsEvent::VictimCallback { queue, .. } if *queue == Some(q2)),
        );
        let reconnect = pos(&ev, |e| {
            *e == OsEvent::Connect {
                queue: Some(q1),
                page: 0,
            }
        });
        ensure!(
            matches!((victim, reconnect), (Some(a), Some(b)) if a < b),
            "step 4: expected callback(2) < Connect(1, page 0): {ev:?}"
        );
    }
    wait(&mut *s, q1, v1, "step 4")?;
    t1.check(&*s, 2, "step 4, queue 1")?;
    expect_status(&*s, q1, DoorbellStatus::Connected, "step 4, doorbell 1")?;
    expect_status(
        &*s,
        q2,
        DoorbellStatus::DisconnectedRetry,
        "step 4, doorbell 2",
    )?;
    // 5. And back: queue 2's work runs too, queue 1 is victimised again.
    let v2 = submit_tickets(&mut *s, q2, &t2, 0..2)?;
    wait(&mut *s, q2, v2, "step 5")?;
    t2.check(&*s, 2, "step 5, queue 2")?;
    expect_status(
        &*s,
        q1,
        DoorbellStatus::DisconnectedRetry,
        "step 5, doorbell 1",
    )?;
    for q in [q1, q2] {
        expect_path(&*s, q, SubmitPath::UserMode, "after the walk-through")?;
    }
    end_normally(&mut *s, p)
}

/// Steps 2 and 3 in the OS's record since `m`: doorbell 2 created, doorbell 1 victimised
/// through the callback (the only victim, the OS disconnecting nothing itself), then doorbell
/// 2 connected to page 0; doorbell 1 maps the dummy page, doorbell 2 page 0.
fn steps_2_3(s: &dyn Session, m: usize, q1: UmQueueRef, q2: UmQueueRef) -> CaseResult {
    let ev = events_since(s, m)?;
    let created = pos(&ev, |e| *e == OsEvent::CreateDoorbell { queue: Some(q2) });
    let victim = pos(&ev, |e| {
        *e == OsEvent::VictimCallback {
            queue: Some(q1),
            reason: DoorbellStatus::DisconnectedRetry,
        }
    });
    let connected = pos(&ev, |e| {
        *e == OsEvent::Connect {
            queue: Some(q2),
            page: 0,
        }
    });
    ensure!(
        matches!((created, victim, connected), (Some(a), Some(b), Some(c)) if a < b && b < c),
        "steps 2-3: expected CreateDoorbell(2) < callback(1, RETRY) < Connect(2, page 0), got \
         {created:?} {victim:?} {connected:?} in {ev:?}"
    );
    ensure!(
        count(&ev, |e| matches!(e, OsEvent::VictimCallback { .. })) == 1,
        "steps 2-3: exactly one victim expected: {ev:?}"
    );
    ensure!(
        !ev.iter().any(|e| matches!(e, OsEvent::OsDisconnect { .. })),
        "steps 2-3: the OS disconnected a doorbell itself: {ev:?}"
    );
    ensure!(
        s.os_trace_ref()?.doorbell_mapping(q1)?.is_none(),
        "step 3: doorbell 1 still maps the physical page"
    );
    ensure!(
        s.os_trace_ref()?.doorbell_mapping(q2)? == Some(0),
        "step 3: doorbell 2 does not map page 0"
    );
    Ok(())
}

pub(super) fn reconnect_and_retry(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, doorbells(1))?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let mut qs = queues_with_tickets(&mut *s, p, buf, 3, 5)?;
    let m = observe(mark(&*s))?;
    submit_round_robin(&mut *s, &mut qs, 5)?;
    for (i, (q, t, last)) in qs.iter().enumerate() {
        wait(&mut *s, *q, *last, "three queues on one doorbell")?;
        t.check(&*s, 5, &format!("queue {i}"))?;
        expect_path(&*s, *q, SubmitPath::UserMode, &format!("queue {i}"))?;
    }
    if let Some(ev) = trace(&*s, m)? {
        let victims = count(&ev, |e| matches!(e, OsEvent::VictimCallback { .. }));
        let connects = count(&ev, |e| matches!(e, OsEvent::Connect { .. }));
        // Round-robin over three queues on one doorbell: every submission but the very first
        // finds its doorbell victimised.
        ensure!(
            victims >= 14,
            "{victims} victimisations for 15 alternating submissions"
        );
        ensure!(
            connects >= 14,
            "{connects} reconnects for 15 alternating submissions"
        );
    }
    // UM-09: one doorbell maps the physical page; the others map the dummy page with RETRY.
    let mut mapped = 0;
    for (q, _, _) in &qs {
        match observe(s.os_trace_ref().and_then(|x| x.doorbell_mapping(*q)))? {
            None => {}
            Some(Some(0)) => {
                mapped += 1;
                expect_status(&*s, *q, DoorbellStatus::Connected, "the connected doorbell")?;
            }
            Some(None) => expect_status(&*s, *q, DoorbellStatus::DisconnectedRetry, "a victim")?,
            other => ensure!(false, "a doorbell maps {other:?}"),
        }
    }
    ensure!(
        mapped <= 1,
        "{mapped} doorbells map the one physical doorbell"
    );
    end_normally(&mut *s, p)
}

pub(super) fn global_doorbell(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, |c| {
        c.doorbells = Some(1);
        c.global_doorbell = true;
    })?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let m = observe(mark(&*s))?;
    let mut qs = queues_with_tickets(&mut *s, p, buf, 3, 4)?;
    submit_round_robin(&mut *s, &mut qs, 4)?;
    for (i, (q, t, last)) in qs.iter().enumerate() {
        wait(&mut *s, *q, *last, "global doorbell")?;
        t.check(&*s, 4, &format!("queue {i}"))?;
        expect_status(&*s, *q, DoorbellStatus::Connected, &format!("queue {i}"))?;
        let map = observe(s.os_trace_ref().and_then(|x| x.doorbell_mapping(*q)))?;
        ensure!(
            map.is_none_or(|m| m == Some(0)),
            "queue {i}'s doorbell maps {map:?}, expected the global page 0"
        );
    }
    if let Some(ev) = trace(&*s, m)? {
        let victims = count(&ev, |e| matches!(e, OsEvent::VictimCallback { .. }));
        ensure!(
            victims == 0,
            "{victims} victimisations with a global doorbell"
        );
        let pages: Vec<u32> = ev
            .iter()
            .filter_map(|e| match e {
                OsEvent::Connect { page, .. } => Some(*page),
                _ => None,
            })
            .collect();
        ensure!(
            pages == [0, 0, 0],
            "connects to pages {pages:?}, expected [0, 0, 0]"
        );
    }
    end_normally(&mut *s, p)
}

/// `n` user-mode queues of `p` on node 0, each with `count` tickets in `buf` (512 bytes apart)
/// and the last value submitted on it (none yet: 0).
fn queues_with_tickets(
    s: &mut dyn Session,
    p: ProcessRef,
    buf: BufferRef,
    n: u64,
    count: u64,
) -> Result<Vec<(UmQueueRef, Tickets, u64)>, Failure> {
    (0..n)
        .map(|i| {
            let t = Tickets::new(s, buf, 512 * i, count)?;
            Ok((user_queue(s, p, 0)?, t, 0))
        })
        .collect()
}

/// Batches `0..rounds` of every queue's tickets, one queue after another in each round (the
/// queues take turns on their doorbells); each queue's last value is kept.
fn submit_round_robin(
    s: &mut dyn Session,
    qs: &mut [(UmQueueRef, Tickets, u64)],
    rounds: u64,
) -> CaseResult {
    for k in 0..rounds {
        for (q, t, last) in qs.iter_mut() {
            *last = s.ums()?.submit(*q, &t.batch(k))?;
        }
    }
    Ok(())
}
