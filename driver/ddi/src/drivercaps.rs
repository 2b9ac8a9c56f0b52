//! `DXGK_DRIVERCAPS` and its members (d3dkmddi.h): what the driver tells the OS it can do,
//! answered to `DXGKQAITYPE_DRIVERCAPS`. Reached through [`crate::adapter`].

use crate::basic::*;
use crate::macros::{bitfield, c_enum, c_type, flag_word, layout, reserved_flags, union_debug};

// ---------------------------------------------------------------------------------------------
// DXGK_DRIVERCAPS and its members
// ---------------------------------------------------------------------------------------------

flag_word! {
    /// `DXGK_POINTERFLAGS`: hardware cursor formats.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_pointerflags>
    pub struct DXGK_POINTERFLAGS {
        /// Monochrome cursor.
        Monochrome,
        /// Colour cursor.
        Color,
        /// Masked colour cursor.
        MaskedColor,
    }
}

flag_word! {
    /// `DXGK_GAMMARAMPCAPS` (pre-WDDM 2.2 view of the gamma/colour-transform caps word).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_gammarampcaps>
    pub struct DXGK_GAMMARAMPCAPS {
        /// 256x3x16 gamma ramp.
        Gamma_Rgb256x3x16,
        /// DXGI-1 gamma ramp.
        Gamma_Dxgi1,
    }
}

flag_word! {
    /// `DXGK_COLORTRANSFORMCAPS` (WDDM 2.2+ view of the same word).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_colortransformcaps>
    // UNVERIFIED: names and positions of the bits after Gamma_Dxgi1 (only the 4-byte size matters
    // for the DRIVERCAPS layout; the render-only driver leaves the word zero).
    pub struct DXGK_COLORTRANSFORMCAPS {
        /// 256x3x16 gamma ramp.
        Gamma_Rgb256x3x16,
        /// DXGI-1 gamma ramp.
        Gamma_Dxgi1,
        /// 3x4 colour matrix.
        Transformation_3x4Matrix,
        /// 3x4 colour matrix in wide colour gamut.
        Transformation_3x4Matrix_WCG,
    }
}

c_type! {
    /// Anonymous `GammaRampCaps` / `ColorTransformCaps` union of [`DXGK_DRIVERCAPS`].
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGK_DRIVERCAPS_0 {
        /// Pre-WDDM 2.2 view.
        pub GammaRampCaps: DXGK_GAMMARAMPCAPS,
        /// WDDM 2.2+ view.
        pub ColorTransformCaps: DXGK_COLORTRANSFORMCAPS,
    }
}

impl Default for DXGK_DRIVERCAPS_0 {
    fn default() -> Self {
        Self {
            ColorTransformCaps: DXGK_COLORTRANSFORMCAPS::default(),
        }
    }
}

// Both arms are a transparent u32; every bit pattern is valid.
union_debug!(DXGK_DRIVERCAPS_0 => ColorTransformCaps);

