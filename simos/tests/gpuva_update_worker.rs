//! `D3DKMTUpdateGpuVirtualAddress`'s VidMm worker (docs/memory.md "GPU VA thunks"): 24H2
//! queues the update behind a VidSch wait for `hFenceObject` reaching `FenceValue`
//! (`M:VIDMM_GLOBAL::VidMmUpdateGpuVirtualAddress` @0x1400E34AC), so whatever moves the fence
//! there, a CPU signal or the GPU's write seen at DPC time, lets the update run and the fence
//! reach `FenceValue + 1`. A waiter already waiting for `FenceValue + 1` when the GPU moves the
//! fence must be released promptly, with the mapping in effect. Also what the leaves'
//! page-table updates carry of the process's Map or MAP_PROTECT (`DriverProtection`).

mod common;

use common::*;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::tdr::{
    DXGKARG_BUILDPAGINGBUFFER, DXGK_OPERATION_UPDATE_PAGE_TABLE, PDXGKDDI_BUILDPAGINGBUFFER,
};
use rvgpu_ddi::{HANDLE, NTSTATUS};

use rvgpu_hw::cmd::{Command, SIGNAL_ALWAYS_IRQ};
use rvgpu_hw::mmu::{Access, FaultReason};
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::{Machine, MachineConfig, Mode, MonitoredFence, UmsProcess};
use rvgpu_umd::kmt::{
    Allocation, AllocationCpu, GpuVaProtection, Kmt, MapGpuVa, ReserveGpuVa, UpdateGpuVa,
    UpdateGpuVaOp,
};
use rvgpu_umd::submit::UserQueue;

const PAGE: u64 = 4096;
const CHOSEN: u64 = 0x7000_0000_0000;
/// Well inside the OS's wait limit (10 s): a release that waits for the limit fails.
const PROMPT: Duration = Duration::from_secs(4);

fn translate(m: &Machine, p: &UmsProcess, va: u64) -> Result<u64, FaultReason> {
    m.gpu_va_translate(0, p.pid, rvgpu_hw::addr::GpuVa::new(va), Access::Write)
        .expect("a GpuMmu process")
        .map(|(pa, _)| pa)
        .map_err(|f| f.reason)
}

/// A reserved range at [`CHOSEN`], a one-page allocation, a context and a monitored fence at 0.
fn setup<'m>(
    m: &'m Machine,
    p: &UmsProcess,
) -> (SimKmt<'m>, Allocation<SimMem>, UpdateGpuVa, MonitoredFence) {
    let k = m.kmt(p);
    let b = okk(m, k.create_allocation(PAGE));
    b.mem.store(0, 0x1234);
    let reserve = ReserveGpuVa {
        base: CHOSEN,
        size: 0x1_0000,
        ..ReserveGpuVa::default()
    };
    okk(m, k.reserve_gpu_va(&reserve));
    let context = okk(m, k.create_context(0));
    let (fence, f) = okk(m, k.create_monitored_fence(0));
    let u = UpdateGpuVa {
        context,
        fence,
        fence_value: 3,
        do_not_wait: false,
    };
    (k, b, u, f)
}

/// The GPU's write of `value` to `f` (FENCE_SIGNAL, always interrupting: MF-03).
fn gpu_signal(f: &MonitoredFence, value: u64) -> Command {
    Command::FenceSignal {
        flags: SIGNAL_ALWAYS_IRQ,
        value_addr: f.gpu_va(),
        value,
        monitored_addr: 0,
        report_tag: 0,
    }
}

