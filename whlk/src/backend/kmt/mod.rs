//! The D3DKMT backend: the cases driven through the UMD's thunk interface ([`Kmt`]) and the
//! sync-object thunks ([`KmtSync`]) alone, which is all a test program on a Windows machine
//! has.
//!
//! [`KmtBackend`] is generic over a [`KmtPlatform`], which finds the rvgpu adapters and opens
//! a set of thunks (a D3DKMT device) on one. On Windows the platform is
//! `windows::WinPlatform` (the real gdi32 thunks through `rvgpu_umd::kmt_windows::WinKmt`);
//! here it is [`sim::SimPlatform`] (the simulated thunks over the emulated GPU), so the
//! backend's own logic — adapter life, buffers, queues, submission, fences, waits, tracked
//! buffers, skips — is tested on Linux with the very code the Windows executable runs.
//!
//! A case's processes after its first are other processes ([`remote`]): on Windows child
//! `rvgpu-whlk` processes, here simulated processes served on threads, both through the same
//! requests.
//!
//! What user mode can observe is all this backend offers: the adapter life cycle (the driver
//! is installed and started by PnP, so "load" and "start" find and open the adapter, "stop" and
//! "remove" close it), [`UserModeSubmission`]'s queue operations and churn threads, [`Fences`],
//! [`AllocationUsage`] (the UMD's tracked buffers) and [`super::GpuVaPlacement`] (the GPU VA
//! thunks), the last three written once for this backend and the DLL's over the Rust UMD as
//! their primitive (`umd`, `fences`, `backend::app`), [`super::MonitoredFences`] (written once
//! for this backend and the DLL's, `monitored`, over each process's device, `fences`),
//! and [`Tdr`] (the machine's own detection and recovery, `stream`), kernel-mode DMA
//! contexts and the KMD's test hooks (its journal of a recovery and faults armed in it,
//! `hooks`; its caps, `kmd_caps`; a queue's native fence logs as it copies them to the queue's
//! own process, with the UMD's native fences, `logs`). The OS's internals, fault injection and
//! the other simulation-only capabilities are absent, so the runner skips the cases that need them,
//! naming the capability. Without native fences (hardware scheduling off, `HwSchMode`, or a
//! Windows that does not enable them) what needs none stays — processes, buffers, DMA
//! contexts, the test hooks, the device state — and a user-mode queue is a skip naming why.
//! The driver escapes are the kernel-mode testing interface's known
//! escape (`super::testing`) and the test hooks' driver-private one.

mod bypass;
mod fences;
mod hooks;
pub(crate) mod kmd_calls;
mod kmd_caps;
pub(crate) mod lifecycle;
mod logs;
pub(crate) mod machine;
pub(crate) mod monitored;
pub mod remote;
pub mod sim;
mod state;
mod stream;
pub mod sync;
mod umd;
#[cfg(windows)]
pub mod windows;

pub(crate) use lifecycle::{mark_started, no_native_fences, poll_until};

use std::sync::Arc;
use std::time::Duration;

use rvgpu_ddi::ntstatus::{STATUS_DEVICE_REMOVED, STATUS_IO_TIMEOUT, STATUS_TIMEOUT};
use rvgpu_hw::cmd::Command;
use rvgpu_umd::kmt::{Allocation, AllocationCpu, Kmt, NtStatus};
use rvgpu_umd::submit::SubmitError;

pub use sync::{FenceWait, KmtSync, MonitoredSync};

use super::app::{AppQueues, QueueWait};
use super::lanes;
use super::{
    nth, nth_mut, AllocationUsage, BufferRef, Capabilities, Capability, ChurnLane, ChurnReport,
    DoorbellStatus, Failure, Fences, NewQueue, ProcessEnd, ProcessRef, Session, SessionConfig,
    StartedAdapter, Tdr, TdrTimeouts, UmQueueInfo, UmQueueRef, Until, UserModeSubmission, Work,
};
use remote::{Pipe, RemoteProcess};

/// Where the D3DKMT backend gets its adapters and thunks.
pub trait KmtPlatform: Send + Sync {
    /// One D3DKMT device's thunks.
    type Kmt: KmtSync + Send + Sync + 'static;

    /// Name shown in reports.
    fn name(&self) -> &'static str;

