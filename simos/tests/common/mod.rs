//! Fixtures shared by the simulated OS's tests and benches (benches include this file with
//! `#[path]`): machines that are loaded and started, result checks that fail with the driver's
//! log, a seeded random source, and the queue settings and commands several tests use.
//!
//! Each test binary uses a subset, hence `dead_code` is allowed here.
#![allow(dead_code)]

pub mod conformance;
pub mod dll;
pub mod dll_world;
pub mod fences;
pub mod own_progress;
pub mod pe;
pub mod residency;
#[path = "../../../tests/common/scratch.rs"]
pub mod scratch;
pub mod start_edits;
pub mod tdr;
pub mod ums;

use rvgpu_umd::kmt::AllocationKind;
use std::cell::Cell;
use std::sync::Mutex;
use std::time::Duration;

use rvgpu_ddi::adapter::DXGKARG_QUERYADAPTERINFO;
use rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::{HANDLE, NTSTATUS, PVOID};
use rvgpu_hw::cmd::Command;
use rvgpu_hw::pdd::{DoorbellPdd, HwQueuePdd, HW_QUEUE_PDD_VERSION, PDD_MAGIC};
use rvgpu_hw::queue::RingControl;
use rvgpu_simos::kmt::{SimDoorbell, SimKmt, SimMem};
use rvgpu_simos::{
    AdapterConfig, Machine, MachineConfig, Mode, SimError, TdrConfig, TdrEvent, UmsEvent,
    UmsProcess,
};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, Doorbell, Kmt, KmtHandle};
use rvgpu_umd::submit::{KernelQueue, QueueConfig, SubmitError, UserQueue};
use zerocopy::IntoBytes;

/// Arms TDR on adapter 0 with the emulated-step limits: a timeout after `timeout_steps` steps
/// without progress, `preempt_steps` for a preemption to finish.
pub fn enable_tdr_steps(m: &Machine, timeout_steps: u64, preempt_steps: u64) {
    enable_tdr(
        m,
        TdrConfig {
            timeout_steps,
            preempt_steps,
            ..TdrConfig::default()
        },
    );
}

/// Arms TDR on adapter 0 with wall-clock limits (threaded machines).
pub fn enable_tdr_after(m: &Machine, timeout: Duration, preempt_timeout: Duration) {
    enable_tdr(
        m,
        TdrConfig {
            timeout,
            preempt_timeout,
            ..TdrConfig::default()
        },
    );
}

/// Arms TDR on adapter 0 with `cfg`.
pub fn enable_tdr(m: &Machine, cfg: TdrConfig) {
    ok(m, m.enable_tdr(0, cfg));
}

/// The `DXGKRNL_INTERFACE` adapter 0's driver was given at start.
pub fn dxgkrnl_interface(m: &Machine) -> DXGKRNL_INTERFACE {
    let Some(iface) = m.interface(0) else {
        panic!("no interface")
    };
    iface
}

/// A user-mode process on adapter 0 and its thunks.
pub fn user_process(m: &Machine) -> (UmsProcess, SimKmt<'_>) {
    let p = ok(m, m.create_process(0));
    let k = m.kmt(&p);
    (p, k)
}

/// A machine built from `cfg` with the driver loaded and every adapter started.
pub fn started(cfg: MachineConfig) -> Machine {
    start_all(cfg, Machine::load_driver)
}

/// [`started`], with `hook` rewriting the driver's table first (a test's stand-in routine).
pub fn started_with(
    cfg: MachineConfig,
    hook: impl FnOnce(&mut DRIVER_INITIALIZATION_DATA) + Send + 'static,
) -> Machine {
    start_all(cfg, |m| m.load_driver_with(hook))
}

/// A machine built from `cfg` with the driver loaded and no adapter started yet.
pub fn loaded(cfg: MachineConfig) -> Machine {
    let mut m = Machine::new(cfg);
    if let Err(e) = m.load_driver() {
        panic!("load: {e}");
    }
    m
}

