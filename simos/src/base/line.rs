//! The adapter's interrupt line as the device raises it, and the wakes the simulation's
//! interrupt, DPC and worker threads sleep on (a leaf: the device and the PCI board raise the
//! line without knowing the adapter).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use rvgpu_device::InterruptLine;

use crate::base::lock::lock;

/// A generation counter with a condvar: "something happened, look again".
#[derive(Debug, Default)]
pub struct Wake {
    state: Mutex<WakeState>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct WakeState {
    generation: u64,
    /// Threads blocked in [`Wake::wait`]. A notify with none skips the futex wake, which
    /// costs a system call even with nobody to wake (every notify in step mode).
    waiters: u32,
}

impl Wake {
    /// Bumps the generation and wakes every waiter.
    pub fn notify(&self) {
        let mut s = lock(&self.state);
        s.generation = s.generation.wrapping_add(1);
        let waiters = s.waiters > 0;
        // After unlocking, as `SimEvent::set`: a waiter that registered under the lock is
        // either asleep or will see the new generation.
        drop(s);
        if waiters {
            self.cv.notify_all();
        }
    }

    /// Current generation.
    pub fn generation(&self) -> u64 {
        lock(&self.state).generation
    }

    /// Waits until the generation differs from `seen` or `timeout` passes.
    pub fn wait(&self, seen: u64, timeout: Duration) -> u64 {
        let mut s = lock(&self.state);
        // Counted under the lock a notify takes: a notify either sees the waiter or bumped
        // the generation before the check below.
        s.waiters = s.waiters.saturating_add(1);
        let (mut s, _) = crate::base::lock::waiting(s, |s| {
            self.cv
                .wait_timeout_while(s, timeout, |s| s.generation == seen)
                .unwrap_or_else(|p| p.into_inner())
        });
        s.waiters = s.waiters.saturating_sub(1);
        s.generation
    }
}

/// The adapter's interrupt line as the device drives it. With a message-signalled interrupt
/// each assertion (and each re-assertion under a high line, the device's `Remind`) is one
/// message, as the MSI front end of a PCI function sends one per rising edge; messages not
/// yet serviced coalesce, as a pending vector does in an interrupt controller.
#[derive(Debug)]
pub struct SimLine {
    asserted: AtomicBool,
    messages: AtomicBool,
    wake: Arc<Wake>,
}

impl SimLine {
    /// A deasserted line that wakes `wake` when asserted.
    pub fn new(wake: Arc<Wake>) -> Self {
        Self {
            asserted: AtomicBool::new(false),
            messages: AtomicBool::new(false),
            wake,
        }
    }

    /// Current level.
    pub fn asserted(&self) -> bool {
        self.asserted.load(Ordering::Acquire)
    }

    /// Takes the pending message, if any (message-signalled interrupts).
    pub fn take_message(&self) -> bool {
        self.messages.swap(false, Ordering::AcqRel)
    }
}

impl InterruptLine for SimLine {
    fn set(&self, asserted: bool) {
        self.asserted.store(asserted, Ordering::Release);
    }

    fn wake(&self) {
        // Release: the device's state that raised the line is visible to the servicer that
        // takes the message.
        self.messages.store(true, Ordering::Release);
        self.wake.notify();
    }
}
