//! The INDIRECT audit table of docs/robustness.md ("Whose buffer runs where") against the
//! KMD's source: every INDIRECT / INDIRECT_VM packet is built in one place (`submit::encode`),
//! every function that calls it is a row of the table, every row names such a function, and
//! every test a row names exists.

// Host-side test code: the kernel no-panic lints do not apply.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::indexing_slicing, clippy::string_slice)]
#![allow(clippy::arithmetic_side_effects)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's code before its unit tests.
fn non_test(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod tests")
        .map_or(text, |i| &text[..i])
}

/// The name of the last `fn` declared in `before`.
fn enclosing_fn(before: &str) -> String {
    let at = before.rfind("fn ").expect("an enclosing function");
    before[at + 3..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// `module::path::function` of every non-test call of the packet encoder.
fn emit_sites() -> BTreeSet<String> {
    let src = root().join("driver/kmd/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut sites = BTreeSet::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let code = non_test(&text);
        let rel = f.strip_prefix(&src).unwrap().with_extension("");
        let module = rel
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .filter(|c| c != "mod")
            .collect::<Vec<_>>()
            .join("::");
        for (name, packet) in [
            ("Command::Indirect {", "INDIRECT"),
            ("Command::IndirectVm {", "INDIRECT_VM"),
        ] {
            for (i, _) in code.match_indices(name) {
                let line = code[..i].lines().last().unwrap_or("");
                if line.trim_start().starts_with("//") {
                    continue;
                }
                assert_eq!(
                    (module.as_str(), enclosing_fn(&code[..i]).as_str()),
                    ("submit", "indirect"),
                    "{packet} built outside submit::indirect in {}",
                    f.display()
                );
            }
        }
        // Calls of the encoder: `submit::encode(` anywhere, `encode(` inside `submit`.
        let calls: Vec<usize> = code
            .match_indices("encode(")
            .map(|(i, _)| i)
            .filter(|&i| {
                let before = &code[..i];
                let qualified = before.ends_with("submit::");
                let local = module.starts_with("submit")
                    && !before.ends_with("fn ")
                    && !before.ends_with('.')
                    && !before.ends_with("::");
                qualified || local
            })
            .collect();
        for i in calls {
            sites.insert(format!("{module}::{}", enclosing_fn(&code[..i])));
        }
    }
    sites
}

/// The table's rows: `(site, tests)`.
fn table() -> Vec<(String, Vec<String>)> {
    let doc = std::fs::read_to_string(root().join("docs/robustness.md")).unwrap();
    let at = doc
        .find("**Whose buffer runs where**")
        .expect("the audit table in docs/robustness.md");
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    doc[at..]
        .lines()
        .skip_while(|l| !l.starts_with("| site"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let site = ticked(cells[1]).concat();
            (site, ticked(cells[5]))
        })
        .collect()
}

#[test]
fn every_indirect_emit_site_is_a_row_of_the_audit_table_with_its_tests() {
    let sites = emit_sites();
    assert!(!sites.is_empty(), "no caller of submit::encode found");
    let rows = table();
    let named: BTreeSet<String> = rows.iter().map(|(s, _)| s.clone()).collect();
    assert_eq!(
        sites, named,
        "callers of submit::encode (left) and the rows of docs/robustness.md (right)"
    );
    let mut files = Vec::new();
    for dir in ["driver", "device", "simos", "umd", "tests"] {
        rust_files(&root().join(dir), &mut files);
    }
    let sources: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .collect();
    for (site, tests) in rows {
        assert!(!tests.is_empty(), "{site}: no test named");
        for t in tests {
            let decl = format!("fn {t}(");
            assert!(
                sources.iter().any(|s| s.contains(&decl)),
                "{site}: test `{t}` does not exist"
            );
        }
    }
}
