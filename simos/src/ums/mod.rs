//! The OS side of user-mode work submission (UM-01 … UM-22): what Dxgkrnl/VidSch do
//! for processes, D3D devices, contexts, hardware queues, allocations and doorbells.
//!
//! **Objects.** A simulated process ([`UmsProcess`]) owns one D3D device on one adapter
//! (`DxgkDdiCreateDevice`). Through its [`crate::kmt::SimKmt`] (the D3DKMT thunks the real UMD
//! calls) it creates contexts (`DxgkDdiCreateContext` on a node), hardware queues
//! (`DxgkDdiCreateHwQueue`, each with an OS-created progress fence: a legacy monitored fence,
//! [`crate::sync::fence`]), allocations (GPU-visible, CPU-mapped system memory from the machine's
//! `Memory`; `DxgkDdiCreateAllocation` is not bound, so the allocation object is the OS's own
//! and the handle the KMD receives for it in `DXGKARG_CREATEDOORBELL` is the OS kernel handle)
//! and doorbells (`DxgkDdiCreateDoorbell`). Every object has a D3DKMT handle (what the UMD holds),
//! an OS kernel handle (what the KMD receives as input, e.g. `hDoorbell` on input of create) and
//! the KMD's handle (what the KMD returned; checked non-null and unique among the adapter's live
//! objects of that kind).
//!
//! **What is enforced** (a violation by the UMD is an error status; by the KMD a simulation
//! error or a bug check, never leniency):
//! - UM-03/UM-04: at adapter start the OS calls `DxgkDdiGetNodeMetadata` for every node and
//!   `DXGKQAITYPE_USERMODESUBMISSION_CAPS`; a user-mode queue may only be created on a node that
//!   reported `UserModeSubmission`, and a doorbell only for such a queue, and only if the caps
//!   reported a doorbell size (`STATUS_NOT_SUPPORTED` otherwise). A node claiming user-mode
//!   submission without usable caps fails the start.
//! - UM-05: `D3DKMTSubmitCommandToHwQueue` on a user-mode queue is refused by the OS
//!   (`STATUS_INVALID_PARAMETER`); [`Machine::ddi_submit_command_to_hw_queue`] bypasses the OS
//!   check to prove the KMD refuses it too. Progress values must increase.
//! - UM-07: each doorbell holds a reference on its ring and ring-control allocations; a
//!   `D3DKMTDestroyAllocation2` of a referenced allocation closes the UMD's handle but the
//!   memory lives until the doorbell is destroyed; the OS frees the UMD's remaining allocations
//!   itself only when the device is destroyed.
//! - UM-08: the ring's CPU view is the allocation's memory, independent of the doorbell state.
//! - UM-09: the doorbell CPU VA the UMD writes is an OS mapping object: a dummy page of
//!   `DoorbellSizeInBytes` until connect, the physical doorbell (BAR2 page) after connect, the
//!   dummy page again after any disconnect. The KMD's `KernelCpuVirtualAddress` must lie
//!   page-aligned inside a live `DxgkCbMapMemory` mapping of BAR2 (else a simulation error
//!   naming the address); the process mapping is of the physical page, as on Windows, not of
//!   the KMD's mapping. The connect status must be `CONNECTED` or `CONNECTED_NOTIFY_KMD`, and
//!   (dedicated model) `DOORBELL_BIND[page]` must name the queue when the connect returns.
//!   Every disconnect writes the status before the dummy page; an OS-initiated one does both
//!   before `DxgkDdiDisconnectDoorbell` (lossless; the documented after-return order is not).
//! - `DxgkCbDisconnectDoorbell` (PASSIVE_LEVEL, [`crate::dxgkrnl::irql`]): the reason must be one of the
//!   `DISCONNECTED_*` values and the handles must name a live doorbell and its queue, else the
//!   callback returns `STATUS_INVALID_PARAMETER` (what Windows documents) and the machine halts
//!   with a simulation error naming the driver bug. Disconnecting an already disconnected
//!   doorbell succeeds. Handles: the binding calls them the driver's handles while Microsoft's
//!   create page says the KMD "can store the input handle" (the OS's): the simulation accepts
//!   either pair, but both handles of one kind (UNVERIFIED which one Windows uses).
//! - Doorbell DDIs are only called in the right state: Connect on a disconnected doorbell,
//!   Disconnect on a connected one, NotifyWorkSubmission on a connected one (otherwise the ping
//!   is dropped: the work is collected at reconnect). Disconnect, Destroy and
//!   NotifyWorkSubmission must succeed (a failure is a simulation error).
//! - Destroy order: a queue with a doorbell, a context with queues, cannot be destroyed
//!   (`STATUS_INVALID_PARAMETER` to the UMD); the OS's own teardowns go doorbell, queue,
//!   allocations, context, device. After `DxgkDdiDestroyHwQueue` returns, the queue id the KMD
//!   reported in its private data must no longer be in any committed runlist (a simulation
//!   check of the hardware: a queue left behind is a leak). A started adapter's devices are torn
//!   down (abnormal exit) before StopDevice; RemoveDevice with live devices is an error.
//! - UM-13: on `DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE` with `TransitionToF1` VidSch (a PASSIVE
//!   worker: the adapter's worker thread, or the step loop) disconnects every connected doorbell
//!   of that node (`DISCONNECTED_RETRY`) and, only if the node is idle then (no active
//!   reference, no kernel-mode or held submission outstanding, no queue of the node with a
//!   last-queued progress value ahead of its fence), sets the node's power component to F1
//!   (`DxgkDdiSetPowerComponentFState(component, 1)` for the engine component the driver
//!   registered for the node at start, `dxgkrnl::power`, BR-100…BR-109). A connect, a
//!   kernel-mode submission (`D3DKMTSubmitCommandToHwQueue`, held submissions, VidSch's DMA
//!   buffers) takes an active reference on the node first, which brings it to F0
//!   ([`node_active`]); the engine being power-gated on the device while the OS holds the node
//!   in F0 is a simulation error naming the driver.
//! - UM-14: [`Machine::power_down`] (runtime, only when no queue has work the OS has not seen
//!   complete, UM-16) suspends every context, disconnects every doorbell
//!   (`DISCONNECTED_RETRY`), then `SetPowerState(D3)`; a connect (or a kernel-mode submit, or
//!   an exit that must wait) in D3 powers up (`SetPowerState(D0)`), connects, then resumes the
//!   contexts the power-down suspended.
//! - Locking: a process's thunks are serialised by its device's lock and take the adapter's
//!   `ums_seq` shared, so processes reach the KMD concurrently; power, F1 and device loss take
//!   it exclusively. Nothing is held across a wait, and the callback takes neither. F-state
//!   changes (UM-13) take the adapter's `ums_fstate` (after `ums_seq` when both are held, before
//!   `ums`, VidSch's TDR state and VidMm's lock, never the other way round): an active reference
//!   (`node_active`: F0, then the count) and the F1 decision (idle check, then F1) are each
//!   atomic under it, so F1 never lands between a reference's F0 and its work.
//! - UM-17: [`Machine::exit_process`]: per queue disconnect, wait for the last-queued progress
//!   value (a queue that never completes is a simulation error), destroy doorbell, queue,
//!   allocations, context, device.
//! - UM-18: [`Machine::kill_process`]: device in error, suspend each context, disconnect each
//!   doorbell, destroy everything without waiting.
//! - UM-10: [`Machine::device_lost`]: every doorbell of the adapter ends `DISCONNECTED_ABORT`
//!   (connected ones are disconnected first); an aborted doorbell cannot be reconnected
//!   (`STATUS_DEVICE_REMOVED`): the UMD destroys and recreates it.
//!
//! Every OS step is recorded as a [`UmsEvent`] ([`Machine::ums_events`]) so tests can check
//! sequences in order.

