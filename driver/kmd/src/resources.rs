//! The adapter's hardware resources, from the translated `CM_RESOURCE_LIST` that
//! `DxgkCbGetDeviceInformation` returns.
//!
//! The list is variable length (counts inside it size the arrays), packed to 4 bytes, and comes
//! from the OS: we walk it with unaligned reads and hard limits, and identify our BARs by type
//! and size rather than by position (PnP may reorder or insert descriptors).
//! Reference: <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/ns-wdm-_cm_resource_list>.

use core::mem::{offset_of, size_of};

use rvgpu_ddi::{
    CM_FULL_RESOURCE_DESCRIPTOR, CM_PARTIAL_RESOURCE_DESCRIPTOR, CM_PARTIAL_RESOURCE_LIST,
    CM_RESOURCE_LIST,
};

/// `CmResourceTypeMemory`.
const TYPE_MEMORY: u8 = 3;
/// `CmResourceTypeMemoryLarge`.
const TYPE_MEMORY_LARGE: u8 = 7;
/// `CmResourceTypeInterrupt`.
const TYPE_INTERRUPT: u8 = 2;
/// `CM_RESOURCE_INTERRUPT_MESSAGE`: the interrupt descriptor is a message-signalled one
/// (MSI), granted when the INF sets `MSISupported`.
const INTERRUPT_MESSAGE: u16 = 0x0002;
/// `CM_RESOURCE_MEMORY_LARGE_40/48/64` flags: the length field is shifted by 8/16/32.
const LARGE_40: u16 = 0x0200;
const LARGE_48: u16 = 0x0400;
const LARGE_64: u16 = 0x0800;

/// Most descriptors we are willing to walk (a PCI function has at most 6 BARs + interrupts).
const MAX_FULL: u32 = 8;
const MAX_PARTIAL: u32 = 64;

/// A memory range (a BAR) as the CPU sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemRange {
    pub start: u64,
    pub length: u64,
}

/// The resources rvgpu needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    /// BAR0, registers.
    pub mmio: MemRange,
    /// BAR2, doorbell aperture.
    pub doorbells: MemRange,
    /// BAR4, VRAM.
    pub vram: MemRange,
    /// An interrupt was assigned.
    pub has_interrupt: bool,
    /// The interrupt is message-signalled: never shared, so the ISR need not ask the device
    /// whether it is ours.
    pub message_signaled: bool,
}

/// Why the resource list is unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceError {
    Null,
    TooMany,
    NoRegisters,
    NoInterrupt,
}

/// A resource list the OS passed, read field by field: [`crate::dxgk`] reads the OS's list
/// (its counts describe how far it is valid), the parser checks every count against the
/// limits before it reads on.
pub trait ResourceList {
    /// The `u32` at byte offset `off` of the list (a count).
    fn count(&self, off: usize) -> u32;
    /// The partial descriptor at byte offset `off` of the list.
    fn descriptor(&self, off: usize) -> CM_PARTIAL_RESOURCE_DESCRIPTOR;
}

/// Parses the translated resource list.
///
/// Memory ranges are assigned in order of appearance: the first one at least
/// `rvgpu_hw::pci::MMIO_SIZE` long and exactly that size is BAR0; of the remaining ones the
/// first is the doorbell aperture and the second VRAM (PCI reports BARs in BAR order).
/// `list` is `None` for a null list. A read is made only at offsets inside the list as its
/// own counts describe it.
pub fn parse(list: Option<&dyn ResourceList>) -> Result<Resources, ResourceError> {
    let list = list.ok_or(ResourceError::Null)?;
    let full_count = list.count(offset_of!(CM_RESOURCE_LIST, Count));
    if full_count > MAX_FULL {
        return Err(ResourceError::TooMany);
    }
    let mut out = Resources::default();
    let mut others = 0u32;
    let mut found_mmio = false;
    let mut cursor = offset_of!(CM_RESOURCE_LIST, List);
    for _ in 0..full_count {
        let plist = cursor
            .checked_add(offset_of!(CM_FULL_RESOURCE_DESCRIPTOR, PartialResourceList))
            .ok_or(ResourceError::TooMany)?;
        let count_off = plist
            .checked_add(offset_of!(CM_PARTIAL_RESOURCE_LIST, Count))
            .ok_or(ResourceError::TooMany)?;
        let partial_count = list.count(count_off);
        if partial_count > MAX_PARTIAL {
            return Err(ResourceError::TooMany);
        }
        let mut desc_off = plist
            .checked_add(offset_of!(CM_PARTIAL_RESOURCE_LIST, PartialDescriptors))
            .ok_or(ResourceError::TooMany)?;
        for _ in 0..partial_count {
            let d = list.descriptor(desc_off);
            match d.Type {
                TYPE_MEMORY | TYPE_MEMORY_LARGE => {
                    let range = crate::args::memory_range(&d);
                    let shift = match d.Flags {
                        f if d.Type == TYPE_MEMORY_LARGE && f & LARGE_64 != 0 => 32,
                        f if d.Type == TYPE_MEMORY_LARGE && f & LARGE_48 != 0 => 16,
                        f if d.Type == TYPE_MEMORY_LARGE && f & LARGE_40 != 0 => 8,
                        _ => 0,
                    };
                    let r = MemRange {
                        start: crate::args::quad(&{ range.Start }).cast_unsigned(),
                        length: u64::from(range.Length) << shift,
                    };
                    if !found_mmio && r.length == rvgpu_hw::pci::MMIO_SIZE {
                        out.mmio = r;
                        found_mmio = true;
                    } else {
                        match others {
                            0 => out.doorbells = r,
                            1 => out.vram = r,
                            _ => {}
                        }
                        others = others.saturating_add(1);
                    }
                }
                TYPE_INTERRUPT => {
                    out.has_interrupt = true;
                    out.message_signaled |= d.Flags & INTERRUPT_MESSAGE != 0;
                }
                _ => {}
            }
            desc_off = desc_off
                .checked_add(size_of::<CM_PARTIAL_RESOURCE_DESCRIPTOR>())
                .ok_or(ResourceError::TooMany)?;
        }
        cursor = desc_off;
    }
    if !found_mmio {
        return Err(ResourceError::NoRegisters);
    }
    if !out.has_interrupt {
        return Err(ResourceError::NoInterrupt);
    }
    Ok(out)
}
