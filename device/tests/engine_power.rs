//! Per-engine power gating (hardware.md 4.3, `POWER`, `CAPS.ENGINE_POWER`; UM-13's F1 on the
//! device side): an engine in F1 picks and runs nothing while doorbells, kicks and commits
//! still load its queues' write pointers; F0 resumes where it stopped; a packet in flight is
//! retained; leaving F1 restarts the idle timer; an adapter reset returns every engine to F0;
//! without the capability the register is inert. Step mode.
mod common;

use common::*;
use rvgpu_device::{DeviceConfig, STEP_TICKS};
use rvgpu_hw::addr::PhysAddr;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::engine::{EngineState, ENGINE_POWER_F0, ENGINE_POWER_F1};
use rvgpu_hw::event::EventKind;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::regs::{self, Caps};

fn power(rig: &Rig, e: u32) -> u32 {
    rig.engine_read32(e, regs::engine::POWER)
}

fn set_power(rig: &Rig, e: u32, v: u32) {
    rig.dev.write32(rig.engine_reg(e, regs::engine::POWER), v);
}

fn completed(rig: &Rig, e: u32) -> u64 {
    rig.engine_read64(e, regs::engine::COMPLETED_COMMANDS)
}

/// UM-13 (device side): a gated engine runs no work rung through a doorbell or a kick, but the
/// CMP records both write pointers; F0 runs it, exactly once. The other engine is not
/// affected by engine 0's gate.
#[test]
fn um_13_gated_engine_runs_nothing_until_f0_and_loses_no_ring() {
    let mut rig = Rig::step();
    assert!(Caps::from_bits_truncate(rig.dev.read32(regs::CAPS)).contains(Caps::ENGINE_POWER));
    let (f, k, o) = (rig.fence(0), rig.fence(0), rig.fence(0));
    let mut user = rig.queue(0, 1);
    let mut kernel = rig.queue(0, 2).without_doorbell();
    let mut other = rig.queue(1, 3);
    rig.commit(0, &[&user, &kernel]);
    rig.commit(1, &[&other]);
    assert_eq!(power(&rig, 0), ENGINE_POWER_F0, "reset value");
    set_power(&rig, 0, ENGINE_POWER_F1);
    assert_eq!(power(&rig, 0), ENGINE_POWER_F1);
    rig.submit(&mut user, &[signal(f, 1, 0, 0)]);
    rig.submit(&mut kernel, &[signal(k, 1, 0, 0)]);
    rig.submit(&mut other, &[signal(o, 1, 0, 0)]);
    steps(&rig, 50);
    assert_eq!(rig.value(f.cv), 0, "doorbell work did not run in F1");
    assert_eq!(rig.value(k.cv), 0, "kicked work did not run in F1");
    assert_eq!(rig.value(o.cv), 1, "engine 1 is not gated");
    assert_eq!(completed(&rig, 0), 0);
    let queues = rig.dev.queues();
    let known = |id: u32| {
        queues
            .iter()
            .find(|q| q.queue_id == id)
            .unwrap()
            .known_write_ptr
    };
    assert_eq!(
        (known(1), known(2)),
        (user.wptr, kernel.wptr),
        "both write pointers loaded"
    );
    assert!(status(&rig, 0).has_work, "STATUS shows the waiting work");
    assert!(rig.dev.engine_snapshot(0).unwrap().gated);
    set_power(&rig, 0, ENGINE_POWER_F0);
    steps(&rig, 50);
    assert_eq!(
        (
            rig.mem.read_u64(PhysAddr::new(f.cv)),
            rig.mem.read_u64(PhysAddr::new(k.cv))
        ),
        (Some(1), Some(1))
    );
    assert_eq!(completed(&rig, 0), 2, "each packet ran exactly once");
    assert!(!rig.dev.engine_snapshot(0).unwrap().gated);
}

