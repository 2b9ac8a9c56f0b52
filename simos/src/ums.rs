//! The OS side of user-mode work submission (issue 6, UM-01 … UM-22): what Dxgkrnl/VidSch do
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
//!   of that node (`DISCONNECTED_RETRY`) and sets the node's power component to F1
//!   (`DxgkDdiSetPowerComponentFState(node, 1)` when the driver fills the slot and reports
//!   `SupportRuntimePowerManagement`; component index = node ordinal). A connect on that node
//!   sets F0 first.
//! - UM-14: [`Machine::power_down`] (runtime, only when no queue has work the OS has not seen
//!   complete, UM-16) suspends every context, disconnects every doorbell
//!   (`DISCONNECTED_RETRY`), then `SetPowerState(D3)`; a connect (or a kernel-mode submit, or
//!   an exit that must wait) in D3 powers up (`SetPowerState(D0)`), connects, then resumes the
//!   contexts the power-down suspended.
//! - Locking: a process's thunks are serialised by its device's lock and take the adapter's
//!   `ums_seq` shared, so processes reach the KMD concurrently; power, F1 and device loss take
//!   it exclusively. Nothing is held across a wait, and the callback takes neither.
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

use std::collections::{BTreeMap, VecDeque};
use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rvgpu_ddi::adapter::{
    DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_USERMODESUBMISSION_CAPS, DXGK_QUERYADAPTERINFOFLAGS,
};
use rvgpu_ddi::basic::*;
use rvgpu_ddi::dxgkrnl::*;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::interrupt::DXGK_ENGINE_STATE_TRANSITION_TO_F1;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::submission::*;
use rvgpu_device::SysAlloc;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::pdd::{HwQueuePdd, PDD_MAGIC};
use rvgpu_kmd::platform::Irql;
use zerocopy::FromBytes;

use crate::dxgkrnl::adapter::{AdapterShared, Life};
use crate::dxgkrnl::ddi::{self, check_status, must_succeed, not_supported, sim_err, table, At};
use crate::dxgkrnl::irql::Routine;
use crate::dxgkrnl::kernel::current_irql;
use crate::dxgkrnl::state::lock;
use crate::error::SimError;
use crate::machine::Machine;
use crate::sync::fence::{MonitoredFence, ProcessId, SimEvent, WaitOutcome};

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// `DISPLAY_ADAPTER_HW_ID`: the device UID SetPowerState uses for the adapter itself.
pub const DISPLAY_ADAPTER_HW_ID: u32 = 0xFFFF_FFFF;
/// `PowerActionNone`: runtime (not system-wide) power transitions.
pub const POWER_ACTION_NONE: POWER_ACTION = 0;

/// A D3DKMT handle (what the UMD holds).
pub type KmtHandle = u32;

/// D3DKMT handles: process-wide unique (many machines share the test process).
static NEXT_HANDLE: AtomicU32 = AtomicU32::new(0x4000_0100);
/// Processes.
static NEXT_PROCESS: AtomicU32 = AtomicU32::new(0x1000);

fn new_handle() -> KmtHandle {
    NEXT_HANDLE.fetch_add(4, Ordering::Relaxed)
}

/// A new D3DKMT handle (issue 5: native fences get one from the same space).
pub(crate) fn new_kmt_handle() -> KmtHandle {
    new_handle()
}

/// The OS kernel handle of the object with D3DKMT handle `h` (what the KMD gets as input).
pub fn kernel_handle(h: KmtHandle) -> usize {
    0x7D00_0000_0000usize | ((h as usize) << 4)
}

// ---------------------------------------------------------------------------------------------
// Events.

/// One OS step, recorded in order per adapter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UmsEvent {
    /// `DxgkDdiCreateDevice` succeeded.
    CreateDevice { device: KmtHandle },
    /// `DxgkDdiCreateContext` succeeded.
    CreateContext { context: KmtHandle, node: u32 },
    /// `DxgkDdiCreateHwQueue` succeeded.
    CreateHwQueue {
        queue: KmtHandle,
        user_mode: bool,
        queue_id: Option<u32>,
    },
    /// `DxgkDdiCreateDoorbell` succeeded.
    CreateDoorbell { doorbell: KmtHandle },
    /// `DxgkDdiConnectDoorbell` succeeded: the doorbell's CPU VA now maps physical `page`.
    ConnectDoorbell {
        doorbell: KmtHandle,
        page: u32,
        status: D3DDDI_DOORBELLSTATUS,
    },
    /// `DxgkDdiConnectDoorbell` failed.
    ConnectFailed {
        doorbell: KmtHandle,
        status: NTSTATUS,
    },
    /// The KMD called `DxgkCbDisconnectDoorbell`; `was_connected`: the OS mapping was physical
    /// and is now the dummy page.
    CallbackDisconnect {
        doorbell: KmtHandle,
        reason: D3DDDI_DOORBELLSTATUS,
        was_connected: bool,
    },
    /// The OS called `DxgkDdiDisconnectDoorbell` and pointed the CPU VA at the dummy page.
    DisconnectDoorbell {
        doorbell: KmtHandle,
        reason: D3DDDI_DOORBELLSTATUS,
    },
    /// An already disconnected doorbell was marked aborted (device loss).
    Aborted { doorbell: KmtHandle },
    /// `DxgkDdiNotifyWorkSubmission`.
    NotifyWorkSubmission { doorbell: KmtHandle },
    /// `DxgkDdiSubmitCommandToHwQueue` succeeded.
    Submit { queue: KmtHandle, value: u64 },
    /// `DxgkDdiDestroyDoorbell`.
    DestroyDoorbell { doorbell: KmtHandle },
    /// `DxgkDdiDestroyHwQueue`.
    DestroyHwQueue { queue: KmtHandle },
    /// An allocation's memory was freed.
    FreeAllocation { allocation: KmtHandle },
    /// `DxgkDdiDestroyContext`.
    DestroyContext { context: KmtHandle },
    /// `DxgkDdiDestroyDevice`.
    DestroyDevice { device: KmtHandle },
    /// `DxgkDdiSuspendContext`.
    SuspendContext { context: KmtHandle, fence: u64 },
    /// `DxgkDdiResumeContext`.
    ResumeContext { context: KmtHandle },
    /// `DxgkDdiSetPowerState` (`state` is a `DEVICE_POWER_STATE`).
    SetPowerState { state: DEVICE_POWER_STATE },
    /// The node's power component changed F-state (`called`: `DxgkDdiSetPowerComponentFState`
    /// was called; false when the driver does not do runtime power management).
    SetFState {
        node: u32,
        fstate: u32,
        called: bool,
    },
    /// An engine-state change the DPC reported (`DXGK_ENGINE_STATE`).
    EngineState { node: u32, state: i32 },
    /// Normal exit waited for a queue's last queued progress value.
    WaitedIdle { queue: KmtHandle, value: u64 },
    /// The device was marked in error (abnormal exit).
    DeviceError { device: KmtHandle },
    /// MF-03: `D3DKMTSubmitWaitForSyncObjectsToHwQueue` queued a GPU wait on a kernel-mode
    /// queue (`fence` is the D3DKMT handle).
    GpuWaitQueued {
        queue: KmtHandle,
        fence: KmtHandle,
        value: u64,
    },
    /// MF-03: a queued GPU wait reached the head of its queue's list and was satisfied: the work
    /// behind it may go to the KMD.
    GpuWaitReleased {
        queue: KmtHandle,
        fence: KmtHandle,
        value: u64,
    },
    /// MF-03: a submission arrived behind a pending GPU wait; the OS holds it (no
    /// `DxgkDdiSubmitCommandToHwQueue` yet).
    SubmitHeld { queue: KmtHandle, value: u64 },
    /// MF-03: `D3DKMTSubmitSignalSyncObjectsToHwQueue`'s signal packet: the OS signalled
    /// `fence` once every earlier submission of the queue completed.
    GpuSignal {
        queue: KmtHandle,
        fence: KmtHandle,
        value: u64,
    },
    /// MF-03: the queue was destroyed with held work: `submissions` never reached the KMD,
    /// `waits` GPU waits and `signals` signal packets were dropped.
    HeldWorkDropped {
        queue: KmtHandle,
        submissions: usize,
        waits: usize,
        signals: usize,
    },
}

// ---------------------------------------------------------------------------------------------
// The doorbell's CPU-visible state (what the process maps).

/// The dummy page a disconnected doorbell's CPU VA points at.
#[derive(Debug)]
struct DummyPage {
    words: Vec<AtomicU64>,
}

#[derive(Clone)]
enum Mapping {
    Dummy,
    Physical {
        page: u32,
        bus: Weak<dyn MmioBus + Send + Sync>,
    },
}

/// The process-visible side of a doorbell: the doorbell CPU VA (a remappable mapping), the
/// status page, and the queue's last-queued progress value.
pub struct DoorbellCpuState {
    mapping: Mutex<Mapping>,
    dummy: DummyPage,
    status: AtomicI32,
    last_queued: Arc<AtomicU64>,
    dummy_writes: AtomicU64,
    physical_writes: AtomicU64,
}

