//! The harness's collect step (`rvgpu-whlk collect`, its plan in `whlk/src/collect.rs`)
//! against the runbook (docs/test-machine.md, "10. What to send back"): it gathers every file
//! the runbook's table of the archive names and nothing the table leaves out, takes the files
//! the runbook's harness run writes, runs only commands the runbook itself uses, and changes
//! nothing on the machine. tests/wine.rs runs it under Wine.

// Host-side test code: the kernel no-panic lints do not apply.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::string_slice,
    clippy::arithmetic_side_effects
)]

use std::collections::BTreeSet;
use std::path::Path;

// The plan, read from the harness's source (this package does not depend on the harness).
#[allow(dead_code)]
#[path = "../whlk/src/collect.rs"]
mod collect;
use collect::{Arg, Root, Step, PLAN};

fn read(path: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The runbook's section from `start` to the next `## ` heading.
fn section(start: &str) -> String {
    let page = read("docs/test-machine.md");
    let from = page
        .find(start)
        .unwrap_or_else(|| panic!("docs/test-machine.md: no `{start}`"));
    let rest = &page[from + start.len()..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_owned()
}

/// The first cells of the archive's table in "What to send back".
fn archive_cells() -> Vec<String> {
    section("## 10. What to send back")
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.split('|').nth(1).unwrap().trim().to_owned())
        .collect()
}

/// The backticked names of `cell`, each split into its path components; wildcards and the
/// ellipsis left out.
fn components(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|name| name.split('\\'))
        .filter(|c| !c.is_empty() && !c.starts_with('*') && *c != "…")
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_collect_step_gathers_every_file_the_runbook_lists() {
    let names: BTreeSet<&str> = collect::names().into_iter().collect();
    let cells = archive_cells();
    assert!(cells.len() >= 5, "the archive's table: {cells:?}");
    for cell in &cells {
        for c in components(cell) {
            assert!(
                names.contains(c.as_str()),
                "docs/test-machine.md says the archive holds `{c}` ({cell}); \
                 whlk/src/collect.rs's plan does not gather it"
            );
        }
    }
}

#[test]
fn the_collect_step_writes_nothing_the_runbook_leaves_unnamed() {
    let named: BTreeSet<String> = archive_cells().iter().flat_map(|c| components(c)).collect();
    let entries: BTreeSet<String> = collect::entries().into_iter().map(str::to_owned).collect();
    assert!(entries.contains("System.evtx"), "{entries:?}");
    let unnamed: Vec<_> = entries.difference(&named).collect();
    assert!(
        unnamed.is_empty(),
        "whlk/src/collect.rs writes {unnamed:?}, which docs/test-machine.md's archive table \
         does not name"
    );
}

#[test]
fn the_collect_step_takes_what_the_harness_run_writes() {
    let run = section("## 8. The harness");
    let taken: BTreeSet<&str> = PLAN
        .iter()
        .filter_map(|s| match s {
            Step::Take {
                root: Root::Folder,
                path,
                to,
                ..
            } => {
                assert_eq!(*to, "run", "{path}");
                Some(*path)
            }
            _ => None,
        })
        .collect();
    let expected = BTreeSet::from([
        "rvgpu.etl",
        "rvgpu-results.xml",
        "rvgpu-timeline.json",
        "rvgpu-whlk.txt",
    ]);
    assert_eq!(
        taken, expected,
        "what the collect step takes from the tester's folder"
    );
    for f in expected {
        assert!(
            run.contains(f),
            "the runbook's harness run does not write {f}"
        );
    }
}

#[test]
fn the_collect_step_runs_only_commands_the_runbook_uses_and_changes_nothing() {
    let page = read("docs/test-machine.md");
    let commands: Vec<(&str, &str)> = PLAN
        .iter()
        .filter_map(|s| match s {
            Step::Run { commands, .. } => Some(*commands),
            Step::Take { .. } | Step::Journal { .. } => None,
        })
        .flatten()
        .map(|c| {
            let option = match c.args.first() {
                Some(Arg::Lit(o)) => *o,
                other => panic!("{}: first argument {other:?}", c.program),
            };
            (c.program, option)
        })
        .collect();
    let programs: BTreeSet<&str> = commands.iter().map(|(p, _)| *p).collect();
    assert!(
        programs.contains("wevtutil") && programs.contains("reg") && programs.contains("bcdedit"),
        "{commands:?}"
    );
    for (program, option) in &commands {
        assert!(
            page.contains(&format!("`{program} {option}")),
            "whlk/src/collect.rs runs `{program} {option}`, which docs/test-machine.md does \
             not use"
        );
        // Reading commands only: no `reg add`/`delete`, `bcdedit /set`, `verifier /reset`, …;
        // the one change is stopping step 8's own ETW session.
        assert!(
            matches!(
                (*program, *option),
                ("cmd", "/c")
                    | ("bcdedit", "/enum")
                    | ("verifier", "/querysettings")
                    | ("manage-bde", "-status")
                    | ("pnputil", "/enum-devices" | "/enum-drivers")
                    | ("reg", "export")
                    | ("wevtutil", "epl")
                    | ("tracelog", "-stop")
            ),
            "whlk/src/collect.rs runs `{program} {option}`, not a reading command"
        );
    }
}

#[test]
fn the_runbook_and_the_folder_s_readme_run_the_collect_step_as_the_harness_takes_it() {
    let how = r".\rvgpu-whlk.exe collect";
    let ten = section("## 10. What to send back");
    assert!(
        ten.contains(how) && ten.contains("--memory-dump"),
        "docs/test-machine.md: `{how}` and its `--memory-dump`"
    );
    assert!(
        read("scripts/tester/README.txt").contains(how),
        "scripts/tester/README.txt: `{how}`"
    );
}

/// The key of each `reg add` the runbook types (quoted or not).
fn keys_the_runbook_sets() -> Vec<String> {
    let page = read("docs/test-machine.md");
    page.split("`reg add ")
        .skip(1)
        .map(|rest| {
            let key = match rest.strip_prefix('"') {
                Some(q) => &q[..q.find('"').unwrap()],
                None => &rest[..rest.find(' ').unwrap()],
            };
            key.to_owned()
        })
        .collect()
}

/// Every registry value the runbook has the tester set (`HwSchMode`, the TDR keys,
/// `IHVVIDEO`, the test hooks' `TestHooks` under the device's software key) lies under a key
/// the collect step exports, so the archive shows what the machine ran with.
#[test]
fn the_collect_step_exports_every_registry_key_the_runbook_sets() {
    let exported: Vec<String> = PLAN
        .iter()
        .filter_map(|s| match s {
            Step::Run { commands, .. } => Some(*commands),
            _ => None,
        })
        .flatten()
        .filter(|c| c.program == "reg" && matches!(c.args.first(), Some(Arg::Lit("export"))))
        .map(|c| match c.args.get(1) {
            Some(Arg::Lit(k)) => k.to_lowercase(),
            other => panic!("reg export of {other:?}"),
        })
        .collect();
    let set = keys_the_runbook_sets();
    assert!(
        set.iter().any(|k| k.ends_with(r"\NNNN")) && set.len() >= 4,
        "the runbook's `reg add`s: {set:?}"
    );
    for key in &set {
        let k = key.to_lowercase();
        assert!(
            exported
                .iter()
                .any(|e| k == *e || k.starts_with(&format!("{e}\\"))),
            "docs/test-machine.md sets a value under {key}, which whlk/src/collect.rs does not \
             export (it exports {exported:?})"
        );
    }
}

/// The folder's README sends the tester to the runbook's test hooks by the paragraph's name in
/// step 8, which says how to turn them on and off.
#[test]
fn the_folder_s_readme_names_the_runbook_s_test_hooks_paragraph() {
    let readme = read("scripts/tester/README.txt").replace('\n', " ");
    assert!(
        readme.contains(r#"step 8, "The test hooks""#),
        "scripts/tester/README.txt: the test hooks by reference to step 8"
    );
    let eight = section("## 8. The harness");
    let hooks = &eight[eight
        .find("**The test hooks.**")
        .expect("docs/test-machine.md step 8: `**The test hooks.**`")..];
    let hooks = &hooks[..hooks.find("\n\n").unwrap_or(hooks.len())];
    for needed in [
        "/v TestHooks /t REG_DWORD /d 1",
        "DEVPKEY_Device_Driver",
        "Undo",
    ] {
        assert!(
            hooks.contains(needed),
            "step 8's test hooks lack `{needed}`: {hooks}"
        );
    }
}
