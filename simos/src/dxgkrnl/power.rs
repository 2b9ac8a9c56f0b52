//! Runtime power management at adapter start and stop: what Dxgkrnl's
//! `DXGADAPTER::InitializePowerManagement` asks and checks, `StartRuntimePowerManagement`'s and
//! `Stop`'s notifications (docs/windows-bringup.md §10, BR-100…BR-109). Every rule cites its
//! source: \[D\] = decompiled Windows 11 22631 `dxgkrnl.sys` / `dxgmms2.sys`
//! (`nohuto/decompiled-pseudocode` @ 43a01f5), \[M\] = Microsoft's reference pages.
//!
//! Order (as Windows): DRIVERCAPS and the render core first (InitializePowerManagement runs
//! late in `DXGADAPTER::Initialize`, after the render core is created, \[D\]
//! `DXGADAPTER::Initialize`); nothing is asked when `SupportRuntimePowerManagement` is clear
//! (\[D\] `InitializePowerManagement` returns at once); `NUMPOWERCOMPONENTS` per physical adapter,
//! then `POWERCOMPONENTINFO` per component with each answer checked as it arrives, then the
//! per-type initialisation (engine components map to scheduler nodes, \[D\]
//! `ADAPTER_RENDER::InitializePowerManagement` → `VidSchInitializeComponentPowerManagement`),
//! PoFx registration, and once the start has succeeded `PREPARE_TO_START` and `STARTED`
//! (\[D\] `DpiFdoStartAdapter` → `DXGADAPTER::StartRuntimePowerManagement`). PoFx starts every
//! component in F0 (the simulated OS's per-node F-state table starts at 0).
//!
//! The F-state model that follows (F0 before work, F1 only when idle) is `ums::power`.

use rvgpu_ddi::adapter::{
    DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_NUMPOWERCOMPONENTS, DXGKQAITYPE_POWERCOMPONENTINFO,
    DXGK_DRIVERCAPS, DXGK_QUERYADAPTERINFOFLAGS,
};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::power::*;
use rvgpu_ddi::{GUID, NTSTATUS};

use crate::adapter::bringup::power as rules;
use crate::adapter::bringup::Violation;
use crate::adapter::ddi::triage_status;
use crate::adapter::ddi::{self, At};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;

pub use crate::adapter::rules::STATUS_GRAPHICS_ALLOCATION_CONTENT_LOST;

pub use crate::adapter::bringup::power::MAX_COMPONENTS;

/// What the driver reported, as Dxgkrnl registered it.
#[derive(Clone, Debug, Default)]
pub struct PowerComponents {
    /// Every component, in index order (physical adapter 0).
    pub components: Vec<DXGK_POWER_RUNTIME_COMPONENT>,
    /// Node → the `DXGK_POWER_COMPONENT_INDEX` value of its engine component (VidSch keeps
    /// one per node; a later engine component for the same node replaces the earlier, \[D\]
    /// `VidSchInitializeComponentPowerManagement` stores the index per node).
    pub node_component: Vec<Option<u32>>,
}

/// BR-100: the component count of all physical adapters together.
pub fn check_count(total: u64) -> Option<Violation> {
    rules::check_count(Ok(total))
}

/// Per-adapter state the component checks carry from one component to the next.
#[derive(Debug, Default)]
pub struct Seen {
    memory_refresh: Option<u32>,
}

/// BR-101…BR-105 for component `index`'s answer (`Err`: the query's status), in the order
/// `InitializePowerManagement` checks them.
fn check_answer(
    index: u32,
    answer: Result<DXGK_POWER_RUNTIME_COMPONENT, NTSTATUS>,
    seen: &mut Seen,
) -> Option<Violation> {
    let v = rules::check_component(&rules::Component {
        index,
        answer,
        memory_refresh: seen.memory_refresh,
    });
    if let Ok(c) = answer {
        if v.is_none() && c.ComponentMapping.ComponentType == DXGK_POWER_COMPONENT_MEMORY_REFRESH {
            seen.memory_refresh = Some(index);
        }
    }
    v
}

