//! A seeded, reproducible stress of user-mode submission with the real UMD
//! (`rvgpu_umd::submit::UserQueue`), the simulated Dxgkrnl, the real KMD and the emulated GPU.
//!
//! **Shape.** 1,024 user-mode queues (each with its own context, ring, ring control and
//! doorbell) on 16 physical doorbells (dedicated mode), spread over 8 processes and both
//! engines. Random operations: submissions (UM-16), runs of the machine, suspends and resumes
//! of contexts (UM-11, UM-12), F1 requests of idle engines and the OS's doorbell disconnects
//! (UM-13), D3 power-downs and power-ups (UM-14), and one process killed (abnormal exit, UM-18)
//! in the middle of its submissions. With 64 queues per physical doorbell nearly every
//! submission finds its doorbell victimised and goes through RETRY → connect → ring again
//! (UM-19, UM-20), and the KMD commits runlists of hundreds of queues per engine (UM-02).
//!
//! **Markers.** Every queue has a log in memory owned by an observer process that lives to the
//! end: word 0 is the head, word `k` the slot of submission `k`. Submission `k` is
//! `COPY(head → slot k)` then `FILL(head ← k)` (then the UMD's `PROGRESS(k)`). Executed exactly
//! once and in order, slot `k` holds `k − 1` and the head the last sequence number; a
//! duplicate (slot `k` = `k`, or a later value) or a reorder (slot `k + 1` = `k − 1`) breaks
//! the chain, and an unexecuted submission leaves its slot at the sentinel.
//!
//! **Invariants at the end.** Every submission of the surviving processes completed exactly
//! once and in order per queue (chain complete, head = last, UMD and OS progress both = last,
//! UM-16); the killed process's logs and progress values are exactly what they were when
//! `kill_process` returned (nothing of it ran after its teardown: its logs live in the
//! observer's memory, so a late write would be visible, and its rings were freed, so a late
//! fetch would fault) and its queue ids are in no runlist; no bug check, no simulation fault,
//! no DMA fault; after everyone exits the KMD's contiguous allocations and the runlists are
//! back to what they were before the first process.
//!
//! **Reproducibility.** Step mode; the seed comes from `RVGPU_STRESS_SEED` (decimal or `0x`
//! hex; default fixed) and the length from `RVGPU_STRESS_SCALE` (default 1, which runs in
//! seconds in a debug build). The seed and scale are printed on failure. The threaded variant
//! is smaller and not reproducible by seed (thread timing), but reports its seed too.

mod common;

use common::*;
use std::collections::HashMap;
use std::time::Duration;

use rvgpu_ddi::interrupt::DXGK_INTERRUPT_DMA_FAULTED;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::ums::KmtHandle;
use rvgpu_simos::{
    Machine, MachineConfig, Mode, Notification, Power, SimError, UmsEvent, UmsProcess,
};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, Kmt};
use rvgpu_umd::submit::{QueueConfig, SubmissionPath, UserQueue};

// ---------------------------------------------------------------------------------------------
// Knobs and helpers.

const DEFAULT_SEED: u64 = 0x5EED_0006;
/// User-mode ring size: 12 batches, so busy queues wrap their rings many times.
const RING: u32 = 1024;
/// Bytes of one batch in the ring: COPY (4 words), FILL (4), PROGRESS (2).
const BATCH: u64 = 80;
/// A slot value no submission writes.
const SENTINEL: u64 = u64::MAX;

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(s) => {
            let s = s.trim();
            let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(h) => u64::from_str_radix(&h.replace('_', ""), 16),
                None => s.replace('_', "").parse(),
            };
            v.unwrap_or_else(|_| panic!("{name}={s:?} is not a number"))
        }
        Err(_) => default,
    }
}

/// Prints how to reproduce a failure (every panic of the run unwinds through it).
struct SeedGuard {
    test: &'static str,
    seed: u64,
    scale: u64,
}

impl Drop for SeedGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "{}: FAILED with RVGPU_STRESS_SEED={:#x} RVGPU_STRESS_SCALE={}",
                self.test, self.seed, self.scale
            );
        }
    }
}

/// The stress checks the OS's view of every queue's progress (UM-16) and its power-downs
/// under that work (UM-13, UM-14): the pages' flows, where the OS gives user-mode queues their
/// progress fence (24H2 gives none, windows-bringup.md §13). Under `RVGPU_WINDOWS` the
/// rest of that reading stays.
fn pages_reading() -> rvgpu_simos::Windows {
    use rvgpu_simos::machine::answers::UmsProgress;
    rvgpu_simos::Windows::from_env().answering(|r| {
        r.ums_progress = UmsProgress::Given;
    })
}

