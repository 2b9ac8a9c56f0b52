//! Native-fence pages in a process's GPU VA space (docs/memory.md "Fence storage in
//! processes").
//!
//! Windows returns, for each process that creates or opens a native fence, a
//! `D3DDDI_NATIVEFENCEMAPPING` whose `CurrentValueGpuVa` / `MonitoredValueGpuVa` are "in the
//! current process's address space" (Microsoft's D3DDDI_NATIVEFENCEMAPPING page); the KMD sees
//! only the system-process VAs (`DXGKARG_CREATENATIVEFENCE`) and, at open, the process's
//! (`DXGKARG_OPENNATIVEFENCE::CurrentValueGpuVa` / `MonitoredValueGpuVa`). So this VidMm maps
//! the fence's pages at VAs it picks from the process's own allocator, different from the
//! system VA and from any other process's:
//!
//! - inside the caps' `[MinimumAddress, MaximumAddress)` when the driver set either
//!   (DXGK_NATIVE_FENCE_CAPS: they bound the fence VAs of processes and of the system
//!   process), else wherever the process's allocator is;
//! - one mapping per (process, page), counted: fences packed on one page (the caps'
//!   `MonitoredValueStride`) share it, each instance (create or open) holding one count per
//!   value;
//! - through the driver's UPDATEPAGETABLE as 24H2 writes fence storage's leaves: no
//!   `hAllocation`, no `NativeFence` flag, writable (M:VIDMM_FENCE_STORAGE_PAGE::MapGpuVA
//!   @0x1400F95B8 maps with Write | SystemUseOnly; M:VIDMM_PAGE_TABLE::UpdatePageTable
//!   @0x1400AAE70 names an allocation for owner types 1 and 3 only). The KMD tells the pages
//!   apart at the fence's open (docs/memory.md "Fence storage in processes"); unmapped through
//!   UPDATEPAGETABLE and FLUSHTLB (`mmu::vidmm_unmap`).
//!
//! When a page's last count goes, the page is retired, not unmapped at once: GPU work the
//! process queued before the close may still name it (a signal of a fence destroyed with work
//! queued is legitimate, NF-14), and a user-mode ring's queued work is invisible to the OS.
//! So a retired page is unmapped once every hardware queue the process had at the close is
//! destroyed (at once when it had none), checked at every native-fence create, open and close
//! on the adapter; process exit takes whatever is left with the address space. Which moment
//! Windows picks is UNVERIFIED; this one never unmaps under a queue that might still use the
//! page.

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::state::sync::maps::{PageMap, Retired};
use crate::state::vidmm::gpuva::MapAttrs;
use crate::vidmm::host::Host;
use crate::vidmm::mmu::{phys_of, LeafTag};

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

fn page_of(pa: u64) -> u64 {
    pa - pa % PAGE
}

/// Maps the page holding the fence value at device address `pa` into `pid` (or counts one
/// more use of it) and returns the value's VA there. `tag` names the fence for the
/// driver. Without GpuMmu the device addresses memory directly: `pa` itself. `Ok(0)` for
/// a process without an address space on this adapter (it has no device here).
pub(crate) fn fence_map_value(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    pa: u64,
    tag: LeafTag,
) -> Result<u64, SimError> {
    if lock(&a.mm.memory_model).geometry().is_none() {
        return Ok(pa);
    }
    let page = page_of(pa);
    let serial = lock(&a.fence_os).maps.serial.clone();
    let _one = lock(&serial);
    {
        let mut os = lock(&a.fence_os);
        let maps = &mut os.maps;
        if let Some(m) = maps.pages.get_mut(&(pid, page)) {
            m.refs += 1;
            return Ok(m.va + pa % PAGE);
        }
        // A page retired but not yet unmapped is still there: take it back.
        if let Some(i) = maps
            .retired
            .iter()
            .position(|r| r.pid == pid && r.page == page)
        {
            let r = maps.retired.swap_remove(i);
            maps.pages
                .insert((pid, page), PageMap { va: r.va, refs: 1 });
            return Ok(r.va + pa % PAGE);
        }
    }
    let phys = phys_of(a, page).ok_or(SimError::DdiFailed(STATUS_INVALID_PARAMETER))?;
    let bounds = lock(&a.fence_os)
        .caps
        .map(|c| (c.MinimumAddress, c.MaximumAddress));
    let va = {
        let mut v = lock(&a.mm.vidmm);
        let Some(p) = v.processes.get_mut(&pid) else {
            return Ok(0);
        };
        match bounds {
            Some((lo, hi)) if lo != 0 || hi != 0 => {
                let hi = if hi == 0 { u64::MAX } else { hi };
                let va = p.space.free_range_top_down(PAGE, PAGE, lo, hi).ok_or(
                    SimError::OutOfMemory("GPU VA for fence storage inside the caps' range"),
                )?;
                p.space
                    .reserve_at(rvgpu_hw::addr::GpuVa::new(va), PAGE)
                    .map_err(|_| SimError::DdiFailed(STATUS_INVALID_PARAMETER))?;
                va
            }
            _ => p
                .space
                .reserve(PAGE)
                .map_err(|_| SimError::DdiFailed(STATUS_INVALID_PARAMETER))?,
        }
    };
    if let Err(e) =
        crate::vidmm::mmu::vidmm_map_at(host, a, pid, va, &[phys], MapAttrs::default(), tag)
    {
        // Books and tables as before: the driver mapped nothing VidMm will count on.
        crate::vidmm::mmu::vidmm_forget(a, pid, va, 1);
        return Err(e);
    }
    lock(&a.fence_os)
        .maps
        .pages
        .insert((pid, page), PageMap { va, refs: 1 });
    Ok(va + pa % PAGE)
}

