//! The TDR dump record: what `DxgkDdiCollectDbgInfo2` writes into the OS's buffer, per engine,
//! for a debugger after a timeout (docs/tdr.md, "The dump record"). Not hardware: a driver
//! format, here because the KMD writes it and the simulated OS, the tests and the WinDbg
//! script (`scripts/windbg/rvgpu.js`) read it.
//!
//! Layout, version [`TDR_DUMP_VERSION`], little-endian, no padding: a [`TdrDumpHeader`]
//! (32 bytes) then `records` [`TdrDumpEngine`]s (96 bytes each). A reader takes the sizes
//! from the header, so a later version may grow either part at its end.
//!
//! **Trailing zeros.** Windows keeps the driver's bytes only up to the last non-zero one
//! (24H2 `CTDR_DUMP_BUFFER::ShrinkLastSegment` @0x140369884 trims the zeroed 16 MiB buffer), so
//! a record's last fields may be missing from a dump: readers ([`header`], [`engine`]) take
//! absent bytes as zero.

use zerocopy::{FromBytes, IntoBytes};

// The record is little-endian; fields are written natively.
const _: () = assert!(cfg!(target_endian = "little"));

/// [`TdrDumpHeader::magic`]: the bytes `RVTD`.
pub const TDR_DUMP_MAGIC: u32 = u32::from_le_bytes(*b"RVTD");
/// [`TdrDumpHeader::version`].
pub const TDR_DUMP_VERSION: u16 = 1;
/// [`TdrDumpHeader::timed_out_node`] when the OS named no node.
pub const NO_NODE: u32 = u32::MAX;

/// [`TdrDumpHeader::flags`]: the scheduler lock was held by another thread, so no record
/// names a queue's context, ring or fences (level 0 never waits for it).
pub const DUMP_SCHED_BUSY: u16 = 1 << 0;
/// [`TdrDumpHeader::flags`]: the buffer held fewer records than the adapter has engines.
pub const DUMP_TRUNCATED: u16 = 1 << 1;

wire_struct! {
    /// The dump's header (32 bytes).
    #[size(HEADER_SIZE as usize)]
    pub struct TdrDumpHeader {
        /// [`TDR_DUMP_MAGIC`].
        pub magic: u32,
        /// [`TDR_DUMP_VERSION`].
        pub version: u16,
        /// Bytes of this header; the first record follows it.
        pub header_size: u16,
        /// Bytes of one engine record.
        pub record_size: u16,
        /// Engines (nodes) of the adapter.
        pub engine_count: u16,
        /// Engine records that follow (fewer than `engine_count` when the buffer was short).
        pub records: u16,
        /// `DUMP_*` bits.
        pub flags: u16,
        /// The bug-check code the OS asked for (`Reason`).
        pub reason: u32,
        /// The OS's `DXGK_TDR_TYPE`.
        pub tdr_type: i32,
        /// The node the OS's engine-timeout payload named, or [`NO_NODE`].
        pub timed_out_node: u32,
        /// Engine resets of the adapter so far (all engines).
        pub engine_resets: u32,
    }
}

/// [`TdrDumpEngine::state`]: no work, or waiting.
pub const ENGINE_IDLE: u32 = 0;
/// [`TdrDumpEngine::state`]: running work.
pub const ENGINE_RUNNING: u32 = 1;
/// [`TdrDumpEngine::state`]: made no progress for the hang-detection period.
pub const ENGINE_HUNG: u32 = 2;
/// [`TdrDumpEngine::state`]: being reset, or held after a reset until the next commit.
pub const ENGINE_RESET: u32 = 3;
/// [`TdrDumpEngine::state`]: the register read all-ones or an unknown value (device lost).
pub const ENGINE_UNKNOWN: u32 = 0xFF;

/// [`TdrDumpEngine::valid`]: `queue_id` names a queue.
pub const VALID_QUEUE: u32 = 1 << 0;
/// [`TdrDumpEngine::valid`]: the queue is the guilty one (it hung, or the last reset aborted
/// its packet).
pub const VALID_GUILTY: u32 = 1 << 1;
/// [`TdrDumpEngine::valid`]: `queue_handle` and `context_handle` are set.
pub const VALID_HANDLES: u32 = 1 << 2;
/// [`TdrDumpEngine::valid`]: `ring_base` and `ring_size` are set.
pub const VALID_RING: u32 = 1 << 3;
/// [`TdrDumpEngine::valid`]: `read_ptr` is set.
pub const VALID_READ_PTR: u32 = 1 << 4;
/// [`TdrDumpEngine::valid`]: `write_ptr` is set (a ring the KMD writes).
pub const VALID_WRITE_PTR: u32 = 1 << 5;
/// [`TdrDumpEngine::valid`]: `last_submitted` is set.
pub const VALID_SUBMITTED: u32 = 1 << 6;
/// [`TdrDumpEngine::valid`]: `last_completed` is set.
pub const VALID_COMPLETED: u32 = 1 << 7;
/// [`TdrDumpEngine::valid`]: `hung_gpu_va` is set.
pub const VALID_HUNG_VA: u32 = 1 << 8;

