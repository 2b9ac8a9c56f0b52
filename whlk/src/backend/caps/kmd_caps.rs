//! The [`KmdCaps`] capability: what the driver reports of itself.

use crate::backend::common::Failure;

/// The parts of `DXGK_DRIVERCAPS` cases check, backend-neutral.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverCaps {
    /// `SchedulingCaps.MultiEngineAware`.
    pub multi_engine_aware: bool,
    /// `SchedulingCaps.NativeGpuFence`.
    pub native_gpu_fence: bool,
    /// `SchedulingCaps.No64BitAtomics`.
    pub no_64bit_atomics: bool,
    /// `GpuEngineTopology.NbAsymetricProcessingNodes`.
    pub nodes: u32,
    /// `SupportPerEngineTDR`.
    pub per_engine_tdr: bool,
    /// `InterruptMessageNumber`.
    pub interrupt_message_number: u32,
    /// `MemoryManagementCaps.PagingNode`.
    pub paging_node: u32,
}

/// What the adapter reported for user-mode submission at start (UM-03, UM-04).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubmissionCaps {
    /// Per node: `DXGK_NODEMETADATA::Flags.UserModeSubmission`.
    pub user_mode_nodes: Vec<bool>,
    /// `DXGK_USERMODESUBMISSION_CAPS::DoorbellSizeInBytes`, if answered.
    pub doorbell_size: Option<u32>,
}

/// What the KMD reported to the OS at start: `DXGK_DRIVERCAPS`, node metadata and
/// `DXGK_USERMODESUBMISSION_CAPS`. No thunk passes DRIVERCAPS on to user mode: a Windows
/// backend asks the KMD through its test hooks (`TestHookOp::DriverCaps`).
pub trait KmdCaps {
    /// Queries `DXGKQAITYPE_DRIVERCAPS` on a started adapter.
    fn driver_caps(&mut self, i: usize) -> Result<DriverCaps, Failure>;

    /// What adapter `i` reported at start: node metadata and `USERMODESUBMISSION_CAPS`.
    fn submission_caps(&mut self, i: usize) -> Result<SubmissionCaps, Failure>;
}
