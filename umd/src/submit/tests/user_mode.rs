//! The user-mode queue: UM-16's stores and back-pressure, the doorbell's status loop and
//! fallback (UM-19), device loss (UM-10), teardown (UM-17).

use super::*;

/// UM-16: the five stores of a submission, in order: the commands into the ring, PROGRESS(N+1)
/// into the ring (the OS gave a progress fence), N+1 at the last-queued address, write_ptr
/// (release), the doorbell.
#[test]
fn um_16_five_stores_in_order() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    assert_eq!(q.path(), SubmissionPath::UserMode);
    for n in 1..=3u64 {
        m.clear_log();
        let v = q.submit(&[fill(n)]).unwrap();
        assert_eq!(v, n, "N+1");
        let stores: Vec<Ev> = m
            .log()
            .into_iter()
            .filter(|e| {
                matches!(
                    e,
                    Ev::RingWord(..) | Ev::LastQueued(_) | Ev::WritePtr(_) | Ev::Doorbell(_)
                )
            })
            .collect();
        let base = (n - 1) * 6; // 4 words of FILL + 2 of PROGRESS per batch
        let words: Vec<u64> = stores[..6]
            .iter()
            .enumerate()
            .map(|(k, e)| match e {
                Ev::RingWord(i, v) => {
                    assert_eq!(*i, base + k as u64, "consecutive ring words");
                    *v
                }
                other => panic!("expected ring stores first, got {other:?}"),
            })
            .collect();
        assert_eq!(decode(&words[..4]).unwrap(), fill(n), "1: the commands");
        assert_eq!(
            decode(&words[4..]).unwrap(),
            Command::Progress {
                irq: true,
                value: n
            },
            "2: PROGRESS(N+1) last"
        );
        assert_eq!(
            &stores[6..],
            &[
                Ev::LastQueued(n),
                Ev::WritePtr(n * 48),
                Ev::Doorbell(n * 48)
            ],
            "3: last-queued, 4: write_ptr, 5: doorbell (dedicated: the write pointer)"
        );
        q.wait(v).unwrap();
    }
    assert_eq!(fills(&m), vec![(true, 1), (true, 2), (true, 3)]);
    assert_eq!(q.completed(), 3);
    assert!(
        native_fences(&m).is_empty(),
        "the OS's progress fence (Microsoft's pages): no fence of its own"
    );
    m.check();
}

/// UM-16 / UM-21: with the global doorbell the UMD rings its queue id.
#[test]
fn um_16_global_doorbell_rings_the_queue_id() {
    let m = Mock::new();
    m.w().ring_value = DoorbellValue::QueueId as u32;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    assert_eq!(q.ring_value(), DoorbellValue::QueueId);
    let id = m.0.borrow().queue_id;
    assert_eq!(q.queue_id(), id);
    m.clear_log();
    q.submit(&[fill(1)]).unwrap();
    assert!(m.log().contains(&Ev::Doorbell(u64::from(id))));
    assert_eq!(fills(&m), vec![(true, 1)]);
    m.check();
}

/// UM-19: CONNECTED_NOTIFY → D3DKMTNotifyWorkSubmission after the ring.
#[test]
fn um_19_connected_notify_calls_notify_work_submission() {
    let m = Mock::new();
    m.w().connect_status = DoorbellStatus::ConnectedNotify;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let db = m.0.borrow().doorbell.unwrap();
    m.clear_log();
    let v = q.submit(&[fill(1)]).unwrap();
    let log = m.log();
    let ring = log.iter().position(|e| *e == Ev::Doorbell(48)).unwrap();
    assert_eq!(
        &log[ring + 1..],
        &[Ev::Status(DoorbellStatus::ConnectedNotify), Ev::Notify(db)]
    );
    q.wait(v).unwrap();
    assert_eq!(fills(&m), vec![(true, 1)]);
    m.check();
}

