//! The default backend: the emulated GPU under the simulated OS (rvgpu-simos), in-process.

use std::time::Duration;

use rvgpu_ddi::adapter::{DXGK_DRIVERCAPS, DXGK_VIDSCHCAPS};
use rvgpu_simos::testing;
use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::{
    Irql, Machine, MachineConfig, Mode, MonitoredFence, NativeFence, NativeFenceDesc, Notification,
    ProcessId, SimError, SimEvent, WaitOutcome,
};

use super::{
    Backend, BugCheckInfo, DriverCaps, EngineStateChange, EventRef, ExecMode, Failure, FenceRef,
    FenceValues, Misbehaviour, MonitoredRef, QueueRef, Session, SessionConfig, StartedAdapter,
    WaitResult,
};

/// The simulated backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimBackend;

impl Backend for SimBackend {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn open(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure> {
        let mode = match config.mode {
            ExecMode::Threaded => Mode::Threaded,
            ExecMode::Step => Mode::Step,
        };
        let mut mc = if config.adapters >= 2 && config.legacy_igpu {
            MachineConfig::legacy_igpu_dgpu(mode)
        } else if config.adapters >= 2 {
            MachineConfig::igpu_dgpu(mode)
        } else {
            MachineConfig::single(mode)
        };
        mc.os.native_fence_feature = config.native_fence_feature;
        for a in &mut mc.adapters {
            a.device.idle_f1_ticks = config.idle_f1_ticks;
        }
        Ok(Box::new(SimSession {
            machine: Machine::new(mc),
            misbehaviour: config.misbehaviour,
            fences: Vec::new(),
            monitored: Vec::new(),
            events: Vec::new(),
            queues: Vec::new(),
        }))
    }
}

struct SimSession {
    machine: Machine,
    misbehaviour: Option<Misbehaviour>,
    fences: Vec<NativeFence>,
    monitored: Vec<MonitoredFence>,
    events: Vec<SimEvent>,
    queues: Vec<GpuQueue>,
}

impl SimSession {
    fn monitored_fence(&self, f: MonitoredRef) -> Result<&MonitoredFence, Failure> {
        self.monitored
            .get(f.0)
            .ok_or_else(|| Failure::Backend(format!("no monitored fence {}", f.0)))
    }

    fn add_monitored(&mut self, f: MonitoredFence) -> MonitoredRef {
        self.monitored.push(f);
        MonitoredRef(self.monitored.len() - 1)
    }

    fn fence(&self, f: FenceRef) -> Result<&NativeFence, Failure> {
        self.fences
            .get(f.0)
            .ok_or_else(|| Failure::Backend(format!("no fence {}", f.0)))
    }

    fn add_fence(&mut self, f: NativeFence) -> FenceRef {
        self.fences.push(f);
        FenceRef(self.fences.len() - 1)
    }

    fn queue_and_fence(
        &mut self,
        q: QueueRef,
        f: FenceRef,
    ) -> Result<(&mut GpuQueue, NativeFence), Failure> {
        let fence = self.fence(f)?.clone();
        let queue = self
            .queues
            .get_mut(q.0)
            .ok_or_else(|| Failure::Backend(format!("no queue {}", q.0)))?;
        Ok((queue, fence))
    }
}

fn wait_result(o: WaitOutcome) -> WaitResult {
    match o {
        WaitOutcome::Satisfied => WaitResult::Satisfied,
        WaitOutcome::TimedOut => WaitResult::TimedOut,
        WaitOutcome::Abandoned => WaitResult::Abandoned,
    }
}

fn failure(e: SimError) -> Failure {
    match e {
        SimError::Bugcheck(b) => Failure::BugCheck(BugCheckInfo {
            code: b.code,
            params: b.params,
        }),
        SimError::DdiFailed(s) => Failure::DdiFailed(s),
        SimError::Rejected(m) => Failure::Backend(format!("start refused by the OS: {m}")),
        SimError::Simulation(m) => Failure::Backend(m),
    }
}

fn caps(c: &DXGK_DRIVERCAPS) -> DriverCaps {
    let s = c.SchedulingCaps;
    DriverCaps {
        multi_engine_aware: s.is_set(DXGK_VIDSCHCAPS::MultiEngineAware),
        native_gpu_fence: s.is_set(DXGK_VIDSCHCAPS::NativeGpuFence),
        no_64bit_atomics: s.is_set(DXGK_VIDSCHCAPS::No64BitAtomics),
        nodes: c.GpuEngineTopology.NbAsymetricProcessingNodes,
        per_engine_tdr: c.SupportPerEngineTDR != 0,
        interrupt_message_number: c.InterruptMessageNumber,
        paging_node: c.MemoryManagementCaps.PagingNode,
    }
}

impl Session for SimSession {
    fn adapter_count(&self) -> usize {
        self.machine.adapter_count()
    }

