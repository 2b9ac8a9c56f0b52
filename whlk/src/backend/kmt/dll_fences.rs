//! The [`Fences`] capability through rvgpu_umd.dll's C API: native fences
//! (`rvgpu_fence_create2`), CPU waits and signals (`rvgpu_fence_wait`, `rvgpu_fence_signal`),
//! GPU waits and signals as the wait and signal lists of `rvgpu_queue_submit` on a user-mode
//! queue.
//!
//! MonitoredValue and the system process's addresses, which no application sees (the OS maps
//! them for the GPU only), are the harness's reads of the simulated OS's fence.
//! Legacy monitored fences are not in the C API: an application of this GPU uses native
//! fences, the API's one fence type.
//!
//! CPU waits in event form run on a thread each, calling `rvgpu_fence_wait` in short slices
//! so that the session can stop it when it ends; on a step-mode machine they are the
//! application's own event form (`rvgpu_fence_wait_async` on a Win32 event).

use rvgpu_simos::machine::answers::UmsProgress;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::dll::{DllSession, FenceList};
use super::dll_state::{DEvent, DFence, Pending};
use super::fences::{set, FenceQueueState, FenceQueues};
use crate::backend::{
    EventRef, Failure, FenceRef, FenceValues, Fences, NewFence, QueueRef, WaitResult,
};

/// `RvgpuStatus` values (rvgpu_umd.h).
const OK: u64 = 0;
const DEVICE_LOST: u64 = 3;
const TIMEOUT: u64 = 4;
const INVALID_HANDLE: u64 = 8;
/// `RVGPU_FENCE_SHAREABLE`.
const SHAREABLE: u64 = 1;

/// How long one slice of an event-form wait blocks in the DLL.
const EVENT_SLICE: Duration = Duration::from_millis(100);

pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX - 1)
}

impl FenceQueues<Pending> for DllSession {
    fn fence_queues(&self) -> &FenceQueueState<Pending> {
        &self.fence.queues
    }
    fn fence_queues_mut(&mut self) -> &mut FenceQueueState<Pending> {
        &mut self.fence.queues
    }
}

impl DllSession {
    fn native(&self, f: FenceRef) -> Result<(usize, u64), Failure> {
        self.fence
            .fences
            .get(f.0)
            .map(|k| (k.process, k.handle))
            .ok_or_else(|| Failure::Backend(format!("no fence {}", f.0)))
    }

    /// The simulated OS's instance behind fence `f` (for the harness's reads).
    fn os_fence(&self, f: FenceRef) -> Result<rvgpu_simos::NativeFence, Failure> {
        let (p, _) = self.native(f)?;
        let adapter = self
            .processes
            .get(p)
            .map(|d| d.adapter)
            .ok_or_else(|| Failure::Backend(format!("no process {p}")))?;
        self.fence
            .fences
            .get(f.0)
            .and_then(|k| k.kmt)
            .and_then(|k| self.machine().native_fence_by_kmt(adapter, k))
            .ok_or_else(|| Failure::Backend(format!("fence {} has no native fence in the OS", f.0)))
    }

    /// The D3DKMT objects of process `p` now (sorted).
    fn objects_of(&self, p: usize) -> Result<Vec<u32>, Failure> {
        Ok(self.process(p)?.0.objects())
    }

    /// Records fence `handle` of `process`, made by a call before which the process held
    /// `before`: its D3DKMT handle is the new object the OS knows as a native fence.
    fn add_fence(&mut self, process: usize, handle: u64, before: &[u32]) -> FenceRef {
        let adapter = self.processes.get(process).map(|d| d.adapter);
        let kmt = self.objects_of(process).ok().and_then(|now| {
            now.into_iter().find(|h| {
                before.binary_search(h).is_err()
                    && adapter.is_some_and(|a| self.machine().native_fence_by_kmt(a, *h).is_some())
            })
        });
        self.fence.fences.push(DFence {
            process,
            handle,
            kmt,
            destroyed: false,
        });
        FenceRef(self.fence.fences.len() - 1)
    }

