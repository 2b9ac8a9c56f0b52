//! [`AUDIT`]: what 24H2 hands each DDI of the catalog, in catalog order.

use super::allocation::{
    ALLOCATION_INFO, CLOSE_ALLOCATION, CREATE_ALLOCATION, DESTROY_ALLOCATION, OPEN_ALLOCATION,
    OPEN_ALLOCATION_INFO,
};
use super::device::{CREATE_CONTEXT, CREATE_DEVICE};
use super::escape::ESCAPE;
use super::fence::{
    CREATE_NATIVE_FENCE, OPEN_NATIVE_FENCE, SET_NATIVE_FENCE_LOG_BUFFER,
    SET_NATIVE_FENCE_LOG_BUFFER_RELEASE, UPDATE_CURRENT_VALUES_FROM_CPU, UPDATE_MONITORED_VALUES,
    UPDATE_NATIVE_FENCE_LOGS,
};
use super::hws::{
    RESUME_CONTEXT, SET_CONTEXT_SCHEDULING_PROPERTIES, SET_SCHEDULING_LOG_BUFFER, SUSPEND_CONTEXT,
};
use super::paging::{FLUSH_TLB, UPDATE_PAGE_TABLE, UPDATE_PAGE_TABLE_INVALIDATE};
use super::process::{CREATE_PROCESS, SET_ROOT_PAGE_TABLE};
use super::queue::{
    CONNECT_DOORBELL, CREATE_DOORBELL, CREATE_HWQUEUE, CREATE_HWQUEUE_USER_MODE, DESTROY_DOORBELL,
    DISCONNECT_DOORBELL, NOTIFY_WORK_SUBMISSION, SUBMIT_COMMAND_TO_HWQUEUE,
};
use super::tdr::{
    COLLECT_DBG_INFO2, QUERY_ENGINE_STATUS, RESET_ENGINE, RESET_HW_ENGINE, RESUME_HW_ENGINE,
    SUBMIT_COMMAND_VIRTUAL,
};
use super::{Audit, Cover, Part};
use crate::fence::DXGKARG_SETNATIVEFENCELOGBUFFER;
use crate::submission::{D3DDDI_CREATEHWQUEUEFLAGS, DXGKARG_CREATEHWQUEUE};

/// An entry of [`AUDIT`].
const fn audit(ddi: &'static str, cover: Cover) -> Audit {
    Audit { ddi, cover }
}

