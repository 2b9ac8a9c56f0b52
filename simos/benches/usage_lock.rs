//! Instructions per CPU lock of a `rvgpu_umd::usage::Buffer`, as
//! ratios to one unlocked store to the buffer's mapped memory (`SimMem::store`) counted in
//! the same run. Counted by callgrind, as `scripts/callgrind-submission.sh` does for
//! `ums_callgrind`: each figure is `--toggle-collect=<wrapper>` over K and 2K operations,
//! (Ir(2K) - Ir(K)) / (n(2K) - n(K)), which cancels one-time costs. Here the bench drives
//! valgrind itself, so one command gives the table:
//!
//! - `store`: one `SimMem::store` to a mapped buffer, no lock (the baseline);
//! - `idle`: WRITE lock + unlock of an idle buffer (x64, I/O-coherent: no thunk at all);
//! - `busy`: WRITE | DO_NOT_WAIT lock of a buffer a queued FILL writes: `WasStillDrawing`;
//! - `discard`: DISCARD lock of such a busy buffer, renamed onto a spare backing;
//! - `discard_new`: the same on a buffer without a spare: a new backing
//!   (`D3DKMTCreateAllocation2` + `D3DKMTLock2`);
//! - `idle_nc`: WRITE lock + unlock of an idle cached buffer on the non-coherent ARM64
//!   platform (`D3DKMTInvalidateCache` at unlock, AL-06).
//!
//! For each, the share spent in the simulated OS's thunks (`SimKmt`'s `Kmt` methods and what
//! they call) is given apart from the UMD's own (see [`figure`]).
//!
//! `cargo bench -p rvgpu-simos --bench usage_lock` (K = 1000; `-- --quick`: K = 100;
//! `-- --test`, as CI runs every bench: each workload once, small, without valgrind). Without
//! valgrind it says so and runs the workloads only. The GPU is in step mode and runs only
//! outside the measured calls.

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use std::process::Command as Process;

use rvgpu_hw::pdd::ALLOCATION_CPU_CACHED;
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::{Machine, MachineConfig, Mode};
use rvgpu_umd::kmt::AllocationCpu;
use rvgpu_umd::submit::UserQueue;
use rvgpu_umd::usage::{self, Batch, Buffer, LockError, LockFlags, Timeline};

const MODES: [&str; 6] = ["store", "idle", "busy", "discard", "discard_new", "idle_nc"];

// The measured calls, each behind a function of its own for `--toggle-collect`.

/// One unlocked store to mapped memory.
#[inline(never)]
fn cg_store(mem: &SimMem, off: u64, v: u64) {
    mem.store(off, v);
}

/// Lock and unlock for writing (the buffer is idle).
#[inline(never)]
fn cg_lock_unlock(b: &Buffer<SimMem>, k: &SimKmt<'_>, tl: &[&dyn Timeline]) {
    if let Err(e) = b.lock(k, LockFlags::WRITE, tl) {
        panic!("idle lock: {e:?}");
    }
    if let Err(e) = b.unlock(k) {
        panic!("unlock: {e:?}");
    }
}

/// A DO_NOT_WAIT write lock (the buffer is busy).
#[inline(never)]
fn cg_lock_busy(b: &Buffer<SimMem>, k: &SimKmt<'_>, tl: &[&dyn Timeline]) -> LockError {
    match b.lock(k, LockFlags::WRITE.union(LockFlags::DO_NOT_WAIT), tl) {
        Err(e) => e,
        Ok(_) => panic!("a busy buffer was mapped"),
    }
}

/// A DISCARD lock (the buffer is busy: renamed).
#[inline(never)]
fn cg_discard(b: &Buffer<SimMem>, k: &SimKmt<'_>, tl: &[&dyn Timeline]) -> SimMem {
    match b.lock(k, LockFlags::DISCARD, tl) {
        Ok(mem) => mem,
        Err(e) => panic!("discard: {e:?}"),
    }
}