    /// Fence `h` of process `holder` opened in process `p` as an application does it:
    /// `rvgpu_fence_share`, `DuplicateHandle` (the harness, as the OS), `rvgpu_fence_open`,
    /// each NT handle closed. Its `RvgpuFence*` in `p`.
    pub(super) fn share_into(&mut self, holder: usize, h: u64, p: usize) -> Result<u64, Failure> {
        let nt = self.ok_out(holder, "rvgpu_fence_share", &[h])?;
        let (from, to) = (self.nt_process(holder)?, self.nt_process(p)?);
        let dup = self.machine().duplicate_handle(from, nt, to);
        let _ = self.machine().close_nt_handle(from, nt);
        let theirs = dup.map_err(crate::backend::sim::failure)?;
        let mine = self.create_on_adapter(p, "rvgpu_fence_open", &[theirs]);
        let _ = self.machine().close_nt_handle(to, theirs);
        mine
    }

    /// A CPU wait of process `p` for fence handle `h` (a native or a user-mode fence: the C API
    /// waits on both alike) to reach `value`, its status read as the wait's result.
    pub(super) fn fence_wait(
        &self,
        p: usize,
        h: u64,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        match self.call(p, "rvgpu_fence_wait", &[h, value, nanos(timeout)])? {
            OK => Ok(WaitResult::Satisfied),
            TIMEOUT if self.fault().is_none() => Ok(WaitResult::TimedOut),
            DEVICE_LOST | INVALID_HANDLE if self.fault().is_none() => Ok(WaitResult::Abandoned),
            s => Err(self.fault().unwrap_or_else(|| {
                Failure::Backend(format!("rvgpu_fence_wait returned RvgpuStatus {s}"))
            })),
        }
    }
}

impl Fences for DllSession {
    fn create_native_fence(&mut self, new: NewFence) -> Result<FenceRef, Failure> {
        let p = self.fence_process(new.adapter, new.process)?;
        let flags = if new.shareable { SHAREABLE } else { 0 };
        let before = self.objects_of(p)?;
        let h = self.create_on_adapter(p, "rvgpu_fence_create2", &[new.initial, flags])?;
        Ok(self.add_fence(p, h, &before))
    }

    /// As a second process gets a fence on Windows: the holder's DLL shares it
    /// (`rvgpu_fence_share`, an NT handle in the holder's table), the handle is duplicated into
    /// `process`'s table (`DuplicateHandle`, which the harness does as the OS), that process's
    /// DLL opens it (`rvgpu_fence_open`), and each side closes its NT handle.
    fn open_native_fence(&mut self, f: FenceRef, process: u32) -> Result<FenceRef, Failure> {
        let (holder, h) = self.native(f)?;
        let i = self
            .fence
            .queues
            .procs
            .iter()
            .find(|&&(_, _, p)| p == holder)
            .map(|&(a, _, _)| a)
            .ok_or_else(|| Failure::Backend(format!("fence {} has no adapter", f.0)))?;
        let p = self.fence_process(i, process)?;
        let before = self.objects_of(p)?;
        let mine = self.share_into(holder, h, p)?;
        Ok(self.add_fence(p, mine, &before))
    }

    fn destroy_native_fence(&mut self, f: FenceRef) -> Result<(), Failure> {
        let (p, h) = self.native(f)?;
        if let Some(k) = self.fence.fences.get_mut(f.0) {
            if std::mem::replace(&mut k.destroyed, true) {
                return Err(Failure::Backend(format!("fence {} destroyed twice", f.0)));
            }
        }
        self.ok(p, "rvgpu_fence_destroy", &[h])
    }

