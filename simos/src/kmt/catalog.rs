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
/// `STATUS_ACCESS_DENIED`.
const ACCESS_DENIED: u32 = 0xC000_0022;
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
    Thunk {
        name: "D3DKMTCloseAdapter",
        source: Some(&[
            src("DxgkCloseAdapterImpl", 0x140322C20),
            src("DXGADAPTER::DestroyHandle", 0x140322E94),
        ]),
        checks: &[check(
            "hAdapter not an adapter handle in the caller's table",
            INVALID_PARAMETER,
        )],
        written_back: &[],
        pending: Pending::No,
        entry: None,
        gaps: "the gdi32 bridge answers it itself (no kernel entry of its own); the adapter \
               handle's open of the process's adapter state is not counted: the state lives \
               until the process ends",
    },
    unread("D3DKMTConnectDoorbell"),
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
    Thunk {
        name: "D3DKMTCreateDevice",
        source: Some(&[
            src("DxgkCreateDeviceImpl", 0x14039AA10),
            src("DXGDEVICE::Initialize", 0x1403973B4),
            src("DXGPROCESS::OpenAdapter", 0x14036620C),
            src("DXGPROCESS_RENDER_ADAPTER_INFO::Initialize", 0x1403ACC00),
        ]),
        checks: &[
            check("Flags.TestDevice without test signing", INVALID_PARAMETER),
            check(
                "hAdapter not in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check("no handle left in the process's table", NO_MEMORY),
            check(
                "the process blocked on the adapter for repeated engine timeouts",
                ACCESS_DENIED,
            ),
        ],
        written_back: &["hDevice"],
        pending: Pending::No,
        entry: None,
        gaps: "the gdi32 bridge answers it itself (no kernel entry of its own); a failing \
               DxgkDdiCreateProcess or DxgkDdiCreateDevice returns the driver's status, as \
               24H2 does, but is not a catalog check; display-adapter pairing is not modelled",
    },
    unread("D3DKMTCreateDoorbell"),
    unread("D3DKMTCreateHwQueue"),
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
    unread("D3DKMTDestroyContext"),
    Thunk {
        name: "D3DKMTDestroyDevice",
        source: Some(&[src("DxgkDestroyDeviceImpl", 0x14039D208)]),
        checks: &[check(
            "hDevice not a device handle in the caller's table",
            INVALID_PARAMETER,
        )],
        written_back: &[],
        pending: Pending::No,
        entry: None,
        gaps: "the gdi32 bridge answers it itself; the device goes through the simulated \
               OS's process-exit teardown of one device (24H2 destroys contexts, paging \
               queues, sync objects, then the device, without the exit's flush)",
    },
    unread("D3DKMTDestroyDoorbell"),
    unread("D3DKMTDestroyHwQueue"),
    unread("D3DKMTDestroyPagingQueue"),
    unread("D3DKMTDestroySynchronizationObject"),
    unread("D3DKMTFreeGpuVirtualAddress"),
    unread("D3DKMTInvalidateCache"),
    unread("D3DKMTLock2"),
    unread("D3DKMTMakeResident"),
    unread("D3DKMTMapGpuVirtualAddress"),
    unread("D3DKMTNotifyWorkSubmission"),
    Thunk {
        name: "D3DKMTOpenAdapterFromLuid",
        source: Some(&[
            src("DxgkOpenAdapterFromLuidImpl", 0x14035AC38),
            src("DXGPROCESS::OpenAdapter", 0x14036620C),
        ]),
        checks: &[
            check("no process context", INVALID_PARAMETER),
            check("AdapterLuid no adapter's", INVALID_PARAMETER),
            check("the adapter being removed", ACCESS_DENIED),
            check(
                "the process blocked on the adapter for repeated engine timeouts",
                ACCESS_DENIED,
            ),
            check("the adapter not started", DEVICE_REMOVED),
            check("no handle left in the process's table", NO_MEMORY),
        ],
        written_back: &[
            "hAdapter (0 when the adapter is not started, the table is full or the \
             process's adapter state cannot be made)",
        ],
        pending: Pending::No,
        entry: None,
        gaps: "the gdi32 bridge answers it itself; a remote session's LUID translation is not \
               modelled; the process's adapter state is made at its first device, as 24H2 \
               does for a process without the eager flag (bit 0x80)",
    },
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
    unread("D3DKMTSubmitCommandToHwQueue"),
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