/// BR-102…BR-105 for component `index`, in the order `InitializePowerManagement` checks them.
pub fn check_component(
    index: u32,
    c: &DXGK_POWER_RUNTIME_COMPONENT,
    seen: &mut Seen,
) -> Option<Violation> {
    check_answer(index, Ok(*c), seen)
}

/// BR-106: what a component powers must exist: an engine component's `NodeIndex` names a node,
/// a monitor-refresh component's `VidPnSourceID` a source.
pub fn check_mapping(
    index: u32,
    c: &DXGK_POWER_RUNTIME_COMPONENT,
    nodes: u32,
    sources: u32,
) -> Option<Violation> {
    rules::check_mapping(&rules::Mapping {
        index,
        ty: c.ComponentMapping.ComponentType,
        target: mapped_index(c),
        nodes,
        sources,
    })
}

/// The index the mapping's union holds (a node, a source, a target, a segment: every member
/// of the union is one UINT).
fn mapped_index(c: &DXGK_POWER_RUNTIME_COMPONENT) -> u32 {
    ddi::mapping_index(&c.ComponentMapping.Anonymous)
}

/// One `DxgkDdiQueryAdapterInfo` with a 4-byte input; the output is pre-filled with 0xCD (an
/// uninitialised pool buffer under Verifier) so a field the driver leaves unset is visible.
fn query<T: ddi::Plain>(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
    ty: i32,
    mut input: u32,
) -> Result<(NTSTATUS, T), SimError> {
    let q = ddi::in_table!(t, DxgkDdiQueryAdapterInfo)
        .ok_or_else(|| SimError::NoDdi("DxgkDdiQueryAdapterInfo"))?;
    let mut out = ddi::filled::<T>(0xCD);
    let args = DXGKARG_QUERYADAPTERINFO {
        Type: ty,
        pInputData: (&mut input as *mut u32).cast(),
        InputDataSize: 4,
        pOutputData: (&mut out as *mut T).cast(),
        OutputDataSize: std::mem::size_of::<T>() as u32,
        Flags: DXGK_QUERYADAPTERINFOFLAGS::default(),
        hKmdProcessHandle: std::ptr::null_mut(),
    };
    let status = ddi::query_adapter_info_args(a, q, At::Caller, &args)?;
    Ok((status, out))
}