/// The wrapper a mode measures.
fn wrapper(mode: &str) -> &'static str {
    match mode {
        "store" => "usage_lock::cg_store*",
        "idle" | "idle_nc" => "usage_lock::cg_lock_unlock*",
        "busy" => "usage_lock::cg_lock_busy*",
        _ => "usage_lock::cg_discard*",
    }
}

/// Makes `b` busy: a FILL of it queued (the step-mode GPU does not run it until told to).
fn make_busy(m: &Machine, q: &mut UserQueue<SimKmt<'_>>, b: &Buffer<SimMem>) {
    let mut batch = Batch::new();
    okk(m, batch.fill(b, 0, 64, 0x5a5a));
    okk(m, usage::submit(q, batch));
}

/// Runs `ops` operations of `mode`; returns how many ran.
fn workload(mode: &str, ops: u64) -> u64 {
    let cfg = if mode == "idle_nc" {
        MachineConfig::arm64_non_coherent(Mode::Step)
    } else {
        MachineConfig::single(Mode::Step)
    };
    let m = started(cfg);
    let p = ok(&m, m.create_process(0));
    let k = m.kmt(&p);
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    let extra = if mode == "idle_nc" {
        ALLOCATION_CPU_CACHED
    } else {
        0
    };
    let b = okk(&m, Buffer::new(&k, 4096, extra));
    let mut n = 0u64;
    match mode {
        "store" => {
            let mem = okk(&m, b.lock(&k, LockFlags::WRITE, &[&q]));
            okk(&m, b.unlock(&k));
            for i in 0..ops {
                cg_store(&mem, (i % 512) * 8, i);
                n += 1;
            }
            assert_eq!(mem.load(((ops - 1) % 512) * 8), ops - 1);
        }
        "idle" | "idle_nc" => {
            for _ in 0..ops {
                cg_lock_unlock(&b, &k, &[&q]);
                n += 1;
            }
            assert_eq!(b.stats().waits, 0);
        }
        "busy" => {
            make_busy(&m, &mut q, &b);
            for _ in 0..ops {
                assert_eq!(cg_lock_busy(&b, &k, &[&q]), LockError::WasStillDrawing);
                n += 1;
            }
            ok(&m, m.run_until_idle());
        }
        "discard" => {
            for _ in 0..ops {
                make_busy(&m, &mut q, &b);
                cg_discard(&b, &k, &[&q]);
                okk(&m, b.unlock(&k));
                ok(&m, m.run_until_idle());
                n += 1;
            }
            assert_eq!(b.stats().renames, ops);
            // After the first rename the old backing comes back as the spare: two in all.
            assert_eq!(b.stats().backings, 2);
        }
        "discard_new" => {
            for _ in 0..ops {
                let fresh = okk(&m, Buffer::new(&k, 4096, 0));
                make_busy(&m, &mut q, &fresh);
                cg_discard(&fresh, &k, &[&q]);
                okk(&m, fresh.unlock(&k));
                assert_eq!(fresh.stats().backings, 2);
                ok(&m, m.run_until_idle());
                okk(&m, fresh.destroy(&k, &[&q]));
                n += 1;
            }
        }
        other => panic!("mode {other}: expected one of {MODES:?}"),
    }
    okk(&m, b.destroy(&k, &[&q]));
    okk(&m, q.close());
    ok(&m, m.exit_process(&p));
    no_fault(&m);
    n
}

/// The simulated OS's thunks (`SimKmt`'s `Kmt` methods, which do not call each other).
const THUNKS: &str = "*SimKmt as rvgpu_umd::kmt::Kmt>::*";

