//! NF-18, scenario 1 of the seed's cross-adapter tables (iGPU and dGPU both with native
//! fences): every (wait, signal) pair of the table, step by step. The fence is created on the
//! dGPU (adapter 1) and opened on the iGPU (adapter 0); MonitoredValue is held at 0 on both
//! (NF-16), so the dGPU's signal interrupts and VidSch propagates it to the iGPU with
//! `DxgkDdiUpdateCurrentValuesFromCpu(NotificationOnly)`.

use std::time::Duration;

use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::{
    Machine, MachineConfig, Mode, NativeFence, NativeFenceDesc, ProcessId, SimError, WaitOutcome,
};

const IGPU: usize = 0;
const DGPU: usize = 1;

fn ok<T>(m: &Machine, r: Result<T, SimError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}; log {:#?}", m.driver_log()),
    }
}

struct Rig {
    m: Machine,
    /// The fence's instance on the dGPU (creator).
    d: NativeFence,
    /// Its instance on the iGPU.
    i: NativeFence,
}

fn rig() -> Rig {
    let mut m = Machine::new(MachineConfig::igpu_dgpu(Mode::Step));
    m.load_driver().expect("load");
    m.start_adapter(IGPU).expect("start iGPU");
    m.start_adapter(DGPU).expect("start dGPU");
    let d = ok(
        &m,
        m.create_native_fence(
            DGPU,
            ProcessId(1),
            NativeFenceDesc {
                shareable: true,
                ..Default::default()
            },
        ),
    );
    let i = ok(
        &m,
        m.open_native_fence_cross_adapter(&d, IGPU, ProcessId(1)),
    );
    assert_eq!(d.monitored_value(), 0);
    assert_eq!(i.monitored_value(), 0);
    Rig { m, d, i }
}

/// An iGPU queue blocked on FENCE_WAIT(hFence, 10), followed by a signal of a private fence
/// that shows the queue went on.
fn igpu_gpu_wait(r: &Rig) -> (GpuQueue, NativeFence) {
    let m = &r.m;
    let after = ok(
        m,
        m.create_native_fence(IGPU, ProcessId(1), NativeFenceDesc::default()),
    );
    let mut q = ok(m, GpuQueue::new(m, IGPU, 0, 1));
    // "The UMD inserts a wait for hFence CurrentValue == 10 in the command buffer."
    ok(m, q.wait(&r.i, 10));
    ok(m, q.signal(&after, 1));
    ok(m, q.kick());
    ok(m, m.run_until_idle());
    assert!(!q.drained(), "the iGPU queue must block");
    (q, after)
}

fn dgpu_gpu_signal(r: &Rig) {
    let m = &r.m;
    let mut q = ok(m, GpuQueue::new(m, DGPU, 0, 1));
    // "The UMD inserts a signal hFence CurrentValue = 10 in the command buffer."
    ok(m, q.signal(&r.d, 10));
    ok(m, q.kick());
    let before = m.interrupt_counts(DGPU).0;
    let notify = m.native_fence_counts(IGPU).1;
    ok(m, m.run_until_idle());
    // "VidSch receives a native fence signaled ISR when CurrentValue is written (MV == 0)."
    assert!(
        m.interrupt_counts(DGPU).0 > before,
        "no interrupt on the dGPU"
    );
    // "VidSch propagates (hFence, 10) to the iGPU: UpdateCurrentValuesFromCpu(NotificationOnly)."
    assert!(
        m.native_fence_counts(IGPU).1 > notify,
        "no NotificationOnly on the iGPU"
    );
}

fn dgpu_cpu_signal(r: &Rig) {
    let m = &r.m;
    let (_, ucv_d, _) = m.native_fence_counts(DGPU);
    let (_, ucv_i, _) = m.native_fence_counts(IGPU);
    // "The runtime calls D3DKMTSignalSynchronizationObjectFromCpu; VidSch calls
    // DxgkDdiUpdateCurrentValuesFromCpu(hFence, 10)" and propagates to the iGPU.
    ok(m, m.signal_native_fence_from_cpu(&r.d, 10));
    assert_eq!(m.native_fence_counts(DGPU).1, ucv_d + 1);
    assert_eq!(
        m.native_fence_counts(IGPU).1,
        ucv_i + 1,
        "no NotificationOnly"
    );
    ok(m, m.run_until_idle());
}

/// NF-18 scenario 1, iGPU WaitFromGPU – dGPU SignalFromGpu.
#[test]
fn nf_18_s1_igpu_gpu_wait_dgpu_gpu_signal() {
    let r = rig();
    let (q, after) = igpu_gpu_wait(&r);
    dgpu_gpu_signal(&r);
    // "The KMD rescans the runlist to unblock the HW channel waiting on hFence."
    assert!(q.drained(), "iGPU queue still blocked");
    assert_eq!(after.current_value(), 1);
    assert!(r.m.bugcheck().is_none());
}

/// NF-18 scenario 1, iGPU WaitFromGPU – dGPU SignalFromCpu.
#[test]
fn nf_18_s1_igpu_gpu_wait_dgpu_cpu_signal() {
    let r = rig();
    let (q, after) = igpu_gpu_wait(&r);
    dgpu_cpu_signal(&r);
    assert!(q.drained(), "iGPU queue still blocked");
    assert_eq!(after.current_value(), 1);
}

/// NF-18 scenario 1, iGPU WaitFromCPU – dGPU SignalFromGpu.
#[test]
fn nf_18_s1_igpu_cpu_wait_dgpu_gpu_signal() {
    let r = rig();
    // "The runtime calls D3DKMTWaitForSynchronizationObjectFromCpu; VidSch tracks the object
    // in its native-fence CPU wait list."
    let e = ok(&r.m, r.m.wait_native_fence_event(&r.i, 10));
    assert_eq!(r.i.pending_waits(), vec![10]);
    assert_eq!(r.i.monitored_value(), 0, "held at 0 with a waiter too");
    dgpu_gpu_signal(&r);
    // "VidSch unblocks the CPU wait by signalling the KEVENT."
    assert_eq!(e.wait(Duration::ZERO), Some(WaitOutcome::Satisfied));
}

/// NF-18 scenario 1, iGPU WaitFromCPU – dGPU SignalFromCpu.
#[test]
fn nf_18_s1_igpu_cpu_wait_dgpu_cpu_signal() {
    let r = rig();
    let e = ok(&r.m, r.m.wait_native_fence_event(&r.i, 10));
    dgpu_cpu_signal(&r);
    assert_eq!(e.wait(Duration::ZERO), Some(WaitOutcome::Satisfied));
    // And the blocking form on the iGPU returns at once now.
    let w = ok(
        &r.m,
        r.m.wait_native_fence(&r.i, 10, Duration::from_secs(1)),
    );
    assert_eq!(w, WaitOutcome::Satisfied);
}
