//! Other engines and other processes keep running (UM-10).

use std::time::{Duration, Instant};

use crate::backend::{
    Backend, Capability, DoorbellStatus, ExecMode, NewQueue, OsEvent, Session, StreamLane,
    TdrCause, TdrStep, TdrTimeouts, Work,
};
use crate::case::CaseResult;
use crate::ensure;
use rvgpu_umd::kmt::DeviceExecutionState;

use super::super::common::{fill, no_fault, observe, session, wait};
use super::fixtures::{
    errored, guilty_refused, settled_probe, steps_or_none, tdr_session, until, BUF, RECOVERY, STEP,
};

// ---------------------------------------------------------------------------------------------
// Other engines and other processes keep running (UM-10).

/// The machine's time the case has let run, on the clock VidSch's TDR reads (`TdrOs::now`):
/// rounds on a step-mode machine, which advance only in [`Session::run_until`] (a budget of
/// `d` is `d / 10 µs` of them, however fast the host), the monotonic clock on a machine that
/// runs on its own. The session of a backend with [`Capability::StepMode`] is a step-mode one
/// (`tdr_session` asks for step mode; a backend that cannot step neither steps nor offers it).
struct MachineClock {
    stepped: bool,
    run: Duration,
    t0: Instant,
}

impl MachineClock {
    fn start(b: &dyn Backend) -> Self {
        Self {
            stepped: b.capabilities().contains(Capability::StepMode),
            run: Duration::ZERO,
            t0: Instant::now(),
        }
    }

    /// A limit for a recovery: on a step-mode machine `STEP` (what every step-mode wait for
    /// a reset is given, 20 000 rounds: 500 times the case's TDR timeout of 40 rounds, 100
    /// times the device's own 200-round hang detection); on a machine that runs on its own
    /// `RECOVERY`, 5 times the case's `TdrDelay` there (Windows' default, 2 s).
    fn limit(&self) -> Duration {
        if self.stepped {
            STEP
        } else {
            RECOVERY
        }
    }

    /// Lets the machine run for `d` of its time.
    fn run(&mut self, s: &mut dyn Session, d: Duration) -> CaseResult {
        s.run_until(d, &mut |_| false)?;
        self.run += d;
        Ok(())
    }

    fn elapsed(&self) -> Duration {
        if self.stepped {
            self.run
        } else {
            self.t0.elapsed()
        }
    }
}

