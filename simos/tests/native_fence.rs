//! Native GPU fences, OS side, end to end through the real driver and the emulated GPU
//! (NF-02 … NF-17, MF-04). The GPU work comes from [`rvgpu_simos::testing::gpu`]: user-mode
//! hardware queues of simulated processes, created through the OS and the KMD, whose rings
//! the tests write and whose doorbells they ring.

mod common;

use common::*;
use rvgpu_hw::addr::PhysAddr;
use std::time::Duration;

use rvgpu_ddi::fence::D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::machine::answers::Teardown;
use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::testing::spy;
use rvgpu_simos::{
    Irql, LateWakes, Machine, MachineConfig, Mode, NativeFence, NativeFenceDesc, Notification,
    ProcessId, ReleaseVia, SimError, SimEvent, TraceEvent, UmsEvent, WaitOutcome,
};
use rvgpu_umd::submit::{QueueConfig, UserQueue};

fn step() -> Machine {
    started(MachineConfig::single(Mode::Step))
}

/// One dGPU without `CAPS.OPTIMIZED_FENCE_IRQ`: the KMD reports native fences in the
/// `pSignaledNativeFenceArray` of NF-14/NF-15 (named handles or NULL), not per queue (LOG-08,
/// covered by `fence_logs.rs` on the default device).
fn array_reports(mode: Mode) -> MachineConfig {
    let mut cfg = MachineConfig::single(mode);
    for a in &mut cfg.adapters {
        a.device.optimized_fence_irq = false;
    }
    cfg
}

fn step_array_reports() -> Machine {
    started(array_reports(Mode::Step))
}

/// A fence of `pid` on adapter 0 (a queue names only fences open in its own process).
fn fence(m: &Machine, pid: ProcessId, initial: u64) -> NativeFence {
    m.create_native_fence(
        0,
        pid,
        NativeFenceDesc {
            initial,
            ..Default::default()
        },
    )
    .expect("create")
}

/// A queue on engine 0 of adapter 0 and a fence (at 0) of its process.
fn queue_and_fence(m: &Machine) -> (GpuQueue, NativeFence) {
    let q = ok(m, GpuQueue::new(m, 0, 0));
    let f = fence(m, q.pid(), 0);
    (q, f)
}

/// A CPU wait (the event form) for each of `fs` at `value`.
fn wait_events(m: &Machine, fs: &[NativeFence], value: u64) -> Vec<SimEvent> {
    fs.iter()
        .map(|f| ok(m, m.wait_native_fence_event(f, value)))
        .collect()
}

/// A shareable fence of `pid` on adapter 0, at 0.
fn shareable_fence(m: &Machine, pid: ProcessId) -> NativeFence {
    let desc = NativeFenceDesc {
        shareable: true,
        ..Default::default()
    };
    ok(m, m.create_native_fence(0, pid, desc))
}

/// [`isr_count`] of adapter 0 once the machine is idle (the set-up's paging done).
fn isr_count_once_idle(m: &Machine) -> u64 {
    ok(m, m.run_until_idle());
    isr_count(m, 0)
}

/// Interrupts adapter `i` took so far: tests compare against a count taken after set-up,
/// since mapping a process's queues and fences (paging) interrupts too.
fn isr_count(m: &Machine, i: usize) -> u64 {
    m.interrupt_counts(i).0
}

/// The MonitoredValue the machine's OS arms for the lowest wait `w` (NF-02: the pages say
/// `w - 1`, 24H2 writes `w`; docs/windows-bringup.md, "Where the code and the pages disagree").
fn armed(m: &Machine, w: u64) -> u64 {
    m.os_config()
        .windows
        .reading()
        .monitored_value
        .on_new_wait(u64::MAX, w, 0, 0, w)
}

