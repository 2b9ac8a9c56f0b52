//! `DXGKRNL_INTERFACE` and the Dxgkrnl callback (`DXGKCB_*`) pointer types (dispmprt.h,
//! d3dkmddi.h).
//!
//! In the C headers the `DXGKCB_*` names are already pointer types (there is no `PDXGKCB_*`);
//! the Rust aliases keep those names.
//!
//! Slot order: Microsoft's dispmprt.h of the WDDM 2.3 era (first 44 callbacks), the
//! `DXGKRNL_INTERFACE` reference page (WDDM 2.4-2.6 members) and two independent
//! reconstructions of the WDDM 3.1 header that place `DxgkCbDisconnectDoorbell` at 0x238.

use core::ffi::c_void;

use crate::adapter::{PDXGK_CHILD_STATUS, PDXGK_DEVICE_INFO};
use crate::basic::*;
use crate::feature::DXGKCB_QUERYFEATURESUPPORT;
use crate::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA;
use crate::macros::{
    c_enum, c_type, ddi_table, extern_fn, flag_word, layout, reserved_flags, unbound_fn,
    zeroed_default,
};

c_enum! {
    /// `DXGK_SERVICES`: interfaces obtainable with `DxgkCbQueryServices`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ne-dispmprt-dxgk_services>
    pub type DXGK_SERVICES = i32 {
        /// AGP interface.
        DxgkServicesAgp,
        /// Debug report interface.
        DxgkServicesDebugReport,
        /// Timed operation interface.
        DxgkServicesTimedOperation,
        /// Serial peripheral bus interface.
        DxgkServicesSPB,
        /// Reserved (basic display driver).
        DxgkServicesBDD,
        /// Firmware table interface.
        DxgkServicesFirmwareTable,
        /// Reserved (indirect display).
        DxgkServicesIDD,
        /// Feature interface ([`crate::feature::DXGK_FEATURE_INTERFACE`], WDDM 3.2).
        DxgkServicesFeature,
    }
}

extern_fn! {
    /// `DXGKDDI_PROTECTED_CALLBACK`: run by `DxgkCbExcludeAdapterAccess` with the adapter quiesced.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_exclude_adapter_access>
    pub type DXGKDDI_PROTECTED_CALLBACK = fn(
        MiniportDeviceContext: PVOID,
        ProtectedCallbackContext: PVOID,
        ProtectionStatus: NTSTATUS,
    );

    /// `DXGKCB_EVAL_ACPI_METHOD` (the ACPI input/output buffers are passed as untyped pointers).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_eval_acpi_method>
    pub type DXGKCB_EVAL_ACPI_METHOD = fn(
        DeviceHandle: HANDLE,
        DeviceUid: ULONG,
        AcpiInputBuffer: *mut c_void,
        AcpiInputSize: ULONG,
        AcpiOutputBuffer: *mut c_void,
        AcpiOutputSize: ULONG,
    ) -> NTSTATUS;
}
/// `DXGKCB_GET_DEVICE_INFORMATION`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_get_device_information>
pub type DXGKCB_GET_DEVICE_INFORMATION = Option<
    unsafe extern "system" fn(DeviceHandle: HANDLE, DeviceInfo: PDXGK_DEVICE_INFO) -> NTSTATUS,
>;
/// `DXGKCB_INDICATE_CHILD_STATUS`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_indicate_child_status>
pub type DXGKCB_INDICATE_CHILD_STATUS = Option<
    unsafe extern "system" fn(DeviceHandle: HANDLE, ChildStatus: PDXGK_CHILD_STATUS) -> NTSTATUS,
>;
extern_fn! {
    /// `DXGKCB_MAP_MEMORY`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_map_memory>
    pub type DXGKCB_MAP_MEMORY = fn(
        DeviceHandle: HANDLE,
        TranslatedAddress: PHYSICAL_ADDRESS,
        Length: ULONG,
        InIoSpace: BOOLEAN,
        MapToUserMode: BOOLEAN,
        CacheType: MEMORY_CACHING_TYPE,
        VirtualAddress: *mut PVOID,
    ) -> NTSTATUS;
    /// `DXGKCB_QUEUE_DPC`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_queue_dpc>
    pub type DXGKCB_QUEUE_DPC = fn(DeviceHandle: HANDLE) -> BOOLEAN;
    /// `DXGKCB_QUERY_SERVICES`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_query_services>
    pub type DXGKCB_QUERY_SERVICES = fn(
        DeviceHandle: HANDLE,
        ServicesType: DXGK_SERVICES,
        Interface: PINTERFACE,
    ) -> NTSTATUS;
    /// `DXGKCB_READ_DEVICE_SPACE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_read_device_space>
    pub type DXGKCB_READ_DEVICE_SPACE = fn(
        DeviceHandle: HANDLE,
        DataType: ULONG,
        Buffer: PVOID,
        Offset: ULONG,
        Length: ULONG,
        BytesRead: *mut ULONG,
    ) -> NTSTATUS;
    /// `DXGKCB_SYNCHRONIZE_EXECUTION`: run a routine synchronised with the ISR.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_synchronize_execution>
    pub type DXGKCB_SYNCHRONIZE_EXECUTION = fn(
        DeviceHandle: HANDLE,
        SynchronizeRoutine: PKSYNCHRONIZE_ROUTINE,
        Context: PVOID,
        MessageNumber: ULONG,
        ReturnValue: *mut BOOLEAN,
    ) -> NTSTATUS;
}
/// `DXGKCB_UNMAP_MEMORY`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_unmap_memory>
pub type DXGKCB_UNMAP_MEMORY = DDI_FN<PVOID>;
extern_fn! {
    /// `DXGKCB_WRITE_DEVICE_SPACE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_write_device_space>
    pub type DXGKCB_WRITE_DEVICE_SPACE = fn(
        DeviceHandle: HANDLE,
        DataType: ULONG,
        Buffer: PVOID,
        Offset: ULONG,
        Length: ULONG,
        BytesWritten: *mut ULONG,
    ) -> NTSTATUS;
    /// `DXGKCB_IS_DEVICE_PRESENT` (the `PCI_DEVICE_PRESENCE_PARAMETERS` argument is untyped here).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_is_device_present>
    pub type DXGKCB_IS_DEVICE_PRESENT = fn(
        DeviceHandle: HANDLE,
        DevicePresenceParameters: *mut c_void,
        DevicePresent: *mut BOOLEAN,
    ) -> NTSTATUS;
}

