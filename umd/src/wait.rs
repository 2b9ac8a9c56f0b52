//! CPU waits on native fences that survive a late wake (docs/performance.md, "Interrupt storms
//! and late wakes").
//!
//! On 24H2 a new wait on a native fence sets its MonitoredValue to its own value when the
//! fence's CurrentValue already passed MonitoredValue (`M:VidSchSubmitWaitFromCpu`
//! @0x14000DF30, docs/windows-bringup.md §13), even above lower waits still pending: those get
//! no interrupt when the fence reaches them and are released only when something else makes
//! VidSch look at the fence. The process's own waits never do that to each other ([`Waits`]:
//! the re-arm), nor do processes that re-arm a shared fence at CurrentValue + 1 ([`Waits::share`]),
//! but a process that does not (not this UMD) can. So every blocking CPU wait
//! the UMD makes is bounded: it waits in slices of
//! [`SLICE_NS`], and after each slice the OS did not end it re-reads the fence's CurrentValue
//! (user-readable). A value reached there ends the wait as a **late wake**: counted
//! ([`late_wakes`]) and reported to the caller, never silent. A wait whose value is not reached
//! by its own deadline still fails; a wait the OS released is no late wake.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::kmt::NtStatus;

/// One slice of a bounded wait: 4 ms.
pub const SLICE_NS: u64 = 4_000_000;

/// `STATUS_TIMEOUT`: the wait's own deadline passed with the value not reached.
pub const STATUS_TIMEOUT: i32 = rvgpu_ddi::ntstatus::STATUS_TIMEOUT;

/// How one slice of an OS wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slice {
    /// The OS released the wait: the value was reached.
    Released,
    /// The slice passed with the wait still pending.
    Pending,
    /// Nothing but the caller could still change the fence (the simulation's step mode found
    /// the machine idle): re-check once, then fail.
    Idle,
}

/// How a bounded wait that succeeded ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woken {
    /// The OS released it.
    Released,
    /// The OS had not released it, but the fence read at least the value after a slice: a
    /// late wake, with the value read.
    Late { current: u64 },
}

static LATE_WAKES: AtomicU64 = AtomicU64::new(0);

/// Late wakes this process's bounded waits met so far.
pub fn late_wakes() -> u64 {
    LATE_WAKES.load(Ordering::Relaxed)
}

/// Waits for a fence to reach `value`: `slice` waits one slice in the OS, `current` reads the
/// fence's CurrentValue, `slices` is the wait's own deadline in slices (`None`: no deadline).
/// A late wake is counted before it is returned.
pub fn bounded(
    value: u64,
    slices: Option<u64>,
    mut slice: impl FnMut() -> Result<Slice, NtStatus>,
    mut current: impl FnMut() -> u64,
) -> Result<Woken, NtStatus> {
    let mut waited = 0u64;
    loop {
        let s = slice()?;
        if s == Slice::Released {
            return Ok(Woken::Released);
        }
        let now = current();
        if now >= value {
            LATE_WAKES.fetch_add(1, Ordering::Relaxed);
            return Ok(Woken::Late { current: now });
        }
        waited = waited.saturating_add(1);
        if s == Slice::Idle || slices.is_some_and(|n| waited >= n) {
            return Err(NtStatus(STATUS_TIMEOUT));
        }
    }
}

/// Slices in a deadline of `timeout_ns` (at least one; `u64::MAX`: none).
pub fn slices_in(timeout_ns: u64) -> Option<u64> {
    (timeout_ns != u64::MAX).then(|| timeout_ns.div_ceil(SLICE_NS).max(1))
}

