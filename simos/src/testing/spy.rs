//! Spies in front of driver DDIs. `DxgkDdiUpdateMonitoredValues` (NF-07 tests): records the
//! IRQL and whether the caller holds an interrupt lock, runs a test's one-shot "race" action
//! (say, a GPU write of CurrentValue landing just before the new MonitoredValue is visible),
//! then calls the real DDI. `DxgkDdiSuspendContext`: runs a test's one-shot action while the
//! suspend is under way. Install with [`crate::Machine::load_driver_with`] and the
//! `install_*` hooks; records and actions are per machine.

use std::collections::HashMap;
use std::sync::Mutex;

use rvgpu_ddi::fence::{DXGKARG_UPDATEMONITOREDVALUES, PDXGKDDI_UPDATEMONITOREDVALUES};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED;
use rvgpu_ddi::submission::{DXGKARG_SUSPENDCONTEXT, PDXGKDDI_SUSPENDCONTEXT};
use rvgpu_ddi::{HANDLE, NTSTATUS};
use rvgpu_kmd::platform::Irql;

use crate::adapter::ddi::{in_table, SlotType};
use crate::base::lock::lock;
use crate::testing::ffi::{self, HandleRefStandIn, RefStandIn, Saved};

/// One observed call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateMonitoredCall {
    /// IRQL at entry.
    pub irql: Irql,
    /// Whether the caller held an interrupt lock.
    pub interrupt_lock: bool,
    /// (handle, value) pairs.
    pub fences: Vec<(usize, u64)>,
}

type Action = Box<dyn FnOnce() + Send>;

static REAL: Saved<<PDXGKDDI_UPDATEMONITOREDVALUES as SlotType>::F> = Saved::new();
static CALLS: Mutex<Vec<(u64, UpdateMonitoredCall)>> = Mutex::new(Vec::new());
static ACTIONS: Mutex<Option<HashMap<u64, Action>>> = Mutex::new(None);

/// Table hook: puts the spy in front of the real DDI.
pub fn install_update_monitored_spy(t: &mut DRIVER_INITIALIZATION_DATA) {
    REAL.save(in_table!(t, DxgkDdiUpdateMonitoredValues));
    t.DxgkDdiUpdateMonitoredValues = Some(ffi::block_ref::<UpdateMonitoredSpy>);
}

/// Calls seen on machine `id`.
pub fn calls(id: u64) -> Vec<UpdateMonitoredCall> {
    lock(&CALLS)
        .iter()
        .filter(|(m, _)| *m == id)
        .map(|(_, c)| c.clone())
        .collect()
}

/// Runs `f` once, inside the next UpdateMonitoredValues call on machine `id`, before the
/// real DDI.
pub fn on_next_call(id: u64, f: impl FnOnce() + Send + 'static) {
    lock(&ACTIONS)
        .get_or_insert_with(HashMap::new)
        .insert(id, Box::new(f));
}

struct UpdateMonitoredSpy;
impl RefStandIn for UpdateMonitoredSpy {
    type Block = DXGKARG_UPDATEMONITOREDVALUES;
    fn run(args: &DXGKARG_UPDATEMONITOREDVALUES) -> NTSTATUS {
        spy_update_monitored(args)
    }
}

fn spy_update_monitored(args: &DXGKARG_UPDATEMONITOREDVALUES) -> NTSTATUS {
    let id = crate::adapter::context::current_machine().map_or(u64::MAX, |s| s.id());
    let fences = ffi::blocks::monitored_values(args);
    lock(&CALLS).push((
        id,
        UpdateMonitoredCall {
            irql: crate::base::processor::current_irql(),
            interrupt_lock: crate::adapter::holds_any_interrupt_lock(),
            fences,
        },
    ));
    let action = lock(&ACTIONS).as_mut().and_then(|m| m.remove(&id));
    if let Some(f) = action {
        f();
    }
    REAL.call(args).unwrap_or(STATUS_NOT_IMPLEMENTED)
}

/// The driver's `DxgkDdiSuspendContext`, saved by [`install_suspend_context_spy`].
static REAL_SUSPEND: Saved<<PDXGKDDI_SUSPENDCONTEXT as SlotType>::F> = Saved::new();
static SUSPEND_ACTIONS: Mutex<Option<HashMap<u64, Action>>> = Mutex::new(None);

/// Table hook: puts a spy in front of `DxgkDdiSuspendContext` that runs the action
/// [`on_next_suspend`] left for the machine, then the real DDI.
pub fn install_suspend_context_spy(t: &mut DRIVER_INITIALIZATION_DATA) {
    REAL_SUSPEND.save(in_table!(t, DxgkDdiSuspendContext));
    t.DxgkDdiSuspendContext = Some(ffi::handle_ref::<SuspendContextSpy>);
}

/// Runs `f` once, inside the next `DxgkDdiSuspendContext` on machine `id`, before the real
/// DDI: what another thread does while a suspend is under way.
pub fn on_next_suspend(id: u64, f: impl FnOnce() + Send + 'static) {
    lock(&SUSPEND_ACTIONS)
        .get_or_insert_with(HashMap::new)
        .insert(id, Box::new(f));
}

struct SuspendContextSpy;
impl HandleRefStandIn for SuspendContextSpy {
    type Block = DXGKARG_SUSPENDCONTEXT;
    fn run(h: HANDLE, args: &DXGKARG_SUSPENDCONTEXT) -> NTSTATUS {
        let id = crate::adapter::context::current_machine().map_or(u64::MAX, |s| s.id());
        let action = lock(&SUSPEND_ACTIONS).as_mut().and_then(|m| m.remove(&id));
        if let Some(f) = action {
            f();
        }
        REAL_SUSPEND
            .call((h, args))
            .unwrap_or(STATUS_NOT_IMPLEMENTED)
    }
}

/// How many times an engine reset of `node` on adapter `adapter` has had to wait for the node's
/// resource (a suspend or resume held it): the event a test releases a parked suspend on.
pub fn node_resource_waits(
    m: &crate::Machine,
    adapter: usize,
    node: u32,
) -> Result<u32, crate::SimError> {
    Ok(m.adapter(adapter)?.sch.node_resources.exclusive_waits(node))
}
