//! [`AUDIT`]: what 24H2 hands each DDI of the catalog, in catalog order.

use super::adapter::{CALIBRATE_GPU_CLOCK, QUERY_ADAPTER_INFO, QUERY_ADAPTER_INFO_UMD};
use super::allocation::{
    ALLOCATION_INFO, CLOSE_ALLOCATION, CREATE_ALLOCATION, DESTROY_ALLOCATION, OPEN_ALLOCATION,
    OPEN_ALLOCATION_INFO,
};
use super::device::{CREATE_CONTEXT, CREATE_DEVICE};
use super::escape::{BUILD_TEST_COMMAND_BUFFER, ESCAPE};
use super::feature::{QUERY_FEATURE_INTERFACE, QUERY_FEATURE_SUPPORT};
use super::fence::{
    CLOSE_NATIVE_FENCE, CREATE_NATIVE_FENCE, DESTROY_NATIVE_FENCE, OPEN_NATIVE_FENCE,
    SET_NATIVE_FENCE_LOG_BUFFER, SET_NATIVE_FENCE_LOG_BUFFER_RELEASE,
    UPDATE_CURRENT_VALUES_FROM_CPU, UPDATE_MONITORED_VALUES, UPDATE_NATIVE_FENCE_LOGS,
};
use super::hws::{
    RESUME_CONTEXT, SETUP_PRIORITY_BANDS, SET_CONTEXT_SCHEDULING_PROPERTIES,
    SET_SCHEDULING_LOG_BUFFER, SUSPEND_CONTEXT,
};
use super::paging::{
    FILL, FLUSH_TLB, MAP_APERTURE_SEGMENT, TRANSFER, UNMAP_APERTURE_SEGMENT, UPDATE_PAGE_TABLE,
    UPDATE_PAGE_TABLE_INVALIDATE,
};
use super::pnp::{QUERY_CHILD_RELATIONS, QUERY_INTERFACE_SET, START_DEVICE};
use super::process::{CREATE_PROCESS, GET_ROOT_PAGE_TABLE_SIZE, SET_ROOT_PAGE_TABLE};
use super::queue::{
    CONNECT_DOORBELL, CREATE_DOORBELL, CREATE_HWQUEUE, CREATE_HWQUEUE_USER_MODE, DESTROY_DOORBELL,
    DISCONNECT_DOORBELL, NOTIFY_WORK_SUBMISSION, SUBMIT_COMMAND_TO_HWQUEUE,
};
use super::tdr::{
    COLLECT_DBG_INFO2, PREEMPT_COMMAND, QUERY_DEPENDENT_ENGINE_GROUP, QUERY_ENGINE_STATUS,
    RESET_ENGINE, RESET_HW_ENGINE, RESUME_HW_ENGINE, SUBMIT_COMMAND, SUBMIT_COMMAND_VIRTUAL,
};
use super::{Audit, Cover, Part};
use crate::adapter::{DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_UMDRIVERPRIVATE};
use crate::fence::DXGKARG_SETNATIVEFENCELOGBUFFER;
use crate::submission::{D3DDDI_CREATEHWQUEUEFLAGS, DXGKARG_CREATEHWQUEUE};

/// An entry of [`AUDIT`].
const fn audit(ddi: &'static str, cover: Cover) -> Audit {
    Audit { ddi, cover }
}

/// A slot rvgpu's table leaves empty.
const fn unfilled(ddi: &'static str) -> Audit {
    audit(
        ddi,
        Cover::Unfilled {
            why: "rvgpu's table leaves the slot empty (docs/ddi-status.md)",
        },
    )
}

/// Whether a queue's block is a user-mode-submission queue's.
fn user_mode(b: &DXGKARG_CREATEHWQUEUE) -> bool {
    b.Flags
        .is_set(D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission)
}

/// Whether an adapter-info block asks the UMD's private data (a process's question).
fn umd_private(b: &DXGKARG_QUERYADAPTERINFO) -> bool {
    b.Type == DXGKQAITYPE_UMDRIVERPRIVATE
}

