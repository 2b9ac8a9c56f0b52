//! `UserModeSubmission.*`: user-mode work submission (UM-01 … UM-21) through the
//! UMD's submission core, the OS's thunks and the real KMD, one case per requirement group,
//! named after it.
//!
//! Work is checked with "tickets": batch `k` of a sequence copies a counter cell into slot `k`
//! and then sets the counter to `k + 1`. Slot `k` then reads `k` exactly when batch `k` ran
//! after batch `k − 1` and before batch `k + 1`; a batch that never ran leaves the slot's
//! sentinel, one that ran twice (or late) leaves a larger value. So a ticket check proves
//! "every batch ran exactly once, in submission order".

use std::time::Duration;

use crate::backend::{
    Backend, BufferRef, Capability, ChurnLane, DeviceLoss, DoorbellStatus, ExecMode, Failure,
    OsEvent, ProcessEnd, ProcessRef, Session, SessionConfig, SubmitPath, UmQueueRef, Work,
};
use crate::case::{Case, CaseError, CaseResult};
use crate::ensure;

use super::common::{fill, no_fault, observe, pos, session, wait};

/// `STATUS_NOT_SUPPORTED`.
const STATUS_NOT_SUPPORTED: i32 = 0xC000_00BB_u32 as i32;
/// `STATUS_INVALID_PARAMETER`.
const STATUS_INVALID_PARAMETER: i32 = 0xC000_000D_u32 as i32;
/// `DXGK_ENGINE_STATE_TRANSITION_TO_F1`.
const TRANSITION_TO_F1: i32 = 1;
/// Sentinel of a ticket slot no batch wrote.
const UNWRITTEN: u64 = u64::MAX;
/// Size of the buffers the cases create.
const BUF: u64 = 4096;

