//! Where the decompiled Windows 11 Dxgkrnl and Microsoft's pages disagree about the
//! native-fence, doorbell and hardware-queue flows, and which answer a machine plays.
//!
//! Neither source wins by default: the pseudocode is one build read by hand, the pages are
//! what Microsoft promises. A driver that is correct on Windows survives both, so every
//! disagreement is an option here, the suites run under each reading (the machine's
//! [`super::Windows`] carries its answers: its kernel's code, or the pages), and
//! docs/windows-bringup.md ("Where the code and the pages disagree") lists each with both
//! sources. The default is 24H2 as decompiled (`11-24H2` in `nohuto/decompiled-pseudocode`;
//! K: dxgkrnl, M: dxgmms2).

/// What `DxgkDdiCreateNativeFence` is told about the fence's storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemVas {
    /// 24H2 and 25H2: `K:DXGADAPTERSYNCOBJECT::InitializeAdapterObject` (@0x1401839C8; 25H2
    /// the same) zeroes the argument block and fills only the handle, the type and the private
    /// data, so `CurrentValueSystemProcessGpuVa` and `MonitoredValueSystemProcessGpuVa` reach
    /// the driver as 0 whatever `MapToGpuSystemProcess` says.
    NotPassed,
    /// 26H1 (`InitializeAdapterObject` @0x140351D48, `VidMmMapPagingProcessGpuVA`) and the
    /// pages (`DXGK_NATIVE_FENCE_CAPS`): with `MapToGpuSystemProcess` set, the OS maps both
    /// values into the paging process and passes those VAs.
    Mapped,
}

/// How the OS moves a native fence's MonitoredValue as waits come and go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MonitoredValue {
    /// 24H2, for a fence that is not cross-adapter (M: MonitoredValue, C: CurrentValue, W: the
    /// new wait's value). A new wait, CPU (`M:VidSchSubmitWaitFromCpu` @0x14000DF30) or GPU
    /// (`M:VidSchiAcquireSyncObjectForHwQueue` @0x14000396C, after its "already reached"
    /// test), sets M := W (`M:VidSchiUpdateNativeFenceMonitoredValue` @0x140045ECC) when
    /// `W <= M || C >= M` and W is above the last value signalled from the CPU; otherwise it
    /// only logs. So a wait arriving after C passed M *raises* M above lower waits still
    /// pending, which then get no interrupt until a signal reaches the new M (a late wake).
    /// Releasing waits (`M:VidSchiUnwaitNativeFenceWaiters` @0x1400458E8) sets M := u64::MAX
    /// when none remain and otherwise leaves it alone (it only logs when the lowest remaining
    /// is above M): every later signal interrupts until the last waiter is gone, or a new wait
    /// raises M. The 25H2 and 26H1 readings keep it (nothing read there says otherwise).
    ///
    /// Nothing else re-arms M: `VidSchiUpdateNativeFenceMonitoredValue`'s only callers are the
    /// three above (its XREFs), and no DPC, signal or timer path writes M otherwise. A wait the
    /// raise passed over is released only when something unrelated makes VidSch look at its
    /// fence: another wait or a CPU signal on it, a signal reaching the raised M, or
    /// `M:VidSchiUnwaitMonitoredFences` @0x14000E4E0 walking every CPU waiter of the adapter
    /// (`M:UnblockCpuWaiter` @0x1400342D0): on a scan report
    /// (`M:UnwaitFencesFromNativeFenceSignaledDpc` @0x1400518DC, modelled: the scan set), a
    /// legacy monitored-fence interrupt, a DMA completion or a CPU wait on a non-native object
    /// (not modelled, they only add releases). An idle GPU strands it for good, so the reading
    /// is complete and the UMD defends: its waits on one fence leave M at or below its lowest
    /// pending wait, and at or below C + 1 on a fence shared with other processes
    /// (`umd/src/wait.rs`, docs/performance.md).
    RaisedByNewWaits,
    /// The pages (`DxgkDdiUpdateMonitoredValues`, NF-02, NF-04): W − 1 for the lowest pending
    /// wait, re-armed to the next one as waits are released; never above a pending wait.
    BelowAwaitedRearmed,
}

impl MonitoredValue {
    /// MonitoredValue once a wait for `w` is queued, from `m` (the value the OS gave last),
    /// `current` (CurrentValue), `last_cpu_signal` (the last value signalled from the CPU) and
    /// `lowest` (the lowest pending wait, `w` included). Releasing satisfied waits follows
    /// ([`Self::after_release`]).
    pub fn on_new_wait(
        self,
        m: u64,
        w: u64,
        current: u64,
        last_cpu_signal: u64,
        lowest: u64,
    ) -> u64 {
        match self {
            Self::RaisedByNewWaits if (w <= m || current >= m) && w > last_cpu_signal => w,
            Self::RaisedByNewWaits => m,
            Self::BelowAwaitedRearmed => lowest.saturating_sub(1),
        }
    }

