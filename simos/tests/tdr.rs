//! Timeout detection and recovery (TDR-01 … TDR-09, UM-10) end to end: the simulated
//! VidSch/VidMm of `rvgpu_simos::{legacy, tdr}` against the real KMD and the emulated GPU.
//! Test names carry the requirement ID (docs/tdr.md#the-simulated-os). TDR-01's capabilities and
//! debug dumps are `tdr_dump`; the fixtures both share are `common::tdr`.

mod common;

use common::tdr::*;
use common::*;
use std::time::Duration;

use rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::regs;
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::testing::tdr::{self as testing_tdr, Misreport};
use rvgpu_simos::{Cause, Machine, MachineConfig, Mode, SimError, TdrConfig, TdrEvent, TdrReason};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, DeviceExecutionState, Kmt};
use rvgpu_umd::submit::UserQueue;

// ---------------------------------------------------------------------------------------------
// TDR-02: nodes, affinity, dependent groups.

/// TDR-02: one node per engine; every node's dependent group is the node alone; a context can
/// be created on every node.
#[test]
fn tdr_02_nodes_and_affinity() {
    for engines in [1u32, 2, 16] {
        let m = machine_with(Mode::Step, |a| a.device.engines = engines);
        let caps = ok(&m, m.query_driver_caps(0));
        assert_eq!(caps.GpuEngineTopology.NbAsymetricProcessingNodes, engines);
        let (_p, k) = user_process(&m);
        for n in 0..engines {
            assert_eq!(ok(&m, m.query_dependent_engine_group(0, n)), 1u64 << n);
            okk(&m, k.create_context(n));
        }
        no_fault(&m);
    }
}

// ---------------------------------------------------------------------------------------------
// TDR-03, TDR-04, TDR-05.

/// TDR-05: the full sequence in step mode, in order; the hung DMA buffer's device goes to
/// error; the node runs new work afterwards.
#[test]
fn tdr_05_sequence_step_mode() {
    let m = sw_tdr_machine(Mode::Step, |_| {});
    let (p, k, ctx) = process_with_context(&m);
    let t = okk(&m, k.create_allocation(4096));
    let f1 = ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 7)]));
    run_until(&m, "first fill", |m| all_done(m, 0));
    assert_eq!(t.mem.load(0), 7);
    let hang = ok(&m, m.submit_legacy(&p, ctx, &[Command::Hang]));
    assert_eq!(hang, f1 + 1);
    // The node ring is in the runlist above every hardware-queue priority (the OS's node-ring
    // postcondition after ResetEngine relies on finding it).
    let e = m.device(0).unwrap().engine_snapshot(0).unwrap();
    assert!(
        e.queues
            .iter()
            .any(|q| q.priority > rvgpu_hw::pdd::HW_QUEUE_PRIORITY_MAX),
        "{e:?}"
    );
    run_until(&m, "engine reset", |m| resets(m) == 1);
    let ev = m.tdr_events(0);
    let order = [
        pos(&ev, |e| matches!(e, TdrEvent::Detected { node: 0, .. })),
        pos(&ev, |e| {
            matches!(e, TdrEvent::PreemptRequested { node: 0, .. })
        }),
        pos(&ev, |e| matches!(e, TdrEvent::Timeout { node: 0 })),
        pos(&ev, is_engine_report),
        pos(
            &ev,
            |e| matches!(e, TdrEvent::Snapshot { node: 0, submitted, completed } if *submitted == hang && *completed == f1),
        ),
        pos(&ev, |e| matches!(e, TdrEvent::DpcFlushed { node: 0 })),
        pos(&ev, |e| {
            matches!(e, TdrEvent::DependentGroup { node: 0, mask: 1 })
        }),
        pos(&ev, |e| matches!(e, TdrEvent::EngineStatus { node: 0, .. })),
        pos(
            &ev,
            |e| matches!(e, TdrEvent::ResetEngine { node: 0, status: 0, last_aborted } if *last_aborted == hang),
        ),
        pos(
            &ev,
            |e| matches!(e, TdrEvent::Aborted { node: 0, fence, paging: false } if *fence == hang),
        ),
        pos(&ev, |e| matches!(e, TdrEvent::Recovered { node: 0 })),
        pos(
            &ev,
            |e| matches!(e, TdrEvent::DeviceError { device, .. } if *device == p.device),
        ),
    ];
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "order {order:?}: {ev:#?}"
    );
    assert!(!ev.iter().any(|e| matches!(e, TdrEvent::Preempted { .. })));
    assert_eq!(m.tdr_reason(0), Some(TdrReason::EngineTimeout));
    // TDR-04: last completed = LastAbortedFenceId after the reset, in the OS and the KMD.
    assert_eq!(m.legacy_fences(0, 0), (hang, hang));
    assert_eq!(ok(&m, m.query_current_fence(0, 0)), hang);
    // The errored device submits nothing more; another process runs on the node.
    assert_eq!(
        m.submit_legacy(&p, ctx, &[fill(&t, 0, 8)]).err(),
        Some(SimError::DdiFailed(STATUS_DEVICE_REMOVED))
    );
    let (q, kq, cq) = process_with_context(&m);
    let tq = okk(&m, kq.create_allocation(4096));
    let id = ok(&m, m.submit_legacy(&q, cq, &[fill(&tq, 0, 9)]));
    assert!(id > hang);
    run_until(&m, "new work", |m| all_done(m, 0));
    assert_eq!(tq.mem.load(0), 9);
    no_fault(&m);
}

/// TDR-05 (the pages' sequence): the packet completed before the snapshot: nothing to reset,
/// no ResetEngine. 24H2 has no such step for a hardware-scheduled node: it resets the hung
/// node whatever the snapshot says (`tdr_24h2_*`).
#[test]
fn tdr_05_nothing_to_reset() {
    // Kernel-mode DMA from a process: a software-scheduled node (24H2 refuses
    // `D3DKMTSubmitCommand` on a hardware-scheduled one's contexts).
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = rvgpu_simos::Windows::PAGES;
    cfg.adapters[0].hwsch_feature = false;
    let m = started(cfg);
    enable_tdr(&m, fast());
    let (p, k, ctx) = process_with_context(&m);
    let t = okk(&m, k.create_allocation(4096));
    ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 1)]));
    run_until(&m, "fill", |m| all_done(m, 0));
    ok(&m, m.force_tdr(0, 0));
    let ev = m.tdr_events(0);
    assert!(
        ev.contains(&TdrEvent::NothingToReset { node: 0 }),
        "{ev:#?}"
    );
    assert!(!ev.iter().any(|e| matches!(e, TdrEvent::ResetEngine { .. })));
    assert_eq!(resets(&m), 0);
    no_fault(&m);
}

/// TDR-04: 24H2 takes a `DmaPreempted` whose LastCompletedFenceId is ahead of the OS's last
/// completed ID but inside its [C, S] window, and retires the packets up to it before the
/// preempted one (`M:VidSchDdiNotifyInterruptWorker` @0x140006B60, type 2); only a value
/// outside the window is bug check 0x119. A stand-in `DxgkDdiPreemptCommand` claims the FILL
/// whose completion interrupt was lost, with no `DmaCompleted` before.
#[test]
fn tdr_04_a_preemption_report_ahead_of_the_os_completes_up_to_it() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].hwsch_feature = false;
    let m = started_with(cfg, testing_tdr::claim_on_preempt);
    enable_tdr(&m, fast());
    let (p, k, ctx) = process_with_context(&m);
    let t = okk(&m, k.create_allocation(4096));
    ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 1)]));
    run_until(&m, "the first FILL", |m| all_done(m, 0));
    m.device(0).expect("device").drop_next_interrupt();
    let id = ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 8, 2)]));
    testing_tdr::preempt_claims(id);
    run_until(&m, "the FILL ran", |_| t.mem.load(8) == 2);
    assert_eq!(
        m.legacy_fences(0, 0),
        (id, id - 1),
        "its completion was not reported"
    );
    run_until(&m, "the FILL retired", |m| {
        m.legacy_fences(0, 0) == (id, id)
    });
    no_fault(&m);
    let ev = m.tdr_events(0);
    assert!(
        !ev.iter().any(|e| matches!(e, TdrEvent::ResetEngine { .. })),
        "{ev:#?}"
    );
}

