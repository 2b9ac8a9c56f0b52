//! What a batch completion (the `PROGRESS` record with interrupt that ends every user-mode
//! batch) makes the KMD report: the monitored-fence report for the queue's progress fence,
//! and a native-fence report only when that progress fence is a native fence
//! (`D3DDDI_CREATEHWQUEUEFLAGS::NativeProgressFence`). A NULL native report makes the OS read
//! every log on the engine and, with the optimized cap (LOG-08), resample native fences, so a
//! report per batch is a per-completion cost on every queue.
//!
//! The simulated OS creates every hardware queue with a monitored progress fence (it never
//! sets `NativeProgressFence`), so the native-progress-fence case is covered by the KMD's
//! unit tests (`fence::report` and `log`), not here.

mod common;

use common::*;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::{AdapterConfig, Machine, MachineConfig, Mode, Notification};
use rvgpu_umd::submit::UserQueue;

const BATCHES: u64 = 1000;

fn machine(mode: Mode, optimized: bool) -> Machine {
    let mut cfg = MachineConfig::single(mode);
    let mut a = AdapterConfig::dgpu();
    a.device.optimized_fence_irq = optimized;
    cfg.adapters = vec![a];
    started(cfg)
}

/// `(native-fence notifications, monitored-fence notifications)` processed so far.
fn counts(m: &Machine) -> (usize, usize) {
    let ns = m.notifications(0);
    let native = ns
        .iter()
        .filter(|p| matches!(p.notification, Notification::NativeFenceSignaled { .. }))
        .count();
    let monitored = ns
        .iter()
        .filter(|p| {
            matches!(p.notification, Notification::Other { interrupt_type }
                if interrupt_type
                    == rvgpu_ddi::interrupt::DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED)
        })
        .count();
    (native, monitored)
}

/// `BATCHES` batches on two user-mode queues (engines 0 and 1), no native fence anywhere;
/// every batch is waited for through its progress fence (a monitored fence) before the next
/// is submitted (in step mode the machine also runs idle: one completion interrupt each).
fn run(mode: Mode, optimized: bool) {
    let m = machine(mode, optimized);
    assert_eq!(
        m.optimized_fence_irq(0),
        optimized,
        "the cap follows the device"
    );
    let p = m.create_process(0).expect("process");
    let mut qs = [
        UserQueue::new(m.kmt(&p), &config(0)).expect("queue 0"),
        UserQueue::new(m.kmt(&p), &config(1)).expect("queue 1"),
    ];
    let before = counts(&m);
    for i in 0..BATCHES {
        let q = &mut qs[usize::from(i % 2 == 1)];
        let v = q.submit(&[Command::Nop { len: 1 }]).expect("submit");
        if mode == Mode::Step {
            m.run_until_idle().expect("idle");
        }
        if let Err(e) = q.wait(v) {
            panic!("wait {i}: {e:?}; fault {:?}", m.fault());
        }
    }
    if mode == Mode::Step {
        m.run_until_idle().expect("idle");
    }
    let after = counts(&m);
    let native = after.0 - before.0;
    let monitored = after.1 - before.1;
    // Threaded: the UMD's CPU wait can return before the ISR ran, so a starved ISR thread can
    // let the 128-record event ring overflow; the KMD then (correctly) reports a NULL native
    // report on every node. Those sweeps are the only native reports allowed here.
    let ns = m.notifications(0);
    let natives: Vec<(u64, u32)> = ns
        .iter()
        .filter_map(|p| match p.notification {
            Notification::NativeFenceSignaled { node, .. } => Some((p.seq, node)),
            _ => None,
        })
        .collect();
    let sweeps = natives
        .chunks(2)
        .filter(|c| matches!(c, [(s0, 0), (s1, 1)] if s1 - s0 <= 2))
        .count();
    eprintln!(
        "{mode:?} optimized={optimized}: {BATCHES} batches -> {native} native-fence \
         notifications ({sweeps} event-ring-overflow sweeps over both nodes), {monitored} \
         monitored-fence notifications"
    );
    if mode == Mode::Step {
        assert_eq!(native, 0, "{natives:?}");
    }
    assert_eq!(
        native,
        2 * sweeps,
        "no native fence and no native progress fence: native reports only from event-ring \
         overflow sweeps: {natives:?}"
    );
    assert!(sweeps <= 10, "{natives:?}");
    assert!(
        monitored > 0,
        "batch completions still report the monitored progress fence"
    );
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

#[test]
fn progress_without_native_progress_fence_reports_no_native_fence_step() {
    run(Mode::Step, true);
}

#[test]
fn progress_without_native_progress_fence_reports_no_native_fence_threaded() {
    run(Mode::Threaded, true);
}

#[test]
fn progress_without_native_progress_fence_reports_no_native_fence_without_cap() {
    run(Mode::Threaded, false);
}