/// One process's CPU waits on its native fences, as it registered them with the OS, so that
/// its own waits never leave 24H2 a MonitoredValue above one of them (docs/performance.md,
/// "CPU waits of one process").
///
/// 24H2 sets MonitoredValue M to a new wait's value W when `W <= M` or when CurrentValue C
/// already passed M (`M:VidSchSubmitWaitFromCpu` @0x14000DF30), and no release lowers it while
/// waits remain (`M:VidSchiUnwaitNativeFenceWaiters` @0x1400458E8). So a registration can
/// raise M over a lower wait of this process, and a release can leave M stale below C (every
/// later signal interrupts). The UMD answers both with one rule, applied under one lock per
/// process: after any registration for W, and after a wait of the process was released, it
/// registers once more for the lowest value L it still waits for above C (a *re-arm*). That
/// registration sets M := L (`L <= M` after a raise; `C >= M` when M went stale), or finds M
/// already at or below L, or finds C past L (the same call releases L). Either way M is at or
/// below every pending wait of the process when the lock is released, and nothing but another
/// process's registration (or a GPU wait the OS queues for a kernel-mode queue, which the UMD
/// re-arms after too) raises it again. The pages' reading never raises; a re-arm there only
/// restates W − 1 of the lowest wait.
///
/// A fence shared with other processes ([`Self::share`]) takes another rule: their waits are
/// not in this table, so a re-arm at this process's lowest could itself raise M over a lower
/// wait of theirs, and their registrations raise M over this one's. The one value known to be
/// at or below every pending wait of every process is C + 1 (a wait at or below C was released
/// by the registration's own unwait), so every registration above C + 1 on a shared fence is
/// followed by a re-arm at C + 1, and releases re-arm nothing. M is then at or below every
/// pending wait of every process that follows this rule, so none of their waits, blocking or
/// on an event, outlives its value. The price: after a release M stays below C while waits
/// remain, so each GPU signal of the fence interrupts until the last wait is released (at most
/// one interrupt per signal, the legacy monitored fence's rate; docs/performance.md). Sharers
/// that all publish their waits on a board ([`crate::waitboard`]) re-arm at the lowest pending
/// wait of all instead ([`Self::published`], [`Self::rearm_among`], [`Self::confirm_among`],
/// [`Self::after_release_among`]).
#[derive(Debug, Default)]
pub struct Waits {
    /// Per fence: (value, waiter id) of each registration whose waiter has not left and whose
    /// value was not seen reached.
    by_fence: alloc::collections::BTreeMap<crate::nt::KmtHandle, alloc::vec::Vec<(u64, u64)>>,
    /// Fences shared with other processes (opened from, or given out as, an NT handle).
    shared: alloc::collections::BTreeSet<crate::nt::KmtHandle>,
    /// Shared fences whose KMD keeps a board ([`crate::waitboard::request`]): CurrentValue's
    /// GPU VA in this process (what names the fence to the KMD), and the slot last published.
    boards: alloc::collections::BTreeMap<crate::nt::KmtHandle, (u64, crate::waitboard::Slot)>,
    next_id: u64,
}

impl Waits {
    /// Records a registration for `value` on `fence` with CurrentValue at `current` (waits it
    /// satisfies are forgotten): its waiter id, and the value to re-arm afterwards, if a
    /// pending wait of the process is below `value`.
    pub fn add(
        &mut self,
        fence: crate::nt::KmtHandle,
        value: u64,
        current: u64,
    ) -> (u64, Option<u64>) {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let rearm = if self.shared.contains(&fence) {
            let next = current.saturating_add(1);
            (value > next).then_some(next)
        } else {
            self.lowest(fence, current).filter(|&l| l < value)
        };
        if value > current {
            self.by_fence.entry(fence).or_default().push((value, id));
        }
        (id, rearm)
    }

    /// Waiter `id` of `fence` left (released, timed out or failed).
    pub fn remove(&mut self, fence: crate::nt::KmtHandle, id: u64) {
        if let Some(v) = self.by_fence.get_mut(&fence) {
            v.retain(|&(_, i)| i != id);
            if v.is_empty() {
                self.by_fence.remove(&fence);
            }
        }
    }

    /// The lowest value still waited for on `fence` above `current` (the rest forgotten).
    pub fn lowest(&mut self, fence: crate::nt::KmtHandle, current: u64) -> Option<u64> {
        let v = self.by_fence.get_mut(&fence)?;
        v.retain(|&(w, _)| w > current);
        let low = v.iter().map(|&(w, _)| w).min();
        if low.is_none() {
            self.by_fence.remove(&fence);
        }
        low
    }

    /// `fence` is shared with other processes from now on ([`Waits`]: re-arms at C + 1).
    pub fn share(&mut self, fence: crate::nt::KmtHandle) {
        self.shared.insert(fence);
    }

