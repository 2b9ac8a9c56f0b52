//! Paging TRANSFER with MDLs (docs/memory.md "System memory and MDLs"). VidMm names
//! an allocation's backing store, scattered system pages, by an MDL (`SegmentId` 0) when it
//! evicts the allocation from VRAM and pages it back; the real KMD must follow the MDL's
//! pages, `MdlOffset` and `TransferOffset`, in as many passes as its paging buffers need.
//! Contents are checked in the backing store's own pages after eviction and by the GPU after
//! page-in, against VRAM that VidMm poisoned when it took it back.

mod common;

use common::residency::*;
use common::*;
use rvgpu_hw::addr::PhysAddr;

use rvgpu_ddi::ntstatus::{
    STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER, STATUS_INVALID_PARAMETER, STATUS_SUCCESS,
};
use rvgpu_ddi::tdr::{
    DXGKARG_BUILDPAGINGBUFFER_Fill, DXGKARG_BUILDPAGINGBUFFER_Fill_Destination,
    DXGKARG_BUILDPAGINGBUFFER_0, DXGK_OPERATION_FILL,
};
use rvgpu_ddi::{HANDLE, LARGE_INTEGER, NTSTATUS};
use rvgpu_hw::addr::VRAM_BASE;
use rvgpu_hw::cmd::{decode, Command};
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::vidmm::mdl::Mdl;
use rvgpu_simos::vidmm::paging::TransferSide;
use rvgpu_simos::vidmm::residency::Place;
use rvgpu_simos::{Machine, MachineConfig, Mode, UmsProcess};
use rvgpu_umd::kmt::{EvictFlags, Kmt, MappedGpu};
use rvgpu_umd::submit::UserQueue;

const PAGE: u64 = 4096;
const MIB: u64 = 1 << 20;

/// What page `i` holds: different on every page, so a page moved to the wrong place shows.
fn page_pattern(i: u64) -> u64 {
    0xA11C_0000_0000_0000 | ((i + 1) * 0x1_0001)
}

/// The GPU writes [`page_pattern`] into every page of `a`.
fn fill_pages(m: &Machine, q: &mut UserQueue<&SimKmt<'_>>, a: &MappedGpu) {
    let cmds: Vec<Command> = (0..a.size / PAGE)
        .map(|i| Command::Fill {
            dst: a.gpu_va + i * PAGE,
            bytes: PAGE,
            pattern: page_pattern(i),
        })
        .collect();
    for batch in cmds.chunks(16) {
        let v = okk(m, q.submit(batch));
        okk(m, q.wait(v));
    }
}

fn pages_hold_their_patterns(words: &[u64]) -> bool {
    words
        .chunks((PAGE / 8) as usize)
        .enumerate()
        .all(|(i, p)| p.iter().all(|&w| w == page_pattern(i as u64)))
}

/// Under VRAM pressure VidMm evicts an idle allocation to its backing store, a set
/// of physically scattered pages it names by MDL, and pages it back the same way: the
/// contents land page by page in the backing store and return intact. 1 MiB of scattered
/// pages is 256 COPY packets, more than one 4 KiB paging buffer holds, so both directions
/// also go through the driver's multipass.
#[test]
fn pressure_evicts_and_pages_back_through_mdl_transfers() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, k) = user_process(&m);
    let (_p2, k2) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let held = fill_vram(&m, &k, MIB);
    let a = &held[0];
    let backing = m.allocation_backing_pages(0, a.handle).expect("scattered");
    assert_eq!(backing.len() as u64, MIB / PAGE);
    assert!(
        backing.windows(2).all(|w| w[1] != w[0] + PAGE),
        "no two backing pages are physically adjacent"
    );
    fill_pages(&m, &mut q, a);
    okk(
        &m,
        k.evict(
            &[a.handle],
            EvictFlags {
                evict_only_if_necessary: true,
                ..EvictFlags::default()
            },
        ),
    );
    // Another process needs VRAM: the idle allocation goes to its backing store.
    let n = gpu_only(&m, &k2, MIB);
    assert!(matches!(place(&m, &n), Place::Local { .. }));
    assert_eq!(place(&m, a), Place::Evicted);
    let mem = m.device(0).expect("device").memory();
    for (i, &bus) in backing.iter().enumerate() {
        let words = mem
            .read_words(PhysAddr::new(bus), (PAGE / 8) as usize)
            .expect("mapped");
        assert!(
            words.iter().all(|&w| w == page_pattern(i as u64)),
            "backing page {i} at {bus:#x} holds page {i} of the allocation"
        );
    }
    // The other allocation leaves; ours comes back into VRAM, through the MDL again.
    okk(&m, k2.evict(&[n.handle], EvictFlags::default()));
    make_resident(&m, &k, a);
    assert!(matches!(place(&m, a), Place::Local { .. }));
    assert!(pages_hold_their_patterns(&gpu_read(&m, &k, &mut q, a)));
    okk(&m, q.close());
    no_fault(&m);
}

