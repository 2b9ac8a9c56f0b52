//! VidSch in hardware-scheduling mode: node set-up (BR-77, BR-79), scheduling-log
//! processing, context rules (BR-92/94/95) and TDR through ResetHwEngine/ResumeHwEngine.

mod common;

use common::*;

use rvgpu_ddi::hws::*;
use rvgpu_ddi::ntstatus::*;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::{HwsCall, Machine, MachineConfig, Mode, SimError, TdrEvent, TdrReason};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, Kmt, NtStatus};
use rvgpu_umd::submit::UserQueue;

fn sched_triage(m: &Machine) -> Vec<String> {
    m.triage_log(0)
        .into_iter()
        .filter(|l| l.starts_with("sched-log"))
        .collect()
}

/// Two processes on adapter 0, each with a 4 KiB target and a user-mode queue on node 0.
struct TwoQueues<'m> {
    ta: Allocation<SimMem>,
    tb: Allocation<SimMem>,
    qa: UserQueue<SimKmt<'m>>,
    qb: UserQueue<SimKmt<'m>>,
}

fn two_queues(m: &Machine) -> TwoQueues<'_> {
    let a = ok(m, m.create_process(0));
    let b = ok(m, m.create_process(0));
    TwoQueues {
        ta: okk(m, m.kmt(&a).create_allocation(4096)),
        tb: okk(m, m.kmt(&b).create_allocation(4096)),
        qa: okk(m, UserQueue::new(m.kmt(&a), &config(0))),
        qb: okk(m, UserQueue::new(m.kmt(&b), &config(0))),
    }
}

impl TwoQueues<'_> {
    /// Submits `a` on `qa` and `b` on `qb`, then runs until both have completed.
    fn both(&mut self, m: &Machine, [a, b]: [Command; 2]) {
        let va = okk(m, self.qa.submit(&[a]));
        let vb = okk(m, self.qb.submit(&[b]));
        run_until(m, "both", |_| {
            self.qa.completed() >= va && self.qb.completed() >= vb
        });
    }
}

/// BR-77, BR-79: bands then logs on every HWS node, with dxgmms2's defaults, before any
/// context is told its properties (the first work needs a context).
#[test]
fn br_77_79_bands_and_logs_at_start() {
    let m = machine_with(Mode::Step, |_| {});
    let nodes = m.hws_nodes(0);
    assert!(!nodes.is_empty(), "HWS on by default");
    let calls = m.hws_calls(0);
    assert_eq!(calls.len(), 2 * nodes.len(), "{calls:#?}");
    for (i, n) in nodes.iter().enumerate() {
        match &calls[i] {
            HwsCall::SetupPriorityBands { node, args, status } => {
                assert_eq!(*node, *n);
                assert_eq!(args.gracePeriodForBand, [0, 0, 10_000, 0]);
                assert_eq!(args.processQuantumForBand, [50_000, 50_000, 10_000, 20_000]);
                assert_eq!(
                    args.processGracePeriodForBand,
                    [20_000, 20_000, 30_000, 50_000]
                );
                assert_eq!(*status, Some(STATUS_SUCCESS));
            }
            c => panic!("{c:?}"),
        }
        match &calls[nodes.len() + i] {
            HwsCall::SetSchedulingLogBuffer {
                node,
                entries,
                interrupt_entry,
                cpu_va,
                gpu_va,
                status,
            } => {
                assert_eq!(*node, *n);
                assert_eq!((*entries, *interrupt_entry), (2048, 1536));
                assert!(*cpu_va != 0 && *gpu_va != 0);
                assert_eq!(*status, Some(STATUS_SUCCESS));
            }
            c => panic!("{c:?}"),
        }
    }
    // The first context gets its properties only after the node set-up.
    let p = ok(&m, m.create_process(0));
    let _q = okk(&m, UserQueue::new(m.kmt(&p), &config(0)));
    let calls = m.hws_calls(0);
    let first = calls
        .iter()
        .position(|c| matches!(c, HwsCall::SetContextSchedulingProperties { .. }))
        .expect("properties");
    assert!(first >= 2 * nodes.len());
    match &calls[first] {
        HwsCall::SetContextSchedulingProperties {
            band,
            quantum,
            grace_same,
            grace_lower,
            status,
            ..
        } => {
            assert_eq!(*band, DXGK_SCHEDULING_PRIORITY_BAND_NORMAL);
            assert_eq!((*quantum, *grace_same, *grace_lower), (20_000, 10_000, 0));
            assert_eq!(*status, Some(STATUS_SUCCESS));
        }
        _ => unreachable!(),
    }
    no_fault(&m);
}

