//! VidSch's per-adapter state: its system objects, its hardware-scheduling state, the wake
//! of its PASSIVE worker and its DMA-buffer completion event. Held by the adapter ([`crate::adapter::AdapterShared::sch`]), with
//! the types it holds; the operations are in [`crate::vidsch`]. Also the machine's history of
//! recovered TDRs ([`TdrHistory`]) and each process's ([`ProcessTdr`]), held by the machine's
//! state.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};
use std::time::Instant;

use rvgpu_ddi::hws::{
    DXGKARG_SETUPPRIORITYBANDS, DXGK_SCHEDULING_LOG_CONTEXT_STATE, DXGK_SCHEDULING_PRIORITY_BAND,
    DXGK_SCHEDULING_PRIORITY_BAND_NORMAL,
};
use rvgpu_ddi::NTSTATUS;
use rvgpu_device::SysAlloc;

use crate::base::clock::MsClock;
use crate::base::line::Wake;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;

/// VidSch's state for one adapter.
#[derive(Debug, Default)]
pub struct VidSchState {
    /// VidSch's system device and per-node system contexts (BR-66, [`crate::vidsch::system`]).
    pub system: Mutex<SystemObjects>,
    /// VidSch's hardware-scheduling state: node set-up calls, scheduling logs, context bands
    /// ([`crate::vidsch::hws`]).
    pub hws: Mutex<HwsOs>,
    /// Wakes VidSch's PASSIVE worker (work was posted; the DPC thread after a DPC that left
    /// it something, or after each DPC while TDR detection is on). Three wakes, so that an
    /// interrupt on the way to a CPU waiter does not wake every simulation thread at once.
    pub wake: Arc<Wake>,
    /// Set each time a node's last completed fence ID moves (the legacy scheduler's
    /// completions, a reset's retirements), and when the machine halts.
    pub completion: Arc<CompletionEvent>,
    /// Each node's resource ([`NodeResources`]).
    pub node_resources: NodeResources,
}

/// The ERESOURCE each VidSch node holds at +1784: a suspend or resume of a hardware context
/// holds its node's shared for the whole exchange with the driver
/// (`M:VidSchiSuspendResumeHwContext` @0x140020730), and the engine reset of a
/// hardware-scheduled node holds it exclusively around `VidSchiResetHwEngine`
/// (`M:VidSchiResetEngines` @0x1400A690C). So no suspend is half-done while the reset checks
/// that every context's last requested suspend completed.
#[derive(Debug, Default)]
pub struct NodeResources {
    locks: [RwLock<()>; NodeResources::NODES],
    /// Per node, how many exclusive acquisitions found the resource held and waited: a test
    /// learns from it that a reset is parked behind a suspend, as an event, not a delay.
    waits: [AtomicU32; NodeResources::NODES],
}

impl NodeResources {
    /// More nodes than any adapter the simulation starts reports.
    const NODES: usize = 8;

    /// Node `node`'s resource (the last one's for an ordinal past [`Self::NODES`], which no
    /// started adapter has).
    fn index(node: u32) -> usize {
        usize::try_from(node).map_or(Self::NODES - 1, |n| n.min(Self::NODES - 1))
    }

    fn of(&self, node: u32) -> &RwLock<()> {
        &self.locks[Self::index(node)]
    }

    /// Node `node`'s resource held shared (a context's suspend or resume).
    pub fn shared(&self, node: u32) -> RwLockReadGuard<'_, ()> {
        self.of(node).read().unwrap_or_else(|p| p.into_inner())
    }

    /// Node `node`'s resource held exclusively (its engine reset).
    pub fn exclusive(&self, node: u32) -> RwLockWriteGuard<'_, ()> {
        match self.of(node).try_write() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                self.waits[Self::index(node)].fetch_add(1, Ordering::Release);
                self.of(node).write().unwrap_or_else(|p| p.into_inner())
            }
        }
    }

    /// How many exclusive acquisitions of node `node`'s resource have had to wait.
    pub fn exclusive_waits(&self, node: u32) -> u32 {
        self.waits[Self::index(node)].load(Ordering::Acquire)
    }
}

/// The driver's handles of the system device and its per-node contexts.
#[derive(Clone, Debug, Default)]
pub struct SystemObjects {
    /// `DXGKARG_CREATEDEVICE::hDevice` as the driver returned it (0: none).
    pub device: usize,
    /// `DXGKARG_CREATECONTEXT::hContext` per node.
    pub contexts: Vec<usize>,
}

