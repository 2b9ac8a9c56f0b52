//! The OS side of the GPU timeline (docs/logs.md#the-gpu-timeline): the CPU
//! clock ([`qpc`]), the events the simulated OS reports ([`TraceEvent`] to a [`TraceSink`]),
//! how a CPU wait was released ([`ReleaseVia`]), and the data the harness turns into a trace
//! file: a [`Recorder`] that collects both the OS's events and the UMD's "queued" events
//! (`rvgpu_umd::fencelog::FenceTrace`), [`Recorder::operations`] that joins them per fence
//! operation, and [`ClockMap`], the GPU → CPU time mapping built from the OS's
//! `DxgkDdiCalibrateGpuClock` samples.
//!
//! - **CPU clock.** [`qpc`]: 10 MHz ticks ([`QPC_HZ`]) of one process-wide `Instant` epoch,
//!   never 0. The simulated kernel's `Platform::query_performance_counter` (what the KMD's
//!   calibration reads) and the UMD's sim thunk `Kmt::cpu_timestamp` both use it, so queued
//!   times and calibration samples are on one clock.
//! - **Join (docs/logs.md#the-gpu-timeline).** One operation per `(adapter, queue_id, kind, index mod 2^32)`; the
//!   entry's `(hNativeFence, FenceValue)` must equal the queued op's `(fence, value)`, else
//!   [`Operation::mismatch`] is set (a case failure for the harness).
//! - **Mapping (docs/logs.md#the-gpu-timeline).** Between two samples linear interpolation; before the first / after
//!   the last, extrapolation with `qpc_hz / gpu_hz` from the nearest sample.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rvgpu_hw::log::LogEntry;
use rvgpu_umd::fencelog::{FenceTrace, QueuedOp};

pub use rvgpu_hw::cmd::LogKind;

pub use crate::base::clock::{qpc, QPC_HZ};
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;

/// How a CPU wait on a native fence was released (docs/logs.md#the-gpu-timeline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseVia {
    /// A SIGNAL_EXECUTED entry of a queue's signal log (free-running index `index`).
    Log {
        /// Device queue id.
        queue_id: u32,
        /// Always [`LogKind::Signal`] today (wait entries release nothing).
        kind: LogKind,
        /// Free-running entry index.
        index: u64,
    },
    /// Resampling the fence after a named-array report or a MonitoredValue
    /// update.
    Resample,
    /// A scan of every native fence of the adapter (NULL report, log overflow or another log
    /// fallback).
    Scan,
    /// A CPU signal (`DxgkDdiUpdateCurrentValuesFromCpu`).
    CpuSignal,
    /// The value was already reached when the wait was registered.
    Immediate,
}

/// One event of the simulated OS for the timeline (docs/logs.md#the-gpu-timeline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// A user-mode hardware queue got its logs (inside `D3DKMTCreateHwQueue`).
    QueueCreated {
        adapter: usize,
        queue_id: u32,
        node: u32,
        process: ProcessId,
        /// The KMD's queue handle (`hHWQueue` of the optimized interrupt).
        hw_queue: usize,
    },
    /// The OS read a log entry (validated; indices strictly increasing per log).
    LogEntry {
        adapter: usize,
        queue_id: u32,
        kind: LogKind,
        /// Free-running index.
        index: u64,
        entry: LogEntry,
    },
    /// Entries `from..to` (free-running) were overwritten before the OS read them (LOG-05),
    /// or dropped because their slot may have been rewritten while it was read.
    LogLost {
        adapter: usize,
        queue_id: u32,
        kind: LogKind,
        from: u64,
        to: u64,
    },
    /// The OS moved the log to a new buffer; entries from free-running index `at` go there.
    LogRecreated {
        adapter: usize,
        queue_id: u32,
        kind: LogKind,
        at: u64,
        entries: u64,
    },
    /// A CPU wait was released. `fence_kmt` is the fence's D3DKMT handle in `process` (0 for a
    /// fence created through the Machine API without one), `qpc` when it was released.
    WaitReleased {
        adapter: usize,
        fence_kmt: u32,
        process: ProcessId,
        value: u64,
        via: ReleaseVia,
        qpc: u64,
    },
    /// A new wait raised the fence's MonitoredValue from `from` to `to` over `waits_below`
    /// pending waits not yet reached (24H2's rule, docs/windows-bringup.md §13): none of them
    /// gets an interrupt before the fence reaches `to`.
    MonitoredValueRaised {
        adapter: usize,
        fence_kmt: u32,
        process: ProcessId,
        from: u64,
        to: u64,
        waits_below: u32,
        qpc: u64,
    },
    /// A wait MonitoredValue had been raised over was released after the fence passed its
    /// `value`: `reached` is the CurrentValue the OS released it at.
    LateWake {
        adapter: usize,
        fence_kmt: u32,
        process: ProcessId,
        value: u64,
        reached: u64,
        qpc: u64,
    },
    /// One `DxgkDdiCalibrateGpuClock` answer: GPU counter `gpu` at CPU counter `cpu` (QPC
    /// ticks), `bracket` = QPC ticks the OS's call took (the uncertainty).
    Calibration {
        adapter: usize,
        node: u32,
        gpu_hz: u64,
        gpu: u64,
        cpu: u64,
        bracket: u64,
    },
}

