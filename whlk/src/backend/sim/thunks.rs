//! The D3DKMT thunks the simulated backend gives the UMD core: `rvgpu_simos::kmt::SimKmt`
//! behind a shared machine (so `UserQueue`/`KernelQueue` can live in the session next to the
//! machine, and move to worker threads), recording what the UMD created for each queue (its
//! context, hardware queues, ring allocations and doorbell: the handles the OS names in its
//! events and that the session's probes need).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rvgpu_ddi::ntstatus::{STATUS_INVALID_HANDLE, STATUS_UNSUCCESSFUL};
use rvgpu_simos::kmt::{SimDoorbell, SimFence, SimKmt, SimMem};
use rvgpu_simos::{Machine, MonitoredFence, SimError, UmsProcess, WaitOutcome};
use rvgpu_umd::fence::NativeFence as UmdNativeFence;
use rvgpu_umd::kmt::{
    Allocation, AllocationKind, AllocationPdd, DestroyFlags, DeviceExecutionState, Doorbell,
    EvictFlags, FenceCpu, HwQueue, Kmt, KmtHandle, MakeResidentError, MakeResidentFlags, MapGpuVa,
    MappedGpu, MappedGpuVa, NtStatus, PagingFence, PagingQueue, ReserveGpuVa, UpdateGpuVa,
    UpdateGpuVaOp,
};

use crate::backend::kmt::sync::TestThunks;
use crate::backend::kmt::sync::{FenceWait, KmtSync, MonitoredSync};

/// What the UMD created through one [`SessKmt`] (one harness queue).
#[derive(Debug, Default)]
pub(crate) struct Created {
    /// Contexts.
    pub contexts: Vec<KmtHandle>,
    /// Hardware queues and whether each is user-mode.
    pub hw_queues: Vec<(KmtHandle, bool)>,
    /// Allocations: handle → (bus address of the backing, size).
    pub allocations: HashMap<KmtHandle, (u64, u64)>,
    /// The doorbell (the last one created).
    pub doorbell: Option<KmtHandle>,
    /// Ring and ring-control allocation handles of that doorbell.
    pub ring: Option<(KmtHandle, KmtHandle)>,
    /// Allocations the harness destroyed behind the UMD's back (UM-07 probe); the UMD's
    /// own later destroy of them is answered with success.
    pub released: Vec<KmtHandle>,
    /// Monitored fences created through [`KmtSync::create_monitored_fence`], by handle.
    pub monitored: HashMap<KmtHandle, MonitoredFence>,
}

/// Thunks of one process for one harness queue.
#[derive(Clone)]
pub struct SessKmt {
    m: Arc<Machine>,
    p: UmsProcess,
    rec: Arc<Mutex<Created>>,
}

impl fmt::Debug for SessKmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessKmt")
            .field("process", &self.p)
            .finish_non_exhaustive()
    }
}

pub(crate) fn lock(rec: &Mutex<Created>) -> MutexGuard<'_, Created> {
    rec.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SessKmt {
    pub(crate) fn new(m: Arc<Machine>, p: UmsProcess) -> Self {
        Self {
            m,
            p,
            rec: Arc::new(Mutex::new(Created::default())),
        }
    }

    /// The machine and the process these thunks belong to.
    pub(crate) fn parts(&self) -> (&Arc<Machine>, UmsProcess) {
        (&self.m, self.p)
    }

    pub(crate) fn record(&self) -> Arc<Mutex<Created>> {
        self.rec.clone()
    }

    fn k(&self) -> SimKmt<'_> {
        self.m.kmt(&self.p)
    }
}

impl Kmt for SessKmt {
    type Mem = SimMem;
    type Doorbell = SimDoorbell;
    type Fence = SimFence;

    fn create_context(&self, node: u32) -> Result<KmtHandle, NtStatus> {
        let h = self.k().create_context(node)?;
        lock(&self.rec).contexts.push(h);
        Ok(h)
    }

    fn create_hw_queue(
        &self,
        context: KmtHandle,
        user_mode_submission: bool,
        private_data: &mut [u8],
    ) -> Result<HwQueue<SimFence>, NtStatus> {
        let q = self
            .k()
            .create_hw_queue(context, user_mode_submission, private_data)?;
        lock(&self.rec)
            .hw_queues
            .push((q.handle, user_mode_submission));
        Ok(q)
    }

    fn create_allocation_as(
        &self,
        size: u64,
        kind: AllocationKind,
    ) -> Result<Allocation<SimMem>, NtStatus> {
        let a = self.k().create_allocation_as(size, kind)?;
        lock(&self.rec)
            .allocations
            .insert(a.handle, (a.mem.alloc().bus_addr, a.size));
        Ok(a)
    }

    fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
        {
            let mut r = lock(&self.rec);
            if let Some(i) = r.released.iter().position(|h| *h == allocation) {
                r.released.swap_remove(i);
                return Ok(());
            }
        }
        self.k().destroy_allocation(allocation)
    }

    /// A plain destruction goes through [`Kmt::destroy_allocation`] (which knows the handles
    /// the harness released behind the UMD); `AssumeNotInUse` to the simulated OS.
    fn destroy_allocation2(
        &self,
        allocation: KmtHandle,
        flags: DestroyFlags,
    ) -> Result<(), NtStatus> {
        if flags.assume_not_in_use {
            self.k().destroy_allocation2(allocation, flags)
        } else {
            self.destroy_allocation(allocation)
        }
    }

    fn create_doorbell(
        &self,
        queue: KmtHandle,
        ring: KmtHandle,
        ring_control: KmtHandle,
        private_data: &mut [u8],
    ) -> Result<Doorbell<SimDoorbell>, NtStatus> {
        let d = self
            .k()
            .create_doorbell(queue, ring, ring_control, private_data)?;
        let mut r = lock(&self.rec);
        r.doorbell = Some(d.handle);
        r.ring = Some((ring, ring_control));
        Ok(d)
    }

    // Thunks that go to the simulated OS's [`SimKmt`] unchanged.
    rvgpu_umd::forward_thunks! { self => self.k();
        fn node_hw_scheduled(&self, node: u32) -> Result<bool, NtStatus>;
        fn destroy_context(&self, context: KmtHandle) -> Result<(), NtStatus>;
        fn destroy_hw_queue(&self, queue: KmtHandle) -> Result<(), NtStatus>;
        // The allocation thunks the UMD's tracked buffers use (`rvgpu_umd::usage::Buffer`).
        fn create_allocation_pdd(&self, pdd: &AllocationPdd) -> Result<MappedGpu, NtStatus>;
        fn lock2(&self, allocation: KmtHandle) -> Result<SimMem, NtStatus>;
        fn unlock2(&self, allocation: KmtHandle) -> Result<(), NtStatus>;
        fn invalidate_cache(&self, allocation: KmtHandle, offset: u64, length: u64) -> Result<(), NtStatus>;
        fn io_coherent(&self) -> bool;
        fn make_resident(&self, allocations: &[KmtHandle], flags: MakeResidentFlags) -> Result<PagingFence, MakeResidentError>;
        fn evict(&self, allocations: &[KmtHandle], flags: EvictFlags) -> Result<u64, NtStatus>;
        fn make_resident_on(&self, queue: &PagingQueue<SimFence>, allocations: &[KmtHandle], flags: MakeResidentFlags) -> Result<PagingFence, MakeResidentError>;
        // The GPU VA thunks, as the simulated OS has them.
        fn device_paging_queue(&self) -> Result<(KmtHandle, KmtHandle), NtStatus>;
        fn create_paging_queue(&self, priority: i32) -> Result<PagingQueue<SimFence>, NtStatus>;
        fn destroy_paging_queue(&self, queue: KmtHandle) -> Result<(), NtStatus>;
        fn reserve_gpu_va(&self, r: &ReserveGpuVa) -> Result<u64, NtStatus>;
        fn map_gpu_va(&self, r: &MapGpuVa) -> Result<MappedGpuVa, NtStatus>;
        fn free_gpu_va(&self, base: u64, size: u64) -> Result<(), NtStatus>;
        fn update_gpu_va(&self, u: &UpdateGpuVa, ops: &[UpdateGpuVaOp]) -> Result<(), NtStatus>;
        fn connect_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
        fn destroy_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
        fn notify_work_submission(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
        fn submit_command_to_hw_queue(&self, queue: KmtHandle, progress_fence_value: u64, command_buffer_gpu: u64, command_bytes: u32) -> Result<(), NtStatus>;
        fn submit_command(&self, context: KmtHandle, command_buffer_gpu: u64, command_bytes: u32) -> Result<(), NtStatus>;
        fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus>;
        fn submit_wait_to_hw_queue(&self, queue: KmtHandle, fences: &[(KmtHandle, u64)]) -> Result<(), NtStatus>;
        fn submit_signal_to_hw_queue(&self, queue: KmtHandle, fences: &[(KmtHandle, u64)]) -> Result<(), NtStatus>;
        fn create_native_fence(&self, initial_value: u64) -> Result<UmdNativeFence, NtStatus>;
        fn native_fence_cpu(&self, fence: &UmdNativeFence) -> Result<SimFence, NtStatus>;
        fn create_shareable_native_fence(&self, initial_value: u64) -> Result<UmdNativeFence, NtStatus>;
        fn share_native_fence(&self, fence: KmtHandle) -> Result<u64, NtStatus>;
        fn close_nt_handle(&self, handle: u64) -> Result<(), NtStatus>;
        fn open_native_fence(&self, shared: u64) -> Result<UmdNativeFence, NtStatus>;
        fn destroy_native_fence(&self, fence: KmtHandle) -> Result<(), NtStatus>;
        fn device_execution_state(&self) -> Result<DeviceExecutionState, NtStatus>;
        /// The "queued" events' clock: the simulation's QPC, the clock the KMD calibrates
        /// against.
        fn cpu_timestamp(&self) -> u64;
        fn cpu_timestamp_frequency(&self) -> u64;
    }
}

