//! Faults of the machine: forged event records from an untrusted GPU, lost and late
//! interrupts, and a device that disappears. Each test injects the fault through the emulated
//! device and checks what the real KMD and the simulated OS make of it (docs/robustness.md has
//! the fault matrix naming these tests).

mod common;

use common::tdr::{all_done, process_with_context, resets};
use common::*;
use std::time::Duration;

use rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED;
use rvgpu_ddi::tdr::VIDEO_ENGINE_TIMEOUT_DETECTED;
use rvgpu_device::IrqDelay;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::engine::EngineState;
use rvgpu_hw::event::{EventKind, EventRecord, FaultCode};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::queue::NO_QUEUE;
use rvgpu_hw::regs::{self, IntCause};
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::SimError;
use rvgpu_simos::{
    Cause, Machine, Mode, NativeFence, NativeFenceDesc, Notification, TdrEvent, UmsProcess,
    WaitOutcome,
};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, Kmt, KmtHandle};
use rvgpu_umd::submit::{KernelQueue, SubmitError, UserQueue};

fn record(kind: EventKind, engine: u8, queue_id: u32, args: [u64; 3]) -> EventRecord {
    EventRecord {
        kind: kind as u8,
        engine,
        flags: 0,
        queue_id,
        arg0: args[0],
        arg1: args[1],
        arg2: args[2],
    }
}

/// The `events rejected=…` line of the driver's CollectDbgInfo text, as numbers.
fn rejected(m: &Machine) -> Vec<u64> {
    let text = ok(m, m.collect_dbg_info(0, VIDEO_ENGINE_TIMEOUT_DETECTED));
    let line = text
        .lines()
        .find(|l| l.starts_with("events rejected="))
        .unwrap_or_else(|| panic!("no rejected-events line in {text}"));
    line.split_whitespace()
        .filter_map(|w| w.split_once('=').and_then(|(_, v)| v.parse().ok()))
        .collect()
}

/// What the OS heard, minus fence reports (a NULL "scan" report for a record that could be a
/// real, stale one is allowed: it moves no fence).
fn non_fence_notifications(m: &Machine) -> Vec<Notification> {
    m.notifications(0)
        .into_iter()
        .map(|p| p.notification)
        .filter(|n| !matches!(n, Notification::NativeFenceSignaled { .. }))
        .collect()
}

/// Untrusted event records: a faulty GPU writes records into the event ring that fit nothing the
/// driver knows (an engine that does not exist, "hung" for an engine that is running, a
/// reset that was never asked for, a scheduling-log interrupt without a log, faults and
/// progress for queues that are not on that engine). The ISR drops and counts each; the OS
/// hears nothing; no engine is reset and the innocent queue keeps completing.
#[test]
fn forged_event_records_are_dropped_and_counted() {
    let m = machine_with(Mode::Step, |a| a.device.doorbells = 4);
    let (p, k) = user_process(&m);
    let buf = okk(&m, k.create_allocation(4096));
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    submit_wait(&m, &mut q, &[fill(&buf, 0, 1)]);
    ok(&m, m.run_until_idle());
    let before = non_fence_notifications(&m);
    let dev = m.device(0).expect("device").clone();
    let own = q.queue_id();
    let hung = EngineState::Hung as u64;
    let active = EngineState::Active as u64;
    let forged = [
        // Engine 1 is idle and fine: "hung" would make the OS reset it.
        (
            record(EventKind::EngineState, 1, NO_QUEUE, [active, hung, 0]),
            IntCause::ENGINE_STATE,
        ),
        // F1 request for an engine that is not asking.
        (
            record(
                EventKind::EngineState,
                0,
                NO_QUEUE,
                [active, EngineState::TransitionToF1 as u64, 0],
            ),
            IntCause::ENGINE_STATE,
        ),
        // A state the device never reports.
        (
            record(EventKind::EngineState, 0, NO_QUEUE, [hung, active, 0]),
            IntCause::ENGINE_STATE,
        ),
        // An engine that does not exist.
        (
            record(EventKind::EngineState, 200, NO_QUEUE, [active, hung, 0]),
            IntCause::ENGINE_STATE,
        ),
        // A ResetDone nobody asked for.
        (
            record(EventKind::ResetDone, 0, own, [1, u64::from(own), 0]),
            IntCause::RESET_DONE,
        ),
        // A scheduling-log interrupt whose header index cannot follow the log's interrupt
        // entry (an index no log of that size has).
        (
            record(
                EventKind::SchedLog,
                1,
                NO_QUEUE,
                [u64::from(u32::MAX - 1), 0, 0],
            ),
            IntCause::SCHED_LOG,
        ),
        // A page fault of the innocent queue, claimed on the wrong engine.
        (
            record(
                EventKind::Fault,
                1,
                own,
                [FaultCode::PageFault as u64, 0x1000, 0],
            ),
            IntCause::FAULT,
        ),
        // A page fault of a queue id nobody has.
        (
            record(
                EventKind::Fault,
                0,
                0x0FFE,
                [FaultCode::PageFault as u64, 0x1000, 0],
            ),
            IntCause::FAULT,
        ),
        // Progress of a queue id that cannot exist.
        (
            record(EventKind::Progress, 0, 0xABCD_0000, [7, 0, 0]),
            IntCause::PROGRESS,
        ),
        // A fence signal of the innocent queue on the wrong engine.
        (
            record(EventKind::FenceSignaled, 1, own, [u64::MAX, 1, 0]),
            IntCause::FENCE_SIGNALED,
        ),
    ];
    for (rec, cause) in forged {
        dev.forge_event(rec, cause);
        ok(&m, m.run_until_idle());
    }
    let counts = rejected(&m);
    // [total, engine, queue, state, reset, schedlog]
    assert_eq!(counts, vec![10, 1, 4, 3, 1, 1], "{}", diagnostics(&m));
    assert_eq!(
        non_fence_notifications(&m),
        before,
        "the OS heard a forged record; {}",
        diagnostics(&m)
    );
    assert_eq!(m.tdr_counts(0), (0, 0), "nothing was reset");
    // The innocent queue keeps working.
    submit_wait(&m, &mut q, &[fill(&buf, 8, 2)]);
    assert_eq!(buf.mem.load(8), 2);
    okk(&m, q.close());
    exits_clean(&m, &p);
}