/// Receives the OS's [`TraceEvent`]s ([`crate::Machine::set_trace_sink`]). Called at DISPATCH
/// level from DPC-time work and from thunks: must not block for long nor call the machine.
pub trait TraceSink: Send + Sync {
    /// One event.
    fn event(&self, e: &TraceEvent);
}

/// The installed sink (a `Debug` wrapper for the OS state).
#[derive(Clone, Default)]
pub(crate) struct SinkSlot(pub(crate) Option<Arc<dyn TraceSink>>);

impl std::fmt::Debug for SinkSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Some(sink)"
        } else {
            "None"
        })
    }
}

/// A UMD "queued" event with the adapter it came from (the harness's per-process wrapper adds
/// it, docs/logs.md#the-gpu-timeline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    pub adapter: usize,
    pub op: QueuedOp,
}

/// Collects the OS's events and the UMD's queued events of one run. Install it with
/// [`crate::Machine::set_trace_sink`] and pass [`Recorder::for_adapter`] to the UMD queues.
#[derive(Debug, Default)]
pub struct Recorder {
    events: Mutex<Vec<TraceEvent>>,
    queued: Mutex<Vec<Queued>>,
}

impl TraceSink for Recorder {
    fn event(&self, e: &TraceEvent) {
        lock(&self.events).push(*e);
    }
}

/// [`FenceTrace`] of one adapter, feeding a [`Recorder`].
#[derive(Clone, Debug)]
pub struct AdapterTrace {
    rec: Arc<Recorder>,
    adapter: usize,
}

impl FenceTrace for AdapterTrace {
    fn queued(&self, op: &QueuedOp) {
        lock(&self.rec.queued).push(Queued {
            adapter: self.adapter,
            op: *op,
        });
    }
}

/// One native-fence operation of the timeline (docs/logs.md#the-gpu-timeline): what the UMD queued joined with what the
/// GPU logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operation {
    pub adapter: usize,
    pub queue_id: u32,
    pub kind: LogKind,
    /// Log index (mod 2^32, as the UMD numbers it).
    pub index: u32,
    /// `hNativeFence` (from the queued op, else from the entry).
    pub fence: u32,
    pub value: u64,
    /// CPU time the UMD queued it (QPC ticks), if a queued event was seen.
    pub queued_qpc: Option<u64>,
    /// Wait entries: when the engine first saw the unresolved wait (GPU ticks; 0 = not
    /// stalled).
    pub observed_gpu: Option<u64>,
    /// When it completed on the GPU (GPU ticks), if its entry was read.
    pub end_gpu: Option<u64>,
    /// The entry was lost (overflow) or never read.
    pub lost: bool,
    /// The entry's `(hNativeFence, FenceValue)` differs from the queued op's.
    pub mismatch: bool,
}

