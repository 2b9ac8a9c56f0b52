//! [`Kmt`] for [`WinKmt`]: each trait call as its D3DKMT thunk.

use core::ffi::c_void;
use core::ptr;

use windows_sys::Wdk::Graphics::Direct3D::{
    D3DKMTCreateAllocation2, D3DKMTCreateContextVirtual, D3DKMTCreatePagingQueue,
    D3DKMTDestroyContext, D3DKMTDestroyPagingQueue, D3DKMTEvict, D3DKMTFreeGpuVirtualAddress,
    D3DKMTInvalidateCache, D3DKMTLock2, D3DKMTMapGpuVirtualAddress, D3DKMTQueryAdapterInfo,
    D3DKMTReserveGpuVirtualAddress, D3DKMTSubmitCommand, D3DKMTSubmitSignalSyncObjectsToHwQueue,
    D3DKMTSubmitWaitForSyncObjectsToHwQueue, D3DKMTUnlock2, D3DKMTUpdateGpuVirtualAddress,
    D3DDDI_DESTROYPAGINGQUEUE, D3DKMT_CLIENTHINT_UNKNOWN, D3DKMT_CREATECONTEXTVIRTUAL,
    D3DKMT_DESTROYCONTEXT, D3DKMT_DESTROYHWQUEUE, D3DKMT_QUERYADAPTERINFO, D3DKMT_SUBMITCOMMAND,
    KMTQAITYPE_NODEMETADATA,
};
use windows_sys::Wdk::Graphics::Direct3D::{
    D3DKMTCreateHwQueue, D3DKMTDestroyHwQueue, D3DKMTSubmitCommandToHwQueue,
};
use windows_sys::Win32::Foundation::NTSTATUS;

use super::device::{make_resident_with, WinKmt};
use super::gdi32::{call_with, Wddm32Thunk};
use super::layout::{
    update_operation, CREATEHWQUEUE_USER_MODE_SUBMISSION, GENERIC_ALL,
    SYNC_FLAG_NT_SECURITY_SHARING, SYNC_FLAG_SHARED, UPDATE_GPU_VA_DO_NOT_WAIT,
};
use super::status::check;
use super::views::{aligned, performance_query, user_ptr, WinDoorbell, WinFence, WinMem};
use crate::fence::{FenceMapping, NativeFence};
use crate::kmt::{
    checked_progress, map_new_allocation, wait_paging, Allocation, AllocationPdd, DestroyFlags,
    DeviceExecutionState, Doorbell, EvictFlags, HwQueue, Kmt, KmtHandle, MakeResidentError,
    MakeResidentFlags, MapGpuVa, MappedGpu, MappedGpuVa, NtStatus, PagingFence, PagingQueue,
    QueueProgress, ReserveGpuVa, UpdateGpuVa, UpdateGpuVaOp,
};
use rvgpu_ddi::d3dkmt::{
    d3dkmt_ptr, D3DDDI_ALLOCATIONINFO2, D3DDDI_EVICT_FLAGS, D3DDDI_RESERVEGPUVIRTUALADDRESS,
    D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION, D3DKMT_CONNECT_DOORBELL, D3DKMT_CREATEALLOCATION,
    D3DKMT_CREATEHWQUEUE, D3DKMT_CREATEPAGINGQUEUE, D3DKMT_CREATE_DOORBELL,
    D3DKMT_DESTROY_DOORBELL, D3DKMT_EVICT, D3DKMT_FREEGPUVIRTUALADDRESS, D3DKMT_INVALIDATECACHE,
    D3DKMT_LOCK2, D3DKMT_NOTIFY_WORK_SUBMISSION, D3DKMT_OPENNATIVEFENCEFROMNTHANDLE,
    D3DKMT_SUBMITCOMMANDTOHWQUEUE, D3DKMT_SUBMITSIGNALSYNCOBJECTSTOHWQUEUE,
    D3DKMT_SUBMITWAITFORSYNCOBJECTSTOHWQUEUE, D3DKMT_UNLOCK2, D3DKMT_UPDATEGPUVIRTUALADDRESS,
};
use rvgpu_ddi::ntstatus::{
    STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER, STATUS_NO_MEMORY, STATUS_PENDING,
};
use zerocopy::IntoBytes;

/// Objects per `D3DKMTSubmit{Wait,Signal}...ToHwQueue` call (stack arrays; more are split).
pub(super) const SYNC_CHUNK: usize = 16;

/// Calls `submit` with the handle and value arrays of each chunk of at most [`SYNC_CHUNK`]
/// of `fences` and their count, stopping at the first failure; no fences at all is
/// `STATUS_INVALID_PARAMETER`.
pub(super) fn in_sync_chunks(
    fences: &[(KmtHandle, u64)],
    mut submit: impl FnMut(&[u32; SYNC_CHUNK], &[u64; SYNC_CHUNK], u32) -> NTSTATUS,
) -> Result<(), NtStatus> {
    if fences.is_empty() {
        return Err(NtStatus(STATUS_INVALID_PARAMETER));
    }
    for chunk in fences.chunks(SYNC_CHUNK) {
        let mut handles = [0u32; SYNC_CHUNK];
        let mut values = [0u64; SYNC_CHUNK];
        let mut n = 0u32;
        for ((h, v), (dh, dv)) in chunk.iter().zip(handles.iter_mut().zip(values.iter_mut())) {
            *dh = *h;
            *dv = *v;
            n += 1;
        }
        check(submit(&handles, &values, n))?;
    }
    Ok(())
}