    /// A fresh view of the machine for one case: the number of rvgpu adapters it has.
    fn open(&self, config: &SessionConfig)
        -> Result<Box<dyn KmtMachine<Kmt = Self::Kmt>>, Failure>;

    /// Whether the OS enabled native fences for the driver (default: assumed, as on a test
    /// machine whose package opts in; the simulated platform asks its Windows, `crate::os`).
    fn native_fences(&self) -> bool {
        true
    }

    /// Why the OS enabled no native fences, for the skips of what needs them (default: the
    /// machine settings they need, which a program cannot read).
    fn why_no_native_fences(&self) -> String {
        WHY_NO_NATIVE_FENCES.into()
    }
}

/// [`KmtPlatform::why_no_native_fences`]'s default.
pub const WHY_NO_NATIVE_FENCES: &str = "needs native fences, which Windows enables only with \
     hardware scheduling on (HwSchMode = 2) and the INF's Features\\37";

/// The machine one case runs on, as user mode sees it.
pub trait KmtMachine: Send {
    /// The thunks' type.
    type Kmt: KmtSync + Send + Sync + 'static;

    /// rvgpu adapters present (started by PnP).
    fn adapters(&self) -> usize;

    /// Whether adapter `i` is render-only (no video present sources), from the adapter type
    /// the OS reports.
    fn render_only(&self, i: usize) -> Result<bool, Failure>;

    /// Opens a device on adapter `i`: one set of thunks in this program (a case's first
    /// process, and the kernel-mode testing capability's devices; [`sim::SimPlatform`] creates
    /// a simulated process for each).
    fn open_device(&mut self, i: usize) -> Result<Arc<Self::Kmt>, Failure>;

    /// Opens a device on adapter `i` for the KMD's test hooks: the program's own, not one of
    /// the case's processes, so that the processes' indices stay the case's (default:
    /// [`KmtMachine::open_device`], for a platform whose processes are not counted by index).
    fn open_hooks_device(&mut self, i: usize) -> Result<Arc<Self::Kmt>, Failure> {
        self.open_device(i)
    }

    /// Another process with a D3DKMT device of its own on adapter `i`, served over the pipe
    /// returned ([`remote`]), as the case's processes after the first are; `None` where the
    /// platform has none (every process is then a device of this program). Its index among
    /// the processes is the next `open_device`'s would be.
    fn open_remote(&mut self, i: usize) -> Result<Option<Box<dyn Pipe>>, Failure> {
        let _ = i;
        Ok(None)
    }

    /// Closes what `open_device` opened for process `p` (its last queue is gone).
    fn close_device(&mut self, p: usize, how: ProcessEnd) -> Result<(), Failure>;

    /// `DuplicateHandle` of process `from`'s NT handle `nt` into process `to`'s handle table,
    /// as the broker an application uses to hand a shared object to another process; the
    /// handle in `to`'s table, which `to` closes.
    fn duplicate_nt_handle(&self, from: usize, nt: u64, to: usize) -> Result<u64, Failure>;

    /// Makes sure timeout detection and recovery is on for adapter `i`, as the machine's OS
    /// has it: a program cannot choose the timeouts (Windows reads `TdrDelay` and the other
    /// `GraphicsDrivers` keys at boot), so `t` is the case's wish, which a platform may not
    /// honour.
    fn enable_tdr(&self, i: usize, t: TdrTimeouts) -> Result<(), Failure>;

    /// A failure the platform saw (the simulated machine's halt), to report instead of a
    /// thunk status.
    fn fault(&self) -> Option<Failure> {
        None
    }
}

/// The backend.
#[derive(Debug)]
pub struct KmtBackend<P> {
    platform: P,
}

impl<P: KmtPlatform> KmtBackend<P> {
    /// A backend over `platform`.
    pub fn new(platform: P) -> Self {
        Self { platform }
    }
}

