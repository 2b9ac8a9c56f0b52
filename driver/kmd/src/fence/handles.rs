//! OS fence handle → the fence's CurrentValue GPU address, per adapter, readable at any IRQL.
//!
//! `DxgkDdiUpdateMonitoredValues` runs at device IRQL and `DxgkDdiDestroyNativeFence`,
//! `DxgkDdiUpdateCurrentValuesFromCpu` get no adapter handle: the driver must map Dxgkrnl's
//! `hGlobalNativeFence` back to its adapter without a DISPATCH spin lock and without
//! allocating. This is a table of buckets of atomic entries:
//!
//! - A handle hashes to one bucket of [`BUCKET`] entries; lookups scan that bucket only, so the
//!   work at device IRQL is bounded, and there are no probe chains or tombstones to decay
//!   (an earlier open-addressed version filled with tombstones under churn).
//! - Writers (create, destroy: PASSIVE) are serialised by the caller and publish an entry by
//!   storing the value first and the key last (Release); removal stores an empty key.
//! - Readers load the key (Acquire), then the value, then the key again: if the key changed
//!   meanwhile the entry was reused and the read is retried, so a reader does not pair a handle
//!   with a value written for another key in between.
//! - The table grows: when an insert finds no room (more than two handles per
//!   bucket on average, or the handle's bucket full), the writer builds a table with twice the
//!   buckets outside any lock a reader holds ([`HandleMap::try_grow`], fallible), copies the
//!   live entries and publishes it with one pointer store ([`kmem::Retaining`]). A reader that loaded the old table
//!   finishes on it (it saw the map as it was before the publish, as if it had run earlier);
//!   old tables are therefore never freed while the map lives (they are at most as large as
//!   the current one together), so a reader never needs a lock or a reference count.

use alloc::boxed::Box;
#[cfg(test)]
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use rvgpu_hw::addr::GpuVa;

use crate::kmem::{self, NoMemory, Retaining};
use crate::platform::Platform;

const EMPTY: usize = 0;

/// Entries per bucket.
pub const BUCKET: usize = 8;

/// Handles per bucket on average before the table grows.
const LOAD: usize = 2;

/// Where a fence lives: the adapter's slot in the driver's adapter table (known from which
/// adapter's map matched), and the GPU address of the fence's CurrentValue (what a CPU
/// signal asks the CMP to rescan).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FenceLocation {
    pub adapter: u8,
    pub current_gpu: GpuVa,
}

struct Entry {
    key: AtomicUsize,
    value: AtomicU64,
    /// Device physical addresses of the fence's CurrentValue and MonitoredValue words, 0
    /// until learnt ([`HandleMap::set_words`]): the KMD stores through them with
    /// `FENCE_STORE` when the OS gives it no CPU address (24H2, `super` module doc).
    words: [AtomicU64; 2],
}

/// One generation of the table ([`Retaining`] keeps the ones it replaced alive).
struct Table {
    entries: Box<[Entry]>,
    buckets: usize,
}

impl Table {
    fn try_new<P: Platform>(buckets: usize) -> Result<Self, NoMemory> {
        let n = buckets.checked_mul(BUCKET).ok_or(NoMemory)?;
        let entries = kmem::try_boxed_slice::<P, _>(n, |_| Entry {
            key: AtomicUsize::new(EMPTY),
            value: AtomicU64::new(0),
            words: [AtomicU64::new(0), AtomicU64::new(0)],
        })?;
        Ok(Self { entries, buckets })
    }

