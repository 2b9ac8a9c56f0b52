//! The doorbell thunks' kernel entries, as 24H2 answers them:
//! `K:DxgkCreateDoorbellInternal` @0x1401D8A50 (with `K:DXGHWQUEUE::CreateDoorbell`
//! @0x1401D7F48 and `K:DXGDOORBELL::Initialize` @0x1401D9E74),
//! `K:DxgkConnectDoorbellInternal` @0x1401D846C, `K:DxgkDestroyDoorbellInternal` @0x1401D9494
//! and `K:DxgkNotifyWorkSubmissionInternal` @0x1401D98CC: the caller's structure as written,
//! the checks in their order with their statuses, and back what 24H2 writes.

use std::sync::Arc;

use rvgpu_ddi::d3dkmt::{
    D3DKMT_CONNECT_DOORBELL, D3DKMT_CREATE_DOORBELL, D3DKMT_CREATE_DOORBELL_FLAGS,
    D3DKMT_NOTIFY_WORK_SUBMISSION,
};
use rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD;
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NO_MEMORY};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::context_virtual::CallerMemory;
use crate::machine::Machine;
use crate::ums::{self, DoorbellCpuState, UmsProcess, DOORBELL_PRIVATE_DATA_MAX};

/// `D3DKMT_CREATE_DOORBELL_FLAGS::RequireSecondaryCpuVA`.
pub const REQUIRE_SECONDARY_CPU_VA: u32 =
    D3DKMT_CREATE_DOORBELL_FLAGS::mask(D3DKMT_CREATE_DOORBELL_FLAGS::RequireSecondaryCpuVA);
/// `D3DKMT_CREATE_DOORBELL_FLAGS`' defined bits (`RequireSecondaryCpuVA`,
/// `ResizeRingBufferOperation`); 24H2 refuses any other.
const CREATE_FLAGS_DEFINED: u32 =
    !D3DKMT_CREATE_DOORBELL_FLAGS::mask(D3DKMT_CREATE_DOORBELL_FLAGS::Reserved);

/// The CPU addresses of a doorbell's pages in the caller's process.
#[derive(Clone, Copy, Debug, Default)]
pub struct DoorbellVas {
    /// The doorbell page (`DoorbellCPUVirtualAddress`).
    pub doorbell: u64,
    /// The status page (`DoorbellStatusCPUVirtualAddress`).
    pub status: u64,
    /// The last-queued cell (`HwQueueProgressFenceLastQueuedValueCPUVirtualAddress`).
    pub last_queued: u64,
}

/// A doorbell `D3DKMTCreateDoorbell` made.
pub struct CreatedDoorbell {
    /// `hDoorbell`.
    pub handle: KmtHandle,
    /// The OS mapping object behind its pages.
    pub cpu: Arc<DoorbellCpuState>,
}

