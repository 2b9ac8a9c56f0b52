//! TDR-05: the machine's run clock (`device::RunClock`, `device/src/device/clock.rs`), checked
//! exhaustively with `loom`: the CMP thread credits it through a one-writer sequence lock and
//! the simulated OS's TDR threads read it without a lock.
//!
//! The invariants: every credit a reader computes a time from is one the writer published
//! whole (its base, stamp and allowance together, never a mix of two credits), and a reader's
//! times never run backwards. The writer starts ([`RunClock::writer`]: it credits the time
//! since the last credit and publishes), is descheduled for longer than its allowance and
//! ticks; a reader reads the clock twice meanwhile. At its start the writer is also
//! descheduled right after it reads the host's clock, while the credit it replaces still
//! counts all host time (no writer ran): the clock reads the host after `seq` turns odd, so
//! readers wait that out. Three negative controls change the writer: it reads the host's clock
//! before `seq` turns odd (a reader in between counts host time past the credit the writer
//! then publishes, and its next read falls back to that credit), it lacks the release fence
//! after `seq` turns odd, or it stores the even `seq` Relaxed; loom must find time going
//! backwards in the first and a torn credit in the other two.
//!
//! The host's monotonic clock is a counter each clock read advances by an AcqRel
//! read-modify-write: its readings are totally ordered, and a reading after another thread's
//! also sees what that thread stored before its own. Real clock reads order no stores; the
//! model takes a store buffer as drained by the next reading, which is sound here because the
//! only thing a late drain could show, a reader validating an old credit a little after the
//! writer's stamp, is covered by every allowance (the device's step, 5 ms, is far longer than
//! a drain).
//!
//! The model mirrors the clock step for step (it uses std atomics and `Instant`, which loom
//! cannot instrument); keep them in sync.
//!
//! [`RunClock::writer`]: ../../device/src/device/clock.rs

