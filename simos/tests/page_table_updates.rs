//! What VidMm hands the driver in `DxgkDdiBuildPagingBuffer(UPDATE_PAGE_TABLE)` for a
//! process's space, as 24H2 sends it: a fresh directory written whole with its links
//! (InitialUpdate), after the tables below it; an updated one from its first changed entry to
//! its last (M:VIDMM_PAGE_DIRECTORY::CommitVirtualAddressRange @0x1400F28C0); and a Map range
//! that repeats one page of its allocation entered with Repeat whenever it is committed, at
//! its first map and when the allocation comes back (M:CVirtualAddressAllocator::
//! CommitVirtualAddressRange @0x1400ADD10 takes the repeat window from the mapped range).

mod common;

use common::*;
use std::cell::RefCell;
use std::sync::OnceLock;

use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::memory::{DXGK_PAGETABLEUPDATE_GPU_PHYSICAL, DXGK_PTE, DXGK_UPDATEPAGETABLEFLAGS};
use rvgpu_ddi::tdr::{
    DXGKARG_BUILDPAGINGBUFFER, DXGK_OPERATION_UPDATE_PAGE_TABLE, PDXGKDDI_BUILDPAGINGBUFFER,
};
use rvgpu_ddi::{HANDLE, NTSTATUS};
use rvgpu_hw::pdd::{AllocationKind, AllocationPdd};
use rvgpu_simos::vidmm::residency::Place;
use rvgpu_simos::{Machine, MachineConfig, Mode};
use rvgpu_umd::kmt::{EvictFlags, Kmt, MakeResidentFlags, MapGpuVa, ReserveGpuVa};

const PAGE: u64 = 4096;
const CHOSEN: u64 = 0x7000_0000_0000;

/// One UPDATE_PAGE_TABLE as the driver received it (GPU_PHYSICAL ones: a process's tables).
#[derive(Clone, Debug)]
struct Rec {
    level: u32,
    table: u64,
    start: u32,
    num: u32,
    initial: bool,
    repeat: bool,
    h_allocation: usize,
    first_va: u64,
    /// The entries passed (one with Repeat): (valid, large page, page frame).
    entries: Vec<(bool, bool, u64)>,
}

thread_local! {
    /// What this thread's machine handed over (a step-mode machine builds its paging buffers
    /// on the caller's thread).
    static RECS: RefCell<Vec<Rec>> = const { RefCell::new(Vec::new()) };
}

static REAL_BUILD: OnceLock<PDXGKDDI_BUILDPAGINGBUFFER> = OnceLock::new();

