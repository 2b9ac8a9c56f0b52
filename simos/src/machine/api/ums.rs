//! The `Machine`'s methods on user-mode submission (`crate::ums`): processes, hardware queues,
//! doorbells, device loss and the adapter's power as UMS drives it. Each looks the adapter up
//! and calls UMS's operation; the machine is UMS's [`UmsHost`].

use std::sync::Arc;
use std::time::Duration;

use rvgpu_ddi::basic::NTSTATUS;
use rvgpu_ddi::submission::{DXGK_NODEMETADATA, DXGK_USERMODESUBMISSION_CAPS};

use crate::adapter::{AdapterShared, Life};
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::machine::Machine;
use crate::ob::KmtHandle;
use crate::os::answers::OsDisconnects;
use crate::os::OsConfig;
use crate::sync::fence::{MonitoredFence, NativeFence, SimEvent, WaitOutcome};
use crate::sync::fencelog::LogBuffer;
use crate::ums::{self, DoorbellInfo, HeldWork, Power, UmsEvent, UmsHost, UmsProcess};

impl Machine {
    /// Adapter `i`, which must be started.
    fn ums_adapter(&self, i: usize) -> Result<Arc<AdapterShared>, SimError> {
        let a = self.adapter_shared(i)?.clone();
        if *lock(&a.life) != Life::Started {
            return Err(SimError::NotStarted(i));
        }
        Ok(a)
    }

    /// Whether adapter `i` is started (Dxgkrnl's adapter state 1, which
    /// `K:DxgkOpenAdapterFromLuidImpl` @0x14035AC38 requires).
    pub fn adapter_started(&self, i: usize) -> bool {
        self.ums_adapter(i).is_ok()
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

    /// The node metadata adapter `i` reported at start (UM-03).
    pub fn node_metadata(&self, i: usize) -> Vec<DXGK_NODEMETADATA> {
        self.adapter_shared(i)
            .map_or_else(|_| Vec::new(), |a| ums::node_metadata(a))
    }

    /// `DXGK_USERMODESUBMISSION_CAPS` adapter `i` reported at start (UM-04).
    pub fn usermode_submission_caps(&self, i: usize) -> Option<DXGK_USERMODESUBMISSION_CAPS> {
        self.adapter_shared(i)
            .ok()
            .and_then(|a| ums::usermode_submission_caps(a))
    }
}

/// Processes.
impl Machine {
    /// A new process with a D3D device on adapter `i` (`DxgkDdiCreateDevice`).
    pub fn create_process(&self, i: usize) -> Result<UmsProcess, SimError> {
        let a = self.ums_adapter(i)?;
        ums::process::create_process(self, &a, i)
    }

    /// Another D3D device in `p`'s process on `p`'s adapter (`D3DKMTCreateDevice` again, as
    /// an application recreating its device after a loss). STATUS_ACCESS_DENIED once the
    /// process is blocked on the adapter for repeated engine timeouts
    /// (docs/tdr.md#the-simulated-os).
    pub fn create_device(&self, p: &UmsProcess) -> Result<UmsProcess, SimError> {
        let a = self.ums_adapter(p.adapter)?;
        ums::process::create_device(&a, p)
    }

    /// `p`'s process stays on its adapter past its last device, until [`Machine::end_process`]
    /// (a user-mode process that loaded the DLL: its devices come and go, the process stays).
    pub fn hold_process(&self, p: &UmsProcess) -> Result<(), SimError> {
        let a = self.ums_adapter(p.adapter)?;
        ums::process::hold_process(&a, p);
        Ok(())
    }

    /// The process `pid` on adapter `i` ends: its remaining devices go as at a normal exit,
    /// then its state on the adapter (GPU VA space, TDR history, handle table).
    pub fn end_process(&self, i: usize, pid: ProcessId) -> Result<(), SimError> {
        let a = self.ums_adapter(i)?;
        ums::process::end_process(self, &a, pid)
    }

    /// Whether `pid`'s GPU access is blocked on adapter `i` for repeated engine timeouts
    /// (`K:ADAPTER_RENDER::IsProcessGpuAccessBlocked` @0x14036E228).
    pub fn is_gpu_access_blocked(&self, i: usize, pid: ProcessId) -> bool {
        i < self.adapter_count() && self.state.tdr_history.is_blocked(pid, i)
    }

