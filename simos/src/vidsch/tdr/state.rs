//! What VidSch keeps for timeout detection and recovery: reasons, events, the per-node
//! schedule of DMA buffers and the adapter's TDR state.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use crate::base::clock::MachineTime;
use crate::ob::KmtHandle;
use rvgpu_ddi::basic::NTSTATUS;
use rvgpu_ddi::interrupt::DXGK_INTERRUPT_TYPE;
use rvgpu_device::device::RunClock;
use rvgpu_device::Device;

/// Why the OS reset (docs/tdr.md#the-simulated-os). Only 9's value is from the seed; the others are the
/// simulation's (UNVERIFIED).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum TdrReason {
    /// A per-engine reset recovered the timeout.
    EngineTimeout = 1,
    /// The adapter has no per-engine reset (`SupportPerEngineTDR = 0`): adapter-wide reset.
    AdapterTimeout = 2,
    /// `TdrEngineTimeoutPromotedToAdapterReset`: the engine reset failed (TDR-09) or aborted a
    /// paging packet (TDR-08).
    EngineTimeoutPromotedToAdapterReset = 9,
    /// Forced by a test program (`D3DKMT_ESCAPE_TDRDBGCTRL`, `DXGK_TDR_TYPE_FORCED`): the
    /// adapter-wide path without a timeout.
    Forced = 3,
}

/// What triggered a TDR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Kernel-mode DMA buffers in flight and no completion for the timeout.
    DmaTimeout,
    /// A hardware queue's progress fence did not move for the timeout (UM-16).
    HwQueueStalled {
        /// The queue's D3DKMT handle.
        queue: KmtHandle,
    },
    /// `EngineStateChange(NewState = HUNG)`.
    EngineHung,
    /// `DmaFaulted` on the node.
    Faulted {
        /// The faulted fence ID.
        fence: u32,
    },
}

/// The driver's part of a TDR dump from `DxgkDdiCollectDbgInfo2`, kept as 24H2 keeps it
/// (`TdrCollectDbgInfoStage1` @0x140368AC0): the bytes of its zeroed 16 MiB buffer up to the
/// last non-zero one, at least one (`CTDR_DUMP_BUFFER::ShrinkLastSegment` @0x140369884),
/// whatever the status, which the dump's flags record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TdrDump {
    /// What the driver returned.
    pub status: i32,
    /// The kept bytes (rvgpu's are a `rvgpu_hw::tdrdump` record).
    pub bytes: Vec<u8>,
    /// The engine-timeout payload's `hContext` after the call (0: the driver named none).
    pub hcontext: usize,
}

