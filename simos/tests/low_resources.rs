//! Fallible allocation everywhere a DDI can allocate: Driver Verifier's systematic
//! low-resources simulation, swept over every pool allocation of the driver.
//!
//! For each operation a user-mode process (or PnP) can trigger, and for N = 0, 1, 2, ... the
//! simulated OS fails the driver's N-th pool allocation (`Machine::set_low_resources`,
//! docs/robustness.md), once alone and once with every later one (the pool stays exhausted, so
//! a failure path that allocates is caught too), until the operation makes no more allocations
//! than N. At every N:
//! - the operation fails with the DDI's no-memory status (STATUS_NO_MEMORY for object
//!   creation, STATUS_INSUFFICIENT_RESOURCES for AddDevice/StartDevice) and the machine has
//!   neither bug-checked nor hit a simulation check;
//! - the OS sees no object more than before, and the same operation retried without the
//!   failure succeeds (nothing was left half-changed);
//! - after the process exits and the adapter is stopped, removed and the driver unloaded
//!   (Verifier's leak checks run there), the test thread's heap is back to where it was before
//!   the machine was built: nothing leaked, in the driver or the simulated OS.
//!
//! Before the driver's allocations were fallible, none of them was an allocation point the
//! simulation could fail (the first assertion of every sweep) and a real pool failure was a
//! bug check.
//!
//! The DPC path is swept too, with every allocation failing: it makes none, and a submission
//! still completes through ISR and DPC.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::*;
use rvgpu_simos::adapter::kernel;
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::{LowResources, Machine, MachineConfig, Mode, NativeFenceDesc, SimError};
use rvgpu_umd::kmt::{AllocationCpu, Kmt, NtStatus};
use rvgpu_umd::submit::{KernelQueue, QueueConfig};
use zerocopy::IntoBytes;

const STATUS_NO_MEMORY: i32 = 0xC000_0017_u32 as i32;
const STATUS_INSUFFICIENT_RESOURCES: i32 = 0xC000_009A_u32 as i32;

// ---------------------------------------------------------------------------------------------
// Heap accounting of the test thread (step mode: the machine has no threads of its own).

thread_local! {
    static LIVE_BYTES: Cell<isize> = const { Cell::new(0) };
}

struct Counting;

fn account(delta: isize) {
    // `try_with`: during thread teardown the slot may be gone; those frees are not ours.
    let _ = LIVE_BYTES.try_with(|c| c.set(c.get().wrapping_add(delta)));
}

