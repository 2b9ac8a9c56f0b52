//! `Adapter.InterruptPath`: device → ISR → NotifyInterrupt → DPC → NotifyDpc.

use std::time::Duration;

use crate::backend::{Backend, Capability, ExecMode};
use crate::case::{Case, CaseResult};
use crate::ensure;

use super::common::{no_fault, session};

/// `DXGK_ENGINE_STATE_TRANSITION_TO_F1`.
const TRANSITION_TO_F1: i32 = 1;

/// What both cases need: the OS's engine-state trace, on a machine whose idle timeout the case
/// sets.
const NEEDS: &[Capability] = &[Capability::OsTrace, Capability::ConfiguredMachine];

/// The cases of this area.
pub const CASES: &[Case] = &[
    Case {
        name: "Adapter.InterruptPath",
        requirements: &["UM-13"],
        summary:
            "KMD side of UM-13: an idle engine's F1 request reaches the OS as a processed \
             ENGINE_STATE_CHANGE (step); the OS's doorbell disconnect comes with user-mode submission",
        needs: NEEDS,
        optional: &[Capability::BugChecks],
        run: step,
    },
    Case {
        name: "Adapter.InterruptPathThreaded",
        requirements: &["UM-13"],
        summary: "the same with device, interrupt and DPC threads",
        needs: NEEDS,
        optional: &[Capability::BugChecks],
        run: threaded,
    },
];

fn path(b: &dyn Backend, mode: ExecMode, idle_ticks: u64) -> CaseResult {
    let mut s = session(b, mode, |cfg| cfg.idle_f1_ticks = idle_ticks)?;
    let got = s.run_until(Duration::from_secs(5), &mut |s| {
        s.os_trace_ref().is_ok_and(|t| {
            t.engine_state_changes(0)
                .iter()
                .any(|c| c.new_state == TRANSITION_TO_F1)
        })
    })?;
    ensure!(
        got,
        "no TransitionToF1 processed by the OS; saw {:?}",
        s.os_trace_ref()?.engine_state_changes(0)
    );
    no_fault(&*s)?;
    s.stop_adapter(0)?;
    Ok(())
}

fn step(b: &dyn Backend) -> CaseResult {
    path(b, ExecMode::Step, 50)
}

fn threaded(b: &dyn Backend) -> CaseResult {
    // 50 ms at the device's 100 MHz: after the driver has enabled interrupts.
    path(b, ExecMode::Threaded, 5_000_000)
}
