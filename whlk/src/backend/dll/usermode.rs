//! The processes and queues of the seam ([`AppQueues`], which writes
//! [`crate::backend::UserModeSubmission`] once) through the DLL: processes that load it and
//! open the adapter, user-mode and kernel-mode queues (`rvgpu_queue_create`), waits, and the
//! streaming and churning lanes on their own threads.

use std::sync::Arc;
use std::time::Duration;

use rvgpu_simos::pe::umd::UserProcess;
use rvgpu_simos::Machine;

use super::{status_name, DProcess, DQueue, DllSession, DEVICE_LOST, LOCK_WRITE, OK, TIMEOUT};
use crate::backend::app::{AppQueues, QueueWait};
use crate::backend::lanes::StreamGate;
use crate::backend::{
    BufferRef, ChurnLane, ChurnReport, DoorbellStatus, Failure, NewQueue, ProcessEnd, ProcessRef,
    StreamReport, SubmitPath, UmQueueInfo, UmQueueRef,
};

/// One [`StreamLane`] on its own thread: `rvgpu_queue_submit` of each batch, in order. A lane
/// that stops after a recovery learns of it from the OS's counters on `m` (the harness
/// steering the application, as the simulation backend does).
pub(crate) fn stream_lane(
    m: &Machine,
    adapter: usize,
    (gate, k): (&StreamGate<'_>, usize),
    up: &Arc<UserProcess>,
    h: u64,
    batches: &[Vec<u32>],
) -> StreamReport {
    let _end = gate.ending(k);
    let Some(lane) = gate.lane(k) else {
        return crate::backend::lanes::stream_panicked();
    };
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
                gate.note(k, rep.submitted);
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
    gate.end(k);
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
pub(crate) fn churn_lane(
    lane: &ChurnLane,
    up: &Arc<UserProcess>,
    adapter: u64,
    batches: &[Vec<u32>],
) -> ChurnReport {
    let call = |name: &str, args: &[u64]| -> Result<(), String> {
        match up.call(name, args).map(|v| v & 0xFFFF_FFFF) {
            Ok(OK) => Ok(()),
            Ok(s) => Err(format!("{name} returned {}", status_name(s))),
            Err(e) => Err(format!("{name}: {e:?}")),
        }
    };
    let per = usize::try_from(lane.batches_per_round).unwrap_or(usize::MAX);
    crate::backend::lanes::churn_rounds(lane, |round| {
        // RvgpuQueueDesc: node, user mode, priority 0, 4 KiB ring.
        let desc: [u32; 4] = [lane.node, 0, 0, 4096];
        let mut q = 0u64;
        call(
            "rvgpu_queue_create",
            &[adapter, desc.as_ptr() as u64, &raw mut q as u64],
        )?;
        let first = round.saturating_mul(per);
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
    })
}

impl DllSession {
    /// `rvgpu_open_adapter` of adapter `i` in `up`, named as a process of its own by the D3D
    /// device the call made.
    fn open_adapter_in(&mut self, i: usize, up: Arc<UserProcess>) -> Result<ProcessRef, Failure> {
        let luid = rvgpu_simos::adapter::adapter_luid(i);
        let before = up.devices();
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
        let device = up
            .devices()
            .into_iter()
            .find(|d| !before.contains(d))
            .map_or(0, |d| d.device);
        self.processes.push(DProcess {
            adapter: i,
            live: Some((up, adapter)),
            device,
        });
        Ok(ProcessRef(self.processes.len() - 1))
    }
}

impl AppQueues for DllSession {
    /// A process that loads the DLL and opens the adapter (`rvgpu_open_adapter`).
    fn process_open(&mut self, i: usize) -> Result<ProcessRef, Failure> {
        self.started(i)?;
        let up = UserProcess::new(self.m.clone(), self.image.clone());
        self.open_adapter_in(i, up)
    }

    /// The application opens the adapter a second time (`rvgpu_open_adapter` again in `p`'s
    /// process): a second `RvgpuAdapter*` with a D3D device of its own.
    fn process_sibling(&mut self, p: ProcessRef) -> Result<ProcessRef, Failure> {
        let (up, _) = self.process(p.0)?;
        let i = self
            .processes
            .get(p.0)
            .map(|d| d.adapter)
            .ok_or_else(|| Failure::Backend(format!("no process {}", p.0)))?;
        self.open_adapter_in(i, up)
    }

    fn process_end(&mut self, p: ProcessRef, how: ProcessEnd) -> Result<(), Failure> {
        self.process(p.0)?;
        self.exit_process(p.0, how)
    }

    fn plain_create(&mut self, p: ProcessRef, bytes: u64) -> Result<BufferRef, Failure> {
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

    fn queue_create(&mut self, p: ProcessRef, new: NewQueue) -> Result<UmQueueRef, Failure> {
        let NewQueue { node, path: kind } = new;
        if let Some(why) = &self.no_native_fences {
            return Err(crate::backend::kmt::lifecycle::no_native_fences(why));
        }
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

    fn queue_wait(&mut self, q: UmQueueRef, value: u64) -> Result<QueueWait, Failure> {
        let (p, h) = self.queue(q)?;
        Ok(
            match self.call(p, "rvgpu_queue_wait", &[h, value, u64::MAX])? {
                OK => QueueWait::Reached,
                TIMEOUT => QueueWait::TimedOut,
                DEVICE_LOST => QueueWait::Removed,
                s => QueueWait::Failed(Failure::Backend(format!(
                    "rvgpu_queue_wait returned {}",
                    status_name(s)
                ))),
            },
        )
    }

    fn queue_status(&self, q: UmQueueRef) -> Result<UmQueueInfo, Failure> {
        let d = self
            .queues
            .get(q.0)
            .ok_or_else(|| Failure::Backend(format!("no queue {}", q.0)))?;
        match d.handle {
            Some(h) => self.status_of(d.process, h),
            None => Ok(d.info),
        }
    }

    fn queue_close(&mut self, q: UmQueueRef) -> Result<(), Failure> {
        let (p, h) = self.queue(q)?;
        let info = self.status_of(p, h)?;
        self.drain_fence_log(p, h)?;
        if let Some(d) = self.queues.get_mut(q.0) {
            d.handle = None;
            d.info = info;
        }
        self.ok(p, "rvgpu_destroy_queue", &[h])
    }

    /// The status word `rvgpu_queue_status` reads (-1: no doorbell).
    fn queue_doorbell(&self, q: UmQueueRef) -> Result<Option<DoorbellStatus>, Failure> {
        let (p, h) = self.queue(q)?;
        let mut st = [0u64; 5];
        self.ok(p, "rvgpu_queue_status", &[h, st.as_mut_ptr() as u64])?;
        Ok(match (st[4] >> 32) as u32 as i32 {
            -1 => None,
            raw => Some(DoorbellStatus::from_raw(raw)),
        })
    }

    /// One thread per lane (step mode: one lane after another), each making its queues one
    /// after another through the C API:
    /// `rvgpu_queue_create`, its batches by `rvgpu_queue_submit`, `rvgpu_queue_wait`,
    /// `rvgpu_queue_status` (which path the queue ended on), `rvgpu_destroy_queue`.
    fn churn_lanes(&mut self, lanes: &[ChurnLane]) -> Result<Vec<ChurnReport>, Failure> {
        if let Some(why) = &self.no_native_fences {
            return Err(crate::backend::kmt::lifecycle::no_native_fences(why));
        }
        let mut jobs = Vec::with_capacity(lanes.len());
        for lane in lanes {
            let (up, adapter) = self.process(lane.process.0)?;
            let batches = self.batch_dwords(&lane.work)?;
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
