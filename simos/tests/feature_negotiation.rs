//! WDDM 3.2 feature negotiation (NF-10; docs/windows-bringup.md §7, docs/hws.md §1):
//! the OS learns what the driver supports through the driver's feature interface
//! (DxgkDdiQueryInterface, GUID_WDDM_INTERFACE_FEATURE), enables features by its policy and
//! their dependencies, and the driver advertises caps and node flags only for what was
//! enabled. A driver that advertises more is refused at start. A driver without the feature
//! interface asks `DxgkCbQueryFeatureSupport` instead (the legacy path, BR-78, BR-80 … BR-82).

mod common;
use common::load_hooked;
use common::start_edits::*;

use std::cell::{Cell, RefCell};

use rvgpu_ddi::adapter::{DXGK_VIDSCHCAPS, PQUERY_INTERFACE};
use rvgpu_ddi::feature::{
    DXGK_FEATURE_HWSCH, DXGK_FEATURE_NATIVE_FENCE, DXGK_FEATURE_USER_MODE_SUBMISSION,
};
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED, STATUS_SUCCESS};
use rvgpu_ddi::submission::{DXGK_NODEMETADATA, DXGK_NODEMETADATA_FLAGS};
use rvgpu_ddi::{HANDLE, NTSTATUS, PVOID};
use rvgpu_simos::adapter::featuredb::DriverSupport;
use rvgpu_simos::dxgkrnl::features::decide;
use rvgpu_simos::{Machine, MachineConfig, Mode, SimError, Windows};

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

/// What the driver advertised at start.
#[derive(Debug, PartialEq, Eq)]
struct Advertised {
    native_gpu_fence: bool,
    context_scheduling: bool,
    user_mode_submission: bool,
}

impl Advertised {
    /// Kernel-mode submission only.
    const NOTHING: Self = Self {
        native_gpu_fence: false,
        context_scheduling: false,
        user_mode_submission: false,
    };
}

fn advertised(m: &Machine) -> Advertised {
    let caps = m.query_driver_caps(0).expect("caps");
    let md = m.node_metadata(0);
    assert!(!md.is_empty());
    let all = |bit| {
        let v: Vec<bool> = md.iter().map(|n| n.Flags.is_set(bit)).collect();
        assert!(v.iter().all(|b| *b == v[0]), "nodes disagree: {v:?}");
        v[0]
    };
    Advertised {
        native_gpu_fence: caps.SchedulingCaps.is_set(DXGK_VIDSCHCAPS::NativeGpuFence),
        context_scheduling: all(DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported),
        user_mode_submission: all(DXGK_NODEMETADATA_FLAGS::UserModeSubmission),
    }
}

fn cfg(hwsch: bool, ums: bool, native_fence: bool) -> MachineConfig {
    let mut c = MachineConfig::single(Mode::Step);
    c.os.hwsch_feature = hwsch;
    c.os.ums_feature = ums;
    c.os.native_fence_feature = native_fence;
    c
}

/// The driver claims version 1 of HWSCH, USER_MODE_SUBMISSION and NATIVE_FENCE (and of
/// KERNEL_MODE_TESTING, which depends on nothing) through its interface; with the OS allowing
/// everything, all are enabled and advertised.
#[test]
fn nf_10_hws_ums_and_native_fences_are_enabled_through_the_drivers_feature_interface() {
    let m = start(cfg(true, true, true), false);
    let db = m.feature_db(0);
    assert!(db.driver_interface, "{db:?}");
    let support = |id| db.support.iter().find(|s| s.id == id).map(|s| s.versions);
    assert_eq!(support(DXGK_FEATURE_HWSCH), Some(Some((1, 1))));
    assert_eq!(
        support(DXGK_FEATURE_USER_MODE_SUBMISSION),
        Some(Some((1, 1)))
    );
    assert_eq!(support(DXGK_FEATURE_NATIVE_FENCE), Some(Some((1, 1))));
    let mut enabled = db.enabled.clone();
    enabled.sort();
    let mut want = vec![
        (DXGK_FEATURE_HWSCH, 1),
        (DXGK_FEATURE_USER_MODE_SUBMISSION, 1),
        (DXGK_FEATURE_NATIVE_FENCE, 1),
        (rvgpu_ddi::feature::DXGK_FEATURE_KERNEL_MODE_TESTING, 1),
    ];
    want.sort();
    assert_eq!(enabled, want);
    assert_eq!(
        advertised(&m),
        Advertised {
            native_gpu_fence: true,
            context_scheduling: true,
            user_mode_submission: true,
        }
    );
}

