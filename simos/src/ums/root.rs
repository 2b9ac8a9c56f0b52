//! When a context gets its process's root page table: VidSch sends `DxgkDdiSetRootPageTable`
//! only before a context runs work it was handed (24H2), never at creation.

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;

/// VidSch's step before context `context` runs work it was handed, 24H2
/// `M:VidSchiEnsureRootPageTableUpdated` @0x1400EAF40 (before a kernel-mode submission, at a
/// resume) and the same step of `M:VidSchiSubmitRenderVirtualCommand` @0x1400B6C90 (software
/// scheduling): `DxgkDdiSetRootPageTable` when the process's root is not the one last sent
/// for the context. Nothing for a context of no GpuMmu process.
pub(crate) fn ensure_root(a: &AdapterShared, context: KmtHandle) -> Result<(), SimError> {
    let (kmd, pid, sent) = {
        let os = lock(&a.ums);
        let Some(c) = os.contexts.get(&context) else {
            return Ok(());
        };
        let Some(d) = os.devices.get(&c.device) else {
            return Ok(());
        };
        (c.kmd, d.process, c.root_sent)
    };
    let now = lock(&a.mm.vidmm).process(pid).map(|(_, s, r)| (s, r));
    if now.is_none() || now == sent {
        return Ok(());
    }
    let sent = crate::vidmm::mmu::set_root(a, pid, kmd)?;
    if let Some(c) = lock(&a.ums).contexts.get_mut(&context) {
        c.root_sent = sent;
    }
    Ok(())
}