mod context;
mod disconnect;
mod doorbell;
pub use doorbell::DOORBELL_PRIVATE_DATA_MAX;
mod events;
mod handles;
mod held;
mod hwqueue;
mod kmtest;
mod lookup;
mod loss;
mod mapping;
mod power;
mod process;
mod start;

pub(crate) use self::context::*;
pub use self::disconnect::*;
pub(crate) use self::doorbell::*;
pub use self::events::*;
pub use self::held::*;
pub(crate) use self::hwqueue::*;
pub(crate) use self::kmtest::TestTarget;
pub(crate) use self::loss::*;
pub use self::mapping::*;
pub(crate) use self::power::*;
pub(crate) use self::start::*;
pub(crate) use crate::vidmm::allocation::*;

use std::collections::{BTreeMap, VecDeque};
use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rvgpu_ddi::adapter::DXGKQAITYPE_USERMODESUBMISSION_CAPS;
use rvgpu_ddi::basic::*;
use rvgpu_ddi::dxgkrnl::*;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::interrupt::DXGK_ENGINE_STATE_TRANSITION_TO_F1;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::submission::*;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::pdd::{HwQueuePdd, PDD_MAGIC};
use rvgpu_kmd::platform::Irql;
use zerocopy::FromBytes;

use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::base::processor::current_irql;
use crate::dxgkrnl::adapter::{AdapterShared, Life};
use crate::dxgkrnl::bringup;
use crate::dxgkrnl::ddi::{self, check_status, must_succeed, not_supported, sim_err, table, At};
use crate::dxgkrnl::irql::Routine;
use crate::machine::Machine;
use crate::sync::fence::{MonitoredFence, SimEvent, WaitOutcome};

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// `DISPLAY_ADAPTER_HW_ID`: the device UID SetPowerState uses for the adapter itself.
pub const DISPLAY_ADAPTER_HW_ID: u32 = 0xFFFF_FFFF;
/// `PowerActionNone`: runtime (not system-wide) power transitions.
pub const POWER_ACTION_NONE: POWER_ACTION = 0;

