//! The writers against synthetic timelines, their JSON parsed back.

use super::json::*;
use super::layout::*;
use super::model::*;
use super::svg::*;
use std::collections::BTreeMap;

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
