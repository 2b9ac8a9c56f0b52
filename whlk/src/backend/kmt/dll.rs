//! `--backend kmt-sim --umd pe`: the cases driven through the shipped `rvgpu_umd.dll` itself —
//! its C API (umd/include/rvgpu_umd.h), run in the x86-64 emulator with its gdi32, kernel32 and
//! advapi32 imports bound to the simulated OS (`rvgpu_simos::pe::umd`, docs/pe-image.md) — on
//! a machine brought up as [`super::sim::SimPlatform`] brings it up.
//!
//! A case's application sees what an application linked against the DLL sees. A process is a
//! [`UserProcess`] that loaded the DLL and opened the adapter with `rvgpu_open_adapter`;
//! buffers are `rvgpu_buffer_*`, queues `rvgpu_queue_create` (user-mode or kernel-mode), work
//! `rvgpu_queue_submit` of packets with fence wait and signal lists and `rvgpu_buffer_fill` /
//! `rvgpu_buffer_copy`, waits `rvgpu_queue_wait`, shared fences `rvgpu_fence_share` /
//! `rvgpu_fence_open`, kernel-mode DMA contexts `rvgpu_context_*` (`dll_dma`). Around it the harness reads and steers the simulated OS and device
//! (`dll_os`: the OS's records, power, device loss, injected faults, the OS's copy of the
//! driver's caps, process exits). What neither can do is a capability this backend does not
//! list, so the runner skips the case naming it.

use std::sync::Arc;
use std::time::Duration;

use rvgpu_simos::pe::cpu::Stop;
use rvgpu_simos::pe::umd::{UmdImage, UserProcess};
use rvgpu_simos::Machine;

use crate::backend::sim::failure;
use crate::backend::{
    AllocationUsage, BufferRef, Capabilities, Capability, ChurnLane, ChurnReport, DoorbellStatus,
    DriverCaps, Failure, LockOutcome, ProcessEnd, ProcessRef, Session, SessionConfig,
    StartedAdapter, StreamLane, StreamReport, SubmissionCaps, SubmitPath, TrackedInfo, TrackedRef,
    TrackedWork, UmQueueInfo, UmQueueRef, UserModeSubmission, WaitResult, Work,
};

/// `RvgpuStatus` values (rvgpu_umd.h).
const OK: u64 = 0;
const NOT_IMPLEMENTED: u64 = 2;
const DEVICE_LOST: u64 = 3;
const TIMEOUT: u64 = 4;
const WAS_STILL_DRAWING: u64 = 7;
/// `RVGPU_LOCK_READ`, `RVGPU_LOCK_WRITE`.
const LOCK_READ: u64 = 0x1;
/// `STATUS_DEVICE_REMOVED`.
const STATUS_DEVICE_REMOVED: i32 = 0xC000_02B6_u32 as i32;
const LOCK_WRITE: u64 = 0x2;

fn status_name(s: u64) -> &'static str {
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
    image: Arc<UmdImage>,
    /// What failed when sessions ended and their processes cleaned up (see
    /// [`DllBackend::teardown_failures`]).
    teardown: Arc<std::sync::Mutex<Vec<String>>>,
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
        if crate::os::native_fences() {
            Capabilities::of(&[
                Capability::UserModeSubmission,
                Capability::KmdCaps,
                Capability::AllocationUsage,
                Capability::Fences,
                Capability::FenceInternals,
                Capability::EngineIdle,
                Capability::Paging,
                Capability::ConfiguredMachine,
                Capability::NativeFences,
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
            ])
        } else {
            // Its queues and fences are user-mode queues and native fences.
            Capabilities::NONE
        }
    }

    fn open_session(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure> {
        let (m, render_only) = super::sim::machine_after_starts(config, true)?;
        Ok(Box::new(DllSession {
            m: Arc::new(m),
            image: self.image.clone(),
            teardown: self.teardown.clone(),
            render_only,
            opened: Vec::new(),
            processes: Vec::new(),
            buffers: Vec::new(),
            tracked: Vec::new(),
            queues: Vec::new(),
            gates: Vec::new(),
            fence: super::dll_fences::FenceState::default(),
            suspended: Vec::new(),
            testing: Default::default(),
            um_fences: Vec::new(),
            recorder: None,
            idle_f1: config.idle_f1_ticks > 0,
            va_ranges: Vec::new(),
            dma: Vec::new(),
        }))
    }
}

pub(super) struct DProcess {
    pub(super) adapter: usize,
    /// The process and its `RvgpuAdapter*`; `None` once it ended.
    pub(super) live: Option<(Arc<UserProcess>, u64)>,
    /// Its D3D device's handle (how the OS's records name the process).
    pub(super) device: u32,
}

/// A buffer (`RvgpuBuffer*`), plain or tracked.
struct DBuffer {
    process: usize,
    handle: u64,
    size: u64,
    gpu_va: u64,
    /// The CPU view of a tracked buffer's current lock (0: unlocked).
    view: u64,
}

pub(super) struct DQueue {
    pub(super) process: usize,
    /// `RvgpuQueue*`; `None` once closed.
    pub(super) handle: Option<u64>,
    /// What `rvgpu_queue_status` said last (kept after the close).
    info: UmQueueInfo,
    /// The D3DKMT objects `rvgpu_queue_create` made (context, hardware queue, doorbell, ring
    /// allocations, ...): how the OS's records name the queue.
    pub(super) objects: Vec<u32>,
}