/// One step of detection and recovery, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TdrEvent {
    /// A timeout (or hang report) was detected on `node`.
    Detected { node: u32, cause: Cause },
    /// A late fence on `node` that `DxgkDdiQueryCurrentFence` showed completed: its interrupt
    /// was lost, which is not a hang (no timeout counted).
    FenceQueried { node: u32 },
    /// `DxgkDdiPreemptCommand(fence)`.
    PreemptRequested { node: u32, fence: u32 },
    /// `DmaPreempted` arrived in time: no TDR.
    Preempted {
        node: u32,
        fence: u32,
        last_completed: u32,
    },
    /// The preemption timed out (or was not attempted): this is a TDR.
    Timeout { node: u32 },
    /// `DxgkDdiCollectDbgInfo(reason)`; `bytes` up to the first NUL.
    CollectDbgInfo { reason: u32, bytes: usize },
    /// `DxgkDdiCollectDbgInfo2(reason, TdrType)` (24H2 prefers it where the driver has it);
    /// `bytes` kept in the dump ([`TdrDump`]).
    CollectDbgInfo2 {
        reason: u32,
        tdr_type: i32,
        bytes: usize,
    },
    /// The atomic snapshot at device IRQL.
    Snapshot {
        node: u32,
        submitted: u32,
        completed: u32,
    },
    /// Nothing to reset (the work completed before the snapshot).
    NothingToReset { node: u32 },
    /// DPCs flushed.
    DpcFlushed { node: u32 },
    /// `DxgkDdiQueryDependentEngineGroup`.
    DependentGroup { node: u32, mask: u64 },
    /// `DxgkDdiQueryEngineStatus`.
    EngineStatus { node: u32, responsive: bool },
    /// The test's pause hook ran.
    Paused { node: u32 },
    /// A report of `node` arrived while its interrupts were ignored.
    IgnoredInterrupt {
        node: u32,
        interrupt_type: DXGK_INTERRUPT_TYPE,
        fence: u32,
    },
    /// `DxgkDdiResetEngine` returned.
    ResetEngine {
        node: u32,
        status: NTSTATUS,
        last_aborted: u32,
    },
    /// `DxgkDdiResetHwEngine` returned (hardware-scheduled node).
    ResetHwEngine { node: u32, status: NTSTATUS },
    /// `DxgkDdiResumeHwEngine` returned.
    ResumeHwEngine { node: u32, status: NTSTATUS },
    /// `DxgkCbInvalidateHwContext` named a context of `device`.
    Invalidated { device: KmtHandle },
    /// Packets retired by the reset (completed, their interrupts ignored or pending).
    Retired { node: u32, fences: Vec<u32> },
    /// The aborted packet.
    Aborted { node: u32, fence: u32, paging: bool },
    /// A packet resubmitted (`old` = `new` for paging packets, TDR-03).
    Resubmitted {
        node: u32,
        old: u32,
        new: u32,
        paging: bool,
    },
    /// A packet of an errored device dropped.
    Dropped { node: u32, fence: u32 },
    /// `device`'s process was blocked on the adapter: this engine timeout was one too many
    /// within `TdrLimitTime` (`super::process`).
    ProcessBlocked { device: KmtHandle },
    /// A device reset with its adapter (`K:DXGDEVICE::Reset` @0x1401BB7FC).
    DeviceReset { device: KmtHandle },
    /// A device put in error (UM-10).
    DeviceError {
        device: KmtHandle,
        doorbells_aborted: usize,
    },
    /// `DxgkDdiResetFromTimeout` returned successfully.
    AdapterReset { reason: TdrReason },
    /// VidMm purged every segment (`vidmm::residency::purge`): the allocations told of their
    /// eviction from VRAM with the bytes the driver wrote for each, and the aperture runs
    /// unmapped (first offset, bus page at each).
    SegmentsPurged {
        notified: Vec<(KmtHandle, usize)>,
        unmapped: Vec<(u64, Vec<u64>)>,
    },
    /// `DxgkDdiRestartFromTimeout` returned successfully.
    Restarted,
    /// VidMm restored what the purge unmapped and submitted again `recommitted` batches of
    /// page-table paging the reset dropped (`vidmm::inflight`).
    SegmentsRestored { recommitted: usize },
    /// The node runs again.
    Recovered { node: u32 },
}

/// TDR settings of one adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TdrConfig {
    /// Step mode: rounds without progress before a timeout (> the device's 200-step hang
    /// detection, docs/tdr.md#the-simulated-os).
    pub timeout_steps: u64,
    /// Threaded mode: the machine's time without progress before a timeout (see `TdrOs::now`).
    pub timeout: Duration,
    /// Step mode: rounds to wait for `DmaPreempted`.
    pub preempt_steps: u64,
    /// Threaded mode: the machine's time to wait for `DmaPreempted`.
    pub preempt_timeout: Duration,
    /// Watch hardware queues' progress fences (UM-16) as well as DMA fences.
    pub watch_hw_queues: bool,
    /// `GraphicsDrivers\TdrLimitCount`: adapter-wide recoveries within [`Self::limit_time`]
    /// after which the next adapter timeout bug-checks (default 5; read as 1 to 32,
    /// `super::limit`).
    pub limit_count: u32,
    /// Threaded mode: `GraphicsDrivers\TdrLimitTime` (default 60 s; read as 5 s to 3600 s).
    pub limit_time: Duration,
    /// Step mode: `TdrLimitTime` in rounds. The default, 9000, keeps Windows' ratio of
    /// `TdrLimitTime` to `TdrDelay` (60 s to 2 s) over the default 300-round timeout.
    pub limit_time_steps: u64,
    /// `GraphicsDrivers\TdrDebugMode` (default 2, `TDR_DEBUG_MODE_RECOVER_NO_PROMPT`; 0 to 3
    /// kept, anything else read as 2 by `K:TdrInit` @0x1401CFC24). Only 3 changes what the
    /// simulation does (no debugger is ever attached): `K:TdrIsRecoveryRequired`
    /// @0x1401D01F0 skips the `TdrLimitCount` check ("will not check for consecutive
    /// recoveries", `K:TdrAllowToDebugEngineTimeout` @0x1401CF460); the per-process block of
    /// VidSch does not read it (`super::process`).
    pub debug_mode: u32,
}

