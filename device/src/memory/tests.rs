//! The bus map, the allocator and the VRAM window of [`Memory`], unit by unit.

use super::sysmap::{edge_pages, whole_chunks, CHUNK};
use super::*;

#[test]
fn large_allocations_are_found_through_chunks_and_edges_alike() {
    let m = Memory::new(1 << 20);
    // Unaligned to chunks: a one-page allocation first, so the large one starts mid-chunk.
    let small = m.alloc_system(PAGE_SIZE, PAGE_SIZE).unwrap();
    let big = m.alloc_system(40 * PAGE_SIZE + 8, PAGE_SIZE).unwrap();
    let after = m.alloc_system(PAGE_SIZE, PAGE_SIZE).unwrap();
    assert_ne!(big.bus_addr % CHUNK, 0);
    {
        // Pages 2..43 of their chunks: chunk 1 (pages 16..32) whole, 14 + 11 edge pages,
        // and the two one-page neighbours.
        let map = m.sys_read();
        assert_eq!(map.chunks.len(), 1, "the one chunk it covers whole");
        assert_eq!(
            map.pages.len(),
            14 + 11 + 2,
            "its edge pages, and the neighbours"
        );
    }
    // Every page of it resolves to it: edges, chunk boundaries, the last word.
    for page in 0..41 {
        let a = big.bus_addr + page * PAGE_SIZE;
        assert_eq!(
            m.store(PhysAddr::new(a), page + 1, Ordering::Relaxed),
            Some(()),
            "page {page}"
        );
        assert_eq!(m.read_u64(PhysAddr::new(a)), Some(page + 1));
    }
    let last = big.bus_addr + big.len - 8;
    assert_eq!(m.store(PhysAddr::new(last), 7, Ordering::Relaxed), Some(()));
    // Its neighbours are their own, and the guard page between is nothing.
    assert_eq!(
        m.store(PhysAddr::new(small.bus_addr), 1, Ordering::Relaxed),
        Some(())
    );
    assert_eq!(
        m.read_u64(PhysAddr::new(big.bus_addr + big.len)),
        None,
        "guard page"
    );
    assert_eq!(m.read_u64(PhysAddr::new(after.bus_addr)), Some(0));
    assert!(
        m.span(PhysAddr::new(last), 16).is_none(),
        "no span past its end"
    );
    // Freed, none of it resolves and the index is back to the other two.
    assert!(m.free_system(BusAddr::new(big.bus_addr)));
    for page in 0..41 {
        assert_eq!(
            m.read_u64(PhysAddr::new(big.bus_addr + page * PAGE_SIZE)),
            None
        );
    }
    let map = m.sys_read();
    assert!(map.chunks.is_empty());
    assert_eq!(map.pages.len(), 2);
}

#[test]
fn chunk_index_covers_exactly_the_allocation_at_every_alignment() {
    for base_page in [0u64, 1, 15, 16, 17] {
        for pages in [1u64, 15, 16, 17, 32, 33] {
            let base = base_page * PAGE_SIZE;
            let end = base + pages * PAGE_SIZE;
            let (lo, hi) = whole_chunks(base, end);
            let mut covered: Vec<u64> = (lo..hi)
                .flat_map(|c| c * (CHUNK / PAGE_SIZE)..(c + 1) * (CHUNK / PAGE_SIZE))
                .chain(edge_pages(base, end, lo, hi))
                .collect();
            covered.sort_unstable();
            let want: Vec<u64> = (base_page..base_page + pages).collect();
            assert_eq!(covered, want, "base page {base_page}, {pages} pages");
        }
    }
}

#[test]
fn alloc_is_page_aligned_nonzero_and_guarded() {
    let m = Memory::new(1 << 20);
    let a = m.alloc_system(100, 8).unwrap();
    let b = m.alloc_system(4096, 65536).unwrap();
    assert!(a.bus_addr >= SYSMEM_START && a.bus_addr.is_multiple_of(PAGE_SIZE));
    assert_eq!(a.len, PAGE_SIZE);
    assert!(b.bus_addr.is_multiple_of(65536));
    assert!(m.read_u64(PhysAddr::new(0)).is_none());
    assert!(
        m.read_u64(PhysAddr::new(a.bus_addr + a.len)).is_none(),
        "guard page"
    );
    assert!(
        m.read_u64(PhysAddr::new(a.bus_addr + 4)).is_none(),
        "misaligned"
    );
    assert!(!m.is_mapped(PhysAddr::new(a.bus_addr), a.len + 8));
    assert!(m.alloc_system(0, 8).is_none());
    assert!(m.alloc_system(8, 3).is_none());
}

