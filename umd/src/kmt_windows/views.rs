//! The CPU views the OS hands out (allocations, the doorbell and its status page, the
//! progress fence): raw pointers, every access atomic or volatile and checked.

use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{fence, AtomicU64, Ordering};

use crate::kmt::{AllocationCpu, DoorbellCpu, DoorbellStatus, FenceCpu};

// ---------------------------------------------------------------------------------------------
// CPU views
// ---------------------------------------------------------------------------------------------

/// CPU view of an allocation: the `Lock2` mapping.
#[derive(Clone, Debug)]
pub struct WinMem {
    pub(super) base: *mut u64,
    pub(super) size: u64,
}

impl WinMem {
    /// The word at byte `offset`, if 8-aligned and in range.
    pub(super) fn word(&self, offset: u64) -> Option<&AtomicU64> {
        if !offset.is_multiple_of(8) || offset.checked_add(8)? > self.size {
            return None;
        }
        let index = usize::try_from(offset / 8).ok()?;
        // SAFETY: `base` is the CPU mapping of `size` bytes that `Lock2` returned and `index`
        // is in range (checked above), so the word stays inside the mapping.
        let p = unsafe { self.base.add(index) };
        // SAFETY: `p` is 8-aligned (checked at creation) and stays mapped until the
        // allocation is destroyed, which the submission core does only after its last access;
        // the GPU and this process access the words only atomically.
        Some(unsafe { AtomicU64::from_ptr(p) })
    }
}

impl AllocationCpu for WinMem {
    const RUNS: bool = true;
    fn store(&self, offset: u64, value: u64) {
        if let Some(w) = self.word(offset) {
            w.store(value, Ordering::Release);
        }
    }
    fn load(&self, offset: u64) -> u64 {
        self.word(offset).map_or(0, |w| w.load(Ordering::Acquire))
    }
    #[inline]
    fn store_word(&self, index: u64, value: u64) {
        // The ring's stores: one bound check per word (no alignment to check).
        if index < self.size / 8 {
            if let Ok(i) = usize::try_from(index) {
                // SAFETY: `base` is the CPU mapping of `size` bytes that `Lock2` returned and
                // `i` is below `size / 8`, so the word stays inside the mapping.
                let p = unsafe { self.base.add(i) };
                // SAFETY: as in `word`: 8-aligned, mapped until the allocation is destroyed,
                // accessed only atomically.
                unsafe { AtomicU64::from_ptr(p) }.store(value, Ordering::Release);
            }
        }
    }
    #[inline(always)]
    fn store_run(&self, index: u64, len: usize, words: impl Iterator<Item = u64>) {
        // The ring's stores: one bound check per run (a packet, or its part before the
        // ring's end), then plain stores.
        let Some(end) = index.checked_add(len as u64) else {
            return;
        };
        if end > self.size / 8 {
            return;
        }
        let Ok(start) = usize::try_from(index) else {
            return;
        };
        // SAFETY: `base` is the CPU mapping of `size` bytes that `Lock2` returned and
        // `start + len <= size / 8` (checked above), so `first` is inside the mapping or one
        // past its end.
        let first = unsafe { self.base.add(start) };
        // SAFETY: words `start..start + len` lie inside the mapping (checked above);
        // 8-aligned (checked at creation), mapped until the allocation is destroyed (as in
        // `word`), and this process and the GPU access them only atomically, so a shared slice
        // of atomics over them is sound.
        let slots =
            unsafe { core::slice::from_raw_parts(first.cast_const().cast::<AtomicU64>(), len) };
        for (slot, w) in slots.iter().zip(words) {
            slot.store(w, Ordering::Release);
        }
    }
    fn cpu_ptr(&self) -> *mut u8 {
        self.base.cast()
    }
}

/// CPU views of a doorbell: the doorbell page, the status page and the last-queued value.
#[derive(Debug)]
pub struct WinDoorbell {
    pub(super) doorbell: *mut u64,
    pub(super) status: *const i32,
    /// `None`: the OS keeps no last-queued value for the queue (24H2).
    pub(super) last_queued: Option<*mut u64>,
}

impl DoorbellCpu for WinDoorbell {
    fn ring(&self, value: u64) {
        // The write pointer was stored with Release; the doorbell page may be write-combining,
        // so fence before the doorbell write (hardware.md 8.5, P3 before P4) and after it (the
        // status read that follows must not pass it).
        fence(Ordering::SeqCst);
        // SAFETY: `DoorbellCPUVirtualAddress` from D3DKMTCreateDoorbell: a writable mapping
        // (physical doorbell or the OS's dummy page) that lives until D3DKMTDestroyDoorbell,
        // which the submission core calls only after its last ring; checked non-null and
        // 8-aligned at creation. Volatile: a device register write.
        unsafe { ptr::write_volatile(self.doorbell, value) };
        fence(Ordering::SeqCst);
    }

    fn status(&self) -> DoorbellStatus {
        // SAFETY: `DoorbellStatusCPUVirtualAddress`, a read-only OS page holding a
        // D3DDDI_DOORBELLSTATUS (32-bit enum) that lives as long as the doorbell; checked
        // non-null and aligned at creation. Volatile: the OS changes it asynchronously.
        DoorbellStatus::from_raw(unsafe { ptr::read_volatile(self.status) })
    }

    fn set_last_queued(&self, value: u64) {
        let Some(cell) = self.last_queued else { return };
        // SAFETY: `HwQueueProgressFenceLastQueuedValueCPUVirtualAddress`, a writable 64-bit
        // OS location that lives as long as the doorbell; checked non-null and 8-aligned at
        // creation; the OS reads it concurrently, so the store is atomic.
        unsafe { AtomicU64::from_ptr(cell) }.store(value, Ordering::Release);
    }
}

/// Read-only CPU view of a fence value: a progress fence's, a paging fence's or a native
/// fence's CurrentValue.
#[derive(Debug)]
pub struct WinFence {
    pub(super) value: *const u64,
}

impl FenceCpu for WinFence {
    fn value(&self) -> u64 {
        // SAFETY: `HwQueueProgressFenceCPUVirtualAddress`, `FenceValueCPUVirtualAddress` or a
        // native fence's `CurrentValueCpuVa`: a read-only 8-aligned OS mapping of the value
        // (checked non-null and aligned where the view is made) that lives as long as the
        // queue or fence, which outlive the view. An atomic load of a lock-free size is
        // allowed on read-only memory.
        unsafe { AtomicU64::from_ptr(self.value.cast_mut()) }.load(Ordering::Acquire)
    }
}

/// What `QueryPerformanceCounter` or `QueryPerformanceFrequency` (`query`) writes; 0 if it
/// fails or is negative.
pub(super) fn performance_query(
    query: unsafe extern "system" fn(*mut i64) -> windows_sys::core::BOOL,
) -> u64 {
    let mut v: i64 = 0;
    // SAFETY: `query` is one of the two, which write one i64 through the pointer: a writable
    // i64 on this stack frame.
    if unsafe { query(&mut v) } == 0 {
        return 0;
    }
    u64::try_from(v).unwrap_or(0)
}

pub(super) fn aligned<T>(p: *mut c_void) -> Option<*mut T> {
    (!p.is_null() && (p as usize).is_multiple_of(core::mem::align_of::<T>())).then_some(p.cast())
}

/// The pointer a `D3DKMT_PTR` member the OS wrote holds (an address in this process).
pub(super) fn user_ptr(address: u64) -> *mut c_void {
    address as usize as *mut c_void
}
