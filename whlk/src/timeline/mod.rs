//! The GPU timeline (docs/logs.md#the-gpu-timeline): native-fence operations of a run as a Chrome
//! trace-event JSON file that the Perfetto UI (<https://ui.perfetto.dev>) and
//! `chrome://tracing` open, plus an SVG picture of the same data for the README.
//!
//! The input is a [`Timeline`] per case: plain data (hardware queues, one [`FenceOp`] per
//! logged wait or signal, GPU clock [`Calibration`] samples, [`Marker`]s), so this module is
//! tested with synthetic data and knows nothing of the backend. The simulated backend fills it
//! from the OS's trace (`rvgpu_simos::sync::trace`: the UMD's "queued" events joined with the log
//! entries the OS drained, and the `DxgkDdiCalibrateGpuClock` samples).
//!
//! **Time.** CPU times are QPC ticks (`qpc_hz` per second); GPU times are GPU clock ticks,
//! mapped to QPC ticks through the calibration samples of their adapter (docs/logs.md#the-gpu-timeline): between two
//! samples linear interpolation (absorbs drift), before the first / after the last
//! extrapolation from the nearest sample with the sample's `qpc_hz / gpu_hz`. The file's `ts`
//! are microseconds since the earliest event of the whole file (float, ns precision).
//!
//! **File** (docs/logs.md#the-gpu-timeline, object form of the Trace Event Format):
//! - one trace "process" per hardware queue, with
//!   `pid = 1_000_000 · (group + 1) + 10_000 · adapter + queue_id`
//!   (group = the case's position in the file; docs/logs.md's `1000 · (adapter + 1) + queue_id`
//!   collides once queue ids reach 1000, which the KMD allows up to 4096), named
//!   `"<case> · HWQueue <id> · engine <node> · adapter <a>"` and sorted by that order;
//! - per operation an async pair `b`/`e` (`cat` `fence`, name `wait` or `signal`, its own
//!   `id`) from the CPU queued time to the GPU end time. Async events, because the boxes of
//!   one queue overlap without nesting, which `X`/`B`/`E` slices must not do (Perfetto issue
//!   4280). An end that maps before its queued time (calibration error) is clamped to the
//!   queued time and the box gets `args.clamped_us`: no negative durations;
//! - a `GPU` thread (tid 1) per queue: `X` slices for wait stalls `[observed, end]` (one queue
//!   executes one packet at a time, so they never overlap) and thread instants at each
//!   signal's end;
//! - instants (`s: "p"`) for operations without a GPU record (entry lost to an overflow, never
//!   drained) or without a queued event, with `args.reason`, and for [`Marker`]s;
//! - a counter on pid 1: the GPU clock's drift against the CPU clock since the first sample of
//!   each adapter, in µs;
//! - `otherData`: generator, `qpc_hz`, the cases, calibration count and mapping uncertainty.
//!
//! Events are sorted by `ts`, metadata first. The JSON is written by hand (no serde in the
//! harness); the unit tests parse it back with a small parser of their own.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Which log an operation is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    /// A GPU wait (`FENCE_WAIT`, wait log, `WAIT_UNBLOCKED` entry).
    Wait,
    /// A GPU signal (`FENCE_SIGNAL`, signal log, `SIGNAL_EXECUTED` entry).
    Signal,
}

