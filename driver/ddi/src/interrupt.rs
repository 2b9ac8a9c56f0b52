//! Interrupt notification: `DxgkCbNotifyInterrupt` argument and related enums (d3dkmddi.h).

use crate::basic::*;
use crate::macros::{bitfield, c_enum, c_type, flag_word, layout, union_debug};

c_enum! {
    /// `DXGK_INTERRUPT_TYPE`: kind of event reported with `DxgkCbNotifyInterrupt`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_interrupt_type>
    pub type DXGK_INTERRUPT_TYPE = i32 {
        /// A DMA buffer completed (`DmaCompleted`).
        DXGK_INTERRUPT_DMA_COMPLETED = 1,
        /// A preemption request completed (`DmaPreempted`).
        DXGK_INTERRUPT_DMA_PREEMPTED,
        /// CRTC vsync (`CrtcVsync`).
        DXGK_INTERRUPT_CRTC_VSYNC,
        /// A DMA buffer faulted (`DmaFaulted`).
        DXGK_INTERRUPT_DMA_FAULTED,
        /// Display-only vsync (WIN8+).
        DXGK_INTERRUPT_DISPLAYONLY_VSYNC,
        /// Display-only present progress (WIN8+).
        DXGK_INTERRUPT_DISPLAYONLY_PRESENT_PROGRESS,
        /// Vsync with multiplane overlay (WDDM 1.3+).
        DXGK_INTERRUPT_CRTC_VSYNC_WITH_MULTIPLANE_OVERLAY,
        /// Miracast chunk processed (WDDM 1.3+).
        DXGK_INTERRUPT_MICACAST_CHUNK_PROCESSING_COMPLETE,
        /// GPU page fault (WDDM 2.0+, `DmaPageFaulted`).
        DXGK_INTERRUPT_DMA_PAGE_FAULTED,
        /// Vsync with multiplane overlay 2 (WDDM 2.1+).
        DXGK_INTERRUPT_CRTC_VSYNC_WITH_MULTIPLANE_OVERLAY2,
        /// Monitored fence signaled (WDDM 2.2+).
        DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED,
        /// Hardware queue page fault (WDDM 2.2+).
        DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED,
        /// Hardware context list switch completed (WDDM 2.2+).
        DXGK_INTERRUPT_HWCONTEXTLIST_SWITCH_COMPLETED,
        /// Periodic monitored fence signaled (WDDM 2.2+).
        DXGK_INTERRUPT_PERIODIC_MONITORED_FENCE_SIGNALED,
        /// Scheduling log interrupt (WDDM 2.4+).
        DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT,
        /// GPU engine timeout (WDDM 2.4+).
        DXGK_INTERRUPT_GPU_ENGINE_TIMEOUT,
        /// Context suspension completed (WDDM 2.4+).
        DXGK_INTERRUPT_SUSPEND_CONTEXT_COMPLETED,
        /// Vsync with multiplane overlay 3 (WDDM 2.9+).
        DXGK_INTERRUPT_CRTC_VSYNC_WITH_MULTIPLANE_OVERLAY3,
        /// Native fences signaled (WDDM 3.1+, `NativeFenceSignaled`).
        DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED,
        /// GPU engine state change (WDDM 3.1+, `EngineStateChange`).
        DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE,
    }

    /// `DXGK_ENGINE_STATE`: new state reported with `DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-dxgk_engine_state>
    pub type DXGK_ENGINE_STATE = i32 {
        /// The engine is active.
        DXGK_ENGINE_STATE_ACTIVE,
        /// The engine is going to the F1 power state.
        DXGK_ENGINE_STATE_TRANSITION_TO_F1,
        /// The engine is hung.
        DXGK_ENGINE_STATE_HUNG,
    }
}

flag_word! {
    /// `DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkcb_notify_interrupt_data_flags>
    pub struct DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS {
        /// `CrtcVsync.PhysicalAdapterMask` is valid.
        ValidPhysicalAdapterMask,
        /// Hsync flip completion.
        HsyncFlipCompletion,
        /// With a null native-fence array: also scan legacy monitored fences.
        EvaluateLegacyMonitoredFences,
    }
}

