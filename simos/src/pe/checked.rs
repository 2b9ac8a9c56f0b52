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

/// The bytes of `v` as this process holds them (its padding as it is), read through the same
/// copy so that no byte is read as a Rust value.
pub(crate) fn bytes_of<T: Copy>(v: &T) -> Vec<u8> {
    guest::read_bytes(v as *const T as u64, std::mem::size_of::<T>()).unwrap_or_default()
}

/// The image's memory as the callbacks reach it ([`DriverMemory`]): copied, never
/// dereferenced. A block read whole before the callback's handler runs (Windows reads it
/// where the handler does: a call with both a bad pointer and another fault reports the
/// pointer's), written back after it only where the handler changed it.
pub(crate) enum Checked {}

impl DriverMemory for Checked {
    fn read<T: Copy>(p: DriverPtr<T>, entry: usize) -> Result<T, BugCheck> {
        let at = p.get().as_ptr() as u64;
        let bytes = read_bytes(at, std::mem::size_of::<T>(), entry as u64)?;
        // SAFETY: `bytes` holds `size_of::<T>()` bytes of the image's `T` (any bit pattern
        // the driver may pass for it, as the in-process read takes it), read unaligned.
        Ok(unsafe { bytes.as_ptr().cast::<T>().read_unaligned() })
    }

    fn write<T: Copy>(p: DriverPtr<T>, v: T, entry: usize) -> Result<(), BugCheck> {
        write_bytes(p.get().as_ptr() as u64, &bytes_of(&v), entry as u64)
    }

    fn read_array<'a, T: Copy>(a: DriverArray<T>, entry: usize) -> Result<Cow<'a, [T]>, BugCheck> {
        let (at, n) = a.get();
        let size = std::mem::size_of::<T>();
        let len = n.checked_mul(size).filter(|&l| l <= guest::MAX_COPY);
        let bytes = match len {
            Some(len) => read_bytes(at.as_ptr() as u64, len, entry as u64)?,
            None => return Err(page_fault(at.as_ptr() as u64, Access::Read, entry as u64)),
        };
        let items = bytes
            .chunks_exact(size.max(1))
            // SAFETY: each chunk is one `T` of the image's, read unaligned.
            .map(|c| unsafe { c.as_ptr().cast::<T>().read_unaligned() })
            .collect();
        Ok(Cow::Owned(items))
    }

    fn update<T: Copy, R>(
        p: DriverPtr<T>,
        entry: usize,
        f: impl FnOnce(&mut T) -> R,
    ) -> Result<R, BugCheck> {
        let mut v = Self::read(p, entry)?;
        let before = bytes_of(&v);
        let r = f(&mut v);
        let after = bytes_of(&v);
        if after != before {
            write_bytes(p.get().as_ptr() as u64, &after, entry as u64)?;
        }
        Ok(r)
    }
}
