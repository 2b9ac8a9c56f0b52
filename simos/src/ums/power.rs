//! Power for user-mode submission: engine F1 transitions (UM-13, VidSch's PASSIVE worker) and
//! the adapter's D3 power-down and power-up with context suspend and resume (UM-14, UM-16).

use std::sync::atomic::Ordering;

use rvgpu_ddi::basic::{PowerDeviceD0, PowerDeviceD3, DEVICE_POWER_STATE, HANDLE};
use rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY;
use rvgpu_ddi::interrupt::DXGK_ENGINE_STATE_TRANSITION_TO_F1;
use rvgpu_ddi::ntstatus::STATUS_PENDING;
use rvgpu_ddi::submission::{DXGKARG_RESUMECONTEXT, DXGKARG_SUSPENDCONTEXT};

use crate::adapter::bringup;
use crate::adapter::ddi::{self, check_status, sim_err};
use crate::adapter::{AdapterShared, Life};
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::os::answers::OsDisconnects;

use super::doorbell::os_disconnect;
use super::events::UmsEvent;
use super::held::run_hwq_work;
use super::host::UmsHost;
use super::kmd::{needed_ddi, worker_step_failed};
use super::locks::{dev_guard, device_lock, exclusive, shared};
use super::loss::tdr_device_error;
use super::state::{
    DoorbellState, Power, QueueObj, Suspended, DISPLAY_ADAPTER_HW_ID, POWER_ACTION_NONE,
};

/// Records what the DPC reported (called from `DxgkCbNotifyDpc`, DISPATCH_LEVEL): F1 requests
/// become PASSIVE work for VidSch's worker.
pub(crate) fn note_engine_state(a: &AdapterShared, node: u32, state: i32) {
    let mut os = lock(&a.ums);
    os.events.push(UmsEvent::EngineState { node, state });
    if state == DXGK_ENGINE_STATE_TRANSITION_TO_F1 {
        os.work.push_back(node);
        drop(os);
        a.sch.wake.notify();
    }
}

/// DPC: a hardware queue's GPU page fault. The device goes to error at PASSIVE
/// ([`run_passive_work`]): its doorbells `DISCONNECTED_ABORT` (UM-10: device loss "on TDR, GPU
/// stop, page fault", seed 004). That Windows does this on the
/// `DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED` report itself, not only at a following TDR, is
/// UNVERIFIED on Windows.
pub(crate) fn note_page_fault(a: &AdapterShared, queue_kmd: usize, va: u64) {
    lock(&a.ums).faulted.push_back((queue_kmd, va));
    a.sch.wake.notify();
}

/// Whether PASSIVE work is pending.
pub(crate) fn has_work(a: &AdapterShared) -> bool {
    let os = lock(&a.ums);
    !os.work.is_empty()
        || !os.faulted.is_empty()
        || !os.f1_deferred.is_empty()
        || (os.hwq_due.load(Ordering::Acquire)
            && os
                .queues
                .values()
                .any(|q| q.sched.due(q.progress.as_ref(), false)))
}

/// PASSIVE: puts the device of each page-faulted queue in error (UM-10). A report naming a
/// queue the OS never created is a driver bug.
fn run_page_faults(a: &AdapterShared) -> bool {
    let mut did = false;
    loop {
        let Some((kmd, va)) = lock(&a.ums).faulted.pop_front() else {
            return did;
        };
        did = true;
        let found = {
            let os = lock(&a.ums);
            // Bound before the block ends: the iterator borrows `os`, which the block's
            // tail expression would outlive (edition 2021 temporaries).
            let found = os
                .queues
                .values()
                .find(|q| q.kmd == kmd)
                .map(|q| (q.handle, q.device));
            found
        };
        let Some((queue, device)) = found else {
            // The queue may be gone since (destroyed after the fault was posted): nothing
            // to put in error. A handle the OS never saw is the driver's bug.
            if !lock(&a.ums).destroyed_queues.contains(&kmd) {
                a.state.raise_sim_error(format!(
                    "driver bug: page fault reported for hardware queue {kmd:#x}, which the OS \
                     never created"
                ));
            }
            continue;
        };
        lock(&a.ums).events.push(UmsEvent::PageFault { queue, va });
        let _x = exclusive(a);
        if let Err(e) = tdr_device_error(a, device) {
            worker_step_failed(a, format!("putting device {device} in error failed: {e}"));
            return did;
        }
        lock(&a.ums).events.push(UmsEvent::DeviceError { device });
    }
}