#[test]
fn cpu_and_bus_views_are_the_same_words() {
    let m = Memory::new(1 << 20);
    let a = m.alloc_system(4096, 4096).unwrap();
    m.write_u64(PhysAddr::new(a.bus_addr + 16), 0xDEAD).unwrap();
    assert_eq!(a.word(16).unwrap().load(Ordering::Acquire), 0xDEAD);
    let p = a.as_mut_ptr();
    // SAFETY: `a` is alive, offset 3 words is inside its 4096 bytes, and the access is
    // atomic on an aligned word, as the module contract requires.
    let w = unsafe { AtomicU64::from_ptr(p.add(3)) };
    w.store(7, Ordering::Release);
    assert_eq!(m.read_u64(PhysAddr::new(a.bus_addr + 24)), Some(7));
    assert!(m.free_system(BusAddr::new(a.bus_addr)));
    assert!(
        m.read_u64(PhysAddr::new(a.bus_addr)).is_none(),
        "freed: gone from the bus"
    );
    assert_eq!(
        a.word(24).unwrap().load(Ordering::Relaxed),
        7,
        "CPU handle safe"
    );
}

/// The page index covers every page of an allocation while it lives and none after.
#[test]
fn every_page_of_an_allocation_leaves_the_bus_when_it_is_freed() {
    let m = Memory::new(0);
    let a = m.alloc_system(3 * PAGE_SIZE, 8).unwrap();
    let b = m.alloc_system(PAGE_SIZE, 8).unwrap();
    for p in 0..3 {
        let at = a.bus_addr + p * PAGE_SIZE + 8;
        m.write_u64(PhysAddr::new(at), p + 1).unwrap();
        assert_eq!(m.read_u64(PhysAddr::new(at)), Some(p + 1));
    }
    assert!(m.is_mapped(PhysAddr::new(a.bus_addr), 3 * PAGE_SIZE));
    assert!(
        !m.is_mapped(PhysAddr::new(a.bus_addr), 4 * PAGE_SIZE),
        "guard page after it"
    );
    assert!(m.free_system(BusAddr::new(a.bus_addr)));
    for p in 0..3 {
        assert!(
            m.read_u64(PhysAddr::new(a.bus_addr + p * PAGE_SIZE + 8))
                .is_none(),
            "page {p}"
        );
    }
    m.write_u64(PhysAddr::new(b.bus_addr), 4).unwrap();
    assert_eq!(
        m.read_u64(PhysAddr::new(b.bus_addr)),
        Some(4),
        "its neighbour stays"
    );
}

#[test]
fn system_cap_is_checked_before_allocating() {
    let m = Memory::new(0);
    // Far beyond the cap and the host: must fail at once, without allocating.
    assert!(m.alloc_system(u64::MAX / 2, 8).is_none());
    assert!(m.alloc_system(SYSMEM_LIMIT, 8).is_none());
    assert!(m.alloc_system(DEFAULT_SYSTEM_CAP + 1, 8).is_none());
    m.set_system_cap(3 * PAGE_SIZE);
    let a = m.alloc_system(2 * PAGE_SIZE, 8).unwrap();
    assert!(m.alloc_system(2 * PAGE_SIZE, 8).is_none(), "over the cap");
    assert_eq!(m.system_used(), 2 * PAGE_SIZE);
    assert!(m.free_system(BusAddr::new(a.bus_addr)));
    assert_eq!(m.system_used(), 0);
    assert!(m.alloc_system(3 * PAGE_SIZE, 8).is_some());
}

#[test]
fn vram_and_bytes() {
    let m = Memory::new(1 << 20);
    assert_eq!(m.vram_size(), 1 << 20);
    m.write_u64(PhysAddr::new(VRAM_BASE + 8), 5).unwrap();
    assert_eq!(m.vram_words()[1].load(Ordering::Relaxed), 5);
    assert!(m.read_u64(PhysAddr::new(VRAM_BASE + (1 << 20))).is_none());
    m.write_bytes(PhysAddr::new(VRAM_BASE + 3), b"hello world")
        .unwrap();
    let mut out = [0u8; 11];
    m.read_bytes(PhysAddr::new(VRAM_BASE + 3), &mut out)
        .unwrap();
    assert_eq!(&out, b"hello world");
    let a = VRAM_BASE + 64;
    assert_eq!(m.fetch_max(PhysAddr::new(a), 9, Ordering::AcqRel), Some(0));
    assert_eq!(m.fetch_max(PhysAddr::new(a), 3, Ordering::AcqRel), Some(9));
    assert_eq!(m.read_words(PhysAddr::new(a), 1).unwrap(), vec![9]);
}

