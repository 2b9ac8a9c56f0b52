//! Lanes of work that run at the same time ([`ChurnLane`], [`StreamLane`](super::StreamLane)):
//! the queue every harness-made queue has, one churn lane over any set of thunks, and the
//! threads that run a call's lanes.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rvgpu_hw::cmd::Command;
use rvgpu_umd::kmt::Kmt;
use rvgpu_umd::submit::{QueueConfig, SubmissionPath, SubmitError, UserQueue};

use super::{ChurnLane, ChurnReport, Failure, ProcessRef, Work};

/// The configuration of every queue the harness makes on `node`: a 4 KiB ring and command
/// buffer.
pub(crate) fn queue_config(node: u32) -> QueueConfig {
    QueueConfig {
        node,
        ring_size: 4096,
        command_buffer_size: 4096,
        ..QueueConfig::default()
    }
}

/// One lane's job: what the session needs of its process, the lane, its encoded batches.
pub(crate) type ChurnJob<'l, P> = (P, &'l ChurnLane, Vec<Vec<Command>>);

/// Each lane with what `process` gives for its process and its batches as `encode` makes
/// them: the jobs [`churn_lane`] runs.
pub(crate) fn churn_jobs<P>(
    lanes: &[ChurnLane],
    process: impl Fn(ProcessRef) -> Result<P, Failure>,
    encode: impl Fn(&[Work]) -> Result<Vec<Command>, Failure>,
) -> Result<Vec<ChurnJob<'_, P>>, Failure> {
    lanes
        .iter()
        .map(|lane| {
            let cmds = lane
                .work
                .iter()
                .map(|w| encode(w))
                .collect::<Result<_, _>>()?;
            Ok((process(lane.process)?, lane, cmds))
        })
        .collect()
}

/// One [`ChurnLane`] on the calling thread: per round a user-mode queue over `kmt()`, its
/// batches, a wait for the last, the path it ended on and a close; `err` words a UMD error.
pub(crate) fn churn_lane<K: Kmt>(
    kmt: impl Fn() -> K,
    lane: &ChurnLane,
    cmds: &[Vec<Command>],
    err: impl Fn(SubmitError) -> String,
) -> ChurnReport {
    let per = lane.batches_per_round as usize;
    churn_rounds(lane, |round| {
        let mut q = UserQueue::new(kmt(), &queue_config(lane.node)).map_err(&err)?;
        let mut last = 0;
        for batch in cmds.iter().skip(round * per).take(per) {
            last = q.submit(batch).map_err(&err)?;
        }
        if last > 0 {
            q.wait(last).map_err(&err)?;
        }
        let kernel = q.path() == SubmissionPath::KernelMode;
        q.close().map_err(&err)?;
        Ok(kernel)
    })
}

/// `lane`'s rounds, counted: `round(r)` runs round `r` and says whether its queue ended on the
/// kernel-mode path; the first error ends the lane.
pub(crate) fn churn_rounds(
    lane: &ChurnLane,
    mut round: impl FnMut(usize) -> Result<bool, String>,
) -> ChurnReport {
    let mut report = ChurnReport {
        rounds_done: 0,
        kernel_mode_rounds: 0,
        error: None,
    };
    for r in 0..lane.rounds as usize {
        match round(r) {
            Ok(kernel) => {
                report.rounds_done += 1;
                report.kernel_mode_rounds += u32::from(kernel);
            }
            Err(e) => {
                report.error = Some(format!("round {r}: {e}"));
                break;
            }
        }
    }
    report
}

/// `run` on every job: one thread each, all at once, when `threaded`; otherwise one after
/// another on the calling thread. A thread that panicked reports `panicked()`.
pub(crate) fn run_lanes<J: Send, R: Send>(
    jobs: impl IntoIterator<Item = J>,
    threaded: bool,
    run: impl Fn(J) -> R + Sync,
    panicked: impl Fn() -> R,
) -> Vec<R> {
    if !threaded {
        return jobs.into_iter().map(run).collect();
    }
    let run = &run;
    std::thread::scope(|sc| {
        let handles: Vec<_> = jobs.into_iter().map(|j| sc.spawn(move || run(j))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| panicked()))
            .collect()
    })
}

/// A churn lane's report when its thread panicked.
pub(crate) fn churn_panicked() -> ChurnReport {
    ChurnReport {
        rounds_done: 0,
        kernel_mode_rounds: 0,
        error: Some("the lane's thread panicked".into()),
    }
}

