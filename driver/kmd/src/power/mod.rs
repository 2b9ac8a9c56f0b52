//! Runtime power management (UM-13): one power component per node, each the F-state of one
//! engine's `POWER` register (docs/hardware.md 4.3).
//!
//! What Windows does with it (docs/windows-bringup.md §10, BR-100…BR-109):
//! - Only with `DXGK_DRIVERCAPS::SupportRuntimePowerManagement` set does Dxgkrnl ask for
//!   power components, once per physical adapter, after DRIVERCAPS and after the render core
//!   (VidSch) exists: `DXGKQAITYPE_NUMPOWERCOMPONENTS` (4-byte output; input: the 4-byte
//!   physical-adapter index), then `DXGKQAITYPE_POWERCOMPONENTINFO` per component (input: the
//!   `DXGK_POWER_COMPONENT_INDEX` value, output 336 bytes) (\[D\] 22631
//!   `DXGADAPTER::InitializePowerManagement`, which returns at once when the cap is clear).
//! - It checks each answer (1..=8 F-states, no reserved flag, ≤ 16 providers, F0 latency and
//!   residency 0, F0 power non-zero, latencies not decreasing and powers not increasing with
//!   the F-state) and that an engine component names an existing node (\[D\]
//!   `VidSchInitializeComponentPowerManagement`), failing the start with
//!   `STATUS_INVALID_PARAMETER`. It then asks each engine component for P-states
//!   (`DXGKQAITYPE_POWERCOMPONENTPSTATEINFO`) and tolerates a failure: rvgpu's engines have one
//!   fixed clock, so the type stays unanswered (`NOT_IMPLEMENTED`).
//! - `DxgkDdiSetPowerComponentFState(index, F)` runs from PoFx's idle-state callback at
//!   IRQL <= DISPATCH_LEVEL, zero-level synchronisation, one thread per component at a time
//!   (\[M\] nc-d3dkmddi-dxgkddisetpowercomponentfstate). Dxgkrnl's wrapper accepts
//!   `STATUS_SUCCESS` and `STATUS_GRAPHICS_ALLOCATION_CONTENT_LOST` and only logs anything
//!   else (\[D\] `DXGADAPTER::DdiSetPowerComponentFState`,
//!   `DXGADAPTER::PowerRuntimeComponentIdleStateCallback_Worker`); the page documents
//!   `STATUS_INVALID_PARAMETER` for a failure, which is what a bad index or F-state gets here.
//! - With `DXGK_POWER_COMPONENT_FLAGS::DriverCompletesFStateTransition` clear Dxgkrnl completes
//!   the PoFx transition itself when the DDI returns (`PoFxCompleteIdleState`, \[D\] the same
//!   worker); rvgpu leaves it clear, so it never calls `DxgkCbCompleteFStateTransition` (\[M\]
//!   nc-d3dkmddi-dxgkcb_completefstatetransition: "if this member is not set, the driver
//!   should not call this function"). The transition is complete when the register write
//!   returns.
//! - `DxgkDdiPowerRuntimeControlRequest` (IRQL <= DISPATCH_LEVEL) carries Dxgkrnl's
//!   `GUID_DXGKDDI_POWER_MANAGEMENT_PREPARE_TO_START` / `_STARTED` / `_STOPPED` notifications
//!   (\[D\] `DXGADAPTER::StartRuntimePowerManagement`, `Stop`, `PrepareToRemove`) and PEP
//!   requests. Its wrapper accepts `STATUS_SUCCESS` and `STATUS_INVALID_PARAMETER` only (\[D\]
//!   `DXGADAPTER::DdiPowerRuntimeControlRequest`): the notifications succeed, every other
//!   code (rvgpu defines none with a PEP) is `STATUS_INVALID_PARAMETER`.
//!
//! Held components: while a doorbell of a user-mode queue is connected, the driver holds its
//! engine's component active (`DxgkCbSetPowerComponentActive` at connect, `Idle` when the
//! doorbell loses its page: disconnect, victimisation, destroy). A ring can reach a connected
//! queue at any time and no OS path brings the engine to F0 for it (24H2 takes no power
//! reference in `K:DXGDOORBELL::Connect`@0x1401D7B90); PoFx moves a component to a lower
//! F-state only at reference count zero (\[M\] nc-d3dkmddi-dxgkcb_setpowercomponentactive), and
//! the device to D3 only once every component is idle (\[M\] nf-wdm-pofxsetdeviceidletimeout).
//!
//! State: the F-state the OS last set, per engine, in an atomic (written before the register,
//! so a concurrent adapter reset, which may run beside these DDIs, is followed by
//! [`ddi::restore`] in RestartFromTimeout with the latest value). D3 changes neither the register
//! nor the OS's view (the device has no D-state registers, hardware.md 13.3), so nothing is
//! done at SetPowerState. A new StartDevice powers every engine up (F0), the state Dxgkrnl
//! registers components in.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use rvgpu_ddi::power::{
    DXGK_FSTATE_UNKNOWN_POWER, DXGK_POWER_COMPONENT_ENGINE, DXGK_POWER_COMPONENT_ENGINE_DESC,
    DXGK_POWER_COMPONENT_FLAGS, DXGK_POWER_COMPONENT_MAPPING, DXGK_POWER_COMPONENT_MAPPING_0,
    DXGK_POWER_RUNTIME_COMPONENT, DXGK_POWER_RUNTIME_STATE,
};
use rvgpu_ddi::GUID;
use rvgpu_hw::engine::{ENGINE_POWER_F0, ENGINE_POWER_STATES};
use rvgpu_hw::regs::{self, ENGINE_MAX};

