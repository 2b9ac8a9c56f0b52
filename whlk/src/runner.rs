//! Runs cases: select (by name and requirement), skip what the backend cannot run, time, and
//! turn panics into failures; collects the GPU timelines cases attach ([`attach_timeline`]).

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::backend::{self, Backend, Capabilities, Capability};
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

/// Why `backend` cannot run `case`, if it cannot: the capabilities it lacks, or what the
/// Windows under test did not enable ([`crate::os::why_no_native_fences`]).
pub fn missing(case: &Case, backend: &dyn Backend) -> Option<String> {
    let caps = backend.capabilities();
    let lacks = Capabilities::of(case.needs).difference(caps);
    if lacks.is_empty() {
        return None;
    }
    // A backend without native fences because the Windows under test did not enable them
    // (and what it built on them, e.g. GPU work through user-mode queues) says so.
    let os = if caps.contains(Capability::NativeFences) {
        None
    } else {
        crate::os::why_no_native_fences()
    };
    Some(match os {
        Some(why) if lacks == Capabilities::of(&[Capability::NativeFences]) => why,
        Some(why) => format!(
            "needs capability {lacks}, which backend {} lacks: {why}",
            backend.name()
        ),
        None => format!(
            "needs capability {lacks}, which backend {} lacks",
            backend.name()
        ),
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

/// The failed cases, one `name: reason` line each.
pub fn failures(reports: &[CaseReport]) -> Vec<String> {
    reports
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Fail(_)))
        .map(|r| format!("{}: {}", r.name, r.outcome.reason()))
        .collect()
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::backend::{Capability, Failure, Session, SessionConfig, StartedAdapter, Until};
    use crate::cases;

    /// A backend with the given capabilities whose sessions do nothing: enough to see what the
    /// runner does before and after a case body. It never implements a capability trait, so
    /// a case that reaches one gets `Unsupported`.
    struct Fake(Capabilities);

    struct FakeSession;

    impl Session for FakeSession {
        fn adapter_count(&self) -> usize {
            1
        }
        fn load_driver(&mut self) -> Result<(), Failure> {
            Ok(())
        }
        fn start_adapter(&mut self, _i: usize) -> Result<StartedAdapter, Failure> {
            Ok(StartedAdapter {
                sources: 0,
                children: 0,
            })
        }
        fn stop_adapter(&mut self, _i: usize) -> Result<(), Failure> {
            Ok(())
        }
        fn run_until(&mut self, _budget: Duration, _done: Until<'_>) -> Result<bool, Failure> {
            Ok(false)
        }
    }

    impl Backend for Fake {
        fn name(&self) -> &'static str {
            "fake"
        }
        fn capabilities(&self) -> Capabilities {
            self.0
        }
        fn open_session(&self, _config: &SessionConfig) -> Result<Box<dyn Session>, Failure> {
            Ok(Box::new(FakeSession))
        }
    }

    fn ids(v: &[&Case]) -> Vec<&'static str> {
        v.iter().map(|c| c.name).collect()
    }

    #[test]
    fn requirement_selects_exactly_the_cases_naming_it() {
        let all = cases::all();
        for id in ["UM-20", "TDR-05", "NF-10"] {
            let got = select_by(&all, None, &[id.to_owned()]).expect("known ID");
            let want: Vec<&'static str> = all
                .iter()
                .filter(|c| c.requirements.contains(&id))
                .map(|c| c.name)
                .collect();
            assert!(!want.is_empty(), "{id} names no case");
            assert_eq!(ids(&got), want, "{id}");
        }
        assert_eq!(
            ids(&select_by(&all, None, &["UM-20".into()]).expect("known ID")),
            [
                "UserModeSubmission.DoorbellVictimisationWalkthrough",
                "UserModeSubmission.ThreadedChurn"
            ]
        );
        // Several IDs: the union, in run order; with a filter: both must hold.
        let two = select_by(&all, None, &["UM-20".into(), "UM-21".into()]).expect("known");
        assert_eq!(two.len(), 3);
        let filtered = select_by(&all, Some("Churn"), &["UM-20".into()]).expect("known");
        assert_eq!(ids(&filtered), ["UserModeSubmission.ThreadedChurn"]);
        // No ID: every case the filter keeps.
        assert_eq!(select_by(&all, None, &[]).expect("no ID").len(), all.len());
    }

    #[test]
    fn unknown_requirement_lists_the_known_ones() {
        let all = cases::all();
        let e =
            select_by(&all, None, &["UM-20".into(), "XX-99".into()]).expect_err("XX-99 is unknown");
        assert!(e.contains("XX-99"), "{e}");
        assert!(!e.contains("UM-20,"), "a known ID reported unknown: {e}");
        for id in known_requirements(&all) {
            assert!(e.contains(id), "{id} missing from {e}");
        }
    }

    #[test]
    fn a_case_needing_a_missing_capability_is_skipped_with_the_reason() {
        let all = cases::all();
        let lacks = Capability::UserModeSubmission;
        let fake = Fake(Capabilities::all().without(lacks));
        let mut skipped = 0;
        for c in all.iter().filter(|c| c.needs.contains(&lacks)) {
            let r = run_case(c, &fake);
            assert_eq!(
                r.outcome,
                Outcome::Skip(
                    "needs capability UserModeSubmission, which backend fake lacks".into()
                ),
                "{}",
                c.name
            );
            skipped += 1;
        }
        assert!(
            skipped >= 20,
            "only {skipped} cases need user-mode submission"
        );
        // The table and the JUnit report show them as skipped, with the reason.
        let selected = select_by(&all, None, &["UM-20".into()]).expect("known ID");
        let reports = run_all(&selected, &fake);
        let table = crate::report::table(fake.name(), &reports);
        assert!(table.contains("skip"), "{table}");
        assert!(table.contains("0 passed, 0 failed, 2 skipped"), "{table}");
        assert!(
            table.contains("needs capability UserModeSubmission"),
            "{table}"
        );
        let xml = crate::junit::render(fake.name(), &reports);
        assert!(
            xml.contains(
                r#"<skipped message="needs capability UserModeSubmission, which backend fake lacks"/>"#
            ),
            "{xml}"
        );
        assert!(xml.contains(r#"tests="2" failures="0" errors="0" skipped="2""#));
    }

    /// A backend whose sessions must never open: a case skipped for a capability it lacks is
    /// skipped before its body sets anything up.
    struct NeverOpens(Capabilities);

    impl Backend for NeverOpens {
        fn name(&self) -> &'static str {
            "never-opens"
        }
        fn capabilities(&self) -> Capabilities {
            self.0
        }
        fn open_session(&self, _config: &SessionConfig) -> Result<Box<dyn Session>, Failure> {
            Err(Failure::Backend("a session was opened".into()))
        }
    }

    #[test]
    fn um_18_a_kill_during_a_held_recovery_is_skipped_by_capability_before_any_session() {
        let all = cases::all();
        let case = all
            .iter()
            .find(|c| c.name == "DeviceLoss.KillDuringRecovery")
            .expect("the case");
        // Whatever the backend is called: everything but the held recovery.
        let b = NeverOpens(Capabilities::all().without(Capability::HeldRecovery));
        assert_eq!(
            run_case(case, &b).outcome,
            Outcome::Skip("needs capability HeldRecovery, which backend never-opens lacks".into())
        );
        // Only the simulation's own backend lists it.
        assert!(crate::backend::sim::SimBackend
            .capabilities()
            .contains(Capability::HeldRecovery));
        assert!(!Capability::HeldRecovery.windows_possible());
    }

    #[test]
    fn a_case_reaching_an_undeclared_capability_fails() {
        fn sneaky(b: &dyn Backend) -> crate::case::CaseResult {
            let mut s = b.open(&SessionConfig::new(crate::backend::ExecMode::Step))?;
            // Tolerates the absence, as an optional observation would.
            let _ = s.fences().map(|_| ());
            Ok(())
        }
        fn declared(b: &dyn Backend) -> crate::case::CaseResult {
            let s = b.open(&SessionConfig::new(crate::backend::ExecMode::Step))?;
            let _ = s.fences_ref().map(|_| ());
            Ok(())
        }
        let mut case = Case {
            name: "Test.Sneaky",
            requirements: &[],
            summary: "",
            needs: &[],
            optional: &[],
            run: sneaky,
        };
        let fake = Fake(Capabilities::NONE);
        assert_eq!(
            run_case(&case, &fake).outcome,
            Outcome::Fail("the case reached capability Fences, which it does not declare".into())
        );
        case.run = declared;
        case.optional = &[Capability::Fences];
        assert_eq!(run_case(&case, &fake).outcome, Outcome::Pass);
        // A configuration the backend cannot build is reached through `open`.
        fn configured(b: &dyn Backend) -> crate::case::CaseResult {
            let mut cfg = SessionConfig::new(crate::backend::ExecMode::Step);
            cfg.log_entries = Some(4);
            b.open(&cfg)?;
            Ok(())
        }
        case.run = configured;
        case.optional = &[];
        assert_eq!(
            run_case(&case, &fake).outcome,
            Outcome::Skip("the backend lacks the ConfiguredMachine capability".into())
        );
        case.needs = &[Capability::ConfiguredMachine];
        assert_eq!(
            run_case(&case, &fake).outcome,
            Outcome::Skip("needs capability ConfiguredMachine, which backend fake lacks".into())
        );
    }
}