bitfield! {
    /// `DXGK_PRESENTATIONCAPS`: presentation capabilities.
    ///
    /// Order and widths from the reference page's syntax block (the Windows 8+ arm of its
    /// `#if`). A render-only driver reports at most `SupportKernelModeCommandBuffer` and
    /// `NoCacheCoherentApertureMemory`.
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_presentationcaps>
    pub struct DXGK_PRESENTATIONCAPS: u32 {
        /// No primary-to-primary bitblt.
        NoScreenToScreenBlt: 0, 1;
        /// No bitblt between overlapping rectangles of the primary.
        NoOverlapScreenBlt: 1, 1;
        /// Kernel-mode command buffers (`DxgkDdiRenderKm`).
        SupportKernelModeCommandBuffer: 2, 1;
        /// No alpha blend within one bitmap.
        NoSameBitmapAlphaBlend: 3, 1;
        /// No stretch blt within one bitmap.
        NoSameBitmapStretchBlt: 4, 1;
        /// No transparent blt within one bitmap.
        NoSameBitmapTransparentBlt: 5, 1;
        /// No overlapped alpha blend within one bitmap.
        NoSameBitmapOverlappedAlphaBlend: 6, 1;
        /// No overlapped stretch blt within one bitmap.
        NoSameBitmapOverlappedStretchBlt: 7, 1;
        /// CDD/DWM interop.
        DriverSupportsCddDwmInterop: 8, 1;
        /// Reserved.
        Reserved0: 9, 1;
        /// Log2 of the GDI surface alignment.
        AlignmentShift: 10, 4;
        /// Log2 of the maximum texture width.
        MaxTextureWidthShift: 14, 3;
        /// Log2 of the maximum texture height.
        MaxTextureHeightShift: 17, 3;
        /// Every blt ROP.
        SupportAllBltRops: 20, 1;
        /// Mirroring stretch blt.
        SupportMirrorStretchBlt: 21, 1;
        /// Monochrome stretch-blt modes.
        SupportMonoStretchBltModes: 22, 1;
        /// Staging rectangles start pitch-aligned.
        StagingRectStartPitchAligned: 23, 1;
        /// No bitblt within one bitmap.
        NoSameBitmapBitBlt: 24, 1;
        /// No overlapped bitblt within one bitmap.
        NoSameBitmapOverlappedBitBlt: 25, 1;
        /// Reserved.
        Reserved1: 26, 1;
        /// No temporary surface for ClearType blends.
        NoTempSurfaceForClearTypeBlend: 27, 1;
        /// Software device bitmaps.
        SupportSoftwareDeviceBitmaps: 28, 1;
        /// The aperture segments are not cache-coherent with the CPU (the GPU does not snoop
        /// CPU caches).
        NoCacheCoherentApertureMemory: 29, 1;
        /// Linear heap.
        SupportLinearHeap: 30, 1;
        /// Reserved.
        Reserved: 31, 1;
    }
}
layout!(DXGK_PRESENTATIONCAPS, size = 4);

flag_word! {
    /// `DXGK_FLIPCAPS`: flip capabilities.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_flipcaps>
    pub struct DXGK_FLIPCAPS {
        /// Flip on vsync without stalling the pipeline.
        FlipOnVSyncWithNoWait,
        /// MMIO flip on vsync.
        FlipOnVSyncMmIo,
        /// Flip intervals supported.
        FlipInterval,
        /// Immediate MMIO flip.
        FlipImmediateMmIo,
        /// Independent flip.
        FlipIndependent,
        /// `DxgkDdiPresent` is called for independent flips.
        DdiPresentForIFlip,
        /// Immediate flip on hsync.
        FlipImmediateOnHSync,
    }
}

bitfield! {
    /// `DXGK_VIDSCHCAPS`: GPU scheduler capabilities (`DXGK_DRIVERCAPS::SchedulingCaps`).
    ///
    /// Order checked against two copies of d3dkmddi.h and the reference page.
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_vidschcaps>
    pub struct DXGK_VIDSCHCAPS: u32 {
        /// The driver handles several engines (nodes).
        MultiEngineAware: 0, 1;
        /// VSync power saving.
        VSyncPowerSaveAware: 1, 1;
        /// Mid-command-buffer preemption aware (WIN8+).
        PreemptionAware: 2, 1;
        /// No DMA patching (WIN8+).
        NoDmaPatching: 3, 1;
        /// `DxgkDdiCancelCommand` implemented (WIN8+).
        CancelCommandAware: 4, 1;
        /// The GPU cannot write 64-bit fence values atomically (WDDM 2.0+).
        No64BitAtomics: 5, 1;
        /// `DxgkDdiPreemptCommand` may be called at low IRQL (WDDM 2.0+).
        LowIrqlPreemptCommand: 6, 1;
        /// Hardware queue packet capabilities (WDDM 2.3+).
        HwQueuePacketCap: 7, 4;
        /// Native GPU fences supported (WDDM 3.1+); only with `DXGK_FEATURE_NATIVE_FENCE` enabled.
        NativeGpuFence: 11, 1;
        /// The native-fence-signaled interrupt names the running hardware queue (WDDM 3.1+).
        OptimizedNativeFenceSignaledInterrupt: 12, 1;
        /// Reserved.
        Reserved: 13, 19;
    }
}
layout!(DXGK_VIDSCHCAPS, size = 4);
/// `DXGK_SCHEDULINGCAPS` (alias of [`DXGK_VIDSCHCAPS`]).
pub type DXGK_SCHEDULINGCAPS = DXGK_VIDSCHCAPS;

