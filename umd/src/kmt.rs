//! The kernel thunks the UMD calls, as one trait.
//!
//! On Windows these are the D3DKMT functions of gdi32.dll (`kmt_windows`); in the simulation
//! the simulated OS implements the trait over its Dxgkrnl model (`rvgpu_simos::kmt`). The UMD's
//! submission logic (`submit`) is generic over it, so the same code runs against both.
//!
//! The trait mirrors the D3DKMT calls one to one and keeps their names; arguments are reduced
//! to what this UMD passes. CPU mappings the OS hands out (ring, doorbell page, doorbell status,
//! last-queued progress value, progress fence) are reached through the associated types, because
//! on Windows they are raw pointers and in the simulation they are objects of the simulated
//! machine.

use crate::fence::NativeFence;
use crate::ring::RingMemory;
use rvgpu_hw::addr::GpuVa;
pub use rvgpu_hw::pdd::{AllocationKind, AllocationPdd};

pub use crate::nt::{
    KmtHandle, NtStatus, STATUS_DEVICE_REMOVED, STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE,
    STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED,
    STATUS_NO_MEMORY,
};

/// `D3DDDI_DOORBELLSTATUS` values the UMD reads from the doorbell status page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoorbellStatus {
    /// Connected: ring and go.
    Connected,
    /// Connected, but the KMD wants `D3DKMTNotifyWorkSubmission` after each ring.
    ConnectedNotify,
    /// Disconnected (victimised, F1, D3): reconnect and retry (UM-19).
    DisconnectedRetry,
    /// Disconnected for good (device lost): destroy and recreate, or fall back (UM-10).
    DisconnectedAbort,
    /// Anything else the status page holds (treated as abort).
    Unknown(i32),
}

impl DoorbellStatus {
    /// Decodes the raw `D3DDDI_DOORBELLSTATUS`.
    pub fn from_raw(v: i32) -> Self {
        match v {
            0 => Self::Connected,
            1 => Self::ConnectedNotify,
            2 => Self::DisconnectedRetry,
            3 => Self::DisconnectedAbort,
            x => Self::Unknown(x),
        }
    }

    /// Connected (with or without notify).
    pub fn is_connected(self) -> bool {
        matches!(self, Self::Connected | Self::ConnectedNotify)
    }
}

/// CPU views of one doorbell, from `D3DKMTCreateDoorbell`.
pub trait DoorbellCpu {
    /// Writes `value` to `DoorbellCPUVirtualAddress` (the physical doorbell page while
    /// connected, the OS's dummy page otherwise).
    fn ring(&self, value: u64);
    /// Reads `DoorbellStatusCPUVirtualAddress`.
    fn status(&self) -> DoorbellStatus;
    /// Stores to `HwQueueProgressFenceLastQueuedValueCPUVirtualAddress` (UM-16).
    fn set_last_queued(&self, value: u64);
}

/// Read-only CPU view of a fence value (`HwQueueProgressFenceCPUVirtualAddress`, a paging
/// fence's, or a native fence's CurrentValue).
pub trait FenceCpu {
    /// The fence's current value.
    fn value(&self) -> u64;
}

/// A GPU-visible allocation the UMD created (ring, ring control, command buffer).
#[derive(Debug)]
pub struct Allocation<M> {
    /// The D3DKMT allocation handle.
    pub handle: KmtHandle,
    /// Its GPU virtual address.
    pub gpu_va: u64,
    /// Its size in bytes.
    pub size: u64,
    /// CPU access.
    pub mem: M,
}

/// What `D3DKMTCreateAllocation2` returns for an allocation without a CPU mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MappedGpu {
    /// The D3DKMT allocation handle.
    pub handle: KmtHandle,
    /// Its GPU virtual address: `D3DDDI_ALLOCATIONINFO2::GpuVirtualAddress` as the create
    /// left it. 0 where the OS gives none at create (24H2): the UMD maps the allocation
    /// itself ([`map_new_allocation`]).
    pub gpu_va: u64,
    /// Its size in bytes (what VidMm allocated: whole pages).
    pub size: u64,
}

/// `D3DDDICB_DESTROYALLOCATION2FLAGS` as this UMD uses them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DestroyFlags {
    /// `AssumeNotInUse`: VidMm frees at once instead of after the device's queued work
    /// (AL-03). Only when the UMD knows no queued work uses the allocation.
    pub assume_not_in_use: bool,
}

/// `D3DDDI_MAKERESIDENT_FLAGS` as this UMD uses them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MakeResidentFlags {
    /// `CantTrimFurther`: the UMD has evicted all it can; VidMm may go over the budget
    /// rather than fail.
    pub cant_trim_further: bool,
}

/// `D3DDDI_EVICT_FLAGS` as this UMD uses them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvictFlags {
    /// `EvictOnlyIfNecessary`: keep the contents where they are until VidMm needs the room.
    pub evict_only_if_necessary: bool,
    /// `NotWrittenTo`: the GPU did not write the allocation since it was made resident, so
    /// VidMm may drop the VRAM copy instead of transferring it out.
    pub not_written_to: bool,
}

/// What a successful `D3DKMTMakeResident` returns: the allocations may be used by GPU work
/// once the device's paging fence reaches `value` (`STATUS_PENDING` when it has not yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagingFence {
    /// The paging queue's fence (`D3DKMT_CREATEPAGINGQUEUE::hSyncObject`).
    pub fence: KmtHandle,
    /// `PagingFenceValue`.
    pub value: u64,
}