    /// The adapters `D3DKMTEnumAdapters2` lists to `pid`: the started ones it is not blocked
    /// on (`K:EnumAdaptersCallback` @0x14034F110 leaves a blocked adapter out).
    pub fn enum_adapters(&self, pid: ProcessId) -> Vec<usize> {
        (0..self.adapter_count())
            .filter(|&i| self.ums_adapter(i).is_ok() && !self.is_gpu_access_blocked(i, pid))
            .collect()
    }

    /// `p`'s process registers as the Desktop Window Manager (`M:VidSchRegisterAsDwm`
    /// @0x140124F20): its engine timeouts never block it.
    pub fn register_as_dwm(&self, p: &UmsProcess) {
        self.state.tdr_history.register_as_dwm(p.pid);
    }

    /// UM-17: normal process exit. By the pages, per queue: disconnect the doorbell, wait for
    /// the last queued progress value, destroy doorbell and queue; then the allocations,
    /// contexts and the device. 24H2 flushes the device into error, then destroys the
    /// allocations first ([`crate::os::answers::Teardown`]).
    pub fn exit_process(&self, p: &UmsProcess) -> Result<(), SimError> {
        let a = self.ums_adapter(p.adapter)?;
        ums::process::teardown(self, &a, p.device, true)
    }

    /// `D3DKMTDestroyDevice` of `p`'s device: 24H2's order, without the exit's flush
    /// ([`crate::kmt::device::dxgk_destroy_device_impl`]).
    pub fn destroy_device(&self, p: &UmsProcess) -> Result<(), SimError> {
        let a = self.ums_adapter(p.adapter)?;
        ums::process::destroy_device(self, &a, p.device)
    }

    /// UM-18: abnormal process exit. By the pages the device is marked in error, every context
    /// suspended, every doorbell disconnected, everything destroyed without waiting; 24H2 runs
    /// its exit order ([`crate::os::answers::Teardown`]).
    pub fn kill_process(&self, p: &UmsProcess) -> Result<(), SimError> {
        let a = self.ums_adapter(p.adapter)?;
        ums::process::teardown(self, &a, p.device, false)
    }

    /// Dxgkrnl's teardown of adapter `i`'s processes before a PnP stop (abnormal exits).
    pub(crate) fn destroy_all_devices(&self, i: usize) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?.clone();
        ums::process::destroy_all_devices(self, &a)
    }

    /// `D3DKMTCreateContextVirtual` (`virtual_context`) or `D3DKMTCreateContext` on `p`'s
    /// device with raw `D3DDDI_CREATECONTEXTFLAGS` (BR-92 tests; a correct runtime's contexts
    /// come from [`crate::kmt`]).
    pub fn create_context_raw(
        &self,
        p: &UmsProcess,
        node: u32,
        flags: u32,
        virtual_context: bool,
    ) -> Result<KmtHandle, SimError> {
        let a = self.adapter_shared(p.adapter)?;
        ums::create_context_raw(self, a, p.device, node, flags, virtual_context)
    }
}

/// Hardware queues and doorbells.
impl Machine {
    /// The KMD's handle of `queue`.
    pub fn hw_queue_kmd_handle(&self, i: usize, queue: KmtHandle) -> Option<usize> {
        let a = self.adapter_shared(i).ok()?;
        ums::hw_queue_kmd_handle(a, queue)
    }

    /// Dxgkrnl's object of `queue`: the `hHwQueue` the KMD got at its creation, which the
    /// interrupt reports and `DxgkCbDisconnectDoorbell` name.
    pub fn hw_queue_os_object(&self, i: usize, queue: KmtHandle) -> Option<usize> {
        let a = self.adapter_shared(i).ok()?;
        ums::hw_queue_os_object(a, queue)
    }

    /// LOG-01: Dxgkrnl moves the `kind` log of `queue` to a new buffer of `entries`
    /// entries while the queue runs (see [`crate::sync::fencelog`]).
    pub fn recreate_hw_queue_log(
        &self,
        p: &UmsProcess,
        queue: KmtHandle,
        kind: crate::sync::fencelog::LogKind,
        entries: u64,
    ) -> Result<(), SimError> {
        let a = self.adapter_shared(p.adapter)?.clone();
        let kmd = ums::device_queue_kmd_handle(&a, p.device, queue)?;
        crate::sync::fencelog::recreate(self, &a, kmd, kind, entries)
    }