c_type! {
    /// `DmaCompleted` arm.
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaCompleted {
        /// Fence ID of the completed DMA buffer.
        pub SubmissionFenceId: UINT,
        /// Node.
        #[offset(4)]
        pub NodeOrdinal: UINT,
        /// Engine (physical adapter).
        #[offset(8)]
        pub EngineOrdinal: UINT,
    }
}

c_type! {
    /// `DmaPreempted` arm.
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPreempted {
        /// Fence ID of the preemption request.
        pub PreemptionFenceId: UINT,
        /// Last fence ID that completed before preemption.
        #[offset(4)]
        pub LastCompletedFenceId: UINT,
        /// Node.
        #[offset(8)]
        pub NodeOrdinal: UINT,
        /// Engine.
        #[offset(12)]
        pub EngineOrdinal: UINT,
    }
}

c_type! {
    /// `DmaFaulted` arm.
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaFaulted {
        /// Fence ID of the faulting DMA buffer.
        pub FaultedFenceId: UINT,
        /// Fault status.
        #[offset(4)]
        pub Status: NTSTATUS,
        /// Node.
        #[offset(8)]
        pub NodeOrdinal: UINT,
        /// Engine.
        #[offset(12)]
        pub EngineOrdinal: UINT,
    }
}

c_type! {
    /// `CrtcVsync` arm.
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_CrtcVsync {
        /// Target.
        pub VidPnTargetId: D3DDDI_VIDEO_PRESENT_TARGET_ID,
        /// Scanned-out address.
        #[offset(8)]
        pub PhysicalAddress: PHYSICAL_ADDRESS,
        /// Physical adapter mask.
        #[offset(16)]
        pub PhysicalAdapterMask: UINT,
    }
}

c_type! {
    /// `DisplayOnlyVsync` arm.
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_DisplayOnlyVsync {
        /// Target.
        pub VidPnTargetId: D3DDDI_VIDEO_PRESENT_TARGET_ID,
    }
}

c_type! {
    /// `CrtcVsyncWithMultiPlaneOverlay` arm (the info array type is opaque here).
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_CrtcVsyncWithMultiPlaneOverlay {
        /// Target.
        pub VidPnTargetId: D3DDDI_VIDEO_PRESENT_TARGET_ID,
        /// Physical adapter mask.
        pub PhysicalAdapterMask: UINT,
        /// Number of entries.
        pub MultiPlaneOverlayVsyncInfoCount: UINT,
        /// `DXGK_MULTIPLANE_OVERLAY_VSYNC_INFO*`.
        #[offset(16)]
        pub pMultiPlaneOverlayVsyncInfo: PVOID,
    }
}

c_type! {
    /// `DXGKARGCB_PRESENT_DISPLAYONLY_PROGRESS` (`DisplayOnlyPresentProgress` arm).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkargcb_present_displayonly_progress>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGKARGCB_PRESENT_DISPLAYONLY_PROGRESS {
        /// Source.
        pub VidPnSourceId: D3DDDI_VIDEO_PRESENT_SOURCE_ID,
        /// `DXGK_PRESENT_DISPLAYONLY_PROGRESS_ID` value.
        #[offset(4)]
        pub ProgressId: i32,
    }
}

c_type! {
    /// `DXGK_MIRACAST_CHUNK_INFO` (d3dukmdt.h).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-dxgk_miracast_chunk_info>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_MIRACAST_CHUNK_INFO {
        /// `DXGK_MIRACAST_CHUNK_TYPE` value.
        pub ChunkType: i32,
        /// `DXGK_MIRACAST_CHUNK_ID`: a 64-bit bitfield word (`FrameNumber` : 40, `PartNumber` :
        /// 24), hence 8-aligned at offset 8.
        #[offset(8)]
        pub ChunkId: UINT64,
        /// Processing time.
        #[offset(16)]
        pub ProcessingTime: UINT,
        /// Encode rate.
        #[offset(20)]
        pub EncodeRate: UINT,
    }
}

c_type! {
    /// `MiracastEncodeChunkCompleted` arm.
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_MiracastEncodeChunkCompleted {
        /// Target.
        pub VidPnTargetId: D3DDDI_VIDEO_PRESENT_TARGET_ID,
        /// Chunk description.
        #[offset(8)]
        pub ChunkInfo: DXGK_MIRACAST_CHUNK_INFO,
        /// Private data.
        #[offset(32)]
        pub pPrivateDriverData: PVOID,
        /// Private data size.
        #[offset(40)]
        pub PrivateDataDriverSize: UINT,
        /// Status.
        #[offset(44)]
        pub Status: NTSTATUS,
    }
}

