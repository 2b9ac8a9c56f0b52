//! The GPU virtual-address thunks' kernel entries, as 24H2 answers them:
//! `D3DKMTReserveGpuVirtualAddress` (`K:DxgkReserveGpuVirtualAddress` @0x140399110),
//! `D3DKMTMapGpuVirtualAddress` (`K:DxgkMapGpuVirtualAddress` @0x140321DB0, then
//! `M:VIDMM_GLOBAL::VidMmMapGpuVirtualAddress` @0x1400F4F90) and
//! `D3DKMTFreeGpuVirtualAddress` (`K:DxgkFreeGpuVirtualAddress` @0x14039BD40) and
//! `D3DKMTUpdateGpuVirtualAddress` (`K:DxgkUpdateGpuVirtualAddress` @0x1402F7A50): the caller's
//! structure as written, the checks in 24H2's order with their statuses, then the simulated
//! VidMm ([`crate::vidmm::va`]), and back exactly the fields 24H2 writes.

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_umd::kmt::{GpuVaProtection, KmtHandle, MapGpuVa, NtStatus, ReserveGpuVa, UpdateGpuVaOp};

use crate::base::lock::lock;
use crate::machine::Machine;
use crate::ums::UmsProcess;

use super::refusal::row::*;
pub use rvgpu_ddi::d3dkmt::{
    D3DDDI_MAPGPUVIRTUALADDRESS, D3DDDI_RESERVEGPUVIRTUALADDRESS,
    D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION, D3DKMT_FREEGPUVIRTUALADDRESS,
    D3DKMT_UPDATEGPUVIRTUALADDRESS,
};

/// What the first member of a reserve names in the caller's handle table: one of its paging
/// queues or one of its adapters, with the device whose VA space it is.
#[derive(Clone, Copy, Debug)]
pub enum VaHandle {
    /// A paging queue of the device.
    PagingQueue(UmsProcess),
    /// An adapter the process opened (the VA space of its device on it).
    Adapter(UmsProcess),
}

/// `D3DDDIGPUVIRTUALADDRESS_RESERVE_ZERO`.
const RESERVE_ZERO: i32 = 1;

fn bad() -> NtStatus {
    NtStatus(STATUS_INVALID_PARAMETER)
}

refusals! {
    /// `D3DKMTReserveGpuVirtualAddress`'s refusals, in 24H2's order.
    ReserveGpuVirtualAddressCheck => RESERVE_GPU_VIRTUAL_ADDRESS_CHECKS {
        Type: "ReservationType above RESERVE_ZERO" => INVALID_PARAMETER;
        Handle: "hPagingQueue neither a paging queue nor an adapter in the caller's handle table" => INVALID_PARAMETER;
        ZeroOnAdapter: "RESERVE_ZERO named by an adapter" => INVALID_PARAMETER;
        NegativeType: "a negative ReservationType" => INVALID_PARAMETER;
    }
}

/// `D3DKMTReserveGpuVirtualAddress`'s row of the thunk catalog ([`super::catalog`]).
pub const RESERVE_GPU_VIRTUAL_ADDRESS: Thunk = Thunk {
    name: "D3DKMTReserveGpuVirtualAddress",
    source: Some(&[src("DxgkReserveGpuVirtualAddress", 0x140399110)]),
    checks: RESERVE_GPU_VIRTUAL_ADDRESS_CHECKS,
    written_back: &[
        "VirtualAddress",
        "PagingFenceValue (the caller's own unless VidMm sets one)",
    ],
    pending: Pending::No,
    entry: Some("gpu_va::dxgk_reserve_gpu_virtual_address"),
    gaps: "VidMm's reserve not read in 24H2 (the simulated VidMm's rules); RESERVE_ZERO \
           is not modelled",
};