/// One callgrind run of `mode` with `ops` operations, collecting while inside one of
/// `toggles` (callgrind flips collection on entering and leaving each): (instructions,
/// operations).
fn callgrind(mode: &str, ops: u64, toggles: &[&str], dir: &std::path::Path) -> Option<(f64, f64)> {
    let exe = std::env::current_exe().ok()?;
    let file = dir.join(format!("cg.{mode}.{ops}.{}", toggles.len()));
    let mut cmd = Process::new("valgrind");
    cmd.arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", file.display()));
    for t in toggles {
        cmd.arg(format!("--toggle-collect={t}"));
    }
    let out = cmd
        .arg(&exe)
        .env("RVGPU_USAGE_LOCK_MODE", mode)
        .env("RVGPU_USAGE_LOCK_OPS", ops.to_string())
        .output()
        .ok()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let n: f64 = stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix("ops="))?
        .parse()
        .ok()?;
    let text = std::fs::read_to_string(&file).ok()?;
    let total: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("summary:"))?
        .trim()
        .parse()
        .ok()?;
    Some((total, n))
}

/// Instructions per operation with `toggles`: the K/2K difference.
fn per_op(mode: &str, k: u64, toggles: &[&str], dir: &std::path::Path) -> Option<f64> {
    let a = callgrind(mode, k, toggles, dir)?;
    let b = callgrind(mode, 2 * k, toggles, dir)?;
    Some((b.0 - a.0) / (b.1 - a.1))
}

/// (total, simulated OS share) per operation of `mode`. The wrapper alone gives the total
/// T; the thunks alone give C = OS inside the wrapper + OS outside it (setup calls); both
/// together give B = T - inside + outside, as a thunk entered inside the wrapper turns
/// collection off and one entered outside turns it on. So inside = (C - B + T) / 2.
fn figure(mode: &str, k: u64, dir: &std::path::Path) -> Option<(f64, f64)> {
    let w = wrapper(mode);
    let t = per_op(mode, k, &[w], dir)?;
    let b = per_op(mode, k, &[w, THUNKS], dir)?;
    let c = per_op(mode, k, &[THUNKS], dir)?;
    Some((t, (c - b + t) / 2.0))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Ok(mode) = std::env::var("RVGPU_USAGE_LOCK_MODE") {
        let ops = std::env::var("RVGPU_USAGE_LOCK_OPS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1000);
        let n = workload(&mode, ops);
        println!("mode={mode} ops={n}");
        return;
    }
    if args.iter().any(|a| a == "--test") {
        for mode in MODES {
            workload(mode, 8);
        }
        println!("usage_lock: every workload ran (smoke run, nothing measured)");
        return;
    }
    let k = if args.iter().any(|a| a == "--quick") {
        100
    } else {
        1000
    };
    if Process::new("valgrind").arg("--version").output().is_err() {
        for mode in MODES {
            workload(mode, 8);
        }
        println!("usage_lock: valgrind (callgrind) is not installed; the workloads ran, nothing measured");
        return;
    }
    let dir = std::env::temp_dir().join(format!("usage_lock.{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        println!("usage_lock: cannot create {}", dir.display());
        return;
    }
    let mut rows = Vec::new();
    for mode in MODES {
        let Some((total, os)) = figure(mode, k, &dir) else {
            println!("usage_lock: callgrind run of {mode} failed");
            let _ = std::fs::remove_dir_all(&dir);
            return;
        };
        rows.push((mode, total, os));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let base = rows[0].1;
    println!("usage_lock: instructions per operation (callgrind, K={k} and 2K)");
    println!("| operation | total | simulated OS | UMD | total / store |");
    println!("|---|---:|---:|---:|---:|");
    for (mode, total, os) in rows {
        let what = match mode {
            "store" => "unlocked store to mapped memory (baseline)",
            "idle" => "lock + unlock, idle buffer",
            "busy" => "DO_NOT_WAIT lock, busy buffer (WasStillDrawing)",
            "discard" => "DISCARD lock, busy buffer, spare backing",
            "discard_new" => "DISCARD lock, busy buffer, new backing",
            _ => "lock + unlock, idle cached buffer, non-coherent ARM64",
        };
        println!(
            "| {what} | {total:.1} | {os:.1} | {:.1} | {:.1} |",
            total - os,
            total / base
        );
    }
}
