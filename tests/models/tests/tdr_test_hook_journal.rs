//! TDR-05: the test hooks' journal ring (`driver/kmd/src/testhooks/journal.rs`), checked
//! exhaustively with `loom`: writers at any IRQL (an ISR interrupting a DISPATCH writer, or
//! another processor) and a PASSIVE reader share it without a lock.
//!
//! The invariant: a record the reader keeps is whole, every field from the one record its
//! stamp names; a record dropped or overwritten is reported gone (a gap in `seq`), never as
//! another record's fields. The model has one slot, so that two writers' records fall in the
//! same slot (the ring wrapping while a writer is inside it), and a reader of both sequence
//! numbers. Three negative controls: writers that store the busy stamp without claiming the
//! slot, a claim that does not acquire the previous writer's record (its fields and the new
//! writer's may then land in either order), and a reader that skips its second stamp load;
//! loom must find the torn record in each.
//!
//! The model mirrors the driver step for step (it uses core atomics, which loom cannot
//! instrument); keep them in sync.

use loom::sync::atomic::{fence, AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

/// The panic message of a violation; the negative controls look for it.
const TORN: &str = "torn journal record";

const BUSY: u64 = 1;

/// One slot: the stamp and two of the record's words (the driver has five; two show a tear).
struct Journal {
    next: AtomicU64,
    stamp: AtomicU64,
    a: AtomicU64,
    b: AtomicU64,
}

/// How the protocol is (mis)implemented.
#[derive(Clone, Copy)]
struct Variant {
    /// Writers claim the slot with a compare-exchange (else: a plain store of the busy stamp).
    claim: bool,
    /// The claim acquires the previous writer's record (else: Relaxed, and the two writers'
    /// fields may land in either order).
    acquire: bool,
    /// The reader loads the stamp again after the fields.
    recheck: bool,
}

impl Journal {
    /// `Journal::write` with the record of sequence number `n`: `a = n`, `b = 10 n`.
    fn write(&self, v: Variant) {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let old = self.stamp.load(Ordering::Relaxed);
        if old & BUSY != 0 || old >> 1 >= n {
            return;
        }
        if v.claim {
            let success = if v.acquire {
                Ordering::Acquire
            } else {
                Ordering::Relaxed
            };
            if self
                .stamp
                .compare_exchange(old, n << 1 | BUSY, success, Ordering::Relaxed)
                .is_err()
            {
                return;
            }
        } else {
            self.stamp.store(n << 1 | BUSY, Ordering::Relaxed);
        }
        fence(Ordering::Release);
        self.a.store(n, Ordering::Relaxed);
        self.b.store(10 * n, Ordering::Relaxed);
        self.stamp.store(n << 1, Ordering::Release);
    }

    /// `Journal::read` of record `n`: its `(a, b)` if whole.
    fn read(&self, n: u64, v: Variant) -> Option<(u64, u64)> {
        let s1 = self.stamp.load(Ordering::Acquire);
        if s1 != n << 1 {
            return None;
        }
        let a = self.a.load(Ordering::Relaxed);
        let b = self.b.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if v.recheck && self.stamp.load(Ordering::Relaxed) != s1 {
            return None;
        }
        Some((a, b))
    }
}

fn execution(v: Variant) {
    let j = Arc::new(Journal {
        next: AtomicU64::new(0),
        stamp: AtomicU64::new(0),
        a: AtomicU64::new(0),
        b: AtomicU64::new(0),
    });
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let j = j.clone();
            thread::spawn(move || j.write(v))
        })
        .collect();
    let reader = thread::spawn(move || {
        for n in 1..=2 {
            if let Some((a, b)) = j.read(n, v) {
                assert!(
                    a == n && b == 10 * n,
                    "{TORN}: record {n} read as ({a}, {b})"
                );
            }
        }
    });
    for w in writers {
        w.join().unwrap();
    }
    reader.join().unwrap();
}

/// Every interleaving with up to three preemptions, under `v`.
fn check(v: Variant) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(move || execution(v));
}

#[test]
fn tdr_05_journal_records_are_read_whole_or_reported_gone() {
    check(Variant {
        claim: true,
        acquire: true,
        recheck: true,
    });
}

#[test]
fn tdr_05_negative_control_unclaimed_slot_tears() {
    rvgpu_models::expect_violation(
        || {
            check(Variant {
                claim: false,
                acquire: true,
                recheck: true,
            })
        },
        "torn record without the claim",
        TORN,
    );
}

#[test]
fn tdr_05_negative_control_reader_without_recheck_tears() {
    rvgpu_models::expect_violation(
        || {
            check(Variant {
                claim: true,
                acquire: true,
                recheck: false,
            })
        },
        "torn record without the second stamp load",
        TORN,
    );
}

#[test]
fn tdr_05_negative_control_relaxed_claim_tears() {
    rvgpu_models::expect_violation(
        || {
            check(Variant {
                claim: true,
                acquire: false,
                recheck: true,
            })
        },
        "torn record with a Relaxed claim",
        TORN,
    );
}
