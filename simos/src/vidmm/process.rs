//! A process's VidMm state going away (`DxgkDdiDestroyProcess` once its last object is gone):
//! the fence pages mapped for it, its DMA-buffer arena and whatever else it still maps are
//! unmapped through the driver, then its page tables are dropped. Above the pieces it tears
//! down ([`crate::vidmm::fencemap`], [`crate::vidmm::dmabuf`], [`crate::vidmm::mmu`]).

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::vidmm::host::Host;
use crate::vidmm::mmu::{drop_space, vidmm_forget, vidmm_unmap, LeafTag};

/// `DxgkDdiDestroyProcess` after the process's last object is gone; its tables return to
/// the heap. The process goes even when unmapping what it still maps fails (24H2's process
/// teardown has no failure path, `K:DXGPROCESS::DestroyAdapterInfo` @0x14036CF30): the first
/// error is returned after it is gone, so no death leaves the driver's record or the memory.
pub(crate) fn vidmm_destroy_process(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
) -> Result<(), SimError> {
    crate::vidmm::fencemap::fence_maps_drop_process(a, pid);
    let unmapped = vidmm_unmap_all(host, a, pid);
    let dropped = drop_space(a, pid);
    unmapped.and(dropped)
}

/// Unmaps everything `pid` has mapped, through the driver (or from VidMm's books only,
/// on a lost device).
fn vidmm_unmap_all(host: &dyn Host, a: &AdapterShared, pid: ProcessId) -> Result<(), SimError> {
    // Its DMA-buffer arena first (one range), then the OS's single pages it mapped for
    // the process (fence storage).
    if let Some((va, backing)) = crate::vidmm::dmabuf::dma_arena_take(a, pid) {
        let pages = crate::vidmm::dmabuf::ARENA_PAGES;
        let unmapped = if a.device.is_lost() {
            vidmm_forget(a, pid, va, pages);
            Ok(())
        } else {
            vidmm_unmap(host, a, pid, va, pages, LeafTag::default())
        };
        // Its backing is the process's alone: back to the machine either way.
        a.device
            .memory()
            .free_system(rvgpu_hw::addr::BusAddr::new(backing.bus_addr));
        unmapped?;
    }
    let left = lock(&a.mm.vidmm)
        .processes
        .get(&pid)
        .map(|p| p.space.mapped())
        .unwrap_or_default();
    for (va, pages) in left {
        if a.device.is_lost() {
            vidmm_forget(a, pid, va, pages);
        } else {
            vidmm_unmap(host, a, pid, va, pages, LeafTag::default())?;
        }
    }
    Ok(())
}
