//! The simulation-only capabilities of the simulated backend: OS traces and controls, fault
//! injection, direct DDI calls, step mode and bug checks.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rvgpu_ddi::basic::PowerDeviceD3;
use rvgpu_ddi::tdr::VIDEO_ENGINE_TIMEOUT_DETECTED;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::{Irql, Machine, Mode, Notification, Power, SimError, UmsEvent};
use rvgpu_umd::kmt::{Kmt, KmtHandle, NtStatus};

use super::thunks;
use super::{caps, failure, SimSession};
use crate::backend::{
    BufferRef, BugCheckInfo, BugChecks, DbgInfoRace, DeviceLoss, DirectDdi, DoorbellStatus,
    DriverCaps, EngineStateChange, Failure, FaultInjection, FenceRef, HeldRecovery, OsControl,
    OsEvent, OsTrace, Paging, PagingFill, PowerStatus, ProcessRef, StepMode, UmQueueRef, Work,
};

impl OsTrace for SimSession {
    fn engine_state_changes(&self, i: usize) -> Vec<EngineStateChange> {
        engine_state_changes(&self.machine, i)
    }

    fn interrupt_count(&self, i: usize) -> u64 {
        self.machine.interrupt_counts(i).0
    }

    fn doorbell_mapping(&self, q: UmQueueRef) -> Result<Option<u32>, Failure> {
        let sq = self.um_queue(q)?;
        let db = thunks::lock(&sq.rec).doorbell;
        db.and_then(|d| self.machine.doorbell_info(self.adapter_of(sq), d))
            .map(|i| i.mapped_page)
            .ok_or_else(|| Failure::Backend(format!("queue {} has no doorbell", q.0)))
    }

    fn power_status(&self, i: usize) -> Result<PowerStatus, Failure> {
        power_status(&self.machine, i)
    }

    fn os_events(&self, i: usize) -> Result<Vec<OsEvent>, Failure> {
        let mut owner: HashMap<KmtHandle, UmQueueRef> = HashMap::new();
        for (qi, q) in self.um_queues.iter().enumerate() {
            let r = thunks::lock(&q.rec);
            let hs = r
                .contexts
                .iter()
                .chain(r.hw_queues.iter().map(|(h, _)| h))
                .chain(r.doorbell.iter());
            for h in hs {
                owner.insert(*h, UmQueueRef(qi));
            }
        }
        let procs = self.processes_by_device();
        let q = |h: &KmtHandle| owner.get(h).copied();
        let p = |h: &KmtHandle| procs.get(h).copied();
        Ok(os_events(&self.machine, i, q, p))
    }
}

/// The engine-state changes the driver reported on adapter `i` (any backend on a [`Machine`]).
pub(crate) fn engine_state_changes(m: &Machine, i: usize) -> Vec<EngineStateChange> {
    m.notifications(i)
        .into_iter()
        .filter_map(|p| match p.notification {
            Notification::EngineStateChange {
                node,
                engine,
                new_state,
            } => Some(EngineStateChange {
                node,
                engine,
                new_state,
            }),
            _ => None,
        })
        .collect()
}

/// Adapter `i`'s power state and each node's F-state.
pub(crate) fn power_status(m: &Machine, i: usize) -> Result<PowerStatus, Failure> {
    let power = m
        .power_state(i)
        .ok_or_else(|| Failure::Backend(format!("no adapter {i}")))?;
    let nodes = u32::try_from(m.node_metadata(i).len()).unwrap_or(0);
    Ok(PowerStatus {
        d3: power == Power::D3,
        node_fstates: (0..nodes)
            .map(|n| m.engine_fstate(i, n).unwrap_or(0))
            .collect(),
    })
}