impl std::fmt::Debug for DoorbellCpuState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DoorbellCpuState")
            .field("status", &self.status.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl DoorbellCpuState {
    /// A store to `DoorbellCPUVirtualAddress`: lands on the physical doorbell while mapped,
    /// on the dummy page otherwise. The mapping is held for the store, so once the OS has
    /// pointed the VA at the dummy page no later store reaches the physical page (what the
    /// TLB shoot-down of a remap guarantees on Windows).
    pub fn ring(&self, value: u64) {
        let m = lock(&self.mapping);
        match &*m {
            Mapping::Dummy => {
                if let Some(w) = self.dummy.words.first() {
                    w.store(value, Ordering::Release);
                }
                self.dummy_writes.fetch_add(1, Ordering::Relaxed);
            }
            Mapping::Physical { page, bus } => {
                if let Some(b) = bus.upgrade() {
                    b.write64(*page as usize * PAGE as usize, value);
                }
                self.physical_writes.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// `*DoorbellStatusCPUVirtualAddress`.
    pub fn status(&self) -> D3DDDI_DOORBELLSTATUS {
        self.status.load(Ordering::Acquire)
    }

    /// Store to `HwQueueProgressFenceLastQueuedValueCPUVirtualAddress`.
    pub fn set_last_queued(&self, v: u64) {
        self.last_queued.store(v, Ordering::Release);
    }

    /// The physical page the CPU VA maps now (`None`: the dummy page).
    pub fn mapped_page(&self) -> Option<u32> {
        match &*lock(&self.mapping) {
            Mapping::Dummy => None,
            Mapping::Physical { page, .. } => Some(*page),
        }
    }

    /// Size in bytes of the dummy page (the caps' `DoorbellSizeInBytes`, UM-04).
    pub fn dummy_size(&self) -> usize {
        self.dummy.words.len() * 8
    }

    /// (stores that landed on the dummy page, stores that reached a physical doorbell).
    pub fn write_counts(&self) -> (u64, u64) {
        (
            self.dummy_writes.load(Ordering::Relaxed),
            self.physical_writes.load(Ordering::Relaxed),
        )
    }

    fn to_dummy(&self) {
        *lock(&self.mapping) = Mapping::Dummy;
    }
}

// ---------------------------------------------------------------------------------------------
// OS objects.

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
struct DeviceObj {
    kmd: usize,
    /// Serialises the thunks of this device (Dxgkrnl's per-device lock).
    lock: Arc<Mutex<()>>,
    process: ProcessId,
    in_error: bool,
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
}

#[derive(Debug)]
struct QueueObj {
    handle: KmtHandle,
    kmd: usize,
    device: KmtHandle,
    context: KmtHandle,
    node: u32,
    user_mode: bool,
    fence: KmtHandle,
    progress: MonitoredFence,
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
}

impl HwqSched {
    /// Whether VidSch's worker has something to do for this queue (`take`: clears the kick).
    fn due(&self, progress: &MonitoredFence, take: bool) -> bool {
        let kicked = if take {
            self.kicked.swap(false, Ordering::AcqRel)
        } else {
            self.kicked.load(Ordering::Acquire)
        };
        kicked
            || lock(&self.st)
                .retry_at
                .is_some_and(|v| progress.value() >= v)
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
struct AllocObj {
    device: KmtHandle,
    alloc: SysAlloc,
    /// Doorbells holding a reference (UM-07).
    refs: u32,
    /// The UMD destroyed its handle; the memory waits for the references.
    closed: bool,
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
    /// `DXGK_DRIVERCAPS::SupportRuntimePowerManagement`.
    runtime_pm: bool,
    power: Power,
    fstate: Vec<u32>,
    devices: BTreeMap<KmtHandle, DeviceObj>,
    contexts: BTreeMap<KmtHandle, ContextObj>,
    queues: BTreeMap<KmtHandle, QueueObj>,
    allocations: BTreeMap<KmtHandle, AllocObj>,
    doorbells: BTreeMap<KmtHandle, DoorbellObj>,
    fences: BTreeMap<KmtHandle, MonitoredFence>,
    events: Vec<UmsEvent>,
    /// Handles (the KMD's and the OS kernel handle) of destroyed doorbells -> D3DKMT handle,
    /// for the callback's diagnostics (a handle used after its destroy returned).
    destroyed_doorbells: std::collections::HashMap<usize, KmtHandle>,
    /// PASSIVE work the DPC queued (engine F1 requests).
    work: VecDeque<u32>,
}

impl Default for UmsOs {
    fn default() -> Self {
        Self {
            node_metadata: Vec::new(),
            caps: None,
            runtime_pm: false,
            power: Power::D0,
            fstate: Vec::new(),
            devices: BTreeMap::new(),
            contexts: BTreeMap::new(),
            queues: BTreeMap::new(),
            allocations: BTreeMap::new(),
            doorbells: BTreeMap::new(),
            fences: BTreeMap::new(),
            events: Vec::new(),
            destroyed_doorbells: std::collections::HashMap::new(),
            work: VecDeque::new(),
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

// ---------------------------------------------------------------------------------------------
// Calling the driver.

/// The adapter-wide side of [`AdapterShared::ums_seq`] (power, F1, device loss).
fn exclusive(a: &AdapterShared) -> std::sync::RwLockWriteGuard<'_, ()> {
    a.ums_seq.write().unwrap_or_else(|p| p.into_inner())
}

fn shared(a: &AdapterShared) -> std::sync::RwLockReadGuard<'_, ()> {
    a.ums_seq.read().unwrap_or_else(|p| p.into_inner())
}

/// A device's thunk lock (see [`DeviceObj::lock`]).
fn device_lock(a: &AdapterShared, device: KmtHandle) -> Result<Arc<Mutex<()>>, SimError> {
    lock(&a.ums)
        .devices
        .get(&device)
        .map(|d| d.lock.clone())
        .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))
}

/// Held by a thunk: the adapter lock shared, then the device's lock.
struct DevGuard<'a> {
    _device: std::sync::MutexGuard<'a, ()>,
    _adapter: std::sync::RwLockReadGuard<'a, ()>,
}

fn dev_guard<'a>(a: &'a AdapterShared, dl: &'a Mutex<()>) -> DevGuard<'a> {
    let adapter = shared(a);
    DevGuard {
        _device: lock(dl),
        _adapter: adapter,
    }
}

/// Calls a `DxgkDdiDestroy*` that takes only the KMD's handle of a `what` (device, context,
/// hardware queue) at PASSIVE_LEVEL. The driver created the object, so the DDI must exist, and
/// it must succeed; either failure is a simulation error.
fn destroy_kmd_object(
    a: &AdapterShared,
    routine: Routine,
    what: &str,
    f: Option<unsafe extern "system" fn(HANDLE) -> NTSTATUS>,
    kmd: usize,
) -> Result<(), SimError> {
    let name = format!("{routine:?}");
    let f = f.ok_or_else(|| sim_err(a, format!("driver created a {what} but has no {name}")))?;
    let status = ddi::call(a, routine, f as usize, At::Level(Irql::Passive), || {
        // SAFETY: the driver's DDI with its own handle of the object.
        unsafe { f(kmd as HANDLE) }
    })?;
    must_succeed(a, &name, status)
}

// ---------------------------------------------------------------------------------------------
// Adapter start: node metadata and caps (UM-03, UM-04).

/// Queries `DxgkDdiGetNodeMetadata` for every node and `DXGKQAITYPE_USERMODESUBMISSION_CAPS`.
/// `Err(SimError::Rejected)` when the answers are inconsistent (a node claims user-mode
/// submission without usable caps, or GetNodeMetadata fails for a valid node).
pub(crate) fn query_at_start(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
    caps: &rvgpu_ddi::adapter::DXGK_DRIVERCAPS,
) -> Result<(), SimError> {
    let nodes = caps.GpuEngineTopology.NbAsymetricProcessingNodes;
    let mut metadata = Vec::new();
    if let Some(get) = t.DxgkDdiGetNodeMetadata {
        let ctx = a.context();
        for node in 0..nodes {
            // SAFETY: DXGK_NODEMETADATA is plain data; the 0xCD fill shows unset fields.
            let mut md: DXGK_NODEMETADATA = unsafe { std::mem::zeroed() };
            // SAFETY: writes size_of bytes into a live value of plain data.
            unsafe {
                (&mut md as *mut DXGK_NODEMETADATA)
                    .cast::<u8>()
                    .write_bytes(0xCD, std::mem::size_of::<DXGK_NODEMETADATA>())
            };
            let status = ddi::call(
                a,
                Routine::DxgkDdiGetNodeMetadata,
                get as usize,
                At::Level(Irql::Passive),
                || {
                    // SAFETY: the driver's DDI with its context, a valid node and an out buffer.
                    unsafe { get(ctx, node, &mut md) }
                },
            )?;
            if !NT_SUCCESS(status) {
                return Err(SimError::Rejected(format!(
                    "DxgkDdiGetNodeMetadata(node {node}) failed ({:#010x}); it must succeed for \
                     every node",
                    status as u32
                )));
            }
            metadata.push(md);
        }
    }
    let claims = metadata
        .iter()
        .any(|m| m.Flags.is_set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission));
    let mut ums_caps = None;
    if let Some(q) = t.DxgkDdiQueryAdapterInfo {
        let mut c = DXGK_USERMODESUBMISSION_CAPS {
            Flags: DXGK_USERMODESUBMISSION_CAPS_Flags::from_value(0xCDCD_CDCD),
            DoorbellSizeInBytes: 0xCDCD_CDCD,
            SecondaryDoorbellSizeInBytes: 0xCDCD_CDCD,
            Reserved: [0xCD; 16],
        };
        let args = DXGKARG_QUERYADAPTERINFO {
            Type: DXGKQAITYPE_USERMODESUBMISSION_CAPS,
            pInputData: std::ptr::null_mut(),
            InputDataSize: 0,
            pOutputData: (&mut c as *mut DXGK_USERMODESUBMISSION_CAPS).cast(),
            OutputDataSize: std::mem::size_of::<DXGK_USERMODESUBMISSION_CAPS>() as u32,
            Flags: DXGK_QUERYADAPTERINFOFLAGS::default(),
            hKmdProcessHandle: std::ptr::null_mut(),
        };
        let ctx = a.context();
        let status = ddi::call(
            a,
            Routine::DxgkDdiQueryAdapterInfo,
            q as usize,
            At::Level(Irql::Passive),
            || {
                // SAFETY: the driver's QueryAdapterInfo with an output buffer of the size given.
                unsafe { q(ctx, &args) }
            },
        )?;
        if NT_SUCCESS(status) {
            ums_caps = Some(c);
        }
    }
    if claims {
        match ums_caps {
            None => {
                return Err(SimError::Rejected(
                    "a node reports UserModeSubmission but DXGKQAITYPE_USERMODESUBMISSION_CAPS \
                     failed (UM-04)"
                        .into(),
                ))
            }
            Some(c) if c.DoorbellSizeInBytes == 0 || u64::from(c.DoorbellSizeInBytes) > PAGE => {
                return Err(SimError::Rejected(format!(
                    "USERMODESUBMISSION_CAPS.DoorbellSizeInBytes = {:#x}: must be 1..=4096 (one \
                     BAR2 page per doorbell, UM-04)",
                    c.DoorbellSizeInBytes
                )))
            }
            Some(_) => {}
        }
    }
    let mut os = lock(&a.ums);
    os.node_metadata = metadata;
    os.caps = ums_caps;
    os.runtime_pm = caps.SupportRuntimePowerManagement != 0;
    os.power = Power::D0;
    os.fstate = vec![0; nodes as usize];
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// DxgkCbDisconnectDoorbell and the DPC's engine-state work.

/// The adapters of the calling thread's machine whose OS knows `handle` as a doorbell (KMD or
/// OS handle); the adapter whose DDI the thread is inside first.
fn find_doorbell_adapters(handle: usize) -> Vec<Arc<AdapterShared>> {
    let me = crate::dxgkrnl::kernel::current_machine().map(|m| m.id());
    let inside = ddi::inside();
    let mut v: Vec<Arc<AdapterShared>> = crate::dxgkrnl::adapter::all_adapters()
        .into_iter()
        .filter(|a| Some(a.state.id()) == me)
        .filter(|a| {
            lock(&a.ums)
                .doorbells
                .values()
                .any(|d| d.kmd == handle || kernel_handle(d.handle) == handle)
        })
        .collect();
    v.sort_by_key(|a| (Arc::as_ptr(a) as usize != inside) as u8);
    v
}

/// The D3DKMT handle of a destroyed doorbell `handle` named, on the calling thread's machine.
fn destroyed_doorbell(handle: usize) -> Option<KmtHandle> {
    let me = crate::dxgkrnl::kernel::current_machine().map(|m| m.id());
    crate::dxgkrnl::adapter::all_adapters()
        .into_iter()
        .filter(|a| Some(a.state.id()) == me)
        .find_map(|a| lock(&a.ums).destroyed_doorbells.get(&handle).copied())
}

type TestHook = Box<dyn FnOnce() + Send>;

/// One-shot actions to run at the start of the next `DxgkCbDisconnectDoorbell` on a machine
/// (tests that need an exact interleaving, e.g. a destroy racing a victimisation).
static CALLBACK_HOOKS: Mutex<Vec<(u64, TestHook)>> = Mutex::new(Vec::new());

/// Runs `f` at the start of the next `DxgkCbDisconnectDoorbell` on machine `machine_id`, on
/// the thread the driver calls it from, before the OS looks at the arguments.
pub fn before_next_disconnect_callback(machine_id: u64, f: impl FnOnce() + Send + 'static) {
    lock(&CALLBACK_HOOKS).push((machine_id, Box::new(f)));
}

fn run_test_hook() {
    let Some(id) = crate::dxgkrnl::kernel::current_machine().map(|m| m.id()) else {
        return;
    };
    let hook = {
        let mut h = lock(&CALLBACK_HOOKS);
        h.iter().position(|(m, _)| *m == id).map(|i| h.remove(i).1)
    };
    if let Some(f) = hook {
        f();
    }
}

/// `DxgkCbDisconnectDoorbell` (PASSIVE_LEVEL).
pub(crate) fn cb_disconnect_doorbell(args: *mut DXGKARGCB_DISCONNECTDOORBELL) -> NTSTATUS {
    let addr = crate::dxgkrnl::callbacks::disconnect_doorbell_address();
    if let Err(b) =
        crate::dxgkrnl::irql::check(Routine::DxgkCbDisconnectDoorbell, current_irql(), addr)
    {
        crate::dxgkrnl::kernel::raise(b);
        return STATUS_UNSUCCESSFUL;
    }
    if args.is_null() {
        crate::dxgkrnl::kernel::raise(crate::BugCheck::new(
            crate::dxgkrnl::bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
            [0, 0, addr as u64, 0],
        ));
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: non-null pointer to the driver's argument block.
    let args = unsafe { args.read() };
    let (hq, hd) = (args.hHwQueue as usize, args.hDoorbell as usize);
    let reason = args.DisconnectReason;
    let fail = |msg: String| {
        match crate::dxgkrnl::kernel::current_machine() {
            Some(m) => m.raise_sim_error(format!("driver bug: DxgkCbDisconnectDoorbell: {msg}")),
            None => eprintln!("rvgpu-simos: DxgkCbDisconnectDoorbell outside a machine: {msg}"),
        }
        STATUS_INVALID_PARAMETER
    };
    if reason != D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY
        && reason != D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT
    {
        return fail(format!(
            "DisconnectReason = {reason} is not a D3DDDI_DOORBELLSTATUS_DISCONNECTED_* value"
        ));
    }
    run_test_hook();
    let Some(a) = find_doorbell_adapters(hd).into_iter().next() else {
        if let Some(dead) = destroyed_doorbell(hd) {
            return fail(format!(
                "hDoorbell = {hd:#x} names doorbell {dead:#x}, whose DxgkDdiDestroyDoorbell \
                 already returned: the driver used the handle after the object was destroyed \
                 (on Windows a freed Dxgkrnl object, or a reused handle naming another \
                 doorbell)"
            ));
        }
        return fail(format!(
            "hDoorbell = {hd:#x} is not a live doorbell (neither a handle the driver returned \
             from DxgkDdiCreateDoorbell nor the OS handle it was given)"
        ));
    };
    let mut os = lock(&a.ums);
    let found = os.doorbells.values().find_map(|d| {
        let q = os.queues.get(&d.queue)?;
        let kmd_pair = d.kmd == hd && q.kmd == hq;
        let os_pair = kernel_handle(d.handle) == hd && kernel_handle(q.handle) == hq;
        (kmd_pair || os_pair).then_some(d.handle)
    });
    let Some(h) = found else {
        // Re-checked under this lock: the doorbell may have been destroyed since the search.
        let dead = os.destroyed_doorbells.get(&hd).copied();
        let its_queue = os
            .doorbells
            .values()
            .find(|d| d.kmd == hd || kernel_handle(d.handle) == hd)
            .and_then(|d| os.queues.get(&d.queue))
            .map(|q| (kernel_handle(q.handle), q.kmd));
        drop(os);
        if let Some(dead) = dead {
            return fail(format!(
                "hDoorbell = {hd:#x} names doorbell {dead:#x}, whose DxgkDdiDestroyDoorbell \
                 already returned: the driver used the handle after the object was destroyed \
                 (on Windows a freed Dxgkrnl object, or a reused handle naming another \
                 doorbell)"
            ));
        }
        return fail(format!(
            "hHwQueue = {hq:#x} is not the queue of doorbell {hd:#x} (its queue's handles are \
             {its_queue:x?} (OS, driver); both handles must be the driver's, or both the OS's, \
             of one doorbell and its queue)"
        ));
    };
    let Some(d) = os.doorbells.get_mut(&h) else {
        return STATUS_INVALID_PARAMETER;
    };
    let was_connected =
        matches!(d.state, DoorbellState::Connected { .. }) || d.connecting.is_some();
    if let Some(c) = d.connecting.as_mut() {
        // A connect of this doorbell returned from the KMD but the OS has not mapped it yet:
        // the OS will not map it (another doorbell took the page meanwhile).
        *c = Some(reason);
    }
    // The status before the dummy page: a ring between the two still reaches the physical
    // doorbell (the KMD rebinds it only after this callback returns) and the UMD then reads
    // the reason; the other order would let a ring land on the dummy page and the UMD read
    // CONNECTED afterwards (a lost submission).
    match d.state {
        DoorbellState::Aborted => {}
        _ if reason == D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT => {
            d.state = DoorbellState::Aborted;
            d.cpu.status.store(reason, Ordering::Release);
        }
        _ => {
            d.state = DoorbellState::Disconnected;
            d.cpu.status.store(reason, Ordering::Release);
        }
    }
    d.cpu.to_dummy();
    os.events.push(UmsEvent::CallbackDisconnect {
        doorbell: h,
        reason,
        was_connected,
    });
    STATUS_SUCCESS
}

/// Records what the DPC reported (called from `DxgkCbNotifyDpc`, DISPATCH_LEVEL): F1 requests
/// become PASSIVE work for VidSch's worker.
pub(crate) fn note_engine_state(a: &AdapterShared, node: u32, state: i32) {
    let mut os = lock(&a.ums);
    os.events.push(UmsEvent::EngineState { node, state });
    if state == DXGK_ENGINE_STATE_TRANSITION_TO_F1 {
        os.work.push_back(node);
        drop(os);
        a.wake.notify();
    }
}

/// Whether PASSIVE work is pending.
pub(crate) fn has_work(a: &AdapterShared) -> bool {
    let os = lock(&a.ums);
    !os.work.is_empty() || os.queues.values().any(|q| q.sched.due(&q.progress, false))
}

/// VidSch's PASSIVE worker: runs the queued F1 transitions (UM-13). Returns whether it did
/// anything.
pub(crate) fn run_passive_work(a: &AdapterShared) -> bool {
    let mut did = run_hwq_work(a);
    loop {
        // Work queued while the adapter is still starting waits for the start to finish.
        if a.state.is_halted() || *lock(&a.life) != Life::Started {
            return did;
        }
        let Some(node) = lock(&a.ums).work.pop_front() else {
            return did;
        };
        did = true;
        let _x = exclusive(a);
        if let Err(e) = engine_to_f1(a, node) {
            if !a.state.is_halted() {
                a.state
                    .raise_sim_error(format!("engine {node} F1 transition failed: {e}"));
            }
            return did;
        }
    }
}

fn engine_to_f1(a: &AdapterShared, node: u32) -> Result<(), SimError> {
    let targets: Vec<KmtHandle> = {
        // A node already in F1 has no connected doorbell (a connect sets F0 first); a
        // repeated request finds nothing to disconnect and leaves the F-state as it is.
        let os = lock(&a.ums);
        os.doorbells
            .values()
            .filter(|d| matches!(d.state, DoorbellState::Connected { .. }))
            .filter(|d| os.queues.get(&d.queue).is_some_and(|q| q.node == node))
            .map(|d| d.handle)
            .collect()
    };
    for d in targets {
        os_disconnect(a, d, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY)?;
    }
    set_fstate(a, node, 1)
}

/// Sets the node's power component F-state (calls the DDI when the driver does runtime power
/// management).
fn set_fstate(a: &AdapterShared, node: u32, fstate: u32) -> Result<(), SimError> {
    let _f = lock(&a.ums_fstate);
    let (current, runtime_pm) = {
        let os = lock(&a.ums);
        (os.fstate.get(node as usize).copied(), os.runtime_pm)
    };
    if current == Some(fstate) || current.is_none() {
        return Ok(());
    }
    let f = table(a)?.DxgkDdiSetPowerComponentFState;
    let called = match (f, runtime_pm) {
        (Some(f), true) => {
            let ctx = a.context();
            let status = ddi::call(
                a,
                Routine::DxgkDdiSetPowerComponentFState,
                f as usize,
                At::Level(Irql::Passive),
                || {
                    // SAFETY: the driver's DDI with its context, a component and an F-state.
                    unsafe { f(ctx, node, fstate) }
                },
            )?;
            check_status(status)?;
            true
        }
        _ => false,
    };
    let mut os = lock(&a.ums);
    if let Some(s) = os.fstate.get_mut(node as usize) {
        *s = fstate;
    }
    os.events.push(UmsEvent::SetFState {
        node,
        fstate,
        called,
    });
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// OS sequences on an adapter (callers hold `ums_seq`: exclusive, or shared with the device's
// lock).

/// An OS-initiated disconnect of a connected doorbell: the status page gets `reason`, the CPU
/// VA the dummy page, then `DxgkDdiDisconnectDoorbell`.
///
/// Microsoft describes the remap and the status write as happening on return from the DDI.
/// With that order a UMD that rings after the KMD unbound the page and before the OS wrote the
/// status hits an unbound page, then reads `CONNECTED`: its work is lost, whatever the KMD
/// does (the page must be free when the DDI returns). The simulation uses the lossless order
/// instead: status first (a ring through the still-physical VA still reaches the still-bound
/// queue, and the UMD then reconnects harmlessly), then the dummy page, then the DDI. The KMD
/// cannot observe the difference.
fn os_disconnect(
    a: &AdapterShared,
    h: KmtHandle,
    reason: D3DDDI_DOORBELLSTATUS,
) -> Result<(), SimError> {
    let kmd = {
        let os = lock(&a.ums);
        match os.doorbells.get(&h) {
            Some(d) if matches!(d.state, DoorbellState::Connected { .. }) => {
                d.cpu.status.store(reason, Ordering::Release);
                d.cpu.to_dummy();
                d.kmd
            }
            _ => return Ok(()),
        }
    };
    let f = table(a)?.DxgkDdiDisconnectDoorbell.ok_or_else(|| {
        sim_err(
            a,
            "driver has doorbells but no DxgkDdiDisconnectDoorbell".into(),
        )
    })?;
    let mut args = DXGKARG_DISCONNECTDOORBELL {
        hDoorbell: kmd as HANDLE,
        Flags: DXGKARG_DISCONNECTDOORBELL_FLAGS::default(),
    };
    let status = ddi::call(
        a,
        Routine::DxgkDdiDisconnectDoorbell,
        f as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with a valid argument block naming its doorbell.
            unsafe { f(&mut args) }
        },
    )?;
    must_succeed(a, "DxgkDdiDisconnectDoorbell", status)?;
    let mut os = lock(&a.ums);
    if let Some(d) = os.doorbells.get_mut(&h) {
        if d.state != DoorbellState::Aborted {
            d.state = if reason == D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT {
                DoorbellState::Aborted
            } else {
                DoorbellState::Disconnected
            };
        }
    }
    os.events.push(UmsEvent::DisconnectDoorbell {
        doorbell: h,
        reason,
    });
    Ok(())
}

fn set_power_state(a: &AdapterShared, state: DEVICE_POWER_STATE) -> Result<(), SimError> {
    let f = table(a)?
        .DxgkDdiSetPowerState
        .ok_or_else(|| SimError::Simulation("no DxgkDdiSetPowerState".into()))?;
    let ctx = a.context();
    let status = ddi::call(
        a,
        Routine::DxgkDdiSetPowerState,
        f as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with its context and the adapter's device UID.
            unsafe { f(ctx, DISPLAY_ADAPTER_HW_ID, state, POWER_ACTION_NONE) }
        },
    )?;
    check_status(status)?;
    let mut os = lock(&a.ums);
    os.power = if state == PowerDeviceD0 {
        Power::D0
    } else {
        Power::D3
    };
    os.events.push(UmsEvent::SetPowerState { state });
    Ok(())
}

fn suspend_context(a: &AdapterShared, h: KmtHandle, why: Suspended) -> Result<(), SimError> {
    let (kmd, fence) = {
        let mut os = lock(&a.ums);
        let Some(c) = os.contexts.get_mut(&h) else {
            return Ok(());
        };
        if c.suspended != Suspended::No {
            return Ok(());
        }
        c.suspend_fence += 1;
        (c.kmd, c.suspend_fence)
    };
    let f = table(a)?.DxgkDdiSuspendContext.ok_or_else(|| {
        sim_err(
            a,
            "driver has hardware queues but no DxgkDdiSuspendContext".into(),
        )
    })?;
    let args = DXGKARG_SUSPENDCONTEXT {
        hContext: kmd as HANDLE,
        contextSuspendFence: fence,
    };
    let ctx = a.context();
    let status = ddi::call(
        a,
        Routine::DxgkDdiSuspendContext,
        f as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with its context and a valid argument block.
            unsafe { f(ctx, &args) }
        },
    )?;
    if status == STATUS_PENDING {
        return Err(sim_err(
            a,
            "DxgkDdiSuspendContext returned STATUS_PENDING: completion through a \
             context-suspended interrupt is not simulated (the design commits the runlist \
             synchronously)"
                .into(),
        ));
    }
    check_status(status)?;
    let mut os = lock(&a.ums);
    if let Some(c) = os.contexts.get_mut(&h) {
        c.suspended = why;
    }
    os.events
        .push(UmsEvent::SuspendContext { context: h, fence });
    Ok(())
}

fn resume_context(a: &AdapterShared, h: KmtHandle, why: Suspended) -> Result<(), SimError> {
    let kmd = {
        let os = lock(&a.ums);
        match os.contexts.get(&h) {
            Some(c) if c.suspended == why => c.kmd,
            _ => return Ok(()),
        }
    };
    let f = table(a)?.DxgkDdiResumeContext.ok_or_else(|| {
        sim_err(
            a,
            "driver has hardware queues but no DxgkDdiResumeContext".into(),
        )
    })?;
    let args = DXGKARG_RESUMECONTEXT {
        hContext: kmd as HANDLE,
    };
    let ctx = a.context();
    let status = ddi::call(
        a,
        Routine::DxgkDdiResumeContext,
        f as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with its context and a valid argument block.
            unsafe { f(ctx, &args) }
        },
    )?;
    check_status(status)?;
    let mut os = lock(&a.ums);
    if let Some(c) = os.contexts.get_mut(&h) {
        c.suspended = Suspended::No;
    }
    os.events.push(UmsEvent::ResumeContext { context: h });
    Ok(())
}

/// D3 → D0 and the contexts the power-down suspended resumed (UM-14), if in D3.
fn power_up_if_needed(a: &AdapterShared) -> Result<(), SimError> {
    if lock(&a.ums).power == Power::D0 {
        return Ok(());
    }
    set_power_state(a, PowerDeviceD0)
}

fn resume_power_suspended(a: &AdapterShared) -> Result<(), SimError> {
    let ctxs: Vec<KmtHandle> = lock(&a.ums)
        .contexts
        .values()
        .filter(|c| c.suspended == Suspended::Power)
        .map(|c| c.handle)
        .collect();
    for c in ctxs {
        resume_context(a, c, Suspended::Power)?;
    }
    Ok(())
}

/// UM-16: whether any queue of the adapter has work the OS has not seen complete: its last
/// queued progress value is ahead of the progress fence, or a CPU wait on the fence is still
/// pending (VidSch learns of completion through the DPC's fence processing, not by reading the
/// value: a signal whose interrupt has not been processed yet is not complete for it, and a
/// power-down now would leave that wait behind a disabled interrupt).
fn pending_work(a: &AdapterShared) -> bool {
    lock(&a.ums).queues.values().any(|q| {
        q.last_queued.load(Ordering::Acquire) > q.progress.value()
            || !q.progress.pending_waits().is_empty()
    })
}

/// `DOORBELL_BIND[page]` as the device holds it (`None` in global-doorbell mode). A read of a
/// register by the simulation (no side effects): the hardware check behind the doorbell DDIs.
fn bound_queue(a: &AdapterShared, page: u32) -> Option<u32> {
    if a.device.config().global_doorbell {
        return None;
    }
    let reg = rvgpu_hw::regs::doorbell_bind_reg(page)?;
    Some(a.device.read32(reg))
}

// A physical doorbell the KMD released (disconnect, destroy) may stay bound to its old queue
// until it is given to another doorbell: nothing can ring it any more (the only process mapping
// is the OS's, now the dummy page), so Windows cannot tell and the simulation does not check.

/// Translates the KMD's doorbell kernel VA into a BAR2 page (UM-09).
fn doorbell_page(a: &AdapterShared, kva: usize) -> Result<u32, String> {
    let windows = lock(&a.doorbell_windows);
    let Some((&base, &len)) = windows.range(..=kva).next_back() else {
        return Err(format!(
            "KernelCpuVirtualAddress {kva:#x} is not inside any live DxgkCbMapMemory mapping of \
             the doorbell BAR (BAR2)"
        ));
    };
    let off = kva - base;
    if off >= len {
        return Err(format!(
            "KernelCpuVirtualAddress {kva:#x} is past the end of the BAR2 mapping at {base:#x} \
             ({len:#x} bytes)"
        ));
    }
    if !(off as u64).is_multiple_of(PAGE) {
        return Err(format!(
            "KernelCpuVirtualAddress {kva:#x} is not page-aligned in the BAR2 mapping at \
             {base:#x} (offset {off:#x})"
        ));
    }
    let page = (off as u64 / PAGE) as u32;
    if page >= a.device.config().doorbells {
        return Err(format!(
            "KernelCpuVirtualAddress {kva:#x} is doorbell page {page}, the device has {}",
            a.device.config().doorbells
        ));
    }
    Ok(page)
}

/// `D3DKMTConnectDoorbell` (UM-09, UM-13, UM-14). In D3 the whole sequence (D0, connect,
/// resume) runs with the adapter lock exclusive; otherwise shared, with the device's lock.
fn connect(a: &AdapterShared, device: KmtHandle, h: KmtHandle) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    loop {
        if lock(&a.ums).power == Power::D3 {
            let _x = exclusive(a);
            if lock(&a.ums).power != Power::D3 {
                continue;
            }
            return connect_locked(a, device, h);
        }
        let _g = dev_guard(a, &dl);
        if lock(&a.ums).power == Power::D3 {
            continue;
        }
        return connect_locked(a, device, h);
    }
}

fn connect_locked(a: &AdapterShared, device: KmtHandle, h: KmtHandle) -> Result<(), SimError> {
    let (kmd, node) = {
        let os = lock(&a.ums);
        let d = os
            .doorbells
            .get(&h)
            .filter(|d| d.device == device)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
        if os.devices.get(&device).is_none_or(|dv| dv.in_error) {
            return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED));
        }
        match d.state {
            DoorbellState::Aborted => return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED)),
            DoorbellState::Connected { .. } => return Ok(()),
            DoorbellState::Disconnected => {}
        }
        let node = os.queues.get(&d.queue).map_or(0, |q| q.node);
        (d.kmd, node)
    };
    if let Some(d) = lock(&a.ums).doorbells.get_mut(&h) {
        d.connecting = Some(None);
    }
    let r = connect_ddi(a, h, kmd, node);
    if let Some(d) = lock(&a.ums).doorbells.get_mut(&h) {
        d.connecting = None;
    }
    r
}

