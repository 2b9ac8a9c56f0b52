//! The [`TdrTrace`] capability: the OS's record of detection and recovery (simulation only).

use crate::backend::common::Failure;

use super::user_mode::ProcessRef;

/// What started a TDR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TdrCause {
    /// Kernel-mode DMA buffers in flight and no completion for the timeout.
    DmaTimeout,
    /// A hardware queue's progress fence did not move for the timeout (UM-16).
    QueueStalled,
    /// The engine reported itself hung (`EngineStateChange(HUNG)`).
    EngineHung,
    /// `DmaFaulted` with this fence ID.
    Faulted(u32),
}

/// One step of the OS's detection and recovery, in order (docs/tdr.md; devices named by
/// the session's processes where they are one of them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TdrStep {
    /// A timeout (or hang report) on `node`.
    Detected { node: u32, cause: TdrCause },
    /// `DxgkDdiPreemptCommand(fence)`.
    PreemptRequested { node: u32, fence: u32 },
    /// `DmaPreempted` arrived in time: no TDR.
    Preempted {
        node: u32,
        fence: u32,
        last_completed: u32,
    },
    /// The preemption timed out (or was not attempted).
    Timeout { node: u32 },
    /// The OS's debug report (`DxgkDdiCollectDbgInfo` or `DxgkDdiCollectDbgInfo2`) for `reason`;
    /// `bytes` kept.
    CollectDbgInfo { reason: u32, bytes: usize },
    /// The atomic snapshot of (S, C) at device IRQL.
    Snapshot {
        node: u32,
        submitted: u32,
        completed: u32,
    },
    /// The work completed before the snapshot: no reset.
    NothingToReset { node: u32 },
    /// DPCs flushed.
    DpcFlushed { node: u32 },
    /// `DxgkDdiQueryDependentEngineGroup`.
    DependentGroup { node: u32, mask: u64 },
    /// `DxgkDdiQueryEngineStatus`.
    EngineStatus { node: u32, responsive: bool },
    /// The session's pause hook ran ([`FaultInjection::complete_before_reset`](super::fault_injection::FaultInjection::complete_before_reset)).
    Paused { node: u32 },
    /// A report of `node` arrived while its interrupts were ignored.
    IgnoredInterrupt { node: u32, fence: u32 },
    /// `DxgkDdiResetEngine` returned.
    ResetEngine {
        node: u32,
        status: i32,
        last_aborted: u32,
    },
    /// `DxgkCbInvalidateHwContext` named a context of this process's device.
    Invalidated { process: Option<ProcessRef> },
    /// Fence IDs the reset retired as completed.
    Retired { node: u32, fences: Vec<u32> },
    /// The aborted DMA buffer.
    Aborted { node: u32, fence: u32, paging: bool },
    /// A DMA buffer resubmitted (`old == new` for paging buffers, TDR-03).
    Resubmitted {
        node: u32,
        old: u32,
        new: u32,
        paging: bool,
    },
    /// A process's device put in error (UM-10).
    DeviceError {
        process: Option<ProcessRef>,
        doorbells_aborted: usize,
    },
    /// `DxgkDdiResetFromTimeout` succeeded; the reason (`TdrEngineTimeoutPromotedToAdapterReset`
    /// = 9).
    AdapterReset { reason: u32 },
    /// `DxgkDdiRestartFromTimeout` succeeded.
    Restarted,
    /// The node runs again.
    Recovered { node: u32 },
    /// Any other step (text for messages).
    Other(String),
}

/// An engine as the device shows it (simulation only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineProbe {
    /// The engine has work.
    pub has_work: bool,
    /// Some queue of the engine is inside an INDIRECT buffer (a DMA buffer part-way).
    pub mid_buffer: bool,
    /// `COMPLETED_COMMANDS` of the engine.
    pub completed_commands: u64,
}

/// The OS's record of detection and recovery: steps, reasons, counters, VidSch's fence IDs, the
/// device's engines. Simulation only.
pub trait TdrTrace {
    /// The OS's recovery steps on adapter `i` so far. Simulation only.
    fn tdr_steps(&self, i: usize) -> Result<Vec<TdrStep>, Failure>;

    /// The reason of the last recovery (1 engine timeout, 2 adapter timeout, 9
    /// `TdrEngineTimeoutPromotedToAdapterReset`). Simulation only.
    fn tdr_reason(&self, i: usize) -> Result<Option<u32>, Failure>;

    /// (engine resets, adapter resets) recovered on adapter `i`. Simulation only.
    fn tdr_recoveries(&self, i: usize) -> Result<(u64, u64), Failure>;

    /// The OS's (last submitted, last completed) fence IDs of `node` (TDR-04). Simulation only.
    fn dma_fences(&self, i: usize, node: u32) -> Result<(u32, u32), Failure>;

    /// Every fence ID retired on adapter `i` as (node, id), in order. Simulation only.
    fn retired_fences(&self, i: usize) -> Result<Vec<(u32, u32)>, Failure>;

    /// Engine `node` as the device shows it. Simulation only.
    fn engine_probe(&self, i: usize, node: u32) -> Result<EngineProbe, Failure>;
}
