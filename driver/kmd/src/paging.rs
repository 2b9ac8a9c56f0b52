//! `DxgkDdiBuildPagingBuffer` (docs/tdr.md#the-kmd, TDR-03/TDR-08): the paging operations the
//! node ring executes, written into the OS's paging buffer as device packets.
//!
//! - `DXGK_OPERATION_FILL` → `FILL` packets (the 32-bit pattern repeated to 64 bits);
//! - `DXGK_OPERATION_TRANSFER` between segment locations and system memory an MDL describes
//!   (`SegmentId` 0, [`crate::mdl`]) → `COPY` packets;
//!
//! each packet at most [`MAX_TRANSFER`] bytes and never across a physical discontinuity of an
//! MDL side or an aperture side (one packet per run of consecutive page numbers). Paging
//! buffers run in the system space, which is identity (hardware.md §12.2): an MDL page is the
//! bus address `PFN × 4096`; an aperture address is translated page by page through the
//! driver's aperture table ([`crate::aperture`]), which VidMm fills with
//! - `DXGK_OPERATION_MAP_APERTURE_SEGMENT` / `UNMAP_APERTURE_SEGMENT`: table changes only,
//!   no packets (the device has no GART; see `crate::aperture`);
//! - a TRANSFER of size zero: the notice of an allocation purged after a reset, no packets;
//!
//! a local segment's address is a VRAM offset the device sees at `VRAM_BASE` + offset
//! (residency moves allocations between the two). Everything else (swizzling,
//! discard …) is refused with `STATUS_NOT_SUPPORTED` until the driver reports segments that
//! need them.
//!
//! Multipass: when the paging buffer cannot hold the whole operation, the packets that fit are
//! written, `MultipassOffset` records how many packets are done, and the DDI returns
//! `STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER`; the OS submits the buffer and calls again with a
//! new one and the same `MultipassOffset` (the page's contract).
//!
//! Buffer space: `pDmaBuffer` is advanced past what was written (the page: "return a pointer to
//! the next available byte"). Whether `DmaSize` counts from the paging buffer's start or from
//! `pDmaBuffer` is not stated on the page (UNVERIFIED); the driver uses `DmaSize −
//! DmaBufferWriteOffset`, which is within the buffer under either reading, and leaves
//! `DmaSize` unchanged.
//!
//! <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_buildpagingbuffer>,
//! <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_buildpagingbuffer>

use rvgpu_ddi::ntstatus::{STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER, STATUS_NOT_SUPPORTED};
use rvgpu_ddi::tdr::{DXGKARG_BUILDPAGINGBUFFER, DXGK_TRANSFERFLAGS};
use rvgpu_ddi::NTSTATUS;
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::cmd::{Command, MAX_TRANSFER};

use crate::adapter::{Adapter, Live};
use crate::aperture::Aperture;
use crate::args::Call;
use crate::args::{PagingOperation, TransferSide};
use crate::handle::{Handle, Kind};
use crate::mdl::Pages;
use crate::platform::Platform;
use crate::status::{self, Status};

/// Words of one COPY / FILL packet.
const PACKET_WORDS: usize = 4;

/// Where one side of a paging operation is, as the device reaches it from the paging buffer.
#[derive(Clone, Copy, Debug)]
pub enum Loc<'a> {
    /// Contiguous from this device address (a segment location).
    Linear(GpuVa),
    /// System memory page by page (an MDL side, [`crate::mdl`]).
    Pages(Pages<'a>),
    /// Aperture offsets from `start`, page by page through the aperture's table.
    Aperture { table: &'a Aperture, start: u64 },
}

impl Loc<'_> {
    /// The device address of byte `pos` and how many bytes from there are contiguous, at
    /// most `want`.
    fn at(&self, pos: u64, want: u64) -> Option<(u64, u64)> {
        match self {
            Loc::Linear(base) => Some((base.checked_add(pos)?.get(), want)),
            Loc::Pages(p) => p.at(pos, want),
            Loc::Aperture { table, start } => table.at(start.checked_add(pos)?, want),
        }
    }
}

