//! The [`KmdFaults`] capability: faults armed in the KMD's recovery path, through its test hooks.

use crate::backend::common::Failure;

/// Faults armed in the KMD's own recovery path through its test hooks
/// ([`rvgpu_hw::testhooks::TestHookOp`]): a failing engine reset, a hang in the next paging
/// buffer, an engine that finishes its work between the OS's snapshot and the reset.
pub trait KmdFaults {
    /// Arms `op` (one of the arming ops) for `node` of adapter `i`.
    fn arm_kmd_fault(
        &mut self,
        i: usize,
        op: rvgpu_hw::testhooks::TestHookOp,
        node: u32,
    ) -> Result<(), Failure>;
}
