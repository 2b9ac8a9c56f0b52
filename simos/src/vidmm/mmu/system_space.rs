//! VidMm's paging (system) process: its GPU VA space, opened before the system device and
//! built after it, through which the CMP reaches the OS's own pages (fence storage, log
//! buffers, scheduling logs), and the retirement of those pages through the driver before they
//! are reused.

use super::*;

/// Adapter stop, after the system device (which belongs to it) is destroyed: VidMm drops the
/// paging process's mappings without paging them out (the GPU is being stopped and runs
/// nothing any more; every table VidMm hands out again is cleared first), then
/// `DxgkDdiDestroyProcess`, and its tables go back to the heap. The driver drops the system
/// root and its translations when the process goes.
pub(crate) fn close_paging_process(a: &AdapterShared) -> Result<(), SimError> {
    if lock(&a.mm.vidmm).has_process(PAGING_PID) {
        let retired = {
            let mut v = lock(&a.mm.vidmm);
            if let Some(p) = v.processes.get_mut(&PAGING_PID) {
                for (va, pages) in p.space.mapped() {
                    let _ = p.space.unmap(rvgpu_hw::addr::GpuVa::new(va), pages);
                    let _ = p.space.free(rvgpu_hw::addr::GpuVa::new(va));
                }
            }
            std::mem::take(&mut v.retired_system)
        };
        for (bus, _) in retired {
            a.device
                .memory()
                .free_system(rvgpu_hw::addr::BusAddr::new(bus));
        }
        return drop_space(a, PAGING_PID);
    }
    // Opened but its space never built (a start that failed in between).
    let kmd = lock(&a.mm.vidmm).paging_kmd.take();
    match kmd {
        Some(kmd) => ddi_destroy_process(a, kmd),
        None => Ok(()),
    }
}

/// The paging process's GPU VA space (BR-65, BR-66 order; \[D\]
/// `VIDMM_GLOBAL::VidMmInitializePagingProcess` → `VIDMM_PAGING_PROCESS::InitPagingProcess`
/// → `InitPagingProcessVaSpace`): after the system device and contexts exist, VidMm opens
/// the adapter for the system process (`DxgkDdiCreateProcess` with `SystemProcess`),
/// builds its tables through the driver's paging buffers, and gives its root to the
/// paging node's system context (`VidSchSetPagingNodePageDirectory` →
/// `DxgkDdiSetRootPageTable`). From then on the OS's pages the GPU reaches through the
/// system space (fence storage, log buffers, scheduling logs) are mapped here
/// ([`vidmm_map_system`]); nothing else is reachable in it. A GpuMmu adapter only.
///
/// This is the second half; [`open_paging_process`] (before the system device) is the
/// first.
pub(crate) fn vidmm_init_paging_process(
    host: &dyn Host,
    a: &AdapterShared,
) -> Result<(), SimError> {
    let Some(kmd) = paging_process_kmd(a) else {
        return Ok(());
    };
    crate::vidmm::mmu::vidmm_new_space(host, a, PAGING_PID, kmd, PAGING_VA_BASE)?;
    let node = paging_node(a);
    let context = host.paging_context(a, node);
    if context == 0 {
        return Err(sim(format!(
            "no system context on paging node {node} for the paging process's root"
        )));
    }
    set_root(a, PAGING_PID, context).map(|_| ())
}

/// Maps the OS's pages covering `[pa, pa + bytes)` (device addresses) into the paging
/// process at the same VAs, so the CMP reaches them through the system space; pages
/// mapped already stay as they are. Nothing on an adapter without a paging process.
pub(crate) fn vidmm_map_system(
    host: &dyn Host,
    a: &AdapterShared,
    pa: u64,
    bytes: u64,
    tag: LeafTag,
) -> Result<(), SimError> {
    each_system_page(a, pa, bytes, |page| {
        crate::vidmm::mmu::vidmm_map_os_page(host, a, PAGING_PID, page, tag)
    })
}

