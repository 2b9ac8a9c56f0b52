//! Adapter bring-up types: start info, device info, child devices, `DxgkDdiQueryAdapterInfo`
//! and `DXGK_DRIVERCAPS` (dispmprt.h, d3dkmddi.h, d3dkmdt.h).

use core::ffi::c_void;

use crate::basic::*;
use crate::macros::{
    bitfield, c_enum, c_type, extern_fn, flag_word, layout, opaque_types, reserved_flags,
    union_debug,
};

c_type! {
    /// `DXGK_START_INFO`: passed to `DxgkDdiStartDevice`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgk_start_info>
    #[size(28)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_START_INFO {
        /// Size of the DMA queue the OS wants (entries).
        #[offset(0)]
        pub RequiredDmaQueueEntry: ULONG,
        /// GUID identifying the adapter.
        #[offset(4)]
        pub AdapterGuid: GUID,
        /// LUID identifying the adapter (WIN8+).
        #[offset(20)]
        pub AdapterLuid: LUID,
    }
}
/// `PDXGK_START_INFO`.
pub type PDXGK_START_INFO = *mut DXGK_START_INFO;

c_enum! {
    /// `DOCKING_STATE` (dispmprt.h).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgk_device_info>
    pub type DOCKING_STATE = i32 {
        /// Docking not supported.
        DockStateUnsupported,
        /// Undocked.
        DockStateUnDocked,
        /// Docked.
        DockStateDocked,
        /// Unknown.
        DockStateUnknown,
    }
}

c_type! {
    /// `DXGK_DEVICE_INFO`: returned by `DxgkCbGetDeviceInformation`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgk_device_info>
    #[size(80)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_DEVICE_INFO {
        /// The driver's own adapter context (as returned by `DxgkDdiAddDevice`).
        #[offset(0)]
        pub MiniportDeviceContext: PVOID,
        /// The PDO.
        #[offset(8)]
        pub PhysicalDeviceObject: PDEVICE_OBJECT,
        /// Registry path of the device's software key.
        #[offset(16)]
        pub DeviceRegistryPath: UNICODE_STRING,
        /// Translated hardware resources (BARs, interrupts).
        #[offset(32)]
        pub TranslatedResourceList: PCM_RESOURCE_LIST,
        /// Size of system memory.
        #[offset(40)]
        pub SystemMemorySize: LARGE_INTEGER,
        /// Highest physical address.
        #[offset(48)]
        pub HighestPhysicalAddress: PHYSICAL_ADDRESS,
        /// AGP aperture base (unused by PCIe devices).
        #[offset(56)]
        pub AgpApertureBase: PHYSICAL_ADDRESS,
        /// AGP aperture size.
        #[offset(64)]
        pub AgpApertureSize: SIZE_T,
        /// Docking state.
        #[offset(72)]
        pub DockingState: DOCKING_STATE,
    }
}
/// `PDXGK_DEVICE_INFO`.
impl Default for DXGK_DEVICE_INFO {
    /// All-zero, the state Dxgkrnl's callback fills in.
    fn default() -> Self {
        Self {
            MiniportDeviceContext: core::ptr::null_mut(),
            PhysicalDeviceObject: core::ptr::null_mut(),
            DeviceRegistryPath: UNICODE_STRING {
                Length: 0,
                MaximumLength: 0,
                Buffer: core::ptr::null_mut(),
            },
            TranslatedResourceList: core::ptr::null_mut(),
            SystemMemorySize: LARGE_INTEGER { QuadPart: 0 },
            HighestPhysicalAddress: LARGE_INTEGER { QuadPart: 0 },
            AgpApertureBase: LARGE_INTEGER { QuadPart: 0 },
            AgpApertureSize: 0,
            DockingState: 0,
        }
    }
}

pub type PDXGK_DEVICE_INFO = *mut DXGK_DEVICE_INFO;

