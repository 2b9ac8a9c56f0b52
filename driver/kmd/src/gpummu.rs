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

use rvgpu_ddi::adapter::DXGKARG_QUERYADAPTERINFO;
use rvgpu_ddi::memory::{
    DXGK_GPUMMUCAPS, DXGK_GPUMMUCAPS_FLAGS, DXGK_PAGETABLEUPDATE_GPU_PHYSICAL,
    DXGK_PAGE_TABLE_LEVEL_DESC, DXGK_PTE, DXGK_PTE_0, DXGK_QUERYPAGETABLELEVELDESCIN,
    DXGK_QUERYSEGMENTIN4, DXGK_QUERYSEGMENTOUT4, DXGK_SEGMENTDESCRIPTOR4,
    DXGK_SEGMENTDESCRIPTOR4_0, DXGK_SEGMENTFLAGS,
};
use rvgpu_ddi::PHYSICAL_ADDRESS;
use rvgpu_hw::mmu;
use rvgpu_hw::regs::Caps;

use crate::adapter::Live;
use crate::caps::write_out;
use crate::platform::Platform;
use crate::status::{self, Status};

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
pub fn paging_node<P: Platform>(live: &Live<P>) -> u32 {
    if live.identity.config.engines > rvgpu_hw::engine::ENGINE_COPY {
        rvgpu_hw::engine::ENGINE_COPY
    } else {
        0
    }
}

/// True when the device can translate (hardware.md §12) and the driver therefore offers the
/// GpuMmu model.
pub fn supported<P: Platform>(live: &Live<P>) -> bool {
    live.identity.caps.contains(Caps::PAGE_TABLES)
}

