//! The OS side of native fence logs (issue 5, LOG-01 … LOG-09; design: docs/logs.md §4).
//!
//! - **Buffers (LOG-01, LOG-09).** Every user-mode hardware queue gets a wait log and a signal
//!   log inside `D3DKMTCreateHwQueue` ([`crate::ums`]): one zeroed, page-aligned 4 KiB system
//!   allocation each, header `Type` and `NumberOfEntries` (= [`crate::OsConfig::log_entries`])
//!   written by the OS, then `DxgkDdiSetNativeFenceLogBuffer` at DISPATCH_LEVEL with the kernel
//!   VA and the bus address as both GPU VAs (v1 identity). A failure of either call fails the
//!   queue creation. [`crate::Machine::recreate_hw_queue_log`] moves a log (drain, new buffer,
//!   set, drain the old one once more, carry the cursor, poison the old buffer and keep it:
//!   a changed word later is the device writing a freed log, a simulation error).
//! - **Drain (LOG-07, §4.2).** After the driver's DPC returns, for each candidate queue (the
//!   named `hHWQueue`s, every log-bearing queue of an engine reported with a NULL
//!   `hHWQueue`, and without the optimized cap every log-bearing queue of a reported engine)
//!   the OS reads both headers (acquire) and computes the free-running count
//!   ([`rvgpu_hw::log::header_count`]); a count below the OS cursor is a simulation error
//!   ("LOG-05: header went backwards"). Queues with new entries are flushed with **one**
//!   `DxgkDdiUpdateNativeFenceLogs` naming all of them, then entries are read **only up to
//!   the pre-flush count**; the header is read again and every entry whose slot may have been
//!   rewritten meanwhile (`i + N ≤ count(h1)`) is dropped as lost. More than `N` new entries
//!   is an overflow (LOG-05): the overwritten range is lost. Kept entries are validated
//!   ([`LogState::read`]: operation type against the log, LOG-03; end timestamps never go
//!   backwards per log, zero and repeats allowed, LOG-06 — backwards is a simulation error),
//!   reported as [`TraceEvent::LogEntry`], and each SIGNAL_EXECUTED entry `(h, v)` releases
//!   the CPU waits of fence `h` (the queue's process's D3DKMT handle) with target `≤ v`
//!   ([`crate::sync::trace::ReleaseVia::Log`]). Fallbacks to resampling every native fence of the
//!   adapter ([`crate::sync::trace::ReleaseVia::Scan`]): overflow or dropped entries, a bad entry,
//!   a handle that does not resolve, a named queue whose signal log had no new entry.
//! - **Optimized interrupt (LOG-08).** With `OptimizedNativeFenceSignaledInterrupt` the OS
//!   reads `hHWQueue` and ignores the fence array; at ISR time a non-NULL `hHWQueue` must be a
//!   live queue of the adapter on the reported node ([`LogTable::check_isr_queue`], else bug
//!   check 0x119 with the simulation's subtype
//!   [`crate::dxgkrnl::bugcheck::vidsch::SIM_INVALID_HW_QUEUE`]). Without the cap `hHWQueue` is not read.
//!
//! [`LogState`] is pure (memory words only) so it can be unit-tested and benchmarked with
//! synthetic buffers; [`Producer`] writes entries and headers exactly as the device does.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use rvgpu_ddi::basic::HANDLE;
use rvgpu_ddi::fence::{
    DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_SETNATIVEFENCELOGBUFFER_FLAGS,
    DXGKARG_UPDATENATIVEFENCELOGS, DXGKARG_UPDATENATIVEFENCELOGS_FLAGS,
    DXGK_NATIVE_FENCE_LOG_BUFFER,
};
use rvgpu_ddi::NTSTATUS;
use rvgpu_device::SysAlloc;
use rvgpu_hw::log::{
    header_after, header_count, LogEntry, ENTRIES_OFFSET, ENTRIES_PER_BUFFER, LOG_BUFFER_SIZE,
    LOG_TYPE_SIGNALS, LOG_TYPE_WAITS, OP_SIGNAL_EXECUTED, OP_WAIT_UNBLOCKED,
};
use rvgpu_kmd::platform::Irql;

pub use rvgpu_hw::cmd::LogKind;

use crate::dxgkrnl::adapter::AdapterShared;
use crate::dxgkrnl::ddi::{self, At};
use crate::dxgkrnl::irql::Routine;
use crate::dxgkrnl::state::lock;
use crate::error::SimError;
use crate::sync::fence::ProcessId;
use crate::sync::trace::{qpc, TraceEvent};

