//! Unit tests of VidMm's GPU VA spaces (`super`).
use super::*;

fn geo() -> Geometry {
    Geometry {
        levels: 4,
        index_bits: 9,
        table_bytes: 4096,
        segment: 1,
        page: 4096,
    }
}

/// The first map: the fresh leaf table's entries past the run invalidated, the run, then
/// each fresh directory whole (its one link among invalid entries, InitialUpdate) bottom-up,
/// and the root's one changed entry with no flag (M:VIDMM_PAGE_DIRECTORY::
/// CommitVirtualAddressRange @0x1400F28C0).
#[test]
fn first_map_writes_leaves_then_each_directory_whole_bottom_up() {
    let mut heap = TableHeap::new(0, 1 << 20, 4096);
    let (mut s, init) = AddressSpace::new(geo(), &mut heap, GpuVa::new(1 << 40)).unwrap();
    assert!(init.initial && init.entries.len() == 512 && init.level == 3);
    let va = s.reserve(3 * 4096).unwrap();
    let u = s
        .map(
            GpuVa::new(va),
            &[(0, 0x1000_0000), (0, 0x1000_1000), (0, 0x2000_0000)],
            MapAttrs::default(),
            &mut heap,
        )
        .unwrap();
    let shape: Vec<_> = u
        .iter()
        .map(|x| (x.level, x.start, x.entries.len(), x.initial, x.maps))
        .collect();
    let (i1, i2, i3) = (
        geo().index(GpuVa::new(va), 1) as u32,
        geo().index(GpuVa::new(va), 2) as u32,
        geo().index(GpuVa::new(va), 3) as u32,
    );
    assert_eq!(
        shape,
        [
            (0, 3, 509, true, false),
            (0, 0, 3, true, true),
            (1, 0, 512, true, false),
            (2, 0, 512, true, false),
            (3, i3, 1, false, false),
        ]
    );
    let leaf = &u[1];
    assert_eq!(leaf.entries[2].page, 0x2000_0000 >> 12);
    // Each directory: its link to the table below, every other entry invalid.
    for (d, i) in [(&u[2], i1), (&u[3], i2)] {
        assert_eq!(d.va, geo().table_base(va, d.level));
        let valid: Vec<_> = (0..512u32)
            .filter(|&k| d.entries[k as usize].valid)
            .collect();
        assert_eq!(valid, [i]);
    }
    assert_eq!(u[2].entries[i1 as usize].page, u[1].table >> 12);
    assert_eq!(u[3].entries[i2 as usize].page, u[2].table >> 12);
    assert_eq!(u[4].entries[0].page, u[3].table >> 12);
    // A second mapping nearby reuses the tables.
    let va2 = s.reserve(4096).unwrap();
    let u2 = s
        .map(
            GpuVa::new(va2),
            &[(1, 0x3000)],
            MapAttrs::default(),
            &mut heap,
        )
        .unwrap();
    assert_eq!(u2.len(), 1);
    assert_eq!(s.leaf(GpuVa::new(va2)).unwrap().phys, (1, 0x3000));
    // A run reaching past the mapped pages changes nothing.
    assert_eq!(s.unmap(GpuVa::new(va), 4), Err(VaError::BadRange));
    assert_eq!(s.mapped_pages(), 4);
    let un = s.unmap(GpuVa::new(va), 3).unwrap();
    assert_eq!(un.len(), 1);
    assert!(un[0].entries.iter().all(|e| !e.valid));
    assert!(s.leaf(GpuVa::new(va)).is_none());
    assert_eq!(s.free(GpuVa::new(va)), Ok(()));
}