/// A gate: a GPU wait on word `offset` of buffer `buffer`, made a wait on a native fence of the
/// buffer's process that `write_buffer` signals from the CPU (the device re-evaluates a wait on
/// plain memory only when the OS says the word changed, which no application call does).
struct Gate {
    process: usize,
    buffer: usize,
    offset: u64,
    /// `RvgpuFence*`.
    fence: u64,
}

pub(super) struct DllSession {
    m: Arc<Machine>,
    image: Arc<UmdImage>,
    /// The backend's record of failed clean-ups.
    teardown: Arc<std::sync::Mutex<Vec<String>>>,
    /// Per adapter, whether PnP's start left it render-only, or why the start failed.
    render_only: Vec<Result<bool, Failure>>,
    opened: Vec<bool>,
    pub(super) processes: Vec<DProcess>,
    buffers: Vec<Option<DBuffer>>,
    tracked: Vec<Option<DBuffer>>,
    pub(super) queues: Vec<DQueue>,
    gates: Vec<Gate>,
    pub(super) fence: super::dll_fences::FenceState,
    /// Contexts the OS suspended, by process (OsControl).
    pub(super) suspended: Vec<(usize, u32)>,
    /// Fences made through `UmdFences`: (process, `RvgpuFence*`).
    pub(super) um_fences: Vec<(usize, u64)>,
    /// The engines request F1 when idle (`SessionConfig::idle_f1_ticks`).
    idle_f1: bool,
    /// GPU VA ranges reserved through `GpuVaPlacement`: (process, base, bytes) (`dll_gpuva`).
    pub(super) va_ranges: Vec<(usize, u64, u64)>,
    /// Kernel-mode DMA contexts made through `DmaContexts` (`dll_dma`).
    pub(super) dma: Vec<super::dll_dma::DContext>,
    /// The fence timeline's recorder once `FenceLogs::trace_fences` ran (`dll_logs`).
    pub(super) recorder: Option<Arc<rvgpu_simos::sync::trace::Recorder>>,
    /// The kernel-mode testing interface's objects (`dll_os`).
    pub(super) testing: crate::backend::testing::TestingState<crate::backend::sim::kmt::SessKmt>,
}

impl DllSession {
    pub(super) fn fault(&self) -> Option<Failure> {
        self.m.fault().map(failure)
    }

    pub(super) fn machine(&self) -> &Machine {
        &self.m
    }

    pub(super) fn machine_arc(&self) -> Arc<Machine> {
        self.m.clone()
    }

    /// Whether the machine runs in step mode: nothing happens on it but in the rounds the
    /// harness runs and the rounds the DLL's waits run on the calling thread.
    pub(super) fn stepped(&self) -> bool {
        self.m.config().mode == rvgpu_simos::Mode::Step
    }

    /// The simulated OS process behind process `p`'s D3D device (its NT handle table).
    pub(super) fn nt_process(&self, p: usize) -> Result<rvgpu_simos::ProcessId, Failure> {
        let (up, _) = self.process(p)?;
        up.nt_processes()
            .first()
            .copied()
            .ok_or_else(|| Failure::Backend(format!("process {p} has no device")))
    }

    /// The simulated OS's device behind process `p`'s D3D device (what the harness names when
    /// it acts as the OS on the process).
    pub(super) fn os_device(&self, p: usize) -> Result<rvgpu_simos::UmsProcess, Failure> {
        let (up, _) = self.process(p)?;
        up.devices()
            .first()
            .copied()
            .ok_or_else(|| Failure::Backend(format!("process {p} has no device")))
    }

    pub(super) fn process(&self, p: usize) -> Result<(Arc<UserProcess>, u64), Failure> {
        self.processes
            .get(p)
            .and_then(|d| d.live.clone())
            .ok_or_else(|| Failure::Backend(format!("process {p} has ended or never was")))
    }

