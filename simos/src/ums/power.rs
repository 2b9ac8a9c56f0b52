//! Power for user-mode submission: the engines' power components and their active references
//! (UM-13) and the adapter's D3 power-down and power-up with context suspend and resume
//! (UM-14, UM-16). The PASSIVE worker that takes an idle engine to F1 is [`super::worker`].

use rvgpu_ddi::basic::{PowerDeviceD0, PowerDeviceD3, DEVICE_POWER_STATE, HANDLE};
use rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY;
use rvgpu_ddi::ntstatus::STATUS_PENDING;
use rvgpu_ddi::power::DXGK_POWER_RUNTIME_COMPONENT;
use rvgpu_ddi::submission::{DXGKARG_RESUMECONTEXT, DXGKARG_SUSPENDCONTEXT};

use crate::adapter::ddi::{self, check_status, sim_err};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;

use super::disconnect::os_disconnect;
use super::host::UmsHost;
use super::kmd::needed_ddi;
use super::locks::{dev_guard, device_lock, exclusive, shared};
use crate::state::ums::events::UmsEvent;
use crate::state::ums::{NodeFState, Power, Suspended, DISPLAY_ADAPTER_HW_ID, POWER_ACTION_NONE};

/// An active reference on a node's power component (PoFx `SetPowerComponentActive` /
/// `Idle`, which VidSch takes before it submits to a node and Dxgkrnl before it connects a
/// doorbell): the node is in F0 while one is held, and F1 waits until none is.
pub(crate) struct NodeActive<'a> {
    a: &'a AdapterShared,
    node: u32,
}

impl NodeActive<'_> {
    /// Drops the reference in `os`, the adapter's UMS state its caller holds locked: one lock
    /// for the caller's own record and the release.
    pub(crate) fn release_in(self, os: &mut crate::state::ums::UmsOs) {
        release(os, self.node);
        std::mem::forget(self);
    }
}

impl Drop for NodeActive<'_> {
    fn drop(&mut self) {
        release(&mut lock(&self.a.ums), self.node);
    }
}

impl<'a> NodeActive<'a> {
    /// The reference [`take_if_f0`] counted in its caller's look (dropping it gives the count
    /// back).
    pub(crate) fn counted(a: &'a AdapterShared, node: u32) -> Self {
        NodeActive { a, node }
    }

    /// The check [`node_active_in_d0`] makes of a node found in F0: the driver did not leave
    /// its engine power-gated.
    pub(crate) fn engine_running(&self) -> Result<(), SimError> {
        gated_in_f0(self.a, self.node)
    }
}

/// The fast path of [`node_active_in_d0`], in a look its caller makes of `os` anyway: counts
/// an active reference on `node` only when the adapter is in D0 and the node in F0 with no
/// F-state change under way and no F1 request deferred (which [`count_active`] would drop);
/// else `false`, nothing counted: the caller takes the slow path.
/// No F-state lock is needed then: an F1 is decided only with no reference counted, and its
/// decision marks the change ([`set_fstate_locked`]) in the same look as it re-reads the
/// count, so either the F1 sees this reference and declines, or this look sees the change.
/// The caller holds the count as a [`NodeActive::counted`].
pub(crate) fn take_if_f0(os: &mut crate::state::ums::UmsOs, node: u32) -> bool {
    let i = node as usize;
    let f0 = os.power != Power::D3
        && os.fstate.get(i) == Some(&NodeFState::F0)
        && os.f1_deferred.is_empty();
    if f0 {
        if let Some(n) = os.node_active.get_mut(i) {
            *n = n.saturating_add(1);
        }
    }
    f0
}

fn release(os: &mut crate::state::ums::UmsOs, node: u32) {
    if let Some(n) = os.node_active.get_mut(node as usize) {
        *n = n.saturating_sub(1);
    }
}

/// Takes an active reference on `node`, bringing its component to F0 first; then checks that
/// the driver did power the engine up: a gated engine while the OS holds the node in F0 is a
/// driver bug (its work would never run).
pub(crate) fn node_active(a: &AdapterShared, node: u32) -> Result<NodeActive<'_>, SimError> {
    let _f = lock(&a.ums_fstate);
    let f0 = count_active(&mut lock(&a.ums), node);
    to_f0(a, node, f0)
}

