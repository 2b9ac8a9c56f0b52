//! The Chrome trace-event JSON writer.

use super::layout::{layout, ETW_PID};
use super::model::{OpKind, Timeline};
use std::fmt::Write as _;

// ---------------------------------------------------------------------------------------------
// JSON.

/// `s` as a JSON string literal.
pub(super) fn json_str(s: &str) -> String {
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
pub(super) fn num(x: f64) -> String {
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
