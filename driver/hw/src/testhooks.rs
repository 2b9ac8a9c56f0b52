//! The KMD's test hooks: a `D3DKMTEscape` (driver-private) request a test program sends to read
//! what the KMD saw of timeout detection and recovery (the journal) and to arm a fault in the
//! KMD's own recovery path. This is what lets the `Tdr.*` cases that need the OS's recovery
//! steps, or an injected fault, run on Windows, where no thunk returns VidSch's fence IDs.
//!
//! Off unless the device's software key holds the `REG_DWORD` [`TEST_HOOKS_VALUE`] = 1 (an
//! administrator's setting on a test machine; the INF never writes it): without it the KMD
//! answers a test-hook request as any unknown escape, `STATUS_INVALID_PARAMETER`, nothing
//! written. The KMD reads the value when the adapter starts.
//!
//! A request is a [`TestHookEscape`] header, followed for [`TestHookOp::Journal`] by room for
//! whole [`JournalRecord`]s (the caller sizes the escape buffer; the KMD fills as many as fit).

use crate::pdd::PDD_MAGIC;

/// The software-key value that turns the hooks on (`REG_DWORD`, 1 = on).
pub const TEST_HOOKS_VALUE: &str = "TestHooks";
/// Version of [`TestHookEscape`] and [`JournalRecord`].
pub const TEST_HOOK_ESCAPE_VERSION: u32 = 0x100 | 1;
/// Records the KMD keeps; older ones are overwritten (a reader sees the gap in `seq`).
pub const JOURNAL_RECORDS: usize = 256;

wire_enum! {
    /// What a [`TestHookEscape`] asks.
    pub enum TestHookOp: u32, from_u32 {
        /// Copy records with `seq >= TestHookEscape::seq` (out: `seq` = the next record's
        /// sequence number, `count` = records written after the header).
        Journal = 1,
        /// The next `DxgkDdiResetEngine` / `DxgkDdiResetHwEngine` of `node` fails as a failed
        /// engine reset does (`STATUS_DEVICE_HARDWARE_ERROR`, nothing changed; TDR-09).
        FailNextReset = 2,
        /// The next paging buffer built for `node` ends in a HANG (TDR-08).
        HangNextPaging = 3,
        /// The next engine reset of `node` first lets the engine finish what it has (bounded),
        /// re-evaluating every blocked wait as it does (`WAIT_RESCAN` of 0), so that work
        /// waiting on a word a program wrote with the CPU completes between the OS's snapshot
        /// and the reset (TDR-07).
        CompleteBeforeReset = 4,
        /// Copy the text of the KMD's last `DxgkDdiCollectDbgInfo` after the header (out:
        /// `count` = bytes written; `seq` = the journal sequence number of that call).
        LastDbgInfo = 5,
        /// Copy one native fence log of hardware queue `node` (its device queue id) as the
        /// device wrote it, header then entries, after the header; `seq` (in) names the log
        /// by its `DXGK_NATIVE_FENCE_LOG_TYPE` (`LOG_TYPE_WAITS` or `LOG_TYPE_SIGNALS`).
        /// Answered only for a queue of the device the escape names. Out: `count` = bytes
        /// written (as many as fit), `seq` = the log's `NumberOfEntries` (0 and nothing
        /// written: the queue has no such log).
        QueueLog = 6,
        /// Copy what the KMD answers the OS about the adapter (`DXGKQAITYPE_DRIVERCAPS`, node
        /// metadata, `DXGK_USERMODESUBMISSION_CAPS`) as a [`KmdCapsReport`] after the header,
        /// whose room must be exactly its size.
        DriverCaps = 7,
    }
}

wire_struct! {
    /// The test-hook escape's header (32 bytes, in/out).
    #[size(32)]
    pub struct TestHookEscape {
        /// [`PDD_MAGIC`] (in).
        pub magic: u32,
        /// [`TEST_HOOK_ESCAPE_VERSION`] (in).
        pub version: u32,
        /// A [`TestHookOp`] (in).
        pub op: u32,
        /// The node ordinal an arming op names (in).
        pub node: u32,
        /// [`TestHookOp::Journal`]: the first sequence number wanted (in), the next one (out).
        pub seq: u64,
        /// Records or bytes written after the header (out).
        pub count: u32,
        /// Reserved, 0.
        pub reserved: u32,
    }
}

impl TestHookEscape {
    /// A request for `op` on `node` from sequence number `seq`.
    pub fn new(op: TestHookOp, node: u32, seq: u64) -> Self {
        Self {
            magic: PDD_MAGIC,
            version: TEST_HOOK_ESCAPE_VERSION,
            op: op as u32,
            node,
            seq,
            ..Self::default()
        }
    }
}

/// [`KmdCapsReport::flags`]: `SchedulingCaps.MultiEngineAware`.
pub const CAPS_MULTI_ENGINE_AWARE: u32 = 1 << 0;
/// [`KmdCapsReport::flags`]: `SchedulingCaps.NativeGpuFence`.
pub const CAPS_NATIVE_GPU_FENCE: u32 = 1 << 1;
/// [`KmdCapsReport::flags`]: `SchedulingCaps.No64BitAtomics`.
pub const CAPS_NO_64BIT_ATOMICS: u32 = 1 << 2;
/// [`KmdCapsReport::flags`]: `SupportPerEngineTDR`.
pub const CAPS_PER_ENGINE_TDR: u32 = 1 << 3;

