//! One test (at least) per command, in step mode.
mod common;

use common::*;
use rvgpu_device::{DeviceConfig, STEP_TICKS};
use rvgpu_hw::addr::PhysAddr;
use rvgpu_hw::cmd::{self, Command, LogKind, Opcode};
use rvgpu_hw::engine::{EngineState, ResetResult, ENGINE_CTRL_RESET};
use rvgpu_hw::event::{EventKind, EventRecord, NO_TAG};
use rvgpu_hw::log::{pack_index, OP_SIGNAL_EXECUTED, OP_WAIT_UNBLOCKED};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::queue::NO_QUEUE;
use rvgpu_hw::regs::{self, IntCause};

/// The record of an event of `kind` posted for queue `queue_id` of engine 0, without flags.
fn engine0_event(kind: EventKind, queue_id: u32, [arg0, arg1, arg2]: [u64; 3]) -> EventRecord {
    EventRecord {
        kind: kind as u8,
        engine: 0,
        flags: 0,
        queue_id,
        arg0,
        arg1,
        arg2,
    }
}

#[test]
fn nop_padding_is_skipped_and_counted() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 1);
    // A NOP of 5 words whose padding is garbage: padding is never decoded.
    rig.push_words(&mut q, &[cmd::header(Opcode::Nop, 0, 5), !0, !0, !0, !0]);
    rig.submit(&mut q, &[Command::Nop { len: 1 }, signal(f, 1, 0, 0)]);
    rig.run();
    assert_eq!(rig.value(f.cv), 1);
    assert_eq!(rig.read_ptr(&q), q.wptr);
    assert_eq!(rig.dev.completed_commands(0), 3);
    assert_eq!(rig.engine_read64(0, regs::engine::COMPLETED_COMMANDS), 3);
}

#[test]
fn packets_wrap_around_the_ring_end() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    // Smallest ring: 256 bytes = 32 words.
    let mut q = rig.queue_with(0, 1, 0, 256, 84);
    rig.commit(0, &[&q]);
    // 30 words of NOP, so the 5-word signal starts at word 30 and wraps to word 0.
    rig.submit(&mut q, &[Command::Nop { len: 30 }]);
    rig.run();
    rig.submit(&mut q, &[signal(f, 7, 0, 0)]);
    rig.run();
    assert_eq!(rig.value(f.cv), 7);
    assert_eq!(rig.read_ptr(&q), 35 * 8, "free-running pointer");
    // And a NOP that wraps (padding across the end).
    rig.submit(&mut q, &[Command::Nop { len: 20 }]);
    rig.run();
    // Ring position is now word 23: a 12-word NOP runs across the end.
    rig.submit(&mut q, &[Command::Nop { len: 12 }, signal(f, 8, 0, 0)]);
    rig.run();
    assert_eq!(rig.value(f.cv), 8);
    assert!(rig.dev.queues()[0].fault.is_none());
}

#[test]
fn nf_03_conditional_signal_interrupts_only_once_monitored_value_is_reached() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 9);
    // No waiter: MonitoredValue = u64::MAX, no interrupt.
    rig.submit(&mut q, &[signal(f, 1, cmd::SIGNAL_CONDITIONAL_IRQ, 0xAA)]);
    rig.run();
    assert_eq!(rig.value(f.cv), 1);
    assert_eq!(
        rig.dev.read32(regs::INT_STATUS),
        0,
        "nf_03: no waiter, no interrupt"
    );
    assert!(!rig.line.level());
    // A waiter for 3, as 24H2 arms it: MonitoredValue = 3. Signalling 2 does not interrupt,
    // 3 does (a `>` rule would hang that waiter, `rvgpu_hw::fence::needs_interrupt`).
    rig.mem.write_u64(PhysAddr::new(f.mv), 3).unwrap();
    rig.submit(&mut q, &[signal(f, 2, cmd::SIGNAL_CONDITIONAL_IRQ, 0xAA)]);
    rig.run();
    assert_eq!(rig.dev.read32(regs::INT_STATUS), 0);
    rig.submit(&mut q, &[signal(f, 3, cmd::SIGNAL_CONDITIONAL_IRQ, 0xAA)]);
    rig.run();
    assert!(rig.line.level(), "nf_03: waiter, interrupt");
    let (st, evs) = rig.isr();
    assert_eq!(st, IntCause::FENCE_SIGNALED);
    assert_eq!(
        evs,
        vec![engine0_event(EventKind::FenceSignaled, 9, [0xAA, 3, f.mv])]
    );
    assert!(!rig.line.level(), "acknowledged");
}