/// Decodes what one pass wrote.
fn packets(words: &[u64]) -> Vec<Command> {
    words
        .chunks(4)
        .map(|c| decode(c).expect("packet"))
        .collect()
}

/// A local segment and its segment address where a resident allocation of `k` lies.
fn vram_location(m: &Machine, k: &SimKmt<'_>) -> (u32, u64) {
    let a = gpu_only(m, k, 64 * 1024);
    match place(m, &a) {
        Place::Local { segment, offset } => (
            segment,
            m.segment_address(0, segment, offset).expect("segment"),
        ),
        p => panic!("not in VRAM: {p:?}"),
    }
}

/// Scattered system pages for hand-built MDLs: `[a, b, b + 4096, c, d]` (b's two pages one
/// region, so they are one physically contiguous run).
fn scattered_pages(m: &Machine) -> Vec<u64> {
    let mem = m.device(0).expect("device").memory();
    let one = || mem.alloc_system(PAGE, PAGE).expect("page").bus_addr;
    let a = one();
    let b = mem.alloc_system(2 * PAGE, PAGE).expect("pages").bus_addr;
    let c = one();
    let d = one();
    vec![a, b, b + PAGE, c, d]
}

/// What the hand-built MDL tests start from: a user process (kept alive by the caller), the
/// [`vram_location`] of one of its allocations, and [`scattered_pages`].
fn mdl_rig(m: &Machine) -> (UmsProcess, (u32, u64), Vec<u64>) {
    let (p, k) = user_process(m);
    let location = vram_location(m, &k);
    (p, location, scattered_pages(m))
}

/// Through the real DDI: a TRANSFER from an MDL starts `MdlOffset` pages into it,
/// the segment side moves by `TransferOffset` (the MDL side does not), every physically
/// contiguous run is one COPY, and with a paging buffer that holds one packet the driver
/// builds one run per call, resuming where `MultipassOffset` says.
#[test]
fn build_paging_buffer_mdl_transfer_offsets_and_multipass() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, (segment, seg), pages) = mdl_rig(&m);
    let mdl = Mdl::of_pages(&pages).expect("mdl");
    let bytes = 3 * PAGE + 64;
    let vram = VRAM_BASE + seg + 2 * PAGE;
    // MDL → VRAM, one packet per paging buffer.
    let passes = ok(
        &m,
        m.build_transfer(
            0,
            TransferSide::Mdl(&mdl),
            TransferSide::Segment(segment, seg),
            bytes,
            2 * PAGE as u32,
            1,
            32,
        ),
    );
    let status: Vec<NTSTATUS> = passes.iter().map(|p| p.0).collect();
    assert_eq!(
        status,
        vec![
            STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER,
            STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER,
            STATUS_SUCCESS
        ]
    );
    let built: Vec<Command> = passes.iter().flat_map(|p| packets(&p.1)).collect();
    assert_eq!(
        built,
        vec![
            Command::Copy {
                src: pages[1],
                dst: vram,
                bytes: 2 * PAGE
            },
            Command::Copy {
                src: pages[3],
                dst: vram + 2 * PAGE,
                bytes: PAGE
            },
            Command::Copy {
                src: pages[4],
                dst: vram + 3 * PAGE,
                bytes: 64
            },
        ]
    );
    // VRAM → MDL in one paging buffer: the same runs, the other way.
    let passes = ok(
        &m,
        m.build_transfer(
            0,
            TransferSide::Segment(segment, seg),
            TransferSide::Mdl(&mdl),
            bytes,
            2 * PAGE as u32,
            1,
            4096,
        ),
    );
    assert_eq!(passes.len(), 1);
    assert_eq!(passes[0].0, STATUS_SUCCESS);
    assert_eq!(
        packets(&passes[0].1),
        vec![
            Command::Copy {
                src: vram,
                dst: pages[1],
                bytes: 2 * PAGE
            },
            Command::Copy {
                src: vram + 2 * PAGE,
                dst: pages[3],
                bytes: PAGE
            },
            Command::Copy {
                src: vram + 3 * PAGE,
                dst: pages[4],
                bytes: 64
            },
        ]
    );
    no_fault(&m);
}

