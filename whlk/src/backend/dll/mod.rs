//! `--backend kmt-sim --umd pe`: the cases driven through the shipped `rvgpu_umd.dll` itself —
//! its C API (umd/include/rvgpu_umd.h), run in the x86-64 emulator with its gdi32, kernel32 and
//! advapi32 imports bound to the simulated OS (`rvgpu_simos::pe::umd`, docs/pe-image.md) — on
//! a machine brought up as [`crate::backend::kmt::sim::SimPlatform`] brings it up.
//!
//! A case's application sees what an application linked against the DLL sees. A process is a
//! [`UserProcess`] that loaded the DLL and opened the adapter with `rvgpu_open_adapter`;
//! buffers are `rvgpu_buffer_*`, queues `rvgpu_queue_create` (user-mode or kernel-mode), work
//! `rvgpu_queue_submit` of packets with fence wait and signal lists and `rvgpu_buffer_fill` /
//! `rvgpu_buffer_copy`, waits `rvgpu_queue_wait`, shared fences `rvgpu_fence_share` /
//! `rvgpu_fence_open` (on another adapter's `RvgpuAdapter*` too), a second device in one
//! process a second `rvgpu_open_adapter`, kernel-mode DMA contexts `rvgpu_context_*`
//! (`dma`); beside the DLL, legacy monitored fences on a D3D device of the application's own
//! (`monitored`). Around it the harness reads and steers the simulated OS and device
//! (`os`: the OS's records, power, device loss, injected faults, the OS's copy of the
//! driver's caps, process exits). What neither can do is a capability this backend does not
//! list, so the runner skips the case naming it.

mod dma;
mod engine;
mod logs;
mod monitored;
mod os;
mod state;
mod umd;
mod usermode;

use std::sync::Arc;
use std::time::Duration;

use rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED;
use rvgpu_simos::pe::cpu::Stop;
use rvgpu_simos::pe::umd::{UmdImage, UserProcess};
use rvgpu_simos::Machine;

use crate::backend::sim::failure;
use crate::backend::{
    AllocationUsage, BufferRef, Capabilities, Capability, Failure, ProcessEnd, ProcessRef, Session,
    SessionConfig, StartedAdapter, SubmitPath, UmQueueInfo, UmQueueRef, Until, UserModeSubmission,
};

/// `RvgpuStatus` values (rvgpu_umd.h).
pub(crate) const OK: u64 = 0;
pub(crate) const NOT_IMPLEMENTED: u64 = 2;
pub(crate) const DEVICE_LOST: u64 = 3;
pub(crate) const TIMEOUT: u64 = 4;
pub(crate) const WAS_STILL_DRAWING: u64 = 7;
/// `RVGPU_LOCK_READ`, `RVGPU_LOCK_WRITE`.
pub(crate) const LOCK_READ: u64 = 0x1;
pub(crate) const LOCK_WRITE: u64 = 0x2;

pub(crate) fn status_name(s: u64) -> &'static str {
    match s {
        1 => "RVGPU_STATUS_INVALID_ARGUMENT",
        2 => "RVGPU_STATUS_NOT_IMPLEMENTED",
        3 => "RVGPU_STATUS_DEVICE_LOST",
        4 => "RVGPU_STATUS_TIMEOUT",
        5 => "RVGPU_STATUS_OUT_OF_MEMORY",
        6 => "RVGPU_STATUS_KERNEL_ERROR",
        7 => "RVGPU_STATUS_WAS_STILL_DRAWING",
        _ => "an unknown RvgpuStatus",
    }
}

/// The backend: the shipped DLL over the simulated thunks.
#[derive(Debug)]
pub struct DllBackend {
    pub(crate) image: Arc<UmdImage>,
    /// What failed when sessions ended and their processes cleaned up (see
    /// [`DllBackend::teardown_failures`]).
    pub(crate) teardown: Arc<std::sync::Mutex<Vec<String>>>,
}

