//! Interrupts per N GPU fence signals: a counting benchmark, not a
//! timed one. Step mode, so every figure is deterministic (the same on every run and machine).
//!
//! Seven configurations, measured in the same run, each on a fresh single-dGPU machine with
//! the real driver, GPU signals coming from a user-mode hardware queue of a simulated process
//! ([`rvgpu_simos::testing::gpu::GpuQueue`]: the KMD's runlist, the test's ring writes and
//! doorbell rings, no PROGRESS packets, so every interrupt is a fence signal's):
//!
//! - (a) native fence, no CPU waiter: MonitoredValue stays u64::MAX, so no signal may
//!   interrupt (goal 0);
//! - (b) native fence, CPU waiters arriving in batches: before every segment of
//!   [`SEGMENT`] signals, [`BATCH`] event waits for the segment's last value are registered
//!   (several threads waiting for the same frame); goal: at most one interrupt per released
//!   batch;
//! - (c) baseline: a legacy monitored fence (MF-03) on an adapter without native fences,
//!   every signal with SIGNAL_ALWAYS_IRQ (one interrupt per signal);
//! - (d) waits staggered through each segment on 16 fences, all registered before the segment,
//!   under Microsoft's pages and under 24H2's MonitoredValue, which releases never move while
//!   waits remain (docs/windows-bringup.md §13): the interrupt storm that costs, and the
//!   reports that make the OS scan every fence;
//! - (e) the same number of waits arriving as the fence runs, evenly through the segment,
//!   each for a value one and a half arrivals ahead (a pipelined frame loop, another thread
//!   waiting on each frame): 24H2 raises MonitoredValue over the pending lower wait whenever
//!   CurrentValue already passed MonitoredValue, so that wait gets no interrupt at its value
//!   and is released late, by the next arrival's unwait or a signal reaching the raised value
//!   (late wakes, counted by the OS: [`rvgpu_simos::LateWakes`]);
//! - (f) the arriving pattern of (e) on one fence, issued as the UMD issues its CPU waits
//!   (`rvgpu_umd::wait::Waits`: a re-arm at the process's lowest pending wait after each
//!   registration above it and after each release, the woken waiter re-arming before the
//!   next signal). Held here, under both readings: no late wake, and 24H2's interrupts per
//!   satisfied wait within 1.2x of the pages' (CI runs this bench with `--test`);
//! - (g) the same waits from two processes on one shared fence, arrivals taking turns, each
//!   process with its own table: knowing the fence is shared (`Waits::share`, re-arm at
//!   CurrentValue + 1; held: no late wake), not knowing it (the per-process rule, whose
//!   re-arms and registrations raise MonitoredValue over the other's waits), and sharing the
//!   KMD's board of their pending waits (`rvgpu_umd::waitboard` over [`KmdBoard`]: a process
//!   per sharer, each writing only its own open's slot by escape; re-arm at the lowest of all;
//!   held: no late wake and at most 3 interrupts per satisfied wait under both readings), also
//!   with a third sharer writing garbage in its slot (held: no late wake, and under 24H2 no more
//!   interrupts than the C + 1 rule). The `--test` run checks the rows of (f) and (g) against
//!   docs/performance.md, which gives them at its N.
//!
//! `cargo bench -p rvgpu-simos --bench fence_interrupts` prints the table. N defaults to
//! 1,000,000 (20,000 with `--test`); `RVGPU_BENCH_SIGNALS` overrides it.

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rvgpu_ddi::basic::{BOOLEAN, PVOID, ULONG};
use rvgpu_ddi::init::PDXGKDDI_INTERRUPT_ROUTINE;

use rvgpu_ddi::interrupt::DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED;
use rvgpu_simos::testing::gpu::{GpuQueue, KernelGpuQueue, RING_BYTES};
use rvgpu_umd::wait::Waits;
use rvgpu_umd::waitboard::{Board, Slot, Slots};
use std::cell::{Cell, RefCell};

use rvgpu_simos::{
    LateWakes, Machine, MachineConfig, Mode, NativeFence, NativeFenceDesc, Notification, SimError,
    SimEvent,
};

/// Signals per segment in configuration (b).
const SEGMENT: u64 = 1000;
/// Waiters per batch in configuration (b).
const BATCH: usize = 4;
/// FENCE_SIGNAL is 5 words: this many fit the ring with room to spare.
const PER_FILL: u64 = (RING_BYTES as u64 / 40) - 2;