fn connect_ddi(a: &AdapterShared, h: KmtHandle, kmd: usize, node: u32) -> Result<(), SimError> {
    let woke = lock(&a.ums).power == Power::D3;
    power_up_if_needed(a)?;
    set_fstate(a, node, 0)?;
    let f = table(a)?.DxgkDdiConnectDoorbell.ok_or_else(|| {
        sim_err(
            a,
            "driver created a doorbell but has no DxgkDdiConnectDoorbell".into(),
        )
    })?;
    let mut args = DXGKARG_CONNECTDOORBELL {
        hDoorbell: kmd as HANDLE,
        Flags: DXGKARG_CONNECTDOORBELL_FLAGS::default(),
        KernelCpuVirtualAddress: std::ptr::null_mut(),
        SecondaryKernelCpuVirtualAddress: std::ptr::null_mut(),
        Status: -1,
    };
    let status = ddi::call(
        a,
        Routine::DxgkDdiConnectDoorbell,
        f as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with a valid argument block naming its doorbell.
            unsafe { f(&mut args) }
        },
    )?;
    let result = if NT_SUCCESS(status) {
        if args.Status != D3DDDI_DOORBELLSTATUS_CONNECTED
            && args.Status != D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD
        {
            return Err(sim_err(
                a,
                format!(
                    "driver bug: DxgkDdiConnectDoorbell succeeded with Status = {} (only \
                     CONNECTED or CONNECTED_NOTIFY_KMD are allowed)",
                    args.Status
                ),
            ));
        }
        let page = doorbell_page(a, args.KernelCpuVirtualAddress as usize)
            .map_err(|m| sim_err(a, format!("driver bug: DxgkDdiConnectDoorbell: {m}")))?;
        // Checked and committed under the OS lock: a concurrent connect of another doorbell
        // that takes this page calls DxgkCbDisconnectDoorbell (which takes this lock) before it
        // rebinds the page, so either that callback is already recorded here or the page is
        // still bound to this queue.
        let mut os = lock(&a.ums);
        let (queue_id, superseded) = match os.doorbells.get(&h) {
            Some(d) => (
                os.queues.get(&d.queue).and_then(|q| q.queue_id),
                d.connecting.flatten(),
            ),
            None => (None, None),
        };
        if superseded.is_some() {
            // Victimised between the KMD's return and the OS's mapping: stays on the dummy
            // page with the callback's status; the UMD reads it and reconnects.
            os.events.push(UmsEvent::ConnectDoorbell {
                doorbell: h,
                page,
                status: args.Status,
            });
            drop(os);
            if woke {
                resume_power_suspended(a)?;
            }
            return Ok(());
        }
        if let (Some(bound), Some(id)) = (bound_queue(a, page), queue_id) {
            if bound != id {
                return Err(sim_err(
                    a,
                    format!(
                        "driver bug: DxgkDdiConnectDoorbell returned physical doorbell {page} \
                         but DOORBELL_BIND[{page}] = {bound:#x}, not the queue's id {id} (UM-15: \
                         connect wires doorbell and queue together)"
                    ),
                ));
            }
        }
        let bus = Arc::downgrade(&a.doorbell_bus);
        if let Some(d) = os.doorbells.get_mut(&h) {
            *lock(&d.cpu.mapping) = Mapping::Physical { page, bus };
            d.cpu.status.store(args.Status, Ordering::Release);
            d.state = DoorbellState::Connected { page };
        }
        os.events.push(UmsEvent::ConnectDoorbell {
            doorbell: h,
            page,
            status: args.Status,
        });
        Ok(())
    } else {
        lock(&a.ums).events.push(UmsEvent::ConnectFailed {
            doorbell: h,
            status,
        });
        Err(SimError::DdiFailed(status))
    };
    if woke {
        resume_power_suspended(a)?;
    }
    result
}

