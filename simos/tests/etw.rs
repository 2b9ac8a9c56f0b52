//! The driver's ETW provider under the simulated OS's ETW (DDI-04): a session records
//! `rvgpu.Kmd`'s events and decodes them from their TraceLogging metadata; without a session,
//! with the session's level or keywords excluding them, or with Dxgkrnl's switch
//! (DxgkDdiControlEtwLogging) off, nothing is recorded. The suite runs again against
//! `rvgpu.sys` in the emulator: both builds must record exactly these events.

mod common;

use common::*;
use std::sync::Mutex;

use rvgpu_hw::cmd::Command;
use rvgpu_kmd::platform::Irql;
use rvgpu_simos::etw::{Enable, Value, RVGPU_KMD};
use rvgpu_simos::machine::answers::UmsProgress;
use rvgpu_simos::sync::fence::NativeFenceDesc;
use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::{AdapterConfig, Machine, MachineConfig, Mode};
use rvgpu_umd::kmt::Kmt;

/// The Linux build's ETW switches are process-wide: these tests take turns.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A step-mode machine (`f` adjusts its adapter) whose session enables `enable` before the
/// driver loads, started.
fn recording(enable: Option<Enable>, f: impl FnOnce(&mut AdapterConfig)) -> Machine {
    let mut cfg = MachineConfig::single(Mode::Step);
    f(&mut cfg.adapters[0]);
    let mut m = Machine::new(cfg);
    if let Some(e) = enable {
        m.etw_enable(e);
    }
    let r = m.load_driver();
    ok(&m, r);
    let r = m.start_adapter(0).map(|_| ());
    ok(&m, r);
    m
}

/// Every event's name and fields (numbers only: a handle's value depends on the build's
/// adapter slot, so it is replaced by "handle").
fn recorded(m: &Machine) -> Vec<(String, Vec<(String, String)>)> {
    assert!(m.etw().errors().is_empty(), "{:?}", m.etw().errors());
    assert!(
        !m.etw().events().is_empty(),
        "nothing recorded; log {:#?}",
        m.driver_log()
    );
    m.etw()
        .events()
        .into_iter()
        .map(|e| {
            assert_eq!(e.guid, RVGPU_KMD);
            assert_eq!(e.decoded.provider, "rvgpu.Kmd");
            let fields = e
                .decoded
                .fields
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::Hex(h) if *h > 0xFFFF_FFFF => "handle".to_string(),
                        v => v.to_string(),
                    };
                    (k.clone(), v)
                })
                .collect();
            (e.decoded.name.clone(), fields)
        })
        .collect()
}

