//! The GPU clock (GPU_CLOCK, CLOCK_FREQ): monotonic, never goes backwards, also across
//! engine and adapter resets (LOG-06).
//!
//! Threaded mode derives ticks from a monotonic `Instant`; step mode advances a counter by
//! [`STEP_TICKS`] per step so timestamps are reproducible. Either way every reader goes
//! through `fetch_max` on the last value handed out, so two readers on different threads can
//! never observe time running backwards relative to each other.
//!
//! [`RunClock`] is the machine's run time: what the CMP thread actually ran or waited.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Mode;

/// GPU ticks per step in step mode (10 µs at the default 100 MHz).
pub const STEP_TICKS: u64 = 1000;

pub(crate) struct Clock {
    mode: Mode,
    hz: u64,
    origin: Instant,
    /// Step mode: the raw counter.
    stepped: AtomicU64,
    /// Largest value handed out so far.
    last: AtomicU64,
}

impl Clock {
    pub(crate) fn new(mode: Mode, hz: u32) -> Self {
        Self {
            mode,
            hz: u64::from(hz.max(1)),
            origin: Instant::now(),
            stepped: AtomicU64::new(0),
            last: AtomicU64::new(0),
        }
    }

    fn raw(&self) -> u64 {
        match self.mode {
            Mode::Step => self.stepped.load(Ordering::Relaxed),
            Mode::Threaded => {
                let ns = self.origin.elapsed().as_nanos();
                let ticks = ns.saturating_mul(u128::from(self.hz)) / 1_000_000_000;
                u64::try_from(ticks).unwrap_or(u64::MAX)
            }
        }
    }

    /// The current time in ticks; never less than any value returned before.
    pub(crate) fn now(&self) -> u64 {
        let raw = self.raw();
        // Relaxed is enough: monotonicity is a property of this one atomic's modification
        // order, not of any other memory.
        let prev = self.last.fetch_max(raw, Ordering::Relaxed);
        prev.max(raw)
    }

    /// Step mode: advance the raw counter.
    pub(crate) fn advance(&self, ticks: u64) {
        self.stepped.fetch_add(ticks, Ordering::Relaxed);
    }

