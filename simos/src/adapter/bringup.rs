//! The start-up rules Dxgkrnl applies between DriverEntry and a started adapter, numbered as in
//! docs/windows-bringup.md (BR-nn), each with its source there: \[D\] decompiled 23H2 dxgkrnl,
//! \[M\] Microsoft's documentation, \[H\] observed on 24H2 by a driver that starts there.
//!
//! A violated rule fails the start with the status Windows returns ([`SimError::StartRefused`]).
//!
//! Policies Windows takes from the registry are `OsConfig` fields with Windows' defaults:
//! `validate_wddm_caps` (`ValidateWDDMCaps`, off) gates BR-52.
//!
//! [`SimError::StartRefused`]: crate::SimError::StartRefused

use rvgpu_ddi::adapter::{
    DXGK_DRIVERCAPS_MiscCaps, DXGKARG_HISTORYBUFFERPRECISION, DXGK_DRIVERCAPS, DXGK_FLIPCAPS,
    DXGK_PHYSICALADAPTERCAPS, DXGK_PHYSICALADAPTERFLAGS, DXGK_VIDMMCAPS_0, DXGK_VIDSCHCAPS,
};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::submission::{DXGK_NODEMETADATA, DXGK_NODEMETADATA_FLAGS};
use rvgpu_ddi::NTSTATUS;

use crate::adapter::rules::{self, Routine, Slot};
use crate::adapter::AdapterShared;
use crate::os::CpuArch;

/// `STATUS_REVISION_MISMATCH`.
pub const STATUS_REVISION_MISMATCH: NTSTATUS = 0xC000_0059_u32 as NTSTATUS;
/// `STATUS_DEVICE_CONFIGURATION_ERROR`.
pub const STATUS_DEVICE_CONFIGURATION_ERROR: NTSTATUS = 0xC000_0182_u32 as NTSTATUS;
/// `STATUS_OBJECT_NAME_NOT_FOUND`.
pub const STATUS_OBJECT_NAME_NOT_FOUND: NTSTATUS = 0xC000_0034_u32 as NTSTATUS;

/// A broken start-up rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The rule (`BR-nn`).
    pub rule: &'static str,
    /// What Windows fails the start with.
    pub status: NTSTATUS,
    /// What was wrong.
    pub why: String,
}

impl Violation {
    fn new(rule: &'static str, status: NTSTATUS, why: impl Into<String>) -> Self {
        Self {
            rule,
            status,
            why: why.into(),
        }
    }
}

/// `PresentationCaps` bits (d3dkmddi.h `DXGK_PRESENTATIONCAPS`).
const SUPPORT_KERNEL_MODE_COMMAND_BUFFER: u32 = 1 << 2;
const NO_CACHE_COHERENT_APERTURE_MEMORY: u32 = 1 << 29;
/// First `MiscCaps` bit the 24H2 headers do not define (bits 0..=8 are named).
const MISC_CAPS_RESERVED_FROM: u32 = 9;

/// WDDM versions the 23H2 kernel knows (BR-33, \[D\] `DXGADAPTER::Initialize`), plus 3.2, which
/// 26100 accepts (\[H\]).
const KNOWN_WDDM_VERSIONS: &[u32] = &[
    0x1000, 0x1200, 0x1300, 0x2000, 0x2100, 0x2200, 0x2300, 0x2400, 0x2500, 0x2600, 0x2700, 0x2800,
    0x2900, 0x3000, 0x3100, 0x3200,
];

/// BR-02 (\[D\] `DpiInitializeInternal`): the slots `DxgkInitialize` requires ([`Slot::Load`] in
/// the rule table; one of the [`Slot::LoadOneOf`] pair must be filled too). `NotifyAcpiEvent`,
/// `QueryInterface` and `QueryAdapterInfo` are not checked here (QueryAdapterInfo is, at adapter
/// creation: BR-30).
pub const LOAD_SLOTS: &[&str] = &rules::slot_names::<{ rules::slot_count(Slot::Load) }>(Slot::Load);

/// BR-01 and BR-02: what `DxgkInitialize` checks.
pub fn check_load(t: &DRIVER_INITIALIZATION_DATA) -> Result<(), Violation> {
    // BR-01: at least the Vista interface.
    if t.Version < 0x104E {
        return Err(Violation::new(
            "BR-01",
            STATUS_REVISION_MISMATCH,
            format!("interface version {:#x} is older than 0x104E", t.Version),
        ));
    }
    let filled = |name: &str| t.slots().any(|(n, f)| n == name && f);
    let mut missing: Vec<&str> = LOAD_SLOTS.iter().copied().filter(|n| !filled(n)).collect();
    let one_of: Vec<&str> = rules::slots(Slot::LoadOneOf).collect();
    let either = one_of.join(" or ");
    if !one_of.iter().any(|n| filled(n)) {
        missing.push(&either);
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Violation::new(
            "BR-02",
            STATUS_REVISION_MISMATCH,
            format!("required DDIs missing: {}", missing.join(", ")),
        ))
    }
}

