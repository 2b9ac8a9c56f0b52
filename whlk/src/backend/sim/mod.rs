//! The default backend: the emulated GPU under the simulated OS (rvgpu-simos), in-process.
//!
//! User-mode submission runs the real UMD core (`UserQueue`, `KernelQueue`) over the simulated
//! thunks (`thunks::SessKmt`, which shares the machine through an `Arc` so the UMD's
//! objects can live in the session and move to churn threads). Observations map to simos's
//! test accessors (`doorbell_info`, `ums_events`, the device's runlists, `Memory::is_mapped`).
//!
//! This module has the backend, the session's state and its life cycle; each capability's
//! implementation is in its own file: `fences` (native and monitored fences, cross-adapter),
//! `usermode` (user-mode submission), `logs` (UMD fences, fence logs, the timeline), `tdr`
//! (TDR and its trace), `control` (the simulation-only traces, controls, fault injection,
//! direct DDI calls, step mode, bug checks); `thunks` has the D3DKMT thunks the UMD runs on.

pub(crate) mod control;
mod fences;
mod gpu_queue;
mod gpuva;
pub(crate) mod logs;
pub(crate) mod tdr;
pub(crate) mod thunks;
pub(crate) mod translate;
mod usage;
pub(crate) mod usermode;
mod wait;

use translate::wait_result;
pub(crate) use translate::{caps, failure};

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::kmt::{SimMem, STATUS_IO_TIMEOUT};
use rvgpu_simos::state::sync::trace::Recorder;
use rvgpu_simos::testing;
use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::testing::tdr::{self as testing_tdr, Misreport};
use rvgpu_simos::{
    Machine, MachineConfig, Mode, MonitoredFence, NativeFence, SimEvent, UmsProcess,
};
use rvgpu_umd::fence::NativeFence as UmdNativeFence;
use rvgpu_umd::kmt::{Allocation, KmtHandle, NtStatus};
use rvgpu_umd::submit::SubmitError;

use self::thunks::{Created, SessKmt};
use super::{
    nth, nth_mut, AllocationUsage, Backend, BufferRef, BugChecks, Capabilities, CrossAdapterFences,
    DirectDdi, ExecMode, Failure, FaultInjection, FenceLogs, FenceRef, Fences, Misbehaviour,
    MonitoredRef, OsControl, OsTrace, ProcessRef, QueueRef, Session, SessionConfig, StartedAdapter,
    StepMode, Tdr, TdrTrace, UmFenceRef, UmQueueInfo, UmQueueRef, UmdFences, Until,
    UserModeSubmission, WaitResult, Work,
};

/// The simulated backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimBackend;

/// The simulated machine a session's configuration describes (shared with the D3DKMT
/// backend's simulated platform).
pub(crate) fn machine_config(config: &SessionConfig) -> MachineConfig {
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
    crate::os::apply(&mut mc);
    mc.os.native_fence_feature = config.native_fence_feature;
    // The case's wish, within the machine's `HwSchMode` (`crate::os::apply`).
    mc.os.hwsch_feature &= config.hwsch_feature;
    mc.os.validate_wddm_caps = config.validate_wddm_caps;
    if config.os_disconnects_doorbells {
        mc.os.windows = mc.os.windows.with_pages();
    }
    if config.pages_teardown {
        mc.os.windows = mc
            .os
            .windows
            .answering(|r| r.teardown = rvgpu_simos::machine::answers::Teardown::QueuesFirst);
    }
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
        if let Some(n) = config
            .doorbells
            .or(config.max_doorbells)
            .or(config.min_doorbells)
        {
            a.device.doorbells = n;
        }
        a.device.global_doorbell = config.global_doorbell;
    }
    mc
}

impl Backend for SimBackend {
    fn name(&self) -> &'static str {
        "sim"
    }

    /// Everything but the KMD's test hooks: the simulation has the OS's own record of recovery
    /// ([`TdrTrace`]) and injects faults itself ([`FaultInjection`]).
    fn capabilities(&self) -> Capabilities {
        let all = Capabilities::all()
            .without(super::Capability::KmdJournal)
            .without(super::Capability::KmdFaults);
        if crate::os::native_fences() {
            all
        } else {
            all.without(super::Capability::NativeFences)
        }
    }

    fn open_session(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure> {
        open_sim_session(config, machine_config(config))
    }
}

