//! The GPU VA thunks (`D3DKMTReserveGpuVirtualAddress`, `MapGpuVirtualAddress`,
//! `FreeGpuVirtualAddress`) and paging queues (`D3DKMTCreatePagingQueue`), used as a UMD
//! would through its `Kmt` trait, over the simulated VidMm, the real KMD's paging buffers and
//! the emulated GPU (docs/memory.md "GPU VA thunks").
//!
//! A user-mode queue's FILL is the probe: where a VA maps an allocation the CPU view sees the
//! GPU's write; where it maps nothing (reserved, freed, `NoAccess`) or maps read-only, the GPU
//! page-faults, nothing is written and the device goes to error (UM-10).

mod common;

use common::*;
use std::time::Duration;

use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_UNSUCCESSFUL};
use rvgpu_hw::cmd::Command;
use rvgpu_hw::mmu::{Access, FaultReason};
use rvgpu_hw::pdd::{AllocationKind, AllocationPdd, ALLOCATION_PDD_VERSION, PDD_MAGIC};
use rvgpu_hw::queue::RingControl;
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::vidmm::residency::Place;
use rvgpu_simos::{Machine, Mode, UmsEvent, UmsProcess};
use rvgpu_umd::kmt::{
    Allocation, AllocationCpu, DestroyFlags, EvictFlags, FenceCpu, GpuVaProtection, Kmt,
    MakeResidentFlags, MapGpuVa, NtStatus, PagingQueue, ReserveGpuVa, UpdateGpuVa, UpdateGpuVaOp,
    RESERVE_NO_COMMIT, RESERVE_ZERO,
};
use rvgpu_umd::submit::{SubmitError, UserQueue};
use zerocopy::IntoBytes;

const PAGE: u64 = 4096;
const PATTERN: u64 = 0x6A7A_0012_6A7A_0012;
/// A VA this process picks for itself: 64 KiB aligned, high in the space.
const CHOSEN: u64 = 0x7000_0000_0000;
const RW: GpuVaProtection = GpuVaProtection::WRITE;

struct Proc<'m> {
    p: UmsProcess,
    k: SimKmt<'m>,
    pq: PagingQueue<rvgpu_simos::kmt::SimFence>,
}

/// Whether the machine plays the reading whose `D3DKMTCreateAllocation2` gives a VA (the
/// pages'); under 24H2 it gives none.
fn va_at_create(m: &Machine) -> bool {
    m.os_config().windows.reading().allocation_va
        == rvgpu_simos::machine::answers::AllocationVa::AtCreate
}

/// What one [`buffer`] adds to [`Machine::gpuva_live_counts`]'s ranges and mappings: the
/// range and mapping its UMD's Map made under 24H2 (none under the pages' reading, where the
/// create gives the VA).
fn umd_maps(m: &Machine) -> usize {
    usize::from(!va_at_create(m))
}

/// Paging queues a process that made allocations has besides its own: under 24H2 the one its
/// runtime maps them on (`SimKmt`'s, created with its first allocation).
fn runtime_queue(m: &Machine) -> usize {
    umd_maps(m)
}

fn process(m: &Machine) -> Proc<'_> {
    let p = ok(m, m.create_process(0));
    let k = m.kmt(&p);
    let pq = okk(m, k.create_paging_queue(0));
    Proc { p, k, pq }
}

/// A CPU-visible allocation of `pages` pages filled with [`PATTERN`].
fn buffer(m: &Machine, k: &SimKmt<'_>, pages: u64) -> Allocation<SimMem> {
    let b = okk(m, k.create_allocation(pages * PAGE));
    for off in (0..b.size).step_by(8) {
        b.mem.store(off, PATTERN);
    }
    b
}

fn map(
    pq: &PagingQueue<rvgpu_simos::kmt::SimFence>,
    base: u64,
    h: u32,
    off: u64,
    n: u64,
) -> MapGpuVa {
    MapGpuVa::read_write(pq.handle, base, h, off, n)
}

/// `D3DKMTMapGpuVirtualAddress` of `r` on `pq`, then the wait for its paging fence a runtime
/// makes before the mapping is used (24H2 queues the Map: STATUS_PENDING).
fn map_wait(
    k: &SimKmt<'_>,
    pq: &PagingQueue<rvgpu_simos::kmt::SimFence>,
    r: &MapGpuVa,
) -> Result<rvgpu_umd::kmt::MappedGpuVa, NtStatus> {
    let mapped = k.map_gpu_va(r)?;
    k.wait_for_fence(pq.fence, mapped.paging_fence_value)?;
    Ok(mapped)
}

fn reserve_at(base: u64, size: u64) -> ReserveGpuVa {
    ReserveGpuVa {
        base,
        size,
        ..ReserveGpuVa::default()
    }
}

fn refused<T: std::fmt::Debug>(r: Result<T, NtStatus>, status: i32, what: &str) {
    match r {
        Err(NtStatus(s)) if s == status => {}
        other => panic!("{what}: expected {status:#x}, got {other:?}"),
    }
}

/// A queue FILL of 8 bytes at `va` that completes.
fn gpu_write(m: &Machine, k: &SimKmt<'_>, va: u64, pattern: u64) {
    let mut q = okk(m, UserQueue::new(*k, &config(0)));
    submit_wait(
        m,
        &mut q,
        &[Command::Fill {
            dst: va,
            bytes: 8,
            pattern,
        }],
    );
    okk(m, q.close());
}

/// A queue FILL at `va` that must page-fault: the OS puts the device in error (UM-10) and the
/// fault names `va`.
fn gpu_write_faults(m: &Machine, p: &Proc<'_>, va: u64) {
    let q = okk(m, UserQueue::new(p.k, &config(0)));
    gpu_write_faults_on(m, p, q, va);
}

/// [`gpu_write_faults`] on a queue made before: its ring's VAs were taken before `va` was
/// freed, so Map cannot hand `va` to them again.
fn gpu_write_faults_on<'m>(m: &'m Machine, p: &Proc<'m>, mut q: UserQueue<SimKmt<'m>>, va: u64) {
    match q.submit(&[Command::Fill {
        dst: va,
        bytes: 8,
        pattern: 0xBAD,
    }]) {
        Ok(_) => {}
        Err(SubmitError::Kmt(st)) if st.0 == rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED => {}
        Err(e) => panic!("submit: {e:?}; {}", diagnostics(m)),
    }
    let seen = ok(
        m,
        m.run_until(20_000, Duration::from_secs(10), |m| {
            m.ums_events(0)
                .contains(&UmsEvent::DeviceError { device: p.p.device })
        }),
    );
    assert!(seen, "no page fault reported: {}", diagnostics(m));
    let fault_va = m.ums_events(0).iter().rev().find_map(|e| match e {
        UmsEvent::PageFault { va, .. } => Some(*va),
        _ => None,
    });
    assert_eq!(fault_va, Some(va), "the fault names the VA written");
    no_fault(m);
}

fn translate(m: &Machine, p: &Proc<'_>, va: u64, access: Access) -> Result<u64, FaultReason> {
    m.gpu_va_translate(0, p.p.pid, rvgpu_hw::addr::GpuVa::new(va), access)
        .expect("a GpuMmu process")
        .map(|(pa, _)| pa)
        .map_err(|f| f.reason)
}

