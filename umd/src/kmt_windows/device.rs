//! [`WinKmt`]: one D3D device on one adapter and the objects it owns (paging queue, fences,
//! the sizes of its allocations).

use core::ptr;
use core::sync::atomic::{AtomicU64, Ordering};

use windows_sys::Wdk::Graphics::Direct3D::{D3DKMTCreateDevice, D3DKMTDestroyDevice};
use windows_sys::Wdk::Graphics::Direct3D::{
    D3DKMTCreatePagingQueue, D3DKMTCreateSynchronizationObject2, D3DKMTDestroyAllocation2,
    D3DKMTDestroyPagingQueue, D3DKMTDestroySynchronizationObject, D3DKMTMakeResident,
    D3DKMTSignalSynchronizationObjectFromCpu, D3DDDI_DESTROYPAGINGQUEUE, D3DDDI_MONITORED_FENCE,
    D3DDDI_PAGINGQUEUE_PRIORITY_NORMAL, D3DKMT_CREATEDEVICE, D3DKMT_DESTROYDEVICE,
    D3DKMT_DESTROYSYNCHRONIZATIONOBJECT,
};
use windows_sys::Win32::Foundation::LUID;
use windows_sys::Win32::System::Threading::{
    AcquireSRWLockExclusive, ReleaseSRWLockExclusive, SRWLOCK,
};

use rvgpu_ddi::d3dkmt::{
    d3dkmt_ptr, D3DDDI_MAKERESIDENT, D3DKMT_CREATENATIVEFENCE, D3DKMT_CREATEPAGINGQUEUE,
    D3DKMT_CREATESYNCHRONIZATIONOBJECT2, D3DKMT_DESTROYALLOCATION2,
    D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU,
};
use rvgpu_ddi::fence::D3DDDI_NATIVE_FENCE_PDD_SIZE;
use rvgpu_ddi::ntstatus::{
    STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER, STATUS_NO_MEMORY, STATUS_PENDING,
};

use super::gdi32::{call_with, close_adapter, open_adapter, Wddm32Thunk};
use super::layout::{DESTROY_ASSUME_NOT_IN_USE, MAKERESIDENT_CANT_TRIM_FURTHER};
use super::status::check;
use super::views::{aligned, user_ptr};
use crate::fence::{FenceMapping, NativeFence};
use crate::kmt::{
    DestroyFlags, Kmt, KmtHandle, MakeResidentError, MakeResidentFlags, NtStatus, PagingFence,
};

/// `D3DKMTMakeResident` of `allocations` on paging queue `queue` whose fence is `fence`.
pub(super) fn make_resident_with(
    queue: KmtHandle,
    fence: KmtHandle,
    allocations: &[KmtHandle],
    flags: MakeResidentFlags,
) -> Result<PagingFence, MakeResidentError> {
    let count = u32::try_from(allocations.len())
        .map_err(|_| MakeResidentError::Status(NtStatus(STATUS_INVALID_PARAMETER)))?;
    let mut args = D3DDDI_MAKERESIDENT {
        hPagingQueue: queue,
        NumAllocations: count,
        AllocationList: d3dkmt_ptr(allocations.as_ptr()),
        ..Default::default()
    };
    if flags.cant_trim_further {
        args.Flags = MAKERESIDENT_CANT_TRIM_FURTHER;
    }
    // SAFETY: the D3DDDI_MAKERESIDENT layout (asserted with its definition); the list points
    // to `count` handles that outlive the call; no priority list.
    let st = unsafe { D3DKMTMakeResident(ptr::from_mut(&mut args).cast()) };
    if st == STATUS_NO_MEMORY {
        return Err(MakeResidentError::OverBudget {
            bytes_to_trim: args.NumBytesToTrim,
        });
    }
    // STATUS_PENDING: accepted, the paging fence value is still ahead (the caller waits).
    if st != STATUS_PENDING {
        check(st).map_err(MakeResidentError::Status)?;
    }
    Ok(PagingFence {
        fence,
        value: args.PagingFenceValue,
    })
}

/// The size of each allocation this device created through
/// [`create_allocation_pdd`](Kmt::create_allocation_pdd), for the bounds of its `Lock2` view:
/// `D3DKMT_LOCK2` returns only an address. Guarded by an SRW lock because a `WinKmt` is shared
/// between threads (the C API's adapters).
pub(super) struct Sizes {
    pub(super) lock: core::cell::UnsafeCell<SRWLOCK>,
    pub(super) map: core::cell::UnsafeCell<alloc::collections::BTreeMap<KmtHandle, u64>>,
}