c_enum! {
    /// `DXGK_PAGE_FAULT_FLAGS` (d3dkmdt.h): a C enum used as a bit mask in the page-fault arms'
    /// `PageFaultFlags`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ne-d3dkmdt-_dxgk_page_fault_flags>
    pub type DXGK_PAGE_FAULT_FLAGS = i32 {
        /// The faulting access was a write.
        DXGK_PAGE_FAULT_WRITE = 0x1,
        /// The faulting packet's fence is unknown (`FaultedFenceId` is not meaningful).
        DXGK_PAGE_FAULT_FENCE_INVALID = 0x2,
        /// Recovery needs a full adapter reset.
        DXGK_PAGE_FAULT_ADAPTER_RESET_REQUIRED = 0x4,
        /// Recovery needs an engine reset.
        DXGK_PAGE_FAULT_ENGINE_RESET_REQUIRED = 0x8,
        /// The whole system cannot continue; the OS bug-checks.
        DXGK_PAGE_FAULT_FATAL_HARDWARE_ERROR = 0x10,
        /// The faulting VA was mapped through the IoMmu (clear: through the GPU MMU).
        DXGK_PAGE_FAULT_IOMMU = 0x20,
        /// Hardware queue unknown but the hardware context is (WDDM 2.2+).
        DXGK_PAGE_FAULT_HW_CONTEXT_VALID = 0x40,
        /// Queue and context unknown but the process is (WDDM 2.2+).
        DXGK_PAGE_FAULT_PROCESS_HANDLE_VALID = 0x80,
    }

    /// `DXGK_RENDER_PIPELINE_STAGE` (d3dkmdt.h): pipeline stage of a page fault.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ne-d3dkmdt-_dxgk_render_pipeline_stage>
    pub type DXGK_RENDER_PIPELINE_STAGE = i32 {
        /// Unknown stage.
        DXGK_RENDER_PIPELINE_STAGE_UNKNOWN,
        /// Input assembler.
        DXGK_RENDER_PIPELINE_STAGE_INPUT_ASSEMBLER,
        /// Vertex shader.
        DXGK_RENDER_PIPELINE_STAGE_VERTEX_SHADER,
        /// Geometry shader.
        DXGK_RENDER_PIPELINE_STAGE_GEOMETRY_SHADER,
        /// Stream output.
        DXGK_RENDER_PIPELINE_STAGE_STREAM_OUTPUT,
        /// Rasterizer.
        DXGK_RENDER_PIPELINE_STAGE_RASTERIZER,
        /// Pixel shader.
        DXGK_RENDER_PIPELINE_STAGE_PIXEL_SHADER,
        /// Output merger.
        DXGK_RENDER_PIPELINE_STAGE_OUTPUT_MERGER,
    }

    /// `DXGK_GENERAL_ERROR_CODE` (d3dkmdt.h): [`DXGK_FAULT_ERROR_CODE::GeneralErrorCode`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ne-d3dkmdt-_dxgk_general_error_code>
    pub type DXGK_GENERAL_ERROR_CODE = i32 {
        /// A page fault.
        DXGK_GENERAL_ERROR_PAGE_FAULT,
        /// An invalid instruction.
        DXGK_GENERAL_ERROR_INVALID_INSTRUCTION,
    }
}

/// `DXGK_PRIMITIVE_API_SEQUENCE_NUMBER_UNKNOWN`: `FaultedPrimitiveAPISequenceNumber` when the
/// draw is not known.
pub const DXGK_PRIMITIVE_API_SEQUENCE_NUMBER_UNKNOWN: UINT64 = u64::MAX;
/// `DXGK_BIND_TABLE_ENTRY_UNKNOWN`: `FaultedBindTableEntry` when the resource is not known.
pub const DXGK_BIND_TABLE_ENTRY_UNKNOWN: UINT = u32::MAX;

