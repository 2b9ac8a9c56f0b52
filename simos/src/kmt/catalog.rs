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
/// `STATUS_INVALID_HANDLE` (an NT handle the caller's process does not hold).
const INVALID_HANDLE: u32 = 0xC000_0008;
/// `STATUS_OBJECT_TYPE_MISMATCH` (an NT handle to an object of another type).
const OBJECT_TYPE_MISMATCH: u32 = 0xC000_0024;
/// `STATUS_DEVICE_REMOVED` (`COREDEVICEACCESS`: the device is not active).
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
    Thunk {
        name: "D3DKMTCreateAllocation2",
        source: Some(&[
            src("DxgkCreateAllocationInternal", 0x140304ED8),
            src("DXGDEVICE::CreateAllocation", 0x140356E10),
        ]),
        checks: &[
            check(
                "hDevice not in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check(
                "Flags.NoKmdAccess with Flags.StandardAllocation",
                INVALID_PARAMETER,
            ),
            check("Flags.NoKmdAccess without test signing", INVALID_PARAMETER),
            check("NumAllocations above 0x682AA", INVALID_PARAMETER),
            check(
                "CreateProtected, CreateWriteCombined, CreateCached or OpenCrossAdapter \
                 from an unprivileged process",
                INVALID_PARAMETER,
            ),
            check(
                "ExistingSysMem without StandardAllocation from an unprivileged process",
                INVALID_PARAMETER,
            ),
            check(
                "ExistingSection without StandardAllocation",
                INVALID_PARAMETER,
            ),
            check("CreateShared without CreateResource", INVALID_PARAMETER),
            check("no hResource and NumAllocations 0", INVALID_PARAMETER),
            check("no pool for the handle list", NO_MEMORY),
            check(
                "StandardAllocation on a driver below WDDM 2.0",
                INVALID_PARAMETER,
            ),
        ],
        written_back: &[
            "each entry's hAllocation (no GpuVirtualAddress: a VA comes only from Map)",
            "hResource, hGlobalShare and Flags, once DXGDEVICE::CreateAllocation ran",
        ],
        pending: Pending::No,
        entry: None,
        gaps: "no kernel entry of its own (the gdi32 bridge and SimKmt answer it apart); \
               DXGDEVICE::CreateAllocation's own checks and ValidateStandardAllocationParams \
               not read; after 24H2's checks a resource, a flag, StandardAllocation, runtime or \
               driver data of the whole call and pSystemMem are STATUS_NOT_SUPPORTED (the UMD \
               uses none); the unprivileged process is DXGPROCESS +0x198 bit 8 clear, which \
               every process of the simulation is",
    },
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
    Thunk {
        name: "D3DKMTCreatePagingQueue",
        source: Some(&[
            src("DxgkCreatePagingQueueInternal", 0x1403967CC),
            src("DXGDEVICE::CreatePagingQueue", 0x140396C98),
        ]),
        checks: &[
            check(
                "hDevice not in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check(
                "PhysicalAdapterIndex at or past the adapter's physical adapters",
                INVALID_PARAMETER,
            ),
        ],
        written_back: &[
            "hPagingQueue",
            "hSyncObject",
            "FenceValueCPUVirtualAddress (the 32-byte structure copied back whole)",
        ],
        pending: Pending::No,
        entry: Some("paging_queue::dxgk_create_paging_queue_internal"),
        gaps: "DXGDEVICE::CreatePagingQueue not read (Priority goes to the simulated VidMm \
               unchecked)",
    },
    unread("D3DKMTCreateSynchronizationObject2"),
    Thunk {
        name: "D3DKMTDestroyAllocation2",
        source: Some(&[
            src("DxgkDestroyAllocation2", 0x14032F7A0),
            src("DxgkDestroyAllocationHelper", 0x14032FBB8),
        ]),
        checks: &[
            check("a Flags bit of 0x7FFFFFFC", INVALID_PARAMETER),
            check("hResource with AllocationCount", INVALID_PARAMETER),
            check(
                "hDevice not in the caller's handle table",
                INVALID_PARAMETER,
            ),
        ],
        written_back: &[],
        pending: Pending::No,
        entry: None,
        gaps: "no kernel entry of its own (the gdi32 bridge and SimKmt answer it apart); \
               DxgkDestroyAllocationInternal not read: a listed handle that is not an \
               allocation of hDevice is STATUS_INVALID_PARAMETER here, before any is \
               destroyed; hResource is STATUS_NOT_SUPPORTED (the UMD makes no resources)",
    },
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
    Thunk {
        name: "D3DKMTDestroyPagingQueue",
        source: Some(&[src("DxgkDestroyPagingQueueInternal", 0x1403B201C)]),
        checks: &[check(
            "hPagingQueue not a paging queue in the caller's handle table",
            INVALID_PARAMETER,
        )],
        written_back: &[],
        pending: Pending::No,
        entry: None,
        gaps: "no kernel entry of its own; 24H2 marks the handle destroyed and drops a \
               reference (the queue goes with the last one), the simulation tears the queue \
               down inside the call",
    },
    DESTROY_SYNCHRONIZATION_OBJECT,
    unread("D3DKMTEnumAdapters2"),
    unread("D3DKMTEscape"),
    unread("D3DKMTEvict"),
    Thunk {
        name: "D3DKMTFreeGpuVirtualAddress",
        source: Some(&[src("DxgkFreeGpuVirtualAddress", 0x14039BD40)]),
        checks: &[check(
            "hAdapter not in the caller's handle table",
            INVALID_PARAMETER,
        )],
        written_back: &[],
        pending: Pending::No,
        entry: Some("gpu_va::dxgk_free_gpu_virtual_address"),
        gaps: "VidMm's free not read in 24H2 (the simulated VidMm's rules)",
    },
    Thunk {
        name: "D3DKMTInvalidateCache",
        source: Some(&[src("DxgkInvalidateCache", 0x1401B35A0)]),
        checks: &[
            check(
                "hDevice not in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check(
                "hAllocation not an allocation in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check("hAllocation of another device", INVALID_PARAMETER),
            check("hAllocation without a VidMm allocation", INVALID_PARAMETER),
        ],
        written_back: &[],
        pending: Pending::No,
        entry: None,
        gaps: "no kernel entry of its own; VidMm's Offset and Length rules \
               (VIDMM_EXPORT::VidMmInvalidateCache @0x14006B9F8) not read in 24H2 (22631's)",
    },
    unread("D3DKMTIsFeatureEnabled"),
    Thunk {
        name: "D3DKMTLock2",
        source: Some(&[
            src("DxgkLock2", 0x1402A3430),
            src("DxgkLock2Internal", 0x1402A3F00),
        ]),
        checks: &[
            check(
                "hDevice not in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check("the device not active", DEVICE_REMOVED),
            check(
                "hAllocation not an allocation in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check("hAllocation on another adapter", INVALID_PARAMETER),
            check("hAllocation without a VidMm allocation", INVALID_PARAMETER),
            check("hAllocation of another device", INVALID_PARAMETER),
        ],
        written_back: &["pData"],
        pending: Pending::No,
        entry: None,
        gaps: "no kernel entry of its own; DxgkLock2Internal's refusal of a CPU-cached \
               allocation on some adapters and VidMm's lock not read; a view through a CPU \
               cache the GPU does not snoop is STATUS_NOT_SUPPORTED here",
    },
    Thunk {
        name: "D3DKMTMakeResident",
        source: Some(&[src("DxgkMakeResidentInternal", 0x1402A7570)]),
        checks: &[
            check("NumAllocations 0", INVALID_PARAMETER),
            check("AllocationList NULL", INVALID_PARAMETER),
            check("Flags.Value 4 or more", INVALID_PARAMETER),
            check(
                "hPagingQueue not in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check("no pool for more than 40 allocations", NO_MEMORY),
            check("the device not active", DEVICE_REMOVED),
            check(
                "a listed handle not an allocation in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check(
                "an allocation of another device than the paging queue's",
                INVALID_PARAMETER,
            ),
            check(
                "a device created without user-mode residency",
                NOT_SUPPORTED,
            ),
        ],
        written_back: &[
            "PagingFenceValue, on success and on STATUS_PENDING",
            "NumBytesToTrim, after any VidMm answer (the caller's own where VidMm set none)",
        ],
        pending: Pending::When("paging queued ahead on the queue: PagingFenceValue not reached"),
        entry: Some("paging_queue::dxgk_make_resident_internal"),
        gaps: "VidMm's MakeResident not read: over budget the simulation answers \
               STATUS_NO_MEMORY with NumBytesToTrim whatever MustSucceed says; the user-mode \
               residency condition (DXGDEVICE +0x77F, or a device of kind 2 on WDDM 2.0 and \
               up) is not modelled; the gdi32 bridge copies at most 256 handles (more is \
               STATUS_INVALID_PARAMETER there)",
    },
    Thunk {
        name: "D3DKMTMapGpuVirtualAddress",
        source: Some(&[
            src("DxgkMapGpuVirtualAddress", 0x140321DB0),
            src("VIDMM_GLOBAL::VidMmMapGpuVirtualAddress", 0x1400F4F90),
        ]),
        checks: &[
            check(
                "hPagingQueue not in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check(
                "Protection.SystemUseOnly or a reserved bit",
                INVALID_PARAMETER,
            ),
            check("the device not active", DEVICE_REMOVED),
            check(
                "without Zero or NoAccess, hAllocation not in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check("hAllocation without a VidMm allocation", INVALID_PARAMETER),
            check(
                "hAllocation of another device than the paging queue's",
                INVALID_PARAMETER,
            ),
            check("NoAccess with Write, Execute or Zero", INVALID_PARAMETER),
        ],
        written_back: &["VirtualAddress and PagingFenceValue, on success and on STATUS_PENDING"],
        pending: Pending::When("paging queued ahead on the queue: PagingFenceValue not reached"),
        entry: Some("gpu_va::dxgk_map_gpu_virtual_address"),
        gaps: "VidMmMapGpuVirtualAddressInternal not read in 24H2 (the simulated VidMm's \
               rules, after 24H2's rounding of the three addresses down to 4 KiB); Zero \
               mappings are not modelled",
    },
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
    OPEN_NATIVE_FENCE_FROM_NT_HANDLE,
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
    Thunk {
        name: "D3DKMTReserveGpuVirtualAddress",
        source: Some(&[src("DxgkReserveGpuVirtualAddress", 0x140399110)]),
        checks: &[
            check("ReservationType above RESERVE_ZERO", INVALID_PARAMETER),
            check(
                "hPagingQueue neither a paging queue nor an adapter in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check("RESERVE_ZERO named by an adapter", INVALID_PARAMETER),
            check("a negative ReservationType", INVALID_PARAMETER),
        ],
        written_back: &[
            "VirtualAddress",
            "PagingFenceValue (the caller's own unless VidMm sets one)",
        ],
        pending: Pending::No,
        entry: Some("gpu_va::dxgk_reserve_gpu_virtual_address"),
        gaps: "VidMm's reserve not read in 24H2 (the simulated VidMm's rules); RESERVE_ZERO \
               is not modelled",
    },
    SHARE_OBJECTS,
    SIGNAL_SYNCHRONIZATION_OBJECT_FROM_CPU,
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
    unread("D3DKMTSubmitSignalSyncObjectsToHwQueue"),
    unread("D3DKMTSubmitWaitForSyncObjectsToHwQueue"),
    Thunk {
        name: "D3DKMTUnlock2",
        source: Some(&[
            src("DxgkUnlock2", 0x1402A21C0),
            src("DxgkUnlock2Internal", 0x1402A2B20),
        ]),
        checks: &[
            check(
                "hDevice not in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check("the device not active", DEVICE_REMOVED),
            check(
                "hAllocation not an allocation in the caller's handle table",
                INVALID_PARAMETER,
            ),
            check("hAllocation on another adapter", INVALID_PARAMETER),
            check("hAllocation without a VidMm allocation", INVALID_PARAMETER),
            check("hAllocation of another device", INVALID_PARAMETER),
        ],
        written_back: &[],
        pending: Pending::No,
        entry: None,
        gaps: "no kernel entry of its own; VidMm's unlock not read",
    },
    unread("D3DKMTUpdateGpuVirtualAddress"),
    WAIT_FOR_SYNCHRONIZATION_OBJECT_FROM_CPU,
];

// The sync-object thunks' rows.

const DESTROY_SYNCHRONIZATION_OBJECT: Thunk = Thunk {
    name: "D3DKMTDestroySynchronizationObject",
    source: Some(&[src("DxgkDestroySynchronizationObjectImpl", 0x1403ABF4C)]),
    checks: &[
        check("the structure not readable", ACCESS_VIOLATION),
        check(
            "hSyncObject a device sync object its flags mark not the caller's to destroy",
            ACCESS_DENIED,
        ),
        check(
            "hSyncObject neither a device nor a global sync object in the caller's handle table",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[],
    pending: Pending::No,
    entry: None,
    gaps: "which objects carry the flag that refuses a destroy (STATUS_ACCESS_DENIED) was not \
           read, so the simulation refuses none; the bridge answers a handle it does not know \
           with STATUS_INVALID_PARAMETER from its own table",
};

const OPEN_NATIVE_FENCE_FROM_NT_HANDLE: Thunk = Thunk {
    name: "D3DKMTOpenNativeFenceFromNtHandle",
    source: Some(&[
        src("NtDxgkOpenNativeFenceFromNtHandleInternal", 0x1401E15EC),
        src("DXGSYNCOBJECT::Open", 0x1401F4640),
    ]),
    checks: &[
        check("the structure not readable", ACCESS_VIOLATION),
        check("a Flags bit of 0x7FFFF800", INVALID_PARAMETER),
        check("a non-zero byte of Reserved", INVALID_PARAMETER),
        check(
            "hDevice not in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("the adapter without native fences", INVALID_PARAMETER),
        check(
            "hNtHandle not a handle of the caller's process",
            INVALID_HANDLE,
        ),
        check(
            "hNtHandle a handle to an object of another type",
            OBJECT_TYPE_MISMATCH,
        ),
        check("hNtHandle without READ_CONTROL access", ACCESS_DENIED),
        check(
            "the object neither a monitored nor a native fence",
            INVALID_PARAMETER,
        ),
        check(
            "Flags.NoGPUAccess other than at the fence's creation",
            INVALID_PARAMETER,
        ),
        check("no pool for the device's instance", NO_MEMORY),
    ],
    written_back: &[
        "the 176 bytes as captured, with hSyncObject, the mapping's three addresses and Flags \
         (NoSignal and NoWait replaced by what the NT handle's access withholds)",
    ],
    pending: Pending::No,
    entry: Some("native_fence::nt_dxgk_open_native_fence_from_nt_handle_internal"),
    gaps: "PrivateDriverData: 24H2 gives DXGSYNCOBJECT::Open no buffer for it, so the caller's \
           bytes come back, while the pages say the KMD's DxgkDdiOpenNativeFence data comes \
           back; the simulation writes the KMD's (the pages' answer) because the UMD takes the \
           fence's report tag from it; the simulated object manager grants every NT handle full \
           access and holds only native fences, and keeps no NoGPUAccess of the creation (an \
           open with it is refused)",
};

const SHARE_OBJECTS: Thunk = Thunk {
    name: "D3DKMTShareObjects",
    source: Some(&[src("DxgkShareObjectsInternal", 0x14032A300)]),
    checks: &[
        check("cObjects 0 or above 3", INVALID_PARAMETER),
        check("hObjects not readable", ACCESS_VIOLATION),
        check("pObjectAttributes NULL", INVALID_PARAMETER),
        check("hObjects[0] 0", INVALID_PARAMETER),
        check(
            "a sync object with cObjects other than 1",
            INVALID_PARAMETER,
        ),
        check(
            "hObjects[0] neither a resource, a sync object nor a protected session of the caller's",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &["*phSharedNtHandle"],
    pending: Pending::No,
    entry: None,
    gaps: "CreateSharedSyncNtObject's own checks and the object attributes' capture were not \
           read: the bridge shares one native fence, refuses a named or otherwise filled \
           OBJECT_ATTRIBUTES (STATUS_NOT_SUPPORTED) and grants full access whatever \
           dwDesiredAccess asks",
};

const SIGNAL_SYNCHRONIZATION_OBJECT_FROM_CPU: Thunk = Thunk {
    name: "D3DKMTSignalSynchronizationObjectFromCpu",
    source: Some(&[
        src("DxgkSignalSynchronizationObjectFromCpu", 0x1402B97E0),
        src("SignalSynchronizationObjectFromCpu", 0x1402BA4F8),
    ]),
    checks: &[
        check("the structure not readable", ACCESS_VIOLATION),
        check("ObjectCount 0", INVALID_PARAMETER),
        check("no pool for ObjectCount handles and values", NO_MEMORY),
        check(
            "ObjectHandleArray or FenceValueArray not readable",
            ACCESS_VIOLATION,
        ),
        check(
            "hDevice not in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("a Flags bit from 3 up", INVALID_PARAMETER),
        check(
            "a handle not a sync object in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("an object created or opened NoSignal", ACCESS_DENIED),
        check("an object of another device", INVALID_PARAMETER),
        check("the same object twice", INVALID_PARAMETER),
        check(
            "an object whose adapter state is destroyed",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[],
    pending: Pending::No,
    entry: Some("sync_from_cpu::dxgk_signal_synchronization_object_from_cpu"),
    gaps: "Flags bits 0 to 2 (AllowFenceRewind and two more) are accepted and not acted on; \
           the simulation's pool holds at most MAX_OBJECTS handles (STATUS_NO_MEMORY above), \
           24H2's what the system has",
};

const WAIT_FOR_SYNCHRONIZATION_OBJECT_FROM_CPU: Thunk = Thunk {
    name: "D3DKMTWaitForSynchronizationObjectFromCpu",
    source: Some(&[
        src(
            "DxgkWaitForSynchronizationObjectFromCpuInternal",
            0x1402AC610,
        ),
        src("WaitForSynchronizationObjectFromCpu", 0x1402AD200),
    ]),
    checks: &[
        check("the structure not readable", ACCESS_VIOLATION),
        check("ObjectCount 0", INVALID_PARAMETER),
        check("a Flags bit other than WaitAny", INVALID_PARAMETER),
        check("no pool for ObjectCount handles and values", NO_MEMORY),
        check(
            "ObjectHandleArray or FenceValueArray not readable",
            ACCESS_VIOLATION,
        ),
        check(
            "hDevice not in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("the device not active", DEVICE_REMOVED),
        check(
            "hAsyncEvent not an event handle of the caller's process",
            INVALID_HANDLE,
        ),
        check(
            "a handle not a sync object in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("an object created or opened NoWait", ACCESS_DENIED),
        check("an object of another device", INVALID_PARAMETER),
        check(
            "an object whose adapter state is destroyed",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[],
    pending: Pending::No,
    entry: Some("sync_from_cpu::dxgk_wait_for_synchronization_object_from_cpu_internal"),
    gaps: "without hAsyncEvent 24H2 waits for as long as it takes (a terminating thread ends it \
           with STATUS_DEVICE_REMOVED); the simulation gives up after its wait limit with \
           STATUS_IO_TIMEOUT; the simulation's pool holds at most MAX_OBJECTS handles \
           (STATUS_NO_MEMORY above)",
};

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