/// Destroys a doorbell (`DxgkDdiDestroyDoorbell`) and drops its allocation references.
fn destroy_doorbell(a: &AdapterShared, h: KmtHandle) -> Result<(), SimError> {
    let kmd = match lock(&a.ums).doorbells.get(&h) {
        Some(d) => d.kmd,
        None => return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE)),
    };
    let f = table(a)?.DxgkDdiDestroyDoorbell.ok_or_else(|| {
        sim_err(
            a,
            "driver created a doorbell but has no DxgkDdiDestroyDoorbell".into(),
        )
    })?;
    let mut args = DXGKARG_DESTROYDOORBELL {
        hDoorbell: kmd as HANDLE,
    };
    let status = ddi::call(
        a,
        Routine::DxgkDdiDestroyDoorbell,
        f as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with a valid argument block naming its doorbell.
            unsafe { f(&mut args) }
        },
    )?;
    must_succeed(a, "DxgkDdiDestroyDoorbell", status)?;
    // Once the doorbell is gone the OS drops its references on the ring and ring control (UM-07)
    // and the UMD may free them: a queue still in a runlist would have the CMP read freed
    // memory at its next kick or commit.
    let queue_id = {
        let os = lock(&a.ums);
        os.doorbells
            .get(&h)
            .and_then(|d| os.queues.get(&d.queue))
            .and_then(|q| q.queue_id)
    };
    if let Some(id) = queue_id {
        if a.device.queues().iter().any(|s| s.queue_id == id) {
            return Err(sim_err(
                a,
                format!(
                    "driver bug: queue id {id} is still in a committed runlist after \
                     DxgkDdiDestroyDoorbell returned (its ring may be freed now, UM-07)"
                ),
            ));
        }
    }
    let mut os = lock(&a.ums);
    let Some(d) = os.doorbells.remove(&h) else {
        return Ok(());
    };
    os.destroyed_doorbells.insert(d.kmd, h);
    os.destroyed_doorbells.insert(kernel_handle(h), h);
    d.cpu
        .status
        .store(D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT, Ordering::Release);
    d.cpu.to_dummy();
    if let Some(q) = os.queues.get_mut(&d.queue) {
        q.doorbell = None;
    }
    os.events.push(UmsEvent::DestroyDoorbell { doorbell: h });
    for alloc in [d.ring, d.control] {
        release_alloc(a, &mut os, alloc);
    }
    Ok(())
}

/// Drops one doorbell reference; frees the memory if the UMD already closed its handle.
fn release_alloc(a: &AdapterShared, os: &mut UmsOs, h: KmtHandle) {
    let free = match os.allocations.get_mut(&h) {
        Some(al) => {
            al.refs = al.refs.saturating_sub(1);
            al.refs == 0 && al.closed
        }
        None => false,
    };
    if free {
        free_alloc(a, os, h);
    }
}

fn free_alloc(a: &AdapterShared, os: &mut UmsOs, h: KmtHandle) {
    if let Some(al) = os.allocations.remove(&h) {
        a.device.memory().free_system(al.alloc.bus_addr);
        os.events.push(UmsEvent::FreeAllocation { allocation: h });
    }
}

