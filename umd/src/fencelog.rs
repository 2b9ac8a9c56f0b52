//! Native fence logs on the UMD side (docs/logs.md#umd; LOG-02, LOG-04): the per-queue
//! log cursors, the expansion of native-fence operations into their packets, and the "queued"
//! event of each operation for the GPU timeline.
//!
//! - **Cursors (LOG-02).** Each user-mode hardware queue has a wait log and a signal log (the OS
//!   sets both inside `D3DKMTCreateHwQueue`, before the UMD can create the doorbell, so the UMD
//!   may log from its first submission). [`LogCursor`] holds the next free-running entry index
//!   of each, starting at 0 (new logs start empty). Indices increase by one per logged
//!   operation of that log, in execution order (one queue executes in ring order).
//! - **Expansion.** [`Op::Signal`] becomes `FENCE_SIGNAL(SIGNAL_CONDITIONAL_IRQ)` immediately
//!   followed by `LOG_WRITE(signal log, index, hNativeFence, value)`; [`Op::Wait`] becomes
//!   `FENCE_WAIT` immediately followed by `LOG_WRITE(wait log, ...)`. Nothing sits between a
//!   pair, and the whole batch is published with one write-pointer update (the submission
//!   core's `submit`), which is what the device's signal-log look-ahead needs (hardware.md 8.2,
//!   M17; LOG-04): the entry is written before the interrupt decision.
//! - **Atomicity.** [`expand`] works on a copy of the cursor; the queue commits the advanced
//!   cursor only once the batch is in the ring, so a batch that is refused (too large, lost
//!   queue) uses no index.
//! - **Wrap.** Indices are `u32` and wrap from `u32::MAX` to 0 (hardware.md 9.2, B7: the device
//!   then stops advancing the header; the OS's "named queue without a new entry → scan" rule
//!   keeps waits correct, only the timeline loses entries).
//! - **Kernel-mode queues have no logs** (the OS gives them none), so nothing logged goes there:
//!   a kernel-mode queue's operations expand without LOG_WRITE, and the user-mode queue's
//!   fallback to the kernel-mode path drops the LOG_WRITEs of the packets it resubmits
//!   ([`without_log_writes`]); their [`QueuedOp::logged`] is `false`.
//! - **Queued event.** For every [`Op::Signal`] / [`Op::Wait`] of a batch that was submitted,
//!   the queue calls the caller's [`FenceTrace`] with a [`QueuedOp`], in batch order, after the
//!   submission returned. Its `qpc` is one `Kmt::cpu_timestamp()` read per batch, taken before
//!   anything of the batch is written to the ring (so it is never later than the GPU's
//!   execution of the operation). On Windows the DLL forwards these events to a TraceLogging
//!   provider (`etw_windows`); the simulation's harness installs a collector.

use alloc::vec::Vec;

use rvgpu_hw::cmd::Command;
pub use rvgpu_hw::cmd::LogKind;

use crate::fence::NativeFence;

/// The next free-running entry index of a queue's wait log and signal log (LOG-02).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogCursor {
    /// Index of the next wait-log entry.
    pub next_wait: u32,
    /// Index of the next signal-log entry.
    pub next_signal: u32,
}

impl LogCursor {
    /// Both logs empty: next indices 0.
    pub const fn new() -> Self {
        Self {
            next_wait: 0,
            next_signal: 0,
        }
    }

    /// The next index of `kind`'s log.
    pub const fn next(&self, kind: LogKind) -> u32 {
        match kind {
            LogKind::Wait => self.next_wait,
            LogKind::Signal => self.next_signal,
        }
    }

    /// Takes the next index of `kind`'s log and advances it by one (wrapping at `u32::MAX`).
    pub fn take(&mut self, kind: LogKind) -> u32 {
        let slot = match kind {
            LogKind::Wait => &mut self.next_wait,
            LogKind::Signal => &mut self.next_signal,
        };
        let index = *slot;
        *slot = index.wrapping_add(1);
        index
    }
}

