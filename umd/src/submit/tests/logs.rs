//! Native fence logs on the UMD side (docs/logs.md#umd): LOG-02, LOG-04.

use super::*;
use crate::fencelog::{FenceTrace, LogCursor, Op};

// ---------------------------------------------------------------------------------------------
// Native fence logs (docs/logs.md#umd): LOG-02, LOG-04 on the UMD side
// ---------------------------------------------------------------------------------------------

/// Collects the "queued" events.
#[derive(Default)]
struct Collector(Mutex<Vec<QueuedOp>>);

impl FenceTrace for Collector {
    fn queued(&self, op: &QueuedOp) {
        self.0.lock().unwrap().push(*op);
    }
}

impl Collector {
    fn take(&self) -> Vec<QueuedOp> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn collector() -> (Arc<Collector>, Option<Arc<dyn FenceTrace>>) {
    let c = Arc::new(Collector::default());
    let t: Arc<dyn FenceTrace> = c.clone();
    (c, Some(t))
}

/// A native fence and a user-mode queue on a 256-byte ring whose fence trace goes to the
/// returned collector.
fn traced_small_queue(m: &Mock) -> (NativeFence, UserQueue<&Mock>, Arc<Collector>) {
    let f = m.create_native_fence(0).unwrap();
    let mut q = UserQueue::new(m, &small(256)).unwrap();
    let (c, t) = collector();
    q.set_fence_trace(t);
    (f, q, c)
}

/// The LOG_WRITEs the device executed: (on the user-mode ring?, log, index, handle, value).
fn log_writes(m: &Mock) -> Vec<(bool, LogKind, u32, u32, u64)> {
    m.executed()
        .into_iter()
        .filter_map(|(user, c)| match c {
            Command::LogWrite {
                log,
                index,
                fence_handle,
                fence_value,
            } => Some((user, log, index, fence_handle, fence_value)),
            _ => None,
        })
        .collect()
}

/// LOG-02: indices start at 0 and go up by one per log, per queue, across batches, in
/// execution order; each operation's LOG_WRITE names its fence handle and value.
#[test]
fn log_02_indices_start_at_zero_and_step_by_one_per_log() {
    let m = Mock::new();
    let f = m.create_native_fence(0).unwrap();
    let g = m.create_native_fence(0).unwrap();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    assert_eq!(q.log_cursor(), LogCursor::new());
    let mut value = 0u64;
    for round in 0..5u64 {
        let mut ops = Vec::new();
        for k in 0..=round {
            value += 1;
            ops.push(Op::Signal(if k % 2 == 0 { &f } else { &g }, value));
            if k % 3 == 0 {
                ops.push(Op::Wait(&g, value));
                ops.push(Op::Cmd(fill(value)));
            }
        }
        let v = q.submit_ops(&ops).unwrap();
        q.wait(v).unwrap();
    }
    let lw = log_writes(&m);
    assert!(lw.iter().all(|e| e.0), "all on the user-mode ring");
    for kind in [LogKind::Wait, LogKind::Signal] {
        let idx: Vec<u32> = lw.iter().filter(|e| e.1 == kind).map(|e| e.2).collect();
        assert_eq!(idx, (0..idx.len() as u32).collect::<Vec<_>>(), "{kind:?}");
    }
    let signals = lw.iter().filter(|e| e.1 == LogKind::Signal).count() as u32;
    let waits = lw.iter().filter(|e| e.1 == LogKind::Wait).count() as u32;
    assert_eq!((signals, waits), (15, 7));
    assert_eq!(
        q.log_cursor(),
        LogCursor {
            next_wait: waits,
            next_signal: signals
        }
    );
    // Every signal-log entry names the fence and the value it follows.
    let exec = m.executed();
    for (i, (_, c)) in exec.iter().enumerate() {
        if let Command::LogWrite {
            log,
            fence_handle,
            fence_value,
            ..
        } = *c
        {
            let h = if fence_handle == f.kmt { f } else { g };
            let expect = match log {
                LogKind::Signal => h.signal(fence_value),
                LogKind::Wait => h.wait(fence_value),
            };
            assert_eq!(exec[i - 1].1, expect, "the operation right before");
        }
    }
    m.check();
}

/// LOG-02 / LOG-04: a signal's LOG_WRITE directly follows it in the ring, and the whole batch
/// (every pair and the PROGRESS) is published with one write-pointer store and one doorbell.
#[test]
fn log_02_signal_and_log_write_adjacent_in_one_publication() {
    let m = Mock::new();
    let f = m.create_native_fence(0).unwrap();
    // A small ring, so that some pairs straddle its end.
    let mut q = UserQueue::new(&m, &small(256)).unwrap();
    for n in 0..12u64 {
        m.clear_log();
        let before = m.0.borrow().write_ptr();
        q.submit_ops(&[
            Op::Signal(&f, 2 * n + 1),
            Op::Wait(&f, 2 * n + 1),
            Op::Signal(&f, 2 * n + 2),
        ])
        .unwrap();
        let log = m.log();
        let words = ring_words(&log);
        // 5 + 3 (signal, log) + 3 + 3 (wait, log) + 5 + 3 + 2 (progress) words.
        assert_eq!(words.len(), 24);
        let mut cmds = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let len = usize::from(decode_header(words[i]).unwrap().len);
            cmds.push(decode(&words[i..i + len]).unwrap());
            i += len;
        }
        let sig = |v, idx| {
            [
                f.signal(v),
                Command::LogWrite {
                    log: LogKind::Signal,
                    index: idx,
                    fence_handle: f.kmt,
                    fence_value: v,
                },
            ]
        };
        let n32 = n as u32;
        assert_eq!(&cmds[0..2], &sig(2 * n + 1, 2 * n32));
        assert_eq!(
            &cmds[2..4],
            &[
                f.wait(2 * n + 1),
                Command::LogWrite {
                    log: LogKind::Wait,
                    index: n32,
                    fence_handle: f.kmt,
                    fence_value: 2 * n + 1,
                }
            ]
        );
        assert_eq!(&cmds[4..6], &sig(2 * n + 2, 2 * n32 + 1));
        assert!(matches!(cmds[6], Command::Progress { .. }));
        let publications: Vec<&Ev> = log
            .iter()
            .filter(|e| matches!(e, Ev::WritePtr(_) | Ev::Doorbell(_)))
            .collect();
        assert_eq!(
            publications,
            [
                &Ev::WritePtr(before + 24 * 8),
                &Ev::Doorbell(before + 24 * 8)
            ],
            "one write-pointer update covering the whole batch"
        );
        let last_ring = log
            .iter()
            .rposition(|e| matches!(e, Ev::RingWord(..)))
            .unwrap();
        let wp = log
            .iter()
            .position(|e| matches!(e, Ev::WritePtr(_)))
            .unwrap();
        assert!(last_ring < wp, "every word before the publication");
    }
    m.check();
}