    fn load_driver(&mut self) -> Result<(), Failure> {
        match self.misbehaviour {
            None => self.machine.load_driver(),
            Some(Misbehaviour::IsrReportsUnknownFenceHandle) => {
                self.machine.load_driver_with(|t| {
                    t.DxgkDdiInterruptRoutine = Some(testing::isr_reports_unknown_fence_handle)
                })
            }
            Some(Misbehaviour::IsrCallsPassiveCallback) => self.machine.load_driver_with(|t| {
                t.DxgkDdiInterruptRoutine = Some(testing::isr_calls_passive_callback)
            }),
        }
        .map_err(failure)
    }

    fn start_adapter(&mut self, i: usize) -> Result<StartedAdapter, Failure> {
        let info = self.machine.start_adapter(i).map_err(failure)?;
        Ok(StartedAdapter {
            sources: info.sources,
            children: info.children,
        })
    }

    fn driver_caps(&mut self, i: usize) -> Result<DriverCaps, Failure> {
        self.machine
            .query_driver_caps(i)
            .map(|c| caps(&c))
            .map_err(failure)
    }

    fn driver_caps_at_dispatch(&mut self, i: usize) -> Result<DriverCaps, Failure> {
        self.machine
            .at_irql(Irql::Dispatch, |m| m.query_driver_caps(i))
            .map(|c| caps(&c))
            .map_err(failure)
    }

    fn stop_adapter(&mut self, i: usize) -> Result<(), Failure> {
        self.machine.stop_adapter(i).map_err(failure)
    }

    fn remove_adapter(&mut self, i: usize) -> Result<(), Failure> {
        self.machine.remove_adapter(i).map_err(failure)
    }

    fn unload(&mut self) -> Result<(), Failure> {
        self.machine.unload().map_err(failure)
    }

    fn raise_interrupt(&mut self, i: usize) -> Result<(), Failure> {
        self.machine.raise_interrupt(i).map_err(failure)
    }

    fn run_until(
        &mut self,
        budget: Duration,
        done: &mut dyn FnMut(&dyn Session) -> bool,
    ) -> Result<bool, Failure> {
        // Step mode: one round per 10 µs of budget (rounds are cheap and deterministic).
        let rounds = usize::try_from(budget.as_micros() / 10).unwrap_or(usize::MAX);
        let mut held = false;
        let r = {
            let this: &SimSession = self;
            this.machine.run_until(rounds, budget, |_| {
                held = done(this);
                held
            })
        };
        r.map_err(failure)
    }

