//! The OS steps of the user-mode-submission layer, recorded per adapter so tests can check
//! sequences in order.

use rvgpu_ddi::basic::{DEVICE_POWER_STATE, NTSTATUS};
use rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS;

use crate::ob::KmtHandle;

/// One OS step, recorded in order per adapter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UmsEvent {
    /// The driver reported a GPU page fault of `queue` at `va` (the OS then puts its device in
    /// error, UM-10).
    PageFault { queue: KmtHandle, va: u64 },
    /// `DxgkDdiCreateDevice` succeeded.
    CreateDevice { device: KmtHandle },
    /// `DxgkDdiCreateContext` succeeded.
    CreateContext { context: KmtHandle, node: u32 },
    /// `DxgkDdiCreateHwQueue` succeeded.
    CreateHwQueue {
        queue: KmtHandle,
        user_mode: bool,
        queue_id: Option<u32>,
    },
    /// `DxgkDdiCreateDoorbell` succeeded.
    CreateDoorbell { doorbell: KmtHandle },
    /// `DxgkDdiConnectDoorbell` succeeded: the doorbell's CPU VA now maps physical `page`.
    ConnectDoorbell {
        doorbell: KmtHandle,
        page: u32,
        status: D3DDDI_DOORBELLSTATUS,
    },
    /// `DxgkDdiConnectDoorbell` failed.
    ConnectFailed {
        doorbell: KmtHandle,
        status: NTSTATUS,
    },
    /// The KMD called `DxgkCbDisconnectDoorbell`; `was_connected`: the OS mapping was physical
    /// and is now the dummy page.
    CallbackDisconnect {
        doorbell: KmtHandle,
        reason: D3DDDI_DOORBELLSTATUS,
        was_connected: bool,
    },
    /// The OS called `DxgkDdiDisconnectDoorbell` and pointed the CPU VA at the dummy page.
    DisconnectDoorbell {
        doorbell: KmtHandle,
        reason: D3DDDI_DOORBELLSTATUS,
    },
    /// An already disconnected doorbell was marked aborted (device loss).
    Aborted { doorbell: KmtHandle },
    /// `DxgkDdiNotifyWorkSubmission`.
    NotifyWorkSubmission { doorbell: KmtHandle },
    /// `DxgkDdiSubmitCommandToHwQueue` succeeded.
    Submit { queue: KmtHandle, value: u64 },
    /// `DxgkDdiDestroyDoorbell`.
    DestroyDoorbell { doorbell: KmtHandle },
    /// `DxgkDdiDestroyHwQueue`.
    DestroyHwQueue { queue: KmtHandle },
    /// An allocation's memory was freed.
    FreeAllocation { allocation: KmtHandle },
    /// `DxgkDdiDestroyContext`.
    DestroyContext { context: KmtHandle },
    /// `DxgkDdiDestroyDevice`.
    DestroyDevice { device: KmtHandle },
    /// `DxgkDdiSuspendContext`.
    SuspendContext { context: KmtHandle, fence: u64 },
    /// `DxgkDdiResumeContext`.
    ResumeContext { context: KmtHandle },
    /// `DxgkDdiSetPowerState` (`state` is a `DEVICE_POWER_STATE`).
    SetPowerState { state: DEVICE_POWER_STATE },
    /// The node's power component changed F-state (`called`: `DxgkDdiSetPowerComponentFState`
    /// was called; false when the driver does not do runtime power management).
    SetFState {
        node: u32,
        fstate: u32,
        called: bool,
    },
    /// The driver took (`active`) or gave back an active reference on the node's power
    /// component (`DxgkCbSetPowerComponentActive` / `Idle`); `count` is the driver's count
    /// after the call.
    DriverComponentRef { node: u32, active: bool, count: u32 },
    /// An F1 request found the node busy after its doorbells were disconnected: the node
    /// stays in F0 (UM-13: F1 only when idle).
    F1Declined { node: u32 },
    /// An engine-state change the DPC reported (`DXGK_ENGINE_STATE`).
    EngineState { node: u32, state: i32 },
    /// Normal exit waited for a queue's last queued progress value.
    WaitedIdle { queue: KmtHandle, value: u64 },
    /// The device was marked in error (abnormal exit).
    DeviceError { device: KmtHandle },
    /// MF-03: `D3DKMTSubmitWaitForSyncObjectsToHwQueue` queued a GPU wait on a kernel-mode
    /// queue (`fence` is the D3DKMT handle).
    GpuWaitQueued {
        queue: KmtHandle,
        fence: KmtHandle,
        value: u64,
    },
    /// MF-03: a queued GPU wait reached the head of its queue's list and was satisfied: the work
    /// behind it may go to the KMD.
    GpuWaitReleased {
        queue: KmtHandle,
        fence: KmtHandle,
        value: u64,
    },
    /// MF-03: a submission arrived behind a pending GPU wait; the OS holds it (no
    /// `DxgkDdiSubmitCommandToHwQueue` yet).
    SubmitHeld { queue: KmtHandle, value: u64 },
    /// The driver refused a held submission when the OS released it (user-mode
    /// arguments it rejects); the device went to error instead of the OS halting.
    HeldSubmitRefused {
        queue: KmtHandle,
        value: u64,
        status: i32,
    },
    /// MF-03: `D3DKMTSubmitSignalSyncObjectsToHwQueue`'s signal packet: the OS signalled
    /// `fence` once every earlier submission of the queue completed.
    GpuSignal {
        queue: KmtHandle,
        fence: KmtHandle,
        value: u64,
    },
    /// MF-03: the queue was destroyed with held work: `submissions` never reached the KMD,
    /// `waits` GPU waits and `signals` signal packets were dropped.
    HeldWorkDropped {
        queue: KmtHandle,
        submissions: usize,
        waits: usize,
        signals: usize,
    },
}