static REAL_ISR: OnceLock<PDXGKDDI_INTERRUPT_ROUTINE> = OnceLock::new();
static CLAIMED: AtomicU64 = AtomicU64::new(0);

/// The driver's ISR behind a counter of the interrupts it claims.
unsafe extern "system" fn counting_isr(ctx: PVOID, message: ULONG) -> BOOLEAN {
    let Some(real) = REAL_ISR.get().copied().flatten() else {
        return 0;
    };
    // SAFETY: the driver's own ISR, called as the OS called this one.
    let claimed = unsafe { real(ctx, message) };
    if claimed != 0 {
        CLAIMED.fetch_add(1, Ordering::Relaxed);
    }
    claimed
}

fn machine(native: bool) -> Machine {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.native_fence_feature = native;
    machine_from(cfg)
}

/// A started machine built from `cfg`, its driver's ISR behind [`counting_isr`].
fn machine_from(cfg: MachineConfig) -> Machine {
    let mut m = Machine::new(cfg);
    m.load_driver_with(|t| {
        let _ = REAL_ISR.set(t.DxgkDdiInterruptRoutine);
        t.DxgkDdiInterruptRoutine = Some(counting_isr);
    })
    .expect("load");
    CLAIMED.store(0, Ordering::Relaxed);
    m.start_adapter(0).expect("start");
    m
}

/// Signals values `from..=to` through `q` in fills of `per_fill` values (`push` writes one
/// value's packets), running the machine until the queue drains after each fill.
fn signal_range(
    m: &Machine,
    q: &mut GpuQueue,
    (from, to): (u64, u64),
    per_fill: u64,
    mut push: impl FnMut(&mut GpuQueue, u64) -> Result<(), SimError>,
) {
    let mut v = from;
    while v <= to {
        let end = to.min(v + per_fill - 1);
        for x in v..=end {
            ok(m, push(q, x));
        }
        ok(m, q.kick());
        let drained = ok(m, m.run_until(1_000_000, Duration::ZERO, |_| q.drained()));
        assert!(drained, "queue did not drain");
        v = end + 1;
    }
    ok(m, m.run_until_idle());
}

struct Row {
    name: &'static str,
    isr_calls: u64,
    claimed: u64,
    notifications: u64,
    released_batches: Option<u64>,
    seconds: f64,
}

/// ISR calls, fence notifications.
/// Interrupts since `base` and fence notifications so far.
fn counts(m: &Machine, base: u64) -> (u64, u64) {
    let isr = m.interrupt_counts(0).0 - base;
    let n = m
        .notifications(0)
        .into_iter()
        .filter(|p| match &p.notification {
            Notification::NativeFenceSignaled { .. } => true,
            Notification::Other { interrupt_type } => {
                *interrupt_type == DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED
            }
            _ => false,
        })
        .count() as u64;
    (isr, n)
}

/// Where a row's counting starts: its start time, and the interrupts and claims before it.
struct Counted {
    t: Instant,
    base: u64,
    claimed_base: u64,
}

impl Counted {
    /// Runs `m` idle first: set-up maps the queue and the fence (paging interrupts), which
    /// the row does not count.
    fn from_idle(t: Instant, m: &Machine) -> Self {
        ok(m, m.run_until_idle());
        Self {
            t,
            base: m.interrupt_counts(0).0,
            claimed_base: CLAIMED.load(Ordering::Relaxed),
        }
    }

    /// The row of what `m` counted since [`Self::from_idle`].
    fn row(&self, m: &Machine, name: &'static str, released_batches: Option<u64>) -> Row {
        let (isr, notes) = counts(m, self.base);
        Row {
            name,
            isr_calls: isr,
            claimed: CLAIMED.load(Ordering::Relaxed) - self.claimed_base,
            notifications: notes,
            released_batches,
            seconds: self.t.elapsed().as_secs_f64(),
        }
    }
}

/// A native-fence machine with a user-mode queue and one native fence, counting from idle.
fn native_rig() -> (Machine, GpuQueue, NativeFence, Counted) {
    let t = Instant::now();
    let m = machine(true);
    let q = ok(&m, GpuQueue::new(&m, 0, 0));
    let f = ok(
        &m,
        m.create_native_fence(0, q.pid(), NativeFenceDesc::default()),
    );
    let counted = Counted::from_idle(t, &m);
    (m, q, f, counted)
}

