//! The Windows backend's code (`backend::kmt::KmtBackend`) over the simulated thunks: the same
//! adapter discovery, buffers, queues, submissions, fences and waits the Windows executable performs
//! through gdi32, run here against the driver on the emulated GPU. Every case passes or is
//! skipped with a reason; none fails, and the cases a D3DKMT program can observe pass.

use std::time::Duration;

use rvgpu_whlk::backend::kmt::sim::SimPlatform;
use rvgpu_whlk::backend::kmt::KmtBackend;
use rvgpu_whlk::backend::Session;
use rvgpu_whlk::backend::{
    Backend, Capability, ExecMode, Failure, NewFence, NewQueue, ProcessEnd, SessionConfig,
    WaitResult, Work,
};
use rvgpu_whlk::case::Outcome;
use rvgpu_whlk::junit;

mod support;

/// The Windows the simulated machines play is the process's (`rvgpu_whlk::os`): the test that
/// turns hardware scheduling off holds this, and so does every other test here.
static MACHINE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn machine() -> std::sync::MutexGuard<'static, ()> {
    MACHINE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The cases with a KMD form (`cases::tdr::kmd`), which run only on a node the OS schedules.
const KMD_FORMS: [&str; 8] = [
    "Tdr.LastCompletedFence",
    "Tdr.ResetSequence",
    "Tdr.AbortedFenceInRange",
    "Tdr.CollectDbgInfoLevelZero",
    "Tdr.ResetFailsPromoted",
    "Tdr.PagingPromotesAdapterReset",
    "Tdr.PagingResubmitOrder",
    "Tdr.CompletedBeforeReset",
];

/// The capabilities only the KMD forms use, proven by the second pass.
const SECOND_PASS: [Capability; 3] = [
    Capability::DmaContexts,
    Capability::KmdJournal,
    Capability::KmdFaults,
];

/// Whether a case that passed in `reports` needs `c` (or, for the KMD's test hooks, uses it in
/// its KMD form).
fn proven(reports: &[rvgpu_whlk::runner::CaseReport], c: Capability) -> bool {
    let all = rvgpu_whlk::cases::all();
    reports.iter().any(|r| {
        r.outcome == Outcome::Pass
            && all.iter().any(|k| {
                k.name == r.name
                    && (k.needs.contains(&c)
                        || (matches!(c, Capability::KmdJournal | Capability::KmdFaults)
                            && k.optional.contains(&c)))
            })
    })
}
/// A threaded session of the D3DKMT backend over the simulated thunks, its driver loaded and
/// adapter 0 started.
fn started_session() -> Box<dyn Session> {
    let b = KmtBackend::new(SimPlatform);
    let mut s = (&b as &dyn Backend)
        .open(&SessionConfig::new(ExecMode::Threaded))
        .expect("session");
    s.load_driver().expect("load");
    s.start_adapter(0).expect("start");
    s
}