bitfield! {
    /// `DXGK_FAULT_ERROR_CODE` (d3dkmdt.h): cause of a GPU fault. C declares two overlapping
    /// views: (`IsDeviceSpecificCode`, `GeneralErrorCode`) and
    /// (`IsDeviceSpecificCodeReservedBit`, `DeviceSpecificCode`); bit 0 selects which one the
    /// upper 31 bits follow. The second view is given by the associated constants
    /// [`Self::IsDeviceSpecificCodeReservedBit`] and [`Self::DeviceSpecificCode`]. C has no
    /// whole-word member; `Value` is rvgpu's.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ns-d3dkmdt-_dxgk_fault_error_code>
    pub struct DXGK_FAULT_ERROR_CODE: u32 {
        /// 1: bits 1..31 are a device-specific code; 0: a [`DXGK_GENERAL_ERROR_CODE`].
        IsDeviceSpecificCode: 0, 1;
        /// [`DXGK_GENERAL_ERROR_CODE`] when `IsDeviceSpecificCode` is 0.
        GeneralErrorCode: 1, 31;
    }
}
layout!(DXGK_FAULT_ERROR_CODE, size = 4);

impl DXGK_FAULT_ERROR_CODE {
    /// Second view: the same bit as `IsDeviceSpecificCode`.
    pub const IsDeviceSpecificCodeReservedBit: BitField = BitField { shift: 0, width: 1 };
    /// Second view: the device-specific code when `IsDeviceSpecificCode` is 1.
    pub const DeviceSpecificCode: BitField = BitField {
        shift: 1,
        width: 31,
    };

    /// A general (OS-defined) error code.
    pub const fn general(code: DXGK_GENERAL_ERROR_CODE) -> Self {
        Self::from_value(0).with(Self::GeneralErrorCode, code.cast_unsigned())
    }

    /// A device-specific error code (truncated to 31 bits).
    pub const fn device_specific(code: u32) -> Self {
        Self::from_value(1).with(Self::DeviceSpecificCode, code)
    }
}

c_type! {
    /// `DmaPageFaulted` arm (WDDM 2.0+).
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPageFaulted {
        /// Fence ID of the faulting packet.
        pub FaultedFenceId: UINT,
        /// API sequence number of the faulting primitive.
        #[offset(8)]
        pub FaultedPrimitiveAPISequenceNumber: UINT64,
        /// Pipeline stage, or [`DXGK_RENDER_PIPELINE_STAGE_UNKNOWN`].
        #[offset(16)]
        pub FaultedPipelineStage: DXGK_RENDER_PIPELINE_STAGE,
        /// Bind table entry.
        #[offset(20)]
        pub FaultedBindTableEntry: UINT,
        /// `DXGK_PAGE_FAULT_*` bits.
        #[offset(24)]
        pub PageFaultFlags: DXGK_PAGE_FAULT_FLAGS,
        /// Faulting GPU VA.
        #[offset(32)]
        pub FaultedVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// Node.
        #[offset(40)]
        pub NodeOrdinal: UINT,
        /// Engine.
        #[offset(44)]
        pub EngineOrdinal: UINT,
        /// Page table level.
        #[offset(48)]
        pub PageTableLevel: UINT,
        /// Cause of the fault (meaningful when `FaultedVirtualAddress` is 0).
        #[offset(52)]
        pub FaultErrorCode: DXGK_FAULT_ERROR_CODE,
        /// Faulting process.
        #[offset(56)]
        pub FaultedProcessHandle: HANDLE,
    }
}

c_type! {
    /// `CrtcVsyncWithMultiPlaneOverlay2` / `3` arms (WDDM 2.1+ / 2.9+).
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_CrtcVsyncWithMultiPlaneOverlay2 {
        /// Target.
        pub VidPnTargetId: D3DDDI_VIDEO_PRESENT_TARGET_ID,
        /// Physical adapter mask.
        pub PhysicalAdapterMask: UINT,
        /// Number of entries.
        pub MultiPlaneOverlayVsyncInfoCount: UINT,
        /// `DXGK_MULTIPLANE_OVERLAY_VSYNC_INFO2*` (or `...INFO3*`).
        #[offset(16)]
        pub pMultiPlaneOverlayVsyncInfo: PVOID,
        /// GPU clock frequency.
        #[offset(24)]
        pub GpuFrequency: ULONGLONG,
        /// GPU clock counter at vsync.
        #[offset(32)]
        pub GpuClockCounter: ULONGLONG,
    }
}

