//! A process's end as a program on Windows sees it (UM-17, UM-18): the ended process is a
//! child, and what is left to observe is the survivor's side. The OS's teardown order is
//! the OS form's (lifetime.rs); a program sees only that the teardown finished: the fences it
//! shared with the child read what the child's end signalled, its own queues keep their
//! doorbells and run on the same engine, new queues connect, and its device is not lost.

use crate::backend::{
    Backend, BufferRef, Capability, DoorbellStatus, ExecMode, NewQueue, ProcessEnd, ProcessRef,
    Session, SubmitPath, UmFenceRef, UmQueueRef,
};
use crate::case::{CaseError, CaseResult};
use crate::ensure;

use super::super::common::{fill, no_fault, session, two_forms, wait, Form};
use super::fixtures::{
    enough_doorbells, expect_path, expect_status, submit_tickets, user_queue, Tickets, BUF,
};

/// What the program form needs: user-mode queues, and native fences made through the UMD
/// to share with the child.
const PROGRAM: &[Capability] = &[
    Capability::UserModeSubmission,
    Capability::NativeFences,
    Capability::UmdFences,
];

/// The child's user-mode queues: the survivor makes as many new ones after the exit.
const CHILD_QUEUES: u32 = 2;

/// What an exit case uses where the backend has it, whichever its form.
pub(super) const OPTIONAL: &[Capability] = &[
    Capability::OsTrace,
    Capability::ConfiguredMachine,
    Capability::UmdFences,
    Capability::BugChecks,
    Capability::EndedProcessMemory,
];

/// The OS form's: its record of the teardown, and the ended process's memory, where it reads
/// what ran of the process's work.
const OS: &[Capability] = &[
    Capability::UserModeSubmission,
    Capability::OsTrace,
    Capability::ConfiguredMachine,
    Capability::NativeFences,
    Capability::EndedProcessMemory,
];

/// The form of an exit case on `b`: the OS's record where it has every capability of `os`,
/// else the program's view (a child process ends) where it has `program`.
pub(super) fn form(
    b: &dyn Backend,
    os: &[Capability],
    program: &[Capability],
) -> Result<Form, CaseError> {
    two_forms(b, (os, "the OS's record"), (program, "a child process"))
}

/// The surviving process (the program itself) with a buffer and a user-mode queue on node 0
/// whose first work ran.
fn survivor(s: &mut dyn Session) -> Result<(ProcessRef, BufferRef, UmQueueRef), CaseError> {
    let p = s.ums()?.open_process(0)?;
    let buf = s.ums()?.create_buffer(p, BUF)?;
    let q = user_queue(s, p, 0)?;
    let v = s.ums()?.submit(q, &[fill(buf, 0, 1)])?;
    wait(s, q, v, "the survivor before the exit")?;
    Ok((p, buf, q))
}

/// Fences shared with a child that is about to end: one it made that the program opened, one
/// the program made that it opened, and one of the program's it never held; each with the
/// value the program reads once the child has ended. 24H2 ends a process's devices in error
/// (`K:DXGPROCESS::Destroy` @0x14034D4E0), which signals to `u64::MAX` every fence registered
/// with them (`M:VidSchiSignalRegisteredSyncObjects` @0x14003B848): a fence's creator and a
/// plain opener register it (`K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC), whether the
/// process exits or is killed. A fence the child never held keeps its value.
fn shared_fences(
    s: &mut dyn Session,
    p: ProcessRef,
    child: ProcessRef,
) -> Result<Vec<(UmFenceRef, u64, &'static str)>, CaseError> {
    let theirs = s.umd_fences()?.create_um_fence(child, 3)?;
    let theirs_here = s.umd_fences()?.open_um_fence(theirs, p)?;
    let ours = s.umd_fences()?.create_um_fence(p, 5)?;
    s.umd_fences()?.open_um_fence(ours, child)?;
    let own = s.umd_fences()?.create_um_fence(p, 7)?;
    Ok(vec![
        (
            theirs_here,
            u64::MAX,
            "the child's fence the program opened",
        ),
        (ours, u64::MAX, "the program's fence the child opened"),
        (own, 7, "a fence of the program the child never held"),
    ])
}

/// Each fence of `fences` reads its value once the child has ended: the signals its end makes
/// are made by then ([`crate::backend::UserModeSubmission::end_process`]), so the program reads
/// them without waiting.
fn expect_fences(s: &mut dyn Session, fences: &[(UmFenceRef, u64, &str)]) -> CaseResult {
    for &(f, want, what) in fences {
        let got = s.umd_fences_ref()?.um_fence_value(f)?;
        ensure!(
            got == want,
            "{what} reads {got:#x} once the child has ended, expected {want:#x}"
        );
    }
    Ok(())
}

