//! The device: register file, CMP, doorbells, event ring, interrupt line, resets, faults.
//!
//! # Structure
//! [`Device`] is a thin owner of a shared `Core` plus the CMP thread handle; every concept
//! lives in its own submodule as an `impl Core` block:
//! - `regs`: register storage; `mmio`: BAR0 decode and trap side effects;
//! - `cmp`: runlists, queue state, scheduling; `exec`: command execution;
//! - `engine`: engine states, hang/F1 detection, engine and adapter reset;
//! - `doorbell`: BAR2; `events`: event ring, `INT_STATUS`, line delivery;
//! - `clock`: the GPU clock; `bus`: the GPU's view of memory (identity + windows, or
//!   translated by `mmu` through a root);
//! - `faults`: fault injection;
//! - `schedlog`: per-engine scheduling logs (context switches, hardware scheduling).
//!
//! # Locks (always taken in this order, never the reverse)
//! 1. `cmp` (the CMP state: runlists, queues, engines). The CMP holds it for one quantum (one
//!    packet, or one 4 KiB chunk of a COPY/FILL); MMIO side effects that touch the CMP
//!    (RUNLIST_COMMIT, CTRL, QUEUE_KICK, WAIT_RESCAN, SCHED_LOG_CTRL, doorbells) take it too,
//!    which is what makes them "synchronous, at a command boundary". Scheduling-log entries
//!    are written under it (never under `signal_lock`: LOG_FLUSH is about fence logs).
//! 2. `signal_lock`: held by every fence signal from its CurrentValue store to its interrupt
//!    decision, and by every log write from its entry to its header store. FENCE_SYNC and
//!    LOG_FLUSH take and release it: when they return, every decision/log write that began
//!    before them is finished (NF-07, LOG-07).
//! 3. the event ring lock (in `events`).
//!
//! The interrupt line is *never* driven while any of these is held: [`InterruptLine::set`]
//! may run the driver's ISR synchronously, and the ISR does MMIO. Posting an event only
//! updates `INT_STATUS`; the line is recomputed by `Core::flush_irq` at the end of each entry
//! point (MMIO access, doorbell, step), outside all locks.
//!
//! # Threading model
//! [`Mode::Threaded`]: [`Device::start`] spawns ONE CMP thread that runs all engines (each
//! pass gives every engine one quantum). It sleeps on a condvar until a doorbell, kick,
//! commit, rescan, reset or a timer (hang detection, F1 request, delayed interrupt) needs it.
//! [`Mode::Step`]: no thread; [`Device::step`] runs one pass of the same code on the caller's
//! thread and advances the GPU clock by [`STEP_TICKS`], so runs are deterministic.

mod bus;
mod clock;
mod cmp;
mod doorbell;
mod engine;
mod events;
mod exec;
mod faults;
mod mmio;
pub mod mmu;
mod regs;
mod schedlog;
mod traffic;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use rvgpu_hw::defaults;
use rvgpu_hw::event::FaultCode;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::regs::{DOORBELL_MAX, ENGINE_MAX};

use crate::memory::Memory;

pub use clock::{RunClock, STEP_TICKS};
pub use doorbell::DoorbellStats;
pub use events::{InterruptLine, LatchLine};
pub use faults::IrqDelay;
pub use traffic::BusCounts;

/// How the CMP runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// On its own thread ([`Device::start`]); the GPU clock follows real time.
    Threaded,
    /// Only when [`Device::step`] is called; the clock advances [`STEP_TICKS`] per step.
    Step,
}