fn native_no_waiter(n: u64) -> Row {
    let (m, mut q, f, counted) = native_rig();
    signal_range(&m, &mut q, (1, n), PER_FILL, |q, v| q.signal(&f, v));
    assert_eq!(f.current_value(), n);
    counted.row(&m, "(a) native fence, no CPU waiter", None)
}

fn native_batched_waiters(n: u64) -> Row {
    let (m, mut q, f, counted) = native_rig();
    let mut released = 0u64;
    let mut from = 1u64;
    while from <= n {
        let to = n.min(from + SEGMENT - 1);
        let batch: Vec<SimEvent> = (0..BATCH)
            .map(|_| ok(&m, m.wait_native_fence_event(&f, to)))
            .collect();
        signal_range(&m, &mut q, (from, to), PER_FILL, |q, v| q.signal(&f, v));
        assert!(
            batch.iter().all(SimEvent::is_signaled),
            "lost wake-up in the batch waiting for {to}"
        );
        released += 1;
        from = to + 1;
    }
    assert_eq!(f.monitored_value(), u64::MAX, "nobody waits at the end");
    counted.row(&m, "(b) native fence, batched CPU waiters", Some(released))
}

fn legacy(n: u64) -> Row {
    let t = Instant::now();
    let m = machine(false);
    assert!(m.native_fence_caps(0).is_none(), "legacy adapter");
    // No native fences means no user-mode submission (24H2, BR-73): the legacy signals go
    // through a kernel-mode hardware queue, whose every submission also ends with the KMD's
    // PROGRESS interrupt (one per PER_FILL signals, counted in this row).
    let mut q = ok(&m, KernelGpuQueue::new(&m, 0, 0));
    let f = ok(&m, m.create_monitored_fence(0, q.process().pid, 0));
    let counted = Counted::from_idle(t, &m);
    let mut v = 1;
    while v <= n {
        let end = n.min(v + PER_FILL - 1);
        for x in v..=end {
            ok(&m, q.signal_monitored(&f, x));
        }
        ok(&m, q.kick(&m));
        let drained = ok(&m, m.run_until(1_000_000, Duration::ZERO, |_| q.drained()));
        assert!(drained, "queue did not drain");
        v = end + 1;
    }
    ok(&m, m.run_until_idle());
    assert_eq!(f.value(), n);
    counted.row(&m, "(c) legacy monitored fence (baseline)", None)
}

/// Fences signalled round-robin in configuration (d).
const STAGGER_FENCES: usize = 16;

