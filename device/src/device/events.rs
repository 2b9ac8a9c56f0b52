//! Event ring, interrupt status and the interrupt line.
//!
//! Posting (per `rvgpu_hw::event`): write the 32-byte record at `WPTR % size`, publish it by
//! storing `WPTR + 1` (Release), then set the cause bit in `INT_STATUS`. A full ring (or an
//! unusable one: bad size, unaligned or unreachable base) drops the record and raises
//! EVENT_OVERFLOW instead. With posting disabled (EVENT_RING_CTRL bit 0 clear) only the cause
//! bit is set.
//!
//! The line is level-triggered: asserted while `INT_STATUS & INT_ENABLE != 0`. A delivery lost
//! to fault injection (`drop_next_interrupt`) is retried at the next posted event, so one lost
//! interrupt never silences the later ones (docs/robustness.md). The line is driven
//! by `Core::flush_irq`, which every entry point calls with no device lock held, because
//! [`InterruptLine::set`] may run the driver's ISR synchronously and the ISR does MMIO.
//! Concurrent callers are combined: one thread at a time drives the line and re-evaluates
//! until no request is pending, so the last level driven always matches the last state
//! (no stale `set(false)` after a newer `set(true)`, and no recursion deadlock if the ISR
//! acknowledges from inside `set`).

use rvgpu_hw::addr::GpuVa;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rvgpu_hw::event::EventRecord;
use rvgpu_hw::mmu::Access;
use rvgpu_hw::regs::IntCause;

use super::bus::{words, Space};
use super::faults::IrqDelay;
use super::{lock, Core};

/// The device's interrupt output, implemented by whoever plays the interrupt controller (the
/// simulated OS). Level-triggered: the device calls `set` whenever
/// `INT_STATUS & INT_ENABLE != 0` changes (subject to injected delays/drops), never twice in
/// a row with the same level, and never while holding a device lock, so `set` may call
/// back into the device (e.g. run the ISR synchronously).
pub trait InterruptLine: Send + Sync {
    /// The line is now `asserted` (true) or deasserted (false).
    fn set(&self, asserted: bool);
    /// After a `set(true)`, once the device has stopped driving the line: wake whoever
    /// services it. A servicer's wake-up is a system call that can take microseconds (or the
    /// caller can be preempted in it); done inside `set`, the device would still be the
    /// line's only driver meanwhile, so the ISR's acknowledge could not lower the line and
    /// the servicer would see it high after its ISR had cleared the cause. Nothing by default
    /// (a line whose `set` delivers by itself).
    fn wake(&self) {}
}

/// A simple [`InterruptLine`] that records the level and counts rising edges and servicer
/// wake-ups; tests and the simulated OS can wait on it.
#[derive(Debug, Default)]
pub struct LatchLine {
    state: Mutex<(bool, u64)>,
    cv: Condvar,
    wakes: AtomicU64,
}

impl LatchLine {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Current level.
    pub fn level(&self) -> bool {
        lock(&self.state).0
    }

    /// Rising edges seen so far.
    pub fn rises(&self) -> u64 {
        lock(&self.state).1
    }

    /// [`InterruptLine::wake`] calls so far.
    pub fn wakes(&self) -> u64 {
        self.wakes.load(Ordering::Relaxed)
    }

    /// Waits until more than `seen` rising edges happened or `timeout` passes; returns the
    /// edge count.
    pub fn wait_rises_above(&self, seen: u64, timeout: Duration) -> u64 {
        let g = lock(&self.state);
        let (g, _) = self
            .cv
            .wait_timeout_while(g, timeout, |s| s.1 <= seen)
            .unwrap_or_else(|e| e.into_inner());
        g.1
    }
}

impl InterruptLine for LatchLine {
    fn set(&self, asserted: bool) {
        let mut g = lock(&self.state);
        if asserted && !g.0 {
            g.1 += 1;
        }
        g.0 = asserted;
        drop(g);
        self.cv.notify_all();
    }

    fn wake(&self) {
        self.wakes.fetch_add(1, Ordering::Relaxed);
    }
}

/// Event-ring programming (EVENT_RING_BASE/SIZE/CTRL).
#[derive(Debug, Default)]
pub(crate) struct RingCfg {
    pub(crate) base: u64,
    pub(crate) size: u32,
    pub(crate) enabled: bool,
}

#[derive(Debug)]
enum Hold {
    UntilPass(u64),
    UntilInstant(Instant),
}

/// What the outside world has been told about the line.
#[derive(Debug, Default)]
struct LineState {
    /// Level last passed to `set`.
    reported: bool,
    /// An assertion was dropped by fault injection; stays set until the device posts another
    /// event or the causes go away.
    swallowed: bool,
    /// An assertion held back by an injected delay.
    hold: Option<Hold>,
    /// The device's request (`INT_STATUS & INT_ENABLE != 0`) at the last evaluation.
    requested: bool,
}