// SAFETY: `map` is only reached through `with`, which holds the SRW lock exclusively.
unsafe impl Sync for Sizes {}
// SAFETY: the map owns its data; an unlocked SRWLOCK is plain data that may move.
unsafe impl Send for Sizes {}

impl core::fmt::Debug for Sizes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Sizes")
    }
}

impl Sizes {
    pub(super) fn new() -> Self {
        Self {
            // SRWLOCK_INIT is all zeros.
            lock: core::cell::UnsafeCell::new(SRWLOCK {
                Ptr: ptr::null_mut(),
            }),
            map: core::cell::UnsafeCell::new(alloc::collections::BTreeMap::new()),
        }
    }

    pub(super) fn with<R>(
        &self,
        f: impl FnOnce(&mut alloc::collections::BTreeMap<KmtHandle, u64>) -> R,
    ) -> R {
        // SAFETY: `lock` is a valid, initialised SRWLOCK that does not move while `self` is
        // borrowed.
        unsafe { AcquireSRWLockExclusive(self.lock.get()) };
        // SAFETY: the exclusive lock is held, so this is the only reference to the map; `f`
        // cannot reach `self` again (no reentrancy: the closures below only touch the map).
        let r = f(unsafe { &mut *self.map.get() });
        // SAFETY: acquired above by this thread.
        unsafe { ReleaseSRWLockExclusive(self.lock.get()) };
        r
    }
}

// ---------------------------------------------------------------------------------------------
// The thunks
// ---------------------------------------------------------------------------------------------

/// One D3D device on one adapter, with the paging queue used to make allocations resident.
#[derive(Debug)]
pub struct WinKmt {
    pub(super) adapter: u32,
    pub(super) device: u32,
    pub(super) paging_queue: u32,
    pub(super) paging_fence: u32,
    pub(super) sizes: Sizes,
    /// The `CurrentValueCpuVa` of each native fence this device created or opened: a CPU wait
    /// on one re-reads it after every slice ([`crate::wait`]).
    pub(super) native_cpu: Sizes,
    /// This process's pending CPU waits on those fences, re-armed ([`crate::wait::Waits`]).
    pub(super) waits: super::waits::CpuWaits,
    /// Which nodes are hardware-scheduled, learnt once each ([`crate::nodes`]).
    pub(super) nodes: crate::nodes::NodeScheduling,
}

impl WinKmt {
    /// Opens the adapter with `luid`, creates a device and the paging queue on it that
    /// [`make_resident`](Kmt::make_resident) uses (one per device, for its life).
    pub fn open(luid: LUID) -> Result<Self, NtStatus> {
        let adapter = open_adapter(luid).map_err(NtStatus)?;
        let mut dev = D3DKMT_CREATEDEVICE::default();
        dev.Anonymous.hAdapter = adapter;
        // SAFETY: a valid, initialised argument structure on the stack.
        if let Err(e) = check(unsafe { D3DKMTCreateDevice(&mut dev) }) {
            close_adapter(adapter);
            return Err(e);
        }
        let mut pq = D3DKMT_CREATEPAGINGQUEUE {
            hDevice: dev.hDevice,
            Priority: D3DDDI_PAGINGQUEUE_PRIORITY_NORMAL,
            ..Default::default()
        };
        // SAFETY: the D3DKMT_CREATEPAGINGQUEUE layout (asserted with its definition), on the
        // stack.
        if let Err(e) = check(unsafe { D3DKMTCreatePagingQueue(ptr::from_mut(&mut pq).cast()) }) {
            let d = D3DKMT_DESTROYDEVICE {
                hDevice: dev.hDevice,
            };
            // SAFETY: the device just created.
            unsafe { D3DKMTDestroyDevice(&d) };
            close_adapter(adapter);
            return Err(e);
        }
        Ok(Self {
            adapter,
            device: dev.hDevice,
            paging_queue: pq.hPagingQueue,
            paging_fence: pq.hSyncObject,
            sizes: Sizes::new(),
            native_cpu: Sizes::new(),
            waits: super::waits::CpuWaits::new(),
            nodes: crate::nodes::NodeScheduling::new(),
        })
    }

