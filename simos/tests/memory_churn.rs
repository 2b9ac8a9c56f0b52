//! Memory churn: system memory given to fences and process structures goes back when they
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

/// After the churn the machine still serves: a new process is made, 8 MiB of system memory
/// can be had, and the process exits with no fault.
fn still_serves(m: &Machine) {
    let q = ok(m, m.create_process(0));
    eight_mib_fits(m);
    exits_clean(m, &q);
}

#[test]
fn fence_churn_returns_system_memory() {
    for mode in [Mode::Step, Mode::Threaded] {
        let m = machine(mode);
        let (p, k) = user_process(&m);
        // Warm: the process's first objects (its address space's tables, a packed page).
        let f = okk(&m, k.create_native_fence(0));
        okk(&m, k.destroy_native_fence(f.kmt));
        // And the page its monitored fences are packed into, which it keeps until it exits.
        let (h, _) = okk(&m, k.create_monitored_fence(0));
        okk(&m, k.destroy_monitored_fence(h));
        let start = m.memory().system_used();
        let free = m.system_memory_free();
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
        assert_eq!(
            after, start,
            "{mode:?}: system memory {start} -> {after} after fence churn"
        );
        assert_eq!(m.system_memory_free(), free);
        ok(&m, m.exit_process(&p));
        // A new process and an 8 MiB allocation still fit.
        still_serves(&m);
    }
}

#[test]
fn process_churn_returns_system_memory() {
    let m = machine(Mode::Step);
    let start = m.memory().system_used();
    for round in 0..200u64 {
        let (p, k) = user_process(&m);
        let buf = okk(&m, k.create_allocation(4096));
        let mut q = okk(&m, UserQueue::new(k, &config(0)));
        submit_wait(&m, &mut q, &[fill(&buf, 0, round)]);
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
    still_serves(&m);
}

/// Running the machine out of system memory with fences is an NTSTATUS to the
/// process that asked, never a halt; destroying them makes room again.
#[test]
fn fence_storage_exhaustion_is_a_status() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, k) = user_process(&m);
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

/// A process's user-mode queues come and go, each with its wait and signal log
/// buffers (mapped into the paging process, retired through VidMm): the machine's free system
/// memory comes back exactly, within the process and after it exits.
#[test]
fn queue_and_log_buffer_churn_returns_system_memory() {
    let m = machine(Mode::Step);
    let before = m.system_memory_free();
    let (p, k) = user_process(&m);
    let buf = okk(&m, k.create_allocation(4096));
    // Warm: the page the process packs its queues' progress fences into.
    drop(okk(&m, UserQueue::new(k, &config(0))));
    let start = m.system_memory_free();
    for round in 0..300u64 {
        let mut q = okk(&m, UserQueue::new(k, &config(0)));
        if round % 10 == 0 {
            submit_wait(&m, &mut q, &[fill(&buf, 0, round)]);
        }
        drop(q);
    }
    assert_eq!(m.system_memory_free(), start, "after 300 queues with logs");
    ok(&m, m.exit_process(&p));
    assert_eq!(m.system_memory_free(), before, "after the process exited");
    still_serves(&m);
}

/// Creating and destroying system-memory allocations never runs the machine's bus
/// addresses out. Freed ranges used to be left behind for good (a bump allocator over the
/// terabyte below `SYSMEM_LIMIT`): ~1,000 cycles of a 1 GiB allocation, nothing held at the
/// end, and every allocation on the machine failed (fences, processes, queues). Now the
/// allocator comes round to freed ranges; the churn goes on and memory is back exactly.
#[test]
fn allocation_churn_does_not_run_the_bus_out() {
    let m = started(MachineConfig::single(Mode::Step));
    let (p, k) = user_process(&m);
    let free = m.system_memory_free();
    // 1 GiB is the most one allocation may be (the driver's limit); the bus has 1 TiB.
    m.memory()
        .set_system_cap(m.memory().system_used() + (1 << 30) + 16 * MIB);
    let start = m.system_memory_free();
    // Created and destroyed, never mapped: the bus addresses churn, not the page tables
    // (under 24H2 a mapping is the UMD's own Map, in 4 KiB pages).
    let pdd =
        rvgpu_umd::kmt::allocation_private_data(1 << 30, rvgpu_umd::kmt::AllocationKind::Buffer);
    for i in 0..1_100u32 {
        match k.create_allocation_pdd(&pdd) {
            Ok(b) => okk(&m, k.destroy_allocation(b.handle)),
            Err(e) => panic!("cycle {i}: {e:?}, with nothing held"),
        }
    }
    assert_eq!(m.system_memory_free(), start);
    ok(&m, m.exit_process(&p));
    // A 16 MiB machine again: a process, its fence and queue, and 8 MiB all fit.
    m.memory()
        .set_system_cap(m.memory().system_used() + 16 * MIB);
    let (q, k) = user_process(&m);
    okk(&m, k.create_native_fence(0));
    drop(okk(&m, UserQueue::new(k, &config(0))));
    eight_mib_fits(&m);
    ok(&m, m.exit_process(&q));
    m.memory().set_system_cap(rvgpu_device::DEFAULT_SYSTEM_CAP);
    assert_eq!(m.system_memory_free(), free);
    no_fault(&m);
}

against_the_pe_image!(
    "allocation_churn_does_not_run_the_bus_out" =>
        "1,100 one-GiB create/destroy cycles through the x86-64 emulator take about 40 s; the \
         image's part in them is the allocation DDIs the other churn tests run on it",
);
