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
use rvgpu_ddi::ntstatus::STATUS_NO_MEMORY;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::context_virtual::CallerMemory;
use super::refusal::row::*;
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

refusals! {
    /// `D3DKMTCreateDoorbell`'s refusals, in 24H2's order.
    CreateDoorbellCheck => CREATE_DOORBELL_CHECKS {
        PrivateData: "PrivateDriverData without size, or a size without pointer" => INVALID_PARAMETER;
        PrivateDataSize: "PrivateDriverDataSize above 16" => INVALID_PARAMETER;
        NoPool: "no pool for the private data" => NO_MEMORY,
            elsewhere "not modelled: the simulated pool does not run out";
        PrivateDataUnreadable: "the private data not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        Flags: "a Flags bit from 2 up" => INVALID_PARAMETER;
        Queue: "hHwQueue not a user-mode-submission queue in the caller's handle table" => INVALID_PARAMETER;
        SecondaryCpuVa: "RequireSecondaryCpuVA on an adapter without secondary doorbells" => INVALID_PARAMETER;
        DeviceActive: "the device not active" => DEVICE_REMOVED;
        AlreadyDoorbell: "a doorbell already on the queue" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's create (`ums::create_doorbell`) makes it";
        RingBuffer: "hRingBuffer not an allocation of the queue's device" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's create (`ums::create_doorbell`) makes it";
        RingBufferControl: "hRingBufferControl not an allocation of the queue's device" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's create (`ums::create_doorbell`) makes it";
    }
}

/// `D3DKMTCreateDoorbell`'s row of the thunk catalog ([`super::catalog`]).
pub const CREATE_DOORBELL: Thunk = Thunk {
    name: "D3DKMTCreateDoorbell",
    source: Some(&[
        src("DxgkCreateDoorbellInternal", 0x1401D8A50),
        src("DXGDOORBELLAPILOCKS::DXGDOORBELLAPILOCKS", 0x140073C48),
        src("DXGHWQUEUE::CreateDoorbell", 0x1401D7F48),
        src("DXGDOORBELL::Initialize", 0x1401D9E74),
    ]),
    checks: CREATE_DOORBELL_CHECKS,
    written_back: &[
        "DoorbellCPUVirtualAddress",
        "DoorbellSecondaryCPUVirtualAddress (0 without RequireSecondaryCpuVA)",
        "DoorbellStatusCPUVirtualAddress",
        "hDoorbell",
        "the private data, when given",
    ],
    pending: Pending::No,
    entry: Some("doorbell::dxgk_create_doorbell_internal"),
    gaps: "HwQueueProgressFenceLastQueuedValueCPUVirtualAddress is written only under the \
           readings that give a user-mode queue a progress fence (24H2 writes none); the \
           status page's and dummy page's own allocation failures are not modelled",
};

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
    let (at, size) = (a.PrivateDriverData, a.PrivateDriverDataSize);
    if (at == 0) != (size == 0) {
        return Err(CreateDoorbellCheck::PrivateData.refuse());
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
        return Err(CreateDoorbellCheck::PrivateDataSize.refuse());
    }
    let mut pdd = if size == 0 {
        Vec::new()
    } else {
        mem.read(at, size)?
    };
    if a.Flags & !CREATE_FLAGS_DEFINED != 0 {
        return Err(CreateDoorbellCheck::Flags.refuse());
    }
    let queue_check = CreateDoorbellCheck::Queue.refuse();
    let p = p.ok_or(queue_check)?;
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    let (user_mode, _) = ums::device_queue_kind(&sh, p.device, a.hHwQueue).ok_or(queue_check)?;
    if !user_mode {
        return Err(queue_check);
    }
    // No simulated adapter has secondary doorbells.
    if a.Flags & REQUIRE_SECONDARY_CPU_VA != 0 {
        return Err(CreateDoorbellCheck::SecondaryCpuVa.refuse());
    }
    doorbell_api_locks(&sh, &p, CreateDoorbellCheck::DeviceActive.refuse())?;
    let (queue, ring, control) = (a.hHwQueue, a.hRingBuffer, a.hRingBufferControl);
    let db = ums::create_doorbell(&sh, p.device, queue, ring, control, a.Flags, &mut pdd)
        .map_err(super::process::status)?;
    let undo = |e: NtStatus| {
        let _ = ums::destroy_doorbell_thunk(&sh, p.device, db.handle);
        let _ = m.reap_allocations(&sh);
        e
    };
    let vas = map(&db.cpu).map_err(|_| undo(gap(STATUS_NO_MEMORY)))?;
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
fn doorbell_api_locks(
    sh: &crate::adapter::AdapterShared,
    p: &UmsProcess,
    refusal: NtStatus,
) -> Result<(), NtStatus> {
    super::lock::device_active(sh, p.device, refusal)
}