/// MF-04 with VidMm's update worker: a CPU waiter for `FenceValue + 1` waits before the GPU
/// signals `FenceValue` (a queue's FENCE_SIGNAL, seen at DPC time); the GPU's progress wakes
/// VidMm's worker, which applies the update and signals `FenceValue + 1`: the wait ends
/// promptly, not at its limit, and the VA maps the allocation.
#[test]
fn mf_04_a_gpu_signal_of_fence_value_runs_the_update_for_a_waiter_already_waiting() {
    for mode in [Mode::Step, Mode::Threaded] {
        let m = with_doorbells(mode, 4);
        let p = ok(&m, m.create_process(0));
        let (k, b, u, f) = setup(&m, &p);
        let mut q = okk(&m, UserQueue::new(k, &config(0)));
        okk(
            &m,
            k.update_gpu_va(&u, &[UpdateGpuVaOp::map(CHOSEN, PAGE, b.handle, 0)]),
        );
        let t0 = Instant::now();
        let waited = match mode {
            // One thread: the work is queued first, the wait then runs the machine (the
            // doorbell's work runs in its rounds, after the wait started).
            Mode::Step => {
                okk(&m, q.submit(&[gpu_signal(&f, 3)]));
                k.wait_for_fence(u.fence, 4)
            }
            Mode::Threaded => std::thread::scope(|s| {
                let waiter = s.spawn(|| k.wait_for_fence(u.fence, 4));
                while !f.pending_waits().contains(&4) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                okk(&m, q.submit(&[gpu_signal(&f, 3)]));
                waiter.join().expect("waiter")
            }),
        };
        let took = t0.elapsed();
        assert!(
            waited.is_ok() && took < PROMPT,
            "{mode:?}: wait for FenceValue + 1 {waited:?} after {took:?}, fence at {}; {}",
            f.value(),
            diagnostics(&m)
        );
        assert_eq!(f.value(), 4, "{mode:?}");
        assert_eq!(
            translate(&m, &p, CHOSEN),
            translate(&m, &p, b.gpu_va),
            "{mode:?}: the update is in effect when FenceValue + 1 is reached"
        );
        okk(&m, q.close());
        no_fault(&m);
    }
}

/// MF-04, the worker's wake-up under races (threaded): per round two updates on one context,
/// the second waiting for the value the first signals, while another thread moves the fence
/// to the first's `FenceValue` (a CPU signal or the GPU's write, alternately, after a varying
/// delay) and this thread waits for the last `FenceValue + 1`. Every wait ends promptly with
/// both updates applied in order: no release between "the worker found nothing ready" and
/// "the worker ended its turn" is lost.
#[test]
fn mf_04_the_update_worker_loses_no_wake_up_to_racing_signals() {
    let m = with_doorbells(Mode::Threaded, 4);
    let p = ok(&m, m.create_process(0));
    let (k, b, u, f) = setup(&m, &p);
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    let mut rng = Rng(0x5EED_0FA1_1DEA);
    for round in 0..150u64 {
        let v = 3 * round + 1;
        let map = UpdateGpuVaOp::map(CHOSEN, PAGE, b.handle, 0);
        let unmap = UpdateGpuVaOp::unmap(CHOSEN, PAGE);
        okk(
            &m,
            k.update_gpu_va(
                &UpdateGpuVa {
                    fence_value: v,
                    ..u
                },
                &[map],
            ),
        );
        okk(
            &m,
            k.update_gpu_va(
                &UpdateGpuVa {
                    fence_value: v + 1,
                    ..u
                },
                &[unmap, map],
            ),
        );
        let delay = Duration::from_micros(rng.next() % 300);
        let by_gpu = round % 2 == 0;
        let t0 = Instant::now();
        let waited = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(delay);
                if by_gpu {
                    okk(&m, q.submit(&[gpu_signal(&f, v)]));
                } else {
                    okk(&m, k.signal_fence_from_cpu(u.fence, v));
                }
            });
            k.wait_for_fence(u.fence, v + 2)
        });
        let took = t0.elapsed();
        assert!(
            waited.is_ok() && took < PROMPT,
            "round {round}: {waited:?} after {took:?}, fence at {}; {}",
            f.value(),
            diagnostics(&m)
        );
        assert_eq!(translate(&m, &p, CHOSEN), translate(&m, &p, b.gpu_va));
    }
    okk(&m, q.close());
    no_fault(&m);
}