/// The simulated OS, the real KMD and UMD in this process, driving the rvgpu PCI functions a
/// Linux guest sees (`rvgpu-whlk --board pci`): the machine's adapter `i` is function `i`, a
/// `rvgpu_simos::machine::pci::PciBoard`. As many adapters as functions, threaded; no fault
/// injection, step mode or configured machines (a function is what its server made it).
#[derive(Clone, Debug)]
pub struct PciSimBackend {
    /// Where the functions (named, not empty) and the DMA memory are. `None`: the in-process
    /// emulated device as one function under the same constraints (what the tests here run,
    /// to show the PCI subset needs nothing the PCI board lacks).
    pub spec: Option<rvgpu_simos::machine::PciSpec>,
}

impl PciSimBackend {
    /// What a session on a PCI function cannot do: these cases are skipped with the reason.
    pub const LACKS: &'static [super::Capability] = &[
        super::Capability::ConfiguredMachine,
        super::Capability::FaultInjection,
        super::Capability::HeldRecovery,
        super::Capability::StepMode,
        super::Capability::CrossAdapterFences,
    ];
}

/// The backend `rvgpu-whlk --board pci` runs: [`PciSimBackend`] whose sessions also hide what
/// it lacks ([`PciSimBackend::LACKS`]), so no case reaches those capabilities.
pub fn pci_backend(
    spec: Option<rvgpu_simos::machine::PciSpec>,
) -> super::restricted::Restricted<PciSimBackend> {
    super::restricted::Restricted::without(PciSimBackend { spec }, PciSimBackend::LACKS)
}

impl Backend for PciSimBackend {
    fn name(&self) -> &'static str {
        "sim-pci"
    }

    fn capabilities(&self) -> Capabilities {
        super::Capability::ALL
            .iter()
            .filter(|c| !Self::LACKS.contains(c))
            .fold(Capabilities::NONE, |s, c| s.with(*c))
    }

    fn open_session(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure> {
        let functions = self.spec.as_ref().map_or(1, |s| s.functions.len());
        if config.adapters > functions {
            return Err(Failure::Unsupported(format!(
                "{} adapters asked for; the guest has {functions} rvgpu function(s) (boot it with \
                 `scripts/test-machine.sh --devices {}`)",
                config.adapters, config.adapters
            )));
        }
        // Threaded whatever the case asks: the device runs on its own (in the server).
        let mut mc = machine_config(&SessionConfig {
            mode: ExecMode::Threaded,
            ..config.clone()
        });
        mc.pci = self.spec.clone();
        open_sim_session(config, mc)
    }
}

fn open_sim_session(
    config: &SessionConfig,
    mc: MachineConfig,
) -> Result<Box<dyn Session>, Failure> {
    let machine = Machine::try_new(mc).map_err(|e| Failure::Backend(e.to_string()))?;
    Ok(Box::new(SimSession {
        machine: Arc::new(machine),
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
        fence_procs: Vec::new(),
        recorder: None,
        um_fences: Vec::new(),
        contexts: Vec::new(),
        tracked: Default::default(),
        paging_queues: Default::default(),
        testing: Default::default(),
    }))
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
    queues: Vec<gpu_queue::SimGpuQueue>,
    /// The simulated process behind a case's `(adapter, process number)` for fences and GPU
    /// queues: fences a queue names must be open in its process (GpuMmu), so both come from
    /// the same one. Made on first use.
    fence_procs: Vec<((usize, u32), UmsProcess)>,
    /// The fence timeline's recorder once [`FenceLogs::trace_fences`] ran.
    recorder: Option<Arc<Recorder>>,
    um_fences: Vec<SimUmFence>,
    /// Kernel-mode contexts: (process index, context handle).
    contexts: Vec<(usize, KmtHandle)>,
    /// Buffers with the UMD's usage tracking.
    tracked: crate::backend::tracked::TrackedBuffers<SimMem>,
    /// The paging queue of each process that mapped a GPU VA itself (process index).
    paging_queues: crate::backend::gpuva::PagingQueues,
    /// The kernel-mode testing capability's objects ([`crate::backend::testing`]).
    testing: crate::backend::testing::TestingState<SessKmt>,
}

impl crate::backend::testing::TestingHost for SimSession {
    type K = SessKmt;
    fn testing(&mut self) -> &mut crate::backend::testing::TestingState<SessKmt> {
        &mut self.testing
    }
    fn testing_ref(&self) -> &crate::backend::testing::TestingState<SessKmt> {
        &self.testing
    }
    fn open_test_device(&mut self, i: usize) -> Result<Arc<SessKmt>, Failure> {
        let p = self.machine.create_process(i).map_err(failure)?;
        Ok(Arc::new(SessKmt::new(self.machine.clone(), p)))
    }
    fn test_failure(&self, s: rvgpu_umd::kmt::NtStatus) -> Failure {
        self.machine
            .fault()
            .map_or(Failure::DdiFailed(s.0), failure)
    }
}