#[test]
fn legacy_signal_always_interrupts_and_plain_signal_never() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 1);
    rig.submit(&mut q, &[signal(f, 1, 0, 5)]);
    rig.run();
    assert_eq!(rig.dev.read32(regs::INT_STATUS), 0, "no flag, no interrupt");
    // Legacy monitored fence: interrupt even with MonitoredValue = MAX; MV not even read.
    rig.submit(
        &mut q,
        &[Command::FenceSignal {
            flags: cmd::SIGNAL_ALWAYS_IRQ,
            value_addr: f.cv,
            value: 2,
            monitored_addr: 0,
            report_tag: 5,
        }],
    );
    rig.run();
    let (_, evs) = rig.isr();
    assert_eq!(of_kind(&evs, EventKind::FenceSignaled).len(), 1);
    assert_eq!(evs[0].arg1, 2);
    assert_eq!(
        evs[0].flags,
        rvgpu_hw::event::FLAG_LEGACY_SIGNAL,
        "a legacy signal says so, so the driver can report a monitored-fence signal"
    );
}

#[test]
fn fence_event_without_exact_report_or_optimized_irq() {
    let mut rig = Rig::new(DeviceConfig {
        exact_fence_report: false,
        optimized_fence_irq: false,
        ..DeviceConfig::step()
    });
    let f = rig.fence(0);
    rig.mem.write_u64(PhysAddr::new(f.mv), 0).unwrap();
    let mut q = rig.queue_committed(0, 4);
    rig.submit(&mut q, &[signal(f, 1, cmd::SIGNAL_CONDITIONAL_IRQ, 77)]);
    rig.run();
    let (_, evs) = rig.isr();
    assert_eq!(evs[0].arg0, NO_TAG);
    assert_eq!(evs[0].queue_id, NO_QUEUE);
}

/// What a row of [`fence_wait_is_released_exactly_when_the_device_sees_its_target`] does to
/// the word the wait is on.
#[derive(Clone, Copy, Debug)]
enum Change {
    /// Nothing: the word is at the target from the start.
    AtTarget,
    /// FENCE_SIGNAL of this value from a queue on this engine (0 is the waiter's).
    Signal(u32, u64),
    /// The CPU stores the target, then rescans.
    CpuStore(Rescan),
}

/// The `WAIT_RESCAN` after a CPU store: none, another word's address, the word's, or 0.
#[derive(Clone, Copy, Debug)]
enum Rescan {
    Skipped,
    Other,
    Word,
    All,
}

/// When a row's wait is released: never, by the device's next pass, or before the change
/// returns (a register write).
#[derive(Clone, Copy, Debug)]
enum Release {
    Never,
    Later,
    AtOnce,
}

