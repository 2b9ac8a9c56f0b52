//! Seeded, reproducible stress of the native-fence OS side with the real driver and GPU
//! (NF-02, NF-03, NF-04, NF-09, NF-17, MF-04): many fences, CPU waiters coming and going,
//! GPU signals from two engines and CPU signals. Invariants: at every idle point each wait is
//! released exactly when its value has been reached (none lost, none early), MonitoredValue
//! is (lowest pending − 1) or u64::MAX, and signals with no CPU waiter raise no interrupt.

mod common;

use common::*;
use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::{
    Machine, MachineConfig, Mode, NativeFence, NativeFenceDesc, SimEvent, WaitOutcome,
};

/// Queues a signal; a full ring is drained first (kick, run until idle).
fn gpu_signal(m: &Machine, q: &mut GpuQueue, f: &NativeFence, v: u64) {
    if q.write_ptr() - q.read_ptr() + 64 > u64::from(rvgpu_simos::testing::gpu::RING_BYTES) {
        ok(m, q.kick());
        match m.config().mode {
            Mode::Step => ok(m, m.run_until_idle()),
            Mode::Threaded => {
                let drained = ok(
                    m,
                    m.run_until(0, std::time::Duration::from_secs(20), |_| q.drained()),
                );
                assert!(drained, "ring did not drain");
            }
        }
    }
    ok(m, q.signal(f, v));
}

struct F {
    fence: NativeFence,
    /// Engine that signals it (0 or 1), or None: signalled from the CPU.
    engine: Option<usize>,
    /// Highest value queued or signalled.
    queued: u64,
}

fn check(m: &Machine, fences: &[F], waits: &mut Vec<(usize, u64, SimEvent)>, seed: u64) {
    let rule = m.os_config().windows.reading().monitored_value;
    for (i, v, e) in waits.iter() {
        let cv = fences[*i].fence.current_value();
        let mv = fences[*i].fence.monitored_value();
        let o = e.outcome();
        if *v <= cv && o.is_none() && rule.raises_over_waits() && cv < mv {
            // 24H2: a later wait raised MonitoredValue over this one; no interrupt is due
            // before the fence reaches it (a late wake, counted by the OS). Any pending wait
            // reached while CurrentValue is at or above MonitoredValue is a lost wake-up.
            continue;
        }
        if *v <= cv {
            assert_eq!(
                o,
                Some(WaitOutcome::Satisfied),
                "seed {seed}: lost wake-up on fence {i} value {v} cv {cv}"
            );
        } else {
            assert_eq!(
                o, None,
                "seed {seed}: early release on fence {i} value {v} cv {cv}"
            );
        }
    }
    waits.retain(|(_, _, e)| e.outcome().is_none());
    for (i, f) in fences.iter().enumerate() {
        let lowest = waits.iter().filter(|w| w.0 == i).map(|w| w.1).min();
        let want = lowest.map_or(u64::MAX, |v| rule.after_release(u64::MAX, Some(v)));
        let mv = f.fence.monitored_value();
        if rule.raises_over_waits() && lowest.is_some() {
            // 24H2: armed while waits remain (a new wait may have raised it over lower ones,
            // whose late wakes the check above accounts for).
            assert_ne!(
                mv,
                u64::MAX,
                "seed {seed}: fence {i} has waits but no MonitoredValue"
            );
        } else {
            assert_eq!(mv, want, "seed {seed}: MonitoredValue of fence {i}");
        }
    }
    assert!(m.bugcheck().is_none());
}