/// The last unmap from a leaf table unlinks it (its parent's entry invalidated, the table's
/// own entries not: 24H2 sends no invalidation for a table it empties) and hands it back, so a space whose mappings keep moving to new 2 MiB ranges
/// (the paging process's system pages at their bus addresses) holds the same few tables
/// after 10,000 of them as after one; a table with a page still mapped stays.
#[test]
fn an_emptied_leaf_table_is_unlinked_and_reused() {
    let mut heap = TableHeap::new(0, 64 * 4096, 4096);
    let (mut s, _) = AddressSpace::new(geo(), &mut heap, GpuVa::new(1 << 40)).unwrap();
    let a = MapAttrs::default();
    let keep = s.reserve(4096).unwrap();
    s.map(GpuVa::new(keep), &[(0, 0x1000)], a, &mut heap)
        .unwrap();
    let base = heap.in_use(0);
    for i in 0..10_000u64 {
        let va = (1u64 << 30) + i * (2 << 20);
        s.reserve_at(GpuVa::new(va), 4096).unwrap();
        s.map(GpuVa::new(va), &[(0, 0x2000)], a, &mut heap).unwrap();
        let un = s.unmap(GpuVa::new(va), 1).unwrap();
        assert!(
            un.iter().all(|u| u.level != 0),
            "no invalidation of the emptied leaf table itself: {un:?}"
        );
        let link = un.iter().find(|u| u.level == 1).unwrap();
        assert_eq!(link.entries.len(), 1);
        assert_eq!(link.va, va, "the VA the invalidated entry covers");
        assert!(un.iter().all(|u| !u.entries[0].valid && !u.maps));
        for t in s.take_unlinked() {
            heap.free(t);
        }
        s.free(GpuVa::new(va)).unwrap();
    }
    // Neither the leaf tables nor the level-1 tables of the 1 GiB ranges swept stay.
    assert!(heap.in_use(0) <= base + 1, "{} tables", heap.in_use(0));
    // A leaf table with a page left is not unlinked.
    let second = s.reserve(4096).unwrap();
    s.map(GpuVa::new(second), &[(0, 0x3000)], a, &mut heap)
        .unwrap();
    let un = s.unmap(GpuVa::new(second), 1).unwrap();
    assert!(un.iter().all(|u| u.level == 0), "{un:?}");
    assert!(s.take_unlinked().is_empty());
    assert_eq!(s.leaf(GpuVa::new(keep)).map(|l| l.phys), Some((0, 0x1000)));
}

#[test]
fn maps_only_inside_reservations_and_never_twice() {
    let mut heap = TableHeap::new(0, 1 << 20, 4096);
    let (mut s, _) = AddressSpace::new(geo(), &mut heap, GpuVa::new(1 << 40)).unwrap();
    let va = s.reserve(4096).unwrap();
    let a = MapAttrs::default();
    assert_eq!(
        s.map(GpuVa::new(va + 4096), &[(0, 0)], a, &mut heap),
        Err(VaError::BadRange)
    );
    assert!(s.map(GpuVa::new(va), &[(0, 0x1000)], a, &mut heap).is_ok());
    assert_eq!(
        s.map(GpuVa::new(va), &[(0, 0x2000)], a, &mut heap),
        Err(VaError::BadRange)
    );
    assert_eq!(s.free(GpuVa::new(va)), Err(VaError::BadRange));
}

/// A run across a leaf-table boundary: each page's entry goes to the table that covers it
/// (the per-table walk is not reused past the boundary), on map and on unmap.
#[test]
fn runs_across_a_leaf_table_boundary_use_both_tables() {
    let mut heap = TableHeap::new(0, 1 << 20, 4096);
    let span = 512 * 4096; // one leaf table's reach
    let (mut s, _) = AddressSpace::new(geo(), &mut heap, GpuVa::new(span - 2 * 4096)).unwrap();
    let va = s.reserve(4 * 4096).unwrap();
    assert_eq!(va, span - 2 * 4096);
    let phys: Vec<Phys> = (0..4).map(|i| (0, 0x1000_0000 + i * 4096)).collect();
    let u = s
        .map(GpuVa::new(va), &phys, MapAttrs::default(), &mut heap)
        .unwrap();
    let leaves: Vec<_> = u.iter().filter(|x| x.level == 0 && x.maps).collect();
    assert_eq!(leaves.len(), 2);
    assert_ne!(leaves[0].table, leaves[1].table);
    assert_eq!((leaves[0].start, leaves[0].entries.len()), (510, 2));
    assert_eq!((leaves[1].start, leaves[1].entries.len()), (0, 2));
    assert_eq!(leaves[1].entries[1].page, (0x1000_0000 + 3 * 4096) >> 12);
    assert_eq!(leaves[1].va, span);
    let un = s.unmap(GpuVa::new(va), 4).unwrap();
    // Both leaf tables map nothing now: each is unlinked from its parent, with no
    // invalidation of its own entries (as 24H2).
    assert!(
        un.iter().all(|x| x.level >= 1 && !x.entries[0].valid),
        "{un:?}"
    );
    let spans: Vec<_> = un.iter().filter(|x| x.level == 1).map(|x| x.va).collect();
    assert_eq!(spans, [0, span], "each entry names the span it covered");
}

