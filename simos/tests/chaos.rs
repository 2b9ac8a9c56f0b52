//! A chaos run: the whole stack under sustained mixed load with faults injected at random,
//! threaded, with invariants checked as it goes and a figure line at the end.
//!
//! **Load.** `WORKERS` threads, each living through one process after another: a user-mode
//! queue (on node `worker % 2`) with its doorbell, a kernel-mode context, allocations of 4 KiB
//! to 256 KiB made as it goes (residency: each is made resident when created and leaves with
//! its process), its own open handle on a native fence that a hub process created shareable
//! (so every fence is shared across processes), a kernel-mode hardware queue and a monitored
//! fence. Each round is a user-mode FILL waited for, a new allocation (none every other time),
//! a FILL on the kernel-mode queue waited for, a CPU signal of the shared fence waited for through
//! the hub's instance, or a CPU signal of the monitored fence waited for. A process ends by a
//! normal exit with its last submission in flight, a kill with its last submission in flight,
//! or a clean close and exit.
//!
//! **Faults**, one every few tens of milliseconds from the seeded generator: a lost interrupt
//! delivery; a window of late interrupts (each delivery held back up to 2 ms, so records of
//! several queues, processes and fences group into one ISR pass); a guilty process whose user-mode queue hangs its engine until the OS's TDR resets
//! it (its device then in error, the guilty process killed); an engine reset with no hang
//! (the TDR sequence forced on a node: whatever ran there may end in device error); a pool
//! allocation of the KMD that fails (Driver Verifier's low-resources simulation, one failure
//! point), during which a refused creation or submission is the expected outcome. The KMD
//! asks the pool for memory only when one of its tables outgrows the room it kept (it never
//! gives room back) or on a path that gathers a list (a doorbell taken from another process),
//! so once the run has reached its peak few operations allocate at all: a window stays open
//! until the KMD's next allocation has failed, or until the workers have taken enough steps for
//! each to have begun a process (then it counts as idle), and the workers join one by one, each
//! after a window closed, while the tables grow. Windows are measured in the workers' steps,
//! never in time, so a loaded host stretches them with the work.
//!
//! **Invariants.** Checked continuously: no bug check and no simulation fault (after every
//! fault and by every worker after every round); every CPU wait is released (a FILL's wait
//! through the OS returns unless its process's device is in error; a fence's waiter is
//! satisfied within 10 s), judged by the wait's outcome, never by the value read afterwards:
//! `lost` counts the ones that were not, and must stay 0. Every refusal is counted by its
//! cause: a low-resources window open during it, or its process's device in error; one with
//! neither (a process creation refused outside every window, say: a record or memory an
//! earlier death kept) is unexplained and must not happen. At the end, once every process
//! exited and the hub destroyed its fences: the OS's devices, contexts, queues, doorbells,
//! allocations, fences, paging queues, VA ranges and GPU processes and the machine's system
//! memory, fence pages included, are back to what they were before the first worker started,
//! and the driver never answered `DxgkDdiDestroyProcess` with a failure (the triage line 24H2
//! writes for one).
//!
//! **Figures.** One line: operations, faults by kind, waits satisfied, lost, peak and final
//! system memory. `RVGPU_CHAOS_SECS` sets the length (default 8, CI 60; any length), and
//! `RVGPU_CHAOS_SEED` the seed (decimal or `0x` hex; printed): the fault schedule and every
//! worker's choices follow from it, the interleaving from the threads.
//!
//! Not injected here: the adapter-wide reset on its own and surprise removal with re-arrival
//! (both need the machine to itself; their suites: tdr.rs, faults.rs, adapter_life.rs).
//! The races this run found have their own tests (races.rs).

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::*;
use rvgpu_device::IrqDelay;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::{
    LowResources, Machine, MachineConfig, Mode, NativeFenceDesc, UmsProcess, WaitOutcome,
};
use rvgpu_umd::kmt::Kmt;
use rvgpu_umd::submit::{KernelQueue, UserQueue};

