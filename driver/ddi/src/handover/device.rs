//! The audit of a device's and a context's creation: `DxgkDdiCreateDevice` and
//! `DxgkDdiCreateContext`.

use super::Ddi;
use crate::submission::{DXGKARG_CREATECONTEXT, DXGKARG_CREATEDEVICE};

const DEVICE_BY: &str = "K:DXGDEVICE::Initialize @0x1403973B4";

/// `DxgkDdiCreateDevice`: `DEVICE_BY` builds the block on its stack, zeroing the union, `Pasid`
/// and the padding after it, and calls the driver after VidMm's device exists and the process
/// has the adapter open (not for a device of a virtual GPU's guest, which the host creates).
pub const CREATE_DEVICE: Ddi<DXGKARG_CREATEDEVICE> = Ddi {
    name: "DxgkDdiCreateDevice",
    block: "DXGKARG_CREATEDEVICE",
    rows: &[
        filled_row!(
            DXGKARG_CREATEDEVICE.hDevice,
            true,
            DEVICE_BY,
            "the DXGDEVICE object; the driver writes its own handle over it"
        ),
        filled_row!(
            DXGKARG_CREATEDEVICE.Anonymous,
            true,
            DEVICE_BY,
            "Flags on a WDDM 2 adapter: bit 1 for a device of the GDI or one created with it, \
             bit 31 from the caller on an adapter with that capability, nothing else; a WDDM 1 \
             adapter gets pInfo instead"
        ),
        zero_row!(
            DXGKARG_CREATEDEVICE.Pasid,
            false,
            DEVICE_BY,
            "written only on an adapter with a GPU-VA IOMMU (the process's PASID there); \
             rvgpu's has none"
        ),
        filled_row!(
            DXGKARG_CREATEDEVICE.hKmdProcess,
            true,
            DEVICE_BY,
            "the driver's handle of the process on this adapter \
             (DXGPROCESS::GetKmdProcessHandle), from DxgkDdiCreateProcess"
        ),
    ],
};

const CONTEXT_BY: &str = "K:DXGCONTEXT::Initialize @0x1402CFD80";

/// `DxgkDdiCreateContext` of a D3D device's context: `CONTEXT_BY` zeroes the block on its
/// stack and fills it from the context; it calls no DDI for a `NoKmdAccess` or a
/// synchronization-only context, nor on a virtual GPU's guest. VidSch's system contexts (the
/// paging node's) are created through another path, with `SystemContext` and a null
/// `hContext`.
pub const CREATE_CONTEXT: Ddi<DXGKARG_CREATECONTEXT> = Ddi {
    name: "DxgkDdiCreateContext",
    block: "DXGKARG_CREATECONTEXT",
    rows: &[
        filled_row!(
            DXGKARG_CREATECONTEXT.hContext,
            true,
            CONTEXT_BY,
            "non-null: the DXGCONTEXT, or on a WDDM 3.x driver a pool cell holding it; the \
             driver writes its own handle over it"
        ),
        filled_row!(
            DXGKARG_CREATECONTEXT.NodeOrdinal,
            true,
            CONTEXT_BY,
            "the caller's node"
        ),
        filled_row!(
            DXGKARG_CREATECONTEXT.EngineAffinity,
            true,
            CONTEXT_BY,
            "the caller's engine affinity"
        ),
        filled_row!(
            DXGKARG_CREATECONTEXT.Flags,
            true,
            CONTEXT_BY,
            "GdiContext (bit 1) for the GDI's device or client hint, VirtualAddressing (bit 2) \
             for a GPU-VA context, HwQueueSupported (bit 4) when the caller asks and the node \
             schedules contexts, TestContext (bit 5) from the caller; never SystemContext"
        ),
        filled_row!(
            DXGKARG_CREATECONTEXT.pPrivateDriverData,
            true,
            CONTEXT_BY,
            "Dxgkrnl's copy of the caller's private data"
        ),
        filled_row!(
            DXGKARG_CREATECONTEXT.PrivateDriverDataSize,
            true,
            CONTEXT_BY,
            "its size"
        ),
        zero_row!(
            DXGKARG_CREATECONTEXT.ContextInfo,
            false,
            CONTEXT_BY,
            "the driver's answer; zeroed with the block"
        ),
    ],
};
