//! Driver initialisation: `DRIVER_INITIALIZATION_DATA` (dispmprt.h), the
//! `DXGKDDI_INTERFACE_VERSION_*` selectors (d3dukmdt.h) and the DDI function-pointer types of
//! its slots.
//!
//! Slot list and order: the `DRIVER_INITIALIZATION_DATA` reference page (members annotated
//! with the interface version that introduced them), cross-checked slot by slot against an
//! offset table generated from the 10.0.28000 WDK dispmprt.h (192 slots + `Version`, 1544
//! bytes, `DxgkDdiResetDisplayEngine` at 0x600) and against the Microsoft dispmprt.h of the
//! WDDM 2.3 era for the first 129 slots.
//!
//! A slot's prototype lives in its concept's module (present, submission, ...), re-exported
//! here; a slot whose signature is not bound yet has there a placeholder with the header's name
//! ([`PFN_UNBOUND`] through `unbound_fn!`), so binding it edits that module alone.

use crate::adapter::*;
pub use crate::adapter::{
    PDXGKDDI_BEGINEXCLUSIVEACCESS, PDXGKDDI_CREATEPROTECTEDSESSION,
    PDXGKDDI_DESTROYPROTECTEDSESSION, PDXGKDDI_ENDEXCLUSIVEACCESS, PDXGKDDI_ENDLIVEMIGRATION,
    PDXGKDDI_GET_CHILD_CONTAINER_ID, PDXGKDDI_NOTIFY_SURPRISE_REMOVAL,
    PDXGKDDI_PREPARELIVEMIGRATION, PDXGKDDI_RESTOREIMMUTABLEMIGRATIONDATA,
    PDXGKDDI_RESTOREMEMORYFORHOTUPDATE, PDXGKDDI_RESTOREMUTABLEMIGRATIONDATA,
    PDXGKDDI_SAVEIMMUTABLEMIGRATIONDATA, PDXGKDDI_SAVEMEMORYFORHOTUPDATE,
    PDXGKDDI_SAVEMUTABLEMIGRATIONDATA, PDXGKDDI_SETVIRTUALFUNCTIONPAUSESTATE,
    PDXGKDDI_SETVIRTUALGPURESOURCES2, PDXGKDDI_SETVIRTUALMACHINEDATA,
    PDXGKDDI_WRITEVIRTUALIZEDINTERRUPT,
};
pub use crate::allocation::{
    PDXGKDDI_ACQUIRESWIZZLINGRANGE, PDXGKDDI_CLOSEALLOCATION, PDXGKDDI_CREATEALLOCATION,
    PDXGKDDI_CREATEPROCESS, PDXGKDDI_DESCRIBEALLOCATION, PDXGKDDI_DESTROYALLOCATION,
    PDXGKDDI_DESTROYPROCESS, PDXGKDDI_GETROOTPAGETABLESIZE,
    PDXGKDDI_GETSTANDARDALLOCATIONDRIVERDATA, PDXGKDDI_OPENALLOCATIONINFO,
    PDXGKDDI_RELEASESWIZZLINGRANGE, PDXGKDDI_SETALLOCATIONBACKINGSTORE, PDXGKDDI_SETROOTPAGETABLE,
    PDXGKDDI_VALIDATEUPDATEALLOCATIONPROPERTY,
};
use crate::basic::*;
use crate::dxgkrnl::DXGKRNL_INTERFACE;
pub use crate::fence::{
    PDXGKDDI_CLOSENATIVEFENCE, PDXGKDDI_CREATECPUEVENT, PDXGKDDI_CREATENATIVEFENCE,
    PDXGKDDI_DESTROYCPUEVENT, PDXGKDDI_DESTROYNATIVEFENCE, PDXGKDDI_OPENNATIVEFENCE,
    PDXGKDDI_SETNATIVEFENCELOGBUFFER, PDXGKDDI_SIGNALMONITOREDFENCE,
    PDXGKDDI_UPDATECURRENTVALUESFROMCPU, PDXGKDDI_UPDATEMONITOREDVALUES,
    PDXGKDDI_UPDATENATIVEFENCELOGS,
};
pub use crate::hws::{
    PDXGKDDI_CREATEHWCONTEXT, PDXGKDDI_DESTROYHWCONTEXT, PDXGKDDI_NOTIFYCONTEXTPRIORITYCHANGE,
    PDXGKDDI_NOTIFYFOCUSPRESENT, PDXGKDDI_RESETHWENGINE, PDXGKDDI_RESUMEHWENGINE,
    PDXGKDDI_SETCONTEXTSCHEDULINGPROPERTIES, PDXGKDDI_SETSCHEDULINGLOGBUFFER,
    PDXGKDDI_SETUPPRIORITYBANDS, PDXGKDDI_SWITCHTOHWCONTEXTLIST, PDXGKDDI_UPDATEHWCONTEXTSTATE,
};
pub use crate::kmtest::PDXGKDDI_ESCAPE;
use crate::macros::{ddi_table, extern_fn, layout};
pub use crate::memory::{
    PDXGKDDI_CREATEMEMORYBASIS, PDXGKDDI_DESTROYMEMORYBASIS, PDXGKDDI_MAPCPUHOSTAPERTURE,
    PDXGKDDI_QUERYDIRTYBITDATA, PDXGKDDI_SETVIDEOPROTECTEDREGION, PDXGKDDI_STARTDIRTYTRACKING,
    PDXGKDDI_STOPDIRTYTRACKING, PDXGKDDI_UNMAPCPUHOSTAPERTURE,
};
pub use crate::power::{
    PDXGKDDIPOWERRUNTIMECONTROLREQUEST, PDXGKDDISETPOWERPSTATE,
    PDXGKDDI_POWERRUNTIMESETDEVICEHANDLE, PDXGKDDI_SETTRACKEDWORKLOADPOWERLEVEL,
};
pub use crate::present::{
    PDXGKDDI_CANCELFLIPS, PDXGKDDI_CANCELQUEUEDFLIPS, PDXGKDDI_CHECKMULTIPLANEOVERLAYSUPPORT,
    PDXGKDDI_CHECKMULTIPLANEOVERLAYSUPPORT2, PDXGKDDI_CHECKMULTIPLANEOVERLAYSUPPORT3,
    PDXGKDDI_COMMITVIDPN, PDXGKDDI_CONTROLINTERRUPT, PDXGKDDI_CONTROLINTERRUPT2,
    PDXGKDDI_CONTROLINTERRUPT3, PDXGKDDI_CONTROLMODEBEHAVIOR, PDXGKDDI_CREATEOVERLAY,
    PDXGKDDI_CREATEPERIODICFRAMENOTIFICATION, PDXGKDDI_DESTROYOVERLAY,
    PDXGKDDI_DESTROYPERIODICFRAMENOTIFICATION, PDXGKDDI_DISPLAYDETECTCONTROL,
    PDXGKDDI_ENUMVIDPNCOFUNCMODALITY, PDXGKDDI_EXCHANGEPRESTARTINFO, PDXGKDDI_FLIPOVERLAY,
    PDXGKDDI_GETMULTIPLANEOVERLAYCAPS, PDXGKDDI_GETPOSTCOMPOSITIONCAPS, PDXGKDDI_GETSCANLINE,
    PDXGKDDI_ISSUPPORTEDVIDPN, PDXGKDDI_POSTMULTIPLANEOVERLAYPRESENT, PDXGKDDI_PRESENT,
    PDXGKDDI_PRESENTTOHWQUEUE, PDXGKDDI_QUERYCONNECTIONCHANGE, PDXGKDDI_QUERYVIDPNHWCAPABILITY,
    PDXGKDDI_RECOMMENDFUNCTIONALVIDPN, PDXGKDDI_RECOMMENDMONITORMODES,
    PDXGKDDI_RECOMMENDVIDPNTOPOLOGY, PDXGKDDI_RESETDISPLAYENGINE,
    PDXGKDDI_SETDISPLAYPRIVATEDRIVERFORMAT, PDXGKDDI_SETFLIPQUEUELOGBUFFER,
    PDXGKDDI_SETINTERRUPTTARGETPRESENTID, PDXGKDDI_SETPALETTE, PDXGKDDI_SETPOINTERPOSITION,
    PDXGKDDI_SETPOINTERSHAPE, PDXGKDDI_SETTARGETADJUSTEDCOLORIMETRY,
    PDXGKDDI_SETTARGETADJUSTEDCOLORIMETRY2, PDXGKDDI_SETTARGETANALOGCOPYPROTECTION,
    PDXGKDDI_SETTARGETCONTENTTYPE, PDXGKDDI_SETTARGETGAMMA, PDXGKDDI_SETTIMINGSFROMVIDPN,
    PDXGKDDI_SETVIDPNSOURCEADDRESS, PDXGKDDI_SETVIDPNSOURCEADDRESSWITHMULTIPLANEOVERLAY,
    PDXGKDDI_SETVIDPNSOURCEADDRESSWITHMULTIPLANEOVERLAY2,
    PDXGKDDI_SETVIDPNSOURCEADDRESSWITHMULTIPLANEOVERLAY3, PDXGKDDI_SETVIDPNSOURCEVISIBILITY,
    PDXGKDDI_STOPCAPTURE, PDXGKDDI_STOP_DEVICE_AND_RELEASE_POST_DISPLAY_OWNERSHIP,
    PDXGKDDI_SYSTEM_DISPLAY_ENABLE, PDXGKDDI_SYSTEM_DISPLAY_WRITE,
    PDXGKDDI_UPDATEACTIVEVIDPNPRESENTPATH, PDXGKDDI_UPDATEFLIPQUEUELOG,
    PDXGKDDI_UPDATEMONITORLINKINFO, PDXGKDDI_UPDATEOVERLAY,
};
pub use crate::submission::{
    PDXGKDDISETPOWERCOMPONENTFSTATE, PDXGKDDI_CONNECTDOORBELL, PDXGKDDI_CREATECONTEXT,
    PDXGKDDI_CREATEDEVICE, PDXGKDDI_CREATEDOORBELL, PDXGKDDI_CREATEHWQUEUE,
    PDXGKDDI_DESTROYCONTEXT, PDXGKDDI_DESTROYDEVICE, PDXGKDDI_DESTROYDOORBELL,
    PDXGKDDI_DESTROYHWQUEUE, PDXGKDDI_DISCONNECTDOORBELL, PDXGKDDI_FORMATHISTORYBUFFER,
    PDXGKDDI_GETNODEMETADATA, PDXGKDDI_NOTIFYWORKSUBMISSION, PDXGKDDI_PATCH, PDXGKDDI_RENDER,
    PDXGKDDI_RENDERGDI, PDXGKDDI_RENDERKM, PDXGKDDI_RESUMECONTEXT, PDXGKDDI_SUBMITCOMMANDTOHWQUEUE,
    PDXGKDDI_SUSPENDCONTEXT, PDXGKDDI_VALIDATESUBMITCOMMAND,
};
pub use crate::tdr::{
    PDXGKDDI_BUILDPAGINGBUFFER, PDXGKDDI_CANCELCOMMAND, PDXGKDDI_COLLECTDBGINFO,
    PDXGKDDI_COLLECTDBGINFO2, PDXGKDDI_COLLECTDIAGNOSTICINFO, PDXGKDDI_CONTROLDIAGNOSTICREPORTING,
    PDXGKDDI_PREEMPTCOMMAND, PDXGKDDI_QUERYCURRENTFENCE, PDXGKDDI_QUERYDEPENDENTENGINEGROUP,
    PDXGKDDI_QUERYDIAGNOSTICTYPESSUPPORT, PDXGKDDI_QUERYENGINESTATUS, PDXGKDDI_RESETENGINE,
    PDXGKDDI_SUBMITCOMMAND, PDXGKDDI_SUBMITCOMMANDVIRTUAL,
};

