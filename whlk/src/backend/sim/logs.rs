//! [`UmdFences`] and [`FenceLogs`] of the simulated backend: UMD native fences, the OS's
//! log drain record joined into a [`Timeline`].

use std::sync::Arc;
use std::time::Duration;

use rvgpu_hw::cmd::LogKind as HwLogKind;
use rvgpu_simos::state::sync::trace::{Recorder, QPC_HZ};
use rvgpu_simos::{Machine, ReleaseVia, TraceEvent};
use rvgpu_umd::fencelog::Op;
use rvgpu_umd::kmt::Kmt;

use super::{failure, umd_failure, wait_result, SimSession};
use crate::backend::{
    Failure, FenceLogs, FenceWork, LogCounters, LogKind, ProcessRef, QueueLogs, UmFenceRef,
    UmQueueRef, UmdFences, WaitResult,
};
use crate::timeline::{Calibration, FenceOp, Marker, OpKind, QueueTrack, Timeline};

pub(crate) fn hw_kind(k: LogKind) -> HwLogKind {
    match k {
        LogKind::Wait => HwLogKind::Wait,
        LogKind::Signal => HwLogKind::Signal,
    }
}

/// The entry counts of hardware queue `h`'s two logs on adapter `adapter`, as the OS holds them.
pub(crate) fn os_queue_logs(
    m: &rvgpu_simos::Machine,
    adapter: usize,
    h: rvgpu_umd::kmt::KmtHandle,
) -> QueueLogs {
    let entries = |k| {
        m.hw_queue_log(adapter, h, hw_kind(k))
            .map(|(_, entries, ..)| entries)
    };
    QueueLogs {
        wait_entries: entries(LogKind::Wait),
        signal_entries: entries(LogKind::Signal),
    }
}

/// The OS's log counters of adapter `i` in the harness's terms.
pub(crate) fn os_log_counters(m: &rvgpu_simos::Machine, i: usize) -> LogCounters {
    let c = m.log_counters(i);
    LogCounters {
        drains: c.log_drains,
        entries_read: c.log_entries_read,
        update_calls: c.log_update_calls,
        overflows: c.log_overflows,
        entries_lost: c.log_entries_lost,
        bad_entries: c.log_bad_entries,
        fallback_scans: c.log_fallback_scans,
    }
}

fn op_kind(k: HwLogKind) -> OpKind {
    match k {
        HwLogKind::Wait => OpKind::Wait,
        HwLogKind::Signal => OpKind::Signal,
    }
}

/// The recorder's data as a [`Timeline`]: the joined operations (docs/logs.md#simulated-os), the
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
    // A marker saying `text` of something that happened to log (adapter, queue, kind) around
    // free-running index `at`; none while that log has no queued time.
    let log_marker = |adapter: usize, queue_id: u32, kind: HwLogKind, at: u64, text: String| {
        let of_log = || {
            ops.iter()
                .filter(move |o| o.adapter == adapter && o.queue_id == queue_id && o.kind == kind)
        };
        let qpc = of_log()
            .filter(|o| u64::from(o.index) >= at)
            .filter_map(|o| o.queued_qpc)
            .min()
            .or_else(|| of_log().filter_map(|o| o.queued_qpc).max())?;
        Some(Marker {
            adapter,
            queue_id: Some(queue_id),
            qpc,
            text,
        })
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
            } => tl.markers.extend(log_marker(
                adapter,
                queue_id,
                kind,
                from,
                format!(
                    "{} log overflow: entries {from}..{to} lost ({})",
                    log_name(kind),
                    to.saturating_sub(from)
                ),
            )),
            TraceEvent::LogRecreated {
                adapter,
                queue_id,
                kind,
                at,
                entries,
            } => tl.markers.extend(log_marker(
                adapter,
                queue_id,
                kind,
                at,
                format!(
                    "{} log moved to a new buffer of {entries} entries from index {at}",
                    log_name(kind)
                ),
            )),
            TraceEvent::WaitReleased {
                adapter,
                fence_kmt,
                value,
                via: ReleaseVia::Scan,
                qpc,
                ..
            } => tl.markers.push(fence_marker(
                adapter,
                qpc,
                format!(
                    "CPU wait F{fence_kmt:#x}≥{value} released by a fallback scan of every fence"
                ),
            )),
            TraceEvent::MonitoredValueRaised {
                adapter,
                fence_kmt,
                from,
                to,
                waits_below,
                qpc,
                ..
            } => tl.markers.push(fence_marker(
                adapter,
                qpc,
                format!(
                    "F{fence_kmt:#x} MonitoredValue raised {from}→{to} over {waits_below} pending wait(s)"
                ),
            )),
            TraceEvent::LateWake {
                adapter,
                fence_kmt,
                value,
                reached,
                qpc,
                ..
            } => tl.markers.push(fence_marker(
                adapter,
                qpc,
                format!("late wake: CPU wait F{fence_kmt:#x}≥{value} released at {reached}"),
            )),
            _ => {}
        }
    }
    tl
}