/// [`node_active`] for work VidSch hands the node: the adapter in D0 first (UM-14: from D3 it
/// is powered up and the contexts the power-down suspended resumed). The power state is read
/// in the look that takes the reference, so no power-down comes between the two.
pub(crate) fn node_active_in_d0(a: &AdapterShared, node: u32) -> Result<NodeActive<'_>, SimError> {
    loop {
        {
            let _f = lock(&a.ums_fstate);
            let f0 = {
                let mut os = lock(&a.ums);
                (os.power != Power::D3).then(|| count_active(&mut os, node))
            };
            if let Some(f0) = f0 {
                return to_f0(a, node, f0);
            }
        }
        let _x = exclusive(a);
        power_up_if_needed(a)?;
        resume_power_suspended(a)?;
    }
}

/// Counts one more active reference on `node` in `os`; whether its component is in F0.
fn count_active(os: &mut crate::state::ums::UmsOs, node: u32) -> bool {
    if let Some(n) = os.node_active.get_mut(node as usize) {
        *n = n.saturating_add(1);
    }
    // New work: an F1 request still waiting for idleness is stale (the engine asks again
    // when it next idles).
    if !os.f1_deferred.is_empty() {
        os.f1_deferred.retain(|&n| n != node);
    }
    os.fstate.get(node as usize).is_some_and(|f| f.now == 0)
}

/// The reference [`count_active`] took, its node brought to F0 unless it was (`f0`); with the
/// F-state lock held.
fn to_f0(a: &AdapterShared, node: u32, f0: bool) -> Result<NodeActive<'_>, SimError> {
    let active = NodeActive { a, node };
    if f0 {
        // Already F0, read in the same look: the F-state changes only under the F-state lock
        // held here, so there is nothing to set and the engine must be running.
        gated_in_f0(a, node)?;
    } else {
        set_fstate_locked(a, node, 0)?;
        check_not_gated(a, node)?;
    }
    Ok(active)
}

/// Parameter 1 of the 0x113 bug check [`component_node`] raises (Dxgkrnl's own sub-code).
const POWER_COMPONENT_FATAL: u64 = 0x17;

/// The node whose engine component is `component` (a `DXGK_POWER_COMPONENT_INDEX` the driver
/// reported), if runtime power management is started. 24H2 `K:DXGADAPTER::SetPowerComponentActiveCB`
/// @0x1400258A4 and `K:DXGADAPTER::SetPowerComponentIdleCB` @0x140010918 bug-check 0x113
/// `VIDEO_DXGKRNL_FATAL_ERROR` / 0x17 (the adapter, 0, 0) for an index past the components
/// Dxgkrnl registered, and again when runtime power management is not started: the flag they
/// test is set only by `K:DXGADAPTER::StartRuntimePowerManagement` @0x140195D1C (after a
/// successful start, for an adapter with a PoFx handle, i.e. at least one component, just
/// before `PREPARE_TO_START`) and cleared by `K:DXGADAPTER::Stop` @0x140195E9C right after
/// `STOPPED`.
fn component_node(a: &AdapterShared, component: u32) -> Option<u32> {
    let (started, node, count) = {
        let os = lock(&a.ums);
        let node = os
            .node_component
            .iter()
            .position(|c| *c == Some(component))
            .and_then(|n| u32::try_from(n).ok());
        (os.runtime_pm, node, os.power_components.len())
    };
    // The callbacks index the adapter's component table by the DXGK_POWER_COMPONENT_INDEX's
    // component (low 16 bits) plus the first component of its physical adapter (high 16
    // bits; rvgpu's adapters have one physical adapter, the first).
    let index = (component & 0xFFFF) as usize + (component >> 16) as usize * count;
    if index >= count || !started {
        let b = crate::BugCheck::new(
            crate::base::bugcheck::VIDEO_DXGKRNL_FATAL_ERROR,
            [
                POWER_COMPONENT_FATAL,
                a as *const AdapterShared as u64,
                0,
                0,
            ],
        );
        a.state.raise_bugcheck(b);
        return None;
    }
    // A registered component that is not an engine's: rvgpu reports none, nothing to model.
    node
}