/// BR-03 (\[D\] / \[D24\] `DpiGetDriverDataSizeFromVersion`): how many bytes of the miniport's
/// `DRIVER_INITIALIZATION_DATA` Dxgkrnl copies for interface `version`. Slots past it are not
/// seen at all (not rejected). 22631 and the later builds agree up to 0x10003 (1,328 bytes);
/// 22631 then copies its own full table (1,376 bytes) for everything from 0x10004, while the
/// WDDM 3.2 builds (\[D24\], `DpiInitializeEx` passing 1,544 as the full size) copy 1,376 bytes
/// for 0x10004..0x11000 and the whole 1,544-byte table for every version from 0x11001 on. The
/// function never fails, so no version is refused for being newer than the kernel (windows-bringup.md §15 Q1).
pub fn driver_data_size(version: u32) -> usize {
    const SIZES: &[(u32, usize)] = &[
        (0x2001, 496),
        (0x2002, 544),
        (0x2003, 552),
        (0x3001, 568),
        (0x3002, 576),
        (0x3004, 624),
        (0x3005, 632),
        (0x300D, 656),
        (0x4000, 664),
        (0x4002, 696),
        (0x5000, 712),
        (0x6000, 832),
        (0x6002, 864),
        (0x7000, 880),
        (0x7002, 936),
        (0x7003, 952),
        (0x7004, 1008),
        (0x8000, 1032),
        (0x9000, 1056),
        (0x9002, 1104),
        (0x9003, 1112),
        (0x9005, 1128),
        (0x9006, 1144),
        (0xA001, 1152),
        (0xA002, 1160),
        (0xA005, 1168),
        (0xA007, 1176),
        (0xA009, 1184),
        (0xB002, 1192),
        (0xB003, 1208),
        (0xE003, 1232),
        (0xF001, 1264),
        (0xF003, 1288),
        (0x10003, 1296),
        (0x10004, 1328),
        (0x11001, 1376),
    ];
    SIZES.iter().find(|(below, _)| version < *below).map_or(
        std::mem::size_of::<DRIVER_INITIALIZATION_DATA>(),
        |(_, n)| *n,
    )
}

/// BR-03: the table as Dxgkrnl copies it from the driver: only [`driver_data_size`] bytes for
/// the table's version, every later slot NULL.
pub fn table_as_copied(t: &DRIVER_INITIALIZATION_DATA) -> DRIVER_INITIALIZATION_DATA {
    let mut copy = *t;
    let full = std::mem::size_of::<DRIVER_INITIALIZATION_DATA>();
    let keep = driver_data_size(t.Version).min(full);
    // SAFETY: `copy` is a local table of `full` bytes; every byte from `keep` on belongs to a
    // slot (`keep` is a multiple of 8 past the version header), and an all-zero slot is a
    // valid `None` function pointer.
    unsafe {
        (&mut copy as *mut DRIVER_INITIALIZATION_DATA)
            .cast::<u8>()
            .add(keep)
            .write_bytes(0, full - keep)
    };
    copy
}

pub use crate::adapter::registry::UmdName;

/// What adapter creation's caps rules read besides the caps and the table.
#[derive(Clone, Copy, Debug)]
pub struct StartFacts {
    /// `DRIVER_INITIALIZATION_DATA::Version` (the DDI interface version).
    pub version: u32,
    /// The CPU architecture Windows runs on (BR-50).
    pub arch: CpuArch,
    /// Windows' `ValidateWDDMCaps` policy (BR-41 pre-2.0 arm, BR-52).
    pub validate_wddm_caps: bool,
    /// `NumberOfVideoPresentSources` from StartDevice (BR-41).
    pub sources: u32,
    /// `NumberOfChildren` from StartDevice (BR-41: the adapter's outputs).
    pub children: u32,
    /// The UMD name read from the adapter's software key (BR-35).
    pub umd_name: UmdName,
    /// BR-55: the answer to `DXGKQAITYPE_FRAMEBUFFERSAVESIZE` for physical adapter 0 (asked only
    /// with `IoMmuSecureModeSupported`): the size, or the driver's failure status.
    pub framebuffer_save_size: Option<Result<u64, NTSTATUS>>,
}

impl StartFacts {
    /// The facts of a render-only start with a valid UMD name.
    pub fn render_only(version: u32, arch: CpuArch, validate_wddm_caps: bool) -> Self {
        Self {
            version,
            arch,
            validate_wddm_caps,
            sources: 0,
            children: 0,
            umd_name: UmdName::Valid,
            framebuffer_save_size: None,
        }
    }
}

/// DDIs whose presence makes a render core ([`Slot::RenderCore`] in the rule table; \[D\]
/// `CreateRenderCore`: on a WDDM 1.2+ driver with every one of them NULL the adapter simply has
/// no render core, BR-56). One more slot of Windows' list (DXGADAPTER qword 85) is not identified
/// and not modelled.
pub const RENDER_CORE_DDIS: &[&str] =
    &rules::slot_names::<{ rules::slot_count(Slot::RenderCore) }>(Slot::RenderCore);

