//! The caps phase: adapter creation's caps and DDI-table rules in Windows' order
//! (docs/windows-bringup.md §6: \[D\] `DXGADAPTER::Initialize` up to the render core, then
//! \[D\] `CreateRenderCore` and the start of `ADAPTER_RENDER::Initialize`).

use rvgpu_ddi::adapter::{
    DXGK_DRIVERCAPS_MiscCaps, DXGK_DRIVERCAPS, DXGK_FLIPCAPS, DXGK_PHYSICALADAPTERCAPS,
    DXGK_PHYSICALADAPTERFLAGS, DXGK_VIDMMCAPS_0, DXGK_VIDSCHCAPS,
};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::NTSTATUS;

use super::facts::{StartFacts, UmdName};
use super::rule::{
    filled_by_name, slot, when, Facts, Outcome, Rule, TableSlot, Violation,
    STATUS_DEVICE_CONFIGURATION_ERROR, STATUS_OBJECT_NAME_NOT_FOUND, STATUS_REVISION_MISMATCH,
};
use crate::adapter::rules::{self, Slot};
use crate::os::CpuArch;

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

/// BR-47: the DDIs a render core needs (`DxgkDdiControlInterrupt` too, unless compute-only).
const RENDER_DDIS: &[TableSlot] = &[
    slot!(DxgkDdiInterruptRoutine),
    slot!(DxgkDdiDpcRoutine),
    slot!(DxgkDdiCreateDevice),
    slot!(DxgkDdiDestroyDevice),
    slot!(DxgkDdiDestroyAllocation),
    slot!(DxgkDdiDescribeAllocation),
    slot!(DxgkDdiGetStandardAllocationDriverData),
    slot!(DxgkDdiOpenAllocation),
    slot!(DxgkDdiCloseAllocation),
    slot!(DxgkDdiSubmitCommand),
    slot!(DxgkDdiPreemptCommand),
    slot!(DxgkDdiBuildPagingBuffer),
    slot!(DxgkDdiResetFromTimeout),
    slot!(DxgkDdiRestartFromTimeout),
    slot!(DxgkDdiCollectDbgInfo),
    slot!(DxgkDdiPresent),
];

/// BR-48: the overlay DDIs, all or none.
const OVERLAY_DDIS: &[TableSlot] = &[
    slot!(DxgkDdiCreateOverlay),
    slot!(DxgkDdiUpdateOverlay),
    slot!(DxgkDdiFlipOverlay),
    slot!(DxgkDdiDestroyOverlay),
];

/// What the rows read: the caps, the table, the start's facts and the values several derive.
pub struct Caps {
    caps: DXGK_DRIVERCAPS,
    physical: Option<DXGK_PHYSICALADAPTERCAPS>,
    t: DRIVER_INITIALIZATION_DATA,
    facts: StartFacts,
    /// A `DXGK_WDDMVERSION` is an enum; its bits are compared (0xCDCDCDCD stays itself).
    wddm: u32,
    compute_only: bool,
    virtual_only: bool,
    presentation: u32,
    mm: DXGK_VIDMMCAPS_0,
    multi: bool,
}

impl Caps {
    fn filled(&self, slot: TableSlot) -> bool {
        slot.filled(&self.t)
    }

    fn kernel_command_buffers(&self) -> bool {
        self.presentation & SUPPORT_KERNEL_MODE_COMMAND_BUFFER != 0
    }
}

impl Facts for Caps {
    fn driver_status(&self) -> Option<NTSTATUS> {
        self.facts.framebuffer_save_size.and_then(Result::err)
    }
}

const fn row(
    id: &'static str,
    source: &'static str,
    checks: &'static str,
    status: NTSTATUS,
    check: fn(&Caps) -> Option<String>,
) -> Rule<Caps> {
    Rule::refuse(id, source, checks, status, check)
}

const INVALID: NTSTATUS = STATUS_INVALID_PARAMETER;
const MISMATCH: NTSTATUS = STATUS_REVISION_MISMATCH;
const INIT: &str = "[D] DXGADAPTER::Initialize";
const RENDER_CORE: &str = "[D] CreateRenderCore";