fn untouched(m: &Machine, b: &Allocation<SimMem>) {
    for off in (0..b.size).step_by(8) {
        assert_eq!(
            b.mem.load(off),
            PATTERN,
            "word {off:#x} written; {}",
            diagnostics(m)
        );
    }
}

/// Reserve gives a VA that maps nothing: a queue writing there faults and writes nothing.
#[test]
fn reserved_va_faults_before_map() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let b = buffer(&m, &p.k, 1);
    let min = 0x6000_0000_0000;
    let max = 0x6000_1000_0000;
    let va = okk(
        &m,
        p.k.reserve_gpu_va(&ReserveGpuVa {
            minimum: min,
            maximum: max,
            size: 0x2_0000,
            ..ReserveGpuVa::default()
        }),
    );
    assert!(
        va >= min && va + 0x2_0000 <= max,
        "{va:#x} outside the window"
    );
    assert_eq!(va % 0x1_0000, 0, "reservations are 64 KiB aligned");
    assert_eq!(
        translate(&m, &p, va, Access::Write),
        Err(FaultReason::NotPresent)
    );
    gpu_write_faults(&m, &p, va + 8);
    untouched(&m, &b);
}

/// Map part of an allocation at a VA the process chose: the queue's writes through that VA
/// land at the mapped offset of the allocation, and the paging fence value is reached.
#[test]
fn map_sub_range_at_chosen_va_is_written_by_queue() {
    for mode in [Mode::Step, Mode::Threaded] {
        let m = with_doorbells(mode, 4);
        let p = process(&m);
        let b = buffer(&m, &p.k, 4);
        assert_eq!(
            okk(&m, p.k.reserve_gpu_va(&reserve_at(CHOSEN, 0x1_0000))),
            CHOSEN
        );
        // Pages 1 and 2 of the allocation at CHOSEN + 4 KiB.
        let r = okk(
            &m,
            map_wait(&p.k, &p.pq, &map(&p.pq, CHOSEN + PAGE, b.handle, 1, 2)),
        );
        assert_eq!(r.va, CHOSEN + PAGE);
        assert!(r.paging_fence_value > 0);
        assert!(
            p.pq.fence_cpu.value() >= r.paging_fence_value,
            "paging fence not reached"
        );
        gpu_write(&m, &p.k, CHOSEN + PAGE + 8, 0x1111);
        gpu_write(&m, &p.k, CHOSEN + 2 * PAGE + 16, 0x2222);
        assert_eq!(b.mem.load(PAGE + 8), 0x1111, "allocation page 1");
        assert_eq!(b.mem.load(2 * PAGE + 16), 0x2222, "allocation page 2");
        assert_eq!(b.mem.load(8), PATTERN, "page 0 is not mapped there");
        // The pages around the mapping stay unmapped.
        assert_eq!(
            translate(&m, &p, CHOSEN, Access::Read),
            Err(FaultReason::NotPresent)
        );
        assert_eq!(
            translate(&m, &p, CHOSEN + 3 * PAGE, Access::Read),
            Err(FaultReason::NotPresent)
        );
        no_fault(&m);
    }
}

/// An offset at or past the allocation's end is refused and maps nothing; a range longer
/// than what the allocation has past its offset repeats that part (24H2 with a WDDM 2.1+
/// driver: VidMmMapGpuVirtualAddressInternal, MapVadVaRange), one page of it as one
/// repeated leaf entry, which the driver writes to every slot of the range.
#[test]
fn map_past_allocation_end_repeats_its_pages_else_refused() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let b = buffer(&m, &p.k, 2);
    okk(&m, p.k.reserve_gpu_va(&reserve_at(CHOSEN, 0x1_0000)));
    let before = m.gpuva_live_counts(0);
    // (base, OffsetInPages, SizeInPages) of the 2-page allocation.
    for (base, offset, size, what) in [
        (CHOSEN, 2, 1, "offset at the end"),
        (CHOSEN, u64::MAX, 1, "offset wrapping"),
        (0, 1, u64::MAX / 2, "size wrapping"),
    ] {
        refused(
            map_wait(&p.k, &p.pq, &map(&p.pq, base, b.handle, offset, size)),
            STATUS_INVALID_PARAMETER,
            what,
        );
    }
    assert_eq!(m.gpuva_live_counts(0), before, "nothing recorded");
    for i in 0..3 {
        assert_eq!(
            translate(&m, &p, CHOSEN + i * PAGE, Access::Read),
            Err(FaultReason::NotPresent)
        );
    }
    // Pages 1.. of the allocation over 3 pages: page 1 three times (Repeat); SizeInPages 0
    // at offset 1 is the allocation's size, page 1 twice.
    let (rep, rep2) = (CHOSEN + 8 * PAGE, CHOSEN + 16 * PAGE);
    okk(&m, map_wait(&p.k, &p.pq, &map(&p.pq, rep, b.handle, 1, 3)));
    let page1 = translate(&m, &p, rep, Access::Write).expect("mapped");
    for i in 1..3 {
        assert_eq!(translate(&m, &p, rep + i * PAGE, Access::Write), Ok(page1));
    }
    gpu_write(&m, &p.k, rep + 2 * PAGE + 8, 0x3333);
    assert_eq!(
        b.mem.load(PAGE + 8),
        0x3333,
        "the third page is the allocation's page 1"
    );
    okk(&m, map_wait(&p.k, &p.pq, &map(&p.pq, rep2, b.handle, 1, 0)));
    assert_eq!(translate(&m, &p, rep2 + PAGE, Access::Read), Ok(page1));
    let whole = okk(
        &m,
        map_wait(&p.k, &p.pq, &map(&p.pq, CHOSEN, b.handle, 0, 0)),
    );
    assert_eq!(whole.va, CHOSEN);
    assert!(translate(&m, &p, CHOSEN + PAGE, Access::Write).is_ok());
    assert_eq!(
        translate(&m, &p, CHOSEN + 2 * PAGE, Access::Read),
        Err(FaultReason::NotPresent)
    );
    no_fault(&m);
}

/// A process cannot map another process's allocation (its handle names nothing of the
/// caller's: DxgkMapGpuVirtualAddress), nor use another process's paging queue.
#[test]
fn map_of_another_process_allocation_refused() {
    let m = with_doorbells(Mode::Step, 4);
    let a = process(&m);
    let b = process(&m);
    let secret = buffer(&m, &a.k, 1);
    refused(
        b.k.map_gpu_va(&map(&b.pq, 0, secret.handle, 0, 1)),
        STATUS_INVALID_PARAMETER,
        "A's allocation in B",
    );
    let own = buffer(&m, &b.k, 1);
    refused(
        b.k.map_gpu_va(&map(&a.pq, 0, own.handle, 0, 1)),
        STATUS_INVALID_PARAMETER,
        "A's paging queue in B",
    );
    assert_eq!(
        m.gpuva_live_counts(0).2,
        2 * umd_maps(&m),
        "nothing mapped but what each UMD mapped for its buffer"
    );
    untouched(&m, &secret);
}

