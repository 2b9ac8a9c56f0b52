//! When a context gets its process's root page table: VidSch sends `DxgkDdiSetRootPageTable`
//! only before a context runs work it was handed (24H2), never at creation.

use std::sync::atomic::Ordering;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::state::ums::ContextObj;

/// VidSch's step before context `context` runs work it was handed, 24H2
/// `M:VidSchiEnsureRootPageTableUpdated` @0x1400EAF40 (before a kernel-mode submission, at a
/// resume) and the same step of `M:VidSchiSubmitRenderVirtualCommand` @0x1400B6C90 (software
/// scheduling): `DxgkDdiSetRootPageTable` when the process's root is not the one last sent
/// for the context. Nothing for a context of no GpuMmu process.
///
/// 24H2 compares the root the context last got with the process's; here the context also
/// caches VidMm's root generation ([`root_current`]), so a caller that holds the context
/// skips this step while no root changed. The generation is read before the roots are
/// compared and VidMm bumps it after a change: a change racing this step leaves the cached
/// generation stale, and the next step compares again.
pub(crate) fn ensure_root(a: &AdapterShared, context: KmtHandle) -> Result<(), SimError> {
    let generation = a.mm.root_generation.load(Ordering::SeqCst);
    let (kmd, pid, sent) = {
        let os = lock(&a.ums);
        let Some(c) = os.contexts.get(&context) else {
            return Ok(());
        };
        // `M:VidSchiEnsureRootPageTableUpdated` skips the DDI for a `NoKmdAccess` context;
        // a `SynchronizationOnly` one never runs work. Neither has a driver handle.
        if c.root_seen == generation || c.kmd == 0 {
            return Ok(());
        }
        let Some(d) = os.devices.get(&c.device) else {
            return Ok(());
        };
        (c.kmd, d.process, c.root_sent)
    };
    let now = lock(&a.mm.vidmm).process(pid).map(|(_, s, r)| (s, r));
    let sent = if now.is_none() || now == sent {
        sent
    } else {
        crate::vidmm::mmu::set_root(a, pid, kmd)?
    };
    if let Some(c) = lock(&a.ums).contexts.get_mut(&context) {
        c.root_sent = sent;
        c.root_seen = generation;
    }
    Ok(())
}

/// Whether `c` has its process's root for certain: no root changed since [`ensure_root`] last
/// found the one sent current.
pub(crate) fn root_current(a: &AdapterShared, c: &ContextObj) -> bool {
    c.root_seen == a.mm.root_generation.load(Ordering::SeqCst)
}
