//! Every harness case through the simulated backend: none may fail.

use rvgpu_whlk::backend::sim::SimBackend;
use rvgpu_whlk::case::Outcome;
use rvgpu_whlk::{cases, runner};

#[test]
fn every_case_passes_on_the_sim_backend() {
    let all = cases::all();
    let selected = runner::select(&all, None);
    let reports = runner::run_all(&selected, &SimBackend);
    let failed = runner::failures(&reports);
    assert!(failed.is_empty(), "failed cases:\n{}", failed.join("\n"));
    // The sim backend has every capability: nothing is skipped either.
    let skipped: Vec<&str> = reports
        .iter()
        .filter(|r| r.outcome != Outcome::Pass)
        .map(|r| r.name)
        .collect();
    assert!(skipped.is_empty(), "skipped cases: {skipped:?}");
}

#[test]
fn case_names_are_unique_and_well_formed() {
    let all = cases::all();
    let mut names: Vec<&str> = all.iter().map(|c| c.name).collect();
    assert!(names.iter().all(|n| n
        .split_once('.')
        .is_some_and(|(a, b)| !a.is_empty() && !b.is_empty())));
    names.sort_unstable();
    let n = names.len();
    names.dedup();
    assert_eq!(names.len(), n, "duplicate case names");
}