    /// Calls export `name` of process `p`'s DLL; its `RvgpuStatus` (or RAX).
    pub(super) fn call(&self, p: usize, name: &str, args: &[u64]) -> Result<u64, Failure> {
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
    pub(super) fn ok(&self, p: usize, name: &str, args: &[u64]) -> Result<(), Failure> {
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

    fn buffer(&self, b: BufferRef) -> Result<&DBuffer, Failure> {
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
    pub(super) fn buffer_handle(&self, b: BufferRef) -> Result<(usize, u64), Failure> {
        self.buffer(b).map(|d| (d.process, d.handle))
    }

    fn tracked_buffer(&self, b: TrackedRef) -> Result<&DBuffer, Failure> {
        self.tracked
            .get(b.0)
            .and_then(Option::as_ref)
            .ok_or_else(|| Failure::Backend(format!("no live tracked buffer {}", b.0)))
    }

    pub(super) fn queue(&self, q: UmQueueRef) -> Result<(usize, u64), Failure> {
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
    fn queues_of(&self, p: usize) -> Vec<u64> {
        self.queues
            .iter()
            .filter(|q| q.process == p)
            .filter_map(|q| q.handle)
            .collect()
    }

    /// Runs `f` on the CPU view (its base and size in bytes) of plain buffer `b` locked with
    /// `flags` (no queue named: the packets of `rvgpu_submit` are not tracked, so the lock does
    /// not wait for them).
    fn with_view<R>(
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
    fn word(&self, b: BufferRef, offset: u64) -> Result<usize, Failure> {
        let d = self.buffer(b)?;
        if !offset.is_multiple_of(8) || offset.checked_add(8).is_none_or(|e| e > d.size) {
            return Err(Failure::Backend(format!(
                "offset {offset:#x} is outside buffer {} ({} bytes)",
                b.0, d.size
            )));
        }
        usize::try_from(offset / 8).map_err(|_| Failure::Backend("offset too large".into()))
    }

    fn new_buffer(&mut self, p: ProcessRef, bytes: u64) -> Result<DBuffer, Failure> {
        let (_, adapter) = self.process(p.0)?;
        let mut handle = 0u64;
        self.ok(
            p.0,
            "rvgpu_buffer_create",
            &[adapter, bytes, &raw mut handle as u64],
        )?;
        let mut gpu_va = 0u64;
        self.ok(
            p.0,
            "rvgpu_buffer_gpu_va",
            &[handle, &raw mut gpu_va as u64],
        )?;
        Ok(DBuffer {
            process: p.0,
            handle,
            size: bytes,
            gpu_va,
            view: 0,
        })
    }

    pub(super) fn buffer_address(
        &self,
        b: BufferRef,
        offset: u64,
        bytes: u64,
    ) -> Result<u64, Failure> {
        self.address(b, offset, bytes)
    }

    fn address(&self, b: BufferRef, offset: u64, bytes: u64) -> Result<u64, Failure> {
        let d = self.buffer(b)?;
        if offset.checked_add(bytes).is_none_or(|end| end > d.size) {
            return Err(Failure::Backend(format!(
                "{bytes} bytes at {offset:#x} are outside buffer {} ({} bytes)",
                b.0, d.size
            )));
        }
        Ok(d.gpu_va + offset)
    }

    fn started(&self, i: usize) -> Result<(), Failure> {
        if self.opened.get(i).copied().unwrap_or(false) {
            Ok(())
        } else {
            Err(Failure::Backend(format!("adapter {i} is not started")))
        }
    }

    /// The gate fence of word `offset` of plain buffer `b` for a queue of `process`, made on
    /// first use with the word's value.
    fn gate(&mut self, process: usize, b: BufferRef, offset: u64) -> Result<u64, Failure> {
        if let Some(g) = self
            .gates
            .iter()
            .find(|g| g.buffer == b.0 && g.offset == offset)
        {
            return Ok(g.fence);
        }
        if self.buffer(b)?.process != process {
            return Err(Failure::Unsupported(
                "a GPU wait on another process's memory (a gate is a native fence of the \
                 buffer's process)"
                    .into(),
            ));
        }
        let initial = self.read_buffer(b, offset)?;
        let (_, adapter) = self.process(process)?;
        let mut fence = 0u64;
        self.ok(
            process,
            "rvgpu_fence_create",
            &[adapter, initial, &raw mut fence as u64],
        )?;
        self.gates.push(Gate {
            process,
            buffer: b.0,
            offset,
            fence,
        });
        Ok(fence)
    }

    /// `rvgpu_queue_submit` of one batch: GPU waits, packets, GPU signals (fence handle,
    /// value); its progress value.
    pub(super) fn submit_batch(
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
        let mut progress = 0u64;
        self.ok(
            p,
            "rvgpu_queue_submit",
            &[h, desc.as_ptr() as u64, &raw mut progress as u64],
        )?;
        self.drain_fence_log(p, h)?;
        Ok(progress)
    }

    /// `rvgpu_queue_status` of a live queue handle.
    fn status_of(&self, p: usize, h: u64) -> Result<UmQueueInfo, Failure> {
        // RvgpuQueueStatus: three u64, four u32.
        let mut st = [0u64; 5];
        self.ok(p, "rvgpu_queue_status", &[h, st.as_mut_ptr() as u64])?;
        let [submitted, completed, _dropped, kind_lost, id] = st;
        let kernel = kind_lost as u32 == 1;
        // The C API does not say (an application has no use for it); the OS's reading does.
        let given = self.machine().os_config().reading.ums_progress
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

    /// Everything of process `p` through the DLL, then the process ends.
    fn close_process(&mut self, p: usize) -> Result<(), Failure> {
        let (_, adapter) = self.process(p)?;
        let queues = self.queues_of(p);
        let mut first_error = None;
        let mut note = |r: Result<(), Failure>| {
            if let Err(e) = r {
                first_error.get_or_insert(e);
            }
        };
        for i in 0..self.tracked.len() {
            if let Some(d) = self.tracked.get(i).and_then(Option::as_ref) {
                if d.process == p {
                    let (h, view) = (d.handle, d.view);
                    if view != 0 {
                        note(self.ok(p, "rvgpu_buffer_unlock", &[h]));
                    }
                    note(self.ok(
                        p,
                        "rvgpu_buffer_destroy",
                        &[h, queues.as_ptr() as u64, queues.len() as u64],
                    ));
                    if let Some(t) = self.tracked.get_mut(i) {
                        *t = None;
                    }
                }
            }
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
            let h = self
                .queues
                .get(i)
                .filter(|q| q.process == p)
                .and_then(|q| q.handle);
            if let Some(h) = h {
                if let Ok(info) = self.status_of(p, h) {
                    if let Some(q) = self.queues.get_mut(i) {
                        q.info = info;
                    }
                }
                note(self.drain_fence_log(p, h));
                note(self.ok(p, "rvgpu_destroy_queue", &[h]));
                if let Some(q) = self.queues.get_mut(i) {
                    q.handle = None;
                }
            }
        }

        note(self.destroy_contexts_of(p));
        for f in self.fence.take_live_of(p) {
            note(self.ok(p, "rvgpu_fence_destroy", &[f]));
        }
        let (mine, others): (Vec<Gate>, Vec<Gate>) = std::mem::take(&mut self.gates)
            .into_iter()
            .partition(|g| g.process == p);
        self.gates = others;
        for g in mine {
            note(self.ok(p, "rvgpu_fence_destroy", &[g.fence]));
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
    fn exit_process(&mut self, p: usize, how: ProcessEnd) -> Result<(), Failure> {
        let (up, _) = self.process(p)?;
        for i in 0..self.queues.len() {
            let h = self
                .queues
                .get(i)
                .filter(|q| q.process == p)
                .and_then(|q| q.handle);
            if let Some(h) = h {
                let info = self.status_of(p, h);
                if let Some(q) = self.queues.get_mut(i) {
                    q.handle = None;
                    if let Ok(info) = info {
                        q.info = info;
                    }
                }
            }
        }
        for d in up.devices() {
            match how {
                ProcessEnd::Normal => self.m.exit_process(&d),
                ProcessEnd::Abnormal => self.m.kill_process(&d),
            }
            .map_err(failure)?;
        }
        self.gates.retain(|g| g.process != p);
        let _ = self.fence.take_live_of(p);
        if let Some(d) = self.processes.get_mut(p) {
            d.live = None;
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
        if let Some(o) = self.opened.get_mut(i) {
            *o = true;
        }
        let n = u32::from(!render_only);
        Ok(StartedAdapter {
            sources: n,
            children: n,
        })
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

    fn remove_adapter(&mut self, _i: usize) -> Result<(), Failure> {
        Ok(())
    }

    fn unload(&mut self) -> Result<(), Failure> {
        Ok(())
    }

    /// Threaded: polls. Step mode: one round per 10 µs of budget, as on the simulation
    /// backend.
    fn run_until(
        &mut self,
        budget: Duration,
        done: &mut dyn FnMut(&dyn Session) -> bool,
    ) -> Result<bool, Failure> {
        if !self.stepped() {
            return super::poll_until(self, budget, |s| s.fault(), done);
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
    }
}

/// The session ends as an application exits: its waits stop, then every process still open
/// destroys what it holds and closes its adapter, before the machine goes.
impl Drop for DllSession {
    fn drop(&mut self) {
        self.fence.stop();
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
pub(super) type FenceList = Vec<(u64, u64)>;

/// One [`StreamLane`] on its own thread: `rvgpu_queue_submit` of each batch, in order. A lane
/// that stops after a recovery learns of it from the OS's counters on `m` (the harness
/// steering the application, as the simulation backend does).
fn stream_lane(
    m: &Machine,
    adapter: usize,
    lane: &StreamLane,
    up: &Arc<UserProcess>,
    h: u64,
    batches: &[Vec<u32>],
) -> StreamReport {
    let mut rep = StreamReport {
        submitted: 0,
        last_value: 0,
        recovered_at: None,
        error: None,
    };
    let call = |name: &str, args: &[u64]| -> Result<u64, String> {
        up.call(name, args)
            .map(|v| v & 0xFFFF_FFFF)
            .map_err(|e| format!("{name}: {e:?}"))
    };
    std::thread::sleep(lane.start_after);
    for d in batches {
        if crate::backend::sim::usermode::lane_done_after_recovery(m, adapter, lane, &mut rep) {
            break;
        }
        if lane.max_in_flight > 0 {
            let t0 = std::time::Instant::now();
            loop {
                let mut st = [0u64; 5];
                match call("rvgpu_queue_status", &[h, st.as_mut_ptr() as u64]) {
                    Ok(OK) => {}
                    Ok(s) => {
                        rep.error = Some(format!("rvgpu_queue_status returned {}", status_name(s)));
                        return rep;
                    }
                    Err(e) => {
                        rep.error = Some(e);
                        return rep;
                    }
                }
                if st[0].saturating_sub(st[1]) < lane.max_in_flight {
                    break;
                }
                if t0.elapsed() > Duration::from_secs(20) {
                    rep.error = Some(format!("batch {}: in flight for 20 s", rep.submitted));
                    return rep;
                }
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        let desc: [u64; 6] = [d.as_ptr() as u64, d.len() as u64, 0, 0, 0, 0];
        let mut v = 0u64;
        match call(
            "rvgpu_queue_submit",
            &[h, desc.as_ptr() as u64, &raw mut v as u64],
        ) {
            Ok(OK) => {
                rep.submitted += 1;
                rep.last_value = v;
            }
            Ok(s) => {
                rep.error = Some(format!("batch {}: {}", rep.submitted, status_name(s)));
                return rep;
            }
            Err(e) => {
                rep.error = Some(e);
                return rep;
            }
        }
    }
    if lane.wait && rep.last_value > 0 {
        match call("rvgpu_queue_wait", &[h, rep.last_value, u64::MAX]) {
            Ok(OK) => {}
            Ok(s) => rep.error = Some(format!("waiting: {}", status_name(s))),
            Err(e) => rep.error = Some(e),
        }
    }
    rep
}

/// One [`ChurnLane`] on its own thread.
fn churn_lane(
    lane: &ChurnLane,
    up: &Arc<UserProcess>,
    adapter: u64,
    batches: &[Vec<u32>],
) -> ChurnReport {
    let mut rep = ChurnReport {
        rounds_done: 0,
        kernel_mode_rounds: 0,
        error: None,
    };
    let call = |name: &str, args: &[u64]| -> Result<(), String> {
        match up.call(name, args).map(|v| v & 0xFFFF_FFFF) {
            Ok(OK) => Ok(()),
            Ok(s) => Err(format!("{name} returned {}", status_name(s))),
            Err(e) => Err(format!("{name}: {e:?}")),
        }
    };
    let per = usize::try_from(lane.batches_per_round).unwrap_or(usize::MAX);
    for round in 0..lane.rounds {
        let r = (|| -> Result<bool, String> {
            // RvgpuQueueDesc: node, user mode, priority 0, 4 KiB ring.
            let desc: [u32; 4] = [lane.node, 0, 0, 4096];
            let mut q = 0u64;
            call(
                "rvgpu_queue_create",
                &[adapter, desc.as_ptr() as u64, &raw mut q as u64],
            )?;
            let first = usize::try_from(round)
                .unwrap_or(usize::MAX)
                .saturating_mul(per);
            let mut last = 0u64;
            let mut result = Ok(());
            for d in batches.iter().skip(first).take(per) {
                let desc: [u64; 6] = [d.as_ptr() as u64, d.len() as u64, 0, 0, 0, 0];
                result = call(
                    "rvgpu_queue_submit",
                    &[q, desc.as_ptr() as u64, &raw mut last as u64],
                );
                if result.is_err() {
                    break;
                }
            }
            if result.is_ok() && last > 0 {
                result = call("rvgpu_queue_wait", &[q, last, u64::MAX]);
            }
            let mut st = [0u64; 5];
            let status = call("rvgpu_queue_status", &[q, st.as_mut_ptr() as u64]);
            let closed = call("rvgpu_destroy_queue", &[q]);
            result.and(status).and(closed)?;
            Ok(st[3] as u32 == 1)
        })();
        match r {
            Ok(kernel) => {
                rep.rounds_done += 1;
                rep.kernel_mode_rounds += u32::from(kernel);
            }
            Err(e) => {
                rep.error = Some(format!("round {round}: {e}"));
                return rep;
            }
        }
    }
    rep
}

/// Commands as the C API takes them: each 64-bit word as two dwords, low half first.
pub(super) fn dwords(cmds: &[rvgpu_hw::cmd::Command]) -> Result<Vec<u32>, Failure> {
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

impl UserModeSubmission for DllSession {
    /// The node metadata and user-mode submission caps the driver reported to the OS (the
    /// OS's record, read by the harness).
    fn open_process(&mut self, i: usize) -> Result<ProcessRef, Failure> {
        self.started(i)?;
        let up = UserProcess::new(self.m.clone(), self.image.clone());
        let luid = rvgpu_simos::dxgkrnl::pnp::adapter_luid(i);
        let mut adapter = 0u64;
        let r = up
            .call(
                "rvgpu_open_adapter",
                &[
                    u64::from(luid.LowPart),
                    u64::from(luid.HighPart as u32),
                    &raw mut adapter as u64,
                ],
            )
            .map_err(|e| Failure::Backend(format!("rvgpu_open_adapter: {e:?}")))?;
        if r & 0xFFFF_FFFF != OK {
            return Err(Failure::Backend(format!(
                "rvgpu_open_adapter returned {}",
                status_name(r & 0xFFFF_FFFF)
            )));
        }
        let device = up.devices().first().map_or(0, |d| d.device);
        self.processes.push(DProcess {
            adapter: i,
            live: Some((up, adapter)),
            device,
        });
        Ok(ProcessRef(self.processes.len() - 1))
    }

    fn end_process(&mut self, p: ProcessRef, how: ProcessEnd) -> Result<(), Failure> {
        self.process(p.0)?;
        self.exit_process(p.0, how)
    }

    fn create_buffer(&mut self, p: ProcessRef, bytes: u64) -> Result<BufferRef, Failure> {
        let d = self.new_buffer(p, bytes)?;
        self.buffers.push(Some(d));
        let b = BufferRef(self.buffers.len() - 1);
        self.with_view(b, LOCK_WRITE, |base, size| {
            for i in 0..usize::try_from(size / 8).unwrap_or(0) {
                // SAFETY: the lock's view of `size` bytes; word `i` is inside it.
                unsafe { base.add(i).write_volatile(0) };
            }
        })?;
        Ok(b)
    }

    fn read_buffer(&self, b: BufferRef, offset: u64) -> Result<u64, Failure> {
        let i = self.word(b, offset)?;
        // SAFETY: the lock's view; word `i` checked inside the buffer.
        self.with_view(b, LOCK_READ, |base, _| unsafe {
            base.add(i).read_volatile()
        })
    }

    /// The store happens; a GPU wait queued on the word (a gate) is released by signalling
    /// the gate's fence to the value from the CPU.
    fn write_buffer(&mut self, b: BufferRef, offset: u64, value: u64) -> Result<(), Failure> {
        let i = self.word(b, offset)?;
        // SAFETY: the lock's view; word `i` checked inside the buffer.
        self.with_view(b, LOCK_WRITE, |base, _| unsafe {
            base.add(i).write_volatile(value)
        })?;
        let Some(fence) = self
            .gates
            .iter()
            .find(|g| g.buffer == b.0 && g.offset == offset)
            .map(|g| g.fence)
        else {
            return Ok(());
        };
        let p = self.buffer(b)?.process;
        self.ok(p, "rvgpu_fence_signal", &[fence, value])
    }

    fn create_queue(
        &mut self,
        p: ProcessRef,
        node: u32,
        kind: SubmitPath,
    ) -> Result<UmQueueRef, Failure> {
        let (_, adapter) = self.process(p.0)?;
        // RvgpuQueueDesc: node, kind, priority, ring size (4 KiB: the rings the cases wrap).
        let kind = u32::from(kind == SubmitPath::KernelMode);
        let desc: [u32; 4] = [node, kind, 0, 4096];
        let before = self.process(p.0)?.0.objects();
        let mut q = 0u64;
        self.ok(
            p.0,
            "rvgpu_queue_create",
            &[adapter, desc.as_ptr() as u64, &raw mut q as u64],
        )?;
        let objects = self
            .process(p.0)?
            .0
            .objects()
            .into_iter()
            .filter(|h| before.binary_search(h).is_err())
            .collect();
        let info = self.status_of(p.0, q)?;
        self.queues.push(DQueue {
            process: p.0,
            handle: Some(q),
            info,
            objects,
        });
        Ok(UmQueueRef(self.queues.len() - 1))
    }

    fn submit(&mut self, q: UmQueueRef, work: &[Work]) -> Result<u64, Failure> {
        let (p, h) = self.queue(q)?;
        // A `WaitAtLeast` is a GPU wait on the word's gate fence: it opens a new batch, since
        // a batch's waits come before its packets.
        let mut batches: Vec<(FenceList, Vec<Work>)> = vec![(Vec::new(), Vec::new())];
        for w in work {
            if let Work::WaitAtLeast {
                buffer,
                offset,
                value,
            } = *w
            {
                let fence = self.gate(p, buffer, offset)?;
                if batches.last().is_some_and(|b| !b.1.is_empty()) {
                    batches.push((Vec::new(), Vec::new()));
                }
                if let Some(b) = batches.last_mut() {
                    b.0.push((fence, value));
                }
            } else if let Some(b) = batches.last_mut() {
                b.1.push(*w);
            }
        }
        let mut last = None;
        for (waits, items) in &batches {
            let cmds =
                crate::backend::encode_work(items, |b, off, bytes| self.address(b, off, bytes))?;
            if cmds.is_empty() && waits.is_empty() {
                continue;
            }
            last = Some(self.submit_batch(p, h, &cmds, waits, &[])?);
        }
        last.ok_or_else(|| Failure::Backend("nothing to submit".into()))
    }

    fn wait_progress(&mut self, q: UmQueueRef, value: u64) -> Result<WaitResult, Failure> {
        let (p, h) = self.queue(q)?;
        match self.call(p, "rvgpu_queue_wait", &[h, value, u64::MAX])? {
            OK => Ok(WaitResult::Satisfied),
            TIMEOUT if self.fault().is_none() => Ok(WaitResult::TimedOut),
            DEVICE_LOST if self.fault().is_none() => Ok(WaitResult::Abandoned),
            s => Err(self.fault().unwrap_or_else(|| {
                Failure::Backend(format!("rvgpu_queue_wait returned {}", status_name(s)))
            })),
        }
    }

    fn queue_info(&self, q: UmQueueRef) -> Result<UmQueueInfo, Failure> {
        let d = self
            .queues
            .get(q.0)
            .ok_or_else(|| Failure::Backend(format!("no queue {}", q.0)))?;
        match d.handle {
            Some(h) => self.status_of(d.process, h),
            None => Ok(d.info),
        }
    }

    fn close_queue(&mut self, q: UmQueueRef) -> Result<(), Failure> {
        let (p, h) = self.queue(q)?;
        let info = self.status_of(p, h)?;
        self.drain_fence_log(p, h)?;
        if let Some(d) = self.queues.get_mut(q.0) {
            d.handle = None;
            d.info = info;
        }
        self.ok(p, "rvgpu_destroy_queue", &[h])
    }

    fn doorbell_status(&self, q: UmQueueRef) -> Result<DoorbellStatus, Failure> {
        let (p, h) = self.queue(q)?;
        let mut st = [0u64; 5];
        self.ok(p, "rvgpu_queue_status", &[h, st.as_mut_ptr() as u64])?;
        Ok(match (st[4] >> 32) as u32 as i32 {
            0 => DoorbellStatus::Connected,
            1 => DoorbellStatus::ConnectedNotify,
            2 => DoorbellStatus::DisconnectedRetry,
            3 => DoorbellStatus::DisconnectedAbort,
            -1 => {
                return Err(Failure::Backend(format!(
                    "queue {} has no doorbell (a kernel-mode queue)",
                    q.0
                )))
            }
            x => DoorbellStatus::Other(x),
        })
    }

    /// One thread per lane (step mode: one lane after another), each making its queues one
    /// after another through the C API:
    /// `rvgpu_queue_create`, its batches by `rvgpu_queue_submit`, `rvgpu_queue_wait`,
    /// `rvgpu_queue_status` (which path the queue ended on), `rvgpu_destroy_queue`.
    fn churn(&mut self, lanes: &[ChurnLane]) -> Result<Vec<ChurnReport>, Failure> {
        let mut jobs = Vec::with_capacity(lanes.len());
        for lane in lanes {
            let (up, adapter) = self.process(lane.process.0)?;
            let batches = lane
                .work
                .iter()
                .map(|w| {
                    crate::backend::encode_work(w, |b, o, n| self.address(b, o, n))
                        .and_then(|c| dwords(&c))
                })
                .collect::<Result<Vec<_>, _>>()?;
            jobs.push((lane, up, adapter, batches));
        }
        if self.stepped() {
            return Ok(jobs
                .iter()
                .map(|(lane, up, a, batches)| churn_lane(lane, up, *a, batches))
                .collect());
        }
        Ok(std::thread::scope(|sc| {
            let handles: Vec<_> = jobs
                .iter()
                .map(|(lane, up, a, batches)| sc.spawn(move || churn_lane(lane, up, *a, batches)))
                .collect();
            handles
                .into_iter()
                .map(|t| {
                    t.join().unwrap_or_else(|_| ChurnReport {
                        rounds_done: 0,
                        kernel_mode_rounds: 0,
                        error: Some("the lane's thread panicked".into()),
                    })
                })
                .collect()
        }))
    }
}

/// The OS's record of what the driver reported, read by the harness (an application sees only
/// what `D3DKMTQueryAdapterInfo` passes on).
impl crate::backend::KmdCaps for DllSession {
    fn driver_caps(&mut self, i: usize) -> Result<DriverCaps, Failure> {
        crate::backend::sim::driver_caps_of(&self.m, i)
    }

    fn submission_caps(&mut self, i: usize) -> Result<SubmissionCaps, Failure> {
        Ok(crate::backend::sim::submission_caps_of(&self.m, i))
    }
}

impl AllocationUsage for DllSession {
    fn create_tracked(&mut self, p: ProcessRef, bytes: u64) -> Result<TrackedRef, Failure> {
        let d = self.new_buffer(p, bytes)?;
        self.tracked.push(Some(d));
        Ok(TrackedRef(self.tracked.len() - 1))
    }

    fn submit_tracked(
        &mut self,
        q: UmQueueRef,
        gate: Option<(BufferRef, u64, u64)>,
        work: &[TrackedWork],
    ) -> Result<u64, Failure> {
        let (p, h) = self.queue(q)?;
        if let Some((buffer, offset, value)) = gate {
            let fence = self.gate(p, buffer, offset)?;
            self.submit_batch(p, h, &[], &[(fence, value)], &[])?;
        }
        let mut last = None;
        for w in work {
            let mut progress = 0u64;
            match *w {
                TrackedWork::Fill {
                    dst,
                    offset,
                    bytes,
                    pattern,
                } => {
                    let b = self.tracked_buffer(dst)?.handle;
                    self.ok(
                        p,
                        "rvgpu_buffer_fill",
                        &[h, b, offset, bytes, pattern, &raw mut progress as u64],
                    )?;
                }
                TrackedWork::Copy { src, dst, bytes } => {
                    let (s, d) = (
                        self.tracked_buffer(src)?.handle,
                        self.tracked_buffer(dst)?.handle,
                    );
                    self.ok(
                        p,
                        "rvgpu_buffer_copy",
                        &[h, s, 0, d, 0, bytes, &raw mut progress as u64],
                    )?;
                }
            }
            last = Some(progress);
        }
        last.ok_or_else(|| Failure::Backend("no tracked work to submit".into()))
    }

    fn lock_tracked(&mut self, b: TrackedRef, flags: u32) -> Result<LockOutcome, Failure> {
        let d = self.tracked_buffer(b)?;
        let (p, h) = (d.process, d.handle);
        let queues = self.queues_of(p);
        let mut data = 0u64;
        let s = self.call(
            p,
            "rvgpu_buffer_lock",
            &[
                h,
                u64::from(flags),
                queues.as_ptr() as u64,
                queues.len() as u64,
                &raw mut data as u64,
            ],
        )?;
        match s {
            OK => {
                if let Some(Some(t)) = self.tracked.get_mut(b.0) {
                    t.view = data;
                }
                Ok(LockOutcome::Mapped)
            }
            WAS_STILL_DRAWING => Ok(LockOutcome::WasStillDrawing),
            s => Ok(LockOutcome::Refused(status_name(s).into())),
        }
    }

    fn read_tracked(&self, b: TrackedRef, offset: u64) -> Result<u64, Failure> {
        let p = tracked_word(self.tracked_buffer(b)?, offset)?;
        // SAFETY: the view of the buffer's live lock (the DLL's Lock2 mapping, host memory),
        // `offset` checked inside it and 8-aligned.
        Ok(unsafe { p.read_volatile() })
    }

    fn write_tracked(&mut self, b: TrackedRef, offset: u64, value: u64) -> Result<(), Failure> {
        let p = tracked_word(self.tracked_buffer(b)?, offset)?;
        // SAFETY: as in read_tracked.
        unsafe { p.write_volatile(value) };
        Ok(())
    }

    fn unlock_tracked(&mut self, b: TrackedRef) -> Result<(), Failure> {
        let d = self.tracked_buffer(b)?;
        let (p, h) = (d.process, d.handle);
        self.ok(p, "rvgpu_buffer_unlock", &[h])?;
        if let Some(Some(t)) = self.tracked.get_mut(b.0) {
            t.view = 0;
        }
        Ok(())
    }

    fn tracked_info(&self, b: TrackedRef) -> Result<TrackedInfo, Failure> {
        let d = self.tracked_buffer(b)?;
        // RvgpuBufferStatus: four u64.
        let mut st = [0u64; 4];
        self.ok(
            d.process,
            "rvgpu_buffer_status",
            &[d.handle, st.as_mut_ptr() as u64],
        )?;
        let [gpu_va, renames, waits, backings] = st;
        Ok(TrackedInfo {
            gpu_va,
            renames,
            waits,
            backings: usize::try_from(backings).unwrap_or(usize::MAX),
        })
    }

    fn destroy_tracked(&mut self, b: TrackedRef) -> Result<(), Failure> {
        let d = self.tracked_buffer(b)?;
        let (p, h) = (d.process, d.handle);
        let queues = self.queues_of(p);
        self.ok(
            p,
            "rvgpu_buffer_destroy",
            &[h, queues.as_ptr() as u64, queues.len() as u64],
        )?;
        if let Some(t) = self.tracked.get_mut(b.0) {
            *t = None;
        }
        Ok(())
    }
}

impl crate::backend::EngineIdle for DllSession {
    /// Step mode: the harness runs rounds until the OS moved the engine to F1, as on the
    /// simulation backend. Threaded, the engines' idle timers run in real time beside the DLL:
    /// which engine requests F1 first is a race, not the case's.
    fn await_engine_f1(&mut self, i: usize, node: u32, budget: Duration) -> Result<bool, Failure> {
        if !self.stepped() {
            return Err(Failure::Unsupported(
                "an engine's F1 at a chosen moment on a threaded machine: every idle engine's \
                 timer runs at once"
                    .into(),
            ));
        }
        crate::backend::sim::usermode::await_engine_f1_on(&self.m, self.idle_f1, i, node, budget)
    }
}

/// TDR as an application meets it: on Windows detection and recovery are always on (the
/// simulated OS turns them on when asked, with the case's timeouts, as Windows' `TdrDelay`
/// setting would); a reset shows as lost queues and `RVGPU_STATUS_DEVICE_LOST`.
impl crate::backend::Tdr for DllSession {
    fn enable_tdr(&mut self, i: usize, t: crate::backend::TdrTimeouts) -> Result<(), Failure> {
        crate::backend::sim::tdr::enable_tdr_on(&self.m, i, t)
    }

    /// One thread per lane (step mode: one lane after another), each submitting its batches
    /// through `rvgpu_queue_submit` on the lane's queue (the C API is thread-safe).
    fn stream(&mut self, lanes: &[StreamLane]) -> Result<Vec<StreamReport>, Failure> {
        let mut jobs = Vec::with_capacity(lanes.len());
        for (k, lane) in lanes.iter().enumerate() {
            let (p, h) = self.queue(lane.queue)?;
            if lanes[..k].iter().any(|l| l.queue == lane.queue) {
                return Err(Failure::Backend(format!(
                    "stream: queue {} is in two lanes",
                    lane.queue.0
                )));
            }
            let batches = lane
                .batches
                .iter()
                .map(|w| {
                    crate::backend::encode_work(w, |b, o, n| self.address(b, o, n))
                        .and_then(|c| dwords(&c))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let adapter = self
                .processes
                .get(p)
                .map(|d| d.adapter)
                .ok_or_else(|| Failure::Backend(format!("no process {p}")))?;
            jobs.push((lane, self.process(p)?.0, h, batches, adapter));
        }
        let m: &Machine = &self.m;
        if self.stepped() {
            return Ok(jobs
                .iter()
                .map(|(lane, up, h, batches, a)| stream_lane(m, *a, lane, up, *h, batches))
                .collect());
        }
        Ok(std::thread::scope(|sc| {
            let handles: Vec<_> = jobs
                .iter()
                .map(|(lane, up, h, batches, a)| {
                    sc.spawn(move || stream_lane(m, *a, lane, up, *h, batches))
                })
                .collect();
            handles
                .into_iter()
                .map(|t| {
                    t.join().unwrap_or_else(|_| StreamReport {
                        submitted: 0,
                        last_value: 0,
                        recovered_at: None,
                        error: Some("the lane's thread panicked".into()),
                    })
                })
                .collect()
        }))
    }
}

/// The word at `offset` of a locked tracked buffer's view.
fn tracked_word(d: &DBuffer, offset: u64) -> Result<*mut u64, Failure> {
    if d.view == 0 {
        return Err(Failure::Backend("the tracked buffer is not locked".into()));
    }
    if !offset.is_multiple_of(8) || offset.checked_add(8).is_none_or(|e| e > d.size) {
        return Err(Failure::Backend(format!(
            "offset {offset:#x} is outside the tracked buffer ({} bytes)",
            d.size
        )));
    }
    Ok((d.view + offset) as *mut u64)
}
