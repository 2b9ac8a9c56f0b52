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
use crate::macros::{
    c_enum, c_type, flag_word, reserved_flags, unbound_fn, union_debug, zeroed_default,
};
use crate::submission::DXGK_SUBMITCOMMANDFLAGS;

pub use crate::pagingbuffer::*;

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

zeroed_default!(
    DXGKARG_COLLECTDBGINFO,
    DXGKARG_SUBMITCOMMAND_0,
    DXGKARG_SUBMITCOMMAND,
    DXGKARG_SUBMITCOMMANDVIRTUAL,
);

// Slots of `DRIVER_INITIALIZATION_DATA` whose signatures are not bound yet (`init` re-exports
// them): binding one replaces its line with its argument block and prototype.
unbound_fn!(PDXGKDDI_CANCELCOMMAND, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_cancelcommand");
unbound_fn!(PDXGKDDI_QUERYDIAGNOSTICTYPESSUPPORT, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_querydiagnostictypessupport");
unbound_fn!(PDXGKDDI_CONTROLDIAGNOSTICREPORTING, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_controldiagnosticreporting");
unbound_fn!(PDXGKDDI_COLLECTDIAGNOSTICINFO, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nc-dispmprt-dxgkddi_collectdiagnosticinfo");

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
    fn submit_defaults_are_zero() {
        let s = DXGKARG_SUBMITCOMMAND::default();
        // SAFETY: zeroed union of two HANDLE arms.
        assert!(unsafe { s.Anonymous.hContext }.is_null());
        assert_eq!(s.Flags.Value, 0);
        assert_eq!(DXGKARG_SUBMITCOMMANDVIRTUAL::default().SubmissionFenceId, 0);
        assert!(DXGKARG_COLLECTDBGINFO::default().pExtension.is_null());
    }
}
