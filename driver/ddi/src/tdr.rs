//! Timeout detection and recovery: the Windows 8 per-engine reset DDIs, the debug
//! report DDI, and the legacy (OS-scheduled, "node ring") submission path that TDR resets —
//! `DxgkDdiSubmitCommand`, `DxgkDdiSubmitCommandVirtual`, `DxgkDdiPreemptCommand`,
//! `DxgkDdiQueryCurrentFence` and `DxgkDdiBuildPagingBuffer` (d3dkmddi.h, d3dukmdt.h).
//!
//! `DxgkDdiResetFromTimeout` / `DxgkDdiRestartFromTimeout` (`(hAdapter)` only, PASSIVE_LEVEL)
//! were already bound in [`crate::init`]; `DxgkCbInvalidateHwContext` lives with the other
//! callbacks in [`crate::dxgkrnl`]; the `DmaCompleted` / `DmaPreempted` / `DmaFaulted` interrupt
//! arms are in [`crate::interrupt`]; `DXGK_DRIVERCAPS::SupportPerEngineTDR` and
//! `PreemptionCaps` in [`crate::adapter`].
//!
//! Sources: the learn.microsoft.com reference page of each type and DDI (syntax blocks give
//! member order and types). `DXGKARG_BUILDPAGINGBUFFER` was additionally checked against two
//! public copies of the d3dkmddi.h declaration (the union ends with
//! `struct { UINT Reserved[64]; } Reserved;`, followed by `hSystemContext`,
//! `DmaBufferGpuVirtualAddress`, `DmaBufferWriteOffset`) and an SDK-generated layout table that
//! gives the same offsets (union at 0x28, `hSystemContext` at 0x128, 0x140 bytes). Offsets
//! elsewhere follow from MSVC natural alignment on x86_64 and are asserted below.
//!
//! Pointer mutability follows the header's parameter typedefs: `IN_CONST_P…` is `*const`,
//! `INOUT_P…` / `IN_P…` is `*mut` (the driver writes `LastAbortedFenceId`, `EngineStatus`,
//! `DependentNodeOrdinalMask`, `CurrentFence`, and updates `pDmaBuffer` / `MultipassOffset`).

use crate::basic::*;
use crate::macros::{c_enum, c_type, flag_word, reserved_flags, union_debug, zeroed_default};
use crate::memory::{
    DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES, DXGK_BUILDPAGINGBUFFER_FILLVIRTUAL,
    DXGK_BUILDPAGINGBUFFER_FLUSHTLB, DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY,
    DXGK_BUILDPAGINGBUFFER_SIGNALMONITOREDFENCE, DXGK_BUILDPAGINGBUFFER_TRANSFERVIRTUAL,
    DXGK_BUILDPAGINGBUFFER_UPDATECONTEXTALLOCATION, DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
};
use crate::submission::DXGK_SUBMITCOMMANDFLAGS;

// ---------------------------------------------------------------------------------------------
// Per-engine reset (Windows 8 TDR)
// ---------------------------------------------------------------------------------------------

c_type! {
    /// `DXGKARG_QUERYDEPENDENTENGINEGROUP`: which nodes a reset of one node also resets.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_querydependentenginegroup>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGKARG_QUERYDEPENDENTENGINEGROUP {
        /// In: the node being asked about.
        #[offset(0)]
        pub NodeOrdinal: UINT,
        /// In: the physical adapter (LDA index) the node belongs to; the same for every dependent
        /// node.
        #[offset(4)]
        pub EngineOrdinal: UINT,
        /// Out: bit `n` set for every node `n` a reset of `NodeOrdinal` affects, including
        /// `NodeOrdinal` itself.
        #[offset(8)]
        pub DependentNodeOrdinalMask: ULONGLONG,
    }
}

/// `DXGKDDI_QUERYDEPENDENTENGINEGROUP` (PASSIVE_LEVEL, first-level synchronisation; must
/// succeed): `(IN_CONST_HANDLE hAdapter, INOUT_DXGKARG_QUERYDEPENDENTENGINEGROUP
/// pQueryDependentEngineGroup)`. Called before each `DxgkDdiResetEngine`.
///
/// The parameter typedef has no `P` in its name and one version of the page calls it "a value
/// of type `DXGKARG_QUERYDEPENDENTENGINEGROUP`", but it is a pointer: the structure page lists
/// the typedef as `*INOUT_DXGKARG_QUERYDEPENDENTENGINEGROUP`, the current function page says
/// "[in/out] A `DXGKARG_QUERYDEPENDENTENGINEGROUP` structure", Microsoft's sample render-only
/// drivers take `DXGKARG_QUERYDEPENDENTENGINEGROUP*`, and the driver must write the mask back.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_querydependentenginegroup>
pub type PDXGKDDI_QUERYDEPENDENTENGINEGROUP = DDI_FN<*mut DXGKARG_QUERYDEPENDENTENGINEGROUP>;

flag_word! {
    /// `DXGK_ENGINESTATUS`: whether a node is making progress.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_enginestatus>
    pub struct DXGK_ENGINESTATUS {
        /// 1: the node is making progress; 0: it does not respond.
        Responsive,
    }
}

c_type! {
    /// `DXGKARG_QUERYENGINESTATUS`: argument of `DxgkDdiQueryEngineStatus`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_queryenginestatus>
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGKARG_QUERYENGINESTATUS {
        /// In: node.
        #[offset(0)]
        pub NodeOrdinal: UINT,
        /// In: physical adapter (LDA index).
        #[offset(4)]
        pub EngineOrdinal: UINT,
        /// Out: progress of the node.
        #[offset(8)]
        pub EngineStatus: DXGK_ENGINESTATUS,
    }
}

/// `DXGKDDI_QUERYENGINESTATUS` (PASSIVE_LEVEL, first-level synchronisation; should always
/// succeed): `(IN_CONST_HANDLE hAdapter, INOUT_PDXGKARG_QUERYENGINESTATUS pQueryEngineStatus)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_queryenginestatus>
pub type PDXGKDDI_QUERYENGINESTATUS = DDI_FN<*mut DXGKARG_QUERYENGINESTATUS>;

