//! What the simulated OS reads and writes where `rvgpu.sys` points. The image's memory is the
//! host's at the same addresses (docs/pe-image.md), so a pointer it passes that is not mapped
//! would fault this process if dereferenced: every access goes through the checked copy
//! (`umd::guest`, `process_vm_readv`/`process_vm_writev` on this process), and one that
//! cannot be made is bug check 0x50, the page fault Windows takes in the kernel routine.

use std::borrow::Cow;

use super::umd::guest;
use crate::base::bugcheck::{self, BugCheck};
use crate::dxgkrnl::callbacks::ffi::view::{DriverArray, DriverMemory, DriverPtr};

/// What an access that faulted did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A load.
    Read,
    /// A store.
    Write,
    /// An instruction fetch.
    Execute,
}

/// Bug check 0x50 `PAGE_FAULT_IN_NONPAGED_AREA` for an `access` to `addr` by the code at `at`
/// (0: not known). Parameter 2 is x64's since Windows 10 1507: 0 read, 2 write, 0x10 execute
/// (the page's table; 1 for a write is x64's before 1507 and Arm's); parameter 4, the kind of
/// fault, is 0.
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0x50--page-fault-in-nonpaged-area>
pub fn page_fault(addr: u64, access: Access, at: u64) -> BugCheck {
    let kind = match access {
        Access::Read => 0,
        Access::Write => 2,
        Access::Execute => 0x10,
    };
    BugCheck::new(bugcheck::PAGE_FAULT_IN_NONPAGED_AREA, [addr, kind, at, 0])
}

/// The first byte of `[at, at + len)` this process cannot access as `access` (`at` when none
/// is found): where the fault of a copy over the range lands, a page at a time.
fn first_fault(at: u64, len: usize, access: Access) -> u64 {
    let end = at.saturating_add(len as u64);
    let mut page = at;
    while page < end {
        let ok = match access {
            Access::Write => guest::writable(page, 1),
            _ => guest::read_bytes(page, 1).is_ok(),
        };
        if !ok {
            return page;
        }
        page = (page | 0xFFF).saturating_add(1);
    }
    at
}

/// The `len` bytes at `at`, or bug check 0x50 at the first byte that cannot be read, by the
/// code at `entry`.
pub fn read_bytes(at: u64, len: usize, entry: u64) -> Result<Vec<u8>, BugCheck> {
    if len == 0 {
        return Ok(Vec::new());
    }
    guest::read_bytes(at, len)
        .map_err(|_| page_fault(first_fault(at, len, Access::Read), Access::Read, entry))
}

/// Writes `bytes` at `at`, or bug check 0x50 at the first byte that cannot be written.
pub fn write_bytes(at: u64, bytes: &[u8], entry: u64) -> Result<(), BugCheck> {
    guest::write_bytes(at, bytes).map_err(|_| {
        let first = first_fault(at, bytes.len(), Access::Write);
        page_fault(first, Access::Write, entry)
    })
}