    /// The entries of `handle`'s bucket. Handles are pointer-like (aligned), so mix first.
    fn bucket(&self, handle: usize) -> &[Entry] {
        let h = (handle as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let b = usize::try_from(h >> 32).unwrap_or(0) & self.buckets.wrapping_sub(1);
        let start = b.saturating_mul(BUCKET);
        self.entries
            .get(start..start.saturating_add(BUCKET))
            .unwrap_or(&[])
    }

    /// The free entry of `handle`'s bucket, if any.
    fn free_entry(&self, handle: usize) -> Option<&Entry> {
        self.bucket(handle)
            .iter()
            .find(|e| e.key.load(Ordering::Relaxed) == EMPTY)
    }

    fn capacity(&self) -> usize {
        self.buckets.saturating_mul(LOAD)
    }
}

/// The map.
pub struct HandleMap {
    /// The current table, replaced only by [`HandleMap::try_grow`]; a replaced one stays alive
    /// for the readers still on it until the map is dropped.
    table: Retaining<Table>,
    /// Most live handles (the adapter's fence limit).
    limit: usize,
    live: AtomicUsize,
}

impl core::fmt::Debug for HandleMap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HandleMap")
            .field("buckets", &self.current().buckets)
            .field("live", &self.live.load(Ordering::Relaxed))
            .finish()
    }
}

/// Why an insert failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// The handle is 0 (the empty marker) — not a handle Dxgkrnl hands out.
    BadHandle,
    /// The handle is already present.
    Duplicate,
    /// No room in the current table: [`HandleMap::try_grow`] first.
    Full,
    /// The map holds its limit.
    AtLimit,
}

/// Why the map could not grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrowError {
    /// The pool could not supply the larger table; the map is unchanged.
    NoMemory,
    /// The map holds its limit; it does not grow past it.
    AtLimit,
}

impl HandleMap {
    /// A map with room for `capacity` handles before it grows, up to `limit`, for host unit
    /// tests.
    #[cfg(test)]
    pub fn with_capacity(capacity: usize) -> Self {
        Self::try_new::<crate::kmem::Host>(capacity, capacity).unwrap()
    }

    /// A map with room for `initial` handles before it grows, holding at most `limit`.
    /// Allocates at PASSIVE (AddDevice), fallibly.
    pub fn try_new<P: Platform>(initial: usize, limit: usize) -> Result<Self, NoMemory> {
        let buckets = initial
            .div_ceil(LOAD)
            .max(1)
            .checked_next_power_of_two()
            .ok_or(NoMemory)?;
        let t = Table::try_new::<P>(buckets)?;
        Ok(Self {
            table: Retaining::try_new::<P>(t)?,
            limit,
            live: AtomicUsize::new(0),
        })
    }

    #[inline]
    fn current(&self) -> &Table {
        self.table.get()
    }

