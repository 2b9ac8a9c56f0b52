//! User-mode work submission under power management (UM-11 … UM-14) end to end: F1 of an
//! engine, D3 of the adapter, suspend and resume of contexts, with the real UMD through the
//! simulated D3DKMT thunks against the simulated Dxgkrnl, the real KMD and the emulated GPU. One
//! test per requirement that can be proven here, named after it (the other UM requirements are
//! `usermode_submission`).

mod common;

use common::ums::{
    connected_raw_queue, events_of, fill, pages_machine, position, process_with_target, target,
    write_ring,
};
use common::*;
use std::time::Duration;

use rvgpu_ddi::dxgkrnl::{
    D3DDDI_DOORBELLSTATUS_CONNECTED, D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD,
    D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
};
use rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED;
use rvgpu_simos::{DoorbellState, Machine, MachineConfig, Mode, Power, UmsEvent, UmsProcess};
use rvgpu_umd::kmt::{AllocationCpu, DoorbellCpu, Kmt};
use rvgpu_umd::submit::{KernelQueue, SubmissionPath, UserQueue};
// ---------------------------------------------------------------------------------------------
// UM-13: F1.

/// UM-13: an idle engine asks for F1 (`DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE`,
/// TransitionToF1): the OS disconnects every doorbell of that engine (`DISCONNECTED_RETRY`),
/// leaves the other engine's alone, and moves the node's power component to F1; the next
/// submission reconnects, which brings the node back to F0, and the work completes.
#[test]
fn um_13_f1_disconnects_the_engines_doorbells() {
    let m = pages_machine(Mode::Step, |a| {
        a.device.doorbells = 4;
        a.device.idle_f1_ticks = 20_000;
    });
    let (p, k, t) = process_with_target(&m);
    let mut q0 = okk(&m, UserQueue::new(k, &config(0)));
    submit_wait(&m, &mut q0, &[fill(&t, 1)]);
    let e1 = connected_raw_queue(&m, &k, 1);
    ok(&m, m.run_steps(200));
    let ev = events_of(&m);
    let doorbells: Vec<u32> = ev
        .iter()
        .filter_map(|e| match e {
            UmsEvent::CreateDoorbell { doorbell } => Some(*doorbell),
            _ => None,
        })
        .collect();
    let (d0, d1) = (doorbells[0], e1.doorbell.handle);
    // Each engine's F1 request disconnects exactly that engine's doorbells, then moves its
    // power component to F1 (engine 1, never used, may idle first).
    for (node, mine, other) in [(0u32, d0, d1), (1, d1, d0)] {
        // An idle engine may also have gone to F1 before the doorbell existed (the OS's own
        // paging work at process creation runs rounds): look from the doorbell's creation on.
        let from = position(&ev, |e| *e == UmsEvent::CreateDoorbell { doorbell: mine })
            .unwrap_or_else(|| panic!("doorbell {mine} created: {ev:#?}"));
        let after = |p: &dyn Fn(&UmsEvent) -> bool| ev[from..].iter().position(p).map(|i| i + from);
        let f1 = after(&|e| *e == UmsEvent::EngineState { node, state: 1 })
            .unwrap_or_else(|| panic!("engine {node} reported TransitionToF1: {ev:#?}"));
        let fs =
            after(&|e| matches!(e, UmsEvent::SetFState { node: n, fstate: 1, .. } if *n == node))
                .unwrap_or_else(|| panic!("node {node} went to F1: {ev:#?}"));
        let between = &ev[f1..fs];
        assert!(
            between.contains(&UmsEvent::DisconnectDoorbell {
                doorbell: mine,
                reason: D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
            }),
            "report, disconnect, then F1 (node {node}): {ev:#?}"
        );
        assert!(
            !between.iter().any(
                |e| matches!(e, UmsEvent::DisconnectDoorbell { doorbell, .. } if *doorbell == other)
            ),
            "the other engine's doorbell is not touched (node {node}): {ev:#?}"
        );
        assert_eq!(m.engine_fstate(0, node), Some(1));
    }
    assert_eq!(
        m.doorbell_info(0, d0).unwrap().status,
        D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY
    );
    let v = okk(&m, q0.submit(&[fill(&t, 2)]));
    assert_eq!(
        m.engine_fstate(0, 0),
        Some(0),
        "the reconnect brought F0 back"
    );
    okk(&m, q0.wait(v));
    assert_eq!(t.mem.load(0), 2);
    assert_eq!(q0.path(), SubmissionPath::UserMode);
    drop(q0);
    exits_clean(&m, &p);
}

