//! Engine states (STATUS, ENGINE_STATE events), hang and idle detection, engine reset
//! (CTRL) and adapter reset (ADAPTER_RESET).
//!
//! States: Active while it has a runnable queue or a packet in flight; Idle when every
//! runlisted queue is empty, faulted or blocked; Hung when a HANG (or an injected hang) has
//! run for `hang_detect_ticks` (ENGINE_STATE event Active->Hung); TransitionToF1 when idle for
//! `idle_f1_ticks` (ENGINE_STATE event Idle->TransitionToF1, if enabled); Resetting during a
//! reset (momentary: resets are synchronous).
//!
//! Engine reset (CTRL): only the queue with a packet in flight is aborted and leaves the
//! runlist; the other queues keep their state, and the engine is *held* (Idle, STATUS bit 9):
//! it runs nothing, detects no idleness for F1, until the next RUNLIST_COMMIT. Doorbells,
//! kicks and wait wake-ups still update the held engine's queues, so nothing is lost.

use std::sync::atomic::Ordering;

use rvgpu_hw::engine::{
    EngineState, EngineStatus, ResetResult, ENGINE_POWER_F0, ENGINE_POWER_F1, STATUS_HAS_WORK,
};
use rvgpu_hw::event::{EventKind, EventRecord};
use rvgpu_hw::queue::NO_QUEUE;
use rvgpu_hw::regs::{DeviceStatus, IntCause};

use super::cmp::{Cmp, Engine, InFlight};
use super::{lock, Core};

impl Core {
    fn post_engine_state(&self, e: usize, queue_id: u32, prev: EngineState, new: EngineState) {
        self.post_event(
            EventRecord {
                kind: EventKind::EngineState as u8,
                engine: e as u8,
                flags: 0,
                queue_id,
                arg0: prev as u64,
                arg1: new as u64,
                arg2: 0,
            },
            IntCause::ENGINE_STATE,
        );
    }

    /// Posts an ENGINE_STATE record for every engine that is in TransitionToF1 or Hung. Run
    /// when event posting is (re)enabled: a state entered while posting was off would
    /// otherwise never be reported, because the device posts only on entering a state.
    pub(crate) fn repost_engine_states(&self) {
        let cmp = lock(&self.cmp);
        for (e, eng) in cmp.engines.iter().enumerate() {
            if matches!(eng.state, EngineState::TransitionToF1 | EngineState::Hung) {
                self.post_engine_state(e, NO_QUEUE, EngineState::Active, eng.state);
            }
        }
    }

    /// POWER: F0 or F1 for engine `e` (docs/hardware.md 4.3); other values are ignored
    /// **[model] M40**. Entering F1 stops the engine between two CMP passes: the packet in
    /// flight (if any) stays in flight and nothing is picked. Leaving F1 restarts the idle
    /// timer and turns a pending F1 request (TransitionToF1) back into Idle, so an engine that
    /// stays idle asks again after the idle period.
    pub(crate) fn set_engine_power(&self, e: usize, v: u32) {
        let gate = match v {
            ENGINE_POWER_F0 => false,
            ENGINE_POWER_F1 => true,
            _ => return,
        };
        let Some(r) = self.regs.engines.get(e) else {
            return;
        };
        let mut cmp = lock(&self.cmp);
        let Some(eng) = cmp.engines.get_mut(e) else {
            return;
        };
        if eng.gated != gate {
            eng.gated = gate;
            if !gate {
                eng.idle_since = None;
                if eng.state == EngineState::TransitionToF1 {
                    eng.state = EngineState::Idle;
                }
            }
        }
        // Release (under the CMP lock): the pass that runs after F0 is seen, and a reader of
        // F1 knows no packet starts any more.
        r.power.store(v, Ordering::Release);
        self.publish_engine_status(&cmp);
        drop(cmp);
        if !gate {
            self.kick();
        }
    }