/// Found by the `kmd_events` fuzz target (corpus `finding-forged-fault-live-queue`):
/// a Fault record naming a live queue *on its own engine* passed every check the ISR could
/// make from the record alone, so a faulty device (or corrupted event memory) put an innocent
/// process's device in error. With `CAPS.QUEUE_STATE` the ISR asks the device: the queue is
/// loaded and no fault stopped it, so the record is dropped and the queue keeps completing.
/// Without the capability the record is indistinguishable from a real fault and is believed
/// (the known limit the register closes).
#[test]
fn forged_fault_naming_a_running_queue_on_its_own_engine() {
    for queue_state in [true, false] {
        let m = machine_with(Mode::Step, |a| {
            a.device.doorbells = 4;
            a.device.queue_state = queue_state;
        });
        let (p, k) = user_process(&m);
        let buf = okk(&m, k.create_allocation(4096));
        let mut q = okk(&m, UserQueue::new(k, &config(0)));
        submit_wait(&m, &mut q, &[fill(&buf, 0, 1)]);
        ok(&m, m.run_until_idle());
        m.clear_ums_events(0);
        let dev = m.device(0).expect("device").clone();
        dev.forge_event(
            record(
                EventKind::Fault,
                0,
                q.queue_id(),
                [FaultCode::PageFault as u64, 0x1000, 0],
            ),
            IntCause::FAULT,
        );
        ok(&m, m.run_until_idle());
        let errors = m
            .ums_events(0)
            .into_iter()
            .filter(|e| {
                matches!(
                    e,
                    rvgpu_simos::UmsEvent::DeviceError { .. }
                        | rvgpu_simos::UmsEvent::PageFault { .. }
                )
            })
            .count();
        let submitted = q.submit(&[fill(&buf, 8, 2)]);
        if queue_state {
            // [total, engine, queue, state, reset, schedlog]
            assert_eq!(rejected(&m), vec![1, 0, 1, 0, 0, 0], "{}", diagnostics(&m));
            assert_eq!(
                errors,
                0,
                "the OS acted on a forged fault; {}",
                diagnostics(&m)
            );
            let v = okk(&m, submitted);
            okk(&m, q.wait(v));
            assert_eq!(buf.mem.load(8), 2);
        } else {
            assert_eq!(rejected(&m), vec![0, 0, 0, 0, 0, 0], "{}", diagnostics(&m));
            assert!(errors > 0, "without QUEUE_STATE the fault is believed");
            assert!(submitted.is_err(), "the queue's device is in error");
        }
        let _ = q.close();
        exits_clean(&m, &p);
    }
}

/// Untrusted event records, the other side: records the driver does expect still get through (the
/// check is not "drop everything"): a real engine hang is reported as hung.
#[test]
fn genuine_engine_hang_record_still_reaches_the_os() {
    let m = machine_with(Mode::Step, |a| a.device.doorbells = 4);
    let dev = m.device(0).expect("device").clone();
    dev.inject_hang(1);
    let seen = ok(
        &m,
        m.run_until(20_000, Duration::from_secs(10), |m| {
            m.notifications(0).iter().any(|p| {
                matches!(
                    p.notification,
                    Notification::EngineStateChange { node: 1, new_state, .. }
                        if new_state == rvgpu_ddi::interrupt::DXGK_ENGINE_STATE_HUNG
                )
            })
        }),
    );
    assert!(seen, "{}", diagnostics(&m));
    assert_eq!(rejected(&m)[0], 0);
}

/// Untrusted event records (MMU side): a user-mode queue cannot write the event ring: a COPY aimed
/// at its address faults in the process's own GPU space and no record appears.
#[test]
fn user_queue_cannot_write_the_event_ring() {
    let m = machine_with(Mode::Step, |a| a.device.doorbells = 4);
    let dev = m.device(0).expect("device").clone();
    let ring = dev.read64(regs::EVENT_RING_BASE);
    let (p, k) = user_process(&m);
    let src = okk(&m, k.create_allocation(4096));
    // A forged "engine 1 hung" record as the payload.
    let words = record(EventKind::EngineState, 1, NO_QUEUE, [0, 2, 0]).to_words();
    for (i, w) in words.iter().enumerate() {
        src.mem.store(i as u64 * 8, *w);
    }
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    let _ = q.submit(&[Command::Copy {
        src: src.gpu_va,
        dst: ring,
        bytes: 32,
    }]);
    let seen = ok(
        &m,
        m.run_until(20_000, Duration::from_secs(10), |m| {
            m.ums_events(0)
                .iter()
                .any(|e| matches!(e, rvgpu_simos::UmsEvent::PageFault { .. }))
        }),
    );
    assert!(seen, "the COPY did not fault; {}", diagnostics(&m));
    let va = m.ums_events(0).iter().find_map(|e| match e {
        rvgpu_simos::UmsEvent::PageFault { va, .. } => Some(*va),
        _ => None,
    });
    assert_eq!(va, Some(ring));
    assert!(!non_fence_notifications(&m).iter().any(|n| matches!(
        n,
        Notification::EngineStateChange { new_state, .. }
            if *new_state == rvgpu_ddi::interrupt::DXGK_ENGINE_STATE_HUNG
    )));
    // Had the record landed, the ISR would have read and rejected it.
    assert_eq!(rejected(&m)[0], 0);
    drop(q);
    ok(&m, m.kill_process(&p));
    no_fault(&m);
}