/// (d) CPU waiters staggered through each segment, under one reading of MonitoredValue: before
/// every segment each of [`STAGGER_FENCES`] fences gets `waiters` CPU waits spread evenly over
/// the segment's values. By the pages the OS re-arms MonitoredValue for the next wait as each
/// is released, so only the signals that reach a wait interrupt; 24H2 keeps it at the first
/// wait until the last is released, so every signal in between interrupts too. Counted: ISR
/// calls, and reports that make the OS scan every fence (NULL, or more than 8 named, which
/// 24H2's `VidSchiProcessIsrNativeFenceSignaled` turns into a scan).
fn staggered(
    n: u64,
    waiters: u64,
    reading: rvgpu_simos::Windows,
    arriving: bool,
) -> (Row, u64, LateWakes) {
    let t = Instant::now();
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = reading;
    let m = machine_from(cfg);
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let fences: Vec<_> = (0..STAGGER_FENCES)
        .map(|_| {
            ok(
                &m,
                m.create_native_fence(0, q.pid(), NativeFenceDesc::default()),
            )
        })
        .collect();
    ok(&m, m.run_until_idle());
    let base = m.interrupt_counts(0).0;
    let claimed_base = CLAIMED.load(Ordering::Relaxed);
    let notes_base = m.notifications(0).len();
    let nf = STAGGER_FENCES as u64;
    let per_fence = (n / nf).max(1);
    // One value written to every fence.
    let every_fence = |q: &mut GpuQueue, x: u64| fences.iter().try_for_each(|f| q.signal(f, x));
    let mut released = 0u64;
    let mut from = 1u64;
    while arriving && from <= per_fence {
        let to = per_fence.min(from + SEGMENT - 1);
        let span = to - from + 1;
        // Arrival k (0-based) at value from-1 + span*k/waiters waits for one and a half
        // arrivals ahead (capped at the segment's end).
        let at = |k: u64| from - 1 + (span * k).div_ceil(waiters);
        let mut waits: Vec<SimEvent> = Vec::new();
        for k in 0..waiters {
            let target = (at(k + 1) + span / waiters / 2).min(to);
            for f in &fences {
                waits.push(ok(&m, m.wait_native_fence_event(f, target)));
            }
            signal_range(
                &m,
                &mut q,
                (at(k) + 1, at(k + 1)),
                PER_FILL / nf,
                every_fence,
            );
        }
        assert!(waits.iter().all(SimEvent::is_signaled), "lost wake-up");
        released += 1;
        from = to + 1;
    }
    while !arriving && from <= per_fence {
        let to = per_fence.min(from + SEGMENT - 1);
        let span = to - from + 1;
        let waits: Vec<SimEvent> = fences
            .iter()
            .flat_map(|f| (1..=waiters).map(move |k| (f, from - 1 + (span * k).div_ceil(waiters))))
            .map(|(f, v)| ok(&m, m.wait_native_fence_event(f, v)))
            .collect();
        signal_range(&m, &mut q, (from, to), PER_FILL / nf, every_fence);
        assert!(waits.iter().all(SimEvent::is_signaled), "lost wake-up");
        released += 1;
        from = to + 1;
    }
    let isr = m.interrupt_counts(0).0 - base;
    let scans = m
        .notifications(0)
        .into_iter()
        .skip(notes_base)
        .filter(|p| {
            matches!(&p.notification, Notification::NativeFenceSignaled { fences, .. }
                if fences.as_ref().is_none_or(|v| v.len() > 8))
        })
        .count() as u64;
    let name = if arriving {
        "(e) waits arriving, 1.5 ahead"
    } else {
        "(d) waits registered up front"
    };
    (
        Row {
            name,
            isr_calls: isr,
            claimed: CLAIMED.load(Ordering::Relaxed) - claimed_base,
            notifications: m.notifications(0).len().saturating_sub(notes_base) as u64,
            released_batches: Some(released),
            seconds: t.elapsed().as_secs_f64(),
        },
        scans,
        m.late_wakes(0),
    )
}

/// Values between two looks at the waits in (f): a woken waiter thread re-arms before the
/// GPU's next signal (a frame loop's signals are far apart next to a thread's wake-up).
const WAKE_CHUNK: u64 = 1;

/// How the processes of (g) re-arm a fence they share.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rearm {
    /// Each at its own lowest pending wait, not knowing the fence is shared.
    Lowest,
    /// At CurrentValue + 1 (`Waits::share`, no board).
    NextValue,
    /// At the lowest pending wait of every sharer, by the sharers' board
    /// (`rvgpu_umd::waitboard`); with `hostile`, one more sharer that waits for nothing
    /// publishes garbage in its slot before every arrival and every look.
    Board { hostile: bool },
}

/// Who issues the waits of (f) and (g): how many processes (each with its own
/// `rvgpu_umd::wait::Waits`, arrivals taking turns), and how they re-arm.
#[derive(Clone, Copy)]
struct Issuers {
    processes: usize,
    rearm: Rearm,
}

impl Issuers {
    fn shared(&self) -> bool {
        self.rearm != Rearm::Lowest
    }

    /// The row's re-arm column.
    fn label(&self) -> &'static str {
        match self.rearm {
            Rearm::Lowest => "lowest",
            Rearm::NextValue => "C + 1",
            Rearm::Board { hostile: false } => "board",
            Rearm::Board { hostile: true } => "board, hostile sharer",
        }
    }
}

/// What the hostile sharer of (g) publishes in its slot, in turn, CurrentValue at `c`: zero,
/// reached values, huge values, "more than named" over reached values (read as C + 1: the
/// costliest), and a value just ahead.
fn garbage(k: u64, c: u64) -> Slot {
    let (v, more) = match k % 6 {
        0 => (0, false),
        1 => (c, false),
        2 => (u64::MAX, false),
        3 => (1 << 62, false),
        4 => (c.saturating_sub(3), true),
        _ => (c.saturating_add(7), false),
    };
    Slot {
        waits: [v; rvgpu_umd::waitboard::SLOT_WAITS],
        more,
    }
}