    /// MonitoredValue after satisfied waits were released, from `m` and the lowest wait still
    /// pending.
    pub fn after_release(self, m: u64, lowest: Option<u64>) -> u64 {
        match (self, lowest) {
            (_, None) => u64::MAX,
            (Self::RaisedByNewWaits, Some(_)) => m,
            (Self::BelowAwaitedRearmed, Some(w)) => w.saturating_sub(1),
        }
    }

    /// Whether a new wait can leave MonitoredValue above waits still pending (late wakes).
    pub fn raises_over_waits(self) -> bool {
        self == Self::RaisedByNewWaits
    }
}

/// How the OS passes new values to `DxgkDdiUpdateMonitoredValues` and
/// `DxgkDdiUpdateCurrentValuesFromCpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueUpdates {
    /// 24H2: `M:VidSchiUpdateNativeFenceMonitoredValue` (@0x140045ECC) and
    /// `M:VidSchiUpdateNativeFenceCurrentValue` (@0x140045B14) call the DDIs one fence at a
    /// time with the `...KernelCpuVa` array NULL, and store nothing themselves.
    OneAtATimeNoCpuVa,
    /// 26H1 (`UpdateNativeFenceMonitoredValue` @0x14002EF10): one fence at a time, with the
    /// kernel CPU VA of the value.
    OneAtATimeWithCpuVa,
    /// The pages: batches of fences, each with the kernel CPU VA of the value to store.
    BatchedWithCpuVa,
}

impl ValueUpdates {
    /// Whether the kernel CPU VA array is passed.
    pub fn passes_cpu_va(self) -> bool {
        self != Self::OneAtATimeNoCpuVa
    }
}

/// At what IRQL the OS calls `DxgkDdiUpdateCurrentValuesFromCpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuUpdateIrql {
    /// 24H2: at device IRQL under the interrupt lock (`DpSynchronizeExecution` around the DDI
    /// in `M:VidSchiUpdateNativeFenceCurrentValue`).
    DeviceUnderInterruptLock,
    /// The page's DISPATCH_LEVEL.
    Dispatch,
}

/// When VidSch does its DPC-time native-fence work (resample, `UpdateMonitoredValues`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DpcFenceWork {
    /// 24H2: inside the driver's `DxgkCbNotifyDpc` call (`M:VidSchDdiNotifyDpc`
    /// @0x1400079E0), so the driver is still in its DPC routine.
    InsideNotifyDpc,
    /// After the driver's DPC routine returned (what the pages' order suggests).
    AfterDpcReturns,
}

/// What `DxgkCbDisconnectDoorbell` does with a victim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VictimDisconnect {
    /// 24H2: `K:DXGDOORBELL::Disconnect` (@0x1401D82E8) calls the driver's
    /// `DxgkDdiDisconnectDoorbell` for the victim while the driver is still inside
    /// `DxgkDdiConnectDoorbell`, under the victim's device lock.
    CallsDriverDisconnect,
    /// The pages: the OS remaps the victim's VA and writes its status; the driver is not
    /// called back.
    StatusOnly,
}

/// Whether the OS asks the driver for a node's current fence (`DxgkDdiQueryCurrentFence`): before
/// a late fence counts as a hang, and after a hardware-scheduled engine's reset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LostFence {
    /// 24H2: never asked. `K:ADAPTER_RENDER::DdiQueryCurrentFence` @0x140069000 is called only
    /// by its core-interface thunk (`K:ADAPTER_RENDER_DdiQueryCurrentFence` @0x14006BD20) and
    /// dxgmms2 has no stub for it; a node's timeout check (`M:VidSchiCheckNodeTimeout`
    /// @0x1400B6030) asks `DxgkDdiQueryEngineStatus` instead. A lost completion interrupt is
    /// the driver's to recover before the timeout.
    NotAsked,
    /// The `DxgkDdiQueryCurrentFence` page (Remarks): when interrupts stopped and the kernel
    /// waited too long for a fence, it asks the driver, which reports a completion it missed;
    /// after `DxgkDdiResetHwEngine` "the OS needs to ... synchronize its state with the reset
    /// GPU engine" (that page's Remarks), which the simulation does with the same question.
    Asked,
}

/// Which debug-report DDI a TDR calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbgInfoDdi {
    /// 24H2: every report (`K:TdrCollectDbgInfoStage1` @0x140368AC0, from the engine resets and
    /// from `K:TdrIsRecoveryRequired` @0x1401D01F0 for the adapter-wide one) goes through
    /// `K:DXGADAPTER::_DdiCollectDbgInfoNoLocks` @0x1403698F8, which calls
    /// `DxgkDdiCollectDbgInfo2` when the slot is filled and `DxgkDdiCollectDbgInfo` only
    /// otherwise.
    SecondWhenFilled,
    /// The pages' TDR sequence (TDR-05's step 3, the TDR and engine-reset pages): the
    /// debug report is `DxgkDdiCollectDbgInfo`, for every report.
    First,
}

