//! Surprise removal and a dead bus.
//!
//! Two ways the driver learns that the device is gone:
//! - Dxgkrnl calls `DxgkDdiNotifySurpriseRemoval` (PnP told it; a level-zero DDI that may run
//!   while other DDIs run). From then on the hardware must not be touched.
//! - A register read says so: `DEVICE_STATUS.LOST`, or all-ones from a bus with nothing on it
//!   (hardware.md 10.4), seen by the ISR, a runlist commit or an engine reset.
//!
//! Either way [`crate::mmio::Regs::mark_gone`] stops every further register access (reads
//! return all-ones, writes are dropped), so every DDI that would program the device returns
//! at once: creation and submission paths that must reach the device fail with
//! `STATUS_DEVICE_REMOVED` (a runlist commit refuses), destruction and teardown free the
//! driver's software state without touching the device.

use rvgpu_ddi::adapter::{
    DxgkRemovalHibernation, DxgkRemovalPnPNotify, DXGK_SURPRISE_REMOVAL_TYPE,
};

use crate::adapter::Adapter;
use crate::klog;
use crate::platform::Platform;
use crate::status::{self, Status};

/// DxgkDdiNotifySurpriseRemoval: the hardware is gone. Nothing is freed here (the OS goes on
/// to destroy every object and to stop and remove the adapter, and those DDIs free the
/// software state); the registers are cut off so none of them touches the device.
pub fn notify_surprise_removal<P: Platform>(
    a: &Adapter<P>,
    kind: DXGK_SURPRISE_REMOVAL_TYPE,
) -> Result<(), Status> {
    if kind != DxgkRemovalHibernation && kind != DxgkRemovalPnPNotify {
        return Err(status::INVALID_PARAMETER);
    }
    if let Some(live) = a.live() {
        live.regs.mark_gone();
    }
    klog!(P, Warning, "rvgpu: surprise removal (type {})", kind);
    Ok(())
}

/// For paths that take work *off* the device (suspend, disconnect, destroy): a device that is
/// gone runs nothing, so "removed" means the job is done.
pub fn gone_is_done(r: Result<(), Status>) -> Result<(), Status> {
    match r {
        Err(e) if e == status::DEVICE_REMOVED => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmem::Host;

    /// Taking work off a removed device is done; other failures stay failures.
    #[test]
    fn gone_is_done_only_for_device_removed() {
        assert_eq!(gone_is_done(Err(status::DEVICE_REMOVED)), Ok(()));
        assert_eq!(gone_is_done(Ok(())), Ok(()));
        assert_eq!(
            gone_is_done(Err(status::INVALID_HANDLE)),
            Err(status::INVALID_HANDLE)
        );
    }

    /// Surprise removal of an unstarted adapter: the two removal types are accepted, any
    /// other is STATUS_INVALID_PARAMETER.
    #[test]
    fn surprise_removal_checks_its_type_without_a_started_adapter() {
        let a = Adapter::<Host>::try_new(core::ptr::null_mut()).unwrap();
        assert_eq!(notify_surprise_removal(&a, DxgkRemovalHibernation), Ok(()));
        assert_eq!(notify_surprise_removal(&a, DxgkRemovalPnPNotify), Ok(()));
        assert_eq!(
            notify_surprise_removal(&a, 77),
            Err(status::INVALID_PARAMETER)
        );
    }
}