/// One paging operation, reduced to what the device does.
#[derive(Clone, Copy, Debug)]
pub enum Op<'a> {
    /// Fill `bytes` at `dst` with the 64-bit `pattern`.
    Fill {
        dst: Loc<'a>,
        bytes: u64,
        pattern: u64,
    },
    /// Copy `bytes` from `src` to `dst`.
    Copy {
        src: Loc<'a>,
        dst: Loc<'a>,
        bytes: u64,
    },
}

impl Op<'_> {
    /// Total bytes.
    fn bytes(&self) -> u64 {
        match *self {
            Op::Fill { bytes, .. } | Op::Copy { bytes, .. } => bytes,
        }
    }

    /// The packet that starts at byte `pos` and its length: at most [`MAX_TRANSFER`] bytes,
    /// and never across a physical discontinuity of either side. `None` at the end or when
    /// a side has no address for `pos`.
    fn packet_at(&self, pos: u64) -> Option<(Command, u64)> {
        let left = self.bytes().checked_sub(pos).filter(|&n| n > 0)?;
        let want = left.min(MAX_TRANSFER);
        match *self {
            Op::Fill { dst, pattern, .. } => {
                let (d, n) = dst.at(pos, want)?;
                Some((
                    Command::Fill {
                        dst: d,
                        bytes: n,
                        pattern,
                    },
                    n,
                ))
            }
            Op::Copy { src, dst, .. } => {
                let (s, n) = src.at(pos, want)?;
                let (d, n) = dst.at(pos, n)?;
                Some((
                    Command::Copy {
                        src: s,
                        dst: d,
                        bytes: n,
                    },
                    n,
                ))
            }
        }
    }

    /// The packets in order; an item is `None` where a side has no address (the operation
    /// is then invalid, [`Op::validate`]).
    fn packets(&self) -> Packets<'_, '_> {
        Packets {
            op: self,
            pos: 0,
            done: false,
        }
    }

    /// Number of packets (the unit of `MultipassOffset`).
    pub fn chunks(&self) -> u64 {
        self.packets().fold(0u64, |n, _| n.saturating_add(1))
    }

    /// Checks what the device checks, packet by packet: 8-aligned addresses and sizes, no
    /// wrap, no null address, not empty.
    fn validate(&self) -> Result<(), Status> {
        let a = rvgpu_hw::addr::ACCESS_ALIGN;
        let bytes = self.bytes();
        if bytes == 0 || !bytes.is_multiple_of(a) {
            return Err(status::INVALID_PARAMETER);
        }
        let ok = |addr: u64, n: u64| {
            addr != 0 && addr.is_multiple_of(a) && addr.checked_add(n).is_some()
        };
        for p in self.packets() {
            let good = match p {
                Some(Command::Fill { dst, bytes, .. }) => ok(dst, bytes),
                Some(Command::Copy { src, dst, bytes }) => ok(src, bytes) && ok(dst, bytes),
                _ => false,
            };
            if !good {
                return Err(status::INVALID_PARAMETER);
            }
        }
        Ok(())
    }
}

/// Iterator of [`Op::packets`].
struct Packets<'o, 'a> {
    op: &'o Op<'a>,
    pos: u64,
    done: bool,
}

impl Iterator for Packets<'_, '_> {
    type Item = Option<Command>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.op.bytes() {
            return None;
        }
        match self.op.packet_at(self.pos) {
            Some((c, n)) if n > 0 => {
                self.pos = self.pos.saturating_add(n);
                Some(Some(c))
            }
            _ => {
                self.done = true;
                Some(None)
            }
        }
    }
}

/// Writes the packets of `op` from chunk `first` on into `out` while they fit. Returns
/// `(words written, next chunk)`; the operation is complete when next chunk = `op.chunks()`.
pub fn encode(op: &Op<'_>, first: u64, out: &mut [u64]) -> (usize, u64) {
    let mut n = 0usize;
    let mut i = first;
    let skip = usize::try_from(first).unwrap_or(usize::MAX);
    for p in op.packets().skip(skip) {
        let Some(slot) = n
            .checked_add(PACKET_WORDS)
            .and_then(|end| out.get_mut(n..end))
        else {
            break;
        };
        let Some(w) = p.and_then(|p| p.encode(slot)) else {
            break;
        };
        n = n.saturating_add(w);
        i = i.saturating_add(1);
    }
    (n, i)
}