c_type! {
    /// `LINKED_DEVICE`: linked-adapter chain description (`DxgkDdiLinkDevice`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_linked_device>
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct LINKED_DEVICE {
        /// Chain identifier.
        #[offset(0)]
        pub ChainUid: ULONG,
        /// Number of adapters in the chain.
        #[offset(4)]
        pub NumberOfLinksInChain: ULONG,
        /// Whether this adapter leads the chain.
        #[offset(8)]
        pub LeadLink: BOOLEAN,
    }
}

c_enum! {
    /// `DXGK_EVENT_TYPE`: kind of ACPI notification (`DxgkDdiNotifyAcpiEvent`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_notify_acpi_event>
    pub type DXGK_EVENT_TYPE = i32 {
        /// Undefined.
        DxgkUndefinedEvent,
        /// ACPI event.
        DxgkAcpiEvent,
        /// Power state event.
        DxgkPowerStateEvent,
        /// Docking event.
        DxgkDockingEvent,
        /// Chained ACPI event.
        DxgkChainedAcpiEvent,
    }

    /// `DXGK_SURPRISE_REMOVAL_TYPE` (dispmprt.h): why `DxgkDdiNotifySurpriseRemoval` is called.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ne-dispmprt-_dxgk_surprise_removal_type>
    pub type DXGK_SURPRISE_REMOVAL_TYPE = i32 {
        /// The device disappeared while the system was in a low-power state.
        DxgkRemovalHibernation,
        /// The device was unplugged or lost power while running.
        DxgkRemovalPnPNotify,
    }
}

extern_fn! {
    /// `DXGKDDI_NOTIFY_SURPRISE_REMOVAL`: `(PVOID MiniportDeviceContext, DXGK_SURPRISE_REMOVAL_TYPE
    /// RemovalType)`. A level-zero DDI (it may run while other DDIs run and work is pending); the
    /// hardware is gone, so the driver must not touch it from then on.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_notify_surprise_removal>
    pub type PDXGKDDI_NOTIFY_SURPRISE_REMOVAL = fn(
        MiniportDeviceContext: PVOID,
        RemovalType: DXGK_SURPRISE_REMOVAL_TYPE,
    ) -> NTSTATUS;
}

c_enum! {
    /// `DXGK_CHILD_DEVICE_TYPE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ne-dispmprt-_dxgk_child_device_type>
    pub type DXGK_CHILD_DEVICE_TYPE = i32 {
        /// Uninitialised.
        TypeUninitialized,
        /// A video output.
        TypeVideoOutput,
        /// Another kind of child.
        TypeOther,
        /// An integrated display.
        TypeIntegratedDisplay,
    }
}

c_type! {
    /// `DXGK_VIDEO_OUTPUT_CAPABILITIES` (the `VideoOutput` arm of [`DXGK_CHILD_CAPABILITIES_0`]).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgk_video_output_capabilities>
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_VIDEO_OUTPUT_CAPABILITIES {
        /// `D3DKMDT_VIDEO_OUTPUT_TECHNOLOGY` value.
        pub InterfaceTechnology: i32,
        /// `D3DKMDT_MONITOR_ORIENTATION_AWARENESS` value.
        #[offset(4)]
        pub MonitorOrientationAwareness: i32,
        /// Whether SDTV modes are supported.
        #[offset(8)]
        pub SupportsSdtvModes: BOOLEAN,
    }
}

c_type! {
    /// `DXGK_INTEGRATED_DISPLAY_CHILD`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgk_integrated_display_child>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_INTEGRATED_DISPLAY_CHILD {
        /// `D3DKMDT_VIDEO_OUTPUT_TECHNOLOGY` value.
        pub InterfaceTechnology: i32,
        /// Descriptor length.
        #[offset(4)]
        pub DescriptorLength: USHORT,
    }
}

/// The `Other` arm of [`DXGK_CHILD_CAPABILITIES_0`].
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct DXGK_CHILD_CAPABILITIES_0_Other {
    /// Must be zero.
    pub MustBeZero: UINT,
}