    /// Threaded: a thread blocked in `rvgpu_fence_wait`. Step mode (where such a thread would
    /// run the machine's rounds beside the harness's): the application's event form, a
    /// manual-reset event (`CreateEventW`) that `rvgpu_fence_wait_async` registers.
    fn cpu_wait_event(&mut self, f: FenceRef, value: u64) -> Result<EventRef, Failure> {
        let (p, h) = self.native(f)?;
        if self.stepped() {
            let (up, _) = self.process(p)?;
            let event = up
                .call_import("CreateEventW", &[0, 1, 0, 0])
                .map_err(|e| Failure::Backend(format!("CreateEventW: {e:?}")))?;
            if event == 0 {
                return Err(Failure::Backend("CreateEventW failed".into()));
            }
            self.ok(p, "rvgpu_fence_wait_async", &[h, value, event])?;
            self.fence.events.push(DEvent {
                outcome: Arc::new((Mutex::new(None), Condvar::new())),
                thread: None,
                registered: Some((p, event, h, value)),
            });
            return Ok(EventRef(self.fence.events.len() - 1));
        }
        let (up, _) = self.process(p)?;
        let outcome = Arc::new((Mutex::new(None), Condvar::new()));
        let (o, stop) = (outcome.clone(), self.fence.stop.clone());
        let thread = std::thread::spawn(move || loop {
            if stop.load(Ordering::Acquire) {
                return;
            }
            match up.call("rvgpu_fence_wait", &[h, value, nanos(EVENT_SLICE)]) {
                Ok(s) if s & 0xFFFF_FFFF == TIMEOUT => {}
                Ok(s) if s & 0xFFFF_FFFF == OK => return set(&o, WaitResult::Satisfied),
                // A fence that is gone abandons the wait, as the OS abandons a destroyed
                // object's waiters.
                _ => return set(&o, WaitResult::Abandoned),
            }
        });
        self.fence.events.push(DEvent {
            outcome,
            thread: Some(thread),
            registered: None,
        });
        Ok(EventRef(self.fence.events.len() - 1))
    }

    /// A registered wait: `WaitForSingleObject` on its event (which runs the step-mode
    /// machine until it is signalled or nothing happens any more); signalled with the fence
    /// below the value (or gone) is abandoned.
    fn event_result(&self, e: EventRef, timeout: Duration) -> Option<WaitResult> {
        let ev = self.fence.events.get(e.0)?;
        let Some((p, event, h, value)) = ev.registered else {
            return super::fences::awaited(&ev.outcome, timeout);
        };
        let (up, _) = self.process(p).ok()?;
        let ms = u64::try_from(timeout.as_millis())
            .unwrap_or(u64::MAX)
            .min(0xFFFF_FFFE);
        match up.call_import("WaitForSingleObject", &[event, ms]) {
            Ok(0) => {
                let reached = self
                    .ok_out(p, "rvgpu_fence_value", &[h])
                    .is_ok_and(|v| v >= value);
                Some(if reached {
                    WaitResult::Satisfied
                } else {
                    WaitResult::Abandoned
                })
            }
            _ => None,
        }
    }

    fn cpu_wait(
        &mut self,
        f: FenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        let (p, h) = self.native(f)?;
        self.fence_wait(p, h, value, timeout)
    }

    fn cpu_signal(&mut self, f: FenceRef, value: u64) -> Result<(), Failure> {
        let (p, h) = self.native(f)?;
        self.ok(p, "rvgpu_fence_signal", &[h, value])
    }