/// `DxgkCreateDoorbellInternal` for the caller's structure `a`, in 24H2's order, every refusal
/// STATUS_INVALID_PARAMETER unless said:
/// 1. private data given half;
/// 2. `PrivateDriverDataSize` above 16 (BR-96);
/// 3. the private data captured from `mem` (the probe's status);
/// 4. a `Flags` bit from 2 up;
/// 5. `hHwQueue` not a user-mode-submission queue in the caller's handle table (`owner`);
/// 6. `RequireSecondaryCpuVA`: this adapter reports no secondary doorbells;
/// 7. the queue's device not active (`DXGDOORBELLAPILOCKS`): STATUS_DEVICE_REMOVED;
/// 8. `DXGHWQUEUE::CreateDoorbell`, `DXGDOORBELL::Initialize` (`ums::create_doorbell`): a
///    doorbell already on the queue; `hRingBuffer`, then `hRingBufferControl`, not an
///    allocation of the queue's device; `DxgkDdiCreateDoorbell`.
///
/// `map` gives the doorbell's pages their addresses in the caller's process. On success the
/// three CPU addresses (the secondary one 0), `hDoorbell` and the private data are written,
/// the last-queued address only where the queue has a progress fence (24H2 writes none:
/// `UmsProgress::None`); on failure nothing.
pub fn dxgk_create_doorbell_internal(
    m: &Machine,
    a: &mut D3DKMT_CREATE_DOORBELL,
    owner: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
    mem: &dyn CallerMemory,
    map: impl FnOnce(&Arc<DoorbellCpuState>) -> Result<DoorbellVas, NtStatus>,
) -> Result<CreatedDoorbell, NtStatus> {
    let bad = NtStatus(STATUS_INVALID_PARAMETER);
    let (at, size) = (a.PrivateDriverData, a.PrivateDriverDataSize);
    if (at == 0) != (size == 0) {
        return Err(bad);
    }
    // The lookup has no effect of its own; it names the adapter whose triage log BR-96 reaches.
    let p = owner(a.hHwQueue);
    if size as usize > DOORBELL_PRIVATE_DATA_MAX {
        if let Some(sh) = p.as_ref().and_then(|p| m.kmt(p).adapter().ok()) {
            sh.observer().triage(format!(
                "BR-96: PrivateDriverDataSize {size:#x} is greater than max permitted size \
                 {DOORBELL_PRIVATE_DATA_MAX:#x}"
            ));
        }
        return Err(bad);
    }
    let mut pdd = if size == 0 {
        Vec::new()
    } else {
        mem.read(at, size)?
    };
    if a.Flags & !CREATE_FLAGS_DEFINED != 0 {
        return Err(bad);
    }
    let p = p.ok_or(bad)?;
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    let (user_mode, _) = ums::device_queue_kind(&sh, p.device, a.hHwQueue).ok_or(bad)?;
    if !user_mode || a.Flags & REQUIRE_SECONDARY_CPU_VA != 0 {
        return Err(bad);
    }
    doorbell_api_locks(&sh, &p)?;
    let (queue, ring, control) = (a.hHwQueue, a.hRingBuffer, a.hRingBufferControl);
    let db = ums::create_doorbell(&sh, p.device, queue, ring, control, a.Flags, &mut pdd)
        .map_err(super::status)?;
    let undo = |e: NtStatus| {
        let _ = ums::destroy_doorbell_thunk(&sh, p.device, db.handle);
        let _ = m.reap_allocations(&sh);
        e
    };
    let vas = map(&db.cpu).map_err(|_| undo(NtStatus(STATUS_NO_MEMORY)))?;
    if !pdd.is_empty() {
        mem.write(at, &pdd).map_err(undo)?;
    }
    a.DoorbellCPUVirtualAddress = vas.doorbell;
    a.DoorbellSecondaryCPUVirtualAddress = 0;
    a.DoorbellStatusCPUVirtualAddress = vas.status;
    if m.hw_queue_progress_fence(p.adapter, queue).is_some() {
        a.HwQueueProgressFenceLastQueuedValueCPUVirtualAddress = vas.last_queued;
    }
    a.hDoorbell = db.handle;
    Ok(CreatedDoorbell {
        handle: db.handle,
        cpu: db.cpu,
    })
}

/// `K:DXGDOORBELLAPILOCKS::DXGDOORBELLAPILOCKS` @0x140073C48, which the create, connect,
/// notify and destroy entries take once the queue is found: the device's core access
/// (`K:COREDEVICEACCESS::AcquireShared`), so a device stopped by an adapter-wide reset is
/// STATUS_DEVICE_REMOVED while one VidSch merely put in error goes on.
fn doorbell_api_locks(sh: &crate::adapter::AdapterShared, p: &UmsProcess) -> Result<(), NtStatus> {
    super::lock::device_active(sh, p.device)
}