#[test]
fn kmt_backend_passes_or_skips_every_case() {
    let _m = machine();
    let b = KmtBackend::new(SimPlatform);
    assert_eq!(
        b.capabilities().iter().collect::<Vec<_>>(),
        [
            Capability::Fences,
            Capability::MonitoredFences,
            Capability::CrossAdapterFences,
            Capability::UserModeSubmission,
            Capability::KmdCaps,
            Capability::UmdBypass,
            Capability::UmdFences,
            Capability::Tdr,
            Capability::DmaContexts,
            Capability::AllocationUsage,
            Capability::GpuVaPlacement,
            Capability::NativeFences,
            Capability::KernelModeTesting,
            Capability::KmdJournal,
            Capability::KmdFaults
        ],
        "a D3DKMT program offers native and monitored fences, user-mode submission, the KMD's \
         caps, the UMD's native fences, the machine's own TDR, DMA contexts, the UMD's tracked \
         buffers, the GPU VA thunks, native fences, the kernel-mode testing escape and the \
         KMD's test hooks"
    );
    // What user mode can observe runs and passes, monitored fences signalled and waited on by
    // the CPU and by user-mode queues too.
    let reports = support::run_every_case(
        &b,
        support::USER_MODE_CASES.iter().copied().chain([
            "MonitoredFence.GpuSignalThreaded",
            "MonitoredFence.CpuWaitGpuSignal",
            "NativeFence.PackedStorage",
            "NativeFence.MonitoredValueTracksWaiters",
            "NativeFence.CpuWaitGpuSignal",
            "NativeFence.NoWaiterNoInterrupt",
            "NativeFence.DestroyWithQueuedSignal",
            "NativeFence.CpuSignalReleasesGpuWait",
            "NativeFence.CrossAdapterNotificationOnly",
            "UserModeSubmission.UserQueueRefusesKernelPath",
            "UserModeSubmission.NormalExit",
            "UserModeSubmission.AbnormalExit",
            "Tdr.PerEngineCaps",
            "Tdr.ComputeHangCopyRuns",
            "Tdr.GuiltyDeviceAborted",
            "Tdr.UserModeTrafficSurvives",
            "DeviceLoss.GuiltyDevice",
            "DeviceLoss.BystanderEngineReset",
            "DeviceLoss.IdleDevice",
            "DeviceLoss.SiblingDevice",
            "DeviceLoss.AdapterResetEveryDevice",
            "DeviceLoss.SharedFenceAcrossProcesses",
            "DeviceLoss.KillWhileHung",
        ]),
    );
    // What the backend claims (on Windows as here: the list is the backend's, the platform
    // only answers whether the OS enabled native fences) is what a Windows machine can have and
    // what its code does: each claimed capability with a trait is needed by a case that passes.
    // The KMD's test hooks are the KMD form of cases with two forms, which need a node the OS
    // schedules: they pass in the second pass (hardware scheduling off), which proves them.
    assert!(!b.capabilities().contains(Capability::TdrTrace));
    for c in b.capabilities().iter() {
        assert!(
            c.windows_possible(),
            "the D3DKMT backend claims {c}, simulation only"
        );
        if matches!(c, Capability::NativeFences) || SECOND_PASS.contains(&c) {
            continue;
        }
        assert!(
            proven(&reports, c),
            "the D3DKMT backend claims {c}, but no case needing it passes"
        );
    }
    // With hardware scheduling on, as `HwSchMode` has it for the whole boot, the KMD forms
    // are skipped naming the setting.
    for name in KMD_FORMS {
        let r = reports.iter().find(|r| r.name == name).expect(name);
        assert!(
            matches!(&r.outcome, Outcome::Skip(m) if m.contains("HwSchMode = 1")),
            "{name}: {:?}",
            r.outcome
        );
    }
    // What user mode cannot see is skipped, naming the capability it needs, not failed or
    // dropped.
    for (name, why) in [
        ("NativeFence.CrossAdapterScenario1", "OsTrace"),
        ("NativeFence.HandleLifetimes", "DirectDdi"),
        (
            "UserModeSubmission.RingAllocationsReferenced",
            "ConfiguredMachine",
        ),
    ] {
        let r = reports
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no case {name}"));
        assert!(
            matches!(&r.outcome, Outcome::Skip(m) if m.contains(why)),
            "{name}: {:?}",
            r.outcome
        );
    }
    // The runner skips by capability, before a session opens: no method of this backend
    // answers `Unsupported` at run time. Only the KMD forms see the machine's setting, and
    // only cases asking for another device (the runbook's device passes) or an OS without
    // native fences (its second pass) see the machine's device or OS.
    for r in &reports {
        if let Outcome::Skip(why) = &r.outcome {
            assert!(
                why.starts_with("needs capability")
                    || KMD_FORMS.contains(&r.name)
                    || why.starts_with("needs a device started as `rvgpu-vfu")
                    || why.starts_with("needs a machine whose OS enables no native fences"),
                "{}: {why}",
                r.name
            );
        }
    }
    // Every skip says why, in the table and in the JUnit report.
    let xml = junit::render(b.name(), &reports);
    for r in &reports {
        if let Outcome::Skip(why) = &r.outcome {
            assert!(!why.is_empty(), "{}: skipped without a reason", r.name);
        }
    }
    assert!(xml.contains("<skipped message="), "{xml}");
    assert!(xml.contains("kmt-sim"), "{xml}");
}

/// TDR-04..06, TDR-09, TDR-01: the runbook's second pass (docs/test-machine.md §8). With
/// hardware scheduling off for the whole machine (`HwSchMode` = 1, here `--hwsch off`) the OS
/// enables no native fences; the backend still offers what needs none, the KMD forms pass on
/// the nodes the OS now schedules, proving the DMA contexts and test hooks the backend claims,
/// and everything needing a user-mode queue is skipped naming why, never failed.
#[test]
fn tdr_05_the_second_pass_runs_the_kmd_forms_with_hardware_scheduling_off() {
    let _m = machine();
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            rvgpu_whlk::os::set(rvgpu_whlk::os::OsUnderTest::default());
        }
    }
    let _restore = Restore;
    rvgpu_whlk::os::set(rvgpu_whlk::os::OsUnderTest {
        hwsch: false,
        ..Default::default()
    });
    let b = KmtBackend::new(SimPlatform);
    let caps = b.capabilities();
    assert!(!caps.contains(Capability::NativeFences));
    for c in [
        Capability::UserModeSubmission,
        Capability::Tdr,
        Capability::DmaContexts,
        Capability::KmdJournal,
        Capability::KmdFaults,
    ] {
        assert!(
            caps.contains(c),
            "without native fences the backend lacks {c}"
        );
    }
    let reports = support::run_every_case(&b, KMD_FORMS);
    for c in SECOND_PASS {
        assert!(proven(&reports, c), "no case needing {c} passes");
    }
    // A case that reaches a user-mode queue is skipped saying why there is none.
    for name in ["Tdr.NodesAndAffinity", "Tdr.ComputeHangCopyRuns"] {
        let r = reports.iter().find(|r| r.name == name).expect(name);
        assert!(
            matches!(&r.outcome, Outcome::Skip(m) if m.contains("hardware scheduling off")),
            "{name}: {:?}",
            r.outcome
        );
    }
}