c_type! {
    /// The `Type` union of [`DXGK_CHILD_CAPABILITIES`] (anonymous type in C).
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGK_CHILD_CAPABILITIES_0 {
        /// For `TypeVideoOutput` children.
        pub VideoOutput: DXGK_VIDEO_OUTPUT_CAPABILITIES,
        /// For `TypeOther` children.
        pub Other: DXGK_CHILD_CAPABILITIES_0_Other,
        /// For `TypeIntegratedDisplay` children.
        pub IntegratedDisplayChild: DXGK_INTEGRATED_DISPLAY_CHILD,
    }
}

union_debug!(DXGK_CHILD_CAPABILITIES_0);

c_type! {
    /// `DXGK_CHILD_CAPABILITIES`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgk_child_capabilities>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_CHILD_CAPABILITIES {
        /// Type-specific capabilities.
        #[offset(0)]
        pub Type: DXGK_CHILD_CAPABILITIES_0,
        /// `DXGK_CHILD_DEVICE_HPD_AWARENESS` value.
        #[offset(12)]
        pub HpdAwareness: i32,
    }
}

c_type! {
    /// `DXGK_CHILD_DESCRIPTOR`: one child device reported by `DxgkDdiQueryChildRelations`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgk_child_descriptor>
    #[size(28)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_CHILD_DESCRIPTOR {
        /// Kind of child.
        pub ChildDeviceType: DXGK_CHILD_DEVICE_TYPE,
        /// Child capabilities.
        #[offset(4)]
        pub ChildCapabilities: DXGK_CHILD_CAPABILITIES,
        /// ACPI UID.
        #[offset(20)]
        pub AcpiUid: ULONG,
        /// Driver-chosen child identifier.
        #[offset(24)]
        pub ChildUid: ULONG,
    }
}
/// `PDXGK_CHILD_DESCRIPTOR`.
pub type PDXGK_CHILD_DESCRIPTOR = *mut DXGK_CHILD_DESCRIPTOR;

c_enum! {
    /// `DXGK_CHILD_STATUS_TYPE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ne-dispmprt-_dxgk_child_status_type>
    pub type DXGK_CHILD_STATUS_TYPE = i32 {
        /// Uninitialised.
        StatusUninitialized,
        /// Connection (hot plug) status.
        StatusConnection,
        /// Rotation status.
        StatusRotation,
        /// Miracast connection status (WDDM 1.3+).
        StatusMiracastConnection,
    }
}

/// `HotPlug` arm of [`DXGK_CHILD_STATUS_0`].
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct DXGK_CHILD_STATUS_0_HotPlug {
    /// Whether the child is connected.
    pub Connected: BOOLEAN,
}

/// `Rotation` arm of [`DXGK_CHILD_STATUS_0`].
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct DXGK_CHILD_STATUS_0_Rotation {
    /// Angle.
    pub Angle: UCHAR,
}

/// `Miracast` arm of [`DXGK_CHILD_STATUS_0`].
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct DXGK_CHILD_STATUS_0_Miracast {
    /// Whether the sink is connected.
    pub Connected: BOOLEAN,
    /// `D3DKMDT_VIDEO_OUTPUT_TECHNOLOGY` value.
    pub MiracastMonitorType: i32,
}

c_type! {
    /// Anonymous union of [`DXGK_CHILD_STATUS`].
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGK_CHILD_STATUS_0 {
        /// For `StatusConnection`.
        pub HotPlug: DXGK_CHILD_STATUS_0_HotPlug,
        /// For `StatusRotation`.
        pub Rotation: DXGK_CHILD_STATUS_0_Rotation,
        /// For `StatusMiracastConnection`.
        pub Miracast: DXGK_CHILD_STATUS_0_Miracast,
    }
}

union_debug!(DXGK_CHILD_STATUS_0);

c_type! {
    /// `DXGK_CHILD_STATUS`: queried by `DxgkDdiQueryChildStatus`, indicated with
    /// `DxgkCbIndicateChildStatus`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgk_child_status>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_CHILD_STATUS {
        /// Which status is queried.
        #[offset(0)]
        pub Type: DXGK_CHILD_STATUS_TYPE,
        /// Child identifier.
        #[offset(4)]
        pub ChildUid: ULONG,
        /// Status data.
        #[offset(8)]
        pub Anonymous: DXGK_CHILD_STATUS_0,
    }
}
/// `PDXGK_CHILD_STATUS`.
pub type PDXGK_CHILD_STATUS = *mut DXGK_CHILD_STATUS;