/// Slots on the board of `who`: its processes' and the hostile sharer's.
fn board_len(who: &Issuers) -> usize {
    who.processes + usize::from(matches!(who.rearm, Rearm::Board { hostile: true }))
}

/// What (f) and (g) count besides the row: waits satisfied, kernel calls (each wait and each
/// re-arm is one `D3DKMTWaitForSynchronizationObjectFromCpu`), board accesses, the OS's
/// late-wake counts.
struct UmdCounts {
    satisfied: u64,
    registrations: u64,
    /// Board accesses: a publish before each wait, the answer after it and after each re-arm,
    /// a publish answered after each release (`rvgpu_umd::waitboard`).
    board: u64,
    late: LateWakes,
}

/// The KMD's wait board, as the shipped UMD reaches it (`rvgpu_hw::pdd::WaitBoardEscape`):
/// one simulated process per sharer, each holding its own open of the fence from an NT handle
/// and writing only its own slot, through its own device's escapes.
struct KmdBoard<'m> {
    sharers: Vec<(rvgpu_simos::kmt::SimKmt<'m>, u64)>,
}

impl<'m> KmdBoard<'m> {
    /// `sharers` processes holding `f`: its creator `creator` (sharer 0), and new processes
    /// opening it from a shared NT handle. Every holder of the fence is a sharer: an open that
    /// never publishes would make every answer Unknown.
    fn new(
        m: &'m Machine,
        f: &NativeFence,
        creator: rvgpu_simos::UmsProcess,
        sharers: usize,
    ) -> Self {
        use rvgpu_umd::kmt::Kmt;
        let nt = ok(m, m.share_native_fence(f));
        let mut v = vec![(m.kmt(&creator), f.current_value_va())];
        for _ in 1..sharers {
            let p = ok(m, m.create_process(0));
            let k = m.kmt(&p);
            let theirs = ok(m, m.duplicate_handle(creator.pid, nt, p.pid));
            let opened = k
                .open_native_fence(theirs)
                .expect("open from the NT handle");
            let va = opened.gpu.current.get();
            v.push((k, va));
        }
        Self { sharers: v }
    }

    fn escape(
        &self,
        me: usize,
        slot: Option<Slot>,
        from: u64,
        to: u64,
    ) -> rvgpu_umd::waitboard::Peers {
        use zerocopy::IntoBytes;
        let Some((k, va)) = self.sharers.get(me) else {
            return rvgpu_umd::waitboard::Peers::Unknown;
        };
        let asked = rvgpu_umd::waitboard::request(*va, slot, from, to);
        let mut q = asked;
        k.escape_driver_private(q.as_mut_bytes())
            .expect("the KMD's board");
        rvgpu_umd::waitboard::answer(&asked, &q)
    }
}

impl Board for KmdBoard<'_> {
    fn publish(&mut self, me: usize, slot: Slot) {
        self.escape(me, Some(slot), 0, 0);
    }

    fn peers(&self, me: usize, from: u64, to: u64) -> rvgpu_umd::waitboard::Peers {
        self.escape(me, None, from, to)
    }
}

