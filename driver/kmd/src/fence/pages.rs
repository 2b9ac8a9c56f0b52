//! Where each process's native-fence mappings point: how the driver finds a fence's storage
//! on Windows builds that never name it (24H2, 25H2).
//!
//! Those builds pass no system-process VAs to `DxgkDdiCreateNativeFence` and no kernel CPU
//! addresses to the update DDIs, yet store nothing themselves (docs/windows-bringup.md, "Where
//! the code and the pages disagree"), and VidMm maps fence storage like any page of its own:
//! no `hAllocation`, no `NativeFence` flag, writable (docs/memory.md "Fence storage in
//! processes"). What the driver does see is every page-table entry VidMm writes, and
//! `DxgkDdiOpenNativeFence` names the opening process's VAs of both values. So the leaves
//! VidMm maps in a process without naming an allocation are recorded here as (process, VA
//! page) → [`Leaf`], and the fence's first open resolves its two VAs to physical words, which
//! the update DDIs then store through `FENCE_STORE` (hardware.md 8.3).
//!
//! The first open also makes the fence's MonitoredValue page kernel-only ([`FencePages::protect`]):
//! VidMm keeps CurrentValue and MonitoredValue slots on separate pages, so the whole page is
//! MonitoredValue. Its recorded leaves, in every process, are rewritten without `USER`
//! (`pagetable::protect_leaves`), and every later leaf VidMm writes for that page is
//! translated without it, whatever table VidMm rewrites.
//!
//! Records are written under the fence table's lock at PASSIVE (BuildPagingBuffer) and read at
//! open; nothing here runs at device IRQL. Their number is bounded per adapter
//! ([`MAX_PAGES`]) and divided between processes like the adapter's other pools
//! ([`crate::quota::FENCE_PAGES`]): once the pool is down to its reserve, a process holding
//! its share gets no new record. BuildPagingBuffer allocates nothing: a record goes into room
//! made before, where a failure could still be returned ([`FencePages::try_reserve_spare`]
//! at DxgkDdiCreateProcess, CreateAllocation and CreateHwQueue, the calls that precede the
//! storage VidMm maps; [`FencePages::try_reserve`] at CreateNativeFence). The paging
//! operation that maps the page cannot fail, so a page with no room left is mapped all the
//! same; the fence's first open, the last step of its creation and the first DDI that names
//! the process, then says `STATUS_NO_MEMORY`, and the OS destroys the fence. Records leave
//! when VidMm unmaps their page and at the process's exit.
//!
//! Only the pages mapped before a fence's first open are recorded: that open is the one
//! that resolves them and strips `USER` from them. A page VidMm maps once it holds a value of
//! a fence already opened ([`FencePages::learn`], [`FencePages::protect`]) is an opener's
//! mapping of that fence: its words are known and its MonitoredValue leaf is written
//! kernel-only as it is mapped, so it gets no record, and opening others' fences costs a
//! process none of the share its own fences need (what opens cost is bounded by the fence
//! table, [`crate::quota::FENCE_OPENS`]).

use crate::handle::Handle;
use crate::kmem::{NoMemory, SortedMap};
use crate::platform::Platform;
use crate::quota::Share;
use rvgpu_hw::addr::GpuVa;

/// Bytes per recorded page.
const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// Most pages recorded per adapter: two per fence of a full fence table would be far more than
/// any process maps; this bounds what VidMm's operations can make the driver allocate.
pub const MAX_PAGES: usize = 1 << 16;

/// Records a new fence may add: its CurrentValue page and its MonitoredValue page.
const PER_FENCE: usize = 2;

/// Room kept for the storage pages VidMm maps with no DDI of the driver's before them (a
/// monitored fence's, such as a kernel-mode queue's progress fence or a device's paging
/// queue's fence): topped up by [`FencePages::try_reserve_spare`].
const SPARE: usize = 8;

/// One recorded leaf: what it maps and where the driver wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// The device physical page it maps.
    pub phys: u64,
    /// The device physical address of the entry in its page table.
    pub pte: u64,
    /// The device entry written there.
    pub entry: u64,
}

