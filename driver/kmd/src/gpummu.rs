//! The GpuMmu memory model as the KMD reports it to VidMm (docs/memory.md):
//! segments (`DXGKQAITYPE_QUERYSEGMENT4`), the GPU MMU's caps (`DXGKQAITYPE_GPUMMUCAPS`), one
//! page-table level descriptor per level (`DXGKQAITYPE_PAGETABLELEVELDESC`), and the one
//! translation from VidMm's `DXGK_PTE` to the device's entry format (`rvgpu_hw::mmu::Pte`).
//!
//! Everything here is claimed only when the device has page tables (`Caps::PAGE_TABLES`,
//! hardware.md §12); DRIVERCAPS, node metadata and these answers must agree, because Dxgkrnl
//! cross-checks them at adapter start (docs/windows-bringup.md BR-68, BR-71).
//!
//! Choices (docs/memory.md "What the OS is told"):
//! - Segment 1 is an aperture segment of [`APERTURE_SIZE`] bytes. VidMm allocates its ranges
//!   and has the driver map MDL pages there (`MAP_APERTURE_SEGMENT`, [`crate::aperture`]);
//!   its offsets are not bus addresses. Allocations in its segment set without
//!   `AccessedPhysically` are not mapped into it at all ("GPU segments"): their system pages
//!   are reached through GPU page tables with `DXGK_PTE.Segment` 0. VidMm's DMA pools accept
//!   only aperture segments, so contexts name this one for their DMA buffers
//!   (docs/windows-bringup.md BR-65, BR-67).
//! - Segment 2 is local memory (VRAM) as far as BAR4 reaches (`VRAM_VISIBLE`), CPU-visible;
//!   the rest of VRAM, if any, is segment 3, GPU-only.
//! - In `DXGK_PTE`, segment 0 means system memory by bus page number (Microsoft's DXGK_PTE
//!   page); segment 1 names an aperture page, translated through the aperture's table (a
//!   page not mapped there is refused).
//! - Page tables live in local memory and are written by paging buffers with physical
//!   addresses (`DXGK_PAGETABLEUPDATE_GPU_PHYSICAL`): the paging node's queue runs in the
//!   identity space, so it reaches every table without mapping any.
//! - Paging buffers come from system memory (`PagingBufferSegmentId` 0).

use rvgpu_ddi::memory::{
    DXGK_GPUMMUCAPS, DXGK_GPUMMUCAPS_FLAGS, DXGK_PAGETABLEUPDATE_GPU_PHYSICAL,
    DXGK_PAGE_TABLE_LEVEL_DESC, DXGK_PTE, DXGK_PTE_0, DXGK_QUERYPAGETABLELEVELDESCIN,
    DXGK_QUERYSEGMENTIN4, DXGK_QUERYSEGMENTOUT4, DXGK_SEGMENTDESCRIPTOR4,
    DXGK_SEGMENTDESCRIPTOR4_0, DXGK_SEGMENTFLAGS,
};
use rvgpu_ddi::PHYSICAL_ADDRESS;
use rvgpu_hw::mmu;
use rvgpu_hw::regs::Caps;

use crate::aperture::Aperture;
use crate::args::{write_bytes, Request};
use crate::device::DeviceIdentity;
use crate::resources::Resources;
use crate::status::{self, Status};

/// What the memory model's answers depend on: the device's identity, where its VRAM BAR is,
/// and the aperture table. A view of the started adapter (`Live::mmu`), so that this module
/// knows nothing else of it.
#[derive(Clone, Copy, Debug)]
pub struct Mmu<'a> {
    /// What the device reported at start.
    pub identity: &'a DeviceIdentity,
    /// The adapter's BARs.
    pub resources: &'a Resources,
    /// The aperture segment's page table.
    pub aperture: &'a Aperture,
}