/// Vista.
pub const DXGKDDI_INTERFACE_VERSION_VISTA: ULONG = 0x1052;
/// Vista SP1.
pub const DXGKDDI_INTERFACE_VERSION_VISTA_SP1: ULONG = 0x1053;
/// Windows 7.
pub const DXGKDDI_INTERFACE_VERSION_WIN7: ULONG = 0x2005;
/// Windows 8.
pub const DXGKDDI_INTERFACE_VERSION_WIN8: ULONG = 0x300E;
/// WDDM 1.3 (Windows 8.1).
pub const DXGKDDI_INTERFACE_VERSION_WDDM1_3: ULONG = 0x4002;
/// WDDM 1.3 with path-independent rotation.
pub const DXGKDDI_INTERFACE_VERSION_WDDM1_3_PATH_INDEPENDENT_ROTATION: ULONG = 0x4003;
/// WDDM 2.0.
pub const DXGKDDI_INTERFACE_VERSION_WDDM2_0: ULONG = 0x5023;
/// WDDM 2.1.
pub const DXGKDDI_INTERFACE_VERSION_WDDM2_1: ULONG = 0x6003;
/// WDDM 2.1.5.
pub const DXGKDDI_INTERFACE_VERSION_WDDM2_1_5: ULONG = 0x6010;
/// WDDM 2.1.6.
pub const DXGKDDI_INTERFACE_VERSION_WDDM2_1_6: ULONG = 0x6011;
/// WDDM 2.2.
pub const DXGKDDI_INTERFACE_VERSION_WDDM2_2: ULONG = 0x700A;
/// WDDM 2.3.
pub const DXGKDDI_INTERFACE_VERSION_WDDM2_3: ULONG = 0x8001;
/// WDDM 2.4.
pub const DXGKDDI_INTERFACE_VERSION_WDDM2_4: ULONG = 0x9006;
/// WDDM 2.5.
pub const DXGKDDI_INTERFACE_VERSION_WDDM2_5: ULONG = 0xA00B;
/// WDDM 2.6.
pub const DXGKDDI_INTERFACE_VERSION_WDDM2_6: ULONG = 0xB004;
/// WDDM 2.7.
pub const DXGKDDI_INTERFACE_VERSION_WDDM2_7: ULONG = 0xC004;
/// WDDM 2.8.
pub const DXGKDDI_INTERFACE_VERSION_WDDM2_8: ULONG = 0xD001;
/// WDDM 2.9.
pub const DXGKDDI_INTERFACE_VERSION_WDDM2_9: ULONG = 0xE003;
/// WDDM 3.0 (Windows 11 21H2).
pub const DXGKDDI_INTERFACE_VERSION_WDDM3_0: ULONG = 0xF003;
/// WDDM 3.1 (Windows 11 22H2).
pub const DXGKDDI_INTERFACE_VERSION_WDDM3_1: ULONG = 0x1_0004;
/// WDDM 3.2 (Windows 11 24H2), as defined by the 10.0.26100 WDK. (A later WDK reportedly uses
/// 0x11008 for the same table layout.)
pub const DXGKDDI_INTERFACE_VERSION_WDDM3_2: ULONG = 0x1_1007;
/// The version rvgpu targets.
pub const DXGKDDI_INTERFACE_VERSION: ULONG = DXGKDDI_INTERFACE_VERSION_WDDM3_2;

extern_fn! {
    /// `DXGKDDI_ADD_DEVICE`: create the adapter context.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_add_device>
    pub type PDXGKDDI_ADD_DEVICE = fn(
        PhysicalDeviceObject: PDEVICE_OBJECT,
        MiniportDeviceContext: *mut PVOID,
    ) -> NTSTATUS;
    /// `DXGKDDI_START_DEVICE`: start the adapter; receives the `DXGKRNL_INTERFACE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_start_device>
    pub type PDXGKDDI_START_DEVICE = fn(
        MiniportDeviceContext: PVOID,
        DxgkStartInfo: *mut DXGK_START_INFO,
        DxgkInterface: *mut DXGKRNL_INTERFACE,
        NumberOfVideoPresentSources: *mut ULONG,
        NumberOfChildren: *mut ULONG,
    ) -> NTSTATUS;
    /// `DXGKDDI_STOP_DEVICE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_stop_device>
    pub type PDXGKDDI_STOP_DEVICE = fn(MiniportDeviceContext: PVOID) -> NTSTATUS;
    /// `DXGKDDI_REMOVE_DEVICE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_remove_device>
    pub type PDXGKDDI_REMOVE_DEVICE = fn(MiniportDeviceContext: PVOID) -> NTSTATUS;
    /// `DXGKDDI_DISPATCH_IO_REQUEST`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_dispatch_io_request>
    pub type PDXGKDDI_DISPATCH_IO_REQUEST = fn(
        MiniportDeviceContext: PVOID,
        VidPnSourceId: ULONG,
        VideoRequestPacket: PVIDEO_REQUEST_PACKET,
    ) -> NTSTATUS;
}
/// `DXGKDDI_INTERRUPT_ROUTINE`: the ISR; returns TRUE if the interrupt was the device's.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_interrupt_routine>
pub type PDXGKDDI_INTERRUPT_ROUTINE = Option<
    unsafe extern "system" fn(MiniportDeviceContext: PVOID, MessageNumber: ULONG) -> BOOLEAN,