    /// LOG-01: 24H2's release of `queue`'s logs while the queue still runs, as when its last
    /// reference goes (the block naming only `hHwQueue`, at DISPATCH_LEVEL); the buffers are
    /// poisoned and kept until the queue is destroyed ([`Self::check_retired_logs`]).
    pub fn release_hw_queue_logs(&self, p: &UmsProcess, queue: KmtHandle) -> Result<(), SimError> {
        let a = self.adapter_shared(p.adapter)?.clone();
        let kmd = ums::device_queue_kmd_handle(&a, p.device, queue)?;
        let q = lock(&a.fence_os)
            .logs
            .get(kmd)
            .ok_or(SimError::Gone("the hardware queue"))?;
        crate::sync::fencelog::release_queue_logs(&a, &q)
    }

    /// The OS's log state of `queue`'s `kind` log: `(gpu, entries, cursor, last_end,
    /// generation)`.
    pub fn hw_queue_log(
        &self,
        i: usize,
        queue: KmtHandle,
        kind: crate::sync::fencelog::LogKind,
    ) -> Option<(u64, u64, u64, u64, u32)> {
        let a = self.adapter_shared(i).ok()?;
        let kmd = ums::hw_queue_kmd_handle(a, queue)?;
        let q = lock(&a.fence_os).logs.get(kmd)?;
        crate::sync::fencelog::log_view(&q, kind)
    }

    /// The current `kind` log buffer of `queue` (tests and benchmarks write entries
    /// into it with [`crate::sync::fencelog::Producer`], as the device does).
    pub fn hw_queue_log_buffer(
        &self,
        i: usize,
        queue: KmtHandle,
        kind: crate::sync::fencelog::LogKind,
    ) -> Option<crate::sync::fencelog::LogBuffer> {
        let a = self.adapter_shared(i).ok()?;
        let kmd = ums::hw_queue_kmd_handle(a, queue)?;
        let q = lock(&a.fence_os).logs.get(kmd)?;
        let mut g = lock(&q.logs);
        Some(g.as_mut()?.get_mut(kind).buf.clone())
    }

    /// Every retired (recreated) log buffer of adapter `i` still holds its poison.
    pub fn check_retired_logs(&self, i: usize) -> Result<(), SimError> {
        crate::sync::fencelog::check_all_retired(self.adapter_shared(i)?)
    }

    /// The queue id the KMD reported for a hardware queue (from `HwQueuePdd`).
    pub fn hw_queue_id(&self, i: usize, queue: KmtHandle) -> Option<u32> {
        let a = self.adapter_shared(i).ok()?;
        ums::hw_queue_id(a, queue)
    }

    /// UM-16: (last queued progress value, completed progress value) of a queue; the queue
    /// has work while the first is ahead. `None` for a queue without a progress fence
    /// ([`crate::os::answers::UmsProgress::None`]).
    pub fn hw_queue_progress(&self, i: usize, queue: KmtHandle) -> Option<(u64, u64)> {
        let a = self.adapter_shared(i).ok()?;
        ums::hw_queue_progress(a, queue)
    }

    /// Whether the OS gave `queue` a progress fence (`D3DKMTCreateHwQueue`'s
    /// `hHwQueueProgressFence`): the handle, if so.
    pub fn hw_queue_progress_fence(&self, i: usize, queue: KmtHandle) -> Option<KmtHandle> {
        let a = self.adapter_shared(i).ok()?;
        ums::hw_queue_progress_fence(a, queue)
    }

    /// Whether the OS made `queue`'s progress fence a native fence (`NativeProgressFence`,
    /// [`crate::os::answers::ProgressFence`]): the native fence, if so.
    pub fn hw_queue_native_progress(
        &self,
        i: usize,
        queue: KmtHandle,
    ) -> Option<crate::sync::fence::NativeFence> {
        let a = self.adapter_shared(i).ok()?;
        ums::hw_queue_native_progress(a, queue)
    }

    /// UM-16: whether the OS sees work pending on the queue.
    pub fn hw_queue_has_work(&self, i: usize, queue: KmtHandle) -> bool {
        self.hw_queue_progress(i, queue).is_some_and(|(l, c)| l > c)
    }

