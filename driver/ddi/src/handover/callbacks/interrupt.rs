//! `DxgkCbNotifyInterrupt`: its entry, and one row set per interrupt type the KMD reports.

use super::{field, row, scheduler_error, Callback, Irql, Otherwise, Use};
use crate::interrupt::{
    DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaCompleted, DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaFaulted,
    DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPageFaulted, DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPreempted,
    DXGKARGCB_NOTIFY_INTERRUPT_DATA_EngineStateChange,
    DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted,
    DXGKARGCB_NOTIFY_INTERRUPT_DATA_NativeFenceSignaled,
    DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine, DXGKARGCB_NOTIFY_INTERRUPT_DATA,
};

const NAME: &str = "DxgkCbNotifyInterrupt";

/// The worker, which every type goes through.
const WORKER: &str = "M:VidSchDdiNotifyInterruptWorker @0x140006B60";

/// The per-type rows run inside the entry's call.
const AS_ENTRY: Irql = Irql {
    expects: "the entry's",
    otherwise: Otherwise::Unchecked,
};

/// How the worker finds the node of a report.
const NODE: &str = "NodeOrdinal plus the first node of physical adapter EngineOrdinal (a byte \
    table); an index at or past the node count reads node 0's entry (not refused). A node \
    the ISR path excludes, or in state 1, drops the report";

/// A node in state 2 reported from the ISR.
const NODE_STATE: &str = "the node is in state 2 (being reset) and the report comes from the ISR";

/// Dropped unless the scheduler runs the adapter's packets (its flag bit 0).
const PACKET_MODE: &str = "dropped unless the scheduler's flag bit 0 is set";

