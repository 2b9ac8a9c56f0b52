//! The fence primitives of the seam over D3DKMT (`backend::app`'s `fences` writes
//! [`crate::backend::Fences`] once over them): native fences (`D3DKMTCreateNativeFence`),
//! CPU waits (`D3DKMTWaitForSynchronizationObjectFromCpu`) and signals
//! (`D3DKMTSignalSynchronizationObjectFromCpu`); and the device each process makes legacy
//! monitored fences on (its own, [`OwnDevices`]), over which `monitored` writes
//! [`crate::backend::MonitoredFences`]. What user mode cannot see (MonitoredValue, the system
//! process's GPU addresses) is the simulation-only [`crate::backend::FenceInternals`], which
//! this backend does not have.

// A file beside this one, not a folder: the program's own mappings of its fences.
#[path = "fences_mapping.rs"]
mod mapping;

use std::sync::Arc;

use rvgpu_umd::kmt::NtStatus;

use super::monitored::{OwnDevices, OwnMonitored};
use super::sync::{FenceWait, KmtSync};
use super::KmtSession;
use crate::backend::{Failure, ProcessRef, WaitResult};

impl<K: KmtSync + Send + Sync + 'static> KmtSession<K> {
    pub(super) fn kmt_of(&self, process: usize) -> Result<Arc<K>, Failure> {
        self.process(ProcessRef(process)).map(|(_, k)| k)
    }

    pub(super) fn wait_result(
        &self,
        r: Result<FenceWait, NtStatus>,
    ) -> Result<WaitResult, Failure> {
        match r {
            Ok(FenceWait::Reached) => Ok(WaitResult::Satisfied),
            Ok(FenceWait::TimedOut) => Ok(WaitResult::TimedOut),
            Ok(FenceWait::Abandoned) => Ok(WaitResult::Abandoned),
            Err(s) => Err(self.status(s)),
        }
    }
}

/// A process's monitored fences are made on its device of the case (this program's; another
/// process's is refused, as it forwards no such request).
impl<K: KmtSync + Send + Sync + 'static> OwnDevices for KmtSession<K> {
    type Own = K;

    fn own_device(&mut self, p: usize) -> Result<Arc<K>, Failure> {
        self.kmt_of(p)
    }

    fn device_of(&self, p: usize) -> Result<Arc<K>, Failure> {
        self.kmt_of(p)
    }

    fn own_monitored(&self) -> &[OwnMonitored<K>] {
        &self.monitored
    }

    fn own_monitored_mut(&mut self) -> &mut Vec<OwnMonitored<K>> {
        &mut self.monitored
    }
}
