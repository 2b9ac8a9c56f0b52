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

// --- the registry routines (src/platform/windows.rs `software_key_dword`) -------------------

const STATUS_INVALID_PARAMETER: u64 = 0xC000_000D;
const STATUS_INVALID_HANDLE: u64 = 0xC000_0008;
const STATUS_OBJECT_NAME_NOT_FOUND: u64 = 0xC000_0034;
const STATUS_BUFFER_TOO_SMALL: u64 = 0xC000_0023;
const STATUS_BUFFER_OVERFLOW: u64 = 0x8000_0005;
const PLUGPLAY_REGKEY_DEVICE: u64 = 1;
const PLUGPLAY_REGKEY_DRIVER: u64 = 2;
const KEY_READ: u64 = 0x2_0019;
const KEY_VALUE_PARTIAL_INFORMATION: u64 = 2;
const PAGE_FAULT_IN_NONPAGED_AREA: u32 = 0x50;

/// The NTSTATUS the import `name` returns at PASSIVE_LEVEL.
fn status(m: &Machine, name: &str, args: &[u64]) -> u64 {
    let r = m
        .call_pe_import(name, Irql::Passive, args)
        .expect("imported");
    r.unwrap_or_else(|e| panic!("{name}: {e:?}")) & 0xFFFF_FFFF
}

/// A UNICODE_STRING over `units` (which must outlive its use).
fn unicode(units: &[u16]) -> [u64; 2] {
    let bytes = (units.len() * 2) as u64;
    [bytes | (bytes << 16), units.as_ptr() as u64]
}

/// A PE machine whose adapter's software key holds `Probe` = 0x1234_5678 as a `REG_DWORD`.
fn registry_machine() -> Machine {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.driver = DriverBuild::Pe(None);
    cfg.adapters[0].software_key.set(
        "",
        "Probe",
        rvgpu_simos::adapter::registry::RegValue::dword(0x1234_5678),
    );
    started(cfg)
}

/// Opens the software key of adapter 0: its handle.
fn open_software_key(m: &Machine) -> u64 {
    let pdo = m.adapter_pdo(0).expect("adapter 0");
    let mut handle = 0u64;
    let st = status(
        m,
        "IoOpenDeviceRegistryKey",
        &[
            pdo,
            PLUGPLAY_REGKEY_DRIVER,
            KEY_READ,
            &raw mut handle as u64,
        ],
    );
    assert_eq!(st, 0);
    handle
}

/// `IoOpenDeviceRegistryKey` opens the software key of a PDO only: a NULL device object, an
/// address that is no PDO, no key type or the (unmodelled) hardware key are
/// `STATUS_INVALID_PARAMETER` with no handle written; each open is its own kernel handle, which
/// `ZwClose` closes once; a closed or made-up handle is `STATUS_INVALID_HANDLE` to both
/// `ZwQueryValueKey` and `ZwClose`.
#[test]
fn registry_key_handles_are_per_open_and_closed_once() {
    let m = registry_machine();
    let pdo = m.adapter_pdo(0).expect("adapter 0");
    let not_a_pdo = [0u64; 4];
    for (device, ty) in [
        (0, PLUGPLAY_REGKEY_DRIVER),
        (not_a_pdo.as_ptr() as u64, PLUGPLAY_REGKEY_DRIVER),
        (pdo, 0),
        (pdo, PLUGPLAY_REGKEY_DEVICE),
    ] {
        let mut handle = 0u64;
        let st = status(
            &m,
            "IoOpenDeviceRegistryKey",
            &[device, ty, KEY_READ, &raw mut handle as u64],
        );
        assert_eq!(
            (st, handle),
            (STATUS_INVALID_PARAMETER, 0),
            "{device:#x} {ty}"
        );
    }
    let (a, b) = (open_software_key(&m), open_software_key(&m));
    assert_ne!(a, b);
    assert!(
        a >> 63 == 1 && b >> 63 == 1,
        "kernel handles: {a:#x} {b:#x}"
    );
    assert_eq!(status(&m, "ZwClose", &[a]), 0);
    assert_eq!(status(&m, "ZwClose", &[a]), STATUS_INVALID_HANDLE);
    assert_eq!(status(&m, "ZwClose", &[0x1234]), STATUS_INVALID_HANDLE);
    let name: Vec<u16> = "Probe".encode_utf16().collect();
    let us = unicode(&name);
    let mut info = [0u8; 16];
    let mut len = 0u32;
    let query = |h: u64, info: &mut [u8; 16], len: &mut u32| {
        status(
            &m,
            "ZwQueryValueKey",
            &[
                h,
                us.as_ptr() as u64,
                KEY_VALUE_PARTIAL_INFORMATION,
                info.as_mut_ptr() as u64,
                16,
                std::ptr::from_mut(len) as u64,
            ],
        )
    };
    assert_eq!(query(a, &mut info, &mut len), STATUS_INVALID_HANDLE);
    assert_eq!(query(b, &mut info, &mut len), 0);
    assert_eq!(status(&m, "ZwClose", &[b]), 0);
    no_fault(&m);
}

