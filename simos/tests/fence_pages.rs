//! The pages of native fences on 24H2, as a hostile process meets them
//! (docs/robustness.md §6). The OS names no fence storage there, so the KMD records the pages
//! it maps for each process (`driver/kmd/src/fence/pages.rs`) and, before a fence's first
//! open, maps both of its pages whole as user pages (`driver/kmd/src/pagetable.rs`,
//! `UnplacedNativeFence`).
//!
//! - NF-11, the records' share: they are divided between processes like the adapter's other
//!   pools (`FencePageReserve`, `FencePageFirst`, at their defaults: `rvgpu.sys` reads no
//!   registry). A process that creates shareable fences (two pages of their own each) until
//!   refused is refused with `STATUS_NO_MEMORY` at its share, nothing half-made; another
//!   process still creates fences and opens the greedy one's; destroys give records back.

mod common;

use common::*;
use rvgpu_simos::SimError::DdiFailed;
use rvgpu_simos::{Machine, MachineConfig, Mode, NativeFence, NativeFenceDesc, ProcessId};

const NO_MEMORY: i32 = 0xC000_0017_u32 as i32;
/// The records a process may hold (`quota::FENCE_PAGES`, whose reserve is the whole pool).
const SHARE: usize = 1024;

/// A fence of `pid`; a shareable one has its CurrentValue and its MonitoredValue each on a
/// page of its own.
fn try_create(
    m: &Machine,
    pid: ProcessId,
    shareable: bool,
) -> Result<NativeFence, rvgpu_simos::SimError> {
    let desc = NativeFenceDesc {
        shareable,
        ..NativeFenceDesc::default()
    };
    m.create_native_fence(0, pid, desc)
}

fn create(m: &Machine, pid: ProcessId, shareable: bool) -> NativeFence {
    ok(m, try_create(m, pid, shareable))
}

/// NF-11: a process creating shareable fences is refused at its share of the page records,
/// alone: another process creates and opens; destroyed fences give their records back.
#[test]
fn nf_11_a_process_past_its_share_of_fence_page_records_is_refused_alone() {
    let m = started(MachineConfig::single(Mode::Step));
    let greedy = ok(&m, m.create_process(0));
    let mut held = Vec::new();
    let refused = loop {
        match try_create(&m, greedy.pid, true) {
            Ok(f) => held.push(f),
            Err(e) => break e,
        }
        assert!(held.len() <= SHARE, "no share: {} fences", held.len());
    };
    assert_eq!(refused, DdiFailed(NO_MEMORY), "after {} fences", held.len());
    // Two records a fence.
    assert_eq!(2 * held.len(), SHARE, "the greedy process's records");
    // The refused creation left no fence behind, and the greedy process's fences work.
    let (live, _) = m.fence_live_counts(0);
    assert_eq!(
        try_create(&m, greedy.pid, true).err(),
        Some(DdiFailed(NO_MEMORY))
    );
    assert_eq!(
        m.fence_live_counts(0).0,
        live,
        "a refused create left a fence"
    );
    ok(&m, m.signal_native_fence_from_cpu(&held[0], 3));
    assert_eq!(held[0].current_value(), 3);

    // Another process creates fences and opens the greedy one's.
    let other = ok(&m, m.create_process(0));
    let mine = create(&m, other.pid, true);
    let opened = ok(&m, m.open_native_fence(&held[1], other.pid));
    ok(&m, m.signal_native_fence_from_cpu(&mine, 5));
    assert_eq!(mine.current_value(), 5);
    ok(&m, m.signal_native_fence_from_cpu(&held[1], 7));
    assert_eq!(opened.current_value(), 7);

    // Destroying fences gives their records back: the greedy process creates as many again.
    for f in held.drain(2..10) {
        ok(&m, m.destroy_native_fence(&f));
    }
    for _ in 0..8 {
        held.push(create(&m, greedy.pid, true));
    }
    assert_eq!(
        try_create(&m, greedy.pid, true).err(),
        Some(DdiFailed(NO_MEMORY))
    );
    no_fault(&m);
    drop(opened);
    drop(mine);
    exits_clean(&m, &other);
    drop(held);
    exits_clean(&m, &greedy);
}

against_the_pe_image!();
