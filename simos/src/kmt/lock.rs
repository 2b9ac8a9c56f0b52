//! `D3DKMTLock2` and `D3DKMTUnlock2`'s kernel entries as 24H2 answers them
//! (`K:DxgkLock2` @0x1402A3430, `K:DxgkLock2Internal` @0x1402A3F00, `K:DxgkUnlock2`
//! @0x1402A21C0, `K:DxgkUnlock2Internal` @0x1402A2B20): the caller's structure as written, the
//! checks in 24H2's order with their statuses, then the simulated VidMm's lock
//! (`ums::allocation`), and back only `pData`, on success.

use rvgpu_ddi::d3dkmt::{D3DKMT_LOCK2, D3DKMT_UNLOCK2};
use rvgpu_ddi::ntstatus::{STATUS_DEVICE_REMOVED, STATUS_INVALID_PARAMETER};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::SimMem;
use crate::adapter::AdapterShared;
use crate::machine::Machine;
use crate::ums::UmsProcess;

fn bad() -> NtStatus {
    NtStatus(STATUS_INVALID_PARAMETER)
}

/// The device's core access, `K:COREDEVICEACCESS::AcquireShared` @0x14000F550 (inlined in
/// `K:DxgkLock2` @0x1402A3430 and `K:SubmitSignalSyncObjectsToHwQueue` @0x1403260EC): the
/// DXGDEVICE's state (+608) not active, STATUS_DEVICE_REMOVED. Only the adapter's reset
/// (`K:DXGDEVICE::Reset` @0x1401BB7FC) and stop (`K:DXGDEVICE::Stop` @0x1401BBA38) change that
/// state: here a device stopped with its adapter, or gone, is not active
/// ([`crate::ums::device_stopped`]); a device VidSch put in error is, and its call goes on.
pub(super) fn device_active(sh: &AdapterShared, device: KmtHandle) -> Result<(), NtStatus> {
    if crate::ums::device_stopped(sh, device) {
        return Err(NtStatus(STATUS_DEVICE_REMOVED));
    }
    Ok(())
}

/// `DxgkLock2` for the caller's structure `a`, in 24H2's order:
/// 1. `hDevice` not in the caller's handle table (`device`): STATUS_INVALID_PARAMETER;
/// 2. the device not active: STATUS_DEVICE_REMOVED;
/// 3. `hAllocation` not an allocation in the caller's table (`allocation`: the device it is
///    of), or of another device: STATUS_INVALID_PARAMETER (the adapter and VidMm-allocation
///    checks between them hold for every allocation here);
/// 4. VidMm's lock: its status.
///
/// On success `a.pData` is the CPU address of the allocation's memory (one address space
/// here) and the view is returned; on failure `a` is unchanged.
pub fn dxgk_lock2(
    m: &Machine,
    a: &mut D3DKMT_LOCK2,
    device: impl FnOnce(u32) -> Option<UmsProcess>,
    allocation: impl FnOnce(KmtHandle) -> Option<KmtHandle>,
) -> Result<SimMem, NtStatus> {
    let p = device(a.hDevice).ok_or_else(bad)?;
    let sh = m.kmt(&p).thunk()?;
    device_active(&sh, p.device)?;
    if allocation(a.hAllocation) != Some(p.device) {
        return Err(bad());
    }
    let (alloc, cache) = crate::ums::allocation::lock_allocation(&sh, p.device, a.hAllocation)
        .map_err(super::status)?;
    a.pData = alloc.as_mut_ptr() as u64;
    Ok(SimMem { alloc, cache })
}

/// `DxgkUnlock2` for the caller's structure `a`, in 24H2's order: `hDevice` not in the
/// caller's table, STATUS_INVALID_PARAMETER; the device not active, STATUS_DEVICE_REMOVED;
/// `hAllocation` not an allocation in the caller's table or of another device,
/// STATUS_INVALID_PARAMETER; then VidMm's unlock (an allocation holding no lock succeeds).
/// Nothing is written back.
pub fn dxgk_unlock2(
    m: &Machine,
    a: &D3DKMT_UNLOCK2,
    device: impl FnOnce(u32) -> Option<UmsProcess>,
    allocation: impl FnOnce(KmtHandle) -> Option<KmtHandle>,
) -> Result<(), NtStatus> {
    let p = device(a.hDevice).ok_or_else(bad)?;
    let sh = m.kmt(&p).thunk()?;
    device_active(&sh, p.device)?;
    if allocation(a.hAllocation) != Some(p.device) {
        return Err(bad());
    }
    crate::ums::allocation::unlock_allocation(&sh, p.device, a.hAllocation).map_err(super::status)
}
