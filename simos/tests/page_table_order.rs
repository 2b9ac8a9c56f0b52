//! DDI-03: VidMm's page-table changes reach the paging engine in the order VidMm's books took
//! them, whichever threads make them. 24H2's VidMm does every change on its one worker thread
//! per adapter, in the order its paging queues' packets were appended
//! (`M:VidMmAppendReadyPacket` @0x1400E8870); the simulated VidMm works a change out and
//! submits it in one turn (`vidmm::paging::page_table_turn`).
//!
//! The interleaving is made, not hoped for: a spy on `DxgkDdiBuildPagingBuffer` stops one
//! change of a process's fence pages as its paging buffers are built, and has another thread
//! map an allocation into the same tables meanwhile: beside an unmap that empties and unlinks
//! them, or into a fresh table a map has just made. Had the second map reached the GPU first,
//! the stopped change would then take away what it linked or wrote, and its page would fault.

mod common;

use common::*;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::memory::{DXGK_PAGETABLEUPDATE_GPU_PHYSICAL, DXGK_UPDATEPAGETABLEFLAGS};
use rvgpu_ddi::tdr::{
    DXGKARG_BUILDPAGINGBUFFER, DXGK_OPERATION_UPDATE_PAGE_TABLE, PDXGKDDI_BUILDPAGINGBUFFER,
};
use rvgpu_ddi::{HANDLE, NTSTATUS};
use rvgpu_hw::mmu::Access;
use rvgpu_simos::kmt::{SimFence, SimKmt, SimMem};
use rvgpu_simos::{Machine, MachineConfig, Mode, UmsProcess};
use rvgpu_umd::fence::NativeFence as UmdFence;
use rvgpu_umd::kmt::{Allocation, Kmt, MakeResidentFlags, MapGpuVa, PagingQueue};

const PAGE: u64 = 4096;

static REAL_BUILD: OnceLock<PDXGKDDI_BUILDPAGINGBUFFER> = OnceLock::new();

/// Where the spy stops the change under test; `NOWHERE` when none is under test.
static STOP_AT: AtomicU8 = AtomicU8::new(NOWHERE);
const NOWHERE: u8 = 0;
/// At the first paging buffer that unlinks a table (an invalid entry above the leaves).
const UNLINK: u8 = 1;
/// At the first paging buffer that writes a fresh leaf table whole (InitialUpdate).
const FRESH_TABLE: u8 = 2;

/// Where the race stands: the change stopped (`stopped`), the other thread's map done
/// (`mapped`) or waiting for the stopped change's page-table turn (`waiting`).
struct Race {
    stopped: bool,
    mapped: bool,
    waiting: bool,
}

static RACE: Mutex<Race> = Mutex::new(Race {
    stopped: false,
    mapped: false,
    waiting: false,
});
static MOVED: Condvar = Condvar::new();
/// The spy and its statics serve one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How long the watcher waits for the map to either finish or wait its turn before it lets
/// the change go on and fails the test: not a timing the test depends on, only a bound on a
/// map that does neither.
const NEITHER: Duration = Duration::from_secs(60);

unsafe extern "system" fn spy_build(ctx: HANDLE, args: *mut DXGKARG_BUILDPAGINGBUFFER) -> NTSTATUS {
    // SAFETY: the OS's argument block (or null); the arm named by its operation.
    if let Some(b) = unsafe { args.as_ref() } {
        // SAFETY: as above.
        let u = unsafe { &b.Anonymous.UpdatePageTable };
        let update = b.Operation == DXGK_OPERATION_UPDATE_PAGE_TABLE
            && b.MultipassOffset == 0
            && u.UpdateMode == DXGK_PAGETABLEUPDATE_GPU_PHYSICAL;
        let at = match STOP_AT.load(Ordering::SeqCst) {
            // SAFETY: the OS's array holds at least its first entry.
            UNLINK => update && u.PageTableLevel >= 1 && !unsafe { &*u.pPageTableEntries }.valid(),
            FRESH_TABLE => {
                update
                    && u.PageTableLevel == 0
                    && u.Flags.get(DXGK_UPDATEPAGETABLEFLAGS::InitialUpdate) != 0
            }
            _ => false,
        };
        if at && STOP_AT.swap(NOWHERE, Ordering::SeqCst) != NOWHERE {
            let mut r = RACE.lock().unwrap();
            r.stopped = true;
            MOVED.notify_all();
            // Goes on once the map has overtaken it (the order is wrong) or waits for its
            // page-table turn (the order is kept).
            drop(MOVED.wait_while(r, |r| !r.mapped && !r.waiting).unwrap());
        }
    }
    let real = REAL_BUILD.get().copied().flatten().expect("the real DDI");
    // SAFETY: the driver's DDI with the OS's arguments.
    unsafe { real(ctx, args) }
}