>;
extern_fn! {
    /// `DXGKDDI_DPC_ROUTINE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_dpc_routine>
    pub type PDXGKDDI_DPC_ROUTINE = fn(MiniportDeviceContext: PVOID);
    /// `DXGKDDI_QUERY_CHILD_RELATIONS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_query_child_relations>
    pub type PDXGKDDI_QUERY_CHILD_RELATIONS = fn(
        MiniportDeviceContext: PVOID,
        ChildRelations: PDXGK_CHILD_DESCRIPTOR,
        ChildRelationsSize: ULONG,
    ) -> NTSTATUS;
    /// `DXGKDDI_QUERY_CHILD_STATUS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_query_child_status>
    pub type PDXGKDDI_QUERY_CHILD_STATUS = fn(
        MiniportDeviceContext: PVOID,
        ChildStatus: PDXGK_CHILD_STATUS,
        NonDestructiveOnly: BOOLEAN,
    ) -> NTSTATUS;
    /// `DXGKDDI_QUERY_DEVICE_DESCRIPTOR`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_query_device_descriptor>
    pub type PDXGKDDI_QUERY_DEVICE_DESCRIPTOR = fn(
        MiniportDeviceContext: PVOID,
        ChildUid: ULONG,
        DeviceDescriptor: PDXGK_DEVICE_DESCRIPTOR,
    ) -> NTSTATUS;
    /// `DXGKDDI_SET_POWER_STATE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_set_power_state>
    pub type PDXGKDDI_SET_POWER_STATE = fn(
        MiniportDeviceContext: PVOID,
        DeviceUid: ULONG,
        DevicePowerState: DEVICE_POWER_STATE,
        ActionType: POWER_ACTION,
    ) -> NTSTATUS;
    /// `DXGKDDI_NOTIFY_ACPI_EVENT`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_notify_acpi_event>
    pub type PDXGKDDI_NOTIFY_ACPI_EVENT = fn(
        MiniportDeviceContext: PVOID,
        EventType: DXGK_EVENT_TYPE,
        Event: ULONG,
        Argument: PVOID,
        AcpiFlags: *mut ULONG,
    ) -> NTSTATUS;
    /// `DXGKDDI_RESET_DEVICE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_reset_device>
    pub type PDXGKDDI_RESET_DEVICE = fn(MiniportDeviceContext: PVOID);
    /// `DXGKDDI_UNLOAD`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_unload>
    pub type PDXGKDDI_UNLOAD = fn();
    /// `DXGKDDI_QUERY_INTERFACE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_query_interface>
    pub type PDXGKDDI_QUERY_INTERFACE = fn(
        MiniportDeviceContext: PVOID,
        QueryInterface: PQUERY_INTERFACE,
    ) -> NTSTATUS;
    /// `DXGKDDI_CONTROL_ETW_LOGGING`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_control_etw_logging>
    pub type PDXGKDDI_CONTROL_ETW_LOGGING = fn(Enable: BOOLEAN, Flags: ULONG, Level: UCHAR);
    /// `DXGKDDI_LINK_DEVICE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_link_device>
    pub type PDXGKDDI_LINK_DEVICE = fn(
        PhysicalDeviceObject: PDEVICE_OBJECT,
        MiniportDeviceContext: PVOID,
        LinkedDevice: *mut LINKED_DEVICE,
    ) -> NTSTATUS;
}
/// `DXGKDDI_QUERYADAPTERINFO`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_queryadapterinfo>
pub type PDXGKDDI_QUERYADAPTERINFO = DDI_FN<*const DXGKARG_QUERYADAPTERINFO>;
extern_fn! {
    /// `DXGKDDI_SETSTABLEPOWERSTATE` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
    /// IN_CONST_PDXGKARG_SETSTABLEPOWERSTATE pArgs)`, returns nothing.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setstablepowerstate>
    pub type PDXGKDDI_SETSTABLEPOWERSTATE = fn(
        hAdapter: HANDLE,
        pArgs: *const DXGKARG_SETSTABLEPOWERSTATE,
    );
    /// `DXGKDDI_CALIBRATEGPUCLOCK` (DISPATCH_LEVEL): `(IN_CONST_HANDLE hAdapter, IN UINT32
    /// NodeOrdinal, IN UINT32 EngineOrdinal, OUT_PDXGKARG_CALIBRATEGPUCLOCK pClockCalibration)`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_calibrategpuclock>
    pub type PDXGKDDI_CALIBRATEGPUCLOCK = fn(
        hAdapter: HANDLE,
        NodeOrdinal: UINT,
        EngineOrdinal: UINT,
        pClockCalibration: *mut DXGKARG_CALIBRATEGPUCLOCK,
    ) -> NTSTATUS;
    /// `DXGKDDI_RESETFROMTIMEOUT`: adapter-wide TDR reset.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_resetfromtimeout>
    pub type PDXGKDDI_RESETFROMTIMEOUT = fn(hAdapter: HANDLE) -> NTSTATUS;
    /// `DXGKDDI_RESTARTFROMTIMEOUT`: resume after an adapter-wide TDR reset.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_restartfromtimeout>
    pub type PDXGKDDI_RESTARTFROMTIMEOUT = fn(hAdapter: HANDLE) -> NTSTATUS;
}

