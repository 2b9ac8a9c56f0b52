//! CPU cost of one user-mode submission against one kernel-mode submission of the same work,
//! criterion, both measured in the same run on the same machine.
//!
//! One step-mode single-dGPU machine with the real driver, one process, and on engine 0:
//!
//! - `user_mode`: [`UserQueue::submit`] of one FILL (64 bytes): the UMD writes FILL and
//!   `PROGRESS(N+1)` into its ring, stores the last-queued value, publishes `write_ptr` and
//!   rings the doorbell (a store to the BAR2 page through the OS mapping), then reads the
//!   doorbell status (`CONNECTED`: done). No kernel transition.
//! - `kernel_mode` (the baseline): [`KernelQueue::submit`] of the same FILL: the UMD copies it
//!   into its command buffer and calls `D3DKMTSubmitCommandToHwQueue`; the simulated Dxgkrnl
//!   checks the queue and progress value, raises to the submit IRQL and calls the KMD's
//!   `DxgkDdiSubmitCommandToHwQueue`, which writes `INDIRECT` + `PROGRESS` into its own ring,
//!   publishes `write_ptr` and writes `QUEUE_KICK`.
//!
//! **What is isolated.** The machine is in step mode: the emulated GPU only runs when the
//! bench steps it, so during the measured region nothing consumes the rings and no other
//! thread runs (no CMP, interrupt or DPC thread competing for the two cores); the figure is
//! the submitting CPU's own work. Both paths end in one MMIO write (doorbell or QUEUE_KICK) on
//! which the emulated device reloads the queue's `write_ptr` synchronously; that emulation
//! cost is in both figures (on hardware it is a posted write). Every [`CHUNK`] submissions
//! the bench stops the clock and runs the machine until it is idle (the GPU executes the
//! batches, the ISR and DPC report the progress fences), so the user-mode ring, the
//! kernel-mode ring and the command buffer never fill and no submission waits; then it checks
//! that every batch completed and restarts the clock (`iter_custom`).
//!
//! After criterion's report it prints ns per submission for both (median of the per-sample
//! means, and the mean over all measured submissions) and the ratio user / kernel; then it
//! measures both again interleaved (alternating chunks of [`CHUNK`] submissions, ABBA order,
//! so that other load on the machine hits both alike) and prints the median per-chunk figures
//! and the median of the per-round ratios. Run with
//! `cargo bench -p rvgpu-simos --bench ums_submission`.

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

use rvgpu_hw::cmd::Command;
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::{Machine, MachineConfig, Mode};
use rvgpu_umd::kmt::Kmt;
use rvgpu_umd::submit::{KernelQueue, QueueConfig, SubmissionPath, UserQueue};

/// Submissions between two drains. A FILL + PROGRESS batch is 48 bytes of the 64 KiB user
/// ring; INDIRECT + PROGRESS is 40 bytes of the KMD's 16 KiB ring; a FILL is 32 bytes of the
/// 64 KiB command buffer: 128 fit all three with a wide margin.
const CHUNK: u64 = 128;
/// Rounds of the interleaved measurement after criterion's.
const INTERLEAVED_ROUNDS: usize = 2000;
/// Criterion samples per benchmark (the last this many `iter_custom` calls are the samples).
const SAMPLES: usize = 50;

/// Runs `n` submissions in chunks of [`CHUNK`], timing only the submissions; between chunks
/// runs the machine until idle and checks with `check` that everything completed.
fn timed_chunks<Q>(
    m: &Machine,
    q: &mut Q,
    n: u64,
    mut submit: impl FnMut(&mut Q),
    mut check: impl FnMut(&Q),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = n;
    while left > 0 {
        let c = left.min(CHUNK);
        let t0 = Instant::now();
        for _ in 0..c {
            submit(q);
        }
        total += t0.elapsed();
        left -= c;
        ok(m, m.run_until_idle());
        check(q);
        m.clear_ums_events(0);
    }
    total
}

