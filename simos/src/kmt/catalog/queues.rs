//! Thunk catalog rows: contexts, hardware queues, submission and doorbells.

use super::*;

pub(super) const CONNECT_DOORBELL: Thunk = Thunk {
    name: "D3DKMTConnectDoorbell",
    source: Some(&[
        src("DxgkConnectDoorbellInternal", 0x1401D846C),
        src("DXGDOORBELLAPILOCKS::DXGDOORBELLAPILOCKS", 0x140073C48),
    ]),
    checks: &[
        check("Flags non-zero", INVALID_PARAMETER),
        check(
            "hDoorbell not a doorbell in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("the doorbell's queue being destroyed", INVALID_PARAMETER),
        check("the device not active", DEVICE_REMOVED),
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
           the status page mirrors; a device VidSch put in error connects (only a stopped \
           device is refused)",
};

pub(super) const CREATE_CONTEXT_VIRTUAL: Thunk = Thunk {
    name: "D3DKMTCreateContextVirtual",
    source: Some(&[
        src("DxgkCreateContextVirtualImpl", 0x1402D17A0),
        src("DXGCONTEXT::Initialize", 0x1402CFD80),
        src("CheckNoKmdAccessPrivateData", 0x14018A51C),
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
        check(
            "NoKmdAccess with private data below 264 bytes or without its two tags",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &["hContext", "the private data, when given"],
    pending: Pending::No,
    entry: Some("context_virtual::dxgk_create_context_virtual_impl"),
    gaps: "as 24H2, a NoKmdAccess or SynchronizationOnly context reaches no DDI (create, \
           destroy, scheduling properties, suspend, resume, root page table); a NoKmdAccess \
           one's own hardware queues and kernel-mode submissions, which 24H2 runs with no \
           DDI, are not simulated (a simulation error)",
};

pub(super) const CREATE_DOORBELL: Thunk = Thunk {
    name: "D3DKMTCreateDoorbell",
    source: Some(&[
        src("DxgkCreateDoorbellInternal", 0x1401D8A50),
        src("DXGDOORBELLAPILOCKS::DXGDOORBELLAPILOCKS", 0x140073C48),
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
        check("the device not active", DEVICE_REMOVED),
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
};

pub(super) const CREATE_HW_QUEUE: Thunk = Thunk {
    name: "D3DKMTCreateHwQueue",
    source: Some(&[
        src("DxgkCreateHwQueueInternal", 0x1402BAF98),
        src("DXGCONTEXT::CreateHwQueue", 0x1402BB7A8),
        src("DXGHWQUEUE::Initialize", 0x1402BBA30),
        src("DXGHWQUEUE::InitializeForUserModeSubmission", 0x1401DA74C),
        src("CheckNoKmdAccessPrivateData", 0x14018A51C),
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
            "UserModeSubmission on a node without user-mode submission",
            INVALID_PARAMETER,
        ),
        check(
            "Flags.NoKmdAccess on a context without NoKmdAccess",
            INVALID_PARAMETER,
        ),
        check(
            "Flags.NoKmdAccess with private data below 264 bytes or without its two tags",
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
    gaps: "DisableGpuTimeout is added to the DDI's flags for a queue of a context created \
           with it, not for a device whose own flag (read by DXGHWQUEUE::Initialize and \
           InitializeForUserModeSubmission) disables GPU timeouts; a queue without NoKmdAccess on a \
           NoKmdAccess context reaches DxgkDdiCreateHwQueue with a NULL hContext, as in 24H2; \
           one with it (no DDI in 24H2) is not simulated; a user-mode queue \
           on an adapter that reported no doorbell size is STATUS_NOT_SUPPORTED \
           (the simulation's rule: DXGHWQUEUE::InitializeForUserModeSubmission has no such \
           check)",
};

pub(super) const DESTROY_CONTEXT: Thunk = Thunk {
    name: "D3DKMTDestroyContext",
    source: Some(&[
        src("DxgkDestroyContextImpl", 0x1403A0A98),
        src("DXGCONTEXT::DestroyContext", 0x1402CF0E0),
        src("DXGCONTEXT::DestroyAllHwQueues", 0x1403A0E60),
        src("DXGCONTEXT::CreateHwQueue", 0x1402BB7A8),
        src("DXGHWQUEUE::DestroyCoreState", 0x1402CDD74),
        src("DXGDOORBELL::DestroyCoreState", 0x1401D804C),
    ]),
    checks: &[check(
        "hContext not a context in the caller's handle table",
        INVALID_PARAMETER,
    )],
    written_back: &[],
    pending: Pending::No,
    entry: Some("context_virtual::dxgk_destroy_context_impl"),
    gaps: "",
};

pub(super) const DESTROY_DOORBELL: Thunk = Thunk {
    name: "D3DKMTDestroyDoorbell",
    source: Some(&[
        src("DxgkDestroyDoorbellInternal", 0x1401D9494),
        src("DXGDOORBELLAPILOCKS::DXGDOORBELLAPILOCKS", 0x140073C48),
        src("DXGDOORBELL::DestroyCoreState", 0x1401D804C),
    ]),
    checks: &[
        check(
            "hDoorbell not a doorbell in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("the doorbell's queue being destroyed", INVALID_PARAMETER),
        check("the device not active", DEVICE_REMOVED),
    ],
    written_back: &[],
    pending: Pending::No,
    entry: Some("doorbell::dxgk_destroy_doorbell_internal"),
    gaps: "",
};

pub(super) const DESTROY_HW_QUEUE: Thunk = Thunk {
    name: "D3DKMTDestroyHwQueue",
    source: Some(&[
        src("DxgkDestroyHwQueueInternal", 0x1403BC798),
        src("DXGHWQUEUE::DestroyCoreState", 0x1402CDD74),
        src("DXGDOORBELL::DestroyCoreState", 0x1401D804C),
    ]),
    checks: &[check(
        "hHwQueue not a queue in the caller's handle table",
        INVALID_PARAMETER,
    )],
    written_back: &[],
    pending: Pending::No,
    entry: Some("hw_queue::dxgk_destroy_hw_queue_internal"),
    gaps: "",
};

pub(super) const NOTIFY_WORK_SUBMISSION: Thunk = Thunk {
    name: "D3DKMTNotifyWorkSubmission",
    source: Some(&[
        src("DxgkNotifyWorkSubmissionInternal", 0x1401D98CC),
        src("DXGDOORBELLAPILOCKS::DXGDOORBELLAPILOCKS", 0x140073C48),
    ]),
    checks: &[
        check("Flags non-zero", INVALID_PARAMETER),
        check(
            "hDoorbell not a doorbell in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("the doorbell's queue being destroyed", INVALID_PARAMETER),
        check("the device not active", DEVICE_REMOVED),
        check(
            "the doorbell's status not CONNECTED_NOTIFY_KMD",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[],
    pending: Pending::No,
    entry: Some("doorbell::dxgk_notify_work_submission_internal"),
    gaps: "a NoKmdAccess context (success with no DDI) is not modelled",
};

pub(super) const SUBMIT_COMMAND: Thunk = Thunk {
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
    entry: Some("submit_command::dxgk_submit_command_internal"),
    gaps: "any primary is STATUS_INVALID_PARAMETER on this render-only adapter; more than one \
           broadcast context, history buffers or a flag past the checks is \
           STATUS_NOT_SUPPORTED (the simulated scheduler takes one context's buffer)",
};

pub(super) const SUBMIT_COMMAND_TO_HW_QUEUE: Thunk = Thunk {
    name: "D3DKMTSubmitCommandToHwQueue",
    source: Some(&[
        src("DxgkSubmitCommandToHwQueueInternal", 0x1402C5A10),
        src("DXGHWQUEUE::SubmitCommand", 0x1402C6610),
        src("VidSchSubmitCommandToHwQueue", 0x140048F00),
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
        check("the device in error", GPU_EXCEPTION_ON_DEVICE),
    ],
    written_back: &[],
    pending: Pending::No,
    entry: Some("hw_queue::dxgk_submit_command_to_hw_queue_internal"),
    gaps: "VidMm's reference of the primaries is not read: any primary is \
           STATUS_INVALID_PARAMETER on this render-only adapter",
};
