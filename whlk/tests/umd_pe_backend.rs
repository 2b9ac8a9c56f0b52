//! `--backend kmt-sim --umd pe`: the cases over the shipped `rvgpu_umd.dll` in the x86-64
//! emulator: the case's application through the DLL's C API, the harness watching and steering
//! the simulated OS and device around it. Nothing fails; what neither can do is skipped with
//! the reason.

#![cfg(target_os = "linux")]

use rvgpu_whlk::backend::kmt::dll::DllBackend;
use rvgpu_whlk::backend::{Backend, Capability};
use rvgpu_whlk::case::Outcome;
use rvgpu_whlk::{cases, junit, runner};

#[test]
fn the_dll_backend_passes_or_skips_every_case_with_the_missing_piece() {
    let b = DllBackend::new(None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        b.capabilities().iter().collect::<Vec<_>>(),
        [
            Capability::Fences,
            Capability::UserModeSubmission,
            Capability::KmdCaps,
            Capability::UmdFences,
            Capability::FenceLogs,
            Capability::Tdr,
            Capability::OsTrace,
            Capability::OsControl,
            Capability::FaultInjection,
            Capability::BugChecks,
            Capability::ConfiguredMachine,
            Capability::AllocationUsage,
            Capability::NativeFences,
            Capability::KernelModeTesting,
        ]
    );
    let all = cases::all();
    let reports = runner::run_all(&runner::select(&all, None), &b);
    let failed: Vec<String> = reports
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Fail(_)))
        .map(|r| format!("{}: {}", r.name, r.outcome.reason()))
        .collect();
    assert!(failed.is_empty(), "failed cases:\n{}", failed.join("\n"));
    // Kernel-mode and user-mode queues, GPU waits and signals on native fences, CPU waits,
    // tracked buffers: all through the C API.
    for name in [
        "Adapter.StartStop",
        "Adapter.TwoAdapters",
        "UserModeSubmission.BothPathsTogether",
        "UserModeSubmission.SubmitOrderAndProgressFence",
        "UserModeSubmission.ReconnectAndRetry",
        "UserModeSubmission.GlobalDoorbell",
        "Tdr.ComputeHangCopyRuns",
        "Tdr.GuiltyDeviceAborted",
        "NativeFence.CpuWaitsThreaded",
        "NativeFence.CpuSignalReleasesGpuWaitThreaded",
        "NativeFence.DestroyAbandonsWaitThreaded",
        "Allocation.DiscardRenamesBusyBuffer",
        "Allocation.DoNotWaitOnBusyBuffer",
        "Allocation.DestroyWhileInUse",
        // The OS's records and controls around the application.
        "Adapter.DriverCaps",
        "UserModeSubmission.NodeMetadataAndCaps",
        "UserModeSubmission.DoorbellVictimisationWalkthrough",
        "UserModeSubmission.SuspendResume",
        "UserModeSubmission.D3AndBack",
        "UserModeSubmission.DeviceLossAbortsAndRecreate",
        // Queues made and destroyed by three threads at once.
        "UserModeSubmission.ThreadedChurn",
        // The OS's fence logs of a queue the DLL made.
        "Logs.EveryUserQueueHasBothLogs",
        // The kernel-mode testing interface beside the DLL.
        "Neutral.FillCopyReadBack",
    ] {
        let r = reports.iter().find(|r| r.name == name).expect("the case");
        assert_eq!(r.outcome, Outcome::Pass, "{name}");
    }
    // What the OS maps for the GPU alone is skipped, naming the capability.
    let r = reports
        .iter()
        .find(|r| r.name == "NativeFence.MonitoredValueTracksWaiters")
        .expect("the case");
    assert!(
        matches!(&r.outcome, Outcome::Skip(m) if m.contains("FenceInternals")),
        "{:?}",
        r.outcome
    );
    let passed = reports
        .iter()
        .filter(|r| r.outcome == Outcome::Pass)
        .count();
    assert!(passed >= 33, "{passed} cases passed");
    let xml = junit::render(b.name(), &reports);
    for r in &reports {
        if let Outcome::Skip(why) = &r.outcome {
            assert!(!why.is_empty(), "{}: skipped without a reason", r.name);
        }
    }
    assert!(xml.contains("kmt-sim-umd-pe"), "{xml}");
}