/// A native fence made through the UMD thunks: the UMD's view (D3DKMT handle, GPU addresses)
/// and the OS object behind it (for CPU waits and values).
struct SimUmFence {
    umd: UmdNativeFence,
    os: NativeFence,
    /// The process whose handle `umd` is.
    process: UmsProcess,
}

/// A harness queue: the UMD's object while the process lives.
type UmdQueue = crate::backend::umd_queue::UmdQueue<SessKmt>;

struct SimUmQueue {
    process: usize,
    /// `None` once closed or its process ended.
    q: Option<UmdQueue>,
    rec: Arc<Mutex<Created>>,
    /// The last [`UmQueueInfo`] while `q` was there.
    info: UmQueueInfo,
}

/// The queue configuration of every harness queue: small rings, so long runs wrap.
/// A UMD error as a failure; a machine fault (bug check, driver bug) takes precedence.
fn umd_failure(m: &Machine, e: SubmitError) -> Failure {
    if let Some(f) = m.fault() {
        return failure(f);
    }
    match e {
        SubmitError::Kmt(NtStatus(s)) => Failure::DdiFailed(s),
        // The UMD found the device removed (its progress fence read a value it never wrote,
        // as the OS signals a removed device's fences): what the C API reports as
        // RVGPU_STATUS_DEVICE_LOST, and the DLL backend as this status.
        SubmitError::Lost => Failure::DdiFailed(STATUS_DEVICE_REMOVED),
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

    /// The D3DKMT thunks of process `p`.
    fn kmt(&self, p: ProcessRef) -> Result<rvgpu_simos::kmt::SimKmt<'_>, Failure> {
        Ok(self.machine.kmt(&self.process(p)?))
    }

    fn buffer(&self, b: BufferRef) -> Result<&Allocation<SimMem>, Failure> {
        nth(&self.buffers, b.0, "buffer")
    }

    fn um_queue(&self, q: UmQueueRef) -> Result<&SimUmQueue, Failure> {
        nth(&self.um_queues, q.0, "queue")
    }

    fn live_queue(&mut self, q: UmQueueRef) -> Result<&mut UmdQueue, Failure> {
        nth_mut(&mut self.um_queues, q.0, "queue")?
            .q
            .as_mut()
            .ok_or_else(|| Failure::Backend(format!("queue {} is closed", q.0)))
    }

    fn address(&self, b: BufferRef, offset: u64, bytes: u64) -> Result<u64, Failure> {
        let a = self.buffer(b)?;
        super::address_in(b, a.gpu_va, a.size, offset, bytes)
    }

    fn encode(&self, work: &[Work]) -> Result<Vec<Command>, Failure> {
        crate::backend::encode_work(work, |b, offset, bytes| self.address(b, offset, bytes))
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
        nth(&self.um_fences, f.0, "UMD fence")
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
        self.um_fences.push(SimUmFence {
            umd,
            os,
            process: up,
        });
        Ok(UmFenceRef(self.um_fences.len() - 1))
    }

    /// The KMD-visible hardware queue handle behind a harness queue (the user-mode one of a
    /// `UserQueue`, else the kernel-mode one) and its adapter.
    fn hw_queue_handle(&self, q: UmQueueRef) -> Result<(usize, KmtHandle), Failure> {
        let sq = self.um_queue(q)?;
        let rec = thunks::lock(&sq.rec);
        let h = rec
            .hw_queues
            .iter()
            .find(|(_, user)| *user)
            .or_else(|| rec.hw_queues.first())
            .map(|(h, _)| *h)
            .ok_or_else(|| Failure::Backend(format!("queue {} has no hardware queue", q.0)))?;
        Ok((self.adapter_of(sq), h))
    }

    fn monitored_fence(&self, f: MonitoredRef) -> Result<&MonitoredFence, Failure> {
        nth(&self.monitored, f.0, "monitored fence")
    }

    fn add_monitored(&mut self, f: MonitoredFence) -> MonitoredRef {
        self.monitored.push(f);
        MonitoredRef(self.monitored.len() - 1)
    }

    fn fence(&self, f: FenceRef) -> Result<&NativeFence, Failure> {
        nth(&self.fences, f.0, "fence")
    }

    /// The session's processes by their device handle (how the OS's records name them).
    fn processes_by_device(&self) -> std::collections::HashMap<KmtHandle, ProcessRef> {
        self.processes
            .iter()
            .enumerate()
            .map(|(i, p)| (p.device, ProcessRef(i)))
            .collect()
    }

    /// The process standing for the case's process number `process` on adapter `i`.
    fn fence_process(&mut self, i: usize, process: u32) -> Result<UmsProcess, Failure> {
        if let Some((_, p)) = self.fence_procs.iter().find(|(k, _)| *k == (i, process)) {
            return Ok(*p);
        }
        let p = self.machine.create_process(i).map_err(failure)?;
        self.fence_procs.push(((i, process), p));
        Ok(p)
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
        match self.queues.get_mut(q.0) {
            Some(gpu_queue::SimGpuQueue::User(queue)) => Ok((queue, fence)),
            // A kernel-mode queue exists only where there are no native fences.
            Some(gpu_queue::SimGpuQueue::Kernel(_)) => Err(Failure::Backend(format!(
                "queue {} is kernel-mode (adapter without native fences)",
                q.0
            ))),
            None => Err(Failure::Backend(format!("no queue {}", q.0))),
        }
    }
}