/// The callbacks of this concept.
pub(super) const INTERRUPT: &[Callback] = &[
    Callback {
        name: NAME,
        case: None,
        by: "K:DxgNotifyInterruptCB @0x14002D6A0, M:VidSchDdiNotifyInterrupt @0x1400067D0",
        irql: Irql {
            expects: "at or above DISPATCH_LEVEL (asserted; Microsoft's page: interrupt level, \
                from the ISR or a synchronised routine)",
            otherwise: Otherwise::Logged,
        },
        locks: "none taken: the caller holds the interrupt lock",
        rows: &[
            row!(
                "hAdapter",
                "followed to the port extension (+64) without a NULL check, and to the adapter"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA.InterruptType),
                "Miracast chunks are dxgkrnl's; every other type goes to VidSch only while the \
                 adapter's scheduler callbacks are on (state bit 2), else it is dropped; the \
                 worker switches on it, and a type it has no case for is dropped",
                scheduler_error(7),
                "a vertical-sync type (3, 7, 10, 18) on an adapter without display"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA.Flags),
                "read for the vertical-sync types only"
            ),
        ],
        returns: "nothing",
        kmd: Use::Calls,
    },
    Callback {
        name: NAME,
        case: Some("DXGK_INTERRUPT_DMA_COMPLETED"),
        by: "M:VidSchDdiNotifyInterruptWorker @0x140006B60 (case 1), \
            M:VidSchiProcessIsrCompletedPacket @0x140005250",
        irql: AS_ENTRY,
        locks: "",
        rows: &[
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaCompleted.NodeOrdinal),
                NODE,
                scheduler_error(0x10),
                NODE_STATE
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaCompleted.EngineOrdinal),
                "the physical adapter, with NodeOrdinal"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaCompleted.SubmissionFenceId),
                "the last submitted fence, the node's pending one, or one in the window \
                 after the last completed up to the last submitted: the packets up to it \
                 complete. Outside: tolerated (flags on the node) only when the adapter marks \
                 its fence reports as unreliable",
                scheduler_error(1),
                "the fence id is outside the window"
            ),
            row!("(type)", PACKET_MODE),
        ],
        returns: "nothing",
        kmd: Use::Calls,
    },
    Callback {
        name: NAME,
        case: Some("DXGK_INTERRUPT_DMA_PREEMPTED"),
        by: "M:VidSchDdiNotifyInterruptWorker @0x140006B60 (case 2), \
            M:VidSchiVerifyDriverReportedFenceId @0x140005B3C",
        irql: AS_ENTRY,
        locks: "",
        rows: &[
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPreempted.NodeOrdinal),
                NODE,
                scheduler_error(0x10),
                NODE_STATE
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPreempted.EngineOrdinal),
                "the physical adapter, with NodeOrdinal"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPreempted.PreemptionFenceId),
                "verified as a fence the scheduler issued; a failed check drops the report"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPreempted.LastCompletedFenceId),
                "the same window as DMA_COMPLETED's fence; then completed and preempted \
                 packets are processed in turn",
                scheduler_error(1),
                "outside the window, unless the adapter's fence reports are unreliable"
            ),
            row!("(type)", PACKET_MODE),
        ],
        returns: "nothing",
        kmd: Use::Calls,
    },
    Callback {
        name: NAME,
        case: Some("DXGK_INTERRUPT_DMA_FAULTED"),
        by: WORKER,
        irql: AS_ENTRY,
        locks: "",
        rows: &[
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaFaulted.FaultedFenceId),
                "parameter 4 of the bug check; nothing else reads the report",
                scheduler_error(0xD),
                "always: the worker's case for type 4 is the bug check"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaFaulted.NodeOrdinal),
                "parameter 2 of the bug check"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaFaulted.EngineOrdinal),
                "parameter 3 of the bug check"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaFaulted.Status),
                "not read"
            ),
        ],
        returns: "does not return",
        kmd: Use::Calls,
    },
    Callback {
        name: NAME,
        case: Some("DXGK_INTERRUPT_DMA_PAGE_FAULTED"),
        by: "M:VidSchDdiNotifyInterruptWorker @0x140006B60 (case 9), \
            M:VidSchiProcessIsrFaultedPacket @0x14004F9A4, \
            M:VidSchiProcessHwQueuePageFaultedDpc @0x1400493D0",
        irql: AS_ENTRY,
        locks: "",
        rows: &[
            row!(
                "(type)",
                "dropped unless the scheduler's flag bit 2 (GPU virtual addressing) is set"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPageFaulted.NodeOrdinal),
                "with EngineOrdinal, the node (past the count: node 0's entry); a node the ISR \
                 path excludes: only logged; a node in state 1: only logged",
                scheduler_error(0x10),
                NODE_STATE
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPageFaulted.PageFaultFlags),
                "validated; FENCE_INVALID (0x2) set: the report is queued for the hardware-queue \
                 page-fault DPC (as HWQUEUE_PAGE_FAULTED's); clear: the fence path below. \
                 ADAPTER_RESET_REQUIRED (0x4) or ENGINE_RESET_REQUIRED (0x8) choose the reset \
                 the fault asks for",
                scheduler_error(0xD),
                "FENCE_INVALID clear on a hardware-queue node (its flag bit 1)"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPageFaulted.FaultedFenceId),
                "verified as a fence the scheduler issued (a failed check drops the report); \
                 the packets before it complete and the faulting one is completed with its \
                 device in error"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPageFaulted.FaultedVirtualAddress),
                "logged with the fault (LogPageFaultInformation)"
            ),
        ],
        returns: "nothing",
        kmd: Use::Calls,
    },
    Callback {
        name: NAME,
        case: Some("DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED"),
        by: "M:VidSchDdiNotifyInterruptWorker @0x140006B60 (case 11), \
            M:VidSchiProcessIsrMonitoredFenceSignaled @0x140005C80",
        irql: AS_ENTRY,
        locks: "",
        rows: &[
            row!(
                "MonitoredFenceSignaled.NodeOrdinal",
                NODE,
                scheduler_error(0x10),
                NODE_STATE
            ),
            row!(
                "MonitoredFenceSignaled.EngineOrdinal",
                "the physical adapter, with NodeOrdinal"
            ),
            row!("(type)", PACKET_MODE),
        ],
        returns: "nothing",
        kmd: Use::Calls,
    },
    Callback {
        name: NAME,
        case: Some("DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED"),
        by: "M:VidSchiProcessIsrHwQueuePageFaulted @0x1400525E4, \
            M:VidSchiProcessHwQueuePageFaultedDpc @0x1400493D0",
        irql: AS_ENTRY,
        locks: "the DPC side takes the scheduler's spin lock",
        rows: &[
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted.NodeOrdinal),
                "with EngineOrdinal, the node (past the count: node 0's entry); an \
                 excluded node or one in state 1 drops the report; else it is queued for the \
                 DPC (no free entry: logged, dropped)",
                scheduler_error(0xD),
                "the node is not a hardware-queue node (its flag bit 1); in state 2: 0x119 \
                 subcode 0x10"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted.PageFaultFlags),
                "at the DPC: FENCE_INVALID (0x2) clear: FaultedHwQueue is followed; set with \
                 HW_CONTEXT_VALID (0x40): FaultedHwQueue+8 is followed instead; set with \
                 PROCESS_HANDLE_VALID (0x80): read as a process",
                scheduler_error(0xD),
                "FENCE_INVALID set without ADAPTER_RESET_REQUIRED or ENGINE_RESET_REQUIRED"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted.FaultedHwQueue),
                "with FENCE_INVALID clear: Dxgkrnl's own DXGHWQUEUE, followed (+40, then +40) \
                 to the queue's device, which is put in error (reason 9) with the fault's \
                 details; a handle of the driver's own is a wild pointer"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted.FaultedVirtualAddress),
                "recorded on the device and in the debugger message and event"
            ),
            row!("(type)", PACKET_MODE),
        ],
        returns: "nothing",
        kmd: Use::Calls,
    },
    Callback {
        name: NAME,
        case: Some("DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT"),
        by: "M:VidSchDdiNotifyInterruptWorker @0x140006B60 (case 15), \
            M:VidSchiProcessIsrSchedulingLogFull @0x140041E8C",
        irql: AS_ENTRY,
        locks: "",
        rows: &[
            row!(
                "SchedulingLogInterrupt.NodeOrdinal",
                "with EngineOrdinal, the node (past the count: node 0's entry); no state or \
                 exclusion check"
            ),
            row!("(type)", PACKET_MODE),
        ],
        returns: "nothing",
        kmd: Use::Calls,
    },
    Callback {
        name: NAME,
        case: Some("DXGK_INTERRUPT_GPU_ENGINE_TIMEOUT"),
        by: "M:VidSchDdiNotifyInterruptWorker @0x140006B60 (case 16), \
            M:VidSchiProcessIsrGpuEngineTimeout @0x14004ABCC",
        irql: AS_ENTRY,
        locks: "",
        rows: &[
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine.NodeOrdinal),
                "with EngineOrdinal, the node (past the count: node 0's entry); no state or \
                 exclusion check; queued for the DPC, which asks for the engine's reset (no \
                 free entry: logged, dropped)"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine.EngineOrdinal),
                "the physical adapter, with NodeOrdinal"
            ),
            row!("(type)", PACKET_MODE),
        ],
        returns: "nothing",
        kmd: Use::Calls,
    },
    Callback {
        name: NAME,
        case: Some("DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED"),
        by: "M:VidSchDdiNotifyInterruptWorker @0x140006B60 (case 19), \
            M:VidSchiProcessIsrNativeFenceSignaled @0x140052784, \
            M:VidSchiProcessNativeFenceSignaledDpc @0x140044BE0",
        irql: AS_ENTRY,
        locks: "the DPC side takes the scheduler's spin lock",
        rows: &[
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_NativeFenceSignaled.NodeOrdinal),
                "with EngineOrdinal, the node; no packet-mode check; excluded or state 1: \
                 dropped; else queued for the DPC (no free entry: logged, dropped)",
                scheduler_error(0x10),
                NODE_STATE
            ),
            row!(
                field!(
                    DXGKARGCB_NOTIFY_INTERRUPT_DATA_NativeFenceSignaled.SignaledNativeFenceCount
                ),
                "kept up to 8; more than 8 is kept as 0 (every waiter of the node rechecked)"
            ),
            row!(
                field!(
                    DXGKARGCB_NOTIFY_INTERRUPT_DATA_NativeFenceSignaled.pSignaledNativeFenceArray
                ),
                "the first Count handles copied at the ISR; at the DPC each must be a native \
                 fence's sync object (type 6)",
                scheduler_error(0x14),
                "a NULL handle or one of another kind"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_NativeFenceSignaled.hHWQueue),
                "kept at the ISR; at the DPC, in the optimised mode only, followed as \
                 Dxgkrnl's own queue object (+32, +40) to the queue's signal log, read from \
                 the last position seen (NULL: every waiter rechecked); the array is then \
                 not read",
                scheduler_error(0x14),
                "a log entry whose fence is not a native fence"
            ),
        ],
        returns: "nothing",
        kmd: Use::Calls,
    },
    Callback {
        name: NAME,
        case: Some("DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE"),
        by: WORKER,
        irql: AS_ENTRY,
        locks: "",
        rows: &[
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_EngineStateChange.NodeOrdinal),
                "not read: the worker has no case for type 20, the report is dropped"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_EngineStateChange.EngineOrdinal),
                "not read"
            ),
            row!(
                field!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_EngineStateChange.NewState),
                "not read"
            ),
        ],
        returns: "nothing",
        kmd: Use::Calls,
    },
];
