//! The default backend: the emulated GPU under the simulated OS (rvgpu-simos), in-process.
//!
//! User-mode submission runs the real UMD core (`UserQueue`, `KernelQueue`) over the simulated
//! thunks ([`super::sim_kmt::SessKmt`], which shares the machine through an `Arc` so the UMD's
//! objects can live in the session and move to churn threads). Observations map to simos's
//! test accessors (`doorbell_info`, `ums_events`, the device's runlists, `Memory::is_mapped`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rvgpu_ddi::adapter::{DXGK_DRIVERCAPS, DXGK_VIDSCHCAPS};
use rvgpu_ddi::basic::PowerDeviceD3;
use rvgpu_ddi::dxgkrnl::{
    D3DDDI_DOORBELLSTATUS_CONNECTED, D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD,
    D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
};
use rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED;
use rvgpu_ddi::submission::DXGK_NODEMETADATA_FLAGS;
use rvgpu_ddi::tdr::VIDEO_ENGINE_TIMEOUT_DETECTED;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::cmd::LogKind as HwLogKind;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::regs;
use rvgpu_simos::kmt::{SimMem, STATUS_IO_TIMEOUT};
use rvgpu_simos::sync::trace::{Recorder, ReleaseVia, TraceEvent, QPC_HZ};
use rvgpu_simos::testing;
use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::testing::tdr::{self as testing_tdr, Misreport};
use rvgpu_simos::{
    Cause, Irql, Machine, MachineConfig, Mode, MonitoredFence, NativeFence, NativeFenceDesc,
    Notification, Power, ProcessId, SimError, SimEvent, TdrConfig, TdrEvent, UmsEvent, UmsProcess,
    WaitOutcome,
};
use rvgpu_umd::fence::NativeFence as UmdNativeFence;
use rvgpu_umd::fencelog::{FenceTrace, Op};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, Kmt, KmtHandle, NtStatus};
use rvgpu_umd::submit::{KernelQueue, QueueConfig, SubmissionPath, SubmitError, UserQueue};

use super::sim_kmt::{self, Created, SessKmt};
use super::{
    Backend, BufferRef, BugCheckInfo, ChurnLane, ChurnReport, DeviceLoss, DoorbellStatus,
    DriverCaps, EngineStateChange, EventRef, ExecMode, Failure, FenceRef, FenceValues, FenceWork,
    LogCounters, LogKind, Misbehaviour, MonitoredRef, OsEvent, PowerStatus, ProcessEnd, ProcessRef,
    QueueLogs, QueueRef, Session, SessionConfig, StartedAdapter, SubmissionCaps, SubmitPath,
    UmFenceRef, UmQueueInfo, UmQueueRef, WaitResult, Work,
};
use super::{
    ContextRef, DbgInfoRace, EngineProbe, StreamLane, StreamReport, TdrCause, TdrStep, TdrTimeouts,
};
use crate::timeline::{Calibration, FenceOp, Marker, OpKind, QueueTrack, Timeline};

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
        if let Some(n) = config.log_entries {
            mc.os.log_entries = n;
        }
        for a in &mut mc.adapters {
            a.device.idle_f1_ticks = config.idle_f1_ticks;
            if let Some(n) = config.engines {
                a.device.engines = n;
            }
            if let Some(r) = config.per_engine_reset {
                a.device.per_engine_reset = r;
            }
            if let Some(n) = config.doorbells {
                a.device.doorbells = n;
            }
            a.device.global_doorbell = config.global_doorbell;
        }
        Ok(Box::new(SimSession {
            machine: Arc::new(Machine::new(mc)),
            idle_f1: config.idle_f1_ticks > 0,
            processes: Vec::new(),
            buffers: Vec::new(),
            buffer_process: Vec::new(),
            um_queues: Vec::new(),
            suspended: Vec::new(),
            misbehaviour: config.misbehaviour,
            fences: Vec::new(),
            monitored: Vec::new(),
            events: Vec::new(),
            queues: Vec::new(),
            recorder: None,
            um_fences: Vec::new(),
            contexts: Vec::new(),
        }))
    }
}

struct SimSession {
    /// Shared with the UMD objects of `um_queues` (their thunks); the few `&mut` machine
    /// operations (driver and adapter life cycle) drop those first.
    machine: Arc<Machine>,
    idle_f1: bool,
    processes: Vec<UmsProcess>,
    buffers: Vec<Allocation<SimMem>>,
    /// The process index of each buffer.
    buffer_process: Vec<usize>,
    um_queues: Vec<SimUmQueue>,
    /// Contexts `suspend_process` suspended: (process index, context).
    suspended: Vec<(usize, KmtHandle)>,
    misbehaviour: Option<Misbehaviour>,
    fences: Vec<NativeFence>,
    monitored: Vec<MonitoredFence>,
    events: Vec<SimEvent>,
    queues: Vec<GpuQueue>,
    /// The fence timeline's recorder once [`Session::trace_fences`] ran.
    recorder: Option<Arc<Recorder>>,
    um_fences: Vec<SimUmFence>,
    /// Kernel-mode contexts: (process index, context handle).
    contexts: Vec<(usize, KmtHandle)>,
}

/// A native fence made through the UMD thunks: the UMD's view (D3DKMT handle, GPU addresses)
/// and the OS object behind it (for CPU waits and values).
struct SimUmFence {
    umd: UmdNativeFence,
    os: NativeFence,
}

/// A harness queue: the UMD's object while the process lives.
enum UmdQueue {
    User(Box<UserQueue<SessKmt>>),
    Kernel(KernelQueue<SessKmt>),
}

struct SimUmQueue {
    process: usize,
    /// `None` once closed or its process ended.
    q: Option<UmdQueue>,
    rec: Arc<Mutex<Created>>,
    /// The last [`UmQueueInfo`] while `q` was there.
    info: UmQueueInfo,
}

impl UmdQueue {
    fn submit(&mut self, cmds: &[Command]) -> Result<u64, SubmitError> {
        match self {
            Self::User(q) => q.submit(cmds),
            Self::Kernel(q) => q.submit(cmds),
        }
    }

    fn wait(&mut self, value: u64) -> Result<(), SubmitError> {
        match self {
            Self::User(q) => q.wait(value),
            Self::Kernel(q) => q.wait(value),
        }
    }

    fn progress(&self) -> (u64, u64) {
        match self {
            Self::User(q) => (q.last_submitted(), q.completed()),
            Self::Kernel(q) => (q.last_submitted(), q.completed()),
        }
    }