/// UM-19: DISCONNECTED_RETRY → ConnectDoorbell and ring again, as long as it says so.
#[test]
fn um_19_disconnected_retry_reconnects_and_rings_again() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let db = m.0.borrow().doorbell.unwrap();
    m.w().status_script = [
        DoorbellStatus::DisconnectedRetry,
        DoorbellStatus::DisconnectedRetry,
    ]
    .into();
    m.clear_log();
    let v = q.submit(&[fill(1)]).unwrap();
    let tail: Vec<Ev> = m
        .log()
        .into_iter()
        .skip_while(|e| !matches!(e, Ev::Doorbell(_)))
        .collect();
    assert_eq!(
        tail,
        vec![
            Ev::Doorbell(48),
            Ev::Status(DoorbellStatus::DisconnectedRetry),
            Ev::Connect(db),
            Ev::Doorbell(48),
            Ev::Status(DoorbellStatus::DisconnectedRetry),
            Ev::Connect(db),
            Ev::Doorbell(48),
            Ev::Status(DoorbellStatus::Connected),
        ]
    );
    q.wait(v).unwrap();
    assert_eq!(q.path(), SubmissionPath::UserMode);
    assert_eq!(fills(&m), vec![(true, 1)], "ran once, on the ring");
    m.check();
}

/// UM-19: DISCONNECTED_ABORT → fall back to a (lazily created) kernel-mode queue; the batch
/// that hit the abort runs there, once; later batches go there too.
#[test]
fn um_19_abort_falls_back_to_kernel_mode() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    assert_eq!(q.submit(&[fill(1)]).unwrap(), 1);
    let creates = |m: &Mock| {
        m.log()
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    Ev::CreateHwQueue {
                        user_mode: false,
                        ..
                    }
                )
            })
            .count()
    };
    assert_eq!(creates(&m), 0, "no kernel-mode queue before it is needed");
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    assert_eq!(q.submit(&[fill(2)]).unwrap(), 2);
    assert_eq!(q.path(), SubmissionPath::KernelMode);
    assert_eq!(creates(&m), 1);
    let db = m.0.borrow().doorbell.unwrap();
    let log = m.log();
    let abort = log
        .iter()
        .position(|e| *e == Ev::Status(DoorbellStatus::DisconnectedAbort))
        .unwrap();
    assert_eq!(
        log[abort + 1],
        Ev::DestroyDoorbell(db),
        "quiesce the ring first"
    );
    assert!(matches!(log.last(), Some(Ev::KmSubmit { value: 1, .. })));
    assert_eq!(q.submit(&[fill(3)]).unwrap(), 3);
    q.wait(3).unwrap();
    q.wait(1).unwrap();
    assert_eq!(q.completed(), 3);
    assert_eq!(fills(&m), vec![(true, 1), (false, 2), (false, 3)]);
    m.check();
}

/// UM-19: a failed connect at creation → every submission takes the kernel-mode path.
#[test]
fn um_19_connect_failure_at_creation_falls_back() {
    let m = Mock::new();
    let mut q = connect_refused_at_creation(&m);
    assert_eq!(q.path(), SubmissionPath::KernelMode);
    m.clear_log();
    m.w().auto = false;
    assert_eq!(q.submit(&[fill(1)]).unwrap(), 1);
    assert_eq!(q.submit(&[fill(2)]).unwrap(), 2);
    assert!(
        !m.log()
            .iter()
            .any(|e| matches!(e, Ev::RingWord(..) | Ev::Doorbell(_))),
        "nothing went through the ring"
    );
    let kernel_queue = m
        .log()
        .iter()
        .find_map(|e| match e {
            Ev::CreateHwQueue {
                handle,
                user_mode: false,
            } => Some(*handle),
            _ => None,
        })
        .unwrap();
    let kernel_fence = m.0.borrow().queues[&kernel_queue].fence.unwrap();
    assert_eq!(q.wait_target(2), Ok(Some((kernel_fence, 2))));
    assert_eq!(q.completed(), 0);
    q.wait(2).unwrap();
    assert_eq!(q.completed(), 2);
    assert_eq!(fills(&m), vec![(false, 1), (false, 2)]);
    m.check();
}

/// UM-19: RETRY, then the reconnect fails → fall back; the batch runs once.
#[test]
fn um_19_reconnect_failure_falls_back() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    m.w().status_script = [DoorbellStatus::DisconnectedRetry].into();
    m.w().connect_script = [Err(STATUS_DEVICE_REMOVED)].into();
    one_fill_on_the_kernel_path(&m, &mut q);
}

/// UM-19: a failed NotifyWorkSubmission is handled like a failed connect.
#[test]
fn um_19_notify_failure_falls_back() {
    let m = Mock::new();
    m.w().connect_status = DoorbellStatus::ConnectedNotify;
    m.w().fail_notify = true;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    one_fill_on_the_kernel_path(&m, &mut q);
}

