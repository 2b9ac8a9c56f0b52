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

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Declares a 64-bit address type: `#[repr(transparent)]` over `u64` (so it can sit in a
/// layout the device reads), no arithmetic that can wrap, and no conversion to another
/// address type except the named ones.
macro_rules! address {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(
            Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, FromBytes, IntoBytes,
            Immutable, KnownLayout,
        )]
        #[repr(transparent)]
        pub struct $name(u64);

        impl $name {
            /// Address 0 (also "none" in layouts that use 0 for an absent buffer).
            pub const NULL: Self = Self(0);

            /// Wraps a raw value taken from a layout, a register or the OS.
            pub const fn new(raw: u64) -> Self {
                Self(raw)
            }

            /// The raw value, for a layout, a register or the OS.
            pub const fn get(self) -> u64 {
                self.0
            }

            /// Whether this is address 0.
            pub const fn is_null(self) -> bool {
                self.0 == 0
            }

            /// The address `bytes` further on, or `None` if that overflows.
            pub const fn checked_add(self, bytes: u64) -> Option<Self> {
                match self.0.checked_add(bytes) {
                    Some(v) => Some(Self(v)),
                    None => None,
                }
            }

            /// The address `bytes` earlier, or `None` below 0.
            pub const fn checked_sub(self, bytes: u64) -> Option<Self> {
                match self.0.checked_sub(bytes) {
                    Some(v) => Some(Self(v)),
                    None => None,
                }
            }

            /// Bytes from `base` up to this address, or `None` if this is below `base`.
            pub const fn offset_from(self, base: Self) -> Option<u64> {
                self.0.checked_sub(base.0)
            }

            /// Whether the address is a multiple of `align` (false for `align` 0).
            pub const fn is_aligned(self, align: u64) -> bool {
                match self.0.checked_rem(align) {
                    Some(r) => r == 0,
                    None => false,
                }
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, concat!(stringify!($name), "({:#x})"), self.0)
            }
        }

        impl core::fmt::LowerHex for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::LowerHex::fmt(&self.0, f)
            }
        }
    };
}

address! {
    /// A GPU virtual address: what commands, queue descriptors, rings and registers that
    /// point into memory hold, and what the device translates (version 1: identity, see the
    /// module documentation).
    GpuVa
}

address! {
    /// A device-visible bus (physical) address: what the OS hands out for DMA memory and what
    /// the system-memory windows are programmed with.
    BusAddr
}

address! {
    /// An address in the device's physical space: system memory at its bus address below
    /// [`SYSMEM_LIMIT`], local memory at [`VRAM_BASE`] + offset. What a page-table entry
    /// resolves to, and what the machine's memory is indexed by.
    PhysAddr
}

impl BusAddr {
    /// The GPU address that reaches this bus address under version 1's identity mapping (no
    /// page tables). Every place that relies on the identity calls this, so page tables
    /// replace one function's callers, not every `u64`.
    pub const fn identity_va(self) -> GpuVa {
        GpuVa(self.0)
    }

    /// Where this bus address is in the device's physical space: system memory is there at
    /// its bus address.
    pub const fn phys(self) -> PhysAddr {
        PhysAddr(self.0)
    }
}

impl GpuVa {
    /// The physical address this GPU address reaches under version 1's identity mapping (no
    /// page tables), as [`BusAddr::identity_va`] the other way.
    pub const fn identity_pa(self) -> PhysAddr {
        PhysAddr(self.0)
    }
}

impl PhysAddr {
    /// Byte `offset` of local memory, or `None` if that overflows.
    pub const fn vram(offset: u64) -> Option<Self> {
        match VRAM_BASE.checked_add(offset) {
            Some(v) => Some(Self(v)),
            None => None,
        }
    }

    /// The bus address, if this is system memory (below [`SYSMEM_LIMIT`]).
    pub const fn bus(self) -> Option<BusAddr> {
        if self.0 < SYSMEM_LIMIT {
            Some(BusAddr(self.0))
        } else {
            None
        }
    }

    /// The offset into local memory, if this is local memory (at or above [`VRAM_BASE`]).
    pub const fn vram_offset(self) -> Option<u64> {
        self.0.checked_sub(VRAM_BASE)
    }
}

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
    System(BusAddr),
    /// Local memory at this byte offset from the start of VRAM.
    Local(u64),
}

/// Classifies a GPU address range `[addr, addr + len)` against a VRAM of `vram_size` bytes.
/// Returns `None` if the range is empty, overflows, straddles the boundary or lies outside
/// both regions. Window checks for system memory are the device's job.
pub fn classify(addr: GpuVa, len: u64, vram_size: u64) -> Option<Target> {
    let addr = addr.get();
    let end = addr.checked_add(len)?;
    if len == 0 {
        return None;
    }
    if end <= SYSMEM_LIMIT {
        // Identity: below SYSMEM_LIMIT a GPU address is the bus address (version 1).
        return Some(Target::System(BusAddr::new(addr)));
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
        let va = GpuVa::new;
        assert_eq!(
            classify(va(0x1000), 8, 1 << 20),
            Some(Target::System(BusAddr::new(0x1000)))
        );
        assert_eq!(
            classify(va(VRAM_BASE + 16), 8, 1 << 20),
            Some(Target::Local(16))
        );
        assert_eq!(classify(va(VRAM_BASE + (1 << 20) - 8), 16, 1 << 20), None);
        assert_eq!(
            classify(va(SYSMEM_LIMIT - 8), 16, 1 << 20),
            None,
            "straddles"
        );
        assert_eq!(classify(va(u64::MAX - 4), 8, 1 << 20), None, "overflow");
        assert_eq!(classify(va(0x1000), 0, 1 << 20), None, "empty");
    }

    #[test]
    fn physical_addresses_say_their_space() {
        let sys = BusAddr::new(0x1000).phys();
        assert_eq!(
            (sys.bus(), sys.vram_offset()),
            (Some(BusAddr::new(0x1000)), None)
        );
        let local = PhysAddr::new(VRAM_BASE + 0x40);
        assert_eq!(PhysAddr::vram(0x40), Some(local));
        assert_eq!((local.bus(), local.vram_offset()), (None, Some(0x40)));
        assert_eq!(PhysAddr::vram(u64::MAX), None);
    }

    #[test]
    fn address_arithmetic_is_checked() {
        let a = GpuVa::new(u64::MAX - 8);
        assert_eq!(a.checked_add(8), Some(GpuVa::new(u64::MAX)));
        assert_eq!(a.checked_add(9), None);
        assert_eq!(GpuVa::NULL.checked_sub(1), None);
        assert_eq!(
            GpuVa::new(0x1010).offset_from(GpuVa::new(0x1000)),
            Some(0x10)
        );
        assert_eq!(GpuVa::new(0x1000).offset_from(GpuVa::new(0x1010)), None);
        assert!(BusAddr::new(0x1000).is_aligned(8) && !BusAddr::new(0x1004).is_aligned(8));
        assert!(!BusAddr::new(0x1000).is_aligned(0));
        assert_eq!(BusAddr::new(0x2000).identity_va(), GpuVa::new(0x2000));
        assert_eq!(BusAddr::new(0x2000).phys(), PhysAddr::new(0x2000));
        assert_eq!(GpuVa::new(0x2000).identity_pa(), PhysAddr::new(0x2000));
        assert_eq!(format!("{:?}", GpuVa::new(0x40)), "GpuVa(0x40)");
    }
}
