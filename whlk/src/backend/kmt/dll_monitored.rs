//! [`MonitoredFences`] beside the DLL. Its C API has no legacy monitored fence, so the
//! application makes one as any Windows program can: on a D3D device of its own in its process
//! (`D3DKMTCreateDevice`), `D3DKMTCreateSynchronizationObject2` of a `D3DDDI_MONITORED_FENCE`,
//! CPU signals and waits through the sync-object thunks. Its GPU signals are fence-write
//! packets the application submits on its DLL queues (`rvgpu_queue_submit`): the fence's
//! `FenceValueGPUVirtualAddress` is in the process's GPU address space, which every device of
//! the process on that adapter shares.
//!
//! The devices go when their process ends (`DllSession::exit_process`) or with the process at
//! the session's end.
//!
//! Also [`CrossAdapterFences`]: a native fence shared with a process on another adapter as the
//! C API shares any fence (`rvgpu_fence_share`, `rvgpu_fence_open` on that adapter's
//! `RvgpuAdapter*`).

use std::sync::Arc;

use rvgpu_umd::fence::MonitoredFence;
use rvgpu_umd::kmt::FenceCpu;

use super::dll::DllSession;
use super::dll_state::{DDevice, DMonitored};
use super::fences::spawn_wait;
use super::{KmtSync, MonitoredSync};
use crate::backend::app::{append_to_gpu_queue, fence_process, open_native_fence_in, Pending};
use crate::backend::sim::failure;
use crate::backend::sim::kmt::SessKmt;
use crate::backend::{
    nth, CrossAdapterFences, EventRef, Failure, FenceRef, MonitoredFences, MonitoredRef, QueueRef,
};

impl DllSession {
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

    /// The device of a live process that made `f`, with the fence.
    fn monitored_of(&self, f: MonitoredRef) -> Result<(&DMonitored, Arc<SessKmt>), Failure> {
        let m = nth(&self.monitored, f.0, "monitored fence")?;
        // The fence lives as long as its device, which ends with the process.
        self.process(m.process)?;
        let kmt = (self.own_devices.iter())
            .find(|d| d.process == m.process)
            .map(|d| d.kmt.clone())
            .ok_or_else(|| Failure::Backend(format!("process {} has no device", m.process)))?;
        Ok((m, kmt))
    }

    fn thunk_failure(&self, s: rvgpu_umd::kmt::NtStatus) -> Failure {
        self.fault().unwrap_or(Failure::DdiFailed(s.0))
    }
}

impl MonitoredFences for DllSession {
    fn create_monitored_fence(
        &mut self,
        i: usize,
        process: u32,
        initial: u64,
    ) -> Result<MonitoredRef, Failure> {
        let p = fence_process(self, i, process)?;
        let kmt = self.own_device(p)?;
        let MonitoredSync {
            handle,
            value_gpu,
            value,
        } = kmt
            .create_monitored_fence(initial)
            .map_err(|s| self.thunk_failure(s))?;
        self.monitored.push(DMonitored {
            process: p,
            handle,
            value_gpu,
            value,
        });
        Ok(MonitoredRef(self.monitored.len() - 1))
    }

    fn monitored_value(&self, f: MonitoredRef) -> Result<u64, Failure> {
        let (m, _) = self.monitored_of(f)?;
        Ok(m.value.value())
    }

    fn monitored_wait_event(&mut self, f: MonitoredRef, value: u64) -> Result<EventRef, Failure> {
        let (handle, kmt) = {
            let (m, kmt) = self.monitored_of(f)?;
            (m.handle, kmt)
        };
        let w = spawn_wait(kmt, handle, value, &self.app.stop);
        self.app.events.push(super::dll_state::DEvent::Thread(w));
        Ok(EventRef(self.app.events.len() - 1))
    }

    fn monitored_signal_cpu(&mut self, f: MonitoredRef, value: u64) -> Result<(), Failure> {
        let (handle, kmt) = {
            let (m, kmt) = self.monitored_of(f)?;
            (m.handle, kmt)
        };
        kmt.signal_from_cpu(handle, value)
            .map_err(|s| self.thunk_failure(s))
    }

    /// A fence-write packet of the GPU queue's next batch (the legacy signal always
    /// interrupts).
    fn gpu_signal_monitored(
        &mut self,
        q: QueueRef,
        f: MonitoredRef,
        value: u64,
    ) -> Result<(), Failure> {
        let (cmd, owner) = {
            let (m, _) = self.monitored_of(f)?;
            let cmd = MonitoredFence {
                value_gpu: m.value_gpu,
            }
            .signal(value);
            (cmd, m.process)
        };
        append_to_gpu_queue(&mut self.app, q, owner, Pending::Cmd(cmd))
    }
}

impl CrossAdapterFences for DllSession {
    fn open_native_fence_on(
        &mut self,
        f: FenceRef,
        adapter: usize,
        process: u32,
    ) -> Result<FenceRef, Failure> {
        open_native_fence_in(self, f, adapter, process)
    }

    /// Needs an adapter without native fences beside one with them (the seed's legacy iGPU),
    /// which no test machine's `rvgpu-vfu` gives.
    fn open_native_fence_as_monitored(
        &mut self,
        _f: FenceRef,
        _adapter: usize,
        _process: u32,
    ) -> Result<MonitoredRef, Failure> {
        Err(Failure::Unsupported(
            "an adapter without native fences beside one with them (a legacy iGPU)".into(),
        ))
    }
}
