//! The thunk catalog: one row per D3DKMT thunk the UMD, the DLL or the harness calls, holding
//! what 24H2 does with it, as read in the decompiled 24H2 dxgkrnl ("K",
//! docs/windows-bringup.md §13):
//!
//! - **source**: the 24H2 function and its address, or `None` for a thunk not yet read;
//! - **checks**: each refusal, in the order 24H2 makes them, with its status;
//! - **written back**: the fields of the caller's structure 24H2 writes on success;
//! - **pending**: whether 24H2 may answer STATUS_PENDING;
//! - **entry**: the simulated kernel's entry for it (`crate::kmt::…`), when it has one of its own;
//! - **gaps**: what the simulation still answers otherwise (empty: nothing known).
//!
//! A new row goes in [`THUNKS`], in alphabetical order; `tests/pe_umd.rs` fails when the DLL
//! imports a thunk without a row.

/// `STATUS_INVALID_PARAMETER`.
const INVALID_PARAMETER: u32 = 0xC000_000D;
/// `STATUS_UNSUCCESSFUL`.
const UNSUCCESSFUL: u32 = 0xC000_0001;
/// `STATUS_NOT_SUPPORTED`.
const NOT_SUPPORTED: u32 = 0xC000_00BB;
/// `STATUS_ACCESS_VIOLATION` (a probe of the caller's memory).
const ACCESS_VIOLATION: u32 = 0xC000_0005;
/// `STATUS_NO_MEMORY`.
const NO_MEMORY: u32 = 0xC000_0017;
/// `STATUS_DEVICE_REMOVED`.
const DEVICE_REMOVED: u32 = 0xC000_02B6;

/// A function of the decompiled 24H2 kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source {
    /// Its name, as the pseudocode names it.
    pub function: &'static str,
    /// Its address.
    pub address: u64,
}

/// One refusal: what the caller passed, and the status 24H2 answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    /// The condition, in the structure's field names.
    pub what: &'static str,
    /// The NTSTATUS.
    pub status: u32,
}

/// Whether 24H2 answers STATUS_PENDING.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pending {
    /// Never.
    No,
    /// When the reason holds.
    When(&'static str),
    /// Not read.
    Unknown,
}

/// One thunk.
#[derive(Clone, Copy, Debug)]
pub struct Thunk {
    /// The gdi32 export, `D3DKMT…`.
    pub name: &'static str,
    /// The 24H2 function it enters, with the one its checks continue in, if any.
    pub source: Option<&'static [Source]>,
    /// 24H2's refusals, in order (empty for an unread thunk).
    pub checks: &'static [Check],
    /// The fields 24H2 writes back on success.
    pub written_back: &'static [&'static str],
    /// STATUS_PENDING.
    pub pending: Pending,
    /// The simulated kernel's entry, `crate::kmt::…`, where it has one of its own.
    pub entry: Option<&'static str>,
    /// What the simulation still answers otherwise than 24H2 (empty: nothing known).
    pub gaps: &'static str,
}

const fn check(what: &'static str, status: u32) -> Check {
    Check { what, status }
}

const fn src(function: &'static str, address: u64) -> Source {
    Source { function, address }
}

/// A thunk not yet read against 24H2.
const fn unread(name: &'static str) -> Thunk {
    Thunk {
        name,
        source: None,
        checks: &[],
        written_back: &[],
        pending: Pending::Unknown,
        entry: None,
        gaps: "not yet read against 24H2",
    }
}