/// Segment id of the aperture segment (VidMm's ranges, mapped by the driver's table).
pub const SEGMENT_APERTURE: u32 = 1;
/// Segment id of local memory (the CPU-visible part when the BAR is smaller than VRAM).
pub const SEGMENT_LOCAL: u32 = 2;
/// Segment id of the part of VRAM the BAR does not reach, when there is one.
pub const SEGMENT_LOCAL_HIDDEN: u32 = 3;
/// Segment id `DXGK_PTE.Segment` uses for system memory (Microsoft's DXGK_PTE page).
pub const SEGMENT_SYSTEM: u32 = 0;
/// Most system memory VidMm may commit to the aperture segment at once.
pub const APERTURE_COMMIT_LIMIT: u64 = 1 << 30;
/// Bytes of GPU address range the aperture segment spans: its commit limit, since only
/// what VidMm maps there needs a range (the driver's table is 4 bytes per page of it).
pub const APERTURE_SIZE: u64 = APERTURE_COMMIT_LIMIT;

/// Bytes of one paging buffer VidMm allocates (a page: the node ring's packets are small,
/// and multipass covers larger operations).
pub const PAGING_BUFFER_SIZE: u32 = 4096;

/// The node paging buffers run on: the copy engine when there is one (paging is copies and
/// fills), else engine 0.
pub fn paging_node(m: Mmu<'_>) -> u32 {
    if m.identity.config.engines > rvgpu_hw::engine::ENGINE_COPY {
        rvgpu_hw::engine::ENGINE_COPY
    } else {
        0
    }
}

/// True when the device can translate (hardware.md §12) and the driver therefore offers the
/// GpuMmu model.
pub fn supported(m: Mmu<'_>) -> bool {
    m.identity.caps.contains(Caps::PAGE_TABLES)
}

/// The local segments: `(id, offset into VRAM, size, CPU-visible)`, in id order.
fn local_segments(m: Mmu<'_>) -> impl Iterator<Item = (u32, u64, u64, bool)> {
    let size = m.identity.vram_size;
    let visible = m.identity.vram_visible.min(size);
    let hidden = size.saturating_sub(visible);
    let first = if visible == 0 {
        (SEGMENT_LOCAL, 0, size, false)
    } else {
        (SEGMENT_LOCAL, 0, visible, true)
    };
    let second =
        (visible != 0 && hidden != 0).then_some((SEGMENT_LOCAL_HIDDEN, visible, hidden, false));
    core::iter::once(first).chain(second)
}

/// Number of segments reported.
pub fn segment_count(m: Mmu<'_>) -> u32 {
    // The aperture and one or two local segments.
    let locals = u32::try_from(local_segments(m).count()).unwrap_or(0);
    locals.saturating_add(1)
}

/// Start of segment `id` in VRAM and its size, or `None` for an id that is not local memory.
pub fn local_segment(m: Mmu<'_>, id: u32) -> Option<(u64, u64)> {
    local_segments(m)
        .find(|s| s.0 == id)
        .map(|(_, base, size, _)| (base, size))
}

fn local_descriptor(m: Mmu<'_>, base: u64, size: u64, cpu: bool) -> DXGK_SEGMENTDESCRIPTOR4 {
    let mut flags = DXGK_SEGMENTFLAGS::default();
    flags.set(DXGK_SEGMENTFLAGS::CpuVisible, u32::from(cpu));
    let cpu_base = m.resources.vram.start.saturating_add(base);
    DXGK_SEGMENTDESCRIPTOR4 {
        Flags: flags,
        // Where the segment starts in VRAM: what the KMD adds to a segment offset to get the
        // device address.
        BaseAddress: PHYSICAL_ADDRESS {
            QuadPart: i64::try_from(base).unwrap_or(0),
        },
        Size: usize::try_from(size).unwrap_or(0),
        u: DXGK_SEGMENTDESCRIPTOR4_0 {
            CpuTranslatedAddress: PHYSICAL_ADDRESS {
                QuadPart: if cpu {
                    i64::try_from(cpu_base).unwrap_or(0)
                } else {
                    0
                },
            },
        },
        ..Default::default()
    }
}

/// True when the device's DMA snoops the CPU's caches (`Caps::IO_COHERENT`). Everything the
/// KMD says about coherency follows this one bit: the aperture's `CacheCoherent`, GPUMMUCAPS,
/// DRIVERCAPS `NoCacheCoherentApertureMemory` and the device entries' `COHERENT` (AL-06).
pub fn io_coherent(m: Mmu<'_>) -> bool {
    m.identity.caps.contains(Caps::IO_COHERENT)
}