c_enum! {
    /// `DXGK_HANDLE_TYPE` (d3dkmddi.h).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_handle_type>
    pub type DXGK_HANDLE_TYPE = i32 {
        // The values 24H2's `K:DxgGetHandleDataCB` @0x1404111E0 tells apart (1: an allocation,
        // 2: a resource; anything else answers NULL).
        /// Allocation handle.
        DXGK_HANDLE_ALLOCATION = 1,
        /// Resource handle.
        DXGK_HANDLE_RESOURCE,
    }
}

flag_word! {
    /// `DXGKCB_GETHANDLEDATAFLAGS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkcb_gethandledataflags>
    pub struct DXGKCB_GETHANDLEDATAFLAGS {
        /// Return the device-specific private data.
        DeviceSpecific,
    }
}

c_type! {
    /// `DXGKARGCB_GETHANDLEDATA`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkargcb_gethandledata>
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGKARGCB_GETHANDLEDATA {
        /// Kernel handle.
        pub hObject: D3DKMT_HANDLE,
        /// Kind of object.
        #[offset(4)]
        pub Type: DXGK_HANDLE_TYPE,
        /// Flags.
        #[offset(8)]
        pub Flags: DXGKCB_GETHANDLEDATAFLAGS,
    }
}

extern_fn! {
    /// `DXGKCB_GETHANDLEDATA`: driver data attached to a kernel handle.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_gethandledata>
    pub type DXGKCB_GETHANDLEDATA = fn(pData: *const DXGKARGCB_GETHANDLEDATA) -> PVOID;
    /// `DXGKCB_GETHANDLEPARENT`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_gethandleparent>
    pub type DXGKCB_GETHANDLEPARENT = fn(hAllocation: D3DKMT_HANDLE) -> D3DKMT_HANDLE;
}

c_type! {
    /// `DXGKARGCB_ENUMHANDLECHILDREN`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkargcb_enumhandlechildren>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGKARGCB_ENUMHANDLECHILDREN {
        /// Parent handle.
        pub hObject: D3DKMT_HANDLE,
        /// Child index.
        #[offset(4)]
        pub Index: UINT,
    }
}

extern_fn! {
    /// `DXGKCB_ENUMHANDLECHILDREN`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_enumhandlechildren>
    pub type DXGKCB_ENUMHANDLECHILDREN = fn(
        pData: *const DXGKARGCB_ENUMHANDLECHILDREN,
    ) -> D3DKMT_HANDLE;
}
/// `DXGKCB_NOTIFY_INTERRUPT`: report a GPU event from the ISR (device IRQL).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_notify_interrupt>
pub type DXGKCB_NOTIFY_INTERRUPT = Option<
    unsafe extern "system" fn(hAdapter: HANDLE, pData: *const DXGKARGCB_NOTIFY_INTERRUPT_DATA),
>;
extern_fn! {
    /// `DXGKCB_NOTIFY_DPC`: let the OS run its DPC work for reported interrupts.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_notify_dpc>
    pub type DXGKCB_NOTIFY_DPC = fn(hAdapter: HANDLE);
    /// `DXGKCB_LOG_ETW_EVENT`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_log_etw_event>
    pub type DXGKCB_LOG_ETW_EVENT = fn(
        EventGuid: *const GUID,
        Type: UCHAR,
        EventBufferSize: USHORT,
        EventBuffer: PVOID,
    );
    /// `DXGKCB_EXCLUDE_ADAPTER_ACCESS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_exclude_adapter_access>
    pub type DXGKCB_EXCLUDE_ADAPTER_ACCESS = fn(
        DeviceHandle: HANDLE,
        Attributes: ULONG,
        DxgkProtectedCallback: DXGKDDI_PROTECTED_CALLBACK,
        ProtectedCallbackContext: PVOID,
    ) -> NTSTATUS;
}

c_enum! {
    /// `D3DDDI_DOORBELLSTATUS` (d3dukmdt.h): doorbell connection state written to the status page.
    ///
    /// Names as in the windows-sys metadata build of d3dukmdt.h (the prose documentation spells
    /// them `D3DDDI_DOORBELL_STATUS_*`).
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ne-d3dukmdt-d3dddi_doorbellstatus>
    pub type D3DDDI_DOORBELLSTATUS = i32 {
        /// Connected.
        D3DDDI_DOORBELLSTATUS_CONNECTED,
        /// Connected; the UMD must also call `D3DKMTNotifyWorkSubmission`.
        D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD,
        /// Disconnected; reconnect and retry.
        D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
        /// Disconnected for good (device lost).
        D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT,
    }
}