    fn engine_state_changes(&self, i: usize) -> Vec<EngineStateChange> {
        self.machine
            .notifications(i)
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

    fn bugcheck(&self) -> Option<BugCheckInfo> {
        self.machine.bugcheck().map(|b| BugCheckInfo {
            code: b.code,
            params: b.params,
        })
    }

    fn interrupt_count(&self, i: usize) -> u64 {
        self.machine.interrupt_counts(i).0
    }

    fn run_until_idle(&mut self) -> Result<(), Failure> {
        self.machine.run_until_idle().map_err(failure)
    }

    fn create_native_fence(
        &mut self,
        i: usize,
        process: u32,
        initial: u64,
        shareable: bool,
    ) -> Result<FenceRef, Failure> {
        let desc = NativeFenceDesc {
            initial,
            shareable,
            ..Default::default()
        };
        let f = self
            .machine
            .create_native_fence(i, ProcessId(process), desc)
            .map_err(failure)?;
        Ok(self.add_fence(f))
    }

    fn open_native_fence(&mut self, f: FenceRef, process: u32) -> Result<FenceRef, Failure> {
        let g = self
            .machine
            .open_native_fence(self.fence(f)?, ProcessId(process))
            .map_err(failure)?;
        Ok(self.add_fence(g))
    }

    fn open_native_fence_on(
        &mut self,
        f: FenceRef,
        adapter: usize,
        process: u32,
    ) -> Result<FenceRef, Failure> {
        let g = self
            .machine
            .open_native_fence_cross_adapter(self.fence(f)?, adapter, ProcessId(process))
            .map_err(failure)?;
        Ok(self.add_fence(g))
    }

    fn destroy_native_fence(&mut self, f: FenceRef) -> Result<(), Failure> {
        self.machine
            .destroy_native_fence(self.fence(f)?)
            .map_err(failure)
    }

    fn native_fence_destroyed(&self, f: FenceRef) -> bool {
        self.fence(f).is_ok_and(NativeFence::is_destroyed)
    }

    fn raw_destroy_native_fence(&mut self, f: FenceRef) -> Result<i32, Failure> {
        let g = self.fence(f)?.global_handle();
        self.machine.ddi_destroy_native_fence(g).map_err(failure)
    }

    fn fence_addresses(&self, f: FenceRef) -> Result<(u64, u64, u32), Failure> {
        let f = self.fence(f)?;
        let stride = self
            .machine
            .native_fence_caps(f.adapter())
            .map_or(0, |c| c.MonitoredValueStride);
        Ok((f.current_value_gpu(), f.monitored_value_gpu(), stride))
    }

    fn fence_values(&self, f: FenceRef) -> Result<FenceValues, Failure> {
        let f = self.fence(f)?;
        Ok(FenceValues {
            current: f.current_value(),
            monitored: f.monitored_value(),
        })
    }

    fn cpu_wait_event(&mut self, f: FenceRef, value: u64) -> Result<EventRef, Failure> {
        let e = self
            .machine
            .wait_native_fence_event(self.fence(f)?, value)
            .map_err(failure)?;
        self.events.push(e);
        Ok(EventRef(self.events.len() - 1))
    }

    fn event_result(&self, e: EventRef, timeout: Duration) -> Option<WaitResult> {
        self.events
            .get(e.0)
            .and_then(|e| e.wait(timeout))
            .map(wait_result)
    }

    fn cpu_wait(
        &mut self,
        f: FenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        self.machine
            .wait_native_fence(self.fence(f)?, value, timeout)
            .map(wait_result)
            .map_err(failure)
    }

    fn cpu_signal(&mut self, f: FenceRef, value: u64) -> Result<(), Failure> {
        self.machine
            .signal_native_fence_from_cpu(self.fence(f)?, value)
            .map_err(failure)
    }

    fn gpu_queue(&mut self, i: usize, engine: u32) -> Result<QueueRef, Failure> {
        // Queue ids only need to be unique per device.
        let id = u32::try_from(self.queues.len() + 1).unwrap_or(u32::MAX);
        let q = GpuQueue::new(&self.machine, i, engine, id).map_err(failure)?;
        self.queues.push(q);
        Ok(QueueRef(self.queues.len() - 1))
    }

    fn gpu_signal(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure> {
        let (queue, fence) = self.queue_and_fence(q, f)?;
        queue.signal(&fence, value).map_err(failure)
    }

    fn gpu_wait(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure> {
        let (queue, fence) = self.queue_and_fence(q, f)?;
        queue.wait(&fence, value).map_err(failure)
    }

    fn gpu_submit(&mut self, q: QueueRef) -> Result<(), Failure> {
        self.queues
            .get(q.0)
            .ok_or_else(|| Failure::Backend(format!("no queue {}", q.0)))?
            .kick()
            .map_err(failure)
    }

    fn gpu_queue_drained(&self, q: QueueRef) -> bool {
        self.queues.get(q.0).is_some_and(GpuQueue::drained)
    }

    fn create_monitored_fence(
        &mut self,
        i: usize,
        process: u32,
        initial: u64,
    ) -> Result<MonitoredRef, Failure> {
        let f = self
            .machine
            .create_monitored_fence(i, ProcessId(process), initial)
            .map_err(failure)?;
        Ok(self.add_monitored(f))
    }

    fn open_native_fence_as_monitored(
        &mut self,
        f: FenceRef,
        adapter: usize,
    ) -> Result<MonitoredRef, Failure> {
        let m = self
            .machine
            .open_native_fence_as_monitored(self.fence(f)?, adapter)
            .map_err(failure)?;
        Ok(self.add_monitored(m))
    }

    fn monitored_value(&self, f: MonitoredRef) -> Result<u64, Failure> {
        Ok(self.monitored_fence(f)?.value())
    }

    fn monitored_wait_event(&mut self, f: MonitoredRef, value: u64) -> Result<EventRef, Failure> {
        let e = self
            .machine
            .wait_monitored_fence_event(self.monitored_fence(f)?, value)
            .map_err(failure)?;
        self.events.push(e);
        Ok(EventRef(self.events.len() - 1))
    }

    fn monitored_signal_cpu(&mut self, f: MonitoredRef, value: u64) -> Result<(), Failure> {
        self.machine
            .signal_monitored_fence_from_cpu(self.monitored_fence(f)?, value)
            .map_err(failure)
    }

    fn gpu_signal_monitored(
        &mut self,
        q: QueueRef,
        f: MonitoredRef,
        value: u64,
    ) -> Result<(), Failure> {
        let fence = self.monitored_fence(f)?.clone();
        self.queues
            .get_mut(q.0)
            .ok_or_else(|| Failure::Backend(format!("no queue {}", q.0)))?
            .signal_monitored(&fence, value)
            .map_err(failure)
    }
}