fn start_all(
    cfg: MachineConfig,
    load: impl FnOnce(&mut Machine) -> Result<(), SimError>,
) -> Machine {
    let n = cfg.adapters.len();
    let mut m = Machine::new(cfg);
    if let Err(e) = load(&mut m) {
        panic!("load: {e}");
    }
    for i in 0..n {
        if let Err(e) = m.start_adapter(i) {
            panic!("start {i}: {e}; log {:#?}", m.driver_log());
        }
    }
    m
}

/// A started single-adapter machine whose adapter `f` adjusts first.
pub fn machine_with(mode: Mode, f: impl FnOnce(&mut AdapterConfig)) -> Machine {
    let mut cfg = MachineConfig::single(mode);
    f(&mut cfg.adapters[0]);
    started(cfg)
}

/// What the machine has to say when a check fails: its fault, TDR events (if any) and log.
pub fn diagnostics(m: &Machine) -> String {
    let tdr = m.tdr_events(0);
    let tdr = if tdr.is_empty() {
        String::new()
    } else {
        format!("; tdr {tdr:#?}")
    };
    format!(
        "machine fault {:?}{tdr}; log {:#?}",
        m.fault(),
        m.driver_log()
    )
}

/// The value of a simulated-OS call, or a panic with the error and the machine's state.
pub fn ok<T>(m: &Machine, r: Result<T, SimError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}; {}", diagnostics(m)),
    }
}

/// [`ok`] for any error type (UMD and thunk results).
/// A process with a D3D device on adapter `i`: native fences are created and opened for a
/// device (`DXGKARG_OPENNATIVEFENCE.hDevice`).
pub fn device_process(m: &Machine, i: usize) -> rvgpu_simos::ProcessId {
    ok(m, m.create_process(i)).pid
}

pub fn okk<T, E: std::fmt::Debug>(m: &Machine, r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e:?}; {}", diagnostics(m)),
    }
}

/// Asserts that the machine has neither bug-checked nor hit a simulation error.
pub fn no_fault(m: &Machine) {
    assert!(m.fault().is_none(), "{}", diagnostics(m));
}

/// A seeded xorshift64* source: stress runs are reproducible from their seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Knuth's MMIX linear congruential generator, answering the high 31 bits of its state: a
/// seeded stress run draws the same values on every machine.
pub struct Lcg(pub u64);

impl Lcg {
    const MULTIPLIER: u64 = 6364136223846793005;
    const INCREMENT: u64 = 1442695040888963407;

    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(Self::MULTIPLIER)
            .wrapping_add(Self::INCREMENT);
        self.0 >> 33
    }
}

/// A queue on `node` with a 4 KiB ring and 4 KiB command buffers.
pub fn config(node: u32) -> QueueConfig {
    QueueConfig {
        node,
        ring_size: 4096,
        command_buffer_size: 4096,
        ..QueueConfig::default()
    }
}

/// One empty user-mode submission on node 0 of adapter 0 of `m` (started), waited for, in a
/// process that then exits: user-mode submission works end to end.
pub fn one_user_mode_submission(m: &Machine) {
    let p = m.create_process(0).expect("process");
    let mut q = rvgpu_umd::submit::UserQueue::new(m.kmt(&p), &config(0)).expect("user-mode queue");
    let v = q.submit(&[]).expect("submit");
    q.wait(v).expect("wait");
    drop(q);
    m.exit_process(&p).expect("exit");
}

/// A GPU write of `pattern` to the 8 bytes at `off` in `t`.
pub fn fill(t: &Allocation<SimMem>, off: u64, pattern: u64) -> Command {
    Command::Fill {
        dst: t.gpu_va + off,
        bytes: 8,
        pattern,
    }
}

/// A started single-adapter machine with `doorbells` physical doorbells.
pub fn with_doorbells(mode: Mode, doorbells: u32) -> Machine {
    machine_with(mode, |a| a.device.doorbells = doorbells)
}

/// A user-mode queue built from the thunks: its doorbell is created, not connected.
pub struct RawQueue {
    pub queue: KmtHandle,
    pub ring: Allocation<SimMem>,
    pub control: Allocation<SimMem>,
    pub doorbell: KmtHandle,
}

