//! Runlist updates (docs/hardware.md 5.2, `RUNLIST_UPDATE`): the CMP re-reads only
//! the slot the driver names and the slots the runlist grew by, so adding a queue costs the
//! device the same with 8 or 256 queues loaded, and every other queue keeps its state.

mod common;

use common::*;
use rvgpu_hw::addr::PhysAddr;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::event::{EventKind, FaultCode};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::queue::QueueDescriptor;
use rvgpu_hw::regs::{self, Caps};

/// A runlist buffer of `slots` descriptors, programmed as engine 0's `RUNLIST_BASE`.
fn runlist(rig: &mut Rig, slots: u64) -> u64 {
    let rl = rig.alloc(slots * 128);
    rig.dev
        .write64(rig.engine_reg(0, regs::engine::RUNLIST_BASE), rl);
    rl
}

fn put(rig: &Rig, rl: u64, slot: u64, d: &QueueDescriptor) {
    rig.mem
        .write_words(PhysAddr::new(rl + slot * 128), &d.to_words())
        .unwrap();
}

fn count(rig: &Rig, n: u32) {
    rig.dev
        .write32(rig.engine_reg(0, regs::engine::RUNLIST_COUNT), n);
}

fn update(rig: &Rig, slot: u32) {
    rig.dev
        .write32(rig.engine_reg(0, regs::engine::RUNLIST_UPDATE), slot);
}

fn commit(rig: &Rig) {
    rig.dev
        .write32(rig.engine_reg(0, regs::engine::RUNLIST_COMMIT), 1);
}

fn ids(rig: &Rig) -> Vec<u32> {
    rig.dev.queues().iter().map(|q| q.queue_id).collect()
}

fn fill(rig: &mut Rig) -> Command {
    let dst = rig.alloc(64);
    Command::Fill {
        dst,
        bytes: 64,
        pattern: 0x5A,
    }
}

/// Slots the device reads to take one more queue, with `n` queues loaded before.
fn slots_read_to_add_one(n: u32) -> u64 {
    let mut rig = Rig::step();
    let rl = runlist(&mut rig, u64::from(n) + 1);
    for id in 0..n {
        let q = rig.queue_with(0, id, 0, 256, 4);
        put(&rig, rl, u64::from(id), &q.desc);
    }
    count(&rig, n);
    commit(&rig);
    assert_eq!(rig.dev.queues().len(), n as usize);
    let before = rig.dev.runlist_slots_read();
    let q = rig.queue_with(0, n, 0, 256, 4);
    put(&rig, rl, u64::from(n), &q.desc);
    count(&rig, n + 1);
    update(&rig, n);
    assert_eq!(
        rig.dev.queues().len(),
        n as usize + 1,
        "the new queue entered"
    );
    rig.dev.runlist_slots_read() - before
}

#[test]
fn adding_a_queue_reads_one_slot_whatever_the_runlist_holds() {
    assert_eq!(slots_read_to_add_one(8), 1);
    assert_eq!(slots_read_to_add_one(256), 1);
    // A full commit reads every slot: what the update saves.
    let mut rig = Rig::step();
    let rl = runlist(&mut rig, 8);
    for id in 0..8 {
        let q = rig.queue_with(0, id, 0, 256, 4);
        put(&rig, rl, u64::from(id), &q.desc);
    }
    count(&rig, 8);
    let before = rig.dev.runlist_slots_read();
    commit(&rig);
    assert_eq!(rig.dev.runlist_slots_read() - before, 8);
}

