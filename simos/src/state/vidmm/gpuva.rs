//! GPU virtual address spaces, VidMm's side of the GpuMmu model (docs/memory.md).
//!
//! VidMm owns every process's page-table tree: it decides the VA of each mapping, allocates
//! page tables at the size and alignment the driver reported (`DXGKQAITYPE_PAGETABLELEVELDESC`)
//! in the segment the driver named, and describes every change as `DXGK_PTE` entries for the
//! driver to write through `DxgkDdiBuildPagingBuffer(UPDATEPAGETABLE)` ("GpuMmu model" on
//! learn.microsoft.com: VidMm manages the tables, the driver only translates and writes them).
//! Nothing here touches memory: [`AddressSpace`] returns the [`Update`]s; `vidmm::mmu` hands
//! them to the driver.
//!
//! VA choice: each process's allocations start at a base that differs per process (as address
//! space layout randomisation would make them differ on Windows), so a VA from one process is
//! very unlikely to be mapped in another; isolation does not depend on it (B's tables do not
//! map A's pages whatever the VA), but it makes a foreign VA fault rather than land in the
//! attacker's own memory, which is what the isolation tests observe.

use std::collections::BTreeMap;

use rvgpu_hw::addr::GpuVa;

/// One entry as VidMm describes it (the `DXGK_PTE` fields VidMm sets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OsPte {
    pub valid: bool,
    pub read_only: bool,
    pub no_execute: bool,
    pub cache_coherent: bool,
    /// 0: system memory (address = bus address); else the segment id.
    pub segment: u32,
    pub large: bool,
    /// Address >> 12 (page or lower-level table).
    pub page: u64,
}

impl OsPte {
    /// An entry that points at a lower-level table at `offset` of `segment`.
    pub fn table(segment: u32, offset: u64) -> Self {
        Self {
            valid: true,
            segment,
            page: offset >> 12,
            ..Self::default()
        }
    }
}

/// Page attributes of a mapping.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapAttrs {
    pub read_only: bool,
    pub no_execute: bool,
}

/// Where a page lives: `(segment, address)`; segment 0 = system memory at a bus address,
/// otherwise an offset into that segment.
pub type Phys = (u32, u64);

/// One UPDATEPAGETABLE operation: `entries` written at `start` of the table at `table` (an
/// offset in `segment`) of level `level` (0 = leaf).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    pub level: u8,
    pub segment: u32,
    pub table: u64,
    pub start: u32,
    pub entries: Vec<OsPte>,
    /// The table was just allocated: these entries are its first contents
    /// (`DXGK_UPDATEPAGETABLEFLAGS::InitialUpdate`).
    pub initial: bool,
    /// The VA the first entry covers (`FirstPteVirtualAddress`), at every level: for leaves
    /// and large pages (valid or being invalidated) the VA it maps; for a directory's entry
    /// (linked or unlinked) the first VA of the span below it; for a cleared table its
    /// entry 0's.
    pub va: u64,
    /// The entries map (or unmap) memory, 4 KiB leaves or 2 MiB large pages, rather than
    /// clear or link tables: VidMm names the allocation (`hAllocation`) only for these.
    pub maps: bool,
}

/// Page-table geometry from the driver's answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub levels: u8,
    /// Index bits per level (the same at every level for the devices VidMm accepts here).
    pub index_bits: u32,
    pub table_bytes: u64,
    pub segment: u32,
    pub page: u64,
}

impl Geometry {
    pub fn entries(&self) -> u64 {
        1u64 << self.index_bits
    }

    fn shift(&self, level: u8) -> u32 {
        12 + self.index_bits * u32::from(level)
    }

    /// The index of the entry that covers `va` in a table at `level`.
    pub fn index(&self, va: GpuVa, level: u8) -> u64 {
        self.idx(va.get(), level)
    }
    fn idx(&self, va: u64, level: u8) -> u64 {
        (va >> self.shift(level)) & (self.entries() - 1)
    }

    /// First VA of the table at `level` that covers `va`.
    fn table_base(&self, va: u64, level: u8) -> u64 {
        let span = self.shift(level) + self.index_bits;
        if span >= 64 {
            0
        } else {
            va & !((1u64 << span) - 1)
        }
    }

    pub fn va_bits(&self) -> u32 {
        self.shift(self.levels)
    }

