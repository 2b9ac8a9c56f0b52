//! Turning the device's fence events into `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` reports
//! (NF-14, NF-15), in the ISR.
//!
//! The contract with the OS: a fence whose signal needed an interrupt is either named in the
//! report's array or covered by a report with a NULL array ("scan every native-fence wait");
//! a named handle is always one the OS handed out and has not destroyed. So every doubt —
//! an unresolvable tag, a tag-less report from the device, more fences than the array holds,
//! a lost event — becomes a NULL report for that engine, never a guess.
//!
//! Events are batched per engine as they are drained (the device posts them in order per
//! engine, usually one engine at a time), with a fixed array on the ISR's stack.

/// Handles per report; more in one batch turns the report into NULL. 24H2 copies at most 8
/// at ISR time and turns a longer array into "scan" itself
/// (`M:VidSchiProcessIsrNativeFenceSignaled` @0x140052784); saying NULL here means the same on
/// every reading.
pub const MAX_NAMED: usize = 8;

/// One report to hand to `DxgkCbNotifyInterrupt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report<'a> {
    /// Native fences signalled on `engine`: the named handles, or `None` for "scan all".
    Native {
        engine: u32,
        handles: Option<&'a [usize]>,
    },
    /// A legacy monitored fence was signalled on `engine` (MF-04).
    Legacy { engine: u32 },
    /// Optimized form (LOG-08, `OptimizedNativeFenceSignaledInterrupt`): read the signal log
    /// of `hw_queue` (a KMD queue handle), or of every queue on `engine` when `None`;
    /// `evaluate_all` also asks the OS to scan every waiter (`EvaluateLegacyMonitoredFences`).
    NativeQueue {
        engine: u32,
        hw_queue: Option<usize>,
        evaluate_all: bool,
    },
}

/// A pending optimized report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pending {
    engine: u32,
    hw_queue: Option<usize>,
    evaluate_all: bool,
}

/// Accumulates one ISR pass's fence events.
#[derive(Debug)]
pub struct Batch {
    engine: Option<u32>,
    handles: [usize; MAX_NAMED],
    len: usize,
    scan_all: bool,
    /// Engines that already got a legacy report in this pass (bit per engine).
    legacy_done: u32,
    /// Per-queue reports (LOG-08) instead of fence arrays.
    optimized: bool,
    pending: Option<Pending>,
    /// Engines that already got a NULL queue report in this pass, and those whose NULL
    /// report also asked for a full scan (bit per engine).
    null_done: u32,
    null_eval_done: u32,
}

impl Default for Batch {
    fn default() -> Self {
        Self {
            engine: None,
            handles: [0; MAX_NAMED],
            len: 0,
            scan_all: false,
            legacy_done: 0,
            optimized: false,
            pending: None,
            null_done: 0,
            null_eval_done: 0,
        }
    }
}

impl Batch {
    /// A batch in the optimized form (LOG-08): native events become [`Report::NativeQueue`].
    pub fn optimized() -> Self {
        Self {
            optimized: true,
            ..Self::default()
        }
    }

