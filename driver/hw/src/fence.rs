//! Fence storage as the device sees it.
//!
//! A native fence is two 64-bit words the OS allocates (NF-01): CurrentValue (GPU read/write)
//! and MonitoredValue (GPU read-only). Non-shareable fences of one process are packed at
//! [`VALUE_STRIDE`], the stride the driver reports in its native-fence caps (NF-05); each
//! shareable fence gets its own page.
//!
//! Signal protocol (device side, NF-03/NF-08), for FENCE_SIGNAL with the conditional flag:
//! 1. store CurrentValue (64-bit, single-copy atomic);
//! 2. if a LOG_WRITE follows, write its entry and header (LOG-04);
//! 3. full memory barrier;
//! 4. load MonitoredValue; if CurrentValue >= MonitoredValue post a FenceSignaled event.
//!
//! CPU side (driver, NF-07): store the new MonitoredValue, full barrier, write
//! [`crate::regs::FENCE_SYNC`]; then the OS re-reads CurrentValue. Either the device's step 4
//! sees the new MonitoredValue or the CPU's re-read sees the new CurrentValue: no interleaving
//! loses a wake-up (NF-09). The device has no shadow copy of MonitoredValue: it reads memory
//! at step 4, so step (1) of NF-08 is the CPU's store itself.

/// Stride between packed fence values, in bytes (reported as the native-fence caps stride).
pub const VALUE_STRIDE: u64 = 8;

/// The conditional-interrupt rule (NF-03): interrupt iff the new value has reached the
/// monitored one.
///
/// `>=`, not the `>` of Microsoft's pages, because Windows writes two different things into
/// MonitoredValue for a CPU wait on value W: the pages (and NF-02) say W - 1, while 24H2's
/// VidSch writes W itself (dxgmms2 `VidSchSubmitWaitFromCpu`, docs/windows-bringup.md, "Where
/// the code and the pages disagree"). With `>` and W a signal to exactly W raises nothing and
/// the wait hangs; with `>=` and W - 1 a signal to W - 1 interrupts once too often, which
/// NF-09 allows. With no waiter MonitoredValue is `u64::MAX`, reached only by the value a lost
/// device writes (a spurious interrupt then).
pub const fn needs_interrupt(current: u64, monitored: u64) -> bool {
    current >= monitored
}

/// The wait rule of FENCE_WAIT and of CPU waits: satisfied when `current >= target`.
pub const fn wait_satisfied(current: u64, target: u64) -> bool {
    current >= target
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nf_03_rules() {
        assert!(!needs_interrupt(40, 41));
        assert!(
            needs_interrupt(41, 41),
            "24H2's MonitoredValue is the awaited value itself"
        );
        assert!(needs_interrupt(42, 41));
        assert!(
            !needs_interrupt(u64::MAX - 1, u64::MAX),
            "no waiter, no interrupt"
        );
        assert!(
            needs_interrupt(1, 0),
            "cross-adapter fences: MonitoredValue 0, always"
        );
        assert!(wait_satisfied(10, 10) && !wait_satisfied(9, 10));
    }
}
