//! What the processes sharing a native fence tell each other about their CPU waits, so that
//! each re-arms 24H2's MonitoredValue at the lowest pending wait of all rather than at
//! CurrentValue + 1 (docs/performance.md, "Waits through the UMD").
//!
//! Each sharer publishes one value, its lowest pending wait on the fence (`u64::MAX`: none),
//! in a slot only it may write, and reads the lowest of the others' slots (a [`Board`]). Where
//! that answer comes from must keep a slot its owner's: a slot another process could rewrite
//! (one page every sharer maps writable) would let it hide the owner's waits from the others,
//! whose registrations then raise MonitoredValue over them. An answer that is not known to
//! cover every process holding the fence (one that publishes nothing, such as a program that
//! is not rvgpu's) is [`Peers::Unknown`], and the UMD keeps the CurrentValue + 1 rule.
//!
//! What another sharer writes in its own slot is not trusted to be anything: [`Peers::clamp`]
//! drops values at or below CurrentValue (already reached, or garbage) and the re-arm is never
//! above the reader's own lowest pending wait, so the worst a writer can do is make the
//! others arm low: interrupts, never a late or lost wake.

/// The other sharers of a fence, as the reader learnt them after its own registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peers {
    /// Some holder of the fence may wait without publishing: re-arm at CurrentValue + 1.
    Unknown,
    /// Every other holder publishes: the lowest value among their slots (`u64::MAX`: none).
    Lowest(u64),
}

impl Peers {
    /// The others' lowest pending wait above `current`, if a re-arm must cover it: `None` for
    /// values already reached (their waits were released) or no wait at all.
    pub fn clamp(lowest: u64, current: u64) -> Option<u64> {
        (lowest > current && lowest != u64::MAX).then_some(lowest)
    }
}

/// One slot per sharer, each written only by its owner: the published lowest pending waits
/// of the processes sharing one fence.
pub trait Board {
    /// Publishes `lowest` (`u64::MAX`: no wait) as sharer `me`'s value and returns the others'
    /// lowest ([`Peers`]).
    fn publish(&mut self, me: usize, lowest: u64) -> Peers;
}

/// A board held in one place for every sharer (as a driver keeps it, answering each process
/// for its own slot only): `slots[i]` is sharer i's value; sharers not yet published are
/// `None`, which makes the answer [`Peers::Unknown`].
#[derive(Clone, Debug, Default)]
pub struct Slots {
    slots: alloc::vec::Vec<Option<u64>>,
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
    fn publish(&mut self, me: usize, lowest: u64) -> Peers {
        let Some(slot) = self.slots.get_mut(me) else {
            return Peers::Unknown;
        };
        *slot = Some(lowest);
        let mut low = u64::MAX;
        for (i, s) in self.slots.iter().enumerate() {
            match s {
                _ if i == me => {}
                Some(v) => low = low.min(*v),
                None => return Peers::Unknown,
            }
        }
        Peers::Lowest(low)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MF-04: a sharer's answer covers the others only once every one published; its own
    /// slot is not part of it; a slot index out of range answers Unknown.
    #[test]
    fn mf_04_a_board_answers_only_when_every_sharer_published() {
        let mut b = Slots::new(3);
        assert_eq!(b.publish(0, 9), Peers::Unknown);
        assert_eq!(b.publish(1, 7), Peers::Unknown, "sharer 2 never published");
        assert_eq!(b.publish(2, u64::MAX), Peers::Lowest(7));
        assert_eq!(
            b.publish(1, 4),
            Peers::Lowest(9),
            "its own slot is not its answer"
        );
        assert_eq!(b.publish(0, 12), Peers::Lowest(4));
        assert_eq!(b.publish(3, 1), Peers::Unknown);
    }

    /// MF-04: what the others published counts only above CurrentValue and below "no wait".
    #[test]
    fn mf_04_published_values_at_or_below_current_value_are_ignored() {
        assert_eq!(Peers::clamp(0, 5), None);
        assert_eq!(Peers::clamp(5, 5), None);
        assert_eq!(Peers::clamp(u64::MAX, 5), None);
        assert_eq!(Peers::clamp(6, 5), Some(6));
    }
}
