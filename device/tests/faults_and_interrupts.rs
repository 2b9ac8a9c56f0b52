//! Every interrupt cause, every fault code, the ISR protocol, the line, fault injection.
mod common;

use common::*;
use rvgpu_device::{IrqDelay, STEP_TICKS};
use rvgpu_hw::addr::PhysAddr;
use rvgpu_hw::cmd::{self, Command, LogKind, Opcode};
use rvgpu_hw::engine::{EngineState, EngineStatus};
use rvgpu_hw::event::{EventKind, EventRecord, FaultCode};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::queue::{QueueDescriptor, RingControl};
use rvgpu_hw::regs::{self, IntCause};

/// Runs `bad` words on one queue next to a healthy queue on the same engine; returns the
/// fault event. The healthy queue must keep running.
fn fault_with(rig: &mut Rig, prepare: impl FnOnce(&mut Rig, &mut Q)) -> EventRecord {
    let g = rig.fence(0);
    let mut bad = rig.queue(0, 1);
    let mut good = rig.queue(0, 2);
    prepare(rig, &mut bad);
    rig.commit(0, &[&bad, &good]);
    rig.ring(&bad);
    rig.run();
    rig.submit(&mut good, &[signal(g, 1, 0, 0)]);
    rig.run();
    assert_eq!(rig.value(g.cv), 1, "other queue keeps running");
    let (st, evs) = rig.isr();
    assert!(st.contains(IntCause::FAULT));
    let faults = of_kind(&evs, EventKind::Fault);
    assert_eq!(faults.len(), 1, "{evs:?}");
    assert_eq!(faults[0].queue_id, 1);
    assert!(snap(rig, 1).unwrap().fault.is_some());
    assert!(snap(rig, 2).unwrap().fault.is_none());
    faults[0]
}

#[test]
fn fault_bad_opcode() {
    let mut rig = Rig::step();
    let f = fault_with(&mut rig, |rig, q| {
        rig.push(q, &[Command::Nop { len: 1 }]);
        rig.push_words(q, &[0x1_00EE]);
    });
    assert_eq!(f.arg0, FaultCode::BadOpcode as u64);
    assert_eq!(f.arg2, 8, "rptr of the faulting packet");
}

#[test]
fn fault_bad_length_wrong_size_and_past_write_pointer() {
    let mut rig = Rig::step();
    let f = fault_with(&mut rig, |rig, q| {
        rig.push_words(q, &[cmd::header(Opcode::FenceWait, 0, 2), 0]);
    });
    assert_eq!(f.arg0, FaultCode::BadLength as u64);
    let mut rig = Rig::step();
    let f = fault_with(&mut rig, |rig, q| {
        // A 5-word signal of which only 3 words are published.
        rig.push_words(q, &[cmd::header(Opcode::FenceSignal, 0, 5), 0, 0]);
    });
    assert_eq!(f.arg0, FaultCode::BadLength as u64);
}

#[test]
fn fault_bad_address_outside_windows_and_misaligned() {
    let mut rig = Rig::step();
    // Real memory, but not in any registered window.
    let outside = rig.mem.alloc_system(4096, 4096).unwrap().bus_addr;
    let f = fault_with(&mut rig, |rig, q| {
        rig.push(q, &[Command::Timestamp { addr: outside }]);
    });
    assert_eq!((f.arg0, f.arg1), (FaultCode::BadAddress as u64, outside));
    let mut rig = Rig::step();
    let t = rig.alloc(64) + 4;
    let f = fault_with(&mut rig, |rig, q| {
        rig.push(q, &[Command::Timestamp { addr: t }]);
    });
    assert_eq!((f.arg0, f.arg1), (FaultCode::BadAddress as u64, t));
    let mut rig = Rig::step();
    let f = fault_with(&mut rig, |rig, q| {
        let vram_end = rvgpu_hw::addr::VRAM_BASE + (16 << 20);
        rig.push(
            q,
            &[Command::Fill {
                dst: vram_end - 8,
                bytes: 16,
                pattern: 0,
            }],
        );
    });
    assert_eq!(f.arg0, FaultCode::BadAddress as u64);
}

#[test]
fn fault_bad_header() {
    let mut rig = Rig::step();
    let f = fault_with(&mut rig, |rig, q| {
        rig.push_words(q, &[cmd::header(Opcode::Hang, 0, 1) | (1 << 40)]);
    });
    assert_eq!(f.arg0, FaultCode::BadHeader as u64);
}