/// `DxgkReserveGpuVirtualAddress` for the caller's structure `a`, in 24H2's order:
/// 1. `ReservationType` above `RESERVE_ZERO` (a signed compare: `NO_COMMIT` and up):
///    STATUS_INVALID_PARAMETER;
/// 2. the handle neither a paging queue nor an adapter in the caller's table (`open`):
///    STATUS_INVALID_PARAMETER;
/// 3. `Reserved0` (the same member, unsigned) 1 (`RESERVE_ZERO`) named by an adapter, not a
///    paging queue, or above 1 (a negative type): STATUS_INVALID_PARAMETER;
/// 4. VidMm's reservation ([`crate::vidmm::va`]).
///
/// On success `a.VirtualAddress` is the range; `PagingFenceValue` stays as the caller wrote
/// it (24H2 copies back the captured structure's). On failure `a` is unchanged.
pub fn dxgk_reserve_gpu_virtual_address(
    m: &Machine,
    a: &mut D3DDDI_RESERVEGPUVIRTUALADDRESS,
    open: impl FnOnce(u32) -> Option<VaHandle>,
) -> Result<(), NtStatus> {
    type C = ReserveGpuVirtualAddressCheck;
    if a.ReservationType > RESERVE_ZERO {
        return Err(C::Type.refuse());
    }
    let (p, queue) = match open(a.hPagingQueue).ok_or(C::Handle.refuse())? {
        VaHandle::PagingQueue(p) => (p, true),
        VaHandle::Adapter(p) => (p, false),
    };
    let reserved0 = a.ReservationType as u32;
    if reserved0 == 1 && !queue {
        return Err(C::ZeroOnAdapter.refuse());
    }
    if reserved0 > 1 {
        return Err(C::NegativeType.refuse());
    }
    let r = ReserveGpuVa {
        base: a.BaseAddress,
        minimum: a.MinimumAddress,
        maximum: a.MaximumAddress,
        size: a.Size,
        reservation_type: a.ReservationType,
    };
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    let va = crate::vidmm::va::gpu_va_reserve(&sh, p.device, r).map_err(super::process::status)?;
    a.VirtualAddress = va;
    Ok(())
}

/// `D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE`: `SystemUseOnly` and the reserved bits above it.
const PROTECTION_REFUSED: u64 = !(GpuVaProtection::SYSTEM_USE_ONLY.0 - 1);
/// `Write`, `Execute`, `Zero`: none may go with `NoAccess`.
const PROTECTION_ACCESS: u64 =
    GpuVaProtection::WRITE.0 | GpuVaProtection::EXECUTE.0 | GpuVaProtection::ZERO.0;
/// `Zero` or `NoAccess`: a mapping of no allocation.
const PROTECTION_NO_ALLOCATION: u64 = GpuVaProtection::ZERO.0 | GpuVaProtection::NO_ACCESS.0;
/// VidMm rounds the addresses down to whole pages.
const PAGE_MASK: u64 = !(rvgpu_hw::PAGE_SIZE - 1);

refusals! {
    /// `D3DKMTMapGpuVirtualAddress`'s refusals, in 24H2's order.
    MapGpuVirtualAddressCheck => MAP_GPU_VIRTUAL_ADDRESS_CHECKS {
        Queue: "hPagingQueue not in the caller's handle table" => INVALID_PARAMETER;
        Protection: "Protection.SystemUseOnly or a reserved bit" => INVALID_PARAMETER;
        DeviceActive: "the device not active" => DEVICE_REMOVED;
        Allocation: "without Zero or NoAccess, hAllocation not in the caller's handle table" => INVALID_PARAMETER;
        NoVidMmAllocation: "hAllocation without a VidMm allocation" => INVALID_PARAMETER,
            elsewhere "not modelled: every simulated allocation has its VidMm allocation";
        OtherDevice: "hAllocation of another device than the paging queue's" => INVALID_PARAMETER;
        NoAccessWithAccess: "NoAccess with Write, Execute or Zero" => INVALID_PARAMETER;
    }
}

