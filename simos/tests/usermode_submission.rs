//! User-mode work submission (UM-01 … UM-22) end to end: the real UMD
//! (`rvgpu_umd::submit`) through the simulated D3DKMT thunks (`rvgpu_simos::kmt`) against the
//! simulated Dxgkrnl (`rvgpu_simos::ums`), the real KMD and the emulated GPU. One test per
//! requirement that can be proven here, named after it. The power flows (UM-11 … UM-14: F1,
//! D3, suspend and resume) are `ums_power`; the fixtures both share are `common::ums`.

mod common;

use common::ums::{
    connected_raw_queue, events_of, fill, gated_queue, position, process_with_target, queues_first,
    raw_queue, target, ums_progress_given, write_ring,
};
use common::*;
use rvgpu_hw::addr::PhysAddr;
use rvgpu_umd::kmt::AllocationKind;
use std::time::Duration;

use rvgpu_ddi::dxgkrnl::{
    D3DDDI_DOORBELLSTATUS_CONNECTED, D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD,
    D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
};
use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_ddi::submission::DXGK_NODEMETADATA_FLAGS;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::pdd::DoorbellPdd;
use rvgpu_hw::queue::RingControl;
use rvgpu_simos::kmt::SimMem;
use rvgpu_simos::machine::answers::{Teardown, UmsProgress};
use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::{
    DoorbellState, Machine, MachineConfig, Mode, NativeFenceDesc, SimError, UmsEvent, UmsProcess,
};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, DoorbellCpu, Kmt, NtStatus};
use rvgpu_umd::submit::{KernelQueue, SubmissionPath, UserQueue};
use zerocopy::IntoBytes;

// ---------------------------------------------------------------------------------------------
// UM-03, UM-04: discovery.

/// UM-03: the OS asks `DxgkDdiGetNodeMetadata` for every node at start; user-mode queues (and
/// so doorbells) are allowed exactly on the nodes that report `UserModeSubmission`.
#[test]
fn um_03_node_metadata_gates_user_mode_queues() {
    let m = with_doorbells(Mode::Step, 4);
    let nodes = okk(&m, m.query_driver_caps(0))
        .GpuEngineTopology
        .NbAsymetricProcessingNodes;
    let md = m.node_metadata(0);
    assert_eq!(md.len(), nodes as usize, "metadata for every node");
    let (p, k) = user_process(&m);
    for (node, md) in md.iter().enumerate() {
        let ums = md.Flags.is_set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission);
        let ctx = okk(&m, k.create_context(node as u32));
        let mut qp = hw_queue_pdd();
        let r = k.create_hw_queue(ctx, true, qp.as_mut_bytes());
        if ums {
            let q = okk(&m, r);
            okk(&m, k.destroy_hw_queue(q.handle));
        } else {
            // BR-95 ([D] DXGHWQUEUE::InitializeForUserModeSubmission): INVALID_PARAMETER.
            assert_eq!(r.err(), Some(NtStatus(STATUS_INVALID_PARAMETER)));
        }
        okk(&m, k.destroy_context(ctx));
    }
    assert!(
        md.iter()
            .any(|m| m.Flags.is_set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission)),
        "rvgpu supports user-mode submission on its engines"
    );
    exits_clean(&m, &p);
}

/// UM-04: `DXGKQAITYPE_USERMODESUBMISSION_CAPS` reports the doorbell size; the OS's dummy page
/// is that size, and a doorbell is only created for a user-mode queue (a kernel-mode queue's
/// doorbell is refused, STATUS_INVALID_PARAMETER as 24H2 `K:DxgkCreateDoorbellInternal`
/// @0x1401D8A50 answers it: UM-05's other half).
#[test]
fn um_04_doorbell_size_from_caps_and_doorbells_only_for_user_mode_queues() {
    let m = with_doorbells(Mode::Step, 4);
    let caps = m
        .usermode_submission_caps(0)
        .expect("USERMODESUBMISSION_CAPS answered");
    assert!(caps.DoorbellSizeInBytes > 0 && caps.DoorbellSizeInBytes <= 4096);
    let (p, k) = user_process(&m);
    let ctx = okk(&m, k.create_context(0));
    let mut qp = hw_queue_pdd();
    let kq = okk(&m, k.create_hw_queue(ctx, false, qp.as_mut_bytes()));
    let ring = okk(&m, k.create_allocation_as(4096, AllocationKind::Commands));
    let control = okk(
        &m,
        k.create_allocation_as(RingControl::SIZE, AllocationKind::RingControl),
    );
    let mut pdd = DoorbellPdd::for_ring(4096);
    let r = k.create_doorbell(kq.handle, ring.handle, control.handle, pdd.as_mut_bytes());
    assert_eq!(r.err(), Some(NtStatus(STATUS_INVALID_PARAMETER)));
    let q = raw_queue(&m, &k, 0);
    assert_eq!(
        q.doorbell.cpu.state().dummy_size(),
        (caps.DoorbellSizeInBytes as usize).div_ceil(8) * 8,
        "the dummy page has the doorbell's size"
    );
    exits_clean(&m, &p);
}

/// UM-03 (the OS's side): a node whose metadata lacks `UserModeSubmission` gets no user-mode
/// queues (`STATUS_INVALID_PARAMETER`, BR-95) but kernel-mode ones; the other node keeps both.
#[test]
fn um_03_os_refuses_user_mode_queues_on_a_node_without_the_flag() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.doorbells = 4;
    let mut m = Machine::new(cfg);
    m.load_driver_with(rvgpu_simos::testing::ums_caps::install_node1_without_ums)
        .expect("load");
    m.start_adapter(0).expect("start");
    let (p, k) = user_process(&m);
    let ctx = okk(&m, k.create_context(1));
    let mut qp = hw_queue_pdd();
    assert_eq!(
        k.create_hw_queue(ctx, true, qp.as_mut_bytes()).err(),
        // BR-95 ([D] DXGHWQUEUE::InitializeForUserModeSubmission): refused before any DDI.
        Some(NtStatus(STATUS_INVALID_PARAMETER))
    );
    let kq = okk(&m, k.create_hw_queue(ctx, false, qp.as_mut_bytes()));
    okk(&m, k.destroy_hw_queue(kq.handle));
    okk(&m, k.destroy_context(ctx));
    let q0 = raw_queue(&m, &k, 0);
    let _ = q0;
    exits_clean(&m, &p);
}

/// UM-04 (the OS's side): nodes that claim user-mode submission while
/// `DXGKQAITYPE_USERMODESUBMISSION_CAPS` fails make the OS refuse the start (it could not size
/// the dummy page).
#[test]
fn um_04_start_refused_without_usermode_submission_caps() {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    m.load_driver_with(rvgpu_simos::testing::ums_caps::install_failing_ums_caps)
        .expect("load");
    match m.start_adapter(0) {
        Err(SimError::StartRefused {
            rule: "BR-76", why, ..
        }) => assert!(why.contains("UM-04"), "{why}"),
        other => panic!("start not refused: {other:?}"),
    }
    assert!(m.bugcheck().is_none());
}

// ---------------------------------------------------------------------------------------------
// UM-01, UM-05: the two paths.

/// UM-01: a user-mode queue and a kernel-mode queue run on the same engine at the same time,
/// and both complete their work.
#[test]
fn um_01_user_and_kernel_mode_submission_together() {
    let m = with_doorbells(Mode::Step, 4);
    let (p, k, t) = process_with_target(&m);
    let mut uq = okk(&m, UserQueue::new(k, &config(0)));
    let mut kq = okk(&m, KernelQueue::new(k, &config(0)));
    assert_eq!(uq.path(), SubmissionPath::UserMode);
    let mut last = (0, 0);
    for i in 0..8u64 {
        last.0 = okk(&m, uq.submit(&[fill(&t, i)]));
        last.1 = okk(&m, kq.submit(&[fill64(t.gpu_va + 2048, i)]));
    }
    okk(&m, uq.wait(last.0));
    okk(&m, kq.wait(last.1));
    assert_eq!(
        uq.path(),
        SubmissionPath::UserMode,
        "no fallback was needed"
    );
    assert_eq!(t.mem.load(0), 7);
    assert_eq!(t.mem.load(2048), 7);
    okk(&m, uq.close());
    okk(&m, kq.close());
    exits_clean(&m, &p);
}