c_type! {
    /// `DXGKARG_RESETENGINE`: argument of `DxgkDdiResetEngine`. There is no "last completed"
    /// output: only the fence ID of the last packet aborted mid-execution.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_resetengine>
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGKARG_RESETENGINE {
        /// In: node to reset.
        #[offset(0)]
        pub NodeOrdinal: UINT,
        /// In: physical adapter (LDA index).
        #[offset(4)]
        pub EngineOrdinal: UINT,
        /// Out: fence ID of the last packet aborted in the middle of execution.
        #[offset(8)]
        pub LastAbortedFenceId: UINT,
    }
}

/// `DXGKDDI_RESETENGINE` (PASSIVE_LEVEL, first-level synchronisation, pageable):
/// `(IN_CONST_HANDLE hAdapter, INOUT_PDXGKARG_RESETENGINE pResetEngine)`. Returns only once the
/// reset is done, nothing remains queued in hardware for the node and the node accepts new
/// packets.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_resetengine>
pub type PDXGKDDI_RESETENGINE = Option<
    unsafe extern "system" fn(hAdapter: HANDLE, pResetEngine: *mut DXGKARG_RESETENGINE) -> NTSTATUS,
>;

/// `VIDEO_TDR_TIMEOUT_DETECTED`: [`DXGKARG_COLLECTDBGINFO::Reason`] for an adapter-wide
/// (logical adapter) reset; also bug check 0x117.
pub const VIDEO_TDR_TIMEOUT_DETECTED: UINT = 0x117;
/// `VIDEO_ENGINE_TIMEOUT_DETECTED`: [`DXGKARG_COLLECTDBGINFO::Reason`] for a reset of one or
/// more nodes (Windows 8+); also bug check 0x141.
pub const VIDEO_ENGINE_TIMEOUT_DETECTED: UINT = 0x141;

c_type! {
    /// `DXGKARG_COLLECTDBGINFO_EXT`: optional extra debug-report data the driver may fill.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_collectdbginfo_ext>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGKARG_COLLECTDBGINFO_EXT {
        /// Out (optional): key for online crash analysis bucketing.
        #[offset(0)]
        pub BucketingKey: UINT,
        /// Out (optional): execution offset within the current DMA buffer.
        #[offset(4)]
        pub CurrentDmaBufferOffset: UINT,
        /// Reserved.
        #[offset(8)]
        pub Reserved2: UINT,
        /// Reserved.
        pub Reserved3: UINT,
        /// Reserved.
        pub Reserved4: UINT,
        /// Reserved.
        pub Reserved5: UINT,
        /// Reserved.
        pub Reserved6: UINT,
        /// Reserved.
        #[offset(28)]
        pub Reserved7: UINT,
    }
}

c_type! {
    /// `DXGKARG_COLLECTDBGINFO`: argument of `DxgkDdiCollectDbgInfo`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_collectdbginfo>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_COLLECTDBGINFO {
        /// In: bug check code the report is for ([`VIDEO_TDR_TIMEOUT_DETECTED`],
        /// [`VIDEO_ENGINE_TIMEOUT_DETECTED`], or another).
        #[offset(0)]
        pub Reason: UINT,
        /// Out: buffer receiving the driver's debug information.
        #[offset(8)]
        pub pBuffer: PVOID,
        /// In: most bytes the driver may write to `pBuffer`.
        #[offset(16)]
        pub BufferSize: SIZE_T,
        /// Out (optional): OS-allocated extension the driver may fill.
        #[offset(24)]
        pub pExtension: *mut DXGKARG_COLLECTDBGINFO_EXT,
    }
}

/// `DXGKDDI_COLLECTDBGINFO`: `(IN_CONST_HANDLE hAdapter, IN_CONST_PDXGKARG_COLLECTDBGINFO
/// pCollectDbgInfo)`. Zero-level synchronisation (may run concurrently with any other DDI);
/// IRQL undefined in general, PASSIVE_LEVEL for the two TDR reasons. Returns `STATUS_SUCCESS`,
/// `STATUS_NO_MEMORY` or `STATUS_UNSUCCESSFUL`. The structure is `const`; the driver writes
/// only through `pBuffer` and `pExtension`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_collectdbginfo>
pub type PDXGKDDI_COLLECTDBGINFO = DDI_FN<*const DXGKARG_COLLECTDBGINFO>;

c_enum! {
    /// `DXGK_TDR_TYPE`: what kind of timeout a `DxgkDdiCollectDbgInfo2` call reports.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-dxgk_tdr_type>
    pub type DXGK_TDR_TYPE = i32 {
        /// `DXGK_TDR_TYPE_UNKNOWN`: reserved, never passed.
        DXGK_TDR_TYPE_UNKNOWN,
        /// `DXGK_TDR_TYPE_FORCED`: forced through the TDR debug-control escape.
        DXGK_TDR_TYPE_FORCED,
        /// `DXGK_TDR_TYPE_PREEMPT_TIMEOUT`: adapter reset of a driver without engine reset.
        DXGK_TDR_TYPE_PREEMPT_TIMEOUT,
        /// `DXGK_TDR_TYPE_ENGINE_TIMEOUT`: one engine did not finish its work or preemption in time;
        /// `TdrPayload` is a [`DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT`].
        DXGK_TDR_TYPE_ENGINE_TIMEOUT = 6,
        /// `DXGK_TDR_TYPE_ENGINE_TIMEOUT_PROMOTED`: an engine timeout turned into an adapter reset.
        DXGK_TDR_TYPE_ENGINE_TIMEOUT_PROMOTED = 9,
        /// `DXGK_TDR_TYPE_PAGE_FAULT`: a GPU page fault.
        DXGK_TDR_TYPE_PAGE_FAULT,
        /// `DXGK_TDR_TYPE_ENGINE_PAGE_FAULT`: an engine's page fault.
        DXGK_TDR_TYPE_ENGINE_PAGE_FAULT = 12,
    }
}

