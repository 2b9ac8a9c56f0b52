//! The adapter's hardware resources as PnP hands them to a display miniport: the translated
//! `CM_RESOURCE_LIST` (BAR0 registers, BAR2 doorbells, BAR4 VRAM, one line-based interrupt),
//! the registry path, the PDO. They live in an adapter-owned, never-moving block, because the
//! driver receives raw pointers into it from `DxgkCbGetDeviceInformation`.

use std::ffi::c_void;

use rvgpu_ddi::basic::cm_resource_type::*;
use rvgpu_ddi::basic::*;
use rvgpu_hw::pci;

/// `CM_RESOURCE_MEMORY_PREFETCHABLE` (wdm.h).
const CM_RESOURCE_MEMORY_PREFETCHABLE: u16 = 0x0004;
/// `CM_RESOURCE_MEMORY_LARGE_40` (wdm.h): length in 256-byte units.
const CM_RESOURCE_MEMORY_LARGE_40: u16 = 0x0200;
/// `CmResourceShareDeviceExclusive`.
const SHARE_DEVICE_EXCLUSIVE: u8 = 1;
/// `CmResourceShareShared` (a PCI line interrupt may be shared).
const SHARE_SHARED: u8 = 3;

/// Physical (CPU) address of `bar` of adapter `index`: each adapter gets a 64 GiB slot above
/// 0x10_0000_0000 so BARs of different adapters never overlap.
pub fn bar_base(index: usize, bar: u8) -> u64 {
    let slot = 0x10_0000_0000u64 + (index as u64) * 0x10_0000_0000;
    match bar {
        pci::BAR_MMIO => slot,
        pci::BAR_DOORBELL => slot + 0x100_0000,
        _ => slot + 0x8_0000_0000,
    }
}

/// The interrupt vector the simulation reports for adapter `index` (informational).
pub fn vector(index: usize) -> u32 {
    0x50 + index as u32
}

/// `CM_RESOURCE_LIST` with one full descriptor of four partial descriptors, laid out as the
/// variable-length C structure (the first partial descriptor is inside the list, the other
/// three follow it).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ResourceBlock {
    /// The list with the first descriptor (BAR0).
    pub list: CM_RESOURCE_LIST,
    /// BAR2, BAR4, interrupt.
    pub more: [CM_PARTIAL_RESOURCE_DESCRIPTOR; 3],
}
const _: () = assert!(std::mem::offset_of!(ResourceBlock, more) == 40);

fn memory(start: u64, len: u64, prefetchable: bool) -> CM_PARTIAL_RESOURCE_DESCRIPTOR {
    let (flags, length) = match u32::try_from(len) {
        Ok(l) => (0, l),
        Err(_) => (
            CM_RESOURCE_MEMORY_LARGE_40,
            u32::try_from(len / 256).unwrap_or(u32::MAX),
        ),
    };
    CM_PARTIAL_RESOURCE_DESCRIPTOR {
        Type: if flags == 0 {
            CmResourceTypeMemory
        } else {
            CmResourceTypeMemoryLarge
        },
        ShareDisposition: SHARE_DEVICE_EXCLUSIVE,
        Flags: flags
            | if prefetchable {
                CM_RESOURCE_MEMORY_PREFETCHABLE
            } else {
                0
            },
        u: CM_PARTIAL_RESOURCE_DESCRIPTOR_0 {
            Memory: CM_PARTIAL_RESOURCE_DESCRIPTOR_RANGE {
                Start: LARGE_INTEGER::from_i64(start as i64),
                Length: length,
            },
        },
    }
}

