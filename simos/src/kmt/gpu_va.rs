//! The GPU virtual-address thunks' kernel entries, as 24H2 answers them:
//! `D3DKMTReserveGpuVirtualAddress` (`K:DxgkReserveGpuVirtualAddress` @0x140399110),
//! `D3DKMTMapGpuVirtualAddress` (`K:DxgkMapGpuVirtualAddress` @0x140321DB0, then
//! `M:VIDMM_GLOBAL::VidMmMapGpuVirtualAddress` @0x1400F4F90) and
//! `D3DKMTFreeGpuVirtualAddress` (`K:DxgkFreeGpuVirtualAddress` @0x14039BD40): the caller's
//! structure as written, the checks in 24H2's order with their statuses, then the simulated
//! VidMm ([`crate::vidmm::va`]), and back exactly the fields 24H2 writes.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_umd::kmt::{GpuVaProtection, KmtHandle, MapGpuVa, NtStatus, ReserveGpuVa};

use crate::base::lock::lock;
use crate::machine::Machine;
use crate::ums::UmsProcess;

/// `D3DDDI_RESERVEGPUVIRTUALADDRESS` in the released x64 layout (72 bytes).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct D3dddiReserveGpuVirtualAddress {
    /// `hPagingQueue` / `hAdapter` (a union: 24H2 opens the handle as either).
    pub h_paging_queue: u32,
    /// Alignment.
    pub _pad0: u32,
    /// `BaseAddress` (in).
    pub base_address: u64,
    /// `MinimumAddress` (in).
    pub minimum_address: u64,
    /// `MaximumAddress` (in).
    pub maximum_address: u64,
    /// `Size` (in).
    pub size: u64,
    /// `ReservationType` / `Reserved0` (a union, in).
    pub reservation_type: i32,
    /// Alignment.
    pub _pad1: u32,
    /// `DriverProtection` (in).
    pub driver_protection: u64,
    /// `VirtualAddress` (out).
    pub virtual_address: u64,
    /// `PagingFenceValue` (out).
    pub paging_fence_value: u64,
}

/// `D3DDDI_MAPGPUVIRTUALADDRESS` in the released x64 layout (104 bytes).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct D3dddiMapGpuVirtualAddress {
    /// `hPagingQueue` (in).
    pub h_paging_queue: u32,
    /// Alignment.
    pub _pad0: u32,
    /// `BaseAddress` (in).
    pub base_address: u64,
    /// `MinimumAddress` (in).
    pub minimum_address: u64,
    /// `MaximumAddress` (in).
    pub maximum_address: u64,
    /// `hAllocation` (in).
    pub h_allocation: u32,
    /// Alignment.
    pub _pad1: u32,
    /// `OffsetInPages` (in).
    pub offset_in_pages: u64,
    /// `SizeInPages` (in).
    pub size_in_pages: u64,
    /// `Protection` (`D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE`, in).
    pub protection: u64,
    /// `DriverProtection` (in).
    pub driver_protection: u64,
    /// `Reserved0` (in).
    pub reserved0: u32,
    /// Alignment.
    pub _pad2: u32,
    /// `Reserved1` (in).
    pub reserved1: u64,
    /// `VirtualAddress` (out).
    pub virtual_address: u64,
    /// `PagingFenceValue` (out).
    pub paging_fence_value: u64,
}

/// `D3DKMT_FREEGPUVIRTUALADDRESS` in the released x64 layout (24 bytes).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct D3dkmtFreeGpuVirtualAddress {
    /// `hAdapter` (in).
    pub h_adapter: u32,
    /// Alignment.
    pub _pad0: u32,
    /// `BaseAddress` (in).
    pub base_address: u64,
    /// `Size` (in).
    pub size: u64,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(offset_of!(D3dddiReserveGpuVirtualAddress, size) == 32);
    assert!(offset_of!(D3dddiReserveGpuVirtualAddress, reservation_type) == 40);
    assert!(offset_of!(D3dddiReserveGpuVirtualAddress, virtual_address) == 56);
    assert!(offset_of!(D3dddiReserveGpuVirtualAddress, paging_fence_value) == 64);
    assert!(size_of::<D3dddiReserveGpuVirtualAddress>() == 72);
    assert!(offset_of!(D3dddiMapGpuVirtualAddress, h_allocation) == 32);
    assert!(offset_of!(D3dddiMapGpuVirtualAddress, protection) == 56);
    assert!(offset_of!(D3dddiMapGpuVirtualAddress, reserved0) == 72);
    assert!(offset_of!(D3dddiMapGpuVirtualAddress, virtual_address) == 88);
    assert!(offset_of!(D3dddiMapGpuVirtualAddress, paging_fence_value) == 96);
    assert!(size_of::<D3dddiMapGpuVirtualAddress>() == 104);
    assert!(offset_of!(D3dkmtFreeGpuVirtualAddress, size) == 16);
    assert!(size_of::<D3dkmtFreeGpuVirtualAddress>() == 24);
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

