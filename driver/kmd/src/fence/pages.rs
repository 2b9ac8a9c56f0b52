//! Where each process's native-fence mappings point: how the driver finds a fence's storage
//! on Windows builds that never name it (24H2, 25H2).
//!
//! Those builds pass no system-process VAs to `DxgkDdiCreateNativeFence` and no kernel CPU
//! addresses to the update DDIs, yet store nothing themselves (docs/windows-bringup.md, "Where
//! the code and the pages disagree"). What the driver does see is every page-table entry VidMm
//! writes, and `DxgkDdiOpenNativeFence` names the opening process's VAs of both values. So
//! the leaves of native-fence mappings are recorded here as (process, VA page) → device page,
//! and the fence's first open resolves its two VAs to physical words, which the update DDIs
//! then store through `FENCE_STORE` (hardware.md 8.3).
//!
//! Records are written under the fence table's lock at PASSIVE (BuildPagingBuffer) and read at
//! open; nothing here runs at device IRQL. Their number is bounded per adapter
//! ([`MAX_PAGES`]) and divided between processes like the adapter's other pools
//! ([`crate::quota::FENCE_PAGES`]): once the pool is down to its reserve, a process holding
//! its share gets no new record. The paging operation that maps the page cannot fail, so the
//! page is mapped all the same; the fence's first open, the last step of its creation and the
//! first DDI that names the process, then says `STATUS_NO_MEMORY`, and the OS destroys the
//! fence. Records leave when VidMm unmaps their page and at the process's exit.

use crate::handle::Handle;
use crate::kmem::{NoMemory, SortedMap};
use crate::platform::Platform;
use crate::quota::Share;

/// Bytes per recorded page.
const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// Most pages recorded per adapter: two per fence of a full fence table would be far more than
/// any process maps; this bounds what VidMm's operations can make the driver allocate.
pub const MAX_PAGES: usize = 1 << 16;

/// Records a new fence may add: its CurrentValue page and its MonitoredValue page.
const PER_FENCE: usize = 2;

/// (process, VA page) → device physical page, for native-fence mappings.
#[derive(Debug, Default)]
pub struct FencePages {
    /// Sorted by process first: a process's records are one run, counted and removed
    /// without a walk of the others'.
    map: SortedMap<(Handle, u64), u64>,
    /// Records dropped for lack of pool memory: an open that finds nothing then says
    /// `STATUS_NO_MEMORY`, not that the OS named the wrong VA.
    dropped_for_memory: u64,
}

/// Why a page was not recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteError {
    /// The pool could not grow the records.
    NoMemory,
    /// [`MAX_PAGES`] are recorded already, or the process holds its share of the last ones.
    AtLimit,
}

impl From<NoMemory> for NoteError {
    fn from(_: NoMemory) -> Self {
        Self::NoMemory
    }
}

/// The first and last keys of `process`'s records.
fn span(process: Handle) -> ((Handle, u64), (Handle, u64)) {
    ((process, 0), (process, u64::MAX))
}

impl FencePages {
    /// Records that `va`'s page in `process` maps device page `phys` (`None`: unmapped). A new
    /// record is refused when `share` does not grant `process` one more.
    pub fn note<P: Platform>(
        &mut self,
        process: Handle,
        va: u64,
        phys: Option<u64>,
        share: &Share,
    ) -> Result<(), NoteError> {
        let key = (process, va & !(PAGE - 1));
        match phys {
            None => {
                self.map.remove(&key);
                Ok(())
            }
            Some(p) => {
                if !self.map.contains_key(&key) && !self.grants(process, share) {
                    return Err(NoteError::AtLimit);
                }
                if let Err(e) = self.map.try_insert::<P>(key, p & !(PAGE - 1)) {
                    self.dropped_for_memory = self.dropped_for_memory.saturating_add(1);
                    return Err(e.into());
                }
                Ok(())
            }
        }
    }

    /// Whether `share` lets `process` take one more record (its records are counted only when
    /// the pool is down to its reserve).
    pub fn grants(&self, process: Handle, share: &Share) -> bool {
        share.grants(self.free(), Some(|| self.of_process(process)))
    }