c_type! {
    /// `DXGK_DEVICE_DESCRIPTOR`: a block of a child's descriptor (EDID),
    /// `DxgkDdiQueryDeviceDescriptor`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgk_device_descriptor>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_DEVICE_DESCRIPTOR {
        /// Offset of the requested block.
        pub DescriptorOffset: ULONG,
        /// Length of the requested block.
        #[offset(4)]
        pub DescriptorLength: ULONG,
        /// Output buffer.
        #[offset(8)]
        pub DescriptorBuffer: PVOID,
    }
}
/// `PDXGK_DEVICE_DESCRIPTOR`.
pub type PDXGK_DEVICE_DESCRIPTOR = *mut DXGK_DEVICE_DESCRIPTOR;

c_type! {
    /// `QUERY_INTERFACE` (video.h), argument of `DxgkDdiQueryInterface`: which interface the OS
    /// wants (the driver exports `GUID_WDDM_INTERFACE_FEATURE`), at what size and version, and the
    /// buffer to fill. Checked against the 10.0.22621 header (WDDM 1.3+ layout with `DeviceUid`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/video/ns-video-_query_interface>
    #[size(40)]
    #[repr(C)]
    #[derive(Debug)]
    pub struct QUERY_INTERFACE {
        /// The interface's GUID.
        #[offset(0)]
        pub InterfaceType: *const GUID,
        /// Size of the buffer at `Interface`.
        #[offset(8)]
        pub Size: USHORT,
        /// Version asked for.
        #[offset(10)]
        pub Version: USHORT,
        /// The buffer to fill (an `INTERFACE` header followed by the interface's functions).
        #[offset(16)]
        pub Interface: PINTERFACE,
        /// Interface-specific input.
        #[offset(24)]
        pub InterfaceSpecificData: PVOID,
        /// Child device the request is for (0: the adapter).
        #[offset(32)]
        pub DeviceUid: ULONG,
    }
}
/// `PQUERY_INTERFACE`.
pub type PQUERY_INTERFACE = *mut QUERY_INTERFACE;

opaque_types! {
    /// `VIDEO_REQUEST_PACKET` (video.h), argument of `DxgkDdiDispatchIoRequest`. Opaque here.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/video/ns-video-_video_request_packet>
    VIDEO_REQUEST_PACKET;
}
/// `PVIDEO_REQUEST_PACKET`.
pub type PVIDEO_REQUEST_PACKET = *mut VIDEO_REQUEST_PACKET;

// ---------------------------------------------------------------------------------------------
// DxgkDdiQueryAdapterInfo
// ---------------------------------------------------------------------------------------------

