//! OS-side cost of the native fence log drain (docs/logs.md#simulated-os "Benchmark"), against
//! the non-optimized baseline of resampling every native fence, for 1, 64 and 1024 user-mode
//! hardware queues, all measured in the same run.
//!
//! Setup per configuration: a step-mode dGPU with 4 engines and the real driver; one process
//! holds Q real KMD queues (`D3DKMTCreateHwQueue`: both logs set by the OS through
//! `DxgkDdiSetNativeFenceLogBuffer`; no doorbell, so no runlist), spread over the 4 engines, 4
//! native fences per queue, each with a pending CPU wait that no measured entry satisfies (so
//! every iteration does the same work). A synthetic producer ([`rvgpu_simos::sync::fencelog::
//! Producer`]) writes entries and headers exactly as the device does; only OS-side work is
//! timed, including the real `DxgkDdiUpdateNativeFenceLogs` through the DDI table, the entry
//! reads and validation, the handle lookups and the re-arm of each touched fence
//! (`settle`: a resample, no MonitoredValue change).
//!
//! Measured (ns per call):
//! - `named/E`: the drain of one optimized report naming queue 0, with E ∈ {1, 8, 83} new
//!   signal entries. Slope (E83 − E1)/82 = cost per entry. (Not 84: with exactly N new
//!   entries the OS's re-check drops the oldest one, whose slot the next write would reuse —
//!   docs/logs.md#simulated-os's conservative `i + N ≤ count(h1)` — and falls back to a scan.)
//! - `null`: the drain of a NULL `hHWQueue` report on queue 0's engine (every header of that
//!   engine read, Q/4 queues; one queue dirty with 1 entry).
//! - `scan`: the baseline, resampling every native fence of the adapter (4·Q fences), what a
//!   NULL report costs without logs.
//!
//! Prints a table (median of `ROUNDS` rounds of `ITERS` calls each, rounds interleaved ABBA so
//! machine load hits all alike) with the ratios to `scan`; then criterion runs the same
//! closures for Q = 64 unless `--no-criterion`. Run with
//! `cargo bench -p rvgpu-simos --bench log_drain`.

use rvgpu_hw::addr::PhysAddr;
use std::time::Instant;

use criterion::Criterion;
use rvgpu_hw::cmd::LogKind;
use rvgpu_hw::log::{LogEntry, OP_SIGNAL_EXECUTED};
use rvgpu_hw::pdd::{HwQueuePdd, HW_QUEUE_PDD_VERSION, PDD_MAGIC};
use rvgpu_simos::sync::fencelog::{LogBuffer, Producer};
use rvgpu_simos::{Machine, MachineConfig, Mode, NativeFence, SimEvent};
use rvgpu_umd::kmt::Kmt;
use zerocopy::IntoBytes;

const ENGINES: u32 = 4;
const FENCES_PER_QUEUE: usize = 4;
const ROUNDS: usize = 15;
const ITERS: usize = 200;

struct Setup {
    m: Machine,
    /// Queue 0's KMD handle and engine.
    kmd0: usize,
    engine0: u32,
    /// Queue 0's signal log and its fence handles.
    log0: LogBuffer,
    fences0: Vec<u32>,
    /// GPU addresses of those fences' CurrentValue (the device stores the value there before
    /// it publishes the log entry, LOG-04).
    values0: Vec<u64>,
    next: u32,
    clock: u64,
    value: u64,
    _waits: Vec<(NativeFence, SimEvent)>,
}

fn okk<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("{e:?}"))
}

fn setup(queues: usize) -> Setup {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.engines = ENGINES;
    let mut m = Machine::new(cfg);
    okk(m.load_driver());
    okk(m.start_adapter(0));
    let p = okk(m.create_process(0));
    let ctxs: Vec<u32> = {
        let k = m.kmt(&p);
        (0..ENGINES).map(|n| okk(k.create_context(n))).collect()
    };
    let mut first = None;
    let mut waits = Vec::new();
    let mut fences0 = Vec::new();
    let mut values0 = Vec::new();
    for qi in 0..queues {
        let k = m.kmt(&p);
        let mut qp = HwQueuePdd {
            magic: PDD_MAGIC,
            version: HW_QUEUE_PDD_VERSION,
            ..Default::default()
        };
        let q = okk(k.create_hw_queue(ctxs[qi % ENGINES as usize], true, qp.as_mut_bytes()));
        for _ in 0..FENCES_PER_QUEUE {
            let f = okk(k.create_native_fence(0));
            let os = m.native_fence_by_kmt(0, f.kmt).expect("fence");
            let ev = okk(m.wait_native_fence_event(&os, u64::MAX / 2));
            if qi == 0 {
                fences0.push(f.kmt);
                values0.push(os.current_value_gpu());
            }
            waits.push((os, ev));
        }
        if qi == 0 {
            first = Some((q.handle, qp.queue_id));
        }
    }
    let (h0, id0) = first.expect("one queue");
    let kmd0 = m.hw_queue_kmd_by_id(0, id0).expect("kmd handle");
    let log0 = m
        .hw_queue_log_buffer(0, h0, LogKind::Signal)
        .expect("signal log");
    Setup {
        m,
        kmd0,
        engine0: 0,
        log0,
        fences0,
        values0,
        next: 0,
        clock: 1,
        value: 1,
        _waits: waits,
    }
}

