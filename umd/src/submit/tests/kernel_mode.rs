//! The kernel-mode queue (UM-01, UM-05) and thunks shared by pointer.

use super::*;

/// UM-01: a full command buffer does not make a kernel-mode submission wait for the queue's
/// earlier work: the path moves on to a new buffer, up to eight, and with all eight busy (none
/// of their work able to wait on the GPU) waits only for the oldest one.
#[test]
fn um_01_kernel_mode_command_buffers_rotate_before_waiting() {
    let m = Mock::new();
    let mut q = held_kernel_queue(&m, 64);
    let fence = q.progress_fence();
    m.clear_log();
    // Two 32-byte batches per buffer: 16 batches fill eight buffers.
    for n in 1..=16u64 {
        assert_eq!(q.submit(&[fill(n)]).unwrap(), n);
    }
    let log = m.log();
    assert!(!log.iter().any(|e| matches!(e, Ev::Wait { .. })), "{log:?}");
    let created = log
        .iter()
        .filter(|e| matches!(e, Ev::CreateAllocation(_)))
        .count();
    assert_eq!(created, 7, "seven more buffers");
    let starts: std::collections::BTreeSet<u64> = log
        .iter()
        .filter_map(|e| match e {
            Ev::KmSubmit { gpu, .. } => Some(*gpu),
            _ => None,
        })
        .collect();
    assert_eq!(starts.len(), 16, "no command bytes reused while in flight");
    m.clear_log();
    // The seventeenth waits for the oldest buffer's last batch (2), not for all 16.
    assert_eq!(q.submit(&[fill(17)]).unwrap(), 17);
    assert!(
        m.log().contains(&Ev::Wait { fence, value: 2 }),
        "{:?}",
        m.log()
    );
    finish_in_order(&m, q, 17);
}

/// UM-01: when the KMD's kernel ring is full (`STATUS_INSUFFICIENT_RESOURCES`), the UMD waits
/// for the oldest outstanding submission only, then retries; any other refusal is returned at
/// once, with nothing waited for.
#[test]
fn um_01_kernel_ring_full_waits_for_the_oldest_only() {
    let m = Mock::new();
    m.w().km_ring_slots = Some(3);
    let mut q = held_kernel_queue(&m, 4096);
    let fence = q.progress_fence();
    for n in 1..=3u64 {
        assert_eq!(q.submit(&[fill(n)]).unwrap(), n);
    }
    m.clear_log();
    assert_eq!(q.submit(&[fill(4)]).unwrap(), 4);
    let waits: Vec<_> = m
        .log()
        .into_iter()
        .filter(|e| matches!(e, Ev::Wait { .. }))
        .collect();
    assert_eq!(waits, vec![Ev::Wait { fence, value: 1 }], "{:?}", m.log());
    // A refusal that is not for room: returned, no wait.
    m.w().fail_km_submit = true;
    m.clear_log();
    assert_eq!(
        q.submit(&[fill(5)]),
        Err(SubmitError::Kmt(STATUS_DEVICE_REMOVED))
    );
    assert!(!m.log().iter().any(|e| matches!(e, Ev::Wait { .. })));
    m.w().fail_km_submit = false;
    finish_in_order(&m, q, 4);
}