    /// A native-fence event on `engine` in the optimized form: `hw_queue` is the KMD handle
    /// of the queue that ran the signal if it has both logs, else `None` (read every queue's
    /// log on the engine), with `evaluate_all` when a log read could miss the signal.
    /// Consecutive events of one queue merge; a NULL report of an engine absorbs the later
    /// events of that engine in this pass (the OS reads the logs after the ISR).
    pub fn native_queue(
        &mut self,
        engine: u32,
        hw_queue: Option<usize>,
        evaluate_all: bool,
        emit: &mut impl FnMut(Report<'_>),
    ) {
        let bit = 1u32.checked_shl(engine).unwrap_or(0);
        let covered = |done: u32| bit != 0 && done & bit != 0;
        if covered(self.null_eval_done) || (!evaluate_all && covered(self.null_done)) {
            return;
        }
        if let Some(p) = self.pending.as_mut() {
            if p.engine == engine && (p.hw_queue.is_none() || p.hw_queue == hw_queue) {
                p.evaluate_all |= evaluate_all;
                return;
            }
            if p.engine == engine && hw_queue.is_none() {
                // A NULL report covers the named queue it would replace.
                *p = Pending {
                    engine,
                    hw_queue: None,
                    evaluate_all,
                };
                return;
            }
        }
        self.flush(emit);
        self.pending = Some(Pending {
            engine,
            hw_queue,
            evaluate_all,
        });
    }
    /// A native-fence event on `engine`, resolved to an OS handle if the tag was valid.
    pub fn native(
        &mut self,
        engine: u32,
        handle: Option<usize>,
        emit: &mut impl FnMut(Report<'_>),
    ) {
        if self.optimized {
            // No queue to name: every log of the engine and every waiter.
            self.native_queue(engine, None, true, emit);
            return;
        }
        if self.engine != Some(engine) {
            self.flush(emit);
            self.engine = Some(engine);
        }
        match handle {
            Some(h) if self.handles.iter().take(self.len).any(|&x| x == h) => {}
            Some(h) if self.len < MAX_NAMED => {
                if let Some(slot) = self.handles.get_mut(self.len) {
                    *slot = h;
                    self.len = self.len.saturating_add(1);
                }
            }
            _ => self.scan_all = true,
        }
    }

    /// A legacy monitored-fence event on `engine`: one report per engine per pass.
    pub fn legacy(&mut self, engine: u32, emit: &mut impl FnMut(Report<'_>)) {
        let bit = 1u32.checked_shl(engine).unwrap_or(0);
        if bit == 0 || self.legacy_done & bit == 0 {
            self.legacy_done |= bit;
            emit(Report::Legacy { engine });
        }
    }

    /// A `PROGRESS` event (a batch completed) of a hardware queue on `engine`: the OS reads
    /// the queue's progress fence, so a monitored progress fence needs the legacy report
    /// only. `native_progress` (the queue's progress fence is a native fence, or the queue is
    /// not known any more) adds a NULL native report: the write is in no signal log and no
    /// fence array can name it. Reporting it for every batch would make the OS read every
    /// log of the engine (and, with LOG-08, resample native fences) at every completion.
    pub fn progress(
        &mut self,
        engine: u32,
        native_progress: bool,
        emit: &mut impl FnMut(Report<'_>),
    ) {
        self.legacy(engine, emit);
        if native_progress {
            self.native(engine, None, emit);
        }
    }

    /// Emits the pending native report, if any.
    pub fn flush(&mut self, emit: &mut impl FnMut(Report<'_>)) {
        if let Some(p) = self.pending.take() {
            if p.hw_queue.is_none() {
                let bit = 1u32.checked_shl(p.engine).unwrap_or(0);
                self.null_done |= bit;
                if p.evaluate_all {
                    self.null_eval_done |= bit;
                }
            }
            emit(Report::NativeQueue {
                engine: p.engine,
                hw_queue: p.hw_queue,
                evaluate_all: p.evaluate_all,
            });
        }
        if let Some(engine) = self.engine.take() {
            let handles = if self.scan_all {
                None
            } else {
                self.handles.get(..self.len)
            };
            emit(Report::Native { engine, handles });
        }
        self.len = 0;
        self.scan_all = false;
    }

    /// Events may have been lost (ring overflow): every engine gets a legacy report (the OS
    /// scans its monitored fences) and, if native fences are enabled, a NULL native report.
    pub fn lost_events(&mut self, engines: u32, native: bool, emit: &mut impl FnMut(Report<'_>)) {
        self.flush(emit);
        for engine in 0..engines {
            self.legacy(engine, emit);
            if native && self.optimized {
                // Every node: NULL hHWQueue and a scan of every waiter (docs/logs.md#kmd).
                self.native_queue(engine, None, true, emit);
                self.flush(emit);
            } else if native {
                emit(Report::Native {
                    engine,
                    handles: None,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reports `f` makes through batch `b`, as text.
    fn run_on(mut b: Batch, f: impl FnOnce(&mut Batch, &mut dyn FnMut(Report<'_>))) -> Vec<String> {
        let mut out = Vec::new();
        let mut emit = |r: Report<'_>| out.push(format!("{r:?}"));
        f(&mut b, &mut emit);
        out
    }

    fn run(f: impl FnOnce(&mut Batch, &mut dyn FnMut(Report<'_>))) -> Vec<String> {
        run_on(Batch::default(), f)
    }

    #[test]
    fn nf_14_named_handles_batched_per_engine() {
        let out = run(|b, e| {
            let mut e = e;
            b.native(0, Some(0x10), &mut e);
            b.native(0, Some(0x20), &mut e);
            b.native(0, Some(0x10), &mut e);
            b.native(1, Some(0x30), &mut e);
            b.flush(&mut e);
        });
        assert_eq!(
            out,
            vec![
                "Native { engine: 0, handles: Some([16, 32]) }",
                "Native { engine: 1, handles: Some([48]) }"
            ]
        );
    }

    #[test]
    fn nf_15_any_doubt_becomes_a_null_report() {
        let out = run(|b, e| {
            let mut e = e;
            b.native(0, Some(0x10), &mut e);
            b.native(0, None, &mut e); // unresolvable tag
            b.flush(&mut e);
            for h in 0..=MAX_NAMED {
                b.native(1, Some(0x100 + h), &mut e); // one more than the array holds
            }
            b.flush(&mut e);
        });
        assert_eq!(
            out,
            vec![
                "Native { engine: 0, handles: None }",
                "Native { engine: 1, handles: None }"
            ]
        );
    }

    fn run_opt(f: impl FnOnce(&mut Batch, &mut dyn FnMut(Report<'_>))) -> Vec<String> {
        run_on(Batch::optimized(), f)
    }

    #[test]
    fn log_08_isr_names_running_queue() {
        // The seed's E1–E4: one interrupt for four signals of queue A → one report naming A.
        let out = run_opt(|b, e| {
            let mut e = e;
            b.native_queue(0, Some(0xA), false, &mut e);
            b.native_queue(0, Some(0xA), false, &mut e);
            b.native_queue(0, Some(0xB), false, &mut e);
            b.native_queue(1, Some(0xC), false, &mut e);
            b.flush(&mut e);
        });
        assert_eq!(
            out,
            vec![
                "NativeQueue { engine: 0, hw_queue: Some(10), evaluate_all: false }",
                "NativeQueue { engine: 0, hw_queue: Some(11), evaluate_all: false }",
                "NativeQueue { engine: 1, hw_queue: Some(12), evaluate_all: false }",
            ],
            "one notification per queue, consecutive records merged"
        );
    }

    #[test]
    fn log_08_isr_reports_null_for_logless_or_unknown_queue() {
        let out = run_opt(|b, e| {
            let mut e = e;
            // Unknown id on an engine whose queues all have logs: NULL, no scan.
            b.native_queue(0, None, false, &mut e);
            // Later records of engine 0 are covered by the pending NULL.
            b.native_queue(0, Some(0xA), false, &mut e);
            b.native_queue(1, Some(0xB), false, &mut e);
            // Engine 0 again: already covered by the NULL report of this pass.
            b.native_queue(0, Some(0xA), false, &mut e);
            // A log-less queue on engine 0: NULL + scan of every waiter (escalates).
            b.native_queue(0, None, true, &mut e);
            b.native_queue(0, None, true, &mut e);
            // A progress event goes through `native`: NULL + scan.
            b.native(1, Some(0x99), &mut e);
            b.flush(&mut e);
        });
        assert_eq!(
            out,
            vec![
                "NativeQueue { engine: 0, hw_queue: None, evaluate_all: false }",
                "NativeQueue { engine: 1, hw_queue: Some(11), evaluate_all: false }",
                "NativeQueue { engine: 0, hw_queue: None, evaluate_all: true }",
                "NativeQueue { engine: 1, hw_queue: None, evaluate_all: true }",
            ]
        );
        // A named report followed by a NULL one of the same engine becomes that NULL.
        let out = run_opt(|b, e| {
            let mut e = e;
            b.native_queue(0, Some(0xA), false, &mut e);
            b.native_queue(0, None, true, &mut e);
            b.flush(&mut e);
        });
        assert_eq!(
            out,
            vec!["NativeQueue { engine: 0, hw_queue: None, evaluate_all: true }"]
        );
    }

    #[test]
    fn log_08_lost_events_report_null_and_scan_on_every_node() {
        let out = run_opt(|b, e| {
            let mut e = e;
            b.native_queue(0, Some(0xA), false, &mut e);
            b.lost_events(2, true, &mut e);
        });
        assert_eq!(
            out,
            vec![
                "NativeQueue { engine: 0, hw_queue: Some(10), evaluate_all: false }",
                "Legacy { engine: 0 }",
                "NativeQueue { engine: 0, hw_queue: None, evaluate_all: true }",
                "Legacy { engine: 1 }",
                "NativeQueue { engine: 1, hw_queue: None, evaluate_all: true }",
            ]
        );
    }

    #[test]
    fn progress_reports_native_only_for_a_native_progress_fence() {
        // 1,000 batch completions of queues with monitored progress fences, interleaved on
        // two engines, in one pass and in one pass each: legacy reports only, no NULL native.
        for optimized in [false, true] {
            let mut out: Vec<String> = Vec::new();
            let mut emit = |r: Report<'_>| out.push(format!("{r:?}"));
            let mut one = if optimized {
                Batch::optimized()
            } else {
                Batch::default()
            };
            for i in 0..1000u32 {
                one.progress(i % 2, false, &mut emit);
                let mut pass = if optimized {
                    Batch::optimized()
                } else {
                    Batch::default()
                };
                pass.progress(i % 2, false, &mut emit);
                pass.flush(&mut emit);
            }
            one.flush(&mut emit);
            assert!(
                out.iter().all(|r| r.starts_with("Legacy")),
                "optimized={optimized}: no native report without a native progress fence"
            );
            assert_eq!(out.len(), 1002, "one legacy report per engine per pass");
        }
        // A native progress fence: the legacy report and a NULL native one (a scan of every
        // waiter with LOG-08: the write is in no signal log).
        let out = run(|b, e| {
            let mut e = e;
            b.progress(0, true, &mut e);
            b.progress(0, false, &mut e);
            b.flush(&mut e);
        });
        assert_eq!(
            out,
            vec![
                "Legacy { engine: 0 }",
                "Native { engine: 0, handles: None }"
            ]
        );
        let out = run_opt(|b, e| {
            let mut e = e;
            b.progress(1, true, &mut e);
            b.flush(&mut e);
        });
        assert_eq!(
            out,
            vec![
                "Legacy { engine: 1 }",
                "NativeQueue { engine: 1, hw_queue: None, evaluate_all: true }"
            ]
        );
    }

    #[test]
    fn lost_events_report_every_engine_and_legacy_once_per_engine() {
        let out = run(|b, e| {
            let mut e = e;
            b.legacy(1, &mut e);
            b.legacy(1, &mut e);
            b.native(0, Some(0x10), &mut e);
            b.lost_events(2, true, &mut e);
        });
        assert_eq!(
            out,
            vec![
                "Legacy { engine: 1 }",
                "Native { engine: 0, handles: Some([16]) }",
                "Legacy { engine: 0 }",
                "Native { engine: 0, handles: None }",
                "Native { engine: 1, handles: None }"
            ],
            "lost events: every engine's legacy fences (engine 1's already reported) and \
             native waits are scanned"
        );
        let out = run(|b, e| {
            let mut e = e;
            b.lost_events(1, false, &mut e);
        });
        assert_eq!(
            out,
            vec!["Legacy { engine: 0 }"],
            "no native report without native fences"
        );
    }
}
