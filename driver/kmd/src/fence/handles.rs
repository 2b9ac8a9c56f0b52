//! OS fence handle → the fence's CurrentValue GPU address, per adapter, readable at any IRQL.
//!
//! `DxgkDdiUpdateMonitoredValues` runs at device IRQL and `DxgkDdiDestroyNativeFence`,
//! `DxgkDdiUpdateCurrentValuesFromCpu` get no adapter handle: the driver must map Dxgkrnl's
//! `hGlobalNativeFence` back to its adapter without a DISPATCH spin lock and without
//! allocating. This is a fixed table of buckets of atomic entries:
//!
//! - A handle hashes to one bucket of [`BUCKET`] entries; lookups scan that bucket only, so the
//!   work at device IRQL is bounded, and there are no probe chains or tombstones to decay
//!   (an earlier open-addressed version filled with tombstones under churn).
//! - Writers (create, destroy: PASSIVE) are serialised by the caller and publish an entry by
//!   storing the value first and the key last (Release); removal stores an empty key.
//! - Readers load the key (Acquire), then the value, then the key again: if the key changed
//!   meanwhile the entry was reused and the read is retried, so a reader does not pair a handle
//!   with a value written for another key in between.
//! - The table is sized so that a bucket overflows only with negligible probability (about two
//!   handles per bucket on average at full capacity); an overflowing insert fails cleanly.

use alloc::boxed::Box;
#[cfg(test)]
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use rvgpu_hw::addr::GpuVa;

use crate::kmem::{self, NoMemory};
use crate::platform::Platform;

const EMPTY: usize = 0;

/// Entries per bucket.
pub const BUCKET: usize = 16;

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
}

/// The table.
pub struct HandleMap {
    entries: Box<[Entry]>,
    buckets: usize,
    capacity: usize,
    live: AtomicUsize,
}

impl core::fmt::Debug for HandleMap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HandleMap")
            .field("buckets", &self.buckets)
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
    /// The table holds its capacity, or the handle's bucket is full.
    Full,
}

impl HandleMap {
    /// A table for `capacity` live handles, for host unit tests.
    #[cfg(test)]
    pub fn with_capacity(capacity: usize) -> Self {
        Self::try_with_capacity::<crate::kmem::Host>(capacity).unwrap()
    }

    /// A table for `capacity` live handles. Allocates once, at PASSIVE (AddDevice), fallibly.
    pub fn try_with_capacity<P: Platform>(capacity: usize) -> Result<Self, NoMemory> {
        // About two handles per bucket at full capacity.
        let buckets = capacity
            .div_ceil(2)
            .max(1)
            .checked_next_power_of_two()
            .unwrap_or(1 << 16);
        let n = buckets.saturating_mul(BUCKET);
        let entries = kmem::try_boxed_slice::<P, _>(n, |_| Entry {
            key: AtomicUsize::new(EMPTY),
            value: AtomicU64::new(0),
        })?;
        Ok(Self {
            entries,
            buckets,
            capacity,
            live: AtomicUsize::new(0),
        })
    }

    /// Live entries.
    pub fn len(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    /// Inserts `handle` with its value (the CurrentValue GPU address). The caller serialises
    /// writers.
    pub fn insert(&self, handle: usize, value: u64) -> Result<(), MapError> {
        if handle == EMPTY {
            return Err(MapError::BadHandle);
        }
        if self.get(handle).is_some() {
            return Err(MapError::Duplicate);
        }
        if self.len() >= self.capacity {
            return Err(MapError::Full);
        }
        let free = self
            .bucket(handle)
            .iter()
            .find(|e| e.key.load(Ordering::Relaxed) == EMPTY);
        let e = free.ok_or(MapError::Full)?;
        e.value.store(value, Ordering::Relaxed);
        // Publishes the value together with the key.
        e.key.store(handle, Ordering::Release);
        self.live.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Looks `handle` up and returns its value. Lock-free, allocation-free and bounded (one
    /// bucket): callable at any IRQL.
    pub fn get(&self, handle: usize) -> Option<u64> {
        if handle == EMPTY {
            return None;
        }
        for e in self.bucket(handle) {
            loop {
                if e.key.load(Ordering::Acquire) != handle {
                    break;
                }
                let v = e.value.load(Ordering::Acquire);
                // Re-check: if the entry was removed and reused while we read, try again.
                if e.key.load(Ordering::Acquire) == handle {
                    return Some(v);
                }
            }
        }
        None
    }

    /// Removes `handle`; returns its value. The caller serialises writers.
    pub fn remove(&self, handle: usize) -> Option<u64> {
        if handle == EMPTY {
            return None;
        }
        let e = self
            .bucket(handle)
            .iter()
            .find(|e| e.key.load(Ordering::Relaxed) == handle)?;
        let v = e.value.load(Ordering::Relaxed);
        e.key.store(EMPTY, Ordering::Release);
        self.live.fetch_sub(1, Ordering::Relaxed);
        Some(v)
    }

    /// Empty entries (for tests).
    #[cfg(test)]
    pub fn empty_entries(&self) -> usize {
        self.entries
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
        assert_eq!(m.insert(0x9999_0000, loc(0, 0)), Err(MapError::Full));
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
}
