//! Residency (docs/memory.md "Residency"), through the UMD's thunks, the simulated
//! VidMm, the real KMD's paging buffers and the emulated GPU. Allocations only the GPU touches
//! live in VRAM; `D3DKMTEvict` and `D3DKMTMakeResident` move them out and back with TRANSFER,
//! UPDATEPAGETABLE and FLUSHTLB; budget pressure and D3 (UM-14) evict what no device requires.
//! Contents are checked by the GPU copying them into memory the CPU maps, after VidMm has
//! poisoned the VRAM it took back, so a transfer that did not happen shows.

mod common;

use common::residency::*;
use common::*;
use rvgpu_hw::addr::PhysAddr;
use std::time::Duration;

use rvgpu_ddi::ntstatus::{STATUS_DEVICE_REMOVED, STATUS_INVALID_PARAMETER};
use rvgpu_hw::cmd::Command;
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::vidmm::residency::Place;
use rvgpu_simos::{Machine, MachineConfig, Mode, UmsEvent};
use rvgpu_umd::kmt::{
    AllocationCpu, EvictFlags, Kmt, MakeResidentError, MakeResidentFlags, MappedGpu, NtStatus,
};
use rvgpu_umd::submit::{SubmitError, UserQueue};

const BYTES: u64 = 64 * 1024;
const PATTERN: u64 = 0x5E61_0C41_5E61_0C41;

/// The leaf size VidMm maps a large allocation's aligned runs with: a large page where the
/// create gives the allocation a VA of VidMm's own (the pages' reading); 4 KiB under 24H2,
/// where the VA is the process's Map, which may later be unmapped in part (`vidmm::va`).
fn large_leaf(m: &Machine, large: u64) -> u64 {
    let own = m.os_config().windows.reading().allocation_va
        == rvgpu_simos::machine::answers::AllocationVa::AtCreate;
    if own {
        large
    } else {
        4096
    }
}

fn count(m: &Machine, a: &MappedGpu) -> u32 {
    m.allocation_residency(0, a.handle).expect("tracked").1
}

fn is_local(p: Place) -> bool {
    matches!(p, Place::Local { .. })
}

/// The GPU fills `a` with `pattern` and waits for it.
fn gpu_fill(m: &Machine, q: &mut UserQueue<&SimKmt<'_>>, a: &MappedGpu, pattern: u64) {
    submit_wait(
        m,
        q,
        &[Command::Fill {
            dst: a.gpu_va,
            bytes: a.size,
            pattern,
        }],
    );
}

fn all(words: &[u64], v: u64) -> bool {
    words.iter().all(|&w| w == v)
}

fn evict(m: &Machine, k: &SimKmt<'_>, a: &MappedGpu) {
    okk(m, k.evict(&[a.handle], EvictFlags::default()));
}

/// A new allocation is on no residency list: not placed, its VA unmapped, until
/// MakeResident. What only the GPU touches is then placed in VRAM (the driver's preference),
/// cleared before the process sees it; what the CPU maps stays in the aperture.
#[test]
fn residency_gpu_only_allocations_live_in_vram_cleared() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let a = created(&m, &k, BYTES);
    assert_eq!(place(&m, &a), Place::Evicted);
    assert_eq!(count(&m, &a), 0, "created: not resident");
    make_resident(&m, &k, &a);
    assert!(is_local(place(&m, &a)), "{:?}", place(&m, &a));
    assert_eq!(count(&m, &a), 1, "a new allocation is resident");
    assert!(all(&gpu_read(&m, &k, &mut q, &a), 0), "new VRAM is cleared");
    let cpu = okk(&m, k.create_allocation(4096));
    assert_eq!(
        m.allocation_residency(0, cpu.handle).map(|r| r.0),
        Some(Place::Aperture)
    );
    // VRAM another allocation used and gave back is cleared for the next one too.
    gpu_fill(&m, &mut q, &a, PATTERN);
    okk(&m, k.destroy_allocation(a.handle));
    let b = gpu_only(&m, &k, BYTES);
    assert!(all(&gpu_read(&m, &k, &mut q, &b), 0));
    okk(&m, q.close());
    no_fault(&m);
}