/// One HWS call the OS made, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HwsCall {
    /// `DxgkDdiSetupPriorityBands` for `node` (`None` status: NULL slot, not called).
    SetupPriorityBands {
        /// The node being initialised.
        node: u32,
        /// The argument block.
        args: DXGKARG_SETUPPRIORITYBANDS,
        /// The driver's status.
        status: Option<NTSTATUS>,
    },
    /// `DxgkDdiSetSchedulingLogBuffer`.
    SetSchedulingLogBuffer {
        /// `NodeOrdinal`.
        node: u32,
        /// `NumberOfEntries`.
        entries: u32,
        /// `InterruptEntry`.
        interrupt_entry: u32,
        /// `LogBufferCpuVa`.
        cpu_va: usize,
        /// `LogBufferGpuVa`.
        gpu_va: u64,
        /// The driver's status (`None`: NULL slot).
        status: Option<NTSTATUS>,
    },
    /// `DxgkDdiSetContextSchedulingProperties`.
    SetContextSchedulingProperties {
        /// The D3DKMT context.
        context: KmtHandle,
        /// `hContext` passed (the KMD's handle).
        kmd: usize,
        /// `priorityBand`.
        band: DXGK_SCHEDULING_PRIORITY_BAND,
        /// `realtimeBandPriorityLevel`.
        realtime_level: i32,
        /// `inProcessPriority`.
        in_process_priority: i32,
        /// `quantum`.
        quantum: u64,
        /// `gracePeriodSamePriority`.
        grace_same: u64,
        /// `gracePeriodLowerPriority`.
        grace_lower: u64,
        /// The driver's status (`None`: NULL slot).
        status: Option<NTSTATUS>,
    },
    /// `DxgkDdiResetHwEngine` (TDR on a hardware-scheduled node).
    ResetHwEngine {
        /// Node.
        node: u32,
        /// Status.
        status: NTSTATUS,
    },
    /// `DxgkDdiResumeHwEngine`.
    ResumeHwEngine {
        /// Node.
        node: u32,
        /// Status.
        status: NTSTATUS,
    },
}

/// One scheduling-log entry the OS accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedLogEntry {
    /// Free-running index (`WraparoundCount * NumberOfEntries + slot`).
    pub index: u64,
    /// `GpuTimeStamp`.
    pub timestamp: u64,
    /// `hKmdContext`.
    pub kmd_context: usize,
    /// The D3DKMT context the OS knows under that KMD handle.
    pub context: KmtHandle,
    /// `newContextState` (`DXGK_SCHEDULING_LOG_CONTEXT_STATE_*`).
    pub state: DXGK_SCHEDULING_LOG_CONTEXT_STATE,
}

/// Counters of one node's log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedLogStats {
    /// The OS's read position (free-running index).
    pub read: u64,
    /// Entries the writer overwrote before the OS read them.
    pub lost: u64,
    /// Scheduling-log interrupts received for the node.
    pub interrupts: u64,
    /// Entries refused (triage log).
    pub refused: u64,
}

/// One node's scheduling log.
#[derive(Debug)]
pub struct NodeLog {
    pub(crate) alloc: SysAlloc,
    pub(crate) entries: u64,
    pub(crate) interrupt_entry: u32,
    pub(crate) last_ts: u64,
    pub(crate) stats: SchedLogStats,
    pub(crate) accepted: Vec<SchedLogEntry>,
}

/// A KMD context the OS created on a hardware-scheduled node.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KnownContext {
    pub(crate) context: KmtHandle,
    pub(crate) node: u32,
    /// Set when destroyed: entries read after that naming it are refused.
    pub(crate) destroyed: bool,
}

/// A context's scheduling priority as the OS last told the KMD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextPriority {
    /// `priorityBand`.
    pub band: DXGK_SCHEDULING_PRIORITY_BAND,
    /// `inProcessPriority`.
    pub in_process: i32,
    /// `realtimeBandPriorityLevel`.
    pub realtime_level: i32,
}

impl Default for ContextPriority {
    fn default() -> Self {
        Self {
            band: DXGK_SCHEDULING_PRIORITY_BAND_NORMAL,
            in_process: 0,
            realtime_level: 0,
        }
    }
}

/// Per-adapter HWS state.
#[derive(Debug, Default)]
pub struct HwsOs {
    /// Nodes with `ContextSchedulingSupported` (from the metadata at start).
    pub hw_nodes: Vec<u32>,
    /// Every HWS call, in order.
    pub calls: Vec<HwsCall>,
    pub(crate) logs: BTreeMap<u32, NodeLog>,
    pub(crate) known: HashMap<usize, KnownContext>,
}

impl HwsOs {
    /// Is `node` hardware-scheduled?
    pub fn is_hw_node(&self, node: u32) -> bool {
        self.hw_nodes.contains(&node)
    }
}