impl DllBackend {
    /// Loads the DLL (built as scripts/package.sh builds it when `path` is `None`); fails with
    /// the reason (no emulator, an import the simulated OS does not implement, a failed
    /// build).
    pub fn new(path: Option<std::path::PathBuf>) -> Result<Self, String> {
        let path = match path {
            Some(p) => p,
            None => rvgpu_simos::pe::build_umd()?,
        };
        Ok(Self {
            image: UmdImage::load(&path)?,
            teardown: Arc::default(),
        })
    }

    /// The calls that failed as ended sessions' processes destroyed what they held and closed
    /// their adapters (a case passes or fails before its session ends; this is what its end
    /// left behind).
    pub fn teardown_failures(&self) -> Vec<String> {
        self.teardown
            .lock()
            .map_or_else(|p| p.into_inner().clone(), |v| v.clone())
    }

    /// The DLL's path.
    pub fn path(&self) -> &std::path::Path {
        self.image.path()
    }
}

impl crate::backend::Backend for DllBackend {
    fn name(&self) -> &'static str {
        "kmt-sim-umd-pe"
    }

    fn capabilities(&self) -> Capabilities {
        let caps = Capabilities::of(&[
            Capability::UserModeSubmission,
            Capability::KmdCaps,
            Capability::AllocationUsage,
            Capability::Fences,
            Capability::MonitoredFences,
            Capability::CrossAdapterFences,
            Capability::FenceInternals,
            Capability::EngineIdle,
            Capability::Paging,
            Capability::ConfiguredMachine,
            Capability::Tdr,
            Capability::TdrTrace,
            Capability::StepMode,
            Capability::OsTrace,
            Capability::OsControl,
            Capability::FaultInjection,
            Capability::BugChecks,
            Capability::KernelModeTesting,
            Capability::UmdFences,
            Capability::FenceLogs,
            Capability::GpuVaPlacement,
            Capability::DmaContexts,
            Capability::KmdJournal,
            Capability::KmdFaults,
        ]);
        if crate::os::native_fences() {
            caps.with(Capability::NativeFences)
        } else {
            // Its fences are native fences and its buffers' use is GPU work on its queues;
            // processes, buffers, DMA contexts, the OS's record and the KMD's test hooks stay,
            // and a queue asked for is `Unsupported` (`crate::backend::kmt::lifecycle::no_native_fences`).
            caps.without(Capability::AllocationUsage)
                .without(Capability::Fences)
                .without(Capability::MonitoredFences)
                .without(Capability::CrossAdapterFences)
                .without(Capability::FenceInternals)
                .without(Capability::EngineIdle)
                .without(Capability::UmdFences)
                .without(Capability::FenceLogs)
                .without(Capability::GpuVaPlacement)
        }
    }

    fn open_session(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure> {
        let (m, render_only) = crate::backend::kmt::machine::machine_after_starts(config, true)?;
        Ok(Box::new(DllSession {
            m: Arc::new(m),
            // A machine built with the feature off is as a run whose Windows enables none.
            no_native_fences: crate::os::why_no_native_fences().or_else(|| {
                (!config.native_fence_feature).then(|| {
                    "the session's OS enables no native fences (DXGK_FEATURE_NATIVE_FENCE off)"
                        .to_owned()
                })
            }),
            image: self.image.clone(),
            teardown: self.teardown.clone(),
            render_only,
            opened: Vec::new(),
            processes: Vec::new(),
            buffers: Vec::new(),
            queues: Vec::new(),
            suspended: Vec::new(),
            testing: Default::default(),
            hooks_device: None,
            own_devices: Vec::new(),
            monitored: Vec::new(),
            app: Default::default(),
            um_fences: Vec::new(),
            recorder: None,
            idle_f1: config.idle_f1_ticks > 0,
            dma: Vec::new(),
        }))
    }
}

pub(crate) struct DProcess {
    pub(crate) adapter: usize,
    /// The process and its `RvgpuAdapter*`; `None` once it ended.
    pub(crate) live: Option<(Arc<UserProcess>, u64)>,
    /// Its D3D device's handle (how the OS's records name the process).
    pub(crate) device: u32,
}

