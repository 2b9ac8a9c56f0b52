//! What the host's accesses cost on the bus: the device counts every register read (a
//! non-posted transaction, a full round trip on PCIe), register write and doorbell write
//! (posted: the CPU does not wait for them). Counting here, at the device, holds for every
//! driver build (Linux or the PE image) and every way of reaching the device.

use std::sync::atomic::{AtomicU64, Ordering};

/// Host accesses since the device was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BusCounts {
    /// Register reads (BAR0): non-posted.
    pub reads: u64,
    /// Register writes (BAR0): posted.
    pub writes: u64,
    /// Doorbell writes (BAR2): posted.
    pub doorbell_writes: u64,
}

impl BusCounts {
    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            reads: self.reads.wrapping_sub(earlier.reads),
            writes: self.writes.wrapping_sub(earlier.writes),
            doorbell_writes: self.doorbell_writes.wrapping_sub(earlier.doorbell_writes),
        }
    }

    /// Adds `other` to `self`.
    pub fn add(&mut self, other: &Self) {
        self.reads = self.reads.wrapping_add(other.reads);
        self.writes = self.writes.wrapping_add(other.writes);
        self.doorbell_writes = self.doorbell_writes.wrapping_add(other.doorbell_writes);
    }
}

/// The counters (relaxed: each is a tally, read between operations).
#[derive(Debug, Default)]
pub(crate) struct Traffic {
    reads: AtomicU64,
    writes: AtomicU64,
    doorbell_writes: AtomicU64,
}

impl Traffic {
    pub(crate) fn read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn write(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn doorbell(&self) {
        self.doorbell_writes.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn counts(&self) -> BusCounts {
        BusCounts {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            doorbell_writes: self.doorbell_writes.load(Ordering::Relaxed),
        }
    }
}