/// Whether the machine's OS keeps MonitoredValue where it is while waits remain (24H2) rather
/// than re-arming it for the next one (NF-04, the pages).
fn kept(m: &Machine) -> bool {
    m.os_config()
        .windows
        .reading()
        .monitored_value
        .raises_over_waits()
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

/// NF-11: the OS queried the native-fence caps at start and kept them (stride 8, mapped to the
/// system process).
#[test]
fn nf_11_caps_queried_at_start() {
    let m = step();
    let c = m.native_fence_caps(0).expect("caps");
    assert_eq!(c.MonitoredValueStride, 8);
    assert_ne!(c.MapToGpuSystemProcess, 0);
}

/// NF-02: MonitoredValue is u64::MAX with no waiter and armed for the lowest pending value
/// with waiters (that value − 1 by the pages, the value itself on 24H2); when the lowest
/// waiter is satisfied the pages re-arm it for the next one, 24H2 leaves it until none is left.
/// The driver stores every value (24H2 stores none itself).
#[test]
fn nf_02_monitored_value_tracks_lowest_waiter() {
    let m = step();
    let p1 = common::device_process(&m, 0);
    let f = fence(&m, p1, 0);
    assert_eq!(f.monitored_value(), u64::MAX, "no waiter");
    let e10 = ok(&m, m.wait_native_fence_event(&f, 10));
    assert_eq!(f.monitored_value(), armed(&m, 10));
    let e5 = ok(&m, m.wait_native_fence_event(&f, 5));
    assert_eq!(
        f.monitored_value(),
        armed(&m, 5),
        "the lowest waiter decides"
    );
    let e7 = ok(&m, m.wait_native_fence_event(&f, 7));
    assert_eq!(f.monitored_value(), armed(&m, 5));
    ok(&m, m.signal_native_fence_from_cpu(&f, 6));
    assert!(e5.is_signaled() && !e7.is_signaled() && !e10.is_signaled());
    let next = if kept(&m) { armed(&m, 5) } else { armed(&m, 7) };
    assert_eq!(f.monitored_value(), next, "next lowest is 7");
    ok(&m, m.signal_native_fence_from_cpu(&f, 100));
    assert!(e7.is_signaled() && e10.is_signaled());
    assert_eq!(f.monitored_value(), u64::MAX, "nobody waits");
    // A wait for a value already reached is satisfied at once and leaves MAX.
    let e = ok(&m, m.wait_native_fence_event(&f, 50));
    assert!(e.is_signaled());
    assert_eq!(f.monitored_value(), u64::MAX);
}

/// NF-04 under each reading: waits for 3 and 5, the fence signalled to 3 (the first is
/// released), then a wait for 8. 24H2's code raises MonitoredValue to 8 because CurrentValue
/// reached it (3): the wait for 5 gets no interrupt at 5, stays pending while the fence reads
/// 6, and is released late when a signal reaches 8, counted and traced. The pages re-arm for 5
/// and release it on time.
#[test]
fn nf_04_a_new_wait_raises_monitored_value_over_a_pending_one_under_24h2_only() {
    let m = step_array_reports();
    let (mut q, f) = queue_and_fence(&m);
    ok(&m, m.run_until_idle());
    let rec = std::sync::Arc::new(rvgpu_simos::state::sync::trace::Recorder::default());
    let rec_sink: std::sync::Arc<dyn rvgpu_simos::TraceSink> = rec.clone();
    m.set_trace_sink(rec_sink);
    let e3 = ok(&m, m.wait_native_fence_event(&f, 3));
    let e5 = ok(&m, m.wait_native_fence_event(&f, 5));
    ok(&m, q.signal(&f, 3));
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert!(e3.is_signaled() && !e5.is_signaled());
    let e8 = ok(&m, m.wait_native_fence_event(&f, 8));
    for v in 4..=6 {
        ok(&m, q.signal(&f, v));
    }
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert_eq!(f.current_value(), 6);
    let late = m.late_wakes(0);
    if kept(&m) {
        assert_eq!(f.monitored_value(), 8, "raised over the wait for 5");
        assert!(!e5.is_signaled(), "no interrupt is due before 8");
        assert_eq!((late.raises, late.raised_over, late.late), (1, 1, 0));
        assert!(rec.events().iter().any(|e| matches!(
            e,
            TraceEvent::MonitoredValueRaised {
                from: 3,
                to: 8,
                waits_below: 1,
                ..
            }
        )));
        ok(&m, q.signal(&f, 8));
        ok(&m, q.kick());
        ok(&m, m.run_until_idle());
        assert!(e5.is_signaled() && e8.is_signaled());
        let late = m.late_wakes(0);
        assert_eq!((late.late, late.late_values, late.late_max), (1, 3, 3));
        assert!(rec.events().iter().any(|e| matches!(
            e,
            TraceEvent::LateWake {
                value: 5,
                reached: 8,
                ..
            }
        )));
    } else {
        assert!(e5.is_signaled(), "re-armed for 5: released on time");
        assert!(!e8.is_signaled());
        assert_eq!(f.monitored_value(), armed(&m, 8));
        assert_eq!(late, LateWakes::default());
    }
    assert_eq!(f.monitored_value() == u64::MAX, e8.is_signaled());
}

/// NF-03, NF-04: a GPU signal with a CPU waiter raises exactly the interrupt needed; the DPC
/// releases the wait and advances MonitoredValue. Device without the optimized cap: the
/// report names the fence in its array.
#[test]
fn nf_04_gpu_signal_releases_wait_and_advances_monitored_value() {
    let m = step_array_reports();
    let (mut q, f) = queue_and_fence(&m);
    let base = isr_count_once_idle(&m);
    let e3 = ok(&m, m.wait_native_fence_event(&f, 3));
    let e9 = ok(&m, m.wait_native_fence_event(&f, 9));
    assert_eq!(f.monitored_value(), armed(&m, 3));
    ok(&m, q.signal(&f, 3));
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert!(e3.is_signaled(), "log {:#?}", m.driver_log());
    assert!(!e9.is_signaled());
    assert_eq!(f.current_value(), 3);
    let next = if kept(&m) { armed(&m, 3) } else { armed(&m, 9) };
    assert_eq!(
        f.monitored_value(),
        next,
        "advanced to the next waiter (pages)"
    );
    let reports = fence_reports(&m, 0);
    assert_eq!(reports, vec![Some(vec![f.global_handle()])]);
    assert_eq!(isr_count(&m, 0) - base, 1, "exactly one interrupt");
}

/// NF-03: GPU signals of a fence nobody waits on raise no interrupt at all (MonitoredValue is
/// u64::MAX); with one CPU waiter, only the signal that crosses its value interrupts.
/// Device without the optimized cap: the report names the fence in its array.
#[test]
fn nf_03_no_waiter_no_interrupt_one_waiter_one_interrupt() {
    let m = step_array_reports();
    let (mut q, f) = queue_and_fence(&m);
    let base = isr_count_once_idle(&m);
    for v in 1..=40 {
        ok(&m, q.signal(&f, v));
    }
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert!(q.drained());
    assert_eq!(f.current_value(), 40);
    assert_eq!(isr_count(&m, 0) - base, 0, "no waiter, no interrupt");
    assert!(fence_reports(&m, 0).is_empty());
    // One waiter at 60: signals 41..=59 stay silent, 60 interrupts, 61..=80 are silent again
    // (nobody waits any more).
    let e = ok(&m, m.wait_native_fence_event(&f, 60));
    for v in 41..=80 {
        ok(&m, q.signal(&f, v));
    }
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert!(e.is_signaled());
    // Armed at 60 (24H2), only 60 interrupts; armed at 59 (the pages), the device's `>=` rule
    // (hardware.md 8.3) adds one spurious interrupt at 59, which NF-09 allows.
    let needed = if armed(&m, 60) == 60 { 1 } else { 2 };
    assert_eq!(
        isr_count(&m, 0) - base,
        needed,
        "exactly the needed interrupt"
    );
    assert_eq!(
        fence_reports(&m, 0),
        vec![Some(vec![f.global_handle()]); needed as usize]
    );
    assert_eq!(f.monitored_value(), u64::MAX);
}

/// NF-05: two non-shareable fences of one process share a page at the caps' stride (for
/// both CurrentValue and MonitoredValue); a shareable fence has pages of its own, and another
/// process's fences are on other pages.
#[test]
fn nf_05_packing_per_process_and_shareable_pages() {
    let m = step();
    let p1 = common::device_process(&m, 0);
    let p2 = common::device_process(&m, 0);
    let stride = u64::from(m.native_fence_caps(0).expect("caps").MonitoredValueStride);
    let page = |a: u64| a & !0xFFF;
    let a = fence(&m, p1, 0);
    let b = fence(&m, p1, 0);
    assert_eq!(page(a.current_value_gpu()), page(b.current_value_gpu()));
    assert_eq!(b.current_value_gpu() - a.current_value_gpu(), stride);
    assert_eq!(page(a.monitored_value_gpu()), page(b.monitored_value_gpu()));
    assert_eq!(b.monitored_value_gpu() - a.monitored_value_gpu(), stride);
    assert_ne!(page(a.current_value_gpu()), page(a.monitored_value_gpu()));
    let s = shareable_fence(&m, p1);
    let c = fence(&m, p1, 0);
    let other = ok(&m, m.create_native_fence(0, p2, NativeFenceDesc::default()));
    let pages_of = |f: &NativeFence| [page(f.current_value_gpu()), page(f.monitored_value_gpu())];
    for f in [&a, &b, &c, &other] {
        for p in pages_of(f) {
            assert!(!pages_of(&s).contains(&p), "shareable fence shares a page");
        }
    }
    assert_eq!(c.current_value_gpu() - b.current_value_gpu(), stride);
    assert!(!pages_of(&a).contains(&page(other.current_value_gpu())));
    // The private data carries the report tag only (addresses are per process).
    assert_eq!(a.pdd().reserved, [0; 6]);
    assert_ne!(a.pdd().report_tag, s.pdd().report_tag);
}

fn spied(cfg: MachineConfig) -> Machine {
    let n = cfg.adapters.len();
    let mut m = Machine::new(cfg);
    m.load_driver_with(spy::install_update_monitored_spy)
        .expect("load");
    for i in 0..n {
        m.start_adapter(i).expect("start");
    }
    m
}

/// NF-07: every UpdateMonitoredValues runs at device IRQL under the interrupt lock; a value
/// that arrives while the OS lowers MonitoredValue (the GPU decided against the old
/// u64::MAX: no interrupt) is found by the resample after the call, and the wait is released
/// without any interrupt.
#[test]
fn nf_07_update_at_device_irql_and_resample_after() {
    let m = spied(MachineConfig::single(Mode::Step));
    let (mut q, f) = queue_and_fence(&m);
    let base = isr_count_once_idle(&m);
    let mem = m.memory().clone();
    let cv = f.current_value_gpu();
    // The GPU's write lands inside the OS's update (before the new MonitoredValue is
    // visible to the CMP): it compared against u64::MAX and raised nothing.
    spy::on_next_call(m.id(), move || {
        mem.write_u64(PhysAddr::new(cv), 5);
    });
    let e = ok(&m, m.wait_native_fence_event(&f, 5));
    assert!(
        e.is_signaled(),
        "the resample after the update must release it"
    );
    assert_eq!(isr_count(&m, 0), base);
    assert_eq!(
        f.monitored_value(),
        u64::MAX,
        "re-armed to MAX: nobody waits"
    );
    let calls = spy::calls(m.id());
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].fences, vec![(f.global_handle(), armed(&m, 5))]);
    assert_eq!(calls[1].fences, vec![(f.global_handle(), u64::MAX)]);
    // And the DPC-time updates (NF-04) follow the same rule.
    let e = ok(&m, m.wait_native_fence_event(&f, 9));
    ok(&m, q.signal(&f, 9));
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert!(e.is_signaled());
    let calls = spy::calls(m.id());
    assert_eq!(calls.len(), 4, "{calls:?}");
    for c in &calls {
        assert_eq!(c.irql, Irql::Device, "{c:?}");
        assert!(c.interrupt_lock, "{c:?}");
    }
}

