//! A process's end, normal and abnormal, and device loss (UM-17, UM-18, UM-10).

use crate::backend::{
    Backend, DeviceLoss, DoorbellStatus, ExecMode, NewQueue, OsEvent, ProcessEnd, SubmitPath, Work,
};
use crate::case::CaseResult;
use crate::ensure;

use super::super::common::{fill, no_fault, pos, session, wait};
use super::fixtures::{
    doorbells, end_normally, events_since, expect_path, expect_status, mark, pages_teardown,
    process_with_buffer, settle, submit_tickets, user_and_kernel_queues, user_queue, Tickets, BUF,
};

// ---------------------------------------------------------------------------------------------
// UM-17, UM-18, UM-10.

pub(super) fn normal_exit(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, pages_teardown(4))?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let (uq, tu, kq, tk) = user_and_kernel_queues(&mut *s, p, buf, 16, (1024, 4), 1)?;
    let last = submit_tickets(&mut *s, uq, &tu, 0..16)?;
    submit_tickets(&mut *s, kq, &tk, 0..4)?;
    // 24H2 gives the user-mode queue no progress fence: the OS cannot wait for its work, and
    // destroys the queue with whatever is left of it (windows-bringup.md §13).
    let os_waits = s.ums_ref()?.queue_info(uq)?.os_sees_work != Some(false);
    let m = mark(&*s)?;
    s.ums()?.end_process(p, ProcessEnd::Normal)?;
    let ev = events_since(&*s, m)?;
    let waited = pos(&ev, |e| {
        *e == OsEvent::WaitedIdle {
            queue: Some(uq),
            value: last,
        }
    });
    if !os_waits {
        ensure!(
            waited.is_none(),
            "the OS waited for a queue whose work it cannot see: {ev:?}"
        );
    }
    let mut steps = vec![pos(
        &ev,
        |e| matches!(e, OsEvent::OsDisconnect { queue, .. } if *queue == Some(uq)),
    )];
    if os_waits {
        steps.push(waited);
    }
    steps.extend([
        pos(&ev, |e| *e == OsEvent::DestroyDoorbell { queue: Some(uq) }),
        pos(&ev, |e| *e == OsEvent::DestroyHwQueue { queue: Some(uq) }),
        pos(&ev, |e| *e == OsEvent::FreeAllocation),
        pos(&ev, |e| *e == OsEvent::DestroyContext { queue: Some(uq) }),
        pos(&ev, |e| *e == OsEvent::DestroyDevice { process: Some(p) }),
    ]);
    ensure!(
        steps.iter().all(Option::is_some) && steps.windows(2).all(|w| w[0] < w[1]),
        "expected disconnect < wait for {last} < destroy doorbell < queue < allocations < \
         context < device, got {steps:?}: {ev:?}"
    );
    ensure!(
        !ev.iter().any(|e| matches!(
            e,
            OsEvent::SuspendContext { .. } | OsEvent::DeviceError { .. }
        )),
        "a normal exit suspended contexts or marked the device in error: {ev:?}"
    );
    if os_waits {
        tu.check(&*s, 16, "user-mode work before the exit")?;
    }
    tk.check(&*s, 4, "kernel-mode work before the exit")?;
    for q in [uq, kq] {
        let sch = s.ums_ref()?.queue_info(q)?.scheduled;
        ensure!(
            sch != Some(true),
            "queue {q:?} is still in a runlist after the exit"
        );
    }
    no_fault(&*s)
}

