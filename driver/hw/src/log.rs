//! Native-fence log buffers as the device writes them (LOG-01 .. LOG-07).
//!
//! The layouts are the OS's (`DXGK_NATIVE_FENCE_LOG_HEADER` and `DXGK_NATIVE_FENCE_LOG_ENTRY`
//! in d3dukmdt.h), because Dxgkrnl reads what the GPU writes:
//! <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-dxgk_native_fence_log_header>,
//! <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-dxgk_native_fence_log_entry>.
//!
//! LOG_WRITE with free-running index `n` on a log of `N` entries writes entry `n % N`
//! (overwriting unread ones: overflow is allowed, LOG-05), then stores the header's 64-bit
//! `AtomicWraparoundAndEntryIndex` as `((n + 1) / N) << 32 | (n + 1) % N` in one atomic store.
//! The device never lowers that value: an index that would is still written, but the
//! header keeps the larger value (UMDs must keep indices monotonic, LOG-02).
//!
//! The OS allocates each log buffer and writes its header (`Type`, `NumberOfEntries`,
//! counters zero) before handing it to the driver (LOG-01); the device reads
//! `NumberOfEntries` at every LOG_WRITE and faults the queue with `BadArgument` if it is 0 or
//! more than [`ENTRIES_PER_BUFFER`], so a bad header can never make it write outside the
//! 4 KiB buffer. Free-running indices are 32-bit, and the header never goes down: after
//! 2^32 writes to one log (over an hour at a million log writes a second) the header stops
//! advancing. That is a known limit of version 1; the UMD must recreate the queue (and with
//! it the log) before then.

/// Bytes in one log buffer (LOG-01).
pub const LOG_BUFFER_SIZE: u64 = 4096;

/// `DXGK_NATIVE_FENCE_LOG_TYPE`.
pub const LOG_TYPE_WAITS: u32 = 1;
/// `DXGK_NATIVE_FENCE_LOG_TYPE`.
pub const LOG_TYPE_SIGNALS: u32 = 2;
/// `DXGK_NATIVE_FENCE_LOG_OPERATION`.
pub const OP_SIGNAL_EXECUTED: u32 = 0;
/// `DXGK_NATIVE_FENCE_LOG_OPERATION`.
pub const OP_WAIT_UNBLOCKED: u32 = 1;

wire_struct! {
    /// The log header, 40 bytes.
    #[size(40)]
    pub struct LogHeader {
        /// FirstFreeEntryIndex in the low half, WraparoundCount in the high half.
        pub atomic_wraparound_and_entry_index: u64,
        /// `DXGK_NATIVE_FENCE_LOG_TYPE`.
        pub log_type: u32,
        pub pad: u32,
        /// Entries that follow the header.
        #[offset(16)]
        pub number_of_entries: u64,
        pub reserved: [u64; 2],
    }
}

wire_struct! {
    /// One log entry, 48 bytes.
    #[size(48)]
    pub struct LogEntry {
        pub fence_value: u64,
        /// The user-mode D3DKMT handle of the fence (UMD payload).
        pub h_native_fence: u32,
        pub operation_type: u32,
        pub reserved0: u64,
        /// For WAIT_UNBLOCKED: when the engine first saw the unresolved wait.
        #[offset(24)]
        pub fence_observed_gpu_timestamp: u64,
        pub reserved1: u64,
        /// When the operation completed on the GPU.
        #[offset(40)]
        pub fence_end_gpu_timestamp: u64,
    }
}

/// Byte offset of the header's atomic word.
pub const HEADER_ATOMIC: u64 = 0;
/// Byte offset of the first entry.
pub const ENTRIES_OFFSET: u64 = 40;
/// Entries that fit one 4 KiB buffer: (4096 - 40) / 48 = 84.
pub const ENTRIES_PER_BUFFER: u64 = (LOG_BUFFER_SIZE - ENTRIES_OFFSET) / 48;

/// Packs FirstFreeEntryIndex and WraparoundCount.
pub const fn pack_index(first_free: u32, wraparound: u32) -> u64 {
    (first_free as u64) | ((wraparound as u64) << 32)
}

