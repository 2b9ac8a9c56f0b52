//! Functions a reader can follow in the simulated OS: none over 150 lines outside tests, no
//! reading (`simos/src/os/answers.rs`, `Reading`) implemented as a twin function whose name
//! ends in `_24h2` (a reading is a value the code consults), and errors typed where a caller
//! decides.
//!
//! The scanner is deliberately simple: a function starts at a line whose code begins with
//! optional qualifiers and `fn name`, and ends where its brace depth returns to zero. Braces
//! inside string literals, char literals and `//` comments are skipped; raw strings are not
//! (none in `simos/src` holds an unbalanced brace). An item after `#[cfg(test)]` is skipped
//! whole, as are files under a `tests` directory and `tests.rs` / `*_tests.rs` modules.

use super::{none_bad, root, tree_files};

/// The most lines a function of the simulated OS may take.
const LIMIT: usize = 150;

/// Functions still over [`LIMIT`], each to be split into named steps. The list only shrinks:
/// an entry that fits (or is gone) fails the test until it is removed here.
const KNOWN_LONG: &[&str] = &[];

/// The name of the function a line of code declares, if it declares one.
fn declared_fn(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    loop {
        let before = rest;
        for q in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ] {
            rest = rest.strip_prefix(q).unwrap_or(rest);
        }
        if let Some(r) = rest.strip_prefix("extern \"") {
            rest = r.split_once("\" ").map_or(r, |(_, r)| r);
        }
        if rest == before {
            break;
        }
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
    matches!(rest[end..].chars().next(), Some('(' | '<')).then(|| &rest[..end])
}

/// The change in brace depth over `line`, and whether it holds a `{` or a `;` (what ends a
/// declaration without a body), skipping strings, char literals and `//` comments.
fn braces(line: &str) -> (i64, bool, bool) {
    let b = line.as_bytes();
    let (mut depth, mut open, mut semi) = (0, false, false);
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => break,
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            // A char literal ('{', '\''); a lifetime ('a) has no closing quote two on.
            b'\'' if b.get(i + 1) == Some(&b'\\') => {
                i += 3;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') => i += 2,
            b'{' => {
                depth += 1;
                open = true;
            }
            b'}' => depth -= 1,
            b';' => semi = true,
            _ => {}
        }
        i += 1;
    }
    (depth, open, semi)
}

/// Every function of `text` outside `#[cfg(test)]` items: (name, first line, lines).
pub(super) fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    // The end of the function being measured and of the test item being skipped.
    let mut skip_test = false;
    while i < lines.len() {
        let line = lines[i];
        if line.trim_start().starts_with("#[cfg(test)]") {
            skip_test = true;
            i += 1;
            continue;
        }
        let name = declared_fn(line);
        if !skip_test && name.is_none() {
            i += 1;
            continue;
        }
        // Measure the item from here to its closing brace.
        let (mut depth, mut started, mut j) = (0i64, false, i);
        while j < lines.len() {
            let (d, open, semi) = braces(lines[j]);
            depth += d;
            started |= open;
            if (started && depth <= 0) || (!started && semi) {
                break;
            }
            j += 1;
        }
        if !skip_test && started {
            if let Some(name) = name {
                found.push((name.to_owned(), i + 1, j - i + 1));
            }
        }
        if skip_test {
            // The whole test item is skipped, its functions with it.
            skip_test = false;
            i = j + 1;
        } else {
            // Functions nested in this one are measured too.
            i += 1;
        }
    }
    found
}

/// No function of `simos/src` outside tests is over [`LIMIT`] lines (but those of
/// [`KNOWN_LONG`]), and none is a `_24h2` twin of another.
#[test]
fn simos_functions_fit_and_readings_are_values_not_twin_functions() {
    let mut bad = Vec::new();
    let mut long = Vec::new();
    for file in tree_files() {
        if !file.starts_with("simos/src/") || !file.ends_with(".rs") {
            continue;
        }
        let name = file.rsplit('/').next().unwrap_or("");
        if file.split('/').any(|c| c == "tests")
            || name == "tests.rs"
            || name.ends_with("_tests.rs")
        {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root().join(&file)) else {
            continue;
        };
        for (f, line, n) in functions(&text) {
            if f.ends_with("_24h2") {
                bad.push(format!("{file}:{line}: `{f}` is a reading's twin function"));
            }
            if n > LIMIT {
                let id = format!("{file}::{f}");
                if !KNOWN_LONG.contains(&id.as_str()) {
                    bad.push(format!("{file}:{line}: `{f}` is {n} lines (limit {LIMIT})"));
                }
                long.push(id);
            }
        }
    }
    for k in KNOWN_LONG {
        if !long.iter().any(|l| l == k) {
            bad.push(format!(
                "{k} fits now (or is gone): remove it from KNOWN_LONG"
            ));
        }
    }
    none_bad(&bad, "simos functions too long or twinned by reading");
}

/// The most places `simos/src` may build a `SimError::Simulation` (API misuse and what is not
/// simulated); a case a caller decides on gets its own `SimError` variant instead.
const SIMULATION_ERRORS: usize = 10;

/// Errors of the simulated OS are typed where a caller decides on them: the catch-all
/// `SimError::Simulation` is built in at most [`SIMULATION_ERRORS`] places outside tests.
#[test]
fn simos_errors_are_typed_where_a_caller_decides() {
    let mut sites = Vec::new();
    for file in tree_files() {
        if !file.starts_with("simos/src/") || !file.ends_with(".rs") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root().join(&file)) else {
            continue;
        };
        // A `#[cfg(test)]` module ends the file's code in this tree.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, line) in code.lines().enumerate() {
            if line.contains("SimError::Simulation(") && !line.trim_start().starts_with("//") {
                sites.push(format!("{file}:{}", i + 1));
            }
        }
    }
    assert!(
        sites.len() <= SIMULATION_ERRORS,
        "SimError::Simulation built in {} places (at most {SIMULATION_ERRORS}): {sites:#?}",
        sites.len()
    );
}

/// The scanner finds what it must: a function's length, a body-less declaration skipped, braces
/// in strings and char literals ignored, a `#[cfg(test)]` module skipped whole.
#[test]
fn the_function_scanner_measures_what_it_must() {
    let text = "\
pub(crate) unsafe extern \"system\" fn a<T>(x: T) {
    let s = \"}}\"; let c = '}'; let q = '\\''; let l: &'static str = s;
    // }
}
fn declared(x: u32);
#[cfg(test)]
mod tests {
    fn hidden() {
    }
}
fn b_24h2() {}
";
    let f = functions(text);
    let got: Vec<(&str, usize, usize)> = f.iter().map(|(n, l, c)| (n.as_str(), *l, *c)).collect();
    assert_eq!(got, [("a", 1, 4), ("b_24h2", 11, 1)]);
}