/// TDR-03: a render packet hangs with two paging packets and a render packet of other
/// processes queued behind it: the paging packets are resubmitted first with their original
/// IDs, in order, then the render packet with a new ID; all complete once.
#[test]
fn tdr_03_paging_first_original_ids() {
    let m = sw_tdr_machine(Mode::Step, |_| {});
    let (a, b, c) = (
        ok(&m, m.create_process(0)),
        ok(&m, m.create_process(0)),
        ok(&m, m.create_process(0)),
    );
    let (ka, kb, kc) = (m.kmt(&a), m.kmt(&b), m.kmt(&c));
    let ca = okk(&m, ka.create_context(0));
    let cc = okk(&m, kc.create_context(0));
    let tb = okk(&m, kb.create_allocation(8192));
    let tc = okk(&m, kc.create_allocation(4096));
    // C's buffer made resident by a first fill, so that no paging for it falls between the
    // submissions whose IDs are compared (24H2 maps it at the UMD's Map, not at create).
    ok(&m, m.submit_legacy(&c, cc, &[fill(&tc, 0, 0x01)]));
    run_until(&m, "the warming fill", |m| all_done(m, 0));
    let hang = ok(&m, m.submit_legacy(&a, ca, &[Command::Hang]));
    let p1 = ok(
        &m,
        m.page_in(&b, 0, rvgpu_hw::addr::GpuVa::new(tb.gpu_va), 4096, 0x11),
    );
    let p2 = ok(
        &m,
        m.page_in(
            &b,
            0,
            rvgpu_hw::addr::GpuVa::new(tb.gpu_va + 4096),
            4096,
            0x22,
        ),
    );
    let r = ok(&m, m.submit_legacy(&c, cc, &[fill(&tc, 0, 0x33)]));
    let (p1, p2) = (p1[0], p2[0]);
    assert_eq!((p1, p2, r), (hang + 1, hang + 2, hang + 3));
    run_until(&m, "reset and resubmission", |m| {
        resets(m) == 1 && all_done(m, 0)
    });
    let ev = m.tdr_events(0);
    let resub: Vec<(u32, u32, bool)> = ev
        .iter()
        .filter_map(|e| match e {
            TdrEvent::Resubmitted {
                old, new, paging, ..
            } => Some((*old, *new, *paging)),
            _ => None,
        })
        .collect();
    assert_eq!(resub.len(), 3, "{ev:#?}");
    assert_eq!(resub[0], (p1, p1, true));
    assert_eq!(resub[1], (p2, p2, true));
    assert_eq!(resub[2].0, r);
    assert!(
        !resub[2].2 && resub[2].1 > r,
        "render packet gets a new ID > S"
    );
    // Completion order: the paging packets, then the render packet, each once.
    let done: Vec<u32> = completed_on_node0(&m);
    let tail: Vec<u32> = done.iter().copied().filter(|id| *id > hang).collect();
    assert_eq!(tail, vec![p1, p2, resub[2].1], "completed {done:?}");
    assert_eq!(tb.mem.load(0), 0x11_0000_0011);
    assert_eq!(tb.mem.load(4096), 0x22_0000_0022);
    assert_eq!(tc.mem.load(0), 0x33);
    no_fault(&m);
}

/// TDR-04: the last completed fence advances only on completion; `DmaPreempted` carries the
/// OS's last completed ID (a slow, not hung, DMA buffer is preempted, not reset).
#[test]
fn tdr_04_last_completed_fence() {
    let m = machine_with(Mode::Step, |a| a.hwsch_feature = false);
    enable_tdr_steps(&m, 2, 100_000);
    let (p, k, ctx) = process_with_context(&m);
    let t = okk(&m, k.create_allocation(4096));
    let big = okk(&m, k.create_allocation(1 << 20));
    let f1 = ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 1)]));
    assert_eq!(
        m.legacy_fences(0, 0),
        (f1, 0),
        "not completed before it runs"
    );
    run_until(&m, "fill", |m| all_done(m, 0));
    assert_eq!(m.legacy_fences(0, 0), (f1, f1));
    assert_eq!(ok(&m, m.query_current_fence(0, 0)), f1);
    let f2 = ok(
        &m,
        m.submit_legacy(&p, ctx, &[fill_range(big.gpu_va, 1 << 20, 5)]),
    );
    run_until(&m, "preempted", |m| all_done(m, 0));
    let ev = m.tdr_events(0);
    // The last preemption (the first DMA buffer may have been preempted too: the timeout is
    // two rounds).
    let pre = ev.iter().rev().find_map(|e| match e {
        TdrEvent::Preempted { last_completed, .. } => Some(*last_completed),
        _ => None,
    });
    assert_eq!(pre, Some(f2), "DmaPreempted after the drain: {ev:#?}");
    assert_eq!(resets(&m), 0);
    assert_eq!(m.legacy_fences(0, 0), (f2, f2));
    no_fault(&m);
}

// ---------------------------------------------------------------------------------------------
// TDR-06.

/// TDR-06 on the two kinds of node. LastAbortedFenceId exists only on the software-scheduled
/// path, whose work is all node-ring DMA buffers (its aborted packet = the hang's ID:
/// tdr_05_sequence_step_mode; nothing in flight: tdr_07). Hardware queues exist only on
/// hardware-scheduled nodes (BR-94), and a hang there is reset through DxgkDdiResetHwEngine,
/// which has no fence ID (docs/hws.md §3): no DxgkDdiResetEngine, the guilty context named.
#[test]
fn tdr_06_hw_queue_hang_resets_through_reset_hw_engine() {
    let m = tdr_machine(Mode::Step, |_| {});
    let h = hang_a_user_queue_until_resumed(&m);
    let ev = m.tdr_events(0);
    assert!(
        ev.iter()
            .any(|e| matches!(e, TdrEvent::ResetHwEngine { node: 0, status: 0 })),
        "{ev:#?}"
    );
    assert!(
        !ev.iter().any(|e| matches!(e, TdrEvent::ResetEngine { .. })),
        "no Windows 8 reset on a hardware-scheduled node: {ev:#?}"
    );
    assert!(
        ev.iter()
            .any(|e| matches!(e, TdrEvent::Invalidated { device } if *device == h.device)),
        "KMD named the guilty context: {ev:#?}"
    );
    no_fault(&m);
}

/// The driver's `DxgkDdiResetHwEngine`, the machine and the guilty process, for
/// [`reset_hw_engine_reads_the_guilty_state`].
static DRIVER_RESET_HW_ENGINE: std::sync::OnceLock<rvgpu_ddi::hws::PDXGKDDI_RESETHWENGINE> =
    std::sync::OnceLock::new();
static RESET_MACHINE: std::sync::atomic::AtomicPtr<Machine> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
static RESET_GUILTY: std::sync::Mutex<Option<rvgpu_simos::UmsProcess>> =
    std::sync::Mutex::new(None);
/// What the guilty device's execution state was when the driver's reset returned.
static STATE_AT_RESET: std::sync::Mutex<Option<Result<DeviceExecutionState, String>>> =
    std::sync::Mutex::new(None);

/// Runs the driver's `DxgkDdiResetHwEngine` (which names the guilty context through
/// `DxgkCbInvalidateHwContext`, then aborts its device's doorbells), then asks the OS for the
/// guilty device's execution state, as the program that reads DISCONNECTED_ABORT next would.
unsafe extern "system" fn reset_hw_engine_reads_the_guilty_state(
    ctx: rvgpu_ddi::basic::HANDLE,
    args: *mut rvgpu_ddi::hws::DXGKARG_RESETHWENGINE,
) -> rvgpu_ddi::basic::NTSTATUS {
    let Some(Some(reset)) = DRIVER_RESET_HW_ENGINE.get().copied() else {
        return rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL;
    };
    // SAFETY: the OS's own call, passed on unchanged to the driver's routine.
    let st = unsafe { reset(ctx, args) };
    let m = RESET_MACHINE.load(std::sync::atomic::Ordering::Acquire);
    let guilty = *RESET_GUILTY.lock().unwrap();
    if let (false, Some(g)) = (m.is_null(), guilty) {
        // SAFETY: the test stores the machine before it hangs the queue and clears it only
        // after the reset; the machine outlives both.
        let m = unsafe { &*m };
        let state = m
            .kmt(&g)
            .device_execution_state()
            .map_err(|e| format!("{e:?}"));
        *STATE_AT_RESET.lock().unwrap() = Some(state);
    }
    st
}

