//! Timeout detection and recovery: what the driver records and decides by itself — the
//! `LastAbortedFenceId` rule, the per-adapter TDR log, the per-engine TDR capability rule,
//! engine groups and responsiveness, and blaming a reset queue's device (UM-10). The reset
//! DDIs that act on the adapter are in [`ddi`] (docs/tdr.md#the-kmd).

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rvgpu_hw::engine::{EngineState, EngineStatus, ResetResult};
use rvgpu_hw::queue::NO_QUEUE;
use rvgpu_hw::regs::{Caps, ENGINE_MAX};

use crate::handle::Handle;
use crate::sched::Sched;

pub mod ddi;

// ---------------------------------------------------------------------------------------------
// LastAbortedFenceId (TDR-06, TDR-07)
// ---------------------------------------------------------------------------------------------

/// A node ring's fence bookkeeping at the moment of the reset (docs/tdr.md#the-kmd step 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeFences {
    /// `S`: last submitted fence ID.
    pub submitted: u32,
    /// `C`: last completed fence ID as the KMD reported it (the OS's C is never above it).
    pub completed: u32,
    /// `F`: the fence word in memory (what the last PROGRESS that ran wrote).
    pub fence: u32,
}

/// What the device's `RESET_QUEUE` / `RESET_RPTR` say was executing (hardware.md 10.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aborted {
    /// The node ring; `at` is the fence ID of the pending submission whose ring bytes contain
    /// `RESET_RPTR`, `None` if the read pointer lies in none (between packets, wrapped).
    NodeRing { at: Option<u32> },
    /// A hardware queue (kernel- or user-mode): the node ring's packets, if any, did not start
    /// (it has the highest priority, so it would have been running).
    HwQueue,
    /// `RESET_QUEUE = NO_QUEUE`: nothing in flight (D2). Includes the TDR-07 race: the packet
    /// completed between the OS's snapshot and the reset.
    Nothing,
}

/// `LastAbortedFenceId` for the outcome table of docs/tdr.md#the-kmd (TDR-06):
///
/// | device answer | value |
/// |---|---|
/// | node ring, `RESET_RPTR` inside pending submission k | `k.fence` |
/// | node ring, read pointer in no pending submission | `F` |
/// | a hardware queue | `F` |
/// | `NO_QUEUE` (TDR-07: `F` = last completed, = S in the race) | `F` |
///
/// where `F` here is `max(C, F)` (completions whose interrupt the OS ignored are completions).
/// In range because the OS's `C` is never above the KMD's, `F` only holds IDs the OS
/// submitted (so `≤ S`), and k is pending (`F < k ≤ S`). The result is additionally clamped to
/// `[min(C, S), S]` so that broken bookkeeping can never produce a bug check 0x119/0xA.
pub fn last_aborted(n: NodeFences, aborted: Aborted) -> u32 {
    let s = n.submitted;
    // Last completed as the device proved it: never above S, never below what was reported.
    let done = n.completed.max(n.fence).min(s);
    match aborted {
        Aborted::NodeRing { at: Some(k) } if k > done && k <= s => k,
        Aborted::NodeRing { .. } | Aborted::HwQueue | Aborted::Nothing => done,
    }
}

// ---------------------------------------------------------------------------------------------
// Per-adapter TDR record (lock-free: read by CollectDbgInfo at any IRQL)
// ---------------------------------------------------------------------------------------------

/// What the ISR and the reset DDIs record for diagnostics. Atomics only: written by the ISR
/// (`ResetDone` events) and the reset DDIs, read by `DxgkDdiCollectDbgInfo` without any lock.
#[derive(Debug)]
pub struct TdrLog {
    /// Per engine: the last `ResetDone` event, packed as `result << 32 | queue`.
    last_done: [AtomicU64; ENGINE_MAX as usize],
    /// Per engine: the last `ResetDone` event's aborted read pointer.
    last_rptr: [AtomicU64; ENGINE_MAX as usize],
    /// Per engine: the last `LastAbortedFenceId` returned.
    last_aborted: [AtomicU32; ENGINE_MAX as usize],
    /// Per engine: successful resets.
    resets: [AtomicU32; ENGINE_MAX as usize],
    /// Successful engine resets.
    pub engine_resets: AtomicU64,
    /// Engine resets that failed (TDR-09).
    pub failed_resets: AtomicU64,
    /// Adapter resets (ResetFromTimeout).
    pub adapter_resets: AtomicU64,
    /// Contexts named through `DxgkCbInvalidateHwContext`.
    pub invalidated: AtomicU64,
}

