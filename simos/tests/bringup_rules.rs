//! The simulated Dxgkrnl's start-up rules (docs/windows-bringup.md, BR-nn). For each
//! rule, a driver that breaks it is refused the way Windows refuses it (rule, status), and the
//! real rvgpu passes every rule with Windows' default policies. The legacy feature path's rules
//! (BR-78, BR-80 … BR-82) are `feature_negotiation`'s; the edited starts are `common::start_edits`.

use std::cell::Cell;

mod common;
use common::start_edits::*;
use common::{load_hooked, refused};

use rvgpu_ddi::adapter::{
    DXGK_DRIVERCAPS_MiscCaps, DXGKQAITYPE_HISTORYBUFFERPRECISION, DXGKQAITYPE_PHYSICALADAPTERCAPS,
    DXGK_DRIVERCAPS, DXGK_FLIPCAPS, DXGK_PHYSICALADAPTERFLAGS, DXGK_VIDMMCAPS_0, DXGK_VIDSCHCAPS,
};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::{
    STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED, STATUS_NO_MEMORY, STATUS_SUCCESS,
};
use rvgpu_ddi::submission::{DXGK_NODEMETADATA, DXGK_USERMODESUBMISSION_CAPS};
use rvgpu_ddi::{HANDLE, NTSTATUS};
use rvgpu_simos::adapter::bringup::{
    self, STATUS_DEVICE_CONFIGURATION_ERROR, STATUS_REVISION_MISMATCH,
};
use rvgpu_simos::{Machine, MachineConfig, Mode, SimError};

/// rvgpu passes every start-up rule with Windows' default policies, and its statuses stay within
/// the wrappers' allow-lists (BR-23).
#[test]
fn br_rvgpu_passes_every_start_rule() {
    let mut m = machine(false);
    m.load_driver().expect("load");
    if let Err(e) = m.start_adapter(0) {
        panic!("start: {e}; log {:#?}", m.driver_log());
    }
    let log = m.triage_log(0);
    assert!(log.is_empty(), "triage log {log:#?}");
}

/// BR-52 under `ValidateWDDMCaps`: rvgpu meets every mandatory WDDM 1.2 render feature but
/// kernel-mode command buffers (GDI hardware acceleration, which it does not claim), and a
/// machine that validates refuses it for exactly that.
#[test]
fn br_52_rvgpu_with_validate_wddm_caps_lacks_only_kernel_mode_command_buffers() {
    let mut m = machine(true);
    m.load_driver().expect("load");
    match m.start_adapter(0) {
        Err(SimError::StartRefused { rule, status, why }) => {
            assert_eq!((rule, status), ("BR-52", STATUS_INVALID_PARAMETER), "{why}");
            let missing = why.rsplit_once(": ").map_or("", |(_, m)| m);
            assert_eq!(
                missing, "PresentationCaps.SupportKernelModeCommandBuffer",
                "{why}"
            );
        }
        other => panic!("expected BR-52, got {other:?}"),
    }
}

/// BR-23: what rvgpu's `DxgkDdiPresent` and `DxgkDdiControlInterrupt` answer
/// (tests/ddi_robustness.rs) is in their wrappers' allow-lists; a status outside them is not.
#[test]
fn br_23_present_and_control_interrupt_statuses_are_allowed() {
    use rvgpu_ddi::ntstatus::{
        STATUS_ILLEGAL_INSTRUCTION, STATUS_INVALID_HANDLE, STATUS_NOT_IMPLEMENTED,
        STATUS_UNSUCCESSFUL,
    };
    for s in [STATUS_ILLEGAL_INSTRUCTION, STATUS_INVALID_HANDLE] {
        assert!(bringup::status_allowed("DxgkDdiPresent", s));
    }
    for s in [STATUS_NOT_IMPLEMENTED, STATUS_UNSUCCESSFUL] {
        assert!(bringup::status_allowed("DxgkDdiControlInterrupt", s));
    }
    assert!(!bringup::status_allowed(
        "DxgkDdiPresent",
        STATUS_INVALID_PARAMETER
    ));
    assert!(!bringup::status_allowed(
        "DxgkDdiControlInterrupt",
        STATUS_INVALID_PARAMETER
    ));
}

/// BR-47: the render core's DDI set. rvgpu fills all of it; without `DxgkDdiPresent` or
/// `DxgkDdiControlInterrupt` (rvgpu is not compute-only) the start is refused.
#[test]
fn br_47_render_core_needs_present_and_control_interrupt() {
    let (_, r) = start_with(no_edit, |t| t.DxgkDdiPresent = None);
    refused(r, "BR-47", STATUS_REVISION_MISMATCH);
    let (_, r) = start_with(no_edit, |t| t.DxgkDdiControlInterrupt = None);
    refused(r, "BR-47", STATUS_REVISION_MISMATCH);
    let (_, r) = start_with(no_edit, |t| t.DxgkDdiCloseAllocation = None);
    refused(r, "BR-47", STATUS_REVISION_MISMATCH);
    // A compute-only adapter needs no ControlInterrupt (it has no display to drive).
    let (_, r) = start_with(
        |c| c.MiscCaps.set(DXGK_DRIVERCAPS_MiscCaps::ComputeOnly, 1),
        |t| t.DxgkDdiControlInterrupt = None,
    );
    assert!(
        !matches!(r, Err(SimError::StartRefused { rule: "BR-47", .. })),
        "{r:?}"
    );
}

#[test]
fn br_02_missing_required_slot_is_revision_mismatch() {
    let mut t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    assert_eq!(bringup::check_load(&t), Ok(()));
    t.DxgkDdiResetDevice = None;
    let v = bringup::check_load(&t).expect_err("ResetDevice is required");
    assert_eq!((v.rule, v.status), ("BR-02", STATUS_REVISION_MISMATCH));
    // Not checked at load: NotifyAcpiEvent, QueryInterface, QueryAdapterInfo.
    let mut t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    t.DxgkDdiNotifyAcpiEvent = None;
    t.DxgkDdiQueryInterface = None;
    t.DxgkDdiQueryAdapterInfo = None;
    assert_eq!(bringup::check_load(&t), Ok(()));
    // QueryConnectionChange may stand in for QueryChildStatus.
    let mut t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    t.DxgkDdiQueryChildStatus = None;
    assert_eq!(bringup::check_load(&t).map_err(|v| v.rule), Err("BR-02"));
    t.DxgkDdiQueryConnectionChange = Some(unsafe_stand_in);
    assert_eq!(bringup::check_load(&t), Ok(()));
}

/// A filled slot for a DDI the bindings leave unbound (only its presence is checked).
unsafe extern "system" fn unsafe_stand_in() {}

#[test]
fn br_01_interface_older_than_vista_is_revision_mismatch() {
    let mut t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    t.Version = 0x1000;
    let v = bringup::check_load(&t).expect_err("too old");
    assert_eq!((v.rule, v.status), ("BR-01", STATUS_REVISION_MISMATCH));
}

#[test]
fn br_32_34_interface_version_rules() {
    let t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    let (_, caps) = {
        let mut m = machine(false);
        m.load_driver().expect("load");
        let info = m.start_adapter(0).expect("start");
        (m, info.caps)
    };
    let rules = |version| {
        let facts = bringup::StartFacts::render_only(version, rvgpu_simos::CpuArch::X64, false);
        bringup::check_caps(&caps, None, &t, &facts)
            .into_iter()
            .map(|v| v.rule)
            .collect::<Vec<_>>()
    };
    assert_eq!(rules(t.Version), Vec::<&str>::new());
    assert_eq!(rules(0x5003), ["BR-32", "BR-34"]);
    assert_eq!(rules(0xA00B), ["BR-34"]);
}

#[test]
fn br_33_unknown_wddm_version_is_revision_mismatch() {
    caps_refused(
        |c| c.WDDMVersion = 0x3300,
        "BR-33",
        STATUS_REVISION_MISMATCH,
    );
    caps_refused(|c| c.WDDMVersion = 0, "BR-33", STATUS_REVISION_MISMATCH);
}

/// A start with the caps `edit` (the table unedited) is refused by `rule` with `status`.
fn caps_refused(edit: impl Fn(&mut DXGK_DRIVERCAPS) + 'static, rule: &str, status: NTSTATUS) {
    let (_, r) = start_with(edit, no_table);
    refused(r, rule, status);
}