/// (f) and (g): the arriving pattern of (e) on one fence, issued as the UMD issues its CPU waits
/// (`rvgpu_umd::wait::Waits`): each registration is followed by the table's re-arm, and a
/// released (blocking) waiter leaves and re-arms what its table says, looked at every
/// [`WAKE_CHUNK`] values. `who` says how many processes wait and whether they know the fence is
/// shared.
fn through_umd(
    n: u64,
    waiters: u64,
    reading: rvgpu_simos::Windows,
    who: Issuers,
) -> (Row, UmdCounts) {
    let t = Instant::now();
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = reading;
    let m = machine_from(cfg);
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let on_board = matches!(who.rearm, Rearm::Board { .. });
    let desc = NativeFenceDesc {
        shareable: on_board,
        ..NativeFenceDesc::default()
    };
    let f = ok(&m, m.create_native_fence(0, q.pid(), desc));
    // The board is the KMD's: one process per sharer, each with its own open of the fence.
    let mut board: Box<dyn Board + '_> = if on_board {
        Box::new(KmdBoard::new(&m, &f, q.process(), board_len(&who)))
    } else {
        Box::new(Slots::new(board_len(&who)))
    };
    ok(&m, m.run_until_idle());
    let base = m.interrupt_counts(0).0;
    let claimed_base = CLAIMED.load(Ordering::Relaxed);
    let notes_base = m.notifications(0).len();
    let mut tables: Vec<Waits> = (0..who.processes)
        .map(|_| {
            let mut t = Waits::default();
            if who.shared() {
                t.share(0);
            }
            t
        })
        .collect();
    let hostile = matches!(who.rearm, Rearm::Board { hostile: true });
    // The board's last slot is the hostile sharer's; every sharer joins with nothing pending.
    for p in 0..board_len(&who) {
        board.publish(p, Slot::NONE);
    }
    // What each process last published: an unchanged slot is not published again.
    let mut last = vec![Slot::NONE; who.processes];
    let mut scribbles = 0u64;
    let mut scribble = |board: &mut dyn Board, c: u64| {
        if hostile {
            board.publish(who.processes, garbage(scribbles, c));
            scribbles += 1;
        }
    };
    // Kernel calls (registrations: each wait and each re-arm), and the board's accesses.
    let calls = Cell::new(0u64);
    let board_calls = Cell::new(0u64);
    // (process, waiter id, its event) of the waits not yet seen released.
    let mut pending: Vec<(usize, u64, SimEvent)> = Vec::new();
    let mut satisfied = 0u64;
    // (value, event) of every re-arm.
    let rearms: RefCell<Vec<(u64, SimEvent)>> = RefCell::new(Vec::new());
    let register = |v: u64| {
        calls.set(calls.get() + 1);
        ok(&m, m.wait_native_fence_event(&f, v))
    };
    // A re-arm of process `p` at `v`; on the board, checked against the board read after it
    // (`Waits::confirm_among`).
    let rearm = |board: &dyn Board, p: usize, v: u64| {
        let before = f.current_value();
        rearms.borrow_mut().push((v, register(v)));
        if on_board {
            board_calls.set(board_calls.get() + 1);
            let c = f.current_value();
            if let Some(r) = Waits::confirm_among(v, c, board.peers(p, before, c)) {
                rearms.borrow_mut().push((r, register(r)));
            }
        }
    };
    let mut from = 1u64;
    let mut arrival = 0usize;
    while from <= n {
        let to = n.min(from + SEGMENT - 1);
        let span = to - from + 1;
        let at = |k: u64| from - 1 + (span * k).div_ceil(waiters);
        for k in 0..waiters {
            let target = (at(k + 1) + span / waiters / 2).min(to);
            let p = arrival % who.processes;
            arrival += 1;
            scribble(&mut *board, f.current_value());
            let before = f.current_value();
            let slot = tables[p].published(0, before, Some(target));
            if on_board && slot != last[p] {
                // Published before the registration, the others read after it
                // (`rvgpu_umd::waitboard`).
                board_calls.set(board_calls.get() + 1);
                board.publish(p, slot);
                last[p] = slot;
            }
            let ev = register(target);
            let c = f.current_value();
            let (id, mut low) = tables[p].add(0, target, c);
            if on_board {
                board_calls.set(board_calls.get() + 1);
                low = tables[p].rearm_among(0, target, c, board.peers(p, before, c));
            }
            if let Some(low) = low {
                rearm(&*board, p, low);
            }
            pending.push((p, id, ev));
            let mut v = at(k) + 1;
            while v <= at(k + 1) {
                let end = at(k + 1).min(v + WAKE_CHUNK - 1);
                signal_range(&m, &mut q, (v, end), PER_FILL, |q, x| q.signal(&f, x));
                // Each woken waiter leaves its table; its process re-arms what the table says.
                let mut woken = vec![false; who.processes];
                pending.retain(|(p, id, ev)| {
                    let done = ev.is_signaled();
                    if done {
                        tables[*p].remove(0, *id);
                        woken[*p] = true;
                        satisfied += 1;
                    }
                    !done
                });
                scribble(&mut *board, f.current_value());
                for (p, _) in woken.iter().enumerate().filter(|(_, w)| **w) {
                    let c = f.current_value();
                    let low = if on_board {
                        // One call: the publish, answered with the others.
                        board_calls.set(board_calls.get() + 1);
                        let slot = tables[p].published(0, c, None);
                        if slot != last[p] {
                            board.publish(p, slot);
                            last[p] = slot;
                        }
                        tables[p].after_release_among(0, c, board.peers(p, c, c))
                    } else {
                        tables[p].after_release(0, c)
                    };
                    if let Some(low) = low {
                        rearm(&*board, p, low);
                    }
                }
                v = end + 1;
            }
        }
        assert!(pending.is_empty(), "lost wake-up");
        from = to + 1;
    }
    // A re-arm for a value the fence reached was released (the hostile sharer's garbage can
    // make one arm beyond the last signal).
    assert!(
        rearms
            .borrow()
            .iter()
            .all(|(v, e)| *v > f.current_value() || e.is_signaled()),
        "a re-arm left pending"
    );
    (
        Row {
            name: "(f) waits arriving, 1.5 ahead, through the UMD",
            isr_calls: m.interrupt_counts(0).0 - base,
            claimed: CLAIMED.load(Ordering::Relaxed) - claimed_base,
            notifications: m.notifications(0).len().saturating_sub(notes_base) as u64,
            released_batches: None,
            seconds: t.elapsed().as_secs_f64(),
        },
        UmdCounts {
            satisfied,
            registrations: calls.get(),
            board: board_calls.get(),
            late: m.late_wakes(0),
        },
    )
}