/// HWS off: no node set-up calls, contexts without HwQueueSupported, kernel-mode submission
/// works, hardware and user-mode queues are refused (BR-94).
#[test]
fn br_77_hws_off_no_calls_and_br_94_queues_refused() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.hwsch_feature = false;
    let m = started(cfg);
    assert!(m.hws_nodes(0).is_empty());
    assert!(m.hws_calls(0).is_empty());
    let (p, k) = user_process(&m);
    let ctx = okk(&m, k.create_context(0));
    let t = okk(&m, k.create_allocation(4096));
    let f = ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 7)]));
    run_until(&m, "legacy", |m| {
        let (s, c) = m.legacy_fences(0, 0);
        s == c && s >= f
    });
    assert_eq!(t.mem.load(0), 7);
    assert_eq!(
        k.create_hw_queue(ctx, false, &mut []).err(),
        Some(NtStatus(STATUS_INVALID_PARAMETER))
    );
    assert_eq!(
        k.create_hw_queue(ctx, true, &mut []).err(),
        Some(NtStatus(STATUS_INVALID_PARAMETER))
    );
    // BR-92 the other way: HwQueueSupported on a node without context scheduling.
    assert!(matches!(
        m.create_context_flags(&p, 0, true),
        Err(SimError::DdiFailed(STATUS_UNSUCCESSFUL))
    ));
    no_fault(&m);
}

/// BR-92: on an HWS node a context must carry HwQueueSupported.
#[test]
fn br_92_context_without_hw_queue_refused() {
    let m = machine_with(Mode::Step, |_| {});
    let p = ok(&m, m.create_process(0));
    assert!(matches!(
        m.create_context_flags(&p, 0, false),
        Err(SimError::DdiFailed(STATUS_UNSUCCESSFUL))
    ));
    assert!(m.triage_log(0).iter().any(|l| l.starts_with("BR-92")));
    ok(&m, m.create_context_flags(&p, 0, true));
    no_fault(&m);
}

/// Two contexts alternating on one engine: RUNNING/READY/IDLE entries naming their KMD
/// contexts, timestamps non-decreasing, nothing refused.
#[test]
fn hws_log_two_contexts_alternate() {
    let m = machine_with(Mode::Step, |_| {});
    let mut two = two_queues(&m);
    for i in 0..6u64 {
        two.both(
            &m,
            [fill(&two.ta, 8 * i, i + 1), fill(&two.tb, 8 * i, i + 1)],
        );
    }
    ok(&m, m.run_until_idle());
    let log = ok(&m, m.scheduling_log(0, 0));
    assert!(sched_triage(&m).is_empty(), "{:?}", sched_triage(&m));
    let ctxs: std::collections::BTreeSet<usize> = log
        .iter()
        .filter(|e| e.state == DXGK_SCHEDULING_LOG_CONTEXT_STATE_RUNNING)
        .map(|e| e.kmd_context)
        .collect();
    assert!(ctxs.len() >= 2, "both contexts ran: {log:#?}");
    assert!(log
        .iter()
        .any(|e| e.state == DXGK_SCHEDULING_LOG_CONTEXT_STATE_IDLE));
    assert!(log.windows(2).all(|w| w[0].timestamp <= w[1].timestamp));
    no_fault(&m);
}

/// A small log: the interrupt entry raises the interrupt, the OS's read position advances
/// and laps are followed.
#[test]
fn hws_log_small_wraps_and_interrupts() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.sched_log_entries = 8;
    let m = started(cfg);
    let mut two = two_queues(&m);
    for i in 0..20u64 {
        two.both(&m, [fill(&two.ta, 0, i + 1), fill(&two.tb, 0, i + 1)]);
    }
    ok(&m, m.run_until_idle());
    let (stats, irq) = m.scheduling_log_stats(0, 0).expect("log");
    assert_eq!(irq, 6);
    assert!(stats.interrupts > 0, "{stats:?}");
    assert!(stats.read > 8, "the log wrapped: {stats:?}");
    let log = ok(&m, m.scheduling_log(0, 0));
    assert_eq!(
        log.len() as u64 + m.scheduling_log_stats(0, 0).unwrap().0.lost,
        m.scheduling_log_stats(0, 0).unwrap().0.read
    );
    assert!(sched_triage(&m).is_empty(), "{:?}", sched_triage(&m));
    no_fault(&m);
}