c_type! {
    /// `MonitoredFenceSignaled` / `SchedulingLogInterrupt` / `GpuEngineTimeout` arms.
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine {
        /// Node.
        pub NodeOrdinal: UINT,
        /// Engine.
        #[offset(4)]
        pub EngineOrdinal: UINT,
    }
}

c_type! {
    /// `HwContextListSwitchCompleted` arm (WDDM 2.2+).
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwContextListSwitchCompleted {
        /// Node.
        pub NodeOrdinal: UINT,
        /// Engine.
        pub EngineOrdinal: UINT,
        /// Context switch fence.
        #[offset(8)]
        pub ContextSwitchFence: UINT64,
    }
}

c_type! {
    /// `HwQueuePageFaulted` arm (WDDM 2.2+); the `FaultedHwQueue`/`FaultedHwContext`/
    /// `FaultedProcessHandle` union is bound as one handle.
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted {
        /// Faulting fence.
        pub FaultedFenceId: UINT64,
        /// Faulting GPU VA.
        pub FaultedVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// API sequence number.
        pub FaultedPrimitiveAPISequenceNumber: UINT64,
        /// Faulting queue, context or process (anonymous union in C).
        #[offset(24)]
        pub FaultedHwQueue: HANDLE,
        /// Node.
        #[offset(32)]
        pub NodeOrdinal: UINT,
        /// Engine.
        #[offset(36)]
        pub EngineOrdinal: UINT,
        /// Pipeline stage, or [`DXGK_RENDER_PIPELINE_STAGE_UNKNOWN`].
        #[offset(40)]
        pub FaultedPipelineStage: DXGK_RENDER_PIPELINE_STAGE,
        /// Bind table entry.
        #[offset(44)]
        pub FaultedBindTableEntry: UINT,
        /// `DXGK_PAGE_FAULT_*` bits.
        #[offset(48)]
        pub PageFaultFlags: DXGK_PAGE_FAULT_FLAGS,
        /// Page table level.
        #[offset(52)]
        pub PageTableLevel: UINT,
        /// Cause of the fault.
        #[offset(56)]
        pub FaultErrorCode: DXGK_FAULT_ERROR_CODE,
    }
}

c_type! {
    /// `PeriodicMonitoredFenceSignaled` arm (WDDM 2.2+).
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_PeriodicMonitoredFenceSignaled {
        /// Target.
        pub VidPnTargetId: D3DDDI_VIDEO_PRESENT_TARGET_ID,
        /// Notification ID.
        pub NotificationID: UINT,
    }
}

c_type! {
    /// `SuspendContextCompleted` arm (WDDM 2.4+).
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_SuspendContextCompleted {
        /// The suspended context.
        pub hContext: HANDLE,
        /// Suspension fence.
        #[offset(8)]
        pub ContextSuspendFence: UINT64,
    }
}

c_type! {
    /// `NativeFenceSignaled` arm (WDDM 3.1+).
    // wdk-layout-check: prefix: WDDM 3.2 (24H2) appends hHWQueue to the 10.0.22621 arm
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_NativeFenceSignaled {
        /// Node.
        #[offset(0)]
        pub NodeOrdinal: UINT,
        /// Engine.
        #[offset(4)]
        pub EngineOrdinal: UINT,
        /// Number of entries in `pSignaledNativeFenceArray`.
        #[offset(8)]
        pub SignaledNativeFenceCount: UINT,
        /// `hGlobalNativeFence` handles from `DxgkDdiCreateNativeFence`, or null for "scan all".
        /// The OS reads it only when `DXGK_VIDSCHCAPS::OptimizedNativeFenceSignaledInterrupt` is
        /// FALSE.
        #[offset(16)]
        pub pSignaledNativeFenceArray: *mut HANDLE,
        /// KMD handle of the hardware queue whose signal log holds the signals (LOG-08), or null
        /// for "read the logs of every queue on this engine". The OS reads it only when
        /// `OptimizedNativeFenceSignaledInterrupt` is TRUE. Documented in the structure page's
        /// source (MicrosoftDocs/windows-driver-docs-ddi,
        /// `wdk-ddi-src/content/d3dkmddi/ns-d3dkmddi-_dxgkargcb_notify_interrupt_data.md`);
        /// UNVERIFIED which WDK's d3dkmddi.h first has it (docs/logs.md#kmd).
        #[offset(24)]
        pub hHWQueue: HANDLE,
    }
}

