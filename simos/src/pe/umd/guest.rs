//! What user mode hands the simulated OS, read and written without trusting it.
//!
//! The UMD image shares the host's address space (docs/pe-image.md, "one address space"), so
//! a pointer it passes is a host address — possibly null, unmapped, read-only or pointing into
//! the arena's guard pages. Dxgkrnl captures a thunk's arguments inside an exception handler
//! (`ProbeForRead`/`ProbeForWrite` and a copy), so a bad pointer becomes the call's status, not
//! a crash; here every copy goes through `process_vm_readv`/`process_vm_writev` on this very
//! process, which report an unmapped or unreadable address as `EFAULT` instead of faulting
//! the host. Outputs are checked writable before the thunk does anything (`writable`), so a
//! read-only output structure fails without side effects, as a probe before the work would.

use zerocopy::{FromBytes, Immutable, IntoBytes};

/// Why an access to user memory failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bad {
    /// A null pointer.
    Null,
    /// An address that is not mapped (or not readable / writable) in the process.
    Fault,
}

/// The most a thunk copies in one piece: larger sizes are refused before any allocation.
pub const MAX_COPY: usize = 1 << 20;

/// The most a kernel entry captures in one piece ([`read_capture`]): 24H2's largest bounded
/// capture, `D3DKMTCreateAllocation2`'s list of at most 0x682AA 96-byte entries
/// (`crate::kmt::allocation::MAX_CREATE_ALLOCATIONS`), fits.
pub const MAX_CAPTURE: usize = 40 << 20;

/// Copies `len` bytes from user address `addr`.
pub fn read_bytes(addr: u64, len: usize) -> Result<Vec<u8>, Bad> {
    read_up_to(addr, len, MAX_COPY)
}

/// Copies `len` bytes from user address `addr` for a kernel entry that bounded `len` itself,
/// as 24H2's entry does before its probe and copy.
pub fn read_capture(addr: u64, len: usize) -> Result<Vec<u8>, Bad> {
    read_up_to(addr, len, MAX_CAPTURE)
}

/// Copies `len` bytes, at most `max`, from user address `addr`.
fn read_up_to(addr: u64, len: usize, max: usize) -> Result<Vec<u8>, Bad> {
    if addr == 0 {
        return Err(Bad::Null);
    }
    if len > max || addr.checked_add(len as u64).is_none() {
        return Err(Bad::Fault);
    }
    let mut out = vec![0u8; len];
    if len == 0 {
        return Ok(out);
    }
    let local = libc::iovec {
        iov_base: out.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: `local` is our own buffer of `len` bytes; the remote range is only read by the
    // kernel, which checks it and fails with EFAULT instead of touching an unmapped page.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if usize::try_from(n).ok() != Some(len) {
        return Err(Bad::Fault);
    }
    Ok(out)
}

/// Reads a `T` (any bit pattern is a `T`) from user address `addr`.
pub fn read<T: FromBytes>(addr: u64) -> Result<T, Bad> {
    let bytes = read_bytes(addr, core::mem::size_of::<T>())?;
    T::read_from_bytes(&bytes).map_err(|_| Bad::Fault)
}

/// Reads `count` `T`s from user address `addr` (an array the caller passed).
pub fn read_array<T: FromBytes>(addr: u64, count: usize) -> Result<Vec<T>, Bad> {
    let size = core::mem::size_of::<T>();
    let len = count.checked_mul(size).ok_or(Bad::Fault)?;
    let bytes = read_bytes(addr, len)?;
    Ok(bytes
        .chunks_exact(size.max(1))
        .filter_map(|c| T::read_from_bytes(c).ok())
        .collect())
}

/// Copies `bytes` to user address `addr`.
pub fn write_bytes(addr: u64, bytes: &[u8]) -> Result<(), Bad> {
    if addr == 0 {
        return Err(Bad::Null);
    }
    if bytes.is_empty() {
        return Ok(());
    }
    let local = libc::iovec {
        iov_base: bytes.as_ptr().cast_mut().cast(),
        iov_len: bytes.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: `local` is only read; the kernel checks the remote range and fails with EFAULT
    // (no host fault) when it is not writable.
    let n = unsafe { libc::process_vm_writev(libc::getpid(), &local, 1, &remote, 1, 0) };
    if usize::try_from(n).ok() != Some(bytes.len()) {
        return Err(Bad::Fault);
    }
    Ok(())
}

/// Writes `v` to user address `addr`.
pub fn write<T: IntoBytes + Immutable>(addr: u64, v: &T) -> Result<(), Bad> {
    write_bytes(addr, v.as_bytes())
}

/// Whether `[addr, addr + len)` is mapped writable in this process (`/proc/self/maps`): the
/// probe before a thunk with outputs does its work.
pub fn writable(addr: u64, len: usize) -> bool {
    covered(addr, len, b'w')
}

/// Whether `[addr, addr + len)` is mapped with permission `perm` (`r` or `w`) throughout.
fn covered(addr: u64, len: usize, perm: u8) -> bool {
    let Some(end) = addr.checked_add(len as u64) else {
        return false;
    };
    if addr == 0 {
        return false;
    }
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return false;
    };
    let mut at = addr;
    for line in maps.lines() {
        let mut parts = line.split_whitespace();
        let (Some(range), Some(perms)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        // The maps are sorted by address: walk the ones that cover `at` onwards.
        if a <= at && at < b {
            let ok = match perm {
                b'w' => perms.as_bytes().get(1) == Some(&b'w'),
                _ => perms.as_bytes().first() == Some(&b'r'),
            };
            if !ok {
                return false;
            }
            at = b;
            if at >= end {
                return true;
            }
        }
    }
    at >= end && len == 0
}

/// Reads a NUL-terminated UTF-16 string of at most `max` units from `addr`.
pub fn read_wstr(addr: u64, max: usize) -> Result<Vec<u16>, Bad> {
    read_until_nul(addr, max)
}

/// Reads a NUL-terminated byte string of at most `max` bytes from `addr`.
pub fn read_cstr(addr: u64, max: usize) -> Result<Vec<u8>, Bad> {
    read_until_nul(addr, max)
}

/// Reads `T`s from `addr` up to a zero one (not included), at most `max` of them.
fn read_until_nul<T: FromBytes + Default + PartialEq>(
    addr: u64,
    max: usize,
) -> Result<Vec<T>, Bad> {
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < max {
        let c: T = read(at)?;
        if c == T::default() {
            return Ok(out);
        }
        out.push(c);
        at = at
            .checked_add(core::mem::size_of::<T>() as u64)
            .ok_or(Bad::Fault)?;
    }
    Err(Bad::Fault)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bad address is an error, never a host fault; a good one round-trips.
    #[test]
    fn user_copies_report_bad_addresses() {
        let mut x = 42u64;
        let at = &raw mut x as u64;
        assert_eq!(read::<u64>(at), Ok(42));
        assert_eq!(write(at, &7u64), Ok(()));
        assert_eq!(x, 7);
        assert!(writable(at, 8));
        assert_eq!(read::<u64>(0), Err(Bad::Null));
        assert_eq!(read::<u64>(16), Err(Bad::Fault));
        assert_eq!(write(16, &1u64), Err(Bad::Fault));
        assert_eq!(read::<u64>(u64::MAX - 3), Err(Bad::Fault));
        assert!(!writable(16, 8));
        // Read-only memory: readable, not writable.
        static RO: u64 = 5;
        let ro = &raw const RO as u64;
        assert_eq!(read::<u64>(ro), Ok(5));
        assert!(!writable(ro, 8));
    }
}