c_type! {
    /// `DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT`: the payload of an engine timeout.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgk_tdr_payload_engine_timeout>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT {
        /// In: the node being reset.
        #[offset(0)]
        pub NodeOrdinal: UINT,
        /// In: the engine being reset.
        #[offset(4)]
        pub EngineOrdinal: UINT,
        /// In (software-scheduled engines): the last fence id the GPU completed.
        #[offset(8)]
        pub LastHwCompletedFenceId: u64,
        /// In (software-scheduled engines): the last fence id submitted.
        #[offset(16)]
        pub LastHwSubmittedFenceId: u64,
        /// In (hardware-scheduled engines): context suspend requests outstanding.
        #[offset(24)]
        pub NumberOfPendingSuspendRequests: u32,
        /// In (hardware-scheduled engines): ready interactive hardware queues in flight.
        #[offset(28)]
        pub NumberOfReadyInteractiveHwQueues: u32,
        /// Out: the context the driver believes timed out, or NULL if it cannot tell. 24H2 clears
        /// it before the call and follows a non-NULL value as an object of its own
        /// (`TdrCollectDbgInfoStage1` @0x140368AC0).
        #[offset(32)]
        pub hContext: HANDLE,
    }
}

c_type! {
    /// `DXGKARG_COLLECTDBGINFO2`: [`DXGKARG_COLLECTDBGINFO`] with the kind of timeout and its
    /// payload after it (the first four fields keep their meaning and offsets).
    ///
    /// Layout: the page's syntax block. The 10.0.22621 WDK's d3dkmddi.h predates WDDM 3.2 and
    /// declares only `DXGKARG_COLLECTDBGINFO` and `_EXT`, whose members, types and order match the
    /// first four fields here; the rest follows from MSVC natural alignment (asserted below). 24H2
    /// fills it in `TdrCollectDbgInfoStage1` @0x140368AC0: `BufferSize` 16 MiB, zeroed.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_collectdbginfo2>
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_COLLECTDBGINFO2 {
        /// In: bug check code the report is for.
        #[offset(0)]
        pub Reason: UINT,
        /// Out: buffer receiving the driver's debug information.
        #[offset(8)]
        pub pBuffer: PVOID,
        /// In: most bytes the driver may write to `pBuffer`.
        #[offset(16)]
        pub BufferSize: SIZE_T,
        /// Out (optional): OS-allocated extension the driver may fill.
        #[offset(24)]
        pub pExtension: *mut DXGKARG_COLLECTDBGINFO_EXT,
        /// In: the kind of timeout.
        #[offset(32)]
        pub TdrType: DXGK_TDR_TYPE,
        /// In: bytes at `TdrPayload`.
        #[offset(36)]
        pub TdrPayloadSize: UINT,
        /// In/out: the type's payload, or NULL (which the driver must survive).
        #[offset(40)]
        pub TdrPayload: PVOID,
    }
}

/// `DXGKDDI_COLLECTDBGINFO2`: `(IN_CONST_HANDLE hAdapter, INOUT_PDXGKARG_COLLECTDBGINFO2)`.
/// Optional for WDDM 3.2; where present Dxgkrnl calls it instead of `DxgkDdiCollectDbgInfo`
/// (24H2 `DXGADAPTER::_DdiCollectDbgInfoNoLocks` @0x1403698F8, which counts any status but
/// `STATUS_SUCCESS`, `STATUS_UNSUCCESSFUL` and `STATUS_NO_MEMORY`, the page's three, as
/// invalid).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_collectdbginfo2>
pub type PDXGKDDI_COLLECTDBGINFO2 = DDI_FN<*mut DXGKARG_COLLECTDBGINFO2>;

// ---------------------------------------------------------------------------------------------
// Legacy (OS-scheduled) submission
// ---------------------------------------------------------------------------------------------

c_enum! {
    /// `D3DDDI_FLIPINTERVAL_TYPE` (d3dukmdt.h): vsyncs between flips (implicit values 0..=5).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ne-d3dukmdt-d3dddi_flipinterval_type>
    pub type D3DDDI_FLIPINTERVAL_TYPE = i32 {
        /// Flip at once, no vsync wait.
        D3DDDI_FLIPINTERVAL_IMMEDIATE,
        /// Every vsync.
        D3DDDI_FLIPINTERVAL_ONE,
        /// Every second vsync.
        D3DDDI_FLIPINTERVAL_TWO,
        /// Every third vsync.
        D3DDDI_FLIPINTERVAL_THREE,
        /// Every fourth vsync.
        D3DDDI_FLIPINTERVAL_FOUR,
        /// Immediate, tearing allowed.
        D3DDDI_FLIPINTERVAL_IMMEDIATE_ALLOW_TEARING,
    }
}

c_type! {
    /// Anonymous union of [`DXGKARG_SUBMITCOMMAND`]: the submitting device (drivers that do not
    /// create contexts) or context (drivers that do). Null for some paging submissions (and rvgpu's
    /// node ring treats null as the system context).
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGKARG_SUBMITCOMMAND_0 {
        /// Driver device handle (non-context-aware drivers).
        pub hDevice: HANDLE,
        /// Driver context handle (context-aware drivers).
        pub hContext: HANDLE,
    }
}

// Both arms are a HANDLE; either reads every byte.
union_debug!(DXGKARG_SUBMITCOMMAND_0 => hContext);