impl Default for TdrConfig {
    fn default() -> Self {
        Self {
            timeout_steps: 300,
            timeout: Duration::from_millis(200),
            preempt_steps: 20,
            preempt_timeout: Duration::from_millis(20),
            watch_hw_queues: true,
            limit_count: 5,
            limit_time: Duration::from_secs(60),
            limit_time_steps: 9_000,
            debug_mode: 2,
        }
    }
}

/// Where the GPU fetches a kernel-mode DMA buffer from.
#[derive(Clone, Copy, Debug)]
pub enum DmaBuf {
    /// The OS's own buffer in contiguous system memory (paging buffers, the system context),
    /// submitted by physical address and freed when its fence ID retires.
    System { bus_addr: u64, len: u64 },
    /// A buffer the OS wrote into the process's arena (`crate::vidmm::dmabuf`,
    /// `Machine::submit_legacy`), submitted by its GPU VA and returned to the arena when its
    /// fence ID retires.
    Arena { bus_addr: u64, va: u64 },
    /// The process's own command buffer (`D3DKMTSubmitCommand`), submitted by its GPU VA: the
    /// OS holds no copy, the GPU reads the words when it runs the packet.
    Process { va: u64 },
}

impl DmaBuf {
    /// The GPU VA in the submitting process (`DxgkDdiSubmitCommandVirtual`); `None` for a
    /// buffer submitted by physical address.
    pub fn va(&self) -> Option<u64> {
        match *self {
            Self::System { .. } => None,
            Self::Arena { va, .. } | Self::Process { va } => Some(va),
        }
    }
}

/// A kernel-mode DMA buffer in flight.
#[derive(Clone, Debug)]
pub struct Packet {
    /// Fence ID.
    pub id: u32,
    /// Submission order on the adapter, kept across resubmissions (which change `id`).
    pub serial: u64,
    /// `Flags.Paging`.
    pub paging: bool,
    /// The submitting device (`None`: the system context).
    pub device: Option<KmtHandle>,
    /// The KMD's context handle (for the OS's own buffers, the node's system context,
    /// [`crate::vidsch::system`]).
    pub context_kmd: usize,
    /// Devices owning the allocations it references (paging: TDR-08).
    pub owners: Vec<KmtHandle>,
    /// The DMA buffer.
    pub dma: DmaBuf,
    /// Bytes of commands in it.
    pub bytes: u32,
}

#[derive(Debug, Default)]
pub(crate) struct NodeSched {
    pub next_id: u32,
    pub pending: BTreeMap<u32, Packet>,
    pub s: u32,
    pub c: u32,
    pub ignore_irq: bool,
    pub last_change: u64,
    pub hung: bool,
    pub faulted: Option<u32>,
    /// The fence of the `DmaFaulted` being recovered: that packet is dropped with its device
    /// in error, never resubmitted (it would fault again).
    pub faulted_fence: Option<u32>,
    pub preempt: Option<(u32, u64)>,
    pub preempted: Option<(u32, u32)>,
    /// Per hardware queue: (completed value last seen, when it last moved).
    pub watch: HashMap<KmtHandle, (u64, u64)>,
    /// The last completed fence at which the watchdog asked `DxgkDdiQueryCurrentFence`
    /// whether a completion interrupt was lost (once per stall, before a timeout counts).
    pub queried_c: Option<u32>,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Report {
    Completed(u32),
    Preempted(u32, u32),
    Faulted(u32),
    Hung,
}

impl Report {
    /// The fence the report names (the preemption fence of a preemption; 0 for a hang).
    pub(super) fn fence(self) -> u32 {
        match self {
            Report::Completed(f) | Report::Preempted(f, _) | Report::Faulted(f) => f,
            Report::Hung => 0,
        }
    }
}

/// The OS's TDR and kernel-mode scheduling state of one adapter.
#[derive(Debug)]
pub(crate) struct TdrOs {
    pub enabled: bool,
    pub step: bool,
    pub config: TdrConfig,
    /// Threaded mode's clock ([`Self::now`]).
    pub clock: MachineTime,
    pub rounds: u64,
    pub nodes: Vec<NodeSched>,
    pub(super) isr: Vec<(u32, Report)>,
    pub events: Vec<TdrEvent>,
    pub reason: Option<TdrReason>,
    /// Every retired fence per node, in order (completions and reset retirements).
    pub completed: Vec<(u32, u32)>,
    /// `DxgkCbInvalidateHwContext` accepted now (inside `DxgkDdiResetEngine`).
    pub(super) in_reset: Option<u32>,
    pub(super) invalidated: Vec<KmtHandle>,
    /// Engine and adapter recoveries finished, counted after their last step (UM-10's
    /// device errors), so whoever sees a count sees the whole recovery.
    pub resets: u64,
    pub adapter_resets: u64,
    /// Adapter-wide resets that have dropped their in-flight packets, counted with the
    /// `Dropped` events (long before the reset finishes).
    pub adapter_drops: u64,
    /// The last `DxgkDdiCollectDbgInfo2` dump, as Windows keeps it.
    pub last_dump: Option<TdrDump>,
    /// The last [`Packet::serial`] given.
    pub serial: u64,
}

impl TdrOs {
    /// Ends the reset call in progress: the devices `DxgkCbInvalidateHwContext` named during it.
    pub(crate) fn end_reset(&mut self) -> Vec<KmtHandle> {
        self.in_reset = None;
        std::mem::take(&mut self.invalidated)
    }

