//! The audit of hardware queues, doorbells and submission to a queue.

use super::Ddi;
use crate::submission::{
    DXGKARG_CONNECTDOORBELL, DXGKARG_CREATEDOORBELL, DXGKARG_CREATEHWQUEUE,
    DXGKARG_DESTROYDOORBELL, DXGKARG_DISCONNECTDOORBELL, DXGKARG_NOTIFYWORKSUBMISSION,
    DXGKARG_SUBMITCOMMANDTOHWQUEUE,
};

const HWQUEUE_BY: &str = "K:DXGHWQUEUE::Initialize @0x1402BBA30";

/// `DxgkDdiCreateHwQueue` for a queue the KMD submits to (`DxgkDdiSubmitCommandToHwQueue`):
/// `HWQUEUE_BY` builds the block on its stack, field by field, after creating the queue's
/// progress fence.
pub const CREATE_HWQUEUE: Ddi<DXGKARG_CREATEHWQUEUE> = Ddi {
    name: "DxgkDdiCreateHwQueue",
    block: "DXGKARG_CREATEHWQUEUE",
    rows: &[
        filled_row!(
            DXGKARG_CREATEHWQUEUE.hHwQueue,
            true,
            HWQUEUE_BY,
            "Dxgkrnl's queue object; the driver writes its own handle over it"
        ),
        filled_row!(
            DXGKARG_CREATEHWQUEUE.Flags,
            true,
            HWQUEUE_BY,
            "the caller's D3DKMT_CREATEHWQUEUE flags, bit 0 added when the context or the \
             adapter disables GPU timeouts"
        ),
        filled_row!(
            DXGKARG_CREATEHWQUEUE.PrivateDriverDataSize,
            true,
            HWQUEUE_BY,
            "the caller's size"
        ),
        filled_row!(
            DXGKARG_CREATEHWQUEUE.pPrivateDriverData,
            true,
            HWQUEUE_BY,
            "Dxgkrnl's kernel copy of the caller's data"
        ),
        filled_row!(
            DXGKARG_CREATEHWQUEUE.Anonymous,
            true,
            HWQUEUE_BY,
            "hHwQueueProgressFence: the monitored fence it created for the queue"
        ),
        filled_row!(
            DXGKARG_CREATEHWQUEUE.HwQueueProgressFenceCPUVirtualAddress,
            true,
            HWQUEUE_BY,
            "the progress fence's current-value storage, kernel mapping"
        ),
        filled_row!(
            DXGKARG_CREATEHWQUEUE.HwQueueProgressFenceGPUVirtualAddress,
            true,
            HWQUEUE_BY,
            "the progress fence's GPU VA"
        ),
    ],
};

const UMS_HWQUEUE_BY: &str = "K:DXGHWQUEUE::InitializeForUserModeSubmission @0x1401DA74C";

/// `DxgkDdiCreateHwQueue` for a user-mode-submission queue (`UserModeSubmission` set):
/// `HWQUEUE_BY` hands it to `UMS_HWQUEUE_BY`, which creates no progress fence and zeroes the
/// three progress-fence fields; the others are as for [`CREATE_HWQUEUE`].
pub const CREATE_HWQUEUE_USER_MODE: Ddi<DXGKARG_CREATEHWQUEUE> = Ddi {
    name: "DxgkDdiCreateHwQueue(UserModeSubmission)",
    block: "DXGKARG_CREATEHWQUEUE",
    rows: &[
        zero_row!(
            DXGKARG_CREATEHWQUEUE.Anonymous,
            true,
            UMS_HWQUEUE_BY,
            "zeroed with the next two; a user-mode queue has no progress fence"
        ),
        zero_row!(
            DXGKARG_CREATEHWQUEUE.HwQueueProgressFenceCPUVirtualAddress,
            true,
            UMS_HWQUEUE_BY,
            "zeroed; no progress fence"
        ),
        zero_row!(
            DXGKARG_CREATEHWQUEUE.HwQueueProgressFenceGPUVirtualAddress,
            true,
            UMS_HWQUEUE_BY,
            "zeroed; no progress fence"
        ),
    ],
};

const DOORBELL_BY: &str = "K:DXGDOORBELL::Initialize @0x1401D9E74";

