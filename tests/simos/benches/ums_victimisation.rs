//! Doorbell victimisation cost per connect (issue 6, "Benchmarks"), criterion, against a
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
//! victimising / free. Run with `cargo bench -p rvgpu-simos --bench ums_victimisation`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::Criterion;
use rvgpu_hw::pdd::{
    DoorbellPdd, HwQueuePdd, DOORBELL_PDD_VERSION, HW_QUEUE_PDD_VERSION, PDD_MAGIC,
};
use rvgpu_hw::queue::RingControl;
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::{DoorbellState, Machine, MachineConfig, Mode, SimError, UmsEvent};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, Kmt, KmtHandle};
use zerocopy::IntoBytes;

/// User-mode queues (doorbells) in both benchmarks.
const QUEUES: usize = 64;
/// Criterion samples per benchmark (the last this many `iter_custom` calls are the samples).
const SAMPLES: usize = 50;

fn ok<T>(m: &Machine, r: Result<T, SimError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}; log {:#?}", m.driver_log()),
    }
}

fn okk<T, E: std::fmt::Debug>(m: &Machine, r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!(
            "{e:?}; machine fault {:?}; log {:#?}",
            m.fault(),
            m.driver_log()
        ),
    }
}

fn machine(doorbells: u32) -> Machine {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.doorbells = doorbells;
    let mut m = Machine::new(cfg);
    m.load_driver().expect("load");
    if let Err(e) = m.start_adapter(0) {
        panic!("start: {e}; log {:#?}", m.driver_log());
    }
    m
}

/// A user-mode queue built from the thunks: its doorbell is created, not connected.
struct RawQueue {
    queue: KmtHandle,
    ring: Allocation<SimMem>,
    control: Allocation<SimMem>,
    doorbell: KmtHandle,
}

fn create_doorbell(m: &Machine, k: &SimKmt<'_>, q: &RawQueue) -> KmtHandle {
    let mut pdd = DoorbellPdd {
        magic: PDD_MAGIC,
        version: DOORBELL_PDD_VERSION,
        ring_gpu: q.ring.gpu_va,
        ring_control_gpu: q.control.gpu_va,
        ring_size: 4096,
        ..Default::default()
    };
    okk(
        m,
        k.create_doorbell(q.queue, q.ring.handle, q.control.handle, pdd.as_mut_bytes()),
    )
    .handle
}

fn raw_queue(m: &Machine, k: &SimKmt<'_>) -> RawQueue {
    let context = okk(m, k.create_context(0));
    let mut qp = HwQueuePdd {
        magic: PDD_MAGIC,
        version: HW_QUEUE_PDD_VERSION,
        ..Default::default()
    };
    let queue = okk(m, k.create_hw_queue(context, true, qp.as_mut_bytes())).handle;
    let ring = okk(m, k.create_allocation(4096));
    let control = okk(m, k.create_allocation(RingControl::SIZE));
    // Fresh ring control: both pointers at 0.
    control.mem.store(RingControl::WRITE_PTR, 0);
    control.mem.store(RingControl::READ_PTR, 0);
    let mut q = RawQueue {
        queue,
        ring,
        control,
        doorbell: 0,
    };
    q.doorbell = create_doorbell(m, k, &q);
    q
}

/// `(iterations, time)` of every `iter_custom` call.
struct Samples(Mutex<Vec<(u64, Duration)>>);

impl Samples {
    fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    fn push(&self, iters: u64, d: Duration) {
        self.0.lock().expect("samples").push((iters, d));
    }

    /// (median of the per-sample µs per iteration, mean µs per iteration, iterations) over
    /// the last [`SAMPLES`] calls (criterion's measurement; earlier calls are its warm-up).
    fn stats(&self) -> (f64, f64, u64) {
        let v = self.0.lock().expect("samples");
        let s = &v[v.len().saturating_sub(SAMPLES)..];
        if s.is_empty() {
            return (0.0, 0.0, 0);
        }
        let mut per: Vec<f64> = s
            .iter()
            .map(|(n, d)| d.as_secs_f64() * 1e6 / (*n).max(1) as f64)
            .collect();
        per.sort_by(f64::total_cmp);
        let iters: u64 = s.iter().map(|(n, _)| n).sum();
        let total: f64 = s.iter().map(|(_, d)| d.as_secs_f64()).sum();
        (per[per.len() / 2], total * 1e6 / iters as f64, iters)
    }
}

