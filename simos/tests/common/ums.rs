//! Fixtures of the user-mode submission suites (`usermode_submission`, `ums_power`): machines
//! playing one reading of the Windows flows, a user-mode queue built from the D3DKMT thunks step
//! by step ([`RawQueue`]) with the ring writes a UMD would make, and the OS's UMS event log.

use super::*;
use rvgpu_simos::kmt::SimFence;
use rvgpu_simos::machine::answers::{Teardown, UmsProgress};
use rvgpu_umd::kmt::{Doorbell, DoorbellCpu, FenceCpu, HwQueue};
use zerocopy::IntoBytes;

/// A started machine playing Microsoft's pages (`rvgpu_simos::Windows::PAGES`): for the UM-13/UM-14 power
/// flows in which the OS disconnects every doorbell before F1 and D3 and a reconnect powers the
/// GPU up. 24H2 disconnects none (docs/windows-bringup.md §13); with it the driver's hold on
/// each connected doorbell's engine keeps the GPU in D0
/// (`um_14_doorbells_left_connected_hold_the_gpu_in_d0_and_their_work_runs`).
pub fn pages_machine(mode: Mode, f: impl FnOnce(&mut rvgpu_simos::AdapterConfig)) -> Machine {
    let mut cfg = rvgpu_simos::MachineConfig::single(mode);
    f(&mut cfg.adapters[0]);
    cfg.os.windows = rvgpu_simos::Windows::PAGES;
    started(cfg)
}

/// A started machine with 4 doorbells tearing devices down in the pages' order (UM-17, UM-18:
/// queues first), the other answers as the environment's reading has them.
pub fn queues_first(mode: Mode) -> Machine {
    let mut cfg = rvgpu_simos::MachineConfig::single(mode);
    cfg.adapters[0].device.doorbells = 4;
    cfg.os.windows = rvgpu_simos::Windows::from_env().answering(|r| {
        r.teardown = Teardown::QueuesFirst;
    });
    started(cfg)
}

/// A target buffer the GPU fills and the test reads.
pub fn target(m: &Machine, k: &SimKmt<'_>) -> Allocation<SimMem> {
    okk(m, k.create_allocation(4096))
}

/// A user-mode process on adapter 0, its thunks and a [`target`] buffer (bind in this order:
/// they then drop as separate locals would, the buffer first).
pub fn process_with_target(m: &Machine) -> (UmsProcess, SimKmt<'_>, Allocation<SimMem>) {
    let (p, k) = user_process(m);
    let t = target(m, &k);
    (p, k, t)
}

/// A [`raw_queue`] on `node` whose doorbell is connected.
pub fn connected_raw_queue(m: &Machine, k: &SimKmt<'_>, node: u32) -> RawQueue {
    let q = raw_queue(m, k, node);
    okk(m, k.connect_doorbell(q.doorbell.handle));
    q
}

pub fn fill(t: &Allocation<SimMem>, pattern: u64) -> Command {
    Command::Fill {
        dst: t.gpu_va,
        bytes: 64,
        pattern,
    }
}

/// A user-mode queue built from the thunks directly (the walk-through needs each step).
pub struct RawQueue {
    pub context: u32,
    pub queue: HwQueue<SimFence>,
    pub queue_id: u32,
    pub ring: Allocation<SimMem>,
    pub control: Allocation<SimMem>,
    pub doorbell: Doorbell<SimDoorbell>,
    pub pdd: DoorbellPdd,
    /// What the test's batches complete on where the OS gave the queue no progress fence
    /// (24H2), as the UMD's own progress fence would.
    pub done: rvgpu_umd::fence::NativeFence,
}

impl RawQueue {
    /// The packet that closes a batch with `value`: `PROGRESS` to the OS's progress fence, or
    /// a signal of [`RawQueue::done`].
    pub fn closing(&self, value: u64) -> Command {
        match &self.queue.progress {
            Some(_) => Command::Progress { irq: true, value },
            None => self.done.gpu.signal(value),
        }
    }

