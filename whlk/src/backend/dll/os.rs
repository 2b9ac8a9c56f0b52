//! The simulation's view of the OS and the device beside an application on rvgpu_umd.dll:
//! what the OS recorded ([`OsTrace`]), what the OS does to a process or an adapter
//! ([`OsControl`]), faults injected into the device ([`FaultInjection`]) and the machine's bug
//! check ([`BugChecks`]), its record of detection and recovery ([`TdrTrace`]). None of it is the application's: the case's application goes through
//! the DLL's C API, and these are the harness watching and steering the simulated OS and GPU
//! around it, as on the simulation backend (`crate::backend::sim`).
//!
//! The OS's records name D3DKMT objects; a queue is named by the objects its
//! `rvgpu_queue_create` made ([`super::DQueue::objects`]), a process by its device.
//! What depends on objects the DLL keeps to itself (a queue's ring) is not offered here.
//!
//! The kernel-mode testing interface ([`crate::backend::testing`]) is D3DKMT's, not the
//! DLL's: a test program reaches it through the thunks beside the DLL, as here through the
//! simulated thunks on devices of its own.

use std::sync::Arc;

use super::DllSession;
use crate::backend::sim::control;
use crate::backend::sim::failure;
use crate::backend::sim::tdr::{device_engine_probe, os_tdr_steps};
use crate::backend::sim::thunks::SessKmt;
use crate::backend::{
    nth, BufferRef, BugCheckInfo, BugChecks, DeviceLoss, EngineProbe, EngineStateChange, Failure,
    FaultInjection, OsControl, OsEvent, OsTrace, PagingFill, PowerStatus, ProcessRef, StepMode,
    TdrStep, TdrTrace, UmQueueRef,
};

impl DllSession {
    /// The adapter and objects of queue `q` (live or closed).
    pub(crate) fn queue_objects(&self, q: UmQueueRef) -> Result<(usize, &[u32]), Failure> {
        let d = nth(&self.queues, q.0, "queue")?;
        let adapter = self
            .processes
            .get(d.process)
            .map(|p| p.adapter)
            .ok_or_else(|| Failure::Backend(format!("queue {} has no process", q.0)))?;
        Ok((adapter, &d.objects))
    }
}

impl OsTrace for DllSession {
    fn engine_state_changes(&self, i: usize) -> Vec<EngineStateChange> {
        control::engine_state_changes(self.machine(), i)
    }

    fn interrupt_count(&self, i: usize) -> u64 {
        self.machine().interrupt_counts(i).0
    }

    fn os_events(&self, i: usize) -> Result<Vec<OsEvent>, Failure> {
        let q = |h: &u32| {
            self.queues
                .iter()
                .position(|d| d.objects.contains(h))
                .map(UmQueueRef)
        };
        let p = |h: &u32| {
            self.processes
                .iter()
                .position(|d| d.device == *h && d.adapter == i)
                .map(ProcessRef)
        };
        Ok(control::os_events(self.machine(), i, q, p))
    }

    fn power_status(&self, i: usize) -> Result<PowerStatus, Failure> {
        control::power_status(self.machine(), i)
    }

    /// The physical page the OS maps the queue's doorbell to (`None`: the dummy page).
    fn doorbell_mapping(&self, q: UmQueueRef) -> Result<Option<u32>, Failure> {
        let (adapter, objects) = self.queue_objects(q)?;
        objects
            .iter()
            .find_map(|h| self.machine().doorbell_info(adapter, *h))
            .map(|info| info.mapped_page)
            .ok_or_else(|| Failure::Backend(format!("queue {} has no doorbell", q.0)))
    }
}

impl OsControl for DllSession {
    /// The OS suspends every context of the process's live queues (`DxgkDdiSuspendContext`);
    /// a queue object that is not a context is refused by the OS and skipped.
    fn suspend_process(&mut self, p: ProcessRef) -> Result<(), Failure> {
        let ums = self.os_device(p.0)?;
        let objects: Vec<u32> = self
            .queues
            .iter()
            .filter(|q| q.process == p.0 && q.handle.is_some())
            .flat_map(|q| q.objects.iter().copied())
            .collect();
        for h in objects {
            match self.machine().suspend_context(&ums, h) {
                Ok(()) => self.suspended.push((p.0, h)),
                Err(e) if e.status().is_some() => {}
                Err(e) => return Err(failure(e)),
            }
        }
        self.fault().map_or(Ok(()), Err)
    }

