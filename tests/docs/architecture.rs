//! docs/architecture.md against the tree: every crate and directory named, the crate table's
//! `no_std` column, the layering, the driver core's unsafe files, the "Where is" table.

use super::*;

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
    let dirs: BTreeSet<String> = tree_files()
        .iter()
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

/// Whether the crate in `dir` declares itself `no_std` (outside its unit tests) in its root
/// file: `#![no_std]` or `#![cfg_attr(not(test), no_std)]`.
fn crate_is_no_std(dir: &str) -> bool {
    let base = if dir == "." {
        String::new()
    } else {
        format!("{dir}/")
    };
    ["src/lib.rs", "src/main.rs"].iter().any(|f| {
        std::fs::read_to_string(root().join(format!("{base}{f}"))).is_ok_and(|text| {
            text.lines().any(|l| {
                let l = l.trim();
                l == "#![no_std]" || l == "#![cfg_attr(not(test), no_std)]"
            })
        })
    })
}

/// docs/architecture.md's crate table says `yes…` in its `no_std` column exactly for the crates
/// whose root file carries the attribute, and lists every workspace crate.
#[test]
fn architecture_crate_table_matches_each_crates_no_std_attribute() {
    let doc = read("docs/architecture.md");
    let from = doc
        .find("## Crates")
        .expect("docs/architecture.md: ## Crates");
    let rest = &doc[from..];
    let table = &rest[rest.find("\n|").expect("the crate table") + 1..];
    let table = &table[..table.find("\n\n").unwrap_or(table.len())];
    let packages = packages();
    let mut listed = BTreeSet::new();
    let mut bad = Vec::new();
    for row in table_rows(table) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let name = cells[1].trim_matches('`');
        let said = cells[4].starts_with("yes");
        let Some(dir) = packages.get(name) else {
            bad.push(format!("`{name}` is not a workspace crate"));
            continue;
        };
        listed.insert(name.to_owned());
        let is = crate_is_no_std(dir);
        if said != is {
            bad.push(format!(
                "`{name}` ({dir}): the table says no_std {}, its root file {}",
                cells[4],
                if is { "declares it" } else { "does not" }
            ));
        }
    }
    let all: BTreeSet<String> = packages.keys().cloned().collect();
    for missing in all.difference(&listed) {
        bad.push(format!("`{missing}` has no row"));
    }
    none_bad(&bad, "docs/architecture.md's crate table");
}

/// `scripts/import-cycles.py` with `args`: its report, after checking it ran.
fn import_cycles(args: &[&str]) -> (bool, String) {
    let out = Command::new("python3")
        .arg(root().join("scripts/import-cycles.py"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("python3 runs scripts/import-cycles.py");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("modules:"),
        "import-cycles.py printed no figures: {out:?}"
    );
    (out.status.success(), text)
}

/// The circles in `import-cycles.py`'s report: each as (its crate's source directory, its
/// modules, whether the script marks it as breaking the layering rule).
fn circles(report: &str) -> Vec<(String, BTreeSet<String>, bool)> {
    let mut dir = "";
    let mut out = Vec::new();
    for line in report.lines() {
        if let Some((d, _)) = line.split_once(": modules:") {
            dir = d;
        } else if let Some((head, mods)) = line
            .trim()
            .strip_prefix("circle of ")
            .and_then(|c| c.split_once(':'))
        {
            out.push((
                dir.to_owned(),
                mods.split_whitespace().map(str::to_owned).collect(),
                head.contains("(breaks the layering)"),
            ));
        }
    }
    out
}

/// The modules a paragraph of docs/architecture.md beginning with `start` names in backticks.
fn named_modules(doc: &str, start: &str) -> BTreeSet<String> {
    doc.split("\n\n")
        .find(|p| p.starts_with(start))
        .unwrap_or_default()
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|n| !n.contains('/') && !n.ends_with(".py"))
        .map(str::to_owned)
        .collect()
}

/// The layering docs/architecture.md states ("Layers") holds in the driver core, the simulated
/// OS, the UMD and the harness: no circle that `scripts/import-cycles.py` (where the rule is
/// written) marks as breaking it.
#[test]
fn no_import_circle_joins_top_level_modules() {
    let (ok, text) = import_cycles(&["--check"]);
    let doc = read("docs/architecture.md");
    for dir in ["driver/kmd/src", "simos/src", "umd/src", "whlk/src"] {
        assert!(
            text.contains(&format!("{dir}: modules:")),
            "{dir} not checked: {text}"
        );
        assert!(
            names(&doc, dir),
            "docs/architecture.md's layers do not name {dir}"
        );
    }
    // The circles that break the rule, as the script (where the rule is written) marks them.
    let broken: Vec<(String, BTreeSet<String>)> = circles(&text)
        .into_iter()
        .filter(|(_, _, breaks)| *breaks)
        .map(|(dir, mods, _)| (dir, mods))
        .collect();
    assert!(ok && broken.is_empty(), "{text}");
}

