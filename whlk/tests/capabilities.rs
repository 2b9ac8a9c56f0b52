//! Capabilities end to end: the simulated backend has every one it lists, and the same cases
//! on a backend that can do less (the sim backend with capabilities hidden) skip or pass, never
//! fail, with the optional observations left out.

use rvgpu_whlk::backend::kmt::sim::SimPlatform;
use rvgpu_whlk::backend::kmt::KmtBackend;
use rvgpu_whlk::backend::restricted::Restricted;
use rvgpu_whlk::backend::sim::SimBackend;
use rvgpu_whlk::backend::{Backend, Capability, ExecMode, Failure, Session, SessionConfig};
use rvgpu_whlk::case::{Case, Outcome};
use rvgpu_whlk::{cases, runner};

fn reach(s: &mut dyn Session, c: Capability) -> Result<(), Failure> {
    match c {
        Capability::Fences => s.fences().map(|_| ()),
        Capability::MonitoredFences => s.monitored().map(|_| ()),
        Capability::FenceInternals => s.fence_internals().map(|_| ()),
        Capability::CrossAdapterFences => s.cross_adapter().map(|_| ()),
        Capability::UserModeSubmission => s.ums().map(|_| ()),
        Capability::KmdCaps => s.kmd_caps().map(|_| ()),
        Capability::UmdBypass => s.umd_bypass().map(|_| ()),
        Capability::EngineIdle => s.engine_idle().map(|_| ()),
        Capability::UmdFences => s.umd_fences().map(|_| ()),
        Capability::FenceLogs => s.fence_logs().map(|_| ()),
        Capability::Tdr => s.tdr().map(|_| ()),
        Capability::DmaContexts => s.dma_contexts().map(|_| ()),
        Capability::Paging => s.paging().map(|_| ()),
        Capability::TdrTrace => s.tdr_trace().map(|_| ()),
        Capability::OsTrace => s.os_trace().map(|_| ()),
        Capability::OsControl => s.os_control().map(|_| ()),
        Capability::FaultInjection => s.faults().map(|_| ()),
        Capability::HeldRecovery => s.held_recovery().map(|_| ()),
        Capability::DirectDdi => s.direct_ddi().map(|_| ()),
        Capability::StepMode => s.step().map(|_| ()),
        Capability::BugChecks => s.bug_checks().map(|_| ()),
        Capability::AllocationUsage => s.alloc_usage().map(|_| ()),
        Capability::GpuVaPlacement => s.gpu_va().map(|_| ()),
        Capability::KernelModeTesting => s.kmtest().map(|_| ()),
        Capability::KmdJournal => s.kmd_journal().map(|_| ()),
        Capability::KmdFaults => s.kmd_faults().map(|_| ()),
        // Not session traits: checked when the session opens, or what the OS enabled.
        Capability::ConfiguredMachine
        | Capability::NativeFences
        | Capability::EndedProcessMemory => Ok(()),
    }
}

#[test]
fn sim_sessions_have_every_listed_capability() {
    let b: &dyn Backend = &SimBackend;
    // Everything but the KMD's test hooks, whose place the OS's own record and fault
    // injection take.
    assert_eq!(
        b.capabilities().iter().count(),
        Capability::ALL.len() - 2,
        "{}",
        b.capabilities()
    );
    assert!(!b.capabilities().contains(Capability::KmdJournal));
    let mut s = b
        .open(&SessionConfig::new(ExecMode::Step))
        .expect("session");
    for c in b.capabilities().iter() {
        assert!(reach(&mut *s, c).is_ok(), "sim lists {c} but lacks it");
    }
}

fn case(name: &str) -> Case {
    cases::all()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

#[test]
fn hidden_capability_skips_or_leaves_out_optional_checks() {
    let b = Restricted::without(SimBackend, &[Capability::OsTrace]);
    let needs = case("UserModeSubmission.EngineF1");
    assert!(needs.needs.contains(&Capability::OsTrace));
    assert_eq!(
        runner::run_case(&needs, &b).outcome,
        Outcome::Skip("needs capability OsTrace, which backend sim lacks".into())
    );
    let optional = case("UserModeSubmission.GlobalDoorbell");
    assert!(optional.optional.contains(&Capability::OsTrace));
    assert_eq!(runner::run_case(&optional, &b).outcome, Outcome::Pass);
}

/// What a Windows backend could have at most: every case passes or is skipped, none fails.
#[test]
fn a_windows_like_backend_skips_or_passes_every_case() {
    let hidden: Vec<Capability> = Capability::ALL
        .iter()
        .copied()
        .filter(|c| !c.windows_possible())
        .collect();
    let b = Restricted::without(SimBackend, &hidden);
    let all = cases::all();
    let reports = runner::run_all(&runner::select(&all, None), &b);
    let failed = runner::failures(&reports);
    assert!(failed.is_empty(), "failed cases:\n{}", failed.join("\n"));
    let (passed, _, skipped) = runner::totals(&reports);
    assert!(
        passed > 0 && skipped > 0,
        "{passed} passed, {skipped} skipped"
    );
    for (r, c) in reports.iter().zip(&all) {
        let lacks = c.needs.iter().any(|n| hidden.contains(n));
        // A case with two forms (the OS's record or the KMD's, the OS's side of the logs or
        // the KMD's copy, an adapter-wide recovery the OS forces or the KMD's armed fault
        // causes) is skipped when the backend has neither, naming what each lacks: here, the
        // OS's side hidden and the KMD's test hooks not among the simulation's capabilities.
        let neither = matches!(&r.outcome, Outcome::Skip(m)
            if (m.contains("(the OS's record) or") && m.contains("TdrTrace")
                && m.contains("KmdJournal"))
                || (m.contains("OsControl (a forced TDR) or") && m.contains("KmdFaults"))
                || (m.contains("(the OS's side of the logs) or") && m.contains("KmdJournal"))
                || (m.contains("(the OS's fence objects, the machine stepped) or")
                    && m.contains("KmdJournal"))
                // The KMD's form needs the machine's OS without native fences: a Windows
                // machine's second pass.
                || m.starts_with("needs a machine whose OS enables no native fences")
                // The other form reads a program's own fence mappings, which the OS's fence
                // objects of this backend are not.
                || m.contains("a D3DKMT program's own"));
        assert_eq!(
            matches!(r.outcome, Outcome::Skip(_)),
            lacks || neither,
            "{}: {:?}",
            c.name,
            r.outcome
        );
    }
}

/// The D3DKMT backend's sessions have exactly the capability traits it lists: what it lacks is
/// absent as a whole (the runner skips by name), never a method that answers `Unsupported`.
#[test]
fn the_d3dkmt_backend_has_exactly_what_it_lists() {
    let b: &dyn Backend = &KmtBackend::new(SimPlatform);
    let mut s = b
        .open(&SessionConfig::new(ExecMode::Threaded))
        .expect("session");
    for &c in Capability::ALL {
        if matches!(
            c,
            Capability::ConfiguredMachine
                | Capability::NativeFences
                | Capability::EndedProcessMemory
        ) {
            continue;
        }
        assert_eq!(
            reach(&mut *s, c).is_ok(),
            b.capabilities().contains(c),
            "{c}"
        );
    }
}