/// The cases of this area.
pub const CASES: &[Case] = &[
    Case {
        name: "UserModeSubmission.NodeMetadataAndCaps",
        requirements: &["UM-03", "UM-04"],
        summary: "node metadata for every node, a doorbell size in 1..=4096; user-mode queues \
                  exactly on the nodes that report UserModeSubmission, kernel-mode on all",
        needs: &[
            Capability::UserModeSubmission,
            Capability::NativeFences,
            Capability::KmdCaps,
        ],
        optional: &[Capability::BugChecks],
        run: node_metadata_and_caps,
    },
    Case {
        name: "UserModeSubmission.BothPathsTogether",
        requirements: &["UM-01"],
        summary: "a user-mode and a kernel-mode queue on one engine run interleaved batches \
                  exactly once each; only the kernel-mode queue goes through the kernel",
        needs: &[Capability::UserModeSubmission, Capability::NativeFences],
        optional: &[Capability::OsTrace, Capability::BugChecks],
        run: both_paths_together,
    },
    Case {
        name: "UserModeSubmission.UserQueueRefusesKernelPath",
        requirements: &["UM-05"],
        summary: "SubmitCommandToHwQueue on a user-mode queue is refused by the OS \
                  (INVALID_PARAMETER) and by the KMD; nothing runs; the queue still works",
        needs: &[
            Capability::UserModeSubmission,
            Capability::NativeFences,
            Capability::UmdBypass,
        ],
        optional: &[Capability::DirectDdi, Capability::BugChecks],
        run: user_queue_refuses_kernel_path,
    },
    Case {
        name: "UserModeSubmission.SubmitOrderAndProgressFence",
        requirements: &["UM-16"],
        summary: "progress values 1, 2, 3…; nothing completes behind a closed gate; 250 \
                  batches through a 4 KiB ring run exactly once, in order",
        needs: &[Capability::UserModeSubmission, Capability::NativeFences],
        optional: &[Capability::BugChecks],
        run: submit_order_and_progress_fence,
    },
    Case {
        name: "UserModeSubmission.DoorbellVictimisationWalkthrough",
        requirements: &["UM-20"],
        summary: "one physical doorbell, the seed's steps in order: connect 1; create + \
                  connect 2 victimises 1 (callback, RETRY, dummy page) before 2 maps page 0; \
                  1's submission reconnects, victimising 2; all work once",
        needs: &[
            Capability::UserModeSubmission,
            Capability::OsTrace,
            Capability::ConfiguredMachine,
            Capability::NativeFences,
        ],
        optional: &[Capability::BugChecks],
        run: victimisation_walkthrough,
    },
    Case {
        name: "UserModeSubmission.ReconnectAndRetry",
        requirements: &["UM-19", "UM-09"],
        summary: "three queues, one doorbell: every submission reconnects after RETRY and \
                  rings again, all on the user-mode path; losers map the dummy page",
        needs: &[
            Capability::UserModeSubmission,
            Capability::ConfiguredMachine,
            Capability::NativeFences,
        ],
        optional: &[Capability::OsTrace, Capability::BugChecks],
        run: reconnect_and_retry,
    },
    Case {
        name: "UserModeSubmission.GlobalDoorbell",
        requirements: &["UM-21"],
        summary: "global doorbell: three queues connect to page 0 at once, nobody is \
                  victimised, all work runs",
        needs: &[
            Capability::UserModeSubmission,
            Capability::ConfiguredMachine,
            Capability::NativeFences,
        ],
        optional: &[Capability::OsTrace, Capability::BugChecks],
        run: global_doorbell,
    },
    Case {
        name: "UserModeSubmission.SuspendResume",
        requirements: &["UM-11", "UM-12"],
        summary: "suspended: doorbell stays connected, queues leave the runlist, new work \
                  (user and kernel mode) waits; resumed: it runs, once",
        needs: &[
            Capability::UserModeSubmission,
            Capability::OsTrace,
            Capability::OsControl,
            Capability::ConfiguredMachine,
            Capability::NativeFences,
        ],
        optional: &[Capability::BugChecks],
        run: suspend_resume,
    },
    Case {
        name: "UserModeSubmission.EngineF1",
        requirements: &["UM-13"],
        summary: "an idle engine's F1 request on an OS that disconnects doorbells first (the \
                  pages; 24H2 does not): that engine's doorbells RETRY, not the other's, then \
                  F1; the next submission brings F0 back",
        needs: &[
            Capability::UserModeSubmission,
            Capability::OsTrace,
            Capability::ConfiguredMachine,
            Capability::NativeFences,
            Capability::EngineIdle,
        ],
        optional: &[Capability::BugChecks],
        run: engine_f1,
    },
    Case {
        name: "UserModeSubmission.D3AndBack",
        requirements: &["UM-14", "UM-16"],
        summary: "no D3 while a queue has work; idle, on an OS that disconnects doorbells \
                  (the pages; 24H2 does not): suspend all, disconnect all, D3; a submission: \
                  D0, connect, resume, work runs",
        needs: &[
            Capability::UserModeSubmission,
            Capability::OsTrace,
            Capability::OsControl,
            Capability::ConfiguredMachine,
            Capability::NativeFences,
        ],
        optional: &[Capability::BugChecks],
        run: d3_and_back,
    },
    Case {
        name: "UserModeSubmission.NormalExit",
        requirements: &["UM-17"],
        summary: "exit with queues open: disconnect, wait for the last queued value (where \
                  the OS sees the queue's work), destroy doorbell, queue, allocations, \
                  context, device; all work the OS waited for ran",
        needs: &[
            Capability::UserModeSubmission,
            Capability::OsTrace,
            Capability::ConfiguredMachine,
            Capability::NativeFences,
        ],
        optional: &[Capability::BugChecks],
        run: normal_exit,
    },
    Case {
        name: "UserModeSubmission.AbnormalExit",
        requirements: &["UM-18"],
        summary: "kill: device in error, suspend before disconnect, no waiting; nothing of \
                  the process runs afterwards; another process is unaffected",
        needs: &[
            Capability::UserModeSubmission,
            Capability::OsTrace,
            Capability::ConfiguredMachine,
            Capability::NativeFences,
        ],
        optional: &[Capability::BugChecks],
        run: abnormal_exit,
    },
    Case {
        name: "UserModeSubmission.DeviceLossAbortsAndRecreate",
        requirements: &["UM-10", "UM-19"],
        summary: "doorbells aborted: ABORT status, the queue falls back to the kernel-mode \
                  path without losing work; removed: the queue is lost, a new process works",
        needs: &[
            Capability::UserModeSubmission,
            Capability::OsTrace,
            Capability::OsControl,
            Capability::ConfiguredMachine,
            Capability::NativeFences,
        ],
        optional: &[Capability::BugChecks],
        run: device_loss_aborts_and_recreate,
    },
    Case {
        name: "UserModeSubmission.RingAllocationsReferenced",
        requirements: &["UM-07", "UM-08"],
        summary: "the doorbell holds the ring: the UMD's handles closed, the ring stays and \
                  keeps running work (also while victimised) until the queue is destroyed",
        needs: &[
            Capability::UserModeSubmission,
            Capability::ConfiguredMachine,
            Capability::NativeFences,
            Capability::UmdBypass,
        ],
        optional: &[Capability::OsTrace, Capability::BugChecks],
        run: ring_allocations_referenced,
    },
    Case {
        name: "UserModeSubmission.ThreadedChurn",
        requirements: &["UM-19", "UM-20"],
        summary: "threaded: 3 processes x 2 engines churn queues on 2 doorbells next to 3 \
                  long-lived queues; every batch runs exactly once, doorbells are victimised",
        needs: &[
            Capability::UserModeSubmission,
            Capability::ConfiguredMachine,
            Capability::NativeFences,
        ],
        optional: &[Capability::OsTrace, Capability::BugChecks],
        run: threaded_churn,
    },
];

