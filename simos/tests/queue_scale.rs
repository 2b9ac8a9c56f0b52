//! N hardware queues are set up in O(N). Each queue's creation, doorbell creation
//! and destruction commits its own runlist slot (`RUNLIST_UPDATE`, docs/hardware.md 5.2), so
//! the device reads the same number of runlist descriptors for the next queue whether the
//! engine has 16 or 300 queues (it read the whole runlist at every commit before). Counted
//! with the device's `runlist_slots_read`, not timed.

mod common;

use common::*;
use rvgpu_simos::{Machine, Mode};
use rvgpu_umd::kmt::{AllocationCpu, Kmt};
use rvgpu_umd::submit::{QueueConfig, UserQueue};

/// Runlist descriptors the device reads to set up one more user-mode queue (hardware queue,
/// ring, doorbell) and to tear it down again, with `n` queues on engine 0 already.
fn slots_read_for_one_more(m: &Machine, n: usize) -> (u64, u64) {
    let p = ok(m, m.create_process(0));
    let k = m.kmt(&p);
    let qs = (0..n).map(|_| raw_queue(m, &k)).collect::<Vec<_>>();
    let dev = m.device(0).expect("adapter 0").clone();
    let before = dev.runlist_slots_read();
    let q = raw_queue(m, &k);
    let setup = dev.runlist_slots_read() - before;
    let before = dev.runlist_slots_read();
    okk(m, k.destroy_doorbell(q.doorbell));
    okk(m, k.destroy_hw_queue(q.queue));
    let teardown = dev.runlist_slots_read() - before;
    drop(qs);
    ok(m, m.exit_process(&p));
    no_fault(m);
    (setup, teardown)
}

#[test]
fn setting_up_a_queue_costs_the_device_the_same_with_16_or_300_queues() {
    let small = slots_read_for_one_more(&with_doorbells(Mode::Step, 16), 16);
    let large = slots_read_for_one_more(&with_doorbells(Mode::Step, 16), 300);
    assert_eq!(small, large, "(setup, teardown) slots read");
    // The queue's slot when it is created (not runnable yet: an empty slot that grows the
    // runlist), again when its doorbell gives it a ring, and once more for each of the two
    // destroys at most.
    assert!(small.0 <= 2 && small.1 <= 2, "{small:?}");
}

/// A device without `CAPS.RUNLIST_UPDATE` gets whole-runlist commits and runs the same work.
#[test]
fn without_runlist_updates_queues_still_run() {
    for update in [true, false] {
        let m = machine_with(Mode::Step, |a| a.device.runlist_update = update);
        let (p, k) = user_process(&m);
        let t = okk(&m, k.create_allocation(4096));
        let mut qs = (0..3)
            .map(|_| okk(&m, UserQueue::new(k, &QueueConfig::default())))
            .collect::<Vec<_>>();
        for (i, q) in qs.iter_mut().enumerate() {
            okk(&m, q.submit(&[fill(&t, 8 * i as u64, 0x1100 + i as u64)]));
        }
        ok(&m, m.run_until_idle());
        for (i, q) in qs.iter().enumerate() {
            assert_eq!(q.completed(), q.last_submitted(), "update={update}");
            assert_eq!(t.mem.load(8 * i as u64), 0x1100 + i as u64);
        }
        // Tearing one down in the middle leaves the others running.
        let mid = qs.remove(1);
        okk(&m, mid.close());
        for q in qs.iter_mut() {
            okk(&m, q.submit(&[fill(&t, 64, 0x77)]));
        }
        ok(&m, m.run_until_idle());
        for q in qs.iter() {
            assert_eq!(q.completed(), q.last_submitted(), "update={update}");
        }
        for q in qs {
            okk(&m, q.close());
        }
        exits_clean(&m, &p);
    }
}
