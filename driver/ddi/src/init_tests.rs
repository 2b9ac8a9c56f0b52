//! Tests of the `DRIVER_INITIALIZATION_DATA` binding.

use super::*;

#[test]
fn slot_list_matches_struct() {
    assert_eq!(DRIVER_INITIALIZATION_DATA::SLOT_COUNT, 192);
    assert_eq!(DRIVER_INITIALIZATION_DATA::SLOT_CHECKS.len(), 192);
    assert_eq!(DRIVER_INITIALIZATION_DATA::SLOT_CLEARS.len(), 192);
    assert_eq!(
        core::mem::size_of::<DRIVER_INITIALIZATION_DATA>(),
        8 + 8 * DRIVER_INITIALIZATION_DATA::SLOT_COUNT
    );
    assert_eq!(
        DRIVER_INITIALIZATION_DATA::SLOT_NAMES.first(),
        Some(&"DxgkDdiAddDevice")
    );
    assert_eq!(
        DRIVER_INITIALIZATION_DATA::SLOT_NAMES.last(),
        Some(&"DxgkDdiResetDisplayEngine")
    );
    let mut names: Vec<_> = DRIVER_INITIALIZATION_DATA::SLOT_NAMES.to_vec();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 192);
}

unsafe extern "system" fn dpc(_ctx: PVOID) {}

#[test]
fn default_is_null_and_filled_slots_reports_set_ones() {
    let mut d = DRIVER_INITIALIZATION_DATA::default();
    assert_eq!(d.Version, 0);
    assert!(filled_slots(&d).all(|(_, set)| !set));
    d.DxgkDdiDpcRoutine = Some(dpc);
    d.Reserved4 = 1usize as PVOID;
    let set: Vec<_> = filled_slots(&d)
        .filter(|(_, s)| *s)
        .map(|(n, _)| n)
        .collect();
    assert_eq!(set, ["DxgkDdiDpcRoutine", "Reserved4"]);
    assert_eq!(filled_slots(&d).count(), 192);
}

#[test]
fn version_selectors() {
    assert_eq!(DXGKDDI_INTERFACE_VERSION_WDDM3_2, 0x11007);
    assert_eq!(DXGKDDI_INTERFACE_VERSION, DXGKDDI_INTERFACE_VERSION_WDDM3_2);
    const { assert!(DXGKDDI_INTERFACE_VERSION_WDDM3_1 < DXGKDDI_INTERFACE_VERSION_WDDM3_2) };
}

/// DDI-01: a slot not bound yet has its placeholder in its concept's module, never here, so
/// binding it (the placeholder replaced by its argument block and prototype) edits one file;
/// this module only re-exports the slot types.
#[test]
fn ddi_01_slot_placeholders_live_in_their_concepts_module() {
    let here = include_str!("init.rs");
    assert!(
        !here.contains(concat!("unbound_fn", "!(")),
        "a placeholder in init.rs"
    );
}
