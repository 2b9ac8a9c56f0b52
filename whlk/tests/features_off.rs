//! Native fences off, as on a stock Windows (`rvgpu_whlk::os`, BR-110..112): on 26H1, which
//! does not support `DXGK_FEATURE_NATIVE_FENCE`, and on 24H2 with the INF's `Features` values
//! removed, the driver starts with hardware scheduling only; every case that needs no native
//! fence (kernel-mode submission, monitored fences, TDR, allocations) ends as it does with
//! native fences on, and every case that needs them is skipped with the reason.

use rvgpu_simos::Windows;
use rvgpu_whlk::backend::kmt::{sim::SimPlatform, KmtBackend};
use rvgpu_whlk::backend::sim::SimBackend;
use rvgpu_whlk::backend::{Backend, Capability};
use rvgpu_whlk::case::Outcome;
use rvgpu_whlk::os::{self, OsUnderTest};
use rvgpu_whlk::{cases, runner};

/// Every case's outcome on `backend` under `os`.
fn outcomes(os: OsUnderTest, backend: &dyn Backend) -> Vec<Outcome> {
    os::set(os);
    let all = cases::all();
    runner::run_all(&runner::select(&all, None), backend)
        .into_iter()
        .map(|r| r.outcome)
        .collect()
}

/// Checks `off` (native fences off, skipped with a reason containing `why`) against `on`;
/// returns how many cases passed with them off. Not `strict`: a backend whose other
/// capabilities rest on native fences may skip more, for the same reason.
fn check(on: &[Outcome], off: &[Outcome], why: &str, strict: bool) -> usize {
    let features = os::enabled_features().expect("the adapter starts");
    let names: Vec<&str> = features.iter().map(|(n, _)| *n).collect();
    // Kernel-mode testing depends on no other feature, so it stays.
    assert_eq!(
        names,
        ["HWSCH", "KERNEL_MODE_TESTING"],
        "enabled: {features:?}"
    );
    let mut passed = 0;
    for ((case, on), off) in cases::all().iter().zip(on).zip(off) {
        if case.needs.contains(&Capability::NativeFences) {
            match off {
                Outcome::Skip(reason) if matches!(on, Outcome::Skip(_)) || reason.contains(why) => {
                }
                other => panic!("{}: {other:?}, expected a skip for `{why}`", case.name),
            }
        } else {
            let same_reason = matches!(off, Outcome::Skip(r) if r.contains(why));
            // A case whose form needs an OS without native fences runs only here.
            let only_off = *off == Outcome::Pass
                && matches!(on, Outcome::Skip(r)
                    if r.starts_with("needs a machine whose OS enables no native fences"));
            assert!(
                off == on || !strict && same_reason || only_off,
                "{}: {off:?}",
                case.name
            );
            passed += usize::from(*off == Outcome::Pass);
        }
    }
    passed
}

#[test]
fn native_fences_off_every_case_without_them_passes_and_the_rest_skip_with_the_reason() {
    let on_26h1 = OsUnderTest {
        windows: Windows::W26H1,
        ..OsUnderTest::default()
    };
    let values_removed = OsUnderTest {
        windows: Windows::W24H2,
        inf_features: false,
        ..OsUnderTest::default()
    };
    let sim_on = outcomes(OsUnderTest::default(), &SimBackend);
    assert!(sim_on.iter().all(|o| *o == Outcome::Pass), "{sim_on:?}");

    let off = outcomes(on_26h1, &SimBackend);
    let passed = check(&sim_on, &off, "Windows 26H1 does not support them", true);
    // Kernel-mode submission, monitored fences, TDR, allocations: more than a third.
    assert!(passed >= 20, "only {passed} cases passed");
    let off = outcomes(values_removed, &SimBackend);
    assert_eq!(
        check(&sim_on, &off, "without the INF's Features\\37", true),
        passed
    );

    // The Windows backend's code over the simulated thunks skips the same way.
    let kmt = KmtBackend::new(SimPlatform);
    let kmt_on = outcomes(OsUnderTest::default(), &kmt);
    let off = outcomes(on_26h1, &kmt);
    check(&kmt_on, &off, "Windows 26H1 does not support them", false);
    os::set(OsUnderTest::default());
}