fn connected(m: &Machine, h: KmtHandle) -> bool {
    matches!(
        m.doorbell_info(0, h).map(|d| d.state),
        Some(DoorbellState::Connected { .. })
    )
}

fn victimising(c: &mut Criterion, samples: &Samples) {
    let m = machine(1);
    {
        let p = ok(&m, m.create_process(0));
        let k = m.kmt(&p);
        let qs: Vec<RawQueue> = (0..QUEUES).map(|_| raw_queue(&m, &k)).collect();
        // The first connect finds the page free: not measured.
        okk(&m, k.connect_doorbell(qs[0].doorbell));
        let mut next = 1usize;
        c.bench_function("ums_victimisation/victimising", |b| {
            b.iter_custom(|iters| {
                let t0 = Instant::now();
                for _ in 0..iters {
                    let h = qs[next].doorbell;
                    if let Err(e) = k.connect_doorbell(h) {
                        panic!("connect: {e:?}; fault {:?}", m.fault());
                    }
                    next = (next + 1) % QUEUES;
                }
                let d = t0.elapsed();
                // The last connect took the page from the queue before it.
                let last = qs[(next + QUEUES - 1) % QUEUES].doorbell;
                let prev = qs[(next + QUEUES - 2) % QUEUES].doorbell;
                assert!(connected(&m, last) && (iters < 2 || !connected(&m, prev)));
                m.clear_ums_events(0);
                samples.push(iters, d);
                d
            });
        });
        // Every measured connect victimised exactly one doorbell (spot check on a fresh run).
        m.clear_ums_events(0);
        okk(&m, k.connect_doorbell(qs[next].doorbell));
        let callbacks = m
            .ums_events(0)
            .iter()
            .filter(|e| matches!(e, UmsEvent::CallbackDisconnect { .. }))
            .count();
        assert_eq!(callbacks, 1, "{:#?}", m.ums_events(0));
        drop(qs);
        ok(&m, m.exit_process(&p));
    }
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

fn free_doorbell(c: &mut Criterion, samples: &Samples) {
    let m = machine(QUEUES as u32);
    {
        let p = ok(&m, m.create_process(0));
        let k = m.kmt(&p);
        let mut qs: Vec<RawQueue> = (0..QUEUES).map(|_| raw_queue(&m, &k)).collect();
        let mut next = 0usize;
        c.bench_function("ums_victimisation/free_doorbell", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    if next == QUEUES {
                        // All connected: destroy and recreate the doorbells (not measured).
                        for q in &mut qs {
                            okk(&m, k.destroy_doorbell(q.doorbell));
                            q.doorbell = create_doorbell(&m, &k, q);
                        }
                        m.clear_ums_events(0);
                        next = 0;
                    }
                    let n = left.min((QUEUES - next) as u64);
                    let t0 = Instant::now();
                    for _ in 0..n {
                        if let Err(e) = k.connect_doorbell(qs[next].doorbell) {
                            panic!("connect: {e:?}; fault {:?}", m.fault());
                        }
                        next += 1;
                    }
                    total += t0.elapsed();
                    left -= n;
                }
                assert!(connected(&m, qs[next - 1].doorbell));
                samples.push(iters, total);
                total
            });
        });
        assert!(!m
            .ums_events(0)
            .iter()
            .any(|e| matches!(e, UmsEvent::CallbackDisconnect { .. })));
        drop(qs);
        ok(&m, m.exit_process(&p));
    }
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    let victim = Samples::new();
    let free = Samples::new();
    victimising(&mut c, &victim);
    free_doorbell(&mut c, &free);
    c.final_summary();

    let (vm, vmean, vn) = victim.stats();
    let (fm, fmean, fn_) = free.stats();
    println!();
    println!("| D3DKMTConnectDoorbell (step mode) | median µs | mean µs | connects measured |");
    println!("|---|---:|---:|---:|");
    println!(
        "| 64 queues on 1 physical doorbell: every connect victimises | {vm:.2} | {vmean:.2} | {vn} |"
    );
    println!("| a free physical doorbell (baseline) | {fm:.2} | {fmean:.2} | {fn_} |");
    if fm > 0.0 && fmean > 0.0 {
        println!(
            "ratio victimising / free: median {:.2}, mean {:.2}",
            vm / fm,
            vmean / fmean
        );
    }
}