    /// The device physical address of byte `va` in `process`, if its page is recorded and `va`
    /// is 8-byte aligned (a fence value).
    pub fn resolve(&self, process: Handle, va: u64) -> Option<u64> {
        if va == 0 || !va.is_multiple_of(8) {
            return None;
        }
        let page = self.map.get(&(process, va & !(PAGE - 1)))?;
        page.checked_add(va & (PAGE - 1))
    }

    /// Makes room for the records a new fence's storage may add (its CurrentValue and
    /// MonitoredValue pages), so that the paging operation that maps them, which cannot fail
    /// the fence, need not allocate: a record dropped there would be lost for good (the OS
    /// maps a page once), while a create refused here is retried. `Err` also when the pool
    /// has no room left for them at all: the create is refused, not its pages' records.
    pub fn try_reserve<P: Platform>(&mut self) -> Result<(), NoMemory> {
        if self.free() < PER_FENCE {
            return Err(NoMemory);
        }
        self.map.try_reserve_n::<P>(PER_FENCE)
    }

    /// Records the pool can still take.
    pub fn free(&self) -> usize {
        MAX_PAGES.saturating_sub(self.map.len())
    }

    /// Records `process` holds (two binary searches).
    pub fn of_process(&self, process: Handle) -> usize {
        let (lo, hi) = span(process);
        self.map.count_in(&lo, &hi)
    }

    /// Whether a record was ever dropped for lack of memory.
    pub fn dropped_for_memory(&self) -> bool {
        self.dropped_for_memory != 0
    }

    /// VidMm unmapped `pages` pages from `va` in `process`: their records go, in one removal
    /// linear in what it removes.
    pub fn unmapped(&mut self, process: Handle, va: u64, pages: u64) {
        let first = va & !(PAGE - 1);
        let last = pages
            .checked_sub(1)
            .and_then(|n| n.checked_mul(PAGE))
            .and_then(|bytes| first.checked_add(bytes))
            .unwrap_or(u64::MAX);
        if pages != 0 {
            self.map.remove_in(&(process, first), &(process, last));
        }
    }

    /// Drops every record of `process` (it is being destroyed): one removal of its run.
    pub fn forget(&mut self, process: Handle) {
        let (lo, hi) = span(process);
        self.map.remove_in(&lo, &hi);
    }

    /// Pages recorded.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::fixtures::process;
    use crate::kmem::Host;

    /// A share that never refuses below the pool's end.
    const ANY: Share = Share {
        reserve: 0,
        first: 0,
    };

    #[test]
    fn nf_11_a_recorded_page_resolves_each_aligned_value_in_it() {
        let mut p = FencePages::default();
        p.note::<Host>(process(1), 0x7000_1000, Some(0x40_3000), &ANY)
            .unwrap();
        assert_eq!(p.resolve(process(1), 0x7000_1008), Some(0x40_3008));
        assert_eq!(p.resolve(process(1), 0x7000_1ff8), Some(0x40_3ff8));
        assert_eq!(p.resolve(process(1), 0x7000_1004), None, "misaligned");
        assert_eq!(p.resolve(process(1), 0x7000_2000), None, "the next page");
        assert_eq!(p.resolve(process(2), 0x7000_1008), None, "another process");
        // Unmapped: gone.
        p.note::<Host>(process(1), 0x7000_1000, None, &ANY).unwrap();
        assert_eq!(p.resolve(process(1), 0x7000_1008), None);
        assert!(p.is_empty());
    }

    #[test]
    fn nf_11_a_remap_replaces_and_a_destroyed_process_leaves_nothing() {
        let mut p = FencePages::default();
        p.note::<Host>(process(1), 0x1000, Some(0x5000), &ANY)
            .unwrap();
        p.note::<Host>(process(1), 0x1000, Some(0x9000), &ANY)
            .unwrap();
        p.note::<Host>(process(2), 0x1000, Some(0x6000), &ANY)
            .unwrap();
        assert_eq!(p.resolve(process(1), 0x1010), Some(0x9010));
        p.forget(process(1));
        assert_eq!(p.resolve(process(1), 0x1010), None);
        assert_eq!(p.resolve(process(2), 0x1010), Some(0x6010));
        assert_eq!(p.len(), 1);
    }