/// Build-time configuration of one device instance (reflected in CAPS/CONFIG/...).
#[derive(Clone, Debug)]
pub struct DeviceConfig {
    /// Engines (nodes), clamped to 1..=ENGINE_MAX. Default 2 (compute, copy).
    pub engines: u32,
    /// Physical doorbells (BAR2 pages), clamped to 1..=DOORBELL_MAX. Default 16.
    pub doorbells: u32,
    /// One global doorbell (page 0, value = queue id) instead of dedicated ones.
    pub global_doorbell: bool,
    /// Bytes of VRAM; informational here: the `Memory` passed to [`Device::new`] decides
    /// (build it with `Memory::new(config.vram_size)`).
    pub vram_size: u64,
    /// Bytes of VRAM the CPU reaches through BAR4 from offset 0 (VRAM_VISIBLE), clamped to
    /// the VRAM size. Default `u64::MAX`: all of VRAM. The model still hands out
    /// [`Memory::vram_cpu_ptr`] for all of VRAM (tests use it); a driver must treat only
    /// this much as CPU-visible.
    pub vram_visible: u64,
    /// GPU clock frequency in Hz (CLOCK_FREQ).
    pub clock_hz: u32,
    /// Fence events carry the report tag (CAPS.EXACT_FENCE_REPORT); otherwise NO_TAG.
    pub exact_fence_report: bool,
    /// Fence events name the running queue (CAPS.OPTIMIZED_FENCE_IRQ, LOG-08); otherwise
    /// NO_QUEUE.
    pub optimized_fence_irq: bool,
    /// Engines can be reset one at a time (CAPS.PER_ENGINE_RESET); otherwise CTRL resets fail.
    pub per_engine_reset: bool,
    /// CAPS.ATOMIC64 is advertised. Clearing it models a GPU that cannot write 64 bits atomically
    /// (MF-02) as far as the capability goes: the model's memory stays 64-bit atomic, so this
    /// only tests how software reacts to the capability.
    pub atomic64: bool,
    /// Per-engine scheduling logs (CAPS.SCHED_LOG, docs/hardware.md 5.7). Off: the four
    /// SCHED_LOG registers read 0 and ignore writes, and nothing is ever logged.
    pub sched_log: bool,
    /// DMA snoops the CPU's caches (CAPS.IO_COHERENT). The model has no GPU-side cache, so
    /// this only reports the capability; the CPU cache a non-coherent platform has is the
    /// simulated OS's (AL-06).
    pub io_coherent: bool,
    /// GPU ticks a HANG (or injected hang) runs before the engine reports Hung.
    pub hang_detect_ticks: u64,
    /// GPU ticks of idleness before the engine requests F1; 0 = never.
    pub idle_f1_ticks: u64,
    /// Per-engine power gating (`CAPS.ENGINE_POWER`, the `POWER` register; docs/hardware.md
    /// 4.3). Without it `POWER` reads 0 and ignores writes.
    pub engine_power: bool,
    /// Runlist updates (CAPS.RUNLIST_UPDATE, the RUNLIST_UPDATE register, docs/hardware.md
    /// 5.2). Off: the register ignores writes and a driver commits whole runlists.
    pub runlist_update: bool,
    /// Queue state registers (CAPS.QUEUE_STATE, QUEUE_SELECT/QUEUE_STATE, docs/hardware.md
    /// 7.2). Off: they read 0 and a driver cannot check a Fault record against the device.
    pub queue_state: bool,
    /// The event write-back word and EVENT_PENDING (CAPS.EVENT_WB, EVENT_WB_ADDR,
    /// docs/hardware.md 7.5). Off: the register ignores writes and an ISR reads registers.
    pub event_wb: bool,
    /// Threaded or step mode.
    pub mode: Mode,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        Self {
            engines: defaults::ENGINES,
            doorbells: defaults::DOORBELLS,
            global_doorbell: false,
            vram_size: defaults::VRAM_SIZE,
            vram_visible: u64::MAX,
            clock_hz: defaults::CLOCK_HZ,
            exact_fence_report: true,
            optimized_fence_irq: true,
            per_engine_reset: true,
            atomic64: true,
            sched_log: true,
            io_coherent: true,
            // 200 steps in step mode.
            hang_detect_ticks: defaults::HANG_DETECT_TICKS,
            idle_f1_ticks: 0,
            engine_power: true,
            runlist_update: true,
            queue_state: true,
            event_wb: true,
            mode: Mode::Threaded,
        }
    }
}