fn run(seed: u64, nfences: usize, steps: usize) {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    m.load_driver().expect("load");
    m.start_adapter(0).expect("start");
    let mut rng = Rng(seed | 1);
    // Each queue is a process of its own; a fence a queue signals is that process's.
    let mut queues = [
        ok(&m, GpuQueue::new(&m, 0, 0)),
        ok(&m, GpuQueue::new(&m, 0, 1)),
    ];
    let owners = [queues[0].pid(), queues[1].pid(), device_process(&m, 0)];
    let mut fences: Vec<F> = (0..nfences)
        .map(|i| F {
            fence: ok(
                &m,
                m.create_native_fence(
                    0,
                    owners[i % 3],
                    NativeFenceDesc {
                        shareable: i % 7 == 0,
                        ..Default::default()
                    },
                ),
            ),
            engine: match i % 3 {
                0 => Some(0),
                1 => Some(1),
                _ => None,
            },
            queued: 0,
        })
        .collect();
    let mut waits: Vec<(usize, u64, SimEvent)> = Vec::new();
    for _ in 0..steps {
        match rng.below(10) {
            0..=2 => {
                let i = rng.below(fences.len() as u64) as usize;
                let v = fences[i].fence.current_value() + 1 + rng.below(6);
                let e = ok(&m, m.wait_native_fence_event(&fences[i].fence, v));
                waits.push((i, v, e));
            }
            3..=6 => {
                let i = rng.below(fences.len() as u64) as usize;
                let v = fences[i].queued + 1 + rng.below(3);
                fences[i].queued = v;
                match fences[i].engine {
                    Some(e) => {
                        gpu_signal(&m, &mut queues[e], &fences[i].fence, v);
                        ok(&m, queues[e].kick());
                    }
                    None => ok(&m, m.signal_native_fence_from_cpu(&fences[i].fence, v)),
                }
            }
            _ => ok(&m, m.run_steps(1 + rng.below(4) as usize)),
        }
        if rng.below(50) == 0 {
            ok(&m, m.run_until_idle());
            check(&m, &fences, &mut waits, seed);
        }
    }
    ok(&m, m.run_until_idle());
    check(&m, &fences, &mut waits, seed);
    let (isr, _) = m.interrupt_counts(0);
    let (umv, ucv, resamples) = m.native_fence_counts(0);
    assert!(
        isr > 0 && umv > 0 && ucv > 0 && resamples > 0,
        "seed {seed}: the run exercised nothing: isr {isr} umv {umv} ucv {ucv} dpc {resamples}"
    );
    // No waiter left after releasing everything: then no signal may interrupt (NF-03).
    for f in fences.iter_mut() {
        f.queued += 100;
        let v = f.queued;
        match f.engine {
            Some(e) => gpu_signal(&m, &mut queues[e], &f.fence, v),
            None => ok(&m, m.signal_native_fence_from_cpu(&f.fence, v)),
        }
    }
    for q in &queues {
        ok(&m, q.kick());
    }
    ok(&m, m.run_until_idle());
    check(&m, &fences, &mut waits, seed);
    assert!(waits.is_empty());
    let before = m.interrupt_counts(0).0;
    for f in fences.iter_mut() {
        if let Some(e) = f.engine {
            f.queued += 1;
            gpu_signal(&m, &mut queues[e], &f.fence, f.queued);
        }
    }
    for q in &mut queues {
        ok(&m, q.kick());
    }
    ok(&m, m.run_until_idle());
    assert_eq!(
        m.interrupt_counts(0).0,
        before,
        "seed {seed}: interrupt with no waiter"
    );
}

/// NF-02/03/04/09/17, MF-04: seeded stress, several seeds (reproducible: the seed is in
/// every failure message).
#[test]
fn nf_04_nf_09_seeded_stress() {
    for seed in [1, 0xC0FFEE, 0x5EED_1234, 42, 7] {
        run(seed, 48, 1500);
    }
    // Thousands of fences (several packed pages per process, NF-05), fewer seeds.
    run(0xF3CE, 2000, 6000);
}

/// NF-07, NF-09, MF-04 threaded: four CPU threads add and withdraw waits on shared fences
/// (each wait lowers MonitoredValue through UpdateMonitoredValues) while the GPU signals them
/// and the interrupt and DPC threads resample: every wait whose value the GPU reaches is
/// released.
#[test]
fn nf_09_threaded_concurrent_waiters() {
    let mut m = Machine::new(MachineConfig::single(Mode::Threaded));
    m.load_driver().expect("load");
    m.start_adapter(0).expect("start");
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let fences: Vec<NativeFence> = (0..4)
        .map(|_| {
            ok(
                &m,
                m.create_native_fence(0, q.pid(), NativeFenceDesc::default()),
            )
        })
        .collect();
    const TOP: u64 = 200;
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (m, fences) = (&m, &fences);
            s.spawn(move || {
                let mut rng = Rng(0x9E37_79B9 ^ (t + 1));
                for k in 1..=TOP / 4 {
                    let f = &fences[rng.below(4) as usize];
                    let v = (k * 4).min(TOP);
                    let r = ok(
                        m,
                        m.wait_native_fence(f, v, std::time::Duration::from_secs(20)),
                    );
                    assert_eq!(r, WaitOutcome::Satisfied, "thread {t} value {v}");
                }
            });
        }
        for v in 1..=TOP {
            for f in &fences {
                gpu_signal(&m, &mut q, f, v);
            }
            ok(&m, q.kick());
            if v % 10 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    });
    assert!(m.bugcheck().is_none());
}

against_the_pe_image!();

under_the_pages!();
