//! Allocation usage tracking and CPU access (AL-01 … AL-05), through the real UMD
//! (`rvgpu_umd::usage`), the simulated Dxgkrnl/VidMm, the real KMD and the emulated GPU.
//!
//! Work that must stay queued while the CPU acts is held behind a *gate*: a monitored fence the
//! test signals from the CPU, waited on by a `FENCE_WAIT` at the head of the batch.

mod common;

use common::*;
use std::cell::Cell;
use std::time::Duration;

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::pdd::{
    AllocationKind, AllocationPdd, ALLOCATION_CPU_CACHED, ALLOCATION_CPU_VISIBLE,
    ALLOCATION_PDD_VERSION, PDD_MAGIC,
};
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::machine::answers::UmsProgress;
use rvgpu_simos::{Machine, MachineConfig, Mode, UmsEvent};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, DestroyFlags, Kmt, KmtHandle, NtStatus};
use rvgpu_umd::retain::Retained;
use rvgpu_umd::submit::{KernelQueue, SubmitError, UserQueue};
use rvgpu_umd::usage::{
    self, Batch, Buffer, LockError, LockFlags, Timeline, TimelineId, TrackedQueue,
};

const OLD: u64 = 0x01D0_01D0_01D0_01D0;
const NEW: u64 = 0x0E40_0E40_0E40_0E40;

fn step_machine() -> Machine {
    started(MachineConfig::single(Mode::Step))
}

/// A CPU-signalled native fence a batch can wait on (a CPU signal makes the driver re-evaluate
/// the GPU's waits on it, NF-17).
struct Gate {
    fence: rvgpu_umd::fence::NativeFence,
}

impl Gate {
    fn new(m: &Machine, k: &SimKmt<'_>) -> Self {
        Self {
            fence: okk(m, k.create_native_fence(0)),
        }
    }
    fn wait(&self) -> Command {
        self.fence.wait(1)
    }
    fn open(&self, m: &Machine, k: &SimKmt<'_>) {
        let f = m
            .native_fence_by_kmt(k.process().adapter, self.fence.kmt)
            .expect("gate fence");
        ok(m, m.signal_native_fence_from_cpu(&f, 1));
    }
}

fn fill_cpu(b: &SimMem, words: u64, v: u64) {
    for i in 0..words {
        b.store(i * 8, v);
    }
}

/// The CPU writes `v` to the first `words` words of `b` through a write lock (which waits for
/// every GPU use on `q`).
fn cpu_write(
    m: &Machine,
    k: &SimKmt<'_>,
    b: &Buffer<SimMem>,
    q: &dyn Timeline,
    words: u64,
    v: u64,
) {
    let mem = okk(m, b.lock(k, LockFlags::WRITE, &[q]));
    fill_cpu(&mem, words, v);
    okk(m, b.unlock(k));
}

/// Submits one batch to `q`: `gate`'s wait first, if any, then a copy of `bytes` from `src` to
/// `dst` (each a buffer and an offset); returns its progress value.
fn submit_copy(
    m: &Machine,
    q: &mut impl TrackedQueue,
    gate: Option<&Gate>,
    (src, src_offset): (&Buffer<SimMem>, u64),
    (dst, dst_offset): (&Buffer<SimMem>, u64),
    bytes: u64,
) -> u64 {
    let mut batch = Batch::new();
    if let Some(gate) = gate {
        batch.command(gate.wait());
    }
    okk(m, batch.copy(src, src_offset, dst, dst_offset, bytes));
    okk(m, usage::submit(q, batch))
}

fn words(b: &SimMem, words: u64) -> Vec<u64> {
    (0..words).map(|i| b.load(i * 8)).collect()
}

/// `b`'s contents, read through a plain read lock (which waits for the GPU's writes).
fn read_back(m: &Machine, k: &SimKmt<'_>, b: &Buffer<SimMem>, q: &[&dyn Timeline]) -> Vec<u64> {
    let mem = okk(m, b.lock(k, LockFlags::READ, q));
    let v = words(&mem, b.size() / 8);
    okk(m, b.unlock(k));
    v
}