c_enum! {
    /// `DXGK_QUERYADAPTERINFOTYPE`: what `DxgkDdiQueryAdapterInfo` is asked for.
    ///
    /// Values from the reference page's syntax block (explicit through `DXGKQAITYPE_IOMMU_CAPS`;
    /// the WDDM 3.1/3.2 entries follow implicitly).
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_queryadapterinfotype>
    pub type DXGK_QUERYADAPTERINFOTYPE = i32 {
        /// UMD private data.
        DXGKQAITYPE_UMDRIVERPRIVATE,
        /// [`DXGK_DRIVERCAPS`].
        DXGKQAITYPE_DRIVERCAPS,
        /// `DXGK_QUERYSEGMENTOUT`.
        DXGKQAITYPE_QUERYSEGMENT,
        /// Reserved.
        DXGKQAITYPE_RESERVED,
        /// `DXGK_QUERYSEGMENTOUT2`.
        DXGKQAITYPE_QUERYSEGMENT2,
        /// `DXGK_QUERYSEGMENTOUT3`.
        DXGKQAITYPE_QUERYSEGMENT3,
        /// Number of power components.
        DXGKQAITYPE_NUMPOWERCOMPONENTS,
        /// Power component info.
        DXGKQAITYPE_POWERCOMPONENTINFO,
        /// Preferred GPU node.
        DXGKQAITYPE_PREFERREDGPUNODE,
        /// Power component P-state info.
        DXGKQAITYPE_POWERCOMPONENTPSTATEINFO,
        /// History buffer precision.
        DXGKQAITYPE_HISTORYBUFFERPRECISION,
        /// `DXGK_QUERYSEGMENTOUT4`.
        DXGKQAITYPE_QUERYSEGMENT4,
        /// Segment memory state.
        DXGKQAITYPE_SEGMENTMEMORYSTATE,
        /// `DXGK_GPUMMUCAPS`.
        DXGKQAITYPE_GPUMMUCAPS,
        /// `DXGK_PAGE_TABLE_LEVEL_DESC`.
        DXGKQAITYPE_PAGETABLELEVELDESC,
        /// `DXGK_PHYSICALADAPTERCAPS`.
        DXGKQAITYPE_PHYSICALADAPTERCAPS,
        /// `DXGK_DISPLAY_DRIVERCAPS_EXTENSION`.
        DXGKQAITYPE_DISPLAY_DRIVERCAPS_EXTENSION,
        /// Integrated display descriptor.
        DXGKQAITYPE_INTEGRATED_DISPLAY_DESCRIPTOR,
        /// UEFI frame buffer ranges.
        DXGKQAITYPE_UEFIFRAMEBUFFERRANGES,
        /// Colorimetry overrides.
        DXGKQAITYPE_QUERYCOLORIMETRYOVERRIDES,
        /// DisplayID descriptor.
        DXGKQAITYPE_DISPLAYID_DESCRIPTOR,
        /// Frame buffer save size.
        DXGKQAITYPE_FRAMEBUFFERSAVESIZE,
        /// Hardware reserved ranges.
        DXGKQAITYPE_HARDWARERESERVEDRANGES,
        /// Integrated display descriptor 2.
        DXGKQAITYPE_INTEGRATED_DISPLAY_DESCRIPTOR2,
        /// Node performance data.
        DXGKQAITYPE_NODEPERFDATA,
        /// Adapter performance data.
        DXGKQAITYPE_ADAPTERPERFDATA,
        /// Adapter performance data caps.
        DXGKQAITYPE_ADAPTERPERFDATA_CAPS,
        /// GPU version.
        DXGKQAITYPE_GPUVERSION,
        /// Device type caps.
        DXGKQAITYPE_DEVICE_TYPE_CAPS,
        /// WDDM device caps.
        DXGKQAITYPE_WDDMDEVICECAPS,
        /// GPU-P caps.
        DXGKQAITYPE_GPUPCAPS,
        /// Target gamma caps.
        DXGKQAITYPE_QUERYTARGETGAMMACAPS,
        /// Scan-out caps.
        DXGKQAITYPE_SCANOUT_CAPS = 33,
        /// Physical memory caps.
        DXGKQAITYPE_PHYSICAL_MEMORY_CAPS,
        /// IOMMU caps.
        DXGKQAITYPE_IOMMU_CAPS,
        /// Hardware reserved ranges 2 (WDDM 3.1).
        DXGKQAITYPE_HARDWARERESERVEDRANGES2,
        /// [`crate::fence::DXGK_NATIVE_FENCE_CAPS`] (WDDM 3.1/3.2).
        DXGKQAITYPE_NATIVE_FENCE_CAPS,
        // 0..38 are checked against the 10.0.22621 d3dkmddi.h by the layout check. UNVERIFIED: 39..
        // for the WDDM 3.2 entries rest on the enumerator order (implicit values on the reference
        // page) and a ReactOS reconstruction of d3dkmddi.h.
        /// `DXGK_USERMODESUBMISSION_CAPS` (WDDM 3.1/3.2).
        DXGKQAITYPE_USERMODESUBMISSION_CAPS,
        /// Dirty-bit tracking caps (WDDM 3.2).
        DXGKQAITYPE_DIRTYBITTRACKINGCAPS,
        /// Per-segment dirty-bit tracking caps (WDDM 3.2).
        DXGKQAITYPE_DIRTYBITTRACKINGSEGMENTCAPS,
        /// Scatter reserve (WDDM 3.2).
        DXGKQAITYPE_SCATTER_RESERVE,
    }
}