/// Every OS policy combination: what the OS enables (policy and dependencies) and what the
/// driver then advertises — never more than was enabled, and every start succeeds.
#[test]
fn hws_negotiation_matrix_driver_advertises_exactly_what_the_os_enabled() {
    for hwsch in [false, true] {
        for ums in [false, true] {
            for nf in [false, true] {
                let m = start(cfg(hwsch, ums, nf), false);
                let db = m.feature_db(0);
                let on = |id| db.version(id).is_some();
                // Dependencies: NATIVE_FENCE needs HWSCH, UMS needs both.
                assert_eq!(on(DXGK_FEATURE_HWSCH), hwsch);
                assert_eq!(on(DXGK_FEATURE_NATIVE_FENCE), hwsch && nf);
                assert_eq!(on(DXGK_FEATURE_USER_MODE_SUBMISSION), hwsch && nf && ums);
                assert_eq!(
                    advertised(&m),
                    Advertised {
                        native_gpu_fence: hwsch && nf,
                        context_scheduling: hwsch,
                        user_mode_submission: hwsch && nf && ums,
                    },
                    "policy hwsch={hwsch} ums={ums} nf={nf}"
                );
                // The driver asked the OS about every feature it advertises (BR-83).
                let (_, asked, _) = m.feature_usage(0);
                for id in [
                    DXGK_FEATURE_HWSCH,
                    DXGK_FEATURE_USER_MODE_SUBMISSION,
                    DXGK_FEATURE_NATIVE_FENCE,
                ] {
                    assert!(asked.contains(&id), "feature {id} never queried: {asked:?}");
                }
            }
        }
    }
}

/// Hardware scheduling off: no context scheduling, no user-mode submission, no native fences
/// (they depend on it), and the user-mode submission caps are not answered.
#[test]
fn hws_off_driver_runs_kernel_mode_only() {
    let m = start(cfg(false, true, true), false);
    assert_eq!(advertised(&m), Advertised::NOTHING);
    assert!(m.usermode_submission_caps(0).is_none());
}

/// Without the driver's feature interface Dxgkrnl's legacy table does not know native fences:
/// they are never enabled, and the driver (which asks IsFeatureEnabled) advertises nothing.
#[test]
fn nf_10_without_the_feature_interface_nothing_is_enabled() {
    let m = start(cfg(true, true, true), true);
    let db = m.feature_db(0);
    assert!(!db.driver_interface);
    assert!(db.enabled.is_empty(), "{db:?}");
    assert_eq!(advertised(&m), Advertised::NOTHING);
}

/// The OS's policy can refuse a feature the driver supports; what depends on it goes too.
#[test]
fn nf_10_os_policy_off_leaves_a_supported_feature_disabled() {
    let m = start(cfg(true, true, false), false);
    let db = m.feature_db(0);
    assert!(db.driver_interface);
    assert_eq!(
        db.enabled,
        vec![
            (DXGK_FEATURE_HWSCH, 1),
            (rvgpu_ddi::feature::DXGK_FEATURE_KERNEL_MODE_TESTING, 1)
        ],
        "{db:?}"
    );
    let a = advertised(&m);
    assert!(!a.native_gpu_fence && !a.user_mode_submission && a.context_scheduling);
}