/// VidSch's PASSIVE worker: runs the queued F1 transitions (UM-13). `dma_pending` answers
/// whether VidSch has a DMA buffer of a node in flight (such a node is not idle). Returns
/// whether it did anything.
pub(crate) fn run_passive_work(a: &AdapterShared, dma_pending: &dyn Fn(u32) -> bool) -> bool {
    // The D3 trim pages from inside the power sequence, which holds it exclusively: the
    // worker's PASSIVE items (F1 transitions take the same sequence) wait until it is over
    // rather than deadlock this thread in step mode.
    if lock(&a.mm.vidmm).power_thread == Some(std::thread::current().id()) {
        return false;
    }
    let mut did = run_hwq_work(a);
    if !a.state.is_halted() && *lock(&a.life) == Life::Started {
        did |= run_page_faults(a);
    }
    loop {
        // Work queued while the adapter is still starting waits for the start to finish.
        if a.state.is_halted() || *lock(&a.life) != Life::Started {
            return did;
        }
        let Some(node) = lock(&a.ums).work.pop_front() else {
            return did | run_deferred_f1(a, dma_pending);
        };
        did = true;
        let _x = exclusive(a);
        if let Err(e) = engine_to_f1(a, node, dma_pending) {
            worker_step_failed(a, format!("engine {node} F1 transition failed: {e}"));
            return did;
        }
    }
}

pub(super) fn engine_to_f1(
    a: &AdapterShared,
    node: u32,
    dma_pending: &dyn Fn(u32) -> bool,
) -> Result<(), SimError> {
    let targets: Vec<KmtHandle> = {
        // A node already in F1 has no connected doorbell (a connect sets F0 first); a
        // repeated request finds nothing to disconnect and leaves the F-state as it is.
        let os = lock(&a.ums);
        os.doorbells
            .values()
            .filter(|d| matches!(d.state, DoorbellState::Connected { .. }))
            .filter(|d| os.queues.get(&d.queue).is_some_and(|q| q.node == node))
            .map(|d| d.handle)
            .collect()
    };
    // UM-14 (the pages) has the OS disconnect them first; 24H2 does not
    // (crate::os::answers::OsDisconnects).
    if a.os.reading.os_disconnects == OsDisconnects::OnPowerAndReset {
        for d in targets {
            os_disconnect(a, d, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY)?;
        }
    }
    // F1 only when idle (UM-13: "an idle engine asks for F1"; PoFx idles a component only
    // when no active reference holds it, and VidSch holds one while it has work for the
    // node): checked under the F-state lock, which every active reference takes too.
    let _f = lock(&a.ums_fstate);
    if node_busy(a, node, dma_pending) {
        let mut os = lock(&a.ums);
        os.events.push(UmsEvent::F1Declined { node });
        if !os.f1_deferred.contains(&node) {
            os.f1_deferred.push(node);
        }
        return Ok(());
    }
    lock(&a.ums).f1_deferred.retain(|&n| n != node);
    set_fstate_locked(a, node, 1)
}

/// The deferred F1 requests of nodes that are idle now. Returns whether one ran.
fn run_deferred_f1(a: &AdapterShared, dma_pending: &dyn Fn(u32) -> bool) -> bool {
    let deferred: Vec<u32> = lock(&a.ums).f1_deferred.clone();
    let mut did = false;
    for node in deferred {
        if a.state.is_halted() || node_busy(a, node, dma_pending) {
            continue;
        }
        let _x = exclusive(a);
        // Still wanted (no work arrived since the check)?
        if !lock(&a.ums).f1_deferred.contains(&node) {
            continue;
        }
        did = true;
        if let Err(e) = engine_to_f1(a, node, dma_pending) {
            worker_step_failed(a, format!("engine {node} F1 transition failed: {e}"));
            return did;
        }
    }
    did
}

