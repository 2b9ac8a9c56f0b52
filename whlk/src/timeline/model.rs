//! The input: a [`Timeline`] per case (queues, fence operations, calibration samples, markers)
//! and the map from GPU clock ticks to QPC ticks.

use std::collections::BTreeMap;

/// Which log an operation is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    /// A GPU wait (`FENCE_WAIT`, wait log, `WAIT_UNBLOCKED` entry).
    Wait,
    /// A GPU signal (`FENCE_SIGNAL`, signal log, `SIGNAL_EXECUTED` entry).
    Signal,
}

impl OpKind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Wait => "wait",
            Self::Signal => "signal",
        }
    }
}

/// A hardware queue of the timeline (one track group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueTrack {
    /// Adapter index.
    pub adapter: usize,
    /// Device queue id.
    pub queue_id: u32,
    /// Engine (node ordinal).
    pub node: u32,
    /// Owning process, if known.
    pub process: Option<u64>,
}

/// One native-fence operation: what the UMD queued joined with what the GPU logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FenceOp {
    /// Adapter index.
    pub adapter: usize,
    /// Device queue id.
    pub queue_id: u32,
    /// Wait or signal.
    pub kind: OpKind,
    /// Free-running log index (mod 2^32).
    pub index: u32,
    /// `hNativeFence` (the D3DKMT handle).
    pub fence: u32,
    /// Value waited for or signalled.
    pub value: u64,
    /// CPU time the UMD queued it (QPC ticks).
    pub queued_qpc: Option<u64>,
    /// Wait: when the engine first saw it unresolved (GPU ticks; `Some(0)`/`None`: no stall).
    pub observed_gpu: Option<u64>,
    /// When it completed on the GPU (GPU ticks), if its log entry was read.
    pub end_gpu: Option<u64>,
    /// The log entry's `(hNativeFence, FenceValue)` differs from what the UMD queued.
    pub mismatch: bool,
}

/// One `DxgkDdiCalibrateGpuClock` answer: GPU counter `gpu` was read at CPU counter `cpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calibration {
    /// Adapter index (one GPU clock for all its nodes).
    pub adapter: usize,
    /// GPU ticks per second.
    pub gpu_hz: u64,
    /// GPU counter.
    pub gpu: u64,
    /// CPU counter (QPC ticks).
    pub cpu: u64,
    /// QPC ticks the calibration call took (the sample's uncertainty).
    pub bracket: u64,
}

/// A point in time worth marking (log overflow, log recreated, fallback scan).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    /// Adapter index.
    pub adapter: usize,
    /// The queue it concerns (`None`: the whole run).
    pub queue_id: Option<u32>,
    /// When (QPC ticks).
    pub qpc: u64,
    /// What happened.
    pub text: String,
}

/// An event of the driver's ETW provider (`rvgpu.Kmd`), decoded from its TraceLogging
/// metadata by the session that recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtwMark {
    /// When it was written (QPC ticks).
    pub qpc: u64,
    /// The event's name.
    pub name: String,
    /// Its fields, by name, as text.
    pub fields: Vec<(String, String)>,
}

/// The fence operations of one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    /// Label (the case name).
    pub label: String,
    /// QPC ticks per second.
    pub qpc_hz: u64,
    /// Hardware queues; queues named only by an operation are added when rendered.
    pub queues: Vec<QueueTrack>,
    /// Operations.
    pub ops: Vec<FenceOp>,
    /// Calibration samples of every adapter.
    pub calibrations: Vec<Calibration>,
    /// Markers.
    pub markers: Vec<Marker>,
    /// The driver's ETW events, on a track of their own beside the queues.
    pub etw: Vec<EtwMark>,
}

impl Timeline {
    /// An empty timeline.
    pub fn new(label: impl Into<String>, qpc_hz: u64) -> Self {
        Self {
            label: label.into(),
            qpc_hz,
            queues: Vec::new(),
            ops: Vec::new(),
            calibrations: Vec::new(),
            markers: Vec::new(),
            etw: Vec::new(),
        }
    }