/// `DxgkDdiCreateDoorbell`: `DOORBELL_BY` builds the block on its stack, every field written
/// (the padding after the two 32-bit fields zeroed), after it checked both allocations
/// belong to the queue's device and set up the doorbell's status slot and CPU page; it skips
/// the call on an adapter whose driver reports no doorbells to create.
pub const CREATE_DOORBELL: Ddi<DXGKARG_CREATEDOORBELL> = Ddi {
    name: "DxgkDdiCreateDoorbell",
    block: "DXGKARG_CREATEDOORBELL",
    rows: &[
        filled_row!(
            DXGKARG_CREATEDOORBELL.hHwQueue,
            true,
            DOORBELL_BY,
            "the driver's handle of the queue (from DxgkDdiCreateHwQueue)"
        ),
        filled_row!(
            DXGKARG_CREATEDOORBELL.hDoorbell,
            true,
            DOORBELL_BY,
            "Dxgkrnl's doorbell object; the driver writes its own handle over it"
        ),
        filled_row!(
            DXGKARG_CREATEDOORBELL.PrivateDriverDataSize,
            true,
            DOORBELL_BY,
            "the caller's size"
        ),
        filled_row!(
            DXGKARG_CREATEDOORBELL.PrivateDriverData,
            true,
            DOORBELL_BY,
            "the caller's data"
        ),
        filled_row!(
            DXGKARG_CREATEDOORBELL.hRingBuffer,
            true,
            DOORBELL_BY,
            "the creating device's open of the ring's allocation (its hDeviceSpecificAllocation, \
             K:DXGDEVICE::OpenAllocations @0x140324850)"
        ),
        filled_row!(
            DXGKARG_CREATEDOORBELL.hRingBufferControl,
            true,
            DOORBELL_BY,
            "the same for the ring control's allocation"
        ),
        filled_row!(
            DXGKARG_CREATEDOORBELL.Flags,
            true,
            DOORBELL_BY,
            "the caller's D3DKMT_CREATE_DOORBELL flags word, unchanged: RequireSecondaryCpuVA \
             in bit 0 (refused before on an adapter without secondary doorbells), \
             ResizeRingBufferOperation in bit 1, where DXGKARG_CREATEDOORBELL_FLAGS names bit 0 \
             ResizeRingBufferOperation (the pages' reading translates)"
        ),
    ],
};

const SUBMIT_BY: &str = "M:SubmitRenderToHwQueue @0x14000E8B0";

/// `DxgkDdiSubmitCommandToHwQueue` of a kernel-mode queue's buffer
/// (`D3DKMTSubmitCommandToHwQueue`): `K:DXGHWQUEUE::SubmitCommand` @0x1402C6610 queues the
/// caller's buffer to VidSch (refusing private data larger than the context's
/// `DmaBufferPrivateDataSize`, and copying it to the pool), and VidSch's release of the
/// packet (`M:VidSchiReleasePacketToGpu` @0x140011740) hands it to `SUBMIT_BY`, which builds
/// the block on its stack with the padding after `Flags` zeroed. VidMm's paging buffers go
/// through `M:SubmitPagingToHwQueue` @0x140045C20 instead (`Flags.Paging`), to the paging
/// process's queue.
pub const SUBMIT_COMMAND_TO_HWQUEUE: Ddi<DXGKARG_SUBMITCOMMANDTOHWQUEUE> = Ddi {
    name: "DxgkDdiSubmitCommandToHwQueue",
    block: "DXGKARG_SUBMITCOMMANDTOHWQUEUE",
    rows: &[
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.hHwQueue,
            true,
            SUBMIT_BY,
            "the driver's handle of the queue (from DxgkDdiCreateHwQueue)"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.HwQueueProgressFenceId,
            true,
            SUBMIT_BY,
            "the packet's progress fence value: the caller's HwQueueProgressFenceId"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.DmaBufferVirtualAddress,
            true,
            SUBMIT_BY,
            "the caller's CommandBuffer"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.DmaBufferSize,
            true,
            SUBMIT_BY,
            "the caller's CommandLength"
        ),
        zero_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.DmaBufferPrivateDataSize,
            true,
            SUBMIT_BY,
            "the size of Dxgkrnl's copy of the caller's private data, which \
             K:DXGHWQUEUE::SubmitCommand @0x1402C6610 refuses above the context's \
             DmaBufferPrivateDataSize; rvgpu's KMD asks for none"
        ),
        zero_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.pDmaBufferPrivateData,
            true,
            SUBMIT_BY,
            "Dxgkrnl's copy of the caller's private data, null when there is none (as above)"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.Flags,
            true,
            SUBMIT_BY,
            "Present and RedirectedPresent from the packet's present flags, no other bit (a \
             D3DKMTSubmitCommandToHwQueue buffer is no present: zero)"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.HwQueueProgressFenceGpuVa,
            false,
            SUBMIT_BY,
            "the queue's progress fence's GPU VA, from the packet"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.HwQueueProgressFenceCpuVa,
            false,
            SUBMIT_BY,
            "the queue's progress fence's current-value storage, kernel mapping (the packet's; \
             VidSch writes the value there itself when it completes a packet without the call)"
        ),
    ],
};

