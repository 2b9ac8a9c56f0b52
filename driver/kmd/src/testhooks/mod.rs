//! The KMD's test hooks ([`rvgpu_hw::testhooks`], docs/tdr.md#test-hooks): a journal of what
//! the KMD saw of timeout detection and recovery, and faults armed in its own recovery path,
//! both reached through a driver-private `D3DKMTEscape` ([`escape`]). They let a test program
//! on Windows, where no thunk gives VidSch's fence IDs, check the OS's recovery steps.
//!
//! **The gate.** The hooks exist only when the adapter's software key holds the `REG_DWORD`
//! [`TEST_HOOKS_VALUE`] = 1 when the adapter starts ([`Hooks::at_start`]); the journal is
//! allocated then. Otherwise the started adapter's `hooks` are `None`: a record point
//! ([`note`]) costs one load and a branch, and the escape answers a test-hook request as any
//! unknown one (`STATUS_INVALID_PARAMETER`, nothing written).
//!
//! The state ([`journal`]) is atomics only: records are written at PASSIVE, at DISPATCH and by
//! the ISR without any lock. The module sits below the adapter: its record points take the
//! adapter's `hooks`, never the adapter.

pub mod journal;

use core::ffi::c_void;

use rvgpu_hw::pdd::PDD_MAGIC;
use rvgpu_hw::testhooks::{
    JournalKind, JournalRecord, TestHookEscape, TestHookOp, TEST_HOOKS_VALUE,
    TEST_HOOK_ESCAPE_VERSION,
};
use zerocopy::{FromBytes, IntoBytes};

use crate::klog;
use crate::platform::Platform;
use crate::status::{self, Status};

pub use journal::Fault;
use journal::{Arms, DbgText, Journal, Read};

/// The hooks of a started adapter whose software key turned them on.
#[derive(Debug)]
pub struct Hooks {
    pub journal: Journal,
    pub arms: Arms,
    pub dbg: DbgText,
}

impl Hooks {
    /// StartDevice (PASSIVE): the hooks if the software key of `pdo` holds
    /// [`TEST_HOOKS_VALUE`] = 1 (any other value, or none, is off). Without memory for the
    /// journal the adapter starts without them (logged).
    pub fn at_start<P: Platform>(pdo: *mut c_void) -> Option<Self> {
        if P::software_key_dword(pdo, TEST_HOOKS_VALUE) != Some(1) {
            return None;
        }
        let hooks = Journal::try_new::<P>().and_then(|journal| {
            Ok(Self {
                journal,
                arms: Arms::default(),
                dbg: DbgText::try_new::<P>()?,
            })
        });
        match hooks {
            Ok(h) => {
                klog!(
                    P,
                    Warning,
                    "rvgpu: test hooks on (software key TestHooks = 1)"
                );
                Some(h)
            }
            Err(_) => {
                klog!(
                    P,
                    Error,
                    "rvgpu: no memory for the test hooks: they stay off"
                );
                None
            }
        }
    }

    /// Consumes fault `f` armed on `node` and journals that it fired: true exactly once per
    /// arming.
    pub fn fire(&self, node: u32, f: Fault) -> bool {
        if !self.arms.take(node, f) {
            return false;
        }
        let op = match f {
            Fault::FailReset => TestHookOp::FailNextReset,
            Fault::HangPaging => TestHookOp::HangNextPaging,
            Fault::CompleteBeforeReset => TestHookOp::CompleteBeforeReset,
        };
        self.journal
            .write(&rec(JournalKind::FaultFired, node, op as u64, 0));
        true
    }
}

/// A record of `kind` on `node` with `a` and `b` (status and flags 0).
pub fn rec(kind: JournalKind, node: u32, a: u64, b: u64) -> JournalRecord {
    JournalRecord {
        kind: kind as u16,
        node: u16::try_from(node).unwrap_or(u16::MAX),
        a,
        b,
        ..JournalRecord::default()
    }
}

/// A record point: journals what `make` gives if the hooks are on (then only is it called).
/// Returns the record's sequence number.
#[inline(always)]
pub fn note(hooks: &Option<Hooks>, make: impl FnOnce() -> JournalRecord) -> Option<u64> {
    hooks.as_ref().map(|h| h.journal.write(&make()))
}

