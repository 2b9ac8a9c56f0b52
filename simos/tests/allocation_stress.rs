//! AL-01/AL-02 under load: a seeded random mix of CPU locks (plain, DISCARD,
//! NO_OVERWRITE, DO_NOT_WAIT, reads) and GPU fills and copies on a user-mode and a kernel-mode
//! queue, all on a few shared `rvgpu_umd::usage::Buffer`s, checked against a model of what
//! each region must hold if the UMD orders CPU and GPU accesses correctly.
//!
//! The model. Each buffer is split into regions; every write (CPU or GPU) puts a unique stamp
//! in a whole region. The test keeps GPU work on one buffer's current backing on one queue at
//! a time (another queue takes a buffer over once the owner's work on it has completed), so
//! program order alone defines every region's value: a fill sets the stamp, a copy moves the
//! source region's value as of its submission, a CPU write sets the stamp. Any read the UMD
//! allows must see exactly that value; a lock that returns without waiting, or returns
//! `WasStillDrawing`, must agree with the queues' own progress; a DISCARD gives a backing
//! that in-flight work on the old one never disturbs (the CPU's stamps survive that work).
//! Some batches start behind a *gate* (a CPU-signalled native fence) so work stays queued
//! across CPU operations; every blocking lock opens the gates first.
//!
//! A failure prints its seed; `RVGPU_AL_SEED=<seed>` (and `RVGPU_AL_OPS`) reruns one.

mod common;

use common::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

use rvgpu_hw::cmd::Command;
use rvgpu_hw::pdd::ALLOCATION_CPU_CACHED;
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::{Machine, MachineConfig, Mode, UmsEvent};
use rvgpu_umd::fence::NativeFence;
use rvgpu_umd::kmt::{AllocationCpu, Kmt, KmtHandle};
use rvgpu_umd::retain::Retained;
use rvgpu_umd::submit::{KernelQueue, SubmitError, UserQueue};
use rvgpu_umd::usage::{
    self, Batch, Buffer, LockError, LockFlags, Timeline, TimelineId, TrackedQueue,
};

const BUFFERS: usize = 3;
const BYTES: u64 = 4096;
const REGIONS: usize = 8;
const REGION_BYTES: u64 = BYTES / REGIONS as u64;
const REGION_WORDS: u64 = REGION_BYTES / 8;

/// A user-mode or a kernel-mode queue, both tracked by the UMD (three of them live for a
/// run: their size difference does not matter).
#[allow(clippy::large_enum_variant)]
enum Queue<'m> {
    User(UserQueue<SimKmt<'m>>),
    Kernel(KernelQueue<SimKmt<'m>>),
}

impl Timeline for Queue<'_> {
    fn timeline_id(&self) -> TimelineId {
        match self {
            Self::User(q) => Timeline::timeline_id(q),
            Self::Kernel(q) => Timeline::timeline_id(q),
        }
    }
    fn completed(&self) -> u64 {
        match self {
            Self::User(q) => Timeline::completed(q),
            Self::Kernel(q) => Timeline::completed(q),
        }
    }
    fn wait_target(&self, value: u64) -> Result<Option<(KmtHandle, u64)>, SubmitError> {
        match self {
            Self::User(q) => Timeline::wait_target(q, value),
            Self::Kernel(q) => Timeline::wait_target(q, value),
        }
    }
    fn os_sees_work(&self) -> bool {
        match self {
            Self::User(q) => Timeline::os_sees_work(q),
            Self::Kernel(q) => Timeline::os_sees_work(q),
        }
    }
    fn retain_until(&self, r: &std::sync::Arc<Retained>, value: u64) -> bool {
        match self {
            Self::User(q) => Timeline::retain_until(q, r, value),
            Self::Kernel(q) => Timeline::retain_until(q, r, value),
        }
    }
}

impl TrackedQueue for Queue<'_> {
    fn submit_commands(&mut self, cmds: &[Command]) -> Result<u64, SubmitError> {
        match self {
            Self::User(q) => q.submit_commands(cmds),
            Self::Kernel(q) => q.submit_commands(cmds),
        }
    }
}

/// What the test knows of one buffer's current backing.
#[derive(Clone)]
struct Model {
    /// The stamp each region holds in program order.
    vals: [u64; REGIONS],
    /// Per region and queue: the last progress value that reads or writes it.
    used: [Vec<u64>; REGIONS],
    /// Per region and queue: the last progress value that writes it.
    written: [Vec<u64>; REGIONS],
}