/// What VidSch does with a `DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE` report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineStateReports {
    /// 24H2: `M:VidSchDdiNotifyInterruptWorker` @0x140006B60 has no case for type 20; the
    /// report is logged (`M:VidSchDdiNotifyInterrupt` @0x1400067D0 logs every report first)
    /// and dropped: no F1 transition, no engine reset from it.
    Dropped,
    /// The user-mode submission page (UM-13): TransitionToF1 takes the engine's power
    /// component to F1; Hung starts the engine's TDR.
    Acted,
}

/// Whether the OS disconnects every doorbell before F1, D3, suspend or an engine reset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OsDisconnects {
    /// 24H2: no OS-initiated `DxgkDdiDisconnectDoorbell` on those paths was found
    /// (`GPU_ENGINE_STATE_CHANGE` has no case in `M:VidSchDdiNotifyInterruptWorker`); only a
    /// destroy of a connected doorbell disconnects it first
    /// (`K:DXGDOORBELL::DestroyCoreState` @0x1401D804C).
    OnDestroyOnly,
    /// The user-mode submission page (UM-14): every doorbell is disconnected before the
    /// engine powers down and before D3.
    OnPowerAndReset,
}

/// Whether the OS brings a doorbell's node to F0 when the doorbell connects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectPower {
    /// 24H2: no. `K:DXGDOORBELL::Connect`@0x1401D7B90 calls `DdiConnectDoorbell` and maps the
    /// page, with no power reference; an engine the driver needs powered is the driver's to
    /// hold (`DxgkCbSetPowerComponentActive`).
    DriverHolds,
    /// The pages (UM-13): "a UMD reconnect brings it back to F0"; the OS holds the node
    /// active through the connect.
    OsBringsF0,
}

/// The order of a device's teardown (process exit, kill, PnP stop).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Teardown {
    /// 24H2, for an exit or a kill alike: `K:DXGPROCESS::Destroy`@0x14034D4E0 first flushes
    /// each device with reason 4 (`K:DXGDEVICE::FlushScheduler`@0x140376424, VidSch flush 13),
    /// which marks it in error (`M:VidSchFlushDevice`@0x1400B5320 →
    /// `VidSchMarkDeviceAsError(14)`@0x14001F860: its hardware contexts suspended through
    /// `DxgkDdiSuspendContext`, then every sync object it registered set always-signalled by
    /// `VidSchiSignalRegisteredSyncObjects`@0x14003B848); the flush waits only for work VidSch
    /// tracks (no user-mode queue's work, [`UmsProgress::None`]). Then
    /// `K:DXGDEVICE::DestroyAllDeviceState`@0x1403A7C64: `DrainResources` and
    /// `DrainAllocations` (the device's allocations destroyed, a stopped queue's ring among
    /// them), then `DXGDEVICE::DestroyDevice`@0x1402CE23C: contexts with their queues
    /// (`K:DXGHWQUEUE::DestroyCoreState`@0x1402CDD74: the doorbell's
    /// `DXGDOORBELL::DestroyCoreState`@0x1401D804C, then `DdiDestroyHwQueue`) and
    /// `DdiDestroyDevice`. No wait for a user-mode queue.
    AllocationsFirst,
    /// The pages (UM-17, UM-18): per queue the doorbell disconnected, the queue waited for
    /// (exit) or its device put in error and suspended (kill), doorbell and queue destroyed;
    /// then the allocations.
    QueuesFirst,
}

/// What a failed `DxgkDdiSubmitCommandToHwQueue` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitFailure {
    /// 24H2: VidSch calls the DDI after the API returned (`M:SubmitRenderToHwQueue`
    /// @0x14000E8B0); any status with the high bit set but `STATUS_NOT_IMPLEMENTED` marks the
    /// device in error (`M:VidSchiMarkDeviceAsError`): a device loss.
    DeviceError,
    /// The page: the status reaches the caller.
    ReturnedToCaller,
}

/// The order of a hardware-scheduled node's TDR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwsTdr {
    /// 24H2 (`M:VidSchiPrepareToResetEngine` @0x1400A67D4, `VidSchiResetEngines` @0x1400A690C,
    /// `VidSchiResetHwEngine` @0x140052878): `DxgkDdiQueryDependentEngineGroup` first (a
    /// failure makes it an adapter-wide TDR), then the node's snapshot, then
    /// `DxgkDdiCollectDbgInfo2` (else `CollectDbgInfo`) with a 16 MiB buffer, then
    /// `DxgkDdiResetHwEngine` for the hung node only, `KeFlushQueuedDpcs`,
    /// `DxgkDdiResumeHwEngine`.
    DbgInfoBeforeReset,
    /// The TDR-05 sequence of the pages (and 22631): `CollectDbgInfo` first, then the snapshot,
    /// a DPC flush and the dependent group.
    DbgInfoFirst,
}

