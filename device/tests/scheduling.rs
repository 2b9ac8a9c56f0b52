//! Doorbells (dedicated and global), QUEUE_KICK, priorities, round-robin, runlist commits,
//! adapter reset.
mod common;

use common::*;
use rvgpu_device::DeviceConfig;
use rvgpu_hw::addr::PhysAddr;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::queue::{QueueFlags, RingControl, NO_QUEUE};
use rvgpu_hw::regs;

#[test]
fn um_02_dedicated_doorbell_rescans_the_bound_queue_only() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 7);
    let page = q.doorbell.unwrap();
    // Published but not rung: the CMP does not poll write pointers.
    rig.push(&mut q, &[signal(f, 1, 0, 0)]);
    rig.run();
    assert_eq!(rig.value(f.cv), 0);
    // Unbound page and out-of-range page: ignored, counted.
    rig.dev.doorbell_write(page + 1, 0);
    rig.dev.doorbell_write(1000, 0);
    rig.run();
    assert_eq!(rig.value(f.cv), 0);
    assert_eq!(rig.dev.doorbell_stats().ignored, 2);
    rig.dev.doorbell_write(page, 0);
    rig.run();
    assert_eq!(rig.value(f.cv), 1);
    let s = rig.dev.doorbell_stats();
    assert_eq!((s.accepted, s.per_page[page as usize]), (1, 1));
    // Unbinding: the page no longer reaches the queue.
    rig.dev
        .write32(regs::doorbell_bind_reg(page).unwrap(), NO_QUEUE);
    rig.push(&mut q, &[signal(f, 2, 0, 0)]);
    rig.dev.doorbell_write(page, 0);
    rig.run();
    assert_eq!(rig.value(f.cv), 1);
    assert_eq!(rig.dev.doorbell_stats().ignored, 3);
    // QUEUE_KICK (kernel-mode submission) works without a doorbell.
    rig.kick(&q);
    rig.run();
    assert_eq!(rig.value(f.cv), 2);
}

#[test]
fn um_02_global_doorbell_value_names_the_queue() {
    let mut rig = Rig::step_with(|c| c.global_doorbell = true);
    let (f, g) = (rig.fence(0), rig.fence(0));
    let mut a = rig.queue_committed(0, 10);
    let mut b = rig.queue_committed(1, 11);
    rig.push(&mut a, &[signal(f, 1, 0, 0)]);
    rig.push(&mut b, &[signal(g, 1, 0, 0)]);
    rig.dev.doorbell_write(1, 10);
    rig.dev.doorbell_write(0, 99);
    rig.run();
    assert_eq!(rig.dev.doorbell_stats().ignored, 2, "page 1 and unknown id");
    assert_eq!(rig.value(f.cv), 0);
    rig.dev.doorbell_write(0, 11);
    rig.run();
    assert_eq!(
        (
            rig.mem.read_u64(PhysAddr::new(f.cv)),
            rig.mem.read_u64(PhysAddr::new(g.cv))
        ),
        (Some(0), Some(1))
    );
    rig.dev.doorbell_write(0, 10);
    rig.run();
    assert_eq!(rig.value(f.cv), 1);
}

/// hardware.md 5.5: in global mode a doorbell page rings only the user-mode
/// queues of the process it is bound to. A write naming another process's queue (through
/// the writer's own page), a kernel-mode queue, or through an unbound page runs nothing.
#[test]
fn global_doorbell_page_rings_only_its_process() {
    let mut rig = Rig::new(DeviceConfig {
        global_doorbell: true,
        doorbells: 4,
        ..DeviceConfig::step()
    });
    let (fa, fb, fk) = (rig.fence(0), rig.fence(0), rig.fence(0));
    // A: process RIG_PROCESS, page 0. B: process 2, page 1. K: a kernel-mode queue of
    // RIG_PROCESS (no USER_MODE).
    let mut a = rig.queue(0, 10);
    let mut b = rig.queue(0, 11);
    b.desc.process_id = 2;
    let mut k = rig.queue(1, 12);
    k.desc.flags = QueueFlags::VALID.bits();
    rig.dev.write32(regs::doorbell_bind_reg(1).unwrap(), 2);
    rig.commit(0, &[&a, &b]);
    rig.commit(1, &[&k]);
    // Published but not rung.
    rig.push(&mut a, &[signal(fa, 1, 0, 0)]);
    rig.push(&mut b, &[signal(fb, 1, 0, 0)]);
    rig.push(&mut k, &[signal(fk, 1, 0, 0)]);
    rig.run();
    assert_eq!(rig.value(fa.cv), 0, "nothing rang yet");
    // B's process rings A's queue id on its own page; A's process names K; page 2 is unbound.
    rig.dev.doorbell_write(1, 10);
    rig.dev.doorbell_write(0, 12);
    rig.dev.doorbell_write(2, 10);
    rig.run();
    let values = |rig: &Rig| [fa, fb, fk].map(|f| rig.mem.read_u64(PhysAddr::new(f.cv)).unwrap());
    assert_eq!(values(&rig), [0, 0, 0], "foreign rings run nothing");
    assert_eq!(rig.dev.doorbell_stats().ignored, 3);
    // Each process rings its own queue through its own page.
    rig.dev.doorbell_write(0, 10);
    rig.dev.doorbell_write(1, 11);
    rig.run();
    assert_eq!(values(&rig), [1, 1, 0]);
    // The kernel-mode queue still runs by QUEUE_KICK.
    rig.kick(&k);
    rig.run();
    assert_eq!(values(&rig), [1, 1, 1]);
    assert_eq!(rig.dev.doorbell_stats().per_page[..2], [1, 1]);
}