    /// What this process publishes for `fence` on its sharers' board
    /// ([`crate::waitboard`]), CurrentValue at `current`: its lowest pending waits, with
    /// `value` among them (a wait about to be registered: published first). Published before
    /// each registration and after each release.
    pub fn published(
        &mut self,
        fence: crate::nt::KmtHandle,
        current: u64,
        value: Option<u64>,
    ) -> crate::waitboard::Slot {
        let mut slot = crate::waitboard::Slot::NONE;
        self.lowest(fence, current);
        let mut values: alloc::vec::Vec<u64> = self
            .by_fence
            .get(&fence)
            .map(|v| v.iter().map(|&(w, _)| w).collect())
            .unwrap_or_default();
        values.extend(value.filter(|&v| v > current));
        values.sort_unstable();
        values.dedup();
        for (d, s) in slot.waits.iter_mut().zip(&values) {
            *d = *s;
        }
        slot.more = values.len() > slot.waits.len();
        slot
    }

    /// The re-arm after this process registered `value` on shared `fence` (CurrentValue at
    /// `current` after it), given what the board answered about the other sharers (`peers`,
    /// read after the registration; the wait was published before it): the lowest of this
    /// process's pending waits and the others' ([`crate::waitboard::Slot::next_above`]), or
    /// C + 1 when the others are unknown. Made even when that is `value` itself if a wait of
    /// theirs was reached during the registration (the re-arm's unwait releases it). Never
    /// above this process's own lowest wait, whatever the others wrote.
    pub fn rearm_among(
        &mut self,
        fence: crate::nt::KmtHandle,
        value: u64,
        current: u64,
        peers: crate::waitboard::Peers,
    ) -> Option<u64> {
        let low = self.lowest_among(fence, current, peers);
        match peers {
            crate::waitboard::Peers::Lowest { passed: true, .. } => {
                Some(low.unwrap_or(current.saturating_add(1)))
            }
            _ => low.filter(|&l| l < value),
        }
    }

    /// After a re-arm at `armed` on a shared fence (CurrentValue at `current` after it), given
    /// what the board answered after it (`peers`): a re-arm is a registration too, so it may
    /// have raised MonitoredValue over a wait another sharer published after the board was
    /// read for it. If the board now names one below `armed`, or one reached during the
    /// re-arm, the answer is one more re-arm at C + 1, which cannot raise over any pending wait
    /// (those at or below C are released by its unwait); otherwise none.
    pub fn confirm_among(armed: u64, current: u64, peers: crate::waitboard::Peers) -> Option<u64> {
        match peers {
            crate::waitboard::Peers::Lowest { next, passed }
                if passed
                    || crate::waitboard::Peers::clamp(next, current).is_some_and(|n| n < armed) =>
            {
                Some(current.saturating_add(1))
            }
            _ => None,
        }
    }

    /// The re-arm after a wait of this process on shared `fence` was released (24H2 leaves
    /// MonitoredValue at or below C while waits remain, so every signal would interrupt):
    /// the lowest pending wait of all sharers by the board (`peers`), none when nobody waits;
    /// nothing when the others are unknown (the C + 1 rule's M is already below every wait).
    pub fn after_release_among(
        &mut self,
        fence: crate::nt::KmtHandle,
        current: u64,
        peers: crate::waitboard::Peers,
    ) -> Option<u64> {
        match peers {
            crate::waitboard::Peers::Unknown => {
                self.lowest(fence, current);
                None
            }
            known => self.lowest_among(fence, current, known),
        }
    }