use crate::mmio::Regs;
use crate::platform::Platform;

pub mod ddi;

/// F1's `TransitionLatency` (100 ns units): back to F0 is one `POWER` register write, after
/// which the CMP resumes the engine at its next pass; the doorbell-to-pickup wake of the same
/// CMP thread measures 6 µs (README "Doorbell write → CMP pickup"), so 10 µs covers it.
pub const F1_TRANSITION_LATENCY: u64 = 100;
/// F1's `ResidencyRequirement` (100 ns units): gating is worth it only when the engine stays
/// gated longer than a round trip in and out (twice the latency); the emulated engine draws
/// no measurable power, so there is no better figure.
pub const F1_RESIDENCY: u64 = 200;

/// Node numbers as text for component names (`ENGINE_MAX` = 16 engines).
const NODE_NUMBERS: [&[u8]; ENGINE_MAX as usize] = [
    b"0", b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"8", b"9", b"10", b"11", b"12", b"13", b"14",
    b"15",
];

/// The F-state the OS last set for each engine (index = node = component), the active
/// references the driver holds on each engine's component ([`ddi::hold`]), and whether the OS
/// runs runtime power management on the adapter now.
#[derive(Debug)]
pub struct EnginePower {
    fstate: [AtomicU32; ENGINE_MAX as usize],
    held: [AtomicU32; ENGINE_MAX as usize],
    /// Between `PREPARE_TO_START` and `STOPPED` ([`ddi::control_request`]): the only time the
    /// component callbacks may be called.
    started: AtomicBool,
}

impl Default for EnginePower {
    fn default() -> Self {
        Self {
            fstate: core::array::from_fn(|_| AtomicU32::new(ENGINE_POWER_F0)),
            held: core::array::from_fn(|_| AtomicU32::new(0)),
            started: AtomicBool::new(false),
        }
    }
}

impl EnginePower {
    /// Whether the OS started runtime power management (and has not stopped it): 24H2
    /// bug-checks a component callback outside that time (`ddi::hold`).
    pub fn runtime_started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// Records `PREPARE_TO_START` (true) or `STOPPED` (false).
    pub fn set_runtime_started(&self, on: bool) {
        self.started.store(on, Ordering::Release);
    }

    /// The active references the driver holds on `engine`'s component.
    pub fn held(&self, engine: u32) -> u32 {
        self.held_slot(engine)
            .map_or(0, |h| h.load(Ordering::Acquire))
    }

    fn held_slot(&self, engine: u32) -> Option<&AtomicU32> {
        usize::try_from(engine).ok().and_then(|e| self.held.get(e))
    }

