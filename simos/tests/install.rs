//! IN-, CA- and CI- rules (docs/windows-bringup.md §1): the test-signed package installed on
//! a simulated machine as `pnputil /add-driver rvgpu.inf /install` installs it, and the
//! service started as Windows starts it. The package installs and loads; each broken package
//! or machine is refused with Windows' code, and a refused install leaves the registry and the
//! driver store as they were.

use std::path::{Path, PathBuf};

use rvgpu_simos::adapter::registry::{inf_driver_version, RegValue, REG_EXPAND_SZ};
use rvgpu_simos::install::codes::*;
use rvgpu_simos::install::package::{self, remake, Catalog, TestPackage};
use rvgpu_simos::install::registry::{display_software_key, DISPLAY_CLASS_GUID, SERVICES};
use rvgpu_simos::install::{Refusal, System, FILE_REPOSITORY};
use rvgpu_simos::pe::DriverBuild;
use rvgpu_simos::{Machine, MachineConfig, Mode, SimError};

#[path = "../../tests/common/scratch.rs"]
mod scratch;
use scratch::Scratch;

const BUILD_24H2: u32 = 26100;

fn pkg() -> TestPackage {
    package::test_signed().unwrap_or_else(|e| panic!("{e}"))
}

/// `name` in this process's scratch directory (each test picks names of its own).
fn tmp(name: &str) -> PathBuf {
    static DIR: std::sync::OnceLock<Scratch> = std::sync::OnceLock::new();
    DIR.get_or_init(|| Scratch::new("install")).join(name)
}

/// A test machine (the package's certificate in Root and TrustedPublisher, test signing on)
/// with a driver store of its own under `name`.
fn machine(name: &str) -> System {
    let mut s = System::test_machine(BUILD_24H2, &pkg().certificate().unwrap());
    s.store_root = tmp(name).join("store");
    let _ = std::fs::remove_dir_all(&s.store_root);
    s
}

fn sz(s: &str) -> RegValue {
    let mut units: Vec<u16> = s.encode_utf16().collect();
    units.push(0);
    RegValue {
        ty: rvgpu_simos::adapter::registry::REG_SZ,
        data: units.iter().flat_map(|u| u.to_le_bytes()).collect(),
    }
}

/// A copy of the package under `name`, changed by `edit`, its catalog as `catalog` says.
fn changed(name: &str, catalog: Catalog<'_>, edit: impl FnOnce(&Path)) -> PathBuf {
    remake(&pkg(), &tmp(name).join("package"), catalog, edit)
        .unwrap_or_else(|e| panic!("{e}"))
        .dir
}

/// [`changed`], the package's INF with `from` (which it must contain) replaced by `to`.
fn inf_changed(name: &str, catalog: Catalog<'_>, from: &str, to: &str) -> PathBuf {
    changed(name, catalog, |d| {
        let path = d.join("rvgpu.inf");
        let inf = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(inf.contains(from), "the INF has no {from:?}");
        std::fs::write(&path, inf.replace(from, to)).unwrap_or_else(|e| panic!("{e}"));
    })
}

const RESIGN: Catalog<'static> = Catalog::Resign { leave_out: &[] };

/// Installs `dir` on `system` and expects `code` from `rule`; the registry and the driver
/// store are as they were.
fn refused(mut system: System, dir: &Path, rule: &str, code: u32) -> Refusal {
    let registry = system.registry.clone();
    let store = system.driver_store.clone();
    let r = match system.install(dir) {
        Err(r) => r,
        Ok(i) => panic!(
            "expected {rule} {code:#010x}, installed {}",
            i.package.folder
        ),
    };
    assert_eq!((r.rule, r.code), (rule, code), "{r}");
    assert_eq!(system.registry, registry, "the registry changed: {r}");
    assert_eq!(system.driver_store, store, "the driver store changed: {r}");
    assert!(
        !system.store_root.exists() || std::fs::read_dir(&system.store_root).unwrap().count() == 0,
        "a driver-store folder was staged: {r}"
    );
    r
}

fn flip(path: &Path, at: usize) {
    let mut d = std::fs::read(path).unwrap();
    d[at] ^= 0x01;
    std::fs::write(path, d).unwrap();
}