/// A D3DKMT handle (what the UMD holds).
pub type KmtHandle = u32;

/// Processes.
static NEXT_PROCESS: AtomicU32 = AtomicU32::new(0x1000);

/// A new D3DKMT handle in `process`'s handle table ([`crate::ob::LocalHandles`]: Windows'
/// values, unique among live processes of the whole test process, as many machines share it).
pub(crate) fn new_handle(process: ProcessId) -> Result<KmtHandle, SimError> {
    crate::ob::local_handles()
        .allocate(process)
        .map_err(SimError::DdiFailed)
}

/// A new D3DKMT handle (native fences get one from the same table).
pub(crate) fn new_kmt_handle(process: ProcessId) -> Result<KmtHandle, SimError> {
    new_handle(process)
}

/// The table adapter handles of user-mode images come from: the PE bridge opens an adapter
/// before the process has a device, and the simulated OS's processes are its devices.
#[cfg(target_os = "linux")]
const ADAPTER_OPENERS: ProcessId = ProcessId(1);

/// A new adapter handle for a user-mode image (`D3DKMTOpenAdapterFromLuid`).
#[cfg(target_os = "linux")]
pub(crate) fn new_adapter_handle() -> Result<KmtHandle, SimError> {
    new_handle(ADAPTER_OPENERS)
}

/// The OS kernel handle of the object with D3DKMT handle `h` (what the KMD gets as input).
pub fn kernel_handle(h: KmtHandle) -> usize {
    KERNEL_HANDLE_BASE | ((h as usize) << 4)
}

const KERNEL_HANDLE_BASE: usize = 0x7D00_0000_0000;

/// The D3DKMT handle whose [`kernel_handle`] is `k`, if `k` is one.
fn from_kernel_handle(k: usize) -> Option<KmtHandle> {
    let h = KmtHandle::try_from((k & !KERNEL_HANDLE_BASE) >> 4).ok()?;
    (kernel_handle(h) == k).then_some(h)
}

impl UmsOs {
    /// The live doorbells `handle` names, as the KMD's handle or the OS kernel handle, in
    /// D3DKMT handle order (an index lookup, not a scan of every doorbell).
    fn doorbells_named(&self, handle: usize) -> Vec<KmtHandle> {
        let mut v: Vec<KmtHandle> = self
            .doorbell_by_kmd
            .range((handle, KmtHandle::MIN)..=(handle, KmtHandle::MAX))
            .map(|&(_, h)| h)
            .collect();
        if let Some(h) = from_kernel_handle(handle).filter(|h| self.doorbells.contains_key(h)) {
            if !v.contains(&h) {
                v.push(h);
                v.sort_unstable();
            }
        }
        v
    }
}