/// UM-05: a queue created with `UserModeSubmission` has no kernel-mode path: the OS refuses
/// `D3DKMTSubmitCommandToHwQueue` on it, and so does the KMD when reached directly.
#[test]
fn um_05_user_mode_queue_refuses_kernel_submission() {
    let m = with_doorbells(Mode::Step, 4);
    let (p, k, t) = process_with_target(&m);
    let q = raw_queue(&m, &k, 0);
    let r = k.submit_command_to_hw_queue(q.queue.handle, 1, t.gpu_va, 64);
    assert_eq!(r.err(), Some(NtStatus(STATUS_INVALID_PARAMETER)), "the OS");
    let s = ok(
        &m,
        m.ddi_submit_command_to_hw_queue(&p, q.queue.handle, 1, t.gpu_va, 64),
    );
    assert!(s < 0, "the KMD must refuse too, returned {s:#x}");
    exits_clean(&m, &p);
}

// ---------------------------------------------------------------------------------------------
// UM-07, UM-08, UM-09: allocations and the doorbell mapping.

/// UM-07: the doorbell holds references on its ring and ring-control allocations: the UMD's
/// destroy closes its handle but the memory stays on the bus until the doorbell goes; an
/// allocation the UMD never destroyed is destroyed by the OS at device destruction.
#[test]
fn um_07_doorbell_holds_its_ring_allocations() {
    let m = with_doorbells(Mode::Step, 4);
    let (p, k) = user_process(&m);
    let q = raw_queue(&m, &k, 0);
    okk(&m, k.destroy_allocation(q.ring.handle));
    assert!(
        m.memory()
            .is_mapped(PhysAddr::new(q.ring.mem.alloc().bus_addr), 4096),
        "the ring stays while the doorbell lives"
    );
    assert!(
        k.destroy_allocation(q.ring.handle).is_err(),
        "the UMD's handle is closed"
    );
    okk(&m, k.destroy_doorbell(q.doorbell.handle));
    assert!(
        !m.memory()
            .is_mapped(PhysAddr::new(q.ring.mem.alloc().bus_addr), 4096),
        "freed with the last reference"
    );
    assert!(
        m.memory().is_mapped(
            PhysAddr::new(q.control.mem.alloc().bus_addr),
            RingControl::SIZE
        ),
        "ring control was not destroyed by the UMD: it stays"
    );
    okk(&m, k.destroy_hw_queue(q.queue.handle));
    okk(&m, k.destroy_context(q.context));
    ok(&m, m.exit_process(&p));
    assert!(
        !m.memory().is_mapped(
            PhysAddr::new(q.control.mem.alloc().bus_addr),
            RingControl::SIZE
        ),
        "the OS destroys what is left at device destruction"
    );
    no_fault(&m);
}

/// UM-08, UM-09: the ring's CPU view works whatever the doorbell state; the doorbell CPU VA
/// is the dummy page before connect and after the KMD's `DxgkCbDisconnectDoorbell`, and the
/// physical doorbell in between. Work written while disconnected runs after reconnect.
#[test]
fn um_09_doorbell_va_dummy_physical_dummy_and_ring_always_valid() {
    let m = with_doorbells(Mode::Step, 1);
    let (p, k, t) = process_with_target(&m);
    let a = raw_queue(&m, &k, 0);
    let info = m.doorbell_info(0, a.doorbell.handle).unwrap();
    assert_eq!(info.state, DoorbellState::Disconnected);
    assert_eq!(info.status, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY);
    assert_eq!(info.mapped_page, None, "dummy page before connect");
    a.doorbell.cpu.ring(1);
    assert_eq!(
        m.doorbell_info(0, a.doorbell.handle).unwrap().writes,
        (1, 0)
    );
    okk(&m, k.connect_doorbell(a.doorbell.handle));
    assert_eq!(
        m.doorbell_info(0, a.doorbell.handle).unwrap().mapped_page,
        Some(0)
    );
    // A second queue takes the only physical doorbell: the first is victimised.
    let _b = connected_raw_queue(&m, &k, 0);
    let info = m.doorbell_info(0, a.doorbell.handle).unwrap();
    assert_eq!(
        info.mapped_page, None,
        "dummy page after the disconnect callback"
    );
    assert_eq!(info.status, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY);
    // UM-08: the ring is still the UMD's to write.
    let mut w = [0u64; 8];
    let n = fill(&t, 0xAB).encode(&mut w).unwrap();
    for (i, word) in w.iter().take(n).enumerate() {
        a.ring.mem.store(8 * i as u64, *word);
    }
    let n2 = a.closing(1).encode(&mut w).unwrap();
    for (i, word) in w.iter().take(n2).enumerate() {
        a.ring.mem.store(8 * (n + i) as u64, *word);
    }
    a.doorbell.cpu.set_last_queued(1);
    a.control
        .mem
        .store(RingControl::WRITE_PTR, 8 * (n + n2) as u64);
    let before = m.doorbell_info(0, a.doorbell.handle).unwrap().writes;
    a.doorbell.cpu.ring(8 * (n + n2) as u64);
    let after = m.doorbell_info(0, a.doorbell.handle).unwrap().writes;
    assert_eq!(after.0, before.0 + 1, "the ring landed on the dummy page");
    assert_eq!(after.1, before.1);
    // Reconnect (victimising b) and the work written meanwhile runs.
    okk(&m, k.connect_doorbell(a.doorbell.handle));
    a.doorbell.cpu.ring(8 * (n + n2) as u64);
    okk(&m, k.wait_for_fence(a.done_fence(), 1));
    assert_eq!(t.mem.load(0), 0xAB);
    exits_clean(&m, &p);
}

/// UM-15, a teardown the OS does not retry: `DxgkDdiDestroyHwQueue` of a queue whose doorbell is
/// still connected succeeds (24H2 `K:ADAPTER_RENDER::DdiDestroyHwQueue`@0x1403B4F34 logs a
/// failure and frees its queue all the same, so a refusal leaks it). The queue leaves the
/// device's runlist, its doorbell's page is unbound and the engine's power reference given
/// back; the doorbell's own destroy then succeeds, and both handles are dead afterwards.
#[test]
fn um_15_destroy_hw_queue_with_a_connected_doorbell_is_never_refused() {
    use rvgpu_ddi::ntstatus::{STATUS_INVALID_HANDLE, STATUS_SUCCESS};
    use rvgpu_hw::mmio::MmioBus;
    let m = with_doorbells(Mode::Step, 4);
    let (p, k) = user_process(&m);
    let q = connected_raw_queue(&m, &k, 0);
    let page = m
        .doorbell_info(0, q.doorbell.handle)
        .and_then(|d| d.mapped_page)
        .expect("connected");
    let dev = m.device(0).expect("device");
    assert!(dev.queue(q.queue_id).is_some(), "in a runlist");
    let st = ok(&m, m.ddi_destroy_hw_queue(&p, q.queue.handle));
    assert_eq!(st, STATUS_SUCCESS);
    assert!(dev.queue(q.queue_id).is_none(), "off the runlist");
    let bind = rvgpu_hw::regs::doorbell_bind_reg(page).expect("bind register");
    assert_eq!(dev.read32(bind), rvgpu_hw::queue::NO_QUEUE, "page unbound");
    assert!(
        m.ums_events(0).iter().any(|e| matches!(
            e,
            UmsEvent::DriverComponentRef {
                node: 0,
                active: false,
                count: 0
            }
        )),
        "the engine's reference given back: {:#?}",
        m.ums_events(0)
    );
    let again = ok(&m, m.ddi_destroy_hw_queue(&p, q.queue.handle));
    assert_eq!(again, STATUS_INVALID_HANDLE);
    let d = ok(&m, m.ddi_destroy_doorbell(&p, q.doorbell.handle));
    assert_eq!(d, STATUS_SUCCESS);
    let d = ok(&m, m.ddi_destroy_doorbell(&p, q.doorbell.handle));
    assert_eq!(d, STATUS_INVALID_HANDLE);
    no_fault(&m);
    // The OS still holds both objects (the DDIs were called behind its back): its own teardown
    // would call them again.
    std::mem::forget(q);
}

