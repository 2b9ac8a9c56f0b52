//! Typed access to the device's register BAR.
//!
//! The only place the driver logic touches MMIO. Every access goes through [`Platform`], which
//! is volatile on Windows and a trap into the device model on the host.

use core::marker::PhantomData;
use core::ptr::NonNull;

use rvgpu_hw::regs;

use crate::platform::Platform;

/// BAR0 as mapped by `DxgkCbMapMemory`.
pub struct Regs<P: Platform> {
    base: NonNull<u8>,
    len: usize,
    _platform: PhantomData<fn() -> P>,
}

// SAFETY: MMIO registers are designed for concurrent access from any processor; the device
// serialises accesses. The mapping stays valid while the adapter is started.
unsafe impl<P: Platform> Send for Regs<P> {}
// SAFETY: as above.
unsafe impl<P: Platform> Sync for Regs<P> {}

impl<P: Platform> core::fmt::Debug for Regs<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Regs")
            .field("base", &self.base)
            .field("len", &self.len)
            .finish()
    }
}

impl<P: Platform> Regs<P> {
    /// Wraps a mapping of `len` bytes.
    ///
    /// # Safety
    /// `base` must be the mapping of BAR0 returned by `DxgkCbMapMemory`, valid for `len` bytes
    /// until the adapter stops and this value is dropped.
    pub unsafe fn new(base: NonNull<u8>, len: usize) -> Self {
        Self {
            base,
            len,
            _platform: PhantomData,
        }
    }

    /// `Some(offset)` if a `width`-byte access at `offset` is inside the BAR and aligned.
    fn check(&self, offset: usize, width: usize) -> Option<usize> {
        let end = offset.checked_add(width)?;
        (end <= self.len && offset.is_multiple_of(width)).then_some(offset)
    }

    /// Reads a 32-bit register; an out-of-range offset reads as all-ones (like a dead device).
    pub fn read32(&self, offset: usize) -> u32 {
        match self.check(offset, 4) {
            // SAFETY: `check` keeps the access inside the mapping and aligned (contract of
            // `new`).
            Some(off) => unsafe { P::mmio_read32(self.base, off) },
            None => u32::MAX,
        }
    }

    /// Writes a 32-bit register; an out-of-range offset is dropped.
    pub fn write32(&self, offset: usize, value: u32) {
        if let Some(off) = self.check(offset, 4) {
            // SAFETY: as in `read32`.
            unsafe { P::mmio_write32(self.base, off, value) }
        }
    }

    /// Reads a 64-bit register as one access.
    pub fn read64(&self, offset: usize) -> u64 {
        match self.check(offset, 8) {
            // SAFETY: as in `read32`.
            Some(off) => unsafe { P::mmio_read64(self.base, off) },
            None => u64::MAX,
        }
    }

    /// Writes a 64-bit register as one access.
    pub fn write64(&self, offset: usize, value: u64) {
        if let Some(off) = self.check(offset, 8) {
            // SAFETY: as in `read32`.
            unsafe { P::mmio_write64(self.base, off, value) }
        }
    }

    /// Reads a register of engine `e`.
    pub fn engine_read32(&self, e: u32, reg: usize) -> u32 {
        regs::engine_reg(e, reg).map_or(u32::MAX, |off| self.read32(off))
    }

    /// Writes a 32-bit register of engine `e`.
    pub fn engine_write32(&self, e: u32, reg: usize, value: u32) {
        if let Some(off) = regs::engine_reg(e, reg) {
            self.write32(off, value);
        }
    }

    /// Reads a 64-bit register of engine `e`.
    pub fn engine_read64(&self, e: u32, reg: usize) -> u64 {
        regs::engine_reg(e, reg).map_or(u64::MAX, |off| self.read64(off))
    }

    /// Writes a 64-bit register of engine `e`.
    pub fn engine_write64(&self, e: u32, reg: usize, value: u64) {
        if let Some(off) = regs::engine_reg(e, reg) {
            self.write64(off, value);
        }
    }
}