/// NF-13 through the OS API: A creates a shareable fence (Create + Open A), B opens it
/// (Open B), A destroys its instance (Close A only: the fence lives on and still works), B
/// destroys (Close B then Destroy). Out-of-order calls are refused: by the OS (second
/// destroy of an instance, open after destroy, another process opening a non-shareable
/// fence) and by the driver (Destroy while an instance is open, Close of a closed handle).
#[test]
fn nf_13_handle_walkthrough_and_out_of_order_refusal() {
    let m = step();
    let p1 = common::device_process(&m, 0);
    let p2 = common::device_process(&m, 0);
    let a = shareable_fence(&m, p1);
    let b = ok(&m, m.open_native_fence(&a, p2));
    assert_eq!(a.global_handle(), b.global_handle());
    assert_ne!(a.local_handle(), b.local_handle());
    // The driver refuses Destroy while instances are open.
    let st = ok(&m, m.ddi_destroy_native_fence(a.global_handle()));
    assert!(st < 0, "Destroy with open instances accepted: {st:#x}");
    ok(&m, m.destroy_native_fence(&a));
    assert!(!b.is_destroyed(), "A's destroy is Close(A) only");
    let st = ok(&m, m.ddi_destroy_native_fence(a.global_handle()));
    assert!(st < 0, "Destroy while B has it open accepted: {st:#x}");
    // Still fully functional through B.
    let e = ok(&m, m.wait_native_fence_event(&b, 3));
    ok(&m, m.signal_native_fence_from_cpu(&b, 3));
    assert!(e.is_signaled());
    // The OS refuses a second destroy of A's instance.
    assert!(matches!(m.destroy_native_fence(&a), Err(SimError::Gone(_))));
    // The driver refuses a Close of A's closed local handle.
    let st = ok(&m, m.ddi_close_native_fence(0, a.local_handle()));
    assert!(st < 0, "second Close accepted: {st:#x}");
    ok(&m, m.destroy_native_fence(&b));
    assert!(b.is_destroyed(), "B's destroy is Close(B) + Destroy");
    let st = ok(&m, m.ddi_destroy_native_fence(a.global_handle()));
    assert!(st < 0, "second Destroy accepted: {st:#x}");
    assert!(m.open_native_fence(&a, p1).is_err(), "open after destroy");
    let private = fence(&m, p1, 0);
    assert!(
        m.open_native_fence(&private, p2).is_err(),
        "another process opened a non-shareable fence"
    );
    assert!(m.bugcheck().is_none());
}