/// The table of (f) and (g), printed as docs/performance.md gives it, with its gates: no late
/// wake for waits of processes that know whom they share the fence with, and under 24H2 one
/// process's waits within 1.2x the pages' interrupts per wait. With `check` (the `--test` run,
/// N = 20,000) every row must be a row of docs/performance.md, which states them at that N.
fn through_umd_rows(n: u64, check: bool) {
    println!(
        "(f), (g): one fence, N values; waits arriving as in (e), issued through the UMD's waits"
    );
    let mut printed = Vec::new();
    println!(
        "| waits, processes, re-arm | interrupts | kernel calls | board | per wait | 24H2 late wakes (by) |"
    );
    println!("|---|---|---|---|---|---|");
    let who = [
        (1, Rearm::Lowest),
        (2, Rearm::NextValue),
        (2, Rearm::Lowest),
        (2, Rearm::Board { hostile: false }),
        (2, Rearm::Board { hostile: true }),
    ]
    .map(|(processes, rearm)| Issuers { processes, rearm });
    for waiters in [4, 16] {
        // The C + 1 row's interrupts under 24H2: what a hostile sharer may cost at most.
        let mut next_value = u64::MAX;
        for w in who {
            // Pages, then 24H2.
            let [(rp, cp), (r2, c2)] = [rvgpu_simos::Windows::PAGES, rvgpu_simos::Windows::W24H2]
                .map(|reading| through_umd(n, waiters, reading, w));
            for (reading, c) in [("pages", &cp), ("24h2", &c2)] {
                // The gate: no late wake where every process knows whom it shares with.
                if w.processes == 1 || w.shared() {
                    assert_eq!(
                        c.late.late, 0,
                        "{waiters} waits, {} processes, {reading}: late wakes",
                        w.processes
                    );
                }
            }
            assert_eq!(
                cp.satisfied, c2.satisfied,
                "the same waits under both readings"
            );
            let row = format!(
                "| {waiters}, {}, {} | {}/{} | {}/{} | {} | {}/{} | {} ({}) |",
                w.processes,
                w.label(),
                rp.isr_calls,
                r2.isr_calls,
                cp.registrations,
                c2.registrations,
                if matches!(w.rearm, Rearm::Board { .. }) {
                    format!("{}/{}", cp.board, c2.board)
                } else {
                    "-".into()
                },
                ratio2(rp.isr_calls, cp.satisfied),
                ratio2(r2.isr_calls, c2.satisfied),
                c2.late.late,
                c2.late.late_max,
            );
            println!("{row}");
            printed.push(row);
            // The gate: under 24H2 one process's waits cost at most 1.2x the pages' interrupts.
            let per = |r: &Row, c: &UmdCounts| r.isr_calls as f64 / c.satisfied.max(1) as f64;
            assert!(
                w.processes > 1 || per(&r2, &c2) <= 1.2 * per(&rp, &cp),
                "(f) {waiters} waits: 24H2 {} interrupts per wait against the pages' {}",
                per(&r2, &c2),
                per(&rp, &cp)
            );
            // The gate: processes sharing a fence through the board take at most 3 interrupts
            // per satisfied wait under either reading, a hostile sharer or not.
            if w.rearm == Rearm::NextValue {
                next_value = r2.isr_calls;
            }
            // The gate: under 24H2 a sharer writing garbage on the board costs the others at
            // most the interrupts of the C + 1 rule (and, above, no late wake).
            if w.rearm == (Rearm::Board { hostile: true }) {
                assert!(
                    r2.isr_calls <= next_value,
                    "(g) {waiters} waits, hostile sharer: {} interrupts, C + 1 {next_value}",
                    r2.isr_calls
                );
            }
            if let Rearm::Board { hostile: false } = w.rearm {
                for (reading, r, c) in [("pages", &rp, &cp), ("24h2", &r2, &c2)] {
                    assert!(
                        per(r, c) <= 3.0,
                        "(g) {waiters} waits, board, {reading}: {} interrupts per wait",
                        per(r, c)
                    );
                }
            }
        }
    }
    if check && n == 20_000 {
        let doc = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/performance.md"
        ))
        .expect("docs/performance.md");
        let missing: Vec<&String> = printed
            .iter()
            .filter(|r| !doc.lines().any(|l| l == r.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "rows docs/performance.md does not give: {missing:#?}"
        );
    }
}

