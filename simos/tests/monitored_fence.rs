//! Legacy monitored fences (MF-01 … MF-04) on an adapter without native fences: the OS
//! side. GPU work comes from [`rvgpu_simos::testing::gpu::KernelGpuQueue`], a kernel-mode
//! hardware queue of a simulated process (`D3DKMTSubmitCommandToHwQueue`): as on Windows 24H2,
//! an adapter without native fences has no user-mode submission (it depends on NATIVE_FENCE,
//! and a node may advertise `UserModeSubmission` only with `NativeGpuFence`, BR-73), so a
//! user-mode queue is refused there (BR-95).

mod common;

use common::*;
use rvgpu_hw::addr::PhysAddr;
use rvgpu_umd::kmt::{AllocationCpu, Kmt};
use std::time::Duration;

use rvgpu_simos::testing::gpu::{GpuQueue, KernelGpuQueue};
use rvgpu_simos::{Machine, MachineConfig, Mode, ProcessId, WaitOutcome};

fn legacy_machine(mode: Mode) -> Machine {
    let mut cfg = MachineConfig::single(mode);
    cfg.os.native_fence_feature = false;
    let mut m = Machine::new(cfg);
    m.load_driver().expect("load");
    m.start_adapter(0).expect("start");
    m
}

/// MF-01: on an adapter without native fences a monitored fence is created with its initial
/// value, a GPU VA in system memory, and the CPU signals it through the OS (values never go
/// backwards); native fences are refused there.
#[test]
fn mf_01_create_and_cpu_signal_without_native_fences() {
    let m = legacy_machine(Mode::Step);
    assert!(m.native_fence_caps(0).is_none());
    assert!(m
        .create_native_fence(0, ProcessId(1), Default::default())
        .is_err());
    let f = ok(&m, m.create_monitored_fence(0, ProcessId(1), 7));
    assert_eq!(f.value(), 7);
    assert!(f.gpu_va().is_multiple_of(8) && f.gpu_va() != 0);
    let e = ok(&m, m.wait_monitored_fence_event(&f, 9));
    ok(&m, m.signal_monitored_fence_from_cpu(&f, 9));
    assert_eq!(e.outcome(), Some(WaitOutcome::Satisfied));
    ok(&m, m.signal_monitored_fence_from_cpu(&f, 3));
    assert_eq!(f.value(), 9, "a monitored fence never goes backwards");
}

/// MF-03, MF-04: every GPU signal of a legacy fence interrupts; the OS scans the monitored
/// fences at DPC time and releases satisfied waits, in event and blocking form; a wait
/// nothing will satisfy times out (step mode: the machine went idle).
#[test]
fn mf_04_legacy_waits_released_by_the_dpc_scan() {
    let m = legacy_machine(Mode::Step);
    assert!(
        GpuQueue::new(&m, 0, 0).is_err(),
        "no user-mode queue without native fences (BR-95)"
    );
    let mut q = ok(&m, KernelGpuQueue::new(&m, 0, 0));
    let f = ok(&m, m.create_monitored_fence(0, q.pid(), 0));
    let e = ok(&m, m.wait_monitored_fence_event(&f, 2));
    ok(&m, q.signal_monitored(&f, 1));
    ok(&m, q.kick(&m));
    ok(&m, m.run_until_idle());
    assert_eq!(e.outcome(), None, "1 < 2");
    let isr_one = m.interrupt_counts(0).0;
    assert!(isr_one >= 1, "a legacy signal always interrupts");
    assert!(m.legacy_fence_scans(0) >= 1);
    ok(&m, q.signal_monitored(&f, 2));
    ok(&m, q.kick(&m));
    ok(&m, m.run_until_idle());
    assert_eq!(e.outcome(), Some(WaitOutcome::Satisfied));
    ok(&m, q.signal_monitored(&f, 3));
    ok(&m, q.kick(&m));
    let r = ok(&m, m.wait_monitored_fence(&f, 3, Duration::from_secs(5)));
    assert_eq!(r, WaitOutcome::Satisfied);
    let r = ok(&m, m.wait_monitored_fence(&f, 4, Duration::from_secs(5)));
    assert_eq!(r, WaitOutcome::TimedOut);
    assert!(f.pending_waits().is_empty());
    ok(&m, m.destroy_monitored_fence(&f));
    assert!(m.destroy_monitored_fence(&f).is_err());
    assert!(m.bugcheck().is_none());
}

/// MF-04 threaded: blocking waits released by GPU signals with real interrupt and DPC
/// threads.
#[test]
fn mf_04_legacy_blocking_waits_threaded() {
    let m = legacy_machine(Mode::Threaded);
    let mut q = ok(&m, KernelGpuQueue::new(&m, 0, 0));
    let f = ok(&m, m.create_monitored_fence(0, q.pid(), 0));
    for v in 1..=30u64 {
        ok(&m, q.signal_monitored(&f, v));
        ok(&m, q.kick(&m));
        let r = ok(&m, m.wait_monitored_fence(&f, v, Duration::from_secs(10)));
        assert_eq!(r, WaitOutcome::Satisfied, "wait for {v}");
    }
    assert!(m.bugcheck().is_none());
}

/// A stand-in ISR reporting a NULL native-fence array, on a device without
/// `CAPS.OPTIMIZED_FENCE_IRQ` (NF-14's array form: with the cap the OS reads `hHWQueue`
/// instead of the array, LOG-08).
fn null_report_machine(evaluate_legacy: bool) -> Machine {
    let mut cfg = MachineConfig::single(Mode::Step);
    for a in &mut cfg.adapters {
        a.device.optimized_fence_irq = false;
    }
    let mut m = Machine::new(cfg);
    let isr = if evaluate_legacy {
        rvgpu_simos::testing::isr_reports_null_evaluate_legacy
    } else {
        rvgpu_simos::testing::isr_reports_null
    };
    m.load_driver_with(move |t| t.DxgkDdiInterruptRoutine = Some(isr))
        .expect("load");
    m.start_adapter(0).expect("start");
    m
}

