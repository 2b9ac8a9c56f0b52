//! The render core's presentation and interrupt-control slots, which Dxgkrnl requires of every
//! render core although rvgpu is render-only (docs/windows-bringup.md BR-47):
//! `DxgkDdiPresent` with `DXGKARG_PRESENT`, and `DxgkDdiControlInterrupt`; and the display
//! slots not bound yet.
//!
//! Layouts are the 10.0.22621 d3dkmddi.h declarations at `DXGKDDI_INTERFACE_VERSION_WDDM3_2`
//! (the `#if` branches for WIN7, WIN8, WDDM1_3 and WDDM2_0 taken), checked by the build's
//! `wdk-layout-check` and asserted below.

use core::ffi::c_void;

use crate::basic::*;
use crate::interrupt::DXGK_INTERRUPT_TYPE;
use crate::macros::{
    bitfield, c_type, extern_fn, flag_word, layout, unbound_fn, union_debug, zeroed_default,
};
use crate::tdr::D3DDDI_FLIPINTERVAL_TYPE;

c_type! {
    /// `RECT` (windef.h): a rectangle by its edges, right and bottom exclusive.
    ///
    /// <https://learn.microsoft.com/en-us/windows/win32/api/windef/ns-windef-rect>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct RECT {
        /// Left edge.
        #[offset(0)]
        pub left: i32,
        /// Top edge.
        #[offset(4)]
        pub top: i32,
        /// Right edge (exclusive).
        #[offset(8)]
        pub right: i32,
        /// Bottom edge (exclusive).
        #[offset(12)]
        pub bottom: i32,
    }
}

bitfield! {
    /// `DXGK_ALLOCATIONLIST_0`: the flag word of a [`DXGK_ALLOCATIONLIST`] entry.
    pub struct DXGK_ALLOCATIONLIST_0: u32 {
        /// The command writes the allocation.
        WriteOperation: 0, 1;
        /// Segment the allocation is in (physical addressing only).
        SegmentId: 1, 5;
        /// Reserved.
        Reserved: 6, 26;
    }
}
layout!(DXGK_ALLOCATIONLIST_0, size = 4);

c_type! {
    /// `DXGK_ALLOCATIONLIST`: one allocation a DMA buffer (here: a present) references. From WDDM
    /// 2.0 the address is a union of `PhysicalAddress` and `VirtualAddress`; both are 64-bit.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_allocationlist>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_ALLOCATIONLIST {
        /// The driver's device-specific allocation handle (from `DxgkDdiOpenAllocation`).
        #[offset(0)]
        pub hDeviceSpecificAllocation: HANDLE,
        /// `WriteOperation`, `SegmentId`.
        #[offset(8)]
        pub Anonymous: DXGK_ALLOCATIONLIST_0,
        /// `PhysicalAddress` or `VirtualAddress` (a GPU VA for GpuMmu contexts).
        #[offset(16)]
        pub Anonymous2: DXGK_ALLOCATIONLIST_1,
    }
}

c_type! {
    /// `DXGK_ALLOCATIONLIST_1`: the address union of [`DXGK_ALLOCATIONLIST`] (WDDM 2.0).
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGK_ALLOCATIONLIST_1 {
        /// Physical address (physical addressing).
        pub PhysicalAddress: LARGE_INTEGER,
        /// GPU virtual address (GpuMmu).
        pub VirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
    }
}

// Both arms are 8 plain bytes.
union_debug!(DXGK_ALLOCATIONLIST_1 => VirtualAddress);

flag_word! {
    /// `DXGK_PRESENTFLAGS`: what kind of present (the WDDM 2.0 branch: `RedirectedFlip`,
    /// `Reserved : 18`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_presentflags>
    pub struct DXGK_PRESENTFLAGS {
        /// A bit-block transfer.
        Blt,
        /// A colour fill of the destination.
        ColorFill,
        /// A flip.
        Flip,
        /// A flip that does not wait for vsync.
        FlipWithNoWait,
        /// Source colour key.
        SrcColorKey,
        /// Destination colour key.
        DstColorKey,
        /// Linear to sRGB conversion.
        LinearToSrgb,
        /// Rotation.
        Rotate,
        /// Stereo flip.
        FlipStereo,
        /// Stereo flip, left image only.
        FlipStereoTemporaryMono,
        /// Stereo flip, right image preferred.
        FlipStereoPreferRight,
        /// Blt from the right image of a stereo back buffer.
        BltStereoUseRight,
        /// Flip with multi-plane overlays.
        FlipWithMultiPlaneOverlay,
        /// Redirected flip.
        RedirectedFlip,
    }
}