/// `D3DKMTMapGpuVirtualAddress`'s row of the thunk catalog ([`super::catalog`]).
pub const MAP_GPU_VIRTUAL_ADDRESS: Thunk = Thunk {
    name: "D3DKMTMapGpuVirtualAddress",
    source: Some(&[
        src("DxgkMapGpuVirtualAddress", 0x140321DB0),
        src("VIDMM_GLOBAL::VidMmMapGpuVirtualAddress", 0x1400F4F90),
    ]),
    checks: MAP_GPU_VIRTUAL_ADDRESS_CHECKS,
    written_back: &["VirtualAddress and PagingFenceValue, on success and on STATUS_PENDING"],
    pending: Pending::When("paging queued ahead on the queue: PagingFenceValue not reached"),
    entry: Some("gpu_va::dxgk_map_gpu_virtual_address"),
    gaps: "M:VIDMM_GLOBAL::VidMmMapGpuVirtualAddressInternal @0x1400F5180 read for the \
           repeat (a range longer than the allocation past OffsetInPages repeats it, as \
           modelled) and DriverProtection (passed on unchecked); its other range rules are \
           the simulated VidMm's, after 24H2's rounding of the three addresses down to 4 KiB; \
           Zero mappings are not modelled",
};

/// `DxgkMapGpuVirtualAddress` for the caller's structure `a`, in 24H2's order:
/// 1. `hPagingQueue` not a paging queue in the caller's table (`queue`: its device):
///    STATUS_INVALID_PARAMETER;
/// 2. `Protection.SystemUseOnly` or a reserved bit: STATUS_INVALID_PARAMETER;
/// 3. the paging queue's device not active (`COREDEVICEACCESS`, `kmt::lock::device_active`:
///    stopped with its adapter, or gone): STATUS_DEVICE_REMOVED. A device VidSch put in error
///    is active and maps: the DXGDEVICE's state (+608) is the only device check on the way,
///    and VidMm's map (`M:VIDMM_GLOBAL::VidMmMapGpuVirtualAddressInternal` @0x1400F5180)
///    looks at no device state;
/// 4. unless `Zero` or `NoAccess` (then no allocation is looked at): `hAllocation` not an
///    allocation in the caller's table (`allocation`: its device), or of another device than
///    the paging queue's: STATUS_INVALID_PARAMETER;
/// 5. VidMm (`VIDMM_GLOBAL::VidMmMapGpuVirtualAddress`): `NoAccess` with `Write`, `Execute`
///    or `Zero`: STATUS_INVALID_PARAMETER; then `BaseAddress`, `MinimumAddress` and
///    `MaximumAddress` rounded down to 4 KiB, and the mapping ([`crate::vidmm::va`]).
///
/// On success `a.VirtualAddress` and `a.PagingFenceValue` are VidMm's; the fence may not
/// have reached that value yet (the thunk answers STATUS_PENDING then). On failure `a` is
/// unchanged.
pub fn dxgk_map_gpu_virtual_address(
    m: &Machine,
    a: &mut D3DDDI_MAPGPUVIRTUALADDRESS,
    queue: impl FnOnce(u32) -> Option<UmsProcess>,
    allocation: impl FnOnce(u32) -> Option<KmtHandle>,
) -> Result<(), NtStatus> {
    type C = MapGpuVirtualAddressCheck;
    let p = queue(a.hPagingQueue).ok_or(C::Queue.refuse())?;
    let prot = a.Protection;
    if prot & PROTECTION_REFUSED != 0 {
        return Err(C::Protection.refuse());
    }
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    super::lock::device_active(&sh, p.device, C::DeviceActive.refuse())?;
    if prot & PROTECTION_NO_ALLOCATION == 0 {
        match allocation(a.hAllocation) {
            None => return Err(C::Allocation.refuse()),
            Some(d) if d != p.device => return Err(C::OtherDevice.refuse()),
            Some(_) => {}
        }
    }
    if prot & GpuVaProtection::NO_ACCESS.0 != 0 && prot & PROTECTION_ACCESS != 0 {
        return Err(C::NoAccessWithAccess.refuse());
    }
    let r = MapGpuVa {
        paging_queue: a.hPagingQueue,
        base: a.BaseAddress & PAGE_MASK,
        minimum: a.MinimumAddress & PAGE_MASK,
        maximum: a.MaximumAddress & PAGE_MASK,
        allocation: a.hAllocation,
        offset_in_pages: a.OffsetInPages,
        size_in_pages: a.SizeInPages,
        protection: GpuVaProtection(prot),
        driver_protection: a.DriverProtection,
    };
    // What VidMm released since its last entry goes first (AL-03), as for allocations.
    m.reap_allocations(&sh).map_err(super::process::status)?;
    let (va, fence) =
        crate::vidmm::va::gpu_va_map(m, &sh, p.device, r).map_err(super::process::status)?;
    a.VirtualAddress = va;
    a.PagingFenceValue = fence;
    Ok(())
}