const CONNECT_BY: &str = "K:DXGDOORBELL::Connect @0x1401D7B90";

/// `DxgkDdiConnectDoorbell` (`K:DxgkConnectDoorbellInternal` @0x1401D846C): `CONNECT_BY`
/// zeroes the block on its stack and names the doorbell; the two CPU VAs and the status are
/// the driver's answers. It calls no DDI on an adapter whose driver reports no doorbells to
/// connect.
pub const CONNECT_DOORBELL: Ddi<DXGKARG_CONNECTDOORBELL> = Ddi {
    name: "DxgkDdiConnectDoorbell",
    block: "DXGKARG_CONNECTDOORBELL",
    rows: &[
        filled_row!(
            DXGKARG_CONNECTDOORBELL.hDoorbell,
            true,
            CONNECT_BY,
            "the driver's handle of the doorbell"
        ),
        filled_row!(
            DXGKARG_CONNECTDOORBELL.Flags,
            true,
            CONNECT_BY,
            "bit 0 when the doorbell has a secondary CPU VA, no other bit"
        ),
        zero_row!(
            DXGKARG_CONNECTDOORBELL.KernelCpuVirtualAddress,
            false,
            CONNECT_BY,
            "the driver's answer, zeroed"
        ),
        zero_row!(
            DXGKARG_CONNECTDOORBELL.SecondaryKernelCpuVirtualAddress,
            false,
            CONNECT_BY,
            "the driver's answer, zeroed"
        ),
        zero_row!(
            DXGKARG_CONNECTDOORBELL.Status,
            false,
            CONNECT_BY,
            "the driver's answer, zeroed; CONNECTED_NOTIFY_KMD (1) alone reaches the status page \
             as itself, any other answer as CONNECTED (0)"
        ),
    ],
};

const DISCONNECT_BY: &str = "K:DXGDOORBELL::Disconnect @0x1401D82E8";

/// `DxgkDdiDisconnectDoorbell` of an OS-initiated disconnect (`K:DxgkDisconnectDoorbellCB`
/// @0x1401DB180, and `K:DXGDOORBELL::DestroyCoreState` @0x1401D804C before a destroy):
/// `DISCONNECT_BY` passes a two-word block naming the doorbell, then points the CPU VAs back
/// at the dummy page and writes the status.
pub const DISCONNECT_DOORBELL: Ddi<DXGKARG_DISCONNECTDOORBELL> = Ddi {
    name: "DxgkDdiDisconnectDoorbell",
    block: "DXGKARG_DISCONNECTDOORBELL",
    rows: &[
        filled_row!(
            DXGKARG_DISCONNECTDOORBELL.hDoorbell,
            true,
            DISCONNECT_BY,
            "the driver's handle of the doorbell"
        ),
        zero_row!(
            DXGKARG_DISCONNECTDOORBELL.Flags,
            false,
            DISCONNECT_BY,
            "zeroed; the reason goes to the status page, not to the driver"
        ),
    ],
};

/// `DxgkDdiDestroyDoorbell`: `K:DXGDOORBELL::DestroyCoreState` @0x1401D804C disconnects the
/// doorbell first while its status says connected, then passes a one-field block.
pub const DESTROY_DOORBELL: Ddi<DXGKARG_DESTROYDOORBELL> = Ddi {
    name: "DxgkDdiDestroyDoorbell",
    block: "DXGKARG_DESTROYDOORBELL",
    rows: &[filled_row!(
        DXGKARG_DESTROYDOORBELL.hDoorbell,
        true,
        "K:DXGDOORBELL::DestroyCoreState @0x1401D804C",
        "the driver's handle of the doorbell"
    )],
};

const NOTIFY_BY: &str = "K:DxgkNotifyWorkSubmissionInternal @0x1401D98CC";

/// `DxgkDdiNotifyWorkSubmission` (`D3DKMTNotifyWorkSubmission`): `NOTIFY_BY` refuses a caller's
/// reserved flag bits and calls the driver only while the doorbell's status page says
/// CONNECTED_NOTIFY_KMD, with a two-word block naming the queue.
pub const NOTIFY_WORK_SUBMISSION: Ddi<DXGKARG_NOTIFYWORKSUBMISSION> = Ddi {
    name: "DxgkDdiNotifyWorkSubmission",
    block: "DXGKARG_NOTIFYWORKSUBMISSION",
    rows: &[
        filled_row!(
            DXGKARG_NOTIFYWORKSUBMISSION.hHwQueue,
            true,
            NOTIFY_BY,
            "the driver's handle of the doorbell's queue"
        ),
        zero_row!(
            DXGKARG_NOTIFYWORKSUBMISSION.Flags,
            false,
            NOTIFY_BY,
            "zeroed; the caller's flags are not passed on"
        ),
    ],
};
