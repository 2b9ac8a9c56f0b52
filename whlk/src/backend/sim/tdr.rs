//! [`Tdr`] and [`TdrTrace`] of the simulated backend: TDR configuration, kernel-mode contexts
//! and DMA buffers, and the OS's recovery record.

use rvgpu_simos::{Cause, Machine, TdrConfig, TdrEvent};
use rvgpu_umd::kmt::{DeviceExecutionState, Kmt, KmtHandle, NtStatus};

use super::{failure, SimSession};
use crate::backend::{
    nth, ContextRef, DmaContexts, EngineProbe, Failure, ProcessRef, StreamLane, StreamReport, Tdr,
    TdrCause, TdrStep, TdrTimeouts, TdrTrace, Work,
};

/// A `match` of a [`TdrEvent`] into a [`TdrStep`]: the variants listed first carry over field
/// for field (same names on both sides); the arms after `;` convert the rest.
macro_rules! tdr_steps {
    ($e:expr; $($v:ident $({ $($f:ident),* })?,)* ; $($arm:tt)*) => {
        match $e {
            $(TdrEvent::$v $({ $($f),* })? => TdrStep::$v $({ $($f),* })?,)*
            $($arm)*
        }
    };
}

/// The simulation's TDR step as the harness's, with devices named by the session's processes.
fn tdr_step(e: TdrEvent, process: &dyn Fn(KmtHandle) -> Option<ProcessRef>) -> TdrStep {
    tdr_steps! { e;
        PreemptRequested { node, fence },
        Preempted { node, fence, last_completed },
        Timeout { node },
        CollectDbgInfo { reason, bytes },
        Snapshot { node, submitted, completed },
        NothingToReset { node },
        DpcFlushed { node },
        DependentGroup { node, mask },
        EngineStatus { node, responsive },
        Paused { node },
        ResetEngine { node, status, last_aborted },
        Retired { node, fences },
        Aborted { node, fence, paging },
        Resubmitted { node, old, new, paging },
        Restarted,
        Recovered { node },
        ;
        // The OS's debug report, whichever of the two DDIs it called.
        TdrEvent::CollectDbgInfo2 { reason, bytes, .. } => TdrStep::CollectDbgInfo { reason, bytes },
        TdrEvent::Detected { node, cause } => TdrStep::Detected {
            node,
            cause: match cause {
                Cause::DmaTimeout => TdrCause::DmaTimeout,
                Cause::HwQueueStalled { .. } => TdrCause::QueueStalled,
                Cause::EngineHung => TdrCause::EngineHung,
                Cause::Faulted { fence } => TdrCause::Faulted(fence),
            },
        },
        TdrEvent::IgnoredInterrupt { node, fence, .. } => TdrStep::IgnoredInterrupt { node, fence },
        TdrEvent::Invalidated { device } => TdrStep::Invalidated {
            process: process(device),
        },
        TdrEvent::DeviceError {
            device,
            doorbells_aborted,
        } => TdrStep::DeviceError {
            process: process(device),
            doorbells_aborted,
        },
        TdrEvent::AdapterReset { reason } => TdrStep::AdapterReset {
            reason: reason as u32,
        },
        other => TdrStep::Other(format!("{other:?}")),
    }
}

impl Tdr for SimSession {
    fn enable_tdr(&mut self, i: usize, t: TdrTimeouts) -> Result<(), Failure> {
        enable_tdr_on(&self.machine, i, t)
    }

    fn stream(&mut self, lanes: &[StreamLane]) -> Result<Vec<StreamReport>, Failure> {
        self.stream_lanes(lanes)
    }

    fn device_state(&mut self, p: ProcessRef) -> Result<DeviceExecutionState, Failure> {
        self.kmt(p)?
            .device_execution_state()
            .map_err(|NtStatus(s)| Failure::DdiFailed(s))
    }