fn supported(id: i32, min: u16, max: u16) -> DriverSupport {
    DriverSupport {
        id,
        versions: Some((min, max)),
    }
}

/// Dependencies in any order (user-mode submission needs HWS and native fences, native fences
/// need HWS); versions: the driver's range must reach the OS's version.
#[test]
fn negotiation_applies_dependencies_and_version_ranges() {
    let all = |_| true;
    let ums = supported(DXGK_FEATURE_USER_MODE_SUBMISSION, 1, 1);
    let hws = supported(DXGK_FEATURE_HWSCH, 1, 1);
    let nf = supported(DXGK_FEATURE_NATIVE_FENCE, 1, 1);
    assert!(decide(&[ums], all).is_empty());
    assert!(decide(&[nf], all).is_empty());
    assert_eq!(decide(&[hws, ums], all), vec![(DXGK_FEATURE_HWSCH, 1)]);
    // Asked before its dependencies, UMS is still enabled once they are.
    assert_eq!(
        decide(&[ums, nf, hws], all),
        vec![
            (DXGK_FEATURE_USER_MODE_SUBMISSION, 1),
            (DXGK_FEATURE_NATIVE_FENCE, 1),
            (DXGK_FEATURE_HWSCH, 1)
        ]
    );
    // HWS refused by policy takes everything that depends on it along.
    assert!(decide(&[hws, ums, nf], |id| id != DXGK_FEATURE_HWSCH).is_empty());
    // A driver that only has version 2 of a feature the OS knows at version 1.
    assert!(
        decide(&[hws, supported(DXGK_FEATURE_NATIVE_FENCE, 2, 3)], all)
            .iter()
            .all(|(id, _)| *id == DXGK_FEATURE_HWSCH)
    );
    // A wider range meets the OS at its version.
    assert_eq!(
        decide(&[hws, supported(DXGK_FEATURE_NATIVE_FENCE, 1, 4)], all),
        vec![(DXGK_FEATURE_HWSCH, 1), (DXGK_FEATURE_NATIVE_FENCE, 1)]
    );
}

type NodeMetadataFn = unsafe extern "system" fn(HANDLE, u32, *mut DXGK_NODEMETADATA) -> NTSTATUS;

thread_local! {
    // The start-time queries run on the test thread, so per-thread hooks keep parallel tests
    // apart.
    static REAL_MD: Cell<Option<NodeMetadataFn>> = const { Cell::new(None) };
    static FORCE_FLAGS: Cell<u32> = const { Cell::new(0) };
    static DROP_GPU_VA: Cell<bool> = const { Cell::new(false) };
}

/// The driver's GetNodeMetadata, with flags it was not allowed to claim forced on.
unsafe extern "system" fn lying_node_metadata(
    h: HANDLE,
    node: u32,
    out: *mut DXGK_NODEMETADATA,
) -> NTSTATUS {
    let real = REAL_MD.get().expect("real GetNodeMetadata");
    // SAFETY: forwarded unchanged.
    let s = unsafe { real(h, node, out) };
    if s >= 0 {
        // SAFETY: the OS's node entry, just written by the driver (packed: by value).
        let mut md = unsafe { out.read_unaligned() };
        md.Flags = DXGK_NODEMETADATA_FLAGS::from_value(md.Flags.Value | FORCE_FLAGS.get());
        if DROP_GPU_VA.get() {
            md.GpuMmuSupported = 0;
            md.IoMmuSupported = 0;
        }
        // SAFETY: as above.
        unsafe { out.write_unaligned(md) };
    }
    s
}

/// Starts rvgpu under `c` with its node metadata edited.
fn start_lying(c: MachineConfig, force: u32, drop_gpu_va: bool) -> Result<(), SimError> {
    FORCE_FLAGS.set(force);
    DROP_GPU_VA.set(drop_gpu_va);
    let mut m = Machine::new(c);
    REAL_MD.set(load_hooked(&mut m, |t| {
        t.DxgkDdiGetNodeMetadata.replace(lying_node_metadata)
    }));
    let r = m.start_adapter(0).map(|_| ());
    FORCE_FLAGS.set(0);
    DROP_GPU_VA.set(false);
    r
}

