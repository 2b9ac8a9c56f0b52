//! `Allocation.*`: the UMD's allocation usage tracking as an application sees it
//! through `rvgpu_umd::usage::Buffer`. Work is held queued behind a gate: a FENCE_WAIT on a
//! word of a plain buffer that the case writes from the CPU to let it run.

use crate::backend::{
    Backend, BufferRef, Capability, ExecMode, LockOutcome, NewQueue, ProcessRef, Session,
    TrackedBatch, TrackedRef, TrackedWork, UmQueueRef,
};
use crate::case::{Case, CaseError, CaseResult};
use crate::ensure;

use super::common::{no_fault, session, wait};

/// `RVGPU_LOCK_*` bits (`rvgpu_umd::usage::LockFlags`).
const READ: u32 = 1;
const WRITE: u32 = 1 << 1;
const DISCARD: u32 = 1 << 2;
const DO_NOT_WAIT: u32 = 1 << 4;

const OLD: u64 = 0x01d0_01d0_01d0_01d0;
const NEW: u64 = 0x0e40_0e40_0e40_0e40;
const GPU: u64 = 0x06b0_06b0_06b0_06b0;
const BYTES: u64 = 4096;

/// What every case of this area needs: user-mode submission's queues and the UMD's tracked
/// buffers.
const NEEDS: &[Capability] = &[Capability::UserModeSubmission, Capability::AllocationUsage];

/// The cases of this area.
pub const CASES: &[Case] = &[
    Case {
        name: "Allocation.DiscardRenamesBusyBuffer",
        requirements: &["AL-01"],
        summary: "a DISCARD lock of a buffer queued work reads returns at once with a fresh backing; the work still sees the old contents",
        needs: NEEDS,
        optional: &[Capability::BugChecks],
        run: discard_renames,
    },
    Case {
        name: "Allocation.DoNotWaitOnBusyBuffer",
        requirements: &["AL-01", "AL-02"],
        summary: "DO_NOT_WAIT on a buffer queued work writes returns WasStillDrawing; a plain lock waits and sees the GPU's write",
        needs: NEEDS,
        optional: &[Capability::BugChecks],
        run: do_not_wait,
    },
    Case {
        name: "Allocation.DestroyWhileInUse",
        requirements: &["AL-03"],
        summary: "destroying a buffer queued work writes returns at once; the work then completes without a fault",
        needs: NEEDS,
        optional: &[Capability::BugChecks],
        run: destroy_in_use,
    },
];

/// A session with one process, a kernel-mode queue, the gate buffer and `n` tracked buffers.
type Setup = (Box<dyn Session>, UmQueueRef, BufferRef, Vec<TrackedRef>);

fn setup(b: &dyn Backend, n: usize) -> Result<Setup, CaseError> {
    let mut s = session(b, ExecMode::Threaded, |_| {})?;
    let p: ProcessRef = s.ums()?.open_process(0)?;
    let q = s.ums()?.create_queue(p, NewQueue::kernel_mode(0))?;
    let gate = s.ums()?.create_buffer(p, 4096)?;
    let mut bufs = Vec::new();
    for _ in 0..n {
        bufs.push(s.alloc_usage()?.create_tracked(p, BYTES)?);
    }
    Ok((s, q, gate, bufs))
}

fn lock(s: &mut dyn Session, b: TrackedRef, flags: u32) -> Result<LockOutcome, CaseError> {
    Ok(s.alloc_usage()?.lock_tracked(b, flags)?)
}

fn mapped(s: &mut dyn Session, b: TrackedRef, flags: u32, what: &str) -> CaseResult {
    let r = lock(s, b, flags)?;
    ensure!(r == LockOutcome::Mapped, "{what}: lock ended {r:?}");
    Ok(())
}

/// Every word of the locked buffer equals `v`.
fn all_equal(s: &dyn Session, b: TrackedRef, v: u64, what: &str) -> CaseResult {
    let u = s.alloc_usage_ref()?;
    for off in (0..BYTES).step_by(8) {
        let got = u.read_tracked(b, off)?;
        ensure!(
            got == v,
            "{what}: word at {off:#x} is {got:#x}, expected {v:#x}"
        );
    }
    Ok(())
}

fn write_all(s: &mut dyn Session, b: TrackedRef, v: u64) -> CaseResult {
    let u = s.alloc_usage()?;
    for off in (0..BYTES).step_by(8) {
        u.write_tracked(b, off, v)?;
    }
    Ok(())
}

fn open_gate(s: &mut dyn Session, gate: BufferRef) -> CaseResult {
    s.ums()?.write_buffer(gate, 0, 1)?;
    Ok(())
}