/// Whether repeated engine timeouts block a process from the adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessTdrBlock {
    /// 24H2 (`M:VidSchiResetEngine` @0x140047318, `M:VidSchInvalidateHwContext`
    /// @0x1400521E0): each engine timeout is stamped in the offending process's own history;
    /// at the `TdrLimitCount - 1`th within `TdrLimitTime` (the fourth by default) the process
    /// is blocked on the adapter: `M:VidSchiCreateDeviceInternal` @0x1400D3D40 refuses its new
    /// devices (STATUS_ACCESS_DENIED) and `K:EnumAdaptersCallback` @0x14034F110 /
    /// `K:DxgkOpenAdapterFromLuidImpl` @0x14035AC38 hide the adapter from it. The 26H1
    /// reading keeps it (nothing read there says otherwise).
    Blocks,
    /// The pages ("Timeout detection and recovery (TDR)", "TDR registry keys"):
    /// `TdrLimitCount` and `TdrLimitTime` count the machine's TDRs only; no process is
    /// blocked.
    None,
}

/// What a hardware queue's progress fence is (`D3DDDI_CREATEHWQUEUEFLAGS::NativeProgressFence`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressFence {
    /// 24H2 and 25H2: `K:DXGHWQUEUE::Initialize` (@0x1402BBA30) creates a monitored fence
    /// (`D3DDDI_MONITORED_FENCE`) for every kernel-submission queue and never sets the flag;
    /// `K:DxgkCreateHwQueueInternal` (@0x1402BAF98) returns its handle, CPU VA and GPU VA.
    /// User-mode-submission queues: [`UmsProgress`].
    Monitored,
    /// 26H1 and the pages: on a GPU with native fences a kernel-submission queue's progress
    /// fence is native, the flag set in the DDI and returned in `D3DKMT_CREATEHWQUEUE::Flags`
    /// (26H1 `K:DXGCONTEXT::CreateHwQueue` @0x14034F208 sets it on an adapter cap,
    /// `K:DXGHWQUEUE::Initialize` @0x14034F800 creates the native fence and passes its driver
    /// handle; the `DXGKARG_CREATEHWQUEUE` remarks). User-mode-submission queues keep a
    /// monitored one: 26H1 moved them to another API, and the pages make theirs native in
    /// `DxgkDdiCreateHwQueueForUserModeSubmission`, a DDI no header defines.
    NativeKernelQueues,
    /// The pages' user-mode half as well: every queue's progress fence native. Chosen by tests
    /// only (`Windows::answering`); no reading plays it.
    NativeEveryQueue,
}

impl ProgressFence {
    /// Whether a queue (`user_mode`: created with `UserModeSubmission`) on an adapter with
    /// native fences gets a native progress fence.
    pub fn native(self, user_mode: bool) -> bool {
        match self {
            Self::Monitored => false,
            Self::NativeKernelQueues => !user_mode,
            Self::NativeEveryQueue => true,
        }
    }
}

/// Whether a user-mode-submission queue has a progress fence the OS knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UmsProgress {
    /// 24H2 and 25H2: none. `K:DXGHWQUEUE::InitializeForUserModeSubmission` (@0x1401DA74C;
    /// 25H2 @0x1401D54A0) zeroes `hHwQueueProgressFence` and both VAs before
    /// `DdiCreateHwQueue`; `K:DxgkCreateHwQueueInternal` (@0x1402BAF98) writes them back only
    /// for kernel-submission queues; `K:DxgkCreateDoorbellInternal` (@0x1401D8A50) never writes
    /// `HwQueueProgressFenceLastQueuedValueCPUVirtualAddress`. So the OS cannot tell such a
    /// queue has work: nothing waits for it at destroy (`K:DXGHWQUEUE::DestroyCoreState`
    /// @0x1402CDD74 disconnects the doorbell and calls `DdiDestroyHwQueue`; `M:VidSchFlushHwQueue`
    /// @0x140102CB0 waits for kernel-submitted packets only), no watchdog watches it (a hang
    /// reaches VidSch only as the driver's engine report), no free or power-down waits for it.
    None,
    /// The pages (UM-16, UM-17): a monitored progress fence and a last-queued cell, which the OS
    /// reads to tell the queue has work. 26H1 moved user-mode queues to an API of their own
    /// (`K:DXGHWQUEUE::InitializeForUserModeSubmission` @0x1401E2F50, a native progress fence
    /// and a last-queued page), which no header defines; its reading keeps this answer.
    Given,
}

/// What VidSch reads at DPC time for an optimized native-fence report (LOG-08), beyond the
/// signal entries themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogReport {
    /// 24H2: `M:VidSchiProcessNativeFenceSignaledDpc` (@0x140044BE0) reads the named queue's
    /// signal log from its cached position and unwaits each entry's fence; it scans every
    /// native fence of the node (`UnwaitFencesFromNativeFenceSignaledDpc` with no fence) when
    /// the log has no new entry, when it wrapped past the cached position, or when an entry's
    /// handle names no fence of the process; a NULL `hHWQueue` is that scan at once. Entries
    /// are not checked against the fence's value.
    ScanWhenLogSaysNothing,
    /// The pages (LOG-05, LOG-08): the named queue's log is read since the last read; a NULL
    /// `hHWQueue` reads the logs of every queue on the engine; a scan only on overflow or
    /// with `EvaluateLegacyMonitoredFences`. A report the logs cannot explain releases nobody.
    LogsOnly,
}

