//! Native fences made through the DLL ([`UmdFences`]) and the OS's side of their logs
//! ([`FenceLogs`]) for an application on rvgpu_umd.dll.
//!
//! A fence is `rvgpu_fence_create2` (shareable, so a case may open it elsewhere); opening it in
//! another process is the share / `DuplicateHandle` / open sequence of `umd`; a batch
//! of packets and fence operations is `rvgpu_queue_submit` batches in order (a batch's waits
//! come before its packets and its signals after, so a wait after a packet or a signal, or a
//! packet after a signal, starts a new batch). The logs are the OS's records, read by the
//! harness. The timeline joins them with the "queued" events the application reads back from
//! each queue with `rvgpu_queue_read_fence_log`, drained after every submission and before
//! the queue is destroyed.

use std::time::Duration;

use rvgpu_umd::fencelog::{FenceTrace, LogKind as UmdLogKind, QueuedOp};

use super::umd::DllOp;
use super::DllSession;
use crate::backend::sim::failure;
use crate::backend::sim::logs::{
    hw_kind, os_log_counters, os_queue_logs, recorded_on, start_recording,
};
use crate::backend::{
    nth, Failure, FenceLogs, FenceWork, LogCounters, LogKind, ProcessRef, QueueLogs, UmFenceRef,
    UmQueueRef, UmdFences, WaitResult,
};

/// `RVGPU_FENCE_LOG_WAIT`.
const FENCE_LOG_WAIT: u32 = 0;
/// Entries one `rvgpu_queue_read_fence_log` call reads.
const LOG_READ: usize = 64;

/// `RvgpuFenceLogEntry` (rvgpu_umd.h): two u64, six u32.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct LogEntry {
    value: u64,
    cpu_timestamp: u64,
    queue_id: u32,
    kind: u32,
    index: u32,
    logged: u32,
    os_fence: u32,
    reserved: u32,
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
        let (adapter, objects) = self.queue_objects(q)?;
        objects
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

impl DllSession {
    /// Every fence operation queue `h` of process `p` reports (`rvgpu_queue_read_fence_log`
    /// until it has none left), oldest first.
    fn read_fence_log(
        &self,
        p: usize,
        h: u64,
        mut f: impl FnMut(&LogEntry),
    ) -> Result<(), Failure> {
        loop {
            let mut buf = [LogEntry::default(); LOG_READ];
            let mut n = 0usize;
            self.ok(
                p,
                "rvgpu_queue_read_fence_log",
                &[
                    h,
                    buf.as_mut_ptr() as u64,
                    LOG_READ as u64,
                    &raw mut n as u64,
                ],
            )?;
            buf.iter().take(n).for_each(&mut f);
            if n < LOG_READ {
                return Ok(());
            }
        }
    }

    /// Feeds what queue `h` of process `p` reports to the recorder, if the fence timeline is
    /// being recorded.
    pub(crate) fn drain_fence_log(&self, p: usize, h: u64) -> Result<(), Failure> {
        let Some(rec) = &self.recorder else {
            return Ok(());
        };
        let adapter = self
            .processes
            .get(p)
            .map(|d| d.adapter)
            .ok_or_else(|| Failure::Backend(format!("no process {p}")))?;
        let sink = rec.for_adapter(adapter);
        self.read_fence_log(p, h, |e| {
            sink.queued(&QueuedOp {
                queue_id: e.queue_id,
                kind: if e.kind == FENCE_LOG_WAIT {
                    UmdLogKind::Wait
                } else {
                    UmdLogKind::Signal
                },
                index: e.index,
                fence: e.os_fence,
                value: e.value,
                qpc: e.cpu_timestamp,
                logged: e.logged != 0,
            });
        })
    }
}

