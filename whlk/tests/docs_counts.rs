//! What the documents say about the harness's cases, checked against the case registry: the
//! README's summary line (with no count of cases), docs/test-machine.md's list of the cases
//! that run on a Windows test machine (those that pass over the simulated D3DKMT thunks,
//! `--backend kmt-sim`) and of the Windows backend's capabilities, and docs/qemu-guest.md's
//! list of the guest's cases.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;

use rvgpu_whlk::backend::kmt::sim::SimPlatform;
use rvgpu_whlk::backend::kmt::{KmtBackend, KmtMachine, KmtPlatform};
use rvgpu_whlk::backend::{Backend, Capability, Failure, SessionConfig};
use rvgpu_whlk::case::{Case, Outcome};
use rvgpu_whlk::{cases, runner};

fn doc(path: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The README gives the line `cargo run -p rvgpu-whlk` prints last without a number, so that
/// adding a case does not change it: N stands for the cases (`--list` names them).
#[test]
fn readme_gives_the_default_runs_summary_line_without_a_count() {
    let readme = doc("README.md");
    assert!(
        readme.contains("`N passed, 0 failed, 0 skipped` (N cases)"),
        "README.md should say what `cargo run -p rvgpu-whlk` prints last: \
         `N passed, 0 failed, 0 skipped` (N cases)"
    );
    let counted = readme.split('`').any(|span| {
        span.strip_suffix(" passed, 0 failed, 0 skipped")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    assert!(
        !counted,
        "README.md counts the cases in its summary line: a count goes stale with the next case"
    );
    let all = rvgpu_whlk::report::table("sim", &[]);
    assert!(
        all.trim_end().ends_with("0 passed, 0 failed, 0 skipped"),
        "the runner's summary line is no longer `N passed, N failed, N skipped`:\n{all}"
    );
}

/// The backticked `Group.Case` names between `start` and `end` in `text`.
fn case_names(text: &str, start: &str, end: &str) -> BTreeSet<String> {
    let from = text.find(start).unwrap_or_else(|| panic!("no `{start}`"));
    let rest = &text[from..];
    let to = rest
        .find(end)
        .unwrap_or_else(|| panic!("no `{end}` after `{start}`"));
    rest[..to]
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            s.split_once('.').is_some_and(|(g, c)| {
                !g.is_empty()
                    && !c.is_empty()
                    && s.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '.')
            })
        })
        .map(str::to_owned)
        .collect()
}

/// The Windows the simulated machines play is the process's (`rvgpu_whlk::os`): whatever asks
/// it holds this while the second pass turns hardware scheduling off.
static MACHINE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn machine() -> std::sync::MutexGuard<'static, ()> {
    MACHINE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The cases that pass over the simulated D3DKMT thunks with hardware scheduling on (`true`:
/// the runbook's first pass) or off (the second), run once for the tests that need them.
fn d3dkmt_passes_with_hwsch(hwsch: bool) -> &'static BTreeSet<String> {
    static PASSED: [OnceLock<BTreeSet<String>>; 2] = [OnceLock::new(), OnceLock::new()];
    PASSED[usize::from(hwsch)].get_or_init(|| {
        let _m = machine();
        rvgpu_whlk::os::set(rvgpu_whlk::os::OsUnderTest {
            hwsch,
            ..Default::default()
        });
        let all = cases::all();
        let reports = runner::run_all(&runner::select(&all, None), &KmtBackend::new(SimPlatform));
        rvgpu_whlk::os::set(rvgpu_whlk::os::OsUnderTest::default());
        reports
            .iter()
            .filter(|r| r.outcome == Outcome::Pass)
            .map(|r| r.name.to_string())
            .collect()
    })
}

/// The first pass's passing cases ([`d3dkmt_passes_with_hwsch`]).
fn d3dkmt_passes() -> &'static BTreeSet<String> {
    d3dkmt_passes_with_hwsch(true)
}

/// The first pass's list (with hardware scheduling on) of docs/test-machine.md.
fn first_pass() -> BTreeSet<String> {
    case_names(
        &doc("docs/test-machine.md"),
        "Cases that run there",
        "Everything else is skipped",
    )
}

/// The second pass's rows of docs/test-machine.md: (case, whether it says `pass`).
fn second_pass() -> Vec<(String, bool)> {
    let page = doc("docs/test-machine.md");
    let from = page
        .find("**The second pass.**")
        .expect("docs/test-machine.md: `**The second pass.**`");
    let rest = &page[from..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())]
        .lines()
        .filter_map(|l| {
            let mut cells = l.split('|').skip(1);
            let case = cells.next()?.trim().strip_prefix('`')?.strip_suffix('`')?;
            let outcome = cells.next()?.trim();
            Some((case.to_owned(), outcome.starts_with("pass")))
        })
        .collect()
}