fn sim_status(e: SimError) -> NtStatus {
    // A halted machine has no status: the session reports the fault itself
    // (`KmtMachine::fault`).
    NtStatus(e.status().unwrap_or(STATUS_UNSUCCESSFUL))
}

fn fence_wait(o: WaitOutcome) -> FenceWait {
    match o {
        WaitOutcome::Satisfied => FenceWait::Reached,
        WaitOutcome::TimedOut => FenceWait::TimedOut,
        WaitOutcome::Abandoned => FenceWait::Abandoned,
    }
}

/// The CPU mapping of a simulated monitored fence's value.
#[derive(Clone, Debug)]
pub struct SimMonitoredValue(MonitoredFence);

impl FenceCpu for SimMonitoredValue {
    fn value(&self) -> u64 {
        self.0.value()
    }
}

impl SessKmt {
    /// This process's native fence with D3DKMT handle `h`.
    fn native_fence(&self, h: KmtHandle) -> Option<rvgpu_simos::NativeFence> {
        self.m
            .native_fence_by_kmt(self.p.adapter, h)
            .filter(|f| f.process() == self.p.pid)
    }

    fn monitored_fence(&self, h: KmtHandle) -> Option<MonitoredFence> {
        lock(&self.rec).monitored.get(&h).cloned()
    }
}

/// The simulated OS's sync-object thunks, dispatching on the kind of object the handle names,
/// as Dxgkrnl does.
impl KmtSync for SessKmt {
    type Value = SimMonitoredValue;

    fn testing(&self) -> Option<&dyn TestThunks> {
        Some(self)
    }

    fn create_monitored_fence(&self, initial: u64) -> Result<MonitoredSync<Self::Value>, NtStatus> {
        let (handle, f) = self.k().create_monitored_fence(initial)?;
        lock(&self.rec).monitored.insert(handle, f.clone());
        Ok(MonitoredSync {
            handle,
            value_gpu: f.gpu_va(),
            value: SimMonitoredValue(f),
        })
    }

    fn signal_from_cpu(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        match self.native_fence(fence) {
            Some(f) => self
                .m
                .signal_native_fence_from_cpu(&f, value)
                .map_err(sim_status),
            None => self.k().signal_fence_from_cpu(fence, value),
        }
    }

    fn wait_timeout(
        &self,
        fence: KmtHandle,
        value: u64,
        timeout: std::time::Duration,
    ) -> Result<FenceWait, NtStatus> {
        if let Some(f) = self.native_fence(fence) {
            return super::wait::bounded_wait(&self.m, &f, value, timeout)
                .map(fence_wait)
                .map_err(sim_status);
        }
        // A handle this process does not hold.
        let f = self
            .monitored_fence(fence)
            .ok_or(NtStatus(STATUS_INVALID_HANDLE))?;
        self.m
            .wait_monitored_fence(&f, value, timeout)
            .map(fence_wait)
            .map_err(sim_status)
    }

    fn wddm_1_2_caps(&self) -> Result<u32, NtStatus> {
        let b = self.k().wddm_1_2_caps()?;
        Ok(u32::from_le_bytes([b[8], b[9], b[10], b[11]]))
    }
}

impl TestThunks for SessKmt {
    fn escape_build_test_command_buffer(
        &self,
        data: &mut [u8],
        dma: &mut [u8],
        private: &mut [u8],
    ) -> Result<(), NtStatus> {
        let (m, p) = self.parts();
        let st = m
            .escape_build_test_command_buffer(p.adapter, p.pid, data, dma, private)
            .map_err(|_| NtStatus(STATUS_UNSUCCESSFUL))?;
        if st == 0 {
            Ok(())
        } else {
            Err(NtStatus(st))
        }
    }

    fn escape_driver_private(&self, data: &mut [u8]) -> Result<(), NtStatus> {
        self.k().escape_driver_private(data)
    }

    fn kernel_mode_testing_enabled(&self) -> Result<bool, NtStatus> {
        let (m, p) = self.parts();
        Ok(m.feature_db(p.adapter)
            .version(rvgpu_ddi::feature::DXGK_FEATURE_KERNEL_MODE_TESTING)
            .is_some())
    }

    fn arm_tdr(&self) -> Result<(), NtStatus> {
        let (m, p) = self.parts();
        // Threaded: wall-clock limits long enough that a loaded host does not time out
        // innocent work (Windows' TdrDelay is 2 s), short enough for a quick case.
        let t = crate::backend::TdrTimeouts {
            timeout: Duration::from_millis(500),
            preempt_timeout: Duration::from_millis(50),
            ..crate::backend::TdrTimeouts::fast()
        };
        m.enable_tdr(
            p.adapter,
            rvgpu_simos::TdrConfig {
                timeout_steps: t.timeout_steps,
                timeout: t.timeout,
                preempt_steps: t.preempt_steps,
                preempt_timeout: t.preempt_timeout,
                ..rvgpu_simos::TdrConfig::default()
            },
        )
        .map_err(|_| NtStatus(STATUS_UNSUCCESSFUL))
    }
}
