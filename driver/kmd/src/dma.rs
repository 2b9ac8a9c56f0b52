//! Memory shared with the device (system memory the GPU reads and writes).
//!
//! The CPU and the device access these words concurrently, so every access is an atomic
//! 64-bit operation with an explicit ordering: the device writes with single-copy atomic
//! 64-bit stores (NF-01), and Rust's memory model forbids mixing plain and atomic accesses to
//! the same location. On Windows these compile to plain `mov`s, the same code a C driver gets
//! from `ReadNoFence64`/`WriteRelease64`.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};

use rvgpu_hw::addr::{BusAddr, GpuVa};

use crate::dxgk::Dxgk;
use crate::platform::Platform;
use crate::status::{self, Status};

/// The kernel CPU addresses of 64-bit words the OS owns and passes for the driver to store to
/// during one call (the fence values of the update DDIs): each is checked (non-null, 8-byte
/// aligned) before it is used, and stored to atomically, as the GPU may access it meanwhile.
#[derive(Clone, Copy, Debug)]
pub struct OsWords<'a> {
    vas: &'a [*mut core::ffi::c_void],
}

impl<'a> OsWords<'a> {
    /// Wraps the OS's array of word addresses.
    ///
    /// # Safety
    /// Each non-null, 8-byte-aligned address in `vas` must be valid for atomic 64-bit writes
    /// for `'a` (the call's contract, `crate::thunk::contract`).
    #[inline]
    pub unsafe fn new(vas: &'a [*mut core::ffi::c_void]) -> Self {
        Self { vas }
    }

    /// Word `i`, if its address is present, non-null and 8-byte aligned.
    #[inline]
    fn word(&self, i: u32) -> Option<&'a AtomicU64> {
        let va = *self.vas.get(usize::try_from(i).ok()?)?;
        if va.is_null() || !(va as usize).is_multiple_of(8) {
            return None;
        }
        // SAFETY: non-null and aligned, so valid for atomic writes for 'a (`new`'s contract).
        Some(unsafe { &*va.cast_const().cast::<AtomicU64>() })
    }

    /// Whether word `i` may be stored to.
    #[inline]
    pub fn valid(&self, i: u32) -> bool {
        self.word(i).is_some()
    }

    /// Atomic store of `v` to word `i`; false (nothing stored) if it may not be.
    #[inline]
    pub fn store(&self, i: u32, v: u64, order: Ordering) -> bool {
        self.word(i).map(|w| w.store(v, order)).is_some()
    }
}

/// The kernel CPU address of a 64-bit word the OS keeps mapped for as long as an object of
/// the driver's lives (a hardware queue's progress fence value), read atomically (the GPU
/// writes it). 0 is none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OsWord(usize);

impl OsWord {
    /// No word.
    pub const NONE: Self = Self(0);

    /// Wraps the address `va` the OS passed.
    ///
    /// # Safety
    /// `va` is 0, or a kernel CPU address whose 64-bit word (when 8-aligned) is readable for as
    /// long as the value is kept (the object it describes lives).
    pub unsafe fn new(va: usize) -> Self {
        Self(va)
    }

    /// A word at an address the tests make up (never read unless aligned and non-zero).
    #[cfg(test)]
    pub fn for_test(va: usize) -> Self {
        Self(va)
    }

    /// Atomic load of the word; `None` for none or a misaligned address.
    pub fn load(&self, order: Ordering) -> Option<u64> {
        if self.0 == 0 || !self.0.is_multiple_of(8) {
            return None;
        }
        // SAFETY: non-zero and 8-aligned (checked), so readable while kept (`new`'s contract);
        // read atomically, as the GPU writes it concurrently.
        Some(unsafe { (*(self.0 as *const AtomicU64)).load(order) })
    }
}

/// A contiguous, device-visible buffer: kernel VA, bus address, size in bytes (a multiple of
/// 8), and the Dxgkrnl handle that frees it.
#[derive(Debug)]
pub struct DmaBuffer {
    va: NonNull<AtomicU64>,
    bus: BusAddr,
    bytes: u64,
    handle: usize,
}

// SAFETY: the buffer is plain memory accessed only through atomics.
unsafe impl Send for DmaBuffer {}
// SAFETY: as above; shared access is atomic.
unsafe impl Sync for DmaBuffer {}

