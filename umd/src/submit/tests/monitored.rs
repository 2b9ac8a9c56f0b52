//! OS-scheduled GPU waits and signals on a kernel-mode queue (MF-03), and a user-mode queue
//! without the OS's progress fence.

use super::*;

// ---------------------------------------------------------------------------------------------
// MF-03: OS-scheduled GPU waits and signal packets on a kernel-mode queue.

/// MF-03: a GPU wait and a software signal packet are one thunk each, in submission order on
/// the queue's handle; the "flush" before the wait is no call at all (every earlier batch was
/// already handed to the OS by its own `submit`), and neither blocks the CPU (no CPU wait).
#[test]
fn mf_03_kernel_queue_gpu_wait_and_signal_are_thunks_in_order() {
    let m = Mock::new();
    let mut q = KernelQueue::new(&m, &QueueConfig::default()).unwrap();
    let qh = q.queue_handle();
    m.clear_log();
    assert_eq!(q.submit(&[fill(1)]).unwrap(), 1);
    q.gpu_wait_monitored(0x77, 5).unwrap();
    assert_eq!(q.submit(&[fill(2)]).unwrap(), 2);
    q.gpu_signal_monitored_os(0x78, 9).unwrap();
    let log: Vec<Ev> = m
        .log()
        .into_iter()
        .map(|e| match e {
            Ev::KmSubmit { queue, value, .. } => Ev::KmSubmit {
                queue,
                value,
                gpu: 0,
                bytes: 0,
            },
            e => e,
        })
        .collect();
    let km = |value| Ev::KmSubmit {
        queue: qh,
        value,
        gpu: 0,
        bytes: 0,
    };
    assert_eq!(
        log,
        vec![
            km(1),
            Ev::GpuWait {
                queue: qh,
                fences: vec![(0x77, 5)]
            },
            km(2),
            Ev::GpuSignal {
                queue: qh,
                fences: vec![(0x78, 9)]
            },
        ]
    );
    // Another queue can wait on this queue's progress fence.
    assert_ne!(q.progress_fence(), 0);
    q.close().unwrap();
    m.check();
}

/// MF-03: a thunk failure is the caller's error, and nothing is submitted for it.
#[test]
fn mf_03_gpu_wait_failure_is_reported() {
    let m = Mock::new();
    let mut q = KernelQueue::new(&m, &QueueConfig::default()).unwrap();
    m.w().queues.get_mut(&q.queue_handle()).unwrap().user_mode = true;
    assert_eq!(
        q.gpu_wait_monitored(1, 1),
        Err(SubmitError::Kmt(STATUS_INVALID_PARAMETER))
    );
    assert_eq!(
        q.gpu_signal_monitored_os(1, 1),
        Err(SubmitError::Kmt(STATUS_INVALID_PARAMETER))
    );
    m.w().queues.get_mut(&q.queue_handle()).unwrap().user_mode = false;
}

/// Thunks that implement only the required methods: the MF-03 defaults.
struct NoMf03(Mock);