/// The aperture segment: system memory the GPU reaches through its page tables. Coherent
/// only when the device snoops (x86/x64 platforms always do: Dxgkrnl refuses
/// `NoCacheCoherentApertureMemory` there, BR-50).
fn aperture_descriptor(m: Mmu<'_>) -> DXGK_SEGMENTDESCRIPTOR4 {
    let flags = DXGK_SEGMENTFLAGS::default()
        .with(DXGK_SEGMENTFLAGS::Aperture, 1)
        .with(DXGK_SEGMENTFLAGS::CacheCoherent, u32::from(io_coherent(m)));
    DXGK_SEGMENTDESCRIPTOR4 {
        Flags: flags,
        Size: usize::try_from(APERTURE_SIZE).unwrap_or(0),
        CommitLimit: usize::try_from(APERTURE_COMMIT_LIMIT).unwrap_or(0),
        ..Default::default()
    }
}

/// `DXGKQAITYPE_QUERYSEGMENT4`: the counting call (`NbSegment` 0: set the count and touch
/// nothing else), then the filling call with the OS's array at its stride (Microsoft's
/// DXGK_QUERYSEGMENTOUT4 page).
pub fn query_segments(m: Mmu<'_>, q: &mut Request<'_>) -> Result<(), Status> {
    let input: DXGK_QUERYSEGMENTIN4 = q.input()?;
    if input.PhysicalAdapterIndex != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    let mut o: DXGK_QUERYSEGMENTOUT4 = q.output_now()?;
    let count = segment_count(m);
    if o.NbSegment == 0 {
        o.NbSegment = count;
        return q.write(&o);
    }
    let stride = o.SegmentDescriptorStride;
    if o.NbSegment != count || stride == 0 {
        return Err(status::INVALID_PARAMETER);
    }
    let each = stride.min(size_of::<DXGK_SEGMENTDESCRIPTOR4>());
    let array = q.segment_array()?;
    let locals = local_segments(m).map(|(_, base, size, cpu)| local_descriptor(m, base, size, cpu));
    for (d, slot) in core::iter::once(aperture_descriptor(m))
        .chain(locals)
        .zip(array.chunks_mut(stride))
    {
        write_bytes(slot, &d, each)?;
    }
    o.PagingBufferSegmentId = 0;
    o.PagingBufferSize = PAGING_BUFFER_SIZE;
    o.PagingBufferPrivateDataSize = 0;
    q.write(&o)
}

/// `DXGKQAITYPE_GPUMMUCAPS` (input: the physical adapter index): hardware.md §12.3.
pub fn query_mmu_caps(m: Mmu<'_>, q: &mut Request<'_>) -> Result<(), Status> {
    let index: u32 = q.input()?;
    if index != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    q.write(&mmu_caps(m))
}

/// What the device's MMU does, in VidMm's terms.
pub fn mmu_caps(m: Mmu<'_>) -> DXGK_GPUMMUCAPS {
    let flags = DXGK_GPUMMUCAPS_FLAGS::default()
        .with(DXGK_GPUMMUCAPS_FLAGS::ReadOnlyMemorySupported, 1)
        .with(DXGK_GPUMMUCAPS_FLAGS::NoExecuteMemorySupported, 1)
        .with(
            DXGK_GPUMMUCAPS_FLAGS::CacheCoherentMemorySupported,
            u32::from(io_coherent(m)),
        )
        // The TLB is not snooped: a FLUSHTLB must follow every update (hardware.md §12.5).
        .with(DXGK_GPUMMUCAPS_FLAGS::ExplicitPageTableInvalidation, 1)
        .with(DXGK_GPUMMUCAPS_FLAGS::LargePageSupported, 1)
        // The entry's location bit holds for large pages too (hardware.md 12.3): a 2 MiB page
        // may be system memory.
        .with(DXGK_GPUMMUCAPS_FLAGS::SysMemLargePageSupported, 1);
    DXGK_GPUMMUCAPS {
        Flags: flags,
        PageTableUpdateMode: DXGK_PAGETABLEUPDATE_GPU_PHYSICAL,
        VirtualAddressBitCount: mmu::VA_BITS,
        // No 64 KiB leaf format: no segment sets Use64KBPages and SysMem64KBPageSupported is
        // 0, so VidMm has no reason to ask for one; the size is what a 2 MiB span of 64 KiB
        // entries would take.
        LeafPageTableSizeFor64KPagesInBytes: 256,
        PageTableLevelCount: u32::from(mmu::LEVELS),
        ..Default::default()
    }
}

