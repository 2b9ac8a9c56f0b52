//! [`rvgpu_umd::kmt::Kmt`] over the simulated kernel: each call the UMD makes goes through
//! its thunk's kernel entry (`crate::kmt::…`) with the structure the UMD's Windows thunk
//! fills, so the real UMD runs against the simulated OS and the real KMD.

use std::sync::Arc;
use std::time::Duration;

use rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL;
use rvgpu_umd::fence::{FenceMapping, NativeFence as UmdNativeFence};
use rvgpu_umd::kmt::{
    Allocation, AllocationPdd, DestroyFlags, DeviceExecutionState, Doorbell, EvictFlags, HwQueue,
    Kmt, KmtHandle, MakeResidentError, MakeResidentFlags, MapGpuVa, MappedGpu, MappedGpuVa,
    NtStatus, PagingFence, PagingQueue, ReserveGpuVa, UpdateGpuVa, UpdateGpuVaOp,
};
use zerocopy::IntoBytes;

use super::allocation;
use super::context_virtual;
use super::destroy_sync;
use super::device_state;
use super::doorbell;
use super::evict;
use super::gpu_va;
use super::hw_queue;
use super::invalidate_cache;
use super::lock;
use super::native_fence;
use super::paging_queue;
use super::process::{status, SimDoorbell, SimFence, SimKmt, SimMem};
use super::query_adapter_info;
use super::share;
use super::submit_command;
use super::umd_nodes;
use crate::base::error::STATUS_IO_TIMEOUT;
use crate::base::lock::lock;
use crate::sync::fence::{MonitoredFence, NativeFence, NativeFenceDesc, WaitOutcome};
use crate::ums::{self, DoorbellCpuState, UmsProcess};