/// NF-14, MF-04: a NULL native-fence report with `EvaluateLegacyMonitoredFences = 1` makes
/// the OS scan the legacy monitored-fence waits too; without the flag it scans only native
/// fence waits (the legacy wait stays pending).
#[test]
fn nf_14_null_report_with_evaluate_legacy_scans_monitored_fences() {
    for flag in [true, false] {
        let m = null_report_machine(flag);
        let p = device_process(&m, 0);
        let legacy = ok(&m, m.create_monitored_fence(0, p, 0));
        let native = ok(&m, m.create_native_fence(0, p, Default::default()));
        let el = ok(&m, m.wait_monitored_fence_event(&legacy, 3));
        let en = ok(&m, m.wait_native_fence_event(&native, 3));
        // Both values change behind the OS's back (as GPU writes would).
        m.memory().write_u64(PhysAddr::new(legacy.gpu_va()), 3);
        m.memory()
            .write_u64(PhysAddr::new(native.current_value_gpu()), 3);
        ok(&m, m.raise_interrupt(0));
        assert_eq!(en.outcome(), Some(WaitOutcome::Satisfied), "flag {flag}");
        let expect = if flag {
            Some(WaitOutcome::Satisfied)
        } else {
            None
        };
        assert_eq!(el.outcome(), expect, "flag {flag}");
    }
}

under_the_pages!();

/// MF-04: a blocking CPU wait ends only when its value is reached, however long the fence takes
/// to get there while it moves (24H2's wait has no time limit); the simulation's limit ends a
/// wait only after the fence has stood still for that long. Here the CPU raises the fence one
/// value every 20 ms for 3 s, 15 times the limit, and the wait for the last value is satisfied;
/// a wait for a value past the last then times out with the fence still.
#[test]
fn mf_04_a_blocking_wait_outlasts_the_limit_while_its_fence_moves() {
    let m = legacy_machine(Mode::Threaded);
    let q = ok(&m, KernelGpuQueue::new(&m, 0, 0));
    let f = ok(&m, m.create_monitored_fence(0, q.pid(), 0));
    let limit = Duration::from_millis(200);
    let last = 150u64;
    let started = std::time::Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            for v in 1..=last {
                std::thread::sleep(Duration::from_millis(20));
                ok(&m, m.signal_monitored_fence_from_cpu(&f, v));
            }
        });
        ok(&m, m.wait_monitored_fence(&f, last, limit))
    });
    assert_eq!(r, WaitOutcome::Satisfied, "after {:?}", started.elapsed());
    let r = ok(&m, m.wait_monitored_fence(&f, last + 1, limit));
    assert_eq!(r, WaitOutcome::TimedOut, "a fence standing still");
    assert!(m.bugcheck().is_none());
}

/// MF-04 through the thunks: `D3DKMTWaitForSynchronizationObjectFromCpu` on a process's native
/// fence waits while the fence moves, past the simulation's limit, as 24H2 waits without one;
/// the same wait on a fence standing still fails with STATUS_IO_TIMEOUT after the limit.
#[test]
fn mf_04_a_thunk_wait_on_a_native_fence_outlasts_the_limit_while_it_moves() {
    use rvgpu_umd::kmt::Kmt;
    let mut cfg = MachineConfig::single(Mode::Threaded);
    cfg.os.wait_timeout = Duration::from_millis(200);
    let m = started(cfg);
    let (p, k) = user_process(&m);
    let fence = okk(&m, k.create_native_fence(0));
    let last = 150u64;
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            let signaller = rvgpu_simos::kmt::SimKmt::new(&m, p);
            for v in 1..=last {
                std::thread::sleep(Duration::from_millis(20));
                okk(&m, signaller.signal_native_from_cpu(fence.kmt, v));
            }
        });
        k.wait_for_fence(fence.kmt, last)
    });
    assert!(r.is_ok(), "{r:?}");
    let r = k.wait_for_fence(fence.kmt, last + 1);
    assert_eq!(
        r.map_err(|e| e.0 as u32),
        Err(0xC000_00B5),
        "a fence standing still"
    );
    assert!(m.bugcheck().is_none());
}

/// UM-01, MF-04: in step mode a CPU wait drives the machine itself, and the OS's wait limit
/// stands for "hung" there too, in the machine's own time: a wait whose fence keeps moving
/// outlasts the limit, whatever the real time the rounds take on a loaded machine. With a
/// limit of 20 simulated milliseconds (far less than 300 batches take), every batch still
/// completes, and a wait past the last ends.
#[test]
fn um_01_a_step_mode_wait_outlasts_the_limit_while_its_queue_progresses() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.wait_timeout = Duration::from_millis(20);
    let m = started(cfg);
    let (p, k) = user_process(&m);
    let t = okk(&m, k.create_allocation(4096));
    let mut q = okk(&m, rvgpu_umd::submit::KernelQueue::new(k, &config(0)));
    let mut last = 0;
    for n in 1..=300 {
        last = okk(&m, q.submit(&[common::ums::fill(&t, n)]));
    }
    okk(&m, q.wait(last));
    assert_eq!(t.mem.load(0), 300, "the last FILL ran last");
    assert!(
        q.wait(last + 1).is_err(),
        "a fence standing still ends the wait"
    );
    drop(q);
    exits_clean(&m, &p);
}
