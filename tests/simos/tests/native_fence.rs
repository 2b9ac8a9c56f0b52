//! Native GPU fences, OS side, end to end through the real driver and the emulated GPU
//! (NF-02 … NF-17, MF-04). The GPU work comes from [`rvgpu_simos::testing::gpu`], the
//! stand-in for the submission path (issue 6).

use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::{
    Machine, MachineConfig, Mode, NativeFence, NativeFenceDesc, Notification, ProcessId, SimError,
};

const P1: ProcessId = ProcessId(1);

fn machine(cfg: MachineConfig) -> Machine {
    let n = cfg.adapters.len();
    let mut m = Machine::new(cfg);
    m.load_driver().expect("load");
    for i in 0..n {
        m.start_adapter(i).expect("start");
    }
    m
}

fn step() -> Machine {
    machine(MachineConfig::single(Mode::Step))
}

fn fence(m: &Machine, initial: u64) -> NativeFence {
    m.create_native_fence(
        0,
        P1,
        NativeFenceDesc {
            initial,
            ..Default::default()
        },
    )
    .expect("create")
}

fn fence_reports(m: &Machine, i: usize) -> Vec<Option<Vec<usize>>> {
    m.notifications(i)
        .into_iter()
        .filter_map(|p| match p.notification {
            Notification::NativeFenceSignaled { fences, .. } => Some(fences),
            _ => None,
        })
        .collect()
}

fn ok<T>(m: &Machine, r: Result<T, SimError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}; log {:#?}", m.driver_log()),
    }
}

/// NF-11: the OS queried the native-fence caps at start and kept them (stride 8, mapped to the
/// system process).
#[test]
fn nf_11_caps_queried_at_start() {
    let m = step();
    let c = m.native_fence_caps(0).expect("caps");
    assert_eq!(c.MonitoredValueStride, 8);
    assert_ne!(c.MapToGpuSystemProcess, 0);
}

/// NF-02: MonitoredValue is u64::MAX with no waiter, (lowest pending value − 1) with waiters,
/// and rises again when the lowest waiter is satisfied.
#[test]
fn nf_02_monitored_value_tracks_lowest_waiter() {
    let m = step();
    let f = fence(&m, 0);
    assert_eq!(f.monitored_value(), u64::MAX, "no waiter");
    let e10 = ok(&m, m.wait_native_fence_event(&f, 10));
    assert_eq!(f.monitored_value(), 9);
    let e5 = ok(&m, m.wait_native_fence_event(&f, 5));
    assert_eq!(f.monitored_value(), 4, "the lowest waiter decides");
    let e7 = ok(&m, m.wait_native_fence_event(&f, 7));
    assert_eq!(f.monitored_value(), 4);
    ok(&m, m.signal_native_fence_from_cpu(&f, 6));
    assert!(e5.is_signaled() && !e7.is_signaled() && !e10.is_signaled());
    assert_eq!(f.monitored_value(), 6, "next lowest is 7");
    ok(&m, m.signal_native_fence_from_cpu(&f, 100));
    assert!(e7.is_signaled() && e10.is_signaled());
    assert_eq!(f.monitored_value(), u64::MAX, "nobody waits");
    // A wait for a value already reached is satisfied at once and leaves MAX.
    let e = ok(&m, m.wait_native_fence_event(&f, 50));
    assert!(e.is_signaled());
    assert_eq!(f.monitored_value(), u64::MAX);
}

/// NF-03, NF-04: a GPU signal with a CPU waiter raises exactly the interrupt needed; the DPC
/// releases the wait and advances MonitoredValue.
#[test]
fn nf_04_gpu_signal_releases_wait_and_advances_monitored_value() {
    let m = step();
    let f = fence(&m, 0);
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0, 1));
    let e3 = ok(&m, m.wait_native_fence_event(&f, 3));
    let e9 = ok(&m, m.wait_native_fence_event(&f, 9));
    assert_eq!(f.monitored_value(), 2);
    ok(&m, q.signal(&f, 3));
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert!(e3.is_signaled(), "log {:#?}", m.driver_log());
    assert!(!e9.is_signaled());
    assert_eq!(f.current_value(), 3);
    assert_eq!(f.monitored_value(), 8, "advanced to the next waiter − 1");
    let reports = fence_reports(&m, 0);
    assert_eq!(reports, vec![Some(vec![f.global_handle()])]);
    let (isr, _) = m.interrupt_counts(0);
    assert_eq!(isr, 1, "exactly one interrupt");
}