c_type! {
    /// `DXGKARG_SUBMITCOMMAND`: a DMA buffer (physical addressing) handed to
    /// `DxgkDdiSubmitCommand`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_submitcommand>
    #[size(96)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_SUBMITCOMMAND {
        /// `hDevice` / `hContext`.
        #[offset(0)]
        pub Anonymous: DXGKARG_SUBMITCOMMAND_0,
        /// Segment the DMA buffer is paged into; 0 = contiguous system memory.
        #[offset(8)]
        pub DmaBufferSegmentId: UINT,
        /// Physical address of the DMA buffer.
        #[offset(16)]
        pub DmaBufferPhysicalAddress: PHYSICAL_ADDRESS,
        /// Size of the DMA buffer in bytes.
        #[offset(24)]
        pub DmaBufferSize: UINT,
        /// Offset of the first byte to execute.
        #[offset(28)]
        pub DmaBufferSubmissionStartOffset: UINT,
        /// Offset one past the last byte to execute.
        #[offset(32)]
        pub DmaBufferSubmissionEndOffset: UINT,
        /// Driver private data of the DMA buffer.
        #[offset(40)]
        pub pDmaBufferPrivateData: PVOID,
        /// Size of the private data in bytes.
        #[offset(48)]
        pub DmaBufferPrivateDataSize: UINT,
        /// Offset of the private data belonging to this submission.
        #[offset(52)]
        pub DmaBufferPrivateDataSubmissionStartOffset: UINT,
        /// End offset of that private data.
        #[offset(56)]
        pub DmaBufferPrivateDataSubmissionEndOffset: UINT,
        /// Fence ID to report with `DmaCompleted` when this buffer finishes.
        #[offset(60)]
        pub SubmissionFenceId: UINT,
        /// Flip source (valid with `Flags.Flip` / `FlipWithNoWait`).
        #[offset(64)]
        pub VidPnSourceId: D3DDDI_VIDEO_PRESENT_SOURCE_ID,
        /// Flip interval (valid with `Flags.Flip`).
        #[offset(68)]
        pub FlipInterval: D3DDDI_FLIPINTERVAL_TYPE,
        /// `Paging`, `Resubmission`, `NullRendering`, ...
        #[offset(72)]
        pub Flags: DXGK_SUBMITCOMMANDFLAGS,
        /// Physical adapter (LDA index).
        #[offset(76)]
        pub EngineOrdinal: UINT,
        /// GPU VA of the DMA buffer (WDDM 2.0+).
        #[offset(80)]
        pub DmaBufferVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// Node to execute on (WDDM 2.0+).
        #[offset(88)]
        pub NodeOrdinal: UINT,
    }
}

/// `DXGKDDI_SUBMITCOMMAND` (DISPATCH_LEVEL, non-pageable): `(IN_CONST_HANDLE hAdapter,
/// IN_CONST_PDXGKARG_SUBMITCOMMAND pSubmitCommand)`. Any error status makes the OS bug check
/// 0x119 with first parameter 0x2.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommand>
pub type PDXGKDDI_SUBMITCOMMAND = DDI_FN<*const DXGKARG_SUBMITCOMMAND>;

c_type! {
    /// `DXGKARG_SUBMITCOMMANDVIRTUAL`: a DMA buffer of a GPU-VA context handed to
    /// `DxgkDdiSubmitCommandVirtual`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_submitcommandvirtual>
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_SUBMITCOMMANDVIRTUAL {
        /// The driver's context handle (from `DxgkDdiCreateContext`).
        #[offset(0)]
        pub hContext: HANDLE,
        /// GPU VA of the DMA buffer in the submitting process's address space.
        #[offset(8)]
        pub DmaBufferVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// Size of the DMA buffer in bytes.
        #[offset(16)]
        pub DmaBufferSize: UINT,
        /// Driver private data.
        #[offset(24)]
        pub pDmaBufferPrivateData: PVOID,
        /// Size of the private data buffer in bytes (`DXGK_CONTEXTINFO::DmaBufferPrivateDataSize`).
        #[offset(32)]
        pub DmaBufferPrivateDataSize: UINT,
        /// Bytes of private data the UMD actually supplied.
        #[offset(36)]
        pub DmaBufferUmdPrivateDataSize: UINT,
        /// Fence ID to report with `DmaCompleted` when this buffer finishes.
        #[offset(40)]
        pub SubmissionFenceId: UINT,
        /// Flip source (valid with `Flags.Flip` / `FlipWithNoWait`).
        #[offset(44)]
        pub VidPnSourceId: D3DDDI_VIDEO_PRESENT_SOURCE_ID,
        /// Flip interval (valid with `Flags.Flip`).
        #[offset(48)]
        pub FlipInterval: D3DDDI_FLIPINTERVAL_TYPE,
        /// Submission flags.
        #[offset(52)]
        pub Flags: DXGK_SUBMITCOMMANDFLAGS,
        /// Reserved for future use per the page (physical adapter index).
        #[offset(56)]
        pub EngineOrdinal: UINT,
        /// Node the context was created for.
        #[offset(60)]
        pub NodeOrdinal: UINT,
    }
}

/// `DXGKDDI_SUBMITCOMMANDVIRTUAL`: `(IN_CONST_HANDLE hAdapter,
/// IN_CONST_PDXGKARG_SUBMITCOMMANDVIRTUAL pSubmitCommand)`. Unlike `DxgkDdiSubmitCommand` it may
/// return `STATUS_INVALID_PARAMETER` for a malformed buffer (the OS puts the device in error and
/// treats `SubmissionFenceId` as completed once earlier packets finish); any other error is a
/// bug check.
///
/// UNVERIFIED: the IRQL. The reference page gives none. A public copy of a WDDM 2.x-era
/// d3dkmddi.h annotates it `_IRQL_requires_(PASSIVE_LEVEL)` (the same copy gives
/// `DxgkDdiSubmitCommand` and `DxgkDdiPreemptCommand` `DISPATCH_LEVEL`); not checked against a
/// WDDM 3.2 header. An implementation that is also safe at DISPATCH_LEVEL is correct either way.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommandvirtual>
pub type PDXGKDDI_SUBMITCOMMANDVIRTUAL = DDI_FN<*const DXGKARG_SUBMITCOMMANDVIRTUAL>;

reserved_flags! {
    /// `DXGK_PREEMPTCOMMANDFLAGS` (no flags defined).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_preemptcommandflags>
    DXGK_PREEMPTCOMMANDFLAGS;
}

