//! The `Machine`'s methods on fences and fence logs: native fences (create, open, share,
//! destroy, CPU waits and signals), legacy monitored fences, NT handles of shared fences, and
//! the native fence logs. Each looks its adapter up and calls `crate::sync`; a blocking wait
//! is driven here, since in step mode only the whole machine can make progress.

use std::sync::Arc;
use std::time::Duration;

use rvgpu_ddi::fence::{D3DDDI_NATIVEFENCE_TYPE, DXGK_NATIVE_FENCE_CAPS};
use rvgpu_ddi::ntstatus::STATUS_ACCESS_DENIED;
use rvgpu_ddi::NTSTATUS;

use crate::adapter::AdapterShared;
use crate::base::clock::MachineTime;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::machine::Machine;
use crate::os::Mode;
use crate::state::sync::trace::TraceSink;
use crate::sync::fence::{
    logs, monitored, native, reclaim, share, wait, LateWakes, MonitoredFence, NativeFence,
    NativeFenceDesc, SimEvent, VidMmPages, WaitOutcome,
};
use crate::sync::fencelog::{LogCounters, LogTable};
use crate::vidmm::mmu::LeafTag;

/// VidMm's mappings for the fence operations: paging may wait for the GPU, which in step mode
/// this machine drives.
impl VidMmPages for Machine {
    fn map_system(&self, a: &AdapterShared, pa: u64, bytes: u64) -> Result<(), SimError> {
        self.vidmm_map_system(a, pa, bytes, LeafTag::default())
    }

    fn map_os_page(&self, a: &AdapterShared, pid: ProcessId, pa: u64) -> Result<(), SimError> {
        crate::vidmm::mmu::vidmm_map_os_page(self, a, pid, pa, LeafTag::default())
    }

    fn map_fence_value(&self, a: &AdapterShared, pid: ProcessId, pa: u64) -> Result<u64, SimError> {
        // Fence storage is VidMm's own (owner type 2, M:VIDMM_FENCE_STORAGE_PAGE::MapGpuVA
        // @0x1400F95B8): its leaves name no allocation (M:VIDMM_PAGE_TABLE::UpdatePageTable
        // @0x1400AAE70 passes one for owner types 1 and 3 only) and carry no `NativeFence`
        // flag (M:VIDMM_PAGE_TABLE::CommitVirtualAddressRange @0x1400F2030 sets only
        // InitialUpdate and Use64KBPages); the pages describe no use of the flag either.
        crate::vidmm::fencemap::fence_map_value(self, a, pid, pa, LeafTag::default())
    }

    fn unmap_fence_value(
        &self,
        a: &AdapterShared,
        pid: ProcessId,
        pa: u64,
    ) -> Result<(), SimError> {
        crate::vidmm::fencemap::fence_unmap_value(self, a, pid, pa)
    }

    fn reap_fence_maps(&self, a: &AdapterShared) -> Result<(), SimError> {
        crate::vidmm::fencemap::fence_reap_maps(self, a)
    }
}

// Native fences.
impl Machine {
    /// Adapter `i`, started and with native fences.
    fn fence_adapter(&self, i: usize) -> Result<Arc<AdapterShared>, SimError> {
        let a = self.adapter_shared(i)?.clone();
        native::check_native(&a)?;
        Ok(a)
    }