/// `DxgkCbSetPowerComponentActive`: one more active reference on the node's component, which
/// PoFx brings to F0 before the call returns (24H2
/// `K:DXGADAPTER::SetPowerComponentActiveCBWorker`@0x140025BF0 counts the reference and, on the
/// first, calls `PoFxActivateComponent` with the blocking flag that
/// `SetPowerComponentActiveCB`@0x1400258A4 passes; \[M\]
/// nc-d3dkmddi-dxgkcb_setpowercomponentactive: "after this function returns, the driver can
/// change the component's hardware settings").
pub(crate) fn cb_component_active(a: &AdapterShared, component: u32) {
    let Some(node) = component_node(a, component) else {
        return;
    };
    if lock(&a.ums).power == Power::D3 {
        // PoFx would ask for D0 first (a component is active only in D0); every path that
        // lets the driver call this (a doorbell connect) brings the adapter to D0 first.
        a.state.raise_sim_error(format!(
            "not simulated: DxgkCbSetPowerComponentActive (node {node}) with the adapter in D3"
        ));
        return;
    }
    let _f = lock(&a.ums_fstate);
    let count = {
        let mut os = lock(&a.ums);
        let Some(n) = os.driver_active.get_mut(node as usize) else {
            return;
        };
        *n = n.saturating_add(1);
        let count = *n;
        os.events.push(UmsEvent::DriverComponentRef {
            node,
            active: true,
            count,
        });
        count
    };
    if count == 1 {
        if let Err(e) = set_fstate_locked(a, node, 0).and_then(|_| check_not_gated(a, node)) {
            a.state.raise_sim_error(e.to_string());
        }
    }
}

/// `DxgkCbSetPowerComponentIdle`: drops one active reference; at zero PoFx may idle the
/// component (an F1 request the reference held back runs then). An Idle without an Active is a
/// driver bug (\[M\] nc-d3dkmddi-dxgkcb_setpowercomponentidle: "each call to this function must
/// be paired with a call to DXGKCB_SETPOWERCOMPONENTACTIVE"; 24H2
/// `K:DXGADAPTER::SetPowerComponentIdleCBWorker`@0x140011C70 decrements without a check).
pub(crate) fn cb_component_idle(a: &AdapterShared, component: u32) {
    let Some(node) = component_node(a, component) else {
        return;
    };
    let mut os = lock(&a.ums);
    let Some(n) = os.driver_active.get_mut(node as usize) else {
        return;
    };
    if *n == 0 {
        drop(os);
        a.state.raise_sim_error(format!(
            "driver bug: DxgkCbSetPowerComponentIdle on node {node}'s component, which the \
             driver holds no active reference on"
        ));
        return;
    }
    *n -= 1;
    let count = *n;
    os.events.push(UmsEvent::DriverComponentRef {
        node,
        active: false,
        count,
    });
    drop(os);
    if count == 0 {
        a.sch.wake.notify();
    }
}

/// Whether the driver holds any engine component active: PoFx powers the device down only
/// once every component is idle (\[M\] nf-wdm-pofxsetdeviceidletimeout: the device-idle timeout
/// runs "from when the last component of the device enters the idle condition").
fn driver_holds_a_component(a: &AdapterShared) -> bool {
    lock(&a.ums).driver_active.iter().any(|&n| n > 0)
}

/// The device's engine `node` must not be power-gated while the OS holds it in F0.
fn check_not_gated(a: &AdapterShared, node: u32) -> Result<(), SimError> {
    let f0 = lock(&a.ums)
        .fstate
        .get(node as usize)
        .is_some_and(|f| f.now == 0);
    if f0 {
        gated_in_f0(a, node)?;
    }
    Ok(())
}

/// [`check_not_gated`] for a node known to be in F0.
fn gated_in_f0(a: &AdapterShared, node: u32) -> Result<(), SimError> {
    if a.device.engine_gated(node) == Some(true) {
        return Err(sim_err(
            a,
            format!(
                "driver bug: node {node}'s power component is F0 but engine {node} is \
                 power-gated (POWER = F1): work the OS submits to it would never run"
            ),
        ));
    }
    Ok(())
}