    fn set_fence_trace(&mut self, t: Option<Arc<dyn FenceTrace>>) {
        match self {
            Self::User(q) => q.set_fence_trace(t),
            Self::Kernel(q) => q.set_fence_trace(t),
        }
    }

    fn info(&self) -> UmQueueInfo {
        match self {
            Self::User(q) => UmQueueInfo {
                path: match q.path() {
                    SubmissionPath::UserMode => SubmitPath::UserMode,
                    SubmissionPath::KernelMode => SubmitPath::KernelMode,
                },
                lost: q.is_lost(),
                last_submitted: q.last_submitted(),
                completed: q.completed(),
                queue_id: q.queue_id(),
                scheduled: None,
            },
            Self::Kernel(q) => UmQueueInfo {
                path: SubmitPath::KernelMode,
                lost: false,
                last_submitted: q.last_submitted(),
                completed: q.completed(),
                queue_id: q.queue_id(),
                scheduled: None,
            },
        }
    }
}

/// The queue configuration of every harness queue: small rings, so long runs wrap.
fn queue_config(node: u32) -> QueueConfig {
    QueueConfig {
        node,
        ring_size: 4096,
        command_buffer_size: 4096,
        ..QueueConfig::default()
    }
}

fn doorbell_status(raw: i32) -> DoorbellStatus {
    match raw {
        D3DDDI_DOORBELLSTATUS_CONNECTED => DoorbellStatus::Connected,
        D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD => DoorbellStatus::ConnectedNotify,
        D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY => DoorbellStatus::DisconnectedRetry,
        D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT => DoorbellStatus::DisconnectedAbort,
        other => DoorbellStatus::Other(other),
    }
}

/// A UMD error as a failure; a machine fault (bug check, driver bug) takes precedence.
fn umd_failure(m: &Machine, e: SubmitError) -> Failure {
    if let Some(f) = m.fault() {
        return failure(f);
    }
    match e {
        SubmitError::Kmt(NtStatus(s)) => Failure::DdiFailed(s),
        other => Failure::Backend(format!("UMD: {other:?}")),
    }
}

fn wait_outcome(m: &Machine, r: Result<(), SubmitError>) -> Result<WaitResult, Failure> {
    match r {
        Ok(()) => Ok(WaitResult::Satisfied),
        Err(SubmitError::Kmt(NtStatus(STATUS_IO_TIMEOUT))) if m.fault().is_none() => {
            Ok(WaitResult::TimedOut)
        }
        Err(SubmitError::Kmt(NtStatus(STATUS_DEVICE_REMOVED))) if m.fault().is_none() => {
            Ok(WaitResult::Abandoned)
        }
        Err(e) => Err(umd_failure(m, e)),
    }
}

/// One churn lane on the calling thread.
fn churn_lane(
    m: &Arc<Machine>,
    p: UmsProcess,
    lane: &ChurnLane,
    cmds: &[Vec<Command>],
) -> ChurnReport {
    let mut report = ChurnReport {
        rounds_done: 0,
        kernel_mode_rounds: 0,
        error: None,
    };
    let per = lane.batches_per_round as usize;
    let err = |e: SubmitError| format!("{:?}", umd_failure(m, e));
    for round in 0..lane.rounds as usize {
        let r = (|| -> Result<bool, String> {
            let mut q = UserQueue::new(SessKmt::new(m.clone(), p), &queue_config(lane.node))
                .map_err(err)?;
            let mut last = 0;
            for batch in cmds.iter().skip(round * per).take(per) {
                last = q.submit(batch).map_err(err)?;
            }
            if last > 0 {
                q.wait(last).map_err(err)?;
            }
            let kernel = q.path() == SubmissionPath::KernelMode;
            q.close().map_err(err)?;
            Ok(kernel)
        })();
        match r {
            Ok(kernel) => {
                report.rounds_done += 1;
                report.kernel_mode_rounds += u32::from(kernel);
            }
            Err(e) => {
                report.error = Some(format!("round {round}: {e}"));
                break;
            }
        }
    }
    report
}

impl SimSession {
    /// The machine for the driver and adapter life cycle, which needs it exclusively: the
    /// UMD objects the harness still holds are dropped first (their teardown of objects the
    /// OS already destroyed fails harmlessly).
    fn machine_mut(&mut self) -> Result<&mut Machine, Failure> {
        if Arc::get_mut(&mut self.machine).is_none() {
            for q in &mut self.um_queues {
                q.q = None;
            }
        }
        Arc::get_mut(&mut self.machine)
            .ok_or_else(|| Failure::Backend("the machine is still shared".into()))
    }

    fn process(&self, p: ProcessRef) -> Result<UmsProcess, Failure> {
        self.processes
            .get(p.0)
            .copied()
            .ok_or_else(|| Failure::Backend(format!("no process {}", p.0)))
    }

    fn buffer(&self, b: BufferRef) -> Result<&Allocation<SimMem>, Failure> {
        self.buffers
            .get(b.0)
            .ok_or_else(|| Failure::Backend(format!("no buffer {}", b.0)))
    }

    fn um_queue(&self, q: UmQueueRef) -> Result<&SimUmQueue, Failure> {
        self.um_queues
            .get(q.0)
            .ok_or_else(|| Failure::Backend(format!("no queue {}", q.0)))
    }

    fn live_queue(&mut self, q: UmQueueRef) -> Result<&mut UmdQueue, Failure> {
        self.um_queues
            .get_mut(q.0)
            .ok_or_else(|| Failure::Backend(format!("no queue {}", q.0)))?
            .q
            .as_mut()
            .ok_or_else(|| Failure::Backend(format!("queue {} is closed", q.0)))
    }

    fn address(&self, b: BufferRef, offset: u64, bytes: u64) -> Result<u64, Failure> {
        let a = self.buffer(b)?;
        if offset.checked_add(bytes).is_none_or(|end| end > a.size) {
            return Err(Failure::Backend(format!(
                "{bytes} bytes at {offset:#x} are outside buffer {} ({} bytes)",
                b.0, a.size
            )));
        }
        Ok(a.gpu_va + offset)
    }

