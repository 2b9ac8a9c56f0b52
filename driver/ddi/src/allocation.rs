//! GpuMmu memory model, driver side of VidMm objects: processes and their root page
//! tables (crate::process, re-exported here) and allocations (`DxgkDdiCreateAllocation`,
//! `DxgkDdiDestroyAllocation`, `DxgkDdiDescribeAllocation`,
//! `DxgkDdiGetStandardAllocationDriverData`, `DxgkDdiOpenAllocation`, `DxgkDdiCloseAllocation`),
//! d3dkmddi.h with the small d3dukmdt.h / d3dkmdt.h types they use.
//!
//! Page-table entries and the paging-buffer page-table operations are in [`crate::memory`];
//! the `DXGKARG_BUILDPAGINGBUFFER` union arms in [`crate::tdr`].
//!
//! Every DDI here is PASSIVE_LEVEL (`_IRQL_requires_(PASSIVE_LEVEL)` in the header). First
//! argument: `hAdapter` (the `MiniportDeviceContext` from `DxgkDdiAddDevice`) for everything
//! except `DxgkDdiOpenAllocation` and `DxgkDdiCloseAllocation`, which take the driver's
//! `hDevice` (from `DxgkDdiCreateDevice`). Pointer mutability follows the header's parameter
//! typedefs: `IN_CONST_P…` is `*const`, `INOUT_P…` is `*mut`.
//!
//! Layouts: WDK 10.0.22621 d3dkmddi.h / d3dukmdt.h / d3dkmdt.h with
//! `DXGKDDI_INTERFACE_VERSION=0x11007`, checked by `wdk-layout-check`.

use core::ffi::c_void;

use crate::basic::*;
use crate::macros::{
    bitfield, c_enum, c_type, flag_word, layout, opaque_types, unbound_fn, union_debug,
    zeroed_default,
};

pub use crate::process::*;

// ---------------------------------------------------------------------------------------------
// Small shared D3DDDI types (d3dukmdt.h)
// ---------------------------------------------------------------------------------------------

c_enum! {
    /// `D3DDDIFORMAT`: surface format (a C enum; `D3DFMT`-compatible values and FourCCs).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ne-d3dukmdt-_d3dddiformat>
    pub type D3DDDIFORMAT = i32 {
        /// Format unknown or not applicable.
        D3DDDIFMT_UNKNOWN,
    }

    /// `D3DDDI_ROTATION`: display rotation.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ne-d3dukmdt-_d3dddi_rotation>
    pub type D3DDDI_ROTATION = i32 {
        /// Not rotated.
        D3DDDI_ROTATION_IDENTITY = 1,
        /// 90 degrees.
        D3DDDI_ROTATION_90,
        /// 180 degrees.
        D3DDDI_ROTATION_180,
        /// 270 degrees.
        D3DDDI_ROTATION_270,
    }
}

c_type! {
    /// `D3DDDI_RATIONAL`: a fraction (refresh rates).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_rational>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct D3DDDI_RATIONAL {
        /// Numerator.
        #[offset(0)]
        pub Numerator: UINT,
        /// Denominator.
        #[offset(4)]
        pub Denominator: UINT,
    }
}

c_type! {
    /// `D3DDDI_MULTISAMPLINGMETHOD`: a multisampling mode.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_multisamplingmethod>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct D3DDDI_MULTISAMPLINGMETHOD {
        /// Samples per pixel.
        #[offset(0)]
        pub NumSamples: UINT,
        /// Highest quality level of this sample count.
        #[offset(4)]
        pub NumQualityLevels: UINT,
    }
}

bitfield! {
    /// `D3DDDI_SEGMENTPREFERENCE` (= `DXGK_SEGMENTPREFERENCE`): up to five segment ids in
    /// order of preference, each with a direction bit (allocate from the end of the segment).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_segmentpreference>
    pub struct D3DDDI_SEGMENTPREFERENCE: u32 {
        /// Most preferred segment (0: none).
        SegmentId0: 0, 5;
        /// Direction for `SegmentId0`.
        Direction0: 5, 1;
        /// Second choice.
        SegmentId1: 6, 5;
        /// Direction for `SegmentId1`.
        Direction1: 11, 1;
        /// Third choice.
        SegmentId2: 12, 5;
        /// Direction for `SegmentId2`.
        Direction2: 17, 1;
        /// Fourth choice.
        SegmentId3: 18, 5;
        /// Direction for `SegmentId3`.
        Direction3: 23, 1;
        /// Fifth choice.
        SegmentId4: 24, 5;
        /// Direction for `SegmentId4`.
        Direction4: 29, 1;
        /// Reserved, zero.
        Reserved: 30, 2;
    }
}
layout!(D3DDDI_SEGMENTPREFERENCE, size = 4);

