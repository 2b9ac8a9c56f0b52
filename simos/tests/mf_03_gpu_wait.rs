//! MF-03, both halves, on kernel-mode hardware queues of the real UMD core
//! (`rvgpu_umd::submit::KernelQueue`) over the simulated OS ([`SimKmt`]) and the real KMD.
//!
//! - In-stream: a GPU signal is a fence-write command (`rvgpu_umd::fence::MonitoredFence::signal`,
//!   FENCE_SIGNAL with SIGNAL_ALWAYS_IRQ) in the batch; the OS learns of it from the interrupt
//!   and releases waits in its DPC-time scan (MF-04). The same on an adapter without native
//!   fences (hence without user-mode queues) is
//!   `monitored_fence.rs::mf_04_legacy_waits_released_by_the_dpc_scan`.
//! - OS-scheduled: `D3DKMTSubmitWaitForSyncObjectsToHwQueue` (a GPU wait: the OS holds every
//!   later submission of the queue, no `DxgkDdiSubmitCommandToHwQueue`, until the fence reaches
//!   the value) and `D3DKMTSubmitSignalSyncObjectsToHwQueue` (a software signal packet: the OS
//!   signals once every earlier submission of the queue completed).
//!   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtsubmitwaitforsyncobjectstohwqueue>,
//!   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtsubmitsignalsyncobjectstohwqueue>.

mod common;

use common::*;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::ums::{HeldWork, UmsEvent, UmsProcess};
use rvgpu_simos::{Machine, MachineConfig, Mode, MonitoredFence, WaitOutcome};
use rvgpu_umd::fence::MonitoredFence as UmdMonitoredFence;
use rvgpu_umd::kmt::{Allocation, AllocationCpu, Kmt, KmtHandle, NtStatus};
use rvgpu_umd::submit::{KernelQueue, QueueConfig};

const STATUS_INVALID_PARAMETER: NtStatus = NtStatus(0xC000_000D_u32 as i32);

fn machine(mode: Mode) -> Machine {
    started(MachineConfig::single(mode))
}

fn config() -> QueueConfig {
    QueueConfig {
        node: 0,
        command_buffer_size: 4096,
        ..QueueConfig::default()
    }
}

/// The values the OS gave the KMD for `queue` (`DxgkDdiSubmitCommandToHwQueue`), in order.
fn kmd_submits(m: &Machine, queue: KmtHandle) -> Vec<u64> {
    m.ums_events(0)
        .into_iter()
        .filter_map(|e| match e {
            UmsEvent::Submit { queue: q, value } if q == queue => Some(value),
            _ => None,
        })
        .collect()
}

/// A process on adapter 0 with a 4 KiB allocation `t` (the batches' target) and a monitored
/// fence (`fh` its handle, `f` the OS's object): where every test here starts. Destructured
/// in field order, its parts drop as separate locals would.
struct Rig<'m> {
    p: UmsProcess,
    k: SimKmt<'m>,
    t: Allocation<SimMem>,
    fh: KmtHandle,
    f: MonitoredFence,
}

fn rig(m: &Machine) -> Rig<'_> {
    let p = ok(m, m.create_process(0));
    let k: SimKmt<'_> = m.kmt(&p);
    let t = okk(m, k.create_allocation(4096));
    let (fh, f) = okk(m, k.create_monitored_fence(0));
    Rig { p, k, t, fh, f }
}

/// [`rig`] and a second monitored fence (its handle, the OS's object).
fn rig_and_second_fence(m: &Machine) -> (Rig<'_>, (KmtHandle, MonitoredFence)) {
    let rig = rig(m);
    let second = okk(m, rig.k.create_monitored_fence(0));
    (rig, second)
}

/// `bytes` copied within `t`, from offset `src` to offset `dst`.
fn copy(t: &Allocation<SimMem>, src: u64, dst: u64, bytes: u64) -> Command {
    Command::Copy {
        src: t.gpu_va + src,
        dst: t.gpu_va + dst,
        bytes,
    }
}