/// FENCE_WAIT(f >= 3) then FENCE_SIGNAL(g = 1) on queue 1 of engine 0, one row per way the
/// waited-for word changes. A blocked queue leaves its engine idle; the wait is released
/// exactly when the device sees the target reached: a signal on either engine (after its
/// pass), a `WAIT_RESCAN` of the word or of 0 after a CPU store (before the write returns),
/// or a word already at the target. A CPU store alone is never seen (no polling of shared
/// memory), nor a rescan of another word, nor a value below the target.
#[test]
fn fence_wait_is_released_exactly_when_the_device_sees_its_target() {
    use Change::*;
    use Release::*;
    use Rescan::*;
    let rows = [
        ("already at the target", AtTarget, AtOnce),
        ("signal below the target, same engine", Signal(0, 2), Never),
        ("signal of the target, same engine", Signal(0, 3), Later),
        ("signal of the target, other engine", Signal(1, 3), Later),
        ("CPU store alone", CpuStore(Skipped), Never),
        ("CPU store, rescan of another word", CpuStore(Other), Never),
        ("CPU store, rescan of the word", CpuStore(Word), AtOnce),
        ("CPU store, rescan of every wait", CpuStore(All), AtOnce),
    ];
    for (row, change, release) in rows {
        let mut rig = Rig::step();
        let initial = if matches!(change, AtTarget) { 3 } else { 0 };
        let (f, g) = (rig.fence(initial), rig.fence(0));
        let [mut waiter, mut same] = rig.queues_committed(0, [1, 2]);
        let mut other = rig.queue_committed(1, 3);
        rig.submit(&mut waiter, &[fence_wait(f, 3), signal(g, 1, 0, 0)]);
        rig.run();
        let blocked = |rig: &Rig| snap(rig, 1).unwrap().blocked_on;
        if initial < 3 {
            assert_eq!(blocked(&rig), Some((f.cv, 3)), "{row}: blocked");
            assert_eq!(rig.value(g.cv), 0, "{row}: nothing after the wait ran");
            let s = status(&rig, 0).state;
            assert_eq!(s, EngineState::Idle, "{row}: blocked queue = idle engine");
        }
        match change {
            AtTarget => {}
            Signal(0, v) => rig.submit(&mut same, &[signal(f, v, 0, 0)]),
            Signal(_, v) => rig.submit(&mut other, &[signal(f, v, 0, 0)]),
            CpuStore(rescan) => {
                rig.mem.write_u64(PhysAddr::new(f.cv), 3).unwrap();
                let addr = match rescan {
                    Skipped => None,
                    Other => Some(f.mv),
                    Word => Some(f.cv),
                    All => Some(0),
                };
                if let Some(addr) = addr {
                    rig.dev.write64(regs::WAIT_RESCAN, addr);
                }
            }
        }
        let waiting = Some((f.cv, 3));
        let now = if matches!(release, AtOnce) {
            None
        } else {
            waiting
        };
        assert_eq!(blocked(&rig), now, "{row}: before any device pass");
        rig.run();
        let released = !matches!(release, Never);
        let after = if released { None } else { waiting };
        assert_eq!(blocked(&rig), after, "{row}: after the device ran");
        let signalled = rig.value(g.cv);
        assert_eq!(signalled, u64::from(released), "{row}: the signal after it");
    }
}

#[test]
fn nf_17_fence_store_writes_the_word_and_releases_its_waits() {
    let mut rig = Rig::step();
    let (f, g) = (rig.fence(0), rig.fence(0));
    let mut q = rig.queue_committed(0, 1);
    rig.submit(&mut q, &[fence_wait(f, 3), signal(g, 1, 0, 0)]);
    rig.run();
    assert_eq!(rig.dev.queues()[0].blocked_on, Some((f.cv, 3)));
    // A misaligned address stores nothing and wakes nothing.
    rig.dev.write64(regs::FENCE_STORE_ADDR, f.cv + 4);
    rig.dev.write64(regs::FENCE_STORE, 3);
    assert_eq!(rig.value(f.cv), 0);
    assert_eq!(rig.dev.queues()[0].blocked_on, Some((f.cv, 3)));
    // A value below the wait's is stored, the wait stays blocked.
    rig.dev.write64(regs::FENCE_STORE_ADDR, f.cv);
    rig.dev.write64(regs::FENCE_STORE, 2);
    assert_eq!(rig.value(f.cv), 2);
    assert_eq!(rig.dev.queues()[0].blocked_on, Some((f.cv, 3)));
    // The awaited value: stored and the wait re-evaluated before the write returns.
    rig.dev.write64(regs::FENCE_STORE, 3);
    assert_eq!(rig.value(f.cv), 3);
    assert_eq!(rig.dev.queues()[0].blocked_on, None);
    rig.run();
    assert_eq!(rig.value(g.cv), 1);
    // The MonitoredValue word is stored the same way (what the KMD does for 24H2's
    // UpdateMonitoredValues), and a signal then decides against it.
    rig.dev.write64(regs::FENCE_STORE_ADDR, g.mv);
    rig.dev.write64(regs::FENCE_STORE, 2);
    assert_eq!(rig.value(g.mv), 2);
    rig.submit(&mut q, &[signal(g, 2, cmd::SIGNAL_CONDITIONAL_IRQ, 0xAB)]);
    rig.run();
    assert!(rig.line.level(), "2 >= MonitoredValue 2 interrupts");
}