/// `DXGK_SEGMENTPREFERENCE`: the kernel-mode name of [`D3DDDI_SEGMENTPREFERENCE`].
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_segmentpreference>
pub type DXGK_SEGMENTPREFERENCE = D3DDDI_SEGMENTPREFERENCE;

bitfield! {
    /// `DXGK_SEGMENTBANKPREFERENCE`: up to four preferred banks (banked segments only).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_segmentbankpreference>
    pub struct DXGK_SEGMENTBANKPREFERENCE: u32 {
        /// Most preferred bank.
        Bank0: 0, 7;
        /// Direction for `Bank0`.
        Direction0: 7, 1;
        /// Second choice.
        Bank1: 8, 7;
        /// Direction for `Bank1`.
        Direction1: 15, 1;
        /// Third choice.
        Bank2: 16, 7;
        /// Direction for `Bank2`.
        Direction2: 23, 1;
        /// Fourth choice.
        Bank3: 24, 7;
        /// Direction for `Bank3`.
        Direction3: 31, 1;
    }
}
layout!(DXGK_SEGMENTBANKPREFERENCE, size = 4);

// ---------------------------------------------------------------------------------------------
// Allocation flags
// ---------------------------------------------------------------------------------------------

/// Declares a view of the allocation flag word: both views give bits 0..=6, 8, 9 and 14..=18
/// the same names and leave 19..=31 reserved; bit 7 and bits 10..=13 are each view's own.
macro_rules! allocation_info_flags {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(#[$meta7:meta])* $bit7:ident: 7, 1;
            $( $(#[$fmeta:meta])* $field:ident: $shift:literal, 1; )*
        }
    ) => {
        bitfield! {
            $(#[$meta])*
            pub struct $name: u32 {
                /// CPU-accessible.
                CpuVisible: 0, 1;
                /// Always in system memory.
                PermanentSysMem: 1, 1;
                /// Cached CPU mapping.
                Cached: 2, 1;
                /// Protected content.
                Protected: 3, 1;
                /// Backed by existing user system memory.
                ExistingSysMem: 4, 1;
                /// Backed by existing kernel system memory.
                ExistingKernelSysMem: 5, 1;
                /// Allocate from the end of the segment.
                FromEndOfSegment: 6, 1;
                $(#[$meta7])* $bit7: 7, 1;
                /// Overlay.
                Overlay: 8, 1;
                /// Capture buffer.
                Capture: 9, 1;
                $( $(#[$fmeta])* $field: $shift, 1; )*
                /// History buffer.
                HistoryBuffer: 14, 1;
                /// Accessed by physical address (WDDM 2.0+).
                AccessedPhysically: 15, 1;
                /// Wants `NotifyResidency` paging operations (WDDM 2.0+).
                ExplicitResidencyNotification: 16, 1;
                /// Hardware-protected (WDDM 2.0+).
                HardwareProtected: 17, 1;
                /// CPU-visible on demand (WDDM 2.0+).
                CpuVisibleOnDemand: 18, 1;
                /// Reserved: in C one bit each, `DXGK_ALLOC_RESERVED16` (no macro in the header:
                /// that is its C name), then `Reserved15`..`Reserved9` and `Reserved4`..`Reserved0`.
                Reserved: 19, 13;
            }
        }
        layout!($name, size = 4);
    };
}

allocation_info_flags! {
    /// `DXGK_ALLOCATIONINFOFLAGS`: the pre-WDDM 2.0 view of [`DXGK_ALLOCATIONINFO_1`] (bits 15..18
    /// as at `DXGKDDI_INTERFACE_VERSION >= WDDM2_0`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_allocationinfoflags>
    pub struct DXGK_ALLOCATIONINFOFLAGS {
        /// Swizzled.
        Swizzled: 7, 1;
        /// Uses the alternate VA.
        UseAlternateVA: 10, 1;
        /// Paging must be synchronous.
        SynchronousPaging: 11, 1;
        /// Linked-adapter mirrored.
        LinkMirrored: 12, 1;
        /// Linked-adapter instanced.
        LinkInstanced: 13, 1;
    }
}

allocation_info_flags! {
    /// `DXGK_ALLOCATIONINFOFLAGS_WDDM2_0`: the flags a WDDM 2.x driver fills
    /// ([`DXGK_ALLOCATIONINFO_1::FlagsWddm2`]), as declared at interface 0x11007.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_allocationinfoflags_wddm2_0>
    pub struct DXGK_ALLOCATIONINFOFLAGS_WDDM2_0 {
        /// Never map with large (2 MiB) pages (was `Swizzled`).
        DisableLargePageMapping: 7, 1;
        /// Create in the video protected region (WDDM 2.1+).
        CreateInVpr: 10, 1;
        /// Reserved (no macro in the header: this is its C name).
        DXGK_ALLOC_RESERVED17: 11, 1;
        /// Reserved (was `LinkMirrored`).
        Reserved02: 12, 1;
        /// Map the CPU aperture as visible (WDDM 2.9+).
        MapApertureCpuVisible: 13, 1;
    }
}

flag_word! {
    /// `DXGK_ALLOCATIONINFOFLAGS2` (WDDM 3.0+; [`DXGK_ALLOCATIONINFO::Flags2`]).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_allocationinfoflags2>
    pub struct DXGK_ALLOCATIONINFOFLAGS2 {
        /// The backing store pointer is shared with the KMD.
        ShareBackingStoreWithKmd,
    }
}

// ---------------------------------------------------------------------------------------------
// DxgkDdiCreateAllocation
// ---------------------------------------------------------------------------------------------

flag_word! {
    /// The named `Flags` union of [`DXGK_ALLOCATIONUSAGEINFO1`].
    pub struct DXGK_ALLOCATIONUSAGEINFO1_Flags {
        /// `Format` holds a private (IHV) format.
        PrivateFormat,
        /// Swizzled / tiled.
        Swizzled,
        /// Mip-mapped.
        MipMap,
        /// Cube texture.
        Cube,
        /// Volume texture.
        Volume,
        /// Vertex buffer.
        Vertex,
        /// Index buffer.
        Index,
    }
}

c_type! {
    /// Anonymous union of [`DXGK_ALLOCATIONUSAGEINFO1`]: standard or private format.
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGK_ALLOCATIONUSAGEINFO1_0 {
        /// Standard format (`Flags.PrivateFormat == 0`).
        pub Format: D3DDDIFORMAT,
        /// Private format (`Flags.PrivateFormat == 1`).
        pub PrivateFormat: UINT,
    }
}
// Both arms are 4-byte integers; every bit pattern is valid.
union_debug!(DXGK_ALLOCATIONUSAGEINFO1_0 => PrivateFormat);

c_type! {
    /// `DXGK_ALLOCATIONUSAGEINFO1`: version 1 of the usage hint VidMm may use to place an
    /// allocation.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_allocationusageinfo1>
    #[size(36)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_ALLOCATIONUSAGEINFO1 {
        /// Usage bits.
        #[offset(0)]
        pub Flags: DXGK_ALLOCATIONUSAGEINFO1_Flags,
        /// `Format` / `PrivateFormat`.
        #[offset(4)]
        pub Anonymous: DXGK_ALLOCATIONUSAGEINFO1_0,
        /// IHV swizzled format.
        #[offset(8)]
        pub SwizzledFormat: UINT,
        /// Offset of this surface in the VidMm allocation.
        #[offset(12)]
        pub ByteOffset: UINT,
        /// Width in pixels.
        #[offset(16)]
        pub Width: UINT,
        /// Height in lines.
        #[offset(20)]
        pub Height: UINT,
        /// Pitch in bytes.
        #[offset(24)]
        pub Pitch: UINT,
        /// Depth (mip levels / volume slices).
        #[offset(28)]
        pub Depth: UINT,
        /// Bytes from one level or slice to the next.
        #[offset(32)]
        pub SlicePitch: UINT,
    }
}

c_type! {
    /// `DXGK_ALLOCATIONUSAGEHINT`: versioned usage hint
    /// ([`DXGK_ALLOCATIONINFO::pAllocationUsageHint`]).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_allocationusagehint>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_ALLOCATIONUSAGEHINT {
        /// Hint version (1).
        #[offset(0)]
        pub Version: UINT,
        /// Version-1 hint.
        #[offset(4)]
        pub v1: DXGK_ALLOCATIONUSAGEINFO1,
    }
}

c_type! {
    /// First anonymous union of [`DXGK_ALLOCATIONINFO`].
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGK_ALLOCATIONINFO_0 {
        /// Before WDDM 2.0 only.
        pub MaximumRenamingListLength: UINT,
        /// Out (WDDM 2.0+): physical adapter (linked adapters) the allocation lives on.
        pub PhysicalAdapterIndex: UINT,
    }
}
// Both arms are the same u32.
union_debug!(DXGK_ALLOCATIONINFO_0 => PhysicalAdapterIndex);

c_type! {
    /// Second anonymous union of [`DXGK_ALLOCATIONINFO`]: the flag word, in its pre-2.0 or
    /// WDDM 2.0 interpretation (a GpuMmu driver uses `FlagsWddm2`).
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGK_ALLOCATIONINFO_1 {
        /// Pre-WDDM 2.0 bit names.
        pub Flags: DXGK_ALLOCATIONINFOFLAGS,
        /// WDDM 2.0+ bit names.
        pub FlagsWddm2: DXGK_ALLOCATIONINFOFLAGS_WDDM2_0,
    }
}
// Both arms are the same u32 word.
union_debug!(DXGK_ALLOCATIONINFO_1 => FlagsWddm2);

impl DXGK_ALLOCATIONINFO_1 {
    /// The word under its WDDM 2.0 bit names.
    pub fn flags_wddm2(&self) -> DXGK_ALLOCATIONINFOFLAGS_WDDM2_0 {
        // SAFETY: both arms are one u32 word; any bit pattern is a value of either.
        unsafe { self.FlagsWddm2 }
    }
}

c_type! {
    /// `DXGK_ALLOCATIONINFO`: one allocation of a `DxgkDdiCreateAllocation` call (88 bytes on
    /// x64 at WDDM 3.0+, where `Flags2` fills what was tail padding).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_allocationinfo>
    #[size(88)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_ALLOCATIONINFO {
        /// In: UMD private data for this allocation.
        #[offset(0)]
        pub pPrivateDriverData: PVOID,
        /// In: its size.
        #[offset(8)]
        pub PrivateDriverDataSize: UINT,
        /// Out: required alignment in bytes.
        #[offset(12)]
        pub Alignment: UINT,
        /// Out: size in bytes.
        #[offset(16)]
        pub Size: SIZE_T,
        /// Out: pitch-aligned size (aperture segments with pitch alignment only).
        #[offset(24)]
        pub PitchAlignedSize: SIZE_T,
        /// Out: preferred banks.
        #[offset(32)]
        pub HintedBank: DXGK_SEGMENTBANKPREFERENCE,
        /// Out: preferred segments.
        #[offset(36)]
        pub PreferredSegment: DXGK_SEGMENTPREFERENCE,
        /// Out: bit `n` set for each segment id `n` that may be read from.
        #[offset(40)]
        pub SupportedReadSegmentSet: UINT,
        /// Out: bit `n` set for each segment id `n` that may be written.
        #[offset(44)]
        pub SupportedWriteSegmentSet: UINT,
        /// Out: segments usable for eviction.
        #[offset(48)]
        pub EvictionSegmentSet: UINT,
        /// `MaximumRenamingListLength` / `PhysicalAdapterIndex`.
        #[offset(52)]
        pub Anonymous: DXGK_ALLOCATIONINFO_0,
        /// Out: the driver's allocation handle (`hAllocation` in later DDIs and paging ops).
        #[offset(56)]
        pub hAllocation: HANDLE,
        /// Out: `Flags` / `FlagsWddm2`.
        #[offset(64)]
        pub Anonymous2: DXGK_ALLOCATIONINFO_1,
        /// In: optional usage hint.
        #[offset(72)]
        pub pAllocationUsageHint: *mut DXGK_ALLOCATIONUSAGEHINT,
        /// Out: initial eviction priority.
        #[offset(80)]
        pub AllocationPriority: UINT,
        /// Out: WDDM 3.0+ flags (x64 and ARM64 only).
        #[offset(84)]
        pub Flags2: DXGK_ALLOCATIONINFOFLAGS2,
    }
}

flag_word! {
    /// `DXGK_CREATEALLOCATIONFLAGS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_createallocationflags>
    pub struct DXGK_CREATEALLOCATIONFLAGS {
        /// The allocations belong to a resource (`hResource`); 0: to the device.
        Resource,
    }
}

c_type! {
    /// `DXGKARG_CREATEALLOCATION`: argument of `DxgkDdiCreateAllocation`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_createallocation>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_CREATEALLOCATION {
        /// In: UMD private data for the whole group.
        #[offset(0)]
        pub pPrivateDriverData: *const c_void,
        /// In: its size.
        #[offset(8)]
        pub PrivateDriverDataSize: UINT,
        /// In: elements of `pAllocationInfo`.
        #[offset(12)]
        pub NumAllocations: UINT,
        /// In/out: one entry per allocation.
        #[offset(16)]
        pub pAllocationInfo: *mut DXGK_ALLOCATIONINFO,
        /// In/out: the driver's resource handle (set on the first call for a resource).
        #[offset(24)]
        pub hResource: HANDLE,
        /// In: flags.
        #[offset(32)]
        pub Flags: DXGK_CREATEALLOCATIONFLAGS,
    }
}

/// `DXGKDDI_CREATEALLOCATION` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
/// INOUT_PDXGKARG_CREATEALLOCATION pCreateAllocation)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_createallocation>
pub type PDXGKDDI_CREATEALLOCATION = DDI_FN<*mut DXGKARG_CREATEALLOCATION>;

// ---------------------------------------------------------------------------------------------
// DxgkDdiDestroyAllocation
// ---------------------------------------------------------------------------------------------

flag_word! {
    /// `DXGK_DESTROYALLOCATIONFLAGS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_destroyallocationflags>
    pub struct DXGK_DESTROYALLOCATIONFLAGS {
        /// Also destroy `hResource`.
        DestroyResource,
    }
}

c_type! {
    /// `DXGKARG_DESTROYALLOCATION`: argument of `DxgkDdiDestroyAllocation`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_destroyallocation>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_DESTROYALLOCATION {
        /// Elements of `pAllocationList`.
        #[offset(0)]
        pub NumAllocations: UINT,
        /// Driver allocation handles to free.
        #[offset(8)]
        pub pAllocationList: *const HANDLE,
        /// Driver resource handle (may be null).
        #[offset(16)]
        pub hResource: HANDLE,
        /// Flags.
        #[offset(24)]
        pub Flags: DXGK_DESTROYALLOCATIONFLAGS,
    }
}

