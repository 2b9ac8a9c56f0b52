//! Requirements traceability: `docs/traceability.md` is generated from the source tree and this
//! test fails when the file on disk is stale. Rewrite it with
//!
//! ```sh
//! RVGPU_BLESS=1 cargo test -p rvgpu --test traceability
//! ```
//!
//! The table maps every requirement of `docs/requirements.md` to the source files whose comments
//! mention it, the `#[test]` functions that carry it (name or doc comment) and the `rvgpu-whlk`
//! cases that list it. The tree is walked (not a fixed file list) so that code can move;
//! `target/` and hidden directories such as `.git` are skipped.
//!
//! A second check compares the IDs of `docs/requirements.md` with the requirements digest in
//! `../shared/requirements.md` (or `$RVGPU_SHARED_DIR/requirements.md`). Without that directory
//! the comparison is skipped with a note, since a bare clone of the repository does not have it.
//!
//! The scanner is a small Rust tokenizer: enough to tell comments, string literals and code apart
//! and to match brackets, which is all the generator needs.

// Host-side tooling: the kernel no-panic lints do not apply to a test that reads our own tree.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::string_slice,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Set to 1 to rewrite `docs/traceability.md` instead of comparing.
const BLESS_ENV: &str = "RVGPU_BLESS";
/// Overrides where the requirements digest lives (default: `../shared` beside the repository).
const SHARED_ENV: &str = "RVGPU_SHARED_DIR";
/// Top-level directories whose (non-test) source files count as implementing modules. A prefix
/// match, so a split such as `simos-foo/` still counts. `src` is the driver image.
const MODULE_ROOTS: &[&str] = &["driver", "umd", "device", "simos", "src"];
/// Path components that mark test, bench and example code (never "modules").
const TEST_DIRS: &[&str] = &["tests", "benches", "examples"];
const BLESS_COMMAND: &str = "RVGPU_BLESS=1 cargo test -p rvgpu --test traceability";
/// Prefixes of the project's own requirements in `docs/requirements.md`: rules of Microsoft's
/// DDI reference that the seeds leave out (the digest names that reference as the authority
/// there), so the digest does not list them.
const PROJECT_PREFIXES: &[&str] = &["DDI"];

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn traceability_table_is_current() {
    let root = repo_root();
    let generated = generate(&root);
    let path = root.join("docs").join("traceability.md");
    if std::env::var_os(BLESS_ENV).is_some_and(|v| v == "1") {
        fs::write(&path, &generated).expect("write docs/traceability.md");
        eprintln!("traceability: wrote {}", path.display());
        return;
    }
    let on_disk = fs::read_to_string(&path)
        .unwrap_or_default()
        .replace("\r\n", "\n");
    if on_disk != generated {
        let first = on_disk
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| on_disk.lines().count().min(generated.lines().count()));
        panic!(
            "docs/traceability.md is out of date (first difference at line {}).\n\
             Regenerate it with:\n\n    {BLESS_COMMAND}\n\n\
             expected: {:?}\n   found: {:?}",
            first + 1,
            generated.lines().nth(first).unwrap_or("<end of file>"),
            on_disk.lines().nth(first).unwrap_or("<end of file>"),
        );
    }
}

#[test]
fn requirements_doc_matches_the_digest() {
    let root = repo_root();
    let reqs = read_requirements(&root);
    let shared = match std::env::var_os(SHARED_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => root.join("..").join("shared"),
    };
    let digest_path = shared.join("requirements.md");
    let Ok(digest) = fs::read_to_string(&digest_path) else {
        println!(
            "note: {} not found; skipping the comparison of docs/requirements.md with the \
             requirements digest (set {SHARED_ENV} to its directory to run it)",
            digest_path.display()
        );
        return;
    };
    let digest_ids = digest_requirement_ids(&digest);
    assert!(
        !digest_ids.is_empty(),
        "no requirement IDs (\"- **XX-NN** ...\") found in {}",
        digest_path.display()
    );
    let ours: BTreeSet<String> = reqs
        .iter()
        .map(|r| r.id.clone())
        .filter(|id| {
            !PROJECT_PREFIXES
                .iter()
                .any(|p| id.split_once('-').is_some_and(|(q, _)| q == *p))
        })
        .collect();
    let missing: Vec<&String> = digest_ids.difference(&ours).collect();
    let extra: Vec<&String> = ours.difference(&digest_ids).collect();
    assert!(
        missing.is_empty(),
        "docs/requirements.md lacks requirement IDs that {} has: {missing:?}",
        digest_path.display()
    );
    assert!(
        extra.is_empty(),
        "docs/requirements.md has IDs that are not in {}: {extra:?}",
        digest_path.display()
    );
}

/// A harness case lists only IDs of `docs/requirements.md`, each exactly as written there.
#[test]
fn harness_cases_list_only_requirement_ids() {
    let root = repo_root();
    let known: BTreeSet<String> = read_requirements(&root).into_iter().map(|r| r.id).collect();
    let scan = scan(&root, &known);
    assert!(scan.case_count > 0, "no harness cases found");
    assert!(
        scan.not_requirements.is_empty(),
        "harness cases list what is not a requirement ID of docs/requirements.md: {:?}",
        scan.not_requirements
    );
}

// ------------------------------------------------------------------------------------------------
// Requirements

/// One row of `docs/requirements.md`.
#[derive(Clone, Debug)]
struct Requirement {
    id: String,
    who: String,
}

/// The table rows of `docs/requirements.md` whose first cell is an ID, in document order.
fn read_requirements(root: &Path) -> Vec<Requirement> {
    let text = fs::read_to_string(root.join("docs").join("requirements.md"))
        .expect("read docs/requirements.md");
    let reqs = parse_requirements(&text);
    assert!(
        !reqs.is_empty(),
        "docs/requirements.md has no requirement rows (\"| ID | Who | ... |\")"
    );
    let mut seen = BTreeSet::new();
    for r in &reqs {
        assert!(
            seen.insert(r.id.clone()),
            "docs/requirements.md lists {} twice",
            r.id
        );
    }
    reqs
}

