//! The OS side of native fence logs (LOG-01 … LOG-09; design: docs/logs.md#simulated-os).
//!
//! - **Buffers (LOG-01, LOG-09).** Every user-mode hardware queue gets a wait log and a signal
//!   log inside `D3DKMTCreateHwQueue` ([`crate::ums`]): one zeroed, page-aligned 4 KiB system
//!   allocation each, header `Type` and `NumberOfEntries` (= [`crate::OsConfig::log_entries`])
//!   written by the OS, then `DxgkDdiSetNativeFenceLogBuffer` at DISPATCH_LEVEL with the kernel
//!   VA and the bus address as both GPU VAs (v1 identity). A failure of either call fails the
//!   queue creation. [`crate::Machine::recreate_hw_queue_log`] moves a log (drain, new buffer,
//!   set, drain the old one once more, carry the cursor, poison the old buffer and keep it:
//!   a changed word later is the device writing a freed log, a simulation error).
//! - **Drain (LOG-07, docs/logs.md#simulated-os).** After the driver's DPC returns, for each candidate queue (the
//!   named `hHWQueue`s, every log-bearing queue of an engine reported with a NULL
//!   `hHWQueue`, and without the optimized cap every log-bearing queue of a reported engine)
//!   the OS reads both headers (acquire) and computes the free-running count
//!   ([`rvgpu_hw::log::header_count`]); a count below the OS cursor is a simulation error
//!   ("LOG-05: header went backwards"). Queues with new entries are flushed with **one**
//!   `DxgkDdiUpdateNativeFenceLogs` naming all of them, then entries are read **only up to
//!   the pre-flush count**; the header is read again and every entry whose slot may have been
//!   rewritten meanwhile (`i + N ≤ count(h1)`) is dropped as lost. More than `N` new entries
//!   is an overflow (LOG-05): the overwritten range is lost. Kept entries are validated
//!   ([`LogState::read`]: operation type against the log, LOG-03; end timestamps never go
//!   backwards per log, zero and repeats allowed, LOG-06 — backwards is a simulation error),
//!   reported as [`TraceEvent::LogEntry`], and each SIGNAL_EXECUTED entry `(h, v)` releases
//!   the CPU waits of fence `h` (the queue's process's D3DKMT handle) with target `≤ v`
//!   ([`crate::state::sync::trace::ReleaseVia::Log`]). Fallbacks to resampling every native fence of the
//!   adapter ([`crate::state::sync::trace::ReleaseVia::Scan`]): overflow or dropped entries, a bad entry,
//!   a handle that does not resolve, a named queue whose signal log had no new entry.
//! - **Optimized interrupt (LOG-08).** With `OptimizedNativeFenceSignaledInterrupt` the OS
//!   reads `hHWQueue` and ignores the fence array; at ISR time a non-NULL `hHWQueue` must be a
//!   live queue of the adapter on the reported node ([`LogTable::check_isr_queue`], else bug
//!   check 0x119 with the simulation's subtype
//!   [`crate::base::bugcheck::vidsch::SIM_INVALID_HW_QUEUE`]). Without the cap `hHWQueue` is not read.
//!
//! [`LogState`] is pure (memory words only) so it can be unit-tested and benchmarked with
//! synthetic buffers; [`Producer`] writes entries and headers exactly as the device does.
//!
//! [`TraceEvent::LogEntry`]: crate::TraceEvent::LogEntry

pub(crate) mod drain;
pub(crate) mod life;

pub use self::drain::*;
pub use self::life::*;
pub use crate::state::sync::fencelog::*;
pub use crate::state::sync::logbuffer::*;

pub use rvgpu_hw::cmd::LogKind;

#[cfg(test)]
mod tests {
    use super::*;
    use rvgpu_device::Memory;
    use rvgpu_hw::log::{LogEntry, OP_SIGNAL_EXECUTED};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    fn buf(kind: LogKind, n: u64) -> (Arc<Memory>, LogBuffer) {
        let mem = Memory::new(1 << 16);
        let alloc = mem.alloc_system(4096, 4096).unwrap();
        (mem, LogBuffer::init(alloc, kind, n))
    }

