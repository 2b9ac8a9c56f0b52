//! TDR-01 end to end: the per-engine TDR capabilities and the debug information the OS collects
//! before a reset (`DxgkDdiCollectDbgInfo`, `DxgkDdiCollectDbgInfo2` and the driver's dump, read
//! back through the WinDbg script), from the simulated VidSch of `rvgpu_simos::tdr` against the
//! real KMD and the emulated GPU. The reset sequence itself is `tdr`.

mod common;

use common::tdr::*;
use common::*;
use std::time::Duration;

use rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL;
use rvgpu_ddi::tdr::VIDEO_ENGINE_TIMEOUT_DETECTED;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::tdrdump;
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::{Machine, MachineConfig, Mode, SimError, TdrEvent};
use rvgpu_umd::kmt::Kmt;
use rvgpu_umd::submit::{KernelQueue, UserQueue};

// ---------------------------------------------------------------------------------------------
// TDR-01: caps and level-0 CollectDbgInfo.

/// TDR-01: `SupportPerEngineTDR` is set exactly when the device can reset one engine and the
/// table carries its three DDIs (CollectDbgInfo is every render core's, BR-47); the OS refuses a start
/// that advertises it with a null slot (BR-42, in the place Windows checks it).
#[test]
fn tdr_01_caps_require_all_ddis() {
    let m = machine_with(Mode::Step, |_| {});
    let caps = ok(&m, m.query_driver_caps(0));
    assert_eq!(caps.SupportPerEngineTDR, 1, "PER_ENGINE_RESET device");
    drop(m);
    // No PER_ENGINE_RESET: the driver says so (SupportPerEngineTDR 0), and a Windows that
    // validates WDDM caps refuses a WDDM 1.2+ hardware adapter without per-engine TDR (BR-52).
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.validate_wddm_caps = true;
    cfg.adapters[0].device.per_engine_reset = false;
    let mut m = Machine::new(cfg);
    m.load_driver().expect("load");
    match m.start_adapter(0) {
        Err(SimError::StartRefused { rule, why, .. }) => {
            assert_eq!(rule, "BR-52", "{why}");
            assert!(why.contains("SupportPerEngineTDR"), "{why}");
        }
        other => panic!("start without PER_ENGINE_RESET: {other:?}"),
    }
    drop(m);
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    m.load_driver_with(|t| t.DxgkDdiResetEngine = None)
        .expect("load");
    match m.start_adapter(0) {
        Err(SimError::StartRefused { rule, why, .. }) => {
            assert_eq!(rule, "BR-42", "{why}");
            assert!(why.contains("ResetEngine"), "{why}");
        }
        other => panic!("start with SupportPerEngineTDR and no ResetEngine: {other:?}"),
    }
}

/// TDR-01: CollectDbgInfo is level 0: it runs on other threads while QueryAdapterInfo runs and
/// while an engine reset is in progress; no deadlock, output bounded and non-empty.
#[test]
fn tdr_01_collect_dbg_info_level_zero() {
    let m = machine_with(Mode::Threaded, |a| a.hwsch_feature = false);
    enable_tdr_after(&m, THREADED_TDR_DELAY, Duration::from_millis(5));
    let (p, _k, ctx) = process_with_context(&m);
    std::thread::scope(|s| {
        let collector = s.spawn(|| {
            let mut n = 0usize;
            while resets(&m) == 0 && n < 100_000 {
                let t = ok(&m, m.collect_dbg_info(0, VIDEO_ENGINE_TIMEOUT_DETECTED));
                assert!(!t.is_empty() && t.len() < 4096);
                n += 1;
            }
            n
        });
        let caps = s.spawn(|| {
            for _ in 0..200 {
                ok(&m, m.query_driver_caps(0));
            }
        });
        ok(&m, m.submit_legacy(&p, ctx, &[Command::Hang]));
        run_until(&m, "engine reset", |m| resets(m) == 1);
        caps.join().unwrap();
        assert!(collector.join().unwrap() > 0);
    });
    let ev = m.tdr_events(0);
    assert!(ev.iter().any(is_engine_report), "{ev:#?}");
    no_fault(&m);
}