// ---------------------------------------------------------------------------------------------
// Fixtures.

/// Exactly `n` doorbells (fewer than the queues: victimisation).
fn doorbells(n: u32) -> impl FnOnce(&mut SessionConfig) {
    move |c| c.doorbells = Some(n)
}

/// At least `n` doorbells: the case's queues never share one.
fn enough_doorbells(n: u32) -> impl FnOnce(&mut SessionConfig) {
    move |c| c.min_doorbells = Some(n)
}

/// A ticket sequence in `buf` at byte `base`: the counter cell, then one slot per batch.
#[derive(Clone, Copy, Debug)]
struct Tickets {
    buf: BufferRef,
    base: u64,
    count: u64,
}

impl Tickets {
    /// Sets the counter to 0 and every slot to the sentinel.
    fn new(s: &mut dyn Session, buf: BufferRef, base: u64, count: u64) -> Result<Self, Failure> {
        s.ums()?.write_buffer(buf, base, 0)?;
        for k in 0..count {
            s.ums()?.write_buffer(buf, base + 8 * (k + 1), UNWRITTEN)?;
        }
        Ok(Self { buf, base, count })
    }

    /// Batch `k`: slot k ← counter; counter ← k + 1.
    fn batch(&self, k: u64) -> Vec<Work> {
        vec![
            Work::Copy {
                src: self.buf,
                src_offset: self.base,
                dst: self.buf,
                dst_offset: self.base + 8 * (k + 1),
                bytes: 8,
            },
            fill(self.buf, self.base, k + 1),
        ]
    }

    /// Batches `0..n` ran exactly once, in order, and nothing after them.
    fn check(&self, s: &dyn Session, n: u64, what: &str) -> CaseResult {
        for k in 0..self.count {
            let got = s
                .ums_ref()?
                .read_buffer(self.buf, self.base + 8 * (k + 1))?;
            let want = if k < n { k } else { UNWRITTEN };
            ensure!(
                got == want,
                "{what}: ticket slot {k} reads {} (expected {}): {}",
                show(got),
                show(want),
                if got == UNWRITTEN {
                    "batch never ran"
                } else if k >= n {
                    "a batch that was not submitted (or was refused) ran"
                } else if got > k {
                    "batch ran more than once or out of order"
                } else {
                    "batch ran before its predecessor"
                }
            );
        }
        let counter = s.ums_ref()?.read_buffer(self.buf, self.base)?;
        ensure!(
            counter == n,
            "{what}: ticket counter {counter}, expected {n}"
        );
        Ok(())
    }
}

fn show(v: u64) -> String {
    if v == UNWRITTEN {
        "unwritten".into()
    } else {
        v.to_string()
    }
}

/// Submits ticket batches `range` to `q`; returns the last progress value.
fn submit_tickets(
    s: &mut dyn Session,
    q: UmQueueRef,
    t: &Tickets,
    range: std::ops::Range<u64>,
) -> Result<u64, Failure> {
    let mut last = 0;
    for k in range {
        last = s.ums()?.submit(q, &t.batch(k))?;
    }
    Ok(last)
}

/// Lets the machine run a little (step: 300 rounds; threaded: 3 ms) for work that must NOT
/// happen.
fn settle(s: &mut dyn Session) -> CaseResult {
    s.run_until(Duration::from_millis(3), &mut |_| false)?;
    Ok(())
}

