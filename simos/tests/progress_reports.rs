//! What a batch completion (the `PROGRESS` record with interrupt that ends every user-mode
//! batch) makes the KMD report: the monitored-fence report for the queue's progress fence,
//! and a native-fence report only when that progress fence is a native fence
//! (`D3DDDI_CREATEHWQUEUEFLAGS::NativeProgressFence`). A NULL native report makes the OS read
//! every log on the engine and, with the optimized cap (LOG-08), resample native fences, so a
//! report per batch is a per-completion cost on every queue.
//!
//! Which kind the OS makes a queue's progress fence follows the machine's reading
//! (`ProgressFence`): 24H2 never sets `NativeProgressFence`; 26H1 and the pages set it for
//! kernel-submission queues on a GPU with native fences; tests give user-mode queues one too.
//! 24H2 gives a user-mode queue no progress fence at all (`UmsProgress::None`): the UMD closes
//! its batches with a conditional signal of a native fence of its own, which interrupts only
//! for a CPU waiter.

mod common;

use common::*;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::machine::answers::{ProgressFence, UmsProgress};
use rvgpu_simos::{AdapterConfig, Machine, MachineConfig, Mode, Notification};
use rvgpu_umd::submit::UserQueue;

const BATCHES: u64 = 1000;

/// The pages' OS: user-mode queues have a monitored progress fence, so batches end with
/// `PROGRESS`.
fn machine(mode: Mode, optimized: bool) -> Machine {
    machine_reading(mode, optimized, rvgpu_simos::Windows::PAGES)
}

fn machine_reading(mode: Mode, optimized: bool, reading: rvgpu_simos::Windows) -> Machine {
    let mut cfg = MachineConfig::single(mode);
    cfg.os.windows = reading;
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

/// `batches` batches on one user-mode queue of node 0 under `reading`, each waited for:
/// (native-fence notifications, monitored-fence notifications, ISR calls) they caused, and
/// whether the queue's progress fence was native.
fn run_reading(reading: rvgpu_simos::Windows, batches: u64) -> (usize, usize, u64, bool) {
    let m = machine_reading(Mode::Step, true, reading);
    assert!(
        m.native_fence_caps(0).is_some(),
        "the GPU has native fences"
    );
    let p = m.create_process(0).expect("process");
    let mut q = UserQueue::new(m.kmt(&p), &config(0)).expect("queue");
    let queue = last_hw_queue(&m, true).expect("a user-mode queue");
    let native = m.hw_queue_native_progress(0, queue).is_some();
    m.run_until_idle().expect("idle");
    let before = counts(&m);
    let isr = m.interrupt_counts(0).0;
    for i in 0..batches {
        let v = q.submit(&[Command::Nop { len: 1 }]).expect("submit");
        m.run_until_idle().expect("idle");
        if let Err(e) = q.wait(v) {
            panic!("wait {i}: {e:?}; fault {:?}", m.fault());
        }
    }
    m.run_until_idle().expect("idle");
    let after = counts(&m);
    let isrs = m.interrupt_counts(0).0 - isr;
    assert!(m.fault().is_none(), "{:?}", m.fault());
    (after.0 - before.0, after.1 - before.1, isrs, native)
}

#[test]
fn log_08_a_native_progress_fence_adds_a_native_report_per_batch() {
    let reading = rvgpu_simos::Windows::PAGES.answering(|r| {
        r.progress_fence = ProgressFence::NativeEveryQueue;
    });
    let (native, monitored, isrs, is_native) = run_reading(reading, 100);
    assert!(is_native, "every queue's progress fence is native");
    eprintln!("native: 100 batches -> {native} native, {monitored} monitored, {isrs} ISRs");
    assert_eq!(native, 100, "one NULL native report per batch completion");
    assert_eq!(monitored, 100, "and the monitored-fence report");
    assert_eq!(isrs, 100, "one interrupt per batch (PROGRESS_IRQ)");
}

/// Under every reading a user-mode queue's progress fence is not the OS's native fence: a
/// monitored one, whose `PROGRESS` interrupts per batch (the pages, 26H1 as modelled), or none
/// (24H2), where the UMD's own native fence is signalled without an interrupt when no CPU
/// waits for it yet (NF-03).
#[test]
fn log_08_a_user_mode_queue_has_no_native_progress_fence_under_any_reading() {
    for r in rvgpu_simos::Windows::READINGS {
        let (native, monitored, isrs, is_native) = run_reading(r, 100);
        assert!(
            !is_native,
            "{}: no NativeProgressFence for a user-mode queue",
            r.name()
        );
        eprintln!(
            "{}: 100 batches -> {native} native, {monitored} monitored, {isrs} ISRs",
            r.name()
        );
        let expected = match r.reading().ums_progress {
            UmsProgress::Given => (0, 100, 100),
            UmsProgress::None => (0, 0, 0),
        };
        assert_eq!((native, monitored, isrs), expected, "{}", r.name());
    }
}

/// A kernel-submission queue created, given `batches` waited-for batches, and closed under
/// `reading`: whether its progress fence was native, and the native fences live while it
/// existed and after.
fn kernel_queue(reading: rvgpu_simos::Windows, native_fences: bool) -> (bool, usize, usize) {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = reading;
    cfg.os.native_fence_feature = native_fences;
    let m = started(cfg);
    assert_eq!(m.native_fence_caps(0).is_some(), native_fences);
    let p = m.create_process(0).expect("process");
    let live = || m.fence_live_counts(0).0 .0;
    let base = live();
    let mut q = rvgpu_umd::submit::KernelQueue::new(m.kmt(&p), &config(0)).expect("queue");
    let queue = last_hw_queue(&m, false).expect("a kernel-submission queue");
    let native = m.hw_queue_native_progress(0, queue);
    let during = live() - base;
    for _ in 0..3 {
        let v = q.submit(&[Command::Nop { len: 1 }]).expect("submit");
        m.run_until_idle().expect("idle");
        q.wait(v).expect("wait");
        if let Some(n) = &native {
            assert_eq!(
                n.current_value(),
                v,
                "the native fence carries the progress"
            );
        }
    }
    q.close().expect("close");
    m.run_until_idle().expect("idle");
    assert!(m.fault().is_none(), "{:?}", m.fault());
    (native.is_some(), during, live() - base)
}

#[test]
fn a_kernel_submission_queue_has_a_native_progress_fence_under_the_pages_only() {
    assert_eq!(
        kernel_queue(rvgpu_simos::Windows::W24H2, true),
        (false, 0, 0),
        "24H2"
    );
    assert_eq!(
        // 26H1's answer (a native one) never plays: 26H1 gives no native fences (BR-112).
        kernel_queue(rvgpu_simos::Windows::W26H1, false),
        (false, 0, 0),
        "26H1"
    );
    assert_eq!(
        kernel_queue(rvgpu_simos::Windows::PAGES, true),
        (true, 1, 0),
        "pages"
    );
    // Only a GPU with native fences gets one.
    assert_eq!(
        kernel_queue(rvgpu_simos::Windows::PAGES, false),
        (false, 0, 0),
        "no native fences"
    );
}