/// Unmaps what the OS retired (`VidMm::retire_system`) from the paging process and frees it.
/// Called where no thunk or adapter sequencing lock is held (paging takes them).
pub(crate) fn reap_system_pages(host: &dyn Host, a: &AdapterShared) -> Result<(), SimError> {
    let retired = std::mem::take(&mut lock(&a.mm.vidmm).retired_system);
    let mut first_err = None;
    for (bus, bytes) in retired {
        match vidmm_unmap_system(host, a, bus, bytes) {
            Ok(()) => {
                a.device
                    .memory()
                    .free_system(rvgpu_hw::addr::BusAddr::new(bus));
            }
            Err(e) => {
                // Possibly still mapped: never reuse it (adapter stop frees it).
                lock(&a.mm.vidmm).retired_system.push((bus, bytes));
                first_err.get_or_insert(e);
            }
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// Unmaps `[pa, pa + bytes)` from the paging process (before the OS frees those pages),
/// flushing the TLB so the CMP can no longer reach them.
pub(crate) fn vidmm_unmap_system(
    host: &dyn Host,
    a: &AdapterShared,
    pa: u64,
    bytes: u64,
) -> Result<(), SimError> {
    each_system_page(a, pa, bytes, |va| {
        if a.device.is_lost() {
            crate::vidmm::mmu::vidmm_forget(a, PAGING_PID, va, 1);
            Ok(())
        } else {
            crate::vidmm::mmu::vidmm_unmap(host, a, PAGING_PID, va, 1, LeafTag::default())
        }
    })
}

/// Runs `each` on every page of `[pa, pa + bytes)` (at least one) under the system space's
/// serial lock; nothing on an adapter without a paging process.
fn each_system_page(
    a: &AdapterShared,
    pa: u64,
    bytes: u64,
    mut each: impl FnMut(u64) -> Result<(), SimError>,
) -> Result<(), SimError> {
    let Some(serial) = system_serial(a) else {
        return Ok(());
    };
    let _serial = lock(&serial);
    let end = pa
        .checked_add(bytes.max(1))
        .ok_or(SimError::DdiFailed(STATUS_INVALID_PARAMETER))?;
    let mut page = pa - pa % 4096;
    while page < end {
        each(page)?;
        page += 4096;
    }
    Ok(())
}

/// The first half of the paging process (\[D\] `VIDMM_PAGING_PROCESS::InitPagingProcess`, before
/// `VidSchCreateSystemDevices`): VidMm opens the adapter for the system process, so the driver
/// sees `DxgkDdiCreateProcess` with `SystemProcess`; the system device is created in it. A
/// GpuMmu adapter only; a failure fails the start with the driver's status.
pub(crate) fn open_paging_process(a: &AdapterShared) -> Result<(), SimError> {
    if geometry(a).is_none() {
        return Ok(());
    }
    let flags = DXGK_CREATEPROCESSFLAGS::default().with(DXGK_CREATEPROCESSFLAGS::SystemProcess, 1);
    let kmd = ddi_create_process(a, PAGING_PID, flags)?;
    lock(&a.mm.vidmm).paging_kmd = Some(kmd);
    Ok(())
}

/// The driver's handle of the paging process, once opened.
pub(crate) fn paging_process_kmd(a: &AdapterShared) -> Option<usize> {
    lock(&a.mm.vidmm).paging_kmd
}

/// The lock that orders changes to the system space, or `None` on an adapter without a paging
/// process (nothing to map there).
fn system_serial(a: &AdapterShared) -> Option<std::sync::Arc<std::sync::Mutex<()>>> {
    let v = lock(&a.mm.vidmm);
    v.has_process(PAGING_PID).then(|| v.system_serial.clone())
}

/// VidMm building the paging process's space at adapter start (`M:VIDMM_GLOBAL::
/// InitPagingProcessVaSpace` @0x1400F71BC, from `VidMmInitializePagingProcess` @0x1400D339C):
/// from here until the guard drops, after the space, its root and the scheduling logs are in
/// place, every page-table update names its table by CPU address on 24H2
/// (`answers::PagingStart`); under the pages' reading nothing changes.
pub(crate) fn building_paging_space(a: &AdapterShared) -> BuildingPagingSpace<'_> {
    let on = a.os.windows.reading().paging_start == crate::os::answers::PagingStart::CpuVirtual;
    lock(&a.mm.vidmm).cpu_updates = on;
    BuildingPagingSpace { a }
}

/// See [`building_paging_space`].
pub(crate) struct BuildingPagingSpace<'a> {
    a: &'a AdapterShared,
}

impl Drop for BuildingPagingSpace<'_> {
    fn drop(&mut self) {
        lock(&self.a.mm.vidmm).cpu_updates = false;
    }
}
