//! Adapter bring-up through the driver's DRIVER_INITIALIZATION_DATA table, in both modes.

mod common;

use common::{loaded, pe};

use rvgpu_ddi::adapter::DXGK_VIDSCHCAPS;
use rvgpu_simos::{AdapterInfo, Machine, MachineConfig, Mode, SimError};

/// Whether the started adapter's driver caps set the scheduling cap `bit`.
fn scheduling_cap(info: &AdapterInfo, bit: rvgpu_ddi::basic::BitField) -> bool {
    info.caps.SchedulingCaps.is_set(bit)
}

/// A step-mode machine whose OS has the native-fence feature on or off, its adapter started.
fn with_native_fence_feature(on: bool) -> (Machine, AdapterInfo) {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.native_fence_feature = on;
    let mut m = loaded(cfg);
    match m.start_adapter(0) {
        Ok(info) => (m, info),
        Err(e) => panic!("start: {e}"),
    }
}

fn bring_up_and_down(mode: Mode) -> Result<(), SimError> {
    let mut m = Machine::new(MachineConfig::single(mode));
    m.load_driver()?;
    let info = m.start_adapter(0)?;
    assert_eq!((info.sources, info.children), (0, 0), "render-only adapter");
    let caps = m.query_driver_caps(0)?;
    assert_eq!(
        caps.SchedulingCaps.Value, info.caps.SchedulingCaps.Value,
        "caps are stable across queries"
    );
    m.stop_adapter(0)?;
    m.remove_adapter(0)?;
    m.unload()?;
    assert_eq!(m.bugcheck(), None);
    Ok(())
}

#[test]
fn start_stop_step_mode() {
    if let Err(e) = bring_up_and_down(Mode::Step) {
        panic!("step-mode bring-up failed: {e}");
    }
}

#[test]
fn start_stop_threaded_mode() {
    if let Err(e) = bring_up_and_down(Mode::Threaded) {
        panic!("threaded bring-up failed: {e}");
    }
}

/// A PnP step the OS takes.
#[derive(Debug, Clone, Copy)]
enum Pnp {
    Start(usize),
    Stop(usize),
    Remove(usize),
    Unload,
}

/// Loads the driver on a machine of `cfg` and takes `steps` in order; a step that fails fails
/// the test, naming `what` and the step.
fn pnp_sequence(what: &str, cfg: MachineConfig, steps: &[Pnp]) {
    let mut m = Machine::new(cfg);
    if let Err(e) = m.load_driver() {
        panic!("{what}: load: {e}");
    }
    for &step in steps {
        let r = match step {
            Pnp::Start(i) => m.start_adapter(i).map(|_| ()),
            Pnp::Stop(i) => m.stop_adapter(i),
            Pnp::Remove(i) => m.remove_adapter(i),
            Pnp::Unload => m.unload(),
        };
        if let Err(e) = r {
            panic!("{what}: {step:?} failed: {e}; log: {:?}", m.driver_log());
        }
    }
}

#[test]
fn two_adapters_start_and_stop_independently() {
    use Pnp::*;
    let steps = [
        Start(0),
        Start(1),
        Stop(1),
        Remove(1),
        Stop(0),
        Remove(0),
        Unload,
    ];
    pnp_sequence("two adapters", MachineConfig::igpu_dgpu(Mode::Step), &steps);
}

#[test]
fn restart_after_stop() {
    use Pnp::*;
    let steps = [Start(0), Stop(0), Start(0), Stop(0), Remove(0)];
    pnp_sequence("restart", MachineConfig::single(Mode::Step), &steps);
}

/// NF-10: the driver must not advertise native fences when the OS disabled the feature; with
/// the feature off, whatever the driver answers must be consistent with it.
#[test]
fn nf_10_native_fence_cap_follows_os_feature() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.native_fence_feature = false;
    let mut m = loaded(cfg);
    match m.start_adapter(0) {
        Ok(info) => assert!(
            !scheduling_cap(&info, DXGK_VIDSCHCAPS::NativeGpuFence),
            "started with NativeGpuFence although the OS feature is off"
        ),
        Err(SimError::Rejected(why)) => panic!("driver advertised native fences: {why}"),
        Err(e) => panic!("start: {e}"),
    }
}