    /// The F-state the OS last set for `engine` (F0 for an engine it never named).
    pub fn fstate(&self, engine: u32) -> u32 {
        usize::try_from(engine)
            .ok()
            .and_then(|e| self.fstate.get(e))
            .map_or(ENGINE_POWER_F0, |f| f.load(Ordering::Acquire))
    }
}

/// StartDevice: every engine powered (F0), as Dxgkrnl registers the components.
pub fn power_up_all<P: Platform>(regs: &Regs<P>, engines: u32, power: &EnginePower) {
    for e in 0..engines.min(ENGINE_MAX) {
        if let Some(f) = usize::try_from(e).ok().and_then(|i| power.fstate.get(i)) {
            f.store(ENGINE_POWER_F0, Ordering::Release);
        }
        regs.write_at(e, regs::EnginePower::new(ENGINE_POWER_F0));
    }
}

/// The description of engine `node`'s power component.
pub fn component(node: u32) -> DXGK_POWER_RUNTIME_COMPONENT {
    let mut c = DXGK_POWER_RUNTIME_COMPONENT {
        StateCount: ENGINE_POWER_STATES,
        ComponentMapping: DXGK_POWER_COMPONENT_MAPPING {
            ComponentType: DXGK_POWER_COMPONENT_ENGINE,
            Anonymous: DXGK_POWER_COMPONENT_MAPPING_0 {
                EngineDesc: DXGK_POWER_COMPONENT_ENGINE_DESC { NodeIndex: node },
            },
        },
        // DriverCompletesFStateTransition clear: the transition is done when the DDI returns.
        Flags: DXGK_POWER_COMPONENT_FLAGS::default(),
        ComponentGuid: component_guid(node),
        ProviderCount: 0,
        ..Default::default()
    };
    // The emulated engine has no power figures: NominalPower is "unknown"
    // (DXGK_FSTATE_UNKNOWN_POWER, non-zero as F0 must be). F0's latency and residency are 0.
    c.States[0] = DXGK_POWER_RUNTIME_STATE {
        TransitionLatency: 0,
        ResidencyRequirement: 0,
        NominalPower: DXGK_FSTATE_UNKNOWN_POWER,
    };
    c.States[1] = DXGK_POWER_RUNTIME_STATE {
        TransitionLatency: F1_TRANSITION_LATENCY,
        ResidencyRequirement: F1_RESIDENCY,
        NominalPower: DXGK_FSTATE_UNKNOWN_POWER,
    };
    // "rvgpu engine <node>" (ASCII, NUL-terminated by the zeroed tail).
    let number = usize::try_from(node)
        .ok()
        .and_then(|n| NODE_NUMBERS.get(n))
        .copied()
        .unwrap_or(b"?");
    for (dst, src) in c
        .ComponentName
        .iter_mut()
        .zip(b"rvgpu engine ".iter().chain(number.iter()))
    {
        *dst = *src;
    }
    c
}

/// A stable GUID per engine component: {5256A0A0-0000-4000-8050-4F5745520000 + node}.
fn component_guid(node: u32) -> GUID {
    GUID {
        Data1: 0x5256_A0A0,
        Data2: 0,
        Data3: 0x4000,
        Data4: [0x80, 0x50, 0x4F, 0x57, 0x45, 0x52, 0, (node & 0xFF) as u8],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_answers_keep_windows_rules() {
        for node in [0u32, 1, 9, 10, 15] {
            let c = component(node);
            assert_eq!(c.StateCount, 2);
            assert_eq!(c.States[0].TransitionLatency, 0);
            assert_eq!(c.States[0].ResidencyRequirement, 0);
            assert_ne!(c.States[0].NominalPower, 0);
            assert!(c.States[1].TransitionLatency >= c.States[0].TransitionLatency);
            assert_eq!(
                c.ComponentMapping.ComponentType,
                DXGK_POWER_COMPONENT_ENGINE
            );
            let mapped = crate::args::engine_node_index(&c);
            assert_eq!(mapped, node);
            assert_eq!(c.Flags.Value, 0);
            assert_eq!(c.ProviderCount, 0);
        }
        let name = component(12).ComponentName;
        assert_eq!(&name[..16], b"rvgpu engine 12\0");
        let name = component(3).ComponentName;
        assert_eq!(&name[..15], b"rvgpu engine 3\0");
    }
}