c_type! {
    /// `DXGKARG_PRESENT_0`: the allocation-list union of [`DXGKARG_PRESENT`] (a
    /// `DXGK_ALLOCATIONLIST*`, a `DXGK_PRESENTALLOCATIONINFO*` or a
    /// `DXGK_PRESENTMULTIPLANEOVERLAYINFO*`, by kind of present).
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGKARG_PRESENT_0 {
        /// Blt and colour-fill presents.
        pub pAllocationList: *mut DXGK_ALLOCATIONLIST,
        /// Flip presents.
        pub pAllocationInfo: *mut c_void,
        /// Multi-plane overlay presents.
        pub pPresentMultiPlaneOverlayInfo: *mut c_void,
    }
}

// Every arm is a pointer of the same size; printing one reads no memory.
union_debug!(DXGKARG_PRESENT_0 => pAllocationList);

c_type! {
    /// `DXGKARG_PRESENT`: argument of `DxgkDdiPresent`. The driver writes commands at
    /// `pDmaBuffer` and advances it (and `pPatchLocationListOut`, unused from Windows 7).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_present>
    #[size(168)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_PRESENT {
        /// In/out: where the next command goes.
        #[offset(0)]
        pub pDmaBuffer: PVOID,
        /// Bytes left at `pDmaBuffer`.
        #[offset(8)]
        pub DmaSize: UINT,
        /// Driver private data of the DMA buffer.
        #[offset(16)]
        pub pDmaBufferPrivateData: PVOID,
        /// Its size in bytes.
        #[offset(24)]
        pub DmaBufferPrivateDataSize: UINT,
        /// The allocations (source first, then destination).
        #[offset(32)]
        pub Anonymous: DXGKARG_PRESENT_0,
        /// Not used from Windows 7.
        #[offset(40)]
        pub pPatchLocationListOut: PVOID,
        /// Not used from Windows 7.
        #[offset(48)]
        pub PatchLocationListOutSize: UINT,
        /// Where a split present resumes.
        #[offset(52)]
        pub MultipassOffset: UINT,
        /// Fill colour (`ColorFill`).
        #[offset(56)]
        pub Color: UINT,
        /// Destination rectangle.
        #[offset(60)]
        pub DstRect: RECT,
        /// Source rectangle.
        #[offset(76)]
        pub SrcRect: RECT,
        /// Number of `pDstSubRects`.
        #[offset(92)]
        pub SubRectCnt: UINT,
        /// Destination sub-rectangles.
        #[offset(96)]
        pub pDstSubRects: *const RECT,
        /// Flip interval.
        #[offset(104)]
        pub FlipInterval: D3DDDI_FLIPINTERVAL_TYPE,
        /// Kind of present.
        #[offset(108)]
        pub Flags: DXGK_PRESENTFLAGS,
        /// Segment of the DMA buffer (physical addressing).
        #[offset(112)]
        pub DmaBufferSegmentId: UINT,
        /// Physical address of the DMA buffer.
        #[offset(120)]
        pub DmaBufferPhysicalAddress: LARGE_INTEGER,
        /// Reserved (WDDM 1.3).
        #[offset(128)]
        pub Reserved: UINT,
        /// GPU VA of the DMA buffer (WDDM 2.0).
        #[offset(136)]
        pub DmaBufferGpuVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// Source allocations in the list.
        #[offset(144)]
        pub NumSrcAllocations: UINT,
        /// Destination allocations in the list.
        #[offset(148)]
        pub NumDstAllocations: UINT,
        /// Size of `pPrivateDriverData`.
        #[offset(152)]
        pub PrivateDriverDataSize: UINT,
        /// UMD private data of the present.
        #[offset(160)]
        pub pPrivateDriverData: PVOID,
    }
}
zeroed_default!(DXGKARG_PRESENT);