    /// Bytes one level-1 entry covers: the size of a large page (`DXGK_PTE::LargePage`
    /// "the allocation size equals the VA range the lower level covers").
    pub fn large_page(&self) -> u64 {
        1u64 << self.shift(1)
    }
}

/// Page tables of one segment region handed out a table at a time.
#[derive(Debug)]
pub struct TableHeap {
    next: u64,
    limit: u64,
    free: Vec<u64>,
    step: u64,
}

impl TableHeap {
    /// Tables in `[start, limit)` of the page-table segment, `step` bytes each.
    pub fn new(start: u64, limit: u64, step: u64) -> Self {
        Self {
            next: start,
            limit,
            free: Vec::new(),
            step,
        }
    }

    pub fn alloc(&mut self) -> Option<u64> {
        if let Some(t) = self.free.pop() {
            return Some(t);
        }
        let t = self.next;
        let end = t.checked_add(self.step)?;
        if end > self.limit {
            return None;
        }
        self.next = end;
        Some(t)
    }

    pub fn free(&mut self, t: u64) {
        self.free.push(t);
    }

    /// Tables in use (leak checks).
    pub fn in_use(&self, start: u64) -> u64 {
        (self.next - start) / self.step - self.free.len() as u64
    }
}

/// A mapped page (what the oracle checks after the driver's paging buffers ran).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaf {
    pub phys: Phys,
    pub attrs: MapAttrs,
}

/// One leaf table's pages: how many are mapped, and a slot per entry.
type Slots = (usize, Box<[Option<Leaf>]>);

/// The mapped pages, kept per leaf table (first VA it covers → one slot per entry, and how
/// many are in use): each page's insert, removal or the oracle's look-up searches a map with a
/// record per table (512 pages), not per page, and a 1 MiB mapping adds one record, not 256.
#[derive(Debug)]
struct PageMap {
    geometry: Geometry,
    tables: BTreeMap<u64, Slots>,
    len: usize,
}

impl PageMap {
    fn new(geometry: Geometry) -> Self {
        Self {
            geometry,
            tables: BTreeMap::new(),
            len: 0,
        }
    }

    /// The leaf table's first VA and the page's slot in it.
    fn slot(&self, va: u64) -> (u64, usize) {
        let g = &self.geometry;
        (g.table_base(va, 0), g.idx(va, 0) as usize)
    }

    fn get(&self, va: u64) -> Option<Leaf> {
        let (base, i) = self.slot(va);
        self.tables.get(&base)?.1.get(i).copied().flatten()
    }

    /// Records `leaf` at the page `va`; false if that page is mapped already.
    fn insert(&mut self, va: u64, leaf: Leaf) -> bool {
        let (base, i) = self.slot(va);
        let entries = self.geometry.entries() as usize;
        let (used, slots) = self
            .tables
            .entry(base)
            .or_insert_with(|| (0, vec![None; entries].into_boxed_slice()));
        match slots.get_mut(i) {
            Some(s @ None) => {
                *s = Some(leaf);
                *used += 1;
                self.len += 1;
                true
            }
            _ => false,
        }
    }

    fn remove(&mut self, va: u64) -> Option<Leaf> {
        let (base, i) = self.slot(va);
        let (used, slots) = self.tables.get_mut(&base)?;
        let leaf = slots.get_mut(i)?.take()?;
        *used -= 1;
        self.len -= 1;
        if *used == 0 {
            self.tables.remove(&base);
        }
        Some(leaf)
    }

    /// Whether any page of `[va, end)` is mapped.
    fn any_in(&self, va: u64, end: u64) -> bool {
        let from = self.geometry.table_base(va, 0);
        self.tables.range(from..end).any(|(base, (_, slots))| {
            slots.iter().enumerate().any(|(i, l)| {
                l.is_some() && (va..end).contains(&(base + i as u64 * self.geometry.page))
            })
        })
    }

    fn vas(&self) -> Vec<u64> {
        let page = self.geometry.page;
        self.tables
            .iter()
            .flat_map(|(base, (_, slots))| {
                slots
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.is_some())
                    .map(move |(i, _)| base + i as u64 * page)
            })
            .collect()
    }
}

/// Why a request cannot be done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VaError {
    /// No room for a page table in the page-table segment.
    NoTables,
    /// The VA range is not free / not reserved / not mapped as the request says.
    BadRange,
}

