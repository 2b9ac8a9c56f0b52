//! The aperture segment as Windows drives it (docs/memory.md "The aperture").
//!
//! VidMm allocates ranges of the aperture itself, at offsets unrelated to bus addresses
//! (`vidmm::aperture::FIRST_OFFSET` and up, where no system memory is), and has the driver map
//! an MDL's pages there with `DXGK_OPERATION_MAP_APERTURE_SEGMENT` before any use and point
//! them at a dummy page with `UNMAP_APERTURE_SEGMENT` after. A driver that reads an aperture
//! address as a bus address reaches no memory at all, so each test here fails on it.

mod common;

use rvgpu_hw::addr::PhysAddr;
use std::time::Duration;

use common::*;

use rvgpu_ddi::basic::*;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::tdr::*;
use rvgpu_hw::cmd::{decode, Command};
use rvgpu_simos::vidmm::aperture::{ApertureRange, FIRST_OFFSET};
use rvgpu_simos::vidmm::mdl::Mdl;
use rvgpu_simos::vidmm::paging::TransferSide;
use rvgpu_simos::{Machine, Mode, SimError, UmsProcess};
use rvgpu_umd::kmt::Kmt;

const PAGE: u64 = 4096;

/// `n` scattered pages that VidMm has mapped into the aperture, and the range they occupy.
fn mapped_in_aperture(m: &Machine, n: usize) -> (Vec<u64>, ApertureRange) {
    let pages = scattered(m, n);
    let range = ok(m, m.aperture_map_pages(0, &pages));
    (pages, range)
}

/// A process, then two pages [`mapped_in_aperture`]: what the UPDATEPAGETABLE tests map.
fn process_and_two_mapped_pages(m: &Machine) -> (UmsProcess, Vec<u64>, ApertureRange) {
    let p = ok(m, m.create_process(0));
    let (pages, range) = mapped_in_aperture(m, 2);
    (p, pages, range)
}

/// `n` system pages, each its own allocation (so not adjacent), as bus addresses.
fn scattered(m: &Machine, n: usize) -> Vec<u64> {
    let d = m.device(0).unwrap();
    (0..n)
        .map(|_| {
            let p = d.memory().alloc_system(PAGE, PAGE).expect("system page");
            let bus = p.bus_addr;
            // The test owns the page for the machine's life.
            std::mem::forget(p);
            bus
        })
        .collect()
}

fn read(m: &Machine, bus: u64) -> u64 {
    m.device(0)
        .unwrap()
        .memory()
        .read_u64(PhysAddr::new(bus))
        .expect("mapped")
}

fn wait_node(m: &Machine, node: u32) {
    let done = ok(
        m,
        m.run_until(20_000, Duration::from_secs(20), |m| {
            let (s, c) = m.legacy_fences(0, node);
            s == c
        }),
    );
    assert!(done, "node {node} never finished; {}", diagnostics(m));
}

fn fill_op(segment: u32, addr: u64, bytes: u64, pattern: u32) -> DXGKARG_BUILDPAGINGBUFFER_0 {
    DXGKARG_BUILDPAGINGBUFFER_0 {
        Fill: DXGKARG_BUILDPAGINGBUFFER_Fill {
            hAllocation: std::ptr::null_mut(),
            FillSize: bytes as SIZE_T,
            FillPattern: pattern,
            Destination: DXGKARG_BUILDPAGINGBUFFER_Fill_Destination {
                SegmentId: segment,
                SegmentAddress: LARGE_INTEGER {
                    QuadPart: addr as i64,
                },
            },
        },
    }
}

fn map_op(
    segment: u32,
    first: u64,
    pages: u64,
    mdl: &Mdl,
    mdl_offset: u32,
) -> DXGKARG_BUILDPAGINGBUFFER_0 {
    DXGKARG_BUILDPAGINGBUFFER_0 {
        MapApertureSegment: DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment {
            hDevice: std::ptr::null_mut(),
            hAllocation: std::ptr::null_mut(),
            SegmentId: segment,
            OffsetInPages: first as SIZE_T,
            NumberOfPages: pages as SIZE_T,
            pMdl: mdl.as_ptr(),
            Flags: DXGK_MAPAPERTUREFLAGS::default(),
            MdlOffset: mdl_offset,
        },
    }
}

/// The one status of a paging build that needs a single pass.
fn status_of(r: Vec<(NTSTATUS, Vec<u64>)>) -> NTSTATUS {
    assert_eq!(r.len(), 1, "{r:?}");
    r[0].0
}

