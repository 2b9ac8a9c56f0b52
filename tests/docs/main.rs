//! The documents against the tree. Every count, file list and command a document states is
//! checked here (or, for the harness's cases, in `whlk/tests/docs_counts.rs`):
//!
//! - docs/architecture.md names every workspace crate and every directory;
//! - the package's file list in the documents is what `scripts/package.sh` writes, and the
//!   tester's folder in docs/test-machine.md what `scripts/tester-folder.sh` makes;
//! - every `cargo` command names a real package, test, bench, binary, example and feature, and
//!   every path in backticks (and every `file.rs::function`) exists, and every path a code
//!   comment names (`paths`);
//! - the number of suites rerun against the PE image, and their names;
//! - docs/ddi-status.md lists exactly the slots the driver's table fills, and its count of
//!   mandatory slots is that of `tests/ddi_table.rs`;
//! - the README's figure tables are rows of docs/performance.md, and its status table uses only
//!   the words its legend defines, one docs/status.md section per row, each *works* cell naming
//!   the suites or cases that prove it on that column;
//! - docs/qemu-guest.md's guest cases are `PCI_SUBSET`; every `RVGPU_*` variable exists;
//! - CONTRIBUTING's count of suites rerun on the image; docs/architecture.md's crate table
//!   against each crate's `no_std` attribute; docs/performance.md's instruction counts and bus
//!   accesses against `scripts/callgrind-baseline.txt`; every requirement's source a Microsoft
//!   page of docs/requirements.md's list (the Windows backend's capabilities:
//!   `whlk/tests/docs_counts.rs`);
//! - the documents (generated pages excepted) stay within their word budget; documents and code
//!   tell no history (no tracker numbers, dates or commit hashes);
//! - no function of the simulated OS over 150 lines, none a reading's `_24h2` twin
//!   (`functions`);
//! - the driver's, device's, UMD's and simulated OS's `pub fn`s take GPU and bus addresses as
//!   `GpuVa` and `BusAddr`, not `u64` (`addresses`).

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
use std::process::Command;

mod addresses;
mod architecture;
#[path = "../common/mod.rs"]
mod common;
mod ddi_places;
mod functions;
mod paths;
mod performance;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Fails with `what` and one line per finding unless `bad` is empty.
fn none_bad(bad: &[String], what: &str) {
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `needle` occurs in `text` as a whole path or name: not as part of a longer one.
fn names(text: &str, needle: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    text.match_indices(needle).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + needle.len()..].chars().next();
        !before.is_some_and(|c| part(c) || c == '/') && !after.is_some_and(part)
    })
}

/// The workspace members of the root Cargo.toml: (path, package name).
fn members() -> Vec<(String, String)> {
    let manifest = read("Cargo.toml");
    let start = manifest.find("\nmembers = [").expect("a members list");
    let list = &manifest[start..];
    let list = &list[..list.find(']').expect("end of members")];
    let paths: Vec<String> = list
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    assert!(paths.len() >= 5, "parsed members: {paths:?}");
    paths
        .into_iter()
        .map(|p| {
            let m = read(&format!("{p}/Cargo.toml"));
            let name = m
                .lines()
                .find_map(|l| l.trim().strip_prefix("name = \""))
                .and_then(|l| l.strip_suffix('"'))
                .unwrap_or_else(|| panic!("{p}/Cargo.toml: no package name"))
                .to_owned();
            (p, name)
        })
        .collect()
}

/// The files `scripts/package.sh` puts in every package: the destinations of its `cp` lines and
/// of its `> "$out/…"` redirections (the INF). What only signing adds is written otherwise and
/// documented with the signing.
fn package_files() -> BTreeSet<String> {
    let script = read("scripts/package.sh");
    let files: BTreeSet<String> = script
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("cp ") || l.contains("> \"$out/"))
        .filter_map(|l| {
            let (_, rest) = l.rsplit_once("\"$out/")?;
            let name = &rest[..rest.find('"')?];
            name.contains('.').then(|| name.to_owned())
        })
        .collect();
    assert!(
        files.contains("rvgpu.sys") && files.contains("rvgpu.inf"),
        "{files:?}"
    );
    files
}

#[test]
fn documents_list_the_package_as_package_sh_writes_it() {
    let files = package_files();
    // docs/windows.md's one-line summary after the command.
    let windows = read("docs/windows.md");
    let line = windows
        .lines()
        .find(|l| l.starts_with("bash scripts/package.sh") && l.contains("-> package/"))
        .expect("docs/windows.md: the `bash scripts/package.sh  # -> package/ : …` line");
    let listed: BTreeSet<String> = line
        .split_once(" : ")
        .expect("` : ` before the file list")
        .1
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    assert_eq!(listed, files, "docs/windows.md: {line}");
    // docs/test-machine.md's step 0 lists the tester's folder (Windows paths there:
    // `windbg\rvgpu.js`): what scripts/tester-folder.sh checks it made, the package among it.
    let machine = read("docs/test-machine.md");
    let para = machine
        .split("\n\n")
        .find(|p| p.contains("makes the tester's folder:"))
        .expect("docs/test-machine.md: `makes the tester's folder:`");
    let listed: BTreeSet<String> = para
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.contains(' '))
        .map(|s| s.replace('\\', "/"))
        .collect();
    let script = read("scripts/tester-folder.sh");
    let folder: BTreeSet<String> = script
        .lines()
        .find_map(|l| l.strip_prefix("expected=\""))
        .expect("scripts/tester-folder.sh: the `expected=\"…\"` line")
        .trim_end_matches('"')
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    assert_eq!(listed, folder, "docs/test-machine.md: {para}");
    let missing: Vec<_> = files.difference(&folder).collect();
    assert!(
        missing.is_empty(),
        "the tester's folder lacks package files {missing:?}"
    );
}