#[test]
fn fault_bad_argument() {
    let mut rig = Rig::step();
    let f = fault_with(&mut rig, |rig, q| {
        let d = rig.alloc(64);
        rig.push_words(q, &[cmd::header(Opcode::Fill, 0, 4), d, 12, 0]);
    });
    assert_eq!(f.arg0, FaultCode::BadArgument as u64);
}

/// UM-16: a queue whose descriptor names no progress fence (`progress_fence` 0) has none:
/// PROGRESS there is `BadArgument`, not a store to address 0.
#[test]
fn um_16_progress_without_a_progress_fence_is_bad_argument() {
    let mut rig = Rig::step();
    let f = fault_with(&mut rig, |rig, q| {
        q.desc.progress_fence = rvgpu_hw::addr::GpuVa::NULL;
        rig.push(q, &[progress_irq(5)]);
    });
    // A store to 0 would fault BadAddress (0 is outside the system window).
    assert_eq!((f.arg0, f.arg1), (FaultCode::BadArgument as u64, 0));
}

#[test]
fn fault_nop_with_flags() {
    let mut rig = Rig::step();
    let f = fault_with(&mut rig, |rig, q| {
        rig.push_words(q, &[cmd::header(Opcode::Nop, 1, 2), 0]);
    });
    assert_eq!(
        f.arg0,
        FaultCode::BadArgument as u64,
        "NOP has no flags: a set flag faults like on any flagless opcode"
    );
}

#[test]
fn fault_bad_ring_control() {
    let mut rig = Rig::step();
    let f = fault_with(&mut rig, |rig, q| {
        // Write pointer more than a ring ahead of the read pointer.
        rig.mem
            .write_u64(
                PhysAddr::new(q.desc.ring_control.get() + RingControl::WRITE_PTR),
                8192,
            )
            .unwrap();
    });
    assert_eq!(f.arg0, FaultCode::BadRingControl as u64);
}

#[test]
fn fault_no_log() {
    let mut rig = Rig::step();
    let f = fault_with(&mut rig, |rig, q| {
        q.desc.signal_log = rvgpu_hw::addr::GpuVa::NULL;
        rig.push(q, &[log_write(LogKind::Signal, 0, 0, 0)]);
    });
    assert_eq!(f.arg0, FaultCode::NoLog as u64);
}

#[test]
fn faulted_queue_stays_stopped() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 1);
    rig.push_words(&mut q, &[0xEE]);
    rig.submit(&mut q, &[signal(f, 1, 0, 0)]);
    rig.run();
    rig.ring(&q);
    rig.run();
    assert_eq!(rig.value(f.cv), 0);
    assert_eq!(rig.read_ptr(&q), 0, "rptr stays at the faulting packet");
}

#[test]
fn corrupt_ring_injection_faults_the_queue() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 3);
    rig.push(&mut q, &[signal(f, 1, 0, 0)]);
    assert!(rig.dev.corrupt_ring(3, 0xFFFF_FFFF_FFFF_FFFF));
    assert!(!rig.dev.corrupt_ring(99, 0));
    rig.ring(&q);
    rig.run();
    let (_, evs) = rig.isr();
    assert_eq!(
        of_kind(&evs, EventKind::Fault)[0].arg0,
        FaultCode::BadHeader as u64
    );
    assert_eq!(rig.value(f.cv), 0);
}

#[test]
fn invalid_descriptor_is_skipped_with_a_fault_event() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut good = rig.queue(0, 1);
    let bad = QueueDescriptor {
        ring_size: 100,
        ..rig.queue(0, 2).desc
    };
    let invalid = QueueDescriptor {
        flags: 0,
        queue_id: 3,
        ..bad
    };
    rig.commit_descs(0, &[bad, good.desc, invalid]);
    let (st, evs) = rig.isr();
    assert_eq!(st, IntCause::FAULT);
    let faults = of_kind(&evs, EventKind::Fault);
    assert_eq!(faults.len(), 1, "entry without VALID is skipped silently");
    assert_eq!(
        (faults[0].queue_id, faults[0].arg0),
        (2, FaultCode::BadDescriptor as u64)
    );
    assert_eq!(rig.dev.queues().len(), 1);
    rig.submit(&mut good, &[signal(f, 1, 0, 0)]);
    rig.run();
    assert_eq!(rig.value(f.cv), 1);
}