/// Where `address` in segment `id` is, as VidMm names a paging location: the segment's
/// `BaseAddress` plus the offset in it (the DXGK_SEGMENTDESCRIPTOR4 page).
/// - The aperture's base is 0; its offsets are VidMm's ranges, reached through the pages the
///   driver's table maps there (a page not mapped is refused when the operation is checked).
/// - A local segment's base is where it starts in VRAM, so the address is a VRAM offset that
///   must stay inside that segment, and the device sees it at `VRAM_BASE` + offset
///   (hardware.md §12.1).
///
/// Anything else is not a segment rvgpu reported.
fn segment_location<'a, P: Platform>(
    live: &'a crate::adapter::Live<P>,
    id: u32,
    address: i64,
    bytes: u64,
) -> Result<Loc<'a>, NTSTATUS> {
    let bad = status::INVALID_PARAMETER.code();
    let addr = u64::try_from(address).map_err(|_| bad)?;
    if id == crate::gpummu::SEGMENT_APERTURE {
        let end = addr.checked_add(bytes).ok_or(bad)?;
        if end > live.aperture.size() {
            return Err(bad);
        }
        return Ok(Loc::Aperture {
            table: &live.aperture,
            start: addr,
        });
    }
    let (base, size) = crate::gpummu::local_segment(live.mmu(), id).ok_or(bad)?;
    let end = addr.checked_add(bytes).ok_or(bad)?;
    if addr < base || end > base.saturating_add(size) {
        return Err(bad);
    }
    rvgpu_hw::addr::VRAM_BASE
        .checked_add(addr)
        .map(|a| Loc::Linear(GpuVa::new(a)))
        .ok_or(bad)
}

/// MAP_APERTURE_SEGMENT: aperture pages `[OffsetInPages, + NumberOfPages)` map the MDL's
/// pages from `MdlOffset` (DXGKARG_BUILDPAGINGBUFFER page; \[D\] dxgmms2
/// `VIDMM_GLOBAL::MapVideoApertureSegmentInternal` passes the allocation's MDL). Only the
/// table changes; nothing is written to the paging buffer.
fn map_aperture<P: Platform>(
    call: Call<'_>,
    live: &crate::adapter::Live<P>,
    m: &rvgpu_ddi::tdr::DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment,
) -> NTSTATUS {
    use rvgpu_ddi::tdr::DXGK_MAPAPERTUREFLAGS;
    let bad = status::INVALID_PARAMETER.code();
    if m.SegmentId != crate::gpummu::SEGMENT_APERTURE
        || m.Flags.get(DXGK_MAPAPERTUREFLAGS::Reserved) != 0
    {
        return bad;
    }
    let (Ok(first), Ok(count)) = (
        u64::try_from(m.OffsetInPages),
        u64::try_from(m.NumberOfPages),
    ) else {
        return bad;
    };
    // VidMm passes an MDL it built for this operation (the page: `pMdl`); it stays valid and
    // unchanged until the call returns.
    let pages = match call.mdl_pages(m.pMdl) {
        Ok(p) => p,
        Err(e) => return e.code(),
    };
    let frames = match pages.frames(m.MdlOffset, count) {
        Ok(f) => f,
        Err(e) => return e.code(),
    };
    match live.aperture.map(first, frames) {
        Ok(()) => rvgpu_ddi::ntstatus::STATUS_SUCCESS,
        Err(e) => e.code(),
    }
}

/// UNMAP_APERTURE_SEGMENT: aperture pages `[OffsetInPages, + NumberOfPages)` point at
/// `DummyPage` (\[D\] dxgmms2 `VIDMM_GLOBAL::UnmapVideoApertureSegmentInternal`). Table only.
fn unmap_aperture<P: Platform>(
    live: &crate::adapter::Live<P>,
    u: &rvgpu_ddi::tdr::DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment,
) -> NTSTATUS {
    let bad = status::INVALID_PARAMETER.code();
    if u.SegmentId != crate::gpummu::SEGMENT_APERTURE {
        return bad;
    }
    let (Ok(first), Ok(count), Ok(dummy)) = (
        u64::try_from(u.OffsetInPages),
        u64::try_from(u.NumberOfPages),
        u64::try_from(crate::args::quad(&u.DummyPage)),
    ) else {
        return bad;
    };
    match live.aperture.unmap(first, count, dummy) {
        Ok(()) => rvgpu_ddi::ntstatus::STATUS_SUCCESS,
        Err(e) => e.code(),
    }
}