/// The process and adapter of doorbell `h` in the caller's handle table (`owner`), else
/// STATUS_INVALID_PARAMETER.
fn doorbell_owner(
    m: &Machine,
    h: KmtHandle,
    owner: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
) -> Result<(UmsProcess, Arc<crate::adapter::AdapterShared>), NtStatus> {
    let bad = NtStatus(STATUS_INVALID_PARAMETER);
    let p = owner(h).ok_or(bad)?;
    let sh = m.kmt(&p).thunk()?;
    if !ums::device_has_doorbell(&sh, p.device, h) {
        return Err(bad);
    }
    Ok((p, sh))
}

/// `DxgkConnectDoorbellInternal`: `Flags` non-zero, then `hDoorbell` not a doorbell in the
/// caller's handle table, are STATUS_INVALID_PARAMETER; then the device not active
/// (`DXGDOORBELLAPILOCKS`) STATUS_DEVICE_REMOVED; then a doorbell whose status is
/// DISCONNECTED_ABORT STATUS_INVALID_PARAMETER; a connected one succeeds with no DDI; else
/// `DXGDOORBELL::Connect` (`ums::connect_doorbell`), for a device in error too.
pub fn dxgk_connect_doorbell_internal(
    m: &Machine,
    a: &D3DKMT_CONNECT_DOORBELL,
    owner: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
) -> Result<(), NtStatus> {
    if a.Flags != 0 {
        return Err(NtStatus(STATUS_INVALID_PARAMETER));
    }
    let (p, sh) = doorbell_owner(m, a.hDoorbell, owner)?;
    doorbell_api_locks(&sh, &p)?;
    ums::connect_doorbell(&sh, p.device, a.hDoorbell).map_err(super::status)
}

/// `DxgkNotifyWorkSubmissionInternal`: `Flags` non-zero, then `hDoorbell` not a doorbell in
/// the caller's handle table, are STATUS_INVALID_PARAMETER; then the device not active
/// (`DXGDOORBELLAPILOCKS`) STATUS_DEVICE_REMOVED; then a doorbell whose status page does not
/// read CONNECTED_NOTIFY_KMD STATUS_INVALID_PARAMETER; else `DxgkDdiNotifyWorkSubmission`'s
/// status.
pub fn dxgk_notify_work_submission_internal(
    m: &Machine,
    a: &D3DKMT_NOTIFY_WORK_SUBMISSION,
    owner: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
) -> Result<(), NtStatus> {
    let bad = NtStatus(STATUS_INVALID_PARAMETER);
    if a.Flags != 0 {
        return Err(bad);
    }
    let (p, sh) = doorbell_owner(m, a.hDoorbell, owner)?;
    doorbell_api_locks(&sh, &p)?;
    let status = ums::doorbell_info(&sh, a.hDoorbell).map(|d| d.status);
    if status != Some(D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD) {
        return Err(bad);
    }
    ums::notify_work_submission(&sh, p.device, a.hDoorbell).map_err(super::status)
}

/// `DxgkDestroyDoorbellInternal`: `hDoorbell` not a doorbell in the caller's handle table is
/// STATUS_INVALID_PARAMETER, the device not active (`DXGDOORBELLAPILOCKS`)
/// STATUS_DEVICE_REMOVED (the doorbell stays, for the device's destruction); else the doorbell
/// goes as `K:DXGDOORBELL::DestroyCoreState`
/// @0x1401D804C takes it (disconnected first while connected), and with it its references on
/// the ring allocations (UM-07).
pub fn dxgk_destroy_doorbell_internal(
    m: &Machine,
    h_doorbell: KmtHandle,
    owner: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
) -> Result<(), NtStatus> {
    let (p, sh) = doorbell_owner(m, h_doorbell, owner)?;
    doorbell_api_locks(&sh, &p)?;
    ums::destroy_doorbell_thunk(&sh, p.device, h_doorbell).map_err(super::status)?;
    m.reap_allocations(&sh).map_err(super::status)
}