    /// Bounded work at raised IRQL: forgetting an exiting process's records (under the fence
    /// lock) moves each other process's record at most once, the same per record at 10^4 and
    /// 3 × 10^4 records per process (exact counts of entries moved; [`MAX_PAGES`] bounds the
    /// table below 10^5).
    #[test]
    fn forgetting_a_process_moves_each_record_at_most_once() {
        crate::kmem::assert_moves_per_item(
            "entries moved per record",
            1.0,
            [10_000, 30_000],
            |n| {
                let mut p = FencePages::default();
                // Process 1's records sort first: removed one at a time, each would move every
                // record behind it.
                for i in 0..n as u64 {
                    p.note::<Host>(process(1), i * PAGE, Some(PAGE), &ANY)
                        .unwrap();
                    p.note::<Host>(process(2), i * PAGE, Some(PAGE), &ANY)
                        .unwrap();
                }
                crate::kmem::take_moves();
                p.forget(process(1));
                assert_eq!(p.len(), n);
            },
        );
    }

    #[test]
    fn nf_11_records_are_bounded() {
        let mut p = FencePages::default();
        for i in 0..MAX_PAGES as u64 {
            p.note::<Host>(process(1), i * PAGE, Some(PAGE), &ANY)
                .unwrap();
        }
        assert_eq!(
            p.note::<Host>(process(1), MAX_PAGES as u64 * PAGE, Some(PAGE), &ANY),
            Err(NoteError::AtLimit)
        );
        // Re-recording a page already there is no growth.
        assert_eq!(p.note::<Host>(process(1), 0, Some(2 * PAGE), &ANY), Ok(()));
    }

    /// The default share's reserve is the whole pool: every process holds at most `first`.
    #[test]
    fn the_default_share_bounds_every_process() {
        assert_eq!(crate::quota::FENCE_PAGES.reserve, MAX_PAGES);
    }

    /// The pool down to its reserve: a process holding its share gets no new record (re-noting
    /// its own pages is no growth), a newcomer still gets its first ones, and what a process
    /// unmaps or leaves at exit is free again, in one removal of exactly its records.
    #[test]
    fn records_past_a_process_share_are_refused_and_come_back_when_unmapped() {
        let share = Share {
            reserve: MAX_PAGES - 8,
            first: 2,
        };
        let mut p = FencePages::default();
        let greedy = process(1);
        let mut va = 0;
        while p.note::<Host>(greedy, va, Some(PAGE), &share).is_ok() {
            va += PAGE;
        }
        assert_eq!(p.of_process(greedy), 8, "the records above the reserve");
        assert_eq!(
            p.note::<Host>(greedy, 0, Some(2 * PAGE), &share),
            Ok(()),
            "a page it holds"
        );
        let newcomer = process(2);
        assert_eq!(p.note::<Host>(newcomer, 0, Some(PAGE), &share), Ok(()));
        assert_eq!(p.note::<Host>(newcomer, PAGE, Some(PAGE), &share), Ok(()));
        assert_eq!(
            p.note::<Host>(newcomer, 2 * PAGE, Some(PAGE), &share),
            Err(NoteError::AtLimit)
        );
        assert!(!p.grants(newcomer, &share) && !p.grants(greedy, &share));
        // Unmapping three of the greedy process's pages frees three records, theirs only.
        crate::kmem::take_moves();
        p.unmapped(greedy, 2 * PAGE, 3);
        assert!(
            crate::kmem::take_moves() <= 5,
            "moved more than the records after"
        );
        assert_eq!((p.of_process(greedy), p.of_process(newcomer)), (5, 2));
        assert_eq!(p.resolve(greedy, 3 * PAGE), None);
        assert_eq!(p.resolve(greedy, 5 * PAGE), Some(PAGE));
        assert_eq!(
            p.note::<Host>(newcomer, 2 * PAGE, Some(PAGE), &share),
            Ok(())
        );
        p.forget(greedy);
        assert_eq!((p.of_process(greedy), p.len()), (0, 3));
    }

    /// A create is refused while the pool cannot take a fence's two records.
    #[test]
    fn a_full_pool_refuses_the_reservation() {
        let mut p = FencePages::default();
        for i in 0..(MAX_PAGES - 1) as u64 {
            p.note::<Host>(process(1), i * PAGE, Some(PAGE), &ANY)
                .unwrap();
        }
        assert_eq!(p.try_reserve::<Host>(), Err(NoMemory));
        p.unmapped(process(1), 0, 1);
        assert_eq!(p.try_reserve::<Host>(), Ok(()));
    }
}