/// How a hardware queue's log buffers are handed to the driver and taken back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogHandOver {
    /// 24H2: `M:VidSchiCreateNativeFenceLog` @0x140024634 (from `M:VidSchCreateHwQueue`
    /// @0x1400224D0, for a `UserModeSubmission` queue) zeroes each block and fills
    /// `hHwQueue`, `NumberOfEntries` (64), `LogBufferCpuVa` and `LogBufferGpuVa`, never
    /// `LogBufferSystemProcessGpuVa` nor `Flags`; `M:VIDMM_SCH_LOG::CreateSchLog` @0x140024A94
    /// maps the wait log into the queue's process only and the signal log into the system
    /// process only, and `LogBufferGpuVa` is that one VA. When the queue's last reference
    /// goes, `M:VidSchiDecrementHwQueueReference` @0x140020A74 (under a queued spin lock:
    /// DISPATCH_LEVEL, before `DxgkDdiDestroyHwQueue`, `K:DXGHWQUEUE::DestroyCoreState`
    /// @0x1402CDD74) sends a zeroed block holding only `hHwQueue`, ignores the status, and
    /// frees both logs after releasing the lock.
    HandleOnlyRelease,
    /// The pages (`DXGKARG_SETNATIVEFENCELOGBUFFER`): `LogBufferGpuVa` in the user process,
    /// `LogBufferSystemProcessGpuVa` in the system address space, for either log; nothing
    /// describes taking a log back (the OS frees it after the queue is destroyed).
    BothVas,
}

/// What `DxgkDdiCreateProcess` is told about PASIDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pasids {
    /// 24H2: `K:DXGPROCESS_RENDER_ADAPTER_INFO::Initialize` (@0x1403ACC00) sets `NumPasid` to
    /// the adapter's physical-adapter count (1 here) whatever the adapter supports, and
    /// `pPasid` to the info's PASID array, which `DXGPROCESS_ADAPTER_INFO_PASID_DATA::Allocate`
    /// makes only for an adapter with a GPU-VA IOMMU or a virtual-machine process: NULL here.
    CountWithoutArray,
    /// The `DXGKARG_CREATEPROCESS` page: `pPasid` points to `NumPasid` identifiers, one per
    /// physical GPU.
    CountWithArray,
}

/// How VidMm invalidates page-table entries (unmaps, and clearing a fresh table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalidations {
    /// 24H2: `M:VIDMM_PAGE_TABLE::UpdatePageTableInvalidate` (@0x1400AB920) passes no entries
    /// and `M:VIDMM_GLOBAL::UpdatePageTable` (@0x1400ABE20) then points `pPageTableEntries` at
    /// one zeroed `DXGK_PTE` on its stack and sets `Flags.Repeat`, `NumPageTableEntries`
    /// being the whole range.
    Repeated,
    /// The pages (`DXGK_UPDATEPAGETABLEFLAGS`) allow Repeat but do not say VidMm uses it: one
    /// zeroed entry per slot.
    Listed,
}

/// How VidMm names the table of the page-table updates it makes while it builds the paging
/// process's VA space at adapter start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PagingStart {
    /// 24H2: `M:VIDMM_GLOBAL::InitPagingProcessVaSpace` (@0x1400F71BC, from
    /// `VidMmInitializePagingProcess` @0x1400D339C) sets the global flag under which
    /// `M:VIDMM_PAGE_TABLE_BASE::GetDriverUpdateAddress` (@0x1400ABA84) gives the table's CPU
    /// address and `VIDMM_GLOBAL::UpdatePageTable` sends `UpdateMode = CPU_VIRTUAL`, until
    /// the space, its scheduling logs and the paging node's root are in place.
    CpuVirtual,
    /// The pages (`DXGK_GPUMMUCAPS::PageTableUpdateMode`): the mode the driver reported,
    /// throughout.
    DriverMode,
}

/// Whether `D3DKMTCreateAllocation2` gives a user-mode caller a GPU VA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocationVa {
    /// 24H2: none. `K:DXGDEVICE::CreateAllocation` (@0x140356E10) writes back to the
    /// caller's `D3DDDI_ALLOCATIONINFO2` entries only `hAllocation` and the private data, and
    /// `M:VIDMM_GLOBAL::CreateOneAllocation` (@0x1400DCBA4) reserves and maps no VA. An
    /// application allocation gets one only from `D3DKMTMapGpuVirtualAddress`
    /// (`M:VidMmMapGpuVirtualAddressInternal` @0x1400F5180), and destroying the allocation
    /// frees the ranges Map made for it (`M:VIDMM_GLOBAL::CloseOneAllocation` @0x1400A9EF4 →
    /// `CVirtualAddressAllocator::FreeAllocMappedVaRangeList`). Residency and mapping are
    /// apart: MakeResident maps nothing the caller did not map.
    MappedByCaller,
    /// The `D3DDDI_ALLOCATIONINFO2` reference page: `GpuVirtualAddress` is an output. VidMm
    /// reserves a VA at create and maps it while the allocation is resident.
    AtCreate,
}

