//! The KMD's test hooks (`driver/kmd/src/testhooks`, docs/tdr.md#test-hooks) through the
//! simulated OS: a driver-private `D3DKMTEscape` that reads the KMD's journal of what it saw of
//! timeout detection and recovery and arms faults in its recovery path, answered only when the
//! adapter's software key holds `TestHooks` = 1. The journal's order and fence IDs are checked
//! against what the simulated VidSch did (TDR-05), and each fault against the recovery it must
//! cause (TDR-07, TDR-08, TDR-09); every malformed request is refused with nothing written.

mod common;

use common::tdr::*;
use common::*;

use rvgpu_hw::cmd::Command;
use rvgpu_hw::testhooks::{
    JournalKind, JournalRecord, TestHookEscape, TestHookOp, JOURNAL_PAGING, JOURNAL_RECORDS,
    TEST_HOOKS_VALUE,
};
use rvgpu_simos::adapter::registry::RegValue;
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::{Machine, Mode, TdrEvent, TdrReason};
use rvgpu_umd::kmt::{AllocationCpu, Kmt, NtStatus};
use std::time::Duration;
use zerocopy::{FromBytes, IntoBytes};

const STATUS_INVALID_PARAMETER: NtStatus = NtStatus(0xC000_000D_u32 as i32);
const STATUS_DEVICE_HARDWARE_ERROR: i32 = 0xC000_0483_u32 as i32;
const HEADER: usize = size_of::<TestHookEscape>();
const RECORD: usize = size_of::<JournalRecord>();

/// A software-scheduled step-mode machine with TDR on whose software key holds `TestHooks`
/// (`None`: absent).
fn hooks_machine(value: Option<u32>) -> Machine {
    sw_tdr_machine(Mode::Step, |a| {
        if let Some(v) = value {
            a.software_key.set("", TEST_HOOKS_VALUE, RegValue::dword(v));
        }
    })
}

/// `q` followed by `tail` zero bytes, sent; the caller's whole buffer back, or the status.
fn send(k: &SimKmt<'_>, q: TestHookEscape, tail: usize) -> Result<Vec<u8>, NtStatus> {
    let mut buf = q.as_bytes().to_vec();
    buf.resize(HEADER + tail, 0);
    k.escape_driver_private(&mut buf).map(|()| buf)
}

/// The header a successful request came back with.
fn header(buf: &[u8]) -> TestHookEscape {
    TestHookEscape::read_from_prefix(buf).unwrap().0
}

/// Journal records from `seq` with room for `room`: (the header back, the records).
fn journal_from(k: &SimKmt<'_>, seq: u64, room: usize) -> (TestHookEscape, Vec<JournalRecord>) {
    let q = TestHookEscape::new(TestHookOp::Journal, 0, seq);
    let buf = send(k, q, room * RECORD).expect("journal request");
    let h = header(&buf);
    let records = buf[HEADER..]
        .chunks_exact(RECORD)
        .take(h.count as usize)
        .map(|c| JournalRecord::read_from_bytes(c).unwrap())
        .collect();
    (h, records)
}

/// Every record the journal holds.
fn journal(k: &SimKmt<'_>) -> Vec<JournalRecord> {
    journal_from(k, 0, JOURNAL_RECORDS).1
}

/// Arms `op` on `node`.
fn arm(k: &SimKmt<'_>, op: TestHookOp, node: u32) {
    send(k, TestHookEscape::new(op, node, 0), 0).expect("arming request");
}

fn is(r: &JournalRecord, kind: JournalKind) -> bool {
    r.kind == kind as u16
}

/// The index of the first record after `from` that `p` accepts.
fn find(j: &[JournalRecord], from: usize, p: impl Fn(&JournalRecord) -> bool) -> usize {
    j.iter()
        .skip(from)
        .position(p)
        .map(|i| i + from)
        .unwrap_or_else(|| panic!("record missing after {from}: {j:#?}"))
}

// ---------------------------------------------------------------------------------------------
// The gate.