fn destroy_hw_queue(m: &Machine, a: &AdapterShared, h: KmtHandle) -> Result<(), SimError> {
    let (kmd, queue_id, fence, fence_h, lock_q) = {
        let os = lock(&a.ums);
        let q = os
            .queues
            .get(&h)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
        if q.doorbell.is_some() {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        (
            q.kmd,
            q.queue_id,
            q.progress.clone(),
            q.fence,
            q.submit_lock.clone(),
        )
    };
    // MF-03: held work never reaches the KMD; the queue's GPU waits are dropped.
    drop_held_work(a, h);
    let _q = lock(&lock_q);
    // Issue 5: the queue is off the runlist; read what its logs still hold.
    crate::sync::fencelog::queue_destroying(a, kmd)?;
    let f = table(a)?.DxgkDdiDestroyHwQueue;
    destroy_kmd_object(a, Routine::DxgkDdiDestroyHwQueue, "queue", f, kmd)?;
    crate::sync::fencelog::queue_destroyed(a, kmd)?;
    {
        let mut os = lock(&a.ums);
        os.queues.remove(&h);
        os.fences.remove(&fence_h);
        os.events.push(UmsEvent::DestroyHwQueue { queue: h });
    }
    if let Some(id) = queue_id {
        if a.device.queues().iter().any(|s| s.queue_id == id) {
            return Err(sim_err(
                a,
                format!(
                    "driver bug: queue id {id} is still in a committed runlist after \
                     DxgkDdiDestroyHwQueue returned (the queue leaked into the hardware)"
                ),
            ));
        }
    }
    let r = m.destroy_monitored_fence(&fence);
    // MF-03: another queue's GPU wait on this progress fence no longer holds it.
    kick_all(a);
    r
}

fn destroy_context(a: &AdapterShared, h: KmtHandle) -> Result<(), SimError> {
    let kmd = {
        let os = lock(&a.ums);
        let c = os
            .contexts
            .get(&h)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
        if os.queues.values().any(|q| q.context == h) {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        c.kmd
    };
    let f = table(a)?.DxgkDdiDestroyContext;
    destroy_kmd_object(a, Routine::DxgkDdiDestroyContext, "context", f, kmd)?;
    let mut os = lock(&a.ums);
    os.contexts.remove(&h);
    os.events.push(UmsEvent::DestroyContext { context: h });
    Ok(())
}

/// Destroys everything of `device` in order, then the device; `wait`: normal exit (UM-17),
/// else abnormal (UM-18: in error, contexts suspended first, no waits).
fn teardown(m: &Machine, a: &AdapterShared, device: KmtHandle, wait: bool) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    if !wait {
        let _g = dev_guard(a, &dl);
        let ctxs: Vec<KmtHandle> = {
            let mut os = lock(&a.ums);
            let Some(d) = os.devices.get_mut(&device) else {
                return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
            };
            d.in_error = true;
            os.events.push(UmsEvent::DeviceError { device });
            os.contexts
                .values()
                .filter(|c| c.device == device)
                .map(|c| c.handle)
                .collect()
        };
        for c in ctxs {
            let state = lock(&a.ums).contexts.get(&c).map(|c| c.suspended);
            if state == Some(Suspended::Power) {
                // Already off the runlist; it must never be resumed now.
                if let Some(cx) = lock(&a.ums).contexts.get_mut(&c) {
                    cx.suspended = Suspended::Exit;
                }
            } else {
                suspend_context(a, c, Suspended::Exit)?;
            }
        }
    }
    let queues: Vec<KmtHandle> = lock(&a.ums)
        .queues
        .values()
        .filter(|q| q.device == device)
        .map(|q| q.handle)
        .collect();
    for q in queues {
        let doorbell = lock(&a.ums).queues.get(&q).and_then(|q| q.doorbell);
        if let Some(d) = doorbell {
            let _g = dev_guard(a, &dl);
            os_disconnect(a, d, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY)?;
        }
        if wait {
            wait_queue_idle(m, a, q)?;
        }
        let _g = dev_guard(a, &dl);
        if let Some(d) = doorbell {
            destroy_doorbell(a, d)?;
        }
        destroy_hw_queue(m, a, q)?;
    }
    let _g = dev_guard(a, &dl);
    {
        let mut os = lock(&a.ums);
        let allocs: Vec<KmtHandle> = os
            .allocations
            .iter()
            .filter(|(_, al)| al.device == device)
            .map(|(h, _)| *h)
            .collect();
        for h in allocs {
            free_alloc(a, &mut os, h);
        }
    }
    let ctxs: Vec<KmtHandle> = lock(&a.ums)
        .contexts
        .values()
        .filter(|c| c.device == device)
        .map(|c| c.handle)
        .collect();
    for c in ctxs {
        destroy_context(a, c)?;
    }
    let kmd = lock(&a.ums)
        .devices
        .get(&device)
        .map(|d| d.kmd)
        .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
    let f = table(a)?.DxgkDdiDestroyDevice;
    destroy_kmd_object(a, Routine::DxgkDdiDestroyDevice, "device", f, kmd)?;
    let mut os = lock(&a.ums);
    os.devices.remove(&device);
    os.events.push(UmsEvent::DestroyDevice { device });
    Ok(())
}

/// UM-17 step 2: waits until the queue's progress fence reaches its last queued value.
fn wait_queue_idle(m: &Machine, a: &AdapterShared, q: KmtHandle) -> Result<(), SimError> {
    let (fence, last) = {
        let os = lock(&a.ums);
        let Some(q) = os.queues.get(&q) else {
            return Ok(());
        };
        (q.progress.clone(), q.last_queued.load(Ordering::Acquire))
    };
    if fence.value() >= last {
        lock(&a.ums).events.push(UmsEvent::WaitedIdle {
            queue: q,
            value: last,
        });
        return Ok(());
    }
    {
        let _x = exclusive(a);
        if lock(&a.ums).power == Power::D3 {
            power_up_if_needed(a)?;
            resume_power_suspended(a)?;
        }
    }
    match m.wait_monitored_fence(&fence, last, m.os_config().wait_timeout)? {
        WaitOutcome::Satisfied => {
            lock(&a.ums).events.push(UmsEvent::WaitedIdle {
                queue: q,
                value: last,
            });
            Ok(())
        }
        o => Err(sim_err(
            a,
            format!(
                "normal process exit: queue {q:#x} never completed its last queued progress \
                 value {last} (fence at {}, wait {o:?})",
                fence.value()
            ),
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// The Machine API.

impl Machine {
    fn ums_adapter(&self, i: usize) -> Result<Arc<AdapterShared>, SimError> {
        let a = self.adapter_shared(i)?.clone();
        if *lock(&a.life) != Life::Started {
            return Err(SimError::Simulation(format!("adapter {i} is not started")));
        }
        Ok(a)
    }

    /// The node metadata adapter `i` reported at start (UM-03).
    pub fn node_metadata(&self, i: usize) -> Vec<DXGK_NODEMETADATA> {
        self.adapter_shared(i)
            .map_or_else(|_| Vec::new(), |a| lock(&a.ums).node_metadata.clone())
    }

    /// `DXGK_USERMODESUBMISSION_CAPS` adapter `i` reported at start (UM-04).
    pub fn usermode_submission_caps(&self, i: usize) -> Option<DXGK_USERMODESUBMISSION_CAPS> {
        self.adapter_shared(i).ok().and_then(|a| lock(&a.ums).caps)
    }

    /// Every OS step of user-mode submission on adapter `i`, in order.
    pub fn ums_events(&self, i: usize) -> Vec<UmsEvent> {
        self.adapter_shared(i)
            .map_or_else(|_| Vec::new(), |a| lock(&a.ums).events.clone())
    }

    /// Forgets the recorded events of adapter `i`.
    pub fn clear_ums_events(&self, i: usize) {
        if let Ok(a) = self.adapter_shared(i) {
            lock(&a.ums).events.clear();
        }
    }

    /// The OS's view of a doorbell.
    pub fn doorbell_info(&self, i: usize, doorbell: KmtHandle) -> Option<DoorbellInfo> {
        let a = self.adapter_shared(i).ok()?;
        let os = lock(&a.ums);
        let d = os.doorbells.get(&doorbell)?;
        Some(DoorbellInfo {
            state: d.state,
            status: d.cpu.status(),
            mapped_page: d.cpu.mapped_page(),
            kmd_handle: d.kmd,
            os_handle: kernel_handle(d.handle),
            queue: d.queue,
            writes: d.cpu.write_counts(),
        })
    }

    /// The KMD's handle of `queue` (`hHWQueue` in the optimized interrupt, issue 5).
    pub fn hw_queue_kmd_handle(&self, i: usize, queue: KmtHandle) -> Option<usize> {
        let a = self.adapter_shared(i).ok()?;
        let os = lock(&a.ums);
        os.queues.get(&queue).map(|q| q.kmd)
    }

    /// Issue 5 (LOG-01): Dxgkrnl moves the `kind` log of `queue` to a new buffer of `entries`
    /// entries while the queue runs (see [`crate::sync::fencelog`]).
    pub fn recreate_hw_queue_log(
        &self,
        p: &UmsProcess,
        queue: KmtHandle,
        kind: crate::sync::fencelog::LogKind,
        entries: u64,
    ) -> Result<(), SimError> {
        let a = self.adapter_shared(p.adapter)?.clone();
        let kmd = {
            let os = lock(&a.ums);
            os.queues
                .get(&queue)
                .filter(|q| q.device == p.device)
                .map(|q| q.kmd)
                .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?
        };
        crate::sync::fencelog::recreate(&a, kmd, kind, entries)
    }

    /// Issue 5: the OS's log state of `queue`'s `kind` log: `(gpu, entries, cursor, last_end,
    /// generation)`.
    pub fn hw_queue_log(
        &self,
        i: usize,
        queue: KmtHandle,
        kind: crate::sync::fencelog::LogKind,
    ) -> Option<(u64, u64, u64, u64, u32)> {
        let a = self.adapter_shared(i).ok()?;
        let kmd = lock(&a.ums).queues.get(&queue).map(|q| q.kmd)?;
        let q = lock(&a.fence_os).logs.get(kmd)?;
        crate::sync::fencelog::log_view(&q, kind)
    }

    /// Issue 5: the current `kind` log buffer of `queue` (tests and benchmarks write entries
    /// into it with [`crate::sync::fencelog::Producer`], as the device does).
    pub fn hw_queue_log_buffer(
        &self,
        i: usize,
        queue: KmtHandle,
        kind: crate::sync::fencelog::LogKind,
    ) -> Option<crate::sync::fencelog::LogBuffer> {
        let a = self.adapter_shared(i).ok()?;
        let kmd = lock(&a.ums).queues.get(&queue).map(|q| q.kmd)?;
        let q = lock(&a.fence_os).logs.get(kmd)?;
        let mut g = lock(&q.logs);
        Some(g.as_mut()?.get_mut(kind).buf.clone())
    }

    /// Issue 5: every retired (recreated) log buffer of adapter `i` still holds its poison.
    pub fn check_retired_logs(&self, i: usize) -> Result<(), SimError> {
        crate::sync::fencelog::check_all_retired(self.adapter_shared(i)?)
    }

    /// The queue id the KMD reported for a hardware queue (from `HwQueuePdd`).
    pub fn hw_queue_id(&self, i: usize, queue: KmtHandle) -> Option<u32> {
        let a = self.adapter_shared(i).ok()?;
        let os = lock(&a.ums);
        os.queues.get(&queue).and_then(|q| q.queue_id)
    }

    /// UM-16: (last queued progress value, completed progress value) of a queue; the queue
    /// has work while the first is ahead.
    pub fn hw_queue_progress(&self, i: usize, queue: KmtHandle) -> Option<(u64, u64)> {
        let a = self.adapter_shared(i).ok()?;
        let os = lock(&a.ums);
        os.queues
            .get(&queue)
            .map(|q| (q.last_queued.load(Ordering::Acquire), q.progress.value()))
    }

    /// UM-16: whether the OS sees work pending on the queue.
    pub fn hw_queue_has_work(&self, i: usize, queue: KmtHandle) -> bool {
        self.hw_queue_progress(i, queue).is_some_and(|(l, c)| l > c)
    }

    /// Contiguous allocations the driver holds on adapter `i` now (leak checks around a
    /// process's life).
    pub fn contiguous_allocations(&self, i: usize) -> usize {
        self.adapter_shared(i)
            .map_or(0, |a| lock(&a.contiguous).len())
    }

    /// Adapter `i`'s power state as the OS drove it.
    pub fn power_state(&self, i: usize) -> Option<Power> {
        self.adapter_shared(i).ok().map(|a| lock(&a.ums).power)
    }

    /// F-state of node `node`'s power component (0 = F0).
    pub fn engine_fstate(&self, i: usize, node: u32) -> Option<u32> {
        let a = self.adapter_shared(i).ok()?;
        let os = lock(&a.ums);
        os.fstate.get(node as usize).copied()
    }

    /// Runs VidSch's PASSIVE work (F1 transitions) now, on the calling thread; threaded
    /// machines also run it on each adapter's worker thread, step machines in every round.
    pub fn run_os_work(&self) -> Result<(), SimError> {
        for i in 0..self.config().adapters.len() {
            let a = self.adapter_shared(i)?.clone();
            run_passive_work(&a);
        }
        match self.state.fault() {
            Some(f) => Err(f.into()),
            None => Ok(()),
        }
    }

    /// A new process with a D3D device on adapter `i` (`DxgkDdiCreateDevice`).
    pub fn create_process(&self, i: usize) -> Result<UmsProcess, SimError> {
        let a = self.ums_adapter(i)?;
        let f = table(&a)?
            .DxgkDdiCreateDevice
            .map_or_else(not_supported, Ok)?;
        let pid = ProcessId(NEXT_PROCESS.fetch_add(1, Ordering::Relaxed));
        let h = new_handle();
        let mut args = DXGKARG_CREATEDEVICE {
            hDevice: kernel_handle(h) as HANDLE,
            Anonymous: DXGKARG_CREATEDEVICE_0 {
                Flags: DXGK_CREATEDEVICEFLAGS::default(),
            },
            Pasid: 0,
            hKmdProcess: std::ptr::null_mut(),
        };
        let ctx = a.context();
        let status = ddi::call(
            &a,
            Routine::DxgkDdiCreateDevice,
            f as usize,
            At::Level(Irql::Passive),
            || {
                // SAFETY: the driver's DDI with its context and a valid argument block.
                unsafe { f(ctx, &mut args) }
            },
        )?;
        check_status(status)?;
        let kmd = args.hDevice as usize;
        {
            let mut os = lock(&a.ums);
            check_kmd_handle(
                &a,
                "DxgkDdiCreateDevice",
                "hDevice",
                kmd,
                os.devices.values().map(|d| d.kmd),
            )?;
            os.devices.insert(
                h,
                DeviceObj {
                    kmd,
                    lock: Arc::new(Mutex::new(())),
                    process: pid,
                    in_error: false,
                },
            );
            os.events.push(UmsEvent::CreateDevice { device: h });
        }
        Ok(UmsProcess {
            adapter: i,
            pid,
            device: h,
        })
    }

    /// The D3DKMT thunks of `p` (what its UMD calls).
    pub fn kmt(&self, p: &UmsProcess) -> crate::kmt::SimKmt<'_> {
        crate::kmt::SimKmt::new(self, *p)
    }

    /// UM-17: normal process exit. Per queue: disconnect the doorbell, wait for the last
    /// queued progress value, destroy doorbell and queue; then the allocations, contexts and
    /// the device.
    pub fn exit_process(&self, p: &UmsProcess) -> Result<(), SimError> {
        let a = self.ums_adapter(p.adapter)?;
        teardown(self, &a, p.device, true)
    }

    /// UM-18: abnormal process exit. The device is marked in error, every context suspended,
    /// every doorbell disconnected, everything destroyed without waiting.
    pub fn kill_process(&self, p: &UmsProcess) -> Result<(), SimError> {
        let a = self.ums_adapter(p.adapter)?;
        teardown(self, &a, p.device, false)
    }

    /// UM-14: D0 → D3: every context suspended, every doorbell disconnected
    /// (`DISCONNECTED_RETRY`), then `DxgkDdiSetPowerState(D3)`.
    ///
    /// A runtime power-down of an idle GPU: the OS uses the progress fences (UM-16) to see that
    /// no queue has work, before it starts and again once every doorbell is disconnected (work
    /// rung before the disconnect had its last-queued value stored first). With work pending
    /// it backs out (contexts resumed; the doorbells stay disconnected, their UMDs reconnect)
    /// and returns `false`.
    pub fn power_down(&self, i: usize) -> Result<bool, SimError> {
        let a = self.ums_adapter(i)?;
        let _x = exclusive(&a);
        if lock(&a.ums).power == Power::D3 {
            return Ok(true);
        }
        if pending_work(&a) {
            return Ok(false);
        }
        let ctxs: Vec<KmtHandle> = lock(&a.ums).contexts.keys().copied().collect();
        for c in ctxs {
            suspend_context(&a, c, Suspended::Power)?;
        }
        let dbs: Vec<KmtHandle> = lock(&a.ums).doorbells.keys().copied().collect();
        for d in dbs {
            os_disconnect(&a, d, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY)?;
        }
        if pending_work(&a) {
            resume_power_suspended(&a)?;
            return Ok(false);
        }
        set_power_state(&a, PowerDeviceD3)?;
        Ok(true)
    }

    /// `DxgkDdiSuspendContext` on one context of `p` (what VidSch does to move its memory,
    /// UM-11). Its doorbells stay connected; the KMD takes its queues off the runlist.
    pub fn suspend_context(&self, p: &UmsProcess, context: KmtHandle) -> Result<(), SimError> {
        let a = self.ums_adapter(p.adapter)?;
        let dl = device_lock(&a, p.device)?;
        let _g = dev_guard(&a, &dl);
        if lock(&a.ums)
            .contexts
            .get(&context)
            .is_none_or(|c| c.device != p.device)
        {
            return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
        }
        suspend_context(&a, context, Suspended::Os)
    }

    /// `DxgkDdiResumeContext` on a context [`Machine::suspend_context`] suspended (UM-12).
    pub fn resume_context(&self, p: &UmsProcess, context: KmtHandle) -> Result<(), SimError> {
        let a = self.ums_adapter(p.adapter)?;
        let dl = device_lock(&a, p.device)?;
        let _g = dev_guard(&a, &dl);
        if lock(&a.ums)
            .contexts
            .get(&context)
            .is_none_or(|c| c.device != p.device)
        {
            return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
        }
        resume_context(&a, context, Suspended::Os)
    }

    /// D3 → D0 without a connect (resumes the contexts the power-down suspended).
    pub fn power_up(&self, i: usize) -> Result<(), SimError> {
        let a = self.ums_adapter(i)?;
        let _x = exclusive(&a);
        if lock(&a.ums).power == Power::D0 {
            return Ok(());
        }
        power_up_if_needed(&a)?;
        resume_power_suspended(&a)
    }

    /// UM-10: device loss. Every doorbell of adapter `i` ends `DISCONNECTED_ABORT` (connected
    /// ones are disconnected through the KMD first) and cannot be reconnected.
    pub fn device_lost(&self, i: usize) -> Result<(), SimError> {
        let a = self.ums_adapter(i)?;
        let _x = exclusive(&a);
        let dbs: Vec<KmtHandle> = lock(&a.ums).doorbells.keys().copied().collect();
        for d in dbs {
            os_disconnect(&a, d, D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT)?;
            let mut os = lock(&a.ums);
            if let Some(db) = os.doorbells.get_mut(&d) {
                if db.state != DoorbellState::Aborted {
                    db.state = DoorbellState::Aborted;
                    db.cpu
                        .status
                        .store(D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT, Ordering::Release);
                    db.cpu.to_dummy();
                    os.events.push(UmsEvent::Aborted { doorbell: d });
                }
            }
        }
        Ok(())
    }

    /// UM-10, device removed: [`Machine::device_lost`], then every D3D device on adapter `i` is
    /// in error (its thunks return `STATUS_DEVICE_REMOVED`, only destruction works) and every
    /// progress fence reads `u64::MAX`, releasing its waiters (what D3D12 fences read after a
    /// removal; UNVERIFIED that Dxgkrnl itself writes the maximum rather than the runtime).
    pub fn device_removed(&self, i: usize) -> Result<(), SimError> {
        self.device_lost(i)?;
        let a = self.ums_adapter(i)?;
        let fences: Vec<MonitoredFence> = {
            let _x = exclusive(&a);
            let mut os = lock(&a.ums);
            let devices: Vec<KmtHandle> = os.devices.keys().copied().collect();
            for d in devices {
                if let Some(dv) = os.devices.get_mut(&d) {
                    if !dv.in_error {
                        dv.in_error = true;
                        os.events.push(UmsEvent::DeviceError { device: d });
                    }
                }
            }
            os.fences.values().cloned().collect()
        };
        for f in fences {
            self.signal_monitored_fence_from_cpu(&f, u64::MAX)?;
        }
        Ok(())
    }

    /// Raw `DxgkDdiSubmitCommandToHwQueue` on `queue`, bypassing the OS's UM-05 check (tests
    /// proving the KMD refuses kernel-mode submission on a user-mode queue). Returns the
    /// driver's status.
    pub fn ddi_submit_command_to_hw_queue(
        &self,
        p: &UmsProcess,
        queue: KmtHandle,
        value: u64,
        gpu: u64,
        bytes: u32,
    ) -> Result<NTSTATUS, SimError> {
        let a = self.ums_adapter(p.adapter)?;
        submit_raw(self, &a, p.device, queue, value, gpu, bytes)
    }

    /// Dxgkrnl's teardown of adapter `i`'s processes before a PnP stop (abnormal exits).
    pub(crate) fn destroy_all_devices(&self, i: usize) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?.clone();
        let devices: Vec<KmtHandle> = lock(&a.ums).devices.keys().copied().collect();
        for d in devices {
            teardown(self, &a, d, false)?;
        }
        Ok(())
    }
}

/// The handle a create DDI returned: non-null and not the handle of another live object of
/// the same kind (the OS could not tell them apart).
fn check_kmd_handle(
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

// ---------------------------------------------------------------------------------------------
// The thunks' OS side (used by `crate::kmt`).

pub(crate) fn create_context(
    a: &AdapterShared,
    device: KmtHandle,
    node: u32,
) -> Result<KmtHandle, SimError> {
    let kmd_device = {
        let os = lock(&a.ums);
        let d = os
            .devices
            .get(&device)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
        if d.in_error {
            return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED));
        }
        let nodes = lock(&a.caps).map_or(0, |c| c.GpuEngineTopology.NbAsymetricProcessingNodes);
        if node >= nodes {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        d.kmd
    };
    let f = table(a)?
        .DxgkDdiCreateContext
        .map_or_else(not_supported, Ok)?;
    let h = new_handle();
    let mut args = DXGKARG_CREATECONTEXT {
        hContext: std::ptr::null_mut(),
        NodeOrdinal: node,
        EngineAffinity: 1,
        Flags: DXGK_CREATECONTEXTFLAGS::default()
            .with(DXGK_CREATECONTEXTFLAGS::HwQueueSupported, 1),
        pPrivateDriverData: std::ptr::null_mut(),
        PrivateDriverDataSize: 0,
        ContextInfo: DXGK_CONTEXTINFO::default(),
    };
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    let status = ddi::call(
        a,
        Routine::DxgkDdiCreateContext,
        f as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with its device handle and a valid argument block.
            unsafe { f(kmd_device as HANDLE, &mut args) }
        },
    )?;
    check_status(status)?;
    let kmd = args.hContext as usize;
    let mut os = lock(&a.ums);
    check_kmd_handle(
        a,
        "DxgkDdiCreateContext",
        "hContext",
        kmd,
        os.contexts.values().map(|c| c.kmd),
    )?;
    // A context created while the adapter is in D3 starts suspended in effect; the KMD is
    // told nothing (it has no queues yet), so the OS treats it as running.
    os.contexts.insert(
        h,
        ContextObj {
            handle: h,
            kmd,
            device,
            node,
            suspended: Suspended::No,
            suspend_fence: 0,
        },
    );
    os.events.push(UmsEvent::CreateContext { context: h, node });
    Ok(h)
}

pub(crate) fn destroy_context_thunk(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    if lock(&a.ums)
        .contexts
        .get(&h)
        .is_none_or(|c| c.device != device)
    {
        return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
    }
    destroy_context(a, h)
}

/// What `D3DKMTCreateHwQueue` returns.
pub(crate) struct CreatedQueue {
    pub handle: KmtHandle,
    pub fence: KmtHandle,
    pub progress: MonitoredFence,
}

pub(crate) fn create_hw_queue(
    m: &Machine,
    a: &AdapterShared,
    device: KmtHandle,
    context: KmtHandle,
    user_mode: bool,
    pdd: &mut [u8],
) -> Result<CreatedQueue, SimError> {
    let (kmd_ctx, node, pid) = {
        let os = lock(&a.ums);
        let c = os
            .contexts
            .get(&context)
            .filter(|c| c.device == device)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
        let d = os
            .devices
            .get(&device)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
        if d.in_error {
            return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED));
        }
        if user_mode && (!os.node_ums(c.node) || os.doorbell_size().is_none()) {
            // UM-03/UM-04: user-mode queues only on capable nodes of a capable adapter.
            return Err(SimError::DdiFailed(STATUS_NOT_SUPPORTED));
        }
        (c.kmd, c.node, d.process)
    };
    let f = table(a)?
        .DxgkDdiCreateHwQueue
        .map_or_else(not_supported, Ok)?;
    let progress = m.create_monitored_fence(a.index, pid, 0)?;
    let h = new_handle();
    let fence_h = new_handle();
    let mut args = DXGKARG_CREATEHWQUEUE {
        hHwQueue: kernel_handle(h) as HANDLE,
        Flags: D3DDDI_CREATEHWQUEUEFLAGS::default().with(
            D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission,
            u32::from(user_mode),
        ),
        PrivateDriverDataSize: pdd.len() as u32,
        pPrivateDriverData: if pdd.is_empty() {
            std::ptr::null_mut()
        } else {
            pdd.as_mut_ptr().cast()
        },
        Anonymous: DXGKARG_CREATEHWQUEUE_0 {
            hHwQueueNativeProgressFence: std::ptr::null_mut(),
        },
        HwQueueProgressFenceCPUVirtualAddress: progress.kernel_va() as PVOID,
        HwQueueProgressFenceGPUVirtualAddress: progress.gpu_va(),
    };
    args.Anonymous.hHwQueueProgressFence = fence_h;
    let dl = device_lock(a, device)?;
    let seq = dev_guard(a, &dl);
    let status = ddi::call(
        a,
        Routine::DxgkDdiCreateHwQueue,
        f as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with its context handle and a valid argument block whose
            // private data buffer lives across the call.
            unsafe { f(kmd_ctx as HANDLE, &mut args) }
        },
    );
    let status = match status {
        Ok(s) => s,
        Err(e) => {
            drop(seq);
            let _ = m.destroy_monitored_fence(&progress);
            return Err(e);
        }
    };
    if !NT_SUCCESS(status) {
        drop(seq);
        m.destroy_monitored_fence(&progress)?;
        return Err(SimError::DdiFailed(status));
    }
    let kmd = args.hHwQueue as usize;
    let queue_id = HwQueuePdd::read_from_bytes(pdd)
        .ok()
        .filter(|p| p.magic == PDD_MAGIC)
        .map(|p| p.queue_id);
    let mut os = lock(&a.ums);
    check_kmd_handle(
        a,
        "DxgkDdiCreateHwQueue",
        "hHwQueue",
        kmd,
        os.queues.values().map(|q| q.kmd),
    )?;
    os.queues.insert(
        h,
        QueueObj {
            handle: h,
            kmd,
            device,
            context,
            node,
            user_mode,
            fence: fence_h,
            progress: progress.clone(),
            last_queued: Arc::new(AtomicU64::new(0)),
            doorbell: None,
            queue_id,
            submit_lock: Arc::new(Mutex::new(())),
            sched: Arc::new(HwqSched::default()),
        },
    );
    os.fences.insert(fence_h, progress.clone());
    os.events.push(UmsEvent::CreateHwQueue {
        queue: h,
        user_mode,
        queue_id,
    });
    drop(os);
    // Issue 5 (LOG-01, LOG-09): both logs of a user-mode queue, before the UMD can use it; a
    // failure fails the creation.
    if let Err(e) = crate::sync::fencelog::queue_created(a, kmd, queue_id, node, pid, user_mode) {
        let _ = destroy_hw_queue(m, a, h);
        return Err(e);
    }
    Ok(CreatedQueue {
        handle: h,
        fence: fence_h,
        progress,
    })
}

