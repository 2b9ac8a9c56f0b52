//! The KMD's journal as text: what `rvgpu-whlk collect` writes into `journal.txt`
//! (docs/test-machine.md, "10. What to send back"). The journal is what the KMD saw of timeout
//! detection and recovery, read through its test hooks, a driver-private `D3DKMTEscape` whose
//! wire format is `rvgpu_hw::testhooks`; the KMD answers it only when the device's software key
//! holds `TestHooks` = 1, and otherwise as any unknown escape (`STATUS_INVALID_PARAMETER`).
//!
//! One line a record: `SEQ KIND node=N a=0x… b=0x… status=0x…` and the flags `paging`,
//! `resubmission`; a gap in the sequence numbers (the KMD keeps the last
//! [`JOURNAL_RECORDS`]) is a line of its own. Then the text of the KMD's last
//! `DxgkDdiCollectDbgInfo`.

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_hw::testhooks::{
    JournalKind, JournalRecord, TestHookEscape, TestHookOp, JOURNAL_PAGING, JOURNAL_RECORDS,
    JOURNAL_RESUBMISSION,
};

/// Bytes of a [`TestHookEscape`] header and of a [`JournalRecord`].
const HEADER: usize = 32;
const RECORD: usize = 32;
const _: () = assert!(std::mem::size_of::<TestHookEscape>() == HEADER);
const _: () = assert!(std::mem::size_of::<JournalRecord>() == RECORD);
/// Records asked for by one escape.
const BATCH: usize = 32;
/// Bytes offered for the last `DxgkDdiCollectDbgInfo`'s text.
const DBG_INFO_ROOM: usize = 4096;

/// One driver-private escape on an adapter: `data` in and out; the NTSTATUS when it fails.
pub type Escape<'a> = dyn FnMut(&mut [u8]) -> Result<(), i32> + 'a;

fn u16_at(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u16::from_le_bytes)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// A request's bytes: the header, then `room` zero bytes for the answer.
fn request(op: TestHookOp, seq: u64, room: usize) -> Vec<u8> {
    let h = TestHookEscape::new(op, 0, seq);
    let mut b = Vec::with_capacity(HEADER + room);
    for v in [h.magic, h.version, h.op, h.node] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&h.seq.to_le_bytes());
    b.extend_from_slice(&h.count.to_le_bytes());
    b.extend_from_slice(&h.reserved.to_le_bytes());
    b.resize(HEADER + room, 0);
    b
}

/// The answer's `seq` and `count`.
fn answer(b: &[u8]) -> (u64, u32) {
    (u64_at(b, 16), u32_at(b, 24))
}

fn record(b: &[u8]) -> JournalRecord {
    JournalRecord {
        seq: u32_at(b, 0),
        kind: u16_at(b, 4),
        node: u16_at(b, 6),
        a: u64_at(b, 8),
        b: u64_at(b, 16),
        status: u32_at(b, 24) as i32,
        flags: u32_at(b, 28),
    }
}

/// A record as its line.
pub fn line(r: &JournalRecord) -> String {
    let kind = JournalKind::from_u16(r.kind)
        .map_or_else(|| format!("kind{}", r.kind), |k| format!("{k:?}"));
    let mut s = format!(
        "{} {kind} node={} a={:#x} b={:#x} status={:#010x}",
        r.seq, r.node, r.a, r.b, r.status as u32
    );
    if r.flags & JOURNAL_PAGING != 0 {
        s.push_str(" paging");
    }
    if r.flags & JOURNAL_RESUBMISSION != 0 {
        s.push_str(" resubmission");
    }
    s
}

/// Every record the KMD still keeps, oldest first, read `BATCH` records at a time; the status of the
/// first escape that failed.
pub fn read(escape: &mut Escape<'_>) -> Result<Vec<JournalRecord>, i32> {
    let mut out = Vec::new();
    let mut seq = 1;
    // The KMD keeps JOURNAL_RECORDS: this many batches read them all, and records written
    // while reading (by another process's recovery) at most once more.
    for _ in 0..=2 * JOURNAL_RECORDS.div_ceil(BATCH) {
        let mut b = request(TestHookOp::Journal, seq, BATCH * RECORD);
        escape(&mut b)?;
        let (next, count) = answer(&b);
        let n = usize::try_from(count).unwrap_or(BATCH).min(BATCH);
        out.extend((0..n).map(|i| record(b.get(HEADER + i * RECORD..).unwrap_or_default())));
        if n == 0 || next <= seq {
            break;
        }
        seq = next;
    }
    Ok(out)
}