/// `DXGKDDI_PRESENT` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hContext, INOUT_PDXGKARG_PRESENT
/// pPresent)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_present>
pub type PDXGKDDI_PRESENT = DDI_FN<*mut DXGKARG_PRESENT>;

extern_fn! {
    /// `DXGKDDI_CONTROLINTERRUPT` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
    /// IN_CONST_DXGK_INTERRUPT_TYPE InterruptType, IN_BOOLEAN EnableInterrupt)`. "The driver must
    /// return STATUS_NOT_IMPLEMENTED if an interrupt type other than DXGK_INTERRUPT_CRTC_VSYNC is
    /// supplied."
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_controlinterrupt>
    pub type PDXGKDDI_CONTROLINTERRUPT = fn(
        hAdapter: HANDLE,
        InterruptType: DXGK_INTERRUPT_TYPE,
        EnableInterrupt: BOOLEAN,
    ) -> NTSTATUS;
}

// Slots of `DRIVER_INITIALIZATION_DATA` whose signatures are not bound yet (`init` re-exports
// them): binding one replaces its line with its argument block and prototype.
unbound_fn!(PDXGKDDI_SETPALETTE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setpalette");
unbound_fn!(PDXGKDDI_SETPOINTERPOSITION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setpointerposition");
unbound_fn!(PDXGKDDI_SETPOINTERSHAPE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setpointershape");
unbound_fn!(PDXGKDDI_ISSUPPORTEDVIDPN, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_issupportedvidpn");
unbound_fn!(PDXGKDDI_RECOMMENDFUNCTIONALVIDPN, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_recommendfunctionalvidpn");
unbound_fn!(PDXGKDDI_ENUMVIDPNCOFUNCMODALITY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_enumvidpncofuncmodality");
unbound_fn!(PDXGKDDI_SETVIDPNSOURCEADDRESS, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setvidpnsourceaddress");
unbound_fn!(PDXGKDDI_SETVIDPNSOURCEVISIBILITY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setvidpnsourcevisibility");
unbound_fn!(PDXGKDDI_COMMITVIDPN, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_commitvidpn");
unbound_fn!(PDXGKDDI_UPDATEACTIVEVIDPNPRESENTPATH, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_updateactivevidpnpresentpath");
unbound_fn!(PDXGKDDI_RECOMMENDMONITORMODES, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_recommendmonitormodes");
unbound_fn!(PDXGKDDI_RECOMMENDVIDPNTOPOLOGY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_recommendvidpntopology");
unbound_fn!(PDXGKDDI_GETSCANLINE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_getscanline");
unbound_fn!(PDXGKDDI_STOPCAPTURE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_stopcapture");
unbound_fn!(PDXGKDDI_CREATEOVERLAY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_createoverlay");
unbound_fn!(PDXGKDDI_UPDATEOVERLAY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_updateoverlay");
unbound_fn!(PDXGKDDI_FLIPOVERLAY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_flipoverlay");
unbound_fn!(PDXGKDDI_DESTROYOVERLAY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_destroyoverlay");
unbound_fn!(PDXGKDDI_SETDISPLAYPRIVATEDRIVERFORMAT, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setdisplayprivatedriverformat");
unbound_fn!(PDXGKDDI_QUERYVIDPNHWCAPABILITY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_queryvidpnhwcapability");
unbound_fn!(PDXGKDDI_STOP_DEVICE_AND_RELEASE_POST_DISPLAY_OWNERSHIP, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_stop_device_and_release_post_display_ownership");
unbound_fn!(PDXGKDDI_SYSTEM_DISPLAY_ENABLE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_system_display_enable");
unbound_fn!(PDXGKDDI_SYSTEM_DISPLAY_WRITE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_system_display_write");
unbound_fn!(PDXGKDDI_SETVIDPNSOURCEADDRESSWITHMULTIPLANEOVERLAY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setvidpnsourceaddresswithmultiplaneoverlay");
unbound_fn!(PDXGKDDI_CONTROLINTERRUPT2, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_controlinterrupt2");
unbound_fn!(PDXGKDDI_CHECKMULTIPLANEOVERLAYSUPPORT, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_checkmultiplaneoverlaysupport");
unbound_fn!(PDXGKDDI_CHECKMULTIPLANEOVERLAYSUPPORT2, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_checkmultiplaneoverlaysupport2");
unbound_fn!(PDXGKDDI_SETVIDPNSOURCEADDRESSWITHMULTIPLANEOVERLAY2, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setvidpnsourceaddresswithmultiplaneoverlay2");
unbound_fn!(PDXGKDDI_CHECKMULTIPLANEOVERLAYSUPPORT3, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_checkmultiplaneoverlaysupport3");
unbound_fn!(PDXGKDDI_SETVIDPNSOURCEADDRESSWITHMULTIPLANEOVERLAY3, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setvidpnsourceaddresswithmultiplaneoverlay3");
unbound_fn!(PDXGKDDI_POSTMULTIPLANEOVERLAYPRESENT, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_postmultiplaneoverlaypresent");
unbound_fn!(PDXGKDDI_CONTROLMODEBEHAVIOR, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_controlmodebehavior");
unbound_fn!(PDXGKDDI_UPDATEMONITORLINKINFO, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_updatemonitorlinkinfo");
unbound_fn!(PDXGKDDI_CREATEPERIODICFRAMENOTIFICATION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_createperiodicframenotification");
unbound_fn!(PDXGKDDI_DESTROYPERIODICFRAMENOTIFICATION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_destroyperiodicframenotification");
unbound_fn!(PDXGKDDI_SETTIMINGSFROMVIDPN, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_settimingsfromvidpn");
unbound_fn!(PDXGKDDI_SETTARGETGAMMA, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_settargetgamma");
unbound_fn!(PDXGKDDI_SETTARGETCONTENTTYPE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_settargetcontenttype");
unbound_fn!(PDXGKDDI_SETTARGETANALOGCOPYPROTECTION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_settargetanalogcopyprotection");
unbound_fn!(PDXGKDDI_SETTARGETADJUSTEDCOLORIMETRY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_settargetadjustedcolorimetry");
unbound_fn!(PDXGKDDI_DISPLAYDETECTCONTROL, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_displaydetectcontrol");
unbound_fn!(PDXGKDDI_QUERYCONNECTIONCHANGE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_queryconnectionchange");
unbound_fn!(PDXGKDDI_EXCHANGEPRESTARTINFO, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_exchangeprestartinfo");
unbound_fn!(PDXGKDDI_GETMULTIPLANEOVERLAYCAPS, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_getmultiplaneoverlaycaps");
unbound_fn!(PDXGKDDI_GETPOSTCOMPOSITIONCAPS, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_getpostcompositioncaps");
unbound_fn!(PDXGKDDI_PRESENTTOHWQUEUE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_presenttohwqueue");
unbound_fn!(PDXGKDDI_SETTARGETADJUSTEDCOLORIMETRY2, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_settargetadjustedcolorimetry2");
unbound_fn!(PDXGKDDI_CONTROLINTERRUPT3, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_controlinterrupt3");
unbound_fn!(PDXGKDDI_SETFLIPQUEUELOGBUFFER, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setflipqueuelogbuffer");
unbound_fn!(PDXGKDDI_UPDATEFLIPQUEUELOG, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_updateflipqueuelog");
unbound_fn!(PDXGKDDI_CANCELQUEUEDFLIPS, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_cancelqueuedflips");
unbound_fn!(PDXGKDDI_SETINTERRUPTTARGETPRESENTID, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setinterrupttargetpresentid");
unbound_fn!(PDXGKDDI_CANCELFLIPS, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_cancelflips");
unbound_fn!(PDXGKDDI_RESETDISPLAYENGINE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_resetdisplayengine");
