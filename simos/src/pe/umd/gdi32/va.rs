//! The GPU virtual-address thunks: `D3DKMTReserveGpuVirtualAddress`,
//! `D3DKMTMapGpuVirtualAddress`, `D3DKMTFreeGpuVirtualAddress`,
//! `D3DKMTUpdateGpuVirtualAddress`. Each copies the caller's
//! structure to the thunk's kernel entry ([`crate::kmt::gpu_va`], 24H2's checks in 24H2's
//! order), resolving the handles in this process's table, and writes back what the entry
//! gives.

use std::mem::offset_of;

use super::common::*;
use crate::base::lock::lock;
use crate::kmt::gpu_va::{
    dxgk_free_gpu_virtual_address, dxgk_map_gpu_virtual_address, dxgk_reserve_gpu_virtual_address,
    dxgk_update_gpu_virtual_address, VaHandle, D3DDDI_MAPGPUVIRTUALADDRESS,
    D3DDDI_RESERVEGPUVIRTUALADDRESS, D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION,
    D3DKMT_FREEGPUVIRTUALADDRESS, D3DKMT_UPDATEGPUVIRTUALADDRESS,
};
use crate::pe::umd::guest;
use crate::pe::umd::process::{Device, UserProcess};

/// A live device of this process on the adapter it opened as `h_adapter`: the VA thunks name
/// the process's GPU VA space on that adapter, which all its devices there share (24H2's
/// per-process, per-adapter space, `K:DXGPROCESS_RENDER_ADAPTER_INFO::Initialize`
/// @0x1403ACC00), so any of them reaches it. None: the handle names no such space.
fn va_device(p: &UserProcess, h_adapter: u32) -> Option<Device> {
    let hs = lock(&p.handles);
    let i = *hs.adapters.get(&h_adapter)?;
    hs.devices
        .values()
        .filter(|d| d.sim.adapter == i)
        .min_by_key(|d| d.sim.device)
        .copied()
}

/// The device of paging queue `h` of this process.
fn paging_queue_device(p: &UserProcess, h: u32) -> Option<Device> {
    if !lock(&p.handles).paging.contains_key(&h) {
        return None;
    }
    p.owner(h).ok()
}

/// `D3DKMTReserveGpuVirtualAddress`: the first member names a paging queue or an adapter of
/// this process (24H2 opens it as either); writes `VirtualAddress`.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtreservegpuvirtualaddress>
pub(super) fn reserve_gpu_virtual_address(p: &UserProcess, at: u64) -> Status {
    let mut a: D3DDDI_RESERVEGPUVIRTUALADDRESS = args(at)?;
    probe_out::<D3DDDI_RESERVEGPUVIRTUALADDRESS>(at)?;
    let open = |h: u32| match paging_queue_device(p, h) {
        Some(d) => Some(VaHandle::PagingQueue(d.sim)),
        None => va_device(p, h).map(|d| VaHandle::Adapter(d.sim)),
    };
    dxgk_reserve_gpu_virtual_address(&p.machine, &mut a, open).map_err(nt)?;
    put(
        at,
        offset_of!(D3DDDI_RESERVEGPUVIRTUALADDRESS, VirtualAddress),
        &a.VirtualAddress,
    )
}