/// Private driver data the driver accepts for a hardware queue: its magic and version, the
/// rest zero (the driver fills in the queue's id).
pub fn hw_queue_pdd() -> HwQueuePdd {
    HwQueuePdd {
        magic: PDD_MAGIC,
        version: HW_QUEUE_PDD_VERSION,
        ..Default::default()
    }
}

/// A doorbell for `q`'s ring (4 KiB) and ring control.
pub fn create_doorbell(m: &Machine, k: &SimKmt<'_>, q: &RawQueue) -> KmtHandle {
    create_doorbell_pdd(m, k, q).0.handle
}

/// [`create_doorbell`], returning the doorbell's CPU pages and the private data as the KMD
/// left it (what the doorbell is rung with).
pub fn create_doorbell_pdd(
    m: &Machine,
    k: &SimKmt<'_>,
    q: &RawQueue,
) -> (Doorbell<SimDoorbell>, DoorbellPdd) {
    let mut pdd = DoorbellPdd::for_ring(4096);
    let db = okk(
        m,
        k.create_doorbell(q.queue, q.ring.handle, q.control.handle, pdd.as_mut_bytes()),
    );
    (db, pdd)
}

/// A context on node 0 with a user-mode queue, its ring and ring control, and a doorbell.
pub fn raw_queue(m: &Machine, k: &SimKmt<'_>) -> RawQueue {
    let mut q = unbelled_queue(m, k);
    q.doorbell = create_doorbell(m, k, &q);
    q
}

/// [`raw_queue`] without its doorbell (`doorbell` 0).
pub fn unbelled_queue(m: &Machine, k: &SimKmt<'_>) -> RawQueue {
    let context = okk(m, k.create_context(0));
    let mut qp = hw_queue_pdd();
    let queue = okk(m, k.create_hw_queue(context, true, qp.as_mut_bytes())).handle;
    let ring = okk(m, k.create_allocation_as(4096, AllocationKind::Commands));
    let control = okk(
        m,
        k.create_allocation_as(RingControl::SIZE, AllocationKind::RingControl),
    );
    // Fresh ring control: both pointers at 0.
    control.mem.store(RingControl::WRITE_PTR, 0);
    control.mem.store(RingControl::READ_PTR, 0);
    RawQueue {
        queue,
        ring,
        control,
        doorbell: 0,
    }
}

/// `(iterations, time)` of every criterion `iter_custom` call.
pub struct Samples(Mutex<Vec<(u64, Duration)>>);

impl Samples {
    pub fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    pub fn push(&self, iters: u64, d: Duration) {
        self.0.lock().expect("samples").push((iters, d));
    }

    /// (median of the per-sample time per iteration, mean time per iteration, iterations) over
    /// the last `last` calls (criterion's measurement; earlier calls are its warm-up), times in
    /// `1/per_second` seconds (1e6: µs, 1e9: ns).
    pub fn stats(&self, last: usize, per_second: f64) -> (f64, f64, u64) {
        let v = self.0.lock().expect("samples");
        let s = &v[v.len().saturating_sub(last)..];
        if s.is_empty() {
            return (0.0, 0.0, 0);
        }
        let mut per: Vec<f64> = s
            .iter()
            .map(|(n, d)| d.as_secs_f64() * per_second / (*n).max(1) as f64)
            .collect();
        per.sort_by(f64::total_cmp);
        let iters: u64 = s.iter().map(|(n, _)| n).sum();
        let total: f64 = s.iter().map(|(_, d)| d.as_secs_f64()).sum();
        (per[per.len() / 2], total * per_second / iters as f64, iters)
    }
}

/// Criterion as the submission benches run it: `samples` samples after 1 s of warm-up, over
/// 4 s of measurement, the command line's options on top.
pub fn bench_criterion(samples: usize) -> criterion::Criterion {
    criterion::Criterion::default()
        .sample_size(samples)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args()
}