impl UmdFences for DllSession {
    fn create_um_fence(&mut self, p: ProcessRef, initial: u64) -> Result<UmFenceRef, Failure> {
        let h = self.create_on_adapter(p.0, "rvgpu_fence_create2", &[initial, 1])?;
        self.um_fences.push((p.0, h));
        Ok(UmFenceRef(self.um_fences.len() - 1))
    }

    fn open_um_fence(&mut self, f: UmFenceRef, p: ProcessRef) -> Result<UmFenceRef, Failure> {
        let (holder, h) = self.um_fence(f)?;
        let mine = self.share_into(holder, h, p.0)?;
        self.um_fences.push((p.0, mine));
        Ok(UmFenceRef(self.um_fences.len() - 1))
    }

    /// In order (`DllSession::submit_in_order`); every fence the queue's process's.
    fn submit_fence_ops(&mut self, q: UmQueueRef, ops: &[FenceWork]) -> Result<u64, Failure> {
        let (p, h) = self.queue(q)?;
        let fence = |f| match self.um_fence(f)? {
            (fp, fh) if fp == p => Ok(fh),
            _ => Err(Failure::Backend(
                "the fence is not the queue's process's".into(),
            )),
        };
        let mut dll = Vec::with_capacity(ops.len());
        for op in ops {
            dll.push(match *op {
                FenceWork::Wait(f, v) => DllOp::Wait(fence(f)?, v),
                FenceWork::Work(w) => {
                    let cmds = crate::backend::encode_work(&[w], |buf, off, bytes| {
                        self.buffer_address(buf, off, bytes)
                    })?;
                    match cmds.as_slice() {
                        [c] => DllOp::Cmd(*c),
                        _ => return Err(Failure::Backend(format!("{w:?} is not one packet"))),
                    }
                }
                FenceWork::Signal(f, v) => DllOp::Signal(fence(f)?, v),
            });
        }
        self.submit_in_order(p, h, &dll)
    }

    fn wait_um_fence(
        &mut self,
        f: UmFenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        let (p, h) = self.um_fence(f)?;
        self.fence_wait(p, h, value, timeout)
    }

    fn um_fence_value(&self, f: UmFenceRef) -> Result<u64, Failure> {
        let (p, h) = self.um_fence(f)?;
        self.ok_out(p, "rvgpu_fence_value", &[h])
    }
}

impl FenceLogs for DllSession {
    /// The OS's records go to a recorder as on the simulation backend; the application's
    /// "queued" events are what its queues report through `rvgpu_queue_read_fence_log`.
    fn trace_fences(&mut self) -> Result<(), Failure> {
        // What the queues reported before the recording started is not the run's.
        let live: Vec<(usize, u64)> = self
            .queues
            .iter()
            .filter_map(|q| q.handle.map(|h| (q.process, h)))
            .collect();
        for (p, h) in live {
            self.read_fence_log(p, h, |_| {})?;
        }
        self.recorder = Some(start_recording(self.machine()));
        self.fault().map_or(Ok(()), Err)
    }

    fn fence_timeline(&self, label: &str) -> Result<crate::timeline::Timeline, Failure> {
        let rec = self.recorder.as_ref().ok_or_else(|| {
            Failure::Backend("fence_timeline before trace_fences: nothing was recorded".into())
        })?;
        for q in &self.queues {
            if let Some(h) = q.handle {
                self.drain_fence_log(q.process, h)?;
            }
        }
        let tl = recorded_on(self.machine(), rec, label);
        self.fault().map_or(Ok(tl), Err)
    }

    /// A queue without a logged hardware queue (a kernel-mode queue) has neither log.
    fn queue_logs(&self, q: UmQueueRef) -> Result<QueueLogs, Failure> {
        let Ok((adapter, h)) = self.hw_queue(q) else {
            nth(&self.queues, q.0, "queue")?;
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
        let ums = self.os_device(p)?;
        self.machine()
            .recreate_hw_queue_log(&ums, h, hw_kind(kind), entries)
            .map_err(failure)?;
        self.fault().map_or(Ok(()), Err)
    }
}