/// Evict to zero, then MakeResident: the contents leave VRAM through the paging TRANSFER
/// (VidMm poisons the VRAM it took back) and come back with it; the count follows the calls.
#[test]
fn residency_evict_and_make_resident_move_contents_through_paging() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let a = gpu_only(&m, &k, BYTES);
    gpu_fill(&m, &mut q, &a, PATTERN);
    // Counts balance: one more MakeResident needs one more Evict.
    make_resident(&m, &k, &a);
    assert_eq!(count(&m, &a), 2);
    evict(&m, &k, &a);
    assert!(is_local(place(&m, &a)), "still required once");
    evict(&m, &k, &a);
    assert_eq!(count(&m, &a), 0);
    assert_eq!(
        place(&m, &a),
        Place::Evicted,
        "no work was queued: evicted at once"
    );
    // Evicting what is not required changes nothing, and the call succeeds: 24H2's
    // `K:DxgkEvictInternal` @0x14035E31C does not look at VidMm's answer.
    assert_eq!(k.evict(&[a.handle], EvictFlags::default()), Ok(0));
    assert_eq!(count(&m, &a), 0);
    make_resident(&m, &k, &a);
    assert!(is_local(place(&m, &a)));
    assert!(
        all(&gpu_read(&m, &k, &mut q, &a), PATTERN),
        "contents survived"
    );
    okk(&m, q.close());
    no_fault(&m);
}

/// `NotWrittenTo`: VidMm may drop the VRAM copy, so what the GPU wrote since is lost (the
/// flag is the UMD's promise, and VidMm takes it).
#[test]
fn residency_not_written_to_skips_the_transfer() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let a = gpu_only(&m, &k, BYTES);
    gpu_fill(&m, &mut q, &a, PATTERN);
    evict_not_written_to(&m, &k, &a);
    make_resident(&m, &k, &a);
    let back = gpu_read(&m, &k, &mut q, &a);
    assert!(
        all(&back, 0),
        "the backing store never received the GPU's writes"
    );
    okk(&m, q.close());
}

/// `NotWrittenTo` covers only the latest residency: writes of an earlier one that never left
/// VRAM still reach the backing store when the allocation finally goes.
#[test]
fn residency_not_written_to_keeps_earlier_writes() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let a = gpu_only(&m, &k, BYTES);
    gpu_fill(&m, &mut q, &a, PATTERN);
    evict_only_if_necessary(&m, &k, &a);
    assert!(is_local(place(&m, &a)), "stays until needed");
    make_resident(&m, &k, &a);
    evict_not_written_to(&m, &k, &a);
    assert_eq!(place(&m, &a), Place::Evicted);
    make_resident(&m, &k, &a);
    assert!(
        all(&gpu_read(&m, &k, &mut q, &a), PATTERN),
        "the first fill survived"
    );
    okk(&m, q.close());
    no_fault(&m);
}

