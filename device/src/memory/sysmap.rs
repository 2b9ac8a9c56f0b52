//! The system RAM's bus map: which backing words sit at which bus address, an index that finds
//! an allocation's words with one or two hash probes, and the next-fit search that places a new
//! allocation with a free guard page on either side.

use std::collections::{BTreeMap, HashMap};

use rvgpu_hw::PAGE_SIZE;

use super::Words;

pub(super) struct SysMap {
    /// Start bus address -> backing words. Regions never overlap.
    pub(super) regions: BTreeMap<u64, Words>,
    /// Page number -> (start, words) of the allocation holding that page, for every page of
    /// every allocation not in one of `chunks` (regions are whole pages). A device or CPU word access finds its
    /// region with one hash probe instead of a B-tree range search (the search was
    /// most of the cost of an emulated memory access). RAM put on the bus with
    /// [`Memory::map_system`] (a VM's, possibly gigabytes) is not indexed: its accesses
    /// fall back to the search.
    pub(super) pages: HashMap<u64, (u64, Words), crate::hash::MulHash>,
    /// The same for large allocations, by [`CHUNK`]: chunk number -> (start, words) for every
    /// chunk an allocation covers whole; only its pages outside such chunks are in `pages`.
    /// Putting a 1 MiB allocation on the bus (or taking it off) then costs 16 index updates
    /// (chunk-aligned) to 31 (not) instead of 256, and a word access in it one or two probes.
    pub(super) chunks: HashMap<u64, (u64, Words), crate::hash::MulHash>,
    /// Where the allocator looks first: just past the last allocation ([`next_fit`]; freed
    /// ranges are reused only once the allocator has gone round its window).
    pub(super) next: u64,
}

impl SysMap {
    /// Puts an allocation (whole pages at a page-aligned `base`) on the bus, indexed.
    pub(super) fn insert_allocation(&mut self, base: u64, words: Words) {
        let end = base.saturating_add(words.bytes());
        let (lo, hi) = whole_chunks(base, end);
        for c in lo..hi {
            self.chunks.insert(c, (base, words.clone()));
        }
        for p in edge_pages(base, end, lo, hi) {
            self.pages.insert(p, (base, words.clone()));
        }
        self.regions.insert(base, words);
    }

    /// Takes the allocation at `base` off the bus, and out of the index.
    pub(super) fn remove_allocation(&mut self, base: u64) -> Option<Words> {
        let words = self.regions.remove(&base)?;
        let end = base.saturating_add(words.bytes());
        let (lo, hi) = whole_chunks(base, end);
        for c in lo..hi {
            self.chunks.remove(&c);
        }
        for p in edge_pages(base, end, lo, hi) {
            self.pages.remove(&p);
        }
        Some(words)
    }

    /// The region that may hold `addr`: its start and words (the caller checks `addr` is
    /// inside it). An allocation's page is found in the index (its page, else its chunk);
    /// anything else (mapped RAM, or nothing) by the search for the last region starting at
    /// or below `addr`.
    pub(super) fn region_of(&self, addr: u64) -> Option<(u64, &Words)> {
        if let Some((base, words)) = self.pages.get(&(addr / PAGE_SIZE)) {
            return Some((*base, words));
        }
        // Skipped while no large allocation exists (a VM's RAM, searched below, is common).
        if !self.chunks.is_empty() {
            if let Some((base, words)) = self.chunks.get(&(addr / CHUNK)) {
                return Some((*base, words));
            }
        }
        let (&base, words) = self.regions.range(..=addr).next_back()?;
        Some((base, words))
    }
}

/// The granule of [`SysMap::chunks`] (16 pages).
pub(super) const CHUNK: u64 = 16 * PAGE_SIZE;

/// The chunks `[lo, hi)` that `[base, end)` covers whole (empty if none).
pub(super) fn whole_chunks(base: u64, end: u64) -> (u64, u64) {
    let lo = base.div_ceil(CHUNK);
    let hi = (end / CHUNK).max(lo);
    (lo, hi)
}

/// The pages of `[base, end)` outside the whole chunks `[lo, hi)`.
pub(super) fn edge_pages(base: u64, end: u64, lo: u64, hi: u64) -> impl Iterator<Item = u64> {
    let (first, last) = (base / PAGE_SIZE, end / PAGE_SIZE);
    let (inner_first, inner_last) = if lo < hi {
        (lo * (CHUNK / PAGE_SIZE), hi * (CHUNK / PAGE_SIZE))
    } else {
        (last, last)
    };
    (first..inner_first.min(last)).chain(inner_last.max(first)..last)
}

/// The end of the last region of `regions` that overlaps `[start, end)`, if any.
pub(super) fn overlap_end(regions: &BTreeMap<u64, Words>, start: u64, end: u64) -> Option<u64> {
    // The last region starting before `end` is the only one that can reach into the range.
    let (&base, w) = regions.range(..end).next_back()?;
    let region_end = base.saturating_add(w.bytes());
    (region_end > start).then_some(region_end)
}

/// Whether `[start, end)` overlaps a region of `regions`.
pub(super) fn overlaps(regions: &BTreeMap<u64, Words>, start: u64, end: u64) -> bool {
    overlap_end(regions, start, end).is_some()
}

/// Where the next allocation of `len` bytes aligned to `align` goes in `[base, limit)`: the
/// first gap at or after `cursor` (where the last allocation ended) that fits with a free guard
/// page on either side, going round the window at most once. Freed ranges are thus reused, but
/// only once the allocator has gone round the whole window since they were freed: a stale bus
/// address keeps failing (unmapped) for as long as the window allows instead of aliasing a newer
/// allocation at once. Each step skips one region, so a search is at most one pass over them.
pub(super) fn next_fit(
    regions: &BTreeMap<u64, Words>,
    cursor: u64,
    (base, limit): (u64, u64),
    len: u64,
    align: u64,
) -> Option<u64> {
    let origin = cursor.clamp(base, limit);
    let mut cursor = origin;
    let mut wrapped = false;
    loop {
        let start = cursor.checked_next_multiple_of(align)?;
        if wrapped && start >= origin {
            return None;
        }
        let end = start.checked_add(len)?;
        if end > limit {
            if wrapped {
                return None;
            }
            wrapped = true;
            cursor = base;
            continue;
        }
        // The guard pages before and after must be free too.
        let lo = start.saturating_sub(PAGE_SIZE).max(base);
        let hi = end.saturating_add(PAGE_SIZE).min(limit);
        match overlap_end(regions, lo, hi) {
            Some(region_end) => cursor = region_end.checked_add(PAGE_SIZE)?,
            None => return Some(start),
        }
    }
}