unsafe extern "system" fn spy_build(ctx: HANDLE, args: *mut DXGKARG_BUILDPAGINGBUFFER) -> NTSTATUS {
    // SAFETY: the OS's argument block (or null); the arm named by its operation.
    if let Some(b) = unsafe { args.as_ref() } {
        // SAFETY: as above.
        let u = unsafe { &b.Anonymous.UpdatePageTable };
        if b.Operation == DXGK_OPERATION_UPDATE_PAGE_TABLE
            && b.MultipassOffset == 0
            && u.UpdateMode == DXGK_PAGETABLEUPDATE_GPU_PHYSICAL
        {
            let repeat = u.Flags.get(DXGK_UPDATEPAGETABLEFLAGS::Repeat) != 0;
            let held = if repeat {
                1
            } else {
                u.NumPageTableEntries as usize
            };
            // SAFETY: the OS's array of `held` entries.
            let entries: &[DXGK_PTE] =
                unsafe { std::slice::from_raw_parts(u.pPageTableEntries, held) };
            let rec = Rec {
                level: u.PageTableLevel,
                // SAFETY: a GPU_PHYSICAL update names its table by segment and offset.
                table: unsafe { u.PageTableAddress.Anonymous.GpuPhysical.SegmentOffset },
                start: u.StartIndex,
                num: u.NumPageTableEntries,
                initial: u.Flags.get(DXGK_UPDATEPAGETABLEFLAGS::InitialUpdate) != 0,
                repeat,
                h_allocation: u.hAllocation as usize,
                first_va: u.FirstPteVirtualAddress,
                entries: entries
                    .iter()
                    .map(|e| (e.valid(), e.large_page(), e.page_address()))
                    .collect(),
            };
            RECS.with(|r| r.borrow_mut().push(rec));
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

fn machine() -> Machine {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.doorbells = 4;
    started_with(cfg, spy)
}

/// The updates handed over since the last call.
fn taken() -> Vec<Rec> {
    RECS.with(|r| std::mem::take(&mut *r.borrow_mut()))
}

/// DDI-03: every directory a map creates reaches the driver once, whole, InitialUpdate, with
/// its links among invalid entries (never cleared on its own and linked after), and only after
/// the table each of its links points at was written; a directory updated before gets its
/// changed entries only, with no flag.
#[test]
fn ddi_03_a_fresh_directory_is_written_whole_with_its_links_after_the_tables_below() {
    let m = machine();
    let p = ok(&m, m.create_process(0));
    let k = m.kmt(&p);
    taken();
    // Three allocations far apart: the first needs fresh directories under the root.
    let pq = okk(&m, k.create_paging_queue(0));
    let mut all = taken();
    let b = okk(&m, k.create_allocation(PAGE));
    okk(
        &m,
        k.reserve_gpu_va(&ReserveGpuVa {
            base: CHOSEN,
            size: 1 << 30,
            ..ReserveGpuVa::default()
        }),
    );
    for at in [CHOSEN, CHOSEN + (4 << 20), CHOSEN + (256 << 20)] {
        let r = okk(
            &m,
            k.map_gpu_va(&MapGpuVa::read_write(pq.handle, at, b.handle, 0, 1)),
        );
        okk(&m, k.wait_for_fence(pq.fence, r.paging_fence_value));
    }
    all.extend(taken());
    let dirs: Vec<&Rec> = all.iter().filter(|r| (1..3).contains(&r.level)).collect();
    let fresh: Vec<&&Rec> = dirs.iter().filter(|r| r.initial).collect();
    assert!(fresh.len() >= 2, "the maps made no directory: {all:#?}");
    for d in &fresh {
        assert_eq!(
            (d.start, d.num, d.repeat),
            (0, 512, false),
            "a fresh directory goes whole, its entries passed: {d:?}"
        );
        assert!(
            d.entries.iter().any(|e| e.0),
            "a fresh directory carries its links (no clear of its own): {d:?}"
        );
    }
    // One InitialUpdate per directory.
    let mut tables: Vec<u64> = fresh.iter().map(|d| d.table).collect();
    tables.sort_unstable();
    tables.dedup();
    assert_eq!(tables.len(), fresh.len(), "{fresh:#?}");
    // Bottom-up: a link points at a table written before it.
    for (i, r) in all.iter().enumerate().filter(|(_, r)| r.level >= 1) {
        for (valid, large, page) in &r.entries {
            if *valid && !*large {
                assert!(
                    all[..i]
                        .iter()
                        .any(|w| w.level + 1 == r.level && w.table == page << 12),
                    "the link to table {:#x} reached the driver before the table: {r:?}",
                    page << 12
                );
            }
        }
    }
    // An updated directory: its changed entries, no flag.
    let again: Vec<&&Rec> = dirs.iter().filter(|r| !r.initial).collect();
    assert!(!again.is_empty(), "{all:#?}");
    for d in again {
        assert!(
            d.num < 512 && !d.repeat && d.entries.iter().all(|e| e.0),
            "{d:?}"
        );
    }
    no_fault(&m);
}

/// DDI-03: a Map range longer than what its allocation has past the offset repeats that one
/// page with Repeat at its first map, and again when the allocation comes back after an
/// eviction: one update for the range, Repeat, its allocation named, not one per repetition.
#[test]
fn ddi_03_a_repeating_range_is_entered_with_repeat_again_when_its_allocation_comes_back() {
    let m = machine();
    let p = ok(&m, m.create_process(0));
    let k = m.kmt(&p);
    let pq = okk(&m, k.create_paging_queue(0));
    // An allocation in VRAM (one in system memory stays where it is).
    let pdd = AllocationPdd {
        flags: 0,
        ..rvgpu_umd::kmt::allocation_private_data(2 * PAGE, AllocationKind::Buffer)
    };
    let b = okk(&m, k.create_allocation_pdd(&pdd));
    okk(
        &m,
        k.make_resident(&[b.handle], MakeResidentFlags::default()),
    );
    okk(
        &m,
        k.reserve_gpu_va(&ReserveGpuVa {
            base: CHOSEN,
            size: 0x1_0000,
            ..ReserveGpuVa::default()
        }),
    );
    taken();
    // Page 1 of the allocation over 3 pages.
    let r = okk(
        &m,
        k.map_gpu_va(&MapGpuVa::read_write(pq.handle, CHOSEN, b.handle, 1, 3)),
    );
    okk(&m, k.wait_for_fence(pq.fence, r.paging_fence_value));
    let leaves = |recs: Vec<Rec>| -> Vec<(u32, bool, u64)> {
        recs.into_iter()
            .filter(|r| r.level == 0 && r.first_va >= CHOSEN && r.first_va < CHOSEN + 3 * PAGE)
            .filter(|r| r.entries.iter().any(|e| e.0))
            .map(|r| (r.num, r.repeat, r.first_va))
            .collect()
    };
    let first = leaves(taken());
    assert_eq!(first, [(3, true, CHOSEN)], "at the first map");
    // Out (every residency reference the runtime and the process hold), then back.
    for _ in 0..4 {
        if m.allocation_residency(0, b.handle).map(|r| r.0) == Some(Place::Evicted) {
            break;
        }
        okk(&m, k.evict(&[b.handle], EvictFlags::default()));
    }
    assert_eq!(
        m.allocation_residency(0, b.handle).map(|r| r.0),
        Some(Place::Evicted)
    );
    okk(
        &m,
        k.make_resident(&[b.handle], MakeResidentFlags::default()),
    );
    let recs = taken();
    let named = recs
        .iter()
        .filter(|r| r.level == 0 && r.first_va == CHOSEN && r.entries.iter().any(|e| e.0))
        .all(|r| r.h_allocation != 0);
    assert_eq!(leaves(recs), first, "when the allocation comes back");
    assert!(named, "the range's update names its allocation");
    for i in 0..3 {
        assert!(
            m.gpu_translate(0, p.pid, rvgpu_hw::addr::GpuVa::new(CHOSEN + i * PAGE))
                .is_some(),
            "page {i} mapped again"
        );
    }
    no_fault(&m);
}
