//! The test hooks' state ([`super`] holds the operations): the journal ring, the faults armed
//! per node, and the text of the last debug report. Every part is atomics only, so that the
//! ISR (device IRQL), DISPATCH_LEVEL callers and PASSIVE readers share it without a lock that
//! could make an ISR wait.
//!
//! **The ring.** Records get sequence numbers from one counter (`next`, from 1); record `n`
//! lives in slot `(n − 1) mod JOURNAL_RECORDS`. Each slot is a sequence lock: its `stamp` is
//! `n << 1 | BUSY` while record `n` is being written and `n << 1` once it is whole. A writer
//! claims its slot with one compare-exchange from a stamp that is neither busy nor newer than
//! its own record, and otherwise drops its record (a gap in `seq`, which a reader sees): so a
//! slot has at most one writer, and an ISR never waits for the writer it interrupted. The
//! claim acquires the previous writer's whole stamp (so its fields come before the new ones in
//! every field's modification order); the writer's fields are stored after the claim (ordered
//! by a Release fence) and published by the Release store of the whole stamp; a reader loads the stamp (Acquire), the fields, then
//! (after an Acquire fence) the stamp again, and keeps the record only if both stamps are the
//! whole stamp of the record it wants. `tests/models/tests/tdr_test_hook_journal.rs` checks
//! this protocol with `loom`.

use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use alloc::boxed::Box;
use rvgpu_hw::testhooks::{JournalRecord, JOURNAL_RECORDS};

use crate::kmem::{self, NoMemory};
use crate::platform::Platform;

/// A stamp's low bit: the slot's record is being written.
const BUSY: u64 = 1;

/// One record's words.
#[derive(Debug, Default)]
struct Slot {
    stamp: AtomicU64,
    /// `kind | node << 16 | (status as u32) << 32`.
    head: AtomicU64,
    a: AtomicU64,
    b: AtomicU64,
    flags: AtomicU32,
}

/// What a reader found in the slot of record `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// The whole record.
    Record(JournalRecord),
    /// Record `n` is being written at this moment.
    Busy,
    /// Record `n` is not there: dropped, or overwritten by a newer one.
    Gone,
}

/// The journal ring ([`JOURNAL_RECORDS`] slots).
#[derive(Debug)]
pub struct Journal {
    /// The last sequence number handed out (0: none yet).
    next: AtomicU64,
    slots: Box<[Slot]>,
}

impl Journal {
    /// An empty journal (fallible: the hooks' memory is taken only when they are on).
    pub fn try_new<P: Platform>() -> Result<Self, NoMemory> {
        Ok(Self {
            next: AtomicU64::new(0),
            slots: kmem::try_boxed_slice::<P, Slot>(JOURNAL_RECORDS, |_| Slot::default())?,
        })
    }

    fn slot(&self, n: u64) -> Option<&Slot> {
        let i = n.checked_sub(1)?.checked_rem(JOURNAL_RECORDS as u64)?;
        self.slots.get(usize::try_from(i).ok()?)
    }

    /// Writes `r` (its `seq` is ignored) as the next record; any IRQL. Returns its sequence
    /// number (written or, if its slot was taken, dropped).
    pub fn write(&self, r: &JournalRecord) -> u64 {
        let n = self.next.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let Some(slot) = self.slot(n) else {
            return n;
        };
        let old = slot.stamp.load(Ordering::Relaxed);
        if old & BUSY != 0 || old >> 1 >= n {
            return n;
        }
        if slot
            .stamp
            .compare_exchange(old, n << 1 | BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return n;
        }
        // The claim is ordered before the fields: a reader that sees any of them sees the
        // stamp busy (or newer) on its second load.
        fence(Ordering::Release);
        let head =
            u64::from(r.kind) | u64::from(r.node) << 16 | u64::from(r.status.cast_unsigned()) << 32;
        slot.head.store(head, Ordering::Relaxed);
        slot.a.store(r.a, Ordering::Relaxed);
        slot.b.store(r.b, Ordering::Relaxed);
        slot.flags.store(r.flags, Ordering::Relaxed);
        slot.stamp.store(n << 1, Ordering::Release);
        n
    }

    /// The sequence number the next record will get.
    pub fn next_seq(&self) -> u64 {
        self.next.load(Ordering::Acquire).wrapping_add(1)
    }

    /// Reads record `n`.
    pub fn read(&self, n: u64) -> Read {
        let Some(slot) = self.slot(n) else {
            return Read::Gone;
        };
        let s1 = slot.stamp.load(Ordering::Acquire);
        if s1 == (n << 1 | BUSY) {
            return Read::Busy;
        }
        if s1 != n << 1 {
            return Read::Gone;
        }
        let head = slot.head.load(Ordering::Relaxed);
        let a = slot.a.load(Ordering::Relaxed);
        let b = slot.b.load(Ordering::Relaxed);
        let flags = slot.flags.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if slot.stamp.load(Ordering::Relaxed) != s1 {
            return Read::Gone;
        }
        let [k0, k1, n0, n1, s0, s1, s2, s3] = head.to_le_bytes();
        Read::Record(JournalRecord {
            // The wire's sequence numbers are 32-bit: they wrap after 2^32 records.
            seq: n
                .to_le_bytes()
                .first_chunk()
                .copied()
                .map_or(0, u32::from_le_bytes),
            kind: u16::from_le_bytes([k0, k1]),
            node: u16::from_le_bytes([n0, n1]),
            a,
            b,
            status: i32::from_le_bytes([s0, s1, s2, s3]),
            flags,
        })
    }
}