    fn resume_process(&mut self, p: ProcessRef) -> Result<(), Failure> {
        let ums = self.os_device(p.0)?;
        let (mine, others) = std::mem::take(&mut self.suspended)
            .into_iter()
            .partition::<Vec<_>, _>(|(pi, _)| *pi == p.0);
        self.suspended = others;
        for (_, c) in mine {
            self.machine().resume_context(&ums, c).map_err(failure)?;
        }
        self.fault().map_or(Ok(()), Err)
    }

    fn power_down(&mut self, i: usize) -> Result<bool, Failure> {
        self.machine().power_down(i).map_err(failure)
    }

    fn power_up(&mut self, i: usize) -> Result<(), Failure> {
        self.machine().power_up(i).map_err(failure)
    }

    fn device_loss(&mut self, i: usize, how: DeviceLoss) -> Result<(), Failure> {
        match how {
            DeviceLoss::DoorbellsAborted => self.machine().device_lost(i),
            DeviceLoss::Removed => self.machine().device_removed(i),
        }
        .map_err(failure)?;
        self.fault().map_or(Ok(()), Err)
    }
}

/// VidMm's paging, steered by the harness around the application.
impl crate::backend::Paging for DllSession {
    /// VidMm's paging transfer into the application's buffer, as on the simulation backend
    /// (the buffer's process is its device's).
    fn page_in(&mut self, b: BufferRef, fill: PagingFill) -> Result<Vec<u32>, Failure> {
        let va = self.buffer_address(b, fill.offset, fill.bytes)?;
        let (p, _) = self.buffer_handle(b)?;
        let ums = self.os_device(p)?;
        self.machine()
            .page_in(
                &ums,
                fill.node,
                rvgpu_hw::addr::GpuVa::new(va),
                fill.bytes,
                fill.pattern,
            )
            .map_err(failure)
    }
}

impl FaultInjection for DllSession {
    fn raise_interrupt(&mut self, i: usize) -> Result<(), Failure> {
        self.machine().raise_interrupt(i).map_err(failure)
    }

    fn inject_hang(&mut self, i: usize, node: u32) -> Result<(), Failure> {
        control::device(self.machine(), i)?.inject_hang(node);
        Ok(())
    }

    fn fail_next_reset(&mut self, i: usize, node: u32) -> Result<(), Failure> {
        control::device(self.machine(), i)?.fail_next_reset(node);
        Ok(())
    }

    fn force_tdr(&mut self, i: usize, node: u32) -> Result<(), Failure> {
        self.machine().force_tdr(i, node).map_err(failure)
    }

    fn complete_before_reset(&mut self, i: usize, node: u32) -> Result<(), Failure> {
        control::complete_before_reset(self.machine(), i, node)
    }
}

/// The OS's record of detection and recovery, as on the simulation backend; a device is named
/// by the process whose `rvgpu_open_adapter` made it.
impl TdrTrace for DllSession {
    fn tdr_steps(&self, i: usize) -> Result<Vec<TdrStep>, Failure> {
        let p = |h: u32| {
            self.processes
                .iter()
                .position(|d| d.device == h && d.adapter == i)
                .map(ProcessRef)
        };
        Ok(os_tdr_steps(self.machine(), i, &p))
    }

    fn tdr_reason(&self, i: usize) -> Result<Option<u32>, Failure> {
        Ok(self.machine().tdr_reason(i).map(|r| r as u32))
    }

    fn tdr_recoveries(&self, i: usize) -> Result<(u64, u64), Failure> {
        Ok(self.machine().tdr_counts(i))
    }

    fn dma_fences(&self, i: usize, node: u32) -> Result<(u32, u32), Failure> {
        Ok(self.machine().legacy_fences(i, node))
    }

    fn retired_fences(&self, i: usize) -> Result<Vec<(u32, u32)>, Failure> {
        Ok(self.machine().legacy_completed(i))
    }

    fn engine_probe(&self, i: usize, node: u32) -> Result<EngineProbe, Failure> {
        device_engine_probe(self.machine(), i, node)
    }
}