/// One copy per slice of the machine's time while the OS detects and resets the hang, twenty
/// after. The wait for the reset is bounded by the machine's time ([`MachineClock`]), never by
/// the number of copies: how many a host submits while the OS detects and resets says nothing
/// of the OS's progress.
pub(super) fn compute_hang_copy_runs(b: &dyn Backend) -> CaseResult {
    /// Slices of the machine's time within the limit.
    const SLOTS: u32 = 4096;
    /// Copies after the recovery.
    const AFTER: u64 = 20;
    // Windows' default TdrDelay (2 s) on a machine that runs on its own: the hang is found by
    // the device's own report, and 50 ms let a starved guest's paging on the copy node look
    // like a DMA timeout there.
    let timeouts = TdrTimeouts {
        timeout: Duration::from_secs(2),
        ..TdrTimeouts::fast()
    };
    let mut s = tdr_session(b, timeouts, |_| {})?;
    let limit = MachineClock::start(b).limit();
    // Each slice lets the machine run at least its time (a threaded `run_until` returns `false`
    // only once its budget passed): one copy before each of at most `SLOTS` slices within the
    // limit, one after the last, then `AFTER`; a marker each.
    let slice = limit / SLOTS;
    let max = u64::from(SLOTS) + 1 + AFTER;
    let h = s.ums()?.open_process(0)?;
    let c = s.ums()?.open_process(0)?;
    let t = s.ums()?.create_buffer(c, 8 * max)?;
    let th = s.ums()?.create_buffer(h, BUF)?;
    let copy = s.ums()?.create_queue(c, NewQueue::user_mode(1))?;
    // Made before the copies start: mapping its ring is paging work on the copy node.
    let hq = s.ums()?.create_queue(h, NewQueue::user_mode(0))?;
    // Commands per one-FILL submission on the copy node (calibration).
    let before = observe(s.tdr_trace_ref().and_then(|x| x.engine_probe(0, 1)))?;
    let v = s.ums()?.submit(copy, &[fill(t, 0, 0)])?;
    wait(&mut *s, copy, v, "calibration")?;
    let after = settled_probe(&mut *s, 1)?;
    let per = before
        .zip(after)
        .map(|(a, z)| z.completed_commands - a.completed_commands);
    let base = observe(s.tdr_trace_ref().and_then(|x| x.engine_probe(0, 1)))?;
    s.ums()?.submit(hq, &[Work::Hang])?;
    let mut clock = MachineClock::start(b);
    let (mut n, mut during) = (0u64, 0u64);
    loop {
        let v = s.ums()?.submit(copy, &[fill(t, 8 * n, n + 1)])?;
        ensure!(v == n + 2, "copy submission {n} got progress value {v}");
        n += 1;
        // A submission counts as made during detection and reset if the recovery was not
        // complete after it returned (checked after the submission, so that a host that
        // deschedules this thread for longer than detection takes cannot make the first
        // submissions look late; threaded backends run the device in real time).
        // The reset of this hang, whatever else the OS reset meanwhile: the guilty device put
        // in error, the recovery's last step, in the OS's record; without it, as the guilty
        // process sees it: its doorbell's status page reads DISCONNECTED_ABORT (UM-10).
        let recovered = match observe(s.tdr_trace_ref().and_then(|x| x.tdr_steps(0)))? {
            Some(ev) => errored(&ev, h),
            None => s.ums_ref()?.doorbell_status(hq) == Ok(DoorbellStatus::DisconnectedAbort),
        };
        if !recovered {
            during = n;
        }
        if recovered {
            if n >= during + AFTER {
                break;
            }
        } else {
            ensure!(
                clock.elapsed() < limit,
                "no recovery within {limit:?} of the machine's time ({:?} run, {n} copies); \
                 TDR steps {:?}",
                clock.elapsed(),
                steps_or_none(&*s)
            );
        }
        ensure!(n < max, "{n} copies: more slices than the limit holds");
        clock.run(&mut *s, slice)?;
    }
    wait(&mut *s, copy, n + 1, "copy queue drained")?;
    for i in 0..n {
        let got = s.ums_ref()?.read_buffer(t, 8 * i)?;
        ensure!(
            got == i + 1,
            "copy marker {i} reads {got:#x}: a submission was lost or ran late"
        );
    }
    if let (Some(per), Some(base), Some(now)) = (per, base, settled_probe(&mut *s, 1)?) {
        let done = now.completed_commands - base.completed_commands;
        ensure!(
            done == per * n,
            "copy engine completed {done} commands for {n} submissions of {per}: lost or repeated"
        );
    }
    if let Some(ev) = observe(s.tdr_trace_ref().and_then(|x| x.tdr_steps(0)))? {
        ensure!(
            ev.iter().any(|e| matches!(
                e,
                TdrStep::Detected {
                    node: 0,
                    cause: TdrCause::EngineHung | TdrCause::QueueStalled
                }
            )),
            "the hang was not detected on node 0: {ev:?}"
        );
        ensure!(!errored(&ev, c), "the copy process was put in error");
        ensure!(during > 0, "no copy submission during detection and reset");
    }
    guilty_refused(&mut *s, hq, th, "compute hang")?;
    no_fault(&*s)
}

