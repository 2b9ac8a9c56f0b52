//! What the processes sharing a native fence tell each other about their CPU waits, so that
//! each re-arms 24H2's MonitoredValue at the lowest pending wait of all rather than at
//! CurrentValue + 1 (docs/performance.md, "Waits through the UMD").
//!
//! Each sharer publishes its lowest pending waits on the fence ([`Slot`]) in a slot only it
//! may write, before it registers a wait, and reads the others' after ([`Board`]; the shipped
//! board is the KMD's, reached by escape: [`request`], [`answer`]); it re-arms
//! at the lowest of all, and checks the board again after that re-arm, itself a registration
//! (`crate::wait::Waits::rearm_among`, `confirm_among`). Where the board lives must keep a slot
//! its owner's: a slot another process could rewrite (one page every sharer maps writable)
//! would let it hide the owner's waits from the others, whose registrations then raise
//! MonitoredValue over them; the KMD's slots are per open, written only by the escapes the OS
//! attributes to that open's device. An answer that is not known to cover every process holding the
//! fence (one that publishes nothing, such as a program that is not rvgpu's) is
//! [`Peers::Unknown`], and the UMD keeps the CurrentValue + 1 rule.
//!
//! What another sharer writes in its own slot is not trusted to be anything: values at or
//! below CurrentValue are dropped ([`Slot::next_above`], [`Peers::clamp`]) and the re-arm is
//! never above the reader's own lowest pending wait, so the worst a writer can do is make the
//! others arm low: interrupts, never a late or lost wake.

/// The other sharers of a fence, as the reader learnt them after its own registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peers {
    /// Some holder of the fence may wait without publishing: re-arm at CurrentValue + 1.
    Unknown,
    /// Every other holder publishes.
    Lowest {
        /// The lowest of their pending waits above CurrentValue (`u64::MAX`: none).
        next: u64,
        /// One of their waits lies between the CurrentValue read before the reader's
        /// registration and the one read after: that registration may have raised
        /// MonitoredValue over it before the fence reached it, so only another registration's
        /// unwait releases it now.
        passed: bool,
    },
}

impl Peers {
    /// The others' lowest pending wait above `current`, if a re-arm must cover it: `None` for
    /// values already reached (their waits were released) or no wait at all.
    pub fn clamp(lowest: u64, current: u64) -> Option<u64> {
        (lowest > current && lowest != u64::MAX).then_some(lowest)
    }
}

/// Pending waits a slot names: more than a process's waits in flight on one fence (a frame
/// loop keeps one or two).
pub const SLOT_WAITS: usize = rvgpu_hw::pdd::WAIT_BOARD_WAITS;

/// What one sharer publishes: its lowest pending waits, so that a reader still knows its next
/// one after the lowest was released (an event wait's process may not look again), and
/// whether it has more than it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Its lowest pending waits, `u64::MAX` where there are fewer (any order: read as a set).
    pub waits: [u64; SLOT_WAITS],
    /// It waits for more values than `waits` names, all above them.
    pub more: bool,
}

impl Slot {
    /// No pending wait.
    pub const NONE: Slot = Slot {
        waits: [u64::MAX; SLOT_WAITS],
        more: false,
    };

    /// The lowest pending wait of the slot's owner above `current`, read as garbage may be
    /// written: the lowest named value above `current`; `current + 1` when none is but the
    /// owner has more (its next is not named); none otherwise.
    pub fn next_above(&self, current: u64) -> Option<u64> {
        rvgpu_hw::pdd::board_next_above(&self.waits, self.more, current)
    }
}

/// The KMD's board: a `D3DKMTEscape` ([`WaitBoardEscape`]) naming the fence by CurrentValue's
/// GPU VA in this process (`current_gpu`), publishing `slot` if any as the caller's, and asking
/// about the other openers with CurrentValue read at `from` and `to`. The KMD keeps one slot per
/// open of the fence and writes only the calling device's (the OS attributes the escape).
pub fn request(current_gpu: u64, slot: Option<Slot>, from: u64, to: u64) -> WaitBoardEscape {
    let s = slot.unwrap_or(Slot::NONE);
    WaitBoardEscape {
        magic: rvgpu_hw::pdd::PDD_MAGIC,
        version: rvgpu_hw::pdd::WAIT_BOARD_ESCAPE_VERSION,
        current_value_gpu: current_gpu,
        publish: u32::from(slot.is_some()),
        more: u32::from(s.more),
        waits: s.waits,
        from,
        to,
        known: 0,
        passed: 0,
        next: u64::MAX,
    }
}

/// The KMD's answer to [`request`] `asked` (`q` as the escape wrote it back): the other
/// openers, [`Peers::Unknown`] for anything but a well-formed answer about the fence asked.
pub fn answer(asked: &WaitBoardEscape, q: &WaitBoardEscape) -> Peers {
    let same = q.magic == asked.magic
        && q.version == asked.version
        && q.current_value_gpu == asked.current_value_gpu;
    match (same, q.known, q.passed) {
        (true, 1, p @ (0 | 1)) => Peers::Lowest {
            next: q.next,
            passed: p == 1,
        },
        _ => Peers::Unknown,
    }
}

use rvgpu_hw::pdd::WaitBoardEscape;

/// One slot per sharer, each written only by its owner: the published pending waits of the
/// processes sharing one fence.
///
/// A wait is published before it is registered with the OS, and the others are read after:
/// then whichever of two processes registers second, and so may raise MonitoredValue over the
/// other's wait, reads that wait and re-arms at or below it.
pub trait Board {
    /// Publishes `slot` as sharer `me`'s.
    fn publish(&mut self, me: usize, slot: Slot);
    /// The other sharers' lowest pending wait above `to`, and whether one lies in
    /// `from + 1..=to` ([`Peers`]): CurrentValue read before and after the reader's registration.
    fn peers(&self, me: usize, from: u64, to: u64) -> Peers;
}