/// A kernel-mode queue on engine 0 and its D3DKMT handle.
fn queue_and_handle<'m>(m: &Machine, k: SimKmt<'m>) -> (KernelQueue<SimKmt<'m>>, KmtHandle) {
    let q = queue(m, k);
    let qh = q.queue_handle();
    (q, qh)
}

/// A kernel-mode queue on engine 0.
fn queue<'m>(m: &Machine, k: SimKmt<'m>) -> KernelQueue<SimKmt<'m>> {
    okk(m, KernelQueue::new(k, &config()))
}

/// Closes `queues`, ends `p` normally, and checks that nothing halted.
fn close_and_exit<'m>(
    m: &Machine,
    queues: impl IntoIterator<Item = KernelQueue<SimKmt<'m>>>,
    p: &UmsProcess,
) {
    for q in queues {
        okk(m, q.close());
    }
    exit_cleanly(m, p);
}

/// Ends `p` normally and checks that nothing halted.
fn exit_cleanly(m: &Machine, p: &UmsProcess) {
    ok(m, m.exit_process(p));
    assert!(m.bugcheck().is_none() && m.fault().is_none());
}

fn position(m: &Machine, f: impl Fn(&UmsEvent) -> bool) -> usize {
    m.ums_events(0)
        .iter()
        .position(f)
        .expect("event not recorded")
}

/// MF-03: work submitted after a GPU wait does not reach the KMD and does not run until the
/// fence reaches the value: a CPU signal below it changes nothing, the one reaching it releases
/// the held work, which then runs in submission order.
#[test]
fn mf_03_gpu_wait_holds_later_work() {
    let m = machine(Mode::Step);
    let Rig { p, k, t, fh, f } = rig(&m);
    let (mut q, qh) = queue_and_handle(&m, k);
    let v1 = okk(&m, q.submit(&[fill(&t, 0, 1)]));
    okk(&m, q.gpu_wait_monitored(fh, 5));
    let v2 = okk(&m, q.submit(&[fill(&t, 8, 2)]));
    // The second batch overwrites the first word: it must run after it.
    let v3 = okk(&m, q.submit(&[fill(&t, 0, 3), fill(&t, 16, 3)]));
    ok(&m, m.run_until_idle());
    assert_eq!(kmd_submits(&m, qh), vec![v1], "held work reached the KMD");
    assert_eq!(q.completed(), v1);
    assert_eq!((t.mem.load(0), t.mem.load(8), t.mem.load(16)), (1, 0, 0));
    assert_eq!(
        m.hw_queue_held(0, qh),
        Some(HeldWork {
            submissions: 2,
            waits: 1,
            signals: 0
        })
    );
    assert_eq!(f.pending_waits(), vec![5], "the OS waits on the fence");
    // Below the value: still held.
    ok(&m, m.signal_monitored_fence_from_cpu(&f, 4));
    ok(&m, m.run_until_idle());
    assert_eq!(kmd_submits(&m, qh), vec![v1]);
    assert_eq!(t.mem.load(8), 0);
    // The value: released, in order.
    okk(&m, k.signal_fence_from_cpu(fh, 5));
    okk(&m, q.wait(v3));
    assert_eq!(kmd_submits(&m, qh), vec![v1, v2, v3]);
    assert_eq!((t.mem.load(0), t.mem.load(8), t.mem.load(16)), (3, 2, 3));
    assert_eq!(m.hw_queue_held(0, qh), Some(HeldWork::default()));
    assert!(f.pending_waits().is_empty());
    let released = position(
        &m,
        |e| matches!(e, UmsEvent::GpuWaitReleased { queue, fence, value: 5 } if *queue == qh && *fence == fh),
    );
    let sub2 = position(
        &m,
        |e| matches!(e, UmsEvent::Submit { queue, value } if *queue == qh && *value == v2),
    );
    assert!(released < sub2);
    // A wait already satisfied holds nothing.
    okk(&m, q.gpu_wait_monitored(fh, 5));
    let v4 = okk(&m, q.submit(&[fill(&t, 24, 4)]));
    assert_eq!(kmd_submits(&m, qh).last(), Some(&v4));
    close_and_exit(&m, [q], &p);
}

