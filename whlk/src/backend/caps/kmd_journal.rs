//! The [`KmdJournal`] capability: what the KMD saw of detection and recovery, through its test
//! hooks.

use crate::backend::common::Failure;

use super::fence_logs::LogKind;
use super::user_mode::UmQueueRef;

/// The KMD's record of what it saw of detection and recovery (`driver/hw/src/testhooks.rs`):
/// the DDIs the OS called and what the KMD reported, read through the KMD's test-hook escape
/// (`D3DKMTEscape`, driver-private), which the KMD answers only when the device's software key
/// holds `TestHooks` = 1. It shows the KMD's side only: VidSch's own steps (detection, the
/// snapshot, the DPC flush, the recovery) are not in it.
pub trait KmdJournal {
    /// The journal records of adapter `i` with a sequence number at least `from`, oldest
    /// first (as many as the KMD still keeps).
    fn kmd_journal(
        &mut self,
        i: usize,
        from: u64,
    ) -> Result<Vec<rvgpu_hw::testhooks::JournalRecord>, Failure>;

    /// The text of the KMD's last `DxgkDdiCollectDbgInfo` on adapter `i` and the journal
    /// sequence number of that call.
    fn last_dbg_info(&mut self, i: usize) -> Result<(u64, String), Failure>;

    /// User-mode queue `q`'s native fence log of `kind` as the device wrote it (header, then
    /// entries; `rvgpu_hw::log`), which the KMD copies to a program of the queue's own device
    /// (`TestHookOp::QueueLog`); `None` where the queue has no such log. Default: unsupported.
    fn kmd_queue_log(&mut self, q: UmQueueRef, kind: LogKind) -> Result<Option<Vec<u8>>, Failure> {
        let _ = (q, kind);
        Err(Failure::Unsupported(
            "the KMD's copy of a queue's log (TestHookOp::QueueLog)".into(),
        ))
    }
}