    /// The D3DKMT device handle.
    pub fn device(&self) -> u32 {
        self.device
    }

    /// The D3DKMT adapter handle the device was created on.
    pub fn adapter(&self) -> u32 {
        self.adapter
    }

    /// `D3DKMTQueryAdapterInfo(KMTQAITYPE_WDDM_1_2_CAPS)` on the device's adapter: the three
    /// words of `D3DKMT_WDDM_1_2_CAPS` (graphics and compute preemption granularity, the flags
    /// word, whose bit 2 is `SupportPerEngineTDR`).
    pub fn wddm_1_2_caps(&self) -> Result<[u32; 3], NtStatus> {
        use windows_sys::Wdk::Graphics::Direct3D::{
            D3DKMTQueryAdapterInfo, D3DKMT_QUERYADAPTERINFO,
        };
        /// `KMTQAITYPE_WDDM_1_2_CAPS` (d3dkmthk.h).
        const KMTQAITYPE_WDDM_1_2_CAPS: i32 = 17;
        let mut caps = [0u32; 3];
        let mut args = D3DKMT_QUERYADAPTERINFO {
            hAdapter: self.adapter,
            Type: KMTQAITYPE_WDDM_1_2_CAPS,
            pPrivateDriverData: caps.as_mut_ptr().cast(),
            PrivateDriverDataSize: 12,
        };
        // SAFETY: a valid argument structure; `caps` is live and writable for its 12 bytes
        // during the call.
        check(unsafe { D3DKMTQueryAdapterInfo(&mut args) })?;
        Ok(caps)
    }

    pub(super) fn wait(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        match self.wait_timeout(fence, value, u64::MAX)? {
            WaitOutcome::Reached => Ok(()),
            WaitOutcome::TimedOut => Err(NtStatus(crate::wait::STATUS_TIMEOUT)),
        }
    }

    /// CurrentValue of a native fence of this device, read through its CPU mapping. The read
    /// happens under the map's lock, and a destroy takes the fence out of the map under the
    /// same lock before the OS unmaps the value: no read of an unmapped value.
    pub(super) fn native_value(&self, fence: KmtHandle) -> Option<u64> {
        self.native_cpu.with(|m| {
            let p = *m.get(&fence)? as usize as *const u64;
            if p.is_null() || !p.is_aligned() {
                return None;
            }
            // SAFETY: a `CurrentValueCpuVa` the OS returned for this fence (checked non-null
            // and 8-aligned at create or open), read-only and mapped while it is in the map
            // (see above). Atomic load of a lock-free size.
            Some(unsafe { AtomicU64::from_ptr(p.cast_mut()) }.load(Ordering::Acquire))
        })
    }

    pub(super) fn destroy_alloc(
        &self,
        allocation: KmtHandle,
        flags: DestroyFlags,
    ) -> Result<(), NtStatus> {
        // The UMD keeps its Lock2 view for the allocation's life; end it first. Unlocking an
        // unlocked allocation only fails, so the result does not matter.
        let _ = self.unlock2(allocation);
        let args = D3DKMT_DESTROYALLOCATION2 {
            hDevice: self.device,
            phAllocationList: d3dkmt_ptr(&allocation),
            AllocationCount: 1,
            Flags: if flags.assume_not_in_use {
                DESTROY_ASSUME_NOT_IN_USE
            } else {
                0
            },
            ..Default::default()
        };
        // SAFETY: the D3DKMT_DESTROYALLOCATION2 layout (asserted with its definition); the
        // list points to one handle on this stack frame.
        let r = check(unsafe { D3DKMTDestroyAllocation2(ptr::from_ref(&args).cast()) });
        if r.is_ok() {
            self.sizes.with(|m| m.remove(&allocation));
        }
        r
    }
}

/// How a wait with a timeout ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitOutcome {
    /// The fence reached the value.
    Reached,
    /// The timeout elapsed first.
    TimedOut,
}