    /// The lowest pending wait on `fence` above `current` of this process and of the others
    /// by `peers` (C + 1 when they are unknown).
    fn lowest_among(
        &mut self,
        fence: crate::nt::KmtHandle,
        current: u64,
        peers: crate::waitboard::Peers,
    ) -> Option<u64> {
        let own = self.lowest(fence, current);
        let others = match peers {
            crate::waitboard::Peers::Unknown => Some(current.saturating_add(1)),
            crate::waitboard::Peers::Lowest { next, .. } => {
                crate::waitboard::Peers::clamp(next, current)
            }
        };
        match (own, others) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The value to re-arm after a wait of the process on `fence` was released, CurrentValue
    /// at `current`: the lowest pending wait of the process; none on a shared fence (M is
    /// already at or below C there, which no pending wait of any process is under).
    pub fn after_release(&mut self, fence: crate::nt::KmtHandle, current: u64) -> Option<u64> {
        let low = self.lowest(fence, current);
        if self.shared.contains(&fence) {
            return None;
        }
        low
    }

    /// The value to re-arm after the OS queued a GPU wait on `fence` (it moves M as a CPU
    /// wait does), CurrentValue at `current`: the lowest pending wait of the process, or C + 1
    /// on a shared fence (other processes' waits are unknown here).
    pub fn after_gpu_wait(&mut self, fence: crate::nt::KmtHandle, current: u64) -> Option<u64> {
        if self.shared.contains(&fence) {
            return Some(current.saturating_add(1));
        }
        self.lowest(fence, current)
    }

    /// `fence` is destroyed: its waits are the OS's to abandon.
    pub fn forget(&mut self, fence: crate::nt::KmtHandle) {
        self.by_fence.remove(&fence);
        self.shared.remove(&fence);
        self.boards.remove(&fence);
    }

    /// Shared `fence` has a board in the KMD, on which this process published `slot`; the KMD
    /// names it by CurrentValue's GPU VA `current_gpu` in this process. Its waits re-arm at the
    /// lowest of every sharer's from now on ([`Self::rearm_among`]).
    pub fn on_board(
        &mut self,
        fence: crate::nt::KmtHandle,
        current_gpu: u64,
        slot: crate::waitboard::Slot,
    ) {
        self.shared.insert(fence);
        self.boards.insert(fence, (current_gpu, slot));
    }

    /// CurrentValue's GPU VA of `fence` if it is on a board.
    pub fn board_of(&self, fence: crate::nt::KmtHandle) -> Option<u64> {
        self.boards.get(&fence).map(|&(va, _)| va)
    }

    /// `slot` if it is not what this process last published for `fence` (then it is recorded
    /// as published): a slot unchanged costs no kernel call.
    pub fn changed(
        &mut self,
        fence: crate::nt::KmtHandle,
        slot: crate::waitboard::Slot,
    ) -> Option<crate::waitboard::Slot> {
        let (_, last) = self.boards.get_mut(&fence)?;
        (*last != slot).then(|| {
            *last = slot;
            slot
        })
    }

    /// The board of `fence` failed to take a publish: its waits go back to the C + 1 rule.
    pub fn off_board(&mut self, fence: crate::nt::KmtHandle) {
        self.boards.remove(&fence);
    }

    /// Pending waits recorded on `fence`.
    pub fn pending(&self, fence: crate::nt::KmtHandle) -> usize {
        self.by_fence.get(&fence).map_or(0, |v| v.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MF-04, the UMD's side of 24H2's MonitoredValue: a registration above a pending wait of
    /// the process is followed by a re-arm at the lowest pending value above CurrentValue;
    /// reached waits are forgotten, a waiter that left is no longer re-armed.
    #[test]
    fn mf_04_a_wait_above_a_pending_one_re_arms_the_lowest() {
        let mut w = Waits::default();
        let (a, r) = w.add(7, 3, 0);
        assert_eq!(r, None, "nothing below the first wait");
        let (_, r) = w.add(7, 5, 0);
        assert_eq!(r, Some(3));
        let (_, r) = w.add(7, 2, 0);
        assert_eq!(r, None, "a lower wait needs no re-arm");
        // The fence reached 3: 3 and 2 are forgotten, 5 is the one to re-arm.
        let (_, r) = w.add(7, 8, 3);
        assert_eq!(r, Some(5));
        assert_eq!(w.pending(7), 2);
        assert_eq!(w.lowest(7, 5), Some(8));
        w.remove(7, a);
        assert_eq!(w.lowest(7, 8), None, "all reached");
        assert_eq!(w.pending(7), 0);
        // A wait already reached is not recorded; one on another fence is separate.
        let (_, r) = w.add(7, 4, 9);
        assert_eq!((r, w.pending(7)), (None, 0));
        let (b, _) = w.add(9, 4, 0);
        assert_eq!(w.add(7, 12, 9).1, None);
        w.remove(9, b);
        assert_eq!(w.pending(9), 0);
        w.forget(7);
        assert_eq!(w.pending(7), 0);
    }

    /// MF-04 on a fence shared with other processes: a registration above C + 1 re-arms at
    /// C + 1 (at or below every other process's pending wait), whatever this process waits
    /// for; a release re-arms nothing; a GPU wait re-arms at C + 1; destroying forgets it.
    #[test]
    fn mf_04_a_wait_on_a_shared_fence_re_arms_at_the_next_value() {
        let mut w = Waits::default();
        w.share(7);
        let (a, r) = w.add(7, 9, 3);
        assert_eq!(r, Some(4), "above C + 1");
        let (_, r) = w.add(7, 5, 3);
        assert_eq!(r, Some(4), "below the process's own lowest too");
        assert_eq!(
            w.add(7, 4, 3).1,
            None,
            "the registration set M := C + 1 itself"
        );
        assert_eq!(w.add(7, 2, 3).1, None, "already reached");
        assert_eq!(w.after_release(7, 5), None, "releases re-arm nothing");
        assert_eq!(w.pending(7), 1, "5 and 4 were reached");
        assert_eq!(w.after_gpu_wait(7, 5), Some(6));
        w.remove(7, a);
        w.forget(7);
        assert_eq!(
            w.add(7, 9, 3).1,
            None,
            "a new fence under that handle is not shared"
        );
        // An unshared fence keeps the per-process rule.
        assert_eq!(w.after_release(7, 3), Some(9));
        assert_eq!(w.after_gpu_wait(7, 3), Some(9));
    }

    /// MF-04 on a shared fence whose sharers all publish (`crate::waitboard`): a registration
    /// re-arms at the lowest pending wait of every sharer above CurrentValue; a release
    /// re-arms there too (none when nobody waits); unknown sharers keep C + 1.
    #[test]
    fn mf_04_a_shared_fence_re_arms_at_the_lowest_wait_of_every_sharer() {
        use crate::waitboard::Peers;
        let mut w = Waits::default();
        w.share(7);
        assert_eq!(w.published(7, 3, Some(9)).next_above(3), Some(9));
        let (a, _) = w.add(7, 9, 3);
        assert_eq!(w.published(7, 3, None).next_above(3), Some(9));
        let low = |next| Peers::Lowest {
            next,
            passed: false,
        };
        assert_eq!(w.rearm_among(7, 9, 3, low(5)), Some(5));
        assert_eq!(w.rearm_among(7, 9, 3, low(u64::MAX)), None);
        assert_eq!(w.rearm_among(7, 9, 3, Peers::Unknown), Some(4));
        // Another sharer's wait was reached while this one registered: re-armed all the same.
        let passed = Peers::Lowest {
            next: u64::MAX,
            passed: true,
        };
        assert_eq!(w.rearm_among(7, 9, 3, passed), Some(9));
        let (_, _) = w.add(7, 6, 3);
        assert_eq!(w.rearm_among(7, 9, 3, low(8)), Some(6));
        // 6 was released at C = 6: the others' 8 is the lowest of all.
        assert_eq!(w.after_release_among(7, 6, low(8)), Some(8));
        assert_eq!(w.after_release_among(7, 6, Peers::Unknown), None);
        w.remove(7, a);
        assert_eq!(w.published(7, 6, None), crate::waitboard::Slot::NONE);
        assert_eq!(w.after_release_among(7, 9, low(u64::MAX)), None);
        // More pending waits than a slot names: the lowest four, and `more`.
        for v in [30, 10, 50, 20, 40] {
            w.add(7, v, 6);
        }
        let s = w.published(7, 6, Some(15));
        assert_eq!((s.waits, s.more), ([10, 15, 20, 30], true));
    }

    /// MF-04 on the KMD's board: a fence on it is shared and named by its VA; a slot equal to
    /// the one last published is not published again (no kernel call); off the board, or
    /// destroyed, it has none.
    #[test]
    fn mf_04_an_unchanged_slot_is_not_published_again() {
        use crate::waitboard::Slot;
        let mut w = Waits::default();
        assert_eq!(w.changed(7, Slot::NONE), None, "not on a board");
        w.on_board(7, 0x5000, Slot::NONE);
        assert_eq!(w.board_of(7), Some(0x5000));
        assert_eq!(w.add(7, 9, 3).1, Some(4), "shared: the C + 1 rule's answer");
        assert_eq!(w.changed(7, Slot::NONE), None);
        let s = w.published(7, 3, None);
        assert_eq!(w.changed(7, s), Some(s));
        assert_eq!(w.changed(7, s), None, "published already");
        w.off_board(7);
        assert_eq!(w.board_of(7), None);
        w.on_board(7, 0x5000, s);
        w.forget(7);
        assert_eq!(w.board_of(7), None);
    }

    /// MF-04: a re-arm on a shared fence is checked against the board read after it: a wait
    /// another sharer published below it, or one reached meanwhile, calls for a re-arm at
    /// C + 1; nothing new, or a value at or below C, for none.
    #[test]
    fn mf_04_a_re_arm_that_may_have_raised_over_a_new_wait_is_followed_by_c_plus_1() {
        use crate::waitboard::Peers;
        let low = |next, passed| Peers::Lowest { next, passed };
        assert_eq!(Waits::confirm_among(9, 3, low(5, false)), Some(4));
        assert_eq!(Waits::confirm_among(9, 3, low(u64::MAX, true)), Some(4));
        assert_eq!(Waits::confirm_among(9, 3, low(9, false)), None);
        assert_eq!(Waits::confirm_among(9, 3, low(2, false)), None);
        assert_eq!(Waits::confirm_among(9, 3, Peers::Unknown), None);
    }

    /// MF-04, a hostile sharer: whatever another process publishes (zero, CurrentValue, just
    /// above it, huge, "no wait"), the re-arm is never above this process's own lowest
    /// pending wait, and values at or below CurrentValue are not armed at.
    #[test]
    fn mf_04_what_another_sharer_publishes_never_arms_above_the_own_lowest_wait() {
        use crate::waitboard::Peers;
        let mut w = Waits::default();
        w.share(7);
        w.add(7, 9, 3);
        w.add(7, 20, 3);
        for garbage in [0, 1, 3, 4, 8, 9, 10, 1 << 40, u64::MAX - 1, u64::MAX] {
            let p = Peers::Lowest {
                next: garbage,
                passed: false,
            };
            let r = w.rearm_among(7, 20, 3, p).expect("the own 9 is below 20");
            assert!(r <= 9 && r > 3, "{garbage}: armed at {r}");
            let r = w.after_release_among(7, 3, p).expect("9 pending");
            assert!(r <= 9 && r > 3, "{garbage}: armed at {r}");
        }
    }

    /// MF-04: a wait the OS releases ends without a late wake.
    #[test]
    fn mf_04_a_released_wait_is_no_late_wake() {
        let before = late_wakes();
        let r = bounded(5, Some(3), || Ok(Slice::Released), || 0);
        assert_eq!(r, Ok(Woken::Released));
        assert_eq!(late_wakes(), before);
    }

    /// MF-04 under 24H2's raised MonitoredValue: the OS never releases the wait, the fence
    /// reads the value after two slices: the wait ends as a counted late wake.
    #[test]
    fn mf_04_a_reached_value_the_os_did_not_release_is_a_counted_late_wake() {
        let before = late_wakes();
        let mut reads = [1u64, 4, 6].into_iter();
        let r = bounded(5, None, || Ok(Slice::Pending), || reads.next().unwrap_or(6));
        assert_eq!(r, Ok(Woken::Late { current: 6 }));
        assert!(late_wakes() > before);
    }

    /// MF-04: a value not reached by the wait's own deadline is a timeout, whatever the fence
    /// reads later; an idle machine ends the wait at once.
    #[test]
    fn mf_04_a_value_not_reached_by_the_deadline_is_a_failure() {
        let mut n = 0;
        let r = bounded(
            5,
            Some(3),
            || {
                n += 1;
                Ok(Slice::Pending)
            },
            || 4,
        );
        assert_eq!(r, Err(NtStatus(STATUS_TIMEOUT)));
        assert_eq!(n, 3);
        let r = bounded(5, None, || Ok(Slice::Idle), || 4);
        assert_eq!(r, Err(NtStatus(STATUS_TIMEOUT)));
        assert_eq!(
            bounded(5, None, || Err(NtStatus(-1)), || 9),
            Err(NtStatus(-1))
        );
        assert_eq!(slices_in(u64::MAX), None);
        assert_eq!(slices_in(1), Some(1));
        assert_eq!(slices_in(10 * SLICE_NS), Some(10));
    }
}