/// `InitializePowerManagement`: `Ok(Ok(None))` when the driver does no runtime power
/// management (cap clear, or no component), the registered components, or the rule the
/// answers break.
pub(crate) fn initialize(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
    caps: &DXGK_DRIVERCAPS,
) -> Result<Result<Option<PowerComponents>, Violation>, SimError> {
    // [D] InitializePowerManagement: nothing without the cap.
    if caps.SupportRuntimePowerManagement == 0 {
        return Ok(Ok(None));
    }
    // BR-100: NUMPOWERCOMPONENTS for each physical adapter (rvgpu's adapters are one physical
    // adapter each): input the 4-byte physical-adapter index (dxgmms2, interface ≥ 0x5019),
    // output 4 bytes; a failure fails the start with the driver's status.
    let physical = 0u32;
    let (status, count) = query::<u32>(a, t, DXGKQAITYPE_NUMPOWERCOMPONENTS, physical)?;
    let answer = if status < 0 {
        Err(status)
    } else {
        Ok(u64::from(count))
    };
    if let Some(v) = rules::check_count(answer) {
        return Ok(Err(v));
    }
    if count == 0 {
        // [D]: zero components: runtime power management is simply off.
        return Ok(Ok(None));
    }
    let mut seen = Seen::default();
    let mut components = Vec::new();
    for k in 0..count {
        // BR-101: POWERCOMPONENTINFO, input DXGK_POWER_COMPONENT_INDEX (component | physical
        // adapter << 16), 336-byte output; a failure fails the start with its status.
        let index = DXGK_POWER_COMPONENT_INDEX::default()
            .with(DXGK_POWER_COMPONENT_INDEX::PhysicalAdapterComponentIndex, k)
            .with(DXGK_POWER_COMPONENT_INDEX::PhysicalAdapterIndex, physical);
        let (status, c) = query::<DXGK_POWER_RUNTIME_COMPONENT>(
            a,
            t,
            DXGKQAITYPE_POWERCOMPONENTINFO,
            index.Value,
        )?;
        let answer = if status < 0 { Err(status) } else { Ok(c) };
        if let Some(v) = check_answer(k, answer, &mut seen) {
            return Ok(Err(v));
        }
        components.push(c);
    }
    let nodes = caps.GpuEngineTopology.NbAsymetricProcessingNodes;
    let mut node_component = vec![None; nodes as usize];
    for (k, c) in (0u32..).zip(&components) {
        // A render-only adapter has no VidPN source.
        if let Some(v) = check_mapping(k, c, nodes, 0) {
            return Ok(Err(v));
        }
        if c.ComponentMapping.ComponentType == DXGK_POWER_COMPONENT_ENGINE {
            let node = mapped_index(c);
            if let Some(slot) = node_component.get_mut(node as usize) {
                *slot = Some(k);
            }
        }
    }
    // BR-109: POWERCOMPONENTPSTATEINFO for every engine component (WDDM ≥ 1.3, P-state
    // management not disabled in the registry, Windows' default thresholds): a failure is
    // tolerated (no P-state management); an answer must keep the P-state rules.
    for (k, c) in (0u32..).zip(&components) {
        if c.ComponentMapping.ComponentType != DXGK_POWER_COMPONENT_ENGINE {
            continue;
        }
        let (status, p) = query::<DXGK_POWER_P_COMPONENT>(
            a,
            t,
            rvgpu_ddi::adapter::DXGKQAITYPE_POWERCOMPONENTPSTATEINFO,
            k,
        )?;
        if status < 0 {
            continue;
        }
        if let Some(v) = check_p_states(k, &p) {
            return Ok(Err(v));
        }
    }
    Ok(Ok(Some(PowerComponents {
        components,
        node_component,
    })))
}

pub use crate::adapter::bringup::power::check_p_states;

/// `DxgkDdiPowerRuntimeControlRequest` with one of Dxgkrnl's notification GUIDs (no buffers),
/// at PASSIVE_LEVEL from the PnP thread; a status outside the wrapper's allow-list goes to the
/// triage log (BR-107, \[D\] `DXGADAPTER::DdiPowerRuntimeControlRequest`), nothing else.
pub(crate) fn notify(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
    code: &GUID,
) -> Result<(), SimError> {
    let Some(f) = ddi::in_table!(t, DxgkDdiPowerRuntimeControlRequest) else {
        return Ok(());
    };
    let status = ddi::power_runtime_notify(a, f, code)?;
    triage_status(a, f.routine(), status);
    Ok(())
}

/// `StartRuntimePowerManagement` (after a successful start, \[D\]): `PREPARE_TO_START`, PoFx
/// starts the device's power management (every component F0), `STARTED`.
pub(crate) fn start(a: &AdapterShared, t: &DRIVER_INITIALIZATION_DATA) -> Result<(), SimError> {
    notify(a, t, &GUID_DXGKDDI_POWER_MANAGEMENT_PREPARE_TO_START)?;
    notify(a, t, &GUID_DXGKDDI_POWER_MANAGEMENT_STARTED)
}