pub(crate) fn destroy_hw_queue_thunk(
    m: &Machine,
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    if lock(&a.ums)
        .queues
        .get(&h)
        .is_none_or(|q| q.device != device)
    {
        return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
    }
    destroy_hw_queue(m, a, h)
}

pub(crate) fn create_allocation(
    a: &AdapterShared,
    device: KmtHandle,
    size: u64,
) -> Result<(KmtHandle, SysAlloc), SimError> {
    let mut os = lock(&a.ums);
    match os.devices.get(&device) {
        None => return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE)),
        Some(d) if d.in_error => return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED)),
        Some(_) => {}
    }
    let alloc = a
        .device
        .memory()
        .alloc_system(size, PAGE)
        .ok_or(SimError::DdiFailed(STATUS_NO_MEMORY))?;
    let h = new_handle();
    os.allocations.insert(
        h,
        AllocObj {
            device,
            alloc: alloc.clone(),
            refs: 0,
            closed: false,
        },
    );
    Ok((h, alloc))
}

pub(crate) fn destroy_allocation(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    let mut os = lock(&a.ums);
    let Some(al) = os
        .allocations
        .get_mut(&h)
        .filter(|al| al.device == device && !al.closed)
    else {
        return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
    };
    if al.refs > 0 {
        // UM-07: a live doorbell holds it; the memory goes with the last reference.
        al.closed = true;
        return Ok(());
    }
    free_alloc(a, &mut os, h);
    Ok(())
}

/// What `D3DKMTCreateDoorbell` returns.
pub(crate) struct CreatedDoorbell {
    pub handle: KmtHandle,
    pub cpu: Arc<DoorbellCpuState>,
}