/// `ZwQueryValueKey` with `KeyValuePartialInformation` as the page answers: an absent value is
/// `STATUS_OBJECT_NAME_NOT_FOUND` with nothing written; a buffer shorter than the fixed part
/// (12 bytes) `STATUS_BUFFER_TOO_SMALL` with nothing written but `ResultLength` (16); one
/// shorter than the whole answer `STATUS_BUFFER_OVERFLOW` with the fixed part only; a whole
/// buffer the value (`TitleIndex` 0, `REG_DWORD`, 4 bytes, the data); another class
/// `STATUS_INVALID_PARAMETER`.
#[test]
fn zw_query_value_key_answers_short_buffers_as_the_page_says() {
    let m = registry_machine();
    let key = open_software_key(&m);
    let query = |name: &str, class: u64, info: Option<&mut [u8; 16]>, length: u64| {
        let units: Vec<u16> = name.encode_utf16().collect();
        let us = unicode(&units);
        let mut len = 0xDEAD_BEEFu32;
        let at = info.map_or(0, |b| b.as_mut_ptr() as u64);
        let st = status(
            &m,
            "ZwQueryValueKey",
            &[
                key,
                us.as_ptr() as u64,
                class,
                at,
                length,
                &raw mut len as u64,
            ],
        );
        (st, len)
    };
    let mut info = [0xAAu8; 16];
    let partial = KEY_VALUE_PARTIAL_INFORMATION;
    assert_eq!(
        query("Absent", partial, Some(&mut info), 16),
        (STATUS_OBJECT_NAME_NOT_FOUND, 0xDEAD_BEEF)
    );
    assert_eq!(
        query("Probe", partial, None, 0),
        (STATUS_BUFFER_TOO_SMALL, 16)
    );
    assert_eq!(
        query("Probe", partial, Some(&mut info), 11),
        (STATUS_BUFFER_TOO_SMALL, 16)
    );
    assert_eq!(info, [0xAA; 16], "nothing written");
    assert_eq!(
        query("Probe", partial, Some(&mut info), 12),
        (STATUS_BUFFER_OVERFLOW, 16)
    );
    assert_eq!(info[..12], [0, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0]);
    assert_eq!(info[12..], [0xAA; 4], "the data is not written");
    assert_eq!(query("probe", partial, Some(&mut info), 16), (0, 16));
    assert_eq!(info[12..], 0x1234_5678u32.to_le_bytes());
    assert_eq!(
        query("Probe", 0, Some(&mut info), 16).0,
        STATUS_INVALID_PARAMETER
    );
    assert_eq!(status(&m, "ZwClose", &[key]), 0);
    no_fault(&m);
}

/// A `ResultLength` the image cannot write is the page fault Windows takes inside the routine:
/// 0x50.
#[test]
fn zw_query_value_key_with_a_null_result_length_faults() {
    let m = registry_machine();
    let key = open_software_key(&m);
    let units: Vec<u16> = "Probe".encode_utf16().collect();
    let us = unicode(&units);
    let mut info = [0u8; 16];
    let _ = m.call_pe_import(
        "ZwQueryValueKey",
        Irql::Passive,
        &[
            key,
            us.as_ptr() as u64,
            KEY_VALUE_PARTIAL_INFORMATION,
            info.as_mut_ptr() as u64,
            16,
            0,
        ],
    );
    let b = bugcheck(&m).expect("bug check");
    assert_eq!(b.code, PAGE_FAULT_IN_NONPAGED_AREA);
}