/// UM-17, UM-18 in 24H2's order (`Teardown::AllocationsFirst`, `K:DXGPROCESS::Destroy`
/// @0x14034D4E0, `K:DXGDEVICE::DestroyAllDeviceState` @0x1403A7C64): the exit and the kill of a
/// process whose user-mode queue is connected and blocked on a gate put its device in error
/// and suspend its context through the driver first, then free its allocations (the ring among
/// them) before the doorbell and the queue are destroyed. The queue is off the runlist before
/// any of its memory goes, so nothing faults, and the teardown leaves nothing behind.
#[test]
fn um_17_18_exit_and_kill_free_allocations_before_queues_in_24h2_order() {
    for kill in [false, true] {
        let mut cfg = rvgpu_simos::MachineConfig::single(Mode::Step);
        cfg.adapters[0].device.doorbells = 4;
        cfg.os.windows = rvgpu_simos::Windows::from_env().answering(|r| {
            r.teardown = Teardown::AllocationsFirst;
        });
        let m = started(cfg);
        let before = m.contiguous_allocations(0);
        let (p, k) = user_process(&m);
        let (gate, t, q) = gated_queue(&m, &k);
        ok(&m, m.run_steps(100));
        let ring = q.ring.handle;
        m.clear_ums_events(0);
        let r = if kill {
            m.kill_process(&p)
        } else {
            m.exit_process(&p)
        };
        assert_eq!(r, Ok(()), "kill {kill}: {}", diagnostics(&m));
        let ev = events_of(&m);
        let freed = position(&ev, |e| *e == UmsEvent::FreeAllocation { allocation: ring })
            .unwrap_or_else(|| panic!("kill {kill}: ring freed: {ev:#?}"));
        let db = position(&ev, |e| matches!(e, UmsEvent::DestroyDoorbell { .. }))
            .unwrap_or_else(|| panic!("kill {kill}: doorbell destroyed: {ev:#?}"));
        let hq = position(&ev, |e| matches!(e, UmsEvent::DestroyHwQueue { .. }))
            .unwrap_or_else(|| panic!("kill {kill}: queue destroyed: {ev:#?}"));
        assert!(
            freed < db && db < hq,
            "kill {kill}: allocations, doorbell, queue: {ev:#?}"
        );
        let error = position(&ev, |e| matches!(e, UmsEvent::DeviceError { .. }))
            .unwrap_or_else(|| panic!("kill {kill}: device in error: {ev:#?}"));
        let suspended = position(&ev, |e| matches!(e, UmsEvent::SuspendContext { .. }))
            .unwrap_or_else(|| panic!("kill {kill}: context suspended: {ev:#?}"));
        assert!(
            error < suspended && suspended < freed,
            "kill {kill}: error, suspend, then allocations: {ev:#?}"
        );
        let first_free =
            position(&ev, |e| matches!(e, UmsEvent::FreeAllocation { .. })).unwrap_or(freed);
        assert!(
            suspended < first_free,
            "kill {kill}: no allocation before the suspend: {ev:#?}"
        );
        assert!(
            m.device(0).unwrap().queue(q.queue_id).is_none(),
            "kill {kill}: off the runlist"
        );
        assert_eq!(t.mem.load(0), 0, "kill {kill}: the gated fill never ran");
        assert_eq!(
            m.contiguous_allocations(0),
            before,
            "kill {kill}: the KMD kept memory of the process"
        );
        no_fault(&m);
        std::mem::forget((q, gate, t));
    }
}

/// UM-18, isolation across reuse: process A is killed with user-mode work queued behind a gate
/// while VidMm hands freed pages out again first (as Windows' memory manager does). Process B
/// then gets pages A's ring, ring control and buffers had, and writes into all of them what
/// would open A's gate; A's queue, stopped when its allocations went, never runs: B's memory
/// keeps B's values, A's queue is in no runlist, B's own work runs. Under both teardown orders.
fn killed_queue_never_touches_reused_pages(mode: Mode) {
    let mut cfg = rvgpu_simos::MachineConfig::single(mode);
    cfg.adapters[0].device.doorbells = 4;
    cfg.os.reuse_freed_pages_first = true;
    let m = started(cfg);
    let (a, ka) = user_process(&m);
    let (gate, t, q) = gated_queue(&m, &ka);
    if mode == Mode::Step {
        ok(&m, m.run_steps(100));
    }
    let range = |mem: &SimMem| {
        let al = mem.alloc();
        (al.bus_addr, al.bus_addr + al.len)
    };
    let freed: Vec<(u64, u64)> = [&q.ring, &q.control, &gate, &t]
        .iter()
        .map(|al| range(&al.mem))
        .collect();
    let qid = q.queue_id;
    ok(&m, m.kill_process(&a));
    assert!(
        m.device(0).unwrap().queue(qid).is_none(),
        "A's queue left the runlist"
    );
    std::mem::forget((q, gate, t));
    let (b, kb) = user_process(&m);
    let bufs: Vec<Allocation<SimMem>> = (0..16).map(|_| target(&m, &kb)).collect();
    let reused = bufs.iter().any(|buf| {
        let (lo, hi) = range(&buf.mem);
        freed.iter().any(|&(flo, fhi)| lo < fhi && flo < hi)
    });
    assert!(reused, "B got some of A's freed pages");
    for buf in &bufs {
        for w in 0..512u64 {
            buf.mem.store(w * 8, 1);
        }
    }
    if mode == Mode::Step {
        ok(&m, m.run_steps(500));
    } else {
        std::thread::sleep(Duration::from_millis(20));
    }
    for buf in &bufs {
        assert!(
            (0..512u64).all(|w| buf.mem.load(w * 8) == 1),
            "nothing of A's ran on B's pages"
        );
    }
    assert!(
        m.device(0).unwrap().queue(qid).is_none(),
        "A's queue ran no more"
    );
    work_runs(&m, kb, 5);
    no_fault(&m);
    drop(bufs);
    exits_clean(&m, &b);
}

#[test]
fn um_18_killed_queue_never_touches_reused_pages_step() {
    killed_queue_never_touches_reused_pages(Mode::Step);
}

#[test]
fn um_18_killed_queue_never_touches_reused_pages_threaded() {
    killed_queue_never_touches_reused_pages(Mode::Threaded);
}

// ---------------------------------------------------------------------------------------------
// UM-06, UM-15: the doorbell thunks and DDIs.

/// UM-06, UM-15: create, connect (the KMD's physical doorbell is bound to the queue), a
/// NotifyWorkSubmission at status CONNECTED refused (24H2 `K:DxgkNotifyWorkSubmissionInternal`
/// @0x1401D98CC calls the KMD only at CONNECTED_NOTIFY_KMD), a ring runs the work, destroy.
#[test]
fn um_15_doorbell_ddis_and_notify_work_submission() {
    let m = with_doorbells(Mode::Step, 4);
    let (p, k, t) = process_with_target(&m);
    let q = connected_raw_queue(&m, &k, 0);
    let info = m.doorbell_info(0, q.doorbell.handle).unwrap();
    let DoorbellState::Connected { page } = info.state else {
        panic!("not connected: {info:?}");
    };
    assert!(page < 4);
    let wp = write_ring(&q, 0, &[fill(&t, 9)], 1);
    assert_eq!(
        k.notify_work_submission(q.doorbell.handle).err(),
        Some(NtStatus(STATUS_INVALID_PARAMETER))
    );
    assert!(!events_of(&m).contains(&UmsEvent::NotifyWorkSubmission {
        doorbell: q.doorbell.handle
    }));
    q.doorbell.cpu.ring(wp);
    okk(&m, k.wait_for_fence(q.done_fence(), 1));
    assert_eq!(t.mem.load(0), 9);
    okk(&m, k.destroy_doorbell(q.doorbell.handle));
    assert!(m.doorbell_info(0, q.doorbell.handle).is_none());
    exits_clean(&m, &p);
}