/// Doorbell connection state as the OS sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoorbellState {
    /// Created or disconnected (`DISCONNECTED_RETRY` on the status page).
    Disconnected,
    /// Connected to physical doorbell `page`.
    Connected {
        /// BAR2 page.
        page: u32,
    },
    /// Disconnected for good (`DISCONNECTED_ABORT`).
    Aborted,
}

#[derive(Debug)]
pub(crate) struct DeviceObj {
    pub(crate) kmd: usize,
    /// Serialises the thunks of this device (Dxgkrnl's per-device lock).
    lock: Arc<Mutex<()>>,
    pub(crate) process: ProcessId,
    pub(super) in_error: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Suspended {
    No,
    /// By a power-down (resumed at power-up).
    Power,
    /// By [`Machine::suspend_context`] (resumed by [`Machine::resume_context`]).
    Os,
    /// By an abnormal exit (never resumed).
    Exit,
}

#[derive(Debug)]
struct ContextObj {
    handle: KmtHandle,
    kmd: usize,
    device: KmtHandle,
    node: u32,
    suspended: Suspended,
    suspend_fence: u64,
    /// Created with `HwQueueSupported` (BR-92/94).
    hw_queue: bool,
}

#[derive(Debug)]
struct QueueObj {
    handle: KmtHandle,
    kmd: usize,
    device: KmtHandle,
    context: KmtHandle,
    node: u32,
    user_mode: bool,
    /// The progress fence's handle and the fence; `None` for a user-mode queue on an OS that
    /// gives it none ([`crate::machine::answers::UmsProgress::None`]).
    fence: Option<KmtHandle>,
    progress: Option<MonitoredFence>,
    /// The native fence the OS made the progress fence
    /// ([`crate::machine::answers::ProgressFence`]): over `progress`'s value, whose monitored
    /// view keeps the OS's own waits.
    native_progress: Option<crate::sync::fence::NativeFence>,
    /// User-mode queues: the UMD's `HwQueueProgressFenceLastQueuedValue` cell; kernel-mode
    /// queues: the last value the OS submitted.
    last_queued: Arc<AtomicU64>,
    doorbell: Option<KmtHandle>,
    queue_id: Option<u32>,
    submit_lock: Arc<Mutex<()>>,
    /// MF-03: the OS-side list of this kernel-mode queue (GPU waits, held submissions, signal
    /// packets).
    sched: Arc<HwqSched>,
}

impl QueueObj {
    /// The progress fence's value, if the OS gave the queue one.
    fn completed(&self) -> Option<u64> {
        self.progress.as_ref().map(MonitoredFence::value)
    }

    /// UM-16: whether the OS can see work outstanding on the queue (never, without a progress
    /// fence).
    fn known_work(&self) -> bool {
        self.completed()
            .is_some_and(|c| self.last_queued.load(Ordering::Acquire) > c)
    }
}

/// One entry of a kernel-mode queue's OS-side list (MF-03).
#[derive(Debug)]
enum Pending {
    /// A `SubmitCommandToHwQueue` the OS holds behind an earlier GPU wait.
    Submit { value: u64, gpu: u64, bytes: u32 },
    /// A GPU wait (`SubmitWaitForSyncObjectsToHwQueue`, one entry per object): holds every later
    /// entry until `fence` reaches `value`. `event` is the VidSch-side waiter on the fence
    /// (its resume queues [`pump`] on VidSch's worker).
    Wait {
        fence: MonitoredFence,
        handle: KmtHandle,
        value: u64,
        event: SimEvent,
    },
    /// A signal packet (`SubmitSignalSyncObjectsToHwQueue`).
    Signal(Signal),
}

/// A signal packet: signals `fences` once the queue's progress fence reaches `after` (the last
/// progress value accepted before it: every earlier submission completed).
#[derive(Debug)]
struct Signal {
    fences: Vec<(MonitoredFence, KmtHandle, u64)>,
    after: u64,
    /// The waiter on the progress fence for `after` (if it had not been reached).
    event: Option<SimEvent>,
}

/// The OS-side scheduling state of one kernel-mode queue (MF-03).
#[derive(Debug, Default)]
struct HwqSched {
    /// Serialises [`pump`] runs (the thunk's thread and VidSch's worker): entries reach the KMD
    /// in order.
    pump: Mutex<()>,
    /// A GPU wait or a signal's predecessors were satisfied: VidSch's worker pumps the queue.
    kicked: std::sync::atomic::AtomicBool,
    st: Mutex<HwqSchedState>,
    /// The adapter's "some queue may be due" hint ([`UmsOs::hwq_due`]), set with every kick
    /// and ring-full retry, so the worker looks at the queues only when one may need it.
    due_hint: Arc<std::sync::atomic::AtomicBool>,
}

impl HwqSched {
    /// Kicks the queue: VidSch's worker pumps it at its next run.
    fn kick(&self) {
        self.kicked.store(true, Ordering::Release);
        self.due_hint.store(true, Ordering::Release);
    }