#[test]
fn log_03_signal_log_entry_and_header() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 1);
    for i in 0..2u32 {
        rig.submit(
            &mut q,
            &[
                signal(f, u64::from(i) + 1, cmd::SIGNAL_CONDITIONAL_IRQ, 0),
                log_write(LogKind::Signal, i, 0x4000_0010, u64::from(i) + 1),
            ],
        );
        rig.run();
    }
    let e0 = log_entry(&rig, q.desc.signal_log.get(), 0);
    let e1 = log_entry(&rig, q.desc.signal_log.get(), 1);
    assert_eq!(e0.fence_value, 1);
    assert_eq!(e1.fence_value, 2);
    assert_eq!(e1.h_native_fence, 0x4000_0010);
    assert_eq!(e1.operation_type, OP_SIGNAL_EXECUTED);
    assert!(e0.fence_end_gpu_timestamp > 0);
    assert!(
        e1.fence_end_gpu_timestamp >= e0.fence_end_gpu_timestamp,
        "LOG-06"
    );
    assert_eq!(rig.value(q.desc.signal_log.get()), pack_index(2, 0));
    assert_eq!(rig.dev.completed_commands(0), 4);
}

#[test]
fn log_03_wait_log_entry_has_observed_timestamp() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut waiter = rig.queue_committed(0, 1);
    let mut signaller = rig.queue_committed(1, 2);
    rig.submit(
        &mut waiter,
        &[fence_wait(f, 1), log_write(LogKind::Wait, 0, 0x77, 1)],
    );
    rig.run();
    let blocked_at = rig.dev.gpu_clock();
    steps(&rig, 10);
    rig.submit(&mut signaller, &[signal(f, 1, 0, 0)]);
    rig.run();
    let e = log_entry(&rig, waiter.desc.wait_log.get(), 0);
    assert_eq!(e.operation_type, OP_WAIT_UNBLOCKED);
    assert_eq!((e.h_native_fence, e.fence_value), (0x77, 1));
    assert!(
        e.fence_observed_gpu_timestamp <= blocked_at,
        "first seen unresolved"
    );
    assert!(
        e.fence_end_gpu_timestamp >= e.fence_observed_gpu_timestamp + 10 * STEP_TICKS,
        "{e:?}"
    );
    assert_eq!(rig.value(waiter.desc.wait_log.get()), pack_index(1, 0));
}

#[test]
fn log_05_overflow_wraps_and_counts_and_header_never_goes_down() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_with(0, 1, 0, 4096, 4);
    rig.commit(0, &[&q]);
    for i in 0..6u32 {
        rig.submit(
            &mut q,
            &[
                signal(f, u64::from(i) + 1, 0, 0),
                log_write(LogKind::Signal, i, 1, u64::from(i) + 1),
            ],
        );
    }
    rig.run();
    // 6 entries in a 4-entry log: FirstFreeEntryIndex 2, WraparoundCount 1.
    assert_eq!(rig.value(q.desc.signal_log.get()), pack_index(2, 1));
    assert_eq!(
        log_entry(&rig, q.desc.signal_log.get(), 1).fence_value,
        6,
        "overwritten"
    );
    assert_eq!(log_entry(&rig, q.desc.signal_log.get(), 2).fence_value, 3);
    // An index that would lower the header is written but the header keeps the larger value.
    rig.submit(&mut q, &[log_write(LogKind::Signal, 0, 1, 99)]);
    rig.run();
    assert_eq!(log_entry(&rig, q.desc.signal_log.get(), 0).fence_value, 99);
    assert_eq!(rig.value(q.desc.signal_log.get()), pack_index(2, 1));
}