/// One operation of a batch for [`UserQueue::submit_ops`](crate::submit::UserQueue::submit_ops)
/// (and [`KernelQueue::submit_ops`](crate::submit::KernelQueue::submit_ops)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op<'a> {
    /// A packet, as is. A `LOG_WRITE` is refused (`SubmitError::BadCommand`): the queue owns
    /// the log indices.
    Cmd(Command),
    /// Signal the fence to the value (conditional interrupt), logged in the signal log.
    Signal(&'a NativeFence, u64),
    /// Wait on the GPU until the fence reaches the value, logged in the wait log.
    Wait(&'a NativeFence, u64),
}

/// The "queued" event of one native-fence operation (docs/logs.md#umd): the harness joins
/// it with the OS's log entry on `(adapter, queue_id, kind, index)`; `(fence, value)` must then
/// equal the entry's `(hNativeFence, FenceValue)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuedOp {
    /// The device queue id of the queue that carries the operation.
    pub queue_id: u32,
    /// Wait or signal (which log).
    pub kind: LogKind,
    /// The free-running log index of its LOG_WRITE; meaningful only if `logged` (else 0).
    pub index: u32,
    /// The fence's D3DKMT handle (`hNativeFence` of the entry).
    pub fence: u32,
    /// The fence value waited for or signalled.
    pub value: u64,
    /// CPU timestamp (`Kmt::cpu_timestamp`, QPC ticks) taken before the batch was written.
    pub qpc: u64,
    /// A LOG_WRITE with `index` follows the operation in the user-mode ring. `false` on a
    /// kernel-mode queue and after the fallback. (A logged operation's entry can still be
    /// missing: overwritten before the OS read it (LOG-05), or dropped with the rest of the
    /// ring's unconsumed packets by a fallback, possibly during the same submission.)
    pub logged: bool,
}

/// Receives the "queued" events (the caller supplies it; none by default).
pub trait FenceTrace: Send + Sync {
    /// One operation was submitted. Called in batch order, after the submission returned.
    fn queued(&self, op: &QueuedOp);
}

/// A batch after expansion: the packets to submit, the events to report once it is submitted,
/// and the cursor to commit then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expanded {
    /// The packets, each native-fence operation followed by its LOG_WRITE when logged.
    pub cmds: Vec<Command>,
    /// One event per [`Op::Signal`] / [`Op::Wait`], in batch order.
    pub ops: Vec<QueuedOp>,
    /// The cursor after the batch (unchanged when not logged).
    pub cursor: LogCursor,
}

/// Why a batch cannot be expanded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpandError {
    /// An [`Op::Cmd`] is a LOG_WRITE (only the queue writes those, LOG-02).
    CallerLogWrite,
}