flag_word! {
    /// The bitfield word of [`DXGK_VIDMMCAPS`] (anonymous union in C).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_vidmmcaps>
    pub struct DXGK_VIDMMCAPS_0 {
        /// Out-of-order lock.
        OutOfOrderLock,
        /// Dedicated paging engine (WIN7+).
        DedicatedPagingEngine,
        /// Paging engine can swizzle (WIN7+).
        PagingEngineCanSwizzle,
        /// Section-backed primary (WIN7+).
        SectionBackedPrimary,
        /// Cross-adapter resources (WDDM 1.3+).
        CrossAdapterResource,
        /// GPU virtual addressing (WDDM 2.0+).
        VirtualAddressingSupported,
        /// GpuMmu model (WDDM 2.0+).
        GpuMmuSupported,
        /// IoMmu model (WDDM 2.0+).
        IoMmuSupported,
        /// Replicate GDI content.
        ReplicateGdiContent,
        /// Non-CPU-visible primary.
        NonCpuVisiblePrimary,
        /// Paravirtualisation.
        ParavirtualizationSupported,
        /// IoMmu secure mode supported.
        IoMmuSecureModeSupported,
        /// Disable self-refresh VRAM in S3.
        DisableSelfRefreshVRAMInS3,
        /// IoMmu secure mode required.
        IoMmuSecureModeRequired,
        /// `MapApertureSegment2` paging operation (WDDM 2.9+).
        MapAperture2Supported,
        /// Cross-adapter textures.
        CrossAdapterResourceTexture,
        /// Cross-adapter scan-out.
        CrossAdapterResourceScanout,
        /// VRAM always powered.
        AlwaysPoweredVRAM,
    }
}

c_type! {
    /// `DXGK_VIDMMCAPS`: video memory manager capabilities
    /// (`DXGK_DRIVERCAPS::MemoryManagementCaps`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_vidmmcaps>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_VIDMMCAPS {
        /// The capability bits.
        #[offset(0)]
        pub Anonymous: DXGK_VIDMMCAPS_0,
        /// Node used for paging.
        #[offset(4)]
        pub PagingNode: UINT,
    }
}

/// `DXGK_MAX_ASYMETRICAL_PROCESSING_NODES`.
pub const DXGK_MAX_ASYMETRICAL_PROCESSING_NODES: usize = 64;

c_type! {
    /// `DXGK_GPUENGINETOPOLOGY`: number of nodes.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_gpuenginetopology>
    #[size(260)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct DXGK_GPUENGINETOPOLOGY {
        /// Number of nodes (parallel engines).
        pub NbAsymetricProcessingNodes: UINT,
        /// Reserved.
        #[offset(4)]
        pub Reserved: [UINT; DXGK_MAX_ASYMETRICAL_PROCESSING_NODES],
    }
}

impl Default for DXGK_GPUENGINETOPOLOGY {
    fn default() -> Self {
        Self {
            NbAsymetricProcessingNodes: 0,
            Reserved: [0; DXGK_MAX_ASYMETRICAL_PROCESSING_NODES],
        }
    }
}