/// Entries per log the OS allocates by default (a full 4 KiB buffer).
pub const DEFAULT_LOG_ENTRIES: u64 = ENTRIES_PER_BUFFER;

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
        }
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

    fn word_off(&self, i: u64, w: u64) -> u64 {
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
    /// nothing is new. A count below the cursor is a simulation error (LOG-05: the device must
    /// never lower the header).
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

    /// Phase 2 (after the flush): reads entries `cursor..c0` (the pre-flush count), re-checks
    /// the header for slots rewritten during the read, validates and advances the cursor to
    /// `c0`. Errors are simulation errors (LOG-06 timestamps going backwards, LOG-05 header
    /// going backwards).
    pub fn read(&mut self, c0: u64) -> Result<Read, String> {
        let n = self.buf.entries.max(1);
        let mut out = Read::default();
        let mut start = self.cursor;
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

/// Both logs of a queue, and the buffers it retired.
#[derive(Debug)]
pub struct QueueLogs {
    pub wait: LogState,
    pub signal: LogState,
    /// Retired (recreated) buffers, poisoned, kept until the machine ends.
    pub retired: Vec<LogBuffer>,
}

impl QueueLogs {
    /// The state of `kind`'s log.
    pub fn get_mut(&mut self, kind: LogKind) -> &mut LogState {
        match kind {
            LogKind::Wait => &mut self.wait,
            LogKind::Signal => &mut self.signal,
        }
    }
}

/// One hardware queue as the log machinery knows it (every queue of the adapter is registered,
/// log-less kernel-mode queues too, so the ISR check can tell "unknown" from "no logs").
#[derive(Debug)]
pub struct QueueLog {
    /// The KMD's queue handle (`hHWQueue`).
    pub kmd: usize,
    /// Device queue id (0 if the KMD's private data had none).
    pub queue_id: u32,
    pub node: u32,
    pub process: ProcessId,
    /// `None` for a kernel-mode queue.
    pub logs: Mutex<Option<QueueLogs>>,
}

/// Counters of the drain (docs/logs.md §4.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogCounters {
    /// Drains that read at least one header.
    pub log_drains: u64,
    /// Entries read and kept.
    pub log_entries_read: u64,
    /// `DxgkDdiUpdateNativeFenceLogs` calls.
    pub log_update_calls: u64,
    /// Reads that found lost entries (overflow or overwritten while read).
    pub log_overflows: u64,
    /// Entries lost.
    pub log_entries_lost: u64,
    /// Entries with the wrong operation type.
    pub log_bad_entries: u64,
    /// Fallback scans of every native fence caused by the logs.
    pub log_fallback_scans: u64,
    /// Headers read.
    pub log_headers_read: u64,
}

/// Every hardware queue of an adapter by KMD handle, with its logs. Its own lock, so the ISR
/// check takes only this leaf lock.
#[derive(Debug, Default)]
pub struct LogTable {
    queues: Mutex<BTreeMap<usize, Arc<QueueLog>>>,
    /// Serialises drains of the adapter (DPC, recreate, destroy): a log is read by one drain
    /// at a time.
    pub(crate) drain_lock: Mutex<()>,
}

/// The outcome of [`LogTable::check_isr_queue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsrQueue {
    Ok,
    Unknown,
    WrongNode(u32),
}

impl LogTable {
    /// Registers a queue (after `DxgkDdiCreateHwQueue` returned).
    pub fn insert(&self, q: Arc<QueueLog>) {
        lock(&self.queues).insert(q.kmd, q);
    }

    /// Forgets a queue (after `DxgkDdiDestroyHwQueue` returned).
    pub fn remove(&self, kmd: usize) -> Option<Arc<QueueLog>> {
        lock(&self.queues).remove(&kmd)
    }

    /// The queue with KMD handle `kmd`.
    pub fn get(&self, kmd: usize) -> Option<Arc<QueueLog>> {
        lock(&self.queues).get(&kmd).cloned()
    }

    /// Every queue.
    pub fn all(&self) -> Vec<Arc<QueueLog>> {
        lock(&self.queues).values().cloned().collect()
    }

    /// LOG-08 at ISR time: a named `hHWQueue` must be a live queue on the reported node.
    pub fn check_isr_queue(&self, kmd: usize, node: u32) -> IsrQueue {
        match lock(&self.queues).get(&kmd) {
            None => IsrQueue::Unknown,
            Some(q) if q.node != node => IsrQueue::WrongNode(q.node),
            Some(_) => IsrQueue::Ok,
        }
    }
}