/// Reads the operation out of the argument: a FILL of a segment location, or a TRANSFER whose
/// sides are segment locations or MDLs.
///
/// - `TransferOffset` moves segment sides only ("applied only to a location that a segment
///   location describes ... does not apply to an MDL", DXGKARG_BUILDPAGINGBUFFER page); it is
///   the same on every pass.
/// - An MDL side starts `MdlOffset` pages into the MDL's buffer
///   (`MmGetMdlPfnArray(pMdl)[MdlOffset]` is its first page, same page) and must end inside
///   the MDL's `ByteCount`.
/// - FILL has no MDL arm in d3dkmddi.h (`Fill.Destination` is `SegmentId` +
///   `SegmentAddress` only), so a FILL with `SegmentId` 0 names no memory and is refused as
///   any unknown segment is.
/// - Both sides MDLs (system memory to system memory) is not something VidMm asks of the
///   GPU here (UNVERIFIED): `STATUS_NOT_SUPPORTED`.
fn operation<'a, P: Platform>(
    call: Call<'a>,
    live: &'a crate::adapter::Live<P>,
    args: &'a DXGKARG_BUILDPAGINGBUFFER,
) -> Result<Op<'a>, NTSTATUS> {
    let bad = status::INVALID_PARAMETER.code();
    match crate::args::paging_operation(args) {
        PagingOperation::Fill(f) => {
            let bytes = u64::try_from(f.FillSize).map_err(|_| bad)?;
            let dst = segment_location(
                live,
                f.Destination.SegmentId,
                crate::args::quad(&f.Destination.SegmentAddress),
                bytes,
            )?;
            let p = u64::from(f.FillPattern);
            Ok(Op::Fill {
                dst,
                bytes,
                pattern: (p << 32) | p,
            })
        }
        PagingOperation::Transfer(t) => {
            let special = DXGK_TRANSFERFLAGS::default()
                .with(DXGK_TRANSFERFLAGS::Swizzle, 1)
                .with(DXGK_TRANSFERFLAGS::Unswizzle, 1);
            if t.Flags.Value & special.Value != 0 || t.Flags.get(DXGK_TRANSFERFLAGS::Reserved) != 0
            {
                return Err(STATUS_NOT_SUPPORTED);
            }
            let bytes = u64::try_from(t.TransferSize).map_err(|_| bad)?;
            let src = crate::args::transfer_side(&t.Source);
            let dst = crate::args::transfer_side(&t.Destination);
            if matches!((src, dst), (TransferSide::Mdl(_), TransferSide::Mdl(_))) {
                return Err(STATUS_NOT_SUPPORTED);
            }
            let off = i64::from(t.TransferOffset);
            let at = |side: TransferSide| -> Result<Loc<'a>, NTSTATUS> {
                match side {
                    TransferSide::Segment(id, a) => {
                        let a = a.checked_add(off).ok_or(bad)?;
                        segment_location(live, id, a, bytes)
                    }
                    TransferSide::Mdl(mdl) => {
                        // VidMm passes an MDL it built for this operation (the page: "a
                        // pointer to a buffer that contains the MDL"); it stays valid and
                        // unchanged until the call returns.
                        let pages = call.mdl_pages(mdl).map_err(|e| e.code())?;
                        pages
                            .range(t.MdlOffset, bytes)
                            .map(Loc::Pages)
                            .map_err(|e| e.code())
                    }
                }
            };
            Ok(Op::Copy {
                src: at(src)?,
                dst: at(dst)?,
                bytes,
            })
        }
        _ => Err(STATUS_NOT_SUPPORTED),
    }
}