impl DmaBuffer {
    /// Wraps memory obtained from `DxgkCbAllocateContiguousMemory`.
    ///
    /// # Safety
    /// `va` must be 8-byte aligned and valid for `bytes` bytes of reads and writes until the
    /// buffer is freed through `handle`, and nothing may access it non-atomically meanwhile.
    pub unsafe fn from_raw(va: NonNull<u8>, bus: BusAddr, bytes: u64, handle: usize) -> Self {
        Self {
            va: va.cast(),
            bus,
            bytes,
            handle,
        }
    }

    /// `bytes` (a multiple of 8) of zeroed host memory, leaked, at a made-up bus address: a
    /// buffer for the tests of the code that only runs the CPU side.
    #[cfg(test)]
    pub fn leak_host(bytes: u64, bus: BusAddr) -> Self {
        let words = usize::try_from(bytes / 8).unwrap();
        let mem: &'static mut [u64] =
            alloc::boxed::Box::leak(alloc::vec![0u64; words].into_boxed_slice());
        let va = NonNull::new(mem.as_mut_ptr().cast::<u8>()).unwrap();
        // SAFETY: leaked (never freed), 8-aligned, `bytes` long, accessed atomically only.
        unsafe { Self::from_raw(va, bus, bytes, 0) }
    }

    /// `bytes` of zeroed, physically contiguous memory from `DxgkCbAllocateContiguousMemory`
    /// (PASSIVE), with its bus address. Nothing is kept on failure: memory whose bus address
    /// the platform cannot tell is freed again (`STATUS_INSUFFICIENT_RESOURCES`).
    pub fn alloc<P: Platform>(dxgk: &Dxgk, bytes: u64) -> Result<Self, Status> {
        let (va, handle) = dxgk.allocate_contiguous(bytes)?;
        let Some(bus) = P::bus_address(va) else {
            let _ = dxgk.free_contiguous(handle);
            return Err(status::INSUFFICIENT_RESOURCES);
        };
        // SAFETY: fresh contiguous memory of `bytes` bytes, page aligned, owned by us until
        // freed through `handle`, accessed only atomically.
        let buf = unsafe { Self::from_raw(va, bus, bytes, handle) };
        buf.zero();
        Ok(buf)
    }

    /// Bus address of byte 0.
    pub fn bus(&self) -> BusAddr {
        self.bus
    }

    /// GPU address of byte 0 (the device reaches the buffer through the identity mapping).
    pub fn gpu(&self) -> GpuVa {
        self.bus.identity_va()
    }

    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Dxgkrnl's handle for freeing.
    pub fn handle(&self) -> usize {
        self.handle
    }

    /// Kernel VA of byte 0.
    pub fn va(&self) -> NonNull<u8> {
        self.va.cast()
    }

    /// Number of 64-bit words.
    pub fn words(&self) -> u64 {
        self.bytes / 8
    }

    /// GPU address of the byte at offset `off`, if inside the buffer.
    pub fn gpu_at(&self, off: u64) -> Option<GpuVa> {
        (off < self.bytes)
            .then(|| self.gpu().checked_add(off))
            .flatten()
    }

    #[inline]
    fn word(&self, index: u64) -> Option<&AtomicU64> {
        if index >= self.words() {
            return None;
        }
        let i = usize::try_from(index).ok()?;
        // SAFETY: `index` is inside the buffer (checked above), so the offset stays inside
        // the allocation (contract of `from_raw`).
        let p = unsafe { self.va.as_ptr().add(i) };
        // SAFETY: `p` is a valid, aligned word of the buffer, and all accesses are atomic.
        Some(unsafe { &*p })
    }

    /// Atomic load of word `index`; `None` past the end. Inline: a bounds check and one
    /// load on the ISR's path, in whichever crate instantiates the driver.
    #[inline]
    pub fn load(&self, index: u64, order: Ordering) -> Option<u64> {
        self.word(index).map(|w| w.load(order))
    }

    /// Atomic loads of the `N` words from `index` on; `None` unless all are inside the
    /// buffer. One bounds check for a whole record (the ISR reads event records this way).
    #[inline]
    pub fn load_words<const N: usize>(&self, index: u64, order: Ordering) -> Option<[u64; N]> {
        let n = u64::try_from(N).ok()?;
        if index >= self.words() || self.words().wrapping_sub(index) < n {
            return None;
        }
        let i = usize::try_from(index).ok()?;
        // SAFETY: words `index..index + N` are inside the buffer (checked above), so the
        // offset stays inside the allocation (contract of `from_raw`).
        let p = unsafe { self.va.as_ptr().add(i) }.cast::<[AtomicU64; N]>();
        // SAFETY: `p` points at `N` valid, aligned words of the buffer (an array of atomics
        // has the words' layout), and all accesses are atomic.
        let words = unsafe { &*p };
        Some(words.each_ref().map(|w| w.load(order)))
    }

