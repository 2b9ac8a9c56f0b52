//! Allocations of user-mode processes: GPU-visible, CPU-mapped system memory, created and
//! destroyed through the thunks, kept alive by the doorbells that reference them (UM-07).

use rvgpu_ddi::ntstatus::*;
use rvgpu_device::SysAlloc;

use crate::dxgkrnl::adapter::AdapterShared;
use crate::dxgkrnl::state::lock;
use crate::error::SimError;
use crate::ums::{dev_guard, device_lock, new_handle, KmtHandle, UmsEvent, UmsOs};

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

#[derive(Debug)]
pub(crate) struct AllocObj {
    pub(crate) device: KmtHandle,
    pub(crate) alloc: SysAlloc,
    /// Doorbells holding a reference (UM-07).
    pub(crate) refs: u32,
    /// The UMD destroyed its handle; the memory waits for the references.
    pub(crate) closed: bool,
}

/// Drops one doorbell reference; frees the memory if the UMD already closed its handle.
pub(crate) fn release_alloc(a: &AdapterShared, os: &mut UmsOs, h: KmtHandle) {
    let free = match os.allocations.get_mut(&h) {
        Some(al) => {
            al.refs = al.refs.saturating_sub(1);
            al.refs == 0 && al.closed
        }
        None => false,
    };
    if free {
        free_alloc(a, os, h);
    }
}

pub(crate) fn free_alloc(a: &AdapterShared, os: &mut UmsOs, h: KmtHandle) {
    if let Some(al) = os.allocations.remove(&h) {
        a.device.memory().free_system(al.alloc.bus_addr);
        os.events.push(UmsEvent::FreeAllocation { allocation: h });
    }
}

pub(crate) fn create_allocation(
    a: &AdapterShared,
    device: KmtHandle,
    size: u64,
) -> Result<(KmtHandle, SysAlloc), SimError> {
    let mut os = lock(&a.ums);
    match os.devices.get(&device) {
        None => return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE)),
        Some(d) if d.in_error => return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED)),
        Some(_) => {}
    }
    let alloc = a
        .device
        .memory()
        .alloc_system(size, PAGE)
        .ok_or(SimError::DdiFailed(STATUS_NO_MEMORY))?;
    let h = new_handle();
    os.allocations.insert(
        h,
        AllocObj {
            device,
            alloc: alloc.clone(),
            refs: 0,
            closed: false,
        },
    );
    Ok((h, alloc))
}

pub(crate) fn destroy_allocation(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    let mut os = lock(&a.ums);
    let Some(al) = os
        .allocations
        .get_mut(&h)
        .filter(|al| al.device == device && !al.closed)
    else {
        return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
    };
    if al.refs > 0 {
        // UM-07: a live doorbell holds it; the memory goes with the last reference.
        al.closed = true;
        return Ok(());
    }
    free_alloc(a, &mut os, h);
    Ok(())
}