/// DxgkDdiBuildPagingBuffer (PASSIVE_LEVEL per the public headers; the reference page states no
/// IRQL, UNVERIFIED). Returns the NTSTATUS to hand back: success, `STATUS_NOT_SUPPORTED` for
/// an operation rvgpu does not build, `STATUS_INVALID_PARAMETER`, or
/// `STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER` (see the module doc).
pub fn build_paging_buffer<P: Platform>(
    call: Call<'_>,
    a: &Adapter<P>,
    args: &mut DXGKARG_BUILDPAGINGBUFFER,
) -> NTSTATUS {
    let Some(live) = a.live() else {
        return status::INVALID_DEVICE_STATE.code();
    };
    match crate::args::paging_operation(args) {
        PagingOperation::UpdatePageTable(_)
        | PagingOperation::FlushTlb(_)
        | PagingOperation::CopyPageTableEntries(_) => return build_gpummu(call, a, live, args),
        PagingOperation::MapAperture(m) if crate::gpummu::supported(live.mmu()) => {
            return map_aperture(call, live, &m)
        }
        PagingOperation::UnmapAperture(u) if crate::gpummu::supported(live.mmu()) => {
            return unmap_aperture(live, &u)
        }
        // After DxgkDdiResetFromTimeout VidMm tells the driver of each allocation it purges
        // from a memory segment with a TRANSFER of size zero: the content was lost in the
        // reset, so there is nothing to move and nothing to write ("Thread synchronization
        // and TDR"; simos::vidmm::residency::purge).
        PagingOperation::Transfer(t) if t.TransferSize == 0 => {
            args.MultipassOffset = 0;
            return rvgpu_ddi::ntstatus::STATUS_SUCCESS;
        }
        _ => {}
    }
    // The operation borrows what the OS passed; `args` itself is updated below.
    let input = *args;
    let op = match operation(call, live, &input) {
        Ok(op) => op,
        Err(e) => return e,
    };
    if let Err(e) = op.validate() {
        return e.code();
    }
    let first = u64::from(args.MultipassOffset);
    if first >= op.chunks() {
        return status::INVALID_PARAMETER.code();
    }
    let buf = args.pDmaBuffer;
    if buf.is_null() || !(buf as usize).is_multiple_of(8) {
        return status::INVALID_PARAMETER.code();
    }
    let avail = args.DmaSize.saturating_sub(args.DmaBufferWriteOffset);
    let words = usize::try_from(avail / 8).unwrap_or(0);
    if words < PACKET_WORDS {
        return STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER;
    }
    // The OS hands `DmaSize` bytes of writable paging buffer (`DmaBufferWriteOffset` of which
    // precede `pDmaBuffer` under one reading of the page, so `avail` bytes from `pDmaBuffer`
    // are inside it under both); `pDmaBuffer` is 8-aligned (checked) and nothing else writes
    // the buffer during the call.
    let Some(out) = call.words_mut(buf, words) else {
        return status::INVALID_PARAMETER.code();
    };
    let (n, next) = encode(&op, first, out);
    let n = hang_if_armed(a, live, args.hSystemContext, out, n);
    let bytes = n.saturating_mul(8);
    // `bytes` ≤ `avail`: still inside (or one past the end of) the buffer.
    args.pDmaBuffer = buf.cast::<u8>().wrapping_add(bytes).cast();
    args.DmaBufferWriteOffset = args
        .DmaBufferWriteOffset
        .saturating_add(u32::try_from(bytes).unwrap_or(u32::MAX));
    if next < op.chunks() {
        args.MultipassOffset = u32::try_from(next).unwrap_or(u32::MAX);
        return STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER;
    }
    args.MultipassOffset = 0;
    rvgpu_ddi::ntstatus::STATUS_SUCCESS
}

/// The test hooks' `HangNextPaging` (TDR-08): when the fault is armed on the node the system
/// context `h` runs on and `out` has room for one more word after the `n` written, the buffer
/// ends in a HANG (and the fault fires). Returns the words written.
fn hang_if_armed<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    h: rvgpu_ddi::HANDLE,
    out: &mut [u64],
    n: usize,
) -> usize {
    if live.hooks.is_none() {
        return n;
    }
    let Some(slot) = out.get_mut(n..n.saturating_add(1)) else {
        return n;
    };
    let Ok(ctx) = Handle::decode_on(h, Kind::Context, a.table_slot()) else {
        return n;
    };
    let Some(node) = live.sched.lock().contexts.get(&ctx).map(|c| c.engine) else {
        return n;
    };
    if Command::Hang.encode(slot) != Some(1) {
        return n;
    }
    if !crate::testhooks::fire(&live.hooks, node, crate::testhooks::Fault::HangPaging) {
        return n;
    }
    n.saturating_add(1)
}