impl Recorder {
    /// A new recorder, shared.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The UMD-side sink for queues on `adapter`.
    pub fn for_adapter(self: &Arc<Self>, adapter: usize) -> AdapterTrace {
        AdapterTrace {
            rec: self.clone(),
            adapter,
        }
    }

    /// Every OS event so far, in order.
    pub fn events(&self) -> Vec<TraceEvent> {
        lock(&self.events).clone()
    }

    /// Every queued event so far, in order.
    pub fn queued(&self) -> Vec<Queued> {
        lock(&self.queued).clone()
    }

    /// Calibration samples of `adapter`, as a [`ClockMap`].
    pub fn clock_map(&self, adapter: usize) -> ClockMap {
        let mut m = ClockMap::new(QPC_HZ);
        for e in lock(&self.events).iter() {
            if let TraceEvent::Calibration {
                adapter: a,
                gpu_hz,
                gpu,
                cpu,
                bracket,
                ..
            } = *e
            {
                if a == adapter {
                    m.add(gpu_hz, gpu, cpu, bracket);
                }
            }
        }
        m
    }

    /// The join of docs/logs.md#the-gpu-timeline: one [`Operation`] per `(adapter, queue_id, kind, index mod 2^32)`
    /// seen in a logged queued event or a log entry, sorted by that key. An operation whose
    /// entry was never read (lost to an overflow, see [`TraceEvent::LogLost`], or not yet
    /// drained) has `lost` set.
    pub fn operations(&self) -> Vec<Operation> {
        type Key = (usize, u32, u8, u32);
        fn k(kind: LogKind) -> u8 {
            match kind {
                LogKind::Wait => 0,
                LogKind::Signal => 1,
            }
        }
        let mut ops: BTreeMap<Key, Operation> = BTreeMap::new();
        let blank = |adapter, queue_id, kind, index| Operation {
            adapter,
            queue_id,
            kind,
            index,
            fence: 0,
            value: 0,
            queued_qpc: None,
            observed_gpu: None,
            end_gpu: None,
            lost: false,
            mismatch: false,
        };
        for q in lock(&self.queued).iter().filter(|q| q.op.logged) {
            let key = (q.adapter, q.op.queue_id, k(q.op.kind), q.op.index);
            let o = ops
                .entry(key)
                .or_insert_with(|| blank(q.adapter, q.op.queue_id, q.op.kind, q.op.index));
            o.fence = q.op.fence;
            o.value = q.op.value;
            o.queued_qpc = Some(q.op.qpc);
        }
        for e in lock(&self.events).iter() {
            if let TraceEvent::LogEntry {
                adapter,
                queue_id,
                kind,
                index,
                entry,
            } = *e
            {
                let i = index as u32;
                let o = ops
                    .entry((adapter, queue_id, k(kind), i))
                    .or_insert_with(|| {
                        let mut b = blank(adapter, queue_id, kind, i);
                        b.fence = entry.h_native_fence;
                        b.value = entry.fence_value;
                        b
                    });
                if o.queued_qpc.is_some()
                    && (o.fence != entry.h_native_fence || o.value != entry.fence_value)
                {
                    o.mismatch = true;
                }
                o.end_gpu = Some(entry.fence_end_gpu_timestamp);
                if kind == LogKind::Wait {
                    o.observed_gpu = Some(entry.fence_observed_gpu_timestamp);
                }
            }
        }
        for o in ops.values_mut() {
            o.lost = o.end_gpu.is_none();
        }
        ops.into_values().collect()
    }
}

/// GPU → CPU (QPC) time mapping from calibration samples (docs/logs.md#the-gpu-timeline).
#[derive(Clone, Debug, PartialEq)]
pub struct ClockMap {
    /// QPC ticks per second.
    pub qpc_hz: u64,
    /// GPU ticks per second (from the last sample; 0 before any).
    pub gpu_hz: u64,
    /// `(gpu, cpu, bracket)` sorted by `gpu`.
    pub samples: Vec<(u64, u64, u64)>,
}

