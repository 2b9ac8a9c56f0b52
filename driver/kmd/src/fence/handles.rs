//! OS fence handle → (adapter slot, report tag), readable at any IRQL.
//!
//! `DxgkDdiUpdateMonitoredValues` runs at device IRQL and `DxgkDdiDestroyNativeFence`,
//! `DxgkDdiUpdateCurrentValuesFromCpu` get no adapter handle: the driver must map Dxgkrnl's
//! `hGlobalNativeFence` back to its adapter without a DISPATCH spin lock and without
//! allocating. This is a fixed-capacity open-addressed table of atomics:
//!
//! - Writers (create, destroy: PASSIVE) are serialised by the caller (a driver mutex) and
//!   publish an entry by storing the value first and the key last (Release).
//! - Readers (any IRQL) load the key (Acquire), then the value, then the key again: if the key
//!   changed meanwhile the slot was reused and the read is retried, so a reader never pairs a
//!   handle with another fence's value.
//! - Removal leaves a tombstone so probe chains stay intact.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const EMPTY: usize = 0;
const TOMBSTONE: usize = usize::MAX;

/// Where a fence lives: the adapter's slot in the driver's adapter table, and the fence's
/// report tag on that adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FenceLocation {
    pub adapter: u8,
    pub tag: u64,
}

impl FenceLocation {
    /// Tags are `generation << 32 | slot`; 24 bits of generation are kept here, the adapter
    /// slot takes the top byte. (The registry's generations wrap well before 2^24 matters:
    /// a stale location is still rejected by the registry's own generation check.)
    fn pack(self) -> u64 {
        (u64::from(self.adapter) << 56) | (self.tag & 0x00FF_FFFF_FFFF_FFFF)
    }

    fn unpack(v: u64) -> Self {
        Self {
            adapter: u8::try_from(v >> 56).unwrap_or(u8::MAX),
            tag: v & 0x00FF_FFFF_FFFF_FFFF,
        }
    }
}

struct Slot {
    key: AtomicUsize,
    value: AtomicU64,
}

/// The table. Capacity is a power of two, fixed at creation.
pub struct HandleMap {
    slots: Box<[Slot]>,
    live: AtomicUsize,
}

impl core::fmt::Debug for HandleMap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HandleMap")
            .field("capacity", &self.slots.len())
            .field("live", &self.live.load(Ordering::Relaxed))
            .finish()
    }
}

/// Why an insert failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// The handle is 0 or all-ones (reserved as markers) — not a handle Dxgkrnl hands out.
    BadHandle,
    /// The handle is already present.
    Duplicate,
    /// No free slot within the probe limit (the table is kept at most half full).
    Full,
}

impl HandleMap {
    /// A table with room for `capacity` live handles (rounded up to a power of two, doubled
    /// to keep probe chains short). Allocates once, at PASSIVE.
    pub fn with_capacity(capacity: usize) -> Self {
        let n = capacity
            .max(1)
            .checked_next_power_of_two()
            .unwrap_or(1 << 20)
            .saturating_mul(2);
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(Slot {
                key: AtomicUsize::new(EMPTY),
                value: AtomicU64::new(0),
            });
        }
        Self {
            slots: v.into_boxed_slice(),
            live: AtomicUsize::new(0),
        }
    }

    /// Live entries.
    pub fn len(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    /// Probe sequence start: handles are pointer-like (aligned), so mix before masking.
    fn start(&self, handle: usize) -> usize {
        let h = (handle as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        usize::try_from(h >> 32).unwrap_or(0) & self.mask()
    }

    /// Inserts `handle`. The caller serialises writers.
    pub fn insert(&self, handle: usize, loc: FenceLocation) -> Result<(), MapError> {
        if handle == EMPTY || handle == TOMBSTONE {
            return Err(MapError::BadHandle);
        }
        if self.get(handle).is_some() {
            return Err(MapError::Duplicate);
        }
        if self.len().saturating_mul(2) >= self.slots.len() {
            return Err(MapError::Full);
        }
        let mut i = self.start(handle);
        for _ in 0..self.slots.len() {
            let Some(slot) = self.slots.get(i) else { break };
            let k = slot.key.load(Ordering::Relaxed);
            if k == EMPTY || k == TOMBSTONE {
                slot.value.store(loc.pack(), Ordering::Relaxed);
                // Publishes the value together with the key.
                slot.key.store(handle, Ordering::Release);
                self.live.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            i = i.wrapping_add(1) & self.mask();
        }
        Err(MapError::Full)
    }

    /// Looks `handle` up. Lock-free and allocation-free: callable at any IRQL.
    pub fn get(&self, handle: usize) -> Option<FenceLocation> {
        if handle == EMPTY || handle == TOMBSTONE {
            return None;
        }
        let mut i = self.start(handle);
        for _ in 0..self.slots.len() {
            let slot = self.slots.get(i)?;
            loop {
                let k = slot.key.load(Ordering::Acquire);
                if k == EMPTY {
                    return None;
                }
                if k != handle {
                    break;
                }
                let v = slot.value.load(Ordering::Acquire);
                // Re-check: if the slot was removed and reused while we read, try again.
                if slot.key.load(Ordering::Acquire) == handle {
                    return Some(FenceLocation::unpack(v));
                }
            }
            i = i.wrapping_add(1) & self.mask();
        }
        None
    }

    /// Removes `handle`; returns its location. The caller serialises writers.
    pub fn remove(&self, handle: usize) -> Option<FenceLocation> {
        if handle == EMPTY || handle == TOMBSTONE {
            return None;
        }
        let mut i = self.start(handle);
        for _ in 0..self.slots.len() {
            let slot = self.slots.get(i)?;
            let k = slot.key.load(Ordering::Relaxed);
            if k == EMPTY {
                return None;
            }
            if k == handle {
                let v = slot.value.load(Ordering::Relaxed);
                slot.key.store(TOMBSTONE, Ordering::Release);
                self.live.fetch_sub(1, Ordering::Relaxed);
                return Some(FenceLocation::unpack(v));
            }
            i = i.wrapping_add(1) & self.mask();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(a: u8, t: u64) -> FenceLocation {
        FenceLocation { adapter: a, tag: t }
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
    }

    #[test]
    fn holds_its_capacity_and_reuses_tombstones() {
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
                        if let Some(l) = m.get(0x80) {
                            assert_eq!(l.adapter, 1, "0x80 only ever maps to adapter 1");
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