/// UM-10: 24H2's `DxgkCbInvalidateHwContext` (`M:VidSchInvalidateHwContext` @0x1400521E0)
/// puts the named context's device in error as hung (7) inside the callback. The KMD names the
/// guilty context before it aborts the device's doorbells, so from the abort on the device
/// answers HUNG: a program that reads DISCONNECTED_ABORT and falls back to a kernel-mode
/// submission (UM-19) is refused as a hung device's, never counted a device whose submission
/// the driver refused (DMAPAGEFAULT).
#[test]
fn um_10_a_guilty_device_is_hung_from_the_context_s_invalidation_on() {
    let m = started_with(MachineConfig::single(Mode::Step), |t| {
        let _ = DRIVER_RESET_HW_ENGINE.set(t.DxgkDdiResetHwEngine);
        t.DxgkDdiResetHwEngine = Some(reset_hw_engine_reads_the_guilty_state);
    });
    enable_tdr(&m, fast());
    let h = ok(&m, m.create_process(0));
    *RESET_GUILTY.lock().unwrap() = Some(h);
    RESET_MACHINE.store(
        &m as *const Machine as *mut Machine,
        std::sync::atomic::Ordering::Release,
    );
    let mut uq = okk(&m, UserQueue::new(m.kmt(&h), &config(0)));
    okk(&m, uq.submit(&[Command::Hang]));
    run_until(&m, "reset", |m| {
        m.tdr_events(0)
            .iter()
            .any(|e| matches!(e, TdrEvent::ResumeHwEngine { .. }))
    });
    RESET_MACHINE.store(std::ptr::null_mut(), std::sync::atomic::Ordering::Release);
    std::mem::forget(uq);
    assert_eq!(
        STATE_AT_RESET.lock().unwrap().take(),
        Some(Ok(DeviceExecutionState::HUNG)),
        "the guilty device when the driver's reset returned\n{}",
        diagnostics(&m)
    );
    no_fault(&m);
}

/// TDR-06: a ResetEngine returning S + 1 is bug check 0x119 (0xA, LastAborted, C,
/// node); the machine is frozen.
#[test]
fn tdr_06_bad_aborted_fence_bugchecks() {
    // S + 1: a legacy hang (LastAborted would be S).
    let mut m = Machine::new({
        let mut c = MachineConfig::single(Mode::Step);
        c.adapters[0].hwsch_feature = false;
        c
    });
    m.load_driver_with(|t| testing_tdr::misreport_aborted(t, Misreport::Plus(1)))
        .expect("load");
    m.start_adapter(0).expect("start");
    enable_tdr(&m, fast());
    let (p, _k, ctx) = process_with_context(&m);
    let hang = ok(&m, m.submit_legacy(&p, ctx, &[Command::Hang]));
    let r = m.run_until(20_000, Duration::from_secs(20), |_| false);
    let b = m
        .bugcheck()
        .unwrap_or_else(|| panic!("no bug check: {r:?}"));
    assert_eq!(b.code, 0x119);
    assert_eq!(b.params, [0xA, u64::from(hang) + 1, 0, 0]);
    assert!(m.device(0).unwrap().is_frozen());
    // (The C - 1 form needed an answer of LastAborted = C, which only a hardware-queue hang
    // gave; hardware queues are reset through DxgkDdiResetHwEngine now, docs/hws.md §3.)
}

// ---------------------------------------------------------------------------------------------
// TDR-07.

/// TDR-07: the long FILL completes between the snapshot and the reset (step mode, pause hook):
/// ResetEngine finds nothing in flight and returns S; the OS still errors that device.
#[test]
fn tdr_07_completed_between_snapshot_and_reset() {
    let m = machine_with(Mode::Step, |a| a.hwsch_feature = false);
    // Set up before the two-round timeout is armed: VidMm's paging (mapping the allocation
    // and the process's DMA-buffer arena) takes longer than that.
    let (p, k, ctx) = process_with_context(&m);
    let big = okk(&m, k.create_allocation(4 << 20));
    ok(&m, m.submit_legacy(&p, ctx, &[Command::Nop { len: 1 }]));
    run_until(&m, "warm-up", |m| all_done(m, 0));
    enable_tdr_steps(&m, 2, 1);
    ok(
        &m,
        m.set_tdr_pause(
            0,
            Some(|d: &std::sync::Arc<rvgpu_device::Device>| {
                for _ in 0..1_000_000 {
                    if !d.engine_snapshot(0).is_some_and(|e| e.has_work) {
                        break;
                    }
                    d.step();
                }
            }),
        ),
    );
    let id = ok(
        &m,
        m.submit_legacy(&p, ctx, &[fill_range(big.gpu_va, 4 << 20, 0x77)]),
    );
    run_until(&m, "reset", |m| resets(m) == 1);
    let ev = m.tdr_events(0);
    assert!(ev.contains(&TdrEvent::Paused { node: 0 }), "{ev:#?}");
    assert!(
        ev.iter().any(|e| matches!(e, TdrEvent::Snapshot { node: 0, submitted, completed } if *submitted == id && *completed == id - 1)),
        "{ev:#?}"
    );
    assert!(
        ev.iter().any(|e| matches!(e, TdrEvent::ResetEngine { node: 0, status: 0, last_aborted } if *last_aborted == id)),
        "{ev:#?}"
    );
    assert!(device_error(&ev, &p));
    // TDR-05: the completion interrupt that arrived between the snapshot and the reset was
    // recorded as ignored, not processed.
    assert!(
        ev.iter().any(
            |e| matches!(e, TdrEvent::IgnoredInterrupt { node: 0, fence, .. } if *fence == id)
        ),
        "{ev:#?}"
    );
    assert_eq!(big.mem.load((4 << 20) - 8), 0x77, "the FILL did complete");
    assert_eq!(m.legacy_fences(0, 0), (id, id));
    ok(&m, m.run_steps(50));
    no_fault(&m);
}

// ---------------------------------------------------------------------------------------------
// TDR-08, TDR-09.

/// TDR-08: a hang hits a paging FILL mid-way: adapter-wide reset, reason 9, the owner of the
/// paged allocation in error, an idle process's device reset with the adapter; the system
/// context and a device created after the reset run new work.
#[test]
fn tdr_08_paging_hang_promotes() {
    let m = sw_tdr_machine(Mode::Step, |_| {});
    let (owner, idle) = two_processes(&m);
    let ko = m.kmt(&owner);
    let ki = m.kmt(&idle);
    let big = okk(&m, ko.create_allocation(4 << 20));
    let ids = ok(
        &m,
        m.page_in(
            &owner,
            0,
            rvgpu_hw::addr::GpuVa::new(big.gpu_va),
            4 << 20,
            0x5A,
        ),
    );
    assert!(!ids.is_empty());
    // Step until the paging FILL is part-way, then hang the engine.
    let d = m.device(0).unwrap().clone();
    let system_root = d.read64(regs::SYSTEM_PAGE_TABLE_BASE);
    assert_ne!(system_root, 0);
    let mut hung = false;
    for _ in 0..100_000 {
        ok(&m, m.run_steps(1));
        let mid = d
            .engine_snapshot(0)
            .is_some_and(|e| e.queues.iter().any(|q| q.indirect.is_some()));
        if mid {
            d.inject_hang(0);
            hung = true;
            break;
        }
    }
    assert!(hung, "the paging FILL never started");
    run_until(&m, "adapter reset", |m| adapter_resets(m) == 1);
    let ev = m.tdr_events(0);
    assert!(
        ev.iter().any(|e| matches!(
            e,
            TdrEvent::Aborted {
                node: 0,
                paging: true,
                ..
            }
        )),
        "{ev:#?}"
    );
    assert_eq!(
        m.tdr_reason(0),
        Some(TdrReason::EngineTimeoutPromotedToAdapterReset)
    );
    assert_eq!(TdrReason::EngineTimeoutPromotedToAdapterReset as u32, 9);
    assert!(ev.contains(&TdrEvent::Restarted));
    // The adapter reset zeroed it; RestartFromTimeout gave the paging process its root back.
    assert_eq!(d.read64(regs::SYSTEM_PAGE_TABLE_BASE), system_root);
    assert!(device_error(&ev, &owner));
    assert!(!device_error(&ev, &idle));
    let (s, c) = m.legacy_fences(0, 0);
    assert_eq!(s, c, "TDR-04: C = S after the adapter reset");
    // Every device was reset with the adapter, the idle one too (UM-10).
    assert!(ev.contains(&TdrEvent::DeviceReset {
        device: idle.device
    }));
    assert_eq!(ki.device_execution_state(), Ok(DeviceExecutionState::RESET));
    // The system context and a device created now run new work.
    let (fresh, kf) = user_process(&m);
    let ti = okk(&m, kf.create_allocation(8192));
    let ci = okk(&m, kf.create_context(0));
    ok(
        &m,
        m.page_in(&fresh, 0, rvgpu_hw::addr::GpuVa::new(ti.gpu_va), 4096, 0x66),
    );
    ok(&m, m.submit_legacy(&fresh, ci, &[fill(&ti, 4096, 0x67)]));
    run_until(&m, "new work", |m| all_done(m, 0));
    assert_eq!(ti.mem.load(0), 0x66_0000_0066);
    assert_eq!(ti.mem.load(4096), 0x67);
    no_fault(&m);
}