/// The process and adapter of doorbell `h` in the caller's handle table (`owner`), else
/// STATUS_INVALID_PARAMETER.
fn doorbell_owner(
    m: &Machine,
    h: KmtHandle,
    owner: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
    bad: NtStatus,
) -> Result<(UmsProcess, Arc<crate::adapter::AdapterShared>), NtStatus> {
    let p = owner(h).ok_or(bad)?;
    let sh = m.kmt(&p).thunk()?;
    if !ums::device_has_doorbell(&sh, p.device, h) {
        return Err(bad);
    }
    Ok((p, sh))
}

/// Why the connect, notify and destroy entries leave "the doorbell's queue being destroyed"
/// to the simulated queue destroy; `$entry` names the entry's 24H2 function, each of which
/// makes the same test on the queue's reference count.
macro_rules! queue_going {
    ($entry:literal) => {
        concat!(
            "24H2's ",
            $entry,
            " takes a reference on the doorbell's queue only while its count is not 0, else \
             STATUS_INVALID_PARAMETER; the simulated queue destroy \
             (`ums::hwqueue::destroy_hw_queue_thunk`) removes the doorbell before the queue \
             under the device lock this thunk takes, so no doorbell outlives its queue and a \
             racing call finds no doorbell, with the same status"
        )
    };
}

refusals! {
    /// `D3DKMTConnectDoorbell`'s refusals, in 24H2's order.
    ConnectDoorbellCheck => CONNECT_DOORBELL_CHECKS {
        Flags: "Flags non-zero" => INVALID_PARAMETER;
        Doorbell: "hDoorbell not a doorbell in the caller's handle table" => INVALID_PARAMETER;
        QueueGoing: "the doorbell's queue being destroyed" => INVALID_PARAMETER,
            elsewhere queue_going!("`DxgkConnectDoorbellInternal` @0x1401D846C");
        DeviceActive: "the device not active" => DEVICE_REMOVED;
        Aborted: "the doorbell's status DISCONNECTED_ABORT" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's connect (`ums::connect_doorbell`) makes it";
    }
}

/// `D3DKMTConnectDoorbell`'s row of the thunk catalog ([`super::catalog`]).
pub const CONNECT_DOORBELL: Thunk = Thunk {
    name: "D3DKMTConnectDoorbell",
    source: Some(&[
        src("DxgkConnectDoorbellInternal", 0x1401D846C),
        src("DXGDOORBELLAPILOCKS::DXGDOORBELLAPILOCKS", 0x140073C48),
    ]),
    checks: CONNECT_DOORBELL_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("doorbell::dxgk_connect_doorbell_internal"),
    gaps: "a doorbell whose status is CONNECTED or CONNECTED_NOTIFY_KMD succeeds with no \
           DDI, as in 24H2; the simulation keys this on its own connection state, which \
           the status page mirrors; a device VidSch put in error connects (only a stopped \
           device is refused)",
};

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
        return Err(ConnectDoorbellCheck::Flags.refuse());
    }
    let (p, sh) = doorbell_owner(
        m,
        a.hDoorbell,
        owner,
        ConnectDoorbellCheck::Doorbell.refuse(),
    )?;
    doorbell_api_locks(&sh, &p, ConnectDoorbellCheck::DeviceActive.refuse())?;
    ums::connect_doorbell(&sh, p.device, a.hDoorbell).map_err(super::process::status)
}