/// A GPU access to an evicted allocation faults ("Access to nonresident allocation"): the
/// device goes to error and nothing is written anywhere.
#[test]
fn residency_gpu_access_to_evicted_allocation_faults() {
    let m = started(MachineConfig::single(Mode::Step));
    let (p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let a = gpu_only(&m, &k, BYTES);
    evict(&m, &k, &a);
    assert_eq!(place(&m, &a), Place::Evicted);
    match q.submit(&[Command::Fill {
        dst: a.gpu_va,
        bytes: 8,
        pattern: PATTERN,
    }]) {
        Ok(_) => {}
        Err(SubmitError::Kmt(st)) if st.0 == STATUS_DEVICE_REMOVED => {}
        Err(e) => panic!("submit: {e:?}"),
    }
    let seen = ok(
        &m,
        m.run_until(20_000, Duration::from_secs(10), |m| {
            m.ums_events(0)
                .contains(&UmsEvent::DeviceError { device: p.device })
        }),
    );
    assert!(seen, "no fault: {}", diagnostics(&m));
    assert!(m
        .ums_events(0)
        .iter()
        .any(|e| matches!(e, UmsEvent::PageFault { va, .. } if *va == a.gpu_va)));
}

/// Evict waits for the work queued before it: an allocation a gated batch still uses stays
/// in VRAM until that batch has run, then leaves. Work the OS sees: a user-mode queue's where
/// the OS gave it a progress fence (the pages; 24H2 sees none of it, and the UMD keeps what
/// such work uses resident itself).
#[test]
fn residency_eviction_waits_for_queued_work() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = rvgpu_simos::Windows::PAGES;
    let m = started(cfg);
    let (_p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let gate = okk(&m, k.create_native_fence(0));
    let a = gpu_only(&m, &k, BYTES);
    let v = okk(
        &m,
        q.submit(&[
            gate.wait(1),
            Command::Fill {
                dst: a.gpu_va,
                bytes: a.size,
                pattern: PATTERN,
            },
        ]),
    );
    ok(&m, m.run_until_idle());
    assert!(q.completed() < v);
    evict(&m, &k, &a);
    assert!(is_local(place(&m, &a)), "queued work may still use it");
    let f = m.native_fence_by_kmt(0, gate.kmt).expect("gate");
    ok(&m, m.signal_native_fence_from_cpu(&f, 1));
    okk(&m, q.wait(v));
    // VidMm's next entry evicts it, with what the batch wrote.
    let probe = okk(&m, k.create_allocation(4096));
    assert_eq!(place(&m, &a), Place::Evicted);
    make_resident(&m, &k, &a);
    assert!(all(&gpu_read(&m, &k, &mut q, &a), PATTERN));
    okk(&m, k.destroy_allocation(probe.handle));
    okk(&m, q.close());
    no_fault(&m);
}

/// Budget: MakeResident past the process's budget fails with STATUS_NO_MEMORY and the bytes
/// to trim, changing no count; after the UMD trims, it succeeds. `CantTrimFurther` goes over.
#[test]
fn residency_make_resident_over_budget_fails_whole_and_reports_bytes_to_trim() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.vram_budget = Some(2 * BYTES);
    let m = started(cfg);
    let (_p, k) = user_process(&m);
    let a = gpu_only(&m, &k, BYTES);
    let b = gpu_only(&m, &k, BYTES);
    assert!(is_local(place(&m, &a)) && is_local(place(&m, &b)));
    let c = created(&m, &k, BYTES);
    let over = Err(MakeResidentError::OverBudget {
        bytes_to_trim: BYTES,
    });
    assert_eq!(
        k.make_resident(&[c.handle], MakeResidentFlags::default()),
        over
    );
    assert_eq!(count(&m, &c), 0);
    // The UMD trims b and tries again.
    assert_eq!(okk(&m, k.evict(&[b.handle], EvictFlags::default())), 0);
    assert_eq!(place(&m, &b), Place::Evicted);
    make_resident(&m, &k, &c);
    // All or nothing: a is resident already, b would go past the budget; neither count moves.
    assert_eq!(
        k.make_resident(&[a.handle, b.handle], MakeResidentFlags::default()),
        over
    );
    assert_eq!((count(&m, &a), count(&m, &b)), (1, 0));
    // Past the budget on purpose: the UMD has nothing left to trim.
    let forced = MakeResidentFlags {
        cant_trim_further: true,
    };
    okk(&m, k.make_resident(&[b.handle], forced));
    assert!(is_local(place(&m, &b)));
    // Nothing new to bring in: no budget check. Evict reports what is still over budget.
    make_resident(&m, &k, &a);
    assert_eq!(okk(&m, k.evict(&[a.handle], EvictFlags::default())), BYTES);
    assert_eq!(okk(&m, k.evict(&[c.handle], EvictFlags::default())), 0);
    no_fault(&m);
}

/// Pressure: when VRAM is full, a new allocation takes the place of idle ones no device
/// requires (least recently released first) and their contents survive in the backing store.
#[test]
fn residency_vram_pressure_evicts_idle_allocations_first_released_first() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, k) = user_process(&m);
    let (_p2, k2) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    // Fill VRAM's allocation space (a quarter of the default 16 MiB) with 1 MiB allocations.
    let big = 1 << 20;
    let held = fill_vram(&m, &k, big);
    assert!(held.len() >= 2);
    gpu_fill(&m, &mut q, &held[0], PATTERN);
    evict_only_if_necessary(&m, &k, &held[1]);
    evict_only_if_necessary(&m, &k, &held[0]);
    assert!(
        is_local(place(&m, &held[0])),
        "only if necessary: still there"
    );
    // Another process needs VRAM: the first released (held[1]) goes, then held[0].
    let n = gpu_only(&m, &k2, big);
    assert!(is_local(place(&m, &n)));
    assert_eq!(place(&m, &held[1]), Place::Evicted);
    assert!(is_local(place(&m, &held[0])));
    let n2 = gpu_only(&m, &k2, big);
    assert!(is_local(place(&m, &n2)));
    assert_eq!(place(&m, &held[0]), Place::Evicted);
    // Nothing idle is left: the next one goes to the aperture.
    let n3 = gpu_only(&m, &k2, big);
    assert_eq!(place(&m, &n3), Place::Aperture);
    // held[0] comes back (VRAM is full of required allocations: into the aperture), intact.
    okk(
        &m,
        k.make_resident(&[held[0].handle], MakeResidentFlags::default()),
    );
    assert_eq!(place(&m, &held[0]), Place::Aperture);
    assert!(all(&gpu_read(&m, &k, &mut q, &held[0]), PATTERN));
    okk(&m, q.close());
    no_fault(&m);
}

