//! rvgpu_umd.dll's C API as the seam's primitive ([`AppUmd`]): tracked buffers are
//! `rvgpu_buffer_*` (locked naming the process's queues, filled and copied with
//! `rvgpu_buffer_fill` / `rvgpu_buffer_copy`, their words read and written through the lock's
//! view), a plain buffer's words through a lock, native fences `rvgpu_fence_create2`,
//! `rvgpu_fence_share` / `rvgpu_fence_open`, `rvgpu_fence_destroy`, CPU waits and signals
//! (`rvgpu_fence_wait`, `rvgpu_fence_signal`), batches `rvgpu_queue_submit` (fences in its wait
//! and signal lists), GPU VAs `rvgpu_va_reserve`, `rvgpu_buffer_map_va` (which waits for the
//! paging fence) and `rvgpu_va_free`.
//!
//! CPU waits in event form run on a thread each, calling `rvgpu_fence_wait` in short slices
//! so that the session can stop it when it ends; on a step-mode machine they are the
//! application's own event form (`rvgpu_fence_wait_async` on a Win32 event).
//!
//! MonitoredValue and the system process's addresses, which no application sees (the OS maps
//! them for the GPU only), are the harness's reads of the simulated OS's fence
//! ([`crate::backend::FenceInternals`]). Legacy monitored fences are not in the C API: an
//! application of this GPU uses native fences, the API's one fence type.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use rvgpu_simos::machine::answers::UmsProgress;

use super::state::{DEvent, DllFence, DllObjects};
use super::{
    status_name, DllSession, FenceList, DEVICE_LOST, LOCK_READ, LOCK_WRITE, OK, TIMEOUT,
    WAS_STILL_DRAWING,
};
use crate::backend::app::{AppMappings, AppUmd, QueueOp, Waiter};
use crate::backend::kmt::monitored::EVENT_SLICE;
use crate::backend::{
    BufferRef, Failure, FenceRef, FenceValues, LockOutcome, OwnFenceMapping, Pages, ProcessRef,
    TrackedInfo, TrackedWork, UmQueueRef, WaitResult,
};

/// `RVGPU_STATUS_INVALID_HANDLE`.
const INVALID_HANDLE: u64 = 8;
/// `RVGPU_FENCE_SHAREABLE`.
const SHAREABLE: u64 = 1;

pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX - 1)
}

/// One operation of a batch as the C API takes it, a fence by its `RvgpuFence*`.
#[derive(Clone, Copy)]
pub(crate) enum DllOp {
    Wait(u64, u64),
    Cmd(rvgpu_hw::cmd::Command),
    Signal(u64, u64),
}

impl DllSession {
    /// `ops` in order on queue `h` of process `p`, as batches of `rvgpu_queue_submit`, each its
    /// waits, packets and signals: a wait after packets or signals, or a packet after signals,
    /// starts a new batch. The last batch's progress value.
    pub(crate) fn submit_in_order(&self, p: usize, h: u64, ops: &[DllOp]) -> Result<u64, Failure> {
        type Batch = (FenceList, Vec<rvgpu_hw::cmd::Command>, FenceList);
        let mut batches: Vec<Batch> = vec![Batch::default()];
        for op in ops {
            let new = batches.last().is_some_and(|(_, cmds, signals)| match op {
                DllOp::Wait(..) => !cmds.is_empty() || !signals.is_empty(),
                DllOp::Cmd(_) => !signals.is_empty(),
                DllOp::Signal(..) => false,
            });
            if new {
                batches.push(Batch::default());
            }
            if let Some(b) = batches.last_mut() {
                match *op {
                    DllOp::Wait(f, v) => b.0.push((f, v)),
                    DllOp::Cmd(c) => b.1.push(c),
                    DllOp::Signal(f, v) => b.2.push((f, v)),
                }
            }
        }
        let mut last = None;
        for (waits, cmds, signals) in &batches {
            if !(waits.is_empty() && cmds.is_empty() && signals.is_empty()) {
                last = Some(self.submit_batch(p, h, cmds, waits, signals)?);
            }
        }
        last.ok_or_else(|| Failure::Backend("nothing to submit".into()))
    }

    /// The D3DKMT objects of process `p` now (sorted).
    fn objects_of(&self, p: usize) -> Result<Vec<u32>, Failure> {
        Ok(self.process(p)?.0.objects())
    }