c_type! {
    /// `EngineStateChange` arm (WDDM 3.1+).
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_EngineStateChange {
        /// Node.
        pub NodeOrdinal: UINT,
        /// Engine.
        #[offset(4)]
        pub EngineOrdinal: UINT,
        /// New state.
        #[offset(8)]
        pub NewState: DXGK_ENGINE_STATE,
    }
}

c_type! {
    /// `Reserved` arm: sizes the union.
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA_Reserved {
        /// Reserved.
        pub Reserved: [UINT; 16],
    }
}

c_type! {
    /// Anonymous union of [`DXGKARGCB_NOTIFY_INTERRUPT_DATA`]; the arm is chosen by
    /// `InterruptType`. All arms through WDDM 3.2 are present.
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGKARGCB_NOTIFY_INTERRUPT_DATA_0 {
        /// `DXGK_INTERRUPT_DMA_COMPLETED`.
        pub DmaCompleted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaCompleted,
        /// `DXGK_INTERRUPT_DMA_PREEMPTED`.
        pub DmaPreempted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPreempted,
        /// `DXGK_INTERRUPT_DMA_FAULTED`.
        pub DmaFaulted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaFaulted,
        /// `DXGK_INTERRUPT_CRTC_VSYNC`.
        pub CrtcVsync: DXGKARGCB_NOTIFY_INTERRUPT_DATA_CrtcVsync,
        /// `DXGK_INTERRUPT_DISPLAYONLY_VSYNC`.
        pub DisplayOnlyVsync: DXGKARGCB_NOTIFY_INTERRUPT_DATA_DisplayOnlyVsync,
        /// `DXGK_INTERRUPT_CRTC_VSYNC_WITH_MULTIPLANE_OVERLAY`.
        pub CrtcVsyncWithMultiPlaneOverlay:
            DXGKARGCB_NOTIFY_INTERRUPT_DATA_CrtcVsyncWithMultiPlaneOverlay,
        /// `DXGK_INTERRUPT_DISPLAYONLY_PRESENT_PROGRESS`.
        pub DisplayOnlyPresentProgress: DXGKARGCB_PRESENT_DISPLAYONLY_PROGRESS,
        /// `DXGK_INTERRUPT_MICACAST_CHUNK_PROCESSING_COMPLETE`.
        pub MiracastEncodeChunkCompleted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_MiracastEncodeChunkCompleted,
        /// `DXGK_INTERRUPT_DMA_PAGE_FAULTED`.
        pub DmaPageFaulted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPageFaulted,
        /// `DXGK_INTERRUPT_CRTC_VSYNC_WITH_MULTIPLANE_OVERLAY2`.
        pub CrtcVsyncWithMultiPlaneOverlay2:
            DXGKARGCB_NOTIFY_INTERRUPT_DATA_CrtcVsyncWithMultiPlaneOverlay2,
        /// `DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED`.
        pub MonitoredFenceSignaled: DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine,
        /// `DXGK_INTERRUPT_HWCONTEXTLIST_SWITCH_COMPLETED`.
        pub HwContextListSwitchCompleted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwContextListSwitchCompleted,
        /// `DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED`.
        pub HwQueuePageFaulted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted,
        /// `DXGK_INTERRUPT_PERIODIC_MONITORED_FENCE_SIGNALED`.
        pub PeriodicMonitoredFenceSignaled:
            DXGKARGCB_NOTIFY_INTERRUPT_DATA_PeriodicMonitoredFenceSignaled,
        /// `DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT`.
        pub SchedulingLogInterrupt: DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine,
        /// `DXGK_INTERRUPT_GPU_ENGINE_TIMEOUT`.
        pub GpuEngineTimeout: DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine,
        /// `DXGK_INTERRUPT_SUSPEND_CONTEXT_COMPLETED`.
        pub SuspendContextCompleted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_SuspendContextCompleted,
        /// `DXGK_INTERRUPT_CRTC_VSYNC_WITH_MULTIPLANE_OVERLAY3` (same layout as arm 2).
        pub CrtcVsyncWithMultiPlaneOverlay3:
            DXGKARGCB_NOTIFY_INTERRUPT_DATA_CrtcVsyncWithMultiPlaneOverlay2,
        /// `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED`.
        pub NativeFenceSignaled: DXGKARGCB_NOTIFY_INTERRUPT_DATA_NativeFenceSignaled,
        /// `DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE`.
        pub EngineStateChange: DXGKARGCB_NOTIFY_INTERRUPT_DATA_EngineStateChange,
        /// Sizes the union (64 bytes).
        pub Reserved: DXGKARGCB_NOTIFY_INTERRUPT_DATA_Reserved,
    }
}