fn refused(r: Result<(), SimError>, rule: &str) {
    match r {
        Err(SimError::StartRefused {
            rule: got, status, ..
        }) if got == rule && status == STATUS_INVALID_PARAMETER => {}
        other => panic!("expected {rule} / INVALID_PARAMETER, got {other:?}"),
    }
}

fn flag(bit: rvgpu_ddi::basic::BitField) -> u32 {
    DXGK_NODEMETADATA_FLAGS::default().with(bit, 1).Value
}

/// BR-72: context scheduling claimed while the OS did not enable HWS.
#[test]
fn br_72_context_scheduling_without_hws_enabled_is_refused() {
    let force = flag(DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported);
    refused(start_lying(cfg(false, false, false), force, false), "BR-72");
}

/// BR-71: context scheduling on a node without GPU virtual addressing.
#[test]
fn br_71_context_scheduling_without_gpu_va_is_refused() {
    refused(start_lying(cfg(true, true, true), 0, true), "BR-71");
}

/// BR-73: a driver that claims user-mode submission with HWS off is caught, as is one whose
/// UMS node lacks context scheduling (only user-mode submission forced on).
#[test]
fn br_73_user_mode_submission_with_hws_off_is_refused() {
    let both = flag(DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported)
        | flag(DXGK_NODEMETADATA_FLAGS::UserModeSubmission);
    // HWS off: the context-scheduling half is caught first (BR-72 precedes BR-73 per node).
    refused(start_lying(cfg(false, true, true), both, false), "BR-72");
    let ums = flag(DXGK_NODEMETADATA_FLAGS::UserModeSubmission);
    // HWS on but UMS refused by policy: BR-73.
    refused(start_lying(cfg(true, false, true), ums, false), "BR-73");
    // Native fences off (so no NativeGpuFence cap): a UMS node is refused on 24H2.
    refused(start_lying(cfg(true, true, false), ums, false), "BR-73");
}

/// windows-bringup.md §15 question 2: the slot after `DxgkDdiNotifyWorkSubmission` (byte 1368). rvgpu
/// fills it, so it starts with user-mode submission on the 22631 kernel
/// (`Windows::ums_requires_slot_1368`; past the installer, which refuses the INF there) and
/// the WDDM 3.2 builds' (the default), and the slot's
/// function refuses any call with `STATUS_NOT_SUPPORTED`. What each rule does to a driver that
/// leaves it NULL: `startup_questions.rs` `q2_*`.
#[test]
fn slot_1368_rvgpu_starts_under_either_answer() {
    for windows in [Windows::W22631, Windows::W24H2] {
        // rvgpu as shipped: user-mode submission works.
        let mut c = cfg(true, true, true);
        c.os.windows = windows;
        let Some(c) = past_the_installer(c) else {
            continue;
        };
        let mut m = Machine::new(c);
        m.load_driver().expect("load");
        m.start_adapter(0).expect("start");
        assert!(
            m.feature_db(0)
                .enabled
                .iter()
                .any(|(id, _)| *id == DXGK_FEATURE_USER_MODE_SUBMISSION),
            "{}: user-mode submission enabled",
            windows.name()
        );
        common::one_user_mode_submission(&m);
    }
    // What a kernel that called the slot would get.
    let t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    assert!(!t.Reserved4.is_null());
    // SAFETY: the driver's function for the slot takes no argument it reads and returns an
    // NTSTATUS (x64: extra arguments are ignored by the callee).
    let f: unsafe extern "system" fn() -> NTSTATUS = unsafe { std::mem::transmute(t.Reserved4) };
    assert_eq!(unsafe { f() }, STATUS_NOT_SUPPORTED);
}

// ---------------------------------------------------------------------------------------------
// BR-78, BR-80..82: the legacy feature path and the kernel block list.

