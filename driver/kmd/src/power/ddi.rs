//! The runtime power DDIs and queries (UM-13): which components the adapter reports, and
//! the F-state and control-request DDIs. The components and the F-states set are in [`super`].

use core::sync::atomic::Ordering;

use rvgpu_ddi::power::{
    DXGK_POWER_COMPONENT_INDEX, GUID_DXGKDDI_POWER_MANAGEMENT_PREPARE_TO_START,
    GUID_DXGKDDI_POWER_MANAGEMENT_STARTED, GUID_DXGKDDI_POWER_MANAGEMENT_STOPPED,
};
use rvgpu_ddi::GUID;
use rvgpu_hw::engine::{ENGINE_POWER_F0, ENGINE_POWER_STATES};
use rvgpu_hw::regs::{self, Caps, ENGINE_MAX};

use super::component;
use crate::adapter::{Adapter, Live};
use crate::args::Request;
use crate::platform::Platform;
use crate::status::{self, Status};

/// Whether the adapter does runtime power management: the device can gate its engines. The
/// two DDIs Dxgkrnl then requires (BR-44) are always in the table.
pub fn supported<P: Platform>(live: &Live<P>) -> bool {
    live.identity.caps.contains(Caps::ENGINE_POWER)
}

/// Components: one per node when supported, none otherwise.
fn count<P: Platform>(live: &Live<P>) -> u32 {
    if supported(live) {
        live.identity.config.engines
    } else {
        0
    }
}

/// RestartFromTimeout: the adapter reset powered every engine up (hardware.md 10.3); the OS
/// still holds the F-states it set, so they are programmed again, before any runlist commit.
/// An engine whose component the driver holds stays powered whatever F-state was recorded.
pub fn restore<P: Platform>(live: &Live<P>) {
    if !supported(live) {
        return;
    }
    for e in 0..live.identity.config.engines.min(ENGINE_MAX) {
        let f = if live.power.held(e) > 0 {
            ENGINE_POWER_F0
        } else {
            live.power.fstate(e)
        };
        live.regs.write_at(e, regs::EnginePower::new(f));
    }
}

/// Takes an active reference on `engine`'s component (PASSIVE, no lock held): the engine is
/// powered when this returns (module documentation of [`super`], "Held components"). Returns
/// whether a reference was taken, to be given back with [`release`] exactly once.
///
/// Only while the OS runs runtime power management: 24H2's `DxgkCbSetPowerComponentActive` /
/// `Idle` bug-check 0x113 / 0x17 otherwise (`K:DXGADAPTER::SetPowerComponentActiveCB`
/// @0x1400258A4 tests the flag `K:DXGADAPTER::StartRuntimePowerManagement` @0x140195D1C sets
/// just before `PREPARE_TO_START` and `K:DXGADAPTER::Stop` @0x140195E9C clears after
/// `STOPPED`; it is never set when the driver reports no component or the OS does not take up
/// `SupportRuntimePowerManagement`). Without it no F-state other than F0 is ever asked for,
/// so the engine needs no reference.
pub fn hold<P: Platform>(live: &Live<P>, engine: u32) -> bool {
    if !supported(live) || engine >= count(live) || !live.power.runtime_started() {
        return false;
    }
    let Some(slot) = live.power.held_slot(engine) else {
        return false;
    };
    if !live.dxgk.set_power_component_active(engine) {
        return false;
    }
    slot.fetch_add(1, Ordering::AcqRel);
    true
}

/// Gives back a reference [`hold`] took (PASSIVE, no lock held).
pub fn release<P: Platform>(live: &Live<P>, engine: u32) {
    let Some(slot) = live.power.held_slot(engine) else {
        return;
    };
    let dropped = slot
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .is_ok();
    // After STOPPED the OS keeps no reference count to give back to ([`hold`]).
    if dropped && live.power.runtime_started() {
        live.dxgk.set_power_component_idle(engine);
    }
}

/// `DXGKQAITYPE_NUMPOWERCOMPONENTS`: the components of physical adapter 0 (the only one).
/// The input, a 4-byte physical-adapter index, is optional: absent means 0.
pub fn query_count<P: Platform>(live: &Live<P>, q: &mut Request<'_>) -> Result<(), Status> {
    if q.has_input() && q.input::<u32>()? != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    q.write(&count(live))
}

/// `DXGKQAITYPE_POWERCOMPONENTINFO`: component `i` is engine `i`'s power, mapped to node `i`.
pub fn query_info<P: Platform>(live: &Live<P>, q: &mut Request<'_>) -> Result<(), Status> {
    let index = DXGK_POWER_COMPONENT_INDEX { Value: q.input()? };
    let node = component_engine(live, index)?;
    q.write(&component(node))
}

/// The engine a component index names, or `STATUS_INVALID_PARAMETER`.
fn component_engine<P: Platform>(
    live: &Live<P>,
    index: DXGK_POWER_COMPONENT_INDEX,
) -> Result<u32, Status> {
    let physical = index.get(DXGK_POWER_COMPONENT_INDEX::PhysicalAdapterIndex);
    let component = index.get(DXGK_POWER_COMPONENT_INDEX::PhysicalAdapterComponentIndex);
    if physical != 0 || component >= count(live) {
        return Err(status::INVALID_PARAMETER);
    }
    Ok(component)
}

/// DxgkDdiSetPowerComponentFState: programs engine `component`'s `POWER` register.
pub fn set_fstate<P: Platform>(a: &Adapter<P>, component: u32, fstate: u32) -> Result<(), Status> {
    let live = a.started()?;
    let engine = component_engine(live, DXGK_POWER_COMPONENT_INDEX { Value: component })?;
    if fstate >= ENGINE_POWER_STATES {
        return Err(status::INVALID_PARAMETER);
    }
    let slot = usize::try_from(engine)
        .ok()
        .and_then(|e| live.power.fstate.get(e))
        .ok_or(status::INVALID_PARAMETER)?;
    // The OS's view first, then the register (see the module documentation).
    slot.store(fstate, Ordering::Release);
    crate::etw::events::emit::<P, 3>(&crate::etw::events::POWER_FSTATE, || {
        [a.table_slot().into(), component.into(), fstate.into()]
    });
    // An engine with a connected doorbell is never sent to F1: the driver holds its component
    // active ([`hold`]), and PoFx idles a component only at reference count zero.
    live.regs.write_at(engine, regs::EnginePower::new(fstate));
    Ok(())
}

/// DxgkDdiPowerRuntimeControlRequest: Dxgkrnl's three notifications succeed (nothing to do:
/// rvgpu sends no control request); anything else is not a control code of rvgpu's.
pub fn control_request<P: Platform>(a: &Adapter<P>, code: &GUID) -> Result<(), Status> {
    // Before the start (PREPARE_TO_START comes after StartDevice, [D]
    // DpiFdoStartAdapter → StartRuntimePowerManagement) there is no adapter to notify.
    let live = a.started()?;
    // The component callbacks are allowed from PREPARE_TO_START (24H2 sets its flag just
    // before sending it) until STOPPED (it clears the flag right after, [`hold`]).
    if *code == GUID_DXGKDDI_POWER_MANAGEMENT_PREPARE_TO_START {
        live.power.set_runtime_started(true);
        Ok(())
    } else if *code == GUID_DXGKDDI_POWER_MANAGEMENT_STOPPED {
        live.power.set_runtime_started(false);
        Ok(())
    } else if *code == GUID_DXGKDDI_POWER_MANAGEMENT_STARTED {
        Ok(())
    } else {
        Err(status::INVALID_PARAMETER)
    }
}