    /// A buffer of `n` entries of `kind` and a reader at its start.
    fn log(kind: LogKind, n: u64) -> (Arc<Memory>, LogBuffer, LogState) {
        let (m, b) = buf(kind, n);
        let s = LogState::new(b.clone());
        (m, b, s)
    }

    /// Reads everything the header says was written (there must be something).
    fn read_all(s: &mut LogState) -> Result<Read, String> {
        let c = s.peek().unwrap().unwrap();
        s.read(c)
    }

    fn sig(v: u64, t: u64) -> LogEntry {
        LogEntry {
            fence_value: v,
            h_native_fence: 7,
            operation_type: OP_SIGNAL_EXECUTED,
            fence_end_gpu_timestamp: t,
            ..Default::default()
        }
    }

    #[test]
    fn log_02_reads_in_index_order_and_advances() {
        let (_m, b, mut s) = log(LogKind::Signal, 4);
        let p = Producer::new(&b);
        assert_eq!(s.peek(), Ok(None));
        for n in 0..3 {
            p.write(n, &sig(u64::from(n) + 1, 10 + u64::from(n)));
        }
        let c0 = s.peek().unwrap().unwrap();
        assert_eq!(c0, 3);
        let r = s.read(c0).unwrap();
        assert_eq!(r.lost, None);
        let idx: Vec<u64> = r.entries.iter().map(|e| e.0).collect();
        assert_eq!(idx, vec![0, 1, 2]);
        assert_eq!(s.cursor, 3);
        assert_eq!(s.peek(), Ok(None));
    }

    #[test]
    fn log_05_lap_without_loss_is_not_overflow() {
        let (_m, b, mut s) = log(LogKind::Signal, 4);
        let p = Producer::new(&b);
        for n in 0..3 {
            p.write(n, &sig(1, 1));
        }
        read_all(&mut s).unwrap();
        // Three more: crosses the lap boundary (wraparound 0 -> 1) without losing any.
        for n in 3..6 {
            p.write(n, &sig(2, 2));
        }
        let r = read_all(&mut s).unwrap();
        assert_eq!(r.lost, None);
        assert_eq!(r.entries.len(), 3);
    }

    #[test]
    fn log_05_overflow_reports_the_lost_range() {
        let (_m, b, mut s) = log(LogKind::Signal, 4);
        let p = Producer::new(&b);
        for n in 0..10 {
            p.write(n, &sig(u64::from(n), u64::from(n)));
        }
        let c = s.peek().unwrap().unwrap();
        assert_eq!(c, 10);
        let r = s.read(c).unwrap();
        // 0..6 overwritten; 6 shares its slot with index 10, which may be in flight: dropped.
        assert_eq!(r.lost, Some((0, 7)));
        let idx: Vec<u64> = r.entries.iter().map(|e| e.0).collect();
        assert_eq!(idx, vec![7, 8, 9]);
        assert_eq!(r.entries[0].1.fence_value, 7);
    }

    #[test]
    fn log_05_overwrite_during_read_is_detected() {
        // A writer that races the read: after the pre-flush count (4 of 4 slots used), two more
        // entries land before the re-check; their slots held indices 0 and 1.
        let (_m, b, mut s) = log(LogKind::Signal, 4);
        let p = Producer::new(&b);
        for n in 0..4 {
            p.write(n, &sig(u64::from(n), 1));
        }
        let c0 = s.peek().unwrap().unwrap();
        p.write(4, &sig(4, 1));
        p.write(5, &sig(5, 1));
        let r = s.read(c0).unwrap();
        // Index 4 overwrote slot 0, index 5 slot 1; index 6 (slot 2) may be in flight: 0..=2
        // dropped.
        assert_eq!(r.lost, Some((0, 3)));
        assert_eq!(r.entries.iter().map(|e| e.0).collect::<Vec<_>>(), vec![3]);
        assert_eq!(s.cursor, 4);
        // The next read picks up 4 and 5.
        let r = read_all(&mut s).unwrap();
        assert_eq!(
            r.entries.iter().map(|e| e.0).collect::<Vec<_>>(),
            vec![4, 5]
        );
    }