/// The caps and DDI-table rules of adapter creation, in Windows' order (docs/windows-bringup.md
/// windows-bringup.md §6: \[D\] `DXGADAPTER::Initialize` up to the render core, then \[D\] `CreateRenderCore` and the
/// start of `ADAPTER_RENDER::Initialize`). Returns every violation, in order; the first one is
/// what the start fails with. BR-54 runs after the render core is initialised
/// ([`check_after_render_core`]).
pub fn check_caps(
    caps: &DXGK_DRIVERCAPS,
    physical: Option<&DXGK_PHYSICALADAPTERCAPS>,
    t: &DRIVER_INITIALIZATION_DATA,
    facts: &StartFacts,
) -> Vec<Violation> {
    let mut v = Vec::new();
    let version = facts.version;
    let filled = |name: &str| t.slots().any(|(n, f)| n == name && f);
    // A DXGK_WDDMVERSION is an enum; compare its bits (0xCDCDCDCD stays visible as itself).
    let wddm = caps.WDDMVersion as u32;
    let sched = caps.SchedulingCaps;
    let misc = caps.MiscCaps;
    let compute_only = misc.is_set(DXGK_DRIVERCAPS_MiscCaps::ComputeOnly);
    let virtual_only = misc.is_set(DXGK_DRIVERCAPS_MiscCaps::VirtualGpuOnly);
    let presentation = caps.PresentationCaps.Value;

    // BR-30: QueryAdapterInfo is needed before anything is asked.
    if !filled("DxgkDdiQueryAdapterInfo") {
        v.push(Violation::new(
            "BR-30",
            STATUS_REVISION_MISMATCH,
            "DxgkDdiQueryAdapterInfo is missing",
        ));
    }
    // BR-32: the WDDM 2.0 pre-release interfaces are refused.
    if (0x5000..=0x5005).contains(&version) {
        v.push(Violation::new(
            "BR-32",
            STATUS_INVALID_PARAMETER,
            format!("interface version {version:#x} is a refused pre-release"),
        ));
    }
    // BR-34 (right after DRIVERCAPS): the WDDM version may not claim more than the interface
    // holds.
    if wddm > 0x2500 && version <= 0xA00B {
        v.push(Violation::new(
            "BR-34",
            STATUS_INVALID_PARAMETER,
            format!("WDDMVersion {wddm:#x} with interface version {version:#x}"),
        ));
    }
    // BR-35 ([D] `DXGADAPTER::Initialize`, "UMD name is missing and device is not compute
    // only"): a missing name is fatal unless the adapter is compute-only or virtual-GPU-only.
    if facts.umd_name == UmdName::Missing && !compute_only && !virtual_only {
        v.push(Violation::new(
            "BR-35",
            STATUS_OBJECT_NAME_NOT_FOUND,
            "UserModeDriverName is missing and the adapter is not compute-only",
        ));
    }
    // BR-58, BR-37 and BR-36(a) read the physical adapter's caps ([D] `DXGADAPTER::Initialize`,
    // in its PHYSICALADAPTERCAPS loop and right after it). When the query failed or was not
    // asked Windows uses defaults and skips all three.
    let mm = caps.MemoryManagementCaps.Anonymous;
    if let Some(p) = physical {
        // BR-58 (interface 0xC003+): a virtual copy engine must be one of the adapter's nodes
        // and needs IoMmuSecureModeRequired.
        let virtual_copy = p
            .Flags
            .is_set(DXGK_PHYSICALADAPTERFLAGS::VirtualCopyEngineSupported);
        if version >= 0xC003 && virtual_copy {
            if p.VirtualCopyNodeIndex >= u32::from(p.NumExecutionNodes) {
                v.push(Violation::new(
                    "BR-58",
                    STATUS_INVALID_PARAMETER,
                    format!(
                        "VirtualCopyEngineSupported with VirtualCopyNodeIndex {} of {} nodes",
                        p.VirtualCopyNodeIndex, p.NumExecutionNodes
                    ),
                ));
            } else if !mm.is_set(DXGK_VIDMMCAPS_0::IoMmuSecureModeRequired) {
                v.push(Violation::new(
                    "BR-58",
                    STATUS_INVALID_PARAMETER,
                    "a virtual copy engine without MemoryManagementCaps.IoMmuSecureModeRequired",
                ));
            }
        }
        // BR-37: before WDDM 2.5 at most 64 nodes over all physical adapters.
        if wddm < 0x2500 && p.NumExecutionNodes > 64 {
            v.push(Violation::new(
                "BR-37",
                STATUS_INVALID_PARAMETER,
                format!(
                    "{} nodes on a WDDM {wddm:#x} adapter (at most 64 before WDDM 2.5)",
                    p.NumExecutionNodes
                ),
            ));
        }
    }
    // BR-36(a) ("MultiEngineAware is not set by WDDMv2 driver"): a WDDM 2.0+ driver whose
    // physical adapter caps were answered must be multi-engine aware.
    let multi = sched.is_set(DXGK_VIDSCHCAPS::MultiEngineAware);
    if physical.is_some() && wddm >= 0x2000 && !multi {
        v.push(Violation::new(
            "BR-36",
            STATUS_INVALID_PARAMETER,
            format!("SchedulingCaps.MultiEngineAware is not set by a WDDM {wddm:#x} driver"),
        ));
    }
    // BR-55, second half ([D] `DXGADAPTER::Initialize`, right after the PHYSICALADAPTERCAPS
    // loop): with IOMMU secure mode the frame-buffer save size is asked; a failure fails the
    // start with the driver's status, a size that is not a page multiple is refused.
    match facts.framebuffer_save_size {
        Some(Err(status)) => v.push(Violation::new(
            "BR-55",
            status,
            format!(
                "DXGKQAITYPE_FRAMEBUFFERSAVESIZE failed ({:#010x})",
                status as u32
            ),
        )),
        Some(Ok(size)) if size & 0xFFF != 0 => v.push(Violation::new(
            "BR-55",
            STATUS_INVALID_PARAMETER,
            format!("frame buffer save size {size:#x} is not a multiple of the page size"),
        )),
        _ => {}
    }
    // BR-38: no reserved MiscCaps bit (24H2 defines bits 0..=8).
    if misc.Value >> MISC_CAPS_RESERVED_FROM != 0 {
        v.push(Violation::new(
            "BR-38",
            STATUS_INVALID_PARAMETER,
            format!("reserved MiscCaps bits set ({:#x})", misc.Value),
        ));
    }
    // BR-39 ([D] `DXGADAPTER::Initialize`): per-source vsync control needs ControlInterrupt3.
    if misc.is_set(DXGK_DRIVERCAPS_MiscCaps::IndependentVidPnVSyncControl)
        && !filled("DxgkDdiControlInterrupt3")
    {
        v.push(Violation::new(
            "BR-39",
            STATUS_INVALID_PARAMETER,
            "MiscCaps.IndependentVidPnVSyncControl without DxgkDdiControlInterrupt3",
        ));
    }
    // BR-33 (after BR-39 in [D] `DXGADAPTER::Initialize`): a WDDM version the kernel knows.
    if !KNOWN_WDDM_VERSIONS.contains(&wddm) {
        v.push(Violation::new(
            "BR-33",
            STATUS_REVISION_MISMATCH,
            format!("unknown WDDMVersion {wddm:#x}"),
        ));
    }
    let hybrid_integrated = caps.HybridIntegrated != 0;
    let hybrid_discrete = caps.HybridDiscrete != 0;
    // BR-41, pre-2.0 arm ([D], under the `ValidateWDDMCaps` flag with the WDDM 1.2/1.3 feature
    // checks): only a WDDM 2.0+ driver may be a hybrid integrated adapter.
    if facts.validate_wddm_caps && wddm < 0x2000 && hybrid_integrated {
        v.push(Violation::new(
            "BR-41",
            STATUS_INVALID_PARAMETER,
            format!("HybridIntegrated on a WDDM {wddm:#x} driver"),
        ));
    }
    // BR-40 ([D] `DXGADAPTER::Initialize`): the cross-adapter tiers build on each other:
    // scan-out needs textures and the base tier, textures need the base tier.
    let base = mm.is_set(DXGK_VIDMMCAPS_0::CrossAdapterResource);
    let texture = mm.is_set(DXGK_VIDMMCAPS_0::CrossAdapterResourceTexture);
    let scanout = mm.is_set(DXGK_VIDMMCAPS_0::CrossAdapterResourceScanout);
    let broken = if scanout {
        !(texture && base)
    } else {
        texture && !base
    };
    if broken {
        v.push(Violation::new(
            "BR-40",
            STATUS_INVALID_PARAMETER,
            "a cross-adapter resource tier without the tiers below it",
        ));
    }
    // BR-41 ([D] `DXGADAPTER::Initialize`, the four hybrid strings; Windows skips them for
    // software adapters only): a hybrid discrete adapter of an interface before 0x5005 has no
    // outputs; any hybrid adapter shares resources across adapters; not both kinds at once; a
    // hybrid integrated adapter has outputs.
    let outputs = facts.sources != 0 || facts.children != 0;
    let hybrid_rule = if hybrid_discrete && version < 0x5005 && outputs {
        Some("HybridDiscrete with VidPn sources or targets")
    } else if (hybrid_discrete || hybrid_integrated) && !base {
        Some("a hybrid adapter without MemoryManagementCaps.CrossAdapterResource")
    } else if hybrid_discrete && hybrid_integrated {
        Some("both HybridIntegrated and HybridDiscrete")
    } else if hybrid_integrated && facts.children == 0 {
        Some("HybridIntegrated on an adapter without outputs")
    } else {
        None
    };
    if let Some(why) = hybrid_rule {
        v.push(Violation::new("BR-41", STATUS_INVALID_PARAMETER, why));
    }
    // BR-43 ([D] `DXGADAPTER::Initialize`, again in `CreateRenderCore`): kernel-mode command
    // buffers need DxgkDdiRenderKm.
    if presentation & SUPPORT_KERNEL_MODE_COMMAND_BUFFER != 0 && !filled("DxgkDdiRenderKm") {
        v.push(Violation::new(
            "BR-43",
            STATUS_INVALID_PARAMETER,
            "PresentationCaps.SupportKernelModeCommandBuffer without DxgkDdiRenderKm",
        ));
    }
    // BR-44: runtime power management needs its two DDIs.
    if caps.SupportRuntimePowerManagement != 0
        && !(filled("DxgkDdiSetPowerComponentFState")
            && filled("DxgkDdiPowerRuntimeControlRequest"))
    {
        v.push(Violation::new(
            "BR-44",
            STATUS_INVALID_PARAMETER,
            "SupportRuntimePowerManagement without SetPowerComponentFState and \
             PowerRuntimeControlRequest",
        ));
    }
    // BR-45 ([D] `DXGADAPTER::Initialize`, the MPO strings): multi-plane overlays need an
    // interface from 0x300B, from interface 0x4001 at least one plane, at most 8 (a WDDM
    // 2.0/2.1 driver may say 10, read as 8; from WDDM 2.2 up to 10), and direct flip. The DDI
    // arm between the plane count and direct flip names table slots not identified here and is
    // not modelled.
    if caps.SupportMultiPlaneOverlay != 0 {
        let planes = caps.MaxOverlayPlanes;
        let why = if version < 0x300B {
            Some(format!("interface version {version:#x} predates MPO"))
        } else if version > 0x4000 && planes == 0 {
            Some("no overlay planes".to_string())
        } else if version > 0x4000
            && planes > 8
            && if wddm < 0x2200 {
                wddm < 0x2000 || planes != 10
            } else {
                planes > 10
            }
        {
            Some(format!(
                "{planes} overlay planes on a WDDM {wddm:#x} driver"
            ))
        } else if caps.SupportDirectFlip == 0 {
            Some("SupportDirectFlip is not set".to_string())
        } else {
            None
        };
        if let Some(why) = why {
            v.push(Violation::new(
                "BR-45",
                STATUS_INVALID_PARAMETER,
                format!("SupportMultiPlaneOverlay: {why}"),
            ));
        }
    }
    // BR-46 ([D] `DXGADAPTER::Initialize`): from WDDM 2.4 the two diagnostic DDIs come as a
    // pair.
    if wddm >= 0x2400
        && filled("DxgkDdiQueryDiagnosticTypesSupport")
            != filled("DxgkDdiControlDiagnosticReporting")
    {
        v.push(Violation::new(
            "BR-46",
            STATUS_INVALID_PARAMETER,
            "only one of DxgkDdiQueryDiagnosticTypesSupport and DxgkDdiControlDiagnosticReporting",
        ));
    }
    // BR-56 ([D] `CreateRenderCore` then `DXGADAPTER::Initialize`): on a WDDM 1.2+ driver with
    // every render DDI NULL there is no render core (no error yet); a render-only adapter has
    // no display core either, and an adapter with neither fails. None of the render-core rules
    // below runs then.
    if wddm >= 0x1200 && !RENDER_CORE_DDIS.iter().any(|n| filled(n)) {
        v.push(Violation::new(
            "BR-56",
            STATUS_REVISION_MISMATCH,
            "no render DDIs and no display core: the adapter has neither capability",
        ));
        return v;
    }
    // BR-47: a render core needs its whole DDI set.
    let render = [
        "DxgkDdiInterruptRoutine",
        "DxgkDdiDpcRoutine",
        "DxgkDdiCreateDevice",
        "DxgkDdiDestroyDevice",
        "DxgkDdiDestroyAllocation",
        "DxgkDdiDescribeAllocation",
        "DxgkDdiGetStandardAllocationDriverData",
        "DxgkDdiOpenAllocation",
        "DxgkDdiCloseAllocation",
        "DxgkDdiSubmitCommand",
        "DxgkDdiPreemptCommand",
        "DxgkDdiBuildPagingBuffer",
        "DxgkDdiResetFromTimeout",
        "DxgkDdiRestartFromTimeout",
        "DxgkDdiCollectDbgInfo",
        "DxgkDdiPresent",
    ];
    let mut missing: Vec<&str> = render.iter().copied().filter(|n| !filled(n)).collect();
    if !compute_only && !filled("DxgkDdiControlInterrupt") {
        missing.push("DxgkDdiControlInterrupt");
    }
    if !missing.is_empty() {
        v.push(Violation::new(
            "BR-47",
            STATUS_REVISION_MISMATCH,
            format!("render DDIs missing: {}", missing.join(", ")),
        ));
    }
    // BR-48 ([D] `CreateRenderCore`): the four overlay DDIs all or none.
    let overlay = [
        "DxgkDdiCreateOverlay",
        "DxgkDdiUpdateOverlay",
        "DxgkDdiFlipOverlay",
        "DxgkDdiDestroyOverlay",
    ];
    let overlays = overlay.iter().filter(|n| filled(n)).count();
    if overlays != 0 && overlays != overlay.len() {
        v.push(Violation::new(
            "BR-48",
            STATUS_REVISION_MISMATCH,
            "Create, Update, Flip and DestroyOverlay: some filled, not all",
        ));
    }
    // BR-50 ([D] `CreateRenderCore`): non-coherent aperture memory is refused on x86/x64,
    // whose DMA always snoops; ARM64 platforms may lack I/O coherency (AL-06).
    if facts.arch == CpuArch::X64 && presentation & NO_CACHE_COHERENT_APERTURE_MEMORY != 0 {
        v.push(Violation::new(
            "BR-50",
            STATUS_INVALID_PARAMETER,
            "NoCacheCoherentApertureMemory on x64",
        ));
    }
    // BR-49 ([D] `CreateRenderCore`, "Miniport did not provide required DDIs"): swizzling
    // ranges need the DDIs that acquire and release them.
    if caps.NumberOfSwizzlingRanges != 0
        && !(filled("DxgkDdiAcquireSwizzlingRange") && filled("DxgkDdiReleaseSwizzlingRange"))
    {
        v.push(Violation::new(
            "BR-49",
            STATUS_REVISION_MISMATCH,
            format!(
                "{} swizzling ranges without Acquire/ReleaseSwizzlingRange",
                caps.NumberOfSwizzlingRanges
            ),
        ));
    }
    // BR-36(b) ([D] `CreateRenderCore`, right after BR-49): preemption or cancel awareness
    // without multi-engine awareness.
    if !multi
        && (sched.is_set(DXGK_VIDSCHCAPS::PreemptionAware)
            || sched.is_set(DXGK_VIDSCHCAPS::CancelCommandAware))
    {
        v.push(Violation::new(
            "BR-36",
            STATUS_INVALID_PARAMETER,
            "PreemptionAware or CancelCommandAware without MultiEngineAware",
        ));
    }
    // BR-36(c) ([D] `CreateRenderCore`, same block): a multi-engine-aware driver below
    // WDDM 2.0 must report its nodes.
    if multi && wddm < 0x2000 && caps.GpuEngineTopology.NbAsymetricProcessingNodes == 0 {
        v.push(Violation::new(
            "BR-36",
            STATUS_INVALID_PARAMETER,
            "MultiEngineAware below WDDM 2.0 with no nodes",
        ));
    }
    // BR-52 ([D] `ADAPTER_RENDER::CreateRenderCore`): the WDDM 1.2 mandatory features of a
    // hardware adapter, one condition in Windows and so one violation here naming each missing
    // feature. Checked only when `ValidateWDDMCaps` is set: [D] `DXGADAPTER::Initialize` copies
    // the global that [D] `DXGGLOBAL::Initialize` reads from that registry value (0 when absent)
    // into the flag the check tests.
    if facts.validate_wddm_caps && wddm >= 0x1200 {
        let p = caps.PreemptionCaps;
        let mut missing = Vec::new();
        if p.GraphicsPreemptionGranularity == 0 || p.ComputePreemptionGranularity == 0 {
            missing.push("a preemption granularity (NONE)");
        }
        if caps.SupportPerEngineTDR == 0 {
            missing.push("SupportPerEngineTDR");
        }
        if !compute_only {
            if !caps.FlipCaps.is_set(DXGK_FLIPCAPS::FlipOnVSyncMmIo) {
                missing.push("FlipCaps.FlipOnVSyncMmIo");
            }
            // The software-adapter exemption (WARP, BasicRender) does not apply to a PCI GPU.
            if presentation & SUPPORT_KERNEL_MODE_COMMAND_BUFFER == 0 {
                missing.push("PresentationCaps.SupportKernelModeCommandBuffer");
            }
        }
        if !missing.is_empty() {
            v.push(Violation::new(
                "BR-52",
                STATUS_INVALID_PARAMETER,
                format!(
                    "mandatory WDDM 1.2 render features missing (ValidateWDDMCaps): {}",
                    missing.join(", ")
                ),
            ));
        }
    }
    // BR-51 (after BR-52 in [D] `CreateRenderCore`): WDDM 2.0+ and not compute-only:
    // FlipOnVSyncMmIo, even without outputs.
    if wddm >= 0x2000 && !compute_only && !caps.FlipCaps.is_set(DXGK_FLIPCAPS::FlipOnVSyncMmIo) {
        v.push(Violation::new(
            "BR-51",
            STATUS_INVALID_PARAMETER,
            "FlipCaps.FlipOnVSyncMmIo is not set",
        ));
    }
    // BR-53: node metadata from WDDM 1.3.
    if wddm >= 0x1300 && !filled("DxgkDdiGetNodeMetadata") {
        v.push(Violation::new(
            "BR-53",
            STATUS_INVALID_PARAMETER,
            "DxgkDdiGetNodeMetadata is missing",
        ));
    }
    // BR-55 ([D] `CreateRenderCore`), first half: IOMMU secure mode on a WDDM 2.4+ driver needs
    // the exclusive-access DDIs. (The second half is the FRAMEBUFFERSAVESIZE answer above.)
    if wddm >= 0x2400
        && mm.is_set(DXGK_VIDMMCAPS_0::IoMmuSecureModeSupported)
        && !(filled("DxgkDdiBeginExclusiveAccess") && filled("DxgkDdiEndExclusiveAccess"))
    {
        v.push(Violation::new(
            "BR-55",
            STATUS_INVALID_PARAMETER,
            "IoMmuSecureModeSupported without DxgkDdiBegin/EndExclusiveAccess",
        ));
    }
    // BR-35, second half ([D] `ADAPTER_RENDER::Initialize`, its first step): the names must
    // parse ("Invalidly formatted user mode driver name") and the first must not be empty
    // ("Invalid user mode driver name"). 22631 skips the emptiness check only with its
    // GpuVaIoMmu feature; the later builds in the same repository's history skip it for a
    // compute-only adapter (MiscCaps bit 3), which the simulated OS follows.
    let exempt = compute_only;
    match facts.umd_name {
        UmdName::BadlyFormed => v.push(Violation::new(
            "BR-35",
            STATUS_DEVICE_CONFIGURATION_ERROR,
            "UserModeDriverName is badly formed",
        )),
        // A missing name reads as an empty one here (a virtual-GPU-only adapter gets this far).
        UmdName::Empty | UmdName::Missing if !exempt => v.push(Violation::new(
            "BR-35",
            STATUS_DEVICE_CONFIGURATION_ERROR,
            "UserModeDriverName is empty or missing",
        )),
        _ => {}
    }
    v
}