/// UM-17, UM-18: a case's second process is another process (over the simulated thunks, one of
/// the simulated OS's, served on a thread through the protocol the Windows backend speaks to
/// its child `rvgpu-whlk`): its buffers and queues work through the requests; what is not
/// forwarded is refused as unsupported, never done in this program's process; killed, its
/// objects are gone and the first process goes on.
#[test]
fn um_18_a_cases_second_process_is_another_process_and_dies_with_its_objects() {
    let _m = machine();
    let mut s = started_session();
    let u = s.ums().expect("user-mode submission");
    let p0 = u.open_process(0).expect("first process");
    let p1 = u.open_process(0).expect("second process");
    let b0 = u.create_buffer(p0, 4096).expect("buffer of the first");
    let b1 = u.create_buffer(p1, 4096).expect("buffer of the second");
    let q1 = u.create_queue(p1, NewQueue::user_mode(0)).expect("queue");
    let fill = |dst, offset, pattern| Work::Fill {
        dst,
        offset,
        bytes: 8,
        pattern,
    };
    let v = u.submit(q1, &[fill(b1, 0, 0x55)]).expect("submit");
    assert_eq!(u.wait_progress(q1, v), Ok(WaitResult::Satisfied));
    assert_eq!(u.read_buffer(b1, 0), Ok(0x55), "the second process's fill");
    u.write_buffer(b1, 8, 7).expect("write");
    assert_eq!(u.read_buffer(b1, 8), Ok(7));
    assert!(u.queue_info(q1).expect("info").completed >= v);
    let not_forwarded = s.gpu_va().expect("GPU VA").reserve_va(p1, 0, 4096);
    assert!(
        matches!(&not_forwarded, Err(Failure::Unsupported(m)) if m.contains("another process")),
        "{not_forwarded:?}"
    );
    let u = s.ums().expect("user-mode submission");
    u.end_process(p1, ProcessEnd::Abnormal).expect("kill");
    assert!(u.read_buffer(b1, 0).is_err(), "the killed process's buffer");
    assert!(
        u.submit(q1, &[fill(b1, 0, 1)]).is_err(),
        "the killed process's queue"
    );
    let q0 = u.create_queue(p0, NewQueue::user_mode(0)).expect("queue");
    let v = u.submit(q0, &[fill(b0, 0, 0x66)]).expect("submit");
    assert_eq!(u.wait_progress(q0, v), Ok(WaitResult::Satisfied));
    assert_eq!(u.read_buffer(b0, 0), Ok(0x66), "the first process goes on");
}

/// The process server answers every request with one line: a malformed or out-of-range
/// request is an `err` (never a panic or a half-done change), a failed thunk a `status`, and
/// nothing after `exit` is served.
#[test]
fn process_server_answers_bad_requests_with_errors_and_stops_at_exit() {
    let _m = machine();
    use rvgpu_whlk::backend::kmt::{remote, KmtPlatform};
    let mut m = SimPlatform
        .open(&SessionConfig::new(ExecMode::Threaded))
        .expect("machine");
    let kmt = m.open_device(0).expect("device");
    let requests = [
        "buffer 0 1000",
        "write 0 8 2a",
        "read 0 8",
        "read 0 1000",
        "read 0 zz",
        "read 7 0",
        "write 0 4 1",
        "submit 3 1",
        "queue 1 0 user",
        "submit 1 ffffffffffffffff",
        "buffer 2 ffffffffffffffff",
        "fsignal 5 1",
        "fence 4 123",
        "churn zz",
        "churn 0.1",
        "churn 0.1.1:ffffffffffffffff",
        "churn 0.1.0 0.2.0",
        "bogus",
        "exit",
        "read 0 8",
    ];
    let mut out = Vec::new();
    remote::serve(kmt, requests.join("\n").as_bytes(), &mut out);
    let answers: Vec<String> = String::from_utf8(out)
        .expect("text")
        .lines()
        .map(str::to_owned)
        .collect();
    let kinds: Vec<&str> = answers
        .iter()
        .map(|a| a.split_whitespace().next().unwrap_or(""))
        .collect();
    assert_eq!(
        answers.len(),
        19,
        "one answer per request up to exit: {answers:?}"
    );
    assert_eq!(answers[2], "ok 2a", "{answers:?}");
    // A churn request's lanes run on the server's threads: rounds done, kernel-mode rounds, no
    // error.
    assert_eq!(answers[16], "ok 1.0.- 2.0.-", "{answers:?}");
    assert_eq!(
        kinds,
        [
            "ok", "ok", "ok", "err", "err", "err", "err", "err", "ok", "err", "status", "err",
            "status", "err", "err", "err", "ok", "err", "ok"
        ],
        "{answers:?}"
    );
}

