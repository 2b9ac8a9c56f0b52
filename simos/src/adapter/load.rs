//! Driver load: the simulated `DxgkInitialize`.
//!
//! `DxgkInitialize` validates and copies the table (as Dxgkrnl does: the driver's table lives on
//! DriverEntry's stack). Every later call goes through the copy with real DXGKARG structures,
//! through [`super::ddi`].

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use rvgpu_ddi::init::{
    DRIVER_INITIALIZATION_DATA, PDXGKDDI_DPC_ROUTINE, PDXGKDDI_INTERRUPT_ROUTINE,
};
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::NTSTATUS;
use rvgpu_kmd::platform::Level;

use crate::adapter::ddi::SlotFn;
use crate::adapter::state::MachineState;
use crate::adapter::DriverTable;

/// A hook that rewrites the table after validation (a test replacing a slot with a
/// misbehaving routine).
pub type TableHook = Box<dyn FnOnce(&mut DRIVER_INITIALIZATION_DATA) + Send>;

struct Loading {
    state: Arc<MachineState>,
    table: Arc<DriverTable>,
    hook: Option<TableHook>,
    as_built: Option<TableHook>,
}

thread_local! {
    /// BR-06: whether the Dxgkrnl of the machine whose driver is being loaded on this thread
    /// answers 0x230047 (`OsConfig::dxgkrnl_knows_win8_initialize`).
    static KNOWS_WIN8: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// BR-06: whether the Dxgkrnl loading the driver on this thread answers the Windows 8
/// registration request (0x230047) — every build since Windows 8 does.
pub fn dxgkrnl_knows_win8_initialize() -> bool {
    KNOWS_WIN8.with(std::cell::Cell::get)
}

/// Runs `f` with [`dxgkrnl_knows_win8_initialize`] answering `knows`.
pub fn with_win8_initialize<R>(knows: bool, f: impl FnOnce() -> R) -> R {
    let before = KNOWS_WIN8.with(|k| k.replace(knows));
    let r = f();
    KNOWS_WIN8.with(|k| k.set(before));
    r
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
    as_built: Option<TableHook>,
    f: impl FnOnce() -> R,
) -> R {
    LOADING.with(|l| {
        *l.borrow_mut() = Some(Loading {
            state,
            table,
            hook,
            as_built,
        })
    });
    let r = f();
    LOADING.with(|l| *l.borrow_mut() = None);
    r
}

/// The simulated `DxgkInitialize` behind [`sim_dxgk_initialize`](crate::dxgkrnl::callbacks::ffi::sim_dxgk_initialize): whether the driver object
/// and the registry path were non-null, and a copy of the table (`None`: a NULL pointer).
pub(crate) fn dxgk_initialize(
    driver_object: bool,
    registry_path: bool,
    init_data: Option<DRIVER_INITIALIZATION_DATA>,
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
    let (true, true, Some(mut table)) = (driver_object, registry_path, init_data) else {
        log("null argument".into());
        return STATUS_INVALID_PARAMETER;
    };
    // A test standing in for a driver built differently (another interface version, say):
    // the edit is to the table DriverEntry passes, before Dxgkrnl looks at it.
    if let Some(edit) = loading.as_built {
        edit(&mut table);
    }
    // BR-03: Dxgkrnl copies only as much of the table as the version defines.
    let mut table = crate::adapter::bringup::table_as_copied(&table);
    // BR-01, BR-02 (docs/windows-bringup.md): the version floor and the required slots.
    if let Err(v) = crate::adapter::bringup::check_load(&table) {
        log(format!("{}: {}", v.rule, v.why));
        return v.status;
    }
    // windows-bringup.md §15 question 1: no ceiling. [D24] `DpiGetDriverDataSizeFromVersion` never fails and gives
    // every interface from 0x11001 on (the preview SDK's 0x11002, the 26100 WDK's 0x11007, any
    // later one) the whole 1,544-byte table; [D24] `DpiInitializeInternal` refuses only what is
    // below 0x104E (BR-01). Later rules read the version as Windows does (BR-32, BR-34).
    record_driver_isr(&table);
    if let Some(hook) = loading.hook {
        hook(&mut table);
    }
    loading.table.set(Some(table));
    STATUS_SUCCESS
}

/// The driver's own ISR as DriverEntry registered it, recorded by the loader before a test's
/// hook replaces the slot (one driver per test process, so one function for every machine).
pub(crate) static DRIVER_ISR: OnceLock<SlotFn<PDXGKDDI_INTERRUPT_ROUTINE>> = OnceLock::new();

/// The driver's own DPC routine, recorded as [`DRIVER_ISR`] is.
pub(crate) static DRIVER_DPC: OnceLock<SlotFn<PDXGKDDI_DPC_ROUTINE>> = OnceLock::new();

/// Called by the loader with the table DriverEntry registered, before any test hook (the
/// stand-ins in `crate::testing` call the recorded routines).
fn record_driver_isr(t: &rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA) {
    if let Some(f) = t.DxgkDdiInterruptRoutine {
        let _ = DRIVER_ISR.set(f);
    }
    if let Some(f) = t.DxgkDdiDpcRoutine {
        let _ = DRIVER_DPC.set(f);
    }
}