/// The simulated ntoskrnl reads and writes through the image's pointers as a kernel routine
/// does, unprobed: one into unmapped memory is the page fault Windows takes there, bug check
/// 0x50 naming the address (read 0, write 2 on x64), never a fault of the host. A misaligned one is
/// used where it points.
#[test]
fn ntoskrnl_routines_fault_on_the_images_unmapped_pointers() {
    let m = pe_machine();
    let mut out = [0u8; 9];
    let misaligned = out.as_mut_ptr() as u64 + 1;
    let r = m
        .call_pe_import("KeQueryPerformanceCounter", Irql::Passive, &[misaligned])
        .expect("imported");
    assert!(r.is_ok(), "{r:?}");
    assert_ne!(u64::from_le_bytes(out[1..].try_into().expect("8 bytes")), 0);
    no_fault(&m);
    let r = m
        .call_pe_import("KeQueryPerformanceCounter", Irql::Passive, &[0x10])
        .expect("imported");
    assert!(matches!(r, Err(Stop::Halted)), "{r:?}");
    let b = bugcheck(&m).expect("bug check");
    assert_eq!((b.code, b.params[0], b.params[1]), (0x50, 0x10, 2));
    // The format string of a debug print, read up to its NUL.
    let m = pe_machine();
    let r = m
        .call_pe_import("DbgPrintEx", Irql::Passive, &[0, 0, 0x20])
        .expect("imported");
    assert!(matches!(r, Err(Stop::Halted)), "{r:?}");
    let b = bugcheck(&m).expect("bug check");
    assert_eq!((b.code, b.params[0], b.params[1]), (0x50, 0x20, 0));
}

/// Calls the stub of callback `name` the image was handed, with `args` at `irql`; the bug
/// check it ends in (it must not return).
fn callback_bugcheck(m: &Machine, name: &str, irql: Irql, args: &[u64]) -> BugCheck {
    let r = m
        .call_pe_callback(name, irql, args)
        .unwrap_or_else(|| panic!("the image was handed no {name}"));
    assert!(matches!(r, Err(Stop::Halted)), "{name}: {r:?}");
    bugcheck(m).expect("bug check")
}

/// Read-only memory of this process: the image's store there faults.
static READ_ONLY: [u64; 64] = [0; 64];

/// The Dxgkrnl callbacks take the image's pointers as 24H2 does, after a null check only, but
/// read and write through them by the checked copy: an argument block the image cannot reach
/// is the page fault Windows takes in the callback, bug check 0x50 naming the first address it
/// cannot reach, the access (read 0, write 2) and the callback, never a fault of the host.
#[test]
fn callbacks_fault_on_the_images_unmapped_pointers() {
    // The interrupt report at an unmapped address, from the ISR's level.
    let m = pe_machine();
    let handle = m.pe_device_handle().expect("a callback table");
    let b = callback_bugcheck(&m, "DxgkCbNotifyInterrupt", Irql::Device, &[handle, 0x10]);
    assert_eq!((b.code, b.params[0], b.params[1]), (0x50, 0x10, 0));
    assert_ne!(b.params[2], 0, "the callback is named");
    // A report whose first bytes are mapped and the rest not: the fault is at the first
    // byte past the mapped page.
    let m = pe_machine();
    let handle = m.pe_device_handle().expect("a callback table");
    let page = rvgpu_simos::pe::arena::alloc(4096, rvgpu_simos::pe::arena::Access::ReadWrite)
        .expect("a page");
    let straddling = (page + 4096 - 8) as u64;
    let b = callback_bugcheck(
        &m,
        "DxgkCbNotifyInterrupt",
        Irql::Device,
        &[handle, straddling],
    );
    assert_eq!(
        (b.code, b.params[0], b.params[1]),
        (0x50, (page + 4096) as u64, 0)
    );
    // An out-parameter the image cannot write.
    let m = pe_machine();
    let handle = m.pe_device_handle().expect("a callback table");
    let ro = READ_ONLY.as_ptr() as u64;
    let b = callback_bugcheck(
        &m,
        "DxgkCbGetDeviceInformation",
        Irql::Passive,
        &[handle, ro],
    );
    assert_eq!((b.code, b.params[0], b.params[1]), (0x50, ro, 2));
    // A routine of the feature interface DxgkCbQueryServices handed the image.
    let m = pe_machine();
    let handle = m.pe_device_handle().expect("a callback table");
    let b = callback_bugcheck(&m, "IsFeatureEnabled", Irql::Passive, &[handle, 0x20]);
    assert_eq!((b.code, b.params[0], b.params[1]), (0x50, 0x20, 0));
}

/// The image's own pointers, good ones, reach the same callbacks: the report at a mapped
/// address is taken (no bug check) and the answer lands in the image's block.
#[test]
fn callbacks_take_the_images_mapped_pointers() {
    let m = pe_machine();
    let handle = m.pe_device_handle().expect("a callback table");
    let mut info = [0u64; 32];
    let r = m
        .call_pe_callback(
            "DxgkCbGetDeviceInformation",
            Irql::Passive,
            &[handle, info.as_mut_ptr() as u64],
        )
        .expect("handed");
    assert_eq!(r.ok(), Some(0), "STATUS_SUCCESS");
    assert!(bugcheck(&m).is_none());
    assert_ne!(info[0], 0, "MiniportDeviceContext written");
}