fn evict_only_if_necessary(m: &Machine, k: &SimKmt<'_>, a: &MappedGpu) {
    let flags = EvictFlags {
        evict_only_if_necessary: true,
        ..EvictFlags::default()
    };
    okk(m, k.evict(&[a.handle], flags));
}

/// Evict with `NotWrittenTo`: the UMD promises the GPU did not write it since MakeResident.
fn evict_not_written_to(m: &Machine, k: &SimKmt<'_>, a: &MappedGpu) {
    let flags = EvictFlags {
        not_written_to: true,
        ..EvictFlags::default()
    };
    okk(m, k.evict(&[a.handle], flags));
}

/// UM-14: at D0→D3, after suspending contexts and disconnecting doorbells, VidMm moves the
/// VRAM allocations no device requires out; required ones stay. Work after D0 sees both
/// intact (the trimmed one once made resident again). The pages' OS: on 24H2 the connected
/// doorbell holds its engine and the GPU stays in D0 (usermode_submission.rs,
/// `um_14_doorbells_left_connected_hold_the_gpu_in_d0_and_their_work_runs`).
#[test]
fn um_14_d3_evicts_vram_allocations_no_device_requires() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = rvgpu_simos::Windows::PAGES;
    let m = started(cfg);
    let (_p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let kept = gpu_only(&m, &k, BYTES);
    let idle = gpu_only(&m, &k, BYTES);
    gpu_fill(&m, &mut q, &kept, PATTERN);
    gpu_fill(&m, &mut q, &idle, !PATTERN);
    evict_only_if_necessary(&m, &k, &idle);
    assert!(is_local(place(&m, &idle)));
    assert!(ok(&m, m.power_down(0)), "idle GPU powers down");
    assert_eq!(place(&m, &idle), Place::Evicted, "trimmed before D3");
    assert!(is_local(place(&m, &kept)), "required: stays");
    // The next submission reconnects the doorbell and brings the GPU back (UM-14).
    make_resident(&m, &k, &idle);
    assert!(all(&gpu_read(&m, &k, &mut q, &kept), PATTERN));
    assert!(all(&gpu_read(&m, &k, &mut q, &idle), !PATTERN));
    okk(&m, q.close());
    no_fault(&m);
}

/// MakeResident and Evict take only the caller's live allocations (another process's handle,
/// an empty list: STATUS_INVALID_PARAMETER).
#[test]
fn residency_thunks_refuse_foreign_handles() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, k) = user_process(&m);
    let (_p2, k2) = user_process(&m);
    let a = gpu_only(&m, &k, BYTES);
    assert_eq!(
        k2.make_resident(&[a.handle], MakeResidentFlags::default()),
        Err(MakeResidentError::Status(NtStatus(
            STATUS_INVALID_PARAMETER
        )))
    );
    assert_eq!(
        k2.evict(&[a.handle], EvictFlags::default()),
        Err(NtStatus(STATUS_INVALID_PARAMETER))
    );
    assert_eq!(
        k.make_resident(&[], MakeResidentFlags::default()),
        Err(MakeResidentError::Status(NtStatus(
            STATUS_INVALID_PARAMETER
        )))
    );
    assert_eq!(count(&m, &a), 1);
}