#[test]
fn event_overflow_when_the_ring_is_full() {
    let mut rig = Rig::step();
    let mut q = rig.queue_with(0, 1, 0, 4096, 84);
    rig.commit(0, &[&q]);
    let n = EVENT_RING_SIZE as u64 + 6;
    let cmds: Vec<_> = (0..n).map(progress_irq).collect();
    rig.submit(&mut q, &cmds);
    rig.run();
    let (st, evs) = rig.isr();
    assert!(st.contains(IntCause::EVENT_OVERFLOW | IntCause::PROGRESS));
    assert_eq!(evs.len(), EVENT_RING_SIZE as usize, "the rest were dropped");
    assert_eq!(evs.last().unwrap().arg0, u64::from(EVENT_RING_SIZE) - 1);
    assert_eq!(
        rig.value(q.desc.progress_fence.get()),
        n - 1,
        "work not affected"
    );
    // Space again: records flow again, no overflow.
    rig.submit(&mut q, &[progress_irq(1000)]);
    rig.run();
    let (st, evs) = rig.isr();
    assert_eq!(st, IntCause::PROGRESS);
    assert_eq!(evs[0].arg0, 1000);
}

#[test]
fn isr_ack_before_drain_loses_nothing() {
    let mut rig = Rig::step();
    let mut q = rig.queue_committed(0, 1);
    rig.submit(&mut q, &[progress_irq(1)]);
    rig.dev.step();
    // ISR: read status, acknowledge BEFORE draining...
    let status = rig.dev.read32(regs::INT_STATUS);
    rig.dev.write32(regs::INT_ACK, status);
    assert!(!rig.line.level());
    // ...the device posts another record during the drain...
    rig.submit(&mut q, &[progress_irq(2)]);
    rig.dev.step();
    let first = rig.drain();
    // ...and its bit is set again, so the next ISR sees it; nothing is lost.
    assert!(rig.line.level());
    let (st, second) = rig.isr();
    assert_eq!(st, IntCause::PROGRESS);
    let all: Vec<u64> = first.iter().chain(second.iter()).map(|e| e.arg0).collect();
    assert_eq!(all, vec![1, 2]);
}

#[test]
fn line_follows_status_and_enable() {
    let mut rig = Rig::step();
    rig.dev.write32(regs::INT_ENABLE, 0);
    let mut q = rig.queue_committed(0, 1);
    rig.submit(&mut q, &[progress_irq(1)]);
    rig.run();
    assert_eq!(rig.dev.read32(regs::INT_STATUS), IntCause::PROGRESS.bits());
    assert!(!rig.line.level(), "masked");
    rig.dev.write32(regs::INT_ENABLE, IntCause::PROGRESS.bits());
    assert!(rig.line.level());
    rig.dev.write32(regs::INT_ACK, IntCause::FAULT.bits());
    assert!(rig.line.level(), "W1C of another bit");
    rig.dev.write32(regs::INT_ACK, IntCause::PROGRESS.bits());
    assert!(!rig.line.level());
    assert_eq!(rig.line.rises(), 1);
}

#[test]
fn injected_interrupt_delay_holds_the_assertion() {
    let mut rig = Rig::step();
    rig.dev.set_interrupt_delay(Some(IrqDelay::Steps(3)));
    let mut q = rig.queue_committed(0, 1);
    rig.submit(&mut q, &[progress_irq(1)]);
    rig.dev.step();
    assert_ne!(rig.dev.read32(regs::INT_STATUS), 0);
    assert!(!rig.line.level(), "held");
    steps(&rig, 2);
    assert!(!rig.line.level(), "still held");
    rig.dev.step();
    assert!(rig.line.level(), "delivered after 3 steps");
    rig.isr();
    rig.dev.set_interrupt_delay(None);
    rig.submit(&mut q, &[progress_irq(2)]);
    rig.dev.step();
    assert!(rig.line.level(), "no delay any more");
}

