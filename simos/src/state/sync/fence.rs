//! The OS's fence objects: native-fence descriptions, value slots, waiters and the event each
//! signals, the shared object behind every handle of one fence, legacy monitored fences, and
//! the late-wake counts.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};

use rvgpu_ddi::fence::{D3DDDI_NATIVEFENCE_TYPE, D3DDDI_NATIVEFENCE_TYPE_DEFAULT};
use rvgpu_device::{Memory, SysAlloc};
use rvgpu_hw::pdd::NativeFencePdd;

use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::state::sync::trace::ReleaseVia;

pub(crate) const PAGE: u64 = rvgpu_hw::PAGE_SIZE;
pub(crate) const KIND_CURRENT: u8 = 0;
pub(crate) const KIND_MONITORED: u8 = 1;
pub(crate) const KIND_LEGACY: u8 = 2;
/// Most of VRAM the OS takes for local fence pages (NF-06): the top half, the rest stays free
/// for whatever else tests place in VRAM.
pub(crate) const LOCAL_FENCE_VRAM_DIVISOR: u64 = 2;

/// Next OS handle (global and local native-fence handles share the space). Process-wide:
/// the driver's handle map is driver-wide and many machines run in one test process.
/// Starts far from small integers and from [`crate::testing::BAD_FENCE_HANDLE`].
pub(crate) static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(0x7_0000_0000);

pub(crate) fn next_handle() -> usize {
    NEXT_HANDLE.fetch_add(0x10, Ordering::Relaxed)
}

/// What [`Machine::create_native_fence`](crate::Machine::create_native_fence) creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NativeFenceDesc {
    /// Initial CurrentValue.
    pub initial: u64,
    /// Shareable with other processes (own pages, NF-05).
    pub shareable: bool,
    /// `D3DDDI_NATIVEFENCE_TYPE`.
    pub fence_type: D3DDDI_NATIVEFENCE_TYPE,
    /// `NoSignalMaxValueOnTdr`: the creator's instance does not register the fence with its
    /// device, so the device's error leaves its value alone.
    pub no_signal_max_value_on_tdr: bool,
}

impl NativeFenceDesc {
    /// A cross-adapter fence's object on another adapter (NF-16): shareable, default type, at
    /// 0 (it shares the first adapter's CurrentValue).
    pub(crate) const CROSS_ADAPTER_PEER: Self = Self {
        initial: 0,
        shareable: true,
        fence_type: D3DDDI_NATIVEFENCE_TYPE_DEFAULT,
        no_signal_max_value_on_tdr: false,
    };
}

impl Default for NativeFenceDesc {
    fn default() -> Self {
        Self {
            initial: 0,
            shareable: false,
            fence_type: D3DDDI_NATIVEFENCE_TYPE_DEFAULT,
            no_signal_max_value_on_tdr: false,
        }
    }
}

/// One 64-bit fence value in OS-allocated system memory.
#[derive(Clone, Debug)]
pub(crate) struct Slot {
    pub(crate) alloc: SysAlloc,
    pub(crate) off: u64,
}

impl Slot {
    pub(crate) fn gpu(&self) -> u64 {
        self.alloc.bus_addr + self.off
    }

    pub(crate) fn kva(&self) -> *mut c_void {
        // The allocation's pointer has provenance over all of it; `off` is inside it.
        self.alloc
            .cpu_ptr()
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(self.off as usize)
            .cast()
    }

    pub(crate) fn load(&self) -> u64 {
        self.alloc
            .word(self.off)
            .map_or(0, |w| w.load(Ordering::SeqCst))
    }

    pub(crate) fn store(&self, v: u64) {
        if let Some(w) = self.alloc.word(self.off) {
            w.store(v, Ordering::SeqCst);
        }
    }
}

/// One 64-bit fence value in local memory (NF-06): VRAM page `page` (byte offset), `off` in it.
#[derive(Clone, Debug)]
pub(crate) struct LocalSlot {
    pub(crate) mem: Arc<Memory>,
    pub(crate) page: u64,
    pub(crate) off: u64,
}

impl LocalSlot {
    pub(crate) fn vram_off(&self) -> u64 {
        self.page + self.off
    }

    pub(crate) fn word(&self) -> Option<&std::sync::atomic::AtomicU64> {
        self.mem
            .vram_words()
            .get(usize::try_from(self.vram_off() / 8).ok()?)
    }
}

/// Where a native fence value lives (NF-06).
#[derive(Clone, Debug)]
pub(crate) enum Value {
    System(Slot),
    Local(LocalSlot),
}

impl Value {
    pub(crate) fn gpu(&self) -> u64 {
        match self {
            Self::System(s) => s.gpu(),
            Self::Local(l) => rvgpu_hw::addr::VRAM_BASE + l.vram_off(),
        }
    }

