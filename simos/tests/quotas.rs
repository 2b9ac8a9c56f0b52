//! Every per-process share of the adapter (`driver/kmd/src/quota.rs`, docs/robustness.md §6) as
//! a greedy process meets it, with the figures shrunk through the adapter's software key (the
//! `REG_DWORD` values the KMD reads at start): the greedy process is refused with
//! `STATUS_NO_MEMORY` short of the pool's end, a second process still gets its first objects
//! and its work runs, a refused creation leaves nothing behind, and the greedy process's exit
//! gives everything back.

mod common;

use common::*;
use rvgpu_simos::adapter::registry::{RegValue, REG_SZ};
use rvgpu_simos::SimError;
use rvgpu_simos::{Machine, MachineConfig, Mode, NativeFenceDesc};
use rvgpu_umd::kmt::{Kmt, KmtHandle, NtStatus};
use zerocopy::IntoBytes;

const STATUS_NO_MEMORY: NtStatus = NtStatus(NO_MEMORY);
const NO_MEMORY: i32 = 0xC000_0017_u32 as i32;
/// The driver's refusal past a process's share: its open DDI, which every create makes too,
/// answers `STATUS_NO_MEMORY`.
const REFUSED: SimError = SimError::Ddi {
    ddi: "DxgkDdiOpenNativeFence",
    status: NO_MEMORY,
};
/// The KMD's native-fence table (`driver/kmd/src/fence/registry.rs`, `MAX_FENCES`).
const FENCE_TABLE: u32 = 1 << 20;
/// The KMD's context room (`driver/kmd/src/context/mod.rs`, `MAX_CONTEXTS`).
const CONTEXT_ROOM: u32 = 16_384;
/// The KMD's queue ids (`driver/kmd/src/hwqueue/mod.rs`, `QUEUE_ID_LIMIT`).
const QUEUE_IDS: u32 = 4096;

/// A started step-mode machine whose adapter's software key holds `values` as `REG_DWORD`s.
fn machine(values: &[(&str, u32)]) -> Machine {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.doorbells = 8;
    for (name, v) in values {
        cfg.adapters[0]
            .software_key
            .set("", name, RegValue::dword(*v));
    }
    started(cfg)
}

/// Calls `make` until it is refused; returns what it made and the refusal. Panics past
/// `limit` objects (no quota).
fn until_refused<T, E>(limit: usize, mut make: impl FnMut() -> Result<T, E>) -> (Vec<T>, E) {
    let mut made = Vec::new();
    loop {
        match make() {
            Ok(t) => made.push(t),
            Err(e) => return (made, e),
        }
        assert!(made.len() <= limit, "no quota within {limit} objects");
    }
}

/// A native-fence share of 12 free fences and 4 per newcomer: the greedy process gets the
/// fences above the reserve, then creation is refused (the KMD refuses the creator's open, the
/// OS destroys the new fence); another process gets its first 4 and is refused after, and its
/// fences and queues work; the greedy process's exit returns every fence of its own.
#[test]
fn quota_fences_per_process_share_refuses_the_greedy_process_only() {
    let m = machine(&[("FenceReserve", FENCE_TABLE - 12), ("FenceFirst", 4)]);
    let (before, _) = m.fence_live_counts(0);
    // A through D3DKMT (its exit closes what its handle table holds).
    let (a, ka) = user_process(&m);
    let (fences, refused) = until_refused(64, || ka.create_native_fence(0));
    assert_eq!(refused, STATUS_NO_MEMORY, "after {} fences", fences.len());
    assert!(
        (8..=12).contains(&fences.len()),
        "greedy process got {} fences",
        fences.len()
    );
    no_fault(&m);
    // The refused creation left no fence behind.
    let (held, _) = m.fence_live_counts(0);
    assert_eq!(held.0, before.0 + fences.len(), "native fences live");

    // B's queue (whose progress fence is a native fence of B) runs, and is gone again.
    let create = |pid| m.create_native_fence(0, pid, NativeFenceDesc::default());
    let b = ok(&m, m.create_process(0));
    work_runs(&m, m.kmt(&b), 0x51);
    let (mine, refused) = until_refused(64, || create(b.pid));
    assert_eq!(refused, REFUSED);
    assert_eq!(mine.len(), 4, "a newcomer's first fences");
    ok(&m, m.signal_native_fence_from_cpu(&mine[0], 9));
    assert_eq!(mine[0].current_value(), 9);
    no_fault(&m);

    // A's exit gives its fences back; B, once it let go of its own, creates again.
    drop(fences);
    ok(&m, m.exit_process(&a));
    for f in &mine {
        ok(&m, m.destroy_native_fence(f));
    }
    let again = ok(&m, create(b.pid));
    ok(&m, m.destroy_native_fence(&again));
    ok(&m, m.exit_process(&b));
    assert_eq!(m.fence_live_counts(0).0, before, "fences after both exits");
    no_fault(&m);
}