impl Setup {
    /// Writes `e` signal entries into queue 0's log, as the device would.
    fn produce(&mut self, e: usize) {
        let p = Producer::new(&self.log0);
        for _ in 0..e {
            let i = self.next as usize % self.fences0.len();
            let h = self.fences0[i];
            self.clock += 1;
            self.value += 1;
            // LOG-04: the fence's new value is visible before its log entry.
            let d = self.m.device(0).expect("device");
            d.memory()
                .store(
                    PhysAddr::new(self.values0[i]),
                    self.value,
                    std::sync::atomic::Ordering::Release,
                )
                .expect("CurrentValue address");
            p.write(
                self.next,
                &LogEntry {
                    fence_value: self.value,
                    h_native_fence: h,
                    operation_type: OP_SIGNAL_EXECUTED,
                    fence_end_gpu_timestamp: self.clock,
                    ..Default::default()
                },
            );
            self.next += 1;
        }
    }

    fn named(&mut self, e: usize) {
        self.produce(e);
        let k = self.kmd0;
        okk(self.m.drain_native_fence_logs(0, &[k], &[]));
    }

    fn null(&mut self) {
        self.produce(1);
        let e = self.engine0;
        okk(self.m.drain_native_fence_logs(0, &[], &[e]));
    }

    fn scan(&mut self) {
        okk(self.m.scan_native_fences(0));
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Named(usize),
    Null,
    Scan,
}

fn run(s: &mut Setup, k: Kind, iters: usize) -> f64 {
    let t = Instant::now();
    for _ in 0..iters {
        match k {
            Kind::Named(e) => s.named(e),
            Kind::Null => s.null(),
            Kind::Scan => s.scan(),
        }
    }
    t.elapsed().as_nanos() as f64 / iters as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn table() {
    let kinds = [
        Kind::Named(1),
        Kind::Named(8),
        Kind::Named(83),
        Kind::Null,
        Kind::Scan,
    ];
    println!(
        "log_drain (ns per call, median of {ROUNDS} rounds x {ITERS}; {ENGINES} engines, \
         {FENCES_PER_QUEUE} fences/queue)"
    );
    println!(
        "{:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>8} {:>8} {:>8}",
        "queues",
        "named/1",
        "named/8",
        "named/83",
        "null",
        "scan",
        "ns/entry",
        "n1/scan",
        "n83/scan",
        "null/scan"
    );
    for q in [1usize, 64, 1024] {
        let mut s = setup(q);
        // Warm-up.
        for k in kinds {
            run(&mut s, k, 20);
        }
        let mut res: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
        for r in 0..ROUNDS {
            let order: Vec<usize> = if r % 2 == 0 {
                (0..kinds.len()).collect()
            } else {
                (0..kinds.len()).rev().collect()
            };
            for i in order {
                res[i].push(run(&mut s, kinds[i], ITERS));
            }
        }
        assert!(s.m.fault().is_none(), "{:?}", s.m.fault());
        let c = s.m.log_counters(0);
        assert_eq!(c.log_entries_lost, 0, "{c:?}");
        assert_eq!(c.log_fallback_scans, 0, "{c:?}");
        let md: Vec<f64> = res.into_iter().map(median).collect();
        let per_entry = (md[2] - md[0]) / 82.0;
        println!(
            "{:>6} {:>10.0} {:>10.0} {:>10.0} {:>10.0} {:>10.0} {:>9.1} {:>8.3} {:>8.3} {:>8.3}",
            q,
            md[0],
            md[1],
            md[2],
            md[3],
            md[4],
            per_entry,
            md[0] / md[4],
            md[2] / md[4],
            md[3] / md[4]
        );
    }
}

fn main() {
    table();
    if std::env::args().any(|a| a == "--no-criterion") {
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    let mut s = setup(64);
    let mut g = c.benchmark_group("log_drain_64_queues");
    g.bench_function("named_1", |b| b.iter(|| s.named(1)));
    g.bench_function("named_83", |b| b.iter(|| s.named(83)));
    g.bench_function("null", |b| b.iter(|| s.null()));
    g.bench_function("scan", |b| b.iter(|| s.scan()));
    g.finish();
    c.final_summary();
}
