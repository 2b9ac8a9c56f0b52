//! The adapter's native-fence objects and their lifetime rules (NF-13).
//!
//! Dxgkrnl creates a fence once (global handle), then opens it once per process that uses it
//! (local handles), closes local handles as processes let go, and destroys the global object
//! after the last close. The table enforces that order: anything else is refused with an
//! NTSTATUS, never trusted.

use crate::kmem::SortedMap;
use crate::platform::Platform;
use crate::quota::Share;
use rvgpu_hw::addr::GpuVa;

/// One native fence as the driver knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fence {
    /// The device report tag ([`super::registry`]).
    pub tag: u64,
    /// GPU (system process) address of CurrentValue.
    pub current_gpu: GpuVa,
    /// GPU (system process) address of MonitoredValue.
    pub monitored_gpu: GpuVa,
    /// Device physical addresses of (CurrentValue, MonitoredValue), learnt at the first open
    /// when the OS passed no system addresses ([`super::pages`]); `None` until then.
    pub words: Option<(u64, u64)>,
    /// The device page of MonitoredValue, kept from user-mode queues since the fence's first
    /// open ([`super::pages::FencePages::protect`]); `None` before it.
    pub guarded: Option<u64>,
    /// `D3DDDI_NATIVEFENCE_TYPE`, checked at creation (0 or 1), for the debugger: a byte, so
    /// it shares the record's last word with [`Self::opens`] and [`Self::opened`].
    pub fence_type: u8,
    /// Local handles open on it.
    pub opens: u32,
    /// Whether its first open (the creator's, the last step of its creation) is done: every
    /// later open is an opener's, charged to [`crate::quota::FENCE_OPENS`].
    pub opened: bool,
}

/// Why a table operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableError {
    /// The handle is already in use.
    Exists,
    /// No such handle.
    Unknown,
    /// Destroy while local handles are still open.
    StillOpen,
    /// The table could not grow (pool exhausted); nothing changed.
    NoMemory,
    /// The opening process holds its share of later opens, or there are [`MAX_LATER_OPENS`];
    /// nothing changed.
    AtShare,
}

/// Most opens of fences after their first (by other processes, or by the creator again) live
/// at once on an adapter: what opens alone can make the table hold, beside one creator's
/// open per fence.
pub const MAX_LATER_OPENS: usize = 1 << 18;

/// Global fences by `hGlobalNativeFence`, local handles by `hLocalNativeFence`.
#[derive(Debug, Default)]
pub struct FenceTable {
    globals: Sparse<Fence>,
    locals: Sparse<Local>,
    /// Later opens (`Local::later`) by opening process (its raw handle, 0 if unknown) → how
    /// many it holds: one entry per process, counted without a walk of the locals.
    later: SortedMap<u64, u32>,
    /// Later opens held by every process.
    later_total: usize,
    /// The leaves VidMm maps without an allocation, to find unplaced fences' storage, and the
    /// MonitoredValue pages kept from user-mode queues ([`super::pages`]).
    pub pages: super::pages::FencePages,
    /// Wait-board slots by local handle, only for opens that published one: most fences are
    /// never shared, so an open carries no slot until its opener writes it.
    boards: SortedMap<usize, BoardSlot>,
}

/// A sorted map whose removals leave a hole, compacted once holes outnumber entries:
/// removing from the middle of a sorted vector moves everything after it, so destroying
/// 100,000 fences in an order other than the reverse of creation was quadratic. Handles are
/// created in increasing order, so inserts append; a removal is a search and a store,
/// amortised O(log n) with the compaction.
#[derive(Debug)]
struct Sparse<V> {
    map: SortedMap<usize, Option<V>>,
    live: usize,
    holes: usize,
}

impl<V> Default for Sparse<V> {
    fn default() -> Self {
        Self {
            map: SortedMap::default(),
            live: 0,
            holes: 0,
        }
    }
}

impl<V> Sparse<V> {
    fn len(&self) -> usize {
        self.live
    }

    fn get(&self, k: usize) -> Option<&V> {
        self.map.get(&k).and_then(Option::as_ref)
    }

    fn get_mut(&mut self, k: usize) -> Option<&mut V> {
        self.map.get_mut(&k).and_then(Option::as_mut)
    }

    fn contains_key(&self, k: usize) -> bool {
        self.get(k).is_some()
    }

