//! TDR-05 on a host that does not schedule the simulation's threads: a DMA timeout means the
//! GPU held work and did not move, so an interrupt path the host left unscheduled after the
//! GPU finished does not make one (docs/tdr.md#the-simulated-os). The GPU's own thread is
//! `faults.rs`'s.

mod common;

use common::tdr::*;
use common::*;
use std::time::Duration;

use rvgpu_simos::testing::tdr as testing_tdr;
use rvgpu_simos::{Machine, Mode, TdrEvent};
use rvgpu_umd::kmt::{AllocationCpu, Kmt};

/// The TDR's timeout here: short, so that a stall of a few of them is quick.
const TIMEOUT: Duration = Duration::from_millis(100);

/// Whether the watchdog judged any node late.
fn detected(m: &Machine) -> bool {
    m.tdr_events(0)
        .iter()
        .any(|e| matches!(e, TdrEvent::Detected { .. }))
}

/// TDR-05: a completion the GPU raised while the host runs neither the interrupt nor the DPC
/// thread (for five timeouts) is not late: before a DMA timeout's verdict the watchdog runs
/// the ISR and the DPC, as Windows' ISR preempts and its DPC runs before the processor returns
/// to the PASSIVE worker.
#[test]
fn tdr_05_a_completion_raised_while_the_interrupt_threads_starve_is_not_late() {
    let m = machine_with(Mode::Threaded, |a| a.hwsch_feature = false);
    enable_tdr_after(&m, TIMEOUT, Duration::from_millis(5));
    let (p, k, ctx) = process_with_context(&m);
    let t = okk(&m, k.create_allocation(4096));
    // The OS's own paging work retires first: only the fill is left to report.
    run_until(&m, "the paging work", |m| all_done(m, 1));
    assert!(
        testing_tdr::starve_interrupt_threads(&m, 0, 5 * TIMEOUT),
        "both interrupt threads stopped"
    );
    ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 7)]));
    run_until(&m, "the fill", |m| all_done(m, 0));
    assert_eq!(t.mem.load(0), 7);
    assert!(!detected(&m), "{:#?}", m.tdr_events(0));
    no_fault(&m);
}