/// TDR-05: without `TestHooks` = 1 in the software key (absent, or any other value) a
/// test-hook request is refused as any unknown escape, and the caller's buffer is untouched.
#[test]
fn tdr_05_test_hooks_are_off_unless_the_software_key_says_1() {
    for value in [None, Some(0), Some(2)] {
        let m = hooks_machine(value);
        let (_p, k) = user_process(&m);
        for (op, tail) in [
            (TestHookOp::Journal, 4 * RECORD),
            (TestHookOp::FailNextReset, 0),
            (TestHookOp::LastDbgInfo, 64),
        ] {
            let q = TestHookEscape::new(op, 0, 0);
            let mut buf = q.as_bytes().to_vec();
            buf.resize(HEADER + tail, 0xA5);
            let before = buf.clone();
            assert_eq!(
                k.escape_driver_private(&mut buf),
                Err(STATUS_INVALID_PARAMETER),
                "{value:?} {op:?}"
            );
            assert_eq!(buf, before);
        }
        no_fault(&m);
    }
}

// ---------------------------------------------------------------------------------------------
// The journal of a hung DMA buffer.

/// TDR-05: a hung DMA buffer's journal, read by another process: its submission with its
/// fence ID, the preemption request, the debug report (0x141), the dependent group, the engine
/// status and `DxgkDdiResetEngine` with `LastAbortedFenceId` = the hung buffer's fence ID, in
/// the order docs/tdr.md gives and VidSch followed (a node-ring buffer's device is put in
/// error by the OS: no `DxgkCbInvalidateHwContext`); the sequence numbers run from 1 without
/// a gap; LastDbgInfo holds the report's text.
#[test]
fn tdr_05_journal_shows_the_recovery_steps_and_the_hung_fence_id() {
    let m = hooks_machine(Some(1));
    let (_o, ko) = user_process(&m);
    let (p, k, ctx) = process_with_context(&m);
    let t = okk(&m, k.create_allocation(4096));
    let f1 = ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 7)]));
    run_until(&m, "first fill", |m| all_done(m, 0));
    let hang = ok(&m, m.submit_legacy(&p, ctx, &[Command::Hang]));
    run_until(&m, "engine reset", |m| resets(m) == 1);
    let j = journal(&ko);
    for (i, r) in j.iter().enumerate() {
        assert_eq!(r.seq as usize, i + 1, "{j:#?}");
    }
    let done = find(&j, 0, |r| {
        is(r, JournalKind::DmaCompleted) && r.a == u64::from(f1)
    });
    let submit = find(&j, 0, |r| {
        is(r, JournalKind::Submit) && r.a == u64::from(hang) && r.node == 0
    });
    assert_ne!(j[submit].b, 0, "the DMA buffer's address");
    assert_eq!(j[submit].flags & JOURNAL_PAGING, 0);
    let preempt = find(&j, submit, |r| is(r, JournalKind::PreemptCommand));
    let collect = find(&j, preempt, |r| {
        is(r, JournalKind::CollectDbgInfo) && r.a == 0x141
    });
    let group = find(&j, collect, |r| {
        is(r, JournalKind::DependentEngineGroup) && r.a == 1
    });
    let status = find(&j, group, |r| is(r, JournalKind::EngineStatus));
    let reset = find(&j, status, |r| is(r, JournalKind::ResetEngine));
    assert_eq!(
        (j[reset].status, j[reset].a),
        (0, u64::from(hang)),
        "{:?}",
        j[reset]
    );
    assert!(done < submit);
    assert!(
        !j.iter().any(|r| is(r, JournalKind::DmaPreempted)),
        "a hung ring never drains: {j:#?}"
    );
    assert!(
        !j.iter().any(|r| is(r, JournalKind::InvalidateHwContext)),
        "{j:#?}"
    );
    // The OS saw the same: its ResetEngine returned the same fence ID.
    assert!(m.tdr_events(0).iter().any(
        |e| matches!(e, TdrEvent::ResetEngine { node: 0, status: 0, last_aborted } if *last_aborted == hang)
    ));
    // The debug report's text, and the journal record of its call.
    let buf = send(
        &ko,
        TestHookEscape::new(TestHookOp::LastDbgInfo, 0, 0),
        4096,
    )
    .unwrap();
    let h = header(&buf);
    let text = String::from_utf8_lossy(&buf[HEADER..HEADER + h.count as usize]).into_owned();
    assert!(text.starts_with("rvgpu reason=0x141"), "{text}");
    assert_eq!(h.seq, u64::from(j[collect].seq));
    assert_eq!(j[collect].b, u64::from(h.count));
    no_fault(&m);
}