fn ev(name: &str, fields: &[(&str, &str)]) -> (String, Vec<(String, String)>) {
    (
        name.to_string(),
        fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

/// Whether the OS gives a user-mode queue a progress fence (the pages); 24H2 gives none, and
/// the UMD then completes its batches on a native fence of its own.
fn os_progress_fence(m: &Machine) -> bool {
    m.os_config().windows.reading().ums_progress == UmsProgress::Given
}

/// The events of one [`one_user_mode_submission`]: the queue's create, its doorbell's
/// connect, the queue's destroy; without the OS's progress fence (24H2) also the CPU wait on
/// the UMD's own one (MonitoredValue raised to the batch), its GPU signal, and the wait's end
/// (MonitoredValue back at the maximum).
fn one_submission_events(m: &Machine) -> Vec<(String, Vec<(String, String)>)> {
    let mut v = vec![
        ev(
            "HwQueueCreate",
            &[("Queue", "handle"), ("QueueId", "2"), ("Engine", "0")],
        ),
        ev("DoorbellConnect", &[("Doorbell", "handle"), ("Page", "0")]),
    ];
    if !os_progress_fence(m) {
        v.extend([
            ev("NativeFenceWait", &[("Fence", "handle"), ("Value", "1")]),
            ev(
                "NativeFenceSignal",
                &[
                    // The driver's own adapter number, which counts every adapter this copy
                    // of the driver started.
                    ("Adapter", "any"),
                    ("Engine", "0"),
                    ("QueueId", "2"),
                    ("Tag", "handle"),
                    ("Value", "1"),
                ],
            ),
            ev(
                "NativeFenceWait",
                &[("Fence", "handle"), ("Value", &u64::MAX.to_string())],
            ),
        ]);
    }
    v.push(ev(
        "HwQueueDestroy",
        &[("Queue", "handle"), ("QueueId", "2")],
    ));
    v
}

/// A harness-like run (a process submits once through a user-mode queue, waits, exits):
/// the queue's life and its doorbell, with names, fields and types from the metadata.
#[test]
fn ddi_04_session_records_rvgpu_events_decoded_from_their_metadata() {
    let _s = serial();
    let m = recording(Some(Enable::all(RVGPU_KMD)), |_| {});
    one_user_mode_submission(&m);
    no_fault(&m);
    let mut got = recorded(&m);
    for (_, fields) in &mut got {
        for (_, v) in fields.iter_mut().filter(|(k, _)| k == "Adapter") {
            *v = "any".into();
        }
    }
    assert_eq!(got, one_submission_events(&m));
    let events = m.etw().events();
    let queue = |i: usize| events[i].decoded.field("Queue").cloned();
    let last = events.len() - 1;
    assert_eq!(queue(0), queue(last), "create and destroy name one queue");
    assert!(matches!(queue(0), Some(Value::Hex(h)) if h != 0));
    assert!(events.windows(2).all(|w| w[0].qpc <= w[1].qpc));
    assert_eq!(events[0].decoded.level, 4, "TRACE_LEVEL_INFORMATION");
}

/// A CPU wait (DxgkDdiUpdateMonitoredValues) and the GPU signal the ISR takes, with the
/// fence and the value.
#[test]
fn ddi_04_native_fence_wait_and_signal_are_recorded() {
    let _s = serial();
    let m = recording(Some(Enable::all(RVGPU_KMD)), |_| {});
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let f = ok(
        &m,
        m.create_native_fence(0, q.pid(), NativeFenceDesc::default()),
    );
    ok(&m, m.run_until_idle());
    let e3 = ok(&m, m.wait_native_fence_event(&f, 3));
    ok(&m, q.signal(&f, 3));
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert!(e3.is_signaled());
    no_fault(&m);
    let events = m.etw().events();
    let wait = events
        .iter()
        .find(|e| e.decoded.name == "NativeFenceWait")
        .expect("a wait event");
    assert_eq!(
        wait.decoded.field("Fence"),
        Some(&Value::Hex(f.global_handle() as u64))
    );
    let signal = events
        .iter()
        .find(|e| e.decoded.name == "NativeFenceSignal")
        .expect("a signal event");
    assert_eq!(signal.decoded.field("Value"), Some(&Value::Unsigned(3)));
    assert_eq!(signal.decoded.field("Engine"), Some(&Value::Unsigned(0)));
    assert!(wait.qpc <= signal.qpc);
    assert_eq!(
        recorded(&m)
            .iter()
            .map(|(n, f)| (n.as_str(), f.iter().map(|(k, _)| k.as_str()).collect()))
            .find(|(n, _)| *n == "NativeFenceSignal"),
        Some((
            "NativeFenceSignal",
            vec!["Adapter", "Engine", "QueueId", "Tag", "Value"]
        ))
    );
}

/// A hang's timeout, the engine reset, then a power-down and up: the TDR and power steps.
#[test]
fn ddi_04_tdr_steps_and_power_transitions_are_recorded() {
    let _s = serial();
    let m = recording(Some(Enable::all(RVGPU_KMD)), |a| a.hwsch_feature = false);
    enable_tdr_steps(&m, 40, 5);
    let (p, k) = user_process(&m);
    let ctx = okk(&m, k.create_context(0));
    ok(&m, m.submit_legacy(&p, ctx, &[Command::Hang]));
    let reset = ok(
        &m,
        m.run_until(20_000, std::time::Duration::from_secs(20), |m| {
            m.tdr_counts(0).0 == 1
        }),
    );
    assert!(reset);
    ok(&m, m.exit_process(&p));
    assert!(ok(&m, m.power_down(0)));
    ok(&m, m.power_up(0));
    no_fault(&m);
    let got = recorded(&m);
    let at = |name: &str| got.iter().position(|(n, _)| n == name);
    let (timeout, engine) = (at("TdrTimeoutDetected"), at("TdrEngineReset"));
    assert!(timeout.is_some() && timeout < engine, "{got:#?}");
    assert_eq!(got[engine.unwrap()].1[1], ("Node".into(), "0".into()));
    let power: Vec<&str> = got
        .iter()
        .filter(|(n, _)| n == "PowerDeviceState")
        .map(|(_, f)| f[1].1.as_str())
        .collect();
    assert_eq!(power, ["4", "1"], "D3 then D0: {got:#?}");
}

/// No session: the driver writes nothing (and the session records nothing).
#[test]
fn ddi_04_without_a_session_nothing_is_recorded() {
    let _s = serial();
    let m = recording(None, |_| {});
    one_user_mode_submission(&m);
    no_fault(&m);
    assert!(m.etw().events().is_empty());
    // Enabled later, the running driver's next events are recorded (the enable callback).
    m.etw_enable(Enable::all(RVGPU_KMD));
    one_user_mode_submission(&m);
    let n = one_submission_events(&m).len();
    assert_eq!(recorded(&m).len(), n);
    m.etw_disable(RVGPU_KMD);
    one_user_mode_submission(&m);
    assert_eq!(recorded(&m).len(), n, "nothing after the session stopped");
}

/// Dxgkrnl's switch: off stops every event, on again restores them; its level and the
/// session's level and keywords each exclude events above or outside them.
#[test]
fn ddi_04_dxgkrnl_switch_and_session_filters_exclude_events() {
    let _s = serial();
    let m = recording(Some(Enable::all(RVGPU_KMD)), |_| {});
    ok(&m, m.control_etw_logging(false, 0, 0));
    one_user_mode_submission(&m);
    assert!(m.etw().events().is_empty(), "switched off by Dxgkrnl");
    // TRACE_LEVEL_WARNING: the queue events (information) stay out.
    ok(&m, m.control_etw_logging(true, 0, 3));
    one_user_mode_submission(&m);
    assert!(m.etw().events().is_empty(), "above Dxgkrnl's level");
    ok(&m, m.control_etw_logging(true, 0, 0));
    let only_tdr = Enable {
        match_any: rvgpu_kmd::etw::events::KW_TDR,
        ..Enable::all(RVGPU_KMD)
    };
    m.etw_enable(only_tdr);
    one_user_mode_submission(&m);
    assert!(
        m.etw().events().is_empty(),
        "outside the session's keywords"
    );
    m.etw_enable(Enable {
        level: 3,
        ..Enable::all(RVGPU_KMD)
    });
    one_user_mode_submission(&m);
    assert!(m.etw().events().is_empty(), "above the session's level");
    m.etw_enable(Enable::all(RVGPU_KMD));
    one_user_mode_submission(&m);
    assert_eq!(
        recorded(&m).len(),
        one_submission_events(&m).len(),
        "both switches on again"
    );
}

/// The driver registers its provider once for the process (one copy of the driver serves
/// every machine, the image's statics as the Linux build's); Unload ends it with the last
/// machine's unload, so this machine's Unload leaves it to the others.
#[test]
fn ddi_04_the_provider_is_registered_while_the_driver_is_loaded() {
    let _s = serial();
    let mut m = recording(Some(Enable::all(RVGPU_KMD)), |_| {});
    assert_eq!(rvgpu_simos::etw::registrations(RVGPU_KMD), 1);
    let r = m.stop_adapter(0);
    ok(&m, r);
    let r = m.remove_adapter(0);
    ok(&m, r);
    let r = m.unload();
    ok(&m, r);
    assert!(rvgpu_simos::etw::registrations(RVGPU_KMD) <= 1);
}

/// The image's ETW imports keep Windows' rules (24H2 `EtwpRegisterKMProvider`, the
/// `EtwWriteTransfer` page): the security provider and a context without a callback are
/// refused, an unknown handle or more than 128 descriptors is refused, malformed metadata is
/// the session's decode error and nothing else. Only against the image (the rerun).
#[test]
fn ddi_04_the_images_etw_imports_refuse_what_windows_refuses() {
    let _s = serial();
    let m = recording(None, |_| {});
    let guid = rvgpu_simos::etw::Guid {
        Data1: 0x1234_5678,
        Data2: 1,
        Data3: 2,
        Data4: [3; 8],
    };
    let security = rvgpu_simos::etw::Guid {
        Data1: 0x5484_9625,
        Data2: 0x5478,
        Data3: 0x4994,
        Data4: [0xa5, 0xba, 0x3e, 0x3b, 0x03, 0x28, 0xc3, 0x0d],
    };
    let mut handle = u64::MAX;
    let call = |name: &str, args: &[u64]| m.call_pe_import(name, Irql::Passive, args);
    let out = std::ptr::addr_of_mut!(handle) as u64;
    let Some(r) = call(
        "EtwRegister",
        &[std::ptr::addr_of!(security) as u64, 0, 0, out],
    ) else {
        let pe = std::env::var("RVGPU_DRIVER").is_ok_and(|d| d == "pe");
        assert!(!pe, "the image imports EtwRegister");
        return; // the Linux build has no imports
    };
    assert_eq!(r.ok(), Some(0xC000_0022), "the security provider");
    assert_eq!(handle, 0, "RegHandle is cleared first");
    let g = std::ptr::addr_of!(guid) as u64;
    let r = call("EtwRegister", &[g, 0, 0x10, out]).unwrap();
    assert_eq!(r.ok(), Some(0xC000_000D), "a context without a callback");
    let r = call("EtwRegister", &[g, 0, 0, out]).unwrap();
    assert_eq!(r.ok(), Some(0));
    assert_ne!(handle, 0);
    m.etw_enable(Enable::all(guid));
    let desc = [0u64, 0x0B << 24 | 4 << 32, 0];
    let d = desc.as_ptr() as u64;
    let prov = [4u8, 0, b'P', 0];
    let bad = [9u8, 0, 0, b'E'];
    let data: Vec<u64> = [(&prov[..], 2u64), (&bad[..], 1)]
        .iter()
        .flat_map(|(b, kind)| [b.as_ptr() as u64, b.len() as u64 | kind << 32])
        .collect();
    let p = data.as_ptr() as u64;
    let r = call("EtwWriteTransfer", &[0xDEAD, d, 0, 0, 2, p]).unwrap();
    assert_eq!(r.ok(), Some(0xC000_0008), "an unknown handle");
    let r = call("EtwWriteTransfer", &[handle, d, 0, 0, 129, p]).unwrap();
    assert_eq!(r.ok(), Some(0xC000_000D), "more than 128 descriptors");
    let r = call("EtwWriteTransfer", &[handle, d, 0, 0, 2, p]).unwrap();
    assert_eq!(r.ok(), Some(0));
    assert_eq!(m.etw().errors().len(), 1, "{:?}", m.etw().errors());
    assert!(m.etw().events().is_empty());
    no_fault(&m);
    let r = call("EtwUnregister", &[handle]).unwrap();
    assert_eq!(r.ok(), Some(0));
    let r = call("EtwUnregister", &[handle]).unwrap();
    assert_eq!(r.ok(), Some(0xC000_0008), "unregistered twice");
}

/// A pointer the image passes to its ETW imports is not trusted: one it cannot read is the
/// page fault Windows takes in the routine (bug check 0x50 naming the address), not a crash of
/// the host. Only against the image (the rerun).
#[test]
fn ddi_04_an_unreadable_event_descriptor_is_a_page_fault_bug_check() {
    let _s = serial();
    let m = recording(None, |_| {});
    let mut handle = 0u64;
    let guid = rvgpu_simos::etw::Guid {
        Data1: 0x1234_5678,
        Data2: 1,
        Data3: 2,
        Data4: [4; 8],
    };
    let g = std::ptr::addr_of!(guid) as u64;
    let out = std::ptr::addr_of_mut!(handle) as u64;
    let call = |name: &str, args: &[u64]| m.call_pe_import(name, Irql::Passive, args);
    if call("EtwRegister", &[g, 0, 0, out]).is_none() {
        return; // the Linux build has no imports
    }
    assert_ne!(handle, 0);
    // Page 1 is never mapped in a process.
    let wild = 0x1008u64;
    let _ = call("EtwWriteTransfer", &[handle, wild, 0, 0, 0, 0]);
    let b = m.bugcheck().expect("a page fault bug check");
    assert_eq!(b.code, 0x50, "{b:?}");
    assert_eq!(b.params[0], wild, "{b:?}");
}

against_the_pe_image!();
