//! The [`OsTrace`] capability: what the OS saw of the driver (simulation only).

use crate::backend::common::Failure;

use super::user_mode::{DoorbellStatus, ProcessRef, UmQueueRef};

/// An engine state change the OS processed (`DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE`, UM-13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineStateChange {
    /// Node ordinal.
    pub node: u32,
    /// Engine ordinal.
    pub engine: u32,
    /// `DXGK_ENGINE_STATE` value.
    pub new_state: i32,
}

/// Adapter power as the OS drove it (UM-13, UM-14).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerStatus {
    /// The adapter is in D3.
    pub d3: bool,
    /// Per node: its power component's F-state (0 = F0).
    pub node_fstates: Vec<u32>,
}

/// One OS step of user-mode submission, in order (the simulated Dxgkrnl's record; queues
/// named by the session's refs where the object belongs to one, `None` otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OsEvent {
    /// `DxgkDdiCreateDoorbell`.
    CreateDoorbell { queue: Option<UmQueueRef> },
    /// `DxgkDdiConnectDoorbell` succeeded: the doorbell VA maps physical doorbell `page`.
    Connect {
        queue: Option<UmQueueRef>,
        page: u32,
    },
    /// `DxgkDdiConnectDoorbell` failed.
    ConnectFailed {
        queue: Option<UmQueueRef>,
        status: i32,
    },
    /// The KMD called `DxgkCbDisconnectDoorbell` (victimisation).
    VictimCallback {
        queue: Option<UmQueueRef>,
        reason: DoorbellStatus,
    },
    /// The OS called `DxgkDdiDisconnectDoorbell` (F1, D3, exit, device loss).
    OsDisconnect {
        queue: Option<UmQueueRef>,
        reason: DoorbellStatus,
    },
    /// `DxgkDdiNotifyWorkSubmission`.
    Notify { queue: Option<UmQueueRef> },
    /// `DxgkDdiSubmitCommandToHwQueue`.
    KernelSubmit {
        queue: Option<UmQueueRef>,
        value: u64,
    },
    /// Normal exit waited for the queue's last queued progress value.
    WaitedIdle {
        queue: Option<UmQueueRef>,
        value: u64,
    },
    /// `DxgkDdiDestroyDoorbell`.
    DestroyDoorbell { queue: Option<UmQueueRef> },
    /// `DxgkDdiDestroyHwQueue`.
    DestroyHwQueue { queue: Option<UmQueueRef> },
    /// An allocation's memory was freed.
    FreeAllocation,
    /// `DxgkDdiSuspendContext` (of the context behind `queue`).
    SuspendContext { queue: Option<UmQueueRef> },
    /// `DxgkDdiResumeContext`.
    ResumeContext { queue: Option<UmQueueRef> },
    /// `DxgkDdiDestroyContext`.
    DestroyContext { queue: Option<UmQueueRef> },
    /// `DxgkDdiSetPowerState` to D3 (`true`) or D0.
    SetPowerState { d3: bool },
    /// A node's power component changed F-state.
    SetFState { node: u32, fstate: u32 },
    /// An engine-state change the OS processed.
    EngineState { node: u32, state: i32 },
    /// The process's device was marked in error.
    DeviceError { process: Option<ProcessRef> },
    /// `DxgkDdiDestroyDevice`.
    DestroyDevice { process: Option<ProcessRef> },
    /// Any other step (creation of devices, contexts, queues; aborts of idle doorbells).
    Other,
}

/// What the simulated Dxgkrnl and the device record: processed engine-state changes, ISR calls,
/// the user-mode submission event trace, power state, doorbell mappings and ring residency.
/// Simulation only.
pub trait OsTrace {
    /// Engine state changes the OS processed on adapter `i`, in order.
    fn engine_state_changes(&self, i: usize) -> Vec<EngineStateChange>;

    /// ISR calls on adapter `i` so far.
    fn interrupt_count(&self, i: usize) -> u64;

    /// The OS steps of user-mode submission on adapter `i` so far, in order. Simulation only
    /// (Windows: some of it is in Dxgkrnl's ETW events).
    fn os_events(&self, i: usize) -> Result<Vec<OsEvent>, Failure>;

    /// Adapter power and node F-states. Simulation only.
    fn power_status(&self, i: usize) -> Result<PowerStatus, Failure>;

    /// Where the doorbell's CPU VA points: `Some(page)` the physical doorbell, `None` the
    /// OS's dummy page (UM-09). Simulation only.
    fn doorbell_mapping(&self, q: UmQueueRef) -> Result<Option<u32>, Failure>;
}