/// Prints criterion's measurement of `rows` (what each measures, its samples) as a Markdown
/// table under `header` (its first line, naming the columns and the unit): per row the median
/// and mean time per iteration in `1/per_second` seconds with `decimals` digits, and the
/// iterations, over the last `last` samples. Returns each row's [`Samples::stats`].
pub fn samples_table<const N: usize>(
    header: &str,
    rows: [(&str, &Samples); N],
    last: usize,
    per_second: f64,
    decimals: usize,
) -> [(f64, f64, u64); N] {
    println!();
    println!("{header}");
    println!("|---|---:|---:|---:|");
    rows.map(|(what, samples)| {
        let (median, mean, n) = samples.stats(last, per_second);
        println!("| {what} | {median:.decimals$} | {mean:.decimals$} | {n} |");
        (median, mean, n)
    })
}

/// Median of `v` (sorted in place); 0 for none.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// A `DxgkDdiQueryAdapterInfo` entry point.
pub type Qai = unsafe extern "system" fn(HANDLE, *const DXGKARG_QUERYADAPTERINFO) -> NTSTATUS;

thread_local! {
    // The start-time queries run on the starting thread (step mode), so a per-thread record
    // keeps parallel tests apart.
    static REAL_QAI: Cell<Option<Qai>> = const { Cell::new(None) };
}

/// The driver's own QueryAdapterInfo, called from a hook installed by [`start_with_qai_hook`].
///
/// # Safety
/// As for the DDI: `args` is the OS's argument block for the call.
pub unsafe fn real_qai(h: HANDLE, args: *const DXGKARG_QUERYADAPTERINFO) -> NTSTATUS {
    let real = REAL_QAI.get().expect("real QueryAdapterInfo");
    // SAFETY: forwarded unchanged (the function contract).
    unsafe { real(h, args) }
}

/// A QueryAdapterInfo hook: the driver's own ([`real_qai`]), which then "forgets" to lower the
/// IRQL it raised (returns at DISPATCH_LEVEL).
///
/// # Safety
/// As for the DDI: `args` is the OS's argument block for the call.
pub unsafe extern "system" fn qai_leaks_dispatch(
    h: HANDLE,
    args: *const DXGKARG_QUERYADAPTERINFO,
) -> NTSTATUS {
    // SAFETY: forwarded unchanged (the function contract).
    let s = unsafe { real_qai(h, args) };
    let _old = <rvgpu_simos::SimKernel as rvgpu_kmd::platform::Platform>::raise_to_dispatch();
    s
}

/// Loads rvgpu on `m` with its QueryAdapterInfo replaced by `hook` (which edits the answers of
/// [`real_qai`]) and `table` applied to its table, then starts adapter 0.
pub fn start_with_qai_hook(
    m: &mut Machine,
    hook: Qai,
    table: impl FnOnce(&mut DRIVER_INITIALIZATION_DATA) + Send + 'static,
) -> Result<(), SimError> {
    REAL_QAI.set(load_hooked(m, move |t| {
        let real = t.DxgkDdiQueryAdapterInfo;
        t.DxgkDdiQueryAdapterInfo = Some(hook);
        table(t);
        real
    }));
    m.start_adapter(0).map(|_| ())
}

/// Loads rvgpu on `m` with `hook` applied to its initialization table, and returns what `hook`
/// took from the table (the driver's own routines, kept by the test's thread: the hook runs on
/// the loader's).
pub fn load_hooked<T: Send + 'static>(
    m: &mut Machine,
    hook: impl FnOnce(&mut DRIVER_INITIALIZATION_DATA) -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    m.load_driver_with(move |t| {
        let _ = tx.send(hook(t));
    })
    .expect("load");
    rx.recv().expect("hook ran")
}

/// Asserts that a start was refused for `rule` with `status`.
pub fn refused(r: Result<(), SimError>, rule: &str, status: NTSTATUS) {
    match r {
        Err(SimError::StartRefused {
            rule: r, status: s, ..
        }) if r == rule && s == status => {}
        other => panic!(
            "expected {rule} with {:#010x}, got {other:?}",
            status as u32
        ),
    }
}