refusals! {
    /// `D3DKMTNotifyWorkSubmission`'s refusals, in 24H2's order.
    NotifyWorkSubmissionCheck => NOTIFY_WORK_SUBMISSION_CHECKS {
        Flags: "Flags non-zero" => INVALID_PARAMETER;
        Doorbell: "hDoorbell not a doorbell in the caller's handle table" => INVALID_PARAMETER;
        QueueGoing: "the doorbell's queue being destroyed" => INVALID_PARAMETER,
            elsewhere queue_going!("`DxgkNotifyWorkSubmissionInternal` @0x1401D98CC");
        DeviceActive: "the device not active" => DEVICE_REMOVED;
        NotConnected: "the doorbell's status not CONNECTED_NOTIFY_KMD" => INVALID_PARAMETER;
    }
}

/// `D3DKMTNotifyWorkSubmission`'s row of the thunk catalog ([`super::catalog`]).
pub const NOTIFY_WORK_SUBMISSION: Thunk = Thunk {
    name: "D3DKMTNotifyWorkSubmission",
    source: Some(&[
        src("DxgkNotifyWorkSubmissionInternal", 0x1401D98CC),
        src("DXGDOORBELLAPILOCKS::DXGDOORBELLAPILOCKS", 0x140073C48),
    ]),
    checks: NOTIFY_WORK_SUBMISSION_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("doorbell::dxgk_notify_work_submission_internal"),
    gaps: "a NoKmdAccess context (success with no DDI) is not modelled",
};

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
    if a.Flags != 0 {
        return Err(NotifyWorkSubmissionCheck::Flags.refuse());
    }
    let bad = NotifyWorkSubmissionCheck::Doorbell.refuse();
    let (p, sh) = doorbell_owner(m, a.hDoorbell, owner, bad)?;
    doorbell_api_locks(&sh, &p, NotifyWorkSubmissionCheck::DeviceActive.refuse())?;
    let status = ums::doorbell_info(&sh, a.hDoorbell).map(|d| d.status);
    if status != Some(D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD) {
        return Err(NotifyWorkSubmissionCheck::NotConnected.refuse());
    }
    ums::notify_work_submission(&sh, p.device, a.hDoorbell).map_err(super::process::status)
}

refusals! {
    /// `D3DKMTDestroyDoorbell`'s refusals, in 24H2's order.
    DestroyDoorbellCheck => DESTROY_DOORBELL_CHECKS {
        Doorbell: "hDoorbell not a doorbell in the caller's handle table" => INVALID_PARAMETER;
        QueueGoing: "the doorbell's queue being destroyed" => INVALID_PARAMETER,
            elsewhere queue_going!("`DxgkDestroyDoorbellInternal` @0x1401D9494");
        DeviceActive: "the device not active" => DEVICE_REMOVED;
    }
}

/// `D3DKMTDestroyDoorbell`'s row of the thunk catalog ([`super::catalog`]).
pub const DESTROY_DOORBELL: Thunk = Thunk {
    name: "D3DKMTDestroyDoorbell",
    source: Some(&[
        src("DxgkDestroyDoorbellInternal", 0x1401D9494),
        src("DXGDOORBELLAPILOCKS::DXGDOORBELLAPILOCKS", 0x140073C48),
        src("DXGDOORBELL::DestroyCoreState", 0x1401D804C),
    ]),
    checks: DESTROY_DOORBELL_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("doorbell::dxgk_destroy_doorbell_internal"),
    gaps: "",
};

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
    let bad = DestroyDoorbellCheck::Doorbell.refuse();
    let (p, sh) = doorbell_owner(m, h_doorbell, owner, bad)?;
    doorbell_api_locks(&sh, &p, DestroyDoorbellCheck::DeviceActive.refuse())?;
    ums::destroy_doorbell_thunk(&sh, p.device, h_doorbell).map_err(super::process::status)?;
    m.reap_allocations(&sh).map_err(super::process::status)
}
