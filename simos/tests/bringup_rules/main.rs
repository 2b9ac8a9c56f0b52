//! The simulated Dxgkrnl's start-up rules (docs/windows-bringup.md, BR-nn), one module per
//! phase. For each rule, a driver that breaks it is refused the way Windows refuses it (rule,
//! status), and the real rvgpu passes every rule with Windows' default policies. The legacy
//! feature path's rules (BR-78, BR-80 … BR-82) are `feature_negotiation`'s; the edited starts
//! are `common::start_edits`.

use std::cell::Cell;

#[path = "../common/mod.rs"]
mod common;
use common::start_edits::*;
use common::{load_hooked, refused};

use rvgpu_ddi::adapter::{
    DXGK_DRIVERCAPS_MiscCaps, DXGKQAITYPE_HISTORYBUFFERPRECISION, DXGKQAITYPE_PHYSICALADAPTERCAPS,
    DXGK_DRIVERCAPS, DXGK_FLIPCAPS, DXGK_PHYSICALADAPTERFLAGS, DXGK_VIDMMCAPS_0, DXGK_VIDSCHCAPS,
};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::{
    STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED, STATUS_NO_MEMORY, STATUS_SUCCESS,
};
use rvgpu_ddi::submission::{DXGK_NODEMETADATA, DXGK_USERMODESUBMISSION_CAPS};
use rvgpu_ddi::{HANDLE, NTSTATUS};
use rvgpu_simos::adapter::bringup::{
    self, STATUS_DEVICE_CONFIGURATION_ERROR, STATUS_REVISION_MISMATCH,
};
use rvgpu_simos::{Machine, MachineConfig, Mode, SimError};

/// rvgpu passes every start-up rule with Windows' default policies, and its statuses stay within
/// the wrappers' allow-lists (BR-23).
#[test]
fn br_rvgpu_passes_every_start_rule() {
    let mut m = machine(false);
    m.load_driver().expect("load");
    if let Err(e) = m.start_adapter(0) {
        panic!("start: {e}; log {:#?}", m.driver_log());
    }
    let log = m.triage_log(0);
    assert!(log.is_empty(), "triage log {log:#?}");
}

/// A filled slot for a DDI the bindings leave unbound (only its presence is checked).
unsafe extern "system" fn unsafe_stand_in() {}

/// A start with the caps `edit` (the table unedited) is refused by `rule` with `status`.
fn caps_refused(edit: impl Fn(&mut DXGK_DRIVERCAPS) + 'static, rule: &str, status: NTSTATUS) {
    let (_, r) = start_with(edit, no_table);
    refused(r, rule, status);
}

/// Calls the driver's own routine saved in `$real` (a `OnceLock` of a table slot) with the
/// arguments of the stand-in that wraps it; `STATUS_NOT_SUPPORTED` when none was saved.
macro_rules! forward_to {
    ($real:ident($($arg:expr),* $(,)?)) => {
        match $real.get().copied().flatten() {
            // SAFETY: forwarded unchanged: the stand-in's own arguments, from the OS.
            Some(real) => unsafe { real($($arg),*) },
            None => STATUS_NOT_SUPPORTED,
        }
    };
}

/// One `#[test]` per row: a start with the row's edits (`start_with(caps, table)`,
/// `start_with_physical(caps, physical)` or `start_with_knob(knob, value)`) is refused by the
/// row's rule with its status, as Windows refuses it.
macro_rules! refused_starts {
    ($(
        $(#[$meta:meta])*
        fn $name:ident() = $start:ident($($edit:expr),+ $(,)?) => $rule:literal, $status:expr;
    )+) => {
        $(
            $(#[$meta])*
            fn $name() {
                let (_, r) = $start($($edit),+);
                refused(r, $rule, $status);
            }
        )+
    };
}

mod caps;
mod load;
mod nodes;
mod objects;
mod start;
mod vidmm;

against_the_pe_image!();