    #[test]
    fn log_05_racing_writer_never_yields_a_torn_entry() {
        // Threaded: a writer streams entries whose words all equal the index; every kept entry
        // must be consistent and carry its own index.
        let (_m, b) = buf(LogKind::Signal, 4);
        let b2 = b.clone();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let st = stop.clone();
        let w = std::thread::spawn(move || {
            let p = Producer::new(&b2);
            let mut n = 0u32;
            while !st.load(Ordering::Relaxed) && n < 20_000 {
                if n.is_multiple_of(3) {
                    std::thread::yield_now();
                }
                let v = u64::from(n);
                p.write(
                    n,
                    &LogEntry {
                        fence_value: v,
                        h_native_fence: n,
                        operation_type: OP_SIGNAL_EXECUTED,
                        fence_end_gpu_timestamp: v + 1,
                        ..Default::default()
                    },
                );
                n += 1;
            }
        });
        let mut s = LogState::new(b);
        let mut kept = 0u64;
        let mut lost = 0u64;
        let mut check = |s: &mut LogState| {
            if let Some(c) = s.peek().unwrap() {
                let r = s.read(c).unwrap();
                lost += r.lost.map_or(0, |l| l.1 - l.0);
                for (i, e) in r.entries {
                    assert_eq!(e.fence_value, i, "torn or stale entry");
                    assert_eq!(u64::from(e.h_native_fence), i);
                    kept += 1;
                }
            }
        };
        while !w.is_finished() {
            check(&mut s);
        }
        check(&mut s);
        stop.store(true, Ordering::Relaxed);
        w.join().unwrap();
        assert!(kept > 0);
        // Every index is either kept or reported lost, exactly once.
        assert_eq!(kept + lost, s.cursor);
    }

    #[test]
    fn log_06_zero_and_repeated_timestamps_accepted() {
        let (_m, b, mut s) = log(LogKind::Signal, 8);
        let p = Producer::new(&b);
        for (n, t) in [(0u32, 5u64), (1, 5), (2, 0), (3, 6)] {
            p.write(n, &sig(1, t));
        }
        assert_eq!(read_all(&mut s).unwrap().entries.len(), 4);
        assert_eq!(s.last_end, 6);
    }

    #[test]
    fn log_06_backwards_timestamp_is_an_error() {
        let (_m, b, mut s) = log(LogKind::Signal, 8);
        let p = Producer::new(&b);
        p.write(0, &sig(1, 9));
        p.write(1, &sig(1, 8));
        let e = read_all(&mut s).unwrap_err();
        assert!(e.contains("LOG-06"), "{e}");
    }

    #[test]
    fn log_03_wrong_operation_type_is_bad() {
        let (_m, b, mut s) = log(LogKind::Wait, 8);
        let p = Producer::new(&b);
        p.write(0, &sig(1, 1));
        let r = read_all(&mut s).unwrap();
        assert_eq!(r.bad, vec![0]);
        assert!(r.entries.is_empty());
    }

    #[test]
    fn log_05_header_going_backwards_is_an_error() {
        let (_m, b) = buf(LogKind::Signal, 8);
        let mut s = LogState::new(b.clone());
        s.cursor = 3;
        assert!(s.peek().unwrap_err().contains("LOG-05"));
    }

    #[test]
    fn poison_detects_writes() {
        let (_m, b) = buf(LogKind::Signal, 8);
        b.poison();
        assert!(b.poison_intact());
        Producer::new(&b).write(0, &sig(1, 1));
        assert!(!b.poison_intact());
    }
}
