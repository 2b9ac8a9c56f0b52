//! The adapter's engines as the harness reads and steers them beside the DLL: the driver's caps
//! (the OS's record), an engine's idle F1, and TDR.

use std::time::Duration;

use rvgpu_simos::Machine;

use super::usermode::stream_lane;
use super::DllSession;
use crate::backend::{DriverCaps, Failure, StreamLane, StreamReport, SubmissionCaps};

/// The OS's record of what the driver reported, read by the harness (an application sees only
/// what `D3DKMTQueryAdapterInfo` passes on).
impl crate::backend::KmdCaps for DllSession {
    fn driver_caps(&mut self, i: usize) -> Result<DriverCaps, Failure> {
        crate::backend::sim::translate::driver_caps_of(&self.m, i)
    }

    fn submission_caps(&mut self, i: usize) -> Result<SubmissionCaps, Failure> {
        Ok(crate::backend::sim::translate::submission_caps_of(
            &self.m, i,
        ))
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
            let batches = self.batch_dwords(&lane.batches)?;
            let adapter = self
                .processes
                .get(p)
                .map(|d| d.adapter)
                .ok_or_else(|| Failure::Backend(format!("no process {p}")))?;
            jobs.push((lane, self.process(p)?.0, h, batches, adapter));
        }
        let m: &Machine = &self.m;
        let gate = &crate::backend::lanes::StreamGate::new(lanes);
        if self.stepped() {
            // One after another, in order: each lane's start has come.
            return Ok(jobs
                .iter()
                .enumerate()
                .map(|(k, (_, up, h, batches, a))| stream_lane(m, *a, (gate, k), up, *h, batches))
                .collect());
        }
        Ok(std::thread::scope(|sc| {
            let handles: Vec<_> = jobs
                .iter()
                .enumerate()
                .map(|(k, (_, up, h, batches, a))| {
                    sc.spawn(move || {
                        gate.wait_open(k);
                        stream_lane(m, *a, (gate, k), up, *h, batches)
                    })
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
