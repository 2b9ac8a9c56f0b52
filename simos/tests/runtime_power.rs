//! Runtime power management end to end (UM-13): the power components the KMD
//! reports at start and the rules the simulated Dxgkrnl applies to them (BR-100…BR-109,
//! docs/windows-bringup.md §10), and the engine really gated in F1 on the emulated GPU: work
//! that reaches a gated engine does not run, the OS's kernel path brings the node to F0 first,
//! and a driver that leaves its engine gated is caught.

mod common;

use rvgpu_simos::machine::answers::{ConnectPower, OsDisconnects};

use std::cell::{Cell, RefCell};
use std::sync::Mutex;

use common::*;
use rvgpu_ddi::adapter::{
    DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_NUMPOWERCOMPONENTS, DXGKQAITYPE_POWERCOMPONENTINFO,
};
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED, STATUS_SUCCESS};
use rvgpu_ddi::power::{
    DXGK_POWER_COMPONENT_ENGINE, DXGK_POWER_COMPONENT_MEMORY_REFRESH, DXGK_POWER_RUNTIME_COMPONENT,
    GUID_DXGKDDI_POWER_MANAGEMENT_PREPARE_TO_START, GUID_DXGKDDI_POWER_MANAGEMENT_STARTED,
    GUID_DXGKDDI_POWER_MANAGEMENT_STOPPED,
};
use rvgpu_ddi::{GUID, HANDLE, NTSTATUS, PVOID, SIZE_T, UINT};
use rvgpu_hw::cmd::Command;
use rvgpu_simos::{Machine, MachineConfig, Mode, SimError, UmsEvent};
use rvgpu_umd::kmt::{AllocationCpu, AllocationKind, Kmt};
use rvgpu_umd::submit::KernelQueue;
use zerocopy::IntoBytes;

type ComponentEdit = Box<dyn Fn(u32, &mut DXGK_POWER_RUNTIME_COMPONENT)>;
type FState = unsafe extern "system" fn(HANDLE, UINT, UINT) -> NTSTATUS;
type Control = unsafe extern "system" fn(
    HANDLE,
    *const GUID,
    PVOID,
    SIZE_T,
    PVOID,
    SIZE_T,
    *mut SIZE_T,
) -> NTSTATUS;

thread_local! {
    // The start-time queries run on the test thread (step mode), so per-thread hooks keep
    // parallel tests apart.
    static REFUSE_TYPE: Cell<Option<i32>> = const { Cell::new(None) };
    static COUNT: Cell<Option<u32>> = const { Cell::new(None) };
    static COMPONENT_EDIT: RefCell<Option<ComponentEdit>> = const { RefCell::new(None) };
    /// A P-state answer (count, P0 and P1 frequencies) in place of rvgpu's NOT_IMPLEMENTED.
    static P_ANSWER: Cell<Option<(u32, u32, u32)>> = const { Cell::new(None) };
}

/// The driver's QueryAdapterInfo with the test's edits to the power-component answers.
unsafe extern "system" fn edited_qai(h: HANDLE, args: *const DXGKARG_QUERYADAPTERINFO) -> NTSTATUS {
    // SAFETY: the OS's argument block.
    let (ty, input, out) = unsafe { ((*args).Type, (*args).pInputData, (*args).pOutputData) };
    if REFUSE_TYPE.get() == Some(ty) {
        return STATUS_NOT_SUPPORTED;
    }
    if ty == rvgpu_ddi::adapter::DXGKQAITYPE_POWERCOMPONENTPSTATEINFO {
        if let Some((n, f0, f1)) = P_ANSWER.get() {
            let mut p = rvgpu_ddi::power::DXGK_POWER_P_COMPONENT {
                StateCount: n,
                ..Default::default()
            };
            p.States[0].OperatingFrequency = f0;
            p.States[1].OperatingFrequency = f1;
            // SAFETY: the OS's 136-byte output.
            unsafe {
                out.cast::<rvgpu_ddi::power::DXGK_POWER_P_COMPONENT>()
                    .write_unaligned(p)
            };
            return STATUS_SUCCESS;
        }
    }
    // SAFETY: forwarded unchanged.
    let s = unsafe { real_qai(h, args) };
    if s >= 0 && ty == DXGKQAITYPE_NUMPOWERCOMPONENTS {
        if let Some(n) = COUNT.get() {
            // SAFETY: the OS's 4-byte output.
            unsafe { out.cast::<u32>().write_unaligned(n) };
        }
    }
    if s >= 0 && ty == DXGKQAITYPE_POWERCOMPONENTINFO {
        // SAFETY: the OS's 4-byte input (the component index) and its 336-byte output.
        let (k, c) = unsafe {
            (
                input.cast::<u32>().read_unaligned(),
                &mut *out.cast::<DXGK_POWER_RUNTIME_COMPONENT>(),
            )
        };
        COMPONENT_EDIT.with(|e| {
            if let Some(f) = e.borrow().as_ref() {
                f(k, c);
            }
        });
    }
    s
}