// ---------------------------------------------------------------------------------------------
// UM-14: D3.

/// UM-14: D0→D3 suspends every context, disconnects every doorbell (`DISCONNECTED_RETRY`),
/// then sets D3; a submission in D3 reconnects, which powers up (D0), connects, and resumes
/// the contexts; the work written meanwhile completes.
#[test]
fn um_14_d3_suspends_disconnects_and_a_connect_wakes_the_gpu() {
    let m = pages_machine(Mode::Step, |a| a.device.doorbells = 4);
    let (p, k, t) = process_with_target(&m);
    let mut q0 = okk(&m, UserQueue::new(k, &config(0)));
    let mut q1 = okk(&m, UserQueue::new(k, &config(1)));
    submit_wait(&m, &mut q0, &[fill(&t, 1)]);
    m.clear_ums_events(0);
    assert!(ok(&m, m.power_down(0)), "idle: powered down");
    assert_eq!(m.power_state(0), Some(Power::D3));
    let ev = events_of(&m);
    let suspends: Vec<usize> = ev
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, UmsEvent::SuspendContext { .. }))
        .map(|(i, _)| i)
        .collect();
    let discs: Vec<usize> = ev
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, UmsEvent::DisconnectDoorbell { .. }))
        .map(|(i, _)| i)
        .collect();
    let d3 = position(&ev, |e| matches!(e, UmsEvent::SetPowerState { state: 4 })).unwrap();
    assert_eq!(suspends.len(), 2, "{ev:#?}");
    assert_eq!(discs.len(), 2, "{ev:#?}");
    assert!(suspends.iter().max() < discs.iter().min() && discs.iter().max() < Some(&d3));
    m.clear_ums_events(0);
    let v = okk(&m, q1.submit(&[fill64(t.gpu_va + 1024, 5)]));
    let ev = events_of(&m);
    let d0 = position(&ev, |e| matches!(e, UmsEvent::SetPowerState { state: 1 })).unwrap();
    let conn = position(&ev, |e| matches!(e, UmsEvent::ConnectDoorbell { .. })).unwrap();
    let resume = position(&ev, |e| matches!(e, UmsEvent::ResumeContext { .. })).unwrap();
    assert!(d0 < conn && conn < resume, "D0, connect, resume: {ev:#?}");
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, UmsEvent::ResumeContext { .. }))
            .count(),
        2,
        "every context the power-down suspended is resumed"
    );
    okk(&m, q1.wait(v));
    assert_eq!(t.mem.load(1024), 5);
    submit_wait(&m, &mut q0, &[fill(&t, 6)]);
    assert_eq!(t.mem.load(0), 6);
    drop((q0, q1));
    exits_clean(&m, &p);
}

/// The driver touched no register of the function in D3hot and never took D3hot's all-ones
/// for a lost device.
fn assert_d3hot_untouched(m: &Machine) {
    assert!(
        !m.driver_log()
            .iter()
            .any(|l| l.text.contains("device lost")),
        "the driver took D3hot for a lost device"
    );
    assert_eq!(
        ok(m, m.d3hot_accesses(0)),
        0,
        "no register touched in D3hot"
    );
}

/// UM-14 in D3hot: the function's BARs do not decode (reads all-ones, writes dropped, PCI
/// power management). An interrupt on a shared line reaches the driver's ISR meanwhile (the
/// interrupt stays connected in D3); the ISR must not take the all-ones it would read for a
/// lost device. Back in D0 the queue runs as before and nothing is reported removed.
#[test]
fn um_14_shared_line_interrupt_in_d3_is_declined_and_the_gpu_comes_back() {
    let m = pages_machine(Mode::Step, |a| a.device.doorbells = 4);
    let (p, k, t) = process_with_target(&m);
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    submit_wait(&m, &mut q, &[fill(&t, 1)]);
    assert!(ok(&m, m.power_down(0)), "idle: powered down");
    let (isr_calls, _) = m.interrupt_counts(0);
    ok(&m, m.raise_interrupt(0));
    assert_eq!(m.interrupt_counts(0).0, isr_calls + 1, "the ISR ran");
    // Long enough for any driver timer to have looked at the device too.
    ok(&m, m.run_steps(300));
    submit_wait(&m, &mut q, &[fill(&t, 2)]);
    assert_eq!(t.mem.load(0), 2);
    assert_d3hot_untouched(&m);
    drop(q);
    exits_clean(&m, &p);
}