// SAFETY: forwards to `System` unchanged; the bookkeeping neither allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract, forwarded.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            account(layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract, forwarded.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            account(layout.size() as isize);
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract, forwarded.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            account(new_size as isize - layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        account(-(layout.size() as isize));
        // SAFETY: same contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// This thread's live heap bytes, less what the simulation leaves on purpose: every BAR
/// mapping leaves its trap window allocated for the life of the process (addresses are never
/// reused), [`kernel::TRAP_WINDOW_RESIDUE`] bytes each.
///
/// Against the PE image (`RVGPU_DRIVER=pe`) the driver's pool is not the host heap but the
/// simulated kernel's `ExAllocatePool2`, which tracks every block: a block still allocated
/// after `DxgkDdiUnload` is Verifier's 0xC4/0x62 at `shut_down`, an exact leak check, while the
/// host heap then also holds the emulator's own bookkeeping (pages it mapped), which varies.
/// So the heap count is the Linux build's check only.
fn live_bytes() -> isize {
    if rvgpu_simos::pe::DriverBuild::from_env() != rvgpu_simos::pe::DriverBuild::Linux {
        return 0;
    }
    let residue = kernel::trap_windows_mapped().saturating_mul(kernel::TRAP_WINDOW_RESIDUE as u64);
    LIVE_BYTES.with(Cell::get) - residue as isize
}

/// The simulated OS keeps process-wide registries (trap windows, DMA ranges, adapter handles)
/// whose nodes are allocated and freed by whichever thread touches them: the tests of this
/// file run one at a time so that the per-thread count sees only its own machine.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

// ---------------------------------------------------------------------------------------------
// The sweep.

fn status_of(e: NtStatus) -> i32 {
    e.0
}

/// Stops, removes and unloads (Verifier's unload checks run), then drops the machine.
fn shut_down(mut m: Machine, what: &str) {
    no_fault(&m);
    if let Err(e) = m.stop_adapter(0) {
        panic!("{what}: stop: {e}; {}", diagnostics(&m));
    }
    if let Err(e) = m.remove_adapter(0) {
        panic!("{what}: remove: {e}; {}", diagnostics(&m));
    }
    if let Err(e) = m.unload() {
        panic!("{what}: unload: {e}; {}", diagnostics(&m));
    }
    no_fault(&m);
}

/// The two ways allocation `n` fails: alone (Verifier's systematic simulation: the pool
/// recovers at once) and with every later one (the pool stays exhausted, so the failure path
/// itself must not allocate).
fn modes(n: u64) -> [LowResources; 2] {
    [LowResources::FailNth(n), LowResources::FailFrom(n)]
}

/// The first allocation `mode` fails.
fn first_failure(mode: Option<LowResources>) -> u64 {
    match mode {
        Some(LowResources::FailNth(n) | LowResources::FailFrom(n)) => n,
        _ => 0,
    }
}

/// Runs a whole machine life without failures three times: the first builds the simulation's
/// process-wide lazy state; the last two must leave the same residue on this thread (what the
/// simulated OS keeps per machine it ever built), the baseline every failing run is compared
/// against. Returns the allocation count and that residue.
fn reference(run: impl Fn() -> u64) -> (u64, isize) {
    let points = run();
    let mut drift = [0isize; 2];
    for d in &mut drift {
        let before = live_bytes();
        assert_eq!(run(), points, "the allocation count changed between runs");
        *d = live_bytes() - before;
    }
    assert_eq!(
        drift[0], drift[1],
        "the simulation's residue per machine is not stable"
    );
    (points, drift[1])
}

/// Runs `run` once unmeasured, then again measured: the bytes the second run left on this
/// thread beyond the per-machine residue `drift`. The simulation's process-wide registries
/// (trap windows, DMA ranges) are ordered maps whose node layout depends on the mix of
/// addresses a run leaves live, so a new failure point can grow (or shrink) one of them once
/// by a node; a leak repeats on the measured run, a layout change does not.
fn measured<R>(run: impl Fn() -> R, drift: isize) -> (R, isize) {
    let _ = run();
    let before = live_bytes();
    let r = run();
    (r, live_bytes() - before - drift)
}

/// Sweeps the failing allocation over `op` on a started machine and returns how many pool
/// allocations it makes. `setup` builds what `op` needs (without failures), `undo` destroys
/// what a successful `op` made, `finish` what `setup` made. Every allocation failed is
/// answered with `STATUS_NO_MEMORY`: the driver allocates nothing where it cannot fail (its
/// records of the pages VidMm maps, `fence::pages`, go into room made at the DDIs before).
fn sweep_machine<S, T>(
    name: &str,
    setup: impl Fn(&Machine) -> S,
    op: impl Fn(&Machine, &S) -> Result<T, i32>,
    undo: impl Fn(&Machine, &S, T),
    finish: impl Fn(&Machine, S),
) -> u64 {
    let run = |fail: Option<LowResources>| -> Option<u64> {
        let m = started(MachineConfig::single(Mode::Step));
        let w = setup(&m);
        let objects = m.ums_live_counts(0);
        m.set_low_resources(fail.unwrap_or(LowResources::Off));
        let r = op(&m, &w);
        let stats = m.pool_stats();
        m.set_low_resources(LowResources::Off);
        no_fault(&m);
        let result = if stats.failed == 0 {
            let t = r.unwrap_or_else(|e| {
                panic!("{name}: failed with {e:#x} without an allocation failure")
            });
            undo(&m, &w, t);
            Some(stats.attempted)
        } else {
            let n = first_failure(fail);
            match r {
                Err(s) => assert_eq!(
                    s, STATUS_NO_MEMORY,
                    "{name}: allocation {n} failed: want STATUS_NO_MEMORY, got {s:#x}"
                ),
                Ok(_) => panic!("{name}: allocation {n} failed but the operation succeeded"),
            }
            assert_eq!(
                m.ums_live_counts(0),
                objects,
                "{name}: allocation {n} failed: the OS holds other objects than before"
            );
            let t = op(&m, &w)
                .unwrap_or_else(|e| panic!("{name}: retry after failing allocation {n}: {e:#x}"));
            undo(&m, &w, t);
            None
        };
        finish(&m, w);
        shut_down(m, name);
        result
    };
    let (points, drift) = reference(|| run(None).unwrap_or(0));
    assert!(
        points > 0,
        "{name}: no pool allocation the low-resources simulation can fail (the driver's \
         allocations are not fallible)"
    );
    for n in 0..=points {
        let mut done = false;
        for mode in modes(n) {
            let (finished, leaked) = measured(|| run(Some(mode)), drift);
            assert_eq!(
                leaked, 0,
                "{name}: {leaked} bytes still allocated after {mode:?} and tearing everything \
                 down (beyond the simulation's own {drift} per machine)"
            );
            if let Some(p) = finished {
                assert_eq!(p, n, "{name}: the allocation count changed between runs");
                done = true;
            }
        }
        if done {
            eprintln!("{name}: {points} allocation point(s), each failed cleanly");
            return points;
        }
    }
    panic!("{name}: still failing after {points} allocation points");
}

/// [`sweep_machine`] with a process (a D3D device on adapter 0) in the world: `op` runs with
/// its thunks.
fn sweep<S, T>(
    name: &str,
    setup: impl Fn(&Machine, &SimKmt<'_>) -> S,
    op: impl Fn(&Machine, &SimKmt<'_>, &S) -> Result<T, i32>,
    undo: impl Fn(&Machine, &SimKmt<'_>, &S, T),
) -> u64 {
    sweep_machine(
        name,
        |m| {
            let p = ok(m, m.create_process(0));
            let s = setup(m, &m.kmt(&p));
            (p, s)
        },
        |m, (p, s)| op(m, &m.kmt(p), s),
        |m, (p, s), t| undo(m, &m.kmt(p), s, t),
        |m, (p, _)| ok(m, m.exit_process(&p)),
    )
}

/// Contexts one sweep step creates: enough to grow the context table past the system contexts
/// adapter start put in it (one per node, BR-66).
const GROWTH_BATCH: usize = 4;

/// [`GROWTH_BATCH`] objects from `make`; a failure part-way destroys (`undo`) the ones already
/// made and is the answer.
fn batch<T>(mut make: impl FnMut() -> Result<T, i32>, undo: impl FnMut(T)) -> Result<Vec<T>, i32> {
    let mut made = Vec::new();
    for _ in 0..GROWTH_BATCH {
        match make() {
            Ok(t) => made.push(t),
            Err(s) => {
                made.into_iter().for_each(undo);
                return Err(s);
            }
        }
    }
    Ok(made)
}

#[test]
fn low_resources_create_device_fails_cleanly_at_every_allocation() {
    let _serial = serial();
    // DxgkDdiCreateProcess + DxgkDdiCreateDevice, several times: the KMD's process and
    // device tables already hold the paging process and the system device (BR-66), so a
    // batch is what makes them grow; a failure part-way exits the ones already made.
    let points = sweep_machine(
        "CreateProcess+CreateDevice",
        |_| (),
        |m, ()| {
            let made = || {
                m.create_process(0)
                    .map_err(|e| e.status().unwrap_or_else(|| panic!("{e}")))
            };
            batch(made, |p| ok(m, m.exit_process(&p)))
        },
        |m, (), made| made.into_iter().for_each(|p| ok(m, m.exit_process(&p))),
        |_, ()| {},
    );
    assert!(points >= 1, "a process entry: {points}");
}

#[test]
fn low_resources_create_context_fails_cleanly_at_every_allocation() {
    let _serial = serial();
    // Several contexts, so the table grows past the system contexts (BR-66) it starts with;
    // a failure part-way destroys the ones already made.
    sweep(
        "CreateContext",
        |_, _| (),
        |m, k, ()| {
            let made = || k.create_context(0).map_err(status_of);
            batch(made, |c| okk(m, k.destroy_context(c)))
        },
        |m, k, (), made| made.into_iter().for_each(|c| okk(m, k.destroy_context(c))),
    );
}

#[test]
fn low_resources_create_hw_queue_fails_cleanly_at_every_allocation() {
    let _serial = serial();
    for user_mode in [true, false] {
        // A kernel-mode queue's progress fence is a monitored fence whose page VidMm maps
        // into the process before the create reaches the driver: its record goes into room
        // made at an earlier DDI, so no allocation of BuildPagingBuffer's can fail here.
        sweep(
            if user_mode {
                "CreateHwQueue (user mode)"
            } else {
                "CreateHwQueue (kernel mode)"
            },
            |m, k| okk(m, k.create_context(0)),
            |_, k, c| {
                let mut pdd = hw_queue_pdd();
                k.create_hw_queue(*c, user_mode, pdd.as_mut_bytes())
                    .map(|q| q.handle)
                    .map_err(status_of)
            },
            |m, k, _, q| okk(m, k.destroy_hw_queue(q)),
        );
    }
}

fn doorbell_of(k: &SimKmt<'_>, u: &RawQueue) -> Result<u32, i32> {
    let mut pdd = rvgpu_hw::pdd::DoorbellPdd::for_ring(4096);
    k.create_doorbell(u.queue, u.ring.handle, u.control.handle, pdd.as_mut_bytes())
        .map(|d| d.handle)
        .map_err(status_of)
}

#[test]
fn low_resources_create_doorbell_fails_cleanly_at_every_allocation() {
    let _serial = serial();
    sweep(
        "CreateDoorbell",
        unbelled_queue,
        |_, k, u| doorbell_of(k, u),
        |m, k, _, d| okk(m, k.destroy_doorbell(d)),
    );
}

#[test]
fn low_resources_create_native_fence_fails_cleanly_at_every_allocation() {
    let _serial = serial();
    // The OS creates the fence (DxgkDdiCreateNativeFence) and opens it for the creator
    // (DxgkDdiOpenNativeFence): the global and the local table each grow from empty.
    let points = sweep(
        "CreateNativeFence+OpenNativeFence",
        |_, _| (),
        |_, k, ()| k.create_native_fence(1).map(|f| f.kmt).map_err(status_of),
        |m, k, (), f| okk(m, k.destroy_native_fence(f)),
    );
    assert!(points >= 2, "global and local fence tables: {points}");
}

#[test]
fn low_resources_open_of_another_process_s_fence_fails_cleanly_at_every_allocation() {
    let _serial = serial();
    // Another process opens a shared fence after its creator's open (DxgkDdiOpenNativeFence):
    // the local handle table and the count of such opens per process (NF-11's bound,
    // driver/kmd/src/fence/table.rs) each grow.
    let status = |e: SimError| e.status().unwrap_or_else(|| panic!("open: {e}"));
    let points = sweep_machine(
        "OpenNativeFence of another process's fence",
        |m| {
            let owner = ok(m, m.create_process(0));
            let desc = NativeFenceDesc {
                shareable: true,
                ..NativeFenceDesc::default()
            };
            let f = ok(m, m.create_native_fence(0, owner.pid, desc));
            let opener = ok(m, m.create_process(0));
            (owner, f, opener)
        },
        |m, (_, f, opener)| m.open_native_fence(f, opener.pid).map_err(status),
        |m, _, opened| ok(m, m.destroy_native_fence(&opened)),
        |m, (owner, f, opener)| {
            ok(m, m.exit_process(&opener));
            ok(m, m.destroy_native_fence(&f));
            ok(m, m.exit_process(&owner));
        },
    );
    assert!(points >= 2, "local table and opens per process: {points}");
}

#[test]
fn low_resources_create_allocation_fails_cleanly_at_every_allocation() {
    let _serial = serial();
    // The pages of the paging queue's fence (24H2: the UMD's Map runs on that queue, which
    // the first allocation of a device creates) are recorded in room made before.
    sweep(
        "CreateAllocation",
        |_, _| (),
        |_, k, ()| {
            k.create_allocation(4096)
                .map(|a| a.handle)
                .map_err(status_of)
        },
        |m, k, (), a| okk(m, k.destroy_allocation(a)),
    );
}

/// AddDevice and StartDevice: a failed start is STATUS_INSUFFICIENT_RESOURCES (the PnP
/// convention; STATUS_NO_MEMORY from the system device and contexts VidSch creates next,
/// BR-66), the OS removes the device as PnP does after a failed start (RemoveDevice
/// checks every BAR mapping and contiguous buffer came back) and a later start succeeds.
#[test]
fn low_resources_adapter_start_fails_cleanly_at_every_allocation() {
    let _serial = serial();
    let run = |fail: Option<LowResources>| -> Option<u64> {
        let mut m = loaded(MachineConfig::single(Mode::Step));
        m.set_low_resources(fail.unwrap_or(LowResources::Off));
        let r = m.start_adapter(0);
        let stats = m.pool_stats();
        m.set_low_resources(LowResources::Off);
        no_fault(&m);
        if stats.failed == 0 {
            if let Err(e) = r {
                panic!("start failed without an allocation failure: {e}");
            }
            shut_down(m, "start");
            return Some(stats.attempted);
        }
        let n = first_failure(fail);
        match r {
            Err(e) if e.status().is_some() => assert_eq!(
                e.status(),
                Some(STATUS_INSUFFICIENT_RESOURCES),
                "start: allocation {n} failed: got {e}"
            ),
            // After StartDevice, VidSch creates the system device and contexts (BR-66); the
            // driver's CreateDevice/CreateContext fail with STATUS_NO_MEMORY and so does the
            // start.
            Err(SimError::StartRefused {
                rule: "BR-66",
                status,
                ..
            }) => assert_eq!(
                status, STATUS_NO_MEMORY,
                "start: allocation {n} failed in a system object: got {status:#x}"
            ),
            other => panic!("start: allocation {n} failed: {other:?}"),
        }
        // PnP removes a device whose start failed; a failed AddDevice left nothing to remove.
        match m.remove_adapter(0) {
            Ok(()) => {}
            Err(SimError::Simulation(msg)) if msg.contains("Absent") => {}
            Err(e) => panic!("start: allocation {n} failed, then remove: {e}"),
        }
        no_fault(&m);
        if let Err(e) = m.start_adapter(0) {
            panic!("start: retry after failing allocation {n}: {e}");
        }
        shut_down(m, "start");
        None
    };
    let (points, drift) = reference(|| run(None).unwrap_or(0));
    assert!(
        points >= 5,
        "AddDevice and StartDevice allocate their tables: {points} allocation points"
    );
    for n in 0..=points {
        let mut done = false;
        for mode in modes(n) {
            let (finished, leaked) = measured(|| run(Some(mode)), drift);
            assert_eq!(leaked, 0, "start: {leaked} bytes leaked after {mode:?}");
            if let Some(p) = finished {
                assert_eq!(p, n);
                done = true;
            }
        }
        if done {
            eprintln!("AddDevice+StartDevice: {points} allocation point(s), each failed cleanly");
            return;
        }
    }
    panic!("start still failing after {points} allocation points");
}

/// The interrupt and DPC path never allocates: with every pool allocation failing, a
/// kernel-mode submission still completes through ISR and DPC, and the driver asked for no
/// pool at all. (An allocation above DISPATCH_LEVEL would also be Verifier's 0xC4/0x02.)
#[test]
fn low_resources_dpc_and_isr_make_no_allocation() {
    let _serial = serial();
    let m = started(MachineConfig::single(Mode::Step));
    let (process, k) = user_process(&m);
    let target = okk(&m, k.create_allocation(4096));
    let mut q = okk(
        &m,
        KernelQueue::new(
            k,
            &QueueConfig {
                node: 0,
                command_buffer_size: 4096,
                ..QueueConfig::default()
            },
        ),
    );
    let (isr_before, _) = m.interrupt_counts(0);
    m.set_low_resources(LowResources::FailFrom(0));
    let v = okk(&m, q.submit(&[fill(&target, 0, 0xA110C)]));
    ok(&m, m.run_until_idle());
    okk(&m, q.wait(v));
    let stats = m.pool_stats();
    m.set_low_resources(LowResources::Off);
    no_fault(&m);
    assert_eq!(target.mem.load(0), 0xA110C, "the submission ran");
    assert!(
        m.interrupt_counts(0).0 > isr_before,
        "the completion went through the ISR"
    );
    assert_eq!(
        stats.attempted, 0,
        "submission, ISR and DPC asked for {} pool allocations",
        stats.attempted
    );
    okk(&m, q.close());
    ok(&m, m.exit_process(&process));
    shut_down(m, "dpc");
}

against_the_pe_image!();
