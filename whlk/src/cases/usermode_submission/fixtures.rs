//! What the cases share: status values, the ticket sequences that prove each batch ran once
//! in order, and small steps on a session.

use std::time::Duration;

use crate::backend::{
    BufferRef, DoorbellStatus, Failure, NewQueue, OsEvent, ProcessEnd, ProcessRef, Session,
    SessionConfig, SubmitPath, UmQueueRef, Work,
};
use crate::case::CaseResult;
use crate::ensure;

use super::super::common::{fill, no_fault};
pub(super) use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED};

/// `DXGK_ENGINE_STATE_TRANSITION_TO_F1`.
pub(super) const TRANSITION_TO_F1: i32 = 1;
/// Sentinel of a ticket slot no batch wrote.
pub(super) const UNWRITTEN: u64 = u64::MAX;
/// Size of the buffers the cases create.
pub(super) const BUF: u64 = 4096;

// ---------------------------------------------------------------------------------------------
// Fixtures.

/// Exactly `n` doorbells (fewer than the queues: victimisation).
pub(super) fn doorbells(n: u32) -> impl FnOnce(&mut SessionConfig) {
    move |c| c.doorbells = Some(n)
}

/// Exactly `n` doorbells, and processes torn down in the pages' order (24H2 frees the
/// allocations first: simos `Teardown`).
pub(super) fn pages_teardown(n: u32) -> impl FnOnce(&mut SessionConfig) {
    move |c| {
        doorbells(n)(c);
        c.pages_teardown = true;
    }
}

/// At least `n` doorbells: the case's queues never share one.
pub(super) fn enough_doorbells(n: u32) -> impl FnOnce(&mut SessionConfig) {
    move |c| c.min_doorbells = Some(n)
}

/// A ticket sequence in `buf` at byte `base`: the counter cell, then one slot per batch.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tickets {
    pub(super) buf: BufferRef,
    pub(super) base: u64,
    pub(super) count: u64,
}

impl Tickets {
    /// Sets the counter to 0 and every slot to the sentinel.
    pub(super) fn new(
        s: &mut dyn Session,
        buf: BufferRef,
        base: u64,
        count: u64,
    ) -> Result<Self, Failure> {
        s.ums()?.write_buffer(buf, base, 0)?;
        for k in 0..count {
            s.ums()?.write_buffer(buf, base + 8 * (k + 1), UNWRITTEN)?;
        }
        Ok(Self { buf, base, count })
    }

    /// Batch `k`: slot k ← counter; counter ← k + 1.
    pub(super) fn batch(&self, k: u64) -> Vec<Work> {
        vec![
            Work::Copy {
                src: self.buf,
                src_offset: self.base,
                dst: self.buf,
                dst_offset: self.base + 8 * (k + 1),
                bytes: 8,
            },
            fill(self.buf, self.base, k + 1),
        ]
    }

    /// Batches `0..n` ran exactly once, in order, and nothing after them.
    pub(super) fn check(&self, s: &dyn Session, n: u64, what: &str) -> CaseResult {
        for k in 0..self.count {
            let got = s
                .ums_ref()?
                .read_buffer(self.buf, self.base + 8 * (k + 1))?;
            let want = if k < n { k } else { UNWRITTEN };
            ensure!(
                got == want,
                "{what}: ticket slot {k} reads {} (expected {}): {}",
                show(got),
                show(want),
                if got == UNWRITTEN {
                    "batch never ran"
                } else if k >= n {
                    "a batch that was not submitted (or was refused) ran"
                } else if got > k {
                    "batch ran more than once or out of order"
                } else {
                    "batch ran before its predecessor"
                }
            );
        }
        let counter = s.ums_ref()?.read_buffer(self.buf, self.base)?;
        ensure!(
            counter == n,
            "{what}: ticket counter {counter}, expected {n}"
        );
        Ok(())
    }
}

pub(super) fn show(v: u64) -> String {
    if v == UNWRITTEN {
        "unwritten".into()
    } else {
        v.to_string()
    }
}