/// NF-14: destroying a fence whose GPU signal is still queued never produces a report naming
/// its (now dead) handle: the signal still runs, the interrupt it raises is reported without
/// the handle (or as NULL), and the OS does not bug-check. The waiter is abandoned.
#[test]
fn nf_14_destroyed_fence_with_queued_signal_no_bugcheck() {
    let m = step();
    let (mut q, f) = queue_and_fence(&m);
    let keep = fence(&m, q.pid(), 0);
    let e = ok(&m, m.wait_native_fence_event(&f, 1));
    assert_eq!(f.monitored_value(), armed(&m, 1));
    ok(&m, q.signal(&f, 1));
    ok(&m, q.kick());
    ok(&m, m.destroy_native_fence(&f));
    assert_eq!(e.outcome(), Some(WaitOutcome::Abandoned));
    let r = m.run_until_idle();
    assert!(r.is_ok(), "{r:?}; bugcheck {:?}", m.bugcheck());
    assert!(q.drained());
    assert_eq!(
        f.current_value(),
        1,
        "the GPU still wrote the (deferred-free) storage"
    );
    assert!(
        m.interrupt_counts(0).0 >= 1,
        "the queued signal interrupted (its MonitoredValue was 0)"
    );
    for v in fence_reports(&m, 0).into_iter().flatten() {
        assert!(!v.contains(&f.global_handle()), "destroyed handle reported");
    }
    // The adapter still works.
    let e = ok(&m, m.wait_native_fence_event(&keep, 2));
    ok(&m, q.signal(&keep, 2));
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert!(e.is_signaled());
}

/// NF-17: a CPU signal releases a GPU FENCE_WAIT with no CPU round trip: the blocked queue
/// continues and its later signal lands, with no interrupt at all.
#[test]
fn nf_17_cpu_signal_releases_gpu_wait() {
    let m = step();
    let (mut q, f) = queue_and_fence(&m);
    let g = fence(&m, q.pid(), 0);
    let base = isr_count_once_idle(&m);
    ok(&m, q.wait(&f, 5));
    ok(&m, q.signal(&g, 1));
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert!(!q.drained(), "the queue must block on the wait");
    assert_eq!(g.current_value(), 0);
    ok(&m, m.signal_native_fence_from_cpu(&f, 4));
    ok(&m, m.run_until_idle());
    assert_eq!(g.current_value(), 0, "4 < 5: still blocked");
    ok(&m, m.signal_native_fence_from_cpu(&f, 5));
    assert_eq!(f.current_value(), 5);
    ok(&m, m.run_until_idle());
    assert!(q.drained());
    assert_eq!(g.current_value(), 1, "the signal after the wait landed");
    assert_eq!(isr_count(&m, 0), base, "no CPU round trip");
}

/// NF-16: a cross-adapter fence (shareable, TYPE_DEFAULT) opened on the second adapter: both
/// MonitoredValues are held at 0; a CPU signal on the first adapter is propagated with
/// NotificationOnly and unblocks a GPU wait on the second; so does a GPU signal on the first
/// adapter (its interrupt, then the OS's propagation). Another type is refused.
#[test]
fn nf_16_notification_only_unblocks_second_adapter() {
    let m = started(MachineConfig::igpu_dgpu(Mode::Step));
    let p1 = common::device_process(&m, 0);
    let p2 = common::device_process(&m, 0);
    let shared = NativeFenceDesc {
        shareable: true,
        ..Default::default()
    };
    let mut q0 = ok(&m, GpuQueue::new(&m, 0, 0));
    let mut q1 = ok(&m, GpuQueue::new(&m, 1, 0));
    let f0 = ok(&m, m.create_native_fence(0, q0.pid(), shared));
    let f1 = ok(&m, m.open_native_fence_cross_adapter(&f0, 1, q1.pid()));
    assert_eq!(
        f0.current_value_gpu(),
        f1.current_value_gpu(),
        "one CurrentValue"
    );
    assert_ne!(f0.global_handle(), f1.global_handle());
    assert_eq!(f0.monitored_value(), 0, "held at 0 on the first adapter");
    assert_eq!(f1.monitored_value(), 0, "held at 0 on the second adapter");
    let done = ok(
        &m,
        m.create_native_fence(1, q1.pid(), NativeFenceDesc::default()),
    );
    ok(&m, q1.wait(&f1, 2));
    ok(&m, q1.signal(&done, 1));
    ok(&m, q1.kick());
    ok(&m, m.run_until_idle());
    assert!(!q1.drained());
    // CPU signal on adapter 0 → NotificationOnly on adapter 1.
    let before = m.native_fence_counts(1).1;
    ok(&m, m.signal_native_fence_from_cpu(&f0, 2));
    assert!(
        m.native_fence_counts(1).1 > before,
        "no NotificationOnly on adapter 1"
    );
    ok(&m, m.run_until_idle());
    assert!(q1.drained(), "GPU wait on adapter 1 not released");
    assert_eq!(done.current_value(), 1);
    // GPU signal on adapter 0 → interrupt (MonitoredValue 0) → propagation → adapter 1.
    ok(&m, q1.wait(&f1, 3));
    ok(&m, q1.signal(&done, 2));
    ok(&m, q1.kick());
    ok(&m, q0.signal(&f0, 3));
    ok(&m, q0.kick());
    ok(&m, m.run_until_idle());
    assert!(m.interrupt_counts(0).0 >= 1, "every signal interrupts");
    assert!(q1.drained());
    assert_eq!(done.current_value(), 2);
    assert_eq!(f0.monitored_value(), 0);
    assert_eq!(f1.monitored_value(), 0);
    // Cross-adapter fences must be TYPE_DEFAULT.
    let intra = ok(
        &m,
        m.create_native_fence(
            0,
            p1,
            NativeFenceDesc {
                shareable: true,
                fence_type: D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU,
                ..Default::default()
            },
        ),
    );
    assert!(m.open_native_fence_cross_adapter(&intra, 1, p2).is_err());
    assert!(m.bugcheck().is_none());
}