refusals! {
    /// `D3DKMTFreeGpuVirtualAddress`'s refusals, in 24H2's order.
    FreeGpuVirtualAddressCheck => FREE_GPU_VIRTUAL_ADDRESS_CHECKS {
        Adapter: "hAdapter not in the caller's handle table" => INVALID_PARAMETER;
    }
}

/// `D3DKMTFreeGpuVirtualAddress`'s row of the thunk catalog ([`super::catalog`]).
pub const FREE_GPU_VIRTUAL_ADDRESS: Thunk = Thunk {
    name: "D3DKMTFreeGpuVirtualAddress",
    source: Some(&[src("DxgkFreeGpuVirtualAddress", 0x14039BD40)]),
    checks: FREE_GPU_VIRTUAL_ADDRESS_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("gpu_va::dxgk_free_gpu_virtual_address"),
    gaps: "VidMm's free not read in 24H2 (the simulated VidMm's rules)",
};

/// `DxgkFreeGpuVirtualAddress` for the caller's structure `a`, in 24H2's order:
/// 1. `hAdapter` not an adapter in the caller's table (`adapter`: the device whose VA space
///    it is): STATUS_INVALID_PARAMETER;
/// 2. VidMm's free of `[BaseAddress, BaseAddress + Size)` ([`crate::vidmm::va`]).
///
/// Nothing is written back.
pub fn dxgk_free_gpu_virtual_address(
    m: &Machine,
    a: &D3DKMT_FREEGPUVIRTUALADDRESS,
    adapter: impl FnOnce(u32) -> Option<UmsProcess>,
) -> Result<(), NtStatus> {
    let p = adapter(a.hAdapter).ok_or(FreeGpuVirtualAddressCheck::Adapter.refuse())?;
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    crate::vidmm::va::gpu_va_free(m, &sh, p.device, a.BaseAddress, a.Size)
        .map_err(super::process::status)
}

/// The Rust UMD's `D3DKMTReserveGpuVirtualAddress` (its Windows thunk names the adapter; a
/// simulated process's adapter is the one its device is on).
pub(super) fn umd_reserve(m: &Machine, p: UmsProcess, r: &ReserveGpuVa) -> Result<u64, NtStatus> {
    let mut a = D3DDDI_RESERVEGPUVIRTUALADDRESS {
        BaseAddress: r.base,
        MinimumAddress: r.minimum,
        MaximumAddress: r.maximum,
        Size: r.size,
        ReservationType: r.reservation_type,
        ..Default::default()
    };
    dxgk_reserve_gpu_virtual_address(m, &mut a, |_| Some(VaHandle::Adapter(p)))?;
    Ok(a.VirtualAddress)
}

/// The Rust UMD's `D3DKMTMapGpuVirtualAddress`: the paging queue and the allocation are
/// looked up in the device's own tables, as the caller's handle table would name them.
pub(super) fn umd_map(
    m: &Machine,
    p: UmsProcess,
    r: &MapGpuVa,
) -> Result<rvgpu_umd::kmt::MappedGpuVa, NtStatus> {
    let mut a = r.block();
    let queue_device = paging_queue_device(m, &p, r.paging_queue);
    let owner = allocation_device(m, &p, r.allocation);
    let queue = |_| (queue_device == Some(p.device)).then_some(p);
    dxgk_map_gpu_virtual_address(m, &mut a, queue, |_| owner)?;
    Ok(rvgpu_umd::kmt::MappedGpuVa {
        va: a.VirtualAddress,
        paging_fence_value: a.PagingFenceValue,
    })
}

