//! `DxgkDdiBuildPagingBuffer` (docs/tdr.md §3.1, TDR-03/TDR-08): the paging operations the
//! node ring executes, written into the OS's paging buffer as device packets.
//!
//! - `DXGK_OPERATION_FILL` → `FILL` packets (the 32-bit pattern repeated to 64 bits);
//! - `DXGK_OPERATION_TRANSFER` between two segment locations → `COPY` packets;
//!
//! each packet at most [`MAX_TRANSFER`] bytes. Paging buffers run in the system space, which is
//! identity (hardware.md §12.2): an aperture address is the bus address, a local segment's
//! address is a VRAM offset the device sees at `VRAM_BASE` + offset (residency moves
//! allocations between the two, issue 15). Everything else (MDL-backed transfers, swizzling,
//! discard, aperture mapping, page tables …) is refused with `STATUS_NOT_SUPPORTED` until
//! the driver reports segments that need them.
//!
//! Multipass: when the paging buffer cannot hold the whole operation, the packets that fit are
//! written, `MultipassOffset` records how many chunks are done, and the DDI returns
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

use crate::adapter::Adapter;
use crate::args::PagingOperation;
use crate::platform::Platform;
use crate::status::{self, Status};

/// Words of one COPY / FILL packet.
const PACKET_WORDS: usize = 4;

/// One paging operation, reduced to what the device does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Fill `bytes` at `dst` with the 64-bit `pattern`.
    Fill {
        dst: GpuVa,
        bytes: u64,
        pattern: u64,
    },
    /// Copy `bytes` from `src` to `dst`.
    Copy { src: GpuVa, dst: GpuVa, bytes: u64 },
}

impl Op {
    /// Total bytes.
    fn bytes(&self) -> u64 {
        match *self {
            Op::Fill { bytes, .. } | Op::Copy { bytes, .. } => bytes,
        }
    }

    /// Number of packets (chunks of at most [`MAX_TRANSFER`] bytes).
    pub fn chunks(&self) -> u64 {
        self.bytes().div_ceil(MAX_TRANSFER)
    }

    /// The packet for chunk `i`.
    fn packet(&self, i: u64) -> Option<Command> {
        let off = i.checked_mul(MAX_TRANSFER)?;
        let len = self.bytes().checked_sub(off)?.min(MAX_TRANSFER);
        if len == 0 {
            return None;
        }
        Some(match *self {
            Op::Fill { dst, pattern, .. } => Command::Fill {
                dst: dst.checked_add(off)?.get(),
                bytes: len,
                pattern,
            },
            Op::Copy { src, dst, .. } => Command::Copy {
                src: src.checked_add(off)?.get(),
                dst: dst.checked_add(off)?.get(),
                bytes: len,
            },
        })
    }

    /// Checks what the device checks: 8-aligned addresses and sizes, no wrap, not empty.
    fn validate(&self) -> Result<(), Status> {
        let a = rvgpu_hw::addr::ACCESS_ALIGN;
        let ok = |addr: GpuVa, bytes: u64| {
            !addr.is_null() && addr.is_aligned(a) && addr.checked_add(bytes).is_some()
        };
        let bytes = self.bytes();
        if bytes == 0 || !bytes.is_multiple_of(a) {
            return Err(status::INVALID_PARAMETER);
        }
        let good = match *self {
            Op::Fill { dst, .. } => ok(dst, bytes),
            Op::Copy { src, dst, .. } => ok(src, bytes) && ok(dst, bytes),
        };
        if good {
            Ok(())
        } else {
            Err(status::INVALID_PARAMETER)
        }
    }
}

/// Writes the packets of `op` from chunk `first` on into `out` while they fit. Returns
/// `(words written, next chunk)`; the operation is complete when next chunk = `op.chunks()`.
pub fn encode(op: &Op, first: u64, out: &mut [u64]) -> (usize, u64) {
    let mut n = 0usize;
    let mut i = first;
    while i < op.chunks() {
        let Some(slot) = n
            .checked_add(PACKET_WORDS)
            .and_then(|end| out.get_mut(n..end))
        else {
            break;
        };
        let Some(w) = op.packet(i).and_then(|p| p.encode(slot)) else {
            break;
        };
        n = n.saturating_add(w);
        i = i.saturating_add(1);
    }
    (n, i)
}

/// The device address of `address` in segment `id`, as VidMm names a paging location: the
/// segment's `BaseAddress` plus the offset in it (the DXGK_SEGMENTDESCRIPTOR4 page). The
/// aperture's base is 0 and its offsets are bus addresses, which the system space addresses
/// directly; a local segment's base is where it starts in VRAM, so the address is a VRAM
/// offset that must stay inside that segment, and the device sees it at `VRAM_BASE` + offset
/// (hardware.md §12.1). Anything else is not a segment rvgpu reported.
fn segment_device_address<P: Platform>(
    live: &crate::adapter::Live<P>,
    id: u32,
    address: i64,
    bytes: u64,
) -> Result<GpuVa, NTSTATUS> {
    let bad = status::INVALID_PARAMETER.code();
    let addr = u64::try_from(address).map_err(|_| bad)?;
    if id == crate::gpummu::SEGMENT_APERTURE {
        return Ok(GpuVa::new(addr));
    }
    let (base, size) = crate::gpummu::local_segment(live, id).ok_or(bad)?;
    let end = addr.checked_add(bytes).ok_or(bad)?;
    if addr < base || end > base.saturating_add(size) {
        return Err(bad);
    }
    rvgpu_hw::addr::VRAM_BASE
        .checked_add(addr)
        .map(GpuVa::new)
        .ok_or(bad)
}