/// Bytes of debug-report text kept ([`DbgText`]).
pub const DBG_TEXT_BYTES: usize = 1024;

/// The text of the last `DxgkDdiCollectDbgInfo` / `DxgkDdiCollectDbgInfo2`, a sequence lock
/// of its own: the writer claims it with one compare-exchange (a second report written at the
/// same moment keeps no copy: the call never waits), a reader copies it and checks the
/// version did not move.
#[derive(Debug)]
pub struct DbgText {
    /// Even: whole; odd: being written.
    version: AtomicU64,
    /// Bytes of text.
    len: AtomicU32,
    /// The journal sequence number of the report's `CollectDbgInfo` record.
    seq: AtomicU64,
    words: Box<[AtomicU64]>,
}

impl DbgText {
    /// No text yet.
    pub fn try_new<P: Platform>() -> Result<Self, NoMemory> {
        Ok(Self {
            version: AtomicU64::new(0),
            len: AtomicU32::new(0),
            seq: AtomicU64::new(0),
            words: kmem::try_boxed_slice::<P, AtomicU64>(DBG_TEXT_BYTES / 8, |_| {
                AtomicU64::new(0)
            })?,
        })
    }

    /// Replaces the text with what `fill` writes (at most [`DBG_TEXT_BYTES`], the rest
    /// dropped), for the report `record` journals (given the bytes kept, it returns the
    /// record's sequence number). Returns the bytes kept, or `None` (and nothing recorded) if
    /// another report is being kept at this moment.
    pub fn capture(
        &self,
        fill: impl FnOnce(&mut TextWriter<'_>),
        record: impl FnOnce(u32) -> u64,
    ) -> Option<u32> {
        let v = self.version.load(Ordering::Relaxed);
        if v & 1 != 0
            || self
                .version
                .compare_exchange(v, v | 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return None;
        }
        fence(Ordering::Release);
        let mut w = TextWriter {
            words: &self.words,
            len: 0,
            word: 0,
        };
        fill(&mut w);
        let len = w.finish();
        self.len.store(len, Ordering::Relaxed);
        self.seq.store(record(len), Ordering::Relaxed);
        self.version.store(v.wrapping_add(2), Ordering::Release);
        Some(len)
    }

    /// Copies the text into `out` (as much as fits): `(bytes copied, seq)`, or `None` if a
    /// report is being kept at this moment (nothing is then reliable in `out`).
    pub fn read(&self, out: &mut [u8]) -> Option<(u32, u64)> {
        let v = self.version.load(Ordering::Acquire);
        if v & 1 != 0 {
            return None;
        }
        let len = self.len.load(Ordering::Relaxed);
        let seq = self.seq.load(Ordering::Relaxed);
        let n = out.len().min(len as usize);
        for (i, chunk) in out
            .get_mut(..n)
            .unwrap_or_default()
            .chunks_mut(8)
            .enumerate()
        {
            let w = self.words.get(i).map_or(0, |w| w.load(Ordering::Relaxed));
            let bytes = w.to_le_bytes();
            chunk.copy_from_slice(bytes.get(..chunk.len()).unwrap_or_default());
        }
        fence(Ordering::Acquire);
        if self.version.load(Ordering::Relaxed) != v {
            return None;
        }
        Some((u32::try_from(n).unwrap_or(u32::MAX), seq))
    }
}

/// Writes text into a [`DbgText`]'s words, eight bytes at a time, dropping what does not fit.
#[derive(Debug)]
pub struct TextWriter<'a> {
    words: &'a [AtomicU64],
    len: usize,
    word: u64,
}

impl TextWriter<'_> {
    /// Stores the last partial word; the bytes written.
    fn finish(self) -> u32 {
        if !self.len.is_multiple_of(8) {
            if let Some(w) = self.words.get(self.len / 8) {
                w.store(self.word, Ordering::Relaxed);
            }
        }
        u32::try_from(self.len).unwrap_or(u32::MAX)
    }
}

impl core::fmt::Write for TextWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for &byte in s.as_bytes() {
            if self.len >= DBG_TEXT_BYTES {
                break;
            }
            let at = self.len % 8;
            let mut bytes = self.word.to_le_bytes();
            if let Some(b) = bytes.get_mut(at) {
                *b = byte;
            }
            self.word = u64::from_le_bytes(bytes);
            if at == 7 {
                if let Some(w) = self.words.get(self.len / 8) {
                    w.store(self.word, Ordering::Relaxed);
                }
                self.word = 0;
            }
            self.len = self.len.saturating_add(1);
        }
        Ok(())
    }
}