/// LOG-02: a batch that cannot be submitted uses no index and reports no event; the next batch
/// continues where the last submitted one ended.
#[test]
fn log_02_too_large_batch_burns_no_index() {
    let m = Mock::new();
    let (f, mut q, c) = traced_small_queue(&m);
    q.submit_ops(&[Op::Signal(&f, 1), Op::Wait(&f, 1)]).unwrap();
    let after_first = q.log_cursor();
    assert_eq!(
        after_first,
        LogCursor {
            next_wait: 1,
            next_signal: 1
        }
    );
    // 32 pairs of 8 words do not fit a 256-byte ring.
    let big: Vec<Op<'_>> = (2..34).map(|v| Op::Signal(&f, v)).collect();
    assert_eq!(q.submit_ops(&big), Err(SubmitError::TooLarge));
    assert_eq!(q.log_cursor(), after_first, "no index used");
    // A caller's own LOG_WRITE is refused, before anything is written.
    let own = Command::LogWrite {
        log: LogKind::Signal,
        index: 1,
        fence_handle: f.kmt,
        fence_value: 2,
    };
    assert_eq!(
        q.submit_ops(&[Op::Signal(&f, 2), Op::Cmd(own)]),
        Err(SubmitError::BadCommand)
    );
    assert_eq!(
        q.submit_ops(&[Op::Signal(&f, 2), Op::Cmd(Command::Nop { len: 0 })]),
        Err(SubmitError::BadCommand)
    );
    assert_eq!(q.log_cursor(), after_first);
    q.submit_ops(&[Op::Signal(&f, 2)]).unwrap();
    let idx: Vec<(LogKind, u32, u64)> = log_writes(&m).iter().map(|e| (e.1, e.2, e.4)).collect();
    assert_eq!(
        idx,
        vec![
            (LogKind::Signal, 0, 1),
            (LogKind::Wait, 0, 1),
            (LogKind::Signal, 1, 2)
        ]
    );
    let ev: Vec<(LogKind, u32, u64)> = c
        .take()
        .iter()
        .map(|o| (o.kind, o.index, o.value))
        .collect();
    assert_eq!(ev, idx, "only submitted operations are reported");
    m.check();
}

