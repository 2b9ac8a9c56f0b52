//! The open start-up questions of docs/windows-bringup.md §15 that the later
//! (WDDM 3.2) builds of the decompiled kernel settle, and what the simulated OS does with each
//! answer. [D24] below is docs/windows-bringup.md's tag for those builds.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;

mod common;
use common::start_edits::past_the_installer;
use common::{
    one_user_mode_submission, qai_leaks_dispatch, real_qai, refused, start_with_qai_hook,
};

use rvgpu_ddi::adapter::{
    DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_QUERYSEGMENT4, DXGK_START_INFO, PQUERY_INTERFACE,
};
use rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::memory::DXGK_QUERYSEGMENTOUT4;
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NO_MEMORY};
use rvgpu_ddi::{HANDLE, NTSTATUS, PVOID, ULONG};
use rvgpu_kmd::platform::Platform;
use rvgpu_simos::adapter::bringup::{self, STATUS_REVISION_MISMATCH};
use rvgpu_simos::adapter::irql::Routine;
use rvgpu_simos::base::bugcheck::{self, dxgkrnl_fatal, irql_unexpected, BugCheck};
use rvgpu_simos::{Irql, Machine, MachineConfig, Mode, OsConfig, SimError, SimKernel, Windows};

fn machine() -> Machine {
    Machine::new(MachineConfig::single(Mode::Step))
}