c_type! {
    /// `DXGKARG_PREEMPTCOMMAND`: argument of `DxgkDdiPreemptCommand`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_preemptcommand>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGKARG_PREEMPTCOMMAND {
        /// Fence ID to report with `DmaPreempted` once the preemption is done.
        #[offset(0)]
        pub PreemptionFenceId: UINT,
        /// Node.
        #[offset(4)]
        pub NodeOrdinal: UINT,
        /// Engine (physical adapter).
        #[offset(8)]
        pub EngineOrdinal: UINT,
        /// Flags (none defined).
        #[offset(12)]
        pub Flags: DXGK_PREEMPTCOMMANDFLAGS,
    }
}

/// `DXGKDDI_PREEMPTCOMMAND` (DISPATCH_LEVEL, non-pageable): `(IN_CONST_HANDLE hAdapter,
/// IN_CONST_PDXGKARG_PREEMPTCOMMAND pPreemptCommand)`. Any error status is bug check 0x119 /
/// 0x2. If everything submitted already completed and was reported, the driver reports the
/// preemption itself (`DmaPreempted` from a synchronised routine) instead of queuing a fence.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_preemptcommand>
pub type PDXGKDDI_PREEMPTCOMMAND = DDI_FN<*const DXGKARG_PREEMPTCOMMAND>;

c_type! {
    /// `DXGKARG_QUERYCURRENTFENCE`: argument of `DxgkDdiQueryCurrentFence`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_querycurrentfence>
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGKARG_QUERYCURRENTFENCE {
        /// Out: latest completed submission fence ID of the node.
        #[offset(0)]
        pub CurrentFence: UINT,
        /// In: node.
        #[offset(4)]
        pub NodeOrdinal: UINT,
        /// In: engine within the node.
        #[offset(8)]
        pub EngineOrdinal: UINT,
    }
}

/// `DXGKDDI_QUERYCURRENTFENCE`: `(IN_CONST_HANDLE hAdapter, INOUT_PDXGKARG_QUERYCURRENTFENCE
/// pCurrentFence)`. Before returning, a fence that completed but was not yet reported must be
/// reported with `DxgkCbNotifyInterrupt` (from a routine synchronised with the ISR).
///
/// UNVERIFIED: the IRQL and synchronisation level. The reference page states neither; a
/// public copy of a WDDM 2.x-era d3dkmddi.h annotates it `_IRQL_requires_(PASSIVE_LEVEL)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_querycurrentfence>
pub type PDXGKDDI_QUERYCURRENTFENCE = DDI_FN<*mut DXGKARG_QUERYCURRENTFENCE>;

// ---------------------------------------------------------------------------------------------
// Paging buffers
// ---------------------------------------------------------------------------------------------

c_enum! {
    /// `DXGK_BUILDPAGINGBUFFER_OPERATION`: [`DXGKARG_BUILDPAGINGBUFFER::Operation`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_buildpagingbuffer_operation>
    pub type DXGK_BUILDPAGINGBUFFER_OPERATION = i32 {
        /// Move allocation content ([`DXGKARG_BUILDPAGINGBUFFER_0::Transfer`]).
        DXGK_OPERATION_TRANSFER,
        /// Fill with a 32-bit pattern ([`DXGKARG_BUILDPAGINGBUFFER_0::Fill`]).
        DXGK_OPERATION_FILL,
        /// Allocation discarded from a segment.
        DXGK_OPERATION_DISCARD_CONTENT,
        /// Read a physical address.
        DXGK_OPERATION_READ_PHYSICAL,
        /// Write a physical address.
        DXGK_OPERATION_WRITE_PHYSICAL,
        /// Map an MDL into an aperture segment.
        DXGK_OPERATION_MAP_APERTURE_SEGMENT,
        /// Unmap an aperture segment range.
        DXGK_OPERATION_UNMAP_APERTURE_SEGMENT,
        /// Transfer through the alternate (lock) VA.
        DXGK_OPERATION_SPECIAL_LOCK_TRANSFER,
        /// Transfer by GPU VA.
        DXGK_OPERATION_VIRTUAL_TRANSFER,
        /// Fill by GPU VA.
        DXGK_OPERATION_VIRTUAL_FILL,
        /// Initialise a context allocation (Windows 8+).
        DXGK_OPERATION_INIT_CONTEXT_RESOURCE,
        /// Update a page table (WDDM 2.0+).
        DXGK_OPERATION_UPDATE_PAGE_TABLE,
        /// Flush TLBs of a root page table (WDDM 2.0+).
        DXGK_OPERATION_FLUSH_TLB,
        /// Update a context or device allocation (WDDM 2.0+).
        DXGK_OPERATION_UPDATE_CONTEXT_ALLOCATION,
        /// Copy page table entries (WDDM 2.0+).
        DXGK_OPERATION_COPY_PAGE_TABLE_ENTRIES,
        /// Allocation residency changed (WDDM 2.0+).
        DXGK_OPERATION_NOTIFY_RESIDENCY,
        /// Signal a monitored fence (WDDM 2.2+).
        DXGK_OPERATION_SIGNAL_MONITORED_FENCE,
        /// Map an ADL into an aperture segment (WDDM 3.0+).
        DXGK_OPERATION_MAP_APERTURE_SEGMENT2,
        /// Fence residency changed (WDDM 2.9+).
        DXGK_OPERATION_NOTIFY_FENCE_RESIDENCY,
        /// WDDM 3.2.
        DXGK_OPERATION_MAP_MMU,
        /// WDDM 3.2.
        DXGK_OPERATION_UNMAP_MMU,
        /// WDDM 3.2.
        DXGK_OPERATION_NOTIFY_RESIDENCY2,
        /// Allocation notification (WDDM 3.2).
        DXGK_OPERATION_NOTIFY_ALLOC,
    }
}