// ---------------------------------------------------------------------------------------------
// UM-16, UM-17, UM-18: progress fence and process exit.

/// UM-16: where the OS gives a user-mode queue a progress fence (the pages), the UMD stores
/// N+1 at the last-queued address before it rings and the OS sees the queue has work until
/// the GPU writes N+1 to the progress fence. 24H2 gives none: the OS sees no work on the
/// queue, and the UMD's own progress fence still marks completion.
#[test]
fn um_16_progress_fence_tells_the_os_a_queue_has_work() {
    let m = with_doorbells(Mode::Step, 4);
    let (p, k, t) = process_with_target(&m);
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    let queue = last_hw_queue(&m, true).expect("no user-mode queue created");
    let v = okk(&m, q.submit(&[fill(&t, 1), fill(&t, 2)]));
    if ums_progress_given(&m) {
        assert!(m.hw_queue_progress_fence(0, queue).is_some());
        assert_eq!(m.hw_queue_progress(0, queue), Some((v, 0)));
        assert!(m.hw_queue_has_work(0, queue));
    } else {
        assert_eq!(m.hw_queue_progress_fence(0, queue), None);
        assert_eq!(m.hw_queue_progress(0, queue), None);
        assert!(!m.hw_queue_has_work(0, queue));
    }
    okk(&m, q.wait(v));
    assert_eq!(t.mem.load(0), 2);
    assert!(!m.hw_queue_has_work(0, queue));
    if ums_progress_given(&m) {
        assert_eq!(m.hw_queue_progress(0, queue), Some((v, v)));
    }
    drop(q);
    exits_clean(&m, &p);
}

/// Whether device queue `qid` is in none of adapter 0's runlists.
fn off_the_runlist(m: &Machine, qid: u32) -> bool {
    m.device(0)
        .unwrap()
        .queues()
        .iter()
        .all(|s| s.queue_id != qid)
}

/// UM-17: normal exit: per queue the doorbell is disconnected, then doorbell and queue are
/// destroyed; allocations, contexts and the device follow. Where the OS gave the queue a
/// progress fence (the pages) it waits for the last queued value between disconnect and
/// destroy; 24H2 waits for nothing (`K:DXGHWQUEUE::DestroyCoreState`), so the queue may die
/// with work queued. Either way it has left the runlist when its destroy returns.
#[test]
fn um_17_normal_exit_disconnects_waits_then_destroys() {
    let m = queues_first(Mode::Step);
    let (p, k, t) = process_with_target(&m);
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    let mut last = 0;
    for i in 0..16 {
        last = okk(&m, q.submit(&[fill(&t, i)]));
    }
    let qid = q.queue_id();
    std::mem::forget(q); // the process dies with the queue open
    m.clear_ums_events(0);
    ok(&m, m.exit_process(&p));
    let ev = events_of(&m);
    let disc = position(&ev, |e| matches!(e, UmsEvent::DisconnectDoorbell { .. })).unwrap();
    let wait = position(
        &ev,
        |e| matches!(e, UmsEvent::WaitedIdle { value, .. } if *value == last),
    );
    let ddb = position(&ev, |e| matches!(e, UmsEvent::DestroyDoorbell { .. })).unwrap();
    let dq = position(&ev, |e| matches!(e, UmsEvent::DestroyHwQueue { .. })).unwrap();
    let free = position(&ev, |e| matches!(e, UmsEvent::FreeAllocation { .. })).unwrap();
    let dc = position(&ev, |e| matches!(e, UmsEvent::DestroyContext { .. })).unwrap();
    let dd = position(&ev, |e| matches!(e, UmsEvent::DestroyDevice { .. })).unwrap();
    assert!(
        disc < ddb && ddb < dq && dq < free && free < dc && dc < dd,
        "{ev:#?}"
    );
    if ums_progress_given(&m) {
        let wait = wait.expect("waited for the last queued value");
        assert!(disc < wait && wait < ddb, "{ev:#?}");
        assert_eq!(t.mem.load(0), 15, "all work ran before the teardown");
    } else {
        assert_eq!(wait, None, "24H2 cannot wait for user-mode work: {ev:#?}");
    }
    assert!(!ev
        .iter()
        .any(|e| matches!(e, UmsEvent::SuspendContext { .. })));
    assert!(off_the_runlist(&m, qid));
    no_fault(&m);
}

/// UM-18: abnormal exit: the device is marked in error, every context suspended (off the
/// runlist at once) before any doorbell is disconnected, and everything is destroyed without
/// waiting for pending work.
#[test]
fn um_18_abnormal_exit_suspends_first_and_does_not_wait() {
    let m = queues_first(Mode::Step);
    let (p, k, t) = process_with_target(&m);
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    // Work that never finishes: the exit must not wait for it.
    okk(
        &m,
        q.submit(&[Command::FenceWait {
            addr: t.gpu_va + 512,
            value: 1,
        }]),
    );
    let qid = q.queue_id();
    std::mem::forget(q);
    m.clear_ums_events(0);
    ok(&m, m.kill_process(&p));
    let ev = events_of(&m);
    let err = position(&ev, |e| matches!(e, UmsEvent::DeviceError { .. })).unwrap();
    let sus = position(&ev, |e| matches!(e, UmsEvent::SuspendContext { .. })).unwrap();
    let disc = position(&ev, |e| matches!(e, UmsEvent::DisconnectDoorbell { .. })).unwrap();
    let dd = position(&ev, |e| matches!(e, UmsEvent::DestroyDevice { .. })).unwrap();
    assert!(err < sus && sus < disc && disc < dd, "{ev:#?}");
    assert!(!ev.iter().any(|e| matches!(e, UmsEvent::WaitedIdle { .. })));
    assert!(off_the_runlist(&m, qid));
    ok(&m, m.run_until_idle());
    no_fault(&m);
}

// ---------------------------------------------------------------------------------------------
// UM-19, UM-20, UM-21: doorbell virtualisation.