/// A plain buffer (`RvgpuBuffer*`).
pub(crate) struct DBuffer {
    pub(crate) process: usize,
    pub(crate) handle: u64,
    pub(crate) size: u64,
    pub(crate) gpu_va: u64,
}

pub(crate) struct DQueue {
    pub(crate) process: usize,
    /// `RvgpuQueue*`; `None` once closed.
    pub(crate) handle: Option<u64>,
    /// What `rvgpu_queue_status` said last (kept after the close).
    pub(crate) info: UmQueueInfo,
    /// The D3DKMT objects `rvgpu_queue_create` made (context, hardware queue, doorbell, ring
    /// allocations, ...): how the OS's records name the queue.
    pub(crate) objects: Vec<u32>,
}

pub(crate) struct DllSession {
    pub(crate) m: Arc<Machine>,
    /// Why the run's Windows enables no native fences, if it does not (`crate::os`): without
    /// them, no queue.
    pub(crate) no_native_fences: Option<String>,
    pub(crate) image: Arc<UmdImage>,
    /// The backend's record of failed clean-ups.
    pub(crate) teardown: Arc<std::sync::Mutex<Vec<String>>>,
    /// Per adapter, whether PnP's start left it render-only, or why the start failed.
    pub(crate) render_only: Vec<Result<bool, Failure>>,
    pub(crate) opened: Vec<bool>,
    pub(crate) processes: Vec<DProcess>,
    pub(crate) buffers: Vec<Option<DBuffer>>,
    /// Tracked buffers, GPU VA ranges, gates, fences and their waits (`backend::app`,
    /// `umd`).
    pub(crate) app: state::DllObjects,
    pub(crate) queues: Vec<DQueue>,
    /// Contexts the OS suspended, by process (OsControl).
    pub(crate) suspended: Vec<(usize, u32)>,
    /// Fences made through `UmdFences`: (process, `RvgpuFence*`).
    pub(crate) um_fences: Vec<(usize, u64)>,
    /// The engines request F1 when idle (`SessionConfig::idle_f1_ticks`).
    pub(crate) idle_f1: bool,
    /// Kernel-mode DMA contexts made through `DmaContexts` (`dma`).
    pub(crate) dma: Vec<state::DContext>,
    /// The fence timeline's recorder once `FenceLogs::trace_fences` ran (`logs`).
    pub(crate) recorder: Option<Arc<rvgpu_simos::state::sync::trace::Recorder>>,
    /// The kernel-mode testing interface's objects (`os`).
    pub(crate) testing: crate::backend::testing::TestingState<crate::backend::sim::thunks::SessKmt>,
    /// The device the KMD's test-hook escapes go through (`os`), once opened.
    pub(crate) hooks_device: Option<Arc<crate::backend::sim::thunks::SessKmt>>,
    /// The application's own D3D devices beside the DLL's, and the monitored fences it made
    /// on them (`monitored`).
    pub(crate) own_devices: Vec<state::DDevice>,
    pub(crate) monitored:
        Vec<crate::backend::kmt::monitored::OwnMonitored<crate::backend::sim::thunks::SessKmt>>,
}

impl DllSession {
    pub(crate) fn fault(&self) -> Option<Failure> {
        self.m.fault().map(failure)
    }

    pub(crate) fn machine(&self) -> &Machine {
        &self.m
    }

    pub(crate) fn machine_arc(&self) -> Arc<Machine> {
        self.m.clone()
    }

    /// Whether the machine runs in step mode: nothing happens on it but in the rounds the
    /// harness runs and the rounds the DLL's waits run on the calling thread.
    pub(crate) fn stepped(&self) -> bool {
        self.m.config().mode == rvgpu_simos::Mode::Step
    }

    /// The simulated OS process behind process `p`'s D3D device (its NT handle table).
    pub(crate) fn nt_process(&self, p: usize) -> Result<rvgpu_simos::ProcessId, Failure> {
        self.behind_device(p, UserProcess::nt_processes)
    }

