//! The workload for `scripts/callgrind-submission.sh` (instructions per
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
//! - `floor` (the floor of `user`): the same ring words as `user` (the FILL and the
//!   closing packet, pre-encoded but for the value word), the last-queued value, the write pointer and the
//!   doorbell store with its status read, stored directly into a queue built from the thunks
//!   (`cg_floor_submit`): what any user-mode submission must do, with the same doorbell trap.
//! - `cpusignal`: K × `Kmt::signal_native_from_cpu` of a native fence to its next value
//!   (`cg_cpu_signal`, the Rust UMD's CPU fence signal: the counterpart of the DLL's
//!   `rvgpu_fence_signal`); `submits` counts them.
//! - `victim`: one physical doorbell, 64 user-mode queues (doorbells created beforehand; other
//!   numbers with `RVGPU_CALLGRIND_DOORBELLS` and `RVGPU_CALLGRIND_QUEUES`, the scaling table);
//!   K connects round-robin after a first round that connects every queue once:
//!   every counted connect victimises a holder through `DxgkCbDisconnectDoorbell`.
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
use rvgpu_hw::queue::RingControl;
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::kmt::{SimDoorbell, SimMem};
use rvgpu_simos::{Machine, Mode, UmsEvent};
use rvgpu_umd::kmt::{AllocationCpu, DoorbellCpu};
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

/// The floor of one user-mode submission: `words` into the ring at the write pointer (word
/// `value_at`, the closing packet's value, replaced by `value`), the last-queued value, the
/// write pointer, the doorbell and its status.
#[inline(never)]
fn cg_floor_submit(
    ring: &SimMem,
    control: &SimMem,
    db: &SimDoorbell,
    (words, value_at): (&[u64], usize),
    wptr: &mut u64,
    value: u64,
    ring_word: Option<u64>,
) {
    for (i, w) in words.iter().enumerate() {
        let w = if i == value_at { value } else { *w };
        ring.store(*wptr & 4095, w);
        *wptr = wptr.wrapping_add(8);
    }
    db.set_last_queued(value);
    control.store(RingControl::WRITE_PTR, *wptr);
    db.ring(ring_word.unwrap_or(*wptr));
    std::hint::black_box(db.status());
}

/// `Kmt::signal_native_from_cpu` (`D3DKMTSignalSynchronizationObjectFromCpu`).
#[inline(never)]
fn cg_cpu_signal(k: &SimKmt<'_>, fence: KmtHandle, value: u64) {
    if let Err(e) = k.signal_native_from_cpu(fence, value) {
        panic!("CPU signal: {e:?}");
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
        "cpusignal" => {
            let m = with_doorbells(Mode::Step, 4);
            let p = ok(&m, m.create_process(0));
            let k = m.kmt(&p);
            let f = okk(&m, k.create_native_fence(0));
            while submits < k_ops {
                submits += 1;
                cg_cpu_signal(&k, f.kmt, submits);
            }
            okk(&m, k.destroy_native_fence(f.kmt));
            ok(&m, m.exit_process(&p));
            assert!(m.fault().is_none(), "{:?}", m.fault());
        }
        "floor" => {
            let m = with_doorbells(Mode::Step, 4);
            let p = ok(&m, m.create_process(0));
            let k = m.kmt(&p);
            let t = okk(&m, k.create_allocation(4096));
            let fill = Command::Fill {
                dst: t.gpu_va,
                bytes: 64,
                pattern: 0x55,
            };
            let q = raw_queue(&m, &k);
            // The closing packet the UMD writes: PROGRESS where the OS gave the queue its
            // progress fence, else the conditional signal of a native fence of its own (24H2).
            const MARK: u64 = 0x5EED_0F00_0000_0001;
            let own = (m.hw_queue_progress_fence(0, q.queue).is_none())
                .then(|| okk(&m, k.create_native_fence(0)));
            let closing = match &own {
                None => Command::Progress {
                    irq: true,
                    value: MARK,
                },
                Some(f) => f.signal(MARK),
            };
            let mut words = [0u64; 16];
            let n = fill.encode(&mut words).expect("FILL encodes");
            let cw = closing
                .encode(&mut words[n..])
                .expect("the closing packet encodes");
            let value_at = n + words[n..n + cw]
                .iter()
                .position(|w| *w == MARK)
                .expect("the closing packet carries its value");
            let words = (&words[..n + cw], value_at);
            okk(&m, k.destroy_doorbell(q.doorbell));
            let (db, pdd) = create_doorbell_pdd(&m, &k, &q);
            okk(&m, k.connect_doorbell(db.handle));
            // The KMD says what the doorbell is rung with (0: the write pointer).
            let ring_word = (pdd.ring_value != 0).then_some(u64::from(pdd.queue_id));
            let mut wptr = 0u64;
            // What the 4 KiB ring holds unconsumed (85 batches closed by PROGRESS, 56 by a
            // signal), at most half the chunk.
            let per_run = (4096 / (8 * words.0.len() as u64) - 1).min(CHUNK / 2);
            while submits < k_ops {
                for _ in 0..per_run.min(k_ops - submits) {
                    submits += 1;
                    cg_floor_submit(
                        &q.ring.mem,
                        &q.control.mem,
                        &db.cpu,
                        words,
                        &mut wptr,
                        submits,
                        ring_word,
                    );
                }
                ok(&m, m.run_until_idle());
                assert_eq!(q.control.mem.load(RingControl::READ_PTR), wptr, "consumed");
            }
            okk(&m, k.destroy_doorbell(db.handle));
            ok(&m, m.exit_process(&p));
            assert!(m.fault().is_none(), "{:?}", m.fault());
        }
        "victim" => {
            let env = |name: &str, default: usize| {
                std::env::var(name)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(default)
            };
            let queues = env("RVGPU_CALLGRIND_QUEUES", QUEUES);
            let pages = env("RVGPU_CALLGRIND_DOORBELLS", 1);
            assert!(queues > pages, "every connect must victimise");
            let m = with_doorbells(Mode::Step, pages as u32);
            let p = ok(&m, m.create_process(0));
            let k = m.kmt(&p);
            let qs = (0..queues).map(|_| raw_queue(&m, &k)).collect::<Vec<_>>();
            // A first round connects every queue once (counted in ddi_calls, not in connects;
            // the script's K/2K difference cancels it): every page is held from then on.
            for q in &qs {
                okk(&m, k.connect_doorbell(q.doorbell));
                ddi_calls += 1;
            }
            let mut next = 0usize;
            m.clear_ums_events(0);
            for _ in 0..k_ops {
                cg_connect(&k, qs[next].doorbell);
                next = (next + 1) % queues;
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