/// Splits the atomic word into (FirstFreeEntryIndex, WraparoundCount).
pub const fn unpack_index(v: u64) -> (u32, u32) {
    ((v & 0xFFFF_FFFF) as u32, (v >> 32) as u32)
}

/// Header value after writing free-running entry `n` in a log of `entries` entries, or
/// `None` if `entries` is zero.
pub fn header_after(n: u32, entries: u64) -> Option<u64> {
    let next = u64::from(n).checked_add(1)?;
    let first = next.checked_rem(entries)?;
    let wrap = next.checked_div(entries)?;
    Some(first | (wrap << 32))
}

/// The free-running number of entries written to a log of `entries` entries whose header word
/// reads `header`: `WraparoundCount * entries + FirstFreeEntryIndex`, i.e. `n + 1` after writing
/// free-running index `n` (docs/logs.md#kmd), whatever way `entries` splits it. Saturates at
/// `u64::MAX` (cannot happen for a header the device wrote: both halves are 32-bit).
pub fn header_count(header: u64, entries: u64) -> u64 {
    let (first, wrap) = unpack_index(header);
    u64::from(wrap)
        .saturating_mul(entries)
        .saturating_add(u64::from(first))
}

/// Byte offset of entry slot for free-running index `n`, or `None` if `entries` is zero.
pub fn entry_offset(n: u32, entries: u64) -> Option<u64> {
    let slot = u64::from(n).checked_rem(entries)?;
    ENTRIES_OFFSET.checked_add(slot.checked_mul(48)?)
}

impl LogEntry {
    /// The entry as six words in memory order.
    pub fn to_words(&self) -> [u64; 6] {
        [
            self.fence_value,
            u64::from(self.h_native_fence) | (u64::from(self.operation_type) << 32),
            self.reserved0,
            self.fence_observed_gpu_timestamp,
            self.reserved1,
            self.fence_end_gpu_timestamp,
        ]
    }

    /// Rebuilds an entry from six words.
    pub fn from_words(w: [u64; 6]) -> Self {
        let [fence_value, w1, reserved0, obs, reserved1, end] = w;
        Self {
            fence_value,
            h_native_fence: (w1 & 0xFFFF_FFFF) as u32,
            operation_type: (w1 >> 32) as u32,
            reserved0,
            fence_observed_gpu_timestamp: obs,
            reserved1,
            fence_end_gpu_timestamp: end,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    #[test]
    fn log_05_index_arithmetic_wraps_and_counts() {
        assert_eq!(ENTRIES_PER_BUFFER, 84);
        assert_eq!(header_after(0, 84), Some(pack_index(1, 0)));
        assert_eq!(header_after(83, 84), Some(pack_index(0, 1)));
        assert_eq!(header_after(84 + 5, 84), Some(pack_index(6, 1)));
        assert_eq!(entry_offset(85, 84), Some(40 + 48));
        assert_eq!(header_after(1, 0), None);
    }

    #[test]
    fn log_05_header_count_is_entries_written() {
        for entries in [1u64, 4, 84] {
            assert_eq!(header_count(0, entries), 0);
            for n in [0u32, 1, 3, 83, 84, 85, 1000] {
                let h = header_after(n, entries).unwrap();
                assert_eq!(
                    header_count(h, entries),
                    u64::from(n) + 1,
                    "n {n} N {entries}"
                );
            }
        }
        assert_eq!(
            header_count(pack_index(u32::MAX, u32::MAX), u64::MAX),
            u64::MAX
        );
    }

    #[test]
    fn entry_words_are_memory_order() {
        let e = LogEntry {
            fence_value: 1,
            h_native_fence: 2,
            operation_type: OP_WAIT_UNBLOCKED,
            fence_observed_gpu_timestamp: 4,
            fence_end_gpu_timestamp: 5,
            ..Default::default()
        };
        assert_eq!(e.to_words().as_bytes(), e.as_bytes());
        assert_eq!(LogEntry::from_words(e.to_words()), e);
    }
}