/// One adapter in `mode` under the pages reading, with `doorbells` doorbells and F1 after
/// `idle_f1_ticks` idle ticks: driver loaded, adapter started.
fn stress_machine(mode: Mode, doorbells: u32, idle_f1_ticks: u64) -> Machine {
    let mut cfg = MachineConfig::single(mode);
    cfg.os.windows = pages_reading();
    cfg.adapters[0].device.doorbells = doorbells;
    cfg.adapters[0].device.idle_f1_ticks = idle_f1_ticks;
    started(cfg)
}

fn tail_log(m: &Machine) -> String {
    let log = m.driver_log();
    let from = log.len().saturating_sub(40);
    format!("{:#?}", &log[from..])
}

fn ok<T>(m: &Machine, seed: u64, r: Result<T, SimError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("seed {seed:#x}: {e}; driver log tail {}", tail_log(m)),
    }
}

fn okk<T, E: std::fmt::Debug>(m: &Machine, seed: u64, r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!(
            "seed {seed:#x}: {e:x?}; machine fault {:?}; bug check {:?}; driver log tail {}",
            m.fault(),
            m.bugcheck(),
            tail_log(m)
        ),
    }
}

/// One user-mode queue of the stress and its log.
struct Q<'m> {
    /// `None` once its process was killed (the process runs no more code).
    uq: Option<UserQueue<SimKmt<'m>>>,
    process: usize,
    /// The OS's (D3DKMT) handles of the hardware queue and its context.
    queue: KmtHandle,
    context: KmtHandle,
    queue_id: u32,
    /// The log: word 0 the head, word k the slot of submission k (observer memory).
    log: SimMem,
    log_gpu: u64,
    log_off: u64,
    slots: u64,
    /// Submissions made (= the last progress value).
    submitted: u64,
    /// Suspended by this test (`Machine::suspend_context`).
    suspended: bool,
    /// The log when it was suspended in D0 (the OS then really suspended it: UM-11 says
    /// nothing of it runs until the resume). `None` when suspended in D3, where the OS's
    /// suspend is a no-op and the power-up resumes the context.
    frozen: Option<Vec<u64>>,
}

impl<'m> Q<'m> {
    fn word(&self, k: u64) -> u64 {
        self.log.load(self.log_off + 8 * k)
    }

    fn words(&self) -> Vec<u64> {
        (0..=self.slots).map(|k| self.word(k)).collect()
    }

    /// Submission `k`: slot k ← head, then head ← k.
    fn batch(&self, k: u64) -> [Command; 2] {
        let head = self.log_gpu + self.log_off;
        [
            Command::Copy {
                src: head,
                dst: head + 8 * k,
                bytes: 8,
            },
            Command::Fill {
                dst: head,
                bytes: 8,
                pattern: k,
            },
        ]
    }

    fn uq(&mut self) -> &mut UserQueue<SimKmt<'m>> {
        self.uq.as_mut().expect("a live queue")
    }

    /// Every submission ran exactly once and in order, nothing else ran (UM-16).
    fn check_complete(&self, seed: u64, i: usize) {
        let n = self.submitted;
        let w = self.words();
        assert_eq!(
            w[0], n,
            "seed {seed:#x}: queue {i}: head {} after {n} submissions",
            w[0]
        );
        for (k, &v) in w.iter().enumerate().skip(1) {
            let k = k as u64;
            let want = if k <= n { k - 1 } else { SENTINEL };
            assert_eq!(
                v, want,
                "seed {seed:#x}: queue {i} (id {}): slot {k} = {v:#x}, want {want:#x} ({n} \
                 submitted): a submission ran twice, out of order, or not at all; log {w:?}",
                self.queue_id
            );
        }
    }

    /// A consistent prefix (in order, at most once): slots 1..=h chain, head h ≤ submitted,
    /// slot h+1 is the sentinel or h (its COPY ran, its FILL not yet), the rest sentinels.
    /// Returns h.
    fn check_prefix(&self, seed: u64, i: usize) -> u64 {
        let w = self.words();
        let h = w[0];
        assert!(
            h <= self.submitted,
            "seed {seed:#x}: queue {i}: head {h} beyond {} submissions",
            self.submitted
        );
        for (k, &v) in w.iter().enumerate().skip(1) {
            let k = k as u64;
            let fine = if k <= h {
                v == k - 1
            } else if k == h + 1 {
                v == SENTINEL || v == h
            } else {
                v == SENTINEL
            };
            assert!(
                fine,
                "seed {seed:#x}: queue {i} (id {}): slot {k} = {v:#x} with head {h}: not a \
                 prefix run in order exactly once; log {w:?}",
                self.queue_id
            );
        }
        h
    }
}

fn queue_config(node: u32) -> QueueConfig {
    QueueConfig {
        node,
        ring_size: RING,
        command_buffer_size: 4096,
        ..QueueConfig::default()
    }
}

