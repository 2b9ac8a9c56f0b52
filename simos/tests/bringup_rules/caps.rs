//! Adapter creation's caps and DDI-table rules (`DXGADAPTER::Initialize`, `CreateRenderCore`,
//! docs/windows-bringup.md §6): BR-30 to BR-58.

use super::*;

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