/// windows-bringup.md §15 question 1, the table size: [D24] `DpiGetDriverDataSizeFromVersion` copies 1,376 bytes
/// for 0x10004..0x11000 (through the slot at byte 1368) and the whole 1,544-byte table from
/// 0x11001 on, with no upper limit.
#[test]
fn q1_every_interface_from_0x11001_is_copied_whole() {
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

/// windows-bringup.md §15 question 1, the versions accepted: rvgpu starts, with user-mode submission, whichever
/// 3.2 value it declares (the preview SDK's 0x11002, the 26100 WDK's 0x11007, the first 3.2
/// table size 0x11001, a later 0x11008): no build read refuses a version for being new.
#[test]
fn q1_rvgpu_starts_declaring_any_wddm_3_2_interface_version() {
    for v in [0x11001u32, 0x11002, 0x11007, 0x11008] {
        let mut m = machine();
        m.load_driver_as_built(move |t| t.Version = v)
            .expect("load");
        if let Err(e) = m.start_adapter(0) {
            panic!("{v:#x}: {e}; log {:#?}", m.driver_log());
        }
        one_user_mode_submission(&m);
    }
}

/// windows-bringup.md §15 question 1, what is refused: below the Vista floor at load (BR-01, REVISION_MISMATCH),
/// a WDDM 2.0 pre-release at start (BR-32, INVALID_PARAMETER), both as before.
#[test]
fn q1_old_interfaces_are_still_refused_with_windows_status() {
    let mut m = machine();
    match m.load_driver_as_built(|t| t.Version = 0x1000) {
        Err(e) if e.status().is_some() => {
            assert_eq!(e.status(), Some(STATUS_REVISION_MISMATCH), "{e}")
        }
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

/// windows-bringup.md §15 question 2: the default OS follows the WDDM 3.2 builds, which no longer check the slot
/// at byte 1368 for a user-mode-submission node, so a driver that leaves it NULL starts with
/// user-mode submission; on the 22631 kernel it is refused (BR-73).
#[test]
fn q2_default_os_does_not_require_the_slot_after_notify_work_submission() {
    assert!(!OsConfig::default().windows.ums_requires_slot_1368());
    let mut m = machine();
    m.load_driver_with(|t| t.Reserved4 = std::ptr::null_mut())
        .expect("load");
    if let Err(e) = m.start_adapter(0) {
        panic!("start: {e}; log {:#?}", m.driver_log());
    }
    one_user_mode_submission(&m);

    let mut c = MachineConfig::single(Mode::Step);
    c.os.windows = Windows::W22631;
    let Some(c) = past_the_installer(c) else {
        return;
    };
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

thread_local! {
    /// windows-bringup.md §15 Q4: the segment count the driver's counting call reports instead of its own.
    static SEGMENT_COUNT: Cell<Option<u32>> = const { Cell::new(None) };
    /// windows-bringup.md §15 Q6: `(Size, Version)` of every `DxgkDdiQueryInterface` request the driver saw.
    static INTERFACE_SIZES: RefCell<Vec<(u16, u16)>> = const { RefCell::new(Vec::new()) };
}

/// The driver's QueryAdapterInfo with the counting call of `DXGKQAITYPE_QUERYSEGMENT4`
/// answering [`SEGMENT_COUNT`].
unsafe extern "system" fn segment_count_qai(
    h: HANDLE,
    args: *const DXGKARG_QUERYADAPTERINFO,
) -> NTSTATUS {
    // SAFETY: forwarded unchanged.
    let s = unsafe { real_qai(h, args) };
    // SAFETY: the OS's argument block; a QUERYSEGMENT4 answer is its DXGK_QUERYSEGMENTOUT4.
    unsafe {
        if s >= 0 && (*args).Type == DXGKQAITYPE_QUERYSEGMENT4 {
            let out = &mut *(*args).pOutputData.cast::<DXGK_QUERYSEGMENTOUT4>();
            if let (Some(n), true) = (SEGMENT_COUNT.get(), out.pSegmentDescriptor.is_null()) {
                out.NbSegment = n;
            }
        }
    }
    s
}

/// Starts rvgpu on a machine built with `os`, its segment count replaced by `count` (`None`:
/// its own).
fn start_with_segments(c: MachineConfig, count: Option<u32>) -> (Machine, Result<(), SimError>) {
    let mut m = Machine::new(c);
    SEGMENT_COUNT.set(count);
    let r = start_with_qai_hook(&mut m, segment_count_qai, |_| {});
    SEGMENT_COUNT.set(None);
    (m, r)
}

/// windows-bringup.md §15 question 4: the WDDM 3.2 builds refuse an adapter that reports no segments ([D24]
/// dxgmms2 `CreatePhysicalAdapterSegments` @ 0x14009B368 and @ 0x1400B14D0: STATUS_UNSUCCESSFUL
/// after the counting call, so no VidMm and the start fails with STATUS_NO_MEMORY), and
/// nothing there exempts an IoMmu-only adapter. That is the default OS.
#[test]
fn q4_zero_segments_are_refused_with_no_memory() {
    assert!(!OsConfig::default().windows.zero_segments_accepted());
    let (_, r) = start_with_segments(MachineConfig::single(Mode::Step), Some(0));
    refused(r, "BR-62", STATUS_NO_MEMORY);
}

/// windows-bringup.md §15 question 4, the 22631 answer (`Windows::zero_segments_accepted`): VidMm checks only
/// the upper bound, so a zero count is not what refuses the adapter. rvgpu with its count
/// forced to 0 still does not start there, for a later rule: no descriptors are asked for, so
/// its paging-buffer size is never reported and the paging pool has no buffers (BR-65).
#[test]
fn q4_22631_does_not_refuse_the_zero_count_itself() {
    let mut c = MachineConfig::single(Mode::Step);
    c.os.windows = Windows::W22631;
    let Some(c) = past_the_installer(c) else {
        return;
    };
    let (m, r) = start_with_segments(c, Some(0));
    match r {
        Err(SimError::StartRefused { rule, .. }) => assert_ne!(rule, "BR-62"),
        other => panic!(
            "expected a later refusal, got {other:?}; log {:#?}",
            m.driver_log()
        ),
    }
}

/// windows-bringup.md §15 question 4, what rvgpu survives: it always reports the aperture segment (and a local
/// one per VRAM region), so it starts, with user-mode submission, under either answer.
#[test]
fn q4_rvgpu_starts_under_either_answer() {
    for windows in [Windows::W24H2, Windows::W22631] {
        let mut c = MachineConfig::single(Mode::Step);
        c.os.windows = windows;
        let Some(c) = past_the_installer(c) else {
            continue;
        };
        let (m, r) = start_with_segments(c, None);
        if let Err(e) = r {
            panic!("{}: {e}; log {:#?}", windows.name(), m.driver_log());
        }
        one_user_mode_submission(&m);
    }
}

type QueryInterface = unsafe extern "system" fn(PVOID, PQUERY_INTERFACE) -> NTSTATUS;
static QUERY_INTERFACE: Interposed<QueryInterface> = Interposed {
    real: OnceLock::new(),
    wrapper: recording_query_interface,
};

/// A routine of the driver's table replaced by `wrapper`, which calls the driver's own (`real`).
struct Interposed<F: 'static> {
    real: OnceLock<F>,
    wrapper: F,
}

impl<F: Copy> Interposed<F> {
    /// Puts the wrapper in the table's `slot` if the driver filled it, keeping its routine.
    fn install(&self, slot: &mut Option<F>) {
        if let Some(own) = *slot {
            let _ = self.real.set(own);
            *slot = Some(self.wrapper);
        }
    }
}

/// The driver's DxgkDdiQueryInterface, recording each request's size and version.
unsafe extern "system" fn recording_query_interface(ctx: PVOID, q: PQUERY_INTERFACE) -> NTSTATUS {
    // SAFETY: the OS's request block for the call.
    let (size, version) = unsafe { ((*q).Size, (*q).Version) };
    INTERFACE_SIZES.with(|v| v.borrow_mut().push((size, version)));
    let real = QUERY_INTERFACE.real.get().expect("real QueryInterface");
    // SAFETY: forwarded unchanged.
    unsafe { real(ctx, q) }
}

/// windows-bringup.md §15 question 6: the 184-byte interface `DXGADAPTER::Initialize` asks for is
/// `GUID_AGP_BUS_INTERFACE_STANDARD` (Size 0xB8, Version 5), sent as IRP_MN_QUERY_INTERFACE to
/// the adapter's FDO ([D] and [D24] `DXGADAPTER::CallDriverQueryInterface`); Dxgkrnl's FDO
/// handler answers five interfaces of its own and passes every other one down the device
/// stack ([D] `DpiFdoHandleQueryInterface`), so the miniport's DxgkDdiQueryInterface never sees
/// it. Neither does it in the simulation: the only requests rvgpu gets while starting are the
/// feature interface's (56 and 48 bytes).
#[test]
fn q6_the_184_byte_interface_never_reaches_the_miniport() {
    INTERFACE_SIZES.with(|v| v.borrow_mut().clear());
    let mut m = machine();
    m.load_driver_with(|t| QUERY_INTERFACE.install(&mut t.DxgkDdiQueryInterface))
        .expect("load");
    if let Err(e) = m.start_adapter(0) {
        panic!("start: {e}; log {:#?}", m.driver_log());
    }
    let seen = INTERFACE_SIZES.with(|v| v.borrow().clone());
    assert!(!seen.is_empty(), "the feature interface is asked for");
    assert!(
        seen.iter().all(|&(size, _)| size == 56 || size == 48),
        "requests {seen:?}"
    );
}

type StartDevice = unsafe extern "system" fn(
    PVOID,
    *mut DXGK_START_INFO,
    *mut DXGKRNL_INTERFACE,
    *mut ULONG,
    *mut ULONG,
) -> NTSTATUS;
static START_DEVICE: Interposed<StartDevice> = Interposed {
    real: OnceLock::new(),
    wrapper: start_device_leaks_dispatch,
};

/// The driver's DxgkDdiStartDevice, returning at DISPATCH_LEVEL.
unsafe extern "system" fn start_device_leaks_dispatch(
    ctx: PVOID,
    info: *mut DXGK_START_INFO,
    iface: *mut DXGKRNL_INTERFACE,
    sources: *mut ULONG,
    children: *mut ULONG,
) -> NTSTATUS {
    let real = START_DEVICE.real.get().expect("real StartDevice");
    // SAFETY: forwarded unchanged.
    let s = unsafe { real(ctx, info, iface, sources, children) };
    let _old = SimKernel::raise_to_dispatch();
    s
}

fn irql_0x113_machine() -> Machine {
    let mut c = MachineConfig::single(Mode::Step);
    c.os.ddi_irql_mismatch_is_0x113 = true;
    Machine::new(c)
}

/// windows-bringup.md §15 question 10: a DDI behind one of Dxgkrnl's `Ddi*` wrappers that returns at another
/// IRQL gets a Critical watchdog record 0x113 / 0x10 ([D] `ADAPTER_RENDER::DdiCreateHwQueue`
/// and 164 other wrappers, [D24] `ADAPTER_RENDER::DdiCreateNativeFence`), and a Critical record
/// bug-checks with its first word as the code (dxgmms2's triage callback for 0x10E / 23, and
/// the 0x10E / 0x49 a 26100 machine stopped with: docs/windows-bringup.md §15 Q10). Under
/// `OsConfig::ddi_irql_mismatch_is_0x113` the machine stops with 0x113 (0x10, the DDI, IRQL at
/// the call, IRQL at the return) instead of the simulation's 0xC8.
#[test]
fn q10_ddi_wrapper_irql_mismatch_is_0x113() {
    assert!(OsConfig::default().ddi_irql_mismatch_is_0x113);
    let mut m = irql_0x113_machine();
    let r = start_with_qai_hook(&mut m, qai_leaks_dispatch, |_| {});
    let expected = BugCheck::new(
        bugcheck::VIDEO_DXGKRNL_FATAL_ERROR,
        [
            dxgkrnl_fatal::DDI_IRQL_MISMATCH,
            qai_leaks_dispatch as *const () as usize as u64,
            0,
            2,
        ],
    );
    assert!(
        matches!(r, Err(SimError::Bugcheck(b)) if b == expected),
        "{r:?}"
    );
    assert_eq!(rvgpu_simos::adapter::kernel::current_irql(), Irql::Passive);
}

/// windows-bringup.md §15 question 10, the other side: the PnP-layer wrappers (`DpiDxgkDdiStartDevice` and the
/// other `DpiDxgkDdi*` of 22631) compare no IRQL, so a StartDevice that returns raised is
/// still caught by the simulation's 0xC8 under the same configuration.
#[test]
fn q10_pnp_ddis_keep_the_simulations_0xc8() {
    let mut m = irql_0x113_machine();
    m.load_driver_with(|t| START_DEVICE.install(&mut t.DxgkDdiStartDevice))
        .expect("load");
    match m.start_adapter(0).map(|_| ()) {
        Err(SimError::Bugcheck(b)) => {
            assert_eq!(b.code, bugcheck::IRQL_UNEXPECTED_VALUE, "{b}");
            assert_eq!(b.params[0] & 0xFF, irql_unexpected::SIM_DDI, "{b}");
            assert_eq!(b.params[3], Routine::DxgkDdiStartDevice.id(), "{b}");
        }
        other => panic!("expected 0xC8, got {other:?}"),
    }
}

against_the_pe_image!();