/// A higher band's queue runs before a normal one when both have work.
#[test]
fn hws_focus_band_runs_first() {
    let m = machine_with(Mode::Step, |_| {});
    let mut two = two_queues(&m);
    // b's context gets the focus band.
    let ctx_b = m
        .hws_calls(0)
        .iter()
        .rev()
        .find_map(|c| match c {
            HwsCall::SetContextSchedulingProperties { context, .. } => Some(*context),
            _ => None,
        })
        .unwrap();
    ok(
        &m,
        m.set_context_priority(
            0,
            ctx_b,
            rvgpu_simos::ContextPriority {
                band: DXGK_SCHEDULING_PRIORITY_BAND_FOCUS,
                in_process: 0,
                realtime_level: 0,
            },
        ),
    );
    let cmds_a: Vec<Command> = (0..32).map(|i| fill(&two.ta, 8 * i, i + 1)).collect();
    let cmds_b: Vec<Command> = (0..32).map(|i| fill(&two.tb, 8 * i, i + 1)).collect();
    let va = okk(&m, two.qa.submit(&cmds_a));
    let vb = okk(&m, two.qb.submit(&cmds_b));
    let mut b_first = None;
    run_until(&m, "both", |_| {
        if b_first.is_none() {
            if two.qb.completed() >= vb {
                b_first = Some(true);
            } else if two.qa.completed() >= va {
                b_first = Some(false);
            }
        }
        two.qa.completed() >= va && two.qb.completed() >= vb
    });
    assert_eq!(b_first, Some(true), "focus band finished first");
    no_fault(&m);
}

fn tdr_machine() -> Machine {
    let m = machine_with(Mode::Step, |a| a.device.doorbells = 8);
    enable_tdr_steps(&m, 40, 5);
    m
}

/// HWS TDR: a context hangs while another on the same engine keeps running; the innocent
/// work completes exactly once; ResetHwEngine then ResumeHwEngine, never ResetEngine.
#[test]
fn hws_tdr_reset_hw_engine_innocent_exactly_once() {
    let m = tdr_machine();
    let h = ok(&m, m.create_process(0));
    let o = ok(&m, m.create_process(0));
    let to = okk(&m, m.kmt(&o).create_allocation(64 * 1024));
    let mut oq = okk(&m, UserQueue::new(m.kmt(&o), &config(0)));
    let mut hq = okk(&m, UserQueue::new(m.kmt(&h), &config(0)));
    okk(&m, hq.submit(&[Command::Hang]));
    let mut n = 0u64;
    while (m.tdr_counts(0).0 == 0 || n < 40) && n < 3000 {
        let v = okk(&m, oq.submit(&[fill(&to, 8 * (n % 8192), n + 1)]));
        assert_eq!(v, oq.last_submitted());
        n += 1;
        ok(&m, m.run_steps(1));
    }
    assert_eq!(m.tdr_counts(0), (1, 0), "{:#?}", m.tdr_events(0));
    let last = oq.last_submitted();
    run_until(&m, "innocent drained", |_| oq.completed() >= last);
    assert_eq!(oq.completed(), last, "progress exact");
    for i in 0..n {
        assert_eq!(to.mem.load(8 * i), i + 1, "marker {i}");
    }
    let ev = m.tdr_events(0);
    assert!(ev
        .iter()
        .any(|e| matches!(e, TdrEvent::ResetHwEngine { node: 0, status: 0 })));
    assert!(ev
        .iter()
        .any(|e| matches!(e, TdrEvent::ResumeHwEngine { node: 0, status: 0 })));
    assert!(!ev.iter().any(|e| matches!(e, TdrEvent::ResetEngine { .. })));
    assert!(device_error(&ev, &h));
    assert!(!device_error(&ev, &o));
    let r = hq.submit(&[fill(&to, 0, 1)]);
    assert!(r.is_err() || hq.is_lost(), "guilty still submits: {r:?}");
    no_fault(&m);
}

unsafe extern "system" fn failing_reset_hw_engine(
    _a: rvgpu_ddi::basic::HANDLE,
    _r: *mut DXGKARG_RESETHWENGINE,
) -> rvgpu_ddi::basic::NTSTATUS {
    STATUS_UNSUCCESSFUL
}

/// A started step-mode machine of `cfg` whose driver's DxgkDdiResetHwEngine always fails (so a
/// hang ends in an adapter-wide reset), with a short TDR timeout.
fn failing_reset_machine(cfg: MachineConfig) -> Machine {
    let mut m = Machine::new(cfg);
    m.load_driver_with(|t| t.DxgkDdiResetHwEngine = Some(failing_reset_hw_engine))
        .expect("load");
    m.start_adapter(0).expect("start");
    enable_tdr_steps(&m, 40, 5);
    m
}

