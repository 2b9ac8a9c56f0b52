//! The thunk catalog (`rvgpu_simos::kmt::catalog`) as the conformance suites' checklist. A
//! suite labels each refusal case with its row's `what` and takes the expected status from the
//! row ([`expected`]); [`assert_covers`] fails when one of the row's checks has no case and is
//! not listed as one no caller can drive (with the reason), or when a case names no check.

use rvgpu_simos::kmt::catalog::{self, Thunk};

fn row(thunk: &str) -> &'static Thunk {
    catalog::row(thunk).unwrap_or_else(|| panic!("{thunk}: no catalog row"))
}

/// The status the catalog says 24H2 answers `thunk`'s check `what` with, as the thunk returns it.
pub fn expected(thunk: &str, what: &str) -> u64 {
    let check = row(thunk)
        .checks
        .iter()
        .find(|c| c.what == what)
        .unwrap_or_else(|| panic!("{thunk}: no catalog check {what:?}"));
    u64::from(check.status)
}

/// Every check of `thunk`'s row is driven by a case labelled with its `what`, or is in
/// `not_driven` as `(what, why no caller of this suite can make it happen)`.
pub fn assert_covers(thunk: &str, driven: &[&str], not_driven: &[(&str, &str)]) {
    let row = row(thunk);
    assert!(
        row.source.is_some(),
        "{thunk}: the row is unread, so nothing conforms"
    );
    for label in driven.iter().chain(not_driven.iter().map(|(w, _)| w)) {
        assert!(
            row.checks.iter().any(|c| c.what == *label),
            "{thunk}: case {label:?} names no catalog check"
        );
    }
    let missing: Vec<&str> = row
        .checks
        .iter()
        .map(|c| c.what)
        .filter(|w| !driven.contains(w) && !not_driven.iter().any(|(n, _)| n == w))
        .collect();
    assert!(
        missing.is_empty(),
        "{thunk}: no conformance case for {missing:?}"
    );
}
