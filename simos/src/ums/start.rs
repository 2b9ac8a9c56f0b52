//! Adapter start for user-mode submission: node metadata and the submission caps (UM-03, UM-04).

use rvgpu_ddi::adapter::DXGKQAITYPE_USERMODESUBMISSION_CAPS;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::{NT_SUCCESS, STATUS_NOT_IMPLEMENTED};
use rvgpu_ddi::submission::{
    DXGK_USERMODESUBMISSION_CAPS_Flags, DXGK_NODEMETADATA, DXGK_NODEMETADATA_FLAGS,
    DXGK_USERMODESUBMISSION_CAPS,
};
use rvgpu_kmd::platform::Irql;

use crate::adapter::bringup;
use crate::adapter::ddi::{self, At};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::state::ums::mapping::PAGE;

use crate::state::ums::{NodeFState, Power};

/// Queries `DxgkDdiGetNodeMetadata` for every node (UM-03); `Ok(Err(v))`: the start fails with
/// BR-70's row `v` (`bringup::nodes`).
pub(crate) fn query_node_metadata(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
    caps: &rvgpu_ddi::adapter::DXGK_DRIVERCAPS,
) -> Result<Result<Vec<DXGK_NODEMETADATA>, bringup::Violation>, SimError> {
    let nodes = caps.GpuEngineTopology.NbAsymetricProcessingNodes;
    let mut metadata = Vec::new();
    if let Some(get) = ddi::in_table!(t, DxgkDdiGetNodeMetadata) {
        // Dxgkrnl passes an entry of its node array, which has the header's stride (74 bytes,
        // packed): the array is filled with 0xCD and followed by guard bytes, so a write past
        // the entry (into the next node, or past the array) is seen.
        const GUARD: usize = 16;
        let stride = std::mem::size_of::<DXGK_NODEMETADATA>();
        // The node count is the driver's caps: sized and indexed with checks, so a count the
        // start rules have not yet refused is an error, not an overflow.
        let len = stride
            .checked_mul(nodes as usize)
            .and_then(|n| n.checked_add(GUARD))
            .ok_or(SimError::Internal("node array size overflows"))?;
        let mut array = Vec::new();
        array
            .try_reserve_exact(len)
            .map_err(|_| SimError::OutOfMemory("the OS's node-metadata array"))?;
        array.resize(len, 0xCDu8);
        for node in 0..nodes {
            let at = stride * node as usize;
            let entries = array
                .get_mut(at..)
                .ok_or(SimError::Internal("node array shorter than the nodes"))?;
            let status = ddi::get_node_metadata(a, get, node, entries)?;
            crate::adapter::ddi::triage_status(a, get.routine(), status);
            let after = array
                .get(at + stride..)
                .ok_or(SimError::Internal("node array shorter than the nodes"))?;
            if after.iter().any(|b| *b != 0xCD) {
                return Err(ddi::sim_err(
                    a,
                    format!(
                        "DxgkDdiGetNodeMetadata(node {node}) wrote past its {stride}-byte entry \
                         of the OS's node array (memory corruption on Windows)"
                    ),
                ));
            }
            if let Some(v) = bringup::nodes::check_metadata(get.routine(), node, status) {
                return Ok(Err(v));
            }
            let entry = array
                .get(at..)
                .and_then(ddi::read_plain::<DXGK_NODEMETADATA>)
                .ok_or(SimError::Internal("node array shorter than the nodes"))?;
            metadata.push(entry);
        }
    }
    Ok(Ok(metadata))
}

/// After the node rules (BR-71..73): `DXGKQAITYPE_USERMODESUBMISSION_CAPS`, asked only if some
/// node claims user-mode submission (BR-76, \[D\] `ADAPTER_RENDER::Initialize`), and the
/// adapter's user-mode submission state. `Err(SimError::Rejected)` when a node claims user-mode
/// submission without usable caps (UM-04).
pub(crate) fn query_at_start(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
    caps: &rvgpu_ddi::adapter::DXGK_DRIVERCAPS,
    metadata: Vec<DXGK_NODEMETADATA>,
) -> Result<(), SimError> {
    let nodes = caps.GpuEngineTopology.NbAsymetricProcessingNodes;
    let claims = metadata
        .iter()
        .any(|m| m.Flags.is_set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission));
    // Not asked: treated as a failed query (a node claiming UMS then fails BR-76).
    let mut ums_caps = Err(STATUS_NOT_IMPLEMENTED);
    if let (true, Some(q)) = (claims, ddi::in_table!(t, DxgkDdiQueryAdapterInfo)) {
        let mut c = DXGK_USERMODESUBMISSION_CAPS {
            Flags: DXGK_USERMODESUBMISSION_CAPS_Flags::from_value(0xCDCD_CDCD),
            DoorbellSizeInBytes: 0xCDCD_CDCD,
            SecondaryDoorbellSizeInBytes: 0xCDCD_CDCD,
            Reserved: [0xCD; 16],
        };
        let status = ddi::query_adapter_info(
            a,
            q,
            DXGKQAITYPE_USERMODESUBMISSION_CAPS,
            At::Level(Irql::Passive),
            &mut c,
        )?;
        ums_caps = if NT_SUCCESS(status) {
            Ok(c)
        } else {
            Err(status)
        };
    }
    if claims {
        // BR-76: the answer's rows (`adapter::bringup::ums`).
        if let Some(v) = bringup::ums::check_ums_caps(ums_caps) {
            return Err(SimError::StartRefused {
                rule: v.rule,
                status: v.status,
                why: v.why,
            });
        }
    }
    if let (true, Ok(c)) = (claims, ums_caps) {
        // UM-04 (project rule, stricter than Windows' 0x4000): one BAR2 page per doorbell.
        if u64::from(c.DoorbellSizeInBytes) > PAGE {
            return Err(SimError::Rejected(format!(
                "USERMODESUBMISSION_CAPS.DoorbellSizeInBytes = {:#x}: must be 1..=4096 (one \
                 BAR2 page per doorbell, UM-04)",
                c.DoorbellSizeInBytes
            )));
        }
    }
    let ums_caps = ums_caps.ok();
    let mut os = lock(&a.ums);
    os.node_metadata = metadata;
    os.caps = ums_caps;
    // Set by `dxgkrnl::power` once the components are registered (later in the start).
    os.runtime_pm = false;
    os.node_component = vec![None; nodes as usize];
    os.node_active = vec![0; nodes as usize];
    os.driver_active = vec![0; nodes as usize];
    os.power_components = Vec::new();
    os.power = Power::D0;
    os.fstate = vec![NodeFState::F0; nodes as usize];
    Ok(())
}

/// The node metadata the adapter reported at start (UM-03).
pub(crate) fn node_metadata(a: &AdapterShared) -> Vec<DXGK_NODEMETADATA> {
    lock(&a.ums).node_metadata.clone()
}

/// `DXGK_USERMODESUBMISSION_CAPS` the adapter reported at start (UM-04).
pub(crate) fn usermode_submission_caps(a: &AdapterShared) -> Option<DXGK_USERMODESUBMISSION_CAPS> {
    lock(&a.ums).caps
}