/// One process's GPU VA space.
#[derive(Debug)]
pub struct AddressSpace {
    pub geometry: Geometry,
    /// Offset of the root table in `geometry.segment`.
    pub root: u64,
    /// Lower-level tables: (level, first VA they cover) → offset.
    tables: BTreeMap<(u8, u64), u64>,
    /// Reserved ranges: start → length.
    reserved: BTreeMap<u64, u64>,
    /// Mapped 4 KiB pages.
    pages: PageMap,
    /// Large pages: level-1 entries with `LargePage`, first VA → what its first 4 KiB maps
    /// (the rest follows contiguously).
    large: BTreeMap<u64, Leaf>,
    /// Next VA the allocator tries: past the last reservation it made, or back at the lowest
    /// one freed since ([`Self::free`]).
    next_va: u64,
    /// Lowest VA the allocator hands out.
    va_base: u64,
    /// Leaf tables an unmap emptied and unlinked, not yet back in the heap: the caller
    /// returns them once the driver has run the unlinking and flushed the TLB
    /// ([`Self::take_unlinked`]).
    unlinked: Vec<u64>,
}

impl AddressSpace {
    /// A space with a root from `heap`; also returns the root's initial update (all entries
    /// invalid: VidMm clears every new table before it is used).
    pub fn new(
        geometry: Geometry,
        heap: &mut TableHeap,
        va_base: GpuVa,
    ) -> Result<(Self, Update), VaError> {
        let va_base = va_base.get();
        let root = heap.alloc().ok_or(VaError::NoTables)?;
        let s = Self {
            geometry,
            root,
            tables: BTreeMap::new(),
            reserved: BTreeMap::new(),
            pages: PageMap::new(geometry),
            large: BTreeMap::new(),
            next_va: va_base,
            va_base,
            unlinked: Vec::new(),
        };
        let init = s.clear_table(geometry.levels - 1, root, 0);
        Ok((s, init))
    }

    fn clear_table(&self, level: u8, table: u64, va: u64) -> Update {
        Update {
            level,
            segment: self.geometry.segment,
            table,
            start: 0,
            entries: vec![OsPte::default(); self.geometry.entries() as usize],
            initial: true,
            va,
            maps: false,
        }
    }

    /// Reserves `len` bytes (whole pages) at a VA VidMm chooses.
    pub fn reserve(&mut self, len: u64) -> Result<u64, VaError> {
        let page = self.geometry.page;
        let len = len
            .checked_next_multiple_of(page)
            .ok_or(VaError::BadRange)?;
        // A range of a large page or more starts on a large-page boundary, so its aligned
        // runs can be mapped with level-1 entries ([`Self::map_large`]).
        let align = if len >= self.geometry.large_page() {
            self.geometry.large_page()
        } else {
            page
        };
        // A guard page between reservations, before and after: a run off either end faults.
        // Ranges a process reserved at an address of its choosing (`vidmm::va`) are stepped
        // over like VidMm's own.
        let mut va = self
            .next_va
            .max(self.va_base)
            .checked_next_multiple_of(align)
            .ok_or(VaError::BadRange)?;
        loop {
            let lo = va.saturating_sub(page).max(self.va_base);
            let hi = va
                .checked_add(len)
                .and_then(|e| e.checked_add(page))
                .ok_or(VaError::BadRange)?;
            match self.reserved_overlap(GpuVa::new(lo), hi - lo) {
                Some(end) => {
                    va = end
                        .checked_add(page)
                        .and_then(|v| v.checked_next_multiple_of(align))
                        .ok_or(VaError::BadRange)?;
                }
                None => break,
            }
        }
        let end = va
            .checked_add(len)
            .filter(|e| *e < (1u64 << self.geometry.va_bits()))
            .ok_or(VaError::BadRange)?;
        self.next_va = end.checked_add(page).ok_or(VaError::BadRange)?;
        self.reserved.insert(va, len);
        Ok(va)
    }

    /// Reserves `[va, va + len)` exactly (VidMm's own fixed mappings; fails if any of it is
    /// reserved already).
    pub fn reserve_at(&mut self, va: GpuVa, len: u64) -> Result<(), VaError> {
        let va = va.get();
        let page = self.geometry.page;
        let len = len
            .checked_next_multiple_of(page)
            .ok_or(VaError::BadRange)?;
        let end = va
            .checked_add(len)
            .filter(|e| *e <= (1u64 << self.geometry.va_bits()) && va.is_multiple_of(page))
            .ok_or(VaError::BadRange)?;
        let overlaps = self
            .reserved
            .range(..end)
            .next_back()
            .is_some_and(|(s, l)| s + l > va);
        if overlaps {
            return Err(VaError::BadRange);
        }
        self.reserved.insert(va, len);
        Ok(())
    }

