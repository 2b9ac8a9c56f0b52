//! The rows of the catalog: `DRIVER_INITIALIZATION_DATA`'s slots in header order, then the DDIs
//! handed out through interfaces. The comment above a row says where a rule that is not on the
//! reference page comes from.

use super::{Ddi, Group, OnNull, Slot, D, DIRQL, P};
use super::{STATUS_BUFFER_OVERFLOW, STATUS_GRAPHICS_ALLOCATION_CONTENT_LOST};
use crate::basic::PVOID;
use crate::feature::{
    DXGKDDI_FEATURE_INTERFACE, PDXGKDDI_QUERYFEATUREINTERFACE, PDXGKDDI_QUERYFEATURESUPPORT,
};
use crate::init::*;
use crate::kmtest::{DXGKDDI_KERNELMODETESTINGINTERFACE, PDXGKDDI_BUILDTESTCOMMANDBUFFER};
use crate::ntstatus::*;

/// Hands every row of the catalog to `$cb!` as `$($extra)* rows [ ddi!(…)….…, … ]`: the one
/// list of the catalogued DDIs' names, from which [`CATALOG`](crate::catalog::CATALOG) is made
/// and the simulated OS's rule table takes its DDI routines (a new DDI is one row here, not a
/// name in a list elsewhere). The rows are tokens only to a caller outside this module.
#[macro_export]
macro_rules! catalog_rows {
    ($cb:ident! $($extra:tt)*) => { $cb! { $($extra)* rows [
    ddi!(DxgkDdiAddDevice: PDXGKDDI_ADD_DEVICE)
        .at(P, P, "dispmprt/nc-dispmprt-dxgkddi_add_device")
        .slot(Slot::Load)
        .mandatory("core PnP: creates the adapter context")
        .doc("— (core)", "[init]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiStartDevice: PDXGKDDI_START_DEVICE)
        .at(P, P, "dispmprt/nc-dispmprt-dxgkddi_start_device")
        .slot(Slot::Load)
        .mandatory("core PnP: receives DXGKRNL_INTERFACE")
        .doc("NF-10", "[init]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiStopDevice: PDXGKDDI_STOP_DEVICE)
        .at(P, P, "dispmprt/nc-dispmprt-dxgkddi_stop_device")
        .slot(Slot::Load)
        .mandatory("core PnP")
        .doc("— (core)", "[init]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiRemoveDevice: PDXGKDDI_REMOVE_DEVICE)
        .at(P, P, "dispmprt/nc-dispmprt-dxgkddi_remove_device")
        .slot(Slot::Load)
        .mandatory("core PnP")
        .doc("— (core)", "[init]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // No IRQL: 24H2 never calls it (the hand-over audit's never-called entry says where).
    ddi!(DxgkDdiDispatchIoRequest: PDXGKDDI_DISPATCH_IO_REQUEST)
        .page("dispmprt/nc-dispmprt-dxgkddi_dispatch_io_request")
        .slot(Slot::Load)
        .mandatory("core I/O (filled in the DxgkInitialize sample)")
        .doc("— (core)", "[init]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiInterruptRoutine: PDXGKDDI_INTERRUPT_ROUTINE)
        .at(DIRQL, DIRQL, "dispmprt/nc-dispmprt-dxgkddi_interrupt_routine")
        .slot(Slot::Load)
        .mandatory("core: the ISR that reports DMA/fence/engine events")
        .doc("NF-14, UM-13", "[init]")
        .on_null(OnNull::NotClaimed),
    ddi!(DxgkDdiDpcRoutine: PDXGKDDI_DPC_ROUTINE)
        .at(D, D, "dispmprt/nc-dispmprt-dxgkddi_dpc_routine")
        .slot(Slot::Load)
        .mandatory("core: DPC that calls DxgkCbNotifyDpc")
        .doc("NF-04", "[init]")
        .on_null(OnNull::Returns),
    ddi!(DxgkDdiQueryChildRelations: PDXGKDDI_QUERY_CHILD_RELATIONS)
        .at(P, P, "dispmprt/nc-dispmprt-dxgkddi_query_child_relations")
        .slot(Slot::Load)
        .mandatory("core PnP (render-only answers zero children)")
        .doc("— (core)", "[init]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // No IRQL: 24H2 asks it only about a child the driver reported, and rvgpu reports none
    // (the hand-over audit's never-called entry says where).
    ddi!(DxgkDdiQueryChildStatus: PDXGKDDI_QUERY_CHILD_STATUS)
        .page("dispmprt/nc-dispmprt-dxgkddi_query_child_status")
        .slot(Slot::LoadOneOf)
        .mandatory("core PnP")
        .doc("— (core)", "[init]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // No IRQL: as DxgkDdiQueryChildStatus, for a reported child only.
    ddi!(DxgkDdiQueryDeviceDescriptor: PDXGKDDI_QUERY_DEVICE_DESCRIPTOR)
        .page("dispmprt/nc-dispmprt-dxgkddi_query_device_descriptor")
        .slot(Slot::Load)
        .mandatory("core PnP")
        .doc("— (core)", "[init]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiSetPowerState: PDXGKDDI_SET_POWER_STATE)
        .at(P, P, "dispmprt/nc-dispmprt-dxgkddi_set_power_state")
        .slot(Slot::Load)
        .mandatory("core power (D0/D3, also UM-14)")
        .doc("UM-14", "[init]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiNotifyAcpiEvent: PDXGKDDI_NOTIFY_ACPI_EVENT)
        .at(P, P, "dispmprt/nc-dispmprt-dxgkddi_notify_acpi_event")
        .mandatory("core power/ACPI")
        .doc("— (core)", "[init]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // "can be called at any IRQL" (it runs on the bug-check path too).
    ddi!(DxgkDdiResetDevice: PDXGKDDI_RESET_DEVICE)
        .at(P, DIRQL, "dispmprt/nc-dispmprt-dxgkddi_reset_device")
        .slot(Slot::Load)
        .mandatory("core: silence the device before bug check / soft reboot")
        .doc("— (core)", "[init]")
        .on_null(OnNull::Returns),
    ddi!(DxgkDdiUnload: PDXGKDDI_UNLOAD)
        .at(P, P, "dispmprt/nc-dispmprt-dxgkddi_unload")
        .slot(Slot::Load)
        .mandatory("core: driver unload")
        .doc("— (core)", "[init]")
        .on_null(OnNull::Returns),
    ddi!(DxgkDdiQueryInterface: PDXGKDDI_QUERY_INTERFACE)
        .at(P, P, "dispmprt/nc-dispmprt-dxgkddi_query_interface")
        .mandatory("core PnP interface query")
        .doc("NF-10", "[init]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiControlEtwLogging: PDXGKDDI_CONTROL_ETW_LOGGING)
        .at(P, P, "dispmprt/nc-dispmprt-dxgkddi_control_etw_logging")
        .mandatory("core (filled in the DxgkInitialize sample)")
        .doc("— (core)", "[init]")
        .on_null(OnNull::Returns),
    ddi!(DxgkDdiQueryAdapterInfo: PDXGKDDI_QUERYADAPTERINFO)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_queryadapterinfo")
        .ddi_wrapper()
        .statuses("BR-23", &[STATUS_SUCCESS, STATUS_INVALID_PARAMETER, STATUS_NOT_IMPLEMENTED, STATUS_NO_MEMORY])
        .mandatory("core: DRIVERCAPS, segments, NATIVE_FENCE_CAPS (NF-11), USERMODESUBMISSION_CAPS (UM-04)")
        .doc("NF-11, UM-04, TDR-02", "[caps]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // BR-91 ([D] ADAPTER_RENDER::DdiCreateDevice): anything but SUCCESS or NO_MEMORY is
    // "an invalid NTSTATUS code" in the triage log; the status still goes to the caller.
    ddi!(DxgkDdiCreateDevice: PDXGKDDI_CREATEDEVICE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createdevice")
        .ddi_wrapper()
        .slot(Slot::RenderCore)
        .statuses("BR-91", &[STATUS_SUCCESS, STATUS_NO_MEMORY])
        .mandatory("render: every D3D device")
        .doc("NF-13, UM-01", "[caps]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiCreateAllocation: PDXGKDDI_CREATEALLOCATION)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createallocation")
        .slot(Slot::RenderCore)
        .mandatory("render: VidMm allocations (rings, fence storage, resources)")
        .doc("UM-07, AL-04", "[caps]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiDestroyAllocation: PDXGKDDI_DESTROYALLOCATION)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroyallocation")
        .ddi_wrapper()
        .slot(Slot::RenderCore)
        .mandatory("render: pairs with CreateAllocation")
        .doc("AL-03", "[caps]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiDescribeAllocation: PDXGKDDI_DESCRIBEALLOCATION)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_describeallocation")
        .ddi_wrapper()
        .slot(Slot::RenderCore)
        .mandatory("render: Dxgkrnl asks it for shared/standard allocations (cross-adapter copies of a render-only GPU)")
        .doc("—", "[caps]")
        .on_null(OnNull::Fails(STATUS_NOT_SUPPORTED)),
    ddi!(DxgkDdiGetStandardAllocationDriverData: PDXGKDDI_GETSTANDARDALLOCATIONDRIVERDATA)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_getstandardallocationdriverdata")
        .ddi_wrapper()
        .slot(Slot::RenderCore)
        .mandatory("render: standard (shared primary / staging) allocations Dxgkrnl creates on the driver's behalf")
        .doc("—", "[caps]")
        .on_null(OnNull::Fails(STATUS_NOT_SUPPORTED)),
    ddi!(DxgkDdiAcquireSwizzlingRange: PDXGKDDI_ACQUIRESWIZZLINGRANGE)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_acquireswizzlingrange")
        .slot(Slot::RenderCore),
    ddi!(DxgkDdiReleaseSwizzlingRange: PDXGKDDI_RELEASESWIZZLINGRANGE)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_releaseswizzlingrange")
        .slot(Slot::RenderCore),
    ddi!(DxgkDdiPatch: PDXGKDDI_PATCH)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_patch")
        .slot(Slot::RenderCore)
        .left_out("legacy patch-location model; contexts with GPU virtual addressing are never patched (DXGK_VIDSCHCAPS::NoDmaPatching is set); https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommandvirtual")
        .doc("the legacy patch-location model; GPU-VA contexts are not patched (`NoDmaPatching`)", ""),
    // "DISPATCH_LEVEL"; an error status is bug check 0x119 subtype 0x2.
    ddi!(DxgkDdiSubmitCommand: PDXGKDDI_SUBMITCOMMAND)
        .at(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommand")
        .ddi_wrapper()
        .slot(Slot::RenderCore)
        .mandatory("render: paging buffers are submitted through it with hDevice NULL (page remarks), even with GPU VA contexts")
        .doc("TDR-03, TDR-04", "[submit]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiPreemptCommand: PDXGKDDI_PREEMPTCOMMAND)
        .at(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_preemptcommand")
        .ddi_wrapper()
        .slot(Slot::RenderCore)
        .mandatory("render: 'GPU preemption' is M for render-only in the feature-caps table and the software scheduler preempts through it when HWS is off")
        .doc("TDR-05", "[caps]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // PASSIVE per the public header (UNVERIFIED, docs/tdr.md Q5).
    ddi!(DxgkDdiBuildPagingBuffer: PDXGKDDI_BUILDPAGINGBUFFER)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_buildpagingbuffer")
        .ddi_wrapper()
        .slot(Slot::RenderCore)
        .mandatory("render: VidMm paging (fill/transfer/map)")
        .doc("TDR-03, TDR-08, NF-01", "[caps]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiResetFromTimeout: PDXGKDDI_RESETFROMTIMEOUT)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resetfromtimeout")
        .ddi_wrapper()
        .slot(Slot::RenderCore)
        .mandatory("TDR-09: adapter-wide reset, required even with per-engine reset; https://learn.microsoft.com/en-us/windows-hardware/drivers/display/tdr-changes-in-windows-8")
        .doc("TDR-09, TDR-08, TDR-04", "[tdr]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiRestartFromTimeout: PDXGKDDI_RESTARTFROMTIMEOUT)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_restartfromtimeout")
        .ddi_wrapper()
        .slot(Slot::RenderCore)
        .mandatory("TDR-09: resume after adapter-wide reset; https://learn.microsoft.com/en-us/windows-hardware/drivers/display/tdr-changes-in-windows-8")
        .doc("TDR-09", "[tdr]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiEscape: PDXGKDDI_ESCAPE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_escape")
        .optional("the UMD's private channel: a process learns the report tag of a native fence it opened from an NT handle here, because 24H2 returns no private data from that open ([K] DXGSYNCOBJECT::Open @0x1401F4640 gets no buffer for it)")
        .doc("`kmd::escape`: the report tag of a native fence the calling device opened (NF-14); the test hooks ([tdr.md](tdr.md#test-hooks))", "a process that opens a shared native fence gets no private data from 24H2's open, so it asks the KMD for the fence's report tag ([memory.md](memory.md))")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // Any IRQL in general; PASSIVE_LEVEL for the two timeout reasons (the only ones the
    // simulation passes).
    ddi!(DxgkDdiCollectDbgInfo: PDXGKDDI_COLLECTDBGINFO)
        .at(P, DIRQL, "d3dkmddi/nc-d3dkmddi-dxgkddi_collectdbginfo")
        .ddi_wrapper()
        .group(Group::PerEngineTdr)
        .mandatory("TDR-01: level-0 synchronised CollectDbgInfo is required with per-engine TDR; https://learn.microsoft.com/en-us/windows-hardware/drivers/display/tdr-changes-in-windows-8")
        .doc("TDR-01", "[tdr]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // PASSIVE per the public header (UNVERIFIED, docs/tdr.md Q5).
    ddi!(DxgkDdiQueryCurrentFence: PDXGKDDI_QUERYCURRENTFENCE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_querycurrentfence")
        .ddi_wrapper()
        .slot(Slot::RenderCore)
        .mandatory("render: the pages' query of the last completed fence before a late fence counts as a hang (lost-interrupt path, TDR-04); 24H2 never calls it (the hand-over audit says where)")
        .doc("TDR-04", "[caps]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiIsSupportedVidPn: PDXGKDDI_ISSUPPORTEDVIDPN)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_issupportedvidpn")
        .left_out("display-specific (all VidPn, pointer, palette, overlay and MPO slots): render-only returns null for display DDIs (feature-caps page)")
        .doc("display-specific, as every VidPn, pointer, palette, overlay and MPO slot: render-only ([caps])", ""),
    // [D] `DXGADAPTER::DdiControlInterrupt`.
    ddi!(DxgkDdiControlInterrupt: PDXGKDDI_CONTROLINTERRUPT)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_controlinterrupt")
        .statuses("BR-23", &[STATUS_SUCCESS, STATUS_UNSUCCESSFUL, STATUS_NOT_IMPLEMENTED])
        .mandatory("BR-47: required of a render core that is not ComputeOnly ([D] ADAPTER_RENDER::CreateRenderCore); rvgpu has no CRTC and answers STATUS_NOT_IMPLEMENTED as the page prescribes")
        .doc("—", "[D] `CreateRenderCore`")
        .on_null(OnNull::Fails(STATUS_UNSUCCESSFUL)),
    ddi!(DxgkDdiCreateOverlay: PDXGKDDI_CREATEOVERLAY)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_createoverlay")
        .slot(Slot::RenderCore),
    ddi!(DxgkDdiDestroyDevice: PDXGKDDI_DESTROYDEVICE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroydevice")
        .ddi_wrapper()
        .slot(Slot::RenderCore)
        .mandatory("render: pairs with CreateDevice")
        .doc("UM-17, UM-18", "[caps]")
        .on_null(OnNull::Fails(STATUS_INVALID_HANDLE)),
    ddi!(DxgkDdiOpenAllocation: PDXGKDDI_OPENALLOCATIONINFO)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_openallocationinfo")
        .ddi_wrapper()
        .slot(Slot::RenderCore)
        .mandatory("render: shared resources opened by another device/process")
        .doc("—", "[caps]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiCloseAllocation: PDXGKDDI_CLOSEALLOCATION)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_closeallocation")
        .ddi_wrapper()
        .slot(Slot::RenderCore)
        .mandatory("render: pairs with OpenAllocation")
        .doc("—", "[caps]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiRender: PDXGKDDI_RENDER)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_render")
        .slot(Slot::RenderCore)
        .left_out("legacy: pfnRenderCb is replaced by pfnSubmitCommandCb for GPU-VA contexts ('contexts that operate in legacy patch mode must continue to use the old pfnRenderCb'); https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dumddi/nc-d3dumddi-pfnd3dddi_submitcommandcb")
        .doc("the legacy patch-location model; GPU-VA contexts are not patched (`NoDmaPatching`)", ""),
    // [D] `ADAPTER_RENDER::DdiPresent`.
    ddi!(DxgkDdiPresent: PDXGKDDI_PRESENT)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_present")
        .slot(Slot::RenderCore)
        .statuses("BR-23", &[STATUS_SUCCESS, STATUS_INVALID_HANDLE, STATUS_NO_MEMORY, STATUS_ILLEGAL_INSTRUCTION, STATUS_PRIVILEGED_INSTRUCTION, STATUS_INSUFFICIENT_RESOURCES, STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER, STATUS_GRAPHICS_CANNOTCOLORCONVERT, STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE])
        .mandatory("BR-47 (docs/windows-bringup.md): Dxgkrnl refuses a render core without it, render-only or not ([D] ADAPTER_RENDER::CreateRenderCore); rvgpu refuses every present (nothing to present with, UM-22)")
        .doc("UM-22", "[D] `CreateRenderCore`")
        .on_null(OnNull::Fails(STATUS_INVALID_HANDLE)),
    ddi!(DxgkDdiUpdateOverlay: PDXGKDDI_UPDATEOVERLAY)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_updateoverlay")
        .slot(Slot::RenderCore),
    ddi!(DxgkDdiFlipOverlay: PDXGKDDI_FLIPOVERLAY)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_flipoverlay")
        .slot(Slot::RenderCore),
    ddi!(DxgkDdiDestroyOverlay: PDXGKDDI_DESTROYOVERLAY)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_destroyoverlay")
        .slot(Slot::RenderCore),
    ddi!(DxgkDdiCreateContext: PDXGKDDI_CREATECONTEXT)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createcontext")
        .ddi_wrapper()
        .statuses("BR-23", &[STATUS_SUCCESS, STATUS_NO_MEMORY])
        .mandatory("render: GPU contexts (software-scheduled; HWS also creates HW contexts)")
        .doc("UM-01, UM-05", "[caps]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiDestroyContext: PDXGKDDI_DESTROYCONTEXT)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroycontext")
        .ddi_wrapper()
        .mandatory("render: pairs with CreateContext")
        .doc("UM-17", "[caps]")
        .on_null(OnNull::Fails(STATUS_INVALID_HANDLE)),
    ddi!(DxgkDdiRenderKm: PDXGKDDI_RENDERKM)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_renderkm")
        .slot(Slot::RenderCore)
        .left_out("GDI hardware acceleration (SupportKernelModeCommandBuffer), optional per the GDI page and not claimed: the device has no 2D engine to run BitBlt/AlphaBlend/StretchBlt/ClearType commands. Windows requires the cap only under ValidateWDDMCaps (BR-52, off by default, [D] DXGGLOBAL::Initialize); a driver that starts without it on 26100 is recorded by winboat-org/helios; https://learn.microsoft.com/en-us/windows-hardware/drivers/display/gdi-hardware-acceleration")
        .doc("GDI acceleration ([gdi]): optional and not claimed, since the device has no 2D engine; required only under the `ValidateWDDMCaps` policy (BR-52)", ""),
    // "<= DISPATCH_LEVEL".
    ddi!(DxgkDdiSetPowerComponentFState: PDXGKDDISETPOWERCOMPONENTFSTATE)
        .at(P, D, "d3dkmddi/nc-d3dkmddi-dxgkddisetpowercomponentfstate")
        .ddi_wrapper()
        .statuses("BR-108", &[STATUS_SUCCESS, STATUS_GRAPHICS_ALLOCATION_CONTENT_LOST])
        .mandatory("UM-13 needs F-states; feature-caps page obliges it with the feature; https://learn.microsoft.com/en-us/windows-hardware/drivers/display/wddm-driver-and-feature-caps")
        .doc("UM-13, BR-44, BR-108", "[fstate]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiQueryDependentEngineGroup: PDXGKDDI_QUERYDEPENDENTENGINEGROUP)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_querydependentenginegroup")
        .ddi_wrapper()
        .group(Group::PerEngineTdr)
        .mandatory("TDR-01: SupportPerEngineTDR (M for render-only) obliges it; https://learn.microsoft.com/en-us/windows-hardware/drivers/display/tdr-changes-in-windows-8")
        .doc("TDR-01, TDR-02", "[tdr]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiQueryEngineStatus: PDXGKDDI_QUERYENGINESTATUS)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_queryenginestatus")
        .ddi_wrapper()
        .group(Group::PerEngineTdr)
        .mandatory("TDR-01: SupportPerEngineTDR obliges it; https://learn.microsoft.com/en-us/windows-hardware/drivers/display/tdr-changes-in-windows-8")
        .doc("TDR-01", "[tdr]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiResetEngine: PDXGKDDI_RESETENGINE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resetengine")
        .ddi_wrapper()
        .group(Group::PerEngineTdr)
        .mandatory("TDR-01/TDR-06: SupportPerEngineTDR obliges it; https://learn.microsoft.com/en-us/windows-hardware/drivers/display/tdr-changes-in-windows-8")
        .doc("TDR-01, TDR-06, TDR-07, TDR-09, UM-10", "[tdr]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // "req.irql: <=DISPATCH_LEVEL".
    ddi!(DxgkDdiPowerRuntimeControlRequest: PDXGKDDIPOWERRUNTIMECONTROLREQUEST)
        .at(P, D, "d3dkmddi/nc-d3dkmddi-dxgkddipowerruntimecontrolrequest")
        .ddi_wrapper()
        .statuses("BR-107", &[STATUS_SUCCESS, STATUS_INVALID_PARAMETER])
        .mandatory("UM-13 needs F-states; feature-caps page obliges it with the feature; https://learn.microsoft.com/en-us/windows-hardware/drivers/display/wddm-driver-and-feature-caps")
        .doc("UM-13, BR-44, BR-107", "[prcr]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // The page gives no IRQL; PnP delivers surprise removal at PASSIVE_LEVEL
    // (UNVERIFIED).
    ddi!(DxgkDdiNotifySurpriseRemoval: PDXGKDDI_NOTIFY_SURPRISE_REMOVAL)
        .at(P, P, "dispmprt/nc-dispmprt-dxgkddi_notify_surprise_removal")
        .optional("optional since WDDM 1.2, called only with SupportSurpriseRemoval(InHibernation) in the caps (docs/robustness.md section 3)")
        .doc("`kmd::removal`: cuts off register access", "called only with `SupportSurpriseRemoval`, which rvgpu sets ([robustness.md](robustness.md#3-surprise-removal-and-a-dead-bus))")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiGetNodeMetadata: PDXGKDDI_GETNODEMETADATA)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_getnodemetadata")
        .ddi_wrapper()
        .statuses("BR-23", &[STATUS_SUCCESS, STATUS_INVALID_PARAMETER])
        .mandatory("'WDDM 1.3 and later KMDs must implement DXGKDDI_GETNODEMETADATA' (reference page); also UM-03 (UserModeSubmissionSupported)")
        .doc("UM-03", "[node]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // The OS calls it at DISPATCH_LEVEL (docs/logs.md#simulated-os).
    ddi!(DxgkDdiCalibrateGpuClock: PDXGKDDI_CALIBRATEGPUCLOCK)
        .at(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_calibrategpuclock")
        .ddi_wrapper()
        .mandatory("inferred: GPU timestamps in native-fence log entries (LOG-03, LOG-06) and the GPU timeline are converted to CPU time through this calibration; Microsoft does not mark it mandatory")
        .doc("LOG-03, LOG-06; BR-54", "[clock]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiFormatHistoryBuffer: PDXGKDDI_FORMATHISTORYBUFFER)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_formathistorybuffer")
        .left_out("optional GPUView history-buffer formatting")
        .doc("optional GPUView formatting", ""),
    // The page gives no IRQL (UNVERIFIED, docs/tdr.md Q5); VidSch submits from its
    // DPC-level scheduler like SubmitCommand, so at most DISPATCH_LEVEL.
    ddi!(DxgkDdiSubmitCommandVirtual: PDXGKDDI_SUBMITCOMMANDVIRTUAL)
        .at(P, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommandvirtual")
        .ddi_wrapper()
        .mandatory("render: submission for GPU-VA contexts (WDDM 2.0), the kernel-mode path UM-01 keeps")
        .doc("UM-01, TDR-04", "[ums]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiSetRootPageTable: PDXGKDDI_SETROOTPAGETABLE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_setrootpagetable")
        .ddi_wrapper()
        .mandatory("GpuMmu: VidMm gives each context its process's root page table (docs/memory.md)")
        .doc("—", "[mm]")
        .on_null(OnNull::Returns),
    ddi!(DxgkDdiGetRootPageTableSize: PDXGKDDI_GETROOTPAGETABLESIZE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_getrootpagetablesize")
        .ddi_wrapper()
        .mandatory("GpuMmu: VidMm sizes root page tables with it")
        .doc("—", "[mm]")
        .on_null(OnNull::Zero),
    ddi!(DxgkDdiMapCpuHostAperture: PDXGKDDI_MAPCPUHOSTAPERTURE)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_mapcpuhostaperture")
        .left_out("optional CpuHostAperture (AL-05)")
        .doc("optional (AL-05); no segment sets `SupportsCpuHostAperture`", ""),
    ddi!(DxgkDdiCreateProcess: PDXGKDDI_CREATEPROCESS)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createprocess")
        .ddi_wrapper()
        .mandatory("GpuMmu and HWS: per-process KMD tracking the scheduler relies on (SetContextSchedulingProperties remarks); https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setcontextschedulingproperties")
        .doc("NF-01, UM-17, UM-18", "[sched]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiDestroyProcess: PDXGKDDI_DESTROYPROCESS)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroyprocess")
        .ddi_wrapper()
        .mandatory("HWS: pairs with CreateProcess")
        .doc("UM-17", "[sched]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiSetStablePowerState: PDXGKDDI_SETSTABLEPOWERSTATE)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_setstablepowerstate")
        .mandatory("BR-54 (docs/windows-bringup.md): from interface 0x5008 Dxgkrnl fails adapter creation unless CalibrateGpuClock and SetStablePowerState are both filled ([D] DXGADAPTER::Initialize)")
        .doc("BR-54", "[init]")
        .on_null(OnNull::Returns),
    ddi!(DxgkDdiCreateHwContext: PDXGKDDI_CREATEHWCONTEXT)
        .page("d3dkmthk/nf-d3dkmthk-d3dkmtcreatehwcontext")
        .left_out("never called by Windows' VidSch: its hardware context is the DxgkDdiCreateContext context, whose handle DdiCreateHwQueue receives (22631 DXGHWQUEUE::Initialize, VidSchiCreateHwContextInternal; docs/hws.md section 2); no reference page")
        .doc("Windows never calls them: its hardware context is the `DxgkDdiCreateContext` context, and the GPU's scheduler picks contexts ([switch], hws.md §2)", ""),
    ddi!(DxgkDdiDestroyHwContext: PDXGKDDI_DESTROYHWCONTEXT)
        .page("d3dkmthk/nf-d3dkmthk-d3dkmtdestroyhwcontext")
        .left_out("pairs with DxgkDdiCreateHwContext, likewise never called (docs/hws.md section 2)")
        .doc("Windows never calls them: its hardware context is the `DxgkDdiCreateContext` context, and the GPU's scheduler picks contexts ([switch], hws.md §2)", ""),
    ddi!(DxgkDdiCreateHwQueue: PDXGKDDI_CREATEHWQUEUE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createhwqueue")
        .ddi_wrapper()
        .statuses("BR-23", &[STATUS_SUCCESS, STATUS_NOT_IMPLEMENTED, STATUS_NO_MEMORY])
        .mandatory("HWS + UM-05: HW queues (user-mode queues are HW queues with the UserModeSubmission flag)")
        .doc("UM-05, LOG-01", "[hwq]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiDestroyHwQueue: PDXGKDDI_DESTROYHWQUEUE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroyhwqueue")
        .ddi_wrapper()
        .mandatory("HWS: pairs with CreateHwQueue")
        .doc("UM-17", "[hwq]")
        .on_null(OnNull::Fails(STATUS_INVALID_HANDLE)),
    // "PASSIVE_LEVEL or DISPATCH_LEVEL".
    ddi!(DxgkDdiSubmitCommandToHwQueue: PDXGKDDI_SUBMITCOMMANDTOHWQUEUE)
        .at(P, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommandtohwqueue")
        .ddi_wrapper()
        .mandatory("HWS + UM-01: kernel-mode submission to a HW queue, kept beside user-mode submission")
        .doc("UM-01, UM-05", "[hwq]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiSwitchToHwContextList: PDXGKDDI_SWITCHTOHWCONTEXTLIST)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_switchtohwcontextlist")
        .left_out("no caller in the 22631 dxgkrnl/dxgmms2: the GPU's own scheduler runs the contexts (docs/hws.md section 2)")
        .doc("Windows never calls them: its hardware context is the `DxgkDdiCreateContext` context, and the GPU's scheduler picks contexts ([switch], hws.md §2)", ""),
    ddi!(DxgkDdiResetHwEngine: PDXGKDDI_RESETHWENGINE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resethwengine")
        .ddi_wrapper()
        .group(Group::Hws)
        .mandatory("HWS TDR: a hardware-scheduled node is reset through it, not DxgkDdiResetEngine (22631 VidSchiResetHwEngine)")
        .doc("UM-10", "[resethw]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiQueryConnectionChange: PDXGKDDI_QUERYCONNECTIONCHANGE)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_queryconnectionchange")
        .slot(Slot::LoadOneOf),
    ddi!(DxgkDdiUpdateHwContextState: PDXGKDDI_UPDATEHWCONTEXTSTATE)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_updatehwcontextstate")
        .left_out("no caller in the 22631 dxgkrnl/dxgmms2 (docs/hws.md section 2)")
        .doc("Windows never calls them: its hardware context is the `DxgkDdiCreateContext` context, and the GPU's scheduler picks contexts ([switch], hws.md §2)", ""),
    ddi!(DxgkDdiSetSchedulingLogBuffer: PDXGKDDI_SETSCHEDULINGLOGBUFFER)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_setschedulinglogbuffer")
        .ddi_wrapper()
        .group(Group::Hws)
        .mandatory("HWS: the per-node scheduling log the OS hands the GPU")
        .doc("BR-79", "[schedlog]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiSetupPriorityBands: PDXGKDDI_SETUPPRIORITYBANDS)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_setupprioritybands")
        .ddi_wrapper()
        .group(Group::Hws)
        .mandatory("HWS: called 'after adapter startup and before scheduling the first GPU work item' (reference page)")
        .doc("BR-77", "[bands]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiSetContextSchedulingProperties: PDXGKDDI_SETCONTEXTSCHEDULINGPROPERTIES)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_setcontextschedulingproperties")
        .ddi_wrapper()
        .group(Group::Hws)
        .mandatory("HWS: priority band/quantum per HW context")
        .doc("NF-10", "[sched]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // The reference pages of Suspend/ResumeContext give no IRQL; VidSch calls them from
    // its scheduler worker thread at PASSIVE_LEVEL, which is what the simulation allows
    // (a driver that relies on more is outside anything documented).
    ddi!(DxgkDdiSuspendContext: PDXGKDDI_SUSPENDCONTEXT)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_suspendcontext")
        .ddi_wrapper()
        .mandatory("UM-11/UM-14: suspend a context, doorbells stay connected")
        .doc("UM-11, UM-14, UM-18", "[suspend]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // As DxgkDdiSuspendContext: no IRQL on the page, PASSIVE_LEVEL from VidSch's worker.
    ddi!(DxgkDdiResumeContext: PDXGKDDI_RESUMECONTEXT)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resumecontext")
        .ddi_wrapper()
        .mandatory("UM-12/UM-14: resume a suspended context")
        .doc("UM-12, UM-14", "[resume]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiResumeHwEngine: PDXGKDDI_RESUMEHWENGINE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resumehwengine")
        .ddi_wrapper()
        .group(Group::Hws)
        .mandatory("HWS TDR: called after a successful DxgkDdiResetHwEngine (22631 VidSchiResetHwEngine)")
        .doc("UM-10", "[resethw]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiCreateCpuEvent: PDXGKDDI_CREATECPUEVENT)
        .page("d3dkmddi/nc-d3dkmddi-dxgkddi_createcpuevent")
        .left_out("optional feature DXGK_FEATURE_KMD_SIGNAL_CPU_EVENT; https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_feature_id")
        .doc("the optional feature `DXGK_FEATURE_KMD_SIGNAL_CPU_EVENT`", ""),
    ddi!(DxgkDdiCreateNativeFence: PDXGKDDI_CREATENATIVEFENCE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createnativefence")
        .ddi_wrapper()
        .group(Group::NativeFence)
        .mandatory("NF-12/NF-13")
        .doc("NF-11, NF-12, NF-13, NF-16", "[nf]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiDestroyNativeFence: PDXGKDDI_DESTROYNATIVEFENCE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroynativefence")
        .mandatory("NF-12/NF-13")
        .doc("NF-12, NF-13", "[nf]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // Device IRQL, synchronised with the ISR (NF-07).
    ddi!(DxgkDdiUpdateMonitoredValues: PDXGKDDI_UPDATEMONITOREDVALUES)
        .at(DIRQL, DIRQL, "d3dkmddi/nc-d3dkmddi-dxgkddi_updatemonitoredvalues")
        .group(Group::NativeFence)
        .mandatory("NF-12/NF-07 (device IRQL, synchronised with the ISR)")
        .doc("NF-07, NF-09, NF-12", "[nf]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // The page says DISPATCH_LEVEL (NF-17); 24H2 calls it at device IRQL under the
    // interrupt lock (`M:VidSchiUpdateNativeFenceCurrentValue` @0x140045B14,
    // `DpSynchronizeExecution`; simos `machine::answers::CpuUpdateIrql`).
    ddi!(DxgkDdiUpdateCurrentValuesFromCpu: PDXGKDDI_UPDATECURRENTVALUESFROMCPU)
        .at(D, DIRQL, "d3dkmddi/nc-d3dkmddi-dxgkddi_updatecurrentvaluesfromcpu")
        .group(Group::NativeFence)
        .mandatory("NF-12/NF-17 (CPU signal, NotificationOnly for cross-adapter NF-16)")
        .doc("NF-12, NF-16, NF-17", "[nf]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiCreateDoorbell: PDXGKDDI_CREATEDOORBELL)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createdoorbell")
        .ddi_wrapper()
        .slot(Slot::Doorbell)
        .statuses("BR-23", &[STATUS_SUCCESS, STATUS_NOT_IMPLEMENTED, STATUS_NO_MEMORY])
        .mandatory("UM-15")
        .doc("UM-02, UM-15", "[ums]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiConnectDoorbell: PDXGKDDI_CONNECTDOORBELL)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_connectdoorbell")
        .ddi_wrapper()
        .slot(Slot::Doorbell)
        .statuses("BR-23", &[STATUS_SUCCESS, STATUS_NOT_IMPLEMENTED, STATUS_NO_MEMORY])
        .mandatory("UM-15 (returns the physical doorbell address)")
        .doc("UM-15, UM-20, UM-21", "[ums]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiDisconnectDoorbell: PDXGKDDI_DISCONNECTDOORBELL)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_disconnectdoorbell")
        .ddi_wrapper()
        .slot(Slot::Doorbell)
        .mandatory("UM-15 ('must succeed')")
        .doc("UM-09, UM-15", "[ums]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiDestroyDoorbell: PDXGKDDI_DESTROYDOORBELL)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroydoorbell")
        .ddi_wrapper()
        .slot(Slot::Doorbell)
        .mandatory("UM-15 ('must succeed')")
        .doc("UM-15, UM-17", "[ums]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiNotifyWorkSubmission: PDXGKDDI_NOTIFYWORKSUBMISSION)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_notifyworksubmission")
        .ddi_wrapper()
        .slot(Slot::Doorbell)
        .mandatory("UM-15 (CONNECTED_NOTIFY doorbells)")
        .doc("UM-15, UM-19", "[ums]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // The slot Microsoft's reference page calls `DxgkDdiFlushHwQueue` (no page of its own).
    ddi!(Reserved4: PVOID)
        .page("dispmprt/ns-dispmprt-_driver_initialization_data")
        .optional("the slot after DxgkDdiNotifyWorkSubmission (DxgkDdiFlushHwQueue on Microsoft's reference page): the 22631 kernel refuses a user-mode-submission node without it ([D] ADAPTER_RENDER::Initialize, triage event 1290) and never calls it; filled with a function that returns STATUS_NOT_SUPPORTED (docs/windows-bringup.md section 15 question 2)")
        .doc("returns `STATUS_NOT_SUPPORTED`", "the slot Microsoft's reference page calls `DxgkDdiFlushHwQueue`: one Windows 11 kernel refuses a user-mode-submission node without it and never calls it ([windows-bringup.md](windows-bringup.md) §15)")
        .on_null(OnNull::Fails(STATUS_NOT_SUPPORTED)),
    ddi!(DxgkDdiOpenNativeFence: PDXGKDDI_OPENNATIVEFENCE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_opennativefence")
        .mandatory("NF-12/NF-13 (local handles)")
        .doc("NF-12, NF-13", "[nf]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiCloseNativeFence: PDXGKDDI_CLOSENATIVEFENCE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_closenativefence")
        .mandatory("NF-12/NF-13")
        .doc("NF-12, NF-13", "[nf]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // The page says DISPATCH_LEVEL; 24H2 hands the logs over at PASSIVE_LEVEL
    // (`M:VidSchiCreateNativeFenceLog` @0x140024634 calls it straight after
    // `M:VIDMM_SCH_LOG::CreateSchLog` @0x140024A94, which takes a push lock and waits) and takes
    // them back at DISPATCH_LEVEL (`M:VidSchiDecrementHwQueueReference` @0x140020A74, inside a
    // queued spin lock).
    ddi!(DxgkDdiSetNativeFenceLogBuffer: PDXGKDDI_SETNATIVEFENCELOGBUFFER)
        .at(P, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_setnativefencelogbuffer")
        .group(Group::FenceLogs)
        .mandatory("NF-12/LOG-01/LOG-09 (logs are mandatory)")
        .doc("NF-12, LOG-01, LOG-09", "[nf]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    // The OS calls it at DISPATCH_LEVEL (docs/logs.md#simulated-os).
    ddi!(DxgkDdiUpdateNativeFenceLogs: PDXGKDDI_UPDATENATIVEFENCELOGS)
        .at(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_updatenativefencelogs")
        .group(Group::FenceLogs)
        .mandatory("NF-12/LOG-07 (barrier per queue)")
        .doc("NF-12, LOG-07", "[nf]")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiCollectDbgInfo2: PDXGKDDI_COLLECTDBGINFO2)
        .at(P, DIRQL, "d3dkmddi/nc-d3dkmddi-dxgkddi_collectdbginfo2")
        .ddi_wrapper()
        .optional("optional in WDDM 3.2 (the OS calls DxgkDdiCollectDbgInfo without it); 24H2 calls it instead of CollectDbgInfo for every TDR report, engine and adapter-wide (docs/windows-bringup.md section 13)")
        .doc("`kmd::dbginfo`: the per-engine TDR dump record ([tdr.md](tdr.md))", "WDDM 3.2's richer TDR report, which 24H2 calls instead of CollectDbgInfo where present (TDR-01, [windows-bringup.md](windows-bringup.md#13-where-the-code-and-the-pages-disagree))")
        .on_null(OnNull::Fails(STATUS_INVALID_PARAMETER)),
    ddi!(DxgkDdiQueryFeatureSupport = DXGKDDI_FEATURE_INTERFACE.QueryFeatureSupport: PDXGKDDI_QUERYFEATURESUPPORT)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_queryfeaturesupport"),
    ddi!(DxgkDdiQueryFeatureInterface = DXGKDDI_FEATURE_INTERFACE.QueryFeatureInterface: PDXGKDDI_QUERYFEATUREINTERFACE)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_queryfeatureinterface"),
    // KT-8 ([D24] ADAPTER_RENDER::DdiBuildTestCommandBuffer @ 0x1401A12AC): an IRQL-checked
    // wrapper that logs any status but these three as "an invalid NTSTATUS code".
    ddi!(DxgkDdiBuildTestCommandBuffer = DXGKDDI_KERNELMODETESTINGINTERFACE.pfnBuildTestCommandBuffer: PDXGKDDI_BUILDTESTCOMMANDBUFFER)
        .at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_buildtestcommandbuffer")
        .ddi_wrapper()
        .statuses("KT-8", &[STATUS_SUCCESS, STATUS_BUFFER_OVERFLOW, STATUS_INVALID_PARAMETER]),
] } };
}

/// `&[rows]`.
macro_rules! rows_as_slice {
    (rows [ $($row:tt)* ]) => {
        &[ $($row)* ]
    };
}

/// Every catalogued DDI.
pub const CATALOG: &[Ddi] = catalog_rows!(rows_as_slice!);