impl DeviceConfig {
    /// Defaults in step mode (what most tests want).
    pub fn step() -> Self {
        Self {
            mode: Mode::Step,
            ..Self::default()
        }
    }

    fn normalized(mut self) -> Self {
        self.engines = self.engines.clamp(1, ENGINE_MAX);
        self.doorbells = self.doorbells.clamp(1, DOORBELL_MAX);
        self.clock_hz = self.clock_hz.max(1);
        self
    }
}

/// A queue as the CMP sees it (test introspection).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueSnapshot {
    pub engine: u32,
    pub queue_id: u32,
    /// Device read pointer (bytes, free-running).
    pub read_ptr: u64,
    /// Write pointer as last loaded on a doorbell/kick/commit.
    pub known_write_ptr: u64,
    pub priority: u32,
    /// The descriptor's process id (the global doorbell page that may ring it).
    pub process_id: u32,
    /// The descriptor's `USER_MODE` flag.
    pub user_mode: bool,
    pub fault: Option<FaultCode>,
    /// `(address, value)` of the FENCE_WAIT the queue is blocked on, if any.
    pub blocked_on: Option<(u64, u64)>,
    /// `(buffer address, offset of the next packet)` while the queue is inside an INDIRECT
    /// (its `read_ptr` is then the INDIRECT packet's).
    pub indirect: Option<(u64, u64)>,
}

/// An engine as the CMP sees it (test introspection).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineSnapshot {
    pub state: rvgpu_hw::engine::EngineState,
    pub has_work: bool,
    /// Held after an engine reset until the next RUNLIST_COMMIT (STATUS bit 9).
    pub held: bool,
    /// Power-gated (F1, the `POWER` register): runs nothing until F0.
    pub gated: bool,
    pub completed_commands: u64,
    pub current_queue: u32,
    pub queues: Vec<QueueSnapshot>,
}

#[derive(Default)]
struct WakeState {
    kicked: bool,
    stop: bool,
    /// The CMP thread is blocked on `wake_cv`: only then does a kick need a futex wake (step
    /// mode has no CMP thread; a busy one sees `kicked` before it sleeps).
    sleeping: bool,
    /// Test hook ([`Device::starve_cmp_thread`]): the CMP thread stops this long at its next
    /// loop, as a thread the host does not schedule.
    starve: Option<Duration>,
    /// The running CMP thread's credits to the machine's time. Kept here so that the kick
    /// that ends its wait credits the wait then, under this lock (one writer at a time).
    run: Option<clock::RunWriter>,
}

/// State shared by the `Device` handle and the CMP thread.
pub(crate) struct Core {
    pub(crate) cfg: DeviceConfig,
    pub(crate) mem: Arc<Memory>,
    pub(crate) regs: regs::Regs,
    pub(crate) cmp: Mutex<cmp::Cmp>,
    pub(crate) signal_lock: Mutex<()>,
    pub(crate) events: events::Events,
    pub(crate) clock: clock::Clock,
    /// The machine's run time, credited by the CMP thread ([`clock::RunClock`]).
    run_clock: clock::RunClock,
    pub(crate) faults: faults::Faults,
    pub(crate) doorbells: doorbell::Doorbells,
    /// The GPU MMU (TLB and walker) every translated access goes through.
    pub(crate) mmu: mmu::Mmu,
    wake: Mutex<WakeState>,
    wake_cv: Condvar,
    /// CMP passes run so far (step mode: `step` calls); drives step-counted interrupt delays.
    pub(crate) passes: AtomicU64,
    /// Frozen ([`Device::freeze`]): the machine around the device stopped (bug check).
    pub(crate) frozen: AtomicBool,
    /// Runlist descriptors read by commits and updates so far ([`Device::runlist_slots_read`]).
    pub(crate) runlist_slots_read: AtomicU64,
}

