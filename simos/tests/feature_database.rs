//! BR-110..112: Dxgkrnl's feature database as 24H2, 25H2 and 26H1 build it for native fences
//! (`rvgpu_simos::dxgkrnl::features::configure`, `rvgpu_simos::Windows::supports_feature`):
//! off by default, turned on by the adapter's `Features\37\Enabled` value, which
//! `inf/rvgpu.inf` writes; never on 26H1.
//! rvgpu starts in every case and advertises native fences (and user-mode submission, which
//! needs them) only when the OS enabled them.

use rvgpu_ddi::adapter::DXGK_VIDSCHCAPS;
use rvgpu_ddi::feature::{
    DXGK_FEATURE_HWSCH, DXGK_FEATURE_NATIVE_FENCE, DXGK_FEATURE_USER_MODE_SUBMISSION,
};
use rvgpu_simos::adapter::registry::{inf_software_key, RegKey, RegValue, REG_SZ, RVGPU_INF};
use rvgpu_simos::dxgkrnl::features::{configure, feature_subkey};
use rvgpu_simos::{AdapterInfo, Machine, MachineConfig, Mode, SimError, Windows};

const NF: i32 = DXGK_FEATURE_NATIVE_FENCE;

fn cfg(windows: Windows, key: impl FnOnce(&mut RegKey)) -> MachineConfig {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = windows;
    key(&mut cfg.adapters[0].software_key);
    cfg
}

fn start(cfg: MachineConfig) -> (Machine, Result<AdapterInfo, SimError>) {
    let mut m = Machine::new(cfg);
    m.load_driver().expect("load");
    let r = m.start_adapter(0);
    (m, r)
}

/// Starts `cfg` and returns whether native fences were enabled, after checking that rvgpu
/// started and advertised `NativeGpuFence` exactly then (and user-mode submission only with
/// them).
fn native_fences(cfg: MachineConfig) -> bool {
    let (m, r) = start(cfg);
    let info = r.unwrap_or_else(|e| panic!("{e}; log {:#?}", m.driver_log()));
    let db = m.feature_db(0);
    let enabled = db.version(NF).is_some();
    assert_eq!(
        info.caps
            .SchedulingCaps
            .is_set(DXGK_VIDSCHCAPS::NativeGpuFence),
        enabled,
        "NativeGpuFence advertised against the OS's answer"
    );
    assert!(db.version(DXGK_FEATURE_HWSCH).is_some(), "HWSCH stays on");
    if !enabled {
        assert_eq!(
            db.version(DXGK_FEATURE_USER_MODE_SUBMISSION),
            None,
            "user-mode submission depends on native fences"
        );
    }
    enabled
}

fn no_change(_: &mut RegKey) {}

fn without_features_key(k: &mut RegKey) {
    k.remove_subkey("Features");
}

/// The simulated adapter's software key is what the INF writes, parsed from the file: the
/// UMD names and the `Features\37` opt-in.
#[test]
fn br_110_software_key_default_is_what_the_inf_writes() {
    let key = inf_software_key().expect("inf/rvgpu.inf parses");
    assert_eq!(
        key.get(&feature_subkey(NF), "Enabled"),
        Some(&RegValue::dword(1))
    );
    assert!(key.get("", "UserModeDriverName").is_some());
    assert_eq!(
        MachineConfig::single(Mode::Step).adapters[0].software_key,
        key
    );
    // Unknown value types and dangling tokens are refusals of the INF stage, not panics.
    let stamped = rvgpu_simos::install::stamped_repository_inf();
    let install = |text: &str| rvgpu_simos::install::System::stock(26100).install_inf_only(text);
    assert!(install(&stamped).is_ok());
    assert!(install(&stamped.replace("%REG_DWORD%,1", "0x00000003,1")).is_err());
    assert!(install(&stamped.replace("%REG_DWORD%", "%NOPE%")).is_err());
    assert!(install("").is_err());
    assert!(install("[Manufacturer]\n%x%=\n").is_err());
    let _ = RVGPU_INF;
}

/// 24H2 and 25H2: native fences are off by default and on only through the adapter's
/// `Features\37\Enabled`; rvgpu starts either way.
#[test]
fn br_110_native_fence_needs_the_adapter_registry_value() {
    for build in [Windows::W24H2, Windows::W25H2] {
        assert!(
            native_fences(cfg(build, no_change)),
            "{}: the INF's value enables native fences",
            build.name()
        );
        assert!(
            !native_fences(cfg(build, without_features_key)),
            "{}: without Features\\37 native fences stay off",
            build.name()
        );
    }
}

/// `ConfigureFeature`: REG_DWORDs only (a value of another type ends the query), the low bit
/// of Enabled, the version range narrowed and reset when empty.
#[test]
fn br_111_registry_override_is_read_as_configure_feature_reads_it() {
    let sub = feature_subkey(NF);
    let with = |values: &[(&str, RegValue)]| {
        let mut k = RegKey::default();
        for (n, v) in values {
            k.set(&sub, n, v.clone());
        }
        configure(NF, &k)
    };
    assert!(!configure(NF, &RegKey::default()).enabled, "default off");
    assert!(with(&[("Enabled", RegValue::dword(1))]).enabled);
    assert!(!with(&[("Enabled", RegValue::dword(0))]).enabled);
    assert!(
        !with(&[("Enabled", RegValue::dword(2))]).enabled,
        "low bit only"
    );
    let text = RegValue {
        ty: REG_SZ,
        data: vec![b'1', 0, 0, 0],
    };
    assert!(!with(&[("Enabled", text)]).enabled, "REG_SZ is not read");
    let c = with(&[
        ("Enabled", RegValue::dword(1)),
        ("MinVersion", RegValue::dword(2)),
    ]);
    assert!(c.enabled);
    assert_eq!(
        (c.min_version, c.max_version),
        (1, 1),
        "empty range: defaults"
    );
    let c = with(&[
        ("Enabled", RegValue::dword(1)),
        ("AllowExperimental", RegValue::dword(1)),
    ]);
    assert!(c.allow_experimental);
    // Enabled = 0 on a started machine: off, and rvgpu starts without native fences.
    assert!(!native_fences(cfg(Windows::W24H2, |k| k.set(
        &sub,
        "Enabled",
        RegValue::dword(0)
    ))));
}