fn timestamps(rig: &mut Rig, q: &mut Q, n: u64) -> u64 {
    let t = rig.alloc(8 * n);
    let cmds: Vec<_> = (0..n)
        .map(|i| Command::Timestamp { addr: t + 8 * i })
        .collect();
    rig.push(q, &cmds);
    t
}

#[test]
fn higher_priority_runs_first_and_equals_round_robin() {
    let mut rig = Rig::step();
    let mut lo = rig.queue_with(0, 1, 0, 4096, 84);
    let mut hi = rig.queue_with(0, 2, 5, 4096, 84);
    let mut a = rig.queue_with(1, 3, 1, 4096, 84);
    let mut b = rig.queue_with(1, 4, 1, 4096, 84);
    rig.commit(0, &[&lo, &hi]);
    rig.commit(1, &[&a, &b]);
    let tl = timestamps(&mut rig, &mut lo, 3);
    let th = timestamps(&mut rig, &mut hi, 3);
    let ta = timestamps(&mut rig, &mut a, 3);
    let tb = timestamps(&mut rig, &mut b, 3);
    for q in [&lo, &hi, &a, &b] {
        rig.ring(q);
    }
    rig.run();
    let r = |t| rig.mem.read_words(t, 3).unwrap();
    let (l, h) = (r(PhysAddr::new(tl)), r(PhysAddr::new(th)));
    assert!(h[2] < l[0], "high priority first: hi {h:?} lo {l:?}");
    let (va, vb) = (r(PhysAddr::new(ta)), r(PhysAddr::new(tb)));
    assert!(
        va[0] < vb[0] && vb[0] < va[1] && va[1] < vb[1],
        "round robin: {va:?} {vb:?}"
    );
}

#[test]
fn recommit_keeps_staying_queues_and_stops_leaving_ones() {
    let mut rig = Rig::step();
    let (f, g, h) = (rig.fence(0), rig.fence(0), rig.fence(0));
    let [mut stay, mut leave] = rig.queues_committed(0, [1, 2]);
    rig.submit(&mut stay, &[fence_wait(f, 1), signal(g, 1, 0, 0)]);
    rig.run();
    let obs = rig.dev.queues();
    assert_eq!(obs[0].blocked_on, Some((f.cv, 1)));
    rig.commit(0, &[&stay]);
    assert_eq!(rig.dev.queues().len(), 1);
    assert_eq!(
        rig.dev.queues()[0].blocked_on,
        Some((f.cv, 1)),
        "wait state kept"
    );
    // The leaving queue's work does not run even when rung.
    rig.submit(&mut leave, &[signal(h, 1, 0, 0)]);
    rig.run();
    assert_eq!(rig.value(h.cv), 0);
    rig.mem.write_u64(PhysAddr::new(f.cv), 1).unwrap();
    rig.dev.write64(regs::WAIT_RESCAN, f.cv);
    rig.run();
    assert_eq!(rig.value(g.cv), 1);
    // Back in the runlist: it resumes from its ring-control read pointer.
    rig.commit(0, &[&stay, &leave]);
    rig.run();
    assert_eq!(rig.value(h.cv), 1);
}

#[test]
fn commit_finishes_a_transfer_of_a_leaving_queue() {
    let mut rig = Rig::step();
    let (q, dst) = rig.long_copy(64 << 10, 9);
    rig.dev.step();
    rig.commit(1, &[]);
    assert_eq!(rig.value(dst + (64 << 10) - 8), 9, "command boundary");
    assert_eq!(rig.read_ptr(&q), q.wptr);
}