fn main() {
    let mut c = bench_criterion(SAMPLES);

    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.doorbells = 4;
    let mut m = Machine::new(cfg);
    m.load_driver().expect("load");
    if let Err(e) = m.start_adapter(0) {
        panic!("start: {e}; log {:#?}", m.driver_log());
    }
    let user = Samples::new();
    let kernel = Samples::new();
    let mut interleaved: Vec<(f64, f64)> = Vec::new();
    {
        let p = ok(&m, m.create_process(0));
        let k: SimKmt<'_> = m.kmt(&p);
        let target = okk(&m, k.create_allocation(4096));
        let qcfg = QueueConfig::default();
        let mut uq = okk(&m, UserQueue::new(k, &qcfg));
        let mut kq = okk(&m, KernelQueue::new(k, &qcfg));
        assert_eq!(uq.path(), SubmissionPath::UserMode);
        let user_batch = [Command::Fill {
            dst: target.gpu_va,
            bytes: 64,
            pattern: 0x55,
        }];
        let kernel_batch = [Command::Fill {
            dst: target.gpu_va + 2048,
            bytes: 64,
            pattern: 0xAA,
        }];

        c.bench_function("ums_submission/user_mode", |b| {
            b.iter_custom(|iters| {
                let d = timed_chunks(
                    &m,
                    &mut uq,
                    iters,
                    |uq| {
                        if let Err(e) = uq.submit(black_box(&user_batch)) {
                            panic!("user-mode submit: {e:?}; fault {:?}", m.fault());
                        }
                    },
                    |uq| {
                        assert_eq!(uq.completed(), uq.last_submitted(), "user-mode drain");
                        assert_eq!(uq.path(), SubmissionPath::UserMode, "no fallback");
                    },
                );
                user.push(iters, d);
                d
            });
        });

        c.bench_function("ums_submission/kernel_mode", |b| {
            b.iter_custom(|iters| {
                let d = timed_chunks(
                    &m,
                    &mut kq,
                    iters,
                    |kq| {
                        if let Err(e) = kq.submit(black_box(&kernel_batch)) {
                            panic!("kernel-mode submit: {e:?}; fault {:?}", m.fault());
                        }
                    },
                    |kq| assert_eq!(kq.completed(), kq.last_submitted(), "kernel-mode drain"),
                );
                kernel.push(iters, d);
                d
            });
        });

        // The same two measurements interleaved (ABBA order, chunks of CHUNK submissions), so
        // that a change of load on the machine hits both alike.
        for round in 0..INTERLEAVED_ROUNDS {
            let user_chunk = |uq: &mut UserQueue<SimKmt<'_>>| {
                timed_chunks(
                    &m,
                    uq,
                    CHUNK,
                    |uq| {
                        if let Err(e) = uq.submit(black_box(&user_batch)) {
                            panic!("user-mode submit: {e:?}");
                        }
                    },
                    |uq| assert_eq!(uq.completed(), uq.last_submitted()),
                )
            };
            let kernel_chunk = |kq: &mut KernelQueue<SimKmt<'_>>| {
                timed_chunks(
                    &m,
                    kq,
                    CHUNK,
                    |kq| {
                        if let Err(e) = kq.submit(black_box(&kernel_batch)) {
                            panic!("kernel-mode submit: {e:?}");
                        }
                    },
                    |kq| assert_eq!(kq.completed(), kq.last_submitted()),
                )
            };
            let (u, k) = if round % 2 == 0 {
                let u = user_chunk(&mut uq);
                (u, kernel_chunk(&mut kq))
            } else {
                let k = kernel_chunk(&mut kq);
                (user_chunk(&mut uq), k)
            };
            let ns = |d: Duration| d.as_secs_f64() * 1e9 / CHUNK as f64;
            interleaved.push((ns(u), ns(k)));
        }

        okk(&m, uq.close());
        okk(&m, kq.close());
        okk(&m, k.destroy_allocation(target.handle));
        ok(&m, m.exit_process(&p));
    }
    assert!(m.bugcheck().is_none());
    assert!(m.fault().is_none(), "{:?}", m.fault());
    let _ = m.stop_adapter(0);

    c.final_summary();

    let [(um, umean, _), (km, kmean, _)] = samples_table(
        "| submission of one FILL (step mode) | median ns | mean ns | submissions measured |",
        [
            ("user mode: UserQueue::submit (ring + doorbell)", &user),
            (
                "kernel mode: KernelQueue::submit (D3DKMTSubmitCommandToHwQueue, baseline)",
                &kernel,
            ),
        ],
        SAMPLES,
        1e9,
        0,
    );
    if km > 0.0 && kmean > 0.0 {
        println!(
            "ratio user / kernel: median {:.3}, mean {:.3} (kernel / user: median {:.1}, mean {:.1})",
            um / km,
            umean / kmean,
            km / um,
            kmean / umean
        );
    }
    let mut us: Vec<f64> = interleaved.iter().map(|p| p.0).collect();
    let mut ks: Vec<f64> = interleaved.iter().map(|p| p.1).collect();
    let mut rs: Vec<f64> = interleaved.iter().map(|p| p.0 / p.1).collect();
    let (mu, mk, mr) = (median(&mut us), median(&mut ks), median(&mut rs));
    println!(
        "interleaved, {INTERLEAVED_ROUNDS} rounds of {CHUNK} submissions each: user {mu:.0} ns, \
         kernel {mk:.0} ns (medians), median per-round ratio user / kernel {mr:.3}"
    );
}