/// Whether node `node` has work the OS knows of: an active reference, a kernel-mode or held
/// submission, a queue whose last-queued progress value is ahead of its fence (UM-16), a
/// VidSch DMA buffer in flight, or VidMm paging in flight.
fn node_busy(a: &AdapterShared, node: u32, dma_pending: &dyn Fn(u32) -> bool) -> bool {
    let (active, scheds) = {
        let os = lock(&a.ums);
        let active = os.node_active.get(node as usize).is_some_and(|&n| n > 0)
            || os
                .queues
                .values()
                .filter(|q| q.node == node)
                .any(QueueObj::known_work);
        let scheds: Vec<_> = os
            .queues
            .values()
            .filter(|q| q.node == node)
            .map(|q| q.sched.clone())
            .collect();
        (active, scheds)
    };
    // Held submissions (MF-03), read without the OS lock (the pump takes them in the other
    // order).
    active
        || lock(&a.ums)
            .driver_active
            .get(node as usize)
            .is_some_and(|&n| n > 0)
        || scheds.iter().any(|s| !lock(&s.st).list.is_empty())
        || dma_pending(node)
        || lock(&a.mm.vidmm).paging_busy()
}

/// An active reference on a node's power component (PoFx `SetPowerComponentActive` /
/// `Idle`, which VidSch takes before it submits to a node and Dxgkrnl before it connects a
/// doorbell): the node is in F0 while one is held, and F1 waits until none is.
pub(crate) struct NodeActive<'a> {
    a: &'a AdapterShared,
    node: u32,
}

impl Drop for NodeActive<'_> {
    fn drop(&mut self) {
        let mut os = lock(&self.a.ums);
        if let Some(n) = os.node_active.get_mut(self.node as usize) {
            *n = n.saturating_sub(1);
        }
    }
}

/// Takes an active reference on `node`, bringing its component to F0 first; then checks that
/// the driver did power the engine up: a gated engine while the OS holds the node in F0 is a
/// driver bug (its work would never run).
pub(crate) fn node_active(a: &AdapterShared, node: u32) -> Result<NodeActive<'_>, SimError> {
    let _f = lock(&a.ums_fstate);
    {
        let mut os = lock(&a.ums);
        if let Some(n) = os.node_active.get_mut(node as usize) {
            *n = n.saturating_add(1);
        }
        // New work: an F1 request still waiting for idleness is stale (the engine asks
        // again when it next idles).
        os.f1_deferred.retain(|&n| n != node);
    }
    let active = NodeActive { a, node };
    set_fstate_locked(a, node, 0)?;
    check_not_gated(a, node)?;
    Ok(active)
}

/// The node whose engine component is `component` (a `DXGK_POWER_COMPONENT_INDEX` the driver
/// reported), if runtime power management is started; a driver bug otherwise is reported.
fn component_node(a: &AdapterShared, routine: &str, component: u32) -> Option<u32> {
    let (started, node) = {
        let os = lock(&a.ums);
        let node = os
            .node_component
            .iter()
            .position(|c| *c == Some(component))
            .and_then(|n| u32::try_from(n).ok());
        (os.runtime_pm, node)
    };
    if !started {
        // 24H2 `K:DXGADAPTER::SetPowerComponentActiveCB`@0x1400258A4 (and the Idle worker
        // @0x140011C70, which returns without a PoFx handle) only log a call made while
        // runtime power management is off: nothing changes.
        a.observer().triage(format!(
            "{routine}: component {component:#x} while runtime power management is off (ignored)"
        ));
        return None;
    }
    if node.is_none() {
        // 24H2 logs an index past the component count as a fatal dxgkrnl error
        // (`WdLogSingleEntry5(0, 0x113, 0x17, ...)` in SetPowerComponentActiveCB).
        a.state.raise_sim_error(format!(
            "driver bug: {routine} names power component {component:#x}, which the driver \
             never reported"
        ));
    }
    node
}

