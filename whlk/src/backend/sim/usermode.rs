//! [`UserModeSubmission`] of the simulated backend: the real UMD core (`UserQueue`,
//! `KernelQueue`) over the session's thunks, and the churn and stream threads; beside it what
//! only the simulation shows or does ([`KmdCaps`], [`UmdBypass`], [`EngineIdle`]).

use std::sync::Arc;
use std::time::Duration;

use rvgpu_hw::addr::BusAddr;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::regs;
use rvgpu_simos::{Machine, Mode};
use rvgpu_umd::kmt::{AllocationCpu, Kmt, NtStatus};
use rvgpu_umd::submit::SubmitError;

use super::thunks::{self, SessKmt};
use super::translate::{driver_caps_of, submission_caps_of};
use super::{failure, umd_failure, wait_outcome, SimSession, SimUmQueue, UmdQueue};
use crate::backend::lanes::{self, churn_lane, StreamGate};
use crate::backend::{
    nth_mut, BufferRef, ChurnLane, ChurnReport, DoorbellStatus, DriverCaps, EngineIdle, Failure,
    KmdCaps, NewQueue, ProcessEnd, ProcessRef, StreamLane, StreamReport, SubmissionCaps,
    UmQueueInfo, UmQueueRef, UmdBypass, UserModeSubmission, WaitResult, Work,
};

/// [`StreamLane::stop_after_recovery`] before the lane's next batch: notes when the lane first
/// sees adapter `adapter` of `m` recovered (the OS's counters, read by the harness) and
/// whether the lane has submitted enough since.
pub(crate) fn lane_done_after_recovery(
    m: &Machine,
    adapter: usize,
    lane: &StreamLane,
    rep: &mut StreamReport,
) -> bool {
    let Some((min, more)) = lane.stop_after_recovery else {
        return false;
    };
    if rep.recovered_at.is_none() && rep.submitted >= min && m.tdr_counts(adapter) != (0, 0) {
        rep.recovered_at = Some(rep.submitted);
    }
    rep.recovered_at.is_some_and(|r| rep.submitted >= r + more)
}

