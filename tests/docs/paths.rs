//! Paths named in the code's comments and in the documents' prose exist: a comment or a page
//! that sends a reader to a file is only worth the file being there (a moved module leaves its
//! old path behind in the text that cites it).

use super::{documents, none_bad, own_text, root, source_files, TOP};
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
        .map(|t| t.trim_end_matches(['.', ':']).trim_end_matches("'s"))
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

/// The comment on `line` of a source file named `file`: after `//` in Rust, C and JavaScript
/// (and a C block comment's `/*` or leading `*`), after `#` in shell, Python and TOML, after `;`
/// in an INF.
fn comment_of<'a>(file: &str, line: &'a str) -> Option<&'a str> {
    let ext = file.rsplit('.').next().unwrap_or("");
    let markers: &[&str] = match ext {
        "rs" | "js" => &["//"],
        "c" | "h" => &["//", "/*"],
        "sh" | "py" | "toml" => &["#"],
        "inf" => &[";"],
        _ if file.starts_with(".ci/") => &["#"],
        _ => &[],
    };
    if matches!(ext, "c" | "h") && line.trim_start().starts_with('*') {
        return Some(line.trim_start());
    }
    let at = markers.iter().filter_map(|m| line.find(m)).min()?;
    Some(&line[at..])
}

#[test]
fn paths_in_code_comments_exist() {
    let mut bad = Vec::new();
    let mut seen = 0;
    for file in source_files() {
        let Ok(text) = std::fs::read_to_string(root().join(&file)) else {
            continue;
        };
        // Inside a comment paragraph that cites another project's tree.
        let mut citing = false;
        for (n, line) in text.lines().enumerate() {
            let Some(comment) = comment_of(&file, line) else {
                citing = false;
                continue;
            };
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

/// The documents' prose, not only their backticked spans (`paths_in_the_documents_exist`):
/// a path a sentence or a link names exists, read from the root or from the page's folder.
#[test]
fn paths_in_document_prose_exist() {
    let mut bad = Vec::new();
    let mut seen = 0;
    for doc in documents() {
        for (n, line) in own_text(&doc).lines().enumerate() {
            // A link's target is read from the page's folder (`../driver/...`).
            let line = line.replace("](../", "](");
            for token in path_tokens(&line) {
                let token = token.split('#').next().unwrap_or(token);
                seen += 1;
                if !MADE_AT_RUN_TIME.contains(&token) && !exists_from(&doc, token) {
                    bad.push(format!("{doc}:{}: `{token}` does not exist", n + 1));
                }
            }
        }
    }
    assert!(seen > 100, "found only {seen} paths in the documents");
    none_bad(&bad, "paths in the documents that do not exist");
}
