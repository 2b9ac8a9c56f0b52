//! Lanes of work that run at the same time ([`ChurnLane`], [`StreamLane`](super::StreamLane)):
//! the queue every harness-made queue has, one churn lane over any set of thunks, and the
//! threads that run a call's lanes.

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

/// A stream lane's report when its thread panicked.
pub(crate) fn stream_panicked() -> super::StreamReport {
    super::StreamReport {
        submitted: 0,
        last_value: 0,
        recovered_at: None,
        error: Some("the lane's thread panicked".into()),
    }
}