/// Locks `m`, ignoring poisoning: every critical section here leaves the state consistent at
/// each statement boundary that can panic (none should), and a test that panicked on another
/// thread must not turn every later device access into a second panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Core {
    /// Wakes the CMP thread (no-op cost in step mode).
    pub(crate) fn kick(&self) {
        let mut w = lock(&self.wake);
        let sleeping = Self::kicked(&mut w);
        // Notify after unlocking: the woken CMP thread's first act is to take this lock, and
        // a doorbell's kick would otherwise make it sleep again on the mutex (the
        // kick → CMP hop went from 8.5 to 2.2 µs).
        drop(w);
        if sleeping {
            // One CMP thread waits here.
            self.wake_cv.notify_one();
        }
    }

    /// A kick under the wake lock; returns whether the CMP thread sleeps (and needs waking).
    fn kicked(w: &mut WakeState) -> bool {
        let first = !w.kicked;
        w.kicked = true;
        if w.sleeping && first {
            // The wait the CMP thread asked for ends here: from now on it has work, and host
            // time before it runs is the host not scheduling it, which only a step's allowance
            // may count. Credited at its own wake-up instead, all of that delay would count
            // as the machine's time, up to the whole wait it asked for.
            if let Some(run) = w.run.as_mut() {
                run.tick(clock::STEP_ALLOWANCE);
            }
        }
        w.sleeping
    }

    /// One CMP pass: every engine gets one quantum. Returns whether anything happened.
    pub(crate) fn pass(&self) -> bool {
        self.pass_and_look_ahead(false).0
    }

    /// One CMP pass; returns whether anything happened and, if `look_ahead` (the CMP thread
    /// deciding whether to sleep; step mode has no use for it), whether the next pass has
    /// work that no kick or timer will announce ([`Core::engine_busy`]).
    fn pass_and_look_ahead(&self, look_ahead: bool) -> (bool, bool) {
        if self.is_frozen() {
            return (false, false);
        }
        self.passes.fetch_add(1, Ordering::Relaxed);
        if self.mode() == Mode::Step {
            self.clock.advance(STEP_TICKS);
        }
        let (progressed, busy) = if self.is_lost() {
            (false, false)
        } else {
            let mut cmp = lock(&self.cmp);
            let mut any = false;
            for e in 0..cmp.engines.len() {
                any |= self.engine_quantum(&mut cmp, e);
            }
            self.publish_engine_status(&cmp);
            (any, look_ahead && cmp.engines.iter().any(Self::engine_busy))
        };
        self.flush_irq();
        (progressed, busy)
    }

    /// Whether [`Device::freeze`] was called. Acquire: pairs with the Release in `freeze`.
    pub(crate) fn is_frozen(&self) -> bool {
        self.frozen.load(Ordering::Acquire)
    }

    pub(crate) fn mode(&self) -> Mode {
        self.cfg.mode
    }

    /// CMP thread body.
    fn run(self: Arc<Self>) {
        // The machine's time counts each step of this loop up to STEP_ALLOWANCE, and a wait
        // up to what it asked for or until a kick ends it: whatever more the host took, it
        // did not run the GPU. The writer is credited under the wake lock (`WakeState::run`).
        {
            let mut w = lock(&self.wake);
            // The last thread's writer goes first: one writer at a time.
            drop(w.run.take());
            w.run = Some(self.run_clock.writer());
        }
        // Stopped or unwinding, the writer goes and the clock follows the host again.
        struct Ended<'a>(&'a Core);
        impl Drop for Ended<'_> {
            fn drop(&mut self) {
                drop(lock(&self.0.wake).run.take());
            }
        }
        let _ended = Ended(&self);
        loop {
            let starve = {
                let mut w = lock(&self.wake);
                if w.stop {
                    return;
                }
                if let Some(run) = w.run.as_mut() {
                    run.tick(clock::STEP_ALLOWANCE);
                }
                // Consume the kick *before* the pass: a kick that arrives during the pass
                // sets it again and the wait below returns at once (no lost wake-up).
                w.kicked = false;
                w.starve.take()
            };
            if let Some(d) = starve {
                std::thread::sleep(d);
            }
            // Loop while the next pass has work; otherwise go to the wait at once (a kick that
            // came during the pass makes it return immediately). The thread that the line
            // just woke then gets this CPU instead of waking the idle one.
            let (_, busy) = self.pass_and_look_ahead(true);
            if busy {
                continue;
            }
            let timeout = self
                .next_timer()
                .unwrap_or(Duration::from_millis(100))
                .min(Duration::from_millis(100));
            let mut w = lock(&self.wake);
            if !w.kicked && !w.stop {
                if let Some(run) = w.run.as_mut() {
                    run.tick(timeout.saturating_add(clock::STEP_ALLOWANCE));
                }
                // `sleeping` is set and cleared under the lock a kick takes, so a kick either
                // sees it and notifies or happens before the check above.
                w.sleeping = true;
                // The timeout is also a safety net: a missed kick costs latency, not a hang.
                let (g, _) = self
                    .wake_cv
                    .wait_timeout(w, timeout)
                    .unwrap_or_else(|e| e.into_inner());
                w = g;
                w.sleeping = false;
            }
        }
    }

    /// Time until the next timer-driven event (hang detection, F1, delayed interrupt).
    fn next_timer(&self) -> Option<Duration> {
        let cmp = lock(&self.cmp);
        let ticks = self.next_engine_deadline(&cmp);
        drop(cmp);
        let mut best = ticks.map(|t| self.clock.ticks_to_duration(t));
        if let Some(d) = self.events.hold_remaining(self) {
            best = Some(best.map_or(d, |b| b.min(d)));
        }
        best.map(|d| d.max(Duration::from_micros(50)))
    }
}

