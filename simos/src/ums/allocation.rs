//! Allocations.

use super::*;

/// Drops one doorbell reference; frees the memory if the UMD already closed its handle.
pub(super) fn release_alloc(a: &AdapterShared, os: &mut UmsOs, h: KmtHandle) {
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

pub(super) fn free_alloc(a: &AdapterShared, os: &mut UmsOs, h: KmtHandle) {
    if let Some(al) = os.allocations.remove(&h) {
        a.device.memory().free_system(al.alloc.bus_addr);
        os.events.push(UmsEvent::FreeAllocation { allocation: h });
    }
}

impl Machine {
    /// Contiguous allocations the driver holds on adapter `i` now (leak checks around a
    /// process's life).
    pub fn contiguous_allocations(&self, i: usize) -> usize {
        self.adapter_shared(i)
            .map_or(0, |a| lock(&a.contiguous).len())
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