// ---------------------------------------------------------------------------------------------
// Lost and late interrupts (docs/robustness.md §2).

/// A started machine of `mode` (4 doorbells), its device, a queue on engine 0 and a fence
/// (at 0) of the queue's process.
struct FenceRig {
    m: Machine,
    dev: std::sync::Arc<rvgpu_device::Device>,
    q: GpuQueue,
    f: NativeFence,
}

fn fence_rig(mode: Mode) -> FenceRig {
    let m = machine_with(mode, |a| a.device.doorbells = 4);
    let dev = m.device(0).expect("device").clone();
    let q = ok(&m, GpuQueue::new(&m, 0, 0));
    let f = ok(
        &m,
        m.create_native_fence(0, q.pid(), NativeFenceDesc::default()),
    );
    FenceRig { m, dev, q, f }
}

/// Lost interrupts: one lost interrupt delivery does not stop the later ones. The
/// delivery for a native-fence signal is lost (its waiter stays blocked: the OS was not told);
/// the next event raises the line again, the ISR drains both records and every waiter is
/// released: CPU waits on the native fence, and a user-mode queue's DMA progress wait.
#[test]
fn lost_interrupt_is_recovered_by_the_next_and_every_waiter_released() {
    let LostSignal {
        m,
        mut q,
        f,
        waiter: first,
        isr_before,
        ..
    } = lose_the_first_signals_delivery();
    assert_eq!(m.interrupt_counts(0).0, isr_before, "the delivery was lost");
    // Later events: a second native-fence signal and DMA progress of a user-mode queue.
    let second = ok(&m, m.wait_native_fence_event(&f, 2));
    ok(&m, q.signal(&f, 2));
    ok(&m, q.kick());
    let (p, k) = user_process(&m);
    let buf = okk(&m, k.create_allocation(4096));
    let mut uq = okk(&m, UserQueue::new(k, &config(0)));
    submit_wait(&m, &mut uq, &[fill(&buf, 0, 7)]);
    ok(&m, m.run_until_idle());
    assert_eq!(first.wait(Duration::ZERO), Some(WaitOutcome::Satisfied));
    assert_eq!(second.wait(Duration::ZERO), Some(WaitOutcome::Satisfied));
    // And the line keeps working after it.
    for v in 3..=5 {
        ok(&m, q.signal(&f, v));
        ok(&m, q.kick());
        let r = ok(&m, m.wait_native_fence(&f, v, Duration::from_secs(5)));
        assert_eq!(r, WaitOutcome::Satisfied, "wait for {v}");
    }
    okk(&m, uq.close());
    exits_clean(&m, &p);
}

/// Lost interrupts, threaded: a lost delivery every few signals under real concurrency;
/// every blocking wait is released by a later signal's interrupt.
#[test]
fn lost_interrupts_threaded_every_waiter_released() {
    let FenceRig { m, dev, mut q, f } = fence_rig(Mode::Threaded);
    // Ends on a delivered signal: the last event's lost delivery, with nothing after it, is
    // left to the driver's watchdog (its own tests below).
    for v in 1..=61u64 {
        if v % 3 == 0 {
            dev.drop_next_interrupt();
        }
        let ev = ok(&m, m.wait_native_fence_event(&f, v));
        ok(&m, q.signal(&f, v));
        ok(&m, q.kick());
        if v % 3 != 0 {
            // A delivered signal releases its waiter and every earlier one.
            assert_eq!(
                ev.wait(Duration::from_secs(10)),
                Some(WaitOutcome::Satisfied),
                "wait for {v}; cv {} mv {:#x}",
                f.current_value(),
                f.monitored_value()
            );
        }
    }
    no_fault(&m);
}

/// A step-mode machine whose first native-fence signal was executed by the GPU but whose
/// interrupt delivery was lost, with a CPU waiter for it still blocked.
struct LostSignal {
    m: Machine,
    dev: std::sync::Arc<rvgpu_device::Device>,
    q: GpuQueue,
    f: NativeFence,
    waiter: rvgpu_simos::SimEvent,
    isr_before: u64,
}

fn lose_the_first_signals_delivery() -> LostSignal {
    let FenceRig { m, dev, mut q, f } = fence_rig(Mode::Step);
    let waiter = ok(&m, m.wait_native_fence_event(&f, 1));
    let isr_before = m.interrupt_counts(0).0;
    dev.drop_next_interrupt();
    ok(&m, q.signal(&f, 1));
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert_eq!(f.current_value(), 1, "the GPU signalled");
    assert_eq!(waiter.wait(Duration::ZERO), None, "the OS was not told");
    LostSignal {
        m,
        dev,
        q,
        f,
        waiter,
        isr_before,
    }
}