/// Loads rvgpu with its QueryAdapterInfo edited (the hooks above) and `table` applied.
fn start_edited(
    table: impl FnOnce(&mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA) + Send + 'static,
    idle_f1_ticks: u64,
) -> (Machine, Result<(), SimError>) {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.idle_f1_ticks = idle_f1_ticks;
    let mut m = Machine::new(cfg);
    let r = start_with_qai_hook(&mut m, edited_qai, table);
    REFUSE_TYPE.set(None);
    COUNT.set(None);
    P_ANSWER.set(None);
    COMPONENT_EDIT.with(|e| *e.borrow_mut() = None);
    (m, r)
}

fn edit_component(f: impl Fn(u32, &mut DXGK_POWER_RUNTIME_COMPONENT) + 'static) {
    COMPONENT_EDIT.with(|e| *e.borrow_mut() = Some(Box::new(f)));
}

fn no_table(_: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA) {}

fn f_state(ev: &[UmsEvent], node: u32, fstate: u32) -> Option<usize> {
    ev.iter().position(|e| {
        matches!(e, UmsEvent::SetFState { node: n, fstate: f, called: true } if *n == node && *f == fstate)
    })
}

// ---------------------------------------------------------------------------------------------
// What rvgpu reports and Windows' rules on it.

/// UM-13, BR-100…BR-107: rvgpu sets SupportRuntimePowerManagement, reports one engine
/// component per node (mapped to that node, F0 and F1, F0 latency and residency 0, F0 power
/// non-zero) and the OS starts runtime power management with no status outside the wrappers'
/// allow-lists.
#[test]
fn um_13_rvgpu_registers_one_engine_component_per_node() {
    let m = started(MachineConfig::single(Mode::Step));
    let caps = m.query_driver_caps(0).expect("caps");
    assert_eq!(caps.SupportRuntimePowerManagement, 1);
    assert!(m.runtime_power_management(0));
    let nodes = caps.GpuEngineTopology.NbAsymetricProcessingNodes;
    let comps = m.power_components(0);
    assert_eq!(comps.len(), nodes as usize);
    for (node, c) in (0u32..).zip(&comps) {
        assert_eq!(
            c.ComponentMapping.ComponentType,
            DXGK_POWER_COMPONENT_ENGINE
        );
        // SAFETY: the union's members are one UINT each.
        assert_eq!(
            unsafe { c.ComponentMapping.Anonymous.EngineDesc.NodeIndex },
            node
        );
        assert_eq!(c.StateCount, 2);
        assert_eq!(
            (
                c.States[0].TransitionLatency,
                c.States[0].ResidencyRequirement
            ),
            (0, 0)
        );
        assert_ne!(c.States[0].NominalPower, 0);
        assert!(c.States[1].TransitionLatency > 0);
        assert_eq!(c.Flags.Value, 0, "Dxgkrnl completes the transitions");
    }
    let log = m.triage_log(0);
    assert!(!log.iter().any(|l| l.starts_with("BR-23")), "{log:#?}");
    no_fault(&m);
}

