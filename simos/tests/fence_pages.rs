//! The pages of native fences on 24H2, as a hostile process meets them
//! (docs/robustness.md §6, "Native fences on 24H2"). The OS names no fence storage there, so
//! the KMD records the pages it maps for each process (`driver/kmd/src/fence/pages.rs`) and,
//! before a fence's first open, maps both of its pages whole as user pages
//! (`driver/kmd/src/pagetable.rs`, `UnplacedNativeFence`).
//!
//! - NF-11, the records' share: they are divided between processes like the adapter's other
//!   pools (`FencePageReserve`, `FencePageFirst`, at their defaults: `rvgpu.sys` reads no
//!   registry). A process that creates shareable fences (two pages of their own each) until
//!   refused is refused with `STATUS_NO_MEMORY` at its share, nothing half-made; another
//!   process still creates fences and opens the greedy one's; destroys give records back.
//!   Opening others' fences takes none of those records: a process that opened 1,200 still
//!   creates its full share. Opens are bounded per process apart (`FenceOpenReserve`,
//!   `FenceOpenFirst`): past its share an open is `STATUS_NO_MEMORY`, nothing half-made.
//! - NF-05, what a user page exposes: a process that opens another's shared fence reaches that
//!   fence's values and nothing else, because of VidMm's layout, which the simulated OS
//!   follows. 24H2 (dxgmms2) packs values into a process's pages at the caps' stride only for
//!   fences that are not shared: `VidMmAllocateFenceStorageSlot` @0x1400F9310 sends a shared
//!   fence's to `VIDMM_PROCESS_FENCE_STORAGE::AllocateSharedFenceStorageSlot` @0x14001C28C,
//!   which makes a new `VIDMM_FENCE_STORAGE_PAGE` and assigns it that one slot, where
//!   `AllocateFenceStorageSlot` @0x14001C3A4 looks for a free slot on the process's pages
//!   first (`FindAvailableCurrentValueStorageSlot` @0x14004D008). Dxgkrnl asks for
//!   CurrentValue (`DXGSYNCOBJECT::Initialize` @0x140183508) and MonitoredValue
//!   (`DXGADAPTERSYNCOBJECT::InitializeAdapterObject` @0x1401839C8) with the object's Shared
//!   flag. A private fence is never opened by another process (only a shared object has a
//!   handle another process can open), so a packed page is mapped only into its own process,
//!   and a shared fence's pages hold that fence alone.

mod common;

use common::*;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::SimError;
use rvgpu_simos::{Machine, MachineConfig, Mode, NativeFence, NativeFenceDesc, ProcessId};

const NO_MEMORY: i32 = 0xC000_0017_u32 as i32;
/// The driver's refusal past a process's share: its open DDI, which every create makes too,
/// answers `STATUS_NO_MEMORY`.
const REFUSED: SimError = SimError::Ddi {
    ddi: "DxgkDdiOpenNativeFence",
    status: NO_MEMORY,
};
const STATUS_ACCESS_DENIED: i32 = 0xC000_0022_u32 as i32;
const PAGE: u64 = 4096;
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

fn page(addr: u64) -> u64 {
    addr & !(PAGE - 1)
}

/// The pages a fence's values live on (device addresses).
fn pages(f: &NativeFence) -> [u64; 2] {
    [page(f.current_value_gpu()), page(f.monitored_value_gpu())]
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
    assert_eq!(refused, REFUSED, "after {} fences", held.len());
    // Two records a fence.
    assert_eq!(2 * held.len(), SHARE, "the greedy process's records");
    // The refused creation left no fence behind, and the greedy process's fences work.
    let (live, _) = m.fence_live_counts(0);
    assert_eq!(try_create(&m, greedy.pid, true).err(), Some(REFUSED));
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
    assert_eq!(try_create(&m, greedy.pid, true).err(), Some(REFUSED));
    no_fault(&m);
    drop(opened);
    drop(mine);
    exits_clean(&m, &other);
    drop(held);
    exits_clean(&m, &greedy);
}

/// NF-11: the pages a process maps to open others' fences are not its own fences' records. A
/// compositor-like process opens 1,200 shareable fences of three other processes (400 each,
/// below their own shares) and still creates its full share of shareable fences, as a process
/// that opened none would; the fences it opened still work.
#[test]
fn nf_11_a_process_that_opened_1200_fences_of_others_creates_its_full_share() {
    let m = started(MachineConfig::single(Mode::Step));
    let owners: Vec<_> = (0..3).map(|_| ok(&m, m.create_process(0))).collect();
    let theirs: Vec<Vec<NativeFence>> = owners
        .iter()
        .map(|o| (0..400).map(|_| create(&m, o.pid, true)).collect())
        .collect();
    let compositor = ok(&m, m.create_process(0));
    let opened: Vec<NativeFence> = theirs
        .iter()
        .flatten()
        .map(|f| ok(&m, m.open_native_fence(f, compositor.pid)))
        .collect();
    assert_eq!(opened.len(), 1200);
    let mut mine = Vec::new();
    let refused = loop {
        match try_create(&m, compositor.pid, true) {
            Ok(f) => mine.push(f),
            Err(e) => break e,
        }
        assert!(mine.len() <= SHARE, "no share: {} fences", mine.len());
    };
    assert_eq!(
        (mine.len(), refused),
        (SHARE / 2, REFUSED),
        "its own shareable fences, two records each"
    );
    ok(&m, m.signal_native_fence_from_cpu(&theirs[2][399], 9));
    assert_eq!(opened[1199].current_value(), 9);
    ok(&m, m.signal_native_fence_from_cpu(&mine[0], 4));
    assert_eq!(mine[0].current_value(), 4);
    no_fault(&m);
    drop(opened);
    drop(mine);
    exits_clean(&m, &compositor);
    drop(theirs);
    for o in &owners {
        exits_clean(&m, o);
    }
}