impl Default for TdrLog {
    fn default() -> Self {
        Self {
            last_done: [const { AtomicU64::new(u64::MAX) }; ENGINE_MAX as usize],
            last_rptr: [const { AtomicU64::new(0) }; ENGINE_MAX as usize],
            last_aborted: [const { AtomicU32::new(0) }; ENGINE_MAX as usize],
            resets: [const { AtomicU32::new(0) }; ENGINE_MAX as usize],
            engine_resets: AtomicU64::new(0),
            failed_resets: AtomicU64::new(0),
            adapter_resets: AtomicU64::new(0),
            invalidated: AtomicU64::new(0),
        }
    }
}

/// One engine's last `ResetDone` as recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResetDoneRecord {
    /// `ResetResult` value (`u32::MAX` if none was seen).
    pub result: u32,
    pub queue: u32,
    pub rptr: u64,
}

impl TdrLog {
    fn slot(engine: u32) -> Option<usize> {
        usize::try_from(engine)
            .ok()
            .filter(|e| *e < ENGINE_MAX as usize)
    }

    /// ISR: a `ResetDone` event (device IRQL; atomics only).
    pub fn reset_done(&self, engine: u32, result: Option<ResetResult>, queue: u32, rptr: u64) {
        let Some(e) = Self::slot(engine) else {
            return;
        };
        let r = result.map_or(u32::MAX, |r| r as u32);
        if let (Some(d), Some(p)) = (self.last_done.get(e), self.last_rptr.get(e)) {
            p.store(rptr, Ordering::Relaxed);
            d.store((u64::from(r) << 32) | u64::from(queue), Ordering::Release);
        }
    }

    /// The last `ResetDone` of `engine`, if any was seen.
    pub fn last_reset_done(&self, engine: u32) -> Option<ResetDoneRecord> {
        let e = Self::slot(engine)?;
        let d = self.last_done.get(e)?.load(Ordering::Acquire);
        if d == u64::MAX {
            return None;
        }
        Some(ResetDoneRecord {
            result: u32::try_from(d >> 32).unwrap_or(u32::MAX),
            queue: u32::try_from(d & u64::from(u32::MAX)).unwrap_or(NO_QUEUE),
            rptr: self.last_rptr.get(e)?.load(Ordering::Relaxed),
        })
    }

    /// The last `LastAbortedFenceId` returned for `engine`.
    pub fn last_aborted(&self, engine: u32) -> u32 {
        Self::slot(engine)
            .and_then(|e| self.last_aborted.get(e))
            .map_or(0, |a| a.load(Ordering::Relaxed))
    }

