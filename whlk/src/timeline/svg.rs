//! The SVG picture of the same events.

use super::layout::{layout, OpBox};
use super::model::{OpKind, Timeline};
use std::fmt::Write as _;

// ---------------------------------------------------------------------------------------------
// SVG.

pub(super) fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Greedy interval packing: the row of each `(start, end)` so that boxes of one row do not
/// overlap; returns the rows and their count.
pub(super) fn pack(spans: &[(f64, f64)]) -> (Vec<usize>, usize) {
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
pub(super) fn tick_step(span: f64) -> f64 {
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