/// Sets the node's power component F-state, with the F-state lock held (calls the DDI for
/// the node's engine component when runtime power management was started). Windows records the new state and only logs a
/// status outside the wrapper's allow-list (BR-108, \[D\]
/// `DXGADAPTER::PowerRuntimeComponentIdleStateCallback_Worker`); a failed F0 shows up as a gated
/// engine at the next active reference.
///
/// A change away from F0 is declined (`Ok(false)`, nothing changed) when an active reference
/// is counted in the look that decides it: [`take_if_f0`] counts one without the F-state lock.
/// The decision marks the change under way, so no reference is counted past it without the
/// F-state lock. Otherwise `Ok(true)`: the node is in `fstate`.
pub(super) fn set_fstate_locked(
    a: &AdapterShared,
    node: u32,
    fstate: u32,
) -> Result<bool, SimError> {
    let i = node as usize;
    let component = {
        let mut os = lock(&a.ums);
        let component = if os.runtime_pm {
            os.node_component.get(i).copied().flatten()
        } else {
            None
        };
        let current = os.fstate.get(i).map(|f| f.now);
        if current == Some(fstate) || current.is_none() {
            return Ok(true);
        }
        if fstate != 0 && os.node_active.get(i).is_some_and(|&n| n > 0) {
            return Ok(false);
        }
        if let Some(f) = os.fstate.get_mut(i) {
            f.changing = true;
        }
        component
    };
    let called = call_set_fstate(a, component, fstate);
    let mut os = lock(&a.ums);
    if let Some(f) = os.fstate.get_mut(i) {
        f.changing = false;
        if called.is_ok() {
            f.now = fstate;
        }
    }
    let called = called?;
    os.events.push(UmsEvent::SetFState {
        node,
        fstate,
        called,
    });
    Ok(true)
}

/// `DxgkDdiSetPowerComponentFState(component, fstate)` when the driver has the DDI and the
/// node a component; whether it was called.
fn call_set_fstate(
    a: &AdapterShared,
    component: Option<u32>,
    fstate: u32,
) -> Result<bool, SimError> {
    let f = ddi::table_slot!(a, DxgkDdiSetPowerComponentFState)?;
    Ok(match (f, component) {
        (Some(f), Some(component)) => {
            let ctx = a.context();
            let status = f.passive_unaudited(a, (ctx, component, fstate))?;
            crate::adapter::ddi::triage_status(a, f.routine(), status);
            true
        }
        _ => false,
    })
}

/// Start: the components `dxgkrnl::power` registered (every component in index order, and
/// each node's engine component); runtime power management is started.
pub(crate) fn runtime_pm_registered(
    a: &AdapterShared,
    components: Vec<DXGK_POWER_RUNTIME_COMPONENT>,
    node_component: Vec<Option<u32>>,
) {
    let mut os = lock(&a.ums);
    os.runtime_pm = true;
    let nodes = os.fstate.len();
    os.node_component = node_component;
    os.node_component.resize(nodes, None);
    os.power_components = components;
}

/// Whether runtime power management was started (and not stopped).
pub(crate) fn runtime_pm_started(a: &AdapterShared) -> bool {
    lock(&a.ums).runtime_pm
}

/// Stop: runtime power management ends.
pub(crate) fn runtime_pm_stopped(a: &AdapterShared) {
    lock(&a.ums).runtime_pm = false;
}

pub(super) fn set_power_state(
    a: &AdapterShared,
    state: DEVICE_POWER_STATE,
) -> Result<(), SimError> {
    let f = ddi::table_slot!(a, DxgkDdiSetPowerState)?
        .ok_or(SimError::NoDdi("DxgkDdiSetPowerState"))?;
    let ctx = a.context();
    if state == PowerDeviceD0 {
        // The bus driver powers the function up before the function driver hears of D0: a
        // power-up IRP is handled by the bus driver first, then by each driver going back up
        // the stack (learn.microsoft.com, "Handling Device Power-Up IRPs").
        a.d3hot.set(false);
    }
    let status = f.passive_unaudited(a, (ctx, DISPLAY_ADAPTER_HW_ID, state, POWER_ACTION_NONE))?;
    check_status(f, status)?;
    if state != PowerDeviceD0 {
        // ...and down to D3hot once the function driver has let go of it: a power-down IRP
        // is handled by higher drivers before lower ones and completed by the bus driver
        // ("Handling Device Power-Down IRPs"). Dxgkrnl is the FDO that calls the miniport.
        a.d3hot.set(true);
    }
    let mut os = lock(&a.ums);
    os.power = if state == PowerDeviceD0 {
        Power::D0
    } else {
        Power::D3
    };
    os.events.push(UmsEvent::SetPowerState { state });
    Ok(())
}