/// Global doorbells: an adapter reset unbinds every doorbell page and, as 24H2's
/// `K:ADAPTER_RENDER::Reset` @0x1403F2C34 resets every device, the innocent process's queue
/// learns its loss (STATUS_DEVICE_REMOVED); the process recreates its device, and the KMD
/// has bound the process's global page again at restart, so the new queue's first ring
/// reaches it.
#[test]
fn global_doorbell_pages_survive_an_adapter_reset() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.global_doorbell = true;
    cfg.adapters[0].device.doorbells = 2;
    let m = failing_reset_machine(cfg);
    let o = ok(&m, m.create_process(0));
    let t = okk(&m, m.kmt(&o).create_allocation(4096));
    let mut oq = okk(&m, UserQueue::new(m.kmt(&o), &config(1)));
    let v = okk(&m, oq.submit(&[fill(&t, 0, 0x11)]));
    run_until(&m, "before the reset", |_| oq.completed() >= v);
    let h = ok(&m, m.create_process(0));
    let mut hq = okk(&m, UserQueue::new(m.kmt(&h), &config(0)));
    okk(&m, hq.submit(&[Command::Hang]));
    run_until(&m, "adapter reset", |m| m.tdr_counts(0).1 == 1);
    ok(&m, m.run_until_idle());
    let removed = rvgpu_umd::kmt::NtStatus(rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED);
    assert_eq!(
        oq.submit(&[fill(&t, 8, 0x22)]).err(),
        Some(rvgpu_umd::submit::SubmitError::Kmt(removed)),
        "every device is reset by the adapter-wide recovery"
    );
    let o2 = ok(&m, m.create_device(&o));
    let t2 = okk(&m, m.kmt(&o2).create_allocation(4096));
    let mut q2 = okk(&m, UserQueue::new(m.kmt(&o2), &config(1)));
    let ignored = |m: &Machine| m.device(0).unwrap().doorbell_stats().ignored;
    let (ignored_before, tdrs) = (ignored(&m), m.tdr_counts(0));
    let v = okk(&m, q2.submit(&[fill(&t2, 8, 0x22)]));
    assert_eq!(ignored(&m), ignored_before, "the ring reached the queue");
    run_until(&m, "after the reset", |_| q2.completed() >= v);
    assert_eq!(m.tdr_counts(0), tdrs, "no further reset");
    assert_eq!((t.mem.load(0), t2.mem.load(8)), (0x11, 0x22));
}

/// HWS TDR: a failing ResetHwEngine goes adapter-wide; ResumeHwEngine is not called.
#[test]
fn hws_tdr_failed_reset_hw_engine_goes_adapter_wide() {
    let m = failing_reset_machine(MachineConfig::single(Mode::Step));
    let h = ok(&m, m.create_process(0));
    let mut hq = okk(&m, UserQueue::new(m.kmt(&h), &config(0)));
    okk(&m, hq.submit(&[Command::Hang]));
    run_until(&m, "adapter reset", |m| m.tdr_counts(0).1 == 1);
    let ev = m.tdr_events(0);
    assert!(ev.iter().any(|e| matches!(
        e,
        TdrEvent::ResetHwEngine { node: 0, status } if *status == STATUS_UNSUCCESSFUL
    )));
    assert!(!ev
        .iter()
        .any(|e| matches!(e, TdrEvent::ResumeHwEngine { .. })));
    assert!(!ev.iter().any(|e| matches!(e, TdrEvent::ResetEngine { .. })));
    assert_eq!(
        m.tdr_reason(0),
        Some(TdrReason::EngineTimeoutPromotedToAdapterReset)
    );
    // After the adapter reset, scheduling logs, which the reset turned off on every engine
    // (hardware.md M39), keep receiving entries: engine 1, which did not hang.
    ok(&m, m.run_until_idle());
    let before = ok(&m, m.scheduling_log(0, 1)).len();
    let o = ok(&m, m.create_process(0));
    let t = okk(&m, m.kmt(&o).create_allocation(4096));
    let mut oq = okk(&m, UserQueue::new(m.kmt(&o), &config(1)));
    let v = okk(&m, oq.submit(&[fill(&t, 0, 7)]));
    run_until(&m, "work after the reset", |_| oq.completed() >= v);
    ok(&m, m.run_until_idle());
    assert_eq!(t.mem.load(0), 7);
    let after = ok(&m, m.scheduling_log(0, 1)).len();
    assert!(
        after > before,
        "no log entries after the reset ({before} -> {after})"
    );
}

against_the_pe_image!();

under_the_pages!();

