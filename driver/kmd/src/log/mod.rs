//! Native fence log buffers (LOG-01 … LOG-09; design: docs/logs.md#kmd).
//!
//! - `DxgkDdiSetNativeFenceLogBuffer` ([`ddi::set_log_buffer`], PASSIVE or DISPATCH_LEVEL,
//!   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setnativefencelogbuffer>):
//!   the OS hands over the wait or the signal log of a hardware queue. The KMD stores the
//!   GPU VA the device must use ([`locate`]) in the queue ([`QueueLogs`]); the queue
//!   descriptor carries it to the device (`wait_log` / `signal_log`, hardware.md 5.3), so a
//!   running queue's runlist is recommitted and the queue's logs flushed (`LOG_FLUSH`) before
//!   the call returns: after it the device never writes the old buffer (the OS may "destroy
//!   and recreate" a log, which is the same call with a new address).
//! - The same DDI with a block naming only `hHwQueue` ([`is_release`], DISPATCH_LEVEL) takes
//!   both logs away ([`ddi::release_logs`]): 24H2 sends it when the queue's last reference
//!   goes and frees the pages after it, so on return the device writes neither log again.
//! - `DxgkDdiUpdateNativeFenceLogs` ([`ddi::update_logs`], DISPATCH_LEVEL,
//!   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_updatenativefencelogs>):
//!   one `LOG_FLUSH` per listed queue, the CPU-side barrier of LOG-07 (hardware.md 8.4).
//! - [`QueueIrqTable`]: the ISR's lock-free queue id → KMD queue handle map for the optimized
//!   native-fence interrupt (LOG-08).
//!
//! Which log a call is for: the argument has no type, so the OS-written header's `Type` says
//! (docs/logs.md#kmd). The KMD reads the header only during the call; it keeps the OS's CPU
//! mapping of each log ([`LogView`]) for one reader alone, the test hooks' copy of a queue's
//! log to a program of that queue's device ([`ddi::escape_queue_log`]).

use alloc::boxed::Box;
#[cfg(test)]
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use rvgpu_hw::addr::GpuVa;

use rvgpu_hw::log::{ENTRIES_PER_BUFFER, LOG_BUFFER_SIZE, LOG_TYPE_SIGNALS, LOG_TYPE_WAITS};
use rvgpu_hw::queue::{NO_QUEUE, RUNLIST_MAX};

pub use crate::dma::LogView;
use crate::handle::{Handle, Kind};
use crate::kmem::{self, NoMemory};
use crate::platform::Platform;
use crate::status::{self, Status};

pub mod ddi;

/// Queue ids the table covers: every id the allocator hands out (an id is a runlist slot,
/// `crate::hwqueue::QUEUE_ID_LIMIT`).
const QUEUE_ID_LIMIT: u32 = RUNLIST_MAX;

/// Which of a queue's two logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogKind {
    /// `DXGK_NATIVE_FENCE_LOG_TYPE_WAITS`.
    Wait,
    /// `DXGK_NATIVE_FENCE_LOG_TYPE_SIGNALS`.
    Signal,
}

impl LogKind {
    /// From the header's `Type`; `None` for anything else.
    pub fn from_type(t: u32) -> Option<Self> {
        match t {
            LOG_TYPE_WAITS => Some(Self::Wait),
            LOG_TYPE_SIGNALS => Some(Self::Signal),
            _ => None,
        }
    }
}

/// Which address space a log's GPU VA is in (hardware.md 12.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogSpace {
    /// The system (paging) process's space.
    System,
    /// The queue's own process space (the descriptor's `WAIT_LOG_IN_QUEUE`).
    Queue,
}

/// One log buffer as the device sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogBuf {
    /// The GPU VA the device writes ([`locate`]).
    pub gpu: GpuVa,
    /// `NumberOfEntries`.
    pub entries: u32,
}

/// A queue's logs (none until the OS sets them; kernel-mode queues never get any).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueLogs {
    pub wait: Option<LogBuf>,
    pub signal: Option<LogBuf>,
    /// The wait log's VA is in the queue's space rather than the system space.
    pub wait_in_queue: bool,
    /// The OS took both logs back because the queue's last reference went (its destruction
    /// follows): the queue stays out of every runlist from then on, so that work still queued
    /// on it neither writes the freed logs nor faults on their absence.
    pub released: bool,
    /// The OS's kernel mappings of the two buffers, kept for the test hooks' copy
    /// ([`LogView::copy_to`]); each goes with its log.
    pub wait_view: LogView,
    pub signal_view: LogView,
}