impl Model {
    fn new(queues: usize) -> Self {
        Self {
            vals: [0; REGIONS],
            used: std::array::from_fn(|_| vec![0; queues]),
            written: std::array::from_fn(|_| vec![0; queues]),
        }
    }
    /// A fresh backing: nothing queued touches it.
    fn forget_uses(&mut self) {
        for r in 0..REGIONS {
            self.used[r].fill(0);
            self.written[r].fill(0);
        }
    }
}

/// Counters that show the run reached the interesting paths.
#[derive(Default, Debug)]
struct Seen {
    still_drawing: u32,
    no_wait_ok: u32,
    renames: u32,
    no_overwrite: u32,
    blocking_waits: u32,
    gpu_ops: u32,
}

struct Run<'m> {
    m: &'m Machine,
    k: SimKmt<'m>,
    rng: Rng,
    step: bool,
    queues: Vec<Queue<'m>>,
    gate: NativeFence,
    /// Gate value batches wait for next; the gate is open up to `gate_next - 1`.
    gate_next: u64,
    gate_closed: bool,
    /// Per queue: the last progress value submitted.
    last: Vec<u64>,
    stamp: u64,
    op: usize,
    seen: Seen,
}

impl<'m> Run<'m> {
    fn stamp(&mut self) -> u64 {
        self.stamp += 1;
        // Tagged so a zeroed or foreign word never equals a stamp.
        0x5a00_0000_0000_0000 | self.stamp
    }

    fn completed(&self) -> Vec<u64> {
        self.queues.iter().map(Timeline::completed).collect()
    }

    fn timelines(&self) -> Vec<&dyn Timeline> {
        self.queues.iter().map(|q| q as &dyn Timeline).collect()
    }

    fn open_gates(&mut self) {
        if self.gate_closed {
            let f = self
                .m
                .native_fence_by_kmt(self.k.process().adapter, self.gate.kmt)
                .expect("gate fence");
            ok(
                self.m,
                self.m.signal_native_fence_from_cpu(&f, self.gate_next),
            );
            self.gate_next += 1;
            self.gate_closed = false;
        }
    }

    /// The queue whose queued work still uses `model`'s backing, if any; never two (the test
    /// hands a buffer to another queue only once the owner's work on it completed).
    fn owner(&self, model: &Model, done: &[u64]) -> Option<usize> {
        let mut owner = None;
        for (q, &c) in done.iter().enumerate() {
            if (0..REGIONS).any(|r| model.used[r][q] > c) {
                assert!(
                    owner.is_none(),
                    "op {}: two queues own one buffer (test bug)",
                    self.op
                );
                owner = Some(q);
            }
        }
        owner
    }

    fn busy(model: &Model, done: &[u64], for_write: bool) -> bool {
        (0..REGIONS).any(|r| {
            let v = if for_write {
                &model.used[r]
            } else {
                &model.written[r]
            };
            v.iter().zip(done).any(|(&u, &c)| u > c)
        })
    }

    fn check_contents(&self, what: &str, mem: &SimMem, model: &Model) {
        for r in 0..REGIONS {
            for w in 0..REGION_WORDS {
                let off = r as u64 * REGION_BYTES + w * 8;
                let got = mem.load(off);
                assert_eq!(
                    got, model.vals[r],
                    "op {}: {what}: region {r} word {w} holds {got:#x}, the model says {:#x}",
                    self.op, model.vals[r]
                );
            }
        }
    }

    fn write_region(&mut self, mem: &SimMem, model: &mut Model, r: usize) {
        let s = self.stamp();
        for w in 0..REGION_WORDS {
            mem.store(r as u64 * REGION_BYTES + w * 8, s);
        }
        model.vals[r] = s;
    }

    /// Records a GPU use of region `r` by queue `q` at `value`.
    fn record(model: &mut Model, r: usize, q: usize, value: u64, write: bool) {
        model.used[r][q] = model.used[r][q].max(value);
        if write {
            model.written[r][q] = model.written[r][q].max(value);
        }
    }
}

