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

use rvgpu_ddi::adapter::{DXGKARG_HISTORYBUFFERPRECISION, DXGK_VIDMMCAPS_0};
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
    pub(crate) fn new(rule: &'static str, status: NTSTATUS, why: impl Into<String>) -> Self {
        Self {
            rule,
            status,
            why: why.into(),
        }
    }
}

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

pub use crate::adapter::caps_rules::check_caps;

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
