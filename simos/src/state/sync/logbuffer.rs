//! One log buffer in memory and the OS's reader over it: entries in index order, laps, overflow
//! and torn-entry detection (docs/logs.md#simulated-os).

use std::sync::atomic::Ordering;

use crate::base::process_id::ProcessId;
use rvgpu_ddi::fence::DXGK_NATIVE_FENCE_LOG_BUFFER;
use rvgpu_device::SysAlloc;
use rvgpu_hw::cmd::LogKind;
use rvgpu_hw::log::{
    header_after, header_count, LogEntry, ENTRIES_OFFSET, LOG_BUFFER_SIZE, LOG_TYPE_SIGNALS,
    LOG_TYPE_WAITS, OP_SIGNAL_EXECUTED, OP_WAIT_UNBLOCKED,
};

/// Word written over a retired (recreated) log buffer.
pub const POISON: u64 = 0xDEAD_10C5_DEAD_10C5;

const ENTRY_WORDS: u64 = 6;

/// `DXGK_NATIVE_FENCE_LOG_TYPE` of a kind.
pub fn log_type(kind: LogKind) -> u32 {
    match kind {
        LogKind::Wait => LOG_TYPE_WAITS,
        LogKind::Signal => LOG_TYPE_SIGNALS,
    }
}

/// The operation type an entry of `kind`'s log must have (LOG-03).
pub fn op_type(kind: LogKind) -> u32 {
    match kind {
        LogKind::Wait => OP_WAIT_UNBLOCKED,
        LogKind::Signal => OP_SIGNAL_EXECUTED,
    }
}

/// One log buffer in system memory (4 KiB: 40-byte header, then `entries` 48-byte entries).
#[derive(Clone, Debug)]
pub struct LogBuffer {
    alloc: SysAlloc,
    entries: u64,
    kind: LogKind,
    /// Where the buffer is also mapped into a process's GPU VA space (`(process, VA)`).
    process_va: Option<(ProcessId, u64)>,
}

impl LogBuffer {
    /// Initialises `alloc` (at least 4 KiB) as an empty log: zeroed, header `Type`,
    /// `NumberOfEntries`, atomic word 0. `entries` is written as given (the driver validates
    /// it; tests use bad values on purpose).
    pub fn init(alloc: SysAlloc, kind: LogKind, entries: u64) -> Self {
        for w in alloc.words().iter().take((LOG_BUFFER_SIZE / 8) as usize) {
            w.store(0, Ordering::Relaxed);
        }
        let store = |off: u64, v: u64| {
            if let Some(w) = alloc.word(off) {
                w.store(v, Ordering::Relaxed);
            }
        };
        store(8, u64::from(log_type(kind)));
        store(16, entries);
        store(0, 0);
        std::sync::atomic::fence(Ordering::Release);
        Self {
            alloc,
            entries,
            kind,
            process_va: None,
        }
    }

    /// The buffer, also mapped at `va` in `process`.
    pub fn with_process_va(self, process: ProcessId, va: rvgpu_hw::addr::GpuVa) -> Self {
        Self {
            process_va: Some((process, va.get())),
            ..self
        }
    }

    /// Where the buffer is mapped into a process, if it is.
    pub fn process_va(&self) -> Option<(ProcessId, u64)> {
        self.process_va
    }

    /// Bus address (= system-process GPU VA and process GPU VA in v1).
    pub fn gpu(&self) -> u64 {
        self.alloc.bus_addr
    }

    /// Kernel CPU VA.
    pub fn kva(&self) -> *mut DXGK_NATIVE_FENCE_LOG_BUFFER {
        self.alloc.cpu_ptr().as_ptr().cast()
    }

    /// Entries.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Which log.
    pub fn kind(&self) -> LogKind {
        self.kind
    }

    /// The allocation.
    pub fn alloc(&self) -> &SysAlloc {
        &self.alloc
    }

    /// The header's atomic word (acquire: the entries it counts are visible after it).
    pub fn header(&self) -> u64 {
        self.alloc.word(0).map_or(0, |w| w.load(Ordering::Acquire))
    }

    pub(crate) fn word_off(&self, i: u64, w: u64) -> u64 {
        ENTRIES_OFFSET + (i % self.entries.max(1)) * ENTRY_WORDS * 8 + w * 8
    }

    /// The entry in the slot of free-running index `i`.
    pub fn entry(&self, i: u64) -> LogEntry {
        let mut words = [0u64; 6];
        for (k, v) in words.iter_mut().enumerate() {
            *v = self
                .alloc
                .word(self.word_off(i, k as u64))
                .map_or(0, |w| w.load(Ordering::Acquire));
        }
        LogEntry::from_words(words)
    }

    /// Fills the whole buffer with [`POISON`].
    pub fn poison(&self) {
        for w in self
            .alloc
            .words()
            .iter()
            .take((LOG_BUFFER_SIZE / 8) as usize)
        {
            w.store(POISON, Ordering::SeqCst);
        }
    }

    /// Whether every word still holds [`POISON`].
    pub fn poison_intact(&self) -> bool {
        self.alloc
            .words()
            .iter()
            .take((LOG_BUFFER_SIZE / 8) as usize)
            .all(|w| w.load(Ordering::SeqCst) == POISON)
    }
}