/// The package installs: the service key, the adapter's software key (the INF's values,
/// `UserModeDriverName` expanded to the driver-store folder, the Features\37 opt-in, the
/// driver version), the device's hardware key; and the service's image loads.
#[test]
fn in_the_test_signed_package_installs_and_its_image_loads() {
    let mut s = machine("ok");
    let installed = s.install(&pkg().dir).unwrap_or_else(|r| panic!("{r}"));
    let folder = &installed.package.folder;
    assert!(folder.starts_with("rvgpu.inf_amd64_"), "{folder}");
    let svc = format!(r"{SERVICES}\rvgpu");
    assert_eq!(s.registry.get(&svc, "Type"), Some(&RegValue::dword(1)));
    assert_eq!(s.registry.get(&svc, "Start"), Some(&RegValue::dword(3)));
    let image_path = s.registry.get(&svc, "ImagePath").unwrap();
    assert_eq!(image_path.ty, REG_EXPAND_SZ);
    let mut want = sz(&format!(
        r"\SystemRoot\System32\DriverStore\FileRepository\{folder}\rvgpu.sys"
    ));
    want.ty = REG_EXPAND_SZ;
    assert_eq!(image_path, &want);

    let soft = display_software_key(0);
    assert!(soft.contains(DISPLAY_CLASS_GUID));
    let umd = format!(r"{FILE_REPOSITORY}\{folder}\rvgpu_umd.dll");
    assert_eq!(
        s.registry.get(&soft, "UserModeDriverName"),
        Some(&RegValue::multi_sz(&[&umd, &umd, &umd, &umd]))
    );
    assert_eq!(
        s.registry.get(&format!(r"{soft}\Features\37"), "Enabled"),
        Some(&RegValue::dword(1))
    );
    assert_eq!(
        s.registry.get(&soft, "DriverVersion"),
        Some(&sz(&inf_driver_version()))
    );
    let msi = s.registry.0.values.iter().find(|(k, n, _)| {
        k.ends_with(r"Interrupt Management\MessageSignaledInterruptProperties")
            && n == "MSISupported"
    });
    assert!(
        msi.is_some_and(|(k, _, v)| k.contains("Device Parameters") && *v == RegValue::dword(1)),
        "{msi:?}"
    );
    let keys = rvgpu_simos::install::AdapterKeys::read(&s, &installed.software_key_path);
    assert_eq!(keys.driver_version, Some(inf_driver_version()));

    let image = s.load(&installed).unwrap_or_else(|r| panic!("{r}"));
    assert_eq!(image, s.store_root.join(folder).join("rvgpu.sys"));
    assert_eq!(
        std::fs::read(&image).unwrap(),
        std::fs::read(pkg().dir.join("rvgpu.sys")).unwrap()
    );
}

/// A machine of the Linux build starts from the registry the INF stage wrote: the adapter's
/// defaults are no values of the test code's own.
#[test]
fn in_adapter_defaults_are_what_the_install_wrote() {
    let mut s = System::stock(BUILD_24H2);
    let path = s
        .install_inf_only(&rvgpu_simos::install::stamped_repository_inf())
        .unwrap_or_else(|r| panic!("{r}"));
    let keys = rvgpu_simos::install::AdapterKeys::read(&s, &path);
    let a = &MachineConfig::single(Mode::Step).adapters[0];
    assert_eq!(a.software_key, keys.software_key);
    assert_eq!(a.driver_version, keys.driver_version);
    assert_eq!(a.user_mode_driver_name, keys.user_mode_driver_name);
}

/// CA-04: a file changed after the catalog was signed is not found in it by its hash.
#[test]
fn ca_04_a_file_changed_after_signing_is_refused() {
    let umd = changed("changed", Catalog::Keep, |d| {
        flip(&d.join("rvgpu_umd.dll"), 0x1000)
    });
    // The INF is a member too: an edit to it after signing is caught the same way.
    let inf = inf_changed(
        "changed-inf",
        Catalog::Keep,
        "TypesSupported,%REG_DWORD%,7",
        "TypesSupported,%REG_DWORD%,3",
    );
    for (name, dir, member) in [
        ("changed", umd, "rvgpu_umd.dll"),
        ("changed-inf", inf, "rvgpu.inf"),
    ] {
        let r = refused(machine(name), &dir, "CA-04", ERROR_FILE_HASH_NOT_IN_CATALOG);
        assert!(r.why.contains(member), "{name}: {r}");
    }
}

/// CA-04: a file the INF copies that the catalog does not list.
#[test]
fn ca_04_a_file_missing_from_the_catalog_is_refused() {
    let dir = changed(
        "missing",
        Catalog::Resign {
            leave_out: &["rvgpu_umd.dll"],
        },
        |_| {},
    );
    let r = refused(
        machine("missing"),
        &dir,
        "CA-04",
        ERROR_FILE_HASH_NOT_IN_CATALOG,
    );
    assert!(r.why.contains("rvgpu_umd.dll"), "{r}");
}

/// CA-01: an unsigned catalog (rvgpu-cat's output before osslsigncode signs it).
#[test]
fn ca_01_an_unsigned_catalog_is_refused() {
    let dir = changed("unsigned", Catalog::Keep, |d| {
        let (_, files) = rvgpu_cat::package_files(d, "rvgpu.inf").unwrap();
        let der = rvgpu_cat::write_catalog(&files, &[], std::time::SystemTime::now()).unwrap();
        std::fs::write(d.join("rvgpu.cat"), der).unwrap();
    });
    refused(machine("unsigned"), &dir, "CA-01", TRUST_E_NOSIGNATURE);
}