    /// The simulated OS's device behind process `p`'s D3D device (what the harness names when
    /// it acts as the OS on the process).
    pub(crate) fn os_device(&self, p: usize) -> Result<rvgpu_simos::UmsProcess, Failure> {
        self.behind_device(p, UserProcess::devices)
    }

    /// The first of what `list` gives for process `p` (one per D3D device it opened).
    fn behind_device<T: Copy>(
        &self,
        p: usize,
        list: impl FnOnce(&UserProcess) -> Vec<T>,
    ) -> Result<T, Failure> {
        let (up, _) = self.process(p)?;
        list(&up)
            .first()
            .copied()
            .ok_or_else(|| Failure::Backend(format!("process {p} has no device")))
    }

    pub(crate) fn process(&self, p: usize) -> Result<(Arc<UserProcess>, u64), Failure> {
        self.processes
            .get(p)
            .and_then(|d| d.live.clone())
            .ok_or_else(|| Failure::Backend(format!("process {p} has ended or never was")))
    }

    /// Calls export `name` of process `p`'s DLL; its `RvgpuStatus` (or RAX).
    pub(crate) fn call(&self, p: usize, name: &str, args: &[u64]) -> Result<u64, Failure> {
        let (up, _) = self.process(p)?;
        match up.call(name, args) {
            Ok(v) => Ok(v & 0xFFFF_FFFF),
            Err(Stop::UserException { code, address, rip }) => Err(Failure::Backend(format!(
                "{name}: the DLL raised exception {code:#x} at {rip:#x} (address {address:#x})"
            ))),
            Err(e) => Err(self
                .fault()
                .unwrap_or_else(|| Failure::Backend(format!("{name}: {e:?}")))),
        }
    }

    /// [`call`](Self::call), success required.
    pub(crate) fn ok(&self, p: usize, name: &str, args: &[u64]) -> Result<(), Failure> {
        match self.call(p, name, args)? {
            OK => Ok(()),
            NOT_IMPLEMENTED => Err(Failure::Unsupported(format!(
                "{name} returned RVGPU_STATUS_NOT_IMPLEMENTED (declared in rvgpu_umd.h, not \
                 implemented by this build of the DLL)"
            ))),
            // The C API's name for what the thunks report as STATUS_DEVICE_REMOVED.
            DEVICE_LOST => Err(self
                .fault()
                .unwrap_or(Failure::DdiFailed(STATUS_DEVICE_REMOVED))),
            s => Err(self.fault().unwrap_or_else(|| {
                Failure::Backend(format!("{name} returned {}", status_name(s)))
            })),
        }
    }

    /// `name(args…, &out)` in process `p`, through [`Self::ok`]: the word the call wrote to
    /// its last argument.
    pub(crate) fn ok_out(&self, p: usize, name: &str, args: &[u64]) -> Result<u64, Failure> {
        let mut out = 0u64;
        let mut all = args.to_vec();
        all.push(&raw mut out as u64);
        self.ok(p, name, &all)?;
        Ok(out)
    }

    /// `name(adapter, args…, &out)` with process `p`'s adapter handle: the handle of the
    /// object the call made.
    pub(crate) fn create_on_adapter(
        &self,
        p: usize,
        name: &str,
        args: &[u64],
    ) -> Result<u64, Failure> {
        let (_, adapter) = self.process(p)?;
        let mut all = vec![adapter];
        all.extend_from_slice(args);
        self.ok_out(p, name, &all)
    }

    pub(crate) fn buffer(&self, b: BufferRef) -> Result<&DBuffer, Failure> {
        let d = self
            .buffers
            .get(b.0)
            .and_then(Option::as_ref)
            .ok_or_else(|| Failure::Backend(format!("no live buffer {}", b.0)))?;
        if self
            .processes
            .get(d.process)
            .is_some_and(|p| p.live.is_none())
        {
            return Err(Failure::Unsupported(
                "the memory of a process that has ended (an application's buffers end with \
                 it; only the OS could still read them)"
                    .into(),
            ));
        }
        Ok(d)
    }

