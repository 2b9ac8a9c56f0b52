//! The OS side of native GPU fences (NF-01 … NF-17, MF-04): what Dxgkrnl/VidSch do.
//!
//! - **Objects and handles (NF-12, NF-13).** [`crate::Machine::create_native_fence`] allocates
//!   CurrentValue and MonitoredValue, calls `DxgkDdiCreateNativeFence` with a process-wide
//!   unique `hGlobalNativeFence` (a global counter: many machines share one test process and
//!   the driver keeps a driver-wide handle map), parses the returned private data, and opens
//!   the creating process's instance (`DxgkDdiOpenNativeFence`, `hLocalNativeFence`). Every
//!   further process opens its own instance; destroying an instance is `Close` only, and the
//!   last one is `Close` then `Destroy` (NF-13). The global handle is registered in the
//!   adapter's `native_fences` set before create (so an interrupt report naming it is valid)
//!   and removed after Destroy returned (from then on a report naming it is 0x119, NF-14).
//! - **Storage (NF-05, NF-06).** Placed by type (docs/architecture.md, "Native fences: design
//!   notes"): `D3DDDI_NATIVEFENCE_TYPE_DEFAULT` and cross-adapter fences in system memory (bus
//!   address = system-process GPU VA in v1, identity mapping, what `MapToGpuSystemProcess` asks
//!   for); `D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU` fences, CurrentValue and MonitoredValue, in local
//!   memory (VidMm's part: pages from the top of VRAM, GPU address `VRAM_BASE` + offset, kernel
//!   CPU address in the BAR4 view; freed when the fence is destroyed). `INTRA_GPU` fences have
//!   no CPU wait or signal (the OS refuses both) and are never cross-adapter. Non-shareable fences of one process are
//!   packed into shared pages at the caps' `MonitoredValueStride` (CurrentValues on one page,
//!   MonitoredValues on another: they have different protections); a shareable fence gets
//!   pages of its own. Pages are never returned while the machine lives: a destroyed fence's
//!   slot may still be the target of queued GPU work (Dxgkrnl defers such frees until the work
//!   retires; the simulation defers them to the machine's end).
//! - **MonitoredValue (NF-02, NF-04, NF-07).** Per fence the pending CPU waits; the OS value is
//!   (lowest pending value − 1), or `u64::MAX` with none, or 0 held for a cross-adapter fence
//!   (NF-16). Whenever it changes, `DxgkDdiUpdateMonitoredValues` runs at device IRQL under
//!   the adapter's interrupt lock (synchronised with the ISR); after it returns the OS
//!   resamples CurrentValue and releases satisfied waits, and repeats until the value is
//!   stable (`settle`).
//! - **Interrupts (NF-04, NF-14).** `DxgkCbNotifyDpc` records which fences a
//!   `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` report named (or "all" for a NULL array); when the
//!   driver's DPC returns, VidSch's DPC-time work resamples exactly those fences (or every
//!   native fence of the adapter), releases satisfied waits and re-arms MonitoredValue
//!   (`process_dpc_work`). A cross-adapter fence's new value is propagated to the other
//!   adapters with `DxgkDdiUpdateCurrentValuesFromCpu(NotificationOnly)` (NF-16).
//!   `DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED` (legacy monitored fences) is recorded but not
//!   processed: the simulation has no legacy monitored fences yet.
//! - **CPU waits (MF-04).** Event form: [`crate::Machine::wait_native_fence_event`] returns a
//!   [`SimEvent`]. Blocking form: [`crate::Machine::wait_native_fence`]. In step mode a
//!   blocking wait drives the machine itself (rounds of device steps, interrupts and DPCs on
//!   the calling thread) until the wait is satisfied or a round makes no progress: an idle
//!   machine can no longer signal the fence without the caller, so the wait times out then
//!   (no deadlock, deterministic).
//! - **CPU signal (NF-17).** `DxgkDdiUpdateCurrentValuesFromCpu` at DISPATCH_LEVEL, then the
//!   satisfied CPU waits are released.
//! - **Cross-adapter (NF-16, NF-18).** Each adapter gets its own native-fence object (own
//!   `hGlobalNativeFence` and MonitoredValue, the driver's handle → adapter map needs one
//!   adapter per handle) over one CurrentValue in system memory. On an adapter without native
//!   fences the fence is a legacy monitored fence over the same value; the reverse (a monitored
//!   fence opened as native) works the same way. Legacy GPU-side waits
//!   (`WaitForSynchronizationObjectFromGpu`) resume the held context through a callback; legacy
//!   GPU signals are software packets that, with no software contexts yet, reach the head at
//!   once.
//!
//! Not simulated yet: VidMm's segments (the local pages stand in for the segments a driver
//! names for `D3DKMDT_STANDARDALLOCATION_FENCESTORAGE`), `AlwaysSignaled`, `No64BitAtomics`
//! (MF-02). GPU work in the fence tests comes from [`crate::testing::gpu`]: user-mode
//! hardware queues of simulated processes ([`crate::ums`]) whose rings the tests write. DPC-time
//! updates are batched (one `UpdateMonitoredValues` call names every fence it re-arms); a
//! CPU wait or signal updates its own fence only.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use rvgpu_ddi::adapter::{
    DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_NATIVE_FENCE_CAPS, DXGK_QUERYADAPTERINFOFLAGS,
};
use rvgpu_ddi::basic::HANDLE;
use rvgpu_ddi::fence::*;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::NTSTATUS;
use rvgpu_device::{Memory, SysAlloc};
use rvgpu_hw::pdd::{NativeFencePdd, NATIVE_FENCE_PDD_VERSION, PDD_MAGIC};
use rvgpu_kmd::platform::Irql;

use crate::dxgkrnl::adapter::{AdapterShared, Life};
use crate::dxgkrnl::ddi::{self, check_status, missing, table, At};
use crate::dxgkrnl::irql::Routine;
use crate::dxgkrnl::notify::Notification;
use crate::dxgkrnl::state::lock;
use crate::error::SimError;
use crate::machine::{Machine, Mode};
use crate::sync::trace::ReleaseVia;

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;
const KIND_CURRENT: u8 = 0;
const KIND_MONITORED: u8 = 1;
const KIND_LEGACY: u8 = 2;
/// Most of VRAM the OS takes for local fence pages (NF-06): the top half, the rest stays free
/// for whatever else tests place in VRAM.
const LOCAL_FENCE_VRAM_DIVISOR: u64 = 2;

/// Next OS handle (global and local native-fence handles share the space). Process-wide:
/// the driver's handle map is driver-wide and many machines run in one test process.
/// Starts far from small integers and from [`crate::testing::BAD_FENCE_HANDLE`].
static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(0x7_0000_0000);

fn next_handle() -> usize {
    NEXT_HANDLE.fetch_add(0x10, Ordering::Relaxed)
}

/// A process of the simulated OS (owner of local handles and of packed fence pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcessId(pub u32);

/// What [`Machine::create_native_fence`] creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NativeFenceDesc {
    /// Initial CurrentValue.
    pub initial: u64,
    /// Shareable with other processes (own pages, NF-05).
    pub shareable: bool,
    /// `D3DDDI_NATIVEFENCE_TYPE`.
    pub fence_type: D3DDDI_NATIVEFENCE_TYPE,
}

impl Default for NativeFenceDesc {
    fn default() -> Self {
        Self {
            initial: 0,
            shareable: false,
            fence_type: D3DDDI_NATIVEFENCE_TYPE_DEFAULT,
        }
    }
}

/// How a CPU wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitOutcome {
    /// CurrentValue reached the awaited value.
    Satisfied,
    /// The timeout passed (threaded) or the machine went idle (step mode).
    TimedOut,
    /// The fence was destroyed with the wait pending.
    Abandoned,
}

#[derive(Debug, Default)]
struct EventInner {
    state: Mutex<Option<WaitOutcome>>,
    cv: Condvar,
    /// How a satisfied wait was released (issue 5, docs/logs.md §4.3).
    via: Mutex<Option<ReleaseVia>>,
}

thread_local! {
    /// How waits released on this thread right now are attributed ([`ViaScope`]).
    static VIA: std::cell::Cell<ReleaseVia> = const { std::cell::Cell::new(ReleaseVia::Resample) };
}

/// Attributes the waits released on this thread while it lives to `via`.
struct ViaScope(ReleaseVia);

impl ViaScope {
    fn enter(via: ReleaseVia) -> Self {
        Self(VIA.with(|c| c.replace(via)))
    }
}

impl Drop for ViaScope {
    fn drop(&mut self) {
        VIA.with(|c| c.set(self.0));
    }
}

/// The event form of a CPU wait (MF-04): becomes signalled once with the wait's outcome.
#[derive(Clone, Debug, Default)]
pub struct SimEvent(Arc<EventInner>);

impl SimEvent {
    fn set(&self, o: WaitOutcome) {
        let mut s = lock(&self.0.state);
        if s.is_none() {
            *s = Some(o);
        }
        self.0.cv.notify_all();
    }

    /// The outcome, if signalled.
    pub fn outcome(&self) -> Option<WaitOutcome> {
        *lock(&self.0.state)
    }

    /// How a satisfied wait was released (`None` until it is; issue 5).
    pub fn released_via(&self) -> Option<ReleaseVia> {
        *lock(&self.0.via)
    }

    /// Whether the wait was satisfied.
    pub fn is_signaled(&self) -> bool {
        self.outcome() == Some(WaitOutcome::Satisfied)
    }

    /// Waits up to `timeout` for the event; `None` if it is still unsignalled.
    pub fn wait(&self, timeout: Duration) -> Option<WaitOutcome> {
        let g = lock(&self.0.state);
        let (g, _) = self
            .0
            .cv
            .wait_timeout_while(g, timeout, |s| s.is_none())
            .unwrap_or_else(|p| p.into_inner());
        *g
    }

    fn same(&self, other: &SimEvent) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// One 64-bit fence value in OS-allocated system memory.
#[derive(Clone, Debug)]
struct Slot {
    alloc: SysAlloc,
    off: u64,
}

impl Slot {
    fn gpu(&self) -> u64 {
        self.alloc.bus_addr + self.off
    }

    fn kva(&self) -> *mut c_void {
        // The allocation's pointer has provenance over all of it; `off` is inside it.
        self.alloc
            .cpu_ptr()
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(self.off as usize)
            .cast()
    }

    fn load(&self) -> u64 {
        self.alloc
            .word(self.off)
            .map_or(0, |w| w.load(Ordering::SeqCst))
    }

    fn store(&self, v: u64) {
        if let Some(w) = self.alloc.word(self.off) {
            w.store(v, Ordering::SeqCst);
        }
    }
}

/// One 64-bit fence value in local memory (NF-06): VRAM page `page` (byte offset), `off` in it.
#[derive(Clone, Debug)]
struct LocalSlot {
    mem: Arc<Memory>,
    page: u64,
    off: u64,
}

impl LocalSlot {
    fn vram_off(&self) -> u64 {
        self.page + self.off
    }

