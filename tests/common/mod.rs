//! Shared by the root package's integration tests.

use std::fmt;
use std::ptr::NonNull;

use rvgpu_kmd::platform::{Irql, Level, Platform};

/// The six native-fence DDIs (NF-12).
#[allow(dead_code)]
pub const NATIVE_FENCE_DDIS: [&str; 6] = [
    "DxgkDdiCreateNativeFence",
    "DxgkDdiDestroyNativeFence",
    "DxgkDdiOpenNativeFence",
    "DxgkDdiCloseNativeFence",
    "DxgkDdiUpdateMonitoredValues",
    "DxgkDdiUpdateCurrentValuesFromCpu",
];

/// A platform with no device and no kernel behind it, for tests that exercise the DDI table
/// without the simulated OS. Reads return all-ones like an absent device, writes are dropped,
/// IRQL never changes, and nothing has a bus address.
#[derive(Debug)]
pub struct NullPlatform;

// SAFETY: the MMIO functions perform no device access at all (there is no device), which
// trivially satisfies "at most one access per call, in program order".
unsafe impl Platform for NullPlatform {
    /// No kernel, so no timers.
    type Timer = ();
    unsafe fn mmio_read32(_base: NonNull<u8>, _offset: usize) -> u32 {
        u32::MAX
    }
    unsafe fn mmio_write32(_base: NonNull<u8>, _offset: usize, _value: u32) {}
    unsafe fn mmio_read64(_base: NonNull<u8>, _offset: usize) -> u64 {
        u64::MAX
    }
    unsafe fn mmio_write64(_base: NonNull<u8>, _offset: usize, _value: u64) {}
    fn current_irql() -> Irql {
        Irql::Passive
    }
    fn raise_to_dispatch() -> Irql {
        Irql::Passive
    }
    fn lower_irql(_previous: Irql) {}
    fn bus_address(_va: NonNull<u8>) -> Option<rvgpu_hw::addr::BusAddr> {
        None
    }
    fn log(level: Level, args: fmt::Arguments<'_>) {
        eprintln!("[rvgpu {level:?}] {args}");
    }
    /// 10 MHz ticks since the first call (the frequency Windows reports on most machines).
    fn query_performance_counter() -> (u64, u64) {
        static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let t = EPOCH.get_or_init(std::time::Instant::now).elapsed();
        let ticks = u64::try_from(t.as_nanos() / 100).unwrap_or(u64::MAX);
        (ticks, 10_000_000)
    }
}
