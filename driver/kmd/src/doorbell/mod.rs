//! Doorbells: the doorbell objects and the adapter's physical doorbells (BAR2 pages), with the
//! rules a connect chooses a page by. The five doorbell DDIs are in [`ddi`], whose
//! documentation describes the protocol.

use alloc::vec::Vec;
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::queue::{RingControl, RING_MAX, RING_MIN};

use crate::handle::Handle;
use crate::hwqueue::Ring;
use crate::platform::Platform;
use crate::status::{self, Status};

pub mod ddi;

/// A doorbell object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Doorbell {
    /// Dxgkrnl's handle of the doorbell (what `DxgkCbDisconnectDoorbell` names).
    pub os_handle: usize,
    /// The queue it rings.
    pub queue: Handle,
    /// The physical doorbell (BAR2 page) it is connected to, if any.
    pub physical: Option<u32>,
    /// Victimisation callbacks (`DxgkCbDisconnectDoorbell`) naming this doorbell that are in
    /// flight: `DestroyDoorbell` waits for them (module doc, "Destroy waits").
    pub callbacks: u32,
    /// The engine whose power component this doorbell holds active while it has a page (taken
    /// at connect, given back when it loses the page: `crate::power::ddi::hold`).
    pub held: Option<u32>,
    /// The allocations of its ring and ring control: destroying either stops the queue
    /// (`crate::allocation::ddi::destroy`).
    pub allocations: [Handle; 2],
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Slot {
    /// Dedicated mode: the doorbell connected (or being connected) to this page.
    owner: Option<Handle>,
    /// Global mode: the process id the page is bound to (or being bound to).
    process: Option<u32>,
    /// Global mode: doorbells connected through this page.
    users: u32,
    /// Global mode: the doorbell whose connect is between victimising the page's old process
    /// and binding it to its own.
    claimant: Option<Handle>,
    /// When it was connected (a logical clock): the smallest is the least recently connected.
    stamp: u64,
    /// A connect is between victimising the old owner and binding the new one.
    pending: bool,
}

/// The physical doorbells of one adapter.
#[derive(Debug)]
pub struct Physical {
    global: bool,
    slots: Vec<Slot>,
    clock: u64,
}

/// Where a connect will put its doorbell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Page `i` is free.
    Free(u32),
    /// Page `i` is taken from doorbell `victim`, the least recently connected one.
    Victim(u32, Handle),
    /// Global mode: page `i` is already bound to the connecting doorbell's process.
    Shared(u32),
    /// Global mode: page `i` is taken from process `pid`, the least recently connected one;
    /// every doorbell connected through it is victimised.
    VictimProcess(u32, u32),
}

impl Physical {
    /// `count` physical doorbells; `global`: each page serves one process. Allocates the
    /// page table (StartDevice), fallibly.
    pub fn try_new<P: Platform>(count: u32, global: bool) -> Result<Self, crate::kmem::NoMemory> {
        let n = usize::try_from(count).map_err(|_| crate::kmem::NoMemory)?;
        Ok(Self {
            global,
            slots: crate::kmem::try_from_fn::<P, _>(n, |_| Slot::default())?,
            clock: 0,
        })
    }

    /// No doorbells at all (an adapter that is not started); allocates nothing.
    pub const fn none() -> Self {
        Self {
            global: false,
            slots: Vec::new(),
            clock: 0,
        }
    }

    /// `count` doorbells for host unit tests.
    #[cfg(test)]
    pub fn new(count: u32, global: bool) -> Self {
        Self {
            global,
            slots: (0..count).map(|_| Slot::default()).collect(),
            clock: 0,
        }
    }

    /// Global doorbell mode.
    pub fn is_global(&self) -> bool {
        self.global
    }

    /// The lowest free page, else the page of the least recently connected doorbell (pages
    /// with a connect in flight are never chosen). `None` when every page is pending, or in
    /// global mode.
    pub fn choose(&self) -> Option<Choice> {
        if self.global {
            return None;
        }
        match self.free_or_oldest()? {
            (i, None) => Some(Choice::Free(i)),
            (i, Some(s)) => Some(Choice::Victim(i, s.owner?)),
        }
    }

    /// Global mode: the page already bound to process `pid`, else the lowest free page, else
    /// the least recently connected process's page (never one with a connect in flight).
    pub fn choose_process(&self, pid: u32) -> Option<Choice> {
        if !self.global {
            return None;
        }
        if let Some(i) = self
            .slots
            .iter()
            .position(|s| s.process == Some(pid) && !s.pending)
        {
            return u32::try_from(i).ok().map(Choice::Shared);
        }
        match self.free_or_oldest()? {
            (i, None) => Some(Choice::Free(i)),
            (i, Some(s)) => Some(Choice::VictimProcess(i, s.process?)),
        }
    }