/// UM-20: the seed's walk-through with one physical doorbell, step by step.
#[test]
fn um_20_victimisation_walkthrough() {
    let m = with_doorbells(Mode::Step, 1);
    let (p, k) = user_process(&m);
    // 1. hDoorbell1 on hHwQueue1 is connected to the one physical doorbell: CONNECTED.
    let q1 = connected_raw_queue(&m, &k, 0);
    let d1 = m.doorbell_info(0, q1.doorbell.handle).unwrap();
    assert_eq!(d1.state, DoorbellState::Connected { page: 0 });
    assert_eq!(d1.mapped_page, Some(0));
    assert!(
        d1.status == D3DDDI_DOORBELLSTATUS_CONNECTED
            || d1.status == D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD
    );
    // 2. CreateDoorbell for hHwQueue2: no physical doorbell yet, status RETRY; hDoorbell1
    //    keeps the physical doorbell.
    m.clear_ums_events(0);
    let q2 = raw_queue(&m, &k, 0);
    let d2 = m.doorbell_info(0, q2.doorbell.handle).unwrap();
    assert_eq!(d2.state, DoorbellState::Disconnected);
    assert_eq!(d2.status, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY);
    assert_eq!(d2.mapped_page, None);
    assert_eq!(
        m.doorbell_info(0, q1.doorbell.handle).unwrap().mapped_page,
        Some(0)
    );
    assert!(!events_of(&m)
        .iter()
        .any(|e| matches!(e, UmsEvent::CallbackDisconnect { .. })));
    // 3. ConnectDoorbell(hDoorbell2): the KMD victimises hDoorbell1 through
    //    DxgkCbDisconnectDoorbell (the OS points its VA at the dummy page and writes RETRY)
    //    before it returns the physical doorbell for hDoorbell2, which becomes CONNECTED.
    m.clear_ums_events(0);
    okk(&m, k.connect_doorbell(q2.doorbell.handle));
    let ev = events_of(&m);
    let cb = position(&ev, |e| {
        *e == UmsEvent::CallbackDisconnect {
            doorbell: q1.doorbell.handle,
            reason: D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
            was_connected: true,
        }
    })
    .expect("hDoorbell1 victimised through the callback");
    let conn = position(&ev, |e| {
        matches!(e, UmsEvent::ConnectDoorbell { doorbell, page: 0, .. } if *doorbell == q2.doorbell.handle)
    })
    .expect("hDoorbell2 connected to the physical doorbell");
    assert!(cb < conn, "{ev:#?}");
    let d1 = m.doorbell_info(0, q1.doorbell.handle).unwrap();
    assert_eq!(d1.mapped_page, None);
    assert_eq!(d1.status, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY);
    let d2 = m.doorbell_info(0, q2.doorbell.handle).unwrap();
    assert_eq!(d2.state, DoorbellState::Connected { page: 0 });
    assert_eq!(d2.mapped_page, Some(0));
    // The hardware agrees: a ring through hDoorbell1's VA lands on the dummy page, one
    // through hDoorbell2's reaches physical doorbell 0.
    let dev = m.device(0).unwrap();
    let before = dev.doorbell_stats().per_page[0];
    q1.doorbell.cpu.ring(0);
    assert_eq!(dev.doorbell_stats().per_page[0], before);
    q2.doorbell.cpu.ring(0);
    assert_eq!(dev.doorbell_stats().per_page[0], before + 1);
    let _ = (&q1.pdd, q1.queue_id, q2.queue_id);
    exits_clean(&m, &p);
}

/// UM-19, UM-20 end to end: three user-mode queues share one physical doorbell; each
/// submission victimises another queue's doorbell, the UMD sees RETRY, reconnects and rings
/// again, and all work completes on the user-mode path.
#[test]
fn um_19_three_queues_one_doorbell_all_work_completes() {
    let m = with_doorbells(Mode::Step, 1);
    let (p, k, t) = process_with_target(&m);
    let mut qs: Vec<_> = (0..3)
        .map(|_| okk(&m, UserQueue::new(k, &config(0))))
        .collect();
    let mut last = [0; 3];
    for round in 0..5u64 {
        for (i, q) in qs.iter_mut().enumerate() {
            last[i] = okk(
                &m,
                q.submit(&[fill64(t.gpu_va + 256 * i as u64, round * 10 + i as u64)]),
            );
        }
    }
    for (i, q) in qs.iter().enumerate() {
        okk(&m, q.wait(last[i]));
        assert_eq!(q.path(), SubmissionPath::UserMode);
        assert_eq!(t.mem.load(256 * i as u64), 40 + i as u64);
    }
    assert!(events_of(&m)
        .iter()
        .any(|e| matches!(e, UmsEvent::CallbackDisconnect { .. })));
    drop(qs);
    exits_clean(&m, &p);
}

/// UM-21: with a global doorbell every doorbell connects to the same physical doorbell and
/// nothing is victimised.
#[test]
fn um_21_global_doorbell_no_victimisation() {
    let m = machine_with(Mode::Step, |a| {
        a.device.doorbells = 1;
        a.device.global_doorbell = true;
    });
    let (p, k, t) = process_with_target(&m);
    let mut qs: Vec<_> = (0..3)
        .map(|_| okk(&m, UserQueue::new(k, &config(0))))
        .collect();
    let mut last = [0; 3];
    for (i, q) in qs.iter_mut().enumerate() {
        last[i] = okk(
            &m,
            q.submit(&[fill64(t.gpu_va + 256 * i as u64, 7 + i as u64)]),
        );
    }
    for (i, q) in qs.iter().enumerate() {
        okk(&m, q.wait(last[i]));
        assert_eq!(t.mem.load(256 * i as u64), 7 + i as u64);
    }
    let ev = events_of(&m);
    assert!(!ev
        .iter()
        .any(|e| matches!(e, UmsEvent::CallbackDisconnect { .. })));
    assert_eq!(connect_pages(&ev), vec![0, 0, 0]);
    drop(qs);
    exits_clean(&m, &p);
}

/// Connect pages in event order.
fn connect_pages(ev: &[UmsEvent]) -> Vec<u32> {
    ev.iter()
        .filter_map(|e| match e {
            UmsEvent::ConnectDoorbell { page, .. } => Some(*page),
            _ => None,
        })
        .collect()
}

/// Global-doorbell limit, UM-21: in global mode each process gets its own doorbell
/// page, shared by all its doorbells; with a page per process nothing is victimised.
#[test]
fn global_doorbell_one_page_per_process() {
    let m = machine_with(Mode::Step, |a| {
        a.device.doorbells = 2;
        a.device.global_doorbell = true;
    });
    let procs: Vec<_> = (0..2).map(|_| ok(&m, m.create_process(0))).collect();
    let mut all = Vec::new();
    for p in &procs {
        let k = m.kmt(p);
        let t = target(&m, &k);
        for i in 0..2u64 {
            let mut q = okk(&m, UserQueue::new(k, &config(0)));
            let last = okk(&m, q.submit(&[fill(&t, 5 + i)]));
            all.push((q, last));
        }
    }
    for (q, last) in &all {
        okk(&m, q.wait(*last));
    }
    let ev = events_of(&m);
    let pages = connect_pages(&ev);
    assert_eq!(pages.len(), 4, "{ev:?}");
    assert_eq!(
        pages[0], pages[1],
        "one page for the first process: {pages:?}"
    );
    assert_eq!(
        pages[2], pages[3],
        "one page for the second process: {pages:?}"
    );
    assert_ne!(
        pages[0], pages[2],
        "processes never share a page: {pages:?}"
    );
    assert!(!ev
        .iter()
        .any(|e| matches!(e, UmsEvent::CallbackDisconnect { .. })));
    drop(all);
    for p in &procs {
        ok(&m, m.exit_process(p));
    }
    no_fault(&m);
}

/// Global-doorbell limit: a process that writes another process's queue id
/// through its own doorbell mapping rings nothing; the owner's published work waits for the
/// owner's ring. (Before, every process rang the one shared page and any queue id ran.)
#[test]
fn global_doorbell_foreign_ring_runs_nothing() {
    let m = machine_with(Mode::Step, |a| {
        a.device.doorbells = 2;
        a.device.global_doorbell = true;
    });
    let mut victim = ok(&m, GpuQueue::new(&m, 0, 0));
    let hostile = ok(&m, GpuQueue::new(&m, 0, 0));
    let f = ok(
        &m,
        m.create_native_fence(0, victim.pid(), NativeFenceDesc::default()),
    );
    ok(&m, m.run_until_idle());
    ok(&m, victim.signal(&f, 1));
    ok(&m, victim.publish());
    ok(&m, m.run_until_idle());
    assert_eq!(f.current_value(), 0, "published, not rung");
    let before = m.device(0).expect("adapter 0").doorbell_stats();
    hostile.ring_raw(u64::from(victim.queue_id()));
    ok(&m, m.run_until_idle());
    assert_eq!(f.current_value(), 0, "a foreign ring ran the victim's work");
    let after = m.device(0).expect("adapter 0").doorbell_stats();
    assert_eq!(after.ignored, before.ignored + 1, "the device ignored it");
    ok(&m, victim.kick());
    ok(&m, m.run_until_idle());
    assert_eq!(f.current_value(), 1, "the owner's ring runs it");
    no_fault(&m);
}