    fn keys(&self) -> impl Iterator<Item = usize> + '_ {
        self.map
            .iter()
            .filter(|(_, v)| v.is_some())
            .map(|(k, _)| *k)
    }

    /// Room for one more entry (nothing if a hole or spare capacity will take it).
    fn try_reserve<P: Platform>(&mut self) -> Result<(), crate::kmem::NoMemory> {
        self.map.try_reserve::<P>()
    }

    /// Inserts `k` (absent) into room made by [`Sparse::try_reserve`]; `false` (nothing
    /// changed) if `k` is present or there is no room.
    fn insert_reserved(&mut self, k: usize, v: V) -> bool {
        if let Some(slot) = self.map.get_mut(&k) {
            if slot.is_some() {
                return false;
            }
            *slot = Some(v);
            self.holes = self.holes.saturating_sub(1);
        } else if self.map.insert_reserved(k, Some(v)).is_err() {
            return false;
        }
        self.live = self.live.saturating_add(1);
        true
    }

    fn remove(&mut self, k: usize) -> Option<V> {
        let v = self.map.get_mut(&k)?.take()?;
        self.live = self.live.saturating_sub(1);
        self.holes = self.holes.saturating_add(1);
        if self.holes > 32 && self.holes > self.live {
            self.map.retain(|_, v| v.is_some());
            self.holes = 0;
        }
        Some(v)
    }
}

/// A process's handle on a global fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Local {
    pub global: usize,
    pub device: usize,
    /// The opening device's process (its raw handle), 0 if unknown: what the per-process
    /// share counts ([`crate::quota::Quotas::fences`]).
    pub process: u64,
    /// CurrentValue's GPU VA in the opening process (`DXGKARG_OPENNATIVEFENCE`): what the
    /// process names the fence by when it asks for the report tag ([`FenceTable::tag_of_open`]).
    pub current_gpu: u64,
    /// Whether it was not the fence's first open (and so counts in [`FenceTable::later_of`]).
    pub later: bool,
}

/// One opener's slot on its fence's wait board: its lowest pending CPU waits, as it wrote
/// them (not trusted to be anything: readers clamp, [`rvgpu_hw::pdd::board_next_above`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoardSlot {
    /// Its lowest pending waits, `u64::MAX` where there are fewer.
    pub waits: [u64; rvgpu_hw::pdd::WAIT_BOARD_WAITS],
    /// It waits for more values than `waits` names.
    pub more: bool,
}

/// What the board answers an opener about the fence's other openers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoardAnswer {
    /// Some other open never published.
    Unknown,
    /// Every other open published: their lowest pending wait above the reader's later
    /// CurrentValue (`u64::MAX`: none), and whether one lay between its two reads.
    Lowest { next: u64, passed: bool },
}

impl FenceTable {
    /// Live global fences.
    pub fn len(&self) -> usize {
        self.globals.len()
    }

    /// Whether no fence is live.
    pub fn is_empty(&self) -> bool {
        self.globals.len() == 0
    }