#[test]
fn readme_is_short_and_says_rvgpu_has_not_run_on_windows() {
    let readme = read("README.md");
    let words = readme.split_whitespace().count();
    assert!(words <= 1500, "README.md has {words} words (at most 1,500)");
    // The first screen: the warning comes before the commands.
    let warning = readme
        .find("has not been loaded on Windows")
        .expect("README.md says rvgpu has not been loaded on Windows");
    let commands = readme
        .find("cargo test --workspace")
        .expect("the test command");
    assert!(
        warning < commands,
        "the warning belongs before the commands"
    );
    assert!(readme.contains("RVGPU_VM_TEST=skip"));
    // One status table with the four places a feature is proven.
    let header = "| feature | simulated OS (Linux build) | PE image | Linux guest on QEMU over PCIe | Windows |";
    assert_eq!(
        readme.matches(header).count(),
        1,
        "the status table's header"
    );
    for next in [
        "docs/architecture.md",
        "docs/windows.md",
        "docs/test-machine.md",
        "docs/robustness.md",
        "docs/requirements.md",
    ] {
        assert!(readme.contains(next), "README.md does not point to {next}");
    }
}

/// Phrases that tell a story of work in progress rather than say what is.
const HISTORY: &[&str] = &[
    "this round",
    "this session",
    "previous session",
    "a defect found",
    "since then",
];

#[test]
fn user_docs_describe_what_is() {
    let mut docs = vec!["README.md".to_owned(), "CONTRIBUTING.md".to_owned()];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            docs.push(format!("docs/{name}"));
        }
    }
    assert!(docs.len() > 10, "{docs:?}");
    for doc in &docs {
        let text = read(doc).to_lowercase();
        let found: Vec<&&str> = HISTORY.iter().filter(|p| text.contains(*p)).collect();
        assert!(found.is_empty(), "{doc} tells history: {found:?}");
    }
}

/// The simulated-OS suites that rerun against the PE image (`against_the_pe_image`).
fn pe_rerun_suites() -> BTreeSet<String> {
    let dir = root().join("simos/tests");
    let mut suites = BTreeSet::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        // A suite is a file, or a directory whose main.rs is the binary's root.
        let root = if path.is_dir() {
            path.join("main.rs")
        } else {
            path.clone()
        };
        if root.extension().is_some_and(|x| x == "rs") && root.exists() {
            let text = std::fs::read_to_string(&root).unwrap();
            if text.contains("\nagainst_the_pe_image!(")
                || text.contains("pe::rerun_against_the_pe_image(")
            {
                let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
                suites.insert(stem);
            }
        }
    }
    suites
}

/// The simulated-OS suites that rerun against the PE image (`against_the_pe_image`): the
/// README gives their number, docs/pe-image.md names each.
#[test]
fn documents_count_and_name_the_suites_rerun_against_the_image() {
    let suites = pe_rerun_suites();
    const WORDS: &[&str] = &[
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
        "twenty-one",
        "twenty-two",
        "twenty-three",
        "twenty-four",
        "twenty-five",
        "twenty-six",
        "twenty-seven",
        "twenty-eight",
        "twenty-nine",
        "thirty",
        "thirty-one",
        "thirty-two",
        "thirty-three",
        "thirty-four",
        "thirty-five",
        "thirty-six",
        "thirty-seven",
        "thirty-eight",
        "thirty-nine",
        "forty",
        "forty-one",
        "forty-two",
        "forty-three",
        "forty-four",
        "forty-five",
    ];
    let n = WORDS[suites.len()];
    let readme = read("README.md").replace('\n', " ");
    assert!(
        readme.contains(&format!("reruns {n} simulated-OS suites")),
        "README: the test command reruns {n} suites against the image: {suites:?}"
    );
    let doc = read("docs/pe-image.md");
    assert!(
        doc.replace('\n', " ")
            .contains(&format!("{n} simulated-OS suites rerun")),
        "docs/pe-image.md: {n} suites"
    );
    for s in &suites {
        assert!(
            doc.contains(&format!("`{s}`")),
            "docs/pe-image.md does not name the suite `{s}`"
        );
    }
    let contributing = read("CONTRIBUTING.md").replace('\n', " ");
    assert!(
        contributing.contains(&format!("{n} simulated-OS suites run twice")),
        "CONTRIBUTING.md: {n} simulated-OS suites run twice"
    );
}