/// Drops one use of the page holding device address `pa` in `pid`; at the last, retires
/// it (module docs) and unmaps what can be unmapped.
pub(crate) fn fence_unmap_value(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    pa: u64,
) -> Result<(), SimError> {
    let page = page_of(pa);
    let serial = lock(&a.fence_os).maps.serial.clone();
    {
        let _one = lock(&serial);
        let queues = host.process_queues(a, pid);
        let mut os = lock(&a.fence_os);
        let maps = &mut os.maps;
        if let Some(m) = maps.pages.get_mut(&(pid, page)) {
            m.refs = m.refs.saturating_sub(1);
            if m.refs == 0 {
                let va = m.va;
                maps.pages.remove(&(pid, page));
                maps.retired.push(Retired {
                    pid,
                    page,
                    va,
                    queues,
                });
            }
        }
    }
    fence_reap_maps(host, a)
}

/// Unmaps the retired pages whose process's queues of the close are all gone; forgets
/// those whose process's address space is gone (its exit unmapped them).
pub(crate) fn fence_reap_maps(host: &dyn Host, a: &AdapterShared) -> Result<(), SimError> {
    let serial = lock(&a.fence_os).maps.serial.clone();
    let _one = lock(&serial);
    // One lock at a time: the books are the serial lock's.
    let retired = std::mem::take(&mut lock(&a.fence_os).maps.retired);
    let gone = |pid: ProcessId| !lock(&a.mm.vidmm).has_process(pid);
    let mut due = Vec::new();
    let mut keep = Vec::new();
    for r in retired {
        if gone(r.pid) {
            continue;
        }
        let idle = r.queues.iter().all(|q| !host.queue_alive(a, *q));
        if idle {
            due.push(r);
        } else {
            keep.push(r);
        }
    }
    // No sweep of the live books for processes that are gone: a process's address space
    // goes only through `vidmm_destroy_process`, which drops its pages from the books first
    // (`fence_maps_drop_process`). A sweep here cost every unmap a pass over every page
    // mapped on the adapter.
    lock(&a.fence_os).maps.retired.extend(keep);
    let mut result = Ok(());
    for r in due {
        if a.device.is_lost() {
            crate::vidmm::mmu::vidmm_forget(a, r.pid, r.va, 1);
        } else if let Err(e) =
            crate::vidmm::mmu::vidmm_unmap(host, a, r.pid, r.va, 1, LeafTag::default())
        {
            result = Err(e);
        }
    }
    result
}

/// Process `pid`'s address space is going (its exit): its pages, live and retired, leave
/// the books first, under the serial lock. The exit unmaps what its space still maps;
/// without this a reap on another thread could unmap a retired page between the exit's
/// reading of its mappings and its unmapping of them (the second unmap a bad range), or
/// unmap into a space the exit has just dropped (an invalid handle).
pub(crate) fn fence_maps_drop_process(a: &AdapterShared, pid: ProcessId) {
    let serial = lock(&a.fence_os).maps.serial.clone();
    let _one = lock(&serial);
    let mut os = lock(&a.fence_os);
    os.maps.pages.retain(|(p, _), _| *p != pid);
    os.maps.retired.retain(|r| r.pid != pid);
}

/// Native-fence pages mapped into `pid`, as `(in use, retired and not yet unmapped)`; a
/// process whose address space is gone has none.
pub fn native_fence_mapped_pages(a: &AdapterShared, pid: ProcessId) -> (usize, usize) {
    if !lock(&a.mm.vidmm).has_process(pid) {
        return (0, 0);
    }
    let os = lock(&a.fence_os);
    os.maps.pages_of(pid)
}