/// Lost interrupts and NF-09 (no missed interrupt for a monitored update), the last event:
/// the delivery of the very last native-fence signal is lost and nothing follows it. No ISR
/// ever runs; the driver's interrupt watchdog (`driver/kmd/src/watchdog.rs`, a 100 ms kernel
/// timer; a step-mode round is a millisecond) finds the cause still pending at two looks and
/// services it, and the waiter is released.
#[test]
fn lost_delivery_of_the_last_signal_is_serviced_by_the_driver_watchdog() {
    let LostSignal {
        m,
        dev,
        waiter: ev,
        isr_before,
        ..
    } = lose_the_first_signals_delivery();
    // Less than a watchdog period later: the first look may only have seen the cause.
    ok(&m, m.run_steps(50));
    assert_eq!(ev.wait(Duration::ZERO), None, "one look is not enough");
    assert_ne!(
        dev.read32(regs::INT_STATUS),
        0,
        "the cause is still pending"
    );
    // Two watchdog periods and a little: nothing else happens on the machine.
    ok(&m, m.run_steps(205));
    assert_eq!(ev.wait(Duration::ZERO), Some(WaitOutcome::Satisfied));
    assert_eq!(
        m.interrupt_counts(0).0,
        isr_before,
        "no interrupt was delivered: the watchdog serviced the cause"
    );
    assert_eq!(dev.read32(regs::INT_STATUS), 0, "acknowledged");
    let text = ok(&m, m.collect_dbg_info(0, VIDEO_ENGINE_TIMEOUT_DETECTED));
    assert!(
        text.lines()
            .any(|l| l.starts_with("watchdog ") && l.ends_with(" lost_deliveries=1")),
        "CollectDbgInfo counts it: {text}"
    );
    assert!(
        m.driver_log()
            .iter()
            .any(|l| l.text.contains("interrupt delivery lost")),
        "the driver says what it did"
    );
    // Quiet time afterwards services nothing more (no cause is pending).
    let log_lines = m.driver_log().len();
    ok(&m, m.run_steps(500));
    assert_eq!(m.driver_log().len(), log_lines);
    no_fault(&m);
}

/// NF-09, the same under real concurrency: the last signal's delivery is lost and the waiter is
/// released by the watchdog's timer DPC, well inside the wait's timeout.
#[test]
fn lost_delivery_of_the_last_signal_threaded_is_serviced_by_the_driver_watchdog() {
    let FenceRig { m, dev, mut q, f } = fence_rig(Mode::Threaded);
    for v in 1..=3u64 {
        let ev = ok(&m, m.wait_native_fence_event(&f, v));
        dev.drop_next_interrupt();
        ok(&m, q.signal(&f, v));
        ok(&m, q.kick());
        assert_eq!(
            ev.wait(Duration::from_secs(10)),
            Some(WaitOutcome::Satisfied),
            "wait for {v}; cv {}",
            f.current_value()
        );
    }
    let text = ok(&m, m.collect_dbg_info(0, VIDEO_ENGINE_TIMEOUT_DETECTED));
    assert!(
        text.lines()
            .any(|l| l.starts_with("watchdog ") && l.ends_with(" lost_deliveries=3")),
        "each release was the watchdog's: {text}"
    );
    no_fault(&m);
}

/// Late interrupts: interrupts delivered late (held back for a number of device steps)
/// and an ISR so late that the event ring overflowed: every waiter is released once the ISR
/// runs (the overflow turns into "scan everything" reports, NF-14).
#[test]
fn late_interrupts_and_overflowed_ring_release_every_waiter() {
    let FenceRig { m, dev, mut q, f } = fence_rig(Mode::Step);
    // Late: each assertion held back for 5 steps.
    dev.set_interrupt_delay(Some(IrqDelay::Steps(5)));
    let ev = ok(&m, m.wait_native_fence_event(&f, 1));
    ok(&m, q.signal(&f, 1));
    ok(&m, q.kick());
    ok(&m, m.run_steps(2));
    assert_eq!(ev.wait(Duration::ZERO), None, "held back");
    ok(&m, m.run_steps(10));
    assert_eq!(ev.wait(Duration::ZERO), Some(WaitOutcome::Satisfied));
    // Very late: no delivery at all while 200 signals, each needing an interrupt (the wait
    // keeps MonitoredValue low), post more records than the 128-record ring holds. The
    // driver's interrupt watchdog would service the held-back cause within two of its
    // periods; its timer DPC is held back too, as behind a long DPC on the same processor.
    dev.set_interrupt_delay(Some(IrqDelay::Steps(u64::MAX)));
    ok(&m, m.hold_timer_dpcs(0, true));
    let waits: Vec<_> = (2..=201u64)
        .step_by(20)
        .map(|v| ok(&m, m.wait_native_fence_event(&f, v)))
        .collect();
    for batch in 0..4u64 {
        for i in 0..50 {
            ok(&m, q.signal(&f, 2 + batch * 50 + i));
        }
        ok(&m, q.kick());
        let drained = ok(&m, m.run_until(10_000, Duration::ZERO, |_| q.drained()));
        assert!(drained);
    }
    assert_eq!(f.current_value(), 201);
    let status = dev.read32(regs::INT_STATUS);
    assert_ne!(
        status & IntCause::EVENT_OVERFLOW.bits(),
        0,
        "the ring overflowed ({status:#x})"
    );
    assert!(waits.iter().all(|w| w.wait(Duration::ZERO).is_none()));
    dev.set_interrupt_delay(None);
    ok(&m, m.hold_timer_dpcs(0, false));
    ok(&m, m.run_steps(10));
    for (i, w) in waits.iter().enumerate() {
        assert_eq!(
            w.wait(Duration::ZERO),
            Some(WaitOutcome::Satisfied),
            "wait {i}; {}",
            diagnostics(&m)
        );
    }
    no_fault(&m);
}