    /// How long `ticks` GPU ticks take in real time (threaded-mode timers).
    pub(crate) fn ticks_to_duration(&self, ticks: u64) -> Duration {
        let ns = u128::from(ticks).saturating_mul(1_000_000_000) / u128::from(self.hz);
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

/// How much host time one CMP loop step (a pass, or the wake-up after a wait) may count as
/// the machine's time. A step normally takes microseconds; what it takes beyond this is the
/// host not running the CMP thread, which the machine does not see.
pub(crate) const STEP_ALLOWANCE: Duration = Duration::from_millis(5);

/// The machine's run time (threaded mode): host time during which the emulated GPU ran or
/// waited of its own accord, not time its CMP thread was ready but not scheduled by the host.
/// The CMP thread credits it (its `RunWriter`); a reader between two credits sees the host time
/// since the last one, up to what that step may count, so it never gets ahead of the CMP
/// thread, and readers never see it run backwards (a reader's host time is taken after it has
/// seen the last credit, the writer's after it has begun the next). A timeout meaning "the GPU
/// did not move" is measured on it (the simulated OS's TDR). While no CMP thread runs (before
/// it starts, after it stops) it follows the host's clock: nothing can starve a GPU that is not
/// running, and a wait on one must still end.
#[derive(Clone, Debug)]
pub struct RunClock(Arc<RunShared>);

#[derive(Debug)]
struct RunShared {
    origin: Instant,
    /// Odd while the CMP thread publishes (a sequence lock: one writer, readers retry).
    seq: AtomicU64,
    /// Machine nanoseconds credited up to `stamp`.
    base: AtomicU64,
    /// Host nanoseconds since `origin` of the last credit.
    stamp: AtomicU64,
    /// Host nanoseconds after `stamp` the machine may count before the CMP thread runs again.
    allow: AtomicU64,
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl RunClock {
    pub(crate) fn new() -> Self {
        Self(Arc::new(RunShared {
            origin: Instant::now(),
            seq: AtomicU64::new(0),
            base: AtomicU64::new(0),
            stamp: AtomicU64::new(0),
            // No CMP thread yet: all host time counts.
            allow: AtomicU64::new(u64::MAX),
        }))
    }

    /// The machine's time so far.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.now_ns())
    }

    fn now_ns(&self) -> u64 {
        let s = &self.0;
        // Plain loads on x86 (no locked instruction): this is read on the submission path.
        let (host, base, stamp, allow) = loop {
            let before = s.seq.load(Ordering::Acquire);
            if before & 1 == 0 {
                // Taken after the credit it is measured from was published.
                let host = ns(s.origin.elapsed());
                let v = (
                    host,
                    s.base.load(Ordering::Relaxed),
                    s.stamp.load(Ordering::Relaxed),
                    s.allow.load(Ordering::Relaxed),
                );
                // Acquire fence: the three loads happen before the second read of `seq`.
                std::sync::atomic::fence(Ordering::Acquire);
                if s.seq.load(Ordering::Relaxed) == before {
                    break v;
                }
            }
            // The writer is between its stores (or was descheduled there): let it finish.
            std::thread::yield_now();
        };
        base.saturating_add(host.saturating_sub(stamp).min(allow))
    }

    /// The CMP thread's side (one at a time: a restarted thread's starts after the last one's
    /// drop). It continues from the credit last published, whose time since it counts as a
    /// tick would (all of it when no thread ran), and allows its first stretch a step as any
    /// other. Its time is taken after readers stop validating that credit, so a reader that
    /// saw the clock run on from it never sees the new credit below that.
    pub(crate) fn writer(&self) -> RunWriter {
        let s = &self.0;
        let mut w = RunWriter {
            clock: self.clone(),
            seq: s.seq.load(Ordering::Acquire),
            base: s.base.load(Ordering::Relaxed),
            stamp: s.stamp.load(Ordering::Relaxed),
            allow: s.allow.load(Ordering::Relaxed),
        };
        w.tick(STEP_ALLOWANCE);
        w
    }
}

/// What the CMP thread keeps of its [`RunClock`] (only it writes).
pub(crate) struct RunWriter {
    clock: RunClock,
    seq: u64,
    base: u64,
    stamp: u64,
    allow: u64,
}

impl Drop for RunWriter {
    /// The CMP thread ends (stopped, or unwinding): from here the clock follows the host.
    fn drop(&mut self) {
        self.tick(Duration::MAX);
    }
}

impl RunWriter {
    /// Credits the host time since the last call, up to what was allowed for it, and allows
    /// `next` for the stretch that starts now (a step, or a step and the wait it asks for).
    pub(crate) fn tick(&mut self, next: Duration) {
        self.begin();
        // Taken once readers can no longer validate the previous credit.
        let host = ns(self.clock.0.origin.elapsed());
        let spent = host.saturating_sub(self.stamp);
        self.base = self.base.saturating_add(spent.min(self.allow));
        self.stamp = host;
        self.allow = ns(next);
        self.end();
    }

    /// Makes `seq` odd: readers retry until [`Self::end`]. Plain stores on x86 (no locked
    /// instruction): the writer is one thread.
    fn begin(&mut self) {
        self.seq = self.seq.wrapping_add(1);
        self.clock.0.seq.store(self.seq, Ordering::Relaxed);
        // Release fence: a reader that sees a value stored after this also sees `seq` odd.
        std::sync::atomic::fence(Ordering::Release);
    }

    /// Publishes the credit and makes `seq` even again.
    fn end(&mut self) {
        let s = &self.clock.0;
        s.base.store(self.base, Ordering::Relaxed);
        s.stamp.store(self.stamp, Ordering::Relaxed);
        s.allow.store(self.allow, Ordering::Relaxed);
        self.seq = self.seq.wrapping_add(1);
        s.seq.store(self.seq, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TDR-05: host time the CMP thread did not run beyond its step's allowance is not the
    /// machine's; a reader between two credits never gets ahead of the allowance either.
    /// With no thread (before it starts, after it ends) the clock follows the host. Every
    /// bound is one the clock sets (a sleep lasts at least as asked, however long the host
    /// takes beyond it), so the test holds on a loaded machine.
    #[test]
    fn tdr_05_the_run_clock_counts_a_step_only_up_to_its_allowance() {
        let clock = RunClock::new();
        std::thread::sleep(Duration::from_millis(10));
        let first = clock.elapsed();
        assert!(
            first >= Duration::from_millis(10),
            "follows the host before the thread runs: {first:?}"
        );
        let mut w = clock.writer();
        // A stretch allowed nothing: readers see the credit and no more.
        w.tick(Duration::ZERO);
        let start = clock.elapsed();
        std::thread::sleep(Duration::from_millis(10));
        assert_eq!(
            clock.elapsed(),
            start,
            "a stretch allowed nothing counts nothing"
        );
        // A step of 5 ms the thread overran: a reader gets exactly the allowance, no more.
        w.tick(Duration::from_millis(5));
        std::thread::sleep(Duration::from_millis(60));
        let read = clock.elapsed() - start;
        assert_eq!(read, Duration::from_millis(5));
        // The credit for it is the allowance too.
        w.tick(Duration::ZERO);
        let credited = clock.elapsed() - start;
        assert_eq!(credited, Duration::from_millis(5));
        // A wait the thread asked for counts the time it lasted, up to what it allowed.
        w.tick(Duration::from_millis(40));
        std::thread::sleep(Duration::from_millis(20));
        w.tick(Duration::ZERO);
        let waited = clock.elapsed() - start - credited;
        assert!(
            waited >= Duration::from_millis(20) && waited <= Duration::from_millis(40),
            "{waited:?}"
        );
        // The thread ends: the host's time counts again, whole.
        drop(w);
        let ended = clock.elapsed();
        std::thread::sleep(Duration::from_millis(20));
        let after = clock.elapsed() - ended;
        assert!(after >= Duration::from_millis(20), "{after:?}");
        // A restarted thread continues from the time read, never below it.
        let before = clock.elapsed();
        let _w2 = clock.writer();
        assert!(clock.elapsed() >= before);
    }
}