    /// The GPU → CPU mapping of `adapter`.
    pub fn clock(&self, adapter: usize) -> ClockMap {
        ClockMap::new(
            self.qpc_hz,
            self.calibrations
                .iter()
                .filter(|c| c.adapter == adapter)
                .copied(),
        )
    }

    /// Operations whose mapped GPU end is earlier than their CPU queued time by more than the
    /// mapping's uncertainty plus 1 µs (docs/logs.md#the-gpu-timeline: causality), as messages.
    pub fn causality_violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut clocks = BTreeMap::new();
        for op in &self.ops {
            let clock = clocks
                .entry(op.adapter)
                .or_insert_with(|| self.clock(op.adapter));
            let (Some(q), Some(end)) = (op.queued_qpc, op.end_gpu.and_then(|g| clock.to_qpc(g)))
            else {
                continue;
            };
            let slack = clock.uncertainty() + self.qpc_hz as f64 / 1e6;
            if end + slack < q as f64 {
                out.push(format!(
                    "adapter {} queue {} {} #{} (fence {:#x} value {}): GPU end maps {:.3} µs \
                     before it was queued (tolerance {:.3} µs)",
                    op.adapter,
                    op.queue_id,
                    op.kind.name(),
                    op.index,
                    op.fence,
                    op.value,
                    (q as f64 - end) * 1e6 / self.qpc_hz as f64,
                    slack * 1e6 / self.qpc_hz as f64
                ));
            }
        }
        out
    }
}

/// GPU → CPU time mapping of one adapter (docs/logs.md#the-gpu-timeline).
#[derive(Clone, Debug, PartialEq)]
pub struct ClockMap {
    pub(super) qpc_hz: u64,
    /// `(gpu, cpu, gpu_hz, bracket)` sorted by `gpu`, one per distinct `gpu`.
    pub(super) samples: Vec<(u64, u64, u64, u64)>,
}

impl ClockMap {
    /// A mapping from `samples` (any order; of several samples with the same GPU counter the
    /// one with the smallest bracket is kept).
    pub fn new(qpc_hz: u64, samples: impl IntoIterator<Item = Calibration>) -> Self {
        let mut s: Vec<(u64, u64, u64, u64)> = samples
            .into_iter()
            .filter(|c| c.gpu_hz > 0)
            .map(|c| (c.gpu, c.cpu, c.gpu_hz, c.bracket))
            .collect();
        s.sort_by_key(|&(g, _, _, b)| (g, b));
        s.dedup_by_key(|x| x.0);
        Self { qpc_hz, samples: s }
    }

    /// Whether there is any sample.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Half the largest bracket, in QPC ticks.
    pub fn uncertainty(&self) -> f64 {
        self.samples.iter().map(|s| s.3).max().unwrap_or(0) as f64 / 2.0
    }

    /// The CPU time (QPC ticks, fractional) of GPU time `g`; `None` without samples.
    pub fn to_qpc(&self, g: u64) -> Option<f64> {
        let s = &self.samples;
        let i = s.partition_point(|x| x.0 <= g);
        let before = i.checked_sub(1).and_then(|j| s.get(j));
        let after = s.get(i);
        let delta = |from: u64| g as f64 - from as f64;
        match (before, after) {
            (Some(&(g0, c0, _, _)), Some(&(g1, c1, _, _))) => {
                // g0 < g1 (deduplicated); the fraction keeps the precision of small deltas.
                let slope = (c1 as f64 - c0 as f64) / (g1 - g0) as f64;
                Some(c0 as f64 + delta(g0) * slope)
            }
            (Some(&(g0, c0, hz, _)), None) | (None, Some(&(g0, c0, hz, _))) => {
                Some(c0 as f64 + delta(g0) * self.qpc_hz as f64 / hz as f64)
            }
            (None, None) => None,
        }
    }
}