/// The OS suspends context `h` for `why` (`DxgkDdiSuspendContext`; none for a context the
/// KMD never heard of, [`suspendable`]).
pub(super) fn suspend_context(
    a: &AdapterShared,
    h: KmtHandle,
    why: Suspended,
) -> Result<(), SimError> {
    let Some(node) = lock(&a.ums).contexts.get(&h).map(|c| c.node) else {
        return Ok(());
    };
    // The whole exchange holds the node's resource shared (`NodeResources`).
    let _node = a.sch.node_resources.shared(node);
    let (kmd, fence) = {
        let mut os = lock(&a.ums);
        let Some(c) = os.contexts.get_mut(&h) else {
            return Ok(());
        };
        if c.suspended != Suspended::No || !suspendable(c) {
            return Ok(());
        }
        c.suspend_fence += 1;
        (c.kmd, c.suspend_fence)
    };
    if kmd != 0 {
        suspend_ddi(a, kmd, fence)?;
    }
    let mut os = lock(&a.ums);
    if let Some(c) = os.contexts.get_mut(&h) {
        c.suspended = why;
        // Complete when the DDI returns (STATUS_PENDING is refused above).
        c.suspend_done = fence;
    }
    os.events
        .push(UmsEvent::SuspendContext { context: h, fence });
    Ok(())
}

/// Whether VidSch suspends and resumes context `c`: 24H2 `M:VidSchiSuspendResumeHwContexts`
/// @0x14001F968 walks hardware contexts, which a `SynchronizationOnly` context lacks
/// (`K:DXGCONTEXT::Initialize` @0x1402CFD80 drops its `HwQueueSupported` and makes a plain
/// VidSch context); a `NoKmdAccess` one with `HwQueueSupported` is walked, with no DDI. (A
/// context the KMD created is suspended whatever its kind, the simulation's model.)
fn suspendable(c: &crate::state::ums::ContextObj) -> bool {
    c.kmd != 0 || c.hw_queue
}

/// `DxgkDdiSuspendContext` on the KMD's context `kmd` with suspend fence `fence`.
fn suspend_ddi(a: &AdapterShared, kmd: usize, fence: u64) -> Result<(), SimError> {
    let f = needed_ddi!(a, DxgkDdiSuspendContext, "has hardware queues")?;
    let args = DXGKARG_SUSPENDCONTEXT {
        hContext: kmd as HANDLE,
        contextSuspendFence: fence,
    };
    let ctx = a.context();
    let status = f.passive(a, (ctx, &args))?;
    if status == STATUS_PENDING {
        return Err(sim_err(
            a,
            "DxgkDdiSuspendContext returned STATUS_PENDING: completion through a \
             context-suspended interrupt is not simulated (the design commits the runlist \
             synchronously)"
                .into(),
        ));
    }
    check_status(f, status)
}

/// The OS resumes context `h` it suspended for `why`. For a context the KMD never heard of
/// (a `NoKmdAccess` one) VidSch only puts its queues back: 24H2
/// `M:VidSchiSuspendResumeHwContext` @0x140020730 skips the DDI (and the suspend's) for a
/// hardware context flagged `NoKmdAccess`, and `M:VidSchiEnsureRootPageTableUpdated`
/// @0x1400EAF40 its `DxgkDdiSetRootPageTable`.
pub(super) fn resume_context(
    a: &AdapterShared,
    h: KmtHandle,
    why: Suspended,
) -> Result<(), SimError> {
    let (kmd, node) = {
        let os = lock(&a.ums);
        match os.contexts.get(&h) {
            Some(c) if c.suspended == why => (c.kmd, c.node),
            _ => return Ok(()),
        }
    };
    // As a suspend, under the node's resource held shared (`NodeResources`).
    let _node = a.sch.node_resources.shared(node);
    if kmd != 0 {
        let f = needed_ddi!(a, DxgkDdiResumeContext, "has hardware queues")?;
        // 24H2 `M:VidSchiSuspendResumeHwContext` @0x140020730 sends the root (if it changed)
        // before the resume.
        super::root::ensure_root(a, h)?;
        let args = DXGKARG_RESUMECONTEXT {
            hContext: kmd as HANDLE,
        };
        let ctx = a.context();
        let status = f.passive(a, (ctx, &args))?;
        check_status(f, status)?;
    }
    let mut os = lock(&a.ums);
    if let Some(c) = os.contexts.get_mut(&h) {
        c.suspended = Suspended::No;
    }
    os.events.push(UmsEvent::ResumeContext { context: h });
    Ok(())
}

