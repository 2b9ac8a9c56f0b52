//! Typed access to the device's register BAR.
//!
//! The only place the driver logic touches MMIO. Every access goes through [`Platform`], which
//! is volatile on Windows and a trap into the device model on the host.

use core::marker::PhantomData;
use core::ptr::NonNull;

use rvgpu_hw::register::{Fixed, Indexed, Readable, RegRaw, Register, Width, Writable};
use rvgpu_hw::regs::{self, DeviceStatus};

use crate::dxgk::Dxgk;
use crate::platform::Platform;
use crate::status::{self, Status};

/// [`Regs`] state: the device is gone (surprise removal, or a read showed
/// `DEVICE_STATUS.LOST`); reads return all-ones as a dead device's would, for good.
const GONE: u8 = 1;
/// [`Regs`] state: the function is out of D0 (D3hot: its BARs do not decode, hardware.md
/// 13.3); reads return all-ones, which then says nothing about the device.
const UNPOWERED: u8 = 2;

/// BAR0 as mapped by `DxgkCbMapMemory`.
pub struct Regs<P: Platform> {
    base: NonNull<u8>,
    len: usize,
    /// [`GONE`] and [`UNPOWERED`]: while either is set no access reaches the bus and reads
    /// return all-ones. One word, so every access checks both with one load.
    state: core::sync::atomic::AtomicU8,
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
            state: core::sync::atomic::AtomicU8::new(0),
            _platform: PhantomData,
        }
    }

    /// Maps BAR0 (`start`, `length` bytes) through DxgkCbMapMemory; the mapping's address is
    /// returned too, for the DxgkCbUnmapMemory that ends it (when the adapter stops, or its
    /// start fails after this).
    pub fn map(dxgk: &Dxgk, start: u64, length: u64) -> Result<(Self, NonNull<u8>), Status> {
        let va = dxgk.map_registers(start, length)?;
        let len = usize::try_from(length).map_err(|_| status::INSUFFICIENT_RESOURCES)?;
        // SAFETY: `va` maps BAR0 for `len` bytes until the caller unmaps it, after dropping
        // this value.
        Ok((unsafe { Self::new(va, len) }, va))
    }

    /// From now on no access touches the hardware (after surprise removal "any
    /// further attempt to access hardware might cause problems such as a hard hang",
    /// DxgkDdiNotifySurpriseRemoval's page).
    pub fn mark_gone(&self) {
        self.state
            .fetch_or(GONE, core::sync::atomic::Ordering::AcqRel);
    }

    /// Whether [`Self::mark_gone`] ran.
    pub fn is_gone(&self) -> bool {
        self.state.load(core::sync::atomic::Ordering::Acquire) & GONE != 0
    }

    /// Whether `DEVICE_STATUS` says the device is lost (all-ones, a dead bus, has the bit too);
    /// if so, marks the registers gone. One register read unless already gone; nothing is read
    /// out of D0 (all-ones would be D3hot's answer anyway).
    pub fn check_lost(&self) -> bool {
        if self.is_gone() {
            return true;
        }
        if !self.is_powered() {
            return false;
        }
        let st = DeviceStatus::from_bits_retain(self.read::<regs::DeviceStatusReg>().raw());
        if st.contains(DeviceStatus::LOST) {
            self.mark_gone();
            crate::klog!(
                P,
                Warning,
                "rvgpu: device lost (DEVICE_STATUS {:#x})",
                st.bits()
            );
            return true;
        }
        false
    }

    /// The function enters (`false`) or is back in (`true`) D0 (DxgkDdiSetPowerState).
    pub fn set_powered(&self, powered: bool) {
        use core::sync::atomic::Ordering::AcqRel;
        if powered {
            self.state.fetch_and(!UNPOWERED, AcqRel);
        } else {
            self.state.fetch_or(UNPOWERED, AcqRel);
        }
    }

    /// Whether the function is in D0, so register accesses reach it.
    pub fn is_powered(&self) -> bool {
        self.state.load(core::sync::atomic::Ordering::Acquire) & UNPOWERED == 0
    }

    /// Whether accesses reach the bus: present and in D0.
    fn reaches_bus(&self) -> bool {
        self.state.load(core::sync::atomic::Ordering::Acquire) == 0
    }

    /// `Some(offset)` if a `width`-byte access at `offset` is inside the BAR and aligned.
    fn check(&self, offset: usize, width: usize) -> Option<usize> {
        let end = offset.checked_add(width)?;
        (end <= self.len && offset.is_multiple_of(width)).then_some(offset)
    }

    /// One access of `R`'s declared width at `offset`; an offset outside the BAR (or none)
    /// reads as all-ones, like a dead device.
    fn read_raw<R: Register>(&self, offset: Option<usize>) -> R {
        let width = R::DECL.width;
        let Some(off) = offset
            .filter(|_| self.reaches_bus())
            .and_then(|o| self.check(o, width.bytes()))
        else {
            return R::from_raw(<R::Raw as RegRaw>::ONES);
        };
        let value = match width {
            // SAFETY: `check` keeps the access inside the mapping and aligned to its width
            // (contract of `new`).
            Width::W32 => u64::from(unsafe { P::mmio_read32(self.base, off) }),
            // SAFETY: as above.
            Width::W64 => unsafe { P::mmio_read64(self.base, off) },
        };
        R::from_raw(<R::Raw as RegRaw>::from_u64(value))
    }

    /// One access of `R`'s declared width at `offset`; an offset outside the BAR is dropped.
    /// Inline: a hot path's register write is a few instructions around the access, and
    /// whether the compiler inlined it on its own changed with unrelated code (the
    /// instruction-count gate saw +52 on UpdateMonitoredValues when a register was added).
    #[inline]
    fn write_raw<R: Register>(&self, offset: Option<usize>, value: R) {
        let width = R::DECL.width;
        let Some(off) = offset
            .filter(|_| self.reaches_bus())
            .and_then(|o| self.check(o, width.bytes()))
        else {
            return;
        };
        let value = value.into_raw().to_u64();
        match width {
            // SAFETY: as in `read_raw`.
            Width::W32 => unsafe { P::mmio_write32(self.base, off, RegRaw::from_u64(value)) },
            // SAFETY: as in `read_raw`.
            Width::W64 => unsafe { P::mmio_write64(self.base, off, value) },
        }
    }

    /// Reads register `R` at its declared width.
    pub fn read<R: Fixed + Readable>(&self) -> R {
        self.read_raw(Some(R::DECL.offset))
    }

    /// Writes register `R` at its declared width.
    pub fn write<R: Fixed + Writable>(&self, value: R) {
        self.write_raw(Some(R::DECL.offset), value);
    }

    /// Reads instance `i` of register array `R` (an engine's register, a doorbell binding, a
    /// window); past the last instance it reads as all-ones.
    pub fn read_at<R: Indexed + Readable>(&self, i: u32) -> R {
        self.read_raw(R::DECL.offset_of(i))
    }

    /// Writes instance `i` of register array `R`; past the last instance it is dropped.
    pub fn write_at<R: Indexed + Writable>(&self, i: u32, value: R) {
        self.write_raw(R::DECL.offset_of(i), value);
    }
}