/// UM-20 in global mode: with more processes than pages, connecting a doorbell of a
/// new process takes the least recently connected process's page, and every doorbell of
/// that process on it is victimised (DISCONNECTED_RETRY); the victims reconnect and finish.
#[test]
fn global_doorbell_victimises_a_whole_process() {
    let m = machine_with(Mode::Step, |a| {
        a.device.doorbells = 1;
        a.device.global_doorbell = true;
    });
    let pa = ok(&m, m.create_process(0));
    let pb = ok(&m, m.create_process(0));
    let (ka, kb) = (m.kmt(&pa), m.kmt(&pb));
    let (ta, tb) = (target(&m, &ka), target(&m, &kb));
    let mut qa: Vec<_> = (0..2)
        .map(|_| okk(&m, UserQueue::new(ka, &config(0))))
        .collect();
    for (i, q) in qa.iter_mut().enumerate() {
        submit_wait(&m, q, &[fill(&ta, 1 + i as u64)]);
    }
    let callbacks = |m: &Machine| {
        events_of(m)
            .iter()
            .filter(|e| matches!(e, UmsEvent::CallbackDisconnect { .. }))
            .count()
    };
    assert_eq!(callbacks(&m), 0);
    let mut qb = okk(&m, UserQueue::new(kb, &config(0)));
    submit_wait(&m, &mut qb, &[fill(&tb, 9)]);
    assert_eq!(tb.mem.load(0), 9);
    assert_eq!(callbacks(&m), 2, "both of A's doorbells were victimised");
    // A's queues reconnect (taking the page back from B) and run.
    for (i, q) in qa.iter_mut().enumerate() {
        submit_wait(&m, q, &[fill(&ta, 20 + i as u64)]);
    }
    assert_eq!(ta.mem.load(0), 21);
    assert_eq!(callbacks(&m), 3, "B's doorbell was victimised once");
    drop((qa, qb));
    ok(&m, m.exit_process(&pa));
    exits_clean(&m, &pb);
}

// ---------------------------------------------------------------------------------------------
// Threaded.

/// UM-01, UM-19 threaded: two processes, each with user-mode queues on both engines and
/// fewer physical doorbells than queues, submit from their own threads; everything completes.
#[test]
fn um_19_threaded_two_processes_share_two_doorbells() {
    let m = with_doorbells(Mode::Threaded, 2);
    let procs: Vec<UmsProcess> = (0..2).map(|_| ok(&m, m.create_process(0))).collect();
    std::thread::scope(|s| {
        for p in &procs {
            let m = &m;
            s.spawn(move || {
                let k = m.kmt(p);
                let t = target(m, &k);
                let mut qs: Vec<_> = (0..2)
                    .map(|node| okk(m, UserQueue::new(k, &config(node))))
                    .collect();
                let mut last = [0u64; 2];
                for i in 0..50u64 {
                    for (n, q) in qs.iter_mut().enumerate() {
                        last[n] = okk(m, q.submit(&[fill64(t.gpu_va + 512 * n as u64, i)]));
                    }
                }
                for (n, q) in qs.iter().enumerate() {
                    okk(m, q.wait(last[n]));
                    assert_eq!(t.mem.load(512 * n as u64), 49);
                }
            });
        }
    });
    for p in &procs {
        ok(&m, m.exit_process(p));
    }
    let _ = Duration::from_secs(0);
    no_fault(&m);
}

// ---------------------------------------------------------------------------------------------
// The OS's own strictness.

/// The disconnect callback's arguments for `q` (the KMD's queue handle is not exposed; the OS
/// handles are accepted as a pair) and `reason`.
fn disconnect_args(
    m: &Machine,
    q: &common::ums::RawQueue,
    reason: rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS,
) -> rvgpu_ddi::dxgkrnl::DXGKARGCB_DISCONNECTDOORBELL {
    use rvgpu_ddi::dxgkrnl::{DXGKARGCB_DISCONNECTDOORBELL, DXGKARGCB_DISCONNECTDOORBELL_FLAGS};
    let info = m.doorbell_info(0, q.doorbell.handle).unwrap();
    DXGKARGCB_DISCONNECTDOORBELL {
        hHwQueue: m.hw_queue_os_object(0, q.queue.handle).unwrap() as _,
        hDoorbell: info.os_handle as _,
        Flags: DXGKARGCB_DISCONNECTDOORBELL_FLAGS::default(),
        DisconnectReason: reason,
    }
}

/// On a fresh machine with one user-mode queue whose doorbell is connected, hands `check` the
/// OS's `DxgkCbDisconnectDoorbell` and arguments naming that doorbell with `reason`.
fn with_disconnect_callback(
    reason: rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS,
    check: impl FnOnce(
        &Machine,
        &common::ums::RawQueue,
        rvgpu_ddi::dxgkrnl::DXGKCB_DISCONNECTDOORBELL,
        &mut rvgpu_ddi::dxgkrnl::DXGKARGCB_DISCONNECTDOORBELL,
    ),
) {
    let m = with_doorbells(Mode::Step, 2);
    let (_p, k) = user_process(&m);
    let q = connected_raw_queue(&m, &k, 0);
    let mut args = disconnect_args(&m, &q, reason);
    let cb = m.interface(0).unwrap().DxgkCbDisconnectDoorbell;
    check(&m, &q, cb, &mut args);
}

/// Calls the disconnect callback `cb` with `args` at PASSIVE_LEVEL, as the KMD would.
fn call_disconnect(
    m: &Machine,
    cb: rvgpu_ddi::dxgkrnl::DXGKCB_DISCONNECTDOORBELL,
    args: &mut rvgpu_ddi::dxgkrnl::DXGKARGCB_DISCONNECTDOORBELL,
) -> rvgpu_ddi::NTSTATUS {
    let cb = cb.unwrap();
    let _c = m.enter_context();
    // SAFETY: the OS's callback with a valid argument block.
    unsafe { cb(args) }
}

/// `DxgkCbDisconnectDoorbell` is PASSIVE_LEVEL: a driver calling it at DISPATCH_LEVEL gets
/// 0xA, as on Windows; a bad handle or reason is the driver's bug: `STATUS_INVALID_PARAMETER`
/// and the machine halts naming it.
#[test]
fn disconnect_doorbell_callback_irql_and_arguments_are_checked() {
    use rvgpu_simos::Irql;

    // Bad reason.
    with_disconnect_callback(D3DDDI_DOORBELLSTATUS_CONNECTED, |m, _q, cb, args| {
        let s = call_disconnect(m, cb, args);
        assert_eq!(s, STATUS_INVALID_PARAMETER);
        assert!(
            matches!(m.fault(), Some(SimError::Violation(msg)) if msg.contains("DisconnectReason"))
        );
    });

    // A good call at DISPATCH_LEVEL: 0xA.
    with_disconnect_callback(
        D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
        |m, _q, cb, args| {
            m.at_irql(Irql::Dispatch, |m| call_disconnect(m, cb, args));
            assert_eq!(m.bugcheck().map(|b| b.code), Some(0xA));
        },
    );

    // A good call at PASSIVE_LEVEL succeeds, and again on the disconnected doorbell.
    with_disconnect_callback(
        D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
        |m, q, cb, args| {
            for _ in 0..2 {
                let s = call_disconnect(m, cb, args);
                assert_eq!(s, 0);
            }
            let info = m.doorbell_info(0, q.doorbell.handle).unwrap();
            assert_eq!(info.mapped_page, None);
            assert_eq!(info.status, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY);
            // Bad handle.
            args.hDoorbell = 0x1234 as _;
            let s = call_disconnect(m, cb, args);
            assert_eq!(s, STATUS_INVALID_PARAMETER);
            assert!(
                matches!(m.fault(), Some(SimError::Violation(msg)) if msg.contains("hDoorbell"))
            );
        },
    );
}