flag_word! {
    /// `DXGK_TRANSFERFLAGS`: kind of transfer in [`DXGKARG_BUILDPAGINGBUFFER_Transfer::Flags`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_transferflags>
    pub struct DXGK_TRANSFERFLAGS {
        /// Swizzle source to destination.
        Swizzle,
        /// Unswizzle source to destination.
        Unswizzle,
        /// No GPU work references the allocation until the call returns.
        AllocationIsIdle,
        /// First part of a split transfer.
        TransferStart,
        /// Last part of a split transfer.
        TransferEnd,
    }
}

c_type! {
    /// Anonymous union of [`DXGKARG_BUILDPAGINGBUFFER_Transfer_Source`]: segment address or MDL.
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGKARG_BUILDPAGINGBUFFER_Transfer_Source_0 {
        /// Segment address (segment offset + segment base) when `SegmentId != 0`.
        pub SegmentAddress: LARGE_INTEGER,
        /// System-memory pages when `SegmentId == 0`.
        pub pMdl: PMDL,
    }
}

// Both arms are 8 bytes of plain data; the integer arm reads every byte.
union_debug!(DXGKARG_BUILDPAGINGBUFFER_Transfer_Source_0 => SegmentAddress);

c_type! {
    /// `Transfer.Source` (and, with the same anonymous layout, `Transfer.Destination`) of
    /// [`DXGKARG_BUILDPAGINGBUFFER`].
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_Transfer_Source {
        /// Segment, or 0 when the location is an MDL.
        #[offset(0)]
        pub SegmentId: UINT,
        /// `SegmentAddress` / `pMdl`.
        #[offset(8)]
        pub Anonymous: DXGKARG_BUILDPAGINGBUFFER_Transfer_Source_0,
    }
}

/// `Transfer.Destination`: declared in C as a separate anonymous struct identical to
/// [`DXGKARG_BUILDPAGINGBUFFER_Transfer_Source`].
pub type DXGKARG_BUILDPAGINGBUFFER_Transfer_Destination = DXGKARG_BUILDPAGINGBUFFER_Transfer_Source;

c_type! {
    /// `Transfer` arm of [`DXGKARG_BUILDPAGINGBUFFER_0`] ([`DXGK_OPERATION_TRANSFER`]).
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_Transfer {
        /// Driver allocation handle (from `DxgkDdiCreateAllocation`).
        #[offset(0)]
        pub hAllocation: HANDLE,
        /// Offset of the first transferred page within the allocation (segment locations only;
        /// the same on every pass of a split transfer).
        #[offset(8)]
        pub TransferOffset: UINT,
        /// Bytes to transfer.
        #[offset(16)]
        pub TransferSize: SIZE_T,
        /// Source location.
        #[offset(24)]
        pub Source: DXGKARG_BUILDPAGINGBUFFER_Transfer_Source,
        /// Destination location.
        #[offset(40)]
        pub Destination: DXGKARG_BUILDPAGINGBUFFER_Transfer_Destination,
        /// Transfer kind.
        #[offset(56)]
        pub Flags: DXGK_TRANSFERFLAGS,
        /// First system page of the current pass within the MDL
        /// (`MmGetMdlPfnArray(pMdl)[MdlOffset]`).
        #[offset(60)]
        pub MdlOffset: UINT,
    }
}

c_type! {
    /// `Fill.Destination` of [`DXGKARG_BUILDPAGINGBUFFER`].
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_Fill_Destination {
        /// Segment to fill in.
        #[offset(0)]
        pub SegmentId: UINT,
        /// Segment address (segment offset + segment base).
        #[offset(8)]
        pub SegmentAddress: LARGE_INTEGER,
    }
}

c_type! {
    /// `Fill` arm of [`DXGKARG_BUILDPAGINGBUFFER_0`] ([`DXGK_OPERATION_FILL`]).
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_Fill {
        /// Driver allocation handle.
        #[offset(0)]
        pub hAllocation: HANDLE,
        /// Bytes to fill.
        #[offset(8)]
        pub FillSize: SIZE_T,
        /// 32-bit pattern.
        #[offset(16)]
        pub FillPattern: UINT,
        /// Where to fill.
        #[offset(24)]
        pub Destination: DXGKARG_BUILDPAGINGBUFFER_Fill_Destination,
    }
}

flag_word! {
    /// `DXGK_MAPAPERTUREFLAGS`: [`DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment::Flags`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_mapapertureflags>
    pub struct DXGK_MAPAPERTUREFLAGS {
        /// Map the pages cache-coherently.
        CacheCoherent,
    }
}

c_type! {
    /// `MapApertureSegment` arm of [`DXGKARG_BUILDPAGINGBUFFER_0`]
    /// ([`DXGK_OPERATION_MAP_APERTURE_SEGMENT`]): map an MDL's pages into an aperture range.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_buildpagingbuffer>
    #[size(56)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment {
        /// Device the allocation belongs to (NULL for VidMm's own).
        #[offset(0)]
        pub hDevice: HANDLE,
        /// Driver allocation handle (NULL for VidMm's own).
        #[offset(8)]
        pub hAllocation: HANDLE,
        /// The aperture segment.
        #[offset(16)]
        pub SegmentId: UINT,
        /// First aperture page mapped.
        #[offset(24)]
        pub OffsetInPages: SIZE_T,
        /// Pages mapped.
        #[offset(32)]
        pub NumberOfPages: SIZE_T,
        /// The system pages.
        #[offset(40)]
        pub pMdl: PMDL,
        /// Mapping flags.
        #[offset(48)]
        pub Flags: DXGK_MAPAPERTUREFLAGS,
        /// First page of the MDL mapped (`MmGetMdlPfnArray(pMdl)[MdlOffset]`).
        #[offset(52)]
        pub MdlOffset: ULONG,
    }
}