reserved_flags! {
    /// `DXGKARGCB_DISCONNECTDOORBELL_FLAGS`: all reserved.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkargcb_disconnectdoorbell_flags>
    DXGKARGCB_DISCONNECTDOORBELL_FLAGS;
}

c_type! {
    /// `DXGKARGCB_DISCONNECTDOORBELL`: argument of `DxgkCbDisconnectDoorbell`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkargcb_disconnectdoorbell>
    // wdk-layout-check: skip: 10.0.22621 has the pre-release WDDM 3.1 layout; this follows the 24H2 (WDDM 3.2) reference page
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_DISCONNECTDOORBELL {
        /// Driver handle of the hardware queue.
        pub hHwQueue: HANDLE,
        /// Driver handle of the doorbell.
        #[offset(8)]
        pub hDoorbell: HANDLE,
        /// Flags.
        #[offset(16)]
        pub Flags: DXGKARGCB_DISCONNECTDOORBELL_FLAGS,
        /// One of the `D3DDDI_DOORBELLSTATUS_DISCONNECTED_*` values.
        #[offset(20)]
        pub DisconnectReason: D3DDDI_DOORBELLSTATUS,
    }
}

extern_fn! {
    /// `DXGKCB_DISCONNECTDOORBELL`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_disconnectdoorbell>
    pub type DXGKCB_DISCONNECTDOORBELL = fn(pArgs: *mut DXGKARGCB_DISCONNECTDOORBELL) -> NTSTATUS;
}

flag_word! {
    /// `DXGK_INVALIDATEHWCONTEXTFLAGS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_invalidatehwcontextflags>
    pub struct DXGK_INVALIDATEHWCONTEXTFLAGS {
        /// 0: this context caused the engine hang; 1: it did not, but the hang (or the reset)
        /// damaged it and it must be reset too.
        CollateralDamage,
    }
}

c_type! {
    /// `DXGKARGCB_INVALIDATEHWCONTEXT`: argument of `DxgkCbInvalidateHwContext`. Unlike most
    /// callbacks, the adapter handle travels inside the structure.
    ///
    /// UNVERIFIED: which handle `hHwContext` is. The page says "the Dxgkrnl-assigned value for the
    /// context that was passed to `DxgkDdiCreateContext`", but `DXGKARG_CREATECONTEXT::hContext` is
    /// documented as an output (the driver's handle) and no Dxgkrnl context handle is passed to
    /// `DxgkDdiCreateContext`; whether Dxgkrnl expects its own handle (learned elsewhere) or the
    /// driver's context handle is open (docs/tdr.md Q2).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkargcb_invalidatehwcontext>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_INVALIDATEHWCONTEXT {
        /// The adapter handle (`DXGKRNL_INTERFACE::DeviceHandle`).
        #[offset(0)]
        pub hAdapter: HANDLE,
        /// The context to invalidate (see the UNVERIFIED note above).
        #[offset(8)]
        pub hHwContext: HANDLE,
        /// Primary cause or collateral damage.
        #[offset(16)]
        pub Flags: DXGK_INVALIDATEHWCONTEXTFLAGS,
    }
}

zeroed_default!(DXGKARGCB_INVALIDATEHWCONTEXT);

extern_fn! {
    /// `DXGKCB_INVALIDATEHWCONTEXT` (PASSIVE_LEVEL; WDDM 2.2+):
    /// `(IN_CONST_PDXGKARGCB_INVALIDATEHWCONTEXT)`. Tells Dxgkrnl that a context's state is lost
    /// after an engine reset; the OS puts its device in error and submits nothing more from it.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_invalidatehwcontext>
    pub type DXGKCB_INVALIDATEHWCONTEXT = fn(
        pArgs: *const DXGKARGCB_INVALIDATEHWCONTEXT,
    ) -> NTSTATUS;
}

extern_fn! {
    /// `DXGKCB_SETPOWERCOMPONENTACTIVE` (PASSIVE_LEVEL; WDDM 1.2+): `VOID (IN_CONST_HANDLE
    /// hAdapter, UINT ComponentIndex)`. Adds one active reference to the component; PoFx puts
    /// it in a lower F-state only at count zero, and the component is in F0 when the call
    /// returns (24H2 `K:DXGADAPTER::SetPowerComponentActiveCB`@0x1400258A4 activates it
    /// blocking). `DxgkDdiSetPowerComponentFState` may run meanwhile, on another thread.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_setpowercomponentactive>
    pub type DXGKCB_SETPOWERCOMPONENTACTIVE = fn(hAdapter: HANDLE, ComponentIndex: UINT);
    /// `DXGKCB_SETPOWERCOMPONENTIDLE` (PASSIVE_LEVEL for an engine component; WDDM 1.2+): `VOID
    /// (IN_CONST_HANDLE hAdapter, UINT ComponentIndex)`. Drops one active reference; each call
    /// pairs with an earlier `DXGKCB_SETPOWERCOMPONENTACTIVE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_setpowercomponentidle>
    pub type DXGKCB_SETPOWERCOMPONENTIDLE = fn(hAdapter: HANDLE, ComponentIndex: UINT);
}