/// The first map into a fresh leaf table invalidates only the entries outside its run
/// (M:VIDMM_PAGE_TABLE::CommitVirtualAddressRange @0x1400F2030): before it, after it, both,
/// or neither for a run that fills the table; each with the VA of its first entry, before the
/// table is linked; the run itself InitialUpdate too. A later map into the table sends neither.
#[test]
fn a_fresh_leaf_table_invalidates_only_outside_the_first_run() {
    let span = 512 * 4096;
    let leaf_updates = |base: u64, pages: u64| {
        let mut heap = TableHeap::new(0, 1 << 20, 4096);
        let (mut s, _) = AddressSpace::new(geo(), &mut heap, GpuVa::new(base)).unwrap();
        let va = s.reserve(pages * 4096).unwrap();
        let phys: Vec<Phys> = (0..pages).map(|i| (0, 0x1000_0000 + i * 4096)).collect();
        let u = s
            .map(GpuVa::new(va), &phys, MapAttrs::default(), &mut heap)
            .unwrap();
        let leaf: Vec<_> = u.into_iter().filter(|x| x.level == 0).collect();
        (s, heap, leaf)
    };
    let shape = |l: &[Update]| -> Vec<(u32, usize, bool, bool)> {
        l.iter()
            .map(|x| (x.start, x.entries.len(), x.maps, x.initial))
            .collect()
    };
    // Inside the table: both sides.
    let (mut s, mut heap, l) = leaf_updates(span + 10 * 4096, 3);
    assert_eq!(
        shape(&l),
        [
            (0, 10, false, true),
            (13, 499, false, true),
            (10, 3, true, true)
        ]
    );
    assert_eq!((l[0].va, l[1].va), (span, span + 13 * 4096));
    assert!(l[..2].iter().all(|x| x.entries.iter().all(|e| !e.valid)));
    // A second map into the (now committed) table: its leaves alone, not InitialUpdate.
    let va = s.reserve(4096).unwrap();
    let u = s
        .map(
            GpuVa::new(va),
            &[(0, 0x2000_0000)],
            MapAttrs::default(),
            &mut heap,
        )
        .unwrap();
    let at = ((va - span) / 4096) as u32;
    assert_eq!(shape(&u), [(at, 1, true, false)]);
    // At the table's end: only before it; filling it: none.
    let (_, _, l) = leaf_updates(2 * span - 2 * 4096, 2);
    assert_eq!(shape(&l), [(0, 510, false, true), (510, 2, true, true)]);
    let (_, _, l) = leaf_updates(span, 512);
    assert_eq!(shape(&l), [(0, 512, true, true)]);
}

/// The per-table page records: look-ups, a page mapped twice, range checks at the edges,
/// the VAs listed in order, and a table's record gone with its last page.
#[test]
fn page_map_keeps_pages_per_leaf_table() {
    let mut m = PageMap::new(geo());
    let span = 512 * 4096;
    let leaf = |n: u64| Leaf {
        phys: (0, n * 4096),
        attrs: MapAttrs::default(),
    };
    assert!(m.insert(span - 4096, leaf(1)));
    assert!(m.insert(span, leaf(2)));
    assert!(!m.insert(span, leaf(3)));
    assert_eq!(m.get(span), Some(leaf(2)));
    assert_eq!(m.get(span + 4096), None);
    assert_eq!((m.len, m.tables.len()), (2, 2));
    assert!(!m.any_in(0, span - 4096));
    assert!(m.any_in(span - 4096, span));
    assert!(m.any_in(span, span + 1));
    assert!(!m.any_in(span + 4096, 4 * span));
    assert_eq!(m.vas(), vec![span - 4096, span]);
    assert_eq!(m.remove(span), Some(leaf(2)));
    assert_eq!(m.remove(span), None);
    assert_eq!((m.len, m.tables.len()), (1, 1));
}

/// A map into directories updated before: each sends only its changed entries, from the
/// first to the last with those between as they stand, with no flag; a fresh one under them
/// is written whole.
#[test]
fn a_map_into_updated_directories_sends_their_changed_span() {
    let mut heap = TableHeap::new(0, 1 << 20, 4096);
    let span = 512 * 4096;
    let (mut s, _) = AddressSpace::new(geo(), &mut heap, GpuVa::new(1 << 40)).unwrap();
    let a = s.reserve(4096).unwrap();
    s.map(
        GpuVa::new(a),
        &[(0, 0x1000)],
        MapAttrs::default(),
        &mut heap,
    )
    .unwrap();
    // Three leaf tables on: entries i+3 of the same level-1 directory.
    let b = (a - a % span) + 3 * span;
    s.reserve_at(GpuVa::new(b), span + 4096).unwrap();
    let phys: Vec<Phys> = (0..513).map(|i| (0, 0x10_0000 + i * 4096)).collect();
    let u = s
        .map(GpuVa::new(b), &phys, MapAttrs::default(), &mut heap)
        .unwrap();
    let dirs: Vec<_> = u.iter().filter(|x| x.level >= 1).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let i = geo().index(GpuVa::new(b), 1) as u32;
    assert_eq!((dirs[0].start, dirs[0].entries.len()), (i, 2));
    assert!(!dirs[0].initial && !dirs[0].maps);
    assert_eq!(dirs[0].va, b);
    assert!(dirs[0].entries.iter().all(|e| e.valid && !e.large));
}