/// Every thunk with a row, in alphabetical order.
pub const THUNKS: &[Thunk] = &[
    unread("D3DKMTCloseAdapter"),
    Thunk {
        name: "D3DKMTConnectDoorbell",
        source: Some(&[src("DxgkConnectDoorbellInternal", 0x1401D846C)]),
        checks: &[
            check("Flags non-zero", INVALID_PARAMETER),
            check(
                "hDoorbell not a doorbell in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check("the doorbell's queue being destroyed", INVALID_PARAMETER),
            check(
                "the doorbell's status DISCONNECTED_ABORT",
                INVALID_PARAMETER,
            ),
        ],
        written_back: &[],
        pending: Pending::No,
        entry: Some("doorbell::dxgk_connect_doorbell_internal"),
        gaps: "a doorbell whose status is CONNECTED or CONNECTED_NOTIFY_KMD succeeds with no \
               DDI, as in 24H2; the simulation keys this on its own connection state, which \
               the status page mirrors",
    },
    unread("D3DKMTCreateAllocation2"),
    Thunk {
        name: "D3DKMTCreateContextVirtual",
        source: Some(&[
            src("DxgkCreateContextVirtualImpl", 0x1402D17A0),
            src("DXGCONTEXT::Initialize", 0x1402CFD80),
        ]),
        checks: &[
            check(
                "NoKmdAccess or TestContext without test signing",
                INVALID_PARAMETER,
            ),
            check(
                "hDevice not in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check(
                "EngineAffinity's highest bit at or past the physical adapters",
                INVALID_PARAMETER,
            ),
            check(
                "NodeOrdinal at or past the physical adapter's nodes",
                INVALID_PARAMETER,
            ),
            check("more than one EngineAffinity bit", INVALID_PARAMETER),
            check(
                "not SynchronizationOnly, on an adapter or node without GPU VA",
                INVALID_PARAMETER,
            ),
            check("a Flags bit from 7 up", INVALID_PARAMETER),
            check(
                "pPrivateDriverData without size, or a size without pointer",
                INVALID_PARAMETER,
            ),
            check("the private data not readable", ACCESS_VIOLATION),
            check("no pool for the private data", NO_MEMORY),
            check(
                "HwQueueSupported with a driver below WDDM 2.5",
                UNSUCCESSFUL,
            ),
            check(
                "HwQueueSupported on a node without context scheduling",
                UNSUCCESSFUL,
            ),
            check(
                "no HwQueueSupported on a node with context scheduling",
                UNSUCCESSFUL,
            ),
        ],
        written_back: &["hContext", "the private data, when given"],
        pending: Pending::No,
        entry: Some("context_virtual::dxgk_create_context_virtual_impl"),
        gaps: "",
    },
    unread("D3DKMTCreateDevice"),
    Thunk {
        name: "D3DKMTCreateDoorbell",
        source: Some(&[
            src("DxgkCreateDoorbellInternal", 0x1401D8A50),
            src("DXGHWQUEUE::CreateDoorbell", 0x1401D7F48),
            src("DXGDOORBELL::Initialize", 0x1401D9E74),
        ]),
        checks: &[
            check(
                "PrivateDriverData without size, or a size without pointer",
                INVALID_PARAMETER,
            ),
            check("PrivateDriverDataSize above 16", INVALID_PARAMETER),
            check("no pool for the private data", NO_MEMORY),
            check("the private data not readable", ACCESS_VIOLATION),
            check("a Flags bit from 2 up", INVALID_PARAMETER),
            check(
                "hHwQueue not a user-mode-submission queue in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check(
                "RequireSecondaryCpuVA on an adapter without secondary doorbells",
                INVALID_PARAMETER,
            ),
            check("a doorbell already on the queue", INVALID_PARAMETER),
            check(
                "hRingBuffer not an allocation of the queue's device",
                INVALID_PARAMETER,
            ),
            check(
                "hRingBufferControl not an allocation of the queue's device",
                INVALID_PARAMETER,
            ),
        ],
        written_back: &[
            "DoorbellCPUVirtualAddress",
            "DoorbellSecondaryCPUVirtualAddress (0 without RequireSecondaryCpuVA)",
            "DoorbellStatusCPUVirtualAddress",
            "hDoorbell",
            "the private data, when given",
        ],
        pending: Pending::No,
        entry: Some("doorbell::dxgk_create_doorbell_internal"),
        gaps: "HwQueueProgressFenceLastQueuedValueCPUVirtualAddress is written only under the \
               readings that give a user-mode queue a progress fence (24H2 writes none); the \
               status page's and dummy page's own allocation failures are not modelled",
    },
    Thunk {
        name: "D3DKMTCreateHwQueue",
        source: Some(&[
            src("DxgkCreateHwQueueInternal", 0x1402BAF98),
            src("DXGCONTEXT::CreateHwQueue", 0x1402BB7A8),
            src("DXGHWQUEUE::Initialize", 0x1402BBA30),
        ]),
        checks: &[
            check(
                "pPrivateDriverData without size, or a size without pointer",
                INVALID_PARAMETER,
            ),
            check("no pool for the private data", NO_MEMORY),
            check("the private data not readable", ACCESS_VIOLATION),
            check("Flags.NoKmdAccess without test signing", INVALID_PARAMETER),
            check(
                "hHwContext not a context in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check(
                "hHwContext created without HwQueueSupported",
                INVALID_PARAMETER,
            ),
            check(
                "Flags.NoKmdAccess without UserModeSubmission on a context without NoKmdAccess",
                INVALID_PARAMETER,
            ),
            check(
                "UserModeSubmission on a node without user-mode submission",
                INVALID_PARAMETER,
            ),
        ],
        written_back: &[
            "hHwQueue",
            "hHwQueueProgressFence, HwQueueProgressFenceCPUVirtualAddress and \
             HwQueueProgressFenceGPUVirtualAddress, without UserModeSubmission",
            "the private data, when given",
        ],
        pending: Pending::No,
        entry: Some("hw_queue::dxgk_create_hw_queue_internal"),
        gaps: "DisableGpuTimeout is not added to the DDI's flags for a context or adapter that \
               disables GPU timeouts; a NoKmdAccess context is not modelled; a user-mode queue \
               on an adapter that reported no doorbell size is STATUS_NOT_SUPPORTED \
               (DXGHWQUEUE::InitializeForUserModeSubmission not read)",
    },
    Thunk {
        name: "D3DKMTCreateNativeFence",
        source: Some(&[src("NtDxgkCreateNativeFenceInternal", 0x1401F8C68)]),
        checks: &[
            check(
                "Info.Type not D3DDDI_NATIVEFENCE_TYPE_DEFAULT",
                INVALID_PARAMETER,
            ),
            check(
                "Flags non-zero, or an Info.Flags bit of 0x7FFFF800",
                INVALID_PARAMETER,
            ),
            check("NtSecuritySharing without Shared", INVALID_PARAMETER),
            check("Shared without NtSecuritySharing", INVALID_PARAMETER),
            check("NoSignal with NoWait", INVALID_PARAMETER),
            check(
                "a non-zero byte of Reserved, Info.Reserved or the mapping's",
                INVALID_PARAMETER,
            ),
            check(
                "hDevice not in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check(
                "the adapter not on dxgmms2, or without native fences",
                INVALID_PARAMETER,
            ),
        ],
        written_back: &[
            "hSyncObject",
            "PrivateDriverData",
            "the 0x70 bytes from Info.InitialFenceValue (the mapping's three addresses new)",
        ],
        pending: Pending::No,
        entry: Some("native_fence::nt_dxgk_create_native_fence_internal"),
        gaps: "",
    },
    unread("D3DKMTCreatePagingQueue"),
    unread("D3DKMTDestroyAllocation2"),
    Thunk {
        name: "D3DKMTDestroyContext",
        source: Some(&[src("DxgkDestroyContextImpl", 0x1403A0A98)]),
        checks: &[check(
            "hContext not a context in the caller's handle table",
            INVALID_PARAMETER,
        )],
        written_back: &[],
        pending: Pending::No,
        entry: None,
        gaps: "24H2 destroys the context's hardware queues with it \
               (DXGCONTEXT::DestroyAllHwQueues); the simulation refuses a context that still \
               has queues (STATUS_INVALID_PARAMETER)",
    },
    unread("D3DKMTDestroyDevice"),
    Thunk {
        name: "D3DKMTDestroyDoorbell",
        source: Some(&[src("DxgkDestroyDoorbellInternal", 0x1401D9494)]),
        checks: &[
            check(
                "hDoorbell not a doorbell in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check("the doorbell's queue being destroyed", INVALID_PARAMETER),
        ],
        written_back: &[],
        pending: Pending::No,
        entry: Some("doorbell::dxgk_destroy_doorbell_internal"),
        gaps: "",
    },
    Thunk {
        name: "D3DKMTDestroyHwQueue",
        source: Some(&[src("DxgkDestroyHwQueueInternal", 0x1403BC798)]),
        checks: &[check(
            "hHwQueue not a queue in the caller's handle table",
            INVALID_PARAMETER,
        )],
        written_back: &[],
        pending: Pending::No,
        entry: Some("hw_queue::dxgk_destroy_hw_queue_internal"),
        gaps: "24H2 destroys the queue's doorbell with it; the simulation refuses a queue that \
               still has a doorbell (STATUS_INVALID_PARAMETER)",
    },
    unread("D3DKMTDestroyPagingQueue"),
    unread("D3DKMTDestroySynchronizationObject"),
    unread("D3DKMTFreeGpuVirtualAddress"),
    unread("D3DKMTInvalidateCache"),
    unread("D3DKMTLock2"),
    unread("D3DKMTMakeResident"),
    unread("D3DKMTMapGpuVirtualAddress"),
    Thunk {
        name: "D3DKMTNotifyWorkSubmission",
        source: Some(&[src("DxgkNotifyWorkSubmissionInternal", 0x1401D98CC)]),
        checks: &[
            check("Flags non-zero", INVALID_PARAMETER),
            check(
                "hDoorbell not a doorbell in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check("the doorbell's queue being destroyed", INVALID_PARAMETER),
            check(
                "the doorbell's status not CONNECTED_NOTIFY_KMD",
                INVALID_PARAMETER,
            ),
        ],
        written_back: &[],
        pending: Pending::No,
        entry: Some("doorbell::dxgk_notify_work_submission_internal"),
        gaps: "a NoKmdAccess context (success with no DDI) is not modelled",
    },
    unread("D3DKMTOpenAdapterFromLuid"),
    unread("D3DKMTOpenNativeFenceFromNtHandle"),
    Thunk {
        name: "D3DKMTQueryAdapterInfo",
        source: Some(&[src("DxgkQueryAdapterInfoImpl", 0x140383210)]),
        checks: &[
            check("pPrivateDriverData NULL", INVALID_PARAMETER),
            check(
                "PrivateDriverDataSize 0, or overflowing when rounded up to 8",
                INVALID_PARAMETER,
            ),
            check(
                "KMTQAITYPE_NODEMETADATA's input not readable",
                ACCESS_VIOLATION,
            ),
            check(
                "hAdapter not in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check(
                "KMTQAITYPE_NODEMETADATA: PrivateDriverDataSize not 78",
                INVALID_PARAMETER,
            ),
            check(
                "KMTQAITYPE_NODEMETADATA: adapter index past the physical adapters",
                INVALID_PARAMETER,
            ),
            check(
                "KMTQAITYPE_NODEMETADATA: node past the adapter's",
                INVALID_PARAMETER,
            ),
            check("KMTQAITYPE_NODEMETADATA: no node metadata", NOT_SUPPORTED),
        ],
        written_back: &[
            "KMTQAITYPE_NODEMETADATA: NodeData, the driver's DXGK_NODEMETADATA unchanged \
             (Flags.ContextSchedulingSupported: the node is hardware-scheduled)",
        ],
        pending: Pending::No,
        entry: Some("query_adapter_info::dxgk_query_adapter_info_impl"),
        gaps: "only KMTQAITYPE_NODEMETADATA is modelled (every other type: STATUS_NOT_SUPPORTED); \
               the UMD does not call it yet",
    },
    unread("D3DKMTReserveGpuVirtualAddress"),
    unread("D3DKMTShareObjects"),
    unread("D3DKMTSignalSynchronizationObjectFromCpu"),
    Thunk {
        name: "D3DKMTSubmitCommand",
        source: Some(&[src("DxgkSubmitCommandInternal", 0x1402A4B90)]),
        checks: &[
            check("Flags.NoKmdAccess without test signing", INVALID_PARAMETER),
            check(
                "Flags.PresentRedirected from a virtual machine",
                INVALID_PARAMETER,
            ),
            check(
                "BroadcastContext[0] not in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check(
                "BroadcastContext[0] created with HwQueueSupported",
                INVALID_PARAMETER,
            ),
            check("BroadcastContext[0] SynchronizationOnly", INVALID_PARAMETER),
            check("BroadcastContextCount 0 or above 64", INVALID_PARAMETER),
            check("NumPrimaries above 16", INVALID_PARAMETER),
            check(
                "a further broadcast context unknown, synchronisation-only or of another device",
                INVALID_PARAMETER,
            ),
            check(
                "a further broadcast context created with HwQueueSupported",
                INVALID_PARAMETER,
            ),
            check("the context not virtual", INVALID_PARAMETER),
        ],
        written_back: &[],
        pending: Pending::No,
        entry: None,
        gaps: "",
    },
    Thunk {
        name: "D3DKMTSubmitCommandToHwQueue",
        source: Some(&[
            src("DxgkSubmitCommandToHwQueueInternal", 0x1402C5A10),
            src("DXGHWQUEUE::SubmitCommand", 0x1402C6610),
        ]),
        checks: &[
            check(
                "hHwQueue not a queue in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check(
                "hHwQueue created for user-mode submission",
                INVALID_PARAMETER,
            ),
            check("NumPrimaries above 16", INVALID_PARAMETER),
            check(
                "pPrivateDriverData without size, or a size without pointer",
                INVALID_PARAMETER,
            ),
            check("the adapter stopped or removed", DEVICE_REMOVED),
            check(
                "PrivateDriverDataSize above the context's DmaBufferPrivateDataSize",
                INVALID_PARAMETER,
            ),
            check("no pool for the submission", NO_MEMORY),
            check("WrittenPrimaries not readable", ACCESS_VIOLATION),
        ],
        written_back: &[],
        pending: Pending::No,
        entry: Some("hw_queue::dxgk_submit_command_to_hw_queue_internal"),
        gaps: "VidMm's reference of the primaries is not read: any primary is \
               STATUS_INVALID_PARAMETER on this render-only adapter; the simulation refuses a \
               HwQueueProgressFenceId not above the queue's last (STATUS_INVALID_PARAMETER), \
               which M:VidSchSubmitCommandToHwQueue @0x140048F00 does not check; a device in \
               error is STATUS_DEVICE_REMOVED where VidSch answers \
               STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE",
    },
    unread("D3DKMTUnlock2"),
    unread("D3DKMTWaitForSynchronizationObjectFromCpu"),
];

/// The row of thunk `name`.
pub fn row(name: &str) -> Option<&'static Thunk> {
    THUNKS.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows are sorted and unique; a row with checks cites its 24H2 source.
    #[test]
    fn rows_are_sorted_unique_and_cite_a_source() {
        for w in THUNKS.windows(2) {
            assert!(w[0].name < w[1].name, "{} before {}", w[0].name, w[1].name);
        }
        for t in THUNKS {
            assert!(t.name.starts_with("D3DKMT"), "{}", t.name);
            if !t.checks.is_empty() {
                assert!(t.source.is_some_and(|s| !s.is_empty()), "{}", t.name);
            }
        }
    }
}