    /// Plain buffer `b`'s process and `RvgpuBuffer*`.
    pub(crate) fn buffer_handle(&self, b: BufferRef) -> Result<(usize, u64), Failure> {
        self.buffer(b).map(|d| (d.process, d.handle))
    }

    pub(crate) fn queue(&self, q: UmQueueRef) -> Result<(usize, u64), Failure> {
        let d = self
            .queues
            .get(q.0)
            .ok_or_else(|| Failure::Backend(format!("no queue {}", q.0)))?;
        let h = d
            .handle
            .ok_or_else(|| Failure::Backend(format!("queue {} is closed", q.0)))?;
        Ok((d.process, h))
    }

    /// The live queues of process `p` (what a lock or destroy names).
    pub(crate) fn queues_of(&self, p: usize) -> Vec<u64> {
        self.queues
            .iter()
            .filter(|q| q.process == p)
            .filter_map(|q| q.handle)
            .collect()
    }

    /// Runs `f` on the CPU view (its base and size in bytes) of plain buffer `b` locked with
    /// `flags` (no queue named: the packets of `rvgpu_submit` are not tracked, so the lock does
    /// not wait for them).
    pub(crate) fn with_view<R>(
        &self,
        b: BufferRef,
        flags: u64,
        f: impl FnOnce(*mut u64, u64) -> R,
    ) -> Result<R, Failure> {
        let d = self.buffer(b)?;
        let mut data = 0u64;
        self.ok(
            d.process,
            "rvgpu_buffer_lock",
            &[d.handle, flags, 0, 0, &raw mut data as u64],
        )?;
        let r = f(data as *mut u64, d.size);
        self.ok(d.process, "rvgpu_buffer_unlock", &[d.handle])?;
        Ok(r)
    }

    /// The checked word index of byte `offset` of plain buffer `b`.
    pub(crate) fn word(&self, b: BufferRef, offset: u64) -> Result<usize, Failure> {
        let d = self.buffer(b)?;
        if !offset.is_multiple_of(8) || offset.checked_add(8).is_none_or(|e| e > d.size) {
            return Err(Failure::Backend(format!(
                "offset {offset:#x} is outside buffer {} ({} bytes)",
                b.0, d.size
            )));
        }
        usize::try_from(offset / 8).map_err(|_| Failure::Backend("offset too large".into()))
    }

    pub(crate) fn new_buffer(&mut self, p: ProcessRef, bytes: u64) -> Result<DBuffer, Failure> {
        let handle = self.create_on_adapter(p.0, "rvgpu_buffer_create", &[bytes])?;
        let gpu_va = self.ok_out(p.0, "rvgpu_buffer_gpu_va", &[handle])?;
        Ok(DBuffer {
            process: p.0,
            handle,
            size: bytes,
            gpu_va,
        })
    }

    pub(crate) fn buffer_address(
        &self,
        b: BufferRef,
        offset: u64,
        bytes: u64,
    ) -> Result<u64, Failure> {
        self.address(b, offset, bytes)
    }

    /// Each batch of `batches` as the C API's command dwords, its buffers at their GPU
    /// addresses (what a lane of a threaded stream submits).
    pub(crate) fn batch_dwords(
        &self,
        batches: &[Vec<crate::backend::Work>],
    ) -> Result<Vec<Vec<u32>>, Failure> {
        batches
            .iter()
            .map(|w| {
                crate::backend::encode_work(w, |b, o, n| self.address(b, o, n))
                    .and_then(|c| dwords(&c))
            })
            .collect()
    }

    pub(crate) fn address(&self, b: BufferRef, offset: u64, bytes: u64) -> Result<u64, Failure> {
        let d = self.buffer(b)?;
        if offset.checked_add(bytes).is_none_or(|end| end > d.size) {
            return Err(Failure::Backend(format!(
                "{bytes} bytes at {offset:#x} are outside buffer {} ({} bytes)",
                b.0, d.size
            )));
        }
        Ok(d.gpu_va + offset)
    }