/// Creates `per_process` user-mode queues in each of `procs` (engines at random), with logs
/// of `slots` submissions in an allocation of each process (`obs` only watches). Creation is sequential, so the
/// OS events name each queue's context and hardware queue in order.
fn create_queues<'m>(
    m: &'m Machine,
    seed: u64,
    rng: &mut Rng,
    obs: &UmsProcess,
    procs: &[UmsProcess],
    per_process: usize,
    slots: u64,
) -> Vec<Q<'m>> {
    let _ = obs;
    let stride = (slots + 1) * 8;
    // Each process's log is its own allocation: its queues can write nothing else (GpuMmu
    // isolation); the test reads every log through the CPU mapping, even after a kill.
    let logs: Vec<Allocation<SimMem>> = procs
        .iter()
        .map(|p| {
            okk(
                m,
                seed,
                m.kmt(p).create_allocation(per_process as u64 * stride),
            )
        })
        .collect();
    for l in &logs {
        for j in 0..per_process as u64 {
            l.mem.store(j * stride, 0);
            for k in 1..=slots {
                l.mem.store(j * stride + 8 * k, SENTINEL);
            }
        }
    }
    m.clear_ums_events(0);
    let mut uqs = Vec::new();
    for (pi, p) in procs.iter().enumerate() {
        for j in 0..per_process {
            let node = rng.below(2) as u32;
            let uq = okk(m, seed, UserQueue::new(m.kmt(p), &queue_config(node)));
            assert_eq!(uq.path(), SubmissionPath::UserMode, "seed {seed:#x}");
            uqs.push((pi, j, uq));
        }
    }
    // Context and hardware queue of each queue id, from the OS's record.
    let mut by_id: HashMap<u32, (KmtHandle, KmtHandle)> = HashMap::new();
    let mut ctx = None;
    for e in m.ums_events(0) {
        match e {
            UmsEvent::CreateContext { context, .. } => ctx = Some(context),
            UmsEvent::CreateHwQueue {
                queue,
                user_mode: true,
                queue_id: Some(id),
            } => {
                by_id.insert(id, (queue, ctx.expect("context before queue")));
            }
            _ => {}
        }
    }
    uqs.into_iter()
        .map(|(pi, j, uq)| {
            let (queue, context) = by_id[&uq.queue_id()];
            Q {
                queue_id: uq.queue_id(),
                uq: Some(uq),
                process: pi,
                queue,
                context,
                log: logs[pi].mem.clone(),
                log_gpu: logs[pi].gpu_va,
                log_off: j as u64 * stride,
                slots,
                submitted: 0,
                suspended: false,
                frozen: None,
            }
        })
        .collect()
}

fn runlisted(m: &Machine) -> Vec<u32> {
    m.device(0)
        .unwrap()
        .queues()
        .iter()
        .map(|s| s.queue_id)
        .collect()
}

/// What the killed process left behind when `kill_process` returned.
struct KillSnapshot {
    queues: Vec<usize>,
    logs: Vec<Vec<u64>>,
    completed: Vec<u64>,
}

