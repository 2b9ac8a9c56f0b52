//! the harness on the PCI board (`rvgpu-whlk --board pci --subset pci`). The board
//! itself is exercised in a Linux guest (`device/vfu/vm/run-guest-smoke.sh`); here the same
//! backend runs on the in-process device under the PCI board's constraints (threaded, one
//! function, no fault injection, step mode, configured machines or cross-adapter fences), so a
//! subset case that needs something the board lacks is caught without a VM. A board of named
//! functions that do not exist shows how sessions map adapters to functions.

use rvgpu_whlk::backend::sim::{pci_backend, PciSimBackend};
use rvgpu_whlk::backend::{Backend, Capability};
use rvgpu_whlk::case::{Case, Outcome};
use rvgpu_whlk::{cases, runner};

#[test]
fn pci_subset_covers_the_issue_and_passes_under_the_boards_constraints() {
    let all = cases::all();
    let subset: Vec<_> = all
        .iter()
        .filter(|c| cases::PCI_SUBSET.contains(&c.name))
        .collect();
    assert_eq!(
        subset.len(),
        cases::PCI_SUBSET.len(),
        "every name of PCI_SUBSET is a case"
    );
    let b = pci_backend(None);
    assert_eq!(b.name(), "sim-pci");
    for c in PciSimBackend::LACKS {
        assert!(!b.capabilities().contains(*c), "{c:?} is not offered");
    }
    assert!(b.capabilities().contains(Capability::UserModeSubmission));
    assert!(b.capabilities().contains(Capability::Tdr));
    let reports = runner::run_all(&subset, &b);
    for r in &reports {
        assert!(
            matches!(r.outcome, Outcome::Pass),
            "{} on the PCI board's constraints: {:?}",
            r.name,
            r.outcome
        );
    }
    assert_eq!(reports.len(), 5);
}

/// The case named `name`.
fn case(name: &str) -> Case {
    *cases::all()
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

/// Why `case` is skipped on the PCI board (fails the test if it is not).
fn skip_reason(case: &Case) -> String {
    let reports = runner::run_all(&[case], &pci_backend(None));
    match &reports[0].outcome {
        Outcome::Skip(why) => why.clone(),
        other => panic!("{} on the PCI board: {other:?}", case.name),
    }
}

#[test]
fn a_case_needing_fault_injection_is_skipped_on_the_pci_board() {
    let case = case("Simulation.IrqlEnforcedCallback");
    assert!(case.needs.contains(&Capability::FaultInjection));
    let why = skip_reason(&case);
    assert!(why.contains("FaultInjection"), "{why}");
}

/// A PCI board of the functions `names` (nothing is opened until a session starts).
fn board_of(names: &[&str]) -> rvgpu_whlk::backend::restricted::Restricted<PciSimBackend> {
    pci_backend(Some(rvgpu_simos::machine::PciSpec {
        functions: names
            .iter()
            .map(|n| std::path::Path::new("/nonexistent").join(n))
            .collect(),
        dma_base: 0x4000_0000,
        dma_size: 1 << 20,
    }))
}

#[test]
fn ddi_01_two_adapters_on_one_function_skip_naming_two_devices() {
    let why = skip_reason(&case("Adapter.TwoAdapters"));
    assert!(why.contains("--devices 2"), "{why}");
    let reports = runner::run_all(&[&case("Adapter.TwoAdapters")], &board_of(&["f0"]));
    match &reports[0].outcome {
        Outcome::Skip(why) => assert!(why.contains("1 rvgpu function"), "{why}"),
        other => panic!("two adapters on one function: {other:?}"),
    }
}

#[test]
fn ddi_01_two_adapters_on_two_functions_open_a_board_each() {
    // No function here to open: the case reaches the boards, the first of which is missing,
    // rather than being skipped.
    let reports = runner::run_all(&[&case("Adapter.TwoAdapters")], &board_of(&["f0", "f1"]));
    match &reports[0].outcome {
        Outcome::Fail(why) => assert!(why.contains("/nonexistent/f0"), "{why}"),
        other => panic!("two adapters on two functions: {other:?}"),
    }
}