    /// A ring-full retry is pending (the worker polls the progress fence for it).
    fn retry_pending(&self) -> bool {
        lock(&self.st).retry_at.is_some()
    }

    /// Whether VidSch's worker has something to do for this queue (`take`: clears the kick).
    fn due(&self, progress: Option<&MonitoredFence>, take: bool) -> bool {
        let kicked = if take {
            self.kicked.swap(false, Ordering::AcqRel)
        } else {
            self.kicked.load(Ordering::Acquire)
        };
        kicked
            || lock(&self.st)
                .retry_at
                .is_some_and(|v| progress.is_some_and(|p| p.value() >= v))
    }
}

#[derive(Debug, Default)]
struct HwqSchedState {
    list: VecDeque<Pending>,
    /// Signals at the head of the list whose earlier submissions are with the KMD but not
    /// complete; they do not hold later work.
    armed: Vec<Signal>,
    /// The last progress value the OS accepted for the queue (submitted or held).
    accepted: u64,
    /// A held submission the KMD refused (its ring was full) is retried once the queue's
    /// progress fence reaches this value (the worker polls it).
    retry_at: Option<u64>,
    /// The queue is being destroyed: nothing more goes to the KMD.
    dead: bool,
}

#[derive(Debug)]
struct DoorbellObj {
    handle: KmtHandle,
    kmd: usize,
    device: KmtHandle,
    queue: KmtHandle,
    ring: KmtHandle,
    control: KmtHandle,
    state: DoorbellState,
    /// A `DxgkDdiConnectDoorbell` is in flight: `Some(None)`; the KMD disconnected the
    /// doorbell (callback) before the OS committed that connect: `Some(Some(reason))`.
    connecting: Option<Option<D3DDDI_DOORBELLSTATUS>>,
    cpu: Arc<DoorbellCpuState>,
}

/// Power state of the adapter as the OS drives it (UM-14).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Power {
    /// D0.
    D0,
    /// D3 (after [`Machine::power_down`]).
    D3,
}

