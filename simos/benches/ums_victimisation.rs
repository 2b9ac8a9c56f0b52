//! Doorbell victimisation cost per connect, criterion, against a
//! connect that finds a free physical doorbell, both measured in the same run.
//!
//! Both benchmarks time `D3DKMTConnectDoorbell` ([`Kmt::connect_doorbell`] of the simulated
//! OS: handle and state checks, `DxgkDdiConnectDoorbell`, then the OS maps the doorbell VA to
//! the BAR2 page the KMD returned and checks the binding) on a step-mode single-dGPU machine
//! with the real driver; one process holds [`QUEUES`] user-mode queues on engine 0, each with
//! its ring, ring control and doorbell, created before the measurement.
//!
//! - `victimising` (64 queues per physical doorbell): the device has **one** physical
//!   doorbell. The queues connect round-robin; each connect finds the page taken and the KMD
//!   victimises its owner (the previous queue): `DxgkCbDisconnectDoorbell(victim,
//!   DISCONNECTED_RETRY)` (the OS writes the victim's status and points its VA at the dummy
//!   page), then `DOORBELL_BIND[0]` ← the new queue and `QUEUE_KICK`. Every measured connect
//!   victimises (the first connect, which finds the page free, is made before the clock runs),
//!   and the next connect of a queue comes 63 connects later, when it is disconnected again.
//! - `free_doorbell` (baseline): the device has [`QUEUES`] physical doorbells. Each measured
//!   connect finds a free one. Once all [`QUEUES`] are connected the clock stops and the
//!   doorbells are destroyed and recreated (disconnected, nothing bound) before it restarts.
//!
//! Nothing is submitted, so the GPU has nothing to run; step mode keeps the device, interrupt
//! and DPC threads out of the measured region. After criterion's report it prints µs per
//! connect (median of the per-sample means, mean over all measured connects) and the ratio
//! victimising / free; then it measures both again interleaved (alternating chunks of 64
//! connects, ABBA order, so that other load on the machine hits both alike) and prints the
//! median per-chunk figures and the median of the per-round ratios. Run with `cargo bench -p rvgpu-simos --bench ums_victimisation`.

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use std::time::{Duration, Instant};

use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::{DoorbellState, Machine, Mode, UmsEvent, UmsProcess};
use rvgpu_umd::kmt::{Kmt, KmtHandle};

/// User-mode queues (doorbells) in both benchmarks.
const QUEUES: usize = 64;
/// Rounds of the interleaved measurement after criterion's.
const INTERLEAVED_ROUNDS: usize = 2000;
/// Criterion samples per benchmark (the last this many `iter_custom` calls are the samples).
const SAMPLES: usize = 50;

fn connected(m: &Machine, h: KmtHandle) -> bool {
    matches!(
        m.doorbell_info(0, h).map(|d| d.state),
        Some(DoorbellState::Connected { .. })
    )
}

fn callbacks(m: &Machine) -> usize {
    m.ums_events(0)
        .iter()
        .filter(|e| matches!(e, UmsEvent::CallbackDisconnect { .. }))
        .count()
}

/// One machine's process with its [`QUEUES`] queues, and whose doorbell connects next.
struct Rig<'m> {
    m: &'m Machine,
    p: UmsProcess,
    k: SimKmt<'m>,
    qs: Vec<RawQueue>,
    next: usize,
    /// The first (unvictimising) connect of [`Rig::victimising`] was made.
    started: bool,
}

impl<'m> Rig<'m> {
    fn new(m: &'m Machine) -> Self {
        let p = ok(m, m.create_process(0));
        let k = m.kmt(&p);
        let qs = (0..QUEUES).map(|_| raw_queue(m, &k)).collect();
        Self {
            m,
            p,
            k,
            qs,
            next: 0,
            started: false,
        }
    }

    fn connect(&self, i: usize) {
        if let Err(e) = self.k.connect_doorbell(self.qs[i].doorbell) {
            panic!("connect: {e:?}; fault {:?}", self.m.fault());
        }
    }

