//! What the D3DKMT and DLL sessions share of the adapter life cycle: a start as PnP reports
//! it, `run_until` by polling, and the refusal of a native-fence call without native fences.

use std::time::{Duration, Instant};

use crate::backend::common::Failure;
use crate::backend::session::{Session, StartedAdapter, Until};

/// A queue asked for without native fences: a skip, with `why` they are off.
pub(crate) fn no_native_fences(why: &str) -> Failure {
    Failure::Unsupported(format!("{why}: no user-mode queue without them"))
}

/// Marks adapter `i` of `opened` started and reports it as PnP would: a render-only adapter has
/// no sources and no children; any other adapter is reported with one of each so the
/// render-only cases fail rather than pass by assumption.
pub(crate) fn mark_started(opened: &mut [bool], i: usize, render_only: bool) -> StartedAdapter {
    if let Some(o) = opened.get_mut(i) {
        *o = true;
    }
    let n = u32::from(!render_only);
    StartedAdapter {
        sources: n,
        children: n,
    }
}

/// A session's `run_until` on these backends: polls `done` every 200 µs until it holds
/// (`true`), the machine has faulted (the failure) or `budget` has passed (`false`); on a real
/// machine the GPU, ISR and DPCs run on their own.
pub(crate) fn poll_until<S: Session>(
    s: &S,
    budget: Duration,
    fault: impl Fn(&S) -> Option<Failure>,
    done: Until<'_>,
) -> Result<bool, Failure> {
    let t0 = Instant::now();
    loop {
        if done(s) {
            return Ok(true);
        }
        if let Some(f) = fault(s) {
            return Err(f);
        }
        if t0.elapsed() >= budget {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}
