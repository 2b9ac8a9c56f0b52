//! The nodes phase: `DxgkDdiGetNodeMetadata` for every node (BR-70), then the rules of each
//! node's answer, node by node, as \[D\] `ADAPTER_RENDER::Initialize` checks them after asking
//! every node (BR-71..75).

use rvgpu_ddi::adapter::{DXGK_DRIVERCAPS, DXGK_VIDMMCAPS_0, DXGK_VIDSCHCAPS};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_ddi::submission::{DXGK_NODEMETADATA, DXGK_NODEMETADATA_FLAGS};
use rvgpu_ddi::{BitField, NTSTATUS};

use super::rule::{filled_by_name, Answer, Facts, Rule, Violation};
use crate::adapter::rules::{self, Routine, Slot};
use crate::adapter::AdapterShared;
use crate::base::lock::lock;

/// First node-metadata flag bit the 24H2 headers do not define (bits 0..=4 are named; 23H2
/// still refuses bit 4, which 24H2 names `SupportBuildTestCommandBuffer`). Bits 16..=31 are
/// `MaxInFlightHwQueueBuffers`, not checked.
const NODE_FLAGS_RESERVED: core::ops::Range<u32> = 5..16;

/// What the OS enabled, as BR-73 needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UmsEnablement {
    /// `DXGK_FEATURE_HWSCH` and `DXGK_FEATURE_USER_MODE_SUBMISSION` both enabled.
    pub hws_and_ums: bool,
    /// `DXGK_VIDSCHCAPS::NativeGpuFence` in the driver caps.
    pub native_gpu_fence: bool,
}

/// What the node rows read of one node.
pub struct Node {
    node: u32,
    flags: DXGK_NODEMETADATA_FLAGS,
    gpu_mmu: bool,
    io_mmu: bool,
    /// The adapter's `MemoryManagementCaps`.
    mm: DXGK_VIDMMCAPS_0,
    wddm: u32,
    /// The OS enabled hardware scheduling for the adapter (the bit only the HWSCH negotiation
    /// sets, BR-80).
    os_hws: bool,
    os: UmsEnablement,
    /// The doorbell DDIs the table leaves NULL.
    missing_doorbell_ddis: Vec<&'static str>,
    /// 22631's extra slot (`DxgkDdiFlushHwQueue` / `Reserved4`, byte 1368) is required
    /// (`Windows::ums_requires_slot_1368`, off: the \[D24\] builds check only the five
    /// published DDIs, docs/windows-bringup.md §15 question 2) and NULL.
    slot_1368_missing: bool,
}

impl Node {
    fn has(&self, bit: BitField) -> bool {
        self.flags.is_set(bit)
    }
}

impl Facts for Node {}

const SOURCE: &str = "[D] ADAPTER_RENDER::Initialize";

/// BR-70's rows, per node as it is asked.
pub const METADATA_RULES: &[Rule<Answer>] = &[Rule::driver_status(
    "BR-70",
    SOURCE,
    "`DxgkDdiGetNodeMetadata` (node | physical adapter << 16) succeeds for every node",
    |m| m.failed().map(|st| m.why(st)),
)];

/// BR-70 for `node`'s answer to `ddi`.
pub(crate) fn check_metadata(ddi: Routine, node: u32, status: NTSTATUS) -> Option<Violation> {
    super::rule::first(
        METADATA_RULES,
        &Answer {
            what: ddi.rules().name,
            node: Some(node),
            status: Some(status),
        },
    )
}

