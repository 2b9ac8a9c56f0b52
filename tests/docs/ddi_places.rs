//! A DDI is named in at most three places: its row of the DDI catalog
//! (`driver/ddi/src/catalog/rows.rs`), its concept's thunk file under `driver/kmd/src/thunk/`
//! (the thunk and the `fill` that puts it in the table), and the simulated OS's code that calls
//! it. Every list of DDIs is derived from the catalog: the rule table's routines
//! (`simos/src/adapter/rules.rs`), the table of thunks (`driver/kmd/src/thunk/mod.rs`), the
//! groups a capability obliges (`driver/kmd/src/ddi_groups.rs`) and the robustness cases'
//! coverage (`tests/ddi_robustness.rs`). CONTRIBUTING.md's "Adding a DDI" follows from this.

use super::{none_bad, read, root, source_files};
use std::collections::BTreeMap;

/// The catalog's DDI names `line` names in code (not in its comment).
fn ddis_in_code<'a>(line: &'a str, names: &[&str]) -> Vec<&'a str> {
    let code = line.split("//").next().unwrap_or("");
    code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| names.contains(w))
        .collect()
}

/// The files of `dir` (`.rs`, tests excluded: a file's `#[cfg(test)]` module and what follows
/// it) that name each DDI of `names` in code.
fn named_in(dir: &str, names: &[&str]) -> BTreeMap<String, Vec<String>> {
    let mut at: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in source_files() {
        if !file.starts_with(dir) || !file.ends_with(".rs") || file.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(root().join(&file)).unwrap_or_default();
        for line in text.lines().take_while(|l| *l != "#[cfg(test)]") {
            for name in ddis_in_code(line, names) {
                let files = at.entry(name.to_owned()).or_default();
                if !files.contains(&file) {
                    files.push(file.clone());
                }
            }
        }
    }
    at
}

/// Every slot the KMD fills is named in the KMD's code by one file, its concept's thunk file
/// (not `thunk/mod.rs` or any other list), and the simulated OS's rule table names none: a
/// DDI typed into a list again fails here.
#[test]
fn a_ddi_is_named_by_its_catalog_row_its_thunk_file_and_its_callers_only() {
    let filled: Vec<&str> = rvgpu_ddi::init::filled_slots(&rvgpu_kmd::initialization_data::<
        super::common::NullPlatform,
    >())
    .filter(|&(name, set)| set && name.starts_with("DxgkDdi"))
    .map(|(name, _)| name)
    .collect();
    assert!(filled.len() > 60, "{filled:?}");
    let catalog: Vec<&str> = rvgpu_ddi::catalog::CATALOG.iter().map(|d| d.name).collect();
    let mut bad = Vec::new();
    let kmd = named_in("driver/kmd/src/", &filled);
    for name in &filled {
        let files = kmd.get(*name).cloned().unwrap_or_default();
        let thunk_file =
            |f: &String| f.starts_with("driver/kmd/src/thunk/") && !f.ends_with("/mod.rs");
        if files.len() != 1 || !files.iter().all(thunk_file) {
            bad.push(format!(
                "{name}: named in the KMD's code by {files:?}, not by one thunk file"
            ));
        }
    }
    for list in ["simos/src/adapter/rules.rs", "driver/kmd/src/ddi_groups.rs"] {
        for (n, line) in read(list).lines().enumerate() {
            if line == "#[cfg(test)]" {
                break;
            }
            for name in ddis_in_code(line, &catalog) {
                bad.push(format!(
                    "{list}:{}: names {name}, a list the catalog makes",
                    n + 1
                ));
            }
        }
    }
    none_bad(&bad, "DDIs named outside their three places");
}
