//! Thunk catalog rows: native fences and sync objects: creation, sharing, CPU signal and wait.

use super::*;

pub(super) const CREATE_NATIVE_FENCE: Thunk = Thunk {
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
};

pub(super) const CREATE_SYNCHRONIZATION_OBJECT2: Thunk = Thunk {
    name: "D3DKMTCreateSynchronizationObject2",
    source: Some(&[
        src("DxgkCreateSynchronizationObject", 0x1403708C0),
        src("DxgkCreateSynchronizationObjectImpl", 0x1403708E8),
        src("CreateSynchronizationObjectInternal", 0x1402F9BAC),
        src("DXGGLOBAL::CreateSyncObject", 0x1402FA1CC),
    ]),
    checks: &[
        check("the structure not readable", ACCESS_VIOLATION),
        check("an Info.Flags bit of 0x7FFFF800", INVALID_PARAMETER),
        check("NtSecuritySharing without Shared", INVALID_PARAMETER),
        check(
            "a monitored or periodic monitored fence Shared without NtSecuritySharing",
            INVALID_PARAMETER,
        ),
        check(
            "a monitored or periodic monitored fence NoSignal with NoWait",
            INVALID_PARAMETER,
        ),
        check(
            "Info.Flags bit 7 on a type other than the two fences",
            INVALID_PARAMETER,
        ),
        check(
            "hDevice not in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check(
            "a fence: the device not active (other types: the adapter not active)",
            DEVICE_REMOVED,
        ),
        check("a fence: the adapter not on dxgmms2", INVALID_PARAMETER),
        check(
            "SignalByKmd on a type other than D3DDDI_CPU_NOTIFICATION, or with Shared or \
             CrossAdapter",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[
        "hSyncObject",
        "Info.SharedHandle, when Shared without NtSecuritySharing (a fence cannot be) or for \
         a WSL or virtual-machine process",
        "a monitored fence: the 0x20 bytes of Info.MonitoredFence (the CPU and GPU addresses \
         new, InitialFenceValue and EngineAffinity as captured); a periodic one: 0x28 bytes",
    ],
    pending: Pending::No,
    entry: Some("sync_object::dxgk_create_synchronization_object_impl"),
    gaps: "the simulation makes only D3DDDI_MONITORED_FENCE objects: the other types (mutex, \
           semaphore, fence, CPU notification, periodic monitored fence) and a monitored fence \
           with NoGPUAccess or CrossAdapter pass 24H2's checks and are then refused with \
           STATUS_NOT_SUPPORTED where 24H2 makes them; a monitored fence made Shared with \
           NtSecuritySharing is made but D3DKMTShareObjects does not share it (see that row); \
           EngineAffinity is not clamped to the adapter's nodes (24H2 clamps its own copy \
           only, so nothing written back differs)",
};

pub(super) const DESTROY_SYNCHRONIZATION_OBJECT: Thunk = Thunk {
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
    entry: Some("destroy_sync::dxgk_destroy_synchronization_object_impl"),
    gaps: "the device sync object's may-destroy flag (tested at +92 bit 1) is clear on the \
           fences the OS makes for a queue (DXGGLOBAL::CreateSyncObject @0x1402FA1CC's seventh \
           argument, 0 from DXGHWQUEUE::Initialize @0x1402BBA30 and \
           DXGPAGINGQUEUE::Initialize @0x140396FF0): the simulation refuses a hardware queue's progress fence and a paging \
           queue's fence (SimKmt::refuse_os_made_fence) and no other; the simulation makes no \
           global sync objects, so the second lookup never finds one",
};

pub(super) const OPEN_NATIVE_FENCE_FROM_NT_HANDLE: Thunk = Thunk {
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
         (NoSignal and NoWait replaced by what the NT handle's access withholds); \
         PrivateDriverData the caller's own (DXGSYNCOBJECT::Open gets no buffer for it; the \
         pages' reading returns the KMD's DxgkDdiOpenNativeFence data)",
    ],
    pending: Pending::No,
    entry: Some("native_fence::nt_dxgk_open_native_fence_from_nt_handle_internal"),
    gaps: "the simulated object manager holds only native fences, and keeps no NoGPUAccess \
           of the creation (an open with it is refused)",
};

pub(super) const SHARE_OBJECTS: Thunk = Thunk {
    name: "D3DKMTShareObjects",
    source: Some(&[
        src("DxgkShareObjectsInternal", 0x14032A300),
        src("CreateSharedSyncNtObject", 0x1403289FC),
        src("ObpCaptureObjectCreateInformation", 0x14089CCA0),
    ]),
    checks: &[
        check("cObjects 0 or above 3", INVALID_PARAMETER),
        check("hObjects not readable", ACCESS_VIOLATION),
        check("pObjectAttributes NULL", INVALID_PARAMETER),
        check("hObjects[0] 0", INVALID_PARAMETER),
        check(
            "hObjects[0] neither a resource, a sync object nor a protected session of the caller's",
            INVALID_PARAMETER,
        ),
        check(
            "a sync object with cObjects other than 1",
            INVALID_PARAMETER,
        ),
        check(
            "a sync object made without NtSecuritySharing",
            INVALID_PARAMETER,
        ),
        check(
            "pObjectAttributes not 8-byte aligned",
            DATATYPE_MISALIGNMENT,
        ),
        check("pObjectAttributes not readable", ACCESS_VIOLATION),
        check("Length not 48", INVALID_PARAMETER),
        check(
            "an Attributes bit of 0xFFFEE00D",
            INVALID_PARAMETER,
        ),
        check("RootDirectory without ObjectName", OBJECT_NAME_INVALID),
        check(
            "phSharedNtHandle not writable (the new handle is closed again)",
            ACCESS_VIOLATION,
        ),
    ],
    written_back: &["*phSharedNtHandle"],
    pending: Pending::No,
    entry: Some("share::dxgk_share_objects_internal"),
    gaps: "the simulated object manager holds only native fences: a monitored fence made with \
           NtSecuritySharing is refused with STATUS_NOT_SUPPORTED where 24H2 shares it; \
           attributes with a name, a security descriptor or quality of service are refused with STATUS_NOT_SUPPORTED where ObCreateObject captures them; \
           dwDesiredAccess is honoured for the handle's specific rights, READ_CONTROL and \
           GENERIC_ALL/MAXIMUM_ALLOWED (all), but GENERIC_READ, GENERIC_WRITE and \
           GENERIC_EXECUTE grant nothing: the type's GENERIC_MAPPING is data the pseudocode \
           does not show",
};

pub(super) const SIGNAL_SYNCHRONIZATION_OBJECT_FROM_CPU: Thunk = Thunk {
    name: "D3DKMTSignalSynchronizationObjectFromCpu",
    source: Some(&[
        src("DxgkSignalSynchronizationObjectFromCpu", 0x1402B97E0),
        src("SignalSynchronizationObjectFromCpu", 0x1402BA4F8),
        src("VidSchiSignalSyncObjectsFromCpu", 0x14000EF50),
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
        check(
            "without Flags.AllowFenceRewind, a monitored fence's value below the last one \
             signalled to it (M:VidSchiSignalSyncObjectsFromCpu)",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[],
    pending: Pending::No,
    entry: Some("sync_from_cpu::dxgk_signal_synchronization_object_from_cpu"),
    gaps: "Flags bits 0 to 2 are accepted; of them only AllowFenceRewind's absence is acted \
           on (with it, 24H2 writes a lower value, where the simulation's fence never goes \
           back); VidSch's same refusal for a native fence (against its last CPU-signalled \
           value) is not modelled; the simulation's pool holds at most MAX_OBJECTS handles \
           (STATUS_NO_MEMORY above), 24H2's what the system has",
};

pub(super) const SUBMIT_SIGNAL_SYNC_OBJECTS_TO_HW_QUEUE: Thunk = Thunk {
    name: "D3DKMTSubmitSignalSyncObjectsToHwQueue",
    source: Some(&[
        src("DxgkSubmitSignalSyncObjectsToHwQueueInternal", 0x14029D7B8),
        src("SubmitSignalSyncObjectsToHwQueue", 0x1403260EC),
    ]),
    checks: &[
        check("the structure not readable", ACCESS_VIOLATION),
        check("ObjectCount 0", INVALID_PARAMETER),
        check("no pool for ObjectCount handles", NO_MEMORY),
        check("ObjectHandleArray not readable", ACCESS_VIOLATION),
        check("BroadcastHwQueueCount 0", INVALID_PARAMETER),
        check("no pool for BroadcastHwQueueCount handles", NO_MEMORY),
        check("BroadcastHwQueueArray not readable", ACCESS_VIOLATION),
        check("no pool for the queues", NO_MEMORY),
        check(
            "BroadcastHwQueueArray[0] not a hardware queue in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("the device not active", DEVICE_REMOVED),
        check("a Flags bit from 3 to 30", INVALID_PARAMETER),
        check("Flags bit 31 (the OS's internal flag)", INVALID_PARAMETER),
        check(
            "a BroadcastHwQueueArray entry not a hardware queue of the caller's, or of another \
             device than the first's",
            INVALID_PARAMETER,
        ),
        check("no pool for the objects", NO_MEMORY),
        check(
            "a handle neither a device nor a global sync object in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("an object created or opened NoSignal", ACCESS_DENIED),
        check(
            "an object of another device than the first queue's",
            INVALID_PARAMETER,
        ),
        check("no pool for the fence values", NO_MEMORY),
        check("FenceValueArray not readable", ACCESS_VIOLATION),
        check("the same object twice", INVALID_PARAMETER),
        check(
            "an object of another adapter, or whose adapter state is destroyed",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[],
    pending: Pending::No,
    entry: Some("hw_queue_sync::dxgk_submit_signal_sync_objects_to_hw_queue_internal"),
    gaps: "the simulation's pool holds at most MAX_OBJECTS handles or queues (STATUS_NO_MEMORY \
           above), 24H2's what the system has; no global sync objects; VidSch's refusal of a \
           value below the object's last queued one (M:VidSchSubmitSignalToHwQueue \
           @0x140031EF0, a native fence's included, STATUS_INVALID_PARAMETER without \
           AllowFenceRewind) is not modelled",
};

pub(super) const SUBMIT_WAIT_FOR_SYNC_OBJECTS_TO_HW_QUEUE: Thunk = Thunk {
    name: "D3DKMTSubmitWaitForSyncObjectsToHwQueue",
    source: Some(&[
        src("DxgkSubmitWaitForSyncObjectsToHwQueueInternal", 0x1402AECE8),
        src("SubmitWaitForSyncObjectsFromGpu", 0x1402AF2F0),
    ]),
    checks: &[
        check("the structure not readable", ACCESS_VIOLATION),
        check("ObjectCount 0", INVALID_PARAMETER),
        check("no pool for ObjectCount handles", NO_MEMORY),
        check("ObjectHandleArray not readable", ACCESS_VIOLATION),
        check(
            "hHwQueue not a hardware queue in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("the device not active", DEVICE_REMOVED),
        check("no pool for ObjectCount fence values", NO_MEMORY),
        check("FenceValueArray not readable", ACCESS_VIOLATION),
        check("no pool for the objects", NO_MEMORY),
        check(
            "a device sync object of another device than the queue's",
            INVALID_PARAMETER,
        ),
        check(
            "a device sync object created or opened NoWait",
            ACCESS_DENIED,
        ),
        check(
            "a handle neither a device nor a global sync object in the caller's handle table",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[],
    pending: Pending::No,
    entry: Some("hw_queue_sync::dxgk_submit_wait_for_sync_objects_to_hw_queue_internal"),
    gaps: "the simulation's pool holds at most MAX_OBJECTS handles (STATUS_NO_MEMORY above), \
           24H2's what the system has; no global sync objects",
};

pub(super) const WAIT_FOR_SYNCHRONIZATION_OBJECT_FROM_CPU: Thunk = Thunk {
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
           with STATUS_DEVICE_REMOVED); the simulation gives up with STATUS_IO_TIMEOUT once \
           every fence has stood still for its wait limit (a hang); the simulation's pool holds at most MAX_OBJECTS handles \
           (STATUS_NO_MEMORY above)",
};