/// RAM shared from elsewhere, here a plain vector standing in for a shared mapping.
struct Shared(Vec<AtomicU64>);

impl RamBacking for Shared {
    fn words(&self) -> &[AtomicU64] {
        &self.0
    }
}

fn shared(bytes: u64) -> Arc<Shared> {
    Arc::new(Shared((0..bytes / 8).map(|_| AtomicU64::new(0)).collect()))
}

#[test]
fn external_ram_is_on_the_bus_until_unmapped() {
    let m = Memory::new(0);
    let ram = shared(2 * PAGE_SIZE);
    assert!(
        !m.map_system(BusAddr::new(0x1_0001), ram.clone()),
        "unaligned address"
    );
    assert!(
        m.map_system(BusAddr::new(0), ram.clone()),
        "guest RAM may start at 0"
    );
    assert!(
        !m.map_system(BusAddr::new(PAGE_SIZE), shared(PAGE_SIZE)),
        "overlap"
    );
    assert!(!m.map_system(
        BusAddr::new(SYSMEM_LIMIT - PAGE_SIZE),
        shared(2 * PAGE_SIZE)
    ));
    m.write_u64(PhysAddr::new(PAGE_SIZE + 8), 42).unwrap();
    assert_eq!(
        ram.0[(PAGE_SIZE / 8 + 1) as usize].load(Ordering::Relaxed),
        42
    );
    assert!(
        m.read_u64(PhysAddr::new(2 * PAGE_SIZE)).is_none(),
        "past the region"
    );
    assert_eq!(m.system_used(), 0, "not this machine's allocation");
    assert_eq!(m.mapped_system(), vec![(0, 2 * PAGE_SIZE)]);
    assert!(
        !m.free_system(BusAddr::new(0)),
        "free_system is for allocations only"
    );
    assert!(m.unmap_system(BusAddr::new(0)));
    assert!(m.read_u64(PhysAddr::new(8)).is_none());
    // The allocator steps around mapped RAM that sits in its range.
    assert!(m.map_system(BusAddr::new(SYSMEM_START), shared(PAGE_SIZE)));
    let a = m.alloc_system(PAGE_SIZE, 8).unwrap();
    assert!(a.bus_addr >= SYSMEM_START + PAGE_SIZE || a.bus_addr + a.len <= SYSMEM_START);
    assert!(
        !m.unmap_system(BusAddr::new(a.bus_addr)),
        "unmap_system leaves allocations alone"
    );
}

#[test]
fn external_vram_is_whole_pages() {
    let v = Arc::new(Shared(
        (0..(PAGE_SIZE + 64) / 8)
            .map(|_| AtomicU64::new(0))
            .collect(),
    ));
    let m = Memory::with_vram(v.clone());
    assert_eq!(m.vram_size(), PAGE_SIZE);
    assert_eq!(m.vram_words().len() as u64, PAGE_SIZE / 8);
    m.write_u64(PhysAddr::new(VRAM_BASE + 16), 7).unwrap();
    assert_eq!(v.0[2].load(Ordering::Relaxed), 7);
    assert!(m.read_u64(PhysAddr::new(VRAM_BASE + PAGE_SIZE)).is_none());
}