    /// The global handles of every live fence.
    pub fn handles(&self) -> impl Iterator<Item = usize> + '_ {
        self.globals.keys()
    }

    /// The global fence `h`.
    pub fn get(&self, h: usize) -> Option<&Fence> {
        self.globals.get(h)
    }

    /// The global fence `h`, to record what its first open learnt.
    pub fn get_mut(&mut self, h: usize) -> Option<&mut Fence> {
        self.globals.get_mut(h)
    }

    /// Makes room for one more global fence, so that the next [`FenceTable::create`] cannot
    /// fail for memory.
    pub fn try_reserve<P: Platform>(&mut self) -> Result<(), TableError> {
        self.globals
            .try_reserve::<P>()
            .map_err(|_| TableError::NoMemory)
    }

    /// CreateNativeFence.
    pub fn create<P: Platform>(&mut self, h: usize, fence: Fence) -> Result<(), TableError> {
        if self.globals.contains_key(h) {
            return Err(TableError::Exists);
        }
        self.try_reserve::<P>()?;
        let fence = Fence {
            opens: 0,
            opened: false,
            ..fence
        };
        if !self.globals.insert_reserved(h, fence) {
            return Err(TableError::NoMemory);
        }
        Ok(())
    }

    /// Local handles open by process `process` (a scan: asked only when the table is down
    /// to its reserve, [`crate::quota::Share::grants`]).
    pub fn opens_of_process(&self, process: u64) -> usize {
        self.locals
            .map
            .values()
            .filter(|l| l.is_some_and(|l| l.process == process))
            .count()
    }

    /// Later opens (not a fence's first) process `process` holds: one binary search.
    pub fn later_of(&self, process: u64) -> usize {
        self.later
            .get(&process)
            .map_or(0, |n| usize::try_from(*n).unwrap_or(usize::MAX))
    }

    /// OpenNativeFence: a new local handle on global `g` for `device` of `process` (0:
    /// unknown), which mapped CurrentValue at `current_gpu`. An open after the fence's first
    /// is refused ([`TableError::AtShare`]) when `share` does not let `process` hold one more
    /// of them: opens alone cannot grow the table past [`MAX_LATER_OPENS`], and a process
    /// opening others' fences stops at its share while others still open theirs.
    pub fn open<P: Platform>(
        &mut self,
        g: usize,
        local: usize,
        device: usize,
        process: u64,
        current_gpu: u64,
        share: &Share,
    ) -> Result<(), TableError> {
        if self.locals.contains_key(local) {
            return Err(TableError::Exists);
        }
        let later = self.globals.get(g).ok_or(TableError::Unknown)?.opened;
        // Room first, then the entry, then the counts: a failure changes nothing.
        if later {
            let free = MAX_LATER_OPENS.saturating_sub(self.later_total);
            let mine = (process != 0).then_some(|| self.later_of(process));
            if !share.grants(free, mine) {
                return Err(TableError::AtShare);
            }
            self.later
                .try_reserve::<P>()
                .map_err(|_| TableError::NoMemory)?;
        }
        self.locals
            .try_reserve::<P>()
            .map_err(|_| TableError::NoMemory)?;
        if !self.locals.insert_reserved(
            local,
            Local {
                global: g,
                device,
                process,
                current_gpu,
                later,
            },
        ) {
            return Err(TableError::NoMemory);
        }
        if later {
            match self.later.get_mut(&process) {
                Some(n) => *n = n.saturating_add(1),
                None => {
                    let _ = self.later.insert_reserved(process, 1);
                }
            }
            self.later_total = self.later_total.saturating_add(1);
        }
        if let Some(f) = self.globals.get_mut(g) {
            f.opens = f.opens.saturating_add(1);
            f.opened = true;
        }
        Ok(())
    }

    /// The report tag of the fence `device` holds open with CurrentValue at `current_gpu` in
    /// its process; `None` if it holds none there. A linear scan: asked once per open from an
    /// NT handle (crate::escape), never on a signal path.
    pub fn tag_of_open(&self, device: usize, current_gpu: u64) -> Option<u64> {
        let l = self
            .locals
            .map
            .values()
            .find_map(|l| l.filter(|l| l.device == device && l.current_gpu == current_gpu))?;
        self.globals.get(l.global).map(|f| f.tag)
    }

    /// The wait board of the fence `device` holds open with CurrentValue at `current_gpu`:
    /// `publish` (if any) replaces that open's slot, then the answer covers every other open
    /// of the same fence, with CurrentValue read at `from` before and `to` after the caller's
    /// registration. Only the caller's own open is written: the device is the one the OS
    /// attributed the escape to. `None` if the device holds no open there. A linear scan of
    /// the opens, on the CPU-wait path only, never on a signal path.
    pub fn board<P: Platform>(
        &mut self,
        device: usize,
        current_gpu: u64,
        publish: Option<BoardSlot>,
        from: u64,
        to: u64,
    ) -> Result<BoardAnswer, TableError> {
        let (mine, global) = self
            .locals
            .map
            .iter()
            .find_map(|(k, l)| {
                l.as_ref()
                    .filter(|l| l.device == device && l.current_gpu == current_gpu)
                    .map(|l| (*k, l.global))
            })
            .ok_or(TableError::Unknown)?;
        if let Some(s) = publish {
            self.boards
                .try_insert::<P>(mine, s)
                .map_err(|_| TableError::NoMemory)?;
        }
        let (mut next, mut passed) = (u64::MAX, false);
        for (k, l) in self.locals.map.iter() {
            if l.as_ref().is_none_or(|l| l.global != global) || *k == mine {
                continue;
            }
            let Some(s) = self.boards.get(k) else {
                return Ok(BoardAnswer::Unknown);
            };
            let at = |c| rvgpu_hw::pdd::board_next_above(&s.waits, s.more, c);
            next = next.min(at(to).unwrap_or(u64::MAX));
            passed |= at(from).is_some_and(|w| w <= to);
        }
        Ok(BoardAnswer::Lowest { next, passed })
    }

    /// CloseNativeFence: releases a local handle; the global object lives on (NF-13).
    pub fn close(&mut self, local: usize) -> Result<Local, TableError> {
        let l = self.locals.remove(local).ok_or(TableError::Unknown)?;
        self.boards.remove(&local);
        if l.later {
            self.later_total = self.later_total.saturating_sub(1);
            let last = self.later.get_mut(&l.process).is_some_and(|n| {
                *n = n.saturating_sub(1);
                *n == 0
            });
            if last {
                self.later.remove(&l.process);
            }
        }
        if let Some(f) = self.globals.get_mut(l.global) {
            f.opens = f.opens.saturating_sub(1);
        }
        Ok(l)
    }

    /// DestroyNativeFence: only after every local handle was closed.
    pub fn destroy(&mut self, h: usize) -> Result<Fence, TableError> {
        let f = self.globals.get(h).ok_or(TableError::Unknown)?;
        if f.opens != 0 {
            return Err(TableError::StillOpen);
        }
        self.globals.remove(h).ok_or(TableError::Unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence(tag: u64) -> Fence {
        Fence {
            tag,
            current_gpu: GpuVa::new(0x1000),
            monitored_gpu: GpuVa::new(0x2000),
            words: None,
            guarded: None,
            fence_type: 0,
            opens: 0,
            opened: false,
        }
    }

    /// A share that refuses nothing short of [`MAX_LATER_OPENS`].
    const ANY: Share = Share {
        reserve: 0,
        first: 0,
    };

    /// NF-14: the report tag answers only the device that holds an open at that CurrentValue
    /// VA, and only while it is open; another device's VA, or a VA of another fence, names
    /// nothing.
    #[test]
    fn nf_14_a_tag_answers_only_the_device_holding_the_open_at_the_va() {
        let mut t = FenceTable::default();
        t.create::<crate::kmem::Host>(0x100, fence(7)).unwrap();
        t.create::<crate::kmem::Host>(0x200, fence(9)).unwrap();
        t.open::<crate::kmem::Host>(0x100, 0xA1, 0xD1, 1, 0x5000, &ANY)
            .unwrap();
        t.open::<crate::kmem::Host>(0x200, 0xB1, 0xD2, 2, 0x6000, &ANY)
            .unwrap();
        assert_eq!(t.tag_of_open(0xD1, 0x5000), Some(7));
        assert_eq!(t.tag_of_open(0xD2, 0x6000), Some(9));
        assert_eq!(t.tag_of_open(0xD2, 0x5000), None, "another device's VA");
        assert_eq!(t.tag_of_open(0xD1, 0x6000), None, "a fence it did not open");
        t.close(0xA1).unwrap();
        assert_eq!(t.tag_of_open(0xD1, 0x5000), None, "closed");
    }

    /// MF-04's wait board: an opener's escape writes only its own open's slot (the device the
    /// OS attributed it to, at its own VA); the answer covers the fence's other opens only once
    /// each published, clamps values at or below CurrentValue, and reads garbage as low waits
    /// at worst; another fence's slots are not part of it; a device without an open there is
    /// refused, whatever VA it names.
    #[test]
    fn mf_04_a_board_slot_is_written_only_by_its_own_opener() {
        let mut t = FenceTable::default();
        t.create::<crate::kmem::Host>(0x100, fence(7)).unwrap();
        t.create::<crate::kmem::Host>(0x200, fence(9)).unwrap();
        t.open::<crate::kmem::Host>(0x100, 0xA1, 0xD1, 1, 0x5000, &ANY)
            .unwrap();
        t.open::<crate::kmem::Host>(0x100, 0xB1, 0xD2, 2, 0x6000, &ANY)
            .unwrap();
        t.open::<crate::kmem::Host>(0x200, 0xC1, 0xD3, 3, 0x7000, &ANY)
            .unwrap();
        let slot = |w: &[u64], more| {
            let mut waits = [u64::MAX; rvgpu_hw::pdd::WAIT_BOARD_WAITS];
            waits[..w.len()].copy_from_slice(w);
            BoardSlot { waits, more }
        };
        let low = |next, passed| Ok(BoardAnswer::Lowest { next, passed });
        assert_eq!(
            t.board::<crate::kmem::Host>(0xD1, 0x5000, Some(slot(&[9], false)), 0, 0),
            Ok(BoardAnswer::Unknown),
            "B never published"
        );
        assert_eq!(
            t.board::<crate::kmem::Host>(0xD2, 0x6000, Some(slot(&[5], false)), 0, 0),
            low(9, false)
        );
        assert_eq!(
            t.board::<crate::kmem::Host>(0xD1, 0x5000, None, 0, 0),
            low(5, false)
        );
        assert_eq!(
            t.board::<crate::kmem::Host>(0xD1, 0x5000, None, 4, 5),
            low(u64::MAX, true)
        );
        // D2 naming A's VA, or a VA it does not hold, writes nothing and is refused.
        assert_eq!(
            t.board::<crate::kmem::Host>(0xD2, 0x5000, Some(slot(&[], false)), 0, 0),
            Err(TableError::Unknown)
        );
        assert_eq!(
            t.board::<crate::kmem::Host>(0xD3, 0x5000, Some(slot(&[], false)), 0, 0),
            Err(TableError::Unknown)
        );
        assert_eq!(
            t.board::<crate::kmem::Host>(0xD1, 0x5000, None, 0, 0),
            low(5, false)
        );
        // The other fence's opener is alone on its board.
        assert_eq!(
            t.board::<crate::kmem::Host>(0xD3, 0x7000, None, 0, 0),
            low(u64::MAX, false)
        );
        // Garbage in B's slot: zero, reached values, "more" over reached values.
        assert_eq!(
            t.board::<crate::kmem::Host>(0xD2, 0x6000, Some(slot(&[0, 3, u64::MAX], true)), 0, 0),
            low(9, false)
        );
        assert_eq!(
            t.board::<crate::kmem::Host>(0xD1, 0x5000, None, 3, 3),
            low(4, false)
        );
        t.close(0xB1).unwrap();
        assert_eq!(t.boards.len(), 1, "a closed open's slot goes with it");
        assert_eq!(
            t.board::<crate::kmem::Host>(0xD1, 0x5000, None, 3, 3),
            low(u64::MAX, false),
            "B left"
        );
    }

    /// The seed's shared-fence walk-through: A creates and opens, B opens, A closes (the
    /// global lives on), B closes, then the global is destroyed.
    #[test]
    fn nf_13_global_and_local_handle_lifetimes() {
        let mut t = FenceTable::default();
        t.create::<crate::kmem::Host>(0x100, fence(1)).unwrap();
        t.open::<crate::kmem::Host>(0x100, 0xA1, 0xD1, 0, 0, &ANY)
            .unwrap();
        t.open::<crate::kmem::Host>(0x100, 0xB1, 0xD2, 0, 0, &ANY)
            .unwrap();
        assert_eq!(t.get(0x100).map(|f| f.opens), Some(2));
        t.close(0xA1).unwrap();
        assert!(t.get(0x100).is_some(), "A's close leaves the global object");
        assert_eq!(
            t.destroy(0x100),
            Err(TableError::StillOpen),
            "B still has it open"
        );
        t.close(0xB1).unwrap();
        assert_eq!(t.destroy(0x100).map(|f| f.tag), Ok(1));
        assert!(t.is_empty());
    }

    /// NF-11: a fence's first open is its creator's and costs no share; every later open
    /// counts for its process, which is refused past its share with nothing changed while
    /// another process still opens; closing gives the share back.
    #[test]
    fn nf_11_later_opens_are_bounded_per_process_and_come_back_when_closed() {
        let share = Share {
            reserve: MAX_LATER_OPENS,
            first: 3,
        };
        let mut t = FenceTable::default();
        t.create::<crate::kmem::Host>(0x100, fence(1)).unwrap();
        t.open::<crate::kmem::Host>(0x100, 0xA0, 0xD1, 1, 0, &share)
            .unwrap();
        assert_eq!(t.later_of(1), 0, "the creator's open");
        for l in 0xB0..0xB3 {
            t.open::<crate::kmem::Host>(0x100, l, 0xD2, 2, 0, &share)
                .unwrap();
        }
        assert_eq!(t.later_of(2), 3);
        assert_eq!(
            t.open::<crate::kmem::Host>(0x100, 0xB3, 0xD2, 2, 0, &share),
            Err(TableError::AtShare)
        );
        assert_eq!(t.get(0x100).map(|f| f.opens), Some(4), "nothing changed");
        // Its own fence's first open is no later open; another process still opens.
        t.create::<crate::kmem::Host>(0x200, fence(2)).unwrap();
        t.open::<crate::kmem::Host>(0x200, 0xB4, 0xD2, 2, 0, &share)
            .unwrap();
        t.open::<crate::kmem::Host>(0x200, 0xC0, 0xD3, 3, 0, &share)
            .unwrap();
        assert_eq!((t.later_of(2), t.later_of(3)), (3, 1));
        t.close(0xB0).unwrap();
        t.open::<crate::kmem::Host>(0x100, 0xB5, 0xD2, 2, 0, &share)
            .unwrap();
        for l in [0xA0, 0xB1, 0xB2, 0xB4, 0xB5, 0xC0] {
            t.close(l).unwrap();
        }
        assert_eq!((t.later_of(2), t.later_of(3), t.later.len()), (0, 0, 0));
        assert_eq!(t.later_total, 0);
    }

    #[test]
    fn nf_13_out_of_order_calls_are_refused() {
        let mut t = FenceTable::default();
        assert_eq!(
            t.open::<crate::kmem::Host>(0x100, 0xA1, 0, 0, 0, &ANY),
            Err(TableError::Unknown),
            "open before create"
        );
        t.create::<crate::kmem::Host>(0x100, fence(1)).unwrap();
        assert_eq!(
            t.create::<crate::kmem::Host>(0x100, fence(2)),
            Err(TableError::Exists)
        );
        t.open::<crate::kmem::Host>(0x100, 0xA1, 0, 0, 0, &ANY)
            .unwrap();
        assert_eq!(
            t.open::<crate::kmem::Host>(0x100, 0xA1, 0, 0, 0, &ANY),
            Err(TableError::Exists),
            "local handle reused"
        );
        assert_eq!(t.close(0xFF), Err(TableError::Unknown));
        t.close(0xA1).unwrap();
        assert_eq!(t.close(0xA1), Err(TableError::Unknown), "double close");
        t.destroy(0x100).unwrap();
        assert_eq!(t.destroy(0x100), Err(TableError::Unknown), "double destroy");
    }

    /// Bounded work at DISPATCH_LEVEL: destroying every fence oldest first (the order that
    /// makes the handle table compact its holes) moves a bounded number of entries per
    /// destroy, the same at 10^4 and 10^5 fences (exact counts of entries moved).
    #[test]
    fn destroying_fences_oldest_first_costs_the_same_per_destroy_at_any_table_size() {
        crate::kmem::assert_moves_per_item(
            "entries moved per destroy",
            2.0,
            [10_000, 100_000],
            |n| {
                let mut t = FenceTable::default();
                for h in 1..=n {
                    t.create::<crate::kmem::Host>(h * 0x10, fence(h as u64))
                        .unwrap();
                }
                crate::kmem::take_moves();
                for h in 1..=n {
                    t.destroy(h * 0x10).unwrap();
                }
                assert!(t.is_empty());
            },
        );
    }

    /// Fences destroyed in any order (here every other one, then the rest from the
    /// front) leave the table exact, and its holes are compacted away (a removal no longer
    /// moves the rest of a sorted vector, yet the vector does not fill with holes).
    #[test]
    fn destroy_in_any_order_keeps_the_table_exact_and_compact() {
        let mut t = FenceTable::default();
        let n = 10_000usize;
        for h in 1..=n {
            t.create::<crate::kmem::Host>(h * 0x10, fence(h as u64))
                .unwrap();
        }
        for h in (1..=n).step_by(2) {
            assert_eq!(t.destroy(h * 0x10).map(|f| f.tag), Ok(h as u64));
            assert!(
                t.globals.map.len() <= 2 * t.len() + 33,
                "holes are compacted: {} entries for {} fences",
                t.globals.map.len(),
                t.len()
            );
        }
        for h in (2..=n).step_by(2) {
            assert_eq!(t.get(h * 0x10).map(|f| f.tag), Some(h as u64));
        }
        assert_eq!(
            t.destroy(0x10),
            Err(TableError::Unknown),
            "already destroyed"
        );
        // Re-create into a hole: the handle is usable again.
        t.create::<crate::kmem::Host>(0x10, fence(7)).unwrap();
        assert_eq!(t.get(0x10).map(|f| f.tag), Some(7));
        for h in (2..=n).step_by(2) {
            t.destroy(h * 0x10).unwrap();
        }
        t.destroy(0x10).unwrap();
        assert!(t.is_empty());
        assert_eq!(t.handles().count(), 0);
    }
}