/// A native fence created with `D3DKMTCreateNativeFence` (the C API's `RvgpuFence`).
#[derive(Debug)]
pub struct WinNativeFence {
    /// The sync object handle.
    pub handle: KmtHandle,
    /// The CurrentValue CPU mapping (read-only).
    pub(super) current: *const u64,
    /// Where the OS mapped the fence in this process (`D3DDDI_NATIVEFENCEMAPPING`): the GPU
    /// VAs this process's commands use ("in the current process address space").
    pub mapping: FenceMapping,
    /// What the KMD returned in the private data (`rvgpu_hw::pdd::NativeFencePdd`).
    pub private_data: [u8; D3DDDI_NATIVE_FENCE_PDD_SIZE],
}

impl WinNativeFence {
    /// The fence's current value.
    pub fn value(&self) -> u64 {
        // SAFETY: `CurrentValueCpuVa` from D3DKMTCreateNativeFence: a read-only 8-aligned
        // mapping (checked at creation) that lives until the sync object is destroyed, which
        // consumes this object. Atomic load of a lock-free size on read-only memory.
        unsafe { AtomicU64::from_ptr(self.current.cast_mut()) }.load(Ordering::Acquire)
    }
}

/// A legacy monitored fence created with [`WinKmt::create_monitored_fence`].
#[derive(Debug)]
pub struct WinMonitoredFence {
    /// The sync object handle.
    pub handle: KmtHandle,
    /// `FenceValueCPUVirtualAddress` (read-only).
    pub(super) value: *const u64,
    /// `FenceValueGPUVirtualAddress`: what a GPU signal writes.
    pub value_gpu: u64,
}

impl WinMonitoredFence {
    /// The fence's current value.
    pub fn value(&self) -> u64 {
        // SAFETY: `FenceValueCPUVirtualAddress` from D3DKMTCreateSynchronizationObject2: a
        // read-only 8-aligned mapping (checked at creation) that lives until the sync object is
        // destroyed; the owner drops this view before destroying it. Atomic load of a
        // lock-free size on read-only memory.
        unsafe { AtomicU64::from_ptr(self.value.cast_mut()) }.load(Ordering::Acquire)
    }
}

/// Milliseconds for `WaitForSingleObject`: `timeout_ns` rounded up, below `INFINITE`.
pub(super) fn timeout_ms(timeout_ns: u64) -> u32 {
    let ms = timeout_ns.div_ceil(1_000_000);
    u32::try_from(ms).unwrap_or(u32::MAX - 1).min(u32::MAX - 1)
}

impl WinKmt {
    /// Waits until `fence` reaches `value` or `timeout_ns` elapses (`u64::MAX`: no timeout):
    /// `D3DKMTWaitForSynchronizationObjectFromCpu` with an event, then `WaitForSingleObject`.
    pub fn wait_timeout(
        &self,
        fence: KmtHandle,
        value: u64,
        timeout_ns: u64,
    ) -> Result<WaitOutcome, NtStatus> {
        use windows_sys::Win32::Foundation::{CloseHandle, WAIT_OBJECT_0, WAIT_TIMEOUT};
        use windows_sys::Win32::System::Threading::{CreateEventW, WaitForSingleObject};
        if timeout_ns == u64::MAX && self.native_value(fence).is_none() {
            // Null event: the call blocks until the fence reaches the value.
            return self
                .wait_async(fence, value, ptr::null_mut())
                .map(|()| WaitOutcome::Reached);
        }
        // SAFETY: default security, manual reset, initially non-signalled, unnamed.
        let event = unsafe { CreateEventW(ptr::null(), 1, 0, ptr::null()) };
        if event.is_null() {
            return Err(NtStatus(STATUS_INSUFFICIENT_RESOURCES));
        }
        // With an event the call returns at once and the OS signals the event later.
        let outcome = if self.native_value(fence).is_some() {
            self.register_native_wait(fence, value, event)
                .and_then(|id| {
                    let r = self.wait_native_slices(fence, value, timeout_ns, event);
                    self.end_native_wait(fence, id, matches!(r, Ok(WaitOutcome::Reached)));
                    r
                })
        } else {
            self.register(fence, value, event).and_then(|()| {
                // SAFETY: a valid event handle owned by this function.
                match unsafe { WaitForSingleObject(event, timeout_ms(timeout_ns)) } {
                    WAIT_OBJECT_0 => Ok(WaitOutcome::Reached),
                    WAIT_TIMEOUT => Ok(WaitOutcome::TimedOut),
                    _ => Err(NtStatus(STATUS_INVALID_PARAMETER)),
                }
            })
        };
        // SAFETY: the event created above, closed once.
        unsafe { CloseHandle(event) };
        outcome
    }

