//! VidMm's purge and restore of every segment around an adapter-wide recovery (TDR-09, UM-10;
//! docs/tdr.md "Adapter-wide", `simos::vidmm::residency::purge`). 24H2 calls
//! `DxgkDdiResetFromTimeout`, purges (`K:ADAPTER_RENDER::PurgeSegments` @0x1402C8CE4: each
//! allocation in VRAM evicted with a TRANSFER of size zero, the content lost; each aperture
//! range unmapped), calls `DxgkDdiRestartFromTimeout`, restores
//! (`K:ADAPTER_RENDER::RestoreFromPurgeSegments` @0x1403B6B24: the aperture mapped again), then
//! resets every device. The driver must take the zero-size TRANSFER, and the aperture must
//! translate again after the restore; a new device's queue then works. A VidMm operation
//! waiting for paging the reset drops hands its batch to the recovery (`vidmm::inflight`),
//! which submits it again after the restart.

mod common;

use std::time::Duration;

use common::residency::*;
use common::tdr::*;
use common::*;

use rvgpu_hw::addr::{GpuVa, PhysAddr};
use rvgpu_hw::cmd::Command;
use rvgpu_hw::testhooks::{TestHookEscape, TestHookOp, TEST_HOOKS_VALUE};
use rvgpu_simos::adapter::registry::RegValue;
use rvgpu_simos::kmt::native_fence::{
    nt_dxgk_create_native_fence_internal, D3DKMT_CREATENATIVEFENCE, SYNC_NO_SIGNAL_MAX_VALUE_ON_TDR,
};
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::vidmm::residency::Place;
use rvgpu_simos::{Machine, Mode, NativeFence, TdrEvent, UmsProcess};
use rvgpu_umd::kmt::{AllocationCpu, Kmt, NtStatus};
use rvgpu_umd::submit::UserQueue;
use zerocopy::IntoBytes;

const PAGE: u64 = 4096;

/// Another process hangs node 0 and its engine reset fails: the adapter-wide path.
fn adapter_wide_recovery(m: &Machine) {
    let (_h, kh) = user_process(m);
    let mut hq = okk(m, UserQueue::new(kh, &config(0)));
    m.device(0).unwrap().fail_next_reset(0);
    okk(m, hq.submit(&[Command::Hang]));
    run_until(m, "adapter reset", |m| adapter_resets(m) == 1);
}

/// A device created after the recovery runs a FILL through its user-mode queue.
fn a_new_device_works(m: &Machine) {
    let (_n, kn) = user_process(m);
    let tn = okk(m, kn.create_allocation(4096));
    let mut nq = okk(m, UserQueue::new(kn, &config(1)));
    let w = okk(m, nq.submit(&[fill(&tn, 0, 3)]));
    run_until(m, "new device", |_| nq.completed() >= w);
    assert_eq!(tn.mem.load(0), 3);
}

/// TDR-09: the purge comes after the driver's reset and before its restart, the restore after
/// the restart and before any device is reset. The driver was told of the VRAM allocation's
/// eviction by a TRANSFER of size zero and wrote nothing for it; the aperture range VidMm
/// mapped was unmapped and mapped again with the same pages, so the driver translates it again
/// (a page-table entry naming it fills those pages).
#[test]
fn tdr_09_an_adapter_wide_recovery_purges_segments_between_the_drivers_reset_and_restart() {
    let m = tdr_machine(Mode::Step, |a| a.device.doorbells = 8);
    let (_o, ko) = user_process(&m);
    let vram = gpu_only(&m, &ko, 64 * 1024);
    assert!(matches!(place(&m, &vram), Place::Local { .. }));
    let d = m.device(0).unwrap();
    let pages: Vec<u64> = (0..2)
        .map(|_| {
            let p = d.memory().alloc_system(PAGE, PAGE).expect("system page");
            let bus = p.bus_addr;
            // The test owns the page for the machine's life.
            std::mem::forget(p);
            bus
        })
        .collect();
    let range = ok(&m, m.aperture_map_pages(0, &pages));
    adapter_wide_recovery(&m);
    let ev = m.tdr_events(0);
    let at = |p: fn(&TdrEvent) -> bool| pos(&ev, p);
    let reset = at(|e| matches!(e, TdrEvent::AdapterReset { .. }));
    let purged = at(|e| matches!(e, TdrEvent::SegmentsPurged { .. }));
    let restarted = at(|e| matches!(e, TdrEvent::Restarted));
    let restored = at(|e| matches!(e, TdrEvent::SegmentsRestored { .. }));
    let device_reset = at(|e| matches!(e, TdrEvent::DeviceReset { .. }));
    assert!(
        reset < purged && purged < restarted && restarted < restored && restored < device_reset,
        "{ev:#?}"
    );
    let TdrEvent::SegmentsPurged { notified, unmapped } = &ev[purged] else {
        unreachable!()
    };
    assert!(
        notified.iter().any(|(h, _)| *h == vram.handle),
        "the VRAM allocation: {notified:?}"
    );
    assert!(
        notified.iter().all(|(_, bytes)| *bytes == 0),
        "nothing to move: {notified:?}"
    );
    assert!(
        unmapped.contains(&(range.offset, pages.clone())),
        "the aperture range: {unmapped:?}"
    );
    // The driver's aperture table maps the range again: an entry naming it is accepted and
    // reaches the same pages.
    let q = ok(&m, m.create_process(0));
    let va = ok(&m, m.map_aperture_range_into(&q, range));
    ok(&m, m.page_in(&q, 0, GpuVa::new(va), 2 * PAGE, 0x0A0B_0C0D));
    let done = ok(
        &m,
        m.run_until(20_000, Duration::from_secs(20), |m| {
            let (s, c) = m.legacy_fences(0, 0);
            s == c
        }),
    );
    assert!(done, "{}", diagnostics(&m));
    for &bus in &pages {
        let w = d.memory().read_u64(PhysAddr::new(bus)).expect("mapped");
        assert_eq!(w, 0x0A0B_0C0D_0A0B_0C0D, "page {bus:#x}");
    }
    a_new_device_works(&m);
    no_fault(&m);
}