/// MF-03: a GPU wait for a paging fence needs no CPU wait to be released. A Map queued to
/// VidMm's paging worker (STATUS_PENDING, its VA not yet in the page tables) is waited for on
/// the GPU; the worker runs on its own, so the held FILL through the new VA runs and lands
/// while the CPU waits only for the queue's progress.
#[test]
fn mf_03_gpu_wait_for_a_paging_fence_runs_without_a_cpu_wait() {
    let m = machine(Mode::Step);
    let Rig { p, k, t, .. } = rig(&m);
    let (mut q, qh) = queue_and_handle(&m, k);
    let (pq, pf) = okk(&m, k.device_paging_queue());
    let r = okk(
        &m,
        k.map_gpu_va(&rvgpu_umd::kmt::MapGpuVa::read_write(pq, 0, t.handle, 0, 1)),
    );
    assert_ne!(r.va, t.gpu_va, "a second mapping of the allocation");
    okk(&m, q.gpu_wait_monitored(pf, r.paging_fence_value));
    let v = okk(&m, q.submit(&[fill64(r.va, 0x77)]));
    okk(&m, q.wait(v));
    assert_eq!(t.mem.load(0), 0x77, "the FILL ran through the new VA");
    assert!(kmd_submits(&m, qh).contains(&v));
    close_and_exit(&m, [q], &p);
}

/// MF-03 + MF-04: the in-stream form on another queue releases a GPU wait: queue B's
/// fence-write command (SIGNAL_ALWAYS_IRQ) interrupts, the OS's DPC-time scan sees the value and
/// releases queue A's OS-side wait, and VidSch's worker submits A's held work.
#[test]
fn mf_03_gpu_wait_released_by_another_queues_fence_write() {
    let m = machine(Mode::Step);
    let Rig { p, k, t, fh, f } = rig(&m);
    let mut a = queue(&m, k);
    let mut b = queue(&m, k);
    okk(&m, a.gpu_wait_monitored(fh, 1));
    let va = okk(&m, a.submit(&[fill(&t, 0, 7)]));
    ok(&m, m.run_until_idle());
    assert!(kmd_submits(&m, a.queue_handle()).is_empty());
    let scans = m.legacy_fence_scans(0);
    submit_wait(
        &m,
        &mut b,
        &[UmdMonitoredFence {
            value_gpu: f.gpu_va(),
        }
        .signal(1)],
    );
    okk(&m, a.wait(va));
    assert!(m.legacy_fence_scans(0) > scans, "released by the DPC scan");
    assert_eq!(t.mem.load(0), 7);
    assert_eq!(kmd_submits(&m, a.queue_handle()), vec![va]);
    close_and_exit(&m, [a, b], &p);
}

/// MF-03: the GPU signal is a fence-write command in the stream of a kernel-mode queue: it
/// runs in order with the batch's other commands, interrupts, and the OS's DPC-time scan
/// releases the CPU waiter (event and blocking form).
#[test]
fn mf_03_fence_write_command() {
    let m = machine(Mode::Step);
    let Rig { p, k, t, fh, f } = rig(&m);
    let fence = UmdMonitoredFence {
        value_gpu: f.gpu_va(),
    };
    let mut q = queue(&m, k);
    let e = ok(&m, m.wait_monitored_fence_event(&f, 2));
    okk(&m, q.submit(&[fill(&t, 0, 9), fence.signal(2)]));
    assert_eq!(e.outcome(), None, "nothing ran yet");
    ok(&m, m.run_until_idle());
    assert_eq!(e.outcome(), Some(WaitOutcome::Satisfied));
    assert_eq!(t.mem.load(0), 9, "the fill ran before the signal");
    okk(&m, q.submit(&[fence.signal(3)]));
    okk(&m, k.wait_for_fence(fh, 3));
    assert_eq!(f.value(), 3);
    close_and_exit(&m, [q], &p);
}

