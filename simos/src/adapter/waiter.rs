//! What an OS operation that waits for the GPU needs of the machine it runs on. In step mode no
//! thread runs the devices, interrupts, DPCs and timers but the waiting one, a round of the
//! whole machine at a time; in threaded mode the machine's threads run them and the waiter
//! polls. Components take a [`Waiter`] instead of the machine, so they sit below it.

use std::time::Duration;

/// A machine that the waiting thread runs itself (step mode).
pub trait Round {
    /// One round of the machine (every adapter); whether anything happened.
    fn run_round(&self) -> bool;
}

/// How a wait makes progress and how long it may last.
#[derive(Clone, Copy)]
pub struct Waiter<'a> {
    /// The machine to run, one round at a time, in step mode; `None` in threaded mode.
    pub step: Option<&'a dyn Round>,
    /// How long a blocking wait waits (`OsConfig::wait_timeout`).
    pub timeout: Duration,
}