/// TDR-01, TDR-05 in 24H2's order for a hardware-scheduled node (`VidSchiPrepareToResetEngine`,
/// `VidSchiResetEngines`, `VidSchiResetHwEngine`): the dependent group first, then the node's
/// snapshot, then `DxgkDdiCollectDbgInfo2` (the driver has it) with reason 0x141, an
/// engine-timeout payload naming the node and a 16 MiB buffer, then ResetHwEngine, the DPC
/// flush and ResumeHwEngine; the legacy `DxgkDdiCollectDbgInfo` is not called. The driver's
/// dump names the node the payload named and the user-mode queue it hung on, with the queue's
/// context and progress value; the KMD does not own a user-mode ring, so no ring pointer is
/// claimed, and the payload's `hContext` stays NULL.
#[test]
fn tdr_01_24h2_collects_dbg_info2_after_the_group_and_before_the_reset() {
    let m = tdr_machine_reading(Mode::Step, rvgpu_simos::Windows::W24H2);
    let h = ok(&m, m.create_process(0));
    let mut uq = okk(&m, UserQueue::new(m.kmt(&h), &config(0)));
    okk(&m, uq.submit(&[Command::Hang]));
    run_until(&m, "reset", |m| {
        m.tdr_events(0)
            .iter()
            .any(|e| matches!(e, TdrEvent::ResumeHwEngine { .. }))
    });
    let ev = m.tdr_events(0);
    let at = |f: &dyn Fn(&TdrEvent) -> bool| {
        ev.iter()
            .position(f)
            .unwrap_or_else(|| panic!("missing step: {ev:#?}"))
    };
    let group = at(&|e| matches!(e, TdrEvent::DependentGroup { node: 0, .. }));
    let snap = at(&|e| matches!(e, TdrEvent::Snapshot { node: 0, .. }));
    let dbg = at(&|e| {
        matches!(
            e,
            TdrEvent::CollectDbgInfo2 {
                reason: 0x141,
                tdr_type: 6,
                bytes
            } if *bytes > 0
        )
    });
    let reset = at(&|e| matches!(e, TdrEvent::ResetHwEngine { node: 0, status: 0 }));
    let flushed = at(&|e| matches!(e, TdrEvent::DpcFlushed { node: 0 }));
    let resume = at(&|e| matches!(e, TdrEvent::ResumeHwEngine { node: 0, status: 0 }));
    assert!(
        group < snap && snap < dbg && dbg < reset && reset < flushed && flushed < resume,
        "{ev:#?}"
    );
    assert!(
        !ev.iter()
            .any(|e| matches!(e, TdrEvent::CollectDbgInfo { .. })),
        "CollectDbgInfo2 replaces CollectDbgInfo: {ev:#?}"
    );
    let dump = m.last_tdr_dump(0).expect("a CollectDbgInfo2 dump");
    assert_eq!(dump.status, 0);
    let hd = tdrdump::header(&dump.bytes).expect("an rvgpu dump");
    assert_eq!(
        (
            hd.reason,
            hd.tdr_type,
            hd.timed_out_node,
            hd.records,
            hd.flags
        ),
        (0x141, 6, 0, 2, 0)
    );
    let e0 = tdrdump::engine(&dump.bytes, &hd, 0).unwrap();
    assert_eq!((e0.node, e0.queue_id), (0, uq.queue_id()));
    assert!(
        [tdrdump::ENGINE_HUNG, tdrdump::ENGINE_RUNNING].contains(&e0.state),
        "{e0:#x?}"
    );
    let mut want = tdrdump::VALID_QUEUE
        | tdrdump::VALID_GUILTY
        | tdrdump::VALID_HANDLES
        | tdrdump::VALID_RING
        | tdrdump::VALID_COMPLETED;
    if !uq.os_sees_work() {
        // No progress fence from the OS (24H2): the KMD has no value to read as completed.
        want &= !tdrdump::VALID_COMPLETED;
    }
    assert_eq!(e0.valid, want, "{e0:#x?}");
    assert_eq!(e0.last_completed, 0, "the HANG is the queue's first work");
    assert!(e0.context_handle != 0);
    // 24H2 follows a non-NULL hContext as its own object; the KMD has only its own handles.
    assert_eq!(dump.hcontext, 0);
    std::mem::forget(uq);
    no_fault(&m);
}

/// The kernel-mode queue of a process on node 0 whose second submission is a HANG, and the
/// first's progress value; returns once 24H2's TDR collected its dump.
fn hang_a_kernel_queue_until_dumped(m: &Machine) -> (KernelQueue<SimKmt<'_>>, u64, u64) {
    let p = ok(m, m.create_process(0));
    let t = okk(m, m.kmt(&p).create_allocation(4096));
    let mut kq = okk(m, KernelQueue::new(m.kmt(&p), &config(0)));
    let done = okk(m, kq.submit(&[fill(&t, 0, 1)]));
    run_until(m, "fill", |_| kq.completed() >= done);
    let hang = okk(m, kq.submit(&[Command::Hang]));
    run_until(m, "dump", |m| m.last_tdr_dump(0).is_some());
    (kq, done, hang)
}

