//! Issue 45 hole 3: system memory given to fences and process structures goes back when they
//! go. A process that creates and destroys fences (native, shareable, monitored), and processes
//! that come and go with queues, leave the machine's system memory where it started, so that a
//! 16 MiB machine still has room for a new process and an 8 MiB allocation afterwards.

mod common;

use common::*;
use rvgpu_simos::{Machine, MachineConfig, Mode};
use rvgpu_umd::kmt::Kmt;
use rvgpu_umd::submit::UserQueue;

const MIB: u64 = 1 << 20;

fn machine(mode: Mode) -> Machine {
    let m = started(MachineConfig::single(mode));
    // What is in use once the adapter runs, plus 16 MiB for the processes.
    let base = m.memory().system_used();
    m.memory().set_system_cap(base + 16 * MIB);
    m
}

/// 8 MiB of system memory can still be had.
fn eight_mib_fits(m: &Machine) {
    let big = m
        .memory()
        .alloc_system(8 * MIB, 4096)
        .expect("8 MiB of system memory after the churn");
    assert!(m.memory().free_system(big.bus_addr));
}

#[test]
fn issue_45_fence_churn_returns_system_memory() {
    for mode in [Mode::Step, Mode::Threaded] {
        let m = machine(mode);
        let p = ok(&m, m.create_process(0));
        let k = m.kmt(&p);
        // Warm: the process's first objects (its address space's tables, a packed page).
        let f = okk(&m, k.create_native_fence(0));
        okk(&m, k.destroy_native_fence(f.kmt));
        let start = m.memory().system_used();
        // Step mode: more than 16 MiB of fence pages if none came back (a shareable fence
        // has two pages of its own); threaded mode (slower per fence) fewer, as any growth
        // fails the check below.
        let n = if mode == Mode::Step { 2_100u64 } else { 300 };
        for i in 0..n {
            let f = match i % 3 {
                0 => okk(&m, k.create_native_fence(i)),
                _ => okk(&m, k.create_shareable_native_fence(i)),
            };
            okk(&m, k.destroy_native_fence(f.kmt));
            if i % 4 == 0 {
                let (h, _) = okk(&m, k.create_monitored_fence(i));
                okk(&m, k.destroy_monitored_fence(h));
            }
        }
        let after = m.memory().system_used();
        // Monitored fences' pages stay mapped in their process until it exits; at most one.
        assert!(
            after <= start + 4096,
            "{mode:?}: system memory {start} -> {after} after fence churn"
        );
        ok(&m, m.exit_process(&p));
        // A new process and an 8 MiB allocation still fit.
        let q = ok(&m, m.create_process(0));
        eight_mib_fits(&m);
        ok(&m, m.exit_process(&q));
        no_fault(&m);
    }
}

#[test]
fn issue_45_process_churn_returns_system_memory() {
    let m = machine(Mode::Step);
    let start = m.memory().system_used();
    for round in 0..200u64 {
        let p = ok(&m, m.create_process(0));
        let k = m.kmt(&p);
        let buf = okk(&m, k.create_allocation(4096));
        let mut q = okk(&m, UserQueue::new(k, &config(0)));
        let v = okk(&m, q.submit(&[fill(&buf, 0, round)]));
        okk(&m, q.wait(v));
        let (_h, _) = okk(&m, k.create_monitored_fence(round));
        let _f = okk(&m, k.create_native_fence(round));
        drop(q);
        // Exit with everything still open: the OS closes it all.
        ok(&m, m.exit_process(&p));
    }
    let after = m.memory().system_used();
    assert_eq!(
        after, start,
        "system memory after 200 processes came and went"
    );
    let _q = ok(&m, m.create_process(0));
    eight_mib_fits(&m);
    no_fault(&m);
}

/// Issue 45: running the machine out of system memory with fences is an NTSTATUS to the
/// process that asked, never a halt; destroying them makes room again.
#[test]
fn issue_45_fence_storage_exhaustion_is_a_status() {
    let m = started(MachineConfig::single(Mode::Step));
    let p = ok(&m, m.create_process(0));
    let k = m.kmt(&p);
    okk(&m, k.create_native_fence(0));
    // Room for a few more pages only.
    m.memory()
        .set_system_cap(m.memory().system_used() + 16 * 4096);
    let mut fences = Vec::new();
    let err = loop {
        match k.create_shareable_native_fence(0) {
            Ok(f) => fences.push(f),
            Err(e) => break e,
        }
        assert!(fences.len() < 64, "no limit");
    };
    assert_eq!(err.0, rvgpu_ddi::ntstatus::STATUS_NO_MEMORY);
    if let Err(e) = k.create_monitored_fence(0) {
        assert_eq!(e.0, rvgpu_ddi::ntstatus::STATUS_NO_MEMORY);
    }
    no_fault(&m);
    // Memory comes back from elsewhere (the simulated VidMm's paging still allocates, so the
    // destroys below need a little room); the fences go, and their pages with them.
    m.memory().set_system_cap(u64::MAX);
    let full = m.memory().system_used();
    for f in fences {
        okk(&m, k.destroy_native_fence(f.kmt));
    }
    assert!(m.memory().system_used() < full, "their pages went back");
    okk(&m, k.create_shareable_native_fence(0));
    no_fault(&m);
}