/// `D3DKMTMapGpuVirtualAddress` on a paging queue of this process; writes `VirtualAddress`
/// and `PagingFenceValue`, and answers STATUS_PENDING while the paging fence is below it
/// (work queued ahead on the queue, `vidmm::va::paging_queue`), as 24H2 passes VidMm's status
/// through and writes both back on it (`K:DxgkMapGpuVirtualAddress` @0x140321DB0).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtmapgpuvirtualaddress>
pub(super) fn map_gpu_virtual_address(p: &UserProcess, at: u64) -> Status {
    let mut a: D3DDDI_MAPGPUVIRTUALADDRESS = args(at)?;
    probe_out::<D3DDDI_MAPGPUVIRTUALADDRESS>(at)?;
    let queue = |h: u32| paging_queue_device(p, h).map(|d| d.sim);
    // An allocation in this process's table: one of its devices' live allocations.
    let allocation = |h: u32| {
        let d = p.owner(h).ok()?;
        crate::kmt::gpu_va::allocation_device(&p.machine, &d.sim, h)
    };
    dxgk_map_gpu_virtual_address(&p.machine, &mut a, queue, allocation).map_err(nt)?;
    let out = offset_of!(D3DDDI_MAPGPUVIRTUALADDRESS, VirtualAddress);
    put(at, out, &a.VirtualAddress)?;
    let fence = offset_of!(D3DDDI_MAPGPUVIRTUALADDRESS, PagingFenceValue);
    put(at, fence, &a.PagingFenceValue)?;
    let d = paging_queue_device(p, a.hPagingQueue).ok_or(STATUS_INVALID_PARAMETER)?;
    if p.kmt(d)
        .paging_fence_reached(a.hPagingQueue, a.PagingFenceValue)
    {
        Ok(())
    } else {
        Err(rvgpu_ddi::ntstatus::STATUS_PENDING as u32)
    }
}

/// `D3DKMTFreeGpuVirtualAddress`: the range at `BaseAddress` of the VA space of the device on
/// adapter `hAdapter`.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtfreegpuvirtualaddress>
pub(super) fn free_gpu_virtual_address(p: &UserProcess, at: u64) -> Status {
    let a: D3DKMT_FREEGPUVIRTUALADDRESS = args(at)?;
    let adapter = |h: u32| va_device(p, h).map(|d| d.sim);
    dxgk_free_gpu_virtual_address(&p.machine, &a, adapter).map_err(nt)
}

/// The DLL's process as `D3DKMTUpdateGpuVirtualAddress`'s kernel entry sees it: its devices,
/// contexts, allocations and monitored fences, and its memory.
impl crate::kmt::gpu_va::UpdateCaller for UserProcess {
    fn device(&self, h: u32) -> Option<crate::ums::UmsProcess> {
        UserProcess::device(self, h).ok().map(|d| d.sim)
    }
    fn context_device(&self, h: u32) -> Option<u32> {
        let d = self.owner(h).ok()?;
        let a = self.machine.adapter_shared(d.sim.adapter).ok()?;
        crate::ums::context_device(a, h).filter(|c| *c == d.sim.device)
    }
    fn operations(
        &self,
        at: u64,
        n: u32,
    ) -> Result<Vec<D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION>, rvgpu_umd::kmt::NtStatus> {
        guest::read_array(at, n as usize).map_err(|b| rvgpu_umd::kmt::NtStatus(bad(b) as i32))
    }
    fn allocation_device(&self, h: u32) -> Option<u32> {
        let d = self.owner(h).ok()?;
        crate::kmt::gpu_va::allocation_device(&self.machine, &d.sim, h)
    }
    fn fence(&self, h: u32) -> Option<(u32, crate::sync::fence::MonitoredFence)> {
        let d = self.owner(h).ok()?;
        match crate::kmt::sync_from_cpu::sync_object_of(&self.machine, &d.sim, h)? {
            crate::kmt::sync_from_cpu::SyncObject::Monitored(f) => Some((d.sim.device, f)),
            crate::kmt::sync_from_cpu::SyncObject::Native(_) => None,
        }
    }
}

/// `D3DKMTUpdateGpuVirtualAddress`: the structure as the DLL wrote it to the thunk's kernel
/// entry ([`crate::kmt::gpu_va::dxgk_update_gpu_virtual_address`], 24H2's checks); it returns
/// once VidMm queued the update, which is applied when `hFenceObject` reaches `FenceValue`
/// and then signals `FenceValue + 1`. Nothing is written back.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtupdategpuvirtualaddress>
pub(super) fn update_gpu_virtual_address(p: &UserProcess, at: u64) -> Status {
    let a: D3DKMT_UPDATEGPUVIRTUALADDRESS = args(at)?;
    dxgk_update_gpu_virtual_address(&p.machine, &a, p).map_err(nt)
}
