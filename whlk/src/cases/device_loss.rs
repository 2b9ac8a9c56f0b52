//! `DeviceLoss.*`: one case per kind of device loss, each asserting only what a program on
//! 24H2 observes of it: its doorbells' status page, `STATUS_DEVICE_REMOVED` from a thunk,
//! `D3DKMTGetDeviceState`, native-fence values and its own buffers (UM-10, TDR-05, TDR-08).
//!
//! The losses 24H2 deals out:
//! - an engine reset (`M:VidSchiResetHwEngine` @0x140052878) puts the guilty device in error
//!   (`M:VidSchiMarkDeviceAsError` @0x14001FF30), which signals what that device registered
//!   (`M:VidSchiSignalRegisteredSyncObjects` @0x14003B848) and writes no doorbell status: the
//!   KMD aborts the guilty doorbells through `K:DxgkDisconnectDoorbellCB` @0x1401DB180. Other
//!   devices, other processes' and the guilty process's other device alike, are left alone;
//! - an adapter-wide recovery (`K:ADAPTER_RENDER::Reset` @0x1403F2C34) resets every device of
//!   the adapter (`K:DXGDEVICE::Reset` @0x1401BB7FC): each reads RESET, or HUNG where VidSch
//!   found it hung (`K:DXGDEVICE::GetDeviceExecutionState` @0x1402ABBB0), and its thunks that
//!   take the device's core access answer `STATUS_DEVICE_REMOVED`
//!   (`K:COREDEVICEACCESS::AcquireShared` @0x14000F550); devices created afterwards work.
//!
//! A case causes an engine reset with a HANG on a user-mode queue, which every backend with
//! TDR can submit. An adapter-wide recovery is the OS's (a forced TDR, [`OsControl`]) where
//! the backend steers the OS, else the promotion of a failing engine reset armed in the KMD
//! through its test hooks ([`KmdFaults`]); a backend with neither skips the case naming both.
//!
//! [`OsControl`]: crate::backend::OsControl
//! [`KmdFaults`]: crate::backend::KmdFaults

use std::time::Duration;

use rvgpu_hw::testhooks::TestHookOp;
use rvgpu_umd::kmt::DeviceExecutionState;

use crate::backend::{
    Backend, BufferRef, Capability, DeviceLoss, DoorbellStatus, ExecMode, Failure, NewQueue,
    ProcessEnd, ProcessRef, Session, TdrStep, TdrTimeouts, UmQueueRef, WaitResult, Work,
};
use crate::case::{Case, CaseError, CaseResult};
use crate::ensure;

use super::common::{fill, no_fault, observe, session, wait};
use rvgpu_ddi::ntstatus::{STATUS_DEVICE_REMOVED, STATUS_INVALID_PARAMETER};

const BUF: u64 = 4096;
/// The budget of a wait for a recovery: a machine that runs on its own may take Windows'
/// `TdrDelay` (2 s) to detect; a step-mode wait ends as soon as its condition holds.
const RECOVERY: Duration = Duration::from_secs(10);

/// Device loss as an application sees it.
const APP_VIEW: &[Capability] = &[
    Capability::UserModeSubmission,
    Capability::Tdr,
    Capability::NativeFences,
];
/// What the cases observe when the backend has it.
const SEEN: &[Capability] = &[
    Capability::TdrTrace,
    Capability::OsTrace,
    Capability::BugChecks,
];
/// The cases that need an adapter-wide recovery: either way of causing one.
const ADAPTER_WIDE: &[Capability] = &[
    Capability::OsControl,
    Capability::KmdFaults,
    Capability::KmdJournal,
    Capability::TdrTrace,
    Capability::BugChecks,
];