/// The hand-over audit (`rvgpu_ddi::handover`) of the queue DDIs: under the 24H2 reading a
/// user-mode queue is created with no progress fence (the three fields zero), its doorbell and
/// a kernel-mode queue with every field filled, a kernel-mode queue's buffer with no private
/// data, and nothing 24H2 leaves zero arrives filled.
#[test]
fn ddi_01_queues_and_doorbells_are_handed_over_as_24h2_does() {
    use rvgpu_ddi::handover::{
        CREATE_DOORBELL, CREATE_HWQUEUE, CREATE_HWQUEUE_USER_MODE, SUBMIT_COMMAND_TO_HWQUEUE,
    };
    use zerocopy::IntoBytes;
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = rvgpu_simos::Windows::W24H2;
    cfg.adapters[0].device.doorbells = 4;
    let m = started(cfg);
    let (p, k) = user_process(&m);
    let t = okk(&m, k.create_allocation(4096));
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let v = okk(&m, q.submit(&[fill(&t, 0, 5)]));
    okk(&m, q.wait(v));
    assert_eq!(t.mem.load(0), 5);
    let ctx = okk(&m, k.create_context(0));
    let mut pdd = hw_queue_pdd();
    let kq = okk(&m, k.create_hw_queue(ctx, false, pdd.as_mut_bytes()));
    let buf = okk(
        &m,
        k.create_allocation_as(4096, rvgpu_hw::pdd::AllocationKind::Commands),
    );
    let mut words = [0u64; 8];
    let n = fill(&t, 8, 6).encode(&mut words).unwrap();
    for (i, w) in words[..n].iter().enumerate() {
        buf.mem.store(i as u64 * 8, *w);
    }
    okk(
        &m,
        k.submit_command_to_hw_queue(kq.handle, 1, buf.gpu_va, (n * 8) as u32),
    );
    okk(&m, k.wait_for_fence(kq.progress_fence().unwrap(), 1));
    assert_eq!(t.mem.load(8), 6);
    for ddi in [
        CREATE_HWQUEUE_USER_MODE.name,
        CREATE_DOORBELL.name,
        CREATE_HWQUEUE.name,
        SUBMIT_COMMAND_TO_HWQUEUE.name,
    ] {
        let (blocks, filled) = m.handover(0, ddi);
        assert!(blocks > 0, "no {ddi} checked");
        assert!(
            filled.is_empty(),
            "fields 24H2 leaves zero, filled: {filled:?}"
        );
    }
    okk(&m, k.destroy_hw_queue(kq.handle));
    okk(&m, k.destroy_context(ctx));
    okk(&m, q.close());
    exits_clean(&m, &p);
}

/// The driver's `DxgkDdiSetRootPageTable`, reached through [`counting_set_root`].
static REAL_SET_ROOT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
/// Calls made through [`counting_set_root`].
static SET_ROOTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

type SetRoot = unsafe extern "system" fn(
    rvgpu_ddi::HANDLE,
    *const rvgpu_ddi::allocation::DXGKARG_SETROOTPAGETABLE,
);

unsafe extern "system" fn counting_set_root(
    h: rvgpu_ddi::HANDLE,
    args: *const rvgpu_ddi::allocation::DXGKARG_SETROOTPAGETABLE,
) {
    SET_ROOTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    // SAFETY: the address is the driver's DxgkDdiSetRootPageTable, stored as a `SetRoot`
    // before the machine started; called with the OS's own arguments.
    unsafe {
        let f: SetRoot = std::mem::transmute(*REAL_SET_ROOT.get().unwrap());
        f(h, args)
    }
}

/// UM-15: a process whose only work goes through a doorbell runs it whenever the reading
/// played gives its context the root. On 24H2 no `DxgkDdiSetRootPageTable` reaches the context
/// (VidSch sends it only from `M:VidSchiEnsureRootPageTableUpdated` @0x1400EAF40, at a
/// kernel-mode submission or a resume) and the driver runs the queue under the root it learnt
/// from VidMm's root-level update of the process; the pages' reading sends it once the context
/// exists. A kernel-mode queue's context gets exactly one either way: 24H2's at its first
/// submission, none again while the root stays where it is.
#[test]
fn um_15_a_doorbell_only_process_runs_without_set_root_page_table() {
    use rvgpu_simos::machine::answers::RootHandOver;
    use std::sync::atomic::Ordering::SeqCst;
    use zerocopy::IntoBytes;
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.doorbells = 4;
    let m = started_with(cfg, |t| {
        let real = t.DxgkDdiSetRootPageTable.expect("a GpuMmu driver");
        let _ = REAL_SET_ROOT.set(real as usize);
        t.DxgkDdiSetRootPageTable = Some(counting_set_root);
    });
    let late = m.os_config().windows.reading().root_hand_over == RootHandOver::FirstUse;
    let (p, k) = user_process(&m);
    let t = okk(&m, k.create_allocation(4096));
    let before = SET_ROOTS.load(SeqCst);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    assert_eq!(q.path(), rvgpu_umd::submit::SubmissionPath::UserMode);
    for i in 1..=3u64 {
        let v = okk(&m, q.submit(&[fill(&t, 0, i)]));
        okk(&m, q.wait(v));
        assert_eq!(t.mem.load(0), i, "{}", diagnostics(&m));
    }
    assert_eq!(
        SET_ROOTS.load(SeqCst) - before,
        u64::from(!late),
        "SetRootPageTable calls for the doorbell-only context"
    );
    let before = SET_ROOTS.load(SeqCst);
    let ctx = okk(&m, k.create_context(0));
    let mut pdd = hw_queue_pdd();
    let kq = okk(&m, k.create_hw_queue(ctx, false, pdd.as_mut_bytes()));
    let buf = okk(
        &m,
        k.create_allocation_as(4096, rvgpu_hw::pdd::AllocationKind::Commands),
    );
    let mut words = [0u64; 8];
    let n = fill(&t, 8, 6).encode(&mut words).unwrap();
    for (i, w) in words[..n].iter().enumerate() {
        buf.mem.store(i as u64 * 8, *w);
    }
    for value in 1..=2 {
        okk(
            &m,
            k.submit_command_to_hw_queue(kq.handle, value, buf.gpu_va, (n * 8) as u32),
        );
        okk(&m, k.wait_for_fence(kq.progress_fence().unwrap(), value));
    }
    assert_eq!(t.mem.load(8), 6);
    assert_eq!(
        SET_ROOTS.load(SeqCst) - before,
        1,
        "one SetRootPageTable for the kernel-mode queue's context"
    );
    okk(&m, k.destroy_hw_queue(kq.handle));
    okk(&m, k.destroy_context(ctx));
    okk(&m, q.close());
    exits_clean(&m, &p);
}