/// BR-100: a failed NUMPOWERCOMPONENTS fails the start with the driver's status; more than
/// 0xFFFF components is INVALID_PARAMETER; none means no runtime power management (the start
/// succeeds, F-states are the OS's bookkeeping only).
#[test]
fn br_100_component_count() {
    REFUSE_TYPE.set(Some(DXGKQAITYPE_NUMPOWERCOMPONENTS));
    let (_, r) = start_edited(no_table, 0);
    refused(r, "BR-100", STATUS_NOT_SUPPORTED);
    COUNT.set(Some(0x1_0000));
    let (_, r) = start_edited(no_table, 0);
    refused(r, "BR-100", STATUS_INVALID_PARAMETER);
    COUNT.set(Some(0));
    let (m, r) = start_edited(no_table, 0);
    r.expect("no components: started without runtime power management");
    assert!(!m.runtime_power_management(0));
    assert!(m.power_components(0).is_empty());
}

/// BR-101: a failed POWERCOMPONENTINFO fails the start with the driver's status.
#[test]
fn br_101_component_info_failure_fails_the_start() {
    REFUSE_TYPE.set(Some(DXGKQAITYPE_POWERCOMPONENTINFO));
    let (_, r) = start_edited(no_table, 0);
    refused(r, "BR-101", STATUS_NOT_SUPPORTED);
}

/// BR-102…BR-106: each broken answer refuses the start with INVALID_PARAMETER, the rule
/// Windows names.
#[test]
fn br_102_to_106_broken_component_answers_refuse_the_start() {
    let cases: Vec<(&str, ComponentEdit)> = vec![
        ("BR-102", Box::new(|_, c| c.StateCount = 9)),
        ("BR-102", Box::new(|_, c| c.StateCount = 0)),
        ("BR-103", Box::new(|_, c| c.Flags.Value = 1 << 5)),
        ("BR-103", Box::new(|_, c| c.ProviderCount = 17)),
        ("BR-103", Box::new(|_, c| c.Flags.Value = 1 << 4)), // ActiveInD3 on an engine
        (
            "BR-104",
            Box::new(|_, c| c.ComponentMapping.ComponentType = DXGK_POWER_COMPONENT_MEMORY_REFRESH),
        ),
        ("BR-105", Box::new(|_, c| c.States[0].TransitionLatency = 1)),
        ("BR-105", Box::new(|_, c| c.States[0].NominalPower = 0)),
        (
            "BR-105",
            Box::new(|_, c| {
                c.States[0].NominalPower = 10;
                c.States[1].NominalPower = 20;
            }),
        ),
        (
            "BR-106",
            Box::new(|k, c| {
                if k == 1 {
                    c.ComponentMapping.Anonymous.EngineDesc.NodeIndex = 7;
                }
            }),
        ),
    ];
    for (rule, edit) in cases {
        COMPONENT_EDIT.with(|e| *e.borrow_mut() = Some(edit));
        let (_, r) = start_edited(no_table, 0);
        refused(r, rule, STATUS_INVALID_PARAMETER);
    }
    // Unknown power is not compared (and a valid answer starts).
    edit_component(|_, c| c.States[1].NominalPower = u32::MAX);
    let (_, r) = start_edited(no_table, 0);
    r.expect("unknown F1 power is allowed");
}

/// BR-109: Windows asks every engine component for its P-states; rvgpu's NOT_IMPLEMENTED is
/// tolerated (the plain starts above), a valid answer is accepted, and an answer with a zero
/// or rising frequency or more than 32 states refuses the start with INVALID_PARAMETER.
#[test]
fn br_109_p_state_answers() {
    P_ANSWER.set(Some((2, 1000, 500)));
    let (_, r) = start_edited(no_table, 0);
    r.expect("valid P-states");
    for bad in [(2, 1000, 0), (2, 500, 1000), (33, 1000, 500)] {
        P_ANSWER.set(Some(bad));
        let (_, r) = start_edited(no_table, 0);
        refused(r, "BR-109", STATUS_INVALID_PARAMETER);
    }
}