/// The cases of this area.
pub const CASES: &[Case] = &[
    Case {
        name: "DeviceLoss.GuiltyDevice",
        requirements: &["UM-10", "TDR-05"],
        summary: "a user-mode HANG: every doorbell of the guilty device aborted by the KMD, the \
                  hung batch never reported done, each queue refused, the device HUNG; a new \
                  device works",
        needs: APP_VIEW,
        optional: SEEN,
        run: guilty_device,
    },
    Case {
        name: "DeviceLoss.BystanderEngineReset",
        requirements: &["UM-10", "TDR-05"],
        summary: "another process's work in flight on the hung engine: the engine reset leaves \
                  its device ACTIVE and its doorbell connected, and the work runs once released",
        needs: APP_VIEW,
        optional: SEEN,
        run: bystander_engine_reset,
    },
    Case {
        name: "DeviceLoss.IdleDevice",
        requirements: &["UM-10"],
        summary: "an idle device through another process's engine reset: ACTIVE, connected, \
                  its next work runs",
        needs: APP_VIEW,
        optional: SEEN,
        run: idle_device,
    },
    Case {
        name: "DeviceLoss.SiblingDevice",
        requirements: &["UM-10", "TDR-05"],
        summary: "one device of a process hangs: its sibling device in the same process stays \
                  ACTIVE, its doorbell connected, its fence keeps its value and its work in \
                  flight runs",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::NativeFences,
            Capability::UmdFences,
        ],
        optional: SEEN,
        run: sibling_device,
    },
    Case {
        name: "DeviceLoss.AdapterResetEveryDevice",
        requirements: &["UM-10", "TDR-08"],
        summary: "an adapter-wide recovery: a device with work in flight and an idle one both \
                  read RESET and get DEVICE_REMOVED from a thunk, the work in flight never runs; \
                  new devices work on both engines",
        needs: APP_VIEW,
        optional: ADAPTER_WIDE,
        run: adapter_reset_every_device,
    },
    Case {
        name: "DeviceLoss.SharedFenceAcrossProcesses",
        requirements: &["UM-10", "NF-13"],
        summary: "a fence the guilty device created and another process opened, and one the \
                  other created and the guilty opened: both read u64::MAX for the opener; a fence \
                  the guilty never held keeps its value",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::NativeFences,
            Capability::UmdFences,
        ],
        optional: SEEN,
        run: shared_fence_across_processes,
    },
    Case {
        name: "DeviceLoss.KillWhileHung",
        requirements: &["UM-10", "UM-18"],
        summary:
            "the guilty process killed while its HANG holds the engine, before its reset: the \
                  recovery completes, another process's work runs, a new device works",
        needs: APP_VIEW,
        optional: SEEN,
        run: kill_while_hung,
    },
    Case {
        name: "DeviceLoss.KillDuringRecovery",
        requirements: &["UM-10", "UM-18", "TDR-05"],
        summary: "the guilty process killed from another thread while the OS's recovery of its \
                  HANG is under way: the recovery completes, another process's device stays \
                  ACTIVE and its work in flight runs, a new device works, no bug check",
        // No Windows form: the KMD's test hooks fail a reset or hang a paging buffer but hold
        // none open, and no D3DKMT call pauses the OS's recovery.
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::NativeFences,
            Capability::HeldRecovery,
        ],
        optional: &[
            Capability::TdrTrace,
            Capability::OsTrace,
            Capability::BugChecks,
        ],
        run: kill_during_recovery,
    },
];

// ---------------------------------------------------------------------------------------------
// Fixtures.

/// A step-mode session (a backend that cannot step runs on its own) with TDR on and room for
/// the cases' doorbells.
fn loss_session(b: &dyn Backend) -> Result<Box<dyn Session>, CaseError> {
    let mut s = session(b, ExecMode::Step, |c| c.min_doorbells = Some(8))?;
    s.tdr()?.enable_tdr(0, TdrTimeouts::fast())?;
    Ok(s)
}

/// A process with a buffer.
fn process(s: &mut dyn Session) -> Result<(ProcessRef, BufferRef), Failure> {
    let p = s.ums()?.open_process(0)?;
    let b = s
        .ums()?
        .create_buffer(p, BUF)
        .map_err(|e| Failure::Backend(format!("create_buffer: {e}")))?;
    Ok((p, b))
}