/// Malformed MDLs are refused with `STATUS_INVALID_PARAMETER` and nothing written,
/// never a crash: a `ByteCount` that spans more pages than the array `Size` covers, a range
/// past `ByteCount` through `MdlOffset`, a `ByteOffset` outside the first page, a `Size`
/// smaller than the header. A FILL has no MDL arm (d3dkmddi.h), so `SegmentId` 0 there is refused too.
#[test]
fn malformed_mdl_is_refused_without_panic() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, (segment, seg), pages) = mdl_rig(&m);
    let pfns: Vec<u64> = pages.iter().map(|p| p / PAGE).collect();
    let refused = |mdl: &Mdl, mdl_offset: u32, bytes: u64| {
        let passes = ok(
            &m,
            m.build_transfer(
                0,
                TransferSide::Mdl(mdl),
                TransferSide::Segment(segment, seg),
                bytes,
                0,
                mdl_offset,
                4096,
            ),
        );
        assert_eq!(passes.len(), 1);
        assert_eq!(passes[0].0, STATUS_INVALID_PARAMETER);
        assert!(passes[0].1.is_empty(), "nothing written");
    };
    // Size covers two entries; ByteCount claims five pages.
    let short = Mdl::raw(&pfns, 48 + 16, 5 * PAGE as u32, 0);
    refused(&short, 0, PAGE);
    // A well-formed MDL, asked for more than it holds.
    let whole = Mdl::of_pages(&pages).expect("mdl");
    refused(&whole, 4, 2 * PAGE);
    refused(&whole, u32::MAX, 8);
    // ByteOffset past the first page.
    refused(
        &Mdl::raw(&pfns, 48 + 40, 4 * PAGE as u32, PAGE as u32),
        0,
        8,
    );
    // Size smaller than the header.
    refused(&Mdl::raw(&pfns, 40, PAGE as u32, 0), 0, 8);
    // An all-zero header (Size 0).
    refused(&Mdl::raw(&[], 0, 0, 0), 0, 8);
    let fill = DXGKARG_BUILDPAGINGBUFFER_0 {
        Fill: DXGKARG_BUILDPAGINGBUFFER_Fill {
            hAllocation: 0x10 as HANDLE,
            FillSize: PAGE as usize,
            FillPattern: 0,
            Destination: DXGKARG_BUILDPAGINGBUFFER_Fill_Destination {
                SegmentId: 0,
                SegmentAddress: LARGE_INTEGER {
                    QuadPart: pages[0] as i64,
                },
            },
        },
    };
    let passes = ok(&m, m.build_paging(0, DXGK_OPERATION_FILL, fill, 4096));
    assert_eq!(passes[0].0, STATUS_INVALID_PARAMETER);
    no_fault(&m);
}
