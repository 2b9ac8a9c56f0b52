//! What every part of the harness's backend layer speaks: the failure a call reports (with
//! the bug check it may carry), and the look-ups of a session's lists.

use std::fmt;

/// A bug check as the backend saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BugCheckInfo {
    /// Stop code.
    pub code: u32,
    /// Parameters 1..4.
    pub params: [u64; 4],
}

impl fmt::Display for BugCheckInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.params;
        write!(
            f,
            "bug check {:#x} ({a:#x}, {b:#x}, {c:#x}, {d:#x})",
            self.code
        )
    }
}

/// Why a session operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The machine bug-checked.
    BugCheck(BugCheckInfo),
    /// A DDI returned an error NTSTATUS.
    DdiFailed(i32),
    /// The backend itself failed (simulation error, I/O...).
    Backend(String),
    /// The backend cannot do this (the case is skipped).
    Unsupported(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BugCheck(b) => write!(f, "{b}"),
            Self::DdiFailed(s) => write!(f, "DDI failed with NTSTATUS {:#010x}", *s as u32),
            Self::Backend(m) => write!(f, "backend error: {m}"),
            Self::Unsupported(m) => write!(f, "unsupported by this backend: {m}"),
        }
    }
}

/// Entry `i` of one of a session's lists, or a failure saying there is no `what` `i`.
pub(crate) fn nth<'a, T>(list: &'a [T], i: usize, what: &str) -> Result<&'a T, Failure> {
    list.get(i)
        .ok_or_else(|| Failure::Backend(format!("no {what} {i}")))
}

/// [`nth`], to change the entry.
pub(crate) fn nth_mut<'a, T>(
    list: &'a mut [T],
    i: usize,
    what: &str,
) -> Result<&'a mut T, Failure> {
    list.get_mut(i)
        .ok_or_else(|| Failure::Backend(format!("no {what} {i}")))
}
