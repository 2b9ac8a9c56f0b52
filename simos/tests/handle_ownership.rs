//! Issue 18: D3DKMT handles are per process. Process B naming process A's fence handle (a
//! guessed number) names nothing: its CPU signal, CPU wait, destroy and GPU waits and signals
//! fail with Windows' statuses, and A's fence is untouched.

mod common;

use common::*;
use rvgpu_simos::{MachineConfig, Mode};
use rvgpu_umd::kmt::{Kmt, NtStatus};
use rvgpu_umd::submit::{KernelQueue, QueueConfig};

const STATUS_INVALID_HANDLE: NtStatus = NtStatus(0xC000_0008_u32 as i32);
const STATUS_INVALID_PARAMETER: NtStatus = NtStatus(0xC000_000D_u32 as i32);

#[test]
fn another_process_cannot_use_a_fence_by_its_handle() {
    let m = started(MachineConfig::single(Mode::Step));
    let a = ok(&m, m.create_process(0));
    let b = ok(&m, m.create_process(0));
    let ka = m.kmt(&a);
    let kb = m.kmt(&b);
    let (h, fence) = okk(&m, ka.create_monitored_fence(3));

    assert_eq!(kb.signal_fence_from_cpu(h, 100), Err(STATUS_INVALID_HANDLE));
    assert_eq!(kb.wait_for_fence(h, 1), Err(STATUS_INVALID_HANDLE));
    assert_eq!(kb.destroy_monitored_fence(h), Err(STATUS_INVALID_HANDLE));
    // GPU waits and signals of B's own kernel-mode queue naming A's fence.
    let q = okk(
        &m,
        KernelQueue::new(
            &kb,
            &QueueConfig {
                node: 0,
                command_buffer_size: 4096,
                ..QueueConfig::default()
            },
        ),
    );
    let qh = q.queue_handle();
    assert_eq!(
        kb.submit_wait_to_hw_queue(qh, &[(h, 1)]),
        Err(STATUS_INVALID_PARAMETER)
    );
    assert_eq!(
        kb.submit_signal_to_hw_queue(qh, &[(h, 100)]),
        Err(STATUS_INVALID_PARAMETER)
    );
    assert_eq!(fence.value(), 3, "B changed A's fence");

    // A itself still can.
    okk(&m, ka.signal_fence_from_cpu(h, 5));
    assert_eq!(fence.value(), 5);
    okk(&m, ka.wait_for_fence(h, 5));
    okk(&m, ka.destroy_monitored_fence(h));
    no_fault(&m);
}
