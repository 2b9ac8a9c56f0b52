//! `--backend kmt-sim --umd pe`: the cases over the shipped `rvgpu_umd.dll` in the x86-64
//! emulator: the case's application through the DLL's C API, the harness watching and steering
//! the simulated OS and device around it. Nothing fails; what neither can do is skipped with
//! the reason.

#![cfg(target_os = "linux")]

use rvgpu_whlk::backend::dll::DllBackend;
use rvgpu_whlk::backend::{Backend, Capability};
use rvgpu_whlk::case::Outcome;
use rvgpu_whlk::junit;

mod support;

#[test]
fn the_dll_backend_passes_or_skips_every_case_with_the_missing_piece() {
    let b = DllBackend::new(None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        b.capabilities().iter().collect::<Vec<_>>(),
        [
            Capability::Fences,
            Capability::MonitoredFences,
            Capability::FenceInternals,
            Capability::CrossAdapterFences,
            Capability::UserModeSubmission,
            Capability::KmdCaps,
            Capability::EngineIdle,
            Capability::UmdFences,
            Capability::FenceLogs,
            Capability::Tdr,
            Capability::DmaContexts,
            Capability::TdrTrace,
            Capability::OsTrace,
            Capability::OsControl,
            Capability::Paging,
            Capability::FaultInjection,
            Capability::StepMode,
            Capability::BugChecks,
            Capability::ConfiguredMachine,
            Capability::AllocationUsage,
            Capability::GpuVaPlacement,
            Capability::NativeFences,
            Capability::KernelModeTesting,
            Capability::KmdJournal,
            Capability::KmdFaults,
        ]
    );
    // What user mode observes, all through the C API; and besides:
    let also = [
        "UserModeSubmission.ReconnectAndRetry",
        "UserModeSubmission.GlobalDoorbell",
        "Tdr.ComputeHangCopyRuns",
        "Tdr.GuiltyDeviceAborted",
        // The OS's records and controls around the application.
        "Adapter.DriverCaps",
        "UserModeSubmission.NodeMetadataAndCaps",
        "UserModeSubmission.DoorbellVictimisationWalkthrough",
        "UserModeSubmission.SuspendResume",
        "UserModeSubmission.D3AndBack",
        "UserModeSubmission.DeviceLossAbortsAndRecreate",
        // Each kind of device loss, the adapter-wide one forced by the OS around the
        // application.
        "DeviceLoss.GuiltyDevice",
        "DeviceLoss.BystanderEngineReset",
        "DeviceLoss.IdleDevice",
        "DeviceLoss.AdapterResetEveryDevice",
        "DeviceLoss.SharedFenceAcrossProcesses",
        "DeviceLoss.KillWhileHung",
        // A second `rvgpu_open_adapter` in the guilty application's process: a device of its
        // own, untouched by the first's loss.
        "DeviceLoss.SiblingDevice",
        // Legacy monitored fences on a D3D device of the application's own beside the DLL's,
        // signalled by fence-write packets of its DLL queues.
        "MonitoredFence.GpuSignalThreaded",
        // A fence shared with a process on the second adapter (rvgpu_fence_share and
        // rvgpu_fence_open there).
        "NativeFence.CrossAdapterNotificationOnly",
        "NativeFence.CrossAdapterScenario1",
        // Queues made and destroyed by three threads at once.
        "UserModeSubmission.ThreadedChurn",
        // The OS's fence logs of a queue the DLL made, and the timeline joined with what
        // the application reads back (rvgpu_queue_read_fence_log).
        "Logs.EveryUserQueueHasBothLogs",
        "Logs.Timeline",
        "Logs.RecreateLogMidRun",
        "Logs.SharedFenceHandlesPerProcess",
        // Step mode: the harness runs the rounds, the DLL's waits run them on their thread.
        "Logs.CpuWaitReleasedFromSignalLog",
        "Logs.OverflowFallsBackToScan",
        "UserModeSubmission.EngineF1",
        // The OS's records of the application's fences and of recovery; step mode's
        // event-form waits are rvgpu_fence_wait_async on the application's event.
        "NativeFence.PackedStorage",
        "NativeFence.MonitoredValueTracksWaiters",
        "Tdr.UserModeTrafficSurvives",
        // Buffer pages at a GPU VA the application chose.
        "GpuVa.MapSubRangeAtChosenVaThenFree",
        // The kernel-mode testing interface beside the DLL.
        "Neutral.FillCopyReadBack",
        // Kernel-mode DMA contexts (rvgpu_context_*, D3DKMTSubmitCommand), VidSch's fence
        // IDs read from the OS's record.
        "Tdr.PagingResubmitOrder",
        "Tdr.ResetSequence",
        "Tdr.AbortedFenceInRange",
        "Tdr.CompletedBeforeReset",
        "Tdr.PagingPromotesAdapterReset",
        // The KMD form beside the DLL (no direct DDI calls): the KMD's journal and armed
        // faults through its test hooks, on the runbook's test machine (TestHooks = 1).
        "Tdr.CollectDbgInfoLevelZero",
        "Tdr.LastCompletedFence",
        "Tdr.ResetFailsPromoted",
        // A misbehaving driver belongs to the machine, not to the client: the OS refuses to
        // start one that claims per-engine reset without DxgkDdiResetEngine, and halts on one
        // misreporting the aborted fence of a DLL's DMA context, or whose ISR reports a bad
        // fence or calls a PASSIVE callback (those two need no application at all).
        "Tdr.PerEngineCaps",
        "Simulation.BugcheckOnBadAbortedFence",
        "Simulation.BugcheckOnBadFenceHandle",
        "Simulation.IrqlEnforcedCallback",
    ];
    let reports = support::run_every_case(&b, support::USER_MODE_CASES.iter().copied().chain(also));
    // Where the OS gives user-mode queues their progress fence (the pages) every batch of the
    // DLL's queues interrupts, so the cases that count a fence signal's interrupts are skipped
    // with that reason; where it gives none (24H2, the default) a batch ends with a
    // conditional signal, and they run.
    let r = reports
        .iter()
        .find(|r| r.name == "NativeFence.NoWaiterNoInterrupt")
        .expect("the case");
    let counted = match rvgpu_simos::Windows::from_env().reading().ums_progress {
        rvgpu_simos::machine::answers::UmsProgress::None => {
            assert_eq!(r.outcome, Outcome::Pass, "{:?}", r.outcome);
            1
        }
        rvgpu_simos::machine::answers::UmsProgress::Given => {
            assert!(
                matches!(&r.outcome, Outcome::Skip(m) if m.contains("interrupting PROGRESS packet")),
                "{:?}",
                r.outcome
            );
            0
        }
    };
    let passed = reports
        .iter()
        .filter(|r| r.outcome == Outcome::Pass)
        .count();
    // Every case but the eight that need what neither the DLL nor a program beside it has
    // (docs/test-machine.md); the runbook's second pass adds none the first leaves.
    assert!(passed >= 70 + counted, "{passed} cases passed");
    let xml = junit::render(b.name(), &reports);
    for r in &reports {
        if let Outcome::Skip(why) = &r.outcome {
            assert!(!why.is_empty(), "{}: skipped without a reason", r.name);
        }
    }
    assert!(xml.contains("kmt-sim-umd-pe"), "{xml}");
}

/// UM-10 through the DLL: the guilty-device case passes when it is the only case run, with no
/// earlier case's session before it; its application learns of the abort on every guilty
/// queue, so that destroying them at the session's end waits for no hung batch and fails
/// nothing.
#[test]
fn um_10_guilty_device_aborted_passes_run_alone() {
    let b = DllBackend::new(None).unwrap_or_else(|e| panic!("{e}"));
    let all = rvgpu_whlk::cases::all();
    let only = rvgpu_whlk::runner::select(&all, Some("Tdr.GuiltyDeviceAborted"));
    assert_eq!(only.len(), 1);
    let reports = rvgpu_whlk::runner::run_all(&only, &b);
    assert_eq!(
        reports.iter().map(|r| &r.outcome).collect::<Vec<_>>(),
        [&Outcome::Pass],
        "{reports:?}"
    );
    assert_eq!(b.teardown_failures(), Vec::<String>::new());
}