/// Steps (step mode) or waits (threaded) until `done`; panics naming `what`, with the
/// machine's state, otherwise.
pub fn run_until(m: &Machine, what: &str, done: impl FnMut(&Machine) -> bool) {
    let held = ok(m, m.run_until(20_000, Duration::from_secs(20), done));
    assert!(held, "{what}: not reached; {}", diagnostics(m));
}

/// Whether the TDR events `ev` put the D3D device of `p` in error.
pub fn device_error(ev: &[TdrEvent], p: &UmsProcess) -> bool {
    ev.iter()
        .any(|e| matches!(e, TdrEvent::DeviceError { device, .. } if *device == p.device))
}

/// The UMD's queues as the tests drive them: submit a batch, then wait for it.
pub trait SubmitWait {
    /// Submits `cmds`, waits for them to complete and returns their progress value.
    fn submit_and_wait(&mut self, cmds: &[Command]) -> Result<u64, SubmitError>;
}

macro_rules! submit_wait_for {
    ($($queue:ident),*) => {$(
        impl<K: Kmt> SubmitWait for $queue<K> {
            fn submit_and_wait(&mut self, cmds: &[Command]) -> Result<u64, SubmitError> {
                let v = self.submit(cmds)?;
                self.wait(v)?;
                Ok(v)
            }
        }
    )*};
}
submit_wait_for!(UserQueue, KernelQueue);

/// Submits `cmds` on `q` and waits for them; returns their progress value.
pub fn submit_wait(m: &Machine, q: &mut impl SubmitWait, cmds: &[Command]) -> u64 {
    okk(m, q.submit_and_wait(cmds))
}

/// A GPU write of `pattern` to the 64 bytes at GPU VA `dst`.
pub fn fill64(dst: u64, pattern: u64) -> Command {
    Command::Fill {
        dst,
        bytes: 64,
        pattern,
    }
}

/// One FILL through a new user-mode queue (its doorbell connected) of the process behind `k`,
/// waited for and checked: the process's work runs.
pub fn work_runs(m: &Machine, k: SimKmt<'_>, pattern: u64) {
    let buf = okk(m, k.create_allocation(4096));
    let mut q = okk(m, UserQueue::new(k, &config(0)));
    submit_wait(m, &mut q, &[fill64(buf.gpu_va, pattern)]);
    assert_eq!(buf.mem.load(0), pattern);
}

/// `p` exits, and the machine has neither bug-checked nor hit a simulation error.
pub fn exits_clean(m: &Machine, p: &UmsProcess) {
    ok(m, m.exit_process(p));
    no_fault(m);
}

/// Contiguous memory of `bytes` from adapter 0's DxgkCbAllocateContiguousMemory, called as the
/// driver would at PASSIVE_LEVEL; the test fails unless it is granted. The interface, the
/// memory's handle and its CPU address.
pub fn contiguous(m: &Machine, bytes: usize) -> (DXGKRNL_INTERFACE, HANDLE, PVOID) {
    let iface = dxgkrnl_interface(m);
    // SAFETY: the table the simulation handed to StartDevice; the caller stands in for the
    // driver at PASSIVE_LEVEL.
    let (s, h, p) = unsafe { rvgpu_simos::testing::allocate_contiguous(&iface, bytes) };
    assert!(
        s == 0 && !p.is_null(),
        "contiguous {bytes:#x}: {s:#x}; {}",
        diagnostics(m)
    );
    (iface, h, p)
}

/// The D3DKMT handle of the hardware queue the OS created last on adapter 0 with
/// `UserModeSubmission` set as `user_mode` says, from its record.
pub fn last_hw_queue(m: &Machine, user_mode: bool) -> Option<KmtHandle> {
    m.ums_events(0).iter().rev().find_map(|e| match *e {
        UmsEvent::CreateHwQueue {
            queue,
            user_mode: u,
            ..
        } if u == user_mode => Some(queue),
        _ => None,
    })
}