/// Free unmaps (through the driver, TLB flushed: VidMm's strict check fails the run if the
/// GPU still holds a translation) and releases the VA: the queue that wrote there before now
/// faults, never reaching the old pages. Step and threaded.
#[test]
fn free_then_access_faults_never_stale() {
    for mode in [Mode::Step, Mode::Threaded] {
        let m = with_doorbells(mode, 4);
        let p = process(&m);
        let b = buffer(&m, &p.k, 2);
        let r = okk(&m, map_wait(&p.k, &p.pq, &map(&p.pq, 0, b.handle, 0, 2)));
        // Through the TLB once, so a missing flush would leave a translation behind.
        gpu_write(&m, &p.k, r.va, 0x7777);
        assert_eq!(b.mem.load(0), 0x7777);
        b.mem.store(0, PATTERN);
        let mut bad = vec![(r.va + PAGE, "not a range start"), (0, "BaseAddress 0")];
        // Under 24H2 the buffer's VA is a range its UMD's Map made, not VidMm's own.
        if va_at_create(&m) {
            bad.push((b.gpu_va, "VidMm's own range"));
        }
        for (va, what) in bad {
            refused(p.k.free_gpu_va(va, PAGE), STATUS_INVALID_PARAMETER, what);
        }
        // The queue that will write there: made now, so its ring does not reuse the freed VA.
        let late = okk(&m, UserQueue::new(p.k, &config(0)));
        okk(&m, p.k.free_gpu_va(r.va, PAGE));
        assert_eq!(
            translate(&m, &p, r.va, Access::Write),
            Err(FaultReason::NotPresent)
        );
        refused(
            p.k.free_gpu_va(r.va, PAGE),
            STATUS_INVALID_PARAMETER,
            "freed twice",
        );
        gpu_write_faults_on(&m, &p, late, r.va);
        untouched(&m, &b);
    }
}

/// Mapping a VA that maps one allocation to another replaces the mapping: the queue's next
/// write lands in the new allocation, the old one is not touched.
#[test]
fn remap_va_from_one_allocation_to_another() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let a = buffer(&m, &p.k, 1);
    let b = buffer(&m, &p.k, 1);
    let first = okk(
        &m,
        map_wait(&p.k, &p.pq, &map(&p.pq, CHOSEN, a.handle, 0, 1)),
    );
    gpu_write(&m, &p.k, CHOSEN, 0xAAAA);
    assert_eq!(a.mem.load(0), 0xAAAA);
    let second = okk(
        &m,
        map_wait(&p.k, &p.pq, &map(&p.pq, CHOSEN, b.handle, 0, 1)),
    );
    assert_eq!(second.va, CHOSEN);
    assert!(
        second.paging_fence_value > first.paging_fence_value,
        "the paging fence advances"
    );
    gpu_write(&m, &p.k, CHOSEN + 8, 0xBBBB);
    assert_eq!(b.mem.load(8), 0xBBBB, "the new allocation");
    assert_eq!(a.mem.load(8), PATTERN, "the old allocation is not written");
    let o = 2 * umd_maps(&m);
    assert_eq!(
        m.gpuva_live_counts(0),
        (1 + runtime_queue(&m), 1 + o, 1 + o),
        "one queue, one range, one mapping (besides the runtime's)"
    );
    no_fault(&m);
}

/// `NoAccess`: a range VidMm places that maps nothing, and over a mapped range it takes the
/// mapping away; either way the GPU faults.
#[test]
fn no_access_range_faults() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let b = buffer(&m, &p.k, 2);
    let none = okk(
        &m,
        map_wait(
            &p.k,
            &p.pq,
            &MapGpuVa {
                paging_queue: p.pq.handle,
                size_in_pages: 2,
                protection: GpuVaProtection::NO_ACCESS,
                ..MapGpuVa::default()
            },
        ),
    );
    assert_eq!(
        translate(&m, &p, none.va, Access::Read),
        Err(FaultReason::NotPresent)
    );
    okk(
        &m,
        map_wait(&p.k, &p.pq, &map(&p.pq, CHOSEN, b.handle, 0, 2)),
    );
    assert!(translate(&m, &p, CHOSEN + PAGE, Access::Write).is_ok());
    okk(
        &m,
        map_wait(
            &p.k,
            &p.pq,
            &MapGpuVa {
                paging_queue: p.pq.handle,
                base: CHOSEN + PAGE,
                size_in_pages: 1,
                protection: GpuVaProtection::NO_ACCESS,
                ..MapGpuVa::default()
            },
        ),
    );
    assert!(
        translate(&m, &p, CHOSEN, Access::Write).is_ok(),
        "the rest stays mapped"
    );
    assert_eq!(
        translate(&m, &p, CHOSEN + PAGE, Access::Read),
        Err(FaultReason::NotPresent)
    );
    gpu_write_faults(&m, &p, CHOSEN + PAGE);
    untouched(&m, &b);
}

/// `NoAccess` with `Write`, `Execute` or `Zero` is STATUS_INVALID_PARAMETER, as in 24H2, and
/// records nothing.
#[test]
fn no_access_with_another_protection_refused() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let before = m.gpuva_live_counts(0);
    for (other, what) in [
        (GpuVaProtection::WRITE, "Write"),
        (GpuVaProtection::EXECUTE, "Execute"),
        (GpuVaProtection::ZERO, "Zero"),
    ] {
        refused(
            map_wait(
                &p.k,
                &p.pq,
                &MapGpuVa {
                    paging_queue: p.pq.handle,
                    size_in_pages: 2,
                    protection: GpuVaProtection::NO_ACCESS | other,
                    ..MapGpuVa::default()
                },
            ),
            STATUS_INVALID_PARAMETER,
            what,
        );
    }
    assert_eq!(m.gpuva_live_counts(0), before, "nothing recorded");
    no_fault(&m);
}

/// Without `Write` the mapping is read-only: the GPU's walk of the process's tables reports
/// `ReadOnly` for a write, reads work, and a queue FILL faults with nothing written.
#[test]
fn read_only_mapping_write_faults_read_only() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let b = buffer(&m, &p.k, 1);
    let r = okk(
        &m,
        map_wait(
            &p.k,
            &p.pq,
            &MapGpuVa {
                protection: GpuVaProtection::READ,
                ..map(&p.pq, 0, b.handle, 0, 1)
            },
        ),
    );
    assert!(translate(&m, &p, r.va, Access::Read).is_ok());
    assert_eq!(
        translate(&m, &p, r.va, Access::Write),
        Err(FaultReason::ReadOnly)
    );
    gpu_write_faults(&m, &p, r.va);
    untouched(&m, &b);
}