wire_struct! {
    /// One engine's record (96 bytes). Fields whose `VALID_*` bit is clear are zero.
    #[size(RECORD_SIZE as usize)]
    pub struct TdrDumpEngine {
        /// Node ordinal.
        pub node: u32,
        /// `ENGINE_*` state.
        pub state: u32,
        /// The engine's raw `STATUS` register.
        pub status: u32,
        /// `VALID_*` bits.
        pub valid: u32,
        /// Device queue id: the hung queue, the last reset's aborted queue while the engine is
        /// held, else the queue executing now.
        pub queue_id: u32,
        /// Successful resets of this engine.
        pub resets: u32,
        /// The OS's handle of the hardware queue (`DXGKARG_CREATEHWQUEUE::hHwQueue`).
        #[offset(24)]
        pub queue_handle: u64,
        /// The context as `DxgkCbInvalidateHwContext` names it.
        pub context_handle: u64,
        /// The queue's last submitted progress fence value (kernel-mode queues; the OS's fence ID
        /// for the node ring of the timed-out node).
        pub last_submitted: u64,
        /// The queue's progress fence value now (last completed).
        pub last_completed: u64,
        /// Ring read pointer (free-running bytes).
        pub read_ptr: u64,
        /// Ring write pointer (free-running bytes).
        pub write_ptr: u64,
        /// GPU address of the packet in flight in the ring (the INDIRECT's, for work in a DMA
        /// buffer): `ring_base + read_ptr % ring_size`.
        #[offset(72)]
        pub hung_gpu_va: u64,
        /// GPU address of the ring.
        pub ring_base: u64,
        /// Ring bytes.
        pub ring_size: u32,
        /// Reserved, 0.
        pub reserved: u32,
    }
}

/// Bytes of [`TdrDumpHeader`] in this version.
pub const HEADER_SIZE: u16 = 32;
/// Bytes of [`TdrDumpEngine`] in this version.
pub const RECORD_SIZE: u16 = 96;

/// Bytes of `T` at `offset` of `bytes`, absent bytes taken as zero; `None` if none is present.
fn padded<T: FromBytes + IntoBytes>(bytes: &[u8], offset: usize) -> Option<T> {
    let src = bytes.get(offset..)?;
    if src.is_empty() {
        return None;
    }
    let mut v = T::new_zeroed();
    let dst = v.as_mut_bytes();
    let n = dst.len().min(src.len());
    dst.get_mut(..n)?.copy_from_slice(src.get(..n)?);
    Some(v)
}

/// The header of a dump, if it starts with [`TDR_DUMP_MAGIC`] and a version this reader knows.
pub fn header(bytes: &[u8]) -> Option<TdrDumpHeader> {
    let h: TdrDumpHeader = padded(bytes, 0)?;
    let sizes_ok = usize::from(h.header_size) >= core::mem::size_of::<TdrDumpHeader>()
        && usize::from(h.record_size) >= core::mem::size_of::<TdrDumpEngine>();
    (h.magic == TDR_DUMP_MAGIC && h.version >= TDR_DUMP_VERSION && sizes_ok).then_some(h)
}

/// Engine record `i` of a dump whose header is `h` (`None` past `h.records` or the bytes).
pub fn engine(bytes: &[u8], h: &TdrDumpHeader, i: u16) -> Option<TdrDumpEngine> {
    if i >= h.records {
        return None;
    }
    let at = usize::from(i)
        .checked_mul(usize::from(h.record_size))?
        .checked_add(usize::from(h.header_size))?;
    // Trailing zeros may be trimmed, so a record past the bytes is all zero, not absent.
    Some(padded(bytes, at).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump() -> ([u8; 32 + 2 * 96], TdrDumpHeader) {
        let h = TdrDumpHeader {
            magic: TDR_DUMP_MAGIC,
            version: TDR_DUMP_VERSION,
            header_size: 32,
            record_size: 96,
            engine_count: 2,
            records: 2,
            reason: 0x141,
            ..Default::default()
        };
        let e = TdrDumpEngine {
            node: 0,
            state: ENGINE_HUNG,
            hung_gpu_va: 0x1000,
            ..Default::default()
        };
        let mut b = [0u8; 32 + 2 * 96];
        b[..32].copy_from_slice(h.as_bytes());
        b[32..128].copy_from_slice(e.as_bytes());
        (b, h)
    }

    #[test]
    fn reads_what_was_written() {
        let (b, h) = dump();
        assert_eq!(header(&b), Some(h));
        assert_eq!(engine(&b, &h, 0).map(|e| e.hung_gpu_va), Some(0x1000));
        assert_eq!(engine(&b, &h, 2), None);
        assert_eq!(&b[..4], b"RVTD");
    }

    #[test]
    fn trimmed_trailing_zeros_read_as_zero() {
        let (b, h) = dump();
        let last = b.iter().rposition(|x| *x != 0).unwrap();
        let e = engine(&b[..=last], &h, 1).unwrap();
        assert_eq!(e, TdrDumpEngine::default());
        assert_eq!(engine(&b[..=last], &h, 0).unwrap().state, ENGINE_HUNG);
    }

    #[test]
    fn rejects_foreign_bytes() {
        let (mut b, _) = dump();
        assert_eq!(header(&[]), None);
        b[6] = 8; // header_size below the header
        assert_eq!(header(&b), None);
        b[0] = 0;
        assert_eq!(header(&b), None);
    }
}
