//! The [`Tdr`] capability (TDR-01 … TDR-09, UM-10; docs/tdr.md): timeout detection and
//! recovery as a client sees it.

use std::time::Duration;

use rvgpu_umd::kmt::DeviceExecutionState;

use crate::backend::common::Failure;

use super::user_mode::{ProcessRef, UmQueueRef, Work};

/// TDR timing of a session ([`Tdr::enable_tdr`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TdrTimeouts {
    /// Step mode: rounds without progress before a timeout.
    pub timeout_steps: u64,
    /// Threaded mode: time without progress before a timeout.
    pub timeout: Duration,
    /// Step mode: rounds to wait for `DmaPreempted`.
    pub preempt_steps: u64,
    /// Threaded mode: time to wait for `DmaPreempted`.
    pub preempt_timeout: Duration,
}

impl TdrTimeouts {
    /// Short timeouts for cases: 40 rounds / 50 ms, preemption 5 rounds / 5 ms.
    pub fn fast() -> Self {
        Self {
            timeout_steps: 40,
            timeout: Duration::from_millis(50),
            preempt_steps: 5,
            preempt_timeout: Duration::from_millis(5),
        }
    }
}

/// One thread of [`Tdr::stream`]: submits `batches` to an existing queue, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamLane {
    /// The queue (taken by the thread for the call).
    pub queue: UmQueueRef,
    /// Batches, in order.
    pub batches: Vec<Vec<Work>>,
    /// Submit nothing until every lane that stops after a recovery has submitted this many
    /// batches or ended (0: start at once): the others' progress, not a time, so a lane whose
    /// thread starts late on a loaded host still starts among the others' work. Where lanes
    /// run one after another (step mode) they run in order, and this is already so of the
    /// lanes before it.
    pub start_after: usize,
    /// At most this many submitted batches not yet complete (0: no limit).
    pub max_in_flight: u64,
    /// Stop early: once at least `min_batches` are submitted and the adapter has recovered
    /// from a TDR, submit this many more and stop (`None`: submit every batch). A backend that
    /// cannot observe recoveries submits every batch.
    pub stop_after_recovery: Option<(usize, usize)>,
    /// Wait for the last submitted batch before returning.
    pub wait: bool,
}

/// What a [`StreamLane`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamReport {
    /// Batches submitted.
    pub submitted: usize,
    /// The progress value of the last one (0: none).
    pub last_value: u64,
    /// Batches submitted when the lane first saw the adapter recovered from a TDR (lanes with
    /// `stop_after_recovery` only; `None`: it never did).
    pub recovered_at: Option<usize>,
    /// The first error, if any.
    pub error: Option<String>,
}

/// Timeout detection and recovery as a client sees it: TDR on, and threads that keep queues
/// busy through a recovery. On Windows TDR is always on.
pub trait Tdr {
    /// Turns TDR on for adapter `i` with these timeouts (the simulation's TDR is opt-in per
    /// adapter). A Windows backend returns `Ok` and ignores the values (TDR is always on;
    /// `TdrDelay` is a registry setting).
    fn enable_tdr(&mut self, i: usize, t: TdrTimeouts) -> Result<(), Failure>;

    /// Runs `lanes` at the same time on existing queues, one thread each ([`StreamLane`]);
    /// step-mode sessions run them one after another.
    fn stream(&mut self, lanes: &[StreamLane]) -> Result<Vec<StreamReport>, Failure>;

    /// The OS's execution state of process `p`'s device (`D3DKMTGetDeviceState`,
    /// `D3DKMT_DEVICESTATE_EXECUTION`): what an application reads to learn that its device was
    /// lost, and why (HUNG for the device whose work hung an engine). Default: unsupported.
    fn device_state(&mut self, p: ProcessRef) -> Result<DeviceExecutionState, Failure> {
        let _ = p;
        Err(Failure::Unsupported("D3DKMTGetDeviceState".into()))
    }

    /// Whether the adapter resets engines one by one, as process `p` learns it:
    /// `SupportPerEngineTDR` of `D3DKMTQueryAdapterInfo(KMTQAITYPE_WDDM_1_2_CAPS)`, which the OS
    /// copies from the caps the driver reported at start. Default: unsupported.
    fn per_engine_tdr(&mut self, p: ProcessRef) -> Result<bool, Failure> {
        let _ = p;
        Err(Failure::Unsupported("KMTQAITYPE_WDDM_1_2_CAPS".into()))
    }
}