    /// The end of a reservation overlapping `[va, va + len)`, if one does.
    pub fn reserved_overlap(&self, va: GpuVa, len: u64) -> Option<u64> {
        let va = va.get();
        let end = va.saturating_add(len);
        self.reserved
            .range(..end)
            .next_back()
            .map(|(s, l)| s.saturating_add(*l))
            .filter(|e| *e > va)
    }

    /// The highest `align`-aligned start of `len` free bytes (no reservation) inside
    /// `[lo, hi)`, searching down from `hi` (`vidmm::va`: VidMm's choice of a VA for
    /// `D3DKMTReserveGpuVirtualAddress` / `MapGpuVirtualAddress` with `BaseAddress` 0).
    pub fn free_range_top_down(&self, len: u64, align: u64, lo: u64, hi: u64) -> Option<u64> {
        if len == 0 || align == 0 || !align.is_power_of_two() {
            return None;
        }
        let hi = hi.min(1u64 << self.geometry.va_bits());
        let mut top = hi;
        loop {
            let start = top.checked_sub(len)? & !(align - 1);
            if start < lo {
                return None;
            }
            match self.reserved_overlap(GpuVa::new(start), len) {
                None => return Some(start),
                // Below the reservation that is in the way.
                Some(_) => {
                    let (s, _) = self
                        .reserved
                        .range(..start.saturating_add(len))
                        .next_back()?;
                    top = *s;
                }
            }
        }
    }

    /// What is mapped, as `(VA, pages)`: each 4 KiB page, and each large page whole
    /// (process teardown unmaps what is left).
    pub fn mapped(&self) -> Vec<(u64, u64)> {
        let per_large = self.geometry.large_page() / self.geometry.page;
        let mut out: Vec<(u64, u64)> = self.pages.vas().into_iter().map(|v| (v, 1)).collect();
        out.extend(self.large.keys().map(|v| (*v, per_large)));
        out
    }

    /// Whether any page of `[va, end)` is mapped, by a leaf or a large page.
    pub fn any_mapped(&self, va: GpuVa, end: GpuVa) -> bool {
        let (va, end) = (va.get(), end.get());
        let from = va.saturating_sub(self.geometry.large_page() - 1);
        self.pages.any_in(va, end) || self.large.range(from..end).next().is_some()
    }

    /// Frees a reservation (its pages must be unmapped first).
    pub fn free(&mut self, va: GpuVa) -> Result<(), VaError> {
        let va = va.get();
        let len = *self.reserved.get(&va).ok_or(VaError::BadRange)?;
        if self.any_mapped(GpuVa::new(va), GpuVa::new(va + len)) {
            return Err(VaError::BadRange);
        }
        self.reserved.remove(&va);
        // The next reservation looks from the lowest freed VA up, so a process that
        // creates and destroys allocations reuses its VAs, and with them the page tables that
        // map them, instead of walking up its space taking new tables from the adapter's
        // heap (shared by every process) until none is left. The VA was unmapped (and the
        // TLB flushed) before it could be freed, so reusing it is safe.
        if va >= self.va_base {
            self.next_va = self.next_va.min(va);
        }
        Ok(())
    }

    fn inside_reservation(&self, va: u64, len: u64) -> bool {
        self.reserved
            .range(..=va)
            .next_back()
            .is_some_and(|(s, l)| va + len <= s + l)
    }

    /// Maps `phys` (one entry per page) at `va` with `attrs`, with 4 KiB leaves only; returns
    /// the updates in the order they must run (new leaf tables' entries outside the run
    /// invalidated, the leaves, then each directory changed, bottom-up).
    pub fn map(
        &mut self,
        va: GpuVa,
        phys: &[Phys],
        attrs: MapAttrs,
        heap: &mut TableHeap,
    ) -> Result<Vec<Update>, VaError> {
        self.map_large(va, phys, attrs, heap, |_| false)
    }