/// What a DPC asks the drain to read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DrainRequest {
    /// Named `hHWQueue`s (optimized interrupt).
    pub named: BTreeSet<usize>,
    /// Engines whose every log-bearing queue is read (NULL `hHWQueue`, or any report without
    /// the optimized cap).
    pub engines: BTreeSet<u32>,
}

impl DrainRequest {
    /// Nothing to read.
    pub fn is_empty(&self) -> bool {
        self.named.is_empty() && self.engines.is_empty()
    }
}

/// A SIGNAL_EXECUTED entry the drain kept: releases the waits of fence `handle` of `process`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalSeen {
    pub process: ProcessId,
    pub handle: u32,
    pub value: u64,
    pub queue_id: u32,
    pub index: u64,
}

/// The drain's result for the fence code.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drained {
    pub signals: Vec<SignalSeen>,
    /// A log fallback applies: resample every native fence of the adapter.
    pub scan_all: bool,
}

/// `DxgkDdiUpdateNativeFenceLogs` for `handles` at DISPATCH_LEVEL; returns the driver's status.
pub fn update_logs(a: &AdapterShared, handles: &[usize]) -> Result<NTSTATUS, SimError> {
    let f = a
        .table
        .get()
        .and_then(|t| t.DxgkDdiUpdateNativeFenceLogs)
        .ok_or_else(|| SimError::Simulation("no DxgkDdiUpdateNativeFenceLogs".into()))?;
    let mut hs: Vec<HANDLE> = handles.iter().map(|h| *h as HANDLE).collect();
    let args = DXGKARG_UPDATENATIVEFENCELOGS {
        NumberOfQueues: hs.len() as u32,
        hHWQueue: hs.as_mut_ptr(),
        Flags: DXGKARG_UPDATENATIVEFENCELOGS_FLAGS::default(),
        Reserved: [0; 32],
    };
    ddi::call(
        a,
        Routine::DxgkDdiUpdateNativeFenceLogs,
        f as usize,
        At::Level(Irql::Dispatch),
        || {
            // SAFETY: the driver's DDI with an argument block whose handle array lives across
            // the call.
            unsafe { f(&args) }
        },
    )
}

/// `DxgkDdiSetNativeFenceLogBuffer` for `buf` of queue `kmd` at DISPATCH_LEVEL.
pub fn set_log_buffer(
    a: &AdapterShared,
    kmd: usize,
    buf: &LogBuffer,
) -> Result<NTSTATUS, SimError> {
    let f = a
        .table
        .get()
        .and_then(|t| t.DxgkDdiSetNativeFenceLogBuffer)
        .ok_or_else(|| SimError::Simulation("no DxgkDdiSetNativeFenceLogBuffer".into()))?;
    let args = DXGKARG_SETNATIVEFENCELOGBUFFER {
        hHwQueue: kmd as HANDLE,
        NumberOfEntries: u32::try_from(buf.entries()).unwrap_or(u32::MAX),
        LogBufferCpuVa: buf.kva(),
        LogBufferGpuVa: buf.gpu(),
        LogBufferSystemProcessGpuVa: buf.gpu(),
        Flags: DXGKARG_SETNATIVEFENCELOGBUFFER_FLAGS::default(),
        Reserved: [0; 32],
    };
    ddi::call(
        a,
        Routine::DxgkDdiSetNativeFenceLogBuffer,
        f as usize,
        At::Level(Irql::Dispatch),
        || {
            // SAFETY: the driver's DDI with a valid argument block; the buffer is OS memory
            // that lives for the machine's life.
            unsafe { f(&args) }
        },
    )
}

fn emit(a: &AdapterShared, e: TraceEvent) {
    let sink = lock(&a.fence_os).trace.0.clone();
    if let Some(s) = sink {
        s.event(&e);
    }
}

fn bump(a: &AdapterShared, f: impl FnOnce(&mut LogCounters)) {
    f(&mut lock(&a.fence_os).log_counters);
}