    /// MF-03: the OS-side held work of kernel-mode queue `queue` on adapter `i`.
    pub fn hw_queue_held(&self, i: usize, queue: KmtHandle) -> Option<HeldWork> {
        let a = self.adapter_shared(i).ok()?;
        ums::hw_queue_held(a, queue)
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
        ums::submit_raw(self, &a, p.device, queue, value, gpu, bytes)
    }

    /// Raw `DxgkDdiDestroyHwQueue` on `queue` of `p`'s device, the OS's own objects left as
    /// they are (tests proving the KMD never refuses a teardown Windows does not retry, whatever
    /// the order). Returns the driver's status.
    pub fn ddi_destroy_hw_queue(
        &self,
        p: &UmsProcess,
        queue: KmtHandle,
    ) -> Result<NTSTATUS, SimError> {
        let a = self.ums_adapter(p.adapter)?;
        ums::ddi_destroy_hw_queue(&a, p.device, queue)
    }

    /// Raw `DxgkDdiDestroyDoorbell` on `doorbell` of `p`'s device, the OS's own objects left as
    /// they are (see [`Machine::ddi_destroy_hw_queue`]). Returns the driver's status.
    pub fn ddi_destroy_doorbell(
        &self,
        p: &UmsProcess,
        doorbell: KmtHandle,
    ) -> Result<NTSTATUS, SimError> {
        let a = self.ums_adapter(p.adapter)?;
        ums::ddi_destroy_doorbell(&a, p.device, doorbell)
    }

    /// The OS's view of a doorbell.
    pub fn doorbell_info(&self, i: usize, doorbell: KmtHandle) -> Option<DoorbellInfo> {
        let a = self.adapter_shared(i).ok()?;
        ums::doorbell_info(a, doorbell)
    }
}

/// Device loss.
impl Machine {
    /// UM-10: every device of adapter `i` lost while the adapter keeps running, as a test
    /// program forces it on Windows: a forced TDR (`D3DKMT_ESCAPE_TDRDBGCTRL`,
    /// `DXGK_TDR_TYPE_FORCED`) runs the adapter-wide recovery (`K:ADAPTER_RENDER::Reset`
    /// @0x1403F2C34): `DxgkDdiResetFromTimeout`, `DxgkDdiRestartFromTimeout`, then every device
    /// reset (its thunks answer `STATUS_DEVICE_REMOVED`, its registered sync objects read
    /// `u64::MAX`); devices created afterwards work. The OS writes no doorbell status: 24H2
    /// writes one only in `K:DXGDOORBELL::Initialize` (2), `K:DXGDOORBELL::Connect`
    /// @0x1401D7B90 (0 or 1), `K:DXGDOORBELL::Disconnect` @0x1401D82E8 (reached only from the
    /// driver's `K:DxgkDisconnectDoorbellCB` @0x1401DB180) and `K:DXGDOORBELL::DestroyCoreState`
    /// @0x1401D804C (3). A queue learns the loss from its doorbell when the KMD aborts it
    /// through that callback, else from its progress fence or a thunk's refusal.
    pub fn device_lost(&self, i: usize) -> Result<(), SimError> {
        let a = self.ums_adapter(i)?;
        let r = crate::vidsch::tdr::forced_adapter_reset(&a);
        match self.fault() {
            Some(f) => Err(f),
            None => r,
        }
    }

    /// UM-10, device removed: every D3D device on adapter `i` is in error (its thunks return
    /// `STATUS_DEVICE_REMOVED`, only destruction works) and every progress fence reads
    /// `u64::MAX`, releasing its waiters (what D3D12 fences read after a removal; UNVERIFIED
    /// that Dxgkrnl itself writes the maximum rather than the runtime). No doorbell status is
    /// written (see [`Machine::device_lost`]): a queue learns the removal from its progress
    /// fence or a thunk's refusal.
    pub fn device_removed(&self, i: usize) -> Result<(), SimError> {
        let a = self.ums_adapter(i)?;
        ums::device_removed(self, &a)
    }
}

/// Power as UMS drives it (UM-13, UM-14).
impl Machine {
    /// Adapter `i`'s power state as the OS drove it.
    pub fn power_state(&self, i: usize) -> Option<Power> {
        self.adapter_shared(i).ok().map(|a| ums::power_state(a))
    }