const WORKERS: usize = 12;
const WAIT: Duration = Duration::from_secs(10);
/// How many steps (a process creation tried, a round begun) each joined worker takes before a
/// low-resources window that saw no KMD pool allocation closes as idle: a process lives 4 to 27
/// rounds, so about one new process per worker, the operation that grows the KMD's tables.
const WINDOW_STEPS: u64 = 16;

/// What each worker (and, last, the fault thread) is doing, for the watchdog's report: an
/// index into [`STEPS`]. Read and written without a lock, so a deadlocked machine cannot hide it.
static STEP: [AtomicU8; WORKERS + 1] = [const { AtomicU8::new(0) }; WORKERS + 1];

/// The names of the steps [`STEP`] records.
const STEPS: [&str; 14] = [
    "idle",
    "creating a process",
    "setting a process up",
    "user-mode FILL and its wait",
    "making an allocation",
    "kernel-mode queue FILL and its wait",
    "monitored fence signal and wait",
    "native fence signal and wait",
    "destroying fences",
    "killing a process",
    "exiting with work in flight",
    "closing and exiting",
    "injecting a fault",
    "past its loop (the fault thread: tearing down)",
];

fn step(who: usize, s: usize) {
    STEP[who].store(s as u8, Ordering::Relaxed);
}

/// Ends the run when it overstays `limit`: a hung run must fail with what each thread was
/// doing, not hold the test command until CI's own limit.
fn watchdog(limit: Duration) {
    let t0 = Instant::now();
    loop {
        if t0.elapsed() > limit {
            let steps: Vec<_> = STEP
                .iter()
                .enumerate()
                .map(|(i, s)| format!("{i}: {}", STEPS[usize::from(s.load(Ordering::Relaxed))]))
                .collect();
            eprintln!("chaos: still running after {limit:?}; threads (the last is the fault thread): {steps:#?}");
            std::process::abort();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Counts one when dropped, on a return or an unwind alike.
struct CountOnDrop<'a>(&'a AtomicU64);

impl Drop for CountOnDrop<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// Sets its flag when dropped, on a return or an unwind alike.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// xorshift64*: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().map_or(default, |v| {
        let v = v.trim();
        match v.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).unwrap_or(default),
            None => v.parse().unwrap_or(default),
        }
    })
}

/// What the run counted.
#[derive(Default)]
struct Counts {
    ops: AtomicU64,
    processes: AtomicU64,
    refused: AtomicU64,
    satisfied: AtomicU64,
    lost: AtomicU64,
    in_error: AtomicU64,
    kills: AtomicU64,
    exits_in_flight: AtomicU64,
    lost_interrupts: AtomicU64,
    late_windows: AtomicU64,
    hangs: AtomicU64,
    engine_resets: AtomicU64,
    pool_windows: AtomicU64,
    pool_failed: AtomicU64,
    /// Low-resources windows that closed at their limit without the KMD asking for memory.
    pool_idle: AtomicU64,
    /// Refusals put down to a low-resources window: no more than the allocations the windows
    /// failed, each failure refusing one operation at most.
    low_refused: AtomicU64,
    /// Refusals for which the run knows no cause ([`Cause::Unknown`]): must stay 0.
    unexplained: AtomicU64,
    /// Refusals of a process creation that began and ended outside every low-resources
    /// window: must stay 0.
    refused_outside: AtomicU64,
    /// Odd while a low-resources window is open; bumped at its opening and its closing.
    window: AtomicU64,
    /// Every worker step: a process creation tried or a round begun (what a window lasts).
    steps: AtomicU64,
    /// Workers that have begun.
    joined: AtomicU64,
    /// Workers that have ended (a failed check in one ends the windows too).
    gone: AtomicU64,
    /// Every refusal by its cause, what was refused and the status or error it came with.
    why: Mutex<BTreeMap<String, u64>>,
}