/// Why `D3DKMTMakeResident` failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MakeResidentError {
    /// `STATUS_NO_MEMORY`: the request does not fit the process's budget; evict
    /// `bytes_to_trim` (`NumBytesToTrim`) and try again. No residency count changed.
    OverBudget {
        /// `NumBytesToTrim`.
        bytes_to_trim: u64,
    },
    /// Any other failure.
    Status(NtStatus),
}

/// `D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE`: what a GPU VA mapping allows besides reading
/// (d3dukmdt.h bit order). Plain bits, so a caller can also pass what the OS must refuse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuVaProtection(pub u64);

impl GpuVaProtection {
    /// Read only.
    pub const READ: Self = Self(0);
    /// `Write`.
    pub const WRITE: Self = Self(1 << 0);
    /// `Execute`.
    pub const EXECUTE: Self = Self(1 << 1);
    /// `Zero`: the range reads zeros (only with a driver that reports `ZeroInPteSupported`).
    pub const ZERO: Self = Self(1 << 2);
    /// `NoAccess`: the range is reserved and every GPU access faults.
    pub const NO_ACCESS: Self = Self(1 << 3);
    /// `SystemUseOnly`: the OS's own; refused from user mode.
    pub const SYSTEM_USE_ONLY: Self = Self(1 << 4);
}

impl core::ops::BitOr for GpuVaProtection {
    type Output = Self;
    fn bitor(self, o: Self) -> Self {
        Self(self.0 | o.0)
    }
}

/// `D3DDDIGPUVIRTUALADDRESS_RESERVATION_TYPE` values.
pub const RESERVE_NO_ACCESS: i32 = 0;
/// `D3DDDIGPUVIRTUALADDRESS_RESERVE_ZERO`.
pub const RESERVE_ZERO: i32 = 1;
/// `D3DDDIGPUVIRTUALADDRESS_RESERVE_NO_COMMIT` (refused from user mode).
pub const RESERVE_NO_COMMIT: i32 = 2;

/// `D3DDDI_RESERVEGPUVIRTUALADDRESS` as this UMD fills it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReserveGpuVa {
    /// `BaseAddress`: 0 lets VidMm choose inside `[minimum, maximum)`; else 64 KiB aligned.
    pub base: u64,
    /// `MinimumAddress`.
    pub minimum: u64,
    /// `MaximumAddress` (0: no limit).
    pub maximum: u64,
    /// `Size` in bytes.
    pub size: u64,
    /// `ReservationType` ([`RESERVE_NO_ACCESS`], [`RESERVE_ZERO`]).
    pub reservation_type: i32,
}

/// `D3DDDI_MAPGPUVIRTUALADDRESS` as this UMD fills it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapGpuVa {
    /// `hPagingQueue` (from [`Kmt::create_paging_queue`]).
    pub paging_queue: KmtHandle,
    /// `BaseAddress`: 0 lets VidMm choose inside `[minimum, maximum)`; else 4 KiB aligned,
    /// free or inside a range the process reserved or mapped.
    pub base: u64,
    /// `MinimumAddress`.
    pub minimum: u64,
    /// `MaximumAddress` (0: no limit).
    pub maximum: u64,
    /// `hAllocation` (ignored with `Zero` / `NoAccess`).
    pub allocation: KmtHandle,
    /// `OffsetInPages`: first 4 KiB page of the allocation mapped.
    pub offset_in_pages: u64,
    /// `SizeInPages`.
    pub size_in_pages: u64,
    /// `Protection`.
    pub protection: GpuVaProtection,
    /// `DriverProtection`: the KMD's own bits, which VidMm hands it unchecked with the
    /// range's page-table updates.
    pub driver_protection: u64,
}

impl MapGpuVa {
    /// `pages` pages of `allocation` from page `first_page`, read-write at `base`, on
    /// `paging_queue`.
    pub fn read_write(
        paging_queue: KmtHandle,
        base: u64,
        allocation: KmtHandle,
        first_page: u64,
        pages: u64,
    ) -> Self {
        Self {
            paging_queue,
            base,
            allocation,
            offset_in_pages: first_page,
            size_in_pages: pages,
            protection: GpuVaProtection::WRITE,
            ..Self::default()
        }
    }

    /// The thunk's argument block with these inputs (its outputs zero), as the Windows
    /// thunks and the simulated ones both pass it.
    pub fn block(&self) -> rvgpu_ddi::d3dkmt::D3DDDI_MAPGPUVIRTUALADDRESS {
        rvgpu_ddi::d3dkmt::D3DDDI_MAPGPUVIRTUALADDRESS {
            hPagingQueue: self.paging_queue,
            BaseAddress: self.base,
            MinimumAddress: self.minimum,
            MaximumAddress: self.maximum,
            hAllocation: self.allocation,
            OffsetInPages: self.offset_in_pages,
            SizeInPages: self.size_in_pages,
            Protection: self.protection.0,
            DriverProtection: self.driver_protection,
            ..Default::default()
        }
    }
}

/// What a successful `D3DKMTMapGpuVirtualAddress` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MappedGpuVa {
    /// `VirtualAddress`.
    pub va: u64,
    /// `PagingFenceValue`: GPU work may use the mapping once the paging queue's fence
    /// reaches it.
    pub paging_fence_value: u64,
}