impl ClockMap {
    /// No samples yet.
    pub fn new(qpc_hz: u64) -> Self {
        Self {
            qpc_hz,
            gpu_hz: 0,
            samples: Vec::new(),
        }
    }

    /// Adds a sample.
    pub fn add(&mut self, gpu_hz: u64, gpu: u64, cpu: u64, bracket: u64) {
        self.gpu_hz = gpu_hz;
        let at = self.samples.partition_point(|s| s.0 <= gpu);
        self.samples.insert(at, (gpu, cpu, bracket));
    }

    /// Half the largest bracket, in QPC ticks: the mapping's uncertainty.
    pub fn uncertainty(&self) -> u64 {
        self.samples
            .iter()
            .map(|s| s.2)
            .max()
            .unwrap_or(0)
            .div_ceil(2)
    }

    /// The QPC time of GPU time `g`; `None` without samples or GPU frequency.
    pub fn to_qpc(&self, g: u64) -> Option<u64> {
        if self.gpu_hz == 0 {
            return None;
        }
        let s = &self.samples;
        let i = s.partition_point(|x| x.0 <= g);
        let extrapolate = |(g0, c0, _): (u64, u64, u64)| -> u64 {
            let d = i128::from(g) - i128::from(g0);
            let c = i128::from(c0) + d * i128::from(self.qpc_hz) / i128::from(self.gpu_hz);
            c.clamp(0, i128::from(u64::MAX)) as u64
        };
        match (i.checked_sub(1).and_then(|j| s.get(j)), s.get(i)) {
            (Some(&a), Some(&b)) if b.0 > a.0 => {
                let c = i128::from(a.1)
                    + (i128::from(g) - i128::from(a.0)) * (i128::from(b.1) - i128::from(a.1))
                        / (i128::from(b.0) - i128::from(a.0));
                Some(c.clamp(0, i128::from(u64::MAX)) as u64)
            }
            (Some(&a), _) => Some(extrapolate(a)),
            (None, Some(&b)) => Some(extrapolate(b)),
            (None, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qpc_is_monotonic_and_nonzero() {
        let a = qpc();
        let b = qpc();
        assert!(a >= 1 && b >= a);
    }

    #[test]
    fn clock_map_interpolates_and_extrapolates() {
        let mut m = ClockMap::new(10);
        assert_eq!(m.to_qpc(5), None);
        m.add(100, 1000, 50, 2);
        m.add(100, 2000, 160, 4);
        assert_eq!(m.to_qpc(1500), Some(105));
        assert_eq!(m.to_qpc(1000), Some(50));
        // Before the first / after the last: 10 QPC ticks per 100 GPU ticks.
        assert_eq!(m.to_qpc(900), Some(40));
        assert_eq!(m.to_qpc(2100), Some(170));
        assert_eq!(m.uncertainty(), 2);
    }

    #[test]
    fn operations_join_queued_and_logged() {
        let rec = Recorder::new();
        let t = rec.for_adapter(0);
        let op = |index, value, logged| QueuedOp {
            queue_id: 3,
            kind: LogKind::Signal,
            index,
            fence: 7,
            value,
            qpc: 11,
            logged,
        };
        t.queued(&op(0, 1, true));
        t.queued(&op(1, 2, true));
        t.queued(&op(0, 9, false));
        let entry = |v| LogEntry {
            fence_value: v,
            h_native_fence: 7,
            fence_end_gpu_timestamp: 99,
            ..Default::default()
        };
        rec.event(&TraceEvent::LogEntry {
            adapter: 0,
            queue_id: 3,
            kind: LogKind::Signal,
            index: 0,
            entry: entry(1),
        });
        rec.event(&TraceEvent::LogEntry {
            adapter: 0,
            queue_id: 3,
            kind: LogKind::Signal,
            index: 1,
            entry: entry(5),
        });
        let ops = rec.operations();
        assert_eq!(ops.len(), 2);
        assert_eq!(ops[0].queued_qpc, Some(11));
        assert_eq!(ops[0].end_gpu, Some(99));
        assert!(!ops[0].mismatch && !ops[0].lost);
        assert!(ops[1].mismatch);
    }
}