    fn word(&self) -> Option<&std::sync::atomic::AtomicU64> {
        self.mem
            .vram_words()
            .get(usize::try_from(self.vram_off() / 8).ok()?)
    }
}

/// Where a native fence value lives (NF-06).
#[derive(Clone, Debug)]
enum Value {
    System(Slot),
    Local(LocalSlot),
}

impl Value {
    fn gpu(&self) -> u64 {
        match self {
            Self::System(s) => s.gpu(),
            Self::Local(l) => rvgpu_hw::addr::VRAM_BASE + l.vram_off(),
        }
    }

    /// The kernel CPU address: for local memory, the BAR4 view of the same bytes.
    fn kva(&self) -> *mut c_void {
        match self {
            Self::System(s) => s.kva(),
            Self::Local(l) => l.mem.vram_cpu_ptr().map_or(std::ptr::null_mut(), |p| {
                p.as_ptr()
                    .cast::<u8>()
                    .wrapping_add(l.vram_off() as usize)
                    .cast()
            }),
        }
    }

    fn load(&self) -> u64 {
        match self {
            Self::System(s) => s.load(),
            Self::Local(l) => l.word().map_or(0, |w| w.load(Ordering::SeqCst)),
        }
    }

    fn store(&self, v: u64) {
        match self {
            Self::System(s) => s.store(v),
            Self::Local(l) => {
                if let Some(w) = l.word() {
                    w.store(v, Ordering::SeqCst);
                }
            }
        }
    }

    fn is_local(&self) -> bool {
        matches!(self, Self::Local(_))
    }

    /// The system-memory slot, or the simulation error for a local value where only system
    /// memory may be (NF-06, NF-16: a value shared across adapters is in system memory).
    fn system(&self, what: &str) -> Result<&Slot, SimError> {
        match self {
            Self::System(s) => Ok(s),
            Self::Local(_) => Err(SimError::Simulation(format!(
                "NF-06/NF-16: {what} needs the fence's CurrentValue in system memory, but it is \
                 in local memory"
            ))),
        }
    }
}

/// What VidSch does when a GPU-side wait on a legacy monitored fence is satisfied: resume
/// the software context's submission (MF-03, `WaitForSynchronizationObjectFromGpu`).
struct Resume(Box<dyn FnOnce() + Send>);

impl std::fmt::Debug for Resume {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resume")
    }
}

#[derive(Debug)]
struct Waiter {
    value: u64,
    event: SimEvent,
    resume: Option<Resume>,
}

#[derive(Debug)]
struct ObjState {
    /// Open instances: local handle → process.
    instances: BTreeMap<usize, ProcessId>,
    destroyed: bool,
    waiters: Vec<Waiter>,
    /// The MonitoredValue the OS last gave the driver.
    mv_os: u64,
    /// Cross-adapter: MonitoredValue held at 0 (NF-16).
    hold_zero: bool,
    /// D3DKMT handles of this fence (issue 5: a log entry names the fence by one), with the
    /// process that holds each.
    kmt_handles: Vec<(u32, ProcessId)>,
    /// Cross-adapter peers: the same fence on other adapters.
    peers: Vec<Arc<FenceObj>>,
    /// The same fence opened as a legacy monitored fence on adapters without native fences
    /// (NF-18).
    legacy_peers: Vec<Arc<LegacyObj>>,
    /// Last CurrentValue propagated to the peers.
    last_propagated: u64,
}

/// The OS's native-fence object on one adapter.
#[derive(Debug)]
pub struct FenceObj {
    adapter: Weak<AdapterShared>,
    adapter_index: usize,
    global: usize,
    creator: ProcessId,
    shareable: bool,
    fence_type: D3DDDI_NATIVEFENCE_TYPE,
    cv: Value,
    mv: Value,
    pdd: NativeFencePdd,
    /// Serialises MonitoredValue updates and destruction of this fence.
    settle_lock: Mutex<()>,
    st: Mutex<ObjState>,
}

/// A process's instance of a native fence (its local handle).
#[derive(Clone, Debug)]
pub struct NativeFence {
    obj: Arc<FenceObj>,
    process: ProcessId,
    local: usize,
}

impl NativeFence {
    /// Adapter index.
    pub fn adapter(&self) -> usize {
        self.obj.adapter_index
    }
    /// `hGlobalNativeFence`.
    pub fn global_handle(&self) -> usize {
        self.obj.global
    }
    /// This instance's `hLocalNativeFence`.
    pub fn local_handle(&self) -> usize {
        self.local
    }
    /// Owning process of this instance.
    pub fn process(&self) -> ProcessId {
        self.process
    }
    /// Process that created the fence.
    pub fn creator(&self) -> ProcessId {
        self.obj.creator
    }
    /// Shareable?
    pub fn shareable(&self) -> bool {
        self.obj.shareable
    }
    /// `D3DDDI_NATIVEFENCE_TYPE`.
    pub fn fence_type(&self) -> D3DDDI_NATIVEFENCE_TYPE {
        self.obj.fence_type
    }
    /// System-process GPU VA of CurrentValue.
    pub fn current_value_gpu(&self) -> u64 {
        self.obj.cv.gpu()
    }
    /// System-process GPU VA of MonitoredValue.
    pub fn monitored_value_gpu(&self) -> u64 {
        self.obj.mv.gpu()
    }
    /// Kernel CPU VA of CurrentValue.
    /// CurrentValue lives in local memory (NF-06).
    pub fn current_value_is_local(&self) -> bool {
        self.obj.cv.is_local()
    }

    /// MonitoredValue lives in local memory (NF-06).
    pub fn monitored_value_is_local(&self) -> bool {
        self.obj.mv.is_local()
    }

    pub fn current_value_kernel_va(&self) -> usize {
        self.obj.cv.kva() as usize
    }
    /// Kernel CPU VA of MonitoredValue.
    pub fn monitored_value_kernel_va(&self) -> usize {
        self.obj.mv.kva() as usize
    }
    /// The private driver data create returned (validated).
    pub fn pdd(&self) -> NativeFencePdd {
        self.obj.pdd
    }
    /// CurrentValue as the CPU reads it now.
    pub fn current_value(&self) -> u64 {
        self.obj.cv.load()
    }
    /// MonitoredValue as stored in memory now (what the driver wrote).
    pub fn monitored_value(&self) -> u64 {
        self.obj.mv.load()
    }
    /// Values of the pending CPU waits.
    pub fn pending_waits(&self) -> Vec<u64> {
        lock(&self.obj.st).waiters.iter().map(|w| w.value).collect()
    }
    /// Whether the OS object was destroyed.
    pub fn is_destroyed(&self) -> bool {
        lock(&self.obj.st).destroyed
    }
}

#[derive(Debug)]
struct Cursor {
    alloc: SysAlloc,
    next: u64,
}

/// Per-adapter native-fence state of the OS.
#[derive(Debug, Default)]
pub struct FenceOs {
    /// `DXGKQAITYPE_NATIVE_FENCE_CAPS`, queried at start when the driver advertised
    /// `NativeGpuFence`.
    pub caps: Option<DXGK_NATIVE_FENCE_CAPS>,
    objs: HashMap<usize, Arc<FenceObj>>,
    /// Packed pages per (process, is-MonitoredValue).
    cursors: HashMap<(ProcessId, u8), Cursor>,
    /// Every fence page (kept for the machine's life, see the module docs).
    pages: Vec<SysAlloc>,
    /// Local-memory fence pages (NF-06).
    local: LocalPages,
    work_all: bool,
    work: BTreeSet<usize>,
    legacy: HashMap<usize, Arc<LegacyObj>>,
    legacy_work: bool,
    /// Legacy monitored-fence scans done at DPC time (MF-04).
    pub legacy_scans: u64,
    /// DxgkDdiUpdateMonitoredValues calls.
    pub update_monitored_calls: u64,
    /// DxgkDdiUpdateCurrentValuesFromCpu calls.
    pub update_current_calls: u64,
    /// Fence resamples done at DPC time (one per fence per DPC).
    pub dpc_resamples: u64,
    /// Issue 5: every hardware queue of the adapter with its logs ([`crate::sync::fencelog`]).
    pub(crate) logs: Arc<crate::sync::fencelog::LogTable>,
    /// Issue 5: the log drain's counters.
    pub log_counters: crate::sync::fencelog::LogCounters,
    /// Issue 5: what the DPC's notifications ask the log drain to read.
    log_req: crate::sync::fencelog::DrainRequest,
    /// Issue 5: the OS's trace sink.
    pub(crate) trace: crate::sync::trace::SinkSlot,
    /// Issue 5: D3DKMT handle → the process's instance: how a log entry's `hNativeFence`
    /// resolves (the instance's process must be the queue's).
    kmt: HashMap<u32, NativeFence>,
    /// Issue 5: last GPU counter CalibrateGpuClock returned, and when it was called.
    pub(crate) last_gpu_clock: u64,
    pub(crate) last_calibration: Option<Instant>,
    /// Issue 5: the KMD handles the last `DxgkDdiUpdateNativeFenceLogs` named (tests).
    pub(crate) last_log_update: Vec<usize>,
}

impl FenceOs {
    fn stride(&self) -> u64 {
        self.caps.map_or(8, |c| u64::from(c.MonitoredValueStride))
    }

    fn alloc_slot(
        &mut self,
        a: &AdapterShared,
        process: ProcessId,
        kind: u8,
        shareable: bool,
    ) -> Option<Slot> {
        let stride = self.stride();
        let mem = a.device.memory();
        if shareable {
            let alloc = mem.alloc_system(PAGE, PAGE)?;
            self.pages.push(alloc.clone());
            return Some(Slot { alloc, off: 0 });
        }
        let key = (process, kind);
        if let Some(c) = self.cursors.get_mut(&key) {
            if c.next + 8 <= PAGE {
                let s = Slot {
                    alloc: c.alloc.clone(),
                    off: c.next,
                };
                c.next += stride;
                return Some(s);
            }
        }
        let alloc = mem.alloc_system(PAGE, PAGE)?;
        self.pages.push(alloc.clone());
        self.cursors.insert(
            key,
            Cursor {
                alloc: alloc.clone(),
                next: stride,
            },
        );
        Some(Slot { alloc, off: 0 })
    }

    /// A value for a fence of `fence_type` (NF-06): `INTRA_GPU` values in local memory, every
    /// other fence's in system memory.
    fn alloc_value(
        &mut self,
        a: &AdapterShared,
        process: ProcessId,
        kind: u8,
        shareable: bool,
        fence_type: D3DDDI_NATIVEFENCE_TYPE,
    ) -> Option<Value> {
        if fence_type == D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU {
            let stride = self.stride();
            // Kinds 0/1 for system pages, 3/4 for local ones (separate cursors anyway).
            self.local
                .alloc(a.device.memory(), process, kind, shareable, stride)
                .map(Value::Local)
        } else {
            self.alloc_slot(a, process, kind, shareable)
                .map(Value::System)
        }
    }

    fn release_value(&mut self, v: &Value) {
        if let Value::Local(l) = v {
            self.local.release(l);
        }
    }
}