thread_local! {
    /// What the legacy driver stand-in asks `DxgkCbQueryFeatureSupport` before StartDevice:
    /// (feature, support state).
    static LEGACY_ASK: RefCell<Vec<(i32, u32)>> = const { RefCell::new(Vec::new()) };
    /// The answers: (status, Enabled).
    static LEGACY_ANSWERS: RefCell<Vec<(NTSTATUS, u8)>> = const { RefCell::new(Vec::new()) };
}
static REAL_QUERY_INTERFACE: std::sync::OnceLock<rvgpu_ddi::init::PDXGKDDI_QUERY_INTERFACE> =
    std::sync::OnceLock::new();

/// rvgpu's QueryInterface without `GUID_WDDM_INTERFACE_FEATURE`: a driver of the legacy path.
unsafe extern "system" fn query_interface_without_features(
    ctx: *mut std::ffi::c_void,
    q: *mut rvgpu_ddi::adapter::QUERY_INTERFACE,
) -> NTSTATUS {
    // SAFETY: the OS's request block; its GUID pointer is valid for the call.
    let guid = unsafe { q.as_ref().and_then(|q| q.InterfaceType.as_ref()) };
    if guid == Some(&rvgpu_ddi::feature::GUID_WDDM_INTERFACE_FEATURE) {
        return STATUS_NOT_SUPPORTED;
    }
    let Some(Some(real)) = REAL_QUERY_INTERFACE.get().copied() else {
        return STATUS_NOT_SUPPORTED;
    };
    // SAFETY: forwarded unchanged.
    unsafe { real(ctx, q) }
}

/// rvgpu's StartDevice, preceded by the legacy queries of [`LEGACY_ASK`] (what a driver
/// without the feature interface does at the start of its StartDevice).
unsafe extern "system" fn start_asking_legacy(
    ctx: *mut std::ffi::c_void,
    info: *mut rvgpu_ddi::adapter::DXGK_START_INFO,
    iface: *mut rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE,
    sources: *mut u32,
    children: *mut u32,
) -> NTSTATUS {
    // SAFETY: the OS's callback table, valid for the call.
    let Some(i) = (unsafe { iface.as_ref() }) else {
        return STATUS_INVALID_PARAMETER;
    };
    let ask = LEGACY_ASK.with(|a| a.borrow().clone());
    for (id, state) in ask {
        let mut args = rvgpu_ddi::feature::DXGKARGCB_QUERYFEATURESUPPORT {
            DeviceHandle: i.DeviceHandle,
            FeatureId: id,
            DriverSupportState: state,
            Enabled: 0xCD,
        };
        let f = i
            .DxgkCbQueryFeatureSupport
            .expect("DxgkCbQueryFeatureSupport");
        // SAFETY: the OS's callback with its own handle and a live argument block.
        let s = unsafe { f(&mut args) };
        LEGACY_ANSWERS.with(|a| a.borrow_mut().push((s, args.Enabled)));
    }
    let Some(Some(real)) = REAL_START_DEVICE.get().copied() else {
        return STATUS_NOT_SUPPORTED;
    };
    // SAFETY: forwarded unchanged.
    unsafe { real(ctx, info, iface, sources, children) }
}