/// The opens one process may hold beside each fence's first (`quota::FENCE_OPENS`, whose
/// reserve is the whole pool).
const OPENS: usize = 4096;

/// NF-11, an attacker opening: what opens cost the KMD is bounded per process. A process that
/// opens another's shared fence over and over is refused with `STATUS_NO_MEMORY` at its share
/// of opens, nothing half-made (no instance, no page mapped); the owner and a third process
/// still open it, the attacker still creates fences of its own, a close gives an open back,
/// and its exit gives back everything.
#[test]
fn nf_11_opens_alone_are_bounded_per_process_and_refused_with_no_memory() {
    let m = started(MachineConfig::single(Mode::Step));
    let owner = ok(&m, m.create_process(0));
    let target = create(&m, owner.pid, true);
    let attacker = ok(&m, m.create_process(0));
    let mut held = Vec::new();
    let refused = loop {
        match m.open_native_fence(&target, attacker.pid) {
            Ok(f) => held.push(f),
            Err(e) => break e,
        }
        assert!(held.len() <= OPENS, "no bound: {} opens", held.len());
    };
    assert_eq!(
        (held.len(), refused),
        (OPENS, REFUSED),
        "the attacker's opens"
    );
    let live = m.fence_live_counts(0);
    let pages = m.native_fence_mapped_pages(0, attacker.pid);
    assert_eq!(
        m.open_native_fence(&target, attacker.pid).err(),
        Some(REFUSED)
    );
    assert_eq!(
        m.fence_live_counts(0),
        live,
        "a refused open left something"
    );
    assert_eq!(m.native_fence_mapped_pages(0, attacker.pid), pages);
    // Others still open it; the attacker still creates (a creation's open is its first).
    let third = ok(&m, m.create_process(0));
    let theirs = ok(&m, m.open_native_fence(&target, third.pid));
    let again = ok(&m, m.open_native_fence(&target, owner.pid));
    let own = create(&m, attacker.pid, true);
    ok(&m, m.signal_native_fence_from_cpu(&target, 6));
    assert_eq!(
        (theirs.current_value(), held[OPENS - 1].current_value()),
        (6, 6)
    );
    // A close gives one open back.
    let closed = held.pop().expect("an open");
    ok(&m, m.destroy_native_fence(&closed));
    held.push(ok(&m, m.open_native_fence(&target, attacker.pid)));
    no_fault(&m);
    drop((theirs, again, own));
    exits_clean(&m, &third);
    drop(held);
    exits_clean(&m, &attacker);
    drop(target);
    exits_clean(&m, &owner);
}

/// NF-05: the owner's private fences are packed, each shared fence is alone on its two pages;
/// another process that opens one shared fence gets those two pages mapped and nothing else,
/// and a GPU fill of the whole CurrentValue page it was given changes no other fence.
#[test]
fn nf_05_an_opened_shared_fence_is_alone_on_its_pages_and_a_fill_of_them_reaches_no_other() {
    let m = started(MachineConfig::single(Mode::Step));
    let owner = ok(&m, m.create_process(0));
    let private = [create(&m, owner.pid, false), create(&m, owner.pid, false)];
    let shared = [create(&m, owner.pid, true), create(&m, owner.pid, true)];
    // The owner's private fences share pages (AllocateFenceStorageSlot packs them).
    assert_eq!(
        pages(&private[0]),
        pages(&private[1]),
        "private fences packed"
    );
    // Each shared fence has a CurrentValue page and a MonitoredValue page of its own.
    let mut others: Vec<u64> = pages(&private[0]).to_vec();
    for s in &shared {
        for p in pages(s) {
            assert!(
                !others.contains(&p),
                "a shared fence's page holds another's value"
            );
            others.push(p);
        }
        assert_eq!(
            s.current_value_gpu() % PAGE,
            0,
            "alone from the page's start"
        );
        assert_eq!(s.monitored_value_gpu() % PAGE, 0);
    }

    // Another process opens one shared fence: two pages are mapped into it, that fence's (its
    // queue's wait log, which 24H2 maps into the queue's process, was there before).
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let attacker = q.pid();
    let before = m.native_fence_mapped_pages(0, attacker);
    let opened = ok(&m, m.open_native_fence(&shared[0], attacker));
    let after = m.native_fence_mapped_pages(0, attacker);
    assert_eq!(
        (after.0 - before.0, after.1 - before.1),
        (2, 0),
        "the opened fence's pages only"
    );
    // It cannot open a private fence, the only kind a packed page holds.
    assert_eq!(
        m.open_native_fence(&private[0], attacker).err(),
        Some(SimError::DdiFailed(STATUS_ACCESS_DENIED))
    );

    // Its queue fills the whole CurrentValue page it was given: the opened fence's value
    // changes (the process may signal it), no other fence's does.
    for (f, v) in private.iter().chain(&shared).zip(11..) {
        ok(&m, m.signal_native_fence_from_cpu(f, v));
    }
    let pattern = 0x5A5A_5A5A_5A5A_5A5A;
    ok(
        &m,
        q.push(Command::Fill {
            dst: page(opened.current_value_va()),
            bytes: PAGE,
            pattern,
        }),
    );
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert_eq!(opened.current_value(), pattern);
    let values: Vec<u64> = private
        .iter()
        .chain(&shared[1..])
        .map(NativeFence::current_value)
        .collect();
    assert_eq!(values, [11, 12, 14], "another fence's value changed");
    no_fault(&m);
    drop(opened);
    drop(q);
    exits_clean(&m, &owner);
}

against_the_pe_image!();