/// (process, VA page) → [`Leaf`], for the leaves VidMm maps without an allocation, and the
/// MonitoredValue pages made kernel-only.
#[derive(Debug, Default)]
pub struct FencePages {
    /// Sorted by process first: a process's records are one run, counted and removed
    /// without a walk of the others'.
    map: SortedMap<(Handle, u64), Leaf>,
    /// Device pages kept from user-mode queues → the fences whose MonitoredValue they hold.
    protected: SortedMap<u64, u32>,
    /// Device pages → the fences whose CurrentValue they hold, learnt at those fences' first
    /// opens.
    learnt: SortedMap<u64, u32>,
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
    /// Records that `va`'s page in `process` is mapped by `leaf` (`None`: unmapped), in room
    /// made before ([`FencePages::try_reserve_spare`], [`FencePages::try_reserve`]): it
    /// allocates nothing (BuildPagingBuffer). A new record is refused when `share` does not
    /// grant `process` one more, or when no room is left.
    pub fn note(
        &mut self,
        process: Handle,
        va: GpuVa,
        leaf: Option<Leaf>,
        share: &Share,
    ) -> Result<(), NoteError> {
        let key = (process, va.get() & !(PAGE - 1));
        match leaf {
            None => {
                self.map.remove(&key);
                Ok(())
            }
            Some(l) => {
                if !self.map.contains_key(&key) {
                    if self.of_opened_fence(l.phys) {
                        // An opener's mapping: nothing will read the record.
                        return Ok(());
                    }
                    if !self.grants(process, share) {
                        return Err(NoteError::AtLimit);
                    }
                }
                let l = Leaf {
                    phys: l.phys & !(PAGE - 1),
                    ..l
                };
                if self.map.insert_reserved(key, l).is_err() {
                    self.dropped_for_memory = self.dropped_for_memory.saturating_add(1);
                    return Err(NoteError::NoMemory);
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
    pub fn resolve(&self, process: Handle, va: GpuVa) -> Option<u64> {
        let va = va.get();
        if va == 0 || !va.is_multiple_of(8) {
            return None;
        }
        let leaf = self.map.get(&(process, va & !(PAGE - 1)))?;
        leaf.phys.checked_add(va & (PAGE - 1))
    }

    /// Whether device page `phys` holds the MonitoredValue of an opened fence.
    pub fn is_protected(&self, phys: u64) -> bool {
        self.protected.contains_key(&(phys & !(PAGE - 1)))
    }

    /// Whether device page `phys` holds a value of a fence whose first open is done.
    pub fn of_opened_fence(&self, phys: u64) -> bool {
        self.is_protected(phys) || self.learnt.contains_key(&(phys & !(PAGE - 1)))
    }

    /// Makes room to learn one more CurrentValue page, so that [`FencePages::learn`] cannot
    /// fail.
    pub fn try_reserve_learn<P: Platform>(&mut self) -> Result<(), NoMemory> {
        self.learnt.try_reserve::<P>()
    }

    /// A fence's first open resolved its CurrentValue to device page `phys`: from now on a
    /// process that maps the page is opening that fence (or one packed beside it that is
    /// open too). Room was made by [`FencePages::try_reserve_learn`]; without it nothing is
    /// learnt, and the page's later mappings are recorded as before.
    pub fn learn(&mut self, phys: u64) {
        let page = phys & !(PAGE - 1);
        if let Some(n) = self.learnt.get_mut(&page) {
            *n = n.saturating_add(1);
        } else {
            let _ = self.learnt.insert_reserved(page, 1);
        }
    }

    /// A fence whose CurrentValue is on device page `phys`, learnt at its first open, is gone.
    pub fn unlearn(&mut self, phys: u64) {
        let page = phys & !(PAGE - 1);
        let last = match self.learnt.get_mut(&page) {
            Some(n) => {
                *n = n.saturating_sub(1);
                *n == 0
            }
            None => false,
        };
        if last {
            self.learnt.remove(&page);
        }
    }

    /// Makes room to protect one more page, so that [`FencePages::protect`] cannot fail.
    pub fn try_reserve_protect<P: Platform>(&mut self) -> Result<(), NoMemory> {
        self.protected.try_reserve::<P>()
    }

    /// One more opened fence has its MonitoredValue on device page `phys`: from now on no leaf
    /// of it is a user page. `Some(true)`: the page was not protected before (its recorded
    /// leaves are then rewritten, [`FencePages::strip_user`]). Room was made by
    /// [`FencePages::try_reserve_protect`]; without it a new page is not protected (`None`).
    pub fn protect(&mut self, phys: u64) -> Option<bool> {
        let page = phys & !(PAGE - 1);
        if let Some(n) = self.protected.get_mut(&page) {
            *n = n.saturating_add(1);
            return Some(false);
        }
        self.protected.insert_reserved(page, 1).ok().map(|_| true)
    }

    /// A fence whose MonitoredValue is on device page `phys` is gone: with the last, the
    /// page is an ordinary page again (VidMm may free and reuse it).
    pub fn unprotect(&mut self, phys: u64) {
        let page = phys & !(PAGE - 1);
        let last = match self.protected.get_mut(&page) {
            Some(n) => {
                *n = n.saturating_sub(1);
                *n == 0
            }
            None => false,
        };
        if last {
            self.protected.remove(&page);
        }
    }

    /// Takes `USER` off every recorded leaf that maps device page `phys`, in every process:
    /// `store(pte, entry)` writes each changed entry (`pagetable::store_entry`). Returns how
    /// many were changed (their translations must then be invalidated). One pass over the
    /// records ([`MAX_PAGES`] at most), at a fence's first open only.
    pub fn strip_user(&mut self, phys: u64, mut store: impl FnMut(u64, u64)) -> usize {
        let page = phys & !(PAGE - 1);
        let mut changed = 0usize;
        for l in self.map.values_mut() {
            if l.phys == page && l.entry & rvgpu_hw::mmu::Pte::USER != 0 {
                l.entry &= !rvgpu_hw::mmu::Pte::USER;
                store(l.pte, l.entry);
                changed = changed.saturating_add(1);
            }
        }
        changed
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
        // On top of the spare room, which other processes' pages may take first.
        self.map
            .try_reserve_n::<P>(PER_FENCE.saturating_add(SPARE.min(self.free())))
    }

    /// Tops the room for records up to `SPARE` (as much as the pool has left), for the
    /// storage pages VidMm maps before the driver's next DDI: called where a failure can be
    /// returned, so that BuildPagingBuffer never allocates.
    pub fn try_reserve_spare<P: Platform>(&mut self) -> Result<(), NoMemory> {
        self.map.try_reserve_n::<P>(SPARE.min(self.free()))
    }

    /// Notes with room made first: for host unit tests, which exercise the records, not
    /// their room.
    #[cfg(test)]
    pub fn note_growing<P: Platform>(
        &mut self,
        process: Handle,
        va: GpuVa,
        leaf: Option<Leaf>,
        share: &Share,
    ) -> Result<(), NoteError> {
        self.map.try_reserve::<P>()?;
        self.note(process, va, leaf, share)
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
    pub fn unmapped(&mut self, process: Handle, va: GpuVa, pages: u64) {
        let first = va.get() & !(PAGE - 1);
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

    /// A leaf mapping device page `phys`.
    fn leaf(phys: u64) -> Leaf {
        Leaf {
            phys,
            pte: 0,
            entry: 0,
        }
    }

    #[test]
    fn nf_11_a_recorded_page_resolves_each_aligned_value_in_it() {
        let mut p = FencePages::default();
        p.note_growing::<Host>(
            process(1),
            GpuVa::new(0x7000_1000),
            Some(leaf(0x40_3000)),
            &ANY,
        )
        .unwrap();
        assert_eq!(
            p.resolve(process(1), GpuVa::new(0x7000_1008)),
            Some(0x40_3008)
        );
        assert_eq!(
            p.resolve(process(1), GpuVa::new(0x7000_1ff8)),
            Some(0x40_3ff8)
        );
        assert_eq!(
            p.resolve(process(1), GpuVa::new(0x7000_1004)),
            None,
            "misaligned"
        );
        assert_eq!(
            p.resolve(process(1), GpuVa::new(0x7000_2000)),
            None,
            "the next page"
        );
        assert_eq!(
            p.resolve(process(2), GpuVa::new(0x7000_1008)),
            None,
            "another process"
        );
        // Unmapped: gone.
        p.note_growing::<Host>(process(1), GpuVa::new(0x7000_1000), None, &ANY)
            .unwrap();
        assert_eq!(p.resolve(process(1), GpuVa::new(0x7000_1008)), None);
        assert!(p.is_empty());
    }

    #[test]
    fn nf_11_a_remap_replaces_and_a_destroyed_process_leaves_nothing() {
        let mut p = FencePages::default();
        p.note_growing::<Host>(process(1), GpuVa::new(0x1000), Some(leaf(0x5000)), &ANY)
            .unwrap();
        p.note_growing::<Host>(process(1), GpuVa::new(0x1000), Some(leaf(0x9000)), &ANY)
            .unwrap();
        p.note_growing::<Host>(process(2), GpuVa::new(0x1000), Some(leaf(0x6000)), &ANY)
            .unwrap();
        assert_eq!(p.resolve(process(1), GpuVa::new(0x1010)), Some(0x9010));
        p.forget(process(1));
        assert_eq!(p.resolve(process(1), GpuVa::new(0x1010)), None);
        assert_eq!(p.resolve(process(2), GpuVa::new(0x1010)), Some(0x6010));
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
                    p.note_growing::<Host>(
                        process(1),
                        GpuVa::new(i * PAGE),
                        Some(leaf(PAGE)),
                        &ANY,
                    )
                    .unwrap();
                    p.note_growing::<Host>(
                        process(2),
                        GpuVa::new(i * PAGE),
                        Some(leaf(PAGE)),
                        &ANY,
                    )
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
            p.note_growing::<Host>(process(1), GpuVa::new(i * PAGE), Some(leaf(PAGE)), &ANY)
                .unwrap();
        }
        assert_eq!(
            p.note_growing::<Host>(
                process(1),
                GpuVa::new(MAX_PAGES as u64 * PAGE),
                Some(leaf(PAGE)),
                &ANY
            ),
            Err(NoteError::AtLimit)
        );
        // Re-recording a page already there is no growth.
        assert_eq!(
            p.note_growing::<Host>(process(1), GpuVa::new(0), Some(leaf(2 * PAGE)), &ANY),
            Ok(())
        );
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
        while p
            .note_growing::<Host>(greedy, GpuVa::new(va), Some(leaf(PAGE)), &share)
            .is_ok()
        {
            va += PAGE;
        }
        assert_eq!(p.of_process(greedy), 8, "the records above the reserve");
        assert_eq!(
            p.note_growing::<Host>(greedy, GpuVa::new(0), Some(leaf(2 * PAGE)), &share),
            Ok(()),
            "a page it holds"
        );
        let newcomer = process(2);
        assert_eq!(
            p.note_growing::<Host>(newcomer, GpuVa::new(0), Some(leaf(PAGE)), &share),
            Ok(())
        );
        assert_eq!(
            p.note_growing::<Host>(newcomer, GpuVa::new(PAGE), Some(leaf(PAGE)), &share),
            Ok(())
        );
        assert_eq!(
            p.note_growing::<Host>(newcomer, GpuVa::new(2 * PAGE), Some(leaf(PAGE)), &share),
            Err(NoteError::AtLimit)
        );
        assert!(!p.grants(newcomer, &share) && !p.grants(greedy, &share));
        // Unmapping three of the greedy process's pages frees three records, theirs only.
        crate::kmem::take_moves();
        p.unmapped(greedy, GpuVa::new(2 * PAGE), 3);
        assert!(
            crate::kmem::take_moves() <= 5,
            "moved more than the records after"
        );
        assert_eq!((p.of_process(greedy), p.of_process(newcomer)), (5, 2));
        assert_eq!(p.resolve(greedy, GpuVa::new(3 * PAGE)), None);
        assert_eq!(p.resolve(greedy, GpuVa::new(5 * PAGE)), Some(PAGE));
        assert_eq!(
            p.note_growing::<Host>(newcomer, GpuVa::new(2 * PAGE), Some(leaf(PAGE)), &share),
            Ok(())
        );
        p.forget(greedy);
        assert_eq!((p.of_process(greedy), p.len()), (0, 3));
    }

    /// NF-01: protecting a MonitoredValue page takes `USER` off exactly the leaves that map
    /// it, in every process, once; the page stays protected until its last fence goes.
    #[test]
    fn nf_01_protecting_a_page_strips_user_from_its_leaves_in_every_process() {
        use rvgpu_hw::mmu::Pte;
        let mut p = FencePages::default();
        let user = Pte::VALID | Pte::WRITABLE | Pte::USER;
        let at = |phys: u64, pte: u64| Leaf {
            phys,
            pte,
            entry: phys | user,
        };
        p.note_growing::<Host>(
            process(1),
            GpuVa::new(0x1000),
            Some(at(0x9000, 0x100)),
            &ANY,
        )
        .unwrap();
        p.note_growing::<Host>(
            process(2),
            GpuVa::new(0x5000),
            Some(at(0x9000, 0x200)),
            &ANY,
        )
        .unwrap();
        p.note_growing::<Host>(
            process(1),
            GpuVa::new(0x2000),
            Some(at(0xA000, 0x108)),
            &ANY,
        )
        .unwrap();
        assert!(!p.is_protected(0x9008));
        p.try_reserve_protect::<Host>().unwrap();
        assert_eq!(p.protect(0x9008), Some(true));
        let mut stored = Vec::new();
        assert_eq!(p.strip_user(0x9008, |pte, e| stored.push((pte, e))), 2);
        stored.sort();
        assert_eq!(
            stored,
            [
                (0x100, 0x9000 | Pte::VALID | Pte::WRITABLE),
                (0x200, 0x9000 | Pte::VALID | Pte::WRITABLE)
            ]
        );
        assert_eq!(p.strip_user(0x9000, |_, _| panic!("stripped twice")), 0);
        // A second fence on the page; the page is protected until both are gone.
        assert_eq!(p.protect(0x9010), Some(false));
        p.unprotect(0x9008);
        assert!(p.is_protected(0x9000));
        p.unprotect(0x9010);
        assert!(!p.is_protected(0x9000) && !p.is_protected(0xA000));
    }

    /// NF-11: once a fence's first open learnt its pages, another process's mappings of them
    /// (its opens) take no record and none of its share, which stays whole for its own
    /// fences; when the fence is gone the pages are recorded again.
    #[test]
    fn nf_11_an_openers_mappings_of_an_opened_fences_pages_take_none_of_its_share() {
        let share = Share {
            reserve: MAX_PAGES,
            first: 2,
        };
        let mut p = FencePages::default();
        let (creator, opener) = (process(1), process(2));
        for (va, phys) in [(0x1000, 0x9000), (0x2000, 0xA000)] {
            p.note_growing::<Host>(creator, GpuVa::new(va), Some(leaf(phys)), &share)
                .unwrap();
        }
        // The creator's open learns CurrentValue (0x9000) and protects MonitoredValue.
        p.try_reserve_learn::<Host>().unwrap();
        p.try_reserve_protect::<Host>().unwrap();
        p.learn(0x9008);
        assert_eq!(p.protect(0xA008), Some(true));
        // Eight opens of it, each mapping both pages at VAs of their own.
        let mut va = 0x10_0000;
        for phys in [0x9000, 0xA000].repeat(8) {
            assert_eq!(
                p.note_growing::<Host>(opener, GpuVa::new(va), Some(leaf(phys)), &share),
                Ok(())
            );
            va += PAGE;
        }
        assert_eq!((p.of_process(opener), p.len()), (0, 2), "no record taken");
        // Its own fence's pages still fit its whole share.
        for (va, phys) in [(0x1000, 0xB000), (0x2000, 0xC000)] {
            assert_eq!(
                p.note_growing::<Host>(opener, GpuVa::new(va), Some(leaf(phys)), &share),
                Ok(())
            );
        }
        assert_eq!(p.of_process(opener), 2);
        // The fence gone, its pages are ordinary again: a new mapping is recorded.
        p.unlearn(0x9000);
        p.unprotect(0xA000);
        assert!(!p.of_opened_fence(0x9000) && !p.of_opened_fence(0xA000));
        let third = process(3);
        p.note_growing::<Host>(third, GpuVa::new(0x1000), Some(leaf(0x9000)), &share)
            .unwrap();
        assert_eq!(p.of_process(third), 1);
    }

    /// A create is refused while the pool cannot take a fence's two records.
    #[test]
    fn a_full_pool_refuses_the_reservation() {
        let mut p = FencePages::default();
        for i in 0..(MAX_PAGES - 1) as u64 {
            p.note_growing::<Host>(process(1), GpuVa::new(i * PAGE), Some(leaf(PAGE)), &ANY)
                .unwrap();
        }
        assert_eq!(p.try_reserve::<Host>(), Err(NoMemory));
        p.unmapped(process(1), GpuVa::new(0), 1);
        assert_eq!(p.try_reserve::<Host>(), Ok(()));
    }
}
