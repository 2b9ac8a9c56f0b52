//! The GPU virtual-address thunks: `D3DKMTReserveGpuVirtualAddress`,
//! `D3DKMTMapGpuVirtualAddress`, `D3DKMTFreeGpuVirtualAddress`.

use super::*;

/// `D3DDDI_RESERVEGPUVIRTUALADDRESS` (from user mode the first member is `hAdapter`).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug)]
#[repr(C)]
struct ReserveGpuVirtualAddress {
    h_adapter: u32,
    _pad0: u32,
    base_address: u64,
    minimum_address: u64,
    maximum_address: u64,
    size: u64,
    reservation_type: i32,
    _pad1: u32,
    driver_protection: u64,
    virtual_address: u64,
    paging_fence_value: u64,
}

/// `D3DDDI_MAPGPUVIRTUALADDRESS`.
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug)]
#[repr(C)]
struct MapGpuVirtualAddress {
    h_paging_queue: u32,
    _pad0: u32,
    base_address: u64,
    minimum_address: u64,
    maximum_address: u64,
    h_allocation: u32,
    _pad1: u32,
    offset_in_pages: u64,
    size_in_pages: u64,
    protection: u64,
    driver_protection: u64,
    reserved0: u32,
    _pad2: u32,
    reserved1: u64,
    virtual_address: u64,
    paging_fence_value: u64,
}

/// `D3DKMT_FREEGPUVIRTUALADDRESS`.
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug)]
#[repr(C)]
struct FreeGpuVirtualAddress {
    h_adapter: u32,
    _pad0: u32,
    base_address: u64,
    size: u64,
}

// The layouts the DLL's side asserts (umd/src/kmt_windows/layout.rs).
const _: () = {
    assert!(size_of::<ReserveGpuVirtualAddress>() == 72);
    assert!(offset_of!(ReserveGpuVirtualAddress, reservation_type) == 40);
    assert!(offset_of!(ReserveGpuVirtualAddress, virtual_address) == 56);
    assert!(size_of::<MapGpuVirtualAddress>() == 104);
    assert!(offset_of!(MapGpuVirtualAddress, h_allocation) == 32);
    assert!(offset_of!(MapGpuVirtualAddress, protection) == 56);
    assert!(offset_of!(MapGpuVirtualAddress, virtual_address) == 88);
    assert!(offset_of!(MapGpuVirtualAddress, paging_fence_value) == 96);
    assert!(size_of::<FreeGpuVirtualAddress>() == 24);
};

/// A live device of this process on the adapter it opened as `h_adapter`: the VA thunks name
/// the process's GPU VA space on that adapter, which all its devices there share (24H2's
/// per-process, per-adapter space, `K:DXGPROCESS_RENDER_ADAPTER_INFO::Initialize`
/// @0x1403ACC00), so any of them reaches it. No device there: STATUS_INVALID_PARAMETER.
fn va_device(p: &UserProcess, h_adapter: u32) -> Result<Device, u32> {
    let hs = lock(&p.handles);
    let i = *hs
        .adapters
        .get(&h_adapter)
        .ok_or(STATUS_INVALID_PARAMETER)?;
    hs.devices
        .values()
        .filter(|d| d.sim.adapter == i)
        .min_by_key(|d| d.sim.device)
        .copied()
        .ok_or(STATUS_INVALID_PARAMETER)
}

/// `D3DKMTReserveGpuVirtualAddress`: the simulated VidMm's reservation in the device's VA
/// space; writes `VirtualAddress`.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtreservegpuvirtualaddress>
pub(super) fn reserve_gpu_virtual_address(p: &UserProcess, at: u64) -> Status {
    let a: ReserveGpuVirtualAddress = args(at)?;
    probe_out::<ReserveGpuVirtualAddress>(at)?;
    let d = va_device(p, a.h_adapter)?;
    let r = rvgpu_umd::kmt::ReserveGpuVa {
        base: a.base_address,
        minimum: a.minimum_address,
        maximum: a.maximum_address,
        size: a.size,
        reservation_type: a.reservation_type,
    };
    let va = p.kmt(d).reserve_gpu_va(&r).map_err(nt)?;
    put(
        at,
        offset_of!(ReserveGpuVirtualAddress, virtual_address),
        &va,
    )
}

/// `D3DKMTMapGpuVirtualAddress` on a paging queue of this process (the allocation must be
/// the same device's, which the simulated VidMm checks); writes `VirtualAddress` and
/// `PagingFenceValue`, and answers STATUS_PENDING while the paging fence is below it (work
/// queued ahead on the queue, `vidmm::va::paging_queue`), as 24H2 passes VidMm's status
/// through (`K:DxgkMapGpuVirtualAddress` @0x140321DB0).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtmapgpuvirtualaddress>
pub(super) fn map_gpu_virtual_address(p: &UserProcess, at: u64) -> Status {
    let a: MapGpuVirtualAddress = args(at)?;
    probe_out::<MapGpuVirtualAddress>(at)?;
    let d = p.owner(a.h_paging_queue)?;
    let r = rvgpu_umd::kmt::MapGpuVa {
        paging_queue: a.h_paging_queue,
        base: a.base_address,
        minimum: a.minimum_address,
        maximum: a.maximum_address,
        allocation: a.h_allocation,
        offset_in_pages: a.offset_in_pages,
        size_in_pages: a.size_in_pages,
        protection: rvgpu_umd::kmt::GpuVaProtection(a.protection),
    };
    let k = p.kmt(d);
    let m = k.map_gpu_va(&r).map_err(nt)?;
    put(at, offset_of!(MapGpuVirtualAddress, virtual_address), &m.va)?;
    put(
        at,
        offset_of!(MapGpuVirtualAddress, paging_fence_value),
        &m.paging_fence_value,
    )?;
    if k.paging_fence_reached(a.h_paging_queue, m.paging_fence_value) {
        Ok(())
    } else {
        Err(rvgpu_ddi::ntstatus::STATUS_PENDING as u32)
    }
}

/// `D3DKMTFreeGpuVirtualAddress`: the range at `BaseAddress` of the device's VA space.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtfreegpuvirtualaddress>
pub(super) fn free_gpu_virtual_address(p: &UserProcess, at: u64) -> Status {
    let a: FreeGpuVirtualAddress = args(at)?;
    let d = va_device(p, a.h_adapter)?;
    p.kmt(d).free_gpu_va(a.base_address, a.size).map_err(nt)
}