/// The harness runs the machine's rounds between the application's calls (its own waits run
/// rounds on its thread).
impl StepMode for DllSession {
    fn run_until_idle(&mut self) -> Result<(), Failure> {
        self.machine().run_until_idle().map_err(failure)
    }
}

impl BugChecks for DllSession {
    fn bugcheck(&self) -> Option<BugCheckInfo> {
        self.machine().bugcheck().map(|b| BugCheckInfo {
            code: b.code,
            params: b.params,
        })
    }
}

impl crate::backend::testing::TestingHost for DllSession {
    type K = SessKmt;

    fn testing(&mut self) -> &mut crate::backend::testing::TestingState<SessKmt> {
        &mut self.testing
    }

    fn testing_ref(&self) -> &crate::backend::testing::TestingState<SessKmt> {
        &self.testing
    }

    fn open_test_device(&mut self, i: usize) -> Result<Arc<SessKmt>, Failure> {
        let p = self.machine().create_process(i).map_err(failure)?;
        Ok(Arc::new(SessKmt::new(self.machine_arc(), p)))
    }

    fn test_failure(&self, s: rvgpu_umd::kmt::NtStatus) -> Failure {
        self.fault().unwrap_or(Failure::DdiFailed(s.0))
    }
}

impl DllSession {
    /// The device of adapter `i` the KMD's test-hook escapes go through.
    fn hooks_device(&mut self, i: usize) -> Result<Arc<SessKmt>, Failure> {
        if let Some(k) = &self.hooks_device {
            return Ok(k.clone());
        }
        let k = crate::backend::testing::TestingHost::open_test_device(self, i)?;
        self.hooks_device = Some(k.clone());
        Ok(k)
    }
}

impl DllSession {
    /// Runs `f` on adapter `i`'s test-hook device; after an adapter-wide recovery reset it
    /// (STATUS_DEVICE_REMOVED, as 24H2's `K:ADAPTER_RENDER::Reset` @0x1403F2C34 resets every
    /// device) the program opens a new one, as a Windows application recovers, and asks that.
    fn on_hooks_device<T>(
        &mut self,
        i: usize,
        mut f: impl FnMut(
            &dyn crate::backend::kmt::sync::TestThunks,
        ) -> Result<T, rvgpu_umd::kmt::NtStatus>,
    ) -> Result<T, Failure> {
        let k = self.hooks_device(i)?;
        match f(crate::backend::kmt::kmd_calls::thunks(&*k)?) {
            Err(s) if s == rvgpu_umd::kmt::STATUS_DEVICE_REMOVED => {
                self.hooks_device = None;
                let k = self.hooks_device(i)?;
                f(crate::backend::kmt::kmd_calls::thunks(&*k)?)
                    .map_err(|s| self.fault().unwrap_or(Failure::DdiFailed(s.0)))
            }
            r => r.map_err(|s| self.fault().unwrap_or(Failure::DdiFailed(s.0))),
        }
    }
}

/// The KMD's journal beside the DLL, through the escape on a device of the harness's own (the
/// machine is the runbook's test machine: `TestHooks` = 1, `crate::backend::kmt::sim`).
impl crate::backend::KmdJournal for DllSession {
    fn kmd_journal(
        &mut self,
        i: usize,
        from: u64,
    ) -> Result<Vec<rvgpu_hw::testhooks::JournalRecord>, Failure> {
        self.on_hooks_device(i, |t| crate::backend::kmt::kmd_calls::read_journal(t, from))
    }

    fn last_dbg_info(&mut self, i: usize) -> Result<(u64, String), Failure> {
        self.on_hooks_device(i, crate::backend::kmt::kmd_calls::read_dbg_info)
    }
}

/// Faults armed in the KMD beside the DLL, through the escape.
impl crate::backend::KmdFaults for DllSession {
    fn arm_kmd_fault(
        &mut self,
        i: usize,
        op: rvgpu_hw::testhooks::TestHookOp,
        node: u32,
    ) -> Result<(), Failure> {
        let mut refused = None;
        let r = self.on_hooks_device(i, |t| {
            crate::backend::kmt::kmd_calls::arm(t, op, node).or_else(|e| match e {
                Failure::DdiFailed(s) => Err(rvgpu_umd::kmt::NtStatus(s)),
                other => {
                    refused = Some(other);
                    Ok(())
                }
            })
        });
        refused.map_or(r, Err)
    }
}
