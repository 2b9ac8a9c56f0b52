//! The runtime power DDIs and queries (UM-13): which components the adapter reports, and
//! the F-state and control-request DDIs. The components and the F-states set are in [`super`].

use core::sync::atomic::Ordering;

use rvgpu_ddi::power::{
    DXGK_POWER_COMPONENT_INDEX, GUID_DXGKDDI_POWER_MANAGEMENT_PREPARE_TO_START,
    GUID_DXGKDDI_POWER_MANAGEMENT_STARTED, GUID_DXGKDDI_POWER_MANAGEMENT_STOPPED,
};
use rvgpu_ddi::GUID;
use rvgpu_hw::engine::ENGINE_POWER_STATES;
use rvgpu_hw::regs::{self, Caps, ENGINE_MAX};

use super::component;
use crate::adapter::{Adapter, Live};
use crate::platform::Platform;
use crate::qai::Request;
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
pub fn restore<P: Platform>(live: &Live<P>) {
    if !supported(live) {
        return;
    }
    for e in 0..live.identity.config.engines.min(ENGINE_MAX) {
        live.regs
            .write_at(e, regs::EnginePower::new(live.power.fstate(e)));
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
    // Windows 24H2 disconnects no doorbell before F1 (the pages say it does, UM-14;
    // docs/windows-bringup.md, "Where the code and the pages disagree"): a ring on a
    // connected doorbell of a gated engine would wait for an F0 nobody asks for. So an engine
    // with a connected doorbell is not gated; the OS's F1 stands, at F0's power.
    if fstate != 0 && crate::doorbell::ddi::connected_on_engine(live, engine) {
        return Ok(());
    }
    live.regs.write_at(engine, regs::EnginePower::new(fstate));
    Ok(())
}

/// DxgkDdiPowerRuntimeControlRequest: Dxgkrnl's three notifications succeed (nothing to do:
/// rvgpu calls no power-runtime callback); anything else is not a control code of rvgpu's.
pub fn control_request<P: Platform>(a: &Adapter<P>, code: &GUID) -> Result<(), Status> {
    // Before the start (PREPARE_TO_START comes after StartDevice, [D]
    // DpiFdoStartAdapter → StartRuntimePowerManagement) there is no adapter to notify.
    a.started()?;
    let known = [
        GUID_DXGKDDI_POWER_MANAGEMENT_PREPARE_TO_START,
        GUID_DXGKDDI_POWER_MANAGEMENT_STARTED,
        GUID_DXGKDDI_POWER_MANAGEMENT_STOPPED,
    ];
    if known.contains(code) {
        Ok(())
    } else {
        Err(status::INVALID_PARAMETER)
    }
}