/// UM-14 in D3hot: a queue closed while the GPU is powered down (its doorbell and hardware
/// queue destroyed) and one created then: the driver touches no register while the function
/// is in D3hot (before: the runlist commit's all-ones read-back made it declare the device
/// lost); back in D0 the other queues run and the closed one is gone from the device. (The
/// closed queue had left the device's runlist at the power-down's suspend already, so this
/// does not show the full runlist commit at D0 to be needed.)
#[test]
fn um_14_queue_closed_in_d3_is_off_the_device_after_d0() {
    // The pages' OS disconnects the doorbells before D3; on 24H2 a connected doorbell holds
    // its engine and the GPU never reaches D3 with one (next test).
    let m = pages_machine(Mode::Step, |a| a.device.doorbells = 4);
    let (p, k, t) = process_with_target(&m);
    let mut q0 = okk(&m, UserQueue::new(k, &config(0)));
    let mut q1 = okk(&m, UserQueue::new(k, &config(0)));
    submit_wait(&m, &mut q0, &[fill(&t, 1)]);
    let queues_before = m
        .device(0)
        .unwrap()
        .engine_snapshot(0)
        .unwrap()
        .queues
        .len();
    assert!(ok(&m, m.power_down(0)), "idle: powered down");
    okk(&m, q0.close());
    submit_wait(&m, &mut q1, &[fill(&t, 2)]);
    assert_eq!(t.mem.load(0), 2);
    assert_eq!(
        m.device(0)
            .unwrap()
            .engine_snapshot(0)
            .unwrap()
            .queues
            .len(),
        queues_before - 1,
        "the closed queue left the device's runlist"
    );
    // A queue created while powered down reaches the device once it is back in D0.
    assert!(ok(&m, m.power_down(0)), "idle again: powered down");
    let mut q2 = okk(&m, UserQueue::new(k, &config(0)));
    submit_wait(&m, &mut q2, &[fill(&t, 3)]);
    assert_eq!(t.mem.load(0), 3);
    assert_d3hot_untouched(&m);
    drop((q1, q2));
    exits_clean(&m, &p);
}

/// UM-14 against a Dxgkrnl that skips the doorbell disconnects before D3 (24H2, and the
/// pre-release user-mode submission of 10.0.22631, docs/usermode-submission.md). Each connected
/// doorbell holds its engine's power component (the driver's `DxgkCbSetPowerComponentActive`),
/// and PoFx powers the device down only once every component is idle: the runtime power-down
/// backs out (the contexts it suspended resumed), the GPU stays in D0, and a ring runs at once,
/// never reaching a function in D3hot.
#[test]
fn um_14_doorbells_left_connected_hold_the_gpu_in_d0_and_their_work_runs() {
    // Dedicated doorbells, then one global page the process's doorbells share.
    for global in [false, true] {
        doorbells_left_connected_hold_d0(global);
    }
}

fn doorbells_left_connected_hold_d0(global: bool) {
    let m = machine_with(Mode::Step, |a| {
        a.device.doorbells = 4;
        a.device.global_doorbell = global;
    });
    let (p, k, t) = process_with_target(&m);
    let mut q0 = okk(&m, UserQueue::new(k, &config(0)));
    let mut q1 = okk(&m, UserQueue::new(k, &config(0)));
    for (i, q) in [&mut q0, &mut q1].into_iter().enumerate() {
        submit_wait(&m, q, &[fill(&t, i as u64 + 1)]);
    }
    assert!(
        !ok(&m, m.power_down_leaving_doorbells(0)),
        "global {global}: held components keep the GPU up"
    );
    assert_eq!(m.power_state(0), Some(Power::D0));
    let ev = events_of(&m);
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, UmsEvent::SuspendContext { .. }))
            .count(),
        ev.iter()
            .filter(|e| matches!(e, UmsEvent::ResumeContext { .. }))
            .count(),
        "global {global}: every context the power-down suspended is resumed"
    );
    submit_wait(&m, &mut q1, &[fill(&t, 7)]);
    assert_eq!(t.mem.load(0), 7, "global {global}");
    assert_eq!(ok(&m, m.d3hot_doorbell_rings(0)), 0, "nothing in D3hot");
    assert_eq!(ok(&m, m.d3hot_accesses(0)), 0, "the driver touched nothing");
    drop((q0, q1));
    exits_clean(&m, &p);
}

