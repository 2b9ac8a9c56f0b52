//! NF-18: the seed's cross-adapter tables, every (wait, signal) pair of scenarios 1, 2a and
//! 2b, step by step. Scenario 1: iGPU and dGPU both with native fences. The fence is created on the
//! dGPU (adapter 1) and opened on the iGPU (adapter 0); MonitoredValue is held at 0 on both
//! (NF-16), so the dGPU's signal interrupts and VidSch propagates it to the iGPU with
//! `DxgkDdiUpdateCurrentValuesFromCpu(NotificationOnly)`.
//!
//! In scenarios 2a and 2b the iGPU has no native fences, and so (Windows 24H2: user-mode
//! submission depends on HWSCH and NATIVE_FENCE, and a node may advertise `UserModeSubmission`
//! only with `NativeGpuFence`, BR-73) no user-mode submission either: a user-mode queue is
//! refused there (BR-95). The iGPU's work goes through a kernel-mode hardware queue
//! ([`KernelGpuQueue`]; hardware scheduling stays on), and its GPU wait is the OS-scheduled one
//! (`D3DKMTSubmitWaitForSyncObjectsToHwQueue`, MF-03): VidSch holds the queue's later
//! submissions until the fence reaches the value.

mod common;

use common::*;
use std::time::Duration;

use rvgpu_simos::testing::gpu::{GpuQueue, KernelGpuQueue};
use rvgpu_simos::ums::{HeldWork, UmsEvent};
use rvgpu_simos::{
    Machine, MachineConfig, Mode, MonitoredFence, NativeFence, NativeFenceDesc, ProcessId,
    WaitOutcome,
};
use rvgpu_umd::kmt::KmtHandle;

const IGPU: usize = 0;
const DGPU: usize = 1;

struct Rig {
    m: Machine,
    /// The fence's instance on the dGPU (creator).
    d: NativeFence,
    /// Its instance on the iGPU.
    i: NativeFence,
    /// A queue of the iGPU process that opened `i`.
    qi: GpuQueue,
    /// A queue of the dGPU process that created `d`.
    qd: GpuQueue,
}

fn rig() -> Rig {
    let m = started(MachineConfig::igpu_dgpu(Mode::Step));
    // One process per adapter: a queue names only fences open in its own process.
    let qi = ok(&m, GpuQueue::new(&m, IGPU, 0));
    let qd = ok(&m, GpuQueue::new(&m, DGPU, 0));
    let d = shareable_dgpu_fence(&m, &qd);
    let i = ok(&m, m.open_native_fence_cross_adapter(&d, IGPU, qi.pid()));
    assert_eq!(d.monitored_value(), 0);
    assert_eq!(i.monitored_value(), 0);
    Rig { m, d, i, qi, qd }
}

/// A fence of the dGPU process behind `qd` that other adapters may open.
fn shareable_dgpu_fence(m: &Machine, qd: &GpuQueue) -> NativeFence {
    let desc = NativeFenceDesc {
        shareable: true,
        ..Default::default()
    };
    ok(m, m.create_native_fence(DGPU, qd.pid(), desc))
}

/// `q` (on `adapter`) blocked on FENCE_WAIT(`fence`, 10), followed by a signal of a private
/// fence that shows the queue went on; returns that fence.
fn blocked_on_10(
    m: &Machine,
    adapter: usize,
    q: &mut GpuQueue,
    fence: &NativeFence,
) -> NativeFence {
    let after = ok(
        m,
        m.create_native_fence(adapter, q.pid(), NativeFenceDesc::default()),
    );
    // "The UMD inserts a wait for hFence CurrentValue == 10 in the command buffer."
    ok(m, q.wait(fence, 10));
    ok(m, q.signal(&after, 1));
    ok(m, q.kick());
    ok(m, m.run_until_idle());
    assert!(!q.drained(), "the queue on adapter {adapter} must block");
    after
}

/// `q` signals `fence` to `value` from the GPU, and the machine runs until idle.
fn gpu_signal(m: &Machine, q: &mut GpuQueue, fence: &NativeFence, value: u64) {
    ok(m, q.signal(fence, value));
    ok(m, q.kick());
    ok(m, m.run_until_idle());
}