#[test]
fn log_04_fence_event_visible_implies_log_in_memory() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    rig.mem.write_u64(PhysAddr::new(f.mv), 0).unwrap();
    let mut q = rig.queue_committed(0, 1);
    rig.submit(
        &mut q,
        &[
            signal(f, 1, cmd::SIGNAL_CONDITIONAL_IRQ, 3),
            log_write(LogKind::Signal, 0, 3, 1),
        ],
    );
    // One step executes the signal and the log write together, before the decision.
    rig.dev.step();
    let (st, evs) = rig.isr();
    assert!(st.contains(IntCause::FENCE_SIGNALED));
    assert_eq!(evs.len(), 1);
    assert_eq!(rig.value(q.desc.signal_log.get()), pack_index(1, 0));
    assert_eq!(log_entry(&rig, q.desc.signal_log.get(), 0).fence_value, 1);
    assert_eq!(rig.dev.completed_commands(0), 2);
}

/// NF-15 / LOG-04: a FenceSignaled record says "logged" exactly when the device ran the
/// signal-log LOG_WRITE of the signal's value inside the signal: not for a signal with no
/// LOG_WRITE behind it, nor for one whose LOG_WRITE logs another value.
#[test]
fn nf_15_fence_record_is_flagged_logged_only_for_its_own_entry() {
    use rvgpu_hw::event::FLAG_LOGGED;
    let mut rig = Rig::step();
    let f = rig.fence(0);
    rig.mem.write_u64(PhysAddr::new(f.mv), 0).unwrap();
    let mut q = rig.queue_committed(0, 1);
    let cases: [(&[Command], u16); 3] = [
        (
            &[
                signal(f, 1, cmd::SIGNAL_CONDITIONAL_IRQ, 3),
                log_write(LogKind::Signal, 0, 3, 1),
            ],
            FLAG_LOGGED,
        ),
        (&[signal(f, 2, cmd::SIGNAL_CONDITIONAL_IRQ, 3)], 0),
        (
            &[
                signal(f, 3, cmd::SIGNAL_CONDITIONAL_IRQ, 3),
                log_write(LogKind::Signal, 1, 3, 7),
            ],
            0,
        ),
    ];
    for (cmds, flags) in cases {
        rig.submit(&mut q, cmds);
        rig.run();
        let (_, evs) = rig.isr();
        let fence = of_kind(&evs, EventKind::FenceSignaled);
        assert_eq!(fence.len(), 1, "{cmds:?}");
        assert_eq!(fence[0].flags, flags, "{cmds:?}");
    }
}

#[test]
fn timestamps_are_monotonic() {
    let mut rig = Rig::step();
    let t = rig.alloc(64);
    let mut q = rig.queue_committed(0, 1);
    rig.submit(
        &mut q,
        &[
            Command::Timestamp { addr: t },
            Command::Timestamp { addr: t + 8 },
            Command::Timestamp { addr: t + 16 },
        ],
    );
    rig.run();
    let ts = rig.mem.read_words(PhysAddr::new(t), 3).unwrap();
    assert!(ts[0] > 0 && ts[0] < ts[1] && ts[1] < ts[2], "{ts:?}");
    assert!(rig.dev.read64(regs::GPU_CLOCK) >= ts[2]);
}

