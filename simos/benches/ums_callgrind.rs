//! The workload for `scripts/callgrind-submission.sh` (issue 6, "Benchmarks": instructions per
//! user-mode submission, per kernel-mode submission, per doorbell connect). Not timed: run
//! under `valgrind --tool=callgrind --toggle-collect=<function>` it gives the instructions
//! executed inside that function (and what it calls), which the script divides by the counts
//! this program prints.
//!
//! A step-mode single-dGPU machine with the real driver, one process, engine 0. K operations
//! (`RVGPU_CALLGRIND_OPS`, default 1000) of the mode in `RVGPU_CALLGRIND_MODE`:
//!
//! - `user`: K × `UserQueue::submit` of one FILL (64-byte target); every 128 submissions the
//!   machine runs until idle (the GPU consumes, the rings never fill, no submission waits).
//! - `kernel` (baseline of `user`): K × `KernelQueue::submit` of the same FILL, drained the
//!   same way: one `D3DKMTSubmitCommandToHwQueue` → `DxgkDdiSubmitCommandToHwQueue` each.
//! - `victim`: one physical doorbell, 64 user-mode queues (doorbells created beforehand); K
//!   connects round-robin after a first, unvictimising one: every counted connect victimises
//!   the previous owner through `DxgkCbDisconnectDoorbell`.
//! - `free` (baseline of `victim`): 64 physical doorbells, 64 queues; K connects that each
//!   find a free physical doorbell; after every 64 the doorbells are destroyed and recreated
//!   (no connect DDI runs there).
//!
//! It prints `mode=<m> ops=<K> submits=<n> connects=<n> ddi_calls=<n>` for the whole process
//! (`ddi_calls`: calls of the KMD DDI the mode exercises, as the OS counted them from the
//! workload's point of view: one per kernel submission, one per connect).

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::{Machine, Mode, UmsEvent};
use rvgpu_umd::kmt::{Kmt, KmtHandle};
use rvgpu_umd::submit::{KernelQueue, QueueConfig, SubmissionPath, UserQueue};

const CHUNK: u64 = 128;
const QUEUES: usize = 64;

// The measured calls, each behind a function of its own that the script toggles collection
// on (`ums_callgrind::cg_*`): `KernelQueue::submit` is inlined into its caller, so it has no
// symbol of its own; the wrappers add a call and a return (a few instructions) to each figure.

/// `UserQueue::submit`.
#[inline(never)]
fn cg_user_submit(q: &mut UserQueue<SimKmt<'_>>, cmds: &[Command]) -> u64 {
    match q.submit(cmds) {
        Ok(v) => v,
        Err(e) => panic!("user-mode submit: {e:?}"),
    }
}

/// `KernelQueue::submit`.
#[inline(never)]
fn cg_kernel_submit(q: &mut KernelQueue<SimKmt<'_>>, cmds: &[Command]) -> u64 {
    match q.submit(cmds) {
        Ok(v) => v,
        Err(e) => panic!("kernel-mode submit: {e:?}"),
    }
}

/// `D3DKMTConnectDoorbell` (the simulated OS, the KMD's DDI and its callback).
#[inline(never)]
fn cg_connect(k: &SimKmt<'_>, doorbell: KmtHandle) {
    if let Err(e) = k.connect_doorbell(doorbell) {
        panic!("connect: {e:?}");
    }
}

fn callbacks(m: &Machine) -> usize {
    m.ums_events(0)
        .iter()
        .filter(|e| matches!(e, UmsEvent::CallbackDisconnect { .. }))
        .count()
}

fn main() {
    let k_ops: u64 = std::env::var("RVGPU_CALLGRIND_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let mode = std::env::var("RVGPU_CALLGRIND_MODE").unwrap_or_else(|_| "user".into());
    let (mut submits, mut connects, mut ddi_calls) = (0u64, 0u64, 0u64);
    match mode.as_str() {
        "user" | "kernel" => {
            let m = with_doorbells(Mode::Step, 4);
            let p = ok(&m, m.create_process(0));
            let k = m.kmt(&p);
            let t = okk(&m, k.create_allocation(4096));
            let batch = [Command::Fill {
                dst: t.gpu_va,
                bytes: 64,
                pattern: 0x55,
            }];
            let cfg = QueueConfig::default();
            if mode == "user" {
                let mut q = okk(&m, UserQueue::new(k, &cfg));
                while submits < k_ops {
                    for _ in 0..CHUNK.min(k_ops - submits) {
                        cg_user_submit(&mut q, &batch);
                        submits += 1;
                    }
                    ok(&m, m.run_until_idle());
                    assert_eq!(q.completed(), q.last_submitted());
                }
                assert_eq!(q.path(), SubmissionPath::UserMode);
                okk(&m, q.close());
            } else {
                let mut q = okk(&m, KernelQueue::new(k, &cfg));
                while submits < k_ops {
                    for _ in 0..CHUNK.min(k_ops - submits) {
                        cg_kernel_submit(&mut q, &batch);
                        submits += 1;
                    }
                    ok(&m, m.run_until_idle());
                    assert_eq!(q.completed(), q.last_submitted());
                }
                let kernel_submits = m
                    .ums_events(0)
                    .iter()
                    .filter(|e| matches!(e, UmsEvent::Submit { .. }))
                    .count() as u64;
                assert_eq!(kernel_submits, submits, "one DDI call per submission");
                ddi_calls = submits;
                okk(&m, q.close());
            }
            ok(&m, m.exit_process(&p));
            assert!(m.fault().is_none(), "{:?}", m.fault());
        }
        "victim" => {
            let m = with_doorbells(Mode::Step, 1);
            let p = ok(&m, m.create_process(0));
            let k = m.kmt(&p);
            let qs = (0..QUEUES).map(|_| raw_queue(&m, &k)).collect::<Vec<_>>();
            // First connect: the page is free (counted in ddi_calls, not in connects; the
            // script's K/2K difference cancels it).
            okk(&m, k.connect_doorbell(qs[0].doorbell));
            ddi_calls += 1;
            let mut next = 1usize;
            m.clear_ums_events(0);
            for _ in 0..k_ops {
                cg_connect(&k, qs[next].doorbell);
                next = (next + 1) % QUEUES;
                connects += 1;
                ddi_calls += 1;
            }
            assert_eq!(callbacks(&m) as u64, connects, "every connect victimised");
            drop(qs);
            ok(&m, m.exit_process(&p));
            assert!(m.fault().is_none(), "{:?}", m.fault());
        }
        "free" => {
            let m = with_doorbells(Mode::Step, QUEUES as u32);
            let p = ok(&m, m.create_process(0));
            let k = m.kmt(&p);
            let mut qs = (0..QUEUES).map(|_| raw_queue(&m, &k)).collect::<Vec<_>>();
            let mut next = 0usize;
            for _ in 0..k_ops {
                if next == QUEUES {
                    for q in &mut qs {
                        okk(&m, k.destroy_doorbell(q.doorbell));
                        q.doorbell = create_doorbell(&m, &k, q);
                    }
                    next = 0;
                }
                cg_connect(&k, qs[next].doorbell);
                next += 1;
                connects += 1;
                ddi_calls += 1;
            }
            assert_eq!(callbacks(&m), 0, "nothing victimised");
            drop(qs);
            ok(&m, m.exit_process(&p));
            assert!(m.fault().is_none(), "{:?}", m.fault());
        }
        other => panic!("RVGPU_CALLGRIND_MODE={other}: expected user, kernel, victim or free"),
    }
    println!("mode={mode} ops={k_ops} submits={submits} connects={connects} ddi_calls={ddi_calls}");
}
