//! Adapter bring-up types: start info, device info, child devices (dispmprt.h, d3dkmddi.h,
//! d3dkmdt.h). `DxgkDdiQueryAdapterInfo` (crate::adapterinfo) and `DXGK_DRIVERCAPS`
//! (crate::drivercaps) are re-exported here, where their users look for them.

use crate::basic::*;
use crate::macros::{c_enum, c_type, extern_fn, opaque_types, unbound_fn, union_debug};

pub use crate::adapterinfo::*;
pub use crate::drivercaps::*;

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

c_type! {
    /// The `Other` arm of [`DXGK_CHILD_CAPABILITIES_0`].
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_CHILD_CAPABILITIES_0_Other {
        /// Must be zero.
        pub MustBeZero: UINT,
    }
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
    #[element]
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

c_type! {
    /// `HotPlug` arm of [`DXGK_CHILD_STATUS_0`].
    #[size(1)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_CHILD_STATUS_0_HotPlug {
        /// Whether the child is connected.
        pub Connected: BOOLEAN,
    }
}

c_type! {
    /// `Rotation` arm of [`DXGK_CHILD_STATUS_0`].
    #[size(1)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_CHILD_STATUS_0_Rotation {
        /// Angle.
        pub Angle: UCHAR,
    }
}

c_type! {
    /// `Miracast` arm of [`DXGK_CHILD_STATUS_0`].
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_CHILD_STATUS_0_Miracast {
        /// Whether the sink is connected.
        pub Connected: BOOLEAN,
        /// `D3DKMDT_VIDEO_OUTPUT_TECHNOLOGY` value.
        pub MiracastMonitorType: i32,
    }
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

// Slots of `DRIVER_INITIALIZATION_DATA` whose signatures are not bound yet (`init` re-exports
// them): binding one replaces its line with its argument block and prototype.
unbound_fn!(PDXGKDDI_GET_CHILD_CONTAINER_ID, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_get_child_container_id");
unbound_fn!(PDXGKDDI_CREATEPROTECTEDSESSION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_createprotectedsession");
unbound_fn!(PDXGKDDI_DESTROYPROTECTEDSESSION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_destroyprotectedsession");
unbound_fn!(PDXGKDDI_SETVIRTUALMACHINEDATA, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setvirtualmachinedata");
unbound_fn!(PDXGKDDI_BEGINEXCLUSIVEACCESS, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_beginexclusiveaccess");
unbound_fn!(PDXGKDDI_ENDEXCLUSIVEACCESS, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_endexclusiveaccess");
unbound_fn!(PDXGKDDI_SAVEMEMORYFORHOTUPDATE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_savememoryforhotupdate");
unbound_fn!(PDXGKDDI_RESTOREMEMORYFORHOTUPDATE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_restorememoryforhotupdate");
unbound_fn!(PDXGKDDI_PREPARELIVEMIGRATION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_preparelivemigration");
unbound_fn!(PDXGKDDI_SAVEIMMUTABLEMIGRATIONDATA, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_saveimmutablemigrationdata");
unbound_fn!(PDXGKDDI_SAVEMUTABLEMIGRATIONDATA, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_savemutablemigrationdata");
unbound_fn!(PDXGKDDI_ENDLIVEMIGRATION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_endlivemigration");
unbound_fn!(PDXGKDDI_RESTOREIMMUTABLEMIGRATIONDATA, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_restoreimmutablemigrationdata");
unbound_fn!(PDXGKDDI_RESTOREMUTABLEMIGRATIONDATA, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_restoremutablemigrationdata");
unbound_fn!(PDXGKDDI_WRITEVIRTUALIZEDINTERRUPT, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_writevirtualizedinterrupt");
unbound_fn!(PDXGKDDI_SETVIRTUALGPURESOURCES2, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setvirtualgpuresources2");
unbound_fn!(PDXGKDDI_SETVIRTUALFUNCTIONPAUSESTATE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setvirtualfunctionpausestate");