ddi_table! {
    /// `DXGKRNL_INTERFACE`: the Dxgkrnl callbacks handed to `DxgkDdiStartDevice` (dispmprt.h):
    /// `Size`, `Version`, `DeviceHandle` and 70 callback pointers through WDDM 3.1's
    /// `DxgkCbDisconnectDoorbell` (0x240 bytes on x64).
    ///
    /// The OS fills it; the driver only reads it, and must not read past `Size`.
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgkrnl_interface>
    // UNVERIFIED: whether the WDDM 3.2 headers append callbacks after DxgkCbDisconnectDoorbell.
    // No public 3.2 copy was found; a shorter Rust struct is a safe prefix for reading.
    pub struct DXGKRNL_INTERFACE {
        header {
            /// Size of the structure in bytes.
            Size: ULONG = 0,
            /// Interface version (a `DXGKDDI_INTERFACE_VERSION_*` value).
            Version: ULONG = 0,
            /// Adapter handle to pass to the callbacks.
            DeviceHandle: HANDLE = core::ptr::null_mut(),
        }
        slots {
            /// [`DXGKCB_EVAL_ACPI_METHOD`] (present since all versions).
            DxgkCbEvalAcpiMethod: DXGKCB_EVAL_ACPI_METHOD,
            /// [`DXGKCB_GET_DEVICE_INFORMATION`] (present since all versions).
            DxgkCbGetDeviceInformation: DXGKCB_GET_DEVICE_INFORMATION,
            /// [`DXGKCB_INDICATE_CHILD_STATUS`] (present since all versions).
            DxgkCbIndicateChildStatus: DXGKCB_INDICATE_CHILD_STATUS,
            /// [`DXGKCB_MAP_MEMORY`] (present since all versions).
            DxgkCbMapMemory: DXGKCB_MAP_MEMORY,
            /// [`DXGKCB_QUEUE_DPC`] (present since all versions).
            DxgkCbQueueDpc: DXGKCB_QUEUE_DPC,
            /// [`DXGKCB_QUERY_SERVICES`] (present since all versions).
            DxgkCbQueryServices: DXGKCB_QUERY_SERVICES,
            /// [`DXGKCB_READ_DEVICE_SPACE`] (present since all versions).
            DxgkCbReadDeviceSpace: DXGKCB_READ_DEVICE_SPACE,
            /// [`DXGKCB_SYNCHRONIZE_EXECUTION`] (present since all versions).
            DxgkCbSynchronizeExecution: DXGKCB_SYNCHRONIZE_EXECUTION,
            /// [`DXGKCB_UNMAP_MEMORY`] (present since all versions).
            DxgkCbUnmapMemory: DXGKCB_UNMAP_MEMORY,
            /// [`DXGKCB_WRITE_DEVICE_SPACE`] (present since all versions).
            DxgkCbWriteDeviceSpace: DXGKCB_WRITE_DEVICE_SPACE,
            /// [`DXGKCB_IS_DEVICE_PRESENT`] (present since all versions).
            DxgkCbIsDevicePresent: DXGKCB_IS_DEVICE_PRESENT,
            /// [`DXGKCB_GETHANDLEDATA`] (present since all versions).
            DxgkCbGetHandleData: DXGKCB_GETHANDLEDATA,
            /// [`DXGKCB_GETHANDLEPARENT`] (present since all versions).
            DxgkCbGetHandleParent: DXGKCB_GETHANDLEPARENT,
            /// [`DXGKCB_ENUMHANDLECHILDREN`] (present since all versions).
            DxgkCbEnumHandleChildren: DXGKCB_ENUMHANDLECHILDREN,
            /// [`DXGKCB_NOTIFY_INTERRUPT`] (present since all versions).
            DxgkCbNotifyInterrupt: DXGKCB_NOTIFY_INTERRUPT,
            /// [`DXGKCB_NOTIFY_DPC`] (present since all versions).
            DxgkCbNotifyDpc: DXGKCB_NOTIFY_DPC,
            /// [`DXGKCB_QUERYVIDPNINTERFACE`] (present since all versions).
            DxgkCbQueryVidPnInterface: DXGKCB_QUERYVIDPNINTERFACE,
            /// [`DXGKCB_QUERYMONITORINTERFACE`] (present since all versions).
            DxgkCbQueryMonitorInterface: DXGKCB_QUERYMONITORINTERFACE,
            /// [`DXGKCB_GETCAPTUREADDRESS`] (present since all versions).
            DxgkCbGetCaptureAddress: DXGKCB_GETCAPTUREADDRESS,
            /// [`DXGKCB_LOG_ETW_EVENT`] (present since all versions).
            DxgkCbLogEtwEvent: DXGKCB_LOG_ETW_EVENT,
            /// [`DXGKCB_EXCLUDE_ADAPTER_ACCESS`] (present since all versions).
            DxgkCbExcludeAdapterAccess: DXGKCB_EXCLUDE_ADAPTER_ACCESS,
            /// [`DXGKCB_CREATECONTEXTALLOCATION`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkCbCreateContextAllocation: DXGKCB_CREATECONTEXTALLOCATION,
            /// [`DXGKCB_DESTROYCONTEXTALLOCATION`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkCbDestroyContextAllocation: DXGKCB_DESTROYCONTEXTALLOCATION,
            /// [`DXGKCB_SETPOWERCOMPONENTACTIVE`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkCbSetPowerComponentActive: DXGKCB_SETPOWERCOMPONENTACTIVE,
            /// [`DXGKCB_SETPOWERCOMPONENTIDLE`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkCbSetPowerComponentIdle: DXGKCB_SETPOWERCOMPONENTIDLE,
            /// [`DXGKCB_ACQUIRE_POST_DISPLAY_OWNERSHIP`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkCbAcquirePostDisplayOwnership: DXGKCB_ACQUIRE_POST_DISPLAY_OWNERSHIP,
            /// [`DXGKCB_POWERRUNTIMECONTROLREQUEST`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkCbPowerRuntimeControlRequest: DXGKCB_POWERRUNTIMECONTROLREQUEST,
            /// [`DXGKCB_SETPOWERCOMPONENTLATENCY`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkCbSetPowerComponentLatency: DXGKCB_SETPOWERCOMPONENTLATENCY,
            /// [`DXGKCB_SETPOWERCOMPONENTRESIDENCY`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkCbSetPowerComponentResidency: DXGKCB_SETPOWERCOMPONENTRESIDENCY,
            /// [`DXGKCB_COMPLETEFSTATETRANSITION`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkCbCompleteFStateTransition: DXGKCB_COMPLETEFSTATETRANSITION,
            /// [`DXGKCB_COMPLETEPSTATETRANSITION`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM1_3`).
            DxgkCbCompletePStateTransition: DXGKCB_COMPLETEPSTATETRANSITION,
            /// [`DXGKCB_MAPCONTEXTALLOCATION`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkCbMapContextAllocation: DXGKCB_MAPCONTEXTALLOCATION,
            /// [`DXGKCB_UPDATECONTEXTALLOCATION`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkCbUpdateContextAllocation: DXGKCB_UPDATECONTEXTALLOCATION,
            /// [`DXGKCB_RESERVEGPUVIRTUALADDRESSRANGE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkCbReserveGpuVirtualAddressRange: DXGKCB_RESERVEGPUVIRTUALADDRESSRANGE,
            /// [`DXGKCB_ACQUIREHANDLEDATA`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkCbAcquireHandleData: DXGKCB_ACQUIREHANDLEDATA,
            /// [`DXGKCB_RELEASEHANDLEDATA`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkCbReleaseHandleData: DXGKCB_RELEASEHANDLEDATA,
            /// [`DXGKCB_HARDWARECONTENTPROTECTIONTEARDOWN`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkCbHardwareContentProtectionTeardown: DXGKCB_HARDWARECONTENTPROTECTIONTEARDOWN,
            /// [`DXGKCB_MULTIPLANEOVERLAYDISABLED`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_1`).
            DxgkCbMultiPlaneOverlayDisabled: DXGKCB_MULTIPLANEOVERLAYDISABLED,
            /// [`DXGKCB_DXGKCB_MITIGATEDRANGEUPDATE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_1`).
            DxgkCbMitigatedRangeUpdate: DXGKCB_DXGKCB_MITIGATEDRANGEUPDATE,
            /// [`DXGKCB_INVALIDATEHWCONTEXT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkCbInvalidateHwContext: DXGKCB_INVALIDATEHWCONTEXT,
            /// [`DXGKCB_INDICATE_CONNECTOR_CHANGE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkCbIndicateConnectorChange: DXGKCB_INDICATE_CONNECTOR_CHANGE,
            /// [`DXGKCB_UNBLOCKUEFIFRAMEBUFFERRANGES`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkCbUnblockUEFIFrameBufferRanges: DXGKCB_UNBLOCKUEFIFRAMEBUFFERRANGES,
            /// [`DXGKCB_ACQUIRE_POST_DISPLAY_OWNERSHIP2`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkCbAcquirePostDisplayOwnership2: DXGKCB_ACQUIRE_POST_DISPLAY_OWNERSHIP2,
            /// [`DXGKCB_SETPROTECTEDSESSIONSTATUS`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_3`).
            DxgkCbSetProtectedSessionStatus: DXGKCB_SETPROTECTEDSESSIONSTATUS,
            /// [`DXGKCB_ALLOCATECONTIGUOUSMEMORY`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkCbAllocateContiguousMemory: DXGKCB_ALLOCATECONTIGUOUSMEMORY,
            /// [`DXGKCB_FREECONTIGUOUSMEMORY`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkCbFreeContiguousMemory: DXGKCB_FREECONTIGUOUSMEMORY,
            /// [`DXGKCB_ALLOCATEPAGESFORMDL`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkCbAllocatePagesForMdl: DXGKCB_ALLOCATEPAGESFORMDL,
            /// [`DXGKCB_FREEPAGESFROMMDL`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkCbFreePagesFromMdl: DXGKCB_FREEPAGESFROMMDL,
            /// [`DXGKCB_PINFRAMEBUFFERFORSAVE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkCbPinFrameBufferForSave: DXGKCB_PINFRAMEBUFFERFORSAVE,
            /// [`DXGKCB_UNPINFRAMEBUFFERFORSAVE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkCbUnpinFrameBufferForSave: DXGKCB_UNPINFRAMEBUFFERFORSAVE,
            /// [`DXGKCB_MAPFRAMEBUFFERPOINTER`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkCbMapFrameBufferPointer: DXGKCB_MAPFRAMEBUFFERPOINTER,
            /// [`DXGKCB_UNMAPFRAMEBUFFERPOINTER`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkCbUnmapFrameBufferPointer: DXGKCB_UNMAPFRAMEBUFFERPOINTER,
            /// [`DXGKCB_MAPMDLTOIOMMU`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkCbMapMdlToIoMmu: DXGKCB_MAPMDLTOIOMMU,
            /// [`DXGKCB_UNMAPMDLFROMIOMMU`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkCbUnmapMdlFromIoMmu: DXGKCB_UNMAPMDLFROMIOMMU,
            /// [`DXGKCB_REPORT_DIAGNOSTIC`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkCbReportDiagnostic: DXGKCB_REPORT_DIAGNOSTIC,
            /// [`DXGKCB_SIGNALEVENT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_5`).
            DxgkCbSignalEvent: DXGKCB_SIGNALEVENT,
            /// [`DXGKCB_ISFEATUREENABLED`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_6`).
            DxgkCbIsFeatureEnabled: DXGKCB_ISFEATUREENABLED,
            /// [`DXGKCB_SAVEMEMORYFORHOTUPDATE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_6`).
            DxgkCbSaveMemoryForHotUpdate: DXGKCB_SAVEMEMORYFORHOTUPDATE,
            /// [`DXGKCB_NOTIFYCURSORSUPPORTCHANGE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_8`).
            DxgkCbNotifyCursorSupportChange: DXGKCB_NOTIFYCURSORSUPPORTCHANGE,
            /// [`DXGKCB_QUERYFEATURESUPPORT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkCbQueryFeatureSupport: DXGKCB_QUERYFEATURESUPPORT,
            /// [`DXGKCB_CREATEPHYSICALMEMORYOBJECT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkCbCreatePhysicalMemoryObject: DXGKCB_CREATEPHYSICALMEMORYOBJECT,
            /// [`DXGKCB_DESTROYPHYSICALMEMORYOBJECT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkCbDestroyPhysicalMemoryObject: DXGKCB_DESTROYPHYSICALMEMORYOBJECT,
            /// [`DXGKCB_MAPPHYSICALMEMORY`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkCbMapPhysicalMemory: DXGKCB_MAPPHYSICALMEMORY,
            /// [`DXGKCB_UNMAPPHYSICALMEMORY`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkCbUnmapPhysicalMemory: DXGKCB_UNMAPPHYSICALMEMORY,
            /// [`DXGKCB_ALLOCATEADL`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkCbAllocateAdl: DXGKCB_ALLOCATEADL,
            /// [`DXGKCB_FREEADL`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkCbFreeAdl: DXGKCB_FREEADL,
            /// [`DXGKCB_OPENPHYSICALMEMORYOBJECT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkCbOpenPhysicalMemoryObject: DXGKCB_OPENPHYSICALMEMORYOBJECT,
            /// [`DXGKCB_CLOSEPHYSICALMEMORYOBJECT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkCbClosePhysicalMemoryObject: DXGKCB_CLOSEPHYSICALMEMORYOBJECT,
            /// [`DXGKCB_PINFRAMEBUFFERFORSAVE2`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkCbPinFrameBufferForSave2: DXGKCB_PINFRAMEBUFFERFORSAVE2,
            /// [`DXGKCB_DISCONNECTDOORBELL`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_1`).
            DxgkCbDisconnectDoorbell: DXGKCB_DISCONNECTDOORBELL,
        }
    }
}

