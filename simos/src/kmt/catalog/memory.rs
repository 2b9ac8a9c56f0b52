//! Thunk catalog rows: allocations, GPU virtual addresses, residency and paging queues.

use super::*;

pub(super) const CREATE_ALLOCATION2: Thunk = Thunk {
    name: "D3DKMTCreateAllocation2",
    source: Some(&[
        src("DxgkCreateAllocationInternal", 0x140304ED8),
        src("DXGDEVICE::CreateAllocation", 0x140356E10),
        src("VIDMM_GLOBAL::CreateOneAllocation", 0x1400DCBA4),
    ]),
    checks: &[
        check("the structure not readable", ACCESS_VIOLATION),
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
        check("the device not active", DEVICE_REMOVED),
        check("no pool for the handle list", NO_MEMORY),
        check(
            "StandardAllocation on a driver below WDDM 2.0",
            INVALID_PARAMETER,
        ),
        check(
            "CrossAdapter on an adapter without cross-adapter resources, or without CreateShared",
            INVALID_PARAMETER,
        ),
        check("pAllocationInfo2 not readable", ACCESS_VIOLATION),
        check(
            "an entry's Flags.Stereo without Flags.Primary, or with CrossAdapter",
            INVALID_PARAMETER,
        ),
        check(
            "an entry's PrivateDriverDataSize above 0x7FFFFFFF",
            INVALID_PARAMETER,
        ),
        check("no pool for an entry's private driver data", NO_MEMORY),
        check(
            "an entry's pPrivateDriverData not readable",
            ACCESS_VIOLATION,
        ),
        check(
            "pAllocationInfo2 or the structure not writable (what was made is destroyed)",
            ACCESS_VIOLATION,
        ),
    ],
    written_back: &[
        "each entry's hAllocation (no GpuVirtualAddress: a VA comes only from Map)",
        "hResource, hGlobalShare and Flags once DXGDEVICE::CreateAllocation ran, whatever it \
         answered: on success hResource and hGlobalShare 0 (no resource), on a failure the \
         caller's hResource and hGlobalShare 0",
    ],
    pending: Pending::No,
    entry: Some("allocation::dxgk_create_allocation_internal"),
    gaps: "ValidateStandardAllocationParams and DXGDEVICE::OpenResourceObject not read; after \
           24H2's checks a resource, a flag, StandardAllocation, runtime or driver data of the \
           whole call, pSystemMem and a Primary entry (whose display-source checks are not \
           modelled) are STATUS_NOT_SUPPORTED (the UMD uses none); the adapter's cross-adapter \
           bit is not modelled (CrossAdapter with CreateShared is refused with the resource); \
           the simulated pool gives an entry at most 1 MiB of private driver data; the \
           unprivileged process is DXGPROCESS +0x198 bit 8 clear, which every process of the \
           simulation is",
};

pub(super) const CREATE_PAGING_QUEUE: Thunk = Thunk {
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
        check("the device not active", DEVICE_REMOVED),
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
    gaps: "24H2 makes the queue's fence a monitored fence with NoSignal and NoGPUAccess \
           (DXGPAGINGQUEUE::Initialize @0x140396FF0; here a CPU signal of it is refused \
           as NoSignal) starting at a value the adapter keeps (not identified): here at 0; \
           Priority is taken as given, as VIDMM_DEVICE::CreatePagingQueue @0x1400F8448 \
           uses it nowhere",
};

pub(super) const DESTROY_ALLOCATION2: Thunk = Thunk {
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
    entry: Some("allocation::dxgk_destroy_allocation2"),
    gaps: "DxgkDestroyAllocationInternal not read: a listed handle that is not an \
           allocation of hDevice is STATUS_INVALID_PARAMETER here, before any is \
           destroyed; hResource is STATUS_NOT_SUPPORTED (the UMD makes no resources)",
};

pub(super) const DESTROY_PAGING_QUEUE: Thunk = Thunk {
    name: "D3DKMTDestroyPagingQueue",
    source: Some(&[src("DxgkDestroyPagingQueueInternal", 0x1403B201C)]),
    checks: &[check(
        "hPagingQueue not a paging queue in the caller's handle table",
        INVALID_PARAMETER,
    )],
    written_back: &[],
    pending: Pending::No,
    entry: Some("paging_queue::dxgk_destroy_paging_queue_internal"),
    gaps: "24H2 marks the handle destroyed and drops a reference (the queue goes with the \
           last one, its queued paging running on); the simulation does the queue's queued \
           work inside the call, then tears the queue and its fence down",
};