/// The text of the KMD's last `DxgkDdiCollectDbgInfo` and that call's sequence number; `None`
/// before the first.
pub fn last_dbg_info(escape: &mut Escape<'_>) -> Result<Option<(u64, String)>, i32> {
    let mut b = request(TestHookOp::LastDbgInfo, 0, DBG_INFO_ROOM);
    escape(&mut b)?;
    let (seq, count) = answer(&b);
    let n = usize::try_from(count).unwrap_or(0).min(DBG_INFO_ROOM);
    if n == 0 {
        return Ok(None);
    }
    let text = b.get(HEADER..HEADER + n).unwrap_or_default();
    let text = String::from_utf8_lossy(text);
    Ok(Some((seq, text.trim_end_matches('\0').to_owned())))
}

/// One adapter's part of `journal.txt`.
pub fn text(escape: &mut Escape<'_>) -> String {
    let records = match read(escape) {
        Ok(r) => r,
        Err(st) if st == STATUS_INVALID_PARAMETER => {
            return "test hooks off (STATUS_INVALID_PARAMETER): TestHooks is not 1 in the \
                    device's software key, or the device has not restarted since\r\n"
                .into();
        }
        Err(st) => return format!("the journal escape failed: {:#010x}\r\n", st as u32),
    };
    let mut out = String::new();
    let mut expected = 1;
    for r in &records {
        if r.seq > expected {
            out.push_str(&format!(
                "records {expected} to {} overwritten\r\n",
                r.seq - 1
            ));
        }
        out.push_str(&line(r));
        out.push_str("\r\n");
        expected = r.seq.saturating_add(1);
    }
    if records.is_empty() {
        out.push_str("no records\r\n");
    }
    match last_dbg_info(escape) {
        Ok(Some((seq, t))) => {
            out.push_str(&format!(
                "last DxgkDdiCollectDbgInfo (record {seq}):\r\n{t}\r\n"
            ));
        }
        Ok(None) => out.push_str("no DxgkDdiCollectDbgInfo yet\r\n"),
        Err(st) => out.push_str(&format!(
            "last DxgkDdiCollectDbgInfo: the escape failed: {:#010x}\r\n",
            st as u32
        )),
    }
    out
}

/// `journal.txt` on this machine: each rvgpu adapter's part, or why there is none.
#[cfg(windows)]
pub fn dump() -> Result<String, String> {
    use crate::backend::kmt::windows::WinPlatform;
    use crate::backend::kmt::KmtPlatform;
    use crate::backend::{ExecMode, SessionConfig};
    let mut machine = WinPlatform
        .open(&SessionConfig::new(ExecMode::Threaded))
        .map_err(|e| e.to_string())?;
    if machine.adapters() == 0 {
        return Err("no rvgpu adapter is present".into());
    }
    let mut out = String::new();
    for i in 0..machine.adapters() {
        out.push_str(&format!("adapter {i}\r\n"));
        match machine.open_device(i) {
            Ok(kmt) => out.push_str(&text(&mut |d: &mut [u8]| {
                kmt.escape_driver_private(d).map_err(|s| s.0)
            })),
            Err(e) => out.push_str(&format!("cannot open a device: {e}\r\n")),
        }
    }
    Ok(out)
}