/// `DXGKDDI_DESTROYALLOCATION` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
/// IN_CONST_PDXGKARG_DESTROYALLOCATION pDestroyAllocation)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_destroyallocation>
pub type PDXGKDDI_DESTROYALLOCATION = DDI_FN<*const DXGKARG_DESTROYALLOCATION>;

// ---------------------------------------------------------------------------------------------
// DxgkDdiDescribeAllocation
// ---------------------------------------------------------------------------------------------

flag_word! {
    /// `DXGK_DESCRIBEALLOCATIONFLAGS` (WIN8+).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_describeallocationflags>
    pub struct DXGK_DESCRIBEALLOCATIONFLAGS {
        /// The query is for a display-mode check.
        CheckDisplayMode,
    }
}

c_type! {
    /// `DXGKARG_DESCRIBEALLOCATION`: argument of `DxgkDdiDescribeAllocation`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_describeallocation>
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_DESCRIBEALLOCATION {
        /// In: driver allocation handle.
        #[offset(0)]
        pub hAllocation: HANDLE,
        /// Out: width.
        #[offset(8)]
        pub Width: UINT,
        /// Out: height.
        #[offset(12)]
        pub Height: UINT,
        /// Out: format.
        #[offset(16)]
        pub Format: D3DDDIFORMAT,
        /// Out: multisampling.
        #[offset(20)]
        pub MultisampleMethod: D3DDDI_MULTISAMPLINGMETHOD,
        /// Out: refresh rate of a primary.
        #[offset(28)]
        pub RefreshRate: D3DDDI_RATIONAL,
        /// Out: private format attribute.
        #[offset(36)]
        pub PrivateDriverFormatAttribute: UINT,
        /// In: flags (WIN8+).
        #[offset(40)]
        pub Flags: DXGK_DESCRIBEALLOCATIONFLAGS,
        /// Out: rotation (WIN8+).
        #[offset(44)]
        pub Rotation: D3DDDI_ROTATION,
    }
}