/// The device owning live allocation `h` on `p`'s adapter (`None`: no such allocation).
pub(crate) fn allocation_device(m: &Machine, p: &UmsProcess, h: KmtHandle) -> Option<KmtHandle> {
    let sh = m.kmt(p).adapter().ok()?;
    let os = lock(&sh.ums);
    os.allocations
        .get(&h)
        .filter(|al| !al.closed)
        .map(|al| al.device)
}

/// The device owning live paging queue `h` on `p`'s adapter (`None`: no such queue).
pub(crate) fn paging_queue_device(m: &Machine, p: &UmsProcess, h: KmtHandle) -> Option<KmtHandle> {
    let sh = m.kmt(p).adapter().ok()?;
    let st = lock(&sh.mm.gpuva);
    st.queues.get(&h).map(|q| q.device)
}

/// The Rust UMD's `D3DKMTFreeGpuVirtualAddress` (the adapter, as for [`umd_reserve`]).
pub(super) fn umd_free(m: &Machine, p: UmsProcess, base: u64, size: u64) -> Result<(), NtStatus> {
    let a = D3DKMT_FREEGPUVIRTUALADDRESS {
        BaseAddress: base,
        Size: size,
        ..Default::default()
    };
    dxgk_free_gpu_virtual_address(m, &a, |_| Some(p))
}

/// `D3DKMT_UPDATEGPUVIRTUALADDRESS::Flags.DoNotWait`.
pub const UPDATE_DO_NOT_WAIT: u32 = 1 << 0;
/// `D3DDDI_UPDATEGPUVIRTUALADDRESS_MAP_PROTECT`, the last operation type.
const UPDATE_LAST_TYPE: u32 = rvgpu_umd::kmt::UPDATE_GPU_VA_MAP_PROTECT as u32;
/// Most operations one call takes: 24H2 refuses a list above 4 GiB (64 bytes each).
pub const MAX_UPDATE_OPERATIONS: u32 = 0x0400_0000;

/// What the caller's handle table and memory answer for a `D3DKMTUpdateGpuVirtualAddress`.
pub trait UpdateCaller {
    /// The device `hDevice` names (`None`: not a device in the caller's table).
    fn device(&self, h: u32) -> Option<UmsProcess>;
    /// The device of the context `hContext` names (`None`: not a context in the table).
    fn context_device(&self, h: u32) -> Option<KmtHandle>;
    /// The `n` operations at `at`, or the status of reading them.
    fn operations(
        &self,
        at: u64,
        n: u32,
    ) -> Result<Vec<D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION>, NtStatus>;
    /// The device of the allocation `h` names on the adapter (`None`: not an allocation in
    /// the table).
    fn allocation_device(&self, h: u32) -> Option<KmtHandle>;
    /// The device and the monitored fence `h` names (`None`: not a sync object in the table).
    fn fence(&self, h: u32) -> Option<(KmtHandle, crate::sync::fence::MonitoredFence)>;
}