/// UM-19: a notify refused because the KMD disconnected the doorbell after the status read
/// follows the status it left (reconnect, ring again) and stays on the user-mode path.
#[test]
fn um_19_notify_refused_after_a_disconnect_reconnects_and_stays_user_mode() {
    let m = Mock::new();
    m.w().connect_status = DoorbellStatus::ConnectedNotify;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let db = m.0.borrow().doorbell.unwrap();
    m.w().disconnect_before_notify = true;
    m.clear_log();
    let v = q.submit(&[fill(1)]).unwrap();
    assert_eq!(q.path(), SubmissionPath::UserMode);
    let tail: Vec<Ev> = m
        .log()
        .into_iter()
        .skip_while(|e| !matches!(e, Ev::Doorbell(_)))
        .collect();
    assert_eq!(
        tail,
        vec![
            Ev::Doorbell(48),
            Ev::Status(DoorbellStatus::ConnectedNotify),
            Ev::Notify(db),
            Ev::Status(DoorbellStatus::DisconnectedRetry),
            Ev::Connect(db),
            Ev::Doorbell(48),
            Ev::Status(DoorbellStatus::ConnectedNotify),
            Ev::Notify(db),
        ]
    );
    q.wait(v).unwrap();
    assert_eq!(fills(&m), vec![(true, 1)]);
    m.check();
}

/// UM-19: the abort comes after the CMP consumed part of the ring: only the unconsumed packets
/// are resubmitted (a batch cut in the middle continues where the CMP stopped), and progress
/// values stay one sequence.
#[test]
fn um_19_abort_resubmits_only_unconsumed_packets() {
    let m = Mock::new();
    m.w().auto = false;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let a = q.submit(&[fill(1), fill(2)]).unwrap();
    let b = q.submit(&[fill(3), fill(4)]).unwrap();
    let c = q.submit(&[fill(5)]).unwrap();
    // The CMP runs FILL 1, FILL 2, PROGRESS(1), FILL 3, then the device is lost.
    device_lost_after(&m, &q, 4, a);
    let d = q.submit(&[fill(6)]).unwrap();
    assert_eq!((a, b, c, d), (1, 2, 3, 4));
    let kernel_fence = m
        .log()
        .iter()
        .find_map(|e| match e {
            Ev::KmSubmit { queue, .. } => m.0.borrow().queues[queue].fence,
            _ => None,
        })
        .unwrap();
    assert_eq!(
        q.wait_target(a),
        Ok(None),
        "completed on the user-mode queue"
    );
    assert_eq!(q.wait_target(5), Err(SubmitError::NotSubmitted));
    // Batch 2 was resubmitted as an empty batch (its FILL 3 had run), batch 3 and 4 follow:
    // kernel-mode values 1, 2, 3, all complete (the mock runs them at once).
    assert_eq!(q.wait_target(d), Ok(None));
    assert!(m.0.borrow().fences[&kernel_fence] == 3);
    q.wait(b).unwrap();
    q.wait(d).unwrap();
    assert_eq!(q.completed(), 4);
    assert_eq!(
        fills(&m),
        vec![
            (true, 1),
            (true, 2),
            (true, 3),
            (false, 4),
            (false, 5),
            (false, 6)
        ],
        "each FILL exactly once, in order"
    );
    m.check();
}

/// UM-16: the ring wraps: packets straddle the end and the device decodes them.
#[test]
fn um_16_ring_wraps_around() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &small(256)).unwrap();
    let mut straddled = false;
    for n in 0..40u64 {
        let before = m.0.borrow().write_ptr();
        let v = q.submit(&[fill(n)]).unwrap();
        let after = m.0.borrow().write_ptr();
        straddled |= before / 256 != (after - 1) / 256;
        q.wait(v).unwrap();
    }
    assert!(straddled, "some batch crossed the ring's end");
    assert_eq!(
        fills(&m),
        (0..40).map(|n| (true, n)).collect::<Vec<_>>(),
        "all ran, in order"
    );
    m.check();
}