pub(super) fn guilty_device_aborted(b: &dyn Backend) -> CaseResult {
    let mut s = tdr_session(b, TdrTimeouts::fast(), |c| c.min_doorbells = Some(8))?;
    let h = s.ums()?.open_process(0)?;
    let o = s.ums()?.open_process(0)?;
    let to = s.ums()?.create_buffer(o, BUF)?;
    let th = s.ums()?.create_buffer(h, BUF)?;
    let oq0 = s.ums()?.create_queue(o, NewQueue::user_mode(0))?;
    let oq1 = s.ums()?.create_queue(o, NewQueue::user_mode(1))?;
    let hq = s.ums()?.create_queue(h, NewQueue::user_mode(0))?;
    let hq1 = s.ums()?.create_queue(h, NewQueue::user_mode(1))?;
    let v = s.ums()?.submit(hq1, &[fill(th, 8, 1)])?;
    wait(&mut *s, hq1, v, "guilty process warm-up")?;
    let v = s.ums()?.submit(oq0, &[fill(to, 0, 1)])?;
    wait(&mut *s, oq0, v, "other process warm-up")?;
    let mark = observe(s.os_trace_ref().and_then(|x| x.os_events(0)))?.map(|e| e.len());
    s.ums()?.submit(hq, &[Work::Hang])?;
    let v = s.ums()?.submit(oq1, &[fill(to, 8, 2)])?;
    wait(&mut *s, oq1, v, "the other process during the hang")?;
    // Recovered once every doorbell of the guilty device is aborted: the KMD aborts them one
    // after another (`DxgkCbDisconnectDoorbell` per doorbell; Windows writes no status when
    // it puts the device in error), so one aborted says nothing yet of the other.
    until(&mut *s, RECOVERY, "guilty doorbells aborted", |s| {
        [hq, hq1].iter().all(|q| {
            s.ums_ref().and_then(|u| u.doorbell_status(*q)) == Ok(DoorbellStatus::DisconnectedAbort)
        })
    })?;
    for q in [hq, hq1] {
        let st = s.ums_ref()?.doorbell_status(q)?;
        ensure!(
            st == DoorbellStatus::DisconnectedAbort,
            "guilty queue {q:?}'s doorbell is {st:?}"
        );
    }
    if let Some(m) = mark {
        let ev: Vec<OsEvent> = s
            .os_trace_ref()?
            .os_events(0)?
            .into_iter()
            .skip(m)
            .collect();
        // The KMD's callback disconnects the guilty doorbells (24H2 through the driver's
        // DxgkDdiDisconnectDoorbell, the pages by the status only;
        // docs/windows-bringup.md §13). A disconnect, if any, is ABORT.
        for q in [hq, hq1] {
            ensure!(
                !ev.iter().any(|e| matches!(
                    e,
                    OsEvent::OsDisconnect { queue, reason } if *queue == Some(q)
                        && *reason != DoorbellStatus::DisconnectedAbort
                )),
                "guilty queue {q:?} disconnected with another reason than ABORT: {ev:?}"
            );
        }
        ensure!(
            !ev.iter().any(|e| matches!(
                e,
                OsEvent::OsDisconnect { queue, .. } | OsEvent::VictimCallback { queue, .. }
                    if *queue == Some(oq0) || *queue == Some(oq1)
            )),
            "the other process's doorbells were disconnected: {ev:?}"
        );
    }
    if let Some(ev) = observe(s.tdr_trace_ref().and_then(|x| x.tdr_steps(0)))? {
        ensure!(
            errored(&ev, h) && !errored(&ev, o),
            "device errors: guilty only expected: {ev:?}"
        );
    }
    // Every queue of the guilty device refuses work, the hung one included: the application
    // learns of the abort from each, and destroys them without waiting for the hung batch
    // (whose progress never comes).
    for q in [hq, hq1] {
        guilty_refused(&mut *s, q, th, "UM-10")?;
    }
    // What the application then asks the OS (`D3DKMTGetDeviceState`): its device hung the
    // engine; the other process's device is active.
    for (p, want, who) in [
        (h, DeviceExecutionState::HUNG, "guilty"),
        (o, DeviceExecutionState::ACTIVE, "other"),
    ] {
        let got = observe(s.tdr().and_then(|t| t.device_state(p)))?;
        ensure!(
            got.is_none_or(|g| g == want),
            "the {who} device's execution state is {got:?}, expected {want:?}"
        );
    }
    for q in [oq0, oq1] {
        let st = s.ums_ref()?.doorbell_status(q)?;
        ensure!(
            st.is_connected(),
            "the other process's doorbell {q:?} is {st:?}"
        );
    }
    let a = s.ums()?.submit(oq0, &[fill(to, 16, 3)])?;
    let c = s.ums()?.submit(oq1, &[fill(to, 24, 4)])?;
    wait(&mut *s, oq0, a, "other process after the reset")?;
    wait(&mut *s, oq1, c, "other process after the reset")?;
    ensure!(
        (
            s.ums_ref()?.read_buffer(to, 16)?,
            s.ums_ref()?.read_buffer(to, 24)?
        ) == (3, 4),
        "the other process's work after the reset did not run"
    );
    // The guilty process recreates its device (a new process here) and works.
    let h2 = s.ums()?.open_process(0)?;
    let t2 = s.ums()?.create_buffer(h2, BUF)?;
    let q2 = s.ums()?.create_queue(h2, NewQueue::user_mode(0))?;
    let v = s.ums()?.submit(q2, &[fill(t2, 0, 5)])?;
    wait(&mut *s, q2, v, "recreated device")?;
    ensure!(
        s.ums_ref()?.read_buffer(t2, 0)? == 5,
        "the recreated device's work did not run"
    );
    no_fault(&*s)
}