/// A step-mode machine whose TDR fires after 20 steps of a late fence.
/// Steps until node 0's legacy fences (submitted, completed) both reach `fence`.
fn legacy_completes(m: &Machine, fence: u32) {
    let done = ok(
        m,
        m.run_until(20_000, Duration::ZERO, |m| {
            m.legacy_fences(0, 0) == (fence, fence)
        }),
    );
    assert!(done, "fence {fence} not completed: {}", diagnostics(m));
}

/// Software-scheduled: its tests submit kernel-mode DMA from a process, which 24H2 refuses on
/// a hardware-scheduled node's contexts.
fn machine_with_quick_tdr() -> Machine {
    let m = machine_with(Mode::Step, |a| a.hwsch_feature = false);
    enable_tdr_steps(&m, 20, 5);
    m
}

/// A software-scheduled step-mode machine playing `reading`, its TDR armed with a timeout of
/// `timeout_steps` rounds.
fn sw_machine_reading(reading: rvgpu_simos::Windows, timeout_steps: u64) -> Machine {
    let mut cfg = rvgpu_simos::MachineConfig::single(Mode::Step);
    cfg.os.windows = reading;
    cfg.adapters[0].hwsch_feature = false;
    let m = started(cfg);
    enable_tdr_steps(&m, timeout_steps, 5);
    m
}

/// A FILL run and its fence retired on `m` (software-scheduled), then a second FILL whose
/// `DmaCompleted` interrupt is lost and that nothing follows: the GPU ran it and the OS was not
/// told; returns once the fence is retired however the reading does it.
fn lost_last_completion(m: &Machine) -> (UmsProcess, SimKmt<'_>, KmtHandle, Allocation<SimMem>) {
    let dev = m.device(0).expect("device").clone();
    let (p, k) = user_process(m);
    let ctx = okk(m, k.create_context(0));
    let t = okk(m, k.create_allocation(4096));
    let f0 = ok(m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 1)]));
    legacy_completes(m, f0);
    dev.drop_next_interrupt();
    let f1 = ok(m, m.submit_legacy(&p, ctx, &[fill(&t, 8, 2)]));
    ok(m, m.run_steps(5));
    assert_eq!(t.mem.load(8), 2, "the GPU ran it");
    assert_eq!(m.legacy_fences(0, 0), (f1, f0), "the OS was not told");
    legacy_completes(m, f1);
    (p, k, ctx, t)
}

/// TDR-05 under 24H2, which never asks `DxgkDdiQueryCurrentFence`: a kernel-mode fence whose
/// `DmaCompleted` interrupt was lost is late like a hung one, and once the timeout passes
/// (before the driver's own interrupt watchdog looks twice) the TDR starts without the OS
/// asking the driver. Its preemption retires the fence: the driver reports the completion it
/// missed before it judges the drain, and 24H2 takes a preemption report up to the node's
/// last submitted fence (`M:VidSchDdiNotifyInterruptWorker` @0x140006B60), so no engine is
/// reset and the next FILL runs.
#[test]
fn tdr_05_a_late_fence_is_a_hang_without_asking_the_driver_on_24h2() {
    let m = sw_machine_reading(rvgpu_simos::Windows::W24H2, 20);
    let (p, _k, ctx, t) = lost_last_completion(&m);
    let ev = m.tdr_events(0);
    assert!(
        ev.iter()
            .any(|e| matches!(e, TdrEvent::Detected { node: 0, .. })),
        "{ev:#?}"
    );
    assert!(
        !ev.iter()
            .any(|e| matches!(e, TdrEvent::FenceQueried { .. })),
        "24H2 never asks the driver: {ev:#?}"
    );
    assert!(
        !ev.iter().any(|e| matches!(e, TdrEvent::ResetEngine { .. })),
        "finished work is not reset: {ev:#?}"
    );
    let next = ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 16, 3)]));
    legacy_completes(&m, next);
    assert_eq!(t.mem.load(16), 3);
    exits_clean(&m, &p);
}

/// Lost interrupts, kernel-mode DMA, under the pages' reading: the `DmaCompleted` interrupt of
/// the last submission is lost and nothing follows it. The OS's watchdog asks
/// `DxgkDdiQueryCurrentFence` before it treats the late fence as a hang (the page's Remarks);
/// the driver reports the missed completion and no TDR happens.
#[test]
fn lost_dma_completion_is_found_by_query_current_fence_without_tdr() {
    let m = sw_machine_reading(rvgpu_simos::Windows::PAGES, 20);
    let (p, _k, _ctx, _t) = lost_last_completion(&m);
    let ev = m.tdr_events(0);
    assert!(
        ev.iter()
            .any(|e| matches!(e, TdrEvent::FenceQueried { node: 0 })),
        "{ev:#?}"
    );
    assert!(
        !ev.iter().any(|e| matches!(e, TdrEvent::Detected { .. })),
        "a lost interrupt is not a hang: {ev:#?}"
    );
    assert_eq!(m.tdr_counts(0), (0, 0));
    exits_clean(&m, &p);
}

// ---------------------------------------------------------------------------------------------
// Surprise removal and a dead bus (docs/robustness.md §3).