c_enum! {
    /// `DXGK_WDDMVERSION` (d3dkmddi.h).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_drivercaps>
    pub type DXGK_WDDMVERSION = i32 {
        /// WDDM 2.9 (values through 3.1 checked against the 10.0.22621 d3dkmddi.h).
        DXGKDDI_WDDMv2_9 = 0x2900,
        /// WDDM 3.0.
        DXGKDDI_WDDMv3_0 = 0x3000,
        /// WDDM 3.1.
        DXGKDDI_WDDMv3_1 = 0x3100,
        /// WDDM 3.2 (Windows 11 24H2): the enumeration's pattern (major in the high byte, minor in
        /// the next nibble), and the value WDDM 3.2 drivers built with the 10.0.26100 WDK report.
        // wdk-layout-check: skip: 10.0.22621 ends at DXGKDDI_WDDMv3_1
        DXGKDDI_WDDMv3_2 = 0x3200,
    }
}

c_type! {
    /// `DXGK_VIRTUALADDRESSCAPS_DEPRECATED`: reserved (`DXGK_DRIVERCAPS::Reserved`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/display/dxgk-virtualaddresscaps>
    #[size(28)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_VIRTUALADDRESSCAPS_DEPRECATED {
        /// Flag word.
        pub Value: UINT,
        /// Reserved.
        pub VirtualAddressBitCount: UINT,
        /// Reserved.
        pub PageTableCoverageBitCount: UINT,
        /// Reserved.
        pub PageDirectoryEntrySize: UINT,
        /// Reserved.
        pub PageDirectorySegment: UINT,
        /// Reserved.
        pub PageTableSegment: UINT,
        /// Reserved.
        #[offset(24)]
        pub IdealGPUPageSize: UINT,
    }
}

c_type! {
    /// One half of [`DXGK_DMABUFFERCAPS_DEPRECATED`].
    #[size(80)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_DMABUFFERCAPS_DEPRECATED_0 {
        /// Reserved.
        pub Size: UINT,
        /// Reserved.
        pub PrivateDriverDataSize: UINT,
        /// Reserved.
        pub SegmentId: UINT,
        /// Reserved.
        pub AllocationGroup: UINT,
        /// Reserved.
        #[offset(16)]
        pub Reserved: [UINT; 16],
    }
}

c_type! {
    /// `DXGK_DMABUFFERCAPS_DEPRECATED`: reserved (`DXGK_DRIVERCAPS::Reserved1`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/display/dxgk-dmabuffercaps>
    #[size(160)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_DMABUFFERCAPS_DEPRECATED {
        /// Reserved.
        pub PresentDmaBuffer: DXGK_DMABUFFERCAPS_DEPRECATED_0,
        /// Reserved.
        #[offset(80)]
        pub PagingDmaBuffer: DXGK_DMABUFFERCAPS_DEPRECATED_0,
    }
}