/// Protection and reservation values Windows refuses from user mode: `SystemUseOnly`,
/// reserved bits, `Zero` (the driver reports `ZeroInPteSupported` = 0), `NO_COMMIT`
/// reservations; alignment, size and window rules; a taken range. (A Map's unaligned base is
/// rounded down, not refused.)
#[test]
fn reserve_and_map_argument_rules() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let b = buffer(&m, &p.k, 1);
    let inv = STATUS_INVALID_PARAMETER;
    for (prot, what) in [
        (GpuVaProtection::SYSTEM_USE_ONLY | RW, "SystemUseOnly"),
        (GpuVaProtection(1 << 5), "reserved bit"),
        (GpuVaProtection::ZERO, "Zero"),
    ] {
        refused(
            map_wait(
                &p.k,
                &p.pq,
                &MapGpuVa {
                    protection: prot,
                    ..map(&p.pq, 0, b.handle, 0, 1)
                },
            ),
            inv,
            what,
        );
    }
    // An unaligned base is no refusal: 24H2's VidMm rounds it down to its page
    // (`M:VIDMM_GLOBAL::VidMmMapGpuVirtualAddress` @0x1400F4F90).
    let rounded = okk(
        &m,
        map_wait(&p.k, &p.pq, &map(&p.pq, CHOSEN + 8, b.handle, 0, 1)),
    );
    assert_eq!(rounded.va, CHOSEN, "unaligned base rounded down");
    okk(&m, p.k.free_gpu_va(CHOSEN, PAGE));
    refused(
        map_wait(&p.k, &p.pq, &map(&p.pq, 0, 0, 0, 1)),
        inv,
        "no allocation",
    );
    let anywhere = reserve_at(0, 0x1_0000);
    for (r, what) in [
        (
            reserve_at(CHOSEN + PAGE, 0x1_0000),
            "base not 64 KiB aligned",
        ),
        (reserve_at(CHOSEN, 100), "size not 4 KiB"),
        (reserve_at(CHOSEN, 0), "size 0"),
        (
            ReserveGpuVa {
                reservation_type: RESERVE_NO_COMMIT,
                ..anywhere
            },
            "NO_COMMIT from user mode",
        ),
        (
            ReserveGpuVa {
                reservation_type: RESERVE_ZERO,
                ..anywhere
            },
            "ZERO without zero PTEs",
        ),
        (
            ReserveGpuVa {
                minimum: CHOSEN,
                maximum: CHOSEN,
                ..anywhere
            },
            "empty window",
        ),
    ] {
        refused(p.k.reserve_gpu_va(&r), inv, what);
    }
    okk(&m, p.k.reserve_gpu_va(&reserve_at(CHOSEN, 0x2_0000)));
    refused(
        p.k.reserve_gpu_va(&reserve_at(CHOSEN + 0x1_0000, 0x1_0000)),
        STATUS_UNSUCCESSFUL,
        "overlap",
    );
    refused(
        p.k.reserve_gpu_va(&reserve_at(0x1_0000, 0x1_0000)),
        STATUS_UNSUCCESSFUL,
        "VidMm's low region",
    );
    // A map reaching out of the reservation is neither inside it nor on free space.
    refused(
        map_wait(
            &p.k,
            &p.pq,
            &MapGpuVa {
                size_in_pages: 2,
                protection: GpuVaProtection::NO_ACCESS,
                ..map(&p.pq, CHOSEN + 0x1_F000, 0, 0, 2)
            },
        ),
        STATUS_UNSUCCESSFUL,
        "straddles the reservation's end",
    );
    no_fault(&m);
}

/// An allocation mapped at several VAs, destroyed, leaves no mapping: VidMm unmaps every VA;
/// the range Map made for it goes, a reserved range stays reserved (no access).
#[test]
fn destroyed_allocation_leaves_no_mapping() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let b = buffer(&m, &p.k, 2);
    okk(&m, p.k.reserve_gpu_va(&reserve_at(CHOSEN, 0x1_0000)));
    let x = okk(
        &m,
        map_wait(&p.k, &p.pq, &map(&p.pq, CHOSEN, b.handle, 0, 2)),
    )
    .va;
    let y = okk(&m, map_wait(&p.k, &p.pq, &map(&p.pq, 0, b.handle, 1, 1))).va;
    let (q, o) = (1 + runtime_queue(&m), umd_maps(&m));
    assert_eq!(m.gpuva_live_counts(0), (q, 2 + o, 2 + o));
    okk(
        &m,
        p.k.destroy_allocation2(
            b.handle,
            DestroyFlags {
                assume_not_in_use: true,
            },
        ),
    );
    for va in [x, x + PAGE, y] {
        assert_eq!(
            translate(&m, &p, va, Access::Read),
            Err(FaultReason::NotPresent),
            "{va:#x}"
        );
    }
    assert_eq!(
        m.gpuva_live_counts(0),
        (q, 1, 0),
        "the reservation stays, the ranges Map made go (the UMD's too)"
    );
    okk(&m, p.k.free_gpu_va(CHOSEN, 0x1_0000));
    assert_eq!(m.gpuva_live_counts(0), (q, 0, 0));
    no_fault(&m);
}

/// A mapping of an allocation that is not resident faults until MakeResident, as the
/// allocation's own VA does ("Access to nonresident allocation"): eviction takes the mapping
/// away, page-in brings it back at the allocation's new place.
#[test]
fn mapping_follows_residency() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let pdd = AllocationPdd {
        magic: PDD_MAGIC,
        version: ALLOCATION_PDD_VERSION,
        size: 2 * PAGE,
        kind: AllocationKind::Buffer as u32,
        flags: 0,
        reserved: 0,
    };
    let g = okk(&m, p.k.create_allocation_pdd(&pdd));
    let r = okk(&m, map_wait(&p.k, &p.pq, &map(&p.pq, 0, g.handle, 0, 2)));
    assert_eq!(
        translate(&m, &p, r.va, Access::Read),
        Err(FaultReason::NotPresent),
        "not resident yet"
    );
    okk(
        &m,
        p.k.make_resident(&[g.handle], MakeResidentFlags::default()),
    );
    assert!(matches!(
        m.allocation_residency(0, g.handle).unwrap().0,
        Place::Local { .. }
    ));
    let in_vram = okk(&m, translate(&m, &p, r.va + PAGE, Access::Write));
    // Under the pages' reading the allocation has a VA of its own from the create.
    if va_at_create(&m) {
        assert_eq!(
            Ok(in_vram),
            translate(&m, &p, g.gpu_va + PAGE, Access::Write),
            "both VAs, one page"
        );
    } else {
        assert_eq!(g.gpu_va, 0, "24H2: no VA from the create");
    }
    gpu_write(&m, &p.k, r.va + PAGE, 0x4444);
    okk(&m, p.k.evict(&[g.handle], EvictFlags::default()));
    assert_eq!(
        m.allocation_residency(0, g.handle).unwrap().0,
        Place::Evicted
    );
    assert_eq!(
        translate(&m, &p, r.va, Access::Read),
        Err(FaultReason::NotPresent),
        "evicted"
    );
    okk(
        &m,
        p.k.make_resident(&[g.handle], MakeResidentFlags::default()),
    );
    assert!(translate(&m, &p, r.va, Access::Read).is_ok(), "back");
    // The write made through the mapping went out and came back with the allocation.
    let dst = buffer(&m, &p.k, 1);
    let mut q = okk(&m, UserQueue::new(p.k, &config(0)));
    submit_wait(
        &m,
        &mut q,
        &[Command::Copy {
            src: r.va + PAGE,
            dst: dst.gpu_va,
            bytes: 8,
        }],
    );
    assert_eq!(dst.mem.load(0), 0x4444);
    no_fault(&m);
}

/// Process exit frees everything, orderly (UM-17) or killed (UM-18): paging queues with
/// their fences, reservations and mappings; the OS's object counts return to what they were.
#[test]
fn process_exit_frees_everything() {
    for kill in [false, true] {
        let m = with_doorbells(Mode::Step, 4);
        let counts = |m: &Machine| {
            (
                m.ums_live_counts(0),
                m.gpuva_live_counts(0),
                // Fence objects; their pages stay with the OS for the machine's life.
                m.fence_live_counts(0).0,
            )
        };
        let before = counts(&m);
        let p = process(&m);
        let b = buffer(&m, &p.k, 2);
        let _second_queue = okk(&m, p.k.create_paging_queue(1));
        okk(&m, p.k.reserve_gpu_va(&reserve_at(CHOSEN, 0x1_0000)));
        okk(
            &m,
            map_wait(&p.k, &p.pq, &map(&p.pq, CHOSEN, b.handle, 0, 1)),
        );
        okk(&m, map_wait(&p.k, &p.pq, &map(&p.pq, 0, b.handle, 0, 2)));
        okk(&m, p.k.reserve_gpu_va(&reserve_at(0, 0x4_0000)));
        let o = umd_maps(&m);
        assert_eq!(
            m.gpuva_live_counts(0),
            (2 + runtime_queue(&m), 3 + o, 2 + o)
        );
        if kill {
            ok(&m, m.kill_process(&p.p));
        } else {
            ok(&m, m.exit_process(&p.p));
        }
        assert_eq!(counts(&m), before, "kill: {kill}");
        no_fault(&m);
    }
}