pub(super) fn abnormal_exit(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, pages_teardown(4))?;
    let victim = s.ums()?.open_process(0)?;
    let other = s.ums()?.open_process(0)?;
    // The killed process's work waits on a gate in its own memory (its queues reach nothing
    // else); the gate opens after the kill, when nothing of it may run any more.
    let buf = s.ums()?.create_buffer(victim, BUF)?;
    let obuf = s.ums()?.create_buffer(other, BUF)?;
    let q = user_queue(&mut *s, victim, 0)?;
    let kq = s.ums()?.create_queue(victim, NewQueue::kernel_mode(1))?;
    let oq = user_queue(&mut *s, other, 0)?;
    s.ums()?.submit(
        q,
        &[
            Work::WaitAtLeast {
                buffer: buf,
                offset: 0,
                value: 1,
            },
            fill(buf, 8, 0xDEAD),
        ],
    )?;
    s.ums()?.submit(
        kq,
        &[
            Work::WaitAtLeast {
                buffer: buf,
                offset: 0,
                value: 1,
            },
            fill(buf, 16, 0xDEAD),
        ],
    )?;
    settle(&mut *s)?;
    let m = mark(&*s)?;
    s.ums()?.end_process(victim, ProcessEnd::Abnormal)?;
    let ev = events_since(&*s, m)?;
    let err = pos(&ev, |e| {
        *e == OsEvent::DeviceError {
            process: Some(victim),
        }
    });
    let sus = pos(&ev, |e| *e == OsEvent::SuspendContext { queue: Some(q) });
    let dis = pos(
        &ev,
        |e| matches!(e, OsEvent::OsDisconnect { queue, .. } if *queue == Some(q)),
    );
    let dd = pos(&ev, |e| {
        *e == OsEvent::DestroyDevice {
            process: Some(victim),
        }
    });
    ensure!(
        matches!((err, sus, dis, dd), (Some(a), Some(b), Some(c), Some(d)) if a < b && b < c && c < d),
        "expected device error < suspend < disconnect < destroy device: {ev:?}"
    );
    ensure!(
        !ev.iter().any(|e| matches!(e, OsEvent::WaitedIdle { .. })),
        "an abnormal exit waited for pending work: {ev:?}"
    );
    ensure!(
        !ev.iter()
            .any(|e| matches!(e, OsEvent::OsDisconnect { queue, .. } if *queue == Some(oq))),
        "the other process's doorbell was disconnected: {ev:?}"
    );
    // Open the gate: nothing of the killed process may run any more.
    s.ums()?.write_buffer(buf, 0, 1)?;
    settle(&mut *s)?;
    ensure!(
        s.ums_ref()?.read_buffer(buf, 8)? == 0 && s.ums_ref()?.read_buffer(buf, 16)? == 0,
        "work of the killed process ran after the exit"
    );
    for qq in [q, kq] {
        let sch = s.ums_ref()?.queue_info(qq)?.scheduled;
        ensure!(
            sch != Some(true),
            "a queue of the killed process is still in a runlist"
        );
    }
    expect_status(&*s, oq, DoorbellStatus::Connected, "the other process")?;
    let v = s.ums()?.submit(oq, &[fill(obuf, 24, 7)])?;
    wait(&mut *s, oq, v, "the other process")?;
    ensure!(
        s.ums_ref()?.read_buffer(obuf, 24)? == 7,
        "the other process's work did not run"
    );
    end_normally(&mut *s, other)
}

pub(super) fn device_loss_aborts_and_recreate(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, doorbells(4))?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let t = Tickets::new(&mut *s, buf, 0, 6)?;
    let q = user_queue(&mut *s, p, 0)?;
    let v = submit_tickets(&mut *s, q, &t, 0..2)?;
    wait(&mut *s, q, v, "before the loss")?;
    let m = mark(&*s)?;
    s.os_control()?
        .device_loss(0, DeviceLoss::DoorbellsAborted)?;
    expect_status(
        &*s,
        q,
        DoorbellStatus::DisconnectedAbort,
        "after device loss",
    )?;
    ensure!(
        s.os_trace_ref()?.doorbell_mapping(q)?.is_none(),
        "an aborted doorbell still maps the physical page"
    );
    // 24H2 writes no doorbell status itself: the ABORT is the KMD's, through
    // `DxgkCbDisconnectDoorbell`. Under the pages' reading the OS disconnects through the KMD
    // too; either way a disconnect, if any, says ABORT.
    let ev = events_since(&*s, m)?;
    ensure!(
        !ev.iter().any(|e| matches!(
            e,
            OsEvent::OsDisconnect { queue, reason } if *queue == Some(q)
                && *reason != DoorbellStatus::DisconnectedAbort
        )),
        "the lost device's doorbell was disconnected with another reason than ABORT: {ev:?}"
    );
    // The loss reset the device (an adapter-wide recovery): the queue reports it at its next
    // submission instead of falling back to a kernel-mode queue the device can no longer make.
    let r = s.ums()?.submit(q, &t.batch(2));
    let info = s.ums_ref()?.queue_info(q)?;
    ensure!(
        info.lost,
        "after the loss the queue is not lost (submit returned {r:?})"
    );
    // Removal changes nothing for it; a new process recreates everything.
    s.os_control()?.device_loss(0, DeviceLoss::Removed)?;
    s.ums()?.end_process(p, ProcessEnd::Abnormal)?;
    let p2 = s.ums()?.open_process(0)?;
    let buf2 = s.ums()?.create_buffer(p2, BUF)?;
    let t2 = Tickets::new(&mut *s, buf2, 0, 3)?;
    let q2 = user_queue(&mut *s, p2, 0)?;
    let v = submit_tickets(&mut *s, q2, &t2, 0..3)?;
    wait(&mut *s, q2, v, "recreated queue")?;
    t2.check(&*s, 3, "recreated queue")?;
    expect_path(&*s, q2, SubmitPath::UserMode, "recreated queue")?;
    end_normally(&mut *s, p2)
}