fn parse_requirements(text: &str) -> Vec<Requirement> {
    text.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.trim().strip_prefix('|')?.split('|').collect();
            let id = cells.first()?.trim().trim_matches('*');
            is_id(id).then(|| Requirement {
                id: id.to_string(),
                who: cells.get(1).map_or("", |w| w.trim()).to_string(),
            })
        })
        .collect()
}

/// `XX-NN`: an upper-case prefix and two digits.
fn is_id(s: &str) -> bool {
    s.split_once('-').is_some_and(|(p, n)| {
        !p.is_empty()
            && p.chars().all(|c| c.is_ascii_uppercase())
            && n.len() == 2
            && n.chars().all(|c| c.is_ascii_digit())
    })
}

/// The IDs of the digest's "- **NF-01** ..." items.
fn digest_requirement_ids(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("- **")?;
            let (id, _) = rest.split_once("**")?;
            is_id(id).then(|| id.to_string())
        })
        .collect()
}

// ------------------------------------------------------------------------------------------------
// Tokenizer

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DocKind {
    /// `///` or `/** */`: documents the next item.
    Outer,
    /// `//!` or `/*! */`.
    Inner,
    /// Any other comment.
    Plain,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    /// Consecutive line comments of one kind are merged into one token (joined by newlines).
    Comment {
        kind: DocKind,
        line: bool,
        text: String,
    },
    /// The body of a string literal, escapes left as written.
    Str(String),
    Ident(String),
    Punct(char),
    /// Numbers, character literals, lifetimes.
    Other,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn tokenize(src: &str) -> Vec<Tok> {
    let s: Vec<char> = src.chars().collect();
    let at = |i: usize| s.get(i).copied().unwrap_or('\0');
    let mut toks: Vec<Tok> = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            let start = i + 2;
            let mut end = start;
            while end < s.len() && s[end] != '\n' {
                end += 1;
            }
            let body: String = s[start..end].iter().collect();
            let (kind, text) = if body.starts_with('/') && !body.starts_with("//") {
                (DocKind::Outer, &body[1..])
            } else if let Some(t) = body.strip_prefix('!') {
                (DocKind::Inner, t)
            } else {
                (DocKind::Plain, body.as_str())
            };
            match toks.last_mut() {
                Some(Tok::Comment {
                    kind: k,
                    line: true,
                    text: t,
                }) if *k == kind => {
                    t.push('\n');
                    t.push_str(text);
                }
                _ => toks.push(Tok::Comment {
                    kind,
                    line: true,
                    text: text.to_string(),
                }),
            }
            i = end;
        } else if c == '/' && at(i + 1) == '*' {
            let kind = match (at(i + 2), at(i + 3)) {
                ('*', '*' | '/') => DocKind::Plain,
                ('*', _) => DocKind::Outer,
                ('!', _) => DocKind::Inner,
                _ => DocKind::Plain,
            };
            let start = i + 2;
            let mut depth = 1;
            let mut j = start;
            while j < s.len() && depth > 0 {
                if s[j] == '/' && at(j + 1) == '*' {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && at(j + 1) == '/' {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            let end = if depth == 0 { j - 2 } else { j };
            toks.push(Tok::Comment {
                kind,
                line: false,
                text: s[start.min(end)..end].iter().collect(),
            });
            i = j;
        } else if c == '"' {
            let (body, next) = quoted(&s, i + 1);
            toks.push(Tok::Str(body));
            i = next;
        } else if c == '\'' {
            i = char_or_lifetime(&s, i);
            toks.push(Tok::Other);
        } else if c.is_ascii_digit() {
            while i < s.len() && is_ident_char(s[i]) {
                i += 1;
            }
            toks.push(Tok::Other);
        } else if is_ident_start(c) {
            let start = i;
            while i < s.len() && is_ident_char(s[i]) {
                i += 1;
            }
            let ident: String = s[start..i].iter().collect();
            match (ident.as_str(), at(i)) {
                ("r" | "br" | "cr", '"' | '#') => {
                    let mut hashes = 0;
                    while at(i + hashes) == '#' {
                        hashes += 1;
                    }
                    if at(i + hashes) == '"' {
                        let (body, next) = raw(&s, i + hashes + 1, hashes);
                        toks.push(Tok::Str(body));
                        i = next;
                    } else {
                        // `r#ident`: a raw identifier.
                        i += hashes;
                        let start = i;
                        while i < s.len() && is_ident_char(s[i]) {
                            i += 1;
                        }
                        toks.push(Tok::Ident(s[start..i].iter().collect()));
                    }
                }
                ("b" | "c", '"') => {
                    let (body, next) = quoted(&s, i + 1);
                    toks.push(Tok::Str(body));
                    i = next;
                }
                ("b", '\'') => {
                    i = char_or_lifetime(&s, i);
                    toks.push(Tok::Other);
                }
                _ => toks.push(Tok::Ident(ident)),
            }
        } else {
            toks.push(Tok::Punct(c));
            i += 1;
        }
    }
    toks
}

/// A `"..."` body starting after the opening quote: (body, index after the closing quote).
fn quoted(s: &[char], mut i: usize) -> (String, usize) {
    let start = i;
    while i < s.len() && s[i] != '"' {
        i += if s[i] == '\\' { 2 } else { 1 };
    }
    let end = i.min(s.len());
    (s[start..end].iter().collect(), end + 1)
}

/// A raw string body starting after `r#..#"`.
fn raw(s: &[char], start: usize, hashes: usize) -> (String, usize) {
    let mut i = start;
    while i < s.len() {
        if s[i] == '"' && (1..=hashes).all(|k| s.get(i + k) == Some(&'#')) {
            return (s[start..i].iter().collect(), i + 1 + hashes);
        }
        i += 1;
    }
    (s[start..].iter().collect(), s.len())
}

/// Skips a character literal or a lifetime starting at the quote `s[i]`; returns the next index.
fn char_or_lifetime(s: &[char], i: usize) -> usize {
    let at = |k: usize| s.get(k).copied().unwrap_or('\0');
    if at(i + 1) == '\\' {
        let mut j = i + 3;
        while j < s.len() && s[j] != '\'' {
            j += 1;
        }
        j + 1
    } else if at(i + 2) == '\'' {
        i + 3
    } else {
        let mut j = i + 1;
        while j < s.len() && is_ident_char(s[j]) {
            j += 1;
        }
        j
    }
}

// ------------------------------------------------------------------------------------------------
// Token-level structure

/// A lexed file with the structure the generator needs.
struct Lexed {
    toks: Vec<Tok>,
    /// For each token index, the index of its matching bracket (`()[]{}`), if it is one.
    partner: BTreeMap<usize, usize>,
}

impl Lexed {
    fn new(src: &str) -> Self {
        let toks = tokenize(src);
        let mut partner = BTreeMap::new();
        let mut stack: Vec<(char, usize)> = Vec::new();
        for (i, t) in toks.iter().enumerate() {
            match t {
                Tok::Punct(c @ ('(' | '[' | '{')) => stack.push((*c, i)),
                Tok::Punct(c @ (')' | ']' | '}')) => {
                    let open = match c {
                        ')' => '(',
                        ']' => '[',
                        _ => '{',
                    };
                    // Unbalanced input (macros, C headers) simply leaves brackets unpaired.
                    if let Some(pos) = stack.iter().rposition(|(o, _)| *o == open) {
                        let (_, j) = stack[pos];
                        stack.truncate(pos);
                        partner.insert(i, j);
                        partner.insert(j, i);
                    }
                }
                _ => {}
            }
        }
        Self { toks, partner }
    }

    /// Next index at or after `i` that is not a comment.
    fn code(&self, mut i: usize) -> usize {
        while matches!(self.toks.get(i), Some(Tok::Comment { .. })) {
            i += 1;
        }
        i
    }

    fn punct(&self, i: usize, c: char) -> bool {
        self.toks.get(i) == Some(&Tok::Punct(c))
    }

    fn ident(&self, i: usize) -> Option<&str> {
        match self.toks.get(i) {
            Some(Tok::Ident(s)) => Some(s),
            _ => None,
        }
    }

    /// An attribute `#[...]` or `#![...]` at `i`: (inner?, first content token, index of `]`).
    fn attr(&self, i: usize) -> Option<(bool, usize, usize)> {
        if !self.punct(i, '#') {
            return None;
        }
        let mut j = self.code(i + 1);
        let inner = self.punct(j, '!');
        if inner {
            j = self.code(j + 1);
        }
        if !self.punct(j, '[') {
            return None;
        }
        let close = *self.partner.get(&j)?;
        Some((inner, j + 1, close))
    }

    /// The first attribute at or after token `i`: where its `#` is, and [`Self::attr`] there.
    fn next_attr(&self, mut i: usize) -> Option<(usize, (bool, usize, usize))> {
        while i < self.toks.len() {
            if let Some(a) = self.attr(i) {
                return Some((i, a));
            }
            i += 1;
        }
        None
    }

    /// The code tokens of `from..to` (comments dropped).
    fn code_tokens(&self, from: usize, to: usize) -> Vec<&Tok> {
        self.toks[from..to]
            .iter()
            .filter(|t| !matches!(t, Tok::Comment { .. }))
            .collect()
    }

    fn attr_is(&self, from: usize, to: usize, want: &[Tok]) -> bool {
        let got = self.code_tokens(from, to);
        got.len() == want.len() && got.iter().zip(want).all(|(a, b)| *a == b)
    }
}

/// Token ranges (inclusive) of `#[cfg(test)]` items, and the files of `#[cfg(test)] mod x;`.
fn cfg_test_items(lx: &Lexed, file: &Path) -> (Vec<(usize, usize)>, Vec<PathBuf>) {
    let cfg_test = [
        Tok::Ident("cfg".into()),
        Tok::Punct('('),
        Tok::Ident("test".into()),
        Tok::Punct(')'),
    ];
    let mut ranges = Vec::new();
    let mut files = Vec::new();
    let mut i = 0;
    while let Some((at, (inner, from, close))) = lx.next_attr(i) {
        if !lx.attr_is(from, close, &cfg_test) {
            i = close + 1;
            continue;
        }
        if inner {
            // `#![cfg(test)]`: the whole file (or module) is test code.
            ranges.push((0, lx.toks.len().saturating_sub(1)));
            return (ranges, files);
        }
        // Skip further attributes, noting a `#[path = "..."]`.
        let mut j = lx.code(close + 1);
        let mut path_attr = None;
        while let Some((_, f, c)) = lx.attr(j) {
            let t = lx.code_tokens(f, c);
            if let [Tok::Ident(p), Tok::Punct('='), Tok::Str(v)] = t.as_slice() {
                if p == "path" {
                    path_attr = Some(v.clone());
                }
            }
            j = lx.code(c + 1);
        }
        // The item runs to a `;` or to the end of its first `{...}` block.
        let mut end = j;
        let mut k = j;
        while k < lx.toks.len() {
            match &lx.toks[k] {
                Tok::Punct(';') => {
                    end = k;
                    break;
                }
                Tok::Punct('{') => {
                    end = lx.partner.get(&k).copied().unwrap_or(lx.toks.len() - 1);
                    break;
                }
                Tok::Punct('(' | '[') => k = lx.partner.get(&k).copied().unwrap_or(k),
                _ => {}
            }
            k += 1;
        }
        if lx.punct(end, ';') {
            let item = lx.code_tokens(j, end);
            if let Some(pos) = item.iter().position(|t| **t == Tok::Ident("mod".into())) {
                if let Some(Tok::Ident(name)) = item.get(pos + 1) {
                    files.extend(module_files(file, name, path_attr.as_deref()));
                }
            }
        }
        ranges.push((at, end));
        i = end + 1;
    }
    (ranges, files)
}

/// Where `mod name;` declared in `file` may live.
fn module_files(file: &Path, name: &str, path_attr: Option<&str>) -> Vec<PathBuf> {
    let dir = file.parent().unwrap_or(Path::new(""));
    if let Some(p) = path_attr {
        return vec![dir.join(p)];
    }
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let base = if matches!(stem, "mod" | "lib" | "main") {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    vec![
        base.join(format!("{name}.rs")),
        base.join(name).join("mod.rs"),
    ]
}

/// A `#[test]` function: its name and its doc comment.
#[derive(Debug, PartialEq, Eq)]
struct TestFn {
    name: String,
    doc: String,
}

fn test_fns(lx: &Lexed) -> Vec<TestFn> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some((at, (inner, from, close))) = lx.next_attr(i) {
        if inner {
            i = at + 1;
            continue;
        }
        // `#[test]` or a path ending in `::test` (e.g. `#[tokio::test]`), no arguments.
        let content = lx.code_tokens(from, close);
        let is_test = content.last() == Some(&&Tok::Ident("test".into()))
            && content
                .iter()
                .all(|t| matches!(t, Tok::Ident(_) | Tok::Punct(':')));
        if !is_test {
            i = close + 1;
            continue;
        }
        let mut docs = docs_before(lx, at);
        // Forward: more attributes and doc comments, qualifiers, then `fn name`.
        let mut j = close + 1;
        let mut name = None;
        while j < lx.toks.len() {
            match &lx.toks[j] {
                Tok::Comment {
                    kind: DocKind::Outer,
                    text,
                    ..
                } => docs.push(text.clone()),
                Tok::Comment { .. } => {}
                Tok::Punct('#') => match lx.attr(j) {
                    Some((_, _, c)) => j = c,
                    None => break,
                },
                Tok::Ident(k) if k == "fn" => {
                    name = lx.ident(lx.code(j + 1)).map(str::to_string);
                    break;
                }
                Tok::Ident(_) | Tok::Str(_) => {}
                Tok::Punct('(') => j = lx.partner.get(&j).copied().unwrap_or(j),
                _ => break,
            }
            j += 1;
        }
        if let Some(name) = name {
            out.push(TestFn {
                name,
                doc: docs.join("\n"),
            });
        }
        i = close + 1;
    }
    out
}

/// Outer doc comments directly above the attribute at `i`, across other attributes and plain
/// comments.
fn docs_before(lx: &Lexed, i: usize) -> Vec<String> {
    let mut docs = Vec::new();
    let mut k = i;
    while k > 0 {
        let prev = k - 1;
        match &lx.toks[prev] {
            Tok::Comment {
                kind: DocKind::Outer,
                text,
                ..
            } => {
                docs.push(text.clone());
                k = prev;
            }
            Tok::Comment {
                kind: DocKind::Plain,
                ..
            } => k = prev,
            Tok::Punct(']') => {
                let Some(&open) = lx.partner.get(&prev) else {
                    break;
                };
                let mut h = open;
                while h > 0 && matches!(lx.toks[h - 1], Tok::Comment { .. }) {
                    h -= 1;
                }
                if h > 0 && lx.punct(h - 1, '#') {
                    k = h - 1;
                } else {
                    break;
                }
            }
            _ => break,
        }
    }
    docs.reverse();
    docs
}

/// `Area.Name`, the form of a harness case name.
fn is_case_name(s: &str) -> bool {
    s.split_once('.').is_some_and(|(area, name)| {
        area.starts_with(|c: char| c.is_ascii_uppercase())
            && area.chars().all(|c| c.is_ascii_alphanumeric())
            && !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

/// Harness cases declared in a file: (case name, the strings of its requirement list). A case
/// is a `requirements` field, constant or function (any case) followed by a bracketed list of
/// string literals; its name is the `Area.Name` string literal of the innermost enclosing
/// `{...}` block that has one (the nearest, if there are several).
fn harness_cases(lx: &Lexed, excluded: &[(usize, usize)]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for (i, t) in lx.toks.iter().enumerate() {
        let Tok::Ident(id) = t else { continue };
        if !id.eq_ignore_ascii_case("requirements") || in_ranges(excluded, i) {
            continue;
        }
        let Some(list) = string_list_after(lx, i) else {
            continue;
        };
        if let Some(name) = enclosing_case_name(lx, i) {
            out.push((name, list));
        }
    }
    out
}

fn in_ranges(ranges: &[(usize, usize)], i: usize) -> bool {
    ranges.iter().any(|&(a, b)| a <= i && i <= b)
}

/// The first `[...]` made only of string literals after `i`, before the declaration ends.
fn string_list_after(lx: &Lexed, i: usize) -> Option<Vec<String>> {
    let mut depth = 0i32;
    for k in i + 1..(i + 80).min(lx.toks.len()) {
        match &lx.toks[k] {
            Tok::Punct('[') => {
                let close = *lx.partner.get(&k)?;
                let inner = lx.code_tokens(k + 1, close);
                let strings: Vec<String> = inner
                    .iter()
                    .filter_map(|t| match t {
                        Tok::Str(s) => Some(s.clone()),
                        _ => None,
                    })
                    .collect();
                if !strings.is_empty()
                    && inner
                        .iter()
                        .all(|t| matches!(t, Tok::Str(_) | Tok::Punct(',')))
                {
                    return Some(strings);
                }
                depth += 1;
            }
            Tok::Punct('(' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            Tok::Punct(';' | ',') if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

fn enclosing_case_name(lx: &Lexed, i: usize) -> Option<String> {
    // Walk outwards through the enclosing `{...}` blocks.
    let mut k = i;
    loop {
        let open = (0..k)
            .rev()
            .find(|&o| lx.punct(o, '{') && lx.partner.get(&o).is_some_and(|&c| c > i))?;
        let close = lx.partner[&open];
        let best = (open + 1..close)
            .filter_map(|p| match &lx.toks[p] {
                Tok::Str(s) if is_case_name(s) => Some((p.abs_diff(i), s.clone())),
                _ => None,
            })
            .min();
        if let Some((_, name)) = best {
            return Some(name);
        }
        k = open;
    }
}

// ------------------------------------------------------------------------------------------------
// Requirement IDs in text and names

/// Requirement IDs mentioned in prose: `NF-09`, lists `TDR-03/04/05` and `NF-12/NF-13`, ranges
/// `LOG-01 … LOG-09`, `LOG-03…07`, `LOG-01 .. LOG-07`, `UM-01–UM-22` (a bare end number only
/// after `…`: "NF-03... 12" is prose). Returns `(prefix, number)` pairs, known or not.
fn ids_in_text(text: &str, prefixes: &BTreeSet<String>) -> Vec<(String, u32)> {
    let s: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let boundary = i == 0 || !is_ident_char(s[i - 1]);
        let Some((prefix, n, mut j)) = boundary.then(|| id_at(&s, i, prefixes)).flatten() else {
            i += 1;
            continue;
        };
        out.push((prefix.clone(), n));
        let mut prefix = prefix;
        let mut last = n;
        loop {
            // `/NN` or `/XX-NN`
            if s.get(j) == Some(&'/') {
                if let Some((p, m, next)) = id_at(&s, j + 1, prefixes) {
                    out.push((p.clone(), m));
                    (prefix, last, j) = (p, m, next);
                    continue;
                }
                if let Some((m, next)) = two_digits(&s, j + 1) {
                    out.push((prefix.clone(), m));
                    (last, j) = (m, next);
                    continue;
                }
                break;
            }
            // A range marker, optionally surrounded by blanks.
            let mut k = j;
            while k < s.len() && s[k].is_whitespace() && k - j < 3 {
                k += 1;
            }
            let rest: String = s[k..(k + 3).min(s.len())].iter().collect();
            let (marker_len, bare_ok) = if rest.starts_with('…') {
                (1, true)
            } else if rest.starts_with("...") {
                (3, false)
            } else if rest.starts_with("..") {
                (2, false)
            } else if rest.starts_with('–') {
                (1, false)
            } else {
                break;
            };
            k += marker_len;
            while k < s.len() && s[k].is_whitespace() && k - j < 8 {
                k += 1;
            }
            let end = match id_at(&s, k, prefixes) {
                Some((p, m, next)) if p == prefix => Some((m, next)),
                Some(_) => None,
                None if bare_ok => two_digits(&s, k),
                None => None,
            };
            match end {
                Some((m, next)) if m > last && m - last <= 40 => {
                    out.extend((last + 1..=m).map(|x| (prefix.clone(), x)));
                    (last, j) = (m, next);
                }
                _ => break,
            }
        }
        i = j;
    }
    out
}

/// `XX-NN` at `i` with a known prefix: (prefix, number, index after it).
fn id_at(s: &[char], i: usize, prefixes: &BTreeSet<String>) -> Option<(String, u32, usize)> {
    prefixes.iter().find_map(|p| {
        let plen = p.chars().count();
        let matches = p.chars().enumerate().all(|(k, c)| s.get(i + k) == Some(&c));
        if !matches || s.get(i + plen) != Some(&'-') {
            return None;
        }
        let (n, next) = two_digits(s, i + plen + 1)?;
        Some((p.clone(), n, next))
    })
}

/// Exactly two digits at `i`, not followed by another digit or letter.
fn two_digits(s: &[char], i: usize) -> Option<(u32, usize)> {
    let a = s.get(i)?.to_digit(10)?;
    let b = s.get(i + 1)?.to_digit(10)?;
    if s.get(i + 2).is_some_and(|&c| c.is_alphanumeric()) {
        return None;
    }
    Some((a * 10 + b, i + 2))
}

/// Requirement IDs in a test name: `nf_09_...`, `um_11_12_...` (two IDs), `nf_04_nf_09_...`.
fn ids_in_name(name: &str, prefixes: &BTreeSet<String>) -> Vec<(String, u32)> {
    let parts: Vec<&str> = name.split('_').collect();
    let two = |p: &str| (p.len() == 2 && p.chars().all(|c| c.is_ascii_digit())).then(|| p.parse());
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for (k, part) in parts.iter().enumerate() {
        let upper = part.to_ascii_uppercase();
        if prefixes.contains(&upper) && parts.get(k + 1).is_some_and(|n| two(n).is_some()) {
            current = Some(upper);
        } else if let (Some(p), Some(Ok(n))) = (&current, two(part)) {
            out.push((p.clone(), n));
        } else {
            current = None;
        }
    }
    out
}

fn fmt_id(prefix: &str, n: u32) -> String {
    format!("{prefix}-{n:02}")
}

// ------------------------------------------------------------------------------------------------
// Walking the tree and building the table

/// Every file under `root` except in `target/` and hidden directories, as `/`-separated
/// relative paths, sorted.
fn walk(root: &Path) -> Vec<String> {
    fn go(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    go(root, &e.path(), out);
                }
            } else if ft.is_file() {
                if let Ok(rel) = e.path().strip_prefix(root) {
                    let parts: Vec<String> = rel
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect();
                    out.push(parts.join("/"));
                }
            }
        }
    }
    let mut out = Vec::new();
    go(root, root, &mut out);
    out.sort();
    out
}

fn is_module_path(rel: &str) -> bool {
    let mut parts = rel.split('/');
    let first = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    !rest.is_empty()
        && MODULE_ROOTS.iter().any(|r| first.starts_with(r))
        && !rest.iter().any(|p| TEST_DIRS.contains(p))
        && !TEST_DIRS.contains(&first)
}

fn in_test_dir(rel: &str) -> bool {
    rel.split('/').any(|p| TEST_DIRS.contains(&p))
}

#[derive(Default)]
struct Trace {
    /// file → test names
    tests: BTreeMap<String, BTreeSet<String>>,
    cases: BTreeSet<String>,
}

struct Scan {
    by_id: BTreeMap<String, Trace>,
    /// Unknown ID → files that mention it.
    unknown: BTreeMap<String, BTreeSet<String>>,
    test_count: usize,
    case_count: usize,
    /// Harness cases whose `requirements` hold a string that is not a known ID: (case, string).
    not_requirements: Vec<(String, String)>,
}

fn scan(root: &Path, known: &BTreeSet<String>) -> Scan {
    let prefixes: BTreeSet<String> = known
        .iter()
        .filter_map(|id| id.split_once('-').map(|(p, _)| p.to_string()))
        .collect();
    let files = walk(root);
    let sources: Vec<(String, Lexed)> = files
        .iter()
        .filter(|f| {
            f.ends_with(".rs") || (is_module_path(f) && (f.ends_with(".h") || f.ends_with(".c")))
        })
        .filter_map(|f| {
            let text = fs::read_to_string(root.join(f)).ok()?;
            Some((f.clone(), Lexed::new(&text)))
        })
        .collect();

    // First pass: cfg(test) items and test-only module files.
    let mut excluded: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
    let mut test_only: BTreeSet<String> = BTreeSet::new();
    for (rel, lx) in &sources {
        let (ranges, mods) = cfg_test_items(lx, Path::new(rel));
        excluded.insert(rel.clone(), ranges);
        for m in mods {
            let parts: Vec<String> = m
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            test_only.insert(normalise(&parts.join("/")));
        }
    }

    let mut result = Scan {
        by_id: known
            .iter()
            .map(|id| (id.clone(), Trace::default()))
            .collect(),
        unknown: BTreeMap::new(),
        test_count: 0,
        case_count: 0,
        not_requirements: Vec::new(),
    };
    let note = |id: String, rel: &str, result: &mut Scan| -> Option<String> {
        if known.contains(&id) {
            Some(id)
        } else {
            result
                .unknown
                .entry(id)
                .or_default()
                .insert(rel.to_string());
            None
        }
    };
    for (rel, lx) in &sources {
        let ex = &excluded[rel];
        let code_file = !test_only.contains(rel) && !in_test_dir(rel);

        if is_module_path(rel) && code_file {
            for (k, t) in lx.toks.iter().enumerate() {
                if let Tok::Comment { text, .. } = t {
                    if in_ranges(ex, k) {
                        continue;
                    }
                    // Only an unknown ID in a comment is of interest (listed below the table).
                    for (p, n) in ids_in_text(text, &prefixes) {
                        note(fmt_id(&p, n), rel, &mut result);
                    }
                }
            }
        }

        if rel.ends_with(".rs") {
            for t in test_fns(lx) {
                result.test_count += 1;
                let mut ids: BTreeSet<String> = ids_in_name(&t.name, &prefixes)
                    .into_iter()
                    .map(|(p, n)| fmt_id(&p, n))
                    .filter(|id| known.contains(id))
                    .collect();
                for (p, n) in ids_in_text(&t.doc, &prefixes) {
                    if let Some(id) = note(fmt_id(&p, n), rel, &mut result) {
                        ids.insert(id);
                    }
                }
                for id in ids {
                    let trace = result.by_id.get_mut(&id).unwrap();
                    trace
                        .tests
                        .entry(rel.clone())
                        .or_default()
                        .insert(t.name.clone());
                }
            }
        }

        if rel.ends_with(".rs") && code_file {
            for (name, list) in harness_cases(lx, ex) {
                result.case_count += 1;
                for s in &list {
                    if !known.contains(s) {
                        result.not_requirements.push((name.clone(), s.clone()));
                    }
                    for (p, n) in ids_in_text(s, &prefixes) {
                        if let Some(id) = note(fmt_id(&p, n), rel, &mut result) {
                            result
                                .by_id
                                .get_mut(&id)
                                .unwrap()
                                .cases
                                .insert(name.clone());
                        }
                    }
                }
            }
        }
    }
    result
}

/// Collapses `a/./b` and `a/x/../b`.
fn normalise(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "." | "" => {}
            ".." => {
                out.pop();
            }
            p => out.push(p),
        }
    }
    out.join("/")
}

fn code_list<'a>(items: impl IntoIterator<Item = &'a String>) -> String {
    let v: Vec<String> = items.into_iter().map(|s| format!("`{s}`")).collect();
    if v.is_empty() {
        "—".to_string()
    } else {
        v.join(", ")
    }
}

/// The fixed top of `docs/traceability.md`: how to regenerate it and how to read it.
const HEADER: &str = "\
# Requirements traceability

Generated by `tests/traceability.rs` (do not edit; `cargo test` fails while it is stale). \
Rewrite it with

```sh
RVGPU_BLESS=1 cargo test -p rvgpu --test traceability
```

One row per requirement of [requirements.md](requirements.md): **Tests**, the `#[test]` \
functions whose name (`nf_09_…`; `um_11_12_…` carries two) or doc comment carries the ID (a \
list `TDR-03/04` or range `LOG-01 … LOG-09` carries each); **Harness cases**, those listing it \
(`cargo run -p rvgpu-whlk -- --requirement ID`); **Status**, `tested`, `harness only` or \
**untested**. Source comments that mention an ID are found with `grep -rn ID`.

";

/// The whole of `docs/traceability.md`.
fn generate(root: &Path) -> String {
    let reqs = read_requirements(root);
    let known: BTreeSet<String> = reqs.iter().map(|r| r.id.clone()).collect();
    let scan = scan(root, &known);
    assert!(
        scan.test_count > 0,
        "the scanner found no #[test] functions at all; tests/traceability.rs needs updating"
    );
    assert!(
        scan.case_count > 0,
        "the scanner found no harness cases (a `requirements` list of string literals next to \
         an `Area.Name` string); if rvgpu-whlk declares cases differently now, update \
         `harness_cases` in tests/traceability.rs"
    );

    let status = |t: &Trace| {
        if !t.tests.is_empty() {
            "tested"
        } else if !t.cases.is_empty() {
            "harness only"
        } else {
            "**untested**"
        }
    };
    let count = |want: &str| {
        reqs.iter()
            .filter(|r| status(&scan.by_id[&r.id]) == want)
            .count()
    };
    let untested: Vec<&str> = reqs
        .iter()
        .filter(|r| status(&scan.by_id[&r.id]) == "**untested**")
        .map(|r| r.id.as_str())
        .collect();

    assert!(
        HEADER.contains(BLESS_COMMAND),
        "HEADER must show the bless command"
    );
    let mut md = String::from(HEADER);
    let w = &mut md;
    let _ = writeln!(
        w,
        "{} requirements: {} tested, {} harness only, {} untested{}.",
        reqs.len(),
        count("tested"),
        count("harness only"),
        untested.len(),
        if untested.is_empty() {
            String::new()
        } else {
            format!(" ({})", untested.join(", "))
        }
    );
    let _ = writeln!(w);
    // Who honours each requirement is stated once, in requirements.md.
    let _ = writeln!(w, "| ID | Status | Tests | Harness cases |");
    let _ = writeln!(w, "|---|---|---|---|");
    for r in &reqs {
        let t = &scan.by_id[&r.id];
        let tests: Vec<String> = t
            .tests
            .iter()
            .map(|(file, names)| format!("`{file}`: {}", code_list(names)))
            .collect();
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} |",
            r.id,
            status(t),
            if tests.is_empty() {
                "—".to_string()
            } else {
                tests.join("<br>")
            },
            code_list(&t.cases),
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "## IDs that are not in requirements.md");
    let _ = writeln!(w);
    if scan.unknown.is_empty() {
        let _ = writeln!(
            w,
            "None: every requirement-style ID in module comments, test doc comments and harness \
             cases is listed in requirements.md."
        );
    } else {
        let _ = writeln!(
            w,
            "Mentioned in module comments, test doc comments or harness cases, but not \
             requirements (typos, or requirements missing from requirements.md):"
        );
        let _ = writeln!(w);
        for (id, files) in &scan.unknown {
            let _ = writeln!(w, "- {id}: {}", code_list(files));
        }
    }
    md
}

// ------------------------------------------------------------------------------------------------
// The generator's own unit tests (no requirement IDs in names or doc comments here, so that they
// do not appear in the table).

fn prefixes() -> BTreeSet<String> {
    ["NF", "MF", "LOG", "TDR", "UM", "AL"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

fn ids(v: Vec<(String, u32)>) -> Vec<String> {
    v.into_iter().map(|(p, n)| fmt_id(&p, n)).collect()
}

#[test]
fn scanner_reads_ids_lists_and_ranges_in_prose() {
    let p = prefixes();
    let got = |s: &str| ids(ids_in_text(s, &p));
    assert_eq!(got("see NF-09, and UM-20."), ["NF-09", "UM-20"]);
    assert_eq!(got("TDR-03/04/05"), ["TDR-03", "TDR-04", "TDR-05"]);
    assert_eq!(
        got("NF-12/NF-13 and NF-14/LOG-01"),
        ["NF-12", "NF-13", "NF-14", "LOG-01"]
    );
    assert_eq!(got("(LOG-01 … LOG-03)"), ["LOG-01", "LOG-02", "LOG-03"]);
    assert_eq!(got("LOG-03…05 device"), ["LOG-03", "LOG-04", "LOG-05"]);
    assert_eq!(got("LOG-01 .. LOG-02"), ["LOG-01", "LOG-02"]);
    assert_eq!(
        got("(NF-02 …\n NF-04, MF-04)"),
        ["NF-02", "NF-03", "NF-04", "MF-04"]
    );
    assert_eq!(got("UM-01–UM-03"), ["UM-01", "UM-02", "UM-03"]);
    // An en dash used as punctuation, a sentence ending in "...", look-alikes.
    assert_eq!(got("NF-03 – 12 entries"), ["NF-03"]);
    assert_eq!(got("NF-03... 12"), ["NF-03"]);
    assert_eq!(got("XNF-03 NF-031 NF-3 ABC-2 UTF-16"), Vec::<String>::new());
    assert_eq!(got("TDR-09's reason"), ["TDR-09"]);
}

#[test]
fn scanner_reads_ids_in_test_names() {
    let p = prefixes();
    let got = |s: &str| ids(ids_in_name(s, &p));
    assert_eq!(got("nf_09_cmp_orders"), ["NF-09"]);
    assert_eq!(got("um_11_12_suspend"), ["UM-11", "UM-12"]);
    assert_eq!(got("nf_04_nf_09_seeded_stress"), ["NF-04", "NF-09"]);
    assert_eq!(got("threaded_um_20"), ["UM-20"]);
    assert_eq!(got("log_02_index_wraps_at_u32_max"), ["LOG-02"]);
    assert_eq!(got("tdr_05_sequence_step_mode_16_engines"), ["TDR-05"]);
    assert_eq!(got("dual_01_al_1_catalog_02"), Vec::<String>::new());
}

#[test]
fn tokenizer_keeps_strings_out_of_comments() {
    let toks = tokenize(
        "let s = \"// not a comment\"; /* block /* nested */ NF-01 */ let c = '\"'; \
         let r = r#\"raw \" \"#; // tail\n// more\nfn x<'a>() {}",
    );
    let comments: Vec<&str> = toks
        .iter()
        .filter_map(|t| match t {
            Tok::Comment { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(comments, [" block /* nested */ NF-01 ", " tail\n more"]);
    assert!(toks.contains(&Tok::Str("// not a comment".into())));
    assert!(toks.contains(&Tok::Str("raw \" ".into())));
    assert!(toks.contains(&Tok::Ident("fn".into())));
}

#[test]
fn tests_with_docs_and_attributes_are_found() {
    let lx = Lexed::new(
        "/// Proves UM-20.\n#[test]\n#[ignore = \"slow\"]\nfn walk() {}\n\
         #[cfg(test)]\nmod tests {\n    // plain\n    #[test]\n    fn um_21_global() {}\n}\n\
         #[tokio::test]\n/// late doc\nasync fn later() {}\n#[cfg_attr(x, test)]\nfn not_a_test() {}",
    );
    assert_eq!(
        test_fns(&lx),
        [
            TestFn {
                name: "walk".into(),
                doc: " Proves UM-20.".into()
            },
            TestFn {
                name: "um_21_global".into(),
                doc: String::new()
            },
            TestFn {
                name: "later".into(),
                doc: " late doc".into()
            },
        ]
    );
}

#[test]
fn cfg_test_items_and_test_only_files_are_excluded() {
    let src = "// kept NF-01\n#[cfg(test)]\nmod tests { // dropped NF-02\n }\n\
               #[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod tests;\n#[cfg(test)]\nmod other;\n\
               #[cfg(test)]\nfn helper(a: [u8; 2]) { /* dropped */ }\n// kept too";
    let lx = Lexed::new(src);
    let (ranges, files) = cfg_test_items(&lx, Path::new("umd/src/submit.rs"));
    let kept: Vec<&str> = lx
        .toks
        .iter()
        .enumerate()
        .filter(|(k, _)| !in_ranges(&ranges, *k))
        .filter_map(|(_, t)| match t {
            Tok::Comment { text, .. } => Some(text.trim()),
            _ => None,
        })
        .collect();
    assert_eq!(kept, ["kept NF-01", "kept too"]);
    assert_eq!(
        files,
        [
            PathBuf::from("umd/src/x_tests.rs"),
            PathBuf::from("umd/src/submit/other.rs"),
            PathBuf::from("umd/src/submit/other/mod.rs"),
        ]
    );
}

#[test]
fn harness_cases_in_struct_and_trait_form() {
    let structs = Lexed::new(
        "pub struct Case { pub name: &'static str, pub requirements: &'static [&'static str] }\n\
         pub const CASES: &[Case] = &[\n\
           Case { name: \"Tdr.PerEngineCaps\", requirements: &[\"TDR-01\"], summary: \"a b\", run: x },\n\
           Case { name: \"Adapter.StartStop\", requirements: &[\"DDI-01\"], run: y },\n\
           Case { requirements: &[\"NF-03\", \"NF-04\"], name: \"NativeFence.NoWaiter\", run: z },\n\
         ];\nfn f(c: &Case) -> bool { c.requirements.is_empty() }",
    );
    let got = harness_cases(&structs, &[]);
    assert_eq!(
        got,
        [
            ("Tdr.PerEngineCaps".to_string(), vec!["TDR-01".to_string()]),
            ("Adapter.StartStop".to_string(), vec!["DDI-01".to_string()]),
            (
                "NativeFence.NoWaiter".to_string(),
                vec!["NF-03".to_string(), "NF-04".to_string()]
            ),
        ]
    );
    let traits = Lexed::new(
        "impl Case for PerEngineCaps {\n\
           fn name(&self) -> &'static str { \"Tdr.PerEngineCaps\" }\n\
           fn requirements(&self) -> &'static [&'static str] { &[\"TDR-01\"] }\n\
         }\n\
         impl Case for Reset { const NAME: &str = \"Tdr.ResetSequence\"; \
           const REQUIREMENTS: &[&str] = &[\"TDR-05\"]; }",
    );
    assert_eq!(
        harness_cases(&traits, &[]),
        [
            ("Tdr.PerEngineCaps".to_string(), vec!["TDR-01".to_string()]),
            ("Tdr.ResetSequence".to_string(), vec!["TDR-05".to_string()]),
        ]
    );
}

#[test]
fn module_paths_and_requirement_rows() {
    assert!(is_module_path("driver/kmd/src/fence/mod.rs"));
    assert!(is_module_path("simos/src/tdr.rs"));
    assert!(is_module_path("simos-vidsch/src/lib.rs"));
    assert!(is_module_path("src/lib.rs"));
    assert!(!is_module_path("simos/tests/tdr.rs"));
    assert!(!is_module_path("simos/benches/fence.rs"));
    assert!(!is_module_path("whlk/src/cases/tdr.rs"));
    assert!(!is_module_path("tests/models/src/lib.rs"));
    assert!(!is_module_path("build.rs"));

    let rows = parse_requirements(
        "| ID | Who | Requirement | Source |\n|---|---|---|---|\n\
         | NF-01 | DEV, KMD | text | 000 |\n| **UM-22** | KMD | x | 004 |\n| seed | file |",
    );
    let got: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.id.as_str(), r.who.as_str()))
        .collect();
    assert_eq!(got, [("NF-01", "DEV, KMD"), ("UM-22", "KMD")]);
    let digest = digest_requirement_ids("- **NF-01** DEV: a\n  - **x** no\n- **TDR-09** KMD: b\n");
    assert_eq!(
        digest.into_iter().collect::<Vec<_>>(),
        ["NF-01".to_string(), "TDR-09".to_string()]
    );
}