/// TDR-09: the engine reset fails: no KMD state changed, ResetFromTimeout/RestartFromTimeout,
/// reason 9; new work completes on both engines.
#[test]
fn tdr_09_failed_reset_falls_back() {
    let m = sw_tdr_machine(Mode::Step, |_| {});
    let (p, _k, ctx) = process_with_context(&m);
    m.device(0).unwrap().fail_next_reset(0);
    let hang = ok(&m, m.submit_legacy(&p, ctx, &[Command::Hang]));
    run_until(&m, "adapter reset", |m| adapter_resets(m) == 1);
    let ev = m.tdr_events(0);
    let failed = pos(
        &ev,
        |e| matches!(e, TdrEvent::ResetEngine { node: 0, status, .. } if *status < 0),
    );
    let reset = pos(&ev, |e| matches!(e, TdrEvent::AdapterReset { .. }));
    let restart = pos(&ev, |e| matches!(e, TdrEvent::Restarted));
    assert!(failed < reset && reset < restart, "{ev:#?}");
    assert_eq!(
        m.tdr_reason(0),
        Some(TdrReason::EngineTimeoutPromotedToAdapterReset)
    );
    assert_eq!(m.legacy_fences(0, 0), (hang, hang), "TDR-04: C = S");
    assert_eq!(
        ok(&m, m.query_current_fence(0, 0)),
        hang,
        "the KMD's C = S too"
    );
    assert!(device_error(&ev, &p));
    let (q, kq) = user_process(&m);
    let t = okk(&m, kq.create_allocation(4096));
    for node in 0..2 {
        let c = okk(&m, kq.create_context(node));
        ok(
            &m,
            m.submit_legacy(
                &q,
                c,
                &[fill(&t, 8 * u64::from(node), 0x90 + u64::from(node))],
            ),
        );
    }
    run_until(&m, "both engines", |m| all_done(m, 0) && all_done(m, 1));
    assert_eq!((t.mem.load(0), t.mem.load(8)), (0x90, 0x91));
    no_fault(&m);
}

/// TDR-09: a device without per-engine reset: only the adapter-wide path is used.
#[test]
fn tdr_09_no_per_engine_reset_is_refused_at_start() {
    // Adapter-wide recovery is the only TDR a device without PER_ENGINE_RESET could have, and
    // a Windows that validates WDDM caps does not start such an adapter (BR-52: per-engine TDR
    // is a mandatory WDDM 1.2 feature of a hardware adapter). The adapter-wide path stays
    // covered where a per-engine reset fails (tdr_09_failed_reset_falls_back).
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.validate_wddm_caps = true;
    cfg.adapters[0].device.per_engine_reset = false;
    let mut m = Machine::new(cfg);
    m.load_driver().expect("load");
    assert!(matches!(
        m.start_adapter(0),
        Err(SimError::StartRefused { rule: "BR-52", .. })
    ));
    assert!(m.driver_log().iter().any(|l| l.text.contains("BR-52")));
}

// ---------------------------------------------------------------------------------------------
// Other engines and other processes keep running.

/// Commands the UMD's user-mode queue adds to a submission of one FILL, measured.
fn commands_per_fill(
    m: &Machine,
    uq: &mut UserQueue<SimKmt<'_>>,
    t: &Allocation<SimMem>,
    node: u32,
) -> u64 {
    let d = m.device(0).unwrap();
    let before = d.completed_commands(node);
    let v = okk(m, uq.submit(&[fill(t, 0, 0)]));
    run_until(m, "calibration", |_| uq.completed() >= v);
    d.completed_commands(node) - before
}

/// A hardware-queue HANG on node 0: the copy node keeps completing during detection and reset;
/// none of its submissions is lost or runs twice (progress values, memory markers and
/// COMPLETED_COMMANDS).
#[test]
fn tdr_compute_hang_copy_keeps_completing() {
    let m = tdr_machine(Mode::Step, |_| {});
    let h = ok(&m, m.create_process(0));
    let (c, kc) = user_process(&m);
    let t = okk(&m, kc.create_allocation(64 * 1024));
    let mut copy = okk(&m, UserQueue::new(kc, &config(1)));
    // Created before the count starts: mapping its ring is paging work on the copy node.
    let mut hq = okk(&m, UserQueue::new(m.kmt(&h), &config(0)));
    let per = commands_per_fill(&m, &mut copy, &t, 1);
    let base = m.device(0).unwrap().completed_commands(1);
    okk(&m, hq.submit(&[Command::Hang]));
    let mut n = 0u64;
    let mut during = 0u64;
    while (resets(&m) == 0 || n < during + 20) && n < 4000 {
        let v = okk(&m, copy.submit(&[fill(&t, 8 * (n % 8192), n + 1)]));
        assert_eq!(v, copy.last_submitted());
        n += 1;
        ok(&m, m.run_steps(1));
        if resets(&m) == 0 {
            during = n;
        }
    }
    assert_eq!(resets(&m), 1, "one reset: {:#?}", m.tdr_events(0));
    let last = copy.last_submitted();
    run_until(&m, "copy drained", |_| copy.completed() >= last);
    for i in 0..n.min(8192) {
        assert_eq!(t.mem.load(8 * i), i + 1, "marker {i}");
    }
    let done = m.device(0).unwrap().completed_commands(1) - base;
    assert_eq!(
        done,
        per * n,
        "{n} submissions of {per} commands, none lost or repeated"
    );
    let ev = m.tdr_events(0);
    assert!(ev.iter().any(|e| matches!(
        e,
        TdrEvent::Detected {
            node: 0,
            cause: Cause::EngineHung | Cause::HwQueueStalled { .. }
        }
    )));
    assert!(!device_error(&ev, &c));
    println!(
        "figure: copy submissions during detection+reset {during}, after {}, lost 0, duplicated 0",
        n - during
    );
    no_fault(&m);
}