#[test]
fn adapter_reset_returns_to_power_on_but_keeps_memory_and_clock() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 1);
    rig.submit(&mut q, &[signal(f, 5, 0, 0), progress_irq(1)]);
    rig.run();
    let t0 = rig.dev.read64(regs::GPU_CLOCK);
    rig.dev
        .write32(regs::ADAPTER_RESET, regs::ADAPTER_RESET_KEY);
    assert!(rig.dev.queues().is_empty());
    assert_eq!(rig.dev.read32(regs::INT_STATUS), 0);
    assert!(!rig.line.level());
    assert_eq!(rig.dev.read32(regs::EVENT_RING_CTRL), 0);
    assert_eq!(rig.engine_read64(0, regs::engine::COMPLETED_COMMANDS), 0);
    assert_eq!(
        rig.dev.read32(regs::doorbell_bind_reg(0).unwrap()),
        NO_QUEUE
    );
    assert_eq!(rig.value(f.cv), 5, "memory kept");
    assert!(
        rig.dev.read64(regs::GPU_CLOCK) >= t0,
        "clock never goes backwards"
    );
}

#[test]
fn bad_runlist_address_is_a_fault_and_an_empty_runlist() {
    let rig = Rig::step();
    let reg = |r| rig.engine_reg(0, r);
    rig.dev.write64(reg(regs::engine::RUNLIST_BASE), 0x40);
    rig.dev.write32(reg(regs::engine::RUNLIST_COUNT), 1);
    rig.dev.write32(reg(regs::engine::RUNLIST_COMMIT), 1);
    let (st, evs) = rig.isr();
    assert_eq!(st, regs::IntCause::FAULT);
    assert_eq!(
        evs[0].arg0,
        rvgpu_hw::event::FaultCode::BadDescriptor as u64,
        "an unreadable runlist is a bad descriptor table"
    );
    assert_eq!(evs[0].arg1, 0x40);
    rig.dev.write32(reg(regs::engine::RUNLIST_COUNT), 100_000);
    rig.dev.write32(reg(regs::engine::RUNLIST_COMMIT), 1);
    assert!(rig.dev.queues().is_empty());
}

/// the scheduler looks only at queues that may have work, and a signal re-evaluates
/// only the waits of those queues. A blocked queue whose producer moved `write_ptr` back onto
/// the read pointer (and rang) has no work for a while; a signal of its fence in that time must
/// still wake its wait, so that it runs once `write_ptr` is published again. Idle queues beside
/// it change nothing.
#[test]
fn blocked_queue_with_rewound_write_pointer_still_sees_the_signal() {
    let mut rig = Rig::step();
    let (f, g) = (rig.fence(0), rig.fence(0));
    let mut idle: Vec<Q> = (10..74).map(|id| rig.queue(0, id)).collect();
    let mut q = rig.queue(0, 1);
    let mut all: Vec<&Q> = idle.iter().collect();
    all.push(&q);
    rig.commit(0, &all);
    rig.submit(&mut q, &[fence_wait(f, 1), signal(g, 1, 0, 0)]);
    rig.run();
    let blocked = rig.dev.queues().into_iter().find(|s| s.queue_id == 1);
    assert_eq!(blocked.and_then(|s| s.blocked_on), Some((f.cv, 1)));
    // A hostile producer: write_ptr back onto the read pointer, rung.
    let published = q.wptr;
    let wp = q.desc.ring_control.get() + RingControl::WRITE_PTR;
    rig.mem
        .write_u64(PhysAddr::new(wp), rig.read_ptr(&q))
        .unwrap();
    rig.ring(&q);
    rig.run();
    // The fence is signalled while the queue has no work.
    rig.mem.write_u64(PhysAddr::new(f.cv), 1).unwrap();
    rig.dev.write64(regs::WAIT_RESCAN, f.cv);
    rig.run();
    assert_eq!(rig.value(g.cv), 0, "no work published yet");
    // Published again: the wait was satisfied while it was away, so it runs on.
    rig.mem.write_u64(PhysAddr::new(wp), published).unwrap();
    rig.ring(&q);
    rig.run();
    assert_eq!(rig.value(g.cv), 1);
    // The idle queues still run when given work.
    let h = rig.fence(0);
    rig.submit(&mut idle[63], &[signal(h, 1, 0, 0)]);
    rig.run();
    assert_eq!(rig.value(h.cv), 1);
}