    /// A registered wait on a native fence, waited for on `event` in bounded slices with
    /// CurrentValue re-read after each ([`crate::wait`]): the defence against MonitoredValue
    /// raised over this wait by another process's wait on a shared fence (the process's own
    /// waits never raise it: [`crate::wait::Waits`]); a late wake is counted and traced.
    fn wait_native_slices(
        &self,
        fence: KmtHandle,
        value: u64,
        timeout_ns: u64,
        event: windows_sys::Win32::Foundation::HANDLE,
    ) -> Result<WaitOutcome, NtStatus> {
        use windows_sys::Win32::Foundation::{WAIT_OBJECT_0, WAIT_TIMEOUT};
        use windows_sys::Win32::System::Threading::WaitForSingleObject;
        let slice_ms = timeout_ms(crate::wait::SLICE_NS);
        let r = crate::wait::bounded(
            value,
            crate::wait::slices_in(timeout_ns),
            || {
                // SAFETY: a valid event handle owned by the caller.
                match unsafe { WaitForSingleObject(event, slice_ms) } {
                    WAIT_OBJECT_0 => Ok(crate::wait::Slice::Released),
                    WAIT_TIMEOUT => Ok(crate::wait::Slice::Pending),
                    _ => Err(NtStatus(STATUS_INVALID_PARAMETER)),
                }
            },
            || self.native_value(fence).unwrap_or(0),
        );
        match r {
            Ok(crate::wait::Woken::Released) => Ok(WaitOutcome::Reached),
            Ok(crate::wait::Woken::Late { current }) => {
                crate::etw_windows::late_wake(fence, value, current);
                Ok(WaitOutcome::Reached)
            }
            Err(NtStatus(crate::wait::STATUS_TIMEOUT)) => Ok(WaitOutcome::TimedOut),
            Err(e) => Err(e),
        }
    }

    /// Registers a CPU wait for `fence` to reach `value` that signals the caller's `event`
    /// (`D3DKMTWaitForSynchronizationObjectFromCpu` with `hAsyncEvent`): returns at once; the
    /// OS signals the event when the wait is released (or the fence is gone). On a native
    /// fence the process's lowest pending wait is re-armed after it ([`crate::wait::Waits`]),
    /// so the OS releases every such wait when the fence reaches its value. A null `event`
    /// blocks instead, until the fence reaches the value.
    pub fn wait_async(
        &self,
        fence: KmtHandle,
        value: u64,
        event: windows_sys::Win32::Foundation::HANDLE,
    ) -> Result<(), NtStatus> {
        if !event.is_null() && self.native_value(fence).is_some() {
            return self.register_native_wait(fence, value, event).map(|_| ());
        }
        self.register(fence, value, event)
    }

    /// `D3DKMTCreateNativeFence` of a default-type native fence (sysmem CurrentValue and
    /// MonitoredValue), with `initial_value`, keeping the CurrentValue CPU mapping (the C API's
    /// fences). [`Kmt::create_native_fence`] is the same call without the mapping.
    pub fn create_native_fence_mapped(
        &self,
        initial_value: u64,
    ) -> Result<WinNativeFence, NtStatus> {
        self.create_native_fence_with(initial_value, 0)
    }

    /// [`create_native_fence_mapped`](Self::create_native_fence_mapped) with
    /// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS` `flags`.
    pub(super) fn create_native_fence_with(
        &self,
        initial_value: u64,
        flags: u32,
    ) -> Result<WinNativeFence, NtStatus> {
        let mut args = D3DKMT_CREATENATIVEFENCE::new(self.device, initial_value, flags);
        // SAFETY: the released D3DKMT_CREATENATIVEFENCE layout (asserted with its definition),
        // on this stack frame.
        check(unsafe { call_with(Wddm32Thunk::CreateNativeFence, &mut args) })?;
        let Some(current) =
            aligned::<u64>(user_ptr(args.Info.NativeFenceMapping.CurrentValueCpuVa))
        else {
            let _ = self.destroy_sync_object(args.hSyncObject);
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        };
        let m = &args.Info.NativeFenceMapping;
        let cpu = current as u64;
        self.native_cpu.with(|t| t.insert(args.hSyncObject, cpu));
        Ok(WinNativeFence {
            handle: args.hSyncObject,
            current: current.cast_const(),
            mapping: FenceMapping {
                current_value_cpu: current as usize,
                current_value_gpu: m.CurrentValueGpuVa,
                monitored_value_gpu: m.MonitoredValueGpuVa,
            },
            private_data: args.PrivateDriverData,
        })
    }