/// The rows, in Windows' order.
pub const CAPS_RULES: &[Rule<Caps>] = &[
    row(
        "BR-30",
        INIT,
        "DxgkDdiQueryAdapterInfo filled",
        MISMATCH,
        |c| {
            when(
                !c.filled(slot!(DxgkDdiQueryAdapterInfo)),
                "DxgkDdiQueryAdapterInfo is missing",
            )
        },
    ),
    row(
        "BR-32",
        INIT,
        "not a WDDM 2.0 pre-release interface (0x5000..=0x5005)",
        INVALID,
        |c| {
            let v = c.facts.version;
            (0x5000..=0x5005)
                .contains(&v)
                .then(|| format!("interface version {v:#x} is a refused pre-release"))
        },
    ),
    row(
        "BR-34",
        INIT,
        "WDDMVersion above 2.5 needs an interface above 0xA00B",
        INVALID,
        |c| {
            let (w, v) = (c.wddm, c.facts.version);
            (w > 0x2500 && v <= 0xA00B)
                .then(|| format!("WDDMVersion {w:#x} with interface version {v:#x}"))
        },
    ),
    Rule {
        outcome: Outcome::Refuse(STATUS_OBJECT_NAME_NOT_FOUND),
        ..row(
            "BR-35",
            INIT,
            "a UserModeDriverName, unless compute-only or virtual-GPU-only",
            0,
            |c| {
                when(
                    c.facts.umd_name == UmdName::Missing && !c.compute_only && !c.virtual_only,
                    "UserModeDriverName is missing and the adapter is not compute-only",
                )
            },
        )
    },
    // BR-58, BR-37 and BR-36(a) read the physical adapter's caps (in the PHYSICALADAPTERCAPS
    // loop and right after it); when the query failed or was not asked Windows skips them.
    row(
        "BR-58",
        INIT,
        "from interface 0xC003: a virtual copy engine names a node and needs \
         `IoMmuSecureModeRequired`",
        INVALID,
        |c| {
            let p = c.physical?;
            let virtual_copy = p
                .Flags
                .is_set(DXGK_PHYSICALADAPTERFLAGS::VirtualCopyEngineSupported);
            if c.facts.version < 0xC003 || !virtual_copy {
                None
            } else if p.VirtualCopyNodeIndex >= u32::from(p.NumExecutionNodes) {
                Some(format!(
                    "VirtualCopyEngineSupported with VirtualCopyNodeIndex {} of {} nodes",
                    p.VirtualCopyNodeIndex, p.NumExecutionNodes
                ))
            } else {
                when(
                    !c.mm.is_set(DXGK_VIDMMCAPS_0::IoMmuSecureModeRequired),
                    "a virtual copy engine without MemoryManagementCaps.IoMmuSecureModeRequired",
                )
            }
        },
    ),
    row(
        "BR-37",
        INIT,
        "at most 64 nodes before WDDM 2.5",
        INVALID,
        |c| {
            let p = c.physical?;
            (c.wddm < 0x2500 && p.NumExecutionNodes > 64).then(|| {
                format!(
                    "{} nodes on a WDDM {:#x} adapter (at most 64 before WDDM 2.5)",
                    p.NumExecutionNodes, c.wddm
                )
            })
        },
    ),
    row(
        "BR-36",
        INIT,
        "a WDDM 2.0+ driver whose physical caps were answered is MultiEngineAware",
        INVALID,
        |c| {
            (c.physical.is_some() && c.wddm >= 0x2000 && !c.multi).then(|| {
                format!(
                    "SchedulingCaps.MultiEngineAware is not set by a WDDM {:#x} driver",
                    c.wddm
                )
            })
        },
    ),
    // BR-55's second half, right after the PHYSICALADAPTERCAPS loop: with IOMMU secure mode the
    // frame-buffer save size is asked.
    Rule {
        outcome: Outcome::DriverStatus,
        ..row(
            "BR-55",
            INIT,
            "DXGKQAITYPE_FRAMEBUFFERSAVESIZE answered",
            0,
            |c| match c.facts.framebuffer_save_size {
                Some(Err(status)) => Some(format!(
                    "DXGKQAITYPE_FRAMEBUFFERSAVESIZE failed ({:#010x})",
                    status as u32
                )),
                _ => None,
            },
        )
    },
    row(
        "BR-55",
        INIT,
        "the frame-buffer save size a page multiple",
        INVALID,
        |c| match c.facts.framebuffer_save_size {
            Some(Ok(size)) if size & 0xFFF != 0 => Some(format!(
                "frame buffer save size {size:#x} is not a multiple of the page size"
            )),
            _ => None,
        },
    ),
    row(
        "BR-38",
        INIT,
        "from D3DKMT 2.4: no reserved `MiscCaps` bit (24H2 names bits 0 to 8; \
         windows-bringup.md §15 Q8)",
        INVALID,
        |c| {
            let misc = c.caps.MiscCaps.Value;
            (misc >> MISC_CAPS_RESERVED_FROM != 0)
                .then(|| format!("reserved MiscCaps bits set ({misc:#x})"))
        },
    ),
    row(
        "BR-39",
        INIT,
        "per-source vsync control needs DxgkDdiControlInterrupt3",
        INVALID,
        |c| {
            when(
                c.caps
                    .MiscCaps
                    .is_set(DXGK_DRIVERCAPS_MiscCaps::IndependentVidPnVSyncControl)
                    && !c.filled(slot!(DxgkDdiControlInterrupt3)),
                "MiscCaps.IndependentVidPnVSyncControl without DxgkDdiControlInterrupt3",
            )
        },
    ),
    row(
        "BR-33",
        INIT,
        "a `WDDMVersion` the kernel knows: 1.0, 1.2, 1.3, 2.0 to 2.9, 3.0, 3.1 (23H2), and 3.2, which \
         26100 accepts ([H] `WDDM_RENDER_ONLY_DDI_CHECKLIST.md`)",
        MISMATCH,
        |c| {
            (!KNOWN_WDDM_VERSIONS.contains(&c.wddm))
                .then(|| format!("unknown WDDMVersion {:#x}", c.wddm))
        },
    ),
    row(
        "BR-41",
        INIT,
        "HybridIntegrated only from WDDM 2.0 (ValidateWDDMCaps)",
        INVALID,
        |c| {
            (c.facts.validate_wddm_caps && c.wddm < 0x2000 && c.caps.HybridIntegrated != 0)
                .then(|| format!("HybridIntegrated on a WDDM {:#x} driver", c.wddm))
        },
    ),
    row(
        "BR-40",
        INIT,
        "the cross-adapter tiers build on each other: `…Scanout` needs `…Texture` and \
         `CrossAdapterResource`, `…Texture` needs `CrossAdapterResource`",
        INVALID,
        |c| {
            let base = c.mm.is_set(DXGK_VIDMMCAPS_0::CrossAdapterResource);
            let texture = c.mm.is_set(DXGK_VIDMMCAPS_0::CrossAdapterResourceTexture);
            let scanout = c.mm.is_set(DXGK_VIDMMCAPS_0::CrossAdapterResourceScanout);
            let broken = if scanout {
                !(texture && base)
            } else {
                texture && !base
            };
            when(
                broken,
                "a cross-adapter resource tier without the tiers below it",
            )
        },
    ),
    // The four hybrid strings (Windows skips them for software adapters only).
    row(
        "BR-41",
        INIT,
        "hybrid kinds: no `HybridDiscrete` with outputs (interface < 0x5005), none without \
         `CrossAdapterResource`, not both kinds, no `HybridIntegrated` without outputs",
        INVALID,
        |c| {
            let discrete = c.caps.HybridDiscrete != 0;
            let integrated = c.caps.HybridIntegrated != 0;
            let base = c.mm.is_set(DXGK_VIDMMCAPS_0::CrossAdapterResource);
            let outputs = c.facts.sources != 0 || c.facts.children != 0;
            let why = if discrete && c.facts.version < 0x5005 && outputs {
                "HybridDiscrete with VidPn sources or targets"
            } else if (discrete || integrated) && !base {
                "a hybrid adapter without MemoryManagementCaps.CrossAdapterResource"
            } else if discrete && integrated {
                "both HybridIntegrated and HybridDiscrete"
            } else if integrated && c.facts.children == 0 {
                "HybridIntegrated on an adapter without outputs"
            } else {
                return None;
            };
            Some(why.to_owned())
        },
    ),
    row(
        "BR-42",
        INIT,
        "per-engine TDR needs DxgkDdiQueryDependentEngineGroup, QueryEngineStatus and ResetEngine \
         ([M] also names CollectDbgInfo)",
        INVALID,
        |c| {
            when(
                c.caps.SupportPerEngineTDR != 0
                    && !(c.filled(slot!(DxgkDdiQueryDependentEngineGroup))
                        && c.filled(slot!(DxgkDdiQueryEngineStatus))
                        && c.filled(slot!(DxgkDdiResetEngine))),
                "SupportPerEngineTDR without QueryDependentEngineGroup, QueryEngineStatus and \
                 ResetEngine",
            )
        },
    ),
    row(
        "BR-43",
        INIT,
        "kernel-mode command buffers need DxgkDdiRenderKm",
        INVALID,
        |c| {
            when(
                c.kernel_command_buffers() && !c.filled(slot!(DxgkDdiRenderKm)),
                "PresentationCaps.SupportKernelModeCommandBuffer without DxgkDdiRenderKm",
            )
        },
    ),
    row(
        "BR-44",
        INIT,
        "runtime power management needs its two DDIs",
        INVALID,
        |c| {
            when(
                c.caps.SupportRuntimePowerManagement != 0
                    && !(c.filled(slot!(DxgkDdiSetPowerComponentFState))
                        && c.filled(slot!(DxgkDdiPowerRuntimeControlRequest))),
                "SupportRuntimePowerManagement without SetPowerComponentFState and \
             PowerRuntimeControlRequest",
            )
        },
    ),
    // The DDI arm between the plane count and direct flip names table slots not identified
    // here and is not modelled.
    row(
        "BR-45",
        INIT,
        "multi-plane overlays: interface 0x300B+, 1..=8 planes (10 from WDDM 2.2), direct flip",
        INVALID,
        |c| {
            if c.caps.SupportMultiPlaneOverlay == 0 {
                return None;
            }
            let (version, wddm, planes) = (c.facts.version, c.wddm, c.caps.MaxOverlayPlanes);
            let too_many = planes > 8
                && if wddm < 0x2200 {
                    wddm < 0x2000 || planes != 10
                } else {
                    planes > 10
                };
            let why = if version < 0x300B {
                format!("interface version {version:#x} predates MPO")
            } else if version > 0x4000 && planes == 0 {
                "no overlay planes".to_owned()
            } else if version > 0x4000 && too_many {
                format!("{planes} overlay planes on a WDDM {wddm:#x} driver")
            } else if c.caps.SupportDirectFlip == 0 {
                "SupportDirectFlip is not set".to_owned()
            } else {
                return None;
            };
            Some(format!("SupportMultiPlaneOverlay: {why}"))
        },
    ),
    row(
        "BR-46",
        INIT,
        "from WDDM 2.4 the two diagnostic DDIs come as a pair",
        INVALID,
        |c| {
            when(
            c.wddm >= 0x2400
                && c.filled(slot!(DxgkDdiQueryDiagnosticTypesSupport))
                    != c.filled(slot!(DxgkDdiControlDiagnosticReporting)),
            "only one of DxgkDdiQueryDiagnosticTypesSupport and DxgkDdiControlDiagnosticReporting",
        )
        },
    ),
    // On a WDDM 1.2+ driver with every render DDI ([`Slot::RenderCore`] in the rule table) NULL
    // there is no render core; a render-only adapter has no display core either, and an adapter
    // with neither fails. No render-core rule below runs then. One more slot of Windows' list
    // (DXGADAPTER qword 85) is not identified and not modelled.
    Rule {
        ends: true,
        ..row(
            "BR-56",
            "[D] CreateRenderCore, DXGADAPTER::Initialize",
            "a render core (any render DDI, WDDM 1.2+)",
            MISMATCH,
            |c| {
                when(
                    c.wddm >= 0x1200 && !rules::slots(Slot::RenderCore).any(|n| filled_by_name(&c.t, n)),
                    "no render DDIs and no display core: the adapter has neither capability",
                )
            },
        )
    },
    row(
        "BR-47",
        RENDER_CORE,
        "a render core's whole DDI set: InterruptRoutine, DpcRoutine, CreateDevice, DestroyDevice, \
         DestroyAllocation, DescribeAllocation, GetStandardAllocationDriverData, OpenAllocation, \
         CloseAllocation, SubmitCommand, PreemptCommand, BuildPagingBuffer, ResetFromTimeout, \
         RestartFromTimeout, CollectDbgInfo, Present, and ControlInterrupt unless compute-only",
        MISMATCH,
        |c| {
            let mut missing: Vec<&str> = RENDER_DDIS
                .iter()
                .filter(|s| !c.filled(**s))
                .map(|s| s.name)
                .collect();
            if !c.compute_only && !c.filled(slot!(DxgkDdiControlInterrupt)) {
                missing.push(slot!(DxgkDdiControlInterrupt).name);
            }
            (!missing.is_empty()).then(|| format!("render DDIs missing: {}", missing.join(", ")))
        },
    ),
    row(
        "BR-48",
        RENDER_CORE,
        "the four overlay DDIs all or none",
        MISMATCH,
        |c| {
            let filled = OVERLAY_DDIS.iter().filter(|s| c.filled(**s)).count();
            when(
                filled != 0 && filled != OVERLAY_DDIS.len(),
                "Create, Update, Flip and DestroyOverlay: some filled, not all",
            )
        },
    ),
    // x86/x64 DMA always snoops; ARM64 platforms may lack I/O coherency (AL-06).
    row(
        "BR-50",
        RENDER_CORE,
        "no `NoCacheCoherentApertureMemory` on x86/x64 (the pseudocode tests it only with \
         `SupportKernelModeCommandBuffer`, windows-bringup.md §15 Q12)",
        INVALID,
        |c| {
            when(
                c.facts.arch == CpuArch::X64
                    && c.presentation & NO_CACHE_COHERENT_APERTURE_MEMORY != 0,
                "NoCacheCoherentApertureMemory on x64",
            )
        },
    ),
    row(
        "BR-49",
        RENDER_CORE,
        "swizzling ranges need Acquire/ReleaseSwizzlingRange",
        MISMATCH,
        |c| {
            let n = c.caps.NumberOfSwizzlingRanges;
            (n != 0
                && !(c.filled(slot!(DxgkDdiAcquireSwizzlingRange))
                    && c.filled(slot!(DxgkDdiReleaseSwizzlingRange))))
            .then(|| format!("{n} swizzling ranges without Acquire/ReleaseSwizzlingRange"))
        },
    ),
    row(
        "BR-36",
        RENDER_CORE,
        "preemption or cancel awareness needs MultiEngineAware",
        INVALID,
        |c| {
            let sched = c.caps.SchedulingCaps;
            when(
                !c.multi
                    && (sched.is_set(DXGK_VIDSCHCAPS::PreemptionAware)
                        || sched.is_set(DXGK_VIDSCHCAPS::CancelCommandAware)),
                "PreemptionAware or CancelCommandAware without MultiEngineAware",
            )
        },
    ),
    row(
        "BR-36",
        RENDER_CORE,
        "a multi-engine-aware driver below WDDM 2.0 reports its nodes",
        INVALID,
        |c| {
            when(
                c.multi
                    && c.wddm < 0x2000
                    && c.caps.GpuEngineTopology.NbAsymetricProcessingNodes == 0,
                "MultiEngineAware below WDDM 2.0 with no nodes",
            )
        },
    ),
    // One condition in Windows, so one violation naming each missing feature. Checked only
    // when `ValidateWDDMCaps` is set: [D] `DXGADAPTER::Initialize` copies the global that [D]
    // `DXGGLOBAL::Initialize` reads from that registry value (0 when absent) into the flag.
    row(
        "BR-52",
        "[D] ADAPTER_RENDER::CreateRenderCore",
        "only under `GraphicsDrivers\\ValidateWDDMCaps` (0 when absent), the WDDM 1.2 mandatory \
         render features: both preemption granularities, `SupportPerEngineTDR`, and unless \
         compute-only `FlipOnVSyncMmIo` and `SupportKernelModeCommandBuffer` (else Basic Display)",
        INVALID,
        |c| {
            if !(c.facts.validate_wddm_caps && c.wddm >= 0x1200) {
                return None;
            }
            let p = c.caps.PreemptionCaps;
            let mut missing = Vec::new();
            if p.GraphicsPreemptionGranularity == 0 || p.ComputePreemptionGranularity == 0 {
                missing.push("a preemption granularity (NONE)");
            }
            if c.caps.SupportPerEngineTDR == 0 {
                missing.push("SupportPerEngineTDR");
            }
            if !c.compute_only {
                if !c.caps.FlipCaps.is_set(DXGK_FLIPCAPS::FlipOnVSyncMmIo) {
                    missing.push("FlipCaps.FlipOnVSyncMmIo");
                }
                // The software-adapter exemption (WARP, BasicRender) does not apply to a PCI GPU.
                if !c.kernel_command_buffers() {
                    missing.push("PresentationCaps.SupportKernelModeCommandBuffer");
                }
            }
            (!missing.is_empty()).then(|| {
                format!(
                    "mandatory WDDM 1.2 render features missing (ValidateWDDMCaps): {}",
                    missing.join(", ")
                )
            })
        },
    ),
    row(
        "BR-51",
        RENDER_CORE,
        "WDDM 2.0+ and not compute-only: FlipOnVSyncMmIo, even without outputs",
        INVALID,
        |c| {
            when(
                c.wddm >= 0x2000
                    && !c.compute_only
                    && !c.caps.FlipCaps.is_set(DXGK_FLIPCAPS::FlipOnVSyncMmIo),
                "FlipCaps.FlipOnVSyncMmIo is not set",
            )
        },
    ),
    row(
        "BR-53",
        RENDER_CORE,
        "DxgkDdiGetNodeMetadata from WDDM 1.3",
        INVALID,
        |c| {
            when(
                c.wddm >= 0x1300 && !c.filled(slot!(DxgkDdiGetNodeMetadata)),
                "DxgkDdiGetNodeMetadata is missing",
            )
        },
    ),
    row(
        "BR-55",
        RENDER_CORE,
        "IOMMU secure mode (WDDM 2.4+) needs Begin/EndExclusiveAccess",
        INVALID,
        |c| {
            when(
                c.wddm >= 0x2400
                    && c.mm.is_set(DXGK_VIDMMCAPS_0::IoMmuSecureModeSupported)
                    && !(c.filled(slot!(DxgkDdiBeginExclusiveAccess))
                        && c.filled(slot!(DxgkDdiEndExclusiveAccess))),
                "IoMmuSecureModeSupported without DxgkDdiBegin/EndExclusiveAccess",
            )
        },
    ),
    // BR-35's second half, the first step of `ADAPTER_RENDER::Initialize`: the names parse
    // ("Invalidly formatted user mode driver name") and the first is not empty ("Invalid user
    // mode driver name"). 22631 skips the emptiness check only with its GpuVaIoMmu feature;
    // the later builds skip it for a compute-only adapter (MiscCaps bit 3), as here.
    row(
        "BR-35",
        "[D] ADAPTER_RENDER::Initialize",
        "UserModeDriverName well formed",
        STATUS_DEVICE_CONFIGURATION_ERROR,
        |c| {
            when(
                c.facts.umd_name == UmdName::BadlyFormed,
                "UserModeDriverName is badly formed",
            )
        },
    ),
    // A missing name reads as an empty one here (a virtual-GPU-only adapter gets this far).
    row(
        "BR-35",
        "[D] ADAPTER_RENDER::Initialize",
        "UserModeDriverName not empty, unless compute-only",
        STATUS_DEVICE_CONFIGURATION_ERROR,
        |c| {
            when(
                matches!(c.facts.umd_name, UmdName::Empty | UmdName::Missing) && !c.compute_only,
                "UserModeDriverName is empty or missing",
            )
        },
    ),
];