pub(super) fn user_mode_traffic_survives(b: &dyn Backend) -> CaseResult {
    const PROCS: u64 = 4;
    const MAX: u64 = 20_000;
    const MIN: usize = 20;
    const AFTER: usize = 50;
    let mut s = session(b, ExecMode::Threaded, |c| c.min_doorbells = Some(16))?;
    // Windows' default TdrDelay (2 s) in threaded mode: the hang is found by the device's own
    // report, and a short timeout let a starved emulator thread look like a stalled innocent
    // queue on a loaded host.
    s.tdr()?.enable_tdr(
        0,
        TdrTimeouts {
            timeout: Duration::from_secs(2),
            ..TdrTimeouts::fast()
        },
    )?;
    // Commands per three-FILL submission, per node (calibration).
    let cal = s.ums()?.open_process(0)?;
    let tc = s.ums()?.create_buffer(cal, BUF)?;
    let mut per = Vec::new();
    for node in 0..2u32 {
        let q = s.ums()?.create_queue(cal, NewQueue::user_mode(node))?;
        let before = observe(s.tdr_trace_ref().and_then(|x| x.engine_probe(0, node)))?;
        let v = s
            .ums()?
            .submit(q, &[fill(tc, 0, 1), fill(tc, 8, 2), fill(tc, 16, 3)])?;
        wait(&mut *s, q, v, "calibration")?;
        let after = settled_probe(&mut *s, node)?;
        per.push(
            before
                .zip(after)
                .map(|(a, z)| z.completed_commands - a.completed_commands),
        );
        s.ums()?.close_queue(q)?;
    }
    let mut lanes = Vec::new();
    let mut owners = Vec::new();
    for i in 0..PROCS {
        let p = s.ums()?.open_process(0)?;
        let t = s.ums()?.create_buffer(p, 2 * 3 * 8 * MAX)?;
        for node in 0..2u64 {
            let q = s.ums()?.create_queue(p, NewQueue::user_mode(node as u32))?;
            let batches = (0..MAX)
                .map(|n| {
                    let slot = (node * MAX + n) * 3;
                    let pat = |j: u64| (i << 40) | (node << 32) | (n << 4) | j;
                    (0..3).map(|j| fill(t, 8 * (slot + j), pat(j))).collect()
                })
                .collect();
            lanes.push(StreamLane {
                queue: q,
                batches,
                start_after: 0,
                max_in_flight: 16,
                stop_after_recovery: Some((MIN, AFTER)),
                wait: true,
            });
            owners.push((i, node, p, t));
        }
    }
    let guilty = s.ums()?.open_process(0)?;
    let gq = s.ums()?.create_queue(guilty, NewQueue::user_mode(0))?;
    // Counted from here: every queue exists (creating one maps its ring, paging work on the
    // copy node) and none is closed before the count ends.
    let base: Vec<_> = (0..2)
        .map(|n| observe(s.tdr_trace_ref().and_then(|x| x.engine_probe(0, n))))
        .collect::<Result<_, _>>()?;
    lanes.push(StreamLane {
        queue: gq,
        batches: vec![vec![Work::Hang]],
        // The hang among the others' traffic: after each innocent lane's first MIN batches.
        start_after: MIN,
        max_in_flight: 0,
        stop_after_recovery: None,
        wait: false,
    });
    let reports = s.tdr()?.stream(&lanes)?;
    let recoveries = observe(s.tdr_trace_ref().and_then(|x| x.tdr_recoveries(0)))?;
    if let Some(r) = recoveries {
        ensure!(
            r == (1, 0),
            "(engine, adapter) resets {r:?}, expected one engine reset"
        );
    }
    let mut total = [0u64; 2];
    for ((i, node, _, t), r) in owners.iter().zip(&reports) {
        ensure!(
            r.error.is_none(),
            "process {i} node {node}: {:?} after {} batches",
            r.error,
            r.submitted
        );
        if recoveries.is_some() {
            ensure!(
                r.recovered_at.is_some_and(|k| r.submitted == k + AFTER),
                "process {i} node {node}: {} batches, recovery seen after {:?}; it must have \
                 been submitting when the reset finished and gone on {AFTER} past it",
                r.submitted,
                r.recovered_at
            );
        }
        for n in 0..r.submitted as u64 {
            for j in 0..3 {
                let slot = (node * MAX + n) * 3 + j;
                let got = s.ums_ref()?.read_buffer(*t, 8 * slot)?;
                let want = (i << 40) | (node << 32) | (n << 4) | j;
                ensure!(
                    got == want,
                    "process {i} node {node} batch {n}.{j} reads {got:#x}: lost or out of order"
                );
            }
        }
        total[*node as usize] += r.submitted as u64;
    }
    for node in 0..2usize {
        let now = settled_probe(&mut *s, node as u32)?;
        if let (Some(per), Some(base), Some(now)) = (per[node], base[node], now) {
            let done = now.completed_commands - base.completed_commands;
            ensure!(
                done == per * total[node],
                "node {node}: {done} commands for {} batches of {per}: lost or run twice",
                total[node]
            );
        }
    }
    if let Some(ev) = observe(s.tdr_trace_ref().and_then(|x| x.tdr_steps(0)))? {
        ensure!(errored(&ev, guilty), "the hanging process is not in error");
        for (i, _, p, _) in owners.iter().step_by(2) {
            ensure!(!errored(&ev, *p), "innocent process {i} was put in error");
        }
    }
    no_fault(&*s)
}
