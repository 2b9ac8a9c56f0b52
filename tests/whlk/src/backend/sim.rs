//! The default backend: the emulated GPU under the simulated OS (rvgpu-simos), in-process.

use std::time::Duration;

use rvgpu_ddi::adapter::{DXGK_DRIVERCAPS, DXGK_VIDSCHCAPS};
use rvgpu_simos::testing;
use rvgpu_simos::{Irql, Machine, MachineConfig, Mode, Notification, SimError};

use super::{
    Backend, BugCheckInfo, DriverCaps, EngineStateChange, ExecMode, Failure, Misbehaviour, Session,
    SessionConfig, StartedAdapter,
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
        let mut mc = if config.adapters >= 2 {
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
        }))
    }
}

struct SimSession {
    machine: Machine,
    misbehaviour: Option<Misbehaviour>,
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
}