/// The shipped `rvgpu.sys` in the emulator reads the OS's answer as the Linux build does:
/// native fences with the INF's value on 24H2, none without it or on 26H1.
#[test]
fn br_110_pe_image_follows_the_feature_database() {
    if let Err(e) = rvgpu_simos::pe::unicorn::api() {
        panic!("{e}");
    }
    let pe = |mut c: MachineConfig| {
        c.driver = rvgpu_simos::pe::DriverBuild::Pe(None);
        c
    };
    assert!(native_fences(pe(cfg(Windows::W24H2, no_change))));
    assert!(!native_fences(pe(cfg(
        Windows::W24H2,
        without_features_key
    ))));
    assert!(!native_fences(pe(cfg(Windows::W26H1, no_change))));
}

/// 26H1: `CheckFeatureOSSupport` refuses native fences whatever the registry says; rvgpu
/// starts without them.
#[test]
fn br_112_26h1_never_enables_native_fences() {
    assert!(!Windows::W26H1.supports_feature(NF));
    assert!(Windows::W24H2.supports_feature(NF) && Windows::W25H2.supports_feature(NF));
    assert!(!native_fences(cfg(Windows::W26H1, no_change)));
    assert!(!native_fences(cfg(Windows::W26H1, without_features_key)));
}

/// BR-110, BR-112, BR-73, IN-08: a machine built for one Windows value plays that Windows on
/// every axis: its installer (the INF's `NTamd64.10.0...26100` models refused below 26100, so a
/// 22631-kernel machine does not load the driver), its feature database (native fences with
/// the INF's value, none on 26H1), the answers to the code-against-pages disagreements
/// (docs/windows-bringup.md §13: the kernel's own, or the pages'), and the 22631 start check
/// of the slot at byte 1368 for a user-mode-submission node (reached only past the installer).
#[test]
fn br_110_one_windows_value_decides_features_installer_and_readings() {
    use rvgpu_simos::machine::answers::SystemVas;
    use rvgpu_simos::Kernel;
    for kernel in Kernel::ALL {
        for windows in [Windows::new(kernel), Windows::new(kernel).with_pages()] {
            let name = windows.name();
            let c = cfg(windows, no_change);
            assert_eq!(c.os.windows, windows, "{name}");

            // The installer, on the machine's own build: the INF stage's registry writes are
            // the adapter's keys, so a build it refuses gets none and starts nothing.
            let mut m = Machine::new(c.clone());
            let loaded = m.load_driver();
            if kernel == Kernel::W22631 {
                match loaded {
                    Err(SimError::StartRefused { rule: "IN-08", .. }) => {}
                    other => panic!("{name}: expected the install's IN-08, got {other:?}"),
                }
            } else {
                loaded.unwrap_or_else(|e| panic!("{name}: {e}"));
                let r = m.start_adapter(0);
                r.unwrap_or_else(|e| panic!("{name}: {e}"));
                // The feature database.
                assert_eq!(
                    m.feature_db(0).version(NF).is_some(),
                    kernel != Kernel::W26H1,
                    "{name}: native fences"
                );
            }

            // The answers: the kernel's code (26H1 passes the system-process VAs, 24H2,
            // 25H2 and the 22631 kernel as read do not), or the pages (they do).
            let reading = m.os_config().windows.reading();
            let code = match kernel {
                Kernel::W22631 => "22631",
                Kernel::W24H2 => "24h2",
                Kernel::W25H2 => "25h2",
                Kernel::W26H1 => "26h1",
            };
            let pages = name.ends_with("pages");
            assert_eq!(reading.name, if pages { "pages" } else { code }, "{name}");
            let passed = pages || kernel == Kernel::W26H1;
            assert_eq!(
                reading.system_vas == SystemVas::Mapped,
                passed,
                "{name}: system-process VAs"
            );

            // The slot after DxgkDdiNotifyWorkSubmission, left NULL: only 22631 refuses a
            // user-mode-submission node without it (26H1 has no such node: no native fences).
            // Its rule is seen on the Linux build loaded as if installed; `rvgpu.sys` comes
            // only from its package, which 22631 refuses.
            let mut c = c;
            if kernel == Kernel::W22631 {
                if matches!(c.driver, rvgpu_simos::pe::DriverBuild::Pe(_)) {
                    continue;
                }
                c.install = false;
            }
            let mut m = Machine::new(c);
            m.load_driver_with(|t| t.Reserved4 = std::ptr::null_mut())
                .expect("load");
            match m.start_adapter(0) {
                Err(SimError::StartRefused { rule, .. }) => {
                    assert!(
                        kernel == Kernel::W22631 && rule == "BR-73",
                        "{name}: {rule}"
                    )
                }
                Err(e) => panic!("{name}: {e}"),
                Ok(_) => assert_ne!(kernel, Kernel::W22631, "{name}: started without the slot"),
            }
        }
    }
}