    /// Dxgkrnl's teardown of adapter `i`'s native fences before the device goes away: every
    /// open instance is closed and every fence destroyed (NF-13 order). Errors are returned
    /// after trying them all.
    pub(crate) fn destroy_all_native_fences(&self, i: usize) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?.clone();
        native::destroy_all(&a, self)
    }

    /// Local-memory (VRAM) fence pages in use on adapter `i` (NF-06).
    pub fn native_fence_local_pages(&self, i: usize) -> usize {
        self.adapter_shared(i).map_or(0, |a| native::local_pages(a))
    }

    /// Fuzzing's leak check: live sync objects of adapter `i` as the OS holds them,
    /// `(native fences, monitored fences, D3DKMT native-fence handles)`, and the bytes of
    /// system-memory fence pages (kept for the machine's life, so a leak check subtracts them).
    pub fn fence_live_counts(&self, i: usize) -> ((usize, usize, usize), u64) {
        self.adapter_shared(i)
            .map_or(((0, 0, 0), 0), |a| native::live_counts(a))
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
        self.adapter_shared(i)
            .map_or((0, 0, 0), |a| native::counts(a))
    }

    /// What MonitoredValue raised over pending waits cost on adapter `i` so far ([`LateWakes`]).
    pub fn late_wakes(&self, i: usize) -> LateWakes {
        self.adapter_shared(i)
            .map_or(LateWakes::default(), |a| lock(&a.fence_os).late_wakes)
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
        native::create(&a, process, None, desc, self)
    }

    /// [`Self::create_native_fence`] through `p`'s device (`D3DKMTCreateNativeFence`'s
    /// `hDevice`): the creator's `DxgkDdiOpenNativeFence` names it, and only its error signals
    /// the fence (`K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC).
    pub fn create_native_fence_on(
        &self,
        p: &crate::ums::UmsProcess,
        desc: NativeFenceDesc,
    ) -> Result<NativeFence, SimError> {
        let a = self.fence_adapter(p.adapter)?;
        native::create(&a, p.pid, Some(p.device), desc, self)
    }

    /// Opens `fence` for `process` on the same adapter (`DxgkDdiOpenNativeFence`, NF-13).
    /// Another process may open only a shareable fence.
    pub fn open_native_fence(
        &self,
        fence: &NativeFence,
        process: ProcessId,
    ) -> Result<NativeFence, SimError> {
        let a = self.fence_adapter(fence.adapter())?;
        native::open(&a, fence, process, self)
    }

    /// [`Self::open_native_fence`] with the access the opener was granted and the flags it
    /// asked for: an open without signal access, or with `NoSignal` or
    /// `NoSignalMaxValueOnTdr`, does not register the fence with its device, so the device's
    /// error (a TDR, its process's death) leaves the fence alone.
    pub fn open_native_fence_with(
        &self,
        fence: &NativeFence,
        process: ProcessId,
        access: crate::sync::fence::OpenAccess,
    ) -> Result<NativeFence, SimError> {
        let a = self.fence_adapter(fence.adapter())?;
        native::open_with(&a, fence, process, None, access, self)
    }

    /// [`Self::open_native_fence_with`] through `p`'s device, which `DxgkDdiOpenNativeFence`
    /// gets as `hDevice` and whose error alone signals the instance
    /// (`K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC).
    pub fn open_native_fence_on(
        &self,
        fence: &NativeFence,
        p: &crate::ums::UmsProcess,
        access: crate::sync::fence::OpenAccess,
    ) -> Result<NativeFence, SimError> {
        if p.adapter != fence.adapter() {
            return Err(SimError::NotAllowed {
                rule: "NF-16",
                why: "a fence of another adapter is opened with open_native_fence_cross_adapter"
                    .into(),
            });
        }
        let a = self.fence_adapter(fence.adapter())?;
        native::open_with(&a, fence, p.pid, Some(p.device), access, self)
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
        native::check_cross_adapter(fence, adapter)?;
        let b = self.fence_adapter(adapter)?;
        native::open_cross_adapter(fence, &b, process, self)
    }

    /// The native-fence instances `process` still has open on adapter `i`, with or without a
    /// D3DKMT handle (those opened through the machine's own API have none): its exit closes
    /// them all, or they would keep their fence alive.
    pub(crate) fn native_fence_instances_of(
        &self,
        i: usize,
        process: ProcessId,
    ) -> Vec<NativeFence> {
        let Ok(a) = self.adapter_shared(i) else {
            return Vec::new();
        };
        native::instances_of(a, process)
    }

    /// A process destroys its instance (NF-13): `DxgkDdiCloseNativeFence` for its local
    /// handle; if it was the last instance, then `DxgkDdiDestroyNativeFence` for the global
    /// handle. Pending CPU waits of a destroyed fence end [`WaitOutcome::Abandoned`]. An
    /// instance destroyed twice is refused by the OS (the driver never sees it).
    pub fn destroy_native_fence(&self, fence: &NativeFence) -> Result<(), SimError> {
        let a = self.adapter_shared(fence.adapter())?.clone();
        native::destroy(&a, fence, self)
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
        native::ddi_create_at(&a, fence_type, current_gpu, monitored_gpu, |global| {
            let _ = self.ddi_destroy_native_fence(global);
        })
    }

    /// Raw `DxgkDdiDestroyNativeFence` for a global handle, bypassing the OS bookkeeping (tests
    /// of the driver's refusal of out-of-order calls). Returns the driver's status.
    pub fn ddi_destroy_native_fence(&self, global: usize) -> Result<NTSTATUS, SimError> {
        let a = self.adapter_shared(0)?.clone();
        native::ddi_destroy(&a, global)
    }

    /// Raw `DxgkDdiCloseNativeFence` on adapter `i` (see [`Machine::ddi_destroy_native_fence`]).
    pub fn ddi_close_native_fence(&self, i: usize, local: usize) -> Result<NTSTATUS, SimError> {
        let a = self.adapter_shared(i)?.clone();
        native::ddi_close(&a, local)
    }

    /// Hands the empty system fence pages of adapter `a` that nothing can reach any more to
    /// VidMm to unmap from the paging process and free (churn leaves the machine's
    /// memory where it started).
    pub(crate) fn retire_empty_fence_pages(&self, a: &AdapterShared) {
        reclaim::retire_empty_pages(a);
    }

    /// Process `pid` exited: the pages it packed fence values into can go once empty.
    pub(crate) fn forget_fence_process(&self, a: &AdapterShared, pid: ProcessId) {
        reclaim::forget_process(a, pid);
    }
}