/// A DDI whose row sets are not written yet: what 24H2 hands it.
const fn pending(ddi: &'static str, what: &'static str) -> Audit {
    audit(ddi, Cover::Pending { what })
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
    pending(
        "DxgkDdiStartDevice",
        "DXGK_START_INFO, the DXGKRNL_INTERFACE (audited with the callbacks), and the two \
         counts the driver writes",
    ),
    pending("DxgkDdiStopDevice", "the adapter's context only; caller not cited yet"),
    pending("DxgkDdiRemoveDevice", "the adapter's context only; caller not cited yet"),
    pending("DxgkDdiDispatchIoRequest", "the context, a view index and a VIDEO_REQUEST_PACKET"),
    pending("DxgkDdiInterruptRoutine", "the context and a message number; caller not cited yet"),
    pending("DxgkDdiDpcRoutine", "the context only; caller not cited yet"),
    pending("DxgkDdiQueryChildRelations", "a DXGK_CHILD_DESCRIPTOR array and its size"),
    pending("DxgkDdiQueryChildStatus", "a DXGK_CHILD_STATUS"),
    pending("DxgkDdiQueryDeviceDescriptor", "a child UID and a DXGK_DEVICE_DESCRIPTOR"),
    pending("DxgkDdiSetPowerState", "a device UID, a power state and an action"),
    pending("DxgkDdiNotifyAcpiEvent", "an ACPI event, its argument and an output word"),
    pending("DxgkDdiResetDevice", "the adapter's context only; caller not cited yet"),
    pending("DxgkDdiUnload", "nothing; caller not cited yet"),
    pending("DxgkDdiQueryInterface", "a QUERY_INTERFACE"),
    pending("DxgkDdiControlEtwLogging", "three scalars; caller not cited yet"),
    pending(
        "DxgkDdiQueryAdapterInfo",
        "DXGKARG_QUERYADAPTERINFO, one set per type rvgpu answers (the start-up types, and \
         UMDRIVERPRIVATE from K:DxgkQueryAdapterInfoImpl @0x140383210)",
    ),
    audit("DxgkDdiCreateDevice", Cover::Blocks(&[&CREATE_DEVICE])),
    audit(
        "DxgkDdiCreateAllocation",
        Cover::Blocks(&[&CREATE_ALLOCATION, &ALLOCATION_INFO]),
    ),
    audit("DxgkDdiDestroyAllocation", Cover::Blocks(&[&DESTROY_ALLOCATION])),
    pending("DxgkDdiDescribeAllocation", "DXGKARG_DESCRIBEALLOCATION"),
    pending(
        "DxgkDdiGetStandardAllocationDriverData",
        "DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA",
    ),
    unfilled("DxgkDdiAcquireSwizzlingRange"),
    unfilled("DxgkDdiReleaseSwizzlingRange"),
    unfilled("DxgkDdiPatch"),
    pending("DxgkDdiSubmitCommand", "DXGKARG_SUBMITCOMMAND of the paging node's buffers"),
    pending("DxgkDdiPreemptCommand", "DXGKARG_PREEMPTCOMMAND"),
    audit(
        "DxgkDdiBuildPagingBuffer",
        Cover::Blocks(&[&UPDATE_PAGE_TABLE, &UPDATE_PAGE_TABLE_INVALIDATE, &FLUSH_TLB]),
    ),
    pending("DxgkDdiResetFromTimeout", "the adapter's context only; caller not cited yet"),
    pending("DxgkDdiRestartFromTimeout", "the adapter's context only; caller not cited yet"),
    audit("DxgkDdiEscape", Cover::Blocks(&[&ESCAPE])),
    pending(
        "DxgkDdiCollectDbgInfo",
        "DXGKARG_COLLECTDBGINFO; 24H2's TDR path (K:DXGADAPTER::_DdiCollectDbgInfoNoLocks \
         @0x1403698F8) calls it only when DxgkDdiCollectDbgInfo2 is empty, which rvgpu fills; \
         other callers not cited yet",
    ),
    pending("DxgkDdiQueryCurrentFence", "DXGKARG_QUERYCURRENTFENCE"),
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
    pending(
        "DxgkDdiSetPowerComponentFState",
        "the context, a component index and an F-state",
    ),
    pending("DxgkDdiQueryDependentEngineGroup", "DXGKARG_QUERYDEPENDENTENGINEGROUP"),
    audit("DxgkDdiQueryEngineStatus", Cover::Blocks(&[&QUERY_ENGINE_STATUS])),
    audit("DxgkDdiResetEngine", Cover::Blocks(&[&RESET_ENGINE])),
    pending(
        "DxgkDdiPowerRuntimeControlRequest",
        "a GUID and two buffers with their sizes",
    ),
    pending("DxgkDdiNotifySurpriseRemoval", "the context and a removal type"),
    pending("DxgkDdiGetNodeMetadata", "a node ordinal and a DXGKARG_GETNODEMETADATA"),
    pending("DxgkDdiCalibrateGpuClock", "a node ordinal, an engine and DXGKARG_CALIBRATEGPUCLOCK"),
    unfilled("DxgkDdiFormatHistoryBuffer"),
    audit("DxgkDdiSubmitCommandVirtual", Cover::Blocks(&[&SUBMIT_COMMAND_VIRTUAL])),
    audit("DxgkDdiSetRootPageTable", Cover::Blocks(&[&SET_ROOT_PAGE_TABLE])),
    pending("DxgkDdiGetRootPageTableSize", "DXGKARG_GETROOTPAGETABLESIZE"),
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
    pending("DxgkDdiSetupPriorityBands", "DXGKARG_SETUPPRIORITYBANDS"),
    audit("DxgkDdiSetContextSchedulingProperties", Cover::Blocks(&[&SET_CONTEXT_SCHEDULING_PROPERTIES])),
    audit("DxgkDdiSuspendContext", Cover::Blocks(&[&SUSPEND_CONTEXT])),
    audit("DxgkDdiResumeContext", Cover::Blocks(&[&RESUME_CONTEXT])),
    audit("DxgkDdiResumeHwEngine", Cover::Blocks(&[&RESUME_HW_ENGINE])),
    unfilled("DxgkDdiCreateCpuEvent"),
    audit("DxgkDdiCreateNativeFence", Cover::Blocks(&[&CREATE_NATIVE_FENCE])),
    pending("DxgkDdiDestroyNativeFence", "DXGKARG_DESTROYNATIVEFENCE"),
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
    pending("DxgkDdiCloseNativeFence", "DXGKARG_CLOSENATIVEFENCE"),
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
    pending(
        "DxgkDdiQueryFeatureSupport",
        "DXGKARG_QUERYFEATURESUPPORT from K:DpQueryFeatureSupport @0x1402350B0",
    ),
    pending("DxgkDdiQueryFeatureInterface", "DXGKARG_QUERYFEATUREINTERFACE"),
    pending(
        "DxgkDdiBuildTestCommandBuffer",
        "DXGKARG_BUILDTESTCOMMANDBUFFER from K:KnownEscapeBuildTestCommandBuffer @0x1401D1030",
    ),
];