impl<P: KmtPlatform> super::Backend for KmtBackend<P> {
    fn name(&self) -> &'static str {
        self.platform.name()
    }

    fn capabilities(&self) -> Capabilities {
        let caps = Capabilities::of(&[
            Capability::Fences,
            Capability::MonitoredFences,
            Capability::UserModeSubmission,
            Capability::AllocationUsage,
            Capability::GpuVaPlacement,
            Capability::KernelModeTesting,
            Capability::Tdr,
            Capability::DmaContexts,
            Capability::KmdJournal,
            Capability::KmdFaults,
            Capability::KmdCaps,
            Capability::CrossAdapterFences,
        ]);
        if self.platform.native_fences() {
            caps.with(Capability::NativeFences)
                .with(Capability::UmdFences)
                .with(Capability::UmdBypass)
        } else {
            // Fence signals and waits and buffer use are GPU work on user-mode queues, which
            // need native fences. What needs none stays: processes (D3DKMT devices), buffers,
            // DMA contexts, the KMD's test hooks, the device state; a user-mode queue asked
            // for is `Unsupported` ([`no_native_fences`]).
            caps.without(Capability::Fences)
                .without(Capability::MonitoredFences)
                .without(Capability::CrossAdapterFences)
                .without(Capability::AllocationUsage)
        }
    }

    fn open_session(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure> {
        let machine = self.platform.open(config)?;
        Ok(Box::new(KmtSession {
            machine,
            no_native_fences: (!self.platform.native_fences())
                .then(|| self.platform.why_no_native_fences()),
            opened: Vec::new(),
            processes: Vec::new(),
            buffers: Vec::new(),
            queues: Vec::new(),
            app: Default::default(),
            monitored: Vec::new(),
            paging_queues: Default::default(),
            testing: Default::default(),
            hooks: Default::default(),
            device_wish: config.asks_device().then(|| config.clone()),
        }))
    }
}

/// A queue the UMD created through the thunks.
type KQueue<K> = crate::backend::umd_queue::UmdQueue<Arc<K>>;

struct KProcess<K> {
    adapter: usize,
    kmt: Option<Arc<K>>,
    /// Another process, while it lives: the case's operations on it are forwarded.
    remote: Option<Arc<RemoteProcess>>,
}

struct KBuffer<K: Kmt> {
    process: usize,
    gpu_va: u64,
    size: u64,
    /// This program's allocation (`None`: another process's buffer).
    alloc: Option<Allocation<K::Mem>>,
}

impl<K: Kmt> KBuffer<K> {
    /// The allocation, if this program holds it.
    fn local(&self) -> Result<&Allocation<K::Mem>, Failure> {
        self.alloc.as_ref().ok_or_else(|| {
            Failure::Unsupported(format!(
                "a buffer of process {}, another process: only its words are forwarded",
                self.process
            ))
        })
    }
}

struct KUmQueue<K: Kmt> {
    process: usize,
    q: Option<KQueue<K>>,
    info: UmQueueInfo,
    /// Another process's queue: `Some(open)`.
    remote: Option<bool>,
}

/// Queue `q` of `queues`, unless it is closed. A function of the list rather than of the
/// session, so that a caller can hold other fields of the session across it.
fn live_queue<K: KmtSync>(
    queues: &mut [KUmQueue<K>],
    q: UmQueueRef,
) -> Result<&mut KQueue<K>, Failure> {
    let k = nth_mut(queues, q.0, "queue")?;
    if k.remote.is_some() {
        return Err(Failure::Unsupported(format!(
            "queue {} is another process's: only its packets, waits and status are forwarded",
            q.0
        )));
    }
    k.q.as_mut()
        .ok_or_else(|| Failure::Backend(format!("queue {} is closed", q.0)))
}

/// One case's session.
struct KmtSession<K: KmtSync + Send + Sync + 'static> {
    machine: Box<dyn KmtMachine<Kmt = K>>,
    /// Why the OS enabled no native fences, if it did not ([`KmtPlatform::native_fences`]):
    /// without them there are no user-mode queues.
    no_native_fences: Option<String>,
    /// Adapters "started" (opened) by the case.
    opened: Vec<bool>,
    processes: Vec<KProcess<K>>,
    /// Buffers by [`BufferRef`]; `None` once their process ended (indices stay stable).
    buffers: Vec<Option<KBuffer<K>>>,
    queues: Vec<KUmQueue<K>>,
    /// Tracked buffers, GPU VA ranges and gates ([`super::app`]).
    app: state::KmtObjects<K>,
    /// Legacy monitored fences (native ones, GPU queues and event waits are in `app`).
    monitored: Vec<monitored::OwnMonitored<K>>,
    /// The paging queue of each process that mapped a GPU VA itself.
    paging_queues: super::gpuva::PagingQueues,
    /// The kernel-mode testing capability's objects ([`super::testing`]).
    testing: super::testing::TestingState<K>,
    /// DMA contexts and the KMD's test-hook devices ([`hooks`]).
    hooks: state::HooksState<K>,
    /// The configuration, where it asks something of the device: checked against each
    /// adapter's device as the case starts it.
    device_wish: Option<SessionConfig>,
}