/// a lost interrupt delivery does not stop later ones. The dropped assertion leaves
/// the cause pending with the line low; the device's next event raises the line again and the
/// ISR then drains both records.
#[test]
fn injected_interrupt_drop_loses_one_delivery_the_next_event_asserts_again() {
    let mut rig = Rig::step();
    rig.dev.drop_next_interrupt();
    let mut q = rig.queue_committed(0, 1);
    rig.submit(&mut q, &[progress_irq(1)]);
    rig.run();
    assert_ne!(rig.dev.read32(regs::INT_STATUS), 0, "cause pending");
    assert!(!rig.line.level(), "but the interrupt was lost");
    rig.submit(&mut q, &[progress_irq(2)]);
    rig.run();
    assert!(rig.line.level(), "the next event asserts the line again");
    let (_, evs) = rig.isr();
    assert_eq!(evs.len(), 2, "the lost record is drained with the new one");
    assert!(!rig.line.level());
    rig.submit(&mut q, &[progress_irq(3)]);
    rig.run();
    assert!(rig.line.level());
}

/// An F1 request entered while event posting was off (before the driver enabled its event
/// ring) is reported when posting is enabled: the device posts only on entering a state, so
/// without the re-post it would be lost for good (UM-13, KMD side).
#[test]
fn f1_request_entered_before_posting_is_enabled_is_reported_on_enable() {
    let rig = Rig::step_with(|c| c.idle_f1_ticks = 3 * STEP_TICKS);
    rig.dev.write32(regs::EVENT_RING_CTRL, 0);
    steps(&rig, 10);
    rig.dev.write32(regs::INT_ACK, u32::MAX);
    assert_eq!(
        rig.dev.read32(regs::EVENT_RING_WPTR),
        0,
        "nothing posted while disabled"
    );
    rig.dev.write32(regs::EVENT_RING_CTRL, 1);
    let (st, evs) = rig.isr();
    assert!(st.contains(IntCause::ENGINE_STATE));
    let es = of_kind(&evs, EventKind::EngineState);
    assert_eq!(
        es.len(),
        2,
        "both idle engines re-post TransitionToF1: {es:?}"
    );
    assert!(es
        .iter()
        .all(|e| e.arg1 == EngineState::TransitionToF1 as u64));
}

#[test]
fn idle_engine_requests_f1_once() {
    let mut rig = Rig::step_with(|c| c.idle_f1_ticks = 3 * STEP_TICKS);
    let mut q = rig.queue_committed(0, 1);
    steps(&rig, 10);
    let (st, evs) = rig.isr();
    assert!(st.contains(IntCause::ENGINE_STATE));
    let es = of_kind(&evs, EventKind::EngineState);
    assert_eq!(es.len(), 2, "one per engine, once: {es:?}");
    assert!(es.iter().all(
        |e| (e.arg0, e.arg1) == (EngineState::Idle as u64, EngineState::TransitionToF1 as u64)
    ));
    let status = |rig: &Rig| {
        EngineStatus::from_reg(rig.engine_read32(0, regs::engine::STATUS))
            .unwrap()
            .state
    };
    assert_eq!(status(&rig), EngineState::TransitionToF1);
    // Two packets: after the first the engine is still Active (the quantum that retires the
    // last one also switches it out, M30).
    rig.submit(&mut q, &[Command::Nop { len: 1 }, Command::Nop { len: 1 }]);
    rig.dev.step();
    assert_eq!(status(&rig), EngineState::Active);
    rig.dev.step();
    assert_eq!(
        status(&rig),
        EngineState::Idle,
        "switched out with its last packet"
    );
    steps(&rig, 10);
    let (_, evs) = rig.isr();
    assert_eq!(
        of_kind(&evs, EventKind::EngineState).len(),
        1,
        "engine 0 again"
    );
}

#[test]
fn no_f1_requests_by_default() {
    let rig = Rig::step();
    steps(&rig, 50);
    assert_eq!(rig.dev.read32(regs::INT_STATUS), 0);
}

/// A huge real-time interrupt delay does not overflow `Instant` (it simply never expires).
#[test]
fn huge_interrupt_delay_never_expires_and_does_not_panic() {
    let mut rig = Rig::step();
    rig.dev
        .set_interrupt_delay(Some(IrqDelay::Duration(std::time::Duration::MAX)));
    let mut q = rig.queue_committed(0, 1);
    rig.submit(&mut q, &[progress_irq(1)]);
    steps(&rig, 5);
    assert!(rig.dev.interrupt_pending());
    assert!(!rig.line.level(), "held forever");
}

