//! The DLL session's devices for legacy monitored fences ([`OwnDevices`], over which
//! `monitored` writes [`crate::backend::MonitoredFences`]). The DLL's C API has no legacy
//! monitored fence, so the application makes one as any Windows program can: on a D3D device of
//! its own in its process (`D3DKMTCreateDevice`) beside the DLL's, made on first use.
//!
//! The devices go when their process ends (`DllSession::exit_process`) or with the process at
//! the session's end.

use std::sync::Arc;

use super::state::{DDevice, DEvent};
use super::DllSession;
use crate::backend::app::Waiter;
use crate::backend::kmt::monitored::{OwnDevices, OwnMonitored};
use crate::backend::sim::failure;
use crate::backend::sim::thunks::SessKmt;
use crate::backend::Failure;

impl From<Waiter> for DEvent {
    fn from(w: Waiter) -> Self {
        Self::Thread(w)
    }
}

impl OwnDevices for DllSession {
    type Own = SessKmt;

    /// The application's own D3D device in process `p`, made on first use beside the DLL's.
    fn own_device(&mut self, p: usize) -> Result<Arc<SessKmt>, Failure> {
        if let Some(d) = self.own_devices.iter().find(|d| d.process == p) {
            return Ok(d.kmt.clone());
        }
        let (up, _) = self.process(p)?;
        let dll_device = up
            .devices()
            .into_iter()
            .next()
            .ok_or_else(|| Failure::Backend(format!("process {p} has no D3D device")))?;
        let mine = self.m.create_device(&dll_device).map_err(failure)?;
        let kmt = Arc::new(SessKmt::new(self.m.clone(), mine));
        self.own_devices.push(DDevice {
            process: p,
            kmt: kmt.clone(),
        });
        Ok(kmt)
    }

    fn device_of(&self, p: usize) -> Result<Arc<SessKmt>, Failure> {
        // The device ends with the process.
        self.process(p)?;
        (self.own_devices.iter())
            .find(|d| d.process == p)
            .map(|d| d.kmt.clone())
            .ok_or_else(|| Failure::Backend(format!("process {p} has no device")))
    }

    fn own_monitored(&self) -> &[OwnMonitored<SessKmt>] {
        &self.monitored
    }

    fn own_monitored_mut(&mut self) -> &mut Vec<OwnMonitored<SessKmt>> {
        &mut self.monitored
    }
}