/// Paging queues: each has its own fence; destroying one destroys its fence and makes its
/// handle invalid (for Map too); another process cannot destroy it.
#[test]
fn paging_queue_create_destroy() {
    let m = with_doorbells(Mode::Step, 4);
    let a = process(&m);
    let b = process(&m);
    let q2 = okk(&m, a.k.create_paging_queue(-1));
    assert_ne!(q2.handle, a.pq.handle);
    assert_ne!(q2.fence, a.pq.fence);
    assert_eq!(q2.fence_cpu.value(), 0);
    refused(
        b.k.destroy_paging_queue(q2.handle),
        STATUS_INVALID_PARAMETER,
        "another process's queue",
    );
    let buf = buffer(&m, &a.k, 1);
    let r = okk(&m, map_wait(&a.k, &q2, &map(&q2, 0, buf.handle, 0, 1)));
    assert_eq!(r.paging_fence_value, 1, "the queue's own fence");
    assert_eq!(q2.fence_cpu.value(), 1);
    okk(&m, a.k.destroy_paging_queue(q2.handle));
    refused(
        a.k.destroy_paging_queue(q2.handle),
        STATUS_INVALID_PARAMETER,
        "destroyed twice",
    );
    refused(
        a.k.map_gpu_va(&map(&q2, 0, buf.handle, 0, 1)),
        STATUS_INVALID_PARAMETER,
        "destroyed queue",
    );
    // A handle no longer in the caller's table (24H2
    // `K:WaitForSynchronizationObjectFromCpu` @0x1402AD200).
    refused(
        a.k.wait_for_fence(q2.fence, 1),
        STATUS_INVALID_PARAMETER,
        "its fence went with it",
    );
    no_fault(&m);
}

/// A range the process reserved where VidMm would have put the next allocation's own VA is
/// stepped over: the allocation lands elsewhere and the reserved range still maps nothing.
#[test]
fn vidmm_allocation_vas_avoid_process_reservations() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let first = buffer(&m, &p.k, 1);
    // VidMm's next VA is past `first` and a guard page (its own, pages' reading) or below it
    // (Map's, top down, 24H2): take the 64 KiB there.
    let base = if va_at_create(&m) {
        (first.gpu_va + 2 * PAGE).next_multiple_of(0x1_0000)
    } else {
        (first.gpu_va & !0xFFFF) - 0x1_0000
    };
    okk(&m, p.k.reserve_gpu_va(&reserve_at(base, 0x1_0000)));
    let big = buffer(&m, &p.k, 64);
    let (lo, hi) = (big.gpu_va, big.gpu_va + big.size);
    assert!(
        hi <= base || lo >= base + 0x1_0000,
        "[{lo:#x}, {hi:#x}) overlaps the reservation at {base:#x}"
    );
    assert_eq!(
        translate(&m, &p, base, Access::Read),
        Err(FaultReason::NotPresent)
    );
    gpu_write(&m, &p.k, big.gpu_va + big.size - 8, 0x5151);
    assert_eq!(big.mem.load(big.size - 8), 0x5151);
    no_fault(&m);
}

/// VidMm tells the driver each mapped page's offset in its allocation
/// (`AllocationOffsetInBytes`), not its offset in the mapping: a second mapping of a ring's
/// later page leaves the driver's record of where the ring starts alone, so a doorbell whose
/// ring is at the allocation's own VA is still accepted.
#[test]
fn sub_range_mapping_reports_its_allocation_offset() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let context = okk(&m, p.k.create_context(0));
    let mut qp = hw_queue_pdd();
    let queue = okk(&m, p.k.create_hw_queue(context, true, qp.as_mut_bytes())).handle;
    let ring = okk(
        &m,
        p.k.create_allocation_as(2 * PAGE, AllocationKind::Commands),
    );
    let control = okk(
        &m,
        p.k.create_allocation_as(RingControl::SIZE, AllocationKind::RingControl),
    );
    let second = okk(
        &m,
        map_wait(
            &p.k,
            &p.pq,
            &MapGpuVa {
                protection: RW | GpuVaProtection::EXECUTE,
                ..map(&p.pq, 0, ring.handle, 1, 1)
            },
        ),
    );
    assert_ne!(second.va, ring.gpu_va + PAGE);
    let q = RawQueue {
        queue,
        ring,
        control,
        doorbell: 0,
    };
    create_doorbell(&m, &p.k, &q);
    no_fault(&m);
}

/// Writes `cmds` then `PROGRESS(value)` at the start of a ring, publishes the write pointer in
/// its control block and rings `db`; returns after the queue's progress fence reached `value`.
fn run_ring(
    m: &Machine,
    k: &SimKmt<'_>,
    (ring, control): (&Allocation<SimMem>, &Allocation<SimMem>),
    db: &rvgpu_umd::kmt::Doorbell<rvgpu_simos::kmt::SimDoorbell>,
    cmds: &[Command],
    value: u64,
) {
    use rvgpu_umd::kmt::DoorbellCpu;
    // Completion through a native fence of the test's own: whether the OS gave the queue a
    // progress fence depends on its reading (24H2 gives a user-mode queue none).
    let done = okk(m, k.create_native_fence(0));
    let mut off = 0;
    let signal = done.gpu.signal(value);
    for c in cmds.iter().chain(std::iter::once(&signal)) {
        let mut w = [0u64; 8];
        let n = c.encode(&mut w).unwrap();
        for word in w.iter().take(n) {
            ring.mem.store(off, *word);
            off += 8;
        }
    }
    db.cpu.set_last_queued(value);
    control.mem.store(RingControl::WRITE_PTR, off);
    db.cpu.ring(off);
    okk(m, k.wait_for_fence(done.kmt, value));
    okk(m, k.destroy_native_fence(done.kmt));
}

