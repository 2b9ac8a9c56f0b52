//! Native fences made through the DLL ([`UmdFences`]) and the OS's side of their logs
//! ([`FenceLogs`]) for an application on rvgpu_umd.dll.
//!
//! A fence is `rvgpu_fence_create2` (shareable, so a case may open it elsewhere); opening it in
//! another process is the share / `DuplicateHandle` / open sequence of `dll_fences`; a batch
//! of packets and fence operations is `rvgpu_queue_submit` batches in order (a batch's waits
//! come before its packets and its signals after, so a wait after a packet or a signal, or a
//! packet after a signal, starts a new batch). The logs are the OS's records, read by the
//! harness; the DLL's own "queued" events go to ETW, which the simulation does not collect,
//! so there is no recorded timeline.

use std::time::Duration;

use super::dll::{DllSession, FenceList};
use crate::backend::sim::failure;
use crate::backend::sim::logs::{hw_kind, os_log_counters, os_queue_logs};
use crate::backend::{
    Failure, FenceLogs, FenceWork, LogCounters, LogKind, ProcessRef, QueueLogs, UmFenceRef,
    UmQueueRef, UmdFences, WaitResult, Work,
};

/// `RvgpuStatus` values (rvgpu_umd.h).
const OK: u64 = 0;
const DEVICE_LOST: u64 = 3;
const TIMEOUT: u64 = 4;
const INVALID_HANDLE: u64 = 8;

/// One `rvgpu_queue_submit` batch: waits, packets, signals.
#[derive(Default)]
struct Batch {
    waits: FenceList,
    work: Vec<Work>,
    signals: FenceList,
}

impl DllSession {
    fn um_fence(&self, f: UmFenceRef) -> Result<(usize, u64), Failure> {
        self.um_fences
            .get(f.0)
            .copied()
            .ok_or_else(|| Failure::Backend(format!("no UMD fence {}", f.0)))
    }

    /// The queue's hardware queue handle (the object that has fence logs) and adapter.
    fn hw_queue(&self, q: UmQueueRef) -> Result<(usize, u32), Failure> {
        let d = self
            .queues
            .get(q.0)
            .ok_or_else(|| Failure::Backend(format!("no queue {}", q.0)))?;
        let adapter = self
            .processes
            .get(d.process)
            .map(|p| p.adapter)
            .ok_or_else(|| Failure::Backend(format!("queue {} has no process", q.0)))?;
        d.objects
            .iter()
            .find(|h| {
                self.machine()
                    .hw_queue_log(adapter, **h, hw_kind(LogKind::Signal))
                    .is_some()
            })
            .map(|h| (adapter, *h))
            .ok_or_else(|| Failure::Backend(format!("queue {} has no logged hardware queue", q.0)))
    }
}

impl UmdFences for DllSession {
    fn create_um_fence(&mut self, p: ProcessRef, initial: u64) -> Result<UmFenceRef, Failure> {
        let (_, adapter) = self.process(p.0)?;
        let mut h = 0u64;
        self.ok(
            p.0,
            "rvgpu_fence_create2",
            &[adapter, initial, 1, &raw mut h as u64],
        )?;
        self.um_fences.push((p.0, h));
        Ok(UmFenceRef(self.um_fences.len() - 1))
    }

    fn open_um_fence(&mut self, f: UmFenceRef, p: ProcessRef) -> Result<UmFenceRef, Failure> {
        let (holder, h) = self.um_fence(f)?;
        let mine = self.share_into(holder, h, p.0)?;
        self.um_fences.push((p.0, mine));
        Ok(UmFenceRef(self.um_fences.len() - 1))
    }