impl<K: KmtSync + Send + Sync + 'static> super::testing::TestingHost for KmtSession<K> {
    type K = K;
    fn testing(&mut self) -> &mut super::testing::TestingState<K> {
        &mut self.testing
    }
    fn testing_ref(&self) -> &super::testing::TestingState<K> {
        &self.testing
    }
    fn open_test_device(&mut self, i: usize) -> Result<Arc<K>, Failure> {
        // Devices opened here are not in `processes`: the capability's cases use nothing else.
        self.machine.open_device(i)
    }
    fn test_failure(&self, s: NtStatus) -> Failure {
        self.status(s)
    }
}

impl<K: KmtSync + Send + Sync + 'static> Drop for KmtSession<K> {
    fn drop(&mut self) {
        self.app.stop_events();
    }
}

impl<K: KmtSync + Send + Sync + 'static> KmtSession<K> {
    fn status(&self, NtStatus(s): NtStatus) -> Failure {
        self.machine.fault().unwrap_or(Failure::DdiFailed(s))
    }

    fn umd(&self, e: SubmitError) -> Failure {
        match e {
            SubmitError::Kmt(s) => self.status(s),
            other => self
                .machine
                .fault()
                .unwrap_or_else(|| Failure::Backend(format!("UMD: {other:?}"))),
        }
    }

    /// The process of `buf`, another process.
    fn remote_of_buffer(&self, buf: &KBuffer<K>) -> Result<&RemoteProcess, Failure> {
        self.remote(buf.process)?
            .ok_or_else(|| Failure::Backend(format!("process {} has ended", buf.process)))
    }

    /// The machine's fault, if it has one.
    fn check_fault(&self) -> Result<(), Failure> {
        self.machine.fault().map_or(Ok(()), Err)
    }

    /// Process `p`'s adapter and thunks; a process that is another process offers only what
    /// [`remote`] forwards.
    fn process(&self, p: ProcessRef) -> Result<(usize, Arc<K>), Failure> {
        let up = nth(&self.processes, p.0, "process")?;
        if up.remote.is_some() {
            return Err(Failure::Unsupported(format!(
                "process {} is another process: only its buffers' words and its queues are \
                 forwarded to it",
                p.0
            )));
        }
        let kmt = up
            .kmt
            .clone()
            .ok_or_else(|| Failure::Backend(format!("process {} has ended", p.0)))?;
        Ok((up.adapter, kmt))
    }

    /// Process `p` if it is another process, alive.
    fn remote(&self, p: usize) -> Result<Option<&RemoteProcess>, Failure> {
        Ok(nth(&self.processes, p, "process")?.remote.as_deref())
    }

    /// Process `p` if it is another process, alive, shareable with a waiting thread.
    fn remote_arc(&self, p: usize) -> Result<Option<Arc<RemoteProcess>>, Failure> {
        Ok(nth(&self.processes, p, "process")?.remote.clone())
    }

    /// The remote process of queue `q` and whether `q` is open, if `q` is another process's.
    fn remote_queue(&self, q: UmQueueRef) -> Result<Option<&RemoteProcess>, Failure> {
        let k = self.queue(q)?;
        match k.remote {
            None => Ok(None),
            Some(false) => Err(Failure::Backend(format!("queue {} is closed", q.0))),
            Some(true) => self.remote(k.process)?.map_or_else(
                || {
                    Err(Failure::Backend(format!(
                        "queue {}'s process has ended",
                        q.0
                    )))
                },
                |r| Ok(Some(r)),
            ),
        }
    }

    fn buffer(&self, b: BufferRef) -> Result<&KBuffer<K>, Failure> {
        self.buffers
            .get(b.0)
            .and_then(Option::as_ref)
            .ok_or_else(|| Failure::Backend(format!("no live buffer {}", b.0)))
    }

    fn address(&self, b: BufferRef, offset: u64, bytes: u64) -> Result<u64, Failure> {
        let a = self.buffer(b)?;
        crate::backend::address_in(b, a.gpu_va, a.size, offset, bytes)
    }

    fn encode(&self, work: &[Work]) -> Result<Vec<Command>, Failure> {
        crate::backend::encode_work(work, |b, offset, bytes| self.address(b, offset, bytes))
    }

    fn queue(&self, q: UmQueueRef) -> Result<&KUmQueue<K>, Failure> {
        nth(&self.queues, q.0, "queue")
    }

    fn live_queue(&mut self, q: UmQueueRef) -> Result<&mut KQueue<K>, Failure> {
        live_queue(&mut self.queues, q)
    }

    /// `Unsupported` where the OS enabled no native fences: user-mode queues need them.
    fn user_mode_queues(&self) -> Result<(), Failure> {
        self.no_native_fences
            .as_ref()
            .map_or(Ok(()), |why| Err(no_native_fences(why)))
    }

    fn started(&self, i: usize) -> Result<(), Failure> {
        if self.opened.get(i).copied().unwrap_or(false) {
            Ok(())
        } else {
            Err(Failure::Backend(format!("adapter {i} is not started")))
        }
    }
}

