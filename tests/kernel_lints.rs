//! The kernel crates' no-panic rule, kept by the compiler: this test fails when the lint
//! configuration that enforces it is weakened.
//!
//! - every kernel crate (the driver image and each crate under `driver/`) takes the workspace's
//!   lints, and those deny panics (`unwrap`, `expect`, `panic!`, `unreachable!`, ...),
//!   unchecked indexing and arithmetic, and sign-changing `as` casts (truncating ones warn, an
//!   error under `-D warnings`, as CI runs clippy);
//! - only the driver core links `alloc`, and its `clippy.toml` repeats the workspace's and bans
//!   the infallible allocating APIs (so a NULL from the pool is an NTSTATUS, not a bug check);
//!   none of its types that own a `Vec` or `Box` is `Clone` outside tests (a clone allocates
//!   infallibly, and no lint can name that one impl);
//! - kernel source outside test code allows none of these lints except where listed below,
//!   each with the reason the code there cannot fault at run time.

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
use std::fs;
use std::path::{Path, PathBuf};

/// The clippy lints that make a fault on input a compile error, and the level each must have.
const WORKSPACE_LINTS: &[(&str, &str)] = &[
    ("unwrap_used", "deny"),
    ("expect_used", "deny"),
    ("panic", "deny"),
    ("todo", "deny"),
    ("unimplemented", "deny"),
    ("unreachable", "deny"),
    ("indexing_slicing", "deny"),
    ("arithmetic_side_effects", "deny"),
    ("string_slice", "deny"),
    ("cast_sign_loss", "deny"),
    ("cast_possible_wrap", "deny"),
    ("cast_possible_truncation", "warn"),
];

/// Lints whose `allow` in kernel code outside tests must be listed in [`ALLOWED`].
const GUARDED: &[&str] = &[
    "unwrap_used",
    "expect_used",
    "panic",
    "todo",
    "unimplemented",
    "unreachable",
    "indexing_slicing",
    "arithmetic_side_effects",
    "string_slice",
    "cast_sign_loss",
    "cast_possible_wrap",
    "cast_possible_truncation",
    "disallowed_methods",
    "disallowed_types",
    "disallowed_macros",
];

/// Where kernel code outside tests allows a guarded lint: the file, the lints, and why the
/// code there cannot fault at run time.
const ALLOWED: &[(&str, &[&str], &str)] = &[
    (
        "driver/ddi/src/lib.rs",
        &["indexing_slicing", "arithmetic_side_effects", "panic"],
        "the `abi` module: host-only (feature `abi-bridge`, never in the image), its panic and \
         indexing in constant evaluation",
    ),
    (
        "driver/ddi/src/abi.rs",
        &[
            "cast_possible_truncation",
            "cast_sign_loss",
            "cast_possible_wrap",
        ],
        "host-only bridge (feature `abi-bridge`): register words carried across the emulator",
    ),
    (
        "driver/ddi/src/memory.rs",
        &["cast_possible_truncation"],
        "bitfield getters: a masked field of 2, 5 or 6 bits always fits",
    ),
    (
        "driver/hw/src/register.rs",
        &[
            "arithmetic_side_effects",
            "indexing_slicing",
            "cast_possible_truncation",
        ],
        "`decode_slots` and `DecodeTable::build` run in constant evaluation only (a fault is a \
         build error); the casts are a 32-bit register's low half and an index below a u32 count",
    ),
    (
        "driver/kmd/src/etw/meta.rs",
        &[
            "indexing_slicing",
            "arithmetic_side_effects",
            "cast_possible_truncation",
        ],
        "TraceLogging metadata built in constant evaluation only (the blobs are statics)",
    ),
    (
        "driver/kmd/src/kmem.rs",
        &["disallowed_methods", "disallowed_types"],
        "the fallible allocation wrappers themselves",
    ),
    (
        "src/ntos.rs",
        &["cast_possible_truncation"],
        "an NTSTATUS is the low 32 bits of a 64-bit return; a length checked just above",
    ),
];