/// BR-54 (\[D\] `DXGADAPTER::Initialize`, after the render core was created and initialised,
/// i.e. after the node, VidMm and history-precision steps): from interface 0x5008, a render
/// core on dxgmms2 needs CalibrateGpuClock and SetStablePowerState together.
pub fn check_after_render_core(t: &DRIVER_INITIALIZATION_DATA) -> Option<Violation> {
    let filled = |name: &str| t.slots().any(|(n, f)| n == name && f);
    (t.Version >= 0x5008
        && !(filled("DxgkDdiCalibrateGpuClock") && filled("DxgkDdiSetStablePowerState")))
    .then(|| {
        Violation::new(
            "BR-54",
            STATUS_INVALID_PARAMETER,
            "DxgkDdiCalibrateGpuClock and DxgkDdiSetStablePowerState are both required",
        )
    })
}

/// BR-71 and BR-72 for one node: `ContextSchedulingSupported` needs GPU virtual addressing on
/// the node (`GpuMmuSupported` or `IoMmuSupported`, interface ≥ 0x9000) and the OS to have
/// enabled hardware scheduling for the adapter (\[D\] `ADAPTER_RENDER::Initialize`: "the OS
/// didn't allow HwSch to be enabled"; the bit is set only by the HWSCH negotiation).
pub fn check_node_hws(
    node: u32,
    flags: DXGK_NODEMETADATA_FLAGS,
    gpu_va: bool,
    os_enabled_hws: bool,
) -> Option<Violation> {
    if !flags.is_set(DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported) {
        return None;
    }
    if !gpu_va {
        return Some(Violation::new(
            "BR-71",
            STATUS_INVALID_PARAMETER,
            format!("node {node} claims ContextSchedulingSupported without GPU VA"),
        ));
    }
    (!os_enabled_hws).then(|| {
        Violation::new(
            "BR-72",
            STATUS_INVALID_PARAMETER,
            format!(
                "node {node} claims ContextSchedulingSupported but the OS did not enable \
                 DXGK_FEATURE_HWSCH"
            ),
        )
    })
}