impl<K: KmtSync + Send + Sync + 'static> Session for KmtSession<K> {
    fn adapter_count(&self) -> usize {
        self.machine.adapters()
    }

    /// The driver is installed and loaded by PnP; loading finds at least one rvgpu adapter.
    fn load_driver(&mut self) -> Result<(), Failure> {
        if self.machine.adapters() == 0 {
            return Err(Failure::Backend(
                "no rvgpu adapter is present (is the driver installed and started?)".into(),
            ));
        }
        self.opened = vec![false; self.machine.adapters()];
        Ok(())
    }

    /// PnP started the adapter; "starting" it checks that the OS reports it render-only.
    fn start_adapter(&mut self, i: usize) -> Result<StartedAdapter, Failure> {
        if i >= self.machine.adapters() {
            return Err(Failure::Backend(format!("no adapter {i}")));
        }
        let render_only = self.machine.render_only(i)?;
        let started = mark_started(&mut self.opened, i, render_only);
        // The device is what the machine has: a case asking for another one is skipped,
        // naming it.
        if let Some(config) = self.device_wish.clone() {
            self.check_device(&config, i)?;
        }
        Ok(started)
    }

    fn stop_adapter(&mut self, i: usize) -> Result<(), Failure> {
        self.started(i)?;
        // Everything the case opened on the adapter goes, as a stop would take it.
        for q in &mut self.queues {
            if let Some(u) = q.q.take() {
                q.info = u.info();
            }
        }
        for b in &mut self.buffers {
            *b = None;
        }
        for p in 0..self.processes.len() {
            self.app.drop_process(p);
        }
        for p in 0..self.processes.len() {
            let open = self
                .processes
                .get(p)
                .is_some_and(|up| up.adapter == i && (up.kmt.is_some() || up.remote.is_some()));
            if open {
                self.end_process(ProcessRef(p), ProcessEnd::Normal)?;
            }
        }
        if let Some(o) = self.opened.get_mut(i) {
            *o = false;
        }
        Ok(())
    }

    /// Polls `done`: on a real machine the GPU, ISR and DPCs run on their own.
    fn run_until(&mut self, budget: Duration, done: Until<'_>) -> Result<bool, Failure> {
        poll_until(self, budget, |s| s.machine.fault(), done)
    }

    crate::backend::session::capabilities! {
        as_fences / as_fences_ref: Fences,
        as_monitored / as_monitored_ref: super::MonitoredFences,
        as_alloc_usage / as_alloc_usage_ref: AllocationUsage,
        as_gpu_va: super::GpuVaPlacement,
        as_kmtest: super::testing::KernelModeTesting,
        as_ums / as_ums_ref: UserModeSubmission,
        as_tdr / as_tdr_ref: Tdr,
        as_dma_contexts: super::DmaContexts,
        as_kmd_journal: super::KmdJournal,
        as_kmd_faults: super::KmdFaults,
        as_umd_fences / as_umd_fences_ref: super::UmdFences,
        as_kmd_caps: super::KmdCaps,
        as_umd_bypass / as_umd_bypass_ref: super::UmdBypass,
        as_cross_adapter: super::CrossAdapterFences,
    }
}