    /// [`Self::map`], with a large page (a level-1 entry with `LargePage`) for every run of
    /// `phys` that fills a large page exactly: the VA on a large-page boundary, the pages
    /// physically contiguous in one segment from a first page `may_start` accepts (the caller
    /// applies the driver's caps: `LargePageSupported`, and the alignment
    /// `AllowNonAlignedLargePageAddress` leaves to the OS), and no leaf table linked there
    /// already.
    pub fn map_large(
        &mut self,
        va: GpuVa,
        phys: &[Phys],
        attrs: MapAttrs,
        heap: &mut TableHeap,
        may_start: impl Fn(Phys) -> bool,
    ) -> Result<Vec<Update>, VaError> {
        let va = va.get();
        let page = self.geometry.page;
        let len = page * phys.len() as u64;
        if !va.is_multiple_of(page) || !self.inside_reservation(va, len) {
            return Err(VaError::BadRange);
        }
        if self.any_mapped(GpuVa::new(va), GpuVa::new(va + len)) {
            return Err(VaError::BadRange);
        }
        let large = self.geometry.large_page();
        let per_large = (large / page) as usize;
        let mut updates = Vec::new();
        let mut leaves: Vec<(u64, u64, OsPte, u64)> = Vec::new();
        let mut bigs: Vec<(u64, u64, OsPte, u64)> = Vec::new();
        let mut created = Vec::new();
        // Consecutive pages share a leaf table: walk the levels once per table, not per page.
        let mut last: Option<(u64, u64)> = None;
        let mut i = 0usize;
        while i < phys.len() {
            let p = phys[i];
            let v = va + page * i as u64;
            if self.large_fits(v, &phys[i..], per_large, &may_start) {
                match self.ensure_path(v, 1, heap, &mut updates, &mut created) {
                    Ok(t) => {
                        let e = OsPte {
                            large: true,
                            ..pte(p, attrs)
                        };
                        bigs.push((t, self.geometry.idx(v, 1), e, v));
                        i += per_large;
                        continue;
                    }
                    Err(e) => {
                        self.forget_tables(created, heap);
                        return Err(e);
                    }
                }
            }
            let base = self.geometry.table_base(v, 0);
            let found = match last {
                Some((b, t)) if b == base => Ok(t),
                _ => self.ensure_path(v, 0, heap, &mut updates, &mut created),
            };
            let leaf_table = match found {
                Ok(t) => {
                    last = Some((base, t));
                    t
                }
                Err(e) => {
                    self.forget_tables(created, heap);
                    return Err(e);
                }
            };
            leaves.push((leaf_table, self.geometry.idx(v, 0), pte(p, attrs), v));
            i += 1;
        }
        let leaf_at = |v: u64| Leaf {
            phys: phys[((v - va) / page) as usize],
            attrs,
        };
        for &(_, _, _, v) in &leaves {
            self.pages.insert(v, leaf_at(v));
        }
        for &(_, _, _, v) in &bigs {
            self.large.insert(v, leaf_at(v));
        }
        let directories = self.directory_updates(&created, &bigs);
        let runs = self.coalesce(0, leaves);
        let mut out = Vec::with_capacity(updates.len() + runs.len());
        for u in updates {
            if u.level == 0 && u.initial {
                // A fresh leaf table: only the entries outside the map's run are invalidated.
                out.extend(self.outside_run(&u, &runs));
            } else {
                out.push(u);
            }
        }
        for mut r in runs {
            // The map's own entries are the fresh table's first contents too: 24H2 passes the
            // same InitialUpdate flags to the map as to the invalidations around it.
            r.initial = created.contains(&(0, self.geometry.table_base(r.va, 0)));
            out.push(r);
        }
        out.extend(directories);
        Ok(out)
    }

    /// The invalidations of fresh leaf table `clear` (a whole-table clear from
    /// [`Self::ensure_path`]) that 24H2 sends before the first map into it: entries
    /// `[0, s)` and `[e, entries)` around the map's run `[s, e)` in `runs`, as
    /// M:VIDMM_PAGE_TABLE::CommitVirtualAddressRange @0x1400F2030 invalidates (through
    /// UpdatePageTableInvalidate @0x1400AB920, with the table's InitialUpdate flag) a table
    /// not yet committed, then maps the run; a table the run fills gets none.
    fn outside_run(&self, clear: &Update, runs: &[Update]) -> Vec<Update> {
        let n = self.geometry.entries();
        let Some(run) = runs.iter().find(|r| r.table == clear.table) else {
            return vec![clear.clone()];
        };
        let s = u64::from(run.start);
        let e = s + run.entries.len() as u64;
        let part = |lo: u64, hi: u64| Update {
            start: lo as u32,
            entries: vec![OsPte::default(); (hi - lo) as usize],
            va: clear.va + lo * self.geometry.page,
            ..clear.clone()
        };
        let mut out = Vec::new();
        if s > 0 {
            out.push(part(0, s));
        }
        if e < n {
            out.push(part(e, n));
        }
        out
    }