/// The driver keeps every current mapping of an allocation, not only the last one VidMm
/// wrote at offset 0: a ring allocation the process also maps at a VA of its own, which it
/// then frees, still gets a doorbell (through the VA VidMm gave it) and the queue runs from
/// it; a ring allocation mapped nowhere (not resident, so neither its own VA nor the process's
/// mapping of it holds entries) is refused until it is made resident.
#[test]
fn ring_mapped_twice_doorbell_uses_any_current_mapping() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let target = buffer(&m, &p.k, 1);
    let context = okk(&m, p.k.create_context(0));
    let new_queue = || {
        let mut qp = hw_queue_pdd();
        okk(&m, p.k.create_hw_queue(context, true, qp.as_mut_bytes()))
    };
    let control = okk(
        &m,
        p.k.create_allocation_as(RingControl::SIZE, AllocationKind::RingControl),
    );
    let ring = okk(&m, p.k.create_allocation_as(PAGE, AllocationKind::Commands));
    // The ring also at CHOSEN, offset 0, in a range the process reserved.
    okk(&m, p.k.reserve_gpu_va(&reserve_at(CHOSEN, 0x1_0000)));
    let exec = RW | GpuVaProtection::EXECUTE;
    okk(
        &m,
        map_wait(
            &p.k,
            &p.pq,
            &MapGpuVa {
                protection: exec,
                ..map(&p.pq, CHOSEN, ring.handle, 0, 0)
            },
        ),
    );
    // The process's mapping goes again: the one VidMm made at creation is still there.
    okk(&m, p.k.free_gpu_va(CHOSEN, 0x1_0000));
    let q = new_queue();
    let mut pdd = rvgpu_hw::pdd::DoorbellPdd::for_ring(4096);
    let db = okk(
        &m,
        p.k.create_doorbell(q.handle, ring.handle, control.handle, pdd.as_mut_bytes()),
    );
    okk(&m, p.k.connect_doorbell(db.handle));
    run_ring(
        &m,
        &p.k,
        (&ring, &control),
        &db,
        &[Command::Fill {
            dst: target.gpu_va,
            bytes: 8,
            pattern: 0x5151,
        }],
        1,
    );
    assert_eq!(target.mem.load(0), 0x5151, "the queue ran from its ring");

    // A ring allocation that is not resident is mapped nowhere: refused, also after the
    // process maps it (its entries stay invalid until MakeResident), accepted after.
    let pdd2 = rvgpu_umd::kmt::allocation_private_data(PAGE, AllocationKind::Commands);
    let cold = okk(&m, p.k.create_allocation_pdd(&pdd2));
    let q2 = new_queue();
    let mut pdd = rvgpu_hw::pdd::DoorbellPdd::for_ring(4096);
    refused(
        p.k.create_doorbell(q2.handle, cold.handle, control.handle, pdd.as_mut_bytes())
            .map(|_| ()),
        STATUS_INVALID_PARAMETER,
        "a ring mapped nowhere",
    );
    okk(&m, p.k.reserve_gpu_va(&reserve_at(CHOSEN, 0x1_0000)));
    okk(
        &m,
        map_wait(
            &p.k,
            &p.pq,
            &MapGpuVa {
                protection: exec,
                ..map(&p.pq, CHOSEN, cold.handle, 0, 0)
            },
        ),
    );
    refused(
        p.k.create_doorbell(q2.handle, cold.handle, control.handle, pdd.as_mut_bytes())
            .map(|_| ()),
        STATUS_INVALID_PARAMETER,
        "a ring whose mappings hold no entries",
    );
    okk(
        &m,
        p.k.make_resident(&[cold.handle], MakeResidentFlags::default())
            .map_err(|e| match e {
                rvgpu_umd::kmt::MakeResidentError::Status(s) => s,
                other => panic!("{other:?}"),
            }),
    );
    okk(
        &m,
        p.k.create_doorbell(q2.handle, cold.handle, control.handle, pdd.as_mut_bytes()),
    );
    no_fault(&m);
}

/// A context of `p`'s device and a monitored fence at 0 for `D3DKMTUpdateGpuVirtualAddress`.
fn update_target(m: &Machine, p: &Proc<'_>) -> (UpdateGpuVa, rvgpu_simos::MonitoredFence) {
    let context = okk(m, p.k.create_context(0));
    let (fence, f) = okk(m, p.k.create_monitored_fence(0));
    (
        UpdateGpuVa {
            context,
            fence,
            fence_value: 0,
            do_not_wait: false,
        },
        f,
    )
}

/// `D3DKMTUpdateGpuVirtualAddress` returns with the update queued, nothing applied (its fence
/// not at `FenceValue` yet: with it reached, VidMm's worker may run it before the caller
/// looks); once the fence is signalled and the caller waits for `FenceValue + 1` VidMm has
/// applied MAP, COPY and UNMAP in order inside a reserved range, through the driver: a MAP
/// whose allocation range is smaller than its VA range repeats it, a COPY takes what the
/// source maps at that point of the list, an UNMAP leaves no access; the queue's writes land
/// where the final tables say.
#[test]
fn update_gpu_va_map_copy_unmap_in_order() {
    for mode in [Mode::Step, Mode::Threaded] {
        let m = with_doorbells(mode, 4);
        let p = process(&m);
        let b = buffer(&m, &p.k, 4);
        okk(&m, p.k.reserve_gpu_va(&reserve_at(CHOSEN, 0x2_0000)));
        let (u, fence) = update_target(&m, &p);
        let u = UpdateGpuVa {
            fence_value: 1,
            ..u
        };
        let repeat = UpdateGpuVaOp {
            // Allocation page 3, four times over.
            allocation_size: PAGE,
            ..UpdateGpuVaOp::map(CHOSEN + 12 * PAGE, 4 * PAGE, b.handle, 3 * PAGE)
        };
        okk(
            &m,
            p.k.update_gpu_va(
                &u,
                &[
                    UpdateGpuVaOp::map(CHOSEN, 2 * PAGE, b.handle, PAGE),
                    UpdateGpuVaOp::copy(CHOSEN, 2 * PAGE, CHOSEN + 8 * PAGE),
                    UpdateGpuVaOp::unmap(CHOSEN + PAGE, PAGE),
                    repeat,
                ],
            ),
        );
        assert_eq!(fence.value(), 0, "queued, not applied, at return");
        let page_of = |i: u64| translate(&m, &p, CHOSEN + i * PAGE, Access::Write);
        assert_eq!(page_of(0), Err(FaultReason::NotPresent), "not at return");
        okk(&m, p.k.signal_fence_from_cpu(u.fence, 1));
        okk(&m, p.k.wait_for_fence(u.fence, 2));
        let page_of = |i: u64| translate(&m, &p, CHOSEN + i * PAGE, Access::Write);
        let b_page = |n: u64| translate(&m, &p, b.gpu_va + n * PAGE, Access::Write);
        assert_eq!(page_of(0), b_page(1));
        assert_eq!(
            page_of(1),
            Err(FaultReason::NotPresent),
            "unmapped after the copy"
        );
        assert_eq!(page_of(8), b_page(1), "the copy took the mapping of page 0");
        assert_eq!(page_of(9), b_page(2), "and of page 1, before the unmap");
        for i in 12..16 {
            assert_eq!(page_of(i), b_page(3), "repeat {i}");
        }
        gpu_write(&m, &p.k, CHOSEN + 9 * PAGE + 8, 0x9999);
        gpu_write(&m, &p.k, CHOSEN + 14 * PAGE + 16, 0x3333);
        assert_eq!(b.mem.load(2 * PAGE + 8), 0x9999);
        assert_eq!(b.mem.load(3 * PAGE + 16), 0x3333);
        gpu_write_faults(&m, &p, CHOSEN + PAGE + 8);
        assert_eq!(
            b.mem.load(PAGE + 8),
            PATTERN,
            "nothing written through the hole"
        );
    }
}