/// The driver's own `DxgkDdiSetPowerState`, for the stand-in below.
static REAL_SET_POWER: std::sync::OnceLock<
    unsafe extern "system" fn(
        rvgpu_ddi::PVOID,
        u32,
        rvgpu_ddi::basic::DEVICE_POWER_STATE,
        rvgpu_ddi::basic::POWER_ACTION,
    ) -> rvgpu_ddi::NTSTATUS,
> = std::sync::OnceLock::new();

/// A `DxgkDdiSetPowerState` that, after the driver's, calls `DxgkCbDisconnectDoorbell` on the
/// way to D3 (what this driver did before: it can deadlock Windows' power path).
unsafe extern "system" fn set_power_then_disconnect(
    ctx: rvgpu_ddi::basic::PVOID,
    uid: u32,
    state: rvgpu_ddi::basic::DEVICE_POWER_STATE,
    action: rvgpu_ddi::basic::POWER_ACTION,
) -> rvgpu_ddi::NTSTATUS {
    let Some(real) = REAL_SET_POWER.get() else {
        return STATUS_NOT_SUPPORTED;
    };
    // SAFETY: the driver's DDI with the OS's own arguments.
    let status = unsafe { real(ctx, uid, state, action) };
    let iface = rvgpu_simos::testing::interface_for_context(ctx);
    if let (rvgpu_ddi::basic::PowerDeviceD3, Some(cb)) =
        (state, iface.and_then(|i| i.DxgkCbDisconnectDoorbell))
    {
        let mut args = rvgpu_ddi::dxgkrnl::DXGKARGCB_DISCONNECTDOORBELL {
            hHwQueue: std::ptr::null_mut(),
            hDoorbell: std::ptr::null_mut(),
            Flags: Default::default(),
            DisconnectReason: D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
        };
        // SAFETY: the OS's callback with a valid argument block.
        let _ = unsafe { cb(&mut args) };
    }
    status
}

/// UM-14: `DxgkCbDisconnectDoorbell` from inside `DxgkDdiSetPowerState` is a driver bug. The
/// decompiled dxgkrnl (10.0.22631) holds the adapter's core resource exclusively across the
/// power transition, and its doorbell API paths take the context lock this callback takes
/// before that resource: a lock-order inversion that can hang the power IRP (0x9F). The
/// simulated OS stops on the call whatever handles it names.
#[test]
fn um_14_disconnect_doorbell_callback_inside_set_power_state_is_a_driver_bug() {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    let up = m
        .load_driver_with(|t| {
            if let Some(f) = t.DxgkDdiSetPowerState {
                let _ = REAL_SET_POWER.set(f);
            }
            t.DxgkDdiSetPowerState = Some(set_power_then_disconnect);
        })
        .and_then(|()| m.start_adapter(0));
    if let Err(e) = up {
        panic!("bring-up: {e}");
    }
    let r = m.power_down(0);
    let fault = format!("{r:?} {:?}", m.fault());
    assert!(
        fault.contains("DxgkCbDisconnectDoorbell: called from inside DxgkDdiSetPowerState"),
        "the callback inside SetPowerState(D3) stops the machine: {fault}"
    );
}

// ---------------------------------------------------------------------------------------------
// UM-11, UM-12: suspend and resume.