    /// The lowest free page (`(i, None)`), else the non-pending page with the oldest stamp.
    fn free_or_oldest(&self) -> Option<(u32, Option<&Slot>)> {
        let idx = |i: usize| u32::try_from(i).ok();
        if let Some(i) = self
            .slots
            .iter()
            .position(|s| s.owner.is_none() && s.process.is_none() && !s.pending)
        {
            return Some((idx(i)?, None));
        }
        let (i, s) = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.pending)
            .min_by_key(|(_, s)| s.stamp)?;
        Some((idx(i)?, Some(s)))
    }

    fn slot_mut(&mut self, i: u32) -> Option<&mut Slot> {
        self.slots.get_mut(usize::try_from(i).ok()?)
    }

    fn tick(&mut self) -> u64 {
        self.clock = self.clock.saturating_add(1);
        self.clock
    }

    /// Gives page `i` to `owner`; `pending` while the old owner is being told.
    pub fn claim(&mut self, i: u32, owner: Handle, pending: bool) {
        let stamp = self.tick();
        if let Some(s) = self.slot_mut(i) {
            s.owner = Some(owner);
            s.stamp = stamp;
            s.pending = pending;
        }
    }

    /// Frees page `i` if `owner` holds it. Returns whether it did.
    pub fn release(&mut self, i: u32, owner: Handle) -> bool {
        match self.slot_mut(i) {
            Some(s) if s.owner == Some(owner) => {
                *s = Slot::default();
                true
            }
            _ => false,
        }
    }

    /// The doorbell holding page `i` (and whether a connect is pending on it).
    pub fn owner(&self, i: u32) -> Option<(Handle, bool)> {
        let s = self.slots.get(usize::try_from(i).ok()?)?;
        s.owner.map(|o| (o, s.pending))
    }

    /// Global mode: one more doorbell of process `pid` connects through page `i` (which is
    /// free or already `pid`'s, not pending).
    pub fn join(&mut self, i: u32, pid: u32) {
        let stamp = self.tick();
        if let Some(s) = self.slot_mut(i) {
            s.process = Some(pid);
            s.users = s.users.saturating_add(1);
            s.stamp = stamp;
        }
    }

    /// Global mode: page `i` is taken for doorbell `claimant` of process `pid`; its old
    /// process's doorbells are being told.
    pub fn claim_for_process(&mut self, i: u32, pid: u32, claimant: Handle) {
        let stamp = self.tick();
        if let Some(s) = self.slot_mut(i) {
            *s = Slot {
                process: Some(pid),
                claimant: Some(claimant),
                stamp,
                pending: true,
                ..Slot::default()
            };
        }
    }

    /// Global mode: whether page `i`'s pending claim is `claimant`'s.
    pub fn claimed_by(&self, i: u32, claimant: Handle) -> bool {
        self.slots
            .get(usize::try_from(i).unwrap_or(usize::MAX))
            .is_some_and(|s| s.pending && s.claimant == Some(claimant))
    }

    /// Global mode: `claimant`'s pending claim on page `i` completes with its doorbell as
    /// the first user.
    pub fn complete_claim(&mut self, i: u32) {
        if let Some(s) = self.slot_mut(i) {
            s.pending = false;
            s.claimant = None;
            s.users = 1;
        }
    }

    /// Global mode: a doorbell leaves page `i`. Returns whether the page is now free (its
    /// last user left and no claim is pending), so the caller unbinds it.
    pub fn leave(&mut self, i: u32) -> bool {
        match self.slot_mut(i) {
            Some(s) if s.process.is_some() && !s.pending => {
                s.users = s.users.saturating_sub(1);
                if s.users == 0 {
                    *s = Slot::default();
                    return true;
                }
                false
            }
            _ => false,
        }
    }

    /// Global mode: drops page `i`'s pending claim (its doorbell went away or connected
    /// elsewhere meanwhile).
    pub fn abandon_claim(&mut self, i: u32) {
        if let Some(s) = self.slot_mut(i) {
            *s = Slot::default();
        }
    }

    /// Global mode: the bound pages and their process ids (to restore `DOORBELL_BIND` after
    /// an adapter reset).
    pub fn process_pages(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            let pid = s.process.filter(|_| !s.pending && s.users > 0)?;
            Some((u32::try_from(i).ok()?, pid))
        })
    }
}