/// The update waits for `hFenceObject` to reach `FenceValue` before it touches the tables:
/// queued, a CPU wait for `FenceValue + 1` ends unsatisfied while nobody signals it, and after
/// a CPU signal of `FenceValue` VidMm's worker runs it; a `DoNotWait` update runs without the
/// fence, but also only on VidMm's worker, not in the call.
#[test]
fn update_gpu_va_waits_for_its_fence() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let b = buffer(&m, &p.k, 1);
    okk(&m, p.k.reserve_gpu_va(&reserve_at(CHOSEN, 0x1_0000)));
    let (u, fence) = update_target(&m, &p);
    let waits = UpdateGpuVa {
        fence_value: 5,
        ..u
    };
    let op = [UpdateGpuVaOp::map(CHOSEN, PAGE, b.handle, 0)];
    okk(&m, p.k.update_gpu_va(&waits, &op));
    assert!(p.k.wait_for_fence(u.fence, 6).is_err(), "nobody signals 5");
    assert_eq!(
        translate(&m, &p, CHOSEN, Access::Read),
        Err(FaultReason::NotPresent),
        "nothing applied before the fence"
    );
    okk(&m, p.k.signal_fence_from_cpu(u.fence, 5));
    okk(&m, p.k.wait_for_fence(u.fence, 6));
    assert_eq!(
        fence.value(),
        6,
        "run after the signal, then FenceValue + 1"
    );
    assert!(translate(&m, &p, CHOSEN, Access::Read).is_ok());
    let skip = UpdateGpuVa {
        fence_value: 100,
        do_not_wait: true,
        ..u
    };
    okk(
        &m,
        p.k.update_gpu_va(&skip, &[UpdateGpuVaOp::unmap(CHOSEN, PAGE)]),
    );
    assert!(translate(&m, &p, CHOSEN, Access::Read).is_ok(), "queued");
    okk(&m, p.k.wait_for_fence(u.fence, 101));
    assert_eq!(
        translate(&m, &p, CHOSEN, Access::Read),
        Err(FaultReason::NotPresent)
    );
    no_fault(&m);
}

/// A caller that uses the VA after `D3DKMTUpdateGpuVirtualAddress` returned, before its fence
/// reached `FenceValue`, finds it unmapped: the GPU's write faults (24H2 applies the update
/// later, on VidMm's worker, once the fence is reached).
#[test]
fn update_gpu_va_unwaited_mapping_faults() {
    for mode in [Mode::Step, Mode::Threaded] {
        let m = with_doorbells(mode, 4);
        let p = process(&m);
        let b = buffer(&m, &p.k, 1);
        okk(&m, p.k.reserve_gpu_va(&reserve_at(CHOSEN, 0x1_0000)));
        let (u, _) = update_target(&m, &p);
        let u = UpdateGpuVa {
            fence_value: 1,
            ..u
        };
        let q = okk(&m, UserQueue::new(p.k, &config(0)));
        let op = [UpdateGpuVaOp::map(CHOSEN, PAGE, b.handle, 0)];
        okk(&m, p.k.update_gpu_va(&u, &op));
        gpu_write_faults_on(&m, &p, q, CHOSEN + 8);
        assert_eq!(b.mem.load(8), PATTERN, "nothing written");
    }
}

/// DxgkUpdateGpuVirtualAddress / VidMmUpdateGpuVirtualAddress's checks: each refused with
/// STATUS_INVALID_PARAMETER and nothing of the list applied, not even its valid first
/// operation.
#[test]
fn update_gpu_va_argument_rules() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let other = process(&m);
    let b = buffer(&m, &p.k, 2);
    let foreign = buffer(&m, &other.k, 1);
    okk(&m, p.k.reserve_gpu_va(&reserve_at(CHOSEN, 0x1_0000)));
    // A range Map made for itself is not a reserved range.
    let by_map = okk(&m, map_wait(&p.k, &p.pq, &map(&p.pq, 0, b.handle, 0, 1))).va;
    let (u, fence) = update_target(&m, &p);
    let (other_u, _) = update_target(&m, &other);
    let good = UpdateGpuVaOp::map(CHOSEN, PAGE, b.handle, 0);
    let bad_ops: Vec<(&str, UpdateGpuVa, Vec<UpdateGpuVaOp>)> = vec![
        ("no operations", u, vec![]),
        (
            "another process's context",
            UpdateGpuVa {
                context: other_u.context,
                ..u
            },
            vec![good],
        ),
        (
            "another process's fence",
            UpdateGpuVa {
                fence: other_u.fence,
                ..u
            },
            vec![good],
        ),
        (
            "unknown type",
            u,
            vec![
                good,
                UpdateGpuVaOp {
                    operation_type: 4,
                    ..good
                },
            ],
        ),
        (
            "hAllocation 0",
            u,
            vec![good, UpdateGpuVaOp::map(CHOSEN, PAGE, 0, 0)],
        ),
        (
            "another process's allocation",
            u,
            vec![good, UpdateGpuVaOp::map(CHOSEN, PAGE, foreign.handle, 0)],
        ),
        (
            "base not page aligned",
            u,
            vec![good, UpdateGpuVaOp::map(CHOSEN + 8, PAGE, b.handle, 0)],
        ),
        (
            "empty range",
            u,
            vec![good, UpdateGpuVaOp::unmap(CHOSEN, 0)],
        ),
        (
            "allocation size not dividing the range",
            u,
            vec![
                good,
                UpdateGpuVaOp {
                    allocation_size: 2 * PAGE,
                    ..UpdateGpuVaOp::map(CHOSEN, 3 * PAGE, b.handle, 0)
                },
            ],
        ),
        (
            "past the allocation's end",
            u,
            vec![good, UpdateGpuVaOp::map(CHOSEN, 2 * PAGE, b.handle, PAGE)],
        ),
        (
            "outside any reserved range",
            u,
            vec![
                good,
                UpdateGpuVaOp::map(CHOSEN + 0x1_0000, PAGE, b.handle, 0),
            ],
        ),
        (
            "in a range Map made",
            u,
            vec![UpdateGpuVaOp::map(by_map, PAGE, b.handle, 0)],
        ),
        (
            "unmap to the zero state",
            u,
            vec![
                good,
                UpdateGpuVaOp {
                    protection: GpuVaProtection::READ,
                    ..UpdateGpuVaOp::unmap(CHOSEN, PAGE)
                },
            ],
        ),
        (
            "copy onto its own source",
            u,
            vec![good, UpdateGpuVaOp::copy(CHOSEN, 2 * PAGE, CHOSEN + PAGE)],
        ),
        (
            "SystemUseOnly",
            u,
            vec![
                good,
                UpdateGpuVaOp {
                    operation_type: rvgpu_umd::kmt::UPDATE_GPU_VA_MAP_PROTECT,
                    protection: RW | GpuVaProtection::SYSTEM_USE_ONLY,
                    ..good
                },
            ],
        ),
    ];
    for (what, upd, ops) in bad_ops {
        refused(
            p.k.update_gpu_va(&upd, &ops),
            STATUS_INVALID_PARAMETER,
            what,
        );
        assert_eq!(
            translate(&m, &p, CHOSEN, Access::Read),
            Err(FaultReason::NotPresent),
            "{what}: nothing applied"
        );
        assert_eq!(fence.value(), 0, "{what}: no signal");
    }
    okk(&m, p.k.update_gpu_va(&u, &[good]));
    okk(&m, p.k.wait_for_fence(u.fence, 1));
    assert!(translate(&m, &p, CHOSEN, Access::Read).is_ok());
    no_fault(&m);
}