pub(crate) fn create_doorbell(
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    ring: KmtHandle,
    control: KmtHandle,
    pdd: &mut [u8],
) -> Result<CreatedDoorbell, SimError> {
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    let (kmd_queue, size, last_queued) = {
        let os = lock(&a.ums);
        let q = os
            .queues
            .get(&queue)
            .filter(|q| q.device == device)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
        if os.devices.get(&device).is_none_or(|d| d.in_error) {
            return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED));
        }
        // UM-03, UM-04, UM-05.
        let Some(size) = os.doorbell_size() else {
            return Err(SimError::DdiFailed(STATUS_NOT_SUPPORTED));
        };
        if !q.user_mode || !os.node_ums(q.node) {
            return Err(SimError::DdiFailed(STATUS_NOT_SUPPORTED));
        }
        if q.doorbell.is_some() {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        for h in [ring, control] {
            if os
                .allocations
                .get(&h)
                .is_none_or(|al| al.device != device || al.closed)
            {
                return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
            }
        }
        (q.kmd, size, q.last_queued.clone())
    };
    let f = table(a)?
        .DxgkDdiCreateDoorbell
        .map_or_else(not_supported, Ok)?;
    let h = new_handle();
    let mut args = DXGKARG_CREATEDOORBELL {
        hHwQueue: kmd_queue as HANDLE,
        hDoorbell: kernel_handle(h) as HANDLE,
        PrivateDriverDataSize: pdd.len() as u32,
        PrivateDriverData: if pdd.is_empty() {
            std::ptr::null_mut()
        } else {
            pdd.as_mut_ptr().cast::<c_void>()
        },
        hRingBuffer: kernel_handle(ring) as HANDLE,
        hRingBufferControl: kernel_handle(control) as HANDLE,
        Flags: DXGKARG_CREATEDOORBELL_FLAGS::default(),
    };
    let status = ddi::call(
        a,
        Routine::DxgkDdiCreateDoorbell,
        f as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with a valid argument block whose private data buffer
            // lives across the call.
            unsafe { f(&mut args) }
        },
    )?;
    check_status(status)?;
    let kmd = args.hDoorbell as usize;
    let mut os = lock(&a.ums);
    check_kmd_handle(
        a,
        "DxgkDdiCreateDoorbell",
        "hDoorbell",
        kmd,
        os.doorbells.values().map(|d| d.kmd),
    )?;
    let cpu = Arc::new(DoorbellCpuState {
        mapping: Mutex::new(Mapping::Dummy),
        dummy: DummyPage {
            words: (0..(size as usize).div_ceil(8))
                .map(|_| AtomicU64::new(0))
                .collect(),
        },
        status: AtomicI32::new(D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY),
        last_queued,
        dummy_writes: AtomicU64::new(0),
        physical_writes: AtomicU64::new(0),
    });
    for al in [ring, control] {
        if let Some(x) = os.allocations.get_mut(&al) {
            x.refs += 1;
        }
    }
    if let Some(q) = os.queues.get_mut(&queue) {
        q.doorbell = Some(h);
    }
    os.doorbells.insert(
        h,
        DoorbellObj {
            handle: h,
            kmd,
            device,
            queue,
            ring,
            control,
            state: DoorbellState::Disconnected,
            connecting: None,
            cpu: cpu.clone(),
        },
    );
    os.events.push(UmsEvent::CreateDoorbell { doorbell: h });
    Ok(CreatedDoorbell { handle: h, cpu })
}

pub(crate) fn connect_doorbell(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    connect(a, device, h)
}

pub(crate) fn destroy_doorbell_thunk(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    if lock(&a.ums)
        .doorbells
        .get(&h)
        .is_none_or(|d| d.device != device)
    {
        return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
    }
    destroy_doorbell(a, h)
}

pub(crate) fn notify_work_submission(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    let kmd_queue = {
        let os = lock(&a.ums);
        let d = os
            .doorbells
            .get(&h)
            .filter(|d| d.device == device)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
        if !matches!(d.state, DoorbellState::Connected { .. }) {
            // Not connected: nothing to tell the KMD; the work is collected at reconnect.
            return Ok(());
        }
        os.queues.get(&d.queue).map_or(0, |q| q.kmd)
    };
    let f = table(a)?
        .DxgkDdiNotifyWorkSubmission
        .map_or_else(not_supported, Ok)?;
    let mut args = DXGKARG_NOTIFYWORKSUBMISSION {
        hHwQueue: kmd_queue as HANDLE,
        Flags: DXGKARG_NOTIFYWORKSUBMISSION_FLAGS::default(),
    };
    let status = ddi::call(
        a,
        Routine::DxgkDdiNotifyWorkSubmission,
        f as usize,
        At::Level(Irql::Passive),
        || {
            // SAFETY: the driver's DDI with a valid argument block naming its queue.
            unsafe { f(&mut args) }
        },
    )?;
    must_succeed(a, "DxgkDdiNotifyWorkSubmission", status)?;
    lock(&a.ums)
        .events
        .push(UmsEvent::NotifyWorkSubmission { doorbell: h });
    Ok(())
}

fn submit_raw(
    m: &Machine,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    value: u64,
    gpu: u64,
    bytes: u32,
) -> Result<NTSTATUS, SimError> {
    submit_raw_at(
        a,
        device,
        queue,
        value,
        gpu,
        bytes,
        m.os_config().submit_irql,
    )
}

/// [`submit_raw`] at `irql` (VidSch's worker has no `Machine`: it uses the adapter's copy of
/// the OS configuration).
fn submit_raw_at(
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    value: u64,
    gpu: u64,
    bytes: u32,
    irql: Irql,
) -> Result<NTSTATUS, SimError> {
    let (kmd, progress, lock_q) = {
        let os = lock(&a.ums);
        let q = os
            .queues
            .get(&queue)
            .filter(|q| q.device == device)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
        (q.kmd, q.progress.clone(), q.submit_lock.clone())
    };
    let _q = lock(&lock_q);
    let f = table(a)?
        .DxgkDdiSubmitCommandToHwQueue
        .map_or_else(not_supported, Ok)?;
    let args = DXGKARG_SUBMITCOMMANDTOHWQUEUE {
        hHwQueue: kmd as HANDLE,
        HwQueueProgressFenceId: value,
        DmaBufferVirtualAddress: gpu,
        DmaBufferSize: bytes,
        DmaBufferPrivateDataSize: 0,
        pDmaBufferPrivateData: std::ptr::null_mut(),
        Flags: DXGK_SUBMITCOMMANDFLAGS::default(),
        HwQueueProgressFenceGpuVa: progress.gpu_va(),
        HwQueueProgressFenceCpuVa: progress.kernel_va() as PVOID,
    };
    let ctx = a.context();
    ddi::call(
        a,
        Routine::DxgkDdiSubmitCommandToHwQueue,
        f as usize,
        At::Level(irql),
        || {
            // SAFETY: the driver's DDI with its context and a valid argument block naming its
            // queue.
            unsafe { f(ctx, &args) }
        },
    )
}

pub(crate) fn submit_command(
    m: &Machine,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    value: u64,
    gpu: u64,
    bytes: u32,
) -> Result<(), SimError> {
    let (last, sched) = {
        let os = lock(&a.ums);
        let q = os
            .queues
            .get(&queue)
            .filter(|q| q.device == device)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
        if os.devices.get(&device).is_none_or(|d| d.in_error) {
            return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED));
        }
        if q.user_mode {
            // UM-05: user-mode queues have no kernel-mode path.
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        (q.last_queued.clone(), q.sched.clone())
    };
    if value <= last.load(Ordering::Acquire) {
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    {
        // MF-03: behind a pending GPU wait (or other held work) the OS holds the submission.
        let mut st = lock(&sched.st);
        if value <= st.accepted {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        if !st.list.is_empty() {
            st.accepted = value;
            st.list.push_back(Pending::Submit { value, gpu, bytes });
            drop(st);
            lock(&a.ums)
                .events
                .push(UmsEvent::SubmitHeld { queue, value });
            return Ok(());
        }
    }
    // The pump lock keeps a direct submission behind one VidSch's worker is making.
    let _p = lock(&sched.pump);
    if !lock(&sched.st).list.is_empty() {
        drop(_p);
        return submit_command(m, a, device, queue, value, gpu, bytes);
    }
    if lock(&a.ums).power == Power::D3 {
        let _x = exclusive(a);
        power_up_if_needed(a)?;
        resume_power_suspended(a)?;
    }
    let status = submit_raw(m, a, device, queue, value, gpu, bytes)?;
    check_status(status)?;
    last.fetch_max(value, Ordering::AcqRel);
    {
        let mut st = lock(&sched.st);
        st.accepted = st.accepted.max(value);
    }
    lock(&a.ums).events.push(UmsEvent::Submit { queue, value });
    Ok(())
}

pub(crate) fn fence_of(a: &AdapterShared, h: KmtHandle) -> Option<MonitoredFence> {
    lock(&a.ums).fences.get(&h).cloned()
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

// ---------------------------------------------------------------------------------------------
// TDR hooks (issue 7, docs/tdr.md §5; used by `crate::vidsch::tdr` and `crate::vidsch::legacy`).

/// A hardware queue as the TDR watchdog sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TdrQueue {
    pub handle: KmtHandle,
    pub device: KmtHandle,
    pub node: u32,
    pub queue_id: Option<u32>,
    pub last_queued: u64,
    pub completed: u64,
    pub suspended: bool,
    /// Its device is in error (its work will never complete; not watched).
    pub device_in_error: bool,
}

/// Every hardware queue of the adapter with its progress (UM-16 view).
pub(crate) fn tdr_queues(a: &AdapterShared) -> Vec<TdrQueue> {
    let os = lock(&a.ums);
    os.queues
        .values()
        .map(|q| TdrQueue {
            handle: q.handle,
            device: q.device,
            node: q.node,
            queue_id: q.queue_id,
            last_queued: q.last_queued.load(Ordering::Acquire),
            completed: q.progress.value(),
            suspended: os
                .contexts
                .get(&q.context)
                .is_some_and(|c| c.suspended != Suspended::No),
            device_in_error: os.devices.get(&q.device).is_none_or(|d| d.in_error),
        })
        .collect()
}

/// `(KMD context handle, node, device, device in error)` of context `ctx`.
pub(crate) fn tdr_context(
    a: &AdapterShared,
    ctx: KmtHandle,
) -> Option<(usize, u32, KmtHandle, bool)> {
    let os = lock(&a.ums);
    let c = os.contexts.get(&ctx)?;
    let in_error = os.devices.get(&c.device).is_none_or(|d| d.in_error);
    Some((c.kmd, c.node, c.device, in_error))
}

/// The device of the context a `DxgkCbInvalidateHwContext` names: the OS kernel handle of
/// the context or the KMD's handle (docs/tdr.md Q2: either is accepted).
pub(crate) fn tdr_device_of_context(a: &AdapterShared, handle: usize) -> Option<KmtHandle> {
    if handle == 0 {
        return None;
    }
    let os = lock(&a.ums);
    os.contexts
        .values()
        .find(|c| c.kmd == handle || kernel_handle(c.handle) == handle)
        .map(|c| c.device)
}

/// Whether device `device` is in error (or gone).
pub(crate) fn tdr_device_in_error(a: &AdapterShared, device: KmtHandle) -> bool {
    lock(&a.ums).devices.get(&device).is_none_or(|d| d.in_error)
}

/// The devices of the adapter.
pub(crate) fn tdr_devices(a: &AdapterShared) -> Vec<KmtHandle> {
    lock(&a.ums).devices.keys().copied().collect()
}

/// UM-10 for one device after a TDR: the device is in error (thunks return
/// `STATUS_DEVICE_REMOVED`), every doorbell of it is disconnected with `DISCONNECTED_ABORT`
/// (status first, then the dummy page, then `DxgkDdiDisconnectDoorbell`); other devices are
/// not touched. Returns the aborted doorbells.
pub(crate) fn tdr_device_error(
    a: &AdapterShared,
    device: KmtHandle,
) -> Result<Vec<KmtHandle>, SimError> {
    let dbs: Vec<KmtHandle> = {
        let mut os = lock(&a.ums);
        match os.devices.get_mut(&device) {
            Some(d) => d.in_error = true,
            None => return Ok(Vec::new()),
        }
        os.doorbells
            .values()
            .filter(|d| d.device == device)
            .map(|d| d.handle)
            .collect()
    };
    for d in &dbs {
        os_disconnect(a, *d, D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT)?;
        let mut os = lock(&a.ums);
        if let Some(db) = os.doorbells.get_mut(d) {
            if db.state != DoorbellState::Aborted {
                db.state = DoorbellState::Aborted;
                db.cpu
                    .status
                    .store(D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT, Ordering::Release);
                db.cpu.to_dummy();
                os.events.push(UmsEvent::Aborted { doorbell: *d });
            }
        }
    }
    Ok(dbs)
}

/// The adapter-wide lock (power, F1, device loss, and an adapter-wide TDR) held exclusively.
pub(crate) fn tdr_exclusive(a: &AdapterShared) -> std::sync::RwLockWriteGuard<'_, ()> {
    exclusive(a)
}