    /// One quantum of engine `e`. Returns whether anything happened.
    pub(crate) fn engine_quantum(&self, cmp: &mut Cmp, e: usize) -> bool {
        let now = self.clock.now();
        let Some(eng) = cmp.engines.get_mut(e) else {
            return false;
        };
        if eng.gated {
            // Power-gated (F1): no packet runs and no timer is evaluated until F0.
            return false;
        }
        let hang_since = eng.injected_hang.or(match eng.inflight {
            Some(InFlight::Hang { since, .. }) => Some(since),
            _ => None,
        });
        if let Some(since) = hang_since {
            // A hung engine makes no progress; it only reports, once, that it is hung.
            if !eng.hang_reported && now.saturating_sub(since) >= self.cfg.hang_detect_ticks {
                eng.hang_reported = true;
                let prev = eng.state;
                eng.state = EngineState::Hung;
                let qid = current_id(eng);
                self.post_engine_state(e, qid, prev, EngineState::Hung);
                return true;
            }
            return false;
        }
        if eng.held {
            // After an engine reset: nothing runs until the driver commits a runlist.
            eng.current = None;
            return false;
        }
        if eng.inflight.is_some() {
            self.run_inflight(eng, e);
        } else {
            let Some(qi) = eng.pick() else {
                return self.engine_idle(eng, e, now);
            };
            eng.current = Some(qi);
            eng.idle_since = None;
            eng.state = EngineState::Active;
            // A packet of another context: log the switch before it runs.
            self.sched_log_pick(eng, e, qi);
            self.exec_packet(cmp, e, qi);
        }
        // The engine switches out as soon as its last packet retires, in the same quantum
        // rather than the next: a CMP thread that needed one more pass only to find nothing
        // runnable kept its CPU busy just after raising the line, so the interrupt thread it
        // woke had to start on the other, idle CPU (the line → ISR hop).
        if let Some(eng) = cmp.engines.get_mut(e) {
            if eng.inflight.is_none() && !eng.any_runnable() {
                self.engine_idle(eng, e, now);
            }
        }
        true
    }

    /// Nothing runnable on engine `e`: the context that ran last goes idle, and an engine idle
    /// for `idle_f1_ticks` starts its F1 transition. Returns whether the state changed.
    fn engine_idle(&self, eng: &mut Engine, e: usize, now: u64) -> bool {
        eng.current = None;
        let stopped = self.sched_log_stop(eng, e);
        if eng.state == EngineState::Active || eng.state == EngineState::Hung {
            eng.state = EngineState::Idle;
        }
        let since = *eng.idle_since.get_or_insert(now);
        let f1 = self.cfg.idle_f1_ticks;
        if f1 > 0 && eng.state == EngineState::Idle && now.saturating_sub(since) >= f1 {
            eng.state = EngineState::TransitionToF1;
            self.post_engine_state(e, NO_QUEUE, EngineState::Idle, EngineState::TransitionToF1);
            return true;
        }
        stopped
    }

    /// Whether engine `e`'s next quantum has work that neither a kick nor a timer announces:
    /// a transfer in flight or a runnable queue. A hang, the F1 transition and a delayed
    /// interrupt are timer-driven ([`Self::next_engine_deadline`]); new work comes with a kick.
    pub(crate) fn engine_busy(eng: &Engine) -> bool {
        if eng.gated || eng.held || eng.injected_hang.is_some() {
            return false;
        }
        match eng.inflight {
            Some(InFlight::Hang { .. }) => false,
            Some(InFlight::Transfer { .. }) => true,
            None => eng.any_runnable() || eng.state == EngineState::Active,
        }
    }

    /// Mirrors engine state into STATUS and CURRENT_QUEUE.
    pub(crate) fn publish_engine_status(&self, cmp: &Cmp) {
        for (eng, r) in cmp.engines.iter().zip(self.regs.engines.iter()) {
            let status = EngineStatus {
                state: eng.state,
                has_work: eng.has_work(),
                held: eng.held,
            };
            // Release: a driver that sees a state change also sees the memory effects of
            // the commands that led to it.
            r.status.store(status.to_reg(), Ordering::Release);
            r.current_queue.store(current_id(eng), Ordering::Release);
        }
    }

    /// Sets engine `e`'s HAS_WORK status bit: one of its queues has unconsumed commands (the
    /// caller holds the CMP lock, as [`Core::publish_engine_status`] does).
    pub(crate) fn publish_has_work(&self, e: usize) {
        if let Some(r) = self.regs.engines.get(e) {
            // Release: as in publish_engine_status.
            r.status.fetch_or(STATUS_HAS_WORK, Ordering::Release);
        }
    }