/// Starts rvgpu as a legacy-path driver on a machine from `cfg`: no feature interface, the
/// `ask` queries at the start of StartDevice, `node` applied to its node metadata. Returns the
/// machine, the start's result and the answers.
fn start_legacy(
    cfg: MachineConfig,
    ask: &[(i32, u32)],
    node: Option<NodeEdit>,
) -> (Machine, Result<(), SimError>, Vec<(NTSTATUS, u8)>) {
    LEGACY_ASK.with(|a| *a.borrow_mut() = ask.to_vec());
    LEGACY_ANSWERS.with(|a| a.borrow_mut().clear());
    NODE_EDIT.set(node);
    let (m, r) = start_with_config(cfg, no_edit, |t| {
        let _ = REAL_QUERY_INTERFACE.set(t.DxgkDdiQueryInterface);
        t.DxgkDdiQueryInterface = Some(query_interface_without_features);
        let _ = REAL_START_DEVICE.set(t.DxgkDdiStartDevice);
        t.DxgkDdiStartDevice = Some(start_asking_legacy);
        let _ = REAL_NODE_METADATA.set(t.DxgkDdiGetNodeMetadata);
        t.DxgkDdiGetNodeMetadata = Some(edited_node_metadata);
    });
    NODE_EDIT.set(None);
    let answers = LEGACY_ANSWERS.with(|a| std::mem::take(&mut *a.borrow_mut()));
    (m, r, answers)
}

fn context_scheduling_nodes(m: &Machine) -> usize {
    m.node_metadata(0)
        .iter()
        .filter(|md| {
            md.Flags
                .is_set(rvgpu_ddi::submission::DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported)
        })
        .count()
}

fn claim_context_scheduling(md: &mut DXGK_NODEMETADATA) {
    md.Flags = md.Flags.with(
        rvgpu_ddi::submission::DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported,
        1,
    );
}

const HWSCH: i32 = rvgpu_ddi::feature::DXGK_FEATURE_HWSCH;
const UMS: i32 = rvgpu_ddi::feature::DXGK_FEATURE_USER_MODE_SUBMISSION;
const EXPERIMENTAL: u32 = rvgpu_ddi::feature::DXGK_FEATURE_SUPPORT_EXPERIMENTAL;
const STABLE: u32 = rvgpu_ddi::feature::DXGK_FEATURE_SUPPORT_STABLE;
const ALWAYS_ON: u32 = rvgpu_ddi::feature::DXGK_FEATURE_SUPPORT_ALWAYS_ON;

/// BR-80/81: a driver without the feature interface that asks `DxgkCbQueryFeatureSupport` for
/// HWSCH and USER_MODE_SUBMISSION as *stable* gets both on a default machine (`HwSchMode` 0),
/// and the adapter's HWS bit lets its nodes claim context scheduling (BR-72). NATIVE_FENCE
/// cannot be enabled on this path, so rvgpu claims no user-mode submission. Without the query
/// the OS enables nothing.
#[test]
fn br_80_legacy_query_enables_hws_for_a_stable_driver() {
    let cfg = || MachineConfig::single(Mode::Step);
    let (m, r, answers) = start_legacy(cfg(), &[(HWSCH, STABLE), (UMS, STABLE)], None);
    r.expect("legacy driver with HWS");
    assert_eq!(answers, [(STATUS_SUCCESS, 1), (STATUS_SUCCESS, 1)]);
    let db = m.feature_db(0);
    assert!(!db.driver_interface);
    assert!(db.version(HWSCH).is_some() && db.version(UMS).is_some());
    assert!(db
        .version(rvgpu_ddi::feature::DXGK_FEATURE_NATIVE_FENCE)
        .is_none());
    assert!(
        context_scheduling_nodes(&m) > 0,
        "HWS nodes once HWSCH is enabled"
    );
    let (m, r, answers) = start_legacy(cfg(), &[], None);
    r.expect("legacy driver without HWS");
    assert!(answers.is_empty());
    assert_eq!(m.feature_db(0).version(HWSCH), None);
    assert_eq!(context_scheduling_nodes(&m), 0);
}