impl QueueLogs {
    /// Both logs set: signals of this queue are found in its signal log (LOG-08).
    pub fn complete(&self) -> bool {
        self.wait.is_some() && self.signal.is_some()
    }

    /// Replaces the log of `kind`, whose VA is in `space`.
    pub fn set(&mut self, kind: LogKind, buf: LogBuf, space: LogSpace) {
        match kind {
            LogKind::Wait => {
                self.wait = Some(buf);
                self.wait_in_queue = space == LogSpace::Queue;
            }
            // A signal log is always in the system space ([`locate`]).
            LogKind::Signal => self.signal = Some(buf),
        }
    }

    /// Keeps the OS's mapping of the log of `kind` (after [`Self::set`] of that log).
    pub fn keep_view(&mut self, kind: LogKind, view: LogView) {
        match kind {
            LogKind::Wait => self.wait_view = view,
            LogKind::Signal => self.signal_view = view,
        }
    }

    /// The OS's mapping of the log of `kind` (none: no log).
    pub fn view(&self, kind: LogKind) -> LogView {
        match kind {
            LogKind::Wait if self.wait.is_some() => self.wait_view,
            LogKind::Signal if self.signal.is_some() => self.signal_view,
            _ => LogView::default(),
        }
    }

    /// Forgets both logs (a refused set: the OS frees them).
    pub fn clear(&mut self) {
        *self = Self {
            released: self.released,
            ..Self::default()
        };
    }

    /// Forgets both logs and retires the queue from the device ([`Self::released`]).
    pub fn release(&mut self) {
        *self = Self {
            released: true,
            ..Self::default()
        };
    }

    /// Descriptor flags the logs need.
    pub fn descriptor_flags(&self) -> rvgpu_hw::queue::QueueFlags {
        if self.wait.is_some() && self.wait_in_queue {
            rvgpu_hw::queue::QueueFlags::WAIT_LOG_IN_QUEUE
        } else {
            rvgpu_hw::queue::QueueFlags::empty()
        }
    }

    /// Descriptor fields `(wait_log, signal_log)`, 0 when unset.
    pub fn descriptor_fields(&self) -> (GpuVa, GpuVa) {
        (
            self.wait.map_or(GpuVa::NULL, |b| b.gpu),
            self.signal.map_or(GpuVa::NULL, |b| b.gpu),
        )
    }
}

/// What the OS-initialised header says (read through `LogBufferCpuVa` during the call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderView {
    pub log_type: u32,
    pub number_of_entries: u64,
}

/// The release block: everything but `hHwQueue` zero (24H2
/// `M:VidSchiDecrementHwQueueReference` @0x140020A74 zeroes the block and fills only the
/// handle). `Flags` is not looked at: its bits are reserved.
pub fn is_release(args: &rvgpu_ddi::fence::DXGKARG_SETNATIVEFENCELOGBUFFER) -> bool {
    args.NumberOfEntries == 0
        && args.LogBufferCpuVa.is_null()
        && args.LogBufferGpuVa == 0
        && args.LogBufferSystemProcessGpuVa == 0
}

/// The GPU VA the device must write a log of `kind` at, and its space, from the block's two
/// VAs. A non-zero `system_va` (`LogBufferSystemProcessGpuVa`, filled as the pages describe)
/// is the system-space address of either log. 24H2 leaves it zero
/// (`M:VidSchiCreateNativeFenceLog` @0x140024634) and maps each log into one space only
/// (`M:VIDMM_SCH_LOG::CreateSchLog` @0x140024A94): the signal log into the system process,
/// the wait log into the queue's process; `LogBufferGpuVa` is the VA there.
pub fn locate(kind: LogKind, process_va: GpuVa, system_va: GpuVa) -> (GpuVa, LogSpace) {
    if !system_va.is_null() {
        return (system_va, LogSpace::System);
    }
    match kind {
        LogKind::Signal => (process_va, LogSpace::System),
        LogKind::Wait => (process_va, LogSpace::Queue),
    }
}

