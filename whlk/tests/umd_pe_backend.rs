//! `--backend kmt-sim --umd pe`: the cases over the shipped `rvgpu_umd.dll` in the x86-64
//! emulator (its C API only). Nothing fails; what the C API cannot express is skipped with the
//! piece it misses, and the cases that need only the adapter pass.

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
            Capability::UserModeSubmission,
            Capability::AllocationUsage,
            Capability::NativeFences
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
    for name in ["Adapter.StartStop", "Adapter.TwoAdapters"] {
        let r = reports.iter().find(|r| r.name == name).expect("the case");
        assert_eq!(r.outcome, Outcome::Pass, "{name}");
    }
    // These reach the DLL (a process, buffers, a user-mode queue) before they need what the
    // C API lacks; the reason names it.
    for (name, why) in [
        ("UserModeSubmission.BothPathsTogether", "kernel-mode queue"),
        (
            "UserModeSubmission.SubmitOrderAndProgressFence",
            "GPU wait on a buffer word",
        ),
        ("Allocation.DoNotWaitOnBusyBuffer", "kernel-mode queue"),
    ] {
        let r = reports.iter().find(|r| r.name == name).expect("the case");
        assert!(
            matches!(&r.outcome, Outcome::Skip(m) if m.contains(why) && m.contains("C API")),
            "{name}: {:?}",
            r.outcome
        );
    }
    let xml = junit::render(b.name(), &reports);
    for r in &reports {
        if let Outcome::Skip(why) = &r.outcome {
            assert!(!why.is_empty(), "{}: skipped without a reason", r.name);
        }
    }
    assert!(xml.contains("kmt-sim-umd-pe"), "{xml}");
}