/// The iGPU queue blocked in [`blocked_on_10`] ran on: `after` was signalled.
fn igpu_released(r: &Rig, after: &NativeFence) {
    assert!(
        r.qi.drained(),
        "iGPU queue still blocked; {:?} {:?}",
        r.m.ums_events(IGPU),
        r.m.fault()
    );
    assert_eq!(after.current_value(), 1);
}

/// An iGPU queue blocked on FENCE_WAIT(hFence, 10) (its instance `i`).
fn igpu_gpu_wait(r: &mut Rig) -> NativeFence {
    blocked_on_10(&r.m, IGPU, &mut r.qi, &r.i)
}

fn dgpu_gpu_signal(r: &mut Rig) {
    let m = &r.m;
    let before = m.interrupt_counts(DGPU).0;
    let notify = m.native_fence_counts(IGPU).1;
    // "The UMD inserts a signal hFence CurrentValue = 10 in the command buffer."
    gpu_signal(m, &mut r.qd, &r.d, 10);
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
    let mut r = rig();
    let after = igpu_gpu_wait(&mut r);
    dgpu_gpu_signal(&mut r);
    // "The KMD rescans the runlist to unblock the HW channel waiting on hFence."
    igpu_released(&r, &after);
    assert!(r.m.bugcheck().is_none());
}

/// NF-18 scenario 1, iGPU WaitFromGPU – dGPU SignalFromCpu.
#[test]
fn nf_18_s1_igpu_gpu_wait_dgpu_cpu_signal() {
    let mut r = rig();
    let after = igpu_gpu_wait(&mut r);
    dgpu_cpu_signal(&r);
    igpu_released(&r, &after);
}