/// VidMm's local-memory fence pages (NF-06): whole VRAM pages taken from the top of VRAM
/// down (at most the top 1/[`LOCAL_FENCE_VRAM_DIVISOR`]), packed per process like system
/// pages, returned when their last fence is destroyed.
#[derive(Debug, Default)]
struct LocalPages {
    /// Lowest page offset handed out so far (`None`: none yet).
    low: Option<u64>,
    free: Vec<u64>,
    /// Live values per page.
    live: HashMap<u64, u32>,
    /// Packed pages per (process, kind): (page, next offset).
    cursors: HashMap<(ProcessId, u8), (u64, u64)>,
}

impl LocalPages {
    fn page(&mut self, mem: &Memory) -> Option<u64> {
        if let Some(p) = self.free.pop() {
            return Some(p);
        }
        let size = mem.vram_size();
        let floor = size - size / LOCAL_FENCE_VRAM_DIVISOR;
        let p = self.low.unwrap_or(size).checked_sub(PAGE)?;
        if p < floor {
            return None;
        }
        self.low = Some(p);
        Some(p)
    }

    fn alloc(
        &mut self,
        mem: &Arc<Memory>,
        process: ProcessId,
        kind: u8,
        shareable: bool,
        stride: u64,
    ) -> Option<LocalSlot> {
        let key = (process, kind);
        let (page, off) = match self.cursors.get_mut(&key) {
            Some((page, next)) if !shareable && *next + 8 <= PAGE => {
                let off = *next;
                *next += stride;
                (*page, off)
            }
            _ => {
                let page = self.page(mem)?;
                // A reused page holds a destroyed fence's values.
                for w in mem
                    .vram_words()
                    .iter()
                    .skip(usize::try_from(page / 8).ok()?)
                    .take(usize::try_from(PAGE / 8).ok()?)
                {
                    w.store(0, Ordering::SeqCst);
                }
                if !shareable {
                    self.cursors.insert(key, (page, stride));
                }
                (page, 0)
            }
        };
        *self.live.entry(page).or_insert(0) += 1;
        Some(LocalSlot {
            mem: mem.clone(),
            page,
            off,
        })
    }

    fn release(&mut self, slot: &LocalSlot) {
        let Some(n) = self.live.get_mut(&slot.page) else {
            return;
        };
        *n = n.saturating_sub(1);
        if *n == 0 {
            self.live.remove(&slot.page);
            self.cursors.retain(|_, (p, _)| *p != slot.page);
            self.free.push(slot.page);
        }
    }
}

/// Checks the caps the OS relies on: `MapToGpuSystemProcess` (the OS maps the values into the
/// system process for the CMP and passes those VAs to create, NF-11) and a stride that is a
/// non-zero multiple of 8 (64-bit values, NF-05), at most a page.
pub fn validate_native_fence_caps(c: &DXGK_NATIVE_FENCE_CAPS) -> Result<(), String> {
    if c.MapToGpuSystemProcess == 0 {
        return Err("NATIVE_FENCE_CAPS.MapToGpuSystemProcess is not set".into());
    }
    let s = u64::from(c.MonitoredValueStride);
    if s == 0 || !s.is_multiple_of(8) || s > PAGE {
        return Err(format!(
            "NATIVE_FENCE_CAPS.MonitoredValueStride = {s} (must be a non-zero multiple of 8)"
        ));
    }
    Ok(())
}

/// `DXGKQAITYPE_NATIVE_FENCE_CAPS` (PASSIVE), at adapter start.
pub(crate) fn query_caps(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
) -> Result<DXGK_NATIVE_FENCE_CAPS, SimError> {
    let q = t
        .DxgkDdiQueryAdapterInfo
        .ok_or_else(|| SimError::Simulation("no QueryAdapterInfo".into()))?;
    let mut caps = DXGK_NATIVE_FENCE_CAPS {
        MonitoredValueStride: 0xCDCD_CDCD,
        MapToGpuSystemProcess: 0xCD,
        MinimumAddress: 0xCDCD_CDCD_CDCD_CDCD,
        MaximumAddress: 0xCDCD_CDCD_CDCD_CDCD,
        Reserved: [0xCD; 28],
    };
    let args = DXGKARG_QUERYADAPTERINFO {
        Type: DXGKQAITYPE_NATIVE_FENCE_CAPS,
        pInputData: std::ptr::null_mut(),
        InputDataSize: 0,
        pOutputData: (&mut caps as *mut DXGK_NATIVE_FENCE_CAPS).cast(),
        OutputDataSize: std::mem::size_of::<DXGK_NATIVE_FENCE_CAPS>() as u32,
        Flags: DXGK_QUERYADAPTERINFOFLAGS::default(),
        hKmdProcessHandle: std::ptr::null_mut(),
    };
    let ctx = a.context();
    let status = ddi::call(
        &a,
        Routine::DxgkDdiQueryAdapterInfo,
        q as usize,
        At::Caller,
        || {
            // SAFETY: the driver's QueryAdapterInfo with its context and an output buffer of
            // the declared size.
            unsafe { q(ctx, &args) }
        },
    )?;
    check_status(status)?;
    Ok(caps)
}

/// `DxgkDdiUpdateMonitoredValues` for `(global, value, MonitoredValue kernel VA)` entries, at
/// device IRQL under the adapter's interrupt lock (synchronised with the ISR, NF-07).
fn update_monitored(
    a: &AdapterShared,
    entries: &[(usize, u64, *mut c_void)],
) -> Result<(), SimError> {
    let f = table(a)?
        .DxgkDdiUpdateMonitoredValues
        .ok_or_else(|| missing("DxgkDdiUpdateMonitoredValues"))?;
    let mut handles: Vec<HANDLE> = entries.iter().map(|e| e.0 as HANDLE).collect();
    let mut values: Vec<u64> = entries.iter().map(|e| e.1).collect();
    let mut vas: Vec<*mut c_void> = entries.iter().map(|e| e.2).collect();
    let args = DXGKARG_UPDATEMONITOREDVALUES {
        NativeFenceArray: handles.as_mut_ptr(),
        UpdatedValueArray: values.as_mut_ptr(),
        MonitoredValueKernelCpuVa: vas.as_mut_ptr(),
        NumFences: entries.len() as u32,
        Flags: DXGKARG_UPDATEMONITOREDVALUES_FLAGS::default(),
        Reserved: [0; 28],
    };
    let status = {
        let _guard = lock(&a.interrupt_lock);
        if !a.connected.load(Ordering::Acquire) {
            return Err(SimError::Simulation(format!(
                "adapter {}'s interrupt is not connected: no UpdateMonitoredValues",
                a.index
            )));
        }
        let _inside = a.enter_interrupt_lock();
        ddi::call(
            a,
            Routine::DxgkDdiUpdateMonitoredValues,
            f as usize,
            At::Level(Irql::Device),
            || {
                // SAFETY: the driver's DDI with three arrays of NumFences entries that live
                // across the call; the MonitoredValue addresses are OS fence storage.
                unsafe { f(&args) }
            },
        )?
    };
    lock(&a.fence_os).update_monitored_calls += 1;
    check_status(status)
}

/// `DxgkDdiUpdateCurrentValuesFromCpu` at DISPATCH_LEVEL.
fn update_current(
    a: &AdapterShared,
    entries: &[(usize, u64, *mut c_void)],
    notification_only: bool,
) -> Result<(), SimError> {
    let f = table(a)?
        .DxgkDdiUpdateCurrentValuesFromCpu
        .ok_or_else(|| missing("DxgkDdiUpdateCurrentValuesFromCpu"))?;
    let mut handles: Vec<HANDLE> = entries.iter().map(|e| e.0 as HANDLE).collect();
    let mut values: Vec<u64> = entries.iter().map(|e| e.1).collect();
    let mut vas: Vec<*mut c_void> = entries.iter().map(|e| e.2).collect();
    type Flags = DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS;
    let flags = if notification_only {
        Flags::from_value(Flags::mask(Flags::NotificationOnly))
    } else {
        Flags::default()
    };
    let args = DXGKARG_UPDATECURRENTVALUESFROMCPU {
        NativeFenceArray: handles.as_mut_ptr(),
        UpdatedValueArray: values.as_mut_ptr(),
        CurrentValueKernelCpuVa: vas.as_mut_ptr(),
        NumFences: entries.len() as u32,
        Flags: flags,
        Reserved: [0; 28],
    };
    let status = {
        ddi::call(
            a,
            Routine::DxgkDdiUpdateCurrentValuesFromCpu,
            f as usize,
            At::Level(Irql::Dispatch),
            || {
                // SAFETY: as for update_monitored.
                unsafe { f(&args) }
            },
        )?
    };
    lock(&a.fence_os).update_current_calls += 1;
    check_status(status)
}

/// Releases satisfied waits and brings MonitoredValue to what the pending waits need,
/// calling `DxgkDdiUpdateMonitoredValues` whenever it changes and resampling CurrentValue
/// after each call (NF-02, NF-04, NF-07).
fn settle(obj: &FenceObj) -> Result<(), SimError> {
    let Some(a) = obj.adapter.upgrade() else {
        return Ok(());
    };
    let _s = lock(&obj.settle_lock);
    loop {
        match resample(obj) {
            None => return Ok(()),
            Some(v) => update_monitored(&a, &[(obj.global, v, obj.mv.kva())])?,
        }
    }
}

/// Takes the waits `value` satisfies out of `waiters` and signals their events; the one CPU
/// wait rule for native and monitored fences alike (MF-04: satisfied at `>=`).
fn release_satisfied(waiters: &mut Vec<Waiter>, value: u64) -> Vec<Waiter> {
    let (done, pending): (Vec<Waiter>, Vec<Waiter>) = std::mem::take(waiters)
        .into_iter()
        .partition(|w| rvgpu_hw::fence::wait_satisfied(value, w.value));
    *waiters = pending;
    let via = VIA.with(|c| c.get());
    for w in &done {
        *lock(&w.event.0.via) = Some(via);
        w.event.set(WaitOutcome::Satisfied);
    }
    done
}

/// One resample of `obj` (its settle lock held): releases satisfied waits and returns the new
/// MonitoredValue the OS must give the driver, if it changed (recorded as given).
fn resample(obj: &FenceObj) -> Option<u64> {
    let mut st = lock(&obj.st);
    if st.destroyed {
        return None;
    }
    let done = release_satisfied(&mut st.waiters, obj.cv.load());
    if !done.is_empty() {
        trace_released(obj, &st, &done);
    }
    let desired = if st.hold_zero {
        0
    } else {
        st.waiters
            .iter()
            .map(|w| w.value)
            .min()
            .map_or(u64::MAX, |v| v.saturating_sub(1))
    };
    if desired == st.mv_os {
        None
    } else {
        st.mv_os = desired;
        Some(desired)
    }
}

