//! The thunks' lookup of a D3DKMT handle: the object it names, that it belongs to the caller's
//! device, and that the device is not in error, written once. A handle that names no object of
//! the caller's is `STATUS_INVALID_HANDLE` (Windows' per-process handle tables answer so); an
//! object of a device in error is `STATUS_DEVICE_REMOVED`, checked after the handle.

use rvgpu_ddi::ntstatus::{
    STATUS_DEVICE_REMOVED, STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE, STATUS_INVALID_HANDLE,
};

use crate::base::error::SimError;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;

use crate::state::ums::{ContextObj, DeviceObj, DoorbellObj, QueueObj, UmsOs};

/// A handle that names no object of the caller's.
pub(crate) fn invalid_handle() -> SimError {
    SimError::DdiFailed(STATUS_INVALID_HANDLE)
}

impl UmsOs {
    /// Device `h`.
    pub(super) fn device(&self, h: KmtHandle) -> Result<&DeviceObj, SimError> {
        self.devices.get(&h).ok_or_else(invalid_handle)
    }

    /// Device `h`, not in error.
    pub(super) fn live_device(&self, h: KmtHandle) -> Result<&DeviceObj, SimError> {
        let d = self.device(h)?;
        if d.in_error() {
            return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED));
        }
        Ok(d)
    }

    /// `STATUS_DEVICE_REMOVED` when `device` is gone or in error.
    fn device_live(&self, device: KmtHandle) -> Result<(), SimError> {
        if self.devices.get(&device).is_none_or(|d| d.in_error()) {
            return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED));
        }
        Ok(())
    }

    /// Context `h`.
    pub(super) fn context(&self, h: KmtHandle) -> Result<&ContextObj, SimError> {
        self.contexts.get(&h).ok_or_else(invalid_handle)
    }

    /// Context `h` of `device`.
    pub(super) fn context_of(
        &self,
        device: KmtHandle,
        h: KmtHandle,
    ) -> Result<&ContextObj, SimError> {
        self.contexts
            .get(&h)
            .filter(|c| c.device == device)
            .ok_or_else(invalid_handle)
    }

    /// Hardware queue `h`.
    pub(super) fn queue(&self, h: KmtHandle) -> Result<&QueueObj, SimError> {
        self.queues.get(&h).ok_or_else(invalid_handle)
    }

    /// Hardware queue `h` of `device`.
    pub(super) fn queue_of(&self, device: KmtHandle, h: KmtHandle) -> Result<&QueueObj, SimError> {
        self.queues
            .get(&h)
            .filter(|q| q.device == device)
            .ok_or_else(invalid_handle)
    }

    /// Hardware queue `h` of `device`, the device not in error.
    pub(super) fn live_queue_of(
        &self,
        device: KmtHandle,
        h: KmtHandle,
    ) -> Result<&QueueObj, SimError> {
        let q = self.queue_of(device, h)?;
        self.device_live(device)?;
        Ok(q)
    }

    /// `device` as VidSch takes a kernel-mode submission of it: a device in error is
    /// `STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE`, VidSch's own answer
    /// (`M:VidSchSubmitCommandToHwQueue` @0x140048F00 refuses a `VIDSCH_DEVICE` in error before
    /// it allocates the packet; Dxgkrnl's earlier `COREDEVICEACCESS` checks only the adapter).
    /// A removed adapter is Dxgkrnl's `STATUS_DEVICE_REMOVED` first
    /// (`K:DxgkSubmitCommandToHwQueueInternal` @0x1402C5A10).
    pub(super) fn vidsch_device_live(&self, device: KmtHandle) -> Result<(), SimError> {
        if self.removed {
            return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED));
        }
        match self.devices.get(&device) {
            None => Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED)),
            Some(d) if d.in_error() => {
                Err(SimError::DdiFailed(STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE))
            }
            Some(_) => Ok(()),
        }
    }

    /// Doorbell `h` of `device`.
    pub(super) fn doorbell_of(
        &self,
        device: KmtHandle,
        h: KmtHandle,
    ) -> Result<&DoorbellObj, SimError> {
        self.doorbells
            .get(&h)
            .filter(|d| d.device == device)
            .ok_or_else(invalid_handle)
    }

    /// The handles of `device`'s contexts.
    pub(super) fn contexts_of_device(&self, device: KmtHandle) -> Vec<KmtHandle> {
        owned_by(self.contexts.values().map(|c| (c.handle, c.device)), device)
    }

    /// The handles of `device`'s hardware queues.
    pub(super) fn queues_of_device(&self, device: KmtHandle) -> Vec<KmtHandle> {
        owned_by(self.queues.values().map(|q| (q.handle, q.device)), device)
    }

    /// The handles of `device`'s doorbells.
    pub(super) fn doorbells_of_device(&self, device: KmtHandle) -> Vec<KmtHandle> {
        owned_by(
            self.doorbells.values().map(|d| (d.handle, d.device)),
            device,
        )
    }

    /// The handles of `device`'s allocations.
    pub(super) fn allocations_of_device(&self, device: KmtHandle) -> Vec<KmtHandle> {
        owned_by(
            self.allocations.iter().map(|(h, al)| (*h, al.device)),
            device,
        )
    }

    /// The monitored fences process `pid` owns.
    pub(super) fn fences_of_process(&self, pid: ProcessId) -> Vec<KmtHandle> {
        owned_by(self.fence_owner.iter().map(|(h, p)| (*h, *p)), pid)
    }
}

/// The handles among `objects`, `(handle, owner)` pairs, whose owner is `owner`.
fn owned_by<O: PartialEq>(
    objects: impl Iterator<Item = (KmtHandle, O)>,
    owner: O,
) -> Vec<KmtHandle> {
    objects
        .filter(|(_, o)| *o == owner)
        .map(|(h, _)| h)
        .collect()
}