/// Why an operation was refused, as far as the run can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    /// A low-resources window of the KMD's pool was open during it.
    LowResources,
    /// Its process's device was put in error (a TDR blamed it, or it faulted): the OS
    /// refuses the device's work from then on.
    DeviceInError,
    /// Neither: a leak, a rule the run does not expect, or a defect.
    Unknown,
}

impl Cause {
    /// The cause of a refusal of `p`'s (`None`: before it had a process) operation that began
    /// when the window counter read `since`.
    fn of(m: &Machine, c: &Counts, p: Option<&UmsProcess>, since: u64) -> Self {
        if !since.is_multiple_of(2) || c.window.load(Ordering::Acquire) != since {
            Self::LowResources
        } else if p.is_some_and(|p| in_error(m, p)) {
            Self::DeviceInError
        } else {
            Self::Unknown
        }
    }

    fn text(self) -> &'static str {
        match self {
            Self::LowResources => "in a KMD low-resources window",
            Self::DeviceInError => "its device in error",
            Self::Unknown => "NO KNOWN CAUSE",
        }
    }
}

impl Counts {
    fn add(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// A refusal of `what` for `cause`, with the error it came with.
    fn refuse(&self, cause: Cause, what: &str, e: &dyn std::fmt::Debug) {
        Counts::add(&self.refused);
        if cause == Cause::LowResources {
            Counts::add(&self.low_refused);
        }
        if cause == Cause::Unknown {
            Counts::add(&self.unexplained);
            eprintln!("refused with no known cause: {what}: {e:?}");
        }
        *lock_counts(&self.why)
            .entry(format!("{}: {what}: {e:?}", cause.text()))
            .or_default() += 1;
    }
}

fn lock_counts(
    m: &Mutex<BTreeMap<String, u64>>,
) -> std::sync::MutexGuard<'_, BTreeMap<String, u64>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn halted(m: &Machine, what: &str) {
    if let Some(f) = m.fault() {
        panic!("{what}: machine fault {f}\n{}", diagnostics(m));
    }
}

/// Whether `p`'s device was put in error (a TDR blamed it, or it faulted).
fn in_error(m: &Machine, p: &UmsProcess) -> bool {
    device_error(&m.tdr_events(0), p)
}

/// Counts what became of worker `w`'s FILL `submitted`, judged by the CPU wait for it through
/// the OS (`wait`, the UMD's): refused, released, its device put in error (then `true`: the
/// worker is done with the process), or lost. The wait's release decides, never the progress
/// value read afterwards. `since`: the window counter before the submission.
#[allow(clippy::too_many_arguments)]
fn count_fill<E: std::fmt::Debug, F: std::fmt::Debug>(
    m: &Machine,
    p: &UmsProcess,
    c: &Counts,
    since: u64,
    submitted: Result<u64, E>,
    wait: impl FnOnce(u64) -> Result<(), F>,
    w: usize,
    what: &str,
) -> bool {
    let v = match submitted {
        Ok(v) => v,
        Err(e) => {
            c.refuse(Cause::of(m, c, Some(p), since), what, &e);
            return false;
        }
    };
    match wait(v) {
        Ok(()) => Counts::add(&c.satisfied),
        Err(_) if in_error(m, p) => {
            Counts::add(&c.in_error);
            return true;
        }
        Err(e) => {
            Counts::add(&c.lost);
            eprintln!("lost: worker {w} {what} {v}: {e:?}\n{}", diagnostics(m));
        }
    }
    false
}

/// Counts what became of worker `w`'s CPU signal of a fence to `v` (`signalled`) and the
/// wait for it: refused, satisfied, or lost. `since`: the window counter before the signal.
#[allow(clippy::too_many_arguments)]
fn count_wait<E: std::fmt::Debug, F: std::fmt::Debug>(
    (m, p): (&Machine, &UmsProcess),
    c: &Counts,
    since: u64,
    signalled: Result<(), E>,
    wait: impl FnOnce() -> Result<WaitOutcome, F>,
    w: usize,
    what: &str,
    v: u64,
) {
    let cause = || Cause::of(m, c, Some(p), since);
    if let Err(e) = signalled {
        return c.refuse(cause(), &format!("{what} (its signal)"), &e);
    }
    match wait() {
        Ok(WaitOutcome::Satisfied) => Counts::add(&c.satisfied),
        Ok(o) => {
            Counts::add(&c.lost);
            eprintln!("lost: worker {w} {what} {v}: {o:?}");
        }
        Err(e) => c.refuse(cause(), what, &e),
    }
}