/// The faults armed per node, each consumed once ([`Arms::take`]).
#[derive(Debug, Default)]
pub struct Arms {
    /// Per node, a bit per [`Fault`].
    bits: [AtomicU32; rvgpu_hw::regs::ENGINE_MAX as usize],
}

/// A fault the hooks can arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// `TestHookOp::FailNextReset`.
    FailReset = 1,
    /// `TestHookOp::HangNextPaging`.
    HangPaging = 2,
    /// `TestHookOp::CompleteBeforeReset`.
    CompleteBeforeReset = 4,
}

impl Arms {
    /// Arms `f` on `node` (a node past the table arms nothing).
    pub fn arm(&self, node: u32, f: Fault) {
        if let Some(b) = self.bits.get(node as usize) {
            b.fetch_or(f as u32, Ordering::Relaxed);
        }
    }

    /// Whether `f` is armed on `node`, without consuming it.
    pub fn armed(&self, node: u32, f: Fault) -> bool {
        self.bits
            .get(node as usize)
            .is_some_and(|b| b.load(Ordering::Relaxed) & f as u32 != 0)
    }

    /// Consumes `f` on `node`: true exactly once per arming.
    pub fn take(&self, node: u32, f: Fault) -> bool {
        self.bits
            .get(node as usize)
            .is_some_and(|b| b.fetch_and(!(f as u32), Ordering::Relaxed) & f as u32 != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmem::Host;
    use core::fmt::Write;
    use rvgpu_hw::testhooks::JournalKind;

    fn rec(a: u64) -> JournalRecord {
        JournalRecord {
            kind: JournalKind::Submit as u16,
            node: 3,
            a,
            b: !a,
            status: -5,
            flags: 2,
            ..JournalRecord::default()
        }
    }

    #[test]
    fn records_read_back_whole_and_overwritten_ones_are_gone() {
        let j = Journal::try_new::<Host>().unwrap();
        assert_eq!(j.next_seq(), 1);
        assert_eq!(j.read(1), Read::Gone);
        for i in 0..(JOURNAL_RECORDS as u64 + 3) {
            assert_eq!(j.write(&rec(i)), i + 1);
        }
        assert_eq!(j.read(1), Read::Gone, "overwritten by record 257");
        assert_eq!(j.read(3), Read::Gone);
        let Read::Record(r) = j.read(4) else {
            panic!("record 4")
        };
        assert_eq!(
            (r.seq, r.kind, r.node, r.a, r.b, r.status, r.flags),
            (4, 1, 3, 3, !3, -5, 2)
        );
        assert!(matches!(
            j.read(JOURNAL_RECORDS as u64 + 3),
            Read::Record(_)
        ));
        assert_eq!(
            j.read(JOURNAL_RECORDS as u64 + 4),
            Read::Gone,
            "not written"
        );
    }

    #[test]
    fn an_older_record_never_overwrites_a_newer_one() {
        let j = Journal::try_new::<Host>().unwrap();
        // Record 257 claimed slot 0 first; record 1 (late) must drop itself.
        j.next.store(JOURNAL_RECORDS as u64, Ordering::Relaxed);
        j.write(&rec(7));
        j.next.store(0, Ordering::Relaxed);
        j.write(&rec(8));
        assert_eq!(j.read(1), Read::Gone);
        assert!(matches!(j.read(JOURNAL_RECORDS as u64 + 1), Read::Record(r) if r.a == 7));
    }

    #[test]
    fn dbg_text_keeps_1_kib_and_reads_back() {
        let t = DbgText::try_new::<Host>().unwrap();
        assert_eq!(t.read(&mut [0; 8]), Some((0, 0)));
        let text = |w: &mut TextWriter<'_>| {
            let _ = write!(w, "rvgpu reason=0x141");
        };
        assert_eq!(t.capture(text, |n| u64::from(n) / 2), Some(18));
        let mut out = [0u8; 64];
        assert_eq!(t.read(&mut out), Some((18, 9)));
        assert_eq!(&out[..18], b"rvgpu reason=0x141");
        let mut short = [0u8; 5];
        assert_eq!(t.read(&mut short), Some((5, 9)));
        let long = "x".repeat(3000);
        let text = |w: &mut TextWriter<'_>| {
            let _ = w.write_str(&long);
        };
        assert_eq!(t.capture(text, |_| 10), Some(1024));
    }

    #[test]
    fn arms_fire_once() {
        let a = Arms::default();
        assert!(!a.take(1, Fault::FailReset));
        a.arm(1, Fault::FailReset);
        a.arm(1, Fault::HangPaging);
        a.arm(99, Fault::HangPaging);
        assert!(a.armed(1, Fault::FailReset));
        assert!(a.take(1, Fault::FailReset));
        assert!(!a.take(1, Fault::FailReset));
        assert!(a.take(1, Fault::HangPaging));
        assert!(!a.take(0, Fault::HangPaging));
    }
}