/// Whether a log-buffer block releases the queue's logs (it names no buffer).
fn releases(b: &DXGKARG_SETNATIVEFENCELOGBUFFER) -> bool {
    b.LogBufferCpuVa.is_null() && b.LogBufferGpuVa == 0
}

/// One entry per DDI of `crate::catalog::CATALOG`, same order.
pub static AUDIT: &[Audit] = &[
    audit(
        "DxgkDdiAddDevice",
        Cover::NoBlock {
            by: "K:DpiAddDevice @0x1402393B0",
            why: "the physical device object and where the driver writes its context",
        },
    ),
    audit("DxgkDdiStartDevice", Cover::Blocks(&[&START_DEVICE])),
    audit(
        "DxgkDdiStopDevice",
        Cover::NoBlock {
            by: "K:DpiDxgkDdiStopDevice @0x140254988",
            why: "the adapter's context only (from the FDO's start-failure, stop and post-display hand-off paths)",
        },
    ),
    audit(
        "DxgkDdiRemoveDevice",
        Cover::NoBlock {
            by: "K:DpiDxgkDdiRemoveDevice @0x1403F5410",
            why: "the adapter's context only (from the FDO's remove, and from AddDevice when it fails after the driver's AddDevice)",
        },
    ),
    audit(
        "DxgkDdiDispatchIoRequest",
        Cover::NotCalled {
            by: "K:DpiFdoDispatchIoctl @0x14023DB30",
            why: "the adapter's IOCTL dispatch answers every control code itself (GPU \
                  partitioning, live migration, indirect display) and makes no indirect call, \
                  so no request reaches the slot; no Dpi wrapper of it exists",
        },
    ),
    audit(
        "DxgkDdiInterruptRoutine",
        Cover::NoBlock {
            by: "K:DpiFdoMessageInterruptRoutine @0x140012510",
            why: "the adapter's context and the message number the kernel's ISR received",
        },
    ),
    audit(
        "DxgkDdiDpcRoutine",
        Cover::NoBlock {
            by: "K:DpiFdoDpcForIsr @0x140030CE0",
            why: "the adapter's context only, under the adapter's DPC spin lock, timed into a ring of 64",
        },
    ),
    audit("DxgkDdiQueryChildRelations", Cover::Blocks(&[&QUERY_CHILD_RELATIONS])),
    audit(
        "DxgkDdiQueryChildStatus",
        Cover::NotCalled {
            by: "K:DpiDxgkDdiQueryChildStatus @0x14031E888",
            why: "its one caller is K:DpiPdoIsChildConnected @0x14031D668, on the device \
                  object of a child the driver reported; 24H2 makes children only when \
                  StartDevice reports some (K:DpiFdoStartAdapter @0x140245688), and rvgpu \
                  reports none",
        },
    ),
    audit(
        "DxgkDdiQueryDeviceDescriptor",
        Cover::NotCalled {
            by: "K:DpiDxgkDdiQueryDeviceDescriptor @0x1403E5FD0",
            why: "its callers ask about a reported child by its UID: the child's own device \
                  object (K:DpiPdoGetDeviceDescriptor @0x14042B12C), its monitor \
                  (K:DpiGetMonitorDescriptor @0x1403E5EA8), an integrated display's \
                  descriptor (K:DpiFdoQueryAdapterInfoIntegratedDisplay2 @0x1402446F8); \
                  rvgpu reports no child",
        },
    ),
    audit(
        "DxgkDdiSetPowerState",
        Cover::NoBlock {
            by: "K:DpiDxgkDdiSetPowerState @0x14039C584",
            why: "the context, a device UID, a DEVICE_POWER_STATE and a POWER_ACTION, as scalars",
        },
    ),
    audit(
        "DxgkDdiNotifyAcpiEvent",
        Cover::NoBlock {
            by: "K:DpiDxgkDdiNotifyAcpiEvent @0x1403D9120",
            why: "the event type, the event, its argument as scalars, and a word the driver writes",
        },
    ),
    audit(
        "DxgkDdiResetDevice",
        Cover::NoBlock {
            by: "K:DpiEnterSystemDisplay @0x14007DE70",
            why: "the adapter's context only, when the kernel takes the display for a bug \
                  check and no adapter enabled system display: only for the one adapter the \
                  kernel keeps for that, and only while it is started",
        },
    ),
    audit(
        "DxgkDdiUnload",
        Cover::NoBlock {
            by: "K:DpiDxgkDdiUnload @0x14008CDE4",
            why: "nothing (from DpiCleanup)",
        },
    ),
    audit("DxgkDdiQueryInterface", Cover::Blocks(&[&QUERY_INTERFACE_SET])),
    audit(
        "DxgkDdiControlEtwLogging",
        Cover::NoBlock {
            by: "K:DpiControlEtwLogging @0x140235AA0",
            why: "the enable byte, the flags word and the level, as scalars, under the miniport-list mutex; for an interface of 0x5008 or later the flags lose bits 12 and 13",
        },
    ),
    audit(
        "DxgkDdiQueryAdapterInfo",
        Cover::Blocks(&[
            &Part {
                set: &QUERY_ADAPTER_INFO,
                of: |b| (!umd_private(b)).then_some(b),
            },
            &Part {
                set: &QUERY_ADAPTER_INFO_UMD,
                of: |b| umd_private(b).then_some(b),
            },
        ]),
    ),
    audit("DxgkDdiCreateDevice", Cover::Blocks(&[&CREATE_DEVICE])),
    audit(
        "DxgkDdiCreateAllocation",
        Cover::Blocks(&[&CREATE_ALLOCATION, &ALLOCATION_INFO]),
    ),
    audit("DxgkDdiDestroyAllocation", Cover::Blocks(&[&DESTROY_ALLOCATION])),
    audit(
        "DxgkDdiDescribeAllocation",
        Cover::NotReached {
            by: "K:ADAPTER_RENDER::DdiDescribeAllocation @0x1402F57E0",
            gap: "docs/thunks.md#d3dkmtcreateallocation2",
            why: "DXGKARG_DESCRIBEALLOCATION; about twenty callers, most of them display, \
                  present, overlay or shared-primary paths; on a render-only adapter it is \
                  reached from DXGDEVICE::CreateAllocation for a CrossAdapter resource, which \
                  the simulated OS refuses with the resource (a gap), so no block is handed",
        },
    ),
    audit(
        "DxgkDdiGetStandardAllocationDriverData",
        Cover::NotReached {
            by: "K:ADAPTER_RENDER::DdiGetStandardAllocationDriverData @0x140355CF0",
            gap: "docs/thunks.md#d3dkmtcreateallocation2",
            why: "DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA; besides CDD primaries (display) and a \
                  GPU-PV host, it is reached from K:DXGDEVICE::CreateStandardAllocation \
                  @0x140354F2C (D3DKMTCreateAllocation with StandardAllocation), the \
                  resource-info queries (K:DXGDEVICE::QueryResourceInfo @0x14038AAAC) and \
                  K:DXGDEVICE::GetStandardAllocationDriverData @0x1403DEBEC; the simulated OS \
                  refuses StandardAllocation and makes no resources (gaps), so no block is \
                  handed",
        },
    ),
    unfilled("DxgkDdiAcquireSwizzlingRange"),
    unfilled("DxgkDdiReleaseSwizzlingRange"),
    unfilled("DxgkDdiPatch"),
    audit("DxgkDdiSubmitCommand", Cover::Blocks(&[&SUBMIT_COMMAND])),
    audit("DxgkDdiPreemptCommand", Cover::Blocks(&[&PREEMPT_COMMAND])),
    audit(
        "DxgkDdiBuildPagingBuffer",
        Cover::Blocks(&[
            &UPDATE_PAGE_TABLE,
            &UPDATE_PAGE_TABLE_INVALIDATE,
            &FLUSH_TLB,
            &FILL,
            &TRANSFER,
            &MAP_APERTURE_SEGMENT,
            &UNMAP_APERTURE_SEGMENT,
        ]),
    ),
    audit(
        "DxgkDdiResetFromTimeout",
        Cover::NoBlock {
            by: "K:ADAPTER_RENDER::DdiResetFromTimeout @0x1401A7A78",
            why: "the adapter's context only (from DXGADAPTER::PrepareToReset)",
        },
    ),
    audit(
        "DxgkDdiRestartFromTimeout",
        Cover::NoBlock {
            by: "K:ADAPTER_RENDER::DdiRestartFromTimeout @0x1403FB68C",
            why: "the adapter's context only (from ADAPTER_RENDER::Reset)",
        },
    ),
    audit("DxgkDdiEscape", Cover::Blocks(&[&ESCAPE])),
    audit(
        "DxgkDdiCollectDbgInfo",
        Cover::PagesOnly {
            by: "K:DXGADAPTER::_DdiCollectDbgInfoNoLocks @0x1403698F8",
            page: "https://learn.microsoft.com/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_collectdbginfo",
            why: "24H2's one path to the slot (every report, from K:TdrCollectDbgInfoStage1 \
                  @0x140368AC0) calls DxgkDdiCollectDbgInfo2 when it is filled, as rvgpu's is; \
                  the pages' TDR sequence asks for the report with DxgkDdiCollectDbgInfo, which \
                  the simulated OS calls for every report under the pages' reading \
                  (DbgInfoDdi::First); Machine::collect_dbg_info calls it directly, as a test \
                  does",
        },
    ),
    audit(
        "DxgkDdiQueryCurrentFence",
        Cover::PagesOnly {
            by: "K:ADAPTER_RENDER::DdiQueryCurrentFence @0x140069000",
            page: "https://learn.microsoft.com/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_querycurrentfence",
            why: "called only by the core-interface thunk K:ADAPTER_RENDER_DdiQueryCurrentFence \
                  @0x14006BD20, for which 24H2's dxgmms2 has no stub: a node's timeout check \
                  (M:VidSchiCheckNodeTimeout @0x1400B6030) asks DxgkDdiQueryEngineStatus, and \
                  M:VidSchiResetHwEngine @0x140052878 resumes a reset engine without asking; \
                  the page's Remarks ask it when interrupts stopped and a fence is late, and \
                  the DxgkDdiResetHwEngine page has the OS resynchronise with the reset \
                  engine: the simulated OS does both under the pages' reading only \
                  (LostFence::Asked); Machine::query_current_fence calls it directly, as a \
                  test does",
        },
    ),
    unfilled("DxgkDdiIsSupportedVidPn"),
    audit(
        "DxgkDdiControlInterrupt",
        Cover::NotCalled {
            by: "https://learn.microsoft.com/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_controlinterrupt",
            why: "the interrupts it switches (vsync, CRTC) are a display's; a render-only \
                  adapter's OS never asks, and the simulated OS does not call it",
        },
    ),
    unfilled("DxgkDdiCreateOverlay"),
    audit(
        "DxgkDdiDestroyDevice",
        Cover::NoBlock {
            by: "K:ADAPTER_RENDER::DestroyDeviceNoLocks @0x1402ABDE8",
            why: "the driver's handle of the device, after its allocations",
        },
    ),
    audit(
        "DxgkDdiOpenAllocation",
        Cover::Blocks(&[&OPEN_ALLOCATION, &OPEN_ALLOCATION_INFO]),
    ),
    audit("DxgkDdiCloseAllocation", Cover::Blocks(&[&CLOSE_ALLOCATION])),
    unfilled("DxgkDdiRender"),
    audit(
        "DxgkDdiPresent",
        Cover::NotCalled {
            by: "https://learn.microsoft.com/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_present",
            why: "a present of a GPU-VA adapter reaches the driver as a submission; the \
                  simulated OS does not call it",
        },
    ),
    unfilled("DxgkDdiUpdateOverlay"),
    unfilled("DxgkDdiFlipOverlay"),
    unfilled("DxgkDdiDestroyOverlay"),
    audit("DxgkDdiCreateContext", Cover::Blocks(&[&CREATE_CONTEXT])),
    audit(
        "DxgkDdiDestroyContext",
        Cover::NoBlock {
            by: "K:DXGCONTEXT::DestroyContext @0x1402CF0E0",
            why: "the driver's handle of the context",
        },
    ),
    unfilled("DxgkDdiRenderKm"),
    audit(
        "DxgkDdiSetPowerComponentFState",
        Cover::NoBlock {
            by: "K:DXGADAPTER::DdiSetPowerComponentFState @0x1400078B0",
            why: "the context, a component index and an F-state, as scalars",
        },
    ),
    audit(
        "DxgkDdiQueryDependentEngineGroup",
        Cover::Blocks(&[&QUERY_DEPENDENT_ENGINE_GROUP]),
    ),
    audit("DxgkDdiQueryEngineStatus", Cover::Blocks(&[&QUERY_ENGINE_STATUS])),
    audit("DxgkDdiResetEngine", Cover::Blocks(&[&RESET_ENGINE])),
    audit(
        "DxgkDdiPowerRuntimeControlRequest",
        Cover::NoBlock {
            by: "K:DXGADAPTER::DdiPowerRuntimeControlRequest @0x140068DAC",
            why: "a GUID and the caller's opaque input and output buffers with their sizes, passed through unchanged (from the power framework's control callback, runtime power start, stop and removal)",
        },
    ),
    audit(
        "DxgkDdiNotifySurpriseRemoval",
        Cover::NoBlock {
            by: "K:DpiDxgkDdiNotifySurpriseRemoval @0x140254768",
            why: "the context and a removal type, as scalars; called only for an interface of 0x300D or later with the slot filled",
        },
    ),
    audit(
        "DxgkDdiGetNodeMetadata",
        Cover::NoBlock {
            by: "K:DXGADAPTER::DdiGetNodeMetadata @0x1401A63C4",
            why: "the node and its physical adapter as one scalar (node | adapter << 16, from K:ADAPTER_RENDER::Initialize @0x14019D8EC for every node), and an answer block the OS does not fill: only the friendly name's first character is cleared before the call",
        },
    ),
    audit("DxgkDdiCalibrateGpuClock", Cover::Blocks(&[&CALIBRATE_GPU_CLOCK])),
    unfilled("DxgkDdiFormatHistoryBuffer"),
    audit("DxgkDdiSubmitCommandVirtual", Cover::Blocks(&[&SUBMIT_COMMAND_VIRTUAL])),
    audit("DxgkDdiSetRootPageTable", Cover::Blocks(&[&SET_ROOT_PAGE_TABLE])),
    audit(
        "DxgkDdiGetRootPageTableSize",
        Cover::Blocks(&[&GET_ROOT_PAGE_TABLE_SIZE]),
    ),
    unfilled("DxgkDdiMapCpuHostAperture"),
    audit("DxgkDdiCreateProcess", Cover::Blocks(&[&CREATE_PROCESS])),
    audit(
        "DxgkDdiDestroyProcess",
        Cover::NoBlock {
            by: "K:ADAPTER_RENDER::DdiDestroyProcess @0x1403C0508",
            why: "the driver's handle of the process",
        },
    ),
    audit(
        "DxgkDdiSetStablePowerState",
        Cover::NotCalled {
            by: "https://learn.microsoft.com/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setstablepowerstate",
            why: "reached only through D3DKMTSetStablePowerState, which the simulated OS does \
                  not offer",
        },
    ),
    unfilled("DxgkDdiCreateHwContext"),
    unfilled("DxgkDdiDestroyHwContext"),
    audit(
        "DxgkDdiCreateHwQueue",
        Cover::Blocks(&[
            &Part {
                set: &CREATE_HWQUEUE,
                of: |b| (!user_mode(b)).then_some(b),
            },
            &Part {
                set: &CREATE_HWQUEUE_USER_MODE,
                of: |b| user_mode(b).then_some(b),
            },
        ]),
    ),
    audit(
        "DxgkDdiDestroyHwQueue",
        Cover::NoBlock {
            by: "K:ADAPTER_RENDER::DdiDestroyHwQueue @0x1403B4F34",
            why: "the driver's handle of the queue (K:DXGHWQUEUE::DestroyCoreState \
                  @0x1402CDD74, after the queue's doorbell is gone)",
        },
    ),
    audit(
        "DxgkDdiSubmitCommandToHwQueue",
        Cover::Blocks(&[&SUBMIT_COMMAND_TO_HWQUEUE]),
    ),
    unfilled("DxgkDdiSwitchToHwContextList"),
    audit("DxgkDdiResetHwEngine", Cover::Blocks(&[&RESET_HW_ENGINE])),
    unfilled("DxgkDdiQueryConnectionChange"),
    unfilled("DxgkDdiUpdateHwContextState"),
    audit("DxgkDdiSetSchedulingLogBuffer", Cover::Blocks(&[&SET_SCHEDULING_LOG_BUFFER])),
    audit(
        "DxgkDdiSetupPriorityBands",
        Cover::Blocks(&[&SETUP_PRIORITY_BANDS]),
    ),
    audit("DxgkDdiSetContextSchedulingProperties", Cover::Blocks(&[&SET_CONTEXT_SCHEDULING_PROPERTIES])),
    audit("DxgkDdiSuspendContext", Cover::Blocks(&[&SUSPEND_CONTEXT])),
    audit("DxgkDdiResumeContext", Cover::Blocks(&[&RESUME_CONTEXT])),
    audit("DxgkDdiResumeHwEngine", Cover::Blocks(&[&RESUME_HW_ENGINE])),
    unfilled("DxgkDdiCreateCpuEvent"),
    audit("DxgkDdiCreateNativeFence", Cover::Blocks(&[&CREATE_NATIVE_FENCE])),
    audit("DxgkDdiDestroyNativeFence", Cover::Blocks(&[&DESTROY_NATIVE_FENCE])),
    audit(
        "DxgkDdiUpdateMonitoredValues",
        Cover::Blocks(&[&UPDATE_MONITORED_VALUES]),
    ),
    audit(
        "DxgkDdiUpdateCurrentValuesFromCpu",
        Cover::Blocks(&[&UPDATE_CURRENT_VALUES_FROM_CPU]),
    ),
    audit("DxgkDdiCreateDoorbell", Cover::Blocks(&[&CREATE_DOORBELL])),
    audit("DxgkDdiConnectDoorbell", Cover::Blocks(&[&CONNECT_DOORBELL])),
    audit(
        "DxgkDdiDisconnectDoorbell",
        Cover::Blocks(&[&DISCONNECT_DOORBELL]),
    ),
    audit("DxgkDdiDestroyDoorbell", Cover::Blocks(&[&DESTROY_DOORBELL])),
    audit(
        "DxgkDdiNotifyWorkSubmission",
        Cover::Blocks(&[&NOTIFY_WORK_SUBMISSION]),
    ),
    audit(
        "Reserved4",
        Cover::NotCalled {
            by: "https://learn.microsoft.com/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_driver_initialization_data",
            why: "the slot the page calls DxgkDdiFlushHwQueue: a kernel that requires it for a \
                  user-mode-submission node never calls it (docs/windows-bringup.md section 15)",
        },
    ),
    audit("DxgkDdiOpenNativeFence", Cover::Blocks(&[&OPEN_NATIVE_FENCE])),
    audit("DxgkDdiCloseNativeFence", Cover::Blocks(&[&CLOSE_NATIVE_FENCE])),
    audit(
        "DxgkDdiSetNativeFenceLogBuffer",
        Cover::Blocks(&[
            &Part {
                set: &SET_NATIVE_FENCE_LOG_BUFFER,
                of: |b| (!releases(b)).then_some(b),
            },
            &Part {
                set: &SET_NATIVE_FENCE_LOG_BUFFER_RELEASE,
                of: |b| releases(b).then_some(b),
            },
        ]),
    ),
    audit("DxgkDdiUpdateNativeFenceLogs", Cover::Blocks(&[&UPDATE_NATIVE_FENCE_LOGS])),
    audit("DxgkDdiCollectDbgInfo2", Cover::Blocks(&[&COLLECT_DBG_INFO2])),
    audit("DxgkDdiQueryFeatureSupport", Cover::Blocks(&[&QUERY_FEATURE_SUPPORT])),
    audit(
        "DxgkDdiQueryFeatureInterface",
        Cover::Blocks(&[&QUERY_FEATURE_INTERFACE]),
    ),
    audit(
        "DxgkDdiBuildTestCommandBuffer",
        Cover::Blocks(&[&BUILD_TEST_COMMAND_BUFFER]),
    ),
];
