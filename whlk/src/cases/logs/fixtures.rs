//! What both forms of the log cases share: the OS's log size, the KMD form's needs, and the
//! fence chains and rounds the cases run.

use std::ops::RangeInclusive;
use std::time::Duration;

use crate::backend::{
    Capability, FenceWork, LogKind, NewQueue, ProcessRef, Session, UmFenceRef, UmQueueRef,
    WaitResult, Work,
};
use crate::case::{CaseError, CaseResult};
use crate::ensure;

/// The OS's default log size: entries that fit one 4 KiB buffer (`rvgpu_hw::log`).
pub(super) const DEFAULT_LOG_ENTRIES: u64 = 84;
/// CPU wait timeout.
pub(super) const WAIT: Duration = Duration::from_secs(10);

/// What the KMD form needs: the UMD's native fences on user-mode queues and the KMD's copy of
/// a queue's log through its test hooks.
pub(super) const KMD_FORM: &[Capability] = &[
    Capability::UserModeSubmission,
    Capability::UmdFences,
    Capability::NativeFences,
    Capability::KmdJournal,
];

/// The log's name in a failure.
pub(super) fn kind_name(k: LogKind) -> &'static str {
    match k {
        LogKind::Wait => "wait",
        LogKind::Signal => "signal",
    }
}

/// Signals `f` from `q` to each of `values` in turn (one submission each), then waits on the
/// CPU for the last; fails naming `what` unless that wait is satisfied.
pub(super) fn signal_and_wait(
    s: &mut dyn Session,
    q: UmQueueRef,
    f: UmFenceRef,
    values: RangeInclusive<u64>,
    what: &str,
) -> CaseResult {
    let last = *values.end();
    for v in values {
        s.umd_fences()?
            .submit_fence_ops(q, &[FenceWork::Signal(f, v)])?;
    }
    let r = s.umd_fences()?.wait_um_fence(f, last, WAIT)?;
    ensure!(r == WaitResult::Satisfied, "{what}: CPU wait ended {r:?}");
    Ok(())
}

/// Two processes' queues on node 0 chained by one fence A shares with B: B's queue waits on
/// the GPU for A's signal of 3, then signals a fence of its own the CPU waits for. Returns
/// (A's queue, B's queue) once B's instance reads 3.
pub(super) fn shared_fence_chain(
    s: &mut dyn Session,
) -> Result<(UmQueueRef, UmQueueRef), CaseError> {
    let pa = s.ums()?.open_process(0)?;
    let pb = s.ums()?.open_process(0)?;
    let qa = s.ums()?.create_queue(pa, NewQueue::user_mode(0))?;
    let qb = s.ums()?.create_queue(pb, NewQueue::user_mode(0))?;
    let fa = s.umd_fences()?.create_um_fence(pa, 0)?;
    let fb = s.umd_fences()?.open_um_fence(fa, pb)?;
    let done = s.umd_fences()?.create_um_fence(pb, 0)?;
    s.umd_fences()?
        .submit_fence_ops(qb, &[FenceWork::Wait(fb, 3), FenceWork::Signal(done, 1)])?;
    s.umd_fences()?
        .submit_fence_ops(qa, &[FenceWork::Signal(fa, 3)])?;
    let r = s.umd_fences()?.wait_um_fence(done, 1, WAIT)?;
    ensure!(
        r == WaitResult::Satisfied,
        "B's chain did not finish: {r:?}"
    );
    let v = s.umd_fences_ref()?.um_fence_value(fb)?;
    ensure!(v == 3, "B's instance reads {v}");
    Ok((qa, qb))
}

/// `rounds` rounds over `lanes`, both forms of `Logs.Timeline`: each round the consumer waits
/// for the producer's signal, fills and signals its own fence (submitted first, so its wait is
/// usually in the GPU before the producer signals); the CPU waits every fifth round.
pub(super) fn timeline_rounds(
    s: &mut dyn Session,
    lanes: &mut [Lane],
    rounds: u64,
) -> Result<(), CaseError> {
    for k in 1..=rounds {
        for l in lanes.iter_mut() {
            let buf = l.buf;
            let fill = |off: u64| {
                FenceWork::Work(Work::Fill {
                    dst: buf,
                    offset: off,
                    bytes: 1024,
                    pattern: k,
                })
            };
            l.last[1] = s.umd_fences()?.submit_fence_ops(
                l.b,
                &[
                    FenceWork::Wait(l.fa, k),
                    fill(2048),
                    FenceWork::Signal(l.fb, k),
                ],
            )?;
            l.last[0] = s
                .umd_fences()?
                .submit_fence_ops(l.a, &[fill(0), FenceWork::Signal(l.fa, k)])?;
        }
        if k % 5 == 0 || k == rounds {
            for l in lanes.iter() {
                let r = s.umd_fences()?.wait_um_fence(l.fb, k, WAIT)?;
                ensure!(
                    r == WaitResult::Satisfied,
                    "CPU wait for round {k} ended {r:?}"
                );
            }
        }
    }
    Ok(())
}

/// One process of the chain: queue `a` (node 0) produces, queue `b` (node 1, or 0 on a
/// single-engine adapter) consumes.
pub(super) struct Lane {
    pub(super) a: UmQueueRef,
    pub(super) b: UmQueueRef,
    /// a → b.
    pub(super) fa: UmFenceRef,
    /// b → CPU.
    pub(super) fb: UmFenceRef,
    pub(super) buf: crate::backend::BufferRef,
    pub(super) last: [u64; 2],
}

impl Lane {
    /// Process `p`'s lane over queues `a` and `b`: its two fences made at 0 and a 4 KiB
    /// buffer, nothing submitted yet.
    pub(super) fn new(
        s: &mut dyn Session,
        p: ProcessRef,
        a: UmQueueRef,
        b: UmQueueRef,
    ) -> Result<Self, CaseError> {
        let fa = s.umd_fences()?.create_um_fence(p, 0)?;
        let fb = s.umd_fences()?.create_um_fence(p, 0)?;
        let buf = s.ums()?.create_buffer(p, 4096)?;
        Ok(Self {
            a,
            b,
            fa,
            fb,
            buf,
            last: [0; 2],
        })
    }
}