/// PnP surprise removal while work and waits are outstanding. The driver
/// advertises `SupportSurpriseRemoval` and is told through `DxgkDdiNotifySurpriseRemoval`;
/// every waiter is released as removed (not timed out), kernel-mode submissions and object
/// creation fail with `STATUS_DEVICE_REMOVED`, process exit completes, and the PnP remove that
/// follows (stop, remove) leaks nothing and trips no check.
#[test]
fn surprise_removal_releases_waiters_refuses_work_and_tears_down_clean() {
    let mut m = machine_with(Mode::Step, |a| a.device.doorbells = 4);
    let caps = ok(&m, m.query_driver_caps(0));
    assert_eq!(caps.SupportSurpriseRemoval, 1);
    let (p, k) = user_process(&m);
    let buf = okk(&m, k.create_allocation(4096));
    let mut uq = okk(&m, UserQueue::new(k, &config(0)));
    submit_wait(&m, &mut uq, &[fill(&buf, 0, 1)]);
    // A submission that never completes: it waits on a fence nobody signals.
    let gate = okk(&m, k.create_native_fence(0));
    let target = okk(
        &m,
        uq.submit(&[
            Command::FenceWait {
                addr: gate.gpu.current.get(),
                value: 1,
            },
            fill(&buf, 8, 2),
        ]),
    );
    let mut kq = okk(&m, KernelQueue::new(k, &config(0)));
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let f = ok(
        &m,
        m.create_native_fence(0, q.pid(), NativeFenceDesc::default()),
    );
    let pending = ok(&m, m.wait_native_fence_event(&f, 5));
    ok(&m, q.signal(&f, 1));
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert_eq!(pending.wait(Duration::ZERO), None);
    assert!(uq.completed() < target);

    ok(&m, m.surprise_remove(0));
    ok(&m, m.run_until_idle());
    // Kernel-mode work and new objects are refused as removed.
    match kq.submit(&[fill(&buf, 16, 3)]) {
        Err(SubmitError::Kmt(st)) if st.0 == STATUS_DEVICE_REMOVED => {}
        r => panic!("kernel-mode submission after removal: {r:?}"),
    }
    let r = k.create_allocation(4096).map(|_| ());
    assert_eq!(
        r,
        Err(rvgpu_umd::kmt::NtStatus(STATUS_DEVICE_REMOVED)),
        "allocation"
    );
    // The user-mode queue's progress wait returns (released by the removal), no timeout.
    match uq.wait(target) {
        Ok(()) => {}
        Err(SubmitError::Kmt(st)) if st.0 == STATUS_DEVICE_REMOVED => {}
        Err(e) => panic!("progress wait after removal: {e:?}"),
    }
    // The PnP remove: StopDevice destroys the fences, so the native-fence wait is abandoned
    // (the thunk reports STATUS_DEVICE_REMOVED), and nothing is left behind.
    drop(uq);
    drop(kq);
    drop(q);
    ok(&m, m.exit_process(&p));
    let r = m.stop_adapter(0);
    ok(&m, r);
    assert_eq!(pending.wait(Duration::ZERO), Some(WaitOutcome::Abandoned));
    let r = m.remove_adapter(0);
    ok(&m, r);
    no_fault(&m);
}

/// A dead bus with no PnP notification: the device is lost mid-run and
/// every register reads all-ones. The driver finds out from its own accesses (the ISR of a
/// shared-line interrupt does not claim it; a runlist commit's read-back sees
/// `DEVICE_STATUS.LOST`), refuses to schedule new queues with `STATUS_DEVICE_REMOVED` instead
/// of reporting success, and process exit and the PnP stop and remove still complete with
/// nothing leaked and no simulation check tripped (before: "queue still in a committed
/// runlist" at exit).
#[test]
fn dead_bus_is_noticed_new_queues_refused_and_teardown_completes() {
    let mut m = machine_with(Mode::Step, |a| a.device.doorbells = 4);
    let (p, k) = user_process(&m);
    let buf = okk(&m, k.create_allocation(4096));
    let mut uq = okk(&m, UserQueue::new(k, &config(0)));
    submit_wait(&m, &mut uq, &[fill(&buf, 0, 1)]);
    // A second queue, built but not yet connected (its doorbell connect commits it).
    let rq = raw_queue(&m, &k);
    let dev = m.device(0).expect("device").clone();
    dev.lose_device();
    // Another device's interrupt on a shared line: the ISR sees all-ones and declines.
    let (isr, _) = m.interrupt_counts(0);
    ok(&m, m.raise_interrupt(0));
    assert_eq!(m.interrupt_counts(0).0, isr + 1, "the ISR ran");
    no_fault(&m);
    // Connecting needs a runlist commit, which now reports the device removed.
    let r = k.connect_doorbell(rq.doorbell);
    assert_eq!(
        r,
        Err(rvgpu_umd::kmt::NtStatus(STATUS_DEVICE_REMOVED)),
        "{}",
        diagnostics(&m)
    );
    drop(uq);
    ok(&m, m.kill_process(&p));
    let r = m.stop_adapter(0);
    ok(&m, r);
    let r = m.remove_adapter(0);
    ok(&m, r);
    no_fault(&m);
}

