//! A CPU wait the OS registered for the DLL (`D3DKMTWaitForSynchronizationObjectFromCpu`): the
//! fence waits behind it, and waiting for them, for the thunk and for the event it signals.

use std::time::{Duration, Instant};

use crate::sync::fence::{SimEvent, WaitOutcome};

/// One CPU wait the OS registered: released when all (or, `any`, one) of its fence waits are.
pub(crate) struct WaitGroup {
    pub(super) events: Vec<SimEvent>,
    pub(super) any: bool,
}

impl WaitGroup {
    /// Whether the OS released the wait already (its condition holds, or a fence went away):
    /// it has signalled its event.
    pub(crate) fn released(&self) -> bool {
        let done: Vec<Option<WaitOutcome>> = self.events.iter().map(SimEvent::outcome).collect();
        let satisfied = |o: &Option<WaitOutcome>| *o == Some(WaitOutcome::Satisfied);
        done.contains(&Some(WaitOutcome::Abandoned))
            || if self.any {
                done.iter().any(satisfied)
            } else {
                done.iter().all(satisfied)
            }
    }
}

/// Waits up to `timeout` for `g`: `Some(true)` when the condition holds, `Some(false)` when a
/// fence went away (the wait is abandoned), `None` when the time passed.
pub(crate) fn wait_group(m: &crate::Machine, g: &WaitGroup, timeout: Duration) -> Option<bool> {
    let deadline = Instant::now() + timeout;
    loop {
        let done: Vec<Option<WaitOutcome>> = g.events.iter().map(SimEvent::outcome).collect();
        if done.contains(&Some(WaitOutcome::Abandoned)) {
            return Some(false);
        }
        let satisfied = |o: &Option<WaitOutcome>| *o == Some(WaitOutcome::Satisfied);
        let ok = if g.any {
            done.iter().any(satisfied)
        } else {
            done.iter().all(satisfied)
        };
        if ok {
            return Some(true);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        // Drive (step mode) or sleep (threaded) on the first one still pending, a slice at a
        // time so that a WaitAny sees another one released.
        let pending = g.events.iter().find(|e| e.outcome().is_none())?;
        match m.drive_wait(pending, left.min(Duration::from_millis(20))) {
            Ok(_) => {}
            Err(_) => return Some(false),
        }
    }
}