/// `DxgkCbSetPowerComponentActive`: one more active reference on the node's component, which
/// PoFx brings to F0 before the call returns (24H2
/// `K:DXGADAPTER::SetPowerComponentActiveCBWorker`@0x140025BF0 counts the reference and, on the
/// first, calls `PoFxActivateComponent` with the blocking flag that
/// `SetPowerComponentActiveCB`@0x1400258A4 passes; [M] nc-d3dkmddi-dxgkcb_setpowercomponentactive:
/// "after this function returns, the driver can change the component's hardware settings").
pub(crate) fn cb_component_active(a: &AdapterShared, component: u32) {
    let Some(node) = component_node(a, "DxgkCbSetPowerComponentActive", component) else {
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
        if let Err(e) = set_fstate_locked(a, node, 0).and_then(|()| check_not_gated(a, node)) {
            a.state.raise_sim_error(e.to_string());
        }
    }
}

/// `DxgkCbSetPowerComponentIdle`: drops one active reference; at zero PoFx may idle the
/// component (an F1 request the reference held back runs then). An Idle without an Active is a
/// driver bug ([M] nc-d3dkmddi-dxgkcb_setpowercomponentidle: "each call to this function must
/// be paired with a call to DXGKCB_SETPOWERCOMPONENTACTIVE"; 24H2
/// `K:DXGADAPTER::SetPowerComponentIdleCBWorker`@0x140011C70 decrements without a check).
pub(crate) fn cb_component_idle(a: &AdapterShared, component: u32) {
    let Some(node) = component_node(a, "DxgkCbSetPowerComponentIdle", component) else {
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
/// once every component is idle ([M] nf-wdm-pofxsetdeviceidletimeout: the device-idle timeout
/// runs "from when the last component of the device enters the idle condition").
fn driver_holds_a_component(a: &AdapterShared) -> bool {
    lock(&a.ums).driver_active.iter().any(|&n| n > 0)
}

/// The device's engine `node` must not be power-gated while the OS holds it in F0.
fn check_not_gated(a: &AdapterShared, node: u32) -> Result<(), SimError> {
    let f0 = lock(&a.ums).fstate.get(node as usize) == Some(&0);
    if f0 && a.device.engine_gated(node) == Some(true) {
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
/// status outside the wrapper's allow-list (BR-108, [D]
/// `DXGADAPTER::PowerRuntimeComponentIdleStateCallback_Worker`); a failed F0 shows up as a gated
/// engine at the next active reference.
fn set_fstate_locked(a: &AdapterShared, node: u32, fstate: u32) -> Result<(), SimError> {
    let (current, component) = {
        let os = lock(&a.ums);
        let component = if os.runtime_pm {
            os.node_component.get(node as usize).copied().flatten()
        } else {
            None
        };
        (os.fstate.get(node as usize).copied(), component)
    };
    if current == Some(fstate) || current.is_none() {
        return Ok(());
    }
    let f = ddi::table_slot!(a, DxgkDdiSetPowerComponentFState)?;
    let called = match (f, component) {
        (Some(f), Some(component)) => {
            let ctx = a.context();
            let status = ddi::passive(a, f, |f| {
                // SAFETY: the driver's DDI with its context, the component index it
                // reported and one of the component's F-states.
                unsafe { f(ctx, component, fstate) }
            })?;
            bringup::triage_status(a, f.routine(), status);
            true
        }
        _ => false,
    };
    let mut os = lock(&a.ums);
    if let Some(s) = os.fstate.get_mut(node as usize) {
        *s = fstate;
    }
    os.events.push(UmsEvent::SetFState {
        node,
        fstate,
        called,
    });
    Ok(())
}

/// Start: the components `dxgkrnl::power` registered; runtime power management is started.
pub(crate) fn runtime_pm_registered(a: &AdapterShared, pc: crate::dxgkrnl::power::PowerComponents) {
    let mut os = lock(&a.ums);
    os.runtime_pm = true;
    let nodes = os.fstate.len();
    os.node_component = pc.node_component;
    os.node_component.resize(nodes, None);
    os.power_components = pc.components;
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
        .ok_or_else(|| SimError::Simulation("no DxgkDdiSetPowerState".into()))?;
    let ctx = a.context();
    if state == PowerDeviceD0 {
        // The bus driver powers the function up before the function driver hears of D0: a
        // power-up IRP is handled by the bus driver first, then by each driver going back up
        // the stack (learn.microsoft.com, "Handling Device Power-Up IRPs").
        a.d3hot.set(false);
    }
    let status = ddi::passive(a, f, |f| {
        // SAFETY: the driver's DDI with its context and the adapter's device UID.
        unsafe { f(ctx, DISPLAY_ADAPTER_HW_ID, state, POWER_ACTION_NONE) }
    })?;
    check_status(status)?;
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

pub(super) fn suspend_context(
    a: &AdapterShared,
    h: KmtHandle,
    why: Suspended,
) -> Result<(), SimError> {
    let (kmd, fence) = {
        let mut os = lock(&a.ums);
        let Some(c) = os.contexts.get_mut(&h) else {
            return Ok(());
        };
        if c.suspended != Suspended::No {
            return Ok(());
        }
        c.suspend_fence += 1;
        (c.kmd, c.suspend_fence)
    };
    let f = needed_ddi!(a, DxgkDdiSuspendContext, "has hardware queues")?;
    let args = DXGKARG_SUSPENDCONTEXT {
        hContext: kmd as HANDLE,
        contextSuspendFence: fence,
    };
    let ctx = a.context();
    // SAFETY: the driver's DDI with its context and a valid argument block.
    let status = unsafe { ddi::passive_with(a, f, ctx, &args) }?;
    if status == STATUS_PENDING {
        return Err(sim_err(
            a,
            "DxgkDdiSuspendContext returned STATUS_PENDING: completion through a \
             context-suspended interrupt is not simulated (the design commits the runlist \
             synchronously)"
                .into(),
        ));
    }
    check_status(status)?;
    let mut os = lock(&a.ums);
    if let Some(c) = os.contexts.get_mut(&h) {
        c.suspended = why;
    }
    os.events
        .push(UmsEvent::SuspendContext { context: h, fence });
    Ok(())
}

pub(super) fn resume_context(
    a: &AdapterShared,
    h: KmtHandle,
    why: Suspended,
) -> Result<(), SimError> {
    let kmd = {
        let os = lock(&a.ums);
        match os.contexts.get(&h) {
            Some(c) if c.suspended == why => c.kmd,
            _ => return Ok(()),
        }
    };
    let f = needed_ddi!(a, DxgkDdiResumeContext, "has hardware queues")?;
    let args = DXGKARG_RESUMECONTEXT {
        hContext: kmd as HANDLE,
    };
    let ctx = a.context();
    // SAFETY: the driver's DDI with its context and a valid argument block.
    let status = unsafe { ddi::passive_with(a, f, ctx, &args) }?;
    check_status(status)?;
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
pub(super) fn pending_work(a: &AdapterShared) -> bool {
    // VidMm's paging in flight holds the GPU in D0 as well.
    if lock(&a.mm.vidmm).paging_busy() {
        return true;
    }
    let os = lock(&a.ums);
    let busy = os.queues.values().any(|q| {
        q.known_work()
            || q.progress
                .as_ref()
                .is_some_and(|p| !p.pending_waits().is_empty())
    });
    busy
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
pub(crate) fn power_components(
    a: &AdapterShared,
) -> Vec<rvgpu_ddi::power::DXGK_POWER_RUNTIME_COMPONENT> {
    lock(&a.ums).power_components.clone()
}

/// F-state of node `node`'s power component (0 = F0).
pub(crate) fn engine_fstate(a: &AdapterShared, node: u32) -> Option<u32> {
    lock(&a.ums).fstate.get(node as usize).copied()
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
    set_power_state(a, PowerDeviceD3)?;
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