impl OpKind {
    fn name(self) -> &'static str {
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
    qpc_hz: u64,
    /// `(gpu, cpu, gpu_hz, bracket)` sorted by `gpu`, one per distinct `gpu`.
    samples: Vec<(u64, u64, u64, u64)>,
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

// ---------------------------------------------------------------------------------------------
// Layout: the events of the file, shared by the JSON and SVG writers.

/// A queue's track group in the output.
#[derive(Clone, Debug, PartialEq)]
struct Track {
    pid: u64,
    name: String,
    /// `HWQueue q · engine n` (the SVG's first label line).
    short: String,
    /// `<case> · adapter a` (the SVG's second label line).
    sub: String,
    group: usize,
    adapter: usize,
    queue_id: u32,
}

/// A CPU-queued → GPU-end box.
#[derive(Clone, Debug, PartialEq)]
struct OpBox {
    pid: u64,
    kind: OpKind,
    id: String,
    start: f64,
    end: f64,
    clamped: f64,
    op: FenceOp,
}

/// Something on a queue's GPU row: a stall slice (`dur > 0` possible) or a signal instant.
#[derive(Clone, Debug, PartialEq)]
struct GpuMark {
    pid: u64,
    name: String,
    ts: f64,
    dur: Option<f64>,
}

/// The pid of the ETW track.
const ETW_PID: u64 = 2;

/// A process-scoped instant (missing record, marker).
#[derive(Clone, Debug, PartialEq)]
struct Instant {
    pid: u64,
    name: String,
    ts: f64,
    reason: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Layout {
    tracks: Vec<Track>,
    boxes: Vec<OpBox>,
    gpu: Vec<GpuMark>,
    instants: Vec<Instant>,
    /// (adapter label, ts, drift µs).
    drift: Vec<(String, f64, f64)>,
    /// ETW events at their ts.
    etw: Vec<(f64, EtwMark)>,
    /// Microseconds from the origin to the last event.
    span: f64,
    uncertainty_us: f64,
    qpc_hz: u64,
}

fn pid_of(group: usize, adapter: usize, queue_id: u32) -> u64 {
    1_000_000 * (group as u64 + 1) + 10_000 * adapter as u64 + u64::from(queue_id)
}

fn layout(timelines: &[Timeline]) -> Layout {
    let qpc_hz = timelines.first().map_or(10_000_000, |t| t.qpc_hz.max(1));
    // Every time in QPC ticks first; the origin is the earliest of them.
    let mut raw_boxes = Vec::new();
    let mut raw_gpu = Vec::new();
    let mut raw_instants = Vec::new();
    let mut raw_drift = Vec::new();
    let mut raw_etw = Vec::new();
    let mut tracks: BTreeMap<u64, Track> = BTreeMap::new();
    let mut uncertainty = 0.0f64;
    for (group, tl) in timelines.iter().enumerate() {
        // The file has one clock: rescale a timeline with another QPC rate.
        let scale = qpc_hz as f64 / tl.qpc_hz.max(1) as f64;
        let mut nodes: BTreeMap<(usize, u32), u32> = BTreeMap::new();
        for q in &tl.queues {
            nodes.insert((q.adapter, q.queue_id), q.node);
        }
        let mut add_track = |adapter: usize, queue_id: u32| {
            let pid = pid_of(group, adapter, queue_id);
            tracks.entry(pid).or_insert_with(|| {
                let engine = nodes
                    .get(&(adapter, queue_id))
                    .map_or_else(|| "?".to_owned(), u32::to_string);
                Track {
                    pid,
                    name: format!(
                        "{} · HWQueue {queue_id} · engine {engine} · adapter {adapter}",
                        tl.label
                    ),
                    short: format!("HWQueue {queue_id} · engine {engine}"),
                    sub: format!("{} · adapter {adapter}", tl.label),
                    group,
                    adapter,
                    queue_id,
                }
            });
            pid
        };
        for q in &tl.queues {
            add_track(q.adapter, q.queue_id);
        }
        let mut clocks: BTreeMap<usize, ClockMap> = BTreeMap::new();
        for c in &tl.calibrations {
            clocks
                .entry(c.adapter)
                .or_insert_with(|| tl.clock(c.adapter));
        }
        for (a, clock) in &clocks {
            uncertainty = uncertainty.max(clock.uncertainty() * scale);
            let mut cal: Vec<&Calibration> = tl
                .calibrations
                .iter()
                .filter(|c| c.adapter == *a && c.gpu_hz > 0)
                .collect();
            cal.sort_by_key(|c| c.gpu);
            if let Some(first) = cal.first() {
                for c in &cal {
                    let cpu_us = (c.cpu as f64 - first.cpu as f64) * 1e6 / tl.qpc_hz as f64;
                    let gpu_us = (c.gpu as f64 - first.gpu as f64) * 1e6 / c.gpu_hz as f64;
                    raw_drift.push((
                        format!("{} · adapter {a}", tl.label),
                        c.cpu as f64 * scale,
                        gpu_us - cpu_us,
                    ));
                }
            }
        }
        let map = |adapter: usize, g: u64| {
            clocks
                .get(&adapter)
                .and_then(|c| c.to_qpc(g))
                .map(|c| c * scale)
        };
        for op in &tl.ops {
            let pid = add_track(op.adapter, op.queue_id);
            let queued = op.queued_qpc.map(|q| q as f64 * scale);
            let end = op.end_gpu.and_then(|g| map(op.adapter, g));
            let label = match op.kind {
                OpKind::Wait => format!("wait F{:#x}≥{}", op.fence, op.value),
                OpKind::Signal => format!("signal F{:#x}={}", op.fence, op.value),
            };
            match (queued, end) {
                (Some(q), Some(e)) => {
                    let clamped = (q - e).max(0.0);
                    raw_boxes.push(OpBox {
                        pid,
                        kind: op.kind,
                        id: format!(
                            "g{group}a{}q{}{}{}",
                            op.adapter,
                            op.queue_id,
                            if op.kind == OpKind::Wait { 'w' } else { 's' },
                            op.index
                        ),
                        start: q,
                        end: e.max(q),
                        clamped,
                        op: *op,
                    });
                }
                (Some(q), None) => raw_instants.push(Instant {
                    pid,
                    name: label.clone(),
                    ts: q,
                    reason: if op.end_gpu.is_some() {
                        "no calibration sample to map the GPU time".to_owned()
                    } else {
                        "no GPU record (log entry lost or not drained)".to_owned()
                    },
                }),
                (None, Some(e)) => raw_instants.push(Instant {
                    pid,
                    name: label.clone(),
                    ts: e,
                    reason: "no queued event".to_owned(),
                }),
                (None, None) => {}
            }
            if let Some(e) = end {
                match op.kind {
                    OpKind::Signal => raw_gpu.push(GpuMark {
                        pid,
                        name: label,
                        ts: e,
                        dur: None,
                    }),
                    OpKind::Wait => {
                        if let Some(o) = op
                            .observed_gpu
                            .filter(|&o| o != 0)
                            .and_then(|o| map(op.adapter, o))
                        {
                            raw_gpu.push(GpuMark {
                                pid,
                                name: format!("stall F{:#x}≥{}", op.fence, op.value),
                                ts: o.min(e),
                                dur: Some((e - o).max(0.0)),
                            });
                        }
                    }
                }
            }
        }
        for e in &tl.etw {
            raw_etw.push((e.qpc as f64 * scale, e.clone()));
        }
        for m in &tl.markers {
            let pid = m.queue_id.map_or(1, |q| add_track(m.adapter, q));
            raw_instants.push(Instant {
                pid,
                name: m.text.clone(),
                ts: m.qpc as f64 * scale,
                reason: "marker".to_owned(),
            });
        }
    }
    let origin = raw_boxes
        .iter()
        .map(|b| b.start)
        .chain(raw_gpu.iter().map(|g| g.ts))
        .chain(raw_instants.iter().map(|i| i.ts))
        .chain(raw_etw.iter().map(|e| e.0))
        .fold(f64::INFINITY, f64::min);
    // Calibrations start at adapter start, long before the first operation: they do not move
    // the origin, and the drift counter starts with the first sample at or after it.
    let origin = if origin.is_finite() {
        origin
    } else {
        raw_drift.iter().map(|d| d.1).fold(f64::INFINITY, f64::min)
    };
    let origin = if origin.is_finite() { origin } else { 0.0 };
    raw_drift.retain(|d| d.1 >= origin);
    let us = |t: f64| (t - origin) * 1e6 / qpc_hz as f64;
    let mut l = Layout {
        tracks: tracks.into_values().collect(),
        qpc_hz,
        uncertainty_us: uncertainty * 1e6 / qpc_hz as f64,
        ..Layout::default()
    };
    for mut b in raw_boxes {
        b.start = us(b.start);
        b.end = us(b.end);
        b.clamped *= 1e6 / qpc_hz as f64;
        l.span = l.span.max(b.end);
        l.boxes.push(b);
    }
    for mut g in raw_gpu {
        g.ts = us(g.ts);
        if let Some(d) = &mut g.dur {
            *d *= 1e6 / qpc_hz as f64;
        }
        l.span = l.span.max(g.ts + g.dur.unwrap_or(0.0));
        l.gpu.push(g);
    }
    for mut i in raw_instants {
        i.ts = us(i.ts);
        l.span = l.span.max(i.ts);
        l.instants.push(i);
    }
    for (n, t, d) in raw_drift {
        l.drift.push((n, us(t), d));
    }
    for (t, e) in raw_etw {
        l.span = l.span.max(us(t));
        l.etw.push((us(t), e));
    }
    l
}

// ---------------------------------------------------------------------------------------------
// JSON.

/// `s` as a JSON string literal.
fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", u32::from(c));
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A time in µs with ns precision (finite; JSON has no NaN).
fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "0".to_owned()
    }
}