    /// The fence [`RawQueue::closing`] signals, to wait on.
    pub fn done_fence(&self) -> rvgpu_umd::kmt::KmtHandle {
        self.queue
            .progress
            .as_ref()
            .map_or(self.done.kmt, |p| p.fence)
    }

    /// That fence's value.
    pub fn done_value(&self, m: &Machine) -> u64 {
        match &self.queue.progress {
            Some(p) => p.cpu.value(),
            None => m
                .native_fence_by_kmt(0, self.done.kmt)
                .map_or(0, |f| f.current_value()),
        }
    }
}

pub fn raw_queue(m: &Machine, k: &SimKmt<'_>, node: u32) -> RawQueue {
    let context = okk(m, k.create_context(node));
    let mut qp = hw_queue_pdd();
    let queue = okk(m, k.create_hw_queue(context, true, qp.as_mut_bytes()));
    let ring = okk(m, k.create_allocation_as(4096, AllocationKind::Commands));
    let control = okk(
        m,
        k.create_allocation_as(RingControl::SIZE, AllocationKind::RingControl),
    );
    let mut pdd = DoorbellPdd::for_ring(4096);
    let doorbell = okk(
        m,
        k.create_doorbell(
            queue.handle,
            ring.handle,
            control.handle,
            pdd.as_mut_bytes(),
        ),
    );
    let done = okk(m, k.create_native_fence(0));
    RawQueue {
        context,
        queue,
        queue_id: qp.queue_id,
        ring,
        control,
        doorbell,
        pdd,
        done,
    }
}

pub fn events_of(m: &Machine) -> Vec<UmsEvent> {
    m.ums_events(0)
}

pub fn position(ev: &[UmsEvent], p: impl Fn(&UmsEvent) -> bool) -> Option<usize> {
    ev.iter().position(p)
}

/// Writes `cmds` then the closing packet ([`RawQueue::closing`]) into a raw queue's ring at
/// byte `at` (no wrap), stores the last-queued value and publishes the write pointer; returns
/// the new write pointer.
pub fn write_ring(q: &RawQueue, at: u64, cmds: &[Command], value: u64) -> u64 {
    let mut off = at;
    let progress = q.closing(value);
    for c in cmds.iter().chain(std::iter::once(&progress)) {
        let mut w = [0u64; 8];
        let n = c.encode(&mut w).unwrap();
        for word in w.iter().take(n) {
            q.ring.mem.store(off, *word);
            off += 8;
        }
    }
    q.doorbell.cpu.set_last_queued(value);
    q.control.mem.store(RingControl::WRITE_PTR, off);
    off
}

/// Whether the machine's OS gives user-mode queues a progress fence (the pages) or none
/// (24H2, `UmsProgress`): the suite runs under both (`under_the_pages!`).
pub fn ums_progress_given(m: &Machine) -> bool {
    m.os_config().windows.reading().ums_progress == UmsProgress::Given
}

/// A queue of `k`'s process on node 0 whose work waits behind a gate: connected and rung with a
/// FENCE_WAIT on `gate` (a buffer nobody signals) then a FILL of 7 into `t`. Returns
/// `(gate, t, queue)`.
pub fn gated_queue(
    m: &Machine,
    k: &SimKmt<'_>,
) -> (Allocation<SimMem>, Allocation<SimMem>, RawQueue) {
    let gate = target(m, k);
    let t = target(m, k);
    let q = raw_queue(m, k, 0);
    okk(m, k.connect_doorbell(q.doorbell.handle));
    let wp = write_ring(
        &q,
        0,
        &[
            Command::FenceWait {
                addr: gate.gpu_va,
                value: 1,
            },
            fill(&t, 7),
        ],
        1,
    );
    q.doorbell.cpu.ring(wp);
    (gate, t, q)
}