/// One worker: processes one after another until `stop`.
fn worker(
    m: &Machine,
    w: usize,
    seed: u64,
    hub: &rvgpu_simos::NativeFence,
    next_value: &AtomicU64,
    stop: &AtomicBool,
    c: &Counts,
) {
    let mut rng = Rng::new(seed ^ (w as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let node = (w % 2) as u32;
    let _gone = CountOnDrop(&c.gone);
    // Workers join one by one, each after a low-resources window closed, so the KMD's tables
    // grow while windows are open.
    while c.pool_windows.load(Ordering::Acquire) < w as u64 && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(1));
    }
    Counts::add(&c.joined);
    while !stop.load(Ordering::Relaxed) {
        step(w, 1);
        Counts::add(&c.steps);
        let before = c.window.load(Ordering::Acquire);
        let created = m.create_process(0);
        let Ok(p) = created else {
            if let Err(e) = &created {
                c.refuse(Cause::of(m, c, None, before), "process creation", e);
            }
            // Outside a window the adapter must take every new process: a refusal there is
            // a record or memory an earlier death did not give back.
            if before.is_multiple_of(2) && c.window.load(Ordering::Acquire) == before {
                Counts::add(&c.refused_outside);
                if let Err(e) = &created {
                    eprintln!("refused outside a window: worker {w}: {e}");
                }
            }
            std::thread::sleep(Duration::from_millis(2));
            continue;
        };
        Counts::add(&c.processes);
        let k = m.kmt(&p);
        step(w, 2);
        let since = c.window.load(Ordering::Acquire);
        let setup = (|| {
            let step = |what: &'static str| move |e: &dyn std::fmt::Debug| (what, format!("{e:?}"));
            let buf = k
                .create_allocation(4096)
                .map_err(|e| step("allocation")(&e))?;
            let q = UserQueue::new(k, &config(node)).map_err(|e| step("user-mode queue")(&e))?;
            let ctx = k.create_context(node).map_err(|e| step("context")(&e))?;
            let f = m
                .open_native_fence(hub, p.pid)
                .map_err(|e| step("fence open")(&e))?;
            let kq =
                KernelQueue::new(k, &config(node)).map_err(|e| step("kernel-mode queue")(&e))?;
            let mf = m
                .create_monitored_fence(0, p.pid, 0)
                .map_err(|e| step("monitored fence")(&e))?;
            Ok((buf, q, ctx, f, kq, mf))
        })();
        let (buf, mut q, _ctx, f, mut kq, mf) = match setup {
            Ok(made) => made,
            Err((what, e)) => {
                // The process goes, and with it what was made.
                let cause = Cause::of(m, c, Some(&p), since);
                c.refuse(cause, &format!("set-up, {what}"), &format_args!("{e}"));
                let _ = m.exit_process(&p);
                continue;
            }
        };
        let mut extra = Vec::new();
        let rounds = 4 + rng.below(24);
        for r in 0..rounds {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            Counts::add(&c.ops);
            Counts::add(&c.steps);
            let since = c.window.load(Ordering::Acquire);
            match rng.below(6) {
                0 | 1 => {
                    step(w, 3);
                    let pattern = (w as u64) << 32 | r;
                    let submitted = q.submit(&[fill(&buf, 8 * (r % 64), pattern)]);
                    if count_fill(m, &p, c, since, submitted, |v| q.wait(v), w, "FILL") {
                        break;
                    }
                }
                // No D3DKMTSubmitCommand: every context here is hardware-scheduled, whose
                // work 24H2 takes only through its queues (STATUS_INVALID_PARAMETER,
                // `K:DxgkSubmitCommandInternal` @0x1402A4B90).
                2 => {
                    step(w, 4);
                    if rng.below(2) == 0 {
                        match k.create_allocation(4096 << rng.below(7)) {
                            Ok(a) => extra.push(a),
                            Err(e) => c.refuse(Cause::of(m, c, Some(&p), since), "allocation", &e),
                        }
                    }
                }
                3 => {
                    step(w, 5);
                    let submitted = kq.submit(&[fill(&buf, 1536 + 8 * (r % 64), r)]);
                    let what = "kernel-mode queue FILL";
                    if count_fill(m, &p, c, since, submitted, |v| kq.wait(v), w, what) {
                        break;
                    }
                }
                4 => {
                    step(w, 6);
                    let v = r + 1;
                    let signalled = m.signal_monitored_fence_from_cpu(&mf, v);
                    let wait = || m.wait_monitored_fence(&mf, v, WAIT);
                    let what = "monitored fence wait";
                    count_wait((m, &p), c, since, signalled, wait, w, what, v);
                }
                _ => {
                    step(w, 7);
                    let v = next_value.fetch_add(1, Ordering::AcqRel) + 1;
                    let signalled = m.signal_native_fence_from_cpu(&f, v);
                    let wait = || m.wait_native_fence(hub, v, WAIT);
                    count_wait((m, &p), c, since, signalled, wait, w, "fence wait", v);
                }
            }
            halted(m, "during a worker's round");
        }
        step(w, 8);
        let _ = m.destroy_native_fence(&f);
        let _ = m.destroy_monitored_fence(&mf);
        drop(extra);
        // How the process ends.
        match rng.below(3) {
            0 => {
                step(w, 9);
                let _ = q.submit(&[fill(&buf, 1024, 1)]);
                Counts::add(&c.kills);
                m.kill_process(&p)
                    .unwrap_or_else(|e| panic!("kill: {e}\n{}", diagnostics(m)));
                std::mem::forget(q);
                std::mem::forget(kq);
            }
            1 => {
                step(w, 10);
                let _ = q.submit(&[fill(&buf, 1024, 2)]);
                Counts::add(&c.exits_in_flight);
                m.exit_process(&p).unwrap_or_else(|e| {
                    panic!("exit with work in flight: {e}\n{}", diagnostics(m))
                });
                std::mem::forget(q);
                std::mem::forget(kq);
            }
            _ => {
                step(w, 11);
                let _ = q.close();
                let _ = kq.close();
                m.exit_process(&p)
                    .unwrap_or_else(|e| panic!("exit: {e}\n{}", diagnostics(m)));
            }
        }
        halted(m, "after a process ended");
    }
    step(w, 13);
}