/// APIs the driver core's clippy.toml must ban: each allocates and bug-checks when the pool is
/// exhausted (or, for the fallible ones, allocates without the low-resources question).
const BANNED_ALLOCATING: &[&str] = &[
    "alloc::boxed::Box::new",
    "alloc::vec::Vec::push",
    "alloc::vec::Vec::insert",
    "alloc::vec::Vec::with_capacity",
    "alloc::vec::Vec::reserve",
    "alloc::vec::Vec::resize",
    "alloc::vec::Vec::extend_from_slice",
    "alloc::vec::Vec::split_off",
    "alloc::vec::Vec::try_reserve",
    "core::iter::Iterator::collect",
    "core::iter::FromIterator::from_iter",
    "core::iter::traits::collect::Extend::extend",
    "slice::to_vec",
    "alloc::alloc::alloc",
    "alloc::collections::btree_map::BTreeMap",
    "alloc::string::String",
    "alloc::vec",
    "alloc::format",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The kernel crates' directories, relative to the root: the driver image and every crate
/// under `driver/`.
fn kernel_crates() -> Vec<String> {
    let mut crates = vec![String::new()];
    let mut driver: Vec<String> = fs::read_dir(root().join("driver"))
        .expect("driver/")
        .map(|e| e.expect("driver/ entry").path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .map(|p| format!("driver/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    driver.sort();
    assert!(!driver.is_empty(), "no crate under driver/");
    crates.extend(driver);
    crates
}

/// `dir` joined with `rel` as a root-relative path (`dir` empty: the root).
fn under(dir: &str, rel: &str) -> String {
    if dir.is_empty() {
        rel.to_owned()
    } else {
        format!("{dir}/{rel}")
    }
}

/// The `key = value` lines of TOML section `[name]` (up to the next section).
fn section(toml: &str, name: &str) -> Vec<(String, String)> {
    let header = format!("[{name}]");
    toml.lines()
        .skip_while(|l| l.trim() != header)
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .filter_map(|l| {
            let l = l.split('#').next().unwrap_or("");
            let (k, v) = l.split_once('=')?;
            Some((k.trim().to_owned(), v.trim().trim_matches('"').to_owned()))
        })
        .collect()
}

/// Every `.rs` file under `dir` (root-relative), sorted.
fn rust_files(dir: &str) -> Vec<String> {
    fn walk(base: &Path, rel: &str, out: &mut Vec<String>) {
        for e in fs::read_dir(base.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}")) {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let child = format!("{rel}/{name}");
            if e.file_type().unwrap().is_dir() {
                walk(base, &child, out);
            } else if name.ends_with(".rs") {
                out.push(child);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root(), dir, &mut out);
    out.sort();
    out
}

/// The kernel crates' library sources (`src/` of each; integration tests and benches are not
/// kernel code).
fn kernel_sources() -> Vec<String> {
    kernel_crates()
        .iter()
        .flat_map(|c| rust_files(&under(c, "src")))
        .collect()
}

/// A unit-test module file by its name (`tests.rs`, `*_tests.rs`), or a file under `tests/`.
fn is_test_file(f: &str) -> bool {
    let name = f.rsplit('/').next().unwrap_or("");
    name == "tests.rs" || name.ends_with("_tests.rs") || f.split('/').any(|c| c == "tests")
}

/// The attributes of `text` (`#[..]` and `#![..]`, trailing comments dropped): each with its
/// first and last line and its text without whitespace.
fn attributes(text: &str) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        if !(t.starts_with("#[") || t.starts_with("#![")) {
            i += 1;
            continue;
        }
        let start = i;
        let mut attr = String::new();
        let (mut opened, mut closed) = (0, 0);
        loop {
            let code = lines[i].split("//").next().unwrap_or("");
            attr.extend(code.chars().filter(|c| !c.is_whitespace()));
            opened += code.matches('[').count();
            closed += code.matches(']').count();
            if closed >= opened || i + 1 >= lines.len() {
                break;
            }
            i += 1;
        }
        out.push((start, i, attr));
        i += 1;
    }
    out
}

/// Whether attribute `n` of `attrs` shares its item with a `#[cfg(test)]`: the attributes
/// next to it (comments between them skipped) include one, so it applies to test code only.
fn in_test_block(lines: &[&str], attrs: &[(usize, usize, String)], n: usize) -> bool {
    let comment = |l: usize| lines[l].trim_start().starts_with("//");
    let cfg_test = |a: &str| a == "#[cfg(test)]" || a.starts_with("#[cfg(all(test,");
    let (mut lo, mut hi) = (n, n);
    loop {
        let mut above = attrs[lo].0;
        while above > 0 && comment(above - 1) {
            above -= 1;
        }
        match lo.checked_sub(1) {
            Some(p) if above > 0 && attrs[p].1 == above - 1 => lo = p,
            _ => break,
        }
    }
    loop {
        let mut below = attrs[hi].1 + 1;
        while below < lines.len() && comment(below) {
            below += 1;
        }
        match attrs.get(hi + 1) {
            Some(next) if next.0 == below => hi += 1,
            _ => break,
        }
    }
    attrs[lo..=hi].iter().any(|(_, _, a)| cfg_test(a))
}

/// The guarded lints kernel code outside tests allows: `(file, lint)`.
fn allows_outside_tests() -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    for f in kernel_sources().into_iter().filter(|f| !is_test_file(f)) {
        let text = read(&f);
        let lines: Vec<&str> = text.lines().collect();
        let attrs = attributes(&text);
        for (n, (_, _, attr)) in attrs.iter().enumerate() {
            let body = attr.trim_start_matches('#').trim_start_matches('!');
            let allows = body.starts_with("[allow(")
                || body.starts_with("[expect(")
                || (body.starts_with("[cfg_attr(")
                    && !body.starts_with("[cfg_attr(test,")
                    && (body.contains("allow(") || body.contains("expect(")));
            if !allows || in_test_block(&lines, &attrs, n) {
                continue;
            }
            for lint in GUARDED {
                if attr.contains(&format!("clippy::{lint},"))
                    || attr.contains(&format!("clippy::{lint})"))
                {
                    found.insert((f.clone(), (*lint).to_owned()));
                }
            }
        }
    }
    found
}

/// Each kernel crate takes the workspace's lints, and those deny what can fault on input.
#[test]
fn kernel_crates_take_the_workspace_lints_that_deny_faults_on_input() {
    for c in kernel_crates() {
        let manifest = read(&under(&c, "Cargo.toml"));
        assert!(
            section(&manifest, "lints") == [("workspace".to_owned(), "true".to_owned())],
            "{}: the kernel crate must have `[lints] workspace = true`",
            under(&c, "Cargo.toml")
        );
    }
    let lints = section(&read("Cargo.toml"), "workspace.lints.clippy");
    for (lint, level) in WORKSPACE_LINTS {
        let got = lints
            .iter()
            .find(|(k, _)| k == lint)
            .map(|(_, v)| v.as_str());
        assert_eq!(
            got,
            Some(*level),
            "Cargo.toml [workspace.lints.clippy] {lint}"
        );
    }
}

/// Only the driver core allocates, and its clippy.toml (which replaces the workspace's for the
/// crate) keeps the test allowances and bans the infallible allocating APIs.
#[test]
fn only_the_driver_core_allocates_and_its_infallible_allocation_is_banned() {
    let linking: Vec<String> = kernel_sources()
        .into_iter()
        .filter(|f| read(f).lines().any(|l| l.trim() == "extern crate alloc;"))
        .collect();
    assert_eq!(
        linking,
        ["driver/kmd/src/lib.rs"],
        "kernel files linking `alloc`"
    );
    let kmd = read("driver/kmd/clippy.toml");
    for line in read("clippy.toml")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        assert!(
            kmd.lines().any(|k| k == line),
            "driver/kmd/clippy.toml must repeat the workspace's `{line}`"
        );
    }
    for path in BANNED_ALLOCATING {
        assert!(
            kmd.contains(&format!("path = \"{path}\"")),
            "driver/kmd/clippy.toml must ban `{path}`"
        );
    }
}

/// Kernel code outside tests allows a no-panic lint only where [`ALLOWED`] says why.
#[test]
fn kernel_code_allows_no_panic_lints_but_where_listed() {
    let found = allows_outside_tests();
    let listed: BTreeSet<(String, String)> = ALLOWED
        .iter()
        .flat_map(|(f, lints, _)| lints.iter().map(|l| ((*f).to_owned(), (*l).to_owned())))
        .collect();
    let unlisted: Vec<_> = found.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&found).collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "allows of kernel lints outside tests: not in ALLOWED (list them with the reason the \
         code cannot fault, or fix the code): {unlisted:?}; listed but gone: {stale:?}"
    );
}