/// MF-03: a software signal packet signals only after every earlier batch of its queue
/// completed, and then releases a CPU waiter; with nothing outstanding it signals at once.
#[test]
fn mf_03_gpu_signal_after_prior_work() {
    let m = machine(Mode::Step);
    let Rig { p, k, t, fh, f } = rig(&m);
    let (mut q, qh) = queue_and_handle(&m, k);
    let mut last = 0;
    for i in 0..4u64 {
        last = okk(&m, q.submit(&[fill64(t.gpu_va + 64 * i, i + 1)]));
    }
    let e = ok(&m, m.wait_monitored_fence_event(&f, 7));
    okk(&m, q.gpu_signal_monitored_os(fh, 7));
    assert_eq!(f.value(), 0, "earlier batches have not run");
    assert_eq!(m.hw_queue_held(0, qh).map(|h| h.signals), Some(1));
    // Step by step: the fence never shows 7 before the last earlier batch completed.
    for _ in 0..10_000 {
        ok(&m, m.run_steps(1));
        if f.value() == 7 {
            break;
        }
        assert!(e.outcome().is_none());
    }
    assert_eq!(f.value(), 7);
    assert!(
        q.completed() >= last,
        "signalled before earlier work completed"
    );
    assert_eq!(e.outcome(), Some(WaitOutcome::Satisfied));
    assert_eq!(t.mem.load(64 * 3), 4);
    assert!(m.ums_events(0).iter().any(|e| matches!(
        e,
        UmsEvent::GpuSignal { queue, fence, value: 7 } if *queue == qh && *fence == fh
    )));
    // Nothing outstanding: the OS signals in the thunk.
    okk(&m, q.gpu_signal_monitored_os(fh, 8));
    assert_eq!(f.value(), 8);
    // 24H2 refuses no fence for being a progress fence (`K:SubmitSignalSyncObjectsToHwQueue`
    // @0x1403260EC, `M:VidSchSubmitSignalToHwQueue` @0x140031EF0): a signal packet on the
    // queue's own, to the value it reached, is accepted.
    let done = q.completed();
    okk(&m, q.gpu_signal_monitored_os(q.progress_fence(), done));
    assert_eq!(q.completed(), done);
    assert_eq!(
        k.submit_signal_to_hw_queue(qh, &[]),
        Err(STATUS_INVALID_PARAMETER)
    );
    assert_eq!(
        k.submit_wait_to_hw_queue(qh, &[(0xdead_0000, 1)]),
        Err(STATUS_INVALID_PARAMETER)
    );
    close_and_exit(&m, [q], &p);
}

/// MF-03 cross-queue chain: A signals through the OS packet, B waits through the OS packet;
/// B's batch reads what A's wrote, so it must run after it; B then waits on A's progress fence
/// (a monitored fence too) and signals a second fence the CPU waits on.
#[test]
fn mf_03_cross_queue_chain() {
    let m = machine(Mode::Step);
    let (Rig { p, k, t, fh, f }, (gh, g)) = rig_and_second_fence(&m);
    let mut a = queue(&m, k);
    let mut b = queue(&m, k);
    // B first: its wait and the work behind it are queued before A has submitted anything.
    okk(&m, b.gpu_wait_monitored(fh, 1));
    okk(&m, b.submit(&[copy(&t, 0, 64, 64)]));
    okk(&m, b.gpu_signal_monitored_os(gh, 1));
    ok(&m, m.run_until_idle());
    assert_eq!((f.value(), g.value()), (0, 0));
    assert!(kmd_submits(&m, b.queue_handle()).is_empty());
    okk(&m, a.submit(&[fill64(t.gpu_va, 0xA)]));
    okk(&m, a.gpu_signal_monitored_os(fh, 1));
    okk(&m, k.wait_for_fence(gh, 1));
    assert_eq!(f.value(), 1);
    assert_eq!(t.mem.load(64), 0xA, "B ran after A's fill");
    assert_eq!(t.mem.load(64 + 56), 0xA);
    // Second link: B waits on A's progress fence.
    let va = okk(&m, a.submit(&[fill64(t.gpu_va + 128, 0xB)]));
    okk(&m, b.gpu_wait_monitored(a.progress_fence(), va));
    okk(&m, b.submit(&[copy(&t, 128, 192, 64)]));
    okk(&m, b.gpu_signal_monitored_os(gh, 2));
    okk(&m, k.wait_for_fence(gh, 2));
    assert_eq!(t.mem.load(192), 0xB);
    close_and_exit(&m, [a, b], &p);
}

