//! BR-14: Dxgkrnl compares the KMD file's `VS_VERSION_INFO` file version with the device's
//! DriverVersion (the INF's `DriverVer`) when it adds the device, and fails AddDevice with
//! `STATUS_DEVICE_CONFIGURATION_ERROR` on a difference unless both major numbers are below 21
//! ([D24] `DpiFdoValidateKmdAndPnpVersionMatch`, `IsKnownMismatchedVersionedDriver`;
//! `rvgpu_simos::adapter::kmdver`).

mod common;

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

use common::*;
use rvgpu_ddi::NTSTATUS;
use rvgpu_simos::adapter::bringup::STATUS_DEVICE_CONFIGURATION_ERROR;
use rvgpu_simos::adapter::kmdver::{self, file_version, file_version_of, pnp_version};
use rvgpu_simos::adapter::registry::{inf_driver_version, stamped_file_version};
use rvgpu_simos::pe::{build_image, build_umd, DriverBuild};
use rvgpu_simos::{Machine, MachineConfig, Mode, SimError};

/// Loads the driver and starts adapter 0 of `cfg`.
fn start(cfg: MachineConfig) -> (Machine, Result<(), SimError>) {
    let mut m = Machine::new(cfg);
    m.load_driver().expect("load");
    let r = m.start_adapter(0).map(|_| ());
    (m, r)
}

fn cfg(driver_version: Option<&str>, file: Option<u64>) -> MachineConfig {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].driver_version = driver_version.map(str::to_owned);
    cfg.adapters[0].kmd_file_version = file.map(Ok);
    cfg
}

fn v(s: &str) -> u64 {
    pnp_version(s).unwrap_or_else(|e| panic!("{s}: {e:?}"))
}

/// The package as it ships: the INF's DriverVer is the version build.rs stamps into the image,
/// so the adapter starts by matching, not by the exemption.
#[test]
fn br_14_adddevice_accepts_the_packaged_versions() {
    assert_eq!(
        pnp_version(&inf_driver_version()),
        Ok(stamped_file_version()),
        "DriverVer {} and the stamped file version {} differ",
        inf_driver_version(),
        kmdver::dotted(stamped_file_version())
    );
    let (m, r) = start(MachineConfig::single(Mode::Step));
    r.unwrap_or_else(|e| panic!("{e}; log {:#?}", m.driver_log()));
}

static REMOVE_DEVICE_RAN: AtomicBool = AtomicBool::new(false);
static REAL_REMOVE: std::sync::Mutex<rvgpu_ddi::init::PDXGKDDI_REMOVE_DEVICE> =
    std::sync::Mutex::new(None);

/// Stands in for the miniport's RemoveDevice: records the call, then runs the driver's own.
unsafe extern "system" fn remove_device_recorded(ctx: *mut c_void) -> NTSTATUS {
    REMOVE_DEVICE_RAN.store(true, Ordering::SeqCst);
    let real = REAL_REMOVE
        .lock()
        .unwrap()
        .expect("the driver's RemoveDevice");
    // SAFETY: the driver's RemoveDevice with the context its AddDevice returned.
    unsafe { real(ctx) }
}

/// A DriverVer at or above the exemption that differs from the file version fails AddDevice
/// with 0xC0000182; Dxgkrnl undoes the miniport's AddDevice with its RemoveDevice.
#[test]
fn br_14_adddevice_refuses_mismatched_file_version() {
    let mut m = Machine::new(cfg(Some("25.0.0.0"), None));
    m.load_driver_with(|t| {
        *REAL_REMOVE.lock().unwrap() = t.DxgkDdiRemoveDevice;
        t.DxgkDdiRemoveDevice = Some(remove_device_recorded);
    })
    .expect("load");
    refused(
        m.start_adapter(0).map(|_| ()),
        "BR-14",
        STATUS_DEVICE_CONFIGURATION_ERROR,
    );
    assert!(
        REMOVE_DEVICE_RAN.load(Ordering::SeqCst),
        "the miniport's RemoveDevice was not called"
    );
    // The file above the exemption, the INF below it: still refused (both must be below 21).
    let (_, r) = start(cfg(Some("20.0.0.0"), Some(v("21.0.0.0"))));
    refused(r, "BR-14", STATUS_DEVICE_CONFIGURATION_ERROR);
    // Only the build number differs.
    let (_, r) = start(cfg(Some("31.0.101.5590"), Some(v("31.0.101.5591"))));
    refused(r, "BR-14", STATUS_DEVICE_CONFIGURATION_ERROR);
    // Equal versions above the exemption start.
    let (m, r) = start(cfg(Some("31.0.101.5590"), Some(v("31.0.101.5590"))));
    r.unwrap_or_else(|e| panic!("{e}; log {:#?}", m.driver_log()));
}

