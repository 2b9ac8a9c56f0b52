//! Paths named in the code's comments exist: a comment that sends a reader to a file is only
//! worth the file being there (a moved module leaves its old path behind in the comments
//! that cite it).

use super::{none_bad, root, source_files, TOP};
use std::path::Path;

/// Projects whose trees comments cite by path (Helios's notes, the decompiled sources,
/// osslsigncode's test files).
const FOREIGN: &[&str] = &["helios", "decompiled-pseudocode", "osslsigncode"];

/// Directories made at run time, not committed.
const MADE_AT_RUN_TIME: &[&str] = &["fuzz/findings/"];

/// The words of a comment that look like repository paths: they start with a top-level
/// directory (or `src/`, read against the commenting file's crate) and hold no placeholder.
fn path_tokens(comment: &str) -> impl Iterator<Item = &str> {
    comment
        .split(|c: char| c.is_whitespace() || matches!(c, '`' | '(' | ')' | ',' | ';' | '"'))
        .map(|t| t.trim_end_matches("'s").trim_end_matches(['.', ':']))
        .filter(|t| TOP.iter().any(|top| t.starts_with(top)))
        // A file (a name with an extension) or a directory (a trailing slash); a bare
        // `driver/device` is prose.
        .filter(|t| t.ends_with('/') || t.rsplit('/').next().is_some_and(|f| f.contains('.')))
        .filter(|t| !t.contains(['*', '<', '{', '$', '…', '#']))
        .map(|t| t.split("::").next().unwrap_or(t))
}

/// `path` exists from the root or, for a crate-relative path, from a directory above `file`.
fn exists_from(file: &str, path: &str) -> bool {
    let path = path.trim_end_matches('/');
    let mut dir = Path::new(file).parent();
    while let Some(d) = dir {
        if root().join(d).join(path).exists() {
            return true;
        }
        dir = d.parent();
    }
    root().join(path).exists()
}

#[test]
fn paths_in_code_comments_exist() {
    let mut bad = Vec::new();
    let mut seen = 0;
    for file in source_files().into_iter().filter(|f| f.ends_with(".rs")) {
        let Ok(text) = std::fs::read_to_string(root().join(&file)) else {
            continue;
        };
        // Inside a comment paragraph that cites another project's tree.
        let mut citing = false;
        for (n, line) in text.lines().enumerate() {
            let Some(at) = line.find("//") else {
                citing = false;
                continue;
            };
            let comment = &line[at..];
            if comment.trim_start_matches(['/', '!']).trim().is_empty() {
                citing = false;
            }
            let lower = comment.to_lowercase();
            citing |= FOREIGN.iter().any(|f| lower.contains(f));
            if citing {
                continue;
            }
            for token in path_tokens(comment) {
                seen += 1;
                if !MADE_AT_RUN_TIME.contains(&token) && !exists_from(&file, token) {
                    bad.push(format!("{file}:{}: `{token}` does not exist", n + 1));
                }
            }
        }
    }
    assert!(seen > 200, "found only {seen} paths in comments");
    none_bad(&bad, "paths in comments that do not exist");
}
