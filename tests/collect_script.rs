//! The collect script of the tester's folder (`scripts/tester/collect.ps1`) against the runbook
//! (docs/test-machine.md, "10. What to send back"), read statically: PowerShell does not run
//! here, so the script has not run on Windows. It gathers every file the runbook's table of the
//! archive names and nothing the table leaves out, takes the files the runbook's harness run
//! writes, runs only commands the runbook itself uses, and changes nothing on the machine.

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

fn read(path: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn script() -> String {
    read("scripts/tester/collect.ps1")
}

/// The script without its comments (a `#` that starts a line or follows a blank; the script
/// has no `#` inside a string).
fn code() -> String {
    script()
        .lines()
        .map(|l| match l.find(" #") {
            _ if l.trim_start().starts_with('#') => "",
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
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

/// The quoted strings of the script's code that name what it writes into the archive: the
/// first argument of `Run` (a text file), the second of `Take` (a folder) and each
/// `Join-Path $work '…'` (a file a command writes).
fn archive_entries() -> BTreeSet<String> {
    let code = code();
    let mut out = BTreeSet::new();
    for line in code.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("Run '") {
            out.insert(rest[..rest.find('\'').unwrap()].to_owned());
        }
        if line.starts_with("Take ") || line.contains(" Take ") {
            let quoted: Vec<&str> = line.split('\'').skip(1).step_by(2).collect();
            out.insert((*quoted.last().unwrap()).to_owned());
        }
        let mut rest = line;
        while let Some(at) = rest.find("Join-Path $work '") {
            rest = &rest[at + "Join-Path $work '".len()..];
            let name = &rest[..rest.find('\'').unwrap()];
            if name != "*" {
                out.insert(name.to_owned());
            }
        }
    }
    out
}

#[test]
fn the_collect_script_gathers_every_file_the_runbook_lists() {
    let code = code();
    let cells = archive_cells();
    assert!(cells.len() >= 5, "the archive's table: {cells:?}");
    for cell in &cells {
        for c in components(cell) {
            assert!(
                code.contains(&format!("'{c}'")) || code.contains(&format!("\\{c}'")),
                "docs/test-machine.md says the archive holds `{c}` ({cell}); \
                 scripts/tester/collect.ps1 does not name it"
            );
        }
    }
}

#[test]
fn the_collect_script_writes_nothing_the_runbook_leaves_unnamed() {
    let named: BTreeSet<String> = archive_cells().iter().flat_map(|c| components(c)).collect();
    let entries = archive_entries();
    assert!(entries.contains("System.evtx"), "{entries:?}");
    let unnamed: Vec<_> = entries.difference(&named).collect();
    assert!(
        unnamed.is_empty(),
        "scripts/tester/collect.ps1 writes {unnamed:?}, which docs/test-machine.md's archive \
         table does not name"
    );
}

#[test]
fn the_collect_script_takes_what_the_harness_run_writes() {
    let run = section("## 8. The harness");
    let code = code();
    for f in [
        "rvgpu.etl",
        "rvgpu-results.xml",
        "rvgpu-timeline.json",
        "rvgpu-whlk.txt",
    ] {
        assert!(
            run.contains(f),
            "the runbook's harness run does not write {f}"
        );
        assert!(
            code.contains(&format!("'{f}'")),
            "scripts/tester/collect.ps1 does not take {f}"
        );
    }
}

/// The external commands of the script: the first word of each command line (inside a `Run`
/// block's braces or on its own), with its first option.
fn commands() -> Vec<(String, String)> {
    const POWERSHELL: &[&str] = &["param", "function", "if", "foreach", "else"];
    let mut out = Vec::new();
    for line in code().lines().map(str::trim) {
        let line = match line.strip_prefix("Run '") {
            Some(rest) => match rest.find("{ ") {
                Some(at) => &rest[at + 2..],
                None => continue,
            },
            None => line,
        };
        // The leading word: `param(…)` and `function Run(…)` are PowerShell's own.
        let end = line
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '-')
            .unwrap_or(line.len());
        let first = &line[..end];
        if first.is_empty()
            || POWERSHELL.contains(&first)
            || first.chars().next().is_some_and(char::is_uppercase)
        {
            continue;
        }
        let option = line[end..]
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_owned();
        out.push((first.to_owned(), option));
    }
    out
}

#[test]
fn the_collect_script_runs_only_commands_the_runbook_uses_and_changes_nothing() {
    let page = read("docs/test-machine.md");
    let commands = commands();
    let programs: BTreeSet<&str> = commands.iter().map(|(p, _)| p.as_str()).collect();
    assert!(
        programs.contains("wevtutil") && programs.contains("reg") && programs.contains("bcdedit"),
        "{commands:?}"
    );
    for (program, option) in &commands {
        assert!(
            page.contains(&format!("`{program} {option}")),
            "scripts/tester/collect.ps1 runs `{program} {option}`, which docs/test-machine.md \
             does not use"
        );
        // Reading commands only: no `reg add`/`delete`, `bcdedit /set`, `verifier /reset`, …
        assert!(
            matches!(
                (program.as_str(), option.as_str()),
                ("cmd", "/c")
                    | ("bcdedit", "/enum")
                    | ("verifier", "/querysettings")
                    | ("manage-bde", "-status")
                    | ("pnputil", "/enum-devices" | "/enum-drivers")
                    | ("reg", "export")
                    | ("wevtutil", "epl")
            ),
            "scripts/tester/collect.ps1 runs `{program} {option}`, not a reading command"
        );
    }
    // Its cmdlets: the files of the archive only.
    let code = code();
    let cmdlets: BTreeSet<&str> = code
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
        .filter(|w| {
            w.matches('-').count() == 1
                && w.split_once('-').is_some_and(|(verb, noun)| {
                    verb.chars().next().is_some_and(char::is_uppercase)
                        && noun.chars().next().is_some_and(char::is_uppercase)
                })
        })
        .collect();
    let allowed = [
        "Get-Date",
        "New-Item",
        "Out-File",
        "Out-Null",
        "Test-Path",
        "Join-Path",
        "Copy-Item",
        "Compress-Archive",
        "Remove-Item",
        "Write-Output",
    ];
    for c in &cmdlets {
        assert!(
            allowed.contains(c),
            "scripts/tester/collect.ps1 uses the cmdlet {c}, outside the archive's work"
        );
    }
    // `Remove-Item` only of its own work folder.
    for line in code.lines().filter(|l| l.contains("Remove-Item")) {
        assert!(
            line.contains("-Path $work "),
            "scripts/tester/collect.ps1 removes something other than its work folder: {line}"
        );
    }
}

#[test]
fn the_runbook_runs_the_collect_script_as_the_script_says() {
    let how = "powershell -ExecutionPolicy Bypass -File .\\collect.ps1";
    assert!(
        section("## 10. What to send back").contains(how),
        "docs/test-machine.md: `{how}`"
    );
    assert!(
        script().contains(how),
        "scripts/tester/collect.ps1's header: `{how}`"
    );
    assert!(
        read("scripts/tester/README.txt").contains(how),
        "scripts/tester/README.txt: `{how}`"
    );
}