fn spy(t: &mut DRIVER_INITIALIZATION_DATA) {
    let _ = REAL_BUILD.set(t.DxgkDdiBuildPagingBuffer);
    t.DxgkDdiBuildPagingBuffer = Some(spy_build);
}

/// A threaded machine with the spy, a process, its paging queue and a resident one-page
/// allocation.
struct Setup<'m> {
    p: UmsProcess,
    k: SimKmt<'m>,
    pq: PagingQueue<SimFence>,
    b: Allocation<SimMem>,
}

fn machine() -> Machine {
    let mut cfg = MachineConfig::single(Mode::Threaded);
    cfg.adapters[0].device.doorbells = 4;
    started_with(cfg, spy)
}

fn setup(m: &Machine) -> Setup<'_> {
    let p = ok(m, m.create_process(0));
    let k = m.kmt(&p);
    let pq = okk(m, k.create_paging_queue(0));
    let b = okk(m, k.create_allocation(PAGE));
    let pf = okk(
        m,
        k.make_resident_on(&pq, &[b.handle], MakeResidentFlags::default()),
    );
    okk(m, k.wait_for_fence(pq.fence, pf.value));
    Setup { p, k, pq, b }
}

/// Runs `change` with the spy stopping it `stop`, and, while it is stopped, a Map of the
/// allocation at `at` on another thread; then asserts that `at` translates and nothing
/// faulted.
fn race(m: &Machine, s: &Setup<'_>, stop: u8, at: u64, change: impl FnOnce()) {
    *RACE.lock().unwrap() = Race {
        stopped: false,
        mapped: false,
        waiting: false,
    };
    let turns = m.page_table_turn_waits(0);
    std::thread::scope(|sc| {
        // Tells the stopped change when the map waits for its page-table turn.
        let watcher = sc.spawn(|| {
            let since = std::time::Instant::now();
            let mut r = RACE.lock().unwrap();
            while !r.stopped {
                r = MOVED.wait(r).unwrap();
            }
            while !r.mapped && m.page_table_turn_waits(0) == turns {
                if since.elapsed() > NEITHER {
                    break;
                }
                drop(r);
                std::thread::sleep(Duration::from_millis(1));
                r = RACE.lock().unwrap();
            }
            let neither = !r.mapped && m.page_table_turn_waits(0) == turns;
            r.waiting = true;
            MOVED.notify_all();
            neither
        });
        let mapper = sc.spawn(|| {
            let mut r = RACE.lock().unwrap();
            while !r.stopped {
                r = MOVED.wait(r).unwrap();
            }
            drop(r);
            let r = MapGpuVa::read_write(s.pq.handle, at, s.b.handle, 0, 1);
            let mapped = s.k.map_gpu_va(&r);
            let waited = mapped
                .as_ref()
                .map_err(|e| *e)
                .and_then(|v| s.k.wait_for_fence(s.pq.fence, v.paging_fence_value));
            RACE.lock().unwrap().mapped = true;
            MOVED.notify_all();
            (mapped, waited)
        });
        STOP_AT.store(stop, Ordering::SeqCst);
        change();
        let stopped = RACE.lock().unwrap().stopped;
        if !stopped {
            // The spy never stopped the change: release the mapper so the scope ends.
            STOP_AT.store(NOWHERE, Ordering::SeqCst);
            RACE.lock().unwrap().stopped = true;
            MOVED.notify_all();
        }
        let (mapped, waited) = mapper.join().expect("mapper");
        let neither = watcher.join().expect("watcher");
        assert!(stopped, "the change under test never reached its stop");
        assert!(
            !neither,
            "the map neither finished nor waited for the page-table turn"
        );
        let mapped = okk(m, mapped);
        okk(m, waited);
        assert_eq!(mapped.va, at);
    });
    let seen = m.gpu_va_translate(0, s.p.pid, rvgpu_hw::addr::GpuVa::new(at), Access::Write);
    assert!(
        seen.as_ref().is_some_and(|t| t.is_ok()),
        "the page mapped beside the change translates as {seen:?}; {}",
        diagnostics(m)
    );
    no_fault(m);
}