/// LOG-01 argument checks that need no lock: entry count (1..=84, equal to the header's),
/// header type, and the GPU VA [`locate`] picks: non-zero, 8-aligned; in the system space the
/// whole 4 KiB buffer reachable by the device (system memory above page 0, or local memory),
/// in the queue's space below the VA limit (the queue's page tables decide the rest).
/// `Flags` is reserved and ignored (a later OS may set bits).
pub fn validate(
    number_of_entries: u32,
    header: HeaderView,
    process_va: GpuVa,
    system_va: GpuVa,
    vram_size: u64,
) -> Result<(LogKind, LogBuf, LogSpace), Status> {
    let kind = LogKind::from_type(header.log_type).ok_or(status::INVALID_PARAMETER)?;
    let n = u64::from(number_of_entries);
    if n == 0 || n > ENTRIES_PER_BUFFER || n != header.number_of_entries {
        return Err(status::INVALID_PARAMETER);
    }
    let (gpu, space) = locate(kind, process_va, system_va);
    if gpu.is_null() || !gpu.is_aligned(rvgpu_hw::addr::ACCESS_ALIGN) {
        return Err(status::INVALID_PARAMETER);
    }
    match space {
        LogSpace::System => match rvgpu_hw::addr::classify(gpu, LOG_BUFFER_SIZE, vram_size) {
            // Window 1 admits system memory from page 1 up (adapter bring-up).
            Some(rvgpu_hw::addr::Target::System(a)) if a.get() >= rvgpu_hw::PAGE_SIZE => {}
            Some(rvgpu_hw::addr::Target::Local(_)) => {}
            _ => return Err(status::INVALID_PARAMETER),
        },
        LogSpace::Queue => {
            let end = gpu.get().checked_add(LOG_BUFFER_SIZE);
            if end.is_none_or(|e| e > 1u64 << rvgpu_hw::mmu::VA_BITS) {
                return Err(status::INVALID_PARAMETER);
            }
        }
    }
    Ok((
        kind,
        LogBuf {
            gpu,
            entries: number_of_entries,
        },
        space,
    ))
}

/// Drops consecutive repeats of the same queue id (unknown handles are kept).
pub fn dedup_ids(ids: impl Iterator<Item = Option<u32>>) -> impl Iterator<Item = Option<u32>> {
    let mut last: Option<u32> = None;
    ids.filter(move |id| match id {
        Some(v) if last == Some(*v) => false,
        Some(v) => {
            last = Some(*v);
            true
        }
        None => true,
    })
}

// ---------------------------------------------------------------------------------------------
// The ISR's queue table (LOG-08)
// ---------------------------------------------------------------------------------------------

const VALID: u64 = 1 << 63;
const HAS_LOGS: u64 = 1 << 62;
/// The queue's progress fence is a native fence (`NativeProgressFence` at create).
const NATIVE_PROGRESS: u64 = 1 << 61;
/// Bits 51:0 of a KMD handle: its sequence number (crate::sched).
const SEQ_MASK: u64 = (1 << 52) - 1;
/// Bits 59:52: the queue's engine (the ISR checks that an event names the queue's own engine).
const ENGINE_SHIFT: u32 = 52;
const ENGINE_MASK: u64 = 0xFF << ENGINE_SHIFT;

fn engine_bits(engine: u32) -> u64 {
    (u64::from(engine) << ENGINE_SHIFT) & ENGINE_MASK
}

/// The sequence number of a KMD handle.
pub fn seq_of(h: Handle) -> u64 {
    h.raw() & SEQ_MASK
}

/// What the ISR learns about a queue id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLookup {
    /// A live queue with both logs: report this KMD handle.
    Named(Handle),
    /// A live queue without both logs (kernel-mode, or logs not yet set).
    Logless,
    /// `NO_QUEUE`, out of range, or no queue with this id.
    Unknown,
}

/// Queue id → KMD queue handle, read lock-free by the ISR.
///
/// One `AtomicU64` per queue id (ids are below [`QUEUE_ID_LIMIT`]): 0 = empty, else bit 63
/// valid, bit 62 both logs set, bit 61 native progress fence, bits 59:52 the engine, bits 51:0
/// the handle's sequence number. Written with release
/// stores under the scheduler lock (create, SetNativeFenceLogBuffer); cleared through
/// `DxgkCbSynchronizeExecution` at destroy ([`ddi::clear_queue_irq`]), so an ISR that read an
/// entry has finished reporting it before the OS can free the queue. Per engine, a count of
/// table entries without both logs decides whether a NULL report must also ask the OS to
/// scan every waiter (docs/logs.md#kmd).
#[derive(Debug)]
pub struct QueueIrqTable {
    slots: Box<[AtomicU64]>,
    logless: Box<[AtomicU32]>,
}