/// Every violated row of [`CAPS_RULES`], in order; the first one is what the start fails with.
/// BR-54 runs after the render core is initialised ([`super::render_core`]).
pub fn check_caps(
    caps: &DXGK_DRIVERCAPS,
    physical: Option<&DXGK_PHYSICALADAPTERCAPS>,
    t: &DRIVER_INITIALIZATION_DATA,
    facts: &StartFacts,
) -> Vec<Violation> {
    let misc = caps.MiscCaps;
    let c = Caps {
        caps: *caps,
        physical: physical.copied(),
        t: *t,
        facts: *facts,
        wddm: caps.WDDMVersion as u32,
        compute_only: misc.is_set(DXGK_DRIVERCAPS_MiscCaps::ComputeOnly),
        virtual_only: misc.is_set(DXGK_DRIVERCAPS_MiscCaps::VirtualGpuOnly),
        presentation: caps.PresentationCaps.Value,
        mm: caps.MemoryManagementCaps.Anonymous,
        multi: caps
            .SchedulingCaps
            .is_set(DXGK_VIDSCHCAPS::MultiEngineAware),
    };
    super::rule::apply(CAPS_RULES, &c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only BR-56 ends the walk (nothing of a render core is checked when there is none).
    #[test]
    fn only_the_missing_render_core_ends_the_checks() {
        let ends: Vec<&str> = CAPS_RULES.iter().filter(|r| r.ends).map(|r| r.id).collect();
        assert_eq!(ends, ["BR-56"]);
    }
}
