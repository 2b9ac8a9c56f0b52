//! Driver Verifier's low-resources simulation, for the driver's pool allocations.
//!
//! On Windows, Verifier's "low resources simulation" (and its systematic variant) makes chosen
//! `ExAllocatePool*` calls of the driver under test return NULL, without failing the kernel's
//! own allocations. Here the driver's pool is the host heap, and a failed host allocation in
//! std aborts the process; so the driver asks first: its `kmem` primitives call
//! [`rvgpu_kmd::platform::Platform::pool_allocation_permitted`] once per real allocation, and
//! [`crate::SimKernel`] answers from the current machine's [`PoolInjector`]. The simulated OS's
//! own allocations never pass through it (docs/robustness.md).
//!
//! The injector also counts every pool allocation the driver makes, which is how a test finds
//! the allocation points of an operation (and proves a path, e.g. the DPC, makes none).

use std::sync::Mutex;

use crate::base::lock::lock;

/// Which of the driver's pool allocations fail. Allocations are numbered from 0 in the order
/// the driver asks, counting from when the mode was set ([`crate::Machine::set_low_resources`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LowResources {
    /// Every allocation succeeds (Verifier off).
    #[default]
    Off,
    /// Exactly allocation `n` fails (systematic low-resources simulation: one failure point
    /// at a time).
    FailNth(u64),
    /// Allocation `n` and every later one fail (the pool stays exhausted).
    FailFrom(u64),
}

/// What the driver asked since the mode was last set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Pool allocations the driver attempted.
    pub attempted: u64,
    /// Of those, how many the simulation failed.
    pub failed: u64,
}

/// One machine's injector.
#[derive(Debug, Default)]
pub struct PoolInjector {
    state: Mutex<(LowResources, PoolStats)>,
}

impl PoolInjector {
    /// Sets the mode and restarts the numbering and the counts.
    pub fn set(&self, mode: LowResources) {
        *lock(&self.state) = (mode, PoolStats::default());
    }

    /// Counts since the mode was set.
    pub fn stats(&self) -> PoolStats {
        lock(&self.state).1
    }

    /// Numbers this allocation and decides whether it may proceed.
    pub fn permit(&self) -> bool {
        let mut g = lock(&self.state);
        let (mode, stats) = &mut *g;
        let index = stats.attempted;
        stats.attempted = stats.attempted.saturating_add(1);
        let fail = match *mode {
            LowResources::Off => false,
            LowResources::FailNth(n) => index == n,
            LowResources::FailFrom(n) => index >= n,
        };
        if fail {
            stats.failed = stats.failed.saturating_add(1);
        }
        !fail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_nth_fails_exactly_one_and_counts_all() {
        let p = PoolInjector::default();
        p.set(LowResources::FailNth(1));
        assert_eq!([p.permit(), p.permit(), p.permit()], [true, false, true]);
        assert_eq!(
            p.stats(),
            PoolStats {
                attempted: 3,
                failed: 1
            }
        );
        p.set(LowResources::FailFrom(1));
        assert_eq!([p.permit(), p.permit(), p.permit()], [true, false, false]);
        p.set(LowResources::Off);
        assert!(p.permit());
        assert_eq!(p.stats().failed, 0);
    }
}
