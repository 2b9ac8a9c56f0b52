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
//! - **MonitoredValue (NF-02, NF-04, NF-07).** Per fence the pending CPU waits; the OS value
//!   follows the reading ([`crate::machine::answers::MonitoredValue`]: the pages' lowest
//!   pending value − 1, or 24H2's value of the wait that set it, raised by new waits), is
//!   `u64::MAX` with none, or 0 held for a cross-adapter fence (NF-16). Whenever it changes, `DxgkDdiUpdateMonitoredValues` runs at device IRQL under
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

mod dpc;
mod logs;
mod monitored;
mod native;
mod settle;
mod share;
mod storage;
mod values;
mod wait;

pub(crate) use self::dpc::*;
pub(crate) use self::logs::*;
pub use self::monitored::*;
pub use self::settle::*;
pub use self::storage::*;
pub use self::values::*;
pub(crate) use self::wait::{abandon_cpu_waits, signal_process_fences_to_max};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use rvgpu_ddi::adapter::DXGKQAITYPE_NATIVE_FENCE_CAPS;
use rvgpu_ddi::basic::HANDLE;
use rvgpu_ddi::fence::*;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::{
    STATUS_ACCESS_DENIED, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER, STATUS_NO_MEMORY,
};
use rvgpu_ddi::NTSTATUS;
use rvgpu_device::{Memory, SysAlloc};
use rvgpu_hw::pdd::{NativeFencePdd, NATIVE_FENCE_PDD_VERSION, PDD_MAGIC};
use rvgpu_kmd::platform::Irql;

use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::notify::Notification;
use crate::dxgkrnl::adapter::{AdapterShared, Life};
use crate::dxgkrnl::ddi::{self, check_status, At};
use crate::dxgkrnl::irql::Routine;
use crate::machine::answers::{CpuUpdateIrql, LogReport, SystemVas, ValueUpdates};
use crate::machine::{Machine, Mode};
use crate::sync::trace::ReleaseVia;

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;
const KIND_CURRENT: u8 = 0;
const KIND_MONITORED: u8 = 1;
const KIND_LEGACY: u8 = 2;
/// Most of VRAM the OS takes for local fence pages (NF-06): the top half, the rest stays free
/// for whatever else tests place in VRAM.
pub(crate) const LOCAL_FENCE_VRAM_DIVISOR: u64 = 2;

/// Next OS handle (global and local native-fence handles share the space). Process-wide:
/// the driver's handle map is driver-wide and many machines run in one test process.
/// Starts far from small integers and from [`crate::testing::BAD_FENCE_HANDLE`].
static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(0x7_0000_0000);

fn next_handle() -> usize {
    NEXT_HANDLE.fetch_add(0x10, Ordering::Relaxed)
}

pub use crate::base::process_id::ProcessId;

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

impl NativeFenceDesc {
    /// A cross-adapter fence's object on another adapter (NF-16): shareable, default type, at
    /// 0 (it shares the first adapter's CurrentValue).
    pub(crate) const CROSS_ADAPTER_PEER: Self = Self {
        initial: 0,
        shareable: true,
        fence_type: D3DDDI_NATIVEFENCE_TYPE_DEFAULT,
    };
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
    /// How a satisfied wait was released (docs/logs.md#simulated-os).
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
        // Notify after unlocking: a waiter woken while the lock is held blocks
        // again on the mutex, and the wake system call is then paid with the lock held.
        drop(s);
        self.0.cv.notify_all();
    }

    /// The outcome, if signalled.
    pub fn outcome(&self) -> Option<WaitOutcome> {
        *lock(&self.0.state)
    }

    /// How a satisfied wait was released (`None` until it is).
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
    /// A new wait raised MonitoredValue above this one while it was pending and not reached
    /// (24H2, [`crate::machine::answers::MonitoredValue::RaisedByNewWaits`]): no interrupt is
    /// due when the fence reaches it, so its release may come late.
    raised_over: bool,
}

#[derive(Debug)]
struct ObjState {
    /// Open instances: local handle → process.
    instances: BTreeMap<usize, ProcessId>,
    /// NT handles to the fence (`crate::ob`): each keeps the object alive without an
    /// instance, as on Windows.
    nt_refs: usize,
    destroyed: bool,
    waiters: Vec<Waiter>,
    /// The MonitoredValue the OS last gave the driver.
    mv_os: u64,
    /// The last value signalled from the CPU (24H2's new-wait rule compares against it).
    last_cpu_signal: u64,
    /// Cross-adapter: MonitoredValue held at 0 (NF-16).
    hold_zero: bool,
    /// D3DKMT handles of this fence (a log entry names the fence by one), with the
    /// process that holds each.
    kmt_handles: Vec<(u32, ProcessId)>,
    /// Cross-adapter peers: the same fence on other adapters.
    peers: Vec<Arc<FenceObj>>,
    /// The same fence opened as a legacy monitored fence on adapters without native fences
    /// (NF-18).
    legacy_peers: Vec<Arc<LegacyObj>>,
    /// Last CurrentValue propagated to the peers.
    last_propagated: u64,
    /// In the adapter's scan set (`FenceOs::scan`).
    scanned: bool,
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
    /// What the OS writes as MonitoredValue, and whether it re-arms it (the machine's
    /// reading at create, [`crate::machine::answers::MonitoredValue`]).
    mv_rule: crate::machine::answers::MonitoredValue,
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
    /// Where VidMm mapped the values in `process` (`D3DDDI_NATIVEFENCEMAPPING`).
    va: ProcessVas,
}

/// A fence's CurrentValue and MonitoredValue VAs in one process (0: not mapped, the process
/// has no address space on the adapter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessVas {
    pub current: u64,
    pub monitored: u64,
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
    /// System-process GPU VA of CurrentValue (also its device address: VidMm maps the OS's
    /// pages there in the paging process).
    pub fn current_value_gpu(&self) -> u64 {
        self.obj.cv.gpu()
    }
    /// System-process GPU VA of MonitoredValue (also its device address).
    pub fn monitored_value_gpu(&self) -> u64 {
        self.obj.mv.gpu()
    }
    /// CurrentValue's GPU VA in this instance's process (`CurrentValueGpuVa` of the
    /// `D3DDDI_NATIVEFENCEMAPPING` the create or open thunk returns).
    pub fn current_value_va(&self) -> u64 {
        self.va.current
    }
    /// MonitoredValue's GPU VA in this instance's process (`MonitoredValueGpuVa`).
    pub fn monitored_value_va(&self) -> u64 {
        self.va.monitored
    }
    /// CurrentValue lives in local memory (NF-06).
    pub fn current_value_is_local(&self) -> bool {
        self.obj.cv.is_local()
    }

    /// MonitoredValue lives in local memory (NF-06).
    pub fn monitored_value_is_local(&self) -> bool {
        self.obj.mv.is_local()
    }

    /// Kernel CPU VA of CurrentValue.
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