/// What the OS did on adapter `i` (its UMS event log), with each object named by `q` (the
/// backend's queue of a context, hardware queue or doorbell handle) and each device by `p`.
pub(crate) fn os_events(
    m: &Machine,
    i: usize,
    q: impl Fn(&KmtHandle) -> Option<UmQueueRef>,
    p: impl Fn(&KmtHandle) -> Option<ProcessRef>,
) -> Vec<OsEvent> {
    m.ums_events(i)
        .iter()
        .map(|e| match e {
            UmsEvent::CreateDoorbell { doorbell } => OsEvent::CreateDoorbell { queue: q(doorbell) },
            UmsEvent::ConnectDoorbell { doorbell, page, .. } => OsEvent::Connect {
                queue: q(doorbell),
                page: *page,
            },
            UmsEvent::ConnectFailed { doorbell, status } => OsEvent::ConnectFailed {
                queue: q(doorbell),
                status: *status,
            },
            UmsEvent::CallbackDisconnect {
                doorbell, reason, ..
            } => OsEvent::VictimCallback {
                queue: q(doorbell),
                reason: DoorbellStatus::from_raw(*reason),
            },
            UmsEvent::DisconnectDoorbell { doorbell, reason } => OsEvent::OsDisconnect {
                queue: q(doorbell),
                reason: DoorbellStatus::from_raw(*reason),
            },
            UmsEvent::NotifyWorkSubmission { doorbell } => OsEvent::Notify { queue: q(doorbell) },
            UmsEvent::Submit { queue, value } => OsEvent::KernelSubmit {
                queue: q(queue),
                value: *value,
            },
            UmsEvent::WaitedIdle { queue, value } => OsEvent::WaitedIdle {
                queue: q(queue),
                value: *value,
            },
            UmsEvent::DestroyDoorbell { doorbell } => {
                OsEvent::DestroyDoorbell { queue: q(doorbell) }
            }
            UmsEvent::DestroyHwQueue { queue } => OsEvent::DestroyHwQueue { queue: q(queue) },
            UmsEvent::FreeAllocation { .. } => OsEvent::FreeAllocation,
            UmsEvent::SuspendContext { context, .. } => {
                OsEvent::SuspendContext { queue: q(context) }
            }
            UmsEvent::ResumeContext { context } => OsEvent::ResumeContext { queue: q(context) },
            UmsEvent::DestroyContext { context } => OsEvent::DestroyContext { queue: q(context) },
            UmsEvent::SetPowerState { state } => OsEvent::SetPowerState {
                d3: *state == PowerDeviceD3,
            },
            UmsEvent::SetFState { node, fstate, .. } => OsEvent::SetFState {
                node: *node,
                fstate: *fstate,
            },
            UmsEvent::EngineState { node, state } => OsEvent::EngineState {
                node: *node,
                state: *state,
            },
            UmsEvent::DeviceError { device } => OsEvent::DeviceError { process: p(device) },
            UmsEvent::DestroyDevice { device } => OsEvent::DestroyDevice { process: p(device) },
            _ => OsEvent::Other,
        })
        .collect()
}

impl OsControl for SimSession {
    fn suspend_process(&mut self, p: ProcessRef) -> Result<(), Failure> {
        let up = self.process(p)?;
        let contexts: Vec<KmtHandle> = self
            .um_queues
            .iter()
            .filter(|q| q.process == p.0 && q.q.is_some())
            .flat_map(|q| thunks::lock(&q.rec).contexts.clone())
            .collect();
        for c in contexts {
            self.machine.suspend_context(&up, c).map_err(failure)?;
            self.suspended.push((p.0, c));
        }
        self.check_fault()
    }

    fn resume_process(&mut self, p: ProcessRef) -> Result<(), Failure> {
        let up = self.process(p)?;
        let mine: Vec<KmtHandle> = self
            .suspended
            .iter()
            .filter(|(pi, _)| *pi == p.0)
            .map(|(_, c)| *c)
            .collect();
        self.suspended.retain(|(pi, _)| *pi != p.0);
        for c in mine {
            self.machine.resume_context(&up, c).map_err(failure)?;
        }
        self.check_fault()
    }

    fn power_down(&mut self, i: usize) -> Result<bool, Failure> {
        self.machine.power_down(i).map_err(failure)
    }

    fn power_up(&mut self, i: usize) -> Result<(), Failure> {
        self.machine.power_up(i).map_err(failure)
    }