/// MF-04 (step mode): the blocking form drives the machine until the GPU signal releases it;
/// with nothing left to signal it times out and withdraws its wait (MonitoredValue back to
/// MAX); the event form is signalled by the DPC.
#[test]
fn mf_04_blocking_and_event_waits_step() {
    let m = step();
    let (mut q, f) = queue_and_fence(&m);
    ok(&m, q.signal(&f, 2));
    ok(&m, q.kick());
    let r = ok(&m, m.wait_native_fence(&f, 2, Duration::from_secs(5)));
    assert_eq!(r, WaitOutcome::Satisfied);
    let r = ok(&m, m.wait_native_fence(&f, 3, Duration::from_secs(5)));
    assert_eq!(r, WaitOutcome::TimedOut, "nothing will signal 3");
    assert_eq!(
        f.monitored_value(),
        u64::MAX,
        "the timed-out wait is withdrawn"
    );
    assert!(f.pending_waits().is_empty());
    let e = ok(&m, m.wait_native_fence_event(&f, 4));
    assert_eq!(e.wait(Duration::ZERO), None);
    ok(&m, q.signal(&f, 4));
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert_eq!(e.wait(Duration::ZERO), Some(WaitOutcome::Satisfied));
}

/// MF-04, NF-04, NF-09 (threaded: real concurrency between the CMP thread, the interrupt
/// and DPC threads and the waiting thread): every blocking and event wait is released by the
/// GPU signal it waits for; no wake-up is lost.
#[test]
fn mf_04_blocking_and_event_waits_threaded() {
    let m = started(MachineConfig::single(Mode::Threaded));
    let (mut q, f) = queue_and_fence(&m);
    for v in 1..=100u64 {
        let ev = ok(&m, m.wait_native_fence_event(&f, 2 * v));
        ok(&m, q.signal(&f, 2 * v - 1));
        ok(&m, q.signal(&f, 2 * v));
        ok(&m, q.kick());
        if v % 2 == 0 {
            let r = ok(&m, m.wait_native_fence(&f, 2 * v, Duration::from_secs(10)));
            assert_eq!(r, WaitOutcome::Satisfied, "blocking wait for {}", 2 * v);
        }
        assert_eq!(
            ev.wait(Duration::from_secs(10)),
            Some(WaitOutcome::Satisfied),
            "event wait for {}; cv {} mv {:#x}",
            2 * v,
            f.current_value(),
            f.monitored_value()
        );
    }
    assert!(m.bugcheck().is_none());
    // The last waits are released; nobody waits any more.
    assert!(m
        .run_until(0, Duration::from_secs(5), |_| f.monitored_value()
            == u64::MAX)
        .unwrap_or(false));
}

/// NF-15 on a device without exact fence reports (the iGPU): the interrupt for a waited-on
/// fence carries a NULL array (scan everything), and the scan releases the wait.
#[test]
fn nf_15_inexact_device_reports_null_and_the_scan_releases() {
    let m = started(MachineConfig::igpu_dgpu(Mode::Step));
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let f = ok(
        &m,
        m.create_native_fence(0, q.pid(), NativeFenceDesc::default()),
    );
    let other = ok(
        &m,
        m.create_native_fence(0, q.pid(), NativeFenceDesc::default()),
    );
    let e = ok(&m, m.wait_native_fence_event(&f, 1));
    let eo = ok(&m, m.wait_native_fence_event(&other, 1));
    ok(&m, q.signal(&f, 1));
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert!(e.is_signaled());
    assert!(
        !eo.is_signaled(),
        "the scan released a wait whose value was not reached"
    );
    let reports = fence_reports(&m, 0);
    assert!(!reports.is_empty());
    assert!(reports.iter().all(Option::is_none), "{reports:?}");
    assert_eq!(f.monitored_value(), u64::MAX);
    assert_eq!(other.monitored_value(), armed(&m, 1));
}

/// NF-15 under load: hundreds of waited-on fences signalled back to back, many fence events
/// per interrupt (batched reports; an overflowed event ring must turn into NULL reports):
/// every wait is released, none is lost.
#[test]
fn nf_15_burst_of_waited_signals_none_lost() {
    let m = step();
    let n = 600u64;
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let fences: Vec<NativeFence> = (0..n).map(|_| fence(&m, q.pid(), 0)).collect();
    let events: Vec<_> = fences
        .iter()
        .map(|f| ok(&m, m.wait_native_fence_event(f, 1)))
        .collect();
    for chunk in fences.chunks(96) {
        let drained = ok(&m, m.run_until(10_000, Duration::ZERO, |_| q.drained()));
        assert!(drained);
        for f in chunk {
            ok(&m, q.signal(f, 1));
        }
        ok(&m, q.kick());
        ok(&m, m.run_steps(1));
    }
    ok(&m, m.run_until_idle());
    let lost: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.is_signaled())
        .map(|(i, _)| i)
        .collect();
    assert!(lost.is_empty(), "lost wake-ups: {lost:?}");
    assert!(m.bugcheck().is_none());
}