    /// `D3DKMTCreateSynchronizationObject2` of a legacy monitored fence
    /// (`D3DDDI_MONITORED_FENCE`, MF-01) starting at `initial_value`: its handle, the OS's
    /// read-only CPU mapping of the value and the value's GPU address in this process.
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreatesynchronizationobject2>
    pub fn create_monitored_fence(
        &self,
        initial_value: u64,
    ) -> Result<WinMonitoredFence, NtStatus> {
        let mut args = D3DKMT_CREATESYNCHRONIZATIONOBJECT2 {
            hDevice: self.device,
            ..Default::default()
        };
        args.Info.Type = D3DDDI_MONITORED_FENCE as u32;
        args.Info.InitialFenceValue = initial_value;
        // SAFETY: the D3DKMT_CREATESYNCHRONIZATIONOBJECT2 layout (asserted with its
        // definition) on this stack frame.
        check(unsafe { D3DKMTCreateSynchronizationObject2(ptr::from_mut(&mut args).cast()) })?;
        // The call filled the monitored-fence arm of the union (the type asked).
        let mf = args.Info;
        let Some(value) = aligned::<u64>(user_ptr(mf.FenceValueCPUVirtualAddress)) else {
            let _ = self.destroy_sync_object(args.hSyncObject);
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        };
        if mf.FenceValueGPUVirtualAddress == 0 || !mf.FenceValueGPUVirtualAddress.is_multiple_of(8)
        {
            let _ = self.destroy_sync_object(args.hSyncObject);
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        }
        Ok(WinMonitoredFence {
            handle: args.hSyncObject,
            value: value.cast_const(),
            value_gpu: mf.FenceValueGPUVirtualAddress,
        })
    }

    /// The submission core's view of a fence just created (`NativeFence::new`); if the OS's
    /// mapping or the KMD's private data is unusable the fence is destroyed again and
    /// `STATUS_INVALID_PARAMETER` returned.
    pub(super) fn native_fence_of(&self, f: WinNativeFence) -> Result<NativeFence, NtStatus> {
        NativeFence::new(f.handle, &f.mapping, &f.private_data).map_err(|_| {
            let _ = self.destroy_sync_object(f.handle);
            NtStatus(STATUS_INVALID_PARAMETER)
        })
    }

    /// `D3DKMTSignalSynchronizationObjectFromCpu` of one fence to `value`.
    pub fn signal_from_cpu(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        let args = D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU {
            hDevice: self.device,
            ObjectCount: 1,
            ObjectHandleArray: d3dkmt_ptr(&fence),
            FenceValueArray: d3dkmt_ptr(&value),
            ..Default::default()
        };
        // SAFETY: the D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU layout (asserted with its
        // definition); the arrays point to one handle and one value on this stack frame.
        check(unsafe { D3DKMTSignalSynchronizationObjectFromCpu(ptr::from_ref(&args).cast()) })
    }

    /// `D3DKMTDestroySynchronizationObject`.
    pub fn destroy_sync_object(&self, object: KmtHandle) -> Result<(), NtStatus> {
        self.native_cpu.with(|t| t.remove(&object));
        self.forget_native_waits(object);
        let args = D3DKMT_DESTROYSYNCHRONIZATIONOBJECT {
            hSyncObject: object,
        };
        // SAFETY: valid argument structure; D3DKMT validates the handle.
        check(unsafe { D3DKMTDestroySynchronizationObject(&args) })
    }
}

impl Drop for WinKmt {
    fn drop(&mut self) {
        let mut pq = D3DDDI_DESTROYPAGINGQUEUE {
            hPagingQueue: self.paging_queue,
        };
        // SAFETY: handles this object created; each destroyed once, here.
        unsafe { D3DKMTDestroyPagingQueue(&mut pq) };
        let d = D3DKMT_DESTROYDEVICE {
            hDevice: self.device,
        };
        // SAFETY: as above.
        unsafe { D3DKMTDestroyDevice(&d) };
        close_adapter(self.adapter);
    }
}