/// LOG-02: at `u32::MAX` the free-running index wraps to 0 (hardware.md B7), per log.
#[test]
fn log_02_index_wraps_at_u32_max() {
    let m = Mock::new();
    let f = m.create_native_fence(0).unwrap();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    q.set_log_cursor(LogCursor {
        next_wait: 7,
        next_signal: u32::MAX - 1,
    });
    q.submit_ops(&[Op::Signal(&f, 1), Op::Signal(&f, 2)])
        .unwrap();
    q.submit_ops(&[Op::Signal(&f, 3), Op::Wait(&f, 3)]).unwrap();
    let idx: Vec<(LogKind, u32)> = log_writes(&m).iter().map(|e| (e.1, e.2)).collect();
    assert_eq!(
        idx,
        vec![
            (LogKind::Signal, u32::MAX - 1),
            (LogKind::Signal, u32::MAX),
            (LogKind::Signal, 0),
            (LogKind::Wait, 7)
        ]
    );
    assert_eq!(
        q.log_cursor(),
        LogCursor {
            next_wait: 8,
            next_signal: 1
        }
    );
    m.check();
}

/// LOG-02 (fallback): kernel-mode queues have no logs. The unconsumed batches resubmitted at
/// the fallback lose their LOG_WRITEs (the mock device faults a LOG_WRITE on a kernel-mode
/// queue), every fence operation still runs exactly once, and later `submit_ops` emit no
/// LOG_WRITE and report `logged: false` with the kernel-mode queue's id.
#[test]
fn log_02_fallback_strips_log_writes() {
    let m = Mock::new();
    m.w().auto = false;
    let f = m.create_native_fence(0).unwrap();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let user_id = q.queue_id();
    let (c, t) = collector();
    q.set_fence_trace(t);
    q.submit_ops(&[Op::Signal(&f, 1), Op::Cmd(fill(1))])
        .unwrap();
    q.submit_ops(&[Op::Wait(&f, 1), Op::Signal(&f, 2)]).unwrap();
    q.submit_ops(&[Op::Signal(&f, 3)]).unwrap();
    // The CMP runs the first batch (signal, its LOG_WRITE, FILL, PROGRESS) and the wait of the
    // second, but not the wait's LOG_WRITE; then the doorbell is aborted.
    m.w().run_ring(Some(5));
    m.w().auto = true;
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    q.submit_ops(&[Op::Signal(&f, 4)]).unwrap();
    assert_eq!(q.path(), SubmissionPath::KernelMode);
    q.submit_ops(&[Op::Wait(&f, 4), Op::Signal(&f, 5)]).unwrap();
    q.wait(q.last_submitted()).unwrap();
    m.check(); // no LOG_WRITE reached the kernel-mode queue

    let exec = m.executed();
    let fence_ops: Vec<(bool, Command)> = exec
        .iter()
        .filter(|(_, c)| matches!(c, Command::FenceSignal { .. } | Command::FenceWait { .. }))
        .copied()
        .collect();
    assert_eq!(
        fence_ops,
        vec![
            (true, f.signal(1)),
            (true, f.wait(1)),
            (false, f.signal(2)),
            (false, f.signal(3)),
            (false, f.signal(4)),
            (false, f.wait(4)),
            (false, f.signal(5)),
        ],
        "each operation exactly once, in order"
    );
    let lw: Vec<(bool, LogKind, u32)> = log_writes(&m).iter().map(|e| (e.0, e.1, e.2)).collect();
    assert_eq!(
        lw,
        vec![(true, LogKind::Signal, 0)],
        "only the LOG_WRITE the CMP ran before the fallback (the wait's entry is lost)"
    );
    let ev = c.take();
    let kernel_id = ev.last().unwrap().queue_id;
    assert_ne!(kernel_id, user_id);
    let summary: Vec<(u32, LogKind, u32, u64, bool)> = ev
        .iter()
        .map(|o| (o.queue_id, o.kind, o.index, o.value, o.logged))
        .collect();
    assert_eq!(
        summary,
        vec![
            (user_id, LogKind::Signal, 0, 1, true),
            (user_id, LogKind::Wait, 0, 1, true),
            (user_id, LogKind::Signal, 1, 2, true),
            (user_id, LogKind::Signal, 2, 3, true),
            // Written to the user-mode ring with its LOG_WRITE, then the ring of this very
            // submission was refused and the fallback resubmitted it without: `logged` says
            // what was encoded, the entry never appears (as for indices 0 (wait), 1 and 2).
            (user_id, LogKind::Signal, 3, 4, true),
            (kernel_id, LogKind::Wait, 0, 4, false),
            (kernel_id, LogKind::Signal, 0, 5, false),
        ]
    );
}