/// `DXGKQAITYPE_PAGETABLELEVELDESC`: every level is a 4 KiB table of 512 entries in the
/// local segment, for user processes and the paging process alike.
pub fn query_level(_m: Mmu<'_>, q: &mut Request<'_>) -> Result<(), Status> {
    let input: DXGK_QUERYPAGETABLELEVELDESCIN = q.input()?;
    if input.PhysicalAdapterIndex != 0 || u32::from(input.LevelIndex) >= u32::from(mmu::LEVELS) {
        return Err(status::INVALID_PARAMETER);
    }
    q.write(&level_desc())
}

/// The descriptor of every level.
pub fn level_desc() -> DXGK_PAGE_TABLE_LEVEL_DESC {
    let table = u32::try_from(mmu::TABLE_SIZE).unwrap_or(4096);
    DXGK_PAGE_TABLE_LEVEL_DESC {
        PageTableIndexBitCount: 9,
        PageTableSegmentId: SEGMENT_LOCAL,
        PagingProcessPageTableSegmentId: SEGMENT_LOCAL,
        PageTableSizeInBytes: table,
        PageTableAlignmentInBytes: table,
    }
}

/// Translates one VidMm entry for a table at `level` into the device's format
/// (docs/memory.md "DXGK_PTE → device entry"). `user`: the page may be reached from user-mode
/// queues (the KMD's decision, not VidMm's: DXGK_PTE has no such bit). Refused:
/// `Zero` (ZeroInPteSupported is 0), a segment rvgpu did not report, a local page outside
/// its segment, `LargePage` anywhere but level 1, reserved bits.
pub fn device_entry(m: Mmu<'_>, e: &DXGK_PTE, level: u8, user: bool) -> Result<u64, Status> {
    let f = e.Anonymous;
    if f.get(DXGK_PTE_0::Valid) == 0 {
        return Ok(mmu::Pte::INVALID.0);
    }
    if f.get(DXGK_PTE_0::Zero) != 0
        || f.get(DXGK_PTE_0::Reserved) != 0
        || f.get(DXGK_PTE_0::PhysicalAdapterIndex) != 0
        || level >= mmu::LEVELS
    {
        return Err(status::INVALID_PARAMETER);
    }
    let (addr, vram, large) = entry_target(m, e, level)?;
    let pte = if level == 0 || large {
        let attrs = mmu::PageAttrs {
            writable: f.get(DXGK_PTE_0::ReadOnly) == 0,
            user,
            vram,
            // A device that does not snoop cannot honour VidMm's request (AL-06).
            coherent: f.get(DXGK_PTE_0::CacheCoherent) != 0 && io_coherent(m),
            no_execute: f.get(DXGK_PTE_0::NoExecute) != 0,
        };
        mmu::Pte::page(addr, attrs, large)
    } else {
        mmu::Pte::table(addr, vram)
    };
    pte.map(|p| p.0).ok_or(status::INVALID_PARAMETER)
}

/// The device address (system bus address, or `VRAM_BASE` + VRAM offset) a valid entry
/// `e` at `level` points at: what fence addresses are compared with.
pub fn device_address(m: Mmu<'_>, e: &DXGK_PTE, level: u8) -> Result<u64, Status> {
    let (addr, vram, _) = entry_target(m, e, level)?;
    if vram {
        rvgpu_hw::addr::VRAM_BASE
            .checked_add(addr)
            .ok_or(status::INVALID_PARAMETER)
    } else {
        Ok(addr)
    }
}