/// TDR-01, TDR-04: 24H2's `DxgkDdiCollectDbgInfo2` dump after a real hang of a kernel-mode
/// hardware queue: the timed-out engine names that queue guilty, with its last submitted value
/// (the HANG's) and last completed (the fill before it), the ring pointers of the KMD's ring
/// and the ring address of the hung packet (the second submission starts where the first
/// ended); the innocent copy engine is idle and names no queue.
#[test]
fn tdr_01_dump_names_the_hung_kernel_queue_its_fences_and_packet() {
    let m = tdr_machine_reading(Mode::Step, rvgpu_simos::Windows::W24H2);
    let (kq, done, hang) = hang_a_kernel_queue_until_dumped(&m);
    let dump = m.last_tdr_dump(0).unwrap();
    let hd = tdrdump::header(&dump.bytes).expect("an rvgpu dump");
    assert_eq!((hd.engine_count, hd.records, hd.engine_resets), (2, 2, 0));
    let e0 = tdrdump::engine(&dump.bytes, &hd, 0).unwrap();
    // Still executing the HANG: the OS's timeout came before the device's hang detection.
    assert_eq!(
        (e0.state, e0.queue_id),
        (tdrdump::ENGINE_RUNNING, kq.queue_id())
    );
    assert_eq!(e0.valid, 0x1FF, "every field known: {e0:#x?}");
    assert_eq!((e0.last_submitted, e0.last_completed), (hang, done));
    assert!(
        e0.read_ptr > 0 && e0.write_ptr == 2 * e0.read_ptr,
        "{e0:#x?}"
    );
    assert_eq!(
        e0.hung_gpu_va,
        e0.ring_base + e0.read_ptr % u64::from(e0.ring_size)
    );
    let e1 = tdrdump::engine(&dump.bytes, &hd, 1).unwrap();
    assert_eq!(
        (e1.node, e1.state, e1.valid),
        (1, tdrdump::ENGINE_IDLE, 0),
        "{e1:#x?}"
    );
    // After the recovery the engine counts its reset and no longer names the queue.
    run_until(&m, "resumed", |m| {
        m.tdr_events(0)
            .iter()
            .any(|e| matches!(e, TdrEvent::ResumeHwEngine { .. }))
    });
    let (st, b) = ok(&m, m.collect_dbg_info2(0, 4096));
    assert_eq!(st, 0);
    let hd = tdrdump::header(&b).unwrap();
    let e0 = tdrdump::engine(&b, &hd, 0).unwrap();
    assert_eq!((hd.engine_resets, e0.resets), (1, 1));
    assert_eq!(e0.valid & tdrdump::VALID_GUILTY, 0, "{e0:#x?}");
    std::mem::forget(kq);
    no_fault(&m);
}

/// TDR-01: CollectDbgInfo2 is level 0 too: called in a loop on another thread while another
/// process creates and destroys queues (the scheduler lock) and a hang is detected and reset
/// (ResetHwEngine holds the lock), every call returns a whole dump at once; nothing
/// deadlocks.
#[test]
fn tdr_01_collect_dbg_info2_level_zero() {
    let mut cfg = MachineConfig::single(Mode::Threaded);
    cfg.os.windows = rvgpu_simos::Windows::W24H2;
    let m = started(cfg);
    enable_tdr_after(&m, THREADED_TDR_DELAY, Duration::from_millis(5));
    let h = ok(&m, m.create_process(0));
    let c = ok(&m, m.create_process(0));
    let mut hq = okk(&m, UserQueue::new(m.kmt(&h), &config(0)));
    // The hang goes in only once the collector has made its first call: the device reports a
    // hang at once, so a collector the host schedules late would otherwise see none of it.
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let m_ref = &m;
        let collector = s.spawn(move || {
            let m = m_ref;
            let mut n = 0usize;
            while resets(m) == 0 && n < 100_000 {
                let (st, b) = ok(m, m.collect_dbg_info2(0, 4096));
                assert_eq!(st, 0);
                let hd = tdrdump::header(&b).expect("a whole header");
                assert_eq!(hd.records, 2);
                n += 1;
                if n == 1 {
                    let _ = started_tx.send(());
                }
            }
            n
        });
        let churn = s.spawn(|| {
            let mut n = 0;
            while resets(&m) == 0 && n < 2000 {
                drop(okk(&m, UserQueue::new(m.kmt(&c), &config(1))));
                n += 1;
            }
        });
        started_rx.recv().expect("the collector's first call");
        okk(&m, hq.submit(&[Command::Hang]));
        run_until(&m, "engine reset", |m| resets(m) == 1);
        churn.join().unwrap();
        assert!(collector.join().unwrap() > 0);
    });
    assert!(m.last_tdr_dump(0).is_some());
    std::mem::forget(hq);
    no_fault(&m);
}