refusals! {
    /// `D3DKMTUpdateGpuVirtualAddress`'s refusals, in 24H2's order.
    UpdateGpuVirtualAddressCheck => UPDATE_GPU_VIRTUAL_ADDRESS_CHECKS {
        StructureUnreadable: "the structure not readable" => ACCESS_VIOLATION,
            elsewhere "the thunk bridge copies the structure in before the entry";
        NumOperations: "NumOperations 0" => INVALID_PARAMETER;
        Device: "hDevice not in the caller's handle table" => INVALID_PARAMETER;
        Context: "hContext not in the caller's handle table" => INVALID_PARAMETER;
        ContextOtherDevice: "hContext of another device than hDevice" => INVALID_PARAMETER;
        DeviceActive: "the device not active" => DEVICE_REMOVED,
            elsewhere "VidMm's update (`vidmm::va::update`) makes it";
        NoGpuVa: "the adapter without GPU virtual addressing" => INVALID_PARAMETER,
            elsewhere "VidMm's update (`vidmm::va::update`) makes it";
        NoSchedulerContext: "the context without a VidSch or a VidMm context" => INVALID_PARAMETER,
            elsewhere "VidMm's update (`vidmm::va::update`) makes it";
        TooMany: "NumOperations times 64 bytes above 4 GiB" => INVALID_PARAMETER;
        OperationsPool: "no pool for the operations" => NO_MEMORY,
            elsewhere "not modelled: the simulated pool does not run out";
        OperationsUnreadable: "Operations not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`UpdateCaller::operations`)";
        Type: "an operation's Type above MAP_PROTECT" => INVALID_PARAMETER;
        MapWithoutAllocation: "a MAP or MAP_PROTECT with hAllocation 0" => INVALID_PARAMETER;
        ReferencesPool: "no pool for the allocation references" => NO_MEMORY,
            elsewhere "not modelled: the simulated pool does not run out";
        Allocation: "an hAllocation not in the caller's handle table" => INVALID_PARAMETER;
        AllocationOtherAdapter: "an hAllocation of another adapter than hDevice's" => INVALID_PARAMETER,
            elsewhere "VidMm's update (`vidmm::va::update`) makes it";
        Fence: "hFenceObject not a device sync object in the caller's handle table" => INVALID_PARAMETER;
        FenceOtherDevice: "hFenceObject of another device than hDevice" => INVALID_PARAMETER;
        Range: "an operation's range wrapping, empty, not 4 KiB aligned or past the top of the \
            space" => INVALID_PARAMETER,
            elsewhere "VidMm's update (`vidmm::va::update`) makes it";
        MapOffset: "a MAP's AllocationOffsetInBytes or AllocationSizeInBytes not 4 KiB aligned, \
            above SizeInBytes or not dividing it" => INVALID_PARAMETER,
            elsewhere "VidMm's update (`vidmm::va::update`) makes it";
        MapPastEnd: "a MAP's allocation range past the allocation's end" => INVALID_PARAMETER,
            elsewhere "VidMm's update (`vidmm::va::update`) makes it";
        CopyOverlap: "a COPY whose source overlaps its destination" => INVALID_PARAMETER,
            elsewhere "VidMm's update (`vidmm::va::update`) makes it";
        NotReserved: "the targets or the COPY sources not in one range the process reserved" => INVALID_PARAMETER,
            elsewhere "VidMm's update (`vidmm::va::update`) makes it";
    }
}

/// `D3DKMTUpdateGpuVirtualAddress`'s row of the thunk catalog ([`super::catalog`]).
pub const UPDATE_GPU_VIRTUAL_ADDRESS: Thunk = Thunk {
    name: "D3DKMTUpdateGpuVirtualAddress",
    source: Some(&[
        src("DxgkUpdateGpuVirtualAddress", 0x1402F7A50),
        src("VIDMM_GLOBAL::VidMmUpdateGpuVirtualAddress", 0x1400E34AC),
    ]),
    checks: UPDATE_GPU_VIRTUAL_ADDRESS_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("gpu_va::dxgk_update_gpu_virtual_address"),
    gaps: "24H2 queues the fence wait and the update on hContext's VidSch companion \
           context (K:DXGCONTEXT::GetVidSchCompanionContext @0x1402F8DA0, a VidSch context of \
           its own); the simulation has one VidSch-side wait per update and orders updates \
           per hContext only: whether 24H2's companion context also runs behind hContext's \
           own earlier submissions is not read, and here it does not; the companion \
           context's semaphore (a call while one is in flight fails at once) is not \
           modelled; hFenceObject must be a monitored fence (a native fence is \
           STATUS_INVALID_PARAMETER here) and the simulated runtime's fences count as \
           hDevice's; VidMm's IsRangeValid is taken as the range not wrapping, not empty, \
           page aligned and below the top of the space; MAP_PROTECT's Protection follows \
           Map's rules and an UNMAP without NoAccess (a zero range) is refused, where 24H2 \
           hands them on unchecked; a COPY's re-made mappings keep their sources' \
           DriverProtection (what 24H2's COPY hands the driver is not read); the adapter \
           and context checks 24H2 makes on VidSch and VidMm objects have no case (every \
           adapter and context here has them)",
};