/// The DPC-time drain (§4.2) of adapter `a`. `forced` queues are read whatever the request
/// says (recreate, destroy). Returns the signals seen and whether a fallback scan is due.
pub fn drain(
    a: &AdapterShared,
    req: &DrainRequest,
    forced: &[Arc<QueueLog>],
) -> Result<Drained, SimError> {
    let table = lock(&a.fence_os).logs.clone();
    let mut cands: BTreeMap<usize, Arc<QueueLog>> = BTreeMap::new();
    let mut named_missing = false;
    for h in &req.named {
        match table.get(*h) {
            Some(q) => {
                cands.insert(*h, q);
            }
            None => named_missing = true,
        }
    }
    if !req.engines.is_empty() {
        for q in table.all() {
            if req.engines.contains(&q.node) {
                cands.insert(q.kmd, q);
            }
        }
    }
    for q in forced {
        cands.insert(q.kmd, q.clone());
    }
    let mut out = Drained {
        scan_all: named_missing,
        ..Drained::default()
    };
    // Phase 1: headers.
    let mut dirty: Vec<(Arc<QueueLog>, Option<u64>, Option<u64>)> = Vec::new();
    let mut headers = 0u64;
    for q in cands.values() {
        let g = lock(&q.logs);
        let Some(l) = g.as_ref() else {
            continue;
        };
        headers += 2;
        let w = l.wait.peek().map_err(|m| sim(a, q, m))?;
        let s = l.signal.peek().map_err(|m| sim(a, q, m))?;
        if s.is_none() && req.named.contains(&q.kmd) {
            // A named queue without a new signal entry: the signal that interrupted is not in
            // its log (index wrap, a KMD mistake): scan (§9.8).
            out.scan_all = true;
        }
        if w.is_some() || s.is_some() {
            dirty.push((q.clone(), w, s));
        }
    }
    if headers == 0 && dirty.is_empty() {
        if out.scan_all {
            bump(a, |c| c.log_fallback_scans += 1);
        }
        return Ok(out);
    }
    bump(a, |c| {
        c.log_drains += 1;
        c.log_headers_read += headers;
    });
    if dirty.is_empty() {
        if out.scan_all {
            bump(a, |c| c.log_fallback_scans += 1);
        }
        return Ok(out);
    }
    // LOG-07: one flush naming every dirty queue, before any entry is read.
    let handles: Vec<usize> = dirty.iter().map(|d| d.0.kmd).collect();
    let status = update_logs(a, &handles)?;
    {
        let mut os = lock(&a.fence_os);
        os.log_counters.log_update_calls += 1;
        os.last_log_update = handles.clone();
    }
    if status != 0 {
        let m = format!(
            "DxgkDdiUpdateNativeFenceLogs({handles:#x?}) returned {status:#x} for live queues"
        );
        a.state.raise_sim_error(m.clone());
        return Err(SimError::Simulation(m));
    }
    // Phase 2: entries up to the pre-flush counts.
    let mut counters = LogCounters::default();
    let mut events = Vec::new();
    for (q, w, s) in dirty {
        let mut g = lock(&q.logs);
        let Some(l) = g.as_mut() else {
            continue;
        };
        for (kind, c0) in [(LogKind::Wait, w), (LogKind::Signal, s)] {
            let Some(c0) = c0 else {
                continue;
            };
            let r = l.get_mut(kind).read(c0).map_err(|m| sim(a, &q, m))?;
            if let Some((from, to)) = r.lost {
                counters.log_overflows += 1;
                counters.log_entries_lost += to - from;
                out.scan_all = true;
                events.push(TraceEvent::LogLost {
                    adapter: a.index,
                    queue_id: q.queue_id,
                    kind,
                    from,
                    to,
                });
            }
            if !r.bad.is_empty() {
                counters.log_bad_entries += r.bad.len() as u64;
                out.scan_all = true;
            }
            counters.log_entries_read += r.entries.len() as u64;
            for (index, entry) in r.entries {
                events.push(TraceEvent::LogEntry {
                    adapter: a.index,
                    queue_id: q.queue_id,
                    kind,
                    index,
                    entry,
                });
                if kind == LogKind::Signal {
                    out.signals.push(SignalSeen {
                        process: q.process,
                        handle: entry.h_native_fence,
                        value: entry.fence_value,
                        queue_id: q.queue_id,
                        index,
                    });
                }
            }
        }
    }
    if out.scan_all {
        counters.log_fallback_scans += 1;
    }
    bump(a, |c| {
        c.log_entries_read += counters.log_entries_read;
        c.log_overflows += counters.log_overflows;
        c.log_entries_lost += counters.log_entries_lost;
        c.log_bad_entries += counters.log_bad_entries;
        c.log_fallback_scans += counters.log_fallback_scans;
    });
    for e in events {
        emit(a, e);
    }
    Ok(out)
}

fn sim(a: &AdapterShared, q: &QueueLog, m: String) -> SimError {
    let m = format!(
        "adapter {} queue id {} ({:#x}): {m}",
        a.index, q.queue_id, q.kmd
    );
    a.state.raise_sim_error(m.clone());
    SimError::Simulation(m)
}

