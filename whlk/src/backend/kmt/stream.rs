//! [`Tdr::stream`](crate::backend::Tdr::stream) on the D3DKMT backend: the lanes' submissions
//! interleaved from one thread (a UMD queue's CPU views of its doorbell are the thread's
//! mapping, not shared with other threads), while the GPU runs every queue at once.
//!
//! A recovery is what user mode sees of it: the OS writes `DISCONNECTED_ABORT` into the status
//! page of every doorbell of the guilty device once it has reset the engine (UM-10; 24H2 writes
//! the status without a disconnect, docs/windows-bringup.md §13). Every lane's doorbell is read
//! each round, also after the lane has submitted its last batch, so a lane that hangs its
//! engine reports the recovery the others wait for.

use std::time::{Duration, Instant};

use rvgpu_hw::cmd::Command;
use rvgpu_umd::kmt::{DeviceExecutionState, Kmt};

use super::remote::RemoteProcess;
use super::{KQueue, KmtSession, KmtSync};
use crate::backend::umd_queue::UmdQueue;
use crate::backend::{
    DoorbellStatus, Failure, ProcessRef, StreamLane, StreamReport, Tdr, TdrTimeouts,
};

/// Timeout detection and recovery as a program sees it: the machine's own TDR, and lanes of
/// submissions through a recovery, on queues of this program and of other processes.
impl<K: KmtSync + Send + Sync + 'static> Tdr for KmtSession<K> {
    fn enable_tdr(&mut self, i: usize, t: TdrTimeouts) -> Result<(), Failure> {
        self.started(i)?;
        self.machine.enable_tdr(i, t)
    }

    fn stream(&mut self, lanes: &[StreamLane]) -> Result<Vec<StreamReport>, Failure> {
        let mut jobs = Vec::with_capacity(lanes.len());
        for (k, lane) in lanes.iter().enumerate() {
            if lanes[..k].iter().any(|l| l.queue == lane.queue) {
                return Err(Failure::Backend(format!(
                    "stream: queue {} is in two lanes",
                    lane.queue.0
                )));
            }
            if self.remote_queue(lane.queue)?.is_none() {
                self.live_queue(lane.queue)?;
            }
            let cmds = lane
                .batches
                .iter()
                .map(|w| self.encode(w))
                .collect::<Result<Vec<_>, _>>()?;
            jobs.push(cmds);
        }
        let mut taken: Vec<Option<KQueue<K>>> = lanes
            .iter()
            .map(|l| self.queues.get_mut(l.queue.0).and_then(|k| k.q.take()))
            .collect();
        let mut remote: Vec<Option<RemoteLane<'_>>> = Vec::with_capacity(lanes.len());
        for l in lanes {
            let r = self.remote_queue(l.queue).ok().flatten();
            remote.push(r.map(|process| RemoteLane {
                process,
                id: l.queue.0,
            }));
        }
        let mut queues: Vec<&mut dyn LaneQueue> = Vec::with_capacity(lanes.len());
        for (t, r) in taken.iter_mut().zip(remote.iter_mut()) {
            match (t, r) {
                (Some(q), _) => queues.push(q),
                (None, Some(r)) => queues.push(r),
                (None, None) => {}
            }
        }
        let reports = (queues.len() == lanes.len()).then(|| interleave(lanes, &jobs, &mut queues));
        drop(queues);
        drop(remote);
        for (lane, q) in lanes.iter().zip(taken) {
            if let (Some(k), Some(q)) = (self.queues.get_mut(lane.queue.0), q) {
                k.q = Some(q);
            }
        }
        self.check_fault()?;
        reports.ok_or_else(|| Failure::Backend("stream: a lane's queue was lost".into()))
    }

    /// `D3DKMTGetDeviceState` of the process's device, in the process that holds it.
    fn device_state(&mut self, p: ProcessRef) -> Result<DeviceExecutionState, Failure> {
        if let Some(r) = self.remote(p.0)? {
            return r.device_state();
        }
        let (_, kmt) = self.process(p)?;
        kmt.device_execution_state().map_err(|s| self.status(s))
    }

    fn per_engine_tdr(&mut self, p: ProcessRef) -> Result<bool, Failure> {
        let (_, kmt) = self.process(p)?;
        let flags = kmt.wddm_1_2_caps().map_err(|s| self.status(s))?;
        Ok(flags & super::sync::SUPPORT_PER_ENGINE_TDR != 0)
    }
}

/// What a lane does with its queue.
trait LaneQueue {
    fn submit(&mut self, cmds: &[Command]) -> Result<u64, String>;
    /// (last submitted, completed).
    fn progress(&self) -> Result<(u64, u64), String>;
    fn doorbell(&self) -> Option<DoorbellStatus>;
    fn wait(&self, value: u64) -> Result<(), String>;
}

impl<K: Kmt> LaneQueue for UmdQueue<K> {
    fn submit(&mut self, cmds: &[Command]) -> Result<u64, String> {
        UmdQueue::submit(self, cmds).map_err(|e| format!("UMD: {e:?}"))
    }
    fn progress(&self) -> Result<(u64, u64), String> {
        Ok(UmdQueue::progress(self))
    }
    fn doorbell(&self) -> Option<DoorbellStatus> {
        self.doorbell_status()
    }
    fn wait(&self, value: u64) -> Result<(), String> {
        UmdQueue::wait(self, value).map_err(|e| format!("UMD: {e:?}"))
    }
}