/// UM-11, TDR-05: an engine reset of a hardware-scheduled node waits for a suspend of one of
/// its contexts that is under way. 24H2 holds the node's resource shared for the suspend and
/// exclusively for the reset, whose check that every requested suspend completed would
/// otherwise see this one half done (bug check 0x119 / 0xA000). The reset is forced from a
/// second thread while the driver is inside `DxgkDdiSuspendContext`; the suspend is held there
/// until the reset waits for the node's resource or the machine stops.
#[test]
fn um_11_tdr_05_an_engine_reset_waits_for_a_suspend_under_way() {
    use rvgpu_simos::testing::spy;
    use std::sync::mpsc;
    let mut cfg = MachineConfig::single(Mode::Threaded);
    cfg.adapters[0].device.doorbells = 4;
    let m = started_with(cfg, spy::install_suspend_context_spy);
    let (p, k, _t) = process_with_target(&m);
    let q = connected_raw_queue(&m, &k, 0);
    let (entered, in_suspend) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    spy::on_next_suspend(m.id(), move || {
        let _ = entered.send(());
        let _ = released.recv_timeout(Duration::from_secs(30));
    });
    std::thread::scope(|s| {
        let suspend = s.spawn(|| m.suspend_context(&p, q.context));
        in_suspend
            .recv_timeout(Duration::from_secs(30))
            .expect("the suspend reached the driver");
        let reset = s.spawn(|| m.force_tdr(0, 0));
        // The suspend is let go once the reset has parked behind it, or once the reset has
        // bug-checked (what 24H2 prevents). The bound only fails the test.
        let t0 = std::time::Instant::now();
        while m.fault().is_none() && spy::node_resource_waits(&m, 0, 0).unwrap() == 0 {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "the reset neither waited for the suspend nor failed"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = release.send(());
        let suspended = suspend.join().expect("suspend thread");
        let reset = reset.join().expect("reset thread");
        no_fault(&m);
        ok(&m, suspended);
        ok(&m, reset);
    });
    let ev = m.tdr_events(0);
    assert!(
        ev.iter().any(|e| matches!(
            e,
            rvgpu_simos::TdrEvent::ResetHwEngine { node: 0, status: 0 }
        )),
        "{ev:#?}"
    );
}

/// UM-11, UM-12: a suspended context's doorbell stays connected and its ring stays writable;
/// the work the UMD writes and rings meanwhile does not run until the context is resumed, and
/// then it does (the CMP picks up the new write pointer).
#[test]
fn um_11_12_suspend_keeps_doorbell_connected_resume_runs_the_work() {
    let m = with_doorbells(Mode::Step, 4);
    let (p, k, t) = process_with_target(&m);
    let q = connected_raw_queue(&m, &k, 0);
    let wp = write_ring(&q, 0, &[fill(&t, 1)], 1);
    q.doorbell.cpu.ring(wp);
    okk(&m, k.wait_for_fence(q.done_fence(), 1));
    ok(&m, m.suspend_context(&p, q.context));
    let info = m.doorbell_info(0, q.doorbell.handle).unwrap();
    assert!(
        matches!(info.state, DoorbellState::Connected { .. }),
        "UM-11"
    );
    assert!(
        info.status == D3DDDI_DOORBELLSTATUS_CONNECTED
            || info.status == D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD
    );
    assert!(
        m.device(0)
            .unwrap()
            .queues()
            .iter()
            .all(|s| s.queue_id != q.queue_id),
        "the suspended context's queue left the runlist"
    );
    let wp = write_ring(&q, wp, &[fill(&t, 2)], 2);
    q.doorbell.cpu.ring(wp);
    ok(&m, m.run_until_idle());
    assert_eq!(q.done_value(&m), 1, "nothing runs while suspended");
    assert_eq!(t.mem.load(0), 1);
    ok(&m, m.resume_context(&p, q.context));
    okk(&m, k.wait_for_fence(q.done_fence(), 2));
    assert_eq!(
        t.mem.load(0),
        2,
        "UM-12: the work written meanwhile ran after resume"
    );
    exits_clean(&m, &p);
}

/// A worker of process `p`: a user-mode queue on `engine` that fills and checks its target
/// `rounds` times, pausing `pause` after each.
fn fill_rounds(m: &Machine, p: &UmsProcess, engine: u32, rounds: u64, pause: Duration) {
    let k = m.kmt(p);
    let t = target(m, &k);
    let mut q = okk(m, UserQueue::new(k, &config(engine)));
    for i in 0..rounds {
        submit_wait(m, &mut q, &[fill(&t, i)]);
        assert_eq!(t.mem.load(0), i);
        std::thread::sleep(pause);
    }
    okk(m, q.close());
}

/// UM-13 threaded: engines idle between bursts and ask for F1 (about 2 ms); the worker
/// disconnects their doorbells while the processes keep submitting, reconnecting and waiting;
/// all work completes.
#[test]
fn um_13_threaded_f1_while_submitting() {
    let m = machine_with(Mode::Threaded, |a| {
        a.device.doorbells = 2;
        a.device.idle_f1_ticks = 200_000;
    });
    let procs: Vec<UmsProcess> = (0..2).map(|_| ok(&m, m.create_process(0))).collect();
    std::thread::scope(|s| {
        for (pi, p) in procs.iter().enumerate() {
            let m = &m;
            s.spawn(move || fill_rounds(m, p, pi as u32 % 2, 15, Duration::from_millis(3)));
        }
    });
    for p in &procs {
        ok(&m, m.exit_process(p));
    }
    let ev = events_of(&m);
    use rvgpu_simos::machine::answers::EngineStateReports;
    if rvgpu_simos::Windows::from_env().reading().engine_state == EngineStateReports::Acted {
        // By the pages the OS disconnects the doorbells and the idle engine goes to F1, or
        // the connected doorbells hold their engines and the requests are declined.
        assert!(
            ev.iter().any(|e| matches!(
                e,
                UmsEvent::SetFState { fstate: 1, .. } | UmsEvent::F1Declined { .. }
            )),
            "an engine asked for F1 and the OS answered"
        );
    } else {
        // 24H2 drops the engine's request: nothing answers it.
        assert!(
            !ev.iter().any(|e| matches!(e, UmsEvent::EngineState { .. })),
            "24H2 acts on no engine-state report: {ev:#?}"
        );
    }
    no_fault(&m);
}

/// UM-14 threaded: the OS tries to power the adapter down again and again while two
/// processes submit and wait; it does so only when no queue has work the OS has not seen
/// complete (UM-16), every reconnect powers it up and resumes the contexts, and all work
/// completes.
#[test]
fn um_14_threaded_power_down_while_submitting() {
    let m = pages_machine(Mode::Threaded, |a| a.device.doorbells = 4);
    let procs: Vec<UmsProcess> = (0..2).map(|_| ok(&m, m.create_process(0))).collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let workers: Vec<_> = procs
            .iter()
            .enumerate()
            .map(|(pi, p)| {
                let m = &m;
                // The pauses are idle windows for the runtime power-down.
                s.spawn(move || fill_rounds(m, p, pi as u32 % 2, 40, Duration::from_millis(2)))
            })
            .collect();
        let m = &m;
        let stop = &stop;
        s.spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                let _ = ok(m, m.power_down(0));
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        for w in workers {
            w.join().expect("worker");
        }
        stop.store(true, std::sync::atomic::Ordering::Release);
    });
    let ev = events_of(&m);
    let downs = ev
        .iter()
        .filter(|e| matches!(e, UmsEvent::SetPowerState { state: 4 }))
        .count();
    assert!(downs > 0, "the adapter went to D3");
    // UM-14's disconnects left the KMD none to count.
    let text = ok(&m, m.collect_dbg_info(0, 0x117));
    assert!(
        text.lines().any(|l| l == "power d3_doorbells_connected=0"),
        "every doorbell was disconnected before D3: {text}"
    );
    for p in &procs {
        ok(&m, m.exit_process(p));
    }
    no_fault(&m);
}