/// An allocation of two large pages and a little more, placed in VRAM: VidMm maps each
/// aligned 2 MiB run of the VA it gave at create (the pages' reading; 24H2's Map-made VA gets
/// 4 KiB leaves, [`large_leaf`]) with one level-1 entry (`DXGK_PTE::LargePage`, since the driver reports
/// `LargePageSupported`) and the tail with 4 KiB leaves, through the driver's
/// UPDATEPAGETABLE. A user-mode queue's GPU writes and reads all of it; eviction unmaps the
/// large pages whole and the contents come back with MakeResident; destruction leaves no
/// mapping behind.
#[test]
fn residency_large_allocations_are_mapped_with_large_pages() {
    const LARGE: u64 = 2 << 20;
    let mut cfg = MachineConfig::single(Mode::Step);
    // Room for 4 MiB and more in the allocations' share of VRAM.
    cfg.adapters[0].device.vram_size = 64 << 20;
    let m = started(cfg);
    let (p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let a = gpu_only(&m, &k, 2 * LARGE + 8192);
    assert!(is_local(place(&m, &a)), "{:?}", place(&m, &a));
    let leaf = large_leaf(&m, LARGE);
    if leaf == LARGE {
        assert_eq!(a.gpu_va % LARGE, 0, "VidMm aligns a large reservation");
    }
    let size = |va: u64| {
        m.gpu_translate(0, p.pid, rvgpu_hw::addr::GpuVa::new(va))
            .map(|(_, s)| s)
    };
    assert_eq!(size(a.gpu_va), Some(leaf));
    assert_eq!(size(a.gpu_va + LARGE + 0x1234), Some(leaf));
    assert_eq!(size(a.gpu_va + 2 * LARGE + 4096), Some(4096), "the tail");
    // Contiguous in VRAM across the large pages and the tail.
    let (first, _) = m
        .gpu_translate(0, p.pid, rvgpu_hw::addr::GpuVa::new(a.gpu_va))
        .unwrap();
    let (last, _) = m
        .gpu_translate(0, p.pid, rvgpu_hw::addr::GpuVa::new(a.gpu_va + 2 * LARGE))
        .unwrap();
    assert_eq!(last - first, 2 * LARGE);
    gpu_fill(&m, &mut q, &a, PATTERN);
    assert!(all(&gpu_read(&m, &k, &mut q, &a), PATTERN));
    evict(&m, &k, &a);
    assert_eq!(place(&m, &a), Place::Evicted);
    assert_eq!(size(a.gpu_va), None, "evicted: unmapped");
    make_resident(&m, &k, &a);
    assert!(
        all(&gpu_read(&m, &k, &mut q, &a), PATTERN),
        "contents survived"
    );
    okk(&m, k.destroy_allocation(a.handle));
    assert_eq!(size(a.gpu_va), None);
    assert_eq!(size(a.gpu_va + LARGE), None);
    okk(&m, q.close());
    no_fault(&m);
}

/// What the CPU maps stays in system memory (the aperture place); with the driver's
/// `SysMemLargePageSupported`, VidMm gives a large one a backing store aligned to a large page
/// and maps it with large pages too (its own VA, [`large_leaf`]). The CPU's writes are what the GPU reads, and the GPU's
/// writes what the CPU reads, across the large pages and the tail.
#[test]
fn residency_large_system_allocations_are_mapped_with_large_pages() {
    const LARGE: u64 = 2 << 20;
    let m = started(MachineConfig::single(Mode::Step));
    let (p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let a = okk(&m, k.create_allocation(2 * LARGE + 4096));
    assert_eq!(
        m.allocation_residency(0, a.handle).map(|r| r.0),
        Some(Place::Aperture)
    );
    let size = |va: u64| {
        m.gpu_translate(0, p.pid, rvgpu_hw::addr::GpuVa::new(va))
            .map(|(_, s)| s)
    };
    let leaf = large_leaf(&m, LARGE);
    assert_eq!(size(a.gpu_va), Some(leaf));
    assert_eq!(size(a.gpu_va + LARGE), Some(leaf));
    assert_eq!(size(a.gpu_va + 2 * LARGE), Some(4096));
    let (pa, _) = m
        .gpu_translate(0, p.pid, rvgpu_hw::addr::GpuVa::new(a.gpu_va + LARGE + 8))
        .unwrap();
    a.mem.store(LARGE + 8, PATTERN);
    assert_eq!(
        m.memory().read_u64(PhysAddr::new(pa)),
        Some(PATTERN),
        "the CPU's page"
    );
    submit_wait(
        &m,
        &mut q,
        &[Command::Fill {
            dst: a.gpu_va + 2 * LARGE - 8,
            bytes: 16,
            pattern: !PATTERN,
        }],
    );
    assert_eq!(a.mem.load(2 * LARGE - 8), !PATTERN);
    assert_eq!(a.mem.load(2 * LARGE), !PATTERN, "across into the tail");
    okk(&m, k.destroy_allocation(a.handle));
    assert_eq!(size(a.gpu_va), None);
    okk(&m, q.close());
    // A ring of a large page: the driver finds it where VidMm mapped it (its records of what
    // the process maps count a large page's 512 pages), so the doorbell is created and works.
    let big = rvgpu_umd::submit::QueueConfig {
        ring_size: LARGE as u32,
        ..config(0)
    };
    let mut q = okk(&m, UserQueue::new(&k, &big));
    let t = okk(&m, k.create_allocation(4096));
    submit_wait(&m, &mut q, &[fill(&t, 0, PATTERN)]);
    assert_eq!(t.mem.load(0), PATTERN);
    okk(&m, q.close());
    no_fault(&m);
}