/// The node phase's rows, in the order Windows checks one node.
pub const NODE_RULES: &[Rule<Node>] = &[
    Rule::refuse(
        "BR-71",
        SOURCE,
        "(interface 0x9000+) `ContextSchedulingSupported` needs the node's `GpuMmuSupported` or \
         `IoMmuSupported`",
        STATUS_INVALID_PARAMETER,
        |n| {
            (n.has(DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported) && !n.gpu_mmu && !n.io_mmu)
                .then(|| {
                    format!(
                        "node {} claims ContextSchedulingSupported without GPU VA",
                        n.node
                    )
                })
        },
    ),
    // "the OS didn't allow HwSch to be enabled": the bit is set only by the HWSCH negotiation.
    Rule::refuse(
        "BR-72",
        "[D] ADAPTER_RENDER::Initialize, DpQueryFeatureSupport",
        "`ContextSchedulingSupported` needs HWS enabled for the adapter (BR-80)",
        STATUS_INVALID_PARAMETER,
        |n| {
            (n.has(DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported) && !n.os_hws).then(|| {
                format!(
                    "node {} claims ContextSchedulingSupported but the OS did not enable \
                     DXGK_FEATURE_HWSCH",
                    n.node
                )
            })
        },
    ),
    Rule::refuse(
        "BR-73",
        "[D] ADAPTER_RENDER::Initialize; [M] user-mode work submission",
        "**`UserModeSubmission` needs `WDDMVersion` 0x3100+, the node's \
         `ContextSchedulingSupported`, UMS enabled (BR-81), `NativeGpuFence` in the caps \
         (24H2, windows-bringup.md §7a) and the doorbell DDIs (Create/Connect/Disconnect/DestroyDoorbell, \
         NotifyWorkSubmission; 23H2 also the next slot, windows-bringup.md §15 Q2).**",
        STATUS_INVALID_PARAMETER,
        ums_needs,
    ),
    Rule::refuse(
        "BR-74",
        SOURCE,
        "no reserved flag bit (23H2: bits 4 to 15; 24H2 names bit 4; bits 16 to 31, \
         `MaxInFlightHwQueueBuffers`, unchecked)",
        STATUS_INVALID_PARAMETER,
        |n| {
            let flags = n.flags.Value;
            let reserved = NODE_FLAGS_RESERVED.fold(0u32, |m, b| m | (1 << b));
            (flags & reserved != 0).then(|| {
                format!(
                    "node {} sets reserved metadata flag bits ({flags:#x})",
                    n.node
                )
            })
        },
    ),
    // The third condition, "not with a physical adapter that requires GpuVaIoMmu", reads a
    // PHYSICALADAPTERCAPS flag 10.0.22621 does not declare.
    Rule::refuse(
        "BR-75",
        SOURCE,
        "a node's `GpuMmuSupported`/`IoMmuSupported` needs the adapter's",
        STATUS_INVALID_PARAMETER,
        |n| {
            let model = |claimed: bool, bit, name: &str| {
                (claimed && !n.mm.is_set(bit)).then(|| {
                    format!(
                        "node {} claims {name} but MemoryManagementCaps does not",
                        n.node
                    )
                })
            };
            model(
                n.gpu_mmu,
                DXGK_VIDMMCAPS_0::GpuMmuSupported,
                "GpuMmuSupported",
            )
            .or_else(|| model(n.io_mmu, DXGK_VIDMMCAPS_0::IoMmuSupported, "IoMmuSupported"))
        },
    ),
];

fn ums_needs(n: &Node) -> Option<String> {
    if !n.has(DXGK_NODEMETADATA_FLAGS::UserModeSubmission) {
        return None;
    }
    let mut why = Vec::new();
    if !n.has(DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported) {
        why.push("no ContextSchedulingSupported".to_string());
    }
    if n.wddm < 0x3100 {
        why.push(format!("WDDMVersion {:#x} < 3.1", n.wddm));
    }
    if !n.os.hws_and_ums {
        why.push("the OS did not enable HWSCH and USER_MODE_SUBMISSION".to_string());
    }
    if !n.os.native_gpu_fence {
        why.push("no NativeGpuFence in the driver caps (24H2)".to_string());
    }
    why.extend(
        n.missing_doorbell_ddis
            .iter()
            .map(|d| format!("{d} missing")),
    );
    if n.slot_1368_missing {
        why.push("the slot after DxgkDdiNotifyWorkSubmission (byte 1368) missing".to_string());
    }
    (!why.is_empty()).then(|| {
        format!(
            "node {} claims UserModeSubmission: {}",
            n.node,
            why.join(", ")
        )
    })
}

/// The node rows over every node's metadata, node by node; the first is what the start fails
/// with.
pub(crate) fn check_nodes(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
    caps: &DXGK_DRIVERCAPS,
    metadata: &[DXGK_NODEMETADATA],
) -> Vec<Violation> {
    // The OS enables HWSCH and USER_MODE_SUBMISSION only through the feature negotiation
    // (BR-80/81, `dxgkrnl::features`).
    let (hws, ums) = {
        let db = lock(&a.features);
        (
            db.version(rvgpu_ddi::feature::DXGK_FEATURE_HWSCH).is_some(),
            db.version(rvgpu_ddi::feature::DXGK_FEATURE_USER_MODE_SUBMISSION)
                .is_some(),
        )
    };
    let missing_doorbell_ddis: Vec<&'static str> = rules::slots(Slot::Doorbell)
        .filter(|d| !filled_by_name(t, d))
        .collect();
    let os = UmsEnablement {
        hws_and_ums: hws && ums,
        native_gpu_fence: caps.SchedulingCaps.is_set(DXGK_VIDSCHCAPS::NativeGpuFence),
    };
    (0u32..)
        .zip(metadata)
        .flat_map(|(node, md)| {
            let n = Node {
                node,
                flags: md.Flags,
                gpu_mmu: md.GpuMmuSupported != 0,
                io_mmu: md.IoMmuSupported != 0,
                mm: caps.MemoryManagementCaps.Anonymous,
                wddm: caps.WDDMVersion as u32,
                os_hws: hws,
                os,
                missing_doorbell_ddis: missing_doorbell_ddis.clone(),
                slot_1368_missing: a.os.windows.ums_requires_slot_1368() && t.Reserved4.is_null(),
            };
            super::rule::apply(NODE_RULES, &n)
        })
        .collect()
}
