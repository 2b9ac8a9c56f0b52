//! The events of the file, laid out once for both writers.

use super::model::{Calibration, ClockMap, EtwMark, FenceOp, OpKind, Timeline};
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------------
// Layout: the events of the file, shared by the JSON and SVG writers.

/// A queue's track group in the output.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Track {
    pub(super) pid: u64,
    pub(super) name: String,
    /// `HWQueue q · engine n` (the SVG's first label line).
    pub(super) short: String,
    /// `<case> · adapter a` (the SVG's second label line).
    pub(super) sub: String,
    pub(super) group: usize,
    pub(super) adapter: usize,
    pub(super) queue_id: u32,
}

/// A CPU-queued → GPU-end box.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct OpBox {
    pub(super) pid: u64,
    pub(super) kind: OpKind,
    pub(super) id: String,
    pub(super) start: f64,
    pub(super) end: f64,
    pub(super) clamped: f64,
    pub(super) op: FenceOp,
}

/// Something on a queue's GPU row: a stall slice (`dur > 0` possible) or a signal instant.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct GpuMark {
    pub(super) pid: u64,
    pub(super) name: String,
    pub(super) ts: f64,
    pub(super) dur: Option<f64>,
}

/// The pid of the ETW track.
pub(super) const ETW_PID: u64 = 2;

/// A process-scoped instant (missing record, marker).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Instant {
    pub(super) pid: u64,
    pub(super) name: String,
    pub(super) ts: f64,
    pub(super) reason: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Layout {
    pub(super) tracks: Vec<Track>,
    pub(super) boxes: Vec<OpBox>,
    pub(super) gpu: Vec<GpuMark>,
    pub(super) instants: Vec<Instant>,
    /// (adapter label, ts, drift µs).
    pub(super) drift: Vec<(String, f64, f64)>,
    /// ETW events at their ts.
    pub(super) etw: Vec<(f64, EtwMark)>,
    /// Microseconds from the origin to the last event.
    pub(super) span: f64,
    pub(super) uncertainty_us: f64,
    pub(super) qpc_hz: u64,
}

pub(super) fn pid_of(group: usize, adapter: usize, queue_id: u32) -> u64 {
    1_000_000 * (group as u64 + 1) + 10_000 * adapter as u64 + u64::from(queue_id)
}

pub(super) fn layout(timelines: &[Timeline]) -> Layout {
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