/// NF-13 at adapter stop (threaded): an adapter stopped with a live fence (opened twice) and a
/// pending CPU wait, its queue's GPU signals run, tears its devices down, then destroys the
/// fences (Close, then Destroy) as `K:ADAPTER_RENDER::Stop` @0x14019FC38 orders them: the wait
/// ends abandoned, nothing faults, and the adapter restarts with native fences.
#[test]
fn nf_13_stop_with_live_fences_threaded() {
    let mut m = started(MachineConfig::single(Mode::Threaded));
    let (mut q, f) = queue_and_fence(&m);
    let g = ok(&m, m.open_native_fence(&f, q.pid()));
    let e = ok(&m, m.wait_native_fence_event(&f, 1_000_000));
    for v in 1..=50 {
        ok(&m, q.signal(&f, v));
    }
    ok(&m, q.kick());
    // The stop comes once the queue has run its work: work still running when the stop
    // unmaps the device's allocations faults instead
    // (`nf_13_stop_with_work_in_flight_faults_the_device_first`).
    let ran = m.run_until(0, Duration::from_secs(10), |_| {
        q.drained() && f.current_value() == 50
    });
    assert_eq!(ran, Ok(true), "the queue did not run its signals");
    let r = m.stop_adapter(0);
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(e.wait(Duration::from_secs(5)), Some(WaitOutcome::Abandoned));
    assert!(f.is_destroyed() && g.is_destroyed());
    assert!(m.fault().is_none(), "{:?}", m.fault());
    let faults = m.ums_events(0);
    assert!(
        !faults
            .iter()
            .any(|e| matches!(e, UmsEvent::PageFault { .. })),
        "{faults:?}"
    );
    let r = m.start_adapter(0);
    let p1 = common::device_process(&m, 0);
    assert!(r.is_ok(), "{r:?}");
    let h = fence(&m, p1, 0);
    ok(&m, m.signal_native_fence_from_cpu(&h, 1));
    assert_eq!(h.current_value(), 1);
}

/// NF-13 with the device's work still running at the stop, as 24H2 orders it: the adapter's
/// stop destroys each device's allocations (its queue's ring among them) while the queue is
/// still scheduled and only then the device with its queues (`K:DXGDEVICE::Stop`
/// @0x1401BBA38; the adapter-wide flush before it, `K:ADAPTER_RENDER::FlushScheduler`
/// @0x1402C84A8 → `M:VidSchFlushAdapter` @0x1400A6CB0 with 17, waits for VidSch's own DMA
/// queues, not a user-mode queue), and the native fences after all devices
/// (`K:ADAPTER_RENDER::Stop` @0x14019FC38). The GPU reading the unmapped ring faults; the fault
/// puts the device in error at once (`M:VidSchiProcessHwQueuePageFaultedDpc` @0x1400493D0 →
/// `VidSchiMarkDeviceAsError`), which signals its fences to `u64::MAX`: the pending wait ends
/// satisfied before the fences' teardown could abandon it. Under the pages' order the queues go
/// before the allocations: nothing faults and the wait is abandoned. Step mode: the GPU runs
/// only while the stop's unmapping pages, after the ring is gone.
#[test]
fn nf_13_stop_with_work_in_flight_faults_the_device_first() {
    for teardown in [Teardown::AllocationsFirst, Teardown::QueuesFirst] {
        let mut cfg = MachineConfig::single(Mode::Step);
        cfg.os.windows = rvgpu_simos::Windows::from_env().answering(|r| {
            r.teardown = teardown;
        });
        let mut m = started(cfg);
        let (mut q, f) = queue_and_fence(&m);
        let g = ok(&m, m.open_native_fence(&f, q.pid()));
        let e = ok(&m, m.wait_native_fence_event(&f, 1_000_000));
        for v in 1..=50 {
            ok(&m, q.signal(&f, v));
        }
        ok(&m, q.kick());
        assert!(!q.drained(), "{teardown:?}: the queue ran before the stop");
        let (_, queue, _) = q.handles();
        let r = m.stop_adapter(0);
        assert!(r.is_ok(), "{teardown:?}: {r:?}");
        let events = m.ums_events(0);
        let faulted = events
            .iter()
            .any(|e| matches!(e, UmsEvent::PageFault { queue: h, .. } if *h == queue));
        if teardown == Teardown::AllocationsFirst {
            assert!(faulted, "{teardown:?}: {events:?}");
            assert_eq!(e.outcome(), Some(WaitOutcome::Satisfied), "{teardown:?}");
            assert_eq!(
                e.released_via(),
                Some(ReleaseVia::CpuSignal),
                "{teardown:?}"
            );
            assert_eq!(f.current_value(), u64::MAX, "{teardown:?}");
        } else {
            assert!(!faulted, "{teardown:?}: {events:?}");
            assert_eq!(e.outcome(), Some(WaitOutcome::Abandoned), "{teardown:?}");
        }
        assert!(f.is_destroyed() && g.is_destroyed(), "{teardown:?}");
        assert!(m.fault().is_none(), "{teardown:?}: {:?}", m.fault());
        let r = m.start_adapter(0);
        assert!(r.is_ok(), "{teardown:?}: {r:?}");
        let p1 = common::device_process(&m, 0);
        let h = fence(&m, p1, 0);
        ok(&m, m.signal_native_fence_from_cpu(&h, 1));
        assert_eq!(h.current_value(), 1, "{teardown:?}");
    }
}

/// NF-11: the OS refuses an adapter whose native-fence caps it cannot use (stride not a
/// multiple of 8, no MapToGpuSystemProcess) while NativeGpuFence is advertised.
#[test]
fn nf_11_bad_native_fence_caps_fail_the_start() {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    m.load_driver_with(rvgpu_simos::testing::bad_caps::install_bad_native_fence_caps)
        .expect("load");
    let r = m.start_adapter(0);
    assert!(matches!(r, Err(SimError::Rejected(_))), "{r:?}");
}