/// The protection a UMD maps a new allocation of `pdd` with: readable; writable unless the
/// private data says GPU read-only; executable only for commands (rings, DMA buffers).
pub fn protection_for(pdd: &AllocationPdd) -> GpuVaProtection {
    let mut p = GpuVaProtection::READ;
    if pdd.flags & rvgpu_hw::pdd::ALLOCATION_GPU_READ_ONLY == 0 {
        p = p | GpuVaProtection::WRITE;
    }
    if pdd.kind == AllocationKind::Commands as u32 {
        p = p | GpuVaProtection::EXECUTE;
    }
    p
}

/// The GPU VA of a new allocation `m` (created with `pdd`), as 24H2 requires a UMD to get
/// it: 24H2's `D3DKMTCreateAllocation2` gives none (`DXGDEVICE::CreateAllocation`
/// @0x140356E10), so the UMD maps the whole allocation with `D3DKMTMapGpuVirtualAddress`
/// (`BaseAddress` 0: VidMm chooses) on the device's paging queue. Where the create gave one
/// (the `D3DDDI_ALLOCATIONINFO2` page's reading) that one is used. Returns the VA and the
/// paging fence the caller must wait for ([`wait_paging`]) before the GPU uses the
/// allocation or the KMD is handed it (Map may answer `STATUS_PENDING`). The range Map made
/// is freed by the OS when the allocation is destroyed
/// (`VIDMM_GLOBAL::CloseOneAllocation` @0x1400A9EF4): the UMD never frees it itself.
pub fn map_new_allocation<K: Kmt + ?Sized>(
    kmt: &K,
    m: &MappedGpu,
    pdd: &AllocationPdd,
) -> Result<(u64, Option<PagingFence>), NtStatus> {
    if m.gpu_va != 0 {
        return Ok((m.gpu_va, None));
    }
    let (queue, fence) = kmt.device_paging_queue()?;
    let r = MapGpuVa {
        paging_queue: queue,
        allocation: m.handle,
        size_in_pages: m.size.div_ceil(rvgpu_hw::PAGE_SIZE),
        protection: protection_for(pdd),
        ..MapGpuVa::default()
    };
    let mapped = kmt.map_gpu_va(&r)?;
    // A VA of 0 is no mapping the GPU can use.
    if mapped.va == 0 {
        return Err(STATUS_INVALID_PARAMETER);
    }
    Ok((
        mapped.va,
        Some(PagingFence {
            fence,
            value: mapped.paging_fence_value,
        }),
    ))
}

/// Waits until the paging fence reaches its value (nothing to wait for: `None`, or a value
/// of 0 from thunks without paging fences).
pub fn wait_paging<K: Kmt + ?Sized>(kmt: &K, pf: Option<PagingFence>) -> Result<(), NtStatus> {
    match pf {
        Some(p) if p.fence != 0 && p.value != 0 => kmt.wait_for_fence(p.fence, p.value),
        _ => Ok(()),
    }
}

/// `D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_TYPE` values.
pub const UPDATE_GPU_VA_MAP: i32 = 0;
/// `D3DDDI_UPDATEGPUVIRTUALADDRESS_UNMAP`.
pub const UPDATE_GPU_VA_UNMAP: i32 = 1;
/// `D3DDDI_UPDATEGPUVIRTUALADDRESS_COPY`.
pub const UPDATE_GPU_VA_COPY: i32 = 2;
/// `D3DDDI_UPDATEGPUVIRTUALADDRESS_MAP_PROTECT`.
pub const UPDATE_GPU_VA_MAP_PROTECT: i32 = 3;

/// One `D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION`, its union flattened: which fields count
/// depends on `operation_type` (plain values, so a caller can also pass what the OS must
/// refuse).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateGpuVaOp {
    /// `OperationType` (`UPDATE_GPU_VA_*`).
    pub operation_type: i32,
    /// `BaseAddress` (map, map-protect, unmap) or `SourceAddress` (copy).
    pub base: u64,
    /// `SizeInBytes`.
    pub size: u64,
    /// `hAllocation` (map, map-protect).
    pub allocation: KmtHandle,
    /// `AllocationOffsetInBytes` (map, map-protect).
    pub allocation_offset: u64,
    /// `AllocationSizeInBytes` (map, map-protect; 0: `size`). The allocation range repeats
    /// over the VA range, which must be a whole number of it.
    pub allocation_size: u64,
    /// `Protection` (map-protect, unmap).
    pub protection: GpuVaProtection,
    /// `DriverProtection` (map-protect).
    pub driver_protection: u64,
    /// `DestAddress` (copy).
    pub dest: u64,
}

impl UpdateGpuVaOp {
    /// A `MAP` of `[allocation_offset, + size)` of `allocation` at `base`.
    pub fn map(base: u64, size: u64, allocation: KmtHandle, allocation_offset: u64) -> Self {
        Self {
            operation_type: UPDATE_GPU_VA_MAP,
            base,
            size,
            allocation,
            allocation_offset,
            ..Self::default()
        }
    }

    /// An `UNMAP` of `[base, base + size)` to no access.
    pub fn unmap(base: u64, size: u64) -> Self {
        Self {
            operation_type: UPDATE_GPU_VA_UNMAP,
            base,
            size,
            protection: GpuVaProtection::NO_ACCESS,
            ..Self::default()
        }
    }

    /// A `COPY` of the mappings of `[source, source + size)` to `dest`.
    pub fn copy(source: u64, size: u64, dest: u64) -> Self {
        Self {
            operation_type: UPDATE_GPU_VA_COPY,
            base: source,
            size,
            dest,
            ..Self::default()
        }
    }
}