/// The user-facing documents: README, CONTRIBUTING and every page of docs/.
fn documents() -> Vec<String> {
    let mut docs = vec!["README.md".to_owned(), "CONTRIBUTING.md".to_owned()];
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// The pages of docs/ that a test writes (`tests/traceability.rs`, `simos/tests/thunks_page.rs`):
/// outside the word budget.
const GENERATED: &[&str] = &["docs/traceability.md", "docs/thunks.md"];

/// Where a generated region inside a hand-written page starts: the marker names the test that
/// writes it. The region ends at [`GENERATED_REGION_END`].
const GENERATED_REGION: &str = "<!-- Generated by `";
const GENERATED_REGION_END: &str = "<!-- End of the generated table. -->";

/// `text` without its generated regions; a region that does not name a test as its writer, or
/// does not end, fails.
fn written_by_hand(doc: &str, text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(a) = rest.find(GENERATED_REGION) {
        out.push_str(&rest[..a]);
        let region = &rest[a..];
        let writer = region[GENERATED_REGION.len()..]
            .split('`')
            .next()
            .unwrap_or("");
        assert!(
            writer.ends_with(".rs") && root().join(writer).is_file(),
            "{doc}: a generated region names `{writer}` as its writer, which is no test file"
        );
        let Some(b) = region.find(GENERATED_REGION_END) else {
            panic!(
                "{doc}: a generated region (by {writer}) does not end with {GENERATED_REGION_END}"
            );
        };
        rest = &region[b + GENERATED_REGION_END.len()..];
    }
    out.push_str(rest);
    out
}

/// The words of docs/*.md together, as `wc -w` counts them, generated pages and regions
/// excepted: a new page or section makes room for itself by saying something else once
/// instead of twice.
#[test]
fn docs_stay_within_their_word_budget() {
    const BUDGET: usize = 43_500;
    let mut total = 0;
    let mut per_page = Vec::new();
    for doc in documents()
        .iter()
        .filter(|d| d.starts_with("docs/") && !GENERATED.contains(&d.as_str()))
    {
        let words = written_by_hand(doc, &read(doc)).split_whitespace().count();
        per_page.push(format!("{doc}: {words}"));
        total += words;
    }
    assert!(
        total <= BUDGET,
        "docs/ has {total} words (at most {BUDGET}): {per_page:#?}"
    );
    for page in GENERATED {
        assert!(
            read(page).contains("Generated by `tests/")
                || read(page).contains("Generated by `simos/tests/"),
            "{page} is counted out of the budget as generated, but does not say what writes it"
        );
    }
}

/// Every requirement of docs/requirements.md names its source: a page of the numbered list at
/// the top, each a learn.microsoft.com address, or Microsoft's DDI reference; and no document
/// sends a reader to a directory outside the repository (`shared/`).
#[test]
fn requirement_sources_are_pages_a_reader_can_open() {
    let doc = read("docs/requirements.md");
    let mut pages = std::collections::BTreeMap::new();
    let mut bad = Vec::new();
    for row in table_rows(&doc) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let first = cells.get(1).copied().unwrap_or("");
        if first.len() == 3 && first.bytes().all(|c| c.is_ascii_digit()) {
            let page = cells.get(2).copied().unwrap_or("");
            if !page.contains("<https://learn.microsoft.com/") {
                bad.push(format!(
                    "source {first} has no learn.microsoft.com address: {row}"
                ));
            }
            pages.insert(first.to_owned(), page.to_owned());
        }
    }
    assert!(
        pages.len() >= 5,
        "docs/requirements.md: the numbered pages: {pages:?}"
    );
    let mut seen = 0;
    for row in table_rows(&doc) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let id = cells.get(1).copied().unwrap_or("");
        let is_id = id.split_once('-').is_some_and(|(a, n)| {
            !a.is_empty()
                && a.bytes().all(|c| c.is_ascii_uppercase())
                && !n.is_empty()
                && n.bytes().all(|c| c.is_ascii_digit())
        });
        if !is_id {
            continue;
        }
        seen += 1;
        let source = cells[cells.len() - 2];
        let number = source.split_whitespace().next().unwrap_or("");
        if !(pages.contains_key(number) || source.starts_with("DDI reference")) {
            bad.push(format!("{id}: source `{source}` is no page of the list"));
        }
    }
    assert!(seen > 50, "only {seen} requirements found");
    for d in documents() {
        let text = read(&d);
        if text.contains("`shared/") || text.contains("../shared") || text.contains("shared/seeds")
        {
            bad.push(format!(
                "{d} sends the reader to `shared/`, outside the repository"
            ));
        }
    }
    none_bad(&bad, "requirement sources");
}

/// `doc` without the lines that cite another project (the [H] and [D] sources of
/// docs/windows-bringup.md): their paths and commits are that project's.
fn own_text(doc: &str) -> String {
    let mut foreign = false;
    let mut kept = Vec::new();
    let text = read(doc);
    for line in text.lines() {
        let cites = line.contains("[H]")
            || line.contains("**[D]**")
            || line.to_lowercase().contains("helios")
            || line.contains("decompiled-pseudocode");
        if cites {
            foreign = true;
        } else if line.trim().is_empty() || line.starts_with("- ") || line.starts_with("| ") {
            foreign = false;
        }
        if !foreign {
            kept.push(line);
        }
    }
    kept.join("\n")
}