    fn per_engine_tdr(&mut self, p: ProcessRef) -> Result<bool, Failure> {
        let caps = self
            .kmt(p)?
            .wddm_1_2_caps()
            .map_err(|NtStatus(s)| Failure::DdiFailed(s))?;
        let flags = u32::from_le_bytes([caps[8], caps[9], caps[10], caps[11]]);
        Ok(flags & rvgpu_simos::kmt::query_adapter_info::WDDM_1_2_PER_ENGINE_TDR != 0)
    }
}

impl DmaContexts for SimSession {
    fn create_context(&mut self, p: ProcessRef, node: u32) -> Result<ContextRef, Failure> {
        let h = self
            .kmt(p)?
            .create_context(node)
            .map_err(|NtStatus(s)| self.machine.fault().map_or(Failure::DdiFailed(s), failure))?;
        self.contexts.push((p.0, h));
        Ok(ContextRef(self.contexts.len() - 1))
    }

    fn submit_dma(&mut self, c: ContextRef, work: &[Work]) -> Result<u32, Failure> {
        let (pi, h) = *nth(&self.contexts, c.0, "context")?;
        let up = self.process(ProcessRef(pi))?;
        let cmds = self.encode(work)?;
        self.machine.submit_legacy(&up, h, &cmds).map_err(failure)
    }
}

/// The OS's recovery steps on adapter `i`, devices named by `process` (the sim and DLL
/// backends' [`TdrTrace::tdr_steps`]).
pub(crate) fn os_tdr_steps(
    m: &Machine,
    i: usize,
    process: &dyn Fn(KmtHandle) -> Option<ProcessRef>,
) -> Vec<TdrStep> {
    m.tdr_events(i)
        .into_iter()
        .map(|e| tdr_step(e, process))
        .collect()
}

/// Engine `node` of adapter `i` as the device shows it (the sim and DLL backends'
/// [`TdrTrace::engine_probe`]).
pub(crate) fn device_engine_probe(
    m: &Machine,
    i: usize,
    node: u32,
) -> Result<EngineProbe, Failure> {
    if m.is_pci(i) {
        return Err(Failure::Unsupported(
            "engine internals are not observable on a PCI function".into(),
        ));
    }
    let d = super::control::device(m, i)?;
    let e = d
        .engine_snapshot(node)
        .ok_or_else(|| Failure::Backend(format!("no engine {node}")))?;
    Ok(EngineProbe {
        has_work: e.has_work,
        mid_buffer: e.queues.iter().any(|q| q.indirect.is_some()),
        completed_commands: d.completed_commands(node),
    })
}

/// The OS's record of recovery on the simulated machine, read by the harness.
impl TdrTrace for SimSession {
    fn tdr_steps(&self, i: usize) -> Result<Vec<TdrStep>, Failure> {
        let procs = self.processes_by_device();
        Ok(os_tdr_steps(&self.machine, i, &|h| procs.get(&h).copied()))
    }

    fn tdr_reason(&self, i: usize) -> Result<Option<u32>, Failure> {
        Ok(self.machine.tdr_reason(i).map(|r| r as u32))
    }

    fn tdr_recoveries(&self, i: usize) -> Result<(u64, u64), Failure> {
        Ok(self.machine.tdr_counts(i))
    }

    fn dma_fences(&self, i: usize, node: u32) -> Result<(u32, u32), Failure> {
        Ok(self.machine.legacy_fences(i, node))
    }

    fn retired_fences(&self, i: usize) -> Result<Vec<(u32, u32)>, Failure> {
        Ok(self.machine.legacy_completed(i))
    }

    fn engine_probe(&self, i: usize, node: u32) -> Result<EngineProbe, Failure> {
        device_engine_probe(&self.machine, i, node)
    }
}

/// Turns on the OS's timeout detection and recovery on adapter `i` of `m` with the case's
/// timeouts.
pub(crate) fn enable_tdr_on(m: &Machine, i: usize, t: TdrTimeouts) -> Result<(), Failure> {
    m.enable_tdr(
        i,
        TdrConfig {
            timeout_steps: t.timeout_steps,
            timeout: t.timeout,
            preempt_steps: t.preempt_steps,
            preempt_timeout: t.preempt_timeout,
            ..TdrConfig::default()
        },
    )
    .map_err(failure)
}