/// Reports released waits to the adapter's trace sink (issue 5).
fn trace_released(obj: &FenceObj, st: &ObjState, done: &[Waiter]) {
    let Some(a) = obj.adapter.upgrade() else {
        return;
    };
    let Some(sink) = lock(&a.fence_os).trace.0.clone() else {
        return;
    };
    let (fence_kmt, process) = st.kmt_handles.first().copied().unwrap_or((0, obj.creator));
    let via = VIA.with(|c| c.get());
    let now = crate::sync::trace::qpc();
    for w in done {
        sink.event(&crate::sync::trace::TraceEvent::WaitReleased {
            adapter: obj.adapter_index,
            fence_kmt,
            process,
            value: w.value,
            via,
            qpc: now,
        });
    }
}

/// Issue 5: a SIGNAL_EXECUTED log entry proves the fence reached `value` (fence values only
/// grow): releases the waits with target `<= value`, attributed to the entry.
fn release_from_log(obj: &FenceObj, value: u64, via: ReleaseVia) {
    let _v = ViaScope::enter(via);
    let mut st = lock(&obj.st);
    if st.destroyed {
        return;
    }
    let done = release_satisfied(&mut st.waiters, value);
    if !done.is_empty() {
        trace_released(obj, &st, &done);
    }
}

/// [`settle`] for several fences of adapter `a` at once, as VidSch does at DPC time: one
/// `DxgkDdiUpdateMonitoredValues` call names every fence whose MonitoredValue changes, then
/// all are resampled again. Settle locks are taken in handle order (everyone else holds at
/// most one), so this cannot deadlock.
fn settle_batch(a: &AdapterShared, objs: &mut [Arc<FenceObj>]) -> Result<(), SimError> {
    objs.sort_by_key(|o| o.global);
    let _guards: Vec<_> = objs.iter().map(|o| lock(&o.settle_lock)).collect();
    loop {
        let updates: Vec<(usize, u64, *mut c_void)> = objs
            .iter()
            .filter_map(|o| resample(o).map(|v| (o.global, v, o.mv.kva())))
            .collect();
        if updates.is_empty() {
            return Ok(());
        }
        for chunk in updates.chunks(MAX_FENCES_PER_UPDATE) {
            update_monitored(a, chunk)?;
        }
    }
}

/// Most fences the OS names in one `DxgkDdiUpdateMonitoredValues` call.
pub const MAX_FENCES_PER_UPDATE: usize = 256;

/// Tells the other adapters of a cross-adapter fence that its CurrentValue changed
/// (`NotificationOnly`, NF-16), then settles their waits.
fn propagate(obj: &FenceObj) -> Result<(), SimError> {
    let (peers, legacy, cv) = {
        let mut st = lock(&obj.st);
        let cv = obj.cv.load();
        let alone = st.peers.is_empty() && st.legacy_peers.is_empty();
        if alone || st.destroyed || cv == st.last_propagated {
            return Ok(());
        }
        st.last_propagated = cv;
        (st.peers.clone(), st.legacy_peers.clone(), cv)
    };
    // An adapter without native fences observes the new value and scans its monitored-fence
    // waits (NF-18 scenario 2a).
    for l in legacy {
        l.release();
    }
    notify_natives(&peers, cv)
}

/// `NotificationOnly` to each native instance in `peers`, then settles its waits (NF-16).
fn notify_natives(peers: &[Arc<FenceObj>], cv: u64) -> Result<(), SimError> {
    for p in peers {
        let Some(b) = p.adapter.upgrade() else {
            continue;
        };
        {
            let _s = lock(&p.settle_lock);
            let mut st = lock(&p.st);
            if st.destroyed {
                continue;
            }
            st.last_propagated = cv;
            drop(st);
            update_current(&b, &[(p.global, cv, p.cv.kva())], true)?;
        }
        settle(p)?;
    }
    Ok(())
}

/// Records the fence work a DPC's notifications ask for (called from `DxgkCbNotifyDpc`).
pub(crate) fn note_notifications<'a>(
    a: &AdapterShared,
    ns: impl Iterator<Item = &'a Notification>,
) {
    let mut os = lock(&a.fence_os);
    for n in ns {
        match n {
            Notification::NativeFenceSignaled {
                node,
                optimized: true,
                hw_queue,
                evaluate_legacy,
                ..
            } => {
                // LOG-08: with the optimized cap the OS reads hHWQueue, not the array.
                match hw_queue {
                    Some(h) => {
                        os.log_req.named.insert(*h);
                    }
                    None if *evaluate_legacy => {
                        // NULL + EvaluateLegacyMonitoredFences: every waiter (nflags); the
                        // engine's logs are read too, for the timeline.
                        os.work_all = true;
                        os.legacy_work = true;
                        os.log_req.engines.insert(*node);
                    }
                    None => {
                        os.log_req.engines.insert(*node);
                    }
                }
            }
            Notification::NativeFenceSignaled {
                node,
                fences,
                evaluate_legacy,
                ..
            } => match fences {
                None => {
                    os.work_all = true;
                    // NF-14: NULL with EvaluateLegacyMonitoredFences = 1 asks for every wait,
                    // legacy monitored-fence waits included.
                    os.legacy_work |= *evaluate_legacy;
                    // Issue 5 without the optimized cap: the engine's logs are read for the
                    // timeline (releases from the scan or the logs, whichever comes first).
                    os.log_req.engines.insert(*node);
                }
                Some(v) => {
                    os.work.extend(v.iter().copied());
                    os.log_req.engines.insert(*node);
                }
            },
            Notification::Other { interrupt_type }
                if *interrupt_type
                    == rvgpu_ddi::interrupt::DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED =>
            {
                os.legacy_work = true;
            }
            _ => {}
        }
    }
}

/// VidSch's DPC-time fence processing, after the driver's DPC returned (DISPATCH_LEVEL):
/// resample the reported fences (every fence of the adapter for a NULL report), release
/// satisfied waits, re-arm MonitoredValue (NF-04), propagate cross-adapter values (NF-16).
pub(crate) fn process_dpc_work(a: &AdapterShared) {
    let legacy: Vec<Arc<LegacyObj>> = {
        let mut os = lock(&a.fence_os);
        if std::mem::take(&mut os.legacy_work) {
            os.legacy_scans += 1;
            os.legacy.values().cloned().collect()
        } else {
            Vec::new()
        }
    };
    for l in legacy {
        l.release();
    }
    // Issue 5: the log drain (docs/logs.md §4.2), releases from signal entries first.
    let req = std::mem::take(&mut lock(&a.fence_os).log_req);
    let mut from_logs: Vec<Arc<FenceObj>> = Vec::new();
    let mut log_scan = false;
    if !req.is_empty() {
        match log_drain(a, &req, &[]) {
            Ok((objs, scan)) => {
                from_logs = objs;
                log_scan = scan;
            }
            Err(_) => return,
        }
    }
    let objs: (Vec<Arc<FenceObj>>, bool) = {
        let mut os = lock(&a.fence_os);
        let all = std::mem::take(&mut os.work_all) || log_scan;
        let set = std::mem::take(&mut os.work);
        let v: Vec<Arc<FenceObj>> = if all {
            os.objs.values().cloned().collect()
        } else {
            set.iter().filter_map(|h| os.objs.get(h).cloned()).collect()
        };
        os.dpc_resamples += v.len() as u64;
        (v, all)
    };
    let (mut objs, all) = objs;
    for o in from_logs {
        if !objs.iter().any(|x| Arc::ptr_eq(x, &o)) {
            objs.push(o);
        }
    }
    let _via = ViaScope::enter(if all {
        ReleaseVia::Scan
    } else {
        ReleaseVia::Resample
    });
    let r = settle_batch(a, &mut objs).and_then(|()| objs.iter().try_for_each(|o| propagate(o)));
    if let Err(e) = r {
        // A DPC that runs while StopDevice disconnects the interrupt cannot update
        // MonitoredValue any more; that is the stop, not a driver fault.
        if !a.state.is_halted() && a.connected.load(Ordering::Acquire) {
            a.state.raise_sim_error(format!(
                "DPC-time processing of native fences on adapter {}: {e}",
                a.index
            ));
        }
    }
}

/// Runs the log drain and applies its releases: returns the fences whose waits changed (to be
/// re-armed) and whether a fallback scan of every fence is due.
pub(crate) fn log_drain(
    a: &AdapterShared,
    req: &crate::sync::fencelog::DrainRequest,
    forced: &[Arc<crate::sync::fencelog::QueueLog>],
) -> Result<(Vec<Arc<FenceObj>>, bool), SimError> {
    let table = lock(&a.fence_os).logs.clone();
    let _serial = lock(&table.drain_lock);
    log_drain_locked(a, req, forced)
}

/// [`log_drain`] with the adapter's drain lock held by the caller.
pub(crate) fn log_drain_locked(
    a: &AdapterShared,
    req: &crate::sync::fencelog::DrainRequest,
    forced: &[Arc<crate::sync::fencelog::QueueLog>],
) -> Result<(Vec<Arc<FenceObj>>, bool), SimError> {
    maybe_calibrate(a);
    let d = crate::sync::fencelog::drain(a, req, forced)?;
    let mut scan = d.scan_all;
    let mut touched: Vec<Arc<FenceObj>> = Vec::new();
    for s in &d.signals {
        let obj = {
            let os = lock(&a.fence_os);
            os.kmt
                .get(&s.handle)
                .filter(|f| f.process == s.process)
                .map(|f| f.obj.clone())
        };
        match obj {
            Some(o) => {
                // LOG-04: the value is written before its entry, so an entry can never be
                // ahead of the fence (values only grow).
                let cv = o.cv.load();
                if cv < s.value {
                    let m = format!(
                        "LOG-04: queue id {} signal entry {} says fence {:#x} = {} but its \
                         CurrentValue is {cv} (entry published before the value)",
                        s.queue_id, s.index, s.handle, s.value
                    );
                    a.state.raise_sim_error(m.clone());
                    return Err(SimError::Simulation(m));
                }
                release_from_log(
                    &o,
                    s.value,
                    ReleaseVia::Log {
                        queue_id: s.queue_id,
                        kind: crate::sync::trace::LogKind::Signal,
                        index: s.index,
                    },
                );
                if !touched.iter().any(|x| Arc::ptr_eq(x, &o)) {
                    touched.push(o);
                }
            }
            // A handle that does not resolve (a fence created without a D3DKMT handle, or a
            // UMD payload error): fall back to the scan.
            None => scan = true,
        }
    }
    if scan && !d.scan_all {
        lock(&a.fence_os).log_counters.log_fallback_scans += 1;
    }
    Ok((touched, scan))
}

/// Calibrates the GPU clock of every node when due (§4.6): every drain in step mode (the GPU
/// clock advances per step there), at most every 30 ms of real time in threaded mode.
fn maybe_calibrate(a: &AdapterShared) {
    let due = {
        let os = lock(&a.fence_os);
        if os.trace.0.is_none() {
            false
        } else {
            match (a.device.config().mode, os.last_calibration) {
                (_, None) => true,
                (rvgpu_device::Mode::Step, _) => true,
                (_, Some(t)) => t.elapsed() >= Duration::from_millis(30),
            }
        }
    };
    if !due
        || a.table
            .get()
            .and_then(|t| t.DxgkDdiCalibrateGpuClock)
            .is_none()
    {
        return;
    }
    let nodes = lock(&a.caps).map_or(1, |c| c.GpuEngineTopology.NbAsymetricProcessingNodes);
    for node in 0..nodes {
        if crate::sync::fencelog::calibrate(a, node).is_err() {
            return;
        }
    }
}