/// `DXGKDDI_DESCRIBEALLOCATION` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
/// INOUT_PDXGKARG_DESCRIBEALLOCATION pDescribeAllocation)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_describeallocation>
pub type PDXGKDDI_DESCRIBEALLOCATION = DDI_FN<*mut DXGKARG_DESCRIBEALLOCATION>;

// ---------------------------------------------------------------------------------------------
// DxgkDdiGetStandardAllocationDriverData
// ---------------------------------------------------------------------------------------------

c_enum! {
    /// `D3DKMDT_STANDARDALLOCATION_TYPE` (d3dkmdt.h): kind of standard allocation.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ne-d3dkmdt-_d3dkmdt_standardallocation_type>
    pub type D3DKMDT_STANDARDALLOCATION_TYPE = i32 {
        /// Shared primary surface.
        D3DKMDT_STANDARDALLOCATION_SHAREDPRIMARYSURFACE = 1,
        /// Shadow surface.
        D3DKMDT_STANDARDALLOCATION_SHADOWSURFACE,
        /// Staging surface.
        D3DKMDT_STANDARDALLOCATION_STAGINGSURFACE,
        /// GDI surface (WIN7+).
        D3DKMDT_STANDARDALLOCATION_GDISURFACE,
        /// Virtual GPU surface (WDDM 2.1+).
        D3DKMDT_STANDARDALLOCATION_VGPU,
    }
}