/// A dead bus that PnP never reports, with TDR on (as Windows always has it): kernel
/// work submitted after the loss is accepted (the DDI cannot know), never completes, and the
/// TDR that follows cannot bring the device back. The driver's `DxgkDdiResetFromTimeout`
/// fails (the device stays lost, `STATUS_DEVICE_HARDWARE_ERROR`) and the OS bug checks
/// 0x116 `VIDEO_TDR_FAILURE`, as the DDI page says it does when that call fails
/// (https://learn.microsoft.com/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_resetfromtimeout).
/// The same happens when the first thing to need the GPU is VidMm (an allocation's paging
/// buffer). With TDR off the OS would wait for ever; the simulation stops with an error there.
#[test]
fn dead_bus_without_pnp_ends_in_video_tdr_failure() {
    let tdr_failure = |m: &Machine, r: Result<(), SimError>| {
        let Err(SimError::Bugcheck(b)) = r else {
            panic!("expected a bug check, got {r:?}; {}", diagnostics(m));
        };
        assert_eq!(
            b.code,
            rvgpu_simos::base::bugcheck::VIDEO_TDR_FAILURE,
            "{b:?}"
        );
        assert_eq!(b.params[2], 0xC000_0483, "the driver's status: {b:?}");
        assert_eq!(m.bugcheck(), Some(b));
    };

    // Kernel-mode work.
    let m = machine_with_quick_tdr();
    let (p, k) = user_process(&m);
    let ctx = okk(&m, k.create_context(0));
    let t = okk(&m, k.create_allocation(4096));
    let f0 = ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 1)]));
    legacy_completes(&m, f0);
    m.device(0).expect("device").lose_device();
    let f1 = ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 8, 2)]));
    assert!(f1 > f0);
    let r = m
        .run_until(20_000, Duration::ZERO, |m| m.legacy_fences(0, 0).1 >= f1)
        .map(|_| ());
    tdr_failure(&m, r);
    assert_eq!(t.mem.load(8), 0, "a lost device ran nothing");

    // VidMm first: an allocation's page-table update is a paging buffer on the paging node.
    let m = machine_with_quick_tdr();
    let (_p, k) = user_process(&m);
    okk(&m, k.create_allocation(4096));
    m.device(0).expect("device").lose_device();
    assert!(k.create_allocation(4096).is_err(), "the machine stopped");
    let b = m.bugcheck().expect("bug check");
    tdr_failure(&m, Err(SimError::Bugcheck(b)));
}

// ---------------------------------------------------------------------------------------------
// A GPU thread the host starves: TDR-05's timeouts count the machine's time, not the host's.

/// Threaded TDR with Windows-like short timeouts (200 ms, preemption 20 ms) on the node ring.
fn machine_time_tdr(hang_detect_ticks: u64) -> Machine {
    let m = machine_with(Mode::Threaded, |a| {
        a.hwsch_feature = false;
        a.device.hang_detect_ticks = hang_detect_ticks;
    });
    enable_tdr_after(&m, Duration::from_millis(200), Duration::from_millis(20));
    m
}

/// TDR-05: a DMA buffer whose GPU thread the host does not run for five timeouts of host
/// time is not reset: the GPU did not fail to move, it was not run. It completes once the
/// thread runs again.
#[test]
fn tdr_05_a_starved_engine_thread_is_not_reset_on_host_time() {
    let m = machine_time_tdr(rvgpu_hw::defaults::HANG_DETECT_TICKS);
    let (p, k, ctx) = process_with_context(&m);
    let t = okk(&m, k.create_allocation(4096));
    // Returns once the CMP thread has stopped: the buffer goes in while it is.
    m.device(0)
        .unwrap()
        .starve_cmp_thread(Duration::from_secs(1));
    let f = ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 7)]));
    run_until(&m, "the starved buffer", |m| all_done(m, 0));
    assert_eq!(t.mem.load(0), 7);
    assert_eq!(m.legacy_fences(0, 0), (f, f));
    assert_eq!(resets(&m), 0, "{:#?}", m.tdr_events(0));
    assert!(m.tdr_events(0).is_empty(), "{:#?}", m.tdr_events(0));
    no_fault(&m);
}

/// TDR-05: a hang the device never reports is still found by the timeout, in machine time:
/// not while the host starves the GPU's thread (the host's clock would have fired four times
/// over), and once the thread runs, after the timeout and the preemption timeout.
#[test]
fn tdr_05_a_hang_is_detected_after_the_timeout_of_machine_time() {
    // The device's own hang report after 100 s: only the OS's timeout finds this one.
    let m = machine_time_tdr(10_000_000_000);
    let (p, k, ctx) = process_with_context(&m);
    let t = okk(&m, k.create_allocation(4096));
    let f1 = ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 7)]));
    run_until(&m, "first fill", |m| all_done(m, 0));
    let dev = m.device(0).unwrap().clone();
    let clock = dev.run_clock();
    let machine = clock.elapsed();
    let hang = ok(&m, m.submit_legacy(&p, ctx, &[Command::Hang]));
    assert_eq!(hang, f1 + 1);
    let host = std::time::Instant::now();
    dev.starve_cmp_thread(Duration::from_secs(1));
    std::thread::sleep(Duration::from_millis(800));
    assert!(
        m.tdr_events(0).is_empty(),
        "a timeout during the starvation: {:#?}",
        m.tdr_events(0)
    );
    run_until(&m, "engine reset", |m| resets(m) == 1);
    assert!(host.elapsed() >= Duration::from_millis(1200));
    assert!(clock.elapsed() - machine >= Duration::from_millis(220));
    let ev = m.tdr_events(0);
    assert!(
        ev.iter().any(|e| matches!(
            e,
            TdrEvent::Detected {
                node: 0,
                cause: Cause::DmaTimeout
            }
        )),
        "{ev:#?}"
    );
    assert!(
        ev.iter()
            .any(|e| matches!(e, TdrEvent::Timeout { node: 0 })),
        "{ev:#?}"
    );
    assert!(
        ev.iter()
            .any(|e| matches!(e, TdrEvent::Aborted { node: 0, fence, .. } if *fence == hang)),
        "{ev:#?}"
    );
    no_fault(&m);
}

against_the_pe_image!();