// ---------------------------------------------------------------------------------------------
// Faults.

/// TDR-09: FailNextReset on node 0: the next ResetEngine fails as a failed device reset does
/// (STATUS_DEVICE_HARDWARE_ERROR), so the OS takes the adapter-wide path (reason 9); the
/// fault fires once, and the journal shows it before the failed reset and the adapter reset
/// and restart after. (The device's own reset would have succeeded.)
#[test]
fn tdr_09_fail_next_reset_hook_promotes_to_an_adapter_reset() {
    let m = hooks_machine(Some(1));
    let (_o, ko) = user_process(&m);
    let (p, _k, ctx) = process_with_context(&m);
    arm(&ko, TestHookOp::FailNextReset, 0);
    let hang = ok(&m, m.submit_legacy(&p, ctx, &[Command::Hang]));
    run_until(&m, "adapter reset", |m| adapter_resets(m) == 1);
    assert_eq!(resets(&m), 0, "no engine reset succeeded");
    assert_eq!(
        m.tdr_reason(0),
        Some(TdrReason::EngineTimeoutPromotedToAdapterReset)
    );
    assert!(device_error(&m.tdr_events(0), &p));
    assert_eq!(m.legacy_fences(0, 0), (hang, hang), "TDR-04: C = S");
    // The adapter-wide recovery reset every device (24H2's `K:ADAPTER_RENDER::Reset`
    // @0x1403F2C34): the journal is read through a device made after it.
    let (_r, ko) = user_process(&m);
    let j = journal(&ko);
    let fired = find(&j, 0, |r| {
        is(r, JournalKind::FaultFired) && r.a == TestHookOp::FailNextReset as u64
    });
    let failed = find(&j, fired, |r| is(r, JournalKind::ResetEngine));
    assert_eq!(j[failed].status, STATUS_DEVICE_HARDWARE_ERROR);
    let reset = find(&j, failed, |r| is(r, JournalKind::ResetFromTimeout));
    let restart = find(&j, reset, |r| is(r, JournalKind::RestartFromTimeout));
    assert_eq!((j[reset].status, j[restart].status), (0, 0));
    assert_eq!(
        j.iter().filter(|r| is(r, JournalKind::FaultFired)).count(),
        1
    );
    // Consumed: the next hang is an engine reset again.
    let (q, _kq, cq) = process_with_context(&m);
    let next = ok(&m, m.submit_legacy(&q, cq, &[Command::Hang]));
    run_until(&m, "engine reset", |m| resets(m) == 1);
    assert_eq!(adapter_resets(&m), 1);
    let j = journal(&ko);
    let ok_reset = j
        .iter()
        .rev()
        .find(|r| is(r, JournalKind::ResetEngine))
        .unwrap();
    assert_eq!((ok_reset.status, ok_reset.a), (0, u64::from(next)));
    no_fault(&m);
}

/// TDR-08: HangNextPaging on node 0: the next paging buffer the KMD builds ends in a HANG, so
/// its timeout aborts a paging buffer and the OS takes the adapter-wide path (reason 9); the
/// journal shows the fault and the paging submission.
#[test]
fn tdr_08_hang_next_paging_hook_promotes_to_an_adapter_reset() {
    let m = hooks_machine(Some(1));
    let (_o, ko) = user_process(&m);
    let (owner, _k, _ctx) = process_with_context(&m);
    let big = okk(&m, m.kmt(&owner).create_allocation(64 << 10));
    let before = journal(&ko).len();
    arm(&ko, TestHookOp::HangNextPaging, 0);
    let ids = ok(
        &m,
        m.page_in(
            &owner,
            0,
            rvgpu_hw::addr::GpuVa::new(big.gpu_va),
            64 << 10,
            0x5A,
        ),
    );
    assert!(!ids.is_empty());
    run_until(&m, "adapter reset", |m| adapter_resets(m) == 1);
    let ev = m.tdr_events(0);
    assert!(
        ev.iter().any(|e| matches!(
            e,
            TdrEvent::Aborted {
                node: 0,
                paging: true,
                ..
            }
        )),
        "{ev:#?}"
    );
    assert_eq!(
        m.tdr_reason(0),
        Some(TdrReason::EngineTimeoutPromotedToAdapterReset)
    );
    // The adapter-wide recovery reset every device (24H2's `K:ADAPTER_RENDER::Reset`
    // @0x1403F2C34): the old one answers STATUS_DEVICE_REMOVED, and the journal is read
    // through a device made after it.
    let q = TestHookEscape::new(TestHookOp::Journal, 0, 0);
    assert_eq!(
        send(&ko, q, RECORD).err(),
        Some(NtStatus(rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED))
    );
    let (_r, ko) = user_process(&m);
    let j = journal(&ko);
    let fired = find(&j, before, |r| {
        is(r, JournalKind::FaultFired) && r.a == TestHookOp::HangNextPaging as u64
    });
    let paging = find(&j, fired, |r| {
        is(r, JournalKind::Submit) && r.flags & JOURNAL_PAGING != 0
    });
    assert_eq!(
        j[paging].b, 0,
        "a paging buffer has no GPU VA in the record"
    );
    find(&j, paging, |r| {
        is(r, JournalKind::ResetFromTimeout) && r.status == 0
    });
    no_fault(&m);
}