impl SimKmt<'_> {
    /// The caller's device `h` as the entries look it up: this process's one device.
    pub(super) fn own_device(&self, h: KmtHandle) -> Option<UmsProcess> {
        (h == self.p.device).then_some(self.p)
    }

    /// `D3DKMTQueryAdapterInfo(KMTQAITYPE_WDDM_1_2_CAPS)` on the process's adapter: 12 bytes.
    pub fn wddm_1_2_caps(&self) -> Result<[u8; 12], NtStatus> {
        query_adapter_info::process_wddm_1_2_caps(self.m, &self.p)
    }

    /// `D3DKMTCreateNativeFence` of a default-type fence, private or `shareable` (`Shared` with
    /// `NtSecuritySharing`, as 24H2 requires them together), through the thunk's kernel entry
    /// with the structure the UMD's Windows thunk fills.
    fn create_fence(&self, initial: u64, shareable: bool) -> Result<UmdNativeFence, NtStatus> {
        use native_fence::{SYNC_NT_SECURITY_SHARING, SYNC_SHARED};
        let flags = if shareable {
            SYNC_SHARED | SYNC_NT_SECURITY_SHARING
        } else {
            0
        };
        let mut a = native_fence::D3DKMT_CREATENATIVEFENCE::new(self.p.device, initial, flags);
        let f = native_fence::nt_dxgk_create_native_fence_internal(self.m, &mut a, |h| {
            self.own_device(h)
        })?;
        self.umd_fence(
            &f,
            a.hSyncObject,
            a.Info.NativeFenceMapping.CurrentValueCpuVa,
            &a.PrivateDriverData,
        )
    }

    /// `D3DKMTCreateNativeFence` of a default-type fence as the OS returns it to a user-mode
    /// image (the PE bridge): its D3DKMT handle and the fence, whose private data and mapping
    /// the thunk hands back.
    pub(crate) fn create_native_fence_raw(
        &self,
        desc: NativeFenceDesc,
    ) -> Result<(KmtHandle, NativeFence), NtStatus> {
        self.thunk()?;
        self.with_raw_kmt_handle(self.create_default_fence(desc)?)
    }

    /// The UMD's view of fence `f` (D3DKMT handle `h`) from what a create or open thunk wrote
    /// back: this process's mapping and the private data. A view the UMD refuses closes the
    /// instance again.
    fn umd_fence(
        &self,
        f: &NativeFence,
        h: KmtHandle,
        cpu_va: u64,
        pdd: &[u8],
    ) -> Result<UmdNativeFence, NtStatus> {
        // D3DDDI_NATIVEFENCEMAPPING: this process's VAs, and the CPU's view of CurrentValue
        // (the OS's page itself here: user and kernel share memory).
        let mapping = FenceMapping {
            current_value_cpu: cpu_va as usize,
            current_value_gpu: f.current_value_va(),
            monitored_value_gpu: f.monitored_value_va(),
        };
        UmdNativeFence::new(h, &mapping, pdd).map_err(|_| {
            let _ = self.m.take_native_fence_kmt(self.p.adapter, h);
            let _ = self.m.destroy_native_fence(f);
            NtStatus(STATUS_UNSUCCESSFUL)
        })
    }

    /// `D3DKMTShareObjects` of this process's native fence `fence` with `dwDesiredAccess`
    /// `desired`, through the thunk's kernel entry ([`share`]) with the arguments the UMD's
    /// Windows thunk passes: a new NT handle granting what `desired` maps to
    /// (`crate::sync::fence::share::granted`).
    pub fn share_native_fence_with_access(
        &self,
        fence: KmtHandle,
        desired: u32,
    ) -> Result<u64, NtStatus> {
        let mem = share::HostShare::new(fence);
        share::dxgk_share_objects_internal(self.m, &share::HostShare::args(desired), self, &mem)
    }

    /// `D3DKMTEscape` with `DriverKnownEscape` and a `D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER`
    /// (`data`, whose pointers name `dma` and `private`): the kernel-mode testing escape
    /// ([`crate::dxgkrnl::kmtest`]).
    pub fn escape_build_test_command_buffer(
        &self,
        data: &mut [u8],
        dma: &mut [u8],
        private: &mut [u8],
    ) -> Result<(), NtStatus> {
        self.thunk()?;
        let st = self
            .m
            .escape_build_test_command_buffer(self.p.adapter, self.p.pid, data, dma, private)
            .map_err(status)?;
        if st == 0 {
            Ok(())
        } else {
            Err(NtStatus(st))
        }
    }

    /// `D3DKMTCreateSynchronizationObject2` of a `D3DDDI_MONITORED_FENCE` (MF-01) with
    /// `initial`: its D3DKMT handle (what the MF-03 thunks and
    /// [`Kmt::wait_for_fence`] take) and the OS object (CPU view, GPU VA, CPU signal through
    /// [`Machine::signal_monitored_fence_from_cpu`]).
    /// Through the thunk's kernel entry ([`sync_object`]) with the structure the UMD's Windows
    /// thunk fills (no flags).
    ///
    /// [`Machine::signal_monitored_fence_from_cpu`]: crate::machine::Machine::signal_monitored_fence_from_cpu
    /// [`sync_object`]: super::sync_object
    pub fn create_monitored_fence(
        &self,
        initial: u64,
    ) -> Result<(KmtHandle, MonitoredFence), NtStatus> {
        self.create_monitored_fence_with(initial, 0)
    }

    /// `D3DKMTDestroySynchronizationObject` of a fence from
    /// [`create_monitored_fence`](Self::create_monitored_fence); pending CPU waits end
    /// abandoned, GPU waits no longer hold their queues.
    pub fn destroy_monitored_fence(&self, fence: KmtHandle) -> Result<(), NtStatus> {
        destroy_sync::dxgk_destroy_synchronization_object_impl(self.m, fence, self)
    }

    /// `D3DKMTCreateAllocation2` of a data buffer the CPU maps write-back cached
    /// (`ALLOCATION_CPU_CACHED`), with its CPU view. On an adapter whose GPU does not snoop
    /// (AL-06) the view goes through the allocation's [`CpuCache`], so the UMD must call
    /// [`Kmt::invalidate_cache`] around GPU access; elsewhere it is the memory itself.
    ///
    /// The views [`Kmt::create_allocation_as`] hands out are uncached (write-combined: the
    /// UMD's private data does not ask for `Cached`): rings and command buffers reach the GPU
    /// without cache maintenance, which the UMD does only for its `usage::Buffer`s.
    ///
    /// [`CpuCache`]: crate::machine::cpucache::CpuCache
    pub fn create_cached_allocation(&self, size: u64) -> Result<Allocation<SimMem>, NtStatus> {
        let mut pdd =
            rvgpu_umd::kmt::allocation_private_data(size, rvgpu_umd::kmt::AllocationKind::Buffer);
        pdd.flags |= rvgpu_hw::pdd::ALLOCATION_CPU_CACHED;
        self.create_and_lock(&pdd)
    }

    /// A new allocation as the UMD makes one, in the order the Windows thunks use
    /// (`kmt_windows`): `D3DKMTCreateAllocation2` with `pdd`; its GPU VA
    /// ([`rvgpu_umd::kmt::map_new_allocation`]: under 24H2 the create gives none, so
    /// `D3DKMTMapGpuVirtualAddress` on the device's paging queue); `D3DKMTMakeResident`
    /// ([`Kmt::make_resident`], done inside the call); a wait for the Map's paging fence; one
    /// `D3DKMTLock2` for the CPU mapping. A failed step destroys the allocation (and with it
    /// the VA Map made).
    fn create_and_lock(&self, pdd: &AllocationPdd) -> Result<Allocation<SimMem>, NtStatus> {
        let m = self.create_allocation_pdd(pdd)?;
        let made = rvgpu_umd::kmt::map_new_allocation(self, &m, pdd).and_then(|(gpu_va, map)| {
            self.make_resident(&[m.handle], MakeResidentFlags::default())
                .map_err(|e| match e {
                    MakeResidentError::Status(s) => s,
                    MakeResidentError::OverBudget { .. } => {
                        NtStatus(rvgpu_ddi::ntstatus::STATUS_NO_MEMORY)
                    }
                })?;
            rvgpu_umd::kmt::wait_paging(self, map)?;
            Ok((gpu_va, self.lock2(m.handle)?))
        });
        match made {
            Ok((gpu_va, mem)) => Ok(Allocation {
                handle: m.handle,
                gpu_va,
                size: m.size,
                mem,
            }),
            Err(e) => {
                let _ = self.destroy_allocation(m.handle);
                Err(e)
            }
        }
    }

    /// Whether the paging operation that handed out `value` on paging queue `queue` was done
    /// before its thunk returned (STATUS_SUCCESS; else STATUS_PENDING,
    /// `vidmm::va::paging_queue::paging_done_in_thunk`).
    #[cfg(target_os = "linux")]
    pub(crate) fn paging_fence_reached(&self, queue: KmtHandle, value: u64) -> bool {
        self.adapter().map_or(true, |a| {
            crate::vidmm::va::paging_queue::paging_done_in_thunk(&a, queue, value)
        })
    }
}