/// The processes and queues of the seam ([`super::app`]): this program's through the Rust UMD,
/// another process's forwarded to it ([`remote`]).
impl<K: KmtSync + Send + Sync + 'static> AppQueues for KmtSession<K> {
    /// The case's first process is this program; every later one is another process where
    /// the platform can start one ([`KmtMachine::open_remote`]).
    fn process_open(&mut self, i: usize) -> Result<ProcessRef, Failure> {
        self.started(i)?;
        let remote = if self.processes.is_empty() {
            None
        } else {
            self.machine.open_remote(i)?
        };
        let up = match remote {
            Some(pipe) => KProcess {
                adapter: i,
                kmt: None,
                remote: Some(Arc::new(RemoteProcess::new(pipe))),
            },
            None => KProcess {
                adapter: i,
                kmt: Some(self.machine.open_device(i)?),
                remote: None,
            },
        };
        self.processes.push(up);
        Ok(ProcessRef(self.processes.len() - 1))
    }

    /// The program's own process opens a second device (`D3DKMTCreateDevice` again); another
    /// process forwards no such request.
    fn process_sibling(&mut self, p: ProcessRef) -> Result<ProcessRef, Failure> {
        let (i, _) = self.process(p)?;
        let up = KProcess {
            adapter: i,
            kmt: Some(self.machine.open_device(i)?),
            remote: None,
        };
        self.processes.push(up);
        Ok(ProcessRef(self.processes.len() - 1))
    }

    fn process_end(&mut self, p: ProcessRef, how: ProcessEnd) -> Result<(), Failure> {
        if let Some(r) = nth_mut(&mut self.processes, p.0, "process")?.remote.take() {
            for (i, q) in self.queues.iter_mut().enumerate() {
                if q.process == p.0 && q.remote == Some(true) {
                    // The process's last word on the queue, kept for `queue_info` after it.
                    if let Ok(info) = r.info(i) {
                        q.info = info;
                    }
                    q.remote = Some(false);
                }
            }
            for b in &mut self.buffers {
                if b.as_ref().is_some_and(|b| b.process == p.0) {
                    *b = None;
                }
            }
            return r.end(how);
        }
        self.process(p)?;
        // A normal exit destroys the UMD's objects before the device goes; an abnormal one
        // leaves them to the OS, so the device goes first and the UMD's later teardown finds
        // nothing left (its errors are ignored, as a dead process's would be).
        if how == ProcessEnd::Abnormal {
            self.machine.close_device(p.0, how)?;
        }
        for q in self.queues.iter_mut().filter(|q| q.process == p.0) {
            if let Some(u) = q.q.take() {
                q.info = u.info();
            }
        }
        for b in &mut self.buffers {
            if b.as_ref().is_some_and(|b| b.process == p.0) {
                *b = None;
            }
        }
        self.app.drop_process(p.0);
        if let Some(up) = self.processes.get_mut(p.0) {
            up.kmt = None;
        }
        if how == ProcessEnd::Normal {
            self.machine.close_device(p.0, how)?;
        }
        Ok(())
    }

    fn plain_create(&mut self, p: ProcessRef, bytes: u64) -> Result<BufferRef, Failure> {
        if let Some(r) = self.remote(p.0)? {
            let (gpu_va, size) = r.create_buffer(self.buffers.len(), bytes)?;
            self.buffers.push(Some(KBuffer {
                process: p.0,
                gpu_va,
                size,
                alloc: None,
            }));
            return Ok(BufferRef(self.buffers.len() - 1));
        }
        let (_, kmt) = self.process(p)?;
        let alloc = kmt.create_allocation(bytes).map_err(|s| self.status(s))?;
        for off in (0..alloc.size).step_by(8) {
            alloc.mem.store(off, 0);
        }
        self.buffers.push(Some(KBuffer {
            process: p.0,
            gpu_va: alloc.gpu_va,
            size: alloc.size,
            alloc: Some(alloc),
        }));
        Ok(BufferRef(self.buffers.len() - 1))
    }

    fn queue_create(&mut self, p: ProcessRef, new: NewQueue) -> Result<UmQueueRef, Failure> {
        let NewQueue { node, path: kind } = new;
        self.user_mode_queues()?;
        if let Some(r) = self.remote(p.0)? {
            let info = r.create_queue(self.queues.len(), node, kind)?;
            self.queues.push(KUmQueue {
                process: p.0,
                info,
                q: None,
                remote: Some(true),
            });
            return Ok(UmQueueRef(self.queues.len() - 1));
        }
        let (_, kmt) = self.process(p)?;
        let q = KQueue::new(kmt, node, kind).map_err(|e| self.umd(e))?;
        self.queues.push(KUmQueue {
            process: p.0,
            info: q.info(),
            q: Some(q),
            remote: None,
        });
        Ok(UmQueueRef(self.queues.len() - 1))
    }

    fn queue_wait(&mut self, q: UmQueueRef, value: u64) -> Result<QueueWait, Failure> {
        if let Some(r) = self.remote_queue(q)? {
            return Ok(match r.wait(q.0, value) {
                Ok(()) => QueueWait::Reached,
                Err(Failure::DdiFailed(STATUS_IO_TIMEOUT | STATUS_TIMEOUT)) => QueueWait::TimedOut,
                Err(Failure::DdiFailed(STATUS_DEVICE_REMOVED)) => QueueWait::Removed,
                Err(e) => QueueWait::Failed(e),
            });
        }
        let r = self.live_queue(q)?.wait(value);
        Ok(match r {
            Ok(()) => QueueWait::Reached,
            Err(SubmitError::Kmt(NtStatus(STATUS_IO_TIMEOUT | STATUS_TIMEOUT))) => {
                QueueWait::TimedOut
            }
            Err(SubmitError::Kmt(NtStatus(STATUS_DEVICE_REMOVED))) => QueueWait::Removed,
            Err(e) => QueueWait::Failed(self.umd(e)),
        })
    }

    fn queue_status(&self, q: UmQueueRef) -> Result<UmQueueInfo, Failure> {
        let k = self.queue(q)?;
        if k.remote == Some(true) {
            if let Some(r) = self.remote_queue(q)? {
                return r.info(q.0);
            }
        }
        Ok(k.q.as_ref().map_or(k.info, KQueue::info))
    }

    fn queue_close(&mut self, q: UmQueueRef) -> Result<(), Failure> {
        if let Some(r) = self.remote_queue(q)? {
            let info = r.info(q.0)?;
            r.close_queue(q.0)?;
            let k = nth_mut(&mut self.queues, q.0, "queue")?;
            k.info = info;
            k.remote = Some(false);
            return Ok(());
        }
        let k = nth_mut(&mut self.queues, q.0, "queue")?;
        super::umd_queue::close_slot(&mut k.q, &mut k.info, q)?.map_err(|e| self.umd(e))
    }

    /// What the UMD's CPU mapping of the queue's doorbell status page reads.
    fn queue_doorbell(&self, q: UmQueueRef) -> Result<Option<DoorbellStatus>, Failure> {
        Ok(match self.remote_queue(q)? {
            Some(r) => r.doorbell(q.0)?,
            None => self.queue(q)?.q.as_ref().and_then(KQueue::doorbell_status),
        })
    }

    /// One thread per lane, each making its user-mode queues one after another over its
    /// process's thunks.
    fn churn_lanes(&mut self, lanes: &[ChurnLane]) -> Result<Vec<ChurnReport>, Failure> {
        self.user_mode_queues()?;
        let host = |p: ProcessRef| match self.remote_arc(p.0)? {
            Some(r) => Ok(remote::LaneHost::There(r)),
            None => Ok(remote::LaneHost::Here(self.process(p)?.1)),
        };
        let jobs = lanes::churn_jobs(lanes, host, |w| self.encode(w))?;
        let reports = remote::run_churn(&jobs);
        self.check_fault()?;
        Ok(reports)
    }
}