/// The GpuMmu operations ([`crate::pagetable`]) into the OS's paging buffer.
fn build_gpummu<P: Platform>(
    call: Call<'_>,
    a: &Adapter<P>,
    live: &crate::adapter::Live<P>,
    args: &mut DXGKARG_BUILDPAGINGBUFFER,
) -> NTSTATUS {
    use crate::pagetable;
    if !crate::gpummu::supported(live.mmu()) {
        return STATUS_NOT_SUPPORTED;
    }
    let buf = args.pDmaBuffer;
    if buf.is_null() || !(buf as usize).is_multiple_of(8) {
        return status::INVALID_PARAMETER.code();
    }
    let avail = args.DmaSize.saturating_sub(args.DmaBufferWriteOffset);
    let words = usize::try_from(avail / 8).unwrap_or(0);
    // As in `build_paging_buffer`: `avail` writable bytes from the 8-aligned `pDmaBuffer`,
    // nothing else writes the buffer during the call.
    let Some(out) = call.words_mut(buf, words) else {
        return status::INVALID_PARAMETER.code();
    };
    let first = args.MultipassOffset;
    let pass = match crate::args::paging_operation(args) {
        PagingOperation::UpdatePageTable(op) => pagetable::update(call, a, live, &op, first, out),
        PagingOperation::FlushTlb(op) => pagetable::flush(live, &op, out),
        PagingOperation::CopyPageTableEntries(op) => pagetable::copy(call, live, &op, first, out),
        _ => return STATUS_NOT_SUPPORTED,
    };
    let mut pass = match pass {
        Ok(p) => p,
        Err(e) => return e.code(),
    };
    pass.words = hang_if_armed(a, live, args.hSystemContext, out, pass.words);
    if pass.words == 0 && pass.more.is_some() {
        // Not even one packet fits: the OS must hand a bigger (or emptier) buffer.
        return STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER;
    }
    let bytes = pass.words.saturating_mul(8);
    // `bytes` ≤ `avail`: still inside (or one past the end of) the buffer.
    args.pDmaBuffer = buf.cast::<u8>().wrapping_add(bytes).cast();
    args.DmaBufferWriteOffset = args
        .DmaBufferWriteOffset
        .saturating_add(u32::try_from(bytes).unwrap_or(u32::MAX));
    pagetable::status_of(&pass, &mut args.MultipassOffset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvgpu_hw::cmd::decode;

    fn packets(words: &[u64]) -> Vec<Command> {
        words.chunks(4).map(|c| decode(c).unwrap()).collect()
    }

    /// TDR-03 paging packets: a FILL becomes FILL packets with the pattern doubled.
    #[test]
    fn tdr_03_fill_is_fill_packets() {
        let op = Op::Fill {
            dst: Loc::Linear(GpuVa::new(0x10_0000)),
            bytes: 4096,
            pattern: 0xABCD_0123_ABCD_0123,
        };
        let mut w = [0u64; 8];
        assert_eq!(encode(&op, 0, &mut w), (4, 1));
        assert_eq!(
            packets(&w[..4]),
            vec![Command::Fill {
                dst: 0x10_0000,
                bytes: 4096,
                pattern: 0xABCD_0123_ABCD_0123
            }]
        );
    }

    /// TDR-03: a transfer larger than MAX_TRANSFER is split, the last chunk short.
    #[test]
    fn tdr_03_transfer_splits_at_max_transfer() {
        let op = Op::Copy {
            src: Loc::Linear(GpuVa::new(0x1000)),
            dst: Loc::Linear(GpuVa::new(0x8000_0000)),
            bytes: 2 * MAX_TRANSFER + 64,
        };
        assert_eq!(op.chunks(), 3);
        let mut w = [0u64; 12];
        assert_eq!(encode(&op, 0, &mut w), (12, 3));
        assert_eq!(
            packets(&w),
            vec![
                Command::Copy {
                    src: 0x1000,
                    dst: 0x8000_0000,
                    bytes: MAX_TRANSFER
                },
                Command::Copy {
                    src: 0x1000 + MAX_TRANSFER,
                    dst: 0x8000_0000 + MAX_TRANSFER,
                    bytes: MAX_TRANSFER
                },
                Command::Copy {
                    src: 0x1000 + 2 * MAX_TRANSFER,
                    dst: 0x8000_0000 + 2 * MAX_TRANSFER,
                    bytes: 64
                },
            ]
        );
    }

    /// Multipass: a buffer with room for one packet takes one chunk per call, resuming at the
    /// chunk `MultipassOffset` names.
    #[test]
    fn tdr_03_multipass_resumes_where_it_stopped() {
        let op = Op::Fill {
            dst: Loc::Linear(GpuVa::new(0x10_0000)),
            bytes: 3 * MAX_TRANSFER,
            pattern: 7,
        };
        let mut w = [0u64; 6];
        assert_eq!(
            encode(&op, 0, &mut w),
            (4, 1),
            "the half packet is not written"
        );
        assert_eq!(encode(&op, 1, &mut w), (4, 2));
        assert_eq!(
            packets(&w[..4]),
            vec![Command::Fill {
                dst: 0x10_0000 + MAX_TRANSFER,
                bytes: MAX_TRANSFER,
                pattern: 7
            }]
        );
        assert_eq!(encode(&op, 2, &mut w), (4, 3));
        assert_eq!(encode(&op, 3, &mut w), (0, 3), "nothing left");
        assert_eq!(encode(&op, 0, &mut []), (0, 0), "no room");
    }

    const PAGE: u64 = 4096;

    /// Every packet of `op`, encoded and decoded, in one pass.
    fn all(op: &Op<'_>) -> Vec<Command> {
        let mut w = vec![0u64; 4 * 64];
        let (n, next) = encode(op, 0, &mut w);
        assert_eq!(next, op.chunks());
        packets(&w[..n])
    }

    /// A TRANSFER from an MDL reads the MDL's pages where they are: one packet per
    /// physically contiguous run, starting MdlOffset pages in, never assuming page i + 1
    /// follows page i.
    #[test]
    fn transfer_from_mdl_follows_discontiguous_pages() {
        // Buffer pages: 0x900, 0x300, 0x301, 0x100, 0x700. MdlOffset 1 skips the first.
        let pfns = [0x900u64, 0x300, 0x301, 0x100, 0x700];
        let mdl = crate::mdl::MdlPages::new(&pfns, 0, 5 * 4096).unwrap();
        let src = Loc::Pages(mdl.range(1, 3 * PAGE + 64).unwrap());
        let op = Op::Copy {
            src,
            dst: Loc::Linear(GpuVa::new(0x8000_0000)),
            bytes: 3 * PAGE + 64,
        };
        op.validate().unwrap();
        assert_eq!(
            all(&op),
            vec![
                Command::Copy {
                    src: 0x30_0000,
                    dst: 0x8000_0000,
                    bytes: 2 * PAGE
                },
                Command::Copy {
                    src: 0x10_0000,
                    dst: 0x8000_0000 + 2 * PAGE,
                    bytes: PAGE
                },
                Command::Copy {
                    src: 0x70_0000,
                    dst: 0x8000_0000 + 3 * PAGE,
                    bytes: 64
                },
            ]
        );
    }

    /// A TRANSFER to an MDL writes each run to its own page; a run on the segment
    /// side longer than a page is still split where the MDL's pages are.
    #[test]
    fn transfer_to_mdl_splits_at_every_discontinuity() {
        let pfns = [0x500u64, 0x200, 0x201, 0x202];
        let mdl = crate::mdl::MdlPages::new(&pfns, 0, 4 * 4096).unwrap();
        let op = Op::Copy {
            src: Loc::Linear(GpuVa::new(0x8000_1000)),
            dst: Loc::Pages(mdl.range(0, 4 * PAGE).unwrap()),
            bytes: 4 * PAGE,
        };
        assert_eq!(
            all(&op),
            vec![
                Command::Copy {
                    src: 0x8000_1000,
                    dst: 0x50_0000,
                    bytes: PAGE
                },
                Command::Copy {
                    src: 0x8000_1000 + PAGE,
                    dst: 0x20_0000,
                    bytes: 3 * PAGE
                },
            ]
        );
    }

    /// Multipass: with room for one packet per paging buffer, an MDL transfer is
    /// built one run per call, resuming at the run MultipassOffset names, and the passes
    /// together are exactly the one-pass packets.
    #[test]
    fn mdl_transfer_multipass_resumes_at_the_next_run() {
        let pfns = [0x40u64, 0x10, 0x30, 0x20];
        let mdl = crate::mdl::MdlPages::new(&pfns, 0, 4 * 4096).unwrap();
        let op = Op::Copy {
            src: Loc::Pages(mdl.range(0, 4 * PAGE).unwrap()),
            dst: Loc::Linear(GpuVa::new(0x8000_0000)),
            bytes: 4 * PAGE,
        };
        assert_eq!(op.chunks(), 4);
        let mut passes = Vec::new();
        let mut next = 0;
        let mut w = [0u64; 6];
        while next < op.chunks() {
            let (n, after) = encode(&op, next, &mut w);
            assert_eq!((n, after), (4, next + 1), "one packet per pass");
            passes.extend(packets(&w[..n]));
            next = after;
        }
        assert_eq!(passes, all(&op));
    }

    /// An MDL range that starts at an unaligned byte is refused, as the device
    /// would refuse the packet.
    #[test]
    fn mdl_transfer_validates_every_packet() {
        let pfns = [0x40u64, 0x10];
        let mdl = crate::mdl::MdlPages::new(&pfns, 4, 2 * 4096 - 4).unwrap();
        let op = Op::Copy {
            src: Loc::Pages(mdl.range(0, 8).unwrap()),
            dst: Loc::Linear(GpuVa::new(0x8000_0000)),
            bytes: 8,
        };
        assert_eq!(op.validate(), Err(status::INVALID_PARAMETER));
        let zero = [0u64];
        let mdl = crate::mdl::MdlPages::new(&zero, 0, 4096).unwrap();
        let op = Op::Copy {
            src: Loc::Pages(mdl.range(0, 8).unwrap()),
            dst: Loc::Linear(GpuVa::new(0x8000_0000)),
            bytes: 8,
        };
        assert_eq!(
            op.validate(),
            Err(status::INVALID_PARAMETER),
            "page 0 is a null address"
        );
    }

    /// A TRANSFER to an aperture address reaches the pages VidMm mapped there,
    /// run by run; an aperture offset is never used as a bus address, and a range that runs
    /// into an unmapped aperture page is refused.
    #[test]
    fn transfer_through_the_aperture_uses_the_mapped_pages() {
        let ap = Aperture::try_new::<crate::kmem::Host>(64 * PAGE).unwrap();
        // Aperture pages 40..43 map bus pages 0x500, 0x501, 0x200.
        ap.map(40, &[0x500, 0x501, 0x200]).unwrap();
        let op = Op::Copy {
            src: Loc::Linear(GpuVa::new(0x8000_0000)),
            dst: Loc::Aperture {
                table: &ap,
                start: 40 * PAGE + 8,
            },
            bytes: 3 * PAGE - 8,
        };
        op.validate().unwrap();
        assert_eq!(
            all(&op),
            vec![
                Command::Copy {
                    src: 0x8000_0000,
                    dst: 0x50_0008,
                    bytes: 2 * PAGE - 8
                },
                Command::Copy {
                    src: 0x8000_0000 + 2 * PAGE - 8,
                    dst: 0x20_0000,
                    bytes: PAGE
                },
            ]
        );
        let past = Op::Fill {
            dst: Loc::Aperture {
                table: &ap,
                start: 42 * PAGE,
            },
            bytes: 2 * PAGE,
            pattern: 0,
        };
        assert_eq!(past.validate(), Err(status::INVALID_PARAMETER));
        ap.unmap(40, 3, 0x7000).unwrap();
        assert_eq!(op.validate(), Err(status::INVALID_PARAMETER), "unmapped");
    }

    #[test]
    fn malformed_operations_are_refused() {
        // FILLs (destination, bytes): a size not a multiple of 8, a misaligned destination,
        // address 0, nothing to fill.
        let fills = [(0x1000, 12), (0x1004, 8), (0, 8), (0x1000, 0)].map(|(dst, bytes)| Op::Fill {
            dst: Loc::Linear(GpuVa::new(dst)),
            bytes,
            pattern: 0,
        });
        // A COPY whose source wraps past the top of the address space.
        let copy = Op::Copy {
            src: Loc::Linear(GpuVa::new(u64::MAX - 7)),
            dst: Loc::Linear(GpuVa::new(0x1000)),
            bytes: 16,
        };
        for op in fills.into_iter().chain([copy]) {
            assert_eq!(op.validate(), Err(status::INVALID_PARAMETER), "{op:?}");
        }
    }
}