/// A record point for a DDI's result: `make` with the status `r` carried.
#[inline(always)]
pub fn note_result<T>(
    hooks: &Option<Hooks>,
    r: &Result<T, Status>,
    make: impl FnOnce() -> JournalRecord,
) {
    note(hooks, || JournalRecord {
        status: r.as_ref().err().map_or(status::SUCCESS, |e| e.code()),
        ..make()
    });
}

/// The fault `f` armed on `node`, fired (consumed and journaled) when it is: always false with
/// the hooks off.
#[inline(always)]
pub fn fire(hooks: &Option<Hooks>, node: u32, f: Fault) -> bool {
    hooks.as_ref().is_some_and(|h| h.fire(node, f))
}

/// Whether `data` is a test-hook request ([`TestHookEscape`]'s magic and version at its
/// start), to be answered by [`escape`].
pub fn is_request(data: &[u8]) -> bool {
    TestHookEscape::read_from_prefix(data)
        .is_ok_and(|(h, _)| h.magic == PDD_MAGIC && h.version == TEST_HOOK_ESCAPE_VERSION)
}

/// Answers the test-hook request in `data` (PASSIVE; [`is_request`] was true) with the started
/// adapter's `hooks` (`None`: not started or off) and its `engines`. Hooks off, an unknown op,
/// a node past the adapter's, a nonzero reserved field or a buffer of the wrong size is
/// `STATUS_INVALID_PARAMETER` with nothing written:
/// - `Journal`: the header then room for whole records (any number, 0 included);
/// - `LastDbgInfo`: the header then room for text (any number of bytes);
/// - the three arming ops: the header alone.
pub fn escape(hooks: Option<&Hooks>, engines: u32, data: &mut [u8]) -> Result<(), Status> {
    let bad = status::INVALID_PARAMETER;
    let h = hooks.ok_or(bad)?;
    let (mut q, _) = TestHookEscape::read_from_prefix(data).map_err(|_| bad)?;
    if q.reserved != 0 {
        return Err(bad);
    }
    let (head, tail) = data
        .split_at_mut_checked(size_of::<TestHookEscape>())
        .ok_or(bad)?;
    match TestHookOp::from_u32(q.op).ok_or(bad)? {
        TestHookOp::Journal => {
            if !tail.len().is_multiple_of(size_of::<JournalRecord>()) {
                return Err(bad);
            }
            let (count, next) = copy_journal(&h.journal, q.seq, tail);
            q.count = count;
            q.seq = next;
        }
        TestHookOp::LastDbgInfo => {
            // A report being kept at this very moment: nothing reliable to copy yet.
            let (bytes, seq) = h.dbg.read(tail).ok_or(status::DEVICE_BUSY)?;
            q.count = bytes;
            q.seq = seq;
        }
        // Answered before this, by the escape entry point, which has the queues.
        TestHookOp::QueueLog | TestHookOp::DriverCaps => return Err(bad),
        op => {
            if !tail.is_empty() || q.node >= engines {
                return Err(bad);
            }
            let f = match op {
                TestHookOp::FailNextReset => Fault::FailReset,
                TestHookOp::HangNextPaging => Fault::HangPaging,
                _ => Fault::CompleteBeforeReset,
            };
            h.arms.arm(q.node, f);
        }
    }
    head.copy_from_slice(q.as_bytes());
    Ok(())
}

/// Copies the records from sequence number `from` into `out` (whole records, as many as fit):
/// `(records copied, the sequence number to ask for next)`. A record dropped or overwritten is
/// skipped (its number is missing); the copy stops before a record being written at this
/// moment, so that the next request gets it.
fn copy_journal(j: &Journal, from: u64, out: &mut [u8]) -> (u32, u64) {
    let next = j.next_seq();
    let oldest = next.saturating_sub(rvgpu_hw::testhooks::JOURNAL_RECORDS as u64);
    let mut slots = out.chunks_exact_mut(size_of::<JournalRecord>());
    let mut count = 0u32;
    let mut n = from.max(oldest).max(1);
    while n < next {
        match j.read(n) {
            Read::Busy => return (count, n),
            Read::Gone => {}
            Read::Record(r) => {
                let Some(slot) = slots.next() else {
                    return (count, n);
                };
                slot.copy_from_slice(r.as_bytes());
                count = count.saturating_add(1);
            }
        }
        n = n.saturating_add(1);
    }
    (count, next)
}