/// UM-10 as 24H2 puts a device in error: each monitored fence of the guilty device, its
/// queues' own among them, reads u64::MAX and its pending CPU waits are released
/// (`_VIDSCH_SYNC_OBJECT::SetToAlwaysSignaled`@0x14003B954 from `VidSchiMarkDeviceAsError`);
/// the other device's fence and its wait are untouched.
#[test]
fn tdr_um10_guilty_devices_monitored_fences_read_max_and_release_their_waits() {
    let m = tdr_machine(Mode::Step, |a| a.device.doorbells = 8);
    let h = ok(&m, m.create_process(0));
    let (_o, ko) = user_process(&m);
    let kh = m.kmt(&h);
    let (_, guilty) = okk(&m, kh.create_monitored_fence(0));
    let (_, innocent) = okk(&m, ko.create_monitored_fence(0));
    let gw = ok(&m, m.wait_monitored_fence_event(&guilty, 5));
    let iw = ok(&m, m.wait_monitored_fence_event(&innocent, 5));
    let mut hq = okk(&m, UserQueue::new(kh, &config(0)));
    okk(&m, hq.submit(&[Command::Hang]));
    run_until(&m, "reset", |m| resets(m) == 1);
    assert_eq!(guilty.value(), u64::MAX, "the guilty device's fence");
    assert_eq!(gw.outcome(), Some(rvgpu_simos::WaitOutcome::Satisfied));
    assert_eq!(innocent.value(), 0, "the other device's fence moved");
    assert_eq!(iw.outcome(), None, "the other device's wait ended");
    ok(&m, m.signal_monitored_fence_from_cpu(&innocent, 5));
    assert_eq!(iw.outcome(), Some(rvgpu_simos::WaitOutcome::Satisfied));
    no_fault(&m);
}

