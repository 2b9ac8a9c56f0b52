//! What the tests of the two user-mode backends (the D3DKMT program and the DLL) share.

use rvgpu_whlk::backend::Backend;
use rvgpu_whlk::case::Outcome;
use rvgpu_whlk::runner::{self, CaseReport};

/// Cases a user-mode program can drive and observe from start to end, so both user-mode
/// backends pass them: adapter discovery, both submission paths, work held behind a gate (a
/// native fence the CPU signals), native fences signalled and waited on by the CPU and by
/// user-mode queues, the UMD's tracked buffers, a child process's exit and kill as the program
/// that survives it sees them.
pub const USER_MODE_CASES: &[&str] = &[
    "Adapter.StartStop",
    "Adapter.TwoAdapters",
    "UserModeSubmission.BothPathsTogether",
    "UserModeSubmission.SubmitOrderAndProgressFence",
    "UserModeSubmission.NormalExit",
    "UserModeSubmission.AbnormalExit",
    "NativeFence.CpuWaitsThreaded",
    "NativeFence.CpuSignalReleasesGpuWaitThreaded",
    "NativeFence.DestroyAbandonsWaitThreaded",
    "Allocation.DiscardRenamesBusyBuffer",
    "Allocation.DoNotWaitOnBusyBuffer",
    "Allocation.DestroyWhileInUse",
    "Logs.EveryUserQueueHasBothLogs",
    "Logs.CpuWaitReleasedFromSignalLog",
    "Logs.SharedFenceHandlesPerProcess",
    "Logs.OverflowFallsBackToScan",
    "Logs.RecreateLogMidRun",
    "Logs.Timeline",
];

/// Runs every case on `b` and checks that none failed and that each of `passing` passed.
pub fn run_every_case<'a>(
    b: &dyn Backend,
    passing: impl IntoIterator<Item = &'a str>,
) -> Vec<CaseReport> {
    let all = rvgpu_whlk::cases::all();
    let reports = runner::run_all(&runner::select(&all, None), b);
    let failed = runner::failures(&reports);
    assert!(failed.is_empty(), "failed cases:\n{}", failed.join("\n"));
    for name in passing {
        let r = reports
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no case {name}"));
        assert_eq!(r.outcome, Outcome::Pass, "{name}");
    }
    reports
}