/// AL-01: the UMD knows from the commands it encoded which allocations each queue's pending
/// work reads and writes; AL-02: a lock with DO_NOT_WAIT of a busy allocation returns
/// WasStillDrawing at once, and what counts as busy depends on the access (a read lock waits
/// for GPU writes only, a write lock for every GPU access).
#[test]
fn al_01_al_02_usage_tracked_from_encoded_commands() {
    let m = step_machine();
    let (_p, k) = user_process(&m);
    let mut qa = okk(&m, UserQueue::new(&k, &config(0)));
    let mut qb = okk(&m, UserQueue::new(&k, &config(0)));
    let src = okk(&m, Buffer::new(&k, 4096, 0));
    let dst = okk(&m, Buffer::new(&k, 4096, 0));
    let other = okk(&m, Buffer::new(&k, 4096, 0));
    let gate = Gate::new(&m, &k);

    // Queue A: behind the gate, copy src -> dst. Queue B: nothing on these buffers.
    let va = submit_copy(&m, &mut qa, Some(&gate), (&src, 0), (&dst, 0), 4096);
    let mut batch = Batch::new();
    okk(&m, batch.fill(&other, 0, 4096, NEW));
    let vb = okk(&m, usage::submit(&mut qb, batch));
    ok(&m, m.run_until_idle());
    assert!(qa.completed() < va, "the gate holds queue A");
    assert_eq!(qb.completed(), vb);

    let both: [&dyn Timeline; 2] = [&qa, &qb];
    let nw = LockFlags::DO_NOT_WAIT;
    // src is read by pending work: reading it needs no wait, writing it does.
    assert!(src.is_busy(&both).unwrap());
    okk(&m, src.lock(&k, LockFlags::READ.union(nw), &both));
    okk(&m, src.unlock(&k));
    assert_eq!(
        src.lock(&k, LockFlags::WRITE.union(nw), &both).err(),
        Some(LockError::WasStillDrawing)
    );
    // dst is written by pending work: both need a wait.
    for f in [LockFlags::READ, LockFlags::WRITE] {
        assert_eq!(
            dst.lock(&k, f.union(nw), &both).err(),
            Some(LockError::WasStillDrawing),
            "{f:?}"
        );
    }
    // `other` was used by queue B only, and that work completed.
    assert!(!other.is_busy(&both).unwrap());
    okk(&m, other.lock(&k, LockFlags::WRITE.union(nw), &both));
    okk(&m, other.unlock(&k));
    // A use recorded on a queue the caller does not name is never guessed idle.
    assert_eq!(
        dst.lock(&k, LockFlags::READ.union(nw), &[&qb]).err(),
        Some(LockError::UnknownTimeline)
    );
    // Flags that mean nothing, and lock-state misuse, are refused without side effects.
    for f in [
        LockFlags(0),
        LockFlags(1 << 5),
        LockFlags::DISCARD.union(LockFlags::READ),
        LockFlags::DISCARD.union(LockFlags::NO_OVERWRITE),
    ] {
        assert_eq!(
            other.lock(&k, f, &both).err(),
            Some(LockError::BadFlags),
            "{f:?}"
        );
    }
    assert_eq!(other.unlock(&k).err(), Some(LockError::LockState));
    okk(&m, other.lock(&k, LockFlags::READ, &both));
    assert_eq!(
        other.lock(&k, LockFlags::READ, &both).err(),
        Some(LockError::LockState)
    );
    okk(&m, other.unlock(&k));
    // WasStillDrawing left no lock behind, and nothing ran.
    assert!(qa.completed() < va);
    assert_eq!(src.stats().waits + dst.stats().waits, 0);

    gate.open(&m, &k);
    ok(&m, m.run_until_idle());
    assert!(!dst.is_busy(&both).unwrap());
    okk(&m, dst.lock(&k, LockFlags::WRITE.union(nw), &both));
    okk(&m, dst.unlock(&k));
    for b in [src, dst, other] {
        okk(&m, b.destroy(&k, &both));
    }
    okk(&m, qa.close());
    okk(&m, qb.close());
    no_fault(&m);
}

/// A [`Timeline`] that counts how often the lock looks at it.
struct Counting<'q, T: Timeline> {
    q: &'q T,
    completed: Cell<u32>,
    targets: Cell<u32>,
}