/// The emulated GPU. Create with [`Device::new`]; BAR0 is the [`MmioBus`] impl, BAR2 is
/// [`Device::doorbell_write`], BAR4 is [`Memory::vram_cpu_ptr`].
pub struct Device {
    core: Arc<Core>,
    thread: Mutex<Option<JoinHandle<()>>>,
    traffic: traffic::Traffic,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("config", &self.core.cfg)
            .finish_non_exhaustive()
    }
}

impl Device {
    /// Powers on a device over `mem`, driving `irq`. In threaded mode call [`Device::start`].
    pub fn new(config: DeviceConfig, mem: Arc<Memory>, irq: Arc<dyn InterruptLine>) -> Arc<Self> {
        let cfg = config.normalized();
        let core = Core {
            regs: regs::Regs::new(&cfg),
            cmp: Mutex::new(cmp::Cmp::new(cfg.engines)),
            signal_lock: Mutex::new(()),
            events: events::Events::new(irq),
            clock: clock::Clock::new(cfg.mode, cfg.clock_hz),
            run_clock: clock::RunClock::new(),
            faults: faults::Faults::new(cfg.engines),
            doorbells: doorbell::Doorbells::new(cfg.doorbells),
            mmu: mmu::Mmu::new(),
            wake: Mutex::new(WakeState::default()),
            wake_cv: Condvar::new(),
            passes: AtomicU64::new(0),
            frozen: AtomicBool::new(false),
            runlist_slots_read: AtomicU64::new(0),
            cfg,
            mem,
        };
        Arc::new(Self {
            core: Arc::new(core),
            thread: Mutex::new(None),
            traffic: traffic::Traffic::default(),
        })
    }

    /// The configuration in effect (after clamping).
    pub fn config(&self) -> &DeviceConfig {
        &self.core.cfg
    }

    /// The memory this device is attached to.
    pub fn memory(&self) -> &Arc<Memory> {
        &self.core.mem
    }