/// A queue of another process.
struct RemoteLane<'a> {
    process: &'a RemoteProcess,
    id: usize,
}

impl LaneQueue for RemoteLane<'_> {
    fn submit(&mut self, cmds: &[Command]) -> Result<u64, String> {
        self.process
            .submit(self.id, cmds)
            .map_err(|e| format!("{e:?}"))
    }
    fn progress(&self) -> Result<(u64, u64), String> {
        let i = self.process.info(self.id).map_err(|e| format!("{e:?}"))?;
        Ok((i.last_submitted, i.completed))
    }
    fn doorbell(&self) -> Option<DoorbellStatus> {
        self.process.doorbell(self.id).ok().flatten()
    }
    fn wait(&self, value: u64) -> Result<(), String> {
        self.process
            .wait(self.id, value)
            .map_err(|e| format!("{e:?}"))
    }
}

/// How long a lane may wait for room (`max_in_flight`) before it reports its queue stalled.
const STALL: Duration = Duration::from_secs(20);

/// One lane's state while the lanes run.
struct Lane {
    next: usize,
    report: StreamReport,
    /// Submitting is over (every batch, stopped after the recovery, or an error).
    done: bool,
    /// Since when the lane has waited for room, if it has.
    blocked_since: Option<Instant>,
}

/// Runs `lanes` (their encoded batches in `cmds`, their queues in `queues`, in lane order):
/// each round gives every lane that has started and has room one submission; then the lanes
/// that wait, wait for their last batch.
fn interleave(
    lanes: &[StreamLane],
    cmds: &[Vec<Vec<Command>>],
    queues: &mut [&mut dyn LaneQueue],
) -> Vec<StreamReport> {
    let gate = crate::backend::lanes::StreamGate::new(lanes);
    let mut state: Vec<Lane> = lanes
        .iter()
        .map(|_| Lane {
            next: 0,
            report: StreamReport {
                submitted: 0,
                last_value: 0,
                recovered_at: None,
                error: None,
            },
            done: false,
            blocked_since: None,
        })
        .collect();
    let mut recovered = false;
    while state.iter().any(|l| !l.done) {
        for (k, l) in state.iter().enumerate() {
            gate.note(k, l.report.submitted);
            if l.done {
                gate.end(k);
            }
        }
        recovered |= queues
            .iter()
            .any(|q| q.doorbell() == Some(DoorbellStatus::DisconnectedAbort));
        let mut progressed = false;
        for (k, (((lane, batches), q), st)) in lanes
            .iter()
            .zip(cmds)
            .zip(queues.iter_mut())
            .zip(&mut state)
            .enumerate()
        {
            if st.done || !gate.open(k) {
                continue;
            }
            progressed |= step(lane, batches, &mut **q, st, recovered);
        }
        if !progressed {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    for ((lane, q), st) in lanes.iter().zip(queues.iter()).zip(&mut state) {
        let last = st.report.last_value;
        if lane.wait && last > 0 && st.report.error.is_none() {
            if let Err(e) = q.wait(last) {
                st.report.error = Some(format!("waiting for {last}: {e}"));
            }
        }
    }
    state.into_iter().map(|l| l.report).collect()
}

/// One lane's turn: at most one submission. Whether it submitted.
fn step(
    lane: &StreamLane,
    batches: &[Vec<Command>],
    q: &mut dyn LaneQueue,
    st: &mut Lane,
    recovered: bool,
) -> bool {
    let rep = &mut st.report;
    if let Some((min, more)) = lane.stop_after_recovery {
        if rep.recovered_at.is_none() && recovered && rep.submitted >= min {
            rep.recovered_at = Some(rep.submitted);
        }
        if rep.recovered_at.is_some_and(|r| rep.submitted >= r + more) {
            st.done = true;
            return false;
        }
    }
    let Some(batch) = batches.get(st.next) else {
        st.done = true;
        return false;
    };
    if lane.max_in_flight > 0 {
        let (last, completed) = match q.progress() {
            Ok(p) => p,
            Err(e) => {
                rep.error = Some(format!("batch {}: {e}", rep.submitted));
                st.done = true;
                return false;
            }
        };
        if last.saturating_sub(completed) >= lane.max_in_flight {
            let since = *st.blocked_since.get_or_insert_with(Instant::now);
            if since.elapsed() > STALL {
                rep.error = Some(format!(
                    "batch {}: {} batches in flight for {} s",
                    rep.submitted,
                    last - completed,
                    STALL.as_secs()
                ));
                st.done = true;
            }
            return false;
        }
        st.blocked_since = None;
    }
    match q.submit(batch) {
        Ok(v) => {
            rep.submitted += 1;
            rep.last_value = v;
            st.next += 1;
            true
        }
        Err(e) => {
            rep.error = Some(format!("batch {}: {e}", rep.submitted));
            st.done = true;
            false
        }
    }
}
