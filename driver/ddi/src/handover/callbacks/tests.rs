//! The callback audit against the KMD's code: every callback it names and every interrupt
//! type it reports has rows, and no row is left for a callback it no longer names.

// Source text is sliced at the byte offsets its own searches return.
#![allow(clippy::string_slice)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;
use crate::dxgkrnl::DXGKRNL_INTERFACE;

/// The repository root (this crate is `driver/ddi`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The driver's sources: the KMD crate and the image's root crate.
fn kmd_files() -> Vec<(PathBuf, String)> {
    let mut files = rust_files(&root().join("driver/kmd/src"));
    files.extend(rust_files(&root().join("src")));
    assert!(files.len() > 20, "scanned {} files", files.len());
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// The lines of `text` that are code: comments dropped, and a file's test module (from its
/// `#[cfg(test)]`) left out.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .filter(|l| !l.trim_start().starts_with("//"))
}

/// The words of `text` that start with `prefix` and go on with name characters.
fn words<'a>(text: &'a str, prefix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    text.match_indices(prefix).filter_map(move |(i, _)| {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let rest = &text[i..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        (end > prefix.len()).then(|| &rest[..end])
    })
}

/// Every `DxgkCbXxx` the driver's sources name, with how: [`Use::Calls`] where the code reads
/// the slot (`.DxgkCbXxx`), else [`Use::Names`].
fn kmd_callbacks() -> BTreeMap<String, Use> {
    let mut found = BTreeMap::new();
    for (_, text) in kmd_files() {
        for w in words(&text, "DxgkCb") {
            found.entry(w.to_owned()).or_insert(Use::Names);
        }
        for line in code_lines(&text) {
            for (i, _) in line.match_indices(".DxgkCb") {
                if let Some(w) = words(&line[i + 1..], "DxgkCb").next() {
                    found.insert(w.to_owned(), Use::Calls);
                }
            }
        }
    }
    found
}

/// The `DXGK_INTERRUPT_*` type a constructor of `DXGKARGCB_NOTIFY_INTERRUPT_DATA` in
/// `driver/ddi/src/interrupt.rs` builds, following its calls of other constructors.
fn constructor_type(src: &str, name: &str) -> Option<String> {
    let start = src.find(&format!("fn {name}("))?;
    let body = &src[start..];
    let end = body[3..]
        .find("\n    fn ")
        .or(body[3..].find("\n    pub fn "));
    let body = &body[..end.map_or(body.len(), |e| e + 3)];
    if let Some(t) = words(body, "DXGK_INTERRUPT_").find(|w| *w != "DXGK_INTERRUPT_TYPE") {
        return Some(t.to_owned());
    }
    let call = body.find("Self::")?;
    let callee = words(&body[call + 6..], "").next()?;
    constructor_type(src, callee)
}

/// Every interrupt type the KMD reports: named in its code, or built by a constructor it
/// calls.
fn kmd_interrupt_types() -> Vec<String> {
    let ddi = std::fs::read_to_string(root().join("driver/ddi/src/interrupt.rs")).unwrap();
    let mut types = Vec::new();
    for (_, text) in kmd_files() {
        for line in code_lines(&text) {
            types.extend(
                words(line, "DXGK_INTERRUPT_")
                    .filter(|w| *w != "DXGK_INTERRUPT_TYPE")
                    .map(str::to_owned),
            );
            for (i, _) in line.match_indices("DXGKARGCB_NOTIFY_INTERRUPT_DATA::") {
                let rest = &line[i + "DXGKARGCB_NOTIFY_INTERRUPT_DATA::".len()..];
                let ctor = rest.split('(').next().unwrap_or_default();
                let t = constructor_type(&ddi, ctor)
                    .unwrap_or_else(|| panic!("constructor {ctor}: no interrupt type found"));
                types.push(t);
            }
        }
    }
    types.sort();
    types.dedup();
    types
}

