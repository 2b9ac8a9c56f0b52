//! What the seam keeps of [`Fences`]' objects: the case's native fences, the GPU queues that
//! signal and wait on them, and CPU waits in event form.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rvgpu_hw::cmd::Command;

use crate::backend::caps::fences::WaitResult;
use crate::backend::caps::user_mode::UmQueueRef;
#[cfg(doc)]
use crate::backend::caps::Fences;

/// A native fence of [`Fences`]: its process, the UMD's fence, and whether the case destroyed
/// it.
pub(crate) struct AppFence<F> {
    pub(crate) process: usize,
    pub(crate) fence: F,
    pub(crate) destroyed: bool,
}

/// What a case appended to a GPU queue and has not submitted yet: a native fence's signal or
/// wait (an index of [`AppObjects::fences`]), or a packet (a legacy monitored fence's signal).
#[derive(Clone, Copy)]
pub(crate) enum Pending {
    Signal(usize, u64),
    Wait(usize, u64),
    Cmd(Command),
}

/// A GPU queue of [`Fences`]: a user-mode queue of the process and what is appended to it.
pub(crate) struct GpuQueue {
    pub(super) process: usize,
    pub(super) queue: UmQueueRef,
    pub(super) pending: Vec<Pending>,
    /// The progress value of the last submission.
    pub(super) last: u64,
}

/// One CPU wait in event form on a thread of its own, which waits in short slices so that
/// the session can stop it when it ends (dropping it stops and joins the thread).
pub(crate) struct Waiter {
    outcome: Arc<(Mutex<Option<WaitResult>>, Condvar)>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Waiter {
    /// A thread that runs `slice` until it gives an outcome or `stop` is set.
    pub(crate) fn spawn(
        stop: &Arc<AtomicBool>,
        mut slice: impl FnMut() -> Option<WaitResult> + Send + 'static,
    ) -> Self {
        let outcome = Arc::new((Mutex::new(None), Condvar::new()));
        let (o, st) = (outcome.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::Acquire) {
                if let Some(r) = slice() {
                    let (m, cv) = &*o;
                    *m.lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
                    cv.notify_all();
                    return;
                }
            }
        });
        Self {
            outcome,
            stop: stop.clone(),
            thread: Some(thread),
        }
    }

    /// The outcome, awaited for at most `timeout` (`None`: not yet).
    pub(crate) fn result(&self, timeout: Duration) -> Option<WaitResult> {
        let (m, cv) = &*self.outcome;
        let deadline = Instant::now() + timeout;
        let mut g = m.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(r) = *g {
                return Some(r);
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            if left.is_zero() {
                return None;
            }
            g = cv
                .wait_timeout(g, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