/// One `DxgkDdiCalibrateGpuClock(node, 0)` at DISPATCH_LEVEL with the OS's checks (§4.6):
/// `q_before ≤ CpuClockCounter ≤ q_after`, `GpuFrequency` = the device's `CLOCK_FREQ`, the
/// GPU counter never below the adapter's previous answer. Emits [`TraceEvent::Calibration`].
/// Returns `(gpu_hz, gpu, cpu, bracket)`.
pub fn calibrate(a: &AdapterShared, node: u32) -> Result<(u64, u64, u64, u64), SimError> {
    let f = a
        .table
        .get()
        .and_then(|t| t.DxgkDdiCalibrateGpuClock)
        .ok_or_else(|| SimError::Simulation("no DxgkDdiCalibrateGpuClock".into()))?;
    let mut args = rvgpu_ddi::adapter::DXGKARG_CALIBRATEGPUCLOCK {
        GpuFrequency: 0,
        GpuClockCounter: 0,
        CpuClockCounter: 0,
    };
    let ctx = a.context();
    let q0 = qpc();
    let status = {
        ddi::call(
            a,
            Routine::DxgkDdiCalibrateGpuClock,
            f as usize,
            At::Level(Irql::Dispatch),
            || {
                // SAFETY: the driver's DDI with its context and a valid output block.
                unsafe { f(ctx, node, 0, &mut args) }
            },
        )?
    };
    let q1 = qpc();
    crate::dxgkrnl::ddi::check_status(status)?;
    let hz = u64::from(a.device.config().clock_hz);
    let err = if args.GpuFrequency != hz {
        Some(format!(
            "CalibrateGpuClock: GpuFrequency {} but CLOCK_FREQ is {hz}",
            args.GpuFrequency
        ))
    } else if !(q0..=q1).contains(&args.CpuClockCounter) {
        Some(format!(
            "CalibrateGpuClock: CpuClockCounter {} outside the call [{q0}, {q1}]",
            args.CpuClockCounter
        ))
    } else {
        let mut os = lock(&a.fence_os);
        if args.GpuClockCounter < os.last_gpu_clock {
            Some(format!(
                "CalibrateGpuClock: GPU counter went backwards ({} < {})",
                args.GpuClockCounter, os.last_gpu_clock
            ))
        } else {
            os.last_gpu_clock = args.GpuClockCounter;
            os.last_calibration = Some(std::time::Instant::now());
            None
        }
    };
    if let Some(m) = err {
        a.state.raise_sim_error(m.clone());
        return Err(SimError::Simulation(m));
    }
    emit(
        a,
        TraceEvent::Calibration {
            adapter: a.index,
            node,
            gpu_hz: args.GpuFrequency,
            gpu: args.GpuClockCounter,
            cpu: args.CpuClockCounter,
            bracket: q1 - q0,
        },
    );
    Ok((
        args.GpuFrequency,
        args.GpuClockCounter,
        args.CpuClockCounter,
        q1 - q0,
    ))
}

// ---------------------------------------------------------------------------------------------
// Buffer life (§4.1), called from `crate::ums`.

fn alloc_log(a: &AdapterShared, kind: LogKind, entries: u64) -> Result<LogBuffer, SimError> {
    let alloc = a
        .device
        .memory()
        .alloc_system(LOG_BUFFER_SIZE, rvgpu_hw::PAGE_SIZE)
        .ok_or_else(|| SimError::Simulation("out of system memory for a fence log".into()))?;
    Ok(LogBuffer::init(alloc, kind, entries))
}

fn free_log(a: &AdapterShared, b: &LogBuffer) {
    a.device.memory().free_system(b.gpu());
}

/// Inside `D3DKMTCreateHwQueue`, after `DxgkDdiCreateHwQueue` succeeded (LOG-01, LOG-09):
/// registers the queue; a user-mode queue on an adapter with native fences gets both logs
/// (`DxgkDdiSetNativeFenceLogBuffer` WAITS then SIGNALS at DISPATCH_LEVEL). An error status of
/// either call is returned (the caller destroys the queue); the buffers are freed then.
pub(crate) fn queue_created(
    a: &AdapterShared,
    kmd: usize,
    queue_id: Option<u32>,
    node: u32,
    process: ProcessId,
    user_mode: bool,
) -> Result<(), SimError> {
    let (table, native) = {
        let os = lock(&a.fence_os);
        (os.logs.clone(), os.caps.is_some())
    };
    let q = Arc::new(QueueLog {
        kmd,
        queue_id: queue_id.unwrap_or(0),
        node,
        process,
        logs: Mutex::new(None),
    });
    table.insert(q.clone());
    if !user_mode || !native {
        return Ok(());
    }
    let entries = a.os.log_entries;
    let wait = alloc_log(a, LogKind::Wait, entries)?;
    let signal = match alloc_log(a, LogKind::Signal, entries) {
        Ok(b) => b,
        Err(e) => {
            free_log(a, &wait);
            return Err(e);
        }
    };
    for b in [&wait, &signal] {
        let status = set_log_buffer(a, kmd, b);
        match status {
            Ok(0) => {}
            Ok(s) => {
                free_log(a, &wait);
                free_log(a, &signal);
                return Err(SimError::DdiFailed(s));
            }
            Err(e) => {
                free_log(a, &wait);
                free_log(a, &signal);
                return Err(e);
            }
        }
    }
    *lock(&q.logs) = Some(QueueLogs {
        wait: LogState::new(wait),
        signal: LogState::new(signal),
        retired: Vec::new(),
    });
    emit(
        a,
        TraceEvent::QueueCreated {
            adapter: a.index,
            queue_id: q.queue_id,
            node,
            process,
            hw_queue: kmd,
        },
    );
    Ok(())
}