fn native_fence(m: &Machine, p: UmsProcess, info_flags: u32) -> NativeFence {
    let mut a = D3DKMT_CREATENATIVEFENCE::new(p.device, 5, info_flags);
    okk(
        m,
        nt_dxgk_create_native_fence_internal(m, &mut a, |h| (h == p.device).then_some(p)),
    )
}

/// UM-10 across a purge: with an allocation in VRAM (whose eviction notice the driver must
/// take) the recovery completes; a native fence of a reset device reads u64::MAX, one created
/// with NoSignalMaxValueOnTdr keeps its value, and a device created afterwards works.
#[test]
fn um_10_after_a_purge_fences_keep_their_loss_values_and_a_new_device_works() {
    let m = tdr_machine(Mode::Step, |a| a.device.doorbells = 8);
    let o = ok(&m, m.create_process(0));
    let ko = m.kmt(&o);
    let _vram = gpu_only(&m, &ko, 64 * 1024);
    let signalled = native_fence(&m, o, 0);
    let kept = native_fence(&m, o, SYNC_NO_SIGNAL_MAX_VALUE_ON_TDR);
    adapter_wide_recovery(&m);
    assert_eq!(signalled.current_value(), u64::MAX);
    assert_eq!(kept.current_value(), 5, "NoSignalMaxValueOnTdr: left alone");
    a_new_device_works(&m);
    no_fault(&m);
}

/// The KMD's test hooks answer on a threaded, software-scheduled machine.
fn hooks_threaded() -> Machine {
    machine_with(Mode::Threaded, |a| {
        a.hwsch_feature = false;
        a.software_key.set("", TEST_HOOKS_VALUE, RegValue::dword(1));
    })
}

/// The node the KMD pages on: the copy engine (`gpummu::paging_node`).
const PAGING_NODE: u32 = 1;
const STATUS_DEVICE_REMOVED: i32 = 0xC000_02B6_u32 as i32;

fn arm(k: &SimKmt<'_>, op: TestHookOp, node: u32) {
    let mut buf = TestHookEscape::new(op, node, 0).as_bytes().to_vec();
    k.escape_driver_private(&mut buf).expect("arming request");
}

/// TDR-09, the lock order of `vidmm::inflight`: a new allocation's page-table update hangs
/// (HangNextPaging on the paging node) while VidMm waits for it holding the residency lock;
/// the adapter-wide recovery that follows needs that lock for its purge. The waiter hands its
/// batch over when the recovery suspends VidMm, the recovery purges, restarts and submits the
/// dropped updates again, and the creation returns on the machine's own events: never through
/// the paging wait's limit, which answers STATUS_UNSUCCESSFUL after 10 s. The allocation's
/// last page then translates (its VA was recommitted), though nothing ran its first updates.
#[test]
fn tdr_09_a_paging_wait_under_the_residency_lock_hands_its_batch_to_the_recovery() {
    let m = hooks_threaded();
    let (_o, ko) = user_process(&m);
    let (p, k, ctx) = process_with_context(&m);
    let warm = okk(&m, m.kmt(&p).create_allocation(4096));
    ok(&m, m.submit_legacy(&p, ctx, &[fill(&warm, 0, 1)]));
    run_until(&m, "warm-up", |m| all_done(m, 0));
    enable_tdr_after(&m, Duration::from_millis(100), Duration::from_millis(5));
    arm(&ko, TestHookOp::HangNextPaging, PAGING_NODE);
    let size = 32u64 << 20;
    let big = match k.create_allocation(size) {
        Ok(big) => Some(big),
        // Its device may be reset before the thunk returns.
        Err(NtStatus(STATUS_DEVICE_REMOVED)) => None,
        Err(e) => panic!(
            "the creation across the recovery: {e:?}; {}",
            diagnostics(&m)
        ),
    };
    run_until(&m, "adapter reset", |m| adapter_resets(m) == 1);
    let ev = m.tdr_events(0);
    let restored = pos(&ev, |e| matches!(e, TdrEvent::SegmentsRestored { .. }));
    assert!(
        matches!(ev[restored], TdrEvent::SegmentsRestored { recommitted } if recommitted >= 1),
        "the dropped page-table updates were not submitted again: {ev:#?}"
    );
    if let Some(big) = big {
        let last = GpuVa::new(big.gpu_va + size - PAGE);
        assert!(
            m.gpu_translate(0, p.pid, last).is_some(),
            "the allocation's last page does not translate after the recovery"
        );
    }
    no_fault(&m);
}

against_the_pe_image!();