use loom::sync::atomic::{fence, AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

/// The panic message of a credit read as a mix of two; the negative controls look for it.
const TORN: &str = "run clock: a torn credit";
/// The panic message of a reader's time going backwards.
const BACKWARDS: &str = "run clock: time went backwards";

/// What a tick allows: more than a reader can read past the next stamp (see the module).
const ALLOW: u64 = 10;
/// How long the writer is descheduled between its ticks: longer than its allowance.
const PAUSE: u64 = 50;

/// A credit: (base, stamp, allow), as `RunShared` publishes it.
type Credit = (u64, u64, u64);

/// How the writer's ordering is (mis)implemented.
#[derive(Clone, Copy)]
struct Variant {
    /// `begin` has its release fence after the odd `seq` store.
    begin_fence: bool,
    /// `end` stores the even `seq` with Release (else Relaxed).
    end_release: bool,
    /// `tick` reads the host's clock before `begin` (else after it, as the clock does).
    read_first: bool,
}

/// `RunShared`, with the host clock beside it.
struct Shared {
    host: AtomicU64,
    seq: AtomicU64,
    base: AtomicU64,
    stamp: AtomicU64,
    allow: AtomicU64,
}

impl Shared {
    /// A reading of the host's monotonic clock (see the module for its ordering).
    fn host_now(&self) -> u64 {
        self.host.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// `RunClock::now_ns`, with the credit the time was computed from.
    fn now(&self) -> (Credit, u64) {
        let (host, credit) = loop {
            let before = self.seq.load(Ordering::Acquire);
            if before & 1 == 0 {
                let host = self.host_now();
                let credit = (
                    self.base.load(Ordering::Relaxed),
                    self.stamp.load(Ordering::Relaxed),
                    self.allow.load(Ordering::Relaxed),
                );
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == before {
                    break (host, credit);
                }
            }
            thread::yield_now();
        };
        let (base, stamp, allow) = credit;
        (
            credit,
            base.saturating_add(host.saturating_sub(stamp).min(allow)),
        )
    }
}

/// `RunWriter`, with the credits it published.
struct Writer {
    clock: Arc<Shared>,
    v: Variant,
    seq: u64,
    base: u64,
    stamp: u64,
    allow: u64,
    published: Vec<Credit>,
}

impl Writer {
    /// `RunClock::writer`.
    fn start(clock: Arc<Shared>, v: Variant) -> Self {
        let mut w = Writer {
            seq: clock.seq.load(Ordering::Acquire),
            base: clock.base.load(Ordering::Relaxed),
            stamp: clock.stamp.load(Ordering::Relaxed),
            allow: clock.allow.load(Ordering::Relaxed),
            clock,
            v,
            published: Vec::new(),
        };
        w.tick(ALLOW, PAUSE);
        w
    }

    /// `RunWriter::tick`, descheduled for `pause` right after its reading of the host's clock.
    fn tick(&mut self, next: u64, pause: u64) {
        let host = if self.v.read_first {
            let host = self.reading(pause);
            self.begin();
            host
        } else {
            self.begin();
            self.reading(pause)
        };
        let spent = host.saturating_sub(self.stamp);
        self.base = self.base.saturating_add(spent.min(self.allow));
        self.stamp = host;
        self.allow = next;
        self.end();
    }

    /// A reading of the host's clock, then `pause` of host time while the writer is not
    /// scheduled.
    fn reading(&self, pause: u64) -> u64 {
        let host = self.clock.host_now();
        if pause > 0 {
            self.clock.host.fetch_add(pause, Ordering::AcqRel);
        }
        host
    }

    fn begin(&mut self) {
        self.seq = self.seq.wrapping_add(1);
        self.clock.seq.store(self.seq, Ordering::Relaxed);
        if self.v.begin_fence {
            fence(Ordering::Release);
        }
    }

    fn end(&mut self) {
        let s = &self.clock;
        s.base.store(self.base, Ordering::Relaxed);
        s.stamp.store(self.stamp, Ordering::Relaxed);
        s.allow.store(self.allow, Ordering::Relaxed);
        self.seq = self.seq.wrapping_add(1);
        let order = if self.v.end_release {
            Ordering::Release
        } else {
            Ordering::Relaxed
        };
        s.seq.store(self.seq, order);
        self.published.push((self.base, self.stamp, self.allow));
    }
}

fn execution(v: Variant) {
    let initial: Credit = (0, 0, u64::MAX);
    let clock = Arc::new(Shared {
        host: AtomicU64::new(0),
        seq: AtomicU64::new(0),
        base: AtomicU64::new(initial.0),
        stamp: AtomicU64::new(initial.1),
        allow: AtomicU64::new(initial.2),
    });
    let c = clock.clone();
    let writer = thread::spawn(move || {
        let mut w = Writer::start(c, v);
        // Descheduled: host time the machine must not count beyond the allowance.
        w.clock.host.fetch_add(PAUSE, Ordering::AcqRel);
        w.tick(ALLOW, 0);
        w.published
    });
    let reader = thread::spawn(move || [clock.now(), clock.now()]);
    let mut published = writer.join().unwrap();
    published.push(initial);
    let [first, second] = reader.join().unwrap();
    for (credit, _) in [first, second] {
        assert!(
            published.contains(&credit),
            "{TORN}: {credit:?}, published {published:?}"
        );
    }
    assert!(
        second.1 >= first.1,
        "{BACKWARDS}: {} then {} (credits {:?}, {:?})",
        first.1,
        second.1,
        first.0,
        second.0
    );
}

/// Every interleaving with up to two preemptions, under `v`.
fn check(v: Variant) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(move || execution(v));
}

#[test]
fn tdr_05_run_clock_reads_are_whole_credits_and_never_go_backwards() {
    check(Variant {
        begin_fence: true,
        end_release: true,
        read_first: false,
    });
}

#[test]
fn tdr_05_negative_control_run_clock_read_before_publishing_goes_backwards() {
    rvgpu_models::expect_violation(
        || {
            check(Variant {
                begin_fence: true,
                end_release: true,
                read_first: true,
            })
        },
        "time going backwards with the host's clock read before seq turns odd",
        BACKWARDS,
    );
}

#[test]
fn tdr_05_negative_control_run_clock_without_the_begin_fence_tears() {
    rvgpu_models::expect_violation(
        || {
            check(Variant {
                begin_fence: false,
                end_release: true,
                read_first: false,
            })
        },
        "torn credit without the release fence after seq turns odd",
        TORN,
    );
}

#[test]
fn tdr_05_negative_control_run_clock_with_a_relaxed_end_tears() {
    rvgpu_models::expect_violation(
        || {
            check(Variant {
                begin_fence: true,
                end_release: false,
                read_first: false,
            })
        },
        "torn credit with a Relaxed store of the even seq",
        TORN,
    );
}