/// Per-adapter user-mode submission state of the OS.
#[derive(Debug)]
pub struct UmsOs {
    /// `DxgkDdiGetNodeMetadata` per node, from adapter start (empty without the DDI).
    pub node_metadata: Vec<DXGK_NODEMETADATA>,
    /// `DXGKQAITYPE_USERMODESUBMISSION_CAPS` from adapter start, if answered.
    pub caps: Option<DXGK_USERMODESUBMISSION_CAPS>,
    /// Runtime power management started (`dxgkrnl::power`: the cap set, at least one
    /// component registered, `PREPARE_TO_START`/`STARTED` sent).
    runtime_pm: bool,
    power: Power,
    /// Each node's F-state as PoFx holds it (0 = F0); every node starts in F0.
    fstate: Vec<u32>,
    /// Node → the `DXGK_POWER_COMPONENT_INDEX` of its engine component, if the driver
    /// registered one (`dxgkrnl::power`).
    node_component: Vec<Option<u32>>,
    /// Active references per node (PoFx `SetPowerComponentActive`): kernel-path submissions
    /// and doorbell connects in progress hold the node in F0 ([`node_active`]).
    node_active: Vec<u32>,
    /// Active references the driver holds per node (`DxgkCbSetPowerComponentActive` minus
    /// `Idle` on the node's component): with one held the node stays F0 and the adapter D0.
    driver_active: Vec<u32>,
    /// Nodes whose F1 request found them busy: F1 follows once the OS sees them idle (PoFx
    /// idles a component when its last active reference goes), unless new work arrives
    /// first (the engine then asks again when it next idles).
    f1_deferred: Vec<u32>,
    /// The power components the driver registered at start.
    power_components: Vec<rvgpu_ddi::power::DXGK_POWER_RUNTIME_COMPONENT>,
    pub(super) devices: BTreeMap<KmtHandle, DeviceObj>,
    contexts: BTreeMap<KmtHandle, ContextObj>,
    queues: handles::HandleMap<QueueObj>,
    pub(super) allocations: BTreeMap<KmtHandle, AllocObj>,
    /// Allocations no one references any more, waiting for VidMm to unmap and free them
    /// ([`crate::machine::Machine::reap_allocations`]).
    pub(crate) reaped: Vec<AllocObj>,
    /// Held by whoever is releasing what `reaped` held, for the whole loop: a reap that
    /// returns has seen every allocation freed before it called released, also those another
    /// thread took first. A process exit counts on that before it unmaps what its space still
    /// maps and drops the space.
    pub(crate) reap_serial: Arc<Mutex<()>>,
    doorbells: handles::HandleMap<DoorbellObj>,
    /// The live doorbells by the KMD's handle, `(kmd handle, D3DKMT handle)`, so
    /// that `DxgkCbDisconnectDoorbell` finds its doorbell without scanning every doorbell
    /// (a victimising connect cost grew with the queues). Ordered like `doorbells`, so two
    /// doorbells the driver gave one handle resolve as a scan would (the lower handle).
    doorbell_by_kmd: std::collections::BTreeSet<(usize, KmtHandle)>,
    fences: BTreeMap<KmtHandle, MonitoredFence>,
    /// Some kernel-mode queue may be due for VidSch's worker (kicked, or a ring-full retry
    /// pending): without it the worker and the idle check skip the queues, which they
    /// scanned at every run (setting up N queues cost O(N²)).
    hwq_due: Arc<std::sync::atomic::AtomicBool>,
    /// The process each fence handle belongs to: D3DKMT handles are per process, so another
    /// process naming the same number names nothing (B signalled and waited A's
    /// fences by guessing handles).
    fence_owner: BTreeMap<KmtHandle, ProcessId>,
    pub(super) events: Vec<UmsEvent>,
    /// Handles (the KMD's and the OS kernel handle) of destroyed doorbells -> D3DKMT handle,
    /// for the callback's diagnostics (a handle used after its destroy returned).
    destroyed_doorbells: std::collections::HashMap<usize, KmtHandle>,
    /// The driver's handles of destroyed queues (a late page-fault report may name one).
    destroyed_queues: std::collections::HashSet<usize>,
    /// Native progress fences of destroyed queues, destroyed once the thunk's locks are
    /// released (their pages leave the process by paging, [`hwqueue::reap_progress_fences`]).
    retired_progress: Vec<crate::sync::fence::NativeFence>,
    /// PASSIVE work the DPC queued (engine F1 requests).
    work: VecDeque<u32>,
    /// Page faults reported at DPC time, for PASSIVE: (driver queue handle, VA).
    pub(crate) faulted: VecDeque<(usize, u64)>,
}

impl Default for UmsOs {
    fn default() -> Self {
        Self {
            node_metadata: Vec::new(),
            caps: None,
            runtime_pm: false,
            power: Power::D0,
            fstate: Vec::new(),
            node_component: Vec::new(),
            node_active: Vec::new(),
            driver_active: Vec::new(),
            f1_deferred: Vec::new(),
            power_components: Vec::new(),
            devices: BTreeMap::new(),
            contexts: BTreeMap::new(),
            queues: handles::HandleMap::default(),
            allocations: BTreeMap::new(),
            reaped: Vec::new(),
            reap_serial: Arc::new(Mutex::new(())),
            doorbells: handles::HandleMap::default(),
            doorbell_by_kmd: std::collections::BTreeSet::new(),
            fences: BTreeMap::new(),
            hwq_due: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            fence_owner: BTreeMap::new(),
            events: Vec::new(),
            destroyed_doorbells: std::collections::HashMap::new(),
            destroyed_queues: std::collections::HashSet::new(),
            retired_progress: Vec::new(),
            work: VecDeque::new(),
            faulted: VecDeque::new(),
        }
    }
}