impl Kmt for SimKmt<'_> {
    type Mem = SimMem;
    type Doorbell = SimDoorbell;
    type Fence = SimFence;

    /// Through the thunk's kernel entry with the structure the UMD's Windows thunk fills
    /// (`umd/src/kmt_windows`: engine 0, `HwQueueSupported` exactly on a hardware-scheduled
    /// node, no private data).
    fn create_context(&self, node: u32) -> Result<KmtHandle, NtStatus> {
        let hw = self.node_hw_scheduled(node)?;
        let mut a = context_virtual::D3DKMT_CREATECONTEXTVIRTUAL {
            hDevice: self.p.device,
            NodeOrdinal: node,
            Flags: rvgpu_umd::nodes::context_flags(hw),
            ..Default::default()
        };
        context_virtual::dxgk_create_context_virtual_impl(
            self.m,
            &mut a,
            |h| self.own_device(h),
            &context_virtual::NoCallerMemory,
        )?;
        Ok(a.hContext)
    }

    /// Through `D3DKMTQueryAdapterInfo`'s kernel entry with the structure the UMD's Windows
    /// thunk fills (`KMTQAITYPE_NODEMETADATA`, 78 bytes), once per node of the process's
    /// device. The process's adapter is the one its device is on (a simulated process opens no
    /// adapter handle of its own).
    fn node_hw_scheduled(&self, node: u32) -> Result<bool, NtStatus> {
        umd_nodes::node_hw_scheduled(self.m, &self.p, node)
    }

    fn destroy_context(&self, context: KmtHandle) -> Result<(), NtStatus> {
        context_virtual::dxgk_destroy_context_impl(self.m, context, |_| Some(self.p))
    }

    fn create_hw_queue(
        &self,
        context: KmtHandle,
        user_mode_submission: bool,
        private_data: &mut [u8],
    ) -> Result<HwQueue<SimFence>, NtStatus> {
        let mem = hw_queue::Buffer::new(private_data);
        let (at, size) = mem.pointer();
        let mut a = hw_queue::D3DKMT_CREATEHWQUEUE {
            hHwContext: context,
            Flags: u32::from(user_mode_submission) * hw_queue::USER_MODE_SUBMISSION,
            PrivateDriverDataSize: size,
            pPrivateDriverData: at,
            ..Default::default()
        };
        hw_queue::dxgk_create_hw_queue_internal(self.m, &mut a, |_| Some(self.p), &mem)
            .map(hw_queue::CreatedHwQueue::into_umd)
    }

    fn destroy_hw_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
        hw_queue::dxgk_destroy_hw_queue_internal(self.m, queue, |_| Some(self.p))
    }

    fn create_allocation_as(
        &self,
        size: u64,
        kind: rvgpu_umd::kmt::AllocationKind,
    ) -> Result<Allocation<SimMem>, NtStatus> {
        // The UMD's private data, as D3DKMTCreateAllocation2 carries it to the KMD.
        let pdd = rvgpu_umd::kmt::allocation_private_data(size, kind);
        self.create_and_lock(&pdd)
    }

    /// Through the thunk's kernel entry ([`allocation::dxgk_create_allocation_internal`]) with
    /// the structure the UMD's Windows thunk fills (one allocation).
    fn create_allocation_pdd(&self, pdd: &AllocationPdd) -> Result<MappedGpu, NtStatus> {
        let mem = allocation::HostCreate::one(pdd.as_bytes());
        let mut a = mem.structure(self.p.device);
        let device = |h| self.own_device(h);
        allocation::dxgk_create_allocation_internal(self.m, &mut a, device, &mem, |_| Ok(()))?
            .pop()
            .ok_or(NtStatus(STATUS_UNSUCCESSFUL))
    }

    /// Through the thunk's kernel entry ([`lock`]) with the structure the UMD's Windows thunk
    /// fills (no flags).
    fn lock2(&self, allocation: KmtHandle) -> Result<SimMem, NtStatus> {
        let mut a = rvgpu_ddi::d3dkmt::D3DKMT_LOCK2 {
            hDevice: self.p.device,
            hAllocation: allocation,
            ..Default::default()
        };
        lock::dxgk_lock2(
            self.m,
            &mut a,
            |h| self.own_device(h),
            |h| gpu_va::allocation_device(self.m, &self.p, h),
        )
    }

    fn unlock2(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
        let a = rvgpu_ddi::d3dkmt::D3DKMT_UNLOCK2 {
            hDevice: self.p.device,
            hAllocation: allocation,
        };
        lock::dxgk_unlock2(
            self.m,
            &a,
            |h| self.own_device(h),
            |h| gpu_va::allocation_device(self.m, &self.p, h),
        )
    }

    fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
        self.destroy_allocation2(allocation, DestroyFlags::default())
    }

    /// Through the thunk's kernel entry ([`allocation::dxgk_destroy_allocation2`]) with the
    /// structure the UMD's Windows thunk fills (one allocation).
    fn destroy_allocation2(
        &self,
        allocation: KmtHandle,
        flags: DestroyFlags,
    ) -> Result<(), NtStatus> {
        let list = [allocation];
        let a = allocation::D3DKMT_DESTROYALLOCATION2 {
            hDevice: self.p.device,
            phAllocationList: list.as_ptr() as u64,
            AllocationCount: 1,
            Flags: u32::from(flags.assume_not_in_use) * allocation::DESTROY_ASSUME_NOT_IN_USE,
            ..Default::default()
        };
        allocation::dxgk_destroy_allocation2(
            self.m,
            &a,
            |h| self.own_device(h),
            |_, _| Ok(list.to_vec()),
            |h| gpu_va::allocation_device(self.m, &self.p, h),
        )
        .map(drop)
    }

    /// VidMm pages in what is evicted before it returns, so the paging fence value
    /// handed back is one already reached (the "ready to be accessed immediately" success of
    /// the MakeResident page) and no wait is needed.
    fn make_resident(
        &self,
        allocations: &[KmtHandle],
        flags: MakeResidentFlags,
    ) -> Result<PagingFence, MakeResidentError> {
        use crate::vidmm::residency::MakeResidentFail;
        let a = self.thunk().map_err(MakeResidentError::Status)?;
        self.m
            .residency_make_resident(&a, self.p.device, allocations, flags.cant_trim_further)
            .map_err(|e| match e {
                MakeResidentFail::OverBudget(bytes_to_trim) => {
                    MakeResidentError::OverBudget { bytes_to_trim }
                }
                MakeResidentFail::Failed(e) => MakeResidentError::Status(status(e)),
            })?;
        Ok(PagingFence { fence: 0, value: 0 })
    }

    /// Through the thunk's kernel entry ([`paging_queue`]) with the structure the UMD's Windows
    /// thunk fills. The paging runs inside the call; the value returned on the queue's fence
    /// is not reached until the queue's worker gets there (24H2's STATUS_PENDING,
    /// `vidmm::va::paging_queue`), and the caller waits for it.
    fn make_resident_on(
        &self,
        queue: &PagingQueue<SimFence>,
        allocations: &[KmtHandle],
        flags: MakeResidentFlags,
    ) -> Result<PagingFence, MakeResidentError> {
        paging_queue::umd_make_resident(self.m, self.p, queue, allocations, flags)
    }

    /// Through the thunk's kernel entry ([`evict`]) with the structure the UMD's Windows thunk
    /// fills.
    fn evict(&self, allocations: &[KmtHandle], flags: EvictFlags) -> Result<u64, NtStatus> {
        evict::umd_evict(self.m, self.p, allocations, flags)
    }

    /// Through the thunk's kernel entry ([`invalidate_cache`], AL-06).
    fn invalidate_cache(
        &self,
        allocation: KmtHandle,
        offset: u64,
        length: u64,
    ) -> Result<(), NtStatus> {
        let a = rvgpu_ddi::d3dkmt::D3DKMT_INVALIDATECACHE {
            hDevice: self.p.device,
            hAllocation: allocation,
            Offset: offset,
            Length: length,
        };
        invalidate_cache::dxgk_invalidate_cache(
            self.m,
            &a,
            |h| self.own_device(h),
            |h| gpu_va::allocation_device(self.m, &self.p, h),
        )
    }

    /// From what the KMD reported (the aperture segment's `CacheCoherent` in VidMm's memory
    /// model), not from the device configuration: the OS knows only the driver's answer.
    fn io_coherent(&self) -> bool {
        self.adapter()
            .map_or(true, |a| lock(&a.mm.memory_model).io_coherent())
    }

    /// The paging queue this device's runtime keeps
    /// (`vidmm::va::paging_queue::runtime_paging_queue`), created on first use.
    fn device_paging_queue(&self) -> Result<(KmtHandle, KmtHandle), NtStatus> {
        self.on_device(|a, device| {
            crate::vidmm::va::paging_queue::runtime_paging_queue(self.m, a, device)
        })
    }

    /// Through the thunk's kernel entry ([`paging_queue`]) with the structure the UMD's Windows
    /// thunk fills (`PhysicalAdapterIndex` 0).
    fn create_paging_queue(&self, priority: i32) -> Result<PagingQueue<SimFence>, NtStatus> {
        paging_queue::umd_create(self.m, self.p, priority)
    }

    /// Through the thunk's kernel entry ([`paging_queue`]): a queue of this device.
    fn destroy_paging_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
        let ours = gpu_va::paging_queue_device(self.m, &self.p, queue) == Some(self.p.device);
        paging_queue::dxgk_destroy_paging_queue_internal(self.m, queue, |_| ours.then_some(self.p))
    }

    /// Through the thunk's kernel entry ([`gpu_va`]), as the UMD's Windows thunk fills it.
    fn reserve_gpu_va(&self, r: &ReserveGpuVa) -> Result<u64, NtStatus> {
        gpu_va::umd_reserve(self.m, self.p, r)
    }

    /// Through the thunk's kernel entry ([`gpu_va`]), as the UMD's Windows thunk fills it.
    fn map_gpu_va(&self, r: &MapGpuVa) -> Result<MappedGpuVa, NtStatus> {
        gpu_va::umd_map(self.m, self.p, r)
    }

    /// Through the thunk's kernel entry ([`gpu_va`]), as the UMD's Windows thunk fills it.
    fn free_gpu_va(&self, base: u64, size: u64) -> Result<(), NtStatus> {
        gpu_va::umd_free(self.m, self.p, base, size)
    }

    /// Through the thunk's kernel entry ([`gpu_va`]): queued; VidMm applies it once the fence
    /// reaches `FenceValue`, then signals `FenceValue + 1`.
    fn update_gpu_va(&self, u: &UpdateGpuVa, ops: &[UpdateGpuVaOp]) -> Result<(), NtStatus> {
        gpu_va::umd_update(self.m, self.p, u, ops)
    }

    fn create_doorbell(
        &self,
        queue: KmtHandle,
        ring: KmtHandle,
        ring_control: KmtHandle,
        private_data: &mut [u8],
    ) -> Result<Doorbell<SimDoorbell>, NtStatus> {
        let mem = hw_queue::Buffer::new(private_data);
        let (at, size) = mem.pointer();
        let mut a = rvgpu_ddi::d3dkmt::D3DKMT_CREATE_DOORBELL {
            hHwQueue: queue,
            hRingBuffer: ring,
            hRingBufferControl: ring_control,
            PrivateDriverDataSize: size,
            PrivateDriverData: at,
            ..Default::default()
        };
        // The Rust UMD reaches the pages through the mapping object, not addresses.
        let vas = |_: &Arc<DoorbellCpuState>| Ok(doorbell::DoorbellVas::default());
        let owner = |_| Some(self.p);
        let d = doorbell::dxgk_create_doorbell_internal(self.m, &mut a, owner, &mem, vas)?;
        Ok(Doorbell {
            handle: d.handle,
            cpu: SimDoorbell { cpu: d.cpu },
        })
    }

    fn connect_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
        let a = rvgpu_ddi::d3dkmt::D3DKMT_CONNECT_DOORBELL {
            hDoorbell: doorbell,
            Flags: 0,
        };
        doorbell::dxgk_connect_doorbell_internal(self.m, &a, |_| Some(self.p))
    }

    fn destroy_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
        doorbell::dxgk_destroy_doorbell_internal(self.m, doorbell, |_| Some(self.p))
    }

    fn notify_work_submission(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
        let a = rvgpu_ddi::d3dkmt::D3DKMT_NOTIFY_WORK_SUBMISSION {
            hDoorbell: doorbell,
            Flags: 0,
        };
        doorbell::dxgk_notify_work_submission_internal(self.m, &a, |_| Some(self.p))
    }

    fn submit_command_to_hw_queue(
        &self,
        queue: KmtHandle,
        progress_fence_value: u64,
        command_buffer_gpu: u64,
        command_bytes: u32,
    ) -> Result<(), NtStatus> {
        let a = hw_queue::D3DKMT_SUBMITCOMMANDTOHWQUEUE {
            hHwQueue: queue,
            HwQueueProgressFenceId: progress_fence_value,
            CommandBuffer: command_buffer_gpu,
            CommandLength: command_bytes,
            ..Default::default()
        };
        let mem = context_virtual::NoCallerMemory;
        hw_queue::dxgk_submit_command_to_hw_queue_internal(self.m, &a, |_| Some(self.p), &mem)
    }

    fn submit_command(
        &self,
        context: KmtHandle,
        command_buffer_gpu: u64,
        command_bytes: u32,
    ) -> Result<(), NtStatus> {
        let a = submit_command::one(context, command_buffer_gpu, command_bytes);
        submit_command::dxgk_submit_command_internal(self.m, &a, |_| Some(self.p))
    }

    // Native fences with a D3DKMT handle and the CPU clock (docs/logs.md#simulated-os).

    fn create_native_fence(&self, initial_value: u64) -> Result<UmdNativeFence, NtStatus> {
        // Private: only a fence created shareable gets an NT handle.
        self.create_fence(initial_value, false)
    }

    /// This process's instance of the fence with the D3DKMT handle `fence.kmt` (the view reads
    /// CurrentValue, the same word its `current_value_cpu` maps).
    fn native_fence_cpu(&self, fence: &UmdNativeFence) -> Result<SimFence, NtStatus> {
        self.own_native_fence(fence.kmt).map(SimFence::Native)
    }

    fn create_shareable_native_fence(
        &self,
        initial_value: u64,
    ) -> Result<UmdNativeFence, NtStatus> {
        self.create_fence(initial_value, true)
    }

    fn share_native_fence(&self, fence: KmtHandle) -> Result<u64, NtStatus> {
        self.share_native_fence_with_access(fence, crate::sync::fence::share::GENERIC_ALL)
    }

    fn close_nt_handle(&self, handle: u64) -> Result<(), NtStatus> {
        self.m.close_nt_handle(self.p.pid, handle).map_err(status)
    }

    /// Through the thunk's kernel entry with the structure the UMD's Windows thunk fills.
    fn open_native_fence(&self, shared: u64) -> Result<UmdNativeFence, NtStatus> {
        self.thunk()?;
        let mut a = native_fence::D3DKMT_OPENNATIVEFENCEFROMNTHANDLE::new(shared, self.p.device);
        let f =
            native_fence::nt_dxgk_open_native_fence_from_nt_handle_internal(self.m, &mut a, |h| {
                self.own_device(h)
            })?;
        // The report tag from the KMD (the open's private data is not the KMD's on 24H2).
        let mapping = FenceMapping {
            current_value_cpu: a.NativeFenceMapping.CurrentValueCpuVa as usize,
            current_value_gpu: a.NativeFenceMapping.CurrentValueGpuVa,
            monitored_value_gpu: a.NativeFenceMapping.MonitoredValueGpuVa,
        };
        let mut q = rvgpu_umd::fence::tag_request(&mapping);
        let asked = self.escape_driver_private(q.as_mut_bytes());
        let view = asked.and_then(|()| {
            UmdNativeFence::opened(a.hSyncObject, &mapping, q.as_bytes())
                .map_err(|_| NtStatus(STATUS_UNSUCCESSFUL))
        });
        view.inspect_err(|_| {
            let _ = self.m.take_native_fence_kmt(self.p.adapter, a.hSyncObject);
            let _ = self.m.destroy_native_fence(&f);
        })
    }

    fn signal_native_from_cpu(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        self.signal_fence_from_cpu(fence, value)
    }

    /// Through the thunk's kernel entry ([`destroy_sync`]), as
    /// [`destroy_monitored_fence`](SimKmt::destroy_monitored_fence).
    fn destroy_native_fence(&self, fence: KmtHandle) -> Result<(), NtStatus> {
        destroy_sync::dxgk_destroy_synchronization_object_impl(self.m, fence, self)
    }

    /// Through `D3DKMTGetDeviceState`'s kernel entry with the structure the UMD's Windows thunk
    /// fills (`D3DKMT_DEVICESTATE_EXECUTION` on the process's device).
    fn device_execution_state(&self) -> Result<DeviceExecutionState, NtStatus> {
        let mut a = device_state::D3DKMT_GETDEVICESTATE {
            hDevice: self.p.device,
            StateType: device_state::DEVICESTATE_EXECUTION,
            ..Default::default()
        };
        device_state::dxgk_get_device_state_internal(self.m, &mut a, |h| self.own_device(h))?;
        Ok(DeviceExecutionState(device_state::first_u32(&a)))
    }

    fn cpu_timestamp(&self) -> u64 {
        crate::base::clock::qpc()
    }

    fn cpu_timestamp_frequency(&self) -> u64 {
        crate::base::clock::QPC_HZ
    }

    // MF-03: OS-scheduled GPU waits and signals on kernel-mode hardware queues.

    fn submit_wait_to_hw_queue(
        &self,
        queue: KmtHandle,
        fences: &[(KmtHandle, u64)],
    ) -> Result<(), NtStatus> {
        self.submit_wait_through_entry(queue, fences)
    }

    fn submit_signal_to_hw_queue(
        &self,
        queue: KmtHandle,
        fences: &[(KmtHandle, u64)],
    ) -> Result<(), NtStatus> {
        self.submit_signal_through_entry(queue, fences)
    }

    /// A monitored fence of the process's device, or one of its native fences (the thunk
    /// takes both kinds of synchronization object). A native fence is waited on as the UMD
    /// waits on Windows: in bounded slices, re-reading CurrentValue after each slice the OS did
    /// not end (`rvgpu_umd::wait`; a late wake is counted there), within the OS's wait timeout.
    fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        let a = self.thunk()?;
        self.check_cpu_wait(fence, value)?;
        let timeout = self.m.os_config().wait_timeout;
        let outcome = match ums::fence_of(&a, self.p.device, fence) {
            Some(f) => self.m.wait_monitored_fence(&f, value, timeout),
            None => {
                let f = self.own_native_fence(fence)?;
                let step = self.m.config().mode == crate::Mode::Step;
                // Step mode drives the machine until nothing can change (kernel timers due
                // within the timeout included): one slice of the whole timeout, then the
                // re-check.
                let slice = if step {
                    timeout
                } else {
                    Duration::from_nanos(rvgpu_umd::wait::SLICE_NS)
                };
                // The limit stands for "hung" (24H2's wait has none): in threaded mode the
                // wait runs again while the fence moved or the machine has not run for the
                // limit (`Machine::wait_monitored_fence`); each slice is the UMD's wall time.
                let clock = self.m.machine_time(f.adapter());
                let mut end = clock.now().saturating_add(timeout);
                let mut seen = f.current_value();
                let woken = loop {
                    let left = end.saturating_sub(clock.now());
                    let slices = u64::try_from(left.as_nanos())
                        .ok()
                        .and_then(rvgpu_umd::wait::slices_in);
                    let woken = rvgpu_umd::wait::bounded(
                        value,
                        slices,
                        || match self.m.wait_native_fence(&f, value, slice).map_err(status)? {
                            WaitOutcome::Satisfied => Ok(rvgpu_umd::wait::Slice::Released),
                            WaitOutcome::TimedOut if step => Ok(rvgpu_umd::wait::Slice::Idle),
                            WaitOutcome::TimedOut => Ok(rvgpu_umd::wait::Slice::Pending),
                            WaitOutcome::Abandoned => {
                                Err(NtStatus(rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED))
                            }
                        },
                        || f.current_value(),
                    );
                    let moved = f.current_value();
                    match woken {
                        Err(e)
                            if e.0 == rvgpu_umd::wait::STATUS_TIMEOUT
                                && !step
                                && (moved != seen || clock.now() < end) =>
                        {
                            if moved != seen {
                                (seen, end) = (moved, clock.now().saturating_add(timeout));
                            }
                        }
                        other => break other,
                    }
                };
                return woken.map(|_| ()).map_err(|e| {
                    if e.0 == rvgpu_umd::wait::STATUS_TIMEOUT {
                        NtStatus(STATUS_IO_TIMEOUT)
                    } else {
                        e
                    }
                });
            }
        };
        match outcome.map_err(status)? {
            WaitOutcome::Satisfied => Ok(()),
            WaitOutcome::TimedOut => Err(NtStatus(STATUS_IO_TIMEOUT)),
            WaitOutcome::Abandoned => Err(NtStatus(rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED)),
        }
    }
}
