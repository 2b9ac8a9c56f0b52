//! `D3DKMTLock2` and `D3DKMTUnlock2`'s kernel entries as 24H2 answers them
//! (`K:DxgkLock2` @0x1402A3430, `K:DxgkLock2Internal` @0x1402A3F00, `K:DxgkUnlock2`
//! @0x1402A21C0, `K:DxgkUnlock2Internal` @0x1402A2B20): the caller's structure as written, the
//! checks in 24H2's order with their statuses, then the simulated VidMm's lock
//! (`ums::allocation`), and back only `pData`, on success.

use std::sync::Arc;

use rvgpu_ddi::d3dkmt::{D3DKMT_LOCK2, D3DKMT_UNLOCK2};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::process::SimMem;
use super::refusal::row::*;
use crate::adapter::AdapterShared;
use crate::machine::Machine;
use crate::ums::UmsProcess;

/// The device's core access, `K:COREDEVICEACCESS::AcquireShared` @0x14000F550 (inlined in
/// `K:DxgkLock2` @0x1402A3430 and `K:SubmitSignalSyncObjectsToHwQueue` @0x1403260EC): the
/// DXGDEVICE's state (+608) not active, `refusal` (the calling thunk's row check, which names
/// STATUS_DEVICE_REMOVED). Only the adapter's reset
/// (`K:DXGDEVICE::Reset` @0x1401BB7FC) and stop (`K:DXGDEVICE::Stop` @0x1401BBA38) change that
/// state: here a device stopped with its adapter, or gone, is not active
/// ([`crate::ums::device_stopped`]); a device VidSch put in error is, and its call goes on.
pub(super) fn device_active(
    sh: &AdapterShared,
    device: KmtHandle,
    refusal: NtStatus,
) -> Result<(), NtStatus> {
    if crate::ums::device_stopped(sh, device) {
        return Err(refusal);
    }
    Ok(())
}

refusals! {
    /// `D3DKMTLock2`'s refusals, in 24H2's order; `D3DKMTUnlock2` makes the same ones.
    Lock2Check => LOCK2_CHECKS {
        Device: "hDevice not in the caller's handle table" => INVALID_PARAMETER;
        DeviceActive: "the device not active" => DEVICE_REMOVED;
        Allocation: "hAllocation not an allocation in the caller's handle table" => INVALID_PARAMETER;
        OtherAdapter: "hAllocation on another adapter" => INVALID_PARAMETER,
            elsewhere "a simulated allocation is always its device's adapter's";
        NoVidMmAllocation: "hAllocation without a VidMm allocation" => INVALID_PARAMETER,
            elsewhere "every simulated allocation has its VidMm allocation";
        OtherDevice: "hAllocation of another device" => INVALID_PARAMETER;
    }
}

/// `D3DKMTLock2`'s row of the thunk catalog ([`super::catalog`]).
pub const LOCK2: Thunk = Thunk {
    name: "D3DKMTLock2",
    source: Some(&[
        src("DxgkLock2", 0x1402A3430),
        src("DxgkLock2Internal", 0x1402A3F00),
    ]),
    checks: LOCK2_CHECKS,
    written_back: &["pData, on success"],
    pending: Pending::No,
    entry: Some("lock::dxgk_lock2"),
    gaps: "DxgkLock2Internal's refusal (STATUS_INVALID_PARAMETER) of an allocation whose \
           CPU access VidMm's answer and the adapter's flags rule out is not modelled, nor \
           VidMm's lock read (the simulated VidMm refuses an allocation the KMD did not make \
           CPU-visible); in the gdi32 bridge a view through a CPU cache the GPU does not \
           snoop has no address in the emulated process: STATUS_NOT_SUPPORTED",
};

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
    let (p, sh) = checked(m, a.hDevice, a.hAllocation, device, allocation)?;
    let (alloc, cache) = crate::ums::allocation::lock_allocation(&sh, p.device, a.hAllocation)
        .map_err(super::process::status)?;
    a.pData = alloc.as_mut_ptr() as u64;
    Ok(SimMem { alloc, cache })
}

/// `D3DKMTUnlock2`'s row of the thunk catalog ([`super::catalog`]).
pub const UNLOCK2: Thunk = Thunk {
    name: "D3DKMTUnlock2",
    source: Some(&[
        src("DxgkUnlock2", 0x1402A21C0),
        src("DxgkUnlock2Internal", 0x1402A2B20),
    ]),
    checks: LOCK2_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("lock::dxgk_unlock2"),
    gaps: "VidMm's unlock not read in 24H2 (an allocation holding no lock succeeds here, \
           as 22631's VIDMM_GLOBAL::UnlockInternal answers)",
};

/// The checks `D3DKMTLock2` and `D3DKMTUnlock2` share, in 24H2's order: the caller's device,
/// active, and an allocation of that device. The device's process and its adapter.
fn checked(
    m: &Machine,
    h_device: u32,
    h_allocation: KmtHandle,
    device: impl FnOnce(u32) -> Option<UmsProcess>,
    allocation: impl FnOnce(KmtHandle) -> Option<KmtHandle>,
) -> Result<(UmsProcess, Arc<AdapterShared>), NtStatus> {
    let p = device(h_device).ok_or(Lock2Check::Device.refuse())?;
    let sh = m.kmt(&p).thunk()?;
    device_active(&sh, p.device, Lock2Check::DeviceActive.refuse())?;
    match allocation(h_allocation) {
        None => Err(Lock2Check::Allocation.refuse()),
        Some(d) if d != p.device => Err(Lock2Check::OtherDevice.refuse()),
        Some(_) => Ok((p, sh)),
    }
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
    let (p, sh) = checked(m, a.hDevice, a.hAllocation, device, allocation)?;
    crate::ums::allocation::unlock_allocation(&sh, p.device, a.hAllocation)
        .map_err(super::process::status)
}