/// UM-16: a full ring waits on the progress fence (for the oldest batch whose consumption
/// frees enough) and never overwrites unconsumed commands: the OS's fence, or the queue's own
/// when the OS gave none (its handle in the wait and in `wait_target`).
#[test]
fn um_16_full_ring_waits_on_the_progress_fence() {
    // (which fence, the mock, batches of one FILL that fit the 256-byte ring)
    let cases = [
        ("the OS's", Mock::new(), 5),          // 5 x (32 + 16) = 240 bytes
        ("its own", without_os_progress(), 3), // 3 x (32 + 40) = 216 bytes
    ];
    for (which, m, fit) in cases {
        m.w().auto = false; // the device runs only when a wait lets time pass
        let mut q = UserQueue::new(&m, &small(256)).unwrap();
        let fence = q.progress_fence();
        for n in 1..=fit {
            assert_eq!(q.submit(&[fill(n)]).unwrap(), n, "{which}");
        }
        assert!(
            !m.log().iter().any(|e| matches!(e, Ev::Wait { .. })),
            "{which}"
        );
        assert_eq!(q.wait_target(2), Ok(Some((fence, 2))), "{which}");
        m.clear_log();
        let next = fit + 1;
        assert_eq!(q.submit(&[fill(next)]).unwrap(), next, "{which}");
        let log = m.log();
        let wait = log
            .iter()
            .position(|e| *e == Ev::Wait { fence, value: 1 })
            .unwrap_or_else(|| panic!("{which}: waited for batch 1"));
        let first_store = log
            .iter()
            .position(|e| matches!(e, Ev::RingWord(..)))
            .unwrap();
        assert!(wait < first_store, "{which}: waited before writing");
        // Too big for the ring even when empty.
        let big: Vec<Command> = (0..64).map(fill).collect();
        assert_eq!(q.submit(&big), Err(SubmitError::TooLarge), "{which}");
        m.w().run_all();
        q.wait(next).unwrap();
        assert_eq!(q.wait_target(next), Ok(None), "{which}");
        let all: Vec<_> = (1..=next).map(|n| (true, n)).collect();
        assert_eq!(fills(&m), all, "{which}");
        m.check();
    }
}

/// UM-16: a full ring the CMP drains between the writer's two loads of the read pointer (the
/// one that found it full and the one that looks for the batch to wait on) is room, not a
/// corrupt ring: the submission goes in without a wait.
#[test]
fn um_16_ring_drained_between_two_read_pointer_loads_is_room() {
    let m = Mock::new();
    m.w().auto = false;
    let mut q = UserQueue::new(&m, &small(256)).unwrap();
    for n in 1..=5 {
        assert_eq!(q.submit(&[fill(n)]).unwrap(), n);
    }
    // The next load still reads "full"; the one after it finds the ring drained.
    m.w().drain_at_read_ptr_load = Some(1);
    m.clear_log();
    assert_eq!(q.submit(&[fill(6)]), Ok(6));
    assert!(!m.log().iter().any(|e| matches!(e, Ev::Wait { .. })));
    m.w().run_all();
    q.wait(6).unwrap();
    let all: Vec<_> = (1..=6).map(|n| (true, n)).collect();
    assert_eq!(fills(&m), all);
    m.check();
}

/// UM-16 back-pressure with a device that consumes a little at a time, over many wraps.
#[test]
fn um_16_back_pressure_with_partial_consumption() {
    let m = Mock::new();
    m.w().consume_limit = Some(1);
    let mut q = UserQueue::new(&m, &small(256)).unwrap();
    for n in 0..100u64 {
        q.submit(&[fill(n), fill(n + 1000)]).unwrap();
    }
    m.w().run_all();
    q.wait(100).unwrap();
    let expect: Vec<(bool, u64)> = (0..100)
        .flat_map(|n| [(true, n), (true, n + 1000)])
        .collect();
    assert_eq!(fills(&m), expect);
    m.check();
}