/// A user-mode queue of `p` on `node`, warmed up with one FILL at `offset` of `b` (its ring
/// mapped, its first work done) so that what follows is the case's alone.
fn warm_queue(
    s: &mut dyn Session,
    p: ProcessRef,
    node: u32,
    b: BufferRef,
    offset: u64,
) -> Result<UmQueueRef, CaseError> {
    let q = s
        .ums()?
        .create_queue(p, NewQueue::user_mode(node))
        .map_err(|e| CaseError::Fail(format!("create_queue: {e}")))?;
    let v = s
        .ums()?
        .submit(q, &[fill(b, offset, 0x1000 + u64::from(node))])
        .map_err(|e| CaseError::Fail(format!("submit: {e}")))?;
    wait(s, q, v, "warm-up")?;
    Ok(q)
}

/// Runs until `done` holds (within [`RECOVERY`]), or fails naming `what`.
fn until(s: &mut dyn Session, what: &str, done: impl Fn(&dyn Session) -> bool) -> CaseResult {
    let held = s.run_until(RECOVERY, &mut |s| done(s))?;
    ensure!(
        held,
        "{what}: not reached; TDR steps {:?}",
        steps(s).unwrap_or_default()
    );
    Ok(())
}

/// The OS's recovery steps, where the backend shows them.
fn steps(s: &dyn Session) -> Option<Vec<TdrStep>> {
    s.tdr_trace_ref().and_then(|t| t.tdr_steps(0)).ok()
}

fn aborted(s: &dyn Session, q: UmQueueRef) -> bool {
    s.ums_ref().and_then(|u| u.doorbell_status(q)) == Ok(DoorbellStatus::DisconnectedAbort)
}

/// The device's execution state where the backend reads it (`D3DKMTGetDeviceState`).
fn state(s: &mut dyn Session, p: ProcessRef) -> Result<Option<DeviceExecutionState>, Failure> {
    observe(s.tdr().and_then(|t| t.device_state(p)))
}

/// The device's execution state once it no longer reads ACTIVE, or ACTIVE after
/// [`RECOVERY`] (a machine that runs on its own finishes the recovery on its own time).
fn settled_state(
    s: &mut dyn Session,
    p: ProcessRef,
) -> Result<Option<DeviceExecutionState>, CaseError> {
    let t0 = std::time::Instant::now();
    loop {
        let st = state(s, p)?;
        if st != Some(DeviceExecutionState::ACTIVE) || t0.elapsed() > RECOVERY {
            return Ok(st);
        }
        s.run_until(Duration::from_millis(1), &mut |_| false)?;
    }
}

/// Fails unless `p`'s device reads `want` (where the backend reads it).
fn expect_state(
    s: &mut dyn Session,
    p: ProcessRef,
    want: DeviceExecutionState,
    who: &str,
) -> CaseResult {
    // A machine that runs on its own may put the device in error a little after the KMD's
    // abort the case waited for.
    let got = if want == DeviceExecutionState::ACTIVE {
        state(s, p)?
    } else {
        settled_state(s, p)?
    };
    ensure!(
        got.is_none_or(|g| g == want),
        "the {who} device's execution state is {got:?}, expected {want:?}"
    );
    Ok(())
}

/// A queue of a device in error is unusable: its submission is refused or it is lost.
fn refused(s: &mut dyn Session, q: UmQueueRef, b: BufferRef, who: &str) -> CaseResult {
    let r = s.ums()?.submit(q, &[fill(b, BUF - 8, 0xBAD)]);
    let lost = s.ums_ref()?.queue_info(q)?.lost;
    ensure!(
        r.is_err() || lost,
        "the {who} queue still submits after the loss ({r:?})"
    );
    Ok(())
}

/// Submits to `q` a FILL of `pattern` at `buf`'s offset 16 held behind a GPU wait for `buf`'s
/// word at 8 to reach 1, which [`held_work_survives`] writes: work in flight until then.
fn held(
    s: &mut dyn Session,
    q: UmQueueRef,
    buf: BufferRef,
    pattern: u64,
) -> Result<u64, CaseError> {
    let hold = Work::WaitAtLeast {
        buffer: buf,
        offset: 8,
        value: 1,
    };
    Ok(s.ums()?.submit(q, &[hold, fill(buf, 16, pattern)])?)
}