    fn encode(&self, work: &[Work]) -> Result<Vec<Command>, Failure> {
        work.iter()
            .map(|w| {
                Ok(match *w {
                    Work::Fill {
                        dst,
                        offset,
                        bytes,
                        pattern,
                    } => Command::Fill {
                        dst: self.address(dst, offset, bytes)?,
                        bytes,
                        pattern,
                    },
                    Work::Copy {
                        src,
                        src_offset,
                        dst,
                        dst_offset,
                        bytes,
                    } => Command::Copy {
                        src: self.address(src, src_offset, bytes)?,
                        dst: self.address(dst, dst_offset, bytes)?,
                        bytes,
                    },
                    Work::WaitAtLeast {
                        buffer,
                        offset,
                        value,
                    } => Command::FenceWait {
                        addr: self.address(buffer, offset, 8)?,
                        value,
                    },
                    Work::Hang => Command::Hang,
                })
            })
            .collect()
    }

    fn adapter_of(&self, q: &SimUmQueue) -> usize {
        self.processes.get(q.process).map_or(0, |p| p.adapter)
    }

    fn scheduled(&self, adapter: usize, queue_id: u32) -> Option<bool> {
        self.machine
            .device(adapter)
            .map(|d| d.queues().iter().any(|s| s.queue_id == queue_id))
    }

    fn check_fault(&self) -> Result<(), Failure> {
        self.machine.fault().map_or(Ok(()), |f| Err(failure(f)))
    }

    fn um_fence(&self, f: UmFenceRef) -> Result<&SimUmFence, Failure> {
        self.um_fences
            .get(f.0)
            .ok_or_else(|| Failure::Backend(format!("no UMD fence {}", f.0)))
    }

    /// A native fence the UMD thunks made (or opened) in `up`, with its OS object.
    fn add_um_fence(
        &mut self,
        up: UmsProcess,
        r: Result<UmdNativeFence, NtStatus>,
    ) -> Result<UmFenceRef, Failure> {
        let umd =
            r.map_err(|NtStatus(s)| self.machine.fault().map_or(Failure::DdiFailed(s), failure))?;
        let os = self
            .machine
            .native_fence_by_kmt(up.adapter, umd.kmt)
            .ok_or_else(|| {
                Failure::Backend(format!(
                    "the OS has no fence for D3DKMT handle {:#x}",
                    umd.kmt
                ))
            })?;
        self.um_fences.push(SimUmFence { umd, os });
        Ok(UmFenceRef(self.um_fences.len() - 1))
    }

    /// The KMD-visible hardware queue handle behind a harness queue (the user-mode one of a
    /// `UserQueue`, else the kernel-mode one) and its adapter.
    fn hw_queue_handle(&self, q: UmQueueRef) -> Result<(usize, KmtHandle), Failure> {
        let sq = self.um_queue(q)?;
        let rec = sim_kmt::lock(&sq.rec);
        let h = rec
            .hw_queues
            .iter()
            .find(|(_, user)| *user)
            .or_else(|| rec.hw_queues.first())
            .map(|(h, _)| *h)
            .ok_or_else(|| Failure::Backend(format!("queue {} has no hardware queue", q.0)))?;
        Ok((self.adapter_of(sq), h))
    }