/// How far each lane of one stream has gone, for a lane whose start waits on the others
/// ([`StreamLane::start_after`](super::StreamLane::start_after)).
pub(crate) struct StreamGate<'l> {
    lanes: &'l [super::StreamLane],
    submitted: Vec<AtomicUsize>,
    ended: Vec<AtomicBool>,
}

impl<'l> StreamGate<'l> {
    pub(crate) fn new(lanes: &'l [super::StreamLane]) -> Self {
        Self {
            lanes,
            submitted: lanes.iter().map(|_| AtomicUsize::new(0)).collect(),
            ended: lanes.iter().map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// Lane `k` of the stream.
    pub(crate) fn lane(&self, k: usize) -> Option<&'l super::StreamLane> {
        self.lanes.get(k)
    }

    /// Lane `k` has submitted `n` batches.
    pub(crate) fn note(&self, k: usize, n: usize) {
        if let Some(s) = self.submitted.get(k) {
            s.store(n, Ordering::Release);
        }
    }

    /// Lane `k` submits no more.
    pub(crate) fn end(&self, k: usize) {
        if let Some(e) = self.ended.get(k) {
            e.store(true, Ordering::Release);
        }
    }

    /// A guard that ends lane `k` when dropped, however its runner returns.
    pub(crate) fn ending(&self, k: usize) -> LaneEnd<'_, 'l> {
        LaneEnd { gate: self, k }
    }

    /// Whether lane `k` may start: every other lane that stops after a recovery has submitted
    /// its `start_after` batches, or ended.
    pub(crate) fn open(&self, k: usize) -> bool {
        let Some(need) = self.lanes.get(k).map(|l| l.start_after) else {
            return true;
        };
        need == 0
            || self
                .lanes
                .iter()
                .zip(self.submitted.iter().zip(&self.ended))
                .enumerate()
                .all(|(j, (l, (s, e)))| {
                    j == k
                        || l.stop_after_recovery.is_none()
                        || e.load(Ordering::Acquire)
                        || s.load(Ordering::Acquire) >= need
                })
    }

    /// On lane `k`'s own thread: returns once it may start. The others are running on theirs
    /// and each ends, so this ends.
    pub(crate) fn wait_open(&self, k: usize) {
        while !self.open(k) {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }
}

/// [`StreamGate::ending`]'s guard.
pub(crate) struct LaneEnd<'g, 'l> {
    gate: &'g StreamGate<'l>,
    k: usize,
}

impl Drop for LaneEnd<'_, '_> {
    fn drop(&mut self) {
        self.gate.end(self.k);
    }
}

/// A stream lane's report when its thread panicked.
pub(crate) fn stream_panicked() -> super::StreamReport {
    super::StreamReport {
        submitted: 0,
        last_value: 0,
        recovered_at: None,
        error: Some("the lane's thread panicked".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{StreamLane, UmQueueRef, Work};
    use super::StreamGate;

    fn lane(q: usize, start_after: usize, stops: bool) -> StreamLane {
        StreamLane {
            queue: UmQueueRef(q),
            batches: vec![vec![Work::Hang]],
            start_after,
            max_in_flight: 0,
            stop_after_recovery: stops.then_some((1, 1)),
            wait: false,
        }
    }

    /// TDR-05: a lane that starts among the others' traffic starts when each lane that stops
    /// after a recovery has submitted its share or ended, whatever time that took; lanes that
    /// do not stop after a recovery are not waited for.
    #[test]
    fn tdr_05_a_late_lane_starts_on_the_others_progress_not_on_time() {
        let lanes = [
            lane(0, 0, true),
            lane(1, 0, true),
            lane(2, 0, false),
            lane(3, 3, false),
        ];
        let gate = StreamGate::new(&lanes);
        assert!(
            gate.open(0),
            "a lane with nothing to wait for starts at once"
        );
        assert!(!gate.open(3));
        gate.note(0, 3);
        gate.note(1, 2);
        assert!(!gate.open(3), "lane 1 has submitted 2 of 3");
        gate.note(1, 3);
        assert!(gate.open(3));
        let gate = StreamGate::new(&lanes);
        gate.note(0, 5);
        gate.end(1);
        assert!(gate.open(3), "a lane that ended is not waited for");
    }
}