wire_struct! {
    /// [`TestHookOp::DriverCaps`]'s answer (32 bytes): the KMD's caps as it reports them to
    /// the OS, which no thunk passes on to a program, and the device configuration they
    /// come from.
    #[size(32)]
    pub struct KmdCapsReport {
        /// `CAPS_*` bits.
        pub flags: u32,
        /// `GpuEngineTopology.NbAsymetricProcessingNodes`.
        pub nodes: u32,
        /// `InterruptMessageNumber`.
        pub interrupt_message_number: u32,
        /// `MemoryManagementCaps.PagingNode`.
        pub paging_node: u32,
        /// Bit per node: its metadata's `UserModeSubmissionSupported`.
        pub user_mode_nodes: u32,
        /// `DXGK_USERMODESUBMISSION_CAPS::DoorbellSizeInBytes` (0: not answered).
        pub doorbell_size: u32,
        /// The device's physical doorbells (`CONFIG.DOORBELLS`), which bound how many
        /// user-mode queues ring without victimisation and which no thunk reports.
        pub doorbells: u32,
        /// The device's `CAPS` register as the KMD read it at start ([`crate::regs::Caps`]
        /// bits, e.g. `GLOBAL_DOORBELL`).
        pub device_caps: u32,
    }
}

wire_enum! {
    /// What a [`JournalRecord`] records: a DDI the OS called, or what the KMD reported.
    pub enum JournalKind: u16, from_u16 {
        /// `DxgkDdiSubmitCommand` / `DxgkDdiSubmitCommandVirtual` accepted a DMA buffer:
        /// `a` = SubmissionFenceId, `b` = the DMA buffer's GPU VA (0 for a paging buffer).
        Submit = 1,
        /// The ISR reported `DmaCompleted`: `a` = the fence ID.
        DmaCompleted = 2,
        /// `DxgkDdiPreemptCommand`: `a` = PreemptionFenceId, `b` = 0 (`DXGKARG_PREEMPTCOMMAND`
        /// carries no other fence ID).
        PreemptCommand = 3,
        /// The KMD reported `DmaPreempted`: `a` = PreemptionFenceId, `b` = the last completed
        /// fence ID it carried.
        DmaPreempted = 4,
        /// `DxgkDdiQueryCurrentFence`: `a` = the fence ID answered.
        QueryCurrentFence = 5,
        /// `DxgkDdiQueryDependentEngineGroup`: `a` = the mask answered.
        DependentEngineGroup = 6,
        /// `DxgkDdiQueryEngineStatus`: `a` = 1 if responsive.
        EngineStatus = 7,
        /// `DxgkDdiCollectDbgInfo` or `DxgkDdiCollectDbgInfo2`: `a` = the reason, `b` = the
        /// bytes of text written (the text [`TestHookOp::LastDbgInfo`] returns).
        CollectDbgInfo = 8,
        /// `DxgkDdiResetEngine` returned `status`: `a` = LastAbortedFenceId.
        ResetEngine = 9,
        /// `DxgkDdiResetHwEngine` returned `status`.
        ResetHwEngine = 10,
        /// `DxgkDdiResetFromTimeout` returned `status`.
        ResetFromTimeout = 11,
        /// `DxgkDdiRestartFromTimeout` returned `status`.
        RestartFromTimeout = 12,
        /// The KMD called `DxgkCbInvalidateHwContext`: `a` = the KMD's context handle.
        InvalidateHwContext = 13,
        /// An armed fault fired: `a` = its [`TestHookOp`].
        FaultFired = 14,
        /// The KMD reported native fences signalled (`DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED`),
        /// one record per report: `a` = the fences it names (0 where it names a queue's log
        /// or none), `b` = 1 if it names a hardware queue.
        NativeFenceSignaled = 15,
        /// The KMD reported a legacy monitored fence signalled
        /// (`DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED`).
        MonitoredFenceSignaled = 16,
        /// `DxgkDdiUpdateMonitoredValues` named a native fence of the adapter: `a` = the
        /// MonitoredValue the OS armed it with (`u64::MAX`: no waiter left).
        MonitoredValue = 17,
    }
}

/// [`JournalRecord::flags`]: the DMA buffer is a paging buffer (`DxgkDdiSubmitCommand` with
/// `Flags.Paging`).
pub const JOURNAL_PAGING: u32 = 1 << 0;
/// [`JournalRecord::flags`]: the OS resubmitted it after a reset (`Flags.Resubmission`).
pub const JOURNAL_RESUBMISSION: u32 = 1 << 1;

wire_struct! {
    /// One journal record (32 bytes).
    #[size(32)]
    pub struct JournalRecord {
        /// Sequence number, from 1, one per record the KMD wrote since the adapter started.
        pub seq: u32,
        /// A [`JournalKind`].
        pub kind: u16,
        /// The node ordinal (0 where the record names none).
        pub node: u16,
        /// See [`JournalKind`].
        pub a: u64,
        /// See [`JournalKind`].
        pub b: u64,
        /// The DDI's status, where it returns one.
        pub status: i32,
        /// [`JOURNAL_PAGING`], [`JOURNAL_RESUBMISSION`].
        pub flags: u32,
    }
}