    fn device_loss(&mut self, i: usize, how: DeviceLoss) -> Result<(), Failure> {
        match how {
            DeviceLoss::DoorbellsAborted => self.machine.device_lost(i),
            DeviceLoss::Removed => self.machine.device_removed(i),
        }
        .map_err(failure)?;
        self.check_fault()
    }
}

impl FaultInjection for SimSession {
    fn raise_interrupt(&mut self, i: usize) -> Result<(), Failure> {
        self.machine.raise_interrupt(i).map_err(failure)
    }

    fn inject_hang(&mut self, i: usize, node: u32) -> Result<(), Failure> {
        device(&self.machine, i)?.inject_hang(node);
        Ok(())
    }

    fn fail_next_reset(&mut self, i: usize, node: u32) -> Result<(), Failure> {
        device(&self.machine, i)?.fail_next_reset(node);
        Ok(())
    }

    fn force_tdr(&mut self, i: usize, node: u32) -> Result<(), Failure> {
        self.machine.force_tdr(i, node).map_err(failure)
    }

    fn complete_before_reset(&mut self, i: usize, node: u32) -> Result<(), Failure> {
        complete_before_reset(&self.machine, i, node)
    }
}

impl HeldRecovery for SimSession {
    /// The simulated OS's pause before the engine reset with the kill on a thread of its own
    /// (`rvgpu_simos::testing::kill_in_recovery`); the pause waits for the kill up to 250 ms
    /// (a kill that waits for the recovery ends after it), then lets the recovery go on.
    fn kill_during_recovery(
        &mut self,
        i: usize,
        p: ProcessRef,
        hang: UmQueueRef,
    ) -> Result<bool, Failure> {
        use crate::backend::UserModeSubmission;
        use rvgpu_simos::testing::kill_in_recovery::kill_during_recovery;
        let up = self.process(p)?;
        let armed = kill_during_recovery(&self.machine, i, up, Duration::from_millis(250))
            .map_err(failure)?;
        self.submit(hang, &[Work::Hang])?;
        let this: &SimSession = self;
        let ended = this
            .machine
            .run_until(1_000_000, Duration::from_secs(10), |_| {
                armed.outcome().is_some()
            })
            .map_err(failure)?;
        let outcome = armed.outcome().filter(|_| ended).ok_or_else(|| {
            Failure::Backend(format!(
                "the kill during the recovery did not end (the recovery {} paused)",
                if armed.fired() { "was" } else { "never" }
            ))
        })?;
        outcome.result.map_err(failure)?;
        self.forget_process(p);
        self.check_fault()?;
        Ok(outcome.ended_while_paused)
    }
}

/// Adapter `i`'s device.
pub(crate) fn device(m: &Machine, i: usize) -> Result<&Arc<rvgpu_device::Device>, Failure> {
    m.device(i)
        .ok_or_else(|| Failure::Backend(format!("no device {i}")))
}

/// The next reset of adapter `i` first lets `node` finish what it has (TDR-07).
pub(crate) fn complete_before_reset(m: &Machine, i: usize, node: u32) -> Result<(), Failure> {
    m.set_tdr_pause(
        i,
        Some(move |d: &Arc<rvgpu_device::Device>| {
            for _ in 0..1_000_000 {
                if !d.engine_snapshot(node).is_some_and(|e| e.has_work) {
                    break;
                }
                d.step();
            }
        }),
    )
    .map_err(failure)
}

impl DirectDdi for SimSession {
    fn ddi_submit_on_user_queue(&mut self, q: UmQueueRef, work: &[Work]) -> Result<i32, Failure> {
        self.submit_on_user_queue(q, work, true)
    }

    fn driver_caps_at_dispatch(&mut self, i: usize) -> Result<DriverCaps, Failure> {
        self.machine
            .at_irql(Irql::Dispatch, |m| m.query_driver_caps(i))
            .map(|c| caps(&c))
            .map_err(failure)
    }