static REAL_BUILD: OnceLock<PDXGKDDI_BUILDPAGINGBUFFER> = OnceLock::new();
/// `(hAllocation, DriverProtection)` of every UPDATE_PAGE_TABLE with a non-zero `hAllocation`
/// (a leaf map) the spied machine handed the driver.
static LEAF_UPDATES: Mutex<Vec<(usize, u64)>> = Mutex::new(Vec::new());

unsafe extern "system" fn spy_build(ctx: HANDLE, args: *mut DXGKARG_BUILDPAGINGBUFFER) -> NTSTATUS {
    // SAFETY: the OS's argument block (or null); the arm named by its operation.
    if let Some(b) = unsafe { args.as_ref() } {
        if b.Operation == DXGK_OPERATION_UPDATE_PAGE_TABLE {
            // SAFETY: as above.
            let u = unsafe { &b.Anonymous.UpdatePageTable };
            if !u.hAllocation.is_null() {
                let mut v = LEAF_UPDATES.lock().unwrap_or_else(|e| e.into_inner());
                v.push((u.hAllocation as usize, u.DriverProtection));
            }
        }
    }
    let real = REAL_BUILD.get().copied().flatten().expect("the real DDI");
    // SAFETY: the driver's DDI with the OS's arguments.
    unsafe { real(ctx, args) }
}

fn spy_paging(t: &mut DRIVER_INITIALIZATION_DATA) {
    let _ = REAL_BUILD.set(t.DxgkDdiBuildPagingBuffer);
    t.DxgkDdiBuildPagingBuffer = Some(spy_build);
}

/// DDI-03: a leaf map's page-table updates carry the `DriverProtection` the process passed:
/// a Map's (`D3DDDI_MAPGPUVIRTUALADDRESS`), a MAP_PROTECT's; a MAP operation has none, so its
/// updates carry 0 (24H2: `M:VIDMM_PAGE_TABLE::UpdatePageTable` @0x1400AAE70 from the range's
/// commit state, `M:VIDMM_GLOBAL::VidMmUpdateGpuVirtualAddress` @0x1400E34AC for the update's
/// operations; Microsoft's page: "passed by the UMD").
#[test]
fn ddi_03_leaf_updates_carry_the_driver_protection_the_process_mapped_with() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.doorbells = 4;
    let m = started_with(cfg, spy_paging);
    let p = ok(&m, m.create_process(0));
    let (k, b, u, _f) = setup(&m, &p);
    // The DriverProtection of the leaf updates handed over since the last look.
    let mut at = 0;
    let mut since = || {
        let v = LEAF_UPDATES.lock().unwrap_or_else(|e| e.into_inner());
        let new: Vec<u64> = v[at..].iter().map(|(_, d)| *d).collect();
        at = v.len();
        new
    };
    let pq = okk(&m, k.create_paging_queue(0));
    // Its runtime's own Map of it (24H2 gives no VA at create) passes none.
    let c = okk(&m, k.create_allocation(PAGE));
    since();
    let mapped = okk(
        &m,
        k.map_gpu_va(&MapGpuVa {
            driver_protection: 0x5A,
            ..MapGpuVa::read_write(pq.handle, 0, c.handle, 0, 1)
        }),
    );
    okk(&m, k.wait_for_fence(pq.fence, mapped.paging_fence_value));
    assert_eq!(since(), vec![0x5A], "the Map's");
    let protect = UpdateGpuVaOp {
        operation_type: rvgpu_umd::kmt::UPDATE_GPU_VA_MAP_PROTECT,
        protection: GpuVaProtection::WRITE,
        driver_protection: 0x77,
        ..UpdateGpuVaOp::map(CHOSEN, PAGE, b.handle, 0)
    };
    let map = UpdateGpuVaOp::map(CHOSEN + PAGE, PAGE, b.handle, 0);
    let u = UpdateGpuVa {
        do_not_wait: true,
        ..u
    };
    okk(&m, k.update_gpu_va(&u, &[protect, map]));
    okk(&m, k.wait_for_fence(u.fence, u.fence_value + 1));
    assert_eq!(
        since(),
        vec![0x77, 0],
        "the MAP_PROTECT's, then none for the MAP"
    );
    no_fault(&m);
}
