//! How a host process reaches an emulated device's BARs.
//!
//! On Windows the driver maps BAR0 and accesses it with volatile loads and stores. On the host
//! there is no device memory to map, so the simulated OS hands the driver a pointer to a
//! [`TrapWindow`] instead, and the host platform's MMIO accessors call [`MmioBus`] through it:
//! every access reaches the device model at once, like a trapped access would. Only the host
//! platform dereferences a trap window; the driver logic never sees the difference.

/// A BAR whose accesses trap into a device model.
pub trait MmioBus: Sync {
    /// 32-bit read at `offset`.
    fn read32(&self, offset: usize) -> u32;
    /// 32-bit write at `offset`.
    fn write32(&self, offset: usize, value: u32);
    /// 64-bit read at `offset`.
    fn read64(&self, offset: usize) -> u64;
    /// 64-bit write at `offset`.
    fn write64(&self, offset: usize, value: u64);
}

/// What a host "mapped BAR" pointer points at.
#[repr(C)]
pub struct TrapWindow {
    /// Always [`TrapWindow::MAGIC`]; lets the host platform reject a pointer that is not a
    /// trap window before it calls through it.
    pub magic: u64,
    /// The device side of the BAR.
    pub bus: &'static dyn MmioBus,
}

impl TrapWindow {
    /// "TRAPWIN\0".
    pub const MAGIC: u64 = 0x004E_4957_5041_5254;
}

impl core::fmt::Debug for TrapWindow {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TrapWindow")
            .field("magic", &self.magic)
            .finish_non_exhaustive()
    }
}