/// `(slot name, is non-null)` for every slot of `d`, in header order (192 entries).
pub fn filled_slots(
    d: &DRIVER_INITIALIZATION_DATA,
) -> impl Iterator<Item = (&'static str, bool)> + '_ {
    d.slots()
}

ddi_table! {
    /// `DRIVER_INITIALIZATION_DATA`: the table of miniport entry points handed to
    /// `DxgkInitialize` from `DriverEntry` (dispmprt.h), complete through
    /// [`DXGKDDI_INTERFACE_VERSION_WDDM3_2`]: `Version` followed by 192 pointer slots in header
    /// order. A missing or misplaced slot shifts every later one, so each offset is asserted.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_driver_initialization_data>
    // wdk-layout-check: prefix: WDDM 3.2 slots follow the 10.0.22621 header's last member
    pub struct DRIVER_INITIALIZATION_DATA {
        header {
            /// Interface version the driver implements, e.g. [`DXGKDDI_INTERFACE_VERSION_WDDM3_2`].
            Version: ULONG = 0,
        }
        slots {
            /// [`PDXGKDDI_ADD_DEVICE`] (present since all versions).
            DxgkDdiAddDevice: PDXGKDDI_ADD_DEVICE,
            /// [`PDXGKDDI_START_DEVICE`] (present since all versions).
            DxgkDdiStartDevice: PDXGKDDI_START_DEVICE,
            /// [`PDXGKDDI_STOP_DEVICE`] (present since all versions).
            DxgkDdiStopDevice: PDXGKDDI_STOP_DEVICE,
            /// [`PDXGKDDI_REMOVE_DEVICE`] (present since all versions).
            DxgkDdiRemoveDevice: PDXGKDDI_REMOVE_DEVICE,
            /// [`PDXGKDDI_DISPATCH_IO_REQUEST`] (present since all versions).
            DxgkDdiDispatchIoRequest: PDXGKDDI_DISPATCH_IO_REQUEST,
            /// [`PDXGKDDI_INTERRUPT_ROUTINE`] (present since all versions).
            DxgkDdiInterruptRoutine: PDXGKDDI_INTERRUPT_ROUTINE,
            /// [`PDXGKDDI_DPC_ROUTINE`] (present since all versions).
            DxgkDdiDpcRoutine: PDXGKDDI_DPC_ROUTINE,
            /// [`PDXGKDDI_QUERY_CHILD_RELATIONS`] (present since all versions).
            DxgkDdiQueryChildRelations: PDXGKDDI_QUERY_CHILD_RELATIONS,
            /// [`PDXGKDDI_QUERY_CHILD_STATUS`] (present since all versions).
            DxgkDdiQueryChildStatus: PDXGKDDI_QUERY_CHILD_STATUS,
            /// [`PDXGKDDI_QUERY_DEVICE_DESCRIPTOR`] (present since all versions).
            DxgkDdiQueryDeviceDescriptor: PDXGKDDI_QUERY_DEVICE_DESCRIPTOR,
            /// [`PDXGKDDI_SET_POWER_STATE`] (present since all versions).
            DxgkDdiSetPowerState: PDXGKDDI_SET_POWER_STATE,
            /// [`PDXGKDDI_NOTIFY_ACPI_EVENT`] (present since all versions).
            DxgkDdiNotifyAcpiEvent: PDXGKDDI_NOTIFY_ACPI_EVENT,
            /// [`PDXGKDDI_RESET_DEVICE`] (present since all versions).
            DxgkDdiResetDevice: PDXGKDDI_RESET_DEVICE,
            /// [`PDXGKDDI_UNLOAD`] (present since all versions).
            DxgkDdiUnload: PDXGKDDI_UNLOAD,
            /// [`PDXGKDDI_QUERY_INTERFACE`] (present since all versions).
            DxgkDdiQueryInterface: PDXGKDDI_QUERY_INTERFACE,
            /// [`PDXGKDDI_CONTROL_ETW_LOGGING`] (present since all versions).
            DxgkDdiControlEtwLogging: PDXGKDDI_CONTROL_ETW_LOGGING,
            /// [`PDXGKDDI_QUERYADAPTERINFO`] (present since all versions).
            DxgkDdiQueryAdapterInfo: PDXGKDDI_QUERYADAPTERINFO,
            /// [`PDXGKDDI_CREATEDEVICE`] (present since all versions).
            DxgkDdiCreateDevice: PDXGKDDI_CREATEDEVICE,
            /// [`PDXGKDDI_CREATEALLOCATION`] (present since all versions).
            DxgkDdiCreateAllocation: PDXGKDDI_CREATEALLOCATION,
            /// [`PDXGKDDI_DESTROYALLOCATION`] (present since all versions).
            DxgkDdiDestroyAllocation: PDXGKDDI_DESTROYALLOCATION,
            /// [`PDXGKDDI_DESCRIBEALLOCATION`] (present since all versions).
            DxgkDdiDescribeAllocation: PDXGKDDI_DESCRIBEALLOCATION,
            /// [`PDXGKDDI_GETSTANDARDALLOCATIONDRIVERDATA`] (present since all versions).
            DxgkDdiGetStandardAllocationDriverData: PDXGKDDI_GETSTANDARDALLOCATIONDRIVERDATA,
            /// [`PDXGKDDI_ACQUIRESWIZZLINGRANGE`] (present since all versions).
            DxgkDdiAcquireSwizzlingRange: PDXGKDDI_ACQUIRESWIZZLINGRANGE,
            /// [`PDXGKDDI_RELEASESWIZZLINGRANGE`] (present since all versions).
            DxgkDdiReleaseSwizzlingRange: PDXGKDDI_RELEASESWIZZLINGRANGE,
            /// [`PDXGKDDI_PATCH`] (present since all versions).
            DxgkDdiPatch: PDXGKDDI_PATCH,
            /// [`PDXGKDDI_SUBMITCOMMAND`] (present since all versions).
            DxgkDdiSubmitCommand: PDXGKDDI_SUBMITCOMMAND,
            /// [`PDXGKDDI_PREEMPTCOMMAND`] (present since all versions).
            DxgkDdiPreemptCommand: PDXGKDDI_PREEMPTCOMMAND,
            /// [`PDXGKDDI_BUILDPAGINGBUFFER`] (present since all versions).
            DxgkDdiBuildPagingBuffer: PDXGKDDI_BUILDPAGINGBUFFER,
            /// [`PDXGKDDI_SETPALETTE`] (present since all versions).
            DxgkDdiSetPalette: PDXGKDDI_SETPALETTE,
            /// [`PDXGKDDI_SETPOINTERPOSITION`] (present since all versions).
            DxgkDdiSetPointerPosition: PDXGKDDI_SETPOINTERPOSITION,
            /// [`PDXGKDDI_SETPOINTERSHAPE`] (present since all versions).
            DxgkDdiSetPointerShape: PDXGKDDI_SETPOINTERSHAPE,
            /// [`PDXGKDDI_RESETFROMTIMEOUT`] (present since all versions).
            DxgkDdiResetFromTimeout: PDXGKDDI_RESETFROMTIMEOUT,
            /// [`PDXGKDDI_RESTARTFROMTIMEOUT`] (present since all versions).
            DxgkDdiRestartFromTimeout: PDXGKDDI_RESTARTFROMTIMEOUT,
            /// [`PDXGKDDI_ESCAPE`] (present since all versions).
            DxgkDdiEscape: PDXGKDDI_ESCAPE,
            /// [`PDXGKDDI_COLLECTDBGINFO`] (present since all versions).
            DxgkDdiCollectDbgInfo: PDXGKDDI_COLLECTDBGINFO,
            /// [`PDXGKDDI_QUERYCURRENTFENCE`] (present since all versions).
            DxgkDdiQueryCurrentFence: PDXGKDDI_QUERYCURRENTFENCE,
            /// [`PDXGKDDI_ISSUPPORTEDVIDPN`] (present since all versions).
            DxgkDdiIsSupportedVidPn: PDXGKDDI_ISSUPPORTEDVIDPN,
            /// [`PDXGKDDI_RECOMMENDFUNCTIONALVIDPN`] (present since all versions).
            DxgkDdiRecommendFunctionalVidPn: PDXGKDDI_RECOMMENDFUNCTIONALVIDPN,
            /// [`PDXGKDDI_ENUMVIDPNCOFUNCMODALITY`] (present since all versions).
            DxgkDdiEnumVidPnCofuncModality: PDXGKDDI_ENUMVIDPNCOFUNCMODALITY,
            /// [`PDXGKDDI_SETVIDPNSOURCEADDRESS`] (present since all versions).
            DxgkDdiSetVidPnSourceAddress: PDXGKDDI_SETVIDPNSOURCEADDRESS,
            /// [`PDXGKDDI_SETVIDPNSOURCEVISIBILITY`] (present since all versions).
            DxgkDdiSetVidPnSourceVisibility: PDXGKDDI_SETVIDPNSOURCEVISIBILITY,
            /// [`PDXGKDDI_COMMITVIDPN`] (present since all versions).
            DxgkDdiCommitVidPn: PDXGKDDI_COMMITVIDPN,
            /// [`PDXGKDDI_UPDATEACTIVEVIDPNPRESENTPATH`] (present since all versions).
            DxgkDdiUpdateActiveVidPnPresentPath: PDXGKDDI_UPDATEACTIVEVIDPNPRESENTPATH,
            /// [`PDXGKDDI_RECOMMENDMONITORMODES`] (present since all versions).
            DxgkDdiRecommendMonitorModes: PDXGKDDI_RECOMMENDMONITORMODES,
            /// [`PDXGKDDI_RECOMMENDVIDPNTOPOLOGY`] (present since all versions).
            DxgkDdiRecommendVidPnTopology: PDXGKDDI_RECOMMENDVIDPNTOPOLOGY,
            /// [`PDXGKDDI_GETSCANLINE`] (present since all versions).
            DxgkDdiGetScanLine: PDXGKDDI_GETSCANLINE,
            /// [`PDXGKDDI_STOPCAPTURE`] (present since all versions).
            DxgkDdiStopCapture: PDXGKDDI_STOPCAPTURE,
            /// [`PDXGKDDI_CONTROLINTERRUPT`] (present since all versions).
            DxgkDdiControlInterrupt: PDXGKDDI_CONTROLINTERRUPT,
            /// [`PDXGKDDI_CREATEOVERLAY`] (present since all versions).
            DxgkDdiCreateOverlay: PDXGKDDI_CREATEOVERLAY,
            /// [`PDXGKDDI_DESTROYDEVICE`] (present since all versions).
            DxgkDdiDestroyDevice: PDXGKDDI_DESTROYDEVICE,
            /// [`PDXGKDDI_OPENALLOCATIONINFO`] (present since all versions).
            DxgkDdiOpenAllocation: PDXGKDDI_OPENALLOCATIONINFO,
            /// [`PDXGKDDI_CLOSEALLOCATION`] (present since all versions).
            DxgkDdiCloseAllocation: PDXGKDDI_CLOSEALLOCATION,
            /// [`PDXGKDDI_RENDER`] (present since all versions).
            DxgkDdiRender: PDXGKDDI_RENDER,
            /// [`PDXGKDDI_PRESENT`] (present since all versions).
            DxgkDdiPresent: PDXGKDDI_PRESENT,
            /// [`PDXGKDDI_UPDATEOVERLAY`] (present since all versions).
            DxgkDdiUpdateOverlay: PDXGKDDI_UPDATEOVERLAY,
            /// [`PDXGKDDI_FLIPOVERLAY`] (present since all versions).
            DxgkDdiFlipOverlay: PDXGKDDI_FLIPOVERLAY,
            /// [`PDXGKDDI_DESTROYOVERLAY`] (present since all versions).
            DxgkDdiDestroyOverlay: PDXGKDDI_DESTROYOVERLAY,
            /// [`PDXGKDDI_CREATECONTEXT`] (present since all versions).
            DxgkDdiCreateContext: PDXGKDDI_CREATECONTEXT,
            /// [`PDXGKDDI_DESTROYCONTEXT`] (present since all versions).
            DxgkDdiDestroyContext: PDXGKDDI_DESTROYCONTEXT,
            /// [`PDXGKDDI_LINK_DEVICE`] (present since all versions).
            DxgkDdiLinkDevice: PDXGKDDI_LINK_DEVICE,
            /// [`PDXGKDDI_SETDISPLAYPRIVATEDRIVERFORMAT`] (present since all versions).
            DxgkDdiSetDisplayPrivateDriverFormat: PDXGKDDI_SETDISPLAYPRIVATEDRIVERFORMAT,
            /// Reserved slot (present since `DXGKDDI_INTERFACE_VERSION_WIN7`); must stay null.
            DxgkDdiDescribePageTable: PVOID,
            /// Reserved slot (present since `DXGKDDI_INTERFACE_VERSION_WIN7`); must stay null.
            DxgkDdiUpdatePageTable: PVOID,
            /// Reserved slot (present since `DXGKDDI_INTERFACE_VERSION_WIN7`); must stay null.
            DxgkDdiUpdatePageDirectory: PVOID,
            /// Reserved slot (present since `DXGKDDI_INTERFACE_VERSION_WIN7`); must stay null.
            DxgkDdiMovePageDirectory: PVOID,
            /// Reserved slot (present since `DXGKDDI_INTERFACE_VERSION_WIN7`); must stay null.
            DxgkDdiSubmitRender: PVOID,
            /// Reserved slot (present since `DXGKDDI_INTERFACE_VERSION_WIN7`); must stay null.
            DxgkDdiCreateAllocation2: PVOID,
            /// [`PDXGKDDI_RENDERKM`] (present since `DXGKDDI_INTERFACE_VERSION_WIN7`).
            DxgkDdiRenderKm: PDXGKDDI_RENDERKM,
            /// Reserved slot (present since `DXGKDDI_INTERFACE_VERSION_WIN7`); must stay null.
            Reserved: PVOID,
            /// [`PDXGKDDI_QUERYVIDPNHWCAPABILITY`] (present since `DXGKDDI_INTERFACE_VERSION_WIN7`).
            DxgkDdiQueryVidPnHWCapability: PDXGKDDI_QUERYVIDPNHWCAPABILITY,
            /// [`PDXGKDDISETPOWERCOMPONENTFSTATE`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkDdiSetPowerComponentFState: PDXGKDDISETPOWERCOMPONENTFSTATE,
            /// [`PDXGKDDI_QUERYDEPENDENTENGINEGROUP`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkDdiQueryDependentEngineGroup: PDXGKDDI_QUERYDEPENDENTENGINEGROUP,
            /// [`PDXGKDDI_QUERYENGINESTATUS`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkDdiQueryEngineStatus: PDXGKDDI_QUERYENGINESTATUS,
            /// [`PDXGKDDI_RESETENGINE`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkDdiResetEngine: PDXGKDDI_RESETENGINE,
            /// [`PDXGKDDI_STOP_DEVICE_AND_RELEASE_POST_DISPLAY_OWNERSHIP`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkDdiStopDeviceAndReleasePostDisplayOwnership: PDXGKDDI_STOP_DEVICE_AND_RELEASE_POST_DISPLAY_OWNERSHIP,
            /// [`PDXGKDDI_SYSTEM_DISPLAY_ENABLE`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkDdiSystemDisplayEnable: PDXGKDDI_SYSTEM_DISPLAY_ENABLE,
            /// [`PDXGKDDI_SYSTEM_DISPLAY_WRITE`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkDdiSystemDisplayWrite: PDXGKDDI_SYSTEM_DISPLAY_WRITE,
            /// [`PDXGKDDI_CANCELCOMMAND`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkDdiCancelCommand: PDXGKDDI_CANCELCOMMAND,
            /// [`PDXGKDDI_GET_CHILD_CONTAINER_ID`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkDdiGetChildContainerId: PDXGKDDI_GET_CHILD_CONTAINER_ID,
            /// [`PDXGKDDIPOWERRUNTIMECONTROLREQUEST`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkDdiPowerRuntimeControlRequest: PDXGKDDIPOWERRUNTIMECONTROLREQUEST,
            /// [`PDXGKDDI_SETVIDPNSOURCEADDRESSWITHMULTIPLANEOVERLAY`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkDdiSetVidPnSourceAddressWithMultiPlaneOverlay: PDXGKDDI_SETVIDPNSOURCEADDRESSWITHMULTIPLANEOVERLAY,
            /// [`PDXGKDDI_NOTIFY_SURPRISE_REMOVAL`] (present since `DXGKDDI_INTERFACE_VERSION_WIN8`).
            DxgkDdiNotifySurpriseRemoval: PDXGKDDI_NOTIFY_SURPRISE_REMOVAL,
            /// [`PDXGKDDI_GETNODEMETADATA`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM1_3`).
            DxgkDdiGetNodeMetadata: PDXGKDDI_GETNODEMETADATA,
            /// [`PDXGKDDISETPOWERPSTATE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM1_3`).
            DxgkDdiSetPowerPState: PDXGKDDISETPOWERPSTATE,
            /// [`PDXGKDDI_CONTROLINTERRUPT2`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM1_3`).
            DxgkDdiControlInterrupt2: PDXGKDDI_CONTROLINTERRUPT2,
            /// [`PDXGKDDI_CHECKMULTIPLANEOVERLAYSUPPORT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM1_3`).
            DxgkDdiCheckMultiPlaneOverlaySupport: PDXGKDDI_CHECKMULTIPLANEOVERLAYSUPPORT,
            /// [`PDXGKDDI_CALIBRATEGPUCLOCK`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM1_3`).
            DxgkDdiCalibrateGpuClock: PDXGKDDI_CALIBRATEGPUCLOCK,
            /// [`PDXGKDDI_FORMATHISTORYBUFFER`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM1_3`).
            DxgkDdiFormatHistoryBuffer: PDXGKDDI_FORMATHISTORYBUFFER,
            /// [`PDXGKDDI_RENDERGDI`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkDdiRenderGdi: PDXGKDDI_RENDERGDI,
            /// [`PDXGKDDI_SUBMITCOMMANDVIRTUAL`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkDdiSubmitCommandVirtual: PDXGKDDI_SUBMITCOMMANDVIRTUAL,
            /// [`PDXGKDDI_SETROOTPAGETABLE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkDdiSetRootPageTable: PDXGKDDI_SETROOTPAGETABLE,
            /// [`PDXGKDDI_GETROOTPAGETABLESIZE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkDdiGetRootPageTableSize: PDXGKDDI_GETROOTPAGETABLESIZE,
            /// [`PDXGKDDI_MAPCPUHOSTAPERTURE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkDdiMapCpuHostAperture: PDXGKDDI_MAPCPUHOSTAPERTURE,
            /// [`PDXGKDDI_UNMAPCPUHOSTAPERTURE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkDdiUnmapCpuHostAperture: PDXGKDDI_UNMAPCPUHOSTAPERTURE,
            /// [`PDXGKDDI_CHECKMULTIPLANEOVERLAYSUPPORT2`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkDdiCheckMultiPlaneOverlaySupport2: PDXGKDDI_CHECKMULTIPLANEOVERLAYSUPPORT2,
            /// [`PDXGKDDI_CREATEPROCESS`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkDdiCreateProcess: PDXGKDDI_CREATEPROCESS,
            /// [`PDXGKDDI_DESTROYPROCESS`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkDdiDestroyProcess: PDXGKDDI_DESTROYPROCESS,
            /// [`PDXGKDDI_SETVIDPNSOURCEADDRESSWITHMULTIPLANEOVERLAY2`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkDdiSetVidPnSourceAddressWithMultiPlaneOverlay2: PDXGKDDI_SETVIDPNSOURCEADDRESSWITHMULTIPLANEOVERLAY2,
            /// Reserved slot (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`); must stay null.
            Reserved1: PVOID,
            /// Reserved slot (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`); must stay null.
            Reserved2: PVOID,
            /// [`PDXGKDDI_POWERRUNTIMESETDEVICEHANDLE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkDdiPowerRuntimeSetDeviceHandle: PDXGKDDI_POWERRUNTIMESETDEVICEHANDLE,
            /// [`PDXGKDDI_SETSTABLEPOWERSTATE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkDdiSetStablePowerState: PDXGKDDI_SETSTABLEPOWERSTATE,
            /// [`PDXGKDDI_SETVIDEOPROTECTEDREGION`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_0`).
            DxgkDdiSetVideoProtectedRegion: PDXGKDDI_SETVIDEOPROTECTEDREGION,
            /// [`PDXGKDDI_CHECKMULTIPLANEOVERLAYSUPPORT3`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_1`).
            DxgkDdiCheckMultiPlaneOverlaySupport3: PDXGKDDI_CHECKMULTIPLANEOVERLAYSUPPORT3,
            /// [`PDXGKDDI_SETVIDPNSOURCEADDRESSWITHMULTIPLANEOVERLAY3`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_1`).
            DxgkDdiSetVidPnSourceAddressWithMultiPlaneOverlay3: PDXGKDDI_SETVIDPNSOURCEADDRESSWITHMULTIPLANEOVERLAY3,
            /// [`PDXGKDDI_POSTMULTIPLANEOVERLAYPRESENT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_1`).
            DxgkDdiPostMultiPlaneOverlayPresent: PDXGKDDI_POSTMULTIPLANEOVERLAYPRESENT,
            /// [`PDXGKDDI_VALIDATEUPDATEALLOCATIONPROPERTY`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_1`).
            DxgkDdiValidateUpdateAllocationProperty: PDXGKDDI_VALIDATEUPDATEALLOCATIONPROPERTY,
            /// [`PDXGKDDI_CONTROLMODEBEHAVIOR`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_1`).
            DxgkDdiControlModeBehavior: PDXGKDDI_CONTROLMODEBEHAVIOR,
            /// [`PDXGKDDI_UPDATEMONITORLINKINFO`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_1`).
            DxgkDdiUpdateMonitorLinkInfo: PDXGKDDI_UPDATEMONITORLINKINFO,
            /// [`PDXGKDDI_CREATEHWCONTEXT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiCreateHwContext: PDXGKDDI_CREATEHWCONTEXT,
            /// [`PDXGKDDI_DESTROYHWCONTEXT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiDestroyHwContext: PDXGKDDI_DESTROYHWCONTEXT,
            /// [`PDXGKDDI_CREATEHWQUEUE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiCreateHwQueue: PDXGKDDI_CREATEHWQUEUE,
            /// [`PDXGKDDI_DESTROYHWQUEUE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiDestroyHwQueue: PDXGKDDI_DESTROYHWQUEUE,
            /// [`PDXGKDDI_SUBMITCOMMANDTOHWQUEUE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiSubmitCommandToHwQueue: PDXGKDDI_SUBMITCOMMANDTOHWQUEUE,
            /// [`PDXGKDDI_SWITCHTOHWCONTEXTLIST`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiSwitchToHwContextList: PDXGKDDI_SWITCHTOHWCONTEXTLIST,
            /// [`PDXGKDDI_RESETHWENGINE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiResetHwEngine: PDXGKDDI_RESETHWENGINE,
            /// [`PDXGKDDI_CREATEPERIODICFRAMENOTIFICATION`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiCreatePeriodicFrameNotification: PDXGKDDI_CREATEPERIODICFRAMENOTIFICATION,
            /// [`PDXGKDDI_DESTROYPERIODICFRAMENOTIFICATION`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiDestroyPeriodicFrameNotification: PDXGKDDI_DESTROYPERIODICFRAMENOTIFICATION,
            /// [`PDXGKDDI_SETTIMINGSFROMVIDPN`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiSetTimingsFromVidPn: PDXGKDDI_SETTIMINGSFROMVIDPN,
            /// [`PDXGKDDI_SETTARGETGAMMA`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiSetTargetGamma: PDXGKDDI_SETTARGETGAMMA,
            /// [`PDXGKDDI_SETTARGETCONTENTTYPE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiSetTargetContentType: PDXGKDDI_SETTARGETCONTENTTYPE,
            /// [`PDXGKDDI_SETTARGETANALOGCOPYPROTECTION`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiSetTargetAnalogCopyProtection: PDXGKDDI_SETTARGETANALOGCOPYPROTECTION,
            /// [`PDXGKDDI_SETTARGETADJUSTEDCOLORIMETRY`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiSetTargetAdjustedColorimetry: PDXGKDDI_SETTARGETADJUSTEDCOLORIMETRY,
            /// [`PDXGKDDI_DISPLAYDETECTCONTROL`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiDisplayDetectControl: PDXGKDDI_DISPLAYDETECTCONTROL,
            /// [`PDXGKDDI_QUERYCONNECTIONCHANGE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiQueryConnectionChange: PDXGKDDI_QUERYCONNECTIONCHANGE,
            /// [`PDXGKDDI_EXCHANGEPRESTARTINFO`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiExchangePreStartInfo: PDXGKDDI_EXCHANGEPRESTARTINFO,
            /// [`PDXGKDDI_GETMULTIPLANEOVERLAYCAPS`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiGetMultiPlaneOverlayCaps: PDXGKDDI_GETMULTIPLANEOVERLAYCAPS,
            /// [`PDXGKDDI_GETPOSTCOMPOSITIONCAPS`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_2`).
            DxgkDdiGetPostCompositionCaps: PDXGKDDI_GETPOSTCOMPOSITIONCAPS,
            /// [`PDXGKDDI_UPDATEHWCONTEXTSTATE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_3`).
            DxgkDdiUpdateHwContextState: PDXGKDDI_UPDATEHWCONTEXTSTATE,
            /// [`PDXGKDDI_CREATEPROTECTEDSESSION`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_3`).
            DxgkDdiCreateProtectedSession: PDXGKDDI_CREATEPROTECTEDSESSION,
            /// [`PDXGKDDI_DESTROYPROTECTEDSESSION`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_3`).
            DxgkDdiDestroyProtectedSession: PDXGKDDI_DESTROYPROTECTEDSESSION,
            /// [`PDXGKDDI_SETSCHEDULINGLOGBUFFER`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkDdiSetSchedulingLogBuffer: PDXGKDDI_SETSCHEDULINGLOGBUFFER,
            /// [`PDXGKDDI_SETUPPRIORITYBANDS`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkDdiSetupPriorityBands: PDXGKDDI_SETUPPRIORITYBANDS,
            /// [`PDXGKDDI_NOTIFYFOCUSPRESENT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkDdiNotifyFocusPresent: PDXGKDDI_NOTIFYFOCUSPRESENT,
            /// [`PDXGKDDI_SETCONTEXTSCHEDULINGPROPERTIES`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkDdiSetContextSchedulingProperties: PDXGKDDI_SETCONTEXTSCHEDULINGPROPERTIES,
            /// [`PDXGKDDI_SUSPENDCONTEXT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkDdiSuspendContext: PDXGKDDI_SUSPENDCONTEXT,
            /// [`PDXGKDDI_RESUMECONTEXT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkDdiResumeContext: PDXGKDDI_RESUMECONTEXT,
            /// [`PDXGKDDI_SETVIRTUALMACHINEDATA`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkDdiSetVirtualMachineData: PDXGKDDI_SETVIRTUALMACHINEDATA,
            /// [`PDXGKDDI_BEGINEXCLUSIVEACCESS`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkDdiBeginExclusiveAccess: PDXGKDDI_BEGINEXCLUSIVEACCESS,
            /// [`PDXGKDDI_ENDEXCLUSIVEACCESS`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkDdiEndExclusiveAccess: PDXGKDDI_ENDEXCLUSIVEACCESS,
            /// [`PDXGKDDI_QUERYDIAGNOSTICTYPESSUPPORT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkDdiQueryDiagnosticTypesSupport: PDXGKDDI_QUERYDIAGNOSTICTYPESSUPPORT,
            /// [`PDXGKDDI_CONTROLDIAGNOSTICREPORTING`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkDdiControlDiagnosticReporting: PDXGKDDI_CONTROLDIAGNOSTICREPORTING,
            /// [`PDXGKDDI_RESUMEHWENGINE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_4`).
            DxgkDdiResumeHwEngine: PDXGKDDI_RESUMEHWENGINE,
            /// [`PDXGKDDI_SIGNALMONITOREDFENCE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_5`).
            DxgkDdiSignalMonitoredFence: PDXGKDDI_SIGNALMONITOREDFENCE,
            /// [`PDXGKDDI_PRESENTTOHWQUEUE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_5`).
            DxgkDdiPresentToHwQueue: PDXGKDDI_PRESENTTOHWQUEUE,
            /// [`PDXGKDDI_VALIDATESUBMITCOMMAND`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_5`).
            DxgkDdiValidateSubmitCommand: PDXGKDDI_VALIDATESUBMITCOMMAND,
            /// [`PDXGKDDI_SETTARGETADJUSTEDCOLORIMETRY2`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_5`).
            DxgkDdiSetTargetAdjustedColorimetry2: PDXGKDDI_SETTARGETADJUSTEDCOLORIMETRY2,
            /// [`PDXGKDDI_SETTRACKEDWORKLOADPOWERLEVEL`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_5`).
            DxgkDdiSetTrackedWorkloadPowerLevel: PDXGKDDI_SETTRACKEDWORKLOADPOWERLEVEL,
            /// [`PDXGKDDI_SAVEMEMORYFORHOTUPDATE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_6`).
            DxgkDdiSaveMemoryForHotUpdate: PDXGKDDI_SAVEMEMORYFORHOTUPDATE,
            /// [`PDXGKDDI_RESTOREMEMORYFORHOTUPDATE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_6`).
            DxgkDdiRestoreMemoryForHotUpdate: PDXGKDDI_RESTOREMEMORYFORHOTUPDATE,
            /// [`PDXGKDDI_COLLECTDIAGNOSTICINFO`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_6`).
            DxgkDdiCollectDiagnosticInfo: PDXGKDDI_COLLECTDIAGNOSTICINFO,
            /// Reserved slot (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_6`); must stay null.
            Reserved3: PVOID,
            /// [`PDXGKDDI_CONTROLINTERRUPT3`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_7`).
            DxgkDdiControlInterrupt3: PDXGKDDI_CONTROLINTERRUPT3,
            /// [`PDXGKDDI_SETFLIPQUEUELOGBUFFER`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkDdiSetFlipQueueLogBuffer: PDXGKDDI_SETFLIPQUEUELOGBUFFER,
            /// [`PDXGKDDI_UPDATEFLIPQUEUELOG`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkDdiUpdateFlipQueueLog: PDXGKDDI_UPDATEFLIPQUEUELOG,
            /// [`PDXGKDDI_CANCELQUEUEDFLIPS`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkDdiCancelQueuedFlips: PDXGKDDI_CANCELQUEUEDFLIPS,
            /// [`PDXGKDDI_SETINTERRUPTTARGETPRESENTID`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM2_9`).
            DxgkDdiSetInterruptTargetPresentId: PDXGKDDI_SETINTERRUPTTARGETPRESENTID,
            /// [`PDXGKDDI_SETALLOCATIONBACKINGSTORE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_0`).
            DxgkDdiSetAllocationBackingStore: PDXGKDDI_SETALLOCATIONBACKINGSTORE,
            /// [`PDXGKDDI_CREATECPUEVENT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_0`).
            DxgkDdiCreateCpuEvent: PDXGKDDI_CREATECPUEVENT,
            /// [`PDXGKDDI_DESTROYCPUEVENT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_0`).
            DxgkDdiDestroyCpuEvent: PDXGKDDI_DESTROYCPUEVENT,
            /// [`PDXGKDDI_CANCELFLIPS`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_0`).
            DxgkDdiCancelFlips: PDXGKDDI_CANCELFLIPS,
            /// [`PDXGKDDI_CREATENATIVEFENCE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_1`).
            DxgkDdiCreateNativeFence: PDXGKDDI_CREATENATIVEFENCE,
            /// [`PDXGKDDI_DESTROYNATIVEFENCE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_1`).
            DxgkDdiDestroyNativeFence: PDXGKDDI_DESTROYNATIVEFENCE,
            /// [`PDXGKDDI_UPDATEMONITOREDVALUES`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_1`).
            DxgkDdiUpdateMonitoredValues: PDXGKDDI_UPDATEMONITOREDVALUES,
            /// [`PDXGKDDI_UPDATECURRENTVALUESFROMCPU`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_1`).
            DxgkDdiUpdateCurrentValuesFromCpu: PDXGKDDI_UPDATECURRENTVALUESFROMCPU,
            /// [`PDXGKDDI_CREATEDOORBELL`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_1`).
            DxgkDdiCreateDoorbell: PDXGKDDI_CREATEDOORBELL,
            /// [`PDXGKDDI_CONNECTDOORBELL`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_1`).
            DxgkDdiConnectDoorbell: PDXGKDDI_CONNECTDOORBELL,
            /// [`PDXGKDDI_DISCONNECTDOORBELL`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_1`).
            DxgkDdiDisconnectDoorbell: PDXGKDDI_DISCONNECTDOORBELL,
            /// [`PDXGKDDI_DESTROYDOORBELL`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_1`).
            DxgkDdiDestroyDoorbell: PDXGKDDI_DESTROYDOORBELL,
            /// [`PDXGKDDI_NOTIFYWORKSUBMISSION`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_1`).
            DxgkDdiNotifyWorkSubmission: PDXGKDDI_NOTIFYWORKSUBMISSION,
            /// Reserved slot (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_1`); must stay null.
            Reserved4: PVOID,
            /// [`PDXGKDDI_CREATEMEMORYBASIS`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiCreateMemoryBasis: PDXGKDDI_CREATEMEMORYBASIS,
            /// [`PDXGKDDI_DESTROYMEMORYBASIS`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiDestroyMemoryBasis: PDXGKDDI_DESTROYMEMORYBASIS,
            /// [`PDXGKDDI_STARTDIRTYTRACKING`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiStartDirtyTracking: PDXGKDDI_STARTDIRTYTRACKING,
            /// [`PDXGKDDI_STOPDIRTYTRACKING`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiStopDirtyTracking: PDXGKDDI_STOPDIRTYTRACKING,
            /// [`PDXGKDDI_QUERYDIRTYBITDATA`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiQueryDirtyBitData: PDXGKDDI_QUERYDIRTYBITDATA,
            /// [`PDXGKDDI_PREPARELIVEMIGRATION`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiPrepareLiveMigration: PDXGKDDI_PREPARELIVEMIGRATION,
            /// [`PDXGKDDI_SAVEIMMUTABLEMIGRATIONDATA`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiSaveImmutableMigrationData: PDXGKDDI_SAVEIMMUTABLEMIGRATIONDATA,
            /// [`PDXGKDDI_SAVEMUTABLEMIGRATIONDATA`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiSaveMutableMigrationData: PDXGKDDI_SAVEMUTABLEMIGRATIONDATA,
            /// [`PDXGKDDI_ENDLIVEMIGRATION`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiEndLiveMigration: PDXGKDDI_ENDLIVEMIGRATION,
            /// [`PDXGKDDI_RESTOREIMMUTABLEMIGRATIONDATA`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiRestoreImmutableMigrationData: PDXGKDDI_RESTOREIMMUTABLEMIGRATIONDATA,
            /// [`PDXGKDDI_RESTOREMUTABLEMIGRATIONDATA`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiRestoreMutableMigrationData: PDXGKDDI_RESTOREMUTABLEMIGRATIONDATA,
            /// [`PDXGKDDI_WRITEVIRTUALIZEDINTERRUPT`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiWriteVirtualizedInterrupt: PDXGKDDI_WRITEVIRTUALIZEDINTERRUPT,
            /// [`PDXGKDDI_SETVIRTUALGPURESOURCES2`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiSetVirtualGpuResources2: PDXGKDDI_SETVIRTUALGPURESOURCES2,
            /// [`PDXGKDDI_SETVIRTUALFUNCTIONPAUSESTATE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiSetVirtualFunctionPauseState: PDXGKDDI_SETVIRTUALFUNCTIONPAUSESTATE,
            /// [`PDXGKDDI_OPENNATIVEFENCE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiOpenNativeFence: PDXGKDDI_OPENNATIVEFENCE,
            /// [`PDXGKDDI_CLOSENATIVEFENCE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiCloseNativeFence: PDXGKDDI_CLOSENATIVEFENCE,
            /// [`PDXGKDDI_SETNATIVEFENCELOGBUFFER`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiSetNativeFenceLogBuffer: PDXGKDDI_SETNATIVEFENCELOGBUFFER,
            /// [`PDXGKDDI_UPDATENATIVEFENCELOGS`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiUpdateNativeFenceLogs: PDXGKDDI_UPDATENATIVEFENCELOGS,
            /// [`PDXGKDDI_COLLECTDBGINFO2`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiCollectDbgInfo2: PDXGKDDI_COLLECTDBGINFO2,
            /// [`PDXGKDDI_NOTIFYCONTEXTPRIORITYCHANGE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiNotifyContextPriorityChange: PDXGKDDI_NOTIFYCONTEXTPRIORITYCHANGE,
            /// [`PDXGKDDI_RESETDISPLAYENGINE`] (present since `DXGKDDI_INTERFACE_VERSION_WDDM3_2`).
            DxgkDdiResetDisplayEngine: PDXGKDDI_RESETDISPLAYENGINE,
        }
    }
}

layout!(
    DRIVER_INITIALIZATION_DATA,
    size = 1544,
    Version = 0,
    DxgkDdiAddDevice = 8,
    DxgkDdiStartDevice = 16,
    DxgkDdiStopDevice = 24,
    DxgkDdiRemoveDevice = 32,
    DxgkDdiDispatchIoRequest = 40,
    DxgkDdiInterruptRoutine = 48,
    DxgkDdiDpcRoutine = 56,
    DxgkDdiQueryChildRelations = 64,
    DxgkDdiQueryChildStatus = 72,
    DxgkDdiQueryDeviceDescriptor = 80,
    DxgkDdiSetPowerState = 88,
    DxgkDdiNotifyAcpiEvent = 96,
    DxgkDdiResetDevice = 104,
    DxgkDdiUnload = 112,
    DxgkDdiQueryInterface = 120,
    DxgkDdiControlEtwLogging = 128,
    DxgkDdiQueryAdapterInfo = 136,
    DxgkDdiCreateDevice = 144,
    DxgkDdiCreateAllocation = 152,
    DxgkDdiDestroyAllocation = 160,
    DxgkDdiDescribeAllocation = 168,
    DxgkDdiGetStandardAllocationDriverData = 176,
    DxgkDdiAcquireSwizzlingRange = 184,
    DxgkDdiReleaseSwizzlingRange = 192,
    DxgkDdiPatch = 200,
    DxgkDdiSubmitCommand = 208,
    DxgkDdiPreemptCommand = 216,
    DxgkDdiBuildPagingBuffer = 224,
    DxgkDdiSetPalette = 232,
    DxgkDdiSetPointerPosition = 240,
    DxgkDdiSetPointerShape = 248,
    DxgkDdiResetFromTimeout = 256,
    DxgkDdiRestartFromTimeout = 264,
    DxgkDdiEscape = 272,
    DxgkDdiCollectDbgInfo = 280,
    DxgkDdiQueryCurrentFence = 288,
    DxgkDdiIsSupportedVidPn = 296,
    DxgkDdiRecommendFunctionalVidPn = 304,
    DxgkDdiEnumVidPnCofuncModality = 312,
    DxgkDdiSetVidPnSourceAddress = 320,
    DxgkDdiSetVidPnSourceVisibility = 328,
    DxgkDdiCommitVidPn = 336,
    DxgkDdiUpdateActiveVidPnPresentPath = 344,
    DxgkDdiRecommendMonitorModes = 352,
    DxgkDdiRecommendVidPnTopology = 360,
    DxgkDdiGetScanLine = 368,
    DxgkDdiStopCapture = 376,
    DxgkDdiControlInterrupt = 384,
    DxgkDdiCreateOverlay = 392,
    DxgkDdiDestroyDevice = 400,
    DxgkDdiOpenAllocation = 408,
    DxgkDdiCloseAllocation = 416,
    DxgkDdiRender = 424,
    DxgkDdiPresent = 432,
    DxgkDdiUpdateOverlay = 440,
    DxgkDdiFlipOverlay = 448,
    DxgkDdiDestroyOverlay = 456,
    DxgkDdiCreateContext = 464,
    DxgkDdiDestroyContext = 472,
    DxgkDdiLinkDevice = 480,
    DxgkDdiSetDisplayPrivateDriverFormat = 488,
    DxgkDdiDescribePageTable = 496,
    DxgkDdiUpdatePageTable = 504,
    DxgkDdiUpdatePageDirectory = 512,
    DxgkDdiMovePageDirectory = 520,
    DxgkDdiSubmitRender = 528,
    DxgkDdiCreateAllocation2 = 536,
    DxgkDdiRenderKm = 544,
    Reserved = 552,
    DxgkDdiQueryVidPnHWCapability = 560,
    DxgkDdiSetPowerComponentFState = 568,
    DxgkDdiQueryDependentEngineGroup = 576,
    DxgkDdiQueryEngineStatus = 584,
    DxgkDdiResetEngine = 592,
    DxgkDdiStopDeviceAndReleasePostDisplayOwnership = 600,
    DxgkDdiSystemDisplayEnable = 608,
    DxgkDdiSystemDisplayWrite = 616,
    DxgkDdiCancelCommand = 624,
    DxgkDdiGetChildContainerId = 632,
    DxgkDdiPowerRuntimeControlRequest = 640,
    DxgkDdiSetVidPnSourceAddressWithMultiPlaneOverlay = 648,
    DxgkDdiNotifySurpriseRemoval = 656,
    DxgkDdiGetNodeMetadata = 664,
    DxgkDdiSetPowerPState = 672,
    DxgkDdiControlInterrupt2 = 680,
    DxgkDdiCheckMultiPlaneOverlaySupport = 688,
    DxgkDdiCalibrateGpuClock = 696,
    DxgkDdiFormatHistoryBuffer = 704,
    DxgkDdiRenderGdi = 712,
    DxgkDdiSubmitCommandVirtual = 720,
    DxgkDdiSetRootPageTable = 728,
    DxgkDdiGetRootPageTableSize = 736,
    DxgkDdiMapCpuHostAperture = 744,
    DxgkDdiUnmapCpuHostAperture = 752,
    DxgkDdiCheckMultiPlaneOverlaySupport2 = 760,
    DxgkDdiCreateProcess = 768,
    DxgkDdiDestroyProcess = 776,
    DxgkDdiSetVidPnSourceAddressWithMultiPlaneOverlay2 = 784,
    Reserved1 = 792,
    Reserved2 = 800,
    DxgkDdiPowerRuntimeSetDeviceHandle = 808,
    DxgkDdiSetStablePowerState = 816,
    DxgkDdiSetVideoProtectedRegion = 824,
    DxgkDdiCheckMultiPlaneOverlaySupport3 = 832,
    DxgkDdiSetVidPnSourceAddressWithMultiPlaneOverlay3 = 840,
    DxgkDdiPostMultiPlaneOverlayPresent = 848,
    DxgkDdiValidateUpdateAllocationProperty = 856,
    DxgkDdiControlModeBehavior = 864,
    DxgkDdiUpdateMonitorLinkInfo = 872,
    DxgkDdiCreateHwContext = 880,
    DxgkDdiDestroyHwContext = 888,
    DxgkDdiCreateHwQueue = 896,
    DxgkDdiDestroyHwQueue = 904,
    DxgkDdiSubmitCommandToHwQueue = 912,
    DxgkDdiSwitchToHwContextList = 920,
    DxgkDdiResetHwEngine = 928,
    DxgkDdiCreatePeriodicFrameNotification = 936,
    DxgkDdiDestroyPeriodicFrameNotification = 944,
    DxgkDdiSetTimingsFromVidPn = 952,
    DxgkDdiSetTargetGamma = 960,
    DxgkDdiSetTargetContentType = 968,
    DxgkDdiSetTargetAnalogCopyProtection = 976,
    DxgkDdiSetTargetAdjustedColorimetry = 984,
    DxgkDdiDisplayDetectControl = 992,
    DxgkDdiQueryConnectionChange = 1000,
    DxgkDdiExchangePreStartInfo = 1008,
    DxgkDdiGetMultiPlaneOverlayCaps = 1016,
    DxgkDdiGetPostCompositionCaps = 1024,
    DxgkDdiUpdateHwContextState = 1032,
    DxgkDdiCreateProtectedSession = 1040,
    DxgkDdiDestroyProtectedSession = 1048,
    DxgkDdiSetSchedulingLogBuffer = 1056,
    DxgkDdiSetupPriorityBands = 1064,
    DxgkDdiNotifyFocusPresent = 1072,
    DxgkDdiSetContextSchedulingProperties = 1080,
    DxgkDdiSuspendContext = 1088,
    DxgkDdiResumeContext = 1096,
    DxgkDdiSetVirtualMachineData = 1104,
    DxgkDdiBeginExclusiveAccess = 1112,
    DxgkDdiEndExclusiveAccess = 1120,
    DxgkDdiQueryDiagnosticTypesSupport = 1128,
    DxgkDdiControlDiagnosticReporting = 1136,
    DxgkDdiResumeHwEngine = 1144,
    DxgkDdiSignalMonitoredFence = 1152,
    DxgkDdiPresentToHwQueue = 1160,
    DxgkDdiValidateSubmitCommand = 1168,
    DxgkDdiSetTargetAdjustedColorimetry2 = 1176,
    DxgkDdiSetTrackedWorkloadPowerLevel = 1184,
    DxgkDdiSaveMemoryForHotUpdate = 1192,
    DxgkDdiRestoreMemoryForHotUpdate = 1200,
    DxgkDdiCollectDiagnosticInfo = 1208,
    Reserved3 = 1216,
    DxgkDdiControlInterrupt3 = 1224,
    DxgkDdiSetFlipQueueLogBuffer = 1232,
    DxgkDdiUpdateFlipQueueLog = 1240,
    DxgkDdiCancelQueuedFlips = 1248,
    DxgkDdiSetInterruptTargetPresentId = 1256,
    DxgkDdiSetAllocationBackingStore = 1264,
    DxgkDdiCreateCpuEvent = 1272,
    DxgkDdiDestroyCpuEvent = 1280,
    DxgkDdiCancelFlips = 1288,
    DxgkDdiCreateNativeFence = 1296,
    DxgkDdiDestroyNativeFence = 1304,
    DxgkDdiUpdateMonitoredValues = 1312,
    DxgkDdiUpdateCurrentValuesFromCpu = 1320,
    DxgkDdiCreateDoorbell = 1328,
    DxgkDdiConnectDoorbell = 1336,
    DxgkDdiDisconnectDoorbell = 1344,
    DxgkDdiDestroyDoorbell = 1352,
    DxgkDdiNotifyWorkSubmission = 1360,
    Reserved4 = 1368,
    DxgkDdiCreateMemoryBasis = 1376,
    DxgkDdiDestroyMemoryBasis = 1384,
    DxgkDdiStartDirtyTracking = 1392,
    DxgkDdiStopDirtyTracking = 1400,
    DxgkDdiQueryDirtyBitData = 1408,
    DxgkDdiPrepareLiveMigration = 1416,
    DxgkDdiSaveImmutableMigrationData = 1424,
    DxgkDdiSaveMutableMigrationData = 1432,
    DxgkDdiEndLiveMigration = 1440,
    DxgkDdiRestoreImmutableMigrationData = 1448,
    DxgkDdiRestoreMutableMigrationData = 1456,
    DxgkDdiWriteVirtualizedInterrupt = 1464,
    DxgkDdiSetVirtualGpuResources2 = 1472,
    DxgkDdiSetVirtualFunctionPauseState = 1480,
    DxgkDdiOpenNativeFence = 1488,
    DxgkDdiCloseNativeFence = 1496,
    DxgkDdiSetNativeFenceLogBuffer = 1504,
    DxgkDdiUpdateNativeFenceLogs = 1512,
    DxgkDdiCollectDbgInfo2 = 1520,
    DxgkDdiNotifyContextPriorityChange = 1528,
    DxgkDdiResetDisplayEngine = 1536,
);

#[cfg(test)]
#[path = "init_tests.rs"]
mod tests;