/// NF-13 across processes: a shareable native fence of the case's first process (this
/// program) opened by its second, another process, from the NT handle `D3DKMTShareObjects`
/// gave and that was duplicated into it; a CPU signal in either releases a CPU wait in the
/// other, and the second destroying its instance leaves the first's working.
#[test]
fn nf_13_a_native_fence_shared_by_nt_handle_is_signalled_and_waited_on_in_another_process() {
    let _m = machine();
    const LONG: Duration = Duration::from_secs(5);
    let mut s = started_session();
    let f = s.fences().expect("fences");
    let mine = f
        .create_native_fence(NewFence::new(0, 1).shareable())
        .expect("a shareable fence of the first process");
    let theirs = f
        .open_native_fence(mine, 2)
        .expect("opened in the second process");
    assert_eq!(
        f.cpu_wait(theirs, 1, Duration::from_millis(1)),
        Ok(WaitResult::TimedOut),
        "a wait in the second process before any signal"
    );
    f.cpu_signal(mine, 1).expect("signal in the first");
    assert_eq!(f.cpu_wait(theirs, 1, LONG), Ok(WaitResult::Satisfied));
    let e = f.cpu_wait_event(mine, 3).expect("wait in the first");
    f.cpu_signal(theirs, 3).expect("signal in the second");
    assert_eq!(f.event_result(e, LONG), Some(WaitResult::Satisfied));
    let e = f.cpu_wait_event(theirs, 5).expect("wait in the second");
    f.cpu_signal(mine, 5).expect("signal in the first");
    assert_eq!(f.event_result(e, LONG), Some(WaitResult::Satisfied));
    f.destroy_native_fence(theirs)
        .expect("destroyed in the second");
    f.cpu_signal(mine, 6)
        .expect("the first's instance after it");
    assert_eq!(f.cpu_wait(mine, 6, LONG), Ok(WaitResult::Satisfied));
}

/// NF-13: each fence opened in another process is known there by the number the seam records
/// it under: two fences of the first process opened in the second (one also in the third),
/// the earlier-opened instance destroyed first, then one more opened there; every signal and
/// wait reaches its own fence, and no number is given twice in a process.
#[test]
fn nf_13_fences_opened_in_other_processes_keep_their_own_numbers_when_destroyed_out_of_order() {
    const LONG: Duration = Duration::from_secs(5);
    const SHORT: Duration = Duration::from_millis(1);
    let mut s = started_session();
    let f = s.fences().expect("fences");
    let a = f
        .create_native_fence(NewFence::new(0, 1).shareable())
        .expect("fence a of the first process");
    let b = f
        .create_native_fence(NewFence::new(0, 1).shareable())
        .expect("fence b of the first process");
    let a2 = f.open_native_fence(a, 2).expect("a opened in the second");
    let b2 = f.open_native_fence(b, 2).expect("b opened in the second");
    let a3 = f.open_native_fence(a, 3).expect("a opened in the third");
    f.destroy_native_fence(a2)
        .expect("a's instance in the second, destroyed before b's");
    f.cpu_signal(a, 1).expect("a to 1 in the first");
    assert_eq!(
        f.cpu_wait(a3, 1, LONG),
        Ok(WaitResult::Satisfied),
        "a in the third"
    );
    assert_eq!(
        f.cpu_wait(b2, 1, SHORT),
        Ok(WaitResult::TimedOut),
        "b in the second answered for another fence"
    );
    f.cpu_signal(b2, 2).expect("b to 2 in the second");
    assert_eq!(
        f.cpu_wait(b, 2, LONG),
        Ok(WaitResult::Satisfied),
        "b in the first"
    );
    assert_eq!(
        f.cpu_wait(a, 2, SHORT),
        Ok(WaitResult::TimedOut),
        "b's signal in the second reached a"
    );
    let again = f
        .open_native_fence(a, 2)
        .expect("a opened again in the second, after the destroy");
    assert_eq!(f.cpu_wait(again, 1, LONG), Ok(WaitResult::Satisfied));
    for (g, what) in [
        (b2, "b in the second"),
        (a3, "a in the third"),
        (again, "a again"),
    ] {
        f.destroy_native_fence(g).expect(what);
    }
}