c_enum! {
    /// `D3DKMDT_GRAPHICS_PREEMPTION_GRANULARITY` (d3dkmdt.h).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ne-d3dkmdt-_d3dkmdt_graphics_preemption_granularity>
    pub type D3DKMDT_GRAPHICS_PREEMPTION_GRANULARITY = i32 {
        /// No preemption.
        D3DKMDT_GRAPHICS_PREEMPTION_NONE,
        /// DMA-buffer boundary.
        D3DKMDT_GRAPHICS_PREEMPTION_DMA_BUFFER_BOUNDARY = 100,
        /// Primitive boundary.
        D3DKMDT_GRAPHICS_PREEMPTION_PRIMITIVE_BOUNDARY = 200,
        /// Triangle boundary.
        D3DKMDT_GRAPHICS_PREEMPTION_TRIANGLE_BOUNDARY = 300,
        /// Pixel boundary.
        D3DKMDT_GRAPHICS_PREEMPTION_PIXEL_BOUNDARY = 400,
        /// Shader boundary.
        D3DKMDT_GRAPHICS_PREEMPTION_SHADER_BOUNDARY = 500,
    }

    /// `D3DKMDT_COMPUTE_PREEMPTION_GRANULARITY` (d3dkmdt.h).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ne-d3dkmdt-_d3dkmdt_compute_preemption_granularity>
    pub type D3DKMDT_COMPUTE_PREEMPTION_GRANULARITY = i32 {
        /// No preemption.
        D3DKMDT_COMPUTE_PREEMPTION_NONE,
        /// DMA-buffer boundary.
        D3DKMDT_COMPUTE_PREEMPTION_DMA_BUFFER_BOUNDARY = 100,
        /// Dispatch boundary.
        D3DKMDT_COMPUTE_PREEMPTION_DISPATCH_BOUNDARY = 200,
        /// Thread-group boundary.
        D3DKMDT_COMPUTE_PREEMPTION_THREAD_GROUP_BOUNDARY = 300,
        /// Thread boundary.
        D3DKMDT_COMPUTE_PREEMPTION_THREAD_BOUNDARY = 400,
        /// Shader boundary.
        D3DKMDT_COMPUTE_PREEMPTION_SHADER_BOUNDARY = 500,
    }
}
// The granularity values 0..500 are checked against the 10.0.22621 d3dkmdt.h by the layout
// check (build.rs).

c_type! {
    /// `D3DKMDT_PREEMPTION_CAPS` (d3dkmdt.h).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ns-d3dkmdt-_d3dkmdt_preemption_caps>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct D3DKMDT_PREEMPTION_CAPS {
        /// Graphics preemption granularity.
        pub GraphicsPreemptionGranularity: D3DKMDT_GRAPHICS_PREEMPTION_GRANULARITY,
        /// Compute preemption granularity.
        #[offset(4)]
        pub ComputePreemptionGranularity: D3DKMDT_COMPUTE_PREEMPTION_GRANULARITY,
    }
}

flag_word! {
    /// The `MiscCaps` word of [`DXGK_DRIVERCAPS`] (anonymous type in C).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_drivercaps>
    pub struct DXGK_DRIVERCAPS_MiscCaps {
        /// Null context in present DDIs (WDDM 2.4+).
        SupportContextlessPresent,
        /// Hot-pluggable adapter (WDDM 2.4+).
        Detachable,
        /// Not for D3D applications on the host (WDDM 2.5+).
        VirtualGpuOnly,
        /// Compute-only adapter (WDDM 2.6+).
        ComputeOnly,
        /// Per-source vsync control (WDDM 2.7+).
        IndependentVidPnVSyncControl,
        /// See the reference page.
        NoHybridDiscreteDListDllSupport,
        /// See the reference page.
        DisplayableSupport,
        /// See the reference page.
        NoHybridDiscreteDListDllMuxSupport,
        /// See the reference page.
        CursorDoesNotSupportXorBlendWithMultiPlaneOverlay,
    }
}

reserved_flags! {
    /// `DXGK_HWQUEUEDFLIP_CAPS` (WDDM 3.0+): hardware flip queue capabilities, all reserved.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgk_hwqueuedflip_caps>
    DXGK_HWQUEUEDFLIP_CAPS;
}