    /// The kernel CPU address: for local memory, the BAR4 view of the same bytes.
    pub(crate) fn kva(&self) -> *mut c_void {
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

    pub(crate) fn load(&self) -> u64 {
        match self {
            Self::System(s) => s.load(),
            Self::Local(l) => l.word().map_or(0, |w| w.load(Ordering::SeqCst)),
        }
    }

    pub(crate) fn store(&self, v: u64) {
        match self {
            Self::System(s) => s.store(v),
            Self::Local(l) => {
                if let Some(w) = l.word() {
                    w.store(v, Ordering::SeqCst);
                }
            }
        }
    }

    pub(crate) fn is_local(&self) -> bool {
        matches!(self, Self::Local(_))
    }

    /// The system-memory slot, or the simulation error for a local value where only system
    /// memory may be (NF-06, NF-16: a value shared across adapters is in system memory).
    pub(crate) fn system(&self, what: &str) -> Result<&Slot, SimError> {
        match self {
            Self::System(s) => Ok(s),
            Self::Local(_) => Err(SimError::NotAllowed {
                rule: "NF-06",
                why: format!(
                    "{what} needs the fence's CurrentValue in system memory (NF-16 too), but \
                     it is in local memory"
                ),
            }),
        }
    }
}

/// What VidSch does when a GPU-side wait on a legacy monitored fence is satisfied: resume
/// the software context's submission (MF-03, `WaitForSynchronizationObjectFromGpu`).
pub(crate) struct Resume(pub(crate) Box<dyn FnOnce() + Send>);

impl std::fmt::Debug for Resume {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resume")
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
pub(crate) struct EventInner {
    pub(crate) state: Mutex<Option<WaitOutcome>>,
    pub(crate) cv: Condvar,
    /// How a satisfied wait was released (docs/logs.md#simulated-os).
    pub(crate) via: Mutex<Option<ReleaseVia>>,
}

/// The event form of a CPU wait (MF-04): becomes signalled once with the wait's outcome.
#[derive(Clone, Debug, Default)]
pub struct SimEvent(pub(crate) Arc<EventInner>);

#[derive(Debug)]
pub(crate) struct Waiter {
    pub(crate) value: u64,
    pub(crate) event: SimEvent,
    pub(crate) resume: Option<Resume>,
    /// A new wait raised MonitoredValue above this one while it was pending and not reached
    /// (24H2, [`crate::os::answers::MonitoredValue::RaisedByNewWaits`]): no interrupt is
    /// due when the fence reaches it, so its release may come late.
    pub(crate) raised_over: bool,
}

#[derive(Debug)]
pub(crate) struct ObjState {
    /// Open instances: local handle → process.
    pub(crate) instances: BTreeMap<usize, ProcessId>,
    /// The private data each instance's `DxgkDdiOpenNativeFence` left (what the pages'
    /// reading hands the opener, `crate::os::answers::OpenFencePdd`).
    pub(crate) open_pdds: BTreeMap<usize, [u8; 64]>,
    /// Instances that did not register the fence with their device for signalling at device
    /// error: opened with `NoSignal` or `NoSignalMaxValueOnTdr`, or without signal access
    /// (`K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC registers only an open with neither
    /// flag).
    pub(crate) unregistered: std::collections::BTreeSet<usize>,
    /// The D3D device (D3DKMT handle) each instance was created or opened through: the one
    /// `DxgkDdiOpenNativeFence` names and whose error signals a registered instance.
    pub(crate) devices: BTreeMap<usize, crate::ob::KmtHandle>,
    /// NT handles to the fence (`crate::ob`): each keeps the object alive without an
    /// instance, as on Windows.
    pub(crate) nt_refs: usize,
    pub(crate) destroyed: bool,
    pub(crate) waiters: Vec<Waiter>,
    /// The MonitoredValue the OS last gave the driver.
    pub(crate) mv_os: u64,
    /// The last value signalled from the CPU (24H2's new-wait rule compares against it).
    pub(crate) last_cpu_signal: u64,
    /// Cross-adapter: MonitoredValue held at 0 (NF-16).
    pub(crate) hold_zero: bool,
    /// D3DKMT handles of this fence (a log entry names the fence by one), with the
    /// process that holds each.
    pub(crate) kmt_handles: Vec<(u32, ProcessId)>,
    /// Cross-adapter peers: the same fence on other adapters.
    pub(crate) peers: Vec<Arc<FenceObj>>,
    /// The same fence opened as a legacy monitored fence on adapters without native fences
    /// (NF-18).
    pub(crate) legacy_peers: Vec<Arc<LegacyObj>>,
    /// Last CurrentValue propagated to the peers.
    pub(crate) last_propagated: u64,
    /// In the adapter's scan set (`FenceOs::scan`).
    pub(crate) scanned: bool,
}

/// The OS's native-fence object on one adapter.
#[derive(Debug)]
pub struct FenceObj {
    /// The adapter the object is on, weak so a fence does not keep it alive, and without its
    /// type so that this file (held by the adapter) does not import the adapter: the
    /// operations see it through `FenceObj::adapter` (`settle`).
    pub(crate) adapter: Weak<dyn std::any::Any + Send + Sync>,
    pub(crate) adapter_index: usize,
    pub(crate) global: usize,
    pub(crate) creator: ProcessId,
    pub(crate) shareable: bool,
    pub(crate) fence_type: D3DDDI_NATIVEFENCE_TYPE,
    pub(crate) cv: Value,
    pub(crate) mv: Value,
    pub(crate) pdd: NativeFencePdd,
    /// What the OS writes as MonitoredValue, and whether it re-arms it (the machine's
    /// reading at create, [`crate::os::answers::MonitoredValue`]).
    pub(crate) mv_rule: crate::os::answers::MonitoredValue,
    /// Serialises MonitoredValue updates and destruction of this fence.
    pub(crate) settle_lock: Mutex<()>,
    pub(crate) st: Mutex<ObjState>,
}

/// What an NT handle refers to (an entry of the machine's `crate::ob::HandleTables`).
#[derive(Clone, Debug)]
pub enum NtObject {
    /// A shareable native fence (its OS object on the adapter it was created on), with the
    /// access the handle grants (`crate::sync::fence::share::granted`).
    NativeFence(Arc<FenceObj>, u32),
}

/// A process's instance of a native fence (its local handle).
#[derive(Clone, Debug)]
pub struct NativeFence {
    pub(crate) obj: Arc<FenceObj>,
    pub(crate) process: ProcessId,
    pub(crate) local: usize,
    /// Where VidMm mapped the values in `process` (`D3DDDI_NATIVEFENCEMAPPING`).
    pub(crate) va: ProcessVas,
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
    /// The private data this instance's `DxgkDdiOpenNativeFence` left (zero if the driver
    /// wrote none, or the instance is the creator's).
    pub fn open_pdd(&self) -> [u8; 64] {
        lock(&self.obj.st)
            .open_pdds
            .get(&self.local)
            .copied()
            .unwrap_or([0; 64])
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

/// The OS's legacy monitored fence: one 64-bit value the GPU writes through its GPU VA and
/// the CPU only reads; no driver DDI is involved (v1 maps system memory identity, so the
/// GPU VA is the bus address).
#[derive(Debug)]
pub struct LegacyObj {
    pub(crate) adapter_index: usize,
    pub(crate) handle: usize,
    /// The `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS` the object was made with, as 24H2 keeps them
    /// on the device's sync object (`DXGDEVICESYNCOBJECT` +72, read by
    /// `K:SignalSynchronizationObjectFromCpu` @0x1402BA4F8 for `NoSignal` and by
    /// `K:SubmitWaitForSyncObjectsFromGpu` @0x1402AF2F0 for `NoWait`).
    pub(crate) flags: u32,
    pub(crate) slot: Slot,
    pub(crate) st: Mutex<LegacyState>,
}

#[derive(Debug, Default)]
pub(crate) struct LegacyState {
    pub(crate) destroyed: bool,
    /// The highest value the OS signalled the fence to (its initial value first): VidSch's
    /// record of the sync object's last signalled value (+96), against which
    /// `M:VidSchiSignalSyncObjectsFromCpu` @0x14000EF50 refuses a lower CPU signal.
    pub(crate) last_signalled: u64,
    pub(crate) waiters: Vec<Waiter>,
    /// Native instances of the same fence on other adapters (NF-18).
    pub(crate) native_peers: Vec<Arc<FenceObj>>,
}

/// A legacy monitored fence (`hSyncObject`).
#[derive(Clone, Debug)]
pub struct MonitoredFence {
    pub(crate) obj: Arc<LegacyObj>,
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
    /// The highest value the OS signalled the fence to, its initial value first (the GPU's
    /// own writes are not the OS's signals).
    pub fn last_signalled(&self) -> u64 {
        lock(&self.obj.st).last_signalled
    }
    /// The `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS` the OS made the fence with (`NoSignal`,
    /// `NoWait`, `NoGPUAccess` are what its thunks refuse by).
    pub fn flags(&self) -> u32 {
        self.obj.flags
    }
}

/// What 24H2's raising of MonitoredValue over pending waits cost on one adapter: the
/// simulation's count (Windows keeps none). A wait is *raised over* when a new wait lifts
/// MonitoredValue above it while it is pending and not reached (no interrupt is then due at its
/// value); it is a *late wake* when the OS releases it after the fence went past its value.
/// A raised-over wait that its waiter ended itself (a bounded re-check saw the value) is the
/// waiter's to count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LateWakes {
    /// New waits that raised MonitoredValue over at least one pending wait.
    pub raises: u64,
    /// Pending waits left below a raised MonitoredValue.
    pub raised_over: u64,
    /// Raised-over waits released after CurrentValue passed their value.
    pub late: u64,
    /// Sum over those of (CurrentValue at release − awaited value).
    pub late_values: u64,
    /// The largest such difference.
    pub late_max: u64,
}
