//! `rvgpu.sys` itself under the simulated OS — the loader, the simulated ntoskrnl's
//! rules for the image's imports, and what exists only in the image (DriverEntry, the Rust
//! DxgkInitialize, the Windows platform). The DDI behaviour of the image is tested by the
//! suites that rerun against it (`against_the_pe_image` in bringup, bringup_rules, native_fence,
//! interrupt_path, usermode_submission, fence_logs, tdr, faults, low_resources, isolation).

mod common;

use common::*;
use rvgpu_simos::pe::{build_image, cpu::Stop, DriverBuild, PeImage};
use rvgpu_simos::{BugCheck, Irql, LowResources, Machine, MachineConfig, Mode};

const BAD_POOL_CALLER: u32 = 0xC2;
const VERIFIER: u32 = 0xC4;
const IRQL_NOT_LESS_OR_EQUAL: u32 = 0xA;
/// The image's pool tag, 'Rvgp' (src/rt.rs).
const TAG: u64 = u32::from_le_bytes(*b"Rvgp") as u64;
const POOL_FLAG_NON_PAGED: u64 = 0x40;

fn image() -> std::path::PathBuf {
    build_image().unwrap_or_else(|e| panic!("{e}"))
}

fn pe_machine() -> Machine {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.driver = DriverBuild::Pe(None);
    started(cfg)
}

fn bugcheck(m: &Machine) -> Option<BugCheck> {
    m.bugcheck()
}

/// The image binds every import to the simulated kernel: the 24 routines ntoskrnl runs for it
/// and the C-library routines the compiler calls (`memcpy`, `memmove`, `memset`, `memcmp`), and
/// nothing from any other module.
#[test]
fn image_binds_its_ntoskrnl_imports() {
    let img = PeImage::load(&image()).unwrap_or_else(|e| panic!("{e}"));
    let imports = img.imports();
    assert_eq!(imports.len(), 28, "{imports:?}");
    assert!(
        imports.iter().all(|i| i.starts_with("ntoskrnl.exe!")),
        "{imports:?}"
    );
    for needed in [
        "ZwLoadDriver",
        "IoGetDeviceObjectPointer",
        "IoBuildDeviceIoControlRequest",
        "IofCallDriver",
        "KeBugCheckEx",
        "ExAllocatePool2",
        "KeSetTimerEx",
        "EtwRegister",
        "EtwWriteTransfer",
        "memcpy",
    ] {
        assert!(
            imports.iter().any(|i| i.ends_with(&format!("!{needed}"))),
            "{needed} not imported: {imports:?}"
        );
    }
    assert!(img.special_instructions() > 0, "no CR8 access found");
}

/// An import the simulated kernel does not implement fails the load with its name.
#[test]
fn unknown_import_fails_the_load_with_its_name() {
    pe::assert_unknown_import_refused(
        PeImage::load,
        &image(),
        ("KeBugCheckEx", "KeBugCheckXx"),
        "renamed-import.sys",
        "ntoskrnl.exe!KeBugCheckXx",
    );
}

/// DriverEntry registers through dxgkrnl's own path (the IOCTL answer is the simulated
/// DxgkInitialize), with the WDDM 3.2 table; the start-up rules then pass.
#[test]
fn driver_entry_registers_through_the_ioctl() {
    let m = pe_machine();
    let log = m.driver_log();
    assert!(
        log.iter()
            .any(|l| l.text.contains("registering DDI table version 0x11007")),
        "{log:?}"
    );
    assert!(m.pe_image().is_some());
    no_fault(&m);
}

/// `KeBugCheckEx` from the image stops the machine with the image's code and parameters and
/// does not return.
#[test]
fn ke_bug_check_ex_is_the_machines_bug_check() {
    let m = pe_machine();
    let r = m
        .call_pe_import(
            "KeBugCheckEx",
            Irql::Passive,
            &[0x5256_4750, 0x11, 0x22, 0x33, 0x44],
        )
        .expect("imported");
    assert!(matches!(r, Err(Stop::Halted)), "{r:?}");
    let b = bugcheck(&m).expect("bug check");
    assert_eq!((b.code, b.params), (0x5256_4750, [0x11, 0x22, 0x33, 0x44]));
}

/// `ExAllocatePool2` with a zero tag is 0xC2/0x9B (BAD_POOL_CALLER: an untrackable tag).
#[test]
fn pool_allocation_with_a_zero_tag_bugchecks() {
    let m = pe_machine();
    let _ = m.call_pe_import(
        "ExAllocatePool2",
        Irql::Passive,
        &[POOL_FLAG_NON_PAGED, 64, 0],
    );
    let b = bugcheck(&m).expect("bug check");
    assert_eq!((b.code, b.params[0]), (BAD_POOL_CALLER, 0x9B));
}