/// `D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU` fences have no CPU wait or signal: the OS refuses both
/// (Microsoft's D3DDDI_NATIVEFENCE_TYPE and D3DKMTCreateNativeFence references: no UM/KM CPU
/// access to their values, which live in local memory, NF-06).
fn no_cpu_access(fence: &NativeFence, what: &str) -> Result<(), SimError> {
    if fence.obj.fence_type == D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU {
        return Err(SimError::Simulation(format!(
            "NF-06: CPU {what} on a D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU fence (no CPU access)"
        )));
    }
    Ok(())
}

fn parse_pdd(b: &[u8; D3DDDI_NATIVE_FENCE_PDD_SIZE]) -> NativeFencePdd {
    let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let u64_at = |o: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[o..o + 8]);
        u64::from_le_bytes(w)
    };
    NativeFencePdd {
        magic: u32_at(0),
        version: u32_at(4),
        report_tag: u64_at(8),
        current_value_gpu: u64_at(16),
        monitored_value_gpu: u64_at(24),
        reserved: [u64_at(32), u64_at(40), u64_at(48), u64_at(56)],
    }
}

impl Machine {
    fn fence_adapter(&self, i: usize) -> Result<Arc<AdapterShared>, SimError> {
        let a = self.adapter_shared(i)?.clone();
        if *lock(&a.life) != Life::Started {
            return Err(SimError::Simulation(format!("adapter {i} is not started")));
        }
        if lock(&a.fence_os).caps.is_none() {
            return Err(SimError::Simulation(format!(
                "adapter {i} has no native fences (NativeGpuFence not advertised)"
            )));
        }
        Ok(a)
    }