/// Queues on `q`, behind the closed `gate`, a FILL of all of `buf` with [`GPU`]: its progress
/// value.
fn gated_fill(
    s: &mut dyn Session,
    q: UmQueueRef,
    gate: BufferRef,
    buf: TrackedRef,
) -> Result<u64, CaseError> {
    let fill = TrackedWork::Fill {
        dst: buf,
        offset: 0,
        bytes: BYTES,
        pattern: GPU,
    };
    Ok(s.alloc_usage()?
        .submit_tracked(q, TrackedBatch::new(&[fill]).gated(gate, 0, 1))?)
}

/// Fails if work `v` of `q` completed while `gate` was closed, then opens it.
fn held_then_open(s: &mut dyn Session, q: UmQueueRef, v: u64, gate: BufferRef) -> CaseResult {
    let done = s.ums_ref()?.queue_info(q)?.completed;
    ensure!(done < v, "the gate did not hold the work");
    open_gate(s, gate)
}

fn discard_renames(b: &dyn Backend) -> CaseResult {
    let (mut s, q, gate, bufs) = setup(b, 3)?;
    let (data, before, after) = (bufs[0], bufs[1], bufs[2]);
    mapped(&mut *s, data, WRITE, "first write")?;
    write_all(&mut *s, data, OLD)?;
    s.alloc_usage()?.unlock_tracked(data)?;
    let copy = |dst| TrackedWork::Copy {
        src: data,
        dst,
        bytes: BYTES,
    };
    s.alloc_usage()?
        .submit_tracked(q, TrackedBatch::new(&[copy(before)]).gated(gate, 0, 1))?;
    let va = s.alloc_usage_ref()?.tracked_info(data)?.gpu_va;

    let r = lock(&mut *s, data, DISCARD | DO_NOT_WAIT)?;
    ensure!(r == LockOutcome::Mapped, "DISCARD of a busy buffer: {r:?}");
    let info = s.alloc_usage_ref()?.tracked_info(data)?;
    ensure!(info.gpu_va != va, "a busy buffer was not renamed");
    ensure!(info.renames == 1, "{} renames", info.renames);
    write_all(&mut *s, data, NEW)?;
    s.alloc_usage()?.unlock_tracked(data)?;
    let v = s
        .alloc_usage()?
        .submit_tracked(q, TrackedBatch::new(&[copy(after)]))?;
    open_gate(&mut *s, gate)?;
    wait(&mut *s, q, v, "the copies")?;

    mapped(&mut *s, before, READ, "read back")?;
    all_equal(&*s, before, OLD, "queued before the DISCARD")?;
    s.alloc_usage()?.unlock_tracked(before)?;
    mapped(&mut *s, after, READ, "read back")?;
    all_equal(&*s, after, NEW, "queued after the DISCARD")?;
    s.alloc_usage()?.unlock_tracked(after)?;
    for t in bufs {
        s.alloc_usage()?.destroy_tracked(t)?;
    }
    no_fault(&*s)
}

fn do_not_wait(b: &dyn Backend) -> CaseResult {
    let (mut s, q, gate, bufs) = setup(b, 1)?;
    let buf = bufs[0];
    let v = gated_fill(&mut *s, q, gate, buf)?;
    for f in [READ, WRITE] {
        let r = lock(&mut *s, buf, f | DO_NOT_WAIT)?;
        ensure!(
            r == LockOutcome::WasStillDrawing,
            "DO_NOT_WAIT lock ({f:#x}) of a buffer queued work writes: {r:?}"
        );
    }
    // A plain lock waits: the gate opens, the lock returns once the fill completed.
    held_then_open(&mut *s, q, v, gate)?;
    mapped(&mut *s, buf, READ, "plain read lock")?;
    let done = s.ums_ref()?.queue_info(q)?.completed;
    ensure!(
        done >= v,
        "the lock returned at progress {done}, before {v}"
    );
    all_equal(&*s, buf, GPU, "after the wait")?;
    s.alloc_usage()?.unlock_tracked(buf)?;
    // Idle now: DO_NOT_WAIT maps.
    mapped(&mut *s, buf, WRITE | DO_NOT_WAIT, "idle buffer")?;
    s.alloc_usage()?.unlock_tracked(buf)?;
    s.alloc_usage()?.destroy_tracked(buf)?;
    no_fault(&*s)
}

fn destroy_in_use(b: &dyn Backend) -> CaseResult {
    let (mut s, q, gate, bufs) = setup(b, 1)?;
    let v = gated_fill(&mut *s, q, gate, bufs[0])?;
    s.alloc_usage()?.destroy_tracked(bufs[0])?;
    held_then_open(&mut *s, q, v, gate)?;
    wait(&mut *s, q, v, "the fill of the destroyed buffer")?;
    let info = s.ums_ref()?.queue_info(q)?;
    ensure!(
        !info.lost,
        "the queue was lost: the work faulted on freed memory"
    );
    s.ums()?.close_queue(q)?;
    no_fault(&*s)
}