/// `D3DKMTMakeResident` on a chosen paging queue: its paging is signalled on that queue's
/// fence (not another queue's), the value returned is reached, and the allocation is placed
/// and mapped; a queue of another process, or a destroyed one, is refused with no count
/// changed.
#[test]
fn make_resident_on_paging_queue_signals_its_fence() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let other = process(&m);
    let q2 = okk(&m, p.k.create_paging_queue(0));
    // Only the GPU touches it: it goes to VRAM through a TRANSFER on the paging node.
    let mut pdd = rvgpu_umd::kmt::allocation_private_data(2 * PAGE, AllocationKind::Buffer);
    pdd.flags = 0;
    let cold = okk(&m, p.k.create_allocation_pdd(&pdd));
    let mr = |q: &PagingQueue<rvgpu_simos::kmt::SimFence>| {
        p.k.make_resident_on(q, &[cold.handle], MakeResidentFlags::default())
    };
    refused(
        mr(&other.pq).map_err(|e| match e {
            rvgpu_umd::kmt::MakeResidentError::Status(s) => s,
            e => panic!("{e:?}"),
        }),
        STATUS_INVALID_PARAMETER,
        "another process's paging queue",
    );
    assert_eq!(m.allocation_residency(0, cold.handle).map(|r| r.1), Some(0));
    let pf = mr(&q2).expect("make resident");
    assert_eq!(pf.fence, q2.fence, "the chosen queue's fence");
    assert_eq!(pf.value, 1);
    assert!(
        q2.fence_cpu.value() < pf.value,
        "queued (24H2: STATUS_PENDING)"
    );
    okk(&m, p.k.wait_for_fence(pf.fence, pf.value));
    assert!(q2.fence_cpu.value() >= pf.value, "paging fence reached");
    assert_eq!(p.pq.fence_cpu.value(), 0, "the other queue saw no paging");
    let (place, count) = m.allocation_residency(0, cold.handle).unwrap();
    assert!(matches!(place, Place::Local { .. }), "{place:?}");
    assert_eq!(count, 1);
    if va_at_create(&m) {
        assert!(translate(&m, &p, cold.gpu_va, Access::Write).is_ok());
    }
    let again = mr(&q2).expect("make resident again");
    assert_eq!(again.value, 2, "each call takes the queue's next value");
    okk(&m, p.k.destroy_paging_queue(q2.handle));
    assert!(mr(&q2).is_err(), "a destroyed queue");
    assert_eq!(m.allocation_residency(0, cold.handle).map(|r| r.1), Some(2));
    no_fault(&m);
}

/// A step-mode machine with 4 doorbells under the default reading: every paging queue
/// operation is queued to VidMm's paging worker (`PagingWork::Queued`), as 24H2 queues it.
fn paging_behind_machine() -> Machine {
    let mut cfg = rvgpu_simos::MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.doorbells = 4;
    assert_eq!(
        cfg.os.windows.reading().paging_work,
        rvgpu_simos::machine::answers::PagingWork::Queued
    );
    started(cfg)
}

/// DDI-03 with paging queued (24H2's STATUS_PENDING, the default): Map and MakeResident hand back a
/// paging fence value the queue's fence has not reached. GPU work through the VA before the
/// fence reaches it faults, so a UMD path that skipped the wait would run unmapped memory;
/// the UMD's own paths (its queue's ring and control, its buffers) wait and run, and after a
/// CPU wait for the fence the raw mapping reaches its allocation.
#[test]
fn ddi_03_a_pending_map_is_unmapped_until_its_paging_fence() {
    let m = paging_behind_machine();
    let p = process(&m);
    // The UMD's paths wait for their paging fences: queue and buffer work at once.
    let first = buffer(&m, &p.k, 1);
    gpu_write(&m, &p.k, first.gpu_va, 0x1234);
    assert_eq!(first.mem.load(0), 0x1234, "the UMD waited before use");
    // A raw Map: PENDING, nothing in the page tables yet.
    let b = buffer(&m, &p.k, 1);
    let r = okk(&m, p.k.map_gpu_va(&map(&p.pq, 0, b.handle, 0, 1)));
    assert!(
        p.pq.fence_cpu.value() < r.paging_fence_value,
        "the fence value is not reached"
    );
    assert_eq!(
        translate(&m, &p, r.va, Access::Write),
        Err(FaultReason::NotPresent),
        "queued: unmapped"
    );
    // MakeResident on the same queue is queued behind the Map.
    let pf = okk(
        &m,
        p.k.make_resident_on(&p.pq, &[b.handle], MakeResidentFlags::default()),
    );
    assert!(pf.value > r.paging_fence_value);
    assert!(p.pq.fence_cpu.value() < pf.value);
    assert_eq!(
        translate(&m, &p, r.va, Access::Write),
        Err(FaultReason::NotPresent)
    );
    // The wait: the queue catches up, the mapping is there.
    okk(&m, p.k.wait_for_fence(p.pq.fence, pf.value));
    assert!(p.pq.fence_cpu.value() >= pf.value);
    gpu_write(&m, &p.k, r.va, 0x5678);
    assert_eq!(b.mem.load(0), 0x5678);
    // Skipping the wait: the GPU runs into the unmapped VA (a page fault, the device in
    // error), and the allocation is not written.
    let c = buffer(&m, &p.k, 1);
    let q = okk(&m, UserQueue::new(p.k, &config(0)));
    let r = okk(&m, p.k.map_gpu_va(&map(&p.pq, 0, c.handle, 0, 1)));
    assert!(p.pq.fence_cpu.value() < r.paging_fence_value);
    gpu_write_faults_on(&m, &p, q, r.va);
    untouched(&m, &c);
}

/// An unmap that empties a leaf table invalidates its directory entry only (24H2 sends the
/// table no invalidation of its own): the driver forgets the whole span, a later map
/// elsewhere in the span links a fresh table and is written through, and the old VA faults
/// with nothing written.
#[test]
fn ddi_03_an_unmap_emptying_a_leaf_table_leaves_its_span_usable_and_the_old_va_faults() {
    let m = with_doorbells(Mode::Step, 4);
    let p = process(&m);
    let a = buffer(&m, &p.k, 1);
    let b = buffer(&m, &p.k, 1);
    // A 2 MiB span nothing else maps.
    let span = CHOSEN + 3 * 0x20_0000;
    let old = okk(
        &m,
        map_wait(&p.k, &p.pq, &map(&p.pq, span + 4 * PAGE, a.handle, 0, 1)),
    );
    // Through the TLB once, so a missing flush would leave a translation behind.
    gpu_write(&m, &p.k, old.va, 0xA1);
    assert_eq!(a.mem.load(0), 0xA1);
    a.mem.store(0, PATTERN);
    // The queue that will write there: made now, so its ring does not reuse the freed VA.
    let late = okk(&m, UserQueue::new(p.k, &config(0)));
    let tables = m.page_tables_in_use(0);
    okk(&m, p.k.free_gpu_va(old.va, PAGE));
    assert!(
        m.page_tables_in_use(0) < tables,
        "the emptied leaf table is unlinked"
    );
    let new = okk(
        &m,
        map_wait(&p.k, &p.pq, &map(&p.pq, span + 300 * PAGE, b.handle, 0, 1)),
    );
    gpu_write(&m, &p.k, new.va + 8, 0xB2);
    assert_eq!(b.mem.load(8), 0xB2, "the new mapping in the span");
    assert_eq!(
        translate(&m, &p, old.va, Access::Read),
        Err(FaultReason::NotPresent)
    );
    gpu_write_faults_on(&m, &p, late, old.va);
    untouched(&m, &a);
}