// CPU waits and signals of native fences.
impl Machine {
    /// The event form of a CPU wait (MF-04): registers a wait for CurrentValue >= `value`,
    /// lowers MonitoredValue if needed (NF-02, NF-07) and returns the event (already signalled
    /// when the value has been reached).
    pub fn wait_native_fence_event(
        &self,
        fence: &NativeFence,
        value: u64,
    ) -> Result<SimEvent, SimError> {
        wait::wait_event(&self.state, fence, value)
    }

    /// Waits for `ev` to settle: threaded mode blocks on it for `timeout` of real time; step
    /// mode drives the machine (device steps, interrupts, DPCs) for `timeout` of simulated
    /// time (a round is a millisecond), ending early when a round makes no progress and no
    /// kernel timer is due within what is left: a load on the host does not shorten it.
    /// Returns the outcome, or `None` when `timeout` passed or (step mode) nothing but the
    /// caller could still satisfy the wait; the caller then withdraws its wait. (Its one
    /// caller is the emulated process's gdi32, which builds on Linux only.)
    #[cfg(target_os = "linux")]
    pub(crate) fn drive_wait(
        &self,
        ev: &SimEvent,
        timeout: Duration,
    ) -> Result<Option<WaitOutcome>, SimError> {
        self.drive_wait_on(ev, timeout, &MachineTime::host())
    }

