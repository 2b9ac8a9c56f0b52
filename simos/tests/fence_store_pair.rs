//! NF-07, NF-17: the `FENCE_STORE_ADDR` / `FENCE_STORE` pair (hardware.md 8.3), by which the
//! KMD stores a fence word when the OS gives the update DDIs no CPU address, is never
//! interleaved with another writer's pair, whatever IRQL the OS calls at.
//!
//! The OS here is 24H2 (no CPU addresses) except that it calls `DxgkDdiUpdateCurrentValuesFromCpu`
//! at DISPATCH_LEVEL outside the interrupt lock, as Microsoft's pages allow. Two processes
//! signal their own fences from the CPU on two threads while a third raises its fence's
//! MonitoredValue with new CPU waits (`DxgkDdiUpdateMonitoredValues` at device IRQL under the
//! interrupt lock). A torn pair (ADDR_a, ADDR_b, VALUE_b, VALUE_a) would store one process's
//! value in another's word and leave its own word behind: the racers' view is that every word
//! holds only its owner's values, and each signal is in the signaller's word when it returns.

mod common;

use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rvgpu_simos::machine::answers::CpuUpdateIrql;
use rvgpu_simos::{Machine, MachineConfig, Mode, NativeFence, NativeFenceDesc, WaitOutcome};

/// 24H2's update DDIs (one fence a call, no CPU address), CPU signals at DISPATCH_LEVEL.
fn dispatch_cpu_signals() -> Machine {
    let mut cfg = MachineConfig::single(Mode::Threaded);
    cfg.os.windows = rvgpu_simos::Windows::W24H2.answering(|r| {
        r.name = "24h2, CPU signals at DISPATCH_LEVEL";
        r.cpu_update_irql = CpuUpdateIrql::Dispatch;
    });
    started(cfg)
}

/// A fence of a process of its own on adapter 0, at 0.
fn own_fence(m: &Machine) -> NativeFence {
    let pid = device_process(m, 0);
    ok(m, m.create_native_fence(0, pid, NativeFenceDesc::default()))
}

/// The values racer `k` writes carry `k` in their high half.
fn tagged(k: u64, i: u64) -> u64 {
    (k << 32) | i
}

fn tag(v: u64) -> u64 {
    v >> 32
}

/// Signals per CPU-signalling racer; the run also ends after [`RUN_FOR`].
const SIGNALS: u64 = 20_000;
const RUN_FOR: Duration = Duration::from_secs(4);

#[test]
fn nf_07_nf_17_dispatch_cpu_signals_never_store_into_another_fence() {
    let m = dispatch_cpu_signals();
    let signalled = [own_fence(&m), own_fence(&m)];
    let watched = own_fence(&m);
    let mv_before: Vec<u64> = signalled.iter().map(NativeFence::monitored_value).collect();
    let done = AtomicBool::new(false);
    let start = Instant::now();
    std::thread::scope(|s| {
        let racers: Vec<_> = signalled
            .iter()
            .zip(1u64..)
            .map(|(f, k)| {
                let (m, done) = (&m, &done);
                s.spawn(move || {
                    for i in 1..=SIGNALS {
                        if done.load(Ordering::Relaxed) || start.elapsed() > RUN_FOR {
                            break;
                        }
                        let v = tagged(k, i);
                        ok(m, m.signal_native_fence_from_cpu(f, v));
                        // Only this racer writes this word: a torn pair left it behind.
                        let now = f.current_value();
                        if now != v {
                            done.store(true, Ordering::Relaxed);
                            panic!("racer {k} signalled {v:#x}; its fence reads {now:#x}");
                        }
                    }
                })
            })
            .collect();
        // CPU waits on the watched fence, each higher and at once timed out: 24H2 raises its
        // MonitoredValue through UpdateMonitoredValues at device IRQL, racing the CPU signals.
        let waiter = {
            let (m, done, watched) = (&m, &done, &watched);
            s.spawn(move || {
                for i in 1..=SIGNALS {
                    if done.load(Ordering::Relaxed) || start.elapsed() > RUN_FOR {
                        break;
                    }
                    let r = ok(
                        m,
                        m.wait_native_fence(watched, tagged(3, i), Duration::ZERO),
                    );
                    assert_eq!(
                        r,
                        WaitOutcome::TimedOut,
                        "the watched fence is never signalled"
                    );
                }
            })
        };
        // Every word holds only its owner's values (or what it started with).
        while !racers.iter().all(|r| r.is_finished()) {
            for (f, k) in signalled.iter().zip(1u64..) {
                let cv = f.current_value();
                assert!(cv == 0 || tag(cv) == k, "fence {k} holds {cv:#x}");
            }
            let cv = watched.current_value();
            let mv = watched.monitored_value();
            assert_eq!(cv, 0, "the watched fence was never signalled");
            assert!(
                tag(mv) == 3 || mv == u64::MAX || mv == 0,
                "the watched fence's MonitoredValue is {mv:#x}"
            );
            std::thread::yield_now();
        }
        done.store(true, Ordering::Relaxed);
        for r in racers {
            r.join().expect("racer");
        }
        waiter.join().expect("waiter");
    });
    for (f, before) in signalled.iter().zip(mv_before) {
        assert_eq!(f.monitored_value(), before, "no wait was ever set on it");
    }
    no_fault(&m);
}

against_the_pe_image!();
