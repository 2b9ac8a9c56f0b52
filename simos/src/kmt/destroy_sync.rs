//! `D3DKMTDestroySynchronizationObject`'s refusal of the fences the OS made for a queue, as
//! 24H2 `K:DxgkDestroySynchronizationObjectImpl` @0x1403ABF4C answers it.

use rvgpu_ddi::ntstatus::STATUS_ACCESS_DENIED;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::SimKmt;
use crate::adapter::AdapterShared;
use crate::base::lock::lock;

impl SimKmt<'_> {
    /// `D3DKMTDestroySynchronizationObject`'s first refusal (24H2
    /// `K:DxgkDestroySynchronizationObjectImpl` @0x1403ABF4C): a device sync object the caller
    /// may not destroy, STATUS_ACCESS_DENIED. That is one the OS made for a queue, a hardware
    /// queue's progress fence or a paging queue's fence: `DXGGLOBAL::CreateSyncObject`
    /// @0x1403511A0 passes its seventh argument to `DXGSYNCOBJECT::Open` @0x1401F4640, which
    /// keeps it in the device sync object (`DXGDEVICESYNCOBJECT::DXGDEVICESYNCOBJECT`
    /// @0x1403965DC) as the flag the destroy tests; `DXGHWQUEUE::Initialize` and
    /// `DXGPAGINGQUEUE::Initialize` pass 0 (read in builds beside 24H2's). Destroying the queue
    /// destroys its fence.
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
            return Err(NtStatus(STATUS_ACCESS_DENIED));
        }
        Ok(())
    }
}