/// The driver core's types that own heap memory are not `Clone` outside tests: `Clone` on a
/// `Vec` or `Box` allocates infallibly, and no lint names that one impl. (A type holding such a
/// type can derive `Clone` only if it is `Clone`, so the direct holders are the ones to check.)
#[test]
fn driver_core_types_owning_heap_memory_are_not_clone() {
    let mut cloneable = Vec::new();
    for f in rust_files("driver/kmd/src")
        .into_iter()
        .filter(|f| !is_test_file(f))
    {
        let text = read(&f);
        let lines: Vec<&str> = text.lines().collect();
        let attrs = attributes(&text);
        for (n, (_, end, attr)) in attrs.iter().enumerate() {
            let derives_clone = attr.starts_with("#[derive(")
                && attr
                    .trim_start_matches("#[derive(")
                    .trim_end_matches(")]")
                    .split(',')
                    .any(|d| d == "Clone");
            if !derives_clone || in_test_block(&lines, &attrs, n) {
                continue;
            }
            // The item after the attribute block, up to its closing brace or semicolon.
            let rest = lines[end + 1..].join("\n");
            let item = match rest.find(['{', ';']) {
                Some(open) if rest[open..].starts_with('{') => {
                    let mut depth = 0usize;
                    let close = rest[open..].char_indices().find(|&(_, c)| {
                        match c {
                            '{' => depth += 1,
                            '}' => depth -= 1,
                            _ => {}
                        }
                        c == '}' && depth == 0
                    });
                    &rest[..close.map_or(rest.len(), |(i, _)| open + i + 1)]
                }
                Some(semicolon) => &rest[..semicolon],
                None => "",
            };
            if item.contains("Vec<") || item.contains("Box<") {
                cloneable.push(format!("{f}:{}", end + 2));
            }
        }
    }
    assert!(
        cloneable.is_empty(),
        "types owning heap memory that derive Clone outside tests: {cloneable:?}"
    );
}
