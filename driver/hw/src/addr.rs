//! GPU addressing.
//!
//! Version 1 of the device has no GPU page tables: a GPU address is a bus address.
//! - `[0, SYSMEM_LIMIT)`: system memory, reachable only inside a window the driver
//!   registered with [`crate::regs::SYSWIN_BASE`]/[`crate::regs::SYSWIN_SIZE`] (an
//!   allow-list that stands in for an IOMMU).
//! - `[VRAM_BASE, VRAM_BASE + vram_size)`: local memory, also CPU-visible through BAR4.
//!
//! Anything else faults the queue that used it ([`crate::event::FaultCode::BadAddress`]).
//! Per-process page tables will come through `QueueDescriptor::page_table_base` (zero means
//! identity, the only mode of version 1); see docs/hardware.md "Addressing".

/// First address past system memory in the GPU's view.
pub const SYSMEM_LIMIT: u64 = 1 << 40;
/// GPU address of byte 0 of local memory.
pub const VRAM_BASE: u64 = 1 << 40;
/// Every memory access the device makes is 8-byte aligned and 8 bytes wide.
pub const ACCESS_ALIGN: u64 = 8;

/// Where a GPU address points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// System memory at this bus address.
    System(u64),
    /// Local memory at this offset from the start of VRAM.
    Local(u64),
}

/// Classifies a GPU address range `[addr, addr + len)` against a VRAM of `vram_size` bytes.
/// Returns `None` if the range is empty, overflows, straddles the boundary or lies outside
/// both regions. Window checks for system memory are the device's job.
pub fn classify(addr: u64, len: u64, vram_size: u64) -> Option<Target> {
    let end = addr.checked_add(len)?;
    if len == 0 {
        return None;
    }
    if end <= SYSMEM_LIMIT {
        return Some(Target::System(addr));
    }
    let vram_end = VRAM_BASE.checked_add(vram_size)?;
    if addr >= VRAM_BASE && end <= vram_end {
        return Some(Target::Local(addr.wrapping_sub(VRAM_BASE)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_ranges() {
        assert_eq!(classify(0x1000, 8, 1 << 20), Some(Target::System(0x1000)));
        assert_eq!(
            classify(VRAM_BASE + 16, 8, 1 << 20),
            Some(Target::Local(16))
        );
        assert_eq!(classify(VRAM_BASE + (1 << 20) - 8, 16, 1 << 20), None);
        assert_eq!(classify(SYSMEM_LIMIT - 8, 16, 1 << 20), None, "straddles");
        assert_eq!(classify(u64::MAX - 4, 8, 1 << 20), None, "overflow");
        assert_eq!(classify(0x1000, 0, 1 << 20), None, "empty");
    }
}