/// LOG-02 (fallback before the ring write): a batch that waits for ring space and falls back
/// then goes to the kernel-mode queue without LOG_WRITEs, uses no index, and says so.
#[test]
fn log_02_fallback_while_waiting_for_space_uses_no_index() {
    let m = Mock::new();
    m.w().auto = false;
    let (f, mut q, c) = traced_small_queue(&m);
    for v in 1..=3u64 {
        q.submit_ops(&[Op::Signal(&f, v)]).unwrap(); // 10 words each: 240 of 256 bytes
    }
    let cursor = q.log_cursor();
    assert_eq!(cursor.next_signal, 3);
    assert!(
        !m.log().iter().any(|e| matches!(e, Ev::Wait { .. })),
        "no wait yet"
    );
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    q.submit_ops(&[Op::Signal(&f, 5), Op::Wait(&f, 5)]).unwrap();
    assert_eq!(q.path(), SubmissionPath::KernelMode);
    assert_eq!(q.log_cursor(), cursor, "no index used");
    m.w().run_all();
    m.check();
    let ev = c.take();
    assert_eq!(ev.len(), 5);
    assert!(ev[..3].iter().all(|o| o.logged));
    assert!(ev[3..].iter().all(|o| !o.logged && o.index == 0));
    assert!(log_writes(&m).iter().all(|e| !matches!(e, (false, ..))));
}

/// Kernel-mode queues have no logs: `KernelQueue::submit_ops` emits no LOG_WRITE and reports
/// its operations with `logged: false`.
#[test]
fn log_02_kernel_queue_ops_have_no_log_writes() {
    let m = Mock::new();
    let f = m.create_native_fence(0).unwrap();
    let mut q = KernelQueue::new(&m, &QueueConfig::default()).unwrap();
    let (c, t) = collector();
    q.set_fence_trace(t);
    let v = q
        .submit_ops(&[Op::Wait(&f, 1), Op::Cmd(fill(1)), Op::Signal(&f, 2)])
        .unwrap();
    q.wait(v).unwrap();
    m.check();
    let cmds: Vec<Command> = m.executed().into_iter().map(|(_, c)| c).collect();
    assert_eq!(cmds, vec![f.wait(1), fill(1), f.signal(2)]);
    let ev = c.take();
    assert_eq!(ev.len(), 2);
    assert!(ev.iter().all(|o| !o.logged && o.queue_id == q.queue_id()));
}