/// A device that was not lost: its queue `q` (whose batch `v` waits on word 8 of `buf`, then
/// fills word 16 with `pattern`) is not lost, runs that batch once released, still works, and
/// `p` was never put in error where the backend shows the recovery's steps.
fn held_work_survives(
    s: &mut dyn Session,
    p: ProcessRef,
    (q, v): (UmQueueRef, u64),
    buf: BufferRef,
    pattern: u64,
    who: &str,
) -> Result<(), CaseError> {
    ensure!(
        !s.ums_ref()?.queue_info(q)?.lost,
        "the {who}'s queue is lost"
    );
    // Released now, the work in flight runs, once.
    s.ums()?.write_buffer(buf, 8, 1)?;
    wait(s, q, v, &format!("{who}'s work in flight"))?;
    ensure!(
        s.ums_ref()?.read_buffer(buf, 16)? == pattern,
        "the {who}'s work in flight did not run"
    );
    still_works(s, q, buf, 24, who)?;
    if let Some(ev) = steps(s) {
        ensure!(
            !ev.iter()
                .any(|e| matches!(e, TdrStep::DeviceError { process, .. } if *process == Some(p))),
            "the {who} was put in error: {ev:?}"
        );
    }
    Ok(())
}

/// Fails unless `q`'s doorbell is connected and a FILL through it runs.
fn still_works(
    s: &mut dyn Session,
    q: UmQueueRef,
    b: BufferRef,
    offset: u64,
    who: &str,
) -> CaseResult {
    let st = s.ums_ref()?.doorbell_status(q)?;
    ensure!(st.is_connected(), "the {who} queue's doorbell is {st:?}");
    let v = s.ums()?.submit(q, &[fill(b, offset, 0x600D)])?;
    wait(s, q, v, who)?;
    ensure!(
        s.ums_ref()?.read_buffer(b, offset)? == 0x600D,
        "the {who} queue's work did not run"
    );
    Ok(())
}

/// A process opened now runs a FILL on each of `nodes`.
fn new_device_works(s: &mut dyn Session, nodes: u32, what: &str) -> CaseResult {
    let (p, b) = process(s)?;
    for node in 0..nodes {
        let q = s.ums()?.create_queue(p, NewQueue::user_mode(node))?;
        let off = 8 * u64::from(node);
        let v = s
            .ums()?
            .submit(q, &[fill(b, off, 0x4E00 + u64::from(node))])?;
        wait(s, q, v, what)?;
        ensure!(
            s.ums_ref()?.read_buffer(b, off)? == 0x4E00 + u64::from(node),
            "{what}: the new device's work on node {node} did not run"
        );
    }
    s.ums()?.end_process(p, ProcessEnd::Normal)?;
    Ok(())
}

/// A process's HANG on node 0: its queue and the hung batch's progress value.
fn hang(s: &mut dyn Session, p: ProcessRef, b: BufferRef) -> Result<(UmQueueRef, u64), CaseError> {
    let q = warm_queue(s, p, 0, b, 0)?;
    // The FILL behind the HANG never runs: the batch is never done.
    let v = s.ums()?.submit(q, &[Work::Hang, fill(b, 16, 0xBAD)])?;
    Ok((q, v))
}

/// How an adapter-wide recovery was caused.
enum AdapterWide {
    /// The OS's forced TDR: every device reset, none hung.
    Forced,
    /// A failing engine reset armed in the KMD, promoted: this process's hang.
    Promoted(ProcessRef, UmQueueRef),
}