/// Before `DxgkDdiDestroyHwQueue` (the queue is off the runlist): a final forced drain.
pub(crate) fn queue_destroying(a: &AdapterShared, kmd: usize) -> Result<(), SimError> {
    let table = lock(&a.fence_os).logs.clone();
    let Some(q) = table.get(kmd) else {
        return Ok(());
    };
    if lock(&q.logs).is_none() {
        return Ok(());
    }
    let (objs, scan) = crate::sync::fence::log_drain(a, &DrainRequest::default(), &[q])?;
    crate::sync::fence::settle_after_drain(a, objs, scan)
}

/// After `DxgkDdiDestroyHwQueue` returned: forgets the queue and frees its logs. A retired
/// (recreated) buffer whose poison changed means the device wrote a log after the OS moved
/// it: a simulation error.
pub(crate) fn queue_destroyed(a: &AdapterShared, kmd: usize) -> Result<(), SimError> {
    let table = lock(&a.fence_os).logs.clone();
    let Some(q) = table.remove(kmd) else {
        return Ok(());
    };
    let logs = lock(&q.logs).take();
    let Some(l) = logs else {
        return Ok(());
    };
    free_log(a, &l.wait.buf);
    free_log(a, &l.signal.buf);
    check_retired(a, &q, &l.retired)
}

fn check_retired(a: &AdapterShared, q: &QueueLog, retired: &[LogBuffer]) -> Result<(), SimError> {
    for b in retired {
        if !b.poison_intact() {
            return Err(sim(
                a,
                q,
                format!(
                    "LOG-01: the device wrote the retired {:?} log at {:#x} after \
                     DxgkDdiSetNativeFenceLogBuffer moved it",
                    b.kind(),
                    b.gpu()
                ),
            ));
        }
    }
    Ok(())
}

/// `Machine::recreate_hw_queue_log` (§4.1, the stand-in for Dxgkrnl moving a log): drain,
/// new buffer, `DxgkDdiSetNativeFenceLogBuffer`, drain the old buffer once more, carry the
/// cursor and last timestamp, poison and keep the old buffer.
pub(crate) fn recreate(
    a: &AdapterShared,
    kmd: usize,
    kind: LogKind,
    entries: u64,
) -> Result<(), SimError> {
    let table = lock(&a.fence_os).logs.clone();
    let q = table
        .get(kmd)
        .ok_or_else(|| SimError::Simulation(format!("no hardware queue {kmd:#x}")))?;
    if lock(&q.logs).is_none() {
        return Err(SimError::Simulation("the queue has no logs".into()));
    }
    let serial = lock(&table.drain_lock);
    let forced = [q.clone()];
    let (objs, scan) = crate::sync::fence::log_drain_locked(a, &DrainRequest::default(), &forced)?;
    let new = alloc_log(a, kind, entries)?;
    match set_log_buffer(a, kmd, &new) {
        Ok(0) => {}
        Ok(s) => {
            free_log(a, &new);
            return Err(SimError::DdiFailed(s));
        }
        Err(e) => {
            free_log(a, &new);
            return Err(e);
        }
    }
    let (objs2, scan2) =
        crate::sync::fence::log_drain_locked(a, &DrainRequest::default(), &forced)?;
    let at = {
        let mut g = lock(&q.logs);
        let l = g
            .as_mut()
            .ok_or_else(|| SimError::Simulation("logs vanished".into()))?;
        let old = l.get_mut(kind);
        let next = LogState {
            buf: new,
            cursor: old.cursor,
            last_end: old.last_end,
            gen: old.gen + 1,
        };
        let prev = std::mem::replace(old, next);
        prev.buf.poison();
        let at = prev.cursor;
        l.retired.push(prev.buf);
        at
    };
    drop(serial);
    emit(
        a,
        TraceEvent::LogRecreated {
            adapter: a.index,
            queue_id: q.queue_id,
            kind,
            at,
            entries,
        },
    );
    let mut all = objs;
    all.extend(objs2);
    crate::sync::fence::settle_after_drain(a, all, scan || scan2)
}