flag_word! {
    /// `DXGK_QUERYADAPTERINFOFLAGS` (WDDM 2.4+).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_queryadapterinfoflags>
    pub struct DXGK_QUERYADAPTERINFOFLAGS {
        /// The query comes from a virtual machine worker process.
        VirtualMachineData,
    }
}

c_type! {
    /// `DXGKARG_QUERYADAPTERINFO`: argument of `DxgkDdiQueryAdapterInfo`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_queryadapterinfo>
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_QUERYADAPTERINFO {
        /// What is queried.
        #[offset(0)]
        pub Type: DXGK_QUERYADAPTERINFOTYPE,
        /// Input buffer (type-specific, may be null).
        #[offset(8)]
        pub pInputData: *mut c_void,
        /// Size of the input buffer.
        #[offset(16)]
        pub InputDataSize: UINT,
        /// Output buffer.
        #[offset(24)]
        pub pOutputData: *mut c_void,
        /// Size of the output buffer.
        #[offset(32)]
        pub OutputDataSize: UINT,
        /// Query flags (WDDM 2.4+).
        #[offset(36)]
        pub Flags: DXGK_QUERYADAPTERINFOFLAGS,
        /// Driver process handle from `DxgkDdiCreateProcess`, may be null.
        #[offset(40)]
        pub hKmdProcessHandle: HANDLE,
    }
}

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

// ---------------------------------------------------------------------------------------------
// QueryAdapterInfo answers asked for before DxgkDdiStartDevice, and the history buffer precision
// ---------------------------------------------------------------------------------------------

c_type! {
    /// `DXGK_WDDMDEVICECAPSIN`: input of `DXGKQAITYPE_WDDMDEVICECAPS` (the `DXGKRNL_INTERFACE`
    /// version the OS will pass to StartDevice).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_wddmdevicecapsin>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGK_WDDMDEVICECAPSIN {
        /// `DXGKRNL_INTERFACE::Version` of the coming StartDevice.
        #[offset(0)]
        pub DxgkrnlInterfaceVersion: ULONG,
    }
}

c_type! {
    /// `DXGK_WDDMDEVICECAPS`: answer to `DXGKQAITYPE_WDDMDEVICECAPS`, which the OS sends after
    /// AddDevice and before StartDevice.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_wddmdevicecaps>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGK_WDDMDEVICECAPS {
        /// Same value as [`DXGK_DRIVERCAPS::WDDMVersion`].
        #[offset(0)]
        pub WDDMVersion: DXGK_WDDMVERSION,
    }
}

c_type! {
    /// `DXGK_PHYSICAL_MEMORY_CAPS`: answer to `DXGKQAITYPE_PHYSICAL_MEMORY_CAPS` (WDDM 2.9+).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgk_physical_memory_caps>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct DXGK_PHYSICAL_MEMORY_CAPS {
        /// Highest physical address the device can reach.
        #[offset(0)]
        pub HighestVisibleAddress: PHYSICAL_ADDRESS,
    }
}

flag_word! {
    /// `DXGK_IOMMU_CAPS`: answer to `DXGKQAITYPE_IOMMU_CAPS` (WDDM 2.9+), which the OS sends
    /// after AddDevice and before StartDevice. Later pages add `GpuVaIommuRequired` and
    /// `GpuVaIommuGlobalRequired` at bits 3 and 4 (reserved in 10.0.22621).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgk_iommu_caps>
    pub struct DXGK_IOMMU_CAPS {
        /// The driver maps its memory through the IOMMU callbacks (isolation).
        IommuIsolationSupported,
        /// The device must not start without an IOMMU domain.
        IommuIsolationRequired,
        /// The driver supports linear (not only 1:1) DMA remapping.
        DmaRemappingSupported,
    }
}

