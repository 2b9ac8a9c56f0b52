//! The CPU clock of the simulation ([`qpc`]): what `QueryPerformanceCounter` answers to the
//! driver, the UMD's thunks and the OS's trace alike, so all their times are on one clock.

use std::sync::OnceLock;
use std::time::Instant;

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