opaque_types! {
    /// `D3DKMDT_SHAREDPRIMARYSURFACEDATA`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ns-d3dkmdt-_d3dkmdt_sharedprimarysurfacedata>
    D3DKMDT_SHAREDPRIMARYSURFACEDATA;
    /// `D3DKMDT_SHADOWSURFACEDATA`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ns-d3dkmdt-_d3dkmdt_shadowsurfacedata>
    D3DKMDT_SHADOWSURFACEDATA;
    /// `D3DKMDT_STAGINGSURFACEDATA`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ns-d3dkmdt-_d3dkmdt_stagingsurfacedata>
    D3DKMDT_STAGINGSURFACEDATA;
    /// `D3DKMDT_GDISURFACEDATA`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ns-d3dkmdt-_d3dkmdt_gdisurfacedata>
    D3DKMDT_GDISURFACEDATA;
    /// `D3DKMDT_VIRTUALGPUSURFACEDATA`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ns-d3dkmdt-_d3dkmdt_virtualgpusurfacedata>
    D3DKMDT_VIRTUALGPUSURFACEDATA;
}

c_type! {
    /// Anonymous union of [`DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA`]: the description of the
    /// standard allocation, by `StandardAllocationType`.
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA_0 {
        /// [`D3DKMDT_STANDARDALLOCATION_SHAREDPRIMARYSURFACE`].
        pub pCreateSharedPrimarySurfaceData: *mut D3DKMDT_SHAREDPRIMARYSURFACEDATA,
        /// [`D3DKMDT_STANDARDALLOCATION_SHADOWSURFACE`].
        pub pCreateShadowSurfaceData: *mut D3DKMDT_SHADOWSURFACEDATA,
        /// [`D3DKMDT_STANDARDALLOCATION_STAGINGSURFACE`].
        pub pCreateStagingSurfaceData: *mut D3DKMDT_STAGINGSURFACEDATA,
        /// [`D3DKMDT_STANDARDALLOCATION_GDISURFACE`].
        pub pCreateGdiSurfaceData: *mut D3DKMDT_GDISURFACEDATA,
        /// [`D3DKMDT_STANDARDALLOCATION_VGPU`].
        pub pCreateVirtualGpuSurfaceData: *mut D3DKMDT_VIRTUALGPUSURFACEDATA,
    }
}
// Every arm is one pointer; any bit pattern is a valid raw pointer.
union_debug!(DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA_0 => pCreateGdiSurfaceData);

