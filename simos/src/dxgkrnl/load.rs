//! Driver load: the simulated `DxgkInitialize`.
//!
//! `DxgkInitialize` validates and copies the table (as Dxgkrnl does: the driver's table lives on
//! DriverEntry's stack). Every later call goes through the copy with real DXGKARG structures,
//! through [`super::ddi`].

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::Arc;

use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, DXGKDDI_INTERFACE_VERSION_WDDM3_2};
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::NTSTATUS;
use rvgpu_kmd::platform::Level;

use crate::dxgkrnl::adapter::DriverTable;
use crate::dxgkrnl::state::MachineState;

/// Slots a render-only WDDM 3.2 adapter must fill for bring-up: the PnP and interrupt entry
/// points of `DRIVER_INITIALIZATION_DATA`
/// (<https://learn.microsoft.com/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_driver_initialization_data>).
/// Later issues extend the list as the driver implements more (CreateDevice, SubmitCommand...).
pub const MANDATORY_SLOTS: &[&str] = &[
    "DxgkDdiAddDevice",
    "DxgkDdiStartDevice",
    "DxgkDdiStopDevice",
    "DxgkDdiRemoveDevice",
    "DxgkDdiDispatchIoRequest",
    "DxgkDdiInterruptRoutine",
    "DxgkDdiDpcRoutine",
    "DxgkDdiQueryChildRelations",
    "DxgkDdiQueryChildStatus",
    "DxgkDdiQueryDeviceDescriptor",
    "DxgkDdiSetPowerState",
    "DxgkDdiNotifyAcpiEvent",
    "DxgkDdiResetDevice",
    "DxgkDdiUnload",
    "DxgkDdiQueryInterface",
    "DxgkDdiQueryAdapterInfo",
];

/// A hook that rewrites the table after validation (a test replacing a slot with a
/// misbehaving routine).
pub type TableHook = Box<dyn FnOnce(&mut DRIVER_INITIALIZATION_DATA) + Send>;

struct Loading {
    state: Arc<MachineState>,
    table: Arc<DriverTable>,
    hook: Option<TableHook>,
}

thread_local! {
    /// The machine whose driver is being loaded on this thread (DxgkInitialize has no
    /// context argument).
    static LOADING: RefCell<Option<Loading>> = const { RefCell::new(None) };
}

/// Runs `f` (which calls DriverEntry) with `DxgkInitialize` bound to this machine.
pub fn with_loading<R>(
    state: Arc<MachineState>,
    table: Arc<DriverTable>,
    hook: Option<TableHook>,
    f: impl FnOnce() -> R,
) -> R {
    LOADING.with(|l| *l.borrow_mut() = Some(Loading { state, table, hook }));
    let r = f();
    LOADING.with(|l| *l.borrow_mut() = None);
    r
}

/// The simulated `DxgkInitialize` (the [`rvgpu::DxgkInitializeFn`] the machine passes to
/// `rvgpu::driver_entry`).
///
/// # Safety
/// `init_data` must be null or point to a valid `DRIVER_INITIALIZATION_DATA`.
pub unsafe extern "system" fn sim_dxgk_initialize(
    driver_object: *mut c_void,
    registry_path: *const c_void,
    init_data: *const DRIVER_INITIALIZATION_DATA,
) -> NTSTATUS {
    let Some(loading) = LOADING.with(|l| l.borrow_mut().take()) else {
        eprintln!("rvgpu-simos: DxgkInitialize called outside Machine::load_driver");
        return STATUS_UNSUCCESSFUL;
    };
    let log = |m: String| {
        loading
            .state
            .push_log(Level::Error, format!("DxgkInitialize: {m}"))
    };
    if driver_object.is_null() || registry_path.is_null() || init_data.is_null() {
        log("null argument".into());
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: non-null, and the caller guarantees it points to a valid table.
    let mut table = unsafe { init_data.read() };
    if table.Version != DXGKDDI_INTERFACE_VERSION_WDDM3_2 {
        log(format!(
            "interface version {:#x}, expected WDDM 3.2 ({:#x})",
            table.Version, DXGKDDI_INTERFACE_VERSION_WDDM3_2
        ));
        return STATUS_INVALID_PARAMETER;
    }
    let missing: Vec<&str> = table
        .slots()
        .filter(|(name, filled)| !filled && MANDATORY_SLOTS.contains(name))
        .map(|(name, _)| name)
        .collect();
    if !missing.is_empty() {
        log(format!("mandatory DDIs missing: {}", missing.join(", ")));
        return STATUS_INVALID_PARAMETER;
    }
    if let Some(hook) = loading.hook {
        hook(&mut table);
    }
    loading.table.set(Some(table));
    STATUS_SUCCESS
}