/// Queues in slots the update does not name keep everything: read pointer, known write
/// pointer, pending work; the named slot's queue leaves when its slot empties.
#[test]
fn update_keeps_the_other_slots_and_empties_the_named_one() {
    let mut rig = Rig::step();
    assert!(Caps::from_bits_retain(rig.dev.read32(regs::CAPS)).contains(Caps::RUNLIST_UPDATE));
    let rl = runlist(&mut rig, 4);
    let mut a = rig.queue(0, 10);
    let mut b = rig.queue(0, 11);
    put(&rig, rl, 0, &a.desc);
    count(&rig, 1);
    commit(&rig);
    // Work for A, not run yet: A's known write pointer must survive the update.
    let cmd = fill(&mut rig);
    rig.submit(&mut a, &[cmd]);
    put(&rig, rl, 2, &b.desc);
    count(&rig, 3);
    update(&rig, 2);
    assert_eq!(ids(&rig), vec![10, 11]);
    let qa = rig.dev.queues()[0].clone();
    assert_eq!(
        qa.known_write_ptr, a.wptr,
        "A kept its doorbell's write pointer"
    );
    let cmd = fill(&mut rig);
    rig.submit(&mut b, &[cmd]);
    rig.run();
    assert_eq!(rig.read_ptr(&a), a.wptr);
    assert_eq!(rig.read_ptr(&b), b.wptr);
    // Emptying B's slot: B leaves, A stays.
    put(&rig, rl, 2, &QueueDescriptor::default());
    update(&rig, 2);
    assert_eq!(ids(&rig), vec![10]);
    // A slot past the new count leaves too (the count shrinks to slot 0 alone).
    put(&rig, rl, 1, &b.desc);
    count(&rig, 2);
    update(&rig, 1);
    assert_eq!(ids(&rig), vec![10, 11]);
    count(&rig, 1);
    update(&rig, 0);
    assert_eq!(ids(&rig), vec![10], "slot 1 is past the count");
    assert!(rig.isr().1.is_empty(), "no fault on the way");
}

/// An updated slot follows the commit's rules: a descriptor whose id another slot holds is
/// a BadDescriptor and the slot stays empty; an invalid one too; a new ring under the same
/// id is a new queue.
#[test]
fn update_checks_the_slot_like_a_commit() {
    let mut rig = Rig::step();
    let rl = runlist(&mut rig, 4);
    let a = rig.queue(0, 20);
    put(&rig, rl, 0, &a.desc);
    count(&rig, 1);
    commit(&rig);
    // The same id again in slot 1.
    put(&rig, rl, 1, &a.desc);
    count(&rig, 2);
    update(&rig, 1);
    assert_eq!(ids(&rig), vec![20]);
    let (_, evs) = rig.isr();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].kind, EventKind::Fault as u8);
    assert_eq!(evs[0].arg0, FaultCode::BadDescriptor as u64);
    assert_eq!(evs[0].arg1, rl + 128, "the entry's address");
    // An invalid descriptor (ring size not a power of two).
    let mut bad = rig.queue(0, 21).desc;
    bad.ring_size = 1000;
    put(&rig, rl, 1, &bad);
    update(&rig, 1);
    assert_eq!(ids(&rig), vec![20]);
    assert_eq!(rig.isr().1[0].arg0, FaultCode::BadDescriptor as u64);
    // Slot 0 with a new ring under the same id: a new queue, from its ring control.
    let mut c = rig.queue(0, 20);
    let cmd = fill(&mut rig);
    rig.push(&mut c, &[cmd]);
    put(&rig, rl, 0, &c.desc);
    update(&rig, 0);
    assert_eq!(
        rig.dev.queues()[0].known_write_ptr,
        c.wptr,
        "entered afresh"
    );
    rig.run();
    assert_eq!(rig.read_ptr(&c), c.wptr);
}

/// Without CAPS.RUNLIST_UPDATE the register is not there: writes change nothing.
#[test]
fn without_the_capability_an_update_is_ignored() {
    let mut rig = Rig::step_with(|c| c.runlist_update = false);
    assert!(!Caps::from_bits_retain(rig.dev.read32(regs::CAPS)).contains(Caps::RUNLIST_UPDATE));
    let rl = runlist(&mut rig, 2);
    let a = rig.queue(0, 30);
    put(&rig, rl, 0, &a.desc);
    count(&rig, 1);
    update(&rig, 0);
    assert!(ids(&rig).is_empty());
    assert_eq!(rig.dev.runlist_slots_read(), 0);
    commit(&rig);
    assert_eq!(ids(&rig), vec![30]);
}