/// Which handles `DxgkDdiCreateDoorbell`'s `hRingBuffer` and `hRingBufferControl` carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingHandles {
    /// 24H2: `K:DXGDOORBELL::Initialize` @0x1401D9E74 passes the `hDeviceSpecificAllocation`
    /// the allocation object keeps, which `K:DXGDEVICE::OpenAllocations` @0x140324850 stored
    /// from the creating device's `DxgkDdiOpenAllocation` (`Flags.Create`); the 26H1 reading
    /// keeps it (nothing read there says otherwise).
    DeviceSpecific,
    /// The pages (`DXGKARG_CREATEDOORBELL`): "Handle to the ring buffer allocation previously
    /// created by UMD", "KMD handle to the ring buffer control allocation": the driver's own
    /// handle from `DxgkDdiCreateAllocation`.
    Created,
}

/// What `DxgkDdiCreateDoorbell`'s `Flags` carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoorbellFlags {
    /// 24H2: `K:DXGDOORBELL::Initialize` @0x1401D9E74 copies the caller's
    /// `D3DKMT_CREATE_DOORBELL_FLAGS` word unchanged (`RequireSecondaryCpuVA` in bit 0,
    /// `ResizeRingBufferOperation` in bit 1).
    CallerWord,
    /// The pages (`DXGKARG_CREATEDOORBELL_FLAGS`): bit 0 is `ResizeRingBufferOperation`, the
    /// rest reserved; the caller's `ResizeRingBufferOperation` lands there.
    Translated,
}

impl DoorbellFlags {
    /// The `DXGKARG_CREATEDOORBELL_FLAGS` word for the caller's flags `caller`.
    pub fn word(self, caller: u32) -> u32 {
        match self {
            Self::CallerWord => caller,
            Self::Translated => (caller >> 1) & 1,
        }
    }
}

/// What `D3DKMTOpenNativeFenceFromNtHandle` hands back in `PrivateDriverData`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenFencePdd {
    /// 24H2: the caller's own bytes. `K:NtDxgkOpenNativeFenceFromNtHandleInternal`
    /// @0x1401E15EC captures the 176-byte structure, passes `DXGSYNCOBJECT::Open` @0x1401F4640
    /// no private-data buffer (its sixth and seventh arguments NULL), and copies the capture
    /// back with only `hSyncObject`, `Flags` and the mapping changed; the
    /// `DXGKARG_OPENNATIVEFENCE` it builds has a zeroed `pPrivateDriverData`
    /// (`DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC).
    CallersBytes,
    /// The pages (`D3DKMT_OPENNATIVEFENCEFROMNTHANDLE`, `DXGKARG_OPENNATIVEFENCE`): the
    /// private data the driver's `DxgkDdiOpenNativeFence` left.
    DriversOpen,
}

/// When an operation on a paging queue (`D3DKMTMapGpuVirtualAddress`, `D3DKMTMakeResident`
/// on a queue) is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PagingWork {
    /// 24H2: queued to VidMm's paging worker, which runs on its own thread; the thunk passes
    /// VidMm's answer through, STATUS_PENDING with a `PagingFenceValue` not yet reached
    /// (`K:DxgkMapGpuVirtualAddress` @0x140321DB0 writes `VirtualAddress` and
    /// `PagingFenceValue` back for any status that is not an error;
    /// `K:DxgkMakeResidentInternal` @0x1402A7570). The pages agree
    /// (`pfnMapGpuVirtualAddressCb`: E_PENDING, the caller waits for the returned fence value
    /// before accessing the allocation), so every reading plays it.
    Queued,
    /// Done inside the thunk, its fence value reached on return. Chosen by tests that need
    /// synchronous paging only (`Windows::answering`); no reading plays it.
    InThunk,
}

/// When VidSch gives a GpuMmu context its process's root (`DxgkDdiSetRootPageTable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootHandOver {
    /// 24H2: only from `M:VidSchiEnsureRootPageTableUpdated` (@0x1400EAF40), and only when
    /// the root differs from the one last sent for the context: before a kernel-mode submission
    /// (`M:VidSchSubmitCommandToHwQueue` @0x140048F00), at a context resume
    /// (`M:VidSchiSuspendResumeHwContext` @0x140020730); on software-scheduled nodes before each
    /// submission reaches the execution queue (`M:VidSchiSubmitRenderVirtualCommand`
    /// @0x1400B6C90). Never at context, queue or doorbell creation; a new device starts
    /// unsuspended (`M:VidSchiCreateDeviceInternal` @0x1400D3D40), so a context fed only
    /// through doorbells gets none.
    FirstUse,
    /// The pages (`DxgkDdiSetRootPageTable`: it "sets the root page table for the given
    /// context", and is used again when the root is resized or moved) name no moment; read as
    /// the root given once the context exists, before anything runs on it.
    AtCreate,
}