/// A reset during heavy user-mode traffic from other processes (seeded): 4 processes × 2
/// queues (both nodes) submit continuously, one process hangs node 0; every other submission
/// completes exactly once, in order per queue.
#[test]
fn tdr_reset_under_user_mode_traffic() {
    let m = tdr_machine(Mode::Step, |a| a.device.doorbells = 16);
    let mut rng = Lcg(0x7D2_0007);
    let procs: Vec<_> = (0..4).map(|_| ok(&m, m.create_process(0))).collect();
    let kmts: Vec<SimKmt<'_>> = procs.iter().map(|p| m.kmt(p)).collect();
    let targets: Vec<_> = kmts
        .iter()
        .map(|k| okk(&m, k.create_allocation(2 * 8 * 1024 + 4096)))
        .collect();
    let mut queues: Vec<(usize, u32, UserQueue<SimKmt<'_>>, u64)> = Vec::new();
    for (i, k) in kmts.iter().enumerate() {
        for node in 0..2 {
            queues.push((i, node, okk(&m, UserQueue::new(*k, &config(node))), 0));
        }
    }
    let per: Vec<u64> = (0..2)
        .map(|node| {
            let (i, _, q, _) = queues.iter_mut().find(|q| q.1 == node).unwrap();
            let t = &targets[*i];
            let d = m.device(0).unwrap();
            let before = d.completed_commands(node);
            let v = okk(
                &m,
                // Past the 2 × 1024 marker slots, inside the allocation.
                q.submit(&[fill(t, 8 * 2 * 1024 + 8 * u64::from(node), 0)]),
            );
            run_until(&m, "calibrate", |_| q.completed() >= v);
            d.completed_commands(node) - before
        })
        .collect();
    // Before the count starts: mapping its ring is paging work on the copy node.
    let guilty = ok(&m, m.create_process(0));
    let mut gq = okk(&m, UserQueue::new(m.kmt(&guilty), &config(0)));
    let base: Vec<u64> = (0..2)
        .map(|n| m.device(0).unwrap().completed_commands(n))
        .collect();
    let mut per_node = [0u64; 2];
    let mut hung = false;
    for round in 0..3000u64 {
        for (i, node, q, n) in queues.iter_mut() {
            if !rng.next().is_multiple_of(3) || *n >= 1024 {
                continue;
            }
            let slot = u64::from(*node) * 1024 + *n;
            let pattern = ((*i as u64) << 32) | (u64::from(*node) << 16) | (*n + 1);
            okk(&m, q.submit(&[fill(&targets[*i], 8 * slot, pattern)]));
            *n += 1;
            per_node[*node as usize] += 1;
        }
        if round == 50 && !hung {
            okk(&m, gq.submit(&[Command::Hang]));
            hung = true;
        }
        ok(&m, m.run_steps(1));
        if resets(&m) >= 1 && round > 600 {
            break;
        }
    }
    let ev = m.tdr_events(0);
    assert_eq!(
        resets(&m),
        1,
        "{:#?}",
        ev.iter()
            .filter(|e| matches!(
                e,
                TdrEvent::Detected { .. }
                    | TdrEvent::ResetEngine { .. }
                    | TdrEvent::DeviceError { .. }
            ))
            .collect::<Vec<_>>()
    );
    for (_, _, q, _) in queues.iter() {
        let last = q.last_submitted();
        run_until(&m, "drain", |_| q.completed() >= last);
    }
    for (i, node, _, n) in &queues {
        for k in 0..*n {
            let slot = u64::from(*node) * 1024 + k;
            let want = ((*i as u64) << 32) | (u64::from(*node) << 16) | (k + 1);
            assert_eq!(
                targets[*i].mem.load(8 * slot),
                want,
                "process {i} node {node} #{k}"
            );
        }
    }
    for node in 0..2usize {
        let done = m.device(0).unwrap().completed_commands(node as u32) - base[node];
        assert_eq!(
            done,
            per[node] * per_node[node],
            "node {node}: {} submissions of {} commands, none lost, none twice",
            per_node[node],
            per[node]
        );
    }
    let ev = m.tdr_events(0);
    for p in &procs {
        assert!(!device_error(&ev, p));
    }
    println!(
        "figure: user-mode traffic: {} + {} submissions of other processes across the reset, \
         lost 0, duplicated 0",
        per_node[0], per_node[1]
    );
    no_fault(&m);
}

/// A DMA buffer that faults (FILL to an address outside memory): `DmaFaulted` starts a TDR,
/// the faulting packet is dropped with its device in error, the packet queued behind it (of
/// another process) runs.
#[test]
fn tdr_dma_faulted_recovers() {
    let m = sw_tdr_machine(Mode::Step, |_| {});
    let (bad, good) = two_processes(&m);
    let (kb, kg) = (m.kmt(&bad), m.kmt(&good));
    let cb = okk(&m, kb.create_context(0));
    let cg = okk(&m, kg.create_context(0));
    let tg = okk(&m, kg.create_allocation(4096));
    // The good buffer made resident first (24H2 pages it in at its first use).
    ok(&m, m.submit_legacy(&good, cg, &[fill(&tg, 0, 0x01)]));
    run_until(&m, "the warming fill", |m| all_done(m, 0));
    let f = ok(
        &m,
        m.submit_legacy(&bad, cb, &[fill_range(0xF000_0000_0000, 8, 1)]),
    );
    let g = ok(&m, m.submit_legacy(&good, cg, &[fill(&tg, 0, 0x44)]));
    run_until(&m, "recovered", |m| resets(m) == 1 && all_done(m, 0));
    let ev = m.tdr_events(0);
    assert!(
        ev.iter().any(|e| matches!(e, TdrEvent::Detected { node: 0, cause: Cause::Faulted { fence } } if *fence == f)),
        "{ev:#?}"
    );
    assert!(device_error(&ev, &bad));
    assert!(ev
        .iter()
        .any(|e| matches!(e, TdrEvent::Resubmitted { old, paging: false, .. } if *old == g)));
    assert_eq!(tg.mem.load(0), 0x44);
    no_fault(&m);
}

/// UM-18: a process killed while its HANG runs: nothing of it runs after teardown, no TDR
/// errors another device, and the engine serves the others.
#[test]
fn tdr_hang_on_killed_process() {
    let m = tdr_machine(Mode::Step, |_| {});
    let h = ok(&m, m.create_process(0));
    let (o, ko) = user_process(&m);
    let to = okk(&m, ko.create_allocation(4096));
    let mut oq = okk(&m, UserQueue::new(ko, &config(0)));
    {
        let kh = m.kmt(&h);
        let mut hq = okk(&m, UserQueue::new(kh, &config(0)));
        okk(&m, hq.submit(&[Command::Hang]));
        ok(&m, m.run_steps(5));
        std::mem::forget(hq);
    }
    ok(&m, m.kill_process(&h));
    let v = okk(&m, oq.submit(&[fill(&to, 0, 0x55)]));
    run_until(&m, "other process runs", |_| oq.completed() >= v);
    ok(&m, m.run_steps(500));
    assert_eq!(to.mem.load(0), 0x55);
    let ev = m.tdr_events(0);
    assert!(
        !ev.iter()
            .any(|e| matches!(e, TdrEvent::DeviceError { device, .. } if *device == o.device)),
        "{ev:#?}"
    );
    no_fault(&m);
}

/// Threaded: 4 processes on their own threads, each with a user-mode queue on both nodes,
/// submit three FILLs per submission (run as an indirect buffer by the UMD) continuously while
/// a fifth process hangs node 0. Every submission of the four completes exactly once: every
/// marker written, COMPLETED_COMMANDS exact per node (an innocent queue caught mid-buffer by
/// the reset would re-run packets and overshoot).
#[test]
fn tdr_reset_under_user_mode_traffic_threaded() {
    // Each queue submits at least N, and keeps going until the reset is over (at most MAX).
    const N: u64 = 200;
    const MAX: u64 = 20_000;
    let m = machine_with(Mode::Threaded, |a| a.device.doorbells = 16);
    enable_tdr_after(&m, THREADED_TDR_DELAY, Duration::from_millis(5));
    let procs: Vec<_> = (0..4).map(|_| ok(&m, m.create_process(0))).collect();
    // Commands per three-FILL submission, per node (calibration).
    let (_cal, kc) = user_process(&m);
    let tc = okk(&m, kc.create_allocation(4096));
    let per: Vec<u64> = (0..2)
        .map(|node| {
            let mut q = okk(&m, UserQueue::new(kc, &config(node)));
            let d = m.device(0).unwrap();
            let before = d.completed_commands(node);
            let v = okk(
                &m,
                q.submit(&[fill(&tc, 0, 1), fill(&tc, 8, 2), fill(&tc, 16, 3)]),
            );
            run_until(&m, "calibrate", |_| q.completed() >= v);
            // The fence lands before its packet is counted: let the engine go idle.
            run_until(&m, "calibration idle", |_| {
                d.engine_snapshot(node).is_some_and(|e| !e.has_work)
            });
            let n = d.completed_commands(node) - before;
            okk(&m, q.close());
            n
        })
        .collect();
    let guilty = ok(&m, m.create_process(0));
    let targets: Vec<_> = procs
        .iter()
        .map(|p| okk(&m, m.kmt(p).create_allocation(2 * 3 * 8 * MAX)))
        .collect();
    // Every queue exists before the count starts and is closed after it ends: creating and
    // closing one maps and unmaps its ring, paging work on the copy node that COMPLETED_COMMANDS
    // would count.
    let queues: Vec<_> = procs
        .iter()
        .map(|p| {
            let k = m.kmt(p);
            [
                okk(&m, UserQueue::new(k, &config(0))),
                okk(&m, UserQueue::new(k, &config(1))),
            ]
        })
        .collect();
    let mut gq = okk(&m, UserQueue::new(m.kmt(&guilty), &config(0)));
    let base: Vec<u64> = (0..2)
        .map(|n| m.device(0).unwrap().completed_commands(n))
        .collect();
    let (counts, queues) = std::thread::scope(|s| {
        let mut workers = Vec::new();
        for (i, mut qs) in queues.into_iter().enumerate() {
            let (m, t) = (&m, &targets[i]);
            workers.push(s.spawn(move || {
                let mut n = 0u64;
                let mut seen: Option<u64> = None;
                let errored = || {
                    m.tdr_events(0)
                        .iter()
                        .any(|e| matches!(e, TdrEvent::DeviceError { .. }))
                };
                // Before the hang, during detection and reset, and 50 submissions after.
                while n < MAX && seen.is_none_or(|k| n < k + 50) {
                    if seen.is_none() && n >= N && errored() {
                        seen = Some(n);
                    }
                    for (node, q) in qs.iter_mut().enumerate() {
                        while q.last_submitted() - q.completed() > 16 {
                            std::thread::sleep(Duration::from_micros(50));
                        }
                        let slot = (node as u64 * MAX + n) * 3;
                        let pat =
                            |j: u64| ((i as u64) << 40) | ((node as u64) << 32) | (n << 4) | j;
                        okk(
                            m,
                            q.submit(&[
                                fill(t, 8 * slot, pat(0)),
                                fill(t, 8 * (slot + 1), pat(1)),
                                fill(t, 8 * (slot + 2), pat(2)),
                            ]),
                        );
                    }
                    n += 1;
                }
                for q in &qs {
                    let last = q.last_submitted();
                    let t0 = std::time::Instant::now();
                    while q.completed() < last && t0.elapsed() < Duration::from_secs(20) {
                        std::thread::sleep(Duration::from_micros(100));
                    }
                    assert_eq!(q.completed(), last, "process {i} queue drained");
                }
                (n, qs)
            }));
        }
        std::thread::sleep(Duration::from_millis(10));
        okk(&m, gq.submit(&[Command::Hang]));
        let done: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        done.into_iter().unzip::<_, _, Vec<u64>, Vec<_>>()
    });
    std::mem::forget(gq);
    assert_eq!(resets(&m), 1, "{:#?}", m.tdr_events(0));
    for (i, t) in targets.iter().enumerate() {
        for node in 0..2u64 {
            for n in 0..counts[i] {
                for j in 0..3 {
                    let slot = (node * MAX + n) * 3 + j;
                    let want = ((i as u64) << 40) | (node << 32) | (n << 4) | j;
                    assert_eq!(
                        t.mem.load(8 * slot),
                        want,
                        "process {i} node {node} #{n}.{j}"
                    );
                }
            }
        }
    }
    // A queue's fence is written before its packet is counted (the counter follows the
    // packet's effects): wait for the engines to go idle before reading COMPLETED_COMMANDS.
    run_until(&m, "engines idle", |m| {
        (0..2).all(|n| {
            m.device(0)
                .unwrap()
                .engine_snapshot(n)
                .is_some_and(|e| !e.has_work)
        })
    });
    for node in 0..2usize {
        let done = m.device(0).unwrap().completed_commands(node as u32) - base[node];
        let total: u64 = counts.iter().sum();
        assert_eq!(
            done,
            per[node] * total,
            "node {node}: none lost, none twice (per {per:?}, counts {counts:?})"
        );
    }
    for q in queues.into_iter().flatten() {
        okk(&m, q.close());
    }
    let ev = m.tdr_events(0);
    for p in &procs {
        assert!(!device_error(&ev, p));
    }
    assert!(device_error(&ev, &guilty));
    println!(
        "figure: threaded user-mode traffic across the reset: {counts:?} submissions per queue \
         pair, lost 0, duplicated 0"
    );
    no_fault(&m);
}

/// Threaded, kernel-mode path: three processes submit DMA buffers to node 0 from their own
/// threads while a fourth hangs it; submissions wait while the recovery holds the node; every
/// innocent buffer runs exactly once (markers, and the OS retires each fence ID once).
#[test]
fn tdr_legacy_threaded_submitters() {
    const N: u64 = 150;
    let m = machine_with(Mode::Threaded, |a| a.hwsch_feature = false);
    enable_tdr_after(&m, THREADED_TDR_DELAY, Duration::from_millis(5));
    let procs: Vec<_> = (0..3).map(|_| ok(&m, m.create_process(0))).collect();
    let guilty = ok(&m, m.create_process(0));
    let targets: Vec<_> = procs
        .iter()
        .map(|p| okk(&m, m.kmt(p).create_allocation(8 * N)))
        .collect();
    std::thread::scope(|s| {
        let mut w = Vec::new();
        for (i, p) in procs.iter().enumerate() {
            let (m, t) = (&m, &targets[i]);
            w.push(s.spawn(move || {
                let ctx = okk(m, m.kmt(p).create_context(0));
                for n in 0..N {
                    ok(
                        m,
                        m.submit_legacy(p, ctx, &[fill(t, 8 * n, ((i as u64) << 32) | (n + 1))]),
                    );
                    if n == N / 3 {
                        std::thread::sleep(Duration::from_millis(30));
                    }
                }
            }));
        }
        std::thread::sleep(Duration::from_millis(2));
        let cg = okk(&m, m.kmt(&guilty).create_context(0));
        ok(&m, m.submit_legacy(&guilty, cg, &[Command::Hang]));
        for j in w {
            j.join().unwrap();
        }
    });
    run_until(&m, "all retired", |m| resets(m) == 1 && all_done(m, 0));
    for (i, t) in targets.iter().enumerate() {
        for n in 0..N {
            assert_eq!(
                t.mem.load(8 * n),
                ((i as u64) << 32) | (n + 1),
                "process {i} #{n}"
            );
        }
    }
    let done: Vec<u32> = completed_on_node0(&m);
    let mut sorted = done.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), done.len(), "a fence ID retired twice");
    assert!(done.windows(2).all(|w| w[0] < w[1]), "retired in order");
    no_fault(&m);
}