/// `DxgkUpdateGpuVirtualAddress` (`K:DxgkUpdateGpuVirtualAddress` @0x1402F7A50) for the
/// caller's structure `a`, in 24H2's order, STATUS_INVALID_PARAMETER unless said:
/// 1. `NumOperations` 0; `hDevice` not a device of the caller; `hContext` not a context of
///    the caller, or of another device; the device not active (STATUS_DEVICE_REMOVED);
///    `NumOperations` times 64 bytes above 4 GiB; `Operations` not readable (its status);
/// 2. every operation: a type above `MAP_PROTECT`, or a MAP / MAP_PROTECT with
///    `hAllocation` 0; then every MAP / MAP_PROTECT's `hAllocation` not an allocation of the
///    caller;
/// 3. `hFenceObject` not a sync object of the caller, or of another device than `hDevice`;
/// 4. VidMm (`vidmm::va::update`): its checks, then the update queued. It returns
///    before the update is applied: the caller waits for `hFenceObject` to reach
///    `FenceValue + 1` before it relies on the mappings.
///
/// Nothing is written back.
pub fn dxgk_update_gpu_virtual_address(
    m: &Machine,
    a: &D3DKMT_UPDATEGPUVIRTUALADDRESS,
    caller: &dyn UpdateCaller,
) -> Result<(), NtStatus> {
    type C = UpdateGpuVirtualAddressCheck;
    if a.NumOperations == 0 {
        return Err(C::NumOperations.refuse());
    }
    let p = caller.device(a.hDevice).ok_or(C::Device.refuse())?;
    match caller.context_device(a.hContext) {
        None => return Err(C::Context.refuse()),
        Some(d) if d != p.device => return Err(C::ContextOtherDevice.refuse()),
        Some(_) => {}
    }
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    crate::vidmm::va::update::update_device(&sh, p.device).map_err(super::process::status)?;
    if a.NumOperations > MAX_UPDATE_OPERATIONS {
        return Err(C::TooMany.refuse());
    }
    let raw = caller.operations(a.Operations, a.NumOperations)?;
    let map = |t: i32| {
        t == rvgpu_umd::kmt::UPDATE_GPU_VA_MAP || t == rvgpu_umd::kmt::UPDATE_GPU_VA_MAP_PROTECT
    };
    for o in &raw {
        if o.OperationType as u32 > UPDATE_LAST_TYPE {
            return Err(C::Type.refuse());
        }
        if map(o.OperationType) && o.hAllocation == 0 {
            return Err(C::MapWithoutAllocation.refuse());
        }
    }
    let owners = raw
        .iter()
        .map(|o| match map(o.OperationType) {
            true => caller.allocation_device(o.hAllocation).map(Some),
            false => Some(None),
        })
        .collect::<Option<Vec<_>>>()
        .ok_or(C::Allocation.refuse())?;
    let (fence_device, fence) = caller.fence(a.hFenceObject).ok_or(C::Fence.refuse())?;
    if fence_device != p.device {
        return Err(C::FenceOtherDevice.refuse());
    }
    let ops: Vec<UpdateGpuVaOp> = raw.iter().map(update_op).collect();
    // What VidMm released since its last entry goes first (AL-03), as for Map.
    m.reap_allocations(&sh).map_err(super::process::status)?;
    let c = crate::vidmm::va::update::UpdateCall {
        device: p.device,
        context: a.hContext,
        fence,
        fence_value: a.FenceValue,
        do_not_wait: a.Flags & UPDATE_DO_NOT_WAIT != 0,
        ops: &ops,
        owners: &owners,
    };
    crate::vidmm::va::update::gpu_va_update(&sh, c).map_err(super::process::status)
}

/// One operation as VidMm reads it: the union member its type names.
fn update_op(o: &D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION) -> UpdateGpuVaOp {
    let mut op = UpdateGpuVaOp {
        operation_type: o.OperationType,
        base: o.BaseAddress,
        size: o.SizeInBytes,
        ..UpdateGpuVaOp::default()
    };
    match o.OperationType {
        rvgpu_umd::kmt::UPDATE_GPU_VA_UNMAP => op.protection = GpuVaProtection(o.operand()),
        rvgpu_umd::kmt::UPDATE_GPU_VA_COPY => op.dest = o.operand(),
        _ => {
            op.allocation = o.hAllocation;
            op.allocation_offset = o.AllocationOffsetInBytes;
            op.allocation_size = o.AllocationSizeInBytes;
            if o.OperationType == rvgpu_umd::kmt::UPDATE_GPU_VA_MAP_PROTECT {
                op.protection = GpuVaProtection(o.Protection);
                op.driver_protection = o.DriverProtection;
            }
        }
    }
    op
}