/// MF-03: a queue destroyed with a pending GPU wait: the OS drops the held submissions (they
/// never reach the KMD), the wait (the fence has no waiter left) and the signal packet behind
/// it (its fence is never signalled); a later signal of the fence finds nothing to release and
/// the process exits normally.
#[test]
fn mf_03_destroy_with_pending_wait() {
    let m = machine(Mode::Step);
    let (Rig { p, k, t, fh, f }, (gh, g)) = rig_and_second_fence(&m);
    let (mut q, qh) = queue_and_handle(&m, k);
    let v1 = okk(&m, q.submit(&[fill(&t, 0, 1)]));
    okk(&m, q.gpu_wait_monitored(fh, 1));
    okk(&m, q.submit(&[fill(&t, 8, 2)]));
    okk(&m, q.submit(&[fill(&t, 16, 3)]));
    okk(&m, q.gpu_signal_monitored_os(gh, 1));
    okk(&m, q.wait(v1));
    assert_eq!(f.pending_waits(), vec![1]);
    drop(q); // destroys the queue without waiting
    assert!(m.ums_events(0).contains(&UmsEvent::HeldWorkDropped {
        queue: qh,
        submissions: 2,
        waits: 1,
        signals: 1,
    }));
    assert!(f.pending_waits().is_empty(), "the OS dropped its wait");
    assert_eq!(m.hw_queue_held(0, qh), None);
    okk(&m, k.signal_fence_from_cpu(fh, 1));
    ok(&m, m.run_until_idle());
    assert_eq!(kmd_submits(&m, qh), vec![v1]);
    assert_eq!((t.mem.load(8), t.mem.load(16)), (0, 0));
    assert_eq!(g.value(), 0, "the dropped signal packet never signals");
    okk(&m, k.destroy_monitored_fence(fh));
    okk(&m, k.destroy_monitored_fence(gh));
    exit_cleanly(&m, &p);
}

/// MF-03 threaded: real interrupt, DPC and VidSch worker threads; two queues ping-pong through
/// OS packets and the CPU waits on each round's result.
#[test]
fn mf_03_cross_queue_chain_threaded() {
    let m = machine(Mode::Threaded);
    let (Rig { p, k, t, fh, f: _f }, (gh, _g)) = rig_and_second_fence(&m);
    let mut a = queue(&m, k);
    let mut b = queue(&m, k);
    for i in 1..=40u64 {
        // B is queued first each round, so its work is held until A's signal.
        okk(&m, b.gpu_wait_monitored(fh, i));
        okk(&m, b.submit(&[copy(&t, 0, 64, 8)]));
        okk(&m, b.gpu_signal_monitored_os(gh, i));
        okk(&m, a.submit(&[fill(&t, 0, i)]));
        okk(&m, a.gpu_signal_monitored_os(fh, i));
        okk(&m, k.wait_for_fence(gh, i));
        assert_eq!(t.mem.load(64), i, "round {i}");
    }
    close_and_exit(&m, [a, b], &p);
}

/// MF-03: a GPU wait whose fence is destroyed no longer holds its queue (the simulation's
/// choice, UNVERIFIED against Windows): the held work goes to the KMD and runs.
#[test]
fn mf_03_wait_on_destroyed_fence_releases_the_queue() {
    let m = machine(Mode::Step);
    let Rig { p, k, t, fh, f: _f } = rig(&m);
    let mut q = queue(&m, k);
    okk(&m, q.gpu_wait_monitored(fh, 1));
    let v = okk(&m, q.submit(&[fill(&t, 0, 5)]));
    ok(&m, m.run_until_idle());
    assert!(kmd_submits(&m, q.queue_handle()).is_empty());
    okk(&m, k.destroy_monitored_fence(fh));
    okk(&m, q.wait(v));
    assert_eq!(t.mem.load(0), 5);
    close_and_exit(&m, [q], &p);
}