    /// The power components adapter `i`'s driver registered at start (empty without runtime
    /// power management).
    pub fn power_components(
        &self,
        i: usize,
    ) -> Vec<rvgpu_ddi::power::DXGK_POWER_RUNTIME_COMPONENT> {
        self.adapter_shared(i)
            .map_or_else(|_| Vec::new(), |a| ums::power_components(a))
    }

    /// Whether adapter `i` started runtime power management (`dxgkrnl::power`).
    pub fn runtime_power_management(&self, i: usize) -> bool {
        self.adapter_shared(i)
            .is_ok_and(|a| ums::runtime_pm_started(a))
    }

    /// F-state of node `node`'s power component (0 = F0).
    pub fn engine_fstate(&self, i: usize, node: u32) -> Option<u32> {
        let a = self.adapter_shared(i).ok()?;
        ums::engine_fstate(a, node)
    }

    /// Runs VidSch's PASSIVE work (F1 transitions) now, on the calling thread; threaded
    /// machines also run it on each adapter's worker thread, step machines in every round.
    pub fn run_os_work(&self) -> Result<(), SimError> {
        for i in 0..self.config().adapters.len() {
            let a = self.adapter_shared(i)?.clone();
            ums::run_passive_work(&a, &|n| crate::vidsch::tdr::node_has_pending(&a, n));
        }
        match self.state.fault() {
            Some(f) => Err(f.into()),
            None => Ok(()),
        }
    }

    /// UM-14: D0 → D3: every context suspended, every doorbell disconnected
    /// (`DISCONNECTED_RETRY`, by the pages; 24H2 disconnects none,
    /// [`crate::os::answers::OsDisconnects`]), then `DxgkDdiSetPowerState(D3)`.
    ///
    /// A runtime power-down of an idle GPU: the OS uses the progress fences (UM-16) to see that
    /// no queue has work, before it starts and again once every doorbell is disconnected (work
    /// rung before the disconnect had its last-queued value stored first). With work pending
    /// it backs out (contexts resumed; the doorbells stay disconnected, their UMDs reconnect)
    /// and returns `false`.
    pub fn power_down(&self, i: usize) -> Result<bool, SimError> {
        let disconnects = self.ums_adapter(i)?.os.windows.reading().os_disconnects;
        self.power_down_with(i, disconnects == OsDisconnects::OnPowerAndReset)
    }

    /// [`Machine::power_down`] without the OS's doorbell disconnects, whatever the reading:
    /// what the decompiled dxgkrnl shows in 22631 and in 24H2 (the only callers of
    /// `DdiDisconnectDoorbell` there are a doorbell's destroy and the victimising callback),
    /// against UM-14's description. Contexts are still suspended. The UMDs' rings in D3 then
    /// reach a function in D3hot and are dropped; their work runs when the queues are resumed
    /// at the next D0.
    pub fn power_down_leaving_doorbells(&self, i: usize) -> Result<bool, SimError> {
        self.power_down_with(i, false)
    }

    fn power_down_with(&self, i: usize, os_disconnects: bool) -> Result<bool, SimError> {
        let a = self.ums_adapter(i)?;
        ums::power_down(self, &a, os_disconnects)
    }

    /// `DxgkDdiSuspendContext` on one context of `p` (what VidSch does to move its memory,
    /// UM-11). Its doorbells stay connected; the KMD takes its queues off the runlist.
    pub fn suspend_context(&self, p: &UmsProcess, context: KmtHandle) -> Result<(), SimError> {
        let a = self.ums_adapter(p.adapter)?;
        ums::suspend_own_context(&a, p.device, context)
    }

    /// `DxgkDdiResumeContext` on a context [`Machine::suspend_context`] suspended (UM-12).
    pub fn resume_context(&self, p: &UmsProcess, context: KmtHandle) -> Result<(), SimError> {
        let a = self.ums_adapter(p.adapter)?;
        ums::resume_own_context(&a, p.device, context)
    }

    /// D3 → D0 without a connect (resumes the contexts the power-down suspended).
    pub fn power_up(&self, i: usize) -> Result<(), SimError> {
        let a = self.ums_adapter(i)?;
        ums::power_up(&a)
    }
}

/// The machine's services to UMS: each is the component's operation of the same name.
impl UmsHost for Machine {
    fn context_created(
        &self,
        a: &AdapterShared,
        context: KmtHandle,
        kmd: usize,
        node: u32,
    ) -> Result<(), SimError> {
        crate::vidsch::hws::context_created(a, context, kmd, node)
    }

