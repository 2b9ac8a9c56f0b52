//! The results table printed at the end of a run.

use std::fmt::Write as _;

use crate::runner::{totals, CaseReport};

/// Longest reason shown in the table; the JUnit report keeps the full text.
const REASON_WIDTH: usize = 72;

fn clip(s: &str, width: usize) -> String {
    let one_line = s.replace('\n', " ");
    if one_line.chars().count() <= width {
        one_line
    } else {
        let mut t: String = one_line.chars().take(width.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Renders the table (case, result, duration, requirements, reason) and a summary line
/// `N passed, N failed, N skipped`.
pub fn table(backend: &str, reports: &[CaseReport]) -> String {
    let rows: Vec<[String; 5]> = reports
        .iter()
        .map(|r| {
            [
                r.name.to_owned(),
                r.outcome.label().to_owned(),
                format!("{:.1} ms", r.duration.as_secs_f64() * 1000.0),
                r.requirements.join(" "),
                clip(r.outcome.reason(), REASON_WIDTH),
            ]
        })
        .collect();
    let headers = ["case", "result", "duration", "requirements", "reason"];
    let mut widths = headers.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let _ = writeln!(out, "rvgpu-whlk: backend {backend}");
    let line = |out: &mut String, cells: &[String]| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            let pad = w.saturating_sub(cell.chars().count());
            l.push_str(cell);
            l.extend(std::iter::repeat_n(' ', pad));
        }
        let _ = writeln!(out, "{}", l.trim_end());
    };
    line(&mut out, &headers.map(str::to_owned));
    line(&mut out, &widths.map(|w| "-".repeat(w)));
    for row in &rows {
        line(&mut out, row);
    }
    let (p, f, s) = totals(reports);
    let _ = writeln!(out);
    let _ = writeln!(out, "{p} passed, {f} failed, {s} skipped");
    out
}
