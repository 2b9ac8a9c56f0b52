//! WDDM 3.2 feature negotiation (issue 13, NF-10; docs/windows-bringup.md §7): the OS learns
//! what the driver supports through the driver's feature interface (DxgkDdiQueryInterface,
//! GUID_WDDM_INTERFACE_FEATURE), enables features by its policy and their dependencies, and the
//! driver advertises caps only for what was enabled.

use rvgpu_ddi::adapter::{DXGK_VIDSCHCAPS, PQUERY_INTERFACE};
use rvgpu_ddi::feature::{
    DXGK_FEATURE_HWSCH, DXGK_FEATURE_NATIVE_FENCE, DXGK_FEATURE_USER_MODE_SUBMISSION,
};
use rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED;
use rvgpu_ddi::{NTSTATUS, PVOID};
use rvgpu_simos::dxgkrnl::features::{decide, DriverSupport};
use rvgpu_simos::{Machine, MachineConfig, Mode};

fn start(cfg: MachineConfig, no_interface: bool) -> Machine {
    let mut m = Machine::new(cfg);
    if no_interface {
        m.load_driver_with(|t| t.DxgkDdiQueryInterface = Some(no_interfaces))
            .expect("load");
    } else {
        m.load_driver().expect("load");
    }
    if let Err(e) = m.start_adapter(0) {
        panic!("start: {e}; log {:#?}", m.driver_log());
    }
    m
}

unsafe extern "system" fn no_interfaces(_ctx: PVOID, _q: PQUERY_INTERFACE) -> NTSTATUS {
    STATUS_NOT_SUPPORTED
}

fn advertises_native_fences(m: &Machine) -> bool {
    m.query_driver_caps(0)
        .expect("caps")
        .SchedulingCaps
        .is_set(DXGK_VIDSCHCAPS::NativeGpuFence)
}

#[test]
fn nf_10_native_fences_are_enabled_through_the_drivers_feature_interface() {
    let m = start(MachineConfig::single(Mode::Step), false);
    let db = m.feature_db(0);
    assert!(db.driver_interface, "{db:?}");
    let support = |id| db.support.iter().find(|s| s.id == id).map(|s| s.versions);
    assert_eq!(support(DXGK_FEATURE_NATIVE_FENCE), Some(Some((1, 1))));
    // rvgpu has no hardware scheduling yet (issue 13), so it claims neither HWS nor UMS.
    assert_eq!(support(DXGK_FEATURE_HWSCH), Some(None));
    assert_eq!(support(DXGK_FEATURE_USER_MODE_SUBMISSION), Some(None));
    assert_eq!(db.enabled, vec![(DXGK_FEATURE_NATIVE_FENCE, 1)]);
    assert!(advertises_native_fences(&m));
}

/// Without the driver's feature interface Dxgkrnl's legacy table does not know native fences:
/// they are never enabled, and the driver (which asks IsFeatureEnabled) does not advertise them.
#[test]
fn nf_10_without_the_feature_interface_native_fences_stay_off() {
    let m = start(MachineConfig::single(Mode::Step), true);
    let db = m.feature_db(0);
    assert!(!db.driver_interface);
    assert!(db.enabled.is_empty(), "{db:?}");
    assert!(!advertises_native_fences(&m));
}

/// The OS's policy can refuse a feature the driver supports.
#[test]
fn nf_10_os_policy_off_leaves_a_supported_feature_disabled() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.native_fence_feature = false;
    let m = start(cfg, false);
    let db = m.feature_db(0);
    assert!(db.driver_interface);
    assert!(db.enabled.is_empty(), "{db:?}");
    assert!(!advertises_native_fences(&m));
}

fn supported(id: i32, min: u16, max: u16) -> DriverSupport {
    DriverSupport {
        id,
        versions: Some((min, max)),
    }
}

/// Dependencies: user-mode submission needs hardware scheduling enabled first; versions: the
/// driver's range must reach the OS's version.
#[test]
fn negotiation_applies_dependencies_and_version_ranges() {
    let all = |_| true;
    assert!(decide(&[supported(DXGK_FEATURE_USER_MODE_SUBMISSION, 1, 1)], all).is_empty());
    assert_eq!(
        decide(
            &[
                supported(DXGK_FEATURE_HWSCH, 1, 1),
                supported(DXGK_FEATURE_USER_MODE_SUBMISSION, 1, 1)
            ],
            all
        ),
        vec![
            (DXGK_FEATURE_HWSCH, 1),
            (DXGK_FEATURE_USER_MODE_SUBMISSION, 1)
        ]
    );
    // HWS refused by policy takes user-mode submission with it.
    assert!(decide(
        &[
            supported(DXGK_FEATURE_HWSCH, 1, 1),
            supported(DXGK_FEATURE_USER_MODE_SUBMISSION, 1, 1)
        ],
        |id| id != DXGK_FEATURE_HWSCH
    )
    .is_empty());
    // A driver that only has version 2 of a feature the OS knows at version 1.
    assert!(decide(&[supported(DXGK_FEATURE_NATIVE_FENCE, 2, 3)], all).is_empty());
    // A wider range meets the OS at its version.
    assert_eq!(
        decide(&[supported(DXGK_FEATURE_NATIVE_FENCE, 1, 4)], all),
        vec![(DXGK_FEATURE_NATIVE_FENCE, 1)]
    );
}
