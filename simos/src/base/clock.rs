//! The CPU clock of the simulation ([`qpc`]): what `QueryPerformanceCounter` answers to the
//! driver, the UMD's thunks and the OS's trace alike, so all their times are on one clock. And
//! the OS's millisecond clock for what it times in rounds or real time ([`MsClock`]). And the
//! machine's time, for limits that mean "the GPU did not move" ([`MachineTime`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rvgpu_device::device::RunClock;

/// Ticks per second of [`qpc`] (what `QueryPerformanceFrequency` returns in the simulation).
pub const QPC_HZ: u64 = 10_000_000;

/// The simulation's `QueryPerformanceCounter`: 10 MHz ticks since a process-wide epoch (the
/// first call), plus one so that 0 keeps meaning "no clock". Monotonic.
pub fn qpc() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let e = EPOCH.get_or_init(Instant::now);
    let ns = e.elapsed().as_nanos();
    u64::try_from(ns / 100).unwrap_or(u64::MAX - 1) + 1
}

/// A millisecond clock of the simulated OS: in step mode a round is a millisecond and the
/// clock reads the rounds that passed ([`Self::advance`]); in threaded mode it reads the wall
/// clock since it was made. Kernel timers and the TDR history run on one each.
#[derive(Debug)]
pub struct MsClock {
    epoch: Instant,
    rounds: AtomicU64,
}

impl Default for MsClock {
    fn default() -> Self {
        Self {
            epoch: Instant::now(),
            rounds: AtomicU64::new(0),
        }
    }
}

impl MsClock {
    /// Step mode: `ms` rounds pass.
    pub fn advance(&self, ms: u64) {
        self.rounds.fetch_add(ms, Ordering::AcqRel);
    }

    /// Now, in milliseconds: the rounds passed in step mode, else the wall clock.
    pub fn now(&self, step: bool) -> u64 {
        if step {
            self.rounds.load(Ordering::Acquire)
        } else {
            u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
        }
    }
}

/// The machine's time for a limit that means "the GPU did not move": the emulated GPU's run
/// time ([`RunClock`]), which stands still while the host does not run its thread; the wall
/// clock for a board without one (a device in another process).
#[derive(Debug)]
pub struct MachineTime {
    run: Option<RunClock>,
    epoch: Instant,
}

impl MachineTime {
    /// A clock reading `run` when there is one.
    pub fn new(run: Option<RunClock>) -> Self {
        Self {
            run,
            epoch: Instant::now(),
        }
    }

    /// The machine's time of a board whose emulated GPU, when it is in this process, is
    /// `device`.
    pub fn of(device: Option<&rvgpu_device::Device>) -> Self {
        Self::new(device.map(rvgpu_device::Device::run_clock))
    }

    /// The waiting thread's own wall clock, for a timeout a caller gave as Windows' waits
    /// take theirs.
    pub fn host() -> Self {
        Self::new(None)
    }

    /// Now: the run time, or the wall clock since this was made.
    pub fn now(&self) -> Duration {
        match &self.run {
            Some(c) => c.elapsed(),
            None => self.epoch.elapsed(),
        }
    }
}