/// `IsKnownMismatchedVersionedDriver`: a difference is let through when both major numbers are
/// below 21, as an image without a version resource (0.0.0.0) against 0.1.0.0.
#[test]
fn br_14_exemption_holds_below_21() {
    for (inf, file) in [("20.9.9.9", 0), ("0.1.0.0", 0), ("0.1.0.0", v("20.0.0.1"))] {
        let (m, r) = start(cfg(Some(inf), Some(file)));
        r.unwrap_or_else(|e| panic!("{inf} vs {file:#x}: {e}; log {:#?}", m.driver_log()));
    }
}

/// The comparison is not made when `GraphicsDrivers\DisableVersionMismatchCheck` is set, when
/// the device has no DriverVersion, or when the string does not convert.
#[test]
fn br_14_not_compared_without_a_usable_driver_version_or_when_disabled() {
    let mut c = cfg(Some("25.0.0.0"), None);
    c.os.disable_version_mismatch_check = true;
    let (_, r) = start(c);
    r.expect("DisableVersionMismatchCheck set");
    let (_, r) = start(cfg(None, Some(v("25.0.0.0"))));
    r.expect("no DriverVersion property");
    let (_, r) = start(cfg(Some("25.0.0"), Some(0)));
    r.expect("fewer than three dots");
}

/// The images build.rs and umd/build.rs stamp carry the INF's DriverVer as FILEVERSION, read
/// as `DxgkpGetFileVersion` reads it.
#[test]
fn br_14_images_carry_the_driver_ver_as_file_version() {
    let want = v(&inf_driver_version());
    for path in [
        build_image().unwrap_or_else(|e| panic!("{e}")),
        build_umd().unwrap_or_else(|e| panic!("{e}")),
    ] {
        assert_eq!(
            file_version_of(&path),
            Ok(want),
            "{}: FILEVERSION is not DriverVer {}",
            path.display(),
            inf_driver_version()
        );
    }
}

/// Offset of `dwFileVersionMS` in the image file (the `VS_VERSION_INFO` key is at +6 of the
/// block, the version at +48).
fn file_version_offset(data: &[u8]) -> usize {
    let key: Vec<u8> = "VS_VERSION_INFO"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let at = data
        .windows(key.len())
        .position(|w| w == key.as_slice())
        .expect("VS_VERSION_INFO in the image");
    at - 6 + 48
}

/// The shipped image with its FILEVERSION rewritten, run in the emulator: refused with
/// 0xC0000182 against a DriverVer it does not match, started against the one it does.
#[test]
fn br_14_pe_image_with_another_file_version() {
    if let Err(e) = rvgpu_simos::pe::unicorn::api() {
        panic!("{e}");
    }
    let mut data = std::fs::read(build_image().unwrap_or_else(|e| panic!("{e}"))).unwrap();
    let at = file_version_offset(&data);
    let patched = v("25.1.2.3");
    data[at..at + 4].copy_from_slice(&((patched >> 32) as u32).to_le_bytes());
    data[at + 4..at + 8].copy_from_slice(&(patched as u32).to_le_bytes());
    assert_eq!(file_version(&data), Ok(patched));
    let package = pe::package_with_driver_image("package-v25", &data);
    for (inf, ok) in [("25.1.2.3", true), (inf_driver_version().as_str(), false)] {
        let mut c = cfg(Some(inf), None);
        c.driver = DriverBuild::Pe(Some(package.dir.clone()));
        let (m, r) = start(c);
        if ok {
            r.unwrap_or_else(|e| panic!("{inf}: {e}; log {:#?}", m.driver_log()));
        } else {
            refused(r, "BR-14", STATUS_DEVICE_CONFIGURATION_ERROR);
        }
    }
}