/// `D3DKMT_UPDATEGPUVIRTUALADDRESS` without its operations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateGpuVa {
    /// `hContext`: the context the update is ordered against (a context of the UMD's device).
    pub context: KmtHandle,
    /// `hFenceObject`: a monitored fence of the UMD's device.
    pub fence: KmtHandle,
    /// `FenceValue`: the update waits for the fence to reach it (unless `do_not_wait`); once
    /// it is applied the OS signals the fence to `FenceValue + 1`.
    pub fence_value: u64,
    /// `Flags.DoNotWait`.
    pub do_not_wait: bool,
}

/// What `D3DKMTCreatePagingQueue` returns.
#[derive(Debug)]
pub struct PagingQueue<F> {
    /// `hPagingQueue`.
    pub handle: KmtHandle,
    /// `hSyncObject`: the paging fence (a monitored fence the OS advances).
    pub fence: KmtHandle,
    /// `FenceValueCPUVirtualAddress` (read-only).
    pub fence_cpu: F,
}

/// CPU access to an allocation, word by word (64-bit, naturally aligned, byte offsets).
pub trait AllocationCpu {
    /// Stores `value` at byte offset `offset` (Release; 8-aligned, in range; out-of-range is
    /// ignored).
    fn store(&self, offset: u64, value: u64);
    /// Loads the word at byte offset `offset` (Acquire).
    fn load(&self, offset: u64) -> u64;
    /// Stores `value` at word `index` (byte offset `8 * index`), as [`store`](Self::store).
    #[inline]
    fn store_word(&self, index: u64, value: u64) {
        if let Some(offset) = index.checked_mul(8) {
            self.store(offset, value);
        }
    }
    /// Whether [`store_run`](Self::store_run) checks its bound once per run rather than per
    /// word ([`RingMemory::RUNS`]).
    const RUNS: bool = false;
    /// Stores at most `len` of `words` at words `index..index + len`, as
    /// [`store_word`](Self::store_word) each (a run out of range is ignored).
    #[inline(always)]
    fn store_run(&self, index: u64, len: usize, words: impl Iterator<Item = u64>) {
        let mut i = index;
        for w in words.take(len) {
            self.store_word(i, w);
            i = i.wrapping_add(1);
        }
    }
    /// The start of the CPU mapping, for callers that hand it on (the C API's buffer locks).
    /// Default: null, for implementations whose memory has no address in this process (the
    /// simulated machine).
    fn cpu_ptr(&self) -> *mut u8 {
        core::ptr::null_mut()
    }
}

/// The progress fence `D3DKMTCreateHwQueue` returned for a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueProgress<F> {
    /// `hHwQueueProgressFence` (a monitored fence).
    pub fence: KmtHandle,
    /// Read-only CPU mapping of its value (`HwQueueProgressFenceCPUVirtualAddress`).
    pub cpu: F,
    /// Its GPU VA (the KMD programs it as the queue's `progress_fence`).
    pub gpu: u64,
}

/// What `D3DKMTCreateHwQueue` returns.
#[derive(Debug)]
pub struct HwQueue<F> {
    /// The queue handle.
    pub handle: KmtHandle,
    /// The OS-created progress fence; `None` when the OS returned none, which 24H2 does for
    /// every user-mode-submission queue (`DxgkCreateHwQueueInternal` copies the three outputs
    /// back only for kernel-submission queues). Microsoft's pages give every queue one.
    pub progress: Option<QueueProgress<F>>,
}

impl<F> HwQueue<F> {
    /// The progress fence's handle, if the OS gave the queue one.
    pub fn progress_fence(&self) -> Option<KmtHandle> {
        self.progress.as_ref().map(|p| p.fence)
    }
}

/// The progress fence outputs of `D3DKMTCreateHwQueue` (`hHwQueueProgressFence` and its CPU
/// and GPU VAs, the CPU VA as an address) as the UMD accepts them. All three zero on a
/// user-mode queue is a queue without one (`None`): 24H2's
/// `DXGHWQUEUE::InitializeForUserModeSubmission` @0x1401DA74C clears them before
/// `DdiCreateHwQueue` and `DxgkCreateHwQueueInternal` returns them only for kernel-submission
/// queues. Otherwise the handle must be non-zero and the CPU VA non-null and 8-aligned (the
/// UMD reads the value through it); a kernel-mode queue must have one, as it completes only
/// through it. A refusal is `STATUS_INVALID_PARAMETER`.
pub fn checked_progress(
    user_mode: bool,
    fence: KmtHandle,
    cpu_va: usize,
    gpu_va: GpuVa,
) -> Result<Option<QueueProgress<usize>>, NtStatus> {
    if user_mode && fence == 0 && cpu_va == 0 && gpu_va.is_null() {
        return Ok(None);
    }
    if fence == 0 || cpu_va == 0 || !cpu_va.is_multiple_of(8) {
        return Err(STATUS_INVALID_PARAMETER);
    }
    Ok(Some(QueueProgress {
        fence,
        cpu: cpu_va,
        gpu: gpu_va.get(),
    }))
}

/// What `D3DKMTCreateDoorbell` returns.
#[derive(Debug)]
pub struct Doorbell<D> {
    /// The doorbell handle.
    pub handle: KmtHandle,
    /// Doorbell page, status page and last-queued value.
    pub cpu: D,
}

