//! The test hooks' copy of a queue's native fence log (`TestHookOp::QueueLog`,
//! `driver/kmd/src/log/ddi.rs`): the log as the device wrote it, header then entries, through a
//! driver-private `D3DKMTEscape`, which is how a test program on Windows sees a log (the OS's
//! drain is not visible to it); and the KMD's report of its caps (`TestHookOp::DriverCaps`),
//! which no thunk passes on. The escape is a door into the KMD for any process once a tester
//! turned the hooks on, so every request here is a hostile caller's too: another process's
//! queue, made-up ids and log types, sizes that do not fit, a queue already destroyed. Each is
//! refused with STATUS_INVALID_PARAMETER and the caller's buffer untouched, or answered with
//! no byte written past what the answer counts.

mod common;

use common::fences::fence;
use common::*;

use rvgpu_ddi::adapter::DXGK_VIDSCHCAPS;
use rvgpu_ddi::submission::DXGK_NODEMETADATA_FLAGS;
use rvgpu_hw::log::{
    unpack_index, LogEntry, LogHeader, ENTRIES_OFFSET, LOG_TYPE_SIGNALS, LOG_TYPE_WAITS,
    OP_SIGNAL_EXECUTED,
};
use rvgpu_hw::testhooks::{
    KmdCapsReport, TestHookEscape, TestHookOp, CAPS_MULTI_ENGINE_AWARE, CAPS_NATIVE_GPU_FENCE,
    CAPS_NO_64BIT_ATOMICS, CAPS_PER_ENGINE_TDR, TEST_HOOKS_VALUE,
};
use rvgpu_simos::adapter::registry::RegValue;
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::{Machine, Mode};
use rvgpu_umd::fencelog::Op;
use rvgpu_umd::kmt::NtStatus;
use rvgpu_umd::submit::{KernelQueue, UserQueue};
use zerocopy::{FromBytes, IntoBytes};

const STATUS_INVALID_PARAMETER: NtStatus = NtStatus(0xC000_000D_u32 as i32);
const HEADER: usize = size_of::<TestHookEscape>();
/// What the caller's buffer is filled with before the call: a byte the KMD never writes
/// unless it copies it.
const FILL: u8 = 0xA5;

/// A step-mode machine whose software key holds `TestHooks` = `hooks` (`None`: absent).
fn machine(hooks: Option<u32>) -> Machine {
    machine_with(Mode::Step, |a| {
        if let Some(v) = hooks {
            a.software_key.set("", TEST_HOOKS_VALUE, RegValue::dword(v));
        }
    })
}

/// A request for queue `id`'s log of `log_type` with `tail` bytes of room.
fn request(id: u32, log_type: u64, tail: usize) -> Vec<u8> {
    let q = TestHookEscape::new(TestHookOp::QueueLog, id, log_type);
    let mut buf = q.as_bytes().to_vec();
    buf.resize(HEADER + tail, FILL);
    buf
}

/// Sends `buf`; the buffer back, or the status with the buffer checked untouched.
fn send(k: &SimKmt<'_>, mut buf: Vec<u8>) -> Result<Vec<u8>, NtStatus> {
    let before = buf.clone();
    match k.escape_driver_private(&mut buf) {
        Ok(()) => Ok(buf),
        Err(s) => {
            assert_eq!(
                buf, before,
                "a refused request wrote to the caller's buffer"
            );
            Err(s)
        }
    }
}

/// The answer's header.
fn answer(buf: &[u8]) -> TestHookEscape {
    TestHookEscape::read_from_prefix(buf).unwrap().0
}

/// A process with a user-mode queue on node 0 that signalled a native fence of its own to
/// `value` (run to completion): (the queue, the fence's D3DKMT handle).
fn signalled<'m>(
    m: &'m Machine,
    k: SimKmt<'m>,
    value: u64,
) -> (UserQueue<SimKmt<'m>>, rvgpu_umd::kmt::KmtHandle) {
    let mut q = okk(m, UserQueue::new(k, &config(0)));
    let (f, _) = fence(m, &k);
    okk(m, q.submit_ops(&[Op::Signal(&f, value)]));
    okk(m, m.run_until_idle());
    (q, f.kmt)
}