    /// The directories' updates of one map, one per directory it changed, as
    /// M:VIDMM_PAGE_DIRECTORY::CommitVirtualAddressRange @0x1400F28C0 sends them after the
    /// tables below (its loop commits each child first, then it makes one
    /// M:VIDMM_GLOBAL::UpdatePageTable @0x1400ABE20 call from its shadow entries): a fresh
    /// directory (`created`) whole, entries `[0, NumPde)` with the links and large pages of
    /// this map and every other entry invalid, flagged InitialUpdate (its flags are 2 until
    /// its first update); a directory updated before, from its first changed entry to its
    /// last, the entries between as they stand, with no flag. Ordered bottom-up. An update
    /// carrying a large page of this map (`bigs`) names the allocation (`maps`).
    fn directory_updates(
        &self,
        created: &[(u8, u64)],
        bigs: &[(u64, u64, OsPte, u64)],
    ) -> Vec<Update> {
        let g = self.geometry;
        // (level, first VA) → the entries this map changed in that directory.
        let mut changed: BTreeMap<(u8, u64), (u64, u64, bool)> = BTreeMap::new();
        let mut touch = |level: u8, va: u64, large: bool| {
            let i = g.idx(va, level);
            let c = changed
                .entry((level, g.table_base(va, level)))
                .or_insert((i, i, false));
            c.0 = c.0.min(i);
            c.1 = c.1.max(i);
            c.2 |= large;
        };
        for &(level, base) in created {
            touch(level + 1, base, false);
        }
        for &(_, _, _, v) in bigs {
            touch(1, v, true);
        }
        let mut out = Vec::new();
        for ((level, base), (lo, hi, maps)) in changed {
            let table = if level == g.levels - 1 {
                self.root
            } else {
                match self.tables.get(&(level, base)) {
                    Some(t) => *t,
                    None => continue,
                }
            };
            let fresh = created.contains(&(level, base));
            let (lo, hi) = if fresh {
                (0, g.entries())
            } else {
                (lo, hi + 1)
            };
            out.push(Update {
                level,
                segment: g.segment,
                table,
                start: lo as u32,
                entries: (lo..hi)
                    .map(|i| self.directory_entry(level, base, i))
                    .collect(),
                initial: fresh,
                va: base + (lo << g.shift(level)),
                maps,
            });
        }
        out
    }

    /// Entry `index` of the directory at `level` whose first VA is `base`, as VidMm's books
    /// hold it (24H2's shadow): a link to the table below, a large page, or invalid.
    fn directory_entry(&self, level: u8, base: u64, index: u64) -> OsPte {
        let g = self.geometry;
        let va = base + (index << g.shift(level));
        if let Some(t) = self.tables.get(&(level - 1, va)) {
            return OsPte::table(g.segment, *t);
        }
        match self.large.get(&va) {
            Some(l) if level == 1 => OsPte {
                large: true,
                ..pte(l.phys, l.attrs)
            },
            _ => OsPte::default(),
        }
    }

    /// Whether `run` (pages from `v` on) starts a large page: see [`Self::map_large`].
    fn large_fits(
        &self,
        v: u64,
        run: &[Phys],
        per_large: usize,
        may_start: &impl Fn(Phys) -> bool,
    ) -> bool {
        let Some(first) = run.first().copied() else {
            return false;
        };
        v.is_multiple_of(self.geometry.large_page())
            && run.len() >= per_large
            && may_start(first)
            && !self.tables.contains_key(&(0, v))
            && run[..per_large]
                .iter()
                .enumerate()
                .all(|(k, p)| *p == (first.0, first.1 + k as u64 * self.geometry.page))
    }

    /// A request that fails runs nothing: the tables it would have made go back.
    fn forget_tables(&mut self, created: Vec<(u8, u64)>, heap: &mut TableHeap) {
        for key in created {
            if let Some(t) = self.tables.remove(&key) {
                heap.free(t);
            }
        }
    }