/// `D3DDDI_CREATECONTEXTFLAGS::SynchronizationOnly`, `HwQueueSupported`, `NoKmdAccess`.
const SYNC_ONLY: u32 = 1 << 3;
const HW_QUEUE: u32 = 1 << 4;
const NO_KMD_CONTEXT: u32 = 1 << 5;

/// The context DDIs the spies below saw (system contexts left out), in order.
static CONTEXT_DDIS: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
/// The driver's own routines the spies forward to.
static REAL_CREATE: std::sync::OnceLock<rvgpu_ddi::submission::PDXGKDDI_CREATECONTEXT> =
    std::sync::OnceLock::new();
static REAL_DESTROY: std::sync::OnceLock<rvgpu_ddi::submission::PDXGKDDI_DESTROYCONTEXT> =
    std::sync::OnceLock::new();
static REAL_SUSPEND: std::sync::OnceLock<rvgpu_ddi::submission::PDXGKDDI_SUSPENDCONTEXT> =
    std::sync::OnceLock::new();
static REAL_RESUME: std::sync::OnceLock<rvgpu_ddi::submission::PDXGKDDI_RESUMECONTEXT> =
    std::sync::OnceLock::new();
static REAL_PROPERTIES: std::sync::OnceLock<PDXGKDDI_SETCONTEXTSCHEDULINGPROPERTIES> =
    std::sync::OnceLock::new();

/// Records `ddi` and forwards to the driver's routine in `$real`.
macro_rules! spied {
    ($real:ident, $ddi:literal, $($arg:expr),*) => {{
        CONTEXT_DDIS.lock().unwrap().push($ddi);
        match $real.get().copied().flatten() {
            // SAFETY: forwarded unchanged: the spy's own arguments, from the OS.
            Some(real) => unsafe { real($($arg),*) },
            None => STATUS_NOT_SUPPORTED,
        }
    }};
}

unsafe extern "system" fn spy_create(
    h: rvgpu_ddi::HANDLE,
    args: *mut rvgpu_ddi::submission::DXGKARG_CREATECONTEXT,
) -> rvgpu_ddi::NTSTATUS {
    // SAFETY: the OS's argument block.
    let system = unsafe { (*args).Flags }
        .is_set(rvgpu_ddi::submission::DXGK_CREATECONTEXTFLAGS::SystemContext);
    if system {
        return match REAL_CREATE.get().copied().flatten() {
            // SAFETY: forwarded unchanged.
            Some(real) => unsafe { real(h, args) },
            None => STATUS_NOT_SUPPORTED,
        };
    }
    spied!(REAL_CREATE, "DxgkDdiCreateContext", h, args)
}

unsafe extern "system" fn spy_destroy(h: rvgpu_ddi::HANDLE) -> rvgpu_ddi::NTSTATUS {
    spied!(REAL_DESTROY, "DxgkDdiDestroyContext", h)
}

unsafe extern "system" fn spy_suspend(
    h: rvgpu_ddi::HANDLE,
    args: *const rvgpu_ddi::submission::DXGKARG_SUSPENDCONTEXT,
) -> rvgpu_ddi::NTSTATUS {
    spied!(REAL_SUSPEND, "DxgkDdiSuspendContext", h, args)
}