/// `D3DKMT_DEVICEEXECUTION_STATE`: a device's execution state as `D3DKMTGetDeviceState`
/// (`D3DKMT_DEVICESTATE_EXECUTION`) reports it, what an application reads to tell a lost device
/// and why it was lost.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ne-d3dkmthk-_d3dkmt_deviceexecution_state>
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceExecutionState(pub u32);

impl DeviceExecutionState {
    /// `D3DKMT_DEVICEEXECUTION_ACTIVE`.
    pub const ACTIVE: Self = Self(1);
    /// `D3DKMT_DEVICEEXECUTION_RESET`.
    pub const RESET: Self = Self(2);
    /// `D3DKMT_DEVICEEXECUTION_HUNG`: its work hung an engine.
    pub const HUNG: Self = Self(3);
    /// `D3DKMT_DEVICEEXECUTION_STOPPED`.
    pub const STOPPED: Self = Self(4);
    /// `D3DKMT_DEVICEEXECUTION_ERROR_OUTOFMEMORY`.
    pub const ERROR_OUTOFMEMORY: Self = Self(5);
    /// `D3DKMT_DEVICEEXECUTION_ERROR_DMAFAULT`.
    pub const ERROR_DMAFAULT: Self = Self(6);
    /// `D3DKMT_DEVICEEXECUTION_ERROR_DMAPAGEFAULT`.
    pub const ERROR_DMAPAGEFAULT: Self = Self(7);
}