/// The OS side of NF-10: a driver that advertises native fences with the feature disabled is
/// refused at start.
#[test]
fn nf_10_start_fails_when_native_fences_advertised_without_feature() {
    use rvgpu_ddi::adapter::{DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_DRIVERCAPS, DXGK_DRIVERCAPS};
    use rvgpu_ddi::{HANDLE, NTSTATUS};
    /// Wraps the real QueryAdapterInfo and sets NativeGpuFence in the caps.
    unsafe extern "system" fn lying_qai(
        ctx: HANDLE,
        args: *const DXGKARG_QUERYADAPTERINFO,
    ) -> NTSTATUS {
        // SAFETY: forwarding the OS's arguments to the driver's own routine.
        let s = unsafe { common::real_qai(ctx, args) };
        // SAFETY: the OS passes a valid argument block; for DRIVERCAPS its output buffer is a
        // DXGK_DRIVERCAPS.
        unsafe {
            if s >= 0 && (*args).Type == DXGKQAITYPE_DRIVERCAPS {
                let caps = &mut *(*args).pOutputData.cast::<DXGK_DRIVERCAPS>();
                caps.SchedulingCaps.set(DXGK_VIDSCHCAPS::NativeGpuFence, 1);
            }
        }
        s
    }

    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.native_fence_feature = false;
    let mut m = Machine::new(cfg);
    match common::start_with_qai_hook(&mut m, lying_qai, |_| {}) {
        Err(SimError::Rejected(why)) => assert!(why.contains("NF-10"), "{why}"),
        other => panic!(
            "expected the OS to refuse the start, got {other:?}; log {:#?}",
            m.driver_log()
        ),
    }
}

/// NF-11: the OS asks a driver that advertises native fences for their caps; a driver that
/// fails the query does not start (the OS's refusal, not the DDI's status, is the answer).
#[test]
fn nf_11_a_failed_native_fence_caps_query_refuses_the_start() {
    use rvgpu_ddi::adapter::{DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_NATIVE_FENCE_CAPS};
    use rvgpu_ddi::{HANDLE, NTSTATUS};
    /// The real QueryAdapterInfo, but the native-fence caps query fails.
    unsafe extern "system" fn no_fence_caps(
        ctx: HANDLE,
        args: *const DXGKARG_QUERYADAPTERINFO,
    ) -> NTSTATUS {
        // SAFETY: the OS passes a valid argument block.
        if unsafe { (*args).Type } == DXGKQAITYPE_NATIVE_FENCE_CAPS {
            return rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED;
        }
        // SAFETY: forwarding the OS's arguments to the driver's own routine.
        unsafe { common::real_qai(ctx, args) }
    }

    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    match common::start_with_qai_hook(&mut m, no_fence_caps, |_| {}) {
        Err(SimError::Rejected(why)) => {
            assert!(
                why.contains("NATIVE_FENCE_CAPS failed (0xc00000bb)"),
                "{why}"
            )
        }
        other => panic!(
            "expected the OS to refuse the start, got {other:?}; log {:#?}",
            m.driver_log()
        ),
    }
}

#[test]
fn dxgk_initialize_rejects_missing_mandatory_slot() {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    // The hook runs after validation, so to test validation we check the listed slots instead.
    assert!(rvgpu_simos::adapter::bringup::LOAD_SLOTS.contains(&"DxgkDdiInterruptRoutine"));
    if let Err(e) = m.load_driver() {
        panic!("load: {e}");
    }
    let again = m.load_driver();
    assert!(matches!(again, Err(SimError::Simulation(_))), "{again:?}");
}

/// NF-10, driver side: with the OS feature enabled the driver asks IsFeatureEnabled about
/// DXGK_FEATURE_NATIVE_FENCE, obtains the feature interface (for GetOSCaps), holds exactly the
/// one interface reference QueryServices gave it while started, and releases it at stop. It
/// advertises NativeGpuFence exactly when its table carries the native-fence DDIs that the
/// advertisement obliges (NF-12).
#[test]
fn nf_10_driver_negotiates_native_fence_feature_and_releases_the_interface() {
    use rvgpu_ddi::feature::DXGK_FEATURE_NATIVE_FENCE;

    let (mut m, info) = with_native_fence_feature(true);
    let (refs, queried, interfaces) = m.feature_usage(0);
    assert!(
        queried.contains(&DXGK_FEATURE_NATIVE_FENCE),
        "the driver must ask the OS before advertising native fences: {queried:?}"
    );
    assert_eq!(
        interfaces, 1,
        "enabled feature: the driver obtains its interface once"
    );
    assert_eq!(refs, 1, "one reference held while started");

    let table = rvgpu_kmd::initialization_data::<rvgpu_simos::adapter::kernel::SimKernel>();
    let has_ddis = table.DxgkDdiCreateNativeFence.is_some()
        && table.DxgkDdiUpdateMonitoredValues.is_some()
        && table.DxgkDdiUpdateCurrentValuesFromCpu.is_some();
    assert_eq!(
        scheduling_cap(&info, DXGK_VIDSCHCAPS::NativeGpuFence),
        has_ddis,
        "NativeGpuFence is advertised iff the OS enabled it and the DDIs exist"
    );

    if let Err(e) = m.stop_adapter(0) {
        panic!("stop: {e}");
    }
    assert_eq!(
        m.feature_usage(0).0,
        0,
        "the interface reference is released at stop"
    );
    assert_eq!(m.bugcheck(), None);
}

