//! `DxgkDdiQueryAdapterInfo`: its argument block, the kinds of question and the answers
//! asked for before StartDevice (d3dkmddi.h). Reached through [`crate::adapter`].

use core::ffi::c_void;

use crate::basic::*;
use crate::drivercaps::DXGK_WDDMVERSION;
use crate::macros::{c_enum, c_type, flag_word};

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
        /// [`DXGK_DRIVERCAPS`](crate::drivercaps::DXGK_DRIVERCAPS).
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
        /// Same value as
        /// [`DXGK_DRIVERCAPS::WDDMVersion`](crate::drivercaps::DXGK_DRIVERCAPS::WDDMVersion).
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