    /// A successful reset of `engine`.
    fn engine_reset(&self, engine: u32) {
        self.engine_resets.fetch_add(1, Ordering::Relaxed);
        if let Some(r) = Self::slot(engine).and_then(|e| self.resets.get(e)) {
            r.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Successful resets of `engine`.
    pub fn resets(&self, engine: u32) -> u32 {
        Self::slot(engine)
            .and_then(|e| self.resets.get(e))
            .map_or(0, |r| r.load(Ordering::Relaxed))
    }

    fn set_last_aborted(&self, engine: u32, v: u32) {
        if let Some(a) = Self::slot(engine).and_then(|e| self.last_aborted.get(e)) {
            a.store(v, Ordering::Relaxed);
        }
    }
}

/// The rule itself: device capability and every obliged slot (`Filled::per_engine_tdr`).
pub fn per_engine_tdr_rule(caps: Caps, ddis: bool) -> bool {
    caps.contains(Caps::PER_ENGINE_RESET) && ddis
}

/// The dependent-engine mask of `node` (TDR-02): the engines are independent, so each node is
/// in a group of its own. `None` for a node past bit 63.
pub fn dependent_mask(node: u32) -> Option<u64> {
    1u64.checked_shl(node)
}

/// Whether an engine whose `STATUS` reads `raw` is responsive: not `Hung`; an unreadable or
/// all-ones register (device lost) is not responsive.
pub fn responsive(raw: u32) -> bool {
    if raw == u32::MAX {
        return false;
    }
    EngineStatus::from_reg(raw).is_some_and(|s| s.state != EngineState::Hung)
}

/// The guilty context of an aborted hardware queue: what `DxgkCbInvalidateHwContext` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Guilty {
    /// The handle passed as `hHwContext` ([`context_handle`]).
    handle: usize,
    /// Its D3D device, whose doorbells are aborted (UM-10).
    device: Handle,
}

/// The handle `DxgkCbInvalidateHwContext` names context `ctx` by: the input value of
/// `DXGKARG_CREATECONTEXT::hContext`, Dxgkrnl's context handle, which the callback follows
/// (24H2 `K:DxgkInvalidateHwContextCB` @0x14006C2E0). 0 for a context the OS passed none (a
/// system context): there is nothing to name it by.
pub fn context_handle(s: &Sched, ctx: Handle) -> Option<usize> {
    Some(s.contexts.get(&ctx)?.os_handle)
}

/// Puts the device owning the hardware queue with id `queue` on `node` in error (UM-10): from
/// the next commit none of its queues is in any runlist. Returns the guilty context and the
/// engines that device has runnable queues on (to recommit). `None` if no queue of this adapter
/// has that id on that engine (destroyed meanwhile, or a node ring).
fn blame(s: &mut Sched, node: u32, queue: u32) -> Option<(Guilty, u64)> {
    let q = s
        .queues
        .values()
        .find(|q| q.id == queue && q.engine == node)?;
    let device: Handle = s.contexts.get(&q.context)?.device;
    let guilty = Guilty {
        handle: context_handle(s, q.context)?,
        device,
    };
    // Engines where the device has queues in a runlist now: they must be recommitted so those
    // queues leave (the reset itself only dropped the aborted one).
    let mut engines = 0u64;
    for q in s.queues.values() {
        let mine = s
            .contexts
            .get(&q.context)
            .is_some_and(|c| c.device == device);
        if mine && s.runnable(q) {
            engines |= 1u64.checked_shl(q.engine).unwrap_or(0);
        }
    }
    if let Some(d) = s.devices.get_mut(&device) {
        d.in_error = true;
    }
    Some((guilty, engines))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(submitted: u32, completed: u32, fence: u32) -> NodeFences {
        NodeFences {
            submitted,
            completed,
            fence,
        }
    }

    /// TDR-06: every row of docs/tdr.md#the-kmd's outcome table, each asserted equal to the
    /// expected ID and inside `[C, S]`.
    #[test]
    fn tdr_06_every_row_of_the_outcome_table() {
        // S = 10, C = 6 (reported), F = 7 (one completion whose interrupt the OS ignored).
        let f = n(10, 6, 7);
        let rows = [
            (
                "node ring, rptr in pending k = 8",
                Aborted::NodeRing { at: Some(8) },
                8,
            ),
            (
                "node ring, rptr in pending k = S",
                Aborted::NodeRing { at: Some(10) },
                10,
            ),
            (
                "node ring, rptr in no pending",
                Aborted::NodeRing { at: None },
                7,
            ),
            ("a hardware queue", Aborted::HwQueue, 7),
            ("NO_QUEUE", Aborted::Nothing, 7),
        ];
        for (name, aborted, want) in rows {
            let got = last_aborted(f, aborted);
            assert_eq!(got, want, "{name}");
            assert!(
                (f.completed..=f.submitted).contains(&got),
                "{name}: {got} not in [C, S]"
            );
        }
    }

    /// TDR-07: the packet completed between the OS's snapshot (S = C + 1) and the reset: the
    /// device names nothing (D2), F = S, and LastAbortedFenceId = S (in range; the OS errors
    /// the device of the "aborted" packet although it completed).
    #[test]
    fn tdr_07_completed_between_snapshot_and_reset() {
        let raced = n(5, 4, 5);
        assert_eq!(last_aborted(raced, Aborted::Nothing), 5);
        // Its Pending entry may even still be listed (the ISR had not popped it): a rptr that
        // names an already completed ID never goes back below F.
        assert_eq!(last_aborted(raced, Aborted::NodeRing { at: Some(5) }), 5);
        assert_eq!(last_aborted(raced, Aborted::NodeRing { at: Some(4) }), 5);
        // Nothing in flight and nothing completed since the snapshot: LastAborted = C = F.
        assert_eq!(last_aborted(n(5, 4, 4), Aborted::Nothing), 4);
    }

    /// TDR-06: broken inputs never leave `[C, S]` (a value out of range is a bug check).
    #[test]
    fn tdr_06_always_in_range_even_for_inconsistent_inputs() {
        for &(s, c, f) in &[
            (0, 0, 0),
            (u32::MAX, u32::MAX, u32::MAX),
            (u32::MAX, 0, 0),
            (10, 3, 12), // F above S: clamped to S
            (10, 3, 0),  // F below C: C
        ] {
            for aborted in [
                Aborted::NodeRing { at: Some(0) },
                Aborted::NodeRing { at: Some(u32::MAX) },
                Aborted::NodeRing { at: Some(s) },
                Aborted::NodeRing { at: None },
                Aborted::HwQueue,
                Aborted::Nothing,
            ] {
                let got = last_aborted(n(s, c, f), aborted);
                assert!(got <= s, "({s},{c},{f}) {aborted:?}: {got} > S");
                assert!(got >= c.min(s), "({s},{c},{f}) {aborted:?}: {got} < C");
            }
        }
        // A pending ID above S (impossible) is not trusted.
        assert_eq!(
            last_aborted(n(10, 3, 5), Aborted::NodeRing { at: Some(11) }),
            5
        );
    }

    /// TDR-02: each node is a dependent group of its own, bit n for node n.
    #[test]
    fn tdr_02_dependent_engine_group_is_the_node_itself() {
        assert_eq!(dependent_mask(0), Some(1));
        assert_eq!(dependent_mask(1), Some(2));
        assert_eq!(dependent_mask(ENGINE_MAX - 1), Some(1 << (ENGINE_MAX - 1)));
        for node in 0..ENGINE_MAX {
            let m = dependent_mask(node).unwrap();
            assert_eq!(m.count_ones(), 1);
            assert_ne!(m & (1 << node), 0, "the mask contains the node itself");
        }
        assert_eq!(dependent_mask(64), None);
    }

    /// TDR-01: the capability needs the device bit and the four DDIs
    /// (`thunk::table` checks that one missing slot clears the group).
    #[test]
    fn tdr_01_per_engine_tdr_needs_the_device_bit_and_all_four_ddis() {
        let dev = Caps::ATOMIC64 | Caps::PER_ENGINE_RESET;
        assert!(per_engine_tdr_rule(dev, true));
        assert!(!per_engine_tdr_rule(Caps::ATOMIC64, true));
        assert!(!per_engine_tdr_rule(dev, false));
    }

    /// UM-10: the device owning the aborted hardware queue goes in error; its queues on every
    /// engine stop being runnable (they leave at the recommit) and the engines to recommit are
    /// returned; the other process's queues stay runnable; the guilty context is named by its
    /// OS handle (or the KMD handle when the OS passed none).
    #[test]
    fn um_10_blame_errors_only_the_guilty_device() {
        use crate::context::Context;
        use crate::handle::{fixtures::h, Kind};
        use crate::hwqueue::Ring;
        use crate::runlist::fixtures::queue;
        let mut s = Sched::new(4, false, alloc::vec::Vec::new());
        let (guilty_dev, innocent_dev) = (h(Kind::Device, 1), h(Kind::Device, 2));
        for d in [guilty_dev, innocent_dev] {
            s.devices.insert(d, crate::context::fixtures::device(None));
        }
        // Contexts: 10 (guilty, engine 0, OS handle 0x77), 11 (guilty, engine 1, no OS
        // handle), 12 (innocent, engine 0).
        for (n, device, engine, os) in [
            (10, guilty_dev, 0, 0x77),
            (11, guilty_dev, 1, 0),
            (12, innocent_dev, 0, 0x99),
        ] {
            s.contexts.insert(
                h(Kind::Context, n),
                Context {
                    device,
                    engine,
                    suspended: false,
                    os_handle: os,
                    root: 0,
                    priority: crate::hws::ContextPriority::DEFAULT,
                },
            );
        }
        let ring = Ring {
            base: rvgpu_hw::addr::GpuVa::new(0x10_0000),
            size: 4096,
            control: rvgpu_hw::addr::GpuVa::new(0x20_0000),
        };
        for (n, ctx, engine, id) in [(20, 10, 0, 5), (21, 11, 1, 6), (22, 12, 0, 7)] {
            s.queues
                .insert(h(Kind::Queue, n), queue(ctx, engine, id, Some(ring), true));
        }
        assert_eq!(blame(&mut s, 1, 5), None, "queue 5 is on engine 0, not 1");
        assert_eq!(blame(&mut s, 0, 1234), None, "unknown queue id");
        assert!(!s.devices.values().any(|d| d.in_error));
        let (g, engines) = blame(&mut s, 0, 5).unwrap();
        assert_eq!(g.handle, 0x77);
        assert_eq!(
            engines, 0b11,
            "the guilty device has queues on engines 0 and 1"
        );
        assert!(s.devices[&guilty_dev].in_error);
        assert!(!s.devices[&innocent_dev].in_error);
        let runnable: alloc::vec::Vec<u32> = s
            .queues
            .values()
            .filter(|q| s.runnable(q))
            .map(|q| q.id)
            .collect();
        assert_eq!(runnable, [7], "only the innocent process's queue stays");
        let errored: alloc::vec::Vec<u32> = s
            .queues
            .values()
            .filter(|q| {
                s.contexts
                    .get(&q.context)
                    .and_then(|c| s.devices.get(&c.device))
                    .is_some_and(|d| d.in_error)
            })
            .map(|q| q.id)
            .collect();
        assert_eq!(errored, [5, 6], "connect and submit refused for these");
        // A context created without an OS handle is still blamed, but has no handle to be
        // named by (the callback would read through the KMD's own handle).
        s.devices.get_mut(&guilty_dev).unwrap().in_error = false;
        let (g, _) = blame(&mut s, 1, 6).unwrap();
        assert_eq!(g.handle, 0);
        assert!(s.devices[&guilty_dev].in_error);
    }

    #[test]
    fn responsive_unless_hung_or_unreadable() {
        let st = |state, held| {
            EngineStatus {
                state,
                has_work: true,
                held,
            }
            .to_reg()
        };
        assert!(responsive(st(EngineState::Active, false)));
        assert!(
            responsive(st(EngineState::Idle, true)),
            "held after a reset is not a hang"
        );
        assert!(responsive(st(EngineState::TransitionToF1, false)));
        assert!(!responsive(st(EngineState::Hung, false)));
        assert!(!responsive(u32::MAX), "device lost");
        assert!(!responsive(0xF), "unknown state");
    }

    #[test]
    fn reset_done_records_round_trip() {
        let log = TdrLog::default();
        assert_eq!(log.last_reset_done(1), None);
        log.reset_done(1, Some(ResetResult::Ok), 7, 0x40);
        assert_eq!(
            log.last_reset_done(1),
            Some(ResetDoneRecord {
                result: 1,
                queue: 7,
                rptr: 0x40
            })
        );
        log.reset_done(ENGINE_MAX, Some(ResetResult::Ok), 7, 0x40);
        assert_eq!(log.last_reset_done(ENGINE_MAX), None);
        log.set_last_aborted(0, 9);
        assert_eq!(log.last_aborted(0), 9);
    }
}