/// TDR-07: CompleteBeforeReset on node 0 (threaded: the device runs while the KMD waits): the
/// DMA buffer is stuck on a memory wait, so the OS times it out; the KMD's next engine reset
/// first waits for the node ring (journaling the fault), re-evaluating blocked waits as it
/// does; the test then writes the waited word with the CPU alone, and the buffer completes
/// between the OS's snapshot and the reset. ResetEngine finds
/// nothing in flight and returns LastAbortedFenceId = S; the OS ignores the completion, still
/// errors the device, and the journal shows the KMD reporting `DmaCompleted(S)` after the
/// fault fired and before its reset. (Without the fault the wait is aborted: the hung ID.)
#[test]
fn tdr_07_complete_before_reset_hook_lets_the_buffer_finish_so_last_aborted_is_s() {
    let m = machine_with(Mode::Threaded, |a| {
        a.hwsch_feature = false;
        a.software_key.set("", TEST_HOOKS_VALUE, RegValue::dword(1));
    });
    let (_o, ko) = user_process(&m);
    let (p, k, ctx) = process_with_context(&m);
    let t = okk(&m, k.create_allocation(4096));
    ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 1)]));
    run_until(&m, "warm-up", |m| all_done(m, 0));
    enable_tdr_after(&m, Duration::from_millis(100), Duration::from_millis(5));
    arm(&ko, TestHookOp::CompleteBeforeReset, 0);
    let gate = t.gpu_va + 512;
    let id = ok(
        &m,
        m.submit_legacy(
            &p,
            ctx,
            &[
                Command::FenceWait {
                    addr: gate,
                    value: 1,
                },
                fill(&t, 0, 0x77),
            ],
        ),
    );
    let fired = |j: &[JournalRecord]| {
        j.iter().any(|r| {
            is(r, JournalKind::FaultFired) && r.a == TestHookOp::CompleteBeforeReset as u64
        })
    };
    run_until(&m, "the fault fired", |_| fired(&journal(&ko)));
    // Satisfy the wait with a CPU write alone, as a program can: the device re-evaluates a
    // blocked wait only when told (hardware.md 5.4), and the armed reset tells it.
    t.mem.store(512, 1);
    run_until(&m, "reset", |m| resets(m) == 1);
    let ev = m.tdr_events(0);
    assert!(
        ev.iter().any(|e| matches!(e, TdrEvent::ResetEngine { node: 0, status: 0, last_aborted } if *last_aborted == id)),
        "{ev:#?}"
    );
    assert!(device_error(&ev, &p));
    assert_eq!(t.mem.load(0), 0x77, "the buffer did complete");
    assert_eq!(m.legacy_fences(0, 0), (id, id));
    let j = journal(&ko);
    let at = find(&j, 0, |r| {
        is(r, JournalKind::FaultFired) && r.a == TestHookOp::CompleteBeforeReset as u64
    });
    let done = find(&j, at, |r| {
        is(r, JournalKind::DmaCompleted) && r.a == u64::from(id)
    });
    let reset = find(&j, done, |r| is(r, JournalKind::ResetEngine));
    assert_eq!((j[reset].status, j[reset].a), (0, u64::from(id)));
    no_fault(&m);
}