/// One answer to each disagreement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    /// A short name (`22631`, `24h2`, `25h2`, `26h1`, `pages`).
    pub name: &'static str,
    /// System-process VAs at native-fence create.
    pub system_vas: SystemVas,
    /// MonitoredValue's meaning and re-arming.
    pub monitored_value: MonitoredValue,
    /// How the update DDIs are called.
    pub value_updates: ValueUpdates,
    /// `DxgkDdiUpdateCurrentValuesFromCpu`'s IRQL.
    pub cpu_update_irql: CpuUpdateIrql,
    /// When the DPC-time fence work runs.
    pub dpc_fence_work: DpcFenceWork,
    /// The victimising callback.
    pub victim_disconnect: VictimDisconnect,
    /// OS-initiated doorbell disconnects.
    pub os_disconnects: OsDisconnects,
    /// Power at a doorbell connect.
    pub connect_power: ConnectPower,
    /// A device's teardown order.
    pub teardown: Teardown,
    /// A failed kernel-mode submission.
    pub submit_failure: SubmitFailure,
    /// A hardware-scheduled node's TDR.
    pub hws_tdr: HwsTdr,
    /// A hardware queue's progress fence.
    pub progress_fence: ProgressFence,
    /// A user-mode-submission queue's progress fence.
    pub ums_progress: UmsProgress,
    /// What an optimized native-fence report makes VidSch read.
    pub log_report: LogReport,
    /// How log buffers are handed over and taken back.
    pub log_hand_over: LogHandOver,
    /// PASIDs at `DxgkDdiCreateProcess`.
    pub pasids: Pasids,
    /// Invalidating page-table entries.
    pub invalidations: Invalidations,
    /// Page-table updates while the paging process's space is built.
    pub paging_start: PagingStart,
    /// Whether a new allocation comes with a GPU VA.
    pub allocation_va: AllocationVa,
    /// The allocation handles a doorbell's creation names.
    pub ring_handles: RingHandles,
    /// Whether repeated engine timeouts block a process.
    pub process_tdr_block: ProcessTdrBlock,
    /// When a paging queue's operation is done.
    pub paging_work: PagingWork,
    /// `DxgkDdiCreateDoorbell`'s flags.
    pub doorbell_flags: DoorbellFlags,
    /// When a context gets its root.
    pub root_hand_over: RootHandOver,
    /// A native fence's private data at an open from an NT handle.
    pub open_fence_pdd: OpenFencePdd,
    /// What an engine-state report makes VidSch do.
    pub engine_state: EngineStateReports,
    /// Whether a late fence is asked about before it counts as a hang.
    pub lost_fence: LostFence,
    /// Which debug-report DDI a TDR calls.
    pub dbg_info: DbgInfoDdi,
}

impl Reading {
    /// Windows 11 24H2 as decompiled (the default).
    pub const W24H2: Self = Self {
        name: "24h2",
        system_vas: SystemVas::NotPassed,
        monitored_value: MonitoredValue::RaisedByNewWaits,
        value_updates: ValueUpdates::OneAtATimeNoCpuVa,
        cpu_update_irql: CpuUpdateIrql::DeviceUnderInterruptLock,
        dpc_fence_work: DpcFenceWork::InsideNotifyDpc,
        victim_disconnect: VictimDisconnect::CallsDriverDisconnect,
        os_disconnects: OsDisconnects::OnDestroyOnly,
        connect_power: ConnectPower::DriverHolds,
        teardown: Teardown::AllocationsFirst,
        submit_failure: SubmitFailure::DeviceError,
        hws_tdr: HwsTdr::DbgInfoBeforeReset,
        progress_fence: ProgressFence::Monitored,
        ums_progress: UmsProgress::None,
        log_report: LogReport::ScanWhenLogSaysNothing,
        log_hand_over: LogHandOver::HandleOnlyRelease,
        pasids: Pasids::CountWithoutArray,
        invalidations: Invalidations::Repeated,
        paging_start: PagingStart::CpuVirtual,
        allocation_va: AllocationVa::MappedByCaller,
        ring_handles: RingHandles::DeviceSpecific,
        process_tdr_block: ProcessTdrBlock::Blocks,
        paging_work: PagingWork::Queued,
        doorbell_flags: DoorbellFlags::CallerWord,
        root_hand_over: RootHandOver::FirstUse,
        open_fence_pdd: OpenFencePdd::CallersBytes,
        engine_state: EngineStateReports::Dropped,
        lost_fence: LostFence::NotAsked,
        dbg_info: DbgInfoDdi::SecondWhenFilled,
    };