/// UM-11: the KMD may victimise a suspended queue's doorbell; the UMD reconnects (while the
/// context is still suspended) and keeps writing, and that work runs once the context resumes.
#[test]
fn um_11_suspended_queue_victimised_reconnects_and_runs_after_resume() {
    let m = with_doorbells(Mode::Step, 1);
    let (p, k, t) = process_with_target(&m);
    let a = connected_raw_queue(&m, &k, 0);
    ok(&m, m.suspend_context(&p, a.context));
    let _b = connected_raw_queue(&m, &k, 1);
    assert_eq!(
        m.doorbell_info(0, a.doorbell.handle).unwrap().status,
        D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
        "the suspended queue's doorbell was victimised"
    );
    let wp = write_ring(&a, 0, &[fill(&t, 0x11)], 1);
    a.doorbell.cpu.ring(wp);
    okk(&m, k.connect_doorbell(a.doorbell.handle));
    a.doorbell.cpu.ring(wp);
    ok(&m, m.run_until_idle());
    assert_eq!(a.done_value(&m), 0, "suspended: nothing ran");
    ok(&m, m.resume_context(&p, a.context));
    okk(&m, k.wait_for_fence(a.done_fence(), 1));
    assert_eq!(t.mem.load(0), 0x11);
    exits_clean(&m, &p);
}