/// One [`StreamLane`] on the calling thread, on the queue it took.
fn stream_lane(
    m: &Machine,
    (gate, k): (&StreamGate<'_>, usize),
    cmds: &[Vec<Command>],
    adapter: usize,
    q: &mut UmdQueue,
) -> StreamReport {
    let _end = gate.ending(k);
    let Some(lane) = gate.lane(k) else {
        return lanes::stream_panicked();
    };
    let step = m.config().mode == Mode::Step;
    if !step {
        gate.wait_open(k);
    }
    let mut rep = StreamReport {
        submitted: 0,
        last_value: 0,
        recovered_at: None,
        error: None,
    };
    for batch in cmds {
        if lane_done_after_recovery(m, adapter, lane, &mut rep) {
            break;
        }
        if lane.max_in_flight > 0 {
            let t0 = std::time::Instant::now();
            loop {
                let (last, done) = q.progress();
                if last.saturating_sub(done) < lane.max_in_flight {
                    break;
                }
                if t0.elapsed() > Duration::from_secs(20) {
                    rep.error = Some(format!(
                        "batch {}: {} batches in flight for 20 s",
                        rep.submitted,
                        last - done
                    ));
                    return rep;
                }
                if step {
                    if let Err(e) = m.run_steps(1) {
                        rep.error = Some(format!("{:?}", failure(e)));
                        return rep;
                    }
                } else {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        }
        match q.submit(batch) {
            Ok(v) => {
                rep.submitted += 1;
                rep.last_value = v;
                gate.note(k, rep.submitted);
            }
            Err(e) => {
                rep.error = Some(format!("batch {}: {:?}", rep.submitted, umd_failure(m, e)));
                return rep;
            }
        }
    }
    gate.end(k);
    if lane.wait && rep.last_value > 0 {
        if let Err(e) = q.wait(rep.last_value) {
            rep.error = Some(format!(
                "waiting for {}: {:?}",
                rep.last_value,
                umd_failure(m, e)
            ));
        }
    }
    rep
}

impl SimSession {
    /// Process `p` is gone with its UMD: drops the UMD's objects (their teardown finds nothing
    /// left to destroy).
    pub(super) fn forget_process(&mut self, p: ProcessRef) {
        for q in self.um_queues.iter_mut().filter(|q| q.process == p.0) {
            if let Some(u) = q.q.take() {
                q.info = u.info();
            }
        }
        self.suspended.retain(|(pi, _)| *pi != p.0);
    }
}

impl UserModeSubmission for SimSession {
    fn open_process(&mut self, i: usize) -> Result<ProcessRef, Failure> {
        let p = self.machine.create_process(i).map_err(failure)?;
        self.processes.push(p);
        Ok(ProcessRef(self.processes.len() - 1))
    }

    fn open_sibling_device(&mut self, p: ProcessRef) -> Result<ProcessRef, Failure> {
        let up = self.process(p)?;
        let d = self.machine.create_device(&up).map_err(failure)?;
        self.processes.push(d);
        Ok(ProcessRef(self.processes.len() - 1))
    }

    fn end_process(&mut self, p: ProcessRef, how: ProcessEnd) -> Result<(), Failure> {
        let up = self.process(p)?;
        match how {
            ProcessEnd::Normal => self.machine.exit_process(&up),
            ProcessEnd::Abnormal => self.machine.kill_process(&up),
        }
        .map_err(failure)?;
        self.forget_process(p);
        self.check_fault()
    }

    fn create_buffer(&mut self, p: ProcessRef, bytes: u64) -> Result<BufferRef, Failure> {
        let a = self
            .kmt(p)?
            .create_allocation(bytes)
            .map_err(|NtStatus(s)| Failure::DdiFailed(s))?;
        for off in (0..a.size).step_by(8) {
            a.mem.store(off, 0);
        }
        self.buffers.push(a);
        self.buffer_process.push(p.0);
        Ok(BufferRef(self.buffers.len() - 1))
    }

    fn read_buffer(&self, b: BufferRef, offset: u64) -> Result<u64, Failure> {
        self.address(b, offset, 8)?;
        Ok(self.buffer(b)?.mem.load(offset))
    }

    fn write_buffer(&mut self, b: BufferRef, offset: u64, value: u64) -> Result<(), Failure> {
        self.address(b, offset, 8)?;
        let mem = &self.buffer(b)?.mem;
        mem.store(offset, value);
        // A FENCE_WAIT blocked on this word re-evaluates (what the OS's CPU signal does on
        // this device: WAIT_RESCAN). The register takes an address in the paging process's
        // space, where a process's buffer is not mapped, so the harness asks for every
        // blocked wait (0; hardware.md, `WAIT_RESCAN`).
        // A register write: the same on the in-process device and on a PCI board.
        for i in 0..self.machine.adapter_count() {
            if let Some(d) = self.machine.board(i) {
                d.write64(regs::WAIT_RESCAN, 0);
            }
        }
        self.check_fault()
    }

    fn create_queue(&mut self, p: ProcessRef, new: NewQueue) -> Result<UmQueueRef, Failure> {
        let NewQueue { node, path: kind } = new;
        let up = self.process(p)?;
        let kmt = SessKmt::new(self.machine.clone(), up);
        let rec = kmt.record();
        let q = UmdQueue::new(kmt, node, kind).map_err(|e| umd_failure(&self.machine, e))?;
        let mut q = q;
        if let Some(r) = &self.recorder {
            q.set_fence_trace(Some(Arc::new(r.for_adapter(up.adapter))));
        }
        self.um_queues.push(SimUmQueue {
            process: p.0,
            info: q.info(),
            q: Some(q),
            rec,
        });
        Ok(UmQueueRef(self.um_queues.len() - 1))
    }

    fn submit(&mut self, q: UmQueueRef, work: &[Work]) -> Result<u64, Failure> {
        let cmds = self.encode(work)?;
        let m = self.machine.clone();
        let r = self.live_queue(q)?.submit(&cmds);
        let v = r.map_err(|e| umd_failure(&m, e))?;
        self.check_fault()?;
        Ok(v)
    }

    fn wait_progress(&mut self, q: UmQueueRef, value: u64) -> Result<WaitResult, Failure> {
        let m = self.machine.clone();
        let r = self.live_queue(q)?.wait(value);
        wait_outcome(&m, r)
    }

    fn queue_info(&self, q: UmQueueRef) -> Result<UmQueueInfo, Failure> {
        let sq = self.um_queue(q)?;
        let mut info = sq.q.as_ref().map_or(sq.info, UmdQueue::info);
        info.scheduled = self.scheduled(self.adapter_of(sq), info.queue_id);
        Ok(info)
    }

    fn close_queue(&mut self, q: UmQueueRef) -> Result<(), Failure> {
        let m = self.machine.clone();
        let sq = nth_mut(&mut self.um_queues, q.0, "queue")?;
        crate::backend::umd_queue::close_slot(&mut sq.q, &mut sq.info, q)?
            .map_err(|e| umd_failure(&m, e))?;
        self.check_fault()
    }

    fn doorbell_status(&self, q: UmQueueRef) -> Result<DoorbellStatus, Failure> {
        let sq = self.um_queue(q)?;
        let db = thunks::lock(&sq.rec).doorbell;
        db.and_then(|d| self.machine.doorbell_info(self.adapter_of(sq), d))
            .map(|i| DoorbellStatus::from_raw(i.status))
            .ok_or_else(|| crate::backend::umd_queue::no_doorbell(q))
    }

    fn churn(&mut self, lanes: &[ChurnLane]) -> Result<Vec<ChurnReport>, Failure> {
        let jobs = lanes::churn_jobs(lanes, |p| self.process(p), |w| self.encode(w))?;
        let m = &self.machine;
        let threaded = m.config().mode == Mode::Threaded;
        let err = |e: SubmitError| format!("{:?}", umd_failure(m, e));
        let reports = lanes::run_lanes(
            &jobs,
            threaded,
            |(p, lane, cmds)| churn_lane(|| SessKmt::new(m.clone(), *p), lane, cmds, err),
            lanes::churn_panicked,
        );
        self.check_fault()?;
        Ok(reports)
    }
}

impl KmdCaps for SimSession {
    fn driver_caps(&mut self, i: usize) -> Result<DriverCaps, Failure> {
        driver_caps_of(&self.machine, i)
    }

    fn submission_caps(&mut self, i: usize) -> Result<SubmissionCaps, Failure> {
        Ok(submission_caps_of(&self.machine, i))
    }
}

impl UmdBypass for SimSession {
    fn kernel_submit_on_user_queue(
        &mut self,
        q: UmQueueRef,
        work: &[Work],
    ) -> Result<i32, Failure> {
        self.submit_on_user_queue(q, work, false)
    }

    fn release_ring_handles(&mut self, q: UmQueueRef) -> Result<(), Failure> {
        let sq = self.um_queue(q)?;
        let up = self.process(ProcessRef(sq.process))?;
        let (ring, control) = thunks::lock(&sq.rec)
            .ring
            .ok_or_else(|| Failure::Backend(format!("queue {} has no ring", q.0)))?;
        let k = self.machine.kmt(&up);
        for h in [ring, control] {
            k.destroy_allocation(h)
                .map_err(|NtStatus(s)| Failure::DdiFailed(s))?;
            thunks::lock(&sq.rec).released.push(h);
        }
        self.check_fault()
    }

    fn ring_resident(&self, q: UmQueueRef) -> Result<bool, Failure> {
        let sq = self.um_queue(q)?;
        let rec = thunks::lock(&sq.rec);
        let (ring, control) = rec
            .ring
            .ok_or_else(|| Failure::Backend(format!("queue {} has no ring", q.0)))?;
        let mem = self.machine.memory();
        Ok([ring, control].iter().all(|h| {
            rec.allocations
                .get(h)
                .is_some_and(|&(bus, size)| mem.is_mapped(BusAddr::new(bus).phys(), size))
        }))
    }
}

impl EngineIdle for SimSession {
    fn await_engine_f1(&mut self, i: usize, node: u32, budget: Duration) -> Result<bool, Failure> {
        await_engine_f1_on(&self.machine, self.idle_f1, i, node, budget)
    }
}

/// Runs rounds of `m` (one per 10 µs of `budget`) until the OS moved engine `node` of adapter
/// `i` to F1; `idle_f1` says whether the session's engines request F1 at all.
pub(crate) fn await_engine_f1_on(
    m: &Machine,
    idle_f1: bool,
    i: usize,
    node: u32,
    budget: Duration,
) -> Result<bool, Failure> {
    if !idle_f1 {
        return Err(Failure::Unsupported(
            "the simulated engines request F1 only with SessionConfig::idle_f1_ticks set".into(),
        ));
    }
    let rounds = usize::try_from(budget.as_micros() / 10).unwrap_or(usize::MAX);
    m.run_until(rounds, budget, |m| m.engine_fstate(i, node) == Some(1))
        .map_err(failure)
}

impl SimSession {
    /// [`Tdr::stream`](crate::backend::Tdr::stream) of the simulated backend.
    pub(super) fn stream_lanes(
        &mut self,
        lanes: &[StreamLane],
    ) -> Result<Vec<StreamReport>, Failure> {
        let mut jobs = Vec::with_capacity(lanes.len());
        for (k, lane) in lanes.iter().enumerate() {
            let sq = self.um_queue(lane.queue)?;
            if sq.q.is_none() || lanes[..k].iter().any(|l| l.queue == lane.queue) {
                return Err(Failure::Backend(format!(
                    "stream: queue {} is closed or in two lanes",
                    lane.queue.0
                )));
            }
            let cmds = lane
                .batches
                .iter()
                .map(|w| self.encode(w))
                .collect::<Result<Vec<_>, _>>()?;
            jobs.push((lane, cmds, self.adapter_of(sq)));
        }
        let mut taken: Vec<UmdQueue> = lanes
            .iter()
            .filter_map(|l| self.um_queues[l.queue.0].q.take())
            .collect();
        let m = &*self.machine;
        let gate = StreamGate::new(lanes);
        let reports = lanes::run_lanes(
            jobs.iter().zip(taken.iter_mut()).enumerate(),
            m.config().mode == Mode::Threaded,
            |(k, ((_, cmds, a), q))| stream_lane(m, (&gate, k), cmds, *a, q),
            lanes::stream_panicked,
        );
        for (lane, q) in lanes.iter().zip(taken) {
            self.um_queues[lane.queue.0].q = Some(q);
        }
        self.check_fault()?;
        Ok(reports)
    }

    /// `work` as one command buffer on the user-mode queue's own hardware queue: through
    /// the thunk, or with `direct_ddi` straight to the DDI. The NTSTATUS.
    pub(super) fn submit_on_user_queue(
        &mut self,
        q: UmQueueRef,
        work: &[Work],
        direct_ddi: bool,
    ) -> Result<i32, Failure> {
        let cmds = self.encode(work)?;
        let sq = self.um_queue(q)?;
        let up = self.process(ProcessRef(sq.process))?;
        let handle = thunks::lock(&sq.rec)
            .hw_queues
            .iter()
            .find(|(_, user)| *user)
            .map(|(h, _)| *h)
            .ok_or_else(|| Failure::Backend(format!("queue {} is not a user-mode queue", q.0)))?;
        let value = self.queue_info(q)?.last_submitted + 1;
        let k = self.machine.kmt(&up);
        let cb = k
            .create_allocation_as(4096, rvgpu_umd::kmt::AllocationKind::Commands)
            .map_err(|NtStatus(s)| Failure::DdiFailed(s))?;
        let mut off = 0u64;
        for c in &cmds {
            let mut w = [0u64; 8];
            let n = c
                .encode(&mut w)
                .ok_or_else(|| Failure::Backend(format!("cannot encode {c:?}")))?;
            for word in w.iter().take(n) {
                cb.mem.store(off, *word);
                off += 8;
            }
        }
        let bytes = u32::try_from(off).unwrap_or(u32::MAX);
        let status = if direct_ddi {
            self.machine
                .ddi_submit_command_to_hw_queue(&up, handle, value, cb.gpu_va, bytes)
                .map_err(failure)?
        } else {
            match k.submit_command_to_hw_queue(handle, value, cb.gpu_va, bytes) {
                Ok(()) => 0,
                Err(NtStatus(s)) => s,
            }
        };
        if status < 0 {
            // Refused: nothing references the command buffer.
            let _ = k.destroy_allocation(cb.handle);
        }
        self.check_fault()?;
        Ok(status)
    }
}