    pub(crate) fn started(&self, i: usize) -> Result<(), Failure> {
        if self.opened.get(i).copied().unwrap_or(false) {
            Ok(())
        } else {
            Err(Failure::Backend(format!("adapter {i} is not started")))
        }
    }

    /// `rvgpu_queue_submit` of one batch: GPU waits, packets, GPU signals (fence handle,
    /// value); its progress value.
    pub(crate) fn submit_batch(
        &self,
        p: usize,
        h: u64,
        cmds: &[rvgpu_hw::cmd::Command],
        waits: &[(u64, u64)],
        signals: &[(u64, u64)],
    ) -> Result<u64, Failure> {
        let d = dwords(cmds)?;
        let w: Vec<[u64; 2]> = waits.iter().map(|&(f, v)| [f, v]).collect();
        let s: Vec<[u64; 2]> = signals.iter().map(|&(f, v)| [f, v]).collect();
        // RvgpuSubmitDesc: six pointer-sized fields.
        let desc: [u64; 6] = [
            if d.is_empty() { 0 } else { d.as_ptr() as u64 },
            d.len() as u64,
            if w.is_empty() { 0 } else { w.as_ptr() as u64 },
            w.len() as u64,
            if s.is_empty() { 0 } else { s.as_ptr() as u64 },
            s.len() as u64,
        ];
        let progress = self.ok_out(p, "rvgpu_queue_submit", &[h, desc.as_ptr() as u64])?;
        self.drain_fence_log(p, h)?;
        Ok(progress)
    }

    /// `rvgpu_queue_status` of a live queue handle.
    pub(crate) fn status_of(&self, p: usize, h: u64) -> Result<UmQueueInfo, Failure> {
        // RvgpuQueueStatus: three u64, four u32.
        let mut st = [0u64; 5];
        self.ok(p, "rvgpu_queue_status", &[h, st.as_mut_ptr() as u64])?;
        let [submitted, completed, _dropped, kind_lost, id] = st;
        let kernel = kind_lost as u32 == 1;
        // The C API does not say (an application has no use for it); the OS's reading does.
        let given = self.machine().os_config().windows.reading().ums_progress
            == rvgpu_simos::machine::answers::UmsProgress::Given;
        Ok(UmQueueInfo {
            path: if kernel {
                SubmitPath::KernelMode
            } else {
                SubmitPath::UserMode
            },
            lost: (kind_lost >> 32) as u32 != 0,
            last_submitted: submitted,
            completed,
            queue_id: id as u32,
            scheduled: None,
            os_sees_work: Some(kernel || given),
        })
    }

    /// The handle of queue `i` if it is process `p`'s and still open.
    fn open_queue_of(&self, i: usize, p: usize) -> Option<u64> {
        self.queues
            .get(i)
            .filter(|q| q.process == p)
            .and_then(|q| q.handle)
    }

    /// Queue `i` is gone: it keeps `info`, its last status (if the DLL could read it).
    fn forget_queue(&mut self, i: usize, info: Result<UmQueueInfo, Failure>) {
        if let Some(q) = self.queues.get_mut(i) {
            q.handle = None;
            if let Ok(info) = info {
                q.info = info;
            }
        }
    }