/// UM-01: a kernel-mode queue on its own: commands copied into the command buffer, one
/// SubmitCommandToHwQueue per batch with progress values 1, 2, ...; an INDIRECT becomes its
/// own submission (INDIRECTs do not nest); the command buffer is reused after the GPU is done.
#[test]
fn um_01_kernel_mode_queue() {
    let m = Mock::new();
    let cfg = QueueConfig {
        command_buffer_size: 64,
        ..Default::default()
    };
    let mut q = KernelQueue::new(&m, &cfg).unwrap();
    assert_eq!(q.submit(&[fill(1)]).unwrap(), 1);
    let Some(Ev::KmSubmit {
        value: 1,
        bytes: 32,
        gpu: cb_start,
        ..
    }) = m.log().last().cloned()
    else {
        panic!("one submission of 32 bytes with value 1");
    };
    // A caller-owned buffer with one FILL, called through INDIRECT.
    let buf = m.create_allocation(32).unwrap();
    let mut words = [0u64; 4];
    fill(100).encode(&mut words).unwrap();
    for (i, w) in words.iter().enumerate() {
        buf.mem.store(i as u64 * 8, *w);
    }
    m.clear_log();
    let v = q
        .submit(&[
            fill(2),
            Command::Indirect {
                addr: buf.gpu_va,
                bytes: 32,
            },
            fill(3),
        ])
        .unwrap();
    assert_eq!(v, 4, "three submissions");
    let subs = km_submits(&m);
    assert_eq!(subs.len(), 3);
    assert_eq!(subs[1], (3, buf.gpu_va, 32), "the INDIRECT's own buffer");
    assert_eq!(subs[0], (2, cb_start + 32, 32));
    assert_eq!(
        subs[2],
        (4, cb_start, 32),
        "the 64-byte buffer wrapped to its start"
    );
    q.wait(v).unwrap();
    assert_eq!(q.completed(), 4);
    assert_eq!(
        fills(&m),
        vec![(false, 1), (false, 2), (false, 100), (false, 3)]
    );
    assert_eq!(
        q.submit(&[Command::Nop { len: 0 }]),
        Err(SubmitError::BadCommand)
    );
    let too_big: Vec<Command> = (0..3).map(fill).collect();
    assert_eq!(q.submit(&too_big), Err(SubmitError::TooLarge));
    assert_eq!(q.wait(99), Err(SubmitError::NotSubmitted));
    m.clear_log();
    q.close().unwrap();
    let kinds: Vec<&str> = m
        .log()
        .iter()
        .filter_map(|e| match e {
            Ev::DestroyHwQueue(_) => Some("queue"),
            Ev::DestroyAllocation(_) => Some("alloc"),
            Ev::DestroyContext(_) => Some("context"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["queue", "alloc", "context"]);
    m.check();
}

/// UM-05: the UMD never uses the kernel-mode path on its user-mode queue (the mock faults if
/// it does), also across a fallback.
#[test]
fn um_05_user_mode_queue_never_takes_the_kernel_path() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let user = m.0.borrow().user_queue.unwrap();
    q.submit(&[fill(1)]).unwrap();
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    q.submit(&[fill(2)]).unwrap();
    q.submit(&[fill(3)]).unwrap();
    assert!(!m
        .log()
        .iter()
        .any(|e| matches!(e, Ev::KmSubmit { queue, .. } if *queue == user)));
    m.check();
}

/// The thunks can be shared through `Arc` (the C API does).
#[test]
#[allow(clippy::arc_with_non_send_sync)] // single-threaded test of the blanket impl
fn thunks_shared_through_arc() {
    let m = std::sync::Arc::new(Mock::new());
    let mut q = UserQueue::new(m.clone(), &QueueConfig::default()).unwrap();
    let v = q.submit(&[fill(1)]).unwrap();
    q.wait(v).unwrap();
    assert_eq!(fills(&m), vec![(true, 1)]);
}

/// UM-01, MF-03: behind an OS-scheduled GPU wait the caller releases later, a kernel-mode
/// queue takes 20,000 one-FILL batches without waiting for any of them (a wait there would be
/// for work only the caller can release), adding command buffers; they all run, in order,
/// once released.
#[test]
fn um_01_kernel_mode_queue_holds_20000_batches_behind_a_gpu_wait_without_waiting() {
    let m = Mock::new();
    let mut q = held_kernel_queue(&m, 4096);
    let gate = m.create_native_fence(0).unwrap();
    q.gpu_wait_monitored(gate.kmt, 1).unwrap();
    m.clear_log();
    for n in 1..=20_000u64 {
        assert_eq!(q.submit(&[fill(n)]).unwrap(), n);
    }
    assert!(!m.log().iter().any(|e| matches!(e, Ev::Wait { .. })));
    finish_in_order(&m, q, 20_000);
}

/// UM-01: a batch that waits on the GPU (`FENCE_WAIT`) holds what follows as an OS wait does;
/// when the queue holds all the command memory it may (`MAX_HELD_BYTES`, here the buffer-count
/// bound with 64-byte buffers), the next batch is refused at once with `Full`, nothing of it
/// submitted and nothing waited for; once the GPU is past the wait, the queue takes batches
/// again.
#[test]
fn um_01_kernel_mode_queue_refuses_at_once_when_full_behind_a_gpu_wait() {
    let m = Mock::new();
    let mut q = held_kernel_queue(&m, 64);
    let waits = Command::FenceWait {
        addr: 0xE000_0000,
        value: 1,
    };
    assert_eq!(q.submit(&[waits]).unwrap(), 1);
    // Two 32-byte batches per buffer; the FENCE_WAIT (24 bytes) took the first buffer's start.
    let mut n = 1;
    let refused = loop {
        match q.submit(&[fill(n + 1)]) {
            Ok(v) => {
                n += 1;
                assert_eq!(v, n);
            }
            Err(e) => break e,
        }
        assert!(n < 10_000, "never refused");
    };
    assert_eq!(refused, SubmitError::Full);
    let held = n;
    assert!(held >= 2 * 1000, "held {held}");
    let log = m.log();
    assert!(!log.iter().any(|e| matches!(e, Ev::Wait { .. })), "no wait");
    let last_submit = log.iter().rev().find_map(|e| match e {
        Ev::KmSubmit { value, .. } => Some(*value),
        _ => None,
    });
    assert_eq!(
        last_submit,
        Some(held),
        "the refused batch submitted nothing"
    );
    // The GPU runs past the wait (the mock does not model it: running is the release).
    m.w().run_all();
    assert_eq!(q.submit(&[fill(held + 1)]).unwrap(), held + 1);
    m.w().run_all();
    q.wait(held + 1).unwrap();
    q.close().unwrap();
    m.check();
}

/// UM-01: when the KMD says it holds as much as it will (`STATUS_INSUFFICIENT_RESOURCES`)
/// and the oldest outstanding submission is behind a GPU wait, the submission is refused at
/// once with `Full` instead of waiting for it.
#[test]
fn um_01_kernel_ring_full_behind_a_gpu_wait_is_refused_not_waited() {
    let m = Mock::new();
    m.w().km_ring_slots = Some(3);
    let mut q = held_kernel_queue(&m, 4096);
    let gate = m.create_native_fence(0).unwrap();
    q.gpu_wait_monitored(gate.kmt, 1).unwrap();
    for n in 1..=3u64 {
        assert_eq!(q.submit(&[fill(n)]).unwrap(), n);
    }
    m.clear_log();
    assert_eq!(q.submit(&[fill(4)]), Err(SubmitError::Full));
    assert!(!m.log().iter().any(|e| matches!(e, Ev::Wait { .. })));
    finish_in_order(&m, q, 3);
}

/// UM-01: a batch refused for a command that does not encode, whether its earlier commands
/// fit in the current command buffer or overflow it, submits nothing, takes no new buffer
/// and leaves the buffer where it was: the next batch goes where the refused one started and
/// the GPU never runs the refused batch's commands.
#[test]
fn um_01_kernel_mode_refused_batch_leaves_the_command_buffer_where_it_was() {
    let m = Mock::new();
    let mut q = held_kernel_queue(&m, 64);
    assert_eq!(q.submit(&[fill(1)]).unwrap(), 1);
    let Some(Ev::KmSubmit { gpu: cb_start, .. }) = m.log().last().cloned() else {
        panic!("one submission");
    };
    m.clear_log();
    let bad = Command::Nop { len: 0 };
    // 32 bytes left: the FILL fits, then the bad NOP.
    assert_eq!(q.submit(&[fill(100), bad]), Err(SubmitError::BadCommand));
    // The second FILL does not fit in what is left; the bad NOP still decides.
    assert_eq!(
        q.submit(&[fill(101), fill(102), bad]),
        Err(SubmitError::BadCommand)
    );
    assert_eq!(q.last_submitted(), 1);
    assert_eq!(m.log(), Vec::new(), "no submission, no new buffer");
    assert_eq!(q.submit(&[fill(2)]).unwrap(), 2);
    let subs = km_submits(&m);
    assert_eq!(subs, vec![(2, cb_start + 32, 32)]);
    finish_in_order(&m, q, 2);
}

/// A kernel-mode queue with `command_buffer_size`-byte command buffers on a device that runs
/// only when a wait lets time pass.
/// The kernel-mode submissions in `m`'s log: (progress value, GPU VA, bytes).
fn km_submits(m: &Mock) -> Vec<(u64, u64, u32)> {
    m.log()
        .into_iter()
        .filter_map(|e| match e {
            Ev::KmSubmit {
                value, gpu, bytes, ..
            } => Some((value, gpu, bytes)),
            _ => None,
        })
        .collect()
}

fn held_kernel_queue(m: &Mock, command_buffer_size: u64) -> KernelQueue<&Mock> {
    m.w().auto = false;
    let cfg = QueueConfig {
        command_buffer_size,
        ..Default::default()
    };
    KernelQueue::new(m, &cfg).unwrap()
}

/// Lets the device run everything, waits for `last`, and checks that FILLs `1..=last` ran in
/// order on the kernel-mode path; then closes the queue and checks the mock.
fn finish_in_order(m: &Mock, q: KernelQueue<&Mock>, last: u64) {
    m.w().run_all();
    q.wait(last).unwrap();
    assert_eq!(fills(m), (1..=last).map(|n| (false, n)).collect::<Vec<_>>());
    q.close().unwrap();
    m.check();
}
