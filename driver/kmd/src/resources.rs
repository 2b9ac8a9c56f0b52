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

/// Reads a plain-data `T` at byte offset `off` of `base`, unaligned (the list is packed).
///
/// # Safety
/// `base + off` must be inside one allocation and valid for reading a `T`.
unsafe fn read_at<T: Copy>(base: *const u8, off: usize) -> T {
    // SAFETY: inside the allocation (the caller's contract).
    let p = unsafe { base.add(off) };
    // SAFETY: valid for reading a `T` (the caller's contract); unaligned read.
    unsafe { p.cast::<T>().read_unaligned() }
}

/// Parses the translated resource list.
///
/// Memory ranges are assigned in order of appearance: the first one at least
/// `rvgpu_hw::pci::MMIO_SIZE` long and exactly that size is BAR0; of the remaining ones the
/// first is the doorbell aperture and the second VRAM (PCI reports BARs in BAR order).
///
/// # Safety
/// `list` must be null or point to a resource list that is valid for reads as far as its own
/// counts describe (the OS guarantees this for `DXGK_DEVICE_INFO::TranslatedResourceList`).
pub unsafe fn parse(list: *const CM_RESOURCE_LIST) -> Result<Resources, ResourceError> {
    if list.is_null() {
        return Err(ResourceError::Null);
    }
    let base = list.cast::<u8>();
    // SAFETY: `list` is valid for at least its Count field (contract above); read_unaligned
    // because the structure may be packed.
    let full_count = unsafe { read_at::<u32>(base, offset_of!(CM_RESOURCE_LIST, Count)) };
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
        // SAFETY: inside the list as described by its counts (contract above).
        let partial_count = unsafe { read_at::<u32>(base, count_off) };
        if partial_count > MAX_PARTIAL {
            return Err(ResourceError::TooMany);
        }
        let mut desc_off = plist
            .checked_add(offset_of!(CM_PARTIAL_RESOURCE_LIST, PartialDescriptors))
            .ok_or(ResourceError::TooMany)?;
        for _ in 0..partial_count {
            // SAFETY: inside the list as described by its counts; unaligned read of a packed
            // plain-data structure.
            let d = unsafe { read_at::<CM_PARTIAL_RESOURCE_DESCRIPTOR>(base, desc_off) };
            match d.Type {
                TYPE_MEMORY | TYPE_MEMORY_LARGE => {
                    // SAFETY: for memory types the union holds a range (all variants share
                    // the Start/Length layout).
                    let range = unsafe { d.u.Memory };
                    let shift = match d.Flags {
                        f if d.Type == TYPE_MEMORY_LARGE && f & LARGE_64 != 0 => 32,
                        f if d.Type == TYPE_MEMORY_LARGE && f & LARGE_48 != 0 => 16,
                        f if d.Type == TYPE_MEMORY_LARGE && f & LARGE_40 != 0 => 8,
                        _ => 0,
                    };
                    let r = MemRange {
                        // SAFETY: PHYSICAL_ADDRESS is a union over a 64-bit quad part.
                        start: unsafe { range.Start.QuadPart } as u64,
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
