//! The pointer and handle arguments of the exported calls: a handle as its token and back, a
//! C array as a slice, an out-pointer cleared and then written.

use alloc::vec::Vec;
use core::ptr;

use super::types::{RvgpuQueue, RvgpuStatus};

/// A handle's token (never dereferenced).
pub(super) fn h<T>(p: *mut T) -> usize {
    p.addr()
}

/// A token as a handle of type `T`.
pub(crate) fn handle<T>(token: usize) -> *mut T {
    ptr::without_provenance_mut(token)
}

/// `r`'s error, or `Ok` after `write` stored its value.
pub(super) fn out<T>(r: Result<T, RvgpuStatus>, write: impl FnOnce(T)) -> RvgpuStatus {
    match r {
        Ok(v) => {
            write(v);
            RvgpuStatus::Ok
        }
        Err(e) => e,
    }
}

/// Reads one dword of every 4 KiB of `dwords` (the first and the last included), so that
/// memory the caller did not map faults before the caller's objects are held.
#[inline(always)]
pub(super) fn touch(dwords: &[u32]) {
    let read = |d: &u32| {
        // SAFETY: a reference into the caller's slice: valid for one read. Volatile so the
        // read happens here, whatever the optimizer sees of its value.
        let _ = unsafe { core::ptr::read_volatile(d) };
    };
    if let (Some(first), Some(last)) = (dwords.first(), dwords.last()) {
        read(first);
        if dwords.len() > 1024 {
            dwords.iter().step_by(1024).for_each(read);
        }
        read(last);
    }
}

/// A C array as a slice (`count` 0 allows a null array; NULL with a count is refused).
///
/// # Safety
/// `p` is null or valid for reading `count` elements for the slice's lifetime.
pub(super) unsafe fn list<'a, T>(p: *const T, count: usize) -> Option<&'a [T]> {
    if count == 0 {
        return Some(&[]);
    }
    if p.is_null() || count > isize::MAX as usize / core::mem::size_of::<T>().max(1) {
        return None;
    }
    // SAFETY: non-null and readable for `count` entries per the caller's contract.
    Some(unsafe { core::slice::from_raw_parts(p, count) })
}

/// A C array of queue handles as their tokens.
///
/// # Safety
/// As for [`list`].
pub(super) unsafe fn queue_tokens(
    queues: *const *mut RvgpuQueue,
    count: usize,
) -> Option<Vec<usize>> {
    // SAFETY: forwarded caller contract.
    let l = unsafe { list(queues, count) }?;
    Some(l.iter().map(|q| h(*q)).collect())
}

/// Clears an out-pointer if it is non-null; reports whether it was.
///
/// # Safety
/// `out` is null or valid for one write of `T`.
pub(super) unsafe fn clear<T: Copy>(out: *mut T, zero: T) -> bool {
    if out.is_null() {
        return false;
    }
    // SAFETY: non-null and writable per the caller's contract.
    unsafe { out.write(zero) };
    true
}

/// Writes `v` through an out-pointer [`clear`] accepted.
///
/// # Safety
/// `out` is non-null and valid for one write of `T`.
pub(super) unsafe fn put<T>(out: *mut T, v: T) {
    // SAFETY: the caller's contract.
    unsafe { out.write(v) };
}