/// NF-04, NF-07 as the pages have it: the DPC-time work names every re-armed fence in one
/// UpdateMonitoredValues call (batched), at device IRQL under the interrupt lock. Four values
/// land at once (as GPU writes would) and one NULL report ("scan everything") follows. Device
/// without the optimized cap: the stand-in ISR's NULL fence array is what the OS reads (with
/// the cap it would read `hHWQueue` and ignore the array). 24H2 neither batches nor re-arms:
/// `nf_04_24h2_names_one_fence_per_update_and_keeps_monitored_value_while_waits_remain`.
#[test]
fn nf_04_dpc_rearms_fences_in_one_batched_update() {
    let mut cfg = array_reports(Mode::Step);
    cfg.os.windows = rvgpu_simos::Windows::PAGES;
    let mut m = Machine::new(cfg);
    m.load_driver_with(|t| {
        spy::install_update_monitored_spy(t);
        t.DxgkDdiInterruptRoutine = Some(rvgpu_simos::testing::isr_reports_null);
    })
    .expect("load");
    m.start_adapter(0).expect("start");
    let p1 = common::device_process(&m, 0);
    let fs: Vec<NativeFence> = (0..4).map(|_| fence(&m, p1, 0)).collect();
    let es = wait_events(&m, &fs, 1);
    let _later = wait_events(&m, &fs, 5);
    let before = spy::calls(m.id()).len();
    for f in &fs {
        m.memory()
            .write_u64(PhysAddr::new(f.current_value_gpu()), 1);
    }
    ok(&m, m.raise_interrupt(0));
    assert!(es.iter().all(|e| e.is_signaled()));
    for f in &fs {
        assert_eq!(f.monitored_value(), 4, "re-armed for the wait at 5");
    }
    let calls = spy::calls(m.id());
    let dpc_calls = &calls[before..];
    assert_eq!(dpc_calls.len(), 1, "one batched update: {dpc_calls:?}");
    let mut named: Vec<usize> = dpc_calls[0].fences.iter().map(|f| f.0).collect();
    named.sort_unstable();
    let mut want: Vec<usize> = fs.iter().map(NativeFence::global_handle).collect();
    want.sort_unstable();
    assert_eq!(named, want);
    assert!(dpc_calls[0].fences.iter().all(|f| f.1 == 4));
    assert!(dpc_calls
        .iter()
        .all(|c| c.irql == Irql::Device && c.interrupt_lock));
}

/// NF-04, NF-07 as 24H2 runs them (`M:VidSchiUnwaitNativeFenceWaiters` @0x1400458E8,
/// `M:VidSchiUpdateNativeFenceMonitoredValue` @0x140045ECC): every update names one fence, at
/// device IRQL under the interrupt lock, with no CPU address; a partial release leaves
/// MonitoredValue where it was, and the last release writes `u64::MAX`. The driver stores
/// each value itself (the OS stores none), so the fence's storage shows it.
#[test]
fn nf_04_24h2_names_one_fence_per_update_and_keeps_monitored_value_while_waits_remain() {
    let mut cfg = array_reports(Mode::Step);
    cfg.os.windows = rvgpu_simos::Windows::W24H2;
    let mut m = Machine::new(cfg);
    m.load_driver_with(spy::install_update_monitored_spy)
        .expect("load");
    m.start_adapter(0).expect("start");
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let fs: Vec<NativeFence> = (0..3).map(|_| fence(&m, q.pid(), 0)).collect();
    ok(&m, m.run_until_idle());
    let first = wait_events(&m, &fs, 1);
    let later = wait_events(&m, &fs, 5);
    for f in &fs {
        assert_eq!(
            f.monitored_value(),
            1,
            "the awaited value itself, stored by the KMD"
        );
    }
    let before = spy::calls(m.id()).len();
    for f in &fs {
        ok(&m, q.signal(f, 1));
    }
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert!(first.iter().all(|e| e.is_signaled()));
    assert!(later.iter().all(|e| !e.is_signaled()));
    for f in &fs {
        assert_eq!(f.monitored_value(), 1, "kept while the wait at 5 remains");
    }
    assert_eq!(
        spy::calls(m.id()).len(),
        before,
        "a partial release updates nothing"
    );
    for f in &fs {
        ok(&m, q.signal(f, 5));
    }
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert!(later.iter().all(|e| e.is_signaled()));
    let calls = spy::calls(m.id());
    let dpc_calls = &calls[before..];
    assert_eq!(
        dpc_calls.len(),
        fs.len(),
        "one call per fence: {dpc_calls:?}"
    );
    for (c, f) in dpc_calls.iter().zip(&fs) {
        assert_eq!(c.fences.len(), 1);
        assert_eq!(c.fences[0].1, u64::MAX);
        assert!(c.irql == Irql::Device && c.interrupt_lock);
        assert_eq!(f.monitored_value(), u64::MAX);
    }
    no_fault(&m);
}

/// The fixture's queues are the KMD's own: queues of other processes on the same engine
/// (each a runlist commit by the KMD: the UMD's user-mode queue and a second fixture queue)
/// leave them in the runlist, and all of them run. (The fixture used to program the runlist
/// itself, so the KMD's next commit dropped it.)
#[test]
fn gpu_fixture_queues_share_the_engine_with_the_kmds_queues() {
    let m = step();
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let shared = NativeFenceDesc {
        shareable: true,
        ..Default::default()
    };
    let f = ok(&m, m.create_native_fence(0, q.pid(), shared));
    let p = ok(&m, m.create_process(0));
    let cfg = QueueConfig {
        ring_size: 4096,
        command_buffer_size: 4096,
        ..QueueConfig::default()
    };
    let mut uq = UserQueue::new(m.kmt(&p), &cfg).expect("UMD user-mode queue");
    let mut q2 = ok(&m, GpuQueue::new(&m, 0, 0));
    let f2 = ok(&m, m.open_native_fence(&f, q2.pid()));
    let ids = [q.queue_id(), uq.queue_id(), q2.queue_id()];
    assert!(
        ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
        "{ids:?}"
    );
    let runlist: Vec<u32> = m
        .device(0)
        .expect("device")
        .queues()
        .iter()
        .map(|s| s.queue_id)
        .collect();
    for id in ids {
        assert!(
            runlist.contains(&id),
            "queue {id} not in the runlist {runlist:?}"
        );
    }
    let e = ok(&m, m.wait_native_fence_event(&f, 2));
    ok(&m, q.signal(&f, 1));
    ok(&m, q.kick());
    let v = uq.submit(&[Command::Nop { len: 1 }]).expect("submit");
    ok(&m, q2.wait(&f2, 1));
    ok(&m, q2.signal(&f2, 2));
    ok(&m, q2.kick());
    ok(&m, m.run_until_idle());
    assert!(q.drained() && q2.drained());
    assert!(e.is_signaled());
    assert_eq!(f.current_value(), 2);
    assert!(uq.completed() >= v, "the UMD's queue did not run");
    uq.close().expect("close");
    ok(&m, m.exit_process(&q2.process()));
    ok(&m, q.signal(&f, 3));
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert_eq!(
        f.current_value(),
        3,
        "the fixture queue fell out of the runlist"
    );
    assert!(m.bugcheck().is_none());
}