/// CA-01: a signed catalog changed afterwards: the signed digest does not match.
#[test]
fn ca_01_a_catalog_changed_after_signing_is_refused() {
    let dir = changed("tampered", Catalog::Keep, |d| {
        // A byte of the trust list's list identifier (well inside the signed content).
        flip(&d.join("rvgpu.cat"), 90);
    });
    refused(machine("tampered"), &dir, "CA-01", TRUST_E_BAD_DIGEST);
}

/// CA-02: the test certificate is not in the Root store.
#[test]
fn ca_02_an_untrusted_root_is_refused() {
    let mut s = machine("untrusted");
    s.certs.root.clear();
    refused(s, &pkg().dir, "CA-02", CERT_E_UNTRUSTEDROOT);
    // A stock machine: neither store holds it.
    let mut s = System::stock(BUILD_24H2);
    s.store_root = tmp("stock").join("store");
    refused(s, &pkg().dir, "CA-02", CERT_E_UNTRUSTEDROOT);
}

/// CA-03: the root is trusted but the publisher is not in TrustedPublisher: a silent install
/// cannot ask the user.
#[test]
fn ca_03_an_untrusted_publisher_is_refused() {
    let mut s = machine("publisher");
    s.certs.trusted_publisher.clear();
    refused(
        s,
        &pkg().dir,
        "CA-03",
        ERROR_AUTHENTICODE_TRUST_NOT_ESTABLISHED,
    );
}

/// IN-09: an INF error InfVerif reports (a CopyFiles section the INF lacks), signed as it
/// is: refused before anything is staged.
#[test]
fn in_09_an_inf_that_names_a_missing_section_is_refused() {
    let dir = inf_changed(
        "inf-section",
        RESIGN,
        "CopyFiles    = Rvgpu.Files.Driver, Rvgpu.Files.UserMode",
        "CopyFiles    = Rvgpu.Files.Driver, Rvgpu.Files.Missing",
    );
    refused(
        machine("inf-section"),
        &dir,
        "IN-09",
        ERROR_SECTION_NOT_FOUND,
    );
}

/// IN-11: a registry write outside HKR (a global location) is an InfVerif error of a
/// Universal INF.
#[test]
fn in_11_a_global_registry_write_is_refused() {
    let dir = inf_changed(
        "inf-hklm",
        RESIGN,
        "HKR,Features\\37,Enabled,%REG_DWORD%,1",
        "HKLM,SOFTWARE\\rvgpu,Enabled,%REG_DWORD%,1",
    );
    let r = refused(machine("inf-hklm"), &dir, "IN-11", ERROR_GENERAL_SYNTAX);
    assert_eq!(r.stage, "InfVerif");
}

/// IN-03, IN-08: a package of another class, or for another device, or for a later build,
/// installs on nothing.
#[test]
fn in_03_in_08_class_and_hardware_id_must_match() {
    for (name, from, to, rule, code) in [
        (
            "class",
            "Class       = Display",
            "Class       = System",
            "IN-03",
            ERROR_INVALID_CLASS,
        ),
        (
            "hwid",
            "PCI\\VEN_1234&DEV_5256",
            "PCI\\VEN_1234&DEV_5257",
            "IN-08",
            ERROR_NO_SUCH_DEVINST,
        ),
    ] {
        let dir = inf_changed(name, RESIGN, from, to);
        refused(machine(name), &dir, rule, code);
    }
    // The models section asks for build 26100: a 22631 machine matches none.
    let mut s = machine("build");
    s.build = 22631;
    refused(s, &pkg().dir, "IN-08", ERROR_NO_SUCH_DEVINST);
}

/// CI-02: installed, but test signing is off: code integrity refuses the test-signed image
/// (STATUS_INVALID_IMAGE_HASH, Code 52) when the service starts.
#[test]
fn ci_02_no_test_signing_refuses_the_image() {
    let mut s = machine("testsigning");
    s.test_signing = false;
    let installed = s.install(&pkg().dir).unwrap_or_else(|r| panic!("{r}"));
    let r = s
        .load(&installed)
        .expect_err("a test-signed image without test signing");
    assert_eq!(
        (r.rule, r.code, r.problem),
        (
            "CI-02",
            STATUS_INVALID_IMAGE_HASH,
            Some(CM_PROB_UNSIGNED_DRIVER)
        )
    );
}