    /// Unmaps `pages` pages at `va` (invalid entries). A leaf table left with no valid entry
    /// is unlinked from its parent and set aside for the heap ([`Self::take_unlinked`]), as
    /// VidMm gives back the page tables of a range nothing maps any more: a long-lived space
    /// whose mappings move through the address space (the paging process's system pages)
    /// would otherwise keep a table for every 2 MiB it ever touched and run the page-table
    /// segment out. All or nothing: a page of the run that is not mapped fails the request
    /// before any record changes.
    pub fn unmap(&mut self, va: GpuVa, pages: u64) -> Result<Vec<Update>, VaError> {
        let va = va.get();
        let page = self.geometry.page;
        let large = self.geometry.large_page();
        let end = pages
            .checked_mul(page)
            .and_then(|l| va.checked_add(l))
            .ok_or(VaError::BadRange)?;
        let mut leaves = Vec::new();
        let mut bigs = Vec::new();
        let mut last: Option<(u64, u64)> = None;
        let mut v = va;
        while v < end {
            if let Some(first) = self.large_base(v) {
                // A large page goes whole: a run covering part of one is refused (VidMm
                // unmaps what it mapped, an allocation at a time).
                if first != v || end - v < large {
                    return Err(VaError::BadRange);
                }
                let key = (1, self.geometry.table_base(v, 1));
                let t = *self.tables.get(&key).ok_or(VaError::BadRange)?;
                bigs.push((t, self.geometry.idx(v, 1), OsPte::default(), v));
                v += large;
                continue;
            }
            if self.pages.get(v).is_none() {
                return Err(VaError::BadRange);
            }
            let base = self.geometry.table_base(v, 0);
            let t = match last {
                Some((b, t)) if b == base => t,
                _ => *self.tables.get(&(0, base)).ok_or(VaError::BadRange)?,
            };
            last = Some((base, t));
            leaves.push((t, self.geometry.idx(v, 0), OsPte::default(), v));
            v += page;
        }
        for &(_, _, _, v) in &leaves {
            self.pages.remove(v);
        }
        for &(_, _, _, v) in &bigs {
            self.large.remove(&v);
        }
        let mut out = self.coalesce(1, bigs);
        let before = self.unlinked.len();
        let emptied = self.unlink_empty_leaf_tables(&leaves);
        // A leaf table the unmap empties gets no invalidation of its own, only its parent's
        // entry does (M:VIDMM_PAGE_TABLE::UncommitVirtualAddressRange @0x1400CD6C0 returns
        // before UpdatePageTableInvalidate once no entry of the table stays valid).
        let gone = self.unlinked.get(before..).unwrap_or_default();
        leaves.retain(|(t, ..)| !gone.contains(t));
        out.extend(self.coalesce(0, leaves));
        out.extend(emptied);
        Ok(out)
    }

    /// Unlinks the leaf tables of `leaves` (just unmapped) that map nothing now: their
    /// parents' entries invalidated, the tables put aside in [`Self::unlinked`].
    fn unlink_empty_leaf_tables(&mut self, leaves: &[(u64, u64, OsPte, u64)]) -> Vec<Update> {
        let g = self.geometry;
        let mut out = Vec::new();
        let mut last = None;
        for &(t, _, _, v) in leaves {
            let base = g.table_base(v, 0);
            if last == Some(base) {
                continue;
            }
            last = Some(base);
            if self.pages.tables.contains_key(&base) || self.tables.get(&(0, base)) != Some(&t) {
                continue;
            }
            self.tables.remove(&(0, base));
            let parent = if g.levels > 2 {
                match self.tables.get(&(1, g.table_base(base, 1))) {
                    Some(p) => *p,
                    None => continue,
                }
            } else {
                self.root
            };
            out.push(self.unlink(1, parent, base));
            self.unlinked.push(t);
            // Its level-1 table goes too once it links no leaf table and holds no large page
            // (a 1 GiB range nothing maps); the levels above cover 512 GiB each and stay.
            if g.levels > 2 {
                let span = g.table_base(base, 1);
                let end = span.saturating_add(1u64 << g.shift(2));
                let used = self.tables.range((0, span)..(0, end)).next().is_some()
                    || self.large.range(span..end).next().is_some();
                if !used {
                    let grand = if g.levels > 3 {
                        match self.tables.get(&(2, g.table_base(base, 2))) {
                            Some(t) => *t,
                            None => continue,
                        }
                    } else {
                        self.root
                    };
                    if self.tables.remove(&(1, span)) == Some(parent) {
                        out.push(self.unlink(2, grand, span));
                        self.unlinked.push(parent);
                    }
                }
            }
        }
        out
    }

