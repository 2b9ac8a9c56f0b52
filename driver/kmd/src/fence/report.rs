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

/// Handles per report; more in one batch turns the report into NULL.
pub const MAX_NAMED: usize = 16;

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
}

impl Default for Batch {
    fn default() -> Self {
        Self {
            engine: None,
            handles: [0; MAX_NAMED],
            len: 0,
            scan_all: false,
            legacy_done: 0,
        }
    }
}

impl Batch {
    /// A native-fence event on `engine`, resolved to an OS handle if the tag was valid.
    pub fn native(
        &mut self,
        engine: u32,
        handle: Option<usize>,
        emit: &mut impl FnMut(Report<'_>),
    ) {
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

    /// Emits the pending native report, if any.
    pub fn flush(&mut self, emit: &mut impl FnMut(Report<'_>)) {
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
            if native {
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

    fn run(f: impl FnOnce(&mut Batch, &mut dyn FnMut(Report<'_>))) -> Vec<String> {
        let mut out = Vec::new();
        let mut b = Batch::default();
        let mut emit = |r: Report<'_>| out.push(format!("{r:?}"));
        f(&mut b, &mut emit);
        out
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