/// NF-10: with the OS feature disabled the driver still asks, but never requests the
/// native-fence interface, and releases the feature interface at stop. Since hardware
/// scheduling it asks about every feature it advertises (BR-83): HWSCH,
/// USER_MODE_SUBMISSION, KERNEL_MODE_TESTING and NATIVE_FENCE. With native fences off the OS
/// leaves user-mode submission off too (it depends on them); HWSCH stays on. So the driver advertises neither
/// `NativeGpuFence` nor `UserModeSubmission`, and still `ContextSchedulingSupported`.
#[test]
fn nf_10_disabled_feature_is_not_used() {
    use rvgpu_ddi::feature::{
        DXGK_FEATURE_HWSCH, DXGK_FEATURE_KERNEL_MODE_TESTING, DXGK_FEATURE_NATIVE_FENCE,
        DXGK_FEATURE_USER_MODE_SUBMISSION,
    };
    use rvgpu_ddi::submission::DXGK_NODEMETADATA_FLAGS;

    let (mut m, info) = with_native_fence_feature(false);
    let (refs, mut queried, interfaces) = m.feature_usage(0);
    queried.sort_unstable();
    assert_eq!(
        queried,
        vec![
            DXGK_FEATURE_HWSCH,
            DXGK_FEATURE_USER_MODE_SUBMISSION,
            DXGK_FEATURE_KERNEL_MODE_TESTING,
            DXGK_FEATURE_NATIVE_FENCE
        ]
    );
    assert_eq!(
        interfaces, 0,
        "a disabled feature's interface is never requested"
    );
    assert!(!scheduling_cap(&info, DXGK_VIDSCHCAPS::NativeGpuFence));
    let nodes = m.node_metadata(0);
    assert!(!nodes.is_empty());
    for n in &nodes {
        assert!(
            !n.Flags.is_set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission),
            "UserModeSubmission needs NativeGpuFence (BR-73)"
        );
        assert!(
            n.Flags
                .is_set(DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported),
            "HWS stays on without native fences"
        );
    }
    assert!(m.usermode_submission_caps(0).is_none());
    assert_eq!(refs, 1);
    if let Err(e) = m.stop_adapter(0) {
        panic!("stop: {e}");
    }
    assert_eq!(m.feature_usage(0).0, 0);
}

/// MF-02: rvgpu supports only GPUs whose 64-bit fence writes are single-copy atomic (NF-01,
/// checked by the device's torn-write test). So the driver reports `No64BitAtomics = 0` for
/// such a device, and refuses to start on a device without the ATOMIC64 capability rather than
/// running it with the OS's 32-bit wrap-around rules it does not implement.
#[test]
fn mf_02_driver_reports_64_bit_atomics_and_refuses_a_32_bit_device() {
    let mut m = loaded(MachineConfig::single(Mode::Step));
    match m.start_adapter(0) {
        Ok(info) => assert!(
            !scheduling_cap(&info, DXGK_VIDSCHCAPS::No64BitAtomics),
            "a 64-bit atomic device must not be reported as No64BitAtomics"
        ),
        Err(e) => panic!("start: {e}"),
    }
    drop(m);

    let mut cfg = MachineConfig::single(Mode::Step);
    if let Some(a) = cfg.adapters.first_mut() {
        a.device.atomic64 = false;
    }
    let mut m = loaded(cfg);
    match m.start_adapter(0) {
        Err(SimError::Ddi {
            ddi: "DxgkDdiStartDevice",
            status: s,
        }) => assert_eq!(
            s.cast_unsigned(),
            0xC000_0483,
            "STATUS_DEVICE_HARDWARE_ERROR for a device the driver cannot drive"
        ),
        Ok(_) => panic!("the driver started on a device without 64-bit atomic fence writes"),
        Err(e) => panic!("expected a refused start, got {e}"),
    }
    assert_eq!(m.bugcheck(), None);
}

/// Every test of this file again, against `rvgpu.sys` in the x86-64 emulator.
#[test]
fn against_the_pe_image() {
    pe::rerun_against_the_pe_image(&[]);
}