/// TDR-01: the buffer the OS gives bounds the dump: room for the header and one record gets
/// one record and the truncated flag, nothing past it; a buffer shorter than the header gets
/// nothing and `STATUS_UNSUCCESSFUL` (one of the page's three statuses).
#[test]
fn tdr_01_dump_respects_the_buffer_size() {
    let m = tdr_machine(Mode::Step, |_| {});
    let (st, b) = ok(&m, m.collect_dbg_info2(0, 32 + 96 + 95));
    assert_eq!(st, 0);
    let hd = tdrdump::header(&b).expect("an rvgpu dump");
    assert_eq!((hd.engine_count, hd.records), (2, 1));
    assert_eq!(hd.flags, tdrdump::DUMP_TRUNCATED);
    assert_eq!((hd.tdr_type, hd.timed_out_node), (1, tdrdump::NO_NODE));
    assert!(
        b[32 + 96..].iter().all(|x| *x == 0),
        "nothing past the record"
    );
    let (st, b) = ok(&m, m.collect_dbg_info2(0, 31));
    assert_eq!(st, STATUS_UNSUCCESSFUL);
    assert!(b.iter().all(|x| *x == 0));
    let (st, b) = ok(&m, m.collect_dbg_info2(0, 0));
    assert_eq!((st, b.len()), (STATUS_UNSUCCESSFUL, 0));
    no_fault(&m);
}

/// Runs `bash scripts/setup.sh node` (installs Debian's nodejs where it can) and returns
/// node's path.
fn node() -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let st = std::process::Command::new("bash")
        .arg(root.join("scripts/setup.sh"))
        .arg("node")
        .status()
        .expect("bash runs");
    assert!(st.success(), "scripts/setup.sh node failed");
    std::path::PathBuf::from("node")
}

/// TDR-01: the WinDbg script's `!rvgpu_tdrdump` decodes the dump of a real hang (the bytes
/// Windows keeps, read through a model of the JsProvider's `host.memory`): the guilty engine's
/// line says hung with its queue, fences, pointers and packet address; the innocent one's
/// says idle and names nothing.
#[test]
fn tdr_01_windbg_script_decodes_the_dump_of_a_real_hang() {
    let m = tdr_machine_reading(Mode::Step, rvgpu_simos::Windows::W24H2);
    let (kq, done, hang) = hang_a_kernel_queue_until_dumped(&m);
    let dump = m.last_tdr_dump(0).unwrap();
    let hd = tdrdump::header(&dump.bytes).unwrap();
    let e0 = tdrdump::engine(&dump.bytes, &hd, 0).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let hex: String = dump.bytes.iter().map(|b| format!("{b:02x}")).collect();
    let out = std::process::Command::new(node())
        .arg(root.join("tests/windbg/tdrdump.js"))
        .arg(root.join("scripts/windbg/rvgpu.js"))
        .arg(&hex)
        .arg(dump.bytes.len().to_string())
        .output()
        .expect("node runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "rvgpu TDR dump v1: reason=0x141 type=6 node=0 engines=2 records=2 resets=0 flags=none"
    );
    assert_eq!(
        lines[1],
        format!(
            "engine 0: running status={:#x} queue={:#x} guilty context={:#x} hwqueue={:#x} \
             submitted={hang:#x} completed={done:#x} rptr={:#x} wptr={:#x} ring={:#x}+{:#x} \
             hung_at={:#x} resets=0",
            e0.status,
            kq.queue_id(),
            e0.context_handle,
            e0.queue_handle,
            e0.read_ptr,
            e0.write_ptr,
            e0.ring_base,
            e0.ring_size,
            e0.hung_gpu_va
        )
    );
    let e1 = tdrdump::engine(&dump.bytes, &hd, 1).unwrap();
    assert_eq!(
        lines[2],
        format!("engine 1: idle status={:#x} resets=0", e1.status)
    );
    assert_eq!(lines.len(), 3);
    // Without N the script reads whole records, past the kept bytes: the model's memory
    // ends there, so it must stop with an error rather than invent bytes.
    let short = std::process::Command::new(node())
        .arg(root.join("tests/windbg/tdrdump.js"))
        .arg(root.join("scripts/windbg/rvgpu.js"))
        .arg(&hex[..64])
        .output()
        .expect("node runs");
    assert!(!short.status.success(), "a header alone decoded as a dump");
    std::mem::forget(kq);
    no_fault(&m);
}

against_the_pe_image!();

under_the_pages!(image);