    /// Dxgkrnl's teardown of adapter `i`'s native fences before the device goes away: every
    /// open instance is closed and every fence destroyed (NF-13 order). Errors are returned
    /// after trying them all.
    pub(crate) fn destroy_all_native_fences(&self, i: usize) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?.clone();
        let objs: Vec<Arc<FenceObj>> = lock(&a.fence_os).objs.values().cloned().collect();
        let mut result = Ok(());
        for obj in objs {
            let instances: Vec<(usize, ProcessId)> = lock(&obj.st)
                .instances
                .iter()
                .map(|(l, p)| (*l, *p))
                .collect();
            for (local, process) in instances {
                let f = NativeFence {
                    obj: obj.clone(),
                    process,
                    local,
                };
                if let Err(e) = self.destroy_native_fence(&f) {
                    result = Err(e);
                }
            }
        }
        result
    }

    /// Local-memory (VRAM) fence pages in use on adapter `i` (NF-06).
    pub fn native_fence_local_pages(&self, i: usize) -> usize {
        self.adapter_shared(i)
            .map_or(0, |a| lock(&a.fence_os).local.live.len())
    }

    /// The native-fence caps adapter `i` answered at start.
    pub fn native_fence_caps(&self, i: usize) -> Option<DXGK_NATIVE_FENCE_CAPS> {
        self.adapter_shared(i)
            .ok()
            .and_then(|a| lock(&a.fence_os).caps)
    }

    /// (UpdateMonitoredValues calls, UpdateCurrentValuesFromCpu calls, DPC-time resamples)
    /// on adapter `i`.
    pub fn native_fence_counts(&self, i: usize) -> (u64, u64, u64) {
        self.adapter_shared(i).map_or((0, 0, 0), |a| {
            let os = lock(&a.fence_os);
            (
                os.update_monitored_calls,
                os.update_current_calls,
                os.dpc_resamples,
            )
        })
    }

    /// Creates a native fence on adapter `i` for `process` (NF-05, NF-11, NF-12, NF-13):
    /// storage, `DxgkDdiCreateNativeFence`, then `DxgkDdiOpenNativeFence` for the creator.
    pub fn create_native_fence(
        &self,
        i: usize,
        process: ProcessId,
        desc: NativeFenceDesc,
    ) -> Result<NativeFence, SimError> {
        let a = self.fence_adapter(i)?;
        self.create_on(&a, process, desc, None)
    }

    fn create_on(
        &self,
        a: &Arc<AdapterShared>,
        process: ProcessId,
        desc: NativeFenceDesc,
        shared_cv: Option<Slot>,
    ) -> Result<NativeFence, SimError> {
        let t = table(a)?;
        let create = t
            .DxgkDdiCreateNativeFence
            .ok_or_else(|| missing("DxgkDdiCreateNativeFence"))?;
        let open = t
            .DxgkDdiOpenNativeFence
            .ok_or_else(|| missing("DxgkDdiOpenNativeFence"))?;
        let cross = shared_cv.is_some();
        if cross && desc.fence_type != D3DDDI_NATIVEFENCE_TYPE_DEFAULT {
            return Err(SimError::Simulation(
                "NF-16: a cross-adapter fence is D3DDDI_NATIVEFENCE_TYPE_DEFAULT".into(),
            ));
        }
        let (cv, mv) = {
            let mut os = lock(&a.fence_os);
            let cv = match shared_cv {
                Some(s) => Some(Value::System(s)),
                None => os.alloc_value(a, process, KIND_CURRENT, desc.shareable, desc.fence_type),
            };
            let mv = os.alloc_value(
                a,
                process,
                KIND_MONITORED,
                desc.shareable || cross,
                desc.fence_type,
            );
            match (cv, mv) {
                (Some(c), Some(m)) => (c, m),
                (c, m) => {
                    for v in c.iter().chain(m.iter()) {
                        os.release_value(v);
                    }
                    return Err(SimError::Simulation(
                        "out of memory for fence storage".into(),
                    ));
                }
            }
        };
        if !cross {
            cv.store(desc.initial);
        }
        let mv_init = if cross { 0 } else { u64::MAX };
        mv.store(mv_init);
        let global = next_handle();
        let mut args = DXGKARG_CREATENATIVEFENCE {
            hGlobalNativeFence: global as HANDLE,
            Type: desc.fence_type,
            CurrentValueSystemProcessGpuVa: cv.gpu(),
            MonitoredValueSystemProcessGpuVa: mv.gpu(),
            pPrivateDriverData: [0; D3DDDI_NATIVE_FENCE_PDD_SIZE],
            Flags: DXGKARG_CREATENATIVEFENCE_FLAGS::default(),
            Reserved: [0; 32],
        };
        // Registered before the call: from the moment the driver knows the handle, a report
        // naming it is legitimate.
        lock(&a.native_fences).insert(global);
        let ctx = a.context();
        let status = ddi::call(
            &a,
            Routine::DxgkDdiCreateNativeFence,
            create as usize,
            At::Caller,
            || {
                // SAFETY: the driver's DDI with its context and a valid argument block.
                unsafe { create(ctx, &mut args) }
            },
        );
        if let Err(e) = status.and_then(check_status) {
            lock(&a.native_fences).remove(&global);
            let mut os = lock(&a.fence_os);
            os.release_value(&cv);
            os.release_value(&mv);
            return Err(e);
        }
        let pdd = parse_pdd(&args.pPrivateDriverData);
        let obj = Arc::new(FenceObj {
            adapter: Arc::downgrade(a),
            adapter_index: a.index,
            global,
            creator: process,
            shareable: desc.shareable || cross,
            fence_type: desc.fence_type,
            cv,
            mv,
            pdd,
            settle_lock: Mutex::new(()),
            st: Mutex::new(ObjState {
                instances: BTreeMap::new(),
                destroyed: false,
                waiters: Vec::new(),
                mv_os: mv_init,
                hold_zero: cross,
                kmt_handles: Vec::new(),
                peers: Vec::new(),
                legacy_peers: Vec::new(),
                last_propagated: 0,
            }),
        });
        let bad = if pdd.magic != PDD_MAGIC || pdd.version != NATIVE_FENCE_PDD_VERSION {
            Some(format!(
                "CreateNativeFence returned private data with magic {:#x} version {}",
                pdd.magic, pdd.version
            ))
        } else if pdd.current_value_gpu != obj.cv.gpu() || pdd.monitored_value_gpu != obj.mv.gpu() {
            Some("CreateNativeFence's private data names other fence addresses".to_string())
        } else {
            None
        };
        if let Some(msg) = bad {
            let _ = self.destroy_global(a, &obj);
            return Err(SimError::Simulation(msg));
        }
        let local = next_handle();
        let mut oargs = DXGKARG_OPENNATIVEFENCE {
            hGlobalNativeFence: global as HANDLE,
            hLocalNativeFence: local as HANDLE,
            // No DxgkDdiCreateDevice in the simulation yet: no device handle to pass.
            hDevice: std::ptr::null_mut(),
            CurrentValueGpuVa: obj.cv.gpu(),
            MonitoredValueGpuVa: obj.mv.gpu(),
            Flags: DXGK_OPENNATIVEFENCE_FLAGS::default(),
            pPrivateDriverData: [0; D3DDDI_NATIVE_FENCE_PDD_SIZE],
            Reserved: [0; 32],
        };
        let r = ddi::call(
            &a,
            Routine::DxgkDdiOpenNativeFence,
            open as usize,
            At::Caller,
            || {
                // SAFETY: the driver's DDI with its context and a valid argument block.
                unsafe { open(ctx, &mut oargs) }
            },
        )
        .and_then(check_status);
        if let Err(e) = r {
            let _ = self.destroy_global(a, &obj);
            return Err(e);
        }
        lock(&obj.st).instances.insert(local, process);
        lock(&a.fence_os).objs.insert(global, obj.clone());
        Ok(NativeFence {
            obj,
            process,
            local,
        })
    }

    /// `DxgkDdiDestroyNativeFence` and the OS bookkeeping after it.
    fn destroy_global(&self, a: &AdapterShared, obj: &FenceObj) -> Result<(), SimError> {
        let destroy = table(a)?
            .DxgkDdiDestroyNativeFence
            .ok_or_else(|| missing("DxgkDdiDestroyNativeFence"))?;
        let mut args = DXGKARG_DESTROYNATIVEFENCE {
            hGlobalNativeFence: obj.global as HANDLE,
            Flags: DXGK_DESTROYNATIVEFENCE_FLAGS::default(),
            Reserved: [0; 32],
        };
        let status = ddi::call(
            &a,
            Routine::DxgkDdiDestroyNativeFence,
            destroy as usize,
            At::Caller,
            || {
                // SAFETY: the driver's DDI with a valid argument block.
                unsafe { destroy(&mut args) }
            },
        )?;
        check_status(status)?;
        // The driver guarantees its ISR can no longer name it (NF-14).
        lock(&a.native_fences).remove(&obj.global);
        let mut os = lock(&a.fence_os);
        os.objs.remove(&obj.global);
        // Local pages go back with the fence (NF-06); system pages stay (module docs).
        os.release_value(&obj.cv);
        os.release_value(&obj.mv);
        Ok(())
    }

    /// Opens `fence` for `process` on the same adapter (`DxgkDdiOpenNativeFence`, NF-13).
    /// Another process may open only a shareable fence.
    pub fn open_native_fence(
        &self,
        fence: &NativeFence,
        process: ProcessId,
    ) -> Result<NativeFence, SimError> {
        let a = self.fence_adapter(fence.adapter())?;
        if process != fence.obj.creator && !fence.obj.shareable {
            return Err(SimError::Simulation(
                "a non-shareable fence cannot be opened by another process".into(),
            ));
        }
        let open = table(&a)?
            .DxgkDdiOpenNativeFence
            .ok_or_else(|| missing("DxgkDdiOpenNativeFence"))?;
        let _s = lock(&fence.obj.settle_lock);
        if lock(&fence.obj.st).destroyed {
            return Err(SimError::Simulation("the fence was destroyed".into()));
        }
        let local = next_handle();
        let mut args = DXGKARG_OPENNATIVEFENCE {
            hGlobalNativeFence: fence.obj.global as HANDLE,
            hLocalNativeFence: local as HANDLE,
            hDevice: std::ptr::null_mut(),
            CurrentValueGpuVa: fence.obj.cv.gpu(),
            MonitoredValueGpuVa: fence.obj.mv.gpu(),
            Flags: DXGK_OPENNATIVEFENCE_FLAGS::default(),
            pPrivateDriverData: [0; D3DDDI_NATIVE_FENCE_PDD_SIZE],
            Reserved: [0; 32],
        };
        let ctx = a.context();
        let status = ddi::call(
            &a,
            Routine::DxgkDdiOpenNativeFence,
            open as usize,
            At::Caller,
            || {
                // SAFETY: the driver's DDI with its context and a valid argument block.
                unsafe { open(ctx, &mut args) }
            },
        )?;
        check_status(status)?;
        lock(&fence.obj.st).instances.insert(local, process);
        Ok(NativeFence {
            obj: fence.obj.clone(),
            process,
            local,
        })
    }

    /// Opens a shareable `D3DDDI_NATIVEFENCE_TYPE_DEFAULT` fence on another adapter (NF-16):
    /// the OS creates the fence there too (its own global handle and MonitoredValue, the same
    /// CurrentValue in system memory), and holds MonitoredValue at 0 on every adapter for the
    /// fence's life, so every signal interrupts and the OS can propagate it.
    pub fn open_native_fence_cross_adapter(
        &self,
        fence: &NativeFence,
        adapter: usize,
        process: ProcessId,
    ) -> Result<NativeFence, SimError> {
        if adapter == fence.adapter() {
            return Err(SimError::Simulation(
                "same adapter: use open_native_fence".into(),
            ));
        }
        if !fence.obj.shareable || fence.obj.fence_type != D3DDDI_NATIVEFENCE_TYPE_DEFAULT {
            return Err(SimError::Simulation(
                "cross-adapter fences are shareable D3DDDI_NATIVEFENCE_TYPE_DEFAULT fences (NF-16)"
                    .into(),
            ));
        }
        let b = self.fence_adapter(adapter)?;
        let nb = self.create_on(
            &b,
            process,
            NativeFenceDesc {
                initial: 0,
                shareable: true,
                fence_type: D3DDDI_NATIVEFENCE_TYPE_DEFAULT,
            },
            Some(fence.obj.cv.system("a cross-adapter fence")?.clone()),
        )?;
        // Link every instance of the fence with the new one, and hold the first adapter's
        // MonitoredValue at 0 from now on.
        let others: Vec<Arc<FenceObj>> = {
            let st = lock(&fence.obj.st);
            let mut v = st.peers.clone();
            v.push(fence.obj.clone());
            v
        };
        let cv = fence.obj.cv.load();
        for o in &others {
            let mut st = lock(&o.st);
            st.peers.push(nb.obj.clone());
            st.hold_zero = true;
            st.last_propagated = cv;
        }
        {
            let mut st = lock(&nb.obj.st);
            st.peers = others.clone();
            st.last_propagated = cv;
        }
        for o in &others {
            settle(o)?;
        }
        Ok(nb)
    }

    /// A process destroys its instance (NF-13): `DxgkDdiCloseNativeFence` for its local
    /// handle; if it was the last instance, then `DxgkDdiDestroyNativeFence` for the global
    /// handle. Pending CPU waits of a destroyed fence end [`WaitOutcome::Abandoned`]. An
    /// instance destroyed twice is refused by the OS (the driver never sees it).
    pub fn destroy_native_fence(&self, fence: &NativeFence) -> Result<(), SimError> {
        let a = self.adapter_shared(fence.adapter())?.clone();
        let close = table(&a)?
            .DxgkDdiCloseNativeFence
            .ok_or_else(|| missing("DxgkDdiCloseNativeFence"))?;
        let obj = &fence.obj;
        let _s = lock(&obj.settle_lock);
        if !lock(&obj.st).instances.contains_key(&fence.local) {
            return Err(SimError::Simulation(format!(
                "local native fence handle {:#x} is not open",
                fence.local
            )));
        }
        let mut args = DXGKARG_CLOSENATIVEFENCE {
            hLocalNativeFence: fence.local as HANDLE,
            Flags: DXGK_CLOSENATIVEFENCE_FLAGS::default(),
            Reserved: [0; 32],
        };
        let ctx = a.context();
        let status = ddi::call(
            &a,
            Routine::DxgkDdiCloseNativeFence,
            close as usize,
            At::Caller,
            || {
                // SAFETY: the driver's DDI with its context and a valid argument block.
                unsafe { close(ctx, &mut args) }
            },
        )?;
        check_status(status)?;
        let last = {
            let mut st = lock(&obj.st);
            st.instances.remove(&fence.local);
            st.instances.is_empty()
        };
        if !last {
            return Ok(());
        }
        self.destroy_global(&a, obj)?;
        let (waiters, peers, legacy) = {
            let mut st = lock(&obj.st);
            st.destroyed = true;
            (
                std::mem::take(&mut st.waiters),
                std::mem::take(&mut st.peers),
                std::mem::take(&mut st.legacy_peers),
            )
        };
        for w in waiters {
            w.event.set(WaitOutcome::Abandoned);
        }
        for p in peers {
            lock(&p.st).peers.retain(|q| !Arc::ptr_eq(q, obj));
        }
        for l in legacy {
            lock(&l.st).native_peers.retain(|q| !Arc::ptr_eq(q, obj));
        }
        Ok(())
    }

    /// Raw `DxgkDdiCreateNativeFence` on adapter `i` with storage at the given GPU addresses,
    /// bypassing the OS's placement (tests of the driver's NF-06 check). A fence the driver
    /// accepts is destroyed again at once. Returns the driver's create status.
    pub fn ddi_create_native_fence_at(
        &self,
        i: usize,
        fence_type: D3DDDI_NATIVEFENCE_TYPE,
        current_gpu: u64,
        monitored_gpu: u64,
    ) -> Result<NTSTATUS, SimError> {
        let a = self.fence_adapter(i)?;
        let create = table(&a)?
            .DxgkDdiCreateNativeFence
            .ok_or_else(|| missing("DxgkDdiCreateNativeFence"))?;
        let global = next_handle();
        let mut args = DXGKARG_CREATENATIVEFENCE {
            hGlobalNativeFence: global as HANDLE,
            Type: fence_type,
            CurrentValueSystemProcessGpuVa: current_gpu,
            MonitoredValueSystemProcessGpuVa: monitored_gpu,
            pPrivateDriverData: [0; D3DDDI_NATIVE_FENCE_PDD_SIZE],
            Flags: DXGKARG_CREATENATIVEFENCE_FLAGS::default(),
            Reserved: [0; 32],
        };
        lock(&a.native_fences).insert(global);
        let ctx = a.context();
        let status = ddi::call(
            &a,
            Routine::DxgkDdiCreateNativeFence,
            create as usize,
            At::Caller,
            || {
                // SAFETY: the driver's DDI with its context and a valid argument block.
                unsafe { create(ctx, &mut args) }
            },
        );
        if matches!(status, Ok(s) if s >= 0) {
            let _ = self.ddi_destroy_native_fence(global);
        }
        lock(&a.native_fences).remove(&global);
        status
    }

    /// Raw `DxgkDdiDestroyNativeFence` for a global handle, bypassing the OS bookkeeping (tests
    /// of the driver's refusal of out-of-order calls). Returns the driver's status.
    pub fn ddi_destroy_native_fence(&self, global: usize) -> Result<NTSTATUS, SimError> {
        let a = self.adapter_shared(0)?.clone();
        let destroy = table(&a)?
            .DxgkDdiDestroyNativeFence
            .ok_or_else(|| missing("DxgkDdiDestroyNativeFence"))?;
        let mut args = DXGKARG_DESTROYNATIVEFENCE {
            hGlobalNativeFence: global as HANDLE,
            Flags: DXGK_DESTROYNATIVEFENCE_FLAGS::default(),
            Reserved: [0; 32],
        };
        ddi::call(
            &a,
            Routine::DxgkDdiDestroyNativeFence,
            destroy as usize,
            At::Caller,
            || {
                // SAFETY: the driver's DDI with a valid argument block.
                unsafe { destroy(&mut args) }
            },
        )
    }

    /// Raw `DxgkDdiCloseNativeFence` on adapter `i` (see [`Machine::ddi_destroy_native_fence`]).
    pub fn ddi_close_native_fence(&self, i: usize, local: usize) -> Result<NTSTATUS, SimError> {
        let a = self.adapter_shared(i)?.clone();
        let close = table(&a)?
            .DxgkDdiCloseNativeFence
            .ok_or_else(|| missing("DxgkDdiCloseNativeFence"))?;
        let mut args = DXGKARG_CLOSENATIVEFENCE {
            hLocalNativeFence: local as HANDLE,
            Flags: DXGK_CLOSENATIVEFENCE_FLAGS::default(),
            Reserved: [0; 32],
        };
        let ctx = a.context();
        ddi::call(
            &a,
            Routine::DxgkDdiCloseNativeFence,
            close as usize,
            At::Caller,
            || {
                // SAFETY: the driver's DDI with its context and a valid argument block.
                unsafe { close(ctx, &mut args) }
            },
        )
    }

    /// The event form of a CPU wait (MF-04): registers a wait for CurrentValue >= `value`,
    /// lowers MonitoredValue if needed (NF-02, NF-07) and returns the event (already signalled
    /// when the value has been reached).
    pub fn wait_native_fence_event(
        &self,
        fence: &NativeFence,
        value: u64,
    ) -> Result<SimEvent, SimError> {
        if let Some(f) = self.state.fault() {
            return Err(f.into());
        }
        no_cpu_access(fence, "wait")?;
        let ev = SimEvent::default();
        {
            let st = &mut *lock(&fence.obj.st);
            if st.destroyed || !st.instances.contains_key(&fence.local) {
                return Err(SimError::Simulation(
                    "the fence instance is not open".into(),
                ));
            }
            st.waiters.push(Waiter {
                value,
                event: ev.clone(),
                resume: None,
            });
        }
        {
            let _via = ViaScope::enter(ReleaseVia::Immediate);
            settle(&fence.obj)?;
        }
        Ok(ev)
    }

    /// Waits for `ev` to settle: threaded mode blocks on it, step mode drives the machine
    /// (device steps, interrupts, DPCs) until a round makes no progress. Returns the outcome,
    /// or `None` when `timeout` passed or (step mode) nothing but the caller could still
    /// satisfy the wait; the caller then withdraws its wait.
    fn drive_wait(
        &self,
        ev: &SimEvent,
        timeout: Duration,
    ) -> Result<Option<WaitOutcome>, SimError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(o) = ev.outcome() {
                return Ok(Some(o));
            }
            if let Some(f) = self.state.fault() {
                return Err(f.into());
            }
            let expired = Instant::now() >= deadline;
            let idle = match self.config().mode {
                Mode::Step => !self.round_for_wait(),
                Mode::Threaded => {
                    let _ = ev.wait(Duration::from_millis(5));
                    false
                }
            };
            if let Some(o) = ev.outcome() {
                return Ok(Some(o));
            }
            if expired || idle {
                return Ok(None);
            }
        }
    }

    /// The blocking form of a CPU wait (MF-04). Threaded mode: blocks up to `timeout`. Step
    /// mode: drives the machine (device steps, interrupts, DPCs) until the wait is satisfied
    /// or a round makes no progress (nothing but the caller could signal the fence then:
    /// [`WaitOutcome::TimedOut`]), `timeout` bounding the real time spent. A timed-out wait is
    /// withdrawn (MonitoredValue rises again).
    pub fn wait_native_fence(
        &self,
        fence: &NativeFence,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitOutcome, SimError> {
        let ev = self.wait_native_fence_event(fence, value)?;
        if let Some(o) = self.drive_wait(&ev, timeout)? {
            return Ok(o);
        }
        // Withdraw the wait.
        lock(&fence.obj.st).waiters.retain(|w| !w.event.same(&ev));
        ev.set(WaitOutcome::TimedOut);
        settle(&fence.obj)?;
        Ok(ev.outcome().unwrap_or(WaitOutcome::TimedOut))
    }

    /// CPU signal (NF-17): `DxgkDdiUpdateCurrentValuesFromCpu(fence, value)` at DISPATCH_LEVEL
    /// (the driver writes the value and unblocks GPU waiters), then satisfied CPU waits are
    /// released; the other adapters of a cross-adapter fence are notified
    /// (`NotificationOnly`, NF-16).
    pub fn signal_native_fence_from_cpu(
        &self,
        fence: &NativeFence,
        value: u64,
    ) -> Result<(), SimError> {
        no_cpu_access(fence, "signal")?;
        let a = self.fence_adapter(fence.adapter())?;
        {
            let _s = lock(&fence.obj.settle_lock);
            let st = lock(&fence.obj.st);
            if st.destroyed || !st.instances.contains_key(&fence.local) {
                return Err(SimError::Simulation(
                    "the fence instance is not open".into(),
                ));
            }
            drop(st);
            update_current(&a, &[(fence.obj.global, value, fence.obj.cv.kva())], false)?;
        }
        {
            let _via = ViaScope::enter(ReleaseVia::CpuSignal);
            settle(&fence.obj)?;
        }
        propagate(&fence.obj)
    }
}