/// D3 → D0 and the contexts the power-down suspended resumed (UM-14), if in D3.
pub(super) fn power_up_if_needed(a: &AdapterShared) -> Result<(), SimError> {
    if lock(&a.ums).power == Power::D0 {
        return Ok(());
    }
    set_power_state(a, PowerDeviceD0)
}

pub(super) fn resume_power_suspended(a: &AdapterShared) -> Result<(), SimError> {
    let ctxs: Vec<KmtHandle> = lock(&a.ums)
        .contexts
        .values()
        .filter(|c| c.suspended == Suspended::Power)
        .map(|c| c.handle)
        .collect();
    for c in ctxs {
        resume_context(a, c, Suspended::Power)?;
    }
    Ok(())
}

/// UM-16: whether any queue of the adapter has work the OS has not seen complete: its last
/// queued progress value is ahead of the progress fence, or a CPU wait on the fence is still
/// pending (VidSch learns of completion through the DPC's fence processing, not by reading the
/// value: a signal whose interrupt has not been processed yet is not complete for it, and a
/// power-down now would leave that wait behind a disabled interrupt).
/// A node held active also counts: PoFx idles a device only once every component is idle, and
/// a submission holds its node's reference from its first look at the queue to its DDI call.
pub(super) fn pending_work(a: &AdapterShared) -> bool {
    // VidMm's paging in flight holds the GPU in D0 as well.
    if lock(&a.mm.vidmm).paging_busy() {
        return true;
    }
    let os = lock(&a.ums);
    nodes_held_active(&os) || queued_work(&os)
}

/// Whether any node has an active reference counted.
fn nodes_held_active(os: &crate::state::ums::UmsOs) -> bool {
    os.node_active.iter().any(|&n| n > 0)
}

/// Whether any queue has work the OS has not seen complete, or a CPU wait on its progress fence.
fn queued_work(os: &crate::state::ums::UmsOs) -> bool {
    os.queues
        .values()
        .any(|q| q.known_work() || q.progress().is_some_and(|p| !p.pending_waits().is_empty()))
}

/// VidMm's power reference for paging (a GPU in D3 runs nothing, so VidMm brings the adapter to
/// D0 before it submits paging work, as for any submission, UM-14): brings it to D0 and counts
/// the paging work as pending until the returned guard is dropped, so a runtime power-down
/// backs out meanwhile (a GPU in D3 runs no paging buffer). VidMm's guard
/// (`vidmm::mmu::PagingPower`) ends the count.
pub(crate) fn paging_power(a: &AdapterShared) -> Result<(), SimError> {
    {
        let mut v = lock(&a.mm.vidmm);
        if v.power_thread == Some(std::thread::current().id()) {
            v.paging_begin();
            return Ok(());
        }
    }
    loop {
        if lock(&a.ums).power == Power::D3 {
            let _x = exclusive(a);
            power_up_if_needed(a)?;
            resume_power_suspended(a)?;
        }
        let _s = shared(a);
        if lock(&a.ums).power != Power::D3 {
            lock(&a.mm.vidmm).paging_begin();
            return Ok(());
        }
    }
}

/// The adapter's power state as the OS drove it.
pub(crate) fn power_state(a: &AdapterShared) -> Power {
    lock(&a.ums).power
}

/// The power components the adapter's driver registered at start (empty without runtime
/// power management).
pub(crate) fn power_components(a: &AdapterShared) -> Vec<DXGK_POWER_RUNTIME_COMPONENT> {
    lock(&a.ums).power_components.clone()
}

/// F-state of node `node`'s power component (0 = F0).
pub(crate) fn engine_fstate(a: &AdapterShared, node: u32) -> Option<u32> {
    lock(&a.ums).fstate.get(node as usize).map(|f| f.now)
}