/// Windows' history of recovered TDRs (24H2 `g_TdrHistory`): one for the machine, whichever
/// adapter recovered, as `TdrHistoryIsLimitExhausted` reads it (`crate::vidsch::tdr::limit`).
/// Held by the machine's state, not an adapter's. Its clock is the machine's: rounds in step
/// mode (every adapter's TDR work runs once a round), milliseconds since the machine was made
/// in threaded mode.
#[derive(Debug, Default)]
pub struct TdrHistory {
    clock: MsClock,
    /// When each recent adapter-wide recovery finished ([`Self::now`]), oldest first.
    pub(crate) times: Mutex<VecDeque<u64>>,
    /// Each process's own history and blocks, by process (`crate::vidsch::tdr::process`).
    pub(crate) processes: Mutex<HashMap<ProcessId, ProcessTdr>>,
}

/// What 24H2's `VIDSCH_PROCESS` keeps for TDR (`M:VidSchCreateProcess` @0x1400FE760): its own
/// history of engine timeouts (`TdrHistoryInit` at +40, the same 64-entry ring as the
/// machine's), the bitmap of adapters its GPU access is blocked on (+2624, one bit per adapter
/// index) and whether it registered as DWM (+2632, `M:VidSchRegisterAsDwm` @0x140124F20).
#[derive(Debug, Default)]
pub struct ProcessTdr {
    /// When each recent engine timeout charged to the process was stamped ([`TdrHistory::now`]),
    /// oldest first.
    pub(crate) times: VecDeque<u64>,
    /// The adapters (by index) the process is blocked on.
    pub(crate) blocked: BTreeSet<usize>,
    /// The process registered as DWM: its timeouts are not charged.
    pub(crate) dwm: bool,
}

impl TdrHistory {
    /// Step mode: one more round of the machine.
    pub fn advance_round(&self) {
        self.clock.advance(1);
    }

    /// Now on the machine's clock: rounds in step mode, milliseconds in threaded mode.
    pub fn now(&self, step: bool) -> u64 {
        self.clock.now(step)
    }

    /// Whether `pid`'s GPU access is blocked on adapter `adapter` (`M:VidSchIsGpuAccessBlocked`
    /// @0x1400FB9A0: the adapter's bit in the process's bitmap).
    pub(crate) fn is_blocked(&self, pid: ProcessId, adapter: usize) -> bool {
        crate::base::lock::lock(&self.processes)
            .get(&pid)
            .is_some_and(|p| p.blocked.contains(&adapter))
    }

    /// `pid` registered as DWM (`M:VidSchRegisterAsDwm` @0x140124F20).
    pub(crate) fn register_as_dwm(&self, pid: ProcessId) {
        crate::base::lock::lock(&self.processes)
            .entry(pid)
            .or_default()
            .dwm = true;
    }

    /// `pid` is gone: so are its history and blocks (they live in its `VIDSCH_PROCESS`).
    pub(crate) fn forget_process(&self, pid: ProcessId) {
        crate::base::lock::lock(&self.processes).remove(&pid);
    }
}

/// VidSch's event for DMA buffer completion: VidMm's paging waits sleep on it rather than
/// look again and again, as 24H2's VidMm waits on the paging fence's event
/// (`M:VIDMM_GLOBAL::WaitForFence` @0x140038E5C through `WaitForFences` @0x1400B4060, a
/// `KeWaitForMultipleObjects`). Each setting counts one generation: a waiter reads the
/// generation before it looks at what it waits for, and sleeps only while the generation is
/// unchanged, so a setting between its look and its sleep is never lost.
#[derive(Debug, Default)]
pub struct CompletionEvent {
    generation: Mutex<u64>,
    cv: Condvar,
    /// Times a waiter looked at what it waits for (tests: a wait looks once per setting, not
    /// once per tick).
    pub(crate) looks: std::sync::atomic::AtomicU64,
}

impl CompletionEvent {
    /// The current generation (read before looking at the condition).
    pub(crate) fn generation(&self) -> u64 {
        *crate::base::lock::lock(&self.generation)
    }

    /// Sets the event: every waiter wakes and looks again.
    pub(crate) fn set(&self) {
        *crate::base::lock::lock(&self.generation) += 1;
        self.cv.notify_all();
    }

    /// Sleeps until the generation is past `seen` or `deadline` passes; whether it moved.
    pub(crate) fn wait_past(&self, seen: u64, deadline: Instant) -> bool {
        let mut g = crate::base::lock::lock(&self.generation);
        while *g == seen {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            g = crate::base::lock::waiting(g, |g| {
                let (g, _) = self
                    .cv
                    .wait_timeout(g, left)
                    .unwrap_or_else(|e| e.into_inner());
                (g, ())
            })
            .0;
        }
        true
    }
}