static CONTROL_CALLS: Mutex<Vec<GUID>> = Mutex::new(Vec::new());
static REAL_CONTROL: Mutex<Option<Control>> = Mutex::new(None);
/// The driver context the OS passed (for direct calls with garbage arguments).
static CONTROL_CTX: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

unsafe extern "system" fn recorded_control(
    h: HANDLE,
    code: *const GUID,
    i: PVOID,
    is: SIZE_T,
    o: PVOID,
    os: SIZE_T,
    ret: *mut SIZE_T,
) -> NTSTATUS {
    CONTROL_CTX.store(h as usize, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: the OS's GUID for the call.
    CONTROL_CALLS.lock().unwrap().push(unsafe { *code });
    let real = REAL_CONTROL.lock().unwrap().expect("real control request");
    // SAFETY: forwarded unchanged.
    unsafe { real(h, code, i, is, o, os, ret) }
}

/// BR-107: after a successful start the OS sends PREPARE_TO_START then STARTED, and STOPPED at
/// stop; rvgpu answers each with STATUS_SUCCESS (nothing in the triage log). DDI robustness
/// on the started adapter: garbage component indexes, F-states, control codes and
/// QueryAdapterInfo inputs are STATUS_INVALID_PARAMETER (the one failure status each
/// wrapper or page allows), never a crash, and change nothing.
#[test]
fn br_107_runtime_power_notifications_and_ddi_robustness() {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    let (fstate, qai) = load_hooked(&mut m, |t| {
        *REAL_CONTROL.lock().unwrap() = t.DxgkDdiPowerRuntimeControlRequest;
        t.DxgkDdiPowerRuntimeControlRequest = Some(recorded_control);
        (t.DxgkDdiSetPowerComponentFState, t.DxgkDdiQueryAdapterInfo)
    });
    let (fstate, qai) = (fstate.expect("filled"), qai.expect("filled"));
    m.start_adapter(0).expect("start");
    {
        let _c = m.enter_context();
        let ctx = CONTROL_CTX.load(std::sync::atomic::Ordering::Relaxed) as HANDLE;
        let control = REAL_CONTROL.lock().unwrap().expect("real");
        let inv = STATUS_INVALID_PARAMETER;
        // SAFETY: the driver's DDIs with its live context and garbage values (what is tested).
        unsafe {
            assert_eq!(fstate(ctx, 99, 0), inv, "component past the nodes");
            assert_eq!(fstate(ctx, 1 << 16, 0), inv, "physical adapter 1");
            assert_eq!(fstate(ctx, 0, 2), inv, "F2 of a two-state component");
            assert_eq!(fstate(ctx, 0, u32::MAX), inv);
            assert_eq!(fstate(std::ptr::null_mut(), 0, 0), inv, "NULL context");
            let mut ret: SIZE_T = 77;
            let other = GUID {
                Data1: 0x1234,
                ..GUID::default()
            };
            assert_eq!(
                control(
                    ctx,
                    &other,
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    0,
                    &mut ret
                ),
                inv,
                "a control code rvgpu does not define"
            );
            assert_eq!(ret, 0, "nothing returned");
            assert_eq!(
                control(
                    ctx,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut()
                ),
                inv
            );
            let (mut index, mut zero, mut one) = (99u32, 0u32, 1u32);
            let mut out = [0u8; 336];
            let mut args = DXGKARG_QUERYADAPTERINFO {
                Type: DXGKQAITYPE_POWERCOMPONENTINFO,
                pInputData: (&mut index as *mut u32).cast(),
                InputDataSize: 4,
                pOutputData: out.as_mut_ptr().cast(),
                OutputDataSize: 336,
                Flags: Default::default(),
                hKmdProcessHandle: std::ptr::null_mut(),
            };
            assert_eq!(qai(ctx, &args), inv, "component 99");
            args.pInputData = (&mut zero as *mut u32).cast();
            args.InputDataSize = 2;
            assert_eq!(qai(ctx, &args), inv, "short input");
            args.InputDataSize = 4;
            args.OutputDataSize = 335;
            assert_eq!(qai(ctx, &args), inv, "short output");
            args.OutputDataSize = 336;
            args.pInputData = std::ptr::null_mut();
            assert_eq!(qai(ctx, &args), inv, "NULL input");
            args.Type = DXGKQAITYPE_NUMPOWERCOMPONENTS;
            args.pInputData = (&mut one as *mut u32).cast();
            assert_eq!(qai(ctx, &args), inv, "physical adapter 1");
            args.pOutputData = std::ptr::null_mut();
            args.pInputData = (&mut zero as *mut u32).cast();
            assert_eq!(qai(ctx, &args), inv, "NULL output");
        }
        assert!(out_unchanged(&m));
    }
    assert_eq!(
        *CONTROL_CALLS.lock().unwrap(),
        [
            GUID_DXGKDDI_POWER_MANAGEMENT_PREPARE_TO_START,
            GUID_DXGKDDI_POWER_MANAGEMENT_STARTED
        ]
    );
    m.stop_adapter(0).expect("stop");
    assert_eq!(
        CONTROL_CALLS.lock().unwrap().last(),
        Some(&GUID_DXGKDDI_POWER_MANAGEMENT_STOPPED)
    );
    assert!(!m.triage_log(0).iter().any(|l| l.starts_with("BR-23")));
}

// ---------------------------------------------------------------------------------------------
// UM-13: the engine is really gated.

/// A kernel-mode hardware queue made from the thunks, and a command buffer for it.
struct RawKernelQueue {
    queue: rvgpu_umd::kmt::KmtHandle,
    buffer: rvgpu_umd::kmt::Allocation<rvgpu_simos::kmt::SimMem>,
}

fn raw_kernel_queue(m: &Machine, k: &rvgpu_simos::kmt::SimKmt<'_>, node: u32) -> RawKernelQueue {
    let context = okk(m, k.create_context(node));
    let mut qp = hw_queue_pdd();
    let queue = okk(m, k.create_hw_queue(context, false, qp.as_mut_bytes())).handle;
    let buffer = okk(m, k.create_allocation_as(4096, AllocationKind::Commands));
    RawKernelQueue { queue, buffer }
}

/// Writes `cmds` at the start of the queue's command buffer; returns its size in bytes.
fn encode(q: &RawKernelQueue, cmds: &[Command]) -> u32 {
    let mut words = Vec::new();
    for c in cmds {
        let mut buf = vec![0u64; c.len()];
        c.encode(&mut buf).unwrap();
        words.extend(buf);
    }
    for (i, w) in words.iter().enumerate() {
        q.buffer.mem.store(i as u64 * 8, *w);
    }
    (words.len() * 8) as u32
}

/// A step-mode machine whose engines idle to F1 after 20,000 ticks, with an OS that moves an
/// idle engine to F1 on the driver's request. 24H2 drops the engine-state report
/// (`M:VidSchDdiNotifyInterruptWorker` @0x140006B60 has no case for it) and leaves F1 to
/// PoFx's idle policy, which the simulation does not model; the pages act on the report. The
/// other answers are the environment's reading, so the connect and disconnect paths below
/// still run as each reading has them.
fn f1_config() -> MachineConfig {
    use rvgpu_simos::machine::answers::EngineStateReports;
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.idle_f1_ticks = 20_000;
    cfg.os.windows = cfg
        .os
        .windows
        .answering(|r| r.engine_state = EngineStateReports::Acted);
    cfg
}

/// Runs until `node` is in F1 (the engine idled, asked, and the OS moved it).
fn until_f1(m: &Machine, node: u32) {
    for _ in 0..50 {
        if m.engine_fstate(0, node) == Some(1) {
            return;
        }
        ok(m, m.run_steps(20));
    }
    panic!("node {node} never went to F1: {:#?}", m.ums_events(0));
}

/// UM-13: in F1 the emulated engine is really gated; work that reaches it (here through the
/// raw DDI, bypassing the OS's power handling) does not run. The OS's kernel path then
/// activates the node first (SetPowerComponentFState(F0) before the submission) and both
/// submissions run, in order.
#[test]
fn um_13_gated_engine_runs_nothing_until_the_os_brings_f0() {
    let m = started(f1_config());
    let (p, k) = user_process(&m);
    let t = okk(&m, k.create_allocation(4096));
    let q = raw_kernel_queue(&m, &k, 0);
    until_f1(&m, 0);
    let dev = m.device(0).expect("device");
    assert!(dev.engine_snapshot(0).unwrap().gated, "F1 gates the engine");
    let bytes = encode(&q, &[fill(&t, 0, 0x11)]);
    let s = ok(
        &m,
        m.ddi_submit_command_to_hw_queue(&p, q.queue, 1, q.buffer.gpu_va, bytes),
    );
    assert_eq!(s, STATUS_SUCCESS);
    ok(&m, m.run_steps(100));
    assert_eq!(t.mem.load(0), 0, "nothing ran on the gated engine");
    assert_eq!(m.hw_queue_progress(0, q.queue).map(|p| p.1), Some(0));
    let before = m.ums_events(0).len();
    // The OS path: a second buffer at offset 512 of the same allocation.
    let second = fill(&t, 8, 0x22);
    let mut words = vec![0u64; second.len()];
    second.encode(&mut words).unwrap();
    for (i, w) in words.iter().enumerate() {
        q.buffer.mem.store(512 + i as u64 * 8, *w);
    }
    okk(
        &m,
        k.submit_command_to_hw_queue(q.queue, 2, q.buffer.gpu_va + 512, (words.len() * 8) as u32),
    );
    let ev = m.ums_events(0)[before..].to_vec();
    let f0 = f_state(&ev, 0, 0).unwrap_or_else(|| panic!("F0 first: {ev:#?}"));
    let sub = ev
        .iter()
        .position(|e| matches!(e, UmsEvent::Submit { value: 2, .. }))
        .unwrap_or_else(|| panic!("submitted: {ev:#?}"));
    assert!(f0 < sub, "F0 before the submission: {ev:#?}");
    assert!(!dev.engine_snapshot(0).unwrap().gated);
    ok(&m, m.run_steps(100));
    assert_eq!((t.mem.load(0), t.mem.load(8)), (0x11, 0x22), "both ran");
    assert_eq!(m.hw_queue_progress(0, q.queue).map(|p| p.1), Some(2));
    no_fault(&m);
}

/// UM-13 through the UMD: a kernel queue's work, F1 while idle, more work: the node is
/// brought back to F0 before the submission and the work completes.
#[test]
fn um_13_kernel_queue_work_after_f1_completes() {
    let m = started(f1_config());
    let (_p, k) = user_process(&m);
    let t = okk(&m, k.create_allocation(4096));
    let mut kq = okk(&m, KernelQueue::new(k, &config(1)));
    submit_wait(&m, &mut kq, &[fill(&t, 0, 1)]);
    until_f1(&m, 1);
    assert!(m.device(0).unwrap().engine_snapshot(1).unwrap().gated);
    submit_wait(&m, &mut kq, &[fill(&t, 0, 2)]);
    assert_eq!(t.mem.load(0), 2);
    assert_eq!(m.engine_fstate(0, 1), Some(0));
    no_fault(&m);
}

static REAL_FSTATE: Mutex<Option<FState>> = Mutex::new(None);
/// Set once the test has seen its engine go to F1: from then on [`lazy_fstate`] ignores F0.
static LAZY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A broken driver, once [`LAZY`] is set: ignores F0 requests (the engine stays gated) but
/// reports success. Before, it is the driver (VidMm's paging may wake the node first).
unsafe extern "system" fn lazy_fstate(h: HANDLE, component: UINT, fstate: UINT) -> NTSTATUS {
    if fstate == 0 && LAZY.load(std::sync::atomic::Ordering::SeqCst) {
        return STATUS_SUCCESS;
    }
    let real = REAL_FSTATE.lock().unwrap().expect("real DDI");
    // SAFETY: forwarded unchanged.
    unsafe { real(h, component, fstate) }
}

/// UM-13: a driver that leaves its engine gated while the OS holds the node in F0 is a
/// simulation error naming the driver (its work would never run); the OS refuses the
/// submission.
#[test]
fn um_13_engine_left_gated_in_f0_is_a_driver_bug() {
    LAZY.store(false, std::sync::atomic::Ordering::SeqCst);
    let mut m = Machine::new(f1_config());
    m.load_driver_with(|t| {
        *REAL_FSTATE.lock().unwrap() = t.DxgkDdiSetPowerComponentFState;
        t.DxgkDdiSetPowerComponentFState = Some(lazy_fstate);
    })
    .expect("load");
    m.start_adapter(0).expect("start");
    let (_p, k) = user_process(&m);
    let t = okk(&m, k.create_allocation(4096));
    let mut kq = okk(&m, KernelQueue::new(k, &config(0)));
    submit_wait(&m, &mut kq, &[fill(&t, 0, 1)]);
    until_f1(&m, 0);
    LAZY.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(kq.submit(&[fill(&t, 0, 2)]).is_err());
    let fault = format!("{:?}", m.fault());
    assert!(fault.contains("power-gated"), "{fault}");
}

/// Nothing the garbage calls did changed an engine's power state.
fn out_unchanged(m: &Machine) -> bool {
    let d = m.device(0).expect("device");
    (0..2).all(|e| d.engine_snapshot(e).is_some_and(|s| !s.gated))
}

/// UM-13, F1 only when idle: a queue blocked on a GPU wait leaves the engine idle, so the
/// engine asks for F1, and the node stays in F0 (`F1Declined`; the engine must not be gated
/// under a queue that still has work). By the pages the OS disconnects the node's doorbell
/// and sees the queue's last-queued progress value ahead of its fence; 24H2's OS sees none of
/// the queue's work, but the driver holds the engine's component for the connected doorbell.
/// Once the wait is satisfied and the work completes, the deferred F1 follows by the pages
/// (the next submission reconnects, F0 first, and runs); on 24H2 the connected doorbell keeps
/// the engine in F0 and the next ring runs at once.
#[test]
fn um_13_f1_waits_until_a_blocked_queue_completes() {
    use rvgpu_umd::submit::UserQueue;
    let m = started(f1_config());
    let (_p, k) = user_process(&m);
    let t = okk(&m, k.create_allocation(4096));
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    let v = okk(
        &m,
        q.submit(&[
            Command::FenceWait {
                addr: t.gpu_va + 512,
                value: 1,
            },
            fill(&t, 0, 7),
        ]),
    );
    let declined = |m: &Machine| {
        m.ums_events(0)
            .iter()
            .any(|e| matches!(e, UmsEvent::F1Declined { node: 0 }))
    };
    for _ in 0..50 {
        if declined(&m) {
            break;
        }
        ok(&m, m.run_steps(20));
    }
    assert!(declined(&m), "{:#?}", m.ums_events(0));
    assert_eq!(m.engine_fstate(0, 0), Some(0), "busy node stays F0");
    assert!(!m.device(0).unwrap().engine_snapshot(0).unwrap().gated);
    // Satisfy the wait (a CPU write, then WAIT_RESCAN: hardware.md 5.4).
    t.mem.store(512, 1);
    {
        use rvgpu_hw::mmio::MmioBus;
        m.device(0)
            .unwrap()
            .write64(rvgpu_hw::regs::WAIT_RESCAN, t.gpu_va + 512);
    }
    okk(&m, q.wait(v));
    assert_eq!(t.mem.load(0), 7);
    let disconnects =
        m.os_config().windows.reading().os_disconnects == OsDisconnects::OnPowerAndReset;
    if disconnects {
        until_f1(&m, 0);
        assert!(m.device(0).unwrap().engine_snapshot(0).unwrap().gated);
    } else {
        ok(&m, m.run_steps(500));
        assert_eq!(m.engine_fstate(0, 0), Some(0), "the driver holds the node");
        assert!(!m.device(0).unwrap().engine_snapshot(0).unwrap().gated);
    }
    submit_wait(&m, &mut q, &[fill(&t, 0, 8)]);
    assert_eq!(t.mem.load(0), 8);
    assert_eq!(m.engine_fstate(0, 0), Some(0));
    no_fault(&m);
}

/// UM-13, UM-14, held components: a connected doorbell holds its engine's power component
/// (the driver's `DxgkCbSetPowerComponentActive` at connect) and PoFx powers the device down
/// only once every component is idle. With an idle user-mode queue connected, the runtime
/// power-down backs out where the OS disconnects no doorbell (24H2); where it disconnects them
/// first (the pages) the driver gives the reference back and the adapter goes to D3. Either
/// way the queue's next ring runs with no other wake-up.
#[test]
fn um_14_connected_idle_queue_holds_its_engine_and_its_next_ring_runs() {
    use rvgpu_simos::Power;
    use rvgpu_umd::submit::UserQueue;
    let m = machine_with(Mode::Step, |_| {});
    let (_p, k) = user_process(&m);
    let t = okk(&m, k.create_allocation(4096));
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    submit_wait(&m, &mut q, &[fill(&t, 0, 1)]);
    let disconnects =
        m.os_config().windows.reading().os_disconnects == OsDisconnects::OnPowerAndReset;
    let down = ok(&m, m.power_down(0));
    assert_eq!(down, disconnects, "{:#?}", m.ums_events(0));
    let state = if disconnects { Power::D3 } else { Power::D0 };
    assert_eq!(m.power_state(0), Some(state));
    let v = okk(&m, q.submit(&[fill(&t, 0, 2)]));
    ok(&m, m.run_steps(200));
    assert_eq!(t.mem.load(0), 2, "the ring after the power-down ran");
    okk(&m, q.wait(v));
    no_fault(&m);
}

/// UM-13, held components: a doorbell connecting to an engine in F1 has the driver power the
/// engine up (its `DxgkCbSetPowerComponentActive` returns with the component in F0) before the
/// first ring is fetched; 24H2's connect brings no F0 itself. The reference is given back at
/// the doorbell's destroy, after which the idle engine goes to F1 again.
#[test]
fn um_13_connect_to_an_engine_in_f1_powers_it_before_the_first_ring() {
    use rvgpu_umd::submit::UserQueue;
    let m = started(f1_config());
    let (_p, k) = user_process(&m);
    let t = okk(&m, k.create_allocation(4096));
    until_f1(&m, 0);
    assert!(m.device(0).unwrap().engine_snapshot(0).unwrap().gated);
    m.clear_ums_events(0);
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    submit_wait(&m, &mut q, &[fill(&t, 0, 3)]);
    assert_eq!(t.mem.load(0), 3);
    let ev = m.ums_events(0);
    let held = ev
        .iter()
        .position(|e| {
            matches!(
                e,
                UmsEvent::DriverComponentRef {
                    node: 0,
                    active: true,
                    ..
                }
            )
        })
        .unwrap_or_else(|| panic!("the driver took a reference: {ev:#?}"));
    let conn = ev
        .iter()
        .position(|e| matches!(e, UmsEvent::ConnectDoorbell { .. }))
        .unwrap_or_else(|| panic!("connected: {ev:#?}"));
    let f0 = f_state(&ev, 0, 0).unwrap_or_else(|| panic!("F0: {ev:#?}"));
    assert!(
        held < conn && f0 < conn,
        "reference and F0 before the connect: {ev:#?}"
    );
    if m.os_config().windows.reading().connect_power == ConnectPower::DriverHolds {
        assert!(held < f0, "the driver's reference brought F0: {ev:#?}");
    }
    okk(&m, q.close());
    assert!(m.ums_events(0).iter().any(|e| matches!(
        e,
        UmsEvent::DriverComponentRef {
            node: 0,
            active: false,
            count: 0
        }
    )));
    until_f1(&m, 0);
    no_fault(&m);
}

under_the_pages!();