/// Every callback the KMD names has rows, marked as the KMD uses it; no row set is left for a
/// callback it no longer names.
#[test]
fn every_callback_the_kmd_names_has_rows() {
    let named = kmd_callbacks();
    assert!(named.len() >= 15, "found {named:?}");
    let mut missing = Vec::new();
    for (name, how) in &named {
        match callback(name, None) {
            None => missing.push(format!("{name}: no rows")),
            Some(c) if c.kmd != *how => {
                missing.push(format!("{name}: rows say {:?}, the KMD {how:?}", c.kmd));
            }
            Some(_) => {}
        }
    }
    for c in callbacks() {
        if !named.contains_key(c.name) {
            missing.push(format!("{}: rows, but the KMD does not name it", c.name));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// Every interrupt type the KMD reports has its own rows. (Rows of a type it stopped reporting
/// may stay: they say what 24H2 would do with it.)
#[test]
fn every_interrupt_type_the_kmd_reports_has_rows() {
    let types = kmd_interrupt_types();
    assert!(
        types.iter().any(|t| t == "DXGK_INTERRUPT_DMA_COMPLETED")
            && types
                .iter()
                .any(|t| t == "DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED"),
        "found {types:?}"
    );
    let missing: Vec<String> = types
        .iter()
        .filter(|t| callback("DxgkCbNotifyInterrupt", Some(t)).is_none())
        .map(|t| format!("{t}: no rows"))
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// Each row set names a `DXGKRNL_INTERFACE` slot and the 24H2 functions by address; each is
/// there once, with rows; each argument once.
#[test]
fn every_callback_cites_24h2_once() {
    let all: Vec<&Callback> = callbacks().collect();
    for (i, c) in all.iter().enumerate() {
        let what = format!("{} {:?}", c.name, c.case);
        assert!(
            DXGKRNL_INTERFACE::SLOT_NAMES.contains(&c.name),
            "{what}: not a slot"
        );
        assert!(
            (c.by.starts_with("K:") || c.by.starts_with("M:"))
                && c.by
                    .split(", ")
                    .all(|f| (f.starts_with("K:") || f.starts_with("M:")) && f.contains(" @0x14")),
            "{what}: not every function named by its 24H2 address"
        );
        assert!(!c.rows.is_empty() && !c.returns.is_empty(), "{what}: empty");
        assert!(
            all[i + 1..]
                .iter()
                .all(|o| o.name != c.name || o.case != c.case),
            "{what} twice"
        );
        for (j, r) in c.rows.iter().enumerate() {
            assert!(!r.does.is_empty(), "{what}.{}: empty", r.arg);
            assert!(
                c.rows[j + 1..].iter().all(|o| o.arg != r.arg),
                "{what}.{} twice",
                r.arg
            );
        }
    }
}

/// The reviewer's claims the rows hold, spot-checked: a faulted DMA buffer and a runtime-power
/// reference outside runtime power management are bug checks; an engine state change is
/// dropped; a register unmap of an unknown address is not refused.
#[test]
fn rows_hold_what_24h2_does() {
    let stop = |name: &str, case: Option<&str>| {
        callback(name, case)
            .into_iter()
            .flat_map(|c| c.rows.iter())
            .filter_map(|r| r.stop.map(|(s, _)| s))
            .collect::<Vec<_>>()
    };
    assert!(
        stop("DxgkCbNotifyInterrupt", Some("DXGK_INTERRUPT_DMA_FAULTED"))
            .contains(&scheduler_error(0xD))
    );
    assert!(stop("DxgkCbSetPowerComponentActive", None).contains(&dxgkrnl_fatal(0x17)));
    assert!(stop("DxgkCbSetPowerComponentIdle", None).contains(&dxgkrnl_fatal(0x17)));
    assert!(stop(
        "DxgkCbNotifyInterrupt",
        Some("DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE")
    )
    .is_empty());
    let q = callback("DxgkCbQueryServices", None).unwrap();
    assert!(matches!(q.irql.otherwise, Otherwise::BugCheck(s, _) if s == dxgkrnl_fatal(0x15)));
}