/// Issue numbers, dates and commit hashes belong in commit messages, not in documents.
#[test]
fn documents_name_no_issue_numbers_dates_or_commits() {
    for doc in documents() {
        let text = own_text(&doc);
        let lower = text.to_lowercase();
        for (i, _) in lower.match_indices("issue") {
            let rest = lower[i + 5..].trim_start_matches([' ', '-', '_', 's']);
            assert!(
                !rest.starts_with(|c: char| c.is_ascii_digit()),
                "{doc} names an issue number: {}",
                &text[i..(i + 12).min(text.len())]
            );
        }
        for word in text.split(|c: char| !c.is_ascii_alphanumeric() && c != '-') {
            assert!(!is_date(word), "{doc} gives a date: {word}");
            assert!(!is_commit_hash(word), "{doc} names a commit: {word}");
        }
    }
}

/// Package name → directory, for every workspace member.
fn packages() -> std::collections::BTreeMap<String, String> {
    members().into_iter().map(|(p, n)| (n, p)).collect()
}

/// Whether the package in `dir` has a target of `kind` called `name`.
fn has_target(dir: &str, kind: &str, name: &str) -> bool {
    let d = root().join(dir);
    let manifest = read(&format!("{dir}/Cargo.toml"));
    let declared = manifest.contains(&format!("[[{kind}]]\nname = \"{name}\""));
    let folder = match kind {
        "test" => "tests",
        "bench" => "benches",
        "example" => "examples",
        _ => "src/bin",
    };
    let file = d.join(folder).join(format!("{name}.rs")).exists()
        || d.join(folder).join(name).join("main.rs").exists();
    let main_bin = kind == "bin"
        && d.join("src/main.rs").exists()
        && manifest.contains(&format!("name = \"{name}\""));
    declared || file || main_bin
}

/// Every `cargo` command in the documents names a real package, target and feature.
#[test]
fn commands_in_the_documents_name_real_targets() {
    let packages = packages();
    let mut bad = Vec::new();
    let mut seen = 0;
    for doc in documents() {
        let text = read(&doc);
        for line in text.lines() {
            for (at, _) in line.match_indices("cargo ") {
                let words: Vec<&str> = line[at..]
                    .split(|c: char| c.is_whitespace() || c == '`' || c == ';' || c == ',')
                    .filter(|w| !w.is_empty())
                    .take_while(|w| *w != "--" && *w != "&&" && *w != "|" && *w != "#")
                    .collect();
                let sub = words.get(1).copied().unwrap_or("");
                if !matches!(sub, "test" | "run" | "bench" | "build" | "clippy") {
                    continue;
                }
                seen += 1;
                let value = |flag: &str| {
                    words
                        .iter()
                        .position(|w| *w == flag)
                        .and_then(|i| words.get(i + 1))
                        .map(|w| w.trim_end_matches([')', '.', ':']))
                };
                let package = value("-p").unwrap_or("rvgpu");
                if package.chars().all(|c| c.is_ascii_uppercase()) {
                    continue; // a placeholder such as `CRATE`
                }
                let Some(dir) = packages.get(package) else {
                    bad.push(format!("{doc}: no package `{package}`: {line}"));
                    continue;
                };
                for (flag, kind) in [
                    ("--test", "test"),
                    ("--bench", "bench"),
                    ("--bin", "bin"),
                    ("--example", "example"),
                ] {
                    if let Some(name) = value(flag) {
                        if !has_target(dir, kind, name) {
                            bad.push(format!("{doc}: {package} has no {kind} `{name}`: {line}"));
                        }
                    }
                }
                if let Some(features) = value("--features") {
                    let manifest = read(&format!("{dir}/Cargo.toml"));
                    for f in features.split(',') {
                        if !manifest.contains(&format!("\n{f} = [")) {
                            bad.push(format!("{doc}: {package} has no feature `{f}`: {line}"));
                        }
                    }
                }
            }
        }
    }
    assert!(seen > 20, "found only {seen} cargo commands");
    none_bad(&bad, "commands that cannot run");
}

/// The top-level directories a repository path in a document can start with.
const TOP: &[&str] = &[
    "src/", "driver/", "umd/", "device/", "simos/", "whlk/", "tests/", "fuzz/", "inf/", "scripts/",
    "build/", "docs/", "tools/", ".ci/",
];