c_type! {
    /// `DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA`: argument of
    /// `DxgkDdiGetStandardAllocationDriverData`. Called twice: with null private-data pointers to
    /// learn the sizes, then with buffers of those sizes.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_getstandardallocationdriverdata>
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA {
        /// In: which standard allocation.
        #[offset(0)]
        pub StandardAllocationType: D3DKMDT_STANDARDALLOCATION_TYPE,
        /// In: its description.
        #[offset(8)]
        pub Anonymous: DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA_0,
        /// In/out: where to write the allocation private data, or null (size query).
        #[offset(16)]
        pub pAllocationPrivateDriverData: PVOID,
        /// Out: size of the allocation private data.
        #[offset(24)]
        pub AllocationPrivateDriverDataSize: UINT,
        /// In/out: where to write the resource private data, or null (size query).
        #[offset(32)]
        pub pResourcePrivateDriverData: PVOID,
        /// Out: size of the resource private data.
        #[offset(40)]
        pub ResourcePrivateDriverDataSize: UINT,
        /// In: physical adapter (WDDM 2.0+).
        #[offset(44)]
        pub PhysicalAdapterIndex: UINT,
    }
}

/// `DXGKDDI_GETSTANDARDALLOCATIONDRIVERDATA` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
/// INOUT_PDXGKARG_GETSTANDARDALLOCATIONDRIVERDATA pGetStandardAllocationDriverData)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_getstandardallocationdriverdata>
pub type PDXGKDDI_GETSTANDARDALLOCATIONDRIVERDATA =
    DDI_FN<*mut DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA>;