/// Repeated recoveries: kernel-mode hangs on node 1 and node 0 (16 engines: node 15), a
/// user-mode hang, another kernel-mode hang on the same node: each is recovered, the node
/// ring takes new work after each (its ring state after a drain is reusable).
#[test]
fn tdr_repeated_resets_on_every_kind() {
    let m = sw_tdr_machine(Mode::Step, |a| a.device.engines = 16);
    let mut expected = 0;
    // Software-scheduled: node-ring hangs only (user-mode queues need HWS, BR-95; their
    // resets are in tests/hws.rs).
    for (node, user) in [(1u32, false), (0, false), (15, false), (0, false)] {
        let (h, kh) = user_process(&m);
        let mut uq = None;
        if user {
            let mut q = okk(&m, UserQueue::new(kh, &config(node)));
            okk(&m, q.submit(&[Command::Hang]));
            uq = Some(q);
        } else {
            let c = okk(&m, kh.create_context(node));
            ok(&m, m.submit_legacy(&h, c, &[Command::Hang]));
        }
        expected += 1;
        run_until(&m, "reset", |m| resets(m) == expected);
        std::mem::forget(uq);
        let (o, ko) = user_process(&m);
        let c = okk(&m, ko.create_context(node));
        let t = okk(&m, ko.create_allocation(4096));
        ok(&m, m.submit_legacy(&o, c, &[fill(&t, 0, 0xAB)]));
        run_until(&m, "new work", |m| all_done(m, node));
        assert_eq!(
            t.mem.load(0),
            0xAB,
            "node {node} runs after reset {expected}"
        );
        assert!(m
            .tdr_events(0)
            .iter()
            .any(|e| matches!(e, TdrEvent::DeviceError { device, .. } if *device == h.device)));
    }
    assert_eq!(adapter_resets(&m), 0);
    no_fault(&m);
}

/// D1 through the OS: an innocent user-mode queue is part-way through its indirect buffer on
/// the engine when the guilty queue's HANG is reset (checked in the pause hook, just before
/// ResetEngine); it continues from the next packet: every FILL runs exactly once.
#[test]
fn tdr_reset_same_engine_mid_indirect() {
    const FILLS: u64 = 24;
    // The default timeout (300 rounds): the innocent's one long submission must not itself
    // look hung (with 40 rounds the OS rightly reset it first: a DMA buffer that runs longer
    // than the timeout is a TDR, as on Windows).
    let m = machine_with(Mode::Step, |_| {});
    enable_tdr(&m, TdrConfig::default());
    let (_inn, ki) = user_process(&m);
    const REGION: u64 = 16 * 1024;
    let t = okk(&m, ki.create_allocation(FILLS * REGION));
    let mut iq = okk(&m, UserQueue::new(ki, &config(0)));
    let per = commands_per_fill(&m, &mut iq, &t, 0) - 1;
    let iq_id = iq.queue_id();
    let mid = std::sync::Arc::new(std::sync::Mutex::new(None));
    let seen = mid.clone();
    ok(
        &m,
        m.set_tdr_pause(
            0,
            Some(move |d: &std::sync::Arc<rvgpu_device::Device>| {
                let q = d
                    .engine_snapshot(0)
                    .and_then(|e| e.queues.into_iter().find(|q| q.queue_id == iq_id));
                *seen.lock().unwrap() = q.map(|q| q.indirect.is_some());
            }),
        ),
    );
    // The guilty process exists before the innocent starts: creating its queue is paging
    // work, long enough for the whole indirect buffer to finish meanwhile.
    let g = ok(&m, m.create_process(0));
    let mut gq = okk(&m, UserQueue::new(m.kmt(&g), &config(0)));
    let base = m.device(0).unwrap().completed_commands(0);
    // Each FILL is 4 chunks of 4 KiB: several steps, so the HANG is picked between two.
    let cmds: Vec<Command> = (0..FILLS)
        .map(|i| Command::Fill {
            dst: t.gpu_va + REGION * i,
            bytes: REGION,
            pattern: 0x100 + i,
        })
        .collect();
    // The FILLs go into an indirect buffer of the process; the ring gets one INDIRECT.
    // A command-buffer allocation: data buffers are no-execute.
    let ib = okk(
        &m,
        ki.create_allocation_as(4096, rvgpu_umd::kmt::AllocationKind::Commands),
    );
    let mut words = Vec::new();
    for c in &cmds {
        let mut w = [0u64; 8];
        let n = c.encode(&mut w).unwrap();
        words.extend_from_slice(&w[..n]);
    }
    for (k, w) in words.iter().enumerate() {
        ib.mem.store(8 * k as u64, *w);
    }
    let v = okk(
        &m,
        iq.submit(&[Command::Indirect {
            addr: ib.gpu_va,
            bytes: 8 * words.len() as u64,
        }]),
    );
    // Let a few FILLs run, then hang the engine from another process.
    let d = m.device(0).unwrap().clone();
    for _ in 0..100 {
        ok(&m, m.run_steps(1));
        if d.completed_commands(0) - base >= 3 {
            break;
        }
    }
    okk(&m, gq.submit(&[Command::Hang]));
    run_until(&m, "reset", |m| resets(m) == 1);
    std::mem::forget(gq);
    run_until(&m, "innocent done", |_| iq.completed() >= v);
    assert_eq!(
        *mid.lock().unwrap(),
        Some(true),
        "the innocent queue was inside its indirect buffer at the reset"
    );
    for i in 0..FILLS {
        assert_eq!(t.mem.load(REGION * i), 0x100 + i, "FILL {i}");
        assert_eq!(
            t.mem.load(REGION * i + REGION - 8),
            0x100 + i,
            "FILL {i} end"
        );
    }
    let done = d.completed_commands(0) - base;
    // PROGRESS (`per`), the FILLs, and the INDIRECT itself once its buffer completed.
    assert_eq!(
        done,
        per + FILLS + 1,
        "every packet once ({per} + {FILLS} FILLs + 1 INDIRECT)"
    );
    no_fault(&m);
}

/// docs/tdr.md Q7, documented behaviour: a user-mode queue blocked on a GPU wait that is never
/// satisfied (a GPU-side deadlock, not a hang) counts as a timeout of its progress fence: the
/// OS resets the engine and puts that device in error; another queue on the engine runs on.
/// Where the OS gave the queue no progress fence (24H2) it sees no timeout at all.
#[test]
fn tdr_q7_blocked_wait_counts_as_timeout() {
    let m = tdr_machine(Mode::Step, |_| {});
    let (w, kw) = user_process(&m);
    let never = okk(&m, kw.create_allocation(4096));
    let mut wq = okk(&m, UserQueue::new(kw, &config(0)));
    okk(
        &m,
        wq.submit(&[Command::FenceWait {
            addr: never.gpu_va,
            value: 1,
        }]),
    );
    let (_o, ko) = user_process(&m);
    let t = okk(&m, ko.create_allocation(4096));
    let mut oq = okk(&m, UserQueue::new(ko, &config(0)));
    if !wq.os_sees_work() {
        // 24H2 gives the queue no progress fence: the OS cannot tell it has work, so a wait
        // that never ends is no timeout, and the other queue runs alongside.
        let v = okk(&m, oq.submit(&[fill(&t, 0, 0x99)]));
        run_until(&m, "other queue", |_| oq.completed() >= v);
        assert_eq!(t.mem.load(0), 0x99);
        assert_eq!(resets(&m), 0, "{:#?}", m.tdr_events(0));
        std::mem::forget(wq);
        no_fault(&m);
        return;
    }
    run_until(&m, "reset", |m| resets(m) == 1);
    let ev = m.tdr_events(0);
    assert!(
        ev.iter().any(|e| matches!(
            e,
            TdrEvent::Detected {
                node: 0,
                cause: Cause::HwQueueStalled { .. }
            }
        )),
        "{ev:#?}"
    );
    assert!(device_error(&ev, &w));
    let v = okk(&m, oq.submit(&[fill(&t, 0, 0x99)]));
    run_until(&m, "other queue", |_| oq.completed() >= v);
    assert_eq!(t.mem.load(0), 0x99);
    std::mem::forget(wq);
    no_fault(&m);
}