impl Kmt for NoMf03 {
    type Mem = MockMem;
    type Doorbell = MockDoorbell;
    type Fence = MockFence;
    // Each listed thunk, forwarded to the mock.
    crate::forward_thunks! { self => self.0;
        fn create_context(&self, node: u32) -> Result<KmtHandle, NtStatus>;
        fn destroy_context(&self, context: KmtHandle) -> Result<(), NtStatus>;
        fn create_hw_queue(&self, context: KmtHandle, user_mode_submission: bool, private_data: &mut [u8]) -> Result<HwQueue<MockFence>, NtStatus>;
        fn destroy_hw_queue(&self, queue: KmtHandle) -> Result<(), NtStatus>;
        fn create_allocation_as(&self, size: u64, kind: crate::kmt::AllocationKind) -> Result<Allocation<MockMem>, NtStatus>;
        fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus>;
        fn create_doorbell(&self, queue: KmtHandle, ring: KmtHandle, ring_control: KmtHandle, private_data: &mut [u8]) -> Result<Doorbell<MockDoorbell>, NtStatus>;
        fn connect_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
        fn destroy_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
        fn notify_work_submission(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
        fn submit_command_to_hw_queue(&self, queue: KmtHandle, progress_fence_value: u64, command_buffer_gpu: u64, command_bytes: u32) -> Result<(), NtStatus>;
        fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus>;
    }
}

/// MF-03: thunks without the hardware-queue sync calls report `STATUS_NOT_SUPPORTED`, through a
/// reference and an `Arc` as well (the forwarding impls forward them).
#[test]
fn mf_03_default_thunks_are_not_supported() {
    let k = NoMf03(Mock::new());
    let mut q = KernelQueue::new(&k, &QueueConfig::default()).unwrap();
    let ns = Err(SubmitError::Kmt(crate::kmt::STATUS_NOT_SUPPORTED));
    assert_eq!(q.gpu_wait_monitored(1, 1), ns);
    assert_eq!(q.gpu_signal_monitored_os(1, 1), ns);
    q.close().unwrap();
    let m = Mock::new();
    // The test is single-threaded; the Arc is only the forwarding impl under test.
    #[allow(clippy::arc_with_non_send_sync)]
    let a = Arc::new(m.clone());
    let mut q = KernelQueue::new(a, &QueueConfig::default()).unwrap();
    q.gpu_wait_monitored(1, 1).unwrap();
    assert!(matches!(m.log().last(), Some(Ev::GpuWait { .. })));
}

/// UMD hot path: the closing PROGRESS's length the hot path adds without encoding
/// it is the packet's real length, so the room it reserves is exactly what it writes.
#[test]
fn user_mode_batch_reserves_the_closing_progress_packet_length() {
    let mut closing = ClosingPacket::progress();
    assert_eq!(closing.bytes(), 8 * progress_words(u64::MAX).len() as u64);
    for value in [1, u64::MAX] {
        let mut encoded = [0u64; 2];
        let packet = Command::Progress { irq: true, value };
        assert_eq!(packet.encode(&mut encoded), Some(2));
        assert_eq!(progress_words(value), encoded, "the pre-encoded PROGRESS");
        closing.set_value(value);
        assert_eq!(closing.words(), encoded, "the closing packet");
    }
    use crate::packets::{Packets, Refused};
    assert_eq!(
        [fill(1), Command::Nop { len: 3 }][..].words(),
        Ok(fill(1).len() as u64 + 3)
    );
    assert_eq!(
        [fill(1), Command::Nop { len: 0 }][..].words(),
        Err(Refused::Bad)
    );
    // A WRITE_DATA would go out without its data words: refused on both paths.
    let write = Command::WriteData {
        dst: 0x1000,
        count: 1,
    };
    assert_eq!([fill(1), write][..].words(), Err(Refused::Bad));
    let m = Mock::new();
    let mut q = KernelQueue::new(&m, &QueueConfig::default()).unwrap();
    assert_eq!(q.submit(&[write]), Err(SubmitError::BadCommand));
}

/// UM-01: the kernel-mode path answers `BadCommand` for a batch with a command that does not
/// encode even behind a size it refuses, `TooLarge` for a bad size alone, and submits nothing
/// of a refused batch.
#[test]
fn um_01_kernel_queue_refuses_a_command_that_does_not_encode_before_any_size() {
    let m = Mock::new();
    let mut q = KernelQueue::new(&m, &QueueConfig::default()).unwrap();
    let oversized = Command::Indirect { addr: 0, bytes: 0 };
    assert_eq!(
        q.submit(&[oversized, fill(1), Command::Nop { len: 0 }]),
        Err(SubmitError::BadCommand)
    );
    assert_eq!(q.submit(&[fill(1), oversized]), Err(SubmitError::TooLarge));
    assert_eq!(
        q.last_submitted(),
        0,
        "nothing of a refused batch is submitted"
    );
    assert_eq!(q.submit(&[fill(1)]), Ok(1));
}

/// thunks behind a reference or an `Arc` forward the paging-queue and GPU VA thunks
/// (not the trait's `STATUS_NOT_SUPPORTED` defaults), as the harness and the C API hold them.
#[test]
fn pointer_thunks_forward_the_gpu_va_thunks() {
    fn check<K: Kmt>(k: &K) {
        let r = crate::kmt::ReserveGpuVa {
            base: 0x7000_0000_0000,
            size: 0x1_0000,
            ..Default::default()
        };
        assert_eq!(k.reserve_gpu_va(&r), Ok(0x7000_0000_0001));
        let m = crate::kmt::MapGpuVa {
            base: 0x7000_0000_0000,
            ..Default::default()
        };
        assert_eq!(k.map_gpu_va(&m).map(|x| x.paging_fence_value), Ok(2));
        assert_eq!(k.free_gpu_va(0x7000_0000_0000, 0), Ok(()));
        assert_eq!(k.destroy_paging_queue(1), Ok(()));
        let u = crate::kmt::UpdateGpuVa::default();
        let op = crate::kmt::UpdateGpuVaOp::unmap(0x7000_0000_0000, 4096);
        assert_eq!(k.update_gpu_va(&u, &[op]), Ok(()));
    }
    let m = Mock::new();
    check(&&m);
    // One thread: the mock's `Rc` world never crosses threads; the `Arc` is the pointer kind
    // under test (the C API's queues hold their thunks that way).
    #[allow(clippy::arc_with_non_send_sync)]
    let shared = alloc::sync::Arc::new(Mock(m.0.clone()));
    check(&shared);
}

// ---------------------------------------------------------------------------------------------
// A user-mode queue the OS gave no progress fence (24H2)
// ---------------------------------------------------------------------------------------------

/// UM-16 without an OS progress fence: the queue creates one native fence and closes each
/// batch with its conditional FENCE_SIGNAL(N+1) (no interrupt unless a CPU waits), never
/// PROGRESS; N+1 still goes to the last-queued address before the write pointer and the
/// doorbell; waits and completion read the fence.
#[test]
fn um_16_without_an_os_progress_fence_batches_close_with_an_own_native_fence_signal() {
    let m = without_os_progress();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let own = native_fences(&m);
    assert_eq!(
        own,
        vec![q.progress_fence()],
        "exactly one fence of its own"
    );
    let fence = mock_native_fence(own[0]);
    for n in 1..=3u64 {
        m.clear_log();
        let v = q.submit(&[fill(n)]).unwrap();
        assert_eq!(v, n);
        let log = m.log();
        let words = ring_words(&log);
        assert_eq!(words.len(), 4 + 5, "FILL, then the 5-word FENCE_SIGNAL");
        assert_eq!(decode(&words[..4]).unwrap(), fill(n));
        assert_eq!(
            decode(&words[4..]).unwrap(),
            fence.signal(n),
            "batch {n}: the fence's conditional signal of N+1"
        );
        let tail: Vec<&Ev> = log
            .iter()
            .filter(|e| matches!(e, Ev::LastQueued(_) | Ev::WritePtr(_) | Ev::Doorbell(_)))
            .collect();
        assert_eq!(
            tail,
            [
                &Ev::LastQueued(n),
                &Ev::WritePtr(n * 72),
                &Ev::Doorbell(n * 72)
            ],
            "UM-16: last-queued, write pointer, doorbell"
        );
        q.wait(v).unwrap();
        assert_eq!(q.completed(), n, "read from the own fence");
    }
    assert!(
        !m.executed()
            .iter()
            .any(|(_, c)| matches!(c, Command::Progress { .. })),
        "no PROGRESS in the ring"
    );
    assert_eq!(fills(&m), vec![(true, 1), (true, 2), (true, 3)]);
    m.check();
}

/// UM-19 with the own fence: the fallback finds the batch ends by the own fence's closing
/// FENCE_SIGNAL and resubmits only what the CMP had not consumed, without those signals.
#[test]
fn um_19_abort_resubmits_batches_closed_by_the_own_fence() {
    let m = without_os_progress();
    m.w().auto = false;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let a = q.submit(&[fill(1), fill(2)]).unwrap();
    let b = q.submit(&[fill(3)]).unwrap();
    // The CMP runs FILL 1, FILL 2 and the closing signal of batch 1, then the device is lost.
    device_lost_after(&m, &q, 3, a);
    let c = q.submit(&[fill(4)]).unwrap();
    assert_eq!((a, b, c), (1, 2, 3));
    q.wait(c).unwrap();
    assert_eq!(q.completed(), 3);
    assert_eq!(
        fills(&m),
        vec![(true, 1), (true, 2), (false, 3), (false, 4)],
        "each FILL once, in order"
    );
    assert!(
        !m.executed()
            .iter()
            .any(|(user, c)| !user && matches!(c, Command::FenceSignal { .. })),
        "the closing signals stay behind"
    );
    m.check();
}

/// UM-17 with the own fence: close waits on it, then destroys it after the hardware queue.
#[test]
fn um_17_close_destroys_the_own_progress_fence_after_the_queue() {
    let m = without_os_progress();
    m.w().auto = false;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let fence = q.progress_fence();
    q.submit(&[fill(1)]).unwrap();
    m.clear_log();
    q.close().unwrap();
    let log = m.log();
    assert_eq!(log[0], Ev::Wait { fence, value: 1 });
    let at = |pred: &dyn Fn(&Ev) -> bool| log.iter().position(pred).unwrap();
    let queue = at(&|e| matches!(e, Ev::DestroyHwQueue(_)));
    let own = at(&|e| *e == Ev::DestroyNativeFence(fence));
    let context = at(&|e| matches!(e, Ev::DestroyContext(_)));
    assert!(queue < own && own < context, "{log:?}");
    assert_eq!(
        log.iter()
            .filter(|e| matches!(e, Ev::DestroyNativeFence(_)))
            .count(),
        1
    );
    assert!(native_fences(&m).is_empty());
    m.check();
}

/// UM-05 creation without an OS progress fence: a step failing after the own fence was
/// created destroys it (after the queue); a failed fence creation undoes the queue and the
/// context and leaves no fence.
#[test]
fn um_05_creation_failure_undoes_the_own_progress_fence() {
    let m = without_os_progress();
    m.w().fail_create_doorbell = true;
    assert_eq!(
        UserQueue::new(&m, &QueueConfig::default()).err(),
        Some(SubmitError::Kmt(STATUS_INVALID_PARAMETER))
    );
    let log = m.log();
    let queue = log
        .iter()
        .position(|e| matches!(e, Ev::DestroyHwQueue(_)))
        .unwrap();
    let own = log
        .iter()
        .position(|e| matches!(e, Ev::DestroyNativeFence(_)))
        .expect("the own fence destroyed");
    assert!(queue < own);
    assert!(native_fences(&m).is_empty());

    let m = without_os_progress();
    m.w().fail_create_native_fence = true;
    assert_eq!(
        UserQueue::new(&m, &QueueConfig::default()).err(),
        Some(SubmitError::Kmt(STATUS_NO_MEMORY))
    );
    let undone: Vec<&str> = m
        .log()
        .iter()
        .filter_map(|e| match e {
            Ev::DestroyHwQueue(_) => Some("queue"),
            Ev::DestroyContext(_) => Some("context"),
            Ev::DestroyNativeFence(_) | Ev::DestroyAllocation(_) => Some("other"),
            _ => None,
        })
        .collect();
    assert_eq!(undone, ["queue", "context"]);
}

/// UM-16: the closing FENCE_SIGNAL encoded once and patched per batch is exactly the fence's
/// conditional signal of that value, and only it closes a batch.
#[test]
fn um_16_pre_encoded_closing_signal_is_the_fences_signal() {
    let m = Mock::new();
    let f = m.create_native_fence(0).unwrap();
    let p = Progress::Own {
        fence: f,
        cpu: m.native_fence_cpu(&f).unwrap(),
    };
    let mut c = p.closing_packet().unwrap();
    assert_eq!(c.bytes(), 40);
    for value in [1, 0x1234_5678_9ABC, u64::MAX] {
        c.set_value(value);
        assert_eq!(decode(c.words()).unwrap(), f.signal(value));
        assert_eq!(p.closes(&f.signal(value)), Some(value));
    }
    let other = m.create_native_fence(0).unwrap();
    assert_eq!(p.closes(&other.signal(1)), None, "another fence's signal");
    assert_eq!(
        p.closes(&Command::Progress {
            irq: true,
            value: 1
        }),
        None
    );
}