#[test]
fn progress_with_and_without_interrupt() {
    let mut rig = Rig::step();
    let mut q = rig.queue_committed(0, 3);
    rig.submit(
        &mut q,
        &[Command::Progress {
            irq: false,
            value: 10,
        }],
    );
    rig.run();
    assert_eq!(rig.value(q.desc.progress_fence.get()), 10);
    assert_eq!(rig.dev.read32(regs::INT_STATUS), 0);
    rig.submit(&mut q, &[progress_irq(11)]);
    rig.run();
    assert_eq!(rig.value(q.desc.progress_fence.get()), 11);
    let (st, evs) = rig.isr();
    assert_eq!(st, IntCause::PROGRESS);
    assert_eq!(
        evs,
        vec![engine0_event(EventKind::Progress, 3, [11, q.wptr, 0])]
    );
}

#[test]
fn copy_moves_bytes_in_chunks() {
    let mut rig = Rig::step();
    let src = rig.alloc(64 << 10);
    let dst = rig.alloc(64 << 10);
    let words: Vec<u64> = (0..8192u64).map(|i| i * 3 + 1).collect();
    rig.mem.write_words(PhysAddr::new(src), &words).unwrap();
    let mut q = rig.queue_committed(1, 1);
    rig.submit(&mut q, &[copy(src, dst, 64 << 10)]);
    let steps = rig.run();
    assert!(
        steps >= 16,
        "64 KiB in 4 KiB chunks takes 16 quanta, took {steps}"
    );
    assert_eq!(rig.mem.read_words(PhysAddr::new(dst), 8192).unwrap(), words);
    assert_eq!(rig.read_ptr(&q), q.wptr);
    assert_eq!(rig.dev.completed_commands(1), 1);
}

#[test]
fn copy_between_sysmem_and_vram_and_fill() {
    let mut rig = Rig::step();
    let src = rig.alloc(4096);
    rig.mem
        .write_words(PhysAddr::new(src), &[1, 2, 3, 4])
        .unwrap();
    let vram = rvgpu_hw::addr::VRAM_BASE + 0x1000;
    let mut q = rig.queue_committed(1, 1);
    rig.submit(
        &mut q,
        &[
            copy(src, vram, 32),
            Command::Fill {
                dst: vram + 32,
                bytes: 10_000 * 8,
                pattern: 0xABCD,
            },
        ],
    );
    rig.run();
    assert_eq!(
        rig.mem.read_words(PhysAddr::new(vram), 4).unwrap(),
        vec![1, 2, 3, 4]
    );
    let filled = rig
        .mem
        .read_words(PhysAddr::new(vram + 32), 10_000)
        .unwrap();
    assert!(filled.iter().all(|&w| w == 0xABCD));
    assert_eq!(rig.value(vram + 32 + 80_000), 0, "stops at the end");
}

#[test]
fn hang_is_detected_and_engine_reset_recovers() {
    let mut rig = Rig::step_with(|c| c.hang_detect_ticks = 5 * STEP_TICKS);
    let (f, g) = (rig.fence(0), rig.fence(0));
    let mut q = rig.queue_committed(0, 5);
    let mut other = rig.queue_committed(1, 6);
    rig.submit(
        &mut q,
        &[signal(f, 1, 0, 0), Command::Hang, signal(f, 2, 0, 0)],
    );
    steps(&rig, 10);
    assert_eq!(rig.value(f.cv), 1, "commands before the HANG ran");
    assert_eq!(status(&rig, 0).state, EngineState::Hung);
    assert_eq!(rig.engine_read32(0, regs::engine::CURRENT_QUEUE), 5);
    let (st, evs) = rig.isr();
    assert!(st.contains(IntCause::ENGINE_STATE));
    let es = of_kind(&evs, EventKind::EngineState);
    assert_eq!(es.len(), 1, "reported once");
    assert_eq!(
        (es[0].arg0, es[0].arg1),
        (EngineState::Active as u64, EngineState::Hung as u64)
    );
    // The other engine is unaffected.
    rig.submit(&mut other, &[signal(g, 1, 0, 0)]);
    rig.run();
    assert_eq!(rig.value(g.cv), 1);
    // Reset engine 0: HANG aborted at rptr 40 (after the 5-word signal).
    assert_eq!(reset(&rig, 0), (ResetResult::Ok as u32, 5, 40));
    // Idle and held until the next commit (D1); the aborted queue left the runlist (it
    // was the only one; other queues would stay, see engine_reset.rs).
    let s = status(&rig, 0);
    assert_eq!((s.state, s.held), (EngineState::Idle, true));
    assert!(
        rig.dev.engine_snapshot(0).unwrap().queues.is_empty(),
        "the aborted queue left"
    );
    assert_eq!(
        rig.dev.engine_snapshot(1).unwrap().queues.len(),
        1,
        "engine 1 untouched"
    );
    let (st, evs) = rig.isr();
    assert!(st.contains(IntCause::RESET_DONE));
    let rd = of_kind(&evs, EventKind::ResetDone);
    assert_eq!(
        (rd[0].arg0, rd[0].arg1, rd[0].arg2),
        (ResetResult::Ok as u64, 5, 40)
    );
    assert_eq!(rig.value(f.cv), 1, "nothing after the HANG ran");
    // Resubmission: skip the HANG and recommit.
    rig.set_read_ptr(&q, 48);
    rig.commit(0, &[&q]);
    rig.run();
    assert_eq!(rig.value(f.cv), 2);
}

