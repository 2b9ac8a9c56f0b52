//! Memory churn: system memory given to fences and process structures goes back when they
//! go. A process that creates and destroys fences (native, shareable, monitored), and processes
//! that come and go with queues, leave the machine's system memory where it started, so that a
//! 16 MiB machine still has room for a new process and an 8 MiB allocation afterwards.

mod common;

use common::*;
use rvgpu_hw::addr::BusAddr;
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
    assert!(m.memory().free_system(BusAddr::new(big.bus_addr)));
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

/// UM-17: more process lifetimes than the D3DKMT handle space has runs of handle values
/// (`rvgpu_simos::ob::D3DKMT_HANDLES_PER_RUN` values each, 4,095 runs): each process's values go
/// with it, so no creation is refused however many processes came and went before.
#[test]
fn um_17_process_lifetimes_beyond_the_handle_runs_are_never_refused() {
    let m = started(MachineConfig::single(Mode::Step));
    let runs = ((1u64 << 24) - 1) / u64::from(rvgpu_simos::ob::D3DKMT_HANDLES_PER_RUN);
    for i in 0..runs + 100 {
        let p = m
            .create_process(0)
            .unwrap_or_else(|e| panic!("lifetime {i}: create refused: {e}"));
        ok(&m, m.exit_process(&p));
    }
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

/// UM-17, UM-18: thousands of process lifetimes, each ending by a kill or an exit with a FILL
/// still in flight on its user-mode queue (a kernel-mode queue, a context and an opened shared
/// native fence beside it), some set up inside a window where the driver's pool allocations
/// fail. No creation outside a window is refused, every GPU process the OS made is destroyed (the driver never answers
/// `DxgkDdiDestroyProcess` with a failure, which 24H2 would only log), and system memory is
/// back where it started.
#[test]
fn um_17_um_18_lifetimes_with_work_in_flight_return_every_process_and_byte() {
    use rvgpu_simos::{LowResources, NativeFenceDesc};
    use rvgpu_umd::submit::KernelQueue;
    // The counts below catch a single leaked process or page; the PE image runs each
    // lifetime in the emulator, so fewer there.
    let pe = matches!(
        rvgpu_simos::pe::DriverBuild::from_env(),
        rvgpu_simos::pe::DriverBuild::Pe(_)
    );
    let lifetimes = if pe { 150u64 } else { 1_500 };
    let m = started(MachineConfig::single(Mode::Step));
    one_user_mode_submission(&m);
    let memory = m.memory().system_used();
    let hub = ok(&m, m.create_process(0));
    let shared = NativeFenceDesc {
        shareable: true,
        ..NativeFenceDesc::default()
    };
    let fence = ok(&m, m.create_native_fence(0, hub.pid, shared));
    let processes = m.gpu_process_count(0);
    let tables = m.page_tables_in_use(0);
    let mut windows = 0u64;
    for i in 0..lifetimes {
        // Every seventh lifetime is set up under Driver Verifier's low-resources simulation.
        let window = i % 7 == 3;
        if window {
            m.set_low_resources(LowResources::FailNth(i % 41));
            windows += 1;
        }
        let p = match m.create_process(0) {
            Ok(p) => p,
            Err(_) if window => {
                m.set_low_resources(LowResources::Off);
                continue;
            }
            Err(e) => panic!("lifetime {i}: create refused outside a window: {e}"),
        };
        let k = m.kmt(&p);
        let setup = (|| {
            let buf = k
                .create_allocation(4096)
                .map_err(|e| format!("allocation: {e:?}"))?;
            let q = UserQueue::new(k, &config((i % 2) as u32))
                .map_err(|e| format!("user-mode queue: {e:?}"))?;
            let ctx = k.create_context(0).map_err(|e| format!("context: {e:?}"))?;
            let f = m
                .open_native_fence(&fence, p.pid)
                .map_err(|e| format!("open: {e}"))?;
            let kq =
                KernelQueue::new(k, &config(0)).map_err(|e| format!("kernel-mode queue: {e:?}"))?;
            let mf = m
                .create_monitored_fence(0, p.pid, 0)
                .map_err(|e| format!("monitored fence: {e}"))?;
            Ok::<_, String>((buf, q, ctx, f, kq, mf))
        })();
        m.set_low_resources(LowResources::Off);
        let (buf, mut q, _ctx, _f, kq, mf) = match setup {
            Ok(s) => s,
            Err(e) => {
                assert!(window, "lifetime {i}: set-up refused outside a window: {e}");
                ok(&m, m.exit_process(&p));
                continue;
            }
        };
        // The machine's own monitored fence has no D3DKMT handle of the process: its
        // creator destroys it, as the chaos run's workers do.
        ok(&m, m.destroy_monitored_fence(&mf));
        assert!(
            q.submit(&[fill(&buf, 64, i)]).is_ok(),
            "lifetime {i}: submit"
        );
        if i % 2 == 0 {
            ok(&m, m.kill_process(&p));
        } else {
            ok(&m, m.exit_process(&p));
        }
        // The process is gone: its queues' destructors must not call into it.
        std::mem::forget(q);
        std::mem::forget(kq);
    }
    ok(&m, m.destroy_native_fence(&fence));
    ok(&m, m.exit_process(&hub));
    assert_eq!(
        m.gpu_process_count(0),
        processes - 1,
        "GPU processes after {lifetimes} lifetimes ({windows} in low-resources windows)"
    );
    let refused: Vec<_> = m
        .triage_log(0)
        .into_iter()
        .filter(|l| l.contains("DxgkDdiDestroyProcess"))
        .collect();
    assert!(refused.is_empty(), "the driver refused: {refused:?}");
    assert_eq!(m.memory().system_used(), memory, "system memory");
    // The tables of what every lifetime mapped go back with it, the paging process's
    // included: kept, they would fill the page-table segment within a few thousand lifetimes.
    assert!(
        m.page_tables_in_use(0) <= tables + 2,
        "page tables: {tables} before, {} after {lifetimes} lifetimes",
        m.page_tables_in_use(0)
    );
    no_fault(&m);
    still_serves(&m);
}

/// Threaded: a paging buffer is freed before VidSch publishes its completion, so a thread that
/// sees the node's last completed fence reach it finds the OS's system memory as before the
/// paging, every time (were it freed after, a measure could fall in between).
#[test]
fn tdr_04_a_paging_buffer_seen_completed_is_already_freed() {
    let m = machine(Mode::Threaded);
    let (p, k) = user_process(&m);
    let t = okk(&m, k.create_allocation(4096));
    let va = rvgpu_hw::addr::GpuVa::new(t.gpu_va);
    // Warm: the first paging maps what later ones reuse (the aperture's tables).
    let ids = ok(&m, m.page_in(&p, 0, va, 4096, 1));
    run_until(&m, "the first paging", |m| {
        m.legacy_fences(0, 0).1 >= ids.last().copied().unwrap_or(0)
    });
    for round in 0..300u32 {
        let before = m.memory().system_used();
        let ids = ok(&m, m.page_in(&p, 0, va, 4096, round));
        let last = ids.last().copied().unwrap_or(0);
        // Spin as a reader on another CPU would: the first look that sees C reach it measures.
        while m.legacy_fences(0, 0).1 < last {
            std::hint::spin_loop();
        }
        let after = m.memory().system_used();
        assert_eq!(
            after, before,
            "round {round}: system memory with the paging done"
        );
    }
    exits_clean(&m, &p);
}
