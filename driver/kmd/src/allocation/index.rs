//! Where allocations are mapped, by VA: the KMD's record of VidMm's leaves
//! ([`super::Mappings`], one per allocation) indexed by process and VA, so that following one
//! `UPDATEPAGETABLE` ([`record`], from `DxgkDdiBuildPagingBuffer`) finds the runs it overlaps
//! with binary searches instead of visiting every allocation.
//!
//! The paging path may not allocate: the index's room is made when an allocation is created or
//! opened ([`MapIndex::try_reserve_for`], [`super::MAX_MAPPINGS`] runs per allocation), and a
//! run for which there is no room is not recorded, as a run past an allocation's own bound is
//! not (a doorbell on it is refused; nothing else depends on the record).
//!
//! Concurrency: the index lives in the scheduler state beside the allocations and changes only
//! under the scheduler lock, together with the allocations' records, so no other thread sees
//! one without the other; it holds no atomics of its own (nothing for a `loom` model to check).

use rvgpu_hw::addr::GpuVa;

use crate::handle::Handle;
use crate::kmem::{NoMemory, SortedMap};
use crate::platform::Platform;

use super::{Allocation, MAX_MAPPINGS};

/// Every run of every allocation's [`super::Mappings`]: `(process, first VA)` → `(allocation,
/// end VA)`. Runs never overlap within a process ([`record`] forgets what a new run covers
/// before it adds it), so a first VA names one run.
#[derive(Debug, Default)]
pub struct MapIndex {
    runs: SortedMap<(Handle, u64), (Handle, u64)>,
}

impl MapIndex {
    /// Room for the runs of `allocations` allocations ([`MAX_MAPPINGS`] each).
    pub fn try_reserve_for<P: Platform>(&mut self, allocations: usize) -> Result<(), NoMemory> {
        let total = allocations.saturating_mul(MAX_MAPPINGS);
        self.runs
            .try_reserve_n::<P>(total.saturating_sub(self.runs.len()))
    }

    /// Runs indexed.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The first run of `process` that overlaps `[lo, hi)` (the run that starts last at or
    /// below `lo`, else the first starting inside): its key and allocation.
    fn first_overlap(&self, process: Handle, lo: u64, hi: u64) -> Option<((Handle, u64), Handle)> {
        let i = self.runs.lower_bound(&(process, lo));
        if let Some((k, (h, end))) = i.checked_sub(1).and_then(|j| self.runs.at(j)) {
            if k.0 == process && *end > lo {
                return Some((*k, *h));
            }
        }
        match self.runs.at(i) {
            Some((k, (h, _))) if k.0 == process && k.1 < hi => Some((*k, *h)),
            _ => None,
        }
    }

    /// Drops the entries of `al`'s runs.
    fn drop_runs(&mut self, al: &Allocation) {
        for (process, lo, _) in al.mapped.spans() {
            self.runs.remove(&(process, lo));
        }
    }

    /// Enters `al`'s (handle `h`) runs, into room made before. A run with no room left is
    /// forgotten by the allocation too, so that record and index stay one.
    fn enter_runs(&mut self, h: Handle, al: &mut Allocation) {
        loop {
            let lost = al.mapped.spans().find(|(process, lo, hi)| {
                self.runs
                    .insert_reserved((*process, *lo), (h, *hi))
                    .is_err()
            });
            let Some((process, lo, hi)) = lost else {
                return;
            };
            self.drop_runs(al);
            al.mapped.cut(process, lo, hi);
        }
    }

    /// Forgets allocation `h`'s runs (it is going away).
    pub fn forget(&mut self, allocations: &SortedMap<Handle, Allocation>, h: Handle) {
        if let Some(al) = allocations.get(&h) {
            self.drop_runs(al);
        }
    }
}

/// Follows one UPDATEPAGETABLE leaf operation of `process` ([`super::ddi::note_mapping`]):
/// `[first_va, va_hi)` now holds what VidMm asked for, so every run recorded there is cut, and
/// `target` (an allocation and the offset of the operation's first page in it, for a valid
/// mapping of one) records the pages it maps. Binary searches and one visit per allocation
/// whose runs the range overlaps; never allocates.
pub fn record(
    allocations: &mut SortedMap<Handle, Allocation>,
    index: &mut MapIndex,
    process: Handle,
    first_va: GpuVa,
    va_hi: GpuVa,
    target: Option<(Handle, u64)>,
) {
    let (first_va, va_hi) = (first_va.get(), va_hi.get());
    // Each pass takes every run of one allocation out of the range, so the loop ends.
    while let Some((key, h)) = index.first_overlap(process, first_va, va_hi) {
        let Some(al) = allocations.get_mut(&h) else {
            // An entry without its allocation (a bug): dropped, so that the loop ends.
            index.runs.remove(&key);
            continue;
        };
        index.drop_runs(al);
        al.mapped.cut(process, first_va, va_hi);
        index.enter_runs(h, al);
    }
    let Some((h, offset)) = target else { return };
    let (Some(base), Some(al)) = (first_va.checked_sub(offset), allocations.get_mut(&h)) else {
        return;
    };
    let lo = offset / rvgpu_hw::PAGE_SIZE;
    let entries = va_hi.saturating_sub(first_va) / rvgpu_hw::PAGE_SIZE;
    // Past the allocation's end is not the allocation (VidMm never asks for that).
    let hi = lo
        .saturating_add(entries)
        .min(al.size / rvgpu_hw::PAGE_SIZE);
    index.drop_runs(al);
    al.mapped.add(process, base, lo, hi);
    index.enter_runs(h, al);
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