fn count(ev: &[OsEvent], p: impl Fn(&OsEvent) -> bool) -> usize {
    ev.iter().filter(|e| p(e)).count()
}

fn events_since(s: &dyn Session, mark: usize) -> Result<Vec<OsEvent>, Failure> {
    Ok(s.os_trace_ref()?
        .os_events(0)?
        .into_iter()
        .skip(mark)
        .collect())
}

fn mark(s: &dyn Session) -> Result<usize, Failure> {
    Ok(s.os_trace_ref()?.os_events(0)?.len())
}

/// The OS trace since an optional mark (see [`observe`]).
fn trace(s: &dyn Session, mark: Option<usize>) -> Result<Option<Vec<OsEvent>>, Failure> {
    mark.map_or(Ok(None), |m| events_since(s, m).map(Some))
}

/// A process on adapter 0 with one buffer of [`BUF`] bytes.
fn process_with_buffer(s: &mut dyn Session) -> Result<(ProcessRef, BufferRef), Failure> {
    let p = s.ums()?.open_process(0)?;
    Ok((p, s.ums()?.create_buffer(p, BUF)?))
}

/// Ends `p` normally, then fails on a bug check.
fn end_normally(s: &mut dyn Session, p: ProcessRef) -> CaseResult {
    s.ums()?.end_process(p, ProcessEnd::Normal)?;
    no_fault(&*s)
}

fn user_queue(s: &mut dyn Session, p: ProcessRef, node: u32) -> Result<UmQueueRef, Failure> {
    s.ums()?.create_queue(p, node, SubmitPath::UserMode)
}

fn expect_path(s: &dyn Session, q: UmQueueRef, path: SubmitPath, what: &str) -> CaseResult {
    let got = s.ums_ref()?.queue_info(q)?.path;
    ensure!(
        got == path,
        "{what}: queue submits on {got:?}, expected {path:?}"
    );
    Ok(())
}

fn expect_status(s: &dyn Session, q: UmQueueRef, want: DoorbellStatus, what: &str) -> CaseResult {
    let got = s.ums_ref()?.doorbell_status(q)?;
    let ok = if want == DoorbellStatus::Connected {
        got.is_connected()
    } else {
        got == want
    };
    ensure!(ok, "{what}: doorbell status {got:?}, expected {want:?}");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// UM-03, UM-04.

fn node_metadata_and_caps(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, enough_doorbells(4))?;
    let nodes = s.kmd_caps()?.driver_caps(0)?.nodes;
    let caps = s.kmd_caps()?.submission_caps(0)?;
    ensure!(
        caps.user_mode_nodes.len() == nodes as usize,
        "node metadata for {} nodes, DRIVERCAPS reports {nodes}",
        caps.user_mode_nodes.len()
    );
    ensure!(
        caps.user_mode_nodes.iter().any(|u| *u),
        "no node reports UserModeSubmission"
    );
    let size = caps.doorbell_size;
    ensure!(
        size.is_some_and(|z| (1..=4096).contains(&z)),
        "USERMODESUBMISSION_CAPS doorbell size {size:?}, must be 1..=4096"
    );
    let (p, t) = process_with_buffer(&mut *s)?;
    for (node, ums) in caps.user_mode_nodes.iter().enumerate() {
        let node = node as u32;
        let kq = s.ums()?.create_queue(p, node, SubmitPath::KernelMode)?;
        let v = s
            .ums()?
            .submit(kq, &[fill(t, 8 * u64::from(node), 0x100 + u64::from(node))])?;
        wait(&mut *s, kq, v, "kernel-mode queue")?;
        match user_queue(&mut *s, p, node) {
            Ok(q) => {
                ensure!(
                    *ums,
                    "a user-mode queue was created on node {node}, which has no UserModeSubmission"
                );
                expect_path(&*s, q, SubmitPath::UserMode, "new user-mode queue")?;
                expect_status(&*s, q, DoorbellStatus::Connected, "new user-mode queue")?;
                let v = s
                    .ums()?
                    .submit(q, &[fill(t, 64 + 8 * u64::from(node), 0x200)])?;
                wait(&mut *s, q, v, "user-mode queue")?;
                s.ums()?.close_queue(q)?;
            }
            Err(Failure::DdiFailed(STATUS_NOT_SUPPORTED)) => {
                ensure!(
                    !*ums,
                    "node {node} reports UserModeSubmission but refused a user-mode queue"
                );
            }
            Err(e) => return Err(e.into()),
        }
        s.ums()?.close_queue(kq)?;
        ensure!(
            s.ums_ref()?.read_buffer(t, 8 * u64::from(node))? == 0x100 + u64::from(node),
            "node {node}: kernel-mode work did not run"
        );
    }
    end_normally(&mut *s, p)
}