/// A guilty process hangs `node` until the TDR resets it, then is killed.
fn hang(m: &Machine, node: u32, c: &Counts) {
    let Ok(g) = m.create_process(0) else {
        return;
    };
    let Ok(mut q) = UserQueue::new(m.kmt(&g), &config(node)) else {
        let _ = m.exit_process(&g);
        return;
    };
    if q.submit(&[Command::Hang]).is_ok() {
        Counts::add(&c.hangs);
        let t0 = Instant::now();
        while !in_error(m, &g) && t0.elapsed() < WAIT {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(
            in_error(m, &g),
            "the hang was never reset\n{}",
            diagnostics(m)
        );
    }
    m.kill_process(&g).expect("kill the guilty process");
    std::mem::forget(q);
}

/// One low-resources window: Verifier's systematic simulation, one failure point, on the
/// KMD's next pool allocation. The KMD asks for memory only when one of its tables outgrows the
/// room it kept, so the window stays open until that allocation came (or the joined workers
/// took [`WINDOW_STEPS`] steps each: then it counts as idle), not for a fixed time.
fn low_resources_window(m: &Machine, c: &Counts) {
    c.window.fetch_add(1, Ordering::AcqRel);
    m.set_low_resources(LowResources::FailNth(0));
    let from = c.steps.load(Ordering::Acquire);
    let span = WINDOW_STEPS * c.joined.load(Ordering::Acquire).max(1);
    while m.pool_stats().failed == 0
        && c.steps.load(Ordering::Acquire).saturating_sub(from) < span
        && c.gone.load(Ordering::Acquire) == 0
        && m.fault().is_none()
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    let failed = m.pool_stats().failed;
    m.set_low_resources(LowResources::Off);
    c.window.fetch_add(1, Ordering::AcqRel);
    Counts::add(&c.pool_windows);
    c.pool_failed.fetch_add(failed, Ordering::Relaxed);
    if failed == 0 {
        Counts::add(&c.pool_idle);
    }
}

/// Everything the end state is compared on.
fn measure(m: &Machine) -> impl PartialEq + std::fmt::Debug {
    let (fences, fence_pages) = m.fence_live_counts(0);
    (
        m.ums_live_counts(0),
        fences,
        m.gpuva_live_counts(0),
        m.memory().system_used().saturating_sub(fence_pages),
    )
}

#[test]
fn chaos_threaded_mixed_load_with_faults_holds_every_invariant() {
    let secs = env_u64("RVGPU_CHAOS_SECS", 8);
    let seed = env_u64("RVGPU_CHAOS_SEED", 0xC4A0_5EED);
    println!("chaos: seed {seed:#x}, {secs} s (RVGPU_CHAOS_SEED, RVGPU_CHAOS_SECS)");
    let mut cfg = MachineConfig::single(Mode::Threaded);
    cfg.adapters[0].device.doorbells = 16;
    let m = started(cfg);
    enable_tdr_after(&m, Duration::from_millis(300), Duration::from_millis(5));
    // One round trip first, so lazily made state is in the baseline.
    one_user_mode_submission(&m);
    let base = measure(&m);
    let base_mem = m.memory().system_used();
    let base_processes = m.gpu_process_count(0);
    let hub = ok(&m, m.create_process(0));
    let shared = NativeFenceDesc {
        shareable: true,
        ..NativeFenceDesc::default()
    };
    let fences: Vec<_> = (0..WORKERS)
        .map(|_| ok(&m, m.create_native_fence(0, hub.pid, shared)))
        .collect();
    let values: Vec<AtomicU64> = (0..WORKERS).map(|_| AtomicU64::new(0)).collect();
    let c = Counts::default();
    let stop = AtomicBool::new(false);
    let peak = AtomicU64::new(0);
    let dev = m.device(0).expect("device").clone();
    // Every worker ends its process within a few of its 10 s waits after the stop, and the
    // teardown's own wait is 10 s.
    let limit = Duration::from_secs(secs + 240);
    std::thread::spawn(move || watchdog(limit));
    std::thread::scope(|s| {
        for w in 0..WORKERS {
            let (m, f, v, stop, c) = (&m, &fences[w], &values[w], &stop, &c);
            s.spawn(move || worker(m, w, seed, f, v, stop, c));
        }
        // The workers stop however this thread leaves the scope: a failed check here unwinds
        // through the scope, which joins the workers before the failure is reported.
        let _stop = StopOnDrop(&stop);
        let mut rng = Rng::new(seed);
        let end = Instant::now() + Duration::from_secs(secs);
        // While the workers join, windows follow one another: the KMD's tables grow to the
        // run's peak then, and its allocations are the ones a window can fail.
        while c.joined.load(Ordering::Acquire) < WORKERS as u64
            && c.gone.load(Ordering::Acquire) == 0
            && Instant::now() < end
        {
            step(WORKERS, 12);
            low_resources_window(&m, &c);
            halted(&m, "after a low-resources window");
        }
        while Instant::now() < end {
            step(WORKERS, 0);
            std::thread::sleep(Duration::from_millis(10 + rng.below(60)));
            step(WORKERS, 12);
            peak.fetch_max(m.memory().system_used(), Ordering::Relaxed);
            match rng.below(12) {
                0..=5 => {
                    dev.drop_next_interrupt();
                    Counts::add(&c.lost_interrupts);
                }
                6 | 7 => {
                    // Late interrupts: records pile up and one ISR pass drains them together.
                    let late = Duration::from_micros(200 + 200 * rng.below(10));
                    dev.set_interrupt_delay(Some(IrqDelay::Duration(late)));
                    std::thread::sleep(Duration::from_millis(20 + rng.below(40)));
                    dev.set_interrupt_delay(None);
                    Counts::add(&c.late_windows);
                }
                8 | 9 => low_resources_window(&m, &c),
                10 => hang(&m, rng.below(2) as u32, &c),
                _ => {
                    if m.force_tdr(0, rng.below(2) as u32).is_ok() {
                        Counts::add(&c.engine_resets);
                    }
                }
            }
            halted(&m, "after a fault");
        }
        step(WORKERS, 13);
    });
    m.set_low_resources(LowResources::Off);
    for f in &fences {
        ok(&m, m.destroy_native_fence(f));
    }
    ok(&m, m.exit_process(&hub));
    halted(&m, "at the end");
    // Teardown work the OS finishes asynchronously (paging, reaped fence pages).
    let t0 = Instant::now();
    while (measure(&m) != base || m.memory().system_used() != base_mem) && t0.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(5));
    }
    let end_mem = m.memory().system_used();
    let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
    println!(
        "chaos figures: {} s, seed {seed:#x}: {} operations in {} processes, {} refused ({} outside low-resources windows); faults: \
         {} kills and {} exits with work in flight, {} lost interrupts, {} hangs reset by TDR, \
         {} windows of late interrupts, {} engine resets without a hang, {} KMD low-resources \
         windows ({} allocations failed, {} windows idle); {} waits satisfied, {} ended by device error, lost = {}; system \
         memory {} KiB at start, peak {} KiB, final {} KiB",
        secs,
        n(&c.ops),
        n(&c.processes),
        n(&c.refused),
        n(&c.refused_outside),
        n(&c.kills),
        n(&c.exits_in_flight),
        n(&c.lost_interrupts),
        n(&c.hangs),
        n(&c.late_windows),
        n(&c.engine_resets),
        n(&c.pool_windows),
        n(&c.pool_failed),
        n(&c.pool_idle),
        n(&c.satisfied),
        n(&c.in_error),
        n(&c.lost),
        base_mem / 1024,
        n(&peak).max(base_mem) / 1024,
        end_mem / 1024,
    );
    println!("chaos refusals by cause:");
    for (why, count) in lock_counts(&c.why).iter() {
        println!("  {count:6} {why}");
    }
    assert_eq!(n(&c.lost), 0, "waits never released");
    assert_eq!(n(&c.unexplained), 0, "refusals with no known cause");
    assert!(
        n(&c.pool_failed) > 0,
        "low-resources windows failed no allocation of the KMD"
    );
    assert!(
        n(&c.low_refused) <= n(&c.pool_failed),
        "more refusals put down to low-resources windows than the windows failed allocations"
    );
    assert_eq!(
        n(&c.refused_outside),
        0,
        "process creations refused outside a low-resources window"
    );
    assert_eq!(
        m.gpu_process_count(0),
        base_processes,
        "GPU processes left after every exit"
    );
    let destroy_refused: Vec<_> = m
        .triage_log(0)
        .into_iter()
        .filter(|l| l.contains("DxgkDdiDestroyProcess"))
        .collect();
    assert!(
        destroy_refused.is_empty(),
        "the driver refused to destroy a process: {destroy_refused:?}"
    );
    assert_eq!(end_mem, base_mem, "system memory not back to its start");
    assert!(n(&c.satisfied) > 0, "no work ran");
    assert_eq!(measure(&m), base, "objects or memory left after every exit");
    no_fault(&m);
}
