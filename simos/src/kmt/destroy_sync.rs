//! `D3DKMTDestroySynchronizationObject`'s kernel entry, as 24H2
//! `K:DxgkDestroySynchronizationObjectImpl` @0x1403ABF4C answers it: the handle looked up as a
//! device sync object of the caller (one the OS made for a queue refused), then as a global
//! one (none here), then the object destroyed.

use rvgpu_ddi::ntstatus::STATUS_INVALID_HANDLE;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::process::{status, SimKmt};
use super::refusal::row::*;
use super::sync_from_cpu::{CallerProcess, SyncObject};
use crate::adapter::AdapterShared;
use crate::base::lock::lock;
use crate::machine::Machine;
use crate::ums;

refusals! {
    /// `D3DKMTDestroySynchronizationObject`'s refusals, in 24H2's order.
    DestroySynchronizationObjectCheck => DESTROY_SYNCHRONIZATION_OBJECT_CHECKS {
        StructureReadable: "the structure not readable" => ACCESS_VIOLATION,
            elsewhere "the thunk bridge copies the structure in before the entry";
        NotCallers: "hSyncObject a device sync object its flags mark not the caller's to destroy" => ACCESS_DENIED;
        Unknown: "hSyncObject neither a device nor a global sync object in the caller's handle table" => INVALID_PARAMETER;
    }
}

/// `D3DKMTDestroySynchronizationObject`'s row of the thunk catalog ([`super::catalog`]).
pub const DESTROY_SYNCHRONIZATION_OBJECT: Thunk = Thunk {
    name: "D3DKMTDestroySynchronizationObject",
    source: Some(&[src("DxgkDestroySynchronizationObjectImpl", 0x1403ABF4C)]),
    checks: DESTROY_SYNCHRONIZATION_OBJECT_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("destroy_sync::dxgk_destroy_synchronization_object_impl"),
    gaps: "the device sync object's may-destroy flag (tested at +92 bit 1) is clear on the \
           fences the OS makes for a queue (DXGGLOBAL::CreateSyncObject @0x1402FA1CC's seventh \
           argument, 0 from DXGHWQUEUE::Initialize @0x1402BBA30 and \
           DXGPAGINGQUEUE::Initialize @0x140396FF0): the simulation refuses a hardware queue's progress fence and a paging \
           queue's fence (SimKmt::refuse_os_made_fence) and no other; the simulation makes no \
           global sync objects, so the second lookup never finds one",
};

/// `DxgkDestroySynchronizationObjectImpl` (24H2 @0x1403ABF4C) of the caller's `hSyncObject`
/// `h` (the structure's one field, captured by the caller's bridge; an unreadable one is its
/// fault status):
/// 1. a device sync object of the caller the OS made for a queue, STATUS_ACCESS_DENIED
///    (`SimKmt::refuse_os_made_fence`);
/// 2. neither a device sync object of the caller nor a global one (the simulation makes no
///    global ones), STATUS_INVALID_PARAMETER;
///
/// then the object is destroyed: a native fence instance (its pages go back once empty), or a
/// monitored fence (pending CPU waits end abandoned, GPU waits no longer hold their queues).
/// 24H2 destroys a device's sync object without asking whether the device is active
/// (`COREDEVICEACCESS::AcquireSharedUncheck`), and so does this.
pub fn dxgk_destroy_synchronization_object_impl(
    m: &Machine,
    h: KmtHandle,
    caller: &dyn CallerProcess,
) -> Result<(), NtStatus> {
    let bad = DestroySynchronizationObjectCheck::Unknown.refuse();
    let o = caller.object(h).ok_or(bad)?;
    let p = caller.device(o.device).ok_or(bad)?;
    let k = m.kmt(&p);
    let a = k.thunk()?;
    k.refuse_os_made_fence(&a, h)?;
    match o.object {
        SyncObject::Native(_) => {
            let f = m.take_native_fence_kmt(p.adapter, h).ok_or(bad)?;
            m.destroy_native_fence(&f).map_err(status)?;
        }
        SyncObject::Monitored(_) => {
            ums::destroy_sync_fence(m, &a, p.device, h).map_err(|e| match status(e) {
                s if s.0 == STATUS_INVALID_HANDLE => bad,
                s => s,
            })?
        }
    }
    // Fence pages it left empty leave the paging process and go back (no lock held here).
    m.reap_system_pages(&a).map_err(status)
}

impl SimKmt<'_> {
    /// `D3DKMTDestroySynchronizationObject`'s first refusal (24H2
    /// `K:DxgkDestroySynchronizationObjectImpl` @0x1403ABF4C): a device sync object the caller
    /// may not destroy, STATUS_ACCESS_DENIED. That is one the OS made for a queue, a hardware
    /// queue's progress fence or a paging queue's fence: `DXGGLOBAL::CreateSyncObject`
    /// @0x1402FA1CC passes its seventh argument to `DXGSYNCOBJECT::Open` @0x1401F4640, which
    /// keeps it in the device sync object (`DXGDEVICESYNCOBJECT::DXGDEVICESYNCOBJECT`
    /// @0x1403965DC) as the flag the destroy tests; `DXGHWQUEUE::Initialize` @0x1402BBA30 and
    /// `DXGPAGINGQUEUE::Initialize` @0x140396FF0 pass 0. Destroying the queue destroys its
    /// fence.
    pub(super) fn refuse_os_made_fence(
        &self,
        a: &AdapterShared,
        h: KmtHandle,
    ) -> Result<(), NtStatus> {
        let paging: Vec<KmtHandle> = lock(&a.mm.gpuva)
            .queues
            .values()
            .filter(|q| q.fence == h)
            .map(|q| q.device)
            .collect();
        let os = lock(&a.ums);
        let ours = |d: &KmtHandle| os.devices.get(d).map(|d| d.process) == Some(self.p.pid);
        let queue = os
            .queues
            .values()
            .any(|q| q.fence == Some(h) && ours(&q.device));
        if queue || paging.iter().any(ours) {
            return Err(DestroySynchronizationObjectCheck::NotCallers.refuse());
        }
        Ok(())
    }
}