// ---------------------------------------------------------------------------------------------
// Legacy monitored fences (MF-01 … MF-04, WDDM 2.0).

/// The OS's legacy monitored fence: one 64-bit value the GPU writes through its GPU VA and
/// the CPU only reads; no driver DDI is involved (v1 maps system memory identity, so the
/// GPU VA is the bus address).
#[derive(Debug)]
pub struct LegacyObj {
    adapter_index: usize,
    handle: usize,
    slot: Slot,
    st: Mutex<LegacyState>,
}

#[derive(Debug, Default)]
struct LegacyState {
    destroyed: bool,
    waiters: Vec<Waiter>,
    /// Native instances of the same fence on other adapters (NF-18).
    native_peers: Vec<Arc<FenceObj>>,
}

impl LegacyObj {
    /// Reads the value and releases the satisfied waits (MF-04); resumes the software
    /// contexts whose GPU-side waits are satisfied.
    fn release(&self) {
        let mut resumes = Vec::new();
        {
            let mut st = lock(&self.st);
            for w in release_satisfied(&mut st.waiters, self.slot.load()) {
                resumes.extend(w.resume);
            }
        }
        for r in resumes {
            (r.0)();
        }
    }

    /// The OS changed the value: release waits here and tell the native instances.
    fn signalled(&self) -> Result<(), SimError> {
        self.release();
        let peers = lock(&self.st).native_peers.clone();
        notify_natives(&peers, self.slot.load())
    }
}

/// A legacy monitored fence (`hSyncObject`).
#[derive(Clone, Debug)]
pub struct MonitoredFence {
    obj: Arc<LegacyObj>,
}

impl MonitoredFence {
    /// Adapter index.
    pub fn adapter(&self) -> usize {
        self.obj.adapter_index
    }
    /// `hSyncObject`.
    pub fn handle(&self) -> usize {
        self.obj.handle
    }
    /// The GPU VA (read/write for the GPU).
    pub fn gpu_va(&self) -> u64 {
        self.obj.slot.gpu()
    }
    /// The value, as the CPU's read-only mapping shows it.
    pub fn value(&self) -> u64 {
        self.obj.slot.load()
    }
    /// Kernel CPU VA of the value (what `DXGKARG_CREATEHWQUEUE` passes for a progress fence).
    pub fn kernel_va(&self) -> usize {
        self.obj.slot.kva() as usize
    }
    /// Values of the pending CPU waits.
    pub fn pending_waits(&self) -> Vec<u64> {
        lock(&self.obj.st).waiters.iter().map(|w| w.value).collect()
    }
}

// MF-03, OS-scheduled hardware-queue packets (`crate::ums`): VidSch's PASSIVE worker signals
// and un-waits without a `Machine`.
impl MonitoredFence {
    /// The OS writes `value` (never backwards) and releases satisfied waits: what
    /// [`Machine::signal_monitored_fence_from_cpu`] does, for a software signal packet.
    pub(crate) fn os_signal(&self, value: u64) -> Result<(), SimError> {
        if lock(&self.obj.st).destroyed {
            return Err(SimError::Simulation("monitored fence destroyed".into()));
        }
        if let Some(w) = self.obj.slot.alloc.word(self.obj.slot.off) {
            w.fetch_max(value, Ordering::SeqCst);
        }
        self.obj.signalled()
    }

    /// Drops a GPU-side wait ([`Machine::wait_monitored_fence_from_gpu`]) that is still pending:
    /// its resume never runs and its event ends [`WaitOutcome::Abandoned`].
    pub(crate) fn cancel_gpu_wait(&self, ev: &SimEvent) {
        let removed = {
            let mut st = lock(&self.obj.st);
            let before = st.waiters.len();
            st.waiters.retain(|w| !w.event.same(ev));
            st.waiters.len() != before
        };
        if removed {
            ev.set(WaitOutcome::Abandoned);
        }
    }
}

impl Machine {
    /// Creates a legacy monitored fence on adapter `i` (MF-01): with or without native fences
    /// on the adapter. The value lives in system memory, packed per process.
    pub fn create_monitored_fence(
        &self,
        i: usize,
        process: ProcessId,
        initial: u64,
    ) -> Result<MonitoredFence, SimError> {
        let a = self.adapter_shared(i)?.clone();
        if *lock(&a.life) != Life::Started {
            return Err(SimError::Simulation(format!("adapter {i} is not started")));
        }
        let mut os = lock(&a.fence_os);
        let slot = os
            .alloc_slot(&a, process, KIND_LEGACY, false)
            .ok_or_else(|| SimError::Simulation("out of system memory".into()))?;
        slot.store(initial);
        let obj = Arc::new(LegacyObj {
            adapter_index: i,
            handle: next_handle(),
            slot,
            st: Mutex::new(LegacyState::default()),
        });
        os.legacy.insert(obj.handle, obj.clone());
        Ok(MonitoredFence { obj })
    }

    /// Destroys a legacy monitored fence; pending waits end [`WaitOutcome::Abandoned`].
    pub fn destroy_monitored_fence(&self, f: &MonitoredFence) -> Result<(), SimError> {
        let a = self.adapter_shared(f.adapter())?.clone();
        if lock(&a.fence_os).legacy.remove(&f.obj.handle).is_none() {
            return Err(SimError::Simulation(
                "monitored fence already destroyed".into(),
            ));
        }
        let (waiters, natives) = {
            let mut st = lock(&f.obj.st);
            st.destroyed = true;
            (
                std::mem::take(&mut st.waiters),
                std::mem::take(&mut st.native_peers),
            )
        };
        for n in natives {
            lock(&n.st).legacy_peers.retain(|l| !Arc::ptr_eq(l, &f.obj));
        }
        for w in waiters {
            w.event.set(WaitOutcome::Abandoned);
        }
        Ok(())
    }

    /// `SignalSynchronizationObjectFromCpu` (MF-01): the OS writes the value (the process never
    /// writes it) and releases satisfied waits. Values never go backwards.
    pub fn signal_monitored_fence_from_cpu(
        &self,
        f: &MonitoredFence,
        value: u64,
    ) -> Result<(), SimError> {
        if let Some(e) = self.state.fault() {
            return Err(e.into());
        }
        if lock(&f.obj.st).destroyed {
            return Err(SimError::Simulation("monitored fence destroyed".into()));
        }
        if let Some(w) = f.obj.slot.alloc.word(f.obj.slot.off) {
            w.fetch_max(value, Ordering::SeqCst);
        }
        f.obj.signalled()
    }

    /// `SignalSynchronizationObjectFromGpu` (MF-03): a software packet; when it reaches the
    /// head of its software context VidSch writes the value from the CPU. The simulation has no
    /// software contexts yet, so the packet is at the head at once: same as a CPU signal.
    pub fn signal_monitored_fence_from_gpu(
        &self,
        f: &MonitoredFence,
        value: u64,
    ) -> Result<(), SimError> {
        self.signal_monitored_fence_from_cpu(f, value)
    }

    /// `WaitForSynchronizationObjectFromGpu` (MF-03): VidSch holds the waiting context until
    /// the value is reached, then resumes it (`resume`, e.g. submitting the context's held
    /// work). Runs `resume` at once if the value is already reached.
    pub fn wait_monitored_fence_from_gpu(
        &self,
        f: &MonitoredFence,
        value: u64,
        resume: impl FnOnce() + Send + 'static,
    ) -> Result<SimEvent, SimError> {
        if let Some(e) = self.state.fault() {
            return Err(e.into());
        }
        let ev = SimEvent::default();
        {
            let mut st = lock(&f.obj.st);
            if st.destroyed {
                return Err(SimError::Simulation("monitored fence destroyed".into()));
            }
            st.waiters.push(Waiter {
                value,
                event: ev.clone(),
                resume: Some(Resume(Box::new(resume))),
            });
        }
        f.obj.release();
        Ok(ev)
    }