/// First node-metadata flag bit the 24H2 headers do not define (bits 0..=4 are named; 23H2
/// still refuses bit 4, which 24H2 names `SupportBuildTestCommandBuffer`). Bits 16..=31 are
/// `MaxInFlightHwQueueBuffers`, not checked.
const NODE_FLAGS_RESERVED: core::ops::Range<u32> = 5..16;

/// BR-74 and BR-75 for one node (\[D\] `ADAPTER_RENDER::Initialize`, after the BR-71..73 checks
/// of the same node): no reserved flag bit, and a node's GPU VA model must be one the adapter's
/// `MemoryManagementCaps` claims. (The third condition, "not with a physical adapter that
/// requires GpuVaIoMmu", reads a PHYSICALADAPTERCAPS flag 10.0.22621 does not declare.)
pub fn check_node_mmu(
    node: u32,
    md: &DXGK_NODEMETADATA,
    mm: DXGK_VIDMMCAPS_0,
) -> Option<Violation> {
    let flags = md.Flags.Value;
    let reserved = NODE_FLAGS_RESERVED.fold(0u32, |m, b| m | (1 << b));
    if flags & reserved != 0 {
        return Some(Violation::new(
            "BR-74",
            STATUS_INVALID_PARAMETER,
            format!("node {node} sets reserved metadata flag bits ({flags:#x})"),
        ));
    }
    let model = |claimed: u8, bit, name: &str| {
        (claimed != 0 && !mm.is_set(bit)).then(|| {
            Violation::new(
                "BR-75",
                STATUS_INVALID_PARAMETER,
                format!("node {node} claims {name} but MemoryManagementCaps does not"),
            )
        })
    };
    model(
        md.GpuMmuSupported,
        DXGK_VIDMMCAPS_0::GpuMmuSupported,
        "GpuMmuSupported",
    )
    .or_else(|| {
        model(
            md.IoMmuSupported,
            DXGK_VIDMMCAPS_0::IoMmuSupported,
            "IoMmuSupported",
        )
    })
}