/// UM-19: no submission is lost or duplicated under a mix of statuses, partial consumption,
/// reconnects, a failed reconnect and the fallback.
#[test]
fn um_19_no_submission_lost_or_duplicated() {
    let mut fell_back = 0;
    for seed in 0..20u64 {
        let m = Mock::new();
        let mut q = UserQueue::new(&m, &small(512)).unwrap();
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut pattern = 0u64;
        let mut last = 0;
        for _ in 0..150 {
            let r = rnd();
            {
                let mut w = m.w();
                w.consume_limit = if r % 3 == 0 {
                    Some((r % 5) as usize)
                } else {
                    None
                };
                w.status_script = match r % 23 {
                    0 => [DoorbellStatus::DisconnectedRetry].into(),
                    1 => [DoorbellStatus::DisconnectedRetry; 3].into(),
                    2 => [DoorbellStatus::ConnectedNotify].into(),
                    3 if r % 7 == 0 => [DoorbellStatus::DisconnectedAbort].into(),
                    _ => VecDeque::new(),
                };
                if r % 101 == 4 {
                    w.status_script = [DoorbellStatus::DisconnectedRetry].into();
                    w.connect_script = [Err(STATUS_DEVICE_REMOVED)].into();
                }
            }
            let n = (r % 4) as usize;
            let batch: Vec<Command> = (0..n)
                .map(|_| {
                    pattern += 1;
                    fill(pattern)
                })
                .collect();
            let v = q.submit(&batch).unwrap();
            assert_eq!(v, last + 1);
            last = v;
        }
        m.w().run_all();
        q.wait(last).unwrap();
        assert_eq!(q.completed(), last);
        let got: Vec<u64> = fills(&m).into_iter().map(|(_, p)| p).collect();
        assert_eq!(got, (1..=pattern).collect::<Vec<_>>(), "seed {seed}");
        m.check();
        fell_back += usize::from(q.path() == SubmissionPath::KernelMode);
    }
    assert!(
        (1..20).contains(&fell_back),
        "both paths exercised: {fell_back}"
    );
}

/// UM-10: device lost: ABORT and the kernel-mode path fails too → the queue is lost; the
/// caller drops it and creates a new one, which works.
#[test]
fn um_10_device_lost_then_recreate() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    q.submit(&[fill(1)]).unwrap();
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    m.w().fail_km_submit = true;
    assert_eq!(
        q.submit(&[fill(2)]),
        Err(SubmitError::Kmt(STATUS_DEVICE_REMOVED))
    );
    assert!(q.is_lost());
    assert_eq!(q.submit(&[fill(3)]), Err(SubmitError::Lost));
    drop(q);
    // The device came back.
    m.w().fail_km_submit = false;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    assert_eq!(q.path(), SubmissionPath::UserMode);
    let v = q.submit(&[fill(4)]).unwrap();
    q.wait(v).unwrap();
    assert_eq!(fills(&m), vec![(true, 1), (true, 4)]);
    m.check();
}

/// UM-10: after device removal the OS may report the progress fence as UINT64_MAX; the
/// fallback must not take that as "everything ran" and go on silently: the device is removed,
/// and the queue is lost.
#[test]
fn um_10_removed_fence_value_is_device_loss() {
    let m = Mock::new();
    m.w().auto = false;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    q.submit(&[fill(1)]).unwrap();
    let f = q.progress_fence();
    m.w().fences.insert(f, u64::MAX);
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    assert_eq!(
        q.submit(&[fill(2)]),
        Err(SubmitError::Kmt(crate::kmt::STATUS_DEVICE_REMOVED))
    );
    assert!(q.is_lost());
    assert_eq!(q.submit(&[fill(3)]), Err(SubmitError::Lost));
    assert!(fills(&m).is_empty());
}

/// UM-10: a device put in error whose doorbell still reads CONNECTED (Windows writes no
/// doorbell status then; a page fault gives the KMD no moment to abort it): the progress fence
/// reads a value the queue never wrote (UINT64_MAX), so the next submission reports the device
/// removed without ringing, and the queue is lost.
#[test]
fn um_10_progress_beyond_the_last_value_is_device_loss_while_connected() {
    let m = Mock::new();
    m.w().auto = false;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    q.submit(&[fill(1)]).unwrap();
    let f = q.progress_fence();
    m.w().fences.insert(f, u64::MAX);
    assert_eq!(q.doorbell_status(), Some(DoorbellStatus::Connected));
    assert_eq!(
        q.submit(&[fill(2)]),
        Err(SubmitError::Kmt(crate::kmt::STATUS_DEVICE_REMOVED))
    );
    assert!(q.is_lost());
    assert_eq!(q.submit(&[fill(3)]), Err(SubmitError::Lost));
}