/// Causes an adapter-wide recovery: a forced TDR where the backend steers the OS, else a
/// process's HANG whose engine reset the KMD was armed to fail (24H2 then resets the adapter:
/// `M:VidSchiResetHwEngine` @0x140052878 escalates a failed reset).
fn adapter_wide(b: &dyn Backend, s: &mut dyn Session) -> Result<AdapterWide, CaseError> {
    let caps = b.capabilities();
    if caps.contains(Capability::OsControl) {
        s.os_control()?
            .device_loss(0, DeviceLoss::DoorbellsAborted)?;
        return Ok(AdapterWide::Forced);
    }
    if caps.contains(Capability::KmdFaults) {
        let (c, cb) = process(s)?;
        let q = warm_queue(s, c, 0, cb, 0)?;
        // The KMD answers a test-hook request as an unknown escape unless the tester turned
        // its hooks on.
        match s
            .kmd_faults()?
            .arm_kmd_fault(0, TestHookOp::FailNextReset, 0)
        {
            Err(Failure::DdiFailed(STATUS_INVALID_PARAMETER)) => {
                return Err(CaseError::Skip(
                    "the KMD's test hooks are off: an adapter-wide recovery needs TestHooks = 1 \
                     (REG_DWORD) in the adapter's software key (docs/test-machine.md)"
                        .into(),
                ))
            }
            r => r?,
        }
        s.ums()?.submit(q, &[Work::Hang])?;
        return Ok(AdapterWide::Promoted(c, q));
    }
    Err(CaseError::Skip(format!(
        "needs capability OsControl (a forced TDR) or KmdFaults (a failing engine reset), which \
         backend {} lacks",
        b.name()
    )))
}

// ---------------------------------------------------------------------------------------------
// The guilty device, the others beside an engine reset.

fn guilty_device(b: &dyn Backend) -> CaseResult {
    let mut s = loss_session(b)?;
    let (g, gb) = process(&mut *s)?;
    let (o, _) = process(&mut *s)?;
    let q1 = warm_queue(&mut *s, g, 1, gb, 8)?;
    let (q0, v) = hang(&mut *s, g, gb)?;
    // The KMD aborts the guilty device's doorbells one by one: the loss is complete once both
    // read ABORT.
    until(&mut *s, "guilty doorbells aborted", |s| {
        aborted(s, q0) && aborted(s, q1)
    })?;
    ensure!(
        s.ums_ref()?.read_buffer(gb, 16)? == 0,
        "work behind the HANG ran"
    );
    for q in [q0, q1] {
        refused(&mut *s, q, gb, "guilty")?;
    }
    // 24H2 signals the progress fence of a queue of the erring device to the maximum
    // (`M:VidSchiSignalRegisteredSyncObjects`), so what it reads says nothing of what ran: the
    // UMD may claim the hung batch only with the queue marked lost.
    let info = s.ums_ref()?.queue_info(q0)?;
    ensure!(
        info.completed < v || info.lost,
        "the hung batch (progress {v}) is reported done ({}) on a queue not marked lost",
        info.completed
    );
    expect_state(&mut *s, g, DeviceExecutionState::HUNG, "guilty")?;
    expect_state(&mut *s, o, DeviceExecutionState::ACTIVE, "other process's")?;
    if let Some(ev) = steps(&*s) {
        ensure!(
            ev.iter()
                .any(|e| matches!(e, TdrStep::DeviceError { process, .. } if *process == Some(g)))
                && !ev.iter().any(|e| matches!(e, TdrStep::AdapterReset { .. })),
            "an engine reset with the guilty device in error expected: {ev:?}"
        );
    }
    s.ums()?.end_process(g, ProcessEnd::Abnormal)?;
    new_device_works(&mut *s, 2, "recreated device")?;
    no_fault(&*s)
}

fn bystander_engine_reset(b: &dyn Backend) -> CaseResult {
    let mut s = loss_session(b)?;
    // The bystander is the harness's own process (a D3DKMT backend forwards no CPU write to
    // another process's buffer), the guilty one another.
    let (y, yb) = process(&mut *s)?;
    let (g, gb) = process(&mut *s)?;
    let yq = warm_queue(&mut *s, y, 0, yb, 0)?;
    // In flight on the engine that hangs: blocked on a word of its own until after the reset.
    let v = held(&mut *s, yq, yb, 0x77)?;
    let (gq, _) = hang(&mut *s, g, gb)?;
    until(&mut *s, "guilty doorbell aborted", |s| aborted(s, gq))?;
    expect_state(&mut *s, y, DeviceExecutionState::ACTIVE, "bystander")?;
    let st = s.ums_ref()?.doorbell_status(yq)?;
    ensure!(st.is_connected(), "the bystander's doorbell is {st:?}");
    held_work_survives(&mut *s, y, (yq, v), yb, 0x77, "bystander")?;
    no_fault(&*s)
}