c_type! {
    /// `UnmapApertureSegment` arm of [`DXGKARG_BUILDPAGINGBUFFER_0`]
    /// ([`DXGK_OPERATION_UNMAP_APERTURE_SEGMENT`]): point an aperture range at a dummy page.
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment {
        /// Device the allocation belongs to (NULL for VidMm's own).
        #[offset(0)]
        pub hDevice: HANDLE,
        /// Driver allocation handle (NULL for VidMm's own).
        #[offset(8)]
        pub hAllocation: HANDLE,
        /// The aperture segment.
        #[offset(16)]
        pub SegmentId: UINT,
        /// First aperture page unmapped.
        #[offset(24)]
        pub OffsetInPages: SIZE_T,
        /// Pages unmapped.
        #[offset(32)]
        pub NumberOfPages: SIZE_T,
        /// Physical address of the page the range points at afterwards.
        #[offset(40)]
        pub DummyPage: PHYSICAL_ADDRESS,
    }
}

c_type! {
    /// The `Reserved` arm of [`DXGKARG_BUILDPAGINGBUFFER_0`] (`struct { UINT Reserved[64]; }`):
    /// sizes the union, and is the raw view of every arm not bound here.
    #[size(256)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct DXGKARG_BUILDPAGINGBUFFER_Reserved {
        /// The union's 256 bytes.
        pub Reserved: [UINT; 64],
    }
}

c_type! {
    /// Anonymous per-operation union of [`DXGKARG_BUILDPAGINGBUFFER`] (256 bytes, 8-aligned).
    ///
    /// Typed arms: `Transfer`, `Fill`, `MapApertureSegment`, `UnmapApertureSegment` and the
    /// WDDM 2.0+ GpuMmu operations (`TransferVirtual`,
    /// `FillVirtual`, `UpdatePageTable`, `FlushTlb`, `CopyPageTableEntries`,
    /// `UpdateContextAllocation`, `NotifyResidency`, `SignalMonitoredFence`; their types are in
    /// [`crate::memory`]). `DiscardContent`, `ReadPhysical`, `WritePhysical`,
    /// `SpecialLockTransfer`, `InitContextResource`,
    /// `MapApertureSegment2` and the WDDM 3.2 arms are reachable only as raw words through
    /// `Reserved`.
    #[size(256)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGKARG_BUILDPAGINGBUFFER_0 {
        /// [`DXGK_OPERATION_TRANSFER`].
        pub Transfer: DXGKARG_BUILDPAGINGBUFFER_Transfer,
        /// [`DXGK_OPERATION_FILL`].
        pub Fill: DXGKARG_BUILDPAGINGBUFFER_Fill,
        /// [`DXGK_OPERATION_MAP_APERTURE_SEGMENT`].
        pub MapApertureSegment: DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment,
        /// [`DXGK_OPERATION_UNMAP_APERTURE_SEGMENT`].
        pub UnmapApertureSegment: DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment,
        /// [`DXGK_OPERATION_VIRTUAL_TRANSFER`] (WDDM 2.0+).
        pub TransferVirtual: DXGK_BUILDPAGINGBUFFER_TRANSFERVIRTUAL,
        /// [`DXGK_OPERATION_VIRTUAL_FILL`] (WDDM 2.0+).
        pub FillVirtual: DXGK_BUILDPAGINGBUFFER_FILLVIRTUAL,
        /// [`DXGK_OPERATION_UPDATE_PAGE_TABLE`] (WDDM 2.0+).
        pub UpdatePageTable: DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
        /// [`DXGK_OPERATION_FLUSH_TLB`] (WDDM 2.0+).
        pub FlushTlb: DXGK_BUILDPAGINGBUFFER_FLUSHTLB,
        /// [`DXGK_OPERATION_COPY_PAGE_TABLE_ENTRIES`] (WDDM 2.0+).
        pub CopyPageTableEntries: DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES,
        /// [`DXGK_OPERATION_UPDATE_CONTEXT_ALLOCATION`] (WDDM 2.0+).
        pub UpdateContextAllocation: DXGK_BUILDPAGINGBUFFER_UPDATECONTEXTALLOCATION,
        /// [`DXGK_OPERATION_NOTIFY_RESIDENCY`] (WDDM 2.0+).
        pub NotifyResidency: DXGK_BUILDPAGINGBUFFER_NOTIFYRESIDENCY,
        /// [`DXGK_OPERATION_SIGNAL_MONITORED_FENCE`] (WDDM 2.2+).
        pub SignalMonitoredFence: DXGK_BUILDPAGINGBUFFER_SIGNALMONITOREDFENCE,
        /// Raw view; sizes the union.
        pub Reserved: DXGKARG_BUILDPAGINGBUFFER_Reserved,
    }
}
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::align_of::<DXGKARG_BUILDPAGINGBUFFER_0>() == 8);

union_debug!(DXGKARG_BUILDPAGINGBUFFER_0);

c_type! {
    /// `DXGKARG_BUILDPAGINGBUFFER`: argument of `DxgkDdiBuildPagingBuffer` (320 bytes on x64).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_buildpagingbuffer>
    #[size(320)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDPAGINGBUFFER {
        /// In/out: first free byte of the paging buffer; the driver advances it past what it wrote.
        #[offset(0)]
        pub pDmaBuffer: PVOID,
        /// In/out: bytes available at `pDmaBuffer`.
        #[offset(8)]
        pub DmaSize: UINT,
        /// In/out: driver private data of the paging buffer.
        #[offset(16)]
        pub pDmaBufferPrivateData: PVOID,
        /// In/out: bytes left in the private data.
        #[offset(24)]
        pub DmaBufferPrivateDataSize: UINT,
        /// In: which arm of `Anonymous` is valid.
        #[offset(28)]
        pub Operation: DXGK_BUILDPAGINGBUFFER_OPERATION,
        /// In/out: driver progress across passes of a split operation (0 on the first pass).
        #[offset(32)]
        pub MultipassOffset: UINT,
        /// In: per-operation data.
        #[offset(40)]
        pub Anonymous: DXGKARG_BUILDPAGINGBUFFER_0,
        /// In: the system context of the paging operation.
        #[offset(296)]
        pub hSystemContext: HANDLE,
        /// In: GPU VA of the paging buffer (WDDM 2.0+).
        #[offset(304)]
        pub DmaBufferGpuVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// In: offset of `pDmaBuffer` from the start of the paging buffer (WDDM 2.0+).
        #[offset(312)]
        pub DmaBufferWriteOffset: UINT,
    }
}