impl<T: Timeline> Timeline for Counting<'_, T> {
    fn timeline_id(&self) -> TimelineId {
        self.q.timeline_id()
    }
    fn completed(&self) -> u64 {
        self.completed.set(self.completed.get() + 1);
        self.q.completed()
    }
    fn wait_target(&self, value: u64) -> Result<Option<(KmtHandle, u64)>, SubmitError> {
        self.targets.set(self.targets.get() + 1);
        self.q.wait_target(value)
    }
    fn os_sees_work(&self) -> bool {
        self.q.os_sees_work()
    }
    fn retain_until(&self, r: &std::sync::Arc<Retained>, value: u64) -> bool {
        self.q.retain_until(r, value)
    }
}

/// AL-02: without DO_NOT_WAIT a lock of a busy allocation blocks until the GPU work that uses
/// it completes, in one blocking wait on the queue's monitored progress fence (no polling: the
/// lock looks at the queue's progress once, and asks what to wait on once, however long the
/// GPU takes), and then sees what the GPU wrote.
#[test]
fn al_02_lock_blocks_on_monitored_fence_without_polling() {
    let m = started(MachineConfig::single(Mode::Threaded));
    let (_p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let dst = okk(&m, Buffer::new(&k, 4096, 0));
    let gate = Gate::new(&m, &k);
    let mut batch = Batch::new();
    batch.command(gate.wait());
    okk(&m, batch.fill(&dst, 0, 4096, NEW));
    let v = okk(&m, usage::submit(&mut q, batch));

    let opened = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(100));
            opened.store(true, std::sync::atomic::Ordering::SeqCst);
            gate.open(&m, &k);
        });
        let counting = Counting {
            q: &q,
            completed: Cell::new(0),
            targets: Cell::new(0),
        };
        let mem = okk(&m, dst.lock(&k, LockFlags::READ, &[&counting]));
        assert!(
            opened.load(std::sync::atomic::Ordering::SeqCst),
            "the lock returned before the GPU work could run"
        );
        assert_eq!(q.completed(), v);
        assert_eq!(words(&mem, 512), vec![NEW; 512]);
        okk(&m, dst.unlock(&k));
        assert_eq!(counting.targets.get(), 1, "one wait");
        assert!(
            counting.completed.get() <= 2,
            "polled: {} progress reads",
            counting.completed.get()
        );
        assert_eq!(dst.stats().waits, 1);
    });
    okk(&m, dst.destroy(&k, &[&q]));
    okk(&m, q.close());
    no_fault(&m);
}