fn idle_device(b: &dyn Backend) -> CaseResult {
    let mut s = loss_session(b)?;
    let (i, ib) = process(&mut *s)?;
    let iq0 = warm_queue(&mut *s, i, 0, ib, 0)?;
    let iq1 = warm_queue(&mut *s, i, 1, ib, 8)?;
    let (g, gb) = process(&mut *s)?;
    let (gq, _) = hang(&mut *s, g, gb)?;
    until(&mut *s, "guilty doorbell aborted", |s| aborted(s, gq))?;
    expect_state(&mut *s, i, DeviceExecutionState::ACTIVE, "idle")?;
    still_works(&mut *s, iq0, ib, 16, "idle device's node 0")?;
    still_works(&mut *s, iq1, ib, 24, "idle device's node 1")?;
    // A thunk on it answers as before.
    s.ums()?.create_buffer(i, BUF)?;
    no_fault(&*s)
}

fn sibling_device(b: &dyn Backend) -> CaseResult {
    let mut s = loss_session(b)?;
    let (g, gb) = process(&mut *s)?;
    let sib = s.ums()?.open_sibling_device(g)?;
    let sb = s.ums()?.create_buffer(sib, BUF)?;
    let sq = warm_queue(&mut *s, sib, 0, sb, 0)?;
    let v = held(&mut *s, sq, sb, 0x51)?;
    // A fence of the sibling: registered with the sibling alone
    // (`K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC), so the guilty device's error
    // (`M:VidSchiSignalRegisteredSyncObjects` @0x14003B848) leaves it alone.
    let f = s.umd_fences()?.create_um_fence(sib, 3)?;
    let (gq, _) = hang(&mut *s, g, gb)?;
    until(&mut *s, "guilty doorbell aborted", |s| aborted(s, gq))?;
    expect_state(&mut *s, g, DeviceExecutionState::HUNG, "guilty")?;
    expect_state(&mut *s, sib, DeviceExecutionState::ACTIVE, "sibling")?;
    let fv = s.umd_fences_ref()?.um_fence_value(f)?;
    ensure!(
        fv == 3,
        "the sibling's fence reads {fv:#x} after the other device's reset, expected 3"
    );
    held_work_survives(&mut *s, sib, (sq, v), sb, 0x51, "sibling")?;
    no_fault(&*s)
}

// ---------------------------------------------------------------------------------------------
// An adapter-wide recovery.