    /// [`Machine::drive_wait`] with threaded mode's `timeout` counted on `clock`.
    fn drive_wait_on(
        &self,
        ev: &SimEvent,
        timeout: Duration,
        clock: &MachineTime,
    ) -> Result<Option<WaitOutcome>, SimError> {
        let deadline = clock.now().saturating_add(timeout);
        // Step mode: the simulated time the wait may spend, in rounds and in skips to armed
        // timers.
        let mut budget_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        loop {
            if let Some(o) = ev.outcome() {
                return Ok(Some(o));
            }
            if let Some(f) = self.state.fault() {
                return Err(f.into());
            }
            let expired = match self.config().mode {
                Mode::Step => budget_ms == 0,
                Mode::Threaded => clock.now() >= deadline,
            };
            let idle = match self.config().mode {
                Mode::Step => !self.round_for_wait_within(&mut budget_ms),
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

    /// [`Machine::drive_wait`] for a blocking wait on one fence whose value `now` reads. 24H2's
    /// blocking CPU wait has no time limit (`K:WaitForSynchronizationObjectFromCpu`
    /// @0x1402AD200); the simulation's `timeout` stands for "hung", so the wait runs again
    /// while the fence moved during the last `timeout` (slow work on a loaded machine is not a
    /// hang, in either mode: step mode's rounds take real time too) and ends only after
    /// `timeout` with the fence still, or, in step mode, when a round makes no progress with
    /// the fence where it was. Threaded mode counts `timeout` on `clock`.
    fn drive_wait_while_moving(
        &self,
        ev: &SimEvent,
        timeout: Duration,
        clock: &MachineTime,
        now: impl Fn() -> u64,
    ) -> Result<Option<WaitOutcome>, SimError> {
        let mut seen = now();
        loop {
            if let Some(o) = self.drive_wait_on(ev, timeout, clock)? {
                return Ok(Some(o));
            }
            let moved = now();
            if moved == seen {
                return Ok(None);
            }
            seen = moved;
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
        // A wait that is not satisfied yet on an adapter that is gone could never end: it ends
        // as removed at once (`sync::fence::abandon_cpu_waits`).
        if ev.outcome().is_none() && self.fence_adapter(fence.adapter())?.device.is_lost() {
            return Ok(wait::abandon_wait(fence, &ev));
        }
        // The caller's own timeout (the UMD's slice of its wait): wall time for the waiting
        // thread, as a Windows wait's.
        let host = MachineTime::host();
        if let Some(o) =
            self.drive_wait_while_moving(&ev, timeout, &host, || fence.current_value())?
        {
            return Ok(o);
        }
        wait::withdraw_wait(fence, &ev)
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
        crate::sync::fence::no_cpu_access(fence, "signal")?;
        let a = self.fence_adapter(fence.adapter())?;
        wait::signal_from_cpu(&a, fence, value)
    }
}

// Legacy monitored fences.
impl Machine {
    /// Creates a legacy monitored fence on adapter `i` (MF-01): with or without native fences
    /// on the adapter. The value lives in system memory, packed per process.
    pub fn create_monitored_fence(
        &self,
        i: usize,
        process: ProcessId,
        initial: u64,
    ) -> Result<MonitoredFence, SimError> {
        self.create_monitored_fence_with(i, process, initial, 0)
    }

    /// [`Machine::create_monitored_fence`] with `flags` (`D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS`)
    /// kept on the OS's object ([`MonitoredFence::flags`]).
    pub fn create_monitored_fence_with(
        &self,
        i: usize,
        process: ProcessId,
        initial: u64,
        flags: u32,
    ) -> Result<MonitoredFence, SimError> {
        let a = self.adapter_shared(i)?.clone();
        monitored::create(&a, process, initial, flags, self)
    }

    /// Destroys a legacy monitored fence; pending waits end [`WaitOutcome::Abandoned`].
    pub fn destroy_monitored_fence(&self, f: &MonitoredFence) -> Result<(), SimError> {
        let a = self.adapter_shared(f.adapter())?.clone();
        monitored::destroy(&a, f)
    }

    /// `SignalSynchronizationObjectFromCpu` (MF-01): the OS writes the value (the process never
    /// writes it) and releases satisfied waits (VidSch's among them: a GPU VA update waiting
    /// for the value is handed to VidMm's worker, `vidmm::va::update`). Values never go
    /// backwards.
    pub fn signal_monitored_fence_from_cpu(
        &self,
        f: &MonitoredFence,
        value: u64,
    ) -> Result<(), SimError> {
        monitored::signal_from_cpu(&self.state, f, value)
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
        monitored::wait_from_gpu(&self.state, f, value, resume)
    }

    /// Opens a shareable TYPE_DEFAULT native fence for `process` on an adapter without native
    /// fences: it is a regular monitored fence there (NF-18), sharing the CurrentValue storage; the native
    /// instances hold MonitoredValue at 0 so every signal reaches the OS, which propagates it.
    pub fn open_native_fence_as_monitored(
        &self,
        fence: &NativeFence,
        adapter: usize,
        process: ProcessId,
    ) -> Result<MonitoredFence, SimError> {
        monitored::check_as_monitored(fence)?;
        let b = self.adapter_shared(adapter)?.clone();
        monitored::open_as_monitored(fence, &b, process, self)
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
        let home = self.adapter_shared(f.adapter()).ok();
        monitored::open_as_native(f, &b, home.map(|a| &**a), process, self)
    }

    /// Event form of a CPU wait on a legacy monitored fence (MF-04): released by the DPC-time
    /// scan after a `DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED`, or at once if reached.
    pub fn wait_monitored_fence_event(
        &self,
        f: &MonitoredFence,
        value: u64,
    ) -> Result<SimEvent, SimError> {
        monitored::wait_event(&self.state, f, value)
    }

    /// Blocking form (MF-04); step mode drives the machine as
    /// [`Machine::wait_native_fence`] does. 24H2's wait has no limit: `timeout` stands for
    /// "the GPU did not signal", so threaded mode counts it in the machine's time
    /// ([`MachineTime`]), and a GPU thread the host starves does not use it up.
    pub fn wait_monitored_fence(
        &self,
        f: &MonitoredFence,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitOutcome, SimError> {
        let ev = self.wait_monitored_fence_event(f, value)?;
        let clock = self.machine_time(f.adapter());
        if let Some(o) = self.drive_wait_while_moving(&ev, timeout, &clock, || f.value())? {
            return Ok(o);
        }
        Ok(monitored::withdraw_wait(f, &ev))
    }

    /// The machine's time of adapter `i` (the wall clock for one that is not here).
    pub(crate) fn machine_time(&self, i: usize) -> MachineTime {
        let a = self.adapter_shared(i).ok();
        MachineTime::of(a.and_then(|a| a.emulated.as_deref()))
    }

    /// DPC-time legacy scans on adapter `i` so far.
    pub fn legacy_fence_scans(&self, i: usize) -> u64 {
        self.adapter_shared(i)
            .map_or(0, |a| lock(&a.fence_os).legacy_scans)
    }
}

// Native fences across processes by NT handle (`crate::ob`).
impl Machine {
    /// `D3DKMTShareObjects` of `fence` (its process's instance): a new NT handle in that
    /// process's table. A fence not created shareable cannot be shared
    /// (`STATUS_INVALID_PARAMETER`).
    pub fn share_native_fence(&self, fence: &NativeFence) -> Result<u64, SimError> {
        share::share(&self.handles, fence, share::GENERIC_ALL)
    }

    /// [`Self::share_native_fence`] with `D3DKMTShareObjects`' `dwDesiredAccess` `desired`:
    /// the handle grants `share::granted(desired)`.
    pub fn share_native_fence_with_access(
        &self,
        fence: &NativeFence,
        desired: u32,
    ) -> Result<u64, SimError> {
        share::share(&self.handles, fence, desired)
    }

    /// `DuplicateHandle` of `from`'s NT handle `h` into `to`'s table (the caller stands for a
    /// process holding `PROCESS_DUP_HANDLE` on both, as the creator or a broker does); returns
    /// the handle in `to`'s table.
    pub fn duplicate_handle(
        &self,
        from: ProcessId,
        h: u64,
        to: ProcessId,
    ) -> Result<u64, SimError> {
        share::duplicate(&self.handles, from, h, to)
    }

    /// `CloseHandle` of `process`'s NT handle `h`. The last reference to a fence without
    /// instances destroys it.
    pub fn close_nt_handle(&self, process: ProcessId, h: u64) -> Result<(), SimError> {
        share::close(&self.handles, process, h)
    }

    /// Process exit: every NT handle `process` still holds is closed.
    pub(crate) fn close_nt_handles_of(&self, process: ProcessId) -> Result<(), SimError> {
        share::close_all_of(&self.handles, process)
    }

    /// NT handles `process` holds (tests: nothing is left after exit).
    pub fn nt_handle_count(&self, process: ProcessId) -> usize {
        self.handles.count(process)
    }

    /// `D3DKMTOpenNativeFenceFromNtHandle` for `process` on adapter `adapter`: `h` must be a
    /// handle in `process`'s own table granting `READ_CONTROL` (else STATUS_ACCESS_DENIED,
    /// `K:NtDxgkOpenNativeFenceFromNtHandleInternal` @0x1401E15EC). On the fence's adapter
    /// this opens an instance (NF-13), registered with the device for a device error only if
    /// the handle grants signal access and the opener did not ask for
    /// `NoSignalMaxValueOnTdr` (`no_max_on_tdr`); on another adapter with native fences, the
    /// cross-adapter fence (NF-16).
    pub fn open_native_fence_from_nt_handle(
        &self,
        adapter: usize,
        process: ProcessId,
        h: u64,
        no_max_on_tdr: bool,
    ) -> Result<NativeFence, SimError> {
        self.open_nt_handle_through(adapter, process, None, h, no_max_on_tdr)
    }

    /// [`Self::open_native_fence_from_nt_handle`] through `p`'s device (the thunk's `hDevice`):
    /// on the fence's adapter the instance is opened through it
    /// ([`Self::open_native_fence_on`]).
    pub fn open_native_fence_from_nt_handle_on(
        &self,
        p: &crate::ums::UmsProcess,
        h: u64,
        no_max_on_tdr: bool,
    ) -> Result<NativeFence, SimError> {
        self.open_nt_handle_through(p.adapter, p.pid, Some(p.device), h, no_max_on_tdr)
    }

    fn open_nt_handle_through(
        &self,
        adapter: usize,
        process: ProcessId,
        device: Option<crate::ob::KmtHandle>,
        h: u64,
        no_max_on_tdr: bool,
    ) -> Result<NativeFence, SimError> {
        let (template, access) = share::fence_of_nt_handle(&self.handles, process, h)?;
        if access & share::READ_CONTROL == 0 {
            return Err(SimError::DdiFailed(STATUS_ACCESS_DENIED));
        }
        if adapter == template.adapter() {
            let open = crate::sync::fence::OpenAccess {
                signal: access & share::SYNC_ACCESS_SIGNAL != 0,
                no_signal_max_value_on_tdr: no_max_on_tdr,
                ..crate::sync::fence::OpenAccess::default()
            };
            let a = self.fence_adapter(adapter)?;
            native::open_with(&a, &template, process, device, open, self)
        } else {
            self.open_native_fence_cross_adapter(&template, adapter, process)
        }
    }

    /// The same, opened as a legacy monitored fence on an adapter without native fences
    /// (NF-18).
    pub fn open_native_fence_as_monitored_from_nt_handle(
        &self,
        adapter: usize,
        process: ProcessId,
        h: u64,
    ) -> Result<MonitoredFence, SimError> {
        let (template, _) = share::fence_of_nt_handle(&self.handles, process, h)?;
        self.open_native_fence_as_monitored(&template, adapter, process)
    }
}

// Native fence logs.
impl Machine {
    /// Installs the OS's trace sink on every adapter (docs/logs.md#simulated-os). With a sink the OS
    /// also calibrates the GPU clock at log drains (docs/logs.md#simulated-os).
    pub fn set_trace_sink(&self, s: Arc<dyn TraceSink>) {
        for i in 0.. {
            let Ok(a) = self.adapter_shared(i) else {
                break;
            };
            logs::install_trace_sink(a, &s);
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
        logs::hw_queue_kmd_by_id(a, queue_id)
    }

    /// Whether adapter `i`'s driver advertised `OptimizedNativeFenceSignaledInterrupt`
    /// (LOG-08: the OS then reads `hHWQueue`, not the fence array).
    pub fn optimized_fence_irq(&self, i: usize) -> bool {
        self.adapter_shared(i)
            .is_ok_and(|a| logs::optimized_fence_irq(a))
    }

    /// Adapter `i`'s queue table of the log machinery (tests of the ISR-time check).
    pub fn log_table(&self, i: usize) -> Option<Arc<LogTable>> {
        let a = self.adapter_shared(i).ok()?;
        let t = lock(&a.fence_os).logs.clone();
        Some(t)
    }

    /// The log drain's counters on adapter `i`.
    pub fn log_counters(&self, i: usize) -> LogCounters {
        self.adapter_shared(i)
            .map_or_else(|_| Default::default(), |a| lock(&a.fence_os).log_counters)
    }

    /// Gives `fence` (this process's instance) a D3DKMT handle, the `hNativeFence` a LOG_WRITE
    /// records (what `D3DKMTCreateNativeFence` returns to the process). Returns the handle.
    pub fn native_fence_kmt_handle(&self, fence: &NativeFence) -> Result<u32, SimError> {
        let a = self.fence_adapter(fence.adapter())?;
        logs::kmt_handle(&a, fence)
    }

    /// The instance with D3DKMT handle `h` on adapter `i`.
    pub fn native_fence_by_kmt(&self, i: usize, h: u32) -> Option<NativeFence> {
        let a = self.adapter_shared(i).ok()?;
        logs::by_kmt(a, h)
    }

    /// The D3DKMT native-fence handles `process` holds on adapter `i` (process exit).
    pub(crate) fn native_fence_kmt_handles_of(&self, i: usize, process: ProcessId) -> Vec<u32> {
        let Ok(a) = self.adapter_shared(i) else {
            return Vec::new();
        };
        logs::kmt_handles_of(a, process)
    }

    /// Forgets D3DKMT handle `h` (before the instance is destroyed); returns its instance.
    pub(crate) fn take_native_fence_kmt(&self, i: usize, h: u32) -> Option<NativeFence> {
        let a = self.adapter_shared(i).ok()?;
        logs::take_kmt(a, h)
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
        logs::drain(&a, named, engines)
    }

    /// The non-optimized baseline: what a NULL report costs the OS, a resample of every native
    /// fence of adapter `i` that can need one (the scan set), releasing and re-arming
    /// as the DPC does.
    pub fn scan_native_fences(&self, i: usize) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?.clone();
        logs::scan(&a)
    }

    /// `DxgkDdiCalibrateGpuClock(node, 0)` on adapter `i` with the OS's checks (docs/logs.md#simulated-os):
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
