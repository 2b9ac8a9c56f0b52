//! Where each batch a user-mode queue's ring may still hold ends: what the back-pressure wait
//! looks up to know which progress value frees the room it needs.

use alloc::vec;
use alloc::vec::Vec;

/// Most batches a queue keeps the end of. Past it, the oldest are forgotten and a wait may
/// name a later batch than needed (still one whose completion frees the room).
const MAX_BATCHES: usize = 1024;

/// The write pointer after each batch's closing packet, by progress value: one slot per value
/// (`value & mask`), so recording a batch is a single store and nothing is ever dropped.
/// Holds the last `mask + 1` batches, which is every batch the ring can hold (each takes at
/// least its closing packet) up to [`MAX_BATCHES`].
#[derive(Debug)]
pub(super) struct InFlight {
    ends: Vec<u64>,
    mask: u64,
}

impl InFlight {
    /// For a ring of `ring_words` words whose batches close with a packet of `closing_words`.
    pub(super) fn new(ring_words: u64, closing_words: u64) -> Self {
        let batches = usize::try_from(ring_words / closing_words.max(1)).unwrap_or(MAX_BATCHES);
        let slots = batches.clamp(1, MAX_BATCHES).next_power_of_two();
        Self {
            ends: vec![0; slots],
            mask: slots as u64 - 1,
        }
    }

    /// Batch `value` ends at write pointer `end`.
    #[inline(always)]
    pub(super) fn record(&mut self, value: u64, end: u64) {
        if let Some(slot) = self.ends.get_mut((value & self.mask) as usize) {
            *slot = end;
        }
    }

    /// The first of the batches up to `last` (values from 1, each recorded) still known that
    /// ends at or after write pointer `need`.
    pub(super) fn first_ending_at(&self, need: u64, last: u64) -> Option<u64> {
        let oldest = last.saturating_sub(self.mask).max(1);
        (oldest..=last).find(|&v| {
            self.ends
                .get((v & self.mask) as usize)
                .is_some_and(|&end| end >= need)
        })
    }

    /// How many batches it holds the end of.
    #[cfg(test)]
    pub(super) fn slots(&self) -> usize {
        self.ends.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// UM-16: the batch a full ring waits for is the first that ends at or past the room it
    /// needs; with more batches in the ring than slots, a later one that still frees it.
    #[test]
    fn um_16_the_batch_waited_for_frees_the_room() {
        // 64 ring words, closing packets of 2: 32 slots.
        let mut f = InFlight::new(64, 2);
        assert_eq!(f.slots(), 32);
        assert_eq!(f.first_ending_at(8, 0), None, "nothing submitted");
        for v in 1..=10u64 {
            f.record(v, 24 * v);
        }
        assert_eq!(f.first_ending_at(0, 10), Some(1));
        assert_eq!(f.first_ending_at(48, 10), Some(2));
        assert_eq!(f.first_ending_at(49, 10), Some(3));
        assert_eq!(f.first_ending_at(241, 10), None, "past the last batch");
        // 40 batches of 16 bytes: the first 8 are forgotten, the oldest kept is named.
        let mut f = InFlight::new(64, 2);
        for v in 1..=40u64 {
            f.record(v, 16 * v);
        }
        assert_eq!(f.first_ending_at(16, 40), Some(9));
        assert_eq!(f.first_ending_at(16 * 20, 40), Some(20));
        // A huge ring keeps at most MAX_BATCHES.
        assert_eq!(InFlight::new(u64::MAX, 2).slots(), MAX_BATCHES);
        assert_eq!(InFlight::new(1, 5).slots(), 1);
    }
}