against_the_pe_image!();

under_the_pages!(image);

/// MF-04 under 24H2's MonitoredValue (threaded): a thread blocked in the thunk's CPU wait for
/// 5 while another thread's wait for 8 raises MonitoredValue over it (CurrentValue had reached
/// MonitoredValue, 3). The GPU then signals 6: no interrupt is due before 8, which never
/// comes. The thunk's wait, bounded like the UMD's, ends with success within a slice or two:
/// the re-read of CurrentValue after the slice ends it as a counted late wake (or the next
/// slice's re-registration, W ≤ MonitoredValue, lowers MonitoredValue and is released at
/// once). One unbounded OS wait stays blocked until the OS's timeout and fails. Under the pages
/// nothing is raised.
#[test]
fn mf_04_a_thunk_wait_raised_over_ends_as_a_counted_late_wake() {
    use rvgpu_umd::kmt::Kmt;
    let m = started(MachineConfig::single(Mode::Threaded));
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let process = q.process();
    let k = m.kmt(&process);
    let uf = k.create_native_fence(0).expect("thunk fence");
    let f = match k.native_fence_cpu(&uf).expect("OS fence") {
        rvgpu_simos::kmt::SimFence::Native(f) => f,
        rvgpu_simos::kmt::SimFence::Monitored(_) => panic!("a native fence"),
    };
    let e3 = ok(&m, m.wait_native_fence_event(&f, 3));
    let late_before = rvgpu_umd::wait::late_wakes();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| m.kmt(&process).wait_for_fence(uf.kmt, 5));
        while !f.pending_waits().contains(&5) {
            std::thread::yield_now();
        }
        ok(&m, q.signal(&f, 3));
        ok(&m, q.kick());
        assert_eq!(
            e3.wait(Duration::from_secs(10)),
            Some(WaitOutcome::Satisfied)
        );
        let _e8 = ok(&m, m.wait_native_fence_event(&f, 8));
        for v in 4..=6 {
            ok(&m, q.signal(&f, v));
        }
        ok(&m, q.kick());
        let r = waiter.join().expect("waiter thread");
        assert_eq!(r, Ok(()), "the bounded wait ends once the fence reads 5");
    });
    assert!(f.current_value() >= 5);
    let late = rvgpu_umd::wait::late_wakes() - late_before;
    assert!(late <= 1, "{late} late wakes for one wait");
    if !kept(&m) {
        assert_eq!(m.late_wakes(0).raised_over, 0, "the pages never raise");
    }
}

/// NF-13, UM-18 (24H2's process death, `K:DXGPROCESS::Destroy` @0x14034D4E0 → device error →
/// `M:VidSchiSignalRegisteredSyncObjects` @0x14003B848): a consumer that opened a producer's
/// shared fence and dies flips it to `u64::MAX` only when its open registered the fence with
/// its device (`K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC): an open without signal
/// access, or with `NoSignal` or `NoSignalMaxValueOnTdr`, leaves the producer's fence and its
/// waiter alone; a plain open releases the waiter. Killed or exiting alike, step and threaded.
#[test]
fn nf_13_um_18_a_dying_consumer_signals_a_shared_fence_only_if_it_registered_it() {
    use rvgpu_simos::OpenAccess;
    let denied = [
        OpenAccess {
            signal: false,
            ..OpenAccess::default()
        },
        OpenAccess {
            no_signal: true,
            ..OpenAccess::default()
        },
        OpenAccess {
            no_signal_max_value_on_tdr: true,
            ..OpenAccess::default()
        },
    ];
    let cases = denied
        .into_iter()
        .map(|a| (a, false))
        .chain([(OpenAccess::default(), true)]);
    for mode in [Mode::Step, Mode::Threaded] {
        for (access, flips) in cases.clone() {
            for kill in [false, true] {
                let mut cfg = MachineConfig::single(mode);
                cfg.os.windows = rvgpu_simos::Windows::from_env().answering(|r| {
                    r.teardown = Teardown::AllocationsFirst;
                });
                let m = started(cfg);
                let producer = ok(&m, m.create_process(0));
                let f = shareable_fence(&m, producer.pid);
                ok(&m, m.signal_native_fence_from_cpu(&f, 5));
                let waiter = ok(&m, m.wait_native_fence_event(&f, 10));
                let consumer = ok(&m, m.create_process(0));
                let _opened = ok(&m, m.open_native_fence_with(&f, consumer.pid, access));
                if kill {
                    ok(&m, m.kill_process(&consumer));
                } else {
                    ok(&m, m.exit_process(&consumer));
                }
                let what = format!("{mode:?} {access:?} kill {kill}");
                if flips {
                    let released = m.wait_native_fence(&f, 10, Duration::from_secs(10));
                    assert_eq!(released, Ok(WaitOutcome::Satisfied), "{what}");
                    assert_eq!(f.current_value(), u64::MAX, "{what}");
                    assert!(
                        waiter.is_signaled(),
                        "{what}: the producer's waiter released"
                    );
                } else {
                    // The death signals synchronously, inside the kill or exit.
                    assert_eq!(f.current_value(), 5, "{what}: the fence left alone");
                    assert!(
                        !waiter.is_signaled(),
                        "{what}: the producer's waiter still waits"
                    );
                    ok(&m, m.signal_native_fence_from_cpu(&f, 10));
                    let released = m.wait_native_fence(&f, 10, Duration::from_secs(10));
                    assert_eq!(released, Ok(WaitOutcome::Satisfied), "{what}");
                }
                ok(&m, m.destroy_native_fence(&f));
                ok(&m, m.exit_process(&producer));
                no_fault(&m);
            }
        }
    }
}