impl Default for DXGKARGCB_NOTIFY_INTERRUPT_DATA_0 {
    fn default() -> Self {
        Self {
            Reserved: DXGKARGCB_NOTIFY_INTERRUPT_DATA_Reserved::default(),
        }
    }
}

union_debug!(DXGKARGCB_NOTIFY_INTERRUPT_DATA_0);

/// Safe reads of the union's arms. Every arm is plain integers and handles, so any bit pattern
/// is a value of it: reading an arm other than the one `InterruptType` selects gives a
/// meaningless but valid value, never undefined behaviour.
macro_rules! arm_readers {
    ($($(#[$m:meta])* $name:ident => $field:ident: $ty:ty;)*) => {
        impl DXGKARGCB_NOTIFY_INTERRUPT_DATA_0 {
            $(
                $(#[$m])*
                #[inline(always)]
                pub fn $name(&self) -> $ty {
                    // SAFETY: a `Copy` arm of plain integers and handles, valid for any bits.
                    unsafe { self.$field }
                }
            )*
        }
    };
}
arm_readers! {
    /// The `DmaCompleted` arm.
    dma_completed => DmaCompleted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaCompleted;
    /// The `DmaPreempted` arm.
    dma_preempted => DmaPreempted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPreempted;
    /// The `DmaFaulted` arm.
    dma_faulted => DmaFaulted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaFaulted;
    /// The `DmaPageFaulted` arm.
    dma_page_faulted => DmaPageFaulted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPageFaulted;
    /// The `MonitoredFenceSignaled` arm.
    monitored_fence_signaled => MonitoredFenceSignaled: DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine;
    /// The `HwQueuePageFaulted` arm.
    hw_queue_page_faulted => HwQueuePageFaulted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted;
    /// The `SchedulingLogInterrupt` arm.
    scheduling_log_interrupt => SchedulingLogInterrupt: DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine;
    /// The `GpuEngineTimeout` arm.
    gpu_engine_timeout => GpuEngineTimeout: DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine;
    /// The `SuspendContextCompleted` arm.
    suspend_context_completed => SuspendContextCompleted: DXGKARGCB_NOTIFY_INTERRUPT_DATA_SuspendContextCompleted;
    /// The `NativeFenceSignaled` arm.
    native_fence_signaled => NativeFenceSignaled: DXGKARGCB_NOTIFY_INTERRUPT_DATA_NativeFenceSignaled;
    /// The `EngineStateChange` arm.
    engine_state_change => EngineStateChange: DXGKARGCB_NOTIFY_INTERRUPT_DATA_EngineStateChange;
}

c_type! {
    /// `DXGKARGCB_NOTIFY_INTERRUPT_DATA`: argument of `DxgkCbNotifyInterrupt` (80 bytes on x64).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkargcb_notify_interrupt_data>
    #[size(80)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGKARGCB_NOTIFY_INTERRUPT_DATA {
        /// Which arm of `Anonymous` is valid.
        #[offset(0)]
        pub InterruptType: DXGK_INTERRUPT_TYPE,
        /// Event data.
        #[offset(8)]
        pub Anonymous: DXGKARGCB_NOTIFY_INTERRUPT_DATA_0,
        /// Flags.
        #[offset(72)]
        pub Flags: DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS,
    }
}

impl DXGKARGCB_NOTIFY_INTERRUPT_DATA {
    /// A notification of `interrupt_type` with every other byte zero: the whole union is
    /// defined, also past the arm a constructor then fills.
    fn zeroed(interrupt_type: DXGK_INTERRUPT_TYPE) -> Self {
        Self {
            InterruptType: interrupt_type,
            ..Default::default()
        }
    }

    /// A `DXGK_INTERRUPT_DMA_COMPLETED` notification.
    pub fn dma_completed(submission_fence_id: UINT, node: UINT, engine: UINT) -> Self {
        let mut d = Self::zeroed(DXGK_INTERRUPT_DMA_COMPLETED);
        d.Anonymous.DmaCompleted = DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaCompleted {
            SubmissionFenceId: submission_fence_id,
            NodeOrdinal: node,
            EngineOrdinal: engine,
        };
        d
    }

    /// A `DXGK_INTERRUPT_DMA_PREEMPTED` notification: the preemption request `preemption_fence_id`
    /// completed and `last_completed_fence_id` is the last DMA buffer that finished (was not
    /// preempted).
    pub fn dma_preempted(
        preemption_fence_id: UINT,
        last_completed_fence_id: UINT,
        node: UINT,
        engine: UINT,
    ) -> Self {
        let mut d = Self::zeroed(DXGK_INTERRUPT_DMA_PREEMPTED);
        d.Anonymous.DmaPreempted = DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPreempted {
            PreemptionFenceId: preemption_fence_id,
            LastCompletedFenceId: last_completed_fence_id,
            NodeOrdinal: node,
            EngineOrdinal: engine,
        };
        d
    }

    /// A `DXGK_INTERRUPT_DMA_FAULTED` notification for the DMA buffer `faulted_fence_id`.
    pub fn dma_faulted(faulted_fence_id: UINT, status: NTSTATUS, node: UINT, engine: UINT) -> Self {
        let mut d = Self::zeroed(DXGK_INTERRUPT_DMA_FAULTED);
        d.Anonymous.DmaFaulted = DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaFaulted {
            FaultedFenceId: faulted_fence_id,
            Status: status,
            NodeOrdinal: node,
            EngineOrdinal: engine,
        };
        d
    }

    /// A `DXGK_INTERRUPT_DMA_PAGE_FAULTED` notification carrying `fault`.
    pub fn dma_page_faulted(fault: DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPageFaulted) -> Self {
        let mut d = Self::zeroed(DXGK_INTERRUPT_DMA_PAGE_FAULTED);
        d.Anonymous.DmaPageFaulted = fault;
        d
    }

    /// A `DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE` notification.
    pub fn engine_state_change(node: UINT, engine: UINT, new_state: DXGK_ENGINE_STATE) -> Self {
        let mut d = Self::zeroed(DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE);
        d.Anonymous.EngineStateChange = DXGKARGCB_NOTIFY_INTERRUPT_DATA_EngineStateChange {
            NodeOrdinal: node,
            EngineOrdinal: engine,
            NewState: new_state,
        };
        d
    }

    /// A `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` notification; `fences` may be null ("scan all").
    pub fn native_fence_signaled(
        node: UINT,
        engine: UINT,
        count: UINT,
        fences: *mut HANDLE,
    ) -> Self {
        Self::native_fence(node, engine, count, fences, core::ptr::null_mut())
    }

    /// A `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` notification in the optimized form (LOG-08):
    /// `h_hw_queue` names the queue whose signal log to read, or is null for "every queue on
    /// this engine". The fence array is left null/0 (the OS does not read it in this mode).
    pub fn native_fence_signaled_queue(node: UINT, engine: UINT, h_hw_queue: HANDLE) -> Self {
        Self::native_fence(node, engine, 0, core::ptr::null_mut(), h_hw_queue)
    }

    /// The `NativeFenceSignaled` arm, fence array and queue as given. Built in place, not
    /// zeroed first: the ISR builds one per signal, and the OS reads only this arm.
    fn native_fence(
        node: UINT,
        engine: UINT,
        count: UINT,
        fences: *mut HANDLE,
        h_hw_queue: HANDLE,
    ) -> Self {
        Self {
            InterruptType: DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED,
            Anonymous: DXGKARGCB_NOTIFY_INTERRUPT_DATA_0 {
                NativeFenceSignaled: DXGKARGCB_NOTIFY_INTERRUPT_DATA_NativeFenceSignaled {
                    NodeOrdinal: node,
                    EngineOrdinal: engine,
                    SignaledNativeFenceCount: count,
                    pSignaledNativeFenceArray: fences,
                    hHWQueue: h_hw_queue,
                },
            },
            Flags: DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::default(),
        }
    }
}
