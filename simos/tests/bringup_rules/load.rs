//! The load phase (`DxgkInitialize`, docs/windows-bringup.md §3): BR-01 to BR-03.

use super::*;

#[test]
fn br_02_missing_required_slot_is_revision_mismatch() {
    let mut t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    assert_eq!(bringup::check_load(&t), Ok(()));
    t.DxgkDdiResetDevice = None;
    let v = bringup::check_load(&t).expect_err("ResetDevice is required");
    assert_eq!((v.rule, v.status), ("BR-02", STATUS_REVISION_MISMATCH));
    // Not checked at load: NotifyAcpiEvent, QueryInterface, QueryAdapterInfo.
    let mut t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    t.DxgkDdiNotifyAcpiEvent = None;
    t.DxgkDdiQueryInterface = None;
    t.DxgkDdiQueryAdapterInfo = None;
    assert_eq!(bringup::check_load(&t), Ok(()));
    // QueryConnectionChange may stand in for QueryChildStatus.
    let mut t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    t.DxgkDdiQueryChildStatus = None;
    assert_eq!(bringup::check_load(&t).map_err(|v| v.rule), Err("BR-02"));
    t.DxgkDdiQueryConnectionChange = Some(unsafe_stand_in);
    assert_eq!(bringup::check_load(&t), Ok(()));
}

#[test]
fn br_01_interface_older_than_vista_is_revision_mismatch() {
    let mut t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    t.Version = 0x1000;
    let v = bringup::check_load(&t).expect_err("too old");
    assert_eq!((v.rule, v.status), ("BR-01", STATUS_REVISION_MISMATCH));
}

/// BR-03: Dxgkrnl copies only the bytes the table's version defines; later slots are not seen
/// (ignored, not refused). A 0x11007 table is copied whole.
#[test]
fn br_03_slots_past_the_versions_table_size_are_not_copied() {
    let t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    assert_eq!(bringup::driver_data_size(0x2000), 496);
    assert_eq!(bringup::driver_data_size(0xF003), 1296);
    assert_eq!(bringup::driver_data_size(0x10003), 1328);
    let whole = std::mem::size_of::<DRIVER_INITIALIZATION_DATA>();
    assert_eq!(bringup::driver_data_size(t.Version), whole);
    let copied = bringup::table_as_copied(&t);
    assert!(copied.slots().eq(t.slots()), "a 3.2 table is copied whole");
    let mut old = t;
    old.Version = 0x2000;
    let copied = bringup::table_as_copied(&old);
    // Slot k sits at byte 8 * (k + 1): the first 61 slots fit into 496 bytes.
    for (k, ((name, before), (_, after))) in old.slots().zip(copied.slots()).enumerate() {
        let inside = 8 * (k + 2) <= 496;
        assert_eq!(after, before && inside, "{name} (slot {k})");
    }
    assert!(copied.DxgkDdiCreateContext.is_some() && copied.DxgkDdiRenderKm.is_none());
}