    /// Starts the CMP thread (threaded mode; no-op in step mode or if already running).
    pub fn start(&self) {
        if self.core.mode() != Mode::Threaded {
            return;
        }
        let mut t = lock(&self.thread);
        if t.is_some() {
            return;
        }
        lock(&self.core.wake).stop = false;
        let core = Arc::clone(&self.core);
        *t = std::thread::Builder::new()
            .name("rvgpu-cmp".into())
            .spawn(move || core.run())
            .ok();
    }

    /// Stops and joins the CMP thread (also done on drop). The current quantum finishes.
    pub fn stop(&self) {
        let handle = lock(&self.thread).take();
        if let Some(h) = handle {
            lock(&self.core.wake).stop = true;
            self.core.wake_cv.notify_all();
            let _ = h.join();
        }
    }

    /// Runs one CMP pass on the caller's thread (every engine one quantum: one packet or one
    /// 4 KiB chunk of a transfer) and advances the step clock. Returns whether anything
    /// happened (a packet, a chunk, an event, a state change). Meant for step mode; in
    /// threaded mode it is safe but races with the thread for work.
    pub fn step(&self) -> bool {
        self.core.pass()
    }

    /// Steps until a pass does nothing or `max_steps` passes ran; returns passes run. Note
    /// that timer-driven events (hang detection, F1) need further `step` calls: an idle or
    /// hung engine does nothing per pass until its timer expires.
    pub fn run_until_idle(&self, max_steps: usize) -> usize {
        let mut n = 0;
        while n < max_steps {
            n += 1;
            if !self.step() {
                break;
            }
        }
        n
    }

    /// Host accesses so far: register reads and writes, doorbell writes (the bus cost of the
    /// driver's and the UMD's hot paths, docs/performance.md).
    pub fn bus_counts(&self) -> BusCounts {
        self.traffic.counts()
    }

    /// Doorbell write (BAR2 page `page`). See `doorbell` docs. Ignored once frozen.
    pub fn doorbell_write(&self, page: u32, value: u64) {
        self.traffic.doorbell();
        if self.core.is_frozen() {
            return;
        }
        self.core.doorbell_write(page, value);
    }

    /// Freezes the device for good: what a halted (bug-checked) machine looks like from the
    /// device's side. The CMP does nothing more (its thread idles; `step` is a no-op), register
    /// reads return all-ones, register and doorbell writes are dropped, and the interrupt line
    /// is no longer driven. Non-blocking (callable from any thread, including while another
    /// thread is inside an MMIO access); irreversible.
    pub fn freeze(&self) {
        self.core.frozen.store(true, Ordering::Release);
        self.core.kick();
    }

    /// Whether [`Device::freeze`] was called.
    pub fn is_frozen(&self) -> bool {
        self.core.is_frozen()
    }

    /// CMP passes run so far (diagnostics: in step mode the `step` calls).
    pub fn cmp_passes(&self) -> u64 {
        self.core.passes.load(Ordering::Relaxed)
    }

    /// Whether the CMP thread is blocked waiting for a kick or a timer, with no kick pending
    /// (threaded mode).
    pub fn cmp_asleep(&self) -> bool {
        let w = lock(&self.core.wake);
        w.sleeping && !w.kicked
    }

    /// The device's own interrupt request level: `INT_STATUS & INT_ENABLE != 0` on a present,
    /// unfrozen device (what the line follows, before injected delays or drops). Read without
    /// side effects, for an OS that must tell a real assertion from a stale one.
    pub fn interrupt_pending(&self) -> bool {
        let ev = &self.core.events;
        !self.core.is_frozen()
            && !self.core.is_lost()
            && ev.status.load(Ordering::SeqCst) & ev.enable.load(Ordering::SeqCst) != 0
    }

    /// Doorbell counters.
    pub fn doorbell_stats(&self) -> DoorbellStats {
        self.core.doorbells.stats()
    }

    /// TLB counters of the device's MMU (hits, misses, invalidations).
    pub fn tlb_stats(&self) -> mmu::TlbStats {
        self.core.mmu.stats()
    }