    /// Atomic store to word `index`; returns false past the end.
    #[inline]
    pub fn store(&self, index: u64, value: u64, order: Ordering) -> bool {
        self.word(index).map(|w| w.store(value, order)).is_some()
    }

    /// Zeroes the whole buffer (before handing it to the device).
    pub fn zero(&self) {
        let mut i = 0;
        while self.store(i, 0, Ordering::Relaxed) {
            i = i.saturating_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ISR reads an event record whole or not at all: one bounds check for its words.
    #[test]
    fn load_words_reads_words_inside_the_buffer_only() {
        let mem: [AtomicU64; 8] = core::array::from_fn(|i| AtomicU64::new(i as u64 + 1));
        // SAFETY: `mem` is eight aligned words, accessed only atomically, and outlives `b`.
        let b =
            unsafe { DmaBuffer::from_raw(NonNull::from(&mem).cast(), BusAddr::new(0x1000), 64, 0) };
        assert_eq!(b.load_words::<4>(4, Ordering::Relaxed), Some([5, 6, 7, 8]));
        assert_eq!(
            b.load_words::<4>(5, Ordering::Relaxed),
            None,
            "one word past the end"
        );
        assert_eq!(b.load_words::<4>(8, Ordering::Relaxed), None);
        assert_eq!(b.load_words::<4>(u64::MAX, Ordering::Relaxed), None);
        assert_eq!(b.load(7, Ordering::Relaxed), Some(8));
    }
}

/// The OS's kernel CPU mapping of one log buffer (`LogBufferCpuVa`), kept from the set that
/// handed it over until the log is replaced, refused or taken back. 24H2 keeps each log's
/// buffer and mapping in the queue object from `M:VidSchiCreateNativeFenceLog` @0x140024634
/// until after the release block (`M:VidSchiDecrementHwQueueReference` @0x140020A74 frees both
/// logs once it returns), and never recreates a log. The pages say only that Dxgkrnl may
/// destroy and recreate a log and then sets the new one, which replaces the view. Only the
/// test hooks read through it (off unless a tester turns them on), under the scheduler lock
/// that a replacement and the release also take, so a copy never overlaps the OS taking the
/// buffer back through the DDI.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogView {
    va: usize,
    entries: u32,
}

impl LogView {
    /// The mapping at `va` of a buffer of `entries` entries (0 or unaligned: none).
    ///
    /// # Safety
    /// `va` is 0, or the OS's kernel mapping of a native fence log buffer of `entries`
    /// entries (the set checked the count against the header), readable until the OS
    /// replaces or takes back that log (which clears the view, under the scheduler lock).
    pub unsafe fn new(va: usize, entries: u32) -> Self {
        if va == 0 || !va.is_multiple_of(8) {
            return Self::default();
        }
        Self { va, entries }
    }

    /// `NumberOfEntries` of the viewed log (0: no view).
    pub fn entries(&self) -> u32 {
        self.entries
    }

    /// Copies the buffer as the device wrote it, header then entries, into `out` (as many
    /// bytes as fit): the bytes copied. Read word by word with atomic loads, as the device
    /// may be writing it.
    pub fn copy_to(&self, out: &mut [u8]) -> usize {
        if self.va == 0 {
            return 0;
        }
        let bytes = rvgpu_hw::log::ENTRIES_OFFSET
            .saturating_add(u64::from(self.entries).saturating_mul(48));
        let len = usize::try_from(bytes.min(rvgpu_hw::log::LOG_BUFFER_SIZE))
            .unwrap_or(0)
            .min(out.len());
        let mut done = 0;
        for chunk in out.get_mut(..len).unwrap_or_default().chunks_mut(8) {
            let Some(at) = self.va.checked_add(done) else {
                break;
            };
            // SAFETY: `at` is 8-aligned (the view's base is, `done` steps by 8) and below the
            // buffer's end (`len` is within `40 + 48 * entries` <= 4 KiB), so inside the
            // mapping, readable while the view is kept (`new`'s contract). Atomic: the device
            // writes the buffer concurrently.
            let word = unsafe { (*(at as *const AtomicU64)).load(Ordering::Acquire) };
            let b = word.to_le_bytes();
            chunk.copy_from_slice(b.get(..chunk.len()).unwrap_or_default());
            done = done.saturating_add(chunk.len());
        }
        done
    }
}
