//! GPU signal → blocked CPU waiter wake latency, criterion, threaded
//! mode, against a bare `Mutex` + `Condvar` wake between two threads measured in the same run.
//!
//! Both benchmarks use one protocol: a waiter thread is handed something to wait on, says it
//! is about to block, blocks; the bench thread gives it 200 µs to get there, takes `t0` and
//! issues the wake; the waiter takes `t1` as soon as it returns from its wait. The figure is
//! `t1 − t0` (the 200 µs are not measured).
//!
//! - `native_fence_gpu_signal`: a threaded single-dGPU machine (device CMP thread, interrupt
//!   thread, DPC thread) with the real driver. The wait is a CPU event wait on a native fence
//!   (MonitoredValue lowered by the OS); the FENCE_SIGNAL command is already in the ring of a
//!   user-mode queue ([`rvgpu_simos::testing::gpu::GpuQueue`]), and `t0` is taken just before
//!   the kick (publish `write_ptr`, ring the doorbell). The wake goes CMP → conditional
//!   interrupt → ISR → DPC → OS release of the wait → the waiter's condvar.
//! - `bare_condvar`: the waiter blocks on a `Condvar`; `t0` is taken just before the flag is
//!   set and `notify_one` is called (the last hop of the path above, alone).
//! - `bare_chain`: the same number of thread hand-offs as the native path, bare: the bench
//!   thread wakes relay 1 (as the kick wakes the CMP thread), relay 1 wakes relay 2 (the line
//!   wakes the interrupt thread), relay 2 wakes relay 3 (the ISR queues the DPC), relay 3
//!   wakes the waiter (the DPC releases the wait). Each hop is one `Mutex`+`Condvar` wake.
//!
//! After criterion's own report it prints the median and mean of every measured wake in
//! each benchmark and the ratios native / chain (like for like: same
//! hand-offs) and native / bare (the last hop alone). Then it runs native and chain wakes
//! alternately, [`INTERLEAVED_PAIRS`] pairs, and prints that ratio too: the host's noise
//! moves whole stretches of seconds, which the separate benchmarks see at different times and
//! the interleaved pairs see alike. Run with
//! `cargo bench -p rvgpu-simos --bench fence_wake_latency`.

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use criterion::Criterion;
use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::{Machine, MachineConfig, Mode, NativeFenceDesc, SimEvent, WaitOutcome};

/// Native/chain pairs of the interleaved comparison (about 0.5 ms a pair).
const INTERLEAVED_PAIRS: usize = 10_000;

/// How long the waiter gets to block before the wake is issued.
const SETTLE: Duration = Duration::from_micros(200);

/// A waiter thread: receives a wait, reports it is about to block, blocks, returns `t1`.
struct Waiter<W: Send + 'static> {
    to: Option<Sender<W>>,
    ready: Receiver<()>,
    woke: Receiver<Instant>,
    thread: Option<thread::JoinHandle<()>>,
}

impl<W: Send + 'static> Waiter<W> {
    fn spawn(wait: impl Fn(W) + Send + 'static) -> Self {
        let (to, rx) = channel::<W>();
        let (ready_tx, ready) = channel();
        let (woke_tx, woke) = channel();
        let thread = thread::spawn(move || {
            for w in rx {
                if ready_tx.send(()).is_err() {
                    return;
                }
                wait(w);
                if woke_tx.send(Instant::now()).is_err() {
                    return;
                }
            }
        });
        Self {
            to: Some(to),
            ready,
            woke,
            thread: Some(thread),
        }
    }

    /// Hands `w` to the waiter, waits until it is (very likely) blocked, runs `wake` (which
    /// returns `t0`) and returns `t1 − t0`.
    fn once(&self, w: W, wake: impl FnOnce() -> Instant) -> Duration {
        self.to.as_ref().expect("waiter").send(w).expect("send");
        self.ready.recv().expect("ready");
        thread::sleep(SETTLE);
        let t0 = wake();
        let t1 = self.woke.recv().expect("woke");
        t1.saturating_duration_since(t0)
    }
}

