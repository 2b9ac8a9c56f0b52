//! Batches in words: their encoded size, the progress packet's words, the fence operations a
//! batch expands to and the reports of their "queued" events.

use alloc::sync::Arc;

use rvgpu_hw::cmd::{header, Command, Opcode, PROGRESS_IRQ};

use super::config::SubmitError;
use crate::fencelog::{expand, Expanded, FenceTrace, LogCursor, Op};
use crate::kmt::Kmt;

/// Encoded length of `cmds` in bytes.
pub(super) fn batch_bytes(cmds: &[Command]) -> u64 {
    let words: u64 = cmds
        .iter()
        .map(|c| u64::try_from(c.len()).unwrap_or(u64::MAX))
        .fold(0, u64::saturating_add);
    words.saturating_mul(8)
}

/// Words of the FENCE_SIGNAL that closes a user-mode batch on the queue's own native fence.
pub(super) const SIGNAL_WORDS: usize = match Opcode::FenceSignal.fixed_len() {
    Some(n) => n as usize,
    None => 0,
};

/// Whether `c` encodes as a whole packet: not a NOP of length 0, nor a WRITE_DATA (a
/// [`Command`] does not carry its data words; page-table writes are the kernel's).
#[inline]
pub(super) fn encodes_whole(c: &Command) -> bool {
    !matches!(c, Command::Nop { len: 0 } | Command::WriteData { .. })
}

/// The words of the progress packet that ends a user-mode batch, `PROGRESS(value)` with
/// `PROGRESS_IRQ` (so that the OS rescans its monitored fences and CPU waits on the progress
/// fence wake): a pre-encoded header and the value.
pub(super) fn progress_words(value: u64) -> [u64; 2] {
    const HEADER: u64 = header(Opcode::Progress, PROGRESS_IRQ, 2);
    [HEADER, value]
}

/// The CPU timestamp of a batch's "queued" events: read only when someone listens.
pub(super) fn trace_timestamp<K: Kmt>(kmt: &K, trace: Option<&Arc<dyn FenceTrace>>) -> u64 {
    if trace.is_some() {
        kmt.cpu_timestamp()
    } else {
        0
    }
}

/// [`expand`] with the queue's errors.
pub(super) fn expand_ops(
    ops: &[Op<'_>],
    cursor: LogCursor,
    logged: bool,
    queue_id: u32,
    qpc: u64,
) -> Result<Expanded, SubmitError> {
    expand(ops, cursor, logged, queue_id, qpc).map_err(|_| SubmitError::BadCommand)
}

/// Sends the "queued" events of a submitted batch, in order.
pub(super) fn report(trace: Option<&Arc<dyn FenceTrace>>, ops: &[crate::fencelog::QueuedOp]) {
    if let Some(t) = trace {
        for op in ops {
            t.queued(op);
        }
    }
}
