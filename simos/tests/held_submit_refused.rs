//! Found by the `ddi` fuzz target: a kernel-mode submission held behind a GPU wait
//! (MF-03) carries user-mode arguments the driver refuses once the OS releases it. The thunk
//! had already returned success, so the work can never run: the submitting device goes to
//! error (UM-10) and the OS carries on. Before, the simulated OS halted with a simulation
//! error, i.e. user mode could take the machine down.

mod common;

use common::*;
use rvgpu_simos::{Mode, UmsEvent};
use rvgpu_umd::kmt::Kmt;
use zerocopy::IntoBytes;

/// MF-03, UM-10: a held submission the driver refuses on release puts the device in error and
/// leaves the machine running; another process still works.
#[test]
fn held_submission_refused_by_the_driver_puts_the_device_in_error_not_the_os_down() {
    let m = with_doorbells(Mode::Step, 4);
    let (p, k) = user_process(&m);
    let context = okk(&m, k.create_context(0));
    let mut qp = hw_queue_pdd();
    let queue = okk(&m, k.create_hw_queue(context, false, qp.as_mut_bytes()));
    let (fence, _) = okk(&m, k.create_monitored_fence(0));
    okk(&m, k.submit_wait_to_hw_queue(queue.handle, &[(fence, 1)]));
    // Not a command buffer the driver accepts (3 bytes at an unmapped address); held, so the
    // thunk succeeds.
    okk(&m, k.submit_command_to_hw_queue(queue.handle, 1, 0x1234, 3));
    assert!(m
        .ums_events(0)
        .iter()
        .any(|e| matches!(e, UmsEvent::SubmitHeld { .. })));
    okk(&m, k.signal_fence_from_cpu(fence, 1));
    ok(&m, m.run_until_idle());
    no_fault(&m);
    assert!(
        m.ums_events(0)
            .iter()
            .any(|e| matches!(e, UmsEvent::HeldSubmitRefused { value: 1, .. })),
        "{:#?}",
        m.ums_events(0)
    );
    assert!(k.create_allocation(4096).is_err(), "device in error");
    // Another process is not affected.
    let (other, ko) = user_process(&m);
    let buf = okk(&m, ko.create_allocation(4096));
    let mut q = okk(&m, rvgpu_umd::submit::UserQueue::new(ko, &config(0)));
    let done = okk(&m, q.submit(&[fill(&buf, 0, 0x600D)]));
    okk(&m, q.wait(done));
    drop(q);
    ok(&m, m.kill_process(&p));
    exits_clean(&m, &other);
}