impl<W: Send + 'static> Drop for Waiter<W> {
    fn drop(&mut self) {
        self.to = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One hop: a generation under a mutex and the condvar its waiter sleeps on.
#[derive(Default)]
struct Hop {
    generation: Mutex<u64>,
    cv: Condvar,
}

impl Hop {
    fn bump(&self) {
        *self.generation.lock().expect("hop") += 1;
        self.cv.notify_one();
    }

    /// Blocks until the generation moves past `seen`; returns the new one.
    fn wait(&self, seen: u64) -> u64 {
        let g = self.generation.lock().expect("hop");
        *self.cv.wait_while(g, |g| *g == seen).expect("hop")
    }
}

/// Three relay threads, each forwarding a wake from its hop to the next; `hops[3]` is the
/// waiter's. Relays stop when `hops[0]` reaches `u64::MAX`.
struct Chain {
    hops: Arc<[Hop; 4]>,
    relays: Vec<thread::JoinHandle<()>>,
}

impl Chain {
    fn new() -> Self {
        let hops: Arc<[Hop; 4]> = Arc::new(Default::default());
        let relays = (0..3)
            .map(|i| {
                let hops = Arc::clone(&hops);
                thread::spawn(move || {
                    let mut seen = 0;
                    loop {
                        seen = hops[i].wait(seen);
                        if seen == u64::MAX {
                            *hops[i + 1].generation.lock().expect("hop") = u64::MAX;
                            hops[i + 1].cv.notify_one();
                            return;
                        }
                        hops[i + 1].bump();
                    }
                })
            })
            .collect();
        Self { hops, relays }
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        *self.hops[0].generation.lock().expect("hop") = u64::MAX;
        self.hops[0].cv.notify_one();
        for r in self.relays.drain(..) {
            let _ = r.join();
        }
    }
}

struct Samples(Mutex<Vec<Duration>>);

impl Samples {
    fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    fn push(&self, d: Duration) {
        self.0.lock().expect("samples").push(d);
    }

    /// Benchmarks `once` (one wake, returning its latency) as `name`, keeping every latency.
    fn bench(&self, c: &mut Criterion, name: &str, mut once: impl FnMut() -> Duration) {
        c.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let d = once();
                    self.push(d);
                    total += d;
                }
                total
            });
        });
    }

    /// (median, mean, count) in µs.
    fn stats(&self) -> (f64, f64, usize) {
        let mut v = self.0.lock().expect("samples").clone();
        if v.is_empty() {
            return (0.0, 0.0, 0);
        }
        v.sort_unstable();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let median = us(v[v.len() / 2]);
        let mean = v.iter().map(|d| us(*d)).sum::<f64>() / v.len() as f64;
        (median, mean, v.len())
    }
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();

    let native = Samples::new();
    let bare = Samples::new();
    let chain = Samples::new();

    let cfg = MachineConfig::single(Mode::Threaded);
    let mut m = Machine::new(cfg);
    m.load_driver().expect("load");
    m.start_adapter(0).expect("start");
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let f = ok(
        &m,
        m.create_native_fence(0, q.pid(), NativeFenceDesc::default()),
    );
    let native_waiter = Waiter::spawn(|e: SimEvent| {
        assert_eq!(
            e.wait(Duration::from_secs(10)),
            Some(WaitOutcome::Satisfied)
        );
    });
    let mut v = 0u64;
    // One native wake: `t1 − t0` from just before the kick.
    let mut native_once = || {
        v += 1;
        let e = ok(&m, m.wait_native_fence_event(&f, v));
        ok(&m, q.signal(&f, v));
        native_waiter.once(e, || {
            let t0 = Instant::now();
            ok(&m, q.kick());
            t0
        })
    };
    {
        native.bench(
            &mut c,
            "fence_wake_latency/native_fence_gpu_signal",
            &mut native_once,
        );
    }

    {
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        let waiter = Waiter::spawn(|p: Arc<(Mutex<bool>, Condvar)>| {
            let (lock, cv) = &*p;
            let g = lock.lock().expect("lock");
            let mut g = cv.wait_while(g, |set| !*set).expect("wait");
            *g = false;
        });
        bare.bench(&mut c, "fence_wake_latency/bare_condvar", || {
            waiter.once(pair.clone(), || {
                let (lock, cv) = &*pair;
                let t0 = Instant::now();
                *lock.lock().expect("lock") = true;
                cv.notify_one();
                t0
            })
        });
    }

    let ch = Chain::new();
    let hops = Arc::clone(&ch.hops);
    // The waiter sleeps on the last hop, from the generation it last saw.
    let chain_waiter = Waiter::spawn(move |seen: u64| {
        hops[3].wait(seen);
    });
    let mut seen = 0u64;
    let mut chain_once = || {
        let d = chain_waiter.once(seen, || {
            let t0 = Instant::now();
            ch.hops[0].bump();
            t0
        });
        seen += 1;
        d
    };
    chain.bench(&mut c, "fence_wake_latency/bare_chain", &mut chain_once);

    c.final_summary();

    // Interleaved: one native wake, then one chain wake, and so on, so that the host's noise
    // (which moves whole seconds-long stretches on a shared machine) falls on both alike.
    let (inative, ichain) = (Samples::new(), Samples::new());
    let pairs = if std::env::args().any(|a| a == "--bench") {
        INTERLEAVED_PAIRS
    } else {
        // `cargo test --benches` runs every bench once; a few pairs show it still works.
        8
    };
    for _ in 0..pairs {
        inative.push(native_once());
        ichain.push(chain_once());
    }
    drop(chain_waiter);
    drop(ch);
    drop(native_waiter);
    assert!(m.bugcheck().is_none());
    assert!(m.fault().is_none(), "{:?}", m.fault());
    let _ = m.stop_adapter(0);

    let (nm, nmean, nn) = native.stats();
    let (bm, bmean, bn) = bare.stats();
    let (cm, cmean, cn) = chain.stats();
    println!();
    println!("| wake | median µs | mean µs | wakes measured |");
    println!("|---|---:|---:|---:|");
    println!("| native fence: GPU signal → CPU waiter | {nm:.1} | {nmean:.1} | {nn} |");
    println!("| bare chain of four Mutex+Condvar hand-offs | {cm:.1} | {cmean:.1} | {cn} |");
    println!("| bare Mutex+Condvar between two threads | {bm:.1} | {bmean:.1} | {bn} |");
    if cm > 0.0 && cmean > 0.0 {
        println!(
            "ratio native / chain (same hand-offs): median {:.2}, mean {:.2}",
            nm / cm,
            nmean / cmean
        );
    }
    let (inm, inmean, inn) = inative.stats();
    let (icm, icmean, _) = ichain.stats();
    if icm > 0.0 && icmean > 0.0 {
        println!(
            "interleaved ({inn} pairs): native {inm:.1} / chain {icm:.1} µs median, ratio median \
             {:.2}, mean {:.2}",
            inm / icm,
            inmean / icmean
        );
    }
    if bm > 0.0 && bmean > 0.0 {
        println!(
            "ratio native / bare: median {:.2}, mean {:.2}",
            nm / bm,
            nmean / bmean
        );
    }
}