pub(super) const EVICT: Thunk = Thunk {
    name: "D3DKMTEvict",
    source: Some(&[
        src("DxgkEvict", 0x14035E300),
        src("DxgkEvictInternal", 0x14035E31C),
    ]),
    checks: &[
        check("no process context", INVALID_PARAMETER),
        check("NumAllocations 0", INVALID_PARAMETER),
        check("AllocationList NULL", INVALID_PARAMETER),
        check("Flags.Value 4 or more", INVALID_PARAMETER),
        check(
            "hDevice not a device in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("the device not active", DEVICE_REMOVED),
        check(
            "AllocationList plus NumAllocations wrapping the address space",
            INVALID_PARAMETER,
        ),
        check(
            "a listed handle not an allocation in the caller's handle table (the device \
             is marked in error, VidSch code 0xB)",
            INVALID_PARAMETER,
        ),
        check(
            "an allocation of another device than hDevice (the device is marked in error, \
             VidSch code 0xB)",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[
        "NumBytesToTrim, on success: VidMm's answer for the last allocation (VidMm's \
         `VIDMM_GLOBAL::Evict` returns nothing else, and 24H2 evicts one allocation at a time)",
    ],
    pending: Pending::No,
    entry: Some("evict::dxgk_evict_internal"),
    gaps: "a device without user-mode residency is not told apart (24H2 logs, evicts \
           nothing and answers success with NumBytesToTrim 0; every device here takes \
           residency calls); VidMm's Evict (`M:VIDMM_GLOBAL::Evict` @0x1400F0E04) not read: \
           the simulated VidMm's count and placement rules, an Evict past an allocation's \
           MakeResident count changing nothing, and NumBytesToTrim the process's required \
           local memory over the VRAM budget (not compared with \
           `VIDMM_PROCESS_ADAPTER_INFO::GetNumBytesToTrim` @0x1400E8018); the gdi32 bridge \
           reads each group of 16 handles as one copy",
};

pub(super) const FREE_GPU_VIRTUAL_ADDRESS: Thunk = Thunk {
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
};

pub(super) const INVALIDATE_CACHE: Thunk = Thunk {
    name: "D3DKMTInvalidateCache",
    source: Some(&[
        src("DxgkInvalidateCache", 0x1401B35A0),
        src("VIDMM_GLOBAL::InvalidateCache", 0x1400956F8),
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
        check("hAllocation of another device", INVALID_PARAMETER),
        check("hAllocation without a VidMm allocation", INVALID_PARAMETER),
        check(
            "on an adapter needing CPU cache maintenance, Offset at or past the \
             allocation's end",
            INVALID_PARAMETER,
        ),
        check(
            "on an adapter needing CPU cache maintenance, Length (0: to the end) past the \
             allocation's end",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[],
    pending: Pending::No,
    entry: Some("invalidate_cache::dxgk_invalidate_cache"),
    gaps: "VidMm's early success is taken as the adapter being I/O-coherent (the \
           VIDMM_GLOBAL flag it tests, or a process flag, not identified further); VidMm's \
           refusal of an allocation without a CPU mapping in the process \
           (STATUS_INVALID_PARAMETER) is not modelled: every allocation here has one",
};

pub(super) const LOCK2: Thunk = Thunk {
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
    written_back: &["pData, on success"],
    pending: Pending::No,
    entry: Some("lock::dxgk_lock2"),
    gaps: "DxgkLock2Internal's refusal (STATUS_INVALID_PARAMETER) of an allocation whose \
           CPU access VidMm's answer and the adapter's flags rule out is not modelled, nor \
           VidMm's lock read (the simulated VidMm refuses an allocation the KMD did not make \
           CPU-visible); in the gdi32 bridge a view through a CPU cache the GPU does not \
           snoop has no address in the emulated process: STATUS_NOT_SUPPORTED",
};

pub(super) const MAKE_RESIDENT: Thunk = Thunk {
    name: "D3DKMTMakeResident",
    source: Some(&[
        src("DxgkMakeResidentInternal", 0x1402A7570),
        src("VIDMM_GLOBAL::MakeResident", 0x1400B93C8),
    ]),
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
        check(
            "over the budget (with MustSucceed the device is put in error, VidSch code 12)",
            NO_MEMORY,
        ),
    ],
    written_back: &[
        "PagingFenceValue, on success and on STATUS_PENDING",
        "NumBytesToTrim, after any VidMm answer (the caller's own where VidMm set none)",
    ],
    pending: Pending::When("paging queued ahead on the queue: PagingFenceValue not reached"),
    entry: Some("paging_queue::dxgk_make_resident_internal"),
    gaps: "over budget (`M:VIDMM_GLOBAL::MakeResident` @0x1400B93C8: STATUS_NO_MEMORY, and \
           with MustSucceed the device in error) the bytes to trim are the simulated VidMm's, \
           not compared with `VIDMM_PROCESS_ADAPTER_INFO::GetNumBytesToTrim` @0x1400E8018, \
           which with CantTrimFurther measures against the segment group's state instead of \
           the budget: here CantTrimFurther never fails over budget; the user-mode \
           residency condition (DXGDEVICE +0x77F, or a device of kind 2 on WDDM 2.0 and \
           up) is not modelled; the gdi32 bridge copies at most 256 handles (more is \
           STATUS_INVALID_PARAMETER there)",
};

pub(super) const MAP_GPU_VIRTUAL_ADDRESS: Thunk = Thunk {
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
    gaps: "M:VIDMM_GLOBAL::VidMmMapGpuVirtualAddressInternal @0x1400F5180 read for the \
           repeat (a range longer than the allocation past OffsetInPages repeats it, as \
           modelled) and DriverProtection (passed on unchecked); its other range rules are \
           the simulated VidMm's, after 24H2's rounding of the three addresses down to 4 KiB; \
           Zero mappings are not modelled",
};

pub(super) const RESERVE_GPU_VIRTUAL_ADDRESS: Thunk = Thunk {
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
};

pub(super) const UNLOCK2: Thunk = Thunk {
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
    entry: Some("lock::dxgk_unlock2"),
    gaps: "VidMm's unlock not read in 24H2 (an allocation holding no lock succeeds here, \
           as 22631's VIDMM_GLOBAL::UnlockInternal answers)",
};

pub(super) const UPDATE_GPU_VIRTUAL_ADDRESS: Thunk = Thunk {
    name: "D3DKMTUpdateGpuVirtualAddress",
    source: Some(&[
        src("DxgkUpdateGpuVirtualAddress", 0x1402F7A50),
        src("VIDMM_GLOBAL::VidMmUpdateGpuVirtualAddress", 0x1400E34AC),
    ]),
    checks: &[
        check("the structure not readable", ACCESS_VIOLATION),
        check("NumOperations 0", INVALID_PARAMETER),
        check(
            "hDevice not in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check(
            "hContext not in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("hContext of another device than hDevice", INVALID_PARAMETER),
        check("the device not active", DEVICE_REMOVED),
        check(
            "the adapter without GPU virtual addressing",
            INVALID_PARAMETER,
        ),
        check(
            "the context without a VidSch or a VidMm context",
            INVALID_PARAMETER,
        ),
        check(
            "NumOperations times 64 bytes above 4 GiB",
            INVALID_PARAMETER,
        ),
        check("no pool for the operations", NO_MEMORY),
        check("Operations not readable", ACCESS_VIOLATION),
        check("an operation's Type above MAP_PROTECT", INVALID_PARAMETER),
        check("a MAP or MAP_PROTECT with hAllocation 0", INVALID_PARAMETER),
        check("no pool for the allocation references", NO_MEMORY),
        check(
            "an hAllocation not in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check(
            "an hAllocation of another adapter than hDevice's",
            INVALID_PARAMETER,
        ),
        check(
            "hFenceObject not a device sync object in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check(
            "hFenceObject of another device than hDevice",
            INVALID_PARAMETER,
        ),
        check(
            "an operation's range wrapping, empty, not 4 KiB aligned or past the top of the \
             space",
            INVALID_PARAMETER,
        ),
        check(
            "a MAP's AllocationOffsetInBytes or AllocationSizeInBytes not 4 KiB aligned, \
             above SizeInBytes or not dividing it",
            INVALID_PARAMETER,
        ),
        check(
            "a MAP's allocation range past the allocation's end",
            INVALID_PARAMETER,
        ),
        check(
            "a COPY whose source overlaps its destination",
            INVALID_PARAMETER,
        ),
        check(
            "the targets or the COPY sources not in one range the process reserved",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[],
    pending: Pending::No,
    entry: Some("gpu_va::dxgk_update_gpu_virtual_address"),
    gaps: "24H2 queues the fence wait and the update on hContext's VidSch companion \
           context (K:DXGCONTEXT::GetVidSchCompanionContext @0x1402F8DA0, a VidSch context of \
           its own); the simulation has one VidSch-side wait per update and orders updates \
           per hContext only: whether 24H2's companion context also runs behind hContext's \
           own earlier submissions is not read, and here it does not; the companion \
           context's semaphore (a call while one is in flight fails at once) is not \
           modelled; hFenceObject must be a monitored fence (a native fence is \
           STATUS_INVALID_PARAMETER here) and the simulated runtime's fences count as \
           hDevice's; VidMm's IsRangeValid is taken as the range not wrapping, not empty, \
           page aligned and below the top of the space; MAP_PROTECT's Protection follows \
           Map's rules and an UNMAP without NoAccess (a zero range) is refused, where 24H2 \
           hands them on unchecked; a COPY's re-made mappings keep their sources' \
           DriverProtection (what 24H2's COPY hands the driver is not read); the adapter \
           and context checks 24H2 makes on VidSch and VidMm objects have no case (every \
           adapter and context here has them)",
};
