//! The exported calls refuse null and bogus arguments on every build.

use super::*;

#[test]
fn null_arguments_are_rejected_before_anything_else() {
    // SAFETY: null pointers are part of each function's contract.
    let open = unsafe { rvgpu_open_adapter(0, 0, ptr::null_mut()) };
    assert_eq!(open, RvgpuStatus::InvalidArgument);
    // SAFETY: as above.
    let close = unsafe { rvgpu_close_adapter(ptr::null_mut()) };
    assert_eq!(close, RvgpuStatus::InvalidArgument);
    // SAFETY: as above.
    let submit = unsafe { rvgpu_submit(ptr::null_mut(), ptr::null(), 0, ptr::null_mut()) };
    assert_eq!(submit, RvgpuStatus::InvalidArgument);
    // SAFETY: as above.
    let wait = unsafe { rvgpu_fence_wait(ptr::null_mut(), 1, 0) };
    assert_eq!(wait, RvgpuStatus::InvalidArgument);
}

/// NF-13's entry points with what an attacker passes: NULLs are `InvalidArgument`, a
/// forged fence, adapter or NT handle is `InvalidHandle`, and the out-parameters are
/// cleared either way.
#[test]
fn nf_13_sharing_refuses_null_and_forged_handles() {
    let forged = 0x5A5A_5A58usize as *mut RvgpuFence;
    let mut nt: *mut c_void = 0x1234 as *mut c_void;
    // SAFETY: a valid out-pointer; the handle is only looked up.
    let s = unsafe { rvgpu_fence_share(forged, &mut nt) };
    assert_eq!((s, nt), (RvgpuStatus::InvalidHandle, ptr::null_mut()));
    // SAFETY: null pointers are part of the contract.
    let s = unsafe { rvgpu_fence_share(ptr::null_mut(), &mut nt) };
    assert_eq!(s, RvgpuStatus::InvalidArgument);
    // SAFETY: as above.
    let s = unsafe { rvgpu_fence_share(forged, ptr::null_mut()) };
    assert_eq!(s, RvgpuStatus::InvalidArgument);
    let adapter = 0x5A5A_5A58usize as *mut RvgpuAdapter;
    let mut f: *mut RvgpuFence = forged;
    // SAFETY: a valid out-pointer; handles are only looked up.
    let s = unsafe { rvgpu_fence_open(adapter, 0x44 as *mut c_void, &mut f) };
    assert_eq!((s, f), (RvgpuStatus::InvalidHandle, ptr::null_mut()));
    for (a, h) in [
        (ptr::null_mut(), 0x44 as *mut c_void),
        (adapter, ptr::null_mut()),
    ] {
        f = forged;
        // SAFETY: as above.
        let s = unsafe { rvgpu_fence_open(a, h, &mut f) };
        assert_eq!((s, f), (RvgpuStatus::InvalidArgument, ptr::null_mut()));
    }
    // SAFETY: as above.
    let s = unsafe { rvgpu_fence_open(adapter, 0x44 as *mut c_void, ptr::null_mut()) };
    assert_eq!(s, RvgpuStatus::InvalidArgument);
}

/// MF-04's event form with what an attacker passes: a NULL fence or event is
/// `InvalidArgument`, a forged fence `InvalidHandle`.
#[test]
fn mf_04_async_wait_refuses_null_and_forged_handles() {
    let forged = 0x5A5A_5A58usize as *mut RvgpuFence;
    let event = 0x44 as *mut c_void;
    // SAFETY: handles are only looked up; nulls are part of the contract.
    let s = unsafe { rvgpu_fence_wait_async(ptr::null_mut(), 1, event) };
    assert_eq!(s, RvgpuStatus::InvalidArgument);
    // SAFETY: as above.
    let s = unsafe { rvgpu_fence_wait_async(forged, 1, ptr::null_mut()) };
    assert_eq!(s, RvgpuStatus::InvalidArgument);
    // SAFETY: as above.
    let s = unsafe { rvgpu_fence_wait_async(forged, 1, event) };
    assert_eq!(s, RvgpuStatus::InvalidHandle);
}