impl UmsOs {
    fn node_ums(&self, node: u32) -> bool {
        self.node_metadata
            .get(node as usize)
            .is_some_and(|m| m.Flags.is_set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission))
    }

    fn doorbell_size(&self) -> Option<u32> {
        self.caps.map(|c| c.DoorbellSizeInBytes).filter(|s| *s != 0)
    }
}

/// A simulated process with its D3D device on one adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UmsProcess {
    /// Adapter index.
    pub adapter: usize,
    /// Process id.
    pub pid: ProcessId,
    /// The D3D device's D3DKMT handle.
    pub device: KmtHandle,
}

/// What the OS knows of a doorbell (tests).
#[derive(Clone, Debug)]
pub struct DoorbellInfo {
    /// State.
    pub state: DoorbellState,
    /// The status page.
    pub status: D3DDDI_DOORBELLSTATUS,
    /// Physical page the process mapping points at (`None`: dummy page).
    pub mapped_page: Option<u32>,
    /// The KMD's handle.
    pub kmd_handle: usize,
    /// The OS kernel handle.
    pub os_handle: usize,
    /// Its queue.
    pub queue: KmtHandle,
    /// (stores to the dummy page, stores to a physical doorbell).
    pub writes: (u64, u64),
}

/// The adapter-wide side of [`AdapterShared::ums_seq`] (power, F1, device loss).
fn exclusive(a: &AdapterShared) -> std::sync::RwLockWriteGuard<'_, ()> {
    a.ums_seq.write().unwrap_or_else(|p| p.into_inner())
}

fn shared(a: &AdapterShared) -> std::sync::RwLockReadGuard<'_, ()> {
    a.ums_seq.read().unwrap_or_else(|p| p.into_inner())
}

/// A device's thunk lock (see [`DeviceObj::lock`]).
pub(crate) fn device_lock(
    a: &AdapterShared,
    device: KmtHandle,
) -> Result<Arc<Mutex<()>>, SimError> {
    lock(&a.ums).device(device).map(|d| d.lock.clone())
}

/// Held by a thunk: the adapter lock shared, then the device's lock.
pub(crate) struct DevGuard<'a> {
    _device: std::sync::MutexGuard<'a, ()>,
    _adapter: std::sync::RwLockReadGuard<'a, ()>,
}

pub(crate) fn dev_guard<'a>(a: &'a AdapterShared, dl: &'a Mutex<()>) -> DevGuard<'a> {
    let adapter = shared(a);
    DevGuard {
        _device: lock(dl),
        _adapter: adapter,
    }
}

/// A step of VidSch's worker failed: a simulation error, unless the machine halted already
/// (the halt is why it failed, and stays the machine's fault).
pub(super) fn worker_step_failed(a: &AdapterShared, what: String) {
    if !a.state.is_halted() {
        a.state.raise_sim_error(what);
    }
}

/// DDI `name`, which a driver that `since` (has doorbells, created a doorbell, has hardware
/// queues) must implement: a missing one is the driver's bug, a simulation error.
pub(super) fn needed<F>(
    a: &AdapterShared,
    f: Option<F>,
    name: &str,
    since: &str,
) -> Result<F, SimError> {
    f.ok_or_else(|| sim_err(a, format!("driver {since} but has no {name}")))
}

/// [`needed`] for slot `$slot` of adapter `$a`'s table.
macro_rules! needed_ddi {
    ($a:expr, $slot:ident, $since:literal) => {
        needed($a, table($a)?.$slot, stringify!($slot), $since)
    };
}
pub(super) use needed_ddi;