/// Submits ticket batches `range` to `q`; returns the last progress value.
pub(super) fn submit_tickets(
    s: &mut dyn Session,
    q: UmQueueRef,
    t: &Tickets,
    range: std::ops::Range<u64>,
) -> Result<u64, Failure> {
    let mut last = 0;
    for k in range {
        last = s.ums()?.submit(q, &t.batch(k))?;
    }
    Ok(last)
}

/// Lets the machine run a little (step: 300 rounds; threaded: 3 ms) for work that must NOT
/// happen.
pub(super) fn settle(s: &mut dyn Session) -> CaseResult {
    s.run_until(Duration::from_millis(3), &mut |_| false)?;
    Ok(())
}

pub(super) fn count(ev: &[OsEvent], p: impl Fn(&OsEvent) -> bool) -> usize {
    ev.iter().filter(|e| p(e)).count()
}

pub(super) fn events_since(s: &dyn Session, mark: usize) -> Result<Vec<OsEvent>, Failure> {
    Ok(s.os_trace_ref()?
        .os_events(0)?
        .into_iter()
        .skip(mark)
        .collect())
}

pub(super) fn mark(s: &dyn Session) -> Result<usize, Failure> {
    Ok(s.os_trace_ref()?.os_events(0)?.len())
}

/// The OS trace since an optional mark (see [`observe`]).
pub(super) fn trace(s: &dyn Session, mark: Option<usize>) -> Result<Option<Vec<OsEvent>>, Failure> {
    mark.map_or(Ok(None), |m| events_since(s, m).map(Some))
}

/// A process on adapter 0 with one buffer of [`BUF`] bytes.
pub(super) fn process_with_buffer(s: &mut dyn Session) -> Result<(ProcessRef, BufferRef), Failure> {
    let p = s.ums()?.open_process(0)?;
    Ok((p, s.ums()?.create_buffer(p, BUF)?))
}

/// Ends `p` normally, then fails on a bug check.
pub(super) fn end_normally(s: &mut dyn Session, p: ProcessRef) -> CaseResult {
    s.ums()?.end_process(p, ProcessEnd::Normal)?;
    no_fault(&*s)
}

pub(super) fn user_queue(
    s: &mut dyn Session,
    p: ProcessRef,
    node: u32,
) -> Result<UmQueueRef, Failure> {
    s.ums()?.create_queue(p, NewQueue::user_mode(node))
}

/// A user-mode queue on node 0 and a kernel-mode queue on `kernel_node` for `p`, side by side,
/// with their ticket sequences in `buf`: `user` tickets at byte 0, `kernel` tickets at
/// `kernel_base`.
pub(super) fn user_and_kernel_queues(
    s: &mut dyn Session,
    p: ProcessRef,
    buf: BufferRef,
    user: u64,
    (kernel_base, kernel): (u64, u64),
    kernel_node: u32,
) -> Result<(UmQueueRef, Tickets, UmQueueRef, Tickets), Failure> {
    let tu = Tickets::new(s, buf, 0, user)?;
    let tk = Tickets::new(s, buf, kernel_base, kernel)?;
    let uq = user_queue(s, p, 0)?;
    let kq = s
        .ums()?
        .create_queue(p, NewQueue::kernel_mode(kernel_node))?;
    Ok((uq, tu, kq, tk))
}

pub(super) fn expect_path(
    s: &dyn Session,
    q: UmQueueRef,
    path: SubmitPath,
    what: &str,
) -> CaseResult {
    let got = s.ums_ref()?.queue_info(q)?.path;
    ensure!(
        got == path,
        "{what}: queue submits on {got:?}, expected {path:?}"
    );
    Ok(())
}

pub(super) fn expect_status(
    s: &dyn Session,
    q: UmQueueRef,
    want: DoorbellStatus,
    what: &str,
) -> CaseResult {
    let got = s.ums_ref()?.doorbell_status(q)?;
    let ok = if want == DoorbellStatus::Connected {
        got.is_connected()
    } else {
        got == want
    };
    ensure!(ok, "{what}: doorbell status {got:?}, expected {want:?}");
    Ok(())
}
