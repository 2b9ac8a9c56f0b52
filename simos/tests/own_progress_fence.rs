//! UM-16 on a user-mode queue the OS gave no progress fence (24H2: `D3DKMTCreateHwQueue`
//! returns none for a `UserModeSubmission` queue), with the real UMD core
//! (`rvgpu_umd::submit::UserQueue`), the simulated OS ([`SimKmt`]), the real KMD and device.
//!
//! The thunks here are [`SimKmt`]'s with the progress fence taken out of a user-mode queue's
//! `D3DKMTCreateHwQueue` answer: the queue then completes on a native fence of its own (its
//! batches close with the fence's conditional FENCE_SIGNAL), which exercises
//! [`Kmt::native_fence_cpu`] and CPU waits on a native fence through
//! [`Kmt::wait_for_fence`].

mod common;

use common::own_progress::NoUserProgress;
use common::*;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::Mode;
use rvgpu_umd::kmt::{AllocationCpu, FenceCpu, Kmt};
use rvgpu_umd::submit::{SubmissionPath, UserQueue};

/// UM-16 / NF-03: without the OS's progress fence the queue creates a native fence, its
/// batches run and close with that fence's signal, which interrupts no one while no CPU
/// waits; a CPU wait on the fence's handle returns once the device signalled it, completion
/// reads it, and close waits for the last batch and destroys the fence.
#[test]
fn um_16_user_mode_queue_without_an_os_progress_fence_completes_on_its_own_native_fence() {
    let m = with_doorbells(Mode::Step, 4);
    let (p, k) = user_process(&m);
    let t = okk(&m, k.create_allocation(4096));
    let mut q = okk(&m, UserQueue::new(NoUserProgress(k), &config(0)));
    assert_eq!(q.path(), SubmissionPath::UserMode);
    let fence = q.progress_fence();
    let own = m
        .native_fence_by_kmt(0, fence)
        .expect("the progress fence is a native fence of the process");
    ok(&m, m.run_until_idle());
    let isr = m.interrupt_counts(0).0;
    let mut last = 0;
    for i in 1..=8u64 {
        last = okk(&m, q.submit(&[fill64(t.gpu_va, i)]));
    }
    assert_eq!(last, 8);
    ok(&m, m.run_until_idle());
    assert_eq!(own.current_value(), 8, "the device signalled it");
    assert_eq!(
        m.interrupt_counts(0).0,
        isr,
        "NF-03: no CPU waiter, no interrupt (a PROGRESS_IRQ would interrupt per batch)"
    );
    okk(&m, q.wait(last));
    assert_eq!(q.completed(), 8);
    assert_eq!(t.mem.load(0), 8);
    assert_eq!(q.path(), SubmissionPath::UserMode, "no fallback was needed");
    let v = okk(&m, q.submit(&[Command::Nop { len: 1 }]));
    okk(&m, q.close());
    assert_eq!(own.current_value(), v, "close waited for the last batch");
    assert!(
        m.native_fence_by_kmt(0, fence).is_none(),
        "close destroyed the fence"
    );
    exits_clean(&m, &p);
}

/// UM-16's waits on the own fence: the CPU view [`SimKmt`] gives of a native fence reads its
/// CurrentValue and a CPU wait takes its handle; another process's handle is refused.
#[test]
fn um_16_sim_thunks_read_and_wait_on_a_native_fence() {
    let m = with_doorbells(Mode::Step, 4);
    let (p, k) = user_process(&m);
    let f = okk(&m, k.create_native_fence(3));
    let cpu = okk(&m, k.native_fence_cpu(&f));
    assert_eq!(cpu.value(), 3);
    okk(&m, k.wait_for_fence(f.kmt, 3));
    let (_q, other) = user_process(&m);
    assert!(
        other.native_fence_cpu(&f).is_err(),
        "another process's handle"
    );
    assert!(other.wait_for_fence(f.kmt, 1).is_err());
    okk(&m, k.destroy_native_fence(f.kmt));
    exits_clean(&m, &p);
}