/// The "queued" events: one per signal and wait, in batch order, after the submission; the CPU
/// timestamp is read once per batch, before the batch's first ring store (so before the GPU
/// can run it), and never when no one listens.
#[test]
fn log_02_queued_events_order_and_timestamps() {
    let m = Mock::new();
    let f = m.create_native_fence(0).unwrap();
    let g = m.create_native_fence(5).unwrap();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    q.submit_ops(&[Op::Signal(&f, 1)]).unwrap();
    assert!(
        !m.log().iter().any(|e| matches!(e, Ev::CpuTimestamp(_))),
        "no clock read without a listener"
    );
    let (c, t) = collector();
    q.set_fence_trace(t);
    let mut stamps = Vec::new();
    for n in 0..3u64 {
        m.clear_log();
        q.submit_ops(&[
            Op::Wait(&g, 5 + n),
            Op::Cmd(fill(n)),
            Op::Signal(&f, 2 + n),
            Op::Signal(&g, 6 + n),
        ])
        .unwrap();
        let log = m.log();
        let reads: Vec<(usize, u64)> = log
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match e {
                Ev::CpuTimestamp(t) => Some((i, *t)),
                _ => None,
            })
            .collect();
        assert_eq!(reads.len(), 1, "one read per batch");
        let first_store = log
            .iter()
            .position(|e| matches!(e, Ev::RingWord(..)))
            .unwrap();
        assert!(reads[0].0 < first_store, "read before the batch is written");
        stamps.push(reads[0].1);
    }
    let ev = c.take();
    let id = q.queue_id();
    let expect: Vec<QueuedOp> = (0..3u64)
        .flat_map(|n| {
            let n32 = n as u32;
            let op = |kind, index, fence: &NativeFence, value| QueuedOp {
                queue_id: id,
                kind,
                index,
                fence: fence.kmt,
                value,
                qpc: stamps[n as usize],
                logged: true,
            };
            [
                op(LogKind::Wait, n32, &g, 5 + n),
                op(LogKind::Signal, 1 + 2 * n32, &f, 2 + n),
                op(LogKind::Signal, 2 + 2 * n32, &g, 6 + n),
            ]
        })
        .collect();
    assert_eq!(ev, expect);
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]));
    // Removing the listener stops events and clock reads.
    q.set_fence_trace(None);
    m.clear_log();
    q.submit_ops(&[Op::Signal(&f, 9)]).unwrap();
    assert!(c.take().is_empty());
    assert!(!m.log().iter().any(|e| matches!(e, Ev::CpuTimestamp(_))));
    m.check();
}

/// The new thunks reach the implementation through `&T` and `Arc<T>` (the defaults would
/// silently answer "not supported" / 0 otherwise).
#[test]
#[allow(clippy::arc_with_non_send_sync)] // single-threaded test of the blanket impl
fn log_thunks_forward_through_references() {
    let m = Mock::new();
    let by_ref: &Mock = &m;
    assert!(Kmt::create_native_fence(&by_ref, 3).is_ok());
    assert_ne!(Kmt::cpu_timestamp(&by_ref), 0);
    let arc = Arc::new(m.clone());
    assert_eq!(Kmt::cpu_timestamp_frequency(&arc), 10_000_000);
    assert!(Kmt::create_native_fence(&arc, 0).is_ok());
    let f = Kmt::create_native_fence(&arc, 4).unwrap();
    assert_eq!(Kmt::native_fence_cpu(&arc, &f).unwrap().value(), 4);
    assert_eq!(Kmt::native_fence_cpu(&by_ref, &f).unwrap().value(), 4);
    assert_eq!(
        Kmt::share_native_fence(&arc, 1),
        Err(crate::kmt::STATUS_NOT_SUPPORTED),
        "the default body"
    );
}

/// UM-16: the record of where batches end holds every batch the ring can hold, at a fixed
/// size that submissions never grow (the hot path stores one slot, whether or not the ring
/// ever fills).
#[test]
fn um_16_in_flight_holds_what_the_ring_holds_at_a_fixed_size() {
    let m = Mock::new();
    let cfg = small(4096);
    let mut q = UserQueue::new(&m, &cfg).unwrap();
    let holds = u64::from(cfg.ring_size) / ClosingPacket::progress().bytes();
    let slots = q.in_flight.slots() as u64;
    assert!(
        slots >= holds && slots < 2 * holds,
        "{slots} slots for {holds} batches"
    );
    let batch = 8 * (fill(1).len() as u64) + ClosingPacket::progress().bytes();
    for n in 1..=5 * (u64::from(cfg.ring_size) / batch) {
        q.submit(&[fill(n)]).unwrap();
    }
    assert_eq!(q.in_flight.slots() as u64, slots);
}