/// AL-01, renaming: a DISCARD lock of a busy buffer returns at once with a fresh backing; the
/// queued work still reads the old contents, work encoded after the lock reads the new ones,
/// and the old backing is reclaimed once its work is done.
#[test]
fn al_01_discard_renames_a_busy_buffer() {
    let m = step_machine();
    let (_p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let data = okk(&m, Buffer::new(&k, 4096, 0));
    let before = okk(&m, Buffer::new(&k, 4096, 0));
    let after = okk(&m, Buffer::new(&k, 4096, 0));
    let gate = Gate::new(&m, &k);
    cpu_write(&m, &k, &data, &q, 512, OLD);

    submit_copy(&m, &mut q, Some(&gate), (&data, 0), (&before, 0), 4096);
    ok(&m, m.run_until_idle());
    let old_va = data.gpu_va();

    let flags = LockFlags::DISCARD.union(LockFlags::DO_NOT_WAIT);
    let mem = okk(&m, data.lock(&k, flags, &[&q]));
    assert_ne!(data.gpu_va(), old_va, "a busy buffer is renamed");
    assert_eq!(data.stats().renames, 1);
    assert_eq!(data.stats().backings, 2);
    fill_cpu(&mem, 512, NEW);
    okk(&m, data.unlock(&k));
    submit_copy(&m, &mut q, None, (&data, 0), (&after, 0), 4096);

    gate.open(&m, &k);
    ok(&m, m.run_until_idle());
    assert_eq!(read_back(&m, &k, &before, &[&q]), vec![OLD; 512]);
    assert_eq!(read_back(&m, &k, &after, &[&q]), vec![NEW; 512]);

    // Idle now: a discard does not rename, and the retired backing is kept as a spare.
    okk(&m, data.lock(&k, flags, &[&q]));
    okk(&m, data.unlock(&k));
    assert_eq!(data.stats().renames, 1);
    // Busy again: the spare is reused, no new allocation.
    let allocs = allocations(&m);
    // The gate is already open: this copy runs through.
    submit_copy(&m, &mut q, Some(&gate), (&data, 0), (&after, 0), 4096);
    let gate2 = Gate::new(&m, &k);
    submit_copy(&m, &mut q, Some(&gate2), (&data, 0), (&before, 0), 4096);
    ok(&m, m.run_until_idle());
    okk(&m, data.lock(&k, flags, &[&q]));
    okk(&m, data.unlock(&k));
    assert_eq!(data.stats().renames, 2);
    assert_eq!(allocations(&m), allocs, "the spare was reused");
    gate2.open(&m, &k);
    ok(&m, m.run_until_idle());
    for b in [data, before, after] {
        okk(&m, b.destroy(&k, &[&q]));
    }
    okk(&m, q.close());
    no_fault(&m);
}

/// Live allocations of adapter 0 (what VidMm holds).
fn allocations(m: &Machine) -> usize {
    m.ums_live_counts(0).4
}

/// AL-01, no-overwrite: a NO_OVERWRITE lock maps a busy buffer without waiting; the caller
/// writes only what queued work does not touch, and both halves come out as ordered.
#[test]
fn al_01_no_overwrite_maps_without_waiting() {
    let m = step_machine();
    let (_p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let data = okk(&m, Buffer::new(&k, 8192, 0));
    let out = okk(&m, Buffer::new(&k, 8192, 0));
    let gate = Gate::new(&m, &k);
    cpu_write(&m, &k, &data, &q, 1024, OLD);
    // Queued: copy the first half.
    let v = submit_copy(&m, &mut q, Some(&gate), (&data, 0), (&out, 0), 4096);
    ok(&m, m.run_until_idle());

    let va = data.gpu_va();
    let flags = LockFlags::NO_OVERWRITE.union(LockFlags::DO_NOT_WAIT);
    let mem = okk(&m, data.lock(&k, flags, &[&q]));
    assert_eq!(data.gpu_va(), va, "no rename");
    assert!(q.completed() < v, "no wait");
    for i in 512..1024 {
        mem.store(i * 8, NEW);
    }
    okk(&m, data.unlock(&k));
    submit_copy(&m, &mut q, None, (&data, 4096), (&out, 4096), 4096);
    gate.open(&m, &k);
    ok(&m, m.run_until_idle());
    let got = read_back(&m, &k, &out, &[&q]);
    assert_eq!(&got[..512], &[OLD; 512][..]);
    assert_eq!(&got[512..], &[NEW; 512][..]);
    for b in [data, out] {
        okk(&m, b.destroy(&k, &[&q]));
    }
    okk(&m, q.close());
    no_fault(&m);
}

fn pdd(size: u64, flags: u32) -> AllocationPdd {
    AllocationPdd {
        magic: PDD_MAGIC,
        version: ALLOCATION_PDD_VERSION,
        size,
        kind: AllocationKind::Buffer as u32,
        flags,
        reserved: 0,
    }
}

/// Queues on `q`, behind `gate`, a GPU FILL of `a`'s 4 KiB with `NEW`, and runs the machine
/// until idle (the work waits at the gate); returns the work's progress value.
fn fill_behind(m: &Machine, q: &mut dyn TrackedQueue, gate: &Gate, a: &Allocation<SimMem>) -> u64 {
    let fill = Command::Fill {
        dst: a.gpu_va,
        bytes: 4096,
        pattern: NEW,
    };
    let v = okk(m, q.submit_commands(&[gate.wait(), fill]));
    ok(m, m.run_until_idle());
    v
}

fn freed(m: &Machine, h: KmtHandle) -> bool {
    m.ums_events(0)
        .contains(&UmsEvent::FreeAllocation { allocation: h })
}

/// Whether the OS sees a user-mode queue's work (it gave the queue a progress fence: the
/// pages); 24H2 does not, and VidMm's AL-03 then covers kernel-mode queues only.
fn os_sees_user_mode_work(m: &Machine) -> bool {
    m.os_config().windows.reading().ums_progress == UmsProgress::Given
}

/// AL-03: an allocation destroyed while work queued before the call still uses it is freed
/// only after that work completes: the destroy returns at once, the work writes the
/// allocation normally, and VidMm frees it afterwards. For work the OS sees: a kernel-mode
/// queue's, and a user-mode queue's where the OS gave it a progress fence.
#[test]
fn al_03_destruction_waits_for_queued_work() {
    let m = step_machine();
    let (p, k) = user_process(&m);
    let mut queues: Vec<Box<dyn TrackedQueue + '_>> =
        vec![Box::new(okk(&m, KernelQueue::new(&k, &config(0))))];
    if os_sees_user_mode_work(&m) {
        queues.push(Box::new(okk(&m, UserQueue::new(&k, &config(0)))));
    }
    for mut q in queues {
        let gate = Gate::new(&m, &k);
        let a = okk(&m, k.create_allocation(4096));
        let mem = a.mem.clone();
        let v = fill_behind(&m, &mut *q, &gate, &a);
        okk(&m, k.destroy_allocation(a.handle));
        assert!(!freed(&m, a.handle), "freed under queued work");
        // The handle is gone for the UMD at once.
        assert_eq!(
            k.lock2(a.handle).err(),
            Some(NtStatus(STATUS_INVALID_PARAMETER))
        );

        gate.open(&m, &k);
        if let Some((f, fv)) = okk(&m, q.wait_target(v)) {
            okk(&m, k.wait_for_fence(f, fv));
        }
        assert_eq!(words(&mem, 512), vec![NEW; 512], "the work wrote it");
        assert!(!m
            .ums_events(0)
            .contains(&UmsEvent::DeviceError { device: p.device }));
        // VidMm's next entry frees it.
        let b = okk(&m, k.create_allocation(4096));
        assert!(freed(&m, a.handle), "not freed after the work completed");
        okk(&m, k.destroy_allocation(b.handle));
    }
    no_fault(&m);
}

/// AL-03: with AssumeNotInUse VidMm frees at once and ignores queued work; work that did use
/// the allocation then faults on its unmapped pages (the process's own loss, contained by the
/// GPU MMU) instead of writing freed memory.
#[test]
fn al_03_assume_not_in_use_frees_at_once() {
    let m = step_machine();
    let (p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let gate = Gate::new(&m, &k);
    let a = okk(&m, k.create_allocation(4096));
    let mem = a.mem.clone();
    fill_cpu(&mem, 512, OLD);
    fill_behind(&m, &mut q, &gate, &a);
    okk(
        &m,
        k.destroy_allocation2(
            a.handle,
            DestroyFlags {
                assume_not_in_use: true,
            },
        ),
    );
    assert!(freed(&m, a.handle), "AssumeNotInUse frees at once");
    gate.open(&m, &k);
    ok(&m, m.run_until_idle());
    let events = m.ums_events(0);
    assert!(
        events.iter().any(
            |e| matches!(e, UmsEvent::PageFault { va, .. } if *va >= a.gpu_va && *va < a.gpu_va + 4096)
        ),
        "no fault on the freed pages: {events:?}"
    );
    assert!(events.contains(&UmsEvent::DeviceError { device: p.device }));
    assert_eq!(words(&mem, 512), vec![OLD; 512], "freed memory was written");
    drop(q);
}

/// AL-02: a use recorded on a queue that has since been destroyed is over (destroying the
/// queue waited for its work), so a lock need not name it; a live queue left out still is an
/// error.
#[test]
fn al_02_uses_on_a_destroyed_queue_are_over() {
    let m = step_machine();
    let (_p, k) = user_process(&m);
    let mut qa = okk(&m, UserQueue::new(&k, &config(0)));
    let mut qb = okk(&m, UserQueue::new(&k, &config(0)));
    let b = okk(&m, Buffer::new(&k, 4096, 0));
    let mut batch = Batch::new();
    okk(&m, batch.fill(&b, 0, 4096, NEW));
    okk(&m, usage::submit(&mut qa, batch));
    let mut batch = Batch::new();
    okk(&m, batch.fill(&b, 0, 8, NEW));
    okk(&m, usage::submit(&mut qb, batch));
    ok(&m, m.run_until_idle());
    assert_eq!(
        b.lock(&k, LockFlags::READ, &[&qb]).err(),
        Some(LockError::UnknownTimeline),
        "queue A is alive and not named"
    );
    okk(&m, qa.close());
    let mem = okk(&m, b.lock(&k, LockFlags::READ, &[&qb]));
    assert!(words(&mem, 512).iter().all(|&w| w == NEW));
    okk(&m, b.unlock(&k));
    okk(&m, qb.close());
    okk(&m, b.lock(&k, LockFlags::WRITE, &[]));
    okk(&m, b.unlock(&k));
    no_fault(&m);
}

/// AL-03 through the UMD: `Buffer::destroy` tells VidMm AssumeNotInUse for a backing it knows
/// idle (freed at once) and leaves a busy one to the deferred path: VidMm's where the OS sees
/// the queue's work, the queue's own where it does not (24H2), freed once the work completed.
#[test]
fn al_03_umd_destroys_idle_backings_at_once_and_defers_busy_ones() {
    let m = step_machine();
    let (_p, k) = user_process(&m);
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let gate = Gate::new(&m, &k);
    let idle = okk(&m, Buffer::new(&k, 4096, 0));
    let busy = okk(&m, Buffer::new(&k, 4096, 0));
    let mut batch = Batch::new();
    batch.command(gate.wait());
    okk(&m, batch.fill(&busy, 0, 4096, NEW));
    let v = okk(&m, usage::submit(&mut q, batch));
    ok(&m, m.run_until_idle());
    let (hi, hb) = (idle.handle(), busy.handle());
    okk(&m, idle.destroy(&k, &[&q]));
    okk(&m, busy.destroy(&k, &[&q]));
    assert!(freed(&m, hi));
    assert!(!freed(&m, hb));
    gate.open(&m, &k);
    okk(&m, q.wait(v));
    let b = okk(&m, k.create_allocation(4096));
    assert!(freed(&m, hb));
    okk(&m, k.destroy_allocation(b.handle));
    okk(&m, q.close());
    no_fault(&m);
}

/// AL-03 where the OS cannot see user-mode work (24H2): a buffer destroyed while two
/// user-mode queues' gated work still uses it is held by both, and destroyed only once the
/// second has completed; nothing faults. (Where the OS sees the work, VidMm defers instead.)
#[test]
fn al_03_a_buffer_busy_on_two_blind_queues_lives_until_both_completed() {
    let m = step_machine();
    let (_p, k) = user_process(&m);
    let mut qa = okk(&m, UserQueue::new(&k, &config(0)));
    let mut qb = okk(&m, UserQueue::new(&k, &config(0)));
    if os_sees_user_mode_work(&m) {
        assert!(qa.os_sees_work() && qb.os_sees_work());
        return;
    }
    assert!(!qa.os_sees_work() && !qb.os_sees_work());
    let (ga, gb) = (Gate::new(&m, &k), Gate::new(&m, &k));
    let busy = okk(&m, Buffer::new(&k, 4096, 0));
    let mut va = 0;
    let mut vb = 0;
    for (q, gate, v, off) in [(&mut qa, &ga, &mut va, 0), (&mut qb, &gb, &mut vb, 2048)] {
        let mut batch = Batch::new();
        batch.command(gate.wait());
        okk(&m, batch.fill(&busy, off, 2048, NEW));
        *v = okk(&m, usage::submit(q, batch));
    }
    ok(&m, m.run_until_idle());
    let h = busy.handle();
    okk(&m, busy.destroy(&k, &[&qa, &qb]));
    let settle = |m: &Machine| {
        // VidMm frees deferred allocations at its next entry.
        let b = okk(m, k.create_allocation(4096));
        okk(m, k.destroy_allocation(b.handle));
    };
    settle(&m);
    assert!(!freed(&m, h), "freed under queued work");
    gb.open(&m, &k);
    okk(&m, qb.wait(vb));
    settle(&m);
    assert!(
        !freed(&m, h),
        "freed while the other queue's work still uses it"
    );
    ga.open(&m, &k);
    okk(&m, qa.wait(va));
    settle(&m);
    assert!(freed(&m, h), "not freed after both queues completed");
    okk(&m, qa.close());
    okk(&m, qb.close());
    no_fault(&m);
}

/// AL-04: the KMD declares which segments the CPU sees and lists the aperture for every
/// CPU-visible allocation; VidMm gives a CPU address only to a CpuVisible allocation, and a
/// cached one lives in the (cache-coherent) aperture.
#[test]
fn al_04_cpu_visibility_of_segments_and_locks() {
    use rvgpu_ddi::memory::DXGK_SEGMENTFLAGS as F;
    let m = step_machine();
    let segs = m.segments(0);
    assert!(segs[0].Flags.is_set(F::Aperture) && segs[0].Flags.is_set(F::CacheCoherent));
    assert!(segs[1].Flags.is_set(F::CpuVisible), "VRAM behind the BAR");
    if let Some(hidden) = segs.get(2) {
        assert!(!hidden.Flags.is_set(F::CpuVisible), "VRAM past the BAR");
    }
    let (_p, k) = user_process(&m);
    // Not CPU-visible: created, but no CPU address.
    let gpu_only = okk(&m, k.create_allocation_pdd(&pdd(4096, 0)));
    assert_eq!(
        k.lock2(gpu_only.handle).err(),
        Some(NtStatus(STATUS_INVALID_PARAMETER))
    );
    // CPU-visible, cached or not: a CPU address.
    for flags in [
        ALLOCATION_CPU_VISIBLE,
        ALLOCATION_CPU_VISIBLE | ALLOCATION_CPU_CACHED,
    ] {
        let a = okk(&m, k.create_allocation_pdd(&pdd(4096, flags)));
        let mem = okk(&m, k.lock2(a.handle));
        mem.store(0, NEW);
        assert_eq!(mem.load(0), NEW);
        okk(&m, k.unlock2(a.handle));
        // Windows' VidMm only logs an unlock of an allocation that holds no lock.
        okk(&m, k.unlock2(a.handle));
        okk(&m, k.destroy_allocation(a.handle));
    }
    // Cached without CPU-visible means nothing: the KMD refuses it.
    assert_eq!(
        k.create_allocation_pdd(&pdd(4096, ALLOCATION_CPU_CACHED))
            .err(),
        Some(NtStatus(STATUS_INVALID_PARAMETER))
    );
    // Another device's handle is not lockable.
    let (_p2, k2) = user_process(&m);
    let mine = okk(
        &m,
        k.create_allocation_pdd(&pdd(4096, ALLOCATION_CPU_VISIBLE)),
    );
    assert_eq!(
        k2.lock2(mine.handle).err(),
        Some(NtStatus(STATUS_INVALID_PARAMETER))
    );
    assert_eq!(
        k2.unlock2(mine.handle).err(),
        Some(NtStatus(STATUS_INVALID_PARAMETER))
    );
    okk(&m, k.destroy_allocation(mine.handle));
    okk(&m, k.destroy_allocation(gpu_only.handle));
    no_fault(&m);
}

/// AL-04, VidMm's side: a driver that offers a CPU-visible allocation no aperture segment is
/// refused with INVALID_PARAMETER (VidMm could not always give it a CPU address).
#[test]
fn al_04_vidmm_refuses_cpu_visible_allocations_without_an_aperture() {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    m.load_driver_with(rvgpu_simos::testing::bad_alloc::install_no_aperture_for_cpu_visible)
        .expect("load");
    m.start_adapter(0).expect("start");
    let (_p, k) = user_process(&m);
    assert_eq!(
        k.create_allocation_pdd(&pdd(4096, ALLOCATION_CPU_VISIBLE))
            .err(),
        Some(NtStatus(STATUS_INVALID_PARAMETER))
    );
    // Not CPU-visible: the rule does not apply, and VidMm places it in VRAM.
    let gpu_only = okk(&m, k.create_allocation_pdd(&pdd(4096, 0)));
    okk(&m, k.make_resident(&[gpu_only.handle], Default::default()));
    assert!(matches!(
        m.allocation_residency(0, gpu_only.handle),
        Some((rvgpu_simos::vidmm::residency::Place::Local { .. }, 1))
    ));
    no_fault(&m);
}

/// AL-05 (optional) is not implemented, consistently: no segment claims a CPU host aperture,
/// so VidMm never maps one, and the DDI slot is empty. CPU access to VRAM the BAR does not
/// reach goes through the aperture instead (AL-04: every CPU-visible allocation lists it).
/// docs/memory.md "CPU access" gives the reasons.
#[test]
fn al_05_no_cpu_host_aperture() {
    use rvgpu_ddi::memory::DXGK_SEGMENTFLAGS as F;
    let m = step_machine();
    for (i, s) in m.segments(0).iter().enumerate() {
        assert!(
            !s.Flags.is_set(F::SupportsCpuHostAperture),
            "segment {}",
            i + 1
        );
    }
    let t = m.driver_table(0).expect("loaded");
    assert!(t.DxgkDdiMapCpuHostAperture.is_none());
    assert!(t.DxgkDdiUnmapCpuHostAperture.is_none());
}

under_the_pages!();