impl QueueIrqTable {
    /// A table for ids below `ids` on `engines` engines (allocated at start, PASSIVE).
    pub fn try_new<P: Platform>(ids: u32, engines: u32) -> Result<Self, NoMemory> {
        let ids = usize::try_from(ids).map_err(|_| NoMemory)?;
        let engines = usize::try_from(engines).map_err(|_| NoMemory)?;
        Ok(Self {
            slots: kmem::try_boxed_slice::<P, _>(ids, |_| AtomicU64::new(0))?,
            logless: kmem::try_boxed_slice::<P, _>(engines, |_| AtomicU32::new(0))?,
        })
    }

    /// A table for host unit tests.
    #[cfg(test)]
    pub fn new(ids: u32, engines: u32) -> Self {
        let slots: Vec<AtomicU64> = (0..ids).map(|_| AtomicU64::new(0)).collect();
        let logless: Vec<AtomicU32> = (0..engines).map(|_| AtomicU32::new(0)).collect();
        Self {
            slots: slots.into_boxed_slice(),
            logless: logless.into_boxed_slice(),
        }
    }

    /// The default size: every queue id the allocator hands out.
    pub fn try_for_adapter<P: Platform>(engines: u32) -> Result<Self, NoMemory> {
        Self::try_new::<P>(QUEUE_ID_LIMIT, engines)
    }

    /// The default size, for host unit tests.
    #[cfg(test)]
    pub fn for_adapter(engines: u32) -> Self {
        Self::new(QUEUE_ID_LIMIT, engines)
    }

    fn slot(&self, id: u32) -> Option<&AtomicU64> {
        if id == NO_QUEUE {
            return None;
        }
        self.slots.get(usize::try_from(id).ok()?)
    }

    fn logless_of(&self, engine: u32) -> Option<&AtomicU32> {
        self.logless.get(usize::try_from(engine).ok()?)
    }