    fn raw_destroy_native_fence(&mut self, f: FenceRef) -> Result<i32, Failure> {
        let g = self.fence(f)?.global_handle();
        self.machine.ddi_destroy_native_fence(g).map_err(failure)
    }

    fn current_fence(&mut self, i: usize, node: u32) -> Result<u32, Failure> {
        self.machine.query_current_fence(i, node).map_err(failure)
    }

    fn dependent_engine_group(&mut self, i: usize, node: u32) -> Result<u64, Failure> {
        self.machine
            .query_dependent_engine_group(i, node)
            .map_err(failure)
    }

    fn collect_dbg_info(&mut self, i: usize, reason: u32) -> Result<String, Failure> {
        self.machine.collect_dbg_info(i, reason).map_err(failure)
    }

    fn collect_dbg_info_under_reset(
        &mut self,
        i: usize,
        node: u32,
    ) -> Result<DbgInfoRace, Failure> {
        if self.machine.config().mode != Mode::Threaded {
            return Err(Failure::Backend(
                "collect_dbg_info_under_reset needs a threaded session".into(),
            ));
        }
        let m = &*self.machine;
        let p = m.create_process(i).map_err(failure)?;
        let ctx = m
            .kmt(&p)
            .create_context(node)
            .map_err(|NtStatus(s)| Failure::DdiFailed(s))?;
        let before = m.tdr_counts(i).0;
        let reset = |m: &Machine| m.tdr_counts(i).0 > before;
        let (race, caps, held) = std::thread::scope(|sc| {
            let collector = sc.spawn(|| {
                let mut r = DbgInfoRace {
                    calls: 0,
                    min_len: usize::MAX,
                    max_len: 0,
                    caps_queries: 0,
                };
                while !reset(m) && r.calls < 100_000 {
                    let t = m.collect_dbg_info(i, VIDEO_ENGINE_TIMEOUT_DETECTED)?;
                    r.calls += 1;
                    r.min_len = r.min_len.min(t.len());
                    r.max_len = r.max_len.max(t.len());
                }
                Ok::<_, SimError>(r)
            });
            let caps = sc.spawn(|| {
                let mut n = 0usize;
                for _ in 0..200 {
                    m.query_driver_caps(i)?;
                    n += 1;
                }
                Ok::<_, SimError>(n)
            });
            let held = m
                .submit_legacy(&p, ctx, &[Command::Hang])
                .and_then(|_| m.run_until(0, Duration::from_secs(10), reset));
            let join = |h: std::thread::ScopedJoinHandle<'_, Result<usize, SimError>>| {
                h.join()
                    .unwrap_or_else(|_| Err(SimError::Simulation("a DDI thread panicked".into())))
            };
            let race = collector.join().unwrap_or_else(|_| {
                Err(SimError::Simulation("the collector thread panicked".into()))
            });
            (race, join(caps), held)
        });
        self.processes.push(p);
        let mut race = race.map_err(failure)?;
        race.caps_queries = caps.map_err(failure)?;
        if !held.map_err(failure)? {
            return Err(Failure::Backend(
                "the HANG was not reset within 10 s".into(),
            ));
        }
        self.check_fault()?;
        Ok(race)
    }
}

impl StepMode for SimSession {
    fn run_until_idle(&mut self) -> Result<(), Failure> {
        self.machine.run_until_idle().map_err(failure)
    }
}

impl BugChecks for SimSession {
    fn bugcheck(&self) -> Option<BugCheckInfo> {
        self.machine.bugcheck().map(|b| BugCheckInfo {
            code: b.code,
            params: b.params,
        })
    }
}

impl Paging for SimSession {
    fn page_in(&mut self, b: BufferRef, fill: PagingFill) -> Result<Vec<u32>, Failure> {
        let va = self.address(b, fill.offset, fill.bytes)?;
        let pi = self.buffer_process[b.0];
        let up = self.process(ProcessRef(pi))?;
        self.machine
            .page_in(
                &up,
                fill.node,
                rvgpu_hw::addr::GpuVa::new(va),
                fill.bytes,
                fill.pattern,
            )
            .map_err(failure)
    }
}