/// What one evaluation of the line does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Drive {
    /// Nothing to tell.
    Keep,
    /// Drive the line to this level.
    Set(bool),
    /// The line is already high and the request rose again under it (a new event, or the
    /// request dropped and came back between two evaluations): wake the servicer again. A
    /// servicer that samples the device's own request (as an interrupt controller sees a
    /// level) may have found it low through the ISR's acknowledge and gone to sleep before
    /// the line was lowered; no rising edge would ever tell it about the new request.
    Remind,
}

pub(crate) struct Events {
    pub(crate) ring: Mutex<RingCfg>,
    pub(crate) wptr: AtomicU32,
    pub(crate) rptr: AtomicU32,
    pub(crate) status: AtomicU32,
    pub(crate) enable: AtomicU32,
    /// EVENT_WB_ADDR (0: off).
    pub(crate) wb: AtomicU64,
    /// Serialises write-backs: each stores what it read under the lock, and every change of
    /// the word's inputs is followed by one, so the last store is never a stale one.
    wb_lock: Mutex<()>,
    irq: Arc<dyn InterruptLine>,
    line: Mutex<LineState>,
    busy: AtomicBool,
    redo: AtomicBool,
    /// An event was posted since the line was last evaluated: a
    /// delivery lost to fault injection is attempted again (see [`Core::flush_irq`]).
    fresh: AtomicBool,
}

impl Events {
    pub(crate) fn new(irq: Arc<dyn InterruptLine>) -> Self {
        Self {
            ring: Mutex::new(RingCfg::default()),
            wptr: AtomicU32::new(0),
            rptr: AtomicU32::new(0),
            status: AtomicU32::new(0),
            enable: AtomicU32::new(0),
            wb: AtomicU64::new(0),
            wb_lock: Mutex::new(()),
            irq,
            line: Mutex::new(LineState::default()),
            busy: AtomicBool::new(false),
            redo: AtomicBool::new(false),
            fresh: AtomicBool::new(false),
        }
    }

    pub(crate) fn line_level(&self) -> bool {
        lock(&self.line).reported
    }

    /// Real time until a held (delayed) assertion is due, for the CMP thread's timer.
    pub(crate) fn hold_remaining(&self, _core: &Core) -> Option<Duration> {
        match lock(&self.line).hold {
            None => None,
            Some(Hold::UntilInstant(t)) => Some(t.saturating_duration_since(Instant::now())),
            // Step-counted holds advance with CMP passes; poll soon.
            Some(Hold::UntilPass(_)) => Some(Duration::from_millis(1)),
        }
    }

    /// Power-on state (ADAPTER_RESET).
    pub(crate) fn power_on(&self) {
        let mut r = lock(&self.ring);
        *r = RingCfg::default();
        self.wptr.store(0, Ordering::Release);
        self.rptr.store(0, Ordering::Release);
        self.status.store(0, Ordering::SeqCst);
        self.enable.store(0, Ordering::SeqCst);
        self.wb.store(0, Ordering::Relaxed);
    }
}

fn ring_size_ok(size: u32) -> bool {
    size.is_power_of_two() && (16..=65536).contains(&size)
}

impl Core {
    /// Posts one event record and raises `cause` (or EVENT_OVERFLOW if the record cannot be
    /// written). Does not drive the line: the caller's entry point ends with `flush_irq`.
    pub(crate) fn post_event(&self, rec: EventRecord, cause: IntCause) {
        let ev = &self.events;
        let ring = lock(&ev.ring);
        let mut raise = cause;
        if ring.enabled {
            // Relaxed: WPTR is only written under the ring lock, which we hold.
            let w = ev.wptr.load(Ordering::Relaxed);
            // Acquire: pairs with the driver's Release store of RPTR, so its reads of the
            // slots it consumed happen before we overwrite them.
            let r = ev.rptr.load(Ordering::Acquire);
            let used = u64::from(w.wrapping_sub(r));
            let written = if !ring_size_ok(ring.size)
                || !ring.base.is_multiple_of(rvgpu_hw::PAGE_SIZE)
                || used >= u64::from(ring.size)
            {
                false
            } else {
                let slot = u64::from(w % ring.size) * 32;
                // The event ring is the KMD's own memory, programmed by bus address; a slot
                // outside the windows is unreachable like any other (EVENT_OVERFLOW).
                let sys = Space::BUS;
                match ring
                    .base
                    .checked_add(slot)
                    .map(|a| self.sp_spans(sys, GpuVa::new(a), 32, Access::Write))
                {
                    Some(Ok(spans)) => {
                        for (d, s) in words(&spans).zip(rec.to_words()) {
                            // Relaxed: the Release store of WPTR below publishes the record.
                            d.store(s, Ordering::Relaxed);
                        }
                        ev.wptr.store(w.wrapping_add(1), Ordering::Release);
                        true
                    }
                    _ => false,
                }
            };
            if !written {
                raise = IntCause::EVENT_OVERFLOW;
            }
        }
        drop(ring);
        // SeqCst (at least Release): the ISR's W1C acknowledge is an RMW that reads this
        // write, so a driver that clears the bit and then loads WPTR (Acquire) sees the
        // record published above.
        ev.status.fetch_or(raise.bits(), Ordering::SeqCst);
        self.write_back();
        // Something new to tell: a delivery lost earlier is retried at the next flush.
        ev.fresh.store(true, Ordering::SeqCst);
    }