    /// One physical doorbell: `n` round-robin connects, each victimising the previous owner;
    /// returns the time they took.
    fn victimising(&mut self, n: u64) -> Duration {
        if !self.started {
            // The very first connect finds the page free: not measured.
            self.connect(0);
            self.next = 1;
            self.started = true;
        }
        let t0 = Instant::now();
        for _ in 0..n {
            self.connect(self.next);
            self.next = (self.next + 1) % QUEUES;
        }
        let d = t0.elapsed();
        // The last connect took the page from the queue before it.
        let last = self.qs[(self.next + QUEUES - 1) % QUEUES].doorbell;
        let prev = self.qs[(self.next + QUEUES - 2) % QUEUES].doorbell;
        assert!(connected(self.m, last) && !connected(self.m, prev));
        self.m.clear_ums_events(0);
        d
    }

    /// [`QUEUES`] physical doorbells: `n` connects that each find a free one; destroys and
    /// recreates the doorbells (not measured) whenever all are connected.
    fn free(&mut self, n: u64) -> Duration {
        let mut total = Duration::ZERO;
        let mut left = n;
        while left > 0 {
            if self.next == QUEUES {
                for q in &mut self.qs {
                    okk(self.m, self.k.destroy_doorbell(q.doorbell));
                    q.doorbell = create_doorbell(self.m, &self.k, q);
                }
                assert_eq!(callbacks(self.m), 0, "nothing victimised");
                self.m.clear_ums_events(0);
                self.next = 0;
            }
            let c = left.min((QUEUES - self.next) as u64);
            let t0 = Instant::now();
            for _ in 0..c {
                self.connect(self.next);
                self.next += 1;
            }
            total += t0.elapsed();
            left -= c;
        }
        assert!(connected(self.m, self.qs[self.next - 1].doorbell));
        total
    }

    fn finish(self) {
        let m = self.m;
        drop(self.qs);
        ok(m, m.exit_process(&self.p));
        assert!(m.fault().is_none(), "{:?}", m.fault());
    }
}

fn main() {
    let mut c = bench_criterion(SAMPLES);
    let one = with_doorbells(Mode::Step, 1);
    let many = with_doorbells(Mode::Step, QUEUES as u32);
    let mut victim_rig = Rig::new(&one);
    let mut free_rig = Rig::new(&many);
    let victim = Samples::new();
    let free = Samples::new();

    c.bench_function("ums_victimisation/victimising", |b| {
        b.iter_custom(|iters| {
            let d = victim_rig.victimising(iters);
            victim.push(iters, d);
            d
        });
    });
    c.bench_function("ums_victimisation/free_doorbell", |b| {
        b.iter_custom(|iters| {
            let d = free_rig.free(iters);
            free.push(iters, d);
            d
        });
    });
    c.final_summary();

    // The same two measurements interleaved (ABBA order, chunks of QUEUES connects), so that a
    // change of load on the machine hits both alike: per-chunk µs per connect, and the median
    // of the per-round ratios.
    let (mut iv, mut ifr, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..INTERLEAVED_ROUNDS {
        let n = QUEUES as u64;
        let (v, f) = if round % 2 == 0 {
            let v = victim_rig.victimising(n);
            (v, free_rig.free(n))
        } else {
            let f = free_rig.free(n);
            (victim_rig.victimising(n), f)
        };
        let (v, f) = (
            v.as_secs_f64() * 1e6 / n as f64,
            f.as_secs_f64() * 1e6 / n as f64,
        );
        iv.push(v);
        ifr.push(f);
        ratios.push(v / f);
    }
    // Every victimising connect made exactly one callback (spot check).
    one.clear_ums_events(0);
    victim_rig.connect(victim_rig.next);
    assert_eq!(callbacks(&one), 1, "{:#?}", one.ums_events(0));
    victim_rig.finish();
    free_rig.finish();

    let [(vm, vmean, _), (fm, fmean, _)] = samples_table(
        "| D3DKMTConnectDoorbell (step mode) | median µs | mean µs | connects measured |",
        [
            (
                "64 queues on 1 physical doorbell: every connect victimises",
                &victim,
            ),
            ("a free physical doorbell (baseline)", &free),
        ],
        SAMPLES,
        1e6,
        2,
    );
    if fm > 0.0 && fmean > 0.0 {
        println!(
            "ratio victimising / free (criterion samples): median {:.2}, mean {:.2}",
            vm / fm,
            vmean / fmean
        );
    }
    let (mv, mf, mr) = (median(&mut iv), median(&mut ifr), median(&mut ratios));
    println!(
        "interleaved, {INTERLEAVED_ROUNDS} rounds of {QUEUES} connects each: victimising \
         {mv:.2} µs, free {mf:.2} µs (medians), median per-round ratio {mr:.2}"
    );
}