    pub(super) fn new(run_clock: Option<RunClock>) -> Self {
        Self {
            enabled: false,
            step: true,
            config: TdrConfig::default(),
            clock: MachineTime::new(run_clock),
            rounds: 0,
            nodes: Vec::new(),
            isr: Vec::new(),
            events: Vec::new(),
            reason: None,
            completed: Vec::new(),
            in_reset: None,
            invalidated: Vec::new(),
            resets: 0,
            adapter_resets: 0,
            adapter_drops: 0,
            last_dump: None,
            serial: 0,
        }
    }

    /// The TDR's clock: rounds in step mode; in threaded mode milliseconds of the machine's
    /// time ([`MachineTime`]), which stands still while the host does not run the emulated
    /// GPU's thread. Windows times its nodes on the wall clock (`M:VidSchiCheckHwProgress`
    /// @0x1400B5C20 compares deadlines with `KeQueryPerformanceCounter` in 100 ns), but a real
    /// GPU is never descheduled: here the GPU runs on a host thread a loaded host may starve
    /// for longer than the timeout, and counting that as "the GPU did not move" would reset
    /// innocent work.
    pub fn now(&self) -> u64 {
        if self.step {
            return self.rounds;
        }
        u64::try_from(self.clock.now().as_millis()).unwrap_or(u64::MAX)
    }

    pub(super) fn timeout(&self) -> u64 {
        if self.step {
            self.config.timeout_steps
        } else {
            self.config.timeout.as_millis() as u64
        }
    }

    pub(super) fn preempt_timeout(&self) -> u64 {
        if self.step {
            self.config.preempt_steps
        } else {
            self.config.preempt_timeout.as_millis() as u64
        }
    }

    pub fn node(&mut self, n: u32) -> &mut NodeSched {
        let i = n as usize;
        if self.nodes.len() <= i {
            self.nodes.resize_with(i + 1, || NodeSched {
                next_id: 1,
                ..NodeSched::default()
            });
        }
        &mut self.nodes[i]
    }
}

/// What a test's pause hook gets: the adapter's device (step it to reproduce TDR-07).
pub type PauseHook = Box<dyn FnMut(&Arc<Device>) + Send>;

/// Per-adapter TDR state with its locks.
pub(crate) struct TdrShared {
    pub os: Mutex<TdrOs>,
    pub(crate) pause: Mutex<Option<PauseHook>>,
    /// Kernel-mode submissions hold it shared; a recovery holds it exclusively.
    pub gate: RwLock<()>,
    /// VidSch's submission path: a fence ID is assigned and `DxgkDdiSubmitCommand` called
    /// under it, so IDs reach the driver in increasing order (taken after `gate`).
    pub submit: Mutex<()>,
    /// One recovery at a time.
    pub(crate) recovering: Mutex<()>,
}