#[test]
fn command_streams_are_decoded_and_validated() {
    use rvgpu_hw::cmd::Command;
    let fill = Command::Fill {
        dst: 0x1000,
        bytes: 8,
        pattern: 0x1122_3344_5566_7788,
    };
    let mut words = [0u64; 6];
    fill.encode(&mut words[..4]).unwrap();
    Command::Timestamp { addr: 0x2000 }
        .encode(&mut words[4..])
        .unwrap();
    let dwords: Vec<u32> = words
        .iter()
        .flat_map(|w| [*w as u32, (*w >> 32) as u32])
        .collect();
    assert_eq!(
        parse_commands(&dwords).unwrap(),
        vec![fill, Command::Timestamp { addr: 0x2000 }]
    );
    assert_eq!(
        parse_commands(&dwords[..11]),
        Err(RvgpuStatus::InvalidArgument),
        "odd dword count"
    );
    assert_eq!(
        parse_commands(&dwords[..10]),
        Err(RvgpuStatus::InvalidArgument),
        "packet cut short"
    );
    assert_eq!(
        parse_commands(&[0xFF, 0]),
        Err(RvgpuStatus::InvalidArgument),
        "bad opcode"
    );
    // A well-formed WRITE_DATA is refused, not passed on with its data words lost.
    let mut wd = [0u64; 3];
    rvgpu_hw::cmd::write_data(0x3000, &[0xDEAD_BEEF], &mut wd).unwrap();
    let wd: Vec<u32> = wd
        .iter()
        .flat_map(|w| [*w as u32, (*w >> 32) as u32])
        .collect();
    assert_eq!(
        parse_commands(&wd),
        Err(RvgpuStatus::InvalidArgument),
        "WRITE_DATA"
    );
    // A packet longer than the stack buffer (a 12-word NOP), then a short one, and the
    // same NOP cut short.
    let mut long = [0u64; 12];
    Command::Nop { len: 12 }.encode(&mut long).unwrap();
    let long: Vec<u32> = long
        .iter()
        .chain(&words[4..])
        .flat_map(|w| [*w as u32, (*w >> 32) as u32])
        .collect();
    assert_eq!(
        parse_commands(&long).unwrap(),
        vec![
            Command::Nop { len: 12 },
            Command::Timestamp { addr: 0x2000 }
        ]
    );
    assert_eq!(
        parse_commands(&long[..22]),
        Err(RvgpuStatus::InvalidArgument),
        "long packet cut short"
    );
    // A NULL queue is refused before the stream is looked at.
    let mut progress = 7u64;
    // SAFETY: valid stream and out-pointer; the null queue is part of the contract.
    let st = unsafe {
        rvgpu_submit(
            ptr::null_mut(),
            dwords.as_ptr(),
            dwords.len(),
            &mut progress,
        )
    };
    assert_eq!(st, RvgpuStatus::InvalidArgument);
    // SAFETY: null is part of the contract.
    let st = unsafe { rvgpu_queue_wait(ptr::null_mut(), 1, 0) };
    assert_eq!(st, RvgpuStatus::InvalidArgument);
}

#[test]
#[cfg(not(windows))]
fn unimplemented_calls_say_so_and_clear_outputs() {
    // Off Windows there is no D3DKMT to open an adapter with.
    let mut adapter: *mut RvgpuAdapter = 8 as *mut RvgpuAdapter;
    // SAFETY: `adapter` is a valid out-pointer.
    let st = unsafe { rvgpu_open_adapter(1, 0, &mut adapter) };
    assert_eq!(st, RvgpuStatus::NotImplemented);
    assert!(adapter.is_null());
    // SAFETY: returns a static C string.
    let name = unsafe { core::ffi::CStr::from_ptr(rvgpu_status_string(st as u32)) };
    assert_eq!(name.to_str().unwrap(), "not implemented");
}

/// UM-10's loss report with what an attacker passes: a NULL adapter or output is
/// `InvalidArgument`, a forged adapter `InvalidHandle`, and the output is cleared either way.
#[test]
fn um_10_the_loss_report_refuses_null_and_forged_adapters_and_clears_its_output() {
    let forged = 0x5A5A_5A58usize as *mut RvgpuAdapter;
    let dirty = RvgpuDeviceLossInfo {
        lost: 7,
        execution_state: 7,
        doorbell_status: 7,
        device_removed: 7,
        adapter_reset: 7,
        reserved: 7,
    };
    for (adapter, want) in [
        (forged, RvgpuStatus::InvalidHandle),
        (ptr::null_mut(), RvgpuStatus::InvalidArgument),
    ] {
        let mut info = dirty;
        // SAFETY: a valid out-pointer; the handle is only looked up.
        let s = unsafe { rvgpu_device_loss_info(adapter, &mut info) };
        assert_eq!((s, info), (want, RvgpuDeviceLossInfo::default()));
    }
    // SAFETY: a null output is part of the contract.
    let s = unsafe { rvgpu_device_loss_info(forged, ptr::null_mut()) };
    assert_eq!(s, RvgpuStatus::InvalidArgument);
}