/// `DXGADAPTER::Stop`: `STOPPED` before the adapter is destroyed, if runtime power management
/// was started; the flag the component callbacks test is cleared once it returns (24H2
/// `K:DXGADAPTER::Stop` @0x140195E9C), so a callback made during `STOPPED` is still allowed.
pub(crate) fn stop(a: &AdapterShared, t: &DRIVER_INITIALIZATION_DATA) -> Result<(), SimError> {
    if !crate::ums::runtime_pm_started(a) {
        return Ok(());
    }
    let r = notify(a, t, &GUID_DXGKDDI_POWER_MANAGEMENT_STOPPED);
    crate::ums::runtime_pm_stopped(a);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
    use rvgpu_ddi::power::DXGK_POWER_RUNTIME_STATE;

    fn engine(node: u32) -> DXGK_POWER_RUNTIME_COMPONENT {
        let mut c = DXGK_POWER_RUNTIME_COMPONENT {
            StateCount: 2,
            ..Default::default()
        };
        c.ComponentMapping.ComponentType = DXGK_POWER_COMPONENT_ENGINE;
        c.ComponentMapping.Anonymous.EngineDesc.NodeIndex = node;
        c.States[0] = DXGK_POWER_RUNTIME_STATE {
            NominalPower: 10,
            ..Default::default()
        };
        c.States[1] = DXGK_POWER_RUNTIME_STATE {
            TransitionLatency: 5,
            ResidencyRequirement: 5,
            NominalPower: 1,
        };
        c
    }

    #[test]
    fn br_102_to_105_each_rule_refuses_its_answer() {
        let ok = engine(0);
        assert_eq!(check_component(0, &ok, &mut Seen::default()), None);
        let rule = |c: DXGK_POWER_RUNTIME_COMPONENT| {
            check_component(0, &c, &mut Seen::default()).map(|v| (v.rule, v.status))
        };
        let inv = STATUS_INVALID_PARAMETER;
        assert_eq!(
            rule(DXGK_POWER_RUNTIME_COMPONENT {
                StateCount: 0,
                ..ok
            }),
            Some(("BR-102", inv))
        );
        assert_eq!(
            rule(DXGK_POWER_RUNTIME_COMPONENT {
                StateCount: 9,
                ..ok
            }),
            Some(("BR-102", inv))
        );
        let mut c = ok;
        c.Flags.Value = 0x20;
        assert_eq!(rule(c), Some(("BR-103", inv)));
        let mut c = ok;
        c.Flags.set(DXGK_POWER_COMPONENT_FLAGS::ActiveInD3, 1);
        assert_eq!(rule(c), Some(("BR-103", inv)), "ActiveInD3 on an engine");
        let mut c = ok;
        c.ProviderCount = 17;
        assert_eq!(rule(c), Some(("BR-103", inv)));
        let mut c = ok;
        c.ComponentMapping.ComponentType = DXGK_POWER_COMPONENT_D3_TRANSITION;
        c.StateCount = 3;
        c.States[2] = c.States[1];
        assert_eq!(rule(c), Some(("BR-104", inv)));
        let mut seen = Seen::default();
        let mut c = ok;
        c.ComponentMapping.ComponentType = DXGK_POWER_COMPONENT_MEMORY_REFRESH;
        assert_eq!(check_component(0, &c, &mut seen), None);
        assert_eq!(
            check_component(1, &c, &mut seen).map(|v| v.rule),
            Some("BR-104")
        );
        let mut c = ok;
        c.States[0].TransitionLatency = 1;
        assert_eq!(rule(c), Some(("BR-105", inv)));
        let mut c = ok;
        c.States[0].TransitionLatency = DXGK_FSTATE_UNKNOWN_TIME;
        assert_eq!(rule(c), None, "unknown is allowed for F0");
        let mut c = ok;
        c.States[0].NominalPower = 0;
        assert_eq!(rule(c), Some(("BR-105", inv)));
        let mut c = ok;
        c.States[1].NominalPower = 11;
        assert_eq!(rule(c), Some(("BR-105", inv)));
        let mut c = ok;
        c.States[1].NominalPower = DXGK_FSTATE_UNKNOWN_POWER;
        assert_eq!(rule(c), None, "unknown power is not compared");
        let mut c = ok;
        c.States[0].TransitionLatency = 0;
        c.States[1].TransitionLatency = 0;
        assert_eq!(rule(c), None, "equal latency is not decreasing");
        assert_eq!(check_count(0x1_0000).map(|v| v.rule), Some("BR-100"));
        assert_eq!(
            check_mapping(0, &engine(2), 2, 0).map(|v| v.rule),
            Some("BR-106")
        );
        assert_eq!(check_mapping(0, &engine(1), 2, 0), None);
    }
}