/// Freeing with another tag than the allocation's is 0xC2/0x0A; a good free is quiet.
#[test]
fn pool_free_with_the_wrong_tag_bugchecks() {
    let m = pe_machine();
    let p = m
        .call_pe_import(
            "ExAllocatePool2",
            Irql::Dispatch,
            &[POOL_FLAG_NON_PAGED, 64, TAG],
        )
        .expect("imported")
        .expect("allocated");
    assert_ne!(p, 0);
    // Zeroed, as ExAllocatePool2 without POOL_FLAG_UNINITIALIZED returns it.
    // SAFETY: 64 bytes the simulated kernel just allocated for the image.
    assert!(unsafe { std::slice::from_raw_parts(p as *const u8, 64) }
        .iter()
        .all(|b| *b == 0));
    let _ = m.call_pe_import("ExFreePoolWithTag", Irql::Passive, &[p, TAG + 1]);
    let b = bugcheck(&m).expect("bug check");
    assert_eq!((b.code, b.params[0]), (BAD_POOL_CALLER, 0x0A));
}

/// Non-paged pool above DISPATCH_LEVEL is Verifier's 0xC4/0x02; under the low-resources
/// simulation the allocation is NULL instead.
#[test]
fn pool_rules_follow_verifier() {
    let m = pe_machine();
    m.set_low_resources(LowResources::FailNth(0));
    let r = m
        .call_pe_import(
            "ExAllocatePool2",
            Irql::Passive,
            &[POOL_FLAG_NON_PAGED, 64, TAG],
        )
        .expect("imported");
    assert!(matches!(r, Ok(0)), "{r:?}");
    m.set_low_resources(LowResources::Off);
    no_fault(&m);
    let _ = m.call_pe_import(
        "ExAllocatePool2",
        Irql::Device,
        &[POOL_FLAG_NON_PAGED, 64, TAG],
    );
    let b = bugcheck(&m).expect("bug check");
    assert_eq!((b.code, b.params[0]), (VERIFIER, 0x02));
}

/// `KeSetTimerEx` above DISPATCH_LEVEL is 0xA, as on Windows.
#[test]
fn timer_above_dispatch_is_irql_not_less_or_equal() {
    let m = pe_machine();
    let timer = Box::new([0u64; 8]);
    let _ = m.call_pe_import(
        "KeSetTimerEx",
        Irql::Device,
        &[timer.as_ptr() as u64, (-10_000i64) as u64, 1, 0],
    );
    let b = bugcheck(&m).expect("bug check");
    assert_eq!(b.code, IRQL_NOT_LESS_OR_EQUAL);
}

/// A fault in the image's code is the bug check Windows raises for it (0x50), not a crash of
/// the host: `memcpy` (run in the emulated processor, as ntoskrnl's is) from an unmapped page.
#[test]
fn fault_in_the_image_is_page_fault_in_nonpaged_area() {
    let m = pe_machine();
    let dst = [0u8; 16];
    let r = m
        .call_pe_import("memcpy", Irql::Passive, &[dst.as_ptr() as u64, 0x10, 16])
        .expect("imported");
    assert!(matches!(r, Err(Stop::Halted)), "{r:?}");
    let b = bugcheck(&m).expect("bug check");
    assert_eq!((b.code, b.params[0]), (0x50, 0x10));
}

/// `memcpy`, `memmove` (both directions) and `memset` as the image gets them.
#[test]
fn c_library_routines() {
    let m = pe_machine();
    let call = |name: &str, args: &[u64]| {
        m.call_pe_import(name, Irql::Passive, args)
            .expect("imported")
            .expect("ran")
    };
    let mut buf: Vec<u8> = (0..32).collect();
    let p = buf.as_mut_ptr() as u64;
    assert_eq!(call("memmove", &[p + 4, p, 16]), p + 4);
    assert_eq!(&buf[4..20], &(0..16).collect::<Vec<u8>>()[..]);
    call("memmove", &[p, p + 4, 16]);
    assert_eq!(&buf[0..16], &(0..16).collect::<Vec<u8>>()[..]);
    assert_eq!(call("memset", &[p, 0xAB, 8]), p);
    assert!(buf[..8].iter().all(|b| *b == 0xAB));
    let b = [1u8, 2, 4];
    let mut dst = [0u8; 3];
    call("memcpy", &[dst.as_mut_ptr() as u64, b.as_ptr() as u64, 3]);
    assert_eq!(dst, b);
    no_fault(&m);
}

/// Pool the image still holds after `DxgkDdiUnload` is Verifier's 0xC4/0x62; a clean unload
/// leaves none.
#[test]
fn unload_checks_the_images_pool() {
    let mut m = pe_machine();
    let r = m.stop_adapter(0);
    ok(&m, r);
    let r = m.remove_adapter(0);
    ok(&m, r);
    let held = m.pe_image().expect("image").pool_in_use();
    let r = m.unload();
    ok(&m, r);
    assert_eq!(
        m.pe_image().expect("image").pool_in_use(),
        (0, 0),
        "before unload: {held:?}"
    );

    let mut m = pe_machine();
    let r = m.stop_adapter(0);
    ok(&m, r);
    let r = m.remove_adapter(0);
    ok(&m, r);
    let _leak = m
        .call_pe_import(
            "ExAllocatePool2",
            Irql::Passive,
            &[POOL_FLAG_NON_PAGED, 64, TAG],
        )
        .expect("imported")
        .expect("allocated");
    let r = m.unload();
    assert!(r.is_err());
    let b = bugcheck(&m).expect("bug check");
    assert_eq!((b.code, b.params[0]), (VERIFIER, 0x62));
}