/// Without Windows' thunks there is no journal to read.
#[cfg(not(windows))]
pub fn dump() -> Result<String, String> {
    Err("the KMD's journal is read on Windows only (rvgpu-whlk.exe)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The KMD's side of the escape as `rvgpu_hw::testhooks` states it: `kept` the records it
    /// still has, `dbg` its last `DxgkDdiCollectDbgInfo`; `on` whether `TestHooks` is 1.
    fn kmd(
        kept: Vec<JournalRecord>,
        dbg: Option<(u64, &'static str)>,
        on: bool,
    ) -> impl FnMut(&mut [u8]) -> Result<(), i32> {
        move |b: &mut [u8]| {
            if !on || u32_at(b, 0) != rvgpu_hw::pdd::PDD_MAGIC {
                return Err(STATUS_INVALID_PARAMETER);
            }
            let from = u64_at(b, 16);
            let (next, count) = match TestHookOp::from_u32(u32_at(b, 8)) {
                Some(TestHookOp::Journal) => {
                    let room = (b.len() - HEADER) / RECORD;
                    let take: Vec<_> = kept
                        .iter()
                        .filter(|r| u64::from(r.seq) >= from)
                        .take(room)
                        .collect();
                    for (i, r) in take.iter().enumerate() {
                        let at = HEADER + i * RECORD;
                        b[at..at + 4].copy_from_slice(&r.seq.to_le_bytes());
                        b[at + 4..at + 6].copy_from_slice(&r.kind.to_le_bytes());
                        b[at + 6..at + 8].copy_from_slice(&r.node.to_le_bytes());
                        b[at + 8..at + 16].copy_from_slice(&r.a.to_le_bytes());
                        b[at + 16..at + 24].copy_from_slice(&r.b.to_le_bytes());
                        b[at + 24..at + 28].copy_from_slice(&r.status.to_le_bytes());
                        b[at + 28..at + 32].copy_from_slice(&r.flags.to_le_bytes());
                    }
                    let next = take.last().map_or(from, |r| u64::from(r.seq) + 1);
                    (next, take.len())
                }
                Some(TestHookOp::LastDbgInfo) => match dbg {
                    Some((seq, t)) => {
                        b[HEADER..HEADER + t.len()].copy_from_slice(t.as_bytes());
                        (seq, t.len())
                    }
                    None => (0, 0),
                },
                _ => return Err(STATUS_INVALID_PARAMETER),
            };
            b[16..24].copy_from_slice(&next.to_le_bytes());
            b[24..28].copy_from_slice(&(count as u32).to_le_bytes());
            Ok(())
        }
    }

    fn submit(seq: u32) -> JournalRecord {
        JournalRecord {
            seq,
            kind: JournalKind::Submit as u16,
            node: 1,
            a: u64::from(seq) * 2,
            b: 0,
            status: 0,
            flags: JOURNAL_PAGING,
        }
    }

    #[test]
    fn tdr_journal_text_reads_every_kept_record_in_order_and_names_the_overwritten_ones() {
        // The KMD kept records 5 … 100 (more than one escape's worth), 1 … 4 overwritten.
        let mut kept: Vec<_> = (5..=99).map(submit).collect();
        kept.push(JournalRecord {
            seq: 100,
            kind: JournalKind::ResetEngine as u16,
            node: 0,
            a: 7,
            b: 0,
            status: -1_073_741_811,
            flags: JOURNAL_RESUBMISSION,
        });
        let t = text(&mut kmd(kept, Some((100, "engine 0 hung\0")), true));
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "records 1 to 4 overwritten", "{t}");
        assert_eq!(
            lines[1], "5 Submit node=1 a=0xa b=0x0 status=0x00000000 paging",
            "{t}"
        );
        assert_eq!(
            lines[96], "100 ResetEngine node=0 a=0x7 b=0x0 status=0xc000000d resubmission",
            "{t}"
        );
        assert_eq!(
            lines.iter().filter(|l| l.contains(" Submit ")).count(),
            95,
            "{t}"
        );
        assert_eq!(lines[97], "last DxgkDdiCollectDbgInfo (record 100):", "{t}");
        assert_eq!(lines[98], "engine 0 hung", "{t}");
    }

    #[test]
    fn tdr_journal_text_says_the_hooks_are_off_when_the_kmd_refuses_the_escape() {
        let t = text(&mut kmd(vec![submit(1)], None, false));
        assert!(
            t.starts_with("test hooks off") && t.contains("TestHooks"),
            "{t}"
        );
        let t = text(&mut kmd(Vec::new(), None, true));
        assert_eq!(t, "no records\r\nno DxgkDdiCollectDbgInfo yet\r\n");
    }
}