    /// A queue was created (under the scheduler lock): valid, no logs yet; `native_progress`
    /// when its progress fence is a native fence (decides whether its `PROGRESS` events need
    /// a native-fence report, [`Self::progress_is_native`]).
    pub fn insert(&self, id: u32, seq: u64, engine: u32, native_progress: bool) {
        if let Some(s) = self.slot(id) {
            let np = if native_progress { NATIVE_PROGRESS } else { 0 };
            s.store(
                VALID | np | engine_bits(engine) | (seq & SEQ_MASK),
                Ordering::Release,
            );
            if let Some(c) = self.logless_of(engine) {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The queue's second log was set (under the scheduler lock).
    pub fn logs_complete(&self, id: u32, seq: u64, engine: u32) {
        if let Some(s) = self.slot(id) {
            // Keeps the native-progress bit set at create.
            let (Ok(old) | Err(old)) =
                s.fetch_update(Ordering::Release, Ordering::Relaxed, |old| {
                    Some(
                        VALID
                            | HAS_LOGS
                            | (old & NATIVE_PROGRESS)
                            | engine_bits(engine)
                            | (seq & SEQ_MASK),
                    )
                });
            if old & VALID != 0 && old & HAS_LOGS == 0 {
                if let Some(c) = self.logless_of(engine) {
                    let _ =
                        c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(1));
                }
            }
        }
    }

    /// The queue's logs were taken away (under the scheduler lock): it is log-less again.
    pub fn logs_released(&self, id: u32, engine: u32) {
        if let Some(s) = self.slot(id) {
            let (Ok(old) | Err(old)) =
                s.fetch_update(Ordering::Release, Ordering::Relaxed, |old| {
                    (old & VALID != 0 && old & HAS_LOGS != 0).then_some(old & !HAS_LOGS)
                });
            if old & VALID != 0 && old & HAS_LOGS != 0 {
                if let Some(c) = self.logless_of(engine) {
                    c.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Clears `id` (at destroy, inside `DxgkCbSynchronizeExecution`).
    pub fn remove(&self, id: u32, engine: u32) {
        if let Some(s) = self.slot(id) {
            let old = s.swap(0, Ordering::Release);
            if old & VALID != 0 && old & HAS_LOGS == 0 {
                if let Some(c) = self.logless_of(engine) {
                    let _ =
                        c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(1));
                }
            }
        }
    }

    /// ISR: the engine of live queue `id` (`None` if no live queue has that id).
    pub fn engine_of(&self, id: u32) -> Option<u32> {
        let v = self.slot(id)?.load(Ordering::Acquire);
        if v & VALID == 0 {
            return None;
        }
        u32::try_from((v & ENGINE_MASK) >> ENGINE_SHIFT).ok()
    }

    /// Whether `id` could name a queue at all (below the id limit, not `NO_QUEUE`).
    pub fn id_in_range(&self, id: u32) -> bool {
        self.slot(id).is_some()
    }

    /// ISR lookup of a live queue's handle by device id, logs or not (device IRQL, lock-free).
    pub fn queue_handle(&self, adapter_slot: u8, id: u32) -> Option<Handle> {
        let v = self.slot(id)?.load(Ordering::Acquire);
        if v & VALID == 0 {
            return None;
        }
        Handle::new(adapter_slot, Kind::Queue, v & SEQ_MASK)
    }

    /// ISR lookup of the queue that ran a signal (device IRQL, lock-free).
    pub fn lookup(&self, adapter_slot: u8, id: u32) -> QueueLookup {
        let Some(s) = self.slot(id) else {
            return QueueLookup::Unknown;
        };
        let v = s.load(Ordering::Acquire);
        if v & VALID == 0 {
            return QueueLookup::Unknown;
        }
        if v & HAS_LOGS == 0 {
            return QueueLookup::Logless;
        }
        match Handle::new(adapter_slot, Kind::Queue, v & SEQ_MASK) {
            Some(h) => QueueLookup::Named(h),
            None => QueueLookup::Unknown,
        }
    }

    /// ISR: whether a `PROGRESS` event of queue `id` may have signalled a native fence. `false`
    /// only for a live queue whose progress fence is a monitored fence (its completion needs
    /// the monitored-fence report alone); `true` for a native progress fence and, since a
    /// missed signal is worse than a spurious report, for an id not in the table (a queue
    /// destroyed since the event was posted).
    pub fn progress_is_native(&self, id: u32) -> bool {
        let Some(s) = self.slot(id) else {
            return true;
        };
        let v = s.load(Ordering::Acquire);
        v & VALID == 0 || v & NATIVE_PROGRESS != 0
    }

    /// Whether `engine` has a queue whose signals a log read would miss.
    pub fn engine_has_logless(&self, engine: u32) -> bool {
        self.logless_of(engine)
            .is_none_or(|c| c.load(Ordering::Relaxed) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvgpu_ddi::fence::DXGK_NATIVE_FENCE_LOG_BUFFER;

    /// `validate` with a raw GPU address, as the OS passes it.
    fn validate(
        n: u32,
        h: HeaderView,
        gpu: u64,
        vram_size: u64,
    ) -> Result<(LogKind, LogBuf), Status> {
        // Both VAs filled, as the pages describe: the system VA is the device's.
        super::validate(n, h, GpuVa::new(gpu), GpuVa::new(gpu), vram_size).map(|(k, b, space)| {
            assert_eq!(space, LogSpace::System);
            (k, b)
        })
    }

    /// `super::validate` with raw VAs, as the OS passes them.
    fn sv(
        n: u32,
        h: HeaderView,
        process_va: u64,
        system_va: u64,
        vram_size: u64,
    ) -> Result<(LogKind, LogBuf, LogSpace), Status> {
        super::validate(
            n,
            h,
            GpuVa::new(process_va),
            GpuVa::new(system_va),
            vram_size,
        )
    }

    fn raw((w, s): (GpuVa, GpuVa)) -> (u64, u64) {
        (w.get(), s.get())
    }

    const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

    fn hdr(t: u32, n: u64) -> HeaderView {
        HeaderView {
            log_type: t,
            number_of_entries: n,
        }
    }

    #[test]
    fn log_01_set_stores_by_header_type_and_programs_descriptor() {
        let (k, b) = validate(84, hdr(LOG_TYPE_WAITS, 84), 0x10_0000, 0).unwrap();
        assert_eq!(k, LogKind::Wait);
        let (k2, b2) = validate(4, hdr(LOG_TYPE_SIGNALS, 4), 0x20_0000, 0).unwrap();
        assert_eq!(k2, LogKind::Signal);
        let mut logs = QueueLogs::default();
        assert_eq!(
            raw(logs.descriptor_fields()),
            (0, 0),
            "unset logs program 0"
        );
        logs.set(k, b, LogSpace::System);
        assert!(!logs.complete());
        logs.set(k2, b2, LogSpace::System);
        assert!(logs.complete());
        assert_eq!(raw(logs.descriptor_fields()), (0x10_0000, 0x20_0000));
        // Recreate: a second call for the same type replaces the address.
        let (k3, b3) = validate(84, hdr(LOG_TYPE_SIGNALS, 84), 0x30_0000, 0).unwrap();
        logs.set(k3, b3, LogSpace::System);
        assert_eq!(raw(logs.descriptor_fields()), (0x10_0000, 0x30_0000));
        assert_eq!(logs.signal.unwrap().entries, 84);
        // Local memory is reachable too.
        let vram = rvgpu_hw::addr::VRAM_BASE;
        assert!(validate(84, hdr(LOG_TYPE_WAITS, 84), vram, 1 << 20).is_ok());
    }

    /// 24H2's block (`LogBufferSystemProcessGpuVa` zero): the signal log's `LogBufferGpuVa`
    /// is a system-space VA, the wait log's a VA of the queue's process, which the
    /// descriptor marks; with both VAs filled (the pages) the system VA serves either log.
    #[test]
    fn log_01_24h2_block_locates_each_log_by_its_type() {
        let wait_va = 0x7F00_0000_0000;
        let (k, w, space) = sv(64, hdr(LOG_TYPE_WAITS, 64), wait_va, 0, 1 << 20).unwrap();
        assert_eq!(
            (k, w.gpu.get(), space),
            (LogKind::Wait, wait_va, LogSpace::Queue)
        );
        let (k2, sg, space2) = sv(64, hdr(LOG_TYPE_SIGNALS, 64), 0x20_0000, 0, 1 << 20).unwrap();
        assert_eq!(
            (k2, sg.gpu.get(), space2),
            (LogKind::Signal, 0x20_0000, LogSpace::System)
        );
        let mut logs = QueueLogs::default();
        logs.set(k, w, space);
        logs.set(k2, sg, space2);
        assert!(logs.complete());
        assert_eq!(raw(logs.descriptor_fields()), (wait_va, 0x20_0000));
        assert_eq!(
            logs.descriptor_flags(),
            rvgpu_hw::queue::QueueFlags::WAIT_LOG_IN_QUEUE
        );
        // A recreate with a system VA moves the wait log back to the system space.
        let (k3, w3, space3) =
            sv(64, hdr(LOG_TYPE_WAITS, 64), wait_va, 0x30_0000, 1 << 20).unwrap();
        logs.set(k3, w3, space3);
        assert_eq!(raw(logs.descriptor_fields()), (0x30_0000, 0x20_0000));
        assert!(logs.descriptor_flags().is_empty());
        // A queue-space VA is checked against the VA limit only; a signal log's against the
        // device's reach, as before.
        let limit = 1u64 << rvgpu_hw::mmu::VA_BITS;
        let bad = Err(status::INVALID_PARAMETER);
        let waits = hdr(LOG_TYPE_WAITS, 64);
        assert_eq!(
            sv(64, waits, limit - 4096, 0, 0).map(|r| r.2),
            Ok(LogSpace::Queue)
        );
        assert_eq!(sv(64, waits, limit - 2048, 0, 0).map(|r| r.2), bad);
        assert_eq!(sv(64, waits, 0, 0, 0).map(|r| r.2), bad);
        let signals = hdr(LOG_TYPE_SIGNALS, 64);
        assert_eq!(sv(64, signals, wait_va, 0, 0).map(|r| r.2), bad);
        // A refused set takes both away; the release also retires the queue.
        let mut refused = logs;
        refused.clear();
        assert_eq!(refused, QueueLogs::default());
        logs.release();
        assert!(logs.released && !logs.complete());
        assert_eq!(raw(logs.descriptor_fields()), (0, 0));
        logs.clear();
        assert!(logs.released, "a retired queue stays retired");
    }

    /// 24H2's release block names only the queue; a block with any address is a set.
    #[test]
    fn log_01_release_block_is_the_handle_alone() {
        use rvgpu_ddi::fence::{
            DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_SETNATIVEFENCELOGBUFFER_FLAGS,
        };
        let mut words = [0u64; 8];
        let release = DXGKARG_SETNATIVEFENCELOGBUFFER {
            hHwQueue: core::ptr::without_provenance_mut(0x1234),
            NumberOfEntries: 0,
            LogBufferCpuVa: core::ptr::null_mut(),
            LogBufferGpuVa: 0,
            LogBufferSystemProcessGpuVa: 0,
            Flags: DXGKARG_SETNATIVEFENCELOGBUFFER_FLAGS::default(),
            Reserved: [0; 32],
        };
        assert!(is_release(&release));
        let set = DXGKARG_SETNATIVEFENCELOGBUFFER {
            NumberOfEntries: 64,
            LogBufferCpuVa: words.as_mut_ptr().cast(),
            LogBufferGpuVa: 0x20_0000,
            ..release
        };
        assert!(!is_release(&set));
        assert!(!is_release(&DXGKARG_SETNATIVEFENCELOGBUFFER {
            LogBufferGpuVa: 0x20_0000,
            ..release
        }));
    }

    #[test]
    fn log_01_set_rejects_bad_arguments() {
        let bad = status::INVALID_PARAMETER;
        let limit = rvgpu_hw::addr::SYSMEM_LIMIT;
        let past_vram = rvgpu_hw::addr::VRAM_BASE + (1 << 20);
        // (entries, header type, header entries, GPU VA, what is wrong)
        let cases = [
            (84, 0, 84, 0x10_0000, "Type 0"),
            (84, 3, 84, 0x10_0000, "Type 3"),
            (0, 1, 0, 0x10_0000, "0 entries"),
            (85, 1, 85, 0x10_0000, "85 entries"),
            (84, 1, 83, 0x10_0000, "count != header"),
            (84, 1, 84, 0, "GPU VA 0"),
            (84, 1, 84, 0x10_0004, "unaligned"),
            (84, 1, 84, 8, "page 0 is outside window 1"),
            (84, 1, 84, limit - PAGE / 2, "straddles"),
            (84, 1, 84, past_vram, "past VRAM"),
        ];
        for (n, ty, hn, gpu_va, what) in cases {
            let got = validate(n, hdr(ty, hn), gpu_va, 1 << 20);
            assert_eq!(got.unwrap_err(), bad, "{what}");
        }
        // The CPU VA checks (null, unaligned) come before any lock; such pointers are
        // rejected without being read.
        let call = crate::args::Call::for_test();
        assert_eq!(call.log_header(core::ptr::null()).unwrap_err(), bad);
        let p = core::ptr::without_provenance::<DXGK_NATIVE_FENCE_LOG_BUFFER>(0x1004);
        assert_eq!(call.log_header(p).unwrap_err(), bad);
    }

    #[test]
    fn log_01_header_is_read_through_the_cpu_va() {
        let mut words = [0u64; 8];
        words[1] = u64::from(LOG_TYPE_SIGNALS);
        words[2] = 84;
        let p = words.as_ptr().cast::<DXGK_NATIVE_FENCE_LOG_BUFFER>();
        // `words` holds a whole 40-byte header, 8-aligned.
        let h = crate::args::Call::for_test().log_header(p).unwrap();
        assert_eq!(h, hdr(LOG_TYPE_SIGNALS, 84));
    }

    #[test]
    fn log_07_update_writes_one_flush_per_listed_queue() {
        let ids = [Some(3), Some(3), None, Some(5), Some(3)];
        let out: Vec<_> = dedup_ids(ids.into_iter()).collect();
        assert_eq!(out, vec![Some(3), None, Some(5), Some(3)]);
    }

    #[test]
    fn log_08_queue_table_names_queues_with_both_logs() {
        let t = QueueIrqTable::new(16, 2);
        let h = Handle::new(2, Kind::Queue, 77).unwrap();
        assert_eq!(t.lookup(2, 5), QueueLookup::Unknown);
        assert!(!t.engine_has_logless(1));
        t.insert(5, seq_of(h), 1, false);
        assert_eq!(t.lookup(2, 5), QueueLookup::Logless);
        assert!(t.engine_has_logless(1));
        assert!(!t.engine_has_logless(0));
        t.logs_complete(5, seq_of(h), 1);
        assert_eq!(t.lookup(2, 5), QueueLookup::Named(h));
        assert_eq!(
            QueueLookup::Named(h),
            QueueLookup::Named(Handle::decode(h.as_handle(), Kind::Queue).unwrap())
        );
        assert!(!t.engine_has_logless(1), "the queue has its logs now");
        t.logs_complete(5, seq_of(h), 1);
        assert!(!t.engine_has_logless(1), "a recreate does not count twice");
        // The logs taken away: log-less again, counted once.
        t.logs_released(5, 1);
        assert_eq!(t.lookup(2, 5), QueueLookup::Logless);
        assert!(t.engine_has_logless(1));
        t.logs_released(5, 1);
        t.logs_complete(5, seq_of(h), 1);
        assert_eq!(t.lookup(2, 5), QueueLookup::Named(h));
        assert!(!t.engine_has_logless(1), "released twice, counted once");
        t.remove(5, 1);
        assert_eq!(t.lookup(2, 5), QueueLookup::Unknown);
        assert_eq!(t.lookup(2, NO_QUEUE), QueueLookup::Unknown);
        assert_eq!(t.lookup(2, 16), QueueLookup::Unknown, "out of range");
        // A log-less queue destroyed: the engine count goes back down.
        t.insert(6, 9, 0, false);
        assert!(t.engine_has_logless(0));
        t.remove(6, 0);
        assert!(!t.engine_has_logless(0));
        assert!(t.engine_has_logless(7), "unknown engine: assume the worst");
        assert_eq!(
            QueueIrqTable::for_adapter(1).slots.len(),
            crate::hwqueue::QUEUE_ID_LIMIT as usize,
            "every id the queue id allocator hands out has a slot"
        );
    }

    #[test]
    fn log_08_progress_needs_a_native_report_only_for_a_native_progress_fence() {
        let t = QueueIrqTable::new(16, 1);
        let h = Handle::new(2, Kind::Queue, 77).unwrap();
        // A queue whose progress fence is a monitored fence: its PROGRESS events need no
        // native-fence report, with or without logs.
        t.insert(3, seq_of(h), 0, false);
        assert!(!t.progress_is_native(3));
        t.logs_complete(3, seq_of(h), 0);
        assert!(!t.progress_is_native(3));
        assert_eq!(t.lookup(2, 3), QueueLookup::Named(h));
        // NativeProgressFence at create: the bit survives the logs being set (and recreated).
        let h2 = Handle::new(2, Kind::Queue, 78).unwrap();
        t.insert(4, seq_of(h2), 0, true);
        assert!(t.progress_is_native(4));
        assert_eq!(t.lookup(2, 4), QueueLookup::Logless);
        t.logs_complete(4, seq_of(h2), 0);
        t.logs_complete(4, seq_of(h2), 0);
        assert!(t.progress_is_native(4));
        assert_eq!(t.lookup(2, 4), QueueLookup::Named(h2));
        assert!(!t.engine_has_logless(0));
        // Not in the table (destroyed since the event was posted, NO_QUEUE, out of range):
        // a spurious report rather than a missed one.
        t.remove(3, 0);
        assert!(t.progress_is_native(3));
        assert!(t.progress_is_native(NO_QUEUE));
        assert!(t.progress_is_native(16));
    }

    /// LOG-08: the ISR learns a queue's engine and handle only while the queue is in the table,
    /// whatever its logs; the handle's sequence number and the engine survive the logs being
    /// set, and a removed or never-inserted id reads as no queue.
    #[test]
    fn log_08_isr_reads_engine_and_handle_of_live_queues_only() {
        let t = QueueIrqTable::new(16, 4);
        let h = Handle::new(3, Kind::Queue, 0x1234).unwrap();
        assert_eq!((t.engine_of(9), t.queue_handle(3, 9)), (None, None));
        assert!(t.id_in_range(9) && t.id_in_range(15));
        assert!(!t.id_in_range(16) && !t.id_in_range(NO_QUEUE));
        t.insert(9, seq_of(h), 3, false);
        assert_eq!((t.engine_of(9), t.queue_handle(3, 9)), (Some(3), Some(h)));
        t.logs_complete(9, seq_of(h), 3);
        assert_eq!((t.engine_of(9), t.queue_handle(3, 9)), (Some(3), Some(h)));
        t.remove(9, 3);
        assert_eq!((t.engine_of(9), t.queue_handle(3, 9)), (None, None));
        assert!(t.id_in_range(9), "a free id is still in range");
        assert_eq!(t.engine_of(NO_QUEUE), None);
    }
}