/// Reads the operation out of the argument (only Fill and segment-to-segment Transfer).
fn operation<P: Platform>(
    live: &crate::adapter::Live<P>,
    args: &DXGKARG_BUILDPAGINGBUFFER,
) -> Result<Op, NTSTATUS> {
    match crate::args::paging_operation(args) {
        PagingOperation::Fill(f) => {
            let bytes = u64::try_from(f.FillSize).map_err(|_| status::INVALID_PARAMETER.code())?;
            let dst = segment_device_address(
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
            // An MDL side (system memory) needs the MDL's page list: not in v1.
            let (Some(src), Some(dst)) = (
                crate::args::segment_address(&t.Source),
                crate::args::segment_address(&t.Destination),
            ) else {
                return Err(STATUS_NOT_SUPPORTED);
            };
            let bad = status::INVALID_PARAMETER.code();
            let bytes = u64::try_from(t.TransferSize).map_err(|_| bad)?;
            // TransferOffset is the offset of this pass in the allocation: both sides move by
            // it before the range is checked against its segment.
            let off = i64::from(t.TransferOffset);
            let at = |id: u32, a: i64| {
                segment_device_address(live, id, a.checked_add(off).ok_or(bad)?, bytes)
            };
            Ok(Op::Copy {
                src: at(t.Source.SegmentId, src)?,
                dst: at(t.Destination.SegmentId, dst)?,
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
    a: &Adapter<P>,
    args: &mut DXGKARG_BUILDPAGINGBUFFER,
) -> NTSTATUS {
    let Some(live) = a.live() else {
        return status::INVALID_DEVICE_STATE.code();
    };
    match crate::args::paging_operation(args) {
        PagingOperation::UpdatePageTable(_)
        | PagingOperation::FlushTlb(_)
        | PagingOperation::CopyPageTableEntries(_) => return build_gpummu(a, live, args),
        _ => {}
    }
    let op = match operation(live, args) {
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
    // SAFETY: the OS hands `DmaSize` bytes of writable paging buffer (`DmaBufferWriteOffset` of
    // which precede `pDmaBuffer` under one reading of the page, so `avail` bytes from
    // `pDmaBuffer` are inside it under both); `pDmaBuffer` is 8-aligned (checked) and nothing
    // else writes the buffer during the call.
    let out = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u64>(), words) };
    let (n, next) = encode(&op, first, out);
    let bytes = n.saturating_mul(8);
    // SAFETY: `bytes` ≤ `avail`: still inside (or one past the end of) the buffer.
    args.pDmaBuffer = unsafe { buf.cast::<u8>().add(bytes) }.cast();
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

/// The GpuMmu operations ([`crate::pagetable`]) into the OS's paging buffer.
fn build_gpummu<P: Platform>(
    a: &Adapter<P>,
    live: &crate::adapter::Live<P>,
    args: &mut DXGKARG_BUILDPAGINGBUFFER,
) -> NTSTATUS {
    use crate::pagetable;
    if !crate::gpummu::supported(live) {
        return STATUS_NOT_SUPPORTED;
    }
    let buf = args.pDmaBuffer;
    if buf.is_null() || !(buf as usize).is_multiple_of(8) {
        return status::INVALID_PARAMETER.code();
    }
    let avail = args.DmaSize.saturating_sub(args.DmaBufferWriteOffset);
    let words = usize::try_from(avail / 8).unwrap_or(0);
    // SAFETY: as in `build_paging_buffer`: `avail` writable bytes from the 8-aligned
    // `pDmaBuffer`, nothing else writes the buffer during the call.
    let out = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u64>(), words) };
    let first = args.MultipassOffset;
    let pass = match crate::args::paging_operation(args) {
        PagingOperation::UpdatePageTable(op) => pagetable::update(a, live, &op, first, out),
        PagingOperation::FlushTlb(op) => pagetable::flush(live, &op, out),
        PagingOperation::CopyPageTableEntries(op) => pagetable::copy(live, &op, first, out),
        _ => return STATUS_NOT_SUPPORTED,
    };
    let pass = match pass {
        Ok(p) => p,
        Err(e) => return e.code(),
    };
    if pass.words == 0 && pass.more.is_some() {
        // Not even one packet fits: the OS must hand a bigger (or emptier) buffer.
        return STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER;
    }
    let bytes = pass.words.saturating_mul(8);
    // SAFETY: `bytes` ≤ `avail`: still inside (or one past the end of) the buffer.
    args.pDmaBuffer = unsafe { buf.cast::<u8>().add(bytes) }.cast();
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
            dst: GpuVa::new(0x10_0000),
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
            src: GpuVa::new(0x1000),
            dst: GpuVa::new(0x8000_0000),
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
            dst: GpuVa::new(0x10_0000),
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

    #[test]
    fn malformed_operations_are_refused() {
        let bad = [
            Op::Fill {
                dst: GpuVa::new(0x1000),
                bytes: 12,
                pattern: 0,
            },
            Op::Fill {
                dst: GpuVa::new(0x1004),
                bytes: 8,
                pattern: 0,
            },
            Op::Fill {
                dst: GpuVa::new(0),
                bytes: 8,
                pattern: 0,
            },
            Op::Fill {
                dst: GpuVa::new(0x1000),
                bytes: 0,
                pattern: 0,
            },
            Op::Copy {
                src: GpuVa::new(u64::MAX - 7),
                dst: GpuVa::new(0x1000),
                bytes: 16,
            },
        ];
        for op in bad {
            assert_eq!(op.validate(), Err(status::INVALID_PARAMETER), "{op:?}");
        }
    }
}