    /// Whether the device's TLB caches a translation of `root` overlapping `[start, end)`.
    pub fn tlb_holds(&self, root: u64, start: u64, end: u64) -> bool {
        self.core.mmu.holds_range(root, start, end)
    }

    /// Commands engine `engine` has completed (= its COMPLETED_COMMANDS register).
    pub fn completed_commands(&self, engine: u32) -> u64 {
        self.core.regs.completed(engine)
    }

    /// Snapshot of one engine and its runlisted queues.
    pub fn engine_snapshot(&self, engine: u32) -> Option<EngineSnapshot> {
        self.core.engine_snapshot(engine)
    }

    /// Whether `engine` is power-gated (test introspection; cheap: no queue list is built).
    pub fn engine_gated(&self, engine: u32) -> Option<bool> {
        self.core.engine_gated(engine)
    }

    /// Runlist descriptors the CMP has read at RUNLIST_COMMIT and RUNLIST_UPDATE since the
    /// device was created (test introspection: what a commit costs the device).
    pub fn runlist_slots_read(&self) -> u64 {
        self.core.runlist_slots_read.load(Ordering::Relaxed)
    }

    /// Snapshot of the runlisted queue with id `queue_id`, if any engine lists it (cheap: a
    /// lookup, not a copy of every queue).
    pub fn queue(&self, queue_id: u32) -> Option<QueueSnapshot> {
        self.core.queue_snapshot(queue_id)
    }

    /// Snapshot of every runlisted queue on every engine.
    pub fn queues(&self) -> Vec<QueueSnapshot> {
        (0..self.core.cfg.engines)
            .filter_map(|e| self.core.engine_snapshot(e))
            .flat_map(|s| s.queues)
            .collect()
    }

    /// The machine's run time (threaded mode): what the CMP thread ran or waited of its own
    /// accord, without the host time it was ready but not scheduled ([`RunClock`]).
    pub fn run_clock(&self) -> RunClock {
        self.core.run_clock.clone()
    }