    fn submit_fence_ops(&mut self, q: UmQueueRef, ops: &[FenceWork]) -> Result<u64, Failure> {
        let (p, h) = self.queue(q)?;
        let mut batches = vec![Batch::default()];
        for op in ops {
            let open =
                |b: &Batch, wait: bool| !b.signals.is_empty() || (wait && !b.work.is_empty());
            match *op {
                FenceWork::Wait(f, v) => {
                    let (fp, fh) = self.um_fence(f)?;
                    if fp != p {
                        return Err(Failure::Backend(
                            "the fence is not the queue's process's".into(),
                        ));
                    }
                    if batches.last().is_some_and(|b| open(b, true)) {
                        batches.push(Batch::default());
                    }
                    if let Some(b) = batches.last_mut() {
                        b.waits.push((fh, v));
                    }
                }
                FenceWork::Work(w) => {
                    if batches.last().is_some_and(|b| open(b, false)) {
                        batches.push(Batch::default());
                    }
                    if let Some(b) = batches.last_mut() {
                        b.work.push(w);
                    }
                }
                FenceWork::Signal(f, v) => {
                    let (fp, fh) = self.um_fence(f)?;
                    if fp != p {
                        return Err(Failure::Backend(
                            "the fence is not the queue's process's".into(),
                        ));
                    }
                    if let Some(b) = batches.last_mut() {
                        b.signals.push((fh, v));
                    }
                }
            }
        }
        let mut last = None;
        for b in &batches {
            let cmds = crate::backend::encode_work(&b.work, |buf, off, bytes| {
                self.buffer_address(buf, off, bytes)
            })?;
            if cmds.is_empty() && b.waits.is_empty() && b.signals.is_empty() {
                continue;
            }
            last = Some(self.submit_batch(p, h, &cmds, &b.waits, &b.signals)?);
        }
        last.ok_or_else(|| Failure::Backend("nothing to submit".into()))
    }

    fn wait_um_fence(
        &mut self,
        f: UmFenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        let (p, h) = self.um_fence(f)?;
        let ns = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX - 1);
        match self.call(p, "rvgpu_fence_wait", &[h, value, ns])? {
            OK => Ok(WaitResult::Satisfied),
            TIMEOUT if self.fault().is_none() => Ok(WaitResult::TimedOut),
            DEVICE_LOST | INVALID_HANDLE if self.fault().is_none() => Ok(WaitResult::Abandoned),
            s => Err(self
                .fault()
                .unwrap_or_else(|| Failure::Backend(format!("rvgpu_fence_wait returned {s}")))),
        }
    }

    fn um_fence_value(&self, f: UmFenceRef) -> Result<u64, Failure> {
        let (p, h) = self.um_fence(f)?;
        let mut v = 0u64;
        self.ok(p, "rvgpu_fence_value", &[h, &raw mut v as u64])?;
        Ok(v)
    }
}

impl FenceLogs for DllSession {
    /// A timeline's "queued" events are the UMD's: the DLL writes them to ETW, which the
    /// simulation does not collect, so the OS's events alone would show every logged fence
    /// operation as never queued.
    fn trace_fences(&mut self) -> Result<(), Failure> {
        Err(Failure::Unsupported(
            "a fence timeline: rvgpu_umd.dll reports its queued fence operations through ETW, \
             which the simulated OS does not collect"
                .into(),
        ))
    }

    fn fence_timeline(&self, _label: &str) -> Result<crate::timeline::Timeline, Failure> {
        self.fault().map_or(
            Err(Failure::Unsupported(
                "a fence timeline (rvgpu_umd.dll's queued events go to ETW)".into(),
            )),
            Err,
        )
    }

    /// A queue without a logged hardware queue (a kernel-mode queue) has neither log.
    fn queue_logs(&self, q: UmQueueRef) -> Result<QueueLogs, Failure> {
        let Ok((adapter, h)) = self.hw_queue(q) else {
            self.queues
                .get(q.0)
                .ok_or_else(|| Failure::Backend(format!("no queue {}", q.0)))?;
            return Ok(QueueLogs {
                wait_entries: None,
                signal_entries: None,
            });
        };
        Ok(os_queue_logs(self.machine(), adapter, h))
    }

    fn log_counters(&self, i: usize) -> Result<LogCounters, Failure> {
        Ok(os_log_counters(self.machine(), i))
    }

    fn recreate_queue_log(
        &mut self,
        q: UmQueueRef,
        kind: LogKind,
        entries: u64,
    ) -> Result<(), Failure> {
        let (_, h) = self.hw_queue(q)?;
        let p = self
            .queues
            .get(q.0)
            .map(|d| d.process)
            .ok_or_else(|| Failure::Backend(format!("no queue {}", q.0)))?;
        let (up, _) = self.process(p)?;
        let ums = up
            .devices()
            .first()
            .copied()
            .ok_or_else(|| Failure::Backend(format!("process {p} has no device")))?;
        self.machine()
            .recreate_hw_queue_log(&ums, h, hw_kind(kind), entries)
            .map_err(failure)?;
        self.fault().map_or(Ok(()), Err)
    }
}
