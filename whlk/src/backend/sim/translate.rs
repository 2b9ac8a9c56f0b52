//! The simulated OS's answers in the harness's vocabulary: its errors as [`Failure`], its wait
//! outcomes as [`WaitResult`], and its record of the driver's caps as [`DriverCaps`] and
//! [`SubmissionCaps`] (which the DLL backend reads too).

use rvgpu_ddi::adapter::{DXGK_DRIVERCAPS, DXGK_VIDSCHCAPS};
use rvgpu_ddi::submission::DXGK_NODEMETADATA_FLAGS;
use rvgpu_simos::{Machine, SimError, WaitOutcome};

use crate::backend::caps::fences::WaitResult;
use crate::backend::caps::kmd_caps::{DriverCaps, SubmissionCaps};
use crate::backend::common::{BugCheckInfo, Failure};

pub(super) fn wait_result(o: WaitOutcome) -> WaitResult {
    match o {
        WaitOutcome::Satisfied => WaitResult::Satisfied,
        WaitOutcome::TimedOut => WaitResult::TimedOut,
        WaitOutcome::Abandoned => WaitResult::Abandoned,
    }
}

pub(crate) fn failure(e: SimError) -> Failure {
    match e {
        SimError::Bugcheck(b) => Failure::BugCheck(BugCheckInfo {
            code: b.code,
            params: b.params,
        }),
        SimError::DdiFailed(s) | SimError::Ddi { status: s, .. } => Failure::DdiFailed(s),
        SimError::Rejected(m) => Failure::Backend(format!("start refused by the OS: {m}")),
        e @ SimError::StartRefused { .. } => Failure::Backend(e.to_string()),
        SimError::Simulation(m) | SimError::Violation(m) => Failure::Backend(m),
        e => Failure::Backend(e.to_string()),
    }
}

pub(crate) fn caps(c: &DXGK_DRIVERCAPS) -> DriverCaps {
    let s = c.SchedulingCaps;
    DriverCaps {
        multi_engine_aware: s.is_set(DXGK_VIDSCHCAPS::MultiEngineAware),
        native_gpu_fence: s.is_set(DXGK_VIDSCHCAPS::NativeGpuFence),
        no_64bit_atomics: s.is_set(DXGK_VIDSCHCAPS::No64BitAtomics),
        nodes: c.GpuEngineTopology.NbAsymetricProcessingNodes,
        per_engine_tdr: c.SupportPerEngineTDR != 0,
        interrupt_message_number: c.InterruptMessageNumber,
        paging_node: c.MemoryManagementCaps.PagingNode,
    }
}

/// `DXGKQAITYPE_DRIVERCAPS` of adapter `i` as the OS recorded it (read by the harness: an
/// application sees only what `D3DKMTQueryAdapterInfo` passes on).
pub(crate) fn driver_caps_of(m: &Machine, i: usize) -> Result<DriverCaps, Failure> {
    m.query_driver_caps(i).map(|c| caps(&c)).map_err(failure)
}

/// Adapter `i`'s node metadata and `USERMODESUBMISSION_CAPS` as the OS recorded them.
pub(crate) fn submission_caps_of(m: &Machine, i: usize) -> SubmissionCaps {
    SubmissionCaps {
        user_mode_nodes: m
            .node_metadata(i)
            .iter()
            .map(|m| m.Flags.is_set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission))
            .collect(),
        doorbell_size: m.usermode_submission_caps(i).map(|c| c.DoorbellSizeInBytes),
    }
}