/// Expands `ops` for queue `queue_id`. With `logged`, each signal and wait is followed by its
/// LOG_WRITE with the next index of a copy of `cursor`; without, no LOG_WRITE is emitted and
/// the cursor is returned unchanged. `qpc` goes into every event.
pub fn expand(
    ops: &[Op<'_>],
    cursor: LogCursor,
    logged: bool,
    queue_id: u32,
    qpc: u64,
) -> Result<Expanded, ExpandError> {
    let mut cur = cursor;
    let mut cmds = Vec::with_capacity(ops.len().saturating_mul(2));
    let mut events = Vec::new();
    for op in ops {
        let (fence, value, kind, cmd) = match *op {
            Op::Cmd(Command::LogWrite { .. }) => return Err(ExpandError::CallerLogWrite),
            Op::Cmd(c) => {
                cmds.push(c);
                continue;
            }
            Op::Signal(f, v) => (f, v, LogKind::Signal, f.signal(v)),
            Op::Wait(f, v) => (f, v, LogKind::Wait, f.wait(v)),
        };
        cmds.push(cmd);
        let index = if logged {
            let index = cur.take(kind);
            cmds.push(Command::LogWrite {
                log: kind,
                index,
                fence_handle: fence.kmt,
                fence_value: value,
            });
            index
        } else {
            0
        };
        events.push(QueuedOp {
            queue_id,
            kind,
            index,
            fence: fence.kmt,
            value,
            qpc,
            logged,
        });
    }
    Ok(Expanded {
        cmds,
        ops: events,
        cursor: cur,
    })
}

/// True if `cmds` has a LOG_WRITE.
pub fn has_log_writes(cmds: &[Command]) -> bool {
    cmds.iter().any(|c| matches!(c, Command::LogWrite { .. }))
}

/// `cmds` without their LOG_WRITEs: what a kernel-mode queue (no logs) may run. A LOG_WRITE
/// there would fault the queue (`NoLog`, hardware.md 6.2).
pub fn without_log_writes(cmds: &[Command]) -> Vec<Command> {
    cmds.iter()
        .filter(|c| !matches!(c, Command::LogWrite { .. }))
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fence::GpuFence;

    fn fence(kmt: u32) -> NativeFence {
        NativeFence {
            kmt,
            gpu: GpuFence {
                current: rvgpu_hw::addr::GpuVa::new(0x1000 * u64::from(kmt)),
                monitored: rvgpu_hw::addr::GpuVa::new(0x1000 * u64::from(kmt) + 8),
                tag: u64::from(kmt),
            },
            current_value_cpu: 0,
        }
    }

    /// LOG-02: per-log free-running indices from 0, +1 per operation of that log, each
    /// LOG_WRITE right after its operation, naming the fence's D3DKMT handle and the value.
    #[test]
    fn log_02_expand_pairs_each_op_with_its_log_write() {
        let (a, b) = (fence(0x41), fence(0x42));
        let ops = [
            Op::Wait(&a, 1),
            Op::Cmd(Command::Timestamp { addr: 0x8000 }),
            Op::Signal(&b, 2),
            Op::Signal(&a, 3),
            Op::Wait(&b, 4),
        ];
        let e = expand(&ops, LogCursor::new(), true, 7, 99).unwrap();
        let lw = |log, index, fence_handle, fence_value| Command::LogWrite {
            log,
            index,
            fence_handle,
            fence_value,
        };
        assert_eq!(
            e.cmds,
            vec![
                a.wait(1),
                lw(LogKind::Wait, 0, 0x41, 1),
                Command::Timestamp { addr: 0x8000 },
                b.signal(2),
                lw(LogKind::Signal, 0, 0x42, 2),
                a.signal(3),
                lw(LogKind::Signal, 1, 0x41, 3),
                b.wait(4),
                lw(LogKind::Wait, 1, 0x42, 4),
            ]
        );
        assert_eq!(
            e.cursor,
            LogCursor {
                next_wait: 2,
                next_signal: 2
            }
        );
        let summary: Vec<(LogKind, u32, u32, u64)> = e
            .ops
            .iter()
            .map(|o| (o.kind, o.index, o.fence, o.value))
            .collect();
        assert_eq!(
            summary,
            vec![
                (LogKind::Wait, 0, 0x41, 1),
                (LogKind::Signal, 0, 0x42, 2),
                (LogKind::Signal, 1, 0x41, 3),
                (LogKind::Wait, 1, 0x42, 4),
            ]
        );
        assert!(e
            .ops
            .iter()
            .all(|o| o.logged && o.qpc == 99 && o.queue_id == 7));
    }

    /// LOG-02: at `u32::MAX` the index wraps to 0 (hardware.md B7), per log.
    #[test]
    fn log_02_index_wraps_at_u32_max() {
        let f = fence(1);
        let start = LogCursor {
            next_wait: 5,
            next_signal: u32::MAX,
        };
        let e = expand(&[Op::Signal(&f, 1), Op::Signal(&f, 2)], start, true, 0, 0).unwrap();
        let idx: Vec<u32> = e.ops.iter().map(|o| o.index).collect();
        assert_eq!(idx, vec![u32::MAX, 0]);
        assert_eq!(
            e.cursor,
            LogCursor {
                next_wait: 5,
                next_signal: 1
            }
        );
    }

    /// Kernel-mode queues have no logs: no LOG_WRITE, cursor unchanged, events not logged.
    #[test]
    fn log_02_unlogged_expansion_has_no_log_writes() {
        let f = fence(3);
        let start = LogCursor {
            next_wait: 4,
            next_signal: 9,
        };
        let e = expand(&[Op::Wait(&f, 1), Op::Signal(&f, 2)], start, false, 2, 5).unwrap();
        assert_eq!(e.cmds, vec![f.wait(1), f.signal(2)]);
        assert_eq!(e.cursor, start);
        assert!(e.ops.iter().all(|o| !o.logged && o.index == 0));
        assert!(!has_log_writes(&e.cmds));
    }

    /// LOG-02: the caller cannot write log entries itself.
    #[test]
    fn log_02_caller_log_write_is_refused() {
        let lw = Command::LogWrite {
            log: LogKind::Signal,
            index: 0,
            fence_handle: 1,
            fence_value: 1,
        };
        assert_eq!(
            expand(&[Op::Cmd(lw)], LogCursor::new(), true, 0, 0),
            Err(ExpandError::CallerLogWrite)
        );
        let kept = without_log_writes(&[Command::Hang, lw, Command::Nop { len: 2 }]);
        assert_eq!(kept, vec![Command::Hang, Command::Nop { len: 2 }]);
    }
}
