//! Spies in front of driver DDIs. `DxgkDdiUpdateMonitoredValues` (NF-07 tests): records the
//! IRQL and whether the caller holds an interrupt lock, runs a test's one-shot "race" action
//! (say, a GPU write of CurrentValue landing just before the new MonitoredValue is visible),
//! then calls the real DDI. `DxgkDdiSuspendContext`: runs a test's one-shot action while the
//! suspend is under way. Install with [`crate::Machine::load_driver_with`] and the
//! `install_*` hooks; records and actions are per machine.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use rvgpu_ddi::fence::{DXGKARG_UPDATEMONITOREDVALUES, PDXGKDDI_UPDATEMONITOREDVALUES};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED;
use rvgpu_ddi::NTSTATUS;
use rvgpu_kmd::platform::Irql;

use crate::base::lock::lock;

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

static REAL: OnceLock<PDXGKDDI_UPDATEMONITOREDVALUES> = OnceLock::new();
static CALLS: Mutex<Vec<(u64, UpdateMonitoredCall)>> = Mutex::new(Vec::new());
static ACTIONS: Mutex<Option<HashMap<u64, Action>>> = Mutex::new(None);

/// Table hook: puts the spy in front of the real DDI.
pub fn install_update_monitored_spy(t: &mut DRIVER_INITIALIZATION_DATA) {
    let _ = REAL.set(t.DxgkDdiUpdateMonitoredValues);
    t.DxgkDdiUpdateMonitoredValues = Some(spy_update_monitored);
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

unsafe extern "system" fn spy_update_monitored(
    args: *const DXGKARG_UPDATEMONITOREDVALUES,
) -> NTSTATUS {
    let id = crate::adapter::context::current_machine().map_or(u64::MAX, |s| s.id());
    let mut fences = Vec::new();
    // SAFETY: the OS's argument block (or null) with NumFences-entry arrays.
    if let Some(a) = unsafe { args.as_ref() } {
        for i in 0..a.NumFences as usize {
            // SAFETY: as above.
            let (h, v) = unsafe {
                (
                    a.NativeFenceArray.add(i).read() as usize,
                    a.UpdatedValueArray.add(i).read(),
                )
            };
            fences.push((h, v));
        }
    }
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
    match REAL.get().copied().flatten() {
        // SAFETY: the driver's own DDI with the OS's arguments.
        Some(real) => unsafe { real(args) },
        None => STATUS_NOT_IMPLEMENTED,
    }
}

/// The driver's `DxgkDdiSuspendContext`, saved by [`install_suspend_context_spy`].
static REAL_SUSPEND: OnceLock<rvgpu_ddi::submission::PDXGKDDI_SUSPENDCONTEXT> = OnceLock::new();
static SUSPEND_ACTIONS: Mutex<Option<HashMap<u64, Action>>> = Mutex::new(None);

/// Table hook: puts a spy in front of `DxgkDdiSuspendContext` that runs the action
/// [`on_next_suspend`] left for the machine, then the real DDI.
pub fn install_suspend_context_spy(t: &mut DRIVER_INITIALIZATION_DATA) {
    let _ = REAL_SUSPEND.set(t.DxgkDdiSuspendContext);
    t.DxgkDdiSuspendContext = Some(spy_suspend_context);
}

/// Runs `f` once, inside the next `DxgkDdiSuspendContext` on machine `id`, before the real
/// DDI: what another thread does while a suspend is under way.
pub fn on_next_suspend(id: u64, f: impl FnOnce() + Send + 'static) {
    lock(&SUSPEND_ACTIONS)
        .get_or_insert_with(HashMap::new)
        .insert(id, Box::new(f));
}

unsafe extern "system" fn spy_suspend_context(
    h: rvgpu_ddi::HANDLE,
    args: *const rvgpu_ddi::submission::DXGKARG_SUSPENDCONTEXT,
) -> NTSTATUS {
    let id = crate::adapter::context::current_machine().map_or(u64::MAX, |s| s.id());
    let action = lock(&SUSPEND_ACTIONS).as_mut().and_then(|m| m.remove(&id));
    if let Some(f) = action {
        f();
    }
    // SAFETY: the OS's handle and argument block for the driver's own DDI.
    unsafe { super::call_real(&REAL_SUSPEND, h, args) }.unwrap_or(STATUS_NOT_IMPLEMENTED)
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