// ---------------------------------------------------------------------------------------------
// UM-01, UM-05.

fn both_paths_together(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, enough_doorbells(4))?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let tu = Tickets::new(&mut *s, buf, 0, 16)?;
    let tk = Tickets::new(&mut *s, buf, 1024, 16)?;
    let uq = user_queue(&mut *s, p, 0)?;
    let kq = s.ums()?.create_queue(p, 0, SubmitPath::KernelMode)?;
    let m = observe(mark(&*s))?;
    let (mut lu, mut lk) = (0, 0);
    for k in 0..16 {
        lu = s.ums()?.submit(uq, &tu.batch(k))?;
        lk = s.ums()?.submit(kq, &tk.batch(k))?;
    }
    wait(&mut *s, uq, lu, "user-mode queue")?;
    wait(&mut *s, kq, lk, "kernel-mode queue")?;
    tu.check(&*s, 16, "user-mode queue")?;
    tk.check(&*s, 16, "kernel-mode queue")?;
    expect_path(&*s, uq, SubmitPath::UserMode, "user-mode queue")?;
    expect_path(&*s, kq, SubmitPath::KernelMode, "kernel-mode queue")?;
    if let Some(ev) = trace(&*s, m)? {
        let ks = count(
            &ev,
            |e| matches!(e, OsEvent::KernelSubmit { queue, .. } if *queue == Some(kq)),
        );
        let us = count(
            &ev,
            |e| matches!(e, OsEvent::KernelSubmit { queue, .. } if *queue == Some(uq)),
        );
        ensure!(
            ks == 16,
            "{ks} kernel submissions of the kernel-mode queue, expected 16"
        );
        ensure!(
            us == 0,
            "the user-mode queue went through the kernel {us} times"
        );
    }
    s.ums()?.close_queue(uq)?;
    s.ums()?.close_queue(kq)?;
    end_normally(&mut *s, p)
}

fn user_queue_refuses_kernel_path(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, enough_doorbells(4))?;
    let (p, t) = process_with_buffer(&mut *s)?;
    let q = user_queue(&mut *s, p, 0)?;
    let st = s
        .umd_bypass()?
        .kernel_submit_on_user_queue(q, &[fill(t, 0, 0xBAD)])?;
    ensure!(
        st == STATUS_INVALID_PARAMETER,
        "D3DKMTSubmitCommandToHwQueue on a user-mode queue returned {:#010x}, expected \
         STATUS_INVALID_PARAMETER",
        st as u32
    );
    let direct = observe(
        s.direct_ddi()
            .and_then(|d| d.ddi_submit_on_user_queue(q, &[fill(t, 8, 0xBAD)])),
    )?;
    ensure!(
        direct.is_none_or(|st| st < 0),
        "the KMD accepted DxgkDdiSubmitCommandToHwQueue on a user-mode queue ({:#010x})",
        direct.unwrap_or(0) as u32
    );
    settle(&mut *s)?;
    ensure!(
        s.ums_ref()?.read_buffer(t, 0)? == 0 && s.ums_ref()?.read_buffer(t, 8)? == 0,
        "refused kernel-mode work ran"
    );
    let v = s.ums()?.submit(q, &[fill(t, 16, 0x600D)])?;
    ensure!(v == 1, "first user-mode progress value {v}, expected 1");
    wait(&mut *s, q, v, "user-mode queue after the refusals")?;
    ensure!(
        s.ums_ref()?.read_buffer(t, 16)? == 0x600D,
        "user-mode work did not run"
    );
    s.ums()?.close_queue(q)?;
    end_normally(&mut *s, p)
}

// ---------------------------------------------------------------------------------------------
// UM-16.