fn run(seed: u64, mode: Mode, non_coherent: bool, ops: usize) {
    let cfg = if non_coherent {
        MachineConfig::arm64_non_coherent(mode)
    } else {
        MachineConfig::single(mode)
    };
    let m = started(cfg);
    let (p, k) = user_process(&m);
    let queues = vec![
        Queue::User(okk(&m, UserQueue::new(k, &config(0)))),
        Queue::Kernel(okk(&m, KernelQueue::new(k, &config(0)))),
        Queue::User(okk(&m, UserQueue::new(k, &config(0)))),
    ];
    let nq = queues.len();
    let extra = if non_coherent {
        ALLOCATION_CPU_CACHED
    } else {
        0
    };
    let bufs: Vec<Buffer<SimMem>> = (0..BUFFERS)
        .map(|_| okk(&m, Buffer::new(&k, BYTES, extra)))
        .collect();
    let mut models = vec![Model::new(nq); BUFFERS];
    let mut r = Run {
        m: &m,
        k,
        rng: Rng(seed | 1),
        step: mode == Mode::Step,
        queues,
        gate: okk(&m, k.create_native_fence(0)),
        gate_next: 1,
        gate_closed: false,
        last: vec![0; nq],
        stamp: seed << 24,
        op: 0,
        seen: Seen::default(),
    };

    // Every region starts with a CPU stamp, so the model is defined from the first op.
    for (b, model) in bufs.iter().zip(models.iter_mut()) {
        let mem = okk(&m, b.lock(&k, LockFlags::WRITE, &r.timelines()));
        for reg in 0..REGIONS {
            r.write_region(&mem, model, reg);
        }
        okk(&m, b.unlock(&k));
    }

    for op in 0..ops {
        r.op = op;
        let bi = r.rng.below(BUFFERS as u64) as usize;
        let b = &bufs[bi];
        match r.rng.below(100) {
            // Blocking lock. Write (0..=9): waits for every GPU use, then sees the latest
            // contents. Read (10..=19): waits for the GPU's writes only.
            kind @ 0..=19 => {
                let write = kind <= 9;
                let (flags, what, waited_for) = if write {
                    (LockFlags::WRITE, "write lock", "uses")
                } else {
                    (LockFlags::READ, "read lock", "writes")
                };
                r.open_gates();
                let mem = okk(&m, b.lock(&k, flags, &r.timelines()));
                let done = r.completed();
                assert!(
                    !Run::busy(&models[bi], &done, write),
                    "op {op}: a {what} returned before the GPU's {waited_for} completed"
                );
                r.check_contents(what, &mem, &models[bi]);
                if write {
                    let reg = r.rng.below(REGIONS as u64) as usize;
                    r.write_region(&mem, &mut models[bi], reg);
                }
                okk(&m, b.unlock(&k));
                r.seen.blocking_waits += 1;
            }
            // DO_NOT_WAIT read or write: must agree with the queues' progress.
            20..=34 => {
                let write = r.rng.below(2) == 0;
                let flags = if write {
                    LockFlags::WRITE
                } else {
                    LockFlags::READ
                };
                let before = Run::busy(&models[bi], &r.completed(), write);
                let res = b.lock(&k, flags.union(LockFlags::DO_NOT_WAIT), &r.timelines());
                let after = Run::busy(&models[bi], &r.completed(), write);
                match res {
                    Err(LockError::WasStillDrawing) => {
                        assert!(
                            before,
                            "op {op}: WasStillDrawing on an idle buffer ({flags:?})"
                        );
                        r.seen.still_drawing += 1;
                    }
                    Ok(mem) => {
                        assert!(
                            !after,
                            "op {op}: DO_NOT_WAIT mapped a busy buffer ({flags:?})"
                        );
                        r.check_contents("DO_NOT_WAIT lock", &mem, &models[bi]);
                        if write {
                            let reg = r.rng.below(REGIONS as u64) as usize;
                            r.write_region(&mem, &mut models[bi], reg);
                        }
                        okk(&m, b.unlock(&k));
                        r.seen.no_wait_ok += 1;
                    }
                    Err(e) => panic!("op {op}: {e:?}; {}", diagnostics(&m)),
                }
            }
            // DISCARD (half with DO_NOT_WAIT): a busy buffer gets a fresh backing at once.
            35..=46 => {
                let no_wait = r.rng.below(2) == 0;
                if !no_wait {
                    // Too many renames in flight make even a DISCARD wait.
                    r.open_gates();
                }
                let mut flags = LockFlags::DISCARD;
                if no_wait {
                    flags = flags.union(LockFlags::DO_NOT_WAIT);
                }
                let va = b.gpu_va();
                let before = Run::busy(&models[bi], &r.completed(), true);
                match b.lock(&k, flags, &r.timelines()) {
                    Ok(mem) => {
                        let after = Run::busy(&models[bi], &r.completed(), true);
                        if b.gpu_va() == va {
                            assert!(!after, "op {op}: DISCARD kept a busy backing");
                        } else {
                            assert!(before, "op {op}: DISCARD renamed an idle buffer");
                            r.seen.renames += 1;
                        }
                        // Old contents are undefined: write every region.
                        models[bi].forget_uses();
                        for reg in 0..REGIONS {
                            r.write_region(&mem, &mut models[bi], reg);
                        }
                        okk(&m, b.unlock(&k));
                    }
                    Err(LockError::WasStillDrawing) if no_wait => {
                        assert!(
                            before,
                            "op {op}: DISCARD said WasStillDrawing on an idle buffer"
                        );
                        r.seen.still_drawing += 1;
                    }
                    Err(e) => panic!("op {op}: DISCARD: {e:?}; {}", diagnostics(&m)),
                }
            }
            // NO_OVERWRITE on a region no queued work touches: maps at once, same backing.
            47..=56 => {
                let done = r.completed();
                let free: Vec<usize> = (0..REGIONS)
                    .filter(|&reg| {
                        models[bi].used[reg]
                            .iter()
                            .zip(&done)
                            .all(|(&u, &c)| u <= c)
                    })
                    .collect();
                if free.is_empty() {
                    continue;
                }
                let reg = free[r.rng.below(free.len() as u64) as usize];
                let mut flags = LockFlags::NO_OVERWRITE;
                if r.rng.below(2) == 0 {
                    flags = flags.union(LockFlags::DO_NOT_WAIT);
                }
                let (va, waits) = (b.gpu_va(), b.stats().waits);
                let mem = okk(&m, b.lock(&k, flags, &r.timelines()));
                assert_eq!(b.gpu_va(), va, "op {op}: NO_OVERWRITE renamed");
                assert_eq!(b.stats().waits, waits, "op {op}: NO_OVERWRITE waited");
                r.write_region(&mem, &mut models[bi], reg);
                okk(&m, b.unlock(&k));
                r.seen.no_overwrite += 1;
            }
            // GPU fill or copy on a random queue (the owner's, if the buffer has one).
            57..=89 => {
                let done = r.completed();
                let copy = r.rng.below(2) == 0;
                let si = (bi + 1 + r.rng.below(BUFFERS as u64 - 1) as usize) % BUFFERS;
                let mut q = r.rng.below(nq as u64) as usize;
                let owners = [
                    r.owner(&models[bi], &done),
                    if copy {
                        r.owner(&models[si], &done)
                    } else {
                        None
                    },
                ];
                match owners {
                    [Some(a), Some(c)] if a != c => continue,
                    [Some(a), _] | [None, Some(a)] => q = a,
                    [None, None] => {}
                }
                // A gated queue must not fill its ring (or, on the kernel-mode path, all of
                // its command buffers): the submission would wait for space the gate never
                // frees. Four batches stay far below either limit.
                if r.gate_closed && r.last[q] >= done[q] + 4 {
                    r.open_gates();
                }
                let mut batch = Batch::new();
                if r.rng.below(5) == 0 {
                    batch.command(r.gate.wait(r.gate_next));
                    r.gate_closed = true;
                }
                let dreg = r.rng.below(REGIONS as u64) as usize;
                let doff = dreg as u64 * REGION_BYTES;
                let (value, sreg) = if copy {
                    let sreg = r.rng.below(REGIONS as u64) as usize;
                    let soff = sreg as u64 * REGION_BYTES;
                    okk(
                        &m,
                        batch.copy(&bufs[si], soff, &bufs[bi], doff, REGION_BYTES),
                    );
                    (models[si].vals[sreg], Some(sreg))
                } else {
                    let s = r.stamp();
                    okk(&m, batch.fill(&bufs[bi], doff, REGION_BYTES, s));
                    (s, None)
                };
                let v = okk(&m, usage::submit(&mut r.queues[q], batch));
                r.last[q] = v;
                models[bi].vals[dreg] = value;
                Run::record(&mut models[bi], dreg, q, v, true);
                if let Some(sreg) = sreg {
                    Run::record(&mut models[si], sreg, q, v, false);
                }
                r.seen.gpu_ops += 1;
            }
            // Let the GPU run a little, all the way, or open the gates.
            _ => {
                if r.rng.below(3) == 0 {
                    r.open_gates();
                }
                if r.step {
                    if r.rng.below(4) == 0 {
                        ok(&m, m.run_until_idle());
                    } else {
                        ok(&m, m.run_steps(1 + r.rng.below(8) as usize));
                    }
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }

    // The end: every buffer read back through a blocking read lock.
    r.op = ops;
    r.open_gates();
    for (b, model) in bufs.iter().zip(&models) {
        let mem = okk(&m, b.lock(&k, LockFlags::READ, &r.timelines()));
        r.check_contents("final read", &mem, model);
        okk(&m, b.unlock(&k));
    }
    // AL-03: destroyed while a gated fill still writes one of them; the work completes and
    // nothing faults.
    let mut batch = Batch::new();
    batch.command(r.gate.wait(r.gate_next));
    r.gate_closed = true;
    okk(&m, batch.fill(&bufs[0], 0, BYTES, 0x0de5_7201));
    let v = okk(&m, usage::submit(&mut r.queues[0], batch));
    let tl = r.timelines();
    for b in bufs {
        okk(&m, b.destroy(&k, &tl));
    }
    drop(tl);
    r.open_gates();
    for q in r.queues.drain(..) {
        match q {
            Queue::User(q) => okk(&m, q.close()),
            Queue::Kernel(q) => okk(&m, q.close()),
        }
    }
    assert!(v > 0);
    let events = m.ums_events(0);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, UmsEvent::PageFault { .. } | UmsEvent::DeviceError { .. })),
        "a fault: {events:?}"
    );
    exits_clean(&m, &p);

    eprintln!(
        "seed {seed:#x} {mode:?} non-coherent {non_coherent}: {:?}",
        r.seen
    );
    // Step mode is deterministic: make sure the mix reached every path it is meant to test.
    if mode == Mode::Step && ops >= 200 {
        let s = &r.seen;
        assert!(
            s.still_drawing > 0
                && s.no_wait_ok > 0
                && s.renames > 0
                && s.no_overwrite > 0
                && s.gpu_ops > 0,
            "the mix missed a path: {s:?}"
        );
    }
}