against_the_pe_image!();

under_the_pages!(image);

// ---------------------------------------------------------------------------------------------
// TDR-09's adapter-wide path and the TdrLimitCount / TdrLimitTime limit (docs/tdr.md).

/// One kernel-mode hang whose engine reset fails (TDR-09): the OS recovers it adapter-wide.
/// Returns once the recovery is done or the machine stopped.
fn hang_recovered_adapter_wide(m: &Machine, done: u64) {
    hang_recovered_adapter_wide_on(m, 0, done);
}

/// [`hang_recovered_adapter_wide`] on adapter `i`.
fn hang_recovered_adapter_wide_on(m: &Machine, i: usize, done: u64) {
    let p = ok(m, m.create_process(i));
    let k = m.kmt(&p);
    let ctx = okk(m, k.create_context(0));
    m.device(i).unwrap().fail_next_reset(0);
    ok(m, m.submit_legacy(&p, ctx, &[Command::Hang]));
    let r = m.run_until(20_000, Duration::from_secs(20), |m| {
        m.tdr_counts(i).1 == done || m.bugcheck().is_some()
    });
    assert!(
        matches!(r, Ok(true) | Err(SimError::Bugcheck(_))),
        "adapter {i}, hang {done}: {r:?}"
    );
}

/// TDR-09 with Windows' TDR limit: five adapter-wide recoveries within `TdrLimitTime` (the
/// default 5 and 60 s, as rounds in step mode) recover; the sixth hang is bug check 0x116
/// `VIDEO_TDR_FAILURE` (parameter 4 = 13, 24H2 `TdrIsRecoveryRequired`) instead of a sixth
/// recovery, and the machine stops.
#[test]
fn tdr_09_adapter_resets_beyond_tdr_limit_count_bugcheck_0x116() {
    let m = sw_tdr_machine(Mode::Step, |_| {});
    assert_eq!(TdrConfig::default().limit_count, 5);
    for n in 1..=5 {
        hang_recovered_adapter_wide(&m, n);
        assert!(m.bugcheck().is_none(), "recovery {n} is within the limit");
        assert_eq!(adapter_resets(&m), n);
    }
    hang_recovered_adapter_wide(&m, 6);
    let b = m
        .bugcheck()
        .expect("the sixth adapter timeout in the window bug-checks");
    assert_eq!(b.code, 0x116);
    assert_eq!(b.params, [0, 0, 0, 13]);
    assert!(m.device(0).unwrap().is_frozen(), "no sixth recovery");
}

/// TDR-09 with Windows' TDR limit kept for the machine: 24H2 keeps one history of recovered
/// TDRs (`g_TdrHistory`, read by `TdrHistoryIsLimitExhausted`) for every adapter, so two
/// adapters' recoveries add up. With the default `TdrLimitCount` of 5, three recoveries on one
/// adapter and two on the other recover; the next adapter timeout on either is bug check 0x116
/// (…, 13), though neither adapter reached five on its own.
#[test]
fn tdr_09_tdr_limit_counts_every_adapters_recoveries_together() {
    let mut cfg = MachineConfig::igpu_dgpu(Mode::Step);
    for a in &mut cfg.adapters {
        a.hwsch_feature = false;
    }
    let m = started(cfg);
    for i in 0..2 {
        ok(&m, m.enable_tdr(i, fast()));
    }
    let mut done = [0u64; 2];
    for (n, i) in [0, 1, 0, 1, 0].into_iter().enumerate() {
        done[i] += 1;
        hang_recovered_adapter_wide_on(&m, i, done[i]);
        assert!(
            m.bugcheck().is_none(),
            "recovery {} of the machine is within the limit: {:?}",
            n + 1,
            m.bugcheck()
        );
    }
    assert_eq!((m.tdr_counts(0).1, m.tdr_counts(1).1), (3, 2));
    hang_recovered_adapter_wide_on(&m, 1, 3);
    let b = m
        .bugcheck()
        .expect("the machine's sixth adapter timeout in the window bug-checks");
    assert_eq!(b.code, 0x116);
    assert_eq!(b.params, [0, 0, 0, 13]);
    assert!(m.device(1).unwrap().is_frozen(), "no sixth recovery");
}

/// TDR-09 with Windows' TDR limit: adapter-wide recoveries spaced more than `TdrLimitTime`
/// apart never reach `TdrLimitCount`; engine resets (0x141) do not count at all.
#[test]
fn tdr_09_adapter_resets_spaced_beyond_tdr_limit_time_and_engine_resets_recover() {
    let m = sw_tdr_machine(Mode::Step, |_| {});
    let window = 1_000;
    enable_tdr(
        &m,
        TdrConfig {
            limit_count: 2,
            limit_time_steps: window,
            ..fast()
        },
    );
    for n in 1..=5 {
        hang_recovered_adapter_wide(&m, n);
        assert!(m.bugcheck().is_none(), "recovery {n}: {:?}", m.bugcheck());
        // Idle past the window before the next hang.
        let _ = m.run_until(window as usize + 10, Duration::from_secs(20), |_| false);
    }
    // Engine timeouts back to back: per-engine resets, none counted.
    for n in 1..=5 {
        let (p, _k, ctx) = process_with_context(&m);
        ok(&m, m.submit_legacy(&p, ctx, &[Command::Hang]));
        run_until(&m, "engine reset", |m| resets(m) == n);
    }
    assert!(m.bugcheck().is_none(), "{:?}", m.bugcheck());
    assert_eq!(adapter_resets(&m), 5);
    no_fault(&m);
}

/// Sets its flag when dropped, unwinding included.
struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// TDR-05, UM-10, threaded: a recovery is counted only once it is whole. A watcher polls the
/// counts and the events throughout three engine resets and one adapter reset: whenever it
/// sees a reset counted, the guilty device's error (step 11) is already recorded, so a
/// reader of the count never sees a recovery without its device errors.
#[test]
fn tdr_05_a_counted_recovery_has_its_device_errors_recorded() {
    let m = machine_with(Mode::Threaded, |a| a.hwsch_feature = false);
    enable_tdr_after(&m, Duration::from_millis(100), Duration::from_millis(5));
    let stop = std::sync::atomic::AtomicBool::new(false);
    let counted_early = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut early = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                let (engine, adapter) = m.tdr_counts(0);
                let errors = m
                    .tdr_events(0)
                    .iter()
                    .filter(|e| matches!(e, TdrEvent::DeviceError { .. }))
                    .count() as u64;
                if errors < engine + adapter {
                    early.push((engine, adapter, errors));
                }
            }
            early
        });
        // Stops the watcher however the rounds end: a round that panics would otherwise leave
        // the scope waiting for it forever.
        let stopper = StopOnDrop(&stop);
        for round in 0..4u64 {
            let p = ok(&m, m.create_process(0));
            let ctx = okk(&m, m.kmt(&p).create_context(0));
            if round == 3 {
                m.device(0).unwrap().fail_next_reset(0);
            }
            ok(&m, m.submit_legacy(&p, ctx, &[Command::Hang]));
            run_until(&m, "the recovery", |m| {
                let (e, a) = m.tdr_counts(0);
                e + a == round + 1
            });
        }
        drop(stopper);
        watcher.join().unwrap()
    });
    let mut counted_early = counted_early;
    counted_early.dedup();
    assert_eq!(
        counted_early,
        Vec::<(u64, u64, u64)>::new(),
        "(engine resets, adapter resets, device errors) seen with a recovery counted before \
         its device errors; events {:#?}",
        m.tdr_events(0)
    );
    no_fault(&m);
}
