//! StartDevice and the DDI wrappers around it (docs/windows-bringup.md §5): BR-20 to BR-24.

use super::*;

/// BR-23: what rvgpu's `DxgkDdiPresent` and `DxgkDdiControlInterrupt` answer
/// (tests/ddi_robustness.rs) is in their wrappers' allow-lists; a status outside them is not.
#[test]
fn br_23_present_and_control_interrupt_statuses_are_allowed() {
    use rvgpu_ddi::ntstatus::{
        STATUS_ILLEGAL_INSTRUCTION, STATUS_INVALID_HANDLE, STATUS_NOT_IMPLEMENTED,
        STATUS_UNSUCCESSFUL,
    };
    for s in [STATUS_ILLEGAL_INSTRUCTION, STATUS_INVALID_HANDLE] {
        assert!(bringup::status_allowed("DxgkDdiPresent", s));
    }
    for s in [STATUS_NOT_IMPLEMENTED, STATUS_UNSUCCESSFUL] {
        assert!(bringup::status_allowed("DxgkDdiControlInterrupt", s));
    }
    assert!(!bringup::status_allowed(
        "DxgkDdiPresent",
        STATUS_INVALID_PARAMETER
    ));
    assert!(!bringup::status_allowed(
        "DxgkDdiControlInterrupt",
        STATUS_INVALID_PARAMETER
    ));
}

#[test]
fn br_23_status_outside_the_allow_list_is_logged_not_refused() {
    let (m, r) = start_with_knob(&REFUSE_TYPE, Some(DXGKQAITYPE_HISTORYBUFFERPRECISION));
    // The precision query's failure is tolerated (BR-57), its status is not in the list.
    assert_eq!(r, Ok(()));
    let log = m.triage_log(0);
    assert!(
        log.iter()
            .any(|l| l.starts_with("BR-23: DxgkDdiQueryAdapterInfo") && l.contains("0xc00000bb")),
        "{log:#?}"
    );
}

type StartFn = unsafe extern "system" fn(
    rvgpu_ddi::PVOID,
    *mut rvgpu_ddi::adapter::DXGK_START_INFO,
    *mut rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE,
    *mut u32,
    *mut u32,
) -> NTSTATUS;
type IsrFn = unsafe extern "system" fn(rvgpu_ddi::PVOID, u32) -> u8;

thread_local! {
    static REAL_START: Cell<Option<(StartFn, IsrFn)>> = const { Cell::new(None) };
    static ISR_BEFORE_START: Cell<Option<u8>> = const { Cell::new(None) };
}

/// StartDevice as Dxgkrnl's interrupt sees it: the line is connected before the start, so an
/// interrupt (a shared line, a device left asserting by firmware) reaches the ISR first.
unsafe extern "system" fn start_after_an_interrupt(
    ctx: rvgpu_ddi::PVOID,
    info: *mut rvgpu_ddi::adapter::DXGK_START_INFO,
    iface: *mut rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE,
    sources: *mut u32,
    children: *mut u32,
) -> NTSTATUS {
    let (start, isr) = REAL_START.get().expect("real StartDevice");
    // SAFETY: the driver's ISR with its own context, before its StartDevice ran.
    ISR_BEFORE_START.set(Some(unsafe { isr(ctx, 0) }));
    // SAFETY: forwarded unchanged.
    unsafe { start(ctx, info, iface, sources, children) }
}

/// BR-20: the ISR can run before StartDevice (Dxgkrnl connects the interrupt first); rvgpu's
/// returns FALSE without touching the device, and the start then succeeds.
#[test]
fn br_20_isr_before_start_device_claims_nothing() {
    let mut m = machine(false);
    let (start, isr) = load_hooked(&mut m, |t| {
        let real = (t.DxgkDdiStartDevice, t.DxgkDdiInterruptRoutine);
        t.DxgkDdiStartDevice = Some(start_after_an_interrupt);
        real
    });
    REAL_START.set(Some((start.expect("StartDevice"), isr.expect("ISR"))));
    let r = m.start_adapter(0);
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(
        ISR_BEFORE_START.get(),
        Some(0),
        "the ISR claimed an interrupt before start"
    );
    assert!(m.fault().is_none());
}