// ---------------------------------------------------------------------------------------------
// Malformed requests.

/// TDR-05: every malformed request is STATUS_INVALID_PARAMETER with the caller's buffer
/// untouched: shorter than the header, a journal tail that is not whole records, an arming
/// request with a tail, a bad magic, version, op, reserved field, or a node past the adapter's.
#[test]
fn tdr_05_malformed_test_hook_requests_are_refused_with_nothing_written() {
    let m = hooks_machine(Some(1));
    let (_p, k) = user_process(&m);
    let good = TestHookEscape::new(TestHookOp::Journal, 0, 0);
    let with = |f: &dyn Fn(&mut TestHookEscape)| {
        let mut q = good;
        f(&mut q);
        q
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good.as_bytes()[..HEADER - 1].to_vec()),
        (
            "not whole records",
            [good.as_bytes(), &[0; RECORD - 1]].concat(),
        ),
        (
            "half a record past one",
            [good.as_bytes(), &[0; RECORD + 8]].concat(),
        ),
        (
            "arming with a tail",
            [
                TestHookEscape::new(TestHookOp::FailNextReset, 0, 0).as_bytes(),
                &[0; RECORD],
            ]
            .concat(),
        ),
        ("magic", with(&|q| q.magic ^= 1).as_bytes().to_vec()),
        ("version", with(&|q| q.version += 1).as_bytes().to_vec()),
        ("op 0", with(&|q| q.op = 0).as_bytes().to_vec()),
        ("op 6", with(&|q| q.op = 6).as_bytes().to_vec()),
        ("op max", with(&|q| q.op = u32::MAX).as_bytes().to_vec()),
        ("reserved", with(&|q| q.reserved = 1).as_bytes().to_vec()),
        (
            "node past the adapter's",
            TestHookEscape::new(TestHookOp::HangNextPaging, 2, 0)
                .as_bytes()
                .to_vec(),
        ),
        (
            "node max",
            TestHookEscape::new(TestHookOp::CompleteBeforeReset, u32::MAX, 0)
                .as_bytes()
                .to_vec(),
        ),
    ];
    for (what, bytes) in cases {
        let mut buf = bytes.clone();
        assert_eq!(
            k.escape_driver_private(&mut buf),
            Err(STATUS_INVALID_PARAMETER),
            "{what}"
        );
        assert_eq!(buf, bytes, "{what}");
    }
    // An oversized but well-formed journal request is answered.
    let (h, _) = journal_from(&k, 0, 4 * JOURNAL_RECORDS);
    assert!(h.count as usize <= JOURNAL_RECORDS);
    no_fault(&m);
}

/// TDR-05: reading the journal in pieces: from 0 (the oldest record held), with room for two
/// records (the next request continues where it stopped), with no room (the sequence number
/// of the oldest record, nothing copied), and from past the end (nothing, and the number the
/// next record will get).
#[test]
fn tdr_05_the_journal_reads_in_pieces_from_any_sequence_number() {
    let m = hooks_machine(Some(1));
    let (_o, ko) = user_process(&m);
    let (p, k, ctx) = process_with_context(&m);
    let t = okk(&m, k.create_allocation(4096));
    for v in 0..3 {
        ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, v)]));
        run_until(&m, "fill", |m| all_done(m, 0));
    }
    let all = journal(&ko);
    assert!(all.len() >= 6, "{all:#?}");
    assert_eq!(all[0].seq, 1);
    let next = u64::from(all.last().unwrap().seq) + 1;
    let (h, two) = journal_from(&ko, 0, 2);
    assert_eq!((h.count, h.seq), (2, 3));
    assert_eq!(two, all[..2]);
    let (h, more) = journal_from(&ko, h.seq, 2);
    assert_eq!((h.count, h.seq), (2, 5));
    assert_eq!(more, all[2..4]);
    let (h, none) = journal_from(&ko, 0, 0);
    assert_eq!((h.count, h.seq, none.len()), (0, 1, 0));
    let (h, none) = journal_from(&ko, next + 1000, 8);
    assert_eq!((h.count, h.seq, none.len()), (0, next, 0));
    no_fault(&m);
}

against_the_pe_image!();