/// What the OS enabled, as BR-73 needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UmsEnablement {
    /// `DXGK_FEATURE_HWSCH` and `DXGK_FEATURE_USER_MODE_SUBMISSION` both enabled.
    pub hws_and_ums: bool,
    /// `DXGK_VIDSCHCAPS::NativeGpuFence` in the driver caps.
    pub native_gpu_fence: bool,
}

/// BR-73 for one node's metadata flags: user-mode submission needs context scheduling on the
/// node, a 3.1+ driver, the OS's HWS and UMS enablement (from the feature negotiation), the
/// doorbell DDIs, and (24H2, windows-bringup.md §7a) `NativeGpuFence` in the caps.
///
/// `slot_1368`: whether the slot after `DxgkDdiNotifyWorkSubmission` (`DxgkDdiFlushHwQueue` /
/// `Reserved4`) must be filled too, as \[D\] `ADAPTER_RENDER::Initialize` of 22631 requires
/// (`OsConfig::ums_requires_slot_1368`, off by default: the \[D24\] builds check only the five
/// published DDIs, docs/windows-bringup.md §15 question 2).
pub fn check_node_ums(
    node: u32,
    flags: DXGK_NODEMETADATA_FLAGS,
    wddm: u32,
    t: &DRIVER_INITIALIZATION_DATA,
    os: UmsEnablement,
    slot_1368: bool,
) -> Option<Violation> {
    if !flags.is_set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission) {
        return None;
    }
    let filled = |name: &str| t.slots().any(|(n, f)| n == name && f);
    let mut why = Vec::new();
    if !flags.is_set(DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported) {
        why.push("no ContextSchedulingSupported".to_string());
    }
    if wddm < 0x3100 {
        why.push(format!("WDDMVersion {wddm:#x} < 3.1"));
    }
    if !os.hws_and_ums {
        why.push("the OS did not enable HWSCH and USER_MODE_SUBMISSION".to_string());
    }
    if !os.native_gpu_fence {
        why.push("no NativeGpuFence in the driver caps (24H2)".to_string());
    }
    for d in rules::slots(Slot::Doorbell) {
        if !filled(d) {
            why.push(format!("{d} missing"));
        }
    }
    if slot_1368 && !filled("Reserved4") {
        why.push("the slot after DxgkDdiNotifyWorkSubmission (byte 1368) missing".to_string());
    }
    (!why.is_empty()).then(|| {
        Violation::new(
            "BR-73",
            STATUS_INVALID_PARAMETER,
            format!("node {node} claims UserModeSubmission: {}", why.join(", ")),
        )
    })
}