unsafe extern "system" fn spy_resume(
    h: rvgpu_ddi::HANDLE,
    args: *const rvgpu_ddi::submission::DXGKARG_RESUMECONTEXT,
) -> rvgpu_ddi::NTSTATUS {
    spied!(REAL_RESUME, "DxgkDdiResumeContext", h, args)
}

unsafe extern "system" fn spy_properties(
    h: rvgpu_ddi::HANDLE,
    args: *const DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES,
) -> rvgpu_ddi::NTSTATUS {
    spied!(
        REAL_PROPERTIES,
        "DxgkDdiSetContextSchedulingProperties",
        h,
        args
    )
}

/// BR-93: 24H2 `DXGCONTEXT::Initialize` (@0x1402CFD80) calls no `DxgkDdiCreateContext` for a
/// `SynchronizationOnly` or a `NoKmdAccess` context, so no DDI ever names one: no scheduling
/// properties, suspend or resume (`VidSchiSuspendResumeHwContext` @0x140020730), destroy
/// (`DXGCONTEXT::DestroyContext` @0x1402CF0E0). A plain context beside them gets each.
#[test]
fn br_93_synchronization_only_and_no_kmd_access_contexts_reach_no_context_ddi() {
    let (m, r) = common::start_edits::start_with(common::start_edits::no_edit, |t| {
        let _ = REAL_CREATE.set(t.DxgkDdiCreateContext);
        let _ = REAL_DESTROY.set(t.DxgkDdiDestroyContext);
        let _ = REAL_SUSPEND.set(t.DxgkDdiSuspendContext);
        let _ = REAL_RESUME.set(t.DxgkDdiResumeContext);
        let _ = REAL_PROPERTIES.set(t.DxgkDdiSetContextSchedulingProperties);
        t.DxgkDdiCreateContext = Some(spy_create);
        t.DxgkDdiDestroyContext = Some(spy_destroy);
        t.DxgkDdiSuspendContext = Some(spy_suspend);
        t.DxgkDdiResumeContext = Some(spy_resume);
        t.DxgkDdiSetContextSchedulingProperties = Some(spy_properties);
    });
    ok(&m, r);
    let p = ok(&m, m.create_process(0));
    let k = m.kmt(&p);
    assert!(
        okk(&m, k.node_hw_scheduled(0)),
        "node 0 is hardware-scheduled"
    );
    let seen = || CONTEXT_DDIS.lock().unwrap().clone();
    let sync = ok(&m, m.create_context_raw(&p, 0, SYNC_ONLY, true));
    let no_kmd = ok(
        &m,
        m.create_context_raw(&p, 0, NO_KMD_CONTEXT | HW_QUEUE, true),
    );
    for c in [sync, no_kmd] {
        ok(&m, m.suspend_context(&p, c));
        ok(&m, m.resume_context(&p, c));
    }
    okk(&m, k.destroy_context(sync));
    okk(&m, k.destroy_context(no_kmd));
    assert_eq!(seen(), Vec::<&str>::new(), "no context DDI for either");
    // The spies see a context the KMD does create.
    let plain = ok(&m, m.create_context_raw(&p, 0, HW_QUEUE, true));
    ok(&m, m.suspend_context(&p, plain));
    ok(&m, m.resume_context(&p, plain));
    okk(&m, k.destroy_context(plain));
    assert_eq!(
        seen(),
        [
            "DxgkDdiCreateContext",
            "DxgkDdiSetContextSchedulingProperties",
            "DxgkDdiSuspendContext",
            "DxgkDdiResumeContext",
            "DxgkDdiDestroyContext",
        ]
    );
    no_fault(&m);
}

/// The `hContext` of each `DxgkDdiCreateHwQueue` the spy saw.
static QUEUE_CONTEXTS: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
static REAL_CREATE_QUEUE: std::sync::OnceLock<rvgpu_ddi::submission::PDXGKDDI_CREATEHWQUEUE> =
    std::sync::OnceLock::new();

unsafe extern "system" fn spy_create_queue(
    h: rvgpu_ddi::HANDLE,
    args: *mut rvgpu_ddi::submission::DXGKARG_CREATEHWQUEUE,
) -> rvgpu_ddi::NTSTATUS {
    QUEUE_CONTEXTS.lock().unwrap().push(h as usize);
    match REAL_CREATE_QUEUE.get().copied().flatten() {
        // SAFETY: forwarded unchanged: the spy's own arguments, from the OS.
        Some(real) => unsafe { real(h, args) },
        None => STATUS_NOT_SUPPORTED,
    }
}

/// A caller's private data: one buffer at a fixed address.
struct CallerData(std::cell::RefCell<Vec<u8>>);

const CALLER_DATA_AT: u64 = 0x7000_0000;