/// A marker saying `text` at `qpc` of the OS's fence machinery on `adapter` (on no queue).
fn fence_marker(adapter: usize, qpc: u64, text: String) -> Marker {
    Marker {
        adapter,
        queue_id: None,
        qpc,
        text,
    }
}

impl UmdFences for SimSession {
    fn create_um_fence(&mut self, p: ProcessRef, initial: u64) -> Result<UmFenceRef, Failure> {
        let up = self.process(p)?;
        // Shareable: a case may open it in another process (open_um_fence).
        let r = self.machine.kmt(&up).create_shareable_native_fence(initial);
        self.add_um_fence(up, r)
    }

    /// As a second process gets a fence on Windows: the holder's UMD shares it (an NT handle
    /// in its table), the handle is duplicated into `p`'s table, `p`'s UMD opens it from
    /// there, and both handles are closed.
    fn open_um_fence(&mut self, f: UmFenceRef, p: ProcessRef) -> Result<UmFenceRef, Failure> {
        let (holder, kmt) = {
            let u = self.um_fence(f)?;
            (u.process, u.umd.kmt)
        };
        let up = self.process(p)?;
        let ddi = |rvgpu_umd::kmt::NtStatus(s)| Failure::DdiFailed(s);
        let hk = self.machine.kmt(&holder);
        let mine = hk.share_native_fence(kmt).map_err(ddi)?;
        let theirs = self
            .machine
            .duplicate_handle(holder.pid, mine, up.pid)
            .map_err(failure);
        let _ = hk.close_nt_handle(mine);
        let theirs = theirs?;
        let r = self.machine.kmt(&up).open_native_fence(theirs);
        let _ = self.machine.kmt(&up).close_nt_handle(theirs);
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
        let r = self.live_queue(q)?.submit_ops(&list);
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
        let r = super::wait::bounded_wait(&self.machine, &os, value, timeout)
            .map(wait_result)
            .map_err(failure)?;
        self.check_fault()?;
        Ok(r)
    }

    fn um_fence_value(&self, f: UmFenceRef) -> Result<u64, Failure> {
        Ok(self.um_fence(f)?.os.current_value())
    }
}

/// One calibration sample per adapter of `m` now (a recorder sees it as an event).
fn calibrate_all(m: &Machine) {
    for i in 0..m.adapter_count() {
        let _ = m.calibrate_gpu_clock(i, 0);
    }
}

/// Starts recording `m`'s fence timeline: a recorder as the OS's trace sink, the driver's ETW
/// events on (they join the timeline, docs/logs.md, ETW) and a first calibration sample (the
/// OS calibrates at start, before the recorder was there). The caller feeds the UMD's
/// "queued" events to [`Recorder::for_adapter`].
pub(crate) fn start_recording(m: &Machine) -> Arc<Recorder> {
    let rec = Recorder::new();
    m.set_trace_sink(rec.clone());
    m.etw_enable(rvgpu_simos::etw::Enable::all(rvgpu_simos::etw::RVGPU_KMD));
    calibrate_all(m);
    rec
}

/// What `rec` recorded on `m` as a [`Timeline`] labelled `label`, after a last calibration
/// sample (so that every GPU time of the run lies between two samples), with the driver's ETW
/// events.
pub(crate) fn recorded_on(m: &Machine, rec: &Recorder, label: &str) -> Timeline {
    calibrate_all(m);
    let mut tl = recorded_timeline(rec, label);
    tl.etw = m
        .etw()
        .events()
        .into_iter()
        .map(|e| crate::timeline::EtwMark {
            qpc: e.qpc,
            name: e.decoded.name.clone(),
            fields: e
                .decoded
                .fields
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect(),
        })
        .collect();
    tl
}

impl FenceLogs for SimSession {
    fn trace_fences(&mut self) -> Result<(), Failure> {
        let rec = start_recording(&self.machine);
        for q in &mut self.um_queues {
            let adapter = self.processes.get(q.process).map_or(0, |p| p.adapter);
            if let Some(u) = &mut q.q {
                u.set_fence_trace(Some(Arc::new(rec.for_adapter(adapter))));
            }
        }
        self.recorder = Some(rec);
        self.check_fault()
    }

    fn fence_timeline(&self, label: &str) -> Result<Timeline, Failure> {
        let rec = self.recorder.as_ref().ok_or_else(|| {
            Failure::Backend("fence_timeline before trace_fences: nothing was recorded".into())
        })?;
        let tl = recorded_on(&self.machine, rec, label);
        self.check_fault()?;
        Ok(tl)
    }

    fn queue_logs(&self, q: UmQueueRef) -> Result<QueueLogs, Failure> {
        let (adapter, h) = self.hw_queue_handle(q)?;
        Ok(os_queue_logs(&self.machine, adapter, h))
    }

    fn log_counters(&self, i: usize) -> Result<LogCounters, Failure> {
        Ok(os_log_counters(&self.machine, i))
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
}