    /// The update that invalidates the entry of `table` (at `level`) linking the table below
    /// that covers `va`.
    fn unlink(&self, level: u8, table: u64, va: u64) -> Update {
        Update {
            level,
            segment: self.geometry.segment,
            table,
            start: self.geometry.idx(va, level) as u32,
            entries: vec![OsPte::default()],
            initial: false,
            va: self.geometry.table_base(va, level - 1),
            maps: false,
        }
    }

    /// The tables [`Self::unmap`] unlinked, for the heap once the driver ran the unlinking.
    pub fn take_unlinked(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.unlinked)
    }

    /// The first VA of the large page that maps `va`, if one does.
    fn large_base(&self, va: u64) -> Option<u64> {
        let base = va - va % self.geometry.large_page();
        self.large.contains_key(&base).then_some(base)
    }

    /// Merges consecutive entries of one table into one update.
    fn coalesce(&self, level: u8, leaves: Vec<(u64, u64, OsPte, u64)>) -> Vec<Update> {
        let mut out: Vec<Update> = Vec::new();
        for (table, index, e, va) in leaves {
            if let Some(last) = out.last_mut() {
                if last.table == table && u64::from(last.start) + last.entries.len() as u64 == index
                {
                    last.entries.push(e);
                    continue;
                }
            }
            out.push(Update {
                level,
                segment: self.geometry.segment,
                table,
                start: index as u32,
                entries: vec![e],
                initial: false,
                va,
                maps: true,
            });
        }
        out
    }

    /// The table at `bottom` (0: the leaf table; 1: the table that holds large pages) for
    /// `va`, creating the tables on the way (recorded in `created`; a fresh leaf table's
    /// whole clear goes to `updates`, a fresh directory is written whole by
    /// [`Self::directory_updates`]).
    fn ensure_path(
        &mut self,
        va: u64,
        bottom: u8,
        heap: &mut TableHeap,
        updates: &mut Vec<Update>,
        created: &mut Vec<(u8, u64)>,
    ) -> Result<u64, VaError> {
        let g = self.geometry;
        let mut parent = self.root;
        for level in (bottom..g.levels - 1).rev() {
            let key = (level, g.table_base(va, level));
            let t = match self.tables.get(&key) {
                Some(t) => *t,
                None => {
                    let t = heap.alloc().ok_or(VaError::NoTables)?;
                    if level == 0 {
                        // A fresh leaf table: what it holds outside the map's run is
                        // invalidated ([`Self::outside_run`]).
                        updates.push(self.clear_table(level, t, key.1));
                    }
                    self.tables.insert(key, t);
                    created.push(key);
                    t
                }
            };
            parent = t;
        }
        Ok(parent)
    }

    /// What VidMm believes the page at `va` maps to (the oracle), through a leaf or a large
    /// page.
    pub fn leaf(&self, va: GpuVa) -> Option<Leaf> {
        let va = va.get();
        let page = self.geometry.page;
        let va = va - va % page;
        if let Some(l) = self.pages.get(va) {
            return Some(l);
        }
        let base = self.large_base(va)?;
        let l = self.large.get(&base)?;
        Some(Leaf {
            phys: (l.phys.0, l.phys.1 + (va - base)),
            attrs: l.attrs,
        })
    }

    /// The large page that maps `va`: its first VA.
    pub fn large_at(&self, va: GpuVa) -> Option<u64> {
        let va = va.get();
        self.large_base(va)
    }

    /// Every table of the space including the root (given back to the heap on destroy).
    pub fn tables(&self) -> impl Iterator<Item = u64> + '_ {
        std::iter::once(self.root)
            .chain(self.tables.values().copied())
            .chain(self.unlinked.iter().copied())
    }

    /// Mapped 4 KiB pages, those of large pages included (leak checks).
    pub fn mapped_pages(&self) -> usize {
        let per_large = (self.geometry.large_page() / self.geometry.page) as usize;
        self.pages.len + self.large.len() * per_large
    }
}

/// The entry for a page at `p` with `attrs` (system pages are cache coherent).
fn pte(p: Phys, attrs: MapAttrs) -> OsPte {
    OsPte {
        valid: true,
        read_only: attrs.read_only,
        no_execute: attrs.no_execute,
        cache_coherent: p.0 == 0,
        segment: p.0,
        large: false,
        page: p.1 >> 12,
    }
}

#[cfg(test)]
#[path = "gpuva_tests.rs"]
mod tests;