fn adapter_reset_every_device(b: &dyn Backend) -> CaseResult {
    let mut s = loss_session(b)?;
    let (busy, bb) = process(&mut *s)?;
    let bq = warm_queue(&mut *s, busy, 0, bb, 0)?;
    let v = held(&mut *s, bq, bb, 0x77)?;
    let (idle, ib) = process(&mut *s)?;
    let iq = warm_queue(&mut *s, idle, 1, ib, 0)?;
    let how = adapter_wide(b, &mut *s)?;
    // The recovery is over once the KMD aborted the doorbells of the devices it had work of
    // (after `DxgkDdiRestartFromTimeout`) and the OS reset the idle one.
    until(&mut *s, "adapter-wide recovery", |s| aborted(s, bq))?;
    let mut devices = vec![(busy, "busy"), (idle, "idle")];
    if let AdapterWide::Promoted(c, cq) = how {
        until(&mut *s, "culprit's doorbell aborted", |s| aborted(s, cq))?;
        devices.push((c, "culprit"));
    }
    for (p, who) in devices.iter().copied() {
        // The OS resets the devices last, after the driver's restart (and its aborts).
        let st = settled_state(&mut *s, p)?;
        // RESET, or HUNG where VidSch found the device hung (the culprit of a promoted
        // reset may be either).
        let ok = |x: DeviceExecutionState| {
            x == DeviceExecutionState::RESET
                || (who == "culprit" && x == DeviceExecutionState::HUNG)
        };
        ensure!(
            st.is_none_or(ok),
            "the {who} device reads {st:?} after the adapter-wide recovery, expected RESET"
        );
        // Every thunk that takes the device's core access refuses it.
        match s.ums()?.create_buffer(p, BUF) {
            Err(Failure::DdiFailed(STATUS_DEVICE_REMOVED)) => {}
            other => {
                return Err(CaseError::Fail(format!(
                    "a buffer of the {who} device after the adapter-wide recovery: {other:?}, \
                     expected STATUS_DEVICE_REMOVED"
                )))
            }
        }
    }
    // The busy device's work in flight was dropped with the reset: released now, it never
    // runs, and its batch is never reported done.
    s.ums()?.write_buffer(bb, 8, 1)?;
    s.run_until(Duration::from_millis(50), &mut |_| false)?;
    ensure!(
        s.ums_ref()?.read_buffer(bb, 16)? == 0,
        "the busy device's work in flight ran after the adapter-wide recovery"
    );
    refused(&mut *s, bq, bb, "busy")?;
    let info = s.ums_ref()?.queue_info(bq)?;
    ensure!(
        info.completed < v || info.lost,
        "the dropped batch (progress {v}) is reported done ({}) on a queue not marked lost",
        info.completed
    );
    let _ = iq;
    if let Some(ev) = steps(&*s) {
        ensure!(
            ev.iter().any(|e| matches!(e, TdrStep::AdapterReset { .. })),
            "no adapter-wide recovery in the OS's record: {ev:?}"
        );
    }
    for (p, _) in devices {
        s.ums()?.end_process(p, ProcessEnd::Abnormal)?;
    }
    new_device_works(&mut *s, 2, "a device made after the adapter-wide recovery")?;
    no_fault(&*s)
}

// ---------------------------------------------------------------------------------------------
// A fence shared across processes.

fn shared_fence_across_processes(b: &dyn Backend) -> CaseResult {
    let mut s = loss_session(b)?;
    let (g, gb) = process(&mut *s)?;
    let (o, ob) = process(&mut *s)?;
    let oq = warm_queue(&mut *s, o, 1, ob, 0)?;
    // Created by the guilty device, opened by the other process.
    let gf = s.umd_fences()?.create_um_fence(g, 5)?;
    let gf_o = s.umd_fences()?.open_um_fence(gf, o)?;
    // Created by the other process, opened by the guilty device.
    let of = s.umd_fences()?.create_um_fence(o, 7)?;
    let _of_g = s.umd_fences()?.open_um_fence(of, g)?;
    // The other process's own, never opened by the guilty device.
    let own = s.umd_fences()?.create_um_fence(o, 9)?;
    let (gq, _) = hang(&mut *s, g, gb)?;
    until(&mut *s, "guilty doorbell aborted", |s| aborted(s, gq))?;
    // 24H2 signals every instance the erring device registered, created or opened
    // (`K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC registers both with their device;
    // `M:VidSchiSignalRegisteredSyncObjects` @0x14003B848 drains the erring device's list):
    // both shared fences read the maximum for the other process too. The device is put in
    // error after the KMD's abort (a machine that runs on its own may take a moment), so the
    // other process first waits, as a program would, for a value nobody signalled.
    for (f, what) in [
        (gf_o, "the guilty device's fence"),
        (of, "its own fence the guilty device opened"),
    ] {
        let w = s.umd_fences()?.wait_um_fence(f, 1000, RECOVERY)?;
        ensure!(
            w == WaitResult::Satisfied,
            "the other process's wait on {what} ended {w:?}"
        );
        let v = s.umd_fences_ref()?.um_fence_value(f)?;
        ensure!(
            v == u64::MAX,
            "the other process reads {what} at {v:#x} after the guilty device's reset, \
             expected u64::MAX"
        );
    }
    let v = s.umd_fences_ref()?.um_fence_value(own)?;
    ensure!(
        v == 9,
        "a fence the guilty device never held reads {v} after its reset, expected 9"
    );
    expect_state(&mut *s, o, DeviceExecutionState::ACTIVE, "other process's")?;
    still_works(&mut *s, oq, ob, 8, "other process")?;
    no_fault(&*s)
}

