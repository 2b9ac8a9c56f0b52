//! A process killed while its adapter's recovery is under way (UM-18 beside TDR-05): the OS's
//! recovery thread pauses after the node's snapshot and before the driver's engine reset, and
//! another thread kills the process meanwhile, as Task Manager would.
//!
//! The point is one 24H2 has: `M:VidSchiResetHwEngine` @0x140052878 marks the node resetting at
//! ISR time (`VidSchiSetHwNodeResettingStateAtISR`), writes the first stage of the debug report
//! and only then calls `DxgkDdiResetHwEngine`; nothing it holds across that stretch keeps a
//! process's termination on another thread from running. The hook is the simulated OS's pause
//! before the reset ([`Machine::set_tdr_pause`]); the kill is [`Machine::kill_process`], the
//! teardown of an abnormal exit. The pause waits for the kill a bounded time only: a kill that
//! itself waits for the recovery goes on after the pause ends, as it would on Windows.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use rvgpu_device::Device;

use crate::base::lock::{lock, waiting};
use crate::{Machine, SimError, UmsProcess};

/// How the kill went.
#[derive(Clone, Debug)]
pub struct KillOutcome {
    /// The teardown's result.
    pub result: Result<(), SimError>,
    /// Whether the kill ended while the recovery was still paused (else it ran on after the
    /// pause, overlapping the rest of the recovery).
    pub ended_while_paused: bool,
}

#[derive(Default)]
struct Shared {
    /// The hook ran: the recovery paused and the kill started.
    fired: AtomicBool,
    /// The recovery is past its pause.
    resumed: AtomicBool,
    outcome: Mutex<Option<KillOutcome>>,
    ended: Condvar,
}

/// An armed kill: [`kill_during_recovery`].
pub struct KillDuringRecovery {
    machine: Weak<Machine>,
    adapter: usize,
    shared: Arc<Shared>,
}

/// Arms adapter `adapter`'s next engine recovery: once it pauses before the driver's reset,
/// `victim` is killed from a thread of its own and the recovery waits for that kill at most
/// `hold` before it goes on.
pub fn kill_during_recovery(
    m: &Arc<Machine>,
    adapter: usize,
    victim: UmsProcess,
    hold: Duration,
) -> Result<KillDuringRecovery, SimError> {
    let shared = Arc::new(Shared::default());
    let (weak, sh) = (Arc::downgrade(m), shared.clone());
    let hook = move |_: &Arc<Device>| {
        // One kill, at the first recovery after arming.
        if sh.fired.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(m) = weak.upgrade() else { return };
        let killer = sh.clone();
        let spawned = std::thread::Builder::new()
            .name("kill during recovery".into())
            .spawn(move || {
                let result = m.kill_process(&victim);
                // Read under the outcome's lock, which the pause holds when it ends.
                let mut outcome = lock(&killer.outcome);
                *outcome = Some(KillOutcome {
                    result,
                    ended_while_paused: !killer.resumed.load(Ordering::Acquire),
                });
                drop(outcome);
                killer.ended.notify_all();
            });
        if spawned.is_err() {
            *lock(&sh.outcome) = Some(KillOutcome {
                result: Err(SimError::OutOfMemory("a thread for the kill")),
                ended_while_paused: false,
            });
            sh.resumed.store(true, Ordering::Release);
            return;
        }
        let deadline = Instant::now() + hold;
        let mut done = lock(&sh.outcome);
        while done.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            done = waiting(done, |g| {
                sh.ended
                    .wait_timeout(g, left)
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
            })
            .0;
        }
        // Set under the outcome's lock: a kill that ends from now on sees the recovery resumed.
        sh.resumed.store(true, Ordering::Release);
        drop(done);
    };
    m.set_tdr_pause(adapter, Some(hook))?;
    Ok(KillDuringRecovery {
        machine: Arc::downgrade(m),
        adapter,
        shared,
    })
}

impl KillDuringRecovery {
    /// Whether the recovery paused and the kill started.
    pub fn fired(&self) -> bool {
        self.shared.fired.load(Ordering::Acquire)
    }

    /// The kill's outcome once it has ended (`None` before).
    pub fn outcome(&self) -> Option<KillOutcome> {
        lock(&self.shared.outcome).clone()
    }
}

impl Drop for KillDuringRecovery {
    /// Takes the hook off the adapter: later recoveries run without a pause.
    fn drop(&mut self) {
        if let Some(m) = self.machine.upgrade() {
            let _ = m.set_tdr_pause(self.adapter, None::<fn(&Arc<Device>)>);
        }
    }
}
