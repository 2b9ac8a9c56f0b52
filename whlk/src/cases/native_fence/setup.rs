//! What the native fence cases (both forms) start from: a session with its adapters started, a
//! fence with a GPU queue, and how long they give the GPU.

use std::time::Duration;

use crate::backend::{
    Backend, ExecMode, Failure, FenceRef, NewFence, QueueRef, Session, SessionConfig,
};

/// How long the threaded cases give the GPU for work that must complete.
pub(super) const SETTLE: Duration = Duration::from_secs(10);

/// A session on `b` with `adapters` adapters started.
pub(super) fn session(
    b: &dyn Backend,
    mode: ExecMode,
    adapters: usize,
) -> Result<Box<dyn Session>, crate::case::CaseError> {
    session_with(b, mode, adapters, |_| {})
}

pub(super) fn session_with(
    b: &dyn Backend,
    mode: ExecMode,
    adapters: usize,
    tweak: impl FnOnce(&mut SessionConfig),
) -> Result<Box<dyn Session>, crate::case::CaseError> {
    let mut cfg = SessionConfig::new(mode);
    cfg.adapters = adapters;
    tweak(&mut cfg);
    let mut s = b.open(&cfg)?;
    s.load_driver()?;
    for i in 0..adapters {
        s.start_adapter(i)?;
    }
    Ok(s)
}

/// A private native fence of process 1 on adapter 0 and a GPU queue of that process on
/// engine 0.
pub(super) fn fence_and_queue(s: &mut dyn Session) -> Result<(FenceRef, QueueRef), Failure> {
    let f = s.fences()?.create_native_fence(NewFence::new(0, 1))?;
    Ok((f, s.fences()?.gpu_queue(0, 0, 1)?))
}

/// Whether GPU queue `q` drains within [`SETTLE`].
pub(super) fn drained(s: &mut Box<dyn Session>, q: QueueRef) -> Result<bool, Failure> {
    s.run_until(SETTLE, &mut |s| {
        s.fences_ref().is_ok_and(|f| f.gpu_queue_drained(q))
    })
}
