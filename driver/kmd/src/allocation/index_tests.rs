//! Unit tests of the mapped-run index (`super`): the same records as visiting every
//! allocation, no growth on the paging path, and the instructions both take.
#![allow(clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]
use super::*;
use crate::allocation::Mappings;
use crate::handle::Kind;
use crate::kmem::Host;
use rvgpu_hw::pdd::AllocationKind;

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

fn alloc(pages: u64) -> Allocation {
    Allocation {
        kind: AllocationKind::Buffer,
        size: pages * PAGE,
        gpu_read_only: false,
        cpu_visible: false,
        cached: false,
        opened_by: None,
        of: None,
        creator: None,
        mapped: Mappings::default(),
    }
}

fn h(kind: Kind, n: u64) -> Handle {
    Handle::new(0, kind, n).unwrap()
}

/// The records as the KMD kept them before the index: every allocation visited.
fn record_linear(
    allocations: &mut SortedMap<Handle, Allocation>,
    process: Handle,
    first_va: u64,
    va_hi: u64,
    target: Option<(Handle, u64)>,
) {
    for al in allocations.values_mut() {
        al.mapped.cut(process, first_va, va_hi);
    }
    let Some((h, offset)) = target else { return };
    let (Some(base), Some(al)) = (first_va.checked_sub(offset), allocations.get_mut(&h)) else {
        return;
    };
    let lo = offset / PAGE;
    let hi = (lo + (va_hi - first_va) / PAGE).min(al.size / PAGE);
    al.mapped.add(process, base, lo, hi);
}

/// `n` allocations of 16 pages each, with room made as CreateAllocation makes it.
fn world(n: u64) -> (SortedMap<Handle, Allocation>, MapIndex) {
    let mut all = SortedMap::new();
    let mut index = MapIndex::default();
    for i in 1..=n {
        index.try_reserve_for::<Host>(all.len() + 1).unwrap();
        all.insert(h(Kind::Allocation, i), alloc(16));
    }
    (all, index)
}

/// A small deterministic generator (xorshift), so a failure reproduces.
struct Rng(u64);
impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

/// Every run of every allocation is in the index under its own first VA, and nothing else is.
fn assert_mirrors(all: &SortedMap<Handle, Allocation>, index: &MapIndex) {
    let runs: usize = all.values().map(|al| al.mapped.len()).sum();
    assert_eq!(index.len(), runs);
    for (h, al) in all.iter() {
        for (p, lo, hi) in al.mapped.spans() {
            assert_eq!(index.runs.get(&(p, lo)), Some(&(*h, hi)));
        }
    }
}

/// DDI-03 (the KMD knows where VidMm mapped each allocation, where a doorbell's ring must
/// be): following 4,000 random UPDATEPAGETABLE leaf operations of two processes over 64
/// allocations (maps at random offsets and lengths, remaps over other allocations, unmaps
/// across several) leaves exactly the records visiting every allocation leaves, with the
/// index mirroring them throughout, and never grows the index on the paging path.
#[test]
fn ddi_03_indexed_mapping_records_match_visiting_every_allocation() {
    let (mut all, mut index) = world(64);
    let mut reference = all.clone();
    let room = index.runs.capacity();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let processes = [h(Kind::Process, 1), h(Kind::Process, 2)];
    for step in 0..4000 {
        let process = processes[rng.next(2) as usize];
        let first_va = 0x10_0000 + rng.next(512) * PAGE;
        let pages = 1 + rng.next(24);
        let va_hi = first_va + pages * PAGE;
        let target = (rng.next(4) != 0)
            .then(|| (h(Kind::Allocation, 1 + rng.next(64)), rng.next(20) * PAGE));
        record(
            &mut all,
            &mut index,
            process,
            GpuVa::new(first_va),
            GpuVa::new(va_hi),
            target,
        );
        record_linear(&mut reference, process, first_va, va_hi, target);
        for ((ha, a), (_, b)) in all.iter().zip(reference.iter()) {
            assert_eq!(a.mapped, b.mapped, "allocation {ha:?} after step {step}");
        }
        assert_mirrors(&all, &index);
    }
    assert_eq!(
        index.runs.capacity(),
        room,
        "the paging path grew the index"
    );
    // An allocation going away takes its runs out of the index.
    for i in 1..=64 {
        let ha = h(Kind::Allocation, i);
        index.forget(&all, ha);
        all.remove(&ha);
    }
    assert!(index.is_empty());
}

/// DDI-03 (the attacker): a process that maps and remaps one allocation's pages many times
/// over keeps at most MAX_MAPPINGS runs recorded for it, and a run that finds no room in the
/// index (room made for fewer allocations than mapped) is not recorded anywhere: record and
/// index never disagree, and nothing panics or grows.
#[test]
fn ddi_03_a_run_without_room_is_recorded_nowhere() {
    let mut all = SortedMap::new();
    let mut index = MapIndex::default();
    index.try_reserve_for::<Host>(1).unwrap();
    let room = index.runs.capacity();
    for i in 1..=8 {
        all.insert(h(Kind::Allocation, i), alloc(16));
    }
    let p = h(Kind::Process, 1);
    for i in 0..64u64 {
        let target = Some((h(Kind::Allocation, 1 + i % 8), 0));
        let va = 0x40_0000 + i * 0x10_0000;
        record(
            &mut all,
            &mut index,
            p,
            GpuVa::new(va),
            GpuVa::new(va + PAGE),
            target,
        );
        assert_mirrors(&all, &index);
    }
    assert!(index.len() <= room);
    assert_eq!(index.runs.capacity(), room);
}

/// Instructions per UPDATEPAGETABLE record with 4,096 allocations, each mapped once: the index
/// against visiting every allocation. Run under callgrind (the figures are in the report of
/// the change, not asserted):
/// `valgrind --tool=callgrind --toggle-collect='*record_linear*' --toggle-collect='*index::record*'`
/// on this test (`--ignored`).
#[test]
#[ignore]
fn note_mapping_instructions_with_many_allocations() {
    let n = 4096;
    let (mut all, mut index) = world(n);
    let mut reference = all.clone();
    let p = h(Kind::Process, 1);
    for i in 0..n {
        let va = 0x100_0000 + i * 16 * PAGE;
        record(
            &mut all,
            &mut index,
            p,
            GpuVa::new(va),
            GpuVa::new(va + 16 * PAGE),
            Some((h(Kind::Allocation, i + 1), 0)),
        );
        record_linear(
            &mut reference,
            p,
            va,
            va + 16 * PAGE,
            Some((h(Kind::Allocation, i + 1), 0)),
        );
    }
    // 1,000 remaps of one page each, as VidMm's updates of a running process.
    for i in 0..1000u64 {
        let va = 0x100_0000 + (i * 37 % n) * 16 * PAGE;
        let target = Some((h(Kind::Allocation, 1 + (i * 11 % n)), 0));
        record(
            &mut all,
            &mut index,
            p,
            GpuVa::new(va),
            GpuVa::new(va + PAGE),
            target,
        );
        record_linear(&mut reference, p, va, va + PAGE, target);
    }
    assert_mirrors(&all, &index);
}