/// Opens of other processes' shared fences count toward the share too: once the greedy
/// process holds its share its next open is refused, while the owner's fences keep working.
#[test]
fn quota_fences_opens_of_shared_fences_count_toward_the_share() {
    // Every process is in the reserve at once: three local handles each.
    let m = machine(&[("FenceReserve", FENCE_TABLE), ("FenceFirst", 3)]);
    let owner = ok(&m, m.create_process(0));
    let desc = NativeFenceDesc {
        shareable: true,
        ..NativeFenceDesc::default()
    };
    let (shared, refused) = until_refused(16, || m.create_native_fence(0, owner.pid, desc));
    assert_eq!((shared.len(), refused), (3, REFUSED));
    let greedy = ok(&m, m.create_process(0));
    let mut opened = Vec::new();
    let mut last = Ok(());
    for f in shared.iter().chain(shared.iter()) {
        match m.open_native_fence(f, greedy.pid) {
            Ok(o) => opened.push(o),
            Err(e) => last = Err(e),
        }
    }
    assert_eq!(opened.len(), 3, "opens granted within the share");
    assert_eq!(last, Err(REFUSED), "an open past the share");
    ok(&m, m.signal_native_fence_from_cpu(&shared[0], 5));
    assert_eq!(opened[0].current_value(), 5);
    drop(opened);
    ok(&m, m.exit_process(&greedy));
    drop(shared);
    exits_clean(&m, &owner);
}

/// Contexts: a reserve of all but 64 (the system device's contexts among them) and 3 per
/// newcomer.
#[test]
fn quota_contexts_registry_share_refuses_the_greedy_process_only() {
    let m = machine(&[("ContextReserve", CONTEXT_ROOM - 64), ("ContextFirst", 3)]);
    let (a, ka) = user_process(&m);
    let (contexts, refused) = until_refused(64, || ka.create_context(0));
    assert_eq!(refused, STATUS_NO_MEMORY, "after {}", contexts.len());
    assert!((4..=64).contains(&contexts.len()), "{}", contexts.len());
    let (b, kb) = user_process(&m);
    // B's queue takes one of its first three.
    work_runs(&m, kb, 0x51);
    let (more, refused) = until_refused(64, || kb.create_context(0));
    assert_eq!(refused, STATUS_NO_MEMORY);
    assert_eq!(
        more.len(),
        3,
        "a newcomer's first contexts (its queue's is gone)"
    );
    ok(&m, m.exit_process(&a));
    okk(&m, kb.create_context(0));
    exits_clean(&m, &b);
}

/// Hardware queues, and with them doorbells: a reserve of all but 24 ids and 2 per newcomer.
/// The second process's user-mode queue connects its doorbell and runs.
#[test]
fn quota_queues_and_doorbells_registry_share_refuses_the_greedy_process_only() {
    let m = machine(&[("QueueReserve", QUEUE_IDS - 24), ("QueueFirst", 2)]);
    let (a, ka) = user_process(&m);
    let ctx = okk(&m, ka.create_context(0));
    let (queues, refused) = until_refused(64, || {
        let mut pdd = rvgpu_hw::pdd::HwQueuePdd {
            magic: rvgpu_hw::pdd::PDD_MAGIC,
            version: rvgpu_hw::pdd::HW_QUEUE_PDD_VERSION,
            ..Default::default()
        };
        ka.create_hw_queue(ctx, true, pdd.as_mut_bytes())
    });
    assert_eq!(refused, STATUS_NO_MEMORY, "after {}", queues.len());
    assert!((8..=24).contains(&queues.len()), "{}", queues.len());
    no_fault(&m);
    let b = ok(&m, m.create_process(0));
    work_runs(&m, m.kmt(&b), 0x51);
    ok(&m, m.exit_process(&a));
    exits_clean(&m, &b);
}

/// A value of another type than `REG_DWORD` is not read: the default stands (the greedy
/// process makes more fences than the shrunk figure would allow).
#[test]
fn quota_values_of_another_type_leave_the_default() {
    let mut cfg = MachineConfig::single(Mode::Step);
    let sz = RegValue {
        ty: REG_SZ,
        data: "8\0".encode_utf16().flat_map(u16::to_le_bytes).collect(),
    };
    cfg.adapters[0].software_key.set("", "FenceFirst", sz);
    cfg.adapters[0]
        .software_key
        .set("", "FenceReserve", RegValue::dword(FENCE_TABLE - 4));
    let m = started(cfg);
    let (a, ka) = user_process(&m);
    let made: Vec<KmtHandle> = (0..40)
        .map(|_| okk(&m, ka.create_native_fence(0)).kmt)
        .collect();
    assert_eq!(made.len(), 40, "FenceFirst's default of 64 applies");
    exits_clean(&m, &a);
}

under_the_pages!();
against_the_pe_image!();