/// Builds the translated resources of adapter `index` with `doorbells` doorbell pages and
/// `vram` bytes of VRAM.
///
/// The interrupt is a PCI INTx line, or with `msi` one message-signalled interrupt
/// (`CM_RESOURCE_INTERRUPT_MESSAGE`, exclusive; the translated view has the line's layout).
pub fn resource_block(index: usize, doorbells: u32, vram: u64, msi: bool) -> ResourceBlock {
    let bar0 = memory(bar_base(index, pci::BAR_MMIO), pci::MMIO_SIZE, false);
    let bar2 = memory(
        bar_base(index, pci::BAR_DOORBELL),
        u64::from(doorbells) * rvgpu_hw::PAGE_SIZE,
        false,
    );
    let bar4 = memory(bar_base(index, pci::BAR_VRAM), vram, true);
    let line = CM_PARTIAL_RESOURCE_DESCRIPTOR_INTERRUPT {
        Level: 5,
        Vector: vector(index),
        Affinity: 1,
    };
    let irq = if msi {
        CM_PARTIAL_RESOURCE_DESCRIPTOR {
            Type: CmResourceTypeInterrupt,
            ShareDisposition: SHARE_DEVICE_EXCLUSIVE,
            Flags: CM_RESOURCE_INTERRUPT_MESSAGE | CM_RESOURCE_INTERRUPT_LATCHED,
            u: CM_PARTIAL_RESOURCE_DESCRIPTOR_0 {
                MessageInterrupt: CM_PARTIAL_RESOURCE_DESCRIPTOR_MSI { Translated: line },
            },
        }
    } else {
        CM_PARTIAL_RESOURCE_DESCRIPTOR {
            Type: CmResourceTypeInterrupt,
            ShareDisposition: SHARE_SHARED,
            // CM_RESOURCE_INTERRUPT_LEVEL_SENSITIVE (0): a PCI INTx line.
            Flags: 0,
            u: CM_PARTIAL_RESOURCE_DESCRIPTOR_0 { Interrupt: line },
        }
    };
    ResourceBlock {
        list: CM_RESOURCE_LIST {
            Count: 1,
            List: [CM_FULL_RESOURCE_DESCRIPTOR {
                InterfaceType: PCIBus,
                BusNumber: 0,
                PartialResourceList: CM_PARTIAL_RESOURCE_LIST {
                    Version: 1,
                    Revision: 1,
                    Count: 4,
                    PartialDescriptors: [bar0],
                },
            }],
        },
        more: [bar2, bar4, irq],
    }
}

/// Everything per adapter the driver gets pointers into.
#[derive(Debug)]
pub struct Resources {
    /// Translated resource list.
    pub block: ResourceBlock,
    /// `DeviceRegistryPath` as UTF-16.
    pub registry_path: Vec<u16>,
    /// Stand-in for the PDO (the driver only passes the pointer around).
    pub pdo: Box<[u64; 4]>,
}

impl Resources {
    /// Resources of adapter `index`.
    pub fn new(index: usize, doorbells: u32, vram: u64, msi: bool) -> Box<Self> {
        let path = format!(
            "\\REGISTRY\\MACHINE\\SYSTEM\\CurrentControlSet\\Control\\Video\\{{5256A0A0-0000-4000-8000-{index:012X}}}\\0000"
        );
        Box::new(Self {
            block: resource_block(index, doorbells, vram, msi),
            registry_path: path.encode_utf16().collect(),
            pdo: Box::new([0; 4]),
        })
    }

    /// The PDO pointer.
    pub fn pdo(&self) -> PDEVICE_OBJECT {
        (&*self.pdo as *const [u64; 4]).cast_mut().cast()
    }

    /// The registry path as a `UNICODE_STRING` over [`Resources::registry_path`].
    pub fn registry_path_string(&self) -> UNICODE_STRING {
        let bytes = u16::try_from(self.registry_path.len() * 2).unwrap_or(u16::MAX);
        UNICODE_STRING {
            Length: bytes,
            MaximumLength: bytes,
            Buffer: self.registry_path.as_ptr().cast_mut(),
        }
    }

    /// Pointer to the resource list.
    pub fn list_ptr(&self) -> *mut CM_RESOURCE_LIST {
        (&self.block as *const ResourceBlock).cast_mut().cast()
    }
}

/// Opaque non-null pointer for the `DriverObject` and `RegistryPath` of DriverEntry.
pub fn opaque(b: &[u64; 4]) -> *mut c_void {
    (b as *const [u64; 4]).cast_mut().cast()
}