/// The page holding the higher of `f`'s two values.
fn last_page(f: &UmdFence) -> u64 {
    let last = f.gpu.current.get().max(f.gpu.monitored.get());
    last - last % PAGE
}

/// DDI-03: a map made while an unmap of the same tables is between its working out and its
/// submission takes effect after the unmap, so the mapped page translates (else the unmap's
/// unlink of the tables it emptied would take away the ones the map linked).
#[test]
fn ddi_03_a_map_beside_a_concurrent_unmap_keeps_the_tables_it_links() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let m = machine();
    let s = setup(&m);
    // The process's only fence: its pages are the only ones under their tables, so their
    // unmap empties and unlinks them.
    let f = okk(&m, s.k.create_native_fence(0));
    let beside = last_page(&f) + 2 * PAGE;
    race(&m, &s, UNLINK, beside, || {
        okk(&m, s.k.destroy_native_fence(f.kmt));
    });
}

/// DDI-03: a map into a table another change has just made, before that change is
/// submitted, takes effect after it, so the fresh table's first writing (whole, with
/// InitialUpdate) does not clear the map's entry.
#[test]
fn ddi_03_a_map_into_a_table_a_concurrent_map_makes_keeps_its_entry() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let m = machine();
    let s = setup(&m);
    // A first fence shows where the process's fence pages go; once it is gone their tables
    // are unlinked, and the next fence's pages, a few pages on, need fresh ones.
    let f = okk(&m, s.k.create_native_fence(0));
    let freed = last_page(&f);
    okk(&m, s.k.destroy_native_fence(f.kmt));
    let mut next = None;
    race(&m, &s, FRESH_TABLE, freed, || {
        next = Some(okk(&m, s.k.create_native_fence(0)));
    });
    if let Some(f) = next {
        okk(&m, s.k.destroy_native_fence(f.kmt));
    }
}

/// DDI-03: a page-table change submitted while the host leaves the GPU's thread unscheduled
/// for longer than VidMm's paging wait limit (10 s) completes once the thread runs: the limit
/// counts the machine's time, and the GPU was not run, not stuck.
#[test]
fn ddi_03_a_map_outlasts_a_gpu_thread_the_host_starves_past_the_paging_limit() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let m = machine();
    let s = setup(&m);
    let f = okk(&m, s.k.create_native_fence(0));
    let at = last_page(&f) + 2 * PAGE;
    // Returns once the GPU's thread has stopped: the map's paging buffer goes in while it is.
    m.device(0)
        .unwrap()
        .starve_cmp_thread(Duration::from_millis(10_500));
    let r = MapGpuVa::read_write(s.pq.handle, at, s.b.handle, 0, 1);
    let mapped = okk(&m, s.k.map_gpu_va(&r));
    // Watched from here rather than with a CPU wait on the paging fence, which has a limit
    // of its own.
    run_until(&m, "the map", |m| {
        m.gpu_va_translate(0, s.p.pid, rvgpu_hw::addr::GpuVa::new(at), Access::Write)
            .is_some_and(|t| t.is_ok())
    });
    okk(
        &m,
        s.k.wait_for_fence(s.pq.fence, mapped.paging_fence_value),
    );
    okk(&m, s.k.destroy_native_fence(f.kmt));
    no_fault(&m);
}

/// Every test of this file again, against `rvgpu.sys` in the x86-64 emulator.
#[test]
fn against_the_pe_image() {
    pe::rerun_against_the_pe_image(&[]);
}