/// BR-80 policy: `HwSchMode` = 1 keeps a stable driver's HWS off (and a node that claims
/// context scheduling anyway fails BR-72); always-on is enabled whatever the mode; an
/// experimental claim is enabled only with `HwSchTreatExperimentalAsStable`.
#[test]
fn br_80_hw_sch_mode_and_experimental_policy() {
    let mode = |m: u32, treat: bool| {
        let mut cfg = MachineConfig::single(Mode::Step);
        cfg.os.hw_sch_mode = m;
        cfg.os.hw_sch_treat_experimental_as_stable = treat;
        cfg
    };
    let (_, r, answers) = start_legacy(mode(1, false), &[(HWSCH, STABLE)], None);
    r.expect("HWS off: the driver schedules itself");
    assert_eq!(answers, [(STATUS_SUCCESS, 0)]);
    let (_, r, _) = start_legacy(
        mode(1, false),
        &[(HWSCH, STABLE)],
        Some(claim_context_scheduling),
    );
    common::refused(r, "BR-72", STATUS_INVALID_PARAMETER);
    let (_, _, answers) = start_legacy(mode(2, false), &[(HWSCH, STABLE)], None);
    assert_eq!(answers, [(STATUS_SUCCESS, 1)]);
    let (_, _, answers) = start_legacy(mode(1, false), &[(HWSCH, ALWAYS_ON)], None);
    assert_eq!(answers, [(STATUS_SUCCESS, 1)]);
    let (_, _, answers) = start_legacy(mode(0, false), &[(HWSCH, EXPERIMENTAL)], None);
    assert_eq!(answers, [(STATUS_SUCCESS, 0)]);
    let (m, r, answers) = start_legacy(mode(0, true), &[(HWSCH, EXPERIMENTAL)], None);
    r.expect("experimental treated as stable");
    assert_eq!(answers, [(STATUS_SUCCESS, 1)]);
    assert!(context_scheduling_nodes(&m) > 0);
}

/// BR-82: support state 0 and unknown feature IDs are `INVALID_PARAMETER` (Enabled FALSE);
/// the IDs the legacy table treats as always on answer TRUE. 24H2 knows only IDs 0…5:
/// GPUVAIOMMU (36) and NATIVE_FENCE (37) are refused.
#[test]
fn br_82_legacy_query_refuses_state_0_and_unknown_features() {
    let (_, r, answers) = start_legacy(
        MachineConfig::single(Mode::Step),
        &[
            (HWSCH, 0),
            (6, STABLE),
            (36, STABLE),
            (37, STABLE),
            (3, STABLE),
        ],
        None,
    );
    r.expect("the refused queries do not fail the start");
    assert_eq!(
        answers,
        [
            (STATUS_INVALID_PARAMETER, 0),
            (STATUS_INVALID_PARAMETER, 0),
            (STATUS_INVALID_PARAMETER, 0),
            (STATUS_INVALID_PARAMETER, 0),
            (STATUS_SUCCESS, 1),
        ]
    );
}

/// BR-78: a `DISABLE_HWSCH` kernel block-list entry turns hardware scheduling off on both
/// paths: rvgpu (feature interface) starts without HWS, a legacy always-on claim is answered
/// FALSE, and a node claiming context scheduling anyway fails BR-72.
#[test]
fn br_78_block_list_entry_turns_hws_off() {
    let blocked = || {
        let mut cfg = MachineConfig::single(Mode::Step);
        cfg.os.block_list_disable_hwsch = true;
        cfg
    };
    let (m, r) = start_with_config(blocked(), no_edit, no_table);
    r.expect("rvgpu without HWS");
    assert_eq!(m.feature_db(0).version(HWSCH), None);
    assert_eq!(context_scheduling_nodes(&m), 0);
    let (_, r, answers) = start_legacy(blocked(), &[(HWSCH, ALWAYS_ON)], None);
    r.expect("legacy driver without HWS");
    assert_eq!(answers, [(STATUS_SUCCESS, 0)]);
    NODE_EDIT.set(Some(claim_context_scheduling));
    let (_, r) = start_with_config(blocked(), no_edit, |t| {
        let _ = REAL_NODE_METADATA.set(t.DxgkDdiGetNodeMetadata);
        t.DxgkDdiGetNodeMetadata = Some(edited_node_metadata);
    });
    NODE_EDIT.set(None);
    common::refused(r, "BR-72", STATUS_INVALID_PARAMETER);
}

against_the_pe_image!();