impl rvgpu_simos::kmt::context_virtual::CallerMemory for CallerData {
    fn read(&self, at: u64, size: u32) -> Result<Vec<u8>, NtStatus> {
        let b = self.0.borrow();
        match b.get(..size as usize) {
            Some(v) if at == CALLER_DATA_AT => Ok(v.to_vec()),
            _ => Err(NtStatus(STATUS_INVALID_PARAMETER)),
        }
    }
    fn write(&self, at: u64, bytes: &[u8]) -> Result<(), NtStatus> {
        let mut b = self.0.borrow_mut();
        match b.get_mut(..bytes.len()) {
            Some(d) if at == CALLER_DATA_AT => {
                d.copy_from_slice(bytes);
                Ok(())
            }
            _ => Err(NtStatus(STATUS_INVALID_PARAMETER)),
        }
    }
}

/// BR-94, a caller playing with `NoKmdAccess` (test signing on): a queue without the flag on a
/// `NoKmdAccess` context reaches `DxgkDdiCreateHwQueue` with the context's driver handle,
/// NULL, as 24H2 `DXGHWQUEUE::Initialize` @0x1402BBA30 and `InitializeForUserModeSubmission`
/// @0x1401DA74C pass it, and the KMD refuses it (no queue, nothing written back); a queue with
/// the flag on a context without it, or with private data `CheckNoKmdAccessPrivateData`
/// refuses, is STATUS_INVALID_PARAMETER before any DDI.
#[test]
fn br_94_queues_on_a_no_kmd_access_context_are_answered_as_24h2() {
    use rvgpu_simos::kmt::hw_queue::{self, D3DKMT_CREATEHWQUEUE};
    let (m, r) = common::start_edits::start_with(common::start_edits::no_edit, |t| {
        let _ = REAL_CREATE_QUEUE.set(t.DxgkDdiCreateHwQueue);
        t.DxgkDdiCreateHwQueue = Some(spy_create_queue);
    });
    ok(&m, r);
    let p = ok(&m, m.create_process(0));
    let no_kmd = ok(
        &m,
        m.create_context_raw(&p, 0, NO_KMD_CONTEXT | HW_QUEUE, true),
    );
    let plain = ok(&m, m.create_context_raw(&p, 0, HW_QUEUE, true));
    let create = |context: u32, flags: u32, data: Vec<u8>| {
        let size = data.len() as u32;
        let mem = CallerData(std::cell::RefCell::new(data));
        let mut a = D3DKMT_CREATEHWQUEUE {
            hHwContext: context,
            Flags: flags,
            PrivateDriverDataSize: size,
            pPrivateDriverData: if size == 0 { 0 } else { CALLER_DATA_AT },
            ..Default::default()
        };
        let r = hw_queue::dxgk_create_hw_queue_internal(&m, &mut a, |_| Some(p), &mem);
        (r.map(|q| q.handle).map_err(|e| e.0), a.hHwQueue)
    };
    for flags in [0, hw_queue::USER_MODE_SUBMISSION] {
        let (r, written) = create(no_kmd, flags, Vec::new());
        assert_eq!(
            r,
            Err(STATUS_INVALID_HANDLE),
            "flags {flags:#x}: the KMD's answer"
        );
        assert_eq!(written, 0, "flags {flags:#x}: hHwQueue written");
        assert_eq!(
            QUEUE_CONTEXTS.lock().unwrap().pop(),
            Some(0),
            "flags {flags:#x}: DxgkDdiCreateHwQueue with a NULL hContext"
        );
    }
    let nka = hw_queue::NO_KMD_ACCESS;
    let ums = hw_queue::USER_MODE_SUBMISSION;
    let mut tagged = vec![0u8; 264];
    tagged[..4].copy_from_slice(&0xFF00_0005u32.to_le_bytes());
    tagged[260..].copy_from_slice(&0xFF00_0006u32.to_le_bytes());
    let mut wrong_tag = tagged.clone();
    wrong_tag[260..].copy_from_slice(&0xFF00_0005u32.to_le_bytes());
    for (context, flags, data, why) in [
        (plain, nka, Vec::new(), "NoKmdAccess queue, plain context"),
        (
            plain,
            nka | ums,
            tagged.clone(),
            "NoKmdAccess queue, plain context",
        ),
        (no_kmd, nka, vec![0u8; 16], "private data below 264 bytes"),
        (no_kmd, nka | ums, wrong_tag, "the second tag wrong"),
    ] {
        assert_eq!(
            create(context, flags, data),
            (Err(STATUS_INVALID_PARAMETER), 0),
            "{why}"
        );
    }
    assert!(
        QUEUE_CONTEXTS.lock().unwrap().is_empty(),
        "no DDI for those"
    );
    // The context goes with no DDI and no queue left behind.
    okk(&m, m.kmt(&p).destroy_context(no_kmd));
    no_fault(&m);
}