    /// 26H1: 24H2's flows, but the system-process VAs are mapped and passed and a
    /// kernel-submission queue's progress fence is native.
    pub const W26H1: Self = Self {
        name: "26h1",
        system_vas: SystemVas::Mapped,
        value_updates: ValueUpdates::OneAtATimeWithCpuVa,
        progress_fence: ProgressFence::NativeKernelQueues,
        ums_progress: UmsProgress::Given,
        ..Self::W24H2
    };

    /// Microsoft's pages.
    pub const PAGES: Self = Self {
        name: "pages",
        system_vas: SystemVas::Mapped,
        monitored_value: MonitoredValue::BelowAwaitedRearmed,
        value_updates: ValueUpdates::BatchedWithCpuVa,
        cpu_update_irql: CpuUpdateIrql::Dispatch,
        dpc_fence_work: DpcFenceWork::AfterDpcReturns,
        victim_disconnect: VictimDisconnect::StatusOnly,
        os_disconnects: OsDisconnects::OnPowerAndReset,
        connect_power: ConnectPower::OsBringsF0,
        teardown: Teardown::QueuesFirst,
        submit_failure: SubmitFailure::ReturnedToCaller,
        hws_tdr: HwsTdr::DbgInfoFirst,
        progress_fence: ProgressFence::NativeKernelQueues,
        ums_progress: UmsProgress::Given,
        log_report: LogReport::LogsOnly,
        log_hand_over: LogHandOver::BothVas,
        pasids: Pasids::CountWithArray,
        invalidations: Invalidations::Listed,
        paging_start: PagingStart::DriverMode,
        allocation_va: AllocationVa::AtCreate,
        ring_handles: RingHandles::Created,
        process_tdr_block: ProcessTdrBlock::None,
        paging_work: PagingWork::Queued,
        doorbell_flags: DoorbellFlags::Translated,
        root_hand_over: RootHandOver::AtCreate,
        open_fence_pdd: OpenFencePdd::DriversOpen,
        engine_state: EngineStateReports::Acted,
        lost_fence: LostFence::Asked,
        dbg_info: DbgInfoDdi::First,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NF-02 (the pages): MonitoredValue is the lowest pending wait − 1, whatever the
    /// fence's value and the order the waits came in.
    #[test]
    fn nf_02_pages_monitored_value_is_below_the_lowest_pending_wait() {
        let p = MonitoredValue::BelowAwaitedRearmed;
        assert_eq!(p.on_new_wait(u64::MAX, 5, 0, 0, 5), 4);
        assert_eq!(
            p.on_new_wait(4, 9, 7, 0, 5),
            4,
            "a higher wait leaves it at the lowest"
        );
        assert_eq!(p.on_new_wait(4, 3, 0, 0, 3), 2);
        assert_eq!(p.on_new_wait(u64::MAX, 0, 0, 0, 0), 0);
    }

    /// NF-04 (the pages): as waits are released MonitoredValue is re-armed for the next one,
    /// and with none left no signal needs an interrupt.
    #[test]
    fn nf_04_pages_monitored_value_is_rearmed_for_the_next_wait() {
        let p = MonitoredValue::BelowAwaitedRearmed;
        assert_eq!(p.after_release(4, Some(9)), 8);
        assert_eq!(p.after_release(4, None), u64::MAX);
        assert!(!p.raises_over_waits());
    }

    /// NF-02 (24H2's code): a new wait lowers MonitoredValue to itself, and raises it to
    /// itself when CurrentValue already passed it, over lower waits still pending; a wait at
    /// or below the last CPU-signalled value, or above M while C is below M, changes nothing.
    #[test]
    fn nf_02_24h2_a_new_wait_sets_monitored_value_when_below_it_or_when_it_is_passed() {
        let c = MonitoredValue::RaisedByNewWaits;
        assert_eq!(c.on_new_wait(u64::MAX, 5, 0, 0, 5), 5, "first wait");
        assert_eq!(c.on_new_wait(9, 5, 0, 0, 5), 5, "lower wait lowers it");
        assert_eq!(
            c.on_new_wait(5, 9, 3, 0, 5),
            5,
            "C below M: a higher wait only logs"
        );
        assert_eq!(
            c.on_new_wait(5, 9, 5, 0, 7),
            9,
            "C reached M: raised over the wait at 7"
        );
        assert_eq!(
            c.on_new_wait(5, 9, 6, 9, 7),
            5,
            "not above the last CPU signal"
        );
        assert!(c.raises_over_waits());
    }

    /// NF-04 (24H2's code): releasing waits never moves MonitoredValue while any remain,
    /// lowest remaining above or below it, and sets u64::MAX when none do.
    #[test]
    fn nf_04_24h2_releases_leave_monitored_value_until_no_wait_remains() {
        let c = MonitoredValue::RaisedByNewWaits;
        assert_eq!(c.after_release(5, Some(9)), 5);
        assert_eq!(
            c.after_release(9, Some(7)),
            9,
            "never lowered to a wait left below"
        );
        assert_eq!(c.after_release(9, None), u64::MAX);
    }
}