/// `DXGKDDI_BUILDPAGINGBUFFER` (PASSIVE_LEVEL per the `_IRQL_requires_` of two public header
/// copies; the reference page states no IRQL; first-level synchronisation): `(IN_CONST_HANDLE hAdapter, IN_PDXGKARG_BUILDPAGINGBUFFER
/// pBuildPagingBuffer)`. Returns `STATUS_SUCCESS`, `STATUS_GRAPHICS_ALLOCATION_BUSY` or
/// `STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER` (call again with a new buffer; `MultipassOffset`
/// carries the progress).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_buildpagingbuffer>
pub type PDXGKDDI_BUILDPAGINGBUFFER = DDI_FN<*mut DXGKARG_BUILDPAGINGBUFFER>;

zeroed_default!(
    DXGKARG_COLLECTDBGINFO,
    DXGKARG_SUBMITCOMMAND_0,
    DXGKARG_SUBMITCOMMAND,
    DXGKARG_SUBMITCOMMANDVIRTUAL,
    DXGKARG_BUILDPAGINGBUFFER_Transfer_Source_0,
    DXGKARG_BUILDPAGINGBUFFER_Transfer_Source,
    DXGKARG_BUILDPAGINGBUFFER_Transfer,
    DXGKARG_BUILDPAGINGBUFFER_Fill_Destination,
    DXGKARG_BUILDPAGINGBUFFER_Fill,
    DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment,
    DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment,
    DXGKARG_BUILDPAGINGBUFFER_Reserved,
    DXGKARG_BUILDPAGINGBUFFER_0,
    DXGKARG_BUILDPAGINGBUFFER,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::macros::assert_fields_fill_word;

    #[test]
    fn flag_words_are_contiguous() {
        assert_fields_fill_word!(
            DXGK_ENGINESTATUS,
            DXGK_PREEMPTCOMMANDFLAGS,
            DXGK_TRANSFERFLAGS
        );
    }

    #[test]
    fn key_bits_and_values() {
        assert_eq!(
            DXGK_ENGINESTATUS::default()
                .with(DXGK_ENGINESTATUS::Responsive, 1)
                .Value,
            1
        );
        assert_eq!(
            DXGK_TRANSFERFLAGS::default()
                .with(DXGK_TRANSFERFLAGS::TransferEnd, 1)
                .Value,
            0x10
        );
        assert_eq!(VIDEO_TDR_TIMEOUT_DETECTED, 0x117);
        assert_eq!(VIDEO_ENGINE_TIMEOUT_DETECTED, 0x141);
        assert_eq!(DXGK_OPERATION_FILL, 1);
        assert_eq!(DXGK_OPERATION_NOTIFY_ALLOC, 22);
    }

    #[test]
    fn paging_arms_share_the_union() {
        let mut a = DXGKARG_BUILDPAGINGBUFFER {
            Operation: DXGK_OPERATION_FILL,
            ..Default::default()
        };
        a.Anonymous.Fill = DXGKARG_BUILDPAGINGBUFFER_Fill {
            hAllocation: core::ptr::null_mut(),
            FillSize: 0x1000,
            FillPattern: 0xDEAD_BEEF,
            Destination: DXGKARG_BUILDPAGINGBUFFER_Fill_Destination {
                SegmentId: 1,
                SegmentAddress: LARGE_INTEGER::from_i64(0x20_0000),
            },
        };
        // SAFETY: the union was zeroed and then the Fill arm written; Reserved is plain words.
        let raw = unsafe { a.Anonymous.Reserved.Reserved };
        // FillSize at union offset 8, FillPattern at 16, Destination.SegmentId at 24,
        // Destination.SegmentAddress at 32 (words 2, 4, 6, 8).
        assert_eq!(raw[2], 0x1000);
        assert_eq!(raw[4], 0xDEAD_BEEF);
        assert_eq!(raw[6], 1);
        assert_eq!(raw[8], 0x20_0000);
        assert!(raw[10..].iter().all(|w| *w == 0));
    }

    #[test]
    fn gpummu_arms_share_the_union() {
        let mut a = DXGKARG_BUILDPAGINGBUFFER {
            Operation: DXGK_OPERATION_UPDATE_PAGE_TABLE,
            ..Default::default()
        };
        a.Anonymous.UpdatePageTable = DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE {
            PageTableLevel: 1,
            StartIndex: 7,
            NumPageTableEntries: 3,
            UpdateMode: crate::memory::DXGK_PAGETABLEUPDATE_GPU_PHYSICAL,
            FirstPteVirtualAddress: 0x1234_5000,
            ..Default::default()
        };
        // SAFETY: the union was zeroed and then the UpdatePageTable arm written.
        let raw = unsafe { a.Anonymous.Reserved.Reserved };
        // PageTableLevel 0, StartIndex 40, NumPageTableEntries 44, UpdateMode 80,
        // FirstPteVirtualAddress 96 (words 0, 10, 11, 20, 24).
        assert_eq!((raw[0], raw[10], raw[11], raw[20]), (1, 7, 3, 2));
        assert_eq!(raw[24], 0x1234_5000);
        assert!(raw[26..].iter().all(|w| *w == 0));
    }

    #[test]
    fn submit_defaults_are_zero() {
        let s = DXGKARG_SUBMITCOMMAND::default();
        // SAFETY: zeroed union of two HANDLE arms.
        assert!(unsafe { s.Anonymous.hContext }.is_null());
        assert_eq!(s.Flags.Value, 0);
        assert_eq!(DXGKARG_SUBMITCOMMANDVIRTUAL::default().SubmissionFenceId, 0);
        assert!(DXGKARG_COLLECTDBGINFO::default().pExtension.is_null());
    }
}