impl Kmt for WinKmt {
    type Mem = WinMem;
    type Doorbell = WinDoorbell;
    type Fence = WinFence;

    /// `HwQueueSupported` on a hardware-scheduled node, nothing else ([`crate::nodes`]).
    fn create_context(&self, node: u32) -> Result<KmtHandle, NtStatus> {
        let hw = self.node_hw_scheduled(node)?;
        let mut args = D3DKMT_CREATECONTEXTVIRTUAL {
            hDevice: self.device,
            NodeOrdinal: node,
            // 0: the node's default engine.
            EngineAffinity: 0,
            ClientHint: D3DKMT_CLIENTHINT_UNKNOWN,
            ..Default::default()
        };
        args.Flags.Anonymous.Value = crate::nodes::context_flags(hw);
        // SAFETY: a valid argument structure; the thunk writes `hContext` back (the header
        // declares the parameter const, so the pointer is derived from a mutable borrow).
        check(unsafe { D3DKMTCreateContextVirtual(ptr::addr_of_mut!(args).cast_const()) })?;
        Ok(args.hContext)
    }

    /// `D3DKMTQueryAdapterInfo(KMTQAITYPE_NODEMETADATA)` on the device's adapter, once per node.
    fn node_hw_scheduled(&self, node: u32) -> Result<bool, NtStatus> {
        self.nodes.get(node, || {
            let mut md = crate::nodes::node_metadata_request(node)?;
            let mut args = D3DKMT_QUERYADAPTERINFO {
                hAdapter: self.adapter,
                Type: KMTQAITYPE_NODEMETADATA,
                pPrivateDriverData: md.as_mut_ptr().cast(),
                PrivateDriverDataSize: crate::nodes::NODEMETADATA_SIZE as u32,
            };
            // SAFETY: a valid argument structure; `md` is live and writable for its 78 bytes
            // (the node in, the metadata out) during the call.
            check(unsafe { D3DKMTQueryAdapterInfo(&mut args) })?;
            Ok(crate::nodes::context_scheduling(&md))
        })
    }

    fn destroy_context(&self, context: KmtHandle) -> Result<(), NtStatus> {
        let args = D3DKMT_DESTROYCONTEXT { hContext: context };
        // SAFETY: valid argument structure; D3DKMT validates the handle.
        check(unsafe { D3DKMTDestroyContext(&args) })
    }

    fn create_hw_queue(
        &self,
        context: KmtHandle,
        user_mode_submission: bool,
        private_data: &mut [u8],
    ) -> Result<HwQueue<WinFence>, NtStatus> {
        let mut args = D3DKMT_CREATEHWQUEUE {
            hHwContext: context,
            Flags: if user_mode_submission {
                CREATEHWQUEUE_USER_MODE_SUBMISSION
            } else {
                0
            },
            PrivateDriverDataSize: u32::try_from(private_data.len())
                .map_err(|_| NtStatus(STATUS_INVALID_PARAMETER))?,
            pPrivateDriverData: d3dkmt_ptr(private_data.as_mut_ptr()),
            ..Default::default()
        };
        // SAFETY: the D3DKMT_CREATEHWQUEUE layout (asserted with its definition); the private
        // data buffer is live and writable for its length during the call (in/out).
        check(unsafe { D3DKMTCreateHwQueue(ptr::from_mut(&mut args).cast()) })?;
        let progress = match checked_progress(
            user_mode_submission,
            args.hHwQueueProgressFence,
            user_ptr(args.HwQueueProgressFenceCPUVirtualAddress) as usize,
            rvgpu_hw::addr::GpuVa::new(args.HwQueueProgressFenceGPUVirtualAddress),
        ) {
            Ok(p) => p,
            Err(e) => {
                let d = D3DKMT_DESTROYHWQUEUE {
                    hHwQueue: args.hHwQueue,
                };
                // SAFETY: the queue just created.
                unsafe { D3DKMTDestroyHwQueue(&d) };
                return Err(e);
            }
        };
        Ok(HwQueue {
            handle: args.hHwQueue,
            progress: progress.map(|p| QueueProgress {
                fence: p.fence,
                // Checked non-null and 8-aligned: the OS's read-only mapping of the value.
                cpu: WinFence {
                    value: p.cpu as *const u64,
                },
                gpu: p.gpu,
            }),
        })
    }