    /// One calibration sample per adapter now (the recorder sees it as an event).
    fn calibrate_all(&self) {
        for i in 0..self.machine.adapter_count() {
            let _ = self.machine.calibrate_gpu_clock(i, 0);
        }
    }

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

fn hw_kind(k: LogKind) -> HwLogKind {
    match k {
        LogKind::Wait => HwLogKind::Wait,
        LogKind::Signal => HwLogKind::Signal,
    }
}

fn op_kind(k: HwLogKind) -> OpKind {
    match k {
        HwLogKind::Wait => OpKind::Wait,
        HwLogKind::Signal => OpKind::Signal,
    }
}

/// The recorder's data as a [`Timeline`]: the joined operations (docs/logs.md §6.1), the
/// queues, the calibration samples, and markers for lost entries and moved logs (at the
/// queued time of the nearest operation of that log: the OS's events carry no time).
fn recorded_timeline(rec: &Recorder, label: &str) -> Timeline {
    let mut tl = Timeline::new(label, QPC_HZ);
    let ops = rec.operations();
    tl.ops = ops
        .iter()
        .map(|o| FenceOp {
            adapter: o.adapter,
            queue_id: o.queue_id,
            kind: op_kind(o.kind),
            index: o.index,
            fence: o.fence,
            value: o.value,
            queued_qpc: o.queued_qpc,
            observed_gpu: o.observed_gpu,
            end_gpu: o.end_gpu,
            mismatch: o.mismatch,
        })
        .collect();
    // When something happened to log (adapter, queue, kind) around free-running index `at`.
    let when = |adapter: usize, queue_id: u32, kind: HwLogKind, at: u64| -> Option<u64> {
        let of_log = || {
            ops.iter()
                .filter(move |o| o.adapter == adapter && o.queue_id == queue_id && o.kind == kind)
        };
        of_log()
            .filter(|o| u64::from(o.index) >= at)
            .filter_map(|o| o.queued_qpc)
            .min()
            .or_else(|| of_log().filter_map(|o| o.queued_qpc).max())
    };
    let log_name = |k: HwLogKind| match k {
        HwLogKind::Wait => "wait",
        HwLogKind::Signal => "signal",
    };
    for e in rec.events() {
        match e {
            TraceEvent::QueueCreated {
                adapter,
                queue_id,
                node,
                process,
                ..
            } => tl.queues.push(QueueTrack {
                adapter,
                queue_id,
                node,
                process: Some(u64::from(process.0)),
            }),
            TraceEvent::Calibration {
                adapter,
                gpu_hz,
                gpu,
                cpu,
                bracket,
                ..
            } => tl.calibrations.push(Calibration {
                adapter,
                gpu_hz,
                gpu,
                cpu,
                bracket,
            }),
            TraceEvent::LogLost {
                adapter,
                queue_id,
                kind,
                from,
                to,
            } => {
                if let Some(qpc) = when(adapter, queue_id, kind, from) {
                    tl.markers.push(Marker {
                        adapter,
                        queue_id: Some(queue_id),
                        qpc,
                        text: format!(
                            "{} log overflow: entries {from}..{to} lost ({})",
                            log_name(kind),
                            to.saturating_sub(from)
                        ),
                    });
                }
            }
            TraceEvent::LogRecreated {
                adapter,
                queue_id,
                kind,
                at,
                entries,
            } => {
                if let Some(qpc) = when(adapter, queue_id, kind, at) {
                    tl.markers.push(Marker {
                        adapter,
                        queue_id: Some(queue_id),
                        qpc,
                        text: format!(
                            "{} log moved to a new buffer of {entries} entries from index {at}",
                            log_name(kind)
                        ),
                    });
                }
            }
            TraceEvent::WaitReleased {
                adapter,
                fence_kmt,
                value,
                via: ReleaseVia::Scan,
                qpc,
                ..
            } => tl.markers.push(Marker {
                adapter,
                queue_id: None,
                qpc,
                text: format!(
                    "CPU wait F{fence_kmt:#x}≥{value} released by a fallback scan of every fence"
                ),
            }),
            _ => {}
        }
    }
    tl
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

/// The simulation's TDR step as the harness's, with devices named by the session's processes.
fn tdr_step(e: TdrEvent, process: &dyn Fn(KmtHandle) -> Option<ProcessRef>) -> TdrStep {
    match e {
        TdrEvent::Detected { node, cause } => TdrStep::Detected {
            node,
            cause: match cause {
                Cause::DmaTimeout => TdrCause::DmaTimeout,
                Cause::HwQueueStalled { .. } => TdrCause::QueueStalled,
                Cause::EngineHung => TdrCause::EngineHung,
                Cause::Faulted { fence } => TdrCause::Faulted(fence),
            },
        },
        TdrEvent::PreemptRequested { node, fence } => TdrStep::PreemptRequested { node, fence },
        TdrEvent::Preempted {
            node,
            fence,
            last_completed,
        } => TdrStep::Preempted {
            node,
            fence,
            last_completed,
        },
        TdrEvent::Timeout { node } => TdrStep::Timeout { node },
        TdrEvent::CollectDbgInfo { reason, bytes } => TdrStep::CollectDbgInfo { reason, bytes },
        TdrEvent::Snapshot {
            node,
            submitted,
            completed,
        } => TdrStep::Snapshot {
            node,
            submitted,
            completed,
        },
        TdrEvent::NothingToReset { node } => TdrStep::NothingToReset { node },
        TdrEvent::DpcFlushed { node } => TdrStep::DpcFlushed { node },
        TdrEvent::DependentGroup { node, mask } => TdrStep::DependentGroup { node, mask },
        TdrEvent::EngineStatus { node, responsive } => TdrStep::EngineStatus { node, responsive },
        TdrEvent::Paused { node } => TdrStep::Paused { node },
        TdrEvent::IgnoredInterrupt { node, fence, .. } => TdrStep::IgnoredInterrupt { node, fence },
        TdrEvent::ResetEngine {
            node,
            status,
            last_aborted,
        } => TdrStep::ResetEngine {
            node,
            status,
            last_aborted,
        },
        TdrEvent::Invalidated { device } => TdrStep::Invalidated {
            process: process(device),
        },
        TdrEvent::Retired { node, fences } => TdrStep::Retired { node, fences },
        TdrEvent::Aborted {
            node,
            fence,
            paging,
        } => TdrStep::Aborted {
            node,
            fence,
            paging,
        },
        TdrEvent::Resubmitted {
            node,
            old,
            new,
            paging,
        } => TdrStep::Resubmitted {
            node,
            old,
            new,
            paging,
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
        TdrEvent::Restarted => TdrStep::Restarted,
        TdrEvent::Recovered { node } => TdrStep::Recovered { node },
        other => TdrStep::Other(format!("{other:?}")),
    }
}

/// One [`StreamLane`] on the calling thread, on the queue it took.
fn stream_lane(
    m: &Machine,
    lane: &StreamLane,
    cmds: &[Vec<Command>],
    adapter: usize,
    q: &mut UmdQueue,
) -> StreamReport {
    let step = m.config().mode == Mode::Step;
    if !step {
        std::thread::sleep(lane.start_after);
    }
    let mut rep = StreamReport {
        submitted: 0,
        last_value: 0,
        recovered_at: None,
        error: None,
    };
    for batch in cmds {
        if let Some((min, more)) = lane.stop_after_recovery {
            if rep.recovered_at.is_none() && rep.submitted >= min && m.tdr_counts(adapter) != (0, 0)
            {
                rep.recovered_at = Some(rep.submitted);
            }
            if rep.recovered_at.is_some_and(|r| rep.submitted >= r + more) {
                break;
            }
        }
        if lane.max_in_flight > 0 {
            let t0 = std::time::Instant::now();
            loop {
                let (last, done) = q.progress();
                if last.saturating_sub(done) < lane.max_in_flight {
                    break;
                }
                if t0.elapsed() > Duration::from_secs(20) {
                    rep.error = Some(format!(
                        "batch {}: {} batches in flight for 20 s",
                        rep.submitted,
                        last - done
                    ));
                    return rep;
                }
                if step {
                    if let Err(e) = m.run_steps(1) {
                        rep.error = Some(format!("{:?}", failure(e)));
                        return rep;
                    }
                } else {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        }
        match q.submit(batch) {
            Ok(v) => {
                rep.submitted += 1;
                rep.last_value = v;
            }
            Err(e) => {
                rep.error = Some(format!("batch {}: {:?}", rep.submitted, umd_failure(m, e)));
                return rep;
            }
        }
    }
    if lane.wait && rep.last_value > 0 {
        if let Err(e) = q.wait(rep.last_value) {
            rep.error = Some(format!(
                "waiting for {}: {:?}",
                rep.last_value,
                umd_failure(m, e)
            ));
        }
    }
    rep
}

impl Session for SimSession {
    fn adapter_count(&self) -> usize {
        self.machine.adapter_count()
    }

    fn load_driver(&mut self) -> Result<(), Failure> {
        let misbehaviour = self.misbehaviour;
        let m = self.machine_mut()?;
        match misbehaviour {
            None => m.load_driver(),
            Some(Misbehaviour::IsrReportsUnknownFenceHandle) => m.load_driver_with(|t| {
                t.DxgkDdiInterruptRoutine = Some(testing::isr_reports_unknown_fence_handle)
            }),
            Some(Misbehaviour::IsrCallsPassiveCallback) => m.load_driver_with(|t| {
                t.DxgkDdiInterruptRoutine = Some(testing::isr_calls_passive_callback)
            }),
            Some(Misbehaviour::ResetEngineMisreportsAbortedFence(d)) => {
                m.load_driver_with(move |t| {
                    let how = if d >= 0 {
                        Misreport::Plus(d.unsigned_abs())
                    } else {
                        Misreport::Minus(d.unsigned_abs())
                    };
                    testing_tdr::misreport_aborted(t, how);
                })
            }
            Some(Misbehaviour::NoResetEngineDdi) => {
                m.load_driver_with(|t| t.DxgkDdiResetEngine = None)
            }
        }
        .map_err(failure)
    }

    fn start_adapter(&mut self, i: usize) -> Result<StartedAdapter, Failure> {
        let info = self.machine_mut()?.start_adapter(i).map_err(failure)?;
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
        self.machine_mut()?.stop_adapter(i).map_err(failure)
    }

    fn remove_adapter(&mut self, i: usize) -> Result<(), Failure> {
        self.machine_mut()?.remove_adapter(i).map_err(failure)
    }

    fn unload(&mut self) -> Result<(), Failure> {
        self.machine_mut()?.unload().map_err(failure)
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
        // A user-mode queue of its own process; the KMD picks the queue id.
        let q = GpuQueue::new(&self.machine, i, engine).map_err(failure)?;
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

    fn submission_caps(&mut self, i: usize) -> Result<SubmissionCaps, Failure> {
        Ok(SubmissionCaps {
            user_mode_nodes: self
                .machine
                .node_metadata(i)
                .iter()
                .map(|m| m.Flags.is_set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission))
                .collect(),
            doorbell_size: self
                .machine
                .usermode_submission_caps(i)
                .map(|c| c.DoorbellSizeInBytes),
        })
    }

    fn open_process(&mut self, i: usize) -> Result<ProcessRef, Failure> {
        let p = self.machine.create_process(i).map_err(failure)?;
        self.processes.push(p);
        Ok(ProcessRef(self.processes.len() - 1))
    }

    fn end_process(&mut self, p: ProcessRef, how: ProcessEnd) -> Result<(), Failure> {
        let up = self.process(p)?;
        match how {
            ProcessEnd::Normal => self.machine.exit_process(&up),
            ProcessEnd::Abnormal => self.machine.kill_process(&up),
        }
        .map_err(failure)?;
        // The process is gone with its UMD: drop the UMD's objects (their teardown finds
        // nothing left to destroy).
        for q in self.um_queues.iter_mut().filter(|q| q.process == p.0) {
            if let Some(u) = q.q.take() {
                q.info = u.info();
            }
        }
        self.suspended.retain(|(pi, _)| *pi != p.0);
        self.check_fault()
    }

    fn create_buffer(&mut self, p: ProcessRef, bytes: u64) -> Result<BufferRef, Failure> {
        let up = self.process(p)?;
        let a = self
            .machine
            .kmt(&up)
            .create_allocation(bytes)
            .map_err(|NtStatus(s)| Failure::DdiFailed(s))?;
        for off in (0..a.size).step_by(8) {
            a.mem.store(off, 0);
        }
        self.buffers.push(a);
        self.buffer_process.push(p.0);
        Ok(BufferRef(self.buffers.len() - 1))
    }

    fn read_buffer(&self, b: BufferRef, offset: u64) -> Result<u64, Failure> {
        self.address(b, offset, 8)?;
        Ok(self.buffer(b)?.mem.load(offset))
    }

    fn write_buffer(&mut self, b: BufferRef, offset: u64, value: u64) -> Result<(), Failure> {
        let addr = self.address(b, offset, 8)?;
        self.buffer(b)?.mem.store(offset, value);
        // A FENCE_WAIT blocked on this word re-evaluates (what the OS's CPU signal does on
        // this device: WAIT_RESCAN with the address).
        for i in 0..self.machine.adapter_count() {
            if let Some(d) = self.machine.device(i) {
                d.write64(regs::WAIT_RESCAN, addr);
            }
        }
        self.check_fault()
    }

    fn create_queue(
        &mut self,
        p: ProcessRef,
        node: u32,
        kind: SubmitPath,
    ) -> Result<UmQueueRef, Failure> {
        let up = self.process(p)?;
        let kmt = SessKmt::new(self.machine.clone(), up);
        let rec = kmt.record();
        let cfg = queue_config(node);
        let q = match kind {
            SubmitPath::UserMode => UserQueue::new(kmt, &cfg).map(|q| UmdQueue::User(Box::new(q))),
            SubmitPath::KernelMode => KernelQueue::new(kmt, &cfg).map(UmdQueue::Kernel),
        }
        .map_err(|e| umd_failure(&self.machine, e))?;
        let mut q = q;
        if let Some(r) = &self.recorder {
            q.set_fence_trace(Some(Arc::new(r.for_adapter(up.adapter))));
        }
        self.um_queues.push(SimUmQueue {
            process: p.0,
            info: q.info(),
            q: Some(q),
            rec,
        });
        Ok(UmQueueRef(self.um_queues.len() - 1))
    }

    fn submit(&mut self, q: UmQueueRef, work: &[Work]) -> Result<u64, Failure> {
        let cmds = self.encode(work)?;
        let m = self.machine.clone();
        let r = match self.live_queue(q)? {
            UmdQueue::User(u) => u.submit(&cmds),
            UmdQueue::Kernel(k) => k.submit(&cmds),
        };
        let v = r.map_err(|e| umd_failure(&m, e))?;
        self.check_fault()?;
        Ok(v)
    }

    fn wait_progress(&mut self, q: UmQueueRef, value: u64) -> Result<WaitResult, Failure> {
        let m = self.machine.clone();
        let r = match self.live_queue(q)? {
            UmdQueue::User(u) => u.wait(value),
            UmdQueue::Kernel(k) => k.wait(value),
        };
        wait_outcome(&m, r)
    }

    fn queue_info(&self, q: UmQueueRef) -> Result<UmQueueInfo, Failure> {
        let sq = self.um_queue(q)?;
        let mut info = sq.q.as_ref().map_or(sq.info, UmdQueue::info);
        info.scheduled = self.scheduled(self.adapter_of(sq), info.queue_id);
        Ok(info)
    }

    fn close_queue(&mut self, q: UmQueueRef) -> Result<(), Failure> {
        let m = self.machine.clone();
        let sq = self
            .um_queues
            .get_mut(q.0)
            .ok_or_else(|| Failure::Backend(format!("no queue {}", q.0)))?;
        let u =
            sq.q.take()
                .ok_or_else(|| Failure::Backend(format!("queue {} is closed", q.0)))?;
        sq.info = u.info();
        match u {
            UmdQueue::User(u) => u.close(),
            UmdQueue::Kernel(k) => k.close(),
        }
        .map_err(|e| umd_failure(&m, e))?;
        self.check_fault()
    }

    fn doorbell_status(&self, q: UmQueueRef) -> Result<DoorbellStatus, Failure> {
        let sq = self.um_queue(q)?;
        let db = sim_kmt::lock(&sq.rec).doorbell;
        db.and_then(|d| self.machine.doorbell_info(self.adapter_of(sq), d))
            .map(|i| doorbell_status(i.status))
            .ok_or_else(|| {
                Failure::Backend(format!(
                    "queue {} has no doorbell (kernel-mode queue, fallen back, or destroyed)",
                    q.0
                ))
            })
    }

    fn doorbell_mapping(&self, q: UmQueueRef) -> Result<Option<u32>, Failure> {
        let sq = self.um_queue(q)?;
        let db = sim_kmt::lock(&sq.rec).doorbell;
        db.and_then(|d| self.machine.doorbell_info(self.adapter_of(sq), d))
            .map(|i| i.mapped_page)
            .ok_or_else(|| Failure::Backend(format!("queue {} has no doorbell", q.0)))
    }

    fn kernel_submit_on_user_queue(
        &mut self,
        q: UmQueueRef,
        work: &[Work],
        direct_ddi: bool,
    ) -> Result<i32, Failure> {
        let cmds = self.encode(work)?;
        let sq = self.um_queue(q)?;
        let up = self.process(ProcessRef(sq.process))?;
        let handle = sim_kmt::lock(&sq.rec)
            .hw_queues
            .iter()
            .find(|(_, user)| *user)
            .map(|(h, _)| *h)
            .ok_or_else(|| Failure::Backend(format!("queue {} is not a user-mode queue", q.0)))?;
        let value = self.queue_info(q)?.last_submitted + 1;
        let k = self.machine.kmt(&up);
        let cb = k
            .create_allocation(4096)
            .map_err(|NtStatus(s)| Failure::DdiFailed(s))?;
        let mut off = 0u64;
        for c in &cmds {
            let mut w = [0u64; 8];
            let n = c
                .encode(&mut w)
                .ok_or_else(|| Failure::Backend(format!("cannot encode {c:?}")))?;
            for word in w.iter().take(n) {
                cb.mem.store(off, *word);
                off += 8;
            }
        }
        let bytes = u32::try_from(off).unwrap_or(u32::MAX);
        let status = if direct_ddi {
            self.machine
                .ddi_submit_command_to_hw_queue(&up, handle, value, cb.gpu_va, bytes)
                .map_err(failure)?
        } else {
            match k.submit_command_to_hw_queue(handle, value, cb.gpu_va, bytes) {
                Ok(()) => 0,
                Err(NtStatus(s)) => s,
            }
        };
        if status < 0 {
            // Refused: nothing references the command buffer.
            let _ = k.destroy_allocation(cb.handle);
        }
        self.check_fault()?;
        Ok(status)
    }

    fn release_ring_handles(&mut self, q: UmQueueRef) -> Result<(), Failure> {
        let sq = self.um_queue(q)?;
        let up = self.process(ProcessRef(sq.process))?;
        let (ring, control) = sim_kmt::lock(&sq.rec)
            .ring
            .ok_or_else(|| Failure::Backend(format!("queue {} has no ring", q.0)))?;
        let k = self.machine.kmt(&up);
        for h in [ring, control] {
            k.destroy_allocation(h)
                .map_err(|NtStatus(s)| Failure::DdiFailed(s))?;
            sim_kmt::lock(&sq.rec).released.push(h);
        }
        self.check_fault()
    }

    fn ring_resident(&self, q: UmQueueRef) -> Result<bool, Failure> {
        let sq = self.um_queue(q)?;
        let rec = sim_kmt::lock(&sq.rec);
        let (ring, control) = rec
            .ring
            .ok_or_else(|| Failure::Backend(format!("queue {} has no ring", q.0)))?;
        let mem = self.machine.memory();
        Ok([ring, control].iter().all(|h| {
            rec.allocations
                .get(h)
                .is_some_and(|&(gpu, size)| mem.is_mapped(gpu, size))
        }))
    }

    fn suspend_process(&mut self, p: ProcessRef) -> Result<(), Failure> {
        let up = self.process(p)?;
        let contexts: Vec<KmtHandle> = self
            .um_queues
            .iter()
            .filter(|q| q.process == p.0 && q.q.is_some())
            .flat_map(|q| sim_kmt::lock(&q.rec).contexts.clone())
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

    fn await_engine_f1(&mut self, i: usize, node: u32, budget: Duration) -> Result<bool, Failure> {
        if !self.idle_f1 {
            return Err(Failure::Unsupported(
                "the simulated engines request F1 only with SessionConfig::idle_f1_ticks set"
                    .into(),
            ));
        }
        let rounds = usize::try_from(budget.as_micros() / 10).unwrap_or(usize::MAX);
        self.machine
            .run_until(rounds, budget, |m| m.engine_fstate(i, node) == Some(1))
            .map_err(failure)
    }

    fn power_down(&mut self, i: usize) -> Result<bool, Failure> {
        self.machine.power_down(i).map_err(failure)
    }

    fn power_up(&mut self, i: usize) -> Result<(), Failure> {
        self.machine.power_up(i).map_err(failure)
    }

    fn power_status(&self, i: usize) -> Result<PowerStatus, Failure> {
        let power = self
            .machine
            .power_state(i)
            .ok_or_else(|| Failure::Backend(format!("no adapter {i}")))?;
        let nodes = u32::try_from(self.machine.node_metadata(i).len()).unwrap_or(0);
        Ok(PowerStatus {
            d3: power == Power::D3,
            node_fstates: (0..nodes)
                .map(|n| self.machine.engine_fstate(i, n).unwrap_or(0))
                .collect(),
        })
    }

    fn device_loss(&mut self, i: usize, how: DeviceLoss) -> Result<(), Failure> {
        match how {
            DeviceLoss::DoorbellsAborted => self.machine.device_lost(i),
            DeviceLoss::Removed => self.machine.device_removed(i),
        }
        .map_err(failure)?;
        self.check_fault()
    }

    fn os_events(&self, i: usize) -> Result<Vec<OsEvent>, Failure> {
        let mut owner: HashMap<KmtHandle, UmQueueRef> = HashMap::new();
        for (qi, q) in self.um_queues.iter().enumerate() {
            let r = sim_kmt::lock(&q.rec);
            let hs = r
                .contexts
                .iter()
                .chain(r.hw_queues.iter().map(|(h, _)| h))
                .chain(r.doorbell.iter());
            for h in hs {
                owner.insert(*h, UmQueueRef(qi));
            }
        }
        let procs: HashMap<KmtHandle, ProcessRef> = self
            .processes
            .iter()
            .enumerate()
            .map(|(i, p)| (p.device, ProcessRef(i)))
            .collect();
        let q = |h: &KmtHandle| owner.get(h).copied();
        let p = |h: &KmtHandle| procs.get(h).copied();
        Ok(self
            .machine
            .ums_events(i)
            .iter()
            .map(|e| match e {
                UmsEvent::CreateDoorbell { doorbell } => {
                    OsEvent::CreateDoorbell { queue: q(doorbell) }
                }
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
                    reason: doorbell_status(*reason),
                },
                UmsEvent::DisconnectDoorbell { doorbell, reason } => OsEvent::OsDisconnect {
                    queue: q(doorbell),
                    reason: doorbell_status(*reason),
                },
                UmsEvent::NotifyWorkSubmission { doorbell } => {
                    OsEvent::Notify { queue: q(doorbell) }
                }
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
                UmsEvent::DestroyContext { context } => {
                    OsEvent::DestroyContext { queue: q(context) }
                }
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
            .collect())
    }

    fn churn(&mut self, lanes: &[ChurnLane]) -> Result<Vec<ChurnReport>, Failure> {
        let mut jobs = Vec::with_capacity(lanes.len());
        for lane in lanes {
            let p = self.process(lane.process)?;
            let cmds = lane
                .work
                .iter()
                .map(|w| self.encode(w))
                .collect::<Result<Vec<_>, _>>()?;
            jobs.push((p, lane, cmds));
        }
        let m = &self.machine;
        let reports = if self.machine.config().mode == Mode::Threaded {
            std::thread::scope(|s| {
                let handles: Vec<_> = jobs
                    .iter()
                    .map(|(p, lane, cmds)| s.spawn(move || churn_lane(m, *p, lane, cmds)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| ChurnReport {
                            rounds_done: 0,
                            kernel_mode_rounds: 0,
                            error: Some("lane thread panicked".into()),
                        })
                    })
                    .collect()
            })
        } else {
            jobs.iter()
                .map(|(p, lane, cmds)| churn_lane(m, *p, lane, cmds))
                .collect()
        };
        self.check_fault()?;
        Ok(reports)
    }

    fn trace_fences(&mut self) -> Result<(), Failure> {
        let rec = Recorder::new();
        self.machine.set_trace_sink(rec.clone());
        for q in &mut self.um_queues {
            let adapter = self.processes.get(q.process).map_or(0, |p| p.adapter);
            if let Some(u) = &mut q.q {
                u.set_fence_trace(Some(Arc::new(rec.for_adapter(adapter))));
            }
        }
        self.recorder = Some(rec);
        // A first sample now: the OS calibrates at start, before the recorder was there.
        self.calibrate_all();
        self.check_fault()
    }

    fn create_um_fence(&mut self, p: ProcessRef, initial: u64) -> Result<UmFenceRef, Failure> {
        let up = self.process(p)?;
        let r = self.machine.kmt(&up).create_native_fence(initial);
        self.add_um_fence(up, r)
    }

    fn open_um_fence(&mut self, f: UmFenceRef, p: ProcessRef) -> Result<UmFenceRef, Failure> {
        let shared = u64::from(self.um_fence(f)?.umd.kmt);
        let up = self.process(p)?;
        let r = self.machine.kmt(&up).open_native_fence(shared);
        self.add_um_fence(up, r)
    }

    fn submit_fence_ops(&mut self, q: UmQueueRef, ops: &[FenceWork]) -> Result<u64, Failure> {
        // Resolve everything first: the ops borrow the fences, the queue is borrowed mutably.
        let mut fences = Vec::new();
        let mut cmds = Vec::new();
        for o in ops {
            match *o {
                FenceWork::Work(w) => cmds.extend(self.encode(&[w])?),
                FenceWork::Signal(f, _) | FenceWork::Wait(f, _) => {
                    fences.push(self.um_fence(f)?.umd);
                }
            }
        }
        let (mut ci, mut fi) = (cmds.iter(), fences.iter());
        let mut list: Vec<Op<'_>> = Vec::with_capacity(ops.len());
        for o in ops {
            let item = match *o {
                FenceWork::Work(_) => ci.next().copied().map(Op::Cmd),
                FenceWork::Signal(_, v) => fi.next().map(|f| Op::Signal(f, v)),
                FenceWork::Wait(_, v) => fi.next().map(|f| Op::Wait(f, v)),
            };
            list.push(item.ok_or_else(|| Failure::Backend("fence op encoding".into()))?);
        }
        let m = self.machine.clone();
        let r = match self.live_queue(q)? {
            UmdQueue::User(u) => u.submit_ops(&list),
            UmdQueue::Kernel(k) => k.submit_ops(&list),
        };
        let v = r.map_err(|e| umd_failure(&m, e))?;
        self.check_fault()?;
        Ok(v)
    }

    fn wait_um_fence(
        &mut self,
        f: UmFenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        let os = self.um_fence(f)?.os.clone();
        let r = self
            .machine
            .wait_native_fence(&os, value, timeout)
            .map(wait_result)
            .map_err(failure)?;
        self.check_fault()?;
        Ok(r)
    }

    fn um_fence_value(&self, f: UmFenceRef) -> Result<u64, Failure> {
        Ok(self.um_fence(f)?.os.current_value())
    }

    fn fence_timeline(&self, label: &str) -> Result<Timeline, Failure> {
        let rec = self.recorder.as_ref().ok_or_else(|| {
            Failure::Backend("fence_timeline before trace_fences: nothing was recorded".into())
        })?;
        // A last sample, so that every GPU time of the run lies between two samples.
        self.calibrate_all();
        self.check_fault()?;
        Ok(recorded_timeline(rec, label))
    }

    fn queue_logs(&self, q: UmQueueRef) -> Result<QueueLogs, Failure> {
        let (adapter, h) = self.hw_queue_handle(q)?;
        let entries = |k| {
            self.machine
                .hw_queue_log(adapter, h, hw_kind(k))
                .map(|(_, entries, ..)| entries)
        };
        Ok(QueueLogs {
            wait_entries: entries(LogKind::Wait),
            signal_entries: entries(LogKind::Signal),
        })
    }

    fn log_counters(&self, i: usize) -> Result<LogCounters, Failure> {
        let c = self.machine.log_counters(i);
        Ok(LogCounters {
            drains: c.log_drains,
            entries_read: c.log_entries_read,
            update_calls: c.log_update_calls,
            overflows: c.log_overflows,
            entries_lost: c.log_entries_lost,
            bad_entries: c.log_bad_entries,
            fallback_scans: c.log_fallback_scans,
        })
    }

    fn recreate_queue_log(
        &mut self,
        q: UmQueueRef,
        kind: LogKind,
        entries: u64,
    ) -> Result<(), Failure> {
        let (_, h) = self.hw_queue_handle(q)?;
        let up = self.process(ProcessRef(self.um_queue(q)?.process))?;
        self.machine
            .recreate_hw_queue_log(&up, h, hw_kind(kind), entries)
            .map_err(failure)?;
        self.check_fault()
    }

    fn enable_tdr(&mut self, i: usize, t: TdrTimeouts) -> Result<(), Failure> {
        self.machine
            .enable_tdr(
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

    fn create_context(&mut self, p: ProcessRef, node: u32) -> Result<ContextRef, Failure> {
        let up = self.process(p)?;
        let h = self
            .machine
            .kmt(&up)
            .create_context(node)
            .map_err(|NtStatus(s)| self.machine.fault().map_or(Failure::DdiFailed(s), failure))?;
        self.contexts.push((p.0, h));
        Ok(ContextRef(self.contexts.len() - 1))
    }

    fn submit_dma(&mut self, c: ContextRef, work: &[Work]) -> Result<u32, Failure> {
        let (pi, h) = *self
            .contexts
            .get(c.0)
            .ok_or_else(|| Failure::Backend(format!("no context {}", c.0)))?;
        let up = self.process(ProcessRef(pi))?;
        let cmds = self.encode(work)?;
        self.machine.submit_legacy(&up, h, &cmds).map_err(failure)
    }

    fn page_in(
        &mut self,
        b: BufferRef,
        node: u32,
        offset: u64,
        bytes: u64,
        pattern: u32,
    ) -> Result<Vec<u32>, Failure> {
        let va = self.address(b, offset, bytes)?;
        let pi = self.buffer_process[b.0];
        let up = self.process(ProcessRef(pi))?;
        self.machine
            .page_in(&up, node, va, bytes, pattern)
            .map_err(failure)
    }

    fn tdr_steps(&self, i: usize) -> Result<Vec<TdrStep>, Failure> {
        let procs: HashMap<KmtHandle, ProcessRef> = self
            .processes
            .iter()
            .enumerate()
            .map(|(i, p)| (p.device, ProcessRef(i)))
            .collect();
        let by = |h: KmtHandle| procs.get(&h).copied();
        Ok(self
            .machine
            .tdr_events(i)
            .into_iter()
            .map(|e| tdr_step(e, &by))
            .collect())
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

    fn inject_hang(&mut self, i: usize, node: u32) -> Result<(), Failure> {
        self.machine
            .device(i)
            .ok_or_else(|| Failure::Backend(format!("no device {i}")))?
            .inject_hang(node);
        Ok(())
    }

    fn fail_next_reset(&mut self, i: usize, node: u32) -> Result<(), Failure> {
        self.machine
            .device(i)
            .ok_or_else(|| Failure::Backend(format!("no device {i}")))?
            .fail_next_reset(node);
        Ok(())
    }

    fn force_tdr(&mut self, i: usize, node: u32) -> Result<(), Failure> {
        self.machine.force_tdr(i, node).map_err(failure)
    }

    fn complete_before_reset(&mut self, i: usize, node: u32) -> Result<(), Failure> {
        self.machine
            .set_tdr_pause(
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

    fn engine_probe(&self, i: usize, node: u32) -> Result<EngineProbe, Failure> {
        let d = self
            .machine
            .device(i)
            .ok_or_else(|| Failure::Backend(format!("no device {i}")))?;
        let e = d
            .engine_snapshot(node)
            .ok_or_else(|| Failure::Backend(format!("no engine {node}")))?;
        Ok(EngineProbe {
            has_work: e.has_work,
            mid_buffer: e.queues.iter().any(|q| q.indirect.is_some()),
            completed_commands: d.completed_commands(node),
        })
    }

    fn stream(&mut self, lanes: &[StreamLane]) -> Result<Vec<StreamReport>, Failure> {
        let mut jobs = Vec::with_capacity(lanes.len());
        for (k, lane) in lanes.iter().enumerate() {
            let sq = self.um_queue(lane.queue)?;
            if sq.q.is_none() || lanes[..k].iter().any(|l| l.queue == lane.queue) {
                return Err(Failure::Backend(format!(
                    "stream: queue {} is closed or in two lanes",
                    lane.queue.0
                )));
            }
            let cmds = lane
                .batches
                .iter()
                .map(|w| self.encode(w))
                .collect::<Result<Vec<_>, _>>()?;
            jobs.push((lane, cmds, self.adapter_of(sq)));
        }
        let mut taken: Vec<UmdQueue> = lanes
            .iter()
            .filter_map(|l| self.um_queues[l.queue.0].q.take())
            .collect();
        let m = &*self.machine;
        let reports: Vec<StreamReport> = if m.config().mode == Mode::Threaded {
            std::thread::scope(|sc| {
                let handles: Vec<_> = jobs
                    .iter()
                    .zip(taken.iter_mut())
                    .map(|((lane, cmds, a), q)| sc.spawn(move || stream_lane(m, lane, cmds, *a, q)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| StreamReport {
                            submitted: 0,
                            last_value: 0,
                            recovered_at: None,
                            error: Some("lane thread panicked".into()),
                        })
                    })
                    .collect()
            })
        } else {
            jobs.iter()
                .zip(taken.iter_mut())
                .map(|((lane, cmds, a), q)| stream_lane(m, lane, cmds, *a, q))
                .collect()
        };
        for (lane, q) in lanes.iter().zip(taken) {
            self.um_queues[lane.queue.0].q = Some(q);
        }
        self.check_fault()?;
        Ok(reports)
    }
}