/// Every case the first pass lists runs through the D3DKMT backend, and every case that runs
/// there is listed: in the first pass, or as passing in the second (a backend that builds its
/// machine gives a case the software scheduling it asks for; a Windows machine, the second pass).
#[test]
fn test_machine_page_lists_exactly_the_cases_a_d3dkmt_program_runs() {
    let passed = d3dkmt_passes();
    let listed = first_pass();
    let second: BTreeSet<String> = second_pass()
        .into_iter()
        .filter_map(|(c, pass)| pass.then_some(c))
        .collect();
    let unlisted: Vec<_> = passed
        .iter()
        .filter(|c| !listed.contains(*c) && !second.contains(*c))
        .collect();
    let not_run: Vec<_> = listed.difference(passed).collect();
    assert!(
        unlisted.is_empty() && not_run.is_empty(),
        "docs/test-machine.md's list of the cases that run on Windows is out of date: \
         runs but not listed {unlisted:?}; listed but does not run {not_run:?}"
    );
}

/// The simulated thunks on a machine whose Dxgkrnl left native fences off.
struct WithoutNativeFences(SimPlatform);

impl KmtPlatform for WithoutNativeFences {
    type Kmt = <SimPlatform as KmtPlatform>::Kmt;

    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn open(
        &self,
        config: &SessionConfig,
    ) -> Result<Box<dyn KmtMachine<Kmt = Self::Kmt>>, Failure> {
        self.0.open(config)
    }

    fn native_fences(&self) -> bool {
        false
    }
}

/// The bold names (`**Name**`) of `text`.
fn bold(text: &str) -> BTreeSet<String> {
    text.split("**")
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// docs/test-machine.md's paragraph "It offers …" names the Windows backend's capabilities:
/// those before "otherwise" with native fences enabled, those after without.
#[test]
fn test_machine_page_lists_the_windows_backends_capabilities() {
    let page = doc("docs/test-machine.md");
    let para = page
        .split("\n\n")
        .find(|p| p.contains("It offers"))
        .expect("docs/test-machine.md: the paragraph with `It offers`");
    let para = &para[para.find("It offers").unwrap_or(0)..];
    let (with, without) = para
        .split_once("otherwise")
        .expect("`otherwise` before the capabilities without native fences");
    let names = |b: &dyn Backend| -> BTreeSet<String> {
        b.capabilities()
            .iter()
            .map(|c| c.name().to_owned())
            .collect()
    };
    let _m = machine();
    let on = KmtBackend::new(SimPlatform);
    assert!(
        on.capabilities().contains(Capability::NativeFences),
        "the default reading enables native fences"
    );
    assert_eq!(bold(with), names(&on), "with native fences: {para}");
    assert_eq!(
        bold(without),
        names(&KmtBackend::new(WithoutNativeFences(SimPlatform))),
        "without native fences: {para}"
    );
}

#[test]
fn qemu_guest_page_lists_the_pci_subset() {
    let listed = case_names(
        &doc("docs/qemu-guest.md"),
        "`--subset pci` is `PCI_SUBSET`",
        "The test passes when",
    );
    let subset: BTreeSet<String> = cases::PCI_SUBSET.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        listed, subset,
        "docs/qemu-guest.md's table of the `pci` subset against `cases::PCI_SUBSET`"
    );
}

/// `TdrLimitCount`'s default: this many GPU hangs within `TdrLimitTime` bug-check the machine
/// (*TDR registry keys*).
const TDR_LIMIT_COUNT: usize = 5;

/// The `TdrLimitCount` the runbook has the tester set for a pass (its section of
/// docs/test-machine.md writes it as `` `TdrLimitCount` = N ``), else Windows' default: the
/// first pass's is what comes before `**The second pass.**`, the second's what follows.
fn runbook_tdr_limit_count(second: bool) -> usize {
    let d = doc("docs/test-machine.md");
    let (first_part, second_part) = d
        .split_once("**The second pass.**")
        .expect("docs/test-machine.md: `**The second pass.**`");
    let part = if second {
        second_part.split("\n## ").next().unwrap_or_default()
    } else {
        first_part
    };
    part.split("`TdrLimitCount` = ")
        .nth(1)
        .and_then(|t| {
            let n: String = t.chars().take_while(char::is_ascii_digit).collect();
            n.parse().ok()
        })
        .unwrap_or(TDR_LIMIT_COUNT)
}