/// The device's rules for a ring (hardware.md 5.1, 12.3): a power-of-two size in range,
/// an 8-aligned base, a 64-aligned control block, both inside the GPU VA range and not
/// overlapping. Where they may point is decided by the allocations that hold them
/// ([`crate::allocation::ring_from_allocations`]).
pub fn check_ring(r: &Ring) -> Result<(), Status> {
    let bad = Err(status::INVALID_PARAMETER);
    if !r.size.is_power_of_two() || !(RING_MIN..=RING_MAX).contains(&r.size) {
        return bad;
    }
    if r.base.is_null() || !r.base.is_aligned(8) || r.control.is_null() || !r.control.is_aligned(64)
    {
        return bad;
    }
    let size = u64::from(r.size);
    let (Some(ring_end), Some(ctl_end)) = (
        r.base.checked_add(size),
        r.control.checked_add(RingControl::SIZE),
    ) else {
        return bad;
    };
    let canonical = |end: GpuVa| end.get() <= 1u64 << rvgpu_hw::mmu::VA_BITS;
    if !canonical(ring_end) || !canonical(ctl_end) {
        return bad;
    }
    if r.base < ctl_end && r.control < ring_end {
        return bad;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::fixtures::doorbell as db;

    #[test]
    fn free_pages_first_lowest_index() {
        let mut p = Physical::new(3, false);
        assert_eq!(p.choose(), Some(Choice::Free(0)));
        p.claim(0, db(1), false);
        assert_eq!(p.choose(), Some(Choice::Free(1)));
        p.claim(1, db(2), false);
        p.claim(2, db(3), false);
        assert!(p.release(1, db(2)));
        assert!(!p.release(1, db(2)), "only the owner releases");
        assert_eq!(p.choose(), Some(Choice::Free(1)));
    }

    #[test]
    fn victim_is_the_least_recently_connected() {
        let mut p = Physical::new(2, false);
        p.claim(0, db(1), false);
        p.claim(1, db(2), false);
        assert_eq!(p.choose(), Some(Choice::Victim(0, db(1))));
        // db(3) takes page 0 from db(1): now db(2) is the oldest.
        p.claim(0, db(3), false);
        assert_eq!(p.choose(), Some(Choice::Victim(1, db(2))));
        // db(2) reconnects elsewhere... page 1 is reclaimed by db(4): db(3) is oldest again.
        p.claim(1, db(4), false);
        assert_eq!(p.choose(), Some(Choice::Victim(0, db(3))));
    }

    #[test]
    fn pending_pages_are_never_chosen() {
        let mut p = Physical::new(2, false);
        p.claim(0, db(1), true);
        assert_eq!(p.choose(), Some(Choice::Free(1)));
        p.claim(1, db(2), false);
        assert_eq!(
            p.choose(),
            Some(Choice::Victim(1, db(2))),
            "page 0 is pending"
        );
        p.claim(1, db(3), true);
        assert_eq!(p.choose(), None, "every page has a connect in flight");
        assert_eq!(p.owner(0), Some((db(1), true)));
    }

    #[test]
    fn global_mode_pages_serve_processes() {
        let mut p = Physical::new(2, true);
        assert!(p.is_global());
        assert_eq!(p.choose(), None, "no per-doorbell pages in global mode");
        assert_eq!(p.choose_process(7), Some(Choice::Free(0)));
        p.join(0, 7);
        assert_eq!(p.choose_process(7), Some(Choice::Shared(0)));
        p.join(0, 7);
        assert_eq!(p.choose_process(8), Some(Choice::Free(1)));
        p.join(1, 8);
        // Page 0 (process 7) is the least recently connected.
        assert_eq!(p.choose_process(9), Some(Choice::VictimProcess(0, 7)));
        assert!(
            !p.leave(0),
            "one of process 7's two doorbells is still there"
        );
        assert!(p.leave(0), "the last one frees the page");
        assert_eq!(p.choose_process(9), Some(Choice::Free(0)));
        assert_eq!(p.process_pages().collect::<Vec<_>>(), vec![(1, 8)]);
    }

    #[test]
    fn global_mode_pending_claims() {
        let mut p = Physical::new(1, true);
        p.join(0, 7);
        assert_eq!(p.choose_process(8), Some(Choice::VictimProcess(0, 7)));
        p.claim_for_process(0, 8, db(5));
        assert!(p.claimed_by(0, db(5)));
        assert!(!p.claimed_by(0, db(6)));
        assert_eq!(
            p.choose_process(8),
            None,
            "a pending page is never chosen or shared"
        );
        assert!(
            !p.leave(0),
            "a pending page is not freed by a leaving doorbell"
        );
        p.complete_claim(0);
        assert_eq!(p.choose_process(8), Some(Choice::Shared(0)));
        assert_eq!(p.process_pages().collect::<Vec<_>>(), vec![(0, 8)]);
        p.claim_for_process(0, 9, db(6));
        p.abandon_claim(0);
        assert_eq!(p.choose_process(9), Some(Choice::Free(0)));
    }

    #[test]
    fn ring_rules() {
        let ok = Ring {
            base: rvgpu_hw::addr::GpuVa::new(0x10_0000),
            size: 4096,
            control: rvgpu_hw::addr::GpuVa::new(0x20_0000),
        };
        assert_eq!(check_ring(&ok), Ok(()));
        let bad = |r: Ring| assert!(check_ring(&r).is_err(), "{r:?}");
        bad(Ring { size: 100, ..ok });
        bad(Ring { size: 128, ..ok });
        bad(Ring {
            base: rvgpu_hw::addr::GpuVa::new(0),
            ..ok
        });
        bad(Ring {
            base: rvgpu_hw::addr::GpuVa::new(0x10_0004),
            ..ok
        });
        bad(Ring {
            control: rvgpu_hw::addr::GpuVa::new(0x20_0008),
            ..ok
        });
        bad(Ring {
            control: rvgpu_hw::addr::GpuVa::new(0x10_0800),
            ..ok
        });
        bad(Ring {
            base: rvgpu_hw::addr::GpuVa::new((1 << rvgpu_hw::mmu::VA_BITS) - 8),
            ..ok
        });
        bad(Ring {
            base: rvgpu_hw::addr::GpuVa::new(u64::MAX - 7),
            ..ok
        });
    }
}