    /// Fence `handle` of process `p`, made by a call before which the process held `before`:
    /// its D3DKMT handle is the new object the OS knows as a native fence.
    fn fence_made(&self, p: usize, handle: u64, before: &[u32]) -> DllFence {
        let adapter = self.processes.get(p).map(|d| d.adapter);
        let kmt = self.objects_of(p).ok().and_then(|now| {
            now.into_iter().find(|h| {
                before.binary_search(h).is_err()
                    && adapter.is_some_and(|a| self.machine().native_fence_by_kmt(a, *h).is_some())
            })
        });
        DllFence { handle, kmt }
    }

    /// Fence `h` of process `holder` opened in process `p` as an application does it:
    /// `rvgpu_fence_share`, `DuplicateHandle` (the harness, as the OS), `rvgpu_fence_open`,
    /// each NT handle closed. Its `RvgpuFence*` in `p`.
    pub(crate) fn share_into(&self, holder: usize, h: u64, p: usize) -> Result<u64, Failure> {
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
    pub(crate) fn fence_wait(
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

    /// The simulated OS's instance behind fence `f` (for the harness's reads).
    fn os_fence(&self, f: FenceRef) -> Result<rvgpu_simos::NativeFence, Failure> {
        let k = self.native(f)?;
        let adapter = (self.processes.get(k.process).map(|d| d.adapter))
            .ok_or_else(|| Failure::Backend(format!("no process {}", k.process)))?;
        k.fence
            .kmt
            .and_then(|h| self.machine().native_fence_by_kmt(adapter, h))
            .ok_or_else(|| Failure::Backend(format!("fence {} has no native fence in the OS", f.0)))
    }

    fn native(&self, f: FenceRef) -> Result<&crate::backend::app::AppFence<DllFence>, Failure> {
        crate::backend::nth(&self.app.fences, f.0, "fence")
    }
}

impl AppUmd for DllSession {
    type Buffer = u64;
    type View = u64;
    type Fence = DllFence;
    type Event = DEvent;

    fn objects(&self) -> &DllObjects {
        &self.app
    }

    fn objects_mut(&mut self) -> &mut DllObjects {
        &mut self.app
    }

    fn check_halt(&self) -> Result<(), Failure> {
        self.fault().map_or(Ok(()), Err)
    }

    fn buffer_create(&self, p: usize, bytes: u64) -> Result<(u64, u64), Failure> {
        let h = self.create_on_adapter(p, "rvgpu_buffer_create", &[bytes])?;
        Ok((h, bytes))
    }

    fn buffer_lock(
        &self,
        p: usize,
        b: &u64,
        flags: u32,
    ) -> Result<Result<u64, LockOutcome>, Failure> {
        let queues = self.queues_of(p);
        let mut data = 0u64;
        let s = self.call(
            p,
            "rvgpu_buffer_lock",
            &[
                *b,
                u64::from(flags),
                queues.as_ptr() as u64,
                queues.len() as u64,
                &raw mut data as u64,
            ],
        )?;
        Ok(match s {
            OK => Ok(data),
            WAS_STILL_DRAWING => Err(LockOutcome::WasStillDrawing),
            s => Err(LockOutcome::Refused(status_name(s).into())),
        })
    }

    fn view_load(view: &u64, offset: u64) -> u64 {
        // SAFETY: the view of a live lock (the DLL's Lock2 mapping, host memory); the table
        // checked `offset` to be an aligned word inside the buffer.
        unsafe { ((*view + offset) as *const u64).read_volatile() }
    }

    fn view_store(view: &u64, offset: u64, value: u64) {
        // SAFETY: as in view_load.
        unsafe { ((*view + offset) as *mut u64).write_volatile(value) }
    }

    fn buffer_unlock(&self, p: usize, b: &u64) -> Result<(), Failure> {
        self.ok(p, "rvgpu_buffer_unlock", &[*b])
    }

    fn buffer_status(&self, p: usize, b: &u64) -> Result<TrackedInfo, Failure> {
        // RvgpuBufferStatus: four u64.
        let mut st = [0u64; 4];
        self.ok(p, "rvgpu_buffer_status", &[*b, st.as_mut_ptr() as u64])?;
        let [gpu_va, renames, waits, backings] = st;
        Ok(TrackedInfo {
            gpu_va,
            renames,
            waits,
            backings: usize::try_from(backings).unwrap_or(usize::MAX),
        })
    }

    fn buffer_destroy(&self, p: usize, b: u64) -> Result<(), Failure> {
        let queues = self.queues_of(p);
        self.ok(
            p,
            "rvgpu_buffer_destroy",
            &[b, queues.as_ptr() as u64, queues.len() as u64],
        )
    }

    /// One `rvgpu_buffer_fill` or `rvgpu_buffer_copy` per use.
    fn buffer_work(&mut self, q: UmQueueRef, work: &[TrackedWork]) -> Result<u64, Failure> {
        let (p, h) = self.queue(q)?;
        let tracked = &self.app.tracked;
        let mut progress = 0u64;
        for w in work {
            match *w {
                TrackedWork::Fill {
                    dst,
                    offset,
                    bytes,
                    pattern,
                } => {
                    let b = *tracked.of(p, dst)?;
                    self.ok(
                        p,
                        "rvgpu_buffer_fill",
                        &[h, b, offset, bytes, pattern, &raw mut progress as u64],
                    )?;
                }
                TrackedWork::Copy { src, dst, bytes } => {
                    let (s, d) = (*tracked.of(p, src)?, *tracked.of(p, dst)?);
                    self.ok(
                        p,
                        "rvgpu_buffer_copy",
                        &[h, s, 0, d, 0, bytes, &raw mut progress as u64],
                    )?;
                }
            }
        }
        Ok(progress)
    }

    fn buffer_process(&self, b: BufferRef) -> Result<usize, Failure> {
        Ok(self.buffer(b)?.process)
    }

    fn gpu_address(&self, b: BufferRef, offset: u64, bytes: u64) -> Result<u64, Failure> {
        self.address(b, offset, bytes)
    }

    /// Through a read lock.
    fn word_load(&self, b: BufferRef, offset: u64) -> Result<u64, Failure> {
        let i = self.word(b, offset)?;
        // SAFETY: the lock's view; word `i` checked inside the buffer.
        self.with_view(b, LOCK_READ, |base, _| unsafe {
            base.add(i).read_volatile()
        })
    }

    /// Through a write lock.
    fn word_store(&mut self, b: BufferRef, offset: u64, value: u64) -> Result<(), Failure> {
        let i = self.word(b, offset)?;
        // SAFETY: the lock's view; word `i` checked inside the buffer.
        self.with_view(b, LOCK_WRITE, |base, _| unsafe {
            base.add(i).write_volatile(value)
        })
    }

    fn fence_create(&self, p: usize, initial: u64, shareable: bool) -> Result<DllFence, Failure> {
        let flags = if shareable { SHAREABLE } else { 0 };
        let before = self.objects_of(p)?;
        let h = self.create_on_adapter(p, "rvgpu_fence_create2", &[initial, flags])?;
        Ok(self.fence_made(p, h, &before))
    }

    fn fence_open(
        &self,
        holder: usize,
        f: &DllFence,
        p: usize,
        _: FenceRef,
    ) -> Result<DllFence, Failure> {
        let before = self.objects_of(p)?;
        let mine = self.share_into(holder, f.handle, p)?;
        Ok(self.fence_made(p, mine, &before))
    }

    fn fence_destroy(&self, p: usize, f: &DllFence) -> Result<(), Failure> {
        self.ok(p, "rvgpu_fence_destroy", &[f.handle])
    }

    fn fence_cpu_wait(
        &self,
        p: usize,
        f: &DllFence,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        self.fence_wait(p, f.handle, value, timeout)
    }

    fn fence_signal(&self, p: usize, f: &DllFence, value: u64) -> Result<(), Failure> {
        self.ok(p, "rvgpu_fence_signal", &[f.handle, value])
    }

    /// Threaded: a thread blocked in `rvgpu_fence_wait`. Step mode (where such a thread would
    /// run the machine's rounds beside the harness's): the application's event form, a
    /// manual-reset event (`CreateEventW`) that `rvgpu_fence_wait_async` registers.
    fn fence_wait_event(
        &self,
        p: usize,
        f: &DllFence,
        value: u64,
        stop: &Arc<AtomicBool>,
    ) -> Result<DEvent, Failure> {
        let (up, _) = self.process(p)?;
        let h = f.handle;
        if self.stepped() {
            let event = up
                .call_import("CreateEventW", &[0, 1, 0, 0])
                .map_err(|e| Failure::Backend(format!("CreateEventW: {e:?}")))?;
            if event == 0 {
                return Err(Failure::Backend("CreateEventW failed".into()));
            }
            self.ok(p, "rvgpu_fence_wait_async", &[h, value, event])?;
            return Ok(DEvent::Registered(p, event, h, value));
        }
        Ok(DEvent::Thread(Waiter::spawn(stop, move || {
            match up.call("rvgpu_fence_wait", &[h, value, nanos(EVENT_SLICE)]) {
                Ok(s) if s & 0xFFFF_FFFF == TIMEOUT => None,
                Ok(s) if s & 0xFFFF_FFFF == OK => Some(WaitResult::Satisfied),
                _ => Some(WaitResult::Abandoned),
            }
        })))
    }

    /// A registered wait: `WaitForSingleObject` on its event (which runs the step-mode
    /// machine until it is signalled or nothing happens any more); signalled with the fence
    /// below the value (or gone) is abandoned.
    fn event_poll(&self, e: &DEvent, timeout: Duration) -> Option<WaitResult> {
        let &DEvent::Registered(p, event, h, value) = e else {
            return match e {
                DEvent::Thread(w) => w.result(timeout),
                DEvent::Registered(..) => None,
            };
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

    /// Step mode (where cases count the machine's interrupts exactly): refused where the OS
    /// gives user-mode queues their progress fence (the pages), since every batch of the DLL's
    /// queues then ends with an interrupting PROGRESS packet (CPU waits on that fence wake by
    /// it), so no application's queue signals a fence without interrupting. Where it gives
    /// none (24H2) a batch ends with a conditional signal of the queue's own native fence,
    /// which interrupts only for a waiter, as the cases expect of any fence.
    fn gpu_queue_allowed(&self) -> Result<(), Failure> {
        let given = self.machine().os_config().windows.reading().ums_progress == UmsProgress::Given;
        if self.stepped() && given {
            return Err(Failure::Unsupported(
                "a GPU queue whose fence signals alone decide the interrupts: where the OS \
                 gives user-mode queues a progress fence, every batch of rvgpu_umd.dll's \
                 queues ends with an interrupting PROGRESS packet"
                    .into(),
            ));
        }
        Ok(())
    }

    fn queue_process(&self, q: UmQueueRef) -> Result<usize, Failure> {
        self.queue(q).map(|(p, _)| p)
    }

    /// The operations in order (`DllSession::submit_in_order`).
    fn batch(&mut self, q: UmQueueRef, ops: &[QueueOp]) -> Result<u64, Failure> {
        let (p, h) = self.queue(q)?;
        let handle = |f| self.app.fence(f).map(|f| f.handle);
        let ops = (ops.iter())
            .map(|op| {
                Ok(match *op {
                    QueueOp::Wait(f, v) => DllOp::Wait(handle(f)?, v),
                    QueueOp::Cmd(c) => DllOp::Cmd(c),
                    QueueOp::Signal(f, v) => DllOp::Signal(handle(f)?, v),
                })
            })
            .collect::<Result<Vec<_>, Failure>>()?;
        self.submit_in_order(p, h, &ops)
    }

    fn va_reserve(&self, p: ProcessRef, base: u64, bytes: u64) -> Result<u64, Failure> {
        self.create_on_adapter(p.0, "rvgpu_va_reserve", &[base, bytes])
    }

    fn va_map(&mut self, b: BufferRef, pages: Pages, va: u64) -> Result<(), Failure> {
        let (p, h) = self.buffer_handle(b)?;
        self.ok(p, "rvgpu_buffer_map_va", &[h, va, pages.first, pages.count])
    }

    fn va_free(&self, p: ProcessRef, base: u64, bytes: u64) -> Result<(), Failure> {
        let (_, adapter) = self.process(p.0)?;
        self.ok(p.0, "rvgpu_va_free", &[adapter, base, bytes])
    }
}

/// The harness's reads of the simulated OS's fence object behind an application's fence.
impl crate::backend::FenceInternals for DllSession {
    /// Whether this session destroyed its handle (an application cannot see the OS object).
    fn native_fence_destroyed(&self, f: FenceRef) -> bool {
        self.native(f).is_ok_and(|k| k.destroyed)
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
        let k = self.native(f)?;
        let current = self.ok_out(k.process, "rvgpu_fence_value", &[k.fence.handle])?;
        Ok(FenceValues {
            current,
            monitored: self.os_fence(f)?.monitored_value(),
        })
    }
}

/// The UMD DLL's C API hands out no fence mapping.
impl AppMappings for DllSession {
    fn fence_own_mapping(&self, _p: usize, _f: &DllFence) -> Result<OwnFenceMapping, Failure> {
        Err(Failure::Unsupported(
            "a fence's mapping: the UMD DLL's C API does not hand it out".into(),
        ))
    }
}