/// BR-57: the history-buffer precision, when answered, is 0 or 32..=64 bits.
pub fn check_history_precision(
    answer: Option<DXGKARG_HISTORYBUFFERPRECISION>,
) -> Option<Violation> {
    let bits = answer?.PrecisionBits;
    (bits != 0 && !(32..=64).contains(&bits)).then(|| {
        Violation::new(
            "BR-57",
            STATUS_DEVICE_CONFIGURATION_ERROR,
            format!("HISTORYBUFFERPRECISION {bits} bits"),
        )
    })
}

/// BR-23: whether Dxgkrnl's wrapper of `ddi` accepts `status` (the statuses column of the rule
/// table); anything else is logged to the triage log as an invalid status (not refused).
pub fn status_allowed(ddi: &str, status: NTSTATUS) -> bool {
    rules::status_allowed(ddi, status)
}

/// Records `status` of `routine` in the adapter's triage log when the wrapper's allow-list does
/// not have it (BR-23: Windows logs it and goes on).
pub fn triage_status(a: &AdapterShared, routine: Routine, status: NTSTATUS) {
    let rules = routine.rules();
    if rules.statuses.is_some_and(|s| !s.allowed.contains(&status)) {
        a.observer().triage(format!(
            "BR-23: {} returned an invalid NTSTATUS {:#010x}",
            rules.name, status as u32
        ));
    }
}