/// UM-20 threaded: three processes churn user-mode queues (create, submit, wait, close) on
/// both engines with one physical doorbell, so connects of one process victimise doorbells of
/// another while that one submits, reconnects or destroys; every batch completes with the
/// right result and nothing faults.
#[test]
fn um_20_threaded_churn_across_processes_one_doorbell() {
    let m = with_doorbells(Mode::Threaded, 1);
    let procs: Vec<UmsProcess> = (0..3).map(|_| ok(&m, m.create_process(0))).collect();
    // All three connect before any closes its first queue, so victimisation across processes
    // happens however the host schedules the threads (a starved host once ran them one after
    // another and no connect found another process's doorbell).
    let connected = std::sync::Barrier::new(procs.len());
    std::thread::scope(|s| {
        for (pi, p) in procs.iter().enumerate() {
            let (m, connected) = (&m, &connected);
            s.spawn(move || {
                let k = m.kmt(p);
                let t = target(m, &k);
                for round in 0..20u64 {
                    let node = ((round + pi as u64) % 2) as u32;
                    let mut q = okk(m, UserQueue::new(k, &config(node)));
                    let mut last = 0;
                    for i in 0..4u64 {
                        last = okk(m, q.submit(&[fill(&t, round * 100 + i)]));
                        if round == 0 && i == 0 {
                            connected.wait();
                        }
                    }
                    okk(m, q.wait(last));
                    assert_eq!(t.mem.load(0), round * 100 + 3);
                    okk(m, q.close());
                }
            });
        }
    });
    for p in &procs {
        ok(&m, m.exit_process(p));
    }
    assert!(events_of(&m)
        .iter()
        .any(|e| matches!(e, UmsEvent::CallbackDisconnect { .. })));
    no_fault(&m);
}

/// UM-20 race, deterministic: process A's connect victimises process B's doorbell; B destroys
/// that doorbell exactly while the KMD is between choosing the victim and calling
/// `DxgkCbDisconnectDoorbell` (the KMD holds no lock there). Once `DxgkDdiDestroyDoorbell` has
/// returned the KMD must not name the doorbell again: on Windows its handle is a freed Dxgkrnl
/// object or, reused, another doorbell.
#[test]
fn um_20_destroy_racing_victimisation_never_uses_a_dead_handle() {
    let m = with_doorbells(Mode::Step, 1);
    let pa = ok(&m, m.create_process(0));
    let pb = ok(&m, m.create_process(0));
    let (ka, kb) = (m.kmt(&pa), m.kmt(&pb));
    let qb = connected_raw_queue(&m, &kb, 0);
    let qa = raw_queue(&m, &ka, 0);
    let victim = qb.doorbell.handle;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done2 = done.clone();
    let destroyer = std::sync::Arc::new(std::sync::Mutex::new(None));
    let destroyer2 = destroyer.clone();
    // The hook must be 'static; the machine outlives the connect that runs it and the
    // destroying thread (joined below).
    let machine_ptr = &m as *const Machine as usize;
    rvgpu_simos::ums::before_next_disconnect_callback(m.id(), move || {
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            // SAFETY: `m` is alive until this thread is joined at the end of the test.
            let m = unsafe { &*(machine_ptr as *const Machine) };
            let r = m.kmt(&pb).destroy_doorbell(victim);
            let _ = tx.send(());
            r
        });
        // A driver that makes the destroy wait for its in-flight callback blocks the destroy
        // here; a driver that does not lets it return before the callback is looked at.
        let _ = rx.recv_timeout(Duration::from_millis(300));
        *destroyer2.lock().unwrap() = Some(t);
        done2.store(true, std::sync::atomic::Ordering::Release);
    });
    let r = ka.connect_doorbell(qa.doorbell.handle);
    assert!(
        done.load(std::sync::atomic::Ordering::Acquire),
        "the hook ran"
    );
    let t = destroyer.lock().unwrap().take().expect("destroy started");
    let destroyed = t.join().expect("destroy thread");
    no_fault(&m);
    okk(&m, r);
    okk(&m, destroyed);
    assert!(m.doorbell_info(0, victim).is_none(), "destroyed");
    assert!(matches!(
        m.doorbell_info(0, qa.doorbell.handle).unwrap().state,
        DoorbellState::Connected { page: 0 }
    ));
    ok(&m, m.exit_process(&pa));
    exits_clean(&m, &pb);
}

/// UM-16, UM-19: far more submissions than the ring holds: the UMD wraps the ring and waits on
/// the progress fence for room; the KMD and device follow; the OS's last-queued value tracks
/// every batch and all of them complete, in order.
#[test]
fn um_16_ring_wraps_many_times() {
    let m = with_doorbells(Mode::Step, 2);
    let (p, k, t) = process_with_target(&m);
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    let mut last = 0;
    for i in 0..400u64 {
        last = okk(&m, q.submit(&[fill(&t, i)]));
    }
    okk(&m, q.wait(last));
    assert_eq!(t.mem.load(0), 399);
    assert_eq!(q.path(), SubmissionPath::UserMode);
    drop(q);
    exits_clean(&m, &p);
}

/// The OS tears live processes down (abnormal exits) before a PnP stop; the adapter then
/// stops, is removed and the driver unloads with nothing leaked.
#[test]
fn stop_with_live_processes_tears_them_down_without_leaks() {
    let mut m = with_doorbells(Mode::Step, 1);
    {
        let procs: Vec<UmsProcess> = (0..2).map(|_| ok(&m, m.create_process(0))).collect();
        for p in &procs {
            let k = m.kmt(p);
            let t = target(&m, &k);
            let mut q = okk(&m, UserQueue::new(k, &config(0)));
            okk(&m, q.submit(&[fill(&t, 1)]));
            let mut kq = okk(&m, KernelQueue::new(k, &config(1)));
            okk(&m, kq.submit(&[fill(&t, 2)]));
            std::mem::forget(q);
            std::mem::forget(kq);
        }
    }
    let r = m.stop_adapter(0);
    ok(&m, r);
    let ev = events_of(&m);
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, UmsEvent::DestroyDevice { .. }))
            .count(),
        2
    );
    let r = m.remove_adapter(0);
    ok(&m, r);
    let r = m.unload();
    ok(&m, r);
    no_fault(&m);
}

/// UM-17, leak check: after a process with user-mode and kernel-mode queues on both engines
/// exits, the KMD holds no more contiguous memory than before it started and no queue of it
/// is in a runlist.
#[test]
fn um_17_exit_leaves_no_kmd_memory_or_runlist_entries() {
    let m = with_doorbells(Mode::Step, 2);
    let before = m.contiguous_allocations(0);
    let (p, k, t) = process_with_target(&m);
    let mut ids = Vec::new();
    for node in 0..2 {
        let mut uq = okk(&m, UserQueue::new(k, &config(node)));
        let mut kq = okk(&m, KernelQueue::new(k, &config(node)));
        let v = okk(&m, uq.submit(&[fill(&t, 1)]));
        let w = okk(&m, kq.submit(&[fill(&t, 2)]));
        okk(&m, uq.wait(v));
        okk(&m, kq.wait(w));
        ids.push(uq.queue_id());
        ids.push(kq.queue_id());
        std::mem::forget(uq);
        std::mem::forget(kq);
    }
    assert!(m.contiguous_allocations(0) >= before);
    ok(&m, m.exit_process(&p));
    assert_eq!(
        m.contiguous_allocations(0),
        before,
        "the KMD freed what it allocated for the process's queues"
    );
    let live: Vec<u32> = m
        .device(0)
        .unwrap()
        .queues()
        .iter()
        .map(|s| s.queue_id)
        .collect();
    assert!(
        ids.iter().all(|id| !live.contains(id)),
        "{ids:?} vs {live:?}"
    );
    no_fault(&m);
}