// ---------------------------------------------------------------------------------------------
// DxgkDdiOpenAllocation / DxgkDdiCloseAllocation (per device)
// ---------------------------------------------------------------------------------------------

c_type! {
    /// `DXGK_OPENALLOCATIONINFO`: one allocation of a `DxgkDdiOpenAllocation` call.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_openallocationinfo>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_OPENALLOCATIONINFO {
        /// In: Dxgkrnl's per-device handle (a 32-bit `D3DKMT_HANDLE`, not a pointer); pass it to
        /// `DxgkCbGetHandleData` to find the driver's allocation.
        #[offset(0)]
        pub hAllocation: D3DKMT_HANDLE,
        /// In/out: private data from the UMD.
        #[offset(8)]
        pub pPrivateDriverData: PVOID,
        /// In: its size.
        #[offset(16)]
        pub PrivateDriverDataSize: UINT,
        /// Out: the driver's per-device handle for the allocation.
        #[offset(24)]
        pub hDeviceSpecificAllocation: HANDLE,
    }
}

flag_word! {
    /// `DXGK_OPENALLOCATIONFLAGS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_openallocationflags>
    pub struct DXGK_OPENALLOCATIONFLAGS {
        /// The allocations are being created (0: opened, e.g. shared).
        Create,
        /// Opened read-only.
        ReadOnly,
    }
}

c_type! {
    /// `DXGKARG_OPENALLOCATION`: argument of `DxgkDdiOpenAllocation`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_openallocation>
    #[size(56)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_OPENALLOCATION {
        /// Elements of `pOpenAllocation`.
        #[offset(0)]
        pub NumAllocations: UINT,
        /// The allocations (the driver writes `hDeviceSpecificAllocation` into each even though
        /// the DDI's parameter is `const`).
        #[offset(8)]
        pub pOpenAllocation: *mut DXGK_OPENALLOCATIONINFO,
        /// Resource private data.
        #[offset(16)]
        pub pPrivateDriverData: PVOID,
        /// Its size.
        #[offset(24)]
        pub PrivateDriverSize: UINT,
        /// Flags.
        #[offset(28)]
        pub Flags: DXGK_OPENALLOCATIONFLAGS,
        /// Subresource index (WIN8+).
        #[offset(32)]
        pub SubresourceIndex: UINT,
        /// Out: offset of the subresource (shared GDI-compatible linear aperture allocations;
        /// WIN8+).
        #[offset(40)]
        pub SubresourceOffset: SIZE_T,
        /// Out: pitch (WIN8+).
        #[offset(48)]
        pub Pitch: UINT,
    }
}

/// `DXGKDDI_OPENALLOCATIONINFO` (the `DxgkDdiOpenAllocation` slot; PASSIVE_LEVEL):
/// `(IN_CONST_HANDLE hDevice, IN_CONST_PDXGKARG_OPENALLOCATION pOpenAllocation)`. First
/// argument is the driver's **device** handle, not the adapter's.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_openallocationinfo>
pub type PDXGKDDI_OPENALLOCATIONINFO = DDI_FN<*const DXGKARG_OPENALLOCATION>;

c_type! {
    /// `DXGKARG_CLOSEALLOCATION`: argument of `DxgkDdiCloseAllocation`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_closeallocation>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_CLOSEALLOCATION {
        /// Elements of `pOpenHandleList`.
        #[offset(0)]
        pub NumAllocations: UINT,
        /// `hDeviceSpecificAllocation` values returned by `DxgkDdiOpenAllocation`.
        #[offset(8)]
        pub pOpenHandleList: *const HANDLE,
    }
}

/// `DXGKDDI_CLOSEALLOCATION` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hDevice,
/// IN_CONST_PDXGKARG_CLOSEALLOCATION pCloseAllocation)`. First argument is the driver's
/// **device** handle.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_closeallocation>
pub type PDXGKDDI_CLOSEALLOCATION = DDI_FN<*const DXGKARG_CLOSEALLOCATION>;

