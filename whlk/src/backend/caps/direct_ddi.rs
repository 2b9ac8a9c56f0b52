//! The [`DirectDdi`] capability: DDI calls made directly, as the OS would (simulation only).

use crate::backend::common::Failure;

use super::fences::FenceRef;
use super::kmd_caps::DriverCaps;
use super::user_mode::{UmQueueRef, Work};

/// What [`DirectDdi::collect_dbg_info_under_reset`] saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DbgInfoRace {
    /// `DxgkDdiCollectDbgInfo` calls that returned while the reset was pending.
    pub calls: usize,
    /// Shortest and longest text.
    pub min_len: usize,
    /// Longest text.
    pub max_len: usize,
    /// `QueryAdapterInfo` calls that returned meanwhile.
    pub caps_queries: usize,
}

/// Calling the driver's DDIs directly, bypassing the OS (or the way Windows never would).
/// Simulation only.
pub trait DirectDdi {
    /// Queries `DXGKQAITYPE_DRIVERCAPS` from a thread at DISPATCH_LEVEL, which Windows never
    /// does (simulation only: proves the OS side enforces IRQL rules).
    fn driver_caps_at_dispatch(&mut self, i: usize) -> Result<DriverCaps, Failure>;

    /// Calls DxgkDdiDestroyNativeFence directly for `f`'s global handle, bypassing the OS
    /// (simulation only); the driver's NTSTATUS.
    fn raw_destroy_native_fence(&mut self, f: FenceRef) -> Result<i32, Failure>;

    /// Submits `work` to the user-mode queue's own hardware queue straight through
    /// `DxgkDdiSubmitCommandToHwQueue`, bypassing the OS's UM-05 check; the KMD's NTSTATUS.
    fn ddi_submit_on_user_queue(&mut self, q: UmQueueRef, work: &[Work]) -> Result<i32, Failure>;

    /// `DxgkDdiQueryCurrentFence(node)`: the KMD's last completed fence ID. Simulation only.
    fn current_fence(&mut self, i: usize, node: u32) -> Result<u32, Failure>;

    /// `DxgkDdiQueryDependentEngineGroup(node)`. Simulation only.
    fn dependent_engine_group(&mut self, i: usize, node: u32) -> Result<u64, Failure>;

    /// `DxgkDdiCollectDbgInfo(reason)` at PASSIVE_LEVEL; the text. Simulation only.
    fn collect_dbg_info(&mut self, i: usize, reason: u32) -> Result<String, Failure>;

    /// TDR-01 level 0, threaded sessions with TDR enabled: one thread calls
    /// `DxgkDdiCollectDbgInfo(0x141)` in a loop and another `QueryAdapterInfo(DRIVERCAPS)` while
    /// a HANG submitted on `node` (kernel-mode path) is detected and reset. Simulation only.
    fn collect_dbg_info_under_reset(&mut self, i: usize, node: u32)
        -> Result<DbgInfoRace, Failure>;
}
