//! Shared memory: the memfd that holds VRAM (BAR4, mapped by the client too) and mappings of
//! the client's file descriptors (guest RAM from DMA_MAP), both put on the device's bus as
//! [`RamBacking`].

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;

use rvgpu_device::memory::RamBacking;

/// The seals every [`Memfd`] carries: its size can never change, whoever holds it (the client
/// gets the descriptor itself, and a shorter file would turn our accesses into SIGBUS), and
/// nobody can add or remove seals afterwards.
pub const SIZE_SEALS: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// An anonymous shared-memory file of a fixed, sealed length.
#[derive(Debug)]
pub struct Memfd {
    file: File,
    len: u64,
}

impl Memfd {
    /// A zero-filled memfd of `len` bytes, sealed against shrinking and growing
    /// ([`SIZE_SEALS`]).
    pub fn new(name: &str, len: u64) -> io::Result<Self> {
        let cname = std::ffi::CString::new(name).map_err(|_| io::ErrorKind::InvalidInput)?;
        // SAFETY: FFI call with a valid NUL-terminated name; the result is checked.
        let fd = unsafe {
            libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING)
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(len)?;
        // SAFETY: FFI call on a descriptor we own, with an integer argument; checked.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, SIZE_SEALS) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self { file, len })
    }

    /// The seals the file carries (`F_GET_SEALS`).
    pub fn seals(&self) -> io::Result<libc::c_int> {
        seals(&self.file)
    }

    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The descriptor (offered to the client for mmap).
    pub fn raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Zeroes the contents. Every mapping of the file (ours and the client's) sees zeros at
    /// once: the pages are released (a hole punched over the whole file, size unchanged), so
    /// no mapping ever sees the file shorter than it is.
    pub fn zero(&self) -> io::Result<()> {
        let len = libc::off_t::try_from(self.len).map_err(|_| io::ErrorKind::InvalidInput)?;
        // SAFETY: FFI call on a descriptor we own; the result is checked.
        let r = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                0,
                len,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Maps the whole file (read/write, shared).
    pub fn map(&self) -> io::Result<Mapping> {
        Mapping::new(&self.file, 0, self.len)
    }
}

/// The seals of `fd` (`F_GET_SEALS`); an error for a file that cannot carry seals (EINVAL:
/// not a memfd or a file system without sealing).
pub fn seals(fd: &impl AsFd) -> io::Result<libc::c_int> {
    // SAFETY: FFI call on a borrowed descriptor; no pointer arguments; checked.
    let r = unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), libc::F_GET_SEALS) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r)
}

/// Makes sure `fd` can never become shorter than it is now, and returns that length: a file
/// the client hands over for the device to reach (guest RAM) must stay at least as long as
/// the mapping of it, or a device access past its end would be SIGBUS in the server.
///
/// A file already sealed against shrinking (QEMU seals its memfd backends) is taken as is; a
/// sealable file without that seal gets it (its owner can no longer shrink it, which is what
/// lending memory to a device means); a file that cannot be sealed (not a memfd, or sealing
/// closed with `F_SEAL_SEAL`) is refused with [`io::ErrorKind::Unsupported`].
pub fn pin_size(fd: &impl AsFd) -> io::Result<u64> {
    let raw = fd.as_fd().as_raw_fd();
    let have = seals(fd).map_err(|_| {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "not a sealable memory file (memfd)",
        )
    })?;
    if have & libc::F_SEAL_SHRINK == 0 {
        // SAFETY: FFI call on a borrowed descriptor with an integer argument; checked.
        if unsafe { libc::fcntl(raw, libc::F_ADD_SEALS, libc::F_SEAL_SHRINK) } != 0 {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "memory file can shrink and cannot be sealed against it",
            ));
        }
    }
    // The size is read after the seal is in place, so it cannot drop below what we check.
    // SAFETY: an all-zero `stat` is a valid value for fstat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: FFI call with a borrowed descriptor and a valid out-pointer; checked.
    if unsafe { libc::fstat(raw, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    u64::try_from(st.st_size).map_err(|_| io::ErrorKind::InvalidInput.into())
}

/// A shared read/write mapping of `len` bytes of a file, seen as atomic 64-bit words.
///
/// Another process may write the same memory at any time; every access from this side is an
/// atomic access to an aligned word, which is what makes that sound. The file must stay at
/// least as long as the mapping (an access past a file's end is SIGBUS): our memfds are sealed
/// ([`Memfd::new`]) and the client's are pinned before they are mapped ([`pin_size`]).
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<AtomicU64>,
    words: usize,
    bytes: usize,
}

// SAFETY: the mapping is plain shared memory that is only accessed through `AtomicU64`
// (`words`), so it may be used and dropped from any thread.
unsafe impl Send for Mapping {}
// SAFETY: as above: all shared access is atomic.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` from `offset` (both page aligned, `len` > 0).
    pub fn new(fd: &impl AsFd, offset: u64, len: u64) -> io::Result<Self> {
        let page = rvgpu_hw::PAGE_SIZE;
        if len == 0 || !len.is_multiple_of(page) || !offset.is_multiple_of(page) {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        let bytes = usize::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?;
        let off = libc::off_t::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
        // SAFETY: FFI call: a fresh shared mapping chosen by the kernel (no fixed address), so
        // it aliases no Rust object; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_fd().as_raw_fd(),
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<AtomicU64>()).ok_or(io::ErrorKind::Other)?;
        Ok(Self {
            ptr,
            words: bytes / 8,
            bytes,
        })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Whether the mapping is empty (never: `new` refuses 0).
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }
}

impl RamBacking for Mapping {
    fn words(&self) -> &[AtomicU64] {
        // SAFETY: `ptr` is the page-aligned start of a live mapping of `words * 8` bytes that
        // stays mapped until `self` drops; the memory is only ever accessed atomically here
        // (shared memory: the other process's writes are not Rust data races on our side).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.words) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `new`; no reference into it outlives
        // `self` (`words` borrows `self`).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.bytes);
        }
    }
}