/// Loads the driver into `m`, with the stand-in for part of it that `misbehaviour` names (the
/// sim and DLL backends: a misbehaving driver is the machine's, whoever the client is).
pub(crate) fn load_driver_as(
    m: &mut Machine,
    misbehaviour: Option<Misbehaviour>,
) -> Result<(), Failure> {
    match misbehaviour {
        None => m.load_driver(),
        Some(Misbehaviour::IsrReportsUnknownFenceHandle) => m.load_driver_with(|t| {
            t.DxgkDdiInterruptRoutine = Some(testing::isr_reports_unknown_fence_handle)
        }),
        Some(Misbehaviour::IsrCallsPassiveCallback) => m.load_driver_with(|t| {
            t.DxgkDdiInterruptRoutine = Some(testing::isr_calls_passive_callback)
        }),
        Some(Misbehaviour::ResetEngineMisreportsAbortedFence(d)) => m.load_driver_with(move |t| {
            let how = if d >= 0 {
                Misreport::Plus(d.unsigned_abs())
            } else {
                Misreport::Minus(d.unsigned_abs())
            };
            testing_tdr::misreport_aborted(t, how);
        }),
        Some(Misbehaviour::NoResetEngineDdi) => m.load_driver_with(|t| t.DxgkDdiResetEngine = None),
    }
    .map_err(failure)
}

impl Session for SimSession {
    fn adapter_count(&self) -> usize {
        self.machine.adapter_count()
    }

    fn load_driver(&mut self) -> Result<(), Failure> {
        let misbehaviour = self.misbehaviour;
        load_driver_as(self.machine_mut()?, misbehaviour)
    }

    fn start_adapter(&mut self, i: usize) -> Result<StartedAdapter, Failure> {
        let info = self.machine_mut()?.start_adapter(i).map_err(failure)?;
        Ok(StartedAdapter {
            sources: info.sources,
            children: info.children,
        })
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

    fn run_until(&mut self, budget: Duration, done: Until<'_>) -> Result<bool, Failure> {
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

    crate::backend::session::capabilities! {
        as_fences / as_fences_ref: Fences,
        as_monitored / as_monitored_ref: crate::backend::MonitoredFences,
        as_fence_internals / as_fence_internals_ref: crate::backend::FenceInternals,
        as_cross_adapter / as_cross_adapter_ref: CrossAdapterFences,
        as_ums / as_ums_ref: UserModeSubmission,
        as_kmd_caps / as_kmd_caps_ref: crate::backend::KmdCaps,
        as_umd_bypass / as_umd_bypass_ref: crate::backend::UmdBypass,
        as_engine_idle: crate::backend::EngineIdle,
        as_umd_fences / as_umd_fences_ref: UmdFences,
        as_alloc_usage / as_alloc_usage_ref: AllocationUsage,
        as_gpu_va: crate::backend::GpuVaPlacement,
        as_kmtest: crate::backend::testing::KernelModeTesting,
        as_fence_logs / as_fence_logs_ref: FenceLogs,
        as_tdr / as_tdr_ref: Tdr,
        as_dma_contexts: crate::backend::DmaContexts,
        as_tdr_trace / as_tdr_trace_ref: TdrTrace,
        as_os_trace / as_os_trace_ref: OsTrace,
        as_os_control / as_os_control_ref: OsControl,
        as_paging: crate::backend::Paging,
        as_faults / as_faults_ref: FaultInjection,
        as_held_recovery: crate::backend::HeldRecovery,
        as_direct_ddi / as_direct_ddi_ref: DirectDdi,
        as_step / as_step_ref: StepMode,
        as_bug_checks / as_bug_checks_ref: BugChecks,
    }
}
