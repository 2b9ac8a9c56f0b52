//! Runs cases: select (by name and requirement), skip what the backend cannot run, time, and
//! turn panics into failures; collects the GPU timelines cases attach ([`attach_timeline`]).

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::backend::{self, Backend, Capabilities};
use crate::case::{Case, CaseError, Outcome};
use crate::timeline::Timeline;

thread_local! {
    /// Timelines attached by the case running on this thread.
    static TIMELINES: RefCell<Vec<Timeline>> = const { RefCell::new(Vec::new()) };
}

/// Hands a case's fence timeline to the runner (call from the case body's thread): it ends up
/// in the case's [`CaseReport::timelines`] and in the run's timeline file.
pub fn attach_timeline(t: Timeline) {
    TIMELINES.with(|v| v.borrow_mut().push(t));
}

/// The result of one case.
#[derive(Clone, Debug)]
pub struct CaseReport {
    /// Case name.
    pub name: &'static str,
    /// Requirement IDs.
    pub requirements: &'static [&'static str],
    /// Outcome.
    pub outcome: Outcome,
    /// Wall-clock duration.
    pub duration: Duration,
    /// GPU timelines the case attached (also when it failed afterwards).
    pub timelines: Vec<Timeline>,
}

/// Cases whose name contains `filter` (all with `None`), in order.
pub fn select<'a>(cases: &'a [Case], filter: Option<&str>) -> Vec<&'a Case> {
    cases
        .iter()
        .filter(|c| filter.is_none_or(|f| c.name.contains(f)))
        .collect()
}

/// Every requirement ID some case names, sorted.
pub fn known_requirements(cases: &[Case]) -> Vec<&'static str> {
    let mut ids: Vec<&'static str> = cases
        .iter()
        .flat_map(|c| c.requirements.iter().copied())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// [`select`], then, when `requirements` is not empty, only the cases whose requirement list
/// names one of them. An ID no case names is an error that lists the known IDs.
pub fn select_by<'a>(
    cases: &'a [Case],
    filter: Option<&str>,
    requirements: &[String],
) -> Result<Vec<&'a Case>, String> {
    let known = known_requirements(cases);
    let unknown: Vec<&str> = requirements
        .iter()
        .map(String::as_str)
        .filter(|r| !known.contains(r))
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "unknown requirement ID(s) {}; known: {}",
            unknown.join(", "),
            known.join(" ")
        ));
    }
    Ok(select(cases, filter)
        .into_iter()
        .filter(|c| {
            requirements.is_empty()
                || c.requirements
                    .iter()
                    .any(|id| requirements.iter().any(|r| r == id))
        })
        .collect())
}

/// Why `backend` cannot run `case`, if it cannot: the capabilities it lacks.
pub fn missing(case: &Case, backend: &dyn Backend) -> Option<String> {
    let lacks = Capabilities::of(case.needs).difference(backend.capabilities());
    (!lacks.is_empty()).then(|| {
        format!(
            "needs capability {lacks}, which backend {} lacks",
            backend.name()
        )
    })
}

/// Runs one case. A case needing a capability the backend lacks is skipped without opening a
/// session. A panic in the case (a bug in the harness or the simulation) is a failure with the
/// panic message, not a crash of the run. A case that passes after reaching a capability it
/// does not declare fails: its declaration would let it run (and then skip part-way) on a
/// backend without it.
pub fn run_case(case: &Case, backend: &dyn Backend) -> CaseReport {
    TIMELINES.with(|v| v.borrow_mut().clear());
    let start = Instant::now();
    if let Some(reason) = missing(case, backend) {
        return CaseReport {
            name: case.name,
            requirements: case.requirements,
            outcome: Outcome::Skip(reason),
            duration: start.elapsed(),
            timelines: Vec::new(),
        };
    }
    backend::reset_used();
    let result = panic::catch_unwind(AssertUnwindSafe(|| (case.run)(backend)));
    let undeclared = backend::used()
        .difference(Capabilities::of(case.needs).union(Capabilities::of(case.optional)));
    let outcome = match result {
        Ok(Ok(())) if !undeclared.is_empty() => Outcome::Fail(format!(
            "the case reached capability {undeclared}, which it does not declare"
        )),
        Ok(Ok(())) => Outcome::Pass,
        Ok(Err(CaseError::Fail(m))) => Outcome::Fail(m),
        Ok(Err(CaseError::Skip(m))) => Outcome::Skip(m),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_owned());
            Outcome::Fail(format!("panicked: {msg}"))
        }
    };
    CaseReport {
        name: case.name,
        requirements: case.requirements,
        outcome,
        duration: start.elapsed(),
        timelines: TIMELINES.with(|v| std::mem::take(&mut *v.borrow_mut())),
    }
}

/// Runs every selected case in order.
pub fn run_all(cases: &[&Case], backend: &dyn Backend) -> Vec<CaseReport> {
    cases.iter().map(|c| run_case(c, backend)).collect()
}

/// Counts (passed, failed, skipped).
pub fn totals(reports: &[CaseReport]) -> (usize, usize, usize) {
    reports
        .iter()
        .fold((0, 0, 0), |(p, f, s), r| match r.outcome {
            Outcome::Pass => (p + 1, f, s),
            Outcome::Fail(_) => (p, f + 1, s),
            Outcome::Skip(_) => (p, f, s + 1),
        })
}