// ---------------------------------------------------------------------------------------------
// A kill while the hang waits for its recovery.

fn kill_while_hung(b: &dyn Backend) -> CaseResult {
    let mut s = loss_session(b)?;
    let (o, ob) = process(&mut *s)?;
    let oq = warm_queue(&mut *s, o, 1, ob, 0)?;
    let (k, kb) = process(&mut *s)?;
    let (kq, _) = hang(&mut *s, k, kb)?;
    // Killed while its HANG holds the engine and the OS has yet to reset it: the kill's
    // teardown (its device in error, its contexts suspended, its queues destroyed) meets the
    // hung engine, and the recovery has to finish with the process gone.
    s.run_until(Duration::from_millis(1), &mut |_| false)?;
    if let Some(ev) = steps(&*s) {
        ensure!(
            !ev.iter().any(|e| matches!(e, TdrStep::DeviceError { .. })),
            "the guilty device was reset before the kill: {ev:?}"
        );
    }
    let _ = kq;
    s.ums()?.end_process(k, ProcessEnd::Abnormal)?;
    // The engine the HANG held runs new work once the recovery is over.
    new_device_works(&mut *s, 2, "a device made after the kill")?;
    if let Some(ev) = steps(&*s) {
        ensure!(
            !ev.iter()
                .any(|e| matches!(e, TdrStep::DeviceError { process, .. } if *process == Some(o))),
            "the other process was put in error: {ev:?}"
        );
    }
    expect_state(&mut *s, o, DeviceExecutionState::ACTIVE, "other process's")?;
    still_works(&mut *s, oq, ob, 8, "other process")?;
    no_fault(&*s)
}

// ---------------------------------------------------------------------------------------------
// A kill while the recovery is under way.

fn kill_during_recovery(b: &dyn Backend) -> CaseResult {
    // Threaded: the recovery runs on the OS's own thread, the kill on another, as on Windows;
    // with Windows' `TdrDelay` (2 s), so that only the HANG, which the device reports at once,
    // is recovered, not the other process's queue waiting on its word.
    let mut s = session(b, ExecMode::Threaded, |c| c.min_doorbells = Some(8))?;
    let timeouts = TdrTimeouts {
        timeout: Duration::from_secs(2),
        ..TdrTimeouts::fast()
    };
    s.tdr()?.enable_tdr(0, timeouts)?;
    let (y, yb) = process(&mut *s)?;
    let yq = warm_queue(&mut *s, y, 0, yb, 0)?;
    // In flight on the engine that hangs, blocked on a word of its own until after the
    // recovery.
    let v = held(&mut *s, yq, yb, 0x66)?;
    let (k, kb) = process(&mut *s)?;
    let kq = warm_queue(&mut *s, k, 0, kb, 0)?;
    // The recovery of k's HANG pauses after the node's snapshot, before the driver's engine
    // reset (`M:VidSchiResetHwEngine` @0x140052878 holds nothing there that keeps a process's
    // termination out), and k is killed from another thread meanwhile.
    s.held_recovery()?.kill_during_recovery(0, k, kq)?;
    if let Some(ev) = steps(&*s) {
        ensure!(
            ev.iter().any(|e| matches!(e, TdrStep::Paused { node: 0 })),
            "the recovery never paused for the kill: {ev:?}"
        );
    }
    expect_state(&mut *s, y, DeviceExecutionState::ACTIVE, "other process's")?;
    held_work_survives(&mut *s, y, (yq, v), yb, 0x66, "other process")?;
    // The engine the HANG held runs new work once the recovery is over.
    new_device_works(
        &mut *s,
        2,
        "a device made after the kill during the recovery",
    )?;
    no_fault(&*s)
}