/// Every repository path in backticks exists, and a `file.rs::name` names a function or module
/// of that file.
#[test]
fn paths_in_the_documents_exist() {
    let mut bad = Vec::new();
    let mut seen = 0;
    for doc in documents() {
        let text = own_text(&doc);
        for span in text.split('`').skip(1).step_by(2) {
            for token in span.split_whitespace() {
                let token = token.trim_end_matches([',', '.', ':', ';', ')']);
                let token = token.trim_start_matches('(');
                if !TOP.iter().any(|t| token.starts_with(t))
                    || token.contains(['*', '<', '{', '$', '…'])
                {
                    continue;
                }
                seen += 1;
                let (path, item) = match token.split_once("::") {
                    Some((p, i)) => (p, i.rsplit("::").next()),
                    None => (token, None),
                };
                let full = root().join(path.trim_end_matches('/'));
                if !full.exists() {
                    bad.push(format!("{doc}: `{token}` does not exist"));
                    continue;
                }
                if let Some(item) = item.filter(|_| path.ends_with(".rs")) {
                    let source = std::fs::read_to_string(&full).unwrap();
                    if !source.contains(&format!("fn {item}("))
                        && !source.contains(&format!("mod {item} "))
                        && !source.contains(&format!("fn {item}<"))
                    {
                        bad.push(format!("{doc}: `{token}`: no `{item}` in {path}"));
                    }
                }
            }
        }
    }
    assert!(seen > 50, "found only {seen} paths");
    none_bad(&bad, "paths that do not exist");
}

