//! Memory callbacks: register mappings, contiguous system memory, IOMMU mappings of an MDL.

use super::{field, row, Callback, Irql, Otherwise, Use};
use crate::dxgkrnl::{DXGKARGCB_ALLOCATECONTIGUOUSMEMORY, DXGKARGCB_FREECONTIGUOUSMEMORY};

/// The callbacks of this concept.
pub(super) const MEMORY: &[Callback] = &[
    Callback {
        name: "DxgkCbMapMemory",
        case: None,
        by: "K:DpMapMemory @0x1403F3E90, K:DpiVerifyResources @0x1403D9D80",
        irql: Irql {
            expects: "PASSIVE_LEVEL (logged; the mapping then waits on a mutex)",
            otherwise: Otherwise::Logged,
        },
        locks: "the port's mapping-list mutex",
        rows: &[
            row!(
                "DeviceHandle",
                "the port's DEVICE_OBJECT (extension tag and type checked): \
                 STATUS_INVALID_PARAMETER otherwise"
            ),
            row!(
                "VirtualAddress",
                "NULL: STATUS_INVALID_PARAMETER; else zeroed first, then the mapping's VA"
            ),
            row!("Length", "0: STATUS_INVALID_PARAMETER"),
            row!(
                "TranslatedAddress",
                "with Length, must lie inside one memory (CmResourceTypeMemory or \
                 MemoryLarge) descriptor of the translated resource list, anywhere in it; \
                 else STATUS_INVALID_PARAMETER. The same range in the same mode already \
                 mapped: that VA again, one more reference"
            ),
            row!(
                "InIoSpace",
                "1: the range must be a port descriptor; the VA is the address itself"
            ),
            row!(
                "MapToUserMode",
                "1: a view of \\Device\\PhysicalMemory in the calling process"
            ),
            row!(
                "CacheType",
                "MmNonCached 0: uncached, MmCached 1: cached, MmWriteCombined 2: write-combined; \
                 any other value is logged and mapped cached (not refused)"
            ),
        ],
        returns: "STATUS_SUCCESS; STATUS_INVALID_PARAMETER (refusals, or MmMapIoSpaceEx \
            failing); STATUS_NO_MEMORY (the record of the mapping)",
        kmd: Use::Calls,
    },
    Callback {
        name: "DxgkCbUnmapMemory",
        case: None,
        by: "K:DpUnmapMemory @0x1403F0330",
        irql: Irql {
            expects: "PASSIVE_LEVEL (logged; then waits on a mutex)",
            otherwise: Otherwise::Logged,
        },
        locks: "the port's mapping-list mutex",
        rows: &[
            row!(
                "DeviceHandle",
                "the port's DEVICE_OBJECT; NULL or foreign: STATUS_INVALID_PARAMETER"
            ),
            row!(
                "VirtualAddress",
                "NULL: STATUS_INVALID_PARAMETER. Else searched among the adapter's mappings: \
                 found, one reference dropped and the last one unmaps; not found, nothing \
                 is done and nothing is reported"
            ),
        ],
        returns: "STATUS_SUCCESS (also for an address that is not a mapping); the \
            unmap-view status of a user-mode view",
        kmd: Use::Calls,
    },
    Callback {
        name: "DxgkCbAllocateContiguousMemory",
        case: None,
        by: "K:DxgkAllocateContiguousMemoryCB @0x14001ED70, \
            K:SysMmCreateContiguousMemoryPhysicalObject @0x14001F82C",
        irql: Irql {
            expects: "<= DISPATCH_LEVEL (MmAllocateContiguousMemorySpecifyCache's)",
            otherwise: Otherwise::Unchecked,
        },
        locks: "",
        rows: &[
            row!(
                "DeviceHandle",
                "the adapter's SysMm object (DpiGetSysMmAdapterFromDevice)"
            ),
            row!(
                field!(DXGKARGCB_ALLOCATECONTIGUOUSMEMORY.CacheType),
                "read as a signed value: above 2 (MmWriteCombined) is \
                 STATUS_INVALID_PARAMETER, checked first"
            ),
            row!(
                field!(DXGKARGCB_ALLOCATECONTIGUOUSMEMORY.NumberOfBytes),
                "rounded up to whole pages"
            ),
            row!(
                field!(DXGKARGCB_ALLOCATECONTIGUOUSMEMORY.LowestAcceptableAddress),
                "passed to MmAllocateContiguousMemorySpecifyCache"
            ),
            row!(
                field!(DXGKARGCB_ALLOCATECONTIGUOUSMEMORY.HighestAcceptableAddress),
                "passed to MmAllocateContiguousMemorySpecifyCache"
            ),
            row!(
                field!(DXGKARGCB_ALLOCATECONTIGUOUSMEMORY.BoundaryAddressMultiple),
                "passed to MmAllocateContiguousMemorySpecifyCache"
            ),
            row!(
                field!(DXGKARGCB_ALLOCATECONTIGUOUSMEMORY.hMemoryHandle),
                "written: the physical object (opened for this adapter); NULL on failure"
            ),
            row!(
                field!(DXGKARGCB_ALLOCATECONTIGUOUSMEMORY.pMemory),
                "written: the kernel VA; NULL on failure"
            ),
        ],
        returns: "STATUS_SUCCESS; STATUS_INVALID_PARAMETER (CacheType); STATUS_NO_MEMORY \
            (no contiguous run, counted and logged)",
        kmd: Use::Calls,
    },
    Callback {
        name: "DxgkCbFreeContiguousMemory",
        case: None,
        by: "K:DxgkUnmapMdlFromIoMmuCB @0x140073FF0 (24H2 has no separate \
            DxgkFreeContiguousMemoryCB; earlier builds' one has the same body), \
            K:SysMmClosePhysicalObjectByAdapter @0x14001FA64",
        irql: Irql {
            expects: "PASSIVE_LEVEL (Microsoft's page; the code does not check)",
            otherwise: Otherwise::Unchecked,
        },
        locks: "",
        rows: &[row!(
            field!(DXGKARGCB_FREECONTIGUOUSMEMORY.hMemoryHandle),
            "followed as the physical object without a check: closed for this adapter (an \
             object of another adapter is asserted against) and unreferenced, which frees \
             the memory; a stale or invented handle is a use of freed memory"
        )],
        returns: "nothing useful (earlier builds: STATUS_SUCCESS always)",
        kmd: Use::Calls,
    },
    Callback {
        name: "DxgkCbMapMdlToIoMmu",
        case: None,
        by: "K:DxgkMapMdlToIoMmuCB @0x1400561F0",
        irql: Irql {
            expects: "PASSIVE_LEVEL (Microsoft's page; the code does not check)",
            otherwise: Otherwise::Unchecked,
        },
        locks: "",
        rows: &[
            row!(
                "args +0 (the MDL)",
                "wrapped in a physical object of this adapter (SmmCreatePhysicalObjectForMdl)"
            ),
            row!(
                "args +8 (the handle)",
                "written: the physical object (NULL on failure)"
            ),
        ],
        returns: "SmmCreatePhysicalObjectForMdl's status",
        kmd: Use::Names,
    },
];