/// LOG-01, LOG-03: the queue's process reads its signal log as the device wrote it (the
/// header the OS initialised, its index past the one entry, the entry naming the fence by this
/// process's handle with the value and SIGNAL_EXECUTED) and its empty wait log; a
/// kernel-mode queue of the process answers that it has no log.
#[test]
fn log_01_queue_log_escape_copies_the_log_the_device_wrote() {
    let m = machine(Some(1));
    let (p, k) = user_process(&m);
    let (q, h) = signalled(&m, k, 7);
    let buf = send(&k, request(q.queue_id(), u64::from(LOG_TYPE_SIGNALS), 4096)).unwrap();
    let a = answer(&buf);
    let entries = a.seq;
    assert!((1..=84).contains(&entries), "{a:?}");
    let bytes = ENTRIES_OFFSET + entries * 48;
    assert_eq!(u64::from(a.count), bytes, "{a:?}");
    assert!(buf[HEADER + bytes as usize..].iter().all(|b| *b == FILL));
    let log = &buf[HEADER..];
    let (hdr, rest) = LogHeader::read_from_prefix(log).unwrap();
    assert_eq!(
        (hdr.log_type, hdr.number_of_entries),
        (LOG_TYPE_SIGNALS, entries)
    );
    assert_eq!(unpack_index(hdr.atomic_wraparound_and_entry_index), (1, 0));
    let (e, _) = LogEntry::read_from_prefix(rest).unwrap();
    assert_eq!(
        (e.fence_value, e.operation_type, e.h_native_fence),
        (7, OP_SIGNAL_EXECUTED, h)
    );

    let buf = send(&k, request(q.queue_id(), u64::from(LOG_TYPE_WAITS), 4096)).unwrap();
    let (hdr, _) = LogHeader::read_from_prefix(&buf[HEADER..]).unwrap();
    assert_eq!(hdr.log_type, LOG_TYPE_WAITS);
    assert_eq!(unpack_index(hdr.atomic_wraparound_and_entry_index), (0, 0));

    let kq = okk(&m, KernelQueue::new(k, &config(0)));
    let buf = send(
        &k,
        request(kq.queue_id(), u64::from(LOG_TYPE_SIGNALS), 4096),
    )
    .unwrap();
    assert_eq!((answer(&buf).count, answer(&buf).seq), (0, 0));
    assert!(buf[HEADER..].iter().all(|b| *b == FILL));
    drop((kq, q));
    exits_clean(&m, &p);
    no_fault(&m);
}

/// LOG-03: a process sees only its own device's logs. Another process naming the queue's id
/// (which the ids' small range makes easy to guess) is refused as if no such queue existed,
/// and so is the owner once the queue is destroyed: the view goes with the log.
#[test]
fn log_03_queue_log_escape_answers_only_the_callers_device() {
    let m = machine(Some(1));
    let (_a, ka) = user_process(&m);
    let (_b, kb) = user_process(&m);
    let (q, _) = signalled(&m, ka, 3);
    let id = q.queue_id();
    for log_type in [LOG_TYPE_SIGNALS, LOG_TYPE_WAITS] {
        assert_eq!(
            send(&kb, request(id, u64::from(log_type), 4096)),
            Err(STATUS_INVALID_PARAMETER)
        );
    }
    // Every id the other process could try: none of them is its own.
    for guess in 0..64 {
        assert_eq!(
            send(&kb, request(guess, u64::from(LOG_TYPE_SIGNALS), 64)),
            Err(STATUS_INVALID_PARAMETER),
            "id {guess}"
        );
    }
    assert!(send(&ka, request(id, u64::from(LOG_TYPE_SIGNALS), 64)).is_ok());
    drop(q);
    okk(&m, m.run_until_idle());
    assert_eq!(
        send(&ka, request(id, u64::from(LOG_TYPE_SIGNALS), 4096)),
        Err(STATUS_INVALID_PARAMETER)
    );
    no_fault(&m);
}

/// LOG-01: hostile requests from the queue's own process. Hooks off (absent, 0, 2): refused.
/// A log type that is not WAITS or SIGNALS (in the low or the high half), a reserved field
/// set, an id past every queue: refused, nothing written. Room of any size, 0 and odd
/// included: exactly that many bytes, never one past them.
#[test]
fn log_01_queue_log_escape_refuses_hostile_requests() {
    for hooks in [None, Some(0), Some(2)] {
        let m = machine(hooks);
        let (_p, k) = user_process(&m);
        let (q, _) = signalled(&m, k, 1);
        assert_eq!(
            send(&k, request(q.queue_id(), u64::from(LOG_TYPE_SIGNALS), 4096)),
            Err(STATUS_INVALID_PARAMETER),
            "hooks {hooks:?}"
        );
        drop(q);
        no_fault(&m);
    }
    let m = machine(Some(1));
    let (_p, k) = user_process(&m);
    let (q, _) = signalled(&m, k, 1);
    let id = q.queue_id();
    for log_type in [0, 3, u64::MAX, (1 << 32) | u64::from(LOG_TYPE_SIGNALS)] {
        assert_eq!(
            send(&k, request(id, log_type, 4096)),
            Err(STATUS_INVALID_PARAMETER),
            "type {log_type:#x}"
        );
    }
    for bad_id in [u32::MAX, rvgpu_hw::queue::NO_QUEUE, id + 1000] {
        assert_eq!(
            send(&k, request(bad_id, u64::from(LOG_TYPE_SIGNALS), 4096)),
            Err(STATUS_INVALID_PARAMETER),
            "id {bad_id:#x}"
        );
    }
    let mut reserved = request(id, u64::from(LOG_TYPE_SIGNALS), 64);
    reserved[28] = 1;
    assert_eq!(send(&k, reserved), Err(STATUS_INVALID_PARAMETER));
    // Shorter than the header: not a test-hook request at all, refused.
    let mut short = request(id, u64::from(LOG_TYPE_SIGNALS), 0);
    short.truncate(HEADER - 1);
    assert_eq!(send(&k, short), Err(STATUS_INVALID_PARAMETER));
    for room in [0usize, 1, 7, 13, 40, 41, 100, 5000] {
        let buf = send(&k, request(id, u64::from(LOG_TYPE_SIGNALS), room)).unwrap();
        let n = answer(&buf).count as usize;
        assert!(n <= room, "room {room}: {n} bytes");
        assert_eq!(n, room.min(4072).min(40 + 48 * answer(&buf).seq as usize));
        assert!(buf[HEADER + n..].iter().all(|b| *b == FILL), "room {room}");
    }
    drop(q);
    no_fault(&m);
}
/// A `DriverCaps` request with `room` bytes after the header.
fn caps_request(room: usize) -> Vec<u8> {
    let mut buf = TestHookEscape::new(TestHookOp::DriverCaps, 0, 0)
        .as_bytes()
        .to_vec();
    buf.resize(HEADER + room, FILL);
    buf
}