/// UM-01: a full kernel-mode ring is never a device loss for a well-behaved process. Its first
/// DMA buffer waits on a native fence it signals later from the CPU; the 2,000 small buffers it
/// submits meanwhile are all accepted (held back beyond the ring, within the process's backlog
/// quota, docs/usermode-submission.md) and all run once it signals.
#[test]
fn um_01_a_full_kernel_mode_ring_holds_submissions_behind_a_gpu_wait() {
    let m = started(MachineConfig::single(Mode::Step));
    let (p, k) = user_process(&m);
    let f = ok(
        &m,
        m.create_native_fence(0, p.pid, NativeFenceDesc::default()),
    );
    let context = okk(&m, k.create_context(0));
    let mut pdd = hw_queue_pdd();
    let q = okk(&m, k.create_hw_queue(context, false, pdd.as_mut_bytes()));
    let t = okk(&m, k.create_allocation(4096));
    let buffer = |cmds: &[Command]| {
        let b = okk(&m, k.create_allocation_as(4096, AllocationKind::Commands));
        let mut words = [0u64; 16];
        let mut n = 0;
        for c in cmds {
            n += c.encode(&mut words[n..]).unwrap();
        }
        for (i, w) in words[..n].iter().enumerate() {
            b.mem.store(i as u64 * 8, *w);
        }
        (b, (n * 8) as u32)
    };
    let (wait, wait_bytes) = buffer(&[Command::FenceWait {
        addr: f.current_value_va(),
        value: 1,
    }]);
    okk(
        &m,
        k.submit_command_to_hw_queue(q.handle, 1, wait.gpu_va, wait_bytes),
    );
    let (small, small_bytes) = buffer(&[Command::Fill {
        dst: t.gpu_va,
        bytes: 8,
        pattern: 7,
    }]);
    for v in 2..=2001u64 {
        if let Err(e) = k.submit_command_to_hw_queue(q.handle, v, small.gpu_va, small_bytes) {
            panic!("submission {v} refused: {e:?}; {}", diagnostics(&m));
        }
    }
    assert!(
        !m.ums_events(0)
            .iter()
            .any(|e| matches!(e, UmsEvent::DeviceError { .. })),
        "no device error"
    );
    ok(&m, m.signal_native_fence_from_cpu(&f, 1));
    okk(&m, k.wait_for_fence(q.progress_fence().unwrap(), 2001));
    assert_eq!(t.mem.load(0), 7);
    drop(q);
    exits_clean(&m, &p);
}

/// UM-01, MF-03: the UMD's kernel-mode queue holds as much behind a GPU wait as the KMD does:
/// a batch waits on the GPU for a native fence the caller signals only later, then 20,000
/// one-FILL batches (2,000 on the image, where each is a DDI in the emulator) go in without a
/// wait (with 4 KiB command buffers a queue that waited for buffers behind the gate would
/// stop at batch 1,024, in STATUS_IO_TIMEOUT). All run, in order, once the caller signals.
#[test]
fn um_01_umd_kernel_queue_holds_20000_batches_behind_a_gpu_wait() {
    let pe = matches!(
        rvgpu_simos::pe::DriverBuild::from_env(),
        rvgpu_simos::pe::DriverBuild::Pe(_)
    );
    let batches = if pe { 2_000u64 } else { 20_000 };
    for mode in [Mode::Step, Mode::Threaded] {
        let m = started(MachineConfig::single(mode));
        let (p, k) = user_process(&m);
        let desc = NativeFenceDesc::default();
        let gate = ok(&m, m.create_native_fence(0, p.pid, desc));
        let t = okk(&m, k.create_allocation(4096));
        let mut q = okk(&m, KernelQueue::new(k, &config(0)));
        let (addr, value) = (gate.current_value_va(), 1);
        okk(&m, q.submit(&[Command::FenceWait { addr, value }]));
        let mut last = 0;
        for n in 1..=batches {
            last = match q.submit(&[fill(&t, n)]) {
                Ok(v) => v,
                Err(e) => panic!("{mode:?}: batch {n} refused: {e:?}; {}", diagnostics(&m)),
            };
        }
        assert_eq!(t.mem.load(0), 0, "nothing ran past the gate");
        ok(&m, m.signal_native_fence_from_cpu(&gate, 1));
        okk(&m, q.wait(last));
        assert_eq!(t.mem.load(0), batches, "the last FILL ran last");
        drop(q);
        exits_clean(&m, &p);
    }
}

against_the_pe_image!();

// ---------------------------------------------------------------------------------------------
// Hostile progress: a process that lies about its progress and exits normally.

/// How the hostile process lies about its progress before a normal exit.
#[derive(Clone, Copy, Debug)]
enum Lie {
    /// Its last-queued value (a page the process writes) says `u64::MAX`.
    LastQueuedMax,
    /// PROGRESS 5 then PROGRESS 0: the GPU writes the progress fence back below what the
    /// process said it queued.
    ProgressBack,
}

/// The lies are in what the OS reads of a user-mode queue's progress (UM-16, UM-17): an OS
/// that gives the queue its progress fence and last-queued cell (24H2 gives neither, so has
/// nothing to be lied to about).
fn lying_exit(mode: Mode, lie: Lie) {
    let mut cfg = MachineConfig::single(mode);
    cfg.os.windows = rvgpu_simos::Windows::from_env().answering(|r| {
        r.ums_progress = UmsProgress::Given;
        r.teardown = Teardown::QueuesFirst;
    });
    cfg.adapters[0].device.doorbells = 4;
    // Threaded mode waits in real time: a short exit wait keeps the test short, long enough
    // for the victim's own waits on a loaded machine.
    cfg.os.wait_timeout = Duration::from_secs(2);
    let m = started(cfg);
    let (victim, kv, vt) = process_with_target(&m);
    let mut vq = okk(&m, UserQueue::new(kv, &config(0)));
    submit_wait(&m, &mut vq, &[fill(&vt, 1)]);

    let (p, k, t) = process_with_target(&m);
    let q = connected_raw_queue(&m, &k, 0);
    let wp = write_ring(&q, 0, &[fill(&t, 7)], 5);
    q.doorbell.cpu.ring(wp);
    okk(&m, k.wait_for_fence(q.done_fence(), 5));
    match lie {
        Lie::LastQueuedMax => q.doorbell.cpu.set_last_queued(u64::MAX),
        Lie::ProgressBack => {
            let wp = write_ring(&q, wp, &[], 0);
            q.doorbell.cpu.set_last_queued(5);
            q.doorbell.cpu.ring(wp);
            if mode == Mode::Step {
                ok(&m, m.run_until_idle());
            }
            // Until the GPU wrote the fence back (threaded mode: the device runs on its own).
            let t0 = std::time::Instant::now();
            while q.done_value(&m) != 0 {
                assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "PROGRESS 0 never ran"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    // The exit completes; the liar is charged (its device in error), nothing stops.
    let r = m.exit_process(&p);
    assert_eq!(r, Ok(()), "{lie:?} {mode:?}: {}", diagnostics(&m));
    no_fault(&m);
    assert!(
        m.ums_events(0)
            .contains(&UmsEvent::DeviceError { device: p.device }),
        "{lie:?} {mode:?}: the liar's device is put in error"
    );
    assert!(!m.ums_events(0).contains(&UmsEvent::DeviceError {
        device: victim.device
    }));
    // Every other process is untouched: its queue still runs.
    submit_wait(&m, &mut vq, &[fill(&vt, 2)]);
    assert_eq!(vt.mem.load(0), 2);
    drop(vq);
    exits_clean(&m, &victim);
}

#[test]
fn exit_after_lying_last_queued_value_step() {
    lying_exit(Mode::Step, Lie::LastQueuedMax);
}

#[test]
fn exit_after_progress_written_back_step() {
    lying_exit(Mode::Step, Lie::ProgressBack);
}

#[test]
fn exit_after_lying_progress_threaded() {
    lying_exit(Mode::Threaded, Lie::LastQueuedMax);
    lying_exit(Mode::Threaded, Lie::ProgressBack);
}

under_the_pages!(image);