c_type! {
    /// `DXGK_QUERYPHYSICALADAPTERCAPSIN`: input of `DXGKQAITYPE_PHYSICALADAPTERCAPS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_queryadapterinfotype>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGK_QUERYPHYSICALADAPTERCAPSIN {
        /// Physical adapter (0 without linked adapters).
        #[offset(0)]
        pub PhysicalAdapterIndex: UINT,
    }
}

flag_word! {
    /// `DXGK_PHYSICALADAPTERFLAGS` as of interface WDDM 2.7 (10.0.22621 declares bits 0..=5;
    /// later pages add `GpuVaIommuRequired` at bit 6).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_physicaladaptercaps>
    pub struct DXGK_PHYSICALADAPTERFLAGS {
        /// The physical adapter supports the IoMmu model.
        IoMmuSupported,
        /// The physical adapter supports the GpuMmu model.
        GpuMmuSupported,
        /// Move paging is supported.
        MovePagingSupported,
        /// `VPRPagingNode` names the node for paging in the video protected region.
        VPRPagingContextRequired,
        /// Hardware-protected content without a VPR.
        AllowHardwareProtectedNoVpr,
        /// `VirtualCopyNodeIndex` names a virtual copy engine node (WDDM 2.7).
        VirtualCopyEngineSupported,
    }
}

c_type! {
    /// `DXGK_PHYSICALADAPTERCAPS`: answer to `DXGKQAITYPE_PHYSICALADAPTERCAPS`, one per physical
    /// adapter (Dxgkrnl asks with an output size that follows the interface version: 32 bytes from
    /// WDDM 2.7).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_physicaladaptercaps>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct DXGK_PHYSICALADAPTERCAPS {
        /// Execution nodes of the physical adapter.
        #[offset(0)]
        pub NumExecutionNodes: WORD,
        /// Index of its paging node.
        #[offset(2)]
        pub PagingNodeIndex: WORD,
        /// `DXGKRNL_INTERFACE::DeviceHandle` from DxgkDdiStartDevice.
        #[offset(8)]
        pub DxgkPhysicalAdapterHandle: HANDLE,
        /// Capability flags.
        #[offset(16)]
        pub Flags: DXGK_PHYSICALADAPTERFLAGS,
        /// Node for paging in the video protected region (WDDM 2.1).
        #[offset(20)]
        pub VPRPagingNode: UINT,
        /// The virtual copy engine node (WDDM 2.7).
        #[offset(24)]
        pub VirtualCopyNodeIndex: UINT,
    }
}

impl Default for DXGK_PHYSICALADAPTERCAPS {
    fn default() -> Self {
        Self {
            NumExecutionNodes: 0,
            PagingNodeIndex: 0,
            DxgkPhysicalAdapterHandle: core::ptr::null_mut(),
            Flags: DXGK_PHYSICALADAPTERFLAGS::default(),
            VPRPagingNode: 0,
            VirtualCopyNodeIndex: 0,
        }
    }
}

c_type! {
    /// `DXGK_QUERYHISTORYBUFFERPRECISIONIN`: optional input of
    /// `DXGKQAITYPE_HISTORYBUFFERPRECISION`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_queryhistorybufferprecisionin>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGK_QUERYHISTORYBUFFERPRECISIONIN {
        /// Physical adapter (0 without linked adapters).
        #[offset(0)]
        pub PhysicalAdapterIndex: UINT,
    }
}

c_type! {
    /// `DXGKARG_HISTORYBUFFERPRECISION`: answer to `DXGKQAITYPE_HISTORYBUFFERPRECISION`, the
    /// number of valid bits (32..=64) in the GPU timestamps the driver writes to history buffers.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_historybufferprecision>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGKARG_HISTORYBUFFERPRECISION {
        /// Valid timestamp bits.
        #[offset(0)]
        pub PrecisionBits: UINT32,
    }
}