/// UM-14: D0 → D3 of a started adapter, with or without the OS's doorbell disconnects
/// (`Machine::power_down` says when each applies). `false` when work is pending: the OS backs
/// out (contexts resumed; disconnected doorbells stay so, their UMDs reconnect).
pub(crate) fn power_down(
    m: &dyn UmsHost,
    a: &AdapterShared,
    os_disconnects: bool,
) -> Result<bool, SimError> {
    let _x = exclusive(a);
    if lock(&a.ums).power == Power::D3 {
        return Ok(true);
    }
    if pending_work(a) {
        return Ok(false);
    }
    let ctxs: Vec<KmtHandle> = lock(&a.ums).contexts.keys().copied().collect();
    for c in ctxs {
        suspend_context(a, c, Suspended::Power)?;
    }
    if os_disconnects {
        let dbs: Vec<KmtHandle> = lock(&a.ums).doorbells.keys().copied().collect();
        for d in dbs {
            os_disconnect(a, d, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY)?;
        }
    }
    if pending_work(a) || driver_holds_a_component(a) {
        resume_power_suspended(a)?;
        return Ok(false);
    }
    // UM-14's optional step: with every context off the runlist, VidMm moves what no
    // device requires out of VRAM (`vidmm::residency`).
    m.residency_trim_for_d3(a)?;
    // The decision: in one look, no node held active (a submission counts its reference
    // without the power lock, `take_if_f0`, and may be on its way to the DDI) and no work,
    // and the adapter recorded as D3, so a reference taken past this look finds D3 and waits
    // for the power-up behind this power-down.
    let decided = {
        let mut os = lock(&a.ums);
        let go = !nodes_held_active(&os) && !queued_work(&os);
        if go {
            os.power = Power::D3;
        }
        go
    };
    if !decided {
        resume_power_suspended(a)?;
        return Ok(false);
    }
    if let Err(e) = set_power_state(a, PowerDeviceD3) {
        lock(&a.ums).power = Power::D0;
        return Err(e);
    }
    Ok(true)
}

/// `DxgkDdiSuspendContext` by the OS on context `context` of `device` (UM-11).
pub(crate) fn suspend_own_context(
    a: &AdapterShared,
    device: KmtHandle,
    context: KmtHandle,
) -> Result<(), SimError> {
    on_own_context(a, device, context, suspend_context)
}

/// `DxgkDdiResumeContext` by the OS on a context it suspended (UM-12).
pub(crate) fn resume_own_context(
    a: &AdapterShared,
    device: KmtHandle,
    context: KmtHandle,
) -> Result<(), SimError> {
    on_own_context(a, device, context, resume_context)
}

/// `act` by the OS on context `context` of `device`, under the device's locks (a context of
/// another device is `STATUS_INVALID_HANDLE`).
fn on_own_context(
    a: &AdapterShared,
    device: KmtHandle,
    context: KmtHandle,
    act: fn(&AdapterShared, KmtHandle, Suspended) -> Result<(), SimError>,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    lock(&a.ums).context_of(device, context)?;
    act(a, context, Suspended::Os)
}