    /// Everything of process `p` through the DLL, then the process ends.
    pub(crate) fn close_process(&mut self, p: usize) -> Result<(), Failure> {
        let (_, adapter) = self.process(p)?;
        let queues = self.queues_of(p);
        let mut first_error = None;
        let mut note = |r: Result<(), Failure>| {
            if let Err(e) = r {
                first_error.get_or_insert(e);
            }
        };
        for (h, locked) in self.app.tracked.take_process(p) {
            if locked {
                note(self.ok(p, "rvgpu_buffer_unlock", &[h]));
            }
            note(self.ok(
                p,
                "rvgpu_buffer_destroy",
                &[h, queues.as_ptr() as u64, queues.len() as u64],
            ));
        }
        for i in 0..self.buffers.len() {
            if let Some(d) = self.buffers.get(i).and_then(Option::as_ref) {
                if d.process == p {
                    note(self.ok(p, "rvgpu_buffer_destroy", &[d.handle, 0, 0]));
                    if let Some(b) = self.buffers.get_mut(i) {
                        *b = None;
                    }
                }
            }
        }
        for i in 0..self.queues.len() {
            if let Some(h) = self.open_queue_of(i, p) {
                let info = self.status_of(p, h);
                note(self.drain_fence_log(p, h));
                note(self.ok(p, "rvgpu_destroy_queue", &[h]));
                self.forget_queue(i, info);
            }
        }

        note(self.destroy_contexts_of(p));
        let live: Vec<u64> = (self.app.take_live_fences_of(p).into_iter())
            .map(|f| f.handle)
            .collect();
        for f in live {
            note(self.ok(p, "rvgpu_fence_destroy", &[f]));
        }
        for f in self.app.take_gates_of(p) {
            note(self.ok(p, "rvgpu_fence_destroy", &[f.handle]));
        }
        note(self.ok(p, "rvgpu_close_adapter", &[adapter]));
        if let Some(d) = self.processes.get_mut(p) {
            d.live = None;
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl DllSession {
    /// The process ends without cleaning up (UM-17 a normal exit, UM-18 killed from outside):
    /// the DLL runs no more code and the OS tears down its devices. Its queues keep their last
    /// status; its buffers are gone with it.
    pub(crate) fn exit_process(&mut self, p: usize, how: ProcessEnd) -> Result<(), Failure> {
        let (up, _) = self.process(p)?;
        // Every device the process opened (a second `rvgpu_open_adapter` is named as a process
        // of its own) ends with it.
        let same: Vec<usize> = (0..self.processes.len())
            .filter(|&q| {
                self.processes
                    .get(q)
                    .and_then(|d| d.live.as_ref())
                    .is_some_and(|(u, _)| Arc::ptr_eq(u, &up))
            })
            .collect();
        for &q in &same {
            for i in 0..self.queues.len() {
                if let Some(h) = self.open_queue_of(i, q) {
                    let info = self.status_of(q, h);
                    self.forget_queue(i, info);
                }
            }
        }
        // The application's own devices (`monitored`) are the process's too.
        let own: Vec<rvgpu_simos::UmsProcess> = (self.own_devices.iter())
            .filter(|d| same.contains(&d.process))
            .map(|d| d.kmt.parts().1)
            .collect();
        for d in up.devices().into_iter().chain(own) {
            match how {
                ProcessEnd::Normal => self.m.exit_process(&d),
                ProcessEnd::Abnormal => self.m.kill_process(&d),
            }
            .map_err(failure)?;
        }
        self.own_devices.retain(|d| !same.contains(&d.process));
        for q in same {
            self.app.drop_process(q);
            if let Some(d) = self.processes.get_mut(q) {
                d.live = None;
            }
        }
        self.fault().map_or(Ok(()), Err)
    }
}

impl Session for DllSession {
    fn adapter_count(&self) -> usize {
        self.m.adapter_count()
    }

    fn load_driver(&mut self) -> Result<(), Failure> {
        if self.m.adapter_count() == 0 {
            return Err(Failure::Backend("no rvgpu adapter is present".into()));
        }
        self.opened = vec![false; self.m.adapter_count()];
        Ok(())
    }

    /// PnP started the adapter; "starting" it checks what the OS reports, as the D3DKMT
    /// backend does.
    fn start_adapter(&mut self, i: usize) -> Result<StartedAdapter, Failure> {
        let render_only = self
            .render_only
            .get(i)
            .ok_or_else(|| Failure::Backend(format!("no adapter {i}")))?
            .clone()?;
        Ok(crate::backend::kmt::lifecycle::mark_started(
            &mut self.opened,
            i,
            render_only,
        ))
    }

    fn stop_adapter(&mut self, i: usize) -> Result<(), Failure> {
        self.started(i)?;
        for p in 0..self.processes.len() {
            let open = self
                .processes
                .get(p)
                .is_some_and(|d| d.adapter == i && d.live.is_some());
            if open {
                self.close_process(p)?;
            }
        }
        if let Some(o) = self.opened.get_mut(i) {
            *o = false;
        }
        Ok(())
    }

    /// Threaded: polls. Step mode: one round per 10 µs of budget, as on the simulation
    /// backend.
    fn run_until(&mut self, budget: Duration, done: Until<'_>) -> Result<bool, Failure> {
        if !self.stepped() {
            return crate::backend::kmt::lifecycle::poll_until(self, budget, |s| s.fault(), done);
        }
        let rounds = usize::try_from(budget.as_micros() / 10).unwrap_or(usize::MAX);
        let this: &DllSession = self;
        this.m
            .run_until(rounds, budget, |_| done(this))
            .map_err(failure)
    }

    crate::backend::session::capabilities! {
        as_ums / as_ums_ref: UserModeSubmission,
        as_kmd_caps / as_kmd_caps_ref: crate::backend::KmdCaps,
        as_alloc_usage / as_alloc_usage_ref: AllocationUsage,
        as_fences / as_fences_ref: crate::backend::Fences,
        as_fence_internals / as_fence_internals_ref: crate::backend::FenceInternals,
        as_engine_idle: crate::backend::EngineIdle,
        as_paging: crate::backend::Paging,
        as_tdr / as_tdr_ref: crate::backend::Tdr,
        as_tdr_trace / as_tdr_trace_ref: crate::backend::TdrTrace,
        as_os_trace / as_os_trace_ref: crate::backend::OsTrace,
        as_os_control / as_os_control_ref: crate::backend::OsControl,
        as_faults / as_faults_ref: crate::backend::FaultInjection,
        as_umd_fences / as_umd_fences_ref: crate::backend::UmdFences,
        as_fence_logs / as_fence_logs_ref: crate::backend::FenceLogs,
        as_kmtest: crate::backend::testing::KernelModeTesting,
        as_bug_checks / as_bug_checks_ref: crate::backend::BugChecks,
        as_step / as_step_ref: crate::backend::StepMode,
        as_gpu_va: crate::backend::GpuVaPlacement,
        as_dma_contexts: crate::backend::DmaContexts,
        as_kmd_journal: crate::backend::KmdJournal,
        as_kmd_faults: crate::backend::KmdFaults,
        as_monitored / as_monitored_ref: crate::backend::MonitoredFences,
        as_cross_adapter / as_cross_adapter_ref: crate::backend::CrossAdapterFences,
    }
}

/// The session ends as an application exits: its waits stop, then every process still open
/// destroys what it holds and closes its adapter, before the machine goes.
impl Drop for DllSession {
    fn drop(&mut self) {
        self.app.stop_events();
        for p in 0..self.processes.len() {
            if self.processes.get(p).is_some_and(|d| d.live.is_some()) {
                if let Err(e) = self.close_process(p) {
                    let mut t = self.teardown.lock().unwrap_or_else(|e| e.into_inner());
                    t.push(format!("process {p}: {e:?}"));
                }
            }
        }
    }
}

/// (`RvgpuFence*`, value) pairs: a batch's wait or signal list.
pub(crate) type FenceList = Vec<(u64, u64)>;

/// Commands as the C API takes them: each 64-bit word as two dwords, low half first.
pub(crate) fn dwords(cmds: &[rvgpu_hw::cmd::Command]) -> Result<Vec<u32>, Failure> {
    let mut out = Vec::new();
    for c in cmds {
        let mut words = [0u64; 16];
        let n = c
            .encode(&mut words)
            .ok_or_else(|| Failure::Backend(format!("{c:?} does not encode")))?;
        for w in words.iter().take(n) {
            out.push(*w as u32);
            out.push((*w >> 32) as u32);
        }
    }
    Ok(out)
}
