//! VidMm's worker does queued paging on its own (DDI-03): a Map or MakeResident that answers
//! STATUS_PENDING is done, and its paging fence moves, with nobody waiting on the fence, as
//! 24H2's worker thread does it (`simos/src/vidmm/worker.rs`). A runtime that polls the fence
//! through its CPU mapping sees the value come.

mod common;

use common::*;

use rvgpu_hw::mmu::Access;
use rvgpu_simos::kmt::{SimFence, SimKmt};
use rvgpu_simos::{Machine, Mode};
use rvgpu_umd::kmt::{FenceCpu, Kmt, MakeResidentFlags, MapGpuVa, PagingQueue};

const PAGE: u64 = 4096;

/// A Map of a fresh one-page allocation on `pq` and a MakeResident behind it: both PENDING
/// (queued on the paging queue); returns the last fence value. In step mode nothing runs
/// between the calls, so the Map is seen still queued; threaded, the worker may have done it
/// by the time the fence is read.
fn queue_paging(m: &Machine, k: &SimKmt<'_>, pq: &PagingQueue<SimFence>) -> (u64, u64) {
    let b = okk(m, k.create_allocation(PAGE));
    let r = MapGpuVa::read_write(pq.handle, 0, b.handle, 0, 1);
    let mapped = okk(m, k.map_gpu_va(&r));
    assert!(
        m.config().mode == Mode::Threaded || pq.fence_cpu.value() < mapped.paging_fence_value,
        "the Map is queued (24H2: STATUS_PENDING)"
    );
    let pf = okk(
        m,
        k.make_resident_on(pq, &[b.handle], MakeResidentFlags::default()),
    );
    assert!(
        pf.value > mapped.paging_fence_value,
        "queued behind the Map"
    );
    (mapped.va, pf.value)
}

/// Step mode: the machine's rounds (its time) alone move the paging fence; nothing waits
/// and nothing reads but the fence's CPU-visible value.
#[test]
fn ddi_03_a_paging_fence_moves_with_nobody_waiting() {
    let m = with_doorbells(Mode::Step, 4);
    let p = ok(&m, m.create_process(0));
    let k = m.kmt(&p);
    let pq = okk(&m, k.create_paging_queue(0));
    let (va, value) = queue_paging(&m, &k, &pq);
    let mut rounds = 0;
    while pq.fence_cpu.value() < value {
        assert!(
            rounds < 10_000,
            "the paging fence is at {} after {rounds} rounds, {value} expected",
            pq.fence_cpu.value()
        );
        ok(&m, m.run_steps(1));
        rounds += 1;
    }
    let at = rvgpu_hw::addr::GpuVa::new(va);
    assert!(
        m.gpu_va_translate(0, p.pid, at, Access::Write)
            .is_some_and(|t| t.is_ok()),
        "the Map's pages are in the page tables once its fence value is reached"
    );
    no_fault(&m);
}

/// Threaded: VidMm's own thread moves the paging fence while the test only reads its CPU
/// value. The bound is the machine's wait limit, spent only if the fence never moves.
#[test]
fn ddi_03_a_paging_fence_moves_with_nobody_waiting_threaded() {
    let m = with_doorbells(Mode::Threaded, 4);
    let p = ok(&m, m.create_process(0));
    let k = m.kmt(&p);
    let pq = okk(&m, k.create_paging_queue(0));
    let (_, value) = queue_paging(&m, &k, &pq);
    let limit = m.os_config().wait_timeout;
    let start = std::time::Instant::now();
    while pq.fence_cpu.value() < value {
        assert!(
            start.elapsed() < limit,
            "the paging fence is at {} after {limit:?}, {value} expected",
            pq.fence_cpu.value()
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    no_fault(&m);
}

/// Through the shipped DLL's process (`rvgpu.sys` and `rvgpu_umd.dll` in the emulator): a Map
/// the process makes answers STATUS_PENDING, and the paging fence's value, read where
/// `D3DKMTCreatePagingQueue` said the process sees it, reaches the Map's value while nothing
/// in the process waits. The bound is the machine's wait limit, spent only if it never does.
#[test]
fn ddi_03_a_paging_fence_moves_with_nobody_waiting_in_the_dlls_process() {
    use common::dll_world::{paging_queue, world};
    use rvgpu_simos::kmt::gpu_va::D3DDDI_MAPGPUVIRTUALADDRESS;
    let w = world();
    let (s, q) = paging_queue(&w.p, w.device, |_| {});
    assert_eq!(s, common::dll::STATUS_SUCCESS);
    let fence_va = u64::from(q[4]) | u64::from(q[5]) << 32;
    assert_ne!(fence_va, 0, "the fence's CPU address");
    let mut a = D3DDDI_MAPGPUVIRTUALADDRESS {
        hPagingQueue: q[2],
        hAllocation: w.allocation,
        SizeInPages: 1,
        // D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE Write.
        Protection: 1,
        ..Default::default()
    };
    assert_eq!(
        w.call("D3DKMTMapGpuVirtualAddress", &mut a),
        rvgpu_ddi::ntstatus::STATUS_PENDING as u64,
        "queued on the paging queue"
    );
    let value = a.PagingFenceValue;
    // SAFETY: the process's view of its paging fence: one aligned u64 the machine keeps
    // mapped while the queue lives (the emulated process's memory is this process's).
    let read = || unsafe { (fence_va as *const u64).read_volatile() };
    let limit = w.m.os_config().wait_timeout;
    let start = std::time::Instant::now();
    while read() < value {
        assert!(
            start.elapsed() < limit,
            "the paging fence reads {} after {limit:?}, {value} expected",
            read()
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    w.done();
}