/// The COPY / FILL packets a build wrote.
fn packets(r: &[(NTSTATUS, Vec<u64>)]) -> Vec<Command> {
    r.iter()
        .flat_map(|(_, w)| w.chunks(4).map(|c| decode(c).unwrap()).collect::<Vec<_>>())
        .collect()
}

/// After MAP_APERTURE_SEGMENT at an offset unrelated to the pages' bus addresses,
/// a TRANSFER into the aperture and a FILL of it reach the mapped pages, split where they
/// are not contiguous.
#[test]
fn map_aperture_then_transfer_and_fill_reach_the_mapped_pages() {
    let m = machine_with(Mode::Step, |_| {});
    let (pages, range) = mapped_in_aperture(&m, 3);
    assert!(range.offset >= FIRST_OFFSET, "{range:?}");
    assert!(
        pages.iter().all(|&p| p != range.offset),
        "the test needs offsets that are no bus address"
    );
    // TRANSFER from an MDL into the aperture, 8 bytes into the range.
    let src = scattered(&m, 3);
    let mdl = Mdl::of_pages(&src).unwrap();
    let bytes = 3 * PAGE - 8;
    let r = ok(
        &m,
        m.build_transfer(
            0,
            TransferSide::Mdl(&mdl),
            TransferSide::Segment(range.segment, range.offset + 8),
            bytes,
            0,
            0,
            4096,
        ),
    );
    assert!(r.iter().all(|(st, _)| NT_SUCCESS(*st)), "{r:?}");
    let dsts: Vec<(u64, u64)> = packets(&r)
        .into_iter()
        .map(|c| match c {
            Command::Copy { dst, bytes, .. } => (dst, bytes),
            other => panic!("{other:?}"),
        })
        .collect();
    // Destination runs: page 0 from byte 8, then page 1, then page 2 (the source pages
    // split the copy too, so compare coverage, not packet count).
    let mut covered = 0;
    for (dst, n) in &dsts {
        let page = (range.offset + 8 + covered) / PAGE - range.offset / PAGE;
        let within = (range.offset + 8 + covered) % PAGE;
        assert_eq!(*dst, pages[page as usize] + within, "{dsts:x?}");
        covered += n;
    }
    assert_eq!(covered, bytes);
    // FILL through the aperture.
    let r = ok(
        &m,
        m.build_paging(
            0,
            DXGK_OPERATION_FILL,
            fill_op(range.segment, range.offset, 3 * PAGE, 0x5A5A_5A5A),
            4096,
        ),
    );
    assert!(r.iter().all(|(st, _)| *st == STATUS_SUCCESS), "{r:?}");
    let fills: Vec<u64> = packets(&r)
        .into_iter()
        .map(|c| match c {
            Command::Fill { dst, .. } => dst,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        fills, pages,
        "one FILL per scattered page, at its bus address"
    );
    no_fault(&m);
}

/// An UPDATEPAGETABLE whose entries name the aperture (`Segment` 1, page address =
/// aperture offset) maps the pages the driver's table holds there: VidMm's strict walk
/// checks every entry against the bus pages it mapped, and a FILL through the process's VA
/// (VidMm's paging, addressed by the leaf's aperture segment address) lands in them.
#[test]
fn update_page_table_with_aperture_segment_maps_the_mapped_pages() {
    let m = machine_with(Mode::Step, |_| {});
    let (p, pages, range) = process_and_two_mapped_pages(&m);
    let va = ok(&m, m.map_aperture_range_into(&p, range));
    ok(
        &m,
        m.page_in(&p, 0, rvgpu_hw::addr::GpuVa::new(va), 2 * PAGE, 0x1234_5678),
    );
    wait_node(&m, 0);
    for &bus in &pages {
        assert_eq!(read(&m, bus), 0x1234_5678_1234_5678, "page {bus:#x}");
        assert_eq!(read(&m, bus + PAGE - 8), 0x1234_5678_1234_5678);
    }
    no_fault(&m);
}

/// After UNMAP_APERTURE_SEGMENT the range names the dummy page: a FILL or TRANSFER
/// there, and an UPDATEPAGETABLE entry naming it, are refused; nothing is written.
#[test]
fn unmap_aperture_then_use_is_refused() {
    let m = machine_with(Mode::Step, |_| {});
    let (p, pages, range) = process_and_two_mapped_pages(&m);
    ok(&m, m.aperture_unmap_range(0, range));
    let r = ok(
        &m,
        m.build_paging(
            0,
            DXGK_OPERATION_FILL,
            fill_op(range.segment, range.offset, PAGE, 7),
            4096,
        ),
    );
    assert_eq!(status_of(r), STATUS_INVALID_PARAMETER);
    let src = scattered(&m, 1);
    let mdl = Mdl::of_pages(&src).unwrap();
    let r = ok(
        &m,
        m.build_transfer(
            0,
            TransferSide::Mdl(&mdl),
            TransferSide::Segment(range.segment, range.offset),
            PAGE,
            0,
            0,
            4096,
        ),
    );
    assert_eq!(status_of(r), STATUS_INVALID_PARAMETER);
    // The same offsets, no longer mapped, in a process's page table.
    match m.map_aperture_range_into(&p, range) {
        Err(SimError::DdiFailed(st)) => assert_eq!(st, STATUS_INVALID_PARAMETER),
        other => panic!("an entry naming an unmapped aperture page: {other:?}"),
    }
    for &bus in &pages {
        assert_eq!(read(&m, bus), 0, "nothing written to {bus:#x}");
    }
}

/// Malformed MAP_APERTURE_SEGMENT operations (a range past the aperture, an MDL
/// too short for the pages or past its end through `MdlOffset`, another segment, no MDL,
/// reserved flags) are refused without a panic, and map nothing.
#[test]
fn malformed_map_aperture_is_refused() {
    let m = machine_with(Mode::Step, |_| {});
    let pages = scattered(&m, 2);
    let mdl = Mdl::of_pages(&pages).unwrap();
    let size = rvgpu_kmd_aperture_pages();
    let first = FIRST_OFFSET / PAGE;
    let mut reserved = map_op(1, first, 1, &mdl, 0);
    reserved.MapApertureSegment.Flags = DXGK_MAPAPERTUREFLAGS::from_value(2);
    let mut no_mdl = map_op(1, first, 1, &mdl, 0);
    no_mdl.MapApertureSegment.pMdl = std::ptr::null_mut();
    let bad = [
        ("past the aperture", map_op(1, size - 1, 2, &mdl, 0)),
        ("offset wraps", map_op(1, u64::MAX, 1, &mdl, 0)),
        ("MDL too short", map_op(1, first, 3, &mdl, 0)),
        ("MdlOffset past the MDL", map_op(1, first, 1, &mdl, 2)),
        ("no pages", map_op(1, first, 0, &mdl, 0)),
        ("not the aperture", map_op(2, first, 1, &mdl, 0)),
        ("no MDL", no_mdl),
        ("reserved flags", reserved),
    ];
    for (why, op) in bad {
        let r = ok(
            &m,
            m.build_paging(0, DXGK_OPERATION_MAP_APERTURE_SEGMENT, op, 4096),
        );
        assert_eq!(status_of(r), STATUS_INVALID_PARAMETER, "{why}");
    }
    // Nothing was mapped: a FILL of the first range is still refused.
    let r = ok(
        &m,
        m.build_paging(
            0,
            DXGK_OPERATION_FILL,
            fill_op(1, FIRST_OFFSET, PAGE, 7),
            4096,
        ),
    );
    assert_eq!(status_of(r), STATUS_INVALID_PARAMETER);
    no_fault(&m);
}

/// VidMm's own paging of an allocation in system memory (a FILL, which has no MDL
/// arm) goes through a temporary aperture mapping, and the contents are right.
#[test]
fn page_in_of_system_memory_fills_through_the_aperture() {
    for mode in [Mode::Step, Mode::Threaded] {
        let m = machine_with(mode, |_| {});
        let (p, k) = user_process(&m);
        let buf = okk(&m, k.create_allocation(2 * PAGE));
        ok(
            &m,
            m.page_in(
                &p,
                0,
                rvgpu_hw::addr::GpuVa::new(buf.gpu_va),
                2 * PAGE,
                0x0BAD_F00D,
            ),
        );
        wait_node(&m, 0);
        let bus = buf.mem.alloc().bus_addr;
        for off in [0, PAGE - 8, PAGE, 2 * PAGE - 8] {
            assert_eq!(
                read(&m, bus + off),
                0x0BAD_F00D_0BAD_F00D,
                "{mode:?} +{off:#x}"
            );
        }
        no_fault(&m);
    }
}

/// The aperture's size in pages, as the KMD reports it (segment 1's `Size`).
fn rvgpu_kmd_aperture_pages() -> u64 {
    (1u64 << 30) / PAGE
}
