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
use rvgpu_umd::kmt::Kmt;

use crate::backend::umd_queue::UmdQueue;
use crate::backend::{DoorbellStatus, StreamLane, StreamReport};

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
pub(super) fn interleave<K: Kmt>(
    lanes: &[StreamLane],
    cmds: &[Vec<Vec<Command>>],
    queues: &mut [UmdQueue<K>],
) -> Vec<StreamReport> {
    let t0 = Instant::now();
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
        recovered |= queues
            .iter()
            .any(|q| q.doorbell_status() == Some(DoorbellStatus::DisconnectedAbort));
        let mut progressed = false;
        for (((lane, batches), q), st) in lanes
            .iter()
            .zip(cmds)
            .zip(queues.iter_mut())
            .zip(&mut state)
        {
            if st.done || t0.elapsed() < lane.start_after {
                continue;
            }
            progressed |= step(lane, batches, q, st, recovered);
        }
        if !progressed {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    for ((lane, q), st) in lanes.iter().zip(queues.iter()).zip(&mut state) {
        let last = st.report.last_value;
        if lane.wait && last > 0 && st.report.error.is_none() {
            if let Err(e) = q.wait(last) {
                st.report.error = Some(format!("waiting for {last}: UMD: {e:?}"));
            }
        }
    }
    state.into_iter().map(|l| l.report).collect()
}

/// One lane's turn: at most one submission. Whether it submitted.
fn step<K: Kmt>(
    lane: &StreamLane,
    batches: &[Vec<Command>],
    q: &mut UmdQueue<K>,
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
        let (last, completed) = q.progress();
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
            rep.error = Some(format!("batch {}: UMD: {e:?}", rep.submitted));
            st.done = true;
            false
        }
    }
}