/// Calls the driver's own routine saved in `$real` (a `OnceLock` of a table slot) with the
/// arguments of the stand-in that wraps it; `STATUS_NOT_SUPPORTED` when none was saved.
macro_rules! forward_to {
    ($real:ident($($arg:expr),* $(,)?)) => {
        match $real.get().copied().flatten() {
            // SAFETY: forwarded unchanged: the stand-in's own arguments, from the OS.
            Some(real) => unsafe { real($($arg),*) },
            None => STATUS_NOT_SUPPORTED,
        }
    };
}

/// One `#[test]` per row: a start with the row's edits (`start_with(caps, table)`,
/// `start_with_physical(caps, physical)` or `start_with_knob(knob, value)`) is refused by the
/// row's rule with its status, as Windows refuses it.
macro_rules! refused_starts {
    ($(
        $(#[$meta:meta])*
        fn $name:ident() = $start:ident($($edit:expr),+ $(,)?) => $rule:literal, $status:expr;
    )+) => {
        $(
            $(#[$meta])*
            fn $name() {
                let (_, r) = $start($($edit),+);
                refused(r, $rule, $status);
            }
        )+
    };
}

refused_starts! {
    #[test]
    fn br_36_preemption_aware_without_multi_engine_is_invalid() = start_with(
        |c| {
            c.SchedulingCaps.set(DXGK_VIDSCHCAPS::MultiEngineAware, 0);
            c.SchedulingCaps.set(DXGK_VIDSCHCAPS::PreemptionAware, 1);
        },
        no_table,
    ) => "BR-36", STATUS_INVALID_PARAMETER;

    #[test]
    fn br_36_wddm2_driver_must_be_multi_engine_aware() = start_with(
        |c| c.SchedulingCaps.set(DXGK_VIDSCHCAPS::MultiEngineAware, 0),
        no_table,
    ) => "BR-36", STATUS_INVALID_PARAMETER;

    #[test]
    fn br_36_multi_engine_below_wddm_2_needs_nodes() = start_with(
        |c| {
            c.WDDMVersion = 0x1300;
            c.GpuEngineTopology.NbAsymetricProcessingNodes = 0;
        },
        no_table,
    ) => "BR-36", STATUS_INVALID_PARAMETER;

    #[test]
    fn br_37_at_most_64_nodes_before_wddm_2_5() =
        start_with_physical(|c| c.WDDMVersion = 0x2400, |p| p.NumExecutionNodes = 65)
        => "BR-37", STATUS_INVALID_PARAMETER;

    #[test]
    fn br_38_reserved_misc_caps_bit_is_invalid() =
        start_with(|c| c.MiscCaps.Value |= 1 << 20, no_table) => "BR-38", STATUS_INVALID_PARAMETER;

    #[test]
    fn br_39_independent_vsync_control_needs_control_interrupt3() = start_with(
        |c| c.MiscCaps.set(DXGK_DRIVERCAPS_MiscCaps::IndependentVidPnVSyncControl, 1),
        no_table,
    ) => "BR-39", STATUS_INVALID_PARAMETER;

    // TDR-01: rvgpu sets the cap and fills the three DDIs; without one of them it is refused.
    #[test]
    fn br_42_per_engine_tdr_needs_its_ddis() =
        start_with(|c| c.SupportPerEngineTDR = 1, |t| t.DxgkDdiQueryEngineStatus = None)
        => "BR-42", STATUS_INVALID_PARAMETER;

    /// BR-43: kernel-mode command buffers need DxgkDdiRenderKm.
    #[test]
    fn br_43_kernel_mode_command_buffers_need_render_km() =
        start_with(|c| c.PresentationCaps.Value |= 1 << 2, no_table)
        => "BR-43", STATUS_INVALID_PARAMETER;

    // rvgpu sets the cap and fills both DDIs (UM-13); without one of them the cap is refused.
    #[test]
    fn br_44_runtime_power_management_needs_its_ddis() = start_with(
        |c| c.SupportRuntimePowerManagement = 1,
        |t| t.DxgkDdiPowerRuntimeControlRequest = None,
    ) => "BR-44", STATUS_INVALID_PARAMETER;

    #[test]
    fn br_46_diagnostic_ddis_come_as_a_pair() =
        start_with(no_edit, |t| t.DxgkDdiQueryDiagnosticTypesSupport = stub())
        => "BR-46", STATUS_INVALID_PARAMETER;

    #[test]
    fn br_48_overlay_ddis_all_or_none() = start_with(no_edit, |t| {
        t.DxgkDdiCreateOverlay = stub();
        t.DxgkDdiDestroyOverlay = stub();
    }) => "BR-48", STATUS_REVISION_MISMATCH;

    #[test]
    fn br_49_swizzling_ranges_need_their_ddis() =
        start_with(|c| c.NumberOfSwizzlingRanges = 1, no_table) => "BR-49", STATUS_REVISION_MISMATCH;

    #[test]
    fn br_50_non_coherent_aperture_is_invalid_on_x64() =
        start_with(|c| c.PresentationCaps.Value |= 1 << 29, no_table)
        => "BR-50", STATUS_INVALID_PARAMETER;

    #[test]
    fn br_51_flip_on_vsync_mmio_is_required_for_wddm2() =
        start_with(|c| c.FlipCaps.set(DXGK_FLIPCAPS::FlipOnVSyncMmIo, 0), no_table)
        => "BR-51", STATUS_INVALID_PARAMETER;

    #[test]
    fn br_53_node_metadata_ddi_is_required() =
        start_with(no_edit, |t| t.DxgkDdiGetNodeMetadata = None) => "BR-53", STATUS_INVALID_PARAMETER;

    #[test]
    fn br_54_stable_power_state_goes_with_calibrate_gpu_clock() =
        start_with(no_edit, |t| t.DxgkDdiSetStablePowerState = None)
        => "BR-54", STATUS_INVALID_PARAMETER;

    #[test]
    fn br_57_history_precision_outside_32_to_64_is_configuration_error() =
        start_with_knob(&PRECISION, Some(10)) => "BR-57", STATUS_DEVICE_CONFIGURATION_ERROR;

    #[test]
    fn br_58_virtual_copy_engine_must_be_a_node() = start_with_physical(no_edit, |p| {
        p.Flags.set(DXGK_PHYSICALADAPTERFLAGS::VirtualCopyEngineSupported, 1);
        p.VirtualCopyNodeIndex = u32::from(p.NumExecutionNodes);
    }) => "BR-58", STATUS_INVALID_PARAMETER;

    #[test]
    fn br_58_virtual_copy_engine_needs_iommu_secure_mode() = start_with_physical(no_edit, |p| {
        p.Flags.set(DXGK_PHYSICALADAPTERFLAGS::VirtualCopyEngineSupported, 1);
        p.VirtualCopyNodeIndex = 0;
    }) => "BR-58", STATUS_INVALID_PARAMETER;

    /// BR-61: VidMm cannot be created without the segment answer: the start fails with
    /// STATUS_NO_MEMORY (VidMmiInit, ADAPTER_RENDER::Initialize).
    /// BR-60: a driver that cannot address the machine's highest physical page gets no VidMm
    /// (no IOMMU remapping here), which fails the start with STATUS_NO_MEMORY.
    #[test]
    fn br_60_highest_acceptable_address_must_cover_physical_memory() = start_with(
        |c| c.HighestAcceptableAddress = rvgpu_ddi::basic::LARGE_INTEGER::from_i64(0xFFFF_FFFF),
        no_table,
    ) => "BR-60", STATUS_NO_MEMORY;

    #[test]
    fn br_61_segment_query_failure_fails_the_start_with_no_memory() =
        start_with_knob(&REFUSE_TYPE, Some(rvgpu_ddi::adapter::DXGKQAITYPE_QUERYSEGMENT4))
        => "BR-61", STATUS_NO_MEMORY;

    /// BR-62: more than 32 segments is refused (VidMmiQuerySegmentInfo4); VidMmiInit turns the
    /// failure into STATUS_NO_MEMORY.
    #[test]
    fn br_62_more_than_32_segments_is_refused() =
        start_with_knob(&SEGMENT_COUNT, Some(33)) => "BR-62", STATUS_NO_MEMORY;

    /// BR-64: a segment with SupportsCpuHostAperture may not also be an aperture (InitSegments,
    /// inside VidMmiInit: NO_MEMORY). rvgpu's first segment is its aperture.
    #[test]
    fn br_64_host_aperture_segment_is_not_an_aperture() =
        start_with_knob(&FIRST_SEGMENT_FLAGS, 1 << 13) => "BR-64", STATUS_NO_MEMORY;

    /// BR-65(a): the paging buffers' segment must be 0 or a reported segment (VIDMM_GLOBAL::Init,
    /// inside VidMmiInit: NO_MEMORY).
    #[test]
    fn br_65_paging_buffer_segment_beyond_the_segments_is_refused() =
        start_with_knob(&PAGING_POOL, Some((9, 4096))) => "BR-65", STATUS_NO_MEMORY;
}

/// BR-58: rvgpu answers DXGKQAITYPE_PHYSICALADAPTERCAPS as DRIVERCAPS describes the
/// adapter: every node, the same paging node, GpuMmu, the start's device handle, no virtual
/// copy engine.
#[test]
fn br_58_rvgpu_answers_physical_adapter_caps() {
    let seen = std::rc::Rc::new(Cell::new(None));
    let s2 = seen.clone();
    let (m, r) = start_with_physical(no_edit, move |p| s2.set(Some(*p)));
    r.expect("start");
    let p = seen
        .get()
        .expect("Windows asks PHYSICALADAPTERCAPS of a WDDM 3.2 driver");
    let caps = m.query_driver_caps(0).expect("caps");
    assert_eq!(
        u32::from(p.NumExecutionNodes),
        caps.GpuEngineTopology.NbAsymetricProcessingNodes
    );
    assert_eq!(
        u32::from(p.PagingNodeIndex),
        caps.MemoryManagementCaps.PagingNode
    );
    assert!(!p.DxgkPhysicalAdapterHandle.is_null());
    assert!(p.Flags.is_set(DXGK_PHYSICALADAPTERFLAGS::GpuMmuSupported));
    assert!(!p
        .Flags
        .is_set(DXGK_PHYSICALADAPTERFLAGS::VirtualCopyEngineSupported));
}

/// BR-36(a) reads the physical adapter's caps: when the driver does not answer them, Windows
/// uses defaults and does not apply it ([D] `DXGADAPTER::Initialize`).
#[test]
fn br_36_multi_engine_rule_is_skipped_without_physical_caps() {
    let not_multi = |c: &mut DXGK_DRIVERCAPS| {
        for bit in [
            DXGK_VIDSCHCAPS::MultiEngineAware,
            DXGK_VIDSCHCAPS::PreemptionAware,
            DXGK_VIDSCHCAPS::CancelCommandAware,
        ] {
            c.SchedulingCaps.set(bit, 0);
        }
    };
    REFUSE_TYPE.set(Some(DXGKQAITYPE_PHYSICALADAPTERCAPS));
    let (_, r) = start_with(not_multi, no_table);
    REFUSE_TYPE.set(None);
    assert!(
        !matches!(&r, Err(SimError::StartRefused { rule: "BR-36", .. })),
        "{r:?}"
    );
    caps_refused(not_multi, "BR-36", STATUS_INVALID_PARAMETER);
}

/// BR-40: each cross-adapter tier needs the tiers below it; a complete set starts.
#[test]
fn br_40_cross_adapter_tiers_build_on_each_other() {
    let tiers = |base, texture, scanout| {
        move |c: &mut DXGK_DRIVERCAPS| {
            let mm = &mut c.MemoryManagementCaps.Anonymous;
            mm.set(DXGK_VIDMMCAPS_0::CrossAdapterResource, base);
            mm.set(DXGK_VIDMMCAPS_0::CrossAdapterResourceTexture, texture);
            mm.set(DXGK_VIDMMCAPS_0::CrossAdapterResourceScanout, scanout);
        }
    };
    for (b, t, s) in [(0, 1, 0), (0, 0, 1), (1, 0, 1), (0, 1, 1)] {
        caps_refused(tiers(b, t, s), "BR-40", STATUS_INVALID_PARAMETER);
    }
    let (_, r) = start_with(tiers(1, 1, 1), no_table);
    r.expect("all three tiers");
}

#[test]
fn br_74_reserved_node_metadata_flag_bits_are_invalid() {
    let r = start_with_node_edit(no_edit, |md| {
        let mut f = md.Flags;
        f.Value |= 1 << 9;
        md.Flags = f;
    });
    refused(r, "BR-74", STATUS_INVALID_PARAMETER);
    // Bit 4 (SupportBuildTestCommandBuffer, 24H2) and the in-flight limit are not reserved.
    start_with_node_edit(no_edit, |md| {
        let mut f = md.Flags;
        f.Value |= (1 << 4) | (3 << 16);
        md.Flags = f;
    })
    .expect("defined bits");
}

/// BR-75: a node's GPU VA model must be one the adapter claims (rvgpu: GpuMmu on both).
#[test]
fn br_75_node_gpu_va_model_must_match_the_adapter() {
    let r = start_with_node_edit(no_edit, |md| md.IoMmuSupported = 1);
    refused(r, "BR-75", STATUS_INVALID_PARAMETER);
    let (_, r) = start_with(
        |c| {
            c.MemoryManagementCaps
                .Anonymous
                .set(DXGK_VIDMMCAPS_0::IoMmuSupported, 1)
        },
        no_table,
    );
    r.expect("IoMmu claimed by the adapter and by no node");
}

/// BR-52: with `ValidateWDDMCaps`, each missing WDDM 1.2 render feature is named in the
/// refusal; without it (Windows' default) the same caps start.
#[test]
fn br_52_mandatory_wddm_1_2_features_only_under_validate_wddm_caps() {
    // Every edit also claims kernel-mode command buffers (what rvgpu lacks), so that the
    // refusal names only the feature the edit removed.
    const KMCB: u32 = 1 << 2;
    type Edit = fn(&mut DXGK_DRIVERCAPS);
    let cases: [(&str, Edit); 3] = [
        ("a preemption granularity (NONE)", |c| {
            c.PresentationCaps.Value |= KMCB;
            c.PreemptionCaps.GraphicsPreemptionGranularity = 0;
        }),
        ("SupportPerEngineTDR", |c| {
            c.PresentationCaps.Value |= KMCB;
            c.SupportPerEngineTDR = 0;
        }),
        ("PresentationCaps.SupportKernelModeCommandBuffer", |_| {}),
    ];
    for (feature, edit) in cases {
        // The claimed kernel-mode command buffers need a RenderKm slot (BR-43); a stand-in.
        let table = |t: &mut DRIVER_INITIALIZATION_DATA| {
            t.DxgkDdiRenderKm = Some(unsafe_stand_in);
        };
        let (_, r) = start_with_policy(true, edit, table);
        match r {
            Err(SimError::StartRefused { rule, status, why }) => {
                assert_eq!((rule, status), ("BR-52", STATUS_INVALID_PARAMETER), "{why}");
                assert!(why.ends_with(&format!(": {feature}")), "{why}");
            }
            other => panic!("{feature}: expected BR-52, got {other:?}"),
        }
        let (_, r) = start_with_policy(false, edit, table);
        assert!(r.is_ok(), "{feature} without ValidateWDDMCaps: {r:?}");
    }
}

/// BR-68: a GpuMmu adapter must answer GPUMMUCAPS with 2..=6 levels.
/// BR-63: NumUEFIFrameBufferRanges (byte 92 of the descriptor) is 0 or 1, on one segment at
/// most; otherwise VidMmiQuerySegmentInfo4 fails and the start with it (NO_MEMORY).
#[test]
fn br_63_uefi_frame_buffer_ranges_on_one_segment_at_most() {
    for ranges in [[2, 0], [1, 1]] {
        let (_, r) = start_with_knob(&UEFI_RANGES, Some(ranges));
        refused(r, "BR-63", STATUS_NO_MEMORY);
    }
}

/// BR-65(b): the paging DMA pool accepts only aperture segments (InitDmaPools →
/// VIDMM_DMA_POOL::Init → VerifySegmentSet: INVALID_PARAMETER, the paging process fails and the
/// start with it). rvgpu's segment 2 is CPU-visible VRAM, its segment 1 the aperture.
#[test]
fn br_65_paging_buffers_only_in_an_aperture_segment() {
    let (_, r) = start_with_knob(&PAGING_POOL, Some((2, 4096)));
    refused(r, "BR-65", STATUS_INVALID_PARAMETER);
    let (m, r) = start_with_knob(&PAGING_POOL, Some((1, 4096)));
    assert!(
        r.is_ok(),
        "an aperture paging segment starts: {r:?}; {:#?}",
        m.driver_log()
    );
    let (_, r) = start_with_knob(&PAGING_POOL, Some((0, 0)));
    refused(r, "BR-65", STATUS_NO_MEMORY);
}

/// What the BuildPagingBuffer spy saw: `(DmaSize, hSystemContext)` per call.
static PAGING_CALLS: std::sync::Mutex<Vec<(u32, usize)>> = std::sync::Mutex::new(Vec::new());
static REAL_BUILD: std::sync::OnceLock<rvgpu_ddi::tdr::PDXGKDDI_BUILDPAGINGBUFFER> =
    std::sync::OnceLock::new();
/// System contexts the driver created (`hContext` of CreateContext with `SystemContext`), and
/// the DMA segment sets of every context it created.
static BR65_SYSTEM_CONTEXTS: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
static CONTEXT_DMA_SETS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

unsafe extern "system" fn spy_build_paging(
    ctx: HANDLE,
    args: *mut rvgpu_ddi::tdr::DXGKARG_BUILDPAGINGBUFFER,
) -> NTSTATUS {
    // SAFETY: the OS's argument block.
    let (size, system) = unsafe { ((*args).DmaSize, (*args).hSystemContext as usize) };
    PAGING_CALLS.lock().unwrap().push((size, system));
    let real = REAL_BUILD.get().copied().flatten().expect("real DDI");
    // SAFETY: forwarded unchanged to the driver's DDI.
    unsafe { real(ctx, args) }
}

unsafe extern "system" fn spy_create_context(
    device: HANDLE,
    args: *mut rvgpu_ddi::submission::DXGKARG_CREATECONTEXT,
) -> NTSTATUS {
    let real = REAL_CREATE_CONTEXT
        .get()
        .copied()
        .flatten()
        .expect("real DDI");
    // SAFETY: forwarded unchanged to the driver's DDI; the block is the OS's.
    let s = unsafe { real(device, args) };
    if s >= 0 {
        // SAFETY: the OS's argument block, filled by the driver.
        let a = unsafe { &*args };
        let system = a
            .Flags
            .is_set(rvgpu_ddi::submission::DXGK_CREATECONTEXTFLAGS::SystemContext);
        if system {
            BR65_SYSTEM_CONTEXTS
                .lock()
                .unwrap()
                .push(a.hContext as usize);
        }
        CONTEXT_DMA_SETS
            .lock()
            .unwrap()
            .push(a.ContextInfo.DmaBufferSegmentSet);
    }
    s
}

/// BR-65: every paging buffer is one of the paging pool's, of the driver's PagingBufferSize,
/// and names the driver's paging context (VIDMM_GLOBAL::SetupForBuildPagingBuffer). BR-67: the
/// contexts rvgpu creates take their DMA buffers from its aperture segment, which the DMA pools
/// accept; with none a GPU-VA context's privileged pool would bug-check Windows.
#[test]
fn br_65_67_paging_buffers_and_context_dma_segments() {
    PAGING_POOL.set(Some((0, 8192)));
    let (m, r) = start_with(no_edit, |t| {
        let _ = REAL_BUILD.set(t.DxgkDdiBuildPagingBuffer);
        t.DxgkDdiBuildPagingBuffer = Some(spy_build_paging);
        let _ = REAL_CREATE_CONTEXT.set(t.DxgkDdiCreateContext);
        t.DxgkDdiCreateContext = Some(spy_create_context);
    });
    PAGING_POOL.set(None);
    assert!(r.is_ok(), "start: {r:?}; {:#?}", m.driver_log());
    let p = m.create_process(0).expect("process");
    rvgpu_umd::kmt::Kmt::create_context(&m.kmt(&p), 0).expect("context");
    // Only this test installs these spies, so parallel tests add nothing to their records.
    let calls = PAGING_CALLS.lock().unwrap().clone();
    let systems = BR65_SYSTEM_CONTEXTS.lock().unwrap().clone();
    assert!(
        !calls.is_empty(),
        "the paging process's tables were built by paging buffers"
    );
    for (size, system) in calls {
        assert_eq!(
            size, 8192,
            "a paging buffer of the driver's PagingBufferSize"
        );
        assert!(
            system != 0 && systems.contains(&system),
            "hSystemContext {system:#x} is one of the driver's system contexts {systems:x?}"
        );
    }
    let model = m.memory_model(0).expect("model");
    let sets = CONTEXT_DMA_SETS.lock().unwrap().clone();
    assert!(
        sets.len() > systems.len(),
        "a process context was created too"
    );
    for set in sets {
        assert_ne!(set, 0, "a GPU-VA context names a DMA buffer segment");
        assert_eq!(
            rvgpu_simos::vidmm::dmapool::verify_segment_set(&model, set),
            Ok(()),
            "the DMA pools accept segment set {set:#x}"
        );
    }
}

#[test]
fn br_68_gpummu_caps_are_required_and_checked() {
    let (_, r) = start_with_knob(
        &REFUSE_TYPE,
        Some(rvgpu_ddi::adapter::DXGKQAITYPE_GPUMMUCAPS),
    );
    refused(r, "BR-68", STATUS_DEVICE_CONFIGURATION_ERROR);
    let (_, r) = start_with_knob(&MMU_LEVELS, Some(7));
    refused(r, "BR-68", STATUS_DEVICE_CONFIGURATION_ERROR);
    let (_, r) = start_with_knob(
        &REFUSE_TYPE,
        Some(rvgpu_ddi::adapter::DXGKQAITYPE_PAGETABLELEVELDESC),
    );
    refused(r, "BR-68", STATUS_DEVICE_CONFIGURATION_ERROR);
}

#[test]
fn br_23_status_outside_the_allow_list_is_logged_not_refused() {
    let (m, r) = start_with_knob(&REFUSE_TYPE, Some(DXGKQAITYPE_HISTORYBUFFERPRECISION));
    // The precision query's failure is tolerated (BR-57), its status is not in the list.
    assert_eq!(r, Ok(()));
    let log = m.triage_log(0);
    assert!(
        log.iter()
            .any(|l| l.starts_with("BR-23: DxgkDdiQueryAdapterInfo") && l.contains("0xc00000bb")),
        "{log:#?}"
    );
}

unsafe extern "system" fn overrunning_node_metadata(
    _h: HANDLE,
    _node: u32,
    out: *mut DXGK_NODEMETADATA,
) -> NTSTATUS {
    // The old 80-byte layout: six bytes past the 74-byte entry.
    // SAFETY: deliberately wrong, into the OS's array (which has room after the last entry).
    unsafe { out.cast::<u8>().write_bytes(0, 80) };
    STATUS_SUCCESS
}

/// Dxgkrnl's node array has the header's 74-byte stride; a driver writing the old 80-byte
/// layout corrupts the next entry, which the OS sees (memory corruption on Windows).
#[test]
fn node_metadata_written_past_its_74_byte_entry_is_caught() {
    let (_, r) = start_with(no_edit, |t| {
        t.DxgkDdiGetNodeMetadata = Some(overrunning_node_metadata)
    });
    match r {
        Err(SimError::Violation(why)) => assert!(why.contains("wrote past"), "{why}"),
        other => panic!("expected the overrun to be caught, got {other:?}"),
    }
}

type StartFn = unsafe extern "system" fn(
    rvgpu_ddi::PVOID,
    *mut rvgpu_ddi::adapter::DXGK_START_INFO,
    *mut rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE,
    *mut u32,
    *mut u32,
) -> NTSTATUS;
type IsrFn = unsafe extern "system" fn(rvgpu_ddi::PVOID, u32) -> u8;

thread_local! {
    static REAL_START: Cell<Option<(StartFn, IsrFn)>> = const { Cell::new(None) };
    static ISR_BEFORE_START: Cell<Option<u8>> = const { Cell::new(None) };
}

/// StartDevice as Dxgkrnl's interrupt sees it: the line is connected before the start, so an
/// interrupt (a shared line, a device left asserting by firmware) reaches the ISR first.
unsafe extern "system" fn start_after_an_interrupt(
    ctx: rvgpu_ddi::PVOID,
    info: *mut rvgpu_ddi::adapter::DXGK_START_INFO,
    iface: *mut rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE,
    sources: *mut u32,
    children: *mut u32,
) -> NTSTATUS {
    let (start, isr) = REAL_START.get().expect("real StartDevice");
    // SAFETY: the driver's ISR with its own context, before its StartDevice ran.
    ISR_BEFORE_START.set(Some(unsafe { isr(ctx, 0) }));
    // SAFETY: forwarded unchanged.
    unsafe { start(ctx, info, iface, sources, children) }
}

/// BR-20: the ISR can run before StartDevice (Dxgkrnl connects the interrupt first); rvgpu's
/// returns FALSE without touching the device, and the start then succeeds.
#[test]
fn br_20_isr_before_start_device_claims_nothing() {
    let mut m = machine(false);
    let (start, isr) = load_hooked(&mut m, |t| {
        let real = (t.DxgkDdiStartDevice, t.DxgkDdiInterruptRoutine);
        t.DxgkDdiStartDevice = Some(start_after_an_interrupt);
        real
    });
    REAL_START.set(Some((start.expect("StartDevice"), isr.expect("ISR"))));
    let r = m.start_adapter(0);
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(
        ISR_BEFORE_START.get(),
        Some(0),
        "the ISR claimed an interrupt before start"
    );
    assert!(m.fault().is_none());
}

// ---------------------------------------------------------------------------------------------
// BR-66: the system device and contexts (VidSchCreateSystemDevices).

/// The driver's own CreateContext, for the stand-ins that wrap it (BR-65, BR-66).
static REAL_CREATE_CONTEXT: std::sync::OnceLock<rvgpu_ddi::submission::PDXGKDDI_CREATECONTEXT> =
    std::sync::OnceLock::new();
static REAL_SUBMIT: std::sync::OnceLock<rvgpu_ddi::init::PDXGKDDI_SUBMITCOMMAND> =
    std::sync::OnceLock::new();
/// System contexts the driver created: (node, driver handle).
static SYSTEM_CONTEXTS: std::sync::Mutex<Vec<(u32, usize)>> = std::sync::Mutex::new(Vec::new());
/// Paging submissions seen: (node, hContext).
static PAGING_SUBMITS: std::sync::Mutex<Vec<(u32, usize)>> = std::sync::Mutex::new(Vec::new());

/// rvgpu's CreateContext, refusing system contexts.
unsafe extern "system" fn no_system_context(
    h: HANDLE,
    args: *mut rvgpu_ddi::submission::DXGKARG_CREATECONTEXT,
) -> NTSTATUS {
    // SAFETY: the OS's argument block.
    let system = unsafe { (*args).Flags }
        .is_set(rvgpu_ddi::submission::DXGK_CREATECONTEXTFLAGS::SystemContext);
    if system {
        return rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED;
    }
    forward_to!(REAL_CREATE_CONTEXT(h, args))
}

/// A driver that cannot make a system context does not start (helios: Code 43 on 26100).
#[test]
fn br_66_system_context_refused_fails_the_start() {
    let (_, r) = start_with(no_edit, |t| {
        let _ = REAL_CREATE_CONTEXT.set(t.DxgkDdiCreateContext);
        t.DxgkDdiCreateContext = Some(no_system_context);
    });
    refused(r, "BR-66", rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED);
}

/// rvgpu's CreateContext, recording the system contexts it returns.
unsafe extern "system" fn recording_create_context(
    h: HANDLE,
    args: *mut rvgpu_ddi::submission::DXGKARG_CREATECONTEXT,
) -> NTSTATUS {
    // The block is read back after the call.
    let s = forward_to!(REAL_CREATE_CONTEXT(h, args));
    // SAFETY: the OS's argument block, filled by the driver.
    let a = unsafe { &*args };
    if s >= 0
        && a.Flags
            .is_set(rvgpu_ddi::submission::DXGK_CREATECONTEXTFLAGS::SystemContext)
    {
        SYSTEM_CONTEXTS
            .lock()
            .unwrap()
            .push((a.NodeOrdinal, a.hContext as usize));
    }
    s
}

/// rvgpu's SubmitCommand, recording the context of every paging buffer.
unsafe extern "system" fn recording_submit(
    h: HANDLE,
    args: *const rvgpu_ddi::tdr::DXGKARG_SUBMITCOMMAND,
) -> NTSTATUS {
    // SAFETY: the OS's argument block; both union arms are a HANDLE.
    let (paging, node, ctx) = unsafe {
        let a = &*args;
        (
            a.Flags
                .is_set(rvgpu_ddi::submission::DXGK_SUBMITCOMMANDFLAGS::Paging),
            a.NodeOrdinal,
            a.Anonymous.hContext as usize,
        )
    };
    if paging {
        PAGING_SUBMITS.lock().unwrap().push((node, ctx));
    }
    forward_to!(REAL_SUBMIT(h, args))
}

/// Every node gets a system context at start, and VidMm's paging buffers are submitted on
/// them: never with a null `hContext` (which no Windows build passes).
#[test]
fn br_66_paging_buffers_run_on_the_system_contexts() {
    let (m, r) = start_with(no_edit, |t| {
        let _ = REAL_CREATE_CONTEXT.set(t.DxgkDdiCreateContext);
        let _ = REAL_SUBMIT.set(t.DxgkDdiSubmitCommand);
        t.DxgkDdiCreateContext = Some(recording_create_context);
        t.DxgkDdiSubmitCommand = Some(recording_submit);
    });
    r.expect("start");
    let system = SYSTEM_CONTEXTS.lock().unwrap().clone();
    let nodes: Vec<u32> = system.iter().map(|&(n, _)| n).collect();
    assert_eq!(nodes, vec![0, 1], "one system context per node, in order");
    // A process's allocation is mapped through paging buffers.
    let p = m.create_process(0).expect("process");
    let _buf = rvgpu_umd::kmt::Kmt::create_allocation(&m.kmt(&p), 64 * 1024).expect("allocation");
    let paging = PAGING_SUBMITS.lock().unwrap().clone();
    assert!(!paging.is_empty(), "the mapping submitted paging buffers");
    for (node, ctx) in paging {
        assert!(
            system.contains(&(node, ctx)),
            "paging buffer on node {node} with hContext {ctx:#x}, system contexts {system:?}"
        );
    }
}

/// BR-36(b) runs in `CreateRenderCore` after BR-49 ([D]), so a driver breaking BR-38 (in
/// `DXGADAPTER::Initialize`) or BR-49 as well is refused for those first.
#[test]
fn br_36_preemption_awareness_rule_runs_in_the_render_core_after_br_49() {
    let no_multi_engine = |c: &mut DXGK_DRIVERCAPS| {
        c.SchedulingCaps.set(DXGK_VIDSCHCAPS::MultiEngineAware, 0);
        c.SchedulingCaps.set(DXGK_VIDSCHCAPS::PreemptionAware, 1);
    };
    // Without physical caps BR-36(a) ("not multi-engine aware") does not run.
    REFUSE_TYPE.set(Some(DXGKQAITYPE_PHYSICALADAPTERCAPS));
    caps_refused(no_multi_engine, "BR-36", STATUS_INVALID_PARAMETER);
    caps_refused(
        move |c| {
            no_multi_engine(c);
            c.NumberOfSwizzlingRanges = 1;
        },
        "BR-49",
        STATUS_REVISION_MISMATCH,
    );
    let (_, r) = start_with(
        move |c| {
            no_multi_engine(c);
            c.MiscCaps.Value |= 1 << 20;
        },
        no_table,
    );
    REFUSE_TYPE.set(None);
    refused(r, "BR-38", STATUS_INVALID_PARAMETER);
}

/// BR-33 runs after BR-38 and BR-39 in `DXGADAPTER::Initialize` ([D]).
#[test]
fn br_33_unknown_wddm_version_is_checked_after_misc_caps() {
    caps_refused(
        |c| {
            c.WDDMVersion = 0x3300;
            c.MiscCaps.Value |= 1 << 20;
        },
        "BR-38",
        STATUS_INVALID_PARAMETER,
    );
}

/// BR-03: Dxgkrnl copies only the bytes the table's version defines; later slots are not seen
/// (ignored, not refused). A 0x11007 table is copied whole.
#[test]
fn br_03_slots_past_the_versions_table_size_are_not_copied() {
    let t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    assert_eq!(bringup::driver_data_size(0x2000), 496);
    assert_eq!(bringup::driver_data_size(0xF003), 1296);
    assert_eq!(bringup::driver_data_size(0x10003), 1328);
    let whole = std::mem::size_of::<DRIVER_INITIALIZATION_DATA>();
    assert_eq!(bringup::driver_data_size(t.Version), whole);
    let copied = bringup::table_as_copied(&t);
    assert!(copied.slots().eq(t.slots()), "a 3.2 table is copied whole");
    let mut old = t;
    old.Version = 0x2000;
    let copied = bringup::table_as_copied(&old);
    // Slot k sits at byte 8 * (k + 1): the first 61 slots fit into 496 bytes.
    for (k, ((name, before), (_, after))) in old.slots().zip(copied.slots()).enumerate() {
        let inside = 8 * (k + 2) <= 496;
        assert_eq!(after, before && inside, "{name} (slot {k})");
    }
    assert!(copied.DxgkDdiCreateContext.is_some() && copied.DxgkDdiRenderKm.is_none());
}

/// The render-relevant DDIs of BR-56, all NULL.
fn no_render_ddis(t: &mut DRIVER_INITIALIZATION_DATA) {
    t.DxgkDdiCreateDevice = None;
    t.DxgkDdiDestroyDevice = None;
    t.DxgkDdiCreateAllocation = None;
    t.DxgkDdiDestroyAllocation = None;
    t.DxgkDdiDescribeAllocation = None;
    t.DxgkDdiGetStandardAllocationDriverData = None;
    t.DxgkDdiOpenAllocation = None;
    t.DxgkDdiCloseAllocation = None;
    t.DxgkDdiAcquireSwizzlingRange = None;
    t.DxgkDdiReleaseSwizzlingRange = None;
    t.DxgkDdiPatch = None;
    t.DxgkDdiSubmitCommand = None;
    t.DxgkDdiPreemptCommand = None;
    t.DxgkDdiBuildPagingBuffer = None;
    t.DxgkDdiResetFromTimeout = None;
    t.DxgkDdiRestartFromTimeout = None;
    t.DxgkDdiQueryCurrentFence = None;
    t.DxgkDdiRender = None;
    t.DxgkDdiRenderKm = None;
    t.DxgkDdiPresent = None;
    t.DxgkDdiCreateOverlay = None;
    t.DxgkDdiUpdateOverlay = None;
    t.DxgkDdiFlipOverlay = None;
    t.DxgkDdiDestroyOverlay = None;
}

/// BR-56: a driver with no render DDI at all has no render core (not a BR-47 failure), and a
/// render-only adapter has no display core either: `REVISION_MISMATCH`. One render DDI
/// present makes it a render core that lacks the rest (BR-47).
#[test]
fn br_56_neither_render_nor_display_core_is_revision_mismatch() {
    let (_, r) = start_with(no_edit, no_render_ddis);
    refused(r, "BR-56", STATUS_REVISION_MISMATCH);
    let (_, r) = start_with(no_edit, |t| {
        let present = t.DxgkDdiPresent;
        no_render_ddis(t);
        t.DxgkDdiPresent = present;
    });
    refused(r, "BR-47", STATUS_REVISION_MISMATCH);
}

/// BR-41: the hybrid rules. rvgpu claims neither kind; each broken combination is refused, and
/// a hybrid discrete adapter with cross-adapter resources starts.
#[test]
fn br_41_hybrid_flag_rules() {
    let cross = |c: &mut DXGK_DRIVERCAPS| {
        c.MemoryManagementCaps
            .Anonymous
            .set(DXGK_VIDMMCAPS_0::CrossAdapterResource, 1)
    };
    // Hybrid without cross-adapter resources.
    caps_refused(|c| c.HybridDiscrete = 1, "BR-41", STATUS_INVALID_PARAMETER);
    // Both kinds at once.
    caps_refused(
        move |c| {
            cross(c);
            c.HybridDiscrete = 1;
            c.HybridIntegrated = 1;
        },
        "BR-41",
        STATUS_INVALID_PARAMETER,
    );
    // Hybrid integrated on an adapter without outputs (every render-only adapter).
    caps_refused(
        move |c| {
            cross(c);
            c.HybridIntegrated = 1;
        },
        "BR-41",
        STATUS_INVALID_PARAMETER,
    );
    // Below WDDM 2.0 under ValidateWDDMCaps, before the cross-adapter rules.
    let (_, r) = start_with_policy(
        true,
        |c| {
            c.WDDMVersion = 0x1300;
            c.HybridIntegrated = 1;
        },
        no_table,
    );
    refused(r, "BR-41", STATUS_INVALID_PARAMETER);
    // The before-0x5005 arm, directly (rvgpu declares 0x11007).
    let t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    let mut caps = DXGK_DRIVERCAPS {
        WDDMVersion: 0x2000,
        HybridDiscrete: 1,
        ..DXGK_DRIVERCAPS::default()
    };
    cross(&mut caps);
    let facts = bringup::StartFacts {
        sources: 1,
        children: 1,
        ..bringup::StartFacts::render_only(0x5004, rvgpu_simos::CpuArch::X64, false)
    };
    let rules = bringup::check_caps(&caps, None, &t, &facts);
    assert!(
        rules
            .iter()
            .any(|v| v.rule == "BR-41" && v.why.contains("sources or targets")),
        "{rules:?}"
    );
    // A well-formed hybrid discrete adapter starts.
    let (_, r) = start_with(
        move |c| {
            cross(c);
            c.HybridDiscrete = 1;
        },
        no_table,
    );
    r.expect("hybrid discrete with cross-adapter resources");
}

/// BR-55: IOMMU secure mode makes the OS ask for the frame-buffer save size (its failure fails
/// the start with the driver's status, a size that is not a page multiple is refused) and
/// needs the exclusive-access DDIs.
#[test]
fn br_55_iommu_secure_mode_rules() {
    let secure = |c: &mut DXGK_DRIVERCAPS| {
        c.MemoryManagementCaps
            .Anonymous
            .set(DXGK_VIDMMCAPS_0::IoMmuSecureModeSupported, 1)
    };
    let with_save = |answer: Option<(NTSTATUS, u64)>, ddis: bool| {
        FB_SAVE.set(answer);
        let (_, r) = start_with(secure, move |t| {
            if ddis {
                t.DxgkDdiBeginExclusiveAccess = stub();
                t.DxgkDdiEndExclusiveAccess = stub();
            }
        });
        FB_SAVE.set(None);
        r
    };
    refused(
        with_save(Some((STATUS_NOT_SUPPORTED, 0)), true),
        "BR-55",
        STATUS_NOT_SUPPORTED,
    );
    refused(
        with_save(Some((STATUS_SUCCESS, 0x1001)), true),
        "BR-55",
        STATUS_INVALID_PARAMETER,
    );
    // A page-multiple size passes the query; without the DDI pair the render core refuses.
    refused(
        with_save(Some((STATUS_SUCCESS, 0x2000)), false),
        "BR-55",
        STATUS_INVALID_PARAMETER,
    );
    let r = with_save(Some((STATUS_SUCCESS, 0x2000)), true);
    assert!(
        !matches!(r, Err(SimError::StartRefused { rule: "BR-55", .. })),
        "{r:?}"
    );
}

/// BR-54 is checked after the render core is initialised: a driver that also breaks BR-57
/// (inside `ADAPTER_RENDER::Initialize`) is refused for BR-57.
#[test]
fn br_54_runs_after_the_render_core_is_initialised() {
    PRECISION.set(Some(10));
    let (_, r) = start_with(no_edit, |t| t.DxgkDdiSetStablePowerState = None);
    PRECISION.set(None);
    refused(r, "BR-57", STATUS_DEVICE_CONFIGURATION_ERROR);
}

/// A machine whose adapter's software key holds `value` as `UserModeDriverName`.
fn umd_name_config(value: Option<rvgpu_simos::adapter::registry::RegValue>) -> MachineConfig {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].user_mode_driver_name = value;
    cfg
}

/// BR-35: the UMD name the INF writes starts; a missing one is `OBJECT_NAME_NOT_FOUND`
/// (unless compute-only or virtual-GPU-only); an empty or badly formed one
/// `DEVICE_CONFIGURATION_ERROR`.
#[test]
fn br_35_user_mode_driver_name_from_the_registry() {
    use rvgpu_simos::adapter::bringup::STATUS_OBJECT_NAME_NOT_FOUND;
    use rvgpu_simos::adapter::registry::{self, RegValue, REG_DWORD, REG_MULTI_SZ, REG_SZ};
    let (_, r) = start_with_config(
        umd_name_config(Some(registry::inf_user_mode_driver_name())),
        no_edit,
        no_table,
    );
    r.expect("the INF's UserModeDriverName");
    let (_, r) = start_with_config(
        umd_name_config(Some(RegValue {
            ty: REG_SZ,
            data: "rvgpu_umd.dll"
                .encode_utf16()
                .flat_map(u16::to_le_bytes)
                .collect(),
        })),
        no_edit,
        no_table,
    );
    r.expect("a REG_SZ name without terminator gets one");
    let missing = [
        None,
        Some(RegValue {
            ty: REG_DWORD,
            data: vec![1, 0, 0, 0],
        }),
        Some(RegValue {
            ty: REG_MULTI_SZ,
            data: Vec::new(),
        }),
    ];
    for value in missing {
        let (_, r) = start_with_config(umd_name_config(value.clone()), no_edit, no_table);
        refused(r, "BR-35", STATUS_OBJECT_NAME_NOT_FOUND);
        // A compute-only adapter needs no UMD name.
        let (_, r) = start_with_config(
            umd_name_config(value.clone()),
            |c| c.MiscCaps.set(DXGK_DRIVERCAPS_MiscCaps::ComputeOnly, 1),
            no_table,
        );
        assert!(
            !matches!(r, Err(SimError::StartRefused { rule: "BR-35", .. })),
            "{r:?}"
        );
        // A virtual-GPU-only one passes the first check and fails the render core's: its name
        // is empty.
        let (_, r) = start_with_config(
            umd_name_config(value),
            |c| c.MiscCaps.set(DXGK_DRIVERCAPS_MiscCaps::VirtualGpuOnly, 1),
            no_table,
        );
        refused(r, "BR-35", STATUS_DEVICE_CONFIGURATION_ERROR);
    }
    let empty = RegValue::multi_sz(&[""]);
    let (_, r) = start_with_config(umd_name_config(Some(empty)), no_edit, no_table);
    refused(r, "BR-35", STATUS_DEVICE_CONFIGURATION_ERROR);
    // A REG_MULTI_SZ whose first string runs to the end of the value without a terminator.
    let unterminated = RegValue {
        ty: REG_MULTI_SZ,
        data: "rvgpu_umd.dll"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect(),
    };
    let (_, r) = start_with_config(umd_name_config(Some(unterminated)), no_edit, no_table);
    refused(r, "BR-35", STATUS_DEVICE_CONFIGURATION_ERROR);
}

/// BR-76: the user-mode submission caps (asked because rvgpu's nodes claim UMS) must be
/// answered, with a doorbell size of 1..=0x4000, no reserved flag and, with a secondary
/// doorbell, a secondary size of 1..=0x4000. A size Windows accepts but one BAR2 page cannot
/// hold is the project's UM-04 refusal.
#[test]
fn br_76_user_mode_submission_caps_rules() {
    let with = |edit: fn(&mut DXGK_USERMODESUBMISSION_CAPS)| {
        let (_, r) = start_with_knob(&UMS_CAPS_EDIT, Some(edit));
        r
    };
    refused(
        with(|c| c.DoorbellSizeInBytes = 0),
        "BR-76",
        STATUS_INVALID_PARAMETER,
    );
    refused(
        with(|c| c.DoorbellSizeInBytes = 0x4001),
        "BR-76",
        STATUS_INVALID_PARAMETER,
    );
    refused(
        with(|c| c.Flags.Value |= 2),
        "BR-76",
        STATUS_INVALID_PARAMETER,
    );
    refused(
        with(|c| {
            c.Flags.Value |= 1;
            c.SecondaryDoorbellSizeInBytes = 0;
        }),
        "BR-76",
        STATUS_INVALID_PARAMETER,
    );
    with(|c| {
        c.Flags.Value |= 1;
        c.SecondaryDoorbellSizeInBytes = 0x1000;
    })
    .expect("a secondary doorbell with its size");
    match with(|c| c.DoorbellSizeInBytes = 0x2000) {
        Err(SimError::Rejected(why)) => assert!(why.contains("UM-04"), "{why}"),
        other => panic!("expected the UM-04 refusal, got {other:?}"),
    }
    let (_, r) = start_with_knob(
        &REFUSE_TYPE,
        Some(rvgpu_ddi::adapter::DXGKQAITYPE_USERMODESUBMISSION_CAPS),
    );
    refused(r, "BR-76", STATUS_NOT_SUPPORTED);
}

static CONTEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// rvgpu's StartDevice, remembering the MiniportDeviceContext (so the test can call a DDI).
unsafe extern "system" fn start_remembering_context(
    ctx: rvgpu_ddi::PVOID,
    info: *mut rvgpu_ddi::adapter::DXGK_START_INFO,
    iface: *mut rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE,
    sources: *mut u32,
    children: *mut u32,
) -> NTSTATUS {
    CONTEXT.store(ctx as usize, std::sync::atomic::Ordering::Relaxed);
    forward_to!(REAL_START_DEVICE(ctx, info, iface, sources, children))
}

/// BR-66: Windows always names a context in `DxgkDdiSubmitCommand` (its own
/// work runs on the system contexts it creates at start), so rvgpu refuses a null `hContext`
/// with `STATUS_INVALID_PARAMETER` instead of running the buffer as "system" work.
#[test]
fn br_66_submit_command_without_a_context_is_invalid_parameter() {
    use rvgpu_ddi::tdr::DXGKARG_SUBMITCOMMAND;
    let mut m = machine(false);
    m.load_driver_with(|t| {
        let _ = REAL_START_DEVICE.set(t.DxgkDdiStartDevice);
        t.DxgkDdiStartDevice = Some(start_remembering_context);
    })
    .expect("load");
    m.start_adapter(0).expect("start");
    let submit = m
        .driver_table(0)
        .and_then(|t| t.DxgkDdiSubmitCommand)
        .expect("SubmitCommand");
    let ctx = CONTEXT.load(std::sync::atomic::Ordering::Relaxed) as *mut std::ffi::c_void;
    // An empty, well-formed buffer on node 0 with a fence ID above anything submitted: only
    // the missing context is wrong.
    let args = DXGKARG_SUBMITCOMMAND {
        SubmissionFenceId: 0x7000_0000,
        NodeOrdinal: 0,
        ..Default::default()
    };
    let s = m.at_irql(rvgpu_kmd::platform::Irql::Dispatch, |m| {
        let _c = m.enter_context();
        // SAFETY: the driver's DDI with its own context and a live argument block.
        unsafe { submit(ctx, &args) }
    });
    assert_eq!(s, STATUS_INVALID_PARAMETER);
    assert!(m.bugcheck().is_none() && m.fault().is_none());
}

// ---------------------------------------------------------------------------------------------
// Section 8: the OS side of the D3DKMT calls.

/// BR-92: `DXGCONTEXT::Initialize`'s flag rules beyond the node checks (simos/tests/hws.rs):
/// with `HwQueueSupported`, a reserved flag or a non-virtual context is refused with
/// `STATUS_UNSUCCESSFUL` and a triage line; a synchronisation-only context is exempt from the
/// rules (its `HwQueueSupported` is dropped).
#[test]
fn br_92_context_flag_rules() {
    const HW_QUEUE: u32 = 1 << 4;
    let m = common::started(MachineConfig::single(Mode::Step));
    let p = m.create_process(0).expect("process");
    let node = *m.hws_nodes(0).first().expect("an HWS node");
    let br92 = |m: &Machine| {
        m.triage_log(0)
            .iter()
            .filter(|l| l.starts_with("BR-92"))
            .count()
    };
    let unsuccessful = Err(SimError::DdiFailed(
        rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL,
    ));
    assert_eq!(
        m.create_context_raw(&p, node, HW_QUEUE | 1 << 7, true),
        unsuccessful
    );
    assert_eq!(br92(&m), 1);
    assert_eq!(
        m.create_context_raw(&p, node, HW_QUEUE, false),
        unsuccessful
    );
    assert_eq!(br92(&m), 2);
    // Synchronisation-only: no BR-92 refusal whatever HwQueueSupported says.
    let _ = m.create_context_raw(&p, node, 1 << 3 | HW_QUEUE, true);
    assert_eq!(br92(&m), 2, "{:#?}", m.triage_log(0));
    m.create_context_raw(&p, node, HW_QUEUE, true)
        .expect("a well-formed virtual HWS context");
}

/// BR-92: `HwQueueSupported` needs a D3DKMT (WDDM) version of 2.5 or later. A WDDM 2.4
/// driver (its nodes without user-mode submission, which needs 3.1: BR-73) starts, and its
/// hardware-queue contexts are refused.
#[test]
fn br_92_hw_queue_contexts_need_wddm_2_5() {
    fn no_ums(md: &mut DXGK_NODEMETADATA) {
        md.Flags = md.Flags.with(
            rvgpu_ddi::submission::DXGK_NODEMETADATA_FLAGS::UserModeSubmission,
            0,
        );
    }
    NODE_EDIT.set(Some(no_ums));
    let (m, r) = start_with(
        |c| c.WDDMVersion = 0x2400,
        |t| {
            let _ = REAL_NODE_METADATA.set(t.DxgkDdiGetNodeMetadata);
            t.DxgkDdiGetNodeMetadata = Some(edited_node_metadata);
        },
    );
    NODE_EDIT.set(None);
    r.expect("a WDDM 2.4 driver with HWS nodes starts");
    let p = m.create_process(0).expect("process");
    let node = *m.hws_nodes(0).first().expect("an HWS node");
    assert_eq!(
        m.create_context_raw(&p, node, 1 << 4, true),
        Err(SimError::DdiFailed(
            rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL
        ))
    );
    assert!(
        m.triage_log(0)
            .iter()
            .any(|l| l.starts_with("BR-92") && l.contains("< 2.5")),
        "{:#?}",
        m.triage_log(0)
    );
}

/// BR-96: Windows refuses more than 16 bytes of doorbell private data
/// (`STATUS_INVALID_PARAMETER`, logged to the triage log). rvgpu's private data is exactly 16
/// bytes (the ring's addresses come from the allocations the call names), so its doorbell is
/// created; the same data padded to 17 bytes is refused before the driver sees it.
#[test]
fn br_96_doorbell_private_data_over_16_bytes_is_refused() {
    use rvgpu_umd::kmt::{AllocationKind, Kmt};
    use zerocopy::IntoBytes;
    let m = common::started(MachineConfig::single(Mode::Step));
    let p = m.create_process(0).expect("process");
    let k = m.kmt(&p);
    let context = k.create_context(0).expect("context");
    let mut qp = rvgpu_hw::pdd::HwQueuePdd {
        magic: rvgpu_hw::pdd::PDD_MAGIC,
        version: rvgpu_hw::pdd::HW_QUEUE_PDD_VERSION,
        ..Default::default()
    };
    let queue = k
        .create_hw_queue(context, true, qp.as_mut_bytes())
        .expect("queue")
        .handle;
    let ring = k
        .create_allocation_as(4096, AllocationKind::Commands)
        .expect("ring");
    let control = k
        .create_allocation_as(
            rvgpu_hw::queue::RingControl::SIZE,
            AllocationKind::RingControl,
        )
        .expect("control");
    let pdd = rvgpu_hw::pdd::DoorbellPdd::for_ring(4096);
    assert_eq!(
        pdd.as_bytes().len(),
        rvgpu_simos::ums::DOORBELL_PRIVATE_DATA_MAX
    );
    let mut long = pdd.as_bytes().to_vec();
    long.push(0);
    let r = k.create_doorbell(queue, ring.handle, control.handle, &mut long);
    assert_eq!(r.err().map(|e| e.0), Some(STATUS_INVALID_PARAMETER));
    assert!(
        m.triage_log(0).iter().any(|l| l.starts_with("BR-96")),
        "{:#?}",
        m.triage_log(0)
    );
    let mut exact = pdd;
    k.create_doorbell(queue, ring.handle, control.handle, exact.as_mut_bytes())
        .expect("rvgpu's 16-byte private data is accepted");
}

/// BR-45: a multi-plane overlay claim needs 1..=10 planes (WDDM 2.2+) and direct flip.
/// rvgpu claims no MPO (render-only); the slots Windows also demands are not modelled.
#[test]
fn br_45_multi_plane_overlay_needs_planes_and_direct_flip() {
    let mpo = |planes: u32, direct: u8| {
        move |c: &mut DXGK_DRIVERCAPS| {
            c.SupportMultiPlaneOverlay = 1;
            c.MaxOverlayPlanes = planes;
            c.SupportDirectFlip = direct;
        }
    };
    for (planes, direct) in [(0, 1), (11, 1), (2, 0)] {
        caps_refused(mpo(planes, direct), "BR-45", STATUS_INVALID_PARAMETER);
    }
    let (_, r) = start_with(mpo(10, 1), no_table);
    assert!(
        !matches!(r, Err(SimError::StartRefused { rule: "BR-45", .. })),
        "{r:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// BR-91: D3DKMTCreateDevice's status allow-list.

static BR91_REAL_CREATE_DEVICE: std::sync::OnceLock<rvgpu_ddi::submission::PDXGKDDI_CREATEDEVICE> =
    std::sync::OnceLock::new();

thread_local! {
    /// The status the next non-system CreateDevice returns instead of calling rvgpu.
    static BR91_STATUS: Cell<Option<NTSTATUS>> = const { Cell::new(None) };
}

unsafe extern "system" fn br91_create_device(
    h: HANDLE,
    args: *mut rvgpu_ddi::submission::DXGKARG_CREATEDEVICE,
) -> NTSTATUS {
    // SAFETY: the OS's argument block; the OS fills the flags arm of the union.
    let system = unsafe { (*args).Anonymous.Flags }
        .is_set(rvgpu_ddi::submission::DXGK_CREATEDEVICEFLAGS::SystemDevice);
    if let (false, Some(s)) = (system, BR91_STATUS.get()) {
        return s;
    }
    let real = BR91_REAL_CREATE_DEVICE
        .get()
        .copied()
        .flatten()
        .expect("real DDI");
    // SAFETY: forwarded unchanged.
    unsafe { real(h, args) }
}

/// BR-91: a CreateDevice failure other than NO_MEMORY is "an invalid NTSTATUS code" in the
/// triage log ([D] ADAPTER_RENDER::DdiCreateDevice); either way the caller gets the status.
#[test]
fn br_91_create_device_status_outside_the_allow_list_is_logged() {
    let (m, r) = start_with(no_edit, |t| {
        let _ = BR91_REAL_CREATE_DEVICE.set(t.DxgkDdiCreateDevice);
        t.DxgkDdiCreateDevice = Some(br91_create_device);
    });
    r.expect("start");
    BR91_STATUS.set(Some(rvgpu_ddi::ntstatus::STATUS_NO_MEMORY));
    let e = m.create_process(0).map(|_| ()).expect_err("refused");
    assert_eq!(
        e,
        SimError::Ddi {
            ddi: "DxgkDdiCreateDevice",
            status: rvgpu_ddi::ntstatus::STATUS_NO_MEMORY
        }
    );
    assert!(m.triage_log(0).is_empty(), "NO_MEMORY is allowed");
    BR91_STATUS.set(Some(STATUS_INVALID_PARAMETER));
    let e = m.create_process(0).map(|_| ()).expect_err("refused");
    BR91_STATUS.set(None);
    assert_eq!(
        e,
        SimError::Ddi {
            ddi: "DxgkDdiCreateDevice",
            status: STATUS_INVALID_PARAMETER
        }
    );
    let log = m.triage_log(0);
    assert!(
        log.iter().any(|l| l.starts_with("BR-91:")),
        "triage log {log:?}"
    );
    // rvgpu's own CreateDevice succeeds and adds nothing.
    let before = m.triage_log(0).len();
    m.create_process(0).expect("process");
    assert_eq!(m.triage_log(0).len(), before);
}

against_the_pe_image!();