/// Inside `impl Kmt for T`: each `fn name(&self, args) -> R;` listed becomes the thunk that
/// calls the same thunk of `$to` (an expression of `self`: `(**self)`, `self.0`, ...) with the
/// same arguments. The pointer impls ([`crate::submit`]), the harness's session thunks and the
/// unit tests' wrappers forward through it.
#[macro_export]
macro_rules! forward_thunks {
    ($s:ident => $to:expr; $($(#[$doc:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            $(#[$doc])*
            fn $name(&$s $(, $arg: $ty)*) -> $ret {
                $to.$name($($arg),*)
            }
        )*
    };
}

/// The D3DKMT thunks of the user-mode submission path.
pub trait Kmt {
    /// CPU view of an allocation.
    type Mem: AllocationCpu + Clone;
    /// CPU views of a doorbell.
    type Doorbell: DoorbellCpu;
    /// CPU view of a fence value.
    type Fence: FenceCpu;

    /// `D3DKMTCreateContextVirtual` (a context on node `node` of the UMD's device), with
    /// `HwQueueSupported` exactly when the node is hardware-scheduled
    /// ([`node_hw_scheduled`](Self::node_hw_scheduled), [`crate::nodes`]).
    fn create_context(&self, node: u32) -> Result<KmtHandle, NtStatus>;
    /// Whether node `node` is hardware-scheduled, as `D3DKMTQueryAdapterInfo`
    /// (`KMTQAITYPE_NODEMETADATA`) answers it, learnt once per node ([`crate::nodes`]).
    /// Default: `false` (an OS without hardware scheduling).
    fn node_hw_scheduled(&self, node: u32) -> Result<bool, NtStatus> {
        let _ = node;
        Ok(false)
    }
    /// `D3DKMTDestroyContext`.
    fn destroy_context(&self, context: KmtHandle) -> Result<(), NtStatus>;
    /// `D3DKMTCreateHwQueue`; `user_mode_submission` sets
    /// `D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission` (UM-05). `private_data` is in/out
    /// ([`rvgpu_hw::pdd::HwQueuePdd`]).
    fn create_hw_queue(
        &self,
        context: KmtHandle,
        user_mode_submission: bool,
        private_data: &mut [u8],
    ) -> Result<HwQueue<Self::Fence>, NtStatus>;
    /// `D3DKMTDestroyHwQueue`.
    fn destroy_hw_queue(&self, queue: KmtHandle) -> Result<(), NtStatus>;
    /// `D3DKMTCreateAllocation2` of a GPU-visible, CPU-mapped, resident allocation of `kind`
    /// (the UMD's private data to the KMD: [`allocation_private_data`]).
    fn create_allocation_as(
        &self,
        size: u64,
        kind: AllocationKind,
    ) -> Result<Allocation<Self::Mem>, NtStatus>;
    /// A data buffer ([`AllocationKind::Buffer`]: the GPU reads and writes it, never executes
    /// it).
    fn create_allocation(&self, size: u64) -> Result<Allocation<Self::Mem>, NtStatus> {
        self.create_allocation_as(size, AllocationKind::Buffer)
    }
    /// `D3DKMTDestroyAllocation2`.
    fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus>;

    // AL-01 … AL-06, docs/memory.md "CPU access": allocations described in full,
    // CPU mappings on demand, destruction flags, cache maintenance. Default bodies keep every
    // implementation compiling.

    /// `D3DKMTCreateAllocation2` with the UMD's full private data and no CPU mapping: the
    /// handle, the GPU VA and the size VidMm gave it. Default: `STATUS_NOT_SUPPORTED`.
    fn create_allocation_pdd(&self, pdd: &AllocationPdd) -> Result<MappedGpu, NtStatus> {
        let _ = pdd;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTLock2`: a CPU view of the allocation (VidMm's rules decide whether it can have
    /// one, AL-04). Default: `STATUS_NOT_SUPPORTED`.
    fn lock2(&self, allocation: KmtHandle) -> Result<Self::Mem, NtStatus> {
        let _ = allocation;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTUnlock2`. Default: `STATUS_NOT_SUPPORTED`.
    fn unlock2(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
        let _ = allocation;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTDestroyAllocation2` with its flags (AL-03). The default forwards a plain
    /// destruction and refuses `AssumeNotInUse` with `STATUS_NOT_SUPPORTED`.
    fn destroy_allocation2(
        &self,
        allocation: KmtHandle,
        flags: DestroyFlags,
    ) -> Result<(), NtStatus> {
        if flags.assume_not_in_use {
            return Err(STATUS_NOT_SUPPORTED);
        }
        self.destroy_allocation(allocation)
    }
    /// `D3DKMTInvalidateCache`: writes back and invalidates the CPU caches over
    /// `[offset, offset + length)` of the allocation (AL-06). Default: `STATUS_NOT_SUPPORTED`.
    fn invalidate_cache(
        &self,
        allocation: KmtHandle,
        offset: u64,
        length: u64,
    ) -> Result<(), NtStatus> {
        let _ = (allocation, offset, length);
        Err(STATUS_NOT_SUPPORTED)
    }
    /// Whether the GPU snoops the CPU's caches (I/O coherency): the driver's aperture segment
    /// says `CacheCoherent`. Without it the UMD maintains the caches itself (AL-06). Default:
    /// true (x86/x64 platforms must be I/O coherent).
    fn io_coherent(&self) -> bool {
        true
    }
    /// `D3DKMTMakeResident` on the device's paging queue: adds one to each allocation's
    /// residency count (all or none), pages in what is not resident. Default:
    /// `STATUS_NOT_SUPPORTED`.
    fn make_resident(
        &self,
        allocations: &[KmtHandle],
        flags: MakeResidentFlags,
    ) -> Result<PagingFence, MakeResidentError> {
        let _ = (allocations, flags);
        Err(MakeResidentError::Status(STATUS_NOT_SUPPORTED))
    }
    /// `D3DKMTMakeResident` on the paging queue `queue` (from
    /// [`create_paging_queue`](Self::create_paging_queue)): as
    /// [`make_resident`](Self::make_resident), with the paging it needs ordered on that queue.
    /// The allocations may be used once `queue`'s fence reaches the returned value (Windows
    /// answers `STATUS_PENDING` while paging is still queued; both are success here). Default:
    /// `STATUS_NOT_SUPPORTED`.
    fn make_resident_on(
        &self,
        queue: &PagingQueue<Self::Fence>,
        allocations: &[KmtHandle],
        flags: MakeResidentFlags,
    ) -> Result<PagingFence, MakeResidentError> {
        let _ = (queue, allocations, flags);
        Err(MakeResidentError::Status(STATUS_NOT_SUPPORTED))
    }
    /// `D3DKMTEvict`: takes one from each allocation's residency count; at zero VidMm may
    /// evict it once the work queued before the call has finished. Returns `NumBytesToTrim`.
    /// Default: `STATUS_NOT_SUPPORTED`.
    fn evict(&self, allocations: &[KmtHandle], flags: EvictFlags) -> Result<u64, NtStatus> {
        let _ = (allocations, flags);
        Err(STATUS_NOT_SUPPORTED)
    }
    // paging queues and GPU virtual addresses the process places itself
    // (docs/memory.md "GPU VA thunks"). Default bodies keep every implementation compiling.

    /// The device's own paging queue and its fence (`hPagingQueue`, `hSyncObject`): the one
    /// [`make_resident`](Self::make_resident) orders its paging on, and the one
    /// [`map_new_allocation`] maps new allocations on. Default: `STATUS_NOT_SUPPORTED`.
    fn device_paging_queue(&self) -> Result<(KmtHandle, KmtHandle), NtStatus> {
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTCreatePagingQueue` on the UMD's device with `priority`
    /// (`D3DDDI_PAGINGQUEUE_PRIORITY`). Default: `STATUS_NOT_SUPPORTED`.
    fn create_paging_queue(&self, priority: i32) -> Result<PagingQueue<Self::Fence>, NtStatus> {
        let _ = priority;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTDestroyPagingQueue` (its fence goes with it). Default: `STATUS_NOT_SUPPORTED`.
    fn destroy_paging_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
        let _ = queue;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTReserveGpuVirtualAddress` in the UMD's process: the range's VA. Default:
    /// `STATUS_NOT_SUPPORTED`.
    fn reserve_gpu_va(&self, request: &ReserveGpuVa) -> Result<u64, NtStatus> {
        let _ = request;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTMapGpuVirtualAddress`. Default: `STATUS_NOT_SUPPORTED`.
    fn map_gpu_va(&self, request: &MapGpuVa) -> Result<MappedGpuVa, NtStatus> {
        let _ = request;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTUpdateGpuVirtualAddress`: `ops` applied in order to ranges the process
    /// reserved. Returns once the update is queued; it is applied after the fence reaches
    /// `FenceValue`, and then the fence is signalled to `FenceValue + 1` (wait for that
    /// before using the new mappings from the CPU's point of view). Default:
    /// `STATUS_NOT_SUPPORTED`.
    fn update_gpu_va(&self, update: &UpdateGpuVa, ops: &[UpdateGpuVaOp]) -> Result<(), NtStatus> {
        let _ = (update, ops);
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTFreeGpuVirtualAddress` of the range starting at `base`. Default:
    /// `STATUS_NOT_SUPPORTED`.
    fn free_gpu_va(&self, base: u64, size: u64) -> Result<(), NtStatus> {
        let _ = (base, size);
        Err(STATUS_NOT_SUPPORTED)
    }

    /// `D3DKMTCreateDoorbell`; `private_data` is in/out ([`rvgpu_hw::pdd::DoorbellPdd`]).
    fn create_doorbell(
        &self,
        queue: KmtHandle,
        ring: KmtHandle,
        ring_control: KmtHandle,
        private_data: &mut [u8],
    ) -> Result<Doorbell<Self::Doorbell>, NtStatus>;
    /// `D3DKMTConnectDoorbell`.
    fn connect_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
    /// `D3DKMTDestroyDoorbell`.
    fn destroy_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
    /// `D3DKMTNotifyWorkSubmission`.
    fn notify_work_submission(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
    /// `D3DKMTSubmitCommandToHwQueue`: the kernel-mode path (UM-01).
    fn submit_command_to_hw_queue(
        &self,
        queue: KmtHandle,
        progress_fence_value: u64,
        command_buffer_gpu: u64,
        command_bytes: u32,
    ) -> Result<(), NtStatus>;
    /// `D3DKMTWaitForSynchronizationObjectFromCpu` on one fence and value, blocking.
    fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus>;
    /// `D3DKMTSubmitCommand`: `command_bytes` of commands at `command_buffer_gpu` (a GPU VA
    /// of the UMD's process) as one DMA buffer of `context` (a context without hardware
    /// queues: the kernel-mode DMA path, [`crate::dma`]). Default: `STATUS_NOT_SUPPORTED`.
    fn submit_command(
        &self,
        context: KmtHandle,
        command_buffer_gpu: u64,
        command_bytes: u32,
    ) -> Result<(), NtStatus> {
        let _ = (context, command_buffer_gpu, command_bytes);
        Err(STATUS_NOT_SUPPORTED)
    }

    // MF-03, the OS-scheduled half: GPU waits and software signal packets on a kernel-mode
    // hardware queue, scheduled by the OS (no packet in the command stream). Default bodies keep
    // every implementation compiling.

    /// `D3DKMTSubmitWaitForSyncObjectsToHwQueue`: every submission to `queue` after this call
    /// waits (the OS does not give it to the KMD) until each monitored fence reaches its value.
    /// Returns at once. Default: `STATUS_NOT_SUPPORTED`.
    fn submit_wait_to_hw_queue(
        &self,
        queue: KmtHandle,
        fences: &[(KmtHandle, u64)],
    ) -> Result<(), NtStatus> {
        let _ = (queue, fences);
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTSubmitSignalSyncObjectsToHwQueue` with `queue` as its one broadcast queue: the OS
    /// signals each monitored fence to its value once every submission made to `queue` before
    /// this call completed. Returns at once. Default: `STATUS_NOT_SUPPORTED`.
    fn submit_signal_to_hw_queue(
        &self,
        queue: KmtHandle,
        fences: &[(KmtHandle, u64)],
    ) -> Result<(), NtStatus> {
        let _ = (queue, fences);
        Err(STATUS_NOT_SUPPORTED)
    }

    // Native fence logs (docs/logs.md#umd). Default bodies keep every implementation
    // compiling; an implementation that supports logs and the timeline overrides them.

    /// `D3DKMTCreateNativeFence` of a default-type native fence on the UMD's device with
    /// `initial_value`: its D3DKMT handle (the `hNativeFence` a LOG_WRITE records), its VAs in
    /// this process from the OS's `D3DDDI_NATIVEFENCEMAPPING` and its report tag from the KMD's
    /// private data ([`NativeFence::new`]). Default: `STATUS_NOT_SUPPORTED`.
    fn create_native_fence(&self, initial_value: u64) -> Result<NativeFence, NtStatus> {
        let _ = initial_value;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// A read-only CPU view of `fence`'s CurrentValue (its `current_value_cpu` in this
    /// process), for waiting on a fence the UMD created like on a progress fence. Default:
    /// `STATUS_NOT_SUPPORTED`.
    fn native_fence_cpu(&self, fence: &NativeFence) -> Result<Self::Fence, NtStatus> {
        let _ = fence;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// [`create_native_fence`](Self::create_native_fence) of a fence other processes may open
    /// once it is shared ([`share_native_fence`](Self::share_native_fence)); a fence created
    /// the plain way is private to this process. Default: `STATUS_NOT_SUPPORTED`.
    fn create_shareable_native_fence(&self, initial_value: u64) -> Result<NativeFence, NtStatus> {
        let _ = initial_value;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTShareObjects` of a shareable native fence: a new NT handle to it in this
    /// process's handle table, for `DuplicateHandle` into another process.
    /// Default: `STATUS_NOT_SUPPORTED`.
    fn share_native_fence(&self, fence: KmtHandle) -> Result<u64, NtStatus> {
        let _ = fence;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `CloseHandle` of an NT handle this process holds (from
    /// [`share_native_fence`](Self::share_native_fence) or duplicated into it).
    /// Default: `STATUS_NOT_SUPPORTED`.
    fn close_nt_handle(&self, handle: u64) -> Result<(), NtStatus> {
        let _ = handle;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// Opens a native fence another process shared (`D3DKMTOpenNativeFenceFromNtHandle`):
    /// `shared` is an NT handle in *this* process's table, duplicated into it by the process
    /// that shared the fence; a handle of another process's table, or a D3DKMT handle, names
    /// nothing here. Returns this process's handle and the fence's VAs in this process (its own
    /// mapping, not the creator's). Default: `STATUS_NOT_SUPPORTED`.
    fn open_native_fence(&self, shared: u64) -> Result<NativeFence, NtStatus> {
        let _ = shared;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTDestroySynchronizationObject` of a native fence from
    /// [`create_native_fence`](Self::create_native_fence) / [`open_native_fence`](Self::open_native_fence).
    /// Default: `STATUS_NOT_SUPPORTED`.
    fn destroy_native_fence(&self, fence: KmtHandle) -> Result<(), NtStatus> {
        let _ = fence;
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTSignalSynchronizationObjectFromCpu` of one fence (a native or monitored fence's
    /// D3DKMT handle) to `value`. Default: `STATUS_NOT_SUPPORTED`.
    fn signal_native_from_cpu(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        let _ = (fence, value);
        Err(STATUS_NOT_SUPPORTED)
    }
    /// `D3DKMTGetDeviceState` (`D3DKMT_DEVICESTATE_EXECUTION`) of the UMD's device: active, or
    /// in error and why. Default: `STATUS_NOT_SUPPORTED`.
    fn device_execution_state(&self) -> Result<DeviceExecutionState, NtStatus> {
        Err(STATUS_NOT_SUPPORTED)
    }
    /// The CPU timestamp of the "queued" event (`QueuedOp::qpc`): `QueryPerformanceCounter` on
    /// Windows, `rvgpu_simos::qpc()` in the simulation, so that it is on the clock the KMD's
    /// `DxgkDdiCalibrateGpuClock` reports. Default: 0 (no clock; the timeline then has no
    /// queued times).
    fn cpu_timestamp(&self) -> u64 {
        0
    }
    /// Ticks per second of [`cpu_timestamp`](Self::cpu_timestamp)
    /// (`QueryPerformanceFrequency`; 10 MHz in the simulation). Default: 0 (no clock).
    fn cpu_timestamp_frequency(&self) -> u64 {
        0
    }
}

/// Adapts an allocation's CPU view to the ring writer (ring words from offset 0 of `ring`,
/// pointers in the `RingControl` block `control`).
#[derive(Clone, Debug)]
pub struct RingView<M> {
    /// The ring allocation.
    pub ring: M,
    /// The ring-control allocation.
    pub control: M,
}

impl<M: AllocationCpu> RingMemory for RingView<M> {
    const RUNS: bool = M::RUNS;
    #[inline]
    fn store_word(&self, index: u64, value: u64) {
        self.ring.store_word(index, value);
    }
    #[inline(always)]
    fn store_run(&self, index: u64, len: usize, words: impl Iterator<Item = u64>) {
        self.ring.store_run(index, len, words);
    }
    fn load_read_ptr(&self) -> u64 {
        self.control.load(rvgpu_hw::queue::RingControl::READ_PTR)
    }
    fn store_write_ptr(&self, value: u64) {
        self.control
            .store(rvgpu_hw::queue::RingControl::WRITE_PTR, value);
    }
}

/// What the UMD tells the KMD about an allocation it creates (`D3DKMTCreateAllocation2`'s
/// private data, [`rvgpu_hw::pdd::AllocationPdd`]): its size and what it is for. Rings, ring
/// controls and command buffers are CPU-visible: the UMD writes them.
pub fn allocation_private_data(size: u64, kind: AllocationKind) -> AllocationPdd {
    AllocationPdd {
        magic: rvgpu_hw::pdd::PDD_MAGIC,
        version: rvgpu_hw::pdd::ALLOCATION_PDD_VERSION,
        size,
        kind: kind as u32,
        flags: rvgpu_hw::pdd::ALLOCATION_CPU_VISIBLE,
        reserved: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// UM-05: the progress fence outputs of `D3DKMTCreateHwQueue` the UMD accepts. None at all
    /// is a user-mode queue without one (24H2); anything half-given, a null or misaligned CPU
    /// VA, or a kernel-mode queue without one is refused.
    #[test]
    fn um_05_progress_fence_outputs_accepted_by_queue_kind() {
        let given = Some(QueueProgress {
            fence: 7,
            cpu: 0x1000,
            gpu: 0x2000,
        });
        let bad = Err(STATUS_INVALID_PARAMETER);
        type Outputs = (bool, KmtHandle, usize, u64);
        let cases: [(&str, Outputs, Result<_, NtStatus>); 9] = [
            ("user mode, all given", (true, 7, 0x1000, 0x2000), Ok(given)),
            (
                "kernel mode, all given",
                (false, 7, 0x1000, 0x2000),
                Ok(given),
            ),
            ("user mode, none (24H2)", (true, 0, 0, 0), Ok(None)),
            ("kernel mode, none", (false, 0, 0, 0), bad),
            ("handle without a CPU VA", (true, 7, 0, 0x2000), bad),
            ("misaligned CPU VA", (true, 7, 0x1004, 0x2000), bad),
            (
                "misaligned CPU VA, kernel mode",
                (false, 7, 0x1001, 0x2000),
                bad,
            ),
            ("CPU VA without a handle", (true, 0, 0x1000, 0x2000), bad),
            ("GPU VA without a handle", (true, 0, 0, 0x2000), bad),
        ];
        for (what, (user, fence, cpu, gpu), want) in cases {
            assert_eq!(
                checked_progress(user, fence, cpu, GpuVa::new(gpu)),
                want,
                "{what}"
            );
        }
    }
}