    /// Test hook (threaded mode): the CMP thread stops for `d` of host time at its next loop,
    /// as if the host did not schedule it; returns once it has stopped (at once in step mode
    /// or without a CMP thread). Work in flight stays in flight meanwhile.
    pub fn starve_cmp_thread(&self, d: Duration) {
        if lock(&self.thread).is_none() {
            return;
        }
        lock(&self.core.wake).starve = Some(d);
        self.core.kick();
        // The thread takes the request at the top of its loop, within one pass or wait.
        while {
            let w = lock(&self.core.wake);
            w.starve.is_some() && !w.stop
        } {
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Current GPU clock (same as reading GPU_CLOCK).
    pub fn gpu_clock(&self) -> u64 {
        self.core.clock.now()
    }

    /// Whether the interrupt line is asserted as last driven.
    pub fn line_asserted(&self) -> bool {
        self.core.events.line_level()
    }

    // ---- fault injection (see `faults`) ----

    /// Hangs `engine` now: it stops executing (the current queue's next packet never
    /// completes) until reset; after `hang_detect_ticks` it reports Hung.
    pub fn inject_hang(&self, engine: u32) {
        self.core.inject_hang(engine);
    }

    /// Makes the next reset of `engine` fail (RESET_RESULT Failed).
    pub fn fail_next_reset(&self, engine: u32) {
        self.core.faults.fail_next_reset(engine);
    }

    /// Holds every interrupt assertion back for `delay` (None: deliver at once again).
    pub fn set_interrupt_delay(&self, delay: Option<IrqDelay>) {
        self.core.faults.set_irq_delay(delay);
    }

    /// Fault injection: FENCE_SIGNALED event records carry `NO_QUEUE` instead of the
    /// running queue's id even with `CAPS.OPTIMIZED_FENCE_IRQ` (until turned off again).
    pub fn set_anonymous_fence_events(&self, on: bool) {
        self.core.faults.set_anonymous_fence_events(on);
    }

    /// Loses the next delivery of the interrupt (the interrupt controller misses the
    /// assertion; with an MSI front end, the message is lost in flight): the line is not
    /// raised for it until the device posts its next event, which raises it again (the ISR
    /// then drains both records), or until the causes are acknowledged some other way.
    pub fn drop_next_interrupt(&self) {
        self.core.faults.drop_next_irq();
    }

    /// Posts `record` to the event ring and raises `cause`, as a faulty GPU would (the
    /// record is whatever the caller says; the driver must not trust it). Nothing while lost.
    pub fn forge_event(
        &self,
        record: rvgpu_hw::event::EventRecord,
        cause: rvgpu_hw::regs::IntCause,
    ) {
        self.core.forge_event(record, cause);
    }

    /// Loses the device (surprise removal): registers read all-ones except DEVICE_STATUS,
    /// nothing executes, doorbells are ignored, the line drops. Only ADAPTER_RESET recovers.
    pub fn lose_device(&self) {
        self.core.lose_device();
    }

    /// Whether the device is lost (`DEVICE_STATUS.LOST`): it executes nothing until an adapter
    /// reset.
    pub fn is_lost(&self) -> bool {
        self.core.is_lost()
    }

    /// Writes `garbage` at queue `queue_id`'s current read position in its ring. Returns
    /// false if no runlisted queue has that id or the ring is unreachable.
    pub fn corrupt_ring(&self, queue_id: u32, garbage: u64) -> bool {
        self.core.corrupt_ring(queue_id, garbage)
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Device {
    /// One counted MMIO read: `frozen` (all ones) while the device is frozen, else `read`.
    #[inline]
    fn bus_read<T>(&self, frozen: T, read: impl FnOnce(&Core) -> T) -> T {
        self.traffic.read();
        if self.core.is_frozen() {
            return frozen;
        }
        read(&self.core)
    }

    /// One counted MMIO write: dropped while the device is frozen.
    #[inline]
    fn bus_write(&self, write: impl FnOnce(&Core)) {
        self.traffic.write();
        if !self.core.is_frozen() {
            write(&self.core);
        }
    }
}

impl MmioBus for Device {
    fn read32(&self, offset: usize) -> u32 {
        self.bus_read(u32::MAX, |c| c.read32(offset))
    }

    fn write32(&self, offset: usize, value: u32) {
        self.bus_write(|c| c.write32(offset, value));
    }

    fn read64(&self, offset: usize) -> u64 {
        self.bus_read(u64::MAX, |c| c.read64(offset))
    }

    fn write64(&self, offset: usize, value: u64) {
        self.bus_write(|c| c.write64(offset, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TDR-05: the kick that ends the CMP thread's wait also ends the host time that wait may
    /// count. Kept from returning from its wait (by the wake lock here, as by a host that does
    /// not schedule it), the thread's machine time moves by a step's allowance at most, however
    /// long it is kept.
    #[test]
    fn tdr_05_a_kick_ends_the_machine_time_a_wait_may_count() {
        let cfg = DeviceConfig::default();
        assert_eq!(cfg.mode, Mode::Threaded);
        let mem = Memory::new(cfg.vram_size);
        let dev = Device::new(cfg, mem, events::LatchLine::new());
        dev.start();
        // With nothing to do, the CMP thread goes to its wait.
        while !lock(&dev.core.wake).sleeping {
            std::thread::sleep(Duration::from_millis(1));
        }
        let clock = dev.run_clock();
        let mut w = lock(&dev.core.wake);
        assert!(Core::kicked(&mut w), "the CMP thread sleeps");
        dev.core.wake_cv.notify_one();
        let at_kick = clock.elapsed();
        std::thread::sleep(Duration::from_millis(150));
        let kept = clock.elapsed().saturating_sub(at_kick);
        drop(w);
        assert!(
            kept <= clock::STEP_ALLOWANCE,
            "{kept:?} of machine time while the woken thread could not run"
        );
    }
}