/// Writes entries and headers into a [`LogBuffer`] exactly as the device does (hardware.md
/// 9.2): entry `n % N` word by word, then the header `header_after(n)` in one release store,
/// never lowering it. For unit tests and the benchmark.
#[derive(Debug)]
pub struct Producer<'a> {
    buf: &'a LogBuffer,
}

impl<'a> Producer<'a> {
    /// A producer for `buf`.
    pub fn new(buf: &'a LogBuffer) -> Self {
        Self { buf }
    }

    /// Writes free-running entry `n`.
    pub fn write(&self, n: u32, e: &LogEntry) {
        for (k, v) in e.to_words().iter().enumerate() {
            if let Some(w) = self
                .buf
                .alloc
                .word(self.buf.word_off(u64::from(n), k as u64))
            {
                w.store(*v, Ordering::Relaxed);
            }
        }
        if let (Some(h), Some(w)) = (header_after(n, self.buf.entries), self.buf.alloc.word(0)) {
            let cur = w.load(Ordering::Relaxed);
            if header_count(h, self.buf.entries) > header_count(cur, self.buf.entries) {
                w.store(h, Ordering::Release);
            }
        }
    }
}

/// What one read of a log found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Read {
    /// Valid entries, by free-running index, in order.
    pub entries: Vec<(u64, LogEntry)>,
    /// Free-running range lost: overwritten before the read (overflow) or possibly rewritten
    /// while read.
    pub lost: Option<(u64, u64)>,
    /// Entries with the wrong operation type (LOG-03), by index.
    pub bad: Vec<u64>,
}

/// The OS's state of one log: the buffer, the free-running count of entries consumed, the
/// last non-zero end timestamp, and how many times it was recreated.
#[derive(Clone, Debug)]
pub struct LogState {
    pub buf: LogBuffer,
    pub cursor: u64,
    pub last_end: u64,
    pub gen: u32,
}

impl LogState {
    /// A new, empty log.
    pub fn new(buf: LogBuffer) -> Self {
        Self {
            buf,
            cursor: 0,
            last_end: 0,
            gen: 0,
        }
    }

    /// Phase 1 (before the flush): the header's count if it is ahead of the cursor, `None` if
    /// nothing is new. A count below the cursor breaks LOG-05 (the device never lowers the
    /// header): an error the caller treats as untrusted contents ([`LogState::resync`]).
    pub fn peek(&self) -> Result<Option<u64>, String> {
        let c0 = header_count(self.buf.header(), self.buf.entries);
        if c0 == 0 && self.gen > 0 {
            // A recreated buffer the device has not written yet: its header starts at 0 and
            // jumps to `n + 1` with the first entry (free-running index n >= cursor).
            return Ok(None);
        }
        if c0 < self.cursor {
            return Err(format!(
                "LOG-05: the {:?} log's header went backwards (count {c0} < OS cursor {})",
                self.buf.kind, self.cursor
            ));
        }
        Ok((c0 > self.cursor).then_some(c0))
    }

    /// After untrusted contents: take the header as it is now and forget the last timestamp,
    /// so one bad write costs one scan, not every later drain.
    pub fn resync(&mut self) {
        self.cursor = header_count(self.buf.header(), self.buf.entries);
        self.last_end = 0;
    }

    /// Phase 2 (after the flush): reads entries `cursor..c0` (the pre-flush count), re-checks
    /// the header for slots rewritten during the read, validates and advances the cursor to
    /// `c0`. Errors (LOG-06 timestamps going backwards, LOG-05 header going backwards) are
    /// untrusted contents: the caller scans instead and resynchronises.
    pub fn read(&mut self, c0: u64) -> Result<Read, String> {
        let n = self.buf.entries.max(1);
        let mut out = Read::default();
        let mut start = self.cursor.min(c0);
        if c0 - start > n {
            out.lost = Some((start, c0 - n));
            start = c0 - n;
        }
        let mut raw: Vec<(u64, LogEntry)> = (start..c0).map(|i| (i, self.buf.entry(i))).collect();
        let c1 = header_count(self.buf.header(), n);
        if c1 < c0 {
            return Err(format!(
                "LOG-05: the {:?} log's header went backwards during the read ({c1} < {c0})",
                self.buf.kind
            ));
        }
        // Slot of i may have been rewritten by index i + n <= c1 (that write may be in flight).
        if c1 >= n {
            let first_safe = c1 - n + 1;
            if first_safe > start {
                let drop_to = first_safe.min(c0);
                raw.retain(|(i, _)| *i >= drop_to);
                let from = out.lost.map_or(start, |l| l.0);
                out.lost = Some((from, drop_to));
            }
        }
        let want = op_type(self.buf.kind);
        for (i, e) in raw {
            let end = e.fence_end_gpu_timestamp;
            if end != 0 && end < self.last_end {
                return Err(format!(
                    "LOG-06: {:?} log entry {i}: end timestamp {end} is before the previous \
                     entry's {}",
                    self.buf.kind, self.last_end
                ));
            }
            if self.buf.kind == LogKind::Wait && end != 0 && e.fence_observed_gpu_timestamp > end {
                return Err(format!(
                    "LOG-06: wait log entry {i}: observed timestamp {} is after its end {end}",
                    e.fence_observed_gpu_timestamp
                ));
            }
            self.last_end = self.last_end.max(end);
            if e.operation_type != want {
                out.bad.push(i);
            } else {
                out.entries.push((i, e));
            }
        }
        self.cursor = c0;
        Ok(out)
    }
}