/// CI-01: the image in the driver store changed after the install: its hash is in no
/// catalog (STATUS_INVALID_IMAGE_HASH, Code 52).
#[test]
fn ci_01_an_image_modified_after_install_is_refused() {
    let mut s = machine("modified");
    let installed = s.install(&pkg().dir).unwrap_or_else(|r| panic!("{r}"));
    flip(&installed.package.dir.join("rvgpu.sys"), 0x1000);
    let r = s.load(&installed).expect_err("a changed image");
    assert_eq!(
        (r.rule, r.code, r.problem),
        (
            "CI-01",
            STATUS_INVALID_IMAGE_HASH,
            Some(CM_PROB_UNSIGNED_DRIVER)
        )
    );
}

/// LD-04, LD-05 through the install: a signed package whose image has a writable and
/// executable section, or imports a name ntoskrnl does not export, installs, and the kernel
/// loader refuses its image.
#[test]
fn ld_04_ld_05_the_loader_refuses_a_signed_bad_image() {
    let sys = std::fs::read(pkg().dir.join("rvgpu.sys")).unwrap();
    let nt = u32::from_le_bytes(sys[0x3C..0x40].try_into().unwrap()) as usize;
    let sections = nt + 24 + u16::from_le_bytes([sys[nt + 20], sys[nt + 21]]) as usize;
    let mut wx = sys.clone();
    let text = (0..16)
        .map(|i| sections + 40 * i)
        .find(|&s| wx[s..s + 8].starts_with(b".text"))
        .unwrap();
    wx[text + 39] |= 0x80; // IMAGE_SCN_MEM_WRITE
    let mut import = sys.clone();
    let at = import
        .windows(b"KeBugCheckEx\0".len())
        .position(|w| w == b"KeBugCheckEx\0")
        .unwrap();
    import[at..at + 12].copy_from_slice(b"KeBugCheckXx");
    for (name, data, rule, code) in [
        (
            "wx",
            wx,
            "LD-04",
            rvgpu_simos::pe::loader::STATUS_INVALID_IMAGE_FORMAT,
        ),
        (
            "import",
            import,
            "LD-05",
            rvgpu_simos::pe::loader::STATUS_DRIVER_ENTRYPOINT_NOT_FOUND,
        ),
    ] {
        let dir = changed(name, RESIGN, |d| {
            std::fs::write(d.join("rvgpu.sys"), &data).unwrap()
        });
        let mut s = machine(name);
        let installed = s.install(&dir).unwrap_or_else(|r| panic!("{name}: {r}"));
        let r = s.load(&installed).expect_err(name);
        assert_eq!((r.stage, r.rule, r.code), ("loader", rule, code), "{r}");
    }
}

/// BR-14 from the package: DriverVer stamped above the exemption (32.x, the numbering WDDM
/// drivers use) while the image says otherwise: the install succeeds and Dxgkrnl's AddDevice
/// refuses with 0xC0000182, reading DriverVersion from the registry the install wrote.
#[test]
fn br_14_driver_ver_unlike_the_file_version_fails_add_device() {
    if let Err(e) = rvgpu_simos::pe::unicorn::api() {
        panic!("{e}");
    }
    let dir = changed("driverver", RESIGN, |d| {
        let inf = std::fs::read_to_string(d.join("rvgpu.inf")).unwrap();
        let stamped = inf
            .lines()
            .map(|l| {
                if l.starts_with("DriverVer") {
                    "DriverVer   = 01/01/2026,32.0.101.0".to_owned()
                } else {
                    l.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(d.join("rvgpu.inf"), stamped).unwrap();
    });
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.driver = DriverBuild::Pe(Some(dir));
    let mut m = Machine::new(cfg);
    m.load_driver().unwrap_or_else(|e| panic!("{e}"));
    match m.start_adapter(0) {
        Err(SimError::StartRefused { rule, status, .. }) => {
            assert_eq!(rule, "BR-14");
            assert_eq!(
                status,
                rvgpu_simos::adapter::bringup::STATUS_DEVICE_CONFIGURATION_ERROR
            );
        }
        other => panic!("expected BR-14, got {other:?}"),
    }
}

/// A machine whose package is refused never maps the image: the start fails with the
/// install's code.
#[test]
fn ca_04_a_machine_with_a_changed_package_does_not_load() {
    let dir = changed("machine", Catalog::Keep, |d| {
        flip(&d.join("rvgpu.sys"), 0x1000)
    });
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.driver = DriverBuild::Pe(Some(dir));
    let mut m = Machine::new(cfg);
    match m.load_driver() {
        Err(SimError::StartRefused { rule, status, .. }) => {
            assert_eq!(
                (rule, status as u32),
                ("CA-04", ERROR_FILE_HASH_NOT_IN_CATALOG)
            );
        }
        other => panic!("expected CA-04, got {other:?}"),
    }
    assert!(m.pe_image().is_none(), "the image was mapped");
}