    fn context_destroying(&self, a: &AdapterShared, kmd: usize, node: u32) {
        crate::vidsch::hws::context_destroying(a, kmd, node)
    }

    fn os_config(&self) -> &OsConfig {
        Machine::os_config(self)
    }

    fn own_process(&self, process: ProcessId) {
        self.handles.own_process(process);
    }

    fn release_process(&self, process: ProcessId) {
        self.handles.release_process(process);
    }

    fn create_monitored_fence(
        &self,
        i: usize,
        process: ProcessId,
        initial: u64,
        flags: u32,
    ) -> Result<MonitoredFence, SimError> {
        Machine::create_monitored_fence_with(self, i, process, initial, flags)
    }

    fn destroy_monitored_fence(&self, f: &MonitoredFence) -> Result<(), SimError> {
        Machine::destroy_monitored_fence(self, f)
    }

    fn signal_monitored_fence_from_cpu(
        &self,
        f: &MonitoredFence,
        value: u64,
    ) -> Result<(), SimError> {
        Machine::signal_monitored_fence_from_cpu(self, f, value)
    }

    fn wait_monitored_fence(
        &self,
        f: &MonitoredFence,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitOutcome, SimError> {
        Machine::wait_monitored_fence(self, f, value, timeout)
    }

    fn wait_monitored_fence_from_gpu(
        &self,
        f: &MonitoredFence,
        value: u64,
        resume: Box<dyn FnOnce() + Send + 'static>,
    ) -> Result<SimEvent, SimError> {
        Machine::wait_monitored_fence_from_gpu(self, f, value, resume)
    }

    fn open_monitored_fence_as_native(
        &self,
        f: &MonitoredFence,
        adapter: usize,
        process: ProcessId,
    ) -> Result<NativeFence, SimError> {
        Machine::open_monitored_fence_as_native(self, f, adapter, process)
    }

    fn destroy_native_fence(&self, fence: &NativeFence) -> Result<(), SimError> {
        Machine::destroy_native_fence(self, fence)
    }

    fn native_fence_kmt_handles_of(&self, i: usize, process: ProcessId) -> Vec<KmtHandle> {
        Machine::native_fence_kmt_handles_of(self, i, process)
    }

    fn take_native_fence_kmt(&self, i: usize, h: KmtHandle) -> Option<NativeFence> {
        Machine::take_native_fence_kmt(self, i, h)
    }

    fn native_fence_instances_of(&self, i: usize, process: ProcessId) -> Vec<NativeFence> {
        Machine::native_fence_instances_of(self, i, process)
    }

    fn close_nt_handles_of(&self, process: ProcessId) -> Result<(), SimError> {
        Machine::close_nt_handles_of(self, process)
    }

    fn forget_fence_process(&self, a: &AdapterShared, process: ProcessId) {
        Machine::forget_fence_process(self, a, process);
    }

    fn retire_empty_fence_pages(&self, a: &AdapterShared) {
        Machine::retire_empty_fence_pages(self, a);
    }

    fn alloc_queue_logs(
        &self,
        a: &AdapterShared,
        pid: ProcessId,
        user_mode: bool,
    ) -> Result<Option<(LogBuffer, LogBuffer)>, SimError> {
        crate::sync::fencelog::alloc_queue_logs(self, a, pid, user_mode)
    }

    fn vidmm_create_process(
        &self,
        a: &AdapterShared,
        process: ProcessId,
    ) -> Result<Option<usize>, SimError> {
        Machine::vidmm_create_process(self, a, process)
    }

    fn vidmm_destroy_process(&self, a: &AdapterShared, process: ProcessId) -> Result<(), SimError> {
        Machine::vidmm_destroy_process(self, a, process)
    }

    fn gpu_va_teardown(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        space: Option<ProcessId>,
    ) -> Result<(), SimError> {
        Machine::gpu_va_teardown(self, a, device, space)
    }

    fn reap_allocations(&self, a: &AdapterShared) -> Result<(), SimError> {
        Machine::reap_allocations(self, a)
    }

    fn reap_system_pages(&self, a: &AdapterShared) -> Result<(), SimError> {
        Machine::reap_system_pages(self, a)
    }

    fn residency_trim_for_d3(&self, a: &AdapterShared) -> Result<(), SimError> {
        Machine::residency_trim_for_d3(self, a)
    }
}