/// Where a valid entry points: (address in its space, whether that space is VRAM, large).
/// Segment-relative addresses of local segments become VRAM offsets, checked against the
/// segment; system addresses are checked against the bus window; aperture pages become the
/// bus pages the driver's table maps there, and must all be mapped, contiguously.
fn entry_target(m: Mmu<'_>, e: &DXGK_PTE, level: u8) -> Result<(u64, bool, bool), Status> {
    let f = e.Anonymous;
    let large = f.get(DXGK_PTE_0::LargePage) != 0;
    if large && level != mmu::LARGE_LEVEL {
        return Err(status::INVALID_PARAMETER);
    }
    let frame = crate::args::pte_frame(e);
    let offset = frame
        .checked_mul(mmu::PAGE_4K)
        .ok_or(status::INVALID_PARAMETER)?;
    let segment =
        u32::try_from(f.get(DXGK_PTE_0::Segment)).map_err(|_| status::INVALID_PARAMETER)?;
    let span = if level == 0 || !large {
        if level == 0 {
            mmu::PAGE_4K
        } else {
            mmu::TABLE_SIZE
        }
    } else {
        mmu::PAGE_2M
    };
    let (addr, vram) = match segment {
        SEGMENT_APERTURE => {
            let bus = m
                .aperture
                .contiguous(offset, span)
                .ok_or(status::INVALID_PARAMETER)?;
            (bus, false)
        }
        SEGMENT_SYSTEM => {
            let end = offset.checked_add(span).ok_or(status::INVALID_PARAMETER)?;
            if end > rvgpu_hw::addr::SYSMEM_LIMIT {
                return Err(status::INVALID_PARAMETER);
            }
            (offset, false)
        }
        id => {
            let (base, size) = local_segment(m, id).ok_or(status::INVALID_PARAMETER)?;
            let end = offset.checked_add(span).ok_or(status::INVALID_PARAMETER)?;
            if end > size {
                return Err(status::INVALID_PARAMETER);
            }
            (
                base.checked_add(offset).ok_or(status::INVALID_PARAMETER)?,
                true,
            )
        }
    };
    Ok((addr, vram, large))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmem::Host;
    use crate::resources::MemRange;
    use rvgpu_hw::regs::Config;

    /// A device with page tables, `vram` bytes of VRAM of which the BAR reaches `visible`.
    fn device(vram: u64, visible: u64) -> (DeviceIdentity, Resources, Aperture) {
        let identity = DeviceIdentity {
            version: rvgpu_hw::regs::VERSION_VALUE,
            caps: Caps::PAGE_TABLES | Caps::ATOMIC64,
            config: Config {
                engines: 2,
                doorbells: 4,
            },
            vram_size: vram,
            vram_visible: visible,
            clock_hz: 1_000_000,
        };
        let resources = Resources {
            vram: MemRange {
                start: 0x8000_0000,
                length: visible,
            },
            ..Default::default()
        };
        (
            identity,
            resources,
            Aperture::try_new::<Host>(16 * 4096).unwrap(),
        )
    }

    fn mmu<'a>(id: &'a DeviceIdentity, res: &'a Resources, ap: &'a Aperture) -> Mmu<'a> {
        Mmu {
            identity: id,
            resources: res,
            aperture: ap,
        }
    }

    fn pte(segment: u32, frame: u64) -> DXGK_PTE {
        let mut e = DXGK_PTE::default();
        e.Anonymous.set(DXGK_PTE_0::Valid, 1);
        e.Anonymous.set(DXGK_PTE_0::Segment, u64::from(segment));
        e.Anonymous2.PageAddress = frame;
        e
    }

    /// The aperture, then one local segment, or two when the BAR reaches only part of VRAM
    /// (the rest GPU-only): what VidMm is told and what entries may name.
    #[test]
    fn segments_follow_the_vram_the_bar_reaches() {
        let (id, res, ap) = device(64 << 20, 64 << 20);
        let m = mmu(&id, &res, &ap);
        assert_eq!(segment_count(m), 2);
        assert_eq!(local_segment(m, SEGMENT_LOCAL), Some((0, 64 << 20)));
        assert_eq!(local_segment(m, SEGMENT_LOCAL_HIDDEN), None);
        let (id, res, ap) = device(64 << 20, 16 << 20);
        let m = mmu(&id, &res, &ap);
        assert_eq!(segment_count(m), 3);
        assert_eq!(local_segment(m, SEGMENT_LOCAL), Some((0, 16 << 20)));
        assert_eq!(
            local_segment(m, SEGMENT_LOCAL_HIDDEN),
            Some((16 << 20, 48 << 20))
        );
        assert_eq!(local_segment(m, SEGMENT_APERTURE), None, "not local memory");
    }

    /// VidMm's entries become device entries only when they name memory rvgpu reported:
    /// a local page inside its segment, system memory below the bus limit, an aperture page
    /// the driver's table maps. Anything else is refused, never translated.
    #[test]
    fn entries_outside_reported_memory_are_refused() {
        let (id, res, ap) = device(64 << 20, 16 << 20);
        let m = mmu(&id, &res, &ap);
        let hidden_first = pte(SEGMENT_LOCAL_HIDDEN, 0);
        assert_eq!(
            device_address(m, &hidden_first, 0),
            Ok(rvgpu_hw::addr::VRAM_BASE + (16 << 20))
        );
        let past = pte(SEGMENT_LOCAL, (16 << 20) / 4096);
        assert_eq!(
            device_entry(m, &past, 0, false),
            Err(status::INVALID_PARAMETER)
        );
        let sys = pte(SEGMENT_SYSTEM, rvgpu_hw::addr::SYSMEM_LIMIT / 4096);
        assert_eq!(
            device_entry(m, &sys, 0, false),
            Err(status::INVALID_PARAMETER)
        );
        let unmapped = pte(SEGMENT_APERTURE, 3);
        assert_eq!(
            device_entry(m, &unmapped, 0, false),
            Err(status::INVALID_PARAMETER)
        );
        ap.map(3, &[0x123]).unwrap();
        assert_eq!(device_address(m, &unmapped, 0), Ok(0x12_3000));
        let unknown = pte(7, 0);
        assert_eq!(
            device_entry(m, &unknown, 0, false),
            Err(status::INVALID_PARAMETER)
        );
        let mut large_at_leaf = pte(SEGMENT_LOCAL, 0);
        large_at_leaf.Anonymous.set(DXGK_PTE_0::LargePage, 1);
        assert_eq!(
            device_entry(m, &large_at_leaf, 0, false),
            Err(status::INVALID_PARAMETER)
        );
        assert_eq!(
            device_entry(m, &DXGK_PTE::default(), 0, false),
            Ok(mmu::Pte::INVALID.0)
        );
    }

    /// Without page tables the model is not offered, and the caps say how the TLB is kept.
    #[test]
    fn gpummu_is_offered_only_with_page_tables() {
        let (mut id, res, ap) = device(64 << 20, 64 << 20);
        let m = mmu(&id, &res, &ap);
        assert!(supported(m));
        let caps = mmu_caps(m);
        assert_eq!(
            caps.Flags
                .get(DXGK_GPUMMUCAPS_FLAGS::ExplicitPageTableInvalidation),
            1
        );
        assert_eq!(caps.PageTableLevelCount, u32::from(mmu::LEVELS));
        id.caps.remove(Caps::PAGE_TABLES);
        let m = mmu(&id, &res, &ap);
        assert!(!supported(m));
    }

    /// Every level is one 4 KiB table of 512 entries in the local segment, aligned to its
    /// size: what the device's walker reads (hardware.md §12).
    #[test]
    fn every_level_is_one_aligned_local_table_of_512_entries() {
        let d = level_desc();
        assert_eq!(1u64 << d.PageTableIndexBitCount, mmu::ENTRIES_PER_TABLE);
        assert_eq!(u64::from(d.PageTableSizeInBytes), mmu::TABLE_SIZE);
        assert_eq!(d.PageTableAlignmentInBytes, d.PageTableSizeInBytes);
        assert_eq!(d.PageTableSegmentId, SEGMENT_LOCAL);
        assert_eq!(d.PagingProcessPageTableSegmentId, SEGMENT_LOCAL);
    }
}