/// Checks every retired log buffer of adapter `a` (machine end, tests).
pub(crate) fn check_all_retired(a: &AdapterShared) -> Result<(), SimError> {
    let table = lock(&a.fence_os).logs.clone();
    for q in table.all() {
        let retired: Vec<LogBuffer> = lock(&q.logs)
            .as_ref()
            .map(|l| l.retired.clone())
            .unwrap_or_default();
        check_retired(a, &q, &retired)?;
    }
    Ok(())
}

/// Read-only view of one log for tests: `(gpu, entries, cursor, last_end, gen)`.
pub fn log_view(q: &QueueLog, kind: LogKind) -> Option<(u64, u64, u64, u64, u32)> {
    let mut g = lock(&q.logs);
    let l = g.as_mut()?;
    let s = l.get_mut(kind);
    Some((s.buf.gpu(), s.buf.entries(), s.cursor, s.last_end, s.gen))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvgpu_device::Memory;

    fn buf(kind: LogKind, n: u64) -> (Arc<Memory>, LogBuffer) {
        let mem = Memory::new(1 << 16);
        let alloc = mem.alloc_system(4096, 4096).unwrap();
        (mem, LogBuffer::init(alloc, kind, n))
    }

    fn sig(v: u64, t: u64) -> LogEntry {
        LogEntry {
            fence_value: v,
            h_native_fence: 7,
            operation_type: OP_SIGNAL_EXECUTED,
            fence_end_gpu_timestamp: t,
            ..Default::default()
        }
    }

    #[test]
    fn log_02_reads_in_index_order_and_advances() {
        let (_m, b) = buf(LogKind::Signal, 4);
        let p = Producer::new(&b);
        let mut s = LogState::new(b.clone());
        assert_eq!(s.peek(), Ok(None));
        for n in 0..3 {
            p.write(n, &sig(u64::from(n) + 1, 10 + u64::from(n)));
        }
        let c0 = s.peek().unwrap().unwrap();
        assert_eq!(c0, 3);
        let r = s.read(c0).unwrap();
        assert_eq!(r.lost, None);
        let idx: Vec<u64> = r.entries.iter().map(|e| e.0).collect();
        assert_eq!(idx, vec![0, 1, 2]);
        assert_eq!(s.cursor, 3);
        assert_eq!(s.peek(), Ok(None));
    }

    #[test]
    fn log_05_lap_without_loss_is_not_overflow() {
        let (_m, b) = buf(LogKind::Signal, 4);
        let p = Producer::new(&b);
        let mut s = LogState::new(b.clone());
        for n in 0..3 {
            p.write(n, &sig(1, 1));
        }
        let c = s.peek().unwrap().unwrap();
        s.read(c).unwrap();
        // Three more: crosses the lap boundary (wraparound 0 -> 1) without losing any.
        for n in 3..6 {
            p.write(n, &sig(2, 2));
        }
        let c = s.peek().unwrap().unwrap();
        let r = s.read(c).unwrap();
        assert_eq!(r.lost, None);
        assert_eq!(r.entries.len(), 3);
    }

    #[test]
    fn log_05_overflow_reports_the_lost_range() {
        let (_m, b) = buf(LogKind::Signal, 4);
        let p = Producer::new(&b);
        let mut s = LogState::new(b.clone());
        for n in 0..10 {
            p.write(n, &sig(u64::from(n), u64::from(n)));
        }
        let c = s.peek().unwrap().unwrap();
        assert_eq!(c, 10);
        let r = s.read(c).unwrap();
        // 0..6 overwritten; 6 shares its slot with index 10, which may be in flight: dropped.
        assert_eq!(r.lost, Some((0, 7)));
        let idx: Vec<u64> = r.entries.iter().map(|e| e.0).collect();
        assert_eq!(idx, vec![7, 8, 9]);
        assert_eq!(r.entries[0].1.fence_value, 7);
    }

    #[test]
    fn log_05_overwrite_during_read_is_detected() {
        // A writer that races the read: after the pre-flush count (4 of 4 slots used), two more
        // entries land before the re-check; their slots held indices 0 and 1.
        let (_m, b) = buf(LogKind::Signal, 4);
        let p = Producer::new(&b);
        let mut s = LogState::new(b.clone());
        for n in 0..4 {
            p.write(n, &sig(u64::from(n), 1));
        }
        let c0 = s.peek().unwrap().unwrap();
        p.write(4, &sig(4, 1));
        p.write(5, &sig(5, 1));
        let r = s.read(c0).unwrap();
        // Index 4 overwrote slot 0, index 5 slot 1; index 6 (slot 2) may be in flight: 0..=2
        // dropped.
        assert_eq!(r.lost, Some((0, 3)));
        assert_eq!(r.entries.iter().map(|e| e.0).collect::<Vec<_>>(), vec![3]);
        assert_eq!(s.cursor, 4);
        // The next read picks up 4 and 5.
        let c = s.peek().unwrap().unwrap();
        let r = s.read(c).unwrap();
        assert_eq!(
            r.entries.iter().map(|e| e.0).collect::<Vec<_>>(),
            vec![4, 5]
        );
    }

    #[test]
    fn log_05_racing_writer_never_yields_a_torn_entry() {
        // Threaded: a writer streams entries whose words all equal the index; every kept entry
        // must be consistent and carry its own index.
        let (_m, b) = buf(LogKind::Signal, 4);
        let b2 = b.clone();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let st = stop.clone();
        let w = std::thread::spawn(move || {
            let p = Producer::new(&b2);
            let mut n = 0u32;
            while !st.load(Ordering::Relaxed) && n < 20_000 {
                if n.is_multiple_of(3) {
                    std::thread::yield_now();
                }
                let v = u64::from(n);
                p.write(
                    n,
                    &LogEntry {
                        fence_value: v,
                        h_native_fence: n,
                        operation_type: OP_SIGNAL_EXECUTED,
                        fence_end_gpu_timestamp: v + 1,
                        ..Default::default()
                    },
                );
                n += 1;
            }
        });
        let mut s = LogState::new(b);
        let mut kept = 0u64;
        let mut lost = 0u64;
        let mut check = |s: &mut LogState| {
            if let Some(c) = s.peek().unwrap() {
                let r = s.read(c).unwrap();
                lost += r.lost.map_or(0, |l| l.1 - l.0);
                for (i, e) in r.entries {
                    assert_eq!(e.fence_value, i, "torn or stale entry");
                    assert_eq!(u64::from(e.h_native_fence), i);
                    kept += 1;
                }
            }
        };
        while !w.is_finished() {
            check(&mut s);
        }
        check(&mut s);
        stop.store(true, Ordering::Relaxed);
        w.join().unwrap();
        assert!(kept > 0);
        // Every index is either kept or reported lost, exactly once.
        assert_eq!(kept + lost, s.cursor);
    }

    #[test]
    fn log_06_zero_and_repeated_timestamps_accepted() {
        let (_m, b) = buf(LogKind::Signal, 8);
        let p = Producer::new(&b);
        let mut s = LogState::new(b.clone());
        for (n, t) in [(0u32, 5u64), (1, 5), (2, 0), (3, 6)] {
            p.write(n, &sig(1, t));
        }
        let c = s.peek().unwrap().unwrap();
        assert_eq!(s.read(c).unwrap().entries.len(), 4);
        assert_eq!(s.last_end, 6);
    }

    #[test]
    fn log_06_backwards_timestamp_is_an_error() {
        let (_m, b) = buf(LogKind::Signal, 8);
        let p = Producer::new(&b);
        let mut s = LogState::new(b.clone());
        p.write(0, &sig(1, 9));
        p.write(1, &sig(1, 8));
        let c = s.peek().unwrap().unwrap();
        let e = s.read(c).unwrap_err();
        assert!(e.contains("LOG-06"), "{e}");
    }

    #[test]
    fn log_03_wrong_operation_type_is_bad() {
        let (_m, b) = buf(LogKind::Wait, 8);
        let p = Producer::new(&b);
        let mut s = LogState::new(b.clone());
        p.write(0, &sig(1, 1));
        let c = s.peek().unwrap().unwrap();
        let r = s.read(c).unwrap();
        assert_eq!(r.bad, vec![0]);
        assert!(r.entries.is_empty());
    }

    #[test]
    fn log_05_header_going_backwards_is_an_error() {
        let (_m, b) = buf(LogKind::Signal, 8);
        let mut s = LogState::new(b.clone());
        s.cursor = 3;
        assert!(s.peek().unwrap_err().contains("LOG-05"));
    }

    #[test]
    fn poison_detects_writes() {
        let (_m, b) = buf(LogKind::Signal, 8);
        b.poison();
        assert!(b.poison_intact());
        Producer::new(&b).write(0, &sig(1, 1));
        assert!(!b.poison_intact());
    }
}