fn submit_order_and_progress_fence(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, enough_doorbells(4))?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let gate = s.ums()?.create_buffer(p, BUF)?;
    let t = Tickets::new(&mut *s, buf, 0, 250)?;
    let q = user_queue(&mut *s, p, 0)?;
    // Behind a closed gate: values are handed out in order, nothing completes.
    let g = s.ums()?.submit(
        q,
        &[Work::WaitAtLeast {
            buffer: gate,
            offset: 0,
            value: 1,
        }],
    )?;
    ensure!(g == 1, "first progress value {g}, expected 1");
    for k in 0..10 {
        let v = s.ums()?.submit(q, &t.batch(k))?;
        ensure!(
            v == k + 2,
            "batch {k} got progress value {v}, expected {}",
            k + 2
        );
    }
    settle(&mut *s)?;
    let info = s.ums_ref()?.queue_info(q)?;
    ensure!(
        info.last_submitted == 11 && info.completed == 0,
        "behind the gate: last submitted {}, completed {} (expected 11, 0)",
        info.last_submitted,
        info.completed
    );
    t.check(&*s, 0, "behind the gate")?;
    s.ums()?.write_buffer(gate, 0, 1)?;
    wait(&mut *s, q, 11, "after opening the gate")?;
    t.check(&*s, 10, "after opening the gate")?;
    // Many more than the 4 KiB ring holds: the UMD wraps and waits for room.
    let last = submit_tickets(&mut *s, q, &t, 10..250)?;
    ensure!(last == 251, "last progress value {last}, expected 251");
    wait(&mut *s, q, last, "250 batches")?;
    t.check(&*s, 250, "250 batches")?;
    let info = s.ums_ref()?.queue_info(q)?;
    ensure!(
        info.completed == 251,
        "completed {} after the wait",
        info.completed
    );
    expect_path(&*s, q, SubmitPath::UserMode, "after 250 batches")?;
    s.ums()?.close_queue(q)?;
    end_normally(&mut *s, p)
}

// ---------------------------------------------------------------------------------------------
// UM-19, UM-20, UM-21, UM-09.

fn victimisation_walkthrough(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, doorbells(1))?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let t1 = Tickets::new(&mut *s, buf, 0, 4)?;
    let t2 = Tickets::new(&mut *s, buf, 512, 4)?;
    // 1. Queue 1's doorbell connects to the only physical doorbell.
    let m0 = mark(&*s)?;
    let q1 = user_queue(&mut *s, p, 0)?;
    expect_status(&*s, q1, DoorbellStatus::Connected, "step 1, doorbell 1")?;
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
    // 2 + 3. Queue 2's doorbell is created without a physical doorbell, then its connect
    // victimises doorbell 1 through the callback before doorbell 2 gets page 0.
    let m1 = mark(&*s)?;
    let q2 = user_queue(&mut *s, p, 0)?;
    let ev = events_since(&*s, m1)?;
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
    expect_status(
        &*s,
        q1,
        DoorbellStatus::DisconnectedRetry,
        "step 3, doorbell 1",
    )?;
    ensure!(
        s.os_trace_ref()?.doorbell_mapping(q1)?.is_none(),
        "step 3: doorbell 1 still maps the physical page"
    );
    expect_status(&*s, q2, DoorbellStatus::Connected, "step 3, doorbell 2")?;
    ensure!(
        s.os_trace_ref()?.doorbell_mapping(q2)? == Some(0),
        "step 3: doorbell 2 does not map page 0"
    );
    // 4. Queue 1 submits: it reads RETRY, reconnects (victimising 2) and rings again.
    let m2 = mark(&*s)?;
    let v1 = submit_tickets(&mut *s, q1, &t1, 0..2)?;
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
    wait(&mut *s, q1, v1, "step 4")?;
    t1.check(&*s, 2, "step 4, queue 1")?;
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

fn reconnect_and_retry(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, doorbells(1))?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let mut qs = Vec::new();
    for i in 0..3u64 {
        let t = Tickets::new(&mut *s, buf, 512 * i, 5)?;
        qs.push((user_queue(&mut *s, p, 0)?, t, 0));
    }
    let m = observe(mark(&*s))?;
    for k in 0..5 {
        for (q, t, last) in &mut qs {
            *last = s.ums()?.submit(*q, &t.batch(k))?;
        }
    }
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

fn global_doorbell(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, |c| {
        c.doorbells = Some(1);
        c.global_doorbell = true;
    })?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let m = observe(mark(&*s))?;
    let mut qs = Vec::new();
    for i in 0..3u64 {
        let t = Tickets::new(&mut *s, buf, 512 * i, 4)?;
        qs.push((user_queue(&mut *s, p, 0)?, t, 0));
    }
    for k in 0..4 {
        for (q, t, last) in &mut qs {
            *last = s.ums()?.submit(*q, &t.batch(k))?;
        }
    }
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