    /// GPU ticks until the next timer-driven engine event (hang detection, F1 request).
    pub(crate) fn next_engine_deadline(&self, cmp: &Cmp) -> Option<u64> {
        let now = self.clock.now();
        let mut best: Option<u64> = None;
        let mut consider = |t: u64| best = Some(best.map_or(t, |b| b.min(t)));
        for eng in cmp.engines.iter().filter(|eng| !eng.gated) {
            let hang_since = eng.injected_hang.or(match eng.inflight {
                Some(InFlight::Hang { since, .. }) => Some(since),
                _ => None,
            });
            if let Some(since) = hang_since {
                if !eng.hang_reported {
                    consider(
                        since
                            .saturating_add(self.cfg.hang_detect_ticks)
                            .saturating_sub(now),
                    );
                }
            } else if self.cfg.idle_f1_ticks > 0
                && eng.state == EngineState::Idle
                && !eng.held
                && !eng.gated
            {
                let since = eng.idle_since.unwrap_or(now);
                consider(
                    since
                        .saturating_add(self.cfg.idle_f1_ticks)
                        .saturating_sub(now),
                );
            }
        }
        best
    }

    /// CTRL = RESET: resets engine `e` only (see `rvgpu_hw::engine::ResetResult`).
    ///
    /// The queue with a packet in flight (if any) is aborted and leaves the loaded runlist;
    /// its `ring_control.read_ptr` is already the aborted packet's (it is stored after every
    /// completed ring packet). Every other queue stays as it is, and the engine is held until
    /// the next RUNLIST_COMMIT. A failed reset changes nothing but RESET_RESULT.
    pub(crate) fn reset_engine(&self, e: usize) {
        let Some(r) = self.regs.engines.get(e) else {
            return;
        };
        let mut cmp = lock(&self.cmp);
        let Some(eng) = cmp.engines.get_mut(e) else {
            return;
        };
        let executing = eng.executing();
        let aborted = executing
            .and_then(|i| eng.queues.get(i))
            .map_or((NO_QUEUE, 0), |q| (q.desc.queue_id, q.rptr));
        // Not resettable when the capability is off, under injection, or when lost.
        let fail = !self.cfg.per_engine_reset || self.faults.take_fail_reset(e) || self.is_lost();
        let result = if fail {
            ResetResult::Failed
        } else {
            r.status.store(
                EngineStatus {
                    state: EngineState::Resetting,
                    has_work: false,
                    held: false,
                }
                .to_reg(),
                Ordering::Release,
            );
            // Abort the packet in flight and drop its queue; hold the engine. The context
            // that ran last goes idle in the scheduling log.
            eng.reset(executing);
            self.sched_log_stop(eng, e);
            r.reset_queue.store(aborted.0, Ordering::Relaxed);
            r.reset_rptr.store(aborted.1, Ordering::Relaxed);
            ResetResult::Ok
        };
        // Release: RESET_QUEUE/RESET_RPTR are visible to whoever reads RESET_RESULT.
        r.reset_result.store(result as u32, Ordering::Release);
        self.publish_engine_status(&cmp);
        drop(cmp);
        self.post_event(
            EventRecord {
                kind: EventKind::ResetDone as u8,
                engine: e as u8,
                flags: 0,
                queue_id: aborted.0,
                arg0: result as u64,
                arg1: u64::from(aborted.0),
                arg2: aborted.1,
            },
            IntCause::RESET_DONE,
        );
        self.kick();
    }

    /// ADAPTER_RESET with the key: everything back to power-on except memory contents and
    /// the GPU clock (which never goes backwards).
    pub(crate) fn adapter_reset(&self) {
        self.regs
            .device_status
            .store(DeviceStatus::RESETTING.bits(), Ordering::Release);
        let mut cmp = lock(&self.cmp);
        *cmp = Cmp::new(self.cfg.engines);
        self.regs.power_on();
        // Every root is forgotten with SYSTEM_PAGE_TABLE_BASE and the runlists.
        self.mmu.invalidate(0);
        self.events.power_on();
        self.faults.clear();
        self.publish_engine_status(&cmp);
        drop(cmp);
        self.regs.device_status.store(0, Ordering::Release);
        self.kick();
    }
}

fn current_id(eng: &Engine) -> u32 {
    eng.inflight
        .map(|f| f.queue())
        .or(eng.current)
        .and_then(|i| eng.queues.get(i))
        .map_or(NO_QUEUE, |q| q.desc.queue_id)
}