/// UM-11 (kernel-mode side) and UM-14: a kernel-mode submission to a suspended context is
/// accepted and runs after resume; a kernel-mode submission in D3 powers the adapter up and
/// runs.
#[test]
fn um_11_14_kernel_mode_submission_while_suspended_and_in_d3() {
    let m = with_doorbells(Mode::Step, 2);
    let (p, k, t) = process_with_target(&m);
    let mut kq = okk(&m, KernelQueue::new(k, &config(0)));
    submit_wait(&m, &mut kq, &[fill(&t, 1)]);
    let ctx = events_of(&m)
        .iter()
        .rev()
        .find_map(|e| match e {
            UmsEvent::CreateContext { context, .. } => Some(*context),
            _ => None,
        })
        .unwrap();
    ok(&m, m.suspend_context(&p, ctx));
    let v = okk(&m, kq.submit(&[fill(&t, 2)]));
    ok(&m, m.run_until_idle());
    assert_eq!(kq.completed(), v - 1, "nothing runs while suspended");
    ok(&m, m.resume_context(&p, ctx));
    okk(&m, kq.wait(v));
    assert_eq!(t.mem.load(0), 2);
    assert!(ok(&m, m.power_down(0)));
    let v = okk(&m, kq.submit(&[fill(&t, 3)]));
    assert_eq!(
        m.power_state(0),
        Some(Power::D0),
        "the submission woke the GPU"
    );
    okk(&m, kq.wait(v));
    assert_eq!(t.mem.load(0), 3);
    drop(kq);
    exits_clean(&m, &p);
}

// ---------------------------------------------------------------------------------------------
// UM-13: when the component callbacks may be called.

thread_local! {
    /// The real `DxgkDdiStartDevice` of the thread's machine.
    static REAL_START: std::cell::Cell<rvgpu_ddi::init::PDXGKDDI_START_DEVICE> =
        const { std::cell::Cell::new(None) };
}

/// `DxgkDdiStartDevice`, then, before it returns, `DxgkCbSetPowerComponentActive` on
/// component 0: a driver that takes a component reference while it starts.
unsafe extern "system" fn start_then_activate(
    ctx: rvgpu_ddi::basic::PVOID,
    info: *mut rvgpu_ddi::adapter::DXGK_START_INFO,
    iface: *mut rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE,
    sources: *mut u32,
    children: *mut u32,
) -> rvgpu_ddi::NTSTATUS {
    let Some(real) = REAL_START.with(std::cell::Cell::get) else {
        return 0xC000_0001_u32 as i32;
    };
    // SAFETY: the real DDI with the OS's arguments.
    let status = unsafe { real(ctx, info, iface, sources, children) };
    // SAFETY: the OS's interface, valid while the adapter lives.
    let iface = unsafe { &*iface };
    if status >= 0 {
        if let Some(active) = iface.DxgkCbSetPowerComponentActive {
            // SAFETY: the OS's callback with its handle.
            unsafe { active(iface.DeviceHandle, 0) };
        }
    }
    status
}

/// UM-13: 24H2 starts runtime power management only after the adapter started
/// (`K:DXGADAPTER::StartRuntimePowerManagement`, from `DpiFdoStartAdapter`), and
/// `DxgkCbSetPowerComponentActive` before that is bug check 0x113 / 0x17
/// (`K:DXGADAPTER::SetPowerComponentActiveCB`): the flag it tests is not set yet.
#[test]
fn um_13_component_active_before_runtime_power_management_is_0x113() {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    // The hook runs on this thread, at load.
    let loaded = m.load_driver_with(|t| {
        REAL_START.with(|r| r.set(t.DxgkDdiStartDevice));
        t.DxgkDdiStartDevice = Some(start_then_activate);
    });
    assert!(loaded.is_ok(), "{loaded:?}");
    let _ = m.start_adapter(0);
    let b = m.bugcheck().map(|b| (b.code, b.params[0]));
    assert_eq!(
        b,
        Some((rvgpu_simos::base::bugcheck::VIDEO_DXGKRNL_FATAL_ERROR, 0x17)),
        "{:?}",
        m.fault()
    );
}

against_the_pe_image!();

under_the_pages!(
    image,
    "um_11_tdr_05_an_engine_reset_waits_for_a_suspend_under_way" =>
        "the pages' TDR finds the idle node's queue empty and resets nothing; the race is with the reset 24H2 makes whatever the queue holds",
);
