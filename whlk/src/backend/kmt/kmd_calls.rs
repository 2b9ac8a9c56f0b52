//! What one process asks of the KMD on its own thunks beyond the UMD: the test hooks' escape
//! (`rvgpu_hw::testhooks`, a driver-private `D3DKMTEscape`: the journal, the last
//! `DxgkDdiCollectDbgInfo` text, faults armed, a queue's native fence logs) and kernel-mode DMA
//! submissions (`D3DKMTSubmitCommand` of a command buffer of its own). The program's sessions
//! (`hooks`, `logs`, the DLL's `dll::os`) and the server of another process (`remote`) call the
//! same functions.

use rvgpu_hw::pdd::PDD_MAGIC;
use rvgpu_hw::testhooks::{JournalRecord, TestHookOp, TEST_HOOK_ESCAPE_VERSION};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, AllocationKind, Kmt, KmtHandle, NtStatus};

use super::sync::{KmtSync, TestThunks};
use crate::backend::Failure;

/// Records asked per escape.
const RECORDS_PER_CALL: usize = 64;
/// Bytes of the escape's header and of one record (`driver/hw/src/testhooks.rs`).
const HEADER: usize = 32;
const RECORD: usize = 32;
/// Room for the text of one `DxgkDdiCollectDbgInfo` (the DDI's buffer is 4 KiB).
const DBG_INFO_ROOM: usize = 4096;

/// A DMA context of this program and the command buffers of its submissions (kept while the
/// GPU may read them).
pub(crate) type LocalContext<K> = (KmtHandle, Vec<Allocation<<K as Kmt>::Mem>>);

/// `D3DKMTSubmitCommand` of `words` as one DMA buffer of `context`, in a command buffer of its
/// own: the buffer and its GPU VA.
pub(crate) fn submit_words<K: Kmt>(
    kmt: &K,
    context: KmtHandle,
    words: &[u64],
) -> Result<Allocation<K::Mem>, NtStatus> {
    let bytes = (words.len() as u64 * 8).max(8);
    let cb = kmt.create_allocation_as(bytes.next_multiple_of(4096), AllocationKind::Commands)?;
    for (i, w) in words.iter().enumerate() {
        cb.mem.store(i as u64 * 8, *w);
    }
    let len = u32::try_from(bytes).unwrap_or(u32::MAX);
    match kmt.submit_command(context, cb.gpu_va, len) {
        Ok(()) => Ok(cb),
        Err(e) => {
            let _ = kmt.destroy_allocation(cb.handle);
            Err(e)
        }
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map_or(0, u32::from_le_bytes)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| <[u8; 8]>::try_from(s).ok())
        .map_or(0, u64::from_le_bytes)
}

/// A test-hook escape header for `op` on `node` from `seq`, with `room` bytes after it.
fn request(op: TestHookOp, node: u32, seq: u64, room: usize) -> Vec<u8> {
    let mut b = vec![0u8; HEADER + room];
    b[0..4].copy_from_slice(&PDD_MAGIC.to_le_bytes());
    b[4..8].copy_from_slice(&TEST_HOOK_ESCAPE_VERSION.to_le_bytes());
    b[8..12].copy_from_slice(&(op as u32).to_le_bytes());
    b[12..16].copy_from_slice(&node.to_le_bytes());
    b[16..24].copy_from_slice(&seq.to_le_bytes());
    b
}

fn record(b: &[u8]) -> JournalRecord {
    JournalRecord {
        seq: u32_at(b, 0),
        kind: u32_at(b, 4) as u16,
        node: (u32_at(b, 4) >> 16) as u16,
        a: u64_at(b, 8),
        b: u64_at(b, 16),
        status: u32_at(b, 24) as i32,
        flags: u32_at(b, 28),
    }
}

/// The journal records from `from` through the escape on `t`.
pub(crate) fn read_journal(t: &dyn TestThunks, from: u64) -> Result<Vec<JournalRecord>, NtStatus> {
    let mut out = Vec::new();
    let mut seq = from;
    loop {
        let mut b = request(TestHookOp::Journal, 0, seq, RECORDS_PER_CALL * RECORD);
        t.escape_driver_private(&mut b)?;
        let count = (u32_at(&b, 24) as usize).min(RECORDS_PER_CALL);
        out.extend((0..count).map(|n| record(&b[HEADER + n * RECORD..])));
        let next = u64_at(&b, 16);
        if count < RECORDS_PER_CALL || next <= seq {
            return Ok(out);
        }
        seq = next;
    }
}

/// The sequence number the KMD's next journal record will get, through the escape on `t`.
pub(crate) fn next_seq(t: &dyn TestThunks) -> Result<u64, NtStatus> {
    let mut b = request(TestHookOp::Journal, 0, u64::MAX, 0);
    t.escape_driver_private(&mut b)?;
    Ok(u64_at(&b, 16))
}

/// The last `DxgkDdiCollectDbgInfo` text and its record's sequence number, through `t`.
pub(crate) fn read_dbg_info(t: &dyn TestThunks) -> Result<(u64, String), NtStatus> {
    let mut b = request(TestHookOp::LastDbgInfo, 0, 0, DBG_INFO_ROOM);
    t.escape_driver_private(&mut b)?;
    let n = (u32_at(&b, 24) as usize).min(DBG_INFO_ROOM);
    let text = String::from_utf8_lossy(&b[HEADER..HEADER + n]).into_owned();
    Ok((u64_at(&b, 16), text))
}

/// Arms `op` on `node` through `t`; an op that arms nothing is refused here.
pub(crate) fn arm(t: &dyn TestThunks, op: TestHookOp, node: u32) -> Result<(), Failure> {
    if matches!(op, TestHookOp::Journal | TestHookOp::LastDbgInfo) {
        return Err(Failure::Backend(format!("{op:?} arms nothing")));
    }
    let mut b = request(op, node, 0, 0);
    t.escape_driver_private(&mut b)
        .map_err(|s| Failure::DdiFailed(s.0))
}

/// The test thunks of `k`, or why there are none.
pub(crate) fn thunks<K: KmtSync>(k: &K) -> Result<&dyn TestThunks, Failure> {
    k.testing()
        .ok_or_else(|| Failure::Unsupported("these thunks have no D3DKMTEscape".into()))
}

/// The KMD's copy of log `log_type` of the queue with device id `queue_id`, through `t` (the
/// device of the queue's process), with room for `room` bytes: `(bytes, NumberOfEntries)`.
pub(crate) fn read_queue_log(
    t: &dyn TestThunks,
    queue_id: u32,
    log_type: u32,
    room: usize,
) -> Result<(Vec<u8>, u64), NtStatus> {
    // The node is the queue id; seq is the log type in and NumberOfEntries out.
    let mut b = request(TestHookOp::QueueLog, queue_id, u64::from(log_type), room);
    t.escape_driver_private(&mut b)?;
    let n = usize::try_from(u32_at(&b, 24)).unwrap_or(0).min(room);
    let bytes = b.get(HEADER..HEADER + n).unwrap_or_default().to_vec();
    Ok((bytes, u64_at(&b, 16)))
}