c_type! {
    /// `DXGK_DRIVERCAPS`: the adapter capabilities returned for `DXGKQAITYPE_DRIVERCAPS`, laid out
    /// as the WDDM 3.2 headers declare it (592 bytes on x64).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_drivercaps>
    #[size(592)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct DXGK_DRIVERCAPS {
        /// Highest physical address the GPU can reach.
        #[offset(0)]
        pub HighestAcceptableAddress: PHYSICAL_ADDRESS,
        /// Highest allocation-list slot ID.
        #[offset(8)]
        pub MaxAllocationListSlotId: UINT,
        /// Aperture commit limit in bytes.
        #[offset(16)]
        pub ApertureSegmentCommitLimit: SIZE_T,
        /// Maximum cursor width.
        #[offset(24)]
        pub MaxPointerWidth: UINT,
        /// Maximum cursor height.
        #[offset(28)]
        pub MaxPointerHeight: UINT,
        /// Cursor formats.
        #[offset(32)]
        pub PointerCaps: DXGK_POINTERFLAGS,
        /// MSI message number used for DxgkCbNotifyInterrupt.
        #[offset(36)]
        pub InterruptMessageNumber: UINT,
        /// Number of swizzling ranges.
        #[offset(40)]
        pub NumberOfSwizzlingRanges: UINT,
        /// Maximum legacy overlays.
        #[offset(44)]
        pub MaxOverlays: UINT,
        /// `GammaRampCaps` / `ColorTransformCaps`.
        #[offset(48)]
        pub Anonymous: DXGK_DRIVERCAPS_0,
        /// Presentation capabilities.
        #[offset(52)]
        pub PresentationCaps: DXGK_PRESENTATIONCAPS,
        /// Flips that can be queued on vsync.
        #[offset(56)]
        pub MaxQueuedFlipOnVSync: UINT,
        /// Flip capabilities.
        #[offset(60)]
        pub FlipCaps: DXGK_FLIPCAPS,
        /// Scheduler capabilities.
        #[offset(64)]
        pub SchedulingCaps: DXGK_VIDSCHCAPS,
        /// Memory manager capabilities.
        #[offset(68)]
        pub MemoryManagementCaps: DXGK_VIDMMCAPS,
        /// Node topology.
        #[offset(76)]
        pub GpuEngineTopology: DXGK_GPUENGINETOPOLOGY,
        /// Reserved for WIN7+ drivers.
        #[offset(336)]
        pub WDDMVersion: DXGK_WDDMVERSION,
        /// Reserved.
        #[offset(340)]
        pub Reserved: DXGK_VIRTUALADDRESSCAPS_DEPRECATED,
        /// Reserved.
        #[offset(368)]
        pub Reserved1: DXGK_DMABUFFERCAPS_DEPRECATED,
        /// Preemption granularity (WIN8+).
        #[offset(528)]
        pub PreemptionCaps: D3DKMDT_PREEMPTION_CAPS,
        /// Non-VGA support (WIN8+).
        #[offset(536)]
        pub SupportNonVGA: BOOLEAN,
        /// Smooth rotation (WIN8+).
        #[offset(537)]
        pub SupportSmoothRotation: BOOLEAN,
        /// Per-engine TDR: obliges QueryDependentEngineGroup, QueryEngineStatus, ResetEngine
        /// (WIN8+).
        #[offset(538)]
        pub SupportPerEngineTDR: BOOLEAN,
        /// Direct flip (WIN8+).
        #[offset(539)]
        pub SupportDirectFlip: BOOLEAN,
        /// Multiplane overlay (WDDM 1.3+).
        #[offset(540)]
        pub SupportMultiPlaneOverlay: BOOLEAN,
        /// Runtime power management (WIN8+).
        #[offset(541)]
        pub SupportRuntimePowerManagement: BOOLEAN,
        /// Surprise removal in hibernation (WIN8+).
        #[offset(542)]
        pub SupportSurpriseRemovalInHibernation: BOOLEAN,
        /// Hybrid discrete GPU (WDDM 1.3+).
        #[offset(543)]
        pub HybridDiscrete: BOOLEAN,
        /// Maximum overlay planes (WDDM 1.3+).
        #[offset(544)]
        pub MaxOverlayPlanes: UINT,
        /// Hybrid integrated GPU.
        #[offset(548)]
        pub HybridIntegrated: BOOLEAN,
        /// Start of the GPU VA range the driver reserves for itself.
        #[offset(552)]
        pub InternalGpuVirtualAddressRangeStart: D3DGPU_VIRTUAL_ADDRESS,
        /// End of that range.
        #[offset(560)]
        pub InternalGpuVirtualAddressRangeEnd: D3DGPU_VIRTUAL_ADDRESS,
        /// Surprise removal.
        #[offset(568)]
        pub SupportSurpriseRemoval: BOOLEAN,
        /// MPO immediate flip.
        #[offset(569)]
        pub SupportMultiPlaneOverlayImmediateFlip: BOOLEAN,
        /// Cursor scaled with plane 0.
        #[offset(570)]
        pub CursorScaledWithMultiPlaneOverlayPlane0: BOOLEAN,
        /// Hybrid ACPI chaining required.
        #[offset(571)]
        pub HybridAcpiChainingRequired: BOOLEAN,
        /// MPO flips per vsync.
        #[offset(572)]
        pub MaxQueuedMultiPlaneOverlayFlipVSync: UINT,
        /// Miscellaneous capability bits.
        #[offset(576)]
        pub MiscCaps: DXGK_DRIVERCAPS_MiscCaps,
        /// Hardware flip queue depth (WDDM 3.0+).
        #[offset(580)]
        pub MaxHwQueuedFlips: UINT,
        /// Hardware flip queue capabilities (WDDM 3.0+).
        #[offset(584)]
        pub HwQueuedFlipCaps: DXGK_HWQUEUEDFLIP_CAPS,
    }
}