/// After the other process ended: the survivor's queue is still connected and runs work on
/// the user-mode path; [`CHILD_QUEUES`] new user-mode queues and a kernel-mode one on the same
/// engine run theirs once each, in order; nothing reports the device lost.
fn survivor_unaffected(
    s: &mut dyn Session,
    p: ProcessRef,
    buf: BufferRef,
    q: UmQueueRef,
    fences: &[(UmFenceRef, u64, &str)],
) -> CaseResult {
    expect_fences(s, fences)?;
    expect_status(&*s, q, DoorbellStatus::Connected, "the survivor's queue")?;
    let v = s.ums()?.submit(q, &[fill(buf, 8, 2)])?;
    wait(s, q, v, "the survivor's queue after the exit")?;
    ensure!(
        s.ums_ref()?.read_buffer(buf, 8)? == 2,
        "the survivor's work after the exit did not run"
    );
    expect_path(&*s, q, SubmitPath::UserMode, "the survivor's queue")?;
    let mut queues = vec![q];
    for i in 0..CHILD_QUEUES {
        let nq = user_queue(s, p, 0)?;
        let t = Tickets::new(s, buf, 64 + 128 * u64::from(i), 4)?;
        let v = submit_tickets(s, nq, &t, 0..4)?;
        wait(s, nq, v, "a new queue after the exit")?;
        t.check(&*s, 4, "a new queue after the exit")?;
        expect_path(&*s, nq, SubmitPath::UserMode, "a new queue after the exit")?;
        queues.push(nq);
    }
    let kq = s.ums()?.create_queue(p, NewQueue::kernel_mode(0))?;
    let t = Tickets::new(s, buf, 2048, 4)?;
    let v = submit_tickets(s, kq, &t, 0..4)?;
    wait(s, kq, v, "a new kernel-mode queue after the exit")?;
    t.check(&*s, 4, "a new kernel-mode queue after the exit")?;
    queues.push(kq);
    for q in queues {
        ensure!(
            !s.ums_ref()?.queue_info(q)?.lost,
            "the survivor's queue {q:?} reports its device lost"
        );
    }
    s.ums()?.end_process(p, ProcessEnd::Normal)?;
    no_fault(&*s)
}

/// UM-17 on Windows: a child with user-mode and kernel-mode queues waits for its work, then
/// exits; a second child exits with work submitted and its objects left to the OS.
pub(super) fn normal_exit_program(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Threaded, enough_doorbells(CHILD_QUEUES + 1))?;
    let (p, buf, q) = survivor(&mut *s)?;
    let mut fences = Vec::new();
    for waits in [true, false] {
        let c = s.ums()?.open_process(0)?;
        fences.extend(shared_fences(&mut *s, p, c)?);
        let cbuf = s.ums()?.create_buffer(c, BUF)?;
        let mut last = Vec::new();
        for i in 0..CHILD_QUEUES {
            let cq = user_queue(&mut *s, c, 0)?;
            let t = Tickets::new(&mut *s, cbuf, 256 * u64::from(i), 8)?;
            last.push((cq, submit_tickets(&mut *s, cq, &t, 0..8)?));
        }
        let kq = s.ums()?.create_queue(c, NewQueue::kernel_mode(0))?;
        let t = Tickets::new(&mut *s, cbuf, 2048, 4)?;
        last.push((kq, submit_tickets(&mut *s, kq, &t, 0..4)?));
        if waits {
            for (cq, v) in last {
                wait(&mut *s, cq, v, "the child's work before its exit")?;
            }
        }
        s.ums()?.end_process(c, ProcessEnd::Normal)?;
    }
    survivor_unaffected(&mut *s, p, buf, q, &fences)
}

/// UM-18 on Windows: a child is killed right after queueing a long run of work on each of its
/// queues, so it dies with work in flight (a gate in its memory would need a GPU wait the
/// child protocol does not forward); the program's side is unaffected.
pub(super) fn abnormal_exit_program(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Threaded, enough_doorbells(CHILD_QUEUES + 1))?;
    let (p, buf, q) = survivor(&mut *s)?;
    let c = s.ums()?.open_process(0)?;
    let fences = shared_fences(&mut *s, p, c)?;
    let cbuf = s.ums()?.create_buffer(c, BUF)?;
    let mut queues = Vec::new();
    for _ in 0..CHILD_QUEUES {
        queues.push(user_queue(&mut *s, c, 0)?);
    }
    queues.push(s.ums()?.create_queue(c, NewQueue::kernel_mode(0))?);
    for (i, cq) in (0u64..).zip(queues) {
        let t = Tickets::new(&mut *s, cbuf, 1024 * i, 64)?;
        submit_tickets(&mut *s, cq, &t, 0..64)?;
    }
    s.ums()?.end_process(c, ProcessEnd::Abnormal)?;
    survivor_unaffected(&mut *s, p, buf, q, &fences)
}

/// `UserModeSubmission.NormalExit`: the OS's teardown order where the backend reads the OS,
/// else the program's view.
pub(super) fn normal_exit(b: &dyn Backend) -> CaseResult {
    match form(b, OS, PROGRAM)? {
        Form::Os => super::lifetime::normal_exit(b),
        Form::Kmd => normal_exit_program(b),
    }
}

/// `UserModeSubmission.AbnormalExit`, chosen as [`normal_exit`] is.
pub(super) fn abnormal_exit(b: &dyn Backend) -> CaseResult {
    match form(b, OS, PROGRAM)? {
        Form::Os => super::lifetime::abnormal_exit(b),
        Form::Kmd => abnormal_exit_program(b),
    }
}