/// In step mode a blocking wait must not give up while a kernel timer is
/// armed. The delivery of a user-mode queue's PROGRESS interrupt is lost; the GPU wrote the
/// work and the progress fence holds the value; only the driver's interrupt watchdog (a
/// periodic kernel timer) can tell the OS. The UMD's blocking wait, and the kernel-mode
/// queue's, return success: simulated time runs on to the next armed timer when a round has
/// nothing else to do, within the wait's own timeout.
#[test]
fn step_mode_waits_outlast_a_lost_progress_interrupt() {
    let m = machine_with(Mode::Step, |a| a.device.doorbells = 4);
    let dev = m.device(0).expect("device").clone();
    let (_p, k) = user_process(&m);
    let buf = okk(&m, k.create_allocation(4096));
    // Rounds of a FILL at `offset` on `q`, each losing its progress interrupt.
    let lossy_rounds = |what: &str, q: &mut dyn SubmitWait, offset: u64, rounds: u64| {
        for round in 1..=rounds {
            dev.drop_next_interrupt();
            assert!(
                q.submit_and_wait(&[fill(&buf, offset, round)]).is_ok(),
                "{what} wait {round} after a lost interrupt"
            );
        }
    };
    let mut uq = okk(&m, UserQueue::new(k, &config(0)));
    lossy_rounds("user-mode", &mut uq, 0, 3);
    let mut kq = okk(&m, KernelQueue::new(k, &config(0)));
    lossy_rounds("kernel-mode", &mut kq, 8, 2);
    let text = ok(&m, m.collect_dbg_info(0, VIDEO_ENGINE_TIMEOUT_DETECTED));
    assert!(
        text.lines()
            .any(|l| l.starts_with("watchdog ") && !l.ends_with(" lost_deliveries=0")),
        "the watchdog released them: {text}"
    );
    no_fault(&m);
}

/// A threaded machine without hardware scheduling whose OS gives up a wait for the GPU after
/// `limit`.
fn machine_with_wait_limit(limit: Duration) -> Machine {
    let mut cfg = rvgpu_simos::MachineConfig::single(Mode::Threaded);
    cfg.os.wait_timeout = limit;
    cfg.adapters[0].hwsch_feature = false;
    started(cfg)
}

/// MF-04: a blocking CPU wait on a paging fence whose GPU thread the host does not run for
/// five of the OS's wait limits is satisfied once the thread runs: the limit counts the
/// machine's time, and a GPU that was not run did not fail to signal.
#[test]
fn mf_04_a_blocking_wait_outlasts_a_gpu_thread_the_host_starves_past_its_limit() {
    let m = machine_with_wait_limit(Duration::from_millis(200));
    let (_p, k) = user_process(&m);
    let pq = okk(&m, k.create_paging_queue(0));
    let b = okk(&m, k.create_allocation(4096));
    let flags = rvgpu_umd::kmt::MakeResidentFlags::default();
    let made = okk(&m, k.make_resident_on(&pq, &[b.handle], flags));
    okk(&m, k.wait_for_fence(pq.fence, made.value));
    let at = 0x7000_0000_0000;
    let range = rvgpu_umd::kmt::ReserveGpuVa {
        base: at,
        size: 0x1_0000,
        ..Default::default()
    };
    okk(&m, k.reserve_gpu_va(&range));
    // Returns once the GPU's thread has stopped: the map's paging goes in while it is, and
    // the map returns before it completes (24H2 queues it).
    m.device(0)
        .unwrap()
        .starve_cmp_thread(Duration::from_secs(1));
    let map = rvgpu_umd::kmt::MapGpuVa::read_write(pq.handle, at, b.handle, 0, 1);
    let mapped = okk(&m, k.map_gpu_va(&map));
    okk(&m, k.wait_for_fence(pq.fence, mapped.paging_fence_value));
    no_fault(&m);
}

/// TDR-05: the machine's own wait for a condition (`Machine::run_until`) counts the machine's
/// time: a buffer whose GPU thread the host starves for five of its limits still completes
/// within it.
#[test]
fn tdr_05_run_until_outlasts_a_gpu_thread_the_host_starves_past_its_limit() {
    let m = machine_with_wait_limit(Duration::from_secs(10));
    let (p, k, ctx) = process_with_context(&m);
    let t = okk(&m, k.create_allocation(4096));
    // The first buffer maps the process's DMA arena, a wait of its own.
    ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 1)]));
    run_until(&m, "the first buffer", |m| all_done(m, 0));
    m.device(0)
        .unwrap()
        .starve_cmp_thread(Duration::from_secs(1));
    let f = ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 7)]));
    let done = ok(
        &m,
        m.run_until(0, Duration::from_millis(200), |m| all_done(m, 0)),
    );
    assert!(done, "{}", diagnostics(&m));
    assert_eq!(m.legacy_fences(0, 0), (f, f));
    assert_eq!(t.mem.load(0), 7);
}

/// TDR-05: a submission waiting for room for its DMA buffer (its process's arena full of
/// buffers in flight), while the host does not run the GPU's thread for ten of the OS's wait
/// limits, is not refused as stuck: the limit counts the machine's time.
#[test]
fn tdr_05_a_submission_waiting_for_dma_buffer_room_outlasts_a_gpu_thread_the_host_starves() {
    let m = machine_with_wait_limit(Duration::from_millis(200));
    let (p, k, ctx) = process_with_context(&m);
    let t = okk(&m, k.create_allocation(4096));
    ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 1)]));
    run_until(&m, "the first buffer", |m| all_done(m, 0));
    m.device(0)
        .unwrap()
        .starve_cmp_thread(Duration::from_secs(2));
    let mut last = 0;
    for i in 0..=rvgpu_simos::vidsch::legacy::IN_FLIGHT_LIMIT {
        last = ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, u64::from(i))]));
    }
    run_until(&m, "the last buffer", |m| all_done(m, 0));
    assert_eq!(m.legacy_fences(0, 0), (last, last));
    no_fault(&m);
}

under_the_pages!();