    /// Step mode (where cases count the machine's interrupts exactly): refused where the OS
    /// gives user-mode queues their progress fence (the pages), since every batch of the DLL's
    /// queues then ends with an interrupting PROGRESS packet (CPU waits on that fence wake by
    /// it), so no application's queue signals a fence without interrupting. Where it gives
    /// none (24H2) a batch ends with a conditional signal of the queue's own native fence,
    /// which interrupts only for a waiter, as the cases expect of any fence.
    fn gpu_queue(&mut self, i: usize, engine: u32, process: u32) -> Result<QueueRef, Failure> {
        let given = self.machine().os_config().reading.ums_progress == UmsProgress::Given;
        if self.stepped() && given {
            return Err(Failure::Unsupported(
                "a GPU queue whose fence signals alone decide the interrupts: where the OS \
                 gives user-mode queues a progress fence, every batch of rvgpu_umd.dll's \
                 queues ends with an interrupting PROGRESS packet"
                    .into(),
            ));
        }
        self.open_gpu_queue(i, engine, process)
    }

    fn gpu_signal(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure> {
        let owner = self.native(f)?.0;
        self.append(q, owner, Pending::Signal(f.0, value))
    }

    fn gpu_wait(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure> {
        let owner = self.native(f)?.0;
        self.append(q, owner, Pending::Wait(f.0, value))
    }

    /// The appended operations in order, as batches of `rvgpu_queue_submit`: a wait after a
    /// signal starts a new batch (a batch's waits come before its signals).
    fn gpu_submit(&mut self, q: QueueRef) -> Result<(), Failure> {
        let (queue, pending) = {
            let gq = self.gpu_queue_mut(q)?;
            (gq.queue, std::mem::take(&mut gq.pending))
        };
        let (p, h) = self.queue(queue)?;
        let mut batches: Vec<(FenceList, FenceList)> = vec![(Vec::new(), Vec::new())];
        for op in pending {
            match op {
                Pending::Wait(f, v) => {
                    let fence = self.native(FenceRef(f))?.1;
                    if batches.last().is_some_and(|b| !b.1.is_empty()) {
                        batches.push((Vec::new(), Vec::new()));
                    }
                    if let Some(b) = batches.last_mut() {
                        b.0.push((fence, v));
                    }
                }
                Pending::Signal(f, v) => {
                    let fence = self.native(FenceRef(f))?.1;
                    if let Some(b) = batches.last_mut() {
                        b.1.push((fence, v));
                    }
                }
            }
        }
        let mut last = None;
        for (waits, signals) in &batches {
            if waits.is_empty() && signals.is_empty() {
                continue;
            }
            last = Some(self.submit_batch(p, h, &[], waits, signals)?);
        }
        if let (Some(v), Some(gq)) = (last, self.fence.queues.queues.get_mut(q.0)) {
            gq.last = v;
        }
        Ok(())
    }

    fn gpu_queue_drained(&self, q: QueueRef) -> bool {
        self.queue_drained(q)
    }
}

/// The harness's reads of the simulated OS's fence object behind an application's fence.
impl crate::backend::FenceInternals for DllSession {
    /// Whether this session destroyed its handle (an application cannot see the OS object).
    fn native_fence_destroyed(&self, f: FenceRef) -> bool {
        self.fence.fences.get(f.0).is_some_and(|k| k.destroyed)
    }

    /// The OS's facts (the harness's read): where the system process maps the fence's values
    /// and the caps' MonitoredValueStride, which no application sees.
    fn fence_addresses(&self, f: FenceRef) -> Result<(u64, u64, u32), Failure> {
        let os = self.os_fence(f)?;
        let stride = self
            .machine()
            .native_fence_caps(os.adapter())
            .map_or(0, |c| c.MonitoredValueStride);
        Ok((os.current_value_gpu(), os.monitored_value_gpu(), stride))
    }

    /// CurrentValue as the application reads it (`rvgpu_fence_value`); MonitoredValue, which
    /// no application sees (the OS maps it for the GPU only), from the simulated OS's fence
    /// object, read by the harness.
    fn fence_values(&self, f: FenceRef) -> Result<FenceValues, Failure> {
        let (p, h) = self.native(f)?;
        let current = self.ok_out(p, "rvgpu_fence_value", &[h])?;
        Ok(FenceValues {
            current,
            monitored: self.os_fence(f)?.monitored_value(),
        })
    }
}
