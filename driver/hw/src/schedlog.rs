//! Per-engine scheduling logs as the CMP writes them (hardware scheduling, `DXGK_FEATURE_HWSCH`).
//!
//! The layout is the OS's (`DXGK_SCHEDULING_LOG_BUFFER` in d3dkmddi.h): Dxgkrnl allocates the
//! buffer, hands it to the driver with `DxgkDdiSetSchedulingLogBuffer`, and reads what the GPU
//! wrote to learn when each context ran
//! (<https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setschedulinglogbuffer>).
//! The KMD checks these constants against its d3dkmddi.h bindings.
//!
//! A 32-byte header (`AtomicWraparoundAndEntryIndex`: FirstFreeEntryIndex in the low half,
//! WraparoundCount in the high half; `NumberOfEntries`; two reserved words) is followed by
//! `NumberOfEntries` 32-byte entries. Writing entry `i` is: the entry's words, then the header
//! word `(wrap << 32) | next` with a release store, where `next = (i + 1) % N` and `wrap` goes
//! up by one when `next` wraps to 0. The OS reads the header with acquire and the entries
//! behind it. The CMP keeps its own copy of the position (loaded from the header when the log
//! is adopted) and never reads the header again, so the OS or user mode scribbling on it cannot
//! steer the CMP's writes out of the buffer: the entry count comes from
//! [`crate::regs::ENGINE_SCHED_LOG_ENTRIES`] only.
//!
//! What is logged (docs/hardware.md 5.7): per engine, the context (the `context_tag` of the
//! queue descriptor, [`crate::queue::QueueDescriptor::context_tag`]) that owns the packet the
//! engine runs. When the engine picks a packet of a context other than the one that ran last,
//! it logs the old context `READY` (it still has runnable work) or `IDLE`, then the new one
//! `RUNNING`; when a pass finds nothing to run, it logs the last context `IDLE`. Queues with
//! tag 0 are not logged. An engine reset logs the running context `IDLE`.

/// Bytes of the header.
pub const HEADER_SIZE: u64 = 32;
/// Bytes of one entry.
pub const ENTRY_SIZE: u64 = 32;
/// Most entries the device accepts in one log (a bound, so that a bad register value cannot
/// make the CMP address past a 4 GiB buffer).
pub const ENTRIES_MAX: u32 = 1 << 20;

/// Byte offset of `AtomicWraparoundAndEntryIndex` in the header.
pub const HEADER_INDEX: u64 = 0;
/// Byte offset of `NumberOfEntries` in the header (written by the OS; not read by the CMP).
pub const HEADER_NUMBER_OF_ENTRIES: u64 = 8;

/// Byte offset of `GpuTimeStamp` ([`crate::regs::GPU_CLOCK`] ticks) in an entry.
pub const ENTRY_TIMESTAMP: u64 = 0;
/// Byte offset of `OperationType` (u32) in an entry; the next u32 is reserved (0).
pub const ENTRY_OPERATION: u64 = 8;
/// Byte offset of `hKmdContext` (the queue's `context_tag`) in an entry.
pub const ENTRY_CONTEXT: u64 = 16;
/// Byte offset of `newContextState` (u32) in an entry; the rest of the entry is 0.
pub const ENTRY_STATE: u64 = 24;

/// `DXGK_SCHEDULING_LOG_OPERATION_CONTEXT_STATE_CHANGE`: the only operation the CMP logs.
pub const OP_CONTEXT_STATE_CHANGE: u32 = 0;

wire_enum! {
    /// `DXGK_SCHEDULING_LOG_CONTEXT_STATE` values the CMP writes.
    pub enum ContextState: u32, from_u32 {
        /// No runnable work on this engine.
        Idle = 0,
        /// The engine is executing the context's packets.
        Running = 1,
        /// Runnable but another context runs.
        Ready = 2,
    }
}

/// Byte offset of entry `index` from the start of the buffer, or `None` on overflow.
pub const fn entry_offset(index: u32) -> Option<u64> {
    match (index as u64).checked_mul(ENTRY_SIZE) {
        Some(o) => o.checked_add(HEADER_SIZE),
        None => None,
    }
}

/// Bytes of a log of `entries` entries.
pub const fn buffer_size(entries: u32) -> u64 {
    // At most 32 + 2^32 * 32: the wrapping operations never wrap in u64.
    (entries as u64)
        .wrapping_mul(ENTRY_SIZE)
        .wrapping_add(HEADER_SIZE)
}

/// The header word for free-running position: `(wraparound << 32) | index`.
pub const fn header_word(index: u32, wraparound: u32) -> u64 {
    ((wraparound as u64) << 32) | index as u64
}

/// `(FirstFreeEntryIndex, WraparoundCount)` of a header word.
pub const fn header_parts(word: u64) -> (u32, u32) {
    ((word & 0xFFFF_FFFF) as u32, (word >> 32) as u32)
}

/// The position after writing entry `index` of a log of `entries` entries, as
/// `(next_index, wraparound)`; `entries` must be non-zero.
pub const fn advance(index: u32, wraparound: u32, entries: u32) -> (u32, u32) {
    let next = index.wrapping_add(1);
    if next >= entries {
        (0, wraparound.wrapping_add(1))
    } else {
        (next, wraparound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_wrap_and_count() {
        assert_eq!(advance(0, 0, 4), (1, 0));
        assert_eq!(advance(3, 0, 4), (0, 1));
        assert_eq!(advance(0, 0, 1), (0, 1));
        assert_eq!(header_parts(header_word(7, 9)), (7, 9));
        assert_eq!(entry_offset(0), Some(32));
        assert_eq!(entry_offset(2), Some(96));
        assert_eq!(buffer_size(2048), 32 + 2048 * 32);
        assert_eq!(ContextState::from_u32(2), Some(ContextState::Ready));
        assert_eq!(ContextState::from_u32(3), None);
    }
}
