//! The [`FenceLogs`] capability (LOG-01 … LOG-09, docs/logs.md): the OS's native fence logs
//! and the GPU timeline (simulation only).

use crate::backend::common::Failure;

use super::user_mode::UmQueueRef;

/// Which log of a hardware queue.
pub use crate::timeline::OpKind as LogKind;

/// A hardware queue's logs as the OS set them (LOG-01, LOG-09): entries of each, `None` when
/// the log is not set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueLogs {
    /// The wait log's `NumberOfEntries`.
    pub wait_entries: Option<u64>,
    /// The signal log's `NumberOfEntries`.
    pub signal_entries: Option<u64>,
}

/// What the OS counted of its log drains on one adapter (docs/logs.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogCounters {
    /// DPC-time drains that read at least one header.
    pub drains: u64,
    /// Entries read and validated.
    pub entries_read: u64,
    /// `DxgkDdiUpdateNativeFenceLogs` calls (LOG-07).
    pub update_calls: u64,
    /// Overflows detected (LOG-05).
    pub overflows: u64,
    /// Entries lost to overflows.
    pub entries_lost: u64,
    /// Entries that failed validation.
    pub bad_entries: u64,
    /// Fallback scans of every fence of a device.
    pub fallback_scans: u64,
}

/// The OS's side of native fence logs (LOG-*): recording the fence timeline, the logs the OS
/// set, its drain counters, moving a log. Simulation only (on Windows GPUView shows Dxgkrnl's
/// own events).
pub trait FenceLogs {
    /// Starts recording the run's fence timeline: the OS's log entries and calibrations, and
    /// the UMD's "queued" events of every queue (also those created later).
    fn trace_fences(&mut self) -> Result<(), Failure>;

    /// The recorded fence operations joined (docs/logs.md) with the calibration samples,
    /// labelled `label`. Simulation only.
    fn fence_timeline(&self, label: &str) -> Result<crate::timeline::Timeline, Failure>;

    /// The queue's logs as the OS set them. Simulation only.
    fn queue_logs(&self, q: UmQueueRef) -> Result<QueueLogs, Failure>;

    /// The OS's log counters of adapter `i`. Simulation only.
    fn log_counters(&self, i: usize) -> Result<LogCounters, Failure>;

    /// The OS moves the queue's `kind` log to a new buffer of `entries` entries while the
    /// queue runs (the simulated Dxgkrnl's recreate, LOG-01). Simulation only.
    fn recreate_queue_log(
        &mut self,
        q: UmQueueRef,
        kind: LogKind,
        entries: u64,
    ) -> Result<(), Failure>;
}