/// UM-17 (the UMD's part): close waits for the last value, then destroys doorbell, queues,
/// allocations, context in that order.
#[test]
fn um_17_close_waits_then_destroys_in_order() {
    let m = Mock::new();
    m.w().auto = false;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let fence = q.progress_fence();
    q.submit(&[fill(1)]).unwrap();
    let created = m.log();
    let handle = |pred: &dyn Fn(&Ev) -> Option<KmtHandle>| -> Vec<KmtHandle> {
        created.iter().filter_map(pred).collect()
    };
    let ctx = handle(&|e| match e {
        Ev::CreateContext(h) => Some(*h),
        _ => None,
    })[0];
    let queue = handle(&|e| match e {
        Ev::CreateHwQueue { handle, .. } => Some(*handle),
        _ => None,
    })[0];
    let allocs = handle(&|e| match e {
        Ev::CreateAllocation(h) => Some(*h),
        _ => None,
    });
    let db = m.0.borrow().doorbell.unwrap();
    m.clear_log();
    q.close().unwrap();
    assert_eq!(
        m.log(),
        vec![
            Ev::Wait { fence, value: 1 },
            Ev::DestroyDoorbell(db),
            Ev::DestroyHwQueue(queue),
            Ev::DestroyAllocation(allocs[0]),
            Ev::DestroyAllocation(allocs[1]),
            Ev::DestroyContext(ctx),
        ]
    );
    assert_eq!(fills(&m), vec![(true, 1)], "the work ran before teardown");
    m.check();
}

/// Teardown after a fallback also destroys the kernel-mode queue and its command buffer;
/// dropping does not wait.
#[test]
fn um_17_drop_after_fallback_destroys_everything() {
    let m = Mock::new();
    let mut q = connect_refused_at_creation(&m);
    q.submit(&[fill(1)]).unwrap();
    m.clear_log();
    drop(q);
    let log = m.log();
    assert!(!log.iter().any(|e| matches!(e, Ev::Wait { .. })));
    let kinds: Vec<&str> = log
        .iter()
        .map(|e| match e {
            Ev::DestroyHwQueue(_) => "queue",
            Ev::DestroyAllocation(_) => "alloc",
            Ev::DestroyContext(_) => "context",
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    // The doorbell went at the fallback.
    assert_eq!(
        kinds,
        ["queue", "queue", "alloc", "alloc", "alloc", "context"]
    );
}

/// Creation failures undo what was created, in reverse order; bad private data is refused.
#[test]
fn creation_failure_cleans_up() {
    let m = Mock::new();
    m.w().fail_create_doorbell = true;
    assert_eq!(
        UserQueue::new(&m, &QueueConfig::default()).err(),
        Some(SubmitError::Kmt(STATUS_INVALID_PARAMETER))
    );
    let destroyed: Vec<Ev> = m
        .log()
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                Ev::DestroyHwQueue(_) | Ev::DestroyAllocation(_) | Ev::DestroyContext(_)
            )
        })
        .collect();
    assert_eq!(destroyed.len(), 4, "{destroyed:?}");
    assert!(matches!(destroyed[3], Ev::DestroyContext(_)));

    let m = Mock::new();
    m.w().ring_value = 9;
    assert_eq!(
        UserQueue::new(&m, &QueueConfig::default()).err(),
        Some(SubmitError::BadPrivateData)
    );
    assert!(m.log().iter().any(|e| matches!(e, Ev::DestroyDoorbell(_))));
    assert_eq!(
        UserQueue::new(&m, &small(100)).err(),
        Some(SubmitError::BadConfig)
    );
}

/// After a fallback: a one-FILL batch goes the kernel-mode path and runs once, there.
fn one_fill_on_the_kernel_path(m: &Mock, q: &mut UserQueue<&Mock>) {
    let v = q.submit(&[fill(1)]).unwrap();
    assert_eq!(q.path(), SubmissionPath::KernelMode);
    q.wait(v).unwrap();
    assert_eq!(fills(m), vec![(false, 1)]);
    m.check();
}

/// A user-mode queue whose doorbell connect failed at creation: it starts on the kernel-mode
/// path.
fn connect_refused_at_creation(m: &Mock) -> UserQueue<&Mock> {
    m.w().connect_script = [Err(STATUS_INVALID_PARAMETER)].into();
    UserQueue::new(m, &QueueConfig::default()).unwrap()
}