    /// Opens a shareable TYPE_DEFAULT native fence on an adapter without native fences: it is
    /// a regular monitored fence there (NF-18), sharing the CurrentValue storage; the native
    /// instances hold MonitoredValue at 0 so every signal reaches the OS, which propagates it.
    pub fn open_native_fence_as_monitored(
        &self,
        fence: &NativeFence,
        adapter: usize,
    ) -> Result<MonitoredFence, SimError> {
        if !fence.obj.shareable || fence.obj.fence_type != D3DDDI_NATIVEFENCE_TYPE_DEFAULT {
            return Err(SimError::Simulation(
                "only shareable TYPE_DEFAULT fences cross adapters (NF-16)".into(),
            ));
        }
        let b = self.adapter_shared(adapter)?.clone();
        if *lock(&b.life) != Life::Started {
            return Err(SimError::Simulation(format!(
                "adapter {adapter} is not started"
            )));
        }
        if adapter == fence.adapter() || lock(&b.fence_os).caps.is_some() {
            return Err(SimError::Simulation(format!(
                "adapter {adapter} has native fences: open the fence as a native fence there"
            )));
        }
        let slot = fence
            .obj
            .cv
            .system("a fence opened on another adapter")?
            .clone();
        let natives: Vec<Arc<FenceObj>> = {
            let st = lock(&fence.obj.st);
            let mut v = st.peers.clone();
            v.push(fence.obj.clone());
            v
        };
        let obj = Arc::new(LegacyObj {
            adapter_index: adapter,
            handle: next_handle(),
            slot,
            st: Mutex::new(LegacyState {
                native_peers: natives.clone(),
                ..LegacyState::default()
            }),
        });
        lock(&b.fence_os).legacy.insert(obj.handle, obj.clone());
        let cv = fence.obj.cv.load();
        for n in &natives {
            let mut st = lock(&n.st);
            st.legacy_peers.push(obj.clone());
            st.hold_zero = true;
            st.last_propagated = cv;
        }
        for n in &natives {
            settle(n)?;
        }
        Ok(MonitoredFence { obj })
    }

    /// Opens a legacy monitored fence as a native fence on an adapter that has native fences
    /// (NF-18, the reverse direction): the OS creates the native fence there over the same
    /// value storage, with MonitoredValue held at 0.
    pub fn open_monitored_fence_as_native(
        &self,
        f: &MonitoredFence,
        adapter: usize,
        process: ProcessId,
    ) -> Result<NativeFence, SimError> {
        let b = self.fence_adapter(adapter)?;
        let n = self.create_on(
            &b,
            process,
            NativeFenceDesc {
                initial: 0,
                shareable: true,
                fence_type: D3DDDI_NATIVEFENCE_TYPE_DEFAULT,
            },
            Some(f.obj.slot.clone()),
        )?;
        {
            let mut st = lock(&n.obj.st);
            st.legacy_peers.push(f.obj.clone());
            st.last_propagated = f.value();
        }
        lock(&f.obj.st).native_peers.push(n.obj.clone());
        Ok(n)
    }

    /// Event form of a CPU wait on a legacy monitored fence (MF-04): released by the DPC-time
    /// scan after a `DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED`, or at once if reached.
    pub fn wait_monitored_fence_event(
        &self,
        f: &MonitoredFence,
        value: u64,
    ) -> Result<SimEvent, SimError> {
        if let Some(e) = self.state.fault() {
            return Err(e.into());
        }
        let ev = SimEvent::default();
        {
            let mut st = lock(&f.obj.st);
            if st.destroyed {
                return Err(SimError::Simulation("monitored fence destroyed".into()));
            }
            st.waiters.push(Waiter {
                value,
                event: ev.clone(),
                resume: None,
            });
        }
        f.obj.release();
        Ok(ev)
    }

    /// Blocking form (MF-04); step mode drives the machine as
    /// [`Machine::wait_native_fence`] does.
    pub fn wait_monitored_fence(
        &self,
        f: &MonitoredFence,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitOutcome, SimError> {
        let ev = self.wait_monitored_fence_event(f, value)?;
        if let Some(o) = self.drive_wait(&ev, timeout)? {
            return Ok(o);
        }
        lock(&f.obj.st).waiters.retain(|w| !w.event.same(&ev));
        ev.set(WaitOutcome::TimedOut);
        Ok(ev.outcome().unwrap_or(WaitOutcome::TimedOut))
    }

    /// DPC-time legacy scans on adapter `i` so far.
    pub fn legacy_fence_scans(&self, i: usize) -> u64 {
        self.adapter_shared(i)
            .map_or(0, |a| lock(&a.fence_os).legacy_scans)
    }
}

// ---------------------------------------------------------------------------------------------
// Issue 5: native fence logs, D3DKMT handles of native fences, the trace sink.

/// Settles `objs` after a log drain (re-arm MonitoredValue, resample), attributing the releases
/// of the resample to `Scan` when `scan` (every fence of the adapter is then settled).
pub(crate) fn settle_after_drain(
    a: &AdapterShared,
    objs: Vec<Arc<FenceObj>>,
    scan: bool,
) -> Result<(), SimError> {
    let mut objs = objs;
    if scan {
        let all: Vec<Arc<FenceObj>> = lock(&a.fence_os).objs.values().cloned().collect();
        for o in all {
            if !objs.iter().any(|x| Arc::ptr_eq(x, &o)) {
                objs.push(o);
            }
        }
    }
    let _via = ViaScope::enter(if scan {
        ReleaseVia::Scan
    } else {
        ReleaseVia::Resample
    });
    settle_batch(a, &mut objs)?;
    objs.iter().try_for_each(|o| propagate(o))
}

impl Machine {
    /// Installs the OS's trace sink on every adapter (docs/logs.md §4.7). With a sink the OS
    /// also calibrates the GPU clock at log drains (§4.6).
    pub fn set_trace_sink(&self, s: Arc<dyn crate::sync::trace::TraceSink>) {
        for i in 0.. {
            let Ok(a) = self.adapter_shared(i) else {
                break;
            };
            lock(&a.fence_os).trace = crate::sync::trace::SinkSlot(Some(s.clone()));
            // A first calibration sample per node (docs/logs.md §4.6), when the adapter runs.
            if *lock(&a.life) == Life::Started {
                let a = a.clone();
                maybe_calibrate(&a);
            }
        }
    }

    /// The KMD queue handles the last `DxgkDdiUpdateNativeFenceLogs` on adapter `i` named.
    pub fn last_log_update(&self, i: usize) -> Vec<usize> {
        self.adapter_shared(i).map_or_else(
            |_| Vec::new(),
            |a| lock(&a.fence_os).last_log_update.clone(),
        )
    }

    /// The KMD handle of the hardware queue with device queue id `queue_id` on adapter `i`.
    pub fn hw_queue_kmd_by_id(&self, i: usize, queue_id: u32) -> Option<usize> {
        let a = self.adapter_shared(i).ok()?;
        let t = lock(&a.fence_os).logs.clone();
        let q = t.all().into_iter().find(|q| q.queue_id == queue_id)?;
        Some(q.kmd)
    }

    /// Whether adapter `i`'s driver advertised `OptimizedNativeFenceSignaledInterrupt`
    /// (LOG-08: the OS then reads `hHWQueue`, not the fence array).
    pub fn optimized_fence_irq(&self, i: usize) -> bool {
        self.adapter_shared(i).is_ok_and(|a| {
            lock(&a.caps).is_some_and(|c| {
                c.SchedulingCaps.is_set(
                    rvgpu_ddi::adapter::DXGK_VIDSCHCAPS::OptimizedNativeFenceSignaledInterrupt,
                )
            })
        })
    }

    /// Adapter `i`'s queue table of the log machinery (tests of the ISR-time check).
    pub fn log_table(&self, i: usize) -> Option<Arc<crate::sync::fencelog::LogTable>> {
        let a = self.adapter_shared(i).ok()?;
        let t = lock(&a.fence_os).logs.clone();
        Some(t)
    }

    /// The log drain's counters on adapter `i`.
    pub fn log_counters(&self, i: usize) -> crate::sync::fencelog::LogCounters {
        self.adapter_shared(i)
            .map_or_else(|_| Default::default(), |a| lock(&a.fence_os).log_counters)
    }

    /// Gives `fence` (this process's instance) a D3DKMT handle, the `hNativeFence` a LOG_WRITE
    /// records (what `D3DKMTCreateNativeFence` returns to the process). Returns the handle.
    pub fn native_fence_kmt_handle(&self, fence: &NativeFence) -> Result<u32, SimError> {
        let a = self.fence_adapter(fence.adapter())?;
        let h = crate::ums::new_kmt_handle();
        lock(&fence.obj.st).kmt_handles.push((h, fence.process));
        lock(&a.fence_os).kmt.insert(h, fence.clone());
        Ok(h)
    }

    /// The instance with D3DKMT handle `h` on adapter `i`.
    pub fn native_fence_by_kmt(&self, i: usize, h: u32) -> Option<NativeFence> {
        let a = self.adapter_shared(i).ok()?;
        let f = lock(&a.fence_os).kmt.get(&h).cloned();
        f
    }

    /// Forgets D3DKMT handle `h` (before the instance is destroyed); returns its instance.
    pub(crate) fn take_native_fence_kmt(&self, i: usize, h: u32) -> Option<NativeFence> {
        let a = self.adapter_shared(i).ok()?;
        let f = lock(&a.fence_os).kmt.remove(&h)?;
        lock(&f.obj.st).kmt_handles.retain(|(k, _)| *k != h);
        Some(f)
    }

    /// Runs the DPC-time log drain of adapter `i` outside a DPC (benchmarks, tests): reads the
    /// logs of the queues with KMD handles `named` and of every queue on `engines`, calls
    /// `DxgkDdiUpdateNativeFenceLogs` for those with new entries, releases waits, falls back
    /// to a scan when needed, re-arms MonitoredValue.
    pub fn drain_native_fence_logs(
        &self,
        i: usize,
        named: &[usize],
        engines: &[u32],
    ) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?.clone();
        let req = crate::sync::fencelog::DrainRequest {
            named: named.iter().copied().collect(),
            engines: engines.iter().copied().collect(),
        };
        let (objs, scan) = log_drain(&a, &req, &[])?;
        settle_after_drain(&a, objs, scan)
    }

    /// The non-optimized baseline: resample every native fence of adapter `i` (what a NULL
    /// report costs the OS), releasing and re-arming as the DPC does.
    pub fn scan_native_fences(&self, i: usize) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?.clone();
        let n = lock(&a.fence_os).objs.len() as u64;
        lock(&a.fence_os).dpc_resamples += n;
        settle_after_drain(&a, Vec::new(), true)
    }

    /// `DxgkDdiCalibrateGpuClock(node, 0)` on adapter `i` with the OS's checks (§4.6):
    /// `(gpu_hz, gpu, cpu, bracket)`.
    pub fn calibrate_gpu_clock(
        &self,
        i: usize,
        node: u32,
    ) -> Result<(u64, u64, u64, u64), SimError> {
        let a = self.adapter_shared(i)?.clone();
        crate::sync::fencelog::calibrate(&a, node)
    }
}