layout!(
    DXGKRNL_INTERFACE,
    size = 576,
    Size = 0,
    Version = 4,
    DeviceHandle = 8,
    DxgkCbEvalAcpiMethod = 16,
    DxgkCbGetDeviceInformation = 24,
    DxgkCbIndicateChildStatus = 32,
    DxgkCbMapMemory = 40,
    DxgkCbQueueDpc = 48,
    DxgkCbQueryServices = 56,
    DxgkCbReadDeviceSpace = 64,
    DxgkCbSynchronizeExecution = 72,
    DxgkCbUnmapMemory = 80,
    DxgkCbWriteDeviceSpace = 88,
    DxgkCbIsDevicePresent = 96,
    DxgkCbGetHandleData = 104,
    DxgkCbGetHandleParent = 112,
    DxgkCbEnumHandleChildren = 120,
    DxgkCbNotifyInterrupt = 128,
    DxgkCbNotifyDpc = 136,
    DxgkCbQueryVidPnInterface = 144,
    DxgkCbQueryMonitorInterface = 152,
    DxgkCbGetCaptureAddress = 160,
    DxgkCbLogEtwEvent = 168,
    DxgkCbExcludeAdapterAccess = 176,
    DxgkCbCreateContextAllocation = 184,
    DxgkCbDestroyContextAllocation = 192,
    DxgkCbSetPowerComponentActive = 200,
    DxgkCbSetPowerComponentIdle = 208,
    DxgkCbAcquirePostDisplayOwnership = 216,
    DxgkCbPowerRuntimeControlRequest = 224,
    DxgkCbSetPowerComponentLatency = 232,
    DxgkCbSetPowerComponentResidency = 240,
    DxgkCbCompleteFStateTransition = 248,
    DxgkCbCompletePStateTransition = 256,
    DxgkCbMapContextAllocation = 264,
    DxgkCbUpdateContextAllocation = 272,
    DxgkCbReserveGpuVirtualAddressRange = 280,
    DxgkCbAcquireHandleData = 288,
    DxgkCbReleaseHandleData = 296,
    DxgkCbHardwareContentProtectionTeardown = 304,
    DxgkCbMultiPlaneOverlayDisabled = 312,
    DxgkCbMitigatedRangeUpdate = 320,
    DxgkCbInvalidateHwContext = 328,
    DxgkCbIndicateConnectorChange = 336,
    DxgkCbUnblockUEFIFrameBufferRanges = 344,
    DxgkCbAcquirePostDisplayOwnership2 = 352,
    DxgkCbSetProtectedSessionStatus = 360,
    DxgkCbAllocateContiguousMemory = 368,
    DxgkCbFreeContiguousMemory = 376,
    DxgkCbAllocatePagesForMdl = 384,
    DxgkCbFreePagesFromMdl = 392,
    DxgkCbPinFrameBufferForSave = 400,
    DxgkCbUnpinFrameBufferForSave = 408,
    DxgkCbMapFrameBufferPointer = 416,
    DxgkCbUnmapFrameBufferPointer = 424,
    DxgkCbMapMdlToIoMmu = 432,
    DxgkCbUnmapMdlFromIoMmu = 440,
    DxgkCbReportDiagnostic = 448,
    DxgkCbSignalEvent = 456,
    DxgkCbIsFeatureEnabled = 464,
    DxgkCbSaveMemoryForHotUpdate = 472,
    DxgkCbNotifyCursorSupportChange = 480,
    DxgkCbQueryFeatureSupport = 488,
    DxgkCbCreatePhysicalMemoryObject = 496,
    DxgkCbDestroyPhysicalMemoryObject = 504,
    DxgkCbMapPhysicalMemory = 512,
    DxgkCbUnmapPhysicalMemory = 520,
    DxgkCbAllocateAdl = 528,
    DxgkCbFreeAdl = 536,
    DxgkCbOpenPhysicalMemoryObject = 544,
    DxgkCbClosePhysicalMemoryObject = 552,
    DxgkCbPinFrameBufferForSave2 = 560,
    DxgkCbDisconnectDoorbell = 568,
);