#[test]
fn pool_allocations_are_carved_at_their_physical_addresses() {
    let base = 0x4000_0000;
    let pool = shared(8 * PAGE_SIZE);
    assert!(Memory::with_pool(shared(PAGE_SIZE), 0, pool.clone()).is_none());
    assert!(Memory::with_pool(shared(PAGE_SIZE), base + 8, pool.clone()).is_none());
    let m = Memory::with_pool(shared(PAGE_SIZE), base, pool.clone()).unwrap();
    assert!(m.is_pooled());
    pool.0[0].store(0x5555, Ordering::Relaxed);
    let a = m.alloc_system(PAGE_SIZE, 8).unwrap();
    assert_eq!(a.bus_addr, base);
    assert_eq!(a.words()[0].load(Ordering::Relaxed), 0, "zeroed");
    m.write_u64(PhysAddr::new(a.bus_addr + 8), 9).unwrap();
    assert_eq!(pool.0[1].load(Ordering::Relaxed), 9, "the pool's own words");
    // Guard page after each allocation; alignment inside the pool.
    let b = m.alloc_system(2 * PAGE_SIZE, 2 * PAGE_SIZE).unwrap();
    assert_eq!(b.bus_addr, base + 2 * PAGE_SIZE);
    assert!(
        m.read_u64(PhysAddr::new(base + PAGE_SIZE)).is_none(),
        "guard page"
    );
    assert!(m.alloc_system(4 * PAGE_SIZE, 8).is_none(), "does not fit");
    assert!(
        !m.unmap_system(BusAddr::new(a.bus_addr)),
        "an allocation, not mapped RAM"
    );
    assert!(
        !m.map_system(BusAddr::new(base), shared(PAGE_SIZE)),
        "the pool is the allocator's"
    );
    assert!(m.free_system(BusAddr::new(a.bus_addr)));
    assert!(m.read_u64(PhysAddr::new(a.bus_addr)).is_none());
    let c = m.alloc_system(PAGE_SIZE, 8).unwrap();
    assert_eq!(c.bus_addr, base + 5 * PAGE_SIZE, "fresh space first");
    let d = m.alloc_system(PAGE_SIZE, 8).unwrap();
    assert_eq!(
        d.bus_addr,
        base + 7 * PAGE_SIZE,
        "the last page, behind a guard"
    );
    let e = m.alloc_system(PAGE_SIZE, 8).unwrap();
    assert_eq!(e.bus_addr, base, "then freed space, once round the pool");
    assert!(m.alloc_system(PAGE_SIZE, 8).is_none(), "full");
    assert_eq!(m.system_used(), 5 * PAGE_SIZE);
    assert!(m.mapped_system().is_empty());
}

/// freed ranges come back. Bus addresses are reused,
/// so create/destroy churn ran the bus window out (the full one after a terabyte of churn:
/// ~2,000 cycles of a 512 MiB allocation) and every allocation failed with nothing held.
#[test]
fn freed_ranges_are_reused_once_round_the_window() {
    // A window of 16 pages: 8 one-page allocations with their guard pages.
    let m = Memory::with_system(Memory::new_system_in(SYSMEM_START + 16 * PAGE_SIZE), 0);
    let first = m.alloc_system(PAGE_SIZE, 8).unwrap();
    assert!(m.free_system(BusAddr::new(first.bus_addr)));
    // Not reused at once: the next one is past it.
    let second = m.alloc_system(PAGE_SIZE, 8).unwrap();
    assert_eq!(second.bus_addr, first.bus_addr + 2 * PAGE_SIZE);
    assert!(m.free_system(BusAddr::new(second.bus_addr)));
    // Churn far beyond the window, of sizes that fragment it.
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..1_000u64 {
        let a = m
            .alloc_system((1 + i % 3) * PAGE_SIZE, 8)
            .unwrap_or_else(|| panic!("cycle {i}: the window ran out"));
        assert!(a.bus_addr >= SYSMEM_START && a.bus_addr + a.len <= SYSMEM_START + 16 * PAGE_SIZE);
        seen.insert(a.bus_addr);
        assert!(m.free_system(BusAddr::new(a.bus_addr)));
    }
    assert!(seen.len() > 1 && seen.len() <= 16);
    assert_eq!(m.system_used(), 0);
    // Full: 8 pages, each behind a guard. The ninth fails; a freed one is taken again.
    let held: Vec<SysAlloc> = (0..8)
        .map(|_| m.alloc_system(PAGE_SIZE, 8).unwrap())
        .collect();
    assert!(m.alloc_system(PAGE_SIZE, 8).is_none(), "full");
    let gap = held[3].bus_addr;
    assert!(m.free_system(BusAddr::new(gap)));
    assert_eq!(m.alloc_system(PAGE_SIZE, 8).map(|a| a.bus_addr), Some(gap));
    // Neighbours never touch: a two-page allocation does not fit where one page was.
    assert!(m.free_system(BusAddr::new(held[5].bus_addr)));
    assert!(
        m.alloc_system(2 * PAGE_SIZE, 8).is_none(),
        "no room with its guards"
    );
    assert_eq!(m.system_free(), DEFAULT_SYSTEM_CAP - 7 * PAGE_SIZE);
}