/// The Chrome trace-event JSON of `timelines` (one file for the run, see the module
/// documentation).
pub fn to_json(timelines: &[Timeline]) -> String {
    let l = layout(timelines);
    let mut meta: Vec<String> = Vec::new();
    let mut events: Vec<(f64, String)> = Vec::new();
    meta.push(format!(
        r#"{{"ph":"M","name":"process_name","pid":1,"args":{{"name":{}}}}}"#,
        json_str("rvgpu run")
    ));
    meta.push(r#"{"ph":"M","name":"process_sort_index","pid":1,"args":{"sort_index":0}}"#.into());
    for (i, t) in l.tracks.iter().enumerate() {
        meta.push(format!(
            r#"{{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}}"#,
            t.pid,
            json_str(&t.name)
        ));
        meta.push(format!(
            r#"{{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}}"#,
            t.pid,
            i + 1
        ));
        for (tid, name) in [
            (1, "GPU"),
            (2, "waits (CPU queued → GPU end)"),
            (3, "signals (CPU queued → GPU end)"),
        ] {
            meta.push(format!(
                r#"{{"ph":"M","name":"thread_name","pid":{},"tid":{tid},"args":{{"name":{}}}}}"#,
                t.pid,
                json_str(name)
            ));
        }
    }
    for b in &l.boxes {
        let name = b.kind.name();
        let tid = if b.kind == OpKind::Wait { 2 } else { 3 };
        let mut args = format!(
            r#""fence":{},"value":{},"index":{}"#,
            b.op.fence, b.op.value, b.op.index
        );
        if let Some(q) = b.op.queued_qpc {
            let _ = write!(args, r#","queued_qpc":{q}"#);
        }
        if let Some(g) = b.op.end_gpu {
            let _ = write!(args, r#","end_gpu":{g}"#);
        }
        if let Some(o) = b.op.observed_gpu.filter(|&o| o != 0) {
            let _ = write!(args, r#","observed_gpu":{o}"#);
        }
        if b.op.mismatch {
            args.push_str(r#","mismatch":true"#);
        }
        if b.clamped > 0.0 {
            let _ = write!(args, r#","clamped_us":{}"#, num(b.clamped));
        }
        events.push((
            b.start,
            format!(
                r#"{{"ph":"b","cat":"fence","name":"{name}","id":{},"pid":{},"tid":{tid},"ts":{},"args":{{{args}}}}}"#,
                json_str(&b.id),
                b.pid,
                num(b.start)
            ),
        ));
        events.push((
            b.end,
            format!(
                r#"{{"ph":"e","cat":"fence","name":"{name}","id":{},"pid":{},"tid":{tid},"ts":{}}}"#,
                json_str(&b.id),
                b.pid,
                num(b.end)
            ),
        ));
    }
    for g in &l.gpu {
        let e = match g.dur {
            Some(d) => format!(
                r#"{{"ph":"X","cat":"gpu","name":{},"pid":{},"tid":1,"ts":{},"dur":{}}}"#,
                json_str(&g.name),
                g.pid,
                num(g.ts),
                num(d)
            ),
            None => format!(
                r#"{{"ph":"i","cat":"gpu","name":{},"s":"t","pid":{},"tid":1,"ts":{}}}"#,
                json_str(&g.name),
                g.pid,
                num(g.ts)
            ),
        };
        events.push((g.ts, e));
    }
    for i in &l.instants {
        events.push((
            i.ts,
            format!(
                r#"{{"ph":"i","cat":"fence","name":{},"s":"p","pid":{},"tid":1,"ts":{},"args":{{"reason":{}}}}}"#,
                json_str(&i.name),
                i.pid,
                num(i.ts),
                json_str(&i.reason)
            ),
        ));
    }
    if !l.etw.is_empty() {
        meta.push(format!(
            r#"{{"ph":"M","name":"process_name","pid":{ETW_PID},"args":{{"name":{}}}}}"#,
            json_str("ETW rvgpu.Kmd")
        ));
        meta.push(format!(
            r#"{{"ph":"M","name":"process_sort_index","pid":{ETW_PID},"args":{{"sort_index":{}}}}}"#,
            l.tracks.len() + 1
        ));
    }
    for (ts, e) in &l.etw {
        let args: Vec<String> = e
            .fields
            .iter()
            .map(|(k, v)| format!("{}:{}", json_str(k), json_str(v)))
            .collect();
        events.push((
            *ts,
            format!(
                r#"{{"ph":"i","cat":"etw","name":{},"s":"p","pid":{ETW_PID},"tid":1,"ts":{},"args":{{{}}}}}"#,
                json_str(&e.name),
                num(*ts),
                args.join(",")
            ),
        ));
    }
    for (n, ts, d) in &l.drift {
        events.push((
            *ts,
            format!(
                r#"{{"ph":"C","name":{},"pid":1,"ts":{},"args":{{"drift_us":{}}}}}"#,
                json_str(&format!("GPU clock − CPU clock ({n}, µs)")),
                num(*ts),
                num(*d)
            ),
        ));
    }
    // Stable: a box's `b` stays before its `e` at equal times.
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    let cases: Vec<String> = timelines.iter().map(|t| json_str(&t.label)).collect();
    let calibrations: usize = timelines.iter().map(|t| t.calibrations.len()).sum();
    let mut o = String::new();
    let _ = write!(
        o,
        "{{\"displayTimeUnit\":\"ns\",\n\"otherData\":{{\"generator\":\"rvgpu-whlk\",\"qpc_hz\":{},\
         \"cases\":[{}],\"calibrations\":{},\"uncertainty_us\":{},\"operations\":{}}},\n\"traceEvents\":[\n",
        l.qpc_hz,
        cases.join(","),
        calibrations,
        num(l.uncertainty_us),
        timelines.iter().map(|t| t.ops.len()).sum::<usize>()
    );
    let all: Vec<&String> = meta.iter().chain(events.iter().map(|e| &e.1)).collect();
    for (i, e) in all.iter().enumerate() {
        o.push_str(e);
        o.push_str(if i + 1 < all.len() { ",\n" } else { "\n" });
    }
    o.push_str("]}\n");
    o
}

// ---------------------------------------------------------------------------------------------
// SVG.

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Greedy interval packing: the row of each `(start, end)` so that boxes of one row do not
/// overlap; returns the rows and their count.
fn pack(spans: &[(f64, f64)]) -> (Vec<usize>, usize) {
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by(|&a, &b| spans[a].0.total_cmp(&spans[b].0));
    let mut row_end: Vec<f64> = Vec::new();
    let mut rows = vec![0; spans.len()];
    for i in order {
        let (s, e) = spans[i];
        let r = row_end
            .iter()
            .position(|&re| re <= s)
            .unwrap_or(row_end.len());
        if r == row_end.len() {
            row_end.push(e);
        } else {
            row_end[r] = e;
        }
        rows[i] = r;
    }
    let n = row_end.len();
    (rows, n)
}

/// A "nice" tick step of about `span / 8` µs.
fn tick_step(span: f64) -> f64 {
    let raw = (span / 8.0).max(1e-3);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

/// An SVG picture of `timelines` (the README screenshot's fallback, docs/logs.md#the-gpu-timeline): per
/// queue a lane with its wait boxes (light pink), signal boxes (dark pink), each from the CPU
/// queued time to the GPU end time and stacked where they overlap, and a GPU row (stalls grey,
/// signals as ticks); a time axis and a legend. `width` in pixels.
pub fn to_svg(timelines: &[Timeline], width: u32) -> String {
    const LABEL_W: f64 = 230.0;
    const ROW_H: f64 = 9.0;
    const TOP: f64 = 56.0;
    let l = layout(timelines);
    let w = f64::from(width.max(600));
    let plot_w = w - LABEL_W - 20.0;
    let span = if l.span > 0.0 { l.span } else { 1.0 };
    let x = |t: f64| LABEL_W + t / span * plot_w;
    let mut body = String::new();
    let mut y = TOP;
    for (ti, t) in l.tracks.iter().enumerate() {
        let lane_top = y;
        let mut rows_total = 0.0;
        for kind in [OpKind::Wait, OpKind::Signal] {
            let boxes: Vec<&OpBox> = l
                .boxes
                .iter()
                .filter(|b| b.pid == t.pid && b.kind == kind)
                .collect();
            let spans: Vec<(f64, f64)> = boxes.iter().map(|b| (b.start, b.end)).collect();
            let (rows, n) = pack(&spans);
            let fill = if kind == OpKind::Wait {
                "#f8bbd0"
            } else {
                "#c2185b"
            };
            for (b, r) in boxes.iter().zip(rows) {
                let bx = x(b.start);
                let bw = (x(b.end) - bx).max(1.0);
                let _ = writeln!(
                    body,
                    r##"<rect x="{bx:.1}" y="{:.1}" width="{bw:.1}" height="{:.1}" fill="{fill}" stroke="#6d1b3b" stroke-width="0.3"><title>{}</title></rect>"##,
                    y + r as f64 * ROW_H,
                    ROW_H - 1.0,
                    xml(&format!(
                        "{} F{:#x} {} #{}: {:.3}–{:.3} µs",
                        kind.name(),
                        b.op.fence,
                        b.op.value,
                        b.op.index,
                        b.start,
                        b.end
                    ))
                );
            }
            let rows_h = n.max(1) as f64 * ROW_H;
            let _ = writeln!(
                body,
                r##"<text x="{:.1}" y="{:.1}" font-size="9" fill="#555" text-anchor="end">{}</text>"##,
                LABEL_W - 6.0,
                y + ROW_H - 1.5,
                if kind == OpKind::Wait {
                    "waits"
                } else {
                    "signals"
                }
            );
            y += rows_h + 2.0;
            rows_total += rows_h + 2.0;
        }
        // GPU row.
        let _ = writeln!(
            body,
            r##"<text x="{:.1}" y="{:.1}" font-size="9" fill="#555" text-anchor="end">GPU</text>"##,
            LABEL_W - 6.0,
            y + ROW_H - 1.5
        );
        for g in l.gpu.iter().filter(|g| g.pid == t.pid) {
            match g.dur {
                Some(d) => {
                    let _ = writeln!(
                        body,
                        r##"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="#757575"><title>{}</title></rect>"##,
                        x(g.ts),
                        (x(g.ts + d) - x(g.ts)).max(1.0),
                        ROW_H - 1.0,
                        xml(&g.name)
                    );
                }
                None => {
                    let _ = writeln!(
                        body,
                        r##"<line x1="{0:.1}" x2="{0:.1}" y1="{y:.1}" y2="{1:.1}" stroke="#880e4f" stroke-width="1"/>"##,
                        x(g.ts),
                        y + ROW_H - 1.0
                    );
                }
            }
        }
        for i in l.instants.iter().filter(|i| i.pid == t.pid) {
            let _ = writeln!(
                body,
                r##"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="#ff6f00"><title>{}</title></circle>"##,
                x(i.ts),
                lane_top + 3.0,
                xml(&format!("{}: {}", i.name, i.reason))
            );
        }
        y += ROW_H + 2.0;
        rows_total += ROW_H + 2.0;
        let mid = lane_top + rows_total / 2.0;
        let _ = writeln!(
            body,
            r##"<text x="8" y="{:.1}" font-size="11" fill="#222">{}<title>{}</title></text><text x="8" y="{:.1}" font-size="9" fill="#666">{}</text>"##,
            mid - 1.0,
            xml(&t.short),
            xml(&t.name),
            mid + 10.0,
            xml(&t.sub)
        );
        let _ = writeln!(
            body,
            r##"<line x1="0" x2="{w:.0}" y1="{:.1}" y2="{0:.1}" stroke="{}" stroke-width="0.5"/>"##,
            y + 3.0,
            if ti + 1 == l.tracks.len() {
                "#999"
            } else {
                "#ddd"
            }
        );
        y += 8.0;
    }
    // Axis.
    let step = tick_step(span);
    let mut axis = String::new();
    let mut t = 0.0;
    while t <= span + 1e-9 {
        let tx = x(t);
        let _ = writeln!(
            axis,
            r##"<line x1="{tx:.1}" x2="{tx:.1}" y1="{:.1}" y2="{y:.1}" stroke="#eee" stroke-width="0.5"/><text x="{tx:.1}" y="{:.1}" font-size="9" fill="#444" text-anchor="middle">{}</text>"##,
            TOP - 4.0,
            TOP - 8.0,
            if step >= 1000.0 {
                format!("{:.1} ms", t / 1000.0)
            } else {
                format!("{t:.0} µs")
            }
        );
        t += step;
    }
    let h = y + 24.0;
    let ops: usize = timelines.iter().map(|t| t.ops.len()).sum();
    let mut o = String::new();
    let _ = writeln!(
        o,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="DejaVu Sans, sans-serif">"##
    );
    let _ = writeln!(o, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(
        o,
        r##"<text x="8" y="18" font-size="14" fill="#111">rvgpu GPU timeline: {ops} native-fence operations, CPU queued → GPU end (calibrated, ±{:.3} µs)</text>"##,
        l.uncertainty_us
    );
    let legend = [
        ("#f8bbd0", "wait"),
        ("#c2185b", "signal"),
        ("#757575", "GPU wait stall"),
    ];
    for (i, (c, n)) in legend.iter().enumerate() {
        let lx = 8.0 + i as f64 * 130.0;
        let _ = writeln!(
            o,
            r##"<rect x="{lx:.0}" y="28" width="14" height="9" fill="{c}"/><text x="{:.0}" y="36" font-size="10" fill="#222">{n}</text>"##,
            lx + 18.0
        );
    }
    o.push_str(&axis);
    o.push_str(&body);
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    // -----------------------------------------------------------------------------------------
    // A small JSON parser (RFC 8259 grammar, enough to validate the writer's output: no serde
    // in the harness).

    #[derive(Clone, Debug, PartialEq)]
    enum Json {
        Null,
        Bool(bool),
        Num(f64),
        Str(String),
        Arr(Vec<Json>),
        Obj(Vec<(String, Json)>),
    }

    impl Json {
        fn get(&self, k: &str) -> Option<&Json> {
            match self {
                Self::Obj(m) => m.iter().find(|(n, _)| n == k).map(|(_, v)| v),
                _ => None,
            }
        }
        fn str(&self, k: &str) -> Option<&str> {
            match self.get(k) {
                Some(Self::Str(s)) => Some(s),
                _ => None,
            }
        }
        fn num(&self, k: &str) -> Option<f64> {
            match self.get(k) {
                Some(Self::Num(n)) => Some(*n),
                _ => None,
            }
        }
    }

    struct Parser<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl Parser<'_> {
        fn ws(&mut self) {
            while self
                .s
                .get(self.i)
                .is_some_and(|c| matches!(c, b' ' | b'\n' | b'\r' | b'\t'))
            {
                self.i += 1;
            }
        }
        fn eat(&mut self, c: u8) -> Result<(), String> {
            self.ws();
            if self.s.get(self.i) == Some(&c) {
                self.i += 1;
                Ok(())
            } else {
                Err(format!("expected '{}' at byte {}", c as char, self.i))
            }
        }
        fn lit(&mut self, word: &str, v: Json) -> Result<Json, String> {
            if self.s[self.i..].starts_with(word.as_bytes()) {
                self.i += word.len();
                Ok(v)
            } else {
                Err(format!("bad literal at byte {}", self.i))
            }
        }
        fn value(&mut self) -> Result<Json, String> {
            self.ws();
            match self.s.get(self.i) {
                Some(b'{') => self
                    .items(b'}', |p| {
                        p.ws();
                        let k = p.string()?;
                        p.eat(b':')?;
                        Ok((k, p.value()?))
                    })
                    .map(Json::Obj),
                Some(b'[') => self.items(b']', Self::value).map(Json::Arr),
                Some(b'"') => self.string().map(Json::Str),
                Some(b't') => self.lit("true", Json::Bool(true)),
                Some(b'f') => self.lit("false", Json::Bool(false)),
                Some(b'n') => self.lit("null", Json::Null),
                Some(_) => self.number(),
                None => Err("unexpected end".into()),
            }
        }
        /// The comma-separated items of an object or array whose opening bracket is at the
        /// cursor, through the `close` bracket.
        fn items<T>(
            &mut self,
            close: u8,
            mut item: impl FnMut(&mut Self) -> Result<T, String>,
        ) -> Result<Vec<T>, String> {
            self.i += 1;
            let mut v = Vec::new();
            self.ws();
            if self.s.get(self.i) == Some(&close) {
                self.i += 1;
                return Ok(v);
            }
            loop {
                v.push(item(self)?);
                self.ws();
                match self.s.get(self.i) {
                    Some(b',') => self.i += 1,
                    Some(c) if *c == close => {
                        self.i += 1;
                        return Ok(v);
                    }
                    _ => {
                        return Err(format!(
                            "expected , or {} at byte {}",
                            close as char, self.i
                        ))
                    }
                }
            }
        }
        fn number(&mut self) -> Result<Json, String> {
            let start = self.i;
            if self.s.get(self.i) == Some(&b'-') {
                self.i += 1;
            }
            let digits = |p: &mut Self| {
                let d = p.i;
                while p.s.get(p.i).is_some_and(u8::is_ascii_digit) {
                    p.i += 1;
                }
                p.i > d
            };
            if self.s.get(self.i) == Some(&b'0') {
                self.i += 1;
            } else if !digits(self) {
                return Err(format!("bad number at byte {start}"));
            }
            if self.s.get(self.i) == Some(&b'.') {
                self.i += 1;
                if !digits(self) {
                    return Err(format!("bad fraction at byte {start}"));
                }
            }
            if matches!(self.s.get(self.i), Some(b'e' | b'E')) {
                self.i += 1;
                if matches!(self.s.get(self.i), Some(b'+' | b'-')) {
                    self.i += 1;
                }
                if !digits(self) {
                    return Err(format!("bad exponent at byte {start}"));
                }
            }
            let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|e| e.to_string())?;
            text.parse().map(Json::Num).map_err(|e| format!("{e}"))
        }
        fn string(&mut self) -> Result<String, String> {
            if self.s.get(self.i) != Some(&b'"') {
                return Err(format!("expected string at byte {}", self.i));
            }
            self.i += 1;
            let mut out = Vec::new();
            loop {
                match self.s.get(self.i).copied() {
                    None => return Err("unterminated string".into()),
                    Some(b'"') => {
                        self.i += 1;
                        return String::from_utf8(out).map_err(|e| e.to_string());
                    }
                    Some(b'\\') => {
                        self.i += 1;
                        let c = self.s.get(self.i).copied().ok_or("bad escape")?;
                        self.i += 1;
                        match c {
                            b'"' | b'\\' | b'/' => out.push(c),
                            b'n' => out.push(b'\n'),
                            b'r' => out.push(b'\r'),
                            b't' => out.push(b'\t'),
                            b'b' => out.push(8),
                            b'f' => out.push(12),
                            b'u' => {
                                let hex = self.s.get(self.i..self.i + 4).ok_or("short \\u")?;
                                let v = u32::from_str_radix(
                                    std::str::from_utf8(hex).map_err(|e| e.to_string())?,
                                    16,
                                )
                                .map_err(|e| e.to_string())?;
                                self.i += 4;
                                let ch = char::from_u32(v).ok_or("surrogate")?;
                                let mut b = [0; 4];
                                out.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                            }
                            _ => return Err(format!("bad escape at byte {}", self.i)),
                        }
                    }
                    Some(c) if c < 0x20 => {
                        return Err(format!("control character in string at byte {}", self.i))
                    }
                    Some(c) => {
                        out.push(c);
                        self.i += 1;
                    }
                }
            }
        }
    }

    fn parse(s: &str) -> Result<Json, String> {
        let mut p = Parser {
            s: s.as_bytes(),
            i: 0,
        };
        let v = p.value()?;
        p.ws();
        if p.i != s.len() {
            return Err(format!("trailing data at byte {}", p.i));
        }
        Ok(v)
    }

    #[test]
    fn json_parser_accepts_and_rejects() {
        assert!(parse(r#"{"a":[1,-2.5e3,true,null,"x\"\u00e9"]}"#).is_ok());
        for bad in [
            "{",
            r#"{"a":}"#,
            "[1,]",
            "01",
            r#""a"#,
            "{} x",
            "[1 2]",
            "\"\u{1}\"",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    // -----------------------------------------------------------------------------------------
    // Synthetic data: 10 MHz QPC, 1 GHz GPU clock, GPU = (QPC - 1000) * 100 + 5000 on adapter 0.

    const QPC_HZ: u64 = 10_000_000;

    fn cal(adapter: usize, gpu: u64, cpu: u64) -> Calibration {
        Calibration {
            adapter,
            gpu_hz: 1_000_000_000,
            gpu,
            cpu,
            bracket: 4,
        }
    }

    fn op(queue_id: u32, kind: OpKind, index: u32, queued: u64, end_gpu: Option<u64>) -> FenceOp {
        FenceOp {
            adapter: 0,
            queue_id,
            kind,
            index,
            fence: 0x40 + queue_id,
            value: u64::from(index) + 1,
            queued_qpc: Some(queued),
            observed_gpu: None,
            end_gpu,
            mismatch: false,
        }
    }

    fn gpu_of(qpc: u64) -> u64 {
        (qpc - 1000) * 100 + 5000
    }

    fn synthetic() -> Timeline {
        let mut t = Timeline::new("Logs.Synthetic \"quoted\"", QPC_HZ);
        t.calibrations = vec![cal(0, gpu_of(1000), 1000), cal(0, gpu_of(3000), 3000)];
        t.queues = vec![
            QueueTrack {
                adapter: 0,
                queue_id: 3,
                node: 0,
                process: Some(1),
            },
            QueueTrack {
                adapter: 0,
                queue_id: 4,
                node: 1,
                process: Some(2),
            },
        ];
        // Overlapping signals on queue 3 (queued together, ending one after another).
        for i in 0..4 {
            t.ops.push(op(
                3,
                OpKind::Signal,
                i,
                1100,
                Some(gpu_of(1200 + 10 * u64::from(i))),
            ));
        }
        // Waits on queue 4, one stalled.
        let mut w = op(4, OpKind::Wait, 0, 1100, Some(gpu_of(1250)));
        w.observed_gpu = Some(gpu_of(1150));
        t.ops.push(w);
        t.ops.push(op(4, OpKind::Wait, 1, 1300, Some(gpu_of(1310))));
        // Lost entry: no GPU record.
        t.ops.push(op(4, OpKind::Wait, 2, 1400, None));
        t.markers.push(Marker {
            adapter: 0,
            queue_id: Some(4),
            qpc: 1400,
            text: "log overflow: 1 entry lost".into(),
        });
        t
    }

    fn events(j: &Json) -> &[Json] {
        match j.get("traceEvents") {
            Some(Json::Arr(a)) => a,
            other => panic!("traceEvents: {other:?}"),
        }
    }

    /// docs/logs.md#the-gpu-timeline `timeline_json_is_valid_and_async_pairs_match`: the file parses, every
    /// `b` has exactly one `e` with the same id, name, category and pid at a time not before
    /// it, ids are unique, metadata names every queue and comes first, and the events are
    /// sorted by time.
    #[test]
    fn ddi_04_etw_events_are_instants_on_their_own_track() {
        let mut tl = synthetic();
        tl.etw.push(EtwMark {
            qpc: 1150,
            name: "HwQueueCreate".into(),
            fields: vec![("QueueId".into(), "3".into())],
        });
        let text = to_json(std::slice::from_ref(&tl));
        let j = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let ev = events(&j);
        let track = ev
            .iter()
            .find(|e| {
                e.str("name") == Some("process_name")
                    && e.get("args").and_then(|a| a.str("name")) == Some("ETW rvgpu.Kmd")
            })
            .and_then(|e| e.num("pid"))
            .expect("the ETW track");
        let etw: Vec<&Json> = ev.iter().filter(|e| e.str("cat") == Some("etw")).collect();
        assert_eq!(etw.len(), 1);
        assert_eq!(etw[0].str("ph"), Some("i"));
        assert_eq!(etw[0].num("pid"), Some(track));
        assert_eq!(etw[0].str("name"), Some("HwQueueCreate"));
        assert_eq!(etw[0].get("args").and_then(|a| a.str("QueueId")), Some("3"));
        // Without ETW events there is no ETW track.
        let plain = to_json(std::slice::from_ref(&synthetic()));
        assert!(!plain.contains("ETW rvgpu.Kmd"));
    }

    #[test]
    fn timeline_json_is_valid_and_async_pairs_match() {
        let tl = synthetic();
        let text = to_json(std::slice::from_ref(&tl));
        let j = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(j.str("displayTimeUnit"), Some("ns"));
        let other = j.get("otherData").expect("otherData");
        assert_eq!(other.num("qpc_hz"), Some(QPC_HZ as f64));
        assert_eq!(other.num("operations"), Some(7.0));
        let ev = events(&j);
        let mut begins: BTreeMap<String, (&Json, usize)> = BTreeMap::new();
        let mut ends: BTreeMap<String, &Json> = BTreeMap::new();
        let mut seen_non_meta = false;
        let mut last_ts = f64::NEG_INFINITY;
        let mut names = Vec::new();
        for e in ev {
            let ph = e.str("ph").expect("ph");
            if ph == "M" {
                assert!(!seen_non_meta, "metadata after events");
                if e.str("name") == Some("process_name") {
                    names.push(
                        e.get("args")
                            .and_then(|a| a.str("name"))
                            .expect("name")
                            .to_owned(),
                    );
                }
                continue;
            }
            seen_non_meta = true;
            let ts = e.num("ts").expect("ts");
            assert!(ts >= last_ts, "not sorted: {ts} after {last_ts}");
            assert!(ts >= 0.0);
            last_ts = ts;
            assert!(e.num("pid").is_some());
            match ph {
                "b" => {
                    let id = e.str("id").expect("id").to_owned();
                    assert!(begins.insert(id, (e, 0)).is_none(), "duplicate id");
                }
                "e" => {
                    let id = e.str("id").expect("id").to_owned();
                    let (b, _) = begins.get(&id).expect("e before its b");
                    for k in ["name", "cat"] {
                        assert_eq!(b.str(k), e.str(k), "{k} of {id}");
                    }
                    assert_eq!(b.num("pid"), e.num("pid"));
                    assert!(e.num("ts") >= b.num("ts"));
                    assert!(ends.insert(id, e).is_none(), "two ends");
                }
                "X" => assert!(e.num("dur").expect("dur") >= 0.0),
                "i" | "C" => {}
                other => panic!("unexpected phase {other}"),
            }
        }
        assert_eq!(begins.len(), 6, "six operations have both times");
        assert_eq!(begins.len(), ends.len());
        assert!(names.iter().any(|n| n.contains("HWQueue 3 · engine 0")));
        assert!(names.iter().any(|n| n.contains("HWQueue 4 · engine 1")));
        assert!(names.iter().any(|n| n.contains("\"quoted\"")));
        // The lost wait and the marker are instants with a reason.
        let reasons: Vec<&str> = ev
            .iter()
            .filter(|e| e.str("ph") == Some("i") && e.str("s") == Some("p"))
            .filter_map(|e| e.get("args").and_then(|a| a.str("reason")))
            .collect();
        assert!(reasons.iter().any(|r| r.contains("lost")), "{reasons:?}");
        assert!(reasons.contains(&"marker"));
    }

    /// docs/logs.md#the-gpu-timeline `timeline_gpu_to_cpu_mapping_is_causal`, mapping part: interpolation
    /// between samples (absorbing drift), extrapolation with the frequency ratio outside them.
    #[test]
    fn timeline_gpu_to_cpu_mapping_interpolates_and_extrapolates() {
        let none = ClockMap::new(QPC_HZ, []);
        assert!(none.is_empty());
        assert_eq!(none.to_qpc(5), None);
        // Two samples 2000 QPC ticks apart, but the GPU ran 1 % fast: 202_000 GPU ticks.
        let m = ClockMap::new(
            QPC_HZ,
            [cal(0, 1_000_000 + 202_000, 3000), cal(0, 1_000_000, 1000)],
        );
        let close = |a: Option<f64>, b: f64| {
            let a = a.expect("mapped");
            assert!((a - b).abs() < 1e-6, "{a} != {b}");
        };
        close(m.to_qpc(1_000_000), 1000.0);
        close(m.to_qpc(1_202_000), 3000.0);
        close(m.to_qpc(1_101_000), 2000.0); // halfway
        close(m.to_qpc(1_000_101), 1000.0 + 101.0 * 2000.0 / 202_000.0);
        // Outside: nominal 100 GPU ticks per QPC tick.
        close(m.to_qpc(900_000), 0.0);
        close(m.to_qpc(1_212_000), 3100.0);
        close(m.to_qpc(0), -9000.0);
        assert!((m.uncertainty() - 2.0).abs() < 1e-9);
        // A duplicate GPU counter keeps the tighter sample.
        let mut loose = cal(0, 1_000_000, 1010);
        loose.bracket = 100;
        let d = ClockMap::new(QPC_HZ, [loose, cal(0, 1_000_000, 1000)]);
        close(d.to_qpc(1_000_000), 1000.0);
    }

    /// Causality (docs/logs.md#the-gpu-timeline): operations mapped within tolerance pass, a GPU end well before the
    /// queued time is reported.
    #[test]
    fn timeline_gpu_to_cpu_mapping_is_causal() {
        let mut tl = synthetic();
        assert!(tl.causality_violations().is_empty());
        // 4 QPC ticks early: inside half the bracket (2) + 1 µs (10 ticks).
        tl.ops
            .push(op(3, OpKind::Signal, 9, 2000, Some(gpu_of(1996))));
        assert!(tl.causality_violations().is_empty());
        tl.ops
            .push(op(3, OpKind::Signal, 10, 2500, Some(gpu_of(2400))));
        let v = tl.causality_violations();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("#10"), "{}", v[0]);
    }

    /// One track group per queue, each operation's box on its queue's pid, times in µs from
    /// the earliest event (queued at QPC 1100 = 0 µs; 10 QPC ticks = 1 µs).
    #[test]
    fn timeline_boxes_per_queue() {
        let l = layout(&[synthetic()]);
        assert_eq!(l.tracks.len(), 2);
        let pid3 = pid_of(0, 0, 3);
        let pid4 = pid_of(0, 0, 4);
        assert_eq!(l.tracks[0].pid, pid3);
        assert_eq!(l.tracks[1].pid, pid4);
        let on = |pid, kind| {
            l.boxes
                .iter()
                .filter(|b| b.pid == pid && b.kind == kind)
                .count()
        };
        assert_eq!(on(pid3, OpKind::Signal), 4);
        assert_eq!(on(pid3, OpKind::Wait), 0);
        assert_eq!(on(pid4, OpKind::Wait), 2);
        let first = l
            .boxes
            .iter()
            .find(|b| b.pid == pid3 && b.op.index == 0)
            .expect("box");
        assert!(first.start.abs() < 1e-9);
        assert!((first.end - 10.0).abs() < 1e-6, "{}", first.end);
        // The stalled wait has a GPU slice [observed, end] = [5, 15] µs.
        let stall = l.gpu.iter().find(|g| g.dur.is_some()).expect("stall");
        assert!((stall.ts - 5.0).abs() < 1e-6 && (stall.dur.unwrap_or(0.0) - 10.0).abs() < 1e-6);
        // Four signal ticks on queue 3's GPU row.
        assert_eq!(
            l.gpu
                .iter()
                .filter(|g| g.pid == pid3 && g.dur.is_none())
                .count(),
            4
        );
        // Two cases in one file: separate pids, one time base.
        let mut second = synthetic();
        second.label = "Logs.Second".into();
        let l2 = layout(&[synthetic(), second]);
        assert_eq!(l2.tracks.len(), 4);
        assert!(l2.tracks.iter().any(|t| t.pid == pid_of(1, 0, 4)));
    }

    /// No negative durations: a GPU end that maps before the queued time (calibration error)
    /// is clamped to the queued time and the amount is recorded; stalls never go negative.
    #[test]
    fn timeline_has_no_negative_durations() {
        let mut tl = synthetic();
        tl.ops
            .push(op(3, OpKind::Signal, 20, 2000, Some(gpu_of(1900))));
        let mut w = op(4, OpKind::Wait, 21, 2000, Some(gpu_of(2100)));
        w.observed_gpu = Some(gpu_of(2200)); // observed after end: bogus, clamped
        tl.ops.push(w);
        let l = layout(std::slice::from_ref(&tl));
        assert!(l.boxes.iter().all(|b| b.end >= b.start));
        let clamped = l.boxes.iter().find(|b| b.op.index == 20).expect("box");
        assert!((clamped.clamped - 10.0).abs() < 1e-6, "{}", clamped.clamped);
        assert!(l.gpu.iter().all(|g| g.dur.unwrap_or(0.0) >= 0.0));
        let j = parse(&to_json(&[tl])).expect("json");
        for e in events(&j) {
            if let Some(d) = e.num("dur") {
                assert!(d >= 0.0);
            }
        }
        assert!(to_json(&[]).contains("\"traceEvents\""));
        assert!(parse(&to_json(&[])).is_ok());
    }

    #[test]
    fn timeline_json_escapes_strings() {
        assert_eq!(json_str("a\"b\\c\nd\u{1}é"), "\"a\\\"b\\\\c\\nd\\u0001é\"");
        let Ok(Json::Str(s)) = parse(&json_str("x\t\"y\"\u{1f}")) else {
            panic!("escaped string does not parse");
        };
        assert_eq!(s, "x\t\"y\"\u{1f}");
    }

    /// docs/logs.md#the-gpu-timeline `timeline_svg_renders`: one rect per box plus legend and stalls, the
    /// queue names, balanced tags.
    #[test]
    fn timeline_svg_renders() {
        let svg = to_svg(&[synthetic()], 1200);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // 6 boxes + 1 stall + background + 3 legend swatches.
        assert_eq!(svg.matches("<rect").count(), 11);
        assert_eq!(
            svg.matches("<rect").count(),
            svg.matches("</rect>").count() + 4
        );
        assert!(svg.contains("HWQueue 3 · engine 0"));
        assert!(svg.contains("&quot;quoted&quot;"));
        assert_eq!(
            svg.matches("<title>").count(),
            svg.matches("</title>").count()
        );
        assert!(!to_svg(&[], 800).is_empty());
        assert_eq!(
            pack(&[(0.0, 2.0), (1.0, 3.0), (2.0, 4.0)]),
            (vec![0, 1, 0], 2)
        );
        assert!((tick_step(1000.0) - 200.0).abs() < 1e-9);
    }
}