/// D3 → D0 without a connect (resumes the contexts the power-down suspended).
pub(crate) fn power_up(a: &AdapterShared) -> Result<(), SimError> {
    let _x = exclusive(a);
    if lock(&a.ums).power == Power::D0 {
        return Ok(());
    }
    power_up_if_needed(a)?;
    resume_power_suspended(a)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{MachineConfig, Mode};

    /// A stepped machine with its adapter started, and the adapter.
    fn started() -> (crate::Machine, Arc<AdapterShared>) {
        let mut m = crate::Machine::new(MachineConfig::single(Mode::Step));
        m.load_driver().expect("load");
        m.start_adapter(0).expect("start");
        let a = Arc::clone(m.adapter_shared(0).expect("adapter"));
        (m, a)
    }

    /// UM-13: a submission's reference counted without the F-state lock (`take_if_f0`) holds
    /// the node in F0: an F1 decided past it declines and changes nothing; once it is given
    /// back the F1 goes through, and no reference is counted that way on a node in F1.
    #[test]
    fn um_13_f1_declines_past_a_reference_counted_without_the_fstate_lock() {
        let (_m, a) = started();
        assert!(take_if_f0(&mut lock(&a.ums), 0));
        let held = NodeActive::counted(&a, 0);
        {
            let _f = lock(&a.ums_fstate);
            assert!(!set_fstate_locked(&a, 0, 1).expect("F1"), "declined");
        }
        assert_eq!(engine_fstate(&a, 0), Some(0));
        drop(held);
        {
            let _f = lock(&a.ums_fstate);
            assert!(set_fstate_locked(&a, 0, 1).expect("F1"));
        }
        assert_eq!(engine_fstate(&a, 0), Some(1));
        assert!(!take_if_f0(&mut lock(&a.ums), 0), "F1: the slow path");
        assert_eq!(lock(&a.ums).node_active.first(), Some(&0));
    }

    /// The adapter [`fstate_stand_in`] looks at, and what a submission's first look answered
    /// each time the stand-in was asked for F1.
    static PROBED: std::sync::Mutex<Option<Arc<AdapterShared>>> = std::sync::Mutex::new(None);
    static LOOKS_DURING_F1: std::sync::Mutex<Vec<bool>> = std::sync::Mutex::new(Vec::new());

    /// A `DxgkDdiSetPowerComponentFState` that, while the OS takes node 0 to F1, has a
    /// submission to node 0 make its first step: the look that counts an active reference
    /// without the F-state lock ([`take_if_f0`]), as the kernel-mode submit does.
    extern "system" fn fstate_stand_in(_: HANDLE, _: u32, fstate: u32) -> i32 {
        let probed = lock(&PROBED).clone();
        if let (Some(a), true) = (probed, fstate != 0) {
            let took = take_if_f0(&mut lock(&a.ums), 0);
            if took {
                drop(NodeActive::counted(&a, 0));
            }
            lock(&LOOKS_DURING_F1).push(took);
        }
        rvgpu_ddi::ntstatus::STATUS_SUCCESS
    }

    /// UM-13: a submission to a node whose F1 is under way (its DDI running) does not count
    /// itself onto the node: the node goes to F1, and the submission waits for the change and
    /// brings the node back to F0 before its work goes on. 24H2's VidSch holds a node's work
    /// while the node is powered down and hands it over once it is powered up
    /// (`dxgmms2!VidSchSetNodePowerState` @0x140048AD0: the node's powered flag, its contexts
    /// waiting for power readied and its staged hardware queues processed on power-up), and
    /// PoFx completes an activation asked for during an idle transition only after it
    /// (`DXGADAPTER::PowerRuntimeComponentIdleStateCallback_Worker` @0x14002E4E4 ends the
    /// transition with `PoFxCompleteIdleState`).
    #[test]
    fn um_13_a_submission_during_an_f1_change_waits_for_it_and_brings_f0_back() {
        let mut m = crate::Machine::new(MachineConfig::single(Mode::Step));
        m.load_driver_with(|t| t.DxgkDdiSetPowerComponentFState = Some(fstate_stand_in as _))
            .expect("load");
        m.start_adapter(0).expect("start");
        let a = Arc::clone(m.adapter_shared(0).expect("adapter"));
        *lock(&PROBED) = Some(Arc::clone(&a));
        {
            let _f = lock(&a.ums_fstate);
            assert!(set_fstate_locked(&a, 0, 1).expect("F1"));
        }
        *lock(&PROBED) = None;
        assert_eq!(
            *lock(&LOOKS_DURING_F1),
            [false],
            "the submission's look during the change takes the slow path"
        );
        assert_eq!(engine_fstate(&a, 0), Some(1));
        assert_eq!(lock(&a.ums).node_active.first(), Some(&0));
        // The submission's slow path, past the change: F0 first, then its reference.
        let before = lock(&a.ums).events.len();
        let held = node_active_in_d0(&a, 0).expect("active");
        let after: Vec<UmsEvent> = lock(&a.ums).events[before..].to_vec();
        assert!(
            after.iter().any(|e| matches!(
                e,
                UmsEvent::SetFState {
                    node: 0,
                    fstate: 0,
                    called: true
                }
            )),
            "F0 through the DDI: {after:?}"
        );
        assert_eq!(engine_fstate(&a, 0), Some(0));
        assert_eq!(lock(&a.ums).node_active.first(), Some(&1));
        drop(held);
    }

    /// UM-14: a node's reference counted by a submission on its way to the DDI holds the
    /// adapter in D0: a power-down meanwhile backs out; once the reference is given back the
    /// power-down goes through, and a reference is then counted only on the slow path.
    #[test]
    fn um_14_power_down_backs_out_under_a_submissions_node_reference() {
        let (m, a) = started();
        assert!(take_if_f0(&mut lock(&a.ums), 0));
        let held = NodeActive::counted(&a, 0);
        assert!(!m.power_down(0).expect("power down"), "backed out");
        assert_eq!(power_state(&a), Power::D0);
        drop(held);
        assert!(m.power_down(0).expect("power down"));
        assert_eq!(power_state(&a), Power::D3);
        assert!(!take_if_f0(&mut lock(&a.ums), 0), "D3: the slow path");
    }
}