/// Calls a `DxgkDdiDestroy*` that takes only the KMD's handle of a `what` (device, context,
/// hardware queue) at PASSIVE_LEVEL. The driver created the object, so the DDI must exist, and
/// it must succeed; either failure is a simulation error.
pub(crate) fn destroy_kmd_object(
    a: &AdapterShared,
    routine: Routine,
    what: &str,
    f: Option<unsafe extern "system" fn(HANDLE) -> NTSTATUS>,
    kmd: usize,
) -> Result<(), SimError> {
    let name = format!("{routine:?}");
    let f = f.ok_or_else(|| sim_err(a, format!("driver created a {what} but has no {name}")))?;
    let status = ddi::passive(a, routine, f as usize, || {
        // SAFETY: the driver's DDI with its own handle of the object.
        unsafe { f(kmd as HANDLE) }
    })?;
    must_succeed(a, &name, status)
}

/// The handle a create DDI returned: non-null and not the handle of another live object of
/// the same kind (the OS could not tell them apart).
pub(crate) fn check_kmd_handle(
    a: &AdapterShared,
    ddi: &str,
    field: &str,
    kmd: usize,
    live: impl Iterator<Item = usize>,
) -> Result<(), SimError> {
    if kmd == 0 {
        return Err(sim_err(
            a,
            format!("driver bug: {ddi} succeeded with a NULL {field}"),
        ));
    }
    let mut live = live;
    if live.any(|h| h == kmd) {
        return Err(sim_err(
            a,
            format!(
                "driver bug: {ddi} returned {field} = {kmd:#x}, the handle of another live \
                 object of the same kind"
            ),
        ));
    }
    Ok(())
}

/// AL-03: the work queued on `device`'s hardware queues now, as (progress fence, value it
/// must reach) for each queue with outstanding work. A user-mode queue's value is the UMD's
/// `HwQueueProgressFenceLastQueuedValue` (UM-16): untrusted, but it only decides when this
/// process's own memory is freed, and freed memory is unmapped from its GPU space first.
pub(crate) fn queued_work(os: &UmsOs, device: KmtHandle) -> Vec<QueuedWork> {
    os.queues
        .values()
        .filter(|q| q.device == device)
        .filter_map(|q| {
            let v = q.last_queued.load(std::sync::atomic::Ordering::Acquire);
            let fence = q.progress.as_ref()?;
            (fence.value() < v).then(|| QueuedWork {
                queue: q.handle,
                fence: fence.clone(),
                value: v,
            })
        })
        .collect()
}

/// The hardware queues of `pid`'s devices (a fence page the process closed stays
/// mapped while one of them lives, `vidmm::fencemap`).
pub(crate) fn process_queues(os: &UmsOs, pid: ProcessId) -> Vec<KmtHandle> {
    os.queues
        .values()
        .filter(|q| os.devices.get(&q.device).is_some_and(|d| d.process == pid))
        .map(|q| q.handle)
        .collect()
}

/// Whether hardware queue `h` still exists.
pub(crate) fn queue_alive(os: &UmsOs, h: KmtHandle) -> bool {
    os.queues.contains_key(&h)
}

/// One queue's outstanding work at a point in time ([`queued_work`]).
#[derive(Clone, Debug)]
pub(crate) struct QueuedWork {
    queue: KmtHandle,
    fence: MonitoredFence,
    value: u64,
}

impl QueuedWork {
    /// Complete, or no longer able to run: the queue is gone (its destruction ended its work).
    pub(crate) fn done(&self, os: &UmsOs) -> bool {
        self.fence.value() >= self.value || !os.queues.contains_key(&self.queue)
    }
}

/// The fence behind D3DKMT handle `h` of the process that owns `device`: `None` for a handle
/// of another process, as Windows' per-process handle table answers (STATUS_INVALID_HANDLE).
pub(crate) fn fence_of(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Option<MonitoredFence> {
    let os = lock(&a.ums);
    let pid = os.devices.get(&device)?.process;
    (os.fence_owner.get(&h) == Some(&pid))
        .then(|| os.fences.get(&h).cloned())
        .flatten()
}

/// Live user-mode objects on the adapter (devices, contexts, queues, doorbells, allocations).
pub(crate) fn live_counts(a: &AdapterShared) -> (usize, usize, usize, usize, usize) {
    let os = lock(&a.ums);
    (
        os.devices.len(),
        os.contexts.len(),
        os.queues.len(),
        os.doorbells.len(),
        os.allocations.len(),
    )
}

/// How long a blocking thunk wait waits by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);
