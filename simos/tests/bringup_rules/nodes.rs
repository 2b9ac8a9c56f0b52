//! Each node's metadata and the user-mode submission caps (docs/windows-bringup.md §8): BR-70
//! to BR-79.

use super::*;

#[test]
fn br_74_reserved_node_metadata_flag_bits_are_invalid() {
    let r = start_with_node_edit(no_edit, |md| {
        let mut f = md.Flags;
        f.Value |= 1 << 9;
        md.Flags = f;
    });
    refused(r, "BR-74", STATUS_INVALID_PARAMETER);
    // Bit 4 (SupportBuildTestCommandBuffer, 24H2) and the in-flight limit are not reserved.
    start_with_node_edit(no_edit, |md| {
        let mut f = md.Flags;
        f.Value |= (1 << 4) | (3 << 16);
        md.Flags = f;
    })
    .expect("defined bits");
}

/// BR-75: a node's GPU VA model must be one the adapter claims (rvgpu: GpuMmu on both).
#[test]
fn br_75_node_gpu_va_model_must_match_the_adapter() {
    let r = start_with_node_edit(no_edit, |md| md.IoMmuSupported = 1);
    refused(r, "BR-75", STATUS_INVALID_PARAMETER);
    let (_, r) = start_with(
        |c| {
            c.MemoryManagementCaps
                .Anonymous
                .set(DXGK_VIDMMCAPS_0::IoMmuSupported, 1)
        },
        no_table,
    );
    r.expect("IoMmu claimed by the adapter and by no node");
}

unsafe extern "system" fn overrunning_node_metadata(
    _h: HANDLE,
    _node: u32,
    out: *mut DXGK_NODEMETADATA,
) -> NTSTATUS {
    // The old 80-byte layout: six bytes past the 74-byte entry.
    // SAFETY: deliberately wrong, into the OS's array (which has room after the last entry).
    unsafe { out.cast::<u8>().write_bytes(0, 80) };
    STATUS_SUCCESS
}

/// Dxgkrnl's node array has the header's 74-byte stride; a driver writing the old 80-byte
/// layout corrupts the next entry, which the OS sees (memory corruption on Windows).
#[test]
fn node_metadata_written_past_its_74_byte_entry_is_caught() {
    let (_, r) = start_with(no_edit, |t| {
        t.DxgkDdiGetNodeMetadata = Some(overrunning_node_metadata)
    });
    match r {
        Err(SimError::Violation(why)) => assert!(why.contains("wrote past"), "{why}"),
        other => panic!("expected the overrun to be caught, got {other:?}"),
    }
}

/// BR-76: the user-mode submission caps (asked because rvgpu's nodes claim UMS) must be
/// answered, with a doorbell size of 1..=0x4000, no reserved flag and, with a secondary
/// doorbell, a secondary size of 1..=0x4000. A size Windows accepts but one BAR2 page cannot
/// hold is the project's UM-04 refusal.
#[test]
fn br_76_user_mode_submission_caps_rules() {
    let with = |edit: fn(&mut DXGK_USERMODESUBMISSION_CAPS)| {
        let (_, r) = start_with_knob(&UMS_CAPS_EDIT, Some(edit));
        r
    };
    refused(
        with(|c| c.DoorbellSizeInBytes = 0),
        "BR-76",
        STATUS_INVALID_PARAMETER,
    );
    refused(
        with(|c| c.DoorbellSizeInBytes = 0x4001),
        "BR-76",
        STATUS_INVALID_PARAMETER,
    );
    refused(
        with(|c| c.Flags.Value |= 2),
        "BR-76",
        STATUS_INVALID_PARAMETER,
    );
    refused(
        with(|c| {
            c.Flags.Value |= 1;
            c.SecondaryDoorbellSizeInBytes = 0;
        }),
        "BR-76",
        STATUS_INVALID_PARAMETER,
    );
    with(|c| {
        c.Flags.Value |= 1;
        c.SecondaryDoorbellSizeInBytes = 0x1000;
    })
    .expect("a secondary doorbell with its size");
    match with(|c| c.DoorbellSizeInBytes = 0x2000) {
        Err(SimError::Rejected(why)) => assert!(why.contains("UM-04"), "{why}"),
        other => panic!("expected the UM-04 refusal, got {other:?}"),
    }
    let (_, r) = start_with_knob(
        &REFUSE_TYPE,
        Some(rvgpu_ddi::adapter::DXGKQAITYPE_USERMODESUBMISSION_CAPS),
    );
    refused(r, "BR-76", STATUS_NOT_SUPPORTED);
}

unsafe extern "system" fn failing_node_metadata(
    _h: HANDLE,
    _node: u32,
    _out: *mut DXGK_NODEMETADATA,
) -> NTSTATUS {
    STATUS_INVALID_PARAMETER
}

/// BR-70: a failed `DxgkDdiGetNodeMetadata` fails the start with the driver's status (\[D\]
/// `ADAPTER_RENDER::Initialize` returns it).
#[test]
fn br_70_node_metadata_failure_fails_the_start_with_the_driver_s_status() {
    let (_, r) = start_with(no_edit, |t| {
        t.DxgkDdiGetNodeMetadata = Some(failing_node_metadata)
    });
    refused(r, "BR-70", STATUS_INVALID_PARAMETER);
}
