//! Issue 48: the open start-up questions of docs/windows-bringup.md §10 that the later
//! (WDDM 3.2) builds of the decompiled kernel settle, and what the simulated OS does with each
//! answer. [D24] below is docs/windows-bringup.md's tag for those builds.

use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_simos::dxgkrnl::bringup::{self, STATUS_REVISION_MISMATCH};
use rvgpu_simos::{Machine, MachineConfig, Mode, OsConfig, SimError};

fn machine() -> Machine {
    Machine::new(MachineConfig::single(Mode::Step))
}

/// User-mode submission works end to end on adapter 0 of `m` (started).
fn one_user_mode_submission(m: &mut Machine) {
    let p = m.create_process(0).expect("process");
    let k = m.kmt(&p);
    let mut q = rvgpu_umd::submit::UserQueue::new(
        k,
        &rvgpu_umd::submit::QueueConfig {
            node: 0,
            ring_size: 4096,
            command_buffer_size: 4096,
            ..Default::default()
        },
    )
    .expect("user-mode queue");
    let v = q.submit(&[]).expect("submit");
    q.wait(v).expect("wait");
    drop(q);
    m.exit_process(&p).expect("exit");
}

/// §10 question 1, the table size: [D24] `DpiGetDriverDataSizeFromVersion` copies 1,376 bytes
/// for 0x10004..0x11000 (through the slot at byte 1368) and the whole 1,544-byte table from
/// 0x11001 on, with no upper limit.
#[test]
fn issue_48_q1_every_interface_from_0x11001_is_copied_whole() {
    let whole = std::mem::size_of::<DRIVER_INITIALIZATION_DATA>();
    assert_eq!(whole, 1544);
    assert_eq!(bringup::driver_data_size(0x10003), 1328);
    assert_eq!(bringup::driver_data_size(0x10004), 1376);
    assert_eq!(bringup::driver_data_size(0x11000), 1376);
    for v in [0x11001, 0x11002, 0x11007, 0x11008, 0x2_0000] {
        assert_eq!(bringup::driver_data_size(v), whole, "{v:#x}");
    }
    // A table declaring 0x10004 loses every WDDM 3.2 slot: the memory-basis, migration and
    // native-fence open/close DDIs are not seen.
    let mut t = rvgpu_kmd::initialization_data::<rvgpu_simos::SimKernel>();
    t.Version = 0x10004;
    let c = bringup::table_as_copied(&t);
    assert!(c.DxgkDdiNotifyWorkSubmission.is_some() && !c.Reserved4.is_null());
    assert!(c.DxgkDdiOpenNativeFence.is_none() && c.DxgkDdiCloseNativeFence.is_none());
}

/// §10 question 1, the versions accepted: rvgpu starts, with user-mode submission, whichever
/// 3.2 value it declares (the preview SDK's 0x11002, the 26100 WDK's 0x11007, the first 3.2
/// table size 0x11001, a later 0x11008): no build read refuses a version for being new.
#[test]
fn issue_48_q1_rvgpu_starts_declaring_any_wddm_3_2_interface_version() {
    for v in [0x11001u32, 0x11002, 0x11007, 0x11008] {
        let mut m = machine();
        m.load_driver_as_built(move |t| t.Version = v)
            .expect("load");
        if let Err(e) = m.start_adapter(0) {
            panic!("{v:#x}: {e}; log {:#?}", m.driver_log());
        }
        one_user_mode_submission(&mut m);
    }
}

/// §10 question 1, what is refused: below the Vista floor at load (BR-01, REVISION_MISMATCH),
/// a WDDM 2.0 pre-release at start (BR-32, INVALID_PARAMETER), both as before.
#[test]
fn issue_48_q1_old_interfaces_are_still_refused_with_windows_status() {
    let mut m = machine();
    match m.load_driver_as_built(|t| t.Version = 0x1000) {
        Err(SimError::DdiFailed(s)) => assert_eq!(s, STATUS_REVISION_MISMATCH),
        other => panic!("expected REVISION_MISMATCH, got {other:?}"),
    }
    let mut m = machine();
    m.load_driver_as_built(|t| t.Version = 0x5003)
        .expect("load");
    match m.start_adapter(0).map(|_| ()) {
        Err(SimError::StartRefused { rule, status, .. }) => {
            assert_eq!((rule, status), ("BR-32", STATUS_INVALID_PARAMETER))
        }
        other => panic!("expected BR-32, got {other:?}"),
    }
}

/// §10 question 2: the default OS follows the WDDM 3.2 builds, which no longer check the slot
/// at byte 1368 for a user-mode-submission node, so a driver that leaves it NULL starts with
/// user-mode submission; under the 22631 configuration it is refused (BR-73).
#[test]
fn issue_48_q2_default_os_does_not_require_the_slot_after_notify_work_submission() {
    assert!(!OsConfig::default().ums_requires_slot_1368);
    let mut m = machine();
    m.load_driver_with(|t| t.Reserved4 = std::ptr::null_mut())
        .expect("load");
    if let Err(e) = m.start_adapter(0) {
        panic!("start: {e}; log {:#?}", m.driver_log());
    }
    one_user_mode_submission(&mut m);

    let mut c = MachineConfig::single(Mode::Step);
    c.os.ums_requires_slot_1368 = true;
    let mut m = Machine::new(c);
    m.load_driver_with(|t| t.Reserved4 = std::ptr::null_mut())
        .expect("load");
    match m.start_adapter(0).map(|_| ()) {
        Err(SimError::StartRefused { rule, status, .. }) => {
            assert_eq!((rule, status), ("BR-73", STATUS_INVALID_PARAMETER))
        }
        other => panic!("expected BR-73 under the 22631 rule, got {other:?}"),
    }
}