/// A frozen device (the machine around it halted) does nothing more: no execution, register
/// reads all-ones, writes and doorbells dropped, the line no longer driven.
#[test]
fn frozen_device_does_nothing() {
    let mut rig = Rig::step();
    let mut q = rig.queue_committed(0, 1);
    rig.dev.write32(regs::SCRATCH, 5);
    rig.dev.freeze();
    assert!(rig.dev.is_frozen());
    assert_eq!(rig.dev.read32(regs::SCRATCH), u32::MAX);
    assert_eq!(rig.dev.read64(regs::SCRATCH), u64::MAX);
    rig.dev.write32(regs::SCRATCH, 7);
    let before = rig.dev.completed_commands(0);
    rig.submit(&mut q, &[progress_irq(1)]);
    assert!(!rig.dev.step(), "a frozen CMP does no work");
    assert_eq!(rig.dev.completed_commands(0), before);
    assert!(!rig.line.level());
    assert!(!rig.dev.interrupt_pending());
}

/// `QUEUE_SELECT`/`QUEUE_STATE` (hardware.md 7.2): the device says which queue a
/// fault stopped, so a driver can check a `Fault` record against it; without
/// `CAPS.QUEUE_STATE` both registers read 0.
#[test]
fn queue_state_shows_the_faulted_queue() {
    let state = |rig: &Rig, id: u32| {
        rig.dev
            .write32(rig.engine_reg(0, regs::engine::QUEUE_SELECT), id);
        regs::QueueStateReg::new(rig.engine_read32(0, regs::engine::QUEUE_STATE))
    };
    let mut rig = Rig::step();
    assert!(
        regs::Caps::from_bits_retain(rig.dev.read32(regs::CAPS)).contains(regs::Caps::QUEUE_STATE)
    );
    let f = fault_with(&mut rig, |rig, q| {
        rig.push_words(q, &[0x1_00EE]);
    });
    assert_eq!(f.arg0, FaultCode::BadOpcode as u64);
    let (bad, good, none) = (state(&rig, 1), state(&rig, 2), state(&rig, 77));
    assert_eq!((bad.present(), bad.faulted()), (1, 1), "the faulted queue");
    assert_eq!(
        (good.present(), good.faulted()),
        (1, 0),
        "the running queue"
    );
    assert_eq!(
        (none.present(), none.faulted()),
        (0, 0),
        "a queue not loaded"
    );
    // Another engine's view: queue 1 is not in its runlist.
    rig.dev
        .write32(rig.engine_reg(1, regs::engine::QUEUE_SELECT), 1);
    assert_eq!(rig.engine_read32(1, regs::engine::QUEUE_STATE), 0);

    let mut off = Rig::step_with(|c| c.queue_state = false);
    fault_with(&mut off, |rig, q| rig.push_words(q, &[0x1_00EE]));
    assert!(
        !regs::Caps::from_bits_retain(off.dev.read32(regs::CAPS)).contains(regs::Caps::QUEUE_STATE)
    );
    assert_eq!(
        state(&off, 1).raw(),
        0,
        "without the capability the register reads 0"
    );
    assert_eq!(off.engine_read32(0, regs::engine::QUEUE_SELECT), 0);
}

/// the line wakes its servicer once per rising edge, outside the deliverer's role
/// (so the ISR's acknowledge can lower it meanwhile), and again when a new event comes while
/// the line is still high: a servicer that samples the device's request may have seen it
/// drop through an acknowledge whose lowering of the line was still on its way. An access
/// that changes nothing wakes nobody.
#[test]
fn line_wakes_the_servicer_per_rise_and_per_event_under_a_high_line() {
    let mut rig = Rig::step();
    let mut q = rig.queue_committed(0, 1);
    let progress = |value| Command::Progress { irq: true, value };
    rig.submit(&mut q, &[progress(1)]);
    rig.run();
    assert!(rig.line.level());
    assert_eq!((rig.line.rises(), rig.line.wakes()), (1, 1));
    // Not acknowledged yet: the second event finds the line high.
    rig.submit(&mut q, &[progress(2)]);
    rig.run();
    assert_eq!((rig.line.rises(), rig.line.wakes()), (1, 2));
    // A read with nothing new.
    let status = rig.dev.read32(regs::INT_STATUS);
    assert_eq!(status, IntCause::PROGRESS.bits());
    assert_eq!(rig.line.wakes(), 2);
    rig.dev.write32(regs::INT_ACK, status);
    assert!(!rig.line.level());
    assert_eq!((rig.line.rises(), rig.line.wakes()), (1, 2));
    // The next event rises again.
    rig.submit(&mut q, &[progress(3)]);
    rig.run();
    assert_eq!((rig.line.rises(), rig.line.wakes()), (2, 3));
}