/// A run that fills a large page (VA and memory aligned, contiguous, one segment) becomes
/// one level-1 entry with `LargePage`; the rest stays 4 KiB leaves. Look-ups see through
/// it; unmapping takes it whole or refuses; a 2 MiB range that has a leaf table linked
/// keeps using it.
#[test]
fn aligned_contiguous_runs_map_as_large_pages() {
    let mut heap = TableHeap::new(0, 1 << 20, 4096);
    let large = geo().large_page();
    assert_eq!(large, 2 << 20);
    let (mut s, _) = AddressSpace::new(geo(), &mut heap, GpuVa::new(1 << 40)).unwrap();
    let va = s.reserve(large + 4096).unwrap();
    assert_eq!(va % large, 0, "a large reservation starts aligned");
    let phys: Vec<Phys> = (0..513).map(|i| (1, (4 << 20) + i * 4096)).collect();
    let u = s
        .map_large(
            GpuVa::new(va),
            &phys,
            MapAttrs::default(),
            &mut heap,
            |_| true,
        )
        .unwrap();
    let big: Vec<_> = u.iter().filter(|x| x.level == 1 && x.maps).collect();
    assert_eq!(big.len(), 1);
    assert!(big[0].entries[0].large && big[0].entries[0].valid);
    assert_eq!(big[0].entries[0].page, (4 << 20) >> 12);
    assert_eq!(big[0].va, va);
    let leaves: Vec<_> = u.iter().filter(|x| x.level == 0 && x.maps).collect();
    assert_eq!((leaves.len(), leaves[0].entries.len()), (1, 1));
    assert_eq!(leaves[0].va, va + large);
    assert_eq!(
        s.leaf(GpuVa::new(va + 0x1234)).unwrap().phys,
        (1, (4 << 20) + 0x1000)
    );
    assert_eq!(s.large_at(GpuVa::new(va + 0x1f_f000)), Some(va));
    assert_eq!(s.large_at(GpuVa::new(va + large)), None);
    assert_eq!(s.mapped_pages(), 513);
    assert_eq!(s.mapped(), vec![(va + large, 1), (va, 512)]);
    // Part of a large page is not unmapped; the whole is, with one invalid entry.
    assert_eq!(s.unmap(GpuVa::new(va + 4096), 1), Err(VaError::BadRange));
    assert_eq!(s.unmap(GpuVa::new(va), 1), Err(VaError::BadRange));
    let un = s.unmap(GpuVa::new(va), 513).unwrap();
    assert!(un[0].level == 1 && un[0].maps && !un[0].entries[0].valid);
    // The leaf table of the last page is unlinked (its range maps nothing), its own entry
    // not invalidated.
    assert!(un.iter().all(|x| x.level != 0), "{un:?}");
    assert!(un[1..].iter().all(|x| !x.maps && !x.entries[0].valid));
    assert_eq!(s.mapped_pages(), 0);
    // Unaligned memory, or a caller that does not allow it, maps 4 KiB leaves.
    let odd: Vec<Phys> = (0..512).map(|i| (1, (4 << 20) + 4096 + i * 4096)).collect();
    let u = s
        .map_large(
            GpuVa::new(va),
            &odd[..512],
            MapAttrs::default(),
            &mut heap,
            |p| p.1 % (2 << 20) == 0,
        )
        .unwrap();
    assert!(u.iter().all(|x| x.entries.iter().all(|e| !e.large)));
    assert!(u.iter().any(|x| x.level == 0 && x.maps));
    assert!(s.unmap(GpuVa::new(va), 512).is_ok());
    // That unmap emptied and unlinked the leaf table: the range takes a large page again.
    let u = s
        .map_large(
            GpuVa::new(va),
            &phys[..512],
            MapAttrs::default(),
            &mut heap,
            |_| true,
        )
        .unwrap();
    assert!(u
        .iter()
        .any(|x| x.level == 1 && x.entries.iter().any(|e| e.large)));
}

#[test]
fn table_heap_runs_out_cleanly() {
    let mut heap = TableHeap::new(0, 2 * 4096, 4096);
    let (mut s, _) = AddressSpace::new(geo(), &mut heap, GpuVa::new(1 << 40)).unwrap();
    let va = s.reserve(4096).unwrap();
    assert_eq!(
        s.map(GpuVa::new(va), &[(0, 0)], MapAttrs::default(), &mut heap),
        Err(VaError::NoTables)
    );
}