// ---------------------------------------------------------------------------------------------
// MF-03: OS-scheduled GPU waits and signal packets on kernel-mode hardware queues
// (`D3DKMTSubmitWaitForSyncObjectsToHwQueue`, `D3DKMTSubmitSignalSyncObjectsToHwQueue`).
//
// Each kernel-mode queue has an OS-side ordered list ([`HwqSched`]). A GPU wait entry holds every
// later entry (the OS does not call `DxgkDdiSubmitCommandToHwQueue` for held submissions) until
// its fence reaches the value; the wait is a VidSch-side waiter on the legacy monitored fence
// ([`Machine::wait_monitored_fence_from_gpu`]), released by the same DPC-time scan that releases
// CPU waits, or by a CPU signal, or by another queue's signal packet; its resume only kicks the
// queue, and VidSch's PASSIVE worker (the adapter's worker thread, or the step loop) submits the
// held work in order. A signal entry, once at the head (every earlier wait satisfied, every
// earlier submission handed to the KMD), signals its fences from the OS (what
// `SignalSynchronizationObjectFromCpu` does) as soon as the queue's progress fence reaches the
// last value accepted before it (every earlier submission completed); it does not hold later
// work. Nothing in the driver is involved beyond the submissions themselves.

/// Returns a resume for a VidSch-side waiter: kicks `sched` and wakes the worker.
fn kicker(a: &AdapterShared, sched: &Arc<HwqSched>) -> impl FnOnce() + Send + 'static {
    let w = Arc::downgrade(sched);
    let wake = a.wake.clone();
    move || {
        if let Some(s) = w.upgrade() {
            s.kicked.store(true, Ordering::Release);
            wake.notify();
        }
    }
}

/// What the OS knows of a kernel-mode queue's held work (tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeldWork {
    /// Submissions the OS holds (not yet given to the KMD).
    pub submissions: usize,
    /// GPU waits not yet satisfied at or behind the head.
    pub waits: usize,
    /// Signal packets not yet signalled (held, or waiting for earlier work to complete).
    pub signals: usize,
}

/// The queue's objects a MF-03 thunk checks: (sched, progress fence).
fn mf03_queue(
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
) -> Result<(Arc<HwqSched>, MonitoredFence), SimError> {
    let os = lock(&a.ums);
    let q = os
        .queues
        .get(&queue)
        .filter(|q| q.device == device)
        .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
    if os.devices.get(&device).is_none_or(|d| d.in_error) {
        return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED));
    }
    if q.user_mode {
        // A user-mode queue synchronises in its ring (native fences); the OS has no list
        // for it (UNVERIFIED what Windows returns; the docs list STATUS_INVALID_PARAMETER).
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    Ok((q.sched.clone(), q.progress.clone()))
}

/// The monitored fences behind D3DKMT handles; `signal`: progress fences are refused (only
/// the OS signals them).
fn mf03_fences(
    a: &AdapterShared,
    objects: &[(KmtHandle, u64)],
    signal: bool,
) -> Result<Vec<(MonitoredFence, KmtHandle, u64)>, SimError> {
    if objects.is_empty() {
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    let os = lock(&a.ums);
    objects
        .iter()
        .map(|&(h, v)| {
            if signal && os.queues.values().any(|q| q.fence == h) {
                return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
            }
            os.fences
                .get(&h)
                .map(|f| (f.clone(), h, v))
                .ok_or(SimError::DdiFailed(STATUS_INVALID_PARAMETER))
        })
        .collect()
}

/// `D3DKMTSubmitWaitForSyncObjectsToHwQueue`: one GPU wait entry per object, in order.
pub(crate) fn submit_wait_to_hw_queue(
    m: &Machine,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    objects: &[(KmtHandle, u64)],
) -> Result<(), SimError> {
    let (sched, _) = mf03_queue(a, device, queue)?;
    let fences = mf03_fences(a, objects, false)?;
    for (fence, handle, value) in fences {
        let event = m.wait_monitored_fence_from_gpu(&fence, value, kicker(a, &sched))?;
        lock(&sched.st).list.push_back(Pending::Wait {
            fence,
            handle,
            value,
            event,
        });
        lock(&a.ums).events.push(UmsEvent::GpuWaitQueued {
            queue,
            fence: handle,
            value,
        });
    }
    pump(a, queue)
}

/// `D3DKMTSubmitSignalSyncObjectsToHwQueue` on one queue (the `BroadcastHwQueueArray` of one):
/// one signal packet for all the objects.
pub(crate) fn submit_signal_to_hw_queue(
    m: &Machine,
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    objects: &[(KmtHandle, u64)],
) -> Result<(), SimError> {
    let (sched, progress) = mf03_queue(a, device, queue)?;
    let fences = mf03_fences(a, objects, true)?;
    let after = lock(&sched.st).accepted;
    let event = if progress.value() < after {
        Some(m.wait_monitored_fence_from_gpu(&progress, after, kicker(a, &sched))?)
    } else {
        None
    };
    lock(&sched.st).list.push_back(Pending::Signal(Signal {
        fences,
        after,
        event,
    }));
    pump(a, queue)
}

/// The OS signals a signal packet's fences (its earlier submissions completed).
fn fire(a: &AdapterShared, queue: KmtHandle, s: Signal) {
    for (f, h, v) in s.fences {
        // A fence destroyed meanwhile has nobody left to release.
        if f.os_signal(v).is_ok() {
            lock(&a.ums).events.push(UmsEvent::GpuSignal {
                queue,
                fence: h,
                value: v,
            });
        }
    }
}

enum PumpStep {
    Blocked,
    Released(KmtHandle, u64),
    Fire(Signal),
    Submit { value: u64, gpu: u64, bytes: u32 },
}

/// Moves a kernel-mode queue's OS-side list forward as far as it can: satisfied waits are
/// dropped, signal packets at the head are armed (or signalled), submissions at the head go to
/// the KMD in order. Runs on the thunk's thread or VidSch's worker, never at DPC time.
fn pump(a: &AdapterShared, queue: KmtHandle) -> Result<(), SimError> {
    let Some((sched, progress, last, device)) = ({
        let os = lock(&a.ums);
        os.queues.get(&queue).map(|q| {
            (
                q.sched.clone(),
                q.progress.clone(),
                q.last_queued.clone(),
                q.device,
            )
        })
    }) else {
        return Ok(());
    };
    let _p = lock(&sched.pump);
    loop {
        let ready: Vec<Signal> = {
            let mut st = lock(&sched.st);
            if st.dead {
                return Ok(());
            }
            let done = progress.value();
            let (ready, keep) = std::mem::take(&mut st.armed)
                .into_iter()
                .partition(|s| s.after <= done);
            st.armed = keep;
            ready
        };
        for s in ready {
            fire(a, queue, s);
        }
        let step = {
            let mut st = lock(&sched.st);
            match st.list.front() {
                None => PumpStep::Blocked,
                Some(Pending::Wait {
                    fence,
                    handle,
                    value,
                    event,
                }) => {
                    if rvgpu_hw::fence::wait_satisfied(fence.value(), *value)
                        || event.outcome() == Some(WaitOutcome::Abandoned)
                    {
                        // A wait on a fence destroyed meanwhile no longer holds the queue
                        // (UNVERIFIED against Windows).
                        let r = PumpStep::Released(*handle, *value);
                        st.list.pop_front();
                        r
                    } else {
                        PumpStep::Blocked
                    }
                }
                Some(Pending::Signal(_)) => match st.list.pop_front() {
                    Some(Pending::Signal(s)) if s.after <= progress.value() => PumpStep::Fire(s),
                    Some(Pending::Signal(s)) => {
                        st.armed.push(s);
                        continue;
                    }
                    _ => PumpStep::Blocked,
                },
                Some(&Pending::Submit { value, gpu, bytes }) => {
                    if st.retry_at.is_some_and(|v| progress.value() < v) {
                        PumpStep::Blocked
                    } else {
                        st.retry_at = None;
                        PumpStep::Submit { value, gpu, bytes }
                    }
                }
            }
        };
        match step {
            PumpStep::Blocked => return Ok(()),
            PumpStep::Released(fence, value) => {
                lock(&a.ums).events.push(UmsEvent::GpuWaitReleased {
                    queue,
                    fence,
                    value,
                });
            }
            PumpStep::Fire(s) => fire(a, queue, s),
            PumpStep::Submit { value, gpu, bytes } => {
                if tdr_device_in_error(a, device) {
                    // Device removed: held work is discarded.
                    lock(&sched.st).list.pop_front();
                    continue;
                }
                if lock(&a.ums).power == Power::D3 {
                    let _x = exclusive(a);
                    power_up_if_needed(a)?;
                    resume_power_suspended(a)?;
                }
                let status = submit_raw_at(a, device, queue, value, gpu, bytes, a.os.submit_irql)?;
                if NT_SUCCESS(status) {
                    lock(&sched.st).list.pop_front();
                    last.fetch_max(value, Ordering::AcqRel);
                    lock(&a.ums).events.push(UmsEvent::Submit { queue, value });
                } else if progress.value() < last.load(Ordering::Acquire) {
                    // The KMD's ring is full: resubmit once earlier work completed.
                    lock(&sched.st).retry_at = Some(last.load(Ordering::Acquire));
                    return Ok(());
                } else {
                    lock(&sched.st).list.pop_front();
                    return Err(sim_err(
                        a,
                        format!(
                            "driver refused held submission {value} of queue {queue:#x} with \
                             nothing in flight: {:#010x}",
                            status as u32
                        ),
                    ));
                }
            }
        }
    }
}

/// VidSch's worker: pumps the kicked queues (and the ones whose ring-full retry is due).
fn run_hwq_work(a: &AdapterShared) -> bool {
    if a.state.is_halted() || *lock(&a.life) != Life::Started {
        return false;
    }
    let due: Vec<KmtHandle> = {
        let os = lock(&a.ums);
        os.queues
            .values()
            .filter(|q| q.sched.due(&q.progress, true))
            .map(|q| q.handle)
            .collect()
    };
    for q in &due {
        if let Err(e) = pump(a, *q) {
            if !a.state.is_halted() {
                a.state
                    .raise_sim_error(format!("queue {q:#x}: held work failed: {e}"));
            }
            break;
        }
    }
    !due.is_empty()
}

/// The queue is being destroyed: its held submissions never reach the KMD, its GPU waits and
/// pending signal packets are dropped (their VidSch-side waiters cancelled).
fn drop_held_work(a: &AdapterShared, h: KmtHandle) {
    let Some((sched, progress)) = lock(&a.ums)
        .queues
        .get(&h)
        .map(|q| (q.sched.clone(), q.progress.clone()))
    else {
        return;
    };
    let (list, armed) = {
        let mut st = lock(&sched.st);
        st.dead = true;
        st.retry_at = None;
        (std::mem::take(&mut st.list), std::mem::take(&mut st.armed))
    };
    let (mut submissions, mut waits, mut signals) = (0, 0, 0);
    let mut drop_signal = |s: Signal| {
        signals += 1;
        if let Some(ev) = s.event {
            progress.cancel_gpu_wait(&ev);
        }
    };
    for e in list {
        match e {
            Pending::Submit { .. } => submissions += 1,
            Pending::Wait { fence, event, .. } => {
                waits += 1;
                fence.cancel_gpu_wait(&event);
            }
            Pending::Signal(s) => drop_signal(s),
        }
    }
    for s in armed {
        drop_signal(s);
    }
    if submissions + waits + signals > 0 {
        lock(&a.ums).events.push(UmsEvent::HeldWorkDropped {
            queue: h,
            submissions,
            waits,
            signals,
        });
    }
}

/// A legacy monitored fence of `device`'s process with a D3DKMT handle (the handle the MF-03
/// thunks and `D3DKMTWaitForSynchronizationObjectFromCpu` take).
pub(crate) fn create_sync_fence(
    m: &Machine,
    a: &AdapterShared,
    device: KmtHandle,
    initial: u64,
) -> Result<(KmtHandle, MonitoredFence), SimError> {
    let pid = lock(&a.ums)
        .devices
        .get(&device)
        .map(|d| d.process)
        .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
    let f = m.create_monitored_fence(a.index, pid, initial)?;
    let h = new_handle();
    lock(&a.ums).fences.insert(h, f.clone());
    Ok((h, f))
}

/// Destroys a fence from [`create_sync_fence`] (not a progress fence).
pub(crate) fn destroy_sync_fence(
    m: &Machine,
    a: &AdapterShared,
    h: KmtHandle,
) -> Result<(), SimError> {
    let f = {
        let mut os = lock(&a.ums);
        if os.queues.values().any(|q| q.fence == h) {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        os.fences
            .remove(&h)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?
    };
    let r = m.destroy_monitored_fence(&f);
    kick_all(a);
    r
}

/// A fence went away: every queue's list is looked at again (a GPU wait on a destroyed fence
/// no longer holds its queue; UNVERIFIED what Windows does with such a wait).
fn kick_all(a: &AdapterShared) {
    for q in lock(&a.ums).queues.values() {
        q.sched.kicked.store(true, Ordering::Release);
    }
    a.wake.notify();
}

impl Machine {
    /// MF-03: the OS-side held work of kernel-mode queue `queue` on adapter `i`.
    pub fn hw_queue_held(&self, i: usize, queue: KmtHandle) -> Option<HeldWork> {
        let a = self.adapter_shared(i).ok()?.clone();
        let sched = lock(&a.ums).queues.get(&queue)?.sched.clone();
        let st = lock(&sched.st);
        let mut h = HeldWork {
            signals: st.armed.len(),
            ..HeldWork::default()
        };
        for e in &st.list {
            match e {
                Pending::Submit { .. } => h.submissions += 1,
                Pending::Wait { .. } => h.waits += 1,
                Pending::Signal(_) => h.signals += 1,
            }
        }
        Some(h)
    }
}