/// The Rust UMD's `D3DKMTUpdateGpuVirtualAddress`, as its Windows thunk fills the structure;
/// the handles are looked up as the caller's handle table would name them (objects of `p`'s
/// process).
pub(super) fn umd_update(
    m: &Machine,
    p: UmsProcess,
    u: &rvgpu_umd::kmt::UpdateGpuVa,
    ops: &[UpdateGpuVaOp],
) -> Result<(), NtStatus> {
    let raw: Vec<D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION> = ops.iter().map(raw_op).collect();
    let a = D3DKMT_UPDATEGPUVIRTUALADDRESS {
        hDevice: p.device,
        hContext: u.context,
        hFenceObject: u.fence,
        NumOperations: u32::try_from(raw.len()).map_err(|_| bad())?,
        FenceValue: u.fence_value,
        Flags: if u.do_not_wait { UPDATE_DO_NOT_WAIT } else { 0 },
        ..Default::default()
    };
    let caller = UmdCaller { m, p, raw };
    dxgk_update_gpu_virtual_address(m, &a, &caller)
}

/// The operation as the UMD's Windows thunk lays it out (`umd/src/kmt_windows/layout.rs`).
fn raw_op(op: &UpdateGpuVaOp) -> D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION {
    let operand = match op.operation_type {
        rvgpu_umd::kmt::UPDATE_GPU_VA_UNMAP => op.protection.0,
        rvgpu_umd::kmt::UPDATE_GPU_VA_COPY => op.dest,
        _ => u64::from(op.allocation),
    };
    let mut raw = D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION {
        OperationType: op.operation_type,
        BaseAddress: op.base,
        SizeInBytes: op.size,
        AllocationOffsetInBytes: op.allocation_offset,
        AllocationSizeInBytes: op.allocation_size,
        Protection: op.protection.0,
        DriverProtection: op.driver_protection,
        ..Default::default()
    };
    raw.set_operand(operand);
    raw
}

/// The Rust UMD's process as [`UpdateCaller`]: its device, and the objects of its process.
struct UmdCaller<'m> {
    m: &'m Machine,
    p: UmsProcess,
    raw: Vec<D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION>,
}

impl UmdCaller<'_> {
    /// Whether `device` is a device of this process.
    fn ours(&self, device: KmtHandle) -> bool {
        let Ok(sh) = self.m.kmt(&self.p).adapter() else {
            return false;
        };
        let os = lock(&sh.ums);
        let pid = |d: &KmtHandle| os.devices.get(d).map(|d| d.process);
        pid(&device).is_some() && pid(&device) == pid(&self.p.device)
    }
}

impl UpdateCaller for UmdCaller<'_> {
    fn device(&self, h: u32) -> Option<UmsProcess> {
        (h == self.p.device).then_some(self.p)
    }
    fn context_device(&self, h: u32) -> Option<KmtHandle> {
        let sh = self.m.kmt(&self.p).adapter().ok()?;
        crate::ums::context_device(&sh, h).filter(|d| self.ours(*d))
    }
    fn operations(
        &self,
        _: u64,
        _: u32,
    ) -> Result<Vec<D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION>, NtStatus> {
        Ok(self.raw.clone())
    }
    fn allocation_device(&self, h: u32) -> Option<KmtHandle> {
        allocation_device(self.m, &self.p, h).filter(|d| self.ours(*d))
    }
    fn fence(&self, h: u32) -> Option<(KmtHandle, crate::sync::fence::MonitoredFence)> {
        let sh = self.m.kmt(&self.p).adapter().ok()?;
        // A fence of the process: the simulated runtime cannot tell its devices' apart.
        crate::ums::fence_of(&sh, self.p.device, h).map(|f| (self.p.device, f))
    }
}