unbound_fn!(DXGKCB_QUERYVIDPNINTERFACE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_queryvidpninterface");
unbound_fn!(DXGKCB_QUERYMONITORINTERFACE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_querymonitorinterface");
unbound_fn!(DXGKCB_GETCAPTUREADDRESS, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_getcaptureaddress");
unbound_fn!(DXGKCB_CREATECONTEXTALLOCATION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_createcontextallocation");
unbound_fn!(DXGKCB_DESTROYCONTEXTALLOCATION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_destroycontextallocation");
unbound_fn!(DXGKCB_ACQUIRE_POST_DISPLAY_OWNERSHIP, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_acquire_post_display_ownership");
unbound_fn!(DXGKCB_POWERRUNTIMECONTROLREQUEST, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_powerruntimecontrolrequest");
unbound_fn!(DXGKCB_SETPOWERCOMPONENTLATENCY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_setpowercomponentlatency");
unbound_fn!(DXGKCB_SETPOWERCOMPONENTRESIDENCY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_setpowercomponentresidency");
unbound_fn!(DXGKCB_COMPLETEFSTATETRANSITION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_completefstatetransition");
unbound_fn!(DXGKCB_COMPLETEPSTATETRANSITION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgkrnl_interface");
unbound_fn!(DXGKCB_MAPCONTEXTALLOCATION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_mapcontextallocation");
unbound_fn!(DXGKCB_UPDATECONTEXTALLOCATION, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_updatecontextallocation");
unbound_fn!(DXGKCB_RESERVEGPUVIRTUALADDRESSRANGE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_reservegpuvirtualaddressrange");
unbound_fn!(DXGKCB_ACQUIREHANDLEDATA, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_acquirehandledata");
unbound_fn!(DXGKCB_RELEASEHANDLEDATA, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_releasehandledata");
unbound_fn!(DXGKCB_HARDWARECONTENTPROTECTIONTEARDOWN, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_hardwarecontentprotectionteardown");
unbound_fn!(DXGKCB_MULTIPLANEOVERLAYDISABLED, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_multiplaneoverlaydisabled");
unbound_fn!(DXGKCB_DXGKCB_MITIGATEDRANGEUPDATE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgkrnl_interface");
unbound_fn!(DXGKCB_INDICATE_CONNECTOR_CHANGE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_indicate_connector_change");
unbound_fn!(DXGKCB_UNBLOCKUEFIFRAMEBUFFERRANGES, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgkrnl_interface");
unbound_fn!(DXGKCB_ACQUIRE_POST_DISPLAY_OWNERSHIP2, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_acquire_post_display_ownership2");
unbound_fn!(DXGKCB_SETPROTECTEDSESSIONSTATUS, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgkrnl_interface");
c_type! {
    /// `DXGKARGCB_ALLOCATECONTIGUOUSMEMORY`: in/out arguments of
    /// [`DXGKCB_ALLOCATECONTIGUOUSMEMORY`] (WDDM 2.4+). Dxgkrnl returns non-paged, physically
    /// contiguous memory already mapped for the device's IOMMU.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkargcb_allocatecontiguousmemory>
    #[size(56)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_ALLOCATECONTIGUOUSMEMORY {
        /// Bytes to allocate.
        #[offset(0)]
        pub NumberOfBytes: SIZE_T,
        /// Lowest physical address the device accepts.
        #[offset(8)]
        pub LowestAcceptableAddress: PHYSICAL_ADDRESS,
        /// Highest physical address the device accepts.
        #[offset(16)]
        pub HighestAcceptableAddress: PHYSICAL_ADDRESS,
        /// The allocation may not cross a multiple of this (0: no constraint).
        #[offset(24)]
        pub BoundaryAddressMultiple: PHYSICAL_ADDRESS,
        /// Caching of the CPU mapping (`DXGK_MEMORY_CACHING_TYPE`, values as
        /// `MEMORY_CACHING_TYPE`).
        #[offset(32)]
        pub CacheType: MEMORY_CACHING_TYPE,
        /// Out: Dxgkrnl's handle for freeing.
        #[offset(40)]
        pub hMemoryHandle: HANDLE,
        /// Out: kernel VA of the memory.
        #[offset(48)]
        pub pMemory: PVOID,
    }
}

zeroed_default!(DXGKARGCB_ALLOCATECONTIGUOUSMEMORY);

/// `DXGKCB_ALLOCATECONTIGUOUSMEMORY` (PASSIVE).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_allocatecontiguousmemory>
pub type DXGKCB_ALLOCATECONTIGUOUSMEMORY = DDI_FN<*mut DXGKARGCB_ALLOCATECONTIGUOUSMEMORY>;

c_type! {
    /// `DXGKARGCB_FREECONTIGUOUSMEMORY`: arguments of [`DXGKCB_FREECONTIGUOUSMEMORY`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkargcb_freecontiguousmemory>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_FREECONTIGUOUSMEMORY {
        /// The handle [`DXGKCB_ALLOCATECONTIGUOUSMEMORY`] returned.
        #[offset(0)]
        pub hMemoryHandle: HANDLE,
    }
}

/// `DXGKCB_FREECONTIGUOUSMEMORY` (PASSIVE).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_freecontiguousmemory>
pub type DXGKCB_FREECONTIGUOUSMEMORY = DDI_FN<*const DXGKARGCB_FREECONTIGUOUSMEMORY>;
unbound_fn!(DXGKCB_ALLOCATEPAGESFORMDL, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_allocatepagesformdl");
unbound_fn!(DXGKCB_FREEPAGESFROMMDL, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_freepagesfrommdl");
unbound_fn!(DXGKCB_PINFRAMEBUFFERFORSAVE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_pinframebufferforsave");
unbound_fn!(DXGKCB_UNPINFRAMEBUFFERFORSAVE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_unpinframebufferforsave");
unbound_fn!(DXGKCB_MAPFRAMEBUFFERPOINTER, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_mapframebufferpointer");
unbound_fn!(DXGKCB_UNMAPFRAMEBUFFERPOINTER, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_unmapframebufferpointer");
unbound_fn!(DXGKCB_MAPMDLTOIOMMU, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_mapmdltoiommu");
unbound_fn!(DXGKCB_UNMAPMDLFROMIOMMU, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_unmapmdlfromiommu");
unbound_fn!(DXGKCB_REPORT_DIAGNOSTIC, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkcb_report_diagnostic");
unbound_fn!(DXGKCB_SIGNALEVENT, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_signalevent");
unbound_fn!(DXGKCB_ISFEATUREENABLED, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_isfeatureenabled");
unbound_fn!(DXGKCB_SAVEMEMORYFORHOTUPDATE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_savememoryforhotupdate");
unbound_fn!(DXGKCB_NOTIFYCURSORSUPPORTCHANGE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_notifycursorsupportchange");
unbound_fn!(DXGKCB_CREATEPHYSICALMEMORYOBJECT, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_createphysicalmemoryobject");
unbound_fn!(DXGKCB_DESTROYPHYSICALMEMORYOBJECT, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_destroyphysicalmemoryobject");
unbound_fn!(DXGKCB_MAPPHYSICALMEMORY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_mapphysicalmemory");
unbound_fn!(DXGKCB_UNMAPPHYSICALMEMORY, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_unmapphysicalmemory");
unbound_fn!(DXGKCB_ALLOCATEADL, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_allocateadl");
unbound_fn!(DXGKCB_FREEADL, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_freeadl");
unbound_fn!(DXGKCB_OPENPHYSICALMEMORYOBJECT, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_openphysicalmemoryobject");
unbound_fn!(DXGKCB_CLOSEPHYSICALMEMORYOBJECT, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_closephysicalmemoryobject");
unbound_fn!(DXGKCB_PINFRAMEBUFFERFORSAVE2, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_pinframebufferforsave2");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_table_shape() {
        assert_eq!(DXGKRNL_INTERFACE::SLOT_COUNT, 70);
        assert_eq!(core::mem::size_of::<DXGKRNL_INTERFACE>(), 16 + 8 * 70);
        let d = DXGKRNL_INTERFACE::default();
        assert!(d.slots().all(|(_, set)| !set));
        assert_eq!(
            DXGKRNL_INTERFACE::SLOT_NAMES.last(),
            Some(&"DxgkCbDisconnectDoorbell")
        );
    }
}