/// `DxgkReserveGpuVirtualAddress` for the caller's structure `a`, in 24H2's order:
/// 1. `ReservationType` above `RESERVE_ZERO` (a signed compare: `NO_COMMIT` and up):
///    STATUS_INVALID_PARAMETER;
/// 2. the handle neither a paging queue nor an adapter in the caller's table (`open`):
///    STATUS_INVALID_PARAMETER;
/// 3. `Reserved0` (the same member, unsigned) 1 (`RESERVE_ZERO`) named by an adapter, not a
///    paging queue, or above 1 (a negative type): STATUS_INVALID_PARAMETER;
/// 4. VidMm's reservation ([`crate::vidmm::va`]).
///
/// On success `a.virtual_address` is the range; `PagingFenceValue` stays as the caller wrote
/// it (24H2 copies back the captured structure's). On failure `a` is unchanged.
pub fn dxgk_reserve_gpu_virtual_address(
    m: &Machine,
    a: &mut D3dddiReserveGpuVirtualAddress,
    open: impl FnOnce(u32) -> Option<VaHandle>,
) -> Result<(), NtStatus> {
    if a.reservation_type > RESERVE_ZERO {
        return Err(bad());
    }
    let (p, queue) = match open(a.h_paging_queue).ok_or_else(bad)? {
        VaHandle::PagingQueue(p) => (p, true),
        VaHandle::Adapter(p) => (p, false),
    };
    let reserved0 = a.reservation_type as u32;
    if (reserved0 == 1 && !queue) || reserved0 > 1 {
        return Err(bad());
    }
    let r = ReserveGpuVa {
        base: a.base_address,
        minimum: a.minimum_address,
        maximum: a.maximum_address,
        size: a.size,
        reservation_type: a.reservation_type,
    };
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    let va = crate::vidmm::va::gpu_va_reserve(&sh, p.device, r).map_err(super::status)?;
    a.virtual_address = va;
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

/// `DxgkMapGpuVirtualAddress` for the caller's structure `a`, in 24H2's order:
/// 1. `hPagingQueue` not a paging queue in the caller's table (`queue`: its device):
///    STATUS_INVALID_PARAMETER;
/// 2. `Protection.SystemUseOnly` or a reserved bit: STATUS_INVALID_PARAMETER;
/// 3. unless `Zero` or `NoAccess` (then no allocation is looked at): `hAllocation` not an
///    allocation in the caller's table (`allocation`: its device), or of another device than
///    the paging queue's: STATUS_INVALID_PARAMETER;
/// 4. VidMm (`VIDMM_GLOBAL::VidMmMapGpuVirtualAddress`): `NoAccess` with `Write`, `Execute`
///    or `Zero`: STATUS_INVALID_PARAMETER; then `BaseAddress`, `MinimumAddress` and
///    `MaximumAddress` rounded down to 4 KiB, and the mapping ([`crate::vidmm::va`]).
///
/// On success `a.virtual_address` and `a.paging_fence_value` are VidMm's; the fence may not
/// have reached that value yet (the thunk answers STATUS_PENDING then). On failure `a` is
/// unchanged.
pub fn dxgk_map_gpu_virtual_address(
    m: &Machine,
    a: &mut D3dddiMapGpuVirtualAddress,
    queue: impl FnOnce(u32) -> Option<UmsProcess>,
    allocation: impl FnOnce(u32) -> Option<KmtHandle>,
) -> Result<(), NtStatus> {
    let p = queue(a.h_paging_queue).ok_or_else(bad)?;
    let prot = a.protection;
    if prot & PROTECTION_REFUSED != 0 {
        return Err(bad());
    }
    if prot & PROTECTION_NO_ALLOCATION == 0 && allocation(a.h_allocation) != Some(p.device) {
        return Err(bad());
    }
    if prot & GpuVaProtection::NO_ACCESS.0 != 0 && prot & PROTECTION_ACCESS != 0 {
        return Err(bad());
    }
    let r = MapGpuVa {
        paging_queue: a.h_paging_queue,
        base: a.base_address & PAGE_MASK,
        minimum: a.minimum_address & PAGE_MASK,
        maximum: a.maximum_address & PAGE_MASK,
        allocation: a.h_allocation,
        offset_in_pages: a.offset_in_pages,
        size_in_pages: a.size_in_pages,
        protection: GpuVaProtection(prot),
    };
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    // What VidMm released since its last entry goes first (AL-03), as for allocations.
    m.reap_allocations(&sh).map_err(super::status)?;
    let (va, fence) = crate::vidmm::va::gpu_va_map(m, &sh, p.device, r).map_err(super::status)?;
    a.virtual_address = va;
    a.paging_fence_value = fence;
    Ok(())
}

/// `DxgkFreeGpuVirtualAddress` for the caller's structure `a`, in 24H2's order:
/// 1. `hAdapter` not an adapter in the caller's table (`adapter`: the device whose VA space
///    it is): STATUS_INVALID_PARAMETER;
/// 2. VidMm's free of `[BaseAddress, BaseAddress + Size)` ([`crate::vidmm::va`]).
///
/// Nothing is written back.
pub fn dxgk_free_gpu_virtual_address(
    m: &Machine,
    a: &D3dkmtFreeGpuVirtualAddress,
    adapter: impl FnOnce(u32) -> Option<UmsProcess>,
) -> Result<(), NtStatus> {
    let p = adapter(a.h_adapter).ok_or_else(bad)?;
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    crate::vidmm::va::gpu_va_free(m, &sh, p.device, a.base_address, a.size).map_err(super::status)
}

/// The Rust UMD's `D3DKMTReserveGpuVirtualAddress` (its Windows thunk names the adapter; a
/// simulated process's adapter is the one its device is on).
pub(super) fn umd_reserve(m: &Machine, p: UmsProcess, r: &ReserveGpuVa) -> Result<u64, NtStatus> {
    let mut a = D3dddiReserveGpuVirtualAddress {
        base_address: r.base,
        minimum_address: r.minimum,
        maximum_address: r.maximum,
        size: r.size,
        reservation_type: r.reservation_type,
        ..Default::default()
    };
    dxgk_reserve_gpu_virtual_address(m, &mut a, |_| Some(VaHandle::Adapter(p)))?;
    Ok(a.virtual_address)
}

/// The Rust UMD's `D3DKMTMapGpuVirtualAddress`: the paging queue and the allocation are
/// looked up in the device's own tables, as the caller's handle table would name them.
pub(super) fn umd_map(
    m: &Machine,
    p: UmsProcess,
    r: &MapGpuVa,
) -> Result<rvgpu_umd::kmt::MappedGpuVa, NtStatus> {
    let mut a = D3dddiMapGpuVirtualAddress {
        h_paging_queue: r.paging_queue,
        base_address: r.base,
        minimum_address: r.minimum,
        maximum_address: r.maximum,
        h_allocation: r.allocation,
        offset_in_pages: r.offset_in_pages,
        size_in_pages: r.size_in_pages,
        protection: r.protection.0,
        ..Default::default()
    };
    let queue_device = paging_queue_device(m, &p, r.paging_queue);
    let owner = allocation_device(m, &p, r.allocation);
    let queue = |_| (queue_device == Some(p.device)).then_some(p);
    dxgk_map_gpu_virtual_address(m, &mut a, queue, |_| owner)?;
    Ok(rvgpu_umd::kmt::MappedGpuVa {
        va: a.virtual_address,
        paging_fence_value: a.paging_fence_value,
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
    let a = D3dkmtFreeGpuVirtualAddress {
        base_address: base,
        size,
        ..Default::default()
    };
    dxgk_free_gpu_virtual_address(m, &a, |_| Some(p))
}
