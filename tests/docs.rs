//! The documents against the tree: docs/architecture.md names every workspace crate and every
//! directory; the package's file list in the documents is what `scripts/package.sh` writes; the
//! README stays a page a newcomer reads in minutes and says what has not run on Windows.

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

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
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

#[test]
fn architecture_names_every_workspace_crate() {
    let map = read("docs/architecture.md");
    let missing: Vec<String> = members()
        .into_iter()
        .filter(|(path, name)| !names(&map, name) || (path != "." && !names(&map, path)))
        .map(|(path, name)| format!("{name} ({path})"))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not name these crates (and their directories): {missing:?}"
    );
}

#[test]
fn architecture_names_every_directory() {
    let out = Command::new("git")
        .args(["ls-files", "--cached", "--others", "--exclude-standard"])
        .current_dir(root())
        .output()
        .expect("git (the tree's directories are those of its files)");
    assert!(out.status.success(), "git ls-files: {out:?}");
    let dirs: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|f| Path::new(f).parent())
        .flat_map(|d| d.ancestors().map(|a| a.to_string_lossy().into_owned()))
        .filter(|d| !d.is_empty())
        .collect();
    assert!(dirs.contains("simos/src"), "{dirs:?}");
    let map = read("docs/architecture.md");
    let missing: Vec<&String> = dirs.iter().filter(|d| !names(&map, d)).collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md's map does not name these directories: {missing:?}"
    );
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
    // docs/test-machine.md's opening paragraph (Windows paths there: `windbg\rvgpu.js`).
    let machine = read("docs/test-machine.md");
    let para = machine
        .split("\n\n")
        .find(|p| p.contains("writes the package folder"))
        .expect("docs/test-machine.md: `writes the package folder:`");
    let listed: BTreeSet<String> = para
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|s| s.replace('\\', "/"))
        .filter(|s| !s.ends_with(".sh"))
        .collect();
    assert_eq!(listed, files, "docs/test-machine.md: {para}");
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

/// The simulated-OS suites that rerun against the PE image (`against_the_pe_image`): the
/// README gives their number, docs/pe-image.md names each.
#[test]
fn documents_count_and_name_the_suites_rerun_against_the_image() {
    let dir = root().join("simos/tests");
    let mut suites = BTreeSet::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            if text.contains("\nagainst_the_pe_image!(")
                || text.contains("pe::rerun_against_the_pe_image(")
            {
                let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
                suites.insert(stem);
            }
        }
    }
    const WORDS: [&str; 31] = [
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
}