zeroed_default!(
    DXGKARG_CREATEPROCESS,
    DXGKARG_SETROOTPAGETABLE,
    DXGK_ALLOCATIONUSAGEINFO1_0,
    DXGK_ALLOCATIONUSAGEINFO1,
    DXGK_ALLOCATIONUSAGEHINT,
    DXGK_ALLOCATIONINFO_0,
    DXGK_ALLOCATIONINFO_1,
    DXGK_ALLOCATIONINFO,
    DXGKARG_CREATEALLOCATION,
    DXGKARG_DESTROYALLOCATION,
    DXGKARG_DESCRIBEALLOCATION,
    DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA_0,
    DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA,
    DXGK_OPENALLOCATIONINFO,
    DXGKARG_OPENALLOCATION,
    DXGKARG_CLOSEALLOCATION,
);

// Slots of `DRIVER_INITIALIZATION_DATA` whose signatures are not bound yet (`init` re-exports
// them): binding one replaces its line with its argument block and prototype.
unbound_fn!(PDXGKDDI_ACQUIRESWIZZLINGRANGE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_acquireswizzlingrange");
unbound_fn!(PDXGKDDI_RELEASESWIZZLINGRANGE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_releaseswizzlingrange");
unbound_fn!(PDXGKDDI_VALIDATEUPDATEALLOCATIONPROPERTY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_validateupdateallocationproperty");
unbound_fn!(PDXGKDDI_SETALLOCATIONBACKINGSTORE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setallocationbackingstore");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::macros::assert_fields_fill_word;

    #[test]
    fn flag_words_are_contiguous() {
        assert_fields_fill_word!(
            D3DDDI_SEGMENTPREFERENCE,
            DXGK_SEGMENTBANKPREFERENCE,
            DXGK_CREATEPROCESSFLAGS,
            DXGK_ALLOCATIONINFOFLAGS,
            DXGK_ALLOCATIONINFOFLAGS_WDDM2_0,
            DXGK_ALLOCATIONINFOFLAGS2,
            DXGK_ALLOCATIONUSAGEINFO1_Flags,
            DXGK_CREATEALLOCATIONFLAGS,
            DXGK_DESTROYALLOCATIONFLAGS,
            DXGK_DESCRIBEALLOCATIONFLAGS,
            DXGK_OPENALLOCATIONFLAGS
        );
    }

    /// Masks from the header's comments.
    #[test]
    fn documented_masks() {
        let p = D3DDDI_SEGMENTPREFERENCE::default()
            .with(D3DDDI_SEGMENTPREFERENCE::SegmentId1, 0x1F)
            .with(D3DDDI_SEGMENTPREFERENCE::Direction4, 1);
        assert_eq!(p.Value, 0x7C0 | 0x2000_0000);
        let b = DXGK_SEGMENTBANKPREFERENCE::default().with(DXGK_SEGMENTBANKPREFERENCE::Bank3, 0x7F);
        assert_eq!(b.Value, 0x7F00_0000);
        let f = DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::default()
            .with(DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::CpuVisible, 1)
            .with(DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::DisableLargePageMapping, 1)
            .with(
                DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::ExplicitResidencyNotification,
                1,
            )
            .with(DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::CpuVisibleOnDemand, 1);
        assert_eq!(f.Value, 0x1 | 0x80 | 0x1_0000 | 0x4_0000);
        assert_eq!(
            DXGK_ALLOCATIONINFOFLAGS::mask(DXGK_ALLOCATIONINFOFLAGS::HistoryBuffer),
            0x4000
        );
        let pf = DXGK_CREATEPROCESSFLAGS::default()
            .with(DXGK_CREATEPROCESSFLAGS::SystemProcess, 1)
            .with(DXGK_CREATEPROCESSFLAGS::VirtualMachineWorkerProcess, 1);
        assert_eq!(pf.Value, 0b1001);
        assert_eq!(D3DKMDT_STANDARDALLOCATION_VGPU, 5);
    }

    #[test]
    fn allocation_info_flag_union_shares_the_word() {
        let mut info = DXGK_ALLOCATIONINFO::default();
        info.Anonymous2.FlagsWddm2 = DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::default()
            .with(DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::CpuVisible, 1);
        // SAFETY: both arms are the same u32 word.
        assert!(unsafe { info.Anonymous2.Flags }.is_set(DXGK_ALLOCATIONINFOFLAGS::CpuVisible));
        assert!(info.hAllocation.is_null());
        assert_eq!(info.Flags2.Value, 0);
    }
}