/// The import circles docs/architecture.md describes for the driver core are those
/// `scripts/import-cycles.py` finds there: none, in the paragraph that begins "No import circle
/// remains", or the modules of the one that remains, named in the paragraph that begins "One
/// import circle remains between the KMD".
#[test]
fn architecture_names_the_driver_cores_import_circle() {
    let (_, text) = import_cycles(&["driver/kmd/src"]);
    let found: BTreeSet<String> = circles(&text).into_iter().flat_map(|(_, m, _)| m).collect();
    let doc = read("docs/architecture.md");
    let para = |start: &str| doc.split("\n\n").find(|p| p.starts_with(start));
    if found.is_empty() {
        assert!(
            text.contains("circles: 0;") && para("No import circle remains").is_some(),
            "import-cycles.py found no circle in the KMD: docs/architecture.md must say so ({text})"
        );
        assert!(
            para("One import circle remains between the KMD").is_none(),
            "docs/architecture.md names a circle import-cycles.py does not find"
        );
        return;
    }
    let named = named_modules(&doc, "One import circle remains between the KMD");
    assert_eq!(named, found, "docs/architecture.md names another circle");
}

/// docs/architecture.md's "Where is" table answers the questions a newcomer asks first, each row
/// pointing at places that exist (every backticked path is also checked by
/// `paths_in_the_documents_exist`).
#[test]
fn architecture_where_is_table_points_into_the_tree() {
    let doc = read("docs/architecture.md");
    let section = doc
        .split("\n## Where is")
        .nth(1)
        .expect("docs/architecture.md: a \"## Where is …\" section");
    let section = section.split("\n## ").next().unwrap_or_default();
    let rows = table_rows(section);
    let mut bad = Vec::new();
    for topic in [
        "native fence",
        "doorbell",
        "the simulated OS's rules",
        "readings",
        "harness case",
    ] {
        let Some(row) = rows
            .iter()
            .find(|r| r.to_lowercase().contains(&topic.to_lowercase()))
        else {
            bad.push(format!("no row about {topic:?}"));
            continue;
        };
        let places: Vec<&str> = row
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|p| p.contains('/'))
            .collect();
        if places.is_empty() {
            bad.push(format!("the row about {topic:?} names no path: {row}"));
        }
        for p in places {
            let p = p.split("::").next().unwrap_or(p);
            if !root().join(p).exists() {
                bad.push(format!("{p} (row about {topic:?}) does not exist"));
            }
        }
    }
    none_bad(&bad, "docs/architecture.md's \"Where is\" table");
}

/// The driver core's files with `unsafe` code are those docs/architecture.md lists under "The
/// driver core's boundary", at most ten, each allowed explicitly under the crate's deny.
#[test]
fn architecture_lists_the_driver_cores_unsafe_files() {
    let code = |l: &str| {
        let l = l.split("//").next().unwrap_or("");
        l.contains("unsafe {") || l.contains("unsafe fn") || l.contains("unsafe impl")
    };
    let found: BTreeSet<String> = tree_files()
        .into_iter()
        .filter(|f| f.starts_with("driver/kmd/src/") && f.ends_with(".rs"))
        .filter(|f| read(f).lines().any(code))
        .collect();
    let doc = read("docs/architecture.md");
    let section = doc
        .split("\n### The driver core's boundary")
        .nth(1)
        .expect("docs/architecture.md: ### The driver core's boundary");
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let named: BTreeSet<String> = table_rows(section)
        .iter()
        .filter_map(|r| r.split('`').nth(1))
        .map(str::to_owned)
        .collect();
    assert_eq!(found, named, "driver/kmd/src files with unsafe code");
    assert!(found.len() <= 10, "{} files with unsafe code", found.len());
    let lib = read("driver/kmd/src/lib.rs");
    assert!(
        lib.contains("#![deny(unsafe_code)]"),
        "the driver core denies unsafe_code"
    );
}

/// Files a reader can take in: no Rust source file over 1,000 lines, no test file (under a
/// `tests` or `benches` directory, or a `tests.rs`/`*_tests.rs` unit-test module) over 1,500.
#[test]
fn no_file_a_newcomer_dreads() {
    let mut bad = Vec::new();
    for file in tree_files().into_iter().filter(|f| f.ends_with(".rs")) {
        let Ok(text) = std::fs::read_to_string(root().join(&file)) else {
            continue;
        };
        let name = file.rsplit('/').next().unwrap_or("");
        let test = file.split('/').any(|c| c == "tests" || c == "benches")
            || name == "tests.rs"
            || name.ends_with("_tests.rs");
        let limit = if test { 1500 } else { 1000 };
        let n = text.lines().count();
        if n > limit {
            bad.push(format!("{file}: {n} lines (limit {limit})"));
        }
    }
    none_bad(&bad, "files over their size limit");
}