/// GPU hangs of one run of `names` (the `Tdr` cases among them hang an engine once,
/// `Tdr.LastCompletedFence`'s KMD form twice).
fn hangs_of(names: &BTreeSet<String>) -> (Vec<Case>, usize) {
    let tdr: Vec<Case> = cases::all()
        .into_iter()
        .filter(|c| names.contains(c.name) && c.needs.contains(&Capability::Tdr))
        .collect();
    let hangs = tdr.len() + usize::from(tdr.iter().any(|c| c.name == "Tdr.LastCompletedFence"));
    (tdr, hangs)
}

/// docs/test-machine.md names the cases of a Windows run that hang an engine (the `Tdr.*` and
/// `DeviceLoss.*` cases that run there, with `Neutral.HangRecoveredGuiltyOnly`) and says how
/// many of each area there are; one run of them stays below the `TdrLimitCount` the runbook sets for it (Windows'
/// default where it sets none) even were each hang an adapter reset. So does the second pass,
/// whose passing cases' hangs (three of them adapter resets) count against the limit its step
/// sets.
#[test]
fn a_windows_run_hangs_fewer_engines_than_the_tdr_limit_count() {
    let passed = d3dkmt_passes();
    let first: BTreeSet<String> = first_pass()
        .into_iter()
        .filter(|c| passed.contains(c))
        .collect();
    let (tdr, hangs) = hangs_of(&first);
    let area = |prefix: &str| tdr.iter().filter(|c| c.name.starts_with(prefix)).count();
    let (tdr_cases, loss_cases) = (area("Tdr."), area("DeviceLoss."));
    assert!(
        tdr_cases + loss_cases == tdr.len(),
        "a case outside Tdr.* and DeviceLoss.* uses the Tdr capability: update \
         docs/test-machine.md's sentence"
    );
    let words = [
        "no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    let word = |n: usize| words.get(n).copied().unwrap_or("many");
    let said = format!(
        "the {} `Tdr.*`, the {} `DeviceLoss.*` and `Neutral.HangRecoveredGuiltyOnly`",
        word(tdr_cases),
        word(loss_cases)
    );
    assert!(
        doc("docs/test-machine.md").contains(&said),
        "docs/test-machine.md should say `{said}`"
    );
    let hangs = hangs + 1;
    let limit = runbook_tdr_limit_count(false);
    assert!(
        passed.contains("Neutral.HangRecoveredGuiltyOnly") && hangs < limit,
        "{hangs} hangs in one Windows run reach TdrLimitCount {limit} (the runbook's, or \
         Windows' default {TDR_LIMIT_COUNT}): the runbook must raise it"
    );
    // The second pass: the rows that say `pass` are the cases that pass with hardware
    // scheduling off.
    let second_passed = d3dkmt_passes_with_hwsch(false);
    let rows: BTreeSet<String> = second_pass()
        .into_iter()
        .filter_map(|(c, pass)| pass.then_some(c))
        .collect();
    let run: BTreeSet<String> = second_passed
        .iter()
        .filter(|c| c.starts_with("Tdr."))
        .cloned()
        .collect();
    assert!(
        rows.is_subset(&run),
        "docs/test-machine.md's second pass says pass for {rows:?}; with hardware scheduling \
         off the Tdr.* cases that pass are {run:?}"
    );
    let (_, hangs) = hangs_of(&run);
    let limit = runbook_tdr_limit_count(true);
    assert!(
        hangs >= TDR_LIMIT_COUNT || limit == TDR_LIMIT_COUNT,
        "the second pass hangs {hangs} times, below Windows' default: the runbook need not \
         raise TdrLimitCount"
    );
    assert!(
        hangs < limit,
        "{hangs} hangs in the second pass reach TdrLimitCount {limit} (the runbook's second \
         pass's, or Windows' default {TDR_LIMIT_COUNT}): its step must raise it"
    );
}

/// docs/test-machine.md's second pass names, once each, the `Tdr.*` cases its first pass
/// leaves, and counts them.
#[test]
fn test_machine_page_second_pass_lists_the_tdr_cases_the_first_leaves() {
    let first = first_pass();
    let left: Vec<String> = cases::all()
        .iter()
        .map(|c| c.name.to_string())
        .filter(|n| n.starts_with("Tdr.") && !first.contains(n))
        .collect();
    let mut rows: Vec<String> = second_pass().into_iter().map(|(c, _)| c).collect();
    rows.sort();
    let mut want = left.clone();
    want.sort();
    assert!(!want.is_empty(), "the first pass lists every Tdr.* case");
    assert_eq!(
        rows, want,
        "docs/test-machine.md's second pass against the Tdr.* cases its first pass leaves"
    );
    let words = [
        "no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    let said = format!(
        "These {} follow",
        words.get(left.len()).copied().unwrap_or("many")
    );
    assert!(
        doc("docs/test-machine.md").contains(&said),
        "docs/test-machine.md should say `{said}`"
    );
}