/// A board held in one place for every sharer (as a driver keeps it, answering each process
/// for its own slot only): sharers not yet published are `None`, which makes the answer
/// [`Peers::Unknown`].
#[derive(Clone, Debug, Default)]
pub struct Slots {
    slots: alloc::vec::Vec<Option<Slot>>,
}

impl Slots {
    /// A board for `sharers` processes, none published yet.
    pub fn new(sharers: usize) -> Self {
        Self {
            slots: alloc::vec![None; sharers],
        }
    }
}

impl Board for Slots {
    fn publish(&mut self, me: usize, slot: Slot) {
        if let Some(mine) = self.slots.get_mut(me) {
            *mine = Some(slot);
        }
    }

    fn peers(&self, me: usize, from: u64, to: u64) -> Peers {
        if me >= self.slots.len() {
            return Peers::Unknown;
        }
        let (mut next, mut passed) = (u64::MAX, false);
        for (i, s) in self.slots.iter().enumerate() {
            match s {
                _ if i == me => {}
                Some(s) => {
                    next = next.min(s.next_above(to).unwrap_or(u64::MAX));
                    passed |= s.next_above(from).is_some_and(|w| w <= to);
                }
                None => return Peers::Unknown,
            }
        }
        Peers::Lowest { next, passed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(w: &[u64], more: bool) -> Slot {
        let mut s = Slot::NONE;
        s.waits[..w.len()].copy_from_slice(w);
        s.more = more;
        s
    }

    /// MF-04: a sharer's answer covers the others only once every one published; its own
    /// slot is not part of it; a slot index out of range answers Unknown.
    #[test]
    fn mf_04_a_board_answers_only_when_every_sharer_published() {
        let mut b = Slots::new(3);
        let low = |next, passed| Peers::Lowest { next, passed };
        b.publish(0, slot(&[9], false));
        assert_eq!(b.peers(0, 0, 0), Peers::Unknown);
        b.publish(1, slot(&[7], false));
        assert_eq!(b.peers(1, 0, 0), Peers::Unknown, "sharer 2 never published");
        b.publish(2, Slot::NONE);
        assert_eq!(b.peers(2, 0, 0), low(7, false));
        b.publish(1, slot(&[4], false));
        assert_eq!(
            b.peers(1, 0, 0),
            low(9, false),
            "its own slot is not its answer"
        );
        assert_eq!(b.peers(0, 0, 0), low(4, false));
        assert_eq!(
            b.peers(0, 4, 4),
            low(u64::MAX, false),
            "4 was released before"
        );
        assert_eq!(
            b.peers(0, 3, 4),
            low(u64::MAX, true),
            "4 was reached while the reader registered"
        );
        b.publish(3, slot(&[1], false));
        assert_eq!(b.peers(3, 0, 0), Peers::Unknown);
    }

    /// MF-04, the KMD's board: a request publishes the slot only when given one; an answer is
    /// read only when it is well formed and about the fence asked (anything else is Unknown:
    /// the C + 1 rule).
    #[test]
    fn mf_04_the_kmd_s_board_answer_is_trusted_only_when_well_formed() {
        let asked = request(0x5000, Some(slot(&[9], true)), 3, 4);
        assert_eq!((asked.publish, asked.more, asked.waits[0]), (1, 1, 9));
        assert_eq!(request(0x5000, None, 3, 4).publish, 0);
        let mut q = asked;
        (q.known, q.passed, q.next) = (1, 1, 7);
        assert_eq!(
            answer(&asked, &q),
            Peers::Lowest {
                next: 7,
                passed: true
            }
        );
        q.passed = 0;
        assert_eq!(
            answer(&asked, &q),
            Peers::Lowest {
                next: 7,
                passed: false
            }
        );
        for bad in [
            WaitBoardEscape { known: 0, ..q },
            WaitBoardEscape { known: 2, ..q },
            WaitBoardEscape { passed: 2, ..q },
            WaitBoardEscape {
                current_value_gpu: 0x6000,
                ..q
            },
            WaitBoardEscape { magic: 0, ..q },
        ] {
            assert_eq!(answer(&asked, &bad), Peers::Unknown, "{bad:?}");
        }
    }

    /// MF-04: a sharer whose lowest wait was released is still read at its next one; values at
    /// or below CurrentValue and "no wait" are ignored, in any order; an owner with more
    /// waits than its slot names is read at CurrentValue + 1 once the named ones are reached.
    #[test]
    fn mf_04_a_slot_is_read_at_its_owner_s_next_wait_above_current_value() {
        let s = slot(&[3, 8, 5], false);
        assert_eq!(s.next_above(0), Some(3));
        assert_eq!(s.next_above(3), Some(5), "3 was released");
        assert_eq!(s.next_above(8), None);
        let garbage = slot(&[0, u64::MAX, 5, 5], false);
        assert_eq!(garbage.next_above(5), None);
        assert_eq!(garbage.next_above(4), Some(5));
        let s = slot(&[3, 4, 5, 6], true);
        assert_eq!(s.next_above(6), Some(7));
        assert_eq!(Slot::NONE.next_above(0), None);
        assert_eq!(Peers::clamp(0, 5), None);
        assert_eq!(Peers::clamp(5, 5), None);
        assert_eq!(Peers::clamp(u64::MAX, 5), None);
        assert_eq!(Peers::clamp(6, 5), Some(6));
    }
}