/// NF-18 scenario 1, iGPU WaitFromCPU – dGPU SignalFromGpu.
#[test]
fn nf_18_s1_igpu_cpu_wait_dgpu_gpu_signal() {
    let mut r = rig();
    // "The runtime calls D3DKMTWaitForSynchronizationObjectFromCpu; VidSch tracks the object
    // in its native-fence CPU wait list."
    let e = ok(&r.m, r.m.wait_native_fence_event(&r.i, 10));
    assert_eq!(r.i.pending_waits(), vec![10]);
    assert_eq!(r.i.monitored_value(), 0, "held at 0 with a waiter too");
    dgpu_gpu_signal(&mut r);
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

// ---------------------------------------------------------------------------------------------
// Scenarios 2a and 2b: the iGPU has no native fences (the driver does not advertise them
// there), the dGPU has. The fence is created native on the dGPU and opened on the iGPU as a
// regular monitored fence over the same CurrentValue. Without native fences the iGPU has no
// user-mode submission (24H2, BR-73/BR-95): its queue is a kernel-mode hardware queue.

struct Rig2 {
    m: Machine,
    d: NativeFence,
    i: MonitoredFence,
    /// `i`'s D3DKMT handle in the iGPU process.
    ih: KmtHandle,
    /// A kernel-mode queue of the iGPU process that opened `i`.
    qi: KernelGpuQueue,
    /// A queue of the dGPU process that created `d`.
    qd: GpuQueue,
}

fn rig2() -> Rig2 {
    let m = started(MachineConfig::legacy_igpu_dgpu(Mode::Step));
    assert!(
        m.native_fence_caps(IGPU).is_none(),
        "iGPU must lack native fences"
    );
    assert!(m.native_fence_caps(DGPU).is_some());
    assert!(
        GpuQueue::new(&m, IGPU, 0).is_err(),
        "no user-mode submission without native fences (BR-95)"
    );
    let qi = ok(&m, KernelGpuQueue::new(&m, IGPU, 0));
    let qd = ok(&m, GpuQueue::new(&m, DGPU, 0));
    let d = shareable_dgpu_fence(&m, &qd);
    assert!(
        m.open_native_fence_cross_adapter(&d, IGPU, qi.pid())
            .is_err(),
        "no native fences on the iGPU"
    );
    let i = ok(&m, m.open_native_fence_as_monitored(&d, IGPU, qi.pid()));
    let ih = ok(&m, qi.open_fence(&i));
    assert_eq!(i.gpu_va(), d.current_value_gpu(), "one CurrentValue");
    assert_eq!(
        d.monitored_value(),
        0,
        "held at 0: every dGPU signal interrupts"
    );
    Rig2 {
        m,
        d,
        i,
        ih,
        qi,
        qd,
    }
}

/// Whether VidSch released the iGPU queue's GPU wait for `i` at 10 (the wait's outcome: its
/// held work goes to the KMD).
fn s2a_wait_released(r: &Rig2) -> bool {
    let (_, queue) = r.qi.handles();
    r.m.ums_events(IGPU).iter().any(|e| {
        matches!(e, UmsEvent::GpuWaitReleased { queue: q, fence, value: 10 }
            if *q == queue && *fence == r.ih)
    })
}

/// iGPU WaitFromGPU in scenario 2a: the hardware-queue form of
/// D3DKMTWaitForSynchronizationObjectFromGpu (`D3DKMTSubmitWaitForSyncObjectsToHwQueue`);
/// VidSch holds the iGPU queue's later work (written and submitted to the OS, not given to the
/// KMD) until the value is reached.
fn s2a_igpu_gpu_wait(r: &mut Rig2) -> MonitoredFence {
    let m = &r.m;
    let q = &mut r.qi;
    let after = ok(m, m.create_monitored_fence(IGPU, q.pid(), 0));
    ok(m, q.gpu_wait_monitored(m, r.ih, 10));
    ok(m, q.signal_monitored(&after, 1));
    ok(m, q.kick(m));
    ok(m, m.run_until_idle());
    assert!(!s2a_wait_released(r));
    assert_eq!(
        m.hw_queue_held(IGPU, r.qi.handles().1),
        Some(HeldWork {
            submissions: 1,
            waits: 1,
            signals: 0
        }),
        "VidSch holds the submission behind the wait"
    );
    assert_eq!(
        r.i.pending_waits(),
        vec![10],
        "tracked in the monitored-fence wait list"
    );
    assert_eq!(after.value(), 0, "the held work did not run");
    assert!(!r.qi.drained());
    after
}

/// After the release: nothing held, the held work ran.
fn s2a_resumed(r: &Rig2, after: &MonitoredFence) {
    assert!(s2a_wait_released(r), "the GPU wait was not released");
    assert_eq!(
        r.m.hw_queue_held(IGPU, r.qi.handles().1),
        Some(HeldWork::default())
    );
    assert!(r.i.pending_waits().is_empty());
    assert!(r.qi.drained(), "the resumed iGPU queue did not run");
    assert_eq!(after.value(), 1);
}

/// NF-18 scenario 2a, iGPU WaitFromGPU – dGPU SignalFromGpu: the dGPU's signal interrupts
/// (MV == 0), VidSch propagates it to the iGPU, observes the new value, scans its monitored
/// wait list and releases the iGPU queue's held work.
#[test]
fn nf_18_s2a_igpu_gpu_wait_dgpu_gpu_signal() {
    let mut r = rig2();
    let after = s2a_igpu_gpu_wait(&mut r);
    gpu_signal(&r.m, &mut r.qd, &r.d, 10);
    assert!(r.m.interrupt_counts(DGPU).0 >= 1);
    s2a_resumed(&r, &after);
    assert!(r.m.bugcheck().is_none());
}

/// NF-18 scenario 2a, iGPU WaitFromGPU – dGPU SignalFromCpu.
#[test]
fn nf_18_s2a_igpu_gpu_wait_dgpu_cpu_signal() {
    let mut r = rig2();
    let after = s2a_igpu_gpu_wait(&mut r);
    ok(&r.m, r.m.signal_native_fence_from_cpu(&r.d, 10));
    ok(&r.m, r.m.run_until_idle());
    s2a_resumed(&r, &after);
}

/// NF-18 scenario 2a, iGPU WaitFromCPU – dGPU SignalFromGpu: the CPU wait is in the iGPU's
/// monitored-fence CPU wait list; the propagated signal releases it (the KEVENT).
#[test]
fn nf_18_s2a_igpu_cpu_wait_dgpu_gpu_signal() {
    let mut r = rig2();
    let e = ok(&r.m, r.m.wait_monitored_fence_event(&r.i, 10));
    gpu_signal(&r.m, &mut r.qd, &r.d, 9);
    assert_eq!(e.outcome(), None, "9 < 10");
    gpu_signal(&r.m, &mut r.qd, &r.d, 10);
    assert_eq!(e.outcome(), Some(WaitOutcome::Satisfied));
}

/// NF-18 scenario 2a, iGPU WaitFromCPU – dGPU SignalFromCpu.
#[test]
fn nf_18_s2a_igpu_cpu_wait_dgpu_cpu_signal() {
    let r = rig2();
    let e = ok(&r.m, r.m.wait_monitored_fence_event(&r.i, 10));
    ok(&r.m, r.m.signal_native_fence_from_cpu(&r.d, 10));
    assert_eq!(e.outcome(), Some(WaitOutcome::Satisfied));
}

/// dGPU WaitFromGpu in scenario 2b: a dGPU queue blocked on FENCE_WAIT(hFence, 10).
fn s2b_dgpu_gpu_wait(r: &mut Rig2) -> NativeFence {
    blocked_on_10(&r.m, DGPU, &mut r.qd, &r.d)
}

/// NF-18 scenario 2b, iGPU SignalFromGPU – dGPU WaitFromGpu: the software packet reaches the
/// head, VidSch writes the value from the CPU and propagates it to the dGPU
/// (NotificationOnly), whose KMD rescans its runlist.
#[test]
fn nf_18_s2b_igpu_gpu_signal_dgpu_gpu_wait() {
    let mut r = rig2();
    let after = s2b_dgpu_gpu_wait(&mut r);
    let ucv = r.m.native_fence_counts(DGPU).1;
    ok(&r.m, r.m.signal_monitored_fence_from_gpu(&r.i, 10));
    assert_eq!(
        r.m.native_fence_counts(DGPU).1,
        ucv + 1,
        "no NotificationOnly"
    );
    ok(&r.m, r.m.run_until_idle());
    assert!(r.qd.drained(), "the dGPU wait was not released");
    assert_eq!(after.current_value(), 1);
}

/// NF-18 scenario 2b, iGPU SignalFromCPU – dGPU WaitFromGpu.
#[test]
fn nf_18_s2b_igpu_cpu_signal_dgpu_gpu_wait() {
    let mut r = rig2();
    let after = s2b_dgpu_gpu_wait(&mut r);
    ok(&r.m, r.m.signal_monitored_fence_from_cpu(&r.i, 10));
    ok(&r.m, r.m.run_until_idle());
    assert!(r.qd.drained());
    assert_eq!(after.current_value(), 1);
}

/// NF-18 scenario 2b, iGPU SignalFromGPU – dGPU WaitFromCpu: the native CPU wait on the dGPU
/// is released by the propagation.
#[test]
fn nf_18_s2b_igpu_gpu_signal_dgpu_cpu_wait() {
    let r = rig2();
    let e = ok(&r.m, r.m.wait_native_fence_event(&r.d, 10));
    assert_eq!(r.d.pending_waits(), vec![10]);
    ok(&r.m, r.m.signal_monitored_fence_from_gpu(&r.i, 10));
    assert_eq!(e.outcome(), Some(WaitOutcome::Satisfied));
}

/// NF-18 scenario 2b, iGPU SignalFromCPU – dGPU WaitFromCpu (blocking form).
#[test]
fn nf_18_s2b_igpu_cpu_signal_dgpu_cpu_wait() {
    let r = rig2();
    let e = ok(&r.m, r.m.wait_native_fence_event(&r.d, 10));
    ok(&r.m, r.m.signal_monitored_fence_from_cpu(&r.i, 10));
    assert_eq!(e.outcome(), Some(WaitOutcome::Satisfied));
    let w = ok(
        &r.m,
        r.m.wait_native_fence(&r.d, 10, Duration::from_secs(1)),
    );
    assert_eq!(w, WaitOutcome::Satisfied);
}

/// NF-18, the reverse: a regular monitored fence created on the iGPU opens as a native fence
/// on the dGPU (MonitoredValue held at 0); a dGPU GPU signal releases an iGPU CPU wait and
/// an iGPU CPU signal releases a dGPU GPU wait.
#[test]
fn nf_18_monitored_fence_opens_as_native() {
    let m = started(MachineConfig::legacy_igpu_dgpu(Mode::Step));
    let mut dq = ok(&m, GpuQueue::new(&m, DGPU, 0));
    let i = ok(&m, m.create_monitored_fence(IGPU, ProcessId(1), 0));
    let d = ok(&m, m.open_monitored_fence_as_native(&i, DGPU, dq.pid()));
    assert_eq!(d.current_value_gpu(), i.gpu_va());
    assert_eq!(d.monitored_value(), 0);
    let e = ok(&m, m.wait_monitored_fence_event(&i, 5));
    ok(&m, dq.signal(&d, 5));
    ok(&m, dq.wait(&d, 6));
    let after = ok(
        &m,
        m.create_native_fence(DGPU, dq.pid(), NativeFenceDesc::default()),
    );
    gpu_signal(&m, &mut dq, &after, 1);
    assert_eq!(e.outcome(), Some(WaitOutcome::Satisfied));
    assert!(!dq.drained());
    ok(&m, m.signal_monitored_fence_from_cpu(&i, 6));
    ok(&m, m.run_until_idle());
    assert!(dq.drained());
    assert_eq!(after.current_value(), 1);
}

/// NF-16: a dGPU report that names no fence (a signal record the driver cannot attribute, so
/// it asks for a scan of every fence) reaches the iGPU as 24H2 passes it on: one
/// `DxgkDdiUpdateCurrentValuesFromCpu` with `NumFences` 0 and `NotificationOnly`
/// (`M:VidSchiProcessCrossAdapterSignaledSyncObjects`; the pages' reading names each fence).
/// The iGPU's KMD rescans its waits and the queue blocked on the shared fence goes on. A KMD
/// that refuses the unnamed notification is bug check 0x119 / 0x13 there.
#[test]
fn nf_16_unnamed_cross_adapter_notification_rescans_peer_waits() {
    let mut r = rig();
    let after = igpu_gpu_wait(&mut r);
    // The shared CurrentValue reaches 10 without a signal the dGPU's driver can name: the
    // word is written directly, then a fence-signal record with no known tag is raised.
    let cv = r.d.current_value_kernel_va() as *mut u64;
    // SAFETY: the fence's CurrentValue word in the OS's fence pages, mapped while the fence
    // lives; 8-byte aligned.
    unsafe { std::ptr::write_volatile(cv, 10) };
    let dev = r.m.device(DGPU).expect("the dGPU").clone();
    dev.forge_event(
        rvgpu_hw::event::EventRecord {
            kind: rvgpu_hw::event::EventKind::FenceSignaled as u8,
            engine: 0,
            flags: 0,
            queue_id: rvgpu_hw::queue::NO_QUEUE,
            arg0: 0x5EED_0000_0000,
            arg1: 10,
            arg2: 0,
        },
        rvgpu_hw::regs::IntCause::FENCE_SIGNALED,
    );
    ok(&r.m, r.m.run_until_idle());
    assert_eq!(r.m.bugcheck(), None, "{:?}", r.m.fault());
    igpu_released(&r, &after);
}

/// NF-16 when the dGPU process's device goes in error: the dGPU signals its fences to
/// `u64::MAX`, and 24H2 sets the iGPU's instance always signalled too, storing `u64::MAX`
/// (flags 0) and then telling it `AlwaysSignaled` with 0xFFFFFFFF (`_VIDSCH_SYNC_OBJECT::
/// SetToAlwaysSignaled`, `M:VidSchiProcessCrossAdapterSignaledSyncObjects`). The shared value
/// stays at `u64::MAX`: a KMD that stores the 0xFFFFFFFF moves the fence backwards.
#[test]
fn nf_16_peer_device_error_never_moves_the_fence_backwards() {
    let mut r = rig();
    let after = igpu_gpu_wait(&mut r);
    // A FILL through an address no process maps: the dGPU queue faults and its device goes
    // in error.
    ok(
        &r.m,
        r.qd.push(rvgpu_hw::cmd::Command::Fill {
            dst: 0x7000_0000_0000,
            bytes: 8,
            pattern: 0x0BAD,
        }),
    );
    ok(&r.m, r.qd.kick());
    ok(&r.m, r.m.run_until_idle());
    assert!(
        r.m.ums_events(DGPU)
            .iter()
            .any(|e| matches!(e, UmsEvent::DeviceError { .. })),
        "no device error on the dGPU: {:?}",
        r.m.ums_events(DGPU)
    );
    assert_eq!(r.m.bugcheck(), None, "{:?}", r.m.fault());
    assert_eq!(r.d.current_value(), u64::MAX);
    assert_eq!(r.i.current_value(), u64::MAX, "the fence went backwards");
    igpu_released(&r, &after);
}

against_the_pe_image!();

under_the_pages!();