/// Writes the `size_of::<T>()` bytes of `v` as this process holds them (its padding as it is)
/// at `at`, or bug check 0x50 at the first byte that cannot be written. The kernel reads them
/// at `v`'s own address, so no byte is read as a Rust value and no copy of them can fail first.
pub(crate) fn write_value<T: Copy>(at: u64, v: &T, entry: u64) -> Result<(), BugCheck> {
    let len = std::mem::size_of::<T>();
    if len == 0 {
        return Ok(());
    }
    let local = libc::iovec {
        iov_base: std::ptr::from_ref(v).cast_mut().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: at as usize as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: `local` is `v`, `len` bytes, only read; the kernel checks the remote range and
    // fails with EFAULT (no host fault) where it is not writable.
    let n = unsafe { libc::process_vm_writev(libc::getpid(), &local, 1, &remote, 1, 0) };
    if usize::try_from(n).ok() == Some(len) {
        return Ok(());
    }
    let first = first_fault(at, len, Access::Write);
    Err(page_fault(first, Access::Write, entry))
}

/// Whether `v`'s bytes as this process holds them (its padding as it is) are `bytes`, read by
/// the kernel so that no byte is read as a Rust value. A copy that cannot be made (none can
/// fail where the block it came from was just read the same way) answers `false`: the block
/// is written, never its output dropped.
fn holds<T: Copy>(v: &T, bytes: &[u8]) -> bool {
    let len = std::mem::size_of::<T>();
    let mut mine = vec![0u8; len];
    let local = libc::iovec {
        iov_base: mine.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: std::ptr::from_ref(v).cast_mut().cast(),
        iov_len: len,
    };
    // SAFETY: `local` is `mine`, `len` bytes of our own; `v` is `len` readable bytes, only
    // read.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    usize::try_from(n).ok() == Some(len) && mine == bytes
}

/// The `T` whose bytes are `bytes` (`size_of::<T>()` of them, the image's).
fn value_of<T: Copy>(bytes: &[u8]) -> T {
    debug_assert_eq!(bytes.len(), std::mem::size_of::<T>());
    // SAFETY: `bytes` holds `size_of::<T>()` bytes of the image's `T` (any bit pattern the
    // driver may pass for it, as the in-process read takes it), read unaligned.
    unsafe { bytes.as_ptr().cast::<T>().read_unaligned() }
}

/// The image's memory as the callbacks reach it ([`DriverMemory`]): copied, never
/// dereferenced. A block read whole before the callback's handler runs (Windows reads it
/// where the handler does: a call with both a bad pointer and another fault reports the
/// pointer's), written back after it only where the handler changed it.
pub(crate) enum Checked {}

impl DriverMemory for Checked {
    fn read<T: Copy>(p: DriverPtr<'_, T>, entry: usize) -> Result<T, BugCheck> {
        let at = p.get().as_ptr() as u64;
        let bytes = read_bytes(at, std::mem::size_of::<T>(), entry as u64)?;
        Ok(value_of(&bytes))
    }

    fn write<T: Copy>(p: DriverPtr<'_, T>, v: T, entry: usize) -> Result<(), BugCheck> {
        write_value(p.get().as_ptr() as u64, &v, entry as u64)
    }

    fn read_array<'call, T: Copy>(
        a: DriverArray<'call, T>,
        entry: usize,
    ) -> Result<Cow<'call, [T]>, BugCheck> {
        let (at, n) = a.get();
        let size = std::mem::size_of::<T>();
        let len = n.checked_mul(size).filter(|&l| l <= guest::MAX_COPY);
        let bytes = match len {
            Some(len) => read_bytes(at.as_ptr() as u64, len, entry as u64)?,
            None => return Err(page_fault(at.as_ptr() as u64, Access::Read, entry as u64)),
        };
        let items = bytes.chunks_exact(size.max(1)).map(value_of).collect();
        Ok(Cow::Owned(items))
    }

    fn update<T: Copy, R>(
        p: DriverPtr<'_, T>,
        entry: usize,
        f: impl FnOnce(&mut T) -> R,
    ) -> Result<R, BugCheck> {
        update_at(p.get().as_ptr() as u64, entry as u64, f)
    }
}

/// Runs `f` on a copy of the `T` at `at` and writes it back when `f` changed a byte of it.
fn update_at<T: Copy, R>(at: u64, entry: u64, f: impl FnOnce(&mut T) -> R) -> Result<R, BugCheck> {
    let before = read_bytes(at, std::mem::size_of::<T>(), entry)?;
    let mut v = value_of(&before);
    let r = f(&mut v);
    if !holds(&v, &before) {
        write_value(at, &v, entry)?;
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read-only memory of this process.
    static READ_ONLY: [u64; 4] = [7, 0, 0, 0];

    /// A value is written whole from its own bytes, however large: one larger than a single
    /// checked copy of user memory lands in full, and the call reports success only then.
    #[test]
    fn a_value_is_written_whole_whatever_its_size() {
        const N: usize = guest::MAX_COPY + 8;
        let mut block = vec![0u8; N];
        let value: Box<[u8; N]> = vec![0xA5u8; N].into_boxed_slice().try_into().expect("N");
        let at = block.as_mut_ptr() as u64;
        assert_eq!(write_value(at, &*value, 0), Ok(()));
        assert!(block.iter().all(|&b| b == 0xA5), "every byte written");
    }

    /// A write the image's memory refuses is bug check 0x50 (write) at its first byte.
    #[test]
    fn a_write_to_read_only_memory_is_a_page_fault() {
        let at = READ_ONLY.as_ptr() as u64;
        let b = write_value(at, &1u64, 0x1234).expect_err("read-only");
        assert_eq!(
            (b.code, b.params),
            (bugcheck::PAGE_FAULT_IN_NONPAGED_AREA, [at, 2, 0x1234, 0])
        );
    }

    /// An in/out block is written back when the handler changed it, and not written when it
    /// did not (a read-only block the handler leaves alone does not fault).
    #[test]
    fn an_updated_block_is_written_back_only_when_changed() {
        let mut block = [1u32, 2, 3];
        let at = block.as_mut_ptr() as u64;
        let r = update_at::<[u32; 3], _>(at, 0, |b| {
            b[1] = 20;
            b[0]
        });
        assert_eq!(r, Ok(1));
        assert_eq!(std::hint::black_box(&block), &[1, 20, 3]);
        let ro = READ_ONLY.as_ptr() as u64;
        assert_eq!(update_at::<u64, _>(ro, 0, |v| *v), Ok(7));
        let b = update_at::<u64, _>(ro, 0, |v| *v = 8).expect_err("read-only");
        assert_eq!((b.params[0], b.params[1]), (ro, 2));
    }
}