    /// Keeps the event write-back word (docs/hardware.md 7.5) equal to
    /// `INT_STATUS << 32 | WPTR`: one 64-bit store, after the record and WPTR it describes
    /// (Release) and before the line is driven. An address the device cannot reach drops
    /// the store.
    pub(crate) fn write_back(&self) {
        let ev = &self.events;
        let at = ev.wb.load(Ordering::Relaxed);
        if at == 0 || !self.cfg.event_wb || !at.is_multiple_of(8) {
            return;
        }
        // Only while posting is on: a driver that stopped the ring may free the word's page.
        if !lock(&ev.ring).enabled {
            return;
        }
        let _one = lock(&ev.wb_lock);
        let value = u64::from(ev.status.load(Ordering::SeqCst)) << 32
            | u64::from(ev.wptr.load(Ordering::Acquire));
        if let Ok(spans) = self.sp_spans(Space::BUS, GpuVa::new(at), 8, Access::Write) {
            if let Some(d) = words(&spans).next() {
                d.store(value, Ordering::Release);
            }
        }
    }

    /// A write of `rptr` to EVENT_RING_RPTR: records posted after the ISR read the write
    /// pointer are still unconsumed, and their cause bits may have been acknowledged since;
    /// EVENT_PENDING makes them interrupt again (docs/hardware.md 7.5).
    pub(crate) fn rptr_written(&self, rptr: u32) {
        let ev = &self.events;
        if self.cfg.event_wb && ev.wptr.load(Ordering::Acquire) != rptr {
            ev.status
                .fetch_or(IntCause::EVENT_PENDING.bits(), Ordering::SeqCst);
            ev.fresh.store(true, Ordering::SeqCst);
        }
        self.write_back();
    }

    /// Drives the interrupt line to match `INT_STATUS & INT_ENABLE` (and fault injection).
    /// Must be called with no device lock held.
    pub(crate) fn flush_irq(&self) {
        if self.is_frozen() {
            // A frozen device drives nothing (the line keeps its last level).
            return;
        }
        let ev = &self.events;
        // Request a re-evaluation, then try to become the (only) deliverer. SeqCst on the
        // flag pair: "store redo; CAS busy" here against "store busy=false; load redo" in
        // the deliverer is a store-load pattern; either we get `busy` or the deliverer sees
        // our request.
        ev.redo.store(true, Ordering::SeqCst);
        let mut raised = false;
        loop {
            if ev
                .busy
                .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                break;
            }
            while ev.redo.swap(false, Ordering::SeqCst) {
                let want = !self.is_lost()
                    && ev.status.load(Ordering::SeqCst) & ev.enable.load(Ordering::SeqCst) != 0;
                match self.decide_line(want) {
                    Drive::Set(level) => {
                        ev.irq.set(level);
                        raised |= level;
                    }
                    Drive::Remind => raised = true,
                    Drive::Keep => {}
                }
            }
            ev.busy.store(false, Ordering::SeqCst);
            if !ev.redo.load(Ordering::SeqCst) {
                break;
            }
        }
        // Outside the deliverer's role (see `InterruptLine::wake`): an acknowledge that comes
        // while the servicer is being woken lowers the line itself.
        if raised {
            ev.irq.wake();
        }
    }

    fn decide_line(&self, want: bool) -> Drive {
        let mut ls = lock(&self.events.line);
        let fresh = self.events.fresh.swap(false, Ordering::SeqCst);
        let rose = want && !std::mem::replace(&mut ls.requested, want);
        if !want {
            ls.hold = None;
            ls.swallowed = false;
            if ls.reported {
                ls.reported = false;
                return Drive::Set(false);
            }
            return Drive::Keep;
        }
        if ls.reported {
            return if fresh || rose {
                Drive::Remind
            } else {
                Drive::Keep
            };
        }
        if ls.swallowed {
            // A lost delivery stays lost only until the device posts another event: then it
            // asserts again (and the ISR drains both records).
            if !fresh {
                return Drive::Keep;
            }
            ls.swallowed = false;
        }
        if let Some(delay) = self.faults.irq_delay() {
            let now_pass = self.passes.load(Ordering::Relaxed);
            match &ls.hold {
                None => {
                    ls.hold = Some(match delay {
                        IrqDelay::Steps(n) => Hold::UntilPass(now_pass.saturating_add(n)),
                        // A delay too long to represent never expires.
                        IrqDelay::Duration(d) => match Instant::now().checked_add(d) {
                            Some(t) => Hold::UntilInstant(t),
                            None => Hold::UntilPass(u64::MAX),
                        },
                    });
                    return Drive::Keep;
                }
                Some(Hold::UntilPass(p)) if now_pass < *p => return Drive::Keep,
                Some(Hold::UntilInstant(t)) if Instant::now() < *t => return Drive::Keep,
                Some(_) => ls.hold = None,
            }
        }
        if self.faults.take_drop_next() {
            ls.swallowed = true;
            return Drive::Keep;
        }
        ls.reported = true;
        Drive::Set(true)
    }
}