/// The local segments: `(id, offset into VRAM, size, CPU-visible)`, in id order.
fn local_segments<P: Platform>(live: &Live<P>) -> impl Iterator<Item = (u32, u64, u64, bool)> {
    let size = live.identity.vram_size;
    let visible = live.identity.vram_visible.min(size);
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
pub fn segment_count<P: Platform>(live: &Live<P>) -> u32 {
    // The aperture and one or two local segments.
    let locals = u32::try_from(local_segments(live).count()).unwrap_or(0);
    locals.saturating_add(1)
}

/// Start of segment `id` in VRAM and its size, or `None` for an id that is not local memory.
pub fn local_segment<P: Platform>(live: &Live<P>, id: u32) -> Option<(u64, u64)> {
    local_segments(live)
        .find(|s| s.0 == id)
        .map(|(_, base, size, _)| (base, size))
}

fn local_descriptor<P: Platform>(
    live: &Live<P>,
    base: u64,
    size: u64,
    cpu: bool,
) -> DXGK_SEGMENTDESCRIPTOR4 {
    let mut flags = DXGK_SEGMENTFLAGS::default();
    flags.set(DXGK_SEGMENTFLAGS::CpuVisible, u32::from(cpu));
    let cpu_base = live.resources.vram.start.saturating_add(base);
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
pub fn io_coherent<P: Platform>(live: &Live<P>) -> bool {
    live.identity.caps.contains(Caps::IO_COHERENT)
}

/// The aperture segment: system memory the GPU reaches through its page tables. Coherent
/// only when the device snoops (x86/x64 platforms always do: Dxgkrnl refuses
/// `NoCacheCoherentApertureMemory` there, BR-50).
fn aperture_descriptor<P: Platform>(live: &Live<P>) -> DXGK_SEGMENTDESCRIPTOR4 {
    let flags = DXGK_SEGMENTFLAGS::default()
        .with(DXGK_SEGMENTFLAGS::Aperture, 1)
        .with(
            DXGK_SEGMENTFLAGS::CacheCoherent,
            u32::from(io_coherent(live)),
        );
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
pub fn query_segments<P: Platform>(
    live: &Live<P>,
    args: &DXGKARG_QUERYADAPTERINFO,
) -> Result<(), Status> {
    let input: DXGK_QUERYSEGMENTIN4 = read_in(args)?;
    if input.PhysicalAdapterIndex != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    let out = out_ptr::<DXGK_QUERYSEGMENTOUT4>(args)?;
    // SAFETY: `out_ptr` checked that the OS's buffer holds a DXGK_QUERYSEGMENTOUT4; read
    // unaligned (the OS promises no alignment).
    let mut o = unsafe { out.read_unaligned() };
    let count = segment_count(live);
    if o.NbSegment == 0 {
        o.NbSegment = count;
        // SAFETY: as above, for the write back.
        unsafe { out.write_unaligned(o) };
        return Ok(());
    }
    let stride = o.SegmentDescriptorStride;
    if o.NbSegment != count || o.pSegmentDescriptor.is_null() || stride == 0 {
        return Err(status::INVALID_PARAMETER);
    }
    let each = stride.min(size_of::<DXGK_SEGMENTDESCRIPTOR4>());
    let locals =
        local_segments(live).map(|(_, base, size, cpu)| local_descriptor(live, base, size, cpu));
    for (i, d) in core::iter::once(aperture_descriptor(live))
        .chain(locals)
        .enumerate()
    {
        let off = i.checked_mul(stride).ok_or(status::INVALID_PARAMETER)?;
        // SAFETY: the OS's array holds `NbSegment` (= count, checked) elements of `stride`
        // bytes, so `off` is inside it.
        let dst = unsafe { o.pSegmentDescriptor.add(off) };
        // SAFETY: `off + each <= count * stride` bytes of the OS's array are writable; bytes
        // are copied, so alignment is moot; `d` is a local.
        unsafe { core::ptr::copy_nonoverlapping((&raw const d).cast::<u8>(), dst, each) };
    }
    o.PagingBufferSegmentId = 0;
    o.PagingBufferSize = PAGING_BUFFER_SIZE;
    o.PagingBufferPrivateDataSize = 0;
    // SAFETY: as above, for the write back.
    unsafe { out.write_unaligned(o) };
    Ok(())
}

/// `DXGKQAITYPE_GPUMMUCAPS` (input: the physical adapter index): hardware.md §12.3.
pub fn query_mmu_caps<P: Platform>(
    live: &Live<P>,
    args: &DXGKARG_QUERYADAPTERINFO,
) -> Result<(), Status> {
    let index: u32 = read_in(args)?;
    if index != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    write_out(args, &mmu_caps(live))
}

/// What the device's MMU does, in VidMm's terms.
pub fn mmu_caps<P: Platform>(live: &Live<P>) -> DXGK_GPUMMUCAPS {
    let flags = DXGK_GPUMMUCAPS_FLAGS::default()
        .with(DXGK_GPUMMUCAPS_FLAGS::ReadOnlyMemorySupported, 1)
        .with(DXGK_GPUMMUCAPS_FLAGS::NoExecuteMemorySupported, 1)
        .with(
            DXGK_GPUMMUCAPS_FLAGS::CacheCoherentMemorySupported,
            u32::from(io_coherent(live)),
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
pub fn query_level<P: Platform>(
    _live: &Live<P>,
    args: &DXGKARG_QUERYADAPTERINFO,
) -> Result<(), Status> {
    let input: DXGK_QUERYPAGETABLELEVELDESCIN = read_in(args)?;
    if input.PhysicalAdapterIndex != 0 || u32::from(input.LevelIndex) >= u32::from(mmu::LEVELS) {
        return Err(status::INVALID_PARAMETER);
    }
    write_out(args, &level_desc())
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

/// Reads the query's input block.
fn read_in<T: Copy>(args: &DXGKARG_QUERYADAPTERINFO) -> Result<T, Status> {
    let have = usize::try_from(args.InputDataSize).map_err(|_| status::INVALID_PARAMETER)?;
    if args.pInputData.is_null() || have < size_of::<T>() {
        return Err(status::INVALID_PARAMETER);
    }
    // SAFETY: Dxgkrnl provides `InputDataSize` readable bytes at `pInputData` (checked to
    // hold a T); every T read here is plain integers, valid for any bit pattern.
    Ok(unsafe { args.pInputData.cast::<T>().read_unaligned() })
}

/// The output block as a `T` pointer, after checking its size.
fn out_ptr<T>(args: &DXGKARG_QUERYADAPTERINFO) -> Result<*mut T, Status> {
    let have = usize::try_from(args.OutputDataSize).map_err(|_| status::INVALID_PARAMETER)?;
    if args.pOutputData.is_null() || have < size_of::<T>() {
        return Err(status::INVALID_PARAMETER);
    }
    Ok(args.pOutputData.cast::<T>())
}

/// Translates one VidMm entry for a table at `level` into the device's format
/// (docs/memory.md "DXGK_PTE → device entry"). `user`: the page may be reached from user-mode
/// queues (the KMD's decision, not VidMm's: DXGK_PTE has no such bit). Refused:
/// `Zero` (ZeroInPteSupported is 0), a segment rvgpu did not report, a local page outside
/// its segment, `LargePage` anywhere but level 1, reserved bits.
pub fn device_entry<P: Platform>(
    live: &Live<P>,
    e: &DXGK_PTE,
    level: u8,
    user: bool,
) -> Result<u64, Status> {
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
    let (addr, vram, large) = entry_target(live, e, level)?;
    let pte = if level == 0 || large {
        let attrs = mmu::PageAttrs {
            writable: f.get(DXGK_PTE_0::ReadOnly) == 0,
            user,
            vram,
            // A device that does not snoop cannot honour VidMm's request (AL-06).
            coherent: f.get(DXGK_PTE_0::CacheCoherent) != 0 && io_coherent(live),
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
pub fn device_address<P: Platform>(live: &Live<P>, e: &DXGK_PTE, level: u8) -> Result<u64, Status> {
    let (addr, vram, _) = entry_target(live, e, level)?;
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
fn entry_target<P: Platform>(
    live: &Live<P>,
    e: &DXGK_PTE,
    level: u8,
) -> Result<(u64, bool, bool), Status> {
    let f = e.Anonymous;
    let large = f.get(DXGK_PTE_0::LargePage) != 0;
    if large && level != mmu::LARGE_LEVEL {
        return Err(status::INVALID_PARAMETER);
    }
    // SAFETY: both arms of the address union are the same u64.
    let frame = unsafe { e.Anonymous2.PageAddress };
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
            let bus = live
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
            let (base, size) = local_segment(live, id).ok_or(status::INVALID_PARAMETER)?;
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