// ---------------------------------------------------------------------------------------------
// UM-11 … UM-14.

fn suspend_resume(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, doorbells(4))?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let tu = Tickets::new(&mut *s, buf, 0, 3)?;
    let tk = Tickets::new(&mut *s, buf, 512, 3)?;
    let uq = user_queue(&mut *s, p, 0)?;
    let kq = s.ums()?.create_queue(p, 1, SubmitPath::KernelMode)?;
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

fn engine_f1(b: &dyn Backend) -> CaseResult {
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

fn d3_and_back(b: &dyn Backend) -> CaseResult {
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

// ---------------------------------------------------------------------------------------------
// UM-17, UM-18, UM-10.

fn normal_exit(b: &dyn Backend) -> CaseResult {
    // The pages' order; 24H2 frees the allocations first (simos `Teardown`).
    let mut s = session(b, ExecMode::Step, |c| {
        c.doorbells = Some(4);
        c.pages_teardown = true;
    })?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let tu = Tickets::new(&mut *s, buf, 0, 16)?;
    let tk = Tickets::new(&mut *s, buf, 1024, 4)?;
    let uq = user_queue(&mut *s, p, 0)?;
    let kq = s.ums()?.create_queue(p, 1, SubmitPath::KernelMode)?;
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

fn abnormal_exit(b: &dyn Backend) -> CaseResult {
    // The pages' order; 24H2 frees the allocations first (simos `Teardown`).
    let mut s = session(b, ExecMode::Step, |c| {
        c.doorbells = Some(4);
        c.pages_teardown = true;
    })?;
    let victim = s.ums()?.open_process(0)?;
    let other = s.ums()?.open_process(0)?;
    // The killed process's work waits on a gate in its own memory (its queues reach nothing
    // else); the gate opens after the kill, when nothing of it may run any more.
    let buf = s.ums()?.create_buffer(victim, BUF)?;
    let obuf = s.ums()?.create_buffer(other, BUF)?;
    let q = user_queue(&mut *s, victim, 0)?;
    let kq = s.ums()?.create_queue(victim, 1, SubmitPath::KernelMode)?;
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

fn device_loss_aborts_and_recreate(b: &dyn Backend) -> CaseResult {
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
    // The pages have the OS disconnect it through the KMD; 24H2 only writes the status (windows-bringup.md §13
    // of docs/windows-bringup.md). Either way a disconnect, if any, says ABORT.
    let ev = events_since(&*s, m)?;
    ensure!(
        !ev.iter().any(|e| matches!(
            e,
            OsEvent::OsDisconnect { queue, reason } if *queue == Some(q)
                && *reason != DoorbellStatus::DisconnectedAbort
        )),
        "the lost device's doorbell was disconnected with another reason than ABORT: {ev:?}"
    );
    // UM-19: ABORT → the kernel-mode path, without losing or repeating a batch.
    let v = submit_tickets(&mut *s, q, &t, 2..4)?;
    expect_path(&*s, q, SubmitPath::KernelMode, "after ABORT")?;
    wait(&mut *s, q, v, "on the kernel-mode path")?;
    t.check(&*s, 4, "across the fallback")?;
    // Removal: the queue is lost; a new process recreates everything.
    s.os_control()?.device_loss(0, DeviceLoss::Removed)?;
    let r = s.ums()?.submit(q, &t.batch(4));
    let info = s.ums_ref()?.queue_info(q)?;
    ensure!(
        info.lost,
        "after removal the queue is not lost (submit returned {r:?})"
    );
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

// ---------------------------------------------------------------------------------------------
// UM-07, UM-08.

fn ring_allocations_referenced(b: &dyn Backend) -> CaseResult {
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

fn threaded_churn(b: &dyn Backend) -> CaseResult {
    const ROUNDS: u32 = 6;
    const PER: u32 = 4;
    let n = u64::from(ROUNDS * PER);
    let mut s = session(b, ExecMode::Threaded, doorbells(2))?;
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
            "9 queues on 2 doorbells, yet no victimisation during the churn"
        );
    }
    for (p, _, _) in tickets.iter().step_by(2) {
        s.ums()?.end_process(*p, ProcessEnd::Normal)?;
    }
    no_fault(&*s)
}