/// `a / b` to two decimals.
fn ratio2(a: u64, b: u64) -> String {
    if b == 0 {
        "n/a".into()
    } else {
        format!("{:.2}", a as f64 / b as f64)
    }
}

fn ratio(a: u64, b: u64) -> String {
    if b == 0 {
        "n/a".into()
    } else {
        format!("{:.6}", a as f64 / b as f64)
    }
}

fn main() {
    // `cargo bench -- --test` (CI's smoke run) counts a short run; the figures of
    // docs/performance.md come from the default N.
    let quick = std::env::args().any(|a| a == "--test");
    let n: u64 = std::env::var("RVGPU_BENCH_SIGNALS")
        .ok()
        .and_then(|s| s.replace(['_', ','], "").parse().ok())
        .unwrap_or(if quick { 20_000 } else { 1_000_000 });
    println!("fence_interrupts: N = {n} GPU signals per configuration (step mode, deterministic)");
    println!(
        "(b): a batch of {BATCH} CPU waits for the last value of every {SEGMENT}-signal segment"
    );
    let rows = [native_no_waiter(n), native_batched_waiters(n), legacy(n)];
    println!();
    println!(
        "| configuration | ISR calls | claimed | fence notifications | per signal | released batches | ISR per batch | wall s |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let (b, per_b) = match r.released_batches {
            Some(b) => (b.to_string(), ratio(r.isr_calls, b)),
            None => ("-".into(), "-".into()),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} |",
            r.name,
            r.isr_calls,
            r.claimed,
            r.notifications,
            ratio(r.isr_calls, n),
            b,
            per_b,
            r.seconds
        );
    }
    println!();
    println!(
        "(d): {STAGGER_FENCES} fences signalled round-robin, N/{STAGGER_FENCES} values each; \
         waits spread over each {SEGMENT}-value segment"
    );
    println!(
        "| pattern | waits per fence and segment | reading | ISR calls | per signal | full-scan reports | raised over | late wakes | late by (mean, max values) | wall s |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---|---:|");
    for arriving in [false, true] {
        for waiters in [1, 4, 16] {
            if arriving && waiters == 1 {
                // One wait per segment arrives up front either way.
                continue;
            }
            for reading in [rvgpu_simos::Windows::PAGES, rvgpu_simos::Windows::W24H2] {
                let (r, scans, late) = staggered(n, waiters, reading, arriving);
                println!(
                    "| {} | {waiters} | {} | {} | {} | {} | {} | {} | {}, {} | {:.1} |",
                    r.name,
                    reading.name(),
                    r.isr_calls,
                    ratio(r.isr_calls, n),
                    scans,
                    late.raised_over,
                    late.late,
                    ratio(late.late_values, late.late),
                    late.late_max,
                    r.seconds
                );
            }
        }
    }
    println!();
    through_umd_rows(n, quick);
    let c = rows[2].isr_calls;
    println!();
    println!(
        "ratio ISR calls (a)/(c) = {}   (b)/(c) = {}",
        ratio(rows[0].isr_calls, c),
        ratio(rows[1].isr_calls, c)
    );
    println!(
        "ratio notifications (a)/(c) = {}   (b)/(c) = {}",
        ratio(rows[0].notifications, rows[2].notifications),
        ratio(rows[1].notifications, rows[2].notifications)
    );
}