flag_word! {
    /// `DXGK_GPUCLOCKDATA_FLAGS` (d3dkmdt.h, WDDM 2.4+).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ns-d3dkmdt-_dxgk_gpuclockdata_flags>
    pub struct DXGK_GPUCLOCKDATA_FLAGS {
        /// The GPU counter was read from the context management processor's clock.
        ContextManagementProcessor,
    }
}

c_type! {
    /// `DXGK_GPUCLOCKDATA` (d3dkmdt.h; `DXGKARG_CALIBRATEGPUCLOCK` is its typedef): output of
    /// `DxgkDdiCalibrateGpuClock`, one GPU clock sample taken as close as possible to one CPU
    /// (QueryPerformanceCounter) sample.
    ///
    /// Checked against the 10.0.22621 headers: the three counters, then `Flags` (WDDM 2.4+), all
    /// inside d3dkmdt.h's `#pragma pack(push, 1)`, so 28 bytes with no tail padding (a 32-byte
    /// write would run past the OS's buffer).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ns-d3dkmdt-_dxgk_gpuclockdata>
    #[size(28)]
    #[repr(C, packed(1))]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGK_GPUCLOCKDATA {
        /// Out: frequency of the GPU clock in Hz.
        #[offset(0)]
        pub GpuFrequency: UINT64,
        /// Out: the GPU clock counter.
        #[offset(8)]
        pub GpuClockCounter: UINT64,
        /// Out: the CPU clock (QueryPerformanceCounter) taken at the same moment.
        #[offset(16)]
        pub CpuClockCounter: UINT64,
        /// Out: how the GPU counter was taken.
        #[offset(24)]
        pub Flags: DXGK_GPUCLOCKDATA_FLAGS,
    }
}
const _: () = assert!(core::mem::align_of::<DXGK_GPUCLOCKDATA>() == 1);

c_type! {
    /// `DXGKARG_SETSTABLEPOWERSTATE`: whether the OS asks for a stable power state (fixed clocks,
    /// for profiling); `Enabled` is a `BOOL`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_setstablepowerstate>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGKARG_SETSTABLEPOWERSTATE {
        /// TRUE: keep the GPU at a stable (fixed) power state; FALSE: back to normal.
        #[offset(0)]
        pub Enabled: i32,
    }
}

/// `DXGKARG_CALIBRATEGPUCLOCK`: the header's typedef of [`DXGK_GPUCLOCKDATA`].
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_calibrategpuclock>
pub type DXGKARG_CALIBRATEGPUCLOCK = DXGK_GPUCLOCKDATA;