/// Runs `seed`, and on a panic names it (the panic itself printed the op and the check).
fn run_seed(seed: u64, mode: Mode, non_coherent: bool, ops: usize) {
    let r = catch_unwind(AssertUnwindSafe(|| run(seed, mode, non_coherent, ops)));
    if r.is_err() {
        panic!(
            "allocation stress failed: seed {seed:#x}, {mode:?}, non-coherent {non_coherent}; \
             rerun with RVGPU_AL_SEED={seed:#x}"
        );
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let s = std::env::var(name).ok()?;
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

const OPS: usize = 1000;

/// Four seeds in step mode (deterministic interleavings), on the default x64 machine.
#[test]
fn al01_al02_stress_step_mode() {
    let ops = env_u64("RVGPU_AL_OPS").map_or(OPS, |n| n as usize);
    if let Some(seed) = env_u64("RVGPU_AL_SEED") {
        return run_seed(seed, Mode::Step, false, ops);
    }
    for seed in [0x15, 0x2002, 0xa1_0102, 0xdead_beef] {
        run_seed(seed, Mode::Step, false, ops);
    }
}

/// One seed on the non-coherent ARM64 platform with cached buffers (AL-06: the UMD's cache
/// maintenance must keep the same model).
#[test]
fn al01_al02_stress_step_mode_non_coherent() {
    run_seed(0x06_0006, Mode::Step, true, OPS);
}

/// AL-01: the seed whose step-mode run wraps the kernel-mode queue's command buffer while a batch
/// of its own waits behind the closed gate. The UMD once reused its single command buffer only
/// with the queue idle, so that submission waited for a gate only the submitting thread opens
/// (STATUS_IO_TIMEOUT; the threaded-mode failure of seed 0x74726561). It now moves on to
/// another command buffer (`KernelPath::next_buffer`).
#[test]
fn al01_al02_stress_step_mode_gated_kernel_queue_wraps() {
    run_seed(0x1e, Mode::Step, false, OPS);
}

/// One seed with the GPU on its own thread: locks race real progress.
#[test]
fn al01_al02_stress_threaded_mode() {
    run_seed(0x7472_6561, Mode::Threaded, false, OPS);
}