/// A packet in flight when the engine is gated stays in flight (a FILL part-way through its
/// chunks) and finishes after F0; its queue's later packet runs after it.
#[test]
fn gating_keeps_a_packet_in_flight_and_f0_finishes_it() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let dst = rig.alloc(64 * 1024);
    let mut q = rig.queue_committed(0, 1);
    rig.submit(
        &mut q,
        &[
            Command::Fill {
                dst,
                bytes: 64 * 1024,
                pattern: 0xABAB_ABAB_ABAB_ABAB,
            },
            signal(f, 1, 0, 0),
        ],
    );
    steps(&rig, 2);
    set_power(&rig, 0, ENGINE_POWER_F1);
    let before = rig.dev.engine_snapshot(0).unwrap();
    steps(&rig, 100);
    let after = rig.dev.engine_snapshot(0).unwrap();
    assert_eq!(before.queues, after.queues, "nothing moved while gated");
    assert_eq!(rig.value(f.cv), 0);
    set_power(&rig, 0, ENGINE_POWER_F0);
    steps(&rig, 100);
    assert_eq!(rig.value(f.cv), 1);
    assert_eq!(rig.value(dst + 64 * 1024 - 8), 0xABAB_ABAB_ABAB_ABAB);
}

/// UM-13: an idle engine requests F1 once; gating it keeps the request in STATUS and posts
/// nothing more; F0 restarts the idle timer, so the engine, still idle, asks again.
#[test]
fn um_13_f0_restarts_the_idle_timer_and_the_request_is_posted_again() {
    let rig = Rig::new(DeviceConfig {
        idle_f1_ticks: 3 * STEP_TICKS,
        engines: 1,
        ..DeviceConfig::step()
    });
    steps(&rig, 10);
    let (_, evs) = rig.isr();
    let f1 = |evs: &[rvgpu_hw::event::EventRecord]| {
        evs.iter()
            .filter(|e| {
                e.kind == EventKind::EngineState as u8
                    && e.arg1 == EngineState::TransitionToF1 as u64
            })
            .count()
    };
    assert_eq!(f1(&evs), 1);
    set_power(&rig, 0, ENGINE_POWER_F1);
    steps(&rig, 20);
    assert_eq!(f1(&rig.isr().1), 0, "no request while gated");
    assert_eq!(status(&rig, 0).state, EngineState::TransitionToF1);
    set_power(&rig, 0, ENGINE_POWER_F0);
    assert_eq!(
        status(&rig, 0).state,
        EngineState::Idle,
        "request withdrawn"
    );
    steps(&rig, 10);
    assert_eq!(f1(&rig.isr().1), 1, "idle again: a new request");
}

/// Values other than F0/F1 are ignored; an adapter reset returns the engine to F0 (the
/// reset also clears the system windows, so the bring-up that follows runs it as usual).
#[test]
fn other_values_are_ignored_and_adapter_reset_returns_to_f0() {
    let rig = Rig::step();
    set_power(&rig, 1, ENGINE_POWER_F1);
    set_power(&rig, 1, 7);
    assert_eq!(power(&rig, 1), ENGINE_POWER_F1, "7 ignored");
    rig.dev
        .write32(regs::ADAPTER_RESET, regs::ADAPTER_RESET_KEY);
    assert_eq!(power(&rig, 1), ENGINE_POWER_F0);
    assert!(!rig.dev.engine_snapshot(1).unwrap().gated);
}

/// Without `CAPS.ENGINE_POWER` the register reads 0 and a write gates nothing.
#[test]
fn without_the_capability_power_is_inert() {
    let mut rig = Rig::step_with(|c| c.engine_power = false);
    assert!(!Caps::from_bits_truncate(rig.dev.read32(regs::CAPS)).contains(Caps::ENGINE_POWER));
    set_power(&rig, 0, ENGINE_POWER_F1);
    assert_eq!(power(&rig, 0), 0);
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 1);
    rig.submit(&mut q, &[signal(f, 1, 0, 0)]);
    steps(&rig, 20);
    assert_eq!(rig.value(f.cv), 1);
}