/// The slot names of the `| Slot | … |` tables of docs/ddi-status.md under `heading`.
fn ddi_rows(doc: &str, heading: &str) -> BTreeSet<String> {
    let from = doc
        .find(heading)
        .unwrap_or_else(|| panic!("docs/ddi-status.md: no `{heading}`"));
    let rest = &doc[from + heading.len()..];
    let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Slot") && !l.starts_with("| ---"))
        .filter_map(|l| l.split('|').nth(1))
        .flat_map(|cell| {
            cell.split(',')
                .map(|s| s.trim().trim_matches('`').to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The slots of class `class` in the DDI catalog (`rvgpu_ddi::catalog`).
fn ddi_table_list(class: rvgpu_ddi::catalog::Class) -> BTreeSet<String> {
    rvgpu_ddi::catalog::of_class(class)
        .map(|d| d.name.to_owned())
        .collect()
}

#[test]
fn ddi_status_lists_what_the_table_fills() {
    let doc = read("docs/ddi-status.md");
    let mandatory = ddi_table_list(rvgpu_ddi::catalog::Class::Mandatory);
    let optional = ddi_table_list(rvgpu_ddi::catalog::Class::Optional);
    assert!(mandatory.len() > 50, "{mandatory:?}");
    let filled: BTreeSet<String> =
        rvgpu_ddi::init::filled_slots(&rvgpu_kmd::initialization_data::<common::NullPlatform>())
            .filter(|&(_, set)| set)
            .map(|(name, _)| name.to_owned())
            .collect();
    let listed = ddi_rows(&doc, "## Mandatory slots");
    assert_eq!(listed, mandatory, "docs/ddi-status.md's mandatory table");
    let listed_optional = ddi_rows(&doc, "## Optional slots filled");
    assert_eq!(
        listed_optional, optional,
        "docs/ddi-status.md's optional table"
    );
    let all: BTreeSet<String> = listed.union(&listed_optional).cloned().collect();
    assert_eq!(all, filled, "docs/ddi-status.md against the driver's table");
    let n = mandatory.len();
    let done = mandatory.intersection(&filled).count();
    assert!(
        doc.contains(&format!("{done} of {n} mandatory slots are filled")),
        "docs/ddi-status.md should say `{done} of {n} mandatory slots are filled`"
    );
}

/// The data rows of the markdown tables in `text` (header and rule lines dropped).
fn table_rows(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let mut rows = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let rule = |s: &str| s.starts_with("|-") || s.starts_with("|:") || s.starts_with("| -");
        let is_header = lines.get(i + 1).is_some_and(|n| rule(n));
        if l.starts_with('|') && !rule(l) && !is_header {
            rows.push(*l);
        }
    }
    rows
}

/// The words a cell of the README's status table may start with; the legend under the table
/// defines each.
const STATUS_WORDS: &[&str] = &["works", "partly", "not run", "—"];

/// The README's status table: its header line to the blank line after it.
fn status_table(readme: &str) -> &str {
    let header = "| feature | simulated OS (Linux build) | PE image | Linux guest on QEMU over PCIe | Windows |";
    let from = readme.find(header).expect("the status table");
    let table = &readme[from..];
    &table[..table.find("\n\n").unwrap_or(table.len())]
}

#[test]
fn readme_status_table_uses_its_legend_and_status_md_has_a_section_per_row() {
    let readme = read("README.md");
    let table = status_table(&readme);
    let status = read("docs/status.md");
    let mut rows = 0;
    for row in table_rows(table) {
        rows += 1;
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let feature = cells[1];
        for cell in &cells[2..cells.len() - 1] {
            assert!(
                STATUS_WORDS.iter().any(|w| cell.starts_with(w)),
                "README status `{feature}`: `{cell}` does not start with a word of the legend {STATUS_WORDS:?}"
            );
        }
        assert!(
            status.contains(&format!("\n## {feature}\n")),
            "docs/status.md has no section `## {feature}`"
        );
    }
    assert!(rows > 10, "{rows} status rows");
    for word in STATUS_WORDS {
        assert!(
            readme.contains(&format!("*{word}*")),
            "README's legend does not define *{word}*"
        );
    }
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every link to `page.md#anchor` between the documents names a heading of that page.
#[test]
fn links_between_documents_name_real_headings() {
    let mut bad = Vec::new();
    let mut seen = 0;
    for doc in documents() {
        let text = read(&doc);
        for (at, _) in text.match_indices(".md#") {
            let start = text[..at]
                .rfind(|c: char| c == '(' || c.is_whitespace())
                .map_or(0, |i| i + 1);
            let page = &text[start..at + 3];
            let anchor: String = text[at + 4..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_'))
                .collect();
            let path = if doc.starts_with("docs/") || page.starts_with("docs/") {
                if page.starts_with("docs/") {
                    page.to_owned()
                } else {
                    format!("docs/{page}")
                }
            } else {
                page.to_owned()
            };
            let Ok(target) = std::fs::read_to_string(root().join(&path)) else {
                bad.push(format!("{doc}: links to {path}, which does not exist"));
                continue;
            };
            seen += 1;
            let found = target
                .lines()
                .filter_map(|l| l.strip_prefix('#'))
                .map(|l| slug(l.trim_start_matches('#')))
                .any(|s| s == anchor);
            if !found {
                bad.push(format!("{doc}: {path}#{anchor} names no heading"));
            }
        }
    }
    assert!(seen > 10, "found only {seen} links");
    none_bad(&bad, "links to missing headings");
}

/// docs/fuzzing.md's table of targets lists exactly the `[[bin]]` targets of fuzz/Cargo.toml.
#[test]
fn fuzzing_page_lists_every_fuzz_target() {
    let manifest = read("fuzz/Cargo.toml");
    let targets: BTreeSet<String> = manifest
        .split("[[bin]]")
        .skip(1)
        .filter_map(|b| b.lines().find_map(|l| l.trim().strip_prefix("name = \"")))
        .filter_map(|n| n.strip_suffix('"'))
        .map(str::to_owned)
        .collect();
    assert!(targets.len() >= 2, "{targets:?}");
    let doc = read("docs/fuzzing.md");
    let from = doc.find("## Targets").expect("docs/fuzzing.md: ## Targets");
    let listed: BTreeSet<String> = table_rows(
        &doc[from..doc[from..]
            .find("\n## Invariants")
            .map_or(doc.len(), |i| from + i)],
    )
    .iter()
    .filter_map(|r| r.split('|').nth(1))
    .map(|c| c.trim().trim_matches('`').to_owned())
    .collect();
    assert_eq!(
        listed, targets,
        "docs/fuzzing.md's targets against fuzz/Cargo.toml"
    );
}

/// The harness cases the QEMU guest runs (`PCI_SUBSET` of whlk/src/cases/mod.rs).
fn pci_subset() -> BTreeSet<String> {
    let source = read("whlk/src/cases/mod.rs");
    let start = source
        .find("pub const PCI_SUBSET: &[&str] = &[")
        .expect("whlk/src/cases/mod.rs: PCI_SUBSET");
    let body = &source[start..];
    let body = &body[..body.find("];").expect("end of PCI_SUBSET")];
    body.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// Every *works* or *partly* cell of the README's status table names in backticks what proves
/// it on that column: a test suite (on the PE image, one rerun against `rvgpu.sys`, a `pe_*`
/// suite or an image test of `tests/`), a harness case of the QEMU guest's subset or its VM
/// test, or `.ci/run` for the harness run CI makes.
#[test]
fn readme_status_cells_name_what_proves_them() {
    let readme = read("README.md");
    let table = status_table(&readme);
    let suite = |name: &str| {
        [
            "simos/tests",
            "tests",
            "whlk/tests",
            "fuzz/targets/tests",
            "device/tests",
            "device/vfu/tests",
        ]
        .iter()
        .any(|d| {
            root().join(d).join(format!("{name}.rs")).exists()
                || root().join(d).join(name).join("main.rs").exists()
        })
    };
    let rerun = pe_rerun_suites();
    let on_image = |name: &str| {
        rerun.contains(name)
            || (name.starts_with("pe_") && root().join(format!("simos/tests/{name}.rs")).exists())
            || std::fs::read_to_string(root().join(format!("tests/{name}.rs")))
                .is_ok_and(|s| s.contains("rvgpu.sys"))
            || (name == ".ci/run" && read(".ci/run").contains("--driver pe"))
    };
    let guest = pci_subset();
    let in_guest = |name: &str| guest.contains(name) || name == "vm";
    let mut bad = Vec::new();
    for row in table_rows(table) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let feature = cells[1];
        for (column, cell) in cells[2..cells.len() - 1].iter().enumerate() {
            if !(cell.starts_with("works") || cell.starts_with("partly")) {
                continue;
            }
            let named: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
            if named.is_empty() {
                bad.push(format!(
                    "{feature}, column {}: `{cell}` names no proof",
                    column + 1
                ));
            }
            for name in named {
                let ok = match column {
                    0 => suite(name),
                    1 => on_image(name),
                    2 => in_guest(name),
                    _ => false,
                };
                if !ok {
                    bad.push(format!(
                        "{feature}, column {}: `{name}` proves nothing there",
                        column + 1
                    ));
                }
            }
        }
    }
    none_bad(&bad, "README status cells");
}

/// Whether `word` (alphanumerics and `-`) looks like a commit hash: 7 to 40 lowercase hex digits
/// with at least one letter and one digit.
fn is_commit_hash(word: &str) -> bool {
    let b = word.as_bytes();
    (7..=40).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        && b.iter().any(u8::is_ascii_digit)
        && b.iter().any(u8::is_ascii_alphabetic)
}

/// Whether `word` is a date, `YYYY-MM-DD`.
fn is_date(word: &str) -> bool {
    let b = word.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && word.starts_with("20")
        && word.replace('-', "").bytes().all(|c| c.is_ascii_digit())
}

/// The files of the tree: tracked or new, not ignored (`git ls-files`).
fn tree_files() -> Vec<String> {
    let out = Command::new("git")
        .args(["ls-files", "--cached", "--others", "--exclude-standard"])
        .current_dir(root())
        .output()
        .expect("git (the tree's directories are those of its files)");
    assert!(out.status.success(), "git ls-files: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The source files of the tree (tracked or new, not ignored) whose comments the history check
/// reads.
fn source_files() -> Vec<String> {
    let code = [
        ".rs", ".sh", ".js", ".py", ".toml", ".c", ".h", ".natvis", ".inf",
    ];
    tree_files()
        .into_iter()
        .filter(|f| code.iter().any(|e| f.ends_with(e)) || f.starts_with(".ci/"))
        .filter(|f| root().join(f).is_file())
        .collect()
}

/// Code tells no history either: no tracker numbers in comments, test names or strings, no
/// dates, and no commit hashes in comments except those pinning another project's sources (the
/// decompiled Windows code, cited as `nohuto/decompiled-pseudocode` with its commit).
#[test]
fn code_names_no_issue_numbers_dates_or_commits() {
    let mut bad = Vec::new();
    for file in source_files() {
        let Ok(text) = std::fs::read_to_string(root().join(&file)) else {
            continue;
        };
        let mut citing = false;
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let at = format!("{file}:{}", n + 1);
            for (i, _) in lower.match_indices("issue") {
                let rest = lower[i + 5..].trim_start_matches([' ', '-', '_', 's', '#']);
                if rest.starts_with(|c: char| c.is_ascii_digit()) {
                    bad.push(format!("{at}: a tracker number: {}", line.trim()));
                }
            }
            let comment = line
                .find("//")
                .or_else(|| line.trim_start().starts_with('#').then_some(0))
                .map(|i| &line[i..]);
            // A citation of the decompiled sources may continue on the next comment lines.
            if comment.is_none() {
                citing = false;
            }
            if lower.contains("decompiled-pseudocode") || lower.contains("helios") {
                citing = true;
            }
            for word in line.split(|c: char| !c.is_ascii_alphanumeric() && c != '-') {
                if is_date(word) {
                    bad.push(format!("{at}: a date: {}", line.trim()));
                }
            }
            if let Some(comment) = comment.filter(|_| !citing) {
                // GUIDs stay whole (`-` joins their groups), so they are not hashes.
                for word in comment.split(|c: char| !c.is_ascii_alphanumeric() && c != '-') {
                    if is_commit_hash(word) {
                        bad.push(format!("{at}: a commit: {}", line.trim()));
                    }
                }
            }
        }
    }
    none_bad(&bad, "history in the code (it belongs in commit messages)");
}

#[test]
fn the_history_checks_see_dates_and_commits() {
    assert!(is_date(&format!("{}-01-09", 2031)));
    assert!(!is_date("0x11007"));
    assert!(is_commit_hash("a1b2c3d"));
    assert!(!is_commit_hash("deadbeef"));
    assert!(!is_commit_hash("f3295a17-70a0"));
}

/// docs/qemu-guest.md's table of the QEMU guest's cases is `PCI_SUBSET`.
#[test]
fn qemu_guest_page_lists_the_guests_cases() {
    let doc = read("docs/qemu-guest.md");
    let from = doc
        .find("`--subset pci` is `PCI_SUBSET`")
        .expect("docs/qemu-guest.md: `--subset pci` is `PCI_SUBSET`");
    let rest = &doc[from..];
    let rest = &rest[rest.find("\n|").expect("the table")..];
    let table = &rest[..rest.find("\n\n").unwrap_or(rest.len())];
    let listed: BTreeSet<String> = table_rows(table)
        .iter()
        .filter_map(|r| r.split('|').nth(1))
        .map(|c| c.trim().trim_matches('`').to_owned())
        .collect();
    assert_eq!(listed, pci_subset(), "docs/qemu-guest.md's guest cases");
}

/// Every `RVGPU_*` environment variable a document names is read somewhere in the tree.
#[test]
fn environment_variables_in_the_documents_exist() {
    let sources: String = source_files()
        .iter()
        .filter_map(|f| std::fs::read_to_string(root().join(f)).ok())
        .collect();
    let mut bad = Vec::new();
    let mut seen = 0;
    for doc in documents() {
        let text = read(&doc);
        for (i, _) in text.match_indices("RVGPU_") {
            let name: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            let name = name.trim_end_matches('_');
            seen += 1;
            if !sources.contains(name) {
                bad.push(format!("{doc}: {name}"));
            }
        }
    }
    assert!(seen > 10, "found only {seen} variables");
    none_bad(&bad, "variables nothing reads");
}

/// The numbers of a document's numbered headings (`## 3. …`, `### 12.5 …`, `## 8a. …`).
fn section_numbers(doc: &str) -> BTreeSet<String> {
    read(doc)
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| l.trim_start_matches('#').trim_start())
        .filter_map(|l| l.split(' ').next())
        .map(|n| n.trim_end_matches('.'))
        .filter(|n| is_section(n))
        .map(str::to_owned)
        .collect()
}

/// `3`, `12.5`, `8a`: digits, an optional letter, then `.digits` parts.
fn is_section(n: &str) -> bool {
    let mut parts = n.split('.');
    let Some(first) = parts.next() else {
        return false;
    };
    let digits = first.trim_end_matches(|c: char| c.is_ascii_lowercase());
    !digits.is_empty()
        && first.len() <= digits.len() + 1
        && digits.bytes().all(|c| c.is_ascii_digit())
        && parts.all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
}

/// Every `§` reference in code and documents names the document it points into (a document
/// may name its own sections bare; other standards are cited as `RFC nnnn §x`), and that
/// document has a heading with that number, so a reader who follows a comment finds the text.
/// A link by anchor (`logs.md#kmd`) from code names a heading of the page.
#[test]
fn section_references_name_real_sections() {
    let mut files = source_files();
    files.extend(documents());
    let mut bad = Vec::new();
    let mut seen = 0;
    let mut numbers = std::collections::BTreeMap::new();
    // This file names the sign in its own comments and strings.
    files.retain(|f| !f.starts_with("tests/docs/"));
    for file in files {
        let Ok(text) = std::fs::read_to_string(root().join(&file)) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let at = format!("{file}:{}", n + 1);
            for (i, _) in line.match_indices('§') {
                let num: String = line[i + '§'.len_utf8()..]
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
                    .collect();
                let num = num.trim_end_matches('.').to_owned();
                // A `§` before words cites a source document by title (requirements.md).
                if !num.starts_with(|c: char| c.is_ascii_digit()) {
                    continue;
                }
                let before = &line[..i];
                let doc = before
                    .rfind(".md")
                    .map(|end| {
                        let start = before[..end]
                            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "-_/".contains(c)))
                            .map_or(0, |s| s + 1);
                        let name = &before[start..end];
                        let name = name.rsplit('/').next().unwrap_or(name);
                        format!("docs/{name}.md")
                    })
                    .or_else(|| file.starts_with("docs/").then(|| file.clone()));
                // Another standard (`RFC 2315 §9.3`) or another project's file in capitals
                // (`BRINGUP_QUIRKS.md §6`, Helios's).
                let cites = before.rsplit(['(', ';', ',']).next().unwrap_or(before);
                if cites.contains("RFC ")
                    || doc
                        .as_deref()
                        .is_some_and(|d| d.bytes().any(|c| c.is_ascii_uppercase()))
                {
                    continue;
                }
                let Some(doc) = doc else {
                    bad.push(format!("{at}: §{num} names no document"));
                    continue;
                };
                seen += 1;
                if !root().join(&doc).is_file() {
                    bad.push(format!("{at}: §{num} of {doc}, which does not exist"));
                    continue;
                }
                let have = numbers
                    .entry(doc.clone())
                    .or_insert_with(|| section_numbers(&doc));
                if !have.contains(&num) {
                    bad.push(format!("{at}: {doc} has no section {num}"));
                }
            }
            if file.starts_with("docs/") || file.ends_with(".md") {
                continue;
            }
            for (i, _) in line.match_indices(".md#") {
                let start = line[..i]
                    .rfind(|c: char| !(c.is_ascii_alphanumeric() || "-_/".contains(c)))
                    .map_or(0, |s| s + 1);
                let name = line[start..i].rsplit('/').next().unwrap_or_default();
                let anchor: String = line[i + 4..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_'))
                    .collect();
                let doc = format!("docs/{name}.md");
                let Ok(target) = std::fs::read_to_string(root().join(&doc)) else {
                    continue;
                };
                seen += 1;
                let found = target
                    .lines()
                    .filter_map(|l| l.strip_prefix('#'))
                    .any(|h| slug(h.trim_start_matches('#')) == anchor);
                if !found {
                    bad.push(format!("{at}: {doc} has no heading #{anchor}"));
                }
            }
        }
    }
    assert!(
        seen > 100,
        "only {seen} section references found: the scan is broken"
    );
    none_bad(&bad, "section references that lead nowhere");
}