/// UM-03, UM-04, NF-10: the KMD's report of its caps is what the OS recorded at start: the
/// DRIVERCAPS fields, each node's UserModeSubmission flag, the doorbell size. Hooks off, room
/// of any other size than the report's, a reserved field set: refused, nothing written.
#[test]
fn um_04_driver_caps_escape_reports_what_the_os_recorded() {
    let m = machine(Some(1));
    let (_p, k) = user_process(&m);
    let buf = send(&k, caps_request(size_of::<KmdCapsReport>())).unwrap();
    let r = KmdCapsReport::read_from_bytes(&buf[HEADER..]).unwrap();
    let c = okk(&m, m.query_driver_caps(0));
    let s = c.SchedulingCaps;
    let flag = |on: bool, bit: u32| if on { bit } else { 0 };
    assert_eq!(
        r.flags,
        flag(
            s.is_set(DXGK_VIDSCHCAPS::MultiEngineAware),
            CAPS_MULTI_ENGINE_AWARE
        ) | flag(
            s.is_set(DXGK_VIDSCHCAPS::NativeGpuFence),
            CAPS_NATIVE_GPU_FENCE
        ) | flag(
            s.is_set(DXGK_VIDSCHCAPS::No64BitAtomics),
            CAPS_NO_64BIT_ATOMICS
        ) | flag(c.SupportPerEngineTDR != 0, CAPS_PER_ENGINE_TDR)
    );
    assert_eq!(
        (r.nodes, r.interrupt_message_number, r.paging_node),
        (
            c.GpuEngineTopology.NbAsymetricProcessingNodes,
            c.InterruptMessageNumber,
            c.MemoryManagementCaps.PagingNode
        )
    );
    let ums = m
        .node_metadata(0)
        .iter()
        .enumerate()
        .filter(|(_, md)| md.Flags.is_set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission))
        .fold(0u32, |mask, (n, _)| mask | 1 << n);
    assert_eq!(r.user_mode_nodes, ums);
    assert!(ums != 0);
    assert_eq!(
        r.doorbell_size,
        m.usermode_submission_caps(0)
            .map_or(0, |u| u.DoorbellSizeInBytes)
    );
    for room in [0, 1, 31, 33, 64] {
        assert_eq!(
            send(&k, caps_request(room)),
            Err(STATUS_INVALID_PARAMETER),
            "room {room}"
        );
    }
    let mut reserved = caps_request(size_of::<KmdCapsReport>());
    reserved[28] = 1;
    assert_eq!(send(&k, reserved), Err(STATUS_INVALID_PARAMETER));
    for hooks in [None, Some(0)] {
        let m = machine(hooks);
        let (_p, k) = user_process(&m);
        assert_eq!(
            send(&k, caps_request(size_of::<KmdCapsReport>())),
            Err(STATUS_INVALID_PARAMETER)
        );
    }
    no_fault(&m);
}

/// UM-20, UM-21: the report names the device the KMD drives: its physical doorbells and its
/// CAPS register (the global doorbell), which a program needs to know which doorbell cases its
/// machine can run and which no thunk reports.
#[test]
fn um_20_driver_caps_escape_reports_the_device_configuration() {
    for (doorbells, global) in [(rvgpu_hw::defaults::DOORBELLS, false), (3, true)] {
        let m = machine_with(Mode::Step, |a| {
            a.software_key.set("", TEST_HOOKS_VALUE, RegValue::dword(1));
            a.device.doorbells = doorbells;
            a.device.global_doorbell = global;
        });
        let (_p, k) = user_process(&m);
        let buf = send(&k, caps_request(size_of::<KmdCapsReport>())).unwrap();
        let r = KmdCapsReport::read_from_bytes(&buf[HEADER..]).unwrap();
        assert_eq!(r.doorbells, doorbells);
        let caps = rvgpu_hw::regs::Caps::from_bits_retain(r.device_caps);
        assert_eq!(caps.contains(rvgpu_hw::regs::Caps::GLOBAL_DOORBELL), global);
        assert!(caps.contains(rvgpu_hw::regs::Caps::NATIVE_FENCE));
        no_fault(&m);
    }
}

against_the_pe_image!();