/// UM-18: kills `victim` and records its logs and progress; its queue ids must be in no
/// runlist once the teardown returned.
fn kill(m: &Machine, seed: u64, qs: &mut [Q<'_>], victim: &UmsProcess, vi: usize) -> KillSnapshot {
    ok(m, seed, m.kill_process(victim));
    let queues: Vec<usize> = (0..qs.len()).filter(|&i| qs[i].process == vi).collect();
    let logs = queues.iter().map(|&i| qs[i].words()).collect();
    let completed = queues
        .iter()
        .map(|&i| qs[i].uq.as_ref().unwrap().completed())
        .collect();
    let live = runlisted(m);
    for &i in &queues {
        assert!(
            !live.contains(&qs[i].queue_id),
            "seed {seed:#x}: killed queue {i} (id {}) still in a runlist after kill_process \
             returned",
            qs[i].queue_id
        );
        qs[i].check_prefix(seed, i);
    }
    KillSnapshot {
        queues,
        logs,
        completed,
    }
}

/// Nothing of the killed process ran after its teardown (UM-18).
fn check_killed(m: &Machine, seed: u64, qs: &[Q<'_>], s: &KillSnapshot) {
    let live = runlisted(m);
    for (n, &i) in s.queues.iter().enumerate() {
        let q = &qs[i];
        assert_eq!(
            q.words(),
            s.logs[n],
            "seed {seed:#x}: killed queue {i} (id {}) ran after kill_process returned",
            q.queue_id
        );
        let done = q.uq.as_ref().unwrap().completed();
        assert_eq!(
            done, s.completed[n],
            "seed {seed:#x}: killed queue {i} progressed after its teardown"
        );
        assert!(
            !live.contains(&q.queue_id),
            "seed {seed:#x}: killed queue {i} runlisted"
        );
    }
}

/// No bug check, simulation fault or DMA fault; no runlisted queue faulted.
fn check_clean(m: &Machine, seed: u64) {
    assert!(
        m.bugcheck().is_none() && m.fault().is_none(),
        "seed {seed:#x}: bug check {:?}, fault {:?}; driver log tail {}",
        m.bugcheck(),
        m.fault(),
        tail_log(m)
    );
    // UM-14: power-downs happen at random points; the driver never touches the function in
    // D3hot.
    assert_eq!(
        m.d3hot_accesses(0).ok(),
        Some(0),
        "seed {seed:#x}: register accesses in D3hot"
    );
    let faulted: Vec<_> = m
        .device(0)
        .unwrap()
        .queues()
        .into_iter()
        .filter(|s| s.fault.is_some())
        .collect();
    assert!(
        faulted.is_empty(),
        "seed {seed:#x}: faulted queues {faulted:?}"
    );
    let dma_faults = m
        .notifications(0)
        .iter()
        .filter(|p| {
            matches!(p.notification, Notification::Other { interrupt_type }
                if interrupt_type == DXGK_INTERRUPT_DMA_FAULTED)
        })
        .count();
    assert_eq!(dma_faults, 0, "seed {seed:#x}: DMA faults reported");
}

/// Normal exits of the survivors: half of their queues closed by the UMD (UM-17 from the
/// UMD's side), the rest left to the OS's exit; then the observer. Leak check against the
/// baseline.
fn exit_everyone(
    m: &Machine,
    seed: u64,
    qs: &mut [Q<'_>],
    procs: &[UmsProcess],
    victim: usize,
    obs: &UmsProcess,
    baseline: (usize, Vec<u32>),
) {
    for (i, q) in qs.iter_mut().enumerate() {
        let Some(uq) = q.uq.take() else { continue };
        if q.process == victim {
            // The killed process's UMD is gone with it: it runs no more code.
            std::mem::forget(uq);
        } else if i % 2 == 0 {
            okk(m, seed, uq.close());
        } else {
            std::mem::forget(uq);
        }
    }
    for (pi, p) in procs.iter().enumerate() {
        if pi != victim {
            ok(m, seed, m.exit_process(p));
        }
    }
    ok(m, seed, m.exit_process(obs));
    assert_eq!(
        m.contiguous_allocations(0),
        baseline.0,
        "seed {seed:#x}: the KMD did not free what it allocated for the queues"
    );
    let live = runlisted(m);
    assert_eq!(
        live, baseline.1,
        "seed {seed:#x}: queues left in runlists (before any process: {:?})",
        baseline.1
    );
    check_clean(m, seed);
}

/// The end of a run with a killed process: nothing of it ran after its teardown, the machine
/// is clean; the OS's events and their [`victimised_f1_d3`] counts.
fn settled(
    m: &Machine,
    seed: u64,
    qs: &[Q<'_>],
    snapshot: &KillSnapshot,
) -> (Vec<UmsEvent>, (usize, usize, usize)) {
    check_killed(m, seed, qs, snapshot);
    check_clean(m, seed);
    let ev = m.ums_events(0);
    let counts = victimised_f1_d3(&ev);
    (ev, counts)
}

/// How often the run victimised a queue (disconnected its doorbell), moved an engine to F1 and
/// put the adapter in D3.
fn victimised_f1_d3(ev: &[UmsEvent]) -> (usize, usize, usize) {
    (
        count(ev, |e| matches!(e, UmsEvent::CallbackDisconnect { .. })),
        count(ev, |e| matches!(e, UmsEvent::SetFState { fstate: 1, .. })),
        count(ev, |e| matches!(e, UmsEvent::SetPowerState { state: 4 })),
    )
}

fn count(ev: &[UmsEvent], f: impl Fn(&UmsEvent) -> bool) -> usize {
    ev.iter().filter(|e| f(e)).count()
}

// ---------------------------------------------------------------------------------------------
// Step mode.

const PROCESSES: usize = 8;
const QUEUES: usize = 1024;
const DOORBELLS: u32 = 16;
/// GPU ticks of idleness before an engine asks for F1 (20 step rounds).
const F1_TICKS: u64 = 20 * 1000;

#[derive(Default, Debug)]
struct Stats {
    submissions: u64,
    blocked_submissions: u64,
    suspends: u64,
    resumes: u64,
    power_downs: u64,
    power_down_refused: u64,
    power_ups: u64,
    checkpoints: u64,
    victim_pending_at_kill: u64,
}

/// UM-11: suspends queue `i`'s context.
fn suspend(m: &Machine, seed: u64, q: &mut Q<'_>, procs: &[UmsProcess], st: &mut Stats) {
    let d0 = m.power_state(0) == Some(Power::D0);
    ok(m, seed, m.suspend_context(&procs[q.process], q.context));
    q.suspended = true;
    q.frozen = d0.then(|| q.words());
    st.suspends += 1;
}

/// UM-12: resumes queue `i`'s context; nothing of it ran while it was suspended (UM-11).
fn resume(m: &Machine, seed: u64, q: &mut Q<'_>, i: usize, procs: &[UmsProcess], st: &mut Stats) {
    if let Some(f) = q.frozen.take() {
        assert_eq!(
            q.words(),
            f,
            "seed {seed:#x}: queue {i} (id {}) ran while its context was suspended",
            q.queue_id
        );
    }
    ok(m, seed, m.resume_context(&procs[q.process], q.context));
    q.suspended = false;
    st.resumes += 1;
}

/// Resumes every context this test suspended.
fn resume_all(m: &Machine, seed: u64, qs: &mut [Q<'_>], procs: &[UmsProcess], st: &mut Stats) {
    for (i, q) in qs.iter_mut().enumerate() {
        if q.suspended && q.uq.is_some() {
            resume(m, seed, q, i, procs, st);
        }
    }
}

fn submit_one(m: &Machine, seed: u64, q: &mut Q<'_>, i: usize, st: &mut Stats) -> bool {
    if q.submitted >= q.slots {
        return false;
    }
    let uq = q.uq.as_ref().unwrap();
    let outstanding = uq.last_submitted() - uq.completed();
    let full = (outstanding + 1) * BATCH > u64::from(RING);
    // A full ring makes the UMD wait for the GPU (step mode runs the machine meanwhile); a
    // suspended queue would never make room.
    if full && q.suspended {
        return false;
    }
    let k = q.submitted + 1;
    let cmds = q.batch(k);
    let v = okk(m, seed, q.uq().submit(&cmds));
    assert_eq!(v, k, "seed {seed:#x}: queue {i}: progress value");
    q.submitted = k;
    st.submissions += 1;
    if full {
        st.blocked_submissions += 1;
    }
    true
}

fn run_step(seed: u64, scale: u64) {
    let _guard = SeedGuard {
        test: "ums_stress (step)",
        seed,
        scale,
    };
    let steps = 3000 * scale;
    let slots = 64 + 48 * scale;
    let machine = stress_machine(Mode::Step, DOORBELLS, F1_TICKS);
    let m = &machine;
    let t0 = std::time::Instant::now();
    let mut rng = Rng(seed | 1);
    let baseline = (m.contiguous_allocations(0), runlisted(m));
    let obs = ok(m, seed, m.create_process(0));
    let procs: Vec<UmsProcess> = (0..PROCESSES)
        .map(|_| ok(m, seed, m.create_process(0)))
        .collect();
    let mut qs = create_queues(m, seed, &mut rng, &obs, &procs, QUEUES / PROCESSES, slots);
    assert_eq!(qs.len(), QUEUES);
    let setup = t0.elapsed();
    for node in 0..2 {
        assert!(
            qs.iter()
                .any(|q| q.uq.as_ref().unwrap().config().node == node),
            "seed {seed:#x}: both engines"
        );
    }
    let victim = rng.below(PROCESSES as u64) as usize;
    let kill_at = steps / 3 + rng.below(steps / 3);
    let checkpoint_every = steps / 6;
    // A few hot queues get most submissions: they wrap their rings and hit back-pressure.
    let hot: Vec<usize> = (0..48).map(|_| rng.below(QUEUES as u64) as usize).collect();
    let mut st = Stats::default();
    let mut snapshot = None;
    for step in 0..steps {
        if step == kill_at {
            // In the middle of its submissions: a burst on several of its queues, not run.
            let mine: Vec<usize> = (0..QUEUES).filter(|&i| qs[i].process == victim).collect();
            for _ in 0..24 {
                let i = mine[rng.below(mine.len() as u64) as usize];
                submit_one(m, seed, &mut qs[i], i, &mut st);
            }
            st.victim_pending_at_kill = mine
                .iter()
                .map(|&i| {
                    let uq = qs[i].uq.as_ref().unwrap();
                    uq.last_submitted() - uq.completed()
                })
                .sum();
            snapshot = Some(kill(m, seed, &mut qs, &procs[victim], victim));
        }
        let killed = snapshot.is_some();
        let live = |i: usize, qs: &[Q<'_>]| !(killed && qs[i].process == victim);
        match rng.below(100) {
            0..=57 => {
                let i = if rng.below(2) == 0 {
                    hot[rng.below(hot.len() as u64) as usize]
                } else {
                    rng.below(QUEUES as u64) as usize
                };
                if live(i, &qs) {
                    // Mostly 1-3 batches; sometimes more than the ring holds (the UMD waits
                    // for the GPU to make room, UM-16 back-pressure).
                    let n = if rng.below(12) == 0 {
                        14
                    } else {
                        1 + rng.below(3)
                    };
                    for _ in 0..n {
                        submit_one(m, seed, &mut qs[i], i, &mut st);
                    }
                }
            }
            58..=73 => ok(m, seed, m.run_steps(1 + rng.below(8) as usize)),
            74..=80 => {
                let i = rng.below(QUEUES as u64) as usize;
                if live(i, &qs) && !qs[i].suspended {
                    suspend(m, seed, &mut qs[i], &procs, &mut st);
                }
            }
            81..=89 => {
                // Resume the suspended queue found first from a random start.
                let start = rng.below(QUEUES as u64) as usize;
                if let Some(i) = (0..QUEUES)
                    .map(|d| (start + d) % QUEUES)
                    .find(|&i| qs[i].suspended && live(i, &qs))
                {
                    resume(m, seed, &mut qs[i], i, &procs, &mut st);
                }
            }
            90..=92 => {
                if ok(m, seed, m.power_down(0)) {
                    st.power_downs += 1;
                } else {
                    st.power_down_refused += 1;
                }
            }
            93..=94 => {
                ok(m, seed, m.power_up(0));
                st.power_ups += 1;
            }
            95..=96 => {
                // Idle long enough for both engines to ask for F1 (UM-13).
                ok(m, seed, m.run_until_idle());
                ok(m, seed, m.run_steps(25));
            }
            _ => ok(m, seed, m.run_steps(1)),
        }
        if step % checkpoint_every == checkpoint_every - 1 {
            // Everything submitted so far completes once resumed; then the GPU is idle and
            // the OS powers it down (UM-14); the next submission wakes it.
            resume_all(m, seed, &mut qs, &procs, &mut st);
            ok(m, seed, m.run_until_idle());
            for (i, q) in qs.iter().enumerate() {
                if let (Some(uq), true) = (&q.uq, live(i, &qs)) {
                    assert_eq!(
                        uq.completed(),
                        q.submitted,
                        "seed {seed:#x}: queue {i} did not complete at checkpoint {step}"
                    );
                    q.check_complete(seed, i);
                }
            }
            // The pages' OS disconnects every doorbell first, so the idle GPU powers down; on
            // 24H2 a connected doorbell holds its engine's power component and it stays in D0.
            let down = ok(m, seed, m.power_down(0));
            let disconnects = m.os_config().windows.reading().os_disconnects
                == rvgpu_simos::machine::answers::OsDisconnects::OnPowerAndReset;
            assert!(
                down || !disconnects,
                "seed {seed:#x}: idle GPU not powered down at step {step}"
            );
            if down {
                st.power_downs += 1;
            } else {
                st.power_down_refused += 1;
            }
            st.checkpoints += 1;
            check_clean(m, seed);
        }
    }
    let snapshot = snapshot.expect("the victim was killed");
    // Run everything else to completion.
    resume_all(m, seed, &mut qs, &procs, &mut st);
    ok(m, seed, m.run_until_idle());
    for (i, q) in qs.iter().enumerate() {
        if q.process == victim {
            continue;
        }
        let uq = q.uq.as_ref().unwrap();
        if q.submitted > 0 {
            okk(m, seed, uq.wait(q.submitted));
        }
        assert_eq!(uq.completed(), q.submitted, "seed {seed:#x}: queue {i}");
        assert_eq!(
            m.hw_queue_progress(0, q.queue),
            Some((q.submitted, q.submitted)),
            "seed {seed:#x}: queue {i}: OS's (last queued, progress fence) (UM-16)"
        );
        assert_eq!(
            uq.path(),
            SubmissionPath::UserMode,
            "seed {seed:#x}: queue {i} fell back"
        );
        q.check_complete(seed, i);
    }
    let (ev, (victimised, f1, d3)) = settled(m, seed, &qs, &snapshot);
    let killed = count(&ev, |e| matches!(e, UmsEvent::DeviceError { .. }));
    eprintln!(
        "ums_stress step: seed {seed:#x} scale {scale}: {st:?}; victimised {victimised}, F1 {f1}, \
         D3 {d3}; killed process {victim} at step {kill_at}; setup {setup:?}, run {:?}",
        t0.elapsed() - setup
    );
    assert!(st.submissions > steps / 2, "seed {seed:#x}: {st:?}");
    // F1 and D3 come when the OS disconnects the doorbells (the pages); on 24H2 a connected
    // doorbell holds its engine's power component.
    let reading = m.os_config().windows.reading();
    let disconnects =
        reading.os_disconnects == rvgpu_simos::machine::answers::OsDisconnects::OnPowerAndReset;
    assert!(
        victimised > 0 && (!disconnects || (f1 > 0 && d3 > 0)),
        "seed {seed:#x}: exercised too little"
    );
    assert!(
        st.suspends > 0 && st.blocked_submissions > 0,
        "seed {seed:#x}: {st:?}"
    );
    assert!(
        st.victim_pending_at_kill > 0,
        "seed {seed:#x}: the victim had nothing in flight"
    );
    // The kill puts the victim's device in error under every reading: 24H2 flushes it into
    // error before any teardown (K `DXGPROCESS::Destroy` @0x14034D4E0), the pages' order
    // stops its queues first.
    assert_eq!(killed, 1);
    exit_everyone(m, seed, &mut qs, &procs, victim, &obs, baseline);
}

/// UM-02, UM-11, UM-12, UM-13, UM-14, UM-16, UM-18, UM-19, UM-20: 1,024 user-mode queues on
/// 16 doorbells, 8 processes, both engines; random submissions, suspends and resumes, F1,
/// D3, one process killed mid-run; every survivor's submission ran exactly once and in order,
/// nothing of the killed process ran after its teardown, nothing leaked. Seed:
/// `RVGPU_STRESS_SEED`, length: `RVGPU_STRESS_SCALE`.
#[test]
fn ums_stress_1024_queues_16_doorbells_step() {
    let seed = env_u64("RVGPU_STRESS_SEED", DEFAULT_SEED);
    let scale = env_u64("RVGPU_STRESS_SCALE", 1).max(1);
    run_step(seed, scale);
}

// ---------------------------------------------------------------------------------------------
// Threaded.

/// The threaded variant (UM-11, UM-12, UM-13, UM-14, UM-16, UM-18, UM-19, UM-20): 4
/// processes × 16 user-mode queues on 4 doorbells; three survivors submit from their own
/// threads (the UMD waits for ring space itself), a chaos thread suspends and resumes their
/// contexts (checking nothing of a suspended one runs) and asks for D3 (granted only when
/// idle), engines ask for F1 when idle for 2 ms, and the fourth process is killed with work
/// in flight while the others run. Same end invariants as the step run; timing-dependent, so
/// the seed reproduces the choices but not the interleaving, and it asserts no F1/D3 count.
#[test]
fn ums_stress_threaded() {
    let seed = env_u64("RVGPU_STRESS_SEED", DEFAULT_SEED);
    let scale = env_u64("RVGPU_STRESS_SCALE", 1).max(1);
    let _guard = SeedGuard {
        test: "ums_stress (threaded)",
        seed,
        scale,
    };
    const NPROC: usize = 4;
    const PER: usize = 16;
    let victim = NPROC - 1;
    let rounds = 120 * scale;
    let machine = stress_machine(Mode::Threaded, 4, 200_000);
    let m = &machine;
    let mut rng = Rng(seed | 1);
    let baseline = (m.contiguous_allocations(0), runlisted(m));
    let obs = ok(m, seed, m.create_process(0));
    let procs: Vec<UmsProcess> = (0..NPROC)
        .map(|_| ok(m, seed, m.create_process(0)))
        .collect();
    let slots = rounds + 8;
    let qs = create_queues(m, seed, &mut rng, &obs, &procs, PER, slots);
    // Contexts the chaos thread may suspend (the survivors'), with a view of their logs.
    let contexts: Vec<(UmsProcess, KmtHandle, SimMem, u64, u32)> = qs
        .iter()
        .filter(|q| q.process != victim)
        .map(|q| {
            (
                procs[q.process],
                q.context,
                q.log.clone(),
                q.log_off,
                q.queue_id,
            )
        })
        .collect();
    let log_of = |c: &(UmsProcess, KmtHandle, SimMem, u64, u32)| -> Vec<u64> {
        (0..=slots).map(|k| c.2.load(c.3 + 8 * k)).collect()
    };
    let mut per_proc: Vec<Vec<(usize, Q<'_>)>> = (0..NPROC).map(|_| Vec::new()).collect();
    for (i, q) in qs.into_iter().enumerate() {
        per_proc[q.process].push((i, q));
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    let arrived = std::sync::atomic::AtomicU64::new(0);
    let (mut qs, snapshot, chaos_stats) = std::thread::scope(|s| {
        let workers: Vec<_> = per_proc
            .into_iter()
            .enumerate()
            .map(|(pi, mut mine)| {
                let wseed = seed ^ (0x9E37_79B9 * (pi as u64 + 1));
                let arrived = &arrived;
                s.spawn(move || {
                    let mut rng = Rng(wseed | 1);
                    let n = if pi == victim { rounds / 2 } else { rounds };
                    for r in 0..n * mine.len() as u64 {
                        let j = rng.below(mine.len() as u64) as usize;
                        let (i, q) = &mut mine[j];
                        if q.submitted < q.slots {
                            let k = q.submitted + 1;
                            let cmds = q.batch(k);
                            let v = okk(m, seed, q.uq().submit(&cmds));
                            assert_eq!(v, k, "seed {seed:#x}: queue {i}");
                            q.submitted = k;
                        }
                        if pi != victim && r % 64 == 63 {
                            // Common idle windows (F1 requests, power-downs): each survivor
                            // waits for its work, meets the others (bounded: a panicking
                            // thread must not hang the rest), then idles.
                            for (_, q) in mine.iter() {
                                if q.submitted > 0 {
                                    okk(m, seed, q.uq.as_ref().unwrap().wait(q.submitted));
                                }
                            }
                            let phase = r / 64 + 1;
                            arrived.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                            let t = std::time::Instant::now();
                            while arrived.load(std::sync::atomic::Ordering::Acquire)
                                < phase * (NPROC as u64 - 1)
                                && t.elapsed() < Duration::from_secs(10)
                            {
                                std::thread::sleep(Duration::from_micros(200));
                            }
                            std::thread::sleep(Duration::from_millis(5));
                        }
                    }
                    // The victim stops here (its threads are terminated before the OS
                    // tears it down) with work in flight.
                    mine
                })
            })
            .collect();
        let chaos = {
            let (stop, contexts, log_of) = (&stop, &contexts, &log_of);
            s.spawn(move || {
                let mut rng = Rng((seed ^ 0xC4A0_5000) | 1);
                // (context index, its log when suspended in D0).
                let mut suspended: Vec<(usize, Option<Vec<u64>>)> = Vec::new();
                let mut st = Stats::default();
                while !stop.load(std::sync::atomic::Ordering::Acquire) {
                    match rng.below(10) {
                        0..=2 if suspended.len() < 6 => {
                            let c = rng.below(contexts.len() as u64) as usize;
                            if !suspended.iter().any(|s| s.0 == c) {
                                // Only this thread powers down: D0 now stays D0 until it
                                // does, and then an OS-suspended context stays suspended.
                                let d0 = m.power_state(0) == Some(Power::D0);
                                ok(m, seed, m.suspend_context(&contexts[c].0, contexts[c].1));
                                suspended.push((c, d0.then(|| log_of(&contexts[c]))));
                                st.suspends += 1;
                            }
                        }
                        3..=5 if !suspended.is_empty() => {
                            let (c, frozen) =
                                suspended.swap_remove(rng.below(suspended.len() as u64) as usize);
                            if let Some(f) = frozen {
                                assert_eq!(
                                    log_of(&contexts[c]),
                                    f,
                                    "seed {seed:#x}: queue id {} ran while suspended (UM-11)",
                                    contexts[c].4
                                );
                            }
                            ok(m, seed, m.resume_context(&contexts[c].0, contexts[c].1));
                            st.resumes += 1;
                        }
                        6..=7 => {
                            if ok(m, seed, m.power_down(0)) {
                                st.power_downs += 1;
                            } else {
                                st.power_down_refused += 1;
                            }
                        }
                        _ => {}
                    }
                    std::thread::sleep(Duration::from_micros(500));
                }
                for (c, _) in suspended {
                    ok(m, seed, m.resume_context(&contexts[c].0, contexts[c].1));
                    st.resumes += 1;
                }
                st
            })
        };
        let mut workers = workers.into_iter().enumerate();
        let mut all: Vec<(usize, Q<'_>)> = Vec::new();
        let snapshot;
        let mut rest = Vec::new();
        for (pi, w) in workers.by_ref() {
            if pi == victim {
                let mine = w.join().expect("victim thread");
                all.extend(mine);
            } else {
                rest.push(w);
            }
        }
        // Kill it while the others run (UM-18).
        all.sort_by_key(|(i, _)| *i);
        {
            let mut v: Vec<Q<'_>> = all.drain(..).map(|(_, q)| q).collect();
            let vs = kill(m, seed, &mut v, &procs[victim], victim);
            // The victim's queues first: the snapshot's indices are their positions.
            all = v.into_iter().map(|q| (0, q)).collect();
            snapshot = vs;
        }
        for w in rest {
            all.extend(w.join().expect("worker thread"));
        }
        stop.store(true, std::sync::atomic::Ordering::Release);
        let cst = chaos.join().expect("chaos thread");
        (all, snapshot, cst)
    });
    // Indices from here on are positions: the victim's queues first (as in the snapshot).
    let mut qs: Vec<Q<'_>> = qs.drain(..).map(|(_, q)| q).collect();
    for (i, q) in qs.iter().enumerate() {
        if q.process == victim {
            continue;
        }
        let uq = q.uq.as_ref().unwrap();
        okk(m, seed, uq.wait(q.submitted));
        assert_eq!(uq.completed(), q.submitted, "seed {seed:#x}: queue {i}");
        assert_eq!(
            m.hw_queue_progress(0, q.queue),
            Some((q.submitted, q.submitted)),
            "seed {seed:#x}: queue {i} (UM-16)"
        );
        q.check_complete(seed, i);
    }
    let (_, (victimised, f1, d3)) = settled(m, seed, &qs, &snapshot);
    let fallbacks = qs
        .iter()
        .filter(|q| q.uq.as_ref().unwrap().path() == SubmissionPath::KernelMode)
        .count();
    eprintln!(
        "ums_stress threaded: seed {seed:#x} scale {scale}: chaos {chaos_stats:?}; victimised \
         {victimised}, F1 {f1}, D3 {d3}, kernel-mode fallbacks {fallbacks}"
    );
    assert!(victimised > 0 && chaos_stats.suspends > 0);
    exit_everyone(m, seed, &mut qs, &procs, victim, &obs, baseline);
}

under_the_pages!();