    /// Live entries.
    pub fn len(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries (live or empty) in the current table.
    pub fn entries(&self) -> usize {
        self.current().entries.len()
    }

    /// Whether an insert of `handle` would find room without growing.
    pub fn has_room(&self, handle: usize) -> bool {
        let t = self.current();
        self.len() < t.capacity() && t.free_entry(handle).is_some()
    }

    /// Inserts `handle` with its value (the CurrentValue GPU address). The caller serialises
    /// writers. Allocation-free; `Full` asks for [`HandleMap::try_grow`].
    pub fn insert(&self, handle: usize, value: u64) -> Result<(), MapError> {
        if handle == EMPTY {
            return Err(MapError::BadHandle);
        }
        if self.get(handle).is_some() {
            return Err(MapError::Duplicate);
        }
        if self.len() >= self.limit {
            return Err(MapError::AtLimit);
        }
        let t = self.current();
        if self.len() >= t.capacity() {
            return Err(MapError::Full);
        }
        let e = t.free_entry(handle).ok_or(MapError::Full)?;
        e.value.store(value, Ordering::Relaxed);
        for w in &e.words {
            w.store(0, Ordering::Relaxed);
        }
        // Publishes the value together with the key.
        e.key.store(handle, Ordering::Release);
        self.live.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Replaces the table with one of at least twice the buckets holding every live entry, so
    /// that `handle` finds room. Allocates (call it outside the interrupt lock, never from a
    /// reader); the caller serialises writers. On error nothing changed.
    pub fn try_grow<P: Platform>(&self, handle: usize) -> Result<(), GrowError> {
        if self.len() >= self.limit {
            return Err(GrowError::AtLimit);
        }
        let old = self.current();
        let mut buckets = old.buckets;
        // Doubling again is needed only if a bucket of the new table overflows while copying
        // (or `handle`'s is full): possible, not likely.
        let new = loop {
            buckets = buckets.checked_mul(2).ok_or(GrowError::NoMemory)?;
            let t = Table::try_new::<P>(buckets).map_err(|_| GrowError::NoMemory)?;
            if Self::copy(old, &t) && t.free_entry(handle).is_some() {
                break t;
            }
        };
        // The current table stays alive, behind the new one, for readers still on it; the
        // copied entries are visible to a reader that loads the new one.
        self.table
            .try_replace::<P>(new)
            .map_err(|_| GrowError::NoMemory)
    }

    /// Copies every live entry of `from` into the empty table `to`; `false` if one did not fit.
    fn copy(from: &Table, to: &Table) -> bool {
        for e in from.entries.iter() {
            let k = e.key.load(Ordering::Relaxed);
            if k == EMPTY {
                continue;
            }
            let Some(slot) = to.free_entry(k) else {
                return false;
            };
            slot.value
                .store(e.value.load(Ordering::Relaxed), Ordering::Relaxed);
            for (d, w) in slot.words.iter().zip(&e.words) {
                d.store(w.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            slot.key.store(k, Ordering::Relaxed);
        }
        true
    }

    /// Looks `handle` up and returns its value. Lock-free, allocation-free and bounded (one
    /// bucket): callable at any IRQL.
    pub fn get(&self, handle: usize) -> Option<u64> {
        self.read_entry(handle, |e| e.value.load(Ordering::Acquire))
    }

    /// Reads `handle`'s entry with `read`, lock-free and bounded (one bucket); `None` if the
    /// handle is not in the map.
    fn read_entry<T>(&self, handle: usize, read: impl Fn(&Entry) -> T) -> Option<T> {
        if handle == EMPTY {
            return None;
        }
        for e in self.current().bucket(handle) {
            loop {
                if e.key.load(Ordering::Acquire) != handle {
                    break;
                }
                let v = read(e);
                // Re-check: if the entry was removed and reused while we read, try again.
                if e.key.load(Ordering::Acquire) == handle {
                    return Some(v);
                }
            }
        }
        None
    }

    /// `handle`'s entry, for a writer (the caller serialises writers).
    fn entry(&self, handle: usize) -> Option<&Entry> {
        if handle == EMPTY {
            return None;
        }
        self.current()
            .bucket(handle)
            .iter()
            .find(|e| e.key.load(Ordering::Relaxed) == handle)
    }

    /// Records the physical addresses of `handle`'s CurrentValue and MonitoredValue words
    /// (learnt once, at the fence's first open). The caller serialises writers; a reader sees
    /// either the zeros or both addresses. `false` if the handle is not in the map.
    pub fn set_words(&self, handle: usize, current: u64, monitored: u64) -> bool {
        let Some(e) = self.entry(handle) else {
            return false;
        };
        // MonitoredValue first, CurrentValue (the one readers test) last, Release: a reader
        // that sees the CurrentValue word sees the other too.
        e.words[1].store(monitored, Ordering::Relaxed);
        e.words[0].store(current, Ordering::Release);
        true
    }

    /// `handle`'s (CurrentValue, MonitoredValue) physical words, if known. Lock-free and
    /// bounded like [`HandleMap::get`].
    pub fn words(&self, handle: usize) -> Option<(u64, u64)> {
        let read = |e: &Entry| {
            let cv = e.words[0].load(Ordering::Acquire);
            (cv, e.words[1].load(Ordering::Relaxed))
        };
        self.read_entry(handle, read).filter(|&(cv, _)| cv != 0)
    }

    /// Removes `handle`; returns its value. The caller serialises writers.
    pub fn remove(&self, handle: usize) -> Option<u64> {
        let e = self.entry(handle)?;
        let v = e.value.load(Ordering::Relaxed);
        e.key.store(EMPTY, Ordering::Release);
        self.live.fetch_sub(1, Ordering::Relaxed);
        Some(v)
    }

    /// Empty entries (for tests).
    #[cfg(test)]
    pub fn empty_entries(&self) -> usize {
        self.current()
            .entries
            .iter()
            .filter(|e| e.key.load(Ordering::Relaxed) == EMPTY)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tag that needs all 64 bits (generation above 2^24), as a long-lived slot has.
    fn loc(a: u8, t: u64) -> u64 {
        (u64::from(a) << 48) | (1 << 60) | t
    }

    #[test]
    fn nf_07_physical_words_are_learnt_once_survive_growth_and_go_with_the_handle() {
        let m = HandleMap::try_new::<crate::kmem::Host>(2, 64).unwrap();
        m.insert(0x1000, 0).unwrap();
        assert_eq!(m.words(0x1000), None, "unknown until learnt");
        assert!(m.set_words(0x1000, 0x8000, 0x9008));
        assert_eq!(m.words(0x1000), Some((0x8000, 0x9008)));
        assert!(!m.set_words(0x2000, 1, 2), "not in the map");
        for h in 1..40usize {
            let h = 0x10_0000 + h * 0x40;
            if !m.has_room(h) {
                m.try_grow::<crate::kmem::Host>(h).unwrap();
            }
            m.insert(h, 0).unwrap();
        }
        assert_eq!(m.words(0x1000), Some((0x8000, 0x9008)), "copied by growth");
        m.remove(0x1000).unwrap();
        assert_eq!(m.words(0x1000), None);
        m.insert(0x1000, 0).unwrap();
        assert_eq!(m.words(0x1000), None, "a reused entry starts unknown");
    }

    #[test]
    fn insert_get_remove() {
        let m = HandleMap::with_capacity(4);
        m.insert(0x1000, loc(1, (7 << 32) | 3)).unwrap();
        m.insert(0x2000, loc(0, 5)).unwrap();
        assert_eq!(m.get(0x1000), Some(loc(1, (7 << 32) | 3)));
        assert_eq!(m.insert(0x1000, loc(0, 0)), Err(MapError::Duplicate));
        assert_eq!(m.remove(0x1000), Some(loc(1, (7 << 32) | 3)));
        assert_eq!(m.get(0x1000), None);
        assert_eq!(m.get(0x2000), Some(loc(0, 5)), "tombstone keeps the chain");
        assert_eq!(m.remove(0x1000), None, "double remove");
        assert_eq!(m.insert(0, loc(0, 0)), Err(MapError::BadHandle));
        assert_eq!(m.get(usize::MAX), None);
        m.insert(usize::MAX, 1).unwrap();
        assert_eq!(
            m.get(usize::MAX),
            Some(1),
            "every non-zero handle value is usable"
        );
    }

    #[test]
    fn holds_its_capacity_and_reuses_entries() {
        let m = HandleMap::with_capacity(8);
        let handles: Vec<usize> = (1..=8).map(|i| i * 0x40).collect();
        for (i, h) in handles.iter().enumerate() {
            m.insert(*h, loc(0, i as u64)).unwrap();
        }
        assert_eq!(m.insert(0x9999_0000, loc(0, 0)), Err(MapError::AtLimit));
        for h in &handles[..4] {
            m.remove(*h).unwrap();
        }
        for (i, h) in handles[4..].iter().enumerate() {
            assert_eq!(m.get(*h), Some(loc(0, (i + 4) as u64)));
        }
        for i in 0..4 {
            m.insert(0x7000_0000 + i * 0x40, loc(2, i as u64)).unwrap();
        }
        assert_eq!(m.len(), 8);
        assert_eq!(m.get(0x7000_00c0), Some(loc(2, 3)));
    }

    #[test]
    fn values_keep_all_64_bits() {
        let m = HandleMap::with_capacity(4);
        let tag = (1u64 << 63) | (0xFFFF_FF01 << 32) | 8; // any 64-bit value
        m.insert(0x40, tag).unwrap();
        assert_eq!(m.get(0x40), Some(tag));
        assert_eq!(m.remove(0x40), Some(tag));
    }

    /// Churn must not eat the empty slots that end probe chains (or every miss, at device
    /// IRQL, scans the whole table).
    #[test]
    fn churn_keeps_empty_slots_so_misses_stay_short() {
        let m = HandleMap::with_capacity(64);
        for h in 1..=32usize {
            m.insert(h * 0x1000, h as u64).unwrap();
        }
        for round in 0..20_000usize {
            let h = 0x100_0000 + round * 0x40;
            m.insert(h, 1).unwrap();
            m.remove(h).unwrap();
        }
        let total = m.empty_entries() + m.len();
        assert_eq!(m.len(), 32);
        assert_eq!(
            m.empty_entries(),
            total - 32,
            "every removed entry is empty again: nothing decays under churn"
        );
        for h in 1..=32usize {
            assert_eq!(
                m.get(h * 0x1000),
                Some(h as u64),
                "live entries survive reclamation"
            );
        }
    }

    #[test]
    fn concurrent_readers_never_see_a_foreign_value() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        // One writer churns a handle in and out of the same slots with different values;
        // readers of a stable handle must always see its own value.
        let m = Arc::new(HandleMap::with_capacity(2));
        m.insert(0x40, loc(3, 33)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (m, stop) = (m.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        assert_eq!(m.get(0x40), Some(loc(3, 33)));
                        if let Some(t) = m.get(0x80) {
                            assert_eq!(
                                t >> 48 & 0xFF,
                                1,
                                "0x80 only ever maps to adapter 1's tags"
                            );
                        }
                    }
                })
            })
            .collect();
        for i in 0..20_000u64 {
            m.insert(0x80, loc(1, i)).unwrap();
            m.remove(0x80).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
    }

    /// Inserts with growth, as create does.
    fn insert_growing(m: &HandleMap, h: usize, v: u64) {
        if !m.has_room(h) {
            m.try_grow::<crate::kmem::Host>(h).unwrap();
        }
        m.insert(h, v).unwrap();
    }

    /// The map grows past its first table; every handle stays readable, including
    /// through a reference to the table taken before the growth.
    #[test]
    fn handle_map_grows_and_keeps_every_entry() {
        let m = HandleMap::try_new::<crate::kmem::Host>(4, 100_000).unwrap();
        let first = m.entries();
        let old = m.current();
        insert_growing(&m, 0x40, loc(0, 1));
        for i in 2..=100_000usize {
            insert_growing(&m, 0x7_0000_0000 + i * 0x10, loc(0, i as u64));
        }
        assert!(m.entries() > first, "grew");
        assert_eq!(m.len(), 100_000);
        for i in 2..=100_000usize {
            assert_eq!(m.get(0x7_0000_0000 + i * 0x10), Some(loc(0, i as u64)));
        }
        assert_eq!(
            old.bucket(0x40)
                .iter()
                .filter(|e| e.key.load(Ordering::Relaxed) == 0x40)
                .count(),
            1,
            "a reader still on the first table finds what it held"
        );
        assert_eq!(m.insert(0x1234_5670, 1), Err(MapError::AtLimit));
        assert_eq!(
            m.try_grow::<crate::kmem::Host>(0x1234_5670),
            Err(GrowError::AtLimit)
        );
        assert_eq!(m.remove(0x40), Some(loc(0, 1)));
        m.insert(0x1234_5670, 1).unwrap();
    }

    /// A growth the pool cannot supply fails with nothing changed.
    #[test]
    fn handle_map_growth_fails_cleanly_without_memory() {
        let m = HandleMap::try_new::<crate::kmem::Host>(2, 1000).unwrap();
        let mut h = 0x40;
        while m.has_room(h) {
            m.insert(h, h as u64).unwrap();
            h += 0x40;
        }
        let (len, entries) = (m.len(), m.entries());
        crate::kmem::tests::budget(1);
        assert_eq!(
            m.try_grow::<crate::kmem::Host>(h),
            Err(GrowError::NoMemory),
            "second allocation refused"
        );
        crate::kmem::tests::budget(u32::MAX);
        assert_eq!((m.len(), m.entries()), (len, entries));
        assert_eq!(m.insert(h, 1), Err(MapError::Full));
        for k in (0x40..h).step_by(0x40) {
            assert_eq!(m.get(k), Some(k as u64));
        }
        m.try_grow::<crate::kmem::Host>(h).unwrap();
        m.insert(h, 1).unwrap();
    }
}
