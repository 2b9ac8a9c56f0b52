//! The interrupt path end to end: device → ISR (DIRQL) → DxgkCbNotifyInterrupt → DPC
//! (DISPATCH) → DxgkCbNotifyDpc → the OS records the notification.

use std::time::Duration;

use rvgpu_ddi::interrupt::DXGK_ENGINE_STATE_TRANSITION_TO_F1;
use rvgpu_simos::{Machine, MachineConfig, Mode, Notification};

fn f1_machine(mode: Mode, idle_ticks: u64) -> Machine {
    let mut cfg = MachineConfig::single(mode);
    for a in &mut cfg.adapters {
        // Idle engines request F1 after `idle_ticks` GPU ticks. In threaded mode the clock
        // runs from power-on, so the request must come after the driver has started (and
        // enabled the interrupt): 50 ms at 100 MHz.
        a.device.idle_f1_ticks = idle_ticks;
    }
    let mut m = Machine::new(cfg);
    if let Err(e) = m
        .load_driver()
        .and_then(|()| m.start_adapter(0).map(|_| ()))
    {
        panic!("bring-up: {e}");
    }
    m
}

fn saw_f1(m: &Machine) -> bool {
    m.notifications(0).iter().any(|p| {
        matches!(
            p.notification,
            Notification::EngineStateChange { new_state, .. } if new_state == DXGK_ENGINE_STATE_TRANSITION_TO_F1
        )
    })
}

/// UM-13: an idle engine's F1 request reaches the OS as a processed
/// DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE, through the ISR and then the DPC.
#[test]
fn um_13_idle_f1_request_reaches_the_os_step_mode() {
    let m = f1_machine(Mode::Step, 50);
    let got = m.run_until(5_000, Duration::ZERO, saw_f1);
    match got {
        Ok(true) => {}
        Ok(false) => panic!(
            "no engine state change processed; pending {:?}, log {:#?}",
            m.pending_notifications(0),
            m.driver_log()
        ),
        Err(e) => panic!("{e}; log {:#?}", m.driver_log()),
    }
    let (isr, dpc) = m.interrupt_counts(0);
    assert!(isr >= 1 && dpc >= 1, "ISR {isr}, DPC {dpc}");
    assert!(!m.notifications(0).is_empty());
}

#[test]
fn um_13_idle_f1_request_reaches_the_os_threaded() {
    let m = f1_machine(Mode::Threaded, 5_000_000);
    let got = m.run_until(0, Duration::from_secs(10), saw_f1);
    match got {
        Ok(true) => {}
        Ok(false) => {
            panic!(
            "no engine state change within 10 s; counts {:?} line {:?} pending {:?} engine {:?}",
            m.interrupt_counts(0),
            m.device(0).map(|d| d.line_asserted()),
            m.pending_notifications(0),
            m.device(0).and_then(|d| d.engine_snapshot(0)).map(|s| s.state)
        )
        }
        Err(e) => panic!("{e}; log {:#?}", m.driver_log()),
    }
}

/// The DPC runs after the ISR, at DISPATCH: every processed notification was reported by an
/// ISR first (sequence numbers are assigned at ISR time, in order).
#[test]
fn dpc_processes_in_isr_order() {
    let m = f1_machine(Mode::Step, 50);
    let _ = m.run_until(5_000, Duration::ZERO, saw_f1);
    let seqs: Vec<u64> = m.notifications(0).iter().map(|p| p.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert!(m.bugcheck().is_none());
}