#[test]
fn injected_hang_and_failed_reset() {
    let mut rig = Rig::step_with(|c| c.hang_detect_ticks = 3 * STEP_TICKS);
    let f = rig.fence(0);
    let mut q = rig.queue_committed(1, 2);
    rig.dev.inject_hang(1);
    rig.submit(&mut q, &[signal(f, 1, 0, 0)]);
    steps(&rig, 6);
    assert_eq!(rig.value(f.cv), 0, "a hung engine executes nothing");
    let (_, evs) = rig.isr();
    assert_eq!(
        of_kind(&evs, EventKind::EngineState)[0].arg1,
        EngineState::Hung as u64
    );
    rig.dev.fail_next_reset(1);
    let ctrl = rig.engine_reg(1, regs::engine::CTRL);
    rig.dev.write32(ctrl, ENGINE_CTRL_RESET);
    let result = rig.engine_reg(1, regs::engine::RESET_RESULT);
    assert_eq!(rig.dev.read32(result), ResetResult::Failed as u32);
    let (st, evs) = rig.isr();
    assert!(st.contains(IntCause::RESET_DONE));
    assert_eq!(
        of_kind(&evs, EventKind::ResetDone)[0].arg0,
        ResetResult::Failed as u64
    );
    rig.dev.write32(ctrl, ENGINE_CTRL_RESET);
    assert_eq!(rig.dev.read32(result), ResetResult::Ok as u32);
    // An injected hang has no packet in flight: no queue is named and none leaves (D2);
    // the queue stays with the write pointer its doorbell loaded, and the commit that ends
    // the hold keeps it.
    assert_eq!(rig.engine_read32(1, regs::engine::RESET_QUEUE), NO_QUEUE);
    let s = rig.dev.engine_snapshot(1).unwrap();
    assert!(s.held);
    assert_eq!(s.queues[0].known_write_ptr, q.wptr);
    steps(&rig, 5);
    assert_eq!(rig.value(f.cv), 0, "held");
    rig.commit(1, &[&q]);
    rig.run();
    assert_eq!(rig.value(f.cv), 1);
}

#[test]
fn reset_interrupts_a_long_copy_between_chunks() {
    let mut rig = Rig::step();
    let (_q, dst) = rig.long_copy(1 << 20, 0x55);
    steps(&rig, 3);
    assert!(rig.dev.engine_snapshot(1).unwrap().has_work);
    assert_eq!(reset(&rig, 1), (ResetResult::Ok as u32, 1, 0));
    rig.run();
    assert_eq!(rig.value(dst + (1 << 20) - 8), 0, "copy aborted");
    assert_eq!(rig.dev.completed_commands(1), 0);
}