    fn destroy_hw_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
        let args = D3DKMT_DESTROYHWQUEUE { hHwQueue: queue };
        // SAFETY: valid argument structure; D3DKMT validates the handle.
        check(unsafe { D3DKMTDestroyHwQueue(&args) })
    }

    /// [`create_allocation_pdd`](Kmt::create_allocation_pdd), its GPU VA
    /// ([`map_new_allocation`]: `D3DKMTMapGpuVirtualAddress` on the device's paging queue, as
    /// 24H2 gives none at create), [`make_resident`](Kmt::make_resident), a wait for the
    /// paging fence (the ring and the command buffers are used by the GPU, and named to the
    /// KMD, at once), then [`lock2`](Kmt::lock2) for the CPU mapping. The allocation is
    /// destroyed again if a step fails; the VA Map made goes with it.
    fn create_allocation_as(
        &self,
        size: u64,
        kind: crate::kmt::AllocationKind,
    ) -> Result<Allocation<WinMem>, NtStatus> {
        let pdd = crate::kmt::allocation_private_data(size, kind);
        let m = self.create_allocation_pdd(&pdd)?;
        let handle = m.handle;
        // Until it is mapped or made resident nothing has touched it, so VidMm may free it
        // at once; after that, paging work may be queued on it: let VidMm wait.
        let fail = |e: NtStatus, untouched: bool| {
            let _ = self.destroy_alloc(
                handle,
                DestroyFlags {
                    assume_not_in_use: untouched,
                },
            );
            Err(e)
        };
        let (gpu_va, mapped) = match map_new_allocation(self, &m, &pdd) {
            Ok(v) => v,
            Err(e) => return fail(e, true),
        };
        let paging = match self.make_resident(&[handle], MakeResidentFlags::default()) {
            Ok(p) => p,
            Err(MakeResidentError::OverBudget { .. }) => {
                return fail(NtStatus(STATUS_NO_MEMORY), mapped.is_none());
            }
            Err(MakeResidentError::Status(e)) => return fail(e, mapped.is_none()),
        };
        // One paging queue: its fence reaching the later value covers the Map too.
        if let Err(e) =
            wait_paging(self, mapped).and_then(|()| self.wait(paging.fence, paging.value))
        {
            return fail(e, false);
        }
        match self.lock2(handle) {
            Ok(mem) => Ok(Allocation {
                handle,
                gpu_va,
                size,
                mem,
            }),
            Err(e) => fail(e, false),
        }
    }

    fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
        self.destroy_alloc(allocation, DestroyFlags::default())
    }

    /// `D3DKMTCreateAllocation2` with the UMD's private data: handle, GPU VA and the size the
    /// KMD gives it (`DxgkDdiCreateAllocation` rounds to whole pages). The GPU VA is
    /// `D3DDDI_ALLOCATIONINFO2::GpuVirtualAddress` as the create left it: 0 on 24H2, which
    /// writes none back (see the module documentation); the caller maps the allocation then
    /// ([`map_new_allocation`]). One the OS did write must be 64-byte aligned.
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreateallocation2>
    fn create_allocation_pdd(&self, pdd: &AllocationPdd) -> Result<MappedGpu, NtStatus> {
        let size = pdd
            .size
            .checked_next_multiple_of(rvgpu_hw::PAGE_SIZE)
            .filter(|s| *s != 0)
            .ok_or(NtStatus(STATUS_INVALID_PARAMETER))?;
        // The thunk takes a mutable pointer to the private data (in/out in the DDI).
        let mut pdd = *pdd;
        let mut info = D3DDDI_ALLOCATIONINFO2 {
            pPrivateDriverData: d3dkmt_ptr(&raw mut pdd),
            PrivateDriverDataSize: core::mem::size_of_val(&pdd) as u32,
            ..Default::default()
        };
        let mut args = D3DKMT_CREATEALLOCATION {
            hDevice: self.device,
            NumAllocations: 1,
            pAllocationInfo2: d3dkmt_ptr(&raw mut info),
            ..Default::default()
        };
        // SAFETY: the D3DKMT_CREATEALLOCATION and D3DDDI_ALLOCATIONINFO2 layouts (asserted
        // with their definitions); `info` and `pdd` outlive the call and `info` receives the
        // handle (and, where the OS gives one, the GPU VA).
        check(unsafe { D3DKMTCreateAllocation2(ptr::from_mut(&mut args).cast()) })?;
        let handle = info.hAllocation;
        let gpu_va = info.GpuVirtualAddress;
        if !gpu_va.is_multiple_of(64) {
            let _ = self.destroy_alloc(
                handle,
                DestroyFlags {
                    assume_not_in_use: true,
                },
            );
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        }
        self.sizes.with(|m| m.insert(handle, size));
        Ok(MappedGpu {
            handle,
            gpu_va,
            size,
        })
    }

    /// `D3DKMTLock2` of an allocation from [`create_allocation_pdd`](Kmt::create_allocation_pdd)
    /// (its size bounds the view; another handle is `STATUS_INVALID_PARAMETER`).
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtlock2>
    fn lock2(&self, allocation: KmtHandle) -> Result<WinMem, NtStatus> {
        let size = self
            .sizes
            .with(|m| m.get(&allocation).copied())
            .ok_or(NtStatus(STATUS_INVALID_PARAMETER))?;
        let mut lock = D3DKMT_LOCK2 {
            hDevice: self.device,
            hAllocation: allocation,
            ..Default::default()
        };
        // SAFETY: the released D3DKMT_LOCK2 layout (asserted with its definition); the OS
        // writes `pData`.
        check(unsafe { D3DKMTLock2(ptr::from_mut(&mut lock).cast()) })?;
        let Some(base) = aligned::<u64>(user_ptr(lock.pData)) else {
            let _ = self.unlock2(allocation);
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        };
        Ok(WinMem { base, size })
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtunlock2>
    fn unlock2(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
        let args = D3DKMT_UNLOCK2 {
            hDevice: self.device,
            hAllocation: allocation,
        };
        // SAFETY: the D3DKMT_UNLOCK2 layout (asserted with its definition); D3DKMT validates
        // the handle.
        check(unsafe { D3DKMTUnlock2(ptr::from_ref(&args).cast()) })
    }

    /// `D3DKMTDestroyAllocation2`, with `AssumeNotInUse` when the flags say so (after ending
    /// the UMD's `Lock2` view).
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroyallocation2>
    fn destroy_allocation2(
        &self,
        allocation: KmtHandle,
        flags: DestroyFlags,
    ) -> Result<(), NtStatus> {
        self.destroy_alloc(allocation, flags)
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtinvalidatecache>
    fn invalidate_cache(
        &self,
        allocation: KmtHandle,
        offset: u64,
        length: u64,
    ) -> Result<(), NtStatus> {
        let args = D3DKMT_INVALIDATECACHE {
            hDevice: self.device,
            hAllocation: allocation,
            Offset: offset,
            Length: length,
        };
        // SAFETY: the D3DKMT_INVALIDATECACHE layout (asserted with its definition); D3DKMT
        // validates the handle and the range.
        check(unsafe { D3DKMTInvalidateCache(ptr::from_ref(&args).cast()) })
    }

    /// No thunk tells a UMD whether the GPU snoops the CPU's caches (the KMD reports it to the
    /// OS only: `NoCacheCoherentApertureMemory`, segment `CacheCoherent`). x86 and x64 systems
    /// must be I/O coherent (Dxgkrnl refuses a non-coherent aperture there), so they are
    /// coherent here; anywhere else the UMD assumes not, which costs cache maintenance but is
    /// correct either way.
    fn io_coherent(&self) -> bool {
        cfg!(any(target_arch = "x86_64", target_arch = "x86"))
    }

    /// The paging queue [`WinKmt::open`] created, and its fence.
    fn device_paging_queue(&self) -> Result<(KmtHandle, KmtHandle), NtStatus> {
        Ok((self.paging_queue, self.paging_fence))
    }

    /// `D3DKMTMakeResident` on the device's paging queue (see
    /// [`make_resident_on`](Kmt::make_resident_on)).
    fn make_resident(
        &self,
        allocations: &[KmtHandle],
        flags: MakeResidentFlags,
    ) -> Result<PagingFence, MakeResidentError> {
        make_resident_with(self.paging_queue, self.paging_fence, allocations, flags)
    }

    /// `D3DKMTMakeResident` on `queue`. `STATUS_PENDING` is success: the paging fence
    /// reaches `PagingFenceValue` once the allocations are in place (the caller waits).
    /// `STATUS_NO_MEMORY` is the over-budget answer, with `NumBytesToTrim`.
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtmakeresident>
    fn make_resident_on(
        &self,
        queue: &PagingQueue<WinFence>,
        allocations: &[KmtHandle],
        flags: MakeResidentFlags,
    ) -> Result<PagingFence, MakeResidentError> {
        make_resident_with(queue.handle, queue.fence, allocations, flags)
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtevict>
    fn evict(&self, allocations: &[KmtHandle], flags: EvictFlags) -> Result<u64, NtStatus> {
        let mut args = D3DKMT_EVICT {
            hDevice: self.device,
            NumAllocations: u32::try_from(allocations.len())
                .map_err(|_| NtStatus(STATUS_INVALID_PARAMETER))?,
            AllocationList: d3dkmt_ptr(allocations.as_ptr()),
            ..Default::default()
        };
        let mut bits = 0;
        if flags.evict_only_if_necessary {
            bits |= D3DDDI_EVICT_FLAGS::mask(D3DDDI_EVICT_FLAGS::EvictOnlyIfNecessary);
        }
        if flags.not_written_to {
            bits |= D3DDDI_EVICT_FLAGS::mask(D3DDDI_EVICT_FLAGS::NotWrittenTo);
        }
        args.Flags = bits;
        // SAFETY: the D3DKMT_EVICT layout (asserted with its definition); the list points to
        // the caller's handles, which outlive the call.
        check(unsafe { D3DKMTEvict(ptr::from_mut(&mut args).cast()) })?;
        Ok(args.NumBytesToTrim)
    }

    fn create_doorbell(
        &self,
        queue: KmtHandle,
        ring: KmtHandle,
        ring_control: KmtHandle,
        private_data: &mut [u8],
    ) -> Result<Doorbell<WinDoorbell>, NtStatus> {
        let mut args = D3DKMT_CREATE_DOORBELL {
            hHwQueue: queue,
            hRingBuffer: ring,
            hRingBufferControl: ring_control,
            PrivateDriverDataSize: u32::try_from(private_data.len())
                .map_err(|_| NtStatus(STATUS_INVALID_PARAMETER))?,
            PrivateDriverData: d3dkmt_ptr(private_data.as_mut_ptr()),
            ..Default::default()
        };
        // SAFETY: the released D3DKMT_CREATE_DOORBELL layout (asserted with its definition);
        // the private data buffer is live and writable for its length during the call.
        check(unsafe { call_with(Wddm32Thunk::CreateDoorbell, &mut args) })?;
        // 24H2 never writes the last-queued address (`DxgkCreateDoorbellInternal`
        // @0x1401D8A50): we read back the null we passed, and the queue has no such cell.
        let last = args.HwQueueProgressFenceLastQueuedValueCPUVirtualAddress;
        let views = (
            aligned::<u64>(user_ptr(args.DoorbellCPUVirtualAddress)),
            aligned::<i32>(user_ptr(args.DoorbellStatusCPUVirtualAddress)),
            if last == 0 {
                Some(None)
            } else {
                aligned::<u64>(user_ptr(last)).map(Some)
            },
        );
        let (Some(doorbell), Some(status), Some(last_queued)) = views else {
            let _ = self.destroy_doorbell(args.hDoorbell);
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        };
        Ok(Doorbell {
            handle: args.hDoorbell,
            cpu: WinDoorbell {
                doorbell,
                status: status.cast_const(),
                last_queued,
            },
        })
    }

    fn connect_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
        let mut args = D3DKMT_CONNECT_DOORBELL {
            hDoorbell: doorbell,
            Flags: 0,
        };
        // SAFETY: the D3DKMT_CONNECT_DOORBELL layout (asserted with its definition).
        check(unsafe { call_with(Wddm32Thunk::ConnectDoorbell, &mut args) })
    }

    fn destroy_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
        let mut args = D3DKMT_DESTROY_DOORBELL {
            hDoorbell: doorbell,
        };
        // SAFETY: the D3DKMT_DESTROY_DOORBELL layout (asserted with its definition).
        check(unsafe { call_with(Wddm32Thunk::DestroyDoorbell, &mut args) })
    }

    fn notify_work_submission(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
        let mut args = D3DKMT_NOTIFY_WORK_SUBMISSION {
            hDoorbell: doorbell,
            Flags: 0,
        };
        // SAFETY: the D3DKMT_NOTIFY_WORK_SUBMISSION layout (asserted with its definition).
        check(unsafe { call_with(Wddm32Thunk::NotifyWorkSubmission, &mut args) })
    }

    fn submit_command_to_hw_queue(
        &self,
        queue: KmtHandle,
        progress_fence_value: u64,
        command_buffer_gpu: u64,
        command_bytes: u32,
    ) -> Result<(), NtStatus> {
        let args = D3DKMT_SUBMITCOMMANDTOHWQUEUE {
            hHwQueue: queue,
            HwQueueProgressFenceId: progress_fence_value,
            CommandBuffer: command_buffer_gpu,
            CommandLength: command_bytes,
            ..Default::default()
        };
        // SAFETY: the D3DKMT_SUBMITCOMMANDTOHWQUEUE layout (asserted with its definition),
        // without private data or primaries.
        check(unsafe { D3DKMTSubmitCommandToHwQueue(ptr::from_ref(&args).cast()) })
    }

    fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        self.wait(fence, value)
    }

    fn submit_command(
        &self,
        context: KmtHandle,
        command_buffer_gpu: u64,
        command_bytes: u32,
    ) -> Result<(), NtStatus> {
        let mut args = D3DKMT_SUBMITCOMMAND {
            Commands: command_buffer_gpu,
            CommandLength: command_bytes,
            BroadcastContextCount: 1,
            ..Default::default()
        };
        args.BroadcastContext[0] = context;
        // SAFETY: a valid argument structure naming one context, without private data,
        // primaries or history buffers.
        check(unsafe { D3DKMTSubmitCommand(&args) })
    }

    /// `D3DKMTSubmitWaitForSyncObjectsToHwQueue` (windows-sys; MF-03): the objects go in
    /// chunks of `SYNC_CHUNK` (waiting on each chunk in turn is waiting on all).
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtsubmitwaitforsyncobjectstohwqueue>
    fn submit_wait_to_hw_queue(
        &self,
        queue: KmtHandle,
        fences: &[(KmtHandle, u64)],
    ) -> Result<(), NtStatus> {
        in_sync_chunks(fences, |handles, values, n| {
            let args = D3DKMT_SUBMITWAITFORSYNCOBJECTSTOHWQUEUE {
                hHwQueue: queue,
                ObjectCount: n,
                ObjectHandleArray: d3dkmt_ptr(handles.as_ptr()),
                FenceValueArray: d3dkmt_ptr(values.as_ptr()),
            };
            // SAFETY: the D3DKMT_SUBMITWAITFORSYNCOBJECTSTOHWQUEUE layout (asserted with its
            // definition); both arrays hold `n` entries and live across the call.
            unsafe { D3DKMTSubmitWaitForSyncObjectsToHwQueue(ptr::from_ref(&args).cast()) }
        })?;
        // The OS moved each native fence's MonitoredValue for the GPU wait as for a CPU one.
        for &(f, _) in fences {
            self.rearm_after_gpu_wait(f);
        }
        Ok(())
    }

    /// `D3DKMTSubmitSignalSyncObjectsToHwQueue` (windows-sys; MF-03). The structure has no
    /// `hHwQueue`: the queue is the one entry of `BroadcastHwQueueArray`; `Flags` zero.
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtsubmitsignalsyncobjectstohwqueue>
    fn submit_signal_to_hw_queue(
        &self,
        queue: KmtHandle,
        fences: &[(KmtHandle, u64)],
    ) -> Result<(), NtStatus> {
        let queues = [queue];
        in_sync_chunks(fences, |handles, values, n| {
            let args = D3DKMT_SUBMITSIGNALSYNCOBJECTSTOHWQUEUE {
                BroadcastHwQueueCount: 1,
                BroadcastHwQueueArray: d3dkmt_ptr(queues.as_ptr()),
                ObjectCount: n,
                ObjectHandleArray: d3dkmt_ptr(handles.as_ptr()),
                FenceValueArray: d3dkmt_ptr(values.as_ptr()),
                ..Default::default()
            };
            // SAFETY: the D3DKMT_SUBMITSIGNALSYNCOBJECTSTOHWQUEUE layout (asserted with its
            // definition); the arrays hold 1 and `n` entries and live across the call.
            unsafe { D3DKMTSubmitSignalSyncObjectsToHwQueue(ptr::from_ref(&args).cast()) }
        })
    }

    /// `D3DKMTCreateNativeFence` ([`WinKmt::create_native_fence_mapped`]): the GPU VAs from
    /// the OS's mapping, the tag from the KMD's private data (`GpuFence::new`); if either is
    /// unusable the fence is destroyed again and `STATUS_INVALID_PARAMETER` returned.
    fn create_native_fence(&self, initial_value: u64) -> Result<NativeFence, NtStatus> {
        self.native_fence_of(self.create_native_fence_mapped(initial_value)?)
    }

    /// The fence's `CurrentValueCpuVa` from its `D3DDDI_NATIVEFENCEMAPPING`, checked non-null
    /// and 8-aligned.
    fn native_fence_cpu(&self, fence: &NativeFence) -> Result<WinFence, NtStatus> {
        let current = fence.current_value_cpu;
        if current == 0 || !current.is_multiple_of(8) {
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        }
        Ok(WinFence {
            value: current as *const u64,
        })
    }

    fn create_shareable_native_fence(&self, initial_value: u64) -> Result<NativeFence, NtStatus> {
        self.native_fence_of(self.create_native_fence_with(
            initial_value,
            SYNC_FLAG_SHARED | SYNC_FLAG_NT_SECURITY_SHARING,
        )?)
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtshareobjects>
    /// of one native fence, as an unnamed handle: object attributes that name nothing (24H2's
    /// `K:DxgkShareObjectsInternal` @0x14032A300 refuses NULL ones with
    /// STATUS_INVALID_PARAMETER).
    fn share_native_fence(&self, fence: KmtHandle) -> Result<u64, NtStatus> {
        use windows_sys::Wdk::Foundation::OBJECT_ATTRIBUTES;
        use windows_sys::Wdk::Graphics::Direct3D::D3DKMTShareObjects;
        let objects = [fence];
        let attributes = OBJECT_ATTRIBUTES {
            Length: core::mem::size_of::<OBJECT_ATTRIBUTES>() as u32,
            RootDirectory: ptr::null_mut(),
            ObjectName: ptr::null(),
            Attributes: 0,
            SecurityDescriptor: ptr::null(),
            SecurityQualityOfService: ptr::null(),
        };
        let mut nt: windows_sys::Win32::Foundation::HANDLE = ptr::null_mut();
        // SAFETY: one handle in `objects`, `attributes` and `nt` (a writable HANDLE) on this
        // frame.
        check(unsafe {
            D3DKMTShareObjects(1, objects.as_ptr(), &attributes, GENERIC_ALL, &mut nt)
        })?;
        if nt.is_null() {
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        }
        Ok(nt as u64)
    }

    fn close_nt_handle(&self, handle: u64) -> Result<(), NtStatus> {
        use windows_sys::Win32::Foundation::CloseHandle;
        // SAFETY: CloseHandle takes any value; one this process does not hold fails.
        if unsafe { CloseHandle(handle as usize as *mut c_void) } == 0 {
            return Err(NtStatus(STATUS_INVALID_HANDLE));
        }
        Ok(())
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtopennativefencefromnthandle>
    /// on this device: this process's handle and its own mapping of the fence.
    fn open_native_fence(&self, shared: u64) -> Result<NativeFence, NtStatus> {
        let mut args = D3DKMT_OPENNATIVEFENCEFROMNTHANDLE::new(shared, self.device);
        // SAFETY: the documented D3DKMT_OPENNATIVEFENCEFROMNTHANDLE layout (asserted with its
        // definition), on this stack frame.
        check(unsafe { call_with(Wddm32Thunk::OpenNativeFenceFromNtHandle, &mut args) })?;
        let m = &args.NativeFenceMapping;
        let cpu = aligned::<u64>(user_ptr(m.CurrentValueCpuVa));
        let mapping = FenceMapping {
            current_value_cpu: cpu.map_or(0, |p| p as usize),
            current_value_gpu: m.CurrentValueGpuVa,
            monitored_value_gpu: m.MonitoredValueGpuVa,
        };
        // The report tag from the KMD: 24H2 copies the caller's own `PrivateDriverData` back
        // from this open ([`NativeFence::opened`]).
        let mut q = crate::fence::tag_request(&mapping);
        let answer = self
            .escape_driver_private(q.as_mut_bytes())
            .ok()
            .map(|()| NativeFence::opened(args.hSyncObject, &mapping, q.as_bytes()));
        match (cpu, answer) {
            (Some(p), Some(Ok(n))) => {
                let cpu = p as u64;
                self.native_cpu.with(|t| t.insert(args.hSyncObject, cpu));
                Ok(n)
            }
            _ => {
                let _ = self.destroy_sync_object(args.hSyncObject);
                Err(NtStatus(STATUS_INVALID_PARAMETER))
            }
        }
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreatepagingqueue>
    /// (`PhysicalAdapterIndex` 0; the fence's CPU view is `FenceValueCPUVirtualAddress`).
    fn create_paging_queue(&self, priority: i32) -> Result<PagingQueue<WinFence>, NtStatus> {
        let mut pq = D3DKMT_CREATEPAGINGQUEUE {
            hDevice: self.device,
            Priority: priority,
            ..Default::default()
        };
        // SAFETY: the D3DKMT_CREATEPAGINGQUEUE layout (asserted with its definition), on the
        // stack.
        check(unsafe { D3DKMTCreatePagingQueue(ptr::from_mut(&mut pq).cast()) })?;
        let Some(value) = aligned::<u64>(user_ptr(pq.FenceValueCPUVirtualAddress)) else {
            let mut d = D3DDDI_DESTROYPAGINGQUEUE {
                hPagingQueue: pq.hPagingQueue,
            };
            // SAFETY: the queue just created.
            unsafe { D3DKMTDestroyPagingQueue(&mut d) };
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        };
        Ok(PagingQueue {
            handle: pq.hPagingQueue,
            fence: pq.hSyncObject,
            fence_cpu: WinFence {
                value: value.cast_const(),
            },
        })
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroypagingqueue>
    fn destroy_paging_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
        let mut d = D3DDDI_DESTROYPAGINGQUEUE {
            hPagingQueue: queue,
        };
        // SAFETY: a valid argument structure; D3DKMT validates the handle.
        check(unsafe { D3DKMTDestroyPagingQueue(&mut d) })
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtreservegpuvirtualaddress>
    /// From user mode the first member is the adapter (`hAdapter`), not a paging queue.
    fn reserve_gpu_va(&self, r: &ReserveGpuVa) -> Result<u64, NtStatus> {
        let mut args = D3DDDI_RESERVEGPUVIRTUALADDRESS {
            // The `hAdapter` arm of the union.
            hPagingQueue: self.adapter,
            BaseAddress: r.base,
            MinimumAddress: r.minimum,
            MaximumAddress: r.maximum,
            Size: r.size,
            ReservationType: r.reservation_type,
            ..Default::default()
        };
        // SAFETY: the D3DDDI_RESERVEGPUVIRTUALADDRESS layout (asserted with its definition),
        // initialised; the thunk writes VirtualAddress.
        check(unsafe { D3DKMTReserveGpuVirtualAddress(ptr::from_mut(&mut args).cast()) })?;
        Ok(args.VirtualAddress)
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtmapgpuvirtualaddress>
    /// `STATUS_PENDING` is success: the mapping is usable once the paging fence reaches
    /// `PagingFenceValue`.
    fn map_gpu_va(&self, r: &MapGpuVa) -> Result<MappedGpuVa, NtStatus> {
        let mut args = r.block();
        // SAFETY: the D3DDDI_MAPGPUVIRTUALADDRESS layout (asserted with its definition),
        // initialised; the thunk writes the outputs.
        let st = unsafe { D3DKMTMapGpuVirtualAddress(ptr::from_mut(&mut args).cast()) };
        if st != STATUS_PENDING {
            check(st)?;
        }
        Ok(MappedGpuVa {
            va: args.VirtualAddress,
            paging_fence_value: args.PagingFenceValue,
        })
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtupdategpuvirtualaddress>
    /// Returns once the update is queued; the fence reaches `FenceValue + 1` when it is done.
    /// At most 64 operations per call here (a stack array; more is `STATUS_INVALID_PARAMETER`).
    fn update_gpu_va(&self, u: &UpdateGpuVa, ops: &[UpdateGpuVaOp]) -> Result<(), NtStatus> {
        const MAX_OPS: usize = 64;
        if ops.len() > MAX_OPS {
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        }
        let mut list = [D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION::default(); MAX_OPS];
        for (slot, op) in list.iter_mut().zip(ops) {
            *slot = update_operation(op);
        }
        let args = D3DKMT_UPDATEGPUVIRTUALADDRESS {
            hDevice: self.device,
            hContext: u.context,
            hFenceObject: u.fence,
            // Bounded by MAX_OPS above.
            NumOperations: ops.len() as u32,
            Operations: d3dkmt_ptr(list.as_ptr()),
            FenceValue: u.fence_value,
            Flags: if u.do_not_wait {
                UPDATE_GPU_VA_DO_NOT_WAIT
            } else {
                0
            },
            ..Default::default()
        };
        // SAFETY: the D3DKMT_UPDATEGPUVIRTUALADDRESS layout (asserted with its definition);
        // `Operations` points to `NumOperations` initialised entries on this stack frame,
        // which outlives the call; the thunk copies them before it returns.
        check(unsafe { D3DKMTUpdateGpuVirtualAddress(ptr::from_ref(&args).cast()) })
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtfreegpuvirtualaddress>
    fn free_gpu_va(&self, base: u64, size: u64) -> Result<(), NtStatus> {
        let args = D3DKMT_FREEGPUVIRTUALADDRESS {
            hAdapter: self.adapter,
            BaseAddress: base,
            Size: size,
            ..Default::default()
        };
        // SAFETY: the D3DKMT_FREEGPUVIRTUALADDRESS layout (asserted with its definition), on
        // the stack.
        check(unsafe { D3DKMTFreeGpuVirtualAddress(ptr::from_ref(&args).cast()) })
    }

    /// `D3DKMTDestroySynchronizationObject`.
    fn signal_native_from_cpu(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        WinKmt::signal_from_cpu(self, fence, value)
    }

    fn destroy_native_fence(&self, fence: KmtHandle) -> Result<(), NtStatus> {
        self.destroy_sync_object(fence)
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtgetdevicestate>
    /// with `D3DKMT_DEVICESTATE_EXECUTION` on this device.
    fn device_execution_state(&self) -> Result<DeviceExecutionState, NtStatus> {
        use windows_sys::Wdk::Graphics::Direct3D::{
            D3DKMTGetDeviceState, D3DKMT_DEVICESTATE_EXECUTION, D3DKMT_GETDEVICESTATE,
        };
        let mut args = D3DKMT_GETDEVICESTATE {
            hDevice: self.device,
            StateType: D3DKMT_DEVICESTATE_EXECUTION,
            ..Default::default()
        };
        // SAFETY: a D3DKMT_GETDEVICESTATE (windows-sys's layout) on this stack frame.
        check(unsafe { D3DKMTGetDeviceState(&mut args) })?;
        // SAFETY: the union's ExecutionState is what an EXECUTION query writes; every bit
        // pattern is a valid i32.
        let state = unsafe { args.Anonymous.ExecutionState };
        Ok(DeviceExecutionState(state as u32))
    }

    /// `QueryPerformanceCounter` (the clock `DxgkDdiCalibrateGpuClock` reports the CPU side
    /// in); 0 if it fails (it does not on Windows XP and later).
    fn cpu_timestamp(&self) -> u64 {
        performance_query(windows_sys::Win32::System::Performance::QueryPerformanceCounter)
    }

    /// `QueryPerformanceFrequency`.
    fn cpu_timestamp_frequency(&self) -> u64 {
        performance_query(windows_sys::Win32::System::Performance::QueryPerformanceFrequency)
    }
}

impl WinKmt {
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtescape>
    /// of type `D3DKMT_ESCAPE_DRIVERPRIVATE` on this device with `data` (in/out).
    pub fn escape_driver_private(&self, data: &mut [u8]) -> Result<(), NtStatus> {
        use windows_sys::Wdk::Graphics::Direct3D::{
            D3DKMTEscape, D3DKMT_ESCAPE, D3DKMT_ESCAPE_DRIVERPRIVATE,
        };
        let e = D3DKMT_ESCAPE {
            hAdapter: self.adapter,
            hDevice: self.device,
            Type: D3DKMT_ESCAPE_DRIVERPRIVATE,
            pPrivateDriverData: data.as_mut_ptr().cast(),
            PrivateDriverDataSize: u32::try_from(data.len())
                .map_err(|_| NtStatus(STATUS_INVALID_PARAMETER))?,
            ..Default::default()
        };
        // SAFETY: `e` names `data` (its length) on this frame.
        check(unsafe { D3DKMTEscape(&e) })
    }
}
