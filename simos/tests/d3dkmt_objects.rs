//! D3DKMT objects as Windows has them, each rule from Wine's `dlls/win32u/tests/d3dkmt.c`,
//! whose plain `ok()` lines pass on Windows (`check_d3dkmt_local`, `is_d3dkmt_handle`,
//! `test_D3DKMTCreateSynchronizationObject`, `test_D3DKMTCreateAllocation`,
//! `test_D3DKMTShareObjects`):
//! - a local handle has a top bit set (`handle & 0xc0000000`) and its low six bits clear;
//! - the next handle of a process is 0x40 above its last, whatever the object, and a
//!   destroyed handle is not handed out again;
//! - a destroy of a handle not in the table (destroyed before, 0, an NT handle) is
//!   STATUS_INVALID_PARAMETER;
//! - only an object created for NT sharing can be shared; its NT handle is not a D3DKMT
//!   handle; an NT handle that is 0 or closed opens nothing (STATUS_INVALID_HANDLE).

mod common;

use common::*;
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::{MachineConfig, Mode};
use rvgpu_umd::kmt::{Kmt, KmtHandle, NtStatus};

const STATUS_INVALID_HANDLE: NtStatus = NtStatus(0xC000_0008_u32 as i32);
const STATUS_INVALID_PARAMETER: NtStatus = NtStatus(0xC000_000D_u32 as i32);

/// `check_d3dkmt_local` without the sequence.
fn assert_local(h: KmtHandle) {
    assert_ne!(h & 0xC000_0000, 0, "{h:#x}: no top bit set");
    assert!(h != 0 && h & 0x3F == 0, "{h:#x}: low six bits not clear");
}

#[test]
fn d3dkmt_local_handles_have_a_top_bit_set_and_the_low_six_bits_clear() {
    let m = started(MachineConfig::single(Mode::Step));
    let (p, k) = user_process(&m);
    assert_local(p.device);
    let (fence, _) = okk(&m, k.create_monitored_fence(0));
    let context = okk(&m, k.create_context(0));
    let alloc = okk(&m, k.create_allocation(4096));
    let paging = okk(&m, k.create_paging_queue(0));
    let native = okk(&m, k.create_native_fence(0));
    for h in [
        fence,
        context,
        alloc.handle,
        paging.handle,
        paging.fence,
        native.kmt,
    ] {
        assert_local(h);
    }
    // Both top bits: a caller that sign-extends or truncates a handle fails here.
    assert!(i32::try_from(p.device).is_err(), "{:#x}", p.device);
    no_fault(&m);
}

#[test]
fn d3dkmt_next_local_handle_of_a_process_is_0x40_above_its_last_and_never_reused() {
    let m = started(MachineConfig::single(Mode::Step));
    let (a, ka) = user_process(&m);
    let mut next = a.device + 0x40;
    let (f1, _) = okk(&m, ka.create_monitored_fence(0));
    assert_eq!(f1, next);
    next += 0x40;
    // Another process's objects do not move this process's sequence.
    let (b, kb) = user_process(&m);
    let (fb, _) = okk(&m, kb.create_monitored_fence(0));
    assert_ne!(fb, next);
    assert_eq!(fb, b.device + 0x40);
    // "local handles are monotonically increasing": a destroyed handle is not handed out
    // again, whatever kind of object comes next.
    okk(&m, ka.destroy_monitored_fence(f1));
    let c = okk(&m, ka.create_context(0));
    assert_eq!(c, next);
    next += 0x40;
    let (f2, _) = okk(&m, ka.create_monitored_fence(0));
    assert_eq!(f2, next);
    next += 0x40;
    let alloc = okk(&m, ka.create_allocation(4096));
    assert_eq!(alloc.handle, next);
    no_fault(&m);
}

/// A kind of D3DKMT object: how to make one and how to destroy it by handle.
type Kind = (
    &'static str,
    fn(&SimKmt<'_>) -> Result<KmtHandle, NtStatus>,
    fn(&SimKmt<'_>, KmtHandle) -> Result<(), NtStatus>,
);

#[test]
fn d3dkmt_destroying_an_object_twice_or_by_zero_is_invalid_parameter() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, k) = user_process(&m);
    let kinds: [Kind; 3] = [
        (
            "monitored fence",
            |k| k.create_monitored_fence(0).map(|(h, _)| h),
            |k, h| k.destroy_monitored_fence(h),
        ),
        (
            "native fence",
            |k| k.create_native_fence(0).map(|f| f.kmt),
            |k, h| k.destroy_native_fence(h),
        ),
        (
            "allocation",
            |k| k.create_allocation(4096).map(|a| a.handle),
            |k, h| k.destroy_allocation(h),
        ),
    ];
    for (what, make, destroy) in kinds {
        let h = okk(&m, make(&k));
        okk(&m, destroy(&k, h));
        assert_eq!(
            destroy(&k, h),
            Err(STATUS_INVALID_PARAMETER),
            "{what} twice"
        );
        assert_eq!(destroy(&k, 0), Err(STATUS_INVALID_PARAMETER), "{what} 0");
    }
    no_fault(&m);
}

#[test]
fn d3dkmt_only_objects_created_for_nt_sharing_are_shared_and_nt_handles_are_not_d3dkmt_handles() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, k) = user_process(&m);
    // "D3DKMTShareObjects requires NtSecuritySharing".
    let private = okk(&m, k.create_native_fence(0));
    assert_eq!(
        k.share_native_fence(private.kmt),
        Err(STATUS_INVALID_PARAMETER)
    );
    let shared = okk(&m, k.create_shareable_native_fence(0));
    let nt = okk(&m, k.share_native_fence(shared.kmt));
    // "handle isn't a D3DKMT_HANDLE".
    assert_eq!(nt & 0xC000_0000, 0, "{nt:#x}");
    // "cannot destroy the handle": an NT handle is not in the D3DKMT table.
    assert_eq!(
        k.destroy_native_fence(nt as KmtHandle),
        Err(STATUS_INVALID_PARAMETER)
    );
    // The fence opens from the NT handle; a zero or closed NT handle opens nothing.
    let opened = okk(&m, k.open_native_fence(nt));
    assert_local(opened.kmt);
    assert_eq!(
        k.open_native_fence(0).map(|_| ()),
        Err(STATUS_INVALID_HANDLE)
    );
    okk(&m, k.close_nt_handle(nt));
    assert_eq!(
        k.open_native_fence(nt).map(|_| ()),
        Err(STATUS_INVALID_HANDLE)
    );
    assert_eq!(k.close_nt_handle(nt), Err(STATUS_INVALID_HANDLE));
    // Sharing a destroyed handle is refused as a destroy of it is.
    okk(&m, k.destroy_native_fence(opened.kmt));
    okk(&m, k.destroy_native_fence(shared.kmt));
    assert_eq!(
        k.share_native_fence(shared.kmt),
        Err(STATUS_INVALID_PARAMETER)
    );
    no_fault(&m);
}
